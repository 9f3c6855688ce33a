/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * filter_events ROUNDS - known events on two threads over about ROUNDS
 * milliseconds, for the convert filters (tests/integration/test_filters.py).
 *
 * Thread "producer" (category "alpha"), round k:
 *     slice "round" { instant "mark"; flow begin "hand";
 *                     async begin "job" id k }     then counter "load" = k
 * thread "consumer" (category "beta"), once the producer's round k is done:
 *     slice "round" { slice "io.read" { instant "got" };
 *                     flow end "hand"; async end "job" id k }
 * Async "job" and flow "hand" are in category "pair": each begins on the
 * producer and ends on the consumer. Async "session" (category "pair", id
 * 1 << 40) is open from the producer's start to the consumer's end: a
 * pair open across everything. Flow ids are global (Chrome JSON keys
 * a flow by cat, name and id in every process), so a flow's id is
 * pid << 16 | k: two processes running this never share one. Each round
 * sleeps 1 ms. Prints "done".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "tracebpf/trace.h"

static long rounds;
static sem_t handed;

static void nap(void)
{
	struct timespec ts = { 0, 1000000 };

	nanosleep(&ts, NULL);
}

static long flow_id(long k)
{
	return (long)getpid() << 16 | k;
}

static void *producer(void *arg)
{
	long k;

	(void)arg;
	pthread_setname_np(pthread_self(), "producer");
	TRACE_EVENT_ASYNC_BEGIN0("pair", "session", 1ll << 40);
	for (k = 0; k < rounds; k++) {
		{
			TRACE_EVENT1("alpha", "round", "k", k);
			TRACE_EVENT_INSTANT1("alpha", "mark", TRACE_EVENT_SCOPE_THREAD, "k", k);
			TRACE_EVENT_FLOW_BEGIN0("pair", "hand", flow_id(k));
			TRACE_EVENT_ASYNC_BEGIN1("pair", "job", k, "k", k);
		}
		TRACE_COUNTER1("alpha", "load", k);
		sem_post(&handed);
		nap();
	}
	return NULL;
}

static void *consumer(void *arg)
{
	long k;

	(void)arg;
	pthread_setname_np(pthread_self(), "consumer");
	for (k = 0; k < rounds; k++) {
		sem_wait(&handed);
		{
			TRACE_EVENT1("beta", "round", "k", k);
			{
				TRACE_EVENT0("beta", "io.read");
				TRACE_EVENT_INSTANT0("beta", "got", TRACE_EVENT_SCOPE_THREAD);
			}
			TRACE_EVENT_FLOW_END0("pair", "hand", flow_id(k));
			TRACE_EVENT_ASYNC_END0("pair", "job", k);
		}
	}
	TRACE_EVENT_ASYNC_END0("pair", "session", 1ll << 40);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t p, c;

	if (argc != 2 || (rounds = strtol(argv[1], NULL, 0)) < 1) {
		fprintf(stderr, "usage: filter_events ROUNDS\n");
		return 2;
	}
	sem_init(&handed, 0, 0);
	if (pthread_create(&p, NULL, producer, NULL) || pthread_create(&c, NULL, consumer, NULL)) {
		fprintf(stderr, "filter_events: pthread_create failed\n");
		return 1;
	}
	pthread_join(p, NULL);
	pthread_join(c, NULL);
	printf("done\n");
	return 0;
}
