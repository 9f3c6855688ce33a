// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert_pair.c - the converter's second stage: pairing, and what lost
 * records (gaps) do to it.
 *
 * Owns: the slices open on each thread (an END closes the innermost into
 * one X event), the ghosts a forked child inherits (slices open in its
 * parent at the fork, which an END in the child may close), async slices
 * open per (process, category, id), flows open per (category, name, id)
 * and moved to the begin of their enclosing slice; and the gaps
 * (TB_REC_GAP): nothing is paired across one, the slices open at it are
 * cut there, what cannot be paired becomes a marked instant, a flow open
 * at it is cut for good; and the counters of each process's resident
 * memory (TB_REC_RSS).
 *
 * Receives: event records (struct tb_rec_event) from the model
 * (tb_conv_on_event, convert_model.c), with the thread and site the
 * model's tables keep (convert_tables.c; those of memory dumps go on to
 * convert_memdump.c), and other programs' probe hits (convert_usdt.c);
 * TB_REC_RSS records (tb_conv_on_rss); gap marks (tb_conv_on_gap); the
 * model's exits, execs and ctl stops (tb_conv_close_stack,
 * tb_conv_close_process).
 * Hands on: finished output events (struct oev: slices, instants,
 * counters, async and flow events, each owning copies of its records) to
 * the output queue (tb_conv_add_out, convert_queue.c), or, for a sink that
 * takes any order, those that need no copy at once (tb_conv_out_direct).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "convert/convert_int.h"

/* e, a slice that ended on t, in the time of its parent: the innermost
 * slice still open around it (or, at t's top level, the innermost slice
 * it inherited). Its whole duration if the filters keep it, else what
 * they kept inside it, which is then directly inside the parent
 * (oev.child, model.h). */
static void to_parent(struct conv *c, struct thread *t, const struct oev *e)
{
	uint64_t *child = t->depth ? &t->stack[t->depth - 1].child :
			  t->nghosts ? &t->ghosts[t->nghosts - 1].child : NULL;

	if (child)
		*child += !c->filtering || tb_conv_sel_match(c, e) ? e->dur : e->child;
}

/* e, an END on t, closes the slice on top of t's stack: e becomes that
 * slice (X), with e's site and record as its end's; or, for a slice whose
 * BEGIN was lost, as its begin's, from the gap's end. */
static void pop_slice(struct conv *c, struct thread *t, struct oev *e)
{
	const struct open_slice *o = &t->stack[--t->depth];

	e->ph = 'X';
	if (o->begin_lost) {
		e->ts = o->ev->hdr.ts;
		e->dur = e->ev->hdr.ts > e->ts ? e->ev->hdr.ts - e->ts : 0;
		e->seq = o->seq;
		e->lost = o->lost;
		e->begin_lost = true;
		e->child = o->child;
		c->gap.ends_after++;
		tb_conv_pool_put(c, o->ev);
		to_parent(c, t, e);
		return;
	}
	e->esite = e->site;
	e->eev = e->ev;
	e->ts = o->ev->hdr.ts;
	e->dur = e->eev->hdr.ts - e->ts;
	e->seq = o->seq;
	e->site = o->site;
	e->ev = o->ev;
	e->child = o->child;
	e->parent_lost = o->parent_lost;
	c->gap.parent_lost += o->parent_lost;
	to_parent(c, t, e);
}

/* Closes the slices open on t above depth keep at ts, innermost first,
 * marked with why, or (lost) as cut at a gap. A cut slice ends 1 ns before
 * the one it is in (it was open at least until then): viewers add ts and
 * dur in floating point, and equal ends can put a child past its parent.
 * A slice whose BEGIN was lost, and now its END, is not shown: nothing of
 * it is known. */
static int close_to(struct conv *c, struct thread *t, size_t keep, uint64_t ts,
		    const char *why, const struct lost *lost)
{
	int err;

	while (t->depth > keep) {
		struct open_slice *o = &t->stack[--t->depth];
		uint64_t end = lost && ts > t->depth ? ts - t->depth : ts;

		if (o->begin_lost) {
			tb_conv_pool_put(c, o->ev);
			continue;
		}
		struct oev e = {
			.ts = o->ev->hdr.ts, .seq = o->seq,
			.dur = end > o->ev->hdr.ts ? end - o->ev->hdr.ts : 0,
			.pid = o->ev->hdr.pid, .tid = o->ev->hdr.tid, .ph = 'X',
			.site = o->site, .ev = o->ev, .unfinished = why,
			.child = o->child, .parent_lost = o->parent_lost,
		};

		if (lost) {
			e.lost = *lost;
			c->gap.cut++;
		}
		c->gap.parent_lost += o->parent_lost;
		to_parent(c, t, &e);
		err = tb_conv_add_out(c, &e);
		if (err)
			return err;
	}
	return 0;
}

