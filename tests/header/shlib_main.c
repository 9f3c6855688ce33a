/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * shlib_main.c - an executable with its own sites, linked to libshlib.
 * `shlib_main force` sets the executable's semaphore: the library's must
 * stay 0.
 */
#include <stdio.h>
#include <string.h>
#include "tracebpf/trace.h"

#ifdef __cplusplus
extern "C" {
#endif
int shlib_sum(int n);
int shlib_enabled(void);
const volatile unsigned short *shlib_semaphore(void);
#ifdef __cplusplus
}
#endif

int main(int argc, char **argv)
{
	int sum;

	if (argc > 1 && strcmp(argv[1], "force") == 0)
		tracebpf_event_semaphore = 1;
	TRACE_EVENT_INSTANT0("main", "start", TRACE_EVENT_SCOPE_PROCESS);
	sum = shlib_sum(10);
	TRACE_COUNTER1("main", "sum", sum);
	printf("exe_enabled=%d lib_enabled=%d", TRACEBPF_ENABLED(),
	       shlib_enabled());
	if (TRACEBPF_ENABLED())
		printf(" lib_sum=%d", sum);
	printf(" distinct=%d\n", shlib_semaphore() != &tracebpf_event_semaphore);
	return sum == 45 ? 0 : 1;
}
