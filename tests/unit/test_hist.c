// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_hist.c - the streaming histogram of tracebpf report: exact count,
 * min, max and sum; every quantile within TB_HIST_REL_ERROR of the exact
 * value of its rank, on distributions with known answers; memory bounded
 * by the powers of two used, not the values added; a merge of histograms
 * the same histogram as adding all their values to one.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../user/report/hist.h"
#include "rnd.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The exact value of rank ceil(q * n) of the sorted v. */
static uint64_t exact_quantile(const uint64_t *v, size_t n, double q)
{
	size_t rank = (size_t)(q * (double)n);

	if ((double)rank < q * (double)n)
		rank++;
	if (rank < 1)
		rank = 1;
	return v[rank - 1];
}

/* Adds v[0..n) and checks count, min, max, sum and the quantiles. */
static void check_values(uint64_t *v, size_t n)
{
	static const double qs[] = { 0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1 };
	struct tb_hist h = { 0 };
	uint64_t sum = 0;

	for (size_t i = 0; i < n; i++) {
		assert_int_equal(tb_hist_add(&h, v[i]), 0);
		sum += v[i];
	}
	qsort(v, n, sizeof(*v), cmp_u64);
	assert_int_equal(h.count, n);
	assert_int_equal(h.min, v[0]);
	assert_int_equal(h.max, v[n - 1]);
	assert_int_equal(h.sum, sum);
	for (size_t i = 0; i < sizeof(qs) / sizeof(*qs); i++) {
		uint64_t want = exact_quantile(v, n, qs[i]), got = tb_hist_quantile(&h, qs[i]);
		double err = want ? (double)(got > want ? got - want : want - got) / (double)want : 0;

		if (err > TB_HIST_REL_ERROR)
			fail_msg("q=%g: expected %llu, got %llu (error %g > %g)", qs[i],
				 (unsigned long long)want, (unsigned long long)got, err,
				 TB_HIST_REL_ERROR);
	}
	tb_hist_free(&h);
}


static void test_small_values_are_exact(void **state)
{
	struct tb_hist h = { 0 };

	(void)state;
	for (uint64_t v = 0; v < TB_HIST_EXACT; v++)
		assert_int_equal(tb_hist_add(&h, v), 0);
	for (uint64_t v = 0; v < TB_HIST_EXACT; v++)
		assert_int_equal(tb_hist_quantile(&h, (double)(v + 1) / TB_HIST_EXACT), v);
	tb_hist_free(&h);
}

static void test_uniform(void **state)
{
	size_t n = 200000;
	uint64_t *v = malloc(n * sizeof(*v));

	(void)state;
	assert_non_null(v);
	for (size_t i = 0; i < n; i++)
		v[i] = 1000 + rnd() % 10000000;
	check_values(v, n);
	free(v);
}

/* Durations over 12 decades, as a trace's slices can span. */
static void test_log_spread(void **state)
{
	size_t n = 200000;
	uint64_t *v = malloc(n * sizeof(*v));

	(void)state;
	assert_non_null(v);
	for (size_t i = 0; i < n; i++)
		v[i] = (rnd() >> (rnd() % 64)) | 1;
	check_values(v, n);
	free(v);
}

/* Every bucket's edges: the values next to powers of two and the largest. */
static void test_bucket_edges(void **state)
{
	uint64_t v[64 * 3 + 1];
	size_t n = 0;

	(void)state;
	for (int b = 1; b < 64; b++) {
		v[n++] = (1ull << b) - 1;
		v[n++] = 1ull << b;
		v[n++] = (1ull << b) + 1;
	}
	v[n++] = UINT64_MAX;
	check_values(v, n);
}

static void test_one_value(void **state)
{
	uint64_t v[1000];

	(void)state;
	for (size_t i = 0; i < 1000; i++)
		v[i] = 123456789;
	check_values(v, 1000);
}

static void test_empty(void **state)
{
	struct tb_hist h = { 0 };

	(void)state;
	assert_int_equal(tb_hist_quantile(&h, 0.5), 0);
	assert_int_equal(tb_hist_bytes(&h), 0);
	tb_hist_free(&h);
}

/* A million values in one decade use a handful of buckets arrays, not
 * memory per value. */
static void test_memory_is_bounded(void **state)
{
	struct tb_hist h = { 0 };

	(void)state;
	for (size_t i = 0; i < 1000000; i++)
		assert_int_equal(tb_hist_add(&h, 1000000 + rnd() % 9000000), 0);
	/* 10^6..10^7 meets 5 powers of two (2^19..2^23): 5 arrays of 64 */
	assert_true(tb_hist_bytes(&h) == 5 * TB_HIST_SUB * sizeof(uint64_t));
	for (size_t i = 0; i < 100000; i++)
		assert_int_equal(tb_hist_add(&h, rnd()), 0);
	assert_true(tb_hist_bytes(&h) <= (TB_HIST_EXACT + TB_HIST_OCTAVES * TB_HIST_SUB) *
					 sizeof(uint64_t));
	tb_hist_free(&h);
}

