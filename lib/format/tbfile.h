/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tbfile.h - the tracebpf trace file (.tbt): writer and reader.
 *
 * A reader of the trace file never needs libbpf: lib/format/tbfile.c depends on
 * libc and zlib only; the writer (lib/format/tbwriter.c) adds libdeflate. The
 * format is described in docs/format.md.
 */
#ifndef TRACEBPF_TBFILE_H
#define TRACEBPF_TBFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "tracebpf/site.h"
#include "format/tbrecords.h"
#include "format/chunk.h"

#define TB_FORMAT_MAJOR 2
#define TB_FORMAT_MINOR 11
/* Oldest major this reader still reads. */
#define TB_FORMAT_MAJOR_MIN 1
#define TB_FILE_MAGIC   "TRACEBPF"   /* 8 bytes, no NUL stored */

/* Streams: records are split by type so a reader can skip what it does not
 * need without decompressing it. */
enum tb_stream {
	TB_STREAM_PROC  = 1,  /* FORK, EXEC, EXIT, COMM */
	TB_STREAM_SCHED = 2,  /* scheduler and other kernel events */
	TB_STREAM_USER  = 3,  /* EVENT */
	TB_STREAM_SITE  = 4,  /* SITE descriptors */
	TB_STREAM_STATS = 5,  /* STATS, CTL, GAP */
	TB_STREAM_INDEX = 15, /* the chunk index ending a finished file (2.0) */
};
#define TB_NSTREAMS 16        /* stream ids a reader keeps statistics for */


/* The index chunk's payload: one entry per chunk before it, then this
 * 16-byte trailer, so that the last 16 bytes of a finished file locate it. */
struct tb_index_entry {
	uint64_t off;          /* file offset of the chunk header */
	uint64_t first_ts, last_ts;
	uint32_t nrec;
	uint32_t seq;
	uint16_t stream;
	uint16_t flags;
	uint32_t stored_len;
};
_Static_assert(sizeof(struct tb_index_entry) == 40, "tb_index_entry layout");
#define TB_INDEX_MAGIC 0x3158444954425454ull   /* "TTBTIDX1" little endian */
struct tb_index_trailer {
	uint64_t index_off;    /* file offset of the index chunk's header */
	uint64_t magic;        /* TB_INDEX_MAGIC */
};


/* Largest file header (hdr_size) a reader accepts. */
#define TB_HDR_MAX_BYTES   (1u << 20)

struct tb_file_info {
	uint16_t major, minor;
	uint32_t flags;
	uint32_t clock_id;            /* CLOCK_MONOTONIC */
	int64_t  realtime_offset_ns;  /* CLOCK_REALTIME - clock_id at start */
	uint64_t start_ts;            /* clock_id ns when recording started */
	char hostname[256];
	char kernel[256];             /* uname -r */
	char cmdline[4096];           /* the recorder's command line */
};

/* A STATS record's fields past its struct: the number of per-CPU drop
 * counts it holds (ncpus, clamped to its size), one of them, and (2.3)
 * lost_procs, 0 in a record written before 2.3. */
uint32_t tb_stats_ncpus(const struct tb_rec_stats *st);
uint64_t tb_stats_drop(const struct tb_rec_stats *st, uint32_t cpu);
uint64_t tb_stats_lost_procs(const struct tb_rec_stats *st);

/* Whether gap mark g says what thread tid[i] lost of its BEGINs and ENDs
 * (since 2.11, and for an application's mark only), and then that, in *d. */
bool tb_gap_depth(const struct tb_rec_gap *g, uint32_t i, struct tb_gap_depth *d);

/* Stream of a record type (TB_STREAM_*), or -EINVAL for an unknown type. */
int tb_stream_of(uint16_t rec_type);
/* Size of the fixed part of a record type (sizeof its struct), 0 if the
 * type is unknown. The writer refuses, and the reader skips, a record of a
 * known type that is shorter. */
