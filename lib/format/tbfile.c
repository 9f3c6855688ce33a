// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tbfile.c - the tracebpf trace file: the reader, and what the writer
 * (lib/format/tbwriter.c) shares with it (docs/format.md).
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
/* C11 threads: <pthread.h> would find user/sched.h for <sched.h> */
#include <threads.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "format/chunk.h"
#include "format/tbfile.h"
#include "util/thread.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the trace file is little endian and this code stores native layouts"
#endif

/* File header: fixed part, then three u16-prefixed strings, then a crc32. */
#define HDR_FIXED      TB_HDR_FIXED
#define HDR_MIN        TB_HDR_MIN
#define NSTREAMS       TB_NRSTREAMS

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
	[TB_REC_CTL]    = sizeof(struct tb_rec_ctl),
	[TB_REC_GAP]    = TB_REC_GAP_SIZE_2_4,   /* depths since 2.11 */
	[TB_REC_CATS]   = sizeof(struct tb_rec_cats),
	[TB_REC_RSS]    = sizeof(struct tb_rec_rss),
	[TB_REC_FILTER] = sizeof(struct tb_rec_filter),
	[TB_REC_USDT]   = sizeof(struct tb_rec_usdt),
	[TB_REC_USDT_PROBE] = sizeof(struct tb_rec_usdt_probe),
};

int tb_stream_of(uint16_t rec_type)
{
	switch (rec_type) {
	case TB_REC_EVENT:
	case TB_REC_EVENT_ID:
	case TB_REC_USDT:
		return TB_STREAM_USER;
	case TB_REC_SITE:
	case TB_REC_USDT_PROBE:
		return TB_STREAM_SITE;
	case TB_REC_FORK:
	case TB_REC_EXEC:
	case TB_REC_EXIT:
	case TB_REC_COMM:
	case TB_REC_CMDLINE:
		return TB_STREAM_PROC;
	case TB_REC_STATS:
	case TB_REC_CTL:
	case TB_REC_GAP:
	case TB_REC_CATS:
	case TB_REC_FILTER:
		return TB_STREAM_STATS;
	case TB_REC_SWITCH:
	case TB_REC_WAKE:
	case TB_REC_KTASK:
	case TB_REC_CPU:
	case TB_REC_TP:
	case TB_REC_FORMAT:
	case TB_REC_RSS:
		return TB_STREAM_SCHED;
	default:
		return -EINVAL;
	}
}

size_t tb_rec_min_size(uint16_t rec_type)
{
	return rec_type < TB_REC_TYPE_MAX ? min_size[rec_type] : 0;
}

uint32_t tb_stats_ncpus(const struct tb_rec_stats *st)
{
	size_t room = st->hdr.size > sizeof(*st) ? (st->hdr.size - sizeof(*st)) / 8 : 0;

	return st->ncpus < room ? st->ncpus : (uint32_t)room;
}

uint64_t tb_stats_drop(const struct tb_rec_stats *st, uint32_t cpu)
{
	uint64_t d = 0;

	if (cpu < tb_stats_ncpus(st))
		memcpy(&d, (const char *)(st + 1) + 8 * (size_t)cpu, 8);
	return d;
}

uint64_t tb_stats_lost_procs(const struct tb_rec_stats *st)
{
	size_t off = sizeof(*st) + 8 * (size_t)st->ncpus;
	uint64_t n = 0;

	if (off + 8 <= st->hdr.size)
		memcpy(&n, (const char *)st + off, 8);
	return n;
}

bool tb_gap_depth(const struct tb_rec_gap *g, uint32_t i, struct tb_gap_depth *d)
{
	if (g->hdr.size < sizeof(*g) || g->kind != TB_GAP_APP || i >= g->ntids ||
	    i >= TB_GAP_TIDS || !(g->depth_known & (1u << i)))
		return false;
	*d = g->depth[i];
	return true;
}

uint32_t tb_crc32(const void *p, size_t n)
{
	return (uint32_t)crc32(0L, p, (uInt)n);
}

static uint32_t crc(const void *p, size_t n)
{
	return tb_crc32(p, n);
}

/* ---------------------------------------------------------------- I/O -- */

/* A pipe between the recorder and a reader (record -o - | convert -)
 * holds 64 KiB by default: a few milliseconds of events, after which the
 * recorder waits in write() and its ring buffers fill. Either end makes it
 * as large as an unprivileged process may (fs/pipe-max-size, 1 MiB by
 * default: about a second of events). Best effort: not a pipe, or a
 * kernel that says no, leaves it as it is. */
void tb_grow_pipe(int fd)
{
	struct stat st;
	long max = 1 << 20;
	FILE *f;

	if (fstat(fd, &st) || !S_ISFIFO(st.st_mode))
		return;
	f = fopen("/proc/sys/fs/pipe-max-size", "re");
	if (f) {
		if (fscanf(f, "%ld", &max) != 1 || max <= 0)
			max = 1 << 20;
		fclose(f);
	}
	if (fcntl(fd, F_GETPIPE_SZ) < max)
		fcntl(fd, F_SETPIPE_SZ, (int)max);
}

