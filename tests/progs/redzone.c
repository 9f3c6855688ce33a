/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * redzone ITER - proves that a tracebpf probe site is red-zone safe.
 *
 * Two identical leaf functions keep twelve locals in the red zone (below
 * %rsp, no stack frame: compile with -O2 and check with objdump -d that they
 * use negative %rsp offsets and no `sub ...,%rsp`) across a probe site:
 *
 *   rz_safe()   a regular tracebpf site (lea -128(%rsp),%rsp; nop5; lea 128)
 *   rz_naive()  a hand-written site: the same 8-aligned 5-byte nop and note,
 *               but WITHOUT the lea pair
 *
 * When a tracer attaches, Linux 6.18 rewrites the 5-byte nop into a call to
 * a trampoline: the call pushes its return address at %rsp-8 and the
 * trampoline saves registers below it, in rz_naive() on top of the locals. Each function returns how many of its locals changed across the
 * site; main counts the calls with any change:
 *
 *   safe_corrupted=<calls> naive_corrupted=<calls> calls=<ITER>
 *
 * Without a tracer both are 0. With one, safe_corrupted must stay 0 and
 * naive_corrupted is expected to be close to ITER (every hit after the first,
 * which is still an int3).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
/* Probes only, without the time: the fast path's calls, and the probe's
 * clock read, would make these functions non-leaf, and a non-leaf function
 * keeps nothing in the red zone. This proves the probe site itself safe,
 * which every site still is (binaries may define both macros). */
#define TRACEBPF_NO_FAST_PATH
#define TRACEBPF_NO_PROBE_TIME
#include "tracebpf/trace.h"

#define NLOCALS 12 /* 96 bytes: fits the red zone with gcc and clang -O2 */
#define MIX     0x9e3779b97f4a7c15ull

int rz_safe(uint64_t x);
int rz_naive(uint64_t x);

__attribute__((noinline)) int rz_safe(uint64_t x)
{
	volatile uint64_t a[NLOCALS];
	int changed = 0;
	int i;

	for (i = 0; i < NLOCALS; i++)
		a[i] = x * MIX + (uint64_t)i;
	TRACE_EVENT_INSTANT1("test", "redzone_safe", TRACE_EVENT_SCOPE_THREAD,
			     "x", x);
	for (i = 0; i < NLOCALS; i++)
		if (a[i] != x * MIX + (uint64_t)i)
			changed++;
	return changed;
}

/* The naive site: what a probe looks like without the red-zone guard. Same
 * descriptor layout, note, semaphore and alignment as a tracebpf site (it
 * reuses the header's internals), only the lea pair is missing. */
#define NAIVE_ASM_NOP                                                         \
	"\t.balign 8\n"                                                       \
	"990:\t.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"

__attribute__((noinline)) int rz_naive(uint64_t x)
{
	volatile uint64_t a[NLOCALS];
	int changed = 0;
	int i;

	for (i = 0; i < NLOCALS; i++)
		a[i] = x * MIX + (uint64_t)i;
	do {
		TRACEBPF__SITE(site, TRACEBPF_PHASE_INSTANT,
			       TRACEBPF_SCOPE_THREAD, 1, TRACEBPF_ARG_UINT,
			       TRACEBPF_ARG_NONE,
			       "test" "\0" "redzone_naive" "\0" "x");
		if (__builtin_expect(TRACEBPF_ENABLED(), 0)) {
			const volatile unsigned char *p =
				(const volatile unsigned char *)&site;
			uint64_t zero = 0;

			(void)p[0];
			(void)p[site.h.size - 1];
			__asm__ __volatile__(NAIVE_ASM_NOP TRACEBPF__ASM_NOTE_NOTIME
					     TRACEBPF__ASM_BASE
					     :
					     : [site] "D"(&site), [a0] "S"(x),
					       [a1] "d"(zero)
					     : "memory");
		}
	} while (0);
	for (i = 0; i < NLOCALS; i++)
		if (a[i] != x * MIX + (uint64_t)i)
			changed++;
	return changed;
}

int main(int argc, char **argv)
{
	unsigned long iter, i, safe = 0, naive = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: redzone ITER\n");
		return 2;
	}
	iter = strtoul(argv[1], NULL, 0);
	for (i = 0; i < iter; i++) {
		if (rz_safe(i) != 0)
			safe++;
		if (rz_naive(i) != 0)
			naive++;
	}
	printf("safe_corrupted=%lu naive_corrupted=%lu calls=%lu\n", safe, naive,
	       iter);
	return 0;
}
