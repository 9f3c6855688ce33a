/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tbpack.h - the compact record encoding of TB_CHUNK_PACKED chunk payloads
 * (docs/format.md, "Packed payloads"): varints, timestamp and id deltas,
 * trailing zeros dropped. Encodes a run of records laid out as in
 * lib/format/tbrecords.h and decodes it back byte for byte, so that nothing but the
 * trace file module knows the encoding exists.
 */
#ifndef TRACEBPF_TBPACK_H
#define TRACEBPF_TBPACK_H

#include <stddef.h>
#include <stdint.h>

/* tb_pack/tb_unpack flags */
#define TB_PACK_KERNEL 1u   /* (2.1) field codecs for the scheduler records */

/* Worst-case encoded size of raw records of total length len. */
size_t tb_pack_bound(size_t len);

/* Encodes the records in raw[0, len) (each a valid tb_rec_hdr, size a
 * multiple of 8, tiling the buffer) into out, which holds at least
 * tb_pack_bound(len) bytes. base_ts is the chunk's first_ts; flags are
 * TB_PACK_*, the same for both directions. Returns the encoded length. */
size_t tb_pack(const unsigned char *raw, size_t len, uint64_t base_ts,
	       unsigned flags, unsigned char *out);

/* Decodes in[0, len) holding exactly nrec records into *out (grown with
 * realloc, *cap its size), at most max_out bytes. Returns the decoded
 * length, or -EBADMSG on any malformed input (truncated varint, a size
 * below 24 or not a multiple of 8, a body longer than its record, trailing
 * bytes, a record count that does not match) and -ENOMEM. */
long tb_unpack(const unsigned char *in, size_t len, uint64_t base_ts,
	       unsigned flags, uint32_t nrec, unsigned char **out, size_t *cap, size_t max_out);

#endif /* TRACEBPF_TBPACK_H */
