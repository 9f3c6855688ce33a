// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert_model.c - the converter's first stage: the model of the traced
 * processes, and loading.
 *
 * Owns: what the records say of processes (a pid reused within the
 * recording is a new incarnation), threads, the sites of each process (a
 * forked child sees its parent's, an exec clears them), names and command
 * lines, the category rules and the tracebpf ctl stop..start windows,
 * kept in tables that every stage looks up (convert_tables.c); the merge
 * that yields the records in time order (tb_model_rank), the loop that
 * takes each one (tb_conv_process), and when the output queue may write
 * what it holds (out_low).
 *
 * Receives: the trace's records (struct tb_rec_hdr) in time order from
 * the merge (merge.h) over the reader's chunks.
 * Hands on: each event record (struct tb_rec_event) to the pairing stage
 * (tb_conv_on_event, convert_pair.c), which looks its site and thread up
 * in the tables; gap marks to tb_conv_on_gap; kernel records to the
 * filters (tb_conv_add_kernel, convert_select.c). At an exit, an exec, a
 * ctl stop and the end of the records it has the pairing stage close what
 * is open.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "convert/convert_int.h"
#include "ftrace.h"
#include "merge.h"
#include "swchain.h"

static void copy_comm(char dst[17], const char *src)
{
	size_t n = strnlen(src, 16);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* The command line of a process (at the start, after each exec). */
static int set_cmdline(struct conv *c, const struct tb_rec_cmdline *rec)
{
	struct proc *p = tb_conv_get_proc(c, rec->hdr.pid);
	size_t room = rec->hdr.size - sizeof(*rec), n;
	char *s;

	if (!p)
		return -ENOMEM;
	/* the kernel side copies the argument area as it is (2.10): the NULs
	 * between the arguments are spaces, those at its end are not kept */
	n = rec->len < room ? rec->len : room;
	while (n && !((const char *)(rec + 1))[n - 1])
		n--;
	s = malloc(n + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, rec + 1, n);
	for (size_t i = 0; i < n; i++)
		if (!s[i])
			s[i] = ' ';
	s[n] = 0;
	free(p->cmdline);
	p->cmdline = s;
	p->title = rec->hdr.cpu != ~0u;
	return 0;
}

/* A comm for tid (of process pid): names the thread, and the process when
 * tid is its main thread. */
static int set_name(struct conv *c, uint32_t pid, uint32_t tid, const char *comm)
{
	struct thread *t = tb_conv_get_thread(c, tid, pid);
	struct proc *p = tb_conv_get_proc(c, pid);

	if (!t || !p)
		return -ENOMEM;
	copy_comm(t->name, comm);
	t->has_name = true;
	if (tid == pid) {
		copy_comm(p->name, comm);
		p->has_name = true;
	}
	return 0;
}

/* At equal timestamps: a site descriptor comes before the hit that
 * reported it (the BPF side stamps both with the same ts), a gap before
 * the records stamped at its first loss (they may be in it), process changes
 * before the events of the new process or thread, exits after the thread's
 * last events, then file order. */
uint32_t tb_model_rank(uint16_t type)
{
	switch (type) {
	case TB_REC_SITE:
	case TB_REC_USDT_PROBE:
	case TB_REC_GAP:
		return 0;
	case TB_REC_FORK:
	case TB_REC_EXEC:
	case TB_REC_COMM:
		return 1;
	case TB_REC_EVENT:
	case TB_REC_EVENT_ID:
	case TB_REC_USDT:
		return 2;
	case TB_REC_EXIT:
		return 3;
	default:
		return 4;
	}
}

/* Every offset is checked: the bytes come from the traced application. */
void tb_site_parse(const struct tb_rec_site *rec, struct site *s)
{
	const char *desc = (const char *)(rec + 1);
	struct tracebpf_site d;
	size_t off, i;
	const char **str[3 + TB_MAX_ARGS] = { &s->cat, &s->name };
	size_t nstr;

	memset(s, 0, sizeof(*s));
	if (rec->flags & TB_SITEF_FAULT ||
	    rec->len > rec->hdr.size - sizeof(*rec) || rec->len < sizeof(d))
		return;
	memcpy(&d, desc, sizeof(d));
	if (d.magic != TRACEBPF_SITE_MAGIC || d.size < sizeof(d) || d.size > rec->len ||
	    d.nargs > TB_MAX_ARGS)
		return;
	if (!strchr("BEICbenstfMv", d.phase) || !d.phase)
		return;
	if (d.flags & ~(TB_SITE_COPY_NAME | TB_SITE_STEP | TB_SITE_ID))
		return;
	for (i = 0; i < d.nargs; i++)
		if (d.arg_type[i] < TB_ARG_INT || d.arg_type[i] > TB_ARG_PTR)
			return;
	nstr = 2;
	if (d.flags & TB_SITE_STEP)
		str[nstr++] = &s->step;
	for (i = 0; i < d.nargs; i++)
		str[nstr++] = &s->argname[i];
	off = sizeof(d);
	for (i = 0; i < nstr; i++) {
		const char *nul;

		if (off >= d.size)
			return;
		nul = memchr(desc + off, '\0', d.size - off);
		if (!nul)
			return;
		*str[i] = desc + off;
		off = (size_t)(nul - desc) + 1;
	}
	/* since 2.5: the source file after the strings, the descriptor's
	 * last bytes, and the line */
	if (off < d.size && memchr(desc + off, '\0', d.size - off) == desc + d.size - 1) {
		s->file = desc + off;
		s->line = d.line;
	}
	s->phase = (char)d.phase;
	s->scope = d.scope == 'p' || d.scope == 'g' ? (char)d.scope : 't';
	s->nargs = d.nargs;
	s->flags = d.flags;
	memcpy(s->arg_type, d.arg_type, sizeof(d.arg_type));
	s->valid = true;
}

static int on_site(struct conv *c, const struct tb_rec_site *orig)
{
	struct proc *p = tb_conv_get_proc(c, orig->hdr.pid);
	const struct tb_rec_site *rec;
	struct site *s, *old;
	int err;

	if (!p)
		return -ENOMEM;
	/* the site's strings point into its record: keep both together */
	err = tb_conv_grow_array((void **)&c->sites, &c->sites_cap, c->nsites + 1,
				 sizeof(*c->sites));
	if (err)
		return err;
	s = malloc(sizeof(*s) + orig->hdr.size);
	if (!s)
		return -ENOMEM;
	memcpy(s + 1, orig, orig->hdr.size);
	rec = (const void *)(s + 1);
	c->sites[c->nsites++] = s;
	tb_site_parse(rec, s);
	/* Latest wins, except that a descriptor the BPF side failed to read
	 * does not hide a good one for the same image. */
	old = tb_hmap_get(&p->sites, rec->site);
	if (!s->valid && old && old->valid)
		return 0;
	return tb_hmap_put(&p->sites, rec->site, s);
}

static int on_fork(struct conv *c, const struct tb_rec_fork *f)
{
	struct proc *parent, *child;
	size_t i;
	int err;

	struct thread *t = tb_conv_get_thread(c, f->child_tid, f->child_pid);

	if (!t)
		return -ENOMEM;
	t->born_window = c->window + 1;
	/* born after the gaps it was taken to be in: it lost nothing there */
	if (f->hdr.ts > t->gap_until) {
		t->lost = (struct lost){ 0 };
		t->blind = (struct lost){ 0 };
		t->gap_until = 0;
		t->win = false;
	}
	err = set_name(c, f->child_pid, f->child_tid, f->comm);
	if (err || f->flags & TB_FORKF_THREAD)
		return err;
	/* A new process runs a copy of its parent's image: same sites. */
	parent = tb_conv_get_proc(c, f->hdr.pid);
	child = tb_conv_get_proc(c, f->child_pid);
	if (!parent || !child)
		return -ENOMEM;
	err = tb_conv_inherit_ghosts(c, f);
	if (err)
		return err;
	tb_hmap_free(&child->sites);
	child->forked = child->pid != parent->pid;
	child->parent = parent->pid;
	child->parent_image = parent->image;
	for (i = 0; i < parent->sites.cap; i++) {
		if (!parent->sites.vals[i])
			continue;
		err = tb_hmap_put(&child->sites, parent->sites.keys[i],
			       parent->sites.vals[i]);
		if (err)
			return err;
	}
	return 0;
}

static int on_exec(struct conv *c, const struct tb_rec_exec *x)
{
	struct thread *old = tb_hmap_get(&c->threads, x->old_tid);
	struct proc *p = tb_conv_get_proc(c, x->hdr.pid);
	int err;

	if (!p)
		return -ENOMEM;
	if (old && old->depth) {
		err = tb_conv_close_stack(c, old, x->hdr.ts, "process exec'd", NULL);
		if (err)
			return err;
	}
	err = tb_conv_close_process(c, x->hdr.pid, x->hdr.ts, "process exec'd");
	if (!err)
		err = tb_conv_md_close(c, x->hdr.pid, "the process exec'd before the dump's end");
	if (err)
		return err;
	tb_hmap_free(&p->sites);   /* a new image: its sites are new */
	{
		struct thread *t = tb_hmap_get(&c->threads, x->hdr.tid);

		if (t)
			tb_conv_drop_ghosts(t, 0);   /* never ended: dropped */
	}
	p->image++;
	p->forked = false;
	return set_name(c, x->hdr.pid, x->hdr.tid, x->comm);
}

/* After its exit, a tid (or a whole process's pid) that shows up again
 * belongs to a new thread (process): tb_conv_get_thread()/tb_conv_get_proc() start one. */
static void mark_dead(struct conv *c, const struct tb_rec_exit *x)
{
	struct thread *t = tb_hmap_get(&c->threads, x->hdr.tid);
	struct proc *p;
	size_t i;

	if (t) {
		t->dead = true;
		tb_conv_drop_ghosts(t, 0);
	}
	if (!(x->flags & TB_EXITF_PROCESS))
		return;
	p = tb_hmap_get(&c->procs, x->hdr.pid);
	if (p)
		p->dead = true;
	c->site_gen++;   /* the pid's next record starts a process */
	for (i = 0; i < c->threads.cap; i++) {
		t = c->threads.vals[i];
		if (t && t->pid == x->hdr.pid) {
			t->dead = true;
			tb_conv_drop_ghosts(t, 0);
		}
	}
}

static int on_exit_(struct conv *c, const struct tb_rec_exit *x)
{
	struct thread *t = tb_conv_get_thread(c, x->hdr.tid, x->hdr.pid);
	int err;

	if (!t)
		return -ENOMEM;
	err = tb_conv_close_stack(c, t, x->hdr.ts, "thread exited", NULL);
	if (!err && x->flags & TB_EXITF_PROCESS)
		err = tb_conv_close_process(c, x->hdr.pid, x->hdr.ts, "thread exited");
	if (!err && x->flags & TB_EXITF_PROCESS)
		err = tb_conv_md_close(c, x->hdr.pid, "the process exited before the dump's end");
	if (!err)
		err = set_name(c, x->hdr.pid, x->hdr.tid, x->comm);
	if (!err)
		mark_dead(c, x);
	return err;
}

/* tracebpf ctl stop: the ends of the slices open now are not recorded, so
 * they end here, marked; an end recorded after the next start has no open
 * begin (unmatched_ends). start: the window closes. */
static bool is_stopped(const struct conv *c)
{
	return c->nstopped && c->stopped[c->nstopped - 1].to == UINT64_MAX;
}

static int on_ctl(struct conv *c, const struct tb_rec_ctl *x)
{
	int err;

	if (x->hdr.size < sizeof(*x))
		return 0;
	if (x->off && !is_stopped(c)) {
		tb_swchain_stopped(c->sched.ch);
		err = tb_conv_close_process(c, ALL_PIDS, x->hdr.ts, "recording stopped");
		if (!err)
			err = tb_conv_grow_array((void **)&c->stopped, &c->stopped_cap, c->nstopped + 1,
						 sizeof(*c->stopped));
		if (err)
			return err;
		c->stopped[c->nstopped].from = x->hdr.ts;
		c->stopped[c->nstopped++].to = UINT64_MAX;
	} else if (!x->off && is_stopped(c)) {
		c->stopped[c->nstopped - 1].to = x->hdr.ts;
		c->window++;   /* slices that began before now are not known */
	}
	return 0;
}

/* The category rules from now on. */
static int on_cats(struct conv *c, const struct tb_rec_cats *x)
{
	if (x->hdr.size < sizeof(*x) || x->len > TRACEBPF_CATS_BYTES ||
	    x->hdr.size < sizeof(*x) + x->len)
		return 0;   /* not ours to judge by: every event stays */
	if (!c->cats && !(c->cats = calloc(1, sizeof(*c->cats))))
		return -ENOMEM;
	memcpy(c->cats->rules, x + 1, x->len);
	c->cats->len = x->len;
	c->cats_gen++;
	return 0;
}

/* A filter from now on: kept for the metadata (the kernel side applied
 * it; the file holds only what it let through). */
static int on_filter(struct conv *c, const struct tb_rec_filter *x)
{
	struct tb_rec_filter **nv, *copy;

	if (x->hdr.size < sizeof(*x) || x->ntids > TB_RECF_MAX_IDS ||
	    x->npids > TB_RECF_MAX_IDS ||
	    x->hdr.size < sizeof(*x) + (x->ntids + x->npids) * sizeof(__u32))
		return 0;   /* not one to show */
	nv = realloc(c->filters, (c->nfilters + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	c->filters = nv;
	copy = tb_conv_copy_rec(x);
	if (!copy)
		return -ENOMEM;
	c->filters[c->nfilters++] = copy;
	return 0;
}

/* Records a stopped recording does not show: events, not process changes. */
static bool shown_while_on(uint16_t type)
{
	switch (type) {
	case TB_REC_EVENT:
	case TB_REC_EVENT_ID:
	case TB_REC_USDT:
	case TB_REC_SWITCH:
	case TB_REC_WAKE:
	case TB_REC_CPU:
	case TB_REC_TP:
		return true;
	default:
		return false;
	}
}

/* The time before which the queue may write what it holds: nothing still
 * to come can precede it. That is the earliest of the records still to be
 * processed (ts >= now), the begin of every open (or inherited, for a
 * forked child) slice and memory dump, and, within bounds, each CPU's last
 * switch (a break's mark begins there: convert_sched.c). */
static uint64_t out_low(const struct conv *c, uint64_t now)
{
	uint64_t low = now;
	size_t i;

	for (i = 0; i < c->threads.cap; i++) {
		const struct thread *t = c->threads.vals[i];

		if (t && t->depth && t->stack[0].ev->hdr.ts < low)
			low = t->stack[0].ev->hdr.ts;
		/* slices begun in a gap that said so start at its end */
		if (t && t->win && t->gap_until < low)
			low = t->gap_until;
		/* an inherited slice ending later starts at the fork */
		if (t && t->nghosts && t->ghost_ts < low)
			low = t->ghost_ts;
	}
	low = tb_conv_md_low(c, low);   /* an open memory dump's begin */
	return tb_conv_sched_low(c, low);
}

int tb_conv_process(struct conv *c, enum tb_conv_stage *stage)
{
	const struct tb_rec_hdr *h;
	struct thread *t;
	uint64_t i = 0;
	int err = 0, ret;

	while (!err && (ret = tb_merge_next(c->merge, &h)) > 0) {
		c->nrecs++;
		i++;
		if (h->ts > c->last_ts)
			c->last_ts = h->ts;
		if (i % 4096 == 0 && !c->direct)
			tb_conv_out_flush(c, out_low(c, h->ts), false);
		if (h->type == TB_REC_CTL) {
			err = on_ctl(c, (const void *)h);
			continue;
		}
		if (h->type == TB_REC_CATS) {
			err = on_cats(c, (const void *)h);
			continue;
		}
		if (h->type == TB_REC_FILTER) {
			err = on_filter(c, (const void *)h);
			continue;
		}
		if (h->type == TB_REC_GAP) {
			tb_swchain_gap(c->sched.ch, (const void *)h);
			err = tb_conv_on_gap(c, (const void *)h);
			continue;
		}
		if (h->type == TB_REC_USDT_PROBE) {
			err = tb_conv_on_usdt_probe(c, (const void *)h);
			continue;
		}
		if (shown_while_on(h->type) && is_stopped(c)) {
			c->while_stopped++;
			continue;
		}
		if (h->type == TB_REC_STATS) {
			void *st = tb_conv_copy_rec(h);   /* the last one wins */

			if (!st)
				return -ENOMEM;
			free(c->stats);
			c->stats = st;
			continue;
		}
		/* system-wide kernel events: ftrace text, no M events per task */
		if (tb_ftrace_is_kernel(h->type)) {
			err = tb_conv_add_kernel(c, h);
			continue;
		}
		/* every pid and tid seen gets named */
		if (!tb_conv_get_proc(c, h->pid) || !(t = tb_conv_get_thread(c, h->tid, h->pid)))
			return -ENOMEM;
		if (h->ts > t->last_ts)
			t->last_ts = h->ts;
		if (h->type != TB_REC_EVENT && h->type != TB_REC_EVENT_ID && h->type != TB_REC_USDT)
			c->site_gen++;   /* a lookup may find another site now */
		switch (h->type) {
		case TB_REC_EVENT:
		case TB_REC_EVENT_ID:
			err = tb_conv_on_event(c, (const void *)h, i);
			break;
		case TB_REC_USDT:
			err = tb_conv_on_usdt(c, (const void *)h, i);
			break;
		case TB_REC_SITE:
			err = on_site(c, (const void *)h);
			break;
		case TB_REC_FORK:
			err = on_fork(c, (const void *)h);
			break;
		case TB_REC_EXEC:
			err = on_exec(c, (const void *)h);
			break;
		case TB_REC_EXIT:
			err = on_exit_(c, (const void *)h);
			break;
		case TB_REC_COMM:
			err = set_name(c, h->pid, h->tid,
				       ((const struct tb_rec_comm *)h)->comm);
			break;
		case TB_REC_CMDLINE:
			err = set_cmdline(c, (const void *)h);
			break;
		case TB_REC_RSS:
			err = tb_conv_on_rss(c, (const void *)h);
			break;
		default:
			break;
		}
	}
	if (!err && ret < 0) {
		*stage = TB_STAGE_READ;
		return ret;
	}
	for (i = 0; i < c->threads.cap && !err; i++) {
		struct thread *t = c->threads.vals[i];

		if (t && t->depth)
			err = tb_conv_close_stack(c, t, c->last_ts, "recording ended", NULL);
	}
	if (!err)
		err = tb_conv_md_close(c, ALL_PIDS, "the recording ended before the dump's end");
	if (!err)
		tb_conv_out_flush(c, 0, true);
	return err;
}

void tb_conv_free_proc(struct proc *p)
{
	tb_conv_md_free_proc(p);
	tb_hmap_free(&p->sites);
	free(p->app_name);
	free(p->cmdline);
	free(p);
}

void tb_conv_free_thread(struct thread *t)
{
	while (t->depth)
		free((void *)t->stack[--t->depth].ev);
	tb_conv_drop_ghosts(t, 0);
	free(t->stack);
	free(t->ghosts);
	free(t->app_name);
	free(t);
}

/* Records the merge may hold for a file without rounds (format 1.x). */
#define MERGE_MAX (4u << 20)

int tb_conv_model_open(struct conv *c, struct tb_reader *r, const struct tb_model_sink *sink)
{
	int err = tb_ftrace_new(&c->ftrace);

	if (!err)
		err = tb_conv_sched_open(c, r);
	if (!err)
		err = tb_merge_new(&c->merge, r, tb_model_rank, MERGE_MAX);
	/* a second core reads and merges for the output queue and its
	 * heap, and only decodes for an any-order sink, which does less */
	if (!err)
		tb_merge_ahead(c->merge, sink->any_order ? TB_AHEAD_DECODE : TB_AHEAD_MERGE);
	c->sink = sink;
	return err;
}

/* The same numbers as write_metadata's. */
void tb_model_counts(const struct tb_model *m, struct tb_model_counts *o)
{
	const struct conv *c = &m->c;

	*o = (struct tb_model_counts){
		.events = c->events, .unresolved_sites = c->unresolved,
		.unmatched_ends = c->unmatched, .ends_before_recording = c->ends_before,
		.gaps = c->gap.marks, .gap_records = c->gap.records,
		.kernel_gaps = c->gap.kmarks, .kernel_gap_records = c->gap.krecords,
		.slices_cut_at_gaps = c->gap.cut, .ends_after_gaps = c->gap.ends_after,
		.events_in_gaps = c->gap.inside, .flow_events_left_out = c->gap.flows_left_out,
		.slices_parent_lost = c->gap.parent_lost,
		.stopped_windows = c->nstopped, .records_while_stopped = c->while_stopped,
		.forced = c->forced, .stats = c->stats,
		.memory_dumps = c->md_dumps, .memory_dump_records_without_dump = c->md_orphans,
		.drops_total = c->stats ? c->stats->drops_total : 0,
		.lost_processes = c->stats ? tb_stats_lost_procs(c->stats) : 0,
		.sched_switches = tb_conv_sched_any(c),
	};
	tb_conv_sched_counts(c, NULL, o->sched_breaks);
}

/* The incarnation of a process whose events carry out_pid. */
static const struct proc *proc_of(const struct conv *c, uint64_t out_pid)
{
	const struct proc *p = tb_hmap_get(&c->procs, out_pid % TB_PID_SPAN);

	for (size_t i = 0; i < c->nold_procs && (!p || p->out_pid != out_pid); i++)
		p = c->old_procs[i];
	return p && p->out_pid == out_pid ? p : NULL;
}

/* Names t and its process as write_names does. */
static int name_thread(const struct conv *c, const struct thread *t,
		       int (*fn)(void *ctx, const struct tb_model_thread *t), void *ctx)
{
	const struct proc *p = proc_of(c, t->out_pid);
	struct tb_model_thread mt = { .pid = t->out_pid, .tid = t->tid };
	char tname[64], pname[TB_PROC_LABEL_MAX];

	if (t->placeholder)
		return 0;
	if (!t->has_name)
		snprintf(tname, sizeof(tname), "tid %" PRIu32, t->tid);
	mt.name = t->app_name ? t->app_name : t->has_name ? t->name : tname;
	mt.name_len = t->app_name ? t->app_name_len : strlen(mt.name);
	if (p && !p->app_name)
		tb_conv_proc_label(p, pname);
	else if (!p)
		snprintf(pname, sizeof(pname), "pid %" PRIu64, t->out_pid);
	mt.process = p && p->app_name ? p->app_name : pname;
	mt.process_len = p && p->app_name ? p->app_name_len : strlen(mt.process);
	return fn(ctx, &mt);
}

int tb_model_threads(const struct tb_model *m,
		     int (*fn)(void *ctx, const struct tb_model_thread *t), void *ctx)
{
	const struct conv *c = &m->c;
	int ret = 0;

	for (size_t i = 0; i < c->threads.cap && !ret; i++)
		if (c->threads.vals[i])
			ret = name_thread(c, c->threads.vals[i], fn, ctx);
	for (size_t i = 0; i < c->nold_threads && !ret; i++)
		ret = name_thread(c, c->old_threads[i], fn, ctx);
	return ret ? ret : tb_conv_sched_threads(c, fn, ctx);
}
