/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ring.bpf.h - the maps and helpers every tracebpf BPF object uses to write
 * records: one ring buffer per CPU, the per-CPU drop counter and gap marks,
 * the set of traced processes, and the wakeup policy. Included by
 * record.bpf.c and sched.bpf.c. Each object gets its own rings, drop
 * counter and `gaps` (user space makes the kernel events' rings small:
 * docs/rings.md, "Small rings for kernel events"); sched.bpf.c's `traced`,
 * and its `spill` rings, are pointed at record.bpf.c's `traced` and `rings`
 * with bpf_map__reuse_fd (user/kern/sched.c).
 *
 * One ring per CPU because a single shared ring serialises all producers on
 * one spinlock. Every lost record is counted, and leaves a mark where it
 * was lost: a TB_REC_GAP ahead of the next record its CPU writes. Records
 * are submitted without a wakeup unless the ring crosses wakeup_bytes: a
 * wakeup costs several times the probe itself, and the recorder drains the
 * rings on a timer anyway.
 */
#ifndef TRACEBPF_RING_BPF_H
#define TRACEBPF_RING_BPF_H

#include "format/tbctl.h"

/* Set between open and load, like record.bpf.c's. */
const volatile __u64 wakeup_bytes = 1 << 20;
/* The session's name. Read by no program: libbpf binds the object's
 * .rodata to each of its programs, so `bpftool prog show` prints it under
 * "metadata" as `session = "NAME"` (a `bpf_metadata_` variable). */
const volatile char bpf_metadata_session[TB_CTL_SESSION_MAX] = "";

struct tb_proc_gen {
	__u64 gen;   /* unique per (process, image): changes on exec */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);           /* tgid */
	__type(value, struct tb_proc_gen);
} traced SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);       /* resized to the number of CPUs */
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_RINGBUF);
		__uint(max_entries, 256 * 1024);  /* user space: --buffer-size or
						   * --kernel-buffer-size */
	});
} rings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/* `tracebpf ctl stop|start` (ctl.h); sched.bpf.c's is pointed at
 * record.bpf.c's, so one write switches a whole recording. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);   /* the recorder reads it every round */
	__uint(max_entries, TB_CTL_NKEYS);
	__type(key, __u32);
	__type(value, struct tb_ctl);
} tb_ctl SEC(".maps");

/* An array lookup the JIT inlines: a few instructions on the hot paths. */
static __always_inline bool recording_stopped(void)
{
	__u32 key = TB_CTL_STATE;
	struct tb_ctl *c = bpf_map_lookup_elem(&tb_ctl, &key);

	return c && c->off;
}

/* Recording stopped, or the kernel events of `bit` (TB_KOFF_*) switched
 * off: the same lookup. */
static __always_inline bool kernel_stopped(__u32 bit)
{
	__u32 key = TB_CTL_STATE;
	struct tb_ctl *c = bpf_map_lookup_elem(&tb_ctl, &key);

	return c && (c->off || (c->kernel_off & bit));
}

static __always_inline void *cpu_ring(__u32 cpu)
{
	return bpf_map_lookup_elem(&rings, &cpu);
}

/* Wake the consumer only when this record makes the ring cross the
 * threshold; the recorder's timer bounds the latency otherwise. */
static __always_inline __u64 wake_flags(void *rb, __u64 size)
{
	__u64 avail = bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA);

	if (avail < wakeup_bytes && avail + size >= wakeup_bytes)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

/* When a record that wants the recorder soon last woke it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} woken SEC(".maps");

#define WAKE_SOON_NS 200000ull   /* at most one wakeup per 200 us */

/* The flags of a record the recorder must act on soon (a thread asking for
 * a fast-path ring, a new thread that will want one): a wakeup at most
 * every WAKE_SOON_NS (a wakeup costs several microseconds here; hundreds
 * of threads starting or asking at once must not keep the recorder from
 * answering). */