int tb_conv_close_stack(struct conv *c, struct thread *t, uint64_t ts,
			const char *why, const struct lost *lost)
{
	t->win = false;   /* what began in its gap and is still open ends with it */
	return close_to(c, t, 0, ts, why, lost);
}

/* Closes the slices open in process pid's threads (ALL_PIDS: every
 * process's). */
int tb_conv_close_process(struct conv *c, uint32_t pid, uint64_t ts, const char *why)
{
	size_t i;
	int err;

	for (i = 0; i < c->threads.cap; i++) {
		struct thread *t = c->threads.vals[i];

		if (t && (pid == ALL_PIDS || t->pid == pid) && t->depth) {
			err = tb_conv_close_stack(c, t, ts, why, NULL);
			if (err)
				return err;
		}
	}
	return 0;
}

/* A flow event is drawn between slices: DevTools binds it only to a slice
 * with the same ts, pid, tid (and cat), Perfetto and catapult to the slice
 * enclosing its ts ("bp":"e"). So it is moved to the begin of the slice
 * enclosing it on its thread, which every viewer then draws it from. */
static int flow_gate(struct conv *c, struct oev *e);

static int on_flow(struct conv *c, const struct tb_rec_event *ev,
		   const struct site *s, struct oev *e)
{
	struct thread *t = tb_conv_get_thread(c, ev->hdr.tid, ev->hdr.pid);
	int err;

	/* A start with no slice around it has nothing to be drawn from:
	 * DevTools drops it, and Perfetto binds it to the thread's last slice,
	 * ended or not, an arrow that never was. Left out, as its steps and
	 * end then are (flow_gate). */
	if (t && !t->depth && s->phase == 's') {
		free((void *)e->ev);
		c->gap.flows_left_out++;
		return 0;
	}
	err = t ? flow_gate(c, e) : -ENOMEM;

	if (err <= 0) {
		if (err)
			free((void *)e->ev);
		return err;
	}
	e->ph = s->phase;
	if (t->depth)
		e->ts = t->stack[t->depth - 1].ev->hdr.ts;
	tb_conv_pair_decide(c, e->pair, e);
	return tb_conv_add_out(c, e);
}

/* Frees the ghosts from index `from` on. */
void tb_conv_drop_ghosts(struct thread *t, size_t from)
{
	while (t->nghosts > from)
		free((void *)t->ghosts[--t->nghosts].ev);
}

/* An END in a forked child with nothing open of its own: it closes the
 * innermost inherited slice with the same category and name (or the
 * innermost one, for an END whose name is copied), which then starts at the
 * fork and is marked. Ghosts inside the matched one are dropped. */
static int end_ghost(struct conv *c, struct thread *t,
		     const struct tb_rec_event *ev, const struct site *s,
		     uint64_t seq)
{
	size_t k = t->nghosts;
	struct open_slice *g;
	struct oev e = { 0 };

	while (k > 0) {
		const struct site *b = t->ghosts[k - 1].site;

		if ((s->flags & TB_SITE_COPY_NAME) || (b->flags & TB_SITE_COPY_NAME) ||
		    (!strcmp(b->cat, s->cat) && !strcmp(b->name, s->name)))
			break;
		k--;
	}
	if (!k) {
		c->unmatched++;
		return 0;
	}
	g = &t->ghosts[k - 1];
	for (size_t i = k; i < t->nghosts; i++)   /* what they held is in g */
		g->child += t->ghosts[i].child;
	tb_conv_drop_ghosts(t, k);   /* the ones inside it */
	t->nghosts = k - 1;  /* g's copy goes to the output event */
	e.ph = 'X';
	e.ts = t->ghost_ts;
	e.dur = ev->hdr.ts - t->ghost_ts;
	e.seq = seq;
	e.pid = ev->hdr.pid;
	e.tid = ev->hdr.tid;
	e.site = g->site;
	e.ev = g->ev;
	e.esite = s;
	e.eev = ev;
	e.inherited = true;
	e.child = g->child;
	to_parent(c, t, &e);
	return tb_conv_add_out(c, &e);
}

/* A begin or end that cannot be paired, shown as what is known: an
 * instant at its time (ph 'I', or 'n' for an async one), named and with
 * its args, marked with why (tracebpf_end_of for an end, tracebpf_begin_of
 * for a begin) and the gap that explains it if one does (l), counted in
 * *n. Its other half is not invented. */
static int unpaired(struct conv *c, struct oev *e, char ph, const char *why,
		    const struct lost *l, uint64_t *n)
{
	e->ph = ph;
	if (e->site->phase == 'B' || e->site->phase == 'b')
		e->begin_of = why;
	else
		e->begun_before = why;
	if (l)
		e->lost = *l;
	(*n)++;
	return tb_conv_add_out(c, e);
}

