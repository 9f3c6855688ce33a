// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pftrace_sched.c - the kernel records in Perfetto's ftrace form
 * (docs/perfetto.md, "Kernel records"): per CPU, a FtraceEventBundle of
 * up to BUNDLE_MAX records. Switches and wakings go in its compact form
 * (compact_sched: columns, timestamps as deltas, task names interned in
 * the bundle), which gives the CPU tracks; wakeups, task lifecycle, CPU
 * idle and frequency as their own ftrace events; -e tracepoints as
 * generic ones, field by field.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ftrace.h"
#include "perfetto/pftrace_int.h"

#define BUNDLE_MAX 4096   /* records of one CPU written together */
#define COMMS_MAX  512    /* names interned in one bundle */

enum {
	PKT_FTRACE = 1, FB_CPU = 1, FB_EVENT = 2, FB_COMPACT = 4,
	CS_SW_TS = 1, CS_SW_STATE = 2, CS_SW_PID = 3, CS_SW_PRIO = 4, CS_INTERN = 5,
	CS_SW_COMM = 6, CS_WK_TS = 7, CS_WK_PID = 8, CS_WK_CPU = 9, CS_WK_PRIO = 10,
	CS_WK_COMM = 11, CS_WK_FLAGS = 12,
	FE_TS = 1, FE_PID = 2,
	FE_FREQ = 11, FE_IDLE = 13, FE_WAKEUP = 17, FE_WAKEUP_NEW = 114, FE_EXIT = 238, FE_FORK = 239, FE_GENERIC = 327,
	PKT_PROCESS_TREE = 2, PT_THREADS = 2, PTT_TID = 1, PTT_TGID = 3,
};

struct col {
	uint64_t *v;
	size_t n, cap;
};

enum { SW_TS, SW_STATE, SW_PID, SW_PRIO, SW_COMM, WK_TS, WK_PID, WK_CPU, WK_PRIO, WK_COMM,
       WK_FLAGS, NCOLS };

/* One CPU's bundle in the making. */
struct pf_cpu {
	struct col c[NCOLS];
	uint64_t last_sw, last_wk;   /* for the deltas */
	char (*comms)[16];
	size_t ncomms;
	struct tb_pb events;         /* FtraceEvent messages (FB_EVENT) */
	size_t n;
};

struct pf_sched {
	struct pf_cpu **cpu;
	size_t ncpu;
	struct tb_ftrace *ft;        /* formats, for -e tracepoints */
	struct tb_hmap tgid;         /* tid -> 1 + its tgid, as the records say */
	uint64_t last_ts;
};

static int col_push(struct col *c, uint64_t v)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		uint64_t *p = realloc(c->v, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		c->v = p;
		c->cap = cap;
	}
	c->v[c->n++] = v;
	return 0;
}

static struct pf_cpu *cpu_of(struct pf_sched *s, uint32_t cpu)
{
	if (cpu >= 4096)
		return NULL;   /* never trusted: a CPU number this large */
	if (cpu >= s->ncpu) {
		struct pf_cpu **p = realloc(s->cpu, (cpu + 1) * sizeof(*p));

		if (!p)
			return NULL;
		memset(p + s->ncpu, 0, (cpu + 1 - s->ncpu) * sizeof(*p));
		s->cpu = p;
		s->ncpu = cpu + 1;
	}
	if (!s->cpu[cpu]) {
		s->cpu[cpu] = calloc(1, sizeof(struct pf_cpu));
		if (s->cpu[cpu])
			s->cpu[cpu]->comms = calloc(COMMS_MAX, 16);
		if (s->cpu[cpu] && !s->cpu[cpu]->comms) {
			free(s->cpu[cpu]);
			s->cpu[cpu] = NULL;
		}
	}
	return s->cpu[cpu];
}

/* The index of comm in the bundle's table (a full table: flushed first by
 * the caller, which checks ncomms). */
