/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * phases CMD_FIFO ACK_FIFO - emits events when told to, so that a test can
 * switch recording off and on (tracebpf ctl) between known events. Reads
 * lines from CMD_FIFO:
 *   i N   N instants test:phase, args seq = the next N numbers from 0
 *   b     TRACE_EVENT_BEGIN0("test", "span")
 *   e     TRACE_EVENT_END0("test", "span")
 *   s N   N round trips over a pipe with a thread (context switches)
 *   c N   N rounds of events in categories, each with arg seq (its own
 *         count from 0): instants io:read, net:send and
 *         disabled-by-default-deep:probe, a slice "io,net":both (a
 *         category group), a counter net.debug:ctr
 *   n     TRACE_THREAD_NAME("phases-main") and TRACE_PROCESS_NAME("phases-app")
 *   a     nothing: answers E + 2 * (io, net, deep recorded:
 *         TRACE_EVENT_CATEGORY_ACTIVE, bits 0-2)
 * and answers each with "ok E\n" on ACK_FIFO once done, E = 1 while a
 * tracer has the sites enabled (TRACEBPF_ENABLED(): their semaphore), else
 * 0. Exits 0 at EOF. Built twice: phases, and phases_slow without the fast
 * path (TRACEBPF_NO_FAST_PATH: every site takes its probe).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tracebpf/trace.h"

static int to_echo[2], from_echo[2];

static void *echo(void *arg)
{
	char c;

	(void)arg;
	while (read(to_echo[0], &c, 1) == 1)
		if (write(from_echo[1], &c, 1) != 1)
			break;
	return NULL;
}

static void categories(long n)
{
	static int64_t seq;

	for (; n > 0; n--, seq++) {
		TRACE_EVENT_INSTANT1("io", "read", TRACE_EVENT_SCOPE_THREAD, "seq", seq);
		TRACE_EVENT_INSTANT1("net", "send", TRACE_EVENT_SCOPE_THREAD, "seq", seq);
		TRACE_EVENT_INSTANT1("disabled-by-default-deep", "probe", TRACE_EVENT_SCOPE_THREAD,
				     "seq", seq);
		{
			TRACE_EVENT1("io,net", "both", "seq", seq);
		}
		TRACE_COUNTER1("net.debug", "ctr", seq);
	}
}

static int active(void)
{
	return TRACE_EVENT_CATEGORY_ACTIVE("io") | TRACE_EVENT_CATEGORY_ACTIVE("net") << 1 |
	       TRACE_EVENT_CATEGORY_ACTIVE("disabled-by-default-deep") << 2;
}

int main(int argc, char **argv)
{
	char line[64];
	int64_t seq = 0;
	pthread_t th;
	FILE *in, *ack;

	if (argc != 3) {
		fprintf(stderr, "usage: phases CMD_FIFO ACK_FIFO\n");
		return 2;
	}
	in = fopen(argv[1], "r");
	ack = fopen(argv[2], "w");
	if (!in || !ack || pipe(to_echo) || pipe(from_echo) ||
	    pthread_create(&th, NULL, echo, NULL)) {
		perror("phases");
		return 1;
	}
	while (fgets(line, sizeof(line), in)) {
		long n = strtol(line + 1, NULL, 10);
		int extra = 0;
		char c = 'x';

		switch (line[0]) {
		case 'i':
			while (n-- > 0) {
				TRACE_EVENT_INSTANT1("test", "phase", TRACE_EVENT_SCOPE_THREAD,
						     "seq", seq);
				seq++;
			}
			break;
		case 'b':
			TRACE_EVENT_BEGIN0("test", "span");
			break;
		case 'e':
			TRACE_EVENT_END0("test", "span");
			break;
		case 'c':
			categories(n);
			break;
		case 'a':
			extra = 2 * active();
			break;
		case 'n':
			TRACE_THREAD_NAME("phases-main");
			TRACE_PROCESS_NAME("phases-app");
			break;
		case 's':
			while (n-- > 0)
				if (write(to_echo[1], &c, 1) != 1 || read(from_echo[0], &c, 1) != 1)
					return 1;
			break;
		default:
			fprintf(stderr, "phases: unknown command '%s'\n", line);
			return 2;
		}
		fprintf(ack, "ok %d\n", (TRACEBPF_ENABLED() ? 1 : 0) + extra);
		fflush(ack);
	}
	close(to_echo[1]);
	pthread_join(th, NULL);
	return 0;
}
