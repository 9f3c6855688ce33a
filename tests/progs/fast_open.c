/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fast_open PATH... - tries to open each pinned BPF object (BPF_OBJ_GET,
 * read-write, as the fast path does) and prints "PATH ok" or
 * "PATH <errno>", for the tests of who can reach a process's rings.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/bpf.h>

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		union bpf_attr a;
		long fd;

		memset(&a, 0, sizeof(a));
		a.pathname = (uint64_t)(uintptr_t)argv[i];
		fd = syscall(SYS_bpf, BPF_OBJ_GET, &a, sizeof(a));
		if (fd >= 0) {
			printf("%s ok\n", argv[i]);
			close((int)fd);
		} else {
			printf("%s %s\n", argv[i], strerrorname_np(errno));
		}
	}
	return 0;
}