static __always_inline __u64 wake_soon(__u64 now)
{
	__u32 zero = 0;
	__u64 *last = bpf_map_lookup_elem(&woken, &zero);

	if (!last)
		return BPF_RB_FORCE_WAKEUP;
	if (now - *last < WAKE_SOON_NS)
		return BPF_RB_NO_WAKEUP;
	*last = now;   /* racy between CPUs: at worst two wakeups */
	return BPF_RB_FORCE_WAKEUP;
}

static __always_inline void fill_hdr(struct tb_rec_hdr *h, __u16 type, __u16 size,
				     __u32 cpu, __u64 ts, __u64 pid_tgid)
{
	h->type = type;
	h->size = size;
	h->cpu = cpu;
	h->ts = ts;
	h->pid = pid_tgid >> 32;
	h->tid = (__u32)pid_tgid;
}

/* Gap marks (struct tb_gap_state, lib/format/tbrecords.h): what each CPU lost since
 * its last TB_REC_GAP. A program that cannot write a record counts it here
 * (count_lost); the next program on that CPU that writes to a ring first
 * writes the mark (write_gap), and the recorder takes marks still pending
 * after each drain (user/kern/gaps.c). Indexed by CPU, not per-CPU: the
 * recorder's take is an atomic exchange on the mapped entry. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);       /* user space: the number of possible CPUs */
	__type(key, __u32);
	__type(value, struct tb_gap_state);
} gaps SEC(".maps");

/* Whose records an object's marks count (tbrecords.h, enum tb_gap_kind):
 * sched.bpf.c defines it before including this. */
#ifndef TB_GAP_KIND
#define TB_GAP_KIND TB_GAP_APP
#endif

/* What a lost record did to its thread's stack of open slices (struct
 * tb_gap_depth), in count_lost's `who` above the tid: nothing (no BEGIN
 * or END), one up, one down, or not known (TB_LOST_ANY: another program's
 * probe, a site whose descriptor was not read, an exec or an exit, which
 * ends every slice of its thread). */
#define TB_LOST_NONE  0ull
#define TB_LOST_BEGIN 1ull
#define TB_LOST_END   2ull
#define TB_LOST_ANY   3ull
#define LOST_WHO(tid, what) ((__u64)(__u32)(tid) | (__u64)(what) << 32)

/* The hot path's only cost: an inlined array access and a load. Non-zero
 * while a mark is pending or being updated. */
static __always_inline bool gap_pending(__u32 cpu)
{
	struct tb_gap_state *g = bpf_map_lookup_elem(&gaps, &cpu);

	return g && g->word;
}

/* *p = max(*p, v), atomically against programs nested on this CPU (and
 * the recorder), in four tries, each lost one to another writer: false
 * when *p is still below v after them. */
static __always_inline bool max_tries(__u64 *p, __u64 v)
{
	__u64 old = *(volatile __u64 *)p, seen;

	for (int i = 0; i < 4 && old < v; i++) {
		seen = __sync_val_compare_and_swap(p, old, v);
		if (seen == old)
			return true;
		old = seen;
	}
	return old >= v;
}

/* max_tries; contention that outlasts the tries leaves ~0: the widest
 * bound, never a wrong one. */
static __always_inline void gap_max(__u64 *p, __u64 v)
{
	if (!max_tries(p, v))
		__sync_fetch_and_or(p, ~0ull);
}

/* Adds tid (tid + 1 is stored: 0 is a free half) to the set of CPU cpu
 * and returns its place (2 * word + half), or -1: a full set says "all
 * threads". Global, as count_lost. */
__noinline int gap_add_tid(__u32 cpu, __u32 tid)
{
	struct tb_gap_state *g = bpf_map_lookup_elem(&gaps, &cpu);
	__u64 t = (__u64)tid + 1, v, seen, nv;

	if (!g)
		return -1;
	for (int i = 0; i < TB_GAP_TIDS / 2; i++) {
		v = *(volatile __u64 *)&g->tid[i];
		for (int k = 0; k < 3; k++) {
			if ((v & 0xffffffff) == t)
				return 2 * i;
			if ((v >> 32) == t)
				return 2 * i + 1;
			if ((v & 0xffffffff) && (v >> 32))
				break;      /* both halves taken: the next word */
			nv = v & 0xffffffff ? v | t << 32 : v | t;
			seen = __sync_val_compare_and_swap(&g->tid[i], v, nv);
			if (seen == v)
				return v & 0xffffffff ? 2 * i + 1 : 2 * i;
			v = seen;
		}
	}
	__sync_fetch_and_or(&g->bits, TB_GAPS_ALL);
	return -1;
}

