// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert_queue.c - the converter's third stage: the output queue, and
 * the writer thread.
 *
 * Owns: the output events held until nothing still to come can precede
 * them (a FIFO of those that came in ts order, most of them, and a
 * min-heap of the others), and the batches (outq.h) that carry events
 * to the writer thread, which renders them while this one reads and
 * pairs. An event written gives its record copies back to the pool
 * (tb_conv_pool_put, convert_util.c).
 *
 * Receives: finished output events (struct oev) from the pairing stage
 * (tb_conv_add_out, convert_pair.c), owning their records' copies.
 * Hands on: each event, in ts order, to the sink (struct tb_model_sink):
 * the filters and parts (convert_select.c), the writer thread
 * (tb_conv_out_send, rendering with convert_render.c), the JSON writer
 * itself, or another of the model's sinks (tracebpf report).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "convert/convert_int.h"
#include "util/outq.h"

/* Output events held until they can be written in ts order. */
#define OUT_MAX   (1u << 20)

static int cmp_out(const void *a, const void *b);

void tb_conv_out_free(struct conv *c, const struct oev *e)
{
	tb_conv_pool_put(c, e->ev);
	if (e->eev != e->ev)
		tb_conv_pool_put(c, e->eev);
	tb_conv_pair_put(e->pair);
}

struct oev *tb_conv_fifo_at(const struct conv *c, size_t i)
{
	return &c->fifo[(c->fifo_head + i) & (c->fifo_cap - 1)];
}

static int fifo_grow(struct conv *c)
{
	size_t cap = c->fifo_cap ? 2 * c->fifo_cap : 4096, i;
	struct oev *f = malloc(cap * sizeof(*f));

	if (!f)
		return -ENOMEM;
	for (i = 0; i < c->fifo_n; i++)
		f[i] = *tb_conv_fifo_at(c, i);
	free(c->fifo);
	c->fifo = f;
	c->fifo_cap = cap;
	c->fifo_head = 0;
	return 0;
}

/* e after everything queued: appended to the queue, at *o. */
static int fifo_push(struct conv *c, const struct oev *e, struct oev **o)
{
	int err = c->fifo_n == c->fifo_cap ? fifo_grow(c) : 0;

	if (!err) {
		*o = tb_conv_fifo_at(c, c->fifo_n++);
		**o = *e;
	}
	return err;
}

static int heap_push(struct conv *c, const struct oev *e)
{
	struct oev *h;
	size_t i;
	int err = tb_conv_grow_array((void **)&c->out, &c->out_cap, c->nout + 1,
				     sizeof(*c->out));

	if (err)
		return err;
	h = c->out;
	i = c->nout++;
	h[i] = *e;
	while (i) {
		size_t p = (i - 1) / 2;
		struct oev t;

		if (cmp_out(&h[i], &h[p]) >= 0)
			break;
		t = h[i]; h[i] = h[p]; h[p] = t;
		i = p;
	}
	return 0;
}

static void heap_pop(struct conv *c)
{
	struct oev *h = c->out, t;
	size_t i = 0, n;

	h[0] = h[--c->nout];
	n = c->nout;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < n && cmp_out(&h[l], &h[m]) < 0)
			m = l;
		if (r < n && cmp_out(&h[r], &h[m]) < 0)
			m = r;
		if (m == i)
			break;
		t = h[i]; h[i] = h[m]; h[m] = t;
		i = m;
	}
}

static size_t out_held(const struct conv *c)
{
	return c->fifo_n + c->nout;
}

/* The first held event in cmp_out order (there is one). */
static struct oev *out_first(const struct conv *c)
{
	if (!c->fifo_n)
		return &c->out[0];
	if (!c->nout || cmp_out(tb_conv_fifo_at(c, 0), &c->out[0]) < 0)
		return tb_conv_fifo_at(c, 0);
	return &c->out[0];
}

/* e to an any-order sink, now; its records stay the caller's. e->pid is
 * already its incarnation's. */
void tb_conv_out_direct(struct conv *c, const struct oev *e)
{
	c->sink->event(c->sink->ctx, e);
	c->written++;
}

