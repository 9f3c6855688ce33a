// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_chain.c - the readers' chained hash table (lib/chain.h): every
 * entry is found by its hash after the table has doubled several times,
 * entries that share a bucket are all reachable, a removed one is gone and
 * the others stay, and the list holds each entry once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../lib/chain.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_find_del_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
