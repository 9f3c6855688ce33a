// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record.bpf.c - the kernel half of `tracebpf record`.
 *
 * USDT hits in traced processes and their lifecycle (fork, exec, exit)
 * become records (bpf/record.h) in one BPF ring buffer per CPU. The set of
 * traced processes lives in the `traced` map: user space seeds it with the
 * targets, the fork handler adds children, the exit handler removes dead
 * processes. Nothing from an untraced process reaches user space.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

/* One spec per distinct argument-register combination; an application with
 * many sites can exceed libbpf's default of 256. */
#define BPF_USDT_MAX_SPEC_CNT 4096
#include <bpf/usdt.bpf.h>

#include "record.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Site descriptor header as lib/include/tracebpf/trace.h lays it out. */
#define TRACEBPF_SITE_MAGIC 0x31534254u
struct user_site {
	__u32 magic;
	__u16 size;
	__u8 phase;
	__u8 scope;
	__u8 nargs;
	__u8 arg_type[2];
	__u8 flags;
	__u32 reserved;
};

/* Set between open and load (see user/record.c). */
/* Wake the consumer when this many bytes are waiting in a CPU's ring. Below
 * it, records are submitted without a wakeup and user space drains the rings
 * on a timer: a wakeup costs several times the probe itself. */
const volatile __u64 wakeup_bytes = 1 << 20;

struct proc {
	__u64 gen;   /* unique per (process, image): changes on exec */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);           /* tgid */
	__type(value, struct proc);
} traced SEC(".maps");

struct site_key {
	__u64 gen;
	__u64 addr;
};

struct site_info {
	__u8 arg_type[TB_MAX_ARGS];
	__u8 has_str;
	__u8 pad[5];
};

/* Sites whose descriptor this (process, image) has already reported. LRU:
 * an evicted site is simply reported again. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct site_key);
	__type(value, struct site_info);
} sites SEC(".maps");

/* One ring buffer per CPU: a single shared ring serialises all producers on
 * one spinlock. Inner maps are created and inserted by user space, sized by
 * --buffer-size. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);       /* resized to the number of CPUs */
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_RINGBUF);
		__uint(max_entries, 256 * 1024);  /* resized to --buffer-size */
	});
} rings SEC(".maps");

/* Records lost because a ring was full (or missing), per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

#define SCRATCH_SIZE 2048
_Static_assert(sizeof(struct tb_rec_site) + 2 * TB_SITE_MAX <= SCRATCH_SIZE, "scratch");
_Static_assert(sizeof(struct tb_rec_event) + 2 * 2 * TB_STR_MAX <= SCRATCH_SIZE, "scratch");

/* Variable-size records are built here, then copied with bpf_ringbuf_output:
 * bpf_ringbuf_reserve needs a size known to the verifier. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8[SCRATCH_SIZE]);
} scratch SEC(".maps");

/* Processes that could not be added to `traced` because it was full. */
__u64 lost_procs = 0;

/* Generations handed out by the kernel side start above those user space
 * gives the initial targets (1..N), so (gen, addr) never collides. */
__u64 next_gen = 1ULL << 32;

static __always_inline void count_drop(void)
{
	__u32 zero = 0;
	__u64 *d = bpf_map_lookup_elem(&drops, &zero);

	if (d)
		*d += 1;
}

static __always_inline void *cpu_ring(__u32 cpu)
{
	return bpf_map_lookup_elem(&rings, &cpu);
}

/* Submit flags: wake the consumer only when this record makes the ring cross
 * the threshold. A consumer that is behind is not woken again and again (each
 * wakeup costs microseconds in a VM); the user-space timer bounds latency. */
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

static __always_inline void *scratch_buf(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&scratch, &zero);
}

/* Report a site descriptor once per (process image, site) and remember its
 * argument types. Returns NULL when the descriptor could not be read (the
 * event is still recorded; the converter counts it as unresolved). */
