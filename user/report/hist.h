/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hist.h - a streaming histogram of durations (ns) in bounded memory, for
 * percentiles over any number of values (tracebpf report), and merged
 * exactly (a thread's into its process's, a process's into the trace's).
 *
 * Log-linear buckets, as HdrHistogram's: values below 128 each have their
 * own bucket; above, every power of two [2^b, 2^(b+1)) is split into 64
 * equal buckets, each 2^(b-6) wide. A bucket is then at most 1/64 of its
 * lower bound wide, and its midpoint is within 1/128 (0.78 %) of every
 * value in it. A percentile is read as the midpoint of the bucket that
 * holds the value of that rank (clamped to the exact min and max): within
 * TB_HIST_REL_ERROR of the true value of that rank, whatever the
 * distribution. Count, min, max and the sum are exact.
 *
 * Memory: 64 counters (512 bytes) per power of two from the smallest
 * value's to the largest's (the values below 128 count as two), in one
 * array grown as values fall outside it: at most 59 of them (30 KiB)
 * however many values are added, and 48 bytes for the struct.
 */
#ifndef TRACEBPF_HIST_H
#define TRACEBPF_HIST_H

#include <stddef.h>
#include <stdint.h>

#define TB_HIST_EXACT 128            /* values below are counted exactly */
#define TB_HIST_SUB 64               /* buckets per power of two above */
#define TB_HIST_OCTAVES 57           /* powers of two 2^7 .. 2^63 */
#define TB_HIST_REL_ERROR (1.0 / 128)

struct tb_hist {
	uint64_t count, min, max, sum;   /* sum wraps past 2^64 ns (584 years) */
	/* counters of the buckets of blocks lo .. lo + nblocks - 1, block k
	 * holding buckets k * TB_HIST_SUB ..: blocks 0 and 1 the exact
	 * values, block 2 + j the power of two 2^(7 + j) */
	uint64_t *b;
	uint32_t lo, nblocks;
};

/* A zeroed struct tb_hist is empty. 0 or -ENOMEM (v not counted). */
int tb_hist_add(struct tb_hist *h, uint64_t v);
/* Adds src's values to dst: dst is then what adding each of them to it
 * would have made (the same buckets, count, min, max and sum), so the
 * quantiles of a merge are those of all the values, never an average of
 * the parts'. 0 or -ENOMEM (dst unchanged). */
int tb_hist_merge(struct tb_hist *dst, const struct tb_hist *src);
/* The value of rank ceil(q * count) (q in [0, 1]; q = 0: the min), within
 * TB_HIST_REL_ERROR of it; 0 for an empty histogram. */
uint64_t tb_hist_quantile(const struct tb_hist *h, double q);
/* Bytes held by h's buckets. */
size_t tb_hist_bytes(const struct tb_hist *h);
void tb_hist_free(struct tb_hist *h);

#endif /* TRACEBPF_HIST_H */
