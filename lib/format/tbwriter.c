// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tbwriter.c - the trace file's writer (docs/format.md): the recorder's
 * side, and the only user of libdeflate. The reader is lib/format/tbfile.c.
 *
 * Every function returns 0 (or a count) or a negative errno and prints
 * nothing. The writer only ever appends whole chunks with write(2), so any
 * prefix of a file is a valid trace.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libdeflate.h>

#include "format/outfile.h"
#include "format/tbfile.h"
#include "format/tbpack.h"

/* Writes all n bytes: retries partial writes and EINTR, waits on EAGAIN
 * (stdout may be a non-blocking pipe). */
static int write_all(int fd, const void *buf, size_t n)
{
	size_t done;

	return tb_fd_io(fd, (void *)buf, n, &done, true);
}

struct wstream {
	unsigned char *buf;
	size_t len, cap;
	uint64_t first_ts, last_ts;
	uint32_t nrec;
};

struct tb_writer {
	int fd;
	bool own_fd;
	int zlevel;
	size_t chunk_max;
	struct wstream s[TB_NRSTREAMS];
	unsigned char *out;      /* chunk header + stored payload */
	size_t out_cap;
	unsigned char *pk;       /* packed payload */
	size_t pk_cap;
	/* chunks are compressed with libdeflate: the same zlib streams that
	 * readers uncompress() (TB_CHUNK_ZLIB), written about 1.65x faster
	 * than zlib's deflate at level 1, and a little smaller (docs/format.md,
	 * "How the recorder writes it"); NULL until the first chunk */
	struct libdeflate_compressor *zc;
	bool raw, no_index;
	struct tb_index_entry *idx;
	size_t nidx, idx_cap;
	uint64_t min_ts, max_ts;
	bool have_ts;
	uint32_t seq;
	uint64_t bytes, records;
	bool round_open;         /* chunks written since the last ROUND_END */
	int err;                 /* sticky: after a failed write the file ends */
};

static void put_u16(unsigned char *p, uint16_t v) { memcpy(p, &v, 2); }
static void put_u32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static void put_u64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

static int write_header(struct tb_writer *w, const struct tb_file_info *info)
{
	static const struct tb_file_info none;
	const char *str[3];
	size_t len[3], size, off;
	unsigned char *h;
	int i, err;

	if (!info)
		info = &none;
	str[0] = info->hostname;
	len[0] = strnlen(info->hostname, sizeof(info->hostname));
	str[1] = info->kernel;
	len[1] = strnlen(info->kernel, sizeof(info->kernel));
	str[2] = info->cmdline;
	len[2] = strnlen(info->cmdline, sizeof(info->cmdline));

	size = TB_HDR_MIN + len[0] + len[1] + len[2];
	h = calloc(1, size);
	if (!h)
		return -ENOMEM;
	memcpy(h, TB_FILE_MAGIC, 8);
	put_u16(h + 8, TB_FORMAT_MAJOR);
	put_u16(h + 10, TB_FORMAT_MINOR);
	put_u32(h + 12, (uint32_t)size);
	put_u32(h + 16, info->flags);
	put_u32(h + 20, info->clock_id);
	put_u64(h + 24, (uint64_t)info->realtime_offset_ns);
	put_u64(h + 32, info->start_ts);
	off = TB_HDR_FIXED;
	for (i = 0; i < 3; i++) {
		put_u16(h + off, (uint16_t)len[i]);
		memcpy(h + off + 2, str[i], len[i]);
		off += 2 + len[i];
	}
	put_u32(h + off, tb_crc32(h, off));
	err = write_all(w->fd, h, size);
	free(h);
	if (!err)
		w->bytes += size;
	return err;
}

/* The trace file at path: created 0600, as perf.data (a trace holds the
 * whole machine's scheduling, other users' process names included); or,
 * unless excl, what is there already (a device, a FIFO, a trace written
 * again); never through another user's symbolic link (outfile.h). Locked
 * before it is truncated: a second writer of the same file (two recorders
 * with one -o) must not destroy the first one's trace. A file system
 * without locks is written anyway. An fd, or a negative errno. */
