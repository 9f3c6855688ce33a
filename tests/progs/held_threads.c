/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * held_threads N - N threads started, held, then released together.
 *
 * Starts N threads, each of which waits on a barrier without emitting
 * anything; main prints "started" (flushed) and reads standard input until
 * end of file. Then all N are released at once, and each emits one
 *     TRACE_EVENT_INSTANT1("test", "held", thread, "t", t)
 * (t its number) and exits. Prints "fast=<F>": how many of the N found
 * their fast-path ring mapped at that first event (the header's
 * thread-local state, as fast_seq reads it).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tracebpf/trace.h"

#define MAX_THREADS 1000

static pthread_barrier_t go;
static int fast;

static void *held(void *arg)
{
	int64_t t = (int64_t)(intptr_t)arg;

	pthread_barrier_wait(&go);
	TRACE_EVENT_INSTANT1("test", "held", TRACE_EVENT_SCOPE_THREAD, "t", t);
#ifndef TRACEBPF_NO_FAST_PATH
	if (tracebpf__fast_tls.state == TRACEBPF__FAST_READY)
		__atomic_fetch_add(&fast, 1, __ATOMIC_RELAXED);
#endif
	return NULL;
}

int main(int argc, char **argv)
{
	static pthread_t tid[MAX_THREADS];
	char buf[256];
	long n = argc == 2 ? strtol(argv[1], NULL, 10) : 0;
	int err;

	if (n < 1 || n > MAX_THREADS) {
		fprintf(stderr, "usage: held_threads N (1..%d)\n", MAX_THREADS);
		return 2;
	}
	pthread_barrier_init(&go, NULL, (unsigned)n + 1);
	for (long t = 0; t < n; t++) {
		err = pthread_create(&tid[t], NULL, held, (void *)(intptr_t)t);
		if (err) {
			fprintf(stderr, "held_threads: failed to start thread %ld: %s\n", t,
				strerror(err));
			return 1;
		}
	}
	printf("started\n");
	fflush(stdout);
	while (fread(buf, 1, sizeof(buf), stdin) > 0)
		;
	pthread_barrier_wait(&go);
	for (long t = 0; t < n; t++)
		pthread_join(tid[t], NULL);
	printf("fast=%d\n", fast);
	return 0;
}
