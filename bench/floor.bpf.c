// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * floor.bpf.c - the reference a recorded tracebpf hit is measured against
 * (make bench): the minimal libbpf USDT program that records a 2-integer
 * event. It reads the two argument values with bpf_usdt_arg(), stamps the
 * time and pid/tid, and writes a 32-byte record to one ring buffer without
 * waking the consumer. No filtering, no descriptor, no drop counting.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct floor_rec {
	__u64 ts;
	__u64 a0;
	__u64 a1;
	__u32 pid;
	__u32 tid;
};
_Static_assert(sizeof(struct floor_rec) == 32, "floor_rec");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} floor_ring SEC(".maps");

/* tracebpf:event is (site, a0, a1): the values are arguments 1 and 2. */
SEC("usdt")
int floor_event(struct pt_regs *ctx)
{
	struct floor_rec *r = bpf_ringbuf_reserve(&floor_ring, sizeof(*r), 0);
	__u64 pid_tgid;
	long v;

	if (!r)
		return 0;
	r->ts = bpf_ktime_get_ns();
	bpf_usdt_arg(ctx, 1, &v);
	r->a0 = v;
	bpf_usdt_arg(ctx, 2, &v);
	r->a1 = v;
	pid_tgid = bpf_get_current_pid_tgid();
	r->pid = pid_tgid >> 32;
	r->tid = (__u32)pid_tgid;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}