/* e, written with pid, to the queue, or to an any-order sink now; on
 * failure, its copies freed. Copied once: the copy of a struct oev just
 * made is slow (its loads wait for the stores of its fields). */
static int queue_out(struct conv *c, const struct oev *e, uint64_t pid)
{
	struct oev *o, d;
	int err;

	if (c->direct) {
		d = *e;
		d.pid = pid;
		tb_conv_out_direct(c, &d);
		tb_conv_out_free(c, e);
		return 0;
	}
	if (!c->fifo_n || cmp_out(e, tb_conv_fifo_at(c, c->fifo_n - 1)) > 0) {
		err = fifo_push(c, e, &o);
		if (!err)
			o->pid = pid;
	} else {
		d = *e;
		d.pid = pid;
		err = heap_push(c, &d);
	}
	if (err)
		tb_conv_out_free(c, e);
	return err;
}

/* Takes ownership of e->ev and e->eev (copies). e->pid is the recorded
 * pid: written as its current incarnation's. */
int tb_conv_add_out(struct conv *c, const struct oev *e)
{
	return queue_out(c, e, tb_conv_out_pid(c, (uint32_t)e->pid));
}

int tb_conv_add_out_as(struct conv *c, const struct oev *e)
{
	return queue_out(c, e, e->pid);
}

static void out_pop(struct conv *c)
{
	struct oev *e = out_first(c);

	c->sink->event(c->sink->ctx, e);
	c->written++;
	if (e->ts > c->out_ts)
		c->out_ts = e->ts;
	tb_conv_out_free(c, e);
	/* (out is NULL until the heap first holds an event) */
	if (c->nout && e == &c->out[0]) {
		heap_pop(c);
	} else {
		c->fifo_head = (c->fifo_head + 1) & (c->fifo_cap - 1);
		c->fifo_n--;
	}
}

/* Writes every held event before low, which nothing still to come can
 * precede (the model works it out: out_low, convert_model.c), or with all
 * every held event.
 * Past OUT_MAX held events the oldest are written anyway (a slice open for
 * very long): X events may then be out of ts order, which every viewer
 * sorts (counted in c->forced). */
void tb_conv_out_flush(struct conv *c, uint64_t low, bool all)
{
	while (out_held(c) && (all || out_first(c)->ts < low))
		out_pop(c);
	while (out_held(c) > OUT_MAX) {
		c->forced++;
		out_pop(c);
	}
}

/* By ts; at equal ts longer slices first so parents precede children, and
 * equal slices in begin order (outer first); the events of one record (a
 * memory dump's) in the order they were made. */
static int cmp_out(const void *a, const void *b)
{
	const struct oev *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->dur != y->dur)
		return x->dur > y->dur ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->sub < y->sub ? -1 : x->sub > y->sub;
}

/* ------------------------------------------------ the writer thread -- */

/* What the writer thread gets, back to back in a batch, 8-aligned: each
 * message starts with its kind. Most events of a large trace are plain:
 * an instant or a slice whose records hold nothing but integers (the
 * render stage writes them from a template), and the numbers of those,
 * 56 bytes, are all it needs; any other event goes whole, struct oev and
 * copies of its records, 200 bytes and more. */
enum { MSG_OEV = 1, MSG_PLAIN };

struct msg_oev {
	uint8_t kind;               /* MSG_OEV */
	struct oev e;               /* then its records (tb_conv_out_send) */
};

struct msg_plain {
	uint8_t kind;               /* MSG_PLAIN */
	char ph;                    /* 'I' or 'X' */
	uint16_t type;              /* the record's */
	uint32_t tid;
	uint64_t ts, dur, pid;
	const struct site *site;
	uint64_t args[TB_MAX_ARGS];
};

/* A record's bytes in a batch: 8-aligned. */
static size_t rec_room(const struct tb_rec_event *ev)
{
	return ((size_t)ev->hdr.size + 7) & ~(size_t)7;
}

/* Whether e is the same event written from a struct msg_plain: its
 * record's type and arguments are all that render reads of it (its name
 * is the site's, no argument is a string), and nothing marks it. */
