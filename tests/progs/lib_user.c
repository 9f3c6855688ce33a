/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * lib_user - the very first thing main does is emit "main_first" and call
 * tbtest_lib_event(i) in libtbtest.so for i = 0..9 (one "lib_event" each);
 * then prints "done" and exits 0. Tests that probes in a linked shared
 * library are recorded from the first hit.
 */
#include <stdio.h>
#include "tracebpf/trace.h"

void tbtest_lib_event(int i);

int main(void)
{
	int i;

	TRACE_EVENT_INSTANT0("test", "main_first", 't');
	for (i = 0; i < 10; i++)
		tbtest_lib_event(i);
	printf("done\n");
	return 0;
}
