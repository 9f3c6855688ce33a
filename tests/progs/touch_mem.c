/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * touch_mem MIB - maps MIB MiB of anonymous memory and writes every page,
 * between two instants test:before and test:after; then sleeps 50 ms
 * and exits. For the resident-memory counters
 * (tests/integration/test_memory.py).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include "tracebpf/trace.h"

int main(int argc, char **argv)
{
	long mib = argc == 2 ? atol(argv[1]) : 0;
	struct timespec nap = { 0, 50 * 1000 * 1000 };
	size_t len;
	char *p;

	if (mib <= 0) {
		fprintf(stderr, "usage: touch_mem MIB\n");
		return 2;
	}
	len = (size_t)mib << 20;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("touch_mem: mmap");
		return 1;
	}
	TRACE_EVENT_INSTANT0("test", "before", TRACE_EVENT_SCOPE_THREAD);
	for (size_t i = 0; i < len; i += 4096)
		p[i] = 1;
	TRACE_EVENT_INSTANT0("test", "after", TRACE_EVENT_SCOPE_THREAD);
	nanosleep(&nap, NULL);
	return 0;
}
