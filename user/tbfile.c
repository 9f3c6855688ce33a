// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tbfile.c - the tracebpf trace file: writer and reader (docs/format.md).
 *
 * libc and zlib only. Every function returns 0 (or a count) or a negative
 * errno and prints nothing: messages are the caller's business.
 *
 * The writer only ever appends whole chunks with write(2), so any prefix of
 * a file is a valid trace; the reader returns every record of every
 * complete, CRC-valid chunk and stops quietly at the first torn or corrupt
 * one. The reader never seeks (it reads pipes) and bounds what it allocates
 * by TB_CHUNK_MAX_BYTES whatever the file claims.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "tbfile.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the trace file is little endian and this code stores native layouts"
#endif

/* File header: fixed part, then three u16-prefixed strings, then a crc32. */
#define HDR_FIXED      40u
#define HDR_MIN        (HDR_FIXED + 3 * 2 + 4)
#define NSTREAMS       (TB_STREAM_STATS + 1)

static const size_t min_size[TB_REC_TYPE_MAX] = {
	[TB_REC_EVENT] = sizeof(struct tb_rec_event),
	[TB_REC_SITE]  = sizeof(struct tb_rec_site),
	[TB_REC_FORK]  = sizeof(struct tb_rec_fork),
	[TB_REC_EXEC]  = sizeof(struct tb_rec_exec),
	[TB_REC_EXIT]  = sizeof(struct tb_rec_exit),
	[TB_REC_COMM]  = sizeof(struct tb_rec_comm),
	[TB_REC_STATS] = sizeof(struct tb_rec_stats),
	[TB_REC_EVENT_ID] = sizeof(struct tb_rec_event_id),
	[TB_REC_SWITCH] = sizeof(struct tb_rec_switch),
	[TB_REC_WAKE]   = sizeof(struct tb_rec_wake),
	[TB_REC_KTASK]  = sizeof(struct tb_rec_ktask),
	[TB_REC_CPU]    = sizeof(struct tb_rec_cpu),
	[TB_REC_TP]     = sizeof(struct tb_rec_tp),
	[TB_REC_FORMAT] = sizeof(struct tb_rec_format),
	[TB_REC_CMDLINE] = sizeof(struct tb_rec_cmdline),
};

int tb_stream_of(uint16_t rec_type)
{
	switch (rec_type) {
	case TB_REC_EVENT:
	case TB_REC_EVENT_ID:
		return TB_STREAM_USER;
	case TB_REC_SITE:
		return TB_STREAM_SITE;
	case TB_REC_FORK:
	case TB_REC_EXEC:
	case TB_REC_EXIT:
	case TB_REC_COMM:
	case TB_REC_CMDLINE:
		return TB_STREAM_PROC;
	case TB_REC_STATS:
		return TB_STREAM_STATS;
	case TB_REC_SWITCH:
	case TB_REC_WAKE:
	case TB_REC_KTASK:
	case TB_REC_CPU:
	case TB_REC_TP:
	case TB_REC_FORMAT:
		return TB_STREAM_SCHED;
	default:
		return -EINVAL;
	}
}

size_t tb_rec_min_size(uint16_t rec_type)
{
	return rec_type < TB_REC_TYPE_MAX ? min_size[rec_type] : 0;
}

static uint32_t crc(const void *p, size_t n)
{
	return (uint32_t)crc32(0L, p, (uInt)n);
}

/* ---------------------------------------------------------------- I/O -- */

/* Writes all n bytes: retries partial writes and EINTR, waits on EAGAIN
 * (stdout may be a non-blocking pipe). */
static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				struct pollfd pfd = { .fd = fd, .events = POLLOUT };

				if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
					return -errno;
				continue;
			}
			return -errno;
		}
		if (w == 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads up to n bytes, fewer only at end of input. *got = bytes read. */
static int read_full(int fd, void *buf, size_t n, size_t *got)
{
	char *p = buf;

	*got = 0;
	while (*got < n) {
		ssize_t r = read(fd, p + *got, n - *got);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				struct pollfd pfd = { .fd = fd, .events = POLLIN };

				if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
					return -errno;
				continue;
			}
			return -errno;
		}
		if (r == 0)
			break;
		*got += (size_t)r;
	}
	return 0;
}

/* Bytes between the current position and the end of input: seeks when it
 * can, reads and discards otherwise (pipes). Best effort. */
