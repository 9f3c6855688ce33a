// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * report_json.c - tracebpf report --json: one JSON document
 * (docs/tracebpf-report.md, JSON).
 */
#include <errno.h>
#include <stdlib.h>

#include "util/json.h"
#include "report/report_internal.h"
#include "format/tbfile.h"

/* The layout of the document (its "tracebpf_report"): 2 added the whole
 * trace's and each process's tables, and each thread's with --per-thread
 * only. */
#define REPORT_JSON_LAYOUT 2

static void json_name(struct tb_json *j, const char *key, const char *s, size_t n)
{
	tb_json_key(j, key);
	tb_json_string_n(j, s, n);
}

/* The breaks of the CPUs' chains of switches, as convert's metadata has
 * them (0 for a trace without switches). */
static void json_sched_breaks(struct tb_json *j, const struct tb_model_counts *c)
{
	uint64_t total = 0;

	for (int i = 0; i < TB_SWBREAK_NCAUSES; i++)
		total += c->sched_breaks[i];
	tb_json_kuint(j, "sched_breaks", total);
	tb_json_key(j, "sched_breaks_by_cause");
	tb_json_begin_object(j);
	for (int i = 0; i < TB_SWBREAK_NCAUSES; i++)
		tb_json_kuint(j, tb_swbreak_key(i), c->sched_breaks[i]);
	tb_json_end_object(j);
}

static void json_losses(struct tb_json *j, const struct report *r, struct tb_reader *rd)
{
	const struct tb_model_counts *c = &r->counts;
	uint32_t ncpus = c->stats ? tb_stats_ncpus(c->stats) : 0;

	tb_json_key(j, "complete");
	tb_json_bool(j, report_complete(r, rd));
	tb_json_key(j, "losses");
	tb_json_begin_object(j);
	tb_json_key(j, "finished");
	tb_json_bool(j, tb_reader_finished(rd));
	tb_json_kuint(j, "drops_total", c->drops_total);
	tb_json_key(j, "drops_per_cpu");
	tb_json_begin_array(j);
	for (uint32_t i = 0; i < ncpus; i++)
		tb_json_uint(j, tb_stats_drop(c->stats, i));
	tb_json_end_array(j);
	tb_json_kuint(j, "lost_processes", c->lost_processes);
	tb_json_kuint(j, "unresolved_sites", c->unresolved_sites);
	tb_json_kuint(j, "unmatched_ends", c->unmatched_ends);
	tb_json_kuint(j, "ends_before_recording", c->ends_before_recording);
	tb_json_kuint(j, "gaps", c->gaps);
	tb_json_kuint(j, "gap_records", c->gap_records);
	tb_json_kuint(j, "kernel_gaps", c->kernel_gaps);
	tb_json_kuint(j, "kernel_gap_records", c->kernel_gap_records);
	tb_json_kuint(j, "slices_cut_at_gaps", c->slices_cut_at_gaps);
	tb_json_kuint(j, "ends_after_gaps", c->ends_after_gaps);
	tb_json_kuint(j, "events_in_gaps", c->events_in_gaps);
	tb_json_kuint(j, "flow_events_left_out", c->flow_events_left_out);
	tb_json_kuint(j, "slices_parent_lost", c->slices_parent_lost);
	json_sched_breaks(j, c);
	tb_json_kuint(j, "recording_stopped", c->stopped_windows);
	tb_json_kuint(j, "records_while_stopped", c->records_while_stopped);
	tb_json_kuint(j, "truncated_tail_bytes", tb_reader_tail_bytes(rd));
	if (tb_reader_tail_reason(rd))
		tb_json_kstr(j, "truncated_tail_reason", tb_reader_tail_reason(rd));
	tb_json_kuint(j, "events_out_of_order", c->forced);
	tb_json_end_object(j);
}

/* The filters given ({} for none) and what they left out. */
static void json_filters(struct tb_json *j, const struct report *r)
{
	const struct left_out *l = &r->left_out;

	tb_json_key(j, "filters");
	tb_filter_write_json(&r->o->filter.filter, j);
	tb_json_key(j, "filtered_out");
	tb_json_begin_object(j);
	tb_json_kuint(j, "trace_events", l->events);
	tb_json_kuint(j, "slices", l->slices);
	tb_json_kuint(j, "instants", l->instants);
	tb_json_kuint(j, "counter_samples", l->counters);
	tb_json_kuint(j, "async_events", l->async);
	tb_json_kuint(j, "flow_events", l->flows);
	tb_json_end_object(j);
	tb_json_kuint(j, "kept_trace_events", r->kept);
}

