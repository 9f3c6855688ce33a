// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * report.c - `tracebpf report FILE`: a summary of a trace on the terminal
 * (or as one JSON document), streaming, in bounded memory.
 *
 * It is a sink of the model convert builds (model.h): the same slices,
 * matched and cut the same way, never re-derived. What was lost comes
 * first. Then, per process and thread, the slices by name with count,
 * total and self time (total minus the slices directly inside, on the same
 * thread), mean, p50, p99 and max; percentiles come from a log-linear
 * histogram per name (hist.h: within 0.79 %), so memory grows with the
 * distinct (thread, category, name) keys, never with the events. Slices
 * left open or cut at a gap are counted apart, never mixed with complete
 * ones. Then the counters: min, max and last value per series.
 * With filters (filter.h, the options convert takes) the model hands on
 * only the events they keep, decided as convert decides; the losses stay
 * the whole trace's. docs/tracebpf-report.md describes the output.
 */
#include <argp.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "filter_args.h"
#include "hist.h"
#include "json.h"
#include "model.h"
#include "chain.h"
#include "report.h"
#include "tbio.h"

#define PFX "tracebpf: report: "
#define TOP_TEXT 10   /* rows per table on the terminal unless --top */

enum sort_key { SORT_TOTAL, SORT_SELF, SORT_COUNT, SORT_MAX, SORT_MEAN };

static const char *const sort_names[] = {
	[SORT_TOTAL] = "total", [SORT_SELF] = "self", [SORT_COUNT] = "count",
	[SORT_MAX] = "max", [SORT_MEAN] = "mean",
};

struct report_opts {
	const char *in;             /* trace file, "-" = stdin */
	enum sort_key sort;
	long top;                   /* rows per table; 0: all, -1: default */
	bool json;
	FILE *out;                  /* where the report goes */
	struct tb_filter_args filter;   /* --pid, --tid, --cat, --name, --time */
};

/* ------------------------------------------------------- hash tables -- */

static uint64_t str_hash(uint64_t h, const char *p, size_t n)
{
	return tb_hash64(tb_hash_bytes(h, p, n));
}

/* -------------------------------------------------------------- model -- */

/* What the slices (or instants) of one name on one thread add up to. */
struct key {
	struct tb_chain_link l;
	char *cat, *name;           /* owned; name may hold any byte */
	size_t name_len;
	bool instant;               /* instants: count only */
	struct tb_hist hist;        /* complete slices' durations: count, sum, max */
	uint64_t self;              /* of the complete slices */
	uint64_t instants;
	uint64_t incomplete, incomplete_total;   /* left open, or cut at a gap */
	uint64_t unpaired;          /* a begin or an end without its other half */
};

/* A site the thread has seen, and its key (sites of one name share it). */
struct site_key {
	struct tb_chain_link l;
	const struct site *site;
	struct key *key;
};

struct rthread {
	struct tb_chain_link l;
	uint64_t pid;               /* the process incarnation's, as events carry it */
	uint32_t tid;
	char *name, *process;       /* convert's names, set at the end */
	size_t name_len, process_len;   /* (an app-set name may hold a NUL) */
	struct tb_chain keys;            /* struct key by (kind, cat, name) */
	struct tb_chain sites;           /* struct site_key by site */
	uint64_t slices, incomplete, instants, counters, async, flows;
};

/* One series of a counter of a process. */
struct series {
	struct tb_chain_link l;
	uint64_t pid, id;
	bool has_id;
	char *cat, *name, *series;
	size_t name_len;
	double min, max, last;
	uint64_t samples;
};

/* Why slices were incomplete, as the model says it (oev.unfinished, or
 * cut at a gap). */
#define NREASONS 8
struct reason {
	const char *why;
	uint64_t n;
};

/* The events the filters left out, by kind (as report_event counts them:
 * unpaired begins and ends with the instants). */
struct left_out {
	uint64_t events, slices, instants, counters, async, flows, other;
};

struct report {
	const struct report_opts *o;
	int err;
	struct tb_chain threads;         /* struct rthread by (pid, tid) */
	struct rthread *last;       /* the thread of the previous event */
	struct tb_chain counters;        /* struct series */
	struct tb_model_counts counts;
	struct tb_rec_stats *stats; /* a copy of counts.stats */
	struct reason reasons[NREASONS];
	uint64_t slices, incomplete, unpaired, instants, counter_samples, async, flows;
	uint64_t other;
	uint64_t kept;              /* trace events handed to report_event */
	struct left_out left_out;   /* by the filters */
};

