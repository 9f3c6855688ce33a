/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fast.bpf.h - the fast path's kernel side (docs/design.md, "The fast
 * path"), included at the end of record.bpf.c: the request for a thread's
 * ring, and the program that drains the threads' rings into this CPU's
 * ring as ordinary records.
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

SEC("usdt")
int tb_ring_req(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct tb_ring_req *rec;
	__u32 cpu;
	void *rb;

	cpu = bpf_get_smp_processor_id();
	if (!traced_gen(pid_tgid >> 32, cpu) || recording_stopped())
		return 0;
	rec = reserve_rec(sizeof(*rec), &cpu, &rb);
	if (!rec)
		return 0;
	fill_hdr(&rec->hdr, TB_RING_FAST_REQ, sizeof(*rec), cpu, bpf_ktime_get_ns(), pid_tgid);
	rec->key = ctx->di;
	bpf_ringbuf_submit(rec, wake_soon(rec->hdr.ts));
	return 0;
}

/* Events are gathered here, back to back, and written to the recorder's
 * ring in one bpf_ringbuf_output per batch (the recorder takes a ring
 * record holding several records, as the scheduler programs' staging):
 * a helper call per batch instead of one per event. Used only by
 * tb_fast_drain, which the recorder runs from one thread. */
#define FAST_BATCH_EVENTS (SCRATCH_SIZE / sizeof(struct tb_rec_event))

struct fast_batch {
	struct tb_rec_event ev[FAST_BATCH_EVENTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fast_batch);
} fast_batch SEC(".maps");

struct fast_cb {
	struct tb_fast_drain *d;
	struct fast_batch *b;
	void *rb;
	__u64 rb_size;
	__u64 pid_tgid;
	__u64 stop_ts;    /* records from here on are dropped: ctl stop */
	__u64 first_ts;   /* of the batch */
	__u64 last_ts;
	__u32 n;          /* events in the batch */
	__u32 cpu;
	bool skip;        /* a thread the filters leave out: its events too */
};

/* A record (or batch of n) the recorder's ring refuses is counted, with a
 * gap mark naming the ring's thread (ring.bpf.h). */
static __always_inline int fast_out(struct fast_cb *c, void *rec, __u64 size, __u64 n,
				    __u64 first, __u64 last)
{
	if (ring_put(c->rb, 0, c->cpu, rec, size, BPF_RB_NO_WAKEUP)) {
		count_lost(c->cpu, n, first, last, (__u32)c->pid_tgid);
		c->d->dropped += n;
		return -1;
	}
	return 0;
}

/* The batch so far into the recorder's ring. */
static __always_inline void fast_flush(struct fast_cb *c)
{
	__u64 n = c->n, size = n * sizeof(struct tb_rec_event);

	c->n = 0;
	if (!size || size > sizeof(struct fast_batch))
		return;
	fast_out(c, c->b->ev, size, n, c->first_ts, c->last_ts);
}

/* Room in the recorder's ring for the largest record a sample makes and a
 * full batch: the drain stops before a sample it could not write (a
 * sample is consumed once taken). */
#define FAST_ROOM (2 * SCRATCH_SIZE)

static __always_inline bool room_left(struct fast_cb *c)
{
	if (bpf_ringbuf_query(c->rb, BPF_RB_AVAIL_DATA) + FAST_ROOM <= c->rb_size)
		return true;
	c->d->full = 1;
	return false;
}

/* Adds one event to the batch; false when the drain must stop (the
 * batch was written and the recorder's ring has no room for another). */
static __always_inline bool fast_event(struct fast_cb *c, const struct tb_fast_rec *f)
{
	__u32 i = c->n;
	struct tb_rec_event *ev;

	if (i >= FAST_BATCH_EVENTS)
		return false;   /* cannot happen: flushed when full */
	ev = &c->b->ev[i];
	fill_hdr(&ev->hdr, TB_REC_EVENT, sizeof(*ev), f->cpu, f->ts, c->pid_tgid);
	ev->site = f->site;
	ev->args[0] = f->args[0];
	ev->args[1] = f->args[1];
	ev->str_len[0] = 0;
	ev->str_len[1] = 0;
	ev->flags = TB_EVF_FAST;
	if (!i)
		c->first_ts = f->ts;
	c->last_ts = f->ts;
	c->n = i + 1;
	if (c->n < FAST_BATCH_EVENTS)
		return true;
	fast_flush(c);
	return room_left(c);
}

