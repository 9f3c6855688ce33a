/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * mt_events NTHREADS NEVENTS - NTHREADS threads, named worker-<i>, start
 * together (barrier); each emits NEVENTS times
 *
 *     TRACE_EVENT1("test", "work", "seq", j)            scoped slice around
 *     TRACE_EVENT_INSTANT1("test", "tick", thread, "seq", j)
 *
 * then TRACE_COUNTER1("test", "done", i). Prints "done" and exits 0.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "tracebpf/trace.h"

static pthread_barrier_t start;
static long nevents;

struct worker {
	pthread_t thread;
	int index;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char name[16];
	long j;

	snprintf(name, sizeof(name), "worker-%d", w->index);
	pthread_setname_np(pthread_self(), name);
	pthread_barrier_wait(&start);
	for (j = 0; j < nevents; j++) {
		TRACE_EVENT1("test", "work", "seq", j);
		TRACE_EVENT_INSTANT1("test", "tick", TRACE_EVENT_SCOPE_THREAD,
				     "seq", j);
	}
	TRACE_COUNTER1("test", "done", w->index);
	return NULL;
}

int main(int argc, char **argv)
{
	struct worker *workers;
	long nthreads, i;
	int err;

	if (argc != 3) {
		fprintf(stderr, "usage: mt_events NTHREADS NEVENTS\n");
		return 2;
	}
	nthreads = strtol(argv[1], NULL, 0);
	nevents = strtol(argv[2], NULL, 0);
	if (nthreads < 1 || nthreads > 1024 || nevents < 0) {
		fprintf(stderr, "mt_events: bad arguments\n");
		return 2;
	}
	workers = calloc((size_t)nthreads, sizeof(*workers));
	if (!workers)
		return 1;
	pthread_barrier_init(&start, NULL, (unsigned)nthreads);
	for (i = 0; i < nthreads; i++) {
		workers[i].index = (int)i;
		err = pthread_create(&workers[i].thread, NULL, worker_main,
				     &workers[i]);
		if (err) {
			fprintf(stderr, "mt_events: pthread_create: error %d\n",
				err);
			return 1;
		}
	}
	for (i = 0; i < nthreads; i++)
		pthread_join(workers[i].thread, NULL);
	pthread_barrier_destroy(&start);
	free(workers);
	printf("done\n");
	return 0;
}
