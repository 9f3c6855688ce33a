// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * report_text.c - tracebpf report on the terminal: losses first, the
 * totals, then the tables of slices and instants of the whole trace, of
 * each process and (--per-thread) of each of its threads, then the
 * counters (docs/tracebpf-report.md, DESCRIPTION).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"
#include "format/tbfile.h"

#define TOP_TEXT 10   /* rows per table on the terminal unless --top */

/* ns in a unit that keeps 4 to 6 significant digits. */
static const char *fmt_ns(char buf[24], uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, 24, "%" PRIu64 " ns", ns);
	else if (ns < 1000000)
		snprintf(buf, 24, "%.3f us", ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, 24, "%.3f ms", ns / 1e6);
	else
		snprintf(buf, 24, "%.3f s", ns / 1e9);
	return buf;
}

/* A name from the traced application, safe for a terminal: control bytes
 * become '?', and it is cut at max bytes ("..." says so). */
static void put_name(FILE *f, const char *s, size_t n, size_t width, size_t max)
{
	size_t i, shown = n > max ? max - 3 : n;

	for (i = 0; i < shown; i++)
		fputc((unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i], f);
	if (shown < n)
		fputs("...", f);
	for (i = shown < n ? max : n; i < width; i++)
		fputc(' ', f);
}

#define NAME_MAX_COLS 40

static size_t name_width(struct key **k, size_t n)
{
	size_t w = 4;

	for (size_t i = 0; i < n; i++)
		if (k[i]->name_len > w)
			w = k[i]->name_len;
	return w > NAME_MAX_COLS ? NAME_MAX_COLS : w;
}

static void print_slice_row(FILE *f, const struct key *k, size_t w)
{
	char b[7][24];
	const struct tb_hist *h = &k->hist;

	fprintf(f, "    ");
	put_name(f, k->name, k->name_len, w, NAME_MAX_COLS);
	if (!h->count) {
		fprintf(f, " %9u %11s %11s %11s %11s %11s %11s", 0u, "-", "-", "-", "-", "-", "-");
	} else {
		fprintf(f, " %9" PRIu64 " %11s %11s %11s %11s %11s %11s", h->count,
		        fmt_ns(b[0], h->sum), fmt_ns(b[1], k->self), fmt_ns(b[2], h->sum / h->count),
		        fmt_ns(b[3], tb_hist_quantile(h, 0.5)), fmt_ns(b[4], tb_hist_quantile(h, 0.99)),
		        fmt_ns(b[5], h->max));
	}
	fprintf(f, " %10" PRIu64 "  %s\n", k->incomplete + k->unpaired, k->cat);
}

static size_t rows(const struct report_opts *o, size_t n)
{
	size_t top = o->top < 0 ? TOP_TEXT : (size_t)o->top;

	return top && top < n ? top : n;
}

static void print_slice_table(const struct report_opts *o, struct key **k, size_t n,
			      const char *by)
{
	size_t w = name_width(k, rows(o, n));
	FILE *f = o->out;

	fprintf(f, "  slices by %s (%zu of %zu names)\n    ", by, rows(o, n), n);
	put_name(f, "name", 4, w, NAME_MAX_COLS);
	fprintf(f, " %9s %11s %11s %11s %11s %11s %11s %10s  %s\n", "count", "total", "self", "mean",
	        "p50", "p99", "max", "incomplete", "cat");
	for (size_t i = 0; i < rows(o, n); i++)
		print_slice_row(o->out, k[i], w);
}

static int print_slices(const struct report_opts *o, const struct level *lv)
{
	size_t n;
	struct key **k = report_sorted_keys(lv, false, o->sort, &n), **by_self = NULL;
	FILE *f = o->out;

	if (!k)
		return -ENOMEM;
	if (n && (by_self = malloc(n * sizeof(*by_self)))) {
		print_slice_table(o, k, n, report_sort_names[o->sort]);
		memcpy(by_self, k, n * sizeof(*k));
		qsort_r(by_self, n, sizeof(*by_self), report_cmp_keys, &(enum sort_key){ SORT_SELF });
		/* the same rows in the same order: nothing new to show */
		if (!memcmp(by_self, k, rows(o, n) * sizeof(*k)))
			fprintf(f, "  slices by self: the same order\n");
		else
			print_slice_table(o, by_self, n, "self");
	}
	free(k);
	if (n && !by_self)
		return -ENOMEM;
	free(by_self);
	return 0;
}

static int print_instants(const struct report_opts *o, const struct level *lv)
{
	size_t n;
	struct key **k = report_sorted_keys(lv, true, SORT_COUNT, &n);
	FILE *f = o->out;

	if (!k)
		return -ENOMEM;
	if (n) {
		fprintf(f, "  instants by count (%zu of %zu names)\n", rows(o, n), n);
		for (size_t i = 0; i < rows(o, n); i++) {
			fprintf(f, "    ");
			put_name(f, k[i]->name, k[i]->name_len, name_width(k, rows(o, n)), NAME_MAX_COLS);
			fprintf(f, " %9" PRIu64 "  %s\n", k[i]->instants, k[i]->cat);
		}
	}
	free(k);
	return 0;
}