/* Thread `slot` of CPU cpu's mark lost d (TB_GAP_DEPTH) after what its
 * entry holds, or (first) before it: what a take gives back came first.
 * Only the thread itself and takers change the entry; contention that
 * outlasts the tries leaves its depth unknown, a wider answer, never a
 * wrong one. Global, as count_lost. */
__noinline int gap_depth_add(__u32 cpu, __u32 slot, __u64 d, int first)
{
	struct tb_gap_state *g = bpf_map_lookup_elem(&gaps, &cpu);
	__u64 old, seen;

	if (!g)
		return 0;
	slot &= TB_GAP_TIDS - 1;
	old = *(volatile __u64 *)&g->depth[slot];
	for (int i = 0; i < 4; i++) {
		seen = __sync_val_compare_and_swap(&g->depth[slot], old,
						   first ? tb_gap_depth_then(d, old) :
							   tb_gap_depth_then(old, d));
		if (seen == old)
			return 0;
		old = seen;
	}
	__sync_fetch_and_or(&g->bits, TB_GAPS_NODEPTH(slot));
	return 0;
}

/* What thread `slot` lost (TB_LOST_*) into its depth. */
static __always_inline void gap_lost_what(struct tb_gap_state *g, __u32 cpu, int slot,
					  __u64 what)
{
	if (slot < 0 || what == TB_LOST_NONE)
		return;
	if (what == TB_LOST_ANY)
		__sync_fetch_and_or(&g->bits, TB_GAPS_NODEPTH(slot & (TB_GAP_TIDS - 1)));
	else
		gap_depth_add(cpu, slot, what == TB_LOST_BEGIN ? TB_GAP_BEGIN : TB_GAP_END, 0);
}

/* n records stamped from first to last, of thread tid (~0u: unknown,
 * which counts as every thread), could not be written on this CPU; who
 * is LOST_WHO(tid, what they did to its stack, TB_LOST_*). The
 * fields are updated between entering and leaving `word`, and the count
 * added on leaving, in one atomic add: a taker never sees the count of a
 * record without its time and thread. A global function, as write_gap:
 * the verifier checks it once, not at every call (their loops made every
 * program that calls them take a second longer to load). */
__noinline int count_lost(__u32 cpu, __u64 n, __u64 first, __u64 last, __u64 who)
{
	struct tb_gap_state *g = bpf_map_lookup_elem(&gaps, &cpu);
	__u32 zero = 0, tid = (__u32)who;
	__u64 *d = bpf_map_lookup_elem(&drops, &zero);

	if (d)
		__sync_fetch_and_add(d, n);
	if (!g)
		return 0;
	__sync_fetch_and_add(&g->word, TB_GAP_IN);
	gap_max(&g->first_inv, ~first);
	gap_max(&g->last_ts, last);
	if (tid == ~0u)
		__sync_fetch_and_or(&g->bits, TB_GAPS_ALL);
	else
		gap_lost_what(g, cpu, gap_add_tid(cpu, tid), who >> 32);
	__sync_fetch_and_add(&g->word, n - TB_GAP_IN);
	return 0;
}

/* A take that had to give back what it read (a program updated the
 * fields meanwhile): merged into what is there now. */
