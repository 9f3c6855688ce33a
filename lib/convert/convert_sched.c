// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert_sched.c - the CPUs' switch chains in the converter
 * (docs/output.md, "Scheduler chain breaks").
 *
 * Owns: the chain checker (swchain.h) fed with each switch the output
 * shows, the gap marks and the stops; the breaks' counts (the whole
 * output's, and with --split each break's times, so that a part counts
 * those it shows); the marks: where a CPU's chain breaks, a complete
 * slice "task unknown" (category tracebpf_sched_break) on that CPU's
 * track, a thread of the CPUs' own process (TB_CPU_PID), from the switch
 * before the break to the switch that breaks it. No switch is made up:
 * the systemTraceEvents text shows the switches as recorded.
 *
 * A mark begins before the records read last, so the output queue holds
 * the events after each CPU's last switch (tb_conv_sched_low, which the
 * model asks before each flush of the queue), up to SCHED_HOLD_MAX of
 * them: a mark whose beginning was already passed begins at the latest
 * event written instead, and its unknown_since_ns says when the task
 * became unknown.
 *
 * Receives: switch records from the selection (tb_conv_add_kernel,
 * convert_select.c), to which the model hands every kernel record; gaps
 * and stops from the model's loop (tb_conv_process).
 * Hands on: the marks to the output queue (tb_conv_add_out_as); counts
 * and names to the metadata (convert_meta.c) and the model's sinks.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/convert_int.h"
#include "swchain.h"

enum { ARG_CPU, ARG_CAUSE, ARG_SINCE, ARG_IN, ARG_OUT, MARK_ARGS };

/* The marks' site: another program's probe's layout (struct
 * tb_rec_usdt), whose records hold more than TB_MAX_ARGS arguments. */
static void mark_site(struct site *s)
{
	*s = (struct site){
		.valid = true, .phase = 'B', .nargs = MARK_ARGS, .usdt = true,
		.argsrc = { ARG_CPU, ARG_CAUSE, ARG_SINCE, ARG_IN, ARG_OUT },
		.arg_type = { [ARG_CPU] = TB_ARG_UINT, [ARG_CAUSE] = TB_ARG_STR,
			      [ARG_SINCE] = TB_ARG_UINT, [ARG_IN] = TB_ARG_STR,
			      [ARG_OUT] = TB_ARG_STR },
		.argname = { [ARG_CPU] = "cpu", [ARG_CAUSE] = "cause",
			     [ARG_SINCE] = "unknown_since_ns", [ARG_IN] = "switched_in",
			     [ARG_OUT] = "switched_out" },
		.cat = "tracebpf_sched_break", .name = "task unknown",
	};
}

int tb_conv_sched_open(struct conv *c, struct tb_reader *r)
{
	mark_site(&c->sched.site);
	return tb_swchain_new(&c->sched.ch,
			      tb_swchain_cmdline_traced(tb_reader_info(r)->cmdline));
}

void tb_conv_sched_free(struct conv *c)
{
	tb_swchain_free(c->sched.ch);
	free(c->sched.marked);
	free(c->sched.list);
}

/* Appends string s (at most 47 bytes) as argument k of u, which has room. */
static size_t put_str(struct tb_rec_usdt *u, size_t off, int k, const char *s)
{
	size_t n = strnlen(s, 47) + 1;

	memcpy((char *)u + off, s, n - 1);
	((char *)u)[off + n - 1] = 0;
	u->str_len[k] = (uint16_t)n;
	return off + n;
}

/* The mark's record: its arguments in a tb_rec_usdt, strings behind. */
static void *mark_rec(struct conv *c, const struct tb_swbreak *b, uint64_t ts)
{
	union {
		struct tb_rec_usdt u;
		char bytes[sizeof(struct tb_rec_usdt) + 3 * 48 + 8];
	} buf;
	struct tb_rec_usdt *u = &buf.u;
	char in[48], out[48];
	size_t off = sizeof(*u);

	memset(&buf, 0, sizeof(buf));
	snprintf(in, sizeof(in), "%.16s-%" PRIu32, b->last_comm, b->last_tid);
	snprintf(out, sizeof(out), "%.16s-%" PRIu32, b->prev_comm, b->prev_tid);
	u->nargs = MARK_ARGS;
	u->args[ARG_CPU] = b->cpu;
	u->args[ARG_SINCE] = b->from_ts;
	off = put_str(u, off, ARG_CAUSE, tb_swbreak_words(b->cause));
	off = put_str(u, off, ARG_IN, in);
	off = put_str(u, off, ARG_OUT, out);
	u->hdr = (struct tb_rec_hdr){
		.type = TB_REC_USDT, .size = TB_REC_ALIGN(off), .cpu = b->cpu, .ts = ts,
		.pid = TB_CPU_PID, .tid = TB_CPU_PID + 1 + b->cpu,
	};
	return tb_conv_pool_copy(c, &u->hdr);
}

/* Remembers that CPU cpu's track has a mark (it is named at the end). */
static int note_marked(struct sched_breaks *s, uint32_t cpu)
{
	if (cpu >= s->nmarked) {
		uint32_t n = cpu + 1 > 2 * s->nmarked ? cpu + 1 : 2 * s->nmarked;
		bool *m = realloc(s->marked, n * sizeof(*m));

		if (!m)
			return -ENOMEM;
		memset(m + s->nmarked, 0, (n - s->nmarked) * sizeof(*m));
		s->marked = m;
		s->nmarked = n;
	}
	s->marked[cpu] = true;
	return 0;
}

