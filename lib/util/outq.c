// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* outq.c - batches of bytes between two threads (see outq.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
/* C11 threads: <pthread.h> would find user/sched.h for <sched.h> */
#include <threads.h>

#include "util/outq.h"
#include "util/thread.h"

#define BATCH_SIZE (4 * TB_OUTQ_MAX)
#define NBATCHES   4

struct batch {
	struct batch *next;
	size_t len;
	char data[BATCH_SIZE];
};

struct tb_outq {
	thrd_t thread;
	mtx_t lock;
	cnd_t cond;        /* a batch was queued, freed, or the end */
	struct batch *full, **full_tail;   /* queued for the consumer */
	struct batch *free;         /* back from the consumer */
	struct batch *cur;          /* being filled (the producer's) */
	struct batch *taken;        /* being read (tb_outq_take's caller's) */
	bool done;                  /* no more batches will be queued */
	bool quit;                  /* the consumer takes no more (ahead) */
	void (*consume)(void *ctx, char *data, size_t len);
	int (*produce)(void *ctx, struct tb_outq *q);
	void *ctx;
	int result;                 /* produce's */
	struct batch all[NBATCHES];
};

static struct batch *take_full(struct tb_outq *q)
{
	struct batch *b;

	mtx_lock(&q->lock);
	while (!q->full && !q->done)
		cnd_wait(&q->cond, &q->lock);
	b = q->full;
	if (b) {
		q->full = b->next;
		if (!q->full)
			q->full_tail = &q->full;
	}
	mtx_unlock(&q->lock);
	return b;
}

static void give_back(struct tb_outq *q, struct batch *b)
{
	mtx_lock(&q->lock);
	b->next = q->free;
	q->free = b;
	cnd_broadcast(&q->cond);
	mtx_unlock(&q->lock);
}

static int consumer(void *arg)
{
	struct tb_outq *q = arg;
	struct batch *b;

	while ((b = take_full(q))) {
		q->consume(q->ctx, b->data, b->len);
		give_back(q, b);
	}
	return 0;
}

static void hand_over(struct tb_outq *q, bool last);

static int producer(void *arg)
{
	struct tb_outq *q = arg;

	q->result = q->produce(q->ctx, q);
	hand_over(q, true);
	return 0;
}

static void destroy(struct tb_outq *q)
{
	mtx_destroy(&q->lock);
	cnd_destroy(&q->cond);
	free(q);
}

static struct tb_outq *alloc_q(void *ctx)
{
	struct tb_outq *q = calloc(1, sizeof(*q));
	int i;

	if (!q)
		return NULL;
	if (mtx_init(&q->lock, mtx_plain) != thrd_success) {
		free(q);
		return NULL;
	}
	if (cnd_init(&q->cond) != thrd_success) {
		mtx_destroy(&q->lock);
		free(q);
		return NULL;
	}
	q->full_tail = &q->full;
	q->ctx = ctx;
	q->cur = &q->all[0];
	for (i = 1; i < NBATCHES; i++)
		give_back(q, &q->all[i]);
	return q;
}

/* Runs fn (consumer or producer) on a thread of its own (tb_thread_start).
 * Frees q if it cannot. */
static int run(struct tb_outq **qp, struct tb_outq *q, int (*fn)(void *))
{
	int err;

	*qp = NULL;
	if (!q)
		return -ENOMEM;
	err = tb_thread_start(&q->thread, fn, q);
	if (err) {
		destroy(q);
		return err;
	}
	*qp = q;
	return 0;
}

int tb_outq_start(struct tb_outq **qp, void (*consume)(void *ctx, char *data, size_t len),
		  void *ctx)
{
	struct tb_outq *q = alloc_q(ctx);

	if (q)
		q->consume = consume;
	return run(qp, q, consumer);
}

int tb_outq_ahead(struct tb_outq **qp, int (*produce)(void *ctx, struct tb_outq *q),
		  void *ctx)
{
	struct tb_outq *q = alloc_q(ctx);

	if (q)
		q->produce = produce;
	return run(qp, q, producer);
}

/* Queues the current batch (if it holds anything) and, unless last, waits
 * for an empty one. Once the consumer has quit, there is none (q->cur
 * NULL) and nothing is queued. */
static void hand_over(struct tb_outq *q, bool last)
{
	struct batch *b = q->cur;

	mtx_lock(&q->lock);
	if (b && b->len && !q->quit) {
		b->next = NULL;
		*q->full_tail = b;
		q->full_tail = &b->next;
		b = NULL;
	}
	if (last) {
		q->done = true;
	} else if (!b) {
		while (!q->free && !q->quit)
			cnd_wait(&q->cond, &q->lock);
		if (q->free) {
			b = q->free;
			q->free = b->next;
		}
	}
	if (q->quit)
		b = NULL;
	cnd_broadcast(&q->cond);
	mtx_unlock(&q->lock);
	if (b)
		b->len = 0;
	q->cur = b;
}

void *tb_outq_reserve(struct tb_outq *q, size_t n)
{
	if (q->cur && BATCH_SIZE - q->cur->len < n)
		hand_over(q, false);
	return q->cur ? q->cur->data + q->cur->len : NULL;
}

void tb_outq_commit(struct tb_outq *q, size_t n)
{
	q->cur->len += n;
}

char *tb_outq_take(struct tb_outq *q, size_t *len)
{
	if (q->taken)
		give_back(q, q->taken);
	q->taken = take_full(q);
	*len = q->taken ? q->taken->len : 0;
	return q->taken ? q->taken->data : NULL;
}

int tb_outq_result(const struct tb_outq *q)
{
	return q->result;
}

/* Ahead: the producer is told to stop (its next reservation fails). */
static void quit(struct tb_outq *q)
{
	mtx_lock(&q->lock);
	q->quit = true;
	cnd_broadcast(&q->cond);
	mtx_unlock(&q->lock);
}

void tb_outq_finish(struct tb_outq *q)
{
	if (!q)
		return;
	if (q->produce)
		quit(q);
	else
		hand_over(q, true);
	thrd_join(q->thread, NULL);
	destroy(q);
}
