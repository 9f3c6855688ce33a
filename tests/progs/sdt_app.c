/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sdt_app N [fork] [exec] [lib] - a program with plain <sys/sdt.h> probes
 * (no tracebpf header), for record --usdt. In order:
 *
 *   prints "ready", then waits for one byte on stdin (EOF: goes on at once),
 *     so that a recorder can attach by pid first;
 *   for i in 0..N-1: sdtapp:tick (int i, int i*3);
 *     sdtapp:mixed (int64 -5-i, char * "name-<i>", uint8 7,
 *                   uint64 0x1122334455667788);
 *     every 10th i (0, 10, ...) also sdtapp:ten, without arguments;
 *   for i in 0..N-1: sdtapp:guarded (int i), only while its semaphore is
 *     set (a tracer attached to it), counted;
 *   lib:  sdtlib:call (int i, int 100+i) for i in 0..N-1, in libsdt.so;
 *   fork: a child fires sdtapp:child (int pid, int i) for i in 0..N-1 and
 *     exits 0; the parent waits for it;
 *   prints "guarded=K" (how often sdtapp:guarded fired) and, last,
 *     "done pid=<pid>", and exits 0;
 *   exec: instead of exiting, execs sdt_exec N from its own directory
 *     (sdtexec:hit (int i, char * "exec-<i>") for i in 0..N-1).
 *
 * <sys/sdt.h>'s semaphores (_SDT_HAS_SEMAPHORES) are for all the probes of
 * a translation unit, so sdtapp:guarded is built from this file as a unit
 * of its own (-DSDT_APP_GUARDED_UNIT, see the Makefile): only its note has
 * a semaphore, as in a program whose other probes have none.
 */
#ifdef SDT_APP_GUARDED_UNIT

#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

int sdt_app_guarded(int i);

/* The documented form (what dtrace -h writes): the kernel, when a tracer
 * attaches, adds one to it; the program reads it before building the
 * probe's arguments. */
unsigned short sdtapp_guarded_semaphore __attribute__((unused, section(".probes")));

int sdt_app_guarded(int i)
{
	if (__builtin_expect(sdtapp_guarded_semaphore, 0)) {
		STAP_PROBE1(sdtapp, guarded, i);
		return 1;
	}
	return 0;
}

#else /* !SDT_APP_GUARDED_UNIT */

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <sys/wait.h>
#include <unistd.h>

int sdt_app_guarded(int i);
void sdtlib_calls(int n);

/* A value the compiler cannot know: the probes read it from a register or
 * memory at run time instead of a constant folded into the note. */
#define OPAQUE(v) ({ __typeof__(v) v_ = (v); __asm__ __volatile__("" : "+r"(v_)); v_; })

static void ticks(int n)
{
	char name[32];
	int i;

	for (i = 0; i < n; i++) {
		int a = OPAQUE(i), b = OPAQUE(i * 3);
		int64_t neg = OPAQUE((int64_t)-5 - i);
		uint8_t seven = OPAQUE((uint8_t)7);
		uint64_t word = OPAQUE((uint64_t)0x1122334455667788ULL);
		const char *s = name;

		snprintf(name, sizeof(name), "name-%d", i);
		s = OPAQUE(s);
		STAP_PROBE2(sdtapp, tick, a, b);
		STAP_PROBE4(sdtapp, mixed, neg, s, seven, word);
		if (i % 10 == 0)
			STAP_PROBE(sdtapp, ten);
	}
}

static int child(int n)
{
	int i;

	for (i = 0; i < n; i++) {
		int pid = OPAQUE((int)getpid()), k = OPAQUE(i);

		STAP_PROBE2(sdtapp, child, pid, k);
	}
	return 0;
}

static int exec_next(int n)
{
	char self[PATH_MAX], arg[16];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (len < 0) {
		perror("sdt_app: readlink /proc/self/exe");
		return 1;
	}
	self[len] = '\0';
	slash = strrchr(self, '/');
	if (!slash || (size_t)(slash - self) + sizeof("/sdt_exec") > sizeof(self)) {
		fprintf(stderr, "sdt_app: unexpected /proc/self/exe '%s'\n", self);
		return 1;
	}
	strcpy(slash, "/sdt_exec");
	snprintf(arg, sizeof(arg), "%d", n);
	execl(self, self, arg, (char *)NULL);
	fprintf(stderr, "sdt_app: failed to exec '%s': ", self);
	perror(NULL);
	return 1;
}

int main(int argc, char **argv)
{
	int n, i, guarded = 0, do_fork = 0, do_exec = 0, do_lib = 0;
	char go;

	if (argc < 2) {
		fprintf(stderr, "usage: sdt_app N [fork] [exec] [lib]\n");
		return 2;
	}
	n = atoi(argv[1]);
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "fork"))
			do_fork = 1;
		else if (!strcmp(argv[i], "exec"))
			do_exec = 1;
		else if (!strcmp(argv[i], "lib"))
			do_lib = 1;
		else {
			fprintf(stderr, "sdt_app: unknown argument '%s'\n", argv[i]);
			return 2;
		}
	}

	printf("ready\n");
	fflush(stdout);
	/* one byte, or EOF (stdin is /dev/null): go on either way */
	if (read(0, &go, 1) < 0)
		perror("sdt_app: read stdin");

	ticks(n);
	for (i = 0; i < n; i++)
		guarded += sdt_app_guarded(OPAQUE(i));
	if (do_lib)
		sdtlib_calls(n);
	if (do_fork) {
		int status;
		pid_t pid = fork();

		if (pid < 0) {
			perror("sdt_app: fork");
			return 1;
		}
		if (pid == 0)
			_exit(child(n));
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "sdt_app: child %d failed (status 0x%x)\n", (int)pid, status);
			return 1;
		}
	}
	printf("guarded=%d\n", guarded);
	printf("done pid=%d\n", (int)getpid());
	fflush(stdout);
	if (do_exec)
		return exec_next(n);
	return 0;
}

#endif /* SDT_APP_GUARDED_UNIT */
