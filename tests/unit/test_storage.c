// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_storage.c - formats 2.0 and 2.1: the packed record encodings, the chunk index,
 * rounds, prefixes of packed and indexed files. The golden files of every
 * released version are test_golden.c's.
 */
#include <errno.h>
#include <inttypes.h>
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
#include "rnd.h"
#include "tmpdir.h"
#include "../../lib/format/tbpack.h"

static char dir[] = "/tmp/test_storage.XXXXXX";
static char path[256];


/* A record of any type with hostile field values; size a multiple of 8. */
static size_t mkrec(unsigned char *buf, unsigned i)
{
	static const uint16_t types[] = { TB_REC_EVENT, TB_REC_SITE, TB_REC_FORK,
					  TB_REC_EXEC, TB_REC_EXIT, TB_REC_COMM,
					  TB_REC_STATS };
	struct tb_rec_hdr *h = (void *)buf;
	uint16_t type = types[i % 7];
	size_t size = tb_rec_min_size(type) + 8 * (rnd() % 4), k;

	memset(buf, 0, size);
	h->type = type;
	h->size = (uint16_t)size;
	h->cpu = i % 5 == 0 ? ~0u : (uint32_t)(rnd() % 4);
	h->ts = i % 11 == 0 ? rnd() : 1000000 + i * 1000 - (rnd() % 3000);
	h->pid = i % 13 == 0 ? 0xffffffffu : 100 + (uint32_t)(rnd() % 3);
	h->tid = i % 17 == 0 ? 0 : h->pid + (uint32_t)(rnd() % 3);
	for (k = sizeof(*h); k < size; k++)
		if (rnd() % 3 == 0)
			buf[k] = (unsigned char)rnd();
	if (type == TB_REC_EVENT && i % 2) {
		struct tb_rec_event *e = (void *)buf;

		e->site = 0x55550000 + (rnd() % 4) * 64;
		e->args[0] = i;
		e->args[1] = ~(uint64_t)i;
	}
	return size;
}

