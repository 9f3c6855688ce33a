/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * deny_bpf_cmd - run a command with one bpf(2) command refused.
 *
 * usage: deny_bpf_cmd CMD_NUMBER PROGRAM [ARG...]
 *
 * Installs a seccomp filter that makes bpf(CMD_NUMBER, ...) fail with
 * EPERM (every other system call and bpf command is allowed), then execs
 * PROGRAM. Tests use it to give tracebpf a kernel that refuses, say,
 * BPF_PROG_TEST_RUN (10), without changing tracebpf.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

/* The filter checks the architecture first (a call from another ABI has
 * other numbers): the one this program is built for. */
#if defined(__x86_64__)
#define DENY_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define DENY_AUDIT_ARCH AUDIT_ARCH_AARCH64
#elif defined(__riscv) && __riscv_xlen == 64
#define DENY_AUDIT_ARCH AUDIT_ARCH_RISCV64
#else
#error "deny_bpf_cmd: add this architecture's AUDIT_ARCH_* value"
#endif

int main(int argc, char **argv)
{
	char *end;
	long cmd;

	if (argc < 3) {
		fprintf(stderr, "usage: deny_bpf_cmd CMD_NUMBER PROGRAM [ARG...]\n");
		return 64;
	}
	cmd = strtol(argv[1], &end, 0);
	if (end == argv[1] || *end || cmd < 0) {
		fprintf(stderr, "deny_bpf_cmd: '%s' is not a bpf command number\n", argv[1]);
		return 64;
	}
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, DENY_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_bpf, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (__u32)cmd, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("deny_bpf_cmd: seccomp");
		return 1;
	}
	execvp(argv[2], argv + 2);
	perror("deny_bpf_cmd: exec");
	return 127;
}
