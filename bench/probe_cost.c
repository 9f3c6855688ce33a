/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * probe_cost N - times N hits of one site,
 *     TRACE_EVENT_INSTANT1("bench", "hit", thread, "i", i),
 * with CLOCK_MONOTONIC around the loop and prints "ns_per_hit=<x.xx> n=<N>".
 * Without a tracer this is the disabled cost (a load and a branch); with one
 * it is the full cost of a hit. Built twice: normally (5-byte nop in the lea
 * pair) and with -DTRACEBPF_PROBE_NOP1 (the 1-byte nop of sys/sdt.h), to
 * compare the kernel's optimized uprobe path with the int3 trap.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "tracebpf/trace.h"
#include "../tests/progs/now_ns.h"

int main(int argc, char **argv)
{
	uint64_t n, i, t0, t1;

	if (argc != 2) {
		fprintf(stderr, "usage: probe_cost N\n");
		return 2;
	}
	n = strtoull(argv[1], NULL, 0);
	if (n == 0) {
		fprintf(stderr, "probe_cost: N must be > 0\n");
		return 2;
	}
	t0 = now_ns();
	for (i = 0; i < n; i++)
		TRACE_EVENT_INSTANT1("bench", "hit", TRACE_EVENT_SCOPE_THREAD,
				     "i", (int64_t)i);
	t1 = now_ns();
	printf("ns_per_hit=%.2f n=%llu\n", (double)(t1 - t0) / (double)n,
	       (unsigned long long)n);
	return 0;
}