size_t tb_rec_min_size(uint16_t rec_type);

/* Shared by the writer (lib/format/tbwriter.c) and the reader (lib/format/tbfile.c):
 * the file header's fixed part and least size, the record streams, the
 * CRC of headers and payloads, and the pipe either end grows. */
#define TB_HDR_FIXED   40u
#define TB_HDR_MIN     (TB_HDR_FIXED + 3 * 2 + 4)
#define TB_NRSTREAMS   (TB_STREAM_STATS + 1)
uint32_t tb_crc32(const void *p, size_t n);
void tb_grow_pipe(int fd);

/* ---- writer (lib/format/tbwriter.c, not in libtracebpf) ---- */
struct tb_writer;
struct tb_writer_opts {
	const struct tb_file_info *info; /* major/minor are filled in */
	int zlevel;                      /* 0 = store, 1..9 zlib level */
	size_t chunk_max;                /* raw bytes per chunk; 0 = 1 MiB */
	int raw;                         /* payloads as in tbrecords.h, not packed */
	int no_index;                    /* no chunk index at close */
	int excl;                        /* path must not exist: else -EEXIST */
};
/* Reads or writes all n bytes of buf through fd (pipes and sockets
 * included); *done says how many moved. 0 or a negative errno. */
int tb_fd_io(int fd, void *buf, size_t n, size_t *done, bool writing);

/* path "-" writes to stdout. Writes the file header at once. The file is
 * locked (flock) while open: -EBUSY, the file untouched, when another
 * writer has it. A symbolic link at path is followed only when root (or
 * the user running the writer) owns it (lib/format/outfile.h): -ELOOP for
 * another user's. */
int tb_writer_open(struct tb_writer **w, const char *path,
		   const struct tb_writer_opts *opts);
/* Copies one record (rec->size bytes) into its stream's buffer; flushes
 * that stream as a chunk when it reaches chunk_max. -EINVAL on a record
 * whose size is < 24, not 8-aligned, or whose type is unknown. */
int tb_writer_append(struct tb_writer *w, const struct tb_rec_hdr *rec);
/* Writes one chunk per non-empty stream, appended with write(2). After it
 * returns, everything appended so far is in the file (page cache). */
int tb_writer_flush(struct tb_writer *w);
/* Like tb_writer_flush, but without marking the end of a round (the last
 * chunk written gets no TB_CHUNK_ROUND_END). */
int tb_writer_flush_chunks(struct tb_writer *w);
/* Flushes, appends the chunk index (the only write that is not a data
 * chunk), closes; frees w. */
int tb_writer_close(struct tb_writer *w);
uint64_t tb_writer_bytes(const struct tb_writer *w);   /* file bytes so far */
uint64_t tb_writer_records(const struct tb_writer *w); /* records so far */
int tb_writer_fd(const struct tb_writer *w);           /* the file (write-only) */

/* ---- reader ---- */
struct tb_reader;
/* path "-" reads stdin. Fails with -EINVAL (not a trace file),
 * -EPROTONOSUPPORT (newer major version) or -errno; prints nothing. */
int tb_reader_open(struct tb_reader **r, const char *path);
/* Reads what a recorder serves on the Unix socket path (record --serve):
 * -errno of socket(2)/connect(2) (-ECONNREFUSED, -ENOENT: nothing serves
 * there), or tb_reader_open_fd's. */
int tb_reader_connect(struct tb_reader **r, const char *path);
/* Reads from fd (a socket, a pipe, a memfd); closes it at the end if own. */
int tb_reader_open_fd(struct tb_reader **r, int fd, int own);
const struct tb_file_info *tb_reader_info(const struct tb_reader *r);
/* Follow a file that is still being written (regular files): at its end
 * or at a torn last chunk, wait for more instead of stopping, until the
 * file is finished (its index chunk is read) or *stop becomes non-zero. */
