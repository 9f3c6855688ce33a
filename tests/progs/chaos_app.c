/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * chaos_app SECONDS LIB - the chaos run's workload (tests/chaos/chaos.py).
 *
 * Every event is TRACE_EVENT_INSTANT2("chaos", "seq", thread, "s", S,
 * "seq", N): S names a stream (one thread of one process image, unique
 * across processes: a random 44-bit nonce per image, then a counter), N
 * counts its events from 0. For SECONDS, or until killed:
 *   - the main thread emits 100 events, then sleeps 1 ms, over and over;
 *   - a long-lived worker thread does the same;
 *   - every 50 ms a short thread emits 300 events and exits (churn);
 *   - every 200 ms a child is forked: it emits 300 events, then either
 *     exits or execs `chaos_app child` (a new image: 300 events, exit);
 *   - every 300 ms LIB is dlopened, emits 200 events through its own site
 *     (chaos_dl_seq), and is closed again.
 * Children are reaped by SIGCHLD being ignored.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include "tracebpf/trace.h"

static int64_t nonce;
static int64_t next_stream;
static const char *self;

static int64_t new_stream(void)
{
	return nonce << 20 | __atomic_fetch_add(&next_stream, 1, __ATOMIC_RELAXED);
}

static void new_image(void)
{
	uint64_t r = 0;

	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)time(NULL);
	nonce = (int64_t)(r & ((1ull << 43) - 1));
	next_stream = 0;
}

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static void pause_us(long us)
{
	struct timespec t = { 0, us * 1000 };

	nanosleep(&t, NULL);
}

static void emit(int64_t s, int64_t *n, long count)
{
	for (long i = 0; i < count; i++) {
		TRACE_EVENT_INSTANT2("chaos", "seq", TRACE_EVENT_SCOPE_THREAD, "s", s, "seq", *n);
		++*n;
		if (*n % 100 == 0)
			pause_us(1000);
	}
}

static void *short_thread(void *arg)
{
	int64_t n = 0;

	(void)arg;
	emit(new_stream(), &n, 300);
	return NULL;
}

static void *worker(void *arg)
{
	int64_t s = new_stream(), n = 0;

	(void)arg;
	for (;;)
		emit(s, &n, 100);
	return NULL;
}

static void spawn_thread(void *(*fn)(void *))
{
	pthread_attr_t a;
	pthread_t t;

	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_create(&t, &a, fn, NULL);
	pthread_attr_destroy(&a);
}

static void child(void)
{
	int64_t n = 0;

	new_image();
	emit(new_stream(), &n, 300);
	if (getpid() & 1) {
		execl(self, self, "child", (char *)NULL);
		_exit(127);
	}
	_exit(0);
}

static void with_library(const char *lib)
{
	void (*seq)(int64_t, int64_t);
	void *h = dlopen(lib, RTLD_NOW);
	int64_t s = new_stream();

	if (!h)
		return;
	*(void **)&seq = dlsym(h, "chaos_dl_seq");
	for (int64_t i = 0; seq && i < 200; i++)
		seq(s, i);
	dlclose(h);
}

int main(int argc, char **argv)
{
	uint64_t end, next_thread, next_fork, next_dl, t;
	int64_t s, n = 0;

	self = "/proc/self/exe";
	if (argc == 2 && !strcmp(argv[1], "child")) {
		new_image();
		emit(new_stream(), &n, 300);
		return 0;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: chaos_app SECONDS LIB\n");
		return 2;
	}
	signal(SIGCHLD, SIG_IGN);
	new_image();
	s = new_stream();
	spawn_thread(worker);
	t = now_ms();
	end = t + 1000 * (uint64_t)atol(argv[1]);
	next_thread = next_fork = next_dl = t;
	while ((t = now_ms()) < end) {
		emit(s, &n, 100);
		if (t >= next_thread) {
			spawn_thread(short_thread);
			next_thread = t + 50;
		}
		if (t >= next_fork) {
			if (fork() == 0)
				child();
			next_fork = t + 200;
		}
		if (t >= next_dl) {
			with_library(argv[2]);
			next_dl = t + 300;
		}
	}
	return 0;
}
