// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fast_read.c - the threads' rings read by the recorder. It maps each
 * ring's data read-only once, and makes of each sample the record the
 * probe makes of the same event (an EVENT, EVENT_ID or SITE record of the
 * ring owner's pid and tid), handed to the recorder as its rings' records
 * are. Only the kernel moves a user ring's consumer position:
 * tb_fast_drain (bpf/fast.bpf.h) moves it past the samples read here
 * (user/fast/fast.c), so the kernel does one step per sample and the recorder
 * the rest, with no copy through a ring buffer in between.
 *
 * The recorder keeps its own read position per ring. It runs ahead of the
 * kernel's only while the drain program cannot run (BPF_PROG_TEST_RUN
 * refused): then a thread may have found its session live just before the
 * switch and be held (preempted, stopped, in a page fault) before it
 * reserves its sample, for any time, so its ring is read every round until
 * its thread is gone or the recording ends, and closed then.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/types.h>

#include "format/tbctl.h"
#include "format/tbrecords.h"
#include "fast/fast_int.h"
#include "tracebpf/site.h"

/* The largest record a sample makes: an event_id record, its two strings
 * and its name, or a descriptor. */
#define READ_MAX (sizeof(struct tb_rec_event_id) + 3 * TB_STR_MAX + TB_SITE_MAX)

/* The kernel's sample header flags (BPF_RINGBUF_*_BIT) and the largest
 * sample it hands a program (a dynptr's size). */
#define SAMPLE_BUSY    (1u << 31)
#define SAMPLE_DISCARD (1u << 30)
#define SAMPLE_MAX     ((1u << 24) - 1)

static void read_hdr(struct tb_rec_hdr *h, __u16 type, size_t size,
			const struct tb_fast_rec *f, const struct fring *r)
{
	h->type = type;
	h->size = (__u16)size;
	h->cpu = f->cpu;
	h->ts = f->ts;
	h->pid = r->pid;
	h->tid = r->tid;
}

/* An event with strings, or of an event_id site (fast_event_x). */
static size_t read_event_x(unsigned char *buf, const struct tb_fast_rec *f, size_t len,
			      const struct fring *r, bool is_id)
{
	const unsigned char *s = (const unsigned char *)f;
	size_t head = sizeof(*f) + sizeof(struct tb_fast_str) +
		      (is_id ? sizeof(struct tb_fast_id) : 0);
	size_t off = is_id ? sizeof(struct tb_rec_event_id) : sizeof(struct tb_rec_event), n;
	struct tb_rec_event *ev = (void *)buf;
	struct tb_fast_id id = { 0 };
	struct tb_fast_str x;

	if (len < head)
		return 0;
	memcpy(&x, s + sizeof(*f), sizeof(x));
	if (is_id)
		memcpy(&id, s + sizeof(*f) + sizeof(x), sizeof(id));
	n = (size_t)x.len[0] + x.len[1] + id.name_len;
	if (x.len[0] > TB_STR_MAX || x.len[1] > TB_STR_MAX || id.name_len > TB_STR_MAX ||
	    head + n > len)
		return 0;
	memset(buf, 0, off);
	ev->site = f->site;
	ev->args[0] = f->args[0];
	ev->args[1] = f->args[1];
	ev->str_len[0] = x.len[0];
	ev->str_len[1] = x.len[1];
	ev->flags = TB_EVF_FAST | (x.flags & TB_FAST_STR_NULL ? TB_EVF_STR_FAULT : 0) |
		    (x.flags & TB_FAST_NAME_NULL ? TB_EVF_NAME_FAULT : 0);
	if (is_id) {
		((struct tb_rec_event_id *)buf)->id = id.id;
		((struct tb_rec_event_id *)buf)->name_len = id.name_len;
	}
	memcpy(buf + off, s + head, n);
	read_hdr(&ev->hdr, is_id ? TB_REC_EVENT_ID : TB_REC_EVENT, TB_REC_ALIGN(off + n), f, r);
	return TB_REC_ALIGN(off + n);
}

/* One sample of `type` as the record the drain makes of it; 0 for a bad
 * one. f is in the ring (which its thread may write while it is read)
 * only for a plain event, whose fields are each read once; any other is
 * a copy (read_put), since the lengths in it are checked, then used. */
