/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fork_cats CHILDREN N - a forking server in miniature: forks CHILDREN
 * children one after another (each waited for), without hitting a site
 * itself first; each child emits N instants in category "on" and N in
 * category "off" (arg i), then exits at once. For the categories of a
 * child of fork (tests/integration/test_categories.py).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tracebpf/trace.h"

int main(int argc, char **argv)
{
	long children = argc > 1 ? atol(argv[1]) : 0, n = argc > 2 ? atol(argv[2]) : 0;

	if (argc != 3 || children <= 0 || n <= 0) {
		fprintf(stderr, "usage: fork_cats CHILDREN N\n");
		return 2;
	}
	for (long k = 0; k < children; k++) {
		pid_t p = fork();

		if (p < 0) {
			perror("fork_cats: fork");
			return 1;
		}
		if (!p) {
			for (long i = 0; i < n; i++) {
				TRACE_EVENT_INSTANT1("on", "hit", TRACE_EVENT_SCOPE_THREAD, "i", i);
				TRACE_EVENT_INSTANT1("off", "hit", TRACE_EVENT_SCOPE_THREAD, "i", i);
			}
			_exit(0);
		}
		if (waitpid(p, NULL, 0) != p)
			return 1;
	}
	return 0;
}
