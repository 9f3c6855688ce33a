// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pftrace.c - the model's events in Perfetto's protobuf trace format
 * (docs/perfetto.md): the entry point, and the sink that turns each
 * finished event into TrackEvent packets.
 *
 * The model hands its events in time order, a slice whole at its begin
 * (ts, dur). The slice's BEGIN is written then, with every argument and
 * mark; its END waits on its thread's stack of open slices and is written
 * before the first event of that thread at or after its end (slices nest
 * per thread, so the innermost ends first). Flows bind to the innermost
 * slice open at their time, as Chrome JSON's do: their ids go on that
 * slice's END. Instants of a process or of the whole trace go on the
 * process's track or the global one; counters and async slices on tracks
 * of their own, children of their process's.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "perfetto/pftrace_int.h"
#include "util/chain.h"
#include "util/print.h"

#define PFX "tracebpf: convert: "

/* TrackEvent fields. */
enum {
	TE_CATEGORY_IIDS = 3, TE_DEBUG = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK_UUID = 11,
	TE_NAME = 23, TE_COUNTER = 30, TE_DOUBLE_COUNTER = 44, TE_FLOW_IDS = 47, TE_TERM_FLOW_IDS = 48,
	DA_NAME_IID = 1, DA_BOOL = 2, DA_UINT = 3, DA_INT = 4, DA_DOUBLE = 5, DA_STRING = 6,
	DA_POINTER = 7, DA_JSON = 9,
};

enum { TYPE_BEGIN = 1, TYPE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };

#define TRACK_CHILD (1ull << 61)   /* counters', async slices' tracks */
#define TRACK_MASK  ((1ull << 61) - 1)
#define GLOBAL_TRACK (TRACK_CHILD | 1)

#define PARENT_LOST "began after lost events: a slice enclosing it may be among them"

/* Mark names, as the JSON writes them (docs/output.md, "Slices"). */
static const char K_STEP[] = "step", K_INHERITED[] = "tracebpf_inherited",
	K_UNFINISHED[] = "tracebpf_unfinished", K_END_OF[] = "tracebpf_end_of",
	K_BEGIN_OF[] = "tracebpf_begin_of", K_INCOMPLETE[] = "tracebpf_incomplete",
	K_BEGIN_LOST[] = "tracebpf_begin_lost",
	K_PARENT_LOST[] = "tracebpf_parent_lost";

static void annotation_str(struct pf *p, struct pf_seq *s, const char *key, const char *v,
			   size_t n)
{
	struct tb_pb *b = p->pkt;

	tb_pb_begin(b, TE_DEBUG);
	tb_pb_varint(b, DA_NAME_IID, pf_iid(p, s, PF_ARG, key));
	tb_pb_bytes(b, DA_STRING, v, n);
	tb_pb_end(b);
}

static void annotation(struct pf *p, struct pf_seq *s, const struct tracebpf_arg *a)
{
	struct tb_pb *b = p->pkt;

	tb_pb_begin(b, TE_DEBUG);
	tb_pb_varint(b, DA_NAME_IID, pf_iid(p, s, PF_ARG, a->name));
	switch (a->type) {
	case TB_ARG_INT:
		tb_pb_int(b, DA_INT, a->v.i);
		break;
	case TB_ARG_UINT:
		tb_pb_varint(b, DA_UINT, a->v.u);
		break;
	case TB_ARG_DOUBLE:   /* as in the JSON: a non-finite value in words */
		if (isfinite(a->v.d))
			tb_pb_double(b, DA_DOUBLE, a->v.d);
		else
			tb_pb_string(b, DA_STRING, isnan(a->v.d) ? "NaN" :
				     a->v.d > 0 ? "Infinity" : "-Infinity");
		break;
	case TB_ARG_BOOL:
		tb_pb_varint(b, DA_BOOL, a->v.i != 0);
		break;
	case TB_ARG_STR:
		if (a->v.s.p)
			tb_pb_bytes(b, DA_STRING, a->v.s.p, a->v.s.len);
		else
			tb_pb_string(b, DA_STRING, "<unreadable>");
		break;
	default:   /* TB_ARG_PTR */
		tb_pb_varint(b, DA_POINTER, a->v.u);
		break;
	}
	tb_pb_end(b);
}

