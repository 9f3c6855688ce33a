// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record.bpf.c - the kernel half of `tracebpf record`.
 *
 * USDT hits in traced processes and their lifecycle (fork, exec, exit)
 * become records (lib/format/tbrecords.h) in one BPF ring buffer per CPU. The set of
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

#include "tracebpf/site.h"
#include "format/tbrecords.h"
#include "ring.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set between open and load (see user/record/record.c). wakeup_bytes, the rings,
 * the drop counter and the traced set come from ring.bpf.h, shared with
 * sched.bpf.c. */
/* Stop a traced process at exec and when its dynamic loader maps objects,
 * until user space has attached to the new objects (see `stopped`). */
const volatile bool stop_for_attach = false;


/* Which sites this CPU has already reported, with their argument types: a
 * direct-mapped cache of one 64-bit word per slot, per CPU (an inlined array
 * access, where a hash map costs a hashed lookup per hit). A word is
 * the hash of (process image, site) with its low 12 bits replaced by the
 * site's info; one aligned 8-byte store, so a program preempted on this CPU
 * by another never leaves a torn slot. A miss (first hit on this CPU, or a
 * slot taken by another site) reports the descriptor again: every report
 * carries the same bytes (the
 * converter keeps the last, pack drops duplicates), so a miss costs time,
 * never correctness. Two sites share a slot's tag only if
 * 52 bits of their hashes agree. */
#define SITE_CACHE_BITS 14
#define SITE_CACHE_SLOTS (1u << SITE_CACHE_BITS)
struct site_cache {
	__u64 slot[SITE_CACHE_SLOTS];
	/* The latest time a report on this CPU was stamped with. An event's
	 * time is the application's clock read before the probe, so another
	 * thread's event can reach this CPU after a report stamped later than
	 * itself; the converter, which reads in time order, must see the
	 * descriptor first, so such an event reports it again (rare: it takes
	 * a switch between the clock read and the probe). */
	__u64 last_report;
};

/* One entry per CPU, indexed by CPU (user space sets max_entries to the
 * number of possible CPUs): a per-CPU array's value is limited to 32 KiB. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct site_cache);
} site_cache SEC(".maps");

/* Site info, the low 12 bits of a cache word: arg_type[0] (bits 0-2),
 * arg_type[1] (3-5), copy_name (6), valid (7), what a lost hit does to
 * its thread's slices (8-9, TB_LOST_*: a BEGIN or an END), the
 * descriptor read (10: 8-9 hold even when its SITE record was lost). */
#define SI_TYPE0(i)     ((i) & 7)
#define SI_TYPE1(i)     (((i) >> 3) & 7)
#define SI_COPY_NAME    0x40u
#define SI_VALID        0x80u
#define SI_LOST_SHIFT   8
#define SI_READ         0x400u
#define SITE_TAG_MASK   (~0xfffULL)

/* What losing a hit of a site with this info does to its thread's stack
 * (TB_LOST_*): not known unless its descriptor was read. */
static __always_inline __u64 si_lost(__u32 info)
{
	return info & SI_READ ? (info >> SI_LOST_SHIFT) & 3 : TB_LOST_ANY;
}

static __always_inline __u64 site_hash(__u64 gen, __u64 addr)
{
	__u64 h = (addr ^ (gen * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;

	return h ^ (h >> 29);
}

static __always_inline bool si_has_str(__u32 info)
{
	return SI_TYPE0(info) == TB_ARG_STR || SI_TYPE1(info) == TB_ARG_STR;
}

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

/* Traced processes stopped (SIGSTOP from their own context) at exec or at
 * the loader's _dl_debug_state hook: tgid -> TB_STOP_*. User space attaches
 * to the objects they now map, deletes the entry and sends SIGCONT, so no
 * probe hit of a new image or dlopen'ed library is missed. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} stopped SEC(".maps");

/* Which process each CPU last recorded for, and its generation: a hit
 * checks it with inlined array accesses where the `traced` hash costs a
 * helper call (about 50 ns per hit on this kind of machine, most of it the
 * calls' mitigations). A slot is valid for one value of traced_epoch, which
 * the kernel side advances after every change it makes to `traced` (fork,
 * exec, exit). Only traced processes are cached, so a process user space
 * adds (a new target) invalidates nothing and advances nothing. */
struct proc_slot {
	__u64 key;   /* tgid << 32 | (u32)epoch; 0 while being written */
	__u64 gen;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);   /* user space: the number of possible CPUs */
	__type(key, __u32);
	__type(value, struct proc_slot);
} proc_cache SEC(".maps");

/* Advanced after the kernel side changes `traced` (see proc_cache). */
__u64 traced_epoch = 0;

/* Processes that could not be added to `traced` because it was full. */
__u64 lost_procs = 0;

/* Generations handed out by the kernel side start above those user space
 * gives the initial targets (1..N), so (gen, addr) never collides. */
__u64 next_gen = 1ULL << 32;


static __always_inline void *scratch_buf(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&scratch, &zero);
}

