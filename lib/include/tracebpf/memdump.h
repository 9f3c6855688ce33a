/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tracebpf/memdump.h - part of tracebpf/trace.h, not to be included on its
 * own: memory dumps (tracebpf_memdump_register, _unregister,
 * _report_bytes, TRACE_MEMORY_DUMP). It uses trace.h's helpers and sites.
 */
#ifndef TRACEBPF_TRACE_H
#error "include <tracebpf/trace.h>, not <tracebpf/memdump.h>"
#endif
#ifndef TRACEBPF_MEMDUMP_H
#define TRACEBPF_MEMDUMP_H

/* Memory dumps (docs/api.md, "Memory dumps"). The application registers
 * dumpers; while a tracer records, each dump calls them, and each reports
 * byte totals per allocator ("subsystem/child") through `v` sites
 * (TRACEBPF_PHASE_MEMDUMP, tracebpf/site.h). The first registration starts
 * one thread per process, with every signal blocked, named "tracebpf-md
 * NN" (NN: the signal it waits for), that sleeps in rt_sigtimedwait() and
 * wakes only when the recorder signals it (rt_tgsigqueueinfo, SI_QUEUE,
 * the value the dump interval in ms; 0 stops) or, once an interval is
 * set, to make the next dump. With no tracer it never wakes, and no
 * dumper is called. The registry is one per process (a weak symbol of
 * default visibility, like a C++ inline variable): every object that
 * registers shares it. */

/* In C `static inline`: a translation unit that uses none of it emits
 * none of it (nor its sites), even at -O0 (a copy inlined into a caller
 * has sites of its own, which the recorder and the converter know by
 * their phase and name). */
#ifdef __cplusplus
#define TRACEBPF__MDFN TRACEBPF__FASTFN
#else
#define TRACEBPF__MDFN static inline __attribute__((unused))
#endif

#ifndef TRACEBPF_MEMDUMP_SIGNAL
#define TRACEBPF_MEMDUMP_SIGNAL 61   /* SIGRTMAX - 3 with glibc */
#endif
#define TRACEBPF_MEMDUMP_MAX 64      /* dumpers registered at once */

typedef void (*tracebpf_memdump_fn)(void *ctx);

#define TRACEBPF__MD_FREE    0
#define TRACEBPF__MD_CLAIMED 1
#define TRACEBPF__MD_ON      2
#define TRACEBPF__MD_LEAVING 3

struct tracebpf__md_slot {
	tracebpf_memdump_fn fn;
	void *ctx;
	int state;                  /* TRACEBPF__MD_* */
};

struct tracebpf__md {
	struct tracebpf__md_slot slot[TRACEBPF_MEMDUMP_MAX];
	int pid;                    /* the process whose thread runs */
	int owner;                  /* the thread in a dump, or 0 */
	int atfork;                 /* the fork handler is registered */
	uint32_t seq;               /* dumps begun in this process */
	uint64_t cur;               /* the dump in progress, 0: none */
	uint32_t reported;          /* allocators reported in it */
	uint32_t wakes;             /* times the thread woke */
};

#ifdef __cplusplus
extern "C" {
#endif
__attribute__((weak)) struct tracebpf__md tracebpf__md;
int tracebpf__pthread_create(unsigned long *, const void *, void *(*)(void *), void *)
	__asm__("pthread_create");
int tracebpf__pthread_detach(unsigned long) __asm__("pthread_detach");
#ifdef __cplusplus
}
#endif

#define TRACEBPF__SYS_READ         0
#define TRACEBPF__SYS_SIGPROCMASK  14
#define TRACEBPF__SYS_NANOSLEEP    35
#define TRACEBPF__SYS_SIGTIMEDWAIT 128
#define TRACEBPF__SYS_PRCTL        157

TRACEBPF__INLINE int tracebpf__gettid(void)
{
	return TRACEBPF__SCAST(int, tracebpf__sys(TRACEBPF__SYS_GETTID, 0, 0, 0, 0, 0, 0));
}

TRACEBPF__INLINE void tracebpf__sleep_ms(long ms)
{
	struct tracebpf__timespec t = { ms / 1000, (ms % 1000) * 1000000 };

	tracebpf__sys(TRACEBPF__SYS_NANOSLEEP, TRACEBPF__RCAST(long, &t), 0, 0, 0, 0, 0);
}

