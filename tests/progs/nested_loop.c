/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * nested_loop THREADS SECONDS - prints "pid=<pid>" (flushed), then THREADS
 * threads each loop for SECONDS seconds over
 *     TRACE_EVENT1("nest", "outer", "i", i)     a scope of 50 inner ones:
 *         TRACE_EVENT1("nest", "inner", "j", j)  j = 0..49, 20 us of spinning
 * so that a recorder attaching at any moment lands inside both scopes.
 * Prints "done" at the end. After SIGUSR1 each thread stops inside both
 * scopes, at the end of its current inner one, for good: main prints
 * "held" (flushed) once all are held, and the program runs until killed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
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
static volatile sig_atomic_t hold;
static int nheld, nfinished;

static void on_usr1(int sig)
{
	(void)sig;
	hold = 1;
}

static void inner(int64_t j)
{
	uint64_t until = now_ns() + 20000;

	TRACE_EVENT1("nest", "inner", "j", j);
	while (now_ns() < until)
		;
	if (hold) {   /* inside both scopes, for good */
		__atomic_add_fetch(&nheld, 1, __ATOMIC_RELEASE);
		for (;;)
			pause();
	}
}

static void *loop(void *arg)
{
	(void)arg;
	for (int64_t i = 0; now_ns() < end; i++) {
		TRACE_EVENT1("nest", "outer", "i", i);
		for (int64_t j = 0; j < 50; j++)
			inner(j);
	}
	__atomic_add_fetch(&nfinished, 1, __ATOMIC_RELEASE);
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
	signal(SIGUSR1, on_usr1);
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	end = now_ns() + (uint64_t)(secs * 1e9);
	for (long t = 0; t < n; t++)
		pthread_create(&tid[t], NULL, loop, NULL);
	while (__atomic_load_n(&nfinished, __ATOMIC_ACQUIRE) < n) {
		if (__atomic_load_n(&nheld, __ATOMIC_ACQUIRE) == n) {
			printf("held\n");
			fflush(stdout);
			for (;;)
				pause();
		}
		usleep(1000);
	}
	for (long t = 0; t < n; t++)
		pthread_join(tid[t], NULL);
	printf("done\n");
	return 0;
}
