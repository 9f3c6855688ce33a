// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* hist.c - a streaming log-linear histogram of durations (hist.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/hist.h"

/* Buckets are numbered from 0: v itself below TB_HIST_EXACT, then
 * TB_HIST_SUB per power of two; blocks are TB_HIST_SUB buckets each. */
static unsigned bucket_of(uint64_t v)
{
	unsigned b, shift;

	if (v < TB_HIST_EXACT)
		return (unsigned)v;
	b = 63 - (unsigned)__builtin_clzll(v);   /* >= 7 */
	shift = b - 6;
	return TB_HIST_EXACT + (b - 7) * TB_HIST_SUB + (unsigned)(v >> shift) - TB_HIST_SUB;
}

/* What a quantile in bucket i reads as: the value itself, or the
 * bucket's midpoint. */
static uint64_t value_of(unsigned i)
{
	unsigned k, sub, shift;

	if (i < TB_HIST_EXACT)
		return i;
	k = (i - TB_HIST_EXACT) / TB_HIST_SUB;
	sub = (i - TB_HIST_EXACT) % TB_HIST_SUB;
	shift = k + 1;
	return ((uint64_t)(TB_HIST_SUB + sub) << shift) + (1ull << (shift - 1));
}

/* Makes the blocks from lo to hi (inclusive) part of h's range. */
static int cover(struct tb_hist *h, uint32_t lo, uint32_t hi)
{
	uint32_t nlo = h->nblocks && h->lo < lo ? h->lo : lo;
	uint32_t nhi = h->nblocks && h->lo + h->nblocks - 1 > hi ? h->lo + h->nblocks - 1 : hi;
	uint32_t n = nhi - nlo + 1, shift = h->nblocks ? h->lo - nlo : 0;
	uint64_t *b;

	if (h->nblocks && n == h->nblocks)
		return 0;
	b = realloc(h->b, (size_t)n * TB_HIST_SUB * sizeof(*b));
	if (!b)
		return -ENOMEM;
	if (shift)
		memmove(b + (size_t)shift * TB_HIST_SUB, b,
			(size_t)h->nblocks * TB_HIST_SUB * sizeof(*b));
	memset(b, 0, (size_t)shift * TB_HIST_SUB * sizeof(*b));
	memset(b + (size_t)(shift + h->nblocks) * TB_HIST_SUB, 0,
	       (size_t)(n - shift - h->nblocks) * TB_HIST_SUB * sizeof(*b));
	h->b = b;
	h->lo = nlo;
	h->nblocks = n;
	return 0;
}

int tb_hist_add(struct tb_hist *h, uint64_t v)
{
	unsigned i = bucket_of(v);
	uint32_t blk = i / TB_HIST_SUB;

	if (!h->nblocks || blk < h->lo || blk >= h->lo + h->nblocks) {
		int err = cover(h, blk, blk);

		if (err)
			return err;
	}
	h->b[i - h->lo * TB_HIST_SUB]++;
	if (!h->count || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->count++;
	h->sum += v;
	return 0;
}

int tb_hist_merge(struct tb_hist *dst, const struct tb_hist *src)
{
	size_t off, n = (size_t)src->nblocks * TB_HIST_SUB;
	int err;

	if (!src->count)
		return 0;
	err = cover(dst, src->lo, src->lo + src->nblocks - 1);
	if (err)
		return err;
	off = (size_t)(src->lo - dst->lo) * TB_HIST_SUB;
	for (size_t i = 0; i < n; i++)
		dst->b[off + i] += src->b[i];
	if (!dst->count || src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	dst->count += src->count;
	dst->sum += src->sum;
	return 0;
}

uint64_t tb_hist_quantile(const struct tb_hist *h, double q)
{
	double want = q * (double)h->count;
	uint64_t rank, seen = 0, v;
	size_t n = (size_t)h->nblocks * TB_HIST_SUB;

	if (!h->count)
		return 0;
	rank = (uint64_t)want;
	if ((double)rank < want)
		rank++;   /* ceil */
	if (rank < 1)
		rank = 1;
	if (rank > h->count)
		rank = h->count;
	for (size_t i = 0; i < n; i++) {
		if ((seen += h->b[i]) < rank)
			continue;
		v = value_of((unsigned)(i + (size_t)h->lo * TB_HIST_SUB));
		return v < h->min ? h->min : v > h->max ? h->max : v;
	}
	return h->max;
}

size_t tb_hist_bytes(const struct tb_hist *h)
{
	return (size_t)h->nblocks * TB_HIST_SUB * sizeof(uint64_t);
}

void tb_hist_free(struct tb_hist *h)
{
	free(h->b);
	*h = (struct tb_hist){ 0 };
}
