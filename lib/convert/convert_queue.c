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

/* e after everything queued: appended to the queue. */
static int fifo_push(struct conv *c, const struct oev *e)
{
	int err = c->fifo_n == c->fifo_cap ? fifo_grow(c) : 0;

	if (!err)
		*tb_conv_fifo_at(c, c->fifo_n++) = *e;
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

/* e to the queue, or to an any-order sink now; on failure, its copies
 * freed. */
static int queue_out(struct conv *c, const struct oev *e)
{
	int err;

	if (c->direct) {
		tb_conv_out_direct(c, e);
		tb_conv_out_free(c, e);
		return 0;
	}
	if (!c->fifo_n || cmp_out(e, tb_conv_fifo_at(c, c->fifo_n - 1)) > 0)
		err = fifo_push(c, e);
	else
		err = heap_push(c, e);
	if (err)
		tb_conv_out_free(c, e);
	return err;
}

/* Takes ownership of e->ev and e->eev (copies). e->pid is the recorded
 * pid: written as its current incarnation's. */
int tb_conv_add_out(struct conv *c, const struct oev *e)
{
	struct oev o = *e;

	o.pid = tb_conv_out_pid(c, (uint32_t)e->pid);
	return queue_out(c, &o);
}

int tb_conv_add_out_as(struct conv *c, const struct oev *e)
{
	return queue_out(c, e);
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

/* A record's bytes in a batch: 8-aligned. */
static size_t rec_room(const struct tb_rec_event *ev)
{
	return ((size_t)ev->hdr.size + 7) & ~(size_t)7;
}

/* e and copies of its records, to be written by the writer thread; the
 * records' pointers say where the copies are: 1, after e; 2, after that;
 * ev itself for eev, or NULL. */
void tb_conv_out_send(struct conv *c, const struct oev *e)
{
	bool two = e->eev && e->eev != e->ev;
	size_t n = sizeof(*e) + rec_room(e->ev) + (two ? rec_room(e->eev) : 0);
	char *p = tb_outq_reserve(c->q, n);
	struct oev *o = (struct oev *)p;

	*o = *e;
	memcpy(p + sizeof(*e), e->ev, e->ev->hdr.size);
	if (two)
		memcpy(p + sizeof(*e) + rec_room(e->ev), e->eev, e->eev->hdr.size);
	o->ev = (const void *)1;
	o->eev = two ? (const void *)2 : e->eev ? (const void *)1 : NULL;
	tb_outq_commit(c->q, n);
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
		struct oev *e = (struct oev *)p;
		const struct tb_rec_event *ev = (const void *)(p + sizeof(*e));
		const struct tb_rec_event *eev = NULL;

		p += sizeof(*e) + rec_room(ev);
		if (e->eev == (const void *)2) {
			eev = (const void *)p;
			p += rec_room(eev);
		} else if (e->eev) {
			eev = ev;
		}
		e->ev = ev;
		e->eev = eev;
		tb_conv_write_event(ts, j, e);
	}
}