/* The rest of a level's header line: ": S slices (I incomplete), ...". */
static void print_counts(FILE *f, const struct level *lv)
{
	fprintf(f, ": %" PRIu64 " slices (%" PRIu64 " incomplete), %" PRIu64 " instants",
	        lv->slices, lv->incomplete, lv->instants);
	if (lv->counters)
		fprintf(f, ", %" PRIu64 " counter samples", lv->counters);
	if (lv->async)
		fprintf(f, ", %" PRIu64 " async events", lv->async);
	if (lv->flows)
		fprintf(f, ", %" PRIu64 " flow events", lv->flows);
	fprintf(f, "\n");
}

/* A level's tables: slices by the sort key and by self, instants. */
static int print_level(const struct report_opts *o, const struct level *lv)
{
	int err = print_slices(o, lv);

	return err ? err : print_instants(o, lv);
}

/* A level's tables, or a line saying they are its parent's when it is
 * its parent's only child (the same keys, merged from it alone). */
static int print_level_of(const struct report_opts *o, const struct level *lv, bool only,
			  const char *same)
{
	if (!only)
		return print_level(o, lv);
	if (lv->keys.n)
		fprintf(o->out, "  %s\n", same);
	return 0;
}

static const char *plural(size_t n)
{
	return n == 1 ? "" : "s";
}

static int print_whole(const struct report *r)
{
	FILE *f = r->o->out;

	fprintf(f, "\nwhole trace (%zu process%s, %zu thread%s)", r->nprocs,
	        r->nprocs == 1 ? "" : "es", r->nshown, plural(r->nshown));
	print_counts(f, &r->whole);
	return print_level(r->o, &r->whole);
}

static int print_thread(const struct report_opts *o, const struct rthread *t, bool only)
{
	fprintf(o->out, " thread %" PRIu32 " ", t->tid);
	put_name(o->out, t->name ? t->name : "?", t->name ? t->name_len : 1, 0, 100);
	print_counts(o->out, &t->lv);
	return print_level_of(o, &t->lv, only,
			      "slices and instants: as its process's (its only thread)");
}

/* A process's header and tables, then (--per-thread) each thread's. */
static int print_process(const struct report *r, const struct rprocess *p)
{
	FILE *f = r->o->out;
	int err;

	fprintf(f, "\nprocess %" PRIu64 " ", p->pid);
	put_name(f, p->name ? p->name : "?", p->name ? p->name_len : 1, 0, 100);
	fprintf(f, " (%zu thread%s)", p->nthreads, plural(p->nthreads));
	print_counts(f, &p->lv);
	err = print_level_of(r->o, &p->lv, r->nprocs == 1,
			     "slices and instants: as the whole trace's (its only process)");
	for (size_t i = 0; !err && r->o->per_thread && i < p->nthreads; i++)
		err = print_thread(r->o, p->threads[i], p->nthreads == 1);
	return err;
}

static const char *fmt_value(char buf[32], double v)
{
	snprintf(buf, 32, "%.15g", v);
	return buf;
}

static void print_counters(FILE *f, struct series **s, size_t n)
{
	char b[3][32];

	if (!n)
		return;
	fprintf(f, "\ncounters (min, max and last value per series)\n");
	fprintf(f, "  %8s %-24s %-16s %14s %14s %14s %9s  %s\n", "pid", "name", "series", "min", "max",
	        "last", "samples", "cat");
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "  %8" PRIu64 " ", s[i]->pid);
		put_name(f, s[i]->name, s[i]->name_len, 24, 40);
		fputc(' ', f);
		put_name(f, s[i]->series, strlen(s[i]->series), 16, 40);
		fprintf(f, " %14s %14s %14s %9" PRIu64 "  %s", fmt_value(b[0], s[i]->min),
		        fmt_value(b[1], s[i]->max), fmt_value(b[2], s[i]->last), s[i]->samples,
		        s[i]->cat);
		if (s[i]->has_id)
			fprintf(f, " (id 0x%" PRIx64 ")", s[i]->id);
		fprintf(f, "\n");
	}
}

static void print_reasons(const struct report *r)
{
	FILE *f = r->o->out;

	if (!r->whole.incomplete)
		return;
	fprintf(f, "incomplete slices: %" PRIu64 " (", r->whole.incomplete);
	for (int i = 0; i < NREASONS && r->reasons[i].why; i++)
		fprintf(f, "%s%" PRIu64 " %s", i ? ", " : "", r->reasons[i].n, r->reasons[i].why);
	fprintf(f, "): counted apart, not in count/total/self/percentiles\n");
}

static uint64_t sched_breaks_total(const struct tb_model_counts *c)
{
	uint64_t n = 0;

	for (int i = 0; i < TB_SWBREAK_NCAUSES; i++)
		n += c->sched_breaks[i];
	return n;
}