/* Report a site descriptor (a TB_REC_SITE in this CPU's ring, ahead of the
 * event) and return its info bits (SI_*), without SI_VALID when the
 * descriptor could not be reported (the event is still recorded; the
 * converter counts it as unresolved, and the next hit tries again), 0 when
 * it could not be read. */
static __noinline __u32 report_site(void *rb, __u64 addr, __u32 cpu, __u64 ts,
				    __u64 pid_tgid)
{
	struct tb_rec_site *rec;
	struct tracebpf_site *us;
	__u8 *buf = scratch_buf();
	__u32 len, info, read;
	__u64 size;

	if (!buf)
		return 0;
	rec = (void *)buf;
	us = (void *)(buf + sizeof(*rec));
	__builtin_memset(rec, 0, sizeof(*rec));
	if (bpf_probe_read_user(us, sizeof(*us), (void *)addr) ||
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
		if (bpf_probe_read_user(us, len, (void *)addr)) {
			rec->flags = TB_SITEF_FAULT;
			len = 0;
		}
	}
	size = TB_REC_ALIGN(sizeof(*rec) + len);
	fill_hdr(&rec->hdr, TB_REC_SITE, size, cpu, ts, pid_tgid);
	rec->site = addr;
	rec->len = len;
	if (size > SCRATCH_SIZE)
		return 0;
	if (rec->flags & TB_SITEF_FAULT)
		read = 0;
	else
		read = SI_READ | (__u32)(us->phase == TRACEBPF_PHASE_BEGIN ? TB_LOST_BEGIN :
					 us->phase == TRACEBPF_PHASE_END ? TB_LOST_END :
					 TB_LOST_NONE) << SI_LOST_SHIFT;
	if (ring_output(rb, cpu, buf, size, ts, pid_tgid))
		return read;   /* not cached: the next hit reports it */
	if (rec->flags & TB_SITEF_FAULT)
		return 0;   /* the page may be in at the next hit */
	info = SI_VALID | read | (us->flags & TB_SITE_COPY_NAME ? SI_COPY_NAME : 0);
	if (us->nargs > 0 && us->arg_type[0] <= 7)
		info |= us->arg_type[0];
	if (us->nargs > 1 && us->arg_type[1] <= 7)
		info |= (__u32)us->arg_type[1] << 3;
	return info;
}

/* One USDT hit (BPF subprograms take at most five arguments). */
struct hit {
	__u64 site, a0, a1, ts, pid_tgid, id, name;
	__u32 cpu;
	__u32 is_id;   /* an event_id site: TB_REC_EVENT_ID */
};

/* Copy one user string (bounded by TB_STR_MAX) to buf + *off. */
static __always_inline int copy_str(__u8 *buf, __u32 *off, __u64 uptr, __u16 *len,
				    __u32 *flags, __u32 fault)
{
	__u32 o = *off;
	long n;

	if (o > SCRATCH_SIZE - TB_STR_MAX)
		return -1;
	n = bpf_probe_read_user_str(buf + o, TB_STR_MAX, (void *)uptr);
	if (n < 0) {
		*flags |= fault;
		n = 0;
	}
	n &= 2 * TB_STR_MAX - 1;   /* bound for the verifier; n <= TB_STR_MAX */
	*len = n;
	*off = o + n;
	return 0;
}

/* An event with strings (arguments, runtime name): copy each string
 * behind the fixed part, in a scratch buffer. */
