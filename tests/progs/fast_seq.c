/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fast_seq MODE THREADS N [COUNTFILE] - numbered events for the fast-path
 * tests.
 *
 * Each of THREADS threads first emits "warm" instants (args t = thread,
 * seq = 0, 1, ...), 200 us apart, until its fast-path ring is mapped (at
 * most 15000 of them, about 3 s, or $FAST_SEQ_WARM), so the warm events
 * cross the switch from the probe to the ring; then N "seq" instants (t, seq = 0 .. N-1), every 100th inside a
 * slice "block" (BEGIN/END with arg t), and after every seq 50 mod 100 a
 * "label" (t, name = "t<T>-<seq>", padded with x to 399 bytes every
 * 1000th), and after every seq 70 mod 100 the `event_id` sites of
 * with_ids(). It prints "thread T fast=F warm=W"
 * (F: 1 if its ring was mapped) for each thread. Modes:
 *   run    just that;
 *   fork   the main thread does it (THREADS is ignored), then a child
 *          process does it too, and prints "child fast=F" (the child
 *          must not find its parent's ring);
 *   kill   one thread that, once its ring is mapped, emits "seq" forever,
 *          storing seq + 1 in COUNTFILE (mapped shared) after each event,
 *          100 us of sleep every N events (every 1000 if N is 0);
 *   attach THREADS threads emit "seq" (t, seq) from the start, untraced
 *          or not, 100 us of sleep every 100 events (every
 *          $FAST_SEQ_BURST events if set), N events each; a
 *          thread prints "thread T fast_from=S" when its ring is mapped
 *          at event S (a recorder attached with -p while it runs).
 * Reads the header's per-thread state to know whether the ring is mapped:
 * a test program may, an application has no reason to.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "tracebpf/trace.h"

static long n_events;
static uint64_t *counter;

static int ready(void)
{
	return tracebpf__fast_tls.state == TRACEBPF__FAST_READY;
}

static long warm(int64_t t)
{
	const struct timespec pause = { 0, 200 * 1000 };
	const char *env = getenv("FAST_SEQ_WARM");
	long w = 0, most = env ? atol(env) : 15000;

	for (; w < most && !ready(); w++) {
		TRACE_EVENT_INSTANT2("test", "warm", TRACE_EVENT_SCOPE_THREAD, "t", t, "seq",
				     (int64_t)w);
		nanosleep(&pause, NULL);
	}
	TRACE_EVENT_INSTANT2("test", "warm", TRACE_EVENT_SCOPE_THREAD, "t", t, "seq", (int64_t)w);
	return w + 1;
}

/* A string argument: "t<T>-<i>", and every 1000th a string longer than
 * an event keeps (cut to 255 bytes, as the probe cuts it). */
static void label(int64_t t, long i)
{
	char buf[400];
	int n = snprintf(buf, sizeof(buf), "t%lld-%ld", (long long)t, i);

	if (i % 1000 == 50)
		while (n < (int)sizeof(buf) - 1)
			buf[n++] = 'x';
	buf[n] = 0;
	TRACE_EVENT_INSTANT2("test", "label", TRACE_EVENT_SCOPE_THREAD, "t", t, "name", buf);
}

/* `event_id` sites: an async slice (id t * 1e9 + i) around a counter
 * with an id, and an instant with a copied name "c<T>-<i>". */
static void with_ids(int64_t t, long i)
{
	uint64_t id = (uint64_t)t * 1000000000u + (uint64_t)i;
	char name[32];

	snprintf(name, sizeof(name), "c%lld-%ld", (long long)t, i);
	TRACE_EVENT_NESTABLE_ASYNC_BEGIN1("test", "op", id, "i", (int64_t)i);
	TRACE_COUNTER_ID1("test", "level", id, (int64_t)i);
	TRACE_EVENT_COPY_INSTANT1("test", name, TRACE_EVENT_SCOPE_THREAD, "t", t);
	TRACE_EVENT_NESTABLE_ASYNC_END0("test", "op", id);
}

static void *worker(void *arg)
{
	int64_t t = (int64_t)(intptr_t)arg;
	long w = warm(t);
	int fast = ready();

	for (long i = 0; i < n_events; i++) {
		if (i % 100 == 0)
			TRACE_EVENT_BEGIN1("test", "block", "t", t);
		TRACE_EVENT_INSTANT2("test", "seq", TRACE_EVENT_SCOPE_THREAD, "t", t, "seq",
				     (int64_t)i);
		if (i % 100 == 50)
			label(t, i);
		if (i % 100 == 70)
			with_ids(t, i);
		if (i % 100 == 99 || i == n_events - 1)
			TRACE_EVENT_END0("test", "block");
	}
	printf("thread %lld fast=%d warm=%ld\n", (long long)t, fast, w);
	return NULL;
}

static void *attach_worker(void *arg)
{
	const struct timespec pause = { 0, 100 * 1000 };
	const char *burst_env = getenv("FAST_SEQ_BURST");
	long burst = burst_env && atol(burst_env) > 0 ? atol(burst_env) : 100;
	int64_t t = (int64_t)(intptr_t)arg;
	int fast = 0;

	for (long i = 0; i < n_events; i++) {
		if (!fast && ready()) {
			fast = 1;
			printf("thread %lld fast_from=%ld\n", (long long)t, i);
			fflush(stdout);
		}
		TRACE_EVENT_INSTANT2("test", "seq", TRACE_EVENT_SCOPE_THREAD, "t", t, "seq",
				     (int64_t)i);
		if ((i + 1) % burst == 0)   /* leave the recorders a CPU */
			nanosleep(&pause, NULL);
	}
	return NULL;
}

static int run_threads(int n, void *(*fn)(void *))
{
	pthread_t th[64];

	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, fn, (void *)(intptr_t)i))
			return 1;
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	fflush(stdout);
	return 0;
}

