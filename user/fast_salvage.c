// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fast_salvage.c - what the threads' rings hold when the drain program
 * cannot run (BPF_PROG_TEST_RUN refused): the recorder reads the samples
 * from a read-only mapping of each ring's data and makes of them the
 * records tb_fast_drain would have made (bpf/fast.bpf.h: fast_event,
 * fast_event_x, fast_site), handed to the recorder as its rings' records
 * are. Only the kernel moves a user ring's consumer position, so the
 * recorder keeps its own: a thread may have found its session live just
 * before the switch, and be held (preempted, stopped, in a page fault)
 * before it reserves its sample, for any time. Its ring is read every round
 * until its thread is gone or the recording ends, and closed then.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/types.h>

#include "tbrecords.h"
#include "fast_int.h"
#include "tracebpf/site.h"

/* The largest record a sample makes: an event_id record, its two strings
 * and its name, or a descriptor. */
#define SALVAGE_MAX (sizeof(struct tb_rec_event_id) + 3 * TB_STR_MAX + TB_SITE_MAX)

static void salvage_hdr(struct tb_rec_hdr *h, __u16 type, size_t size,
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
static size_t salvage_event_x(unsigned char *buf, const struct tb_fast_rec *f, size_t len,
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
	salvage_hdr(&ev->hdr, is_id ? TB_REC_EVENT_ID : TB_REC_EVENT, TB_REC_ALIGN(off + n), f, r);
	return TB_REC_ALIGN(off + n);
}

/* One sample as the record the drain makes of it; 0 for a bad one. */
static size_t salvage_one(unsigned char *buf, const struct tb_fast_rec *f, size_t len,
			  const struct fring *r)
{
	const struct tracebpf_site *us = (const void *)f->args;
	struct tb_rec_event *ev = (void *)buf;
	struct tb_rec_site *site = (void *)buf;

	if (f->type == TB_FAST_EVENT && len == sizeof(*f)) {
		memset(ev, 0, sizeof(*ev));
		salvage_hdr(&ev->hdr, TB_REC_EVENT, sizeof(*ev), f, r);
		ev->site = f->site;
		ev->args[0] = f->args[0];
		ev->args[1] = f->args[1];
		ev->flags = TB_EVF_FAST;
		return sizeof(*ev);
	}
	if (f->type == TB_FAST_EVENT_STR || f->type == TB_FAST_EVENT_ID)
		return salvage_event_x(buf, f, len, r, f->type == TB_FAST_EVENT_ID);
	if (f->type != TB_FAST_SITE || len < TB_FAST_HEAD + sizeof(*us) ||
	    us->magic != TRACEBPF_SITE_MAGIC || us->size < sizeof(*us) ||
	    us->size > len - TB_FAST_HEAD || us->size > TB_SITE_MAX)
		return 0;
	memset(site, 0, sizeof(*site));
	site->site = f->site;
	site->len = us->size;
	memcpy(site + 1, us, us->size);
	salvage_hdr(&site->hdr, TB_REC_SITE, TB_REC_ALIGN(sizeof(*site) + us->size), f, r);
	return TB_REC_ALIGN(sizeof(*site) + us->size);
}

/* Every sample of r committed since the last call, as records to put();
 * a sample still BUSY stops the reading (its thread is writing it), and is
 * returned as lost when final (its thread killed while writing it). */
uint64_t fast_salvage(struct tb_fast *f, struct fring *r, bool final)
{
	unsigned long cons, prod, len;
	unsigned char buf[SALVAGE_MAX + 8];
	const unsigned char *data;
	uint64_t lost = 0;

	if (!r->salv_on) {
		r->salv = __atomic_load_n(&r->pos[0], __ATOMIC_ACQUIRE);
		r->salv_on = true;
	}
	cons = r->salv;
	prod = __atomic_load_n(&r->pos[4096 / sizeof(long)], __ATOMIC_ACQUIRE);
	if (cons == prod)
		return 0;
	/* the data pages follow the two position pages, mapped twice */
	data = mmap(NULL, 2 * r->size, PROT_READ, MAP_SHARED, r->fd, 2 * 4096);
	if (data == MAP_FAILED)   /* at least; tried again next round unless final */
		return final ? (prod - cons) / sizeof(struct tb_fast_rec) + 1 : 0;
	for (; cons < prod; cons += 8 + ((len + 7) & ~7ul)) {
		const uint32_t *hdr = (const void *)(data + (cons & (r->size - 1)));
		const struct tb_fast_rec *s = (const void *)(hdr + 2);
		size_t n;

		len = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);
		if (len & TRACEBPF_FAST_BUSY) {
			lost += final;   /* the one its thread was writing */
			break;
		}
		if (len < TB_FAST_HEAD || len > r->size) {
			cons = prod;   /* not a sample: nothing after it can be read */
			break;
		}
		n = len >= sizeof(*s) || s->type == TB_FAST_SITE ? salvage_one(buf, s, len, r) : 0;
		if (n && f->put)
			f->put(f->put_ctx, buf, n);
	}
	r->salv = cons;
	munmap((void *)data, 2 * r->size);
	return lost;
}