static __noinline int emit_event_str(void *rb, __u32 info, struct hit *h)
{
	__u8 *buf = scratch_buf();
	struct tb_rec_event *ev;
	__u32 off, flags = 0;
	__u16 len;
	__u64 size;

	if (!buf)
		return 0;
	ev = (void *)buf;
	ev->site = h->site;
	ev->args[0] = h->a0;
	ev->args[1] = h->a1;
	ev->str_len[0] = 0;
	ev->str_len[1] = 0;
	off = h->is_id ? sizeof(struct tb_rec_event_id) : sizeof(*ev);
	if (SI_TYPE0(info) == TB_ARG_STR) {
		if (copy_str(buf, &off, h->a0, &len, &flags, TB_EVF_STR_FAULT))
			return 0;
		ev->str_len[0] = len;
	}
	if (SI_TYPE1(info) == TB_ARG_STR) {
		if (copy_str(buf, &off, h->a1, &len, &flags, TB_EVF_STR_FAULT))
			return 0;
		ev->str_len[1] = len;
	}
	if (h->is_id) {
		struct tb_rec_event_id *x = (void *)buf;

		x->id = h->id;
		x->name_len = 0;
		x->pad[0] = x->pad[1] = x->pad[2] = 0;
		if (info & SI_COPY_NAME) {
			if (copy_str(buf, &off, h->name, &len, &flags, TB_EVF_NAME_FAULT))
				return 0;
			x->name_len = len;
		}
	}
	ev->flags = flags;
	size = TB_REC_ALIGN(off);
	if (size > SCRATCH_SIZE)
		return 0;
	fill_hdr(&ev->hdr, h->is_id ? TB_REC_EVENT_ID : TB_REC_EVENT, size, h->cpu,
		 h->ts, h->pid_tgid);
	ring_output_what(rb, h->cpu, buf, size, h->ts, h->pid_tgid, si_lost(info));
	return 0;
}

/* The site's info from this CPU's cache, reporting the descriptor on a
 * miss; 0 when it could not be reported. */
static __always_inline __u32 site_info(void *rb, struct hit *h, __u64 gen)
{
	__u64 hash = site_hash(gen, h->site), tag = hash & SITE_TAG_MASK;
	__u32 idx = hash >> (64 - SITE_CACHE_BITS), info;
	struct site_cache *c = bpf_map_lookup_elem(&site_cache, &h->cpu);
	__u64 word;

	if (!c)
		return report_site(rb, h->site, h->cpu, h->ts, h->pid_tgid);
	idx &= SITE_CACHE_SLOTS - 1;
	word = c->slot[idx];
	if ((word & SITE_TAG_MASK) == tag && (word & SI_VALID) && h->ts >= c->last_report)
		return word & ~SITE_TAG_MASK;
	info = report_site(rb, h->site, h->cpu, h->ts, h->pid_tgid);
	if (info & SI_VALID) {
		c->slot[idx] = tag | info;
		max_tries(&c->last_report, h->ts);   /* lost only to four reports meanwhile */
	}
	return info;
}

/* The filters (record --tid, tracebpf ctl filter): while tb_ctl's STATE
 * says so, only the threads in tb_tids and the processes in tb_pids have
 * their application events recorded. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TB_FILTER_MAX);
	__type(key, __u32);
	__type(value, __u8);
} tb_tids SEC(".maps"), tb_pids SEC(".maps");

/* The filters let this thread's application events through. */
static __always_inline bool filters_pass(const struct tb_ctl *c, __u64 pid_tgid)
{
	__u32 tid = (__u32)pid_tgid, pid = pid_tgid >> 32, filter = c->filter;

	if (!filter)
		return true;
	return (!(filter & TB_FILTER_TID) || bpf_map_lookup_elem(&tb_tids, &tid)) &&
	       (!(filter & TB_FILTER_PID) || bpf_map_lookup_elem(&tb_pids, &pid));
}

/* Recording is on, and the filters let this thread's events through. */
static __always_inline bool recording_chosen(__u64 pid_tgid)
{
	__u32 key = TB_CTL_STATE;
	struct tb_ctl *c = bpf_map_lookup_elem(&tb_ctl, &key);

	return !c || (!c->off && filters_pass(c, pid_tgid));
}

static __always_inline void traced_changed(void)
{
	__sync_fetch_and_add(&traced_epoch, 1);
}

/* The generation of process tgid when it is traced, else 0 (generations
 * start at 1). The slot is read key, gen, key and written key = 0, gen,
 * key, each access once (volatile): another task that preempts this one on
 * the same CPU and rewrites the slot changes the key between the two reads,
 * and a key that reads the same twice belongs to the gen read between
 * them (a process's gen only changes with the epoch). */
