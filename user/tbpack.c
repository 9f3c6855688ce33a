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
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tbpack.h"

#define HDR 24u
#define EV_FIXED 56u

struct pstate {
	uint64_t ts;
	uint32_t pid;
	uint64_t ev[3];
};

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
static int get_var(const unsigned char **p, const unsigned char *end, uint64_t *v)
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

static uint64_t ld64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static uint32_t ld32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint16_t ld16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }

size_t tb_pack_bound(size_t len)
{
	/* per record (>= 24 bytes): at most 6 + 6 varints (10 bytes) + n's
	 * varint (3) more than the record itself */
	return len + (len / HDR + 1) * (12 * 10 + 3);
}

size_t tb_pack(const unsigned char *raw, size_t len, uint64_t base_ts,
	       unsigned char *out)
{
	struct pstate st = { .ts = base_ts };
	unsigned char *o = out;
	size_t pos = 0;

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
		if (type == 1 && size >= EV_FIXED) {
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
		pos += size;
	}
	return (size_t)(o - out);
}

long tb_unpack(const unsigned char *in, size_t len, uint64_t base_ts,
	       uint32_t nrec, unsigned char **out, size_t *cap, size_t max_out)
{
	const unsigned char *p = in, *end = in + len;
	struct pstate st = { .ts = base_ts };
	size_t olen = 0;
	uint32_t n = 0;

	while (p < end) {
		uint64_t type, size8, cpu, dts, dpid, dtid, v, nb;
		size_t size, body = HDR;
		unsigned char *r;
		uint32_t pid, tid;
		uint64_t ts;
		int k;

		if (get_var(&p, end, &type) || get_var(&p, end, &size8) ||
		    get_var(&p, end, &cpu) || get_var(&p, end, &dts) ||
		    get_var(&p, end, &dpid) || get_var(&p, end, &dtid))
			return -EBADMSG;
		if (type > 0xffff || size8 < HDR / 8 || size8 > 0xffff / 8 ||
		    cpu > 0xffffffffull || dpid > 0xffffffffull || dtid > 0xffffffffull)
			return -EBADMSG;
		size = (size_t)size8 * 8;
		if (size > max_out - olen || ++n > nrec)
			return -EBADMSG;
		if (olen + size > *cap) {
			size_t ncap = *cap ? *cap : 4096;
			unsigned char *np;

			while (ncap < olen + size)
				ncap *= 2;
			if (ncap > max_out)
				ncap = max_out;
			np = realloc(*out, ncap);
			if (!np)
				return -ENOMEM;
			*out = np;
			*cap = ncap;
		}
		r = *out + olen;
		memset(r, 0, size);
		ts = st.ts + (uint64_t)unzz(dts);
		pid = st.pid + (uint32_t)unzz(dpid);
		tid = pid + (uint32_t)unzz(dtid);
		st.ts = ts;
		st.pid = pid;
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
		if (type == 1 && size >= EV_FIXED) {
			uint16_t s;
			uint32_t f;

			for (k = 0; k < 3; k++) {
				if (get_var(&p, end, &v))
					return -EBADMSG;
				st.ev[k] += (uint64_t)unzz(v);
				memcpy(r + 24 + 8 * k, &st.ev[k], 8);
			}
			for (k = 0; k < 2; k++) {
				if (get_var(&p, end, &v) || v > 0xffff)
					return -EBADMSG;
				s = (uint16_t)v;
				memcpy(r + 48 + 2 * k, &s, 2);
			}
			if (get_var(&p, end, &v) || v > 0xffffffffull)
				return -EBADMSG;
			f = (uint32_t)v;
			memcpy(r + 52, &f, 4);
			body = EV_FIXED;
		}
		if (get_var(&p, end, &nb) || nb > size - body || nb > (uint64_t)(end - p))
			return -EBADMSG;
		memcpy(r + body, p, nb);
		p += nb;
		olen += size;
	}
	if (n != nrec)
		return -EBADMSG;
	return (long)olen;
}