static __always_inline void gap_restore(struct tb_gap_state *g, __u32 cpu, __u64 first_inv,
					__u64 last, __u64 bits, const __u64 *tid,
					const __u64 *depth)
{
	gap_max(&g->first_inv, first_inv);
	gap_max(&g->last_ts, last);
	if (bits & TB_GAPS_ALL)
		__sync_fetch_and_or(&g->bits, TB_GAPS_ALL);
	for (int i = 0; i < TB_GAP_TIDS; i++) {
		__u64 t = i & 1 ? tid[i / 2] >> 32 : tid[i / 2] & 0xffffffff;
		int slot;

		if (!t)
			continue;
		/* its place may have changed: the thread lost more meanwhile */
		slot = gap_add_tid(cpu, t - 1);
		if (slot < 0)
			continue;
		if (depth[i])
			gap_depth_add(cpu, slot, depth[i], 1);
		if (bits & TB_GAPS_NODEPTH(i))
			__sync_fetch_and_or(&g->bits, TB_GAPS_NODEPTH(slot & (TB_GAP_TIDS - 1)));
	}
}

/* The mark's threads from the entry's (tid[] compacted, their depths
 * with them: an application's mark only, kernel records have none). */
static __always_inline void gap_fill_tids(struct tb_rec_gap *m, const __u64 *tid,
					  const __u64 *depth, __u64 bits)
{
	m->ntids = 0;
	m->depth_known = 0;
	m->pad = 0;
	for (int i = 0; i < TB_GAP_TIDS; i++) {
		__u64 t = i & 1 ? tid[i / 2] >> 32 : tid[i / 2] & 0xffffffff;
		__u32 n = m->ntids & (TB_GAP_TIDS - 1);

		m->tid[i] = 0;
		m->depth[i].low = 0;
		m->depth[i].net = 0;
		if (!t || m->ntids >= TB_GAP_TIDS)
			continue;
		m->tid[n] = t - 1;
		m->depth[n].low = TB_GAP_LOW(depth[i]);
		m->depth[n].net = TB_GAP_NET(depth[i]);
		if (TB_GAP_KIND == TB_GAP_APP && !(bits & TB_GAPS_NODEPTH(i)))
			m->depth_known |= 1u << n;
		m->ntids++;
	}
}

/* Fills the reserved mark m with this CPU's pending losses and clears
 * them; false (nothing taken) when there is nothing to take, or another
 * take or an update is under way. */
static __always_inline bool gap_take(struct tb_gap_state *g, __u32 cpu, struct tb_rec_gap *m,
				     __u64 w)
{
	__u64 first_inv, last, bits, tid[TB_GAP_TIDS / 2], depth[TB_GAP_TIDS], now;

	if (__sync_val_compare_and_swap(&g->word, w, w | TB_GAP_TAKING) != w)
		return false;
	first_inv = __sync_lock_test_and_set(&g->first_inv, 0);
	last = __sync_lock_test_and_set(&g->last_ts, 0);
	bits = __sync_lock_test_and_set(&g->bits, 0);
	for (int i = 0; i < TB_GAP_TIDS / 2; i++)
		tid[i] = __sync_lock_test_and_set(&g->tid[i], 0);
	for (int i = 0; i < TB_GAP_TIDS; i++)
		depth[i] = __sync_lock_test_and_set(&g->depth[i], 0);
	if (__sync_val_compare_and_swap(&g->word, w | TB_GAP_TAKING, 0) != (w | TB_GAP_TAKING)) {
		gap_restore(g, cpu, first_inv, last, bits, tid, depth);
		__sync_fetch_and_and(&g->word, ~TB_GAP_TAKING);
		return false;
	}
	now = bpf_ktime_get_ns();
	m->hdr.ts = first_inv ? ~first_inv : 0;
	m->last_ts = last < now ? last : now;
	m->count = TB_GAP_COUNT(w);
	m->kind = TB_GAP_KIND;
	m->flags = bits & TB_GAPS_ALL ? TB_GAPF_ALL : 0;
	gap_fill_tids(m, tid, depth, bits);
	return true;
}

/* Where a record goes when this CPU's ring is full: an object that has
 * a second ring per CPU defines TB_SPILL_RING(cpu) before including this. */
#ifndef TB_SPILL_RING
#define TB_SPILL_RING(cpu) ((void *)0)
#endif

/* Writes this CPU's pending mark to its ring (spill: to its spill ring),
 * ahead of the record about to be written there. -1 when the ring has no
 * room for it: the record is then lost too (the caller counts it), and
 * the mark stays pending. 0 otherwise, also when the mark is being
 * updated or taken elsewhere right now (it is written later, or by the
 * recorder). Global (see count_lost), so the ring is named, not passed:
 * a global function takes no map pointer. */
