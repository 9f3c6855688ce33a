// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_tbfile.c - the trace file writer and reader: round trips, the prefix
 * property, corruption anywhere, version rules, hostile chunks.
 *
 * gcc -std=gnu11 -Wall -Wextra -Werror -O2 -g tests/unit/test_tbfile.c \
 *     lib/format/tbfile.c -lcmocka -lz -o test_tbfile
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "../../lib/format/tbfile.h"
#include "tmpdir.h"
#include "recs.h"

static char dir[] = "/tmp/test_tbfile.XXXXXX";
static char path[256];

/* ------------------------------------------------------------ helpers -- */

static struct tb_rec_hdr *mk(uint16_t type, size_t size, uint64_t ts,
			     uint32_t pid, uint32_t tid)
{
	struct tb_rec_hdr *h = calloc(1, size);

	assert_non_null(h);
	h->type = type;
	h->size = (uint16_t)size;
	h->cpu = 1;
	h->ts = ts;
	h->pid = pid;
	h->tid = tid;
	return h;
}

/* Record i of a deterministic mix of every type, timestamps not monotonic. */
static struct tb_rec_hdr *gen(unsigned i)
{
	uint64_t ts = 1000 + ((i * 37u) % 50u) * 10u;
	uint32_t pid = 100 + i % 3, tid = pid + i % 2;
	struct tb_rec_hdr *h;
	size_t k;

	switch (i % 7) {
	case 0: {
		size_t slen = i % 2 ? 1 + i % 40 : 0;
		struct tb_rec_event *e;

		h = mk(TB_REC_EVENT, TB_REC_ALIGN(sizeof(*e) + slen), ts, pid, tid);
		e = (void *)h;
		e->site = 0x401000 + i;
		e->args[0] = i * 7;
		e->args[1] = ~(uint64_t)i;
		e->str_len[0] = (uint16_t)slen;
		for (k = 0; k + 1 < slen; k++)
			((char *)(e + 1))[k] = (char)('a' + k % 26);
		return h;
	}
	case 1: {
		size_t len = 16 + i % 30;
		struct tb_rec_site *s;

		h = mk(TB_REC_SITE, TB_REC_ALIGN(sizeof(*s) + len), ts, pid, tid);
		s = (void *)h;
		s->site = 0x401000 + i;
		s->len = (uint32_t)len;
		for (k = 0; k < len; k++)
			((unsigned char *)(s + 1))[k] = (unsigned char)(k * 31 + i);
		return h;
	}
	case 2: {
		struct tb_rec_fork *f;

		h = mk(TB_REC_FORK, sizeof(*f), ts, pid, tid);
		f = (void *)h;
		f->child_pid = 1000 + i;
		f->child_tid = 1000 + i;
		f->flags = i % 2 ? TB_FORKF_THREAD : 0;
		strcpy(f->comm, "forked");
		return h;
	}
	case 3: {
		struct tb_rec_exec *x;

		h = mk(TB_REC_EXEC, sizeof(*x), ts, pid, tid);
		x = (void *)h;
		x->old_tid = tid;
		strcpy(x->comm, "newimage");
		snprintf(x->filename, sizeof(x->filename), "/usr/bin/prog%u", i);
		return h;
	}
	case 4: {
		struct tb_rec_exit *x;

		h = mk(TB_REC_EXIT, sizeof(*x), ts, pid, tid);
		x = (void *)h;
		x->flags = TB_EXITF_PROCESS;
		x->exit_code = (int32_t)i;
		memcpy(x->comm, "sixteen-byte-nam", 16);   /* no NUL */
		return h;
	}
	case 5: {
		struct tb_rec_comm *c;

		h = mk(TB_REC_COMM, sizeof(*c), ts, pid, tid);
		c = (void *)h;
		snprintf(c->comm, sizeof(c->comm), "thread-%u", i % 100000);
		return h;
	}
	default: {
		uint32_t ncpus = 1 + i % 5;
		struct tb_rec_stats *st;
		uint64_t *d;

		h = mk(TB_REC_STATS, sizeof(*st) + 8 * ncpus, ts, 0, 0);
		h->cpu = ~0u;
		st = (void *)h;
		st->events = i * 100;
		st->ncpus = ncpus;
		d = (void *)(st + 1);
		for (k = 0; k < ncpus; k++) {
			d[k] = k * i;
			st->drops_total += d[k];
		}
		return h;
	}
	}
}

static struct tb_file_info test_info(void)
{
	struct tb_file_info info;

	memset(&info, 0, sizeof(info));
	info.clock_id = 1;
	info.realtime_offset_ns = -1234567890123LL;
	info.start_ts = 987654321;
	info.flags = 0;
	strcpy(info.hostname, "testhost");
	strcpy(info.kernel, "6.18.0-test");
	strcpy(info.cmdline, "tracebpf record -o x.tbt -- ./app \"a b\"");
	return info;
}

/* Writes records gen(0..n-1) to p; returns them in append order. */
static void write_gen(const char *p, unsigned n, int zlevel, size_t chunk_max,
		      struct recs *appended)
{
	struct tb_file_info info = test_info();
	/* raw payloads, no index: these tests check the chunk layer; the
	 * packed encoding and the index are in test_storage.c */
	struct tb_writer_opts o = { .info = &info, .zlevel = zlevel,
				    .chunk_max = chunk_max, .raw = 1, .no_index = 1 };
	struct tb_writer *w;
	struct stat st;
	unsigned i;

