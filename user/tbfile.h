/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tbfile.h - the tracebpf trace file (.tbt): writer and reader.
 *
 * A reader of the trace file never needs libbpf: this module depends on
 * libc and zlib only. The format is described in docs/format.md.
 */
#ifndef TRACEBPF_TBFILE_H
#define TRACEBPF_TBFILE_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "../bpf/record.h"

#define TB_FORMAT_MAJOR 1
#define TB_FORMAT_MINOR 1
#define TB_FILE_MAGIC   "TRACEBPF"   /* 8 bytes, no NUL stored */
#define TB_CHUNK_MAGIC  0x4b434254u  /* "TBCK" little endian */

/* Streams: records are split by type so a reader can skip what it does not
 * need without decompressing it. */
enum tb_stream {
	TB_STREAM_PROC  = 1,  /* FORK, EXEC, EXIT, COMM */
	TB_STREAM_SCHED = 2,  /* scheduler and other kernel events */
	TB_STREAM_USER  = 3,  /* EVENT */
	TB_STREAM_SITE  = 4,  /* SITE descriptors */
	TB_STREAM_STATS = 5,  /* STATS */
};

#define TB_CHUNK_ZLIB   1u    /* payload is a zlib stream */

/* Chunk header, as stored (docs/format.md). hdr_crc covers the 44 bytes
 * before it. */
struct tb_chunk_hdr {
	uint32_t magic;        /* TB_CHUNK_MAGIC */
	uint16_t stream;       /* enum tb_stream */
	uint16_t flags;        /* TB_CHUNK_* */
	uint32_t raw_len;      /* payload bytes after decompression */
	uint32_t stored_len;   /* payload bytes in the file */
	uint64_t first_ts;     /* min hdr.ts of the chunk's records */
	uint64_t last_ts;      /* max hdr.ts */
	uint32_t nrec;         /* records in the payload */
	uint32_t payload_crc;  /* zlib crc32 of the stored payload */
	uint32_t seq;          /* chunk number in file order, from 0 */
	uint32_t hdr_crc;      /* zlib crc32 of the 44 bytes above */
};
_Static_assert(sizeof(struct tb_chunk_hdr) == 48, "tb_chunk_hdr layout");

/* Largest raw_len or stored_len a reader accepts; the writer never exceeds
 * it. A chunk header claiming more is treated as corrupt. */
#define TB_CHUNK_MAX_BYTES (64u << 20)
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

/* Stream of a record type (TB_STREAM_*), or -EINVAL for an unknown type. */
int tb_stream_of(uint16_t rec_type);
/* Size of the fixed part of a record type (sizeof its struct), 0 if the
 * type is unknown. The writer refuses, and the reader skips, a record of a
 * known type that is shorter. */
size_t tb_rec_min_size(uint16_t rec_type);

/* ---- writer ---- */
struct tb_writer;
struct tb_writer_opts {
	const struct tb_file_info *info; /* major/minor are filled in */
	int zlevel;                      /* 0 = store, 1..9 zlib level */
	size_t chunk_max;                /* raw bytes per chunk; 0 = 1 MiB */
};
/* path "-" writes to stdout. Writes the file header at once. */
int tb_writer_open(struct tb_writer **w, const char *path,
		   const struct tb_writer_opts *opts);
/* Copies one record (rec->size bytes) into its stream's buffer; flushes
 * that stream as a chunk when it reaches chunk_max. -EINVAL on a record
 * whose size is < 24, not 8-aligned, or whose type is unknown. */
int tb_writer_append(struct tb_writer *w, const struct tb_rec_hdr *rec);
/* Writes one chunk per non-empty stream, appended with write(2). After it
 * returns, everything appended so far is in the file (page cache). */
int tb_writer_flush(struct tb_writer *w);
/* Flushes and closes; frees w. */
int tb_writer_close(struct tb_writer *w);
uint64_t tb_writer_bytes(const struct tb_writer *w);   /* file bytes so far */
uint64_t tb_writer_records(const struct tb_writer *w); /* records so far */

/* ---- reader ---- */
struct tb_reader;
/* path "-" reads stdin. Fails with -EINVAL (not a trace file),
 * -EPROTONOSUPPORT (newer major version) or -errno; prints nothing. */
int tb_reader_open(struct tb_reader **r, const char *path);
const struct tb_file_info *tb_reader_info(const struct tb_reader *r);
/* Limit iteration to streams in mask (bit 1<<TB_STREAM_*); default all. */
void tb_reader_set_streams(struct tb_reader *r, uint32_t mask);
/* Next record, in file order. Returns 1 with *rec valid until the next call,
 * 0 at the end of the readable data, or -errno on an I/O error. A torn or
 * corrupt tail is not an error: iteration ends there and
 * tb_reader_tail_bytes() tells how many bytes were left unread. */
int tb_reader_next(struct tb_reader *r, const struct tb_rec_hdr **rec);
uint64_t tb_reader_tail_bytes(const struct tb_reader *r);
/* Why the tail was not read (static string), or NULL if the file ended
 * cleanly. */
const char *tb_reader_tail_reason(const struct tb_reader *r);
void tb_reader_close(struct tb_reader *r);

#endif /* TRACEBPF_TBFILE_H */
