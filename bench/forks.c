/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * forks N PAR EVENTS - a server that forks a child per request (bench/
 * forks.sh): it emits "accept" (arg req) and forks a child, at most PAR
 * children at once (it waits for one to end before the next fork). Each
 * child emits a slice "request" (arg req) around EVENTS instants "work"
 * (args req, k) and exits; every tenth child is killed (SIGKILL) by the
 * server 200 us after its fork, as a server kills a request that hangs.
 * Prints the run's wall time: elapsed_ms=<x> children=<N> killed=<n>
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "tracebpf/trace.h"
#include "../tests/progs/now_ns.h"

static void child(int64_t req, long events, int hang)
{
	TRACE_EVENT_BEGIN1("srv", "request", "req", req);
	for (int64_t k = 0; k < events; k++) {
		TRACE_EVENT_INSTANT2("srv", "work", TRACE_EVENT_SCOPE_THREAD, "req", req, "k", k);
		if (hang && k == events / 2)
			pause();
	}
	TRACE_EVENT_END1("srv", "request", "req", req);
	_exit(0);
}

int main(int argc, char **argv)
{
	long n, par, events, live = 0, killed = 0;
	uint64_t t0;

	if (argc != 4 || (n = atol(argv[1])) < 1 || (par = atol(argv[2])) < 1 ||
	    (events = atol(argv[3])) < 1) {
		fprintf(stderr, "usage: forks N PAR EVENTS\n");
		return 2;
	}
	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		pid_t p;

		if (live >= par && wait(NULL) > 0)
			live--;
		TRACE_EVENT_INSTANT1("srv", "accept", TRACE_EVENT_SCOPE_THREAD, "req", (int64_t)i);
		p = fork();
		if (p < 0) {
			perror("forks: fork");
			return 1;
		}
		if (p == 0)
			child(i, events, i % 10 == 9);
		live++;
		if (i % 10 == 9) {
			usleep(200);
			kill(p, SIGKILL);
			killed++;
		}
	}
	while (wait(NULL) > 0)
		;
	printf("elapsed_ms=%.1f children=%ld killed=%ld\n", (double)(now_ns() - t0) / 1e6, n, killed);
	return 0;
}
