// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pftrace_out.c - the Perfetto file: a Trace message written as it grows,
 * packet after packet, so a reader may stop anywhere between two. With
 * compression, packets are gathered into groups of about GROUP bytes,
 * each deflated (zlib's format) into one packet's compressed_packets,
 * which Perfetto's readers inflate as the packets they hold
 * (docs/perfetto.md, "Compression"). The groups are deflated and written
 * on a thread of their own (lib/util/outq.h), while this one makes the
 * next packets; a group larger than a batch (a packet that large) is
 * deflated here, after those queued.
 */
#include <errno.h>
#include <libdeflate.h>
#include <stdlib.h>

#include "perfetto/pftrace_int.h"
#include "util/outq.h"

#define GROUP (192u << 10)     /* packets handed on together (<= TB_OUTQ_MAX) */
#define PLAIN_FLUSH (1u << 20) /* bytes held before they are written */
#define PF_PKT_COMPRESSED 50   /* TracePacket.compressed_packets */

static int deflate_group(struct pf_out *o, const uint8_t *data, size_t len);

/* The deflating thread: each batch of whole packets, one group. */
static void consume(void *ctx, char *data, size_t len)
{
	struct pf_out *o = ctx;
	int err = o->qerr ? 0 : deflate_group(o, (const uint8_t *)data, len);

	if (err)
		o->qerr = err;
}

int pf_out_open(struct pf_out *o, FILE *f, bool compress)
{
	*o = (struct pf_out){ .f = f, .compress = compress };
	if (compress) {
		/* level 1: a tight loop's packets still shrink about 6-fold */
		o->zc = libdeflate_alloc_compressor(1);
		if (!o->zc)
			return -ENOMEM;
		if (tb_outq_start(&o->q, consume, o))
			o->q = NULL;   /* no thread: deflated here */
	}
	return 0;
}

static int write_all(struct pf_out *o, const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, o->f) != n)
		return -EIO;
	o->bytes += n;
	return 0;
}

/* Packets, deflated into one packet of their own, written. */
static int deflate_group(struct pf_out *o, const uint8_t *data, size_t len)
{
	size_t bound, n;
	uint8_t *p;

	bound = libdeflate_zlib_compress_bound(o->zc, len);
	o->z.len = 0;
	tb_pb_begin(&o->z, PF_TRACE_PACKET);
	if (!tb_pb_room(&o->z, bound + 16))
		return o->z.err;
	/* compressed_packets: its tag and length, then the bytes */
	p = tb_pb_put_varint(o->z.buf + o->z.len, (uint64_t)PF_PKT_COMPRESSED << 3 | TB_PB_LEN);
	n = libdeflate_zlib_compress(o->zc, data, len, p + 5, bound);
	if (!n)
		return -EIO;
	/* a length of five bytes whatever it is: the bytes stay in place */
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)((n >> (7 * i)) & 0x7f) | 0x80;
	p[4] = (uint8_t)(n >> 28);
	o->z.len = (size_t)(p + 5 + n - o->z.buf);
	tb_pb_end(&o->z);
	return o->z.err ? o->z.err : write_all(o, o->z.buf, o->z.len);
}

/* The held packets, to the deflating thread (or deflated here). */
static int flush_group(struct pf_out *o)
{
	int err = 0;
	void *dst;

	if (!o->b.len)
		return 0;
	if (o->q && o->b.len <= TB_OUTQ_MAX && (dst = tb_outq_reserve(o->q, o->b.len))) {
		memcpy(dst, o->b.buf, o->b.len);
		tb_outq_commit(o->q, o->b.len);
		o->b.len = 0;
		return o->qerr;
	}
	if (o->q) {   /* after what is queued */
		tb_outq_finish(o->q);
		o->q = NULL;
		err = o->qerr;
	}
	if (!err)
		err = deflate_group(o, o->b.buf, o->b.len);
	o->b.len = 0;
	if (!err && tb_outq_start(&o->q, consume, o))
		o->q = NULL;
	return err;
}

static int flush(struct pf_out *o)
{
	int err;

	if (o->compress)
		return flush_group(o);
	err = write_all(o, o->b.buf, o->b.len);
	o->b.len = 0;
	return err;
}

void pf_out_begin(struct pf_out *o)
{
	tb_pb_begin(&o->b, PF_TRACE_PACKET);
}

int pf_out_end(struct pf_out *o)
{
	while (o->b.depth)
		tb_pb_end(&o->b);
	if (o->err)
		return o->err;
	if (o->b.err)
		return o->err = o->b.err;
	if (o->b.len >= (o->compress ? GROUP : PLAIN_FLUSH))
		o->err = flush(o);
	return o->err;
}

int pf_out_close(struct pf_out *o)
{
	int err = o->err ? o->err : flush(o);

	if (o->q) {
		tb_outq_finish(o->q);
		o->q = NULL;
	}
	if (!err)
		err = o->qerr;
	if (!err && fflush(o->f))
		err = -errno;
	tb_pb_free(&o->b);
	tb_pb_free(&o->z);
	if (o->zc)
		libdeflate_free_compressor(o->zc);
	o->zc = NULL;
	return err;
}