/* The END of a slice that began before the recording, or before it was
 * started again: attaching (-p, or the kernel enabling a binary's sites
 * one by one) or a ctl start can come in the middle of a scope. Counted
 * in ends_before_recording. */
static int end_before(struct conv *c, struct oev *e)
{
	return unpaired(c, e, 'I', c->window ? "began before tracebpf ctl start" :
				   "began before the recording started", NULL, &c->ends_before);
}

/* Around lost records (a gap, l): an end whose begin, or a begin whose
 * end, may be among them. */
#define GAP_END_OF   "began before or during lost events"
#define GAP_BEGIN_OF "ended during or after lost events"

static int end_lost(struct conv *c, struct oev *e, const struct lost *l, char ph,
		    uint64_t *n)
{
	return unpaired(c, e, ph, GAP_END_OF, l, n);
}

static int begin_in_gap(struct conv *c, struct oev *e, const struct lost *l, char ph)
{
	return unpaired(c, e, ph, GAP_BEGIN_OF, l, &c->gap.inside);
}

/* Whether gap l (count 0: none) came since the current recording window
 * began (the last tracebpf ctl start, or the start). */
static bool in_window(const struct conv *c, const struct lost *l)
{
	uint64_t started = c->nstopped ? c->stopped[c->nstopped - 1].to : 0;

	return l->count && l->ts >= started;
}

/* Whether t may have lost records since the current recording window
 * began. */
static bool lost_in_window(const struct conv *c, const struct thread *t)
{
	return in_window(c, &t->lost);
}

/* An END with nothing open: a gap since the thread's window began explains
 * it, else the window's start does (a thread older than the window), else
 * nothing (unmatched: the record is freed). */
static int end_unopened(struct conv *c, struct thread *t, struct oev *e)
{
	if (lost_in_window(c, t))
		return end_lost(c, e, &t->lost, 'I', &c->gap.ends_after);
	if (t->born_window != c->window + 1)
		return end_before(c, e);
	free((void *)e->ev);
	c->unmatched++;
	return 0;
}

/* ------------------------------------------------------------- gaps -- */

/* The async slices open on one (process, category, id), as the viewers
 * pair b and e, innermost last; each holds a copy of its begin. */
struct async_track {
	struct tb_chain_link k;
	uint64_t pid, id;
	const char *cat;            /* the site's, kept for the whole conversion */
	struct open_slice *stack;
	size_t depth, cap;
};

static struct async_track *find_async(struct conv *c, const struct oev *e, bool create)
{
	uint64_t id = tb_conv_ev_id(e->ev), pid = tb_conv_out_pid(c, e->ev->hdr.pid);
	uint64_t h = tb_hash_bytes(tb_hash64(pid) ^ tb_hash64(id), e->site->cat,
				   strlen(e->site->cat));
	struct tb_chain_link *k;
	struct async_track *a;

	for (k = tb_chain_first(&c->gap.asyncs, h); k; k = k->next) {
		a = (struct async_track *)k;
		if (k->h == h && a->pid == pid && a->id == id && !strcmp(a->cat, e->site->cat))
			return a;
	}
	if (!create || !(a = calloc(1, sizeof(*a))))
		return NULL;
	*a = (struct async_track){ .k.h = h, .pid = pid, .id = id, .cat = e->site->cat };
	if (tb_chain_add(&c->gap.asyncs, &a->k)) {
		free(a);
		return NULL;
	}
	return a;
}

static void free_async(struct conv *c, struct async_track *a)
{
	tb_chain_del(&c->gap.asyncs, &a->k);
	while (a->depth) {
		a->depth--;
		free((void *)a->stack[a->depth].ev);
		tb_conv_pair_put(a->stack[a->depth].pair);
	}
	free(a->stack);
	free(a);
}

/* An async begin, with filters or --split: its slice is a pair. */
static int async_pair(struct conv *c, struct open_slice *o, struct oev *e)
{
	o->pair = tb_conv_pair_new();
	if (!o->pair) {
		free((void *)e->ev);
		return -ENOMEM;
	}
	tb_conv_pair_decide(c, o->pair, e);
	e->pair = tb_conv_pair_ref(o->pair);
	return tb_conv_add_out(c, e);
}

/* Async begin and end (instants pass): tracked so that a gap ends those
 * open at it (cut_async) and none is paired across one. Inside a gap
 * neither is paired; after one, an end with nothing open is marked. */
