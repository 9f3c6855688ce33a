/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pingpong NROUNDS - two threads, "ping" and "pong", both pinned to the CPU
 * main starts on, pass a byte back and forth over two pipes NROUNDS times.
 * On one CPU each round needs a switch to pong and one back to ping, and
 * each thread blocks in read() until the other writes: the scheduler trace
 * must show it. Prints "ping=<tid> pong=<tid> cpu=<cpu>" and exits 0.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "tracebpf/trace.h"

static int to_pong[2], to_ping[2];
static long rounds;
static cpu_set_t cpus;
static volatile pid_t tids[2];

static void *pong_main(void *arg)
{
	char c;

	(void)arg;
	pthread_setname_np(pthread_self(), "pong");
	tids[1] = syscall(SYS_gettid);
	for (long i = 0; i < rounds; i++) {
		if (read(to_pong[0], &c, 1) != 1 || write(to_ping[1], &c, 1) != 1)
			exit(2);
	}
	return NULL;
}

static void *ping_main(void *arg)
{
	char c = 'x';

	(void)arg;
	pthread_setname_np(pthread_self(), "ping");
	tids[0] = syscall(SYS_gettid);
	TRACE_EVENT0("test", "pingpong");
	for (long i = 0; i < rounds; i++) {
		if (write(to_pong[1], &c, 1) != 1 || read(to_ping[0], &c, 1) != 1)
			exit(2);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_attr_t attr;
	pthread_t a, b;

	rounds = argc > 1 ? atol(argv[1]) : 1000;
	if (pipe(to_pong) || pipe(to_ping))
		return 1;
	CPU_ZERO(&cpus);
	CPU_SET(sched_getcpu(), &cpus);
	pthread_attr_init(&attr);
	pthread_attr_setaffinity_np(&attr, sizeof(cpus), &cpus);
	if (pthread_create(&b, &attr, pong_main, NULL) ||
	    pthread_create(&a, &attr, ping_main, NULL))
		return 1;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("ping=%d pong=%d\n", tids[0], tids[1]);
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &cpus))
			printf("pinned=%d\n", i);
	return 0;
}