static __always_inline __u64 traced_gen(__u32 tgid, __u32 cpu)
{
	volatile struct proc_slot *s = bpf_map_lookup_elem(&proc_cache, &cpu);
	__u64 want = (__u64)tgid << 32 | (__u32)traced_epoch, k, gen;
	struct tb_proc_gen *p;

	if (s) {
		k = s->key;
		gen = s->gen;
		if (k == want && s->key == want)
			return gen;
	}
	p = bpf_map_lookup_elem(&traced, &tgid);
	if (!p)
		return 0;
	gen = p->gen;
	if (s) {
		s->key = 0;
		s->gen = gen;
		s->key = want;
	}
	return gen;
}

/* log2 of each CPU's slots (user space, from --buffer-size); 0: none. */
const volatile __u32 slot_bits = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);   /* user space: the number of possible CPUs */
	__type(key, __u32);
	__type(value, struct tb_slot_pos);
} slot_pos SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);   /* user space: CPUs << slot_bits */
	__type(key, __u32);
	__type(value, struct tb_slot);
} slots SEC(".maps");

/* A fixed-size event into this CPU's slot ring (tbrecords.h, struct tb_slot):
 * two inlined array lookups, an exchange and plain stores, where
 * bpf_ringbuf_output() and the wakeup query were two helper calls. -1
 * when the ring is full or another program is writing it (preempted on
 * this CPU): the caller takes the ring buffer. x86 keeps stores in order,
 * so the recorder that sees the new head sees the slot. */
static __always_inline int slot_put(struct hit *h, __u64 kind)
{
	__u64 n = 1ull << slot_bits, head;
	struct tb_slot_pos *p;
	struct tb_slot *s;
	__u32 idx;

	if (!slot_bits)
		return -1;
	p = bpf_map_lookup_elem(&slot_pos, &h->cpu);
	if (!p || __sync_lock_test_and_set(&p->busy, 1))
		return -1;
	head = p->head;
	idx = h->cpu << slot_bits | (__u32)(head & (n - 1));
	s = head - *(volatile __u64 *)&p->tail < n ? bpf_map_lookup_elem(&slots, &idx) : NULL;
	if (s) {
		s->ts = h->ts;
		s->pid_tgid = h->pid_tgid;
		s->site = (h->site & TB_SLOT_ADDR) | kind;
		s->args[0] = h->a0;
		s->args[1] = h->a1;
		s->id = h->id;
		asm volatile("" ::: "memory");
		*(volatile __u64 *)&p->head = head + 1;
	}
	asm volatile("" ::: "memory");
	*(volatile __u64 *)&p->busy = 0;
	return s ? 0 : -1;
}

/* Both probes: filter, report the site once per CPU, emit the record.
 * is_id is a constant in each caller, so each program has one path. */
static __always_inline int on_hit(struct hit *h, const bool is_id)
{
	struct tb_rec_event_id x;
	struct tb_rec_event *ev = &x.ev;
	__u64 gen;
	__u32 info;
	void *rb;

	h->cpu = bpf_get_smp_processor_id();
	gen = traced_gen(h->pid_tgid >> 32, h->cpu);
	if (!gen || !recording_chosen(h->pid_tgid))
		return 0;
	h->is_id = is_id;
	rb = cpu_ring(h->cpu);
	if (!rb) {
		count_lost(h->cpu, 1, h->ts, h->ts, LOST_WHO(h->pid_tgid, TB_LOST_ANY));
		return 0;
	}
	info = site_info(rb, h, gen);
	if (si_has_str(info) || (is_id && (info & SI_COPY_NAME)))
		return emit_event_str(rb, info, h);
	/* a pending gap mark goes ahead of the record, in the ring buffer */
	if (!gap_pending(h->cpu) &&
	    !slot_put(h, is_id ? TB_SLOT_ID | (!(info & SI_VALID) ?
					       (__u64)TB_EVF_NAME_FAULT << TB_SLOT_FLAGS_SHIFT : 0)
			       : 0))
		return 0;

	/* Built on the stack and copied by one bpf_ringbuf_output(): one helper
	 * call where reserve + submit are two. */
	fill_hdr(&ev->hdr, is_id ? TB_REC_EVENT_ID : TB_REC_EVENT,
		 is_id ? sizeof(x) : sizeof(*ev), h->cpu, h->ts, h->pid_tgid);
	ev->site = h->site;
	ev->args[0] = h->a0;
	ev->args[1] = h->a1;
	ev->str_len[0] = 0;
	ev->str_len[1] = 0;
	/* an event_id site whose descriptor could not be read: no name copied */
	ev->flags = is_id && !(info & SI_VALID) ? TB_EVF_NAME_FAULT : 0;
	if (is_id) {
		x.id = h->id;
		x.name_len = 0;
		x.pad[0] = x.pad[1] = x.pad[2] = 0;
	}
	ring_output_what(rb, h->cpu, &x, is_id ? sizeof(x) : sizeof(*ev), h->ts, h->pid_tgid,
			 si_lost(info));
	return 0;
}

