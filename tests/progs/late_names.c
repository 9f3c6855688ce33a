/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * late_names - names set before anybody traces the process.
 *
 * Sets TRACE_PROCESS_NAME("late process"), TRACE_THREAD_NAME("late main")
 * in main and TRACE_THREAD_NAME("late worker") in a second thread, prints
 * "named pid=P worker=T" (flushed) and reads standard input up to a line.
 * Then both threads emit TRACE_EVENT_INSTANT1("test", "after", thread,
 * "t", 0 or 1), and it exits 0.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include "tracebpf/trace.h"

static pthread_barrier_t named, go;
static volatile pid_t worker_tid;

static void *worker(void *arg)
{
	(void)arg;
	TRACE_THREAD_NAME("late worker");
	worker_tid = gettid();
	pthread_barrier_wait(&named);
	pthread_barrier_wait(&go);
	TRACE_EVENT_INSTANT1("test", "after", TRACE_EVENT_SCOPE_THREAD, "t", 1);
	return NULL;
}

int main(void)
{
	pthread_t t;
	char line[64];

	TRACE_PROCESS_NAME("late process");
	TRACE_THREAD_NAME("late main");
	pthread_barrier_init(&named, NULL, 2);
	pthread_barrier_init(&go, NULL, 2);
	if (pthread_create(&t, NULL, worker, NULL))
		return 1;
	pthread_barrier_wait(&named);
	printf("named pid=%d worker=%d\n", (int)getpid(), (int)worker_tid);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		line[0] = 0;
	pthread_barrier_wait(&go);
	TRACE_EVENT_INSTANT1("test", "after", TRACE_EVENT_SCOPE_THREAD, "t", 0);
	pthread_join(t, NULL);
	return 0;
}