static int on_async(struct conv *c, struct oev *e)
{
	struct async_track *a;
	void *copy = NULL;

	if (e->ph == 'n')
		return tb_conv_add_out(c, e);
	if (e->ts <= c->gap.until)
		return e->ph == 'b' ? begin_in_gap(c, e, &c->gap.last, 'n') :
		       end_lost(c, e, &c->gap.last, 'n', &c->gap.inside);
	a = find_async(c, e, e->ph == 'b');
	if (e->ph == 'b') {
		if (!a || !(copy = tb_conv_copy_rec(e->ev)) ||
		    tb_conv_grow_array((void **)&a->stack, &a->cap, a->depth + 1, sizeof(*a->stack))) {
			free(copy);
			free((void *)e->ev);
			return -ENOMEM;
		}
		a->stack[a->depth++] = (struct open_slice){ .ev = copy, .site = e->site,
							    .seq = e->seq };
		if (c->selective)
			return async_pair(c, &a->stack[a->depth - 1], e);
		return tb_conv_add_out(c, e);
	}
	if (a && a->depth) {
		struct open_slice *o = &a->stack[--a->depth];

		free((void *)o->ev);
		e->pair = o->pair;   /* its reference goes to the end */
		e->pair_end = true;
		if (!a->depth)
			free_async(c, a);
		return tb_conv_add_out(c, e);
	}
	if (c->gap.marks)
		return end_lost(c, e, &c->gap.last, 'n', &c->gap.ends_after);
	return tb_conv_add_out(c, e);
}

/* At a gap, every open async slice ends there (at ts, not before anything
 * converted already), marked: one of its ends, or a begin inside it, may
 * be among the lost records. */
static int cut_async(struct conv *c, const struct lost *l, uint64_t ts)
{
	for (size_t i = 0; i < c->gap.asyncs.cap; i++) {
		while (c->gap.asyncs.b[i]) {
			struct async_track *a = (struct async_track *)c->gap.asyncs.b[i];

			while (a->depth) {
				struct open_slice *o = &a->stack[--a->depth];
				struct oev e = { .ts = ts, .seq = o->seq, .pid = o->ev->hdr.pid,
						 .tid = o->ev->hdr.tid, .ph = 'e', .site = o->site,
						 .ev = o->ev, .lost = *l, .pair = o->pair,
						 .pair_end = true };
				int err = tb_conv_add_out(c, &e);

				c->gap.cut++;
				if (err)
					return err;
			}
			free_async(c, a);
		}
	}
	return 0;
}

/* A flow (cat, name, id): open from its s to its f, or cut for good. */
struct flow {
	struct tb_chain_link k;
	uint64_t id;
	const char *cat;
	char *name;
	size_t nlen;
	uint64_t marks;             /* gap marks read before its s */
	bool cut;                   /* it was open at a gap */
	struct pair *pair;          /* with filters or --split */
};

static struct flow *find_flow(struct conv *c, const struct oev *e, bool create)
{
	size_t n = 0;
	const char *name = tb_conv_ev_name(e->site, e->ev, &n), *cat = e->site->cat;
	uint64_t id = tb_conv_ev_id(e->ev), h;
	struct tb_chain_link *k;
	struct flow *f;

	if (!name)
		name = "";
	h = tb_hash_bytes(tb_hash_bytes(tb_hash64(id), cat, strlen(cat) + 1), name, n);
	for (k = tb_chain_first(&c->gap.flows, h); k; k = k->next) {
		f = (struct flow *)k;
		if (k->h == h && f->id == id && f->nlen == n && !memcmp(f->name, name, n) &&
		    !strcmp(f->cat, cat))
			return f;
	}
	if (!create || !(f = calloc(1, sizeof(*f))))
		return NULL;
	*f = (struct flow){ .k.h = h, .id = id, .cat = cat, .name = malloc(n + 1), .nlen = n,
			    .marks = c->gap.marks };
	if (!f->name || tb_chain_add(&c->gap.flows, &f->k)) {
		free(f->name);
		free(f);
		return NULL;
	}
	memcpy(f->name, name, n);
	return f;
}

static void free_flow(struct conv *c, struct flow *f)
{
	tb_chain_del(&c->gap.flows, &f->k);
	tb_conv_pair_put(f->pair);
	free(f->name);
	free(f);
}

/* A flow's events share its pair (decided in on_flow, where the first
 * one gets its ts); its end takes the flow's reference. */
static int flow_pair(struct flow *f, struct oev *e)
{
	if (!f->pair && !(f->pair = tb_conv_pair_new()))
		return -ENOMEM;
	if (e->site->phase == 'f') {
		e->pair = f->pair;
		e->pair_end = true;
		f->pair = NULL;
	} else {
		e->pair = tb_conv_pair_ref(f->pair);
	}
	return 0;
}

/* Whether a flow event is written. No arrow may cross lost records (an
 * end and a start of the same id may be among them: it would join two
 * flows), and a viewer keeps a start without its end open for good,
 * ignoring the next start of the same flow and joining it to the next end
 * (Perfetto does). So a flow open at a gap is cut: none of its events is
 * written again; and no flow event inside a gap is. Nor is a step or end
 * whose start was not written (lost, left out, or before the recording):
 * Perfetto would join it to an earlier start of its id, an arrow that
 * never was. 1: written, 0: left out (its record freed), or -ENOMEM. */