static int run_kill(const char *path, uint64_t every)
{
	const struct timespec pause = { 0, 100 * 1000 };
	int fd = open(path, O_RDWR | O_CREAT, 0644);

	if (fd < 0 || ftruncate(fd, sizeof(uint64_t)))
		return 1;
	counter = mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (counter == MAP_FAILED)
		return 1;
	warm(0);
	printf("thread 0 fast=%d\n", ready());
	fflush(stdout);
	for (uint64_t i = 0;; i++) {
		TRACE_EVENT_INSTANT2("test", "seq", TRACE_EVENT_SCOPE_THREAD, "t", (int64_t)0,
				     "seq", (int64_t)i);
		__atomic_store_n(counter, i + 1, __ATOMIC_RELEASE);
		if ((i + 1) % every == 0)   /* leave the recorder a CPU */
			nanosleep(&pause, NULL);
	}
}

int main(int argc, char **argv)
{
	int threads;
	pid_t child;

	if (argc < 4) {
		fprintf(stderr, "usage: fast_seq run|fork|kill|attach THREADS N [COUNTFILE]\n");
		return 2;
	}
	threads = atoi(argv[2]);
	n_events = atol(argv[3]);
	if (threads < 1 || threads > 64)
		return 2;
	if (!strcmp(argv[1], "kill"))
		return argc > 4 ? run_kill(argv[4], n_events > 0 ? (uint64_t)n_events : 1000) : 2;
	if (!strcmp(argv[1], "attach"))
		return run_threads(threads, attach_worker);
	if (strcmp(argv[1], "fork"))
		return run_threads(threads, worker);
	worker((void *)(intptr_t)0);
	fflush(stdout);
	child = fork();
	if (child == 0) {
		warm(100);
		printf("child fast=%d\n", ready());
		worker((void *)(intptr_t)101);
		fflush(stdout);
		_exit(0);
	}
	return child > 0 && waitpid(child, NULL, 0) == child ? 0 : 1;
}
