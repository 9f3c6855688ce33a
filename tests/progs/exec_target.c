/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * exec_target - an instrumented program that other programs exec: its very
 * first statement emits "target_first", then a "target_work" slice with
 * "target_tick" seq 0..4 inside. Prints "target pid=<pid>".
 */
#include <stdio.h>
#include <unistd.h>
#include "tracebpf/trace.h"

int main(void)
{
	int i;

	TRACE_EVENT_INSTANT0("target", "target_first", TRACE_EVENT_SCOPE_THREAD);
	{
		TRACE_EVENT0("target", "target_work");
		for (i = 0; i < 5; i++)
			TRACE_EVENT_INSTANT1("target", "target_tick", TRACE_EVENT_SCOPE_THREAD,
					     "seq", i);
	}
	printf("target pid=%d\n", (int)getpid());
	return 0;
}
