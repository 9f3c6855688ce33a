// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert_memdump.c - the application's memory dumps (docs/output.md,
 * "Memory"), a part of the pairing stage.
 *
 * Owns: each process's dump in progress, from its "dump" record through
 * its allocators to its "dump_end" (the sites of phase 'v',
 * tracebpf/site.h), and what a dump becomes: one "v" event, catapult's
 * process memory dump, whose args are rendered here into a record of
 * their own (they are too large for a site's two arguments), and a "C"
 * counter per allocator and object count, which Perfetto and DevTools
 * draw (they draw no "v"). A dump shows what arrived, never more: one not
 * ended (a new dump of its process, its exit or exec, the end of the
 * recording), one whose end counts more allocators than arrived, and one
 * too large for its record are marked tracebpf_incomplete; the records of
 * a dump whose begin was not seen are counted, not shown.
 *
 * Receives: the 'v' event records from tb_conv_on_event (convert_pair.c);
 * from the model, the exits and execs of processes and the end
 * (tb_conv_md_close).
 * Hands on: a dump's events to the output queue (tb_conv_add_out) at its
 * begin's time, which the queue holds back while the dump is open: the
 * model asks for that bound (tb_conv_md_low) before each flush of the
 * queue.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "convert/convert_int.h"

/* Allocators kept per dump: more than a v event can hold. */
#define MD_ALLOC_MAX 1024
/* The most args text a v event's record holds behind its header. */
#define MD_TEXT_MAX  (UINT16_MAX - sizeof(struct tb_rec_event_id))
/* The most one allocator's entry takes (its path escaped: 6 bytes a byte
 * at most), and what follows the last entry. */
#define MD_ENTRY_MAX (6 * TRACEBPF_COPY_NAME_MAX + 256)
#define MD_TAIL_MAX  512
#define MD_PREFIX    "mem.dump."
#define MD_OBJECTS   ".objects"

/* The value of s's integer argument called name; *has says whether it
 * has one (may be NULL). */
static uint64_t md_arg(const struct site *s, const struct tb_rec_event *ev,
		       const char *name, bool *has)
{
	for (int i = 0; i < s->nargs; i++) {
		if (strcmp(s->argname[i], name) ||
		    (s->arg_type[i] != TB_ARG_UINT && s->arg_type[i] != TB_ARG_INT))
			continue;
		if (has)
			*has = true;
		return ev->args[i];
	}
	if (has)
		*has = false;
	return 0;
}

/* The v event's site: named as Chrome names its dumps by trigger. */
static const struct site *md_site(struct conv *c, uint64_t trigger)
{
	struct site *s = &c->md_site[trigger != 0];

	if (!s->valid)
		*s = (struct site){
			.valid = true, .phase = 'v', .cat = "memory",
			.name = trigger ? "explicitly_triggered" : "periodic_interval",
		};
	return s;
}

/* A counter's site, "mem.dump.<path>" (".objects" after it for the
 * object count): made at its first sample, kept for the conversion. */
struct md_counter {
	struct tb_chain_link k;
	struct site s;
	size_t nlen;
	char name[];
};

/* A new counter site of that name (n bytes), in the table under h. */
static const struct site *counter_new(struct conv *c, const char *name, size_t n, uint64_t h)
{
	struct md_counter *x = malloc(sizeof(*x) + n + 1);

	if (!x)
		return NULL;
	memcpy(x->name, name, n + 1);
	x->nlen = n;
	x->k.h = h;
	x->s = (struct site){
		.valid = true, .phase = 'C', .nargs = 1, .arg_type = { TB_ARG_UINT },
		.cat = "memory", .name = x->name, .argname = { "value" },
	};
	if (tb_chain_add(&c->md_counters, &x->k)) {
		free(x);
		return NULL;
	}
	return &x->s;
}

static const struct site *counter_site(struct conv *c, const struct md_alloc *a, bool objects)
{
	char name[sizeof(MD_PREFIX) + TRACEBPF_COPY_NAME_MAX + sizeof(MD_OBJECTS)];
	size_t n = (size_t)snprintf(name, sizeof(name), MD_PREFIX "%s%s", a->name,
				    objects ? MD_OBJECTS : "");
	uint64_t h = tb_hash_bytes(0xcbf29ce484222325ull, name, n);

	for (struct tb_chain_link *k = tb_chain_first(&c->md_counters, h); k; k = k->next) {
		struct md_counter *x = (struct md_counter *)k;

		if (k->h == h && x->nlen == n && !memcmp(x->name, name, n))
			return &x->s;
	}
	return counter_new(c, name, n, h);
}

/* One counter sample of d's process at d's begin; sub orders it among
 * the dump's events. */
static int md_counter(struct conv *c, const struct memdump *d, const struct site *s,
		      uint64_t v, uint32_t sub)
{
	struct tb_rec_event rec = {
		.hdr = { .type = TB_REC_EVENT, .size = sizeof(rec), .cpu = ~0u,
			 .ts = d->ts, .pid = d->pid, .tid = d->tid },
		.args = { v },
	};
	const struct tb_rec_event *ev = s ? tb_conv_pool_copy(c, &rec.hdr) : NULL;
	struct oev e = {
		.ts = d->ts, .seq = d->seq, .sub = sub, .pid = d->pid, .tid = d->tid,
		.ph = 'C', .site = s, .ev = ev,
	};

	return ev ? tb_conv_add_out(c, &e) : -ENOMEM;
}

/* The counters of d's allocators: size, and the object count if given. */
static int md_counters(struct conv *c, const struct memdump *d)
{
	uint32_t sub = 1;
	int err = 0;

	for (size_t i = 0; i < d->n && !err; i++) {
		const struct md_alloc *a = &d->a[i];

		err = md_counter(c, d, counter_site(c, a, false), a->size, sub++);
		if (!err && a->has_objects)
			err = md_counter(c, d, counter_site(c, a, true), a->objects, sub++);
	}
	return err;
}

/* key: v as catapult writes its numbers, a hex string without 0x. */
static void md_hex(struct tb_json *j, const char *key, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIx64, v);
	tb_json_kstr(j, key, buf);
}

