/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * chunk.h - a chunk's stored payload into its records (docs/format.md,
 * "Chunks" and "Packed payloads"), with the buffers that takes. The
 * reader decodes with one of these, and each chunk it decodes ahead on
 * another thread has one of its own.
 */
#ifndef TRACEBPF_CHUNK_H
#define TRACEBPF_CHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "tbfile.h"

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