static uint32_t comm_index(struct pf_cpu *c, const char *comm)
{
	char name[16];

	strncpy(name, comm, 15);
	name[15] = 0;
	for (size_t i = c->ncomms; i-- > 0;)
		if (!strcmp(c->comms[i], name))
			return (uint32_t)i;
	memcpy(c->comms[c->ncomms], name, 16);
	return (uint32_t)c->ncomms++;
}

static void packed(struct tb_pb *b, uint32_t field, const struct col *c)
{
	if (!c->n)
		return;
	tb_pb_begin(b, field);
	for (size_t i = 0; i < c->n; i++)
		tb_pb_packed(b, c->v[i]);
	tb_pb_end(b);
}

static void compact(struct tb_pb *b, struct pf_cpu *c)
{
	static const uint32_t field[NCOLS] = {
		CS_SW_TS, CS_SW_STATE, CS_SW_PID, CS_SW_PRIO, CS_SW_COMM, CS_WK_TS, CS_WK_PID,
		CS_WK_CPU, CS_WK_PRIO, CS_WK_COMM, CS_WK_FLAGS,
	};

	if (!c->c[SW_TS].n && !c->c[WK_TS].n)
		return;
	tb_pb_begin(b, FB_COMPACT);
	for (size_t i = 0; i < c->ncomms; i++)
		tb_pb_bytes(b, CS_INTERN, c->comms[i], strlen(c->comms[i]));
	for (int k = 0; k < NCOLS; k++)
		packed(b, field[k], &c->c[k]);
	tb_pb_end(b);
}

static int flush_cpu(struct pf *p, uint32_t cpu, struct pf_cpu *c)
{
	struct tb_pb *b = p->pkt;
	int err;

	if (!c->n)
		return 0;
	pf_out_begin(&p->out);
	tb_pb_varint(b, PF_PKT_SEQ_ID, p->own.id);
	tb_pb_begin(b, PKT_FTRACE);
	tb_pb_varint(b, FB_CPU, cpu);
	tb_pb_raw(b, c->events.buf, c->events.len);   /* its FtraceEvents */
	compact(b, c);
	err = pf_out_end(&p->out);
	for (int k = 0; k < NCOLS; k++)
		c->c[k].n = 0;
	c->events.len = 0;
	c->ncomms = 0;
	c->n = 0;
	c->last_sw = c->last_wk = 0;
	return err ? err : c->events.err;
}

static int add_switch(struct pf_cpu *c, const struct tb_rec_switch *r)
{
	int err = 0;

	err |= col_push(&c->c[SW_TS], r->hdr.ts - c->last_sw);
	c->last_sw = r->hdr.ts;
	err |= col_push(&c->c[SW_STATE], r->prev_state);
	err |= col_push(&c->c[SW_PID], r->next_tid);
	err |= col_push(&c->c[SW_PRIO], (uint64_t)(int64_t)r->next_prio);
	err |= col_push(&c->c[SW_COMM], comm_index(c, r->next_comm));
	return err ? -ENOMEM : 0;
}

static int add_waking(struct pf_cpu *c, const struct tb_rec_wake *r)
{
	int err = 0;

	err |= col_push(&c->c[WK_TS], r->hdr.ts - c->last_wk);
	c->last_wk = r->hdr.ts;
	err |= col_push(&c->c[WK_PID], r->tid);
	err |= col_push(&c->c[WK_CPU], r->target_cpu);
	err |= col_push(&c->c[WK_PRIO], (uint64_t)(int64_t)r->prio);
	err |= col_push(&c->c[WK_COMM], comm_index(c, r->comm));
	err |= col_push(&c->c[WK_FLAGS], 1);
	return err ? -ENOMEM : 0;
}

static void comm_field(struct tb_pb *b, uint32_t field, const char *comm)
{
	tb_pb_bytes(b, field, comm, strnlen(comm, 16));
}

