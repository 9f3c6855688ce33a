/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * burst THREADS - many threads with bursts of events, as a server's
 * workers are: THREADS threads, released together from a barrier, each
 * emit a burst of BURST_EVENTS (200) events every BURST_PERIOD_MS (20 ms),
 * BURST_COUNT (50) times (1 s), then exit. Each event is
 *     TRACE_EVENT_INSTANT2("bench", "burst", thread, "t", t, "i", i)
 * (t the thread's number, i its event's). A thread that falls behind its
 * schedule emits its next burst at once, so that every run emits
 * THREADS x 10,000 events (100 threads: 1,000,000, 1 M events/s). Prints
 *     emitted=<events> threads=<T> seconds=<wall time of the bursts>
 * Built twice: with tracebpf's site, and with -DBURST_LTTNG as
 * build/bench/burst_lttng (bench/burst.sh), the same loop with the
 * LTTng-UST tracepoint bench:hit2 (bench/probe_cost_lttng_tp.h: two 64-bit
 * integers) in place of the site.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef BURST_LTTNG
#include "probe_cost_lttng_tp.h"
#define BURST_EVENT(t, i) lttng_ust_tracepoint(bench, hit2, (t), (i))
#define PROG "burst_lttng"
#else
#include "tracebpf/trace.h"
#define BURST_EVENT(t, i) \
	TRACE_EVENT_INSTANT2("bench", "burst", TRACE_EVENT_SCOPE_THREAD, "t", (t), "i", (i))
#define PROG "burst"
#endif
#include "../tests/progs/now_ns.h"

#define BURST_EVENTS    200
#define BURST_PERIOD_MS 20
#define BURST_COUNT     50
#define MAX_THREADS     4096

static pthread_barrier_t go;
static uint64_t start;   /* the first burst, CLOCK_MONOTONIC ns */

static void sleep_until(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void *worker(void *arg)
{
	int64_t t = (int64_t)(intptr_t)arg, i = 0;

	pthread_barrier_wait(&go);
	for (int b = 0; b < BURST_COUNT; b++) {
		sleep_until(start + (uint64_t)b * BURST_PERIOD_MS * 1000000u);
		for (int k = 0; k < BURST_EVENTS; k++, i++)
			BURST_EVENT(t, i);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t *tid;
	pthread_attr_t attr;
	long threads;
	uint64_t end;
	int err;

	threads = argc == 2 ? strtol(argv[1], NULL, 10) : 0;
	if (threads < 1 || threads > MAX_THREADS) {
		fprintf(stderr, "usage: " PROG " THREADS (1..%d)\n", MAX_THREADS);
		return 2;
	}
	tid = calloc((size_t)threads, sizeof(*tid));
	if (!tid) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	pthread_barrier_init(&go, NULL, (unsigned)threads + 1);
	for (long t = 0; t < threads; t++) {
		err = pthread_create(&tid[t], &attr, worker, (void *)(intptr_t)t);
		if (err) {
			fprintf(stderr, PROG ": failed to start thread %ld: %s\n", t,
				strerror(err));
			return 1;   /* the others wait at the barrier: exit ends them */
		}
	}
	/* the first burst 10 ms after the release: every thread is awake */
	start = now_ns() + 10000000u;
	pthread_barrier_wait(&go);
	for (long t = 0; t < threads; t++)
		pthread_join(tid[t], NULL);
	end = now_ns();
	printf("emitted=%lld threads=%ld seconds=%.3f\n",
	       (long long)threads * BURST_COUNT * BURST_EVENTS, threads,
	       (double)(end - start) / 1e9);
	free(tid);
	return 0;
}
