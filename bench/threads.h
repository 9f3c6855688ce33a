/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * threads.h - the probe-cost benches' driver: THREADS threads each run
 * loop() once, released together from a barrier after their warm-up, and
 * one line gives the slowest thread's ns per hit and the aggregate rate:
 *     ns_per_hit=<ns> n=<N> threads=<T> rate=<hits/s>
 */
#ifndef TRACEBPF_BENCH_THREADS_H
#define TRACEBPF_BENCH_THREADS_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include "../tests/progs/now_ns.h"

struct bench_threads {
	void (*warm_up)(void);   /* may be NULL */
	void (*loop)(void);      /* N hits */
	pthread_barrier_t start;
	uint64_t took[64];
};

static struct bench_threads bench;

static void *bench_thread(void *arg)
{
	uint64_t t0;

	if (bench.warm_up)
		bench.warm_up();
	pthread_barrier_wait(&bench.start);
	t0 = now_ns();
	bench.loop();
	*(uint64_t *)arg = now_ns() - t0;
	return NULL;
}

/* Runs the threads and prints the line; 0, or 1 if a thread cannot start. */
static int bench_run(const char *prog, long threads, uint64_t n)
{
	uint64_t t0, wall, slowest = 0;
	pthread_t tid[64];

	pthread_barrier_init(&bench.start, NULL, (unsigned)threads + 1);
	for (long t = 0; t < threads; t++)
		if (pthread_create(&tid[t], NULL, bench_thread, &bench.took[t])) {
			fprintf(stderr, "%s: cannot start a thread\n", prog);
			return 1;
		}
	pthread_barrier_wait(&bench.start);   /* after the threads' warm-up */
	t0 = now_ns();
	for (long t = 0; t < threads; t++) {
		pthread_join(tid[t], NULL);
		if (bench.took[t] > slowest)
			slowest = bench.took[t];
	}
	wall = now_ns() - t0;
	printf("ns_per_hit=%.2f n=%llu threads=%ld rate=%.0f\n",
	       (double)slowest / (double)n, (unsigned long long)n, threads,
	       (double)n * (double)threads / ((double)wall / 1e9));
	return 0;
}

#endif /* TRACEBPF_BENCH_THREADS_H */
