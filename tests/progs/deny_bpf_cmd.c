/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * deny_bpf_cmd - run a command with one bpf(2) command refused.
 *
 * usage: deny_bpf_cmd [--after N | --when FILE] CMD_NUMBER PROGRAM [ARG...]
 *
 * Installs a seccomp filter that makes bpf(CMD_NUMBER, ...) fail with
 * EPERM (every other system call and bpf command is allowed), then execs
 * PROGRAM. Tests use it to give tracebpf a kernel that refuses, say,
 * BPF_PROG_TEST_RUN (10), without changing tracebpf.
 *
 * With --after N the first N such calls go through and the later ones
 * fail: a filter cannot count, so it hands those calls to a supervisor
 * process (SECCOMP_RET_USER_NOTIF), forked before the exec, that lets each
 * one continue or fails it, and says so on stderr ("deny_bpf_cmd: refused
 * ..."). The supervisor ends with PROGRAM. With --when FILE the calls go
 * through while FILE does not exist, and fail once it does: the traced
 * program decides the moment (it makes FILE).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
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

/* Answers the filtered calls: the first `allow` continue (or, with a
 * `when` file, those made while it does not exist), the rest fail, each
 * refusal said on stderr (so a caller knows whether any call was). */
static void supervise(int listener, long cmd, long allow, const char *when)
{
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	long n = 0;

	for (;;) {
		memset(&req, 0, sizeof(req));
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req)) {
			if (errno == EINTR)
				continue;
			_exit(0);   /* no more filtered processes */
		}
		memset(&resp, 0, sizeof(resp));
		resp.id = req.id;
		if (when ? access(when, F_OK) != 0 : allow > 0) {
			allow--;
			resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		} else {
			resp.error = -EPERM;
			fprintf(stderr, "deny_bpf_cmd: refused bpf command %ld (call %ld)\n", cmd, n);
		}
		n++;
		/* ENOENT: the caller was killed meanwhile */
		ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
}

static long number(const char *s, const char *what)
{
	char *end;
	long v = strtol(s, &end, 0);

	if (end == s || *end || v < 0) {
		fprintf(stderr, "deny_bpf_cmd: '%s' is not %s\n", s, what);
		exit(64);
	}
	return v;
}

int main(int argc, char **argv)
{
	long cmd, after = -1;
	const char *when = NULL;
	int listener = -1;

	if (argc >= 3 && !strcmp(argv[1], "--after")) {
		after = number(argv[2], "a number of calls");
		argv += 2;
		argc -= 2;
	} else if (argc >= 3 && !strcmp(argv[1], "--when")) {
		when = argv[2];
		after = 0;
		argv += 2;
		argc -= 2;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: deny_bpf_cmd [--after N | --when FILE] CMD_NUMBER "
			"PROGRAM [ARG...]\n");
		return 64;
	}
	cmd = number(argv[1], "a bpf command number");
	__u32 action = after < 0 ? SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)
				 : SECCOMP_RET_USER_NOTIF;
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, DENY_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_bpf, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (__u32)cmd, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, action),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		perror("deny_bpf_cmd: no_new_privs");
		return 1;
	}
	if (after < 0) {
		if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
			perror("deny_bpf_cmd: seccomp");
			return 1;
		}
	} else {
		pid_t parent = getpid(), pid;

		listener = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER,
				   SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
		if (listener < 0) {
			perror("deny_bpf_cmd: seccomp listener");
			return 1;
		}
		pid = fork();
		if (pid < 0) {
			perror("deny_bpf_cmd: fork");
			return 1;
		}
		if (pid == 0) {
			/* the supervisor is filtered too (it never calls bpf) and
			 * so keeps the filter alive: it ends with PROGRAM */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(0);
			supervise(listener, cmd, after, when);
		}
		close(listener);
	}
	execvp(argv[2], argv + 2);
	perror("deny_bpf_cmd: exec");
	return 127;
}