static int flow_gate(struct conv *c, struct oev *e)
{
	bool start = e->site->phase == 's';
	struct flow *f = find_flow(c, e, false);

	if (f && f->marks != c->gap.marks) {
		f->cut = true;   /* a gap came while it was open */
		tb_conv_pair_abandon(c, f->pair);
	}
	if ((f && f->cut) || (!f && !start) || e->ts <= c->gap.until) {
		free((void *)e->ev);
		c->gap.flows_left_out++;
		return 0;
	}
	if (start && !f && !(f = find_flow(c, e, true)))
		return -ENOMEM;
	if (f && c->selective && flow_pair(f, e))
		return -ENOMEM;
	if (f && e->site->phase == 'f')
		free_flow(c, f);
	return 1;
}

/* The slices of t's gap window's base that may have ended in it are cut
 * there, marked; slices it inherited at a fork too, if the window may
 * have gone below its stack. */
static int win_cut(struct conv *c, struct thread *t)
{
	int64_t keep = (int64_t)t->win_base + t->win_low + t->win_klow;

	if (keep < 0) {
		tb_conv_drop_ghosts(t, 0);
		keep = 0;
	}
	return close_to(c, t, (size_t)keep, t->win_cut, NULL, &t->lost);
}

/* A slice whose BEGIN was lost in t's gap and that is open after it: on
 * t's stack from the gap's end, a record made for it, for its END to
 * name. */
static int push_begin_lost(struct conv *c, struct thread *t, uint64_t seq)
{
	struct tb_rec_event rec = {
		.hdr = { .type = TB_REC_EVENT, .size = sizeof(rec), .cpu = ~0u,
			 .ts = t->gap_until, .pid = t->pid, .tid = t->tid },
	};
	const struct tb_rec_event *ev = tb_conv_pool_copy(c, &rec.hdr);

	if (!ev || tb_conv_grow_array((void **)&t->stack, &t->cap, t->depth + 1,
				      sizeof(*t->stack))) {
		free((void *)ev);
		return -ENOMEM;
	}
	t->stack[t->depth++] = (struct open_slice){ .ev = ev, .seq = seq, .begin_lost = true,
						    .lost = t->lost };
	return 0;
}

/* t's gap window is over: the slices begun in it and still open after it
 * (net - low of what it did, the marks' and the records read) go on its
 * stack, begun at its end, their BEGINs lost. */
static int win_settle(struct conv *c, struct thread *t, uint64_t seq)
{
	int64_t n = t->win_net + t->win_knet - (t->win_low + t->win_klow);
	int err = 0;

	t->win = false;
	while (n-- > 0 && !err)
		err = push_begin_lost(c, t, seq);
	return err;
}

/* Before a record of t at ts: its gap window, if over. */
static int win_before(struct conv *c, struct thread *t, uint64_t ts, uint64_t seq)
{
	return t->win && ts > t->gap_until ? win_settle(c, t, seq) : 0;
}

/* A BEGIN (+1) or an END (-1) of t read in its gap window: unpaired, but
 * what it did counts with what was lost. */
static int win_read(struct conv *c, struct thread *t, int d)
{
	if (!t->win)
		return 0;
	t->win_knet += d;
	if (t->win_knet >= t->win_klow)
		return 0;
	t->win_klow = t->win_knet;
	return win_cut(c, t);
}

/* A gap whose mark says what t lost of its BEGINs and ENDs (d): with any
 * other gap open on t, in a window whose bounds add up; slices at the
 * window's base that may have ended in it are cut at its start. Nothing
 * of t is paired until its end, when the slices begun in it and open
 * after it are placed (win_settle). */
static int gap_depth(struct conv *c, struct thread *t, const struct lost *l,
		     const struct tb_gap_depth *d)
{
	if (!t->win) {
		t->win = true;
		t->win_base = t->depth;
		t->win_low = t->win_net = t->win_klow = t->win_knet = 0;
		t->win_cut = l->ts;
	}
	t->win_low += d->low;
	t->win_net += d->net;
	return win_cut(c, t);
}

/* A thread that may have lost events in a gap: until the gap's end nothing
 * of it is paired. With what it lost known (d), and the mark read in
 * time (before any later record of the thread) and in no gap that did not
 * say, gap_depth; otherwise its open slices end at the gap (or at its
 * latest record, for a mark read after it), marked, and slices it
 * inherited at a fork are dropped. */
