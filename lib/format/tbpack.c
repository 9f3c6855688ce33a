// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tbpack.c - compact encoding of a chunk's records (docs/format.md,
 * "Packed payloads").
 *
 * Per record, LEB128 varints:
 *   type, size/8, cpu+1 (mod 2^32), zigzag(ts - previous ts),
 *   zigzag(pid - previous pid), zigzag(tid - pid),
 *   [type 1 (EVENT) and size >= 56: zigzag deltas of the u64s at 24, 32, 40
 *    against the previous EVENT's, then the u16s at 48, 50 and the u32 at 52]
 *   n, then the n bytes of the rest of the record up to its last non-zero
 *   byte; the decoder fills the remaining bytes with zeros.
 * "previous" starts at the chunk's first_ts, pid 0 and zeros for each
 * chunk, so a chunk decodes on its own. The encoding is lossless for any
 * bytes, whatever a record type's layout: it only changes how compact it is.
 *
 * TB_PACK_KERNEL (format 2.1, chunk flag TB_CHUNK_KPACK) replaces the
 * "n, bytes" body of the scheduler records, which are most of a system-wide
 * trace, by their fields: SWITCH (type 9, 72 bytes), WAKE (10, 64) and CPU
 * (12, 40) are coded field by field as varints, and each comm as one bit
 * when it is the comm last coded in the chunk for the same task (a cache of
 * NCOMM slots that encoder and decoder fill identically). A record of one
 * of those types with another size keeps the generic body.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#include "format/tbrecords.h"
#include "format/tbpack.h"

#define HDR ((unsigned)sizeof(struct tb_rec_hdr))
#define EV_FIXED ((unsigned)sizeof(struct tb_rec_event))
#define NCOMM 256u      /* comm cache slots (TB_PACK_KERNEL) */

/* TB_PACK_KERNEL: the scheduler records and where their fields are. */
/* field offsets, from the layouts in lib/format/tbrecords.h */
#define HD(f) offsetof(struct tb_rec_hdr, f)
#define SW(f) offsetof(struct tb_rec_switch, f)
#define WK(f) offsetof(struct tb_rec_wake, f)
#define CP(f) offsetof(struct tb_rec_cpu, f)
#define PRIO_BASE 120u  /* a normal task's prio: stored as a small delta */

struct comm_slot {
	uint64_t key;              /* 0: empty (no real key is 0) */
	unsigned char comm[16];
};

struct pstate {
	uint64_t ts;
	uint32_t pid;
	uint64_t ev[3];
	unsigned flags;
	/* the comm last coded for a task, per chunk: a repeat costs no bytes */
	struct comm_slot comm[NCOMM];
};

static void pstate_init(struct pstate *st, uint64_t base_ts, unsigned flags)
{
	memset(st, 0, offsetof(struct pstate, comm));
	st->ts = base_ts;
	st->flags = flags;
	if (flags & TB_PACK_KERNEL)
		memset(st->comm, 0, sizeof(st->comm));
}

static uint64_t zz(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static int64_t unzz(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

static unsigned char *put_var(unsigned char *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (unsigned char)v;
	return p;
}

/* 0 on success; -EBADMSG on a truncated or over-long varint. */
static int get_var_long(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	uint64_t r = 0;
	int shift;

	for (shift = 0; shift < 64; shift += 7) {
		uint64_t b;

		if (*p >= end)
			return -EBADMSG;
		b = *(*p)++;
		r |= (b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -EBADMSG;
}

/* get_var_long, with most varints (one byte) inline. */
static inline __attribute__((always_inline)) int get_var(const unsigned char **p,
							 const unsigned char *end, uint64_t *v)
{
	if (*p < end && !(**p & 0x80)) {
		*v = *(*p)++;
		return 0;
	}
	return get_var_long(p, end, v);
}

static uint64_t ld64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static uint32_t ld32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint16_t ld16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }

size_t tb_pack_bound(size_t len)
{
	/* per record (>= 24 bytes): at most 6 + 6 varints (10 bytes) + n's
	 * varint (3) more than the record itself; the field codecs stay below
	 * that (a switch: 1 + 6 varints + 2 x 17 comm bytes for 48 body bytes) */
	return len + (len / HDR + 1) * (12 * 10 + 3);
}

static uint64_t comm_key(uint32_t tid, uint32_t cpu)
{
	/* every CPU's idle task is tid 0, named after its CPU */
	return tid ? tid : (1ull << 32) | cpu;
}

static struct comm_slot *comm_slot(struct pstate *st, uint64_t key)
{
	return &st->comm[(key * 0x9e3779b97f4a7c15ull) >> 56];
}

/* Codes the 16-byte comm c of task key: no bytes when cached (returns 0),
 * else n and the n bytes up to the last non-zero one (returns 1). */
static int put_comm(struct pstate *st, unsigned char **o, const unsigned char *c,
		    uint64_t key)
{
	struct comm_slot *sl = comm_slot(st, key);
	size_t n = 16;

	if (sl->key == key && !memcmp(sl->comm, c, 16))
		return 0;
	sl->key = key;
	memcpy(sl->comm, c, 16);
	while (n && !c[n - 1])
		n--;
	*o = put_var(*o, n);
	memcpy(*o, c, n);
	*o += n;
	return 1;
}

static int get_comm(struct pstate *st, const unsigned char **p, const unsigned char *end,
		    unsigned char *c, uint64_t key, bool literal)
{
	struct comm_slot *sl = comm_slot(st, key);
	uint64_t n;

	if (!literal) {
		if (sl->key != key)
			return -EBADMSG;   /* a cache hit on nothing */
		memcpy(c, sl->comm, 16);
		return 0;
	}
	if (get_var(p, end, &n) || n > 16 || n > (uint64_t)(end - *p))
		return -EBADMSG;
	memcpy(c, *p, n);   /* c is zeroed */
	*p += n;
	sl->key = key;
	memcpy(sl->comm, c, 16);
	return 0;
}

static void st16(unsigned char *p, uint16_t v) { memcpy(p, &v, 2); }
static void st32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }

/* A varint that must fit 32 bits, or a zigzag one that must fit int32. */
static int get_u32(const unsigned char **p, const unsigned char *end, uint32_t *v)
{
	uint64_t x;

	if (get_var(p, end, &x) || x > 0xffffffffull)
		return -EBADMSG;
	*v = (uint32_t)x;
	return 0;
}

static int get_s32(const unsigned char **p, const unsigned char *end, int32_t *v)
{
	uint64_t x;
	int64_t s;

	if (get_var(p, end, &x))
		return -EBADMSG;
	s = unzz(x);
	if (s < INT32_MIN || s > INT32_MAX)
		return -EBADMSG;
	*v = (int32_t)s;
	return 0;
}

/* Field codecs (TB_PACK_KERNEL). put_* return the new output position;
 * get_* fill the zeroed record r and return 0 or -EBADMSG. */
static unsigned char *put_switch(struct pstate *st, const unsigned char *r, unsigned char *o)
{
	uint32_t cpu = ld32(r + HD(cpu)), next = ld32(r + SW(next_tid));
	unsigned char *m = o++;

	o = put_var(o, next);
	o = put_var(o, zz((int32_t)(ld32(r + SW(next_tgid)) - next)));
	o = put_var(o, zz((int16_t)(uint16_t)(ld16(r + SW(prev_prio)) - PRIO_BASE)));
	o = put_var(o, zz((int16_t)(uint16_t)(ld16(r + SW(next_prio)) - PRIO_BASE)));
	o = put_var(o, ld16(r + SW(prev_state)));
	o = put_var(o, ld16(r + SW(flags)));
	*m = (unsigned char)put_comm(st, &o, r + SW(prev_comm), comm_key(ld32(r + HD(tid)), cpu));
	*m |= (unsigned char)(put_comm(st, &o, r + SW(next_comm), comm_key(next, cpu)) << 1);
	return o;
}

static int get_prio16(const unsigned char **p, const unsigned char *end, unsigned char *dst)
{
	int32_t v;

	if (get_s32(p, end, &v) || v < INT16_MIN || v > INT16_MAX)
		return -EBADMSG;
	st16(dst, (uint16_t)((uint16_t)v + PRIO_BASE));
	return 0;
}

static int get_switch(struct pstate *st, const unsigned char **p, const unsigned char *end,
		      unsigned char *r)
{
	uint32_t next, v;
	int32_t d;
	unsigned m;

	if (*p >= end || (m = *(*p)++) > 3)
		return -EBADMSG;
	if (get_u32(p, end, &next) || get_s32(p, end, &d))
		return -EBADMSG;
	st32(r + SW(next_tid), next);
	st32(r + SW(next_tgid), next + (uint32_t)d);
	if (get_prio16(p, end, r + SW(prev_prio)) || get_prio16(p, end, r + SW(next_prio)))
		return -EBADMSG;
	if (get_u32(p, end, &v) || v > 0xffff)
		return -EBADMSG;
	st16(r + SW(prev_state), (uint16_t)v);
	if (get_u32(p, end, &v) || v > 0xffff)
		return -EBADMSG;
	st16(r + SW(flags), (uint16_t)v);
	if (get_comm(st, p, end, r + SW(prev_comm), comm_key(ld32(r + HD(tid)), ld32(r + HD(cpu))), m & 1) ||
	    get_comm(st, p, end, r + SW(next_comm), comm_key(next, ld32(r + HD(cpu))), m & 2))
		return -EBADMSG;
	return 0;
}

static unsigned char *put_wake(struct pstate *st, const unsigned char *r, unsigned char *o)
{
	uint32_t tid = ld32(r + WK(tid));
	unsigned char *m = o++;

	o = put_var(o, ld32(r + WK(kind)));
	o = put_var(o, tid);
	o = put_var(o, zz((int32_t)(ld32(r + WK(tgid)) - tid)));
	o = put_var(o, zz((int32_t)(ld32(r + WK(prio)) - PRIO_BASE)));
	o = put_var(o, ld32(r + WK(target_cpu)));
	o = put_var(o, ld32(r + WK(pad)));
	*m = (unsigned char)put_comm(st, &o, r + WK(comm), comm_key(tid, ld32(r + WK(target_cpu))));
	return o;
}

static int get_wake(struct pstate *st, const unsigned char **p, const unsigned char *end,
		    unsigned char *r)
{
	uint32_t kind, tid, tcpu, pad;
	int32_t d, prio;
	unsigned m;

	if (*p >= end || (m = *(*p)++) > 1)
		return -EBADMSG;
	if (get_u32(p, end, &kind) || get_u32(p, end, &tid) || get_s32(p, end, &d) ||
	    get_s32(p, end, &prio) ||
	    get_u32(p, end, &tcpu) || get_u32(p, end, &pad))
		return -EBADMSG;
	st32(r + WK(kind), kind);
	st32(r + WK(tid), tid);
	st32(r + WK(tgid), tid + (uint32_t)d);
	st32(r + WK(prio), (uint32_t)prio + PRIO_BASE);
	st32(r + WK(target_cpu), tcpu);
	st32(r + WK(pad), pad);
	return get_comm(st, p, end, r + WK(comm), comm_key(tid, tcpu), m & 1);
}

static unsigned char *put_cpu(const unsigned char *r, unsigned char *o)
{
	o = put_var(o, ld32(r + CP(kind)));
	o = put_var(o, (uint32_t)(ld32(r + CP(state)) + 1u));   /* idle exit ~0 -> 0 */
	o = put_var(o, ld32(r + CP(cpu_id)));
	return put_var(o, ld32(r + CP(pad)));
}

static int get_cpu(const unsigned char **p, const unsigned char *end, unsigned char *r)
{
	uint32_t v[4];
	int k;

	for (k = 0; k < 4; k++)
		if (get_u32(p, end, &v[k]))
			return -EBADMSG;
	st32(r + CP(kind), v[0]);
	st32(r + CP(state), v[1] - 1u);
	st32(r + CP(cpu_id), v[2]);
	st32(r + CP(pad), v[3]);
	return 0;
}

/* The field codec for a record (its type), or 0: SWITCH, WAKE and CPU
 * records at exactly their struct's size. */
static int kcodec(const struct pstate *st, uint64_t type, size_t size)
{
	if (!(st->flags & TB_PACK_KERNEL))
		return 0;
	if ((type == TB_REC_SWITCH && size == sizeof(struct tb_rec_switch)) ||
	    (type == TB_REC_WAKE && size == sizeof(struct tb_rec_wake)) ||
	    (type == TB_REC_CPU && size == sizeof(struct tb_rec_cpu)))
		return (int)type;
	return 0;
}

size_t tb_pack(const unsigned char *raw, size_t len, uint64_t base_ts,
	       unsigned flags, unsigned char *out)
{
	struct pstate st;
	unsigned char *o = out;
	size_t pos = 0;

	pstate_init(&st, base_ts, flags);
	while (pos + HDR <= len) {
		const unsigned char *r = raw + pos;
		uint16_t type = ld16(r), size = ld16(r + 2);
		uint32_t pid = ld32(r + 16), tid = ld32(r + 20);
		uint64_t ts = ld64(r + 8);
		size_t body = HDR, end;
		int k;

		if (size < HDR || size > len - pos)
			break;   /* the writer validated every record */
		o = put_var(o, type);
		o = put_var(o, size / 8u);
		o = put_var(o, (uint32_t)(ld32(r + 4) + 1u));
		o = put_var(o, zz((int64_t)(ts - st.ts)));
		o = put_var(o, zz((int32_t)(pid - st.pid)));
		o = put_var(o, zz((int32_t)(tid - pid)));
		st.ts = ts;
		st.pid = pid;
		pos += size;
		switch (kcodec(&st, type, size)) {
		case TB_REC_SWITCH:
			o = put_switch(&st, r, o);
			continue;
		case TB_REC_WAKE:
			o = put_wake(&st, r, o);
			continue;
		case TB_REC_CPU:
			o = put_cpu(r, o);
			continue;
		}
		if (type == TB_REC_EVENT && size >= EV_FIXED) {
			for (k = 0; k < 3; k++) {
				uint64_t v = ld64(r + 24 + 8 * k);

				o = put_var(o, zz((int64_t)(v - st.ev[k])));
				st.ev[k] = v;
			}
			o = put_var(o, ld16(r + 48));
			o = put_var(o, ld16(r + 50));
			o = put_var(o, ld32(r + 52));
			body = EV_FIXED;
		}
		end = size;
		while (end > body && !r[end - 1])
			end--;
		o = put_var(o, end - body);
		memcpy(o, r + body, end - body);
		o += end - body;
	}
	return (size_t)(o - out);
}

long tb_unpack(const unsigned char *in, size_t len, uint64_t base_ts, unsigned flags,
	       uint32_t nrec, unsigned char **out, size_t *cap, size_t max_out)
{
	const unsigned char *p = in, *end = in + len;
	struct pstate *st;
	size_t olen = 0;
	uint32_t n = 0;
	long ret = -EBADMSG;

	st = malloc(sizeof(*st));   /* the comm cache: 6 KiB, off the stack */
	if (!st)
		return -ENOMEM;
	pstate_init(st, base_ts, flags);
	while (p < end) {
		uint64_t type, size8, cpu, dts, dpid, dtid, v, nb;
		size_t size, body = HDR;
		unsigned char *r;
		uint32_t pid, tid;
		uint64_t ts;
		int k, codec;

		if (get_var(&p, end, &type) || get_var(&p, end, &size8) ||
		    get_var(&p, end, &cpu) || get_var(&p, end, &dts) ||
		    get_var(&p, end, &dpid) || get_var(&p, end, &dtid))
			goto out;
		if (type > 0xffff || size8 < HDR / 8 || size8 > 0xffff / 8 ||
		    cpu > 0xffffffffull || dpid > 0xffffffffull || dtid > 0xffffffffull)
			goto out;
		size = (size_t)size8 * 8;
		if (size > max_out - olen || ++n > nrec)
			goto out;
		if (olen + size > *cap) {
			size_t ncap = *cap ? *cap : 4096;
			unsigned char *np;

			while (ncap < olen + size)
				ncap *= 2;
			if (ncap > max_out)
				ncap = max_out;
			np = realloc(*out, ncap);
			if (!np) {
				ret = -ENOMEM;
				goto out;
			}
			*out = np;
			*cap = ncap;
		}
		r = *out + olen;
		if (size == EV_FIXED)   /* the usual event: a fixed-size memset, inline */
			memset(r, 0, EV_FIXED);
		else
			memset(r, 0, size);
		ts = st->ts + (uint64_t)unzz(dts);
		pid = st->pid + (uint32_t)unzz(dpid);
		tid = pid + (uint32_t)unzz(dtid);
		st->ts = ts;
		st->pid = pid;
		{
			uint16_t t16 = (uint16_t)type, s16 = (uint16_t)size;
			uint32_t c32 = (uint32_t)cpu - 1u;

			memcpy(r, &t16, 2);
			memcpy(r + 2, &s16, 2);
			memcpy(r + 4, &c32, 4);
			memcpy(r + 8, &ts, 8);
			memcpy(r + 16, &pid, 4);
			memcpy(r + 20, &tid, 4);
		}
		olen += size;
		codec = kcodec(st, type, size);
		if (codec) {
			if ((codec == TB_REC_SWITCH && get_switch(st, &p, end, r)) ||
			    (codec == TB_REC_WAKE && get_wake(st, &p, end, r)) ||
			    (codec == TB_REC_CPU && get_cpu(&p, end, r)))
				goto out;
			continue;
		}
		if (type == TB_REC_EVENT && size >= EV_FIXED) {
			uint16_t s;
			uint32_t f;

			for (k = 0; k < 3; k++) {
				if (get_var(&p, end, &v))
					goto out;
				st->ev[k] += (uint64_t)unzz(v);
				memcpy(r + 24 + 8 * k, &st->ev[k], 8);
			}
			for (k = 0; k < 2; k++) {
				if (get_var(&p, end, &v) || v > 0xffff)
					goto out;
				s = (uint16_t)v;
				memcpy(r + 48 + 2 * k, &s, 2);
			}
			if (get_var(&p, end, &v) || v > 0xffffffffull)
				goto out;
			f = (uint32_t)v;
			memcpy(r + 52, &f, 4);
			body = EV_FIXED;
		}
		if (get_var(&p, end, &nb) || nb > size - body || nb > (uint64_t)(end - p))
			goto out;
		if (nb)
			memcpy(r + body, p, nb);
		p += nb;
	}
	if (n == nrec)
		ret = (long)olen;
out:
	free(st);
	return ret;
}