/* An event with string arguments, or of an `event_id` site: the record as
 * emit_event_str() or on_hit() makes it from the probe, the strings (and
 * the runtime name) copied from the sample. A sample that does not hold
 * what it says is bad (-1); a refused record is counted. */
static __always_inline int fast_event_x(struct bpf_dynptr *dp, struct fast_cb *c,
					const struct tb_fast_rec *f, const bool is_id)
{
	const __u32 head = sizeof(*f) + sizeof(struct tb_fast_str) +
			   (is_id ? sizeof(struct tb_fast_id) : 0);
	const __u32 off = is_id ? sizeof(struct tb_rec_event_id) : sizeof(struct tb_rec_event);
	struct tb_fast_id id = {};
	__u8 *buf = scratch_buf();
	struct tb_rec_event *ev;
	struct tb_fast_str x;
	__u32 n0, n1, nl, n;
	__u64 size;

	if (!buf || f->size < head ||
	    bpf_dynptr_read(&x, sizeof(x), dp, sizeof(*f), 0) ||
	    (is_id && bpf_dynptr_read(&id, sizeof(id), dp, sizeof(*f) + sizeof(x), 0)))
		return -1;
	n0 = x.len[0];
	n1 = x.len[1];
	nl = id.name_len;
	if (n0 > TB_STR_MAX || n1 > TB_STR_MAX || nl > TB_STR_MAX ||
	    head + n0 + n1 + nl > f->size)
		return -1;
	fast_flush(c);   /* the batch's events are older */
	ev = (void *)buf;
	ev->site = f->site;
	ev->args[0] = f->args[0];
	ev->args[1] = f->args[1];
	ev->str_len[0] = n0;
	ev->str_len[1] = n1;
	ev->flags = TB_EVF_FAST | (x.flags & TB_FAST_STR_NULL ? TB_EVF_STR_FAULT : 0) |
		    (x.flags & TB_FAST_NAME_NULL ? TB_EVF_NAME_FAULT : 0);
	if (is_id) {
		struct tb_rec_event_id *e = (void *)buf;

		e->id = id.id;
		e->name_len = nl;
		e->pad[0] = e->pad[1] = e->pad[2] = 0;
	}
	n = n0 + n1 + nl;
	asm volatile("" : "+r"(n));   /* keep clang from dropping the mask */
	n &= 4 * TB_STR_MAX - 1;      /* for the verifier: n <= 3 * TB_STR_MAX */
	if (n && bpf_dynptr_read(buf + off, n, dp, head, 0))
		return -1;
	size = TB_REC_ALIGN(off + n);
	if (size > SCRATCH_SIZE)
		return -1;
	fill_hdr(&ev->hdr, is_id ? TB_REC_EVENT_ID : TB_REC_EVENT, size, f->cpu, f->ts,
		 c->pid_tgid);
	fast_out(c, buf, size, 1, f->ts, f->ts);
	return 0;
}

