/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * thread_churn N - creates and joins N short threads, one at a time. Thread
 * i names itself "churn-<i>" (pthread_setname_np) and emits "churn" with
 * i. Prints "churn done".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "tracebpf/trace.h"

static void *run(void *arg)
{
	int i = (int)(intptr_t)arg;
	char name[16];

	snprintf(name, sizeof(name), "churn-%d", i);
	pthread_setname_np(pthread_self(), name);
	TRACE_EVENT_INSTANT1("churn", "churn", TRACE_EVENT_SCOPE_THREAD, "i", i);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000;

	for (int i = 0; i < n; i++) {
		pthread_t th;

		if (pthread_create(&th, NULL, run, (void *)(intptr_t)i))
			return 1;
		pthread_join(th, NULL);
	}
	printf("churn done\n");
	return 0;
}
