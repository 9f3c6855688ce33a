// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * chain.c - a chained hash table of intrusive entries (see chain.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "util/chain.h"

#define CHAIN_MIN 64   /* buckets of a table's first allocation */

static int grow(struct tb_chain *t)
{
	size_t cap = t->cap ? 2 * t->cap : CHAIN_MIN;
	struct tb_chain_link **b = calloc(cap, sizeof(*b)), *x, *next;

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++)
		for (x = t->b[i]; x; x = next) {
			next = x->next;
			x->next = b[x->h & (cap - 1)];
			b[x->h & (cap - 1)] = x;
		}
	free(t->b);
	t->b = b;
	t->cap = cap;
	return 0;
}

int tb_chain_add(struct tb_chain *t, struct tb_chain_link *e)
{
	if (t->n + 1 > t->cap && grow(t))
		return -ENOMEM;
	e->next = t->b[e->h & (t->cap - 1)];
	t->b[e->h & (t->cap - 1)] = e;
	t->n++;
	return 0;
}

struct tb_chain_link *tb_chain_first(const struct tb_chain *t, uint64_t h)
{
	return t->cap ? t->b[h & (t->cap - 1)] : NULL;
}

void tb_chain_del(struct tb_chain *t, struct tb_chain_link *e)
{
	struct tb_chain_link **p = &t->b[e->h & (t->cap - 1)];

	while (*p != e)
		p = &(*p)->next;
	*p = e->next;
	t->n--;
}

void **tb_chain_list(const struct tb_chain *t, size_t *n)
{
	void **v = malloc((t->n + 1) * sizeof(*v));

	*n = 0;
	for (size_t i = 0; v && i < t->cap; i++)
		for (struct tb_chain_link *x = t->b[i]; x; x = x->next)
			v[(*n)++] = x;
	return v;
}

void tb_chain_free(struct tb_chain *t, void (*free_entry)(void *))
{
	for (size_t i = 0; i < t->cap; i++) {
		struct tb_chain_link *x = t->b[i], *next;

		for (; x; x = next) {
			next = x->next;
			if (free_entry)
				free_entry(x);
		}
	}
	free(t->b);
	*t = (struct tb_chain){ 0 };
}