/* The marks of what is incomplete, never invented (docs/output.md). */
static void marks(struct pf *p, struct pf_seq *s, const struct tracebpf_event *pe)
{
	char lost[96];
	int n;

	if (pe->inherited)
		annotation_str(p, s, K_INHERITED, "open in the parent at fork",
			       strlen("open in the parent at fork"));
	if (pe->unfinished)
		annotation_str(p, s, K_UNFINISHED, pe->unfinished, strlen(pe->unfinished));
	if (pe->end_of)
		annotation_str(p, s, K_END_OF, pe->end_of, strlen(pe->end_of));
	if (pe->begin_of)
		annotation_str(p, s, K_BEGIN_OF, pe->begin_of, strlen(pe->begin_of));
	if (pe->lost) {
		n = snprintf(lost, sizeof(lost), "events lost at ts %" PRIu64 ".%03u: %" PRIu64
			     " records", pe->lost_ts / 1000, (unsigned)(pe->lost_ts % 1000), pe->lost);
		annotation_str(p, s, pe->begin_lost ? K_BEGIN_LOST : K_INCOMPLETE, lost, (size_t)n);
	}
	if (pe->parent_lost)
		annotation_str(p, s, K_PARENT_LOST, PARENT_LOST, strlen(PARENT_LOST));
}

/* type, category and name of e on s's packet being built. */
static void head(struct pf *p, struct pf_seq *s, const struct oev *e,
		 const struct tracebpf_event *pe, int type)
{
	struct tb_pb *b = p->pkt;
	uint32_t iid = 0;

	tb_pb_varint(b, TE_CATEGORY_IIDS, pf_iid(p, s, PF_CAT, pe->cat));
	tb_pb_varint(b, TE_TYPE, (uint64_t)type);
	if (!pe->name)
		iid = pf_iid(p, s, PF_NAME, "<unreadable>");
	else if (e->site->flags & TB_SITE_COPY_NAME)
		iid = pf_iid_text(p, s, pe->name, pe->name_len);
	else
		iid = pf_iid(p, s, PF_NAME, pe->name);
	if (iid)
		tb_pb_varint(b, TE_NAME_IID, iid);
	else
		tb_pb_bytes(b, TE_NAME, pe->name, pe->name_len);
}

static void args(struct pf *p, struct pf_seq *s, const struct oev *e,
		 const struct tracebpf_event *pe)
{
	struct tracebpf_arg a[TB_MODEL_ARGS_MAX];
	int n = tb_model_event_args(e, a, TB_MODEL_ARGS_MAX);

	if (pe->step)
		annotation_str(p, s, K_STEP, pe->step, strlen(pe->step));
	for (int k = 0; k < n; k++)
		annotation(p, s, &a[k]);
	marks(p, s, pe);
}

/* The ENDs of s's slices that end at or before ts. */
static int end_before(struct pf *p, struct pf_seq *s, uint64_t ts)
{
	int err = 0;

	while (!err && s->depth && s->stack[s->depth - 1].end <= ts)
		err = pf_end_slice(p, s);
	return err;
}

/* Ends the BEGIN packet of slice e, whose END waits on s's stack. */
static int push_slice(struct pf *p, struct pf_seq *s, const struct oev *e)
{
	if (s->depth == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct pf_open *st = realloc(s->stack, cap * sizeof(*st));

		if (!st)
			return -ENOMEM;
		s->stack = st;
		s->cap = cap;
	}
	s->stack[s->depth++] = (struct pf_open){ .end = e->ts + e->dur };
	return pf_packet_end(p, s);
}

static int begin_slice(struct pf *p, struct pf_seq *s, const struct oev *e,
		       const struct tracebpf_event *pe)
{
	pf_packet_begin(p, s, e->ts, true);
	head(p, s, e, pe, TYPE_BEGIN);
	args(p, s, e, pe);
	return push_slice(p, s, e);
}

static uint64_t hash_str(uint64_t h, const char *str)
{
	return tb_hash_bytes(h, str, str ? strlen(str) : 0);
}

/* An instant: on its thread's track, its process's or the global one. */
static int instant(struct pf *p, struct pf_seq *s, const struct oev *e,
		   const struct tracebpf_event *pe)
{
	uint64_t track = 0;
	int err = 0;

	if (pe->scope == 'p') {
		track = pf_process_track(e->pid);
	} else if (pe->scope == 'g') {
		track = GLOBAL_TRACK;
		err = pf_describe_child(p, track, 0, "Global", 6, false, e->ts);
	}
	if (err)
		return err;
	pf_packet_begin(p, s, e->ts, true);
	if (track)
		tb_pb_varint(p->pkt, TE_TRACK_UUID, track);
	head(p, s, e, pe, TYPE_INSTANT);
	args(p, s, e, pe);
	return pf_packet_end(p, s);
}

/* One series of a counter, on its track "NAME KEY" (the name trace
 * processor gives a Chrome JSON counter's), a child of its process's. */
