/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * test_tu2.c - a second translation unit of test_macros: both must share the
 * one (weak, hidden) tracebpf_event_semaphore of the executable.
 */
#include "tracebpf/trace.h"

int tu2_work(int n);
const volatile unsigned short *tu2_semaphore(void);

int tu2_work(int n)
{
	int sum = 0;
	int i;

	TRACE_EVENT1("tu2", "work", "n", n);
	for (i = 0; i < n; i++) {
		TRACE_EVENT_INSTANT1("tu2", "step", TRACE_EVENT_SCOPE_THREAD, "i", i);
		sum += i * i;
	}
	TRACE_COUNTER1("tu2", "sum", sum);
	return sum;
}

const volatile unsigned short *tu2_semaphore(void)
{
	return &tracebpf_event_semaphore;
}
