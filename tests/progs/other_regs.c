/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * other_regs N - a binary whose probe notes name other registers than the
 * current trace.h's fixed ones, as a build with an older header has:
 * - one hand-written tracebpf:event site passing (descriptor, a0, a1) in
 *   %rbx, %rcx, %rax (TRACE_EVENT_INSTANT2("test", "other", t, "i", i, "sq",
 *   i * i));
 * - one as the previous trace.h wrote them: (descriptor, a0, a1) in %rdi,
 *   %rsi, %rdx and no time argument ("older", "i", i, "cube", i * i * i),
 *   with %r8 holding 12345, which must not be taken for the time;
 * - an ordinary TRACE_EVENT_INSTANT2("test", "fixed", t, "i", i, "neg", -i).
 * Emits the three N times, then prints "t0=NS t1=NS" (CLOCK_MONOTONIC
 * before and after the loop) and "done". The recorder must decode every
 * site of such a binary from its notes' argument specs.
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include "tracebpf/trace.h"

/* The note of a probe without the time argument (the previous header's). */
#define OLD_NOTE TRACEBPF__ASM_NOTE_NOTIME

__attribute__((noinline)) static void other(int64_t i)
{
	TRACEBPF__SITE(site, TRACEBPF_PHASE_INSTANT, TRACEBPF_SCOPE_THREAD, 2,
		       TRACEBPF_ARG_INT, TRACEBPF_ARG_INT,
		       "test" "\0" "other" "\0" "i" "\0" "sq");
	if (__builtin_expect(TRACEBPF_ENABLED(), 0)) {
		const volatile unsigned char *p = (const volatile unsigned char *)&site;
		uint64_t a0 = (uint64_t)i, a1 = (uint64_t)(i * i);

		(void)p[0];
		(void)p[site.h.size - 1];
		__asm__ __volatile__(TRACEBPF__ASM_NOP OLD_NOTE TRACEBPF__ASM_BASE
				     :
				     : [site] "b"(&site), [a0] "c"(a0), [a1] "a"(a1)
				     : "memory");
	}
}

__attribute__((noinline)) static void older(int64_t i)
{
	TRACEBPF__SITE(site, TRACEBPF_PHASE_INSTANT, TRACEBPF_SCOPE_THREAD, 2,
		       TRACEBPF_ARG_INT, TRACEBPF_ARG_INT,
		       "test" "\0" "older" "\0" "i" "\0" "cube");
	if (__builtin_expect(TRACEBPF_ENABLED(), 0)) {
		const volatile unsigned char *p = (const volatile unsigned char *)&site;
		uint64_t a0 = (uint64_t)i, a1 = (uint64_t)(i * i * i);
		register uint64_t r8 __asm__("r8") = 12345;

		(void)p[0];
		(void)p[site.h.size - 1];
		__asm__ __volatile__(TRACEBPF__ASM_NOP OLD_NOTE TRACEBPF__ASM_BASE
				     :
				     : [site] "D"(&site), [a0] "S"(a0), [a1] "d"(a1), "r"(r8)
				     : "memory");
	}
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc == 2 ? strtol(argv[1], NULL, 10) : -1;

	if (n < 0) {
		fprintf(stderr, "usage: other_regs N\n");
		return 2;
	}
	unsigned long long t0 = now_ns(), t1;

	for (int64_t i = 0; i < n; i++) {
		other(i);
		older(i);
		TRACE_EVENT_INSTANT2("test", "fixed", TRACE_EVENT_SCOPE_THREAD, "i", i,
				     "neg", -i);
	}
	t1 = now_ns();
	printf("t0=%llu t1=%llu\n", t0, t1);
	printf("done\n");
	return 0;
}
