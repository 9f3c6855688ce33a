/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * noprobes [SECONDS] - a program without tracebpf sites (no .note.stapsdt):
 * the target of the "no probes" error tests. Prints "pid=<pid>" (flushed),
 * sleeps SECONDS (default 0) and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	unsigned seconds = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 0;

	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	while (seconds)
		seconds = sleep(seconds);
	return 0;
}