static int counter_series(struct pf *p, struct pf_seq *s, const struct oev *e,
			  const struct tracebpf_event *pe, const struct tracebpf_arg *a)
{
	char name[256], id[32] = "";
	int n;
	uint64_t uuid;

	if (pe->has_id)   /* "NAME id: 0x7 KEY", as trace processor names those */
		snprintf(id, sizeof(id), " id: 0x%" PRIx64, pe->id);
	n = snprintf(name, sizeof(name), "%.*s%s %s", (int)pe->name_len, pe->name ? pe->name : "",
		     id, a->name);
	struct tb_pb *b = p->pkt;
	int err;

	if (n >= (int)sizeof(name))
		n = sizeof(name) - 1;
	uuid = TRACK_CHILD | (tb_hash_bytes(e->pid, name, (size_t)n) & TRACK_MASK);
	err = pf_describe_child(p, uuid, pf_process_track(e->pid), name, (size_t)n, true, e->ts);
	if (err)
		return err;
	pf_packet_begin(p, s, e->ts, true);
	tb_pb_varint(b, TE_TYPE, TYPE_COUNTER);
	tb_pb_varint(b, TE_TRACK_UUID, uuid);
	if (a->type == TB_ARG_INT)
		tb_pb_int(b, TE_COUNTER, a->v.i);
	else if (a->type == TB_ARG_BOOL)
		tb_pb_int(b, TE_COUNTER, a->v.i != 0);
	else if (a->type == TB_ARG_UINT && a->v.u <= INT64_MAX)
		tb_pb_int(b, TE_COUNTER, (int64_t)a->v.u);
	else
		tb_pb_double(b, TE_DOUBLE_COUNTER, a->type == TB_ARG_UINT ? (double)a->v.u : a->v.d);
	return pf_packet_end(p, s);
}

static int counter(struct pf *p, struct pf_seq *s, const struct oev *e,
		   const struct tracebpf_event *pe)
{
	int err = 0;

	struct tracebpf_arg a[TB_MODEL_ARGS_MAX];
	int n = tb_model_event_args(e, a, TB_MODEL_ARGS_MAX);

	for (int k = 0; k < n && !err; k++)
		err = counter_series(p, s, e, pe, &a[k]);
	return err;
}

/* The async slices open in this file, per track and in all: a part of
 * --split ends only with none open. false: an end whose begin is not in
 * this file (a part forced to end with some open). */
static bool async_depth(struct pf *p, uint64_t uuid, char ph)
{
	uintptr_t d = (uintptr_t)tb_hmap_get(&p->async, uuid);

	if (ph == 'n')
		return true;
	if (ph == 'e' && d <= 1) {
		p->async_ends_dropped++;
		return false;
	}
	d = ph == 'b' ? (d ? d : 1) + 1 : d - 1;
	if (tb_hmap_put(&p->async, uuid, (void *)d))
		return true;   /* no room to count: written all the same */
	p->async_open += ph == 'b' ? 1 : -1;
	return true;
}

/* An async slice's begin, end or instant, on the track of its (process,
 * category, id), named after its first event. */
static int async(struct pf *p, struct pf_seq *s, const struct oev *e,
		 const struct tracebpf_event *pe)
{
	uint64_t uuid = TRACK_CHILD | (tb_hash64(hash_str(e->pid, pe->cat) ^ pe->id) & TRACK_MASK);
	struct tb_pb *b = p->pkt;
	int err = pf_describe_child(p, uuid, pf_process_track(e->pid),
				    pe->name ? pe->name : "", pe->name ? pe->name_len : 0, false,
				    e->ts);

	if (err)
		return err;
	if (!async_depth(p, uuid, e->ph))
		return 0;   /* its begin is in an earlier part (--split) */
	pf_packet_begin(p, s, e->ts, true);
	tb_pb_varint(b, TE_TRACK_UUID, uuid);
	if (e->ph == 'e')   /* its args join the slice's, as the JSON's end's do */
		tb_pb_varint(b, TE_TYPE, TYPE_END);
	else
		head(p, s, e, pe, e->ph == 'b' ? TYPE_BEGIN : TYPE_INSTANT);
	args(p, s, e, pe);
	return pf_packet_end(p, s);
}

static int add_id(uint64_t **v, uint32_t *n, uint64_t id)
{
	uint64_t *q = realloc(*v, (*n + 1) * sizeof(*q));

	if (!q)
		return -ENOMEM;
	q[(*n)++] = id;
	*v = q;
	return 0;
}