/* An attribute of an allocator dump: {"type":"scalar","units":..,"value":..}. */
static void md_scalar(struct tb_json *j, const char *key, const char *units, uint64_t v)
{
	tb_json_key(j, key);
	tb_json_begin_object(j);
	tb_json_kstr(j, "type", "scalar");
	tb_json_kstr(j, "units", units);
	md_hex(j, "value", v);
	tb_json_end_object(j);
}

/* One allocator of the dump of process pid: its path, a guid of its own
 * (pid, dump, path), its size and object count. */
static void md_entry(struct tb_json *j, uint64_t pid, const struct memdump *d,
		     const struct md_alloc *a)
{
	uint64_t h = tb_hash_bytes(tb_hash64(tb_hash64(pid) ^ d->id), a->name, a->nlen);
	char guid[24];

	snprintf(guid, sizeof(guid), "%016" PRIx64, h);
	tb_json_key(j, a->name);
	tb_json_begin_object(j);
	tb_json_kstr(j, "guid", guid);
	tb_json_key(j, "attrs");
	tb_json_begin_object(j);
	md_scalar(j, "size", "bytes", a->size);
	if (a->has_objects)
		md_scalar(j, "object_count", "objects", a->objects);
	tb_json_end_object(j);
	tb_json_end_object(j);
}

/* Why d is incomplete into buf ("" when it is not): why it did not end,
 * allocators its end counts that did not arrive, and those left out
 * (more than the v event holds). */
static void md_reason(char *buf, size_t len, const struct memdump *d, const char *why,
		      uint64_t reported, uint64_t left)
{
	size_t n = 0;

	buf[0] = '\0';
	if (why)
		n += (size_t)snprintf(buf + n, len - n, "%s", why);
	if (reported > d->received && n < len)
		n += (size_t)snprintf(buf + n, len - n, "%s%" PRIu64 " of %" PRIu64
				      " allocators recorded", n ? "; " : "", d->received, reported);
	if (left && n < len)
		snprintf(buf + n, len - n, "%s%" PRIu64 " allocators left out: more than "
			 "one event holds", n ? "; " : "", left);
}

/* The v event's args into j (a writer into its buffer alone: the text
 * stays below MD_TEXT_MAX, which it holds). */