	assert_int_equal(tb_writer_open(&w, p, &o), 0);
	for (i = 0; i < n; i++) {
		struct tb_rec_hdr *h = gen(i);

		assert_int_equal(tb_writer_append(w, h), 0);
		/* one round per record: a reader of a cut file then gets the
		 * records of every whole chunk (a round ends in one chunk) */
		assert_int_equal(tb_writer_flush(w), 0);
		if (appended)
			recs_add(appended, h);
		free(h);
	}
	assert_int_equal(tb_writer_records(w), n);
	assert_int_equal(tb_writer_flush(w), 0);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(tb_writer_bytes(w), st.st_size);
	assert_int_equal(tb_writer_close(w), 0);
}

/* Reads every record of p (stream mask optional). Returns the open error. */
static int read_all(const char *p, uint32_t mask, struct recs *out,
		    uint64_t *tail, const char **reason)
{
	struct tb_reader *r;
	const struct tb_rec_hdr *h;
	int err, ret;

	err = tb_reader_open(&r, p);
	if (err)
		return err;
	if (mask)
		tb_reader_set_streams(r, mask);
	while ((ret = tb_reader_next(r, &h)) == 1)
		recs_add(out, h);
	assert_int_equal(ret, 0);
	assert_null(h);
	/* the end is sticky */
	assert_int_equal(tb_reader_next(r, &h), 0);
	if (tail)
		*tail = tb_reader_tail_bytes(r);
	if (reason)
		*reason = tb_reader_tail_reason(r);
	tb_reader_close(r);
	return 0;
}

static unsigned char *slurp(const char *p, size_t *n)
{
	struct stat st;
	unsigned char *b;
	int fd = open(p, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	b = malloc(st.st_size + 1);
	assert_non_null(b);
	assert_int_equal(read(fd, b, st.st_size), st.st_size);
	close(fd);
	*n = st.st_size;
	return b;
}

static void spit(const char *p, const void *b, size_t n)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, n), (ssize_t)n);
	close(fd);
}

static uint32_t hdr_size_of(const unsigned char *b)
{
	uint32_t v;

	memcpy(&v, b + 12, 4);
	return v;
}

/* Chunk layout of a file: start offsets, records per chunk. */
struct layout {
	size_t n;
	size_t start[256], end[256];
	struct tb_chunk_hdr h[256];
};

static void parse_layout(const unsigned char *b, size_t len, struct layout *l)
{
	size_t off = hdr_size_of(b);

	l->n = 0;
	while (off < len) {
		struct tb_chunk_hdr h;

		assert_true(off + sizeof(h) <= len);
		memcpy(&h, b + off, sizeof(h));
		assert_int_equal(h.magic, TB_CHUNK_MAGIC);
		assert_int_equal(h.hdr_crc, crc32(0, (const void *)&h, 44));
		assert_int_equal(h.seq, l->n);
		assert_true(l->n < 256);
		l->start[l->n] = off;
		off += sizeof(h) + h.stored_len;
		assert_true(off <= len);
		assert_int_equal(h.payload_crc,
				 crc32(0, b + l->start[l->n] + sizeof(h), h.stored_len));
		l->end[l->n] = off;
		l->h[l->n++] = h;
	}
}

/* A chunk for hand-made files: correct CRCs unless told otherwise. */
static size_t craft_chunk(unsigned char *dst, uint16_t stream, uint16_t flags,
			  const void *payload, uint32_t stored, uint32_t raw_len,
			  uint32_t seq, uint32_t nrec)
{
	/* each crafted chunk ends a round (readers hold a round until then) */
	struct tb_chunk_hdr h = {
		.magic = TB_CHUNK_MAGIC, .stream = stream,
		.flags = flags | TB_CHUNK_ROUND_END,
		.raw_len = raw_len, .stored_len = stored, .first_ts = 1,
		.last_ts = 2, .nrec = nrec, .seq = seq,
	};

	h.payload_crc = crc32(0, payload, stored);
	h.hdr_crc = crc32(0, (const void *)&h, offsetof(struct tb_chunk_hdr, hdr_crc));
	memcpy(dst, &h, sizeof(h));
	memcpy(dst + sizeof(h), payload, stored);
	return sizeof(h) + stored;
}

/* The header of an empty trace written by the library. */
static unsigned char *empty_trace(size_t *n)
{
	struct tb_file_info info = test_info();
	struct tb_writer_opts o = { .info = &info, .no_index = 1 };
	struct tb_writer *w;

	assert_int_equal(tb_writer_open(&w, path, &o), 0);
	assert_int_equal(tb_writer_close(w), 0);
	return slurp(path, n);
}

static void comm_rec(unsigned char *dst, uint64_t ts, const char *name)
{
	struct tb_rec_comm c;

	memset(&c, 0, sizeof(c));
	c.hdr.type = TB_REC_COMM;
	c.hdr.size = sizeof(c);
	c.hdr.ts = ts;
	c.hdr.pid = c.hdr.tid = 7;
	snprintf(c.comm, sizeof(c.comm), "%s", name);
	memcpy(dst, &c, sizeof(c));
}

static const char *comm_of(const struct tb_rec_hdr *h)
{
	assert_int_equal(h->type, TB_REC_COMM);
	return ((const struct tb_rec_comm *)h)->comm;
}

