/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tracebpf/fast_producer.h - part of tracebpf/trace.h, not to be included
 * on its own: the fast path's producer (docs/fast-path.md, "The fast path").
 * A thread takes a ring the recorder made ahead (a spare), writes its
 * events into it in batches by the protocol of tracebpf/fast_ring.h, waits
 * for the drain when the ring is full, grows it when the wait runs out,
 * and falls back to its probe when it has no ring. It uses trace.h's
 * helpers (tracebpf__sys, tracebpf__now, tracebpf__hit, the site macros)
 * and gives trace.h TRACEBPF__FAST and TRACEBPF__FAST_ID.
 */
#ifndef TRACEBPF_TRACE_H
#error "include <tracebpf/trace.h>, not <tracebpf/fast_producer.h>"
#endif
#ifndef TRACEBPF_FAST_PRODUCER_H
#define TRACEBPF_FAST_PRODUCER_H

#define TRACEBPF__FAST_NONE  0u
#define TRACEBPF__FAST_READY 1u
#define TRACEBPF__FAST_SEEN  1024u   /* sites whose descriptor was written */
#define TRACEBPF__NAME_KEPT  64u     /* bytes of a name kept for a late start */
#define TRACEBPF__FAST_LOOK_NS 100000ull    /* a missing switch, looked for again */
#define TRACEBPF__FAST_WAKE_NS 1000000ull   /* a thread's "drain now", at most once per */
#define TRACEBPF__FAST_BATCH_BYTES 4096u    /* a batch, its header included, at most
					     * (and a quarter of the ring) */

/* One per thread and object (weak + hidden, like the semaphore). */
struct tracebpf__fast_thread {
	unsigned char *data;               /* ring data, mapped twice */
	unsigned long *prod;               /* producer position */
	const unsigned long *cons;         /* consumer position (read-only) */
	unsigned long mask;                /* data bytes - 1 */
	unsigned long pos;                 /* our producer position */
	unsigned long cons_seen;           /* the consumer position last read */
	unsigned long stalled;             /* + 1: the consumer position when a wait
					    * for the drain ran out (0: none) */
	uint32_t *batch;                   /* the open batch's header, or 0 */
	uint32_t boff;                     /* its next event's offset in its payload */
	uint32_t bend;                     /* offsets from here on are its end */
	volatile struct tracebpf_fast_ctl *ctl;
	unsigned long map_len;             /* of the mapping at prod */
	uint64_t retry;                    /* next look for the process's switch, ns */
	uint64_t asked;                    /* next request to the recorder, ns */
	uint64_t woke;                     /* next "drain now" to it, ns */
	uint32_t state;                    /* TRACEBPF__FAST_* */
	uint32_t busy;                     /* in a write (signal handlers) */
	uint32_t dtor;                     /* thread-exit unmap registered */
	uint32_t named;                    /* the tag its name was written in */
	char name[TRACEBPF__NAME_KEPT];    /* TRACE_THREAD_NAME's, kept */
};

/* One per object. */
struct tracebpf__fast_proc {
	volatile struct tracebpf_fast_ctl *ctl;
	int pid;                           /* whose ctl */
	int lock;
	int init;                          /* fork handlers registered */
	uint32_t tag;                      /* sites are written once per tag */
	uint32_t named;                    /* the tag its name was written in */
	volatile struct tracebpf_cats *cats;   /* in ctl, when its switch has them */
	uint32_t batch;                    /* its recorder reads batches */
	uint64_t wait_ns;                  /* a full ring's wait for the drain, at
					    * most (its switch's wait_us) */
	uint64_t cat_retry;                /* next look for a switch, for them */
	struct tracebpf_cats cats_fork;    /* the parent's, in a child of fork
					    * until it has its own switch */
	char name[TRACEBPF__NAME_KEPT];    /* TRACE_PROCESS_NAME's, kept */
	uint64_t seen[TRACEBPF__FAST_SEEN];
};

#ifdef __cplusplus
extern "C" {
#endif
__attribute__((weak, visibility("hidden")))
__thread struct tracebpf__fast_thread tracebpf__fast_tls;
__attribute__((weak, visibility("hidden")))
struct tracebpf__fast_proc tracebpf__fast_proc;

#ifdef __cplusplus
}
#endif

TRACEBPF__INLINE uint32_t tracebpf__cpu(void)
{
	uint32_t cpu = UINT32_MAX;

	if (&tracebpf__rseq_size && tracebpf__rseq_size)
		__asm__("movl %%fs:4(%1), %0" : "=r"(cpu) : "r"(tracebpf__rseq_offset));
	return cpu;
}