static __noinline struct site_info *report_site(void *rb, struct site_key *key,
						__u32 cpu, __u64 ts, __u64 pid_tgid)
{
	struct site_info info = {};
	struct tb_rec_site *rec;
	struct user_site *us;
	__u8 *buf = scratch_buf();
	__u32 len;
	__u64 size;
	int i;

	if (!buf)
		return NULL;
	rec = (void *)buf;
	us = (void *)(buf + sizeof(*rec));
	__builtin_memset(rec, 0, sizeof(*rec));
	if (bpf_probe_read_user(us, sizeof(*us), (void *)key->addr) ||
	    us->magic != TRACEBPF_SITE_MAGIC || us->size < sizeof(*us) ||
	    us->size > TB_SITE_MAX) {
		rec->flags = TB_SITEF_FAULT;
		len = 0;
	} else {
		/* size <= TB_SITE_MAX was checked; the mask is for the verifier,
		 * which loses the bound clang folds into one range check */
		len = us->size;
		asm volatile("" : "+r"(len));   /* keep clang from dropping the mask */
		len &= 2 * TB_SITE_MAX - 1;
		if (bpf_probe_read_user(us, len, (void *)key->addr)) {
			rec->flags = TB_SITEF_FAULT;
			len = 0;
		}
	}
	size = TB_REC_ALIGN(sizeof(*rec) + len);
	fill_hdr(&rec->hdr, TB_REC_SITE, size, cpu, ts, pid_tgid);
	rec->site = key->addr;
	rec->len = len;
	if (size > SCRATCH_SIZE)
		return NULL;
	if (bpf_ringbuf_output(rb, buf, size, wake_flags(rb, size))) {
		count_drop();
		return NULL;   /* report again at the next hit */
	}
	if (rec->flags & TB_SITEF_FAULT)
		return NULL;   /* try again at the next hit: the page may be in */

	for (i = 0; i < TB_MAX_ARGS; i++) {
		info.arg_type[i] = i < us->nargs ? us->arg_type[i] : TB_ARG_NONE;
		if (info.arg_type[i] == TB_ARG_STR)
			info.has_str = 1;
	}
	bpf_map_update_elem(&sites, key, &info, BPF_ANY);
	return bpf_map_lookup_elem(&sites, key);
}

/* One USDT hit (BPF subprograms take at most five arguments). */
struct hit {
	__u64 site, a0, a1, ts, pid_tgid;
	__u32 cpu;
};

/* An event with string arguments: copy each string (bounded by TB_STR_MAX)
 * behind the fixed part. */
static __noinline int emit_event_str(void *rb, struct site_info *si, struct hit *h)
{
	__u64 a0 = h->a0, a1 = h->a1;
	__u8 *buf = scratch_buf();
	struct tb_rec_event *ev;
	__u32 off = sizeof(*ev);
	long n;
	__u64 size;

	if (!buf)
		return 0;
	ev = (void *)buf;
	ev->site = h->site;
	ev->args[0] = a0;
	ev->args[1] = a1;
	ev->str_len[0] = 0;
	ev->str_len[1] = 0;
	ev->flags = 0;
	if (si->arg_type[0] == TB_ARG_STR) {
		n = bpf_probe_read_user_str(buf + off, TB_STR_MAX, (void *)a0);
		if (n < 0) {
			ev->flags |= TB_EVF_STR_FAULT;
			n = 0;
		}
		n &= 2 * TB_STR_MAX - 1;   /* bound for the verifier; n <= TB_STR_MAX */
		ev->str_len[0] = n;
		off += n;
	}
	if (si->arg_type[1] == TB_ARG_STR) {
		if (off > SCRATCH_SIZE - TB_STR_MAX)
			return 0;
		n = bpf_probe_read_user_str(buf + off, TB_STR_MAX, (void *)a1);
		if (n < 0) {
			ev->flags |= TB_EVF_STR_FAULT;
			n = 0;
		}
		n &= 2 * TB_STR_MAX - 1;
		ev->str_len[1] = n;
		off += n;
	}
	size = TB_REC_ALIGN(off);
	if (size > SCRATCH_SIZE)
		return 0;
	fill_hdr(&ev->hdr, TB_REC_EVENT, size, h->cpu, h->ts, h->pid_tgid);
	if (bpf_ringbuf_output(rb, buf, size, wake_flags(rb, size)))
		count_drop();
	return 0;
}

SEC("usdt")
int BPF_USDT(tb_event, __u64 site, __u64 a0, __u64 a1)
{
	__u64 ts = bpf_ktime_get_ns();
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	struct tb_rec_event *ev;
	struct site_info *si;
	struct site_key key;
	struct proc *p;
	__u32 cpu;
	void *rb;

	p = bpf_map_lookup_elem(&traced, &tgid);
	if (!p)
		return 0;
	cpu = bpf_get_smp_processor_id();
	rb = cpu_ring(cpu);
	if (!rb) {
		count_drop();
		return 0;
	}
	key.gen = p->gen;
	key.addr = site;
	si = bpf_map_lookup_elem(&sites, &key);
	if (!si)
		si = report_site(rb, &key, cpu, ts, pid_tgid);
	if (si && si->has_str) {
		struct hit h = { site, a0, a1, ts, pid_tgid, cpu };

		return emit_event_str(rb, si, &h);
	}

	ev = bpf_ringbuf_reserve(rb, sizeof(*ev), 0);
	if (!ev) {
		count_drop();
		return 0;
	}
	fill_hdr(&ev->hdr, TB_REC_EVENT, sizeof(*ev), cpu, ts, pid_tgid);
	ev->site = site;
	ev->args[0] = a0;
	ev->args[1] = a1;
	ev->str_len[0] = 0;
	ev->str_len[1] = 0;
	ev->flags = 0;
	bpf_ringbuf_submit(ev, wake_flags(rb, sizeof(*ev)));
	return 0;
}