static void test_pack_round_trip(void **state)
{
	unsigned char *raw = malloc(1 << 20), *pk, *out = NULL;
	size_t len = 0, plen, cap = 0, cut;
	unsigned i, n = 3000;
	long got;

	(void)state;
	assert_non_null(raw);
	for (i = 0; i < n; i++)
		len += mkrec(raw + len, i);
	pk = malloc(tb_pack_bound(len));
	assert_non_null(pk);
	plen = tb_pack(raw, len, 999, 0, pk);
	assert_true(plen <= tb_pack_bound(len));
	got = tb_unpack(pk, plen, 999, 0, n, &out, &cap, TB_CHUNK_MAX_BYTES);
	assert_int_equal(got, len);
	assert_memory_equal(out, raw, len);

	/* wrong record count, wrong cap, every truncation: refused */
	assert_int_equal(tb_unpack(pk, plen, 999, 0, n - 1, &out, &cap, TB_CHUNK_MAX_BYTES), -EBADMSG);
	assert_int_equal(tb_unpack(pk, plen, 999, 0, n + 1, &out, &cap, TB_CHUNK_MAX_BYTES), -EBADMSG);
	assert_int_equal(tb_unpack(pk, plen, 999, 0, n, &out, &cap, len - 8), -EBADMSG);
	for (cut = 0; cut < plen; cut += 1 + cut / 64) {
		got = tb_unpack(pk, cut, 999, 0, n, &out, &cap, TB_CHUNK_MAX_BYTES);
		assert_int_equal(got, -EBADMSG);
	}
	/* bit flips: decoded or refused, never a crash (ASan in make fuzz) */
	for (i = 0; i < 2000; i++) {
		size_t bit = rnd() % (plen * 8);

		pk[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		got = tb_unpack(pk, plen, 999, 0, n, &out, &cap, TB_CHUNK_MAX_BYTES);
		assert_true(got == -EBADMSG || (got > 0 && got % 8 == 0));
		pk[bit / 8] ^= (unsigned char)(1u << (bit % 8));
	}
	/* a bomb: tiny input claiming big records stops at max_out */
	{
		unsigned char bomb[4096];
		size_t k;

		for (k = 0; k + 7 < sizeof(bomb); k += 8) {
			unsigned char r[] = { 6, 0xff, 0x3f, 1, 0, 0, 0, 0 };

			memcpy(bomb + k, r, 8);
		}
		got = tb_unpack(bomb, sizeof(bomb) / 8 * 8, 0, 0, sizeof(bomb) / 8, &out,
				&cap, 1 << 20);
		assert_int_equal(got, -EBADMSG);
		assert_true(cap <= 1 << 20);
	}
	free(out);
	free(pk);
	free(raw);
}

/* Writes n records in rounds of 100 (one tb_writer_flush each). */
static void write_file(unsigned n, int zlevel, size_t chunk_max, bool index,
		       unsigned char **all, size_t *all_len)
{
	struct tb_file_info info = { .clock_id = 1 };
	struct tb_writer_opts o = { .info = &info, .zlevel = zlevel,
				    .chunk_max = chunk_max, .no_index = !index };
	unsigned char buf[512];
	struct tb_writer *w;
	unsigned i;

	strcpy(info.hostname, "h");
	*all = malloc(n * 512);
	*all_len = 0;
	assert_int_equal(tb_writer_open(&w, path, &o), 0);
	for (i = 0; i < n; i++) {
		size_t sz = mkrec(buf, i);

		memcpy(*all + *all_len, buf, sz);
		*all_len += sz;
		assert_int_equal(tb_writer_append(w, (void *)buf), 0);
		if (i % 100 == 99)
			assert_int_equal(tb_writer_flush(w), 0);
	}
	assert_int_equal(tb_writer_close(w), 0);
}

/* Reads with mask (0: all) and compares with the records of `all` in those
 * streams, stream by stream in append order. Returns the records read. */
static size_t check_read(const char *p, uint32_t mask, bool use_index,
			 const unsigned char *all, size_t all_len, bool *finished)
{
	size_t pos[TB_NSTREAMS], n = 0;
	const struct tb_rec_hdr *h;
	struct tb_reader *r;
	int ret, s;

	for (s = 0; s < TB_NSTREAMS; s++)
		pos[s] = 0;
	assert_int_equal(tb_reader_open(&r, p), 0);
	if (mask)
		tb_reader_set_streams(r, mask);
	tb_reader_use_index(r, use_index);
	while ((ret = tb_reader_next(r, &h)) == 1) {
		const struct tb_rec_hdr *want;

		s = tb_stream_of(h->type);
		assert_true(s > 0);
		assert_true(!mask || (mask & (1u << s)));
		/* the next record of stream s in append order */
		for (;;) {
			assert_true(pos[s] < all_len);
			want = (const void *)(all + pos[s]);
			pos[s] += want->size;
			if (tb_stream_of(want->type) == s)
				break;
		}
		assert_int_equal(h->size, want->size);
		assert_memory_equal(h, want, want->size);
		n++;
	}
	assert_int_equal(ret, 0);
	assert_null(tb_reader_tail_reason(r));
	if (finished)
		*finished = tb_reader_finished(r);
	tb_reader_close(r);
	return n;
}

/* Scheduler records as a ping-pong on two CPUs makes them (comms repeat,
 * the idle task is tid 0 with one name per CPU), then hostile ones: random
 * bytes in every field, bytes after a comm's NUL, extreme prios, and types
 * 9/10/12 at other sizes. */
static size_t mksched(unsigned char *buf, unsigned i, bool hostile)
{
	struct tb_rec_hdr *h = (void *)buf;
	unsigned kind = i % 3, cpu = (i / 3) % 2;
	uint32_t a = 15549 + cpu * 2;
	size_t size, k;

	if (kind == 0) {
		struct tb_rec_switch *s = (void *)buf;

		size = sizeof(*s) + (hostile && i % 7 == 0 ? 8 : 0);
		memset(buf, 0, size);
		s->hdr.tid = s->hdr.pid = i % 2 ? a : 0;
		s->next_tid = s->next_tgid = i % 2 ? 0 : a;
		s->prev_prio = s->next_prio = 120;
		s->prev_state = i % 2;
		snprintf(s->prev_comm, 16, i % 2 ? "sched-pipe" : "swapper/%u", cpu);
		snprintf(s->next_comm, 16, i % 2 ? "swapper/%u" : "sched-pipe", cpu);
		h->type = TB_REC_SWITCH;
	} else if (kind == 1) {
		struct tb_rec_wake *w = (void *)buf;

		size = sizeof(*w) + (hostile && i % 5 == 0 ? 16 : 0);
		memset(buf, 0, size);
		w->hdr.tid = w->hdr.pid = a;
		w->kind = 1 + i % 3;
		w->tid = w->tgid = a + 1;
		w->prio = 120;
		w->target_cpu = !cpu;
		strcpy(w->comm, "sched-pipe");
		h->type = TB_REC_WAKE;
	} else {
		struct tb_rec_cpu *c = (void *)buf;

		size = sizeof(*c) + (hostile && i % 11 == 0 ? 8 : 0);
		memset(buf, 0, size);
		c->kind = TB_CPU_IDLE;
		c->state = i % 2 ? ~0u : 1;
		c->cpu_id = cpu;
		h->type = TB_REC_CPU;
	}
	h->size = (uint16_t)size;
	h->cpu = cpu;
	h->ts = 1000000 + i * 1500;
	if (hostile) {
		for (k = sizeof(*h); k < size; k++)
			if (rnd() % 4 == 0)
				buf[k] = (unsigned char)rnd();
		if (i % 9 == 0 && kind == 1)
			((struct tb_rec_wake *)buf)->prio = INT32_MIN + (int32_t)(rnd() % 200);
		if (i % 9 == 0 && kind == 0)
			((struct tb_rec_switch *)buf)->prev_prio = INT16_MIN + (int16_t)(rnd() % 200);
	}
	return size;
}

static void test_kpack_round_trip(void **state)
{
	unsigned char *raw = malloc(1 << 20), *pk, *out = NULL;
	size_t len, plen, plain, cap = 0, cut;
	unsigned i, n = 6000, pass;
	long got;

	(void)state;
	assert_non_null(raw);
	pk = malloc(tb_pack_bound(1 << 20));
	assert_non_null(pk);
	for (pass = 0; pass < 2; pass++) {
		for (len = 0, i = 0; i < n; i++)
			len += mksched(raw + len, i, pass == 1);
		plen = tb_pack(raw, len, 999, TB_PACK_KERNEL, pk);
		assert_true(plen <= tb_pack_bound(len));
		got = tb_unpack(pk, plen, 999, TB_PACK_KERNEL, n, &out, &cap, TB_CHUNK_MAX_BYTES);
		assert_int_equal(got, len);
		assert_memory_equal(out, raw, len);
		/* decoding with the other flags is refused or gives other bytes */
		got = tb_unpack(pk, plen, 999, 0, n, &out, &cap, TB_CHUNK_MAX_BYTES);
		assert_true(got < 0 || (size_t)got != len || memcmp(out, raw, len));
		if (pass == 0) {
			plain = tb_pack(raw, len, 999, 0, pk);
			plen = tb_pack(raw, len, 999, TB_PACK_KERNEL, pk);
			/* the point of the codecs: a ping-pong's records shrink
			 * to less than half the generic encoding */
			assert_true(plen * 2 <= plain);
			assert_true(plen <= n * 16);
		}
	}
	for (cut = 0; cut < plen; cut += 1 + cut / 64) {
		got = tb_unpack(pk, cut, 999, TB_PACK_KERNEL, n, &out, &cap, TB_CHUNK_MAX_BYTES);
		assert_int_equal(got, -EBADMSG);
	}
	for (i = 0; i < 2000; i++) {
		size_t bit = rnd() % (plen * 8);

		pk[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		got = tb_unpack(pk, plen, 999, TB_PACK_KERNEL, n, &out, &cap, TB_CHUNK_MAX_BYTES);
		assert_true(got == -EBADMSG || (got > 0 && got % 8 == 0));
		pk[bit / 8] ^= (unsigned char)(1u << (bit % 8));
	}
	/* a cached comm that was never coded: refused */
	{
		unsigned char one[16] = { 9, 72 / 8, 1, 0, 0, 0, 0 /* cache bits */,
					  0, 0, 0, 0, 0, 0 };

		got = tb_unpack(one, 13, 0, TB_PACK_KERNEL, 1, &out, &cap, TB_CHUNK_MAX_BYTES);
		assert_int_equal(got, -EBADMSG);
	}
	free(out);
	free(pk);
	free(raw);
}

static void test_packed_file(void **state)
{
	unsigned char *all;
	size_t len, n;
	bool fin;
	int z;

	(void)state;
	for (z = 0; z <= 9; z += 3) {
		write_file(1000, z, 2048, true, &all, &len);
		n = check_read(path, 0, true, all, len, &fin);
		assert_int_equal(n, 1000);
		assert_true(fin);
		free(all);
	}
}

static void test_index(void **state)
{
	unsigned char *all, *b;
	const struct tb_rec_hdr *h;
	struct tb_reader *r;
	size_t len, n_idx, n_scan, flen;
	bool fin;
	int fd, ret;
	struct stat st;

	(void)state;
	write_file(1000, 1, 2048, true, &all, &len);
	/* one stream: through the index, the same records as a scan */
	n_idx = check_read(path, 1u << TB_STREAM_USER, true, all, len, &fin);
	assert_true(fin);
	n_scan = check_read(path, 1u << TB_STREAM_USER, false, all, len, NULL);
	assert_int_equal(n_idx, n_scan);
	assert_int_equal(n_idx, 143);   /* i % 7 == 0 of 0..999 */

	/* rounds: ten flushes; skipped chunks count too */
	assert_int_equal(tb_reader_open(&r, path), 0);
	tb_reader_set_streams(r, 1u << TB_STREAM_STATS);
	while ((ret = tb_reader_next(r, &h)) == 1)
		;
	assert_int_equal(ret, 0);
	assert_int_equal(tb_reader_rounds(r), 10);
	assert_int_equal(tb_reader_stream_stats(r, TB_STREAM_STATS)->records, 142);
	tb_reader_close(r);

	/* a corrupt index is not used: the scan gives the same */
	assert_int_equal(stat(path, &st), 0);
	flen = (size_t)st.st_size;
	b = malloc(flen);
	fd = open(path, O_RDWR);
	assert_int_equal(read(fd, b, flen), (ssize_t)flen);
	b[flen - 30] ^= 0x40;   /* inside the index entries */
	assert_int_equal(pwrite(fd, b + flen - 30, 1, (off_t)flen - 30), 1);
	close(fd);
	assert_int_equal(tb_reader_open(&r, path), 0);
	tb_reader_set_streams(r, 1u << TB_STREAM_USER);
	n_scan = 0;
	while ((ret = tb_reader_next(r, &h)) == 1)
		n_scan++;
	assert_int_equal(n_scan, 143);
	assert_string_equal(tb_reader_tail_reason(r), "payload CRC mismatch");
	tb_reader_close(r);
	free(b);
	free(all);
}

/* Read in time order (tb_reader_time_order), a finished file gives every
 * record; a chunk whose indexed range does not hold its records (a file
 * that lies) ends the data there, as a bad record does, rather than let a
 * merge trust it. */
static void test_time_order_untrusted(void **state)
{
	unsigned char *all, *b;
	const struct tb_rec_hdr *h;
	struct tb_index_trailer t;
	struct tb_chunk_hdr ch;
	struct tb_index_entry *e = NULL;
	struct tb_reader *r;
	size_t len, n = 0, flen;
	uint64_t low, pos, ts[1000], lows[1000];
	struct stat st;
	int fd, ret;

	(void)state;
	write_file(1000, 1, 2048, true, &all, &len);
	assert_int_equal(tb_reader_open(&r, path), 0);
	tb_reader_time_order(r);
	while ((ret = tb_reader_next(r, &h)) == 1) {
		assert_true(n < 1000);
		assert_int_equal(tb_reader_time_pos(r, &low, &pos), 1);
		ts[n] = h->ts;
		lows[n++] = low;
	}
	assert_int_equal(ret, 0);
	assert_int_equal(n, 1000);
	/* low, after a record, is at most every later record's ts */
	for (size_t i = n - 1, least = UINT64_MAX; i-- > 0;) {
		least = ts[i + 1] < least ? ts[i + 1] : least;
		if (lows[i] > least)
			fail_msg("record %zu: low %" PRIu64 ", a later record at %" PRIu64,
				 i, lows[i], least);
	}
	assert_null(tb_reader_tail_reason(r));
	tb_reader_close(r);

	/* the first entry with two records of different times claims the
	 * later as its smallest */
	assert_int_equal(stat(path, &st), 0);
	flen = (size_t)st.st_size;
	b = malloc(flen);
	assert_non_null(b);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, b, flen), (ssize_t)flen);
	memcpy(&t, b + flen - sizeof(t), sizeof(t));
	memcpy(&ch, b + t.index_off, sizeof(ch));
	for (uint32_t i = 0; i < ch.nrec && !e; i++) {
		struct tb_index_entry *x = (void *)(b + t.index_off + sizeof(ch) + i * sizeof(*x));

		if (x->nrec > 1 && x->first_ts < x->last_ts)
			e = x;
	}
	assert_non_null(e);
	e->first_ts = e->last_ts;
	ch.payload_crc = tb_crc32(b + t.index_off + sizeof(ch), ch.stored_len);
	ch.hdr_crc = tb_crc32(&ch, offsetof(struct tb_chunk_hdr, hdr_crc));
	memcpy(b + t.index_off, &ch, sizeof(ch));
	assert_int_equal(pwrite(fd, b, flen, 0), (ssize_t)flen);
	close(fd);
	assert_int_equal(tb_reader_open(&r, path), 0);
	tb_reader_time_order(r);
	n = 0;
	while ((ret = tb_reader_next(r, &h)) == 1) {
		assert_int_equal(tb_reader_time_pos(r, &low, &pos), 1);
		n++;
	}
	assert_int_equal(ret, 0);
	assert_true(n < 1000);
	assert_string_equal(tb_reader_tail_reason(r), "record outside its chunk's time range");
	tb_reader_close(r);
	free(b);
	free(all);
}