/* b and a hold the same values: every field and bucket is equal. */
static void assert_same_hist(const struct tb_hist *a, const struct tb_hist *b)
{
	assert_int_equal(a->count, b->count);
	assert_int_equal(a->min, b->min);
	assert_int_equal(a->max, b->max);
	assert_int_equal(a->sum, b->sum);
	assert_int_equal(a->lo, b->lo);
	assert_int_equal(a->nblocks, b->nblocks);
	assert_memory_equal(a->b, b->b, tb_hist_bytes(a));
	for (int i = 0; i <= 1000; i++)
		assert_int_equal(tb_hist_quantile(a, i / 1000.0), tb_hist_quantile(b, i / 1000.0));
}

/* Values of three "threads" over different powers of two: the first
 * short, the second long, the third across both. */
static uint64_t part_value(int part)
{
	switch (part) {
	case 0: return 50 + rnd() % 5000;
	case 1: return 1000000 + rnd() % 100000000;
	default: return (rnd() >> (rnd() % 64)) | 1;
	}
}

/* Merged in every order (into an empty one, and a part's range below,
 * above and across the merge's so far), three histograms are the one
 * all their values make: same buckets, so same quantiles. */
static void test_merge_equals_adding_all(void **state)
{
	static const int orders[][3] = { { 0, 1, 2 }, { 1, 0, 2 }, { 2, 1, 0 }, { 1, 2, 0 } };
	struct tb_hist parts[3] = { { 0 } }, all = { 0 };

	(void)state;
	for (int p = 0; p < 3; p++)
		for (int i = 0; i < 20000 * (p + 1); i++) {
			uint64_t v = part_value(p);

			assert_int_equal(tb_hist_add(&parts[p], v), 0);
			assert_int_equal(tb_hist_add(&all, v), 0);
		}
	for (size_t o = 0; o < sizeof(orders) / sizeof(*orders); o++) {
		struct tb_hist m = { 0 };

		for (int i = 0; i < 3; i++)
			assert_int_equal(tb_hist_merge(&m, &parts[orders[o][i]]), 0);
		assert_same_hist(&m, &all);
		tb_hist_free(&m);
	}
	for (int p = 0; p < 3; p++)
		tb_hist_free(&parts[p]);
	tb_hist_free(&all);
}

/* Two threads: 990 slices of 100 ns (exact buckets), 10 of 1 ms. The
 * trace's p50 and p99 are 100 ns, not the mean of the threads' (as
 * averaging would give). */
static void test_merge_is_not_an_average(void **state)
{
	struct tb_hist fast = { 0 }, slow = { 0 }, m = { 0 };

	(void)state;
	for (int i = 0; i < 990; i++)
		assert_int_equal(tb_hist_add(&fast, 100), 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(tb_hist_add(&slow, 1000000), 0);
	assert_int_equal(tb_hist_merge(&m, &slow), 0);
	assert_int_equal(tb_hist_merge(&m, &fast), 0);
	assert_int_equal(m.count, 1000);
	assert_int_equal(m.sum, 990 * 100 + 10 * 1000000);
	assert_int_equal(m.min, 100);
	assert_int_equal(m.max, 1000000);
	assert_int_equal(tb_hist_quantile(&m, 0.5), 100);
	assert_int_equal(tb_hist_quantile(&m, 0.99), 100);
	assert_int_equal(tb_hist_quantile(&m, 0.995), 1000000);
	tb_hist_free(&fast);
	tb_hist_free(&slow);
	tb_hist_free(&m);
}

/* An empty histogram merges as nothing, and into one as a copy. */
static void test_merge_empty(void **state)
{
	struct tb_hist empty = { 0 }, h = { 0 }, copy = { 0 }, before = { 0 };

	(void)state;
	for (uint64_t v = 1; v < 1000000; v *= 3) {
		assert_int_equal(tb_hist_add(&h, v), 0);
		assert_int_equal(tb_hist_add(&before, v), 0);
	}
	assert_int_equal(tb_hist_merge(&h, &empty), 0);
	assert_same_hist(&h, &before);
	assert_int_equal(tb_hist_merge(&copy, &h), 0);
	assert_same_hist(&copy, &h);
	assert_int_equal(tb_hist_merge(&empty, &(struct tb_hist){ 0 }), 0);
	assert_int_equal(empty.count, 0);
	assert_int_equal(tb_hist_bytes(&empty), 0);
	tb_hist_free(&h);
	tb_hist_free(&copy);
	tb_hist_free(&before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_values_are_exact),
		cmocka_unit_test(test_uniform),
		cmocka_unit_test(test_log_spread),
		cmocka_unit_test(test_bucket_edges),
		cmocka_unit_test(test_one_value),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_memory_is_bounded),
		cmocka_unit_test(test_merge_equals_adding_all),
		cmocka_unit_test(test_merge_is_not_an_average),
		cmocka_unit_test(test_merge_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