/* -------------------------------------------------------------- tests -- */

static void test_stream_map(void **state)
{
	(void)state;
	assert_int_equal(tb_stream_of(TB_REC_EVENT), TB_STREAM_USER);
	assert_int_equal(tb_stream_of(TB_REC_SITE), TB_STREAM_SITE);
	assert_int_equal(tb_stream_of(TB_REC_FORK), TB_STREAM_PROC);
	assert_int_equal(tb_stream_of(TB_REC_EXEC), TB_STREAM_PROC);
	assert_int_equal(tb_stream_of(TB_REC_EXIT), TB_STREAM_PROC);
	assert_int_equal(tb_stream_of(TB_REC_COMM), TB_STREAM_PROC);
	assert_int_equal(tb_stream_of(TB_REC_STATS), TB_STREAM_STATS);
	assert_int_equal(tb_stream_of(TB_REC_EVENT_ID), TB_STREAM_USER);
	assert_int_equal(tb_rec_min_size(TB_REC_EVENT_ID), sizeof(struct tb_rec_event_id));
	for (int t = TB_REC_SWITCH; t <= TB_REC_FORMAT; t++)
		assert_int_equal(tb_stream_of(t), TB_STREAM_SCHED);
	assert_int_equal(tb_stream_of(0), -EINVAL);
	assert_int_equal(tb_stream_of(TB_REC_TYPE_MAX), -EINVAL);
	assert_int_equal(tb_rec_min_size(TB_REC_EXEC), sizeof(struct tb_rec_exec));
	assert_int_equal(tb_rec_min_size(0), 0);
	assert_int_equal(tb_rec_min_size(999), 0);
}

static void round_trip(int zlevel)
{
	const unsigned n = 200;
	struct recs in = { 0 }, out = { 0 };
	const struct tb_file_info *info;
	struct tb_file_info want = test_info();
	struct tb_reader *r;
	struct layout l;
	unsigned char *b;
	size_t len, i, k, seen[TB_REC_TYPE_MAX] = { 0 }, zchunks = 0;
	const char *reason = "x";
	uint64_t tail = 1;
	int s;

	write_gen(path, n, zlevel, 512, &in);
	assert_int_equal(read_all(path, 0, &out, &tail, &reason), 0);
	assert_int_equal(out.n, n);
	assert_int_equal(tail, 0);
	assert_null(reason);

	/* Per stream, records come back in append order, byte for byte. */
	for (s = 1; s <= TB_STREAM_STATS; s++) {
		size_t j = 0;

		for (i = 0; i < in.n; i++) {
			if (tb_stream_of(in.v[i]->type) != s)
				continue;
			while (j < out.n && tb_stream_of(out.v[j]->type) != s)
				j++;
			assert_true(j < out.n);
			assert_int_equal(out.v[j]->size, in.v[i]->size);
			assert_memory_equal(out.v[j], in.v[i], in.v[i]->size);
			j++;
		}
	}
	for (i = 0; i < out.n; i++)
		seen[out.v[i]->type]++;
	for (k = 1; k <= TB_REC_STATS; k++)   /* the types mkrec() makes */
		assert_true(seen[k] > 0);

	assert_int_equal(tb_reader_open(&r, path), 0);
	info = tb_reader_info(r);
	assert_int_equal(info->major, TB_FORMAT_MAJOR);
	assert_int_equal(info->minor, TB_FORMAT_MINOR);
	assert_int_equal(info->clock_id, want.clock_id);
	assert_int_equal(info->realtime_offset_ns, want.realtime_offset_ns);
	assert_int_equal(info->start_ts, want.start_ts);
	assert_string_equal(info->hostname, want.hostname);
	assert_string_equal(info->kernel, want.kernel);
	assert_string_equal(info->cmdline, want.cmdline);
	tb_reader_close(r);

	/* The chunks are what docs/format.md says. */
	b = slurp(path, &len);
	assert_memory_equal(b, "TRACEBPF", 8);
	parse_layout(b, len, &l);
	assert_true(l.n > 5);
	for (i = 0, k = 0; i < l.n; i++) {
		const struct tb_chunk_hdr *h = &l.h[i];
		unsigned char *raw = malloc(h->raw_len);
		uLongf rl = h->raw_len;
		uint64_t lo = UINT64_MAX, hi = 0;
		size_t off = 0, nrec = 0;

		assert_non_null(raw);
		/* compressed only when asked and when it gains (a chunk of one
		 * small record may not: it is stored) */
		assert_int_equal(h->flags & ~(TB_CHUNK_ROUND_END | TB_CHUNK_ZLIB), 0);
		assert_true(zlevel || !(h->flags & TB_CHUNK_ZLIB));
		zchunks += !!(h->flags & TB_CHUNK_ZLIB);
		if (h->flags & TB_CHUNK_ZLIB) {
			assert_int_equal(uncompress(raw, &rl, b + l.start[i] + 48,
						    h->stored_len), Z_OK);
			assert_int_equal(rl, h->raw_len);
			assert_true(h->stored_len < h->raw_len);
		} else {
			assert_int_equal(h->stored_len, h->raw_len);
			memcpy(raw, b + l.start[i] + 48, h->raw_len);
		}
		assert_true(h->raw_len <= 512);
		while (off < h->raw_len) {
			struct tb_rec_hdr rh;

			memcpy(&rh, raw + off, sizeof(rh));
			assert_int_equal(tb_stream_of(rh.type), h->stream);
			lo = rh.ts < lo ? rh.ts : lo;
			hi = rh.ts > hi ? rh.ts : hi;
			off += rh.size;
			nrec++;
		}
		assert_int_equal(off, h->raw_len);
		assert_int_equal(nrec, h->nrec);
		assert_int_equal(h->first_ts, lo);
		assert_int_equal(h->last_ts, hi);
		k += nrec;
		free(raw);
	}
	assert_int_equal(k, n);
	if (zlevel)   /* most one-record chunks do compress */
		assert_true(zchunks > l.n / 2);
	free(b);
	recs_free(&in);
	recs_free(&out);
}