void tb_reader_set_follow(struct tb_reader *r, const volatile int *stop);
/* Whether a stream mask other than all may seek through the chunk index of
 * a finished file instead of reading the chunks it skips (default yes). */
void tb_reader_use_index(struct tb_reader *r, int use);
/* For a merge into time order (lib/merge.c): a finished file is read
 * through its index, its chunks in the order of their first_ts (then file
 * order), not in file order. Before the first tb_reader_next. */
void tb_reader_time_order(struct tb_reader *r);
/* After tb_reader_time_order, before the first tb_reader_next: 1 if the
 * records will come in that order (the index was read), 0 if in file
 * order, -ENOMEM. In time order a regular file is read, never followed,
 * so no read blocks: another thread may then read r, one thread at a
 * time. */
int tb_reader_time_ordered(struct tb_reader *r);
/* Before the first tb_reader_next: in time order, a thread of its own
 * reads, checks and decodes the next chunks (two at most) while the
 * caller takes the records of one. The records, counts and stops are
 * the same; tb_reader_close ends the thread. */
void tb_reader_decode_ahead(struct tb_reader *r);
/* 1 while reading in that order: *low is at most the ts of every record
 * not yet handed out (the least of the rest of the chunk being read, or
 * the next chunk's first_ts: a record outside its chunk's range ends the
 * data as a bad record does), *pos the place of the record handed out
 * last ((chunk seq << 32) | its offset in the chunk's records: file
 * order). 0: reading in file order. */
int tb_reader_time_pos(const struct tb_reader *r, uint64_t *low, uint64_t *pos);
/* TB_CHUNK_ROUND_END chunks passed so far (read or skipped): records read
 * after round n was counted come from a later recorder flush. */
uint64_t tb_reader_rounds(const struct tb_reader *r);
/* 1 once the chunk index was read: the writer closed the file. */
int tb_reader_finished(const struct tb_reader *r);
/* Per stream, from the headers of the valid chunks passed so far. */
struct tb_stream_stats {
	uint64_t chunks, records, stored_bytes, raw_bytes;
	uint64_t first_ts, last_ts;   /* 0, 0 when no records */
};
const struct tb_stream_stats *tb_reader_stream_stats(const struct tb_reader *r,
						     unsigned stream);
/* Input bytes consumed (file header and chunks). */
uint64_t tb_reader_offset(const struct tb_reader *r);
/* The input's size: the bytes consumed, and once iteration stopped at a
 * torn or corrupt tail, those left unread behind it too. */
uint64_t tb_reader_input_bytes(const struct tb_reader *r);
/* Limit iteration to streams in mask (bit 1<<TB_STREAM_*); default all. */
void tb_reader_set_streams(struct tb_reader *r, uint32_t mask);
/* Next record, in file order, or chunk by chunk in time order
 * (tb_reader_time_order) (2.0: a round's records are handed out once
 * its ROUND_END chunk is read, unless a valid index says the file is
 * whole). Returns 1 with *rec valid until the next call,
 * 0 at the end of the readable data, or -errno on an I/O error. A torn or
 * corrupt tail is not an error: iteration ends there and
 * tb_reader_tail_bytes() tells how many bytes were left unread. */
int tb_reader_next(struct tb_reader *r, const struct tb_rec_hdr **rec);
uint64_t tb_reader_tail_bytes(const struct tb_reader *r);
/* Records (of the streams read) dropped because their round never ended
 * (2.0: a recorder killed between the chunks of one flush); *bytes (if not
 * NULL): the bytes of its chunks, which also count in tail_bytes. */
uint64_t tb_reader_discarded(const struct tb_reader *r, uint64_t *bytes);
/* Why the tail was not read (static string), or NULL if the file ended
 * cleanly. */
const char *tb_reader_tail_reason(const struct tb_reader *r);
void tb_reader_close(struct tb_reader *r);

#endif /* TRACEBPF_TBFILE_H */