static uint64_t rest_of_input(int fd)
{
	struct stat st;
	char buf[65536];
	uint64_t n = 0;
	size_t got;

	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		off_t cur = lseek(fd, 0, SEEK_CUR);

		if (cur >= 0 && st.st_size >= cur)
			return (uint64_t)(st.st_size - cur);
	}
	do {
		if (read_full(fd, buf, sizeof(buf), &got))
			break;
		n += got;
	} while (got == sizeof(buf));
	return n;
}

/* ------------------------------------------------------------- writer -- */

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
	struct wstream s[NSTREAMS];
	unsigned char *out;      /* chunk header + stored payload */
	size_t out_cap;
	uint32_t seq;
	uint64_t bytes, records;
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

	size = HDR_MIN + len[0] + len[1] + len[2];
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
	off = HDR_FIXED;
	for (i = 0; i < 3; i++) {
		put_u16(h + off, (uint16_t)len[i]);
		memcpy(h + off + 2, str[i], len[i]);
		off += 2 + len[i];
	}
	put_u32(h + off, crc(h, off));
	err = write_all(w->fd, h, size);
	free(h);
	if (!err)
		w->bytes += size;
	return err;
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
	w->chunk_max = opts->chunk_max ? opts->chunk_max : 1u << 20;
	if (strcmp(path, "-") == 0) {
		w->fd = STDOUT_FILENO;
	} else {
		w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (w->fd < 0) {
			err = -errno;
			free(w);
			return err;
		}
		w->own_fd = true;
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

/* Writes stream s's buffer as one chunk with a single write(2) when the
 * kernel takes it whole. */
static int flush_stream(struct tb_writer *w, int stream)
{
	struct wstream *s = &w->s[stream];
	struct tb_chunk_hdr ch = {
		.magic = TB_CHUNK_MAGIC,
		.stream = (uint16_t)stream,
		.raw_len = (uint32_t)s->len,
		.first_ts = s->first_ts,
		.last_ts = s->last_ts,
		.nrec = s->nrec,
		.seq = w->seq,
	};
	size_t need, stored;
	int err;

	if (w->err)
		return w->err;
	if (!s->len)
		return 0;
	need = sizeof(ch) + (w->zlevel ? compressBound((uLong)s->len) : s->len);
	if (need > w->out_cap) {
		unsigned char *p = realloc(w->out, need);

		if (!p)
			return -ENOMEM;
		w->out = p;
		w->out_cap = need;
	}
	stored = s->len;
	if (w->zlevel) {
		uLongf dlen = (uLongf)(w->out_cap - sizeof(ch));

		if (compress2(w->out + sizeof(ch), &dlen, s->buf, (uLong)s->len,
			      w->zlevel) == Z_OK && dlen < s->len) {
			ch.flags = TB_CHUNK_ZLIB;
			stored = dlen;
		}
	}
	if (!(ch.flags & TB_CHUNK_ZLIB))   /* store raw: zlib off or no gain */
		memcpy(w->out + sizeof(ch), s->buf, s->len);
	ch.stored_len = (uint32_t)stored;
	ch.payload_crc = crc(w->out + sizeof(ch), stored);
	ch.hdr_crc = crc(&ch, offsetof(struct tb_chunk_hdr, hdr_crc));
	memcpy(w->out, &ch, sizeof(ch));

	err = write_all(w->fd, w->out, sizeof(ch) + stored);
	if (err) {
		w->err = err;   /* part of a chunk may be out: nothing may follow */
		return err;
	}
	w->bytes += sizeof(ch) + stored;
	w->seq++;
	s->len = 0;
	s->nrec = 0;
	return 0;
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
		err = flush_stream(w, stream);
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
	memcpy(s->buf + s->len, rec, size);
	if (!s->nrec || rec->ts < s->first_ts)
		s->first_ts = rec->ts;
	if (!s->nrec || rec->ts > s->last_ts)
		s->last_ts = rec->ts;
	s->len += size;
	s->nrec++;
	w->records++;
	if (s->len >= w->chunk_max)
		return flush_stream(w, stream);
	return 0;
}

int tb_writer_flush(struct tb_writer *w)
{
	/* Descriptors and process changes first: a reader that streams in
	 * file order then knows a site before the events that use it. */
	static const int order[] = {
		TB_STREAM_SITE, TB_STREAM_PROC, TB_STREAM_SCHED,
		TB_STREAM_USER, TB_STREAM_STATS,
	};
	size_t i;
	int err;

	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		err = flush_stream(w, order[i]);
		if (err)
			return err;
	}
	return 0;
}

int tb_writer_close(struct tb_writer *w)
{
	int err, i;

	if (!w)
		return 0;
	err = tb_writer_flush(w);
	if (w->own_fd && close(w->fd) && !err)
		err = -errno;
	for (i = 0; i < NSTREAMS; i++)
		free(w->s[i].buf);
	free(w->out);
	free(w);
	return err;
}