/* v in base 10 or 16 at buf + n; the new n. */
TRACEBPF__FASTFN int tracebpf__fast_num(char *buf, int n, uint64_t v, unsigned base)
{
	char tmp[24];
	int i = 0;

	do {
		tmp[i++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (i)
		buf[n++] = tmp[--i];
	return n;
}

/* "<root>/<pid>/<leaf>" into buf (64 bytes). */
TRACEBPF__FASTFN void tracebpf__fast_path(char *buf, long pid, const char *leaf)
{
	static const char root[] = TRACEBPF_FAST_ROOT "/";
	int i = 0, n = 0;

	while (root[i])
		buf[n++] = root[i++];
	n = tracebpf__fast_num(buf, n, TRACEBPF__SCAST(uint64_t, pid), 10);
	buf[n++] = '/';
	for (i = 0; leaf[i] && n < 63; i++)
		buf[n++] = leaf[i];
	buf[n] = 0;
}

/* Maps a pinned map of ours: BPF_OBJ_GET, BPF_OBJ_GET_INFO_BY_FD (type and
 * size), mmap. NULL when there is none, or not of `type`. The fd is opened
 * read-write even for a read-only mapping: a shared mapping of a file
 * opened read-only is not VM_SHARED, which BPF maps refuse. */
TRACEBPF__FASTFN void *tracebpf__fast_map(const char *path, uint32_t type, int rdonly,
					  unsigned long *size, unsigned long off, int data)
{
	uint64_t get[3] = { TRACEBPF__RCAST(uintptr_t, path), 0, 0 };
	uint32_t info[20] = { 0 };
	uint64_t q[2];
	long fd, p, len;

	fd = tracebpf__sys(TRACEBPF__SYS_BPF, 7 /* BPF_OBJ_GET */,
			   TRACEBPF__RCAST(long, get), sizeof(get), 0, 0, 0);
	if (fd < 0)
		return 0;
	q[0] = TRACEBPF__SCAST(uint64_t, fd) | (TRACEBPF__SCAST(uint64_t, sizeof(info)) << 32);
	q[1] = TRACEBPF__RCAST(uintptr_t, info);
	p = -1;
	if (tracebpf__sys(TRACEBPF__SYS_BPF, 15 /* BPF_OBJ_GET_INFO_BY_FD */,
			  TRACEBPF__RCAST(long, q), sizeof(q), 0, 0, 0) == 0 &&
	    info[0] == type) {
		*size = info[4];   /* max_entries */
		if (type == 2)     /* the switch: its value, whole pages */
			*size = (info[3] + 4095u) & ~4095u;
		len = TRACEBPF__SCAST(long, type == 2 ? *size : 4096 + (data ? 2 * *size : 0));
		p = tracebpf__sys(TRACEBPF__SYS_MMAP, 0, len, rdonly ? 1 : 3, 1 /* MAP_SHARED */,
				  fd, TRACEBPF__SCAST(long, off));
		if (p < 0 && p > -4096)
			p = -1;
		else
			tracebpf__sys(TRACEBPF__SYS_MADVISE, p, len, 10 /* MADV_DONTFORK */, 0, 0, 0);
	}
	tracebpf__sys(TRACEBPF__SYS_CLOSE, fd, 0, 0, 0, 0, 0);
	return p == -1 ? 0 : TRACEBPF__RCAST(void *, p);
}

/* The open batch ends here: the kernel may step over it now. */
TRACEBPF__INLINE void tracebpf__fast_close(struct tracebpf__fast_thread *t)
{
	if (t->batch)
		__atomic_store_n(t->batch, t->bend + 8u, __ATOMIC_RELEASE);
	t->batch = 0;
	t->boff = 0;
	t->bend = 0;
}

TRACEBPF__FASTFN void tracebpf__fast_unmap(struct tracebpf__fast_thread *t)
{
	tracebpf__fast_close(t);
	if (t->prod) {
		tracebpf__sys(TRACEBPF__SYS_MUNMAP, TRACEBPF__RCAST(long, t->prod),
			      TRACEBPF__SCAST(long, t->map_len), 0, 0, 0, 0);
		tracebpf__sys(TRACEBPF__SYS_MUNMAP, TRACEBPF__RCAST(long, t->cons), 4096, 0, 0, 0, 0);
	}
	t->prod = 0;
	t->cons = 0;
	t->data = 0;
	t->state = TRACEBPF__FAST_NONE;
}

/* At thread exit (registered with the object's DSO handle, so a dlclose
 * waits for it). */
TRACEBPF__FASTFN void tracebpf__fast_thread_exit(void *arg)
{
	struct tracebpf__fast_thread *t =
		TRACEBPF__SCAST(struct tracebpf__fast_thread *, arg);

	t->busy = 1;   /* nothing of this thread writes again */
	tracebpf__fast_unmap(t);
}

/* In the child of fork: the rings were not inherited (MADV_DONTFORK), they
 * belong to the parent's threads. The child starts over with its own, and
 * judges categories by its parent's rules until then. */
TRACEBPF__FASTFN void tracebpf__fast_atfork_child(void)
{
	struct tracebpf__fast_thread *t = &tracebpf__fast_tls;

	t->prod = 0;
	t->cons = 0;
	t->data = 0;
	t->batch = 0;   /* in the parent's ring, not mapped here */
	t->boff = 0;
	t->bend = 0;
	t->state = TRACEBPF__FAST_NONE;
	t->retry = 0;
	t->asked = 0;
	t->busy = 0;
	tracebpf__fast_proc.ctl = 0;
	tracebpf__fast_proc.pid = 0;
	tracebpf__fast_proc.lock = 0;
	tracebpf__fast_proc.cats = tracebpf__fast_proc.cats_fork.gen ?
				   &tracebpf__fast_proc.cats_fork : 0;
	tracebpf__fast_proc.cat_retry = 0;
	tracebpf__fast_proc.tag++;
}

/* The session's switch of this process, mapped once per process and
 * session (an ended session's page stays mapped: other threads may still
 * read it). */
TRACEBPF__FASTFN volatile struct tracebpf_fast_ctl *tracebpf__fast_ctl(long pid)
{
	struct tracebpf__fast_proc *p = &tracebpf__fast_proc;
	volatile struct tracebpf_fast_ctl *c = p->ctl;
	unsigned long size;
	char path[64];

	if (c && p->pid == pid && c->live == TRACEBPF_FAST_LIVE)
		return c;
	if (__atomic_exchange_n(&p->lock, 1, __ATOMIC_ACQUIRE)) {
		/* another thread is mapping it (a few system calls): the
		 * threads that start together all take their ring at once.
		 * They sleep on the lock (a futex): 500 threads spinning on 2
		 * CPUs kept the one mapping it off the CPU for most of a
		 * second. */
		while (__atomic_load_n(&p->lock, __ATOMIC_ACQUIRE))
			tracebpf__sys(TRACEBPF__SYS_FUTEX, TRACEBPF__RCAST(long, &p->lock),
				      128 /* FUTEX_WAIT_PRIVATE */, 1, 0, 0, 0);
		c = __atomic_load_n(&p->ctl, __ATOMIC_ACQUIRE);
		return c && p->pid == pid && c->live == TRACEBPF_FAST_LIVE ? c : 0;
	}
	tracebpf__fast_path(path, pid, "ctl");
	c = TRACEBPF__SCAST(volatile struct tracebpf_fast_ctl *,
			    tracebpf__fast_map(path, 2 /* ARRAY */, 0, &size, 0, 0));
	if (c && c->live == TRACEBPF_FAST_LIVE) {
		p->tag++;   /* a new session: write every site's descriptor again,
			     * judge every site's category again */
		p->pid = TRACEBPF__SCAST(int, pid);
		p->cats = size >= sizeof(struct tracebpf_fast_ctl) ? &c->cats : 0;
		p->batch = size >= sizeof(struct tracebpf_fast_ctl) &&
			   (c->features & TRACEBPF_FAST_F_BATCH);
		p->wait_ns = size >= sizeof(struct tracebpf_fast_ctl) ?
			     TRACEBPF__SCAST(uint64_t, c->wait_us) * 1000u : 0;
		__atomic_store_n(&p->ctl, c, __ATOMIC_RELEASE);
	} else {
		if (c)
			tracebpf__sys(TRACEBPF__SYS_MUNMAP, TRACEBPF__RCAST(long, c),
				      TRACEBPF__SCAST(long, size), 0, 0, 0, 0);
		c = 0;
	}
	__atomic_store_n(&p->lock, 0, __ATOMIC_RELEASE);
	tracebpf__sys(TRACEBPF__SYS_FUTEX, TRACEBPF__RCAST(long, &p->lock),
		      129 /* FUTEX_WAKE_PRIVATE */, 0x7fffffff, 0, 0, 0);
	return c;
}

/* Before fork: the category rules, copied (the switch is not inherited),
 * so that the child's sites judge by them until it has its own switch
 * (the recorder makes it when it sees the fork); gen 0 when they cannot
 * be read. */
TRACEBPF__FASTFN void tracebpf__fast_atfork_prepare(void)
{
	struct tracebpf__fast_proc *p = &tracebpf__fast_proc;
	volatile struct tracebpf_cats *k = p->cats;
	uint32_t gen = k ? __atomic_load_n(&k->gen, __ATOMIC_ACQUIRE) : 0, len, i;

	p->cats_fork.gen = 0;
	if (!k && TRACEBPF_ENABLED()) {   /* traced, and no site hit yet */
		uint64_t now = tracebpf__now();

		if (now >= p->cat_retry) {
			p->cat_retry = now + TRACEBPF__FAST_LOOK_NS;
			tracebpf__fast_ctl(tracebpf__sys(TRACEBPF__SYS_GETPID, 0, 0, 0, 0, 0, 0));
			k = p->cats;
			gen = k ? __atomic_load_n(&k->gen, __ATOMIC_ACQUIRE) : 0;
		}
	}
	if (!gen || (gen & 1) || (len = k->len) > TRACEBPF_CATS_BYTES)
		return;
	for (i = 0; i < len; i++)
		p->cats_fork.rules[i] = k->rules[i];
	p->cats_fork.len = len;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&k->gen, __ATOMIC_RELAXED) == gen)
		p->cats_fork.gen = gen;
}