static void test_round_trip_raw(void **state)
{
	(void)state;
	round_trip(0);
}

static void test_round_trip_zlib(void **state)
{
	(void)state;
	round_trip(6);
}

/* Reads b[0..len) through stdin ("-"), as `tracebpf convert - < x` would. */
static int read_stdin(const unsigned char *b, size_t len, struct recs *out,
		      uint64_t *tail, const char **reason)
{
	int pfd[2], saved, err;

	assert_true(len < 65536);   /* fits in the pipe: no writer process */
	assert_int_equal(pipe(pfd), 0);
	assert_int_equal(write(pfd[1], b, len), (ssize_t)len);
	close(pfd[1]);
	saved = dup(0);
	assert_true(saved >= 0);
	assert_int_equal(dup2(pfd[0], 0), 0);
	close(pfd[0]);
	err = read_all("-", 0, out, tail, reason);
	assert_int_equal(dup2(saved, 0), 0);
	close(saved);
	return err;
}

static void prefixes(int zlevel)
{
	struct recs full = { 0 };
	struct layout l;
	unsigned char *b;
	size_t len, cut, hsz;
	int via;

	write_gen(path, 40, zlevel, 300, NULL);
	assert_int_equal(read_all(path, 0, &full, NULL, NULL), 0);
	b = slurp(path, &len);
	parse_layout(b, len, &l);
	assert_true(l.n >= 4);
	hsz = hdr_size_of(b);

	for (cut = 0; cut <= len; cut++) {
		for (via = 0; via < 2; via++) {
			struct recs got = { 0 };
			const char *reason = NULL;
			uint64_t tail = 0;
			size_t whole = hsz, nrec = 0, i, k;
			int err;

			if (via == 0) {
				spit(path, b, cut);
				err = read_all(path, 0, &got, &tail, &reason);
			} else {
				err = read_stdin(b, cut, &got, &tail, &reason);
			}
			if (cut < 8) {
				assert_int_equal(err, -EINVAL);
				continue;
			}
			if (cut < hsz) {
				assert_int_equal(err, -EBADMSG);
				continue;
			}
			assert_int_equal(err, 0);
			for (i = 0, k = 0; i < l.n && l.end[i] <= cut; i++) {
				k += l.h[i].nrec;
				if (!(l.h[i].flags & TB_CHUNK_ROUND_END))
					continue;
				whole = l.end[i];
				nrec = k;
			}
			/* exactly the records of the complete rounds (a record
			 * over chunk_max is a chunk, then an empty round end) */
			assert_int_equal(got.n, nrec);
			for (i = 0; i < got.n; i++)
				assert_memory_equal(got.v[i], full.v[i], full.v[i]->size);
			assert_int_equal(tail, cut - whole);
			if (tail) {
				assert_non_null(reason);
				assert_true(strcmp(reason, "short chunk header") == 0 ||
					    strcmp(reason, "truncated payload") == 0 ||
					    strncmp(reason, "incomplete last round", 21) == 0);
			} else {
				assert_null(reason);
			}
			recs_free(&got);
		}
	}
	free(b);
	recs_free(&full);
}

static void test_prefix_raw(void **state)
{
	(void)state;
	prefixes(0);
}

static void test_prefix_zlib(void **state)
{
	(void)state;
	prefixes(6);
}

static void test_header_bitflips(void **state)
{
	unsigned char *b;
	size_t len, bit, hsz;

	(void)state;
	write_gen(path, 10, 6, 0, NULL);
	b = slurp(path, &len);
	hsz = hdr_size_of(b);
	for (bit = 0; bit < hsz * 8; bit++) {
		struct recs got = { 0 };
		size_t byte = bit / 8;
		int err, want = -EBADMSG;

		b[byte] ^= 1u << (bit % 8);
		spit(path, b, len);
		err = read_all(path, 0, &got, NULL, NULL);
		b[byte] ^= 1u << (bit % 8);
		if (byte < 8) {
			want = -EINVAL;              /* not our magic */
		} else if (byte < 10) {
			unsigned major = TB_FORMAT_MAJOR ^ (1u << (bit - 64));

			if (major > TB_FORMAT_MAJOR)
				want = -EPROTONOSUPPORT;   /* major grew */
			else if (major >= TB_FORMAT_MAJOR_MIN)
				want = -EBADMSG;     /* an older major: then the CRC */
		}
		if (err != want)
			print_error("flipped bit %zu (byte %zu)\n", bit, byte);
		assert_int_equal(err, want);
		assert_int_equal(got.n, 0);
	}
	free(b);
}

