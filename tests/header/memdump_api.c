/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The memory-dump API (docs/api.md, "Memory dumps") in C and C++, run
 * untraced by tests/header/run.sh: registration's results, the 64-slot
 * limit, and no dumper called and no wakeup of the dumping thread.
 */
#include <stdio.h>
#include "tracebpf/trace.h"

static int called;

static void dumper(void *ctx)
{
	(void)ctx;
	called++;
	tracebpf_memdump_report_bytes("a", 1);
	tracebpf_memdump_report_bytes("a/b", 2, 3);
}

int main(void)
{
	static char ctx[TRACEBPF_MEMDUMP_MAX + 1];
	int reg = 0, full, unreg = 0, unknown;

	for (int i = 0; i < TRACEBPF_MEMDUMP_MAX; i++)
		reg |= tracebpf_memdump_register(dumper, &ctx[i]);
	full = tracebpf_memdump_register(dumper, &ctx[TRACEBPF_MEMDUMP_MAX]);
	TRACE_MEMORY_DUMP();
	for (int i = 0; i < TRACEBPF_MEMDUMP_MAX; i++)
		unreg |= tracebpf_memdump_unregister(dumper, &ctx[i]);
	unknown = tracebpf_memdump_unregister(dumper, &ctx[0]);
	printf("register=%d full=%d unregister=%d unknown=%d called=%d wakes=%u\n", reg, full,
	       unreg, unknown, called, tracebpf__md.wakes);
	return 0;
}