/* Once per object, at load: the fork handlers, before any fork (a
 * handler registered from within fork's prepare step would deadlock). */
__attribute__((constructor, unused)) static void tracebpf__fast_init(void)
{
	if (!__atomic_exchange_n(&tracebpf__fast_proc.init, 1, __ATOMIC_RELAXED))
		tracebpf__pthread_atfork(tracebpf__fast_atfork_prepare, 0,
					 tracebpf__fast_atfork_child);
}

/* Asks the recorder for this thread's ring: the `tracebpf:ring` probe,
 * whose argument names the object (its semaphore's address, bit 0 set
 * for "drain it now", TRACEBPF_FAST_F_WAKE). */
TRACEBPF__INLINE void tracebpf__fast_request_key(uintptr_t key)
{
	__asm__ __volatile__(TRACEBPF__ASM_NOP
			     TRACEBPF__ASM_NOTE_("ring", "8@%[key]") TRACEBPF__ASM_BASE
			     :
			     : [key] "D"(key)
			     : "memory");
}

TRACEBPF__INLINE void tracebpf__fast_request(void)
{
	tracebpf__fast_request_key(TRACEBPF__RCAST(uintptr_t, &tracebpf_event_semaphore));
}

/* "<root>/<pid>/<c><n>": spare n of a pool ('f' pool 0, 'g' pool 1). */
TRACEBPF__FASTFN void tracebpf__fast_spare(char *buf, long pid, char c, uint32_t n)
{
	char leaf[16];
	int k;

	leaf[0] = c;
	k = tracebpf__fast_num(leaf, 1, n, 10);
	leaf[k] = 0;
	tracebpf__fast_path(buf, pid, leaf);
}

/* Maps the ring pinned at path into t's ring fields (t is left as it is
 * when it cannot be). 1 when mapped. */