/* What one reading in time order gave: every record and its low and pos,
 * and what the reader said at the end. */
struct time_read {
	unsigned char *recs;
	size_t len, n;
	uint64_t *lp;                 /* low, pos of each record */
	const char *reason;
	uint64_t tail, off, input;
	struct tb_stream_stats st[TB_NSTREAMS];
	int ret;
};

/* ahead: -1 in file order, 0 in time order, 1 decoding ahead too. */
static void read_in_time(int ahead, size_t max, struct time_read *t)
{
	const struct tb_rec_hdr *h;
	struct tb_reader *r;

	*t = (struct time_read){ .recs = malloc(max * 512), .lp = malloc(max * 16) };
	assert_true(t->recs && t->lp);
	assert_int_equal(tb_reader_open(&r, path), 0);
	if (ahead >= 0)
		tb_reader_time_order(r);
	if (ahead > 0)
		tb_reader_decode_ahead(r);
	while ((t->ret = tb_reader_next(r, &h)) == 1) {
		assert_true(t->n < max);
		if (ahead >= 0)
			assert_int_equal(tb_reader_time_pos(r, &t->lp[2 * t->n],
							    &t->lp[2 * t->n + 1]), 1);
		memcpy(t->recs + t->len, h, h->size);
		t->len += h->size;
		t->n++;
	}
	t->reason = tb_reader_tail_reason(r);
	t->tail = tb_reader_tail_bytes(r);
	t->off = tb_reader_offset(r);
	t->input = tb_reader_input_bytes(r);
	for (unsigned k = 0; k < TB_NSTREAMS; k++)
		t->st[k] = *tb_reader_stream_stats(r, k);
	assert_int_equal(tb_reader_next(r, &h), t->ret);   /* asked again: the same */
	tb_reader_close(r);
}

