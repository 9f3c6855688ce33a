// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * report_aggregate.c - tracebpf report's tables in the order shown:
 * names by the --sort key, threads by (pid, tid), counter series.
 */
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

static uint64_t key_count(const struct key *k)
{
	return k->instant ? k->instants : k->hist.count;
}

static uint64_t sort_value(const struct key *k, enum sort_key by)
{
	switch (by) {
	case SORT_SELF:
		return k->self;
	case SORT_COUNT:
		return key_count(k);
	case SORT_MAX:
		return k->hist.max;
	case SORT_MEAN:
		return k->hist.count ? k->hist.sum / k->hist.count : 0;
	default:
		return k->hist.sum;
	}
}

static int cmp_names(const struct key *x, const struct key *y)
{
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->name, y->name, n);

	if (c)
		return c;
	if (x->name_len != y->name_len)
		return x->name_len < y->name_len ? -1 : 1;
	return strcmp(x->cat, y->cat);
}

int report_cmp_keys(const void *a, const void *b, void *by)
{
	const struct key *x = *(void *const *)a, *y = *(void *const *)b;
	enum sort_key key = *(enum sort_key *)by;
	uint64_t vx = sort_value(x, key), vy = sort_value(y, key);

	if (vx != vy)
		return vx > vy ? -1 : 1;
	if (x->incomplete_total != y->incomplete_total)
		return x->incomplete_total > y->incomplete_total ? -1 : 1;
	return cmp_names(x, y);
}

struct key **report_sorted_keys(const struct rthread *t, bool instant, enum sort_key by,
			       size_t *n)
{
	size_t all, i;
	struct key **v = (struct key **)tb_chain_list(&t->keys, &all);

	*n = 0;
	if (!v)
		return NULL;
	for (i = 0; i < all; i++)
		if (v[i]->instant == instant)
			v[(*n)++] = v[i];
	qsort_r(v, *n, sizeof(*v), report_cmp_keys, &by);
	return v;
}

static int cmp_threads(const void *a, const void *b)
{
	const struct rthread *x = *(void *const *)a, *y = *(void *const *)b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int cmp_series(const void *a, const void *b)
{
	const struct series *x = *(void *const *)a, *y = *(void *const *)b;
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if ((c = strcmp(x->cat, y->cat)))
		return c;
	if ((c = memcmp(x->name, y->name, n)) || x->name_len != y->name_len)
		return c ? c : x->name_len < y->name_len ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return strcmp(x->series, y->series);
}

struct rthread **report_sorted_threads(const struct report *r, size_t *n)
{
	size_t all, i;
	struct rthread **v = (struct rthread **)tb_chain_list(&r->threads, &all);

	*n = 0;
	if (!v)
		return NULL;
	for (i = 0; i < all; i++)
		if (v[i]->slices || v[i]->instants || v[i]->counters || v[i]->async ||
		    v[i]->flows || v[i]->keys.n)
			v[(*n)++] = v[i];
	qsort(v, *n, sizeof(*v), cmp_threads);
	return v;
}

struct series **report_sorted_series(const struct report *r, size_t *n)
{
	struct series **v = (struct series **)tb_chain_list(&r->counters, n);

	if (v)
		qsort(v, *n, sizeof(*v), cmp_series);
	return v;
}