static void print_losses(const struct report *r, struct tb_reader *rd)
{
	FILE *f = r->o->out;
	const struct tb_model_counts *c = &r->counts;
	uint32_t ncpus = c->stats ? tb_stats_ncpus(c->stats) : 0;

	fprintf(f, "trace: %s\n", report_complete(r, rd) ? "complete (nothing lost)" :
	        "INCOMPLETE: events are missing, see below");
	fprintf(f, "drops:            %" PRIu64 " events lost in full ring buffers (per cpu:",
	        c->drops_total);
	for (uint32_t i = 0; i < ncpus; i++)
		fprintf(f, " %" PRIu64, tb_stats_drop(c->stats, i));
	fprintf(f, "%s)\n", ncpus ? "" : " -");
	fprintf(f, "gaps:             %" PRIu64 " (%" PRIu64 " application records lost), %" PRIu64
	        " in kernel records (%" PRIu64 " lost)\n", c->gaps, c->gap_records, c->kernel_gaps,
	        c->kernel_gap_records);
	fprintf(f, "at gaps:          %" PRIu64 " slices cut, %" PRIu64 " ends after a gap, %" PRIu64
	        " events in a gap, %" PRIu64 " flow events left out\n", c->slices_cut_at_gaps,
	        c->ends_after_gaps, c->events_in_gaps, c->flow_events_left_out);
	if (c->sched_switches) {
		fprintf(f, "sched breaks:     %" PRIu64 " switches not switching out their CPU's "
		        "last task (", sched_breaks_total(c));
		for (int i = 0; i < TB_SWBREAK_NCAUSES; i++)
			fprintf(f, "%s%s %" PRIu64, i ? ", " : "", tb_swbreak_words(i),
			        c->sched_breaks[i]);
		fprintf(f, ")\n");
	}
	fprintf(f, "lost processes:   %" PRIu64 " (started by traced ones, not traced)\n",
	        c->lost_processes);
	fprintf(f, "unresolved sites: %" PRIu64 " events (no site descriptor)\n", c->unresolved_sites);
	fprintf(f, "unpaired:         %" PRIu64 " unmatched ends, %" PRIu64 " ends of slices begun "
	        "before the recording\n", c->unmatched_ends, c->ends_before_recording);
	if (c->stopped_windows)
		fprintf(f, "stopped:          %" PRIu64 " tracebpf ctl stop windows, %" PRIu64
		        " records left out\n", c->stopped_windows, c->records_while_stopped);
	if (tb_reader_tail_bytes(rd) || tb_reader_tail_reason(rd))
		fprintf(f, "truncated tail:   %" PRIu64 " bytes unread (%s)\n", tb_reader_tail_bytes(rd),
		        tb_reader_tail_reason(rd) ? tb_reader_tail_reason(rd) : "?");
	if (!tb_reader_finished(rd) && tb_reader_info(rd)->major >= 2)
		fprintf(f, "finished:         no (no chunk index: the recorder was killed, or is still "
		        "writing)\n");
	if (c->forced)
		fprintf(f, "out of order:     %" PRIu64 " events released early to bound memory: self "
		        "times of slices open very long may be too large\n", c->forced);
}

static bool filtering(const struct report_opts *o)
{
	return tb_filter_active(&o->filter.filter);
}

/* Which filters, and what they left out; the lines above (losses, events)
 * stay the whole trace's. */
static void print_filters(const struct report *r)
{
	const struct left_out *l = &r->left_out;
	FILE *f = r->o->out;

	if (!filtering(r->o))
		return;
	fprintf(f, "filters:          ");
	tb_filter_print(&r->o->filter.filter, f);
	fprintf(f, ": kept %" PRIu64 " of %" PRIu64 " trace events, left out %" PRIu64 " (%" PRIu64
	        " slices, %" PRIu64 " instants and unpaired, %" PRIu64 " counter samples, %" PRIu64
	        " async, %" PRIu64 " flow)\n", r->kept, r->kept + l->events, l->events, l->slices,
	        l->instants, l->counters, l->async, l->flows);
	fprintf(f, "                  (the losses above are the whole trace's; the counts below, "
	        "the kept events')\n");
}

int report_print_text(const struct report *r, struct tb_reader *rd)
{
	FILE *f = r->o->out;
	int err;

	print_losses(r, rd);
	print_filters(r);
	fprintf(f, "events:           %" PRIu64 ": %" PRIu64 " slices (%" PRIu64 " incomplete), %"
	        PRIu64 " unpaired begins and ends, %" PRIu64 " instants, %" PRIu64
	        " counter samples, %" PRIu64 " async, %" PRIu64 " flow\n", r->counts.events,
	        r->whole.slices, r->whole.incomplete, r->unpaired, r->whole.instants,
	        r->whole.counters, r->whole.async, r->whole.flows);
	print_reasons(r);
	fprintf(f, "percentiles:      within %.2f %% (log-linear histogram)\n",
	        100 * TB_HIST_REL_ERROR);
	err = print_whole(r);
	for (size_t i = 0; !err && i < r->nprocs; i++)
		err = print_process(r, &r->procs[i]);
	if (!err)
		print_counters(f, r->series, r->nseries);
	return err;
}