static bool plain(const struct oev *e)
{
	const struct site *s = e->site;
	uint16_t type = e->ev->hdr.type;

	if ((e->ph != 'I' && e->ph != 'X') || e->inherited || e->unfinished ||
	    e->begun_before || e->begin_of || e->lost.count || e->parent_lost ||
	    (e->esite && e->esite->nargs) || (type != TB_REC_EVENT && type != TB_REC_EVENT_ID) ||
	    s->usdt || (s->flags & TB_SITE_COPY_NAME) || s->nargs > TB_MAX_ARGS)
		return false;
	for (int i = 0; i < s->nargs; i++)
		if (s->arg_type[i] == TB_ARG_STR)
			return false;
	return true;
}

static void send_plain(struct conv *c, const struct oev *e)
{
	struct msg_plain *m = tb_outq_reserve(c->q, sizeof(*m));

	m->kind = MSG_PLAIN;
	m->ph = e->ph;
	m->type = e->ev->hdr.type;
	m->tid = e->tid;
	m->ts = e->ts;
	m->dur = e->dur;
	m->pid = e->pid;
	m->site = e->site;
	memcpy(m->args, e->ev->args, sizeof(m->args));
	tb_outq_commit(c->q, sizeof(*m));
}

/* e, to be written by the writer thread: plain, or whole with copies of
 * its records, whose pointers then say where the copies are: 1, after e;
 * 2, after that; ev itself for eev, or NULL. */
void tb_conv_out_send(struct conv *c, const struct oev *e)
{
	bool two = e->eev && e->eev != e->ev;
	size_t n = sizeof(struct msg_oev) + rec_room(e->ev) + (two ? rec_room(e->eev) : 0);
	char *p, *r;
	struct msg_oev *m;

	if (plain(e)) {
		send_plain(c, e);
		return;
	}
	p = tb_outq_reserve(c->q, n);
	m = (struct msg_oev *)p;
	r = p + sizeof(*m);
	m->kind = MSG_OEV;
	m->e = *e;
	memcpy(r, e->ev, e->ev->hdr.size);
	if (two)
		memcpy(r + rec_room(e->ev), e->eev, e->eev->hdr.size);
	m->e.ev = (const void *)1;
	m->e.eev = two ? (const void *)2 : e->eev ? (const void *)1 : NULL;
	tb_outq_commit(c->q, n);
}

static const struct oev no_oev;

/* A plain event as the oev it was made from (render reads nothing else). */
static size_t write_plain_msg(struct tmpls *ts, struct tb_json *j, const char *p)
{
	const struct msg_plain *m = (const void *)p;
	struct tb_rec_event ev = { .hdr.type = m->type };
	struct oev e = no_oev;

	memcpy(ev.args, m->args, sizeof(ev.args));
	e.ts = m->ts;
	e.dur = m->dur;
	e.pid = m->pid;
	e.tid = m->tid;
	e.ph = m->ph;
	e.site = m->site;
	e.ev = &ev;
	tb_conv_write_event(ts, j, &e);
	return sizeof(*m);
}

/* A whole event: its records' places made pointers again. */
static size_t write_oev_msg(struct tmpls *ts, struct tb_json *j, char *p)
{
	struct oev *e = &((struct msg_oev *)p)->e;
	const struct tb_rec_event *ev = (const void *)(p + sizeof(struct msg_oev));
	const struct tb_rec_event *eev = NULL;
	size_t n = sizeof(struct msg_oev) + rec_room(ev);

	if (e->eev == (const void *)2) {
		eev = (const void *)(p + n);
		n += rec_room(eev);
	} else if (e->eev) {
		eev = ev;
	}
	e->ev = ev;
	e->eev = eev;
	tb_conv_write_event(ts, j, e);
	return n;
}

/* The writer thread: the events of one batch. Until tb_outq_finish, only
 * it uses c->j; the sites the events point to are never freed or changed
 * while converting. */
void tb_conv_write_batch(void *ctx, char *data, size_t len)
{
	struct conv *c = ctx;
	struct tmpls *ts = c->tmpls;
	struct tb_json *j = &c->j;
	char *p = data, *end = data + len;

	while (p < end) {
		if (*(const uint8_t *)p == MSG_PLAIN)
			p += write_plain_msg(ts, j, p);
		else
			p += write_oev_msg(ts, j, p);
	}
}