uint64_t tb_writer_bytes(const struct tb_writer *w)
{
	return w->bytes;
}

uint64_t tb_writer_records(const struct tb_writer *w)
{
	return w->records;
}

/* ------------------------------------------------------------- reader -- */

struct tb_reader {
	int fd;
	bool own_fd;
	struct tb_file_info info;
	uint32_t mask;
	uint64_t off;             /* input bytes consumed so far */
	uint64_t chunk_off;       /* where the current chunk started */
	uint32_t seq;             /* next expected chunk number */
	unsigned char *sbuf;      /* stored payload */
	size_t scap;
	unsigned char *rbuf;      /* decompressed payload */
	size_t rcap;
	const unsigned char *recs;
	size_t rlen, rpos;
	bool done;
	uint64_t tail;
	const char *reason;
};

static int grow(unsigned char **buf, size_t *cap, size_t need)
{
	unsigned char *p;

	if (need <= *cap)
		return 0;
	p = realloc(*buf, need);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = need;
	return 0;
}

static uint16_t get_u16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t get_u32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get_u64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static int read_header(struct tb_reader *r)
{
	unsigned char fixed[16], *h;
	size_t got, off, end;
	char *dst[3] = { r->info.hostname, r->info.kernel, r->info.cmdline };
	size_t dsz[3] = { sizeof(r->info.hostname), sizeof(r->info.kernel),
			  sizeof(r->info.cmdline) };
	uint32_t size;
	int err, i;

	err = read_full(r->fd, fixed, 8, &got);
	if (err)
		return err;
	if (got < 8 || memcmp(fixed, TB_FILE_MAGIC, 8))
		return -EINVAL;
	err = read_full(r->fd, fixed + 8, 8, &got);
	if (err)
		return err;
	if (got < 8)
		return -EBADMSG;
	r->info.major = get_u16(fixed + 8);
	r->info.minor = get_u16(fixed + 10);
	/* A newer major may change everything after this field. */
	if (r->info.major > TB_FORMAT_MAJOR)
		return -EPROTONOSUPPORT;
	if (r->info.major == 0)
		return -EBADMSG;
	size = get_u32(fixed + 12);
	if (size < HDR_MIN || size > TB_HDR_MAX_BYTES)
		return -EBADMSG;
	h = malloc(size);
	if (!h)
		return -ENOMEM;
	memcpy(h, fixed, 16);
	err = read_full(r->fd, h + 16, size - 16, &got);
	if (err)
		goto out;
	err = -EBADMSG;
	if (got < size - 16 || get_u32(h + size - 4) != crc(h, size - 4))
		goto out;
	r->info.flags = get_u32(h + 16);
	r->info.clock_id = get_u32(h + 20);
	r->info.realtime_offset_ns = (int64_t)get_u64(h + 24);
	r->info.start_ts = get_u64(h + 32);
	/* Strings, then (from a newer minor) fields this reader skips. */
	off = HDR_FIXED;
	end = size - 4;
	for (i = 0; i < 3; i++) {
		size_t len, n;

		if (off + 2 > end)
			goto out;
		len = get_u16(h + off);
		off += 2;
		if (len > end - off)
			goto out;
		n = len < dsz[i] - 1 ? len : dsz[i] - 1;
		memcpy(dst[i], h + off, n);
		dst[i][n] = '\0';
		off += len;
	}
	r->off = size;
	err = 0;
out:
	free(h);
	return err;
}

int tb_reader_open(struct tb_reader **rp, const char *path)
{
	struct tb_reader *r;
	int err;

	*rp = NULL;
	if (!path)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->mask = ~0u;
	if (strcmp(path, "-") == 0) {
		r->fd = STDIN_FILENO;
	} else {
		r->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (r->fd < 0) {
			err = -errno;
			free(r);
			return err;
		}
		r->own_fd = true;
	}
	err = read_header(r);
	if (err) {
		tb_reader_close(r);
		return err;
	}
	*rp = r;
	return 0;
}

const struct tb_file_info *tb_reader_info(const struct tb_reader *r)
{
	return &r->info;
}

void tb_reader_set_streams(struct tb_reader *r, uint32_t mask)
{
	r->mask = mask;
}

/* The readable data ends at the chunk that started at r->chunk_off. */
static int stop(struct tb_reader *r, const char *reason)
{
	r->done = true;
	r->reason = reason;
	r->tail = r->off - r->chunk_off + rest_of_input(r->fd);
	r->recs = NULL;
	r->rlen = r->rpos = 0;
	return 0;
}

