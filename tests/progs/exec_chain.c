/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * exec_chain PROGRAM - an instrumented program that opens a "pending" slice,
 * emits "before_exec" and execs PROGRAM (another instrumented program whose
 * probes the recorder has not seen). Prints "chain pid=<pid>". With
 * EXEC_CHAIN_WAIT set it execs only once a line arrives on stdin.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "tracebpf/trace.h"

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	printf("chain pid=%d\n", (int)getpid());
	fflush(stdout);
	TRACE_EVENT_BEGIN0("chain", "pending");
	TRACE_EVENT_INSTANT0("chain", "before_exec", TRACE_EVENT_SCOPE_THREAD);
	if (getenv("EXEC_CHAIN_WAIT")) {
		char line[16];

		if (!fgets(line, sizeof(line), stdin))
			return 3;
	}
	execv(argv[1], argv + 1);
	perror("exec_chain: execv");
	return 1;
}
