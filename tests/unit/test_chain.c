// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_chain.c - the readers' two hash tables. The chained one
 * (lib/util/chain.h): every entry is found by its hash after the table has
 * doubled several times, entries that share a bucket are all reachable, a
 * removed one is gone and the others stay, and the list holds each entry
 * once. The map by number (lib/util/hmap.h): every key, 0 and ~0 included,
 * finds its value after growing, keys whose low bits collide too, a put
 * on a key it holds replaces its value, and vals[] holds each value once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../lib/util/chain.h"
#include "../../lib/util/hmap.h"

struct ent {
	struct tb_chain_link l;
	int key;
};

#define N 5000

static struct ent *find(const struct tb_chain *t, uint64_t h, int key)
{
	for (struct tb_chain_link *x = tb_chain_first(t, h); x; x = x->next)
		if (x->h == h && ((struct ent *)x)->key == key)
			return (struct ent *)x;
	return NULL;
}

static int freed;

static void free_ent(void *e)
{
	freed++;
	free(e);
}

static void test_add_find_del_list(void **state)
{
	struct tb_chain t = { 0 };
	struct ent *e;
	size_t n;
	void **v;
	char *seen;

	(void)state;
	assert_null(tb_chain_first(&t, 7));
	for (int i = 0; i < N; i++) {
		e = calloc(1, sizeof(*e));
		assert_non_null(e);
		e->key = i;
		e->l.h = (uint64_t)(i % 97) << 20;   /* many keys per hash and bucket */
		assert_int_equal(tb_chain_add(&t, &e->l), 0);
	}
	assert_int_equal(t.n, N);
	assert_true(t.cap >= N);
	for (int i = 0; i < N; i++)
		assert_non_null(find(&t, (uint64_t)(i % 97) << 20, i));
	for (int i = 0; i < N; i += 2) {
		e = find(&t, (uint64_t)(i % 97) << 20, i);
		tb_chain_del(&t, &e->l);
		free(e);
	}
	assert_int_equal(t.n, N / 2);
	for (int i = 0; i < N; i++)
		assert_true((find(&t, (uint64_t)(i % 97) << 20, i) != NULL) == (i % 2 == 1));
	v = tb_chain_list(&t, &n);
	assert_non_null(v);
	assert_int_equal(n, N / 2);
	seen = calloc(N, 1);
	assert_non_null(seen);
	for (size_t k = 0; k < n; k++) {
		int key = ((struct ent *)v[k])->key;

		assert_true(key % 2 == 1 && !seen[key]);
		seen[key] = 1;
	}
	free(seen);
	free(v);
	tb_chain_free(&t, free_ent);
	assert_int_equal(freed, N / 2);
	assert_null(t.b);
	assert_int_equal(t.n, 0);
}

/* Key i: spread, with runs equal in their low 20 bits, 0 and ~0. */
static uint64_t hkey(int i)
{
	if (i == 0)
		return 0;
	if (i == 1)
		return ~0ull;
	return i % 3 ? (uint64_t)i << 20 : (uint64_t)i * 0x9e3779b97f4a7c15ull;
}

static void test_hmap(void **state)
{
	static int vals[2 * N];   /* first values at N + i, replaced at i */
	struct tb_hmap m = { 0 };
	size_t n = 0;
	char *seen;

	(void)state;
	assert_null(tb_hmap_get(&m, 5));
	for (int i = 0; i < N; i++)
		assert_int_equal(tb_hmap_put(&m, hkey(i), &vals[N + i]), 0);
	for (int i = 0; i < N; i += 2)   /* replaced, not added */
		assert_int_equal(tb_hmap_put(&m, hkey(i), &vals[i]), 0);
	assert_int_equal(m.n, N);
	assert_true(m.cap >= 2 * N);
	for (int i = 0; i < N; i++)
		assert_ptr_equal(tb_hmap_get(&m, hkey(i)), &vals[i % 2 ? N + i : i]);
	assert_null(tb_hmap_get(&m, 12345));
	assert_null(tb_hmap_get(&m, (uint64_t)N << 20));
	seen = calloc(2 * N, 1);
	assert_non_null(seen);
	for (size_t k = 0; k < m.cap; k++) {
		if (!m.vals[k])
			continue;
		int v = (int)((int *)m.vals[k] - vals);

		assert_true(v % N % 2 == (v >= N) && !seen[v]);
		seen[v] = 1;
		n++;
	}
	assert_int_equal(n, N);
	free(seen);
	tb_hmap_free(&m);
	assert_null(m.vals);
	assert_int_equal(m.n, 0);
	assert_null(tb_hmap_get(&m, hkey(3)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_find_del_list),
		cmocka_unit_test(test_hmap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