TRACEBPF__FASTFN int tracebpf__fast_mapring(struct tracebpf__fast_thread *t, const char *path)
{
	unsigned long size = 0;
	void *cons, *prod;

	cons = tracebpf__fast_map(path, 31 /* USER_RINGBUF */, 1, &size, 0, 0);
	if (!cons)
		return 0;
	prod = tracebpf__fast_map(path, 31, 0, &size, 4096, 1);
	if (!prod || size < 4096 || (size & (size - 1))) {
		tracebpf__sys(TRACEBPF__SYS_MUNMAP, TRACEBPF__RCAST(long, cons), 4096, 0, 0, 0, 0);
		if (prod)
			tracebpf__sys(TRACEBPF__SYS_MUNMAP, TRACEBPF__RCAST(long, prod),
				      TRACEBPF__SCAST(long, 4096 + 2 * size), 0, 0, 0, 0);
		return 0;
	}
	t->cons = TRACEBPF__SCAST(const unsigned long *, cons);
	t->prod = TRACEBPF__SCAST(unsigned long *, prod);
	t->data = TRACEBPF__SCAST(unsigned char *, prod) + 4096;
	t->map_len = 4096 + 2 * size;
	t->mask = size - 1;
	t->pos = __atomic_load_n(t->prod, __ATOMIC_ACQUIRE);
	t->cons_seen = __atomic_load_n(t->cons, __ATOMIC_ACQUIRE);
	t->stalled = 0;
	return 1;   /* no batch is open: the thread had no ring, or closed it */
}

/* Takes the next spare of pool `pool` (1: only one bigger than t's ring):
 * claims it, maps it into t, and says whose it is (thread 0: nobody's, it
 * could not be mapped). 1 when mapped. */
TRACEBPF__FASTFN int tracebpf__fast_claim(struct tracebpf__fast_thread *t,
					  volatile struct tracebpf_fast_ctl *c, long pid, int pool)
{
	volatile struct tracebpf_fast_pool *p = &c->pool[pool];
	volatile struct tracebpf_fast_claim *cl;
	uint32_t n = __atomic_load_n(&p->taken, __ATOMIC_ACQUIRE);
	char path[64];
	int mapped;

	do {
		if (n >= __atomic_load_n(&p->made, __ATOMIC_ACQUIRE) ||
		    (pool && p->size <= t->mask + 1))
			return 0;
	} while (!__atomic_compare_exchange_n(&p->taken, &n, n + 1, 0, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	/* mapped before the claim is filled: the recorder unpins a spare
	 * once it has read whose it is */
	tracebpf__fast_spare(path, pid, pool ? 'g' : 'f', n);
	mapped = tracebpf__fast_mapring(t, path);
	cl = pool ? &c->gclaim[n % TRACEBPF_FAST_GCLAIMS] : &c->claim[n % TRACEBPF_FAST_CLAIMS];
	cl->tid = mapped ? TRACEBPF__SCAST(uint32_t, tracebpf__sys(TRACEBPF__SYS_GETTID, 0, 0, 0,
								   0, 0, 0)) : 0;
	cl->key = TRACEBPF__RCAST(uintptr_t, &tracebpf_event_semaphore);
	__atomic_store_n(&cl->seq, n + 1, __ATOMIC_RELEASE);
	return mapped;
}

#define TRACEBPF__FAST_ASK_NS  10000000ull  /* a request, made again */

/* Asks the recorder for a ring (a spare, a bigger one, the process's
 * switch), at most every TRACEBPF__FAST_ASK_NS per thread: 500 threads
 * asking every millisecond kept the recorder from making what they asked
 * for (a request lost with a full ring is made again). */
TRACEBPF__INLINE void tracebpf__fast_ask(struct tracebpf__fast_thread *t, uint64_t now)
{
	if (now < t->asked)
		return;
	t->asked = now + TRACEBPF__FAST_ASK_NS;
	tracebpf__fast_request();
}

TRACEBPF__INLINE int tracebpf__fast_event_str(const void *site, uint64_t a0, uint64_t a1,
					      unsigned strs);

/* One name through the probe: one probe site in each object for both. */
TRACEBPF__FASTFN void tracebpf__name_hit(const void *site, unsigned size, uint64_t a0)
{
	tracebpf__hit(site, size, a0, 0);
}

/* A name set while nobody traced, or before this session, is written again
 * once per session (as the Perfetto SDK writes its track names at every
 * session start): the thread's own name by each thread, the process's by
 * the first thread, into the ring when the thread takes one, else through
 * the probe (probe: a thread that found its session's switch and got no
 * ring, as under `record --no-fast-path`; it is in a write, so the probe
 * is called directly). */
TRACEBPF__FASTFN void tracebpf__fast_names(struct tracebpf__fast_thread *t, int probe)
{
	struct tracebpf__fast_proc *p = &tracebpf__fast_proc;
	uint32_t tag = p->tag, named = t->named;

	t->named = tag;
	TRACEBPF__SITE(tracebpf__thread_name, TRACEBPF_PHASE_METADATA, 0, 1, TRACEBPF_ARG_STR,
		       TRACEBPF_ARG_NONE, "__metadata\0thread_name\0name");
	TRACEBPF__SITE(tracebpf__process_name, TRACEBPF_PHASE_METADATA, 0, 1, TRACEBPF_ARG_STR,
		       TRACEBPF_ARG_NONE, "__metadata\0process_name\0name");
	if (t->name[0] && named != tag) {
		uint64_t a0 = TRACEBPF__RCAST(uintptr_t, t->name);

		if (probe)
			tracebpf__name_hit(&tracebpf__thread_name, tracebpf__thread_name.h.size, a0);
		else
			tracebpf__fast_event_str(&tracebpf__thread_name, a0, 0, 1);
	}
	if (p->name[0] && __atomic_exchange_n(&p->named, tag, __ATOMIC_RELAXED) != tag) {
		uint64_t a0 = TRACEBPF__RCAST(uintptr_t, p->name);

		if (probe)
			tracebpf__name_hit(&tracebpf__process_name, tracebpf__process_name.h.size,
					   a0);
		else
			tracebpf__fast_event_str(&tracebpf__process_name, a0, 0, 1);
	}
}

/* TRACE_THREAD_NAME (process 0) and TRACE_PROCESS_NAME (1) keep the name
 * for tracebpf__fast_names, traced or not (cut to TRACEBPF__NAME_KEPT). */
TRACEBPF__FASTFN void tracebpf__keep_name(int process, const char *name)
{
	char *d = process ? tracebpf__fast_proc.name : tracebpf__fast_tls.name;
	unsigned i = 0;

	for (; name && name[i] && i < TRACEBPF__NAME_KEPT - 1; i++)
		d[i] = name[i];
	d[i] = 0;
}

/* Category of a site judged afresh (tracebpf__cat_on): by the rules in the
 * process's switch, read as a seqlock; the result is kept in the site's
 * cache word with the rules' generation and the object's tag (so a new
 * session judges again). 1 without keeping it when there are no rules to
 * read (no switch yet, or one of an older recorder): the event then goes
 * out, and the converter judges it by the rules in the trace file. A child
 * of fork judges by its parent's rules until it has its switch. The
 * switch is looked for at most every TRACEBPF__FAST_LOOK_NS per object. */
TRACEBPF__FASTFN int tracebpf__cat_judge(uint64_t *cache, const char *cat)
{
	struct tracebpf__fast_proc *p = &tracebpf__fast_proc;
	volatile struct tracebpf_fast_ctl *c = __atomic_load_n(&p->ctl, __ATOMIC_ACQUIRE);
	volatile struct tracebpf_cats *k = p->cats;
	uint32_t gen, len, tries;
	uint64_t now;
	int on;

	if (!c || !k || c->live != TRACEBPF_FAST_LIVE) {
		now = tracebpf__now();
		if (now >= p->cat_retry) {
			p->cat_retry = now + TRACEBPF__FAST_LOOK_NS;
			if (tracebpf__fast_ctl(tracebpf__sys(TRACEBPF__SYS_GETPID, 0, 0, 0, 0, 0, 0)))
				k = p->cats;
		}
		if (!k)   /* else the parent's rules (a child of fork), or an
			   * ended session's (odd: not judged by) */
			return 1;
	}
	for (tries = 0; tries < 16; tries++) {
		gen = __atomic_load_n(&k->gen, __ATOMIC_ACQUIRE);
		if (!gen || (gen & 1))
			continue;
		len = k->len;
		on = tracebpf_cats_on(k->rules, len, cat);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&k->gen, __ATOMIC_RELAXED) == gen) {
			*cache = TRACEBPF__SCAST(uint64_t, p->tag) << 32 | gen | TRACEBPF__SCAST(uint64_t, on);
			return on;
		}
	}
	return 1;
}

