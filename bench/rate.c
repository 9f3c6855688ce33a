/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rate EVENTS_PER_SEC SECONDS [NARGS [THREADS]] - emits
 *     TRACE_EVENT_INSTANT1("bench", "rate", thread, "seq", n)
 * or, with NARGS = 2, a typical two-integer event
 *     TRACE_EVENT_INSTANT2("bench", "rate2", thread, "seq", n, "len", n % 4096)
 * or, with NARGS = 0, a slice: TRACE_EVENT_BEGIN1("bench", "slice", "seq", n)
 * then TRACE_EVENT_END0("bench", "slice") (two records per event), or, with
 * NARGS = 3, two numbered slices, "outer" {i: n} holding "inner" {i: n},
 * each END saying whose it is ({end_i: n}; four records per event)
 * at EVENTS_PER_SEC in all for SECONDS seconds, from THREADS threads
 * (default 1) that each take an equal share and number their own events
 * from 0. Each thread paces itself by busy-waiting on CLOCK_MONOTONIC
 * (its event n is due at start + n / share; if emitting falls behind, it
 * catches up without sleeping). With RATE_EXACT=1 in the environment,
 * each thread emits its whole share (EVENTS_PER_SEC * SECONDS / THREADS)
 * however long that takes: a test that needs so many events whatever the
 * machine's load. Prints "pid=<pid>" first (flushed) and "emitted=<n>"
 * (all threads) at the end.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "tracebpf/trace.h"
#include "../tests/progs/now_ns.h"

static double share, seconds;
static int nargs, exact;
static uint64_t start;

static void *emit(void *arg)
{
	uint64_t end = start + (uint64_t)(seconds * 1e9), now, n = 0;
	uint64_t whole = (uint64_t)(share * seconds);

	for (;;) {
		uint64_t due = start + (uint64_t)((double)n * 1e9 / share);

		do
			now = now_ns();
		while (now < due && (exact || now < end));
		if (exact ? n >= whole : now >= end)
			break;
		if (nargs == 0) {
			TRACE_EVENT_BEGIN1("bench", "slice", "seq", (int64_t)n);
			TRACE_EVENT_END0("bench", "slice");
		} else if (nargs == 3) {
			TRACE_EVENT_BEGIN1("bench", "outer", "i", (int64_t)n);
			TRACE_EVENT_BEGIN1("bench", "inner", "i", (int64_t)n);
			TRACE_EVENT_END1("bench", "inner", "end_i", (int64_t)n);
			TRACE_EVENT_END1("bench", "outer", "end_i", (int64_t)n);
		} else if (nargs == 1)
			TRACE_EVENT_INSTANT1("bench", "rate", TRACE_EVENT_SCOPE_THREAD,
					     "seq", (int64_t)n);
		else
			TRACE_EVENT_INSTANT2("bench", "rate2", TRACE_EVENT_SCOPE_THREAD,
					     "seq", (int64_t)n, "len", (int64_t)(n % 4096));
		n++;
	}
	*(uint64_t *)arg = n;
	return NULL;
}

int main(int argc, char **argv)
{
	uint64_t counts[64], total = 0;
	pthread_t tid[64];
	double rate;
	long threads;

	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: rate EVENTS_PER_SEC SECONDS [NARGS [THREADS]]\n");
		return 2;
	}
	rate = strtod(argv[1], NULL);
	seconds = strtod(argv[2], NULL);
	nargs = argc > 3 ? atoi(argv[3]) : 1;
	threads = argc > 4 ? strtol(argv[4], NULL, 10) : 1;
	if (rate <= 0 || seconds < 0 || nargs < 0 || nargs > 3 || threads < 1 || threads > 64) {
		fprintf(stderr, "rate: bad arguments\n");
		return 2;
	}
	share = rate / (double)threads;
	exact = getenv("RATE_EXACT") && !strcmp(getenv("RATE_EXACT"), "1");
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	start = now_ns();
	for (long t = 1; t < threads; t++)
		if (pthread_create(&tid[t], NULL, emit, &counts[t])) {
			fprintf(stderr, "rate: cannot start a thread\n");
			return 1;
		}
	emit(&counts[0]);
	total = counts[0];
	for (long t = 1; t < threads; t++) {
		pthread_join(tid[t], NULL);
		total += counts[t];
	}
	printf("emitted=%llu\n", (unsigned long long)total);
	return 0;
}