static void chunk_bitflips(int zlevel)
{
	struct recs full = { 0 };
	struct layout l;
	unsigned char *b;
	size_t len, bit, before, c = 2;

	write_gen(path, 40, zlevel, 300, NULL);
	assert_int_equal(read_all(path, 0, &full, NULL, NULL), 0);
	b = slurp(path, &len);
	parse_layout(b, len, &l);
	assert_true(l.n > c + 1);
	before = l.h[0].nrec + l.h[1].nrec;

	for (bit = l.start[c] * 8; bit < l.end[c] * 8; bit++) {
		struct recs got = { 0 };
		const char *reason = NULL, *want;
		uint64_t tail = 0;
		size_t byte = bit / 8, i;

		b[byte] ^= 1u << (bit % 8);
		spit(path, b, len);
		b[byte] ^= 1u << (bit % 8);
		assert_int_equal(read_all(path, 0, &got, &tail, &reason), 0);
		assert_int_equal(got.n, before);
		for (i = 0; i < got.n; i++)
			assert_memory_equal(got.v[i], full.v[i], full.v[i]->size);
		assert_int_equal(tail, len - l.start[c]);
		if (byte < l.start[c] + 4)
			want = "bad chunk magic";
		else if (byte < l.start[c] + 48)
			want = "chunk header CRC mismatch";
		else
			want = "payload CRC mismatch";
		assert_non_null(reason);
		assert_string_equal(reason, want);
		recs_free(&got);
	}
	free(b);
	recs_free(&full);
}

static void test_chunk_bitflips_raw(void **state)
{
	(void)state;
	chunk_bitflips(0);
}

static void test_chunk_bitflips_zlib(void **state)
{
	(void)state;
	chunk_bitflips(6);
}

/* A header by hand: version, extra bytes before the CRC (newer minor). */
static size_t craft_header(unsigned char *h, uint16_t major, uint16_t minor,
			   size_t extra)
{
	static const char *const s[3] = { "host", "6.1", "cmd line" };
	uint32_t size = 40, v32;
	uint16_t v16;
	size_t off;
	int i;

	memset(h, 0, 40);
	memcpy(h, "TRACEBPF", 8);
	memcpy(h + 8, &major, 2);
	memcpy(h + 10, &minor, 2);
	v32 = 0x80000000u;             /* a flag this reader does not know */
	memcpy(h + 16, &v32, 4);
	v32 = 1;
	memcpy(h + 20, &v32, 4);
	off = 40;
	for (i = 0; i < 3; i++) {
		v16 = (uint16_t)strlen(s[i]);
		memcpy(h + off, &v16, 2);
		memcpy(h + off + 2, s[i], v16);
		off += 2 + v16;
	}
	memset(h + off, 0xab, extra);
	off += extra;
	size = (uint32_t)off + 4;
	memcpy(h + 12, &size, 4);
	v32 = crc32(0, h, off);
	memcpy(h + off, &v32, 4);
	return size;
}

static void test_versions(void **state)
{
	unsigned char b[4096];
	unsigned char rec[40];
	struct tb_reader *r;
	const struct tb_rec_hdr *h;
	size_t n;

	(void)state;
	/* a newer major is refused, whatever follows */
	n = craft_header(b, TB_FORMAT_MAJOR + 1, 0, 0);
	spit(path, b, n);
	assert_int_equal(tb_reader_open(&r, path), -EPROTONOSUPPORT);
	memset(b + 12, 0xff, 8);   /* even with a header we cannot parse */
	spit(path, b, n);
	assert_int_equal(tb_reader_open(&r, path), -EPROTONOSUPPORT);

	/* a newer minor of our major: extra header fields skipped */
	n = craft_header(b, TB_FORMAT_MAJOR, TB_FORMAT_MINOR + 3, 24);
	comm_rec(rec, 5, "later");
	n += craft_chunk(b + n, TB_STREAM_PROC, 0, rec, sizeof(rec), sizeof(rec), 0, 1);
	spit(path, b, n);
	assert_int_equal(tb_reader_open(&r, path), 0);
	assert_int_equal(tb_reader_info(r)->minor, TB_FORMAT_MINOR + 3);
	assert_string_equal(tb_reader_info(r)->hostname, "host");
	assert_string_equal(tb_reader_info(r)->kernel, "6.1");
	assert_string_equal(tb_reader_info(r)->cmdline, "cmd line");
	assert_int_equal(tb_reader_next(r, &h), 1);
	assert_string_equal(comm_of(h), "later");
	assert_int_equal(tb_reader_next(r, &h), 0);
	assert_null(tb_reader_tail_reason(r));
	tb_reader_close(r);

	/* major 0 never existed */
	n = craft_header(b, 0, 0, 0);
	spit(path, b, n);
	assert_int_equal(tb_reader_open(&r, path), -EBADMSG);

	/* strings that overrun the header */
	n = craft_header(b, 1, 0, 0);
	b[40] = 200;
	{
		uint32_t c = crc32(0, b, n - 4);

		memcpy(b + n - 4, &c, 4);
	}
	spit(path, b, n);
	assert_int_equal(tb_reader_open(&r, path), -EBADMSG);
}