static size_t read_one(unsigned char *buf, uint16_t type, const struct tb_fast_rec *f,
		       size_t len, const struct fring *r)
{
	const struct tracebpf_site *us = (const void *)f->args;
	struct tb_rec_event *ev = (void *)buf;
	struct tb_rec_site *site = (void *)buf;

	if (type == TB_FAST_EVENT && len == sizeof(*f)) {
		memset(ev, 0, sizeof(*ev));
		read_hdr(&ev->hdr, TB_REC_EVENT, sizeof(*ev), f, r);
		ev->site = f->site;
		ev->args[0] = f->args[0];
		ev->args[1] = f->args[1];
		ev->flags = TB_EVF_FAST;
		return sizeof(*ev);
	}
	if (type == TB_FAST_EVENT_STR || type == TB_FAST_EVENT_ID)
		return read_event_x(buf, f, len, r, type == TB_FAST_EVENT_ID);
	if (type != TB_FAST_SITE || len < TB_FAST_HEAD + sizeof(*us) ||
	    us->magic != TRACEBPF_SITE_MAGIC || us->size < sizeof(*us) ||
	    us->size > len - TB_FAST_HEAD || us->size > TB_SITE_MAX)
		return 0;
	memset(site, 0, sizeof(*site));
	site->site = f->site;
	site->len = us->size;
	memcpy(site + 1, us, us->size);
	read_hdr(&site->hdr, TB_REC_SITE, TB_REC_ALIGN(sizeof(*site) + us->size), f, r);
	return TB_REC_ALIGN(sizeof(*site) + us->size);
}

/* The ring's data, read-only, kept until the ring is closed
 * (fast_unmap_ring). Mapped once, though the kernel maps it twice in a
 * row: the second copy would count every page twice in the recorder's
 * resident memory (a sample that wraps is copied, read_sample). NULL when
 * it cannot be mapped. */
static const unsigned char *ring_data(struct fring *r)
{
	void *d;

	if (r->data)
		return r->data;
	d = mmap(NULL, r->size, PROT_READ, MAP_SHARED, r->fd, RING_META);
	if (d == MAP_FAILED)
		return NULL;
	r->data = d;
	return r->data;
}

/* Whether an event stamped at ts was stamped after a ctl stop: the stop
 * the round found (c->stop_ts), or one made since, as the control map
 * says now. A stop sets off_ts before off (ctl.c), and only the recorder,
 * in this thread, clears off: an event stamped after a stop is read after
 * it, so it is seen however the reading and the stop interleave (a round
 * that found no stop and then read an open batch's events written after
 * one, while the recorder was frozen, kept them). */
static bool fast_stopped(const struct fast_cut *c, uint64_t ts)
{
	uint64_t off_ts;

	if (ts >= c->stop_ts)
		return true;
	if (!c->live || !__atomic_load_n(&c->live->off, __ATOMIC_ACQUIRE))
		return false;
	off_ts = __atomic_load_n(&c->live->off_ts, __ATOMIC_RELAXED);
	return ts >= (off_ts ? off_ts : c->live->ts);
}

/* One sample's record to put(), unless the filters leave its thread out
 * or it was stamped after a ctl stop (a descriptor always goes). Its type
 * is read once, and any sample but a plain event is copied out of the
 * ring first: its thread may rewrite it while it is read, and a length
 * checked in the ring and then used could be another by then. */
static void read_put(struct tb_fast *f, const struct fring *r, const struct fast_cut *c,
		     const struct tb_fast_rec *s, size_t len)
{
	uint64_t copy[READ_MAX / 8 + 1];
	unsigned char buf[READ_MAX + 8];
	uint16_t type = __atomic_load_n(&s->type, __ATOMIC_RELAXED);
	size_t n;

	f->drained++;
	if (type != TB_FAST_EVENT) {
		if (len > sizeof(copy)) {
			f->bad++;   /* longer than any record: no event */
			return;
		}
		memcpy(copy, s, len);
		s = (const void *)copy;
	}
	if (type != TB_FAST_SITE && (c->skip || (len >= sizeof(*s) && fast_stopped(c, s->ts))))
		return;
	n = len >= sizeof(*s) || type == TB_FAST_SITE ? read_one(buf, type, s, len, r) : 0;
	if (!n)
		f->bad++;
	else if (f->put)
		f->put(f->put_ctx, buf, n);
}

/* The len bytes of the sample at data offset off, in place, or copied to
 * buf when they wrap around the ring's end; NULL for one longer than any
 * record (it is no event). */
static const struct tb_fast_rec *read_sample(const struct fring *r, unsigned long off,
					     uint32_t len, unsigned char *buf)
{
	unsigned long first = r->size - off;

	if (len <= first)
		return (const void *)(r->data + off);
	if (len > READ_MAX)
		return NULL;
	memcpy(buf, r->data + off, first);
	memcpy(buf + first, r->data, len - first);
	return (const void *)buf;
}

/* The events of the batch at cons (len bytes of payload, open while its
 * thread writes into it) from r->in on, as records to put(): up to a zero
 * header (the batch's end, or where its thread has not written yet) or
 * one still BUSY (its thread is writing it; r->torn). A batch that wraps
 * around the ring's end, an event running past its end, or one BUSY in a
 * closed batch is not trace.h's: counted once, and the rest of it passed
 * over (a batch that wraps, when it is closed or its thread gone: an open
 * one is met again every round). */
