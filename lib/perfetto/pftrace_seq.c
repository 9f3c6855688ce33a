// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pftrace_seq.c - the Perfetto writer's sequences, tracks and interned
 * strings, and the packets they frame (docs/perfetto.md, "Sequences").
 *
 * Each thread writes on a sequence of its own (trusted_packet_sequence_id
 * 2, 3, ...). Its first packet clears the sequence's incremental state
 * and sets its defaults: the thread's track, and a clock of its own whose
 * timestamps are the time since the sequence's previous packet (a tight
 * loop's events are tens of ns apart: one byte). Names, categories and
 * argument names are interned on the sequence the first time it uses
 * them, in the packet that uses them. Sequence 1 is the trace's own: the
 * track descriptors and the metadata, at absolute times.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "perfetto/pftrace_int.h"
#include "util/chain.h"

/* TracePacket and TrackDescriptor fields written here only. */
enum {
	PKT_CLOCK_SNAPSHOT = 6, PKT_DEFAULTS = 59, PKT_FIRST_ON_SEQ = 87,
	DEF_CLOCK_ID = 58, DEF_TRACK_EVENT = 11, TED_TRACK_UUID = 11,
	SNAP_CLOCKS = 1, CLK_ID = 1, CLK_TS = 2, CLK_INCREMENTAL = 3,
	TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT = 5, TD_COUNTER = 8,
	PD_PID = 1, PD_NAME = 6, THD_PID = 1, THD_TID = 2, THD_NAME = 5,
	IS_IID = 1, IS_NAME = 2,
};

/* Names copied at the hit, interned by their text per sequence up to
 * this many; later ones are written in full. */
#define COPIED_MAX 4096

#define TRACK_THREAD  (1ull << 63)
#define TRACK_PROCESS (1ull << 62)

uint64_t pf_process_track(uint64_t pid)
{
	return TRACK_PROCESS | pid;
}

/* pids (incarnations included) and tids are below 2^31 */
uint64_t pf_thread_track(uint64_t pid, uint32_t tid)
{
	return TRACK_THREAD | (pid & 0x7fffffffu) << 31 | (tid & 0x7fffffffu);
}

static void clock_entry(struct tb_pb *b, uint32_t id, uint64_t ts, bool incremental)
{
	tb_pb_begin(b, SNAP_CLOCKS);
	tb_pb_varint(b, CLK_ID, id);
	tb_pb_varint(b, CLK_TS, ts);
	if (incremental)
		tb_pb_varint(b, CLK_INCREMENTAL, 1);
	tb_pb_end(b);
}

/* The sequence's first packet: its state cleared, its defaults, and its
 * clock, which starts at ts. */
static int seq_start(struct pf *p, struct pf_seq *s, uint64_t ts)
{
	struct tb_pb *b = p->pkt;

	pf_out_begin(&p->out);
	tb_pb_varint(b, PF_PKT_SEQ_ID, s->id);
	tb_pb_varint(b, PF_PKT_SEQ_FLAGS, PF_SEQ_CLEARED);
	tb_pb_varint(b, PKT_FIRST_ON_SEQ, 1);
	tb_pb_begin(b, PKT_DEFAULTS);
	tb_pb_varint(b, DEF_CLOCK_ID, PF_CLOCK_INCR);
	tb_pb_begin(b, DEF_TRACK_EVENT);
	tb_pb_varint(b, TED_TRACK_UUID, s->track);
	tb_pb_end(b);
	tb_pb_end(b);
	tb_pb_begin(b, PKT_CLOCK_SNAPSHOT);
	clock_entry(b, PF_CLOCK_BOOT, ts, false);
	clock_entry(b, PF_CLOCK_INCR, ts, true);
	tb_pb_end(b);
	s->last_ts = ts;
	s->started = true;
	return pf_out_end(&p->out);
}

struct pf_seq *pf_seq_of(struct pf *p, uint64_t pid, uint32_t tid, uint64_t ts)
{
	uint64_t key = pid << 32 | tid;
	struct pf_seq *s;

	if (p->last && p->last->pid == pid && p->last->tid == tid)
		return p->last;
	s = tb_hmap_get(&p->seqs, key);
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s || tb_hmap_put(&p->seqs, key, s)) {
			free(s);
			return NULL;
		}
		*s = (struct pf_seq){ .id = p->next_seq++, .pid = pid, .tid = tid,
				      .track = pf_thread_track(pid, tid) };
	}
	/* new, or in a new part */
	if (!s->started && (pf_describe_thread(p, pid, tid, ts) || seq_start(p, s, ts)))
		return NULL;
	p->last = s;
	return s;
}

