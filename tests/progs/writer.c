/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * writer N COUNT - for -e tests: writes COUNT bytes to fd 42 (/dev/null)
 * N times, then sends itself SIGUSR1 (ignored) N times. Prints
 * "pid=<pid>" and exits 0.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tracebpf/trace.h"

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 5;
	size_t count = argc > 2 ? strtoul(argv[2], NULL, 10) : 123;
	char *buf = calloc(1, count + 1);
	int fd = open("/dev/null", O_WRONLY);

	if (!buf || fd < 0 || dup2(fd, 42) != 42)
		return 1;
	signal(SIGUSR1, SIG_IGN);
	TRACE_EVENT0("test", "writer");
	for (int i = 0; i < n; i++)
		if (write(42, buf, count) != (ssize_t)count)
			return 1;
	for (int i = 0; i < n; i++)
		kill(getpid(), SIGUSR1);
	printf("pid=%d\n", getpid());
	return 0;
}