static bool want_chunk(const struct tb_reader *r, const struct tb_chunk_hdr *ch)
{
	if (ch->stream == 0 || ch->stream >= NSTREAMS)
		return false;   /* unknown stream of a known major: skipped */
	if (ch->flags & ~TB_CHUNK_ZLIB)
		return false;   /* an encoding from a newer minor: skipped */
	return ch->stream < 32 && (r->mask & (1u << ch->stream));
}

/* Reads the next chunk. 1: records are ready (maybe none), 0: no more
 * data (r->done), -errno: I/O error. */
static int next_chunk(struct tb_reader *r)
{
	struct tb_chunk_hdr ch;
	size_t got;
	int err;

	r->chunk_off = r->off;
	err = read_full(r->fd, &ch, sizeof(ch), &got);
	if (err)
		return err;
	r->off += got;
	if (got == 0) {
		r->done = true;
		return 0;
	}
	if (got < sizeof(ch))
		return stop(r, "short chunk header");
	if (ch.magic != TB_CHUNK_MAGIC)
		return stop(r, "bad chunk magic");
	if (ch.hdr_crc != crc(&ch, offsetof(struct tb_chunk_hdr, hdr_crc)))
		return stop(r, "chunk header CRC mismatch");
	if (ch.seq != r->seq)
		return stop(r, "chunk out of sequence");
	if (ch.raw_len > TB_CHUNK_MAX_BYTES || ch.stored_len > TB_CHUNK_MAX_BYTES)
		return stop(r, "chunk too large");
	if (!(ch.flags & TB_CHUNK_ZLIB) && ch.raw_len != ch.stored_len)
		return stop(r, "chunk length mismatch");

	/* Even a chunk we skip is read and checked: its bytes are consumed
	 * anyway (no seeking on pipes), and a corrupt one ends the data the
	 * same way whatever the stream mask. */
	err = grow(&r->sbuf, &r->scap, ch.stored_len ? ch.stored_len : 1);
	if (err)
		return err;
	err = read_full(r->fd, r->sbuf, ch.stored_len, &got);
	if (err)
		return err;
	r->off += got;
	if (got < ch.stored_len)
		return stop(r, "truncated payload");
	if (ch.payload_crc != crc(r->sbuf, ch.stored_len))
		return stop(r, "payload CRC mismatch");
	r->seq++;

	r->recs = NULL;
	r->rlen = r->rpos = 0;
	if (!want_chunk(r, &ch))
		return 1;
	if (ch.flags & TB_CHUNK_ZLIB) {
		uLongf dlen = ch.raw_len;

		err = grow(&r->rbuf, &r->rcap, ch.raw_len ? ch.raw_len : 1);
		if (err)
			return err;
		if (uncompress(r->rbuf, &dlen, r->sbuf, ch.stored_len) != Z_OK ||
		    dlen != ch.raw_len)
			return stop(r, "decompression failed");
		r->recs = r->rbuf;
	} else {
		r->recs = r->sbuf;
	}
	r->rlen = ch.raw_len;
	return 1;
}

int tb_reader_next(struct tb_reader *r, const struct tb_rec_hdr **rec)
{
	int err;

	*rec = NULL;
	while (!r->done) {
		while (r->rpos < r->rlen) {
			const struct tb_rec_hdr *h;
			size_t left = r->rlen - r->rpos, size;

			if (left < sizeof(*h))
				return stop(r, "bad record");
			/* malloc'd buffer + 8-aligned sizes: h is aligned */
			h = (const void *)(r->recs + r->rpos);
			size = h->size;
			if (size < sizeof(*h) || size % 8 || size > left)
				return stop(r, "bad record");
			r->rpos += size;
			/* Unknown types (a newer minor) and records shorter than
			 * their type's fixed part are skipped. */
			if (size < tb_rec_min_size(h->type) || !tb_rec_min_size(h->type))
				continue;
			*rec = h;
			return 1;
		}
		err = next_chunk(r);
		if (err < 0)
			return err;
	}
	return 0;
}

uint64_t tb_reader_tail_bytes(const struct tb_reader *r)
{
	return r->tail;
}

const char *tb_reader_tail_reason(const struct tb_reader *r)
{
	return r->reason;
}

void tb_reader_close(struct tb_reader *r)
{
	if (!r)
		return;
	if (r->own_fd)
		close(r->fd);
	free(r->sbuf);
	free(r->rbuf);
	free(r);
}