static void same_time_read(const struct time_read *a, const struct time_read *b)
{
	assert_int_equal(a->ret, b->ret);
	assert_int_equal(a->n, b->n);
	assert_int_equal(a->len, b->len);
	assert_memory_equal(a->recs, b->recs, a->len);
	assert_memory_equal(a->lp, b->lp, a->n * 16);
	assert_true(!a->reason == !b->reason);
	if (a->reason)
		assert_string_equal(a->reason, b->reason);
	assert_int_equal(a->tail, b->tail);
	assert_int_equal(a->off, b->off);
	assert_int_equal(a->input, b->input);
	assert_memory_equal(a->st, b->st, sizeof(a->st));
}

static void time_read_free(struct time_read *t)
{
	free(t->recs);
	free(t->lp);
}

/* Decoding ahead on a thread (tb_reader_decode_ahead) changes nothing the
 * reader gives: records, bounds, counts, and where and why a corrupt file
 * stops, whichever chunk the damage is in and whether the reader's own
 * thread or the one ahead meets it first. */
static void test_decode_ahead(void **state)
{
	static const struct { unsigned n; int z; size_t chunk; } files[] = {
		{ 5000, 1, 2048 }, { 5000, 0, 4096 }, { 300, 6, 1 << 20 },
	};
	unsigned char *all;
	size_t len;
	unsigned stopped = 0;

	(void)state;
	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		unsigned char *b;
		struct stat st;
		size_t flen;
		int fd;

		write_file(files[f].n, files[f].z, files[f].chunk, true, &all, &len);
		assert_int_equal(stat(path, &st), 0);
		flen = (size_t)st.st_size;
		b = malloc(flen);
		fd = open(path, O_RDWR);
		assert_true(b && fd >= 0);
		assert_int_equal(read(fd, b, flen), (ssize_t)flen);
		/* clean, then a byte flipped at 1/8, 2/8 .. 7/8 of the file */
		for (unsigned k = 0; k < 8; k++) {
			struct time_read plain, ahead, file;
			size_t at = flen * k / 8;

			if (k)
				assert_int_equal(pwrite(fd, &(unsigned char){ b[at] ^ 0x5a }, 1, (off_t)at), 1);
			read_in_time(0, files[f].n + 10, &plain);
			read_in_time(1, files[f].n + 10, &ahead);
			read_in_time(-1, files[f].n + 10, &file);
			if (!k) {
				assert_int_equal(plain.n, files[f].n);
				assert_null(plain.reason);
			}
			same_time_read(&plain, &ahead);
			/* the damaged chunk ends either order, for the same
			 * reason, and the tail runs from its start to the end */
			assert_true(!plain.reason == !file.reason);
			if (plain.reason) {
				assert_string_equal(plain.reason, file.reason);
				assert_true(plain.tail >= flen - at);
				assert_true(plain.tail - (flen - at) < files[f].chunk + 4096);
				stopped++;
			}
			time_read_free(&plain);
			time_read_free(&ahead);
			time_read_free(&file);
			if (k)
				assert_int_equal(pwrite(fd, &b[at], 1, (off_t)at), 1);
		}
		close(fd);
		free(b);
		free(all);
	}
	assert_true(stopped >= 12);   /* most flips hit a chunk */
}