/* tracebpf:event sites of the current header: site, a0, a1 and the time the
 * application read (CLOCK_MONOTONIC, as bpf_ktime_get_ns) in fixed
 * registers (TRACEBPF_REGS_EVENT), read straight from the saved registers. */
SEC("usdt")
int tb_event(struct pt_regs *ctx)
{
	struct hit h = { .ts = ctx->r8, .site = ctx->di, .a0 = ctx->si,
			 .a1 = ctx->dx, .pid_tgid = bpf_get_current_pid_tgid() };

	return on_hit(&h, false);
}

/* tracebpf:event_id: site, id, runtime name, a0, a1, time
 * (TRACEBPF_REGS_EVENT_ID). */
SEC("usdt")
int tb_event_id(struct pt_regs *ctx)
{
	struct hit h = { .ts = ctx->r8, .site = ctx->di, .id = ctx->si,
			 .name = ctx->dx, .a0 = ctx->cx, .a1 = ctx->ax,
			 .pid_tgid = bpf_get_current_pid_tgid() };

	return on_hit(&h, true);
}

/* The same probes in binaries whose notes name other registers (built with
 * an older trace.h, whose probes pass no time): libbpf decodes each argument
 * from the note's spec, and the time is the kernel's. */
SEC("usdt")
int BPF_USDT(tb_event_usdt, __u64 site, __u64 a0, __u64 a1)
{
	struct hit h = { .ts = bpf_ktime_get_ns(), .site = site, .a0 = a0, .a1 = a1,
			 .pid_tgid = bpf_get_current_pid_tgid() };

	return on_hit(&h, false);
}

SEC("usdt")
int BPF_USDT(tb_event_id_usdt, __u64 site, __u64 id, __u64 name, __u64 a0, __u64 a1)
{
	struct hit h = { .ts = bpf_ktime_get_ns(), .site = site, .a0 = a0, .a1 = a1,
			 .id = id, .name = name, .pid_tgid = bpf_get_current_pid_tgid() };

	return on_hit(&h, true);
}

/* Other programs' probes (record --usdt): which arguments of each probe id
 * are strings, copied at the hit (bit k: the note's argument k), and
 * TB_USDT_SWITCH_ONLY for a probe attached only to raise its semaphore
 * (--usdt-enable). User space sets it before attaching the probe. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TB_USDT_MAX_PROBES);
	__type(key, __u32);
	__type(value, __u32);
} usdt_strs SEC(".maps");

_Static_assert(sizeof(struct tb_rec_usdt) + 4 * TB_STR_MAX <= SCRATCH_SIZE, "scratch");

/* The string arguments of a hit, behind its fixed part: each one that has
 * no room left is marked unreadable. */
static __always_inline __u32 usdt_strings(__u8 *buf, struct tb_rec_usdt *u, __u32 mask)
{
	__u32 off = sizeof(*u), flags = 0;
	__u16 len;

	for (int k = 0; k < TB_USDT_MAX_ARGS; k++) {
		if (!(mask & (1u << k)) || k >= u->nargs)
			continue;
		if (copy_str(buf, &off, u->args[k], &len, &flags, TB_EVF_STR_FAULT)) {
			flags |= TB_EVF_STR_FAULT;
			continue;
		}
		u->str_len[k] = len;
	}
	u->flags = flags;
	return off;
}

/* One hit of a traced process: its arguments as libbpf decodes them from
 * the note's spec, into a TB_REC_USDT. */
