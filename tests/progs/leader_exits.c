/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * leader_exits N [now | when-file PATH] - prints "pid=<pid>" (flushed),
 * starts a thread, waits until a tracer records category "test" (with
 * "now": does not wait; with "when-file": until PATH exists, such as the
 * output a recorder attaching to it creates before it opens the
 * program's files) and ends the main thread with pthread_exit(): the
 * process lives on in that thread while its group leader is a zombie.
 * The thread waits for a tracer and for the leader's end, emits N instants
 * TRACE_EVENT_INSTANT1("test", "tick", thread, "i", i) 1 ms apart and a
 * last "done", and the process exits.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "tracebpf/trace.h"

static long n_ticks;

/* The group leader's state in /proc/self/stat is Z (it ended). */
static int leader_gone(void)
{
	char buf[512], *p;
	size_t n;
	FILE *f = fopen("/proc/self/stat", "re");

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] && p[2] == 'Z';
}

static void *ticker(void *arg)
{
	const struct timespec ms = { 0, 1000 * 1000 };

	(void)arg;
	while (!TRACE_EVENT_CATEGORY_ACTIVE("test") || !leader_gone())
		nanosleep(&ms, NULL);
	for (long i = 0; i < n_ticks; i++) {
		TRACE_EVENT_INSTANT1("test", "tick", TRACE_EVENT_SCOPE_THREAD, "i", (int64_t)i);
		nanosleep(&ms, NULL);
	}
	TRACE_EVENT_INSTANT0("test", "done", TRACE_EVENT_SCOPE_THREAD);
	return NULL;
}

int main(int argc, char **argv)
{
	const struct timespec ms = { 0, 1000 * 1000 };
	pthread_t t;

	if (argc < 2 || argc > 4 || (argc == 3 && strcmp(argv[2], "now")) ||
	    (argc == 4 && strcmp(argv[2], "when-file"))) {
		fprintf(stderr, "usage: leader_exits N [now | when-file PATH]\n");
		return 2;
	}
	n_ticks = atol(argv[1]);
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	if (pthread_create(&t, NULL, ticker, NULL))
		return 1;
	while (argc == 2 && !TRACE_EVENT_CATEGORY_ACTIVE("test"))
		nanosleep(&ms, NULL);
	while (argc == 4 && access(argv[3], F_OK))
		nanosleep(&ms, NULL);
	pthread_exit(NULL);
}
