/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fork_ghost - forks with slices open: "manual" (BEGIN/END), "scoped"
 * (TRACE_EVENT0) and "dropped" (BEGIN, ended only in the parent). The child
 * emits "child_work", returns from the scope (ending "scoped") and ends
 * "manual", then _exits. Prints "parent=<pid> child=<pid>".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tracebpf/trace.h"

static pid_t forker(void)
{
	pid_t pid;

	TRACE_EVENT0("test", "scoped");
	TRACE_EVENT_BEGIN0("test", "dropped");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		TRACE_EVENT_INSTANT0("test", "child_work", TRACE_EVENT_SCOPE_THREAD);
		return 0;   /* ends "scoped" in the child */
	}
	usleep(2000);
	TRACE_EVENT_END0("test", "dropped");
	return pid;
}

int main(void)
{
	int status;
	pid_t pid;

	TRACE_EVENT_BEGIN0("test", "manual");
	pid = forker();
	if (pid == 0) {
		TRACE_EVENT_END0("test", "manual");
		_exit(0);
	}
	waitpid(pid, &status, 0);
	TRACE_EVENT_END0("test", "manual");
	printf("parent=%d child=%d\n", (int)getpid(), (int)pid);
	return 0;
}