static void json_totals(struct tb_json *j, const struct report *r)
{
	tb_json_kuint(j, "events", r->counts.events);
	tb_json_kuint(j, "slices", r->whole.slices);
	tb_json_kuint(j, "incomplete_slices", r->whole.incomplete);
	tb_json_key(j, "incomplete_by_reason");
	tb_json_begin_object(j);
	for (int i = 0; i < NREASONS && r->reasons[i].why; i++)
		tb_json_kuint(j, r->reasons[i].why, r->reasons[i].n);
	tb_json_end_object(j);
	tb_json_kuint(j, "unpaired", r->unpaired);
	tb_json_kuint(j, "instants", r->whole.instants);
	tb_json_kuint(j, "counter_samples", r->whole.counters);
	tb_json_kuint(j, "async_events", r->whole.async);
	tb_json_kuint(j, "flow_events", r->whole.flows);
	tb_json_key(j, "percentile_relative_error");
	tb_json_double(j, TB_HIST_REL_ERROR);
}

/* A value of the complete slices, null when there are none. */
static void json_opt(struct tb_json *j, const char *key, const struct tb_hist *h, uint64_t v)
{
	tb_json_key(j, key);
	if (h->count)
		tb_json_uint(j, v);
	else
		tb_json_null(j);
}

static void json_slice(struct tb_json *j, const struct key *k)
{
	const struct tb_hist *h = &k->hist;

	tb_json_newline(j);
	tb_json_begin_object(j);
	tb_json_kstr(j, "cat", k->cat);
	json_name(j, "name", k->name, k->name_len);
	tb_json_kuint(j, "count", h->count);
	tb_json_kuint(j, "total_ns", h->sum);
	tb_json_kuint(j, "self_ns", k->self);
	json_opt(j, "mean_ns", h, h->count ? h->sum / h->count : 0);
	json_opt(j, "min_ns", h, h->min);
	json_opt(j, "p50_ns", h, tb_hist_quantile(h, 0.5));
	json_opt(j, "p99_ns", h, tb_hist_quantile(h, 0.99));
	json_opt(j, "max_ns", h, h->max);
	tb_json_kuint(j, "incomplete", k->incomplete);
	tb_json_kuint(j, "incomplete_ns", k->incomplete_total);
	tb_json_kuint(j, "unpaired", k->unpaired);
	tb_json_end_object(j);
}

static size_t json_rows(const struct report_opts *o, size_t n)
{
	return o->top > 0 && (size_t)o->top < n ? (size_t)o->top : n;
}

static int json_keys(struct tb_json *j, const struct report_opts *o, const struct level *lv,
		     bool instant)
{
	size_t n;
	struct key **k = report_sorted_keys(lv, instant, instant ? SORT_COUNT : o->sort, &n);

	if (!k)
		return -ENOMEM;
	tb_json_key(j, instant ? "instants" : "slices");
	tb_json_begin_array(j);
	for (size_t i = 0; i < json_rows(o, n); i++) {
		if (!instant) {
			json_slice(j, k[i]);
			continue;
		}
		tb_json_newline(j);
		tb_json_begin_object(j);
		tb_json_kstr(j, "cat", k[i]->cat);
		json_name(j, "name", k[i]->name, k[i]->name_len);
		tb_json_kuint(j, "count", k[i]->instants);
		tb_json_end_object(j);
	}
	tb_json_end_array(j);
	free(k);
	return 0;
}

/* The keys every level has, in every level's order: its counts, then
 * its tables. */
static int json_level(struct tb_json *j, const struct report_opts *o, const struct level *lv)
{
	int err;

	tb_json_kuint(j, "slice_count", lv->slices);
	tb_json_kuint(j, "incomplete_slices", lv->incomplete);
	tb_json_kuint(j, "instant_count", lv->instants);
	tb_json_kuint(j, "counter_samples", lv->counters);
	tb_json_kuint(j, "async_events", lv->async);
	tb_json_kuint(j, "flow_events", lv->flows);
	err = json_keys(j, o, lv, false);
	return err ? err : json_keys(j, o, lv, true);
}

static int json_whole(struct tb_json *j, const struct report *r)
{
	int err;

	tb_json_key(j, "whole_trace");
	tb_json_begin_object(j);
	tb_json_kuint(j, "process_count", r->nprocs);
	tb_json_kuint(j, "thread_count", r->nshown);
	err = json_level(j, r->o, &r->whole);
	tb_json_end_object(j);
	return err;
}

