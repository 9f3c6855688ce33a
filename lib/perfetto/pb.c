// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pb.c - protobuf's wire format, written (pb.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "perfetto/pb.h"

bool tb_pb_grow(struct tb_pb *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 4096;
	uint8_t *p;

	if (b->err)
		return false;
	while (cap < b->len + n)
		cap *= 2;
	p = realloc(b->buf, cap);
	if (!p) {
		b->err = -ENOMEM;
		return false;
	}
	b->buf = p;
	b->cap = cap;
	return true;
}

void tb_pb_free(struct tb_pb *b)
{
	free(b->buf);
	*b = (struct tb_pb){ 0 };
}

void tb_pb_bytes(struct tb_pb *b, uint32_t field, const void *p, size_t n)
{
	uint8_t *q;

	if (!tb_pb_room(b, n + 20))
		return;
	q = tb_pb_put_varint(b->buf + b->len, (uint64_t)field << 3 | TB_PB_LEN);
	q = tb_pb_put_varint(q, n);
	if (n)
		memcpy(q, p, n);
	b->len = (size_t)(q + n - b->buf);
}

void tb_pb_begin_slow(struct tb_pb *b, uint32_t field)
{
	uint8_t *q;

	if (b->depth == TB_PB_DEPTH) {   /* a bug of ours: said as no memory */
		b->err = -ENOMEM;
		return;
	}
	if (!tb_pb_room(b, 8))
		return;
	q = tb_pb_put_varint(b->buf + b->len, (uint64_t)field << 3 | TB_PB_LEN);
	*q++ = 0;   /* the length's first byte */
	b->len = (size_t)(q - b->buf);
	b->open[b->depth++] = b->len;
}

void tb_pb_end_slow(struct tb_pb *b)
{
	size_t start, n, extra = 0;
	uint8_t tmp[10], *end;

	if (b->err || !b->depth)
		return;
	start = b->open[--b->depth];
	n = b->len - start;
	end = tb_pb_put_varint(tmp, n);
	extra = (size_t)(end - tmp) - 1;
	if (extra) {
		if (!tb_pb_room(b, extra))
			return;
		memmove(b->buf + start + extra, b->buf + start, n);
		b->len += extra;
	}
	memcpy(b->buf + start - 1, tmp, extra + 1);
}