/* Whether a site of category cat records: its cache word (a static per
 * site) against the rules' generation in the switch, two loads and a
 * compare; judged afresh when they differ. */
TRACEBPF__INLINE int tracebpf__cat_on(uint64_t *cache, const char *cat)
{
	volatile struct tracebpf_cats *k = tracebpf__fast_proc.cats;
	uint64_t v = *cache;

	if (__builtin_expect(k != 0, 1) &&
	    __builtin_expect((v & ~1ull) == (TRACEBPF__SCAST(uint64_t, tracebpf__fast_proc.tag) << 32 |
					       k->gen), 1))
		return TRACEBPF__SCAST(int, v & 1);
	return tracebpf__cat_judge(cache, cat);
}

/* A thread without a usable ring takes a spare of its process, at its
 * first event or at the first event after the recorder made one. Until the
 * process has a switch (the recorder makes it at attach, at the fork of a
 * traced process, or when asked), the thread looks for it at most every
 * TRACEBPF__FAST_LOOK_NS. 1 when ready. */
TRACEBPF__FASTFN int tracebpf__fast_setup(struct tracebpf__fast_thread *t)
{
	struct tracebpf__fast_proc *p = &tracebpf__fast_proc;
	volatile struct tracebpf_fast_ctl *c;
	uint64_t now = 0;
	long pid;

	if (t->state == TRACEBPF__FAST_READY)
		tracebpf__fast_unmap(t);   /* its session ended */
	if (t->busy)
		return 0;
	t->busy = 1;
	c = __atomic_load_n(&p->ctl, __ATOMIC_ACQUIRE);
	pid = p->pid;
	now = tracebpf__now();
	if (!c || c->live != TRACEBPF_FAST_LIVE) {
		c = 0;
		if (now >= t->retry) {
			t->retry = now + TRACEBPF__FAST_LOOK_NS;
			pid = tracebpf__sys(TRACEBPF__SYS_GETPID, 0, 0, 0, 0, 0, 0);
			tracebpf__fast_ask(t, now);
			c = tracebpf__fast_ctl(pid);
		}
	}
	if (c && tracebpf__fast_claim(t, c, pid, 0)) {
		t->ctl = c;
		if (!t->dtor) {
			t->dtor = 1;
			tracebpf__thread_atexit(tracebpf__fast_thread_exit, t,
						&tracebpf__dso_handle);
		}
		t->state = TRACEBPF__FAST_READY;
		t->busy = 0;
		tracebpf__fast_names(t, 0);
		return 1;
	}
	if (c) {
		if (__builtin_expect(t->named != p->tag, 0))
			tracebpf__fast_names(t, 1);
		tracebpf__fast_ask(t, now);
	}
	t->busy = 0;
	return 0;
}

TRACEBPF__INLINE uint32_t *tracebpf__fast_reserve(struct tracebpf__fast_thread *t,
						  uint32_t len);

