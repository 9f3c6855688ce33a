/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fast_window N FILE - a thread held inside a fast-path write while the
 * recorder switches it to its probes.
 *
 * A thread emits "warm" instants until its fast-path ring is mapped, then
 * N "seq" instants (seq = 0 .. N-1), then a "held" instant whose string
 * argument lies on a page it cannot read yet. The fault comes after the
 * site found the session live and before it reserved its sample: the
 * SIGSEGV handler makes FILE (deny_bpf_cmd --when FILE then refuses the
 * drain), waits until the switch says the session is no longer live to
 * this thread's ring, waits 200 ms more (many of the recorder's rounds),
 * and makes the page readable: the write then goes on into the old ring.
 * Then N "after" instants (they take the probes). The main thread emits
 * "tick" instants every millisecond on its own ring meanwhile, so that the
 * recorder keeps draining. Prints "held fast=F live=L" (F: 1 if the ring
 * was mapped; L: 0 if the switch moved while the thread was held).
 * Reads the header's per-thread state: a test program may, an
 * application has no reason to.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "tracebpf/trace.h"

static long n_events;
static const char *trigger;
static char *page;
static long pagesz;
static volatile int done, fast, still_live = 1;

static int ready(void)
{
	return tracebpf__fast_tls.state == TRACEBPF__FAST_READY;
}

static void pause_ms(long ms)
{
	struct timespec t = { ms / 1000, ms % 1000 * 1000000 };

	nanosleep(&t, NULL);
}

static void warm(void)
{
	for (long w = 0; w < 15000 && !ready(); w++) {
		TRACE_EVENT_INSTANT1("test", "warm", TRACE_EVENT_SCOPE_THREAD, "seq", (int64_t)w);
		usleep(200);
	}
}

/* Inside the held site's write: the switch is read, the sample not yet
 * reserved. Waits (at most 30 s) for the recorder to switch the thread. */
static void on_fault(int sig, siginfo_t *si, void *uc)
{
	char *a = si->si_addr;
	int fd;

	(void)uc;
	if (a < page || a >= page + pagesz) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	fd = open(trigger, O_CREAT | O_WRONLY, 0644);
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < 30000 && tracebpf__fast_tls.ctl &&
			tracebpf__fast_tls.ctl->live == TRACEBPF_FAST_LIVE; i++)
		pause_ms(1);
	still_live = tracebpf__fast_tls.ctl && tracebpf__fast_tls.ctl->live == TRACEBPF_FAST_LIVE;
	pause_ms(200);
	mprotect(page, pagesz, PROT_READ);
}

static void *held(void *arg)
{
	(void)arg;
	warm();
	fast = ready();
	for (long i = 0; i < n_events; i++)
		TRACE_EVENT_INSTANT1("test", "seq", TRACE_EVENT_SCOPE_THREAD, "seq", (int64_t)i);
	TRACE_EVENT_INSTANT1("test", "held", TRACE_EVENT_SCOPE_THREAD, "s", page);
	for (long i = 0; i < n_events; i++)
		TRACE_EVENT_INSTANT1("test", "after", TRACE_EVENT_SCOPE_THREAD, "seq", (int64_t)i);
	done = 1;
	return NULL;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	pthread_t th;

	if (argc != 3) {
		fprintf(stderr, "usage: fast_window N FILE\n");
		return 64;
	}
	n_events = atol(argv[1]);
	trigger = argv[2];
	pagesz = sysconf(_SC_PAGESIZE);
	page = mmap(NULL, pagesz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED) {
		perror("fast_window: mmap");
		return 1;
	}
	strcpy(page, "held");
	mprotect(page, pagesz, PROT_NONE);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);
	warm();
	if (pthread_create(&th, NULL, held, NULL)) {
		perror("fast_window: pthread_create");
		return 1;
	}
	for (int64_t i = 0; !done; i++) {
		TRACE_EVENT_INSTANT1("test", "tick", TRACE_EVENT_SCOPE_THREAD, "seq", i);
		pause_ms(1);
	}
	pthread_join(th, NULL);
	printf("held fast=%d live=%d\n", fast, still_live);
	return 0;
}
