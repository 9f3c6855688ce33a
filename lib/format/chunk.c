// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* chunk.c - a chunk's stored payload into its records (see chunk.h). */
#include <errno.h>
#include <stdlib.h>

#include <linux/types.h>

#include "format/tbrecords.h"
#include "format/chunk.h"
#include "format/tbpack.h"

int tb_grow_buf(unsigned char **buf, size_t *cap, size_t need)
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

int tb_chunk_room(struct tb_chunk_dec *d, const struct tb_chunk_hdr *ch)
{
	return tb_grow_buf(&d->sbuf, &d->scap, ch->stored_len ? ch->stored_len : 1);
}

/* zlib's own check of a zlib stream: the 2-byte header says deflate, no
 * preset dictionary. */
static bool zlib_header(const unsigned char *p, size_t n)
{
	return n >= 6 && (p[0] & 0x0f) == 8 && (p[0] >> 4) <= 7 && !(p[1] & 0x20) &&
	       ((unsigned)p[0] << 8 | p[1]) % 31 == 0;
}

/* Inflates the payload of ch (d->sbuf) into d->rbuf. The payload CRC,
 * checked already, covers every stored byte, so the stream's own Adler-32
 * (a few per cent of reading) is not computed: its deflate data is
 * inflated raw, and must end exactly before the 4 trailer bytes with
 * raw_len bytes out (an empty or unusual stream goes to zlib whole). 0,
 * 1 (not a valid stream) or -ENOMEM. */
static int inflate_chunk(struct tb_chunk_dec *d, const struct tb_chunk_hdr *ch)
{
	uLongf dlen = ch->raw_len;
	int ret = tb_grow_buf(&d->rbuf, &d->rcap, ch->raw_len ? ch->raw_len : 1);

	if (ret)
		return ret;
	if (!ch->raw_len || !zlib_header(d->sbuf, ch->stored_len))   /* as zlib checks it */
		return uncompress(d->rbuf, &dlen, d->sbuf, ch->stored_len) != Z_OK ||
		       dlen != ch->raw_len;
	if (!d->z_ready) {
		if (inflateInit2(&d->z, -MAX_WBITS) != Z_OK)
			return -ENOMEM;
		d->z_ready = true;
	} else if (inflateReset(&d->z) != Z_OK) {
		return 1;
	}
	d->z.next_in = d->sbuf + 2;
	d->z.avail_in = ch->stored_len - 6;
	d->z.next_out = d->rbuf;
	d->z.avail_out = ch->raw_len;
	ret = inflate(&d->z, Z_FINISH);
	return ret == Z_STREAM_END && d->z.avail_in == 0 && d->z.total_out == ch->raw_len ? 0 : 1;
}

int tb_chunk_decode(struct tb_chunk_dec *d, const struct tb_chunk_hdr *ch,
		    const unsigned char **recs, size_t *len, const char **reason)
{
	int err;

	*recs = d->sbuf;
	*len = ch->raw_len;
	if (ch->flags & TB_CHUNK_ZLIB) {
		err = inflate_chunk(d, ch);
		if (err > 0)
			*reason = "decompression failed";
		if (err)
			return err;
		*recs = d->rbuf;
	}
	if (ch->flags & TB_CHUNK_PACKED) {
		long n = tb_unpack(*recs, *len, ch->first_ts,
				   ch->flags & TB_CHUNK_KPACK ? TB_PACK_KERNEL : 0, ch->nrec,
				   &d->ubuf, &d->ucap, TB_CHUNK_MAX_BYTES);

		if (n == -ENOMEM)
			return -ENOMEM;
		if (n < 0) {
			*reason = "bad packed records";
			return 1;
		}
		*recs = d->ubuf;
		*len = (size_t)n;
	}
	return 0;
}

int tb_chunk_suffix_min(struct tb_chunk_dec *d, const unsigned char *recs, size_t len)
{
	size_t pos = 0, n = 0, k;
	int err = tb_grow_buf((unsigned char **)&d->smin, &d->smin_cap,
			      (len / sizeof(struct tb_rec_hdr) + 1) * sizeof(*d->smin));

	if (err)
		return err;
	while (len - pos >= sizeof(struct tb_rec_hdr)) {
		const struct tb_rec_hdr *h = (const void *)(recs + pos);

		if (h->size < sizeof(*h) || h->size % 8 || h->size > len - pos)
			break;
		d->smin[n++] = h->ts;
		pos += h->size;
	}
	d->smin[n] = UINT64_MAX;
	for (k = n; k-- > 0;)
		if (d->smin[k + 1] < d->smin[k])
			d->smin[k] = d->smin[k + 1];
	return 0;
}

void tb_chunk_dec_free(struct tb_chunk_dec *d)
{
	free(d->sbuf);
	free(d->rbuf);
	free(d->ubuf);
	free(d->smin);
	if (d->z_ready)
		inflateEnd(&d->z);
}
