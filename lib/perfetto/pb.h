/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pb.h - protobuf's wire format, written: varints, fixed64s, bytes and
 * nested messages, into a growing buffer (docs/perfetto.md, "The
 * encoder").
 *
 * A nested message is opened with tb_pb_begin and closed with tb_pb_end,
 * which writes its length in front of it: one byte is kept for it, and a
 * longer length moves the message up (most of ours are short). A failed
 * allocation is kept in err; every call after it does nothing.
 */
#ifndef TRACEBPF_PB_H
#define TRACEBPF_PB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TB_PB_DEPTH 8   /* messages open at once, at most */

enum tb_pb_wire { TB_PB_VARINT = 0, TB_PB_I64 = 1, TB_PB_LEN = 2 };

struct tb_pb {
	uint8_t *buf;
	size_t len, cap;
	size_t open[TB_PB_DEPTH];   /* where each open message's body starts */
	int depth;
	int err;                    /* 0 or -ENOMEM */
};

/* Room for n more bytes; false (and err set) when there is none. */
bool tb_pb_grow(struct tb_pb *b, size_t n);
void tb_pb_free(struct tb_pb *b);

static inline uint8_t *tb_pb_put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline bool tb_pb_room(struct tb_pb *b, size_t n)
{
	return b->len + n <= b->cap || tb_pb_grow(b, n);
}

static inline void tb_pb_varint(struct tb_pb *b, uint32_t field, uint64_t v)
{
	if (!tb_pb_room(b, 16))
		return;
	uint8_t *p = tb_pb_put_varint(b->buf + b->len, (uint64_t)field << 3 | TB_PB_VARINT);

	b->len = (size_t)(tb_pb_put_varint(p, v) - b->buf);
}

/* An int64 field: negative values take ten bytes, as the format says. */
static inline void tb_pb_int(struct tb_pb *b, uint32_t field, int64_t v)
{
	tb_pb_varint(b, field, (uint64_t)v);
}

static inline void tb_pb_fixed64(struct tb_pb *b, uint32_t field, uint64_t v)
{
	if (!tb_pb_room(b, 16))
		return;
	uint8_t *p = tb_pb_put_varint(b->buf + b->len, (uint64_t)field << 3 | TB_PB_I64);

	memcpy(p, &v, 8);   /* little-endian: the wire's order on x86-64 */
	b->len = (size_t)(p + 8 - b->buf);
}

static inline void tb_pb_double(struct tb_pb *b, uint32_t field, double d)
{
	uint64_t v;

	memcpy(&v, &d, sizeof(v));
	tb_pb_fixed64(b, field, v);
}

void tb_pb_bytes(struct tb_pb *b, uint32_t field, const void *p, size_t n);

static inline void tb_pb_string(struct tb_pb *b, uint32_t field, const char *s)
{
	tb_pb_bytes(b, field, s, strlen(s));
}

/* Bytes already encoded (fields of the message open). */
static inline void tb_pb_raw(struct tb_pb *b, const void *p, size_t n)
{
	if (n && tb_pb_room(b, n)) {
		memcpy(b->buf + b->len, p, n);
		b->len += n;
	}
}

/* The slow ways of tb_pb_begin and tb_pb_end (below): no room, too deep,
 * a body of 128 bytes or more. */
void tb_pb_begin_slow(struct tb_pb *b, uint32_t field);
void tb_pb_end_slow(struct tb_pb *b);

/* Opens a nested message (or a packed field) of field. Inline: a plain
 * event opens three. */
static inline void tb_pb_begin(struct tb_pb *b, uint32_t field)
{
	uint8_t *q;

	if (field >= 16 || b->depth == TB_PB_DEPTH || b->len + 2 > b->cap) {
		tb_pb_begin_slow(b, field);
		return;
	}
	q = b->buf + b->len;
	q[0] = (uint8_t)(field << 3 | TB_PB_LEN);
	q[1] = 0;   /* the length's first byte */
	b->len += 2;
	b->open[b->depth++] = b->len;
}

/* Closes the innermost open one. */
static inline void tb_pb_end(struct tb_pb *b)
{
	size_t n;

	if (b->err || !b->depth || (n = b->len - b->open[b->depth - 1]) >= 0x80) {
		tb_pb_end_slow(b);
		return;
	}
	b->buf[b->open[--b->depth] - 1] = (uint8_t)n;
}

/* A varint of a packed field opened with tb_pb_begin. */
static inline void tb_pb_packed(struct tb_pb *b, uint64_t v)
{
	if (tb_pb_room(b, 10))
		b->len = (size_t)(tb_pb_put_varint(b->buf + b->len, v) - b->buf);
}

#endif /* TRACEBPF_PB_H */
