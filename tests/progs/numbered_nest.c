/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * numbered_nest THREADS OUTER INNER - THREADS threads (thread k is worker
 * k, k = 1..THREADS) each run OUTER numbered scopes as fast as they can:
 *
 *     BEGIN outer {i}                      i = 0..OUTER-1
 *       FLOW_END hop (id k) {end_i: i-1}   (from i = 1 on)
 *       ASYNC_BEGIN req (id k) {i}
 *       INNER times: BEGIN inner {i, j}, END inner {end_i: i, end_j: j}
 *       ASYNC_END req (id k) {end_i: i}
 *       FLOW_BEGIN hop (id k) {i}
 *     END outer {end_i: i}
 *
 * Every begin and end carries its scope's numbers, so a reader of the trace
 * can tell whether a slice, async slice or flow joins a begin and an end
 * of the same scope. The async and flow ids are reused by every scope of
 * a thread, as many applications do. Prints "done" at the end.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "tracebpf/trace.h"

static long nouter, ninner;

static void *worker(void *arg)
{
	uint64_t k = (uintptr_t)arg;

	for (int64_t i = 0; i < nouter; i++) {
		TRACE_EVENT_BEGIN1("nest", "outer", "i", i);
		if (i > 0)
			TRACE_EVENT_FLOW_END1("nest", "hop", k, "end_i", i - 1);
		TRACE_EVENT_ASYNC_BEGIN1("nest", "req", k, "i", i);
		for (int64_t j = 0; j < ninner; j++) {
			TRACE_EVENT_BEGIN2("nest", "inner", "i", i, "j", j);
			TRACE_EVENT_END2("nest", "inner", "end_i", i, "end_j", j);
		}
		TRACE_EVENT_ASYNC_END1("nest", "req", k, "end_i", i);
		TRACE_EVENT_FLOW_BEGIN1("nest", "hop", k, "i", i);
		TRACE_EVENT_END1("nest", "outer", "end_i", i);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t tid[16];
	long n = argc == 4 ? strtol(argv[1], NULL, 10) : 0;

	nouter = argc == 4 ? strtol(argv[2], NULL, 10) : 0;
	ninner = argc == 4 ? strtol(argv[3], NULL, 10) : 0;
	if (n < 1 || n > 16 || nouter < 1 || ninner < 0) {
		fprintf(stderr, "usage: numbered_nest THREADS OUTER INNER\n");
		return 2;
	}
	for (long t = 0; t < n; t++)
		pthread_create(&tid[t], NULL, worker, (void *)(uintptr_t)(t + 1));
	for (long t = 0; t < n; t++)
		pthread_join(tid[t], NULL);
	printf("done\n");
	return 0;
}