void pf_packet_begin(struct pf *p, struct pf_seq *s, uint64_t ts, bool te)
{
	struct tb_pb *b = p->pkt;

	pf_out_begin(&p->out);
	p->interned.len = 0;
	if (s == &p->own) {
		tb_pb_varint(b, PF_PKT_TIMESTAMP, ts);
	} else if (ts >= s->last_ts) {
		tb_pb_varint(b, PF_PKT_TIMESTAMP, ts - s->last_ts);
		s->last_ts = ts;
	} else {
		/* earlier than the sequence's last (an event released out
		 * of order): the trace's clock, absolute */
		tb_pb_varint(b, PF_PKT_TIMESTAMP, ts);
		tb_pb_varint(b, PF_PKT_CLOCK_ID, PF_CLOCK_BOOT);
	}
	tb_pb_varint(b, PF_PKT_SEQ_ID, s->id);
	if (te) {
		if (s != &p->own)
			tb_pb_varint(b, PF_PKT_SEQ_FLAGS, PF_SEQ_NEEDS);
		tb_pb_begin(b, PF_PKT_TRACK_EVENT);
	}
}

int pf_packet_end(struct pf *p, struct pf_seq *s)
{
	struct tb_pb *b = p->pkt;

	(void)s;
	while (b->depth > 1)   /* what is open in the packet */
		tb_pb_end(b);
	if (p->interned.len)
		tb_pb_bytes(b, PF_PKT_INTERNED, p->interned.buf, p->interned.len);
	if (p->interned.err)
		return p->interned.err;
	return pf_out_end(&p->out);
}

static void define(struct pf *p, enum pf_kind kind, uint32_t iid, const char *str, size_t n)
{
	tb_pb_begin(&p->interned, kind);
	tb_pb_varint(&p->interned, IS_IID, iid);
	tb_pb_bytes(&p->interned, IS_NAME, str, n);
	tb_pb_end(&p->interned);
}

uint32_t pf_iid(struct pf *p, struct pf_seq *s, enum pf_kind kind, const char *str)
{
	uint64_t key = (uint64_t)(uintptr_t)str << 2 | kind;
	void *v = tb_hmap_get(&s->iids, key);
	uint32_t iid;

	if (v)
		return (uint32_t)(uintptr_t)v;
	iid = ++s->next_iid[kind];
	if (tb_hmap_put(&s->iids, key, (void *)(uintptr_t)iid)) {
		s->next_iid[kind]--;
		return 0;
	}
	define(p, kind, iid, str, strlen(str));
	return iid;
}

struct pf_site *pf_site_iids(struct pf *p, struct pf_seq *s, const struct site *site)
{
	struct pf_site *ps = s->last_site;

	if (ps && ps->site == site)
		return ps;
	ps = tb_hmap_get(&s->sites, (uintptr_t)site);
	if (!ps) {
		ps = calloc(1, sizeof(*ps));
		if (!ps || tb_hmap_put(&s->sites, (uintptr_t)site, ps)) {
			free(ps);
			return NULL;
		}
		ps->site = site;
		ps->cat = pf_iid(p, s, PF_CAT, site->cat);
		ps->name = pf_iid(p, s, PF_NAME, site->name);
		for (int i = 0; i < site->nargs && i < TB_SITE_ARGS; i++)
			ps->arg[i] = pf_iid(p, s, PF_ARG, site->argname[i]);
	}
	s->last_site = ps;
	return ps;
}

/* A name interned by its text: its iid, length and bytes. */
struct copied {
	uint32_t iid;
	size_t n;
	char s[];
};

uint32_t pf_iid_text(struct pf *p, struct pf_seq *s, const char *str, size_t n)
{
	/* a collision of two texts: the later is written in full */
	uint64_t key = tb_hash_bytes(n, str, n) | 1;
	struct copied *c;

	c = tb_hmap_get(&s->copied, key);
	if (c)
		return c->n == n && !memcmp(c->s, str, n) ? c->iid : 0;
	if (s->copied.n >= COPIED_MAX || !(c = malloc(sizeof(*c) + n)))
		return 0;
	c->iid = ++s->next_iid[PF_NAME];
	c->n = n;
	memcpy(c->s, str, n);
	if (tb_hmap_put(&s->copied, key, c)) {
		free(c);
		s->next_iid[PF_NAME]--;
		return 0;
	}
	define(p, PF_NAME, c->iid, str, n);
	return c->iid;
}

/* Whether uuid was described already; marks it so. -ENOMEM: no room. */
static int described(struct pf *p, uint64_t uuid)
{
	if (tb_hmap_get(&p->tracks, uuid))
		return 1;
	return tb_hmap_put(&p->tracks, uuid, (void *)1);
}

static int process_packet(struct pf *p, uint64_t pid, const char *name, size_t n, uint64_t ts)
{
	struct tb_pb *b = p->pkt;

	pf_packet_begin(p, &p->own, ts, false);
	tb_pb_begin(b, PF_PKT_TRACK_DESCRIPTOR);
	tb_pb_varint(b, TD_UUID, pf_process_track(pid));
	tb_pb_begin(b, TD_PROCESS);
	tb_pb_varint(b, PD_PID, pid);
	if (name)
		tb_pb_bytes(b, PD_NAME, name, n);
	return pf_packet_end(p, &p->own);
}