static void test_not_a_trace(void **state)
{
	struct tb_reader *r = (void *)1;

	(void)state;
	spit(path, "", 0);
	assert_int_equal(tb_reader_open(&r, path), -EINVAL);
	assert_null(r);
	spit(path, "TRACEBP", 7);
	assert_int_equal(tb_reader_open(&r, path), -EINVAL);
	spit(path, "NOTATRACEFILE AT ALL, JUST TEXT\n", 32);
	assert_int_equal(tb_reader_open(&r, path), -EINVAL);
	spit(path, "{\"traceEvents\":[]}", 18);
	assert_int_equal(tb_reader_open(&r, path), -EINVAL);
	assert_int_equal(tb_reader_open(&r, "/dev/null"), -EINVAL);
	assert_int_equal(tb_reader_open(&r, "/nonexistent/x.tbt"), -ENOENT);
	assert_int_equal(tb_reader_open(&r, "/"), -EISDIR);
}

static void test_unknown_stream_and_flags(void **state)
{
	unsigned char *b, rec[40];
	struct recs got = { 0 };
	const char *reason = "x";
	uint64_t tail = 1;
	size_t n;

	(void)state;
	b = empty_trace(&n);
	b = realloc(b, n + 6 * 128);
	comm_rec(rec, 1, "A");
	n += craft_chunk(b + n, TB_STREAM_PROC, 0, rec, 40, 40, 0, 1);
	comm_rec(rec, 2, "B");
	n += craft_chunk(b + n, 9, 0, rec, 40, 40, 1, 1);           /* unknown */
	comm_rec(rec, 3, "C");
	n += craft_chunk(b + n, TB_STREAM_SCHED, 0, rec, 40, 40, 2, 1);
	comm_rec(rec, 4, "D");
	n += craft_chunk(b + n, TB_STREAM_USER, 0x8000, rec, 40, 40, 3, 1);
	comm_rec(rec, 5, "E");
	n += craft_chunk(b + n, 0, 0, rec, 40, 40, 4, 1);           /* unknown */
	comm_rec(rec, 6, "F");
	n += craft_chunk(b + n, TB_STREAM_PROC, 0, rec, 40, 40, 5, 1);
	spit(path, b, n);
	assert_int_equal(read_all(path, 0, &got, &tail, &reason), 0);
	assert_int_equal(got.n, 3);
	assert_string_equal(comm_of(got.v[0]), "A");
	assert_string_equal(comm_of(got.v[1]), "C");   /* known stream: kept */
	assert_string_equal(comm_of(got.v[2]), "F");
	assert_int_equal(tail, 0);
	assert_null(reason);
	recs_free(&got);
	free(b);
}

static void test_stream_mask(void **state)
{
	struct recs in = { 0 }, got = { 0 };
	size_t i, nev = 0;

	(void)state;
	write_gen(path, 100, 6, 256, &in);
	for (i = 0; i < in.n; i++)
		nev += in.v[i]->type == TB_REC_EVENT;
	assert_int_equal(read_all(path, 1u << TB_STREAM_USER, &got, NULL, NULL), 0);
	assert_int_equal(got.n, nev);
	for (i = 0; i < got.n; i++)
		assert_int_equal(got.v[i]->type, TB_REC_EVENT);
	recs_free(&got);
	/* no stream at all: nothing, and still a clean end */
	{
		const char *reason = "x";
		uint64_t tail = 1;

		assert_int_equal(read_all(path, 1u << 30, &got, &tail, &reason), 0);
		assert_int_equal(got.n, 0);
		assert_int_equal(tail, 0);
		assert_null(reason);
	}
	recs_free(&in);
}

/* One chunk with payload p; returns the records read and the reason. */
static const char *read_crafted(const void *p, uint32_t stored, uint32_t raw_len,
				uint16_t flags, uint32_t seq, struct recs *got,
				uint64_t *tail)
{
	unsigned char *b, rec[40];
	const char *reason = NULL;
	size_t n;

	b = empty_trace(&n);
	b = realloc(b, n + 2 * 48 + 40 + stored);
	comm_rec(rec, 1, "first");
	n += craft_chunk(b + n, TB_STREAM_PROC, 0, rec, 40, 40, 0, 1);
	n += craft_chunk(b + n, TB_STREAM_PROC, flags, p, stored, raw_len, seq, 1);
	spit(path, b, n);
	assert_int_equal(read_all(path, 0, got, tail, &reason), 0);
	free(b);
	return reason;
}

