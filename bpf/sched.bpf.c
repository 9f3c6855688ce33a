// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sched.bpf.c - scheduler, power and generic tracepoints for `tracebpf
 * record` (on by default, --no-sched turns it off).
 *
 * A second BPF object beside record.bpf.c: user space (user/kern/sched.c) makes
 * its `traced` map share record.bpf.c's with bpf_map__reuse_fd, and gives it
 * per-CPU rings of its own (--kernel-buffer-size, small so that they stay
 * warm, spilling into record.bpf.c's when full: `spill`) with their own
 * `drops` counter. See docs/rings.md, "Scheduler events".
 *
 * Every program exists twice: SEC("?tp_btf/X") and SEC("?raw_tp/X"). Both
 * are off by default ("?"); user space turns one of each pair on after
 * probing vmlinux BTF for btf_trace_X (never a kernel version). Their bodies
 * are shared and read kernel memory with BPF_CORE_READ, which both program
 * types allow.
 *
 * The hot programs (sched_switch, the wakeups, cpu_idle/cpu_frequency) run
 * system-wide on every context switch. Reserving each record in the ring
 * costs more than the rest of the program (a lock, a cold cache line), so
 * they stage records in a per-CPU buffer (`stage`) and hand a full buffer to
 * the ring with one bpf_ringbuf_output(): one ring record holding many
 * tracebpf records, which user space splits. User space empties every CPU's
 * buffer before each drain by running tb_stage_flush on that CPU
 * (BPF_PROG_TEST_RUN with BPF_F_TEST_RUN_ON_CPU), so a staged record is as
 * late as a ring record at most: the recorder's flush interval. A program
 * that interrupts another one writing the same buffer (`busy`) writes its
 * record straight to the ring instead. See docs/rings.md, "Staging".
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "format/tbrecords.h"

/* The application's rings (record.bpf.c's `rings`: user space points this
 * map at them). This object's own rings are small so that they stay warm
 * (docs/rings.md, "Small rings for kernel events"); when one is full, as in
 * a storm of processes starting and exiting, its records spill into the
 * application's ring of the same CPU instead of being lost. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_RINGBUF);
		__uint(max_entries, 256 * 1024);
	});
} spill SEC(".maps");

static __always_inline void *spill_ring(__u32 cpu)
{
	return bpf_map_lookup_elem(&spill, &cpu);
}
#define TB_SPILL_RING(cpu) spill_ring(cpu)
/* this object's gap marks count kernel records */
#define TB_GAP_KIND TB_GAP_KERNEL

#include "ring.bpf.h"

/* Hands a whole record (or batch) to this CPU's ring, else to its spill
 * ring (waking the recorder: the small ring is full); non-zero if both are
 * full. */
static __always_inline long output_rec(void *rb, __u32 cpu, void *data, __u64 size)
{
	void *sp;

	if (rb && !ring_put(rb, 0, cpu, data, size, wake_flags(rb, size)))
		return 0;
	sp = spill_ring(cpu);
	if (!sp)
		return -1;
	return ring_put(sp, 1, cpu, data, size, BPF_RB_FORCE_WAKEUP);
}

char LICENSE[] SEC("license") = "GPL";

/* --sched=traced: keep only events that involve a traced process. */
const volatile bool traced_only = false;

static __always_inline bool is_traced(__u32 tgid)
{
	return bpf_map_lookup_elem(&traced, &tgid) != NULL;
}

/* Per-CPU staging buffer (struct tb_stage, tbrecords.h). len never exceeds
 * TB_STAGE_BYTES. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tb_stage);
} stage SEC(".maps");

/* Set by user space when it cannot run tb_stage_flush on each CPU (found at
 * load, or when a flush fails while recording), or when told to
 * (TRACEBPF_NO_STAGE=1): every record then goes straight to the ring. */
bool no_stage;

/* Moves this CPU's staged records to its ring as one ring record. */
static __always_inline void stage_flush(struct tb_stage *st, __u32 cpu)
{
	__u32 n = st->len;
	void *rb;

	if (!n)
		return;
	if (n > TB_STAGE_BYTES)
		n = TB_STAGE_BYTES;   /* cannot happen; bounds the copy */
	rb = cpu_ring(cpu);
	/* staged in order: the first record is the earliest, none is later
	 * than now */
	if (output_rec(rb, cpu, st->buf, n))
		count_lost(cpu, st->nrec, ((struct tb_rec_hdr *)st->buf)->ts,
			   bpf_ktime_get_ns(), ~0u);
	st->len = 0;
	st->nrec = 0;
}

/* Where a record of a hot program goes: the staging buffer, or (nested in
 * another program that is writing it, or no buffer) a ring reservation. */
struct tb_out {
	struct tb_stage *st;
	void *rb;
	__u32 cpu;
	__u32 size;
};

static __always_inline void *rec_begin(struct tb_out *o, __u32 size)
{
	__u32 zero = 0;
	struct tb_stage *st = bpf_map_lookup_elem(&stage, &zero);

	o->size = size;
	if (!no_stage && st && !st->busy) {
		st->busy = 1;
		o->st = st;
		o->rb = NULL;   /* unused here; never left undefined for the verifier */
		o->cpu = bpf_get_smp_processor_id();
		if (st->len > TB_STAGE_BYTES - size)
			stage_flush(st, o->cpu);
		return st->buf + (st->len & (TB_STAGE_BYTES - 1));
	}
	o->st = NULL;
	return reserve_rec(size, &o->cpu, &o->rb);
}

static __always_inline void rec_commit(struct tb_out *o, void *rec)
{
	struct tb_stage *st = o->st;

	if (st) {
		st->len += o->size;
		st->nrec++;
		st->busy = 0;
	} else {
		bpf_ringbuf_submit(rec, wake_flags(o->rb, o->size));
	}
}

/* The task state as ftrace reports it in prev_state (the kernel's
 * __trace_sched_switch_state): preempted -> "R+", else the TASK_REPORT bits
 * of __state | exit_state, TASK_IDLE reported as I, RT-lock waits as D. */
#define TASK_REPORT         0x7f
#define TASK_IDLE_STATE     0x402    /* TASK_UNINTERRUPTIBLE | TASK_NOLOAD */
#define TASK_RTLOCK_WAIT    0x1000
#define TASK_REPORT_IDLE    0x80

struct task_struct___old {
	long state;
} __attribute__((preserve_access_index));

/* Reads a task field. In tp_btf programs the arguments are trusted BTF
 * pointers: a plain (CO-RE relocated) load, JIT-ed as one instruction with an
 * exception-table entry. raw_tp gets untrusted pointers and needs a
 * bpf_probe_read_kernel call per field. `btf` is a constant at every call
 * site, so clang keeps only one branch. This is the hot path: it runs on
 * every context switch and wakeup of the machine. */
#define RD(btf, p, f)   ((btf) ? (p)->f : BPF_CORE_READ(p, f))
#define RD_COMM(btf, dst, p) do {					\
	if (btf)							\
		__builtin_memcpy(dst, (p)->comm, sizeof(dst));		\
	else								\
		BPF_CORE_READ_INTO(&(dst), p, comm);			\
} while (0)

static __always_inline __u16 switch_state(bool btf, bool preempt, struct task_struct *prev)
{
	unsigned int st, ex;

	if (preempt)
		return TB_TASK_PREEMPTED;
	if (bpf_core_field_exists(prev->__state))
		st = RD(btf, prev, __state);
	else
		st = BPF_CORE_READ((struct task_struct___old *)prev, state);
	ex = RD(btf, prev, exit_state);
	if (st == TASK_IDLE_STATE)
		return TASK_REPORT_IDLE;
	if (st == TASK_RTLOCK_WAIT)
		return 2;
	return (st | ex) & TASK_REPORT;
}

static __always_inline int on_switch(bool btf, bool preempt, struct task_struct *prev,
				     struct task_struct *next)
{
	__u32 prev_tgid = RD(btf, prev, tgid);
	__u32 next_tgid = RD(btf, next, tgid);
	struct tb_rec_switch *rec;
	struct tb_out o;

	if (kernel_stopped(TB_KOFF_SCHED) ||
	    (traced_only && !is_traced(prev_tgid) && !is_traced(next_tgid)))
		return 0;
	rec = rec_begin(&o, sizeof(*rec));
	if (!rec)
		return 0;
	fill_hdr(&rec->hdr, TB_REC_SWITCH, sizeof(*rec), o.cpu, bpf_ktime_get_ns(),
		 ((__u64)prev_tgid << 32) | (__u32)RD(btf, prev, pid));
	rec->next_tid = RD(btf, next, pid);
	rec->next_tgid = next_tgid;
	rec->prev_prio = RD(btf, prev, prio);
	rec->next_prio = RD(btf, next, prio);
	rec->prev_state = switch_state(btf, preempt, prev);
	rec->flags = 0;
	RD_COMM(btf, rec->prev_comm, prev);
	RD_COMM(btf, rec->next_comm, next);
	rec_commit(&o, rec);
	return 0;
}

SEC("?tp_btf/sched_switch")
int BPF_PROG(tb_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(true, preempt, prev, next);
}

SEC("?raw_tp/sched_switch")
int BPF_PROG(tb_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(false, preempt, prev, next);
}

static __always_inline int on_wake(bool btf, __u32 kind, struct task_struct *p)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = RD(btf, p, tgid);
	struct tb_rec_wake *rec;
	struct tb_out o;

	if (kernel_stopped(TB_KOFF_SCHED) ||
	    (traced_only && !is_traced(tgid) && !is_traced(pid_tgid >> 32)))
		return 0;
	rec = rec_begin(&o, sizeof(*rec));
	if (!rec)
		return 0;
	fill_hdr(&rec->hdr, TB_REC_WAKE, sizeof(*rec), o.cpu, bpf_ktime_get_ns(), pid_tgid);
	rec->kind = kind;
	rec->tid = RD(btf, p, pid);
	rec->tgid = tgid;
	rec->prio = RD(btf, p, prio);
	/* task_cpu(p), what ftrace prints as target_cpu */
	rec->target_cpu = RD(btf, p, thread_info.cpu);
	rec->pad = 0;
	RD_COMM(btf, rec->comm, p);
	rec_commit(&o, rec);
	return 0;
}

SEC("?tp_btf/sched_waking")
int BPF_PROG(tb_waking_btf, struct task_struct *p) { return on_wake(true, TB_WAKE_WAKING, p); }
SEC("?raw_tp/sched_waking")
int BPF_PROG(tb_waking_raw, struct task_struct *p) { return on_wake(false, TB_WAKE_WAKING, p); }
SEC("?tp_btf/sched_wakeup")
int BPF_PROG(tb_wakeup_btf, struct task_struct *p) { return on_wake(true, TB_WAKE_WAKEUP, p); }
SEC("?raw_tp/sched_wakeup")
int BPF_PROG(tb_wakeup_raw, struct task_struct *p) { return on_wake(false, TB_WAKE_WAKEUP, p); }
SEC("?tp_btf/sched_wakeup_new")
int BPF_PROG(tb_wakeup_new_btf, struct task_struct *p) { return on_wake(true, TB_WAKE_WAKEUP_NEW, p); }
SEC("?raw_tp/sched_wakeup_new")
int BPF_PROG(tb_wakeup_new_raw, struct task_struct *p) { return on_wake(false, TB_WAKE_WAKEUP_NEW, p); }

/* Process lifecycle, system-wide. current is the parent (fork), the task
 * after exec, the exiting thread, or the renaming task. Recorded even while
 * `tracebpf ctl stop` holds (ctl.h): names and lifetimes keep the trace's
 * view of its processes right. */
static __always_inline int emit_ktask(__u32 kind, struct task_struct *cur, __u32 tid,
				      __u32 tgid, __s32 value, struct task_struct *named,
				      const char *comm2)
{
	__u32 cur_tgid = BPF_CORE_READ(cur, tgid);
	struct tb_rec_ktask *rec;
	__u32 cpu;
	void *rb;

	if (traced_only && !is_traced(cur_tgid) && !is_traced(tgid))
		return 0;
	rec = reserve_rec(sizeof(*rec), &cpu, &rb);
	if (!rec)
		return 0;
	fill_hdr(&rec->hdr, TB_REC_KTASK, sizeof(*rec), cpu, bpf_ktime_get_ns(),
		 ((__u64)cur_tgid << 32) | (__u32)BPF_CORE_READ(cur, pid));
	rec->kind = kind;
	rec->tid = tid;
	rec->tgid = tgid;
	rec->value = value;
	BPF_CORE_READ_INTO(&rec->comm, named, comm);
	__builtin_memset(rec->comm2, 0, sizeof(rec->comm2));
	if (comm2)
		bpf_probe_read_kernel_str(rec->comm2, sizeof(rec->comm2), comm2);
	bpf_ringbuf_submit(rec, wake_flags(rb, sizeof(*rec)));
	return 0;
}

static __always_inline int on_fork(struct task_struct *parent, struct task_struct *child)
{
	return emit_ktask(TB_KTASK_FORK, parent, BPF_CORE_READ(child, pid),
			  BPF_CORE_READ(child, tgid), BPF_CORE_READ(child, prio), child, NULL);
}

SEC("?tp_btf/sched_process_fork")
int BPF_PROG(tb_kfork_btf, struct task_struct *parent, struct task_struct *child)
{
	return on_fork(parent, child);
}

SEC("?raw_tp/sched_process_fork")
int BPF_PROG(tb_kfork_raw, struct task_struct *parent, struct task_struct *child)
{
	return on_fork(parent, child);
}

static __always_inline int on_exec(struct task_struct *p, pid_t old_pid)
{
	return emit_ktask(TB_KTASK_EXEC, p, old_pid, BPF_CORE_READ(p, tgid), 0, p, NULL);
}

SEC("?tp_btf/sched_process_exec")
int BPF_PROG(tb_kexec_btf, struct task_struct *p, pid_t old_pid) { return on_exec(p, old_pid); }
SEC("?raw_tp/sched_process_exec")
int BPF_PROG(tb_kexec_raw, struct task_struct *p, pid_t old_pid) { return on_exec(p, old_pid); }

static __always_inline int on_exit_(struct task_struct *p)
{
	return emit_ktask(TB_KTASK_EXIT, p, BPF_CORE_READ(p, pid), BPF_CORE_READ(p, tgid),
			  BPF_CORE_READ(p, exit_code), p, NULL);
}

SEC("?tp_btf/sched_process_exit")
int BPF_PROG(tb_kexit_btf, struct task_struct *p) { return on_exit_(p); }
SEC("?raw_tp/sched_process_exit")
int BPF_PROG(tb_kexit_raw, struct task_struct *p) { return on_exit_(p); }

/* task_rename fires before the copy: task->comm is still the old name. The
 * COMM record that names traced threads comes from record.bpf.c's tb_rename
 * (loaded even with --no-sched); this one only feeds the scheduler view. */
static __always_inline int on_rename(struct task_struct *task, const char *comm)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	__u32 tid = BPF_CORE_READ(task, pid);

	emit_ktask(TB_KTASK_RENAME, task, tid, tgid, 0, task, comm);
	return 0;
}

SEC("?tp_btf/task_rename")
int BPF_PROG(tb_rename_btf, struct task_struct *task, const char *comm)
{
	return on_rename(task, comm);
}

SEC("?raw_tp/task_rename")
int BPF_PROG(tb_rename_raw, struct task_struct *task, const char *comm)
{
	return on_rename(task, comm);
}

/* Power events: system-wide only (they belong to no process), so user
 * space does not attach these programs with --sched=traced. */
static __always_inline int on_cpu(__u32 kind, unsigned int state, unsigned int cpu_id)
{
	struct tb_rec_cpu *rec;
	struct tb_out o;

	if (kernel_stopped(TB_KOFF_SCHED))
		return 0;
	rec = rec_begin(&o, sizeof(*rec));
	if (!rec)
		return 0;
	fill_hdr(&rec->hdr, TB_REC_CPU, sizeof(*rec), o.cpu, bpf_ktime_get_ns(),
		 bpf_get_current_pid_tgid());
	rec->kind = kind;
	rec->state = state;
	rec->cpu_id = cpu_id;
	rec->pad = 0;
	rec_commit(&o, rec);
	return 0;
}

SEC("?tp_btf/cpu_idle")
int BPF_PROG(tb_idle_btf, unsigned int state, unsigned int cpu_id)
{
	return on_cpu(TB_CPU_IDLE, state, cpu_id);
}

SEC("?raw_tp/cpu_idle")
int BPF_PROG(tb_idle_raw, unsigned int state, unsigned int cpu_id)
{
	return on_cpu(TB_CPU_IDLE, state, cpu_id);
}

SEC("?tp_btf/cpu_frequency")
int BPF_PROG(tb_freq_btf, unsigned int state, unsigned int cpu_id)
{
	return on_cpu(TB_CPU_FREQUENCY, state, cpu_id);
}

SEC("?raw_tp/cpu_frequency")
int BPF_PROG(tb_freq_raw, unsigned int state, unsigned int cpu_id)
{
	return on_cpu(TB_CPU_FREQUENCY, state, cpu_id);
}

/* Run by user space on each CPU (BPF_PROG_TEST_RUN, BPF_F_TEST_RUN_ON_CPU:
 * an IPI, so it cannot interleave with a hot program running with interrupts
 * off) before each drain. Returns 1 when it interrupted a program writing
 * the buffer: user space tries again. */
SEC("?raw_tp")
int tb_stage_flush(void *ctx)
{
	__u32 zero = 0;
	struct tb_stage *st = bpf_map_lookup_elem(&stage, &zero);

	if (!st)
		return 0;
	if (st->busy)
		return 1;
	st->busy = 1;
	stage_flush(st, bpf_get_smp_processor_id());
	st->busy = 0;
	return 0;
}

/* -e SUBSYS:EVENT: one program attached to every selected tracefs event.
 * The BPF cookie (user/kern/sched.c, load_event) holds how many bytes of the
 * raw entry to copy (bits 0-15), the event's fixed size (16-31), the
 * truncated flag (32) and the tracefs event id (40-63): an event with dynamic
 * (__data_loc) fields is copied up to TB_TP_MAX bytes, and if that read
 * fails (the entry ends near an unmapped page) only its fixed part, marked
 * truncated. */
#define TP_SCRATCH (sizeof(struct tb_rec_tp) + TB_TP_MAX)

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8[TP_SCRATCH]);
} tp_scratch SEC(".maps");

/* The -e events by tracefs id: 1 while `tracebpf ctl disable -e` has one
 * off (user space fills in each attached event, 0). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TB_TP_OFF_MAX);
	__type(key, __u32);
	__type(value, __u8);
} tb_tp_off SEC(".maps");

SEC("?tracepoint")
int tb_tp(void *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 len = cookie & 0xffff, fixed = (cookie >> 16) & 0xffff;
	__u16 flags = (cookie >> 32) & TB_TPF_TRUNCATED;
	__u32 zero = 0, cpu, id = cookie >> 40;
	struct tb_rec_tp *rec;
	__u8 *off;
	__u64 size;
	void *rb;

	if (recording_stopped() || (traced_only && !is_traced(pid_tgid >> 32)))
		return 0;
	off = bpf_map_lookup_elem(&tb_tp_off, &id);
	if (off && *off)
		return 0;   /* tracebpf ctl disable -e */
	rec = bpf_map_lookup_elem(&tp_scratch, &zero);
	if (!rec)
		return 0;
	cpu = bpf_get_smp_processor_id();
	rb = cpu_ring(cpu);
	if (len > TB_TP_MAX)
		len = TB_TP_MAX;
	if (bpf_probe_read_kernel((void *)(rec + 1), len, ctx)) {
		len = fixed < TB_TP_MAX ? fixed : TB_TP_MAX;
		flags |= TB_TPF_TRUNCATED;
		if (bpf_probe_read_kernel((void *)(rec + 1), len, ctx))
			return 0;
	}
	rec->id = cookie >> 40;
	/* Syscall tracepoints hand BPF a pt_regs pointer where the common
	 * fields are: put back what ftrace would have (and leak no kernel
	 * address into the file). */
	if (len >= 8 && *(__u16 *)(rec + 1) != (__u16)rec->id) {
		struct { __u16 type; __u8 flags, preempt; __s32 pid; } *common = (void *)(rec + 1);

		common->type = rec->id;
		common->flags = 0;
		common->preempt = 0;
		common->pid = (__u32)pid_tgid;
	}
	rec->len = len;
	rec->flags = flags;
	size = TB_REC_ALIGN(sizeof(*rec) + len);
	fill_hdr(&rec->hdr, TB_REC_TP, size, cpu, bpf_ktime_get_ns(), pid_tgid);
	if (size > TP_SCRATCH)
		return 0;
	if (rb && !ring_put(rb, 0, cpu, rec, size, wake_flags(rb, size)))
		return 0;
	/* the spill ring (output_rec, spelled out: the verifier must see the
	 * bound on size at each call) */
	rb = spill_ring(cpu);
	if (size > TP_SCRATCH || !rb ||
	    ring_put(rb, 1, cpu, rec, size, BPF_RB_FORCE_WAKEUP))
		count_lost(cpu, 1, rec->hdr.ts, rec->hdr.ts, (__u32)pid_tgid);
	return 0;
}

