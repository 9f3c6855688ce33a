/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * seq_until_killed COUNTFILE [EVERY] - emits numbered instants until killed.
 *
 * COUNTFILE is truncated to 8 bytes and mapped shared: after emitting
 * TRACE_EVENT_INSTANT1("test", "seq", thread, "seq", n) the program stores
 * n + 1 there (a native-endian uint64_t), so a test that SIGKILLs it knows
 * how many events were emitted (events 0 .. count-1). All of it happens inside
 * an outer slice TRACE_EVENT_BEGIN0("test", "outer") that never ends. Sleeps
 * 100 us every EVERY events (default 1000) so as not to saturate a CPU.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "tracebpf/trace.h"

int main(int argc, char **argv)
{
	const struct timespec pause_100us = { 0, 100 * 1000 };
	uint64_t *count;
	uint64_t n, every = argc == 3 ? strtoull(argv[2], NULL, 10) : 1000;
	int fd;

	if ((argc != 2 && argc != 3) || !every) {
		fprintf(stderr, "usage: seq_until_killed COUNTFILE [EVERY]\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_CREAT, 0644);
	if (fd < 0 || ftruncate(fd, sizeof(uint64_t)) != 0) {
		perror("seq_until_killed: COUNTFILE");
		return 1;
	}
	count = mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED,
		     fd, 0);
	if (count == MAP_FAILED) {
		perror("seq_until_killed: mmap");
		return 1;
	}
	close(fd);
	__atomic_store_n(count, 0, __ATOMIC_RELEASE);

	TRACE_EVENT_BEGIN0("test", "outer");
	for (n = 0;; n++) {
		TRACE_EVENT_INSTANT1("test", "seq", TRACE_EVENT_SCOPE_THREAD,
				     "seq", (int64_t)n);
		__atomic_store_n(count, n + 1, __ATOMIC_RELEASE);
		if ((n + 1) % every == 0)
			nanosleep(&pause_100us, NULL);
	}
	return 0; /* not reached */
}