static void test_bad_records(void **state)
{
	uint64_t buf[64];
	unsigned char *p = (void *)buf;
	struct tb_rec_hdr *h;
	struct recs got = { 0 };
	uint64_t tail;
	const char *reason;

	(void)state;
	/* unknown types and short known records are skipped */
	memset(buf, 0, sizeof(buf));
	h = (void *)p;
	h->type = 99;
	h->size = 32;
	comm_rec(p + 32, 2, "after99");
	h = (void *)(p + 72);
	h->type = 0;
	h->size = 24;
	h = (void *)(p + 96);
	h->type = TB_REC_EVENT;           /* 24 < sizeof(struct tb_rec_event) */
	h->size = 24;
	comm_rec(p + 120, 3, "last");
	reason = read_crafted(p, 160, 160, 0, 1, &got, &tail);
	assert_null(reason);
	assert_int_equal(tail, 0);
	assert_int_equal(got.n, 3);
	assert_string_equal(comm_of(got.v[1]), "after99");
	assert_string_equal(comm_of(got.v[2]), "last");
	recs_free(&got);

	/* sizes that make the rest unwalkable stop the reading there */
	{
		static const uint16_t bad[] = { 0, 8, 20, 30, 44, 200 };
		size_t k;

		for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			memset(buf, 0, sizeof(buf));
			comm_rec(p, 2, "before");
			h = (void *)(p + 40);
			h->type = TB_REC_COMM;
			h->size = bad[k];
			comm_rec(p + 80, 3, "never");
			reason = read_crafted(p, 120, 120, 0, 1, &got, &tail);
			assert_non_null(reason);
			assert_string_equal(reason, "bad record");
			assert_int_equal(tail, 48 + 120);
			assert_int_equal(got.n, 2);
			assert_string_equal(comm_of(got.v[1]), "before");
			recs_free(&got);
		}
	}

	/* a payload that ends inside a record header */
	memset(buf, 0, sizeof(buf));
	comm_rec(p, 2, "before");
	reason = read_crafted(p, 56, 56, 0, 1, &got, &tail);
	assert_string_equal(reason, "bad record");
	assert_int_equal(got.n, 2);
	recs_free(&got);
}

static void test_bad_chunks(void **state)
{
	unsigned char rec[40], z[128];
	uLongf zlen = sizeof(z);
	struct recs got = { 0 };
	uint64_t tail;
	const char *reason;

	(void)state;
	comm_rec(rec, 2, "second");
	/* sanity: well formed */
	reason = read_crafted(rec, 40, 40, 0, 1, &got, &tail);
	assert_null(reason);
	assert_int_equal(got.n, 2);
	recs_free(&got);

	reason = read_crafted(rec, 40, 40, 0, 7, &got, &tail);
	assert_string_equal(reason, "chunk out of sequence");
	assert_int_equal(got.n, 1);
	assert_int_equal(tail, 48 + 40);
	recs_free(&got);

	reason = read_crafted(rec, 40, 48, 0, 1, &got, &tail);
	assert_string_equal(reason, "chunk length mismatch");
	recs_free(&got);

	reason = read_crafted(rec, 40, TB_CHUNK_MAX_BYTES + 1, TB_CHUNK_ZLIB, 1,
			      &got, &tail);
	assert_string_equal(reason, "chunk too large");
	assert_int_equal(got.n, 1);
	recs_free(&got);

	reason = read_crafted(rec, 40, 40, TB_CHUNK_ZLIB, 1, &got, &tail);
	assert_string_equal(reason, "decompression failed");   /* not zlib */
	recs_free(&got);

	assert_int_equal(compress2(z, &zlen, rec, 40, 6), Z_OK);
	reason = read_crafted(z, (uint32_t)zlen, 40, TB_CHUNK_ZLIB, 1, &got, &tail);
	assert_null(reason);
	assert_int_equal(got.n, 2);
	assert_string_equal(comm_of(got.v[1]), "second");
	recs_free(&got);
	reason = read_crafted(z, (uint32_t)zlen, 48, TB_CHUNK_ZLIB, 1, &got, &tail);
	assert_string_equal(reason, "decompression failed");   /* raw_len lies */
	recs_free(&got);
	reason = read_crafted(z, (uint32_t)zlen, 32, TB_CHUNK_ZLIB, 1, &got, &tail);
	assert_string_equal(reason, "decompression failed");
	recs_free(&got);
	/* the stream's Adler-32 is not checked (the CRC covers its bytes), so
	 * its deflate data must end exactly at the trailer */
	reason = read_crafted(z, (uint32_t)zlen - 1, 40, TB_CHUNK_ZLIB, 1, &got, &tail);
	assert_string_equal(reason, "decompression failed");   /* trailer cut */
	recs_free(&got);
	z[zlen] = 0;
	reason = read_crafted(z, (uint32_t)zlen + 1, 40, TB_CHUNK_ZLIB, 1, &got, &tail);
	assert_string_equal(reason, "decompression failed");   /* a byte after it */
	recs_free(&got);
	memset(z + 2, 0xff, zlen - 6);   /* a reserved block type */
	reason = read_crafted(z, (uint32_t)zlen, 40, TB_CHUNK_ZLIB, 1, &got, &tail);
	assert_string_equal(reason, "decompression failed");
	recs_free(&got);
}

static void test_writer_rejects(void **state)
{
	struct tb_file_info info = test_info();
	struct tb_writer_opts o = { .info = &info };
	struct tb_writer *w = (void *)1;
	struct tb_rec_hdr *h;
	struct recs got = { 0 };

	(void)state;
	o.zlevel = 10;
	assert_int_equal(tb_writer_open(&w, path, &o), -EINVAL);
	assert_null(w);
	o.zlevel = 0;
	o.chunk_max = (size_t)TB_CHUNK_MAX_BYTES + 1;
	assert_int_equal(tb_writer_open(&w, path, &o), -EINVAL);
	o.chunk_max = 0;
	assert_int_equal(tb_writer_open(&w, "/nonexistent/dir/x.tbt", &o), -ENOENT);
	assert_int_equal(tb_writer_open(&w, "/dev/full", &o), -ENOSPC);

	assert_int_equal(tb_writer_open(&w, path, &o), 0);
	h = mk(TB_REC_COMM, sizeof(struct tb_rec_comm), 1, 1, 1);
	h->size = 16;
	assert_int_equal(tb_writer_append(w, h), -EINVAL);
	h->size = 44;
	assert_int_equal(tb_writer_append(w, h), -EINVAL);
	h->size = 32;                   /* < sizeof(struct tb_rec_comm) */
	assert_int_equal(tb_writer_append(w, h), -EINVAL);
	h->size = 40;
	h->type = 0;
	assert_int_equal(tb_writer_append(w, h), -EINVAL);
	h->type = TB_REC_TYPE_MAX;
	assert_int_equal(tb_writer_append(w, h), -EINVAL);
	h->type = TB_REC_COMM;
	assert_int_equal(tb_writer_append(w, h), 0);
	assert_int_equal(tb_writer_records(w), 1);
	assert_int_equal(tb_writer_close(w), 0);
	free(h);
	assert_int_equal(read_all(path, 0, &got, NULL, NULL), 0);
	assert_int_equal(got.n, 1);
	recs_free(&got);
}