static int gap_thread(struct conv *c, struct thread *t, const struct lost *l, uint64_t until,
		      const struct tb_gap_depth *d)
{
	uint64_t cut = t->last_ts > l->ts ? t->last_ts : l->ts;
	bool blind_open = !t->win && t->lost.count && t->gap_until >= l->ts;
	int err = win_before(c, t, l->ts, c->nrecs);

	if (until > t->gap_until)
		t->gap_until = until;
	t->lost = *l;
	if (err || (d && t->last_ts <= l->ts && !blind_open))
		return err ? err : gap_depth(c, t, l, d);
	tb_conv_drop_ghosts(t, 0);
	t->blind = *l;
	return tb_conv_close_stack(c, t, cut, NULL, l);
}

/* The "records lost" instant's site: category tracebpf (a viewer can
 * hide it), args gap (the mark's number) and records_lost. */
static const struct site *gap_site(struct conv *c, char scope)
{
	struct site *s = scope == 'p' ? &c->gap.site_p : &c->gap.site_t;

	if (!s->valid)
		*s = (struct site){
			.valid = true, .phase = 'I', .scope = scope, .nargs = 2,
			.arg_type = { TRACEBPF_ARG_UINT, TRACEBPF_ARG_UINT },
			.cat = "tracebpf", .name = "records lost",
			.argname = { "gap", "records_lost" },
		};
	return s;
}

/* A memory counter's site (docs/output.md, "Memory"): category memory,
 * Perfetto's names, one series "value" (bytes). k: TB_RSS_* or 4, the
 * total resident (file + anon + shmem). */
static const struct site *rss_site(struct conv *c, unsigned k)
{
	static const char *const names[5] = { "mem.rss.file", "mem.rss.anon", "mem.swap",
					       "mem.rss.shmem", "mem.rss" };
	struct site *s = &c->rss_site[k];

	if (!s->valid)
		*s = (struct site){
			.valid = true, .phase = 'C', .nargs = 1,
			.arg_type = { TRACEBPF_ARG_INT }, .cat = "memory", .name = names[k],
			.argname = { "value" },
		};
	return s;
}

/* One counter event of process pid: k's value at ts. */
static int rss_counter(struct conv *c, const struct tb_rec_rss *r, unsigned k, int64_t v)
{
	struct tb_rec_event rec = {
		.hdr = { .type = TB_REC_EVENT, .size = sizeof(rec), .cpu = r->hdr.cpu,
			 .ts = r->hdr.ts, .pid = r->hdr.pid, .tid = r->hdr.pid },
		.args = { (uint64_t)v },
	};
	const struct tb_rec_event *ev = tb_conv_pool_copy(c, &rec.hdr);
	struct oev e = {
		.ts = rec.hdr.ts, .seq = c->nrecs, .pid = r->hdr.pid, .tid = r->hdr.pid,
		.ph = 'C', .site = rss_site(c, k), .ev = ev,
	};

	return ev ? tb_conv_add_out(c, &e) : -ENOMEM;
}

int tb_conv_on_rss(struct conv *c, const struct tb_rec_rss *r)
{
	struct proc *p = tb_hmap_get(&c->procs, r->hdr.pid);
	int err;

	if (!p || r->member > TB_RSS_SHMEM)
		return 0;
	p->rss[r->member] = r->bytes;
	err = rss_counter(c, r, r->member, r->bytes);
	if (!err && r->member != TB_RSS_SWAP)
		err = rss_counter(c, r, 4, p->rss[TB_RSS_FILE] + p->rss[TB_RSS_ANON] +
				  p->rss[TB_RSS_SHMEM]);
	return err;
}

/* The gap on the timeline of thread tid of process pid (scope 't'), or of
 * process pid (scope 'p'): an instant at the latest time read, which no
 * event written yet follows (where the gap began, unless its mark came
 * late). */
static int gap_instant(struct conv *c, const struct lost *l, uint32_t pid, uint32_t tid,
		       char scope)
{
	struct tb_rec_event rec = {
		.hdr = { .type = TB_REC_EVENT, .size = sizeof(rec), .cpu = ~0u,
			 .ts = c->last_ts, .pid = pid, .tid = tid },
		.args = { c->gap.marks, l->count },
	};
	const struct tb_rec_event *ev = tb_conv_pool_copy(c, &rec.hdr);
	struct oev e = {
		.ts = rec.hdr.ts, .seq = c->nrecs, .pid = pid, .tid = tid, .ph = 'I',
		.site = gap_site(c, scope), .ev = ev,
	};

	return ev ? tb_conv_add_out(c, &e) : -ENOMEM;
}

/* A gap of every thread: an instant on each live process's timeline. */
static int gap_processes(struct conv *c, const struct lost *l)
{
	int err = 0;

	for (size_t i = 0; i < c->procs.cap && !err; i++) {
		const struct proc *p = c->procs.vals[i];

		if (p && !p->dead)
			err = gap_instant(c, l, p->pid, p->pid, 'p');
	}
	return err;
}

/* The thread tid a gap names: the live one, or a new one known only from
 * gaps so far (its first record gives it its process). */