/* Reserve a fixed-size lifecycle record on this CPU's ring. */
static __always_inline void *reserve_rec(__u64 size, __u32 *cpu, void **rbp)
{
	void *rb, *rec;

	*cpu = bpf_get_smp_processor_id();
	rb = cpu_ring(*cpu);
	if (!rb) {
		count_drop();
		return NULL;
	}
	rec = bpf_ringbuf_reserve(rb, size, 0);
	if (!rec)
		count_drop();
	*rbp = rb;
	return rec;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(tb_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid;
	__u32 ctgid = child->tgid;
	struct tb_rec_fork *rec;
	struct proc np;
	__u32 cpu;
	void *rb;

	if (!bpf_map_lookup_elem(&traced, &ptgid))
		return 0;
	/* Add the child before it can run: its first instruction is traced. */
	if (ctgid != ptgid) {
		np.gen = __sync_fetch_and_add(&next_gen, 1);
		if (bpf_map_update_elem(&traced, &ctgid, &np, BPF_ANY))
			__sync_fetch_and_add(&lost_procs, 1);
	}
	rec = reserve_rec(sizeof(*rec), &cpu, &rb);
	if (!rec)
		return 0;
	fill_hdr(&rec->hdr, TB_REC_FORK, sizeof(*rec), cpu, bpf_ktime_get_ns(),
		 ((__u64)ptgid << 32) | (__u32)parent->pid);
	rec->child_pid = ctgid;
	rec->child_tid = child->pid;
	rec->flags = ctgid == ptgid ? TB_FORKF_THREAD : 0;
	rec->pad = 0;
	bpf_probe_read_kernel_str(rec->comm, sizeof(rec->comm), child->comm);
	bpf_ringbuf_submit(rec, wake_flags(rb, sizeof(*rec)));
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(tb_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid;
	struct tb_rec_exec *rec;
	struct proc *pr;
	__u32 cpu;
	void *rb;

	pr = bpf_map_lookup_elem(&traced, &tgid);
	if (!pr)
		return 0;
	/* A new image: its sites are new even at the same addresses. */
	pr->gen = __sync_fetch_and_add(&next_gen, 1);
	rec = reserve_rec(sizeof(*rec), &cpu, &rb);
	if (!rec)
		return 0;
	fill_hdr(&rec->hdr, TB_REC_EXEC, sizeof(*rec), cpu, bpf_ktime_get_ns(),
		 bpf_get_current_pid_tgid());
	rec->old_tid = old_pid;
	rec->pad = 0;
	bpf_probe_read_kernel_str(rec->comm, sizeof(rec->comm), p->comm);
	bpf_probe_read_kernel_str(rec->filename, sizeof(rec->filename),
				  BPF_CORE_READ(bprm, filename));
	bpf_ringbuf_submit(rec, wake_flags(rb, sizeof(*rec)));
	return 0;
}

/* Only the task argument is used: older kernels lack the group_dead one.
 * signal->live was decremented before this tracepoint fires, so 0 means this
 * is the last thread of the process. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(tb_exit, struct task_struct *task)
{
	__u32 tgid = task->tgid;
	struct tb_rec_exit *rec;
	bool group_dead;
	__u32 cpu;
	void *rb;

	if (!bpf_map_lookup_elem(&traced, &tgid))
		return 0;
	group_dead = BPF_CORE_READ(task, signal, live.counter) == 0;
	rec = reserve_rec(sizeof(*rec), &cpu, &rb);
	if (rec) {
		fill_hdr(&rec->hdr, TB_REC_EXIT, sizeof(*rec), cpu, bpf_ktime_get_ns(),
			 ((__u64)tgid << 32) | (__u32)task->pid);
		rec->flags = group_dead ? TB_EXITF_PROCESS : 0;
		rec->exit_code = task->exit_code;
		bpf_probe_read_kernel_str(rec->comm, sizeof(rec->comm), task->comm);
		bpf_ringbuf_submit(rec, wake_flags(rb, sizeof(*rec)));
	}
	/* After the record: user space sees the map empty only once the last
	 * exit record is in a ring. */
	if (group_dead)
		bpf_map_delete_elem(&traced, &tgid);
	return 0;
}