/* Every prefix of a packed, indexed file: the records of the whole rounds. */
static void test_packed_prefixes(void **state)
{
	unsigned char *all, *b;
	size_t len, flen, cut;
	struct stat st;
	int fd;
	char p2[300];

	(void)state;
	write_file(300, 6, 1024, true, &all, &len);
	assert_int_equal(stat(path, &st), 0);
	flen = (size_t)st.st_size;
	b = malloc(flen);
	fd = open(path, O_RDONLY);
	assert_int_equal(read(fd, b, flen), (ssize_t)flen);
	close(fd);
	snprintf(p2, sizeof(p2), "%s/cut.tbt", dir);
	for (cut = 0; cut <= flen; cut += 1 + cut % 7) {
		struct tb_reader *r;
		const struct tb_rec_hdr *h;
		size_t n = 0;
		int ret, err;

		fd = open(p2, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		assert_int_equal(write(fd, b, cut), (ssize_t)cut);
		close(fd);
		err = tb_reader_open(&r, p2);
		if (err) {
			assert_true(err == -EINVAL || err == -EBADMSG);
			continue;
		}
		tb_reader_set_streams(r, 1u << TB_STREAM_USER);   /* index if any */
		while ((ret = tb_reader_next(r, &h)) == 1)
			n++;
		assert_int_equal(ret, 0);
		/* expected: USER records of the rounds wholly inside the cut
		 * (a round ends with a ROUND_END chunk, the last one with the
		 * index); the chunks of a round cut short are tail bytes */
		{
			size_t off, want = 0, k = 0, whole = 0;
			uint32_t hs;

			memcpy(&hs, b + 12, 4);
			whole = hs;
			for (off = hs; off + 48 <= flen;) {
				struct tb_chunk_hdr ch;

				memcpy(&ch, b + off, 48);
				if (off + 48 + ch.stored_len > cut)
					break;
				if (ch.stream == TB_STREAM_USER)
					k += ch.nrec;
				off += 48 + ch.stored_len;
				if (ch.flags & TB_CHUNK_ROUND_END ||
				    ch.stream == TB_STREAM_INDEX) {
					want = k;
					whole = off;
				}
			}
			assert_int_equal(n, want);
			assert_int_equal(tb_reader_tail_bytes(r), cut - whole);
			if (cut == whole)
				assert_null(tb_reader_tail_reason(r));
			else
				assert_non_null(tb_reader_tail_reason(r));
		}
		if (cut == flen)
			assert_int_equal(n, 43);
		tb_reader_close(r);
	}
	free(b);
	free(all);
	unlink(p2);
}

/* A recorder killed between the chunks of one flush (a round spanning
 * several chunks of a stream): every cut of the file, read from a file or a
 * pipe, gives each thread a prefix of its sequence, ending at a round. */
static void test_round_cut(void **state)
{
	enum { NTHR = 3, PER_ROUND = 40, ROUNDS = 5 };
	unsigned char *b;
	size_t flen, cut, chunks_in_round = 0;
	struct stat st;
	int fd, via;
	char p2[300];
	struct tb_file_info info = { .clock_id = 1 };
	/* 64-byte events: 4 KiB chunks, so a round of 3 x 40 spans 2 chunks */
	struct tb_writer_opts o = { .info = &info, .zlevel = 1, .chunk_max = 4096 };
	struct tb_writer *w;
	unsigned rnd_, i, t;

	(void)state;
	assert_int_equal(tb_writer_open(&w, path, &o), 0);
	for (rnd_ = 0; rnd_ < ROUNDS; rnd_++) {
		for (i = 0; i < PER_ROUND; i++) {
			for (t = 0; t < NTHR; t++) {
				unsigned char buf[64] = { 0 };
				struct tb_rec_event *e = (void *)buf;

				e->hdr.type = TB_REC_EVENT;
				e->hdr.size = sizeof(buf);
				e->hdr.pid = 100;
				e->hdr.tid = 100 + t;
				e->hdr.ts = 1000 + (rnd_ * PER_ROUND + i) * 10 + t;
				e->site = 0x1000;
				e->args[0] = rnd_ * PER_ROUND + i;   /* the thread's seq */
				assert_int_equal(tb_writer_append(w, (void *)buf), 0);
			}
		}
		assert_int_equal(tb_writer_flush(w), 0);
	}
	assert_int_equal(tb_writer_close(w), 0);
	assert_int_equal(stat(path, &st), 0);
	flen = (size_t)st.st_size;
	b = malloc(flen);
	fd = open(path, O_RDONLY);
	assert_int_equal(read(fd, b, flen), (ssize_t)flen);
	close(fd);
	{	/* the layout this test is about: rounds of several chunks */
		uint32_t hs;
		size_t off;

		memcpy(&hs, b + 12, 4);
		for (off = hs; off + 48 <= flen;) {
			struct tb_chunk_hdr ch;

			memcpy(&ch, b + off, 48);
			off += 48 + ch.stored_len;
			if (ch.stream == TB_STREAM_INDEX)
				break;
			chunks_in_round++;
			if (ch.flags & TB_CHUNK_ROUND_END)
				break;
		}
		assert_true(chunks_in_round >= 2);
	}
	snprintf(p2, sizeof(p2), "%s/roundcut.tbt", dir);
	for (cut = 0; cut <= flen; cut += 1 + cut % 5) {
		for (via = 0; via < 2; via++) {
			uint64_t next[NTHR] = { 0 };
			struct tb_reader *r;
			const struct tb_rec_hdr *h;
			int ret, err, pfd[2] = { -1, -1 };

			if (via == 0) {
				fd = open(p2, O_WRONLY | O_CREAT | O_TRUNC, 0644);
				assert_int_equal(write(fd, b, cut), (ssize_t)cut);
				close(fd);
				err = tb_reader_open(&r, p2);
			} else {
				/* through a pipe: no index, no seeking */
				assert_int_equal(pipe(pfd), 0);
				assert_int_equal(fcntl(pfd[1], F_SETPIPE_SZ, 1 << 20) >= (int)flen, 1);
				assert_int_equal(write(pfd[1], b, cut), (ssize_t)cut);
				close(pfd[1]);
				err = tb_reader_open_fd(&r, pfd[0], 1);
			}
			if (err) {
				assert_true(err == -EINVAL || err == -EBADMSG);
				continue;
			}
			while ((ret = tb_reader_next(r, &h)) == 1) {
				const struct tb_rec_event *e = (const void *)h;

				t = h->tid - 100;
				assert_true(t < NTHR);
				assert_int_equal(e->args[0], next[t]);   /* no gap */
				next[t]++;
			}
			assert_int_equal(ret, 0);
			/* whole rounds only, the same for every thread */
			for (t = 0; t < NTHR; t++) {
				assert_int_equal(next[t] % PER_ROUND, 0);
				assert_int_equal(next[t], next[0]);
			}
			if (cut == flen)
				assert_int_equal(next[0], ROUNDS * PER_ROUND);
			if (tb_reader_discarded(r, NULL))
				assert_non_null(tb_reader_tail_reason(r));
			tb_reader_close(r);
		}
	}
	free(b);
	unlink(p2);
}

static void test_empty_file(void **state)
{
	struct tb_reader *r;
	int fd;

	(void)state;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	close(fd);
	assert_int_equal(tb_reader_open(&r, path), -EINVAL);
}

static int setup(void **state)
{
	*state = dir;
	return tmpdir_make(dir, path, sizeof(path), "t.tbt");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pack_round_trip),
		cmocka_unit_test(test_kpack_round_trip),
		cmocka_unit_test(test_packed_file),
		cmocka_unit_test(test_index),
		cmocka_unit_test(test_time_order_untrusted),
		cmocka_unit_test(test_decode_ahead),
		cmocka_unit_test(test_packed_prefixes),
		cmocka_unit_test(test_round_cut),
		cmocka_unit_test(test_empty_file),
	};

	return cmocka_run_group_tests(tests, setup, tmpdir_teardown);
}