static void wakeup(struct tb_pb *b, const struct tb_rec_wake *r)
{
	tb_pb_begin(b, r->kind == TB_WAKE_WAKEUP_NEW ? FE_WAKEUP_NEW : FE_WAKEUP);
	comm_field(b, 1, r->comm);
	tb_pb_varint(b, 2, r->tid);
	tb_pb_int(b, 3, r->prio);
	tb_pb_varint(b, 4, 1);
	tb_pb_varint(b, 5, r->target_cpu);
	tb_pb_end(b);
}

/* false: nothing to write. An exec's record has the new name, not the
 * file sched_process_exec names; a rename (task_rename) would rename a
 * process after its main thread, over the name the application gave it:
 * the names are the track descriptors' (pftrace_seq.c), as the JSON's are
 * its M events. */
static bool ktask(struct tb_pb *b, const struct tb_rec_ktask *r)
{
	switch (r->kind) {
	case TB_KTASK_EXEC:
	case TB_KTASK_RENAME:
		return false;
	case TB_KTASK_FORK:
		tb_pb_begin(b, FE_FORK);
		tb_pb_varint(b, 2, r->hdr.tid);
		comm_field(b, 3, r->comm);
		tb_pb_varint(b, 4, r->tid);
		break;
	case TB_KTASK_EXIT:
		tb_pb_begin(b, FE_EXIT);
		comm_field(b, 1, r->comm);
		tb_pb_varint(b, 2, r->hdr.tid);
		tb_pb_varint(b, 3, r->hdr.pid);
		break;
	}
	tb_pb_end(b);
	return true;
}

static void cpu_event(struct tb_pb *b, const struct tb_rec_cpu *r)
{
	tb_pb_begin(b, r->kind == TB_CPU_IDLE ? FE_IDLE : FE_FREQ);
	tb_pb_varint(b, 1, r->state);
	tb_pb_varint(b, 2, r->cpu_id);
	tb_pb_end(b);
}

static void generic_field(void *ctx, const struct tb_ftrace_field *fl)
{
	struct tb_pb *b = ctx;

	tb_pb_begin(b, 2);
	tb_pb_string(b, 1, fl->name);
	if (fl->str)
		tb_pb_bytes(b, 3, fl->str, fl->len);
	else if (fl->is_signed)
		tb_pb_int(b, 4, (int64_t)fl->num);
	else
		tb_pb_varint(b, 5, fl->num);
	tb_pb_end(b);
}

/* A -e tracepoint: its fields, after the name (written last: the name is
 * known once the format is found). false: no format for it. */
static bool generic(struct pf_sched *s, struct tb_pb *b, const struct tb_rec_hdr *h)
{
	size_t start;
	const char *name;

	tb_pb_begin(b, FE_GENERIC);
	start = b->len;
	name = tb_ftrace_tp_fields(s->ft, h, generic_field, b);
	if (!name) {
		b->len = start;
		tb_pb_end(b);
		return false;
	}
	tb_pb_string(b, 1, name);
	tb_pb_end(b);
	return true;
}

/* An ftrace event of its own (not compact) into the CPU's bundle. */
static int add_event(struct pf_sched *s, struct pf_cpu *c, const struct tb_rec_hdr *h)
{
	struct tb_pb *b = &c->events;
	size_t start = b->len;
	bool ok = true;

	tb_pb_begin(b, FB_EVENT);
	tb_pb_varint(b, FE_TS, h->ts);
	tb_pb_varint(b, FE_PID, h->tid);
	switch (h->type) {
	case TB_REC_WAKE:
		wakeup(b, (const void *)h);
		break;
	case TB_REC_KTASK:
		ok = ktask(b, (const void *)h);
		break;
	case TB_REC_CPU:
		cpu_event(b, (const void *)h);
		break;
	default:
		ok = generic(s, b, h);
		break;
	}
	tb_pb_end(b);
	if (!ok)
		b->len = start;   /* nothing to decode it with: left out */
	return b->err;
}

static void learn(struct pf_sched *s, uint32_t tid, uint32_t tgid)
{
	if (tid && tgid)
		tb_hmap_put(&s->tgid, tid, (void *)(uintptr_t)(tgid + 1ull));   /* best effort */
}

