/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * outq.h - hands bytes to a consumer thread in large batches.
 *
 * The producer reserves room in the current batch, fills it and commits
 * it; a full batch goes to the consumer thread, which gets each batch's
 * bytes in one call, in order. A few batches exist in all: a producer
 * ahead of its consumer waits for one to come back, so memory is bounded.
 * tracebpf convert formats JSON this way while it reads the next records.
 */
#ifndef TRACEBPF_OUTQ_H
#define TRACEBPF_OUTQ_H

#include <stddef.h>

/* The largest reservation. */
#define TB_OUTQ_MAX (256 * 1024)

struct tb_outq;

/* Starts the consumer thread, which calls consume(ctx, data, len) for
 * each batch. 0 or -errno (then no thread runs). */
int tb_outq_start(struct tb_outq **q, void (*consume)(void *ctx, char *data, size_t len),
		  void *ctx);
/* Room for n <= TB_OUTQ_MAX bytes in the current batch. */
void *tb_outq_reserve(struct tb_outq *q, size_t n);
/* The n bytes at the last reservation are part of the batch. */
void tb_outq_commit(struct tb_outq *q, size_t n);
/* Hands over what is committed, waits until the consumer has taken all of
 * it, ends the thread and frees q. */
void tb_outq_finish(struct tb_outq *q);

#endif