static void read_batch(struct tb_fast *f, struct fring *r, const struct fast_cut *c,
		       unsigned long cons, uint32_t len, bool open)
{
	unsigned long off = (cons & (r->size - 1)) + 8;
	const unsigned char *p = r->data + off;
	uint32_t at = r->in;

	if (off + len > r->size) {
		f->bad += !open || c->final;
		r->in = 0;
		return;
	}
	while (at + 8 <= len) {
		uint32_t h = __atomic_load_n((const uint32_t *)(p + at), __ATOMIC_ACQUIRE);
		uint32_t n = h & ~SAMPLE_BUSY, total = (n + 8u + 7u) & ~7u;

		if (!h)
			break;
		if (h & SAMPLE_BUSY && open) {
			r->torn = true;
			break;
		}
		if (h & SAMPLE_BUSY || n > len || total > len - at) {
			f->bad++;
			at = len;
			break;
		}
		read_put(f, r, c, (const void *)(p + at + 8), n);
		at += total;
	}
	r->in = open ? at : 0;
}

/* Nothing new in r up to until: all it holds past what was read is the
 * open batch at r->rd, and its thread has written nothing more into it
 * (so the round does not run its drain program for every quiet thread). */
bool fast_idle(const struct fring *r, unsigned long until)
{
	const uint32_t *hdr;
	uint32_t h, len;

	if ((long)(until - r->rd) <= 0)
		return true;
	if (!r->data)
		return false;
	hdr = (const void *)(r->data + (r->rd & (r->size - 1)));
	h = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);
	len = h & ~SAMPLE_BUSY;
	if (!(h & SAMPLE_BUSY) || hdr[1] != TRACEBPF_FAST_BATCH || r->rd + 8 + len != until ||
	    (r->rd & (r->size - 1)) + 8 + len > r->size || r->in + 8 > len)
		return false;
	return !__atomic_load_n((const uint32_t *)((const unsigned char *)(hdr + 2) + r->in),
				__ATOMIC_ACQUIRE);
}

/* The samples of r committed since the last call, up to c->until (and at
 * most c->max of them or the first past c->max_bytes, then t.more), as
 * records to put(), checked as the kernel checks them so that the two
 * count alike: a sample still BUSY stops the reading (its thread is
 * writing it), and is counted in *lost when c->final (its thread killed
 * while writing it); a discarded one is passed over; a header the kernel
 * refuses stops it too, and is said in the result; a producer position
 * further ahead than the ring holds, or data that cannot be mapped, and
 * nothing is read. Returns what the kernel must be moved past. */
struct fast_taken fast_read(struct tb_fast *f, struct fring *r, const struct fast_cut *c,
			    uint64_t *lost)
{
	struct fast_taken t = { 0, false, false, false, 0 };
	unsigned char buf[READ_MAX + 8] __attribute__((aligned(8)));
	const struct tb_fast_rec *s;
	unsigned long cons = r->rd, prod;
	const unsigned char *data;

	r->torn = false;
	prod = __atomic_load_n(&r->pos[4096 / sizeof(long)], __ATOMIC_ACQUIRE);
	if ((long)(c->until - prod) < 0)
		prod = c->until;
	if ((long)(prod - cons) <= 0)
		return t;
	if (prod - cons > r->size) {   /* not trace.h's: what lies past a ring's
					* worth is an older lap, read again */
		t.corrupt = true;
		return t;
	}
	data = ring_data(r);
	if (!data) {   /* tried again next round, unless final */
		t.err = -errno;
		if (c->final)
			*lost += (prod - cons) / sizeof(struct tb_fast_rec) + 1;
		return t;
	}
	while ((long)(prod - cons) > 0) {
		const uint32_t *hdr = (const void *)(data + (cons & (r->size - 1)));
		uint32_t h, len;
		unsigned long total;

		if ((c->max && t.samples >= c->max) ||
		    (c->max_bytes && cons - r->rd >= c->max_bytes)) {
			t.more = true;
			break;
		}
		h = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);
		len = h & ~(SAMPLE_BUSY | SAMPLE_DISCARD);
		total = (len + 8ul + 7ul) & ~7ul;

		if (total > prod - cons || total > r->size || len > SAMPLE_MAX) {
			t.refused = true;   /* not a sample: nothing after it can be read */
			break;
		}
		if (h & SAMPLE_DISCARD) {
			cons += total;
			continue;
		}
		if (hdr[1] == TRACEBPF_FAST_BATCH && (h & SAMPLE_BUSY)) {
			read_batch(f, r, c, cons, len, true);   /* its thread writes in it */
			*lost += c->final && r->torn;   /* the one its thread was writing */
			break;
		}
		if (h & SAMPLE_BUSY) {
			r->torn = true;
			*lost += c->final;   /* the one its thread was writing */
			break;
		}
		if (hdr[1] == TRACEBPF_FAST_BATCH) {
			read_batch(f, r, c, cons, len, false);
			cons += total;
			t.samples++;
			continue;
		}
		s = read_sample(r, ((cons & (r->size - 1)) + 8) & (r->size - 1), len, buf);
		if (s)
			read_put(f, r, c, s, len);
		else
			f->bad++;
		cons += total;
		t.samples++;
	}
	r->rd = cons;
	return t;
}