/* Reads up to n bytes, fewer only at end of input. *got = bytes read. */
/* n bytes of buf moved through fd, read into it or written from it: EINTR
 * is retried and a descriptor that would block is waited for (poll), so
 * that a pipe or socket moves all of it. *done: the bytes moved; a read
 * stops short only at the end of the file, a write that moves nothing is
 * -EIO. 0 or a negative errno. The one loop of the reader and the writer. */
int tb_fd_io(int fd, void *buf, size_t n, size_t *done, bool writing)
{
	char *p = buf;

	*done = 0;
	while (*done < n) {
		ssize_t k = writing ? write(fd, p + *done, n - *done) :
				      read(fd, p + *done, n - *done);

		if (k < 0) {
			struct pollfd pfd = { .fd = fd, .events = writing ? POLLOUT : POLLIN };

			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return -errno;
			if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		if (k == 0)
			return writing ? -EIO : 0;
		*done += (size_t)k;
	}
	return 0;
}

static int read_full(int fd, void *buf, size_t n, size_t *got)
{
	return tb_fd_io(fd, buf, n, got, false);
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

/* Grows *buf to at least need bytes. */
/* ------------------------------------------------------------- reader -- */

/* A chunk to read in time order: by first_ts, then file order; i is its
 * index entry. */
struct by_time {
	uint64_t first_ts;
	uint32_t seq, i;
};

/* A chunk read in time order (load_chunk), by the reader or ahead of it. */
struct loaded {
	struct tb_chunk_hdr ch;
	uint64_t got;             /* its bytes read */
	int err;                  /* -errno: reading or decoding failed */
	const char *reason;       /* the data stops at this chunk */
	bool eof;                 /* the input ends before it */
	bool passed;              /* its header and payload are valid */
	bool wanted;              /* and its records are read (want_chunk) */
	const unsigned char *recs;
	size_t rlen;
	struct tb_chunk_dec d;
};

/* tb_reader_decode_ahead: a thread loads the chunks of the time order
 * into the slots, NAHEAD positions at most past the reader's. */
#define NAHEAD 3
struct ahead {
	thrd_t thread;
	mtx_t lock;
	cnd_t cond;               /* a slot was loaded or released, or quit */
	const struct tb_reader *r;
	size_t loaded;            /* positions below are in their slots */
	size_t released;          /* positions below the reader is done with */
	bool quit;                /* the reader's: stop */
	bool ended;               /* the thread's: it loads no more */
	struct loaded slot[NAHEAD];   /* position p in slot[p % NAHEAD] */
};

struct tb_reader {
	int fd;
	bool own_fd;
	struct tb_file_info info;
	uint32_t mask;
	uint64_t off;             /* input bytes consumed so far */
	uint64_t chunk_off;       /* where the current chunk started */
	uint32_t seq;             /* next expected chunk number */
	struct loaded ld;         /* the chunk read (its buffers in file order) */
	const unsigned char *recs;
	size_t rlen, rpos;
	bool done;
	uint64_t tail;
	uint64_t input_end;       /* when stopped at a tail: the input's size */
	const char *reason;
	/* following a file being written */
	const volatile int *stop;
	bool follow;
	unsigned retries;         /* at a corrupt last chunk */
	bool writer_gone;         /* nobody holds the writer's lock any more */
	bool finished;            /* the index chunk was read */
	uint64_t rounds;
	bool round_pending;       /* a ROUND_END chunk whose records are out */
	/* 2.0 without a usable index: the records of a round are held until
	 * its ROUND_END chunk is read, and dropped if it never is (a recorder
	 * killed between the chunks of one flush), so a reader never sees a
	 * round in part: no per-thread gap. */
	bool hold;
	unsigned char *pbuf, *qbuf;  /* held round; released one (recs) */
	size_t plen, pcap, qcap;
	uint64_t pnrec;           /* records held */
	bool pend_any;            /* a data chunk of the open round was read */
	uint64_t pend_off;        /* where that round's first chunk starts */
	uint64_t discarded;       /* records of an incomplete last round */
	uint64_t discarded_bytes; /* its chunks (also in tail) */
	uint64_t bad_off;         /* a chunk with a bad record: stop there */
	bool bad_pending;         /* after handing out what precedes it */
	struct tb_stream_stats st[TB_NSTREAMS];
	/* seeking through the index of a finished file */
	bool use_index, index_tried;
	struct tb_index_entry *idx;
	size_t nidx, ipos;
	/* time order (tb_reader_time_order): the wanted chunks with records,
	 * by (first_ts, seq); the range of the one being read */
	bool time_wanted, by_time;
	struct by_time *order;
	size_t norder;
	uint64_t chunk_low, chunk_high, last_pos;
	uint64_t next_low;        /* the next chunk's first_ts (or ~0) */
	uint64_t low;             /* tb_reader_time_pos's */
	const uint64_t *smin;     /* the chunk's tb_chunk_suffix_min */
	size_t nth;               /* the next record's index in the chunk */
	bool ahead_wanted;        /* tb_reader_decode_ahead */
	struct ahead *ahead;      /* its thread, once started */
};

static uint16_t get_u16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t get_u32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get_u64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* read_full that gives up on EINTR when the reader is told to stop: a
 * follower blocked on a pipe or socket ends on Ctrl-C. */
static int rd(struct tb_reader *r, void *buf, size_t n, size_t *got)
{
	char *p = buf;

	*got = 0;
	while (*got < n) {
		ssize_t k = read(r->fd, p + *got, n - *got);

		if (k < 0) {
			if (errno == EINTR) {
				if (r->stop && *r->stop)
					break;
				continue;
			}
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				struct pollfd pfd = { .fd = r->fd, .events = POLLIN };

				if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
					return -errno;
				continue;
			}
			return -errno;
		}
		if (k == 0)
			break;
		*got += (size_t)k;
	}
	return 0;
}

static int read_header(struct tb_reader *r)
{
	unsigned char fixed[16], *h;
	size_t got, off, end;
	char *dst[3] = { r->info.hostname, r->info.kernel, r->info.cmdline };
	size_t dsz[3] = { sizeof(r->info.hostname), sizeof(r->info.kernel),
			  sizeof(r->info.cmdline) };
	uint32_t size;
	int err, i;

	err = rd(r, fixed, 8, &got);
	if (err)
		return err;
	if (got < 8 || memcmp(fixed, TB_FILE_MAGIC, 8))
		return -EINVAL;
	err = rd(r, fixed + 8, 8, &got);
	if (err)
		return err;
	if (got < 8)
		return -EBADMSG;
	r->info.major = get_u16(fixed + 8);
	r->info.minor = get_u16(fixed + 10);
	/* A newer major may change everything after this field. */
	if (r->info.major > TB_FORMAT_MAJOR)
		return -EPROTONOSUPPORT;
	if (r->info.major < TB_FORMAT_MAJOR_MIN)
		return -EBADMSG;
	size = get_u32(fixed + 12);
	if (size < HDR_MIN || size > TB_HDR_MAX_BYTES)
		return -EBADMSG;
	h = malloc(size);
	if (!h)
		return -ENOMEM;
	memcpy(h, fixed, 16);
	err = rd(r, h + 16, size - 16, &got);
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
	r->hold = r->info.major >= 2;
	err = 0;
out:
	free(h);
	return err;
}

int tb_reader_open_fd(struct tb_reader **rp, int fd, int own)
{
	struct tb_reader *r;
	int err;

	*rp = NULL;
	r = calloc(1, sizeof(*r));
	if (!r) {
		if (own)
			close(fd);
		return -ENOMEM;
	}
	r->mask = ~0u;
	r->use_index = true;
	r->fd = fd;
	r->own_fd = own;
	err = read_header(r);
	if (err) {
		tb_reader_close(r);
		return err;
	}
	*rp = r;
	return 0;
}

static int connect_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int tb_reader_connect(struct tb_reader **rp, const char *path)
{
	int fd = connect_unix(path);

	return fd < 0 ? fd : tb_reader_open_fd(rp, fd, 1);
}

int tb_reader_open(struct tb_reader **rp, const char *path)
{
	int fd;

	*rp = NULL;
	if (!path)
		return -EINVAL;
	if (strcmp(path, "-") == 0) {
		tb_grow_pipe(STDIN_FILENO);
		return tb_reader_open_fd(rp, STDIN_FILENO, 0);
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return tb_reader_open_fd(rp, fd, 1);
}

const struct tb_file_info *tb_reader_info(const struct tb_reader *r)
{
	return &r->info;
}

void tb_reader_set_streams(struct tb_reader *r, uint32_t mask)
{
	r->mask = mask;
}

void tb_reader_set_follow(struct tb_reader *r, const volatile int *stop)
{
	r->follow = true;
	r->stop = stop;
}

void tb_reader_use_index(struct tb_reader *r, int use)
{
	r->use_index = use;
}

void tb_reader_time_order(struct tb_reader *r)
{
	r->time_wanted = true;
}

void tb_reader_decode_ahead(struct tb_reader *r)
{
	r->ahead_wanted = true;
}

int tb_reader_time_pos(const struct tb_reader *r, uint64_t *low, uint64_t *pos)
{
	if (!r->by_time)
		return 0;
	*low = r->low;
	*pos = r->last_pos;
	return 1;
}

uint64_t tb_reader_rounds(const struct tb_reader *r)
{
	return r->rounds;
}

int tb_reader_finished(const struct tb_reader *r)
{
	return r->finished;
}

const struct tb_stream_stats *tb_reader_stream_stats(const struct tb_reader *r,
						     unsigned stream)
{
	static const struct tb_stream_stats none;

	return stream < TB_NSTREAMS ? &r->st[stream] : &none;
}

uint64_t tb_reader_offset(const struct tb_reader *r)
{
	return r->off;
}

uint64_t tb_reader_input_bytes(const struct tb_reader *r)
{
	return r->input_end > r->off ? r->input_end : r->off;
}

static bool seekable(const struct tb_reader *r)
{
	struct stat st;

	return fstat(r->fd, &st) == 0 && S_ISREG(st.st_mode);
}

/* The end of the data: a round whose ROUND_END chunk was never read is
 * dropped, and its chunks count as tail bytes. */
static void drop_open_round(struct tb_reader *r)
{
	if (!r->hold || !r->pend_any)
		return;
	r->discarded += r->pnrec;
	r->discarded_bytes += r->chunk_off - r->pend_off;
	r->tail += r->chunk_off - r->pend_off;
	if (!r->reason && r->chunk_off > r->pend_off)
		r->reason = "incomplete last round (recorder stopped mid-flush)";
	r->plen = 0;
	r->pnrec = 0;
	r->pend_any = false;
}

/* The readable data ends at the chunk that started at r->chunk_off. */
static int stop(struct tb_reader *r, const char *reason)
{
	/* time order reads with pread: the tail is counted from where reading
	 * in file order would have left the input */
	if (r->by_time)
		lseek(r->fd, (off_t)r->off, SEEK_SET);
	r->done = true;
	r->reason = reason;
	r->tail = r->off - r->chunk_off + rest_of_input(r->fd);
	r->input_end = r->chunk_off + r->tail;   /* the tail includes what was read of it */
	r->recs = NULL;
	r->rlen = r->rpos = 0;
	drop_open_round(r);
	return 0;
}

/* Holding: takes a wanted chunk's records (checked whole), then hands out
 * the round at its ROUND_END chunk. 1 as next_chunk. */
static int hold_chunk(struct tb_reader *r, const struct tb_chunk_hdr *ch, bool wanted)
{
	size_t pos = 0;
	int err;

	if (!r->pend_any && ch->stream != TB_STREAM_INDEX) {
		r->pend_any = true;
		r->pend_off = r->chunk_off;
	}
	if (wanted && r->rlen) {
		while (pos < r->rlen) {
			const struct tb_rec_hdr *h = (const void *)(r->recs + pos);

			if (r->rlen - pos < sizeof(*h) || h->size < sizeof(*h) ||
			    h->size % 8 || h->size > r->rlen - pos) {
				/* corrupt (not torn: the CRC matched): the
				 * records before it are handed out, then the
				 * data ends at this chunk, as without holding */
				r->bad_pending = true;
				r->bad_off = r->chunk_off;
				break;
			}
			pos += h->size;
			r->pnrec++;
		}
		err = tb_grow_buf(&r->pbuf, &r->pcap, r->plen + pos);
		if (err)
			return err;
		memcpy(r->pbuf + r->plen, r->recs, pos);
		r->plen += pos;
	}
	r->recs = NULL;
	r->rlen = r->rpos = 0;
	/* the index is written after the last flush: what precedes is whole */
	if (ch->flags & TB_CHUNK_ROUND_END || ch->stream == TB_STREAM_INDEX ||
	    r->bad_pending) {
		unsigned char *t = r->qbuf;
		size_t tcap = r->qcap;

		r->qbuf = r->pbuf;
		r->qcap = r->pcap;
		r->recs = r->qbuf;
		r->rlen = r->plen;
		r->pbuf = t;
		r->pcap = tcap;
		r->plen = 0;
		r->pnrec = 0;
		r->pend_any = false;
	}
	return 1;
}

/* Following: the chunk at chunk_off is not (yet) whole. Returns 1 to read
 * it again after a pause, 0 to stop there for good. */
static int wait_more(struct tb_reader *r, bool corrupt)
{
	const struct timespec pause = { 0, 20 * 1000 * 1000 };

	if (!r->follow || r->finished || (r->stop && *r->stop) || !seekable(r))
		return 0;
	/* The writer holds an exclusive flock on the file until it has
	 * finished it (tb_writer_open). A shared one granted now means it is
	 * gone without finishing (killed): read once more what it left, then
	 * stop there instead of waiting for ever. */
	if (r->writer_gone)
		return 0;
	if (!flock(r->fd, LOCK_SH | LOCK_NB)) {
		flock(r->fd, LOCK_UN);
		r->writer_gone = true;
	}
	/* A chunk is written with one write(2), but a reader may see part of
	 * it: a CRC mismatch on the last chunk is retried for a while. */
	if (corrupt && ++r->retries > 100)
		return 0;
	if (lseek(r->fd, (off_t)r->chunk_off, SEEK_SET) < 0)
		return 0;
	r->off = r->chunk_off;
	nanosleep(&pause, NULL);
	return !(r->stop && *r->stop);
}

static bool want_chunk(const struct tb_reader *r, const struct tb_chunk_hdr *ch)
{
	if (ch->stream == 0 || ch->stream >= NSTREAMS)
		return false;   /* unknown stream of a known major: skipped */
	if (ch->flags & ~TB_CHUNK_KNOWN)
		return false;   /* an encoding from a newer minor: skipped */
	if ((ch->flags & TB_CHUNK_KPACK) && !(ch->flags & TB_CHUNK_PACKED))
		return false;   /* no such encoding */
	if (r->info.major < 2 && ch->flags & ~TB_CHUNK_ZLIB)
		return false;   /* 1.x knew no other flag */
	return ch->stream < 32 && (r->mask & (1u << ch->stream));
}

static void count_chunk(struct tb_reader *r, const struct tb_chunk_hdr *ch)
{
	struct tb_stream_stats *s;

	/* A round ends after the records of its last chunk: counted when the
	 * reader moves past that chunk. */
	if (r->info.major >= 2 && ch->flags & TB_CHUNK_ROUND_END) {
		if (r->round_pending)
			r->rounds++;
		r->round_pending = true;
	}
	if (ch->stream >= TB_NSTREAMS)
		return;
	s = &r->st[ch->stream];
	if (ch->nrec && (!s->records || ch->first_ts < s->first_ts))
		s->first_ts = ch->first_ts;
	if (ch->nrec && (!s->records || ch->last_ts > s->last_ts))
		s->last_ts = ch->last_ts;
	s->chunks++;
	s->records += ch->nrec;
	s->stored_bytes += sizeof(*ch) + ch->stored_len;
	s->raw_bytes += ch->raw_len;
}

/* Loads the index of a finished file (seekable input only) and checks
 * every entry. false: no usable index, read in file order. */
static bool load_index(struct tb_reader *r)
{
	struct tb_index_trailer t;
	struct tb_chunk_hdr ch;
	unsigned char *p = NULL;
	struct stat st;
	size_t i, n;
	uint64_t prev_end = r->off;

	if (fstat(r->fd, &st) || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size < r->off + sizeof(ch) + sizeof(t))
		return false;
	if (pread(r->fd, &t, sizeof(t), st.st_size - (off_t)sizeof(t)) != sizeof(t) ||
	    t.magic != TB_INDEX_MAGIC || t.index_off < r->off ||
	    t.index_off > (uint64_t)st.st_size - sizeof(ch) - sizeof(t))
		return false;
	if (pread(r->fd, &ch, sizeof(ch), (off_t)t.index_off) != sizeof(ch) ||
	    ch.magic != TB_CHUNK_MAGIC || ch.stream != TB_STREAM_INDEX || ch.flags ||
	    ch.hdr_crc != crc(&ch, offsetof(struct tb_chunk_hdr, hdr_crc)) ||
	    ch.stored_len != ch.raw_len ||
	    t.index_off + sizeof(ch) + ch.stored_len != (uint64_t)st.st_size ||
	    ch.stored_len != (uint64_t)ch.nrec * sizeof(*r->idx) + sizeof(t))
		return false;
	p = malloc(ch.stored_len);
	if (!p)
		return false;
	if (pread(r->fd, p, ch.stored_len, (off_t)(t.index_off + sizeof(ch))) !=
	    (ssize_t)ch.stored_len || crc(p, ch.stored_len) != ch.payload_crc)
		goto bad;
	n = ch.nrec;
	r->idx = (void *)p;
	for (i = 0; i < n; i++) {
		const struct tb_index_entry *e = &r->idx[i];

		/* chunks back to back, in sequence, before the index */
		if (e->off != prev_end || e->seq != i || e->stored_len > TB_CHUNK_MAX_BYTES)
			goto bad;
		prev_end = e->off + sizeof(ch) + e->stored_len;
	}
	if (prev_end != t.index_off || ch.seq != n)
		goto bad;
	r->nidx = n;
	return true;
bad:
	free(p);
	r->idx = NULL;
	return false;
}


static int cmp_by_time(const void *a, const void *b)
{
	const struct by_time *x = a, *y = b;

	if (x->first_ts != y->first_ts)
		return x->first_ts < y->first_ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The header an index entry stands for (what want_chunk and count_chunk
 * look at). */
static struct tb_chunk_hdr entry_hdr(const struct tb_index_entry *e)
{
	return (struct tb_chunk_hdr){
		.stream = e->stream, .flags = e->flags, .nrec = e->nrec,
		.first_ts = e->first_ts, .last_ts = e->last_ts,
		.stored_len = e->stored_len,
	};
}

/* Time order: the wanted chunks that hold records, by first_ts; the others
 * are counted as passed now. 0 or -ENOMEM. */
static int time_order(struct tb_reader *r)
{
	struct by_time *t = malloc((r->nidx ? r->nidx : 1) * sizeof(*t));

	if (!t)
		return -ENOMEM;
	r->order = t;
	for (size_t i = 0; i < r->nidx; i++) {
		const struct tb_index_entry *e = &r->idx[i];
		struct tb_chunk_hdr ch = entry_hdr(e);

		if (want_chunk(r, &ch) && ch.nrec)
			t[r->norder++] = (struct by_time){ e->first_ts, e->seq, (uint32_t)i };
		else
			count_chunk(r, &ch);
	}
	qsort(t, r->norder, sizeof(*t), cmp_by_time);
	r->by_time = true;
	return 0;
}

/* Time order: moves to the next chunk (read with pread: no seek). */
static int time_skip(struct tb_reader *r)
{
	const struct tb_index_entry *e;

	if (r->ipos == r->norder) {
		r->finished = true;
		r->done = true;
		return 0;
	}
	e = &r->idx[r->order[r->ipos++].i];
	r->off = e->off;
	r->seq = e->seq;
	r->chunk_low = e->first_ts;
	r->chunk_high = e->last_ts;
	r->next_low = r->ipos < r->norder ? r->order[r->ipos].first_ts : UINT64_MAX;
	return 1;
}

/* With an index: skips to the next chunk the mask wants, counting the
 * skipped ones. */
static int index_skip(struct tb_reader *r)
{
	if (r->by_time)
		return time_skip(r);
	while (r->ipos < r->nidx) {
		const struct tb_index_entry *e = &r->idx[r->ipos];
		struct tb_chunk_hdr ch = entry_hdr(e);

		if (want_chunk(r, &ch)) {
			if (lseek(r->fd, (off_t)e->off, SEEK_SET) < 0)
				return -errno;
			r->off = e->off;
			r->seq = e->seq;
			r->ipos++;
			return 1;
		}
		count_chunk(r, &ch);
		r->ipos++;
	}
	/* the rest is the index itself: the file ends cleanly */
	r->finished = true;
	r->done = true;
	return 0;
}

/* Once, before the first chunk: seeks through the index when it can and
 * should. 0 or -ENOMEM. */
static int try_index(struct tb_reader *r)
{
	if (r->index_tried)
		return 0;
	r->index_tried = true;
	if (r->use_index && !r->follow && (r->mask != ~0u || r->time_wanted) &&
	    load_index(r)) {
		r->ipos = 0;
		r->hold = false;   /* finished: every round is whole */
		return r->time_wanted ? time_order(r) : 0;
	}
	r->use_index = false;
	return 0;
}

int tb_reader_time_ordered(struct tb_reader *r)
{
	int err = try_index(r);

	return err ? err : r->by_time;
}

/* What is wrong with a whole chunk header expected as chunk seq, or NULL;
 * *torn: maybe only not yet whole (a follower reads it again). */
static const char *hdr_problem(const struct tb_chunk_hdr *ch, uint32_t seq, bool *torn)
{
	*torn = true;
	if (ch->magic != TB_CHUNK_MAGIC)
		return "bad chunk magic";
	if (ch->hdr_crc != crc(ch, offsetof(struct tb_chunk_hdr, hdr_crc)))
		return "chunk header CRC mismatch";
	*torn = false;
	if (ch->seq != seq)
		return "chunk out of sequence";
	if (ch->raw_len > TB_CHUNK_MAX_BYTES || ch->stored_len > TB_CHUNK_MAX_BYTES)
		return "chunk too large";
	if (!(ch->flags & TB_CHUNK_ZLIB) && ch->raw_len != ch->stored_len)
		return "chunk length mismatch";
	return NULL;
}

/* A valid chunk (header and payload) is behind the reader. */
static void pass_chunk(struct tb_reader *r, const struct tb_chunk_hdr *ch)
{
	r->seq++;
	r->retries = 0;
	if (ch->stream == TB_STREAM_INDEX && r->info.major >= 2)
		r->finished = true;   /* written last, at close */
	count_chunk(r, ch);
}

/* Reads the next chunk in file order. 1: records are ready (maybe none),
 * 0: no more data (r->done), -errno: I/O error. */
static int next_in_file(struct tb_reader *r)
{
	struct tb_chunk_hdr ch;
	const char *reason;
	size_t got;
	bool torn;
	int err;

again:
	r->chunk_off = r->off;
	err = rd(r, &ch, sizeof(ch), &got);
	if (err)
		return err;
	r->off += got;
	if (got == 0) {
		if (wait_more(r, false))
			goto again;
		r->done = true;
		drop_open_round(r);
		return 0;
	}
	if (got < sizeof(ch)) {
		if (wait_more(r, false))
			goto again;
		return stop(r, "short chunk header");
	}
	reason = hdr_problem(&ch, r->seq, &torn);
	if (reason) {
		if (torn && wait_more(r, true))
			goto again;
		return stop(r, reason);
	}

	/* Even a chunk we skip is read and checked: its bytes are consumed
	 * anyway (no seeking on pipes), and a corrupt one ends the data the
	 * same way whatever the stream mask. */
	err = tb_chunk_room(&r->ld.d, &ch);
	if (err)
		return err;
	err = rd(r, r->ld.d.sbuf, ch.stored_len, &got);
	if (err)
		return err;
	r->off += got;
	if (got < ch.stored_len) {
		if (wait_more(r, false))
			goto again;
		return stop(r, "truncated payload");
	}
	if (ch.payload_crc != crc(r->ld.d.sbuf, ch.stored_len)) {
		if (wait_more(r, true))
			goto again;
		return stop(r, "payload CRC mismatch");
	}
	pass_chunk(r, &ch);

	r->recs = NULL;
	r->rlen = r->rpos = 0;
	if (!want_chunk(r, &ch))
		return r->hold ? hold_chunk(r, &ch, false) : 1;
	err = tb_chunk_decode(&r->ld.d, &ch, &r->recs, &r->rlen, &reason);
	if (err) {
		r->recs = NULL;
		r->rlen = 0;
		return err < 0 ? err : stop(r, reason);
	}
	return r->hold ? hold_chunk(r, &ch, true) : 1;
}

static int pread_full(int fd, void *buf, size_t n, uint64_t off, size_t *got)
{
	*got = 0;
	while (*got < n) {
		ssize_t k = pread(fd, (char *)buf + *got, n - *got, (off_t)(off + *got));

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		*got += (size_t)k;
	}
	return 0;
}

/* Time order: reads, checks and decodes the chunk of index entry e into
 * l, as next_in_file would, reading nothing but r's file, index and mask
 * (so the ahead thread can). */
static void load_chunk(const struct tb_reader *r, const struct tb_index_entry *e,
		       struct loaded *l)
{
	size_t got;
	bool torn;
	int err;

	*l = (struct loaded){ .d = l->d };
	l->err = pread_full(r->fd, &l->ch, sizeof(l->ch), e->off, &got);
	l->got = got;
	l->eof = !l->err && !got;
	if (l->err || l->eof)
		return;
	l->reason = got < sizeof(l->ch) ? "short chunk header" : hdr_problem(&l->ch, e->seq, &torn);
	if (l->reason)
		return;
	l->err = tb_chunk_room(&l->d, &l->ch);
	if (!l->err)
		l->err = pread_full(r->fd, l->d.sbuf, l->ch.stored_len, e->off + l->got, &got);
	if (l->err)
		return;
	l->got += got;
	if (got < l->ch.stored_len)
		l->reason = "truncated payload";
	else if (l->ch.payload_crc != crc(l->d.sbuf, l->ch.stored_len))
		l->reason = "payload CRC mismatch";
	l->passed = !l->reason;
	l->wanted = l->passed && want_chunk(r, &l->ch);
	if (!l->wanted)
		return;
	err = tb_chunk_decode(&l->d, &l->ch, &l->recs, &l->rlen, &l->reason);
	if (!err)
		err = tb_chunk_suffix_min(&l->d, l->recs, l->rlen);
	if (err < 0)
		l->err = err;
}

/* The reader moves onto the chunk in l. As next_chunk. */
static int take_loaded(struct tb_reader *r, const struct loaded *l)
{
	r->chunk_off = r->off;
	r->off += l->got;
	r->recs = NULL;
	r->rlen = r->rpos = 0;
	if (l->eof) {
		r->done = true;
		drop_open_round(r);
		return 0;
	}
	if (!l->passed)
		return l->err ? l->err : stop(r, l->reason);
	pass_chunk(r, &l->ch);
	if (!l->wanted)
		return 1;
	if (l->err || l->reason)
		return l->err ? l->err : stop(r, l->reason);
	r->recs = l->recs;
	r->rlen = l->rlen;
	r->smin = l->d.smin;
	r->nth = 0;
	return 1;
}

/* The ahead thread: loads the chunks in time order, until the one the
 * data ends at, or until told to quit. */
static int ahead_run(void *arg)
{
	struct ahead *a = arg;
	const struct tb_reader *r = a->r;
	size_t pos;

	for (pos = 0; pos < r->norder; pos++) {
		struct loaded *l = &a->slot[pos % NAHEAD];
		bool quit;

		mtx_lock(&a->lock);
		while (!a->quit && pos >= a->released + NAHEAD)
			cnd_wait(&a->cond, &a->lock);
		quit = a->quit;
		mtx_unlock(&a->lock);
		if (quit)
			break;
		load_chunk(r, &r->idx[r->order[pos].i], l);
		mtx_lock(&a->lock);
		a->loaded = pos + 1;
		cnd_broadcast(&a->cond);
		mtx_unlock(&a->lock);
		if (l->eof || l->err || l->reason)
			break;   /* the reader stops there */
	}
	mtx_lock(&a->lock);
	a->ended = true;
	cnd_broadcast(&a->cond);
	mtx_unlock(&a->lock);
	return 0;
}

/* Starts the ahead thread; without it (no memory, no thread) the reader
 * loads each chunk itself. */
static void ahead_start(struct tb_reader *r)
{
	struct ahead *a = calloc(1, sizeof(*a));

	r->ahead_wanted = false;
	if (!a)
		return;
	a->r = r;
	if (mtx_init(&a->lock, mtx_plain) != thrd_success)
		goto no_lock;
	if (cnd_init(&a->cond) != thrd_success)
		goto no_cond;
	if (tb_thread_start(&a->thread, ahead_run, a))
		goto no_thread;
	r->ahead = a;
	return;
no_thread:
	cnd_destroy(&a->cond);
no_cond:
	mtx_destroy(&a->lock);
no_lock:
	free(a);
}

/* The chunk at position pos of the time order, once loaded (the ones
 * before it are given back), or NULL if the thread has ended before it
 * (a reader asked on after an error). */
static const struct loaded *ahead_take(struct ahead *a, size_t pos)
{
	bool have;

	mtx_lock(&a->lock);
	a->released = pos;
	cnd_broadcast(&a->cond);
	while (a->loaded <= pos && !a->ended)
		cnd_wait(&a->cond, &a->lock);
	have = a->loaded > pos;
	mtx_unlock(&a->lock);
	return have ? &a->slot[pos % NAHEAD] : NULL;
}

static void ahead_stop(struct ahead *a)
{
	if (!a)
		return;
	mtx_lock(&a->lock);
	a->quit = true;
	cnd_broadcast(&a->cond);
	mtx_unlock(&a->lock);
	thrd_join(a->thread, NULL);
	for (size_t i = 0; i < NAHEAD; i++)
		tb_chunk_dec_free(&a->slot[i].d);
	cnd_destroy(&a->cond);
	mtx_destroy(&a->lock);
	free(a);
}

/* Time order: the chunk time_skip moved to. As next_in_file. */
static int next_in_time(struct tb_reader *r)
{
	const size_t pos = r->ipos - 1;
	const struct loaded *l = NULL;

	if (r->ahead_wanted)
		ahead_start(r);
	if (r->ahead)
		l = ahead_take(r->ahead, pos);
	if (!l) {
		load_chunk(r, &r->idx[r->order[pos].i], &r->ld);
		l = &r->ld;
	}
	return take_loaded(r, l);
}

/* Reads the next chunk. 1: records are ready (maybe none), 0: no more
 * data (r->done), -errno: I/O error. */
static int next_chunk(struct tb_reader *r)
{
	int err;

	if (r->round_pending) {
		r->rounds++;
		r->round_pending = false;
	}
	if (r->bad_pending) {
		r->bad_pending = false;
		r->chunk_off = r->bad_off;
		return stop(r, "bad record");
	}
	err = try_index(r);
	if (err)
		return err;
	if (r->use_index) {
		err = index_skip(r);
		if (err <= 0)
			return err;
		if (r->by_time)
			return next_in_time(r);
	}
	return next_in_file(r);
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
			r->nth++;
			/* Unknown types (a newer minor) and records shorter than
			 * their type's fixed part are skipped. */
			if (size < tb_rec_min_size(h->type) || !tb_rec_min_size(h->type))
				continue;
			if (r->by_time) {
				/* the merge trusts the chunk's range */
				if (h->ts < r->chunk_low || h->ts > r->chunk_high)
					return stop(r, "record outside its chunk's time range");
				/* r->seq moved past the chunk once it was read */
				r->last_pos = (uint64_t)(r->seq - 1) << 32 | (r->rpos - size);
				/* what is to come: the rest of this chunk, then
				 * chunks that start later */
				r->low = r->smin[r->nth] < r->next_low ? r->smin[r->nth]
								      : r->next_low;
			}
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

uint64_t tb_reader_discarded(const struct tb_reader *r, uint64_t *bytes)
{
	if (bytes)
		*bytes = r->discarded_bytes;
	return r->discarded;
}

const char *tb_reader_tail_reason(const struct tb_reader *r)
{
	return r->reason;
}

void tb_reader_close(struct tb_reader *r)
{
	if (!r)
		return;
	ahead_stop(r->ahead);   /* first: the thread reads r->fd */
	if (r->own_fd)
		close(r->fd);
	tb_chunk_dec_free(&r->ld.d);
	free(r->pbuf);
	free(r->qbuf);
	free(r->idx);
	free(r->order);
	free(r);
}
