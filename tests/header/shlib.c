/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * shlib.c - a shared library with tracebpf sites (run.sh builds it with
 * -fPIC -shared): it must get its own, unexported semaphore.
 */
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

int shlib_sum(int n)
{
	int i, sum = 0;

	TRACE_EVENT1("shlib", "sum", "n", n);
	for (i = 0; i < n; i++) {
		TRACE_EVENT_INSTANT1("shlib", "add", TRACE_EVENT_SCOPE_THREAD, "i", i);
		sum += i;
	}
	return sum;
}

int shlib_enabled(void)
{
	return TRACEBPF_ENABLED();
}

const volatile unsigned short *shlib_semaphore(void)
{
	return &tracebpf_event_semaphore;
}