static __noinline int emit_usdt(struct pt_regs *ctx, __u32 cpu, __u64 ts, __u64 pid_tgid)
{
	__u8 *buf = scratch_buf();
	struct tb_rec_usdt *u;
	__u32 id, off, *mask;
	void *rb = cpu_ring(cpu);
	__u64 size;
	long n, v;

	if (!rb) {
		count_lost(cpu, 1, ts, ts, LOST_WHO(pid_tgid, TB_LOST_ANY));
		return 0;
	}
	if (!buf)
		return 0;
	u = (void *)buf;
	__builtin_memset(u, 0, sizeof(*u));
	id = (__u32)bpf_usdt_cookie(ctx);
	u->probe = id;
	n = bpf_usdt_arg_cnt(ctx);
	u->nargs = n < 0 ? 0 : n > TB_USDT_MAX_ARGS ? TB_USDT_MAX_ARGS : n;
	for (int k = 0; k < TB_USDT_MAX_ARGS; k++) {
		if (k >= u->nargs)
			break;
		if (!bpf_usdt_arg(ctx, k, &v))
			u->args[k] = v;
	}
	mask = bpf_map_lookup_elem(&usdt_strs, &id);
	off = mask && *mask ? usdt_strings(buf, u, *mask) : sizeof(*u);
	size = TB_REC_ALIGN(off);
	if (size > SCRATCH_SIZE)
		return 0;
	fill_hdr(&u->hdr, TB_REC_USDT, size, cpu, ts, pid_tgid);
	/* its probe's kind is user space's: a BEGIN, an END or neither */
	ring_output_what(rb, cpu, buf, size, ts, pid_tgid, TB_LOST_ANY);
	return 0;
}

/* The processes whose command line a hit wrote (emit_cmdline): tgid ->
 * their generation (a pid reused is another process). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} usdt_named SEC(".maps");

#define CMDLINE_COPY 256   /* bytes of the argument area copied */

/* A process's first hit: its command line as it is now (TB_REC_CMDLINE,
 * the argument area's bytes; the reader turns the NULs between the
 * arguments into spaces). A forking server rewrites that area after fork
 * to say what the child does ("postgres: alice shop [local] idle"), and
 * the child may be gone before user space could read /proc. */
static __noinline int emit_cmdline(__u32 cpu, __u64 ts, __u64 pid_tgid, __u64 gen)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = pid_tgid >> 32;
	__u8 *buf = scratch_buf();
	struct tb_rec_cmdline *rec;
	__u64 *seen, start, len, size;
	void *rb = cpu_ring(cpu);

	seen = bpf_map_lookup_elem(&usdt_named, &tgid);
	if ((seen && *seen == gen) || !buf || !rb || !task->mm)
		return 0;
	bpf_map_update_elem(&usdt_named, &tgid, &gen, BPF_ANY);
	start = task->mm->arg_start;
	len = task->mm->arg_end - start;
	if (len > CMDLINE_COPY - 1)
		len = CMDLINE_COPY - 1;
	rec = (void *)buf;
	__builtin_memset(rec, 0, sizeof(*rec));
	len &= CMDLINE_COPY - 1;
	if (!len || bpf_probe_read_user(buf + sizeof(*rec), len, (void *)start))
		return 0;
	buf[(sizeof(*rec) + len) & (SCRATCH_SIZE - 1)] = 0;
	rec->len = len + 1;
	size = TB_REC_ALIGN(sizeof(*rec) + len + 1);
	if (size > SCRATCH_SIZE)
		return 0;
	fill_hdr(&rec->hdr, TB_REC_CMDLINE, size, cpu, ts, pid_tgid);
	ring_output(rb, cpu, buf, size, ts, pid_tgid);
	return 0;
}

/* Any probe of another program (record --usdt), the probe's id in the
 * cookie: a hit of a traced process while recording is on. */
SEC("usdt")
int tb_usdt(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), ts = bpf_ktime_get_ns();
	__u32 cpu = bpf_get_smp_processor_id(), id = (__u32)bpf_usdt_cookie(ctx), *flags;

	__u64 gen;

	flags = bpf_map_lookup_elem(&usdt_strs, &id);
	if (flags && (*flags & TB_USDT_SWITCH_ONLY))
		return 0;
	gen = traced_gen(pid_tgid >> 32, cpu);
	if (!gen || !recording_chosen(pid_tgid))
		return 0;
	emit_cmdline(cpu, ts, pid_tgid, gen);
	return emit_usdt(ctx, cpu, ts, pid_tgid);
}


