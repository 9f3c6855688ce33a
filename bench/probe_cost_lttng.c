/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * probe_cost_lttng N [KIND [THREADS]] - the loop of probe_cost (same
 * arguments, same output) with an LTTng-UST tracepoint in place of the
 * tracebpf site, the peer bench/lttng.sh measures:
 *     instant2  lttng_ust_tracepoint(bench, hit2, i, j): two 64-bit
 *               integers (the default; bench/probe_cost_lttng_tp.h)
 *     empty     no tracepoint: the loop alone
 * Prints "ns_per_hit=<x.xx> n=<N> threads=<T> rate=<aggregate hits/s>"
 * (ns_per_hit is the slowest thread's wall time over N, CLOCK_MONOTONIC).
 * Without an LTTng session enabling bench:* this is the disabled cost (a
 * load and a branch on the tracepoint's state); with one, the full cost of
 * an event written into LTTng's ring buffers.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "probe_cost_lttng_tp.h"
#include "threads.h"

static uint64_t n;
static int empty;

static void loop_instant2(void)
{
	for (uint64_t i = 0; i < n; i++)
		lttng_ust_tracepoint(bench, hit2, (int64_t)i, (int64_t)(i & 4095));
}

/* As probe_cost's empty kind: the counter goes through an empty asm so
 * that the loop is not removed. */
static void loop_empty(void)
{
	for (uint64_t i = 0; i < n; i++)
		__asm__ __volatile__("" : "+r"(i));
}

static int usage(void)
{
	fprintf(stderr, "usage: probe_cost_lttng N [instant2|empty [THREADS]] "
			"(N > 0, THREADS 1..64)\n");
	return 2;
}

int main(int argc, char **argv)
{
	long threads;

	if (argc < 2 || argc > 4)
		return usage();
	n = strtoull(argv[1], NULL, 0);
	empty = argc > 2 && !strcmp(argv[2], "empty");
	threads = argc > 3 ? strtol(argv[3], NULL, 10) : 1;
	if (n == 0 || (argc > 2 && !empty && strcmp(argv[2], "instant2")) || threads < 1 ||
	    threads > 64)
		return usage();
	bench.loop = empty ? loop_empty : loop_instant2;
	return bench_run("probe_cost_lttng", threads, n);
}
