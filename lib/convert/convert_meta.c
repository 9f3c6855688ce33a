// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert_meta.c - the end of each JSON file the converter writes
 * (docs/output.md): the process and thread names and sort indexes (M
 * events), systemTraceEvents (the kernel's text, ftrace.h) and the
 * metadata object (the recording, the losses and marks counted, the
 * filters and the part).
 *
 * Receives: the whole model (struct conv: processes, threads, names,
 * counts), the reader (struct tb_reader: the file's header) and, with
 * filters or --split, the part (struct part), after every event of the
 * file was written (convert_render.c writes the events).
 * Hands on: bytes, to the FILE behind the struct tb_json (json.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "convert/convert_int.h"
#include "ftrace.h"
#include "swchain.h"

static void write_meta_head(struct tb_json *j, const char *what, uint64_t pid,
			    uint32_t tid)
{
	tb_json_newline(j);
	tb_json_begin_object(j);
	tb_json_kstr(j, "ph", "M");
	tb_json_kts(j, "ts", 0);
	tb_json_kuint(j, "pid", pid);
	tb_json_kuint(j, "tid", tid);
	tb_json_kstr(j, "name", what);
	tb_json_key(j, "args");
	tb_json_begin_object(j);
}

/* A name set by the application (a string of n bytes from a record). */
static void write_meta_name_n(struct tb_json *j, const char *what, uint64_t pid,
			      uint32_t tid, const char *name, size_t n)
{
	write_meta_head(j, what, pid, tid);
	tb_json_key(j, "name");
	tb_json_string_n(j, name, n);
	tb_json_end_object(j);
	tb_json_end_object(j);
}

static void write_sort_index(struct tb_json *j, const char *what, uint64_t pid,
			     uint32_t tid, int64_t index)
{
	write_meta_head(j, what, pid, tid);
	tb_json_kint(j, "sort_index", index);
	tb_json_end_object(j);
	tb_json_end_object(j);
}

static void write_meta_labels(struct tb_json *j, uint64_t pid, uint32_t tid,
			      const char *labels)
{
	write_meta_head(j, "process_labels", pid, tid);
	tb_json_kstr(j, "labels", labels);
	tb_json_end_object(j);
	tb_json_end_object(j);
}

static void write_meta_event(struct tb_json *j, const char *what, uint64_t pid,
			     uint32_t tid, const char *name)
{
	write_meta_head(j, what, pid, tid);
	tb_json_kstr(j, "name", name);
	tb_json_end_object(j);
	tb_json_end_object(j);
}

/* The values of m and the `nold` of `old`, to be sorted by the caller. */
static void **sorted_vals(const struct tb_hmap *m, void *old, size_t nold)
{
	void **v = calloc(m->n + nold + 1, sizeof(*v));
	size_t i, n = 0;

	if (!v)
		return NULL;
	for (i = 0; i < m->cap; i++)
		if (m->vals[i])
			v[n++] = m->vals[i];
	for (i = 0; i < nold; i++)
		v[n++] = ((void **)old)[i];
	return v;
}

static int cmp_proc(const void *a, const void *b)
{
	const struct proc *x = *(void *const *)a, *y = *(void *const *)b;

	return x->out_pid < y->out_pid ? -1 : x->out_pid > y->out_pid;
}

static int cmp_thread(const void *a, const void *b)
{
	const struct thread *x = *(void *const *)a, *y = *(void *const *)b;

	if (x->out_pid != y->out_pid)
		return x->out_pid < y->out_pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static const char *clock_name(uint32_t id)
{
	switch (id) {
	case CLOCK_REALTIME:
		return "CLOCK_REALTIME";
	case CLOCK_MONOTONIC:
		return "CLOCK_MONOTONIC";
	case CLOCK_MONOTONIC_RAW:
		return "CLOCK_MONOTONIC_RAW";
	case CLOCK_BOOTTIME:
		return "CLOCK_BOOTTIME";
	default:
		return "unknown";
	}
}

/* The object's start: trace events are written as they are ready. */
void tb_conv_render_begin(struct conv *c, FILE *f)
{
	tb_json_init(&c->j, f);
	tb_json_begin_object(&c->j);
	tb_json_key(&c->j, "traceEvents");
	tb_json_begin_array(&c->j);
	c->json_open = true;
}

/* The kernel's name of process p (its comm, or "pid N"); a reused pid
 * says which real pid it was. */
void tb_conv_proc_label(const struct proc *p, char name[TB_PROC_LABEL_MAX])
{
	const char *base = p->title && p->cmdline ? p->cmdline : p->has_name ? p->name : NULL;
	char buf[64];

	if (!base) {
		snprintf(buf, sizeof(buf), "pid %" PRIu32, p->pid);
		base = buf;
	}
	snprintf(name, TB_PROC_LABEL_MAX, p->incarnation ? "%.256s [pid %" PRIu32 " #%" PRIu32 "]"
							  : "%.256s",
		 base, p->pid, p->incarnation + 1);
}

/* Names (known only at the end: exit records carry the last comm) as M
 * events after the trace events, which every viewer accepts, then the
 * metadata. */
/* The process and thread names (and sort indices), after the events. */
static void write_names(struct tb_json *j, void **procs, size_t nprocs, void **threads,
			size_t nthreads, const struct part *part)
{
	char buf[64];
	size_t i;

	for (i = 0; i < nprocs; i++) {
		const struct proc *p = procs[i];
		char name[TB_PROC_LABEL_MAX];

		if (part && !tb_hmap_get(&part->pids, p->out_pid))
			continue;   /* none of the part's events is of it */
		tb_conv_proc_label(p, name);
		if (p->app_name)
			write_meta_name_n(j, "process_name", p->out_pid, p->pid,
					  p->app_name, p->app_name_len);
		else
			write_meta_event(j, "process_name", p->out_pid, p->pid, name);
		/* catapult shows labels under the process name; Perfetto and
		 * DevTools ignore this metadata event */
		if (p->cmdline)
			write_meta_labels(j, p->out_pid, p->pid, p->cmdline);
		if (p->has_sort)
			write_sort_index(j, "process_sort_index", p->out_pid, p->pid,
					 p->sort_index);
	}
	for (i = 0; i < nthreads; i++) {
		const struct thread *t = threads[i];

		if (t->placeholder)
			continue;   /* named by a gap only: no record of it */
		if (part && !tb_hmap_get(&part->tasks, t->out_pid << 22 | t->tid))
			continue;
		if (!t->has_name)
			snprintf(buf, sizeof(buf), "tid %" PRIu32, t->tid);
		if (t->app_name)
			write_meta_name_n(j, "thread_name", t->out_pid, t->tid,
					  t->app_name, t->app_name_len);
		else
			write_meta_event(j, "thread_name", t->out_pid, t->tid,
					 t->has_name ? t->name : buf);
		if (t->has_sort)
			write_sort_index(j, "thread_sort_index", t->out_pid, t->tid,
					 t->sort_index);
	}
}

/* metadata.event_filters: each TB_REC_FILTER, in file order. */
static void write_filters(const struct conv *c, struct tb_json *j)
{
	tb_json_key(j, "event_filters");
	tb_json_begin_array(j);
	for (size_t i = 0; i < c->nfilters; i++) {
		const struct tb_rec_filter *f = c->filters[i];
		const __u32 *ids = (const __u32 *)(f + 1);

		tb_json_begin_object(j);
		tb_json_kuint(j, "from_ns", f->hdr.ts);
		if (f->which & TB_RECF_TIDS)
			tb_json_kuint_array(j, "tids", ids, f->ntids);
		if (f->which & TB_RECF_PIDS)
			tb_json_kuint_array(j, "pids", ids + f->ntids, f->npids);
		tb_json_end_object(j);
	}
	tb_json_end_array(j);
}

/* The JSON's metadata object: versions, host, clock, counts of everything
 * lost or incomplete (the output contract, docs/tracebpf-convert.md). */
/* What the filters and --split did, in the metadata of each file. */
static void write_sel_metadata(const struct conv *c, struct tb_json *j, const struct part *part)
{
	if (c->filtering) {
		tb_json_key(j, "filters");
		tb_filter_write_json(&c->filt, j);
		tb_json_kuint(j, "filtered_out_trace_events", c->left_out);
		tb_json_kuint(j, "filtered_out_kernel_records", c->kleft_out);
	}
	if (!c->split)
		return;
	tb_json_key(j, "split");
	tb_json_begin_object(j);
	tb_json_kuint(j, "part", (uint64_t)(part - c->parts) + 1);
	tb_json_kuint(j, "parts", c->nparts);
	tb_json_kuint(j, "size", c->split);
	/* its span in the trace's clock: [from_ts, to_ts) */
	if (part != c->parts)
		tb_json_kuint(j, "from_ts", part->from);
	if (part->to != UINT64_MAX)
		tb_json_kuint(j, "to_ts", part->to);
	tb_json_end_object(j);
}

/* The breaks in the CPUs' chains of switches that the file's
 * systemTraceEvents shows (docs/output.md, "Scheduler chain breaks"):
 * what Perfetto counts as mismatched_sched_switch_tids, by cause. */
static void write_sched_breaks(const struct conv *c, struct tb_json *j, const struct part *part)
{
	uint64_t n[TB_SWBREAK_NCAUSES], total = 0;

	tb_conv_sched_counts(c, part, n);
	for (int i = 0; i < TB_SWBREAK_NCAUSES; i++)
		total += n[i];
	tb_json_kuint(j, "sched_breaks", total);
	tb_json_key(j, "sched_breaks_by_cause");
	tb_json_begin_object(j);
	for (int i = 0; i < TB_SWBREAK_NCAUSES; i++)
		tb_json_kuint(j, tb_swbreak_key(i), n[i]);
	tb_json_end_object(j);
}

static void write_metadata(const struct conv *c, struct tb_reader *r, struct tb_json *j,
			   const struct part *part, uint64_t kernel_events)
{
	const struct tb_file_info *info = tb_reader_info(r);
	uint32_t ncpus = c->stats ? tb_stats_ncpus(c->stats) : 0, i;
	char buf[64];

	tb_json_begin_object(j);
	tb_json_kstr(j, "tracebpf_version", TRACEBPF_VERSION);
	snprintf(buf, sizeof(buf), "%u.%u", info->major, info->minor);
	tb_json_kstr(j, "format_version", buf);
	tb_json_kstr(j, "hostname", info->hostname);
	tb_json_kstr(j, "kernel_release", info->kernel);
	tb_json_kstr(j, "command_line", info->cmdline);
	tb_json_kstr(j, "clock", clock_name(info->clock_id));
	tb_json_kint(j, "realtime_offset_ns", info->realtime_offset_ns);
	tb_json_kuint(j, "start_ts", info->start_ts);
	tb_json_kuint(j, "events", c->events);
	tb_json_kuint(j, "drops_total", c->stats ? c->stats->drops_total : 0);
	tb_json_key(j, "drops_per_cpu");
	tb_json_begin_array(j);
	for (i = 0; i < ncpus; i++)
		tb_json_uint(j, tb_stats_drop(c->stats, i));
	tb_json_end_array(j);
	/* processes started by traced ones that were not traced: their
	 * events are missing from the trace (docs/tracebpf-record.md) */
	tb_json_kuint(j, "lost_processes", c->stats ? tb_stats_lost_procs(c->stats) : 0);
	tb_json_kuint(j, "unresolved_sites", c->unresolved);
	tb_json_kuint(j, "unmatched_ends", c->unmatched);
	tb_json_kuint(j, "ends_before_recording", c->ends_before);
	/* lost records (TB_REC_GAP) and what was cut or left unpaired there */
	tb_json_kuint(j, "gaps", c->gap.marks);
	tb_json_kuint(j, "gap_records", c->gap.records);
	tb_json_kuint(j, "kernel_gaps", c->gap.kmarks);
	tb_json_kuint(j, "kernel_gap_records", c->gap.krecords);
	tb_json_kuint(j, "slices_cut_at_gaps", c->gap.cut);
	tb_json_kuint(j, "ends_after_gaps", c->gap.ends_after);
	tb_json_kuint(j, "events_in_gaps", c->gap.inside);
	tb_json_kuint(j, "flow_events_left_out", c->gap.flows_left_out);
	/* only with gaps, so that other files render as they did */
	if (c->gap.marks)
		tb_json_kuint(j, "slices_parent_lost", c->gap.parent_lost);
	/* written before a slice open for very long (tb_conv_out_flush): only when
	 * there are some, so that other files render as they did */
	if (c->forced)
		tb_json_kuint(j, "events_out_of_order", c->forced);
	if (c->nstopped) {
		tb_json_key(j, "recording_stopped");   /* tracebpf ctl stop..start */
		tb_json_begin_array(j);
		for (i = 0; i < c->nstopped; i++) {
			tb_json_begin_object(j);
			tb_json_kuint(j, "from_ns", c->stopped[i].from);
			if (c->stopped[i].to != UINT64_MAX)
				tb_json_kuint(j, "to_ns", c->stopped[i].to);
			tb_json_end_object(j);
		}
		tb_json_end_array(j);
		tb_json_kuint(j, "records_while_stopped", c->while_stopped);
	}
	/* application memory dumps (docs/output.md, "Memory"): only when
	 * there are some, so that other files render as they did */
	if (c->md_dumps)
		tb_json_kuint(j, "memory_dumps", c->md_dumps);
	if (c->md_orphans)
		tb_json_kuint(j, "memory_dump_records_without_dump", c->md_orphans);
	if (c->cats) {   /* the last rules; docs/output.md, "Processes, threads and metadata" */
		tb_json_key(j, "categories");
		tb_json_begin_array(j);
		for (i = 0; i < c->cats->len;
		     i += strnlen(c->cats->rules + i, c->cats->len - i) + 1)
			tb_json_string_n(j, c->cats->rules + i,
					 strnlen(c->cats->rules + i, c->cats->len - i));
		tb_json_end_array(j);
		tb_json_kuint(j, "events_of_categories_off", c->cats_left_out);
	}
	if (c->nfilters)   /* docs/output.md, "Processes, threads and metadata" */
		write_filters(c, j);
	tb_json_kuint(j, "kernel_events", kernel_events);
	if (tb_conv_sched_any(c))
		write_sched_breaks(c, j, part);
	tb_json_kuint(j, "tracepoints_truncated", tb_ftrace_truncated(c->ftrace));
	tb_json_kuint(j, "truncated_tail_bytes", tb_reader_tail_bytes(r));
	if (tb_reader_tail_reason(r))
		tb_json_kstr(j, "truncated_tail_reason", tb_reader_tail_reason(r));
	if (part)
		write_sel_metadata(c, j, part);
	tb_json_end_object(j);
}

/* The end of one JSON file after its events: names, systemTraceEvents,
 * metadata. part (filters, --split): only the names its events need, and
 * with --split only the kernel lines of its span. */
int tb_conv_render_tail(struct conv *c, struct tb_reader *r, struct tb_json *jp, FILE *f,
			const struct part *part)
{
	void **procs = sorted_vals(&c->procs, c->old_procs, c->nold_procs);
	void **threads = sorted_vals(&c->threads, c->old_threads, c->nold_threads);
	size_t nprocs = c->procs.n + c->nold_procs, nthreads = c->threads.n + c->nold_threads;
	struct tb_json j = *jp;
	int err = 0;

	if (!procs || !threads) {
		free(procs);
		free(threads);
		return -ENOMEM;
	}
	qsort(procs, nprocs, sizeof(*procs), cmp_proc);
	qsort(threads, nthreads, sizeof(*threads), cmp_thread);
	write_names(&j, procs, nprocs, threads, nthreads, part);
	tb_conv_sched_names(c, &j, part);
	free(procs);
	free(threads);
	tb_json_newline(&j);
	tb_json_end_array(&j);

	tb_json_kstr(&j, "displayTimeUnit", "ns");
	tb_json_newline(&j);
	if (tb_ftrace_lines(c->ftrace)) {
		tb_json_key(&j, "systemTraceEvents");
		if (part && c->split)
			err = tb_ftrace_write_json_range(c->ftrace, &j, part->from, part->to);
		else
			err = tb_ftrace_write_json(c->ftrace, &j);
		if (err)
			return err;
		tb_json_newline(&j);
	}
	tb_json_key(&j, "metadata");
	write_metadata(c, r, &j, part, tb_ftrace_lines(c->ftrace));
	tb_json_end_object(&j);
	tb_json_newline(&j);

	err = tb_json_error(&j);
	if (!err && fflush(f))
		err = -errno;
	*jp = j;
	return err;
}


int tb_model_metadata(const struct tb_model *m, struct tb_reader *r, uint64_t kernel_events,
		      FILE *f)
{
	struct tb_json j;

	tb_json_init(&j, f);
	write_metadata(&m->c, r, &j, NULL, kernel_events);
	return tb_json_error(&j);
}