SEC("tp_btf/sched_process_fork")
int BPF_PROG(tb_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid;
	__u32 ctgid = child->tgid;
	struct tb_rec_fork *rec;
	struct tb_proc_gen np;
	__u64 flags;
	__u32 cpu;
	void *rb;

	if (!bpf_map_lookup_elem(&traced, &ptgid))
		return 0;
	/* Add the child before it can run: its first instruction is traced. */
	if (ctgid != ptgid) {
		np.gen = __sync_fetch_and_add(&next_gen, 1);
		if (bpf_map_update_elem(&traced, &ctgid, &np, BPF_ANY))
			__sync_fetch_and_add(&lost_procs, 1);
		traced_changed();
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
	/* the recorder makes a new thread or process its fast-path ring
	 * before its first event, if it hears of it soon */
	flags = wake_soon(rec->hdr.ts);
	if (flags == BPF_RB_NO_WAKEUP)
		flags = wake_flags(rb, sizeof(*rec));
	bpf_ringbuf_submit(rec, flags);
	return 0;
}

#define SIGSTOP 19

/* Stop the current (traced) process until user space has attached to what
 * it now maps. The signal is queued before the map entry appears, so the
 * SIGCONT user space sends after seeing the entry can never come first (a
 * SIGCONT discards a pending SIGSTOP anyway). The task stops on its way
 * back to user space, before any instruction of the new code. */
static __always_inline bool stop_self(__u32 tgid, __u32 why)
{
	if (!stop_for_attach)
		return false;
	if (bpf_send_signal(SIGSTOP))
		return false;
	bpf_map_update_elem(&stopped, &tgid, &why, BPF_ANY);
	return true;
}

/* Wake the recorder now (TB_RING_KICK). Not a trace record: a full ring
 * loses no event here, and its own threshold wakeup has woken the recorder. */
static __always_inline void kick_recorder(void)
{
	__u32 cpu = bpf_get_smp_processor_id();
	void *rb = cpu_ring(cpu);
	struct tb_rec_hdr *h;

	if (!rb)
		return;
	h = bpf_ringbuf_reserve(rb, sizeof(*h), 0);
	if (!h)
		return;
	fill_hdr(h, TB_RING_KICK, sizeof(*h), cpu, 0, bpf_get_current_pid_tgid());
	bpf_ringbuf_submit(h, BPF_RB_FORCE_WAKEUP);
}

/* The dynamic loader calls _dl_debug_state() (the r_brk debugger hook)
 * before and after it changes the list of loaded objects, e.g. at dlopen. */
SEC("uprobe")
int tb_dlstate(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (!bpf_map_lookup_elem(&traced, &tgid))
		return 0;
	/* the process waits for user space: wake it now */
	if (stop_self(tgid, TB_STOP_DLOPEN))
		kick_recorder();
	return 0;
}

/* A traced thread renamed itself (prctl(PR_SET_NAME), pthread_setname_np,
 * a write to /proc/.../comm): the tracepoint fires before the copy, so the
 * new name is the argument. */
SEC("tp_btf/task_rename")
int BPF_PROG(tb_rename, struct task_struct *task, const char *comm)
{
	__u32 tgid = task->tgid;
	struct tb_rec_comm *rec;
	__u32 cpu;
	void *rb;

	if (!bpf_map_lookup_elem(&traced, &tgid))
		return 0;
	rec = reserve_rec(sizeof(*rec), &cpu, &rb);
	if (!rec)
		return 0;
	fill_hdr(&rec->hdr, TB_REC_COMM, sizeof(*rec), cpu, bpf_ktime_get_ns(),
		 ((__u64)tgid << 32) | (__u32)task->pid);
	bpf_probe_read_kernel_str(rec->comm, sizeof(rec->comm), comm);
	bpf_ringbuf_submit(rec, wake_flags(rb, sizeof(*rec)));
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(tb_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid;
	struct tb_rec_exec *rec;
	struct tb_proc_gen *pr;
	__u32 cpu;
	void *rb;

	pr = bpf_map_lookup_elem(&traced, &tgid);
	if (!pr)
		return 0;
	/* A new image: its sites are new even at the same addresses. */
	pr->gen = __sync_fetch_and_add(&next_gen, 1);
	traced_changed();
	stop_self(tgid, TB_STOP_EXEC);
	/* lost, it leaves the thread's slices open where the exec ended them */
	rec = reserve_rec_what(sizeof(*rec), &cpu, &rb, TB_LOST_ANY);
	if (!rec)
		return 0;
	fill_hdr(&rec->hdr, TB_REC_EXEC, sizeof(*rec), cpu, bpf_ktime_get_ns(),
		 bpf_get_current_pid_tgid());
	rec->old_tid = old_pid;
	rec->pad = 0;
	bpf_probe_read_kernel_str(rec->comm, sizeof(rec->comm), p->comm);
	bpf_probe_read_kernel_str(rec->filename, sizeof(rec->filename),
				  BPF_CORE_READ(bprm, filename));
	/* the process may be waiting for user space: wake it now */
	bpf_ringbuf_submit(rec, stop_for_attach ? BPF_RB_FORCE_WAKEUP :
			   wake_flags(rb, sizeof(*rec)));
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
	rec = reserve_rec_what(sizeof(*rec), &cpu, &rb, TB_LOST_ANY);   /* as an exec */
	if (rec) {
		fill_hdr(&rec->hdr, TB_REC_EXIT, sizeof(*rec), cpu, bpf_ktime_get_ns(),
			 ((__u64)tgid << 32) | (__u32)task->pid);
		rec->flags = group_dead ? TB_EXITF_PROCESS : 0;
		rec->exit_code = task->exit_code;
		bpf_probe_read_kernel_str(rec->comm, sizeof(rec->comm), task->comm);
		/* a process is gone: the recorder may be done, tell it now */
		bpf_ringbuf_submit(rec, group_dead ? BPF_RB_FORCE_WAKEUP :
				   wake_flags(rb, sizeof(*rec)));
	}
	/* After the record: user space sees the map empty only once the last
	 * exit record is in a ring. */
	if (group_dead) {
		bpf_map_delete_elem(&traced, &tgid);
		traced_changed();
	}
	return 0;
}

#include "fast.bpf.h"

/* kmem:rss_stat: a traced process's resident memory, when the process
 * itself changed it (curr: the mm is the current task's; reclaim by
 * kswapd is seen at the process's next own change). Sampled per process
 * and kind: a record when the count moved by TB_RSS_STEP bytes or
 * TB_RSS_NS passed since the last (lib/format/tbrecords.h, TB_REC_RSS). */
struct rss_stat_args {
	__u64 common;
	__u32 mm_id;
	__u32 curr;
	__s32 member;
	__s32 pad;
	__s64 size;
};

struct rss_last {
	__u64 ts[4];
	__s64 bytes[4];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct rss_last);
} rss_last SEC(".maps");

SEC("?tracepoint/kmem/rss_stat")
int tb_rss(struct rss_stat_args *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), now;
	__u32 tgid = pid_tgid >> 32, m = ctx->member & 3, cpu;
	struct rss_last *last, zero = {};
	struct tb_rec_rss *rec;
	void *rb;
	__s64 d;

	if (!ctx->curr || ctx->member < 0 || ctx->member > 3 || recording_stopped() ||
	    !bpf_map_lookup_elem(&traced, &tgid))
		return 0;
	last = bpf_map_lookup_elem(&rss_last, &tgid);
	if (!last) {
		bpf_map_update_elem(&rss_last, &tgid, &zero, BPF_NOEXIST);
		last = bpf_map_lookup_elem(&rss_last, &tgid);
		if (!last)
			return 0;
	}
	now = bpf_ktime_get_ns();
	d = ctx->size - last->bytes[m];
	if (last->ts[m] && d < TB_RSS_STEP && d > -(__s64)TB_RSS_STEP &&
	    now - last->ts[m] < TB_RSS_NS)
		return 0;
	last->ts[m] = now;
	last->bytes[m] = ctx->size;
	rec = reserve_rec(sizeof(*rec), &cpu, &rb);
	if (!rec)
		return 0;
	fill_hdr(&rec->hdr, TB_REC_RSS, sizeof(*rec), cpu, now, pid_tgid);
	rec->member = m;
	rec->pad = 0;
	rec->bytes = ctx->size;
	bpf_ringbuf_submit(rec, wake_flags(rb, sizeof(*rec)));
	return 0;
}