/* The process's resident bytes, from /proc/self/statm (0 if unreadable). */
TRACEBPF__MDFN uint64_t tracebpf__md_rss(void)
{
	char b[128];
	long fd = tracebpf__sys(TRACEBPF__SYS_OPEN, TRACEBPF__RCAST(long, "/proc/self/statm"),
				02000000 /* O_RDONLY | O_CLOEXEC */, 0, 0, 0, 0);
	long n = fd < 0 ? -1 : tracebpf__sys(TRACEBPF__SYS_READ, fd, TRACEBPF__RCAST(long, b),
					       sizeof(b) - 1, 0, 0, 0);
	uint64_t pages = 0;
	long i = 0;

	if (fd >= 0)
		tracebpf__sys(TRACEBPF__SYS_CLOSE, fd, 0, 0, 0, 0, 0);
	while (i < n && b[i] != ' ')   /* size, then resident */
		i++;
	for (i++; i < n && b[i] >= '0' && b[i] <= '9'; i++)
		pages = pages * 10 + TRACEBPF__SCAST(uint64_t, b[i] - '0');
	return pages * 4096;
}

/* One dump: the dumpers in turn, between its begin and end sites, in the
 * calling thread. One dump at a time per process: a dump waits up to
 * 50 ms for the one in progress, then makes none (a dumper that blocks
 * blocks no other thread); a dumper that asks for a dump gets none.
 * trigger: 0 periodic, 1 TRACE_MEMORY_DUMP(). */
TRACEBPF__MDFN void tracebpf__md_dump(unsigned trigger)
{
	struct tracebpf__md *m = &tracebpf__md;
	int self, want = 0, i;
	uint64_t id;

	if (!TRACE_EVENT_CATEGORY_ACTIVE("memory"))
		return;
	self = tracebpf__gettid();
	if (__atomic_load_n(&m->owner, __ATOMIC_RELAXED) == self)
		return;
	for (i = 0; !__atomic_compare_exchange_n(&m->owner, &want, self, 0, __ATOMIC_SEQ_CST,
						 __ATOMIC_RELAXED); i++) {
		if (i == 50)
			return;   /* another dump is stuck in a dumper: none */
		want = 0;
		tracebpf__sleep_ms(1);
	}
	id = TRACEBPF__SCAST(uint64_t, tracebpf__sys(TRACEBPF__SYS_GETPID, 0, 0, 0, 0, 0, 0)) << 32 |
	     ++m->seq;
	m->reported = 0;
	m->cur = id;
	TRACEBPF__X2(TRACEBPF_PHASE_MEMDUMP, 0, 0, id, TRACEBPF__NONAME, "memory\0dump",
		     "resident_set_bytes", tracebpf__md_rss(), "trigger", TRACEBPF__SCAST(uint64_t, trigger));
	for (i = 0; i < TRACEBPF_MEMDUMP_MAX; i++) {
		struct tracebpf__md_slot *s = &m->slot[i];

		if (__atomic_load_n(&s->state, __ATOMIC_SEQ_CST) == TRACEBPF__MD_ON)
			s->fn(s->ctx);
	}
	TRACEBPF__X1(TRACEBPF_PHASE_MEMDUMP, 0, 0, id, TRACEBPF__NONAME, "memory\0dump_end",
		     "allocators", TRACEBPF__SCAST(uint64_t, m->reported));
	m->cur = 0;
	__atomic_store_n(&m->owner, 0, __ATOMIC_RELEASE);
}

/* The dump an allocator's numbers belong to, counted: inside a dumper,
 * in the dumping thread; 0 elsewhere (ignored). */
TRACEBPF__MDFN uint64_t tracebpf__md_entry(void)
{
	struct tracebpf__md *m = &tracebpf__md;
	uint64_t id = m->cur;

	if (!id || __atomic_load_n(&m->owner, __ATOMIC_RELAXED) != tracebpf__gettid())
		return 0;
	m->reported++;
	return id;
}

/* An allocator's numbers (the two sites: with and without a count). */
TRACEBPF__MDFN void tracebpf__md_report2(const char *name, uint64_t bytes)
{
	uint64_t id = tracebpf__md_entry();

	if (id)
		TRACEBPF__X1(TRACEBPF_PHASE_MEMDUMP, 0, TRACEBPF__COPY, id,
			     TRACEBPF__CNAME(name), "memory\0", "size", bytes);
}

