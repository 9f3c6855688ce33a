// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* outq.c - batches of bytes to a consumer thread (see outq.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
/* C11 threads: <pthread.h> would find user/sched.h for <sched.h> */
#include <threads.h>

#include "outq.h"

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
	bool done;                  /* no more batches will be queued */
	void (*consume)(void *ctx, char *data, size_t len);
	void *ctx;
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

int tb_outq_start(struct tb_outq **qp, void (*consume)(void *ctx, char *data, size_t len),
		  void *ctx)
{
	struct tb_outq *q = calloc(1, sizeof(*q));
	int i, err;

	*qp = NULL;
	if (!q)
		return -ENOMEM;
	if (mtx_init(&q->lock, mtx_plain) != thrd_success) {
		free(q);
		return -ENOMEM;
	}
	if (cnd_init(&q->cond) != thrd_success) {
		mtx_destroy(&q->lock);
		free(q);
		return -ENOMEM;
	}
	q->full_tail = &q->full;
	q->consume = consume;
	q->ctx = ctx;
	q->cur = &q->all[0];
	for (i = 1; i < NBATCHES; i++)
		give_back(q, &q->all[i]);
	err = thrd_create(&q->thread, consumer, q);
	if (err != thrd_success) {
		mtx_destroy(&q->lock);
		cnd_destroy(&q->cond);
		free(q);
		return err == thrd_nomem ? -ENOMEM : -EAGAIN;
	}
	*qp = q;
	return 0;
}

/* Queues the current batch (if it holds anything) and, unless last, waits
 * for an empty one. */
static void hand_over(struct tb_outq *q, bool last)
{
	struct batch *b = q->cur;

	mtx_lock(&q->lock);
	if (b->len) {
		b->next = NULL;
		*q->full_tail = b;
		q->full_tail = &b->next;
		b = NULL;
	}
	if (last) {
		q->done = true;
	} else if (!b) {
		while (!q->free)
			cnd_wait(&q->cond, &q->lock);
		b = q->free;
		q->free = b->next;
	}
	cnd_broadcast(&q->cond);
	mtx_unlock(&q->lock);
	if (b)
		b->len = 0;
	q->cur = b;
}

void *tb_outq_reserve(struct tb_outq *q, size_t n)
{
	if (BATCH_SIZE - q->cur->len < n)
		hand_over(q, false);
	return q->cur->data + q->cur->len;
}

void tb_outq_commit(struct tb_outq *q, size_t n)
{
	q->cur->len += n;
}

void tb_outq_finish(struct tb_outq *q)
{
	if (!q)
		return;
	hand_over(q, true);
	thrd_join(q->thread, NULL);
	mtx_destroy(&q->lock);
	cnd_destroy(&q->cond);
	free(q);
}
