/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * chunk.h - the chunk: its header as stored and its flags, and its stored
 * payload into its records (docs/format.md, "Chunks" and "Packed
 * payloads"), with the buffers that takes. The reader decodes with one
 * of these, and each chunk it decodes ahead on another thread has one of
 * its own; the writer (lib/format/tbwriter.c) writes the same header.
 */
#ifndef TRACEBPF_CHUNK_H
#define TRACEBPF_CHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#define TB_CHUNK_MAGIC  0x4b434254u  /* "TBCK" little endian */

/* tb_chunk_hdr.flags */
#define TB_CHUNK_ZLIB      1u /* payload is a zlib stream */
#define TB_CHUNK_PACKED    2u /* (2.0) records in the compact encoding */
#define TB_CHUNK_ROUND_END 4u /* (2.0) last chunk of a recorder flush */
#define TB_CHUNK_KPACK     8u /* (2.1) PACKED with the scheduler field codecs */
#define TB_CHUNK_KNOWN     (TB_CHUNK_ZLIB | TB_CHUNK_PACKED | TB_CHUNK_ROUND_END | \
			    TB_CHUNK_KPACK)

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

/* Grows *buf (of *cap bytes) to at least need bytes: 0 or -ENOMEM. */
int tb_grow_buf(unsigned char **buf, size_t *cap, size_t need);

struct tb_chunk_dec {
	unsigned char *sbuf;      /* stored payload (the caller reads it here) */
	size_t scap;
	unsigned char *rbuf;      /* decompressed payload */
	size_t rcap;
	unsigned char *ubuf;      /* unpacked records */
	size_t ucap;
	uint64_t *smin;           /* tb_chunk_suffix_min's */
	size_t smin_cap;
	z_stream z;               /* raw inflate */
	bool z_ready;
};

/* Room for ch's stored payload in d->sbuf. 0 or -ENOMEM. */
int tb_chunk_room(struct tb_chunk_dec *d, const struct tb_chunk_hdr *ch);
/* The records of ch, whose stored payload (its CRC checked) is in
 * d->sbuf: *recs (d's, valid until its next use) and *len. 0, -ENOMEM,
 * or 1 with *reason when the payload does not decode. */
int tb_chunk_decode(struct tb_chunk_dec *d, const struct tb_chunk_hdr *ch,
		    const unsigned char **recs, size_t *len, const char **reason);
/* Time order: d->smin[k] becomes the least ts of the records from the kth
 * on (the one after the last: ~0), so what is still to come is known to
 * be at least that. Stops at a bad record size (the reader stops there
 * too). 0 or -ENOMEM. */
int tb_chunk_suffix_min(struct tb_chunk_dec *d, const unsigned char *recs, size_t len);
void tb_chunk_dec_free(struct tb_chunk_dec *d);

#endif