__noinline int write_gap(__u32 cpu, int spill)
{
	struct tb_gap_state *g = bpf_map_lookup_elem(&gaps, &cpu);
	void *rb = spill ? TB_SPILL_RING(cpu) : cpu_ring(cpu);
	struct tb_rec_gap *m;
	__u64 w;

	if (!g || !rb)
		return 0;
	w = *(volatile __u64 *)&g->word;
	if (!TB_GAP_COUNT(w) || w >> 48)
		return 0;
	m = bpf_ringbuf_reserve(rb, sizeof(*m), 0);
	if (!m)
		return -1;
	if (!gap_take(g, cpu, m, w)) {
		bpf_ringbuf_discard(m, 0);
		return 0;
	}
	m->hdr.type = TB_REC_GAP;
	m->hdr.size = sizeof(*m);
	m->hdr.cpu = cpu;
	m->hdr.pid = 0;
	m->hdr.tid = 0;
	bpf_ringbuf_submit(m, wake_flags(rb, sizeof(*m)));
	return 0;
}

/* bpf_ringbuf_output to this CPU's ring rb (spill: its spill ring), after
 * the CPU's pending mark: non-zero when the record was not written (not
 * counted: the caller may try another ring). */
static __always_inline long ring_put(void *rb, int spill, __u32 cpu, void *data,
				     __u64 size, __u64 flags)
{
	if (gap_pending(cpu) && write_gap(cpu, spill))
		return -1;
	return bpf_ringbuf_output(rb, data, size, flags);
}

/* One record to this CPU's ring (its time ts, its thread's pid_tgid);
 * a record that cannot be written is counted. Non-zero when lost. */
static __always_inline long ring_output_what(void *rb, __u32 cpu, void *data, __u64 size,
					     __u64 ts, __u64 pid_tgid, __u64 what)
{
	if (!ring_put(rb, 0, cpu, data, size, wake_flags(rb, size)))
		return 0;
	count_lost(cpu, 1, ts, ts, LOST_WHO(pid_tgid, what));
	return -1;
}

/* ring_output_what of a record that is no BEGIN or END. */
static __always_inline long ring_output(void *rb, __u32 cpu, void *data, __u64 size,
					__u64 ts, __u64 pid_tgid)
{
	return ring_output_what(rb, cpu, data, size, ts, pid_tgid, TB_LOST_NONE);
}

/* bpf_ringbuf_reserve, after this CPU's pending mark (as ring_put). */
static __always_inline void *ring_reserve(void *rb, int spill, __u32 cpu, __u64 size)
{
	if (gap_pending(cpu) && write_gap(cpu, spill))
		return NULL;
	return bpf_ringbuf_reserve(rb, size, 0);
}


/* Reserve a fixed-size record of the current task on this CPU's ring (or
 * its spill ring), counting a failure (its time: now, as the record would
 * have been stamped after the reservation; what: TB_LOST_*). */
static __always_inline void *reserve_rec_what(__u64 size, __u32 *cpu, void **rbp, __u64 what)
{
	void *rb, *rec = NULL;

	*cpu = bpf_get_smp_processor_id();
	rb = cpu_ring(*cpu);
	if (rb)
		rec = ring_reserve(rb, 0, *cpu, size);
	if (!rec) {
		rb = TB_SPILL_RING(*cpu);
		if (rb)
			rec = ring_reserve(rb, 1, *cpu, size);
	}
	*rbp = rb;
	if (!rec) {
		__u64 now = bpf_ktime_get_ns();

		count_lost(*cpu, 1, now, now, LOST_WHO(bpf_get_current_pid_tgid(), what));
	}
	return rec;
}

/* reserve_rec_what of a record that changes no thread's slices. */
static __always_inline void *reserve_rec(__u64 size, __u32 *cpu, void **rbp)
{
	return reserve_rec_what(size, cpu, rbp, TB_LOST_NONE);
}

#endif /* TRACEBPF_RING_BPF_H */
