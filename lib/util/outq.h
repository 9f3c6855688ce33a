/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * outq.h - hands bytes from one thread to another in large batches.
 *
 * The producer reserves room in the current batch, fills it and commits
 * it; a full batch goes to the consumer, which gets each batch's bytes at
 * once, in order. A few batches exist in all: a producer ahead of its
 * consumer waits for one to come back, so memory is bounded.
 * Either side can be the new thread: tb_outq_start runs the consumer on
 * it (tracebpf convert formats JSON this way while it reads the next
 * records), tb_outq_ahead the producer (the merge reads ahead this way
 * while the model takes its records).
 */
#ifndef TRACEBPF_OUTQ_H
#define TRACEBPF_OUTQ_H

#include <stddef.h>
/* C11 threads: <pthread.h> would find user/sched.h for <sched.h> */
#include <threads.h>

/* The largest reservation. */
#define TB_OUTQ_MAX (256 * 1024)

struct tb_outq;

/* Starts the consumer thread, which calls consume(ctx, data, len) for
 * each batch. 0 or -errno (then no thread runs). */
int tb_outq_start(struct tb_outq **q, void (*consume)(void *ctx, char *data, size_t len),
		  void *ctx);
/* Starts the producer thread, which runs produce(ctx, q): it reserves and
 * commits; its return value is tb_outq_result's. The caller takes the
 * batches with tb_outq_take. 0 or -errno (then no thread runs). */
int tb_outq_ahead(struct tb_outq **q, int (*produce)(void *ctx, struct tb_outq *q),
		  void *ctx);
/* Room for n <= TB_OUTQ_MAX bytes in the current batch; NULL once the
 * consumer has ended an ahead queue (tb_outq_finish): produce returns. */
void *tb_outq_reserve(struct tb_outq *q, size_t n);
/* The n bytes at the last reservation are part of the batch. */
void tb_outq_commit(struct tb_outq *q, size_t n);
/* Ahead: the bytes of the next batch, *len of them, valid until the next
 * call (the batch taken before goes back); NULL once produce has returned
 * and every batch is taken. */
char *tb_outq_take(struct tb_outq *q, size_t *len);
/* What produce returned; once tb_outq_take has returned NULL. */
int tb_outq_result(const struct tb_outq *q);
/* tb_outq_start: hands over what is committed, waits until the consumer
 * has taken all of it. tb_outq_ahead: tells the producer to stop, at its
 * next reservation. Then ends the thread and frees q. */
void tb_outq_finish(struct tb_outq *q);

#endif
