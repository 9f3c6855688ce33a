/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * site_order - two threads on CPU 0 hit one site out of time order, as a
 * thread switched out between its clock read and its probe does: thread A
 * reads the clock, then thread B hits the site (its first hit on the CPU:
 * the descriptor is reported, stamped with B's later time), then A hits it
 * with the time it read first. The site is hand-written as trace.h writes
 * one (TRACE_EVENT_INSTANT1("test", "order", t, "who", who), the time in
 * %r8) so that the time can be taken apart from the probe. Prints
 * "a=NS b=NS" (the times each passed) and "done".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include "tracebpf/trace.h"

static sem_t b_go, a_go;
static uint64_t ts_a, ts_b;

__attribute__((noinline)) static void hit(uint64_t ts, int64_t who)
{
	TRACEBPF__SITE(site, TRACEBPF_PHASE_INSTANT, TRACEBPF_SCOPE_THREAD, 1,
		       TRACEBPF_ARG_INT, TRACEBPF_ARG_NONE, "test" "\0" "order" "\0" "who");
	if (__builtin_expect(TRACEBPF_ENABLED(), 0)) {
		const volatile unsigned char *p = (const volatile unsigned char *)&site;
		register uint64_t r8 __asm__("r8") = ts;

		(void)p[0];
		(void)p[site.h.size - 1];
		__asm__ __volatile__(TRACEBPF__ASM_NOP TRACEBPF__ASM_NOTE TRACEBPF__ASM_BASE
				     :
				     : [site] "D"(&site), [a0] "S"((uint64_t)who), [a1] "d"(0ull),
				       [ts] "r"(r8)
				     : "memory");
	}
}

static void on_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *thread_a(void *arg)
{
	(void)arg;
	on_cpu0();
	ts_a = tracebpf__now();
	sem_post(&b_go);
	sem_wait(&a_go);
	hit(ts_a, 0);
	return NULL;
}

static void *thread_b(void *arg)
{
	(void)arg;
	on_cpu0();
	sem_wait(&b_go);
	ts_b = tracebpf__now();
	hit(ts_b, 1);
	sem_post(&a_go);
	return NULL;
}

int main(void)
{
	pthread_t a, b;

	sem_init(&b_go, 0, 0);
	sem_init(&a_go, 0, 0);
	pthread_create(&b, NULL, thread_b, NULL);
	pthread_create(&a, NULL, thread_a, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("a=%llu b=%llu\ndone\n", (unsigned long long)ts_a, (unsigned long long)ts_b);
	return 0;
}
