/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * loop_events SECONDS - prints "pid=<pid>" (flushed), then emits
 * TRACE_EVENT_INSTANT1("test", "loop", thread, "seq", n) about every 1 ms
 * for SECONDS seconds (0: forever) and exits 0 printing "emitted=<n>".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "tracebpf/trace.h"
#include "now_ns.h"

int main(int argc, char **argv)
{
	const struct timespec one_ms = { 0, 1000 * 1000 };
	uint64_t n, end = 0;
	double seconds;

	if (argc != 2) {
		fprintf(stderr, "usage: loop_events SECONDS\n");
		return 2;
	}
	seconds = strtod(argv[1], NULL);
	if (seconds < 0) {
		fprintf(stderr, "loop_events: bad SECONDS\n");
		return 2;
	}
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	if (seconds > 0)
		end = now_ns() + (uint64_t)(seconds * 1e9);
	for (n = 0; !end || now_ns() < end; n++) {
		TRACE_EVENT_INSTANT1("test", "loop", TRACE_EVENT_SCOPE_THREAD,
				     "seq", (int64_t)n);
		nanosleep(&one_ms, NULL);
	}
	printf("emitted=%llu\n", (unsigned long long)n);
	return 0;
}
