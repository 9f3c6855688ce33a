/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * thread.h - starting the library's own threads: the trace file's reader
 * decoding ahead (lib/format/tbfile.c) and the batches between two
 * threads (lib/util/outq.h). Below both: it calls nothing of ours.
 */
#ifndef TRACEBPF_THREAD_H
#define TRACEBPF_THREAD_H

/* C11 threads: <pthread.h> would find user/sched.h for <sched.h> */
#include <threads.h>

/* Runs fn(arg) on a new thread with every signal blocked there: they go
 * to the caller's threads. 0 or -errno. */
int tb_thread_start(thrd_t *t, thrd_start_t fn, void *arg);

#endif