TRACEBPF__MDFN void tracebpf__md_report3(const char *name, uint64_t bytes, uint64_t objects)
{
	uint64_t id = tracebpf__md_entry();

	if (id)
		TRACEBPF__X2(TRACEBPF_PHASE_MEMDUMP, 0, TRACEBPF__COPY, id,
			     TRACEBPF__CNAME(name), "memory\0", "size", bytes, "objects", objects);
}

/* Waits up to ns (-1: no limit) for the signal. Its value: the interval
 * in ms (0: stop), or -1: one dump now, into *interval. Anything else
 * that wakes the thread (a kill() from elsewhere) is ignored. */
TRACEBPF__MDFN long tracebpf__md_wait(int64_t ns, long *interval)
{
	uint64_t set = 1ull << (TRACEBPF_MEMDUMP_SIGNAL - 1);
	struct tracebpf__timespec t = { TRACEBPF__SCAST(long, ns / 1000000000),
					TRACEBPF__SCAST(long, ns % 1000000000) };
	unsigned char info[128];
	int code, value;
	long r = tracebpf__sys(TRACEBPF__SYS_SIGTIMEDWAIT, TRACEBPF__RCAST(long, &set),
			       TRACEBPF__RCAST(long, info), ns >= 0 ? TRACEBPF__RCAST(long, &t) : 0,
			       8, 0, 0);

	__atomic_fetch_add(&tracebpf__md.wakes, 1, __ATOMIC_RELAXED);
	if (r != TRACEBPF_MEMDUMP_SIGNAL)
		return r;
	__builtin_memcpy(&code, info + 8, sizeof(code));    /* si_code */
	__builtin_memcpy(&value, info + 24, sizeof(value)); /* si_value */
	if (code == -1 /* SI_QUEUE */ && value >= -1)
		*interval = value;
	return r;
}

/* The dumping thread: waits for the recorder, then dumps every interval
 * while a tracer records. */
TRACEBPF__MDFN void *tracebpf__md_main(void *arg)
{
	char name[16] = "tracebpf-md ";
	long interval = 0, r;
	uint64_t next = 0, now;

	(void)arg;
	name[12] = TRACEBPF__SCAST(char, '0' + TRACEBPF_MEMDUMP_SIGNAL / 10);
	name[13] = TRACEBPF__SCAST(char, '0' + TRACEBPF_MEMDUMP_SIGNAL % 10);
	tracebpf__sys(TRACEBPF__SYS_PRCTL, 15 /* PR_SET_NAME */, TRACEBPF__RCAST(long, name), 0, 0, 0, 0);
	TRACEBPF__X1(TRACEBPF_PHASE_MEMDUMP, 0, 0, 0, TRACEBPF__NONAME, "__metadata\0dumper",
		     "signal", TRACEBPF__SCAST(int64_t, TRACEBPF_MEMDUMP_SIGNAL));
	for (;;) {
		now = tracebpf__now();
		r = tracebpf__md_wait(interval <= 0 ? -1 : next > now ? TRACEBPF__SCAST(int64_t, next - now) : 0,
				      &interval);
		if (r == TRACEBPF_MEMDUMP_SIGNAL) {
			if (interval != 0)
				tracebpf__md_dump(interval < 0);   /* the first at once */
			if (interval < 0)
				interval = 0;
			next = tracebpf__now() + TRACEBPF__SCAST(uint64_t, interval) * 1000000;
		} else if (interval > 0 && tracebpf__now() >= next) {
			if (!TRACEBPF_ENABLED()) {   /* the recorder is gone */
				interval = 0;
				continue;
			}
			tracebpf__md_dump(0);
			next += TRACEBPF__SCAST(uint64_t, interval) * 1000000;
			if ((now = tracebpf__now()) > next)   /* a slow dump: skip, never pile up */
				next = now + TRACEBPF__SCAST(uint64_t, interval) * 1000000;
		}
	}
	return 0;
}

/* The process's dumping thread, once per process (again in a child,
 * from the fork handler `child`, which clears m->pid first). */
