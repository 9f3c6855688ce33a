// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * report_aggregate.c - tracebpf report's levels above the thread, and
 * its tables in the order shown.
 *
 * Once the model has run: each process's names are its threads' merged,
 * and the whole trace's the processes' merged. Counts, totals, self times
 * and incomplete ones add up; the histograms merge bucket by bucket
 * (tb_hist_merge), so a process's or the trace's percentiles are those of
 * all its slices, never an average of its threads'. This costs one pass
 * over the threads' keys, nothing per event. Then names sort by the
 * --sort key, threads by (pid, tid), counter series by process.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

/* The --sort keys by name: the option, and the tables' headings. */
const char *const report_sort_names[NSORT] = {
	[SORT_TOTAL] = "total", [SORT_SELF] = "self", [SORT_COUNT] = "count",
	[SORT_MAX] = "max", [SORT_MEAN] = "mean",
};

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

struct key **report_sorted_keys(const struct level *lv, bool instant, enum sort_key by,
				size_t *n)
{
	size_t all, i;
	struct key **v = (struct key **)tb_chain_list(&lv->keys, &all);

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

static bool has_events(const struct level *lv)
{
	return lv->slices || lv->instants || lv->counters || lv->async || lv->flows || lv->keys.n;
}

/* r->shown: the threads with something to show, sorted by (pid, tid). */
static int sort_threads(struct report *r)
{
	size_t all, i;
	struct rthread **v = (struct rthread **)tb_chain_list(&r->threads, &all);

	if (!v)
		return -ENOMEM;
	for (i = 0; i < all; i++)
		if (has_events(&v[i]->lv))
			v[r->nshown++] = v[i];
	qsort(v, r->nshown, sizeof(*v), cmp_threads);
	r->shown = v;
	return 0;
}

static int sort_series(struct report *r)
{
	r->series = (struct series **)tb_chain_list(&r->counters, &r->nseries);
	if (!r->series)
		return -ENOMEM;
	qsort(r->series, r->nseries, sizeof(*r->series), cmp_series);
	return 0;
}

/* ------------------------------------------------------------ merging -- */

/* Adds k's numbers to the key of its name in keys. */
static int merge_key(struct tb_chain *keys, const struct key *k)
{
	struct key *d = report_key(keys, k->cat, k->name, k->name_len, k->instant);

	if (!d)
		return -ENOMEM;
	d->self += k->self;
	d->instants += k->instants;
	d->incomplete += k->incomplete;
	d->incomplete_total += k->incomplete_total;
	d->unpaired += k->unpaired;
	return tb_hist_merge(&d->hist, &k->hist);
}

/* Adds src's names and counts to dst. */
static int merge_level(struct level *dst, const struct level *src)
{
	size_t n;
	struct key **k = (struct key **)tb_chain_list(&src->keys, &n);
	int err = k ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < n; i++)
		err = merge_key(&dst->keys, k[i]);
	free(k);
	dst->slices += src->slices;
	dst->incomplete += src->incomplete;
	dst->instants += src->instants;
	dst->counters += src->counters;
	dst->async += src->async;
	dst->flows += src->flows;
	return err;
}

/* The process of the n threads t[0..n), all of one pid. */
static int merge_process(struct rprocess *p, struct rthread **t, size_t n)
{
	int err = 0;

	*p = (struct rprocess){ .pid = t[0]->pid, .name = t[0]->process,
				.name_len = t[0]->process_len, .threads = t, .nthreads = n };
	for (size_t i = 0; !err && i < n; i++)
		err = merge_level(&p->lv, &t[i]->lv);
	return err;
}

/* The threads of r->shown[i..] with r->shown[i]'s pid. */
static size_t threads_of_pid(const struct report *r, size_t i)
{
	size_t n = 1;

	while (i + n < r->nshown && r->shown[i + n]->pid == r->shown[i]->pid)
		n++;
	return n;
}

/* Each process from its threads, the whole trace from the processes. */
static int merge_processes(struct report *r)
{
	int err = 0;

	r->procs = calloc(r->nshown ? r->nshown : 1, sizeof(*r->procs));
	if (!r->procs)
		return -ENOMEM;
	for (size_t i = 0, n; !err && i < r->nshown; i += n) {
		struct rprocess *p = &r->procs[r->nprocs++];

		n = threads_of_pid(r, i);
		err = merge_process(p, r->shown + i, n);
		if (!err)
			err = merge_level(&r->whole, &p->lv);
	}
	return err;
}

int report_aggregate(struct report *r)
{
	int err = sort_threads(r);

	if (!err)
		err = sort_series(r);
	if (!err)
		err = merge_processes(r);
	return err;
}