/* t's ring has no room for a sample of len bytes: the thread waits for the
 * drain to leave room for a batch (or that sample), up to its switch's
 * wait_us from now, after asking the recorder to drain now (the
 * `tracebpf:ring` probe with the key's bit 0 set, at most once per
 * TRACEBPF__FAST_WAKE_NS). The drain moves the consumer position every
 * 256 KiB it reads, while the probe costs a microsecond or two an event:
 * waiting for room
 * costs the thread less than sending the events the drain frees room
 * for to the probes, and less than new pages would on a host where they
 * are dear. A wait that runs out is not made again until the position has
 * moved, so a recorder that is not draining costs one wait, not one per
 * event. 1 when there is room. */
TRACEBPF__FASTFN int tracebpf__fast_wait(struct tracebpf__fast_thread *t, uint32_t len,
					 uint64_t now)
{
	unsigned long size = t->mask + 1, want = size / 4, cons;
	uint64_t wait = tracebpf__fast_proc.wait_ns, end = now + wait;
	unsigned i;

	if (want > TRACEBPF__FAST_BATCH_BYTES)
		want = TRACEBPF__FAST_BATCH_BYTES;
	if (want < len + 24u)
		want = len + 24u;
	if (want > size)
		want = len + 8u;
	cons = __atomic_load_n(t->cons, __ATOMIC_ACQUIRE);
	if (!wait || t->stalled == cons + 1)
		return 0;
	if (now >= t->woke) {
		t->woke = now + TRACEBPF__FAST_WAKE_NS;
		tracebpf__fast_request_key(TRACEBPF__RCAST(uintptr_t, &tracebpf_event_semaphore) | 1u);
	}
	for (i = 1; size - (t->pos - cons) < want; i++) {
		__builtin_ia32_pause();
		if (!(i & 255) && tracebpf__now() >= end) {
			t->stalled = cons + 1;
			return 0;
		}
		cons = __atomic_load_n(t->cons, __ATOMIC_ACQUIRE);
	}
	t->cons_seen = cons;
	t->stalled = 0;
	return 1;
}

/* t's ring is full: the thread waits for the drain (tracebpf__fast_wait).
 * If that runs out, a bigger spare, if the recorder made one, becomes its
 * ring (the full one is left to the drain), and the sample goes there; else
 * NULL (the event takes the probe, and the recorder is asked for a bigger
 * ring). A ring grows for a drain that stalled, not for one that is slower
 * than the thread: new pages cost more than waiting for old ones. */
TRACEBPF__FASTFN uint32_t *tracebpf__fast_grow(struct tracebpf__fast_thread *t, uint32_t len)
{
	volatile struct tracebpf_fast_ctl *c = t->ctl;
	uintptr_t key = TRACEBPF__RCAST(uintptr_t, &tracebpf_event_semaphore);
	unsigned long *prod, map_len;
	const unsigned long *cons;

	if (tracebpf__fast_wait(t, len, tracebpf__now()))
		return tracebpf__fast_reserve(t, len);
	prod = t->prod;
	cons = t->cons;
	map_len = t->map_len;
	if (__atomic_load_n(&c->pool[1].made, __ATOMIC_ACQUIRE) <= c->pool[1].taken ||
	    !tracebpf__fast_claim(t, c, tracebpf__fast_proc.pid, 1)) {
		tracebpf__fast_ask(t, tracebpf__now());
		return 0;
	}
	tracebpf__sys(TRACEBPF__SYS_MUNMAP, TRACEBPF__RCAST(long, prod),
		      TRACEBPF__SCAST(long, map_len), 0, 0, 0, 0);
	tracebpf__sys(TRACEBPF__SYS_MUNMAP, TRACEBPF__RCAST(long, cons), 4096, 0, 0, 0, 0);
	/* wakes the recorder, to drain the full ring it left; a recorder whose
	 * threads wait takes that as "drain now" (bit 0), not as a request for
	 * the next size, which only a wait that runs out on this ring makes */
	tracebpf__fast_request_key(tracebpf__fast_proc.wait_ns ? key | 1u : key);
	return tracebpf__fast_reserve(t, len);
}

/* Room for a sample of len bytes (a multiple of 8) of its own, marked
 * BUSY and published; NULL when the ring is full (the event takes the slow
 * path). The consumer position is read again only when the last one read
 * leaves no room: the drain, which writes it, then keeps its cache line,
 * and the thread does not wait for it. The position only grows, so an old
 * one only underestimates the room. */
TRACEBPF__FASTFN uint32_t *tracebpf__fast_sample(struct tracebpf__fast_thread *t, uint32_t len)
{
	unsigned long pos = t->pos, total = len + 8u;
	uint32_t *hdr;

	if (pos - t->cons_seen + total > t->mask + 1) {
		t->cons_seen = __atomic_load_n(t->cons, __ATOMIC_ACQUIRE);
		if (pos - t->cons_seen + total > t->mask + 1)
			return tracebpf__fast_grow(t, len);
	}
	hdr = TRACEBPF__RCAST(uint32_t *, t->data + (pos & t->mask));
	hdr[0] = len | TRACEBPF_FAST_BUSY;
	hdr[1] = 0;
	t->pos = pos + total;
	__atomic_store_n(t->prod, pos + total, __ATOMIC_RELEASE);
	return hdr;
}

/* The open batch has no room for len bytes, or none is open: it is
 * closed, and the next one opened (as long as a batch may be: up to the
 * ring's end, in the room the drain has left, a quarter of the ring at
 * most), its first header zero; its last 8 bytes are left for the zero
 * header that follows its last event. An event no batch would hold now,
 * and every event when the recorder reads no batches, goes in a sample of
 * its own (or the ring grows). */