static struct thread *gap_tid(struct conv *c, uint32_t tid)
{
	struct thread *t = tb_hmap_get(&c->threads, tid);

	if (t && !t->dead)
		return t;
	t = tb_conv_new_thread(c, tid, t);
	if (t)
		t->placeholder = true;
	return t;
}

/* Every flow open at a gap is cut (flow_gate, when its next event comes):
 * with --split, say so now, so that it does not hold its part open. */
static void abandon_flows(struct conv *c)
{
	for (size_t i = 0; i < c->gap.flows.cap; i++)
		for (struct tb_chain_link *k = c->gap.flows.b[i]; k; k = k->next)
			tb_conv_pair_abandon(c, ((struct flow *)k)->pair);
}

/* Whether mark g names thread tid and says what it lost (then in *d). */
static bool gap_says(const struct tb_rec_gap *g, uint32_t tid, struct tb_gap_depth *d)
{
	for (uint32_t i = 0; i < g->ntids && i < TB_GAP_TIDS; i++)
		if (g->tid[i] == tid)
			return tb_gap_depth(g, i, d);
	return false;
}

/* TB_REC_GAP, read at its earliest lost record's time, or later: a mark
 * written by the recorder can follow its records (STATS) stamped after
 * it, and a mark read after events stamped later cuts where they are.
 * Kernel records' gaps are counted only: no slice is made of them. */
int tb_conv_on_gap(struct conv *c, const struct tb_rec_gap *g)
{
	struct lost l = { .ts = g->hdr.ts, .count = g->count };
	uint64_t until = g->last_ts > c->last_ts ? g->last_ts : c->last_ts;
	struct tb_gap_depth d;
	int err = 0;

	if (g->kind != TB_GAP_APP) {
		c->gap.kmarks++;
		c->gap.krecords += g->count;
		return 0;
	}
	c->gap.marks++;
	c->gap.records += g->count;
	if (g->flags & TB_GAPF_ALL) {
		for (size_t i = 0; i < c->threads.cap && !err; i++) {
			struct thread *t = c->threads.vals[i];

			if (t && !t->dead && !gap_says(g, t->tid, &d))
				err = gap_thread(c, t, &l, until, NULL);
		}
		c->gap.all = l;
		if (until > c->gap.all_until)
			c->gap.all_until = until;
		if (!err)
			err = gap_processes(c, &l);
	}
	for (uint32_t i = 0; i < g->ntids && i < TB_GAP_TIDS && !err; i++) {
		struct thread *t = gap_tid(c, g->tid[i]);

		err = t ? gap_thread(c, t, &l, until, tb_gap_depth(g, i, &d) ? &d : NULL) :
			  -ENOMEM;
		/* a thread known only from gaps has no process to show it in */
		if (!err && !t->placeholder)
			err = gap_instant(c, &l, t->pid, t->tid, 't');
	}
	if (!err)
		err = cut_async(c, &l, c->last_ts);
	if (c->selective)
		abandon_flows(c);
	c->gap.last = l;   /* and every flow open now is cut (flow_gate) */
	if (until > c->gap.until)
		c->gap.until = until;
	return err;
}

void tb_conv_gaps_free(struct conv *c)
{
	for (size_t i = 0; i < c->gap.asyncs.cap; i++)
		while (c->gap.asyncs.b[i])
			free_async(c, (struct async_track *)c->gap.asyncs.b[i]);
	for (size_t i = 0; i < c->gap.flows.cap; i++)
		while (c->gap.flows.b[i])
			free_flow(c, (struct flow *)c->gap.flows.b[i]);
	free(c->gap.asyncs.b);
	free(c->gap.flows.b);
}

/* For an any-order sink, the events that need no copy of their record
 * go out at once: an instant, a counter, the END of the slice open on its
 * thread (whose BEGIN's copy is then freed). 1: e is none of those. */
static int event_direct(struct conv *c, struct oev *e)
{
	struct thread *t;

	switch (e->site->phase) {
	case 'I':
	case 'C':
		e->ph = e->site->phase;
		break;
	case 'E':
		t = tb_conv_get_thread(c, e->tid, (uint32_t)e->pid);
		if (!t || !t->depth || e->ts <= t->gap_until || t->win ||
		    t->stack[t->depth - 1].begin_lost)
			return 1;
		pop_slice(c, t, e);
		break;
	default:
		return 1;
	}
	e->pid = tb_conv_out_pid(c, (uint32_t)e->pid);
	tb_conv_out_direct(c, e);
	if (e->ph == 'X')
		tb_conv_pool_put(c, e->ev);
	return 0;
}

int tb_conv_on_event(struct conv *c, const struct tb_rec_event *rec, uint64_t seq)
{
	return tb_conv_on_site_event(c, rec, tb_conv_find_site(c, rec->hdr.pid, rec->site), seq);
}

static const struct oev no_oev;