static void test_big_records(void **state)
{
	struct tb_file_info info = test_info();
	struct tb_writer_opts o = { .info = &info, .zlevel = 1, .chunk_max = 1024 };
	struct tb_writer *w;
	struct tb_rec_hdr *h;
	struct recs got = { 0 };
	const size_t big = 65528;
	int i;

	(void)state;
	assert_int_equal(tb_writer_open(&w, path, &o), 0);
	for (i = 0; i < 3; i++) {
		struct tb_rec_stats *st;

		h = mk(TB_REC_STATS, big, 10 + i, 0, 0);
		st = (void *)h;
		st->ncpus = (big - sizeof(*st)) / 8;
		memset(st + 1, i, big - sizeof(*st));
		assert_int_equal(tb_writer_append(w, h), 0);
		free(h);
	}
	assert_int_equal(tb_writer_close(w), 0);
	assert_int_equal(read_all(path, 0, &got, NULL, NULL), 0);
	assert_int_equal(got.n, 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(got.v[i]->size, big);
		assert_int_equal(((unsigned char *)got.v[i])[big - 1], i);
	}
	recs_free(&got);
}

static void test_write_stdout(void **state)
{
	struct tb_file_info info = test_info();
	struct tb_writer_opts o = { .info = &info, .zlevel = 3 };
	struct tb_writer *w;
	struct tb_rec_hdr *h;
	struct recs got = { 0 };
	int saved, fd, i;

	(void)state;
	fflush(stdout);
	saved = dup(1);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(saved >= 0 && fd >= 0);
	assert_int_equal(dup2(fd, 1), 1);
	close(fd);
	assert_int_equal(tb_writer_open(&w, "-", &o), 0);
	for (i = 0; i < 5; i++) {
		h = gen(i);
		assert_int_equal(tb_writer_append(w, h), 0);
		free(h);
	}
	assert_int_equal(tb_writer_close(w), 0);
	assert_int_equal(dup2(saved, 1), 1);
	close(saved);
	/* fd 1 stays open after close */
	assert_true(fcntl(1, F_GETFD) >= 0);
	assert_int_equal(read_all(path, 0, &got, NULL, NULL), 0);
	assert_int_equal(got.n, 5);
	recs_free(&got);
}

/* A file the writer leaves open is readable at every flush. */
static void test_read_while_writing(void **state)
{
	struct tb_file_info info = test_info();
	struct tb_writer_opts o = { .info = &info, .zlevel = 6 };
	struct tb_writer *w;
	struct recs got = { 0 };
	int i;

	(void)state;
	assert_int_equal(tb_writer_open(&w, path, &o), 0);
	assert_int_equal(read_all(path, 0, &got, NULL, NULL), 0);
	assert_int_equal(got.n, 0);
	for (i = 0; i < 21; i++) {
		struct tb_rec_hdr *h = gen(i);

		assert_int_equal(tb_writer_append(w, h), 0);
		free(h);
		if (i % 7 == 6) {
			assert_int_equal(tb_writer_flush(w), 0);
			assert_int_equal(read_all(path, 0, &got, NULL, NULL), 0);
			assert_int_equal(got.n, (size_t)i + 1);
			recs_free(&got);
		}
	}
	assert_int_equal(tb_writer_close(w), 0);
}

static int setup(void **state)
{
	*state = dir;
	return tmpdir_make(dir, path, sizeof(path), "t.tbt");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_map),
		cmocka_unit_test(test_round_trip_raw),
		cmocka_unit_test(test_round_trip_zlib),
		cmocka_unit_test(test_prefix_raw),
		cmocka_unit_test(test_prefix_zlib),
		cmocka_unit_test(test_header_bitflips),
		cmocka_unit_test(test_chunk_bitflips_raw),
		cmocka_unit_test(test_chunk_bitflips_zlib),
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_not_a_trace),
		cmocka_unit_test(test_unknown_stream_and_flags),
		cmocka_unit_test(test_stream_mask),
		cmocka_unit_test(test_bad_records),
		cmocka_unit_test(test_bad_chunks),
		cmocka_unit_test(test_writer_rejects),
		cmocka_unit_test(test_big_records),
		cmocka_unit_test(test_write_stdout),
		cmocka_unit_test(test_read_while_writing),
	};

	return cmocka_run_group_tests(tests, setup, tmpdir_teardown);
}