static int open_path(const char *path, bool excl)
{
	struct stat st;
	int fd, err = 0;

	fd = tb_out_open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd == -EEXIST && !excl)
		fd = tb_out_open(path, O_WRONLY, 0);
	if (fd < 0)
		return fd;
	if (flock(fd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK)
		err = -EBUSY;
	else if (!fstat(fd, &st) && S_ISREG(st.st_mode) && ftruncate(fd, 0))
		err = -errno;
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

/* stdout; redirected to a file, locked too, so that a follower of that
 * file knows when the writer is gone. */
static int open_stdout(void)
{
	struct stat st;

	tb_grow_pipe(STDOUT_FILENO);
	if (!fstat(STDOUT_FILENO, &st) && S_ISREG(st.st_mode) &&
	    flock(STDOUT_FILENO, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK)
		return -EBUSY;
	return STDOUT_FILENO;
}

int tb_writer_open(struct tb_writer **wp, const char *path,
		   const struct tb_writer_opts *opts)
{
	struct tb_writer *w;
	int err;

	*wp = NULL;
	if (!path || !opts || opts->zlevel < 0 || opts->zlevel > 9 ||
	    opts->chunk_max > TB_CHUNK_MAX_BYTES)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->zlevel = opts->zlevel;
	w->raw = opts->raw;
	w->no_index = opts->no_index;
	w->chunk_max = opts->chunk_max ? opts->chunk_max : 1u << 20;
	w->own_fd = strcmp(path, "-") != 0;
	w->fd = w->own_fd ? open_path(path, opts->excl) : open_stdout();
	if (w->fd < 0) {
		err = w->fd;
		free(w);
		return err;
	}
	err = write_header(w, opts->info);
	if (err) {
		if (w->own_fd)
			close(w->fd);
		free(w);
		return err;
	}
	*wp = w;
	return 0;
}

/* Remembers a chunk for the index written at close. */
static int index_add(struct tb_writer *w, const struct tb_chunk_hdr *ch)
{
	if (w->no_index)
		return 0;
	if (w->nidx == w->idx_cap) {
		size_t cap = w->idx_cap ? 2 * w->idx_cap : 256;
		struct tb_index_entry *p = realloc(w->idx, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		w->idx = p;
		w->idx_cap = cap;
	}
	w->idx[w->nidx++] = (struct tb_index_entry){
		.off = w->bytes, .first_ts = ch->first_ts, .last_ts = ch->last_ts,
		.nrec = ch->nrec, .seq = ch->seq, .stream = ch->stream,
		.flags = ch->flags, .stored_len = ch->stored_len,
	};
	return 0;
}

static bool deflate_ready(struct tb_writer *w)
{
	if (!w->zc)
		w->zc = libdeflate_alloc_compressor(w->zlevel);
	return w->zc != NULL;   /* else chunks are stored */
}

/* Writes header ch (lengths, flags and stream set) and payload p as one
 * chunk with a single write(2) when the kernel takes it whole. */
static int write_chunk(struct tb_writer *w, struct tb_chunk_hdr *ch,
		       const unsigned char *p, size_t len)
{
	size_t need, stored = len;
	bool z;
	int err;

	if (w->err)
		return w->err;
	ch->magic = TB_CHUNK_MAGIC;
	ch->seq = w->seq;
	ch->raw_len = (uint32_t)len;
	/* one compressor for the whole file: no allocation per chunk */
	z = w->zlevel && deflate_ready(w);
	need = sizeof(*ch) + (z ? libdeflate_zlib_compress_bound(w->zc, len) : len);
	err = tb_grow_buf(&w->out, &w->out_cap, need);
	if (err)
		return err;
	if (z) {
		size_t n = libdeflate_zlib_compress(w->zc, p, len, w->out + sizeof(*ch),
						    w->out_cap - sizeof(*ch));

		if (n && n < len) {
			ch->flags |= TB_CHUNK_ZLIB;
			stored = n;
		}
	}
	if (!(ch->flags & TB_CHUNK_ZLIB))   /* store: zlib off or no gain */
		memcpy(w->out + sizeof(*ch), p, len);
	ch->stored_len = (uint32_t)stored;
	ch->payload_crc = tb_crc32(w->out + sizeof(*ch), stored);
	ch->hdr_crc = tb_crc32(ch, offsetof(struct tb_chunk_hdr, hdr_crc));
	memcpy(w->out, ch, sizeof(*ch));

	err = index_add(w, ch);
	if (err)
		return err;
	err = write_all(w->fd, w->out, sizeof(*ch) + stored);
	if (err) {
		w->err = err;   /* part of a chunk may be out: nothing may follow */
		return err;
	}
	w->bytes += sizeof(*ch) + stored;
	w->seq++;
	w->round_open = !(ch->flags & TB_CHUNK_ROUND_END);
	return 0;
}

/* Writes stream s's buffer as one chunk, packed unless opts.raw. */
static int flush_stream(struct tb_writer *w, int stream, uint16_t flags)
{
	struct wstream *s = &w->s[stream];
	struct tb_chunk_hdr ch = {
		.stream = (uint16_t)stream,
		.flags = flags,
		.first_ts = s->first_ts,
		.last_ts = s->last_ts,
		.nrec = s->nrec,
	};
	const unsigned char *p = s->buf;
	size_t len = s->len;
	int err;

	if (w->err)
		return w->err;
	if (!s->len)
		return 0;
	if (!w->raw) {
		err = tb_grow_buf(&w->pk, &w->pk_cap, tb_pack_bound(s->len));
		if (err)
			return err;
		len = tb_pack(s->buf, s->len, s->first_ts, TB_PACK_KERNEL, w->pk);
		p = w->pk;
		ch.flags |= TB_CHUNK_PACKED | TB_CHUNK_KPACK;
	}
	err = write_chunk(w, &ch, p, len);
	if (err)
		return err;
	if (!w->have_ts || s->first_ts < w->min_ts)
		w->min_ts = s->first_ts;
	if (!w->have_ts || s->last_ts > w->max_ts)
		w->max_ts = s->last_ts;
	w->have_ts = true;
	s->len = 0;
	s->nrec = 0;
	return 0;
}

/* A record's size bytes (a multiple of 8): the common sizes as fixed-size
 * copies, which the compiler inlines (a call to memcpy was about 7% of the
 * recorder's time at 1 M events/s). */
static void copy_rec(unsigned char *d, const struct tb_rec_hdr *rec, size_t size)
{
	switch (size) {
	case 32: memcpy(d, rec, 32); break;
	case 40: memcpy(d, rec, 40); break;
	case 48: memcpy(d, rec, 48); break;
	case 56: memcpy(d, rec, 56); break;
	case 64: memcpy(d, rec, 64); break;
	default: memcpy(d, rec, size); break;
	}
}

int tb_writer_append(struct tb_writer *w, const struct tb_rec_hdr *rec)
{
	struct wstream *s;
	int stream, err;
	size_t size;

	if (w->err)
		return w->err;
	size = rec->size;
	stream = tb_stream_of(rec->type);
	if (stream < 0 || size < sizeof(*rec) || size % 8 ||
	    size < tb_rec_min_size(rec->type))
		return -EINVAL;
	s = &w->s[stream];
	if (s->len && s->len + size > w->chunk_max) {
		err = flush_stream(w, stream, 0);
		if (err)
			return err;
	}
	if (s->len + size > s->cap) {
		size_t cap = s->len + size;
		unsigned char *p;

		if (cap < w->chunk_max)
			cap = w->chunk_max;
		p = realloc(s->buf, cap);
		if (!p)
			return -ENOMEM;
		s->buf = p;
		s->cap = cap;
	}
	copy_rec(s->buf + s->len, rec, size);
	if (!s->nrec || rec->ts < s->first_ts)
		s->first_ts = rec->ts;
	if (!s->nrec || rec->ts > s->last_ts)
		s->last_ts = rec->ts;
	s->len += size;
	s->nrec++;
	w->records++;
	if (s->len >= w->chunk_max)
		return flush_stream(w, stream, 0);
	return 0;
}

/* Descriptors and process changes first: a reader that streams in file
 * order then knows a site before the events that use it. */
static const int flush_order[] = {
	TB_STREAM_SITE, TB_STREAM_PROC, TB_STREAM_SCHED,
	TB_STREAM_USER, TB_STREAM_STATS,
};
#define NORDER (sizeof(flush_order) / sizeof(flush_order[0]))

static int flush_all(struct tb_writer *w, bool round)
{
	size_t i, last = NORDER;
	int err;

	for (i = 0; i < NORDER; i++)
		if (w->s[flush_order[i]].len)
			last = i;
	if (round && last == NORDER && w->round_open) {
		/* the round's records all went out in full chunks: an empty
		 * chunk ends it (readers hold a round until its end) */
		struct tb_chunk_hdr ch = { .stream = TB_STREAM_STATS,
					   .flags = TB_CHUNK_ROUND_END };

		return write_chunk(w, &ch, (const unsigned char *)"", 0);
	}
	for (i = 0; i < NORDER; i++) {
		err = flush_stream(w, flush_order[i],
				   round && i == last ? TB_CHUNK_ROUND_END : 0);
		if (err)
			return err;
	}
	return 0;
}

int tb_writer_flush(struct tb_writer *w)
{
	return flush_all(w, true);
}

int tb_writer_flush_chunks(struct tb_writer *w)
{
	return flush_all(w, false);
}

/* The index chunk: stored raw so that its trailer is the file's last 16
 * bytes. Not itself in the index. */
static int write_index(struct tb_writer *w)
{
	struct tb_index_trailer t = { .index_off = w->bytes, .magic = TB_INDEX_MAGIC };
	struct tb_chunk_hdr ch = {
		.stream = TB_STREAM_INDEX,
		.first_ts = w->min_ts,
		.last_ts = w->max_ts,
		.nrec = (uint32_t)w->nidx,
	};
	size_t len = w->nidx * sizeof(*w->idx) + sizeof(t);
	int zlevel = w->zlevel, err;
	unsigned char *p;

	if (len > TB_CHUNK_MAX_BYTES)
		return 0;   /* a file of over 1.6 million chunks: readers scan it */
	p = malloc(len);
	if (!p)
		return -ENOMEM;
	if (w->nidx)
		memcpy(p, w->idx, w->nidx * sizeof(*w->idx));
	memcpy(p + len - sizeof(t), &t, sizeof(t));
	w->no_index = true;   /* the index does not index itself */
	w->zlevel = 0;
	err = write_chunk(w, &ch, p, len);
	w->zlevel = zlevel;
	free(p);
	return err;
}

int tb_writer_close(struct tb_writer *w)
{
	int err, i;

	if (!w)
		return 0;
	err = tb_writer_flush(w);
	if (!err && !w->no_index)
		err = write_index(w);
	if (w->own_fd && close(w->fd) && !err)
		err = -errno;
	for (i = 0; i < TB_NRSTREAMS; i++)
		free(w->s[i].buf);
	free(w->out);
	free(w->pk);
	free(w->idx);
	libdeflate_free_compressor(w->zc);
	free(w);
	return err;
}

uint64_t tb_writer_bytes(const struct tb_writer *w)
{
	return w->bytes;
}

int tb_writer_fd(const struct tb_writer *w)
{
	return w->fd;
}

uint64_t tb_writer_records(const struct tb_writer *w)
{
	return w->records;
}