static char *dup_n(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

static struct rthread *thread_of(struct report *r, uint64_t pid, uint32_t tid)
{
	uint64_t h = tb_hash64(pid * 0x9e3779b97f4a7c15ULL ^ tid);
	struct rthread *t = r->last;

	if (t && t->pid == pid && t->tid == tid)
		return t;
	for (struct tb_chain_link *x = tb_chain_first(&r->threads, h); x; x = x->next) {
		t = (struct rthread *)x;
		if (x->h == h && t->pid == pid && t->tid == tid)
			return r->last = t;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	*t = (struct rthread){ .l.h = h, .pid = pid, .tid = tid };
	if (tb_chain_add(&r->threads, &t->l)) {
		free(t);
		return NULL;
	}
	return r->last = t;
}

static struct key *new_key(struct tb_chain *keys, uint64_t h, const char *cat, const char *name,
			   size_t n, bool instant)
{
	struct key *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	*k = (struct key){ .l.h = h, .cat = strdup(cat), .name = dup_n(name, n),
			   .name_len = n, .instant = instant };
	if (!k->cat || !k->name || tb_chain_add(keys, &k->l)) {
		free(k->cat);
		free(k->name);
		free(k);
		return NULL;
	}
	return k;
}

/* The key of (kind, cat, name) on t. */
static struct key *key_by_name(struct rthread *t, const char *cat, const char *name,
			       size_t n, bool instant)
{
	uint64_t h = str_hash(str_hash(instant, cat, strlen(cat) + 1), name, n);

	for (struct tb_chain_link *x = tb_chain_first(&t->keys, h); x; x = x->next) {
		struct key *k = (struct key *)x;

		if (x->h == h && k->instant == instant && k->name_len == n &&
		    !memcmp(k->name, name, n) && !strcmp(k->cat, cat))
			return k;
	}
	return new_key(&t->keys, h, cat, name, n, instant);
}

/* The key of e's name on t: by site first (a site's name is fixed, except
 * a COPY site's, whose name is copied at each hit). */
static struct key *key_of(struct rthread *t, const struct oev *e, bool instant)
{
	uint64_t h = tb_hash64((uintptr_t)e->site) ^ instant;
	bool by_site = !(e->site->flags & TB_SITE_COPY_NAME);
	const char *name;
	struct site_key *sk;
	struct key *k;
	size_t n = 0;

	for (struct tb_chain_link *x = by_site ? tb_chain_first(&t->sites, h) : NULL; x; x = x->next) {
		sk = (struct site_key *)x;
		if (x->h == h && sk->site == e->site && sk->key->instant == instant)
			return sk->key;
	}
	name = tb_model_event_name(e, &n);
	if (!name) {
		name = "<unreadable>";
		n = strlen(name);
	}
	k = key_by_name(t, e->site->cat, name, n, instant);
	if (!k || !by_site)
		return k;
	sk = calloc(1, sizeof(*sk));
	if (!sk)
		return NULL;
	*sk = (struct site_key){ .l.h = h, .site = e->site, .key = k };
	if (tb_chain_add(&t->sites, &sk->l)) {
		free(sk);
		return NULL;
	}
	return k;
}

/* -------------------------------------------------------------- sink -- */

static void count_reason(struct report *r, const char *why)
{
	int i;

	for (i = 0; i < NREASONS - 1 && r->reasons[i].why; i++)
		if (!strcmp(r->reasons[i].why, why))
			break;
	if (!r->reasons[i].why)
		r->reasons[i].why = why;
	r->reasons[i].n++;
}

static int on_slice(struct report *r, const struct oev *e)
{
	struct rthread *t = thread_of(r, e->pid, e->tid);
	struct key *k = t ? key_of(t, e, false) : NULL;
	bool complete = !e->unfinished && !e->lost.count;

	if (!k)
		return -ENOMEM;
	t->slices++;
	r->slices++;
	if (complete) {
		/* the model knows what was directly inside it (model.h) */
		k->self += e->dur - (e->child < e->dur ? e->child : e->dur);
		return tb_hist_add(&k->hist, e->dur);
	}
	k->incomplete++;
	k->incomplete_total += e->dur;
	t->incomplete++;
	r->incomplete++;
	count_reason(r, e->unfinished ? e->unfinished : "cut at a gap (lost events)");
	return 0;
}

/* An instant, or a begin or an end the model could not pair (an instant
 * marked begin_of or begun_before): counted with its slice's name. */
static int on_instant(struct report *r, const struct oev *e)
{
	struct rthread *t = thread_of(r, e->pid, e->tid);
	bool half = e->begin_of || e->begun_before;
	struct key *k = t ? key_of(t, e, !half) : NULL;

	if (!k)
		return -ENOMEM;
	if (half) {
		k->unpaired++;
		r->unpaired++;
	} else {
		k->instants++;
		t->instants++;
		r->instants++;
	}
	return 0;
}

static struct series *series_of(struct report *r, const struct oev *e, const char *name,
				size_t n, const char *sname)
{
	const struct tb_rec_event_id *x = (const void *)e->ev;
	bool has_id = e->ev->hdr.type == TB_REC_EVENT_ID;
	uint64_t id = has_id ? x->id : 0, h;
	const char *cat = e->site->cat;
	struct series *s;

	h = str_hash(str_hash(str_hash(tb_hash64(e->pid) ^ id, cat, strlen(cat) + 1), name, n),
		     sname, strlen(sname));
	for (struct tb_chain_link *l = tb_chain_first(&r->counters, h); l; l = l->next) {
		s = (struct series *)l;
		if (l->h == h && s->pid == e->pid && s->id == id && s->has_id == has_id &&
		    s->name_len == n && !memcmp(s->name, name, n) && !strcmp(s->cat, cat) &&
		    !strcmp(s->series, sname))
			return s;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	*s = (struct series){ .l.h = h, .pid = e->pid, .id = id, .has_id = has_id,
			      .cat = strdup(cat), .name = dup_n(name, n), .name_len = n,
			      .series = strdup(sname) };
	if (!s->cat || !s->name || !s->series || tb_chain_add(&r->counters, &s->l)) {
		free(s->cat);
		free(s->name);
		free(s->series);
		free(s);
		return NULL;
	}
	return s;
}

static int on_counter(struct report *r, const struct oev *e)
{
	struct rthread *t = thread_of(r, e->pid, e->tid);
	struct tb_model_series v[TB_MAX_ARGS];
	int n = tb_model_counter_series(e, v);
	size_t len = 0;
	const char *name = tb_model_event_name(e, &len);

	if (!t)
		return -ENOMEM;
	t->counters += n > 0;
	if (!name) {
		name = "<unreadable>";
		len = strlen(name);
	}
	for (int i = 0; i < n; i++) {
		struct series *s = series_of(r, e, name, len, v[i].name);

		if (!s)
			return -ENOMEM;
		if (!s->samples || v[i].value < s->min)
			s->min = v[i].value;
		if (!s->samples || v[i].value > s->max)
			s->max = v[i].value;
		s->last = v[i].value;
		s->samples++;
	}
	r->counter_samples += n > 0;
	return 0;
}

/* Async (kind 'a') and flow ('f') events, counted per thread. */
static int count_other(struct report *r, const struct oev *e, char kind)
{
	struct rthread *t = thread_of(r, e->pid, e->tid);

	if (!t)
		return -ENOMEM;
	if (kind == 'a') {
		r->async++;
		t->async++;
	} else if (kind == 'f') {
		r->flows++;
		t->flows++;
	} else {
		r->other++;
	}
	return 0;
}

static void report_event(void *ctx, const struct oev *e)
{
	struct report *r = ctx;

	if (r->err)
		return;
	r->kept++;
	switch (e->ph) {
	case 'X':
		r->err = on_slice(r, e);
		break;
	case 'I':
		r->err = on_instant(r, e);
		break;
	case 'C':
		r->err = on_counter(r, e);
		break;
	case 'b':
	case 'e':
	case 'n':
		r->err = count_other(r, e, 'a');
		break;
	case 's':
	case 't':
	case 'f':
		r->err = count_other(r, e, 'f');
		break;
	default:
		r->err = count_other(r, e, '?');
		break;
	}
}

/* An event the filters left out, counted by kind. */
static void report_left_out(void *ctx, const struct oev *e)
{
	struct left_out *l = &((struct report *)ctx)->left_out;

	l->events++;
	switch (e->ph) {
	case 'X': l->slices++; break;
	case 'I': l->instants++; break;
	case 'C': l->counters++; break;
	case 'b': case 'e': case 'n': l->async++; break;
	case 's': case 't': case 'f': l->flows++; break;
	default: l->other++; break;
	}
}

/* ------------------------------------------------------------- the end -- */

static int take_names(void *ctx, const struct tb_model_thread *mt)
{
	struct report *r = ctx;
	uint64_t h = tb_hash64(mt->pid * 0x9e3779b97f4a7c15ULL ^ mt->tid);

	for (struct tb_chain_link *x = tb_chain_first(&r->threads, h); x; x = x->next) {
		struct rthread *t = (struct rthread *)x;

		if (x->h != h || t->pid != mt->pid || t->tid != mt->tid)
			continue;
		free(t->name);
		free(t->process);
		t->name = dup_n(mt->name, mt->name_len);
		t->process = dup_n(mt->process, mt->process_len);
		t->name_len = mt->name_len;
		t->process_len = mt->process_len;
		return t->name && t->process ? 0 : -ENOMEM;
	}
	return 0;
}

static int report_end(void *ctx, const struct tb_model *m)
{
	struct report *r = ctx;

	if (r->err)
		return r->err;
	tb_model_counts(m, &r->counts);
	if (r->counts.stats) {
		r->stats = malloc(r->counts.stats->hdr.size);
		if (!r->stats)
			return -ENOMEM;
		memcpy(r->stats, r->counts.stats, r->counts.stats->hdr.size);
	}
	r->counts.stats = r->stats;
	return tb_model_threads(m, take_names, r);
}

static void free_key(void *p)
{
	struct key *k = p;

	tb_hist_free(&k->hist);
	free(k->cat);
	free(k->name);
	free(k);
}

static void free_thread(void *p)
{
	struct rthread *t = p;

	tb_chain_free(&t->keys, free_key);
	tb_chain_free(&t->sites, free);
	free(t->name);
	free(t->process);
	free(t);
}

static void free_series(void *p)
{
	struct series *s = p;

	free(s->cat);
	free(s->name);
	free(s->series);
	free(s);
}

static void report_free(struct report *r)
{
	tb_chain_free(&r->threads, free_thread);
	tb_chain_free(&r->counters, free_series);
	free(r->stats);
}

/* ------------------------------------------------------------ sorting -- */

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

/* Largest first (by *(enum sort_key *)by), then incomplete ones, then by
 * name. */
static int cmp_keys(const void *a, const void *b, void *by)
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

/* t's keys of one kind, sorted by `by`; *n of them. */
static struct key **sorted_keys(const struct rthread *t, bool instant, enum sort_key by,
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
	qsort_r(v, *n, sizeof(*v), cmp_keys, &by);
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

/* The threads with something to show, sorted by (pid, tid). */
static struct rthread **sorted_threads(const struct report *r, size_t *n)
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

static struct series **sorted_series(const struct report *r, size_t *n)
{
	struct series **v = (struct series **)tb_chain_list(&r->counters, n);

	if (v)
		qsort(v, *n, sizeof(*v), cmp_series);
	return v;
}

/* ------------------------------------------------------- losses first -- */

/* Whether the trace is whole: nothing lost, nothing unreadable. */
static bool trace_complete(const struct report *r, struct tb_reader *rd)
{
	const struct tb_model_counts *c = &r->counts;

	return !c->drops_total && !c->gaps && !c->kernel_gaps && !c->lost_processes &&
	       !c->unresolved_sites && !tb_reader_tail_reason(rd) && !tb_reader_tail_bytes(rd) &&
	       (tb_reader_finished(rd) || tb_reader_info(rd)->major < 2);
}

/* ------------------------------------------------------------- text -- */

/* ns in a unit that keeps 4 to 6 significant digits. */
static const char *fmt_ns(char buf[24], uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, 24, "%" PRIu64 " ns", ns);
	else if (ns < 1000000)
		snprintf(buf, 24, "%.3f us", ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, 24, "%.3f ms", ns / 1e6);
	else
		snprintf(buf, 24, "%.3f s", ns / 1e9);
	return buf;
}

/* A name from the traced application, safe for a terminal: control bytes
 * become '?', and it is cut at max bytes ("..." says so). */
static void put_name(FILE *f, const char *s, size_t n, size_t width, size_t max)
{
	size_t i, shown = n > max ? max - 3 : n;

	for (i = 0; i < shown; i++)
		fputc((unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i], f);
	if (shown < n)
		fputs("...", f);
	for (i = shown < n ? max : n; i < width; i++)
		fputc(' ', f);
}

#define NAME_MAX_COLS 40

static size_t name_width(struct key **k, size_t n)
{
	size_t w = 4;

	for (size_t i = 0; i < n; i++)
		if (k[i]->name_len > w)
			w = k[i]->name_len;
	return w > NAME_MAX_COLS ? NAME_MAX_COLS : w;
}

static void print_slice_row(FILE *f, const struct key *k, size_t w)
{
	char b[7][24];
	const struct tb_hist *h = &k->hist;

	fprintf(f, "    ");
	put_name(f, k->name, k->name_len, w, NAME_MAX_COLS);
	if (!h->count) {
		fprintf(f, " %9u %11s %11s %11s %11s %11s %11s", 0u, "-", "-", "-", "-", "-", "-");
	} else {
		fprintf(f, " %9" PRIu64 " %11s %11s %11s %11s %11s %11s", h->count,
		        fmt_ns(b[0], h->sum), fmt_ns(b[1], k->self), fmt_ns(b[2], h->sum / h->count),
		        fmt_ns(b[3], tb_hist_quantile(h, 0.5)), fmt_ns(b[4], tb_hist_quantile(h, 0.99)),
		        fmt_ns(b[5], h->max));
	}
	fprintf(f, " %10" PRIu64 "  %s\n", k->incomplete + k->unpaired, k->cat);
}

static size_t rows(const struct report_opts *o, size_t n)
{
	size_t top = o->top < 0 ? TOP_TEXT : (size_t)o->top;

	return top && top < n ? top : n;
}

static void print_slice_table(const struct report_opts *o, struct key **k, size_t n,
			      const char *by)
{
	size_t w = name_width(k, rows(o, n));
	FILE *f = o->out;

	fprintf(f, "  slices by %s (%zu of %zu names)\n    ", by, rows(o, n), n);
	put_name(f, "name", 4, w, NAME_MAX_COLS);
	fprintf(f, " %9s %11s %11s %11s %11s %11s %11s %10s  %s\n", "count", "total", "self", "mean",
	        "p50", "p99", "max", "incomplete", "cat");
	for (size_t i = 0; i < rows(o, n); i++)
		print_slice_row(o->out, k[i], w);
}

static int print_slices(const struct report_opts *o, const struct rthread *t)
{
	size_t n;
	struct key **k = sorted_keys(t, false, o->sort, &n), **by_self = NULL;
	FILE *f = o->out;

	if (!k)
		return -ENOMEM;
	if (n && (by_self = malloc(n * sizeof(*by_self)))) {
		print_slice_table(o, k, n, sort_names[o->sort]);
		memcpy(by_self, k, n * sizeof(*k));
		qsort_r(by_self, n, sizeof(*by_self), cmp_keys, &(enum sort_key){ SORT_SELF });
		/* the same rows in the same order: nothing new to show */
		if (!memcmp(by_self, k, rows(o, n) * sizeof(*k)))
			fprintf(f, "  slices by self: the same order\n");
		else
			print_slice_table(o, by_self, n, "self");
	}
	free(k);
	if (n && !by_self)
		return -ENOMEM;
	free(by_self);
	return 0;
}

static int print_instants(const struct report_opts *o, const struct rthread *t)
{
	size_t n;
	struct key **k = sorted_keys(t, true, SORT_COUNT, &n);
	FILE *f = o->out;

	if (!k)
		return -ENOMEM;
	if (n) {
		fprintf(f, "  instants by count (%zu of %zu names)\n", rows(o, n), n);
		for (size_t i = 0; i < rows(o, n); i++) {
			fprintf(f, "    ");
			put_name(f, k[i]->name, k[i]->name_len, name_width(k, rows(o, n)), NAME_MAX_COLS);
			fprintf(f, " %9" PRIu64 "  %s\n", k[i]->instants, k[i]->cat);
		}
	}
	free(k);
	return 0;
}

static void print_thread_head(FILE *f, const struct rthread *t, uint64_t *pid_shown)
{
	if (*pid_shown != t->pid) {
		fprintf(f, "\nprocess %" PRIu64 " ", t->pid);
		put_name(f, t->process ? t->process : "?", t->process ? t->process_len : 1, 0, 100);
		fprintf(f, "\n");
		*pid_shown = t->pid;
	}
	fprintf(f, " thread %" PRIu32 " ", t->tid);
	put_name(f, t->name ? t->name : "?", t->name ? t->name_len : 1, 0, 100);
	fprintf(f, ": %" PRIu64 " slices (%" PRIu64 " incomplete), %" PRIu64 " instants",
	        t->slices, t->incomplete, t->instants);
	if (t->counters)
		fprintf(f, ", %" PRIu64 " counter samples", t->counters);
	if (t->async)
		fprintf(f, ", %" PRIu64 " async events", t->async);
	if (t->flows)
		fprintf(f, ", %" PRIu64 " flow events", t->flows);
	fprintf(f, "\n");
}

static const char *fmt_value(char buf[32], double v)
{
	snprintf(buf, 32, "%.15g", v);
	return buf;
}

static void print_counters(FILE *f, struct series **s, size_t n)
{
	char b[3][32];

	if (!n)
		return;
	fprintf(f, "\ncounters (min, max and last value per series)\n");
	fprintf(f, "  %8s %-24s %-16s %14s %14s %14s %9s  %s\n", "pid", "name", "series", "min", "max",
	        "last", "samples", "cat");
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "  %8" PRIu64 " ", s[i]->pid);
		put_name(f, s[i]->name, s[i]->name_len, 24, 40);
		fputc(' ', f);
		put_name(f, s[i]->series, strlen(s[i]->series), 16, 40);
		fprintf(f, " %14s %14s %14s %9" PRIu64 "  %s", fmt_value(b[0], s[i]->min),
		        fmt_value(b[1], s[i]->max), fmt_value(b[2], s[i]->last), s[i]->samples,
		        s[i]->cat);
		if (s[i]->has_id)
			fprintf(f, " (id 0x%" PRIx64 ")", s[i]->id);
		fprintf(f, "\n");
	}
}

static void print_reasons(const struct report *r)
{
	FILE *f = r->o->out;

	if (!r->incomplete)
		return;
	fprintf(f, "incomplete slices: %" PRIu64 " (", r->incomplete);
	for (int i = 0; i < NREASONS && r->reasons[i].why; i++)
		fprintf(f, "%s%" PRIu64 " %s", i ? ", " : "", r->reasons[i].n, r->reasons[i].why);
	fprintf(f, "): counted apart, not in count/total/self/percentiles\n");
}

static void print_losses(const struct report *r, struct tb_reader *rd)
{
	FILE *f = r->o->out;
	const struct tb_model_counts *c = &r->counts;
	uint32_t ncpus = c->stats ? tb_stats_ncpus(c->stats) : 0;

	fprintf(f, "trace: %s\n", trace_complete(r, rd) ? "complete (nothing lost)" :
	        "INCOMPLETE: events are missing, see below");
	fprintf(f, "drops:            %" PRIu64 " events lost in full ring buffers (per cpu:",
	        c->drops_total);
	for (uint32_t i = 0; i < ncpus; i++)
		fprintf(f, " %" PRIu64, tb_stats_drop(c->stats, i));
	fprintf(f, "%s)\n", ncpus ? "" : " -");
	fprintf(f, "gaps:             %" PRIu64 " (%" PRIu64 " application records lost), %" PRIu64
	        " in kernel records (%" PRIu64 " lost)\n", c->gaps, c->gap_records, c->kernel_gaps,
	        c->kernel_gap_records);
	fprintf(f, "at gaps:          %" PRIu64 " slices cut, %" PRIu64 " ends after a gap, %" PRIu64
	        " events in a gap, %" PRIu64 " flow events left out\n", c->slices_cut_at_gaps,
	        c->ends_after_gaps, c->events_in_gaps, c->flow_events_left_out);
	fprintf(f, "lost processes:   %" PRIu64 " (started by traced ones, not traced)\n",
	        c->lost_processes);
	fprintf(f, "unresolved sites: %" PRIu64 " events (no site descriptor)\n", c->unresolved_sites);
	fprintf(f, "unpaired:         %" PRIu64 " unmatched ends, %" PRIu64 " ends of slices begun "
	        "before the recording\n", c->unmatched_ends, c->ends_before_recording);
	if (c->stopped_windows)
		fprintf(f, "stopped:          %" PRIu64 " tracebpf ctl stop windows, %" PRIu64
		        " records left out\n", c->stopped_windows, c->records_while_stopped);
	if (tb_reader_tail_bytes(rd) || tb_reader_tail_reason(rd))
		fprintf(f, "truncated tail:   %" PRIu64 " bytes unread (%s)\n", tb_reader_tail_bytes(rd),
		        tb_reader_tail_reason(rd) ? tb_reader_tail_reason(rd) : "?");
	if (!tb_reader_finished(rd) && tb_reader_info(rd)->major >= 2)
		fprintf(f, "finished:         no (no chunk index: the recorder was killed, or is still "
		        "writing)\n");
	if (c->forced)
		fprintf(f, "out of order:     %" PRIu64 " events released early to bound memory: self "
		        "times of slices open very long may be too large\n", c->forced);
}

static bool filtering(const struct report_opts *o)
{
	return tb_filter_active(&o->filter.filter);
}

/* Which filters, and what they left out; the lines above (losses, events)
 * stay the whole trace's. */
static void print_filters(const struct report *r)
{
	const struct left_out *l = &r->left_out;
	FILE *f = r->o->out;

	if (!filtering(r->o))
		return;
	fprintf(f, "filters:          ");
	tb_filter_print(&r->o->filter.filter, f);
	fprintf(f, ": kept %" PRIu64 " of %" PRIu64 " trace events, left out %" PRIu64 " (%" PRIu64
	        " slices, %" PRIu64 " instants and unpaired, %" PRIu64 " counter samples, %" PRIu64
	        " async, %" PRIu64 " flow)\n", r->kept, r->kept + l->events, l->events, l->slices,
	        l->instants, l->counters, l->async, l->flows);
	fprintf(f, "                  (the losses above are the whole trace's; the counts below, "
	        "the kept events')\n");
}

static int print_text(const struct report *r, struct tb_reader *rd)
{
	size_t nt, ns;
	struct rthread **t = sorted_threads(r, &nt);
	struct series **s = sorted_series(r, &ns);
	uint64_t pid_shown = UINT64_MAX;
	int err = t && s ? 0 : -ENOMEM;
	FILE *f = r->o->out;

	print_losses(r, rd);
	print_filters(r);
	fprintf(f, "events:           %" PRIu64 ": %" PRIu64 " slices (%" PRIu64 " incomplete), %"
	        PRIu64 " unpaired begins and ends, %" PRIu64 " instants, %" PRIu64
	        " counter samples, %" PRIu64 " async, %" PRIu64 " flow\n", r->counts.events,
	        r->slices, r->incomplete, r->unpaired, r->instants, r->counter_samples, r->async,
	        r->flows);
	print_reasons(r);
	fprintf(f, "percentiles:      within %.2f %% (log-linear histogram)\n",
	        100 * TB_HIST_REL_ERROR);
	for (size_t i = 0; !err && i < nt; i++) {
		print_thread_head(r->o->out, t[i], &pid_shown);
		err = print_slices(r->o, t[i]);
		if (!err)
			err = print_instants(r->o, t[i]);
	}
	if (!err)
		print_counters(r->o->out, s, ns);
	free(t);
	free(s);
	return err;
}

/* ------------------------------------------------------------- JSON -- */

static void json_name(struct tb_json *j, const char *key, const char *s, size_t n)
{
	tb_json_key(j, key);
	tb_json_string_n(j, s, n);
}

static void json_losses(struct tb_json *j, const struct report *r, struct tb_reader *rd)
{
	const struct tb_model_counts *c = &r->counts;
	uint32_t ncpus = c->stats ? tb_stats_ncpus(c->stats) : 0;

	tb_json_key(j, "complete");
	tb_json_bool(j, trace_complete(r, rd));
	tb_json_key(j, "losses");
	tb_json_begin_object(j);
	tb_json_key(j, "finished");
	tb_json_bool(j, tb_reader_finished(rd));
	tb_json_kuint(j, "drops_total", c->drops_total);
	tb_json_key(j, "drops_per_cpu");
	tb_json_begin_array(j);
	for (uint32_t i = 0; i < ncpus; i++)
		tb_json_uint(j, tb_stats_drop(c->stats, i));
	tb_json_end_array(j);
	tb_json_kuint(j, "lost_processes", c->lost_processes);
	tb_json_kuint(j, "unresolved_sites", c->unresolved_sites);
	tb_json_kuint(j, "unmatched_ends", c->unmatched_ends);
	tb_json_kuint(j, "ends_before_recording", c->ends_before_recording);
	tb_json_kuint(j, "gaps", c->gaps);
	tb_json_kuint(j, "gap_records", c->gap_records);
	tb_json_kuint(j, "kernel_gaps", c->kernel_gaps);
	tb_json_kuint(j, "kernel_gap_records", c->kernel_gap_records);
	tb_json_kuint(j, "slices_cut_at_gaps", c->slices_cut_at_gaps);
	tb_json_kuint(j, "ends_after_gaps", c->ends_after_gaps);
	tb_json_kuint(j, "events_in_gaps", c->events_in_gaps);
	tb_json_kuint(j, "flow_events_left_out", c->flow_events_left_out);
	tb_json_kuint(j, "recording_stopped", c->stopped_windows);
	tb_json_kuint(j, "records_while_stopped", c->records_while_stopped);
	tb_json_kuint(j, "truncated_tail_bytes", tb_reader_tail_bytes(rd));
	if (tb_reader_tail_reason(rd))
		tb_json_kstr(j, "truncated_tail_reason", tb_reader_tail_reason(rd));
	tb_json_kuint(j, "events_out_of_order", c->forced);
	tb_json_end_object(j);
}

/* The filters given ({} for none) and what they left out. */
static void json_filters(struct tb_json *j, const struct report *r)
{
	const struct left_out *l = &r->left_out;

	tb_json_key(j, "filters");
	tb_filter_write_json(&r->o->filter.filter, j);
	tb_json_key(j, "filtered_out");
	tb_json_begin_object(j);
	tb_json_kuint(j, "trace_events", l->events);
	tb_json_kuint(j, "slices", l->slices);
	tb_json_kuint(j, "instants", l->instants);
	tb_json_kuint(j, "counter_samples", l->counters);
	tb_json_kuint(j, "async_events", l->async);
	tb_json_kuint(j, "flow_events", l->flows);
	tb_json_end_object(j);
	tb_json_kuint(j, "kept_trace_events", r->kept);
}

static void json_totals(struct tb_json *j, const struct report *r)
{
	tb_json_kuint(j, "events", r->counts.events);
	tb_json_kuint(j, "slices", r->slices);
	tb_json_kuint(j, "incomplete_slices", r->incomplete);
	tb_json_key(j, "incomplete_by_reason");
	tb_json_begin_object(j);
	for (int i = 0; i < NREASONS && r->reasons[i].why; i++)
		tb_json_kuint(j, r->reasons[i].why, r->reasons[i].n);
	tb_json_end_object(j);
	tb_json_kuint(j, "unpaired", r->unpaired);
	tb_json_kuint(j, "instants", r->instants);
	tb_json_kuint(j, "counter_samples", r->counter_samples);
	tb_json_kuint(j, "async_events", r->async);
	tb_json_kuint(j, "flow_events", r->flows);
	tb_json_key(j, "percentile_relative_error");
	tb_json_double(j, TB_HIST_REL_ERROR);
}

/* A value of the complete slices, null when there are none. */
static void json_opt(struct tb_json *j, const char *key, const struct tb_hist *h, uint64_t v)
{
	tb_json_key(j, key);
	if (h->count)
		tb_json_uint(j, v);
	else
		tb_json_null(j);
}

static void json_slice(struct tb_json *j, const struct key *k)
{
	const struct tb_hist *h = &k->hist;

	tb_json_newline(j);
	tb_json_begin_object(j);
	tb_json_kstr(j, "cat", k->cat);
	json_name(j, "name", k->name, k->name_len);
	tb_json_kuint(j, "count", h->count);
	tb_json_kuint(j, "total_ns", h->sum);
	tb_json_kuint(j, "self_ns", k->self);
	json_opt(j, "mean_ns", h, h->count ? h->sum / h->count : 0);
	json_opt(j, "min_ns", h, h->min);
	json_opt(j, "p50_ns", h, tb_hist_quantile(h, 0.5));
	json_opt(j, "p99_ns", h, tb_hist_quantile(h, 0.99));
	json_opt(j, "max_ns", h, h->max);
	tb_json_kuint(j, "incomplete", k->incomplete);
	tb_json_kuint(j, "incomplete_ns", k->incomplete_total);
	tb_json_kuint(j, "unpaired", k->unpaired);
	tb_json_end_object(j);
}

static size_t json_rows(const struct report_opts *o, size_t n)
{
	return o->top > 0 && (size_t)o->top < n ? (size_t)o->top : n;
}

static int json_keys(struct tb_json *j, const struct report_opts *o, const struct rthread *t,
		     bool instant)
{
	size_t n;
	struct key **k = sorted_keys(t, instant, instant ? SORT_COUNT : o->sort, &n);

	if (!k)
		return -ENOMEM;
	tb_json_key(j, instant ? "instants" : "slices");
	tb_json_begin_array(j);
	for (size_t i = 0; i < json_rows(o, n); i++) {
		if (!instant) {
			json_slice(j, k[i]);
			continue;
		}
		tb_json_newline(j);
		tb_json_begin_object(j);
		tb_json_kstr(j, "cat", k[i]->cat);
		json_name(j, "name", k[i]->name, k[i]->name_len);
		tb_json_kuint(j, "count", k[i]->instants);
		tb_json_end_object(j);
	}
	tb_json_end_array(j);
	free(k);
	return 0;
}

static int json_thread(struct tb_json *j, const struct report_opts *o, const struct rthread *t)
{
	int err;

	tb_json_newline(j);
	tb_json_begin_object(j);
	tb_json_kuint(j, "tid", t->tid);
	json_name(j, "name", t->name ? t->name : "?", t->name ? t->name_len : 1);
	tb_json_kuint(j, "slice_count", t->slices);
	tb_json_kuint(j, "incomplete_slices", t->incomplete);
	tb_json_kuint(j, "instant_count", t->instants);
	tb_json_kuint(j, "counter_samples", t->counters);
	tb_json_kuint(j, "async_events", t->async);
	tb_json_kuint(j, "flow_events", t->flows);
	err = json_keys(j, o, t, false);
	if (!err)
		err = json_keys(j, o, t, true);
	tb_json_end_object(j);
	return err;
}

static void json_series(struct tb_json *j, const struct series *s)
{
	tb_json_newline(j);
	tb_json_begin_object(j);
	tb_json_kstr(j, "cat", s->cat);
	json_name(j, "name", s->name, s->name_len);
	if (s->has_id)
		tb_json_kuint(j, "id", s->id);
	tb_json_kstr(j, "series", s->series);
	tb_json_key(j, "min");
	tb_json_double(j, s->min);
	tb_json_key(j, "max");
	tb_json_double(j, s->max);
	tb_json_key(j, "last");
	tb_json_double(j, s->last);
	tb_json_kuint(j, "samples", s->samples);
	tb_json_end_object(j);
}

/* The counters of process pid: s[*i..] while they are its. */
static void json_counters(struct tb_json *j, struct series **s, size_t n, size_t *i, uint64_t pid)
{
	tb_json_key(j, "counters");
	tb_json_begin_array(j);
	while (*i < n && s[*i]->pid < pid)
		(*i)++;   /* of a process with no thread shown: none */
	for (; *i < n && s[*i]->pid == pid; (*i)++)
		json_series(j, s[*i]);
	tb_json_end_array(j);
}

/* The processes, each with its threads (t, sorted by pid) and counters. */
static int json_processes(struct tb_json *j, const struct report *r, struct rthread **t,
			  size_t nt, struct series **s, size_t ns)
{
	size_t i = 0, si = 0;
	int err = 0;

	tb_json_key(j, "processes");
	tb_json_begin_array(j);
	while (!err && i < nt) {
		uint64_t pid = t[i]->pid;

		tb_json_newline(j);
		tb_json_begin_object(j);
		tb_json_kuint(j, "pid", pid);
		json_name(j, "name", t[i]->process ? t[i]->process : "?",
			  t[i]->process ? t[i]->process_len : 1);
		tb_json_key(j, "threads");
		tb_json_begin_array(j);
		for (; !err && i < nt && t[i]->pid == pid; i++)
			err = json_thread(j, r->o, t[i]);
		tb_json_end_array(j);
		json_counters(j, s, ns, &si, pid);
		tb_json_end_object(j);
	}
	tb_json_end_array(j);
	return err;
}

static int print_json(const struct report *r, struct tb_reader *rd)
{
	size_t nt, ns;
	struct rthread **t = sorted_threads(r, &nt);
	struct series **s = sorted_series(r, &ns);
	struct tb_json j;
	int err = t && s ? 0 : -ENOMEM;

	tb_json_init(&j, r->o->out);
	tb_json_begin_object(&j);
	tb_json_kuint(&j, "tracebpf_report", 1);
	tb_json_kstr(&j, "trace", r->o->in);
	tb_json_kstr(&j, "sort", sort_names[r->o->sort]);
	tb_json_key(&j, "top");
	if (r->o->top > 0)
		tb_json_uint(&j, (uint64_t)r->o->top);
	else
		tb_json_null(&j);
	tb_json_newline(&j);
	json_losses(&j, r, rd);
	tb_json_newline(&j);
	json_filters(&j, r);
	tb_json_newline(&j);
	json_totals(&j, r);
	if (!err)
		err = json_processes(&j, r, t, nt, s, ns);
	tb_json_newline(&j);
	tb_json_end_object(&j);
	tb_json_newline(&j);
	free(t);
	free(s);
	return err ? err : tb_json_error(&j);
}

/* ------------------------------------------------------------ command -- */

static const struct argp_option report_options[] = {
	{ "sort", 's', "KEY", 0, "Order slices by total (default), self, count, max or mean", 0 },
	{ "top", 'n', "N", 0, "Show N names per table (default 10 on the terminal, all in "
			      "--json; 0: all)", 0 },
	{ "json", 'j', NULL, 0, "Write one JSON document (docs/tracebpf-report.md) instead", 0 },
	{ 0 },
};

static error_t report_parse(int key, char *arg, struct argp_state *state)
{
	struct report_opts *o = state->input;
	size_t i;

	switch (key) {
	case ARGP_KEY_INIT:
		o->filter.cmd = "report";
		state->child_inputs[0] = &o->filter;
		break;
	case 's':
		for (i = 0; i < sizeof(sort_names) / sizeof(*sort_names); i++)
			if (!strcmp(arg, sort_names[i]))
				break;
		if (i == sizeof(sort_names) / sizeof(*sort_names))
			argp_error(state, "invalid --sort '%s': give total, self, count, max or mean",
				   arg);
		o->sort = (enum sort_key)i;
		break;
	case 'n':
		o->top = tb_io_arg_range(state, arg, 0, 1000000000, "--top", NULL);
		break;
	case 'j':
		o->json = true;
		break;
	case ARGP_KEY_ARG:
		if (o->in)
			argp_error(state, "one trace at a time");
		o->in = arg;
		break;
	case ARGP_KEY_END:
		if (!o->in)
			argp_error(state, "give the trace file (FILE.tbt, - for stdin)");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* Runs the model into a report and prints it on o->out; on failure
 * *verb says what failed ("read" the input, "summarize" it, "write"). */
static int report_run(const struct report_opts *o, struct tb_reader *rd, const char **verb)
{
	struct report r = { .o = o };
	/* nothing in a report depends on the order of the slices */
	const struct tb_model_sink sink = { .ctx = &r, .event = report_event, .end = report_end,
					    .filter = &o->filter.filter, .left_out = report_left_out,
					    .any_order = true };
	bool read_failed = false;
	int err = tb_model_run(rd, &sink, &read_failed);

	if (!err)
		err = r.err;
	if (err)
		*verb = read_failed ? "read" : "summarize";
	else if ((err = o->json ? print_json(&r, rd) : print_text(&r, rd)))
		*verb = "write";
	report_free(&r);
	return err;
}

int tb_report_file(struct tb_reader *r, FILE *out, bool json, const struct tb_filter *filter)
{
	struct report_opts o = { .in = "-", .top = -1, .json = json, .out = out };
	const char *verb;

	if (filter)
		o.filter.filter = *filter;   /* shares its lists: never freed here */

	return report_run(&o, r, &verb);
}

int tb_cmd_report(int argc, char **argv)
{
	static const struct argp_child children[] = { { &tb_filter_argp, 0, NULL, 1 }, { 0 } };
	static const struct argp argp = { report_options, report_parse, "FILE.tbt",
					  "Summarize a trace: what was lost, then per process and "
					  "thread the slices by total and self time with "
					  "percentiles, and the counters.", children, NULL, NULL };
	struct report_opts o = { .sort = SORT_TOTAL, .top = -1, .out = stdout };
	struct tb_reader *rd = NULL;
	const char *verb;
	int err;

	argp_parse(&argp, argc, argv, 0, NULL, &o);
	err = tb_io_open(&rd, "report", o.in, NULL, 0);
	if (err) {
		tb_filter_free(&o.filter.filter);
		return 1;
	}
	err = report_run(&o, rd, &verb);
	if (err) {
		bool out = !strcmp(verb, "write");

		fprintf(stderr, PFX "failed to %s '%s': %s\n", verb, out ? "<stdout>" :
			strcmp(o.in, "-") ? o.in : "<stdin>", strerror(-err));
		if (out && tb_write_hint(err))
			fprintf(stderr, PFX "hint: %s\n", tb_write_hint(err));
	}
	tb_reader_close(rd);
	tb_filter_free(&o.filter.filter);
	return err ? 1 : 0;
}