static void learn_tasks(struct pf_sched *s, const struct tb_rec_hdr *h)
{
	const struct tb_rec_switch *sw = (const void *)h;
	const struct tb_rec_wake *w = (const void *)h;
	const struct tb_rec_ktask *k = (const void *)h;

	learn(s, h->tid, h->pid);
	if (h->type == TB_REC_SWITCH)
		learn(s, sw->next_tid, sw->next_tgid);
	else if (h->type == TB_REC_WAKE)
		learn(s, w->tid, w->tgid);
	else if (h->type == TB_REC_KTASK && k->kind == TB_KTASK_FORK)
		learn(s, k->tid, k->tgid);
}

int pf_sched_tasks(struct pf *p, uint64_t ts)
{
	struct pf_sched *s = p->sched;
	struct tb_pb *b = p->pkt;

	if (!s || !s->tgid.n)
		return 0;
	pf_packet_begin(p, &p->own, ts, false);
	tb_pb_begin(b, PKT_PROCESS_TREE);
	for (size_t i = 0; i < s->tgid.cap; i++) {
		if (!s->tgid.vals[i])
			continue;
		tb_pb_begin(b, PT_THREADS);
		tb_pb_varint(b, PTT_TID, s->tgid.keys[i]);
		tb_pb_varint(b, PTT_TGID, (uintptr_t)s->tgid.vals[i] - 1);
		tb_pb_end(b);
	}
	return pf_packet_end(p, &p->own);
}

static int add(struct pf *p, struct pf_cpu *c, const struct tb_rec_hdr *h)
{
	learn_tasks(p->sched, h);
	if (h->type == TB_REC_SWITCH)
		return add_switch(c, (const void *)h);
	if (h->type == TB_REC_WAKE && ((const struct tb_rec_wake *)h)->kind == TB_WAKE_WAKING)
		return add_waking(c, (const void *)h);
	return add_event(p->sched, c, h);
}

int pf_sched_add(struct pf *p, const struct tb_rec_hdr *h)
{
	struct pf_sched *s = p->sched;
	struct pf_cpu *c;
	int err;

	if (!s) {
		s = p->sched = calloc(1, sizeof(*s));
		if (!s || tb_ftrace_new(&s->ft))
			return -ENOMEM;
		tb_ftrace_collect(s->ft, false);
	}
	if (h->size < tb_rec_min_size(h->type))
		return 0;   /* malformed: never trusted */
	if (h->type == TB_REC_FORMAT)
		return tb_ftrace_add(s->ft, h);
	c = cpu_of(s, h->cpu);
	if (!c)
		return h->cpu >= 4096 ? 0 : -ENOMEM;
	if (c->n >= BUNDLE_MAX || c->ncomms >= COMMS_MAX - 2) {
		err = flush_cpu(p, h->cpu, c);
		if (err)
			return err;
	}
	err = add(p, c, h);
	if (!err)
		c->n++;
	p->kernel_events++;
	return err;
}

int pf_sched_flush(struct pf *p)
{
	struct pf_sched *s = p->sched;
	int err = 0;

	for (size_t i = 0; s && i < s->ncpu && !err; i++)
		if (s->cpu[i])
			err = flush_cpu(p, (uint32_t)i, s->cpu[i]);
	return err;
}

void pf_sched_free(struct pf *p)
{
	struct pf_sched *s = p->sched;

	if (!s)
		return;
	for (size_t i = 0; i < s->ncpu; i++) {
		if (!s->cpu[i])
			continue;
		for (int k = 0; k < NCOLS; k++)
			free(s->cpu[i]->c[k].v);
		tb_pb_free(&s->cpu[i]->events);
		free(s->cpu[i]->comms);
		free(s->cpu[i]);
	}
	free(s->cpu);
	tb_hmap_free(&s->tgid);
	tb_ftrace_free(s->ft);
	free(s);
	p->sched = NULL;
}