/* The break on its CPU's track: a slice from the switch before it to the
 * switch that breaks the chain, or from the latest event already written
 * when that is later (the file stays in time order). */
static int mark_break(struct conv *c, const struct tb_swbreak *b)
{
	uint64_t from = b->from_ts;
	struct oev e;
	int err = note_marked(&c->sched, b->cpu);

	if (err)
		return err;
	if (!c->direct && from < c->out_ts)
		from = c->out_ts;
	if (from > b->ts)
		from = b->ts;
	e = (struct oev){
		.ts = from, .dur = b->ts - from, .seq = c->nrecs,
		.pid = TB_CPU_PID, .tid = TB_CPU_PID + 1 + b->cpu, .ph = 'X',
		.site = &c->sched.site, .ev = mark_rec(c, b, from),
	};
	return e.ev ? tb_conv_add_out_as(c, &e) : -ENOMEM;
}

/* With --split: the break's times, so that each part counts those whose
 * two switches it shows. */
static int keep_break(struct sched_breaks *s, const struct tb_swbreak *b)
{
	if (tb_conv_grow_array((void **)&s->list, &s->cap, s->n + 1, sizeof(*s->list)))
		return -ENOMEM;
	s->list[s->n++] = (struct split_break){ b->from_ts, b->ts, (uint8_t)b->cause };
	return 0;
}

int tb_conv_on_switch(struct conv *c, const struct tb_rec_switch *r, bool shown)
{
	struct tb_swbreak b;
	int ret;

	if (r->hdr.size < sizeof(*r))
		return 0;   /* the text skips it too */
	if (!shown && !c->sched.whole) {
		tb_swchain_left_out(c->sched.ch, r);
		return 0;
	}
	ret = tb_swchain_add(c->sched.ch, r, &b);
	if (ret <= 0)
		return ret;
	if (c->split && (ret = keep_break(&c->sched, &b)))
		return ret;
	return mark_break(c, &b);
}

/* The queue holds what follows each CPU's last switch, unless it holds
 * that many events already: a mark begins no later than the first event
 * not yet written. */
#define SCHED_HOLD_MAX 65536u

uint64_t tb_conv_sched_low(const struct conv *c, uint64_t low)
{
	if (!c->sched.ch || c->fifo_n + c->nout >= SCHED_HOLD_MAX)
		return low;
	return tb_swchain_low(c->sched.ch, low);
}

bool tb_conv_sched_any(const struct conv *c)
{
	return c->sched.ch && tb_swchain_any(c->sched.ch);
}

void tb_conv_sched_counts(const struct conv *c, const struct part *part, uint64_t *n)
{
	const struct sched_breaks *s = &c->sched;

	for (int i = 0; i < TB_SWBREAK_NCAUSES; i++)
		n[i] = part && c->split ? 0 : tb_swchain_breaks(s->ch, i);
	if (!part || !c->split)
		return;
	/* the part's text has the lines of [from, to): a break is its when
	 * both switches are (the first switch of a CPU there breaks nothing) */
	for (size_t i = 0; i < s->n; i++)
		if (s->list[i].from >= part->from && s->list[i].ts < part->to)
			n[s->list[i].cause]++;
}

#define CPUS_NAME "CPUs (tracebpf: scheduler chain breaks)"

static void write_m(struct tb_json *j, const char *what, uint32_t tid, const char *name)
{
	tb_json_newline(j);
	tb_json_begin_object(j);
	tb_json_kstr(j, "ph", "M");
	tb_json_kts(j, "ts", 0);
	tb_json_kuint(j, "pid", TB_CPU_PID);
	tb_json_kuint(j, "tid", tid);
	tb_json_kstr(j, "name", what);
	tb_json_key(j, "args");
	tb_json_begin_object(j);
	tb_json_kstr(j, "name", name);
	tb_json_end_object(j);
	tb_json_end_object(j);
}

/* Whether CPU cpu's track has a mark in part (NULL: anywhere). */
static bool shows(const struct conv *c, const struct part *part, uint32_t cpu)
{
	uint64_t tid = TB_CPU_PID + 1 + cpu;

	if (cpu >= c->sched.nmarked || !c->sched.marked[cpu])
		return false;
	return !part || tb_hmap_get(&part->tasks, (uint64_t)TB_CPU_PID << 22 | tid);
}

void tb_conv_sched_names(const struct conv *c, struct tb_json *j, const struct part *part)
{
	bool named = false;
	char name[32];

	for (uint32_t cpu = 0; cpu < c->sched.nmarked; cpu++) {
		if (!shows(c, part, cpu))
			continue;
		if (!named)
			write_m(j, "process_name", TB_CPU_PID, CPUS_NAME);
		named = true;
		snprintf(name, sizeof(name), "CPU %" PRIu32, cpu);
		write_m(j, "thread_name", TB_CPU_PID + 1 + cpu, name);
	}
}

int tb_conv_sched_threads(const struct conv *c,
			  int (*fn)(void *ctx, const struct tb_model_thread *t), void *ctx)
{
	struct tb_model_thread mt = { .pid = TB_CPU_PID, .process = CPUS_NAME,
				      .process_len = sizeof(CPUS_NAME) - 1 };
	char name[32];
	int ret = 0;

	for (uint32_t cpu = 0; cpu < c->sched.nmarked && !ret; cpu++) {
		if (!c->sched.marked[cpu])
			continue;
		snprintf(name, sizeof(name), "CPU %" PRIu32, cpu);
		mt.tid = TB_CPU_PID + 1 + cpu;
		mt.name = name;
		mt.name_len = strlen(name);
		ret = fn(ctx, &mt);
	}
	return ret;
}