static void md_render(struct tb_json *j, const struct proc *p, const char *why,
		      uint64_t reported)
{
	const struct memdump *d = &p->md;
	char reason[256];
	size_t shown;

	tb_json_init(j, NULL);
	tb_json_begin_object(j);
	tb_json_key(j, "dumps");
	tb_json_begin_object(j);
	tb_json_kstr(j, "level_of_detail", "detailed");
	tb_json_key(j, "process_totals");
	tb_json_begin_object(j);
	md_hex(j, "resident_set_bytes", d->rss);
	tb_json_end_object(j);
	tb_json_key(j, "allocators");
	tb_json_begin_object(j);
	for (shown = 0; shown < d->n && j->len + MD_ENTRY_MAX + MD_TAIL_MAX <= MD_TEXT_MAX;
	     shown++)
		md_entry(j, p->out_pid, d, &d->a[shown]);
	tb_json_end_object(j);
	tb_json_end_object(j);
	md_reason(reason, sizeof(reason), d, why, reported, d->n - shown + d->dropped);
	if (reason[0])
		tb_json_kstr(j, "tracebpf_incomplete", reason);
	tb_json_end_object(j);
}

/* The v event of p's dump: its args rendered into a record of their own
 * behind a TB_REC_EVENT_ID header (the dump's id), which the queue and
 * the writer thread copy by its size like any record. Allocated at least
 * at the pool's largest class, so that the pool may keep it. */
static int md_event(struct conv *c, const struct proc *p, const char *why, uint64_t reported)
{
	const struct memdump *d = &p->md;
	struct tb_json *j = malloc(sizeof(*j));
	struct tb_rec_event_id *rec = NULL;
	size_t size = 0;

	if (j) {
		md_render(j, p, why, reported);
		size = sizeof(*rec) + j->len;
		rec = malloc(size > POOL_MAX_SIZE ? size : POOL_MAX_SIZE);
	}
	if (rec) {
		*rec = (struct tb_rec_event_id){
			.ev.hdr = { .type = TB_REC_EVENT_ID, .size = (uint16_t)size, .cpu = ~0u,
				    .ts = d->ts, .pid = d->pid, .tid = d->tid },
			.id = d->id,
		};
		memcpy(rec + 1, j->buf, j->len);
	}
	free(j);
	if (!rec)
		return -ENOMEM;
	return tb_conv_add_out(c, &(struct oev){
		.ts = d->ts, .seq = d->seq, .pid = d->pid, .tid = d->tid, .ph = 'v',
		.site = md_site(c, d->trigger), .ev = &rec->ev });
}

/* Forgets p's dump (keeping its array for the next). */
static void md_clear(struct proc *p)
{
	struct memdump *d = &p->md;

	for (size_t i = 0; i < d->n; i++)
		free(d->a[i].name);
	*d = (struct memdump){ .a = d->a, .cap = d->cap };
}

/* p's dump, as it is: its v event (marked with why it did not end, or
 * with reported, the allocators its end counts) and its counters. */
static int close_dump(struct conv *c, struct proc *p, const char *why, uint64_t reported)
{
	int err = md_event(c, p, why, reported);

	if (!err)
		err = md_counters(c, &p->md);
	md_clear(p);
	c->md_open--;
	c->md_dumps++;
	return err;
}

#define MD_NO_END "the dump's end was not recorded"

/* "dump": a new dump of p; one still open there never ended. */
static int md_begin(struct conv *c, struct proc *p, const struct tb_rec_event *ev,
		    const struct site *s, uint64_t seq)
{
	int err = p->md.open ? close_dump(c, p, MD_NO_END, 0) : 0;
	struct memdump *d = &p->md;

	if (err)
		return err;
	d->open = true;
	d->ts = ev->hdr.ts;
	d->seq = seq;
	d->id = tb_conv_ev_id(ev);
	d->rss = md_arg(s, ev, "resident_set_bytes", NULL);
	d->trigger = md_arg(s, ev, "trigger", NULL);
	d->pid = ev->hdr.pid;
	d->tid = ev->hdr.tid;
	c->md_open++;
	return 0;
}

/* The open dump of p that ev belongs to, or NULL (counted: its begin
 * was not seen). */
static struct memdump *md_of(struct conv *c, struct proc *p, const struct tb_rec_event *ev)
{
	if (p->md.open && p->md.id == tb_conv_ev_id(ev))
		return &p->md;
	c->md_orphans++;
	return NULL;
}

