/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * probe_cost N [KIND [THREADS]] - times N hits of one site per thread, with
 * CLOCK_MONOTONIC around the loop, and prints
 *     "ns_per_hit=<x.xx> n=<N> threads=<T> rate=<aggregate hits/s>"
 * (ns_per_hit is the slowest thread's wall time over N). KIND is the site:
 *     instant2  TRACE_EVENT_INSTANT2("bench", "hit2", thread, "i", i, "j", j)
 *               (the default: a typical two-integer event)
 *     instant1  TRACE_EVENT_INSTANT1("bench", "hit", thread, "i", i)
 *     slice     TRACE_EVENT0("bench", "slice"): a BEGIN and an END per hit
 *     str       TRACE_EVENT_INSTANT1("bench", "str", thread, "s", "hello")
 *     id        TRACE_COUNTER_ID1("bench", "ctr", 7, i): an event_id site
 *     empty     no site: the loop alone (the peer of a disabled site)
 *     memdump   TRACE_MEMORY_DUMP(): untraced, its guard
 *     memdump_reg  tracebpf_memdump_register + _unregister of a second
 *               dumper (the first registered before the loop: its time,
 *               the dumping thread's start, printed as first_register_us)
 * THREADS (default 1) threads run the loop at once, from a barrier. With
 * PROBE_COST_FAST=1 in the environment each thread first emits "warm"
 * instants, 200 us apart, until its fast-path ring is mapped (at most 2 s;
 * the header's state says so), so that the loop times the fast path only.
 * Without a tracer this is the disabled cost (a load and a branch); with one
 * it is the full cost of a hit. Built twice: normally (5-byte nop in the lea
 * pair) and with -DTRACEBPF_PROBE_NOP1 (the 1-byte nop of sys/sdt.h), to
 * compare the kernel's optimized uprobe path with the int3 trap.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tracebpf/trace.h"
#include "threads.h"

enum kind { INSTANT2, INSTANT1, SLICE, STR, ID, EMPTY, MEMDUMP, MEMDUMP_REG, NKINDS };
static const char *const kinds[NKINDS] = { "instant2", "instant1", "slice", "str", "id",
					   "empty", "memdump", "memdump_reg" };

static uint64_t n;
static enum kind kind;

static void loop_instant2(void)
{
	for (uint64_t i = 0; i < n; i++)
		TRACE_EVENT_INSTANT2("bench", "hit2", TRACE_EVENT_SCOPE_THREAD,
				     "i", (int64_t)i, "j", (int64_t)(i & 4095));
}

/* The same loop without a site: the counter goes through an empty asm so
 * that the loop is not removed. */
static void loop_empty(void)
{
	for (uint64_t i = 0; i < n; i++)
		__asm__ __volatile__("" : "+r"(i));
}

static void dumper(void *ctx)
{
	(void)ctx;
	tracebpf_memdump_report_bytes("bench", 1);
}

static void loop_other(void)
{
	for (uint64_t i = 0; i < n; i++) {
		if (kind == MEMDUMP) {
			TRACE_MEMORY_DUMP();
		} else if (kind == MEMDUMP_REG) {
			tracebpf_memdump_register(dumper, &n);
			tracebpf_memdump_unregister(dumper, &n);
		} else if (kind == INSTANT1) {
			TRACE_EVENT_INSTANT1("bench", "hit", TRACE_EVENT_SCOPE_THREAD,
					     "i", (int64_t)i);
		} else if (kind == SLICE) {
			TRACE_EVENT0("bench", "slice");
		} else if (kind == STR) {
			TRACE_EVENT_INSTANT1("bench", "str", TRACE_EVENT_SCOPE_THREAD,
					     "s", "hello");
		} else {
			TRACE_COUNTER_ID1("bench", "ctr", 7, (int64_t)i);
		}
	}
}

static void warm_up(void)
{
	const struct timespec pause = { 0, 200 * 1000 };
	const char *want = getenv("PROBE_COST_FAST");

	for (int w = 0; want && *want == '1' && w < 10000; w++) {
#ifndef TRACEBPF_NO_FAST_PATH
		if (tracebpf__fast_tls.state == TRACEBPF__FAST_READY)
			break;
#endif
		TRACE_EVENT_INSTANT1("bench", "warm", TRACE_EVENT_SCOPE_THREAD, "w", w);
		nanosleep(&pause, NULL);
	}
}

int main(int argc, char **argv)
{
	long threads = 1;
	int k;

	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: probe_cost N [instant2|instant1|slice|str|id|empty|memdump|"
				"memdump_reg [THREADS]]\n");
		return 2;
	}
	n = strtoull(argv[1], NULL, 0);
	for (k = 0; argc > 2 && k < NKINDS && strcmp(argv[2], kinds[k]); k++)
		;
	kind = argc > 2 ? (enum kind)k : INSTANT2;
	threads = argc > 3 ? strtol(argv[3], NULL, 10) : 1;
	if (n == 0 || k == NKINDS || threads < 1 || threads > 64) {
		fprintf(stderr, "probe_cost: N must be > 0, KIND one of instant2 instant1 "
				"slice str id empty memdump memdump_reg, THREADS 1..64\n");
		return 2;
	}
	if (kind == MEMDUMP_REG) {
		struct timespec a, b;

		clock_gettime(CLOCK_MONOTONIC, &a);
		tracebpf_memdump_register(dumper, NULL);
		clock_gettime(CLOCK_MONOTONIC, &b);
		printf("first_register_us=%.1f\n",
		       ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / 1e3);
	}
	bench.warm_up = warm_up;
	bench.loop = kind == INSTANT2 ? loop_instant2 : kind == EMPTY ? loop_empty : loop_other;
	return bench_run("probe_cost", threads, n);
}
