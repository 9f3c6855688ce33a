// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * report_collect.c - tracebpf report's sink of the model (model.h): per
 * thread, the slices and instants by name (count, self time, a histogram
 * of durations, incomplete and unpaired ones apart) and the counter
 * series per process, as the events come, in any order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

static uint64_t str_hash(uint64_t h, const char *p, size_t n)
{
	return tb_hash64(tb_hash_bytes(h, p, n));
}

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
	struct rthread **slot = &r->tcache[tid % RTHREAD_CACHE];
	struct rthread *t = *slot;
	uint64_t h;

	if (t && t->pid == pid && t->tid == tid)
		return t;
	h = tb_hash64(pid * 0x9e3779b97f4a7c15ULL ^ tid);
	for (struct tb_chain_link *x = tb_chain_first(&r->threads, h); x; x = x->next) {
		t = (struct rthread *)x;
		if (x->h == h && t->pid == pid && t->tid == tid)
			return *slot = t;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	*t = (struct rthread){ .l.h = h, .pid = pid, .tid = tid };
	if (tb_chain_add(&r->threads, &t->l)) {
		free(t);
		return NULL;
	}
	return *slot = t;
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

struct key *report_key(struct tb_chain *keys, const char *cat, const char *name, size_t n,
		       bool instant)
{
	uint64_t h = str_hash(str_hash(instant, cat, strlen(cat) + 1), name, n);

	for (struct tb_chain_link *x = tb_chain_first(keys, h); x; x = x->next) {
		struct key *k = (struct key *)x;

		if (x->h == h && k->instant == instant && k->name_len == n &&
		    !memcmp(k->name, name, n) && !strcmp(k->cat, cat))
			return k;
	}
	return new_key(keys, h, cat, name, n, instant);
}

/* The key of e's name on t: by site first (a site's name is fixed, except
 * a COPY site's, whose name is copied at each hit). */
static struct key *key_of(struct rthread *t, const struct oev *e, bool instant)
{
	bool by_site = !(e->site->flags & TB_SITE_COPY_NAME);
	const char *name;
	struct site_key *sk;
	struct key *k;
	size_t n = 0;
	uint64_t h;

	if (by_site && t->last_site == e->site && t->last_key->instant == instant)
		return t->last_key;
	h = tb_hash64((uintptr_t)e->site) ^ instant;
	for (struct tb_chain_link *x = by_site ? tb_chain_first(&t->sites, h) : NULL; x; x = x->next) {
		sk = (struct site_key *)x;
		if (x->h == h && sk->site == e->site && sk->key->instant == instant) {
			t->last_site = e->site;
			return t->last_key = sk->key;
		}
	}
	name = tb_model_event_name(e, &n);
	if (!name) {
		name = "<unreadable>";
		n = strlen(name);
	}
	k = report_key(&t->lv.keys, e->site->cat, name, n, instant);
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
	t->last_site = e->site;
	return t->last_key = k;
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
	t->lv.slices++;
	if (complete) {
		/* the model knows what was directly inside it (model.h) */
		k->self += e->dur - (e->child < e->dur ? e->child : e->dur);
		return tb_hist_add(&k->hist, e->dur);
	}
	k->incomplete++;
	k->incomplete_total += e->dur;
	t->lv.incomplete++;
	count_reason(r, e->unfinished ? e->unfinished :
		     e->begin_lost ? "begun in a gap (lost events)" : "cut at a gap (lost events)");
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
		t->lv.instants++;
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
	t->lv.counters += n > 0;
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
	return 0;
}

/* Async (kind 'a') and flow ('f') events, counted per thread. */
static int count_other(struct report *r, const struct oev *e, char kind)
{
	struct rthread *t = thread_of(r, e->pid, e->tid);

	if (!t)
		return -ENOMEM;
	if (kind == 'a')
		t->lv.async++;
	else if (kind == 'f')
		t->lv.flows++;
	else
		r->other++;
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

void report_free_level(struct level *lv)
{
	tb_chain_free(&lv->keys, free_key);
}

static void free_thread(void *p)
{
	struct rthread *t = p;

	report_free_level(&t->lv);
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

void report_free(struct report *r)
{
	for (size_t i = 0; i < r->nprocs; i++)
		report_free_level(&r->procs[i].lv);
	free(r->procs);
	free(r->shown);
	free(r->series);
	report_free_level(&r->whole);
	tb_chain_free(&r->threads, free_thread);
	tb_chain_free(&r->counters, free_series);
	free(r->stats);
}

bool report_complete(const struct report *r, struct tb_reader *rd)
{
	const struct tb_model_counts *c = &r->counts;

	return !c->drops_total && !c->gaps && !c->kernel_gaps && !c->lost_processes &&
	       !c->unresolved_sites && !tb_reader_tail_reason(rd) && !tb_reader_tail_bytes(rd) &&
	       (tb_reader_finished(rd) || tb_reader_info(rd)->major < 2);
}

int report_collect(struct report *r, struct tb_reader *rd, bool *read_failed)
{
	/* nothing in a report depends on the order of the slices */
	const struct tb_model_sink sink = { .ctx = r, .event = report_event, .end = report_end,
					    .filter = &r->o->filter.filter,
					    .left_out = report_left_out, .any_order = true };
	int err = tb_model_run(rd, &sink, read_failed);

	return err ? err : r->err;
}
