/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * report_nest THREADS N SPIN_NS - THREADS threads (thread k is named
 * nest-<k>, k = 1..THREADS) each run N times, busy-waiting SPIN_NS where
 * it says spin:
 *
 *     BEGIN outer                        spin
 *       BEGIN inner  spin  BEGIN leaf END leaf  END inner
 *       BEGIN inner  spin  BEGIN leaf END leaf  END inner
 *       INSTANT mark
 *     END outer
 *     COUNTER_ID "progress" (id k) = i   i = 0..N-1
 *
 * then BEGIN "unclosed" and exit the thread with it open. The main thread
 * then sets the counter "gauge" to 5, -3, 12 and 7, in that order. So per
 * thread: N outer, 2N inner, 2N leaf complete slices, N mark instants, one
 * slice left open at the thread's exit; outer holds exactly the inners,
 * inner exactly one leaf. Prints "started" (flushed) once its threads
 * run and "done" at the end.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "tracebpf/trace.h"
#include "now_ns.h"

static long n;
static uint64_t spin_ns;

static void spin(void)
{
	uint64_t end = now_ns() + spin_ns;

	while (now_ns() < end)
		;
}

static void inner(void)
{
	TRACE_EVENT_BEGIN0("rep", "inner");
	spin();
	TRACE_EVENT_BEGIN0("rep", "leaf");
	TRACE_EVENT_END0("rep", "leaf");
	TRACE_EVENT_END0("rep", "inner");
}

static void *worker(void *arg)
{
	uint64_t k = (uintptr_t)arg;
	char name[16];

	snprintf(name, sizeof(name), "nest-%d", (int)k);
	pthread_setname_np(pthread_self(), name);
	for (int64_t i = 0; i < n; i++) {
		TRACE_EVENT_BEGIN0("rep", "outer");
		spin();
		inner();
		inner();
		TRACE_EVENT_INSTANT0("rep", "mark", TRACE_EVENT_SCOPE_THREAD);
		TRACE_EVENT_END0("rep", "outer");
		TRACE_COUNTER_ID1("rep", "progress", k, i);
	}
	TRACE_EVENT_BEGIN0("rep", "unclosed");
	return NULL;
}

int main(int argc, char **argv)
{
	static const int64_t gauge[] = { 5, -3, 12, 7 };
	pthread_t tid[16];
	long threads = argc == 4 ? strtol(argv[1], NULL, 10) : 0;

	n = argc == 4 ? strtol(argv[2], NULL, 10) : 0;
	spin_ns = argc == 4 ? strtoull(argv[3], NULL, 10) : 0;
	if (threads < 1 || threads > 16 || n < 1) {
		fprintf(stderr, "usage: report_nest THREADS N SPIN_NS\n");
		return 2;
	}
	for (long t = 0; t < threads; t++)
		if (pthread_create(&tid[t], NULL, worker, (void *)(uintptr_t)(t + 1))) {
			fprintf(stderr, "report_nest: cannot start a thread\n");
			return 1;
		}
	printf("started\n");
	fflush(stdout);
	for (long t = 0; t < threads; t++)
		pthread_join(tid[t], NULL);
	for (size_t i = 0; i < sizeof(gauge) / sizeof(*gauge); i++)
		TRACE_COUNTER1("rep", "gauge", gauge[i]);
	printf("done\n");
	return 0;
}
