/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fast.bpf.h - the fast path's kernel side (docs/fast-path.md, "The fast
 * path"), included at the end of record.bpf.c: the request for a thread's
 * ring, and the program that moves a thread's ring past the samples the
 * recorder has read.
 */
#ifndef TRACEBPF_FAST_BPF_H
#define TRACEBPF_FAST_BPF_H

/* The threads' user ring buffers, by slot: user space creates each one
 * (--fast-buffer-size), pins it for the thread's user and puts it here. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);       /* user space: --max-fast-rings */
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_USER_RINGBUF);
		__uint(max_entries, 64 * 1024);
	});
} fast_rings SEC(".maps");

/* A traced process's requests are its own to make, as many as it likes:
 * each costs a record and the recorder's work, and "drain now" a wakeup.
 * trace.h asks at most every 10 ms per thread for a ring and every 1 ms
 * for a drain; past REQ_PER_WINDOW requests of one process in a window
 * of REQ_WINDOW_NS, the rest of the window's are left out (counted in
 * req_limited, which the recorder reports), and past REQ_WAKES of them
 * "drain now" no longer forces a wakeup (one drain serves every ring). */
#define REQ_WINDOW_NS  1000000ull
#define REQ_PER_WINDOW TB_FAST_REQ_PER_MS
#define REQ_WAKES      4u

struct req_window {
	__u64 start;   /* ns */
	__u32 n;       /* requests in it so far */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);    /* tgid */
	__type(value, struct req_window);
} req_rate SEC(".maps");

__u64 req_limited = 0;

/* This request's number in its process's window (1 for the first). */
static __always_inline __u32 req_count(__u32 tgid, __u64 now)
{
	struct req_window *w = bpf_map_lookup_elem(&req_rate, &tgid), nw = { .start = now, .n = 1 };

	if (!w) {
		bpf_map_update_elem(&req_rate, &tgid, &nw, BPF_ANY);
		return 1;
	}
	if (now - w->start >= REQ_WINDOW_NS) {
		w->start = now;
		w->n = 1;
		return 1;
	}
	return ++w->n;   /* racy between CPUs: a few more (no atomic's result
			  * at clang 14's -mcpu) */
}

SEC("usdt")
int tb_ring_req(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), now;
	struct tb_ring_req *rec;
	__u32 cpu, n;
	void *rb;

	cpu = bpf_get_smp_processor_id();
	if (!traced_gen(pid_tgid >> 32, cpu) || recording_stopped())
		return 0;
	now = bpf_ktime_get_ns();
	n = req_count(pid_tgid >> 32, now);
	if (n > REQ_PER_WINDOW) {
		__sync_fetch_and_add(&req_limited, 1);
		return 0;
	}
	rec = reserve_rec(sizeof(*rec), &cpu, &rb);
	if (!rec)
		return 0;
	fill_hdr(&rec->hdr, TB_RING_FAST_REQ, sizeof(*rec), cpu, now, pid_tgid);
	rec->key = ctx->di;
	/* "drain now" (bit 0) from a thread waiting on its full ring, at most
	 * once a millisecond per thread: a wakeup wake_soon drops here could
	 * leave it waiting for the recorder's timer */
	bpf_ringbuf_submit(rec, (rec->key & 1) && n <= REQ_WAKES ? BPF_RB_FORCE_WAKEUP :
				wake_soon(now));
	return 0;
}

/* The recorder reads each ring's samples from its own read-only mapping
 * and makes the records itself (user/fast/fast_read.c); only the kernel can
 * move a user ring's consumer position, so this program does that, past
 * the samples the recorder has read, and nothing more per sample. */
struct fast_skip {
	__u64 n;
	__u64 limit;
};

static long fast_skip(struct bpf_dynptr *dp, void *ctx)
{
	struct fast_skip *k = ctx;

	return ++k->n >= k->limit;
}

/* Run by the recorder (BPF_PROG_TEST_RUN) for a ring: what its events are
 * subject to now (the filters, a ctl stop), and, with d->limit, the
 * consumer position moved past that many samples. */
SEC("syscall")
int tb_fast_drain(struct tb_fast_drain *d)
{
	struct fast_skip k = { .limit = d->limit };
	__u32 key = TB_CTL_STATE, slot = d->slot;
	struct tb_ctl *ctl;
	void *ring;

	ring = bpf_map_lookup_elem(&fast_rings, &slot);
	if (!ring) {
		d->ret = -2;   /* -ENOENT */
		return 0;
	}
	d->stop_ts = ~0ULL;
	ctl = bpf_map_lookup_elem(&tb_ctl, &key);
	d->skip = ctl && !filters_pass(ctl, (__u64)d->pid << 32 | d->tid);
	if (ctl && ctl->off)   /* since the stop, even if a start was asked since */
		d->stop_ts = ctl->off_ts ? ctl->off_ts : ctl->ts;
	if (!k.limit)
		return 0;
	/* no thread waits on its ring: a wakeup is an irq_work for nobody
	 * (7% of the recorder's time draining 500 threads' rings) */
	d->ret = bpf_user_ringbuf_drain(ring, fast_skip, &k, BPF_RB_NO_WAKEUP);
	d->drained = k.n;
	return 0;
}

#endif /* TRACEBPF_FAST_BPF_H */