TRACEBPF__FASTFN uint32_t *tracebpf__fast_open(struct tracebpf__fast_thread *t, uint32_t len)
{
	unsigned long pos, size = t->mask + 1, cap, room;
	uint32_t *hdr;

	tracebpf__fast_close(t);
	if (!tracebpf__fast_proc.batch)
		return tracebpf__fast_sample(t, len);
	pos = t->pos;
	cap = size - (pos & t->mask);
	if (cap > size / 4)
		cap = size / 4;
	if (cap > TRACEBPF__FAST_BATCH_BYTES)
		cap = TRACEBPF__FAST_BATCH_BYTES;
	room = size - (pos - t->cons_seen);
	if (room < cap) {
		t->cons_seen = __atomic_load_n(t->cons, __ATOMIC_ACQUIRE);
		room = size - (pos - t->cons_seen);
		if (room < cap)
			cap = room & ~7ul;
	}
	if (cap < len + 24u)   /* both headers and the end's 8 bytes */
		return tracebpf__fast_sample(t, len);
	hdr = TRACEBPF__RCAST(uint32_t *, t->data + (pos & t->mask));
	hdr[0] = TRACEBPF__SCAST(uint32_t, cap - 8u) | TRACEBPF_FAST_BUSY;
	hdr[1] = TRACEBPF_FAST_BATCH;
	hdr[2] = 0;
	t->batch = hdr;
	t->boff = 0;
	t->bend = TRACEBPF__SCAST(uint32_t, cap - 16u);
	t->pos = pos + cap;
	__atomic_store_n(t->prod, pos + cap, __ATOMIC_RELEASE);
	return tracebpf__fast_reserve(t, len);
}

/* Room for a sample of len bytes (a multiple of 8) in the thread's open
 * batch, marked BUSY, the header after it zeroed; NULL when the ring is
 * full (the event takes the slow path). */
TRACEBPF__INLINE uint32_t *tracebpf__fast_reserve(struct tracebpf__fast_thread *t,
						  uint32_t len)
{
	uint32_t off = t->boff, next = off + len + 8u;
	unsigned char *p;
	uint32_t *hdr;

	if (__builtin_expect(next > t->bend, 0))
		return tracebpf__fast_open(t, len);
	p = TRACEBPF__RCAST(unsigned char *, t->batch + 2);
	hdr = TRACEBPF__RCAST(uint32_t *, p + off);
	hdr[0] = len | TRACEBPF_FAST_BUSY;
	hdr[1] = 0;
	*TRACEBPF__RCAST(uint32_t *, p + next) = 0;
	t->boff = next;
	return hdr;
}

TRACEBPF__INLINE void tracebpf__fast_commit(uint32_t *hdr, uint32_t len)
{
	__atomic_store_n(hdr, len, __ATOMIC_RELEASE);
}

/* A site's descriptor, once per site and tag (a direct-mapped table of the
 * object's sites: a slot another site took means writing it again). */
TRACEBPF__FASTFN int tracebpf__fast_site(struct tracebpf__fast_thread *t, const void *site,
					 uint64_t *slot, uint64_t want)
{
	const struct tracebpf_site *h = TRACEBPF__SCAST(const struct tracebpf_site *, site);
	uint32_t len = (TRACEBPF_FAST_HEAD + h->size + 7u) & ~7u;
	struct tracebpf_fast_rec *r;
	uint32_t *hdr = tracebpf__fast_reserve(t, len);

	if (!hdr)
		return 0;
	r = TRACEBPF__RCAST(struct tracebpf_fast_rec *, hdr + 2);
	r->type = TRACEBPF_FAST_SITE;
	r->size = TRACEBPF__SCAST(uint16_t, len);
	r->cpu = tracebpf__cpu();
	r->ts = tracebpf__now();
	r->site = TRACEBPF__RCAST(uintptr_t, site);
	__builtin_memcpy(r->args, site, h->size);
	tracebpf__fast_commit(hdr, len);
	*slot = want;
	return 1;
}

/* The calling thread's ring, ready for an event of site (whose descriptor
 * is written first when this session has not seen it): 1 with t->busy
 * set, 0 to take the probe. */
TRACEBPF__INLINE int tracebpf__fast_enter(struct tracebpf__fast_thread *t, const void *site)
{
	uintptr_t addr = TRACEBPF__RCAST(uintptr_t, site);
	uint64_t *slot, want;

	if (__builtin_expect(t->state != TRACEBPF__FAST_READY ||
			     t->ctl->live != TRACEBPF_FAST_LIVE, 0) &&
	    !tracebpf__fast_setup(t))
		return 0;
	if (t->busy)
		return 0;
	t->busy = 1;
	__asm__ __volatile__("" ::: "memory");
	slot = &tracebpf__fast_proc.seen[((addr >> 3) * 0x9e3779b97f4a7c15ull) >> 54];
	want = addr | TRACEBPF__SCAST(uint64_t, tracebpf__fast_proc.tag) << 48;
	if (__builtin_expect(*slot != want, 0) && !tracebpf__fast_site(t, site, slot, want)) {
		t->busy = 0;
		return 0;
	}
	return 1;
}

TRACEBPF__INLINE void tracebpf__fast_leave(struct tracebpf__fast_thread *t)
{
	__asm__ __volatile__("" ::: "memory");
	t->busy = 0;
}

/* A sample's head: type, size, CPU, time, site. */
TRACEBPF__INLINE struct tracebpf_fast_rec *
tracebpf__fast_head(uint32_t *hdr, uint16_t type, uint32_t size, const void *site)
{
	struct tracebpf_fast_rec *r = TRACEBPF__RCAST(struct tracebpf_fast_rec *, hdr + 2);

	r->type = type;
	r->size = TRACEBPF__SCAST(uint16_t, size);
	r->cpu = tracebpf__cpu();
	r->ts = tracebpf__now();
	r->site = TRACEBPF__RCAST(uintptr_t, site);
	return r;
}

