/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * phases CMD_FIFO ACK_FIFO - emits events when told to, so that a test can
 * switch recording off and on (tracebpf ctl) between known events. Reads
 * lines from CMD_FIFO:
 *   i N   N instants test:phase, args seq = the next N numbers from 0
 *   b     TRACE_EVENT_BEGIN0("test", "span")
 *   e     TRACE_EVENT_END0("test", "span")
 *   s N   N round trips over a pipe with a thread (context switches)
 * and answers each with "ok E\n" on ACK_FIFO once done, E = 1 while a
 * tracer has the sites enabled (TRACEBPF_ENABLED(): their semaphore), else
 * 0. Exits 0 at EOF.
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
		case 's':
			while (n-- > 0)
				if (write(to_echo[1], &c, 1) != 1 || read(from_echo[0], &c, 1) != 1)
					return 1;
			break;
		default:
			fprintf(stderr, "phases: unknown command '%s'\n", line);
			return 2;
		}
		fprintf(ack, "ok %d\n", TRACEBPF_ENABLED() ? 1 : 0);
		fflush(ack);
	}
	close(to_echo[1]);
	pthread_join(th, NULL);
	return 0;
}
