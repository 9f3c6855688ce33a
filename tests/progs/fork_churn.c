/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fork_churn N - a server that forks a child per request: the parent emits
 * "spawn" (arg i) and forks N children one after another, each of which
 * emits one "child" instant (arg i) and exits at once. The parent reaps
 * none of them until the end: they stay zombies, as a server's children
 * do until it gets to wait() for them. Then a last child emits "warm"
 * instants 200 us apart until its fast-path ring is mapped (at most 15000,
 * about 3 s), and prints "last fast=F warm=W" (F: 1 if its ring was
 * mapped). The parent reaps every child and prints "done". With
 * FORK_CHURN_HOLD=S in the environment the last child first prints
 * "last pid=<pid>" and sleeps S seconds before its first event.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "tracebpf/trace.h"

/* Reads the header's per-thread state: a test program may, an application
 * has no reason to. */
static int ready(void)
{
	return tracebpf__fast_tls.state == TRACEBPF__FAST_READY;
}

static void last_child(void)
{
	const struct timespec pause = { 0, 200 * 1000 };
	const char *hold = getenv("FORK_CHURN_HOLD");
	long w = 0;

	if (hold) {
		printf("last pid=%d\n", (int)getpid());
		fflush(stdout);
		sleep((unsigned)atoi(hold));
	}

	for (; w < 15000 && !ready(); w++) {
		TRACE_EVENT_INSTANT1("test", "warm", TRACE_EVENT_SCOPE_THREAD, "seq", (int64_t)w);
		nanosleep(&pause, NULL);
	}
	printf("last fast=%d warm=%ld\n", ready(), w);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100;
	pid_t p;

	if (argc != 2 || n < 1) {
		fprintf(stderr, "usage: fork_churn N\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (long i = 0; i < n; i++) {
		TRACE_EVENT_INSTANT1("test", "spawn", TRACE_EVENT_SCOPE_THREAD, "i", (int64_t)i);
		p = fork();
		if (p < 0) {
			perror("fork_churn: fork");
			return 1;
		}
		if (p == 0) {
			TRACE_EVENT_INSTANT1("test", "child", TRACE_EVENT_SCOPE_THREAD, "i", (int64_t)i);
			_exit(0);
		}
	}
	p = fork();
	if (p == 0) {
		last_child();
		_exit(0);
	}
	while (wait(NULL) > 0)
		;
	printf("done\n");
	return 0;
}