int tb_conv_on_site_event(struct conv *c, const struct tb_rec_event *rec, struct site *s,
			  uint64_t seq)
{
	const struct tb_rec_event *ev = rec;
	struct thread *t;
	/* copied from a zero one: GCC zeroes a struct oev in place with rep
	 * stos, whose start-up was 15% of tracebpf report's CPU time */
	struct oev e = no_oev;
	int err;

	e.ts = ev->hdr.ts;
	e.seq = seq;
	e.pid = ev->hdr.pid;
	e.tid = ev->hdr.tid;
	e.ph = 'I';
	e.site = s;
	e.ev = ev;

	c->events++;
	if (!s) {
		c->unresolved++;
		return 0;
	}
	if (s->phase == 'M')   /* names are copied, the record is not kept */
		return tb_conv_on_metadata(c, rec, s);
	if (c->cats && !s->usdt && !tb_conv_cats_keep(c, s, tb_conv_get_thread(c, rec->hdr.tid,
										  rec->hdr.pid)))
		return 0;
	if (s->phase == 'v')   /* memory dumps: copied too (convert_memdump.c) */
		return tb_conv_on_memdump(c, rec, s, seq);
	if (c->direct && !event_direct(c, &e))
		return 0;
	ev = tb_conv_pool_copy(c, &rec->hdr);   /* kept by an open slice or an output event */
	if (!ev)
		return -ENOMEM;
	e.ev = ev;
	switch (s->phase) {
	case 'B':
		t = tb_conv_get_thread(c, ev->hdr.tid, ev->hdr.pid);
		err = t ? win_before(c, t, ev->hdr.ts, seq) : -ENOMEM;
		if (!err && ev->hdr.ts <= t->gap_until && !(err = win_read(c, t, 1)))
			return begin_in_gap(c, &e, &t->lost, 'I');
		if (!err)
			err = tb_conv_grow_array((void **)&t->stack, &t->cap, t->depth + 1,
						 sizeof(*t->stack));
		if (err) {
			free((void *)ev);
			return err;
		}
		/* at the top level after a gap of its thread that did not say
		 * what it lost, a slice whose BEGIN was lost there and whose
		 * END is still to come may enclose it: say so */
		t->stack[t->depth] = (struct open_slice){
			.ev = ev, .site = s, .seq = seq,
			.parent_lost = !t->depth && in_window(c, &t->blind) };
		t->depth++;
		return 0;
	case 'E':
		t = tb_conv_get_thread(c, ev->hdr.tid, ev->hdr.pid);
		err = t ? win_before(c, t, ev->hdr.ts, seq) : -ENOMEM;
		if (!err && ev->hdr.ts <= t->gap_until && !(err = win_read(c, t, -1)))
			return end_lost(c, &e, &t->lost, 'I', &c->gap.inside);
		if (err) {
			free((void *)ev);
			return err;
		}
		if (!t->depth) {
			if (t->nghosts)
				return end_ghost(c, t, ev, s, seq);
			return end_unopened(c, t, &e);
		}
		pop_slice(c, t, &e);
		return tb_conv_add_out(c, &e);
	case 'C':
		e.ph = 'C';
		return tb_conv_add_out(c, &e);
	case 'b':
	case 'e':
	case 'n':
		e.ph = s->phase;
		return on_async(c, &e);
	case 's':
	case 't':
	case 'f':
		return on_flow(c, ev, s, &e);
	default:
		return tb_conv_add_out(c, &e);
	}
}

/* The child's main thread inherits the forking thread's open slices. */
int tb_conv_inherit_ghosts(struct conv *c, const struct tb_rec_fork *f)
{
	struct thread *pt = tb_hmap_get(&c->threads, f->hdr.tid);
	struct thread *ct = tb_conv_get_thread(c, f->child_tid, f->child_pid);

	size_t i;

	if (!ct)
		return -ENOMEM;
	tb_conv_drop_ghosts(ct, 0);
	free(ct->ghosts);
	ct->ghosts = NULL;
	if (!pt || pt->pid != f->hdr.pid || !pt->depth)
		return 0;
	ct->ghosts = calloc(pt->depth, sizeof(*ct->ghosts));
	if (!ct->ghosts)
		return -ENOMEM;
	ct->ghost_ts = f->hdr.ts;
	for (i = 0; i < pt->depth; i++) {
		void *copy;

		if (pt->stack[i].begin_lost)   /* nothing to match an END with */
			continue;
		copy = tb_conv_copy_rec(pt->stack[i].ev);
		if (!copy)
			return -ENOMEM;
		ct->ghosts[ct->nghosts] = pt->stack[i];
		ct->ghosts[ct->nghosts].ev = copy;
		ct->ghosts[ct->nghosts].child = 0;   /* its slices in the child are to come */
		ct->nghosts++;
	}
	return 0;
}
