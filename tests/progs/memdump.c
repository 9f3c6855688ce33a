/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * memdump SECONDS [fork|block] - two memory dumpers with known, changing
 * values, for tests/integration/test_memdump.py.
 *
 * Dumper "a", registered by main before anything else: its k-th call
 * reports alpha = 1000 * k bytes and alpha/child = 10 * k bytes in k
 * objects. Dumper "b", registered from a second thread 100 ms later:
 * its k-th call reports beta = 7777 + k bytes. Main emits an instant
 * test:tick every 10 ms for SECONDS, and halfway one TRACE_MEMORY_DUMP()
 * between the instants test:before_dump and test:after_dump. With
 * `fork`, a child forked halfway does the same for the second half (its
 * own counts from 0, reset by a fork handler registered before the
 * first dumper: it runs before trace.h's starts the child's dumping
 * thread, which the recorder may ask for a dump at once), and the parent
 * waits for it. With `block`, dumper
 * "b" never returns from its third call (a dumper that hangs).
 *
 * Prints, when it ends: "calls=A,B wakes=W" (each dumper's calls, and
 * how often the dumping thread woke). Each call also rewrites the file
 * named by $MEMDUMP_PROGRESS (if set) with "K\n", K the calls of "a" so
 * far, before reporting: a test that kills the process reads how many
 * dumps had begun.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "tracebpf/trace.h"

static unsigned long calls_a, calls_b;
static int block_b;

static void progress(unsigned long k)
{
	const char *path = getenv("MEMDUMP_PROGRESS");
	char tmp[4096];
	FILE *f;

	if (!path || snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp) ||
	    !(f = fopen(tmp, "w")))
		return;
	fprintf(f, "%lu\n", k);
	if (!fclose(f))
		rename(tmp, path);   /* a reader never sees it half written */
}

static void dump_a(void *ctx)
{
	unsigned long k = ++calls_a;

	(void)ctx;
	progress(k);
	tracebpf_memdump_report_bytes("alpha", 1000 * k);
	tracebpf_memdump_report_bytes("alpha/child", 10 * k, k);
}

static void dump_b(void *ctx)
{
	unsigned long k = ++calls_b;

	(void)ctx;
	tracebpf_memdump_report_bytes("beta", 7777 + k);
	while (block_b && k == 3)
		pause();
}

static void reset_counts(void)
{
	calls_a = calls_b = 0;
}

static void nap_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&t, NULL);
}

static void *register_b(void *arg)
{
	(void)arg;
	nap_ms(100);
	if (tracebpf_memdump_register(dump_b, NULL))
		exit(3);
	return NULL;
}

/* ticks for ms, with the explicit dump at the middle when `mid`. */
static void ticks(long ms, int mid)
{
	for (long t = 0; t < ms; t += 10) {
		TRACE_EVENT_INSTANT0("test", "tick", TRACE_EVENT_SCOPE_THREAD);
		if (mid && t == ms / 20 * 10) {
			TRACE_EVENT_INSTANT0("test", "before_dump", TRACE_EVENT_SCOPE_THREAD);
			TRACE_MEMORY_DUMP();
			TRACE_EVENT_INSTANT0("test", "after_dump", TRACE_EVENT_SCOPE_THREAD);
		}
		nap_ms(10);
	}
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? (long)(atof(argv[1]) * 1000) : 1000;
	int fork_half = argc > 2 && !strcmp(argv[2], "fork");
	pthread_t th;
	pid_t child = -1;

	block_b = argc > 2 && !strcmp(argv[2], "block");
	if (pthread_atfork(NULL, NULL, reset_counts) ||
	    tracebpf_memdump_register(dump_a, NULL) ||
	    pthread_create(&th, NULL, register_b, NULL) || pthread_join(th, NULL))
		return 2;
	ticks(fork_half ? ms / 2 : ms, !fork_half);
	if (fork_half) {
		child = fork();
		if (child == 0) {
			ticks(ms / 2, 1);
		} else {
			waitpid(child, NULL, 0);
		}
	}
	printf("calls=%lu,%lu wakes=%u\n", calls_a, calls_b, tracebpf__md.wakes);
	return 0;
}
