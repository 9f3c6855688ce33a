/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * quiet_thread - a thread that emits one event and then blocks forever.
 *
 * The thread (named "quiet") emits TRACE_EVENT_INSTANT0("test", "quiet",
 * thread) once and blocks in pause(). Once it has, main emits
 * TRACE_EVENT_INSTANT0("test", "main_ready", thread), prints "ready"
 * (flushed) and blocks in pause() too. Ends only by a signal.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include "tracebpf/trace.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int quiet_done;

static void *quiet_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "quiet");
	TRACE_EVENT_INSTANT0("test", "quiet", TRACE_EVENT_SCOPE_THREAD);
	pthread_mutex_lock(&lock);
	quiet_done = 1;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
	for (;;)
		pause();
	return NULL;
}

int main(void)
{
	pthread_t thread;
	int err;

	err = pthread_create(&thread, NULL, quiet_main, NULL);
	if (err) {
		fprintf(stderr, "quiet_thread: pthread_create: error %d\n", err);
		return 1;
	}
	pthread_mutex_lock(&lock);
	while (!quiet_done)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);

	TRACE_EVENT_INSTANT0("test", "main_ready", TRACE_EVENT_SCOPE_THREAD);
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
	return 0; /* not reached */
}