static int thread_packet(struct pf *p, uint64_t pid, uint32_t tid, const char *name, size_t n,
			 uint64_t ts)
{
	struct tb_pb *b = p->pkt;

	pf_packet_begin(p, &p->own, ts, false);
	tb_pb_begin(b, PF_PKT_TRACK_DESCRIPTOR);
	tb_pb_varint(b, TD_UUID, pf_thread_track(pid, tid));
	tb_pb_varint(b, TD_PARENT, pf_process_track(pid));
	tb_pb_begin(b, TD_THREAD);
	tb_pb_varint(b, THD_PID, pid);
	tb_pb_varint(b, THD_TID, tid);
	if (name)
		tb_pb_bytes(b, THD_NAME, name, n);
	return pf_packet_end(p, &p->own);
}

int pf_describe_process(struct pf *p, uint64_t pid, uint64_t ts)
{
	int d = described(p, pf_process_track(pid));

	return d ? (d > 0 ? 0 : d) : process_packet(p, pid, NULL, 0, ts);
}

int pf_describe_thread(struct pf *p, uint64_t pid, uint32_t tid, uint64_t ts)
{
	int d = pf_describe_process(p, pid, ts);

	if (!d)
		d = described(p, pf_thread_track(pid, tid));
	return d ? (d > 0 ? 0 : d) : thread_packet(p, pid, tid, NULL, 0, ts);
}

int pf_describe_child(struct pf *p, uint64_t uuid, uint64_t parent, const char *name, size_t n,
		      bool counter, uint64_t ts)
{
	struct tb_pb *b = p->pkt;
	int d = described(p, uuid);

	if (d)
		return d > 0 ? 0 : d;
	pf_packet_begin(p, &p->own, ts, false);
	tb_pb_begin(b, PF_PKT_TRACK_DESCRIPTOR);
	tb_pb_varint(b, TD_UUID, uuid);
	if (parent)
		tb_pb_varint(b, TD_PARENT, parent);
	tb_pb_bytes(b, TD_NAME, name, n);
	if (counter) {
		tb_pb_begin(b, TD_COUNTER);
		tb_pb_end(b);
	}
	return pf_packet_end(p, &p->own);
}

/* The END of s's innermost open slice, with the flows bound to it. */
int pf_end_slice(struct pf *p, struct pf_seq *s)
{
	struct pf_open *o = &s->stack[--s->depth];
	struct tb_pb *b = p->pkt;

	pf_packet_begin(p, s, o->end, true);
	tb_pb_varint(b, PF_TE_TYPE, PF_TYPE_END);
	for (uint32_t i = 0; i < o->nflows; i++)
		tb_pb_fixed64(b, PF_TE_FLOW_IDS, o->flows[i]);
	for (uint32_t i = 0; i < o->nterm; i++)
		tb_pb_fixed64(b, PF_TE_TERM_FLOW_IDS, o->term[i]);
	free(o->flows);
	free(o->term);
	return pf_packet_end(p, s);
}

static void seq_free(struct pf_seq *s);

void pf_seqs_reset(struct pf *p)
{
	for (size_t i = 0; i < p->seqs.cap; i++) {
		struct pf_seq *s = p->seqs.vals[i];

		if (!s)
			continue;
		seq_free(s);
		*s = (struct pf_seq){ .id = s->id, .pid = s->pid, .tid = s->tid,
				      .track = s->track };
	}
	tb_hmap_free(&p->tracks);
	p->last = NULL;
}

struct naming {
	struct pf *p;
	uint64_t ts;
};

static int name_one(void *ctx, const struct tb_model_thread *t)
{
	struct naming *nm = ctx;
	int err = 0;

	/* the thread first: trace processor names a process after its main
	 * thread, and the process's own name must win */
	err = thread_packet(nm->p, t->pid, t->tid, t->name, t->name_len, nm->ts);
	if (!err && t->process)
		err = process_packet(nm->p, t->pid, t->process, t->process_len, nm->ts);
	return err;
}

int pf_name_all(struct pf *p, const struct tb_model *m, uint64_t ts)
{
	struct naming nm = { p, ts };

	return tb_model_threads(m, name_one, &nm);
}

static void seq_free(struct pf_seq *s)
{
	for (size_t i = 0; i < s->copied.cap; i++)
		free(s->copied.vals[i]);
	tb_hmap_free(&s->copied);
	for (size_t i = 0; i < s->sites.cap; i++)
		free(s->sites.vals[i]);
	tb_hmap_free(&s->sites);
	tb_hmap_free(&s->iids);
	for (size_t i = 0; i < s->depth; i++) {
		free(s->stack[i].flows);
		free(s->stack[i].term);
	}
	free(s->stack);
	s->stack = NULL;
	s->depth = s->cap = 0;
}

void pf_seqs_free(struct pf *p)
{
	for (size_t i = 0; i < p->seqs.cap; i++) {
		if (p->seqs.vals[i]) {
			seq_free(p->seqs.vals[i]);
			free(p->seqs.vals[i]);
		}
	}
	tb_hmap_free(&p->seqs);
	tb_hmap_free(&p->tracks);
	seq_free(&p->own);
	tb_pb_free(&p->interned);
}
