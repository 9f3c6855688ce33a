// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert_tables.c - the model's tables as every stage looks them up,
 * below the stages (the order: lib/convert/convert.c).
 *
 * Owns: finding, or starting, the process of a pid (a pid reused within
 * the recording is a new incarnation, written as another pid) and the
 * thread of a tid (a tid reused after its exit is a new thread); the
 * site of an address in a process (a forked child's falls back to its
 * ancestors' while neither side has exec'd), remembered while no record
 * changes what a lookup finds (conv.site_gen); the names and sort
 * indexes an application sets (M sites); whether the category rules in
 * effect keep an event.
 *
 * What fills and changes the tables (sites, forks, execs, exits, comms,
 * command lines, the category rules) is the model's (convert_model.c);
 * the pairing stage, the memory dumps and the queue look up here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "convert/convert_int.h"

/* tb_conv_get_proc when the process is not the last one found. */
struct proc *tb_conv_get_proc_slow(struct conv *c, uint32_t pid)
{
	struct proc *p, *old = NULL;

	p = tb_hmap_get(&c->procs, pid);
	if (p && !p->dead)
		return c->last_proc = p;
	if (p) {
		/* the pid was reused: keep the old process for rendering */
		if (tb_conv_grow_array((void **)&c->old_procs, &c->old_procs_cap,
				       c->nold_procs + 1, sizeof(*c->old_procs)))
			return NULL;
		old = p;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	c->site_gen++;
	p->pid = pid;
	p->incarnation = old ? old->incarnation + 1 : 0;
	p->out_pid = pid + p->incarnation * TB_PID_SPAN;
	if (tb_hmap_put(&c->procs, pid, p)) {
		free(p);
		return NULL;
	}
	if (old)
		c->old_procs[c->nold_procs++] = old;
	return c->last_proc = p;
}

/* A new thread tid, replacing old (a dead thread whose tid was reused). */
struct thread *tb_conv_new_thread(struct conv *c, uint32_t tid, struct thread *old)
{
	struct thread *t;

	if (old && tb_conv_grow_array((void **)&c->old_threads, &c->old_threads_cap,
				      c->nold_threads + 1, sizeof(*c->old_threads)))
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->tid = tid;
	/* it may have run, and lost events, in a gap of every thread */
	t->lost = c->gap.all;
	t->blind = c->gap.all;
	t->gap_until = c->gap.all_until;
	if (tb_hmap_put(&c->threads, tid, t)) {
		free(t);
		return NULL;
	}
	if (old)
		c->old_threads[c->nold_threads++] = old;
	return t;
}

/* tb_conv_get_thread when the thread is not the last one found, or its
 * process may have changed. */
struct thread *tb_conv_get_thread_slow(struct conv *c, uint32_t tid, uint32_t pid)
{
	struct thread *t = c->last_thread;

	/* as for tb_conv_get_proc: a live thread is the one its tid maps to */
	if (!t || t->tid != tid || t->dead) {
		struct thread **slot = &c->tcache[tid % THREAD_CACHE];

		t = *slot;
		if (!t || t->tid != tid || t->dead) {
			t = tb_hmap_get(&c->threads, tid);
			if (!t || t->dead)
				t = tb_conv_new_thread(c, tid, t);
			if (!t)
				return NULL;
			*slot = t;
		}
		c->last_thread = t;
	}
	/* a process is made (tb_conv_get_proc) or dies (mark_dead) only
	 * where site_gen moves on */
	if (t->pid != pid || t->out_gen != c->site_gen + 1) {
		t->pid = pid;
		t->out_pid = tb_conv_out_pid(c, pid);
		t->out_gen = c->site_gen + 1;
	}
	t->placeholder = false;
	return t;
}

/* The site at addr in process pid. Sites are copied to a child at fork;
 * one its ancestors learn later (while neither side has exec'd) still
 * describes the child's image, so the lookup falls back to them. */
static struct site *lookup_site(struct conv *c, uint32_t pid, uint64_t addr)
{
	struct proc *p = tb_hmap_get(&c->procs, pid);
	struct site *s;
	int depth;

	for (depth = 0; p && depth < 64; depth++) {
		struct proc *parent;

		s = tb_hmap_get(&p->sites, addr);
		if (s && s->valid)
			return s;
		if (!p->forked)
			break;
		parent = tb_hmap_get(&c->procs, p->parent);
		if (!parent || parent->image != p->parent_image)
			break;
		p = parent;
	}
	return NULL;
}

/* lookup_site, remembered (conv.scache) for tb_conv_find_site. */
struct site *tb_conv_find_site_slow(struct conv *c, uint32_t pid, uint64_t addr)
{
	struct site_slot *x = &c->scache[(addr >> 4 ^ pid * 0x9e3779b1u) % SITE_CACHE];
	struct site *s;

	s = lookup_site(c, pid, addr);
	*x = (struct site_slot){ addr, c->site_gen, pid, s };
	return s;
}

/* An application-set name: a copy (the record is not kept). */
static int set_app_name(char **dst, size_t *dst_len, const char *str, size_t n)
{
	char *copy = malloc(n ? n : 1);

	if (!copy)
		return -ENOMEM;
	memcpy(copy, str, n);
	free(*dst);
	*dst = copy;
	*dst_len = n;
	return 0;
}

/* TRACE_THREAD_NAME / TRACE_PROCESS_NAME / ..._SORT_INDEX */
int tb_conv_on_metadata(struct conv *c, const struct tb_rec_event *ev,
			const struct site *s)
{
	struct thread *t = tb_conv_get_thread(c, ev->hdr.tid, ev->hdr.pid);
	struct proc *p = tb_conv_get_proc(c, ev->hdr.pid);
	const char *str = NULL;
	size_t n = 0;

	if (!t || !p)
		return -ENOMEM;
	if (s->nargs < 1)
		return 0;
	if (s->arg_type[0] == TB_ARG_STR)
		str = tb_conv_str_arg(s, ev, 0, &n);
	if (!strcmp(s->name, "thread_name") && str)
		return set_app_name(&t->app_name, &t->app_name_len, str, n);
	else if (!strcmp(s->name, "process_name") && str)
		return set_app_name(&p->app_name, &p->app_name_len, str, n);
	else if (!strcmp(s->name, "thread_sort_index") && s->arg_type[0] == TB_ARG_INT) {
		t->has_sort = true;
		t->sort_index = (int64_t)ev->args[0];
	} else if (!strcmp(s->name, "process_sort_index") && s->arg_type[0] == TB_ARG_INT) {
		p->has_sort = true;
		p->sort_index = (int64_t)ev->args[0];
	}
	return 0;
}

bool tb_conv_cats_keep(struct conv *c, struct site *s, const struct thread *t)
{
	if (!c->cats || !s->cat)
		return true;
	if (s->cats_gen != c->cats_gen) {
		s->cats_on = tracebpf_cats_on(c->cats->rules, c->cats->len, s->cat);
		s->cats_gen = c->cats_gen;
	}
	if (s->cats_on)
		return true;
	if (s->phase == 'E' && t && t->depth && (t->stack[t->depth - 1].begin_lost ||
	    (t->stack[t->depth - 1].site->cat &&
	     !strcmp(t->stack[t->depth - 1].site->cat, s->cat))))
		return true;   /* its BEGIN was recorded (or lost): the slice ends */
	c->cats_left_out++;
	return false;
}