TRACEBPF__MDFN void tracebpf__md_start_(void (*child)(void))
{
	struct tracebpf__md *m = &tracebpf__md;
	int pid, seen = 0;
	uint64_t all = ~0ull, old = 0;
	unsigned long th;

	if (__atomic_load_n(&m->pid, __ATOMIC_ACQUIRE))
		return;
	pid = TRACEBPF__SCAST(int, tracebpf__sys(TRACEBPF__SYS_GETPID, 0, 0, 0, 0, 0, 0));
	if (!__atomic_compare_exchange_n(&m->pid, &seen, pid, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		return;
	if (!__atomic_exchange_n(&m->atfork, 1, __ATOMIC_RELAXED))
		tracebpf__pthread_atfork(0, 0, child);
	/* the thread inherits a mask with every signal blocked */
	tracebpf__sys(TRACEBPF__SYS_SIGPROCMASK, 2 /* SIG_SETMASK */, TRACEBPF__RCAST(long, &all),
		      TRACEBPF__RCAST(long, &old), 8, 0, 0);
	if (!tracebpf__pthread_create(&th, 0, tracebpf__md_main, 0))
		tracebpf__pthread_detach(th);
	else
		__atomic_store_n(&m->pid, 0, __ATOMIC_RELEASE);
	tracebpf__sys(TRACEBPF__SYS_SIGPROCMASK, 2, TRACEBPF__RCAST(long, &old), 0, 8, 0, 0);
}

/* In a child, before fork() returns: no dump runs here, and the parent's
 * thread was not copied. */
TRACEBPF__MDFN void tracebpf__md_child(void)
{
	struct tracebpf__md *m = &tracebpf__md;
	int i;

	m->owner = 0;
	m->cur = 0;
	m->pid = 0;
	for (i = 0; i < TRACEBPF_MEMDUMP_MAX; i++)
		if (m->slot[i].state == TRACEBPF__MD_ON) {
			tracebpf__md_start_(tracebpf__md_child);
			return;
		}
}

/* Registers fn(ctx): 0, or -1 when TRACEBPF_MEMDUMP_MAX are. */
TRACEBPF__MDFN int tracebpf_memdump_register(tracebpf_memdump_fn fn, void *ctx)
{
	struct tracebpf__md *m = &tracebpf__md;
	int i;

	for (i = 0; i < TRACEBPF_MEMDUMP_MAX; i++) {
		struct tracebpf__md_slot *s = &m->slot[i];
		int free_ = TRACEBPF__MD_FREE;

		if (!__atomic_compare_exchange_n(&s->state, &free_, TRACEBPF__MD_CLAIMED, 0,
						 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		s->fn = fn;
		s->ctx = ctx;
		__atomic_store_n(&s->state, TRACEBPF__MD_ON, __ATOMIC_SEQ_CST);
		tracebpf__md_start_(tracebpf__md_child);
		return 0;
	}
	return -1;
}

/* Unregisters fn(ctx): once it returns, fn is not running and is not
 * called again (it waits for a dump in progress in another thread). 0,
 * or -1 when fn(ctx) was not registered. */
TRACEBPF__MDFN int tracebpf_memdump_unregister(tracebpf_memdump_fn fn, void *ctx)
{
	struct tracebpf__md *m = &tracebpf__md;
	int self = 0, i, owner;

	for (i = 0; i < TRACEBPF_MEMDUMP_MAX; i++) {
		struct tracebpf__md_slot *s = &m->slot[i];
		int on = TRACEBPF__MD_ON;

		if (s->fn != fn || s->ctx != ctx ||
		    !__atomic_compare_exchange_n(&s->state, &on, TRACEBPF__MD_LEAVING, 0,
						 __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			continue;
		while ((owner = __atomic_load_n(&m->owner, __ATOMIC_SEQ_CST)) &&
		       owner != (self ? self : (self = tracebpf__gettid())))
			tracebpf__sleep_ms(1);
		__atomic_store_n(&s->state, TRACEBPF__MD_FREE, __ATOMIC_RELEASE);
		return 0;
	}
	return -1;
}

/* tracebpf_memdump_report_bytes(name, bytes [, objects]): inside a
 * dumper, one allocator's bytes (and object count). */
#define TRACEBPF__MD_PICK(a, b, c, f, ...) f
#define tracebpf_memdump_report_bytes(...)                                    \
	TRACEBPF__MD_PICK(__VA_ARGS__, tracebpf__md_report3, tracebpf__md_report2, 0)(__VA_ARGS__)

/* One dump now, in the calling thread, while a tracer records. */
#define TRACE_MEMORY_DUMP()                                                   \
	do {                                                                  \
		if (__builtin_expect(TRACEBPF_ENABLED(), 0))                  \
			tracebpf__md_dump(1);                                 \
	} while (0)

#endif /* TRACEBPF_MEMDUMP_H */