/* One event on the fast path: 1 when it is in the ring, 0 to take the
 * probe. */
TRACEBPF__FASTFN int tracebpf__fast_event(const void *site, uint64_t a0, uint64_t a1)
{
	struct tracebpf__fast_thread *t = &tracebpf__fast_tls;
	struct tracebpf_fast_rec *r;
	uint32_t *hdr;

	if (!tracebpf__fast_enter(t, site))
		return 0;
	hdr = tracebpf__fast_reserve(t, sizeof(*r));
	if (hdr) {
		r = tracebpf__fast_head(hdr, TRACEBPF_FAST_EVENT, sizeof(*r), site);
		r->args[0] = a0;
		r->args[1] = a1;
		tracebpf__fast_commit(hdr, sizeof(*r));
	}
	tracebpf__fast_leave(t);
	return hdr != 0;
}

/* Bytes of string s on the fast path, NUL included, at most
 * TRACEBPF_FAST_STR_MAX. */
TRACEBPF__INLINE uint32_t tracebpf__fast_strlen(const char *s)
{
	uint32_t n = 0;

	while (n < TRACEBPF_FAST_STR_MAX - 1 && s[n])
		n++;
	return n + 1;
}

/* A string of a sample: its bytes with the NUL, or 0 and a flag for a
 * null pointer. */
TRACEBPF__INLINE uint16_t tracebpf__fast_str(const char *s, uint32_t *flags, uint32_t null)
{
	if (!s) {
		*flags |= null;
		return 0;
	}
	return TRACEBPF__SCAST(uint16_t, tracebpf__fast_strlen(s));
}

TRACEBPF__INLINE char *tracebpf__fast_copy(char *p, const char *s, uint32_t len)
{
	if (len && s) {   /* len is 0 for a null s */
		__builtin_memcpy(p, s, len - 1u);
		p[len - 1u] = 0;
	}
	return p + len;
}

/* An event with string arguments (strs: bit i set when argument i is
 * one), or of an `event_id` site (x: its id and runtime name, or NULL):
 * the strings are copied behind the head. 1 when it is in the ring. */
TRACEBPF__FASTFN int tracebpf__fast_event_x(const void *site, uint64_t a0, uint64_t a1,
					    unsigned strs, const struct tracebpf_fast_id *x,
					    const char *nm, int copy)
{
	struct tracebpf__fast_thread *t = &tracebpf__fast_tls;
	const char *s[TRACEBPF_MAX_ARGS] = { 0, 0 };
	struct tracebpf_fast_str h = { { 0, 0 }, 0 };
	struct tracebpf_fast_id id;
	uint64_t v[TRACEBPF_MAX_ARGS] = { a0, a1 };
	struct tracebpf_fast_rec *r;
	uint32_t *hdr, len, flags = 0;
	char *p;

	if (!tracebpf__fast_enter(t, site))
		return 0;
	len = sizeof(*r) + sizeof(h) + (x ? sizeof(id) : 0);
	for (int i = 0; i < TRACEBPF_MAX_ARGS; i++)
		if (strs >> i & 1) {
			s[i] = TRACEBPF__RCAST(const char *, TRACEBPF__SCAST(uintptr_t, v[i]));
			h.len[i] = tracebpf__fast_str(s[i], &flags, TRACEBPF_FAST_STR_NULL);
			len += h.len[i];
		}
	if (x) {
		id = *x;
		id.name_len = copy ? tracebpf__fast_str(nm, &flags, TRACEBPF_FAST_NAME_NULL) : 0;
		len += id.name_len;
	}
	h.flags = flags;
	len = (len + 7u) & ~7u;
	hdr = tracebpf__fast_reserve(t, len);
	if (hdr) {
		r = tracebpf__fast_head(hdr, x ? TRACEBPF_FAST_EVENT_ID : TRACEBPF_FAST_EVENT_STR,
					len, site);
		r->args[0] = a0;
		r->args[1] = a1;
		p = TRACEBPF__RCAST(char *, r + 1);
		__builtin_memcpy(p, &h, sizeof(h));
		p += sizeof(h);
		if (x) {
			__builtin_memcpy(p, &id, sizeof(id));
			p += sizeof(id);
		}
		for (int i = 0; i < TRACEBPF_MAX_ARGS; i++)
			p = tracebpf__fast_copy(p, s[i], h.len[i]);
		if (x)
			tracebpf__fast_copy(p, nm, id.name_len);
		tracebpf__fast_commit(hdr, len);
	}
	tracebpf__fast_leave(t);
	return hdr != 0;
}

TRACEBPF__INLINE int tracebpf__fast_event_str(const void *site, uint64_t a0, uint64_t a1,
					      unsigned strs)
{
	return tracebpf__fast_event_x(site, a0, a1, strs, 0, 0, 0);
}

/* An `event_id` site: copy when it copies its runtime name nm. */
TRACEBPF__INLINE int tracebpf__fast_event_id(const void *site, uint64_t id, const char *nm,
					     int copy, uint64_t a0, uint64_t a1, unsigned strs)
{
	struct tracebpf_fast_id x = { id, 0, { 0, 0, 0 } };

	return tracebpf__fast_event_x(site, a0, a1, strs, &x, nm, copy);
}

#define TRACEBPF__FAST_ID(site, id, nm, copy, a0, a1, fast)                    \
	tracebpf__fast_event_id(site, id, nm, copy, a0, a1, (unsigned)(fast) >> 1)
#define TRACEBPF__FAST(site, a0, a1, fast)                                      \
	((fast) >> 1 ? tracebpf__fast_event_str(site, a0, a1, (unsigned)(fast) >> 1)   \
		     : tracebpf__fast_event(site, a0, a1))
#endif /* TRACEBPF_FAST_PRODUCER_H */