static bool has_id(const uint64_t *v, uint32_t n, uint64_t id)
{
	for (uint32_t i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

/* A flow's start, step or end: bound to the innermost slice open on its
 * thread (none: left out, as the JSON's importers leave it). On that
 * slice's END, a flow that ends in it and another of the same id that
 * starts in it after (a chain of flows, one id reused) are one id in
 * flow_ids: trace processor draws the arrow in, then takes the slice as
 * the start of the next arrow of that id. */
static int flow(struct pf *p, struct pf_seq *s, const struct tracebpf_event *pe)
{
	uint64_t id = tb_hash64(hash_str(hash_str(0x666c6f77, pe->cat), pe->name) ^ pe->id);
	struct pf_open *o;

	if (!s->depth) {
		p->flows_unbound++;
		return 0;
	}
	o = &s->stack[s->depth - 1];
	if (pe->ph == 'f')
		return add_id(&o->term, &o->nterm, id);
	for (uint32_t i = 0; i < o->nterm; i++) {
		if (o->term[i] == id) {   /* ended here: now goes on */
			o->term[i] = o->term[--o->nterm];
			break;
		}
	}
	return has_id(o->flows, o->nflows, id) ? 0 : add_id(&o->flows, &o->nflows, id);
}

/* An instant or slice of a tracebpf site with number arguments only and
 * nothing marked: most events of a large trace. Written from its site's
 * interned strings and its record's arguments, as the general way below
 * would write it (test_perfetto compares the two). */
static bool plain(const struct oev *e)
{
	const struct site *st = e->site;

	if ((e->ph != 'I' && e->ph != 'X') || st->usdt || st->flags ||
	    e->ev->hdr.type == TB_REC_USDT || (e->esite && e->esite->nargs) ||
	    e->inherited || e->unfinished || e->begun_before || e->begin_of || e->begin_lost ||
	    e->lost.count || e->parent_lost || (e->ph == 'I' && st->scope && st->scope != 't'))
		return false;
	for (int i = 0; i < st->nargs; i++)
		if (st->arg_type[i] == TB_ARG_STR || st->arg_type[i] == TB_ARG_DOUBLE)
			return false;
	return true;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* A debug annotation of a number: its length known before, so written
 * straight (no tb_pb_begin/end), as they would write it. */
static void plain_annotation(struct tb_pb *b, uint32_t iid, uint8_t type, uint64_t v)
{
	uint32_t field = type == TB_ARG_INT ? DA_INT : type == TB_ARG_BOOL ? DA_BOOL :
			 type == TB_ARG_PTR ? DA_POINTER : DA_UINT;
	size_t len;
	uint8_t *q;

	if (type == TB_ARG_BOOL)
		v = v != 0;
	len = 1 + varint_len(iid) + 1 + varint_len(v);
	if (len >= 0x80 || !tb_pb_room(b, len + 2))
		return;   /* never: at most 1 + 5 + 1 + 10 bytes */
	q = b->buf + b->len;
	*q++ = TE_DEBUG << 3 | TB_PB_LEN;
	*q++ = (uint8_t)len;
	*q++ = DA_NAME_IID << 3 | TB_PB_VARINT;
	q = tb_pb_put_varint(q, iid);
	*q++ = (uint8_t)(field << 3 | TB_PB_VARINT);
	q = tb_pb_put_varint(q, v);
	b->len = (size_t)(q - b->buf);
}

static int write_plain(struct pf *p, struct pf_seq *s, const struct oev *e)
{
	const struct site *st = e->site;
	struct tb_pb *b = p->pkt;
	struct pf_site *ps;

	pf_packet_begin(p, s, e->ts, true);
	ps = pf_site_iids(p, s, st);
	if (!ps)
		return -ENOMEM;
	tb_pb_varint(b, TE_CATEGORY_IIDS, ps->cat);
	tb_pb_varint(b, TE_TYPE, e->ph == 'X' ? TYPE_BEGIN : TYPE_INSTANT);
	tb_pb_varint(b, TE_NAME_IID, ps->name);
	for (int i = 0; i < st->nargs; i++)
		plain_annotation(b, ps->arg[i], st->arg_type[i], e->ev->args[i]);
	return e->ph == 'X' ? push_slice(p, s, e) : pf_packet_end(p, s);
}

static int on_event(struct pf *p, const struct oev *e)
{
	struct pf_seq *s = pf_seq_of(p, e->pid, e->tid, e->ts);
	struct tracebpf_event pe;
	int err;

	if (!s)
		return -ENOMEM;
	err = end_before(p, s, e->ts);
	if (err)
		return err;
	p->events++;
	if (!p->general && plain(e))
		return write_plain(p, s, e);
	tb_model_public_event(e, &pe);
	switch (e->ph) {
	case 'X':
		return begin_slice(p, s, e, &pe);
	case 'C':
		return counter(p, s, e, &pe);
	case 'b':
	case 'e':
	case 'n':
		return async(p, s, e, &pe);
	case 's':
	case 't':
	case 'f':
		return flow(p, s, &pe);
	case 'v':   /* a memory dump: its values are its counters (C) */
		return 0;
	default:
		return instant(p, s, e, &pe);
	}
}

static void sink_event(void *ctx, const struct oev *e)
{
	struct pf *p = ctx;

	if (e->ts + (e->ph == 'X' ? e->dur : 0) > p->last_ts)
		p->last_ts = e->ts + (e->ph == 'X' ? e->dur : 0);
	if (!p->err && p->o.split)
		p->err = pf_part_check(p);
	if (!p->err)
		p->err = on_event(p, e);
}

static int sink_kernel(void *ctx, const struct tb_rec_hdr *h)
{
	struct pf *p = ctx;

	if (h->ts > p->last_ts)
		p->last_ts = h->ts;
	return p->err ? p->err : pf_sched_add(p, h);
}

static int sink_end(void *ctx, const struct tb_model *m)
{
	struct pf *p = ctx;

	return p->err ? p->err : pf_file_close(p, m);
}

static void sink_start(void *ctx, const struct tb_model *m)
{
	((struct pf *)ctx)->m = m;
}

bool tb_pftrace_name(const char *name)
{
	size_t n = strlen(name);

	return (n > 8 && !strcmp(name + n - 8, ".pftrace")) ||
	       (n > 15 && !strcmp(name + n - 15, ".perfetto-trace"));
}

static void say(const struct pf *p)
{
	const struct tb_model_counts *k = &p->counts;

	if (k->drops_total)
		tb_print(PFX "warning: %" PRIu64 " events were lost because a ring buffer was "
			"full (see the metadata's drops_per_cpu); record again with a larger "
			"--buffer-size (application events) or --kernel-buffer-size (scheduler, "
			"-e)\n", k->drops_total);
	if (k->slices_cut_at_gaps || k->ends_after_gaps || k->events_in_gaps)
		tb_print(PFX "note: where records were lost (%" PRIu64 " gaps), %" PRIu64
			" slices were cut and %" PRIu64 " begins and ends are marked instants, "
			"never paired across a gap\n", k->gaps, k->slices_cut_at_gaps,
			k->ends_after_gaps + k->events_in_gaps);
	if (p->flows_unbound)
		tb_print(PFX "note: %" PRIu64 " flow events had no slice around them on their "
			"thread: left out, as viewers leave them out of the JSON\n",
			p->flows_unbound);
}

int tb_pftrace_run(struct tb_reader *r, FILE *out, const struct tb_pftrace_opts *o,
		   enum tb_conv_stage *stage)
{
	struct pf p = { .own = { .id = 1 }, .next_seq = 2, .r = r, .pkt = &p.out.b,
			.o = o ? *o : (struct tb_pftrace_opts){ 0 } };
	const struct tb_model_sink sink = {
		.ctx = &p, .event = sink_event, .end = sink_end, .kernel = sink_kernel,
		.start = sink_start, .filter = p.o.filter,
	};
	bool read_failed = false;
	int err;

	/* the tests compare the shortcut with the general way */
	p.general = getenv("TRACEBPF_TEST_PFTRACE_GENERAL") != NULL;
	*stage = TB_STAGE_CONVERT;
	err = p.o.split ? pf_parts_start(&p) : pf_file_open(&p, out);
	if (!err)
		err = tb_model_run(r, &sink, &read_failed);
	if (read_failed)
		*stage = TB_STAGE_READ;
	else if (err == -EIO || p.out.err)
		*stage = TB_STAGE_WRITE;
	if (p.said)
		*stage = TB_STAGE_SAID;
	if (!err)
		say(&p);
	pf_sched_free(&p);
	pf_seqs_free(&p);
	if (p.o.split) {
		err = pf_parts_finish(&p, err);
		if (!err)
			pf_parts_say(&p);
		if (p.said)
			*stage = TB_STAGE_SAID;
	} else if (pf_out_close(&p.out) && !err) {
		err = -EIO;
		*stage = TB_STAGE_WRITE;
	}
	pf_parts_free(&p);
	if (!err && o && o->verbose)
		tb_say(TRACEBPF_PRINT_INFO, PFX "%" PRIu64 " events, %" PRIu64 " trace events "
		       "written, %" PRIu64 " kernel records, %" PRIu64 " bytes\n", p.counts.events,
		       p.events, p.kernel_events, p.out.bytes);
	return err;
}
