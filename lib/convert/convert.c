// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert.c - trace file (.tbt) -> Chrome trace JSON: the entry points
 * (tb_convert_run, tb_model_run) and what joins the stages.
 *
 * Streams: records come in time order from a bounded merge of the chunks
 * (merge.h); output events wait in a bounded min-heap until no open slice
 * or later record can precede them, so memory does not grow with the
 * trace. Records an output event needs are copied (the merge reuses its
 * buffers); site descriptors are kept for the whole conversion.
 *
 * What the viewers need (docs/output.md) and how it is met here:
 * - B/E pairs are matched per thread and emitted as complete "X" events,
 *   strictly nested per thread; a slice left open is closed at its thread's
 *   exit, its process's exec or the end of the trace and marked in its args.
 * - Never paired across lost records (TB_REC_GAP): a thread that may have
 *   lost events has its open slices cut at the gap, and its BEGINs and
 *   ENDs until the gap's end, and its ENDs after it with nothing open,
 *   become marked instants; async slices likewise, for every thread;
 *   flows that span a gap are left unfinished.
 * - Instants are "I" with "s"; counters "C" with numeric args only.
 * - ts/dur are microseconds from integer ns: ts with three decimals, dur
 *   so that ts + dur added in doubles is the end's own double (json.h), so
 *   a child ending with its parent stays inside it; no nan or inf anywhere
 *   a number belongs; strings are escaped, valid UTF-8.
 * - The JSON object form is written whole; tb_convert renames it into place
 *   only once complete.
 * - Each CPU's chain of switches is checked: a break is counted by cause
 *   and marked on the CPU's track ("task unknown"), never papered over
 *   with a made-up switch.
 *
 * The stages, one file each, and what passes from one to the next
 * (convert_int.h declares what they share):
 *
 *   struct tb_rec_hdr    records in time order, from the merge
 *   convert_model.c      processes, threads, sites, names; loading
 *   struct tb_rec_event  an event record, its site and thread known
 *   convert_pair.c       slices, async slices, flows, ghosts; gaps
 *   convert_memdump.c    the applications' memory dumps
 *   convert_sched.c      the CPUs' switch chains: breaks counted, marked
 *   struct oev           a finished output event
 *   convert_queue.c      held until in ts order; the writer thread
 *   struct oev           in ts order, through a struct tb_model_sink
 *   convert_select.c     filters, --split parts
 *   struct oev           an event kept, with its part's struct tb_json
 *   convert_render.c     JSON events, templates
 *   struct conv          at the end, the whole model: names, counts
 *   convert_meta.c       each file's end: names, systemTraceEvents, metadata
 *
 * Without filters or --split the queue hands the events to the writer
 * thread, which renders them: no selection stage. tb_model_run puts
 * another sink (tracebpf report, the public API) after the queue, and the
 * filters in front of it.
 *
 * The files call one another in this order: each calls only files after
 * it, never one before it, so the call graph between them has no cycle
 * (convert_int.h declares their functions in the same order):
 *
 *   convert.c            the entry points; struct conv's life; the sinks
 *   convert_model.c      the loop over the records; what they say of
 *                        processes, threads, sites, names, categories,
 *                        ctl windows; when the queue may write (out_low)
 *   convert_usdt.c       other programs' probes: their sites, their hits
 *   convert_pair.c       slices, async slices, flows, ghosts; gaps; rss
 *   convert_memdump.c    the applications' memory dumps
 *   convert_select.c     filters, --split parts; kernel records
 *   convert_meta.c       each file's start and end
 *   convert_sched.c      the CPUs' switch chains: breaks counted, marked
 *   convert_queue.c      output events held until in ts order; the
 *                        writer thread
 *   convert_render.c     JSON events, templates
 *   convert_tables.c     the model's tables looked up: processes,
 *                        threads, sites, names, category rules
 *   convert_util.c       arrays, record copies and their pool, a pair's
 *                        life, an event record's accessors, the output
 *                        files' temporaries and messages
 *   lib/util/outq.c      batches of bytes between two threads
 *
 * Where the data goes against that order, a function pointer or a value
 * carries it, not a call: the queue hands its events to the sink this
 * file sets (the selection, the writer thread, another model's sink), and
 * the model works out how far the queue may write (what the open slices,
 * memory dumps and switch chains may still add before) and passes it to
 * the flush. The selection sees kernel records before the switch chains
 * do (tb_conv_add_kernel calls tb_conv_on_switch).
 *
 * This file owns struct conv's life: it opens the stages, picks the sink
 * the queue hands to, runs the model, has the end rendered, and says what
 * the trace lost.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "convert/convert_int.h"
#include "ftrace.h"
#include "merge.h"
#include "util/outq.h"
#include "util/print.h"
#include "swchain.h"

#define PFX "tracebpf: convert: "

static void conv_free(struct conv *c)
{
	size_t i;

	for (i = 0; i < c->procs.cap; i++)
		if (c->procs.vals[i])
			tb_conv_free_proc(c->procs.vals[i]);
	for (i = 0; i < c->threads.cap; i++)
		if (c->threads.vals[i])
			tb_conv_free_thread(c->threads.vals[i]);
	for (i = 0; i < c->nold_procs; i++)
		tb_conv_free_proc(c->old_procs[i]);
	for (i = 0; i < c->nold_threads; i++)
		tb_conv_free_thread(c->old_threads[i]);
	free(c->old_procs);
	free(c->old_threads);
	tb_hmap_free(&c->procs);
	tb_hmap_free(&c->threads);
	for (i = 0; i < c->nsites; i++)
		free(c->sites[i]);
	free(c->sites);
	free(c->usdt);
	tb_hmap_free(&c->usdt_named);
	for (i = 0; i < c->nout; i++)
		tb_conv_out_free(c, &c->out[i]);
	for (i = 0; i < c->fifo_n; i++)
		tb_conv_out_free(c, tb_conv_fifo_at(c, i));
	free(c->out);
	free(c->fifo);
	tb_conv_pool_free(c);
	free(c->stats);
	free(c->stopped);
	free(c->cats);
	for (size_t i = 0; i < c->nfilters; i++)
		free(c->filters[i]);
	free(c->filters);
	tb_conv_gaps_free(c);
	tb_conv_md_free(c);
	tb_merge_free(c->merge);
	tb_ftrace_free(c->ftrace);
	tb_conv_sched_free(c);
	tb_conv_free_parts(c);
	tb_conv_tmpls_free(c->tmpls);
	free(c->kq);
}

/* The Chrome JSON writer as the model's sink (ctx: the struct tb_json). */
static void json_event(void *ctx, const struct oev *e)
{
	tb_conv_write_event(NULL, ctx, e);
}

/* The same in the writer thread (ctx: the struct conv). */
static void async_event(void *ctx, const struct oev *e)
{
	tb_conv_out_send(ctx, e);
}

/* The same with filters or --split (ctx: the struct conv). */
static void sel_event(void *ctx, const struct oev *e)
{
	tb_conv_sel_write(ctx, e);
}

/* The most DevTools, and anything that reads the file as one JavaScript
 * string, opens: V8's longest string (0x1fffffe8 characters). */
#define VIEWER_MAX (512ull << 20)

static void format_size(char *buf, size_t len, uint64_t n)
{
	if (n >= 1ull << 30)
		snprintf(buf, len, "%.1f GiB", (double)n / (1ull << 30));
	else if (n >= 100ull << 20)
		snprintf(buf, len, "%.0f MiB", (double)n / (1ull << 20));
	else if (n >= 1ull << 20)
		snprintf(buf, len, "%.1f MiB", (double)n / (1ull << 20));
	else
		snprintf(buf, len, "%.0f KiB", (double)n / (1ull << 10));
}

/* The limit; TRACEBPF_TEST_VIEWER_MAX (bytes) lowers it for the tests. */
static uint64_t viewer_max(void)
{
	const char *env = getenv("TRACEBPF_TEST_VIEWER_MAX");
	char *end;
	unsigned long long v;

	if (!env || !*env)
		return VIEWER_MAX;
	v = strtoull(env, &end, 10);
	return *end || !v ? VIEWER_MAX : v;
}

static void warn_size(const char *name, uint64_t bytes, bool split)
{
	char size[32], max[32];

	if (bytes <= viewer_max())
		return;
	format_size(size, sizeof(size), bytes);
	format_size(max, sizeof(max), viewer_max());
	if (split)
		tb_print(PFX "warning: %s is %s; DevTools and other viewers that read "
			"the file as one string open at most %s: cut it with a smaller --split "
			"or take a window with --time, --pid, --tid, --cat or --name\n",
			name, size, max);
	else
		tb_print(PFX "warning: %s is %s%s; DevTools and other viewers that read "
			"the file as one string open at most %s: take a window with --time, "
			"--pid, --tid, --cat or --name, or cut it with --split 400M\n",
			name, size, tb_is_gz(name) ? " once decompressed" : "", max);
}

/* A JSON a viewer may refuse: said, the file is valid all the same (Perfetto
 * UI opens it). The size is known for a regular file (ftello). */
static void check_sizes(struct conv *c, FILE *out, const char *out_name,
			const uint64_t *written)
{
	off_t n;

	if (c->split) {
		tb_print(PFX "wrote %zu part%s: %s%s%s\n", c->nparts,
			c->nparts > 1 ? "s" : "", c->parts[0].name, c->nparts > 1 ? " to " : "",
			c->nparts > 1 ? c->parts[c->nparts - 1].name : "");
		for (size_t i = 0; i < c->nparts; i++)
			warn_size(c->parts[i].name, c->parts[i].bytes, true);
		return;
	}
	if (written)
		n = (off_t)*written;
	else
		n = c->selective ? (off_t)c->parts[0].bytes : out ? ftello(out) : -1;
	if (n > 0 && out_name)
		warn_size(out_name, (uint64_t)n, false);
}

/* The breaks of the CPUs' chains of switches, when some are not the
 * filters' (which break the chain by design): said, by cause. */
static void say_sched_breaks(const struct conv *c)
{
	uint64_t n[TB_SWBREAK_NCAUSES], total = 0;
	char causes[256] = "";
	size_t len = 0;

	tb_conv_sched_counts(c, NULL, n);
	for (int i = 0; i < TB_SWBREAK_NCAUSES; i++) {
		total += n[i];
		if (n[i] && len < sizeof(causes))
			len += snprintf(causes + len, sizeof(causes) - len, "%s%" PRIu64 " %s",
					len ? ", " : "", n[i], tb_swbreak_words(i));
	}
	if (total == n[TB_SWBREAK_FILTERED])
		return;
	tb_print(PFX "note: %" PRIu64 " switches do not switch out the task their CPU's "
		"switch before switched in (%s): the task that ran between is unknown, marked "
		"'task unknown' on the CPU's track (metadata.sched_breaks)\n", total, causes);
}

/* written: the bytes written to out, when ftello cannot tell (a pipe, gzip) */
int tb_convert_run(struct tb_reader *r, FILE *out, const struct tb_convert_opts *o,
		   const char *out_name, const uint64_t *written, enum tb_conv_stage *stage)
{
	bool verbose = o && o->verbose;
	struct conv c = { 0 };
	const struct tb_model_sink json = { .ctx = &c.j, .event = json_event };
	const struct tb_model_sink sel = { .ctx = &c, .event = sel_event };
	const struct tb_model_sink async = { .ctx = &c, .event = async_event };
	const char *reason;
	int err;

	*stage = TB_STAGE_CONVERT;
	c.tmpls = tb_conv_tmpls_new();   /* without: every event the generic way */
	err = tb_conv_model_open(&c, r, &json);
	if (err)
		goto out;
	if (o)
		err = tb_conv_sel_start(&c, o, r, out);
	else
		tb_conv_render_begin(&c, out);
	if (err)
		goto out;
	if (c.selective) {
		c.sink = &sel;   /* the JSON writer behind the filters and parts */
	} else if (!tb_outq_start(&c.q, tb_conv_write_batch, &c)) {
		/* read and model in this thread, format in another (without
		 * a thread: here) */
		c.sink = &async;
	}
	err = tb_conv_process(&c, stage);
	tb_outq_finish(c.q);
	c.q = NULL;
	if (!err)
		err = c.sel_err;
	if (err)
		goto out;
	*stage = TB_STAGE_WRITE;
	err = tb_json_error(&c.j);
	if (!err)
		err = tb_conv_render_end(&c, r, out);
	if (err)
		goto out;
	check_sizes(&c, out, out_name, written);

	reason = tb_reader_tail_reason(r);
	if (reason)
		tb_print(PFX "warning: the trace ends with %" PRIu64
			" unreadable bytes (%s); converted everything before them\n",
			tb_reader_tail_bytes(r), reason);
	if (c.stats && c.stats->drops_total)
		tb_print(PFX "warning: %" PRIu64 " events were lost because a "
			"ring buffer was full (see metadata.drops_per_cpu); record "
			"again with a larger --buffer-size (application events) or "
			"--kernel-buffer-size (scheduler, -e)\n", (uint64_t)c.stats->drops_total);
	if (c.gap.cut || c.gap.ends_after || c.gap.inside)
		tb_print(PFX "note: where records were lost (%" PRIu64 " gaps), %" PRIu64
			" slices were cut and %" PRIu64 " begins and ends are marked instants, "
			"never paired across a gap (metadata.slices_cut_at_gaps, ends_after_gaps, "
			"events_in_gaps)\n", c.gap.marks, c.gap.cut, c.gap.ends_after + c.gap.inside);
	if (c.gap.parent_lost)
		tb_print(PFX "note: %" PRIu64 " slices began at their thread's top level after "
			"records of it were lost, and a slice enclosing them may be among those: "
			"marked tracebpf_parent_lost (metadata.slices_parent_lost)\n",
			c.gap.parent_lost);
	say_sched_breaks(&c);
	if (c.stats && tb_stats_lost_procs(c.stats))
		tb_print(PFX "warning: %" PRIu64 " processes started by traced processes "
			"were not traced (see metadata.lost_processes); record again with a "
			"larger --max-processes\n", tb_stats_lost_procs(c.stats));
	if (verbose)
		tb_say(TRACEBPF_PRINT_INFO, PFX "%zu records, %" PRIu64 " events, %zu trace events "
			"written, %" PRIu64 " unresolved sites, %" PRIu64
			" unmatched ends; peak held: %zu records\n", c.nrecs, c.events,
			c.written - c.left_out, c.unresolved, c.unmatched, tb_merge_peak(c.merge));
	if (c.forced || tb_merge_forced(c.merge))
		tb_print(PFX "note: %zu trace events and %" PRIu64 " records were "
			"released out of time order to bound memory (a slice open for "
			"very long, or a 1.x file without rounds); viewers sort them\n",
			c.forced, tb_merge_forced(c.merge));
out:
	if (err && c.said)
		*stage = TB_STAGE_SAID;
	conv_free(&c);
	return err;
}

int tb_convert_file(struct tb_reader *r, FILE *out)
{
	enum tb_conv_stage stage;

	return tb_convert_run(r, out, NULL, NULL, NULL, &stage);
}

/* ---------------------------------------------------------- model.h -- */

/* A sink behind the filters (tb_model_sink.filter): what convert's
 * tb_conv_sel_write keeps goes on to it, the rest to its left_out. */
struct model_filter {
	struct conv *c;
	const struct tb_model_sink *to;
};

static void filter_event(void *ctx, const struct oev *e)
{
	struct model_filter *mf = ctx;

	if (tb_conv_sel_keep(mf->c, e)) {
		mf->to->event(mf->to->ctx, e);
		return;
	}
	mf->c->left_out++;
	if (mf->to->left_out)
		mf->to->left_out(mf->to->ctx, e);
}

int tb_model_run(struct tb_reader *r, const struct tb_model_sink *sink, bool *read_failed)
{
	struct tb_model m = { 0 };
	struct model_filter mf = { &m.c, sink };
	const struct tb_model_sink filtered = { .ctx = &mf, .event = filter_event };
	enum tb_conv_stage stage = TB_STAGE_CONVERT;
	int err = tb_conv_model_open(&m.c, r, sink);

	tb_conv_sel_filter(&m.c, sink->filter, r);
	m.c.sched.whole = true;   /* the counts are the whole trace's */
	if (m.c.filtering)
		m.c.sink = &filtered;
	m.c.direct = sink->any_order;
	if (sink->kernel)
		m.c.ksink = sink;
	if (sink->start)
		sink->start(sink->ctx, &m);
	if (!err)
		err = tb_conv_process(&m.c, &stage);
	if (!err && sink->end)
		err = sink->end(sink->ctx, &m);
	*read_failed = err && stage == TB_STAGE_READ;
	conv_free(&m.c);
	return err;
}
