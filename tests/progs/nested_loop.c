/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * nested_loop THREADS SECONDS - prints "pid=<pid>" (flushed), then THREADS
 * threads each loop for SECONDS seconds over
 *     TRACE_EVENT1("nest", "outer", "i", i)     a scope of 50 inner ones:
 *         TRACE_EVENT1("nest", "inner", "j", j)  j = 0..49, 20 us of spinning
 * so that a recorder attaching at any moment lands inside both scopes.
 * Prints "done" at the end.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
/* Probes only: the test races an attach against the scopes, and the fast
 * path's first try per thread (system calls) would move the window it
 * races for. */
#define TRACEBPF_NO_FAST_PATH
#include "tracebpf/trace.h"
#include "now_ns.h"

static uint64_t end;

static void inner(int64_t j)
{
	uint64_t until = now_ns() + 20000;

	TRACE_EVENT1("nest", "inner", "j", j);
	while (now_ns() < until)
		;
}

static void *loop(void *arg)
{
	(void)arg;
	for (int64_t i = 0; now_ns() < end; i++) {
		TRACE_EVENT1("nest", "outer", "i", i);
		for (int64_t j = 0; j < 50; j++)
			inner(j);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t tid[16];
	long n = argc == 3 ? strtol(argv[1], NULL, 10) : 0;
	double secs = argc == 3 ? strtod(argv[2], NULL) : 0;

	if (n < 1 || n > 16 || secs <= 0) {
		fprintf(stderr, "usage: nested_loop THREADS SECONDS\n");
		return 2;
	}
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	end = now_ns() + (uint64_t)(secs * 1e9);
	for (long t = 0; t < n; t++)
		pthread_create(&tid[t], NULL, loop, NULL);
	for (long t = 0; t < n; t++)
		pthread_join(tid[t], NULL);
	printf("done\n");
	return 0;
}
