/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tracebpf/trace.h - Chromium-style trace macros compiled into USDT probes.
 *
 * Header-only, C11 and C++11..C++20, x86_64 Linux, gcc or clang. Include it and
 * write
 *
 *     TRACE_EVENT1("io", "read", "fd", fd);            // scoped slice
 *     TRACE_EVENT_INSTANT0("io", "eof", TRACE_EVENT_SCOPE_THREAD);
 *     TRACE_COUNTER1("io", "queue", depth);
 *
 * Each macro site is one USDT probe (provider "tracebpf", name "event") that
 * the tracebpf recorder attaches to with libbpf. Nothing is recorded, and the
 * argument expressions are not evaluated, unless a tracer is attached: the
 * disabled cost of a site is one load and one predicted branch.
 *
 * The header allocates nothing. An enabled site first tries the fast path
 * (below: a ring buffer the recorder's BPF maps own, mapped into this
 * thread), which calls clock_gettime() and, once per thread and session,
 * the bpf() and mmap() system calls, pthread_atfork() and
 * __cxa_thread_atexit_impl() (glibc 2.34 or later: no -pthread needed).
 * Define TRACEBPF_NO_FAST_PATH for probes only. The probe too reads the
 * clock (clock_gettime) and passes the time to the tracer; define
 * TRACEBPF_NO_PROBE_TIME for probes that make no call (the tracer then
 * stamps the event itself, at a higher cost per hit).
 *
 * ## Macros
 *
 *   TRACE_EVENT0(cat, name)                      scoped slice: BEGIN here, END
 *   TRACE_EVENT1(cat, name, n1, v1)              when the enclosing scope
 *   TRACE_EVENT2(cat, name, n1, v1, n2, v2)      exits (declares a local)
 *   TRACE_EVENT_BEGIN0/1/2(cat, name [, n1, v1 [, n2, v2]])
 *   TRACE_EVENT_END0/1/2(cat, name [, n1, v1 [, n2, v2]])
 *   TRACE_EVENT_INSTANT0/1/2(cat, name, scope [, n1, v1 [, n2, v2]])
 *   TRACE_COUNTER1(cat, name, value)             one series named "value"
 *   TRACE_COUNTER2(cat, name, n1, v1, n2, v2)
 *   TRACEBPF_ENABLED()                           non-zero while a tracer is
 *                                                attached to this binary
 *
 * and Chromium's async (TRACE_EVENT_ASYNC_*, TRACE_EVENT_NESTABLE_ASYNC_*),
 * flow (TRACE_EVENT_FLOW_*), counter-id (TRACE_COUNTER_ID1/2), COPY
 * (TRACE_EVENT_COPY_*: runtime names), guard (TRACE_EVENT_CATEGORY_ACTIVE,
 * TRACE_EVENT_CATEGORY_GROUP_ENABLED) and name (TRACE_THREAD_NAME,
 * TRACE_PROCESS_NAME, TRACE_*_SORT_INDEX) macros: see docs/api.md.
 *
 * `cat`, `name` and the argument names `nN` must be string literals (anything
 * else does not compile): they are stored once, in the site descriptor, never
 * copied per event. `scope` is TRACE_EVENT_SCOPE_THREAD / _PROCESS / _GLOBAL
 * (or the characters 't', 'p', 'g'). Argument values `vN` may be any integer,
 * enum, bool, floating-point or pointer expression; the type is chosen at
 * compile time:
 *
 *   signed integers, char, enums (C++)    TRACEBPF_ARG_INT    (int64)
 *   unsigned integers                     TRACEBPF_ARG_UINT   (uint64)
 *   float, double, long double            TRACEBPF_ARG_DOUBLE (as a double)
 *   bool / _Bool                          TRACEBPF_ARG_BOOL
 *   char *, const char *, char arrays     TRACEBPF_ARG_STR    (copied by the
 *                                                            tracer at the hit)
 *   any other pointer, nullptr            TRACEBPF_ARG_PTR    (shown as hex)
 *
 * In C an enum has the type of its compatible integer type (unsigned int for
 * enums without negative constants, with gcc and clang), so it is recorded as
 * UINT; the value is the same. Also in C, `true` and comparisons are ints:
 * pass a bool variable or `(bool)expr` to record a BOOL; a bit-field is INT
 * with gcc (UINT if unsigned with clang); a function pointer needs a cast to
 * (void *) under -pedantic. In C++, NULL is an integer: pass nullptr for a
 * null pointer. A string argument must stay valid
 * until the statement has executed; the tracer copies up to 255 bytes of it.
 *
 * Every macro is one statement, except the scoped TRACE_EVENTn, which are
 * declarations (in C, put one that follows a `case` label in braces).
 *
 * A scoped TRACE_EVENTn emits its END only if the sites were enabled when
 * the scope was entered. A tracer attaching meanwhile can still record an
 * END without its BEGIN: the kernel enables a binary's sites one by one, and
 * the shared semaphore is on from the first, so a scope entered just before
 * its BEGIN's probe was in place ends with a recorded END. tracebpf shows
 * such an END as the end of a slice that began before the recording
 * (docs/tracebpf-convert.md).
 *
 * ## How a site looks in the binary (the ABI the tracebpf recorder reads)
 *
 * Every site has a `static const` descriptor, 8-aligned: struct tracebpf_site
 * followed in the same object by the strings cat, name and the argument names,
 * each NUL-terminated. The probe has exactly four 8-byte arguments, in fixed
 * registers (note arguments `8@%rdi 8@%rsi 8@%rdx 8@%r8`, TRACEBPF_REGS_EVENT):
 * the descriptor's address, argument value 0, argument value 1 (0 when unused;
 * doubles as their IEEE-754 bits, bools 0/1, strings and pointers as their
 * address, integers sign- or zero-extended to 64 bits), and the event's time
 * (CLOCK_MONOTONIC ns, read by the application just before the probe: the
 * tracer's program then reads no clock).
 *
 * Sites with an id or a runtime name (async, flows, counter ids, COPY) use a
 * second probe, provider "tracebpf" name "event_id", with exactly six
 * 8-byte arguments in fixed registers (`8@%rdi 8@%rsi 8@%rdx 8@%rcx 8@%rax
 * 8@%r8`, TRACEBPF_REGS_EVENT_ID): descriptor address, id (integer or pointer
 * value, 0 if none), runtime name pointer (NULL unless the descriptor has
 * TRACEBPF_SITEF_COPY_NAME; then the descriptor's name string is empty),
 * value 0, value 1, time. Because the registers are fixed, the recorder reads them
 * from the saved registers without decoding the note per hit; a binary whose
 * notes name other registers (built with an older header) is recorded
 * through libbpf's generic USDT argument decoding. Its descriptor has TRACEBPF_SITEF_ID; with
 * TRACEBPF_SITEF_STEP a step string follows the name. Both probes share
 * the semaphore and the site layout below.
 *
 * The probe instruction is a 5-byte nop (0f 1f 44 00 00) aligned to 8 bytes so
 * that it never crosses a page, between `lea -128(%rsp),%rsp` and
 * `lea 128(%rsp),%rsp`. Linux 6.18 rewrites a uprobe on a 5-byte nop into a
 * call to a trampoline (about twice as fast as the int3 trap taken on a 1-byte
 * nop); that call pushes its return address below %rsp, which in a leaf
 * function is the red zone holding the function's locals. Moving %rsp down by
 * the size of the red zone around the nop keeps those locals intact. The lea
 * pair does not touch the flags. For the same reason no probe argument is ever
 * a %rsp-relative memory operand. (While the nop itself executes, %rsp is 128
 * bytes lower than the unwind tables say: a DWARF stack unwind sampled on
 * exactly that instruction is off; frame-pointer unwinds are not.)
 *
 * Defining TRACEBPF_PROBE_NOP1 before including this header emits instead the
 * plain 1-byte `nop` (what systemtap's sys/sdt.h emits), without the lea pair.
 * It exists ONLY so that bench/ can compare the two kinds of site; do not use
 * it otherwise (every hit then takes an int3 trap).
 *
 * The note in `.note.stapsdt` has the layout of systemtap's sys/sdt.h (type 3,
 * owner "stapsdt", pc, address of `_.stapsdt.base`, semaphore address,
 * provider, name, argument string `8@%reg 8@%reg 8@%reg`), so libbpf attaches
 * to it and readelf -n, gdb (info probes) and perf (sdt events) list it; see
 * tests/header/run.sh. All sites of one executable or
 * shared object share one semaphore, `tracebpf_event_semaphore`, an unsigned
 * short in section `.probes`, defined here weak and hidden: every translation
 * unit of a binary uses the same one, and each shared object has its own.
 */
#ifndef TRACEBPF_TRACE_H
#define TRACEBPF_TRACE_H

#define TRACEBPF_VERSION_MAJOR 0
#define TRACEBPF_VERSION_MINOR 1
#define TRACEBPF_VERSION_PATCH 0
#ifndef TRACEBPF_VERSION /* the tool's build may define it (same value) */
#define TRACEBPF_VERSION "0.1.0"
#endif

#if !defined(__x86_64__) || !defined(__ELF__)
#error "tracebpf/trace.h: only x86_64 ELF targets are supported"
#endif
#if !defined(__GNUC__)
#error "tracebpf/trace.h: needs gcc or clang (inline asm, attributes)"
#endif
#if defined(__cplusplus)
#if __cplusplus < 201103L
#error "tracebpf/trace.h: needs C++11 or later"
#endif
#elif !defined(__STDC_VERSION__) || __STDC_VERSION__ < 201112L
#error "tracebpf/trace.h: needs C11 or later (_Generic)"
#endif

#include <stdint.h>
#ifdef __cplusplus
#include <type_traits>
#endif

/* ------------------------------------------------------------------------ */
/* Site descriptor: tracebpf/site.h, shared with the tracer                 */

#include "site.h"
#include "cats.h"

/* The argument strings of the two probes' notes: the registers the
 * arguments are in (the recorder compares a note's string with these). */
#define TRACEBPF_REGS_EVENT    "8@%rdi 8@%rsi 8@%rdx 8@%r8"
#define TRACEBPF_REGS_EVENT_ID "8@%rdi 8@%rsi 8@%rdx 8@%rcx 8@%rax 8@%r8"

#ifdef __cplusplus
#define TRACEBPF__SASSERT(e, msg) static_assert(e, msg)
/* Named casts keep C++ users' -Wold-style-cast quiet. */
#define TRACEBPF__SCAST(T, v)     static_cast<T>(v)
#define TRACEBPF__RCAST(T, v)     reinterpret_cast<T>(v)
#else
#define TRACEBPF__SASSERT(e, msg) _Static_assert(e, msg)
#define TRACEBPF__SCAST(T, v)     ((T)(v))
#define TRACEBPF__RCAST(T, v)     ((T)(v))
#endif

/* ------------------------------------------------------------------------ */
/* Semaphore: non-zero while a tracer is attached (the kernel counts uprobes
 * with a ref_ctr_offset on it). Weak + hidden: one per executable or shared
 * object, shared by all its translation units, never exported. In `.probes`
 * (progbits, file-backed) as the kernel's ref_ctr update requires.          */

#ifdef __cplusplus
extern "C" {
#endif
__attribute__((weak, visibility("hidden"), section(".probes"), used))
unsigned short tracebpf_event_semaphore;
#ifdef __cplusplus
}
#endif

#define TRACEBPF_ENABLED() \
	(*TRACEBPF__SCAST(const volatile unsigned short *, &tracebpf_event_semaphore) != 0)

/* ------------------------------------------------------------------------ */
/* Internals. Names with a double underscore are not part of the API.       */

#define TRACEBPF__CAT_(a, b) a##b
#define TRACEBPF__CAT(a, b)  TRACEBPF__CAT_(a, b)

#ifdef __cplusplus
#define TRACEBPF__INLINE inline __attribute__((always_inline))
#define TRACEBPF__NULL   nullptr
#else
#define TRACEBPF__INLINE static inline __attribute__((always_inline))
#define TRACEBPF__NULL   ((const void *)0)
#endif

/* The probe instruction. Label 990 is the probe address in the note. */
#ifdef TRACEBPF_PROBE_NOP1
/* Benchmark comparison only: a 1-byte nop, always an int3 trap when traced. */
#define TRACEBPF__ASM_NOP \
	"990:\tnop\n"
#else
#define TRACEBPF__ASM_NOP                                                     \
	"\tlea -128(%%rsp), %%rsp\n"                                          \
	"\t.balign 8\n"                                                       \
	"990:\t.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"                          \
	"\tlea 128(%%rsp), %%rsp\n"                                          \
	"\t.pushsection tracebpf_pcs,\"a?\",@progbits\n"                     \
	"\t.balign 4\n"                                                       \
	"\t.4byte 990b - .\n"                                                 \
	"\t.popsection\n"
#endif

/* The stapsdt note (sys/sdt.h layout: namesz, descsz, type 3, "stapsdt",
 * then pc, _.stapsdt.base, semaphore, provider, name, args). "?" puts the
 * note in the section group of the code, so a discarded COMDAT function (C++
 * inline functions, templates) discards its notes too. */
#define TRACEBPF__ASM_NOTE_(probe, args)                                      \
	"\t.pushsection .note.stapsdt,\"?\",\"note\"\n"                       \
	"\t.balign 4\n"                                                       \
	"\t.4byte 992f-991f, 994f-993f, 3\n"                                  \
	"991:\t.asciz \"stapsdt\"\n"                                          \
	"992:\t.balign 4\n"                                                   \
	"993:\t.8byte 990b\n"                                                 \
	"\t.8byte _.stapsdt.base\n"                                           \
	"\t.8byte tracebpf_event_semaphore\n"                                 \
	"\t.asciz \"tracebpf\"\n"                                             \
	"\t.asciz \"" probe "\"\n"                                           \
	"\t.asciz \"" args "\"\n"                                            \
	"994:\t.balign 4\n"                                                   \
	"\t.popsection\n"
#define TRACEBPF__ASM_NOTE \
	TRACEBPF__ASM_NOTE_("event", "8@%[site] 8@%[a0] 8@%[a1] 8@%[ts]")
#define TRACEBPF__ASM_NOTE_ID \
	TRACEBPF__ASM_NOTE_("event_id", "8@%[site] 8@%[id] 8@%[nm] 8@%[a0] 8@%[a1] 8@%[ts]")
/* Without the time (TRACEBPF_NO_PROBE_TIME, and every older header). */
#define TRACEBPF__ASM_NOTE_NOTIME \
	TRACEBPF__ASM_NOTE_("event", "8@%[site] 8@%[a0] 8@%[a1]")
#define TRACEBPF__ASM_NOTE_ID_NOTIME \
	TRACEBPF__ASM_NOTE_("event_id", "8@%[site] 8@%[id] 8@%[nm] 8@%[a0] 8@%[a1]")

/* _.stapsdt.base lets consumers detect prelink-style relocation of the
 * binary; one byte per binary in a COMDAT section, exactly as sys/sdt.h. */
#define TRACEBPF__ASM_BASE                                                    \
	"\t.ifndef _.stapsdt.base\n"                                          \
	"\t.pushsection .stapsdt.base,\"aG\",\"progbits\",.stapsdt.base,comdat\n" \
	"\t.weak _.stapsdt.base\n"                                            \
	"\t.hidden _.stapsdt.base\n"                                          \
	"_.stapsdt.base:\n"                                                   \
	"\t.space 1\n"                                                        \
	"\t.size _.stapsdt.base, 1\n"                                         \
	"\t.popsection\n"                                                     \
	"\t.endif\n"

#ifdef __cplusplus
extern "C" {
#endif
/* libc's clock_gettime, under a name of our own (no feature macro needed). */
struct tracebpf__timespec { long sec, nsec; };
int tracebpf__clock_gettime(int, struct tracebpf__timespec *) __asm__("clock_gettime");
#ifdef __cplusplus
}
#endif

/* The event's time, CLOCK_MONOTONIC ns: the clock of the kernel's records. */
TRACEBPF__INLINE uint64_t tracebpf__now(void)
{
	struct tracebpf__timespec ts;

	tracebpf__clock_gettime(1 /* CLOCK_MONOTONIC */, &ts);
	return TRACEBPF__SCAST(uint64_t, ts.sec) * 1000000000u +
	       TRACEBPF__SCAST(uint64_t, ts.nsec);
}

/* One probe hit. always_inline so that every macro site gets its own copy of
 * the asm, hence its own probe address and note (also at -O0). Operands are
 * fixed registers (TRACEBPF_REGS_EVENT: %rdi %rsi %rdx %r8), never memory, which
 * could be %rsp-relative and off by the 128 bytes the lea moved %rsp: the
 * tracer's program reads them straight from the registers the kernel saved,
 * with no argument decoding per hit; the note still names them for other
 * tools. "memory" because the tracer reads the strings the arguments point
 * to. */
TRACEBPF__INLINE void
tracebpf__hit(const void *site, unsigned size, uint64_t a0, uint64_t a1)
{
	const volatile unsigned char *p =
		TRACEBPF__SCAST(const volatile unsigned char *, site);

	/* The tracer reads the descriptor with bpf_probe_read_user(), which
	 * fails on a page that is not resident: touch both ends first. */

	(void)p[0];
	(void)p[size - 1];
#ifdef TRACEBPF_NO_PROBE_TIME
	__asm__ __volatile__(TRACEBPF__ASM_NOP TRACEBPF__ASM_NOTE_NOTIME TRACEBPF__ASM_BASE
			     :
			     : [site] "D"(site), [a0] "S"(a0), [a1] "d"(a1)
			     : "memory");
#else
	uint64_t now = tracebpf__now();
	register uint64_t ts __asm__("r8") = now;   /* no call after this */

	__asm__ __volatile__(TRACEBPF__ASM_NOP TRACEBPF__ASM_NOTE TRACEBPF__ASM_BASE
			     :
			     : [site] "D"(site), [a0] "S"(a0), [a1] "d"(a1), [ts] "r"(ts)
			     : "memory");
#endif
}

/* One hit of an `event_id` site: also an id (async, flow, counter id; 0 when
 * unused) and a runtime name (NULL unless TRACEBPF_SITEF_COPY_NAME). */
TRACEBPF__INLINE void
tracebpf__hit_id(const void *site, unsigned size, uint64_t id, const char *nm,
		 uint64_t a0, uint64_t a1)
{
	const volatile unsigned char *p =
		TRACEBPF__SCAST(const volatile unsigned char *, site);


	(void)p[0];
	(void)p[size - 1];
#ifdef TRACEBPF_NO_PROBE_TIME
	__asm__ __volatile__(TRACEBPF__ASM_NOP TRACEBPF__ASM_NOTE_ID_NOTIME TRACEBPF__ASM_BASE
			     :
			     : [site] "D"(site), [id] "S"(id), [nm] "d"(nm),
			       [a0] "c"(a0), [a1] "a"(a1)
			     : "memory");
#else
	uint64_t now = tracebpf__now();
	register uint64_t ts __asm__("r8") = now;   /* no call after this */

	__asm__ __volatile__(TRACEBPF__ASM_NOP TRACEBPF__ASM_NOTE_ID TRACEBPF__ASM_BASE
			     :
			     : [site] "D"(site), [id] "S"(id), [nm] "d"(nm),
			       [a0] "c"(a0), [a1] "a"(a1), [ts] "r"(ts)
			     : "memory");
#endif
}

/* ------------------------------------------------------------------------ */
/* The fast path's ring protocol: tracebpf/fast_ring.h, the recorder's too */

#include "fast_ring.h"

#ifdef __cplusplus
extern "C" {
#endif
/* libc, under names of our own (no feature macro or header needed). */
int tracebpf__pthread_atfork(void (*)(void), void (*)(void), void (*)(void))
	__asm__("pthread_atfork");
int tracebpf__thread_atexit(void (*)(void *), void *, void *)
	__asm__("__cxa_thread_atexit_impl");
extern void *tracebpf__dso_handle __asm__("__dso_handle")
	__attribute__((visibility("hidden")));
extern const long tracebpf__rseq_offset __asm__("__rseq_offset") __attribute__((weak));
extern const unsigned tracebpf__rseq_size __asm__("__rseq_size") __attribute__((weak));
#ifdef __cplusplus
}
#define TRACEBPF__FASTFN inline __attribute__((noinline, visibility("hidden")))
#else
#define TRACEBPF__FASTFN static __attribute__((noinline, unused))
#endif

TRACEBPF__INLINE long
tracebpf__sys(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ __volatile__("syscall"
			     : "=a"(ret)
			     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			     : "rcx", "r11", "memory");
	return ret;
}

#define TRACEBPF__SYS_MMAP    9
#define TRACEBPF__SYS_MUNMAP  11
#define TRACEBPF__SYS_MADVISE 28
#define TRACEBPF__SYS_GETPID  39
#define TRACEBPF__SYS_CLOSE   3
#define TRACEBPF__SYS_GETTID  186
#define TRACEBPF__SYS_BPF     321
#define TRACEBPF__SYS_OPEN    2
#define TRACEBPF__SYS_PWRITE  18
#define TRACEBPF__SYS_FUTEX   202

/* Linux 6.18 rewrites a hit 5-byte-nop site into a call to its
 * [uprobes-trampoline] page, which fork() does not copy: a child would
 * crash on the first site its parent had hit (docs/probe-site.md, "Sites
 * across fork"). Every site's address is also in section tracebpf_pcs (one per
 * object); in the child, before fork() returns, each site that is such a
 * call (0xe8: nothing else writes it) is put back into the state of a
 * registered uprobe not yet optimized, int3 and the nop's tail, through
 * /proc/self/mem: the child's first hit traps, and the kernel optimizes
 * it again with a trampoline of the child's. */
#ifndef TRACEBPF_PROBE_NOP1
#ifdef __cplusplus
extern "C" {
#endif
extern const int __start_tracebpf_pcs[] __attribute__((weak, visibility("hidden")));
extern const int __stop_tracebpf_pcs[] __attribute__((weak, visibility("hidden")));
__attribute__((weak, visibility("hidden"))) int tracebpf__fork_fix_on;
#ifdef __cplusplus
}
#endif

TRACEBPF__FASTFN void tracebpf__fork_fix_child(void)
{
	static const unsigned char swbp[5] = { 0xcc, 0x1f, 0x44, 0x00, 0x00 };
	long fd = -1;

	for (const int *p = __start_tracebpf_pcs; p && p < __stop_tracebpf_pcs; p++) {
		const unsigned char *pc = TRACEBPF__RCAST(const unsigned char *, p) + *p;

		if (pc[0] != 0xe8)
			continue;
		if (fd < 0)
			fd = tracebpf__sys(TRACEBPF__SYS_OPEN, TRACEBPF__RCAST(long, "/proc/self/mem"),
					   02000002 /* O_RDWR | O_CLOEXEC */, 0, 0, 0, 0);
		if (fd < 0)
			return;
		/* the int3 first, then the rest: the order the kernel writes */
		tracebpf__sys(TRACEBPF__SYS_PWRITE, fd, TRACEBPF__RCAST(long, swbp), 1,
			      TRACEBPF__RCAST(long, pc), 0, 0);
		tracebpf__sys(TRACEBPF__SYS_PWRITE, fd, TRACEBPF__RCAST(long, swbp + 1), 4,
			      TRACEBPF__RCAST(long, pc + 1), 0, 0);
	}
	if (fd >= 0)
		tracebpf__sys(TRACEBPF__SYS_CLOSE, fd, 0, 0, 0, 0, 0);
}

/* Once per object (the first of its translation units to run this). */
__attribute__((constructor, unused)) static void tracebpf__fork_fix_init(void)
{
	if (!__atomic_exchange_n(&tracebpf__fork_fix_on, 1, __ATOMIC_RELAXED))
		tracebpf__pthread_atfork(0, 0, tracebpf__fork_fix_child);
}
#endif /* TRACEBPF_PROBE_NOP1 */

/* The descriptor of one site, a block-scope static named `var`. `strs` is the
 * concatenation cat "\0" name ["\0" argname...]; the literal's own final NUL
 * terminates the last string. */
#ifdef __FILE_NAME__
#define TRACEBPF__SRC_FILE __FILE_NAME__
#else
#define TRACEBPF__SRC_FILE __FILE__
#endif
/* The strings with the source file after them. */
#define TRACEBPF__STRS_SRC(strs) strs "\0" TRACEBPF__SRC_FILE
#define TRACEBPF__STRS_BYTES(strs) \
	TRACEBPF__SCAST(unsigned, sizeof(struct tracebpf_site) + sizeof(TRACEBPF__STRS_SRC(strs)))

#define TRACEBPF__SITE(var, ph, sc, na, t0, t1, strs) \
	TRACEBPF__SITE_F(var, ph, sc, na, t0, t1, 0, strs)
#define TRACEBPF__SITE_F(var, ph, sc, na, t0, t1, fl, strs)                   \
	static const struct {                                                 \
		struct tracebpf_site h;                                       \
		char s[sizeof(TRACEBPF__STRS_SRC(strs))];                    \
	} var __attribute__((aligned(8))) = {                                 \
		{ TRACEBPF_SITE_MAGIC,                                        \
		  TRACEBPF__SCAST(uint16_t, TRACEBPF__STRS_BYTES(strs)),      \
		  TRACEBPF__SCAST(uint8_t, ph), TRACEBPF__SCAST(uint8_t, sc), \
		  TRACEBPF__SCAST(uint8_t, na),                               \
		  { TRACEBPF__SCAST(uint8_t, t0),                             \
		    TRACEBPF__SCAST(uint8_t, t1) },                           \
		  TRACEBPF__SCAST(uint8_t, fl), __LINE__ },                   \
		TRACEBPF__STRS_SRC(strs)                                      \
	};                                                                    \
	TRACEBPF__SASSERT(TRACEBPF__STRS_BYTES(strs) <= TRACEBPF_SITE_MAX,    \
			  "tracebpf: category, name, argument names and file name too long")

#ifndef TRACEBPF_NO_FAST_PATH
#include "fast_producer.h"
#else
#define tracebpf__cat_on(cache, cat) ((void)(cache), (void)(cat), 1)
#define TRACEBPF__FAST(site, a0, a1, fast) 0
#define TRACEBPF__FAST_ID(site, id, nm, copy, a0, a1, fast) ((void)(copy), (void)(fast), 0)
#endif /* TRACEBPF_NO_FAST_PATH */

/* One hit of a plain site: the fast path when it can take it, else the
 * probe. fast is a constant (TRACEBPF__FASTKIND): 0 for the probe only,
 * else 1 and, from bit 1, which arguments are strings. */
TRACEBPF__INLINE void
tracebpf__emit(const void *site, unsigned size, uint64_t a0, uint64_t a1, int fast)
{
	if (!fast || !TRACEBPF__FAST(site, a0, a1, fast))
		tracebpf__hit(site, size, a0, a1);
}

/* One hit of an `event_id` site: the fast path when it can, else the
 * probe. copy: the site copies its runtime name nm (a constant). */
TRACEBPF__INLINE void
tracebpf__emit_id(const void *site, unsigned size, uint64_t id, const char *nm, int copy,
		  uint64_t a0, uint64_t a1, int fast)
{
	if (!TRACEBPF__FAST_ID(site, id, nm, copy, a0, a1, fast))
		tracebpf__hit_id(site, size, id, nm, a0, a1);
}

/* BEGIN of a scoped slice: returns the END descriptor for the scope guard. */
TRACEBPF__INLINE const void *
tracebpf__scope_begin(const void *site, unsigned size, uint64_t a0,
		      uint64_t a1, const void *end_site, int fast)
{
	tracebpf__emit(site, size, a0, a1, fast);
	return end_site;
}

TRACEBPF__INLINE void tracebpf__scope_end(const void *end_site)
{
	if (end_site && TRACEBPF_ENABLED()) {
		const volatile struct tracebpf_site *h = TRACEBPF__SCAST(
			const volatile struct tracebpf_site *, end_site);
		tracebpf__emit(end_site, h->size, 0, 0, 1);
	}
}

/* Argument values as the 64 bits the probe passes. */
TRACEBPF__INLINE uint64_t tracebpf__val_i(int64_t v)
{
	return TRACEBPF__SCAST(uint64_t, v);
}
TRACEBPF__INLINE uint64_t tracebpf__val_u(uint64_t v)
{
	return v;
}
TRACEBPF__INLINE uint64_t tracebpf__val_b(int v)
{
	return v ? 1u : 0u;
}
TRACEBPF__INLINE uint64_t tracebpf__val_d(double v)
{
	uint64_t u;

	__builtin_memcpy(&u, &v, sizeof(u)); /* a register move, no call */
	return u;
}
TRACEBPF__INLINE uint64_t tracebpf__val_p(const volatile void *v)
{
	uintptr_t u = TRACEBPF__RCAST(uintptr_t, v);

	return u;
}

#ifdef __cplusplus

template <typename T>
struct tracebpf__arg_type_of {
	typedef typename std::decay<T>::type D;
	typedef typename std::remove_cv<typename std::remove_pointer<D>::type>::type P;
	static constexpr uint8_t value =
		std::is_same<D, bool>::value ? TRACEBPF_ARG_BOOL :
		std::is_same<D, char>::value ? TRACEBPF_ARG_INT :
		std::is_enum<D>::value ? TRACEBPF_ARG_INT :
		std::is_integral<D>::value ?
			(std::is_signed<D>::value ? TRACEBPF_ARG_INT : TRACEBPF_ARG_UINT) :
		std::is_floating_point<D>::value ? TRACEBPF_ARG_DOUBLE :
		(std::is_pointer<D>::value && std::is_same<P, char>::value) ? TRACEBPF_ARG_STR :
		std::is_pointer<D>::value ? TRACEBPF_ARG_PTR :
		std::is_same<D, decltype(nullptr)>::value ? TRACEBPF_ARG_PTR :
		TRACEBPF_ARG_NONE;
	static_assert(value != TRACEBPF_ARG_NONE,
		      "tracebpf: unsupported trace argument type (use an integer, enum, "
		      "bool, floating-point or pointer value)");
};

TRACEBPF__INLINE uint64_t tracebpf__val(bool v) { return v ? 1u : 0u; }
TRACEBPF__INLINE uint64_t tracebpf__val(decltype(nullptr)) { return 0; }
template <typename T>
TRACEBPF__INLINE typename std::enable_if<
	(std::is_integral<T>::value || std::is_enum<T>::value) &&
		!std::is_same<T, bool>::value &&
		tracebpf__arg_type_of<T>::value == TRACEBPF_ARG_INT,
	uint64_t>::type
tracebpf__val(T v)
{
	return TRACEBPF__SCAST(uint64_t, TRACEBPF__SCAST(int64_t, v));
}
template <typename T>
TRACEBPF__INLINE typename std::enable_if<
	std::is_integral<T>::value && !std::is_same<T, bool>::value &&
		tracebpf__arg_type_of<T>::value == TRACEBPF_ARG_UINT,
	uint64_t>::type
tracebpf__val(T v)
{
	return TRACEBPF__SCAST(uint64_t, v);
}
template <typename T>
TRACEBPF__INLINE typename std::enable_if<std::is_floating_point<T>::value,
					 uint64_t>::type
tracebpf__val(T v)
{
	return tracebpf__val_d(TRACEBPF__SCAST(double, v));
}
template <typename T>
TRACEBPF__INLINE uint64_t tracebpf__val(T *v)
{
	uintptr_t u = TRACEBPF__RCAST(uintptr_t, v);

	return u;
}

#define TRACEBPF__ARG_TYPE(v) (tracebpf__arg_type_of<decltype(v)>::value)
#define TRACEBPF__ARG_VAL(v)  tracebpf__val(v)

/* Scope guard of TRACE_EVENTn: emits the END site on destruction. */
struct tracebpf_scope {
	explicit tracebpf_scope(const void *end_site) noexcept : end_(end_site) {}
	~tracebpf_scope() { tracebpf__scope_end(end_); }
	tracebpf_scope(const tracebpf_scope &) = delete;
	tracebpf_scope &operator=(const tracebpf_scope &) = delete;

private:
	const void *end_;
};

#define TRACEBPF__SCOPE_DECL(var, init) \
	tracebpf_scope var __attribute__((unused))(init)

#else /* C */

/* The comma makes the controlling expression an rvalue: arrays decay to
 * pointers and qualifiers go, on every compiler. What no association matches
 * is a pointer (PTR), or, with gcc, a bit-field (gcc gives bit-fields types
 * of their own width): recorded as INT, which holds any bit-field exactly.
 * Anything else (a struct...) fails to compile in tracebpf__val_i(). */
#define TRACEBPF__IS_PTR(v) (__builtin_classify_type(((void)0, (v))) == 5)
#define TRACEBPF__ARG_TYPE_OTHER(v)                                           \
	__builtin_choose_expr(TRACEBPF__IS_PTR(v), TRACEBPF_ARG_PTR,          \
			      TRACEBPF_ARG_INT)
#define TRACEBPF__ARG_VAL_OTHER(v)                                            \
	__builtin_choose_expr(TRACEBPF__IS_PTR(v), tracebpf__val_p,           \
			      tracebpf__val_i)

#define TRACEBPF__ARG_TYPE(v)                                                 \
	_Generic(((void)0, (v)),                                              \
		_Bool: TRACEBPF_ARG_BOOL,                                     \
		char: TRACEBPF_ARG_INT,                                       \
		signed char: TRACEBPF_ARG_INT,                                \
		short: TRACEBPF_ARG_INT,                                      \
		int: TRACEBPF_ARG_INT,                                        \
		long: TRACEBPF_ARG_INT,                                       \
		long long: TRACEBPF_ARG_INT,                                  \
		unsigned char: TRACEBPF_ARG_UINT,                             \
		unsigned short: TRACEBPF_ARG_UINT,                            \
		unsigned int: TRACEBPF_ARG_UINT,                              \
		unsigned long: TRACEBPF_ARG_UINT,                             \
		unsigned long long: TRACEBPF_ARG_UINT,                        \
		float: TRACEBPF_ARG_DOUBLE,                                   \
		double: TRACEBPF_ARG_DOUBLE,                                  \
		long double: TRACEBPF_ARG_DOUBLE,                             \
		char *: TRACEBPF_ARG_STR,                                     \
		const char *: TRACEBPF_ARG_STR,                               \
		volatile char *: TRACEBPF_ARG_STR,                            \
		const volatile char *: TRACEBPF_ARG_STR,                      \
		default: TRACEBPF__ARG_TYPE_OTHER(v))

#define TRACEBPF__ARG_VAL(v)                                                  \
	_Generic(((void)0, (v)),                                              \
		_Bool: tracebpf__val_b,                                       \
		char: tracebpf__val_i,                                        \
		signed char: tracebpf__val_i,                                 \
		short: tracebpf__val_i,                                       \
		int: tracebpf__val_i,                                         \
		long: tracebpf__val_i,                                        \
		long long: tracebpf__val_i,                                   \
		unsigned char: tracebpf__val_u,                               \
		unsigned short: tracebpf__val_u,                              \
		unsigned int: tracebpf__val_u,                                \
		unsigned long: tracebpf__val_u,                               \
		unsigned long long: tracebpf__val_u,                          \
		float: tracebpf__val_d,                                       \
		double: tracebpf__val_d,                                      \
		long double: tracebpf__val_d,                                 \
		default: TRACEBPF__ARG_VAL_OTHER(v))(v)

TRACEBPF__INLINE void tracebpf__scope_cleanup(const void **end_site)
{
	tracebpf__scope_end(*end_site);
}

#define TRACEBPF__SCOPE_DECL(var, init)                                       \
	const void *var                                                       \
		__attribute__((cleanup(tracebpf__scope_cleanup), unused)) = (init)

#endif /* C */


/* A plain (non-scoped) site: one statement. */
#define TRACEBPF__EVENT(ph, sc, na, t0, v0, t1, v1, strs)                     \
	do {                                                                  \
		TRACEBPF__SITE(tracebpf__site, ph, sc, na, t0, t1, strs);     \
		static uint64_t tracebpf__catc;                               \
		if (__builtin_expect(TRACEBPF_ENABLED(), 0) &&                \
		    tracebpf__cat_on(&tracebpf__catc, tracebpf__site.s))      \
			tracebpf__emit(&tracebpf__site,                       \
				       TRACEBPF__STRS_BYTES(strs), v0, v1,    \
				       TRACEBPF__FASTKIND(t0, t1));              \
	} while (0)

/* Every plain site can take the fast path (1); bits 1 and 2 say which
 * arguments are strings, copied into the sample. */
#define TRACEBPF__FASTKIND(t0, t1) \
	(1 | ((t0) == TRACEBPF_ARG_STR) << 1 | ((t1) == TRACEBPF_ARG_STR) << 2)

#define TRACEBPF__E0(ph, sc, cat, name)                                       \
	TRACEBPF__EVENT(ph, sc, 0, TRACEBPF_ARG_NONE, 0, TRACEBPF_ARG_NONE, 0, \
			cat "\0" name)
#define TRACEBPF__E1(ph, sc, cat, name, n0, v0)                               \
	TRACEBPF__EVENT(ph, sc, 1, TRACEBPF__ARG_TYPE(v0),                    \
			TRACEBPF__ARG_VAL(v0), TRACEBPF_ARG_NONE, 0,          \
			cat "\0" name "\0" n0)
#define TRACEBPF__E2(ph, sc, cat, name, n0, v0, n1, v1)                       \
	TRACEBPF__EVENT(ph, sc, 2, TRACEBPF__ARG_TYPE(v0),                    \
			TRACEBPF__ARG_VAL(v0), TRACEBPF__ARG_TYPE(v1),        \
			TRACEBPF__ARG_VAL(v1), cat "\0" name "\0" n0 "\0" n1)

/* A scoped slice: declarations only (two static descriptors and the guard),
 * `id` makes the names unique within the scope. */
#define TRACEBPF__SCOPED(id, cat, name, na, t0, v0, t1, v1, strs)             \
	TRACEBPF__SITE(TRACEBPF__CAT(tracebpf__b, id), TRACEBPF_PHASE_BEGIN,  \
		       0, na, t0, t1, strs);                                  \
	TRACEBPF__SITE(TRACEBPF__CAT(tracebpf__e, id), TRACEBPF_PHASE_END,    \
		       0, 0, TRACEBPF_ARG_NONE, TRACEBPF_ARG_NONE,            \
		       cat "\0" name);                                        \
	static uint64_t TRACEBPF__CAT(tracebpf__k, id);                       \
	TRACEBPF__SCOPE_DECL(TRACEBPF__CAT(tracebpf__scope, id),              \
		__builtin_expect(TRACEBPF_ENABLED(), 0) &&                    \
		tracebpf__cat_on(&TRACEBPF__CAT(tracebpf__k, id),             \
				 TRACEBPF__CAT(tracebpf__b, id).s)            \
		? tracebpf__scope_begin(&TRACEBPF__CAT(tracebpf__b, id),      \
					TRACEBPF__STRS_BYTES(strs), v0, v1,   \
					&TRACEBPF__CAT(tracebpf__e, id),      \
					TRACEBPF__FASTKIND(t0, t1))              \
		: TRACEBPF__NULL)

#define TRACEBPF__S0(id, cat, name)                                           \
	TRACEBPF__SCOPED(id, cat, name, 0, TRACEBPF_ARG_NONE, 0,              \
			 TRACEBPF_ARG_NONE, 0, cat "\0" name)
#define TRACEBPF__S1(id, cat, name, n0, v0)                                   \
	TRACEBPF__SCOPED(id, cat, name, 1, TRACEBPF__ARG_TYPE(v0),            \
			 TRACEBPF__ARG_VAL(v0), TRACEBPF_ARG_NONE, 0,         \
			 cat "\0" name "\0" n0)
#define TRACEBPF__S2(id, cat, name, n0, v0, n1, v1)                           \
	TRACEBPF__SCOPED(id, cat, name, 2, TRACEBPF__ARG_TYPE(v0),            \
			 TRACEBPF__ARG_VAL(v0), TRACEBPF__ARG_TYPE(v1),       \
			 TRACEBPF__ARG_VAL(v1), cat "\0" name "\0" n0 "\0" n1)


/* An `event_id` site (id and/or runtime name): one statement. `nm` is the
 * runtime name for the COPY variants (a const char *), TRACEBPF__NONAME
 * otherwise; `id` any integer or pointer (0 when the phase has none). */
#ifdef __cplusplus
#define TRACEBPF__NONAME nullptr
#else
#define TRACEBPF__NONAME ((const char *)0)
#endif
#define TRACEBPF__EVENT_ID(ph, sc, fl, na, t0, v0, t1, v1, id, nm, strs)      \
	do {                                                                  \
		TRACEBPF__SITE_F(tracebpf__site, ph, sc, na, t0, t1,          \
				 (fl) | TRACEBPF_SITEF_ID, strs);             \
		static uint64_t tracebpf__catc;                               \
		if (__builtin_expect(TRACEBPF_ENABLED(), 0) &&                \
		    tracebpf__cat_on(&tracebpf__catc, tracebpf__site.s))      \
			tracebpf__emit_id(&tracebpf__site,                    \
					  TRACEBPF__STRS_BYTES(strs),         \
					  TRACEBPF__ARG_VAL(id), (nm),        \
					  ((fl) & TRACEBPF_SITEF_COPY_NAME) != 0, \
					  v0, v1, TRACEBPF__FASTKIND(t0, t1)); \
	} while (0)

/* `strs` here is cat "\0" name [ "\0" step ]: argument names are appended. */
#define TRACEBPF__X0(ph, sc, fl, id, nm, strs)                                \
	TRACEBPF__EVENT_ID(ph, sc, fl, 0, TRACEBPF_ARG_NONE, 0,               \
			   TRACEBPF_ARG_NONE, 0, id, nm, strs)
#define TRACEBPF__X1(ph, sc, fl, id, nm, strs, n0, v0)                        \
	TRACEBPF__EVENT_ID(ph, sc, fl, 1, TRACEBPF__ARG_TYPE(v0),             \
			   TRACEBPF__ARG_VAL(v0), TRACEBPF_ARG_NONE, 0, id,   \
			   nm, strs "\0" n0)
#define TRACEBPF__X2(ph, sc, fl, id, nm, strs, n0, v0, n1, v1)                \
	TRACEBPF__EVENT_ID(ph, sc, fl, 2, TRACEBPF__ARG_TYPE(v0),             \
			   TRACEBPF__ARG_VAL(v0), TRACEBPF__ARG_TYPE(v1),     \
			   TRACEBPF__ARG_VAL(v1), id, nm, strs "\0" n0 "\0" n1)

/* Runtime names: the descriptor's name is empty. */
#define TRACEBPF__CNAME(name) TRACEBPF__SCAST(const char *, (name))
#define TRACEBPF__COPY TRACEBPF_SITEF_COPY_NAME
#define TRACEBPF__STEP TRACEBPF_SITEF_STEP

/* ------------------------------------------------------------------------ */
/* Public macros (Chromium trace_event names and semantics).                */

#define TRACE_EVENT_SCOPE_THREAD  TRACEBPF_SCOPE_THREAD
#define TRACE_EVENT_SCOPE_PROCESS TRACEBPF_SCOPE_PROCESS
#define TRACE_EVENT_SCOPE_GLOBAL  TRACEBPF_SCOPE_GLOBAL

/* Scoped slices: BEGIN now, END when the enclosing scope exits. */
#define TRACE_EVENT0(cat, name) \
	TRACEBPF__S0(__COUNTER__, cat, name)
#define TRACE_EVENT1(cat, name, a1n, a1v) \
	TRACEBPF__S1(__COUNTER__, cat, name, a1n, a1v)
#define TRACE_EVENT2(cat, name, a1n, a1v, a2n, a2v) \
	TRACEBPF__S2(__COUNTER__, cat, name, a1n, a1v, a2n, a2v)

#define TRACE_EVENT_BEGIN0(cat, name) \
	TRACEBPF__E0(TRACEBPF_PHASE_BEGIN, 0, cat, name)
#define TRACE_EVENT_BEGIN1(cat, name, a1n, a1v) \
	TRACEBPF__E1(TRACEBPF_PHASE_BEGIN, 0, cat, name, a1n, a1v)
#define TRACE_EVENT_BEGIN2(cat, name, a1n, a1v, a2n, a2v) \
	TRACEBPF__E2(TRACEBPF_PHASE_BEGIN, 0, cat, name, a1n, a1v, a2n, a2v)

#define TRACE_EVENT_END0(cat, name) \
	TRACEBPF__E0(TRACEBPF_PHASE_END, 0, cat, name)
#define TRACE_EVENT_END1(cat, name, a1n, a1v) \
	TRACEBPF__E1(TRACEBPF_PHASE_END, 0, cat, name, a1n, a1v)
#define TRACE_EVENT_END2(cat, name, a1n, a1v, a2n, a2v) \
	TRACEBPF__E2(TRACEBPF_PHASE_END, 0, cat, name, a1n, a1v, a2n, a2v)

#define TRACE_EVENT_INSTANT0(cat, name, scope) \
	TRACEBPF__E0(TRACEBPF_PHASE_INSTANT, scope, cat, name)
#define TRACE_EVENT_INSTANT1(cat, name, scope, a1n, a1v) \
	TRACEBPF__E1(TRACEBPF_PHASE_INSTANT, scope, cat, name, a1n, a1v)
#define TRACE_EVENT_INSTANT2(cat, name, scope, a1n, a1v, a2n, a2v) \
	TRACEBPF__E2(TRACEBPF_PHASE_INSTANT, scope, cat, name, a1n, a1v, a2n, a2v)

#define TRACE_COUNTER1(cat, name, value) \
	TRACEBPF__E1(TRACEBPF_PHASE_COUNTER, 0, cat, name, "value", value)
#define TRACE_COUNTER2(cat, name, a1n, a1v, a2n, a2v) \
	TRACEBPF__E2(TRACEBPF_PHASE_COUNTER, 0, cat, name, a1n, a1v, a2n, a2v)

/* Counters with an id: one counter track per (name, id). */
#define TRACE_COUNTER_ID1(cat, name, id, value) \
	TRACEBPF__X1('C', 0, 0, id, TRACEBPF__NONAME, cat "\0" name, "value", value)
#define TRACE_COUNTER_ID2(cat, name, id, a1n, a1v, a2n, a2v) \
	TRACEBPF__X2('C', 0, 0, id, TRACEBPF__NONAME, cat "\0" name, a1n, a1v, a2n, a2v)

/* Async slices keyed by (cat, name, id): "b"/"n"/"e" in the JSON. */
#define TRACE_EVENT_ASYNC_BEGIN0(cat, name, id) \
	TRACEBPF__X0('b', 0, 0, id, TRACEBPF__NONAME, cat "\0" name)
#define TRACE_EVENT_ASYNC_BEGIN1(cat, name, id, a1n, a1v) \
	TRACEBPF__X1('b', 0, 0, id, TRACEBPF__NONAME, cat "\0" name, a1n, a1v)
#define TRACE_EVENT_ASYNC_BEGIN2(cat, name, id, a1n, a1v, a2n, a2v) \
	TRACEBPF__X2('b', 0, 0, id, TRACEBPF__NONAME, cat "\0" name, a1n, a1v, a2n, a2v)
#define TRACE_EVENT_ASYNC_STEP_INTO0(cat, name, id, step) \
	TRACEBPF__X0('n', 0, TRACEBPF__STEP, id, TRACEBPF__NONAME, cat "\0" name "\0" step)
#define TRACE_EVENT_ASYNC_STEP_INTO1(cat, name, id, step, a1n, a1v) \
	TRACEBPF__X1('n', 0, TRACEBPF__STEP, id, TRACEBPF__NONAME, cat "\0" name "\0" step, a1n, a1v)
#define TRACE_EVENT_ASYNC_END0(cat, name, id) \
	TRACEBPF__X0('e', 0, 0, id, TRACEBPF__NONAME, cat "\0" name)
#define TRACE_EVENT_ASYNC_END1(cat, name, id, a1n, a1v) \
	TRACEBPF__X1('e', 0, 0, id, TRACEBPF__NONAME, cat "\0" name, a1n, a1v)
#define TRACE_EVENT_ASYNC_END2(cat, name, id, a1n, a1v, a2n, a2v) \
	TRACEBPF__X2('e', 0, 0, id, TRACEBPF__NONAME, cat "\0" name, a1n, a1v, a2n, a2v)

#define TRACE_EVENT_NESTABLE_ASYNC_BEGIN0(cat, name, id) \
	TRACE_EVENT_ASYNC_BEGIN0(cat, name, id)
#define TRACE_EVENT_NESTABLE_ASYNC_BEGIN1(cat, name, id, a1n, a1v) \
	TRACE_EVENT_ASYNC_BEGIN1(cat, name, id, a1n, a1v)
#define TRACE_EVENT_NESTABLE_ASYNC_BEGIN2(cat, name, id, a1n, a1v, a2n, a2v) \
	TRACE_EVENT_ASYNC_BEGIN2(cat, name, id, a1n, a1v, a2n, a2v)
#define TRACE_EVENT_NESTABLE_ASYNC_END0(cat, name, id) \
	TRACE_EVENT_ASYNC_END0(cat, name, id)
#define TRACE_EVENT_NESTABLE_ASYNC_END1(cat, name, id, a1n, a1v) \
	TRACE_EVENT_ASYNC_END1(cat, name, id, a1n, a1v)
#define TRACE_EVENT_NESTABLE_ASYNC_END2(cat, name, id, a1n, a1v, a2n, a2v) \
	TRACE_EVENT_ASYNC_END2(cat, name, id, a1n, a1v, a2n, a2v)
#define TRACE_EVENT_NESTABLE_ASYNC_INSTANT0(cat, name, id) \
	TRACEBPF__X0('n', 0, 0, id, TRACEBPF__NONAME, cat "\0" name)
#define TRACE_EVENT_NESTABLE_ASYNC_INSTANT1(cat, name, id, a1n, a1v) \
	TRACEBPF__X1('n', 0, 0, id, TRACEBPF__NONAME, cat "\0" name, a1n, a1v)
#define TRACE_EVENT_NESTABLE_ASYNC_INSTANT2(cat, name, id, a1n, a1v, a2n, a2v) \
	TRACEBPF__X2('n', 0, 0, id, TRACEBPF__NONAME, cat "\0" name, a1n, a1v, a2n, a2v)

/* Flows keyed by (cat, name, id), bound to the slice enclosing each event. */
#define TRACE_EVENT_FLOW_BEGIN0(cat, name, id) \
	TRACEBPF__X0('s', 0, 0, id, TRACEBPF__NONAME, cat "\0" name)
#define TRACE_EVENT_FLOW_BEGIN1(cat, name, id, a1n, a1v) \
	TRACEBPF__X1('s', 0, 0, id, TRACEBPF__NONAME, cat "\0" name, a1n, a1v)
#define TRACE_EVENT_FLOW_STEP0(cat, name, id, step) \
	TRACEBPF__X0('t', 0, TRACEBPF__STEP, id, TRACEBPF__NONAME, cat "\0" name "\0" step)
#define TRACE_EVENT_FLOW_STEP1(cat, name, id, step, a1n, a1v) \
	TRACEBPF__X1('t', 0, TRACEBPF__STEP, id, TRACEBPF__NONAME, cat "\0" name "\0" step, a1n, a1v)
#define TRACE_EVENT_FLOW_END0(cat, name, id) \
	TRACEBPF__X0('f', 0, 0, id, TRACEBPF__NONAME, cat "\0" name)
#define TRACE_EVENT_FLOW_END1(cat, name, id, a1n, a1v) \
	TRACEBPF__X1('f', 0, 0, id, TRACEBPF__NONAME, cat "\0" name, a1n, a1v)

/* COPY variants: `name` is any const char * expression, copied by the tracer
 * at the hit (at most TRACEBPF_COPY_NAME_MAX - 1 bytes). Categories and
 * argument names stay literals; string argument values are always copied. */
#define TRACE_EVENT_COPY_BEGIN0(cat, name) \
	TRACEBPF__X0('B', 0, TRACEBPF__COPY, 0, TRACEBPF__CNAME(name), cat "\0")
#define TRACE_EVENT_COPY_BEGIN1(cat, name, a1n, a1v) \
	TRACEBPF__X1('B', 0, TRACEBPF__COPY, 0, TRACEBPF__CNAME(name), cat "\0", a1n, a1v)
#define TRACE_EVENT_COPY_BEGIN2(cat, name, a1n, a1v, a2n, a2v) \
	TRACEBPF__X2('B', 0, TRACEBPF__COPY, 0, TRACEBPF__CNAME(name), cat "\0", a1n, a1v, a2n, a2v)
#define TRACE_EVENT_COPY_END0(cat, name) \
	TRACEBPF__X0('E', 0, TRACEBPF__COPY, 0, TRACEBPF__CNAME(name), cat "\0")
#define TRACE_EVENT_COPY_END1(cat, name, a1n, a1v) \
	TRACEBPF__X1('E', 0, TRACEBPF__COPY, 0, TRACEBPF__CNAME(name), cat "\0", a1n, a1v)
#define TRACE_EVENT_COPY_END2(cat, name, a1n, a1v, a2n, a2v) \
	TRACEBPF__X2('E', 0, TRACEBPF__COPY, 0, TRACEBPF__CNAME(name), cat "\0", a1n, a1v, a2n, a2v)
#define TRACE_EVENT_COPY_INSTANT0(cat, name, scope) \
	TRACEBPF__X0('I', scope, TRACEBPF__COPY, 0, TRACEBPF__CNAME(name), cat "\0")
#define TRACE_EVENT_COPY_INSTANT1(cat, name, scope, a1n, a1v) \
	TRACEBPF__X1('I', scope, TRACEBPF__COPY, 0, TRACEBPF__CNAME(name), cat "\0", a1n, a1v)
#define TRACE_EVENT_COPY_INSTANT2(cat, name, scope, a1n, a1v, a2n, a2v) \
	TRACEBPF__X2('I', scope, TRACEBPF__COPY, 0, TRACEBPF__CNAME(name), cat "\0", a1n, a1v, a2n, a2v)
#define TRACE_EVENT_COPY_ASYNC_BEGIN0(cat, name, id) \
	TRACEBPF__X0('b', 0, TRACEBPF__COPY, id, TRACEBPF__CNAME(name), cat "\0")
#define TRACE_EVENT_COPY_ASYNC_BEGIN1(cat, name, id, a1n, a1v) \
	TRACEBPF__X1('b', 0, TRACEBPF__COPY, id, TRACEBPF__CNAME(name), cat "\0", a1n, a1v)
#define TRACE_EVENT_COPY_ASYNC_BEGIN2(cat, name, id, a1n, a1v, a2n, a2v) \
	TRACEBPF__X2('b', 0, TRACEBPF__COPY, id, TRACEBPF__CNAME(name), cat "\0", a1n, a1v, a2n, a2v)
#define TRACE_EVENT_COPY_ASYNC_END0(cat, name, id) \
	TRACEBPF__X0('e', 0, TRACEBPF__COPY, id, TRACEBPF__CNAME(name), cat "\0")
#define TRACE_EVENT_COPY_ASYNC_END1(cat, name, id, a1n, a1v) \
	TRACEBPF__X1('e', 0, TRACEBPF__COPY, id, TRACEBPF__CNAME(name), cat "\0", a1n, a1v)
#define TRACE_EVENT_COPY_ASYNC_END2(cat, name, id, a1n, a1v, a2n, a2v) \
	TRACEBPF__X2('e', 0, TRACEBPF__COPY, id, TRACEBPF__CNAME(name), cat "\0", a1n, a1v, a2n, a2v)
#define TRACE_EVENT_COPY_NESTABLE_ASYNC_BEGIN0(cat, name, id) \
	TRACE_EVENT_COPY_ASYNC_BEGIN0(cat, name, id)
#define TRACE_EVENT_COPY_NESTABLE_ASYNC_BEGIN1(cat, name, id, a1n, a1v) \
	TRACE_EVENT_COPY_ASYNC_BEGIN1(cat, name, id, a1n, a1v)
#define TRACE_EVENT_COPY_NESTABLE_ASYNC_END0(cat, name, id) \
	TRACE_EVENT_COPY_ASYNC_END0(cat, name, id)
#define TRACE_EVENT_COPY_NESTABLE_ASYNC_END1(cat, name, id, a1n, a1v) \
	TRACE_EVENT_COPY_ASYNC_END1(cat, name, id, a1n, a1v)
#define TRACE_EVENT_COPY_NESTABLE_ASYNC_INSTANT0(cat, name, id) \
	TRACEBPF__X0('n', 0, TRACEBPF__COPY, id, TRACEBPF__CNAME(name), cat "\0")

/* Guards: non-zero while a tracer records category `cat` (a literal) in
 * this process: the semaphore, then the category's cache word, as at a
 * site (docs/api.md). */
#define TRACE_EVENT_CATEGORY_ACTIVE(cat)                                      \
	__extension__({                                                       \
		static uint64_t tracebpf__catc;                               \
		TRACEBPF_ENABLED() && tracebpf__cat_on(&tracebpf__catc, "" cat); \
	})
#define TRACE_EVENT_CATEGORY_GROUP_ENABLED(cat, ret) \
	do { *(ret) = TRACE_EVENT_CATEGORY_ACTIVE(cat); } while (0)

/* Names and ordering of this process and of the calling thread. `name` is
 * any const char * (copied at the hit, at most 255 bytes); it wins over the
 * kernel's comm in the JSON. */
#define TRACE_THREAD_NAME(name)                                               \
	do {                                                                  \
		TRACEBPF__KEEP_NAME(0, TRACEBPF__CNAME(name));                \
		TRACEBPF__E1(TRACEBPF_PHASE_METADATA, 0, "__metadata",        \
			     "thread_name", "name", TRACEBPF__CNAME(name));   \
	} while (0)
#define TRACE_PROCESS_NAME(name)                                              \
	do {                                                                  \
		TRACEBPF__KEEP_NAME(1, TRACEBPF__CNAME(name));                \
		TRACEBPF__E1(TRACEBPF_PHASE_METADATA, 0, "__metadata",        \
			     "process_name", "name", TRACEBPF__CNAME(name));  \
	} while (0)
#ifdef TRACEBPF_NO_FAST_PATH
#define TRACEBPF__KEEP_NAME(process, name) ((void)(name))
#else
#define TRACEBPF__KEEP_NAME(process, name) tracebpf__keep_name(process, name)
#endif
#define TRACE_THREAD_SORT_INDEX(index) \
	TRACEBPF__E1(TRACEBPF_PHASE_METADATA, 0, "__metadata", "thread_sort_index", \
		     "sort_index", TRACEBPF__SCAST(int64_t, (index)))
#define TRACE_PROCESS_SORT_INDEX(index) \
	TRACEBPF__E1(TRACEBPF_PHASE_METADATA, 0, "__metadata", "process_sort_index", \
		     "sort_index", TRACEBPF__SCAST(int64_t, (index)))

/* ------------------------------------------------------------------------ */
/* Memory dumps: tracebpf/memdump.h                                         */

#include "memdump.h"

#endif /* TRACEBPF_TRACE_H */
