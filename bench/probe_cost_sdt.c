/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * probe_cost_sdt N - the loop of `probe_cost N instant2` written with
 * systemtap's <sys/sdt.h> (STAP_PROBE2(bench, hit2, i, j): a 1-byte nop, no
 * semaphore), the site bpftrace and perf are used to. make bench counts its
 * hits with bpftrace to give a well-known peer. Prints
 * "ns_per_hit=<x.xx> n=<N>".
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>
#include "../tests/progs/now_ns.h"

int main(int argc, char **argv)
{
	uint64_t n, i, t0, t1;

	if (argc != 2 || (n = strtoull(argv[1], NULL, 0)) == 0) {
		fprintf(stderr, "usage: probe_cost_sdt N\n");
		return 2;
	}
	t0 = now_ns();
	for (i = 0; i < n; i++)
		STAP_PROBE2(bench, hit2, (int64_t)i, (int64_t)(i & 4095));
	t1 = now_ns();
	printf("ns_per_hit=%.2f n=%llu\n", (double)(t1 - t0) / (double)n,
	       (unsigned long long)n);
	return 0;
}