/* A descriptor: the application's own bytes, as report_site() reads them. */
static __always_inline int fast_site(struct bpf_dynptr *dp, struct fast_cb *c,
				     const struct tb_fast_rec *f)
{
	__u8 *buf = scratch_buf();
	struct tb_rec_site *rec;
	struct tracebpf_site *us;
	__u32 len;
	__u64 size;

	if (!buf || f->size < TB_FAST_HEAD + sizeof(*us))
		return -1;
	fast_flush(c);   /* the batch's events are older */
	rec = (void *)buf;
	us = (void *)(buf + sizeof(*rec));
	len = f->size - TB_FAST_HEAD;
	if (len > TB_SITE_MAX)
		len = TB_SITE_MAX;
	asm volatile("" : "+r"(len));
	len &= 2 * TB_SITE_MAX - 1;
	if (bpf_dynptr_read(us, len, dp, TB_FAST_HEAD, 0))
		return -1;
	if (us->magic != TRACEBPF_SITE_MAGIC || us->size < sizeof(*us) || us->size > len)
		return -1;
	len = us->size;
	__builtin_memset(rec, 0, sizeof(*rec));
	size = TB_REC_ALIGN(sizeof(*rec) + len);
	if (size > SCRATCH_SIZE)
		return -1;
	fill_hdr(&rec->hdr, TB_REC_SITE, size, f->cpu, f->ts, c->pid_tgid);
	rec->site = f->site;
	rec->len = len;
	return fast_out(c, buf, size, 1, f->ts, f->ts);
}

extern void *bpf_dynptr_slice(const struct bpf_dynptr *p, __u32 offset, void *buffer__opt,
			      __u32 buffer__szk) __ksym;

static long fast_sample(struct bpf_dynptr *dp, void *ctx)
{
	struct fast_cb *c = ctx;
	const struct tb_fast_rec *p;
	struct tb_fast_rec f;

	c->d->drained++;
	/* every sample is at least this long (a descriptor's head and its
	 * first bytes): one look takes an event whole, in place */
	p = bpf_dynptr_slice(dp, 0, NULL, sizeof(f));
	if (!p) {
		c->d->bad++;
		return 0;
	}
	f = *p;
	if (c->skip && f.type != TB_FAST_SITE)
		return 0;   /* the filters leave this thread out */
	if (f.type == TB_FAST_EVENT) {
		if (f.ts >= c->stop_ts)
			return 0;   /* after a ctl stop: dropped, as by the probes */
		if (f.size != sizeof(f)) {
			c->d->bad++;
			return 0;
		}
		return fast_event(c, &f) ? 0 : 1;
	}
	if (f.type == TB_FAST_EVENT_STR || f.type == TB_FAST_EVENT_ID) {
		if (f.ts >= c->stop_ts)
			return 0;
		if (f.type == TB_FAST_EVENT_ID ? fast_event_x(dp, c, &f, true) :
						 fast_event_x(dp, c, &f, false))
			c->d->bad++;
		return room_left(c) ? 0 : 1;
	}
	if (f.type != TB_FAST_SITE || fast_site(dp, c, &f))
		c->d->bad++;
	return room_left(c) ? 0 : 1;
}

/* Run by the recorder (BPF_PROG_TEST_RUN) for each ring every round. */
SEC("syscall")
int tb_fast_drain(struct tb_fast_drain *d)
{
	struct fast_cb c = { .d = d, .stop_ts = ~0ULL };
	__u32 key = TB_CTL_STATE, slot = d->slot, zero = 0;
	struct tb_ctl *ctl;
	void *ring;

	c.pid_tgid = (__u64)d->pid << 32 | d->tid;
	c.cpu = bpf_get_smp_processor_id();
	c.rb = cpu_ring(c.cpu);
	ring = bpf_map_lookup_elem(&fast_rings, &slot);
	c.b = bpf_map_lookup_elem(&fast_batch, &zero);
	if (!ring || !c.rb || !c.b) {
		d->ret = -2;   /* -ENOENT */
		return 0;
	}
	ctl = bpf_map_lookup_elem(&tb_ctl, &key);
	c.skip = ctl && !filters_pass(ctl, c.pid_tgid);
	if (ctl && ctl->off)   /* since the stop, even if a start was asked since */
		c.stop_ts = ctl->off_ts ? ctl->off_ts : ctl->ts;
	c.rb_size = bpf_ringbuf_query(c.rb, BPF_RB_RING_SIZE);
	if (!room_left(&c))
		return 0;
	d->ret = bpf_user_ringbuf_drain(ring, fast_sample, &c, 0);
	fast_flush(&c);
	return 0;
}

#endif /* TRACEBPF_FAST_BPF_H */
