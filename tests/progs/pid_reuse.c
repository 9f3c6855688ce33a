/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pid_reuse - forks a child that emits "life" with gen=1 and exits; then,
 * as root, writes /proc/sys/kernel/ns_last_pid so that the next fork gets
 * the same pid again (retrying a few times: other processes fork too), and
 * that child emits "life" with gen=2. Prints "first=<pid> second=<pid>".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tracebpf/trace.h"

static pid_t child(int gen)
{
	pid_t pid = fork();

	if (pid == 0) {
		TRACE_EVENT0("life", "lifetime");
		TRACE_EVENT_INSTANT1("life", "life", TRACE_EVENT_SCOPE_THREAD, "gen", gen);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	return pid;
}

int main(void)
{
	pid_t first = child(1), second = -1;

	for (int tries = 0; tries < 50 && second != first; tries++) {
		int fd = open("/proc/sys/kernel/ns_last_pid", O_RDWR);
		char buf[32];
		int n;

		if (fd < 0) {
			perror("pid_reuse: ns_last_pid");
			return 1;
		}
		flock(fd, LOCK_EX);
		n = snprintf(buf, sizeof(buf), "%d", (int)first - 1);
		if (write(fd, buf, n) != n) {
			perror("pid_reuse: write");
			return 1;
		}
		second = fork();
		if (second == 0) {
			if (getpid() == first) {
				TRACE_EVENT0("life", "lifetime");
				TRACE_EVENT_INSTANT1("life", "life", TRACE_EVENT_SCOPE_THREAD, "gen", 2);
			}
			_exit(0);
		}
		flock(fd, LOCK_UN);
		close(fd);
		waitpid(second, NULL, 0);
	}
	printf("first=%d second=%d\n", (int)first, (int)second);
	return second == first ? 0 : 1;
}
