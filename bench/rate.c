/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rate EVENTS_PER_SEC SECONDS [NARGS] - one thread emits
 *     TRACE_EVENT_INSTANT1("bench", "rate", thread, "seq", n)
 * or, with NARGS = 2, a typical two-integer event
 *     TRACE_EVENT_INSTANT2("bench", "rate2", thread, "seq", n, "len", n % 4096)
 * at the given rate for SECONDS seconds, paced by busy-waiting on
 * CLOCK_MONOTONIC (event n is due at start + n / rate; if emitting falls
 * behind, it catches up without sleeping). Prints "emitted=<n>".
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "tracebpf/trace.h"
#include "../tests/progs/now_ns.h"

int main(int argc, char **argv)
{
	double rate, seconds;
	uint64_t start, end, now, n = 0;

	int nargs = argc > 3 ? atoi(argv[3]) : 1;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: rate EVENTS_PER_SEC SECONDS [NARGS]\n");
		return 2;
	}
	rate = strtod(argv[1], NULL);
	seconds = strtod(argv[2], NULL);
	if (rate <= 0 || seconds < 0 || nargs < 1 || nargs > 2) {
		fprintf(stderr, "rate: bad arguments\n");
		return 2;
	}
	start = now_ns();
	end = start + (uint64_t)(seconds * 1e9);
	for (;;) {
		uint64_t due = start + (uint64_t)((double)n * 1e9 / rate);

		do
			now = now_ns();
		while (now < due && now < end);
		if (now >= end)
			break;
		if (nargs == 1)
			TRACE_EVENT_INSTANT1("bench", "rate", TRACE_EVENT_SCOPE_THREAD,
					     "seq", (int64_t)n);
		else
			TRACE_EVENT_INSTANT2("bench", "rate2", TRACE_EVENT_SCOPE_THREAD,
					     "seq", (int64_t)n, "len", (int64_t)(n % 4096));
		n++;
	}
	printf("emitted=%llu\n", (unsigned long long)n);
	return 0;
}