static int json_thread(struct tb_json *j, const struct report_opts *o, const struct rthread *t)
{
	int err;

	tb_json_newline(j);
	tb_json_begin_object(j);
	tb_json_kuint(j, "tid", t->tid);
	json_name(j, "name", t->name ? t->name : "?", t->name ? t->name_len : 1);
	err = json_level(j, o, &t->lv);
	tb_json_end_object(j);
	return err;
}

static void json_series(struct tb_json *j, const struct series *s)
{
	tb_json_newline(j);
	tb_json_begin_object(j);
	tb_json_kstr(j, "cat", s->cat);
	json_name(j, "name", s->name, s->name_len);
	if (s->has_id)
		tb_json_kuint(j, "id", s->id);
	tb_json_kstr(j, "series", s->series);
	tb_json_key(j, "min");
	tb_json_double(j, s->min);
	tb_json_key(j, "max");
	tb_json_double(j, s->max);
	tb_json_key(j, "last");
	tb_json_double(j, s->last);
	tb_json_kuint(j, "samples", s->samples);
	tb_json_end_object(j);
}

/* The counters of process pid: s[*i..] while they are its. */
static void json_counters(struct tb_json *j, struct series **s, size_t n, size_t *i, uint64_t pid)
{
	tb_json_key(j, "counters");
	tb_json_begin_array(j);
	while (*i < n && s[*i]->pid < pid)
		(*i)++;   /* of a process with no thread shown: none */
	for (; *i < n && s[*i]->pid == pid; (*i)++)
		json_series(j, s[*i]);
	tb_json_end_array(j);
}

static int json_threads(struct tb_json *j, const struct report_opts *o,
			const struct rprocess *p)
{
	int err = 0;

	tb_json_key(j, "threads");
	tb_json_begin_array(j);
	for (size_t i = 0; !err && i < p->nthreads; i++)
		err = json_thread(j, o, p->threads[i]);
	tb_json_end_array(j);
	return err;
}

/* A process: its level and counters, then (--per-thread) its threads;
 * *si: where its counters start in r->series. */
static int json_process(struct tb_json *j, const struct report *r, const struct rprocess *p,
			size_t *si)
{
	int err;

	tb_json_newline(j);
	tb_json_begin_object(j);
	tb_json_kuint(j, "pid", p->pid);
	json_name(j, "name", p->name ? p->name : "?", p->name ? p->name_len : 1);
	tb_json_kuint(j, "thread_count", p->nthreads);
	err = json_level(j, r->o, &p->lv);
	json_counters(j, r->series, r->nseries, si, p->pid);
	if (!err && r->o->per_thread)
		err = json_threads(j, r->o, p);
	tb_json_end_object(j);
	return err;
}

static int json_processes(struct tb_json *j, const struct report *r)
{
	size_t si = 0;
	int err = 0;

	tb_json_newline(j);
	tb_json_key(j, "processes");
	tb_json_begin_array(j);
	for (size_t i = 0; !err && i < r->nprocs; i++)
		err = json_process(j, r, &r->procs[i], &si);
	tb_json_end_array(j);
	return err;
}

int report_print_json(const struct report *r, struct tb_reader *rd)
{
	struct tb_json j;
	int err;

	tb_json_init(&j, r->o->out);
	tb_json_begin_object(&j);
	tb_json_kuint(&j, "tracebpf_report", REPORT_JSON_LAYOUT);
	tb_json_kstr(&j, "trace", r->o->in);
	tb_json_kstr(&j, "sort", report_sort_names[r->o->sort]);
	tb_json_key(&j, "top");
	if (r->o->top > 0)
		tb_json_uint(&j, (uint64_t)r->o->top);
	else
		tb_json_null(&j);
	tb_json_key(&j, "per_thread");
	tb_json_bool(&j, r->o->per_thread);
	tb_json_newline(&j);
	json_losses(&j, r, rd);
	tb_json_newline(&j);
	json_filters(&j, r);
	tb_json_newline(&j);
	json_totals(&j, r);
	tb_json_newline(&j);
	err = json_whole(&j, r);
	if (!err)
		err = json_processes(&j, r);
	tb_json_newline(&j);
	tb_json_end_object(&j);
	tb_json_newline(&j);
	return err ? err : tb_json_error(&j);
}
