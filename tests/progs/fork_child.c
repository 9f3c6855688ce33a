/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fork_child - events on both sides of a fork.
 *
 * The parent emits "parent_before_fork" and forks; the child emits a
 * "child_slice" slice around ten "child_event" instants (seq 0..9) and
 * _exit(0)s; the parent waits for it, emits "parent_after_fork" and prints
 * "parent=<pid> child=<pid>". Exits 0 if the child did.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tracebpf/trace.h"

static void child(void)
{
	int i;

	TRACE_EVENT0("test", "child_slice");
	for (i = 0; i < 10; i++)
		TRACE_EVENT_INSTANT1("test", "child_event",
				     TRACE_EVENT_SCOPE_THREAD, "seq", i);
}

int main(void)
{
	pid_t pid;
	int status;

	TRACE_EVENT_INSTANT0("test", "parent_before_fork", 't');
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork_child: fork");
		return 1;
	}
	if (pid == 0) {
		child(); /* the slice ends when child() returns */
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid) {
		perror("fork_child: waitpid");
		return 1;
	}
	TRACE_EVENT_INSTANT0("test", "parent_after_fork", 't');
	printf("parent=%d child=%d\n", (int)getpid(), (int)pid);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
