/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ring.bpf.h - the maps and helpers every tracebpf BPF object uses to write
 * records: one ring buffer per CPU, the per-CPU drop counter, the set of
 * traced processes, and the wakeup policy. Included by record.bpf.c and
 * sched.bpf.c. Each object gets its own rings and drop counter (user space
 * makes the kernel events' rings small: docs/design.md, "Small rings for
 * kernel events"); sched.bpf.c's `traced`, and its `spill` rings, are
 * pointed at record.bpf.c's `traced` and `rings` with bpf_map__reuse_fd
 * (user/sched.c).
 *
 * One ring per CPU because a single shared ring serialises all producers on
 * one spinlock. Every lost record is counted. Records are submitted without
 * a wakeup unless the ring crosses wakeup_bytes: a wakeup costs several times
 * the probe itself, and the recorder drains the rings on a timer anyway.
 */
#ifndef TRACEBPF_RING_BPF_H
#define TRACEBPF_RING_BPF_H

#include "ctl.h"

/* Set between open and load, like record.bpf.c's. */
const volatile __u64 wakeup_bytes = 1 << 20;

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

static __always_inline void count_drops(__u64 n)
{
	__u32 zero = 0;
	__u64 *d = bpf_map_lookup_elem(&drops, &zero);

	if (d)
		*d += n;
}

static __always_inline void count_drop(void)
{
	count_drops(1);
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

/* Where a record goes when this CPU's ring is full: an object that has
 * a second ring per CPU defines TB_SPILL_RING(cpu) before including this. */
#ifndef TB_SPILL_RING
#define TB_SPILL_RING(cpu) ((void *)0)
#endif

/* Reserve a fixed-size record on this CPU's ring (or its spill ring),
 * counting a failure. */
static __always_inline void *reserve_rec(__u64 size, __u32 *cpu, void **rbp)
{
	void *rb, *rec = NULL;

	*cpu = bpf_get_smp_processor_id();
	rb = cpu_ring(*cpu);
	if (rb)
		rec = bpf_ringbuf_reserve(rb, size, 0);
	if (!rec) {
		rb = TB_SPILL_RING(*cpu);
		if (rb)
			rec = bpf_ringbuf_reserve(rb, size, 0);
	}
	*rbp = rb;
	if (!rec)
		count_drop();
	return rec;
}

#endif /* TRACEBPF_RING_BPF_H */