/* d's allocator named name (n bytes), a new one if it has none yet (NULL:
 * no room, or no memory: *err says which). */
static struct md_alloc *md_find(struct memdump *d, const char *name, size_t n, int *err)
{
	struct md_alloc *a;

	for (size_t i = 0; i < d->n; i++)
		if (d->a[i].nlen == n && !memcmp(d->a[i].name, name, n))
			return &d->a[i];
	*err = 0;
	if (d->n >= MD_ALLOC_MAX)
		return NULL;
	*err = tb_conv_grow_array((void **)&d->a, &d->cap, d->n + 1, sizeof(*d->a));
	if (*err)
		return NULL;
	a = &d->a[d->n];
	*a = (struct md_alloc){ .name = malloc(n + 1), .nlen = n };
	if (!a->name) {
		*err = -ENOMEM;
		return NULL;
	}
	memcpy(a->name, name, n);
	a->name[n] = '\0';
	d->n++;
	return a;
}

/* An allocator (a COPY site: its path is the name copied at the hit). A
 * path reported twice in one dump keeps the later numbers. */
static int md_add(struct conv *c, struct proc *p, const struct tb_rec_event *ev,
		  const struct site *s)
{
	struct memdump *d = md_of(c, p, ev);
	const char *name;
	struct md_alloc *a;
	size_t n = 0;
	int err;

	if (!d)
		return 0;
	d->received++;
	name = tb_conv_ev_name(s, ev, &n);
	if (!name) {
		name = "<unreadable>";
		n = strlen(name);
	}
	if (n >= TRACEBPF_COPY_NAME_MAX)
		n = TRACEBPF_COPY_NAME_MAX - 1;
	a = md_find(d, name, n, &err);
	if (!a) {
		d->dropped += !err;
		return err;
	}
	a->size = md_arg(s, ev, "size", NULL);
	a->objects = md_arg(s, ev, "objects", &a->has_objects);
	return 0;
}

/* "dump_end": ends the open dump of its id. */
static int md_end(struct conv *c, struct proc *p, const struct tb_rec_event *ev,
		  const struct site *s)
{
	if (!md_of(c, p, ev))
		return 0;
	return close_dump(c, p, NULL, md_arg(s, ev, "allocators", NULL));
}

int tb_conv_on_memdump(struct conv *c, const struct tb_rec_event *ev, struct site *s,
		       uint64_t seq)
{
	bool copy = s->flags & TB_SITE_COPY_NAME;
	struct proc *p;

	if (!copy && !strcmp(s->name, "dumper"))
		return 0;   /* the recorder's notice: nothing to show */
	if (c->cats && !tb_conv_cats_keep(c, s, NULL))
		return 0;
	p = tb_hmap_get(&c->procs, ev->hdr.pid);   /* the model made it */
	if (!p)
		return 0;
	if (copy)
		return md_add(c, p, ev, s);
	if (!strcmp(s->name, "dump"))
		return md_begin(c, p, ev, s, seq);
	if (!strcmp(s->name, "dump_end"))
		return md_end(c, p, ev, s);
	return 0;   /* a kind this converter does not know */
}

int tb_conv_md_close(struct conv *c, uint32_t pid, const char *why)
{
	struct proc *p;
	int err = 0;

	if (!c->md_open)
		return 0;
	if (pid != ALL_PIDS) {
		p = tb_hmap_get(&c->procs, pid);
		return p && p->md.open ? close_dump(c, p, why, 0) : 0;
	}
	for (size_t i = 0; i < c->procs.cap && !err; i++) {
		p = c->procs.vals[i];
		if (p && p->md.open)
			err = close_dump(c, p, why, 0);
	}
	return err;
}

uint64_t tb_conv_md_low(const struct conv *c, uint64_t low)
{
	for (size_t i = 0; c->md_open && i < c->procs.cap; i++) {
		const struct proc *p = c->procs.vals[i];

		if (p && p->md.open && p->md.ts < low)
			low = p->md.ts;
	}
	return low;
}

void tb_conv_md_free_proc(struct proc *p)
{
	md_clear(p);
	free(p->md.a);
}

void tb_conv_md_free(struct conv *c)
{
	tb_chain_free(&c->md_counters, free);
}
