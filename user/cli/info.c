// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * info.c - `tracebpf info FILE`: version, streams, records per stream, time
 * range, drops and the gaps they left, the breaks in the CPUs' chains of
 * switches, bytes per event, and whether the file is whole. Reads every
 * chunk header and checks every CRC, but decompresses only the statistics
 * stream (STATS, CTL, GAP) and the scheduler's (SWITCH), in time order.
 */
#include <argp.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "merge.h"
#include "convert/model.h"
#include "swchain.h"
#include "cli/cli.h"
#include "tracebpf.h"

/* The gap marks (TB_REC_GAP) of one kind of records: how many, how many
 * records they lost, per CPU. */
struct gap_sum {
	uint64_t marks, records;
	uint64_t *per_cpu;
	uint32_t ncpus;
};

static void add_gap(struct gap_sum *g, const struct tb_rec_gap *m)
{
	uint32_t cpu = m->hdr.cpu;

	g->marks++;
	g->records += m->count;
	if (cpu >= 4096)
		return;   /* not a CPU: counted in the totals only */
	if (cpu >= g->ncpus) {
		uint64_t *p = realloc(g->per_cpu, (cpu + 1) * sizeof(*p));

		if (!p)
			return;
		memset(p + g->ncpus, 0, (cpu + 1 - g->ncpus) * sizeof(*p));
		g->per_cpu = p;
		g->ncpus = cpu + 1;
	}
	g->per_cpu[cpu] += m->count;
}

/* ncpus: the CPUs the statistics know of (the per-CPU list has at least
 * as many entries as the drops line). */
static void print_gaps(const struct tb_file_info *fi, const struct gap_sum *g, uint32_t ncpus)
{
	if (fi->major < 2 || (fi->major == 2 && fi->minor < 4)) {
		printf("gaps:           not marked (format before 2.4)\n");
		return;
	}
	printf("gaps:           %" PRIu64 " (%" PRIu64 " application records lost",
	       g[0].marks, g[0].records);
	if (g[0].ncpus > ncpus)
		ncpus = g[0].ncpus;
	if (g[0].records) {
		printf("; per cpu:");
		for (uint32_t i = 0; i < ncpus; i++)
			printf(" %" PRIu64, i < g[0].ncpus ? g[0].per_cpu[i] : 0);
	}
	printf("), %" PRIu64 " in kernel records (%" PRIu64 " lost)\n", g[1].marks,
	       g[1].records);
}

static const char *const stream_names[TB_NSTREAMS] = {
	[TB_STREAM_PROC] = "proc", [TB_STREAM_SCHED] = "sched",
	[TB_STREAM_USER] = "user", [TB_STREAM_SITE] = "site",
	[TB_STREAM_STATS] = "stats", [TB_STREAM_INDEX] = "index",
};

/* What the statistics stream holds: the last STATS record, the gap
 * marks, the tracebpf ctl changes; and the CPUs' chains of switches. */
struct stats_stream {
	struct tb_rec_stats *stats;
	struct gap_sum gaps[2];     /* application, kernel */
	unsigned ctl_stops, ctl_starts, ctl_off;
	struct tb_swchain *chain;
	uint64_t switches;
};

/* 0, or -ENOMEM (a CPU's chain could not be kept: nothing is counted
 * wrong, info fails). */
static int take_stats_rec(struct stats_stream *ss, const struct tb_rec_hdr *h)
{
	struct tb_swbreak b;

	if (h->type == TB_REC_SWITCH) {
		ss->switches++;
		if (tb_swchain_add(ss->chain, (const void *)h, &b) < 0)
			return -ENOMEM;
	}
	if (h->type == TB_REC_CTL && h->size >= sizeof(struct tb_rec_ctl)) {
		/* a stop of a recording already stopped changes nothing */
		if (((const struct tb_rec_ctl *)h)->off && !ss->ctl_off)
			tb_swchain_stopped(ss->chain);
		ss->ctl_off = ((const struct tb_rec_ctl *)h)->off;
		ss->ctl_stops += ss->ctl_off;
		ss->ctl_starts += !ss->ctl_off;
	}
	if (h->type == TB_REC_GAP) {
		const struct tb_rec_gap *m = (const void *)h;

		add_gap(&ss->gaps[m->kind == TB_GAP_APP ? 0 : 1], m);
		tb_swchain_gap(ss->chain, m);
	}
	if (h->type != TB_REC_STATS)
		return 0;
	free(ss->stats);
	ss->stats = malloc(h->size);
	if (ss->stats)
		memcpy(ss->stats, h, h->size);
	return 0;
}

static void free_stats_stream(struct stats_stream *ss)
{
	tb_swchain_free(ss->chain);
	free(ss->stats);
	free(ss->gaps[0].per_cpu);
	free(ss->gaps[1].per_cpu);
}

/* The table of streams; the records of all but the index, and their time
 * range (*lo > *hi when there are none). */
static uint64_t print_streams(struct tb_reader *r, uint64_t *lo, uint64_t *hi)
{
	uint64_t recs = 0;

	*lo = UINT64_MAX;
	*hi = 0;
	printf("streams:\n  %-6s %8s %12s %12s %10s %16s %16s\n", "name", "chunks",
	       "records", "bytes", "B/record", "first ts", "last ts");
	for (unsigned s = 1; s < TB_NSTREAMS; s++) {
		const struct tb_stream_stats *st = tb_reader_stream_stats(r, s);
		char name[16];

		if (!st->chunks)
			continue;
		snprintf(name, sizeof(name), "%s", stream_names[s] ? stream_names[s] : "?");
		if (!stream_names[s])
			snprintf(name, sizeof(name), "#%u", s);
		printf("  %-6s %8" PRIu64 " %12" PRIu64 " %12" PRIu64 " %10.2f %16" PRIu64
		       " %16" PRIu64 "\n", name, st->chunks, st->records,
		       st->stored_bytes, st->records ? (double)st->stored_bytes / st->records : 0.0,
		       st->first_ts, st->last_ts);
		if (s == TB_STREAM_INDEX || !st->records)
			continue;
		recs += st->records;
		if (st->first_ts < *lo)
			*lo = st->first_ts;
		if (st->last_ts > *hi)
			*hi = st->last_ts;
	}
	return recs;
}

/* The switches that do not switch out the task their CPU's switch before
 * switched in, by cause (docs/output.md, "Scheduler chain breaks"). */
static void print_breaks(const struct stats_stream *ss)
{
	if (!ss->switches)
		return;
	printf("sched breaks:   %" PRIu64 " of %" PRIu64 " switches (", tb_swchain_total(ss->chain),
	       ss->switches);
	for (int i = 0; i < TB_SWBREAK_NCAUSES; i++)
		printf("%s%s %" PRIu64, i ? ", " : "", tb_swbreak_words(i),
		       tb_swchain_breaks(ss->chain, i));
	printf(")\n");
}

/* Everything lost or cut: drops, processes, gaps, ctl windows, the tail. */
static void print_losses(struct tb_reader *r, const struct stats_stream *ss,
			 uint64_t dropped_bytes)
{
	if (ss->stats) {
		uint32_t n = tb_stats_ncpus(ss->stats);

		printf("drops:          %" PRIu64 " (per cpu:", (uint64_t)ss->stats->drops_total);
		for (uint32_t i = 0; i < n; i++)
			printf(" %" PRIu64, tb_stats_drop(ss->stats, i));
		printf(")\n");
		printf("lost processes: %" PRIu64 " (started by traced processes, not traced: "
		       "the traced set was full)\n", tb_stats_lost_procs(ss->stats));
	} else {
		printf("drops:          unknown (no statistics record)\n");
	}
	print_gaps(tb_reader_info(r), ss->gaps, ss->stats ? tb_stats_ncpus(ss->stats) : 0);
	if (ss->ctl_stops || ss->ctl_starts)
		printf("tracebpf ctl:   %u stop%s, %u start%s%s\n", ss->ctl_stops,
		       ss->ctl_stops == 1 ? "" : "s", ss->ctl_starts,
		       ss->ctl_starts == 1 ? "" : "s", ss->ctl_off ? "; stopped at the end" : "");
	print_breaks(ss);
	if (tb_reader_tail_reason(r))
		printf("truncated tail: %" PRIu64 " bytes (%s)\n", tb_reader_tail_bytes(r),
		       tb_reader_tail_reason(r));
	if (dropped_bytes)
		printf("incomplete round: %" PRIu64 " bytes of chunks whose round never "
		       "ended: readers drop their records (no per-thread gap)\n",
		       dropped_bytes);
}

int tb_cmd_info(int argc, char **argv, const char *cmdline)
{
	static const struct argp_option opts[] = {
		{ "connect", 'c', "SOCKET", 0, "Read from a recorder's --serve socket", 0 },
		{ 0 },
	};
	static const struct argp argp = { opts, tb_io_source_parse, "FILE.tbt",
		"Describe a trace file: version, streams, events, time range, drops, "
		"gaps, size per event, and a torn tail if there is one.", NULL, NULL, NULL };
	struct tb_io_source a = { 0 };
	const struct tb_file_info *fi;
	const struct tb_rec_hdr *h;
	struct stats_stream ss = { 0 };
	struct tb_merge *m = NULL;
	struct tb_reader *r;
	uint64_t recs, lo, hi, bytes, dropped_bytes = 0;
	int ret;

	(void)cmdline;
	argp_parse(&argp, argc, argv, 0, NULL, &a);
	if (tb_io_open_source(&r, "info", &a))
		return 1;
	tb_reader_use_index(r, 0);   /* check every chunk */
	tb_reader_set_streams(r, 1u << TB_STREAM_STATS | 1u << TB_STREAM_SCHED);
	/* switches in time order, with the gaps and stops among them */
	ret = tb_swchain_new(&ss.chain, tb_swchain_cmdline_traced(tb_reader_info(r)->cmdline));
	if (!ret)
		ret = tb_merge_new(&m, r, tb_model_rank, 4u << 20);
	while (!ret && (ret = tb_merge_next(m, &h)) > 0)
		ret = take_stats_rec(&ss, h);
	tb_merge_free(m);
	if (ret < 0) {
		fprintf(stderr, "tracebpf: info: failed to read '%s': %s\n",
			a.connect ? a.connect : a.in, strerror(-ret));
		tb_reader_close(r);
		free_stats_stream(&ss);
		return 1;
	}
	fi = tb_reader_info(r);
	printf("format:         %u.%u\n", fi->major, fi->minor);
	printf("host:           %s\n", fi->hostname);
	printf("kernel:         %s\n", fi->kernel);
	printf("command line:   %s\n", fi->cmdline);
	printf("clock:          %s, realtime offset %" PRId64 " ns\n",
	       fi->clock_id == CLOCK_MONOTONIC ? "CLOCK_MONOTONIC" : "other",
	       fi->realtime_offset_ns);
	printf("finished:       %s\n", tb_reader_finished(r) ? "yes (chunk index present)" :
	       "no (no chunk index: still being written, or the recorder was killed)");
	recs = print_streams(r, &lo, &hi);
	if (lo <= hi)
		printf("time range:     %" PRIu64 " .. %" PRIu64 " ns (%.3f s)\n", lo, hi,
		       (hi - lo) / 1e9);
	printf("records:        %" PRIu64 " (%" PRIu64 " user events)\n", recs,
	       tb_reader_stream_stats(r, TB_STREAM_USER)->records);
	tb_reader_discarded(r, &dropped_bytes);
	/* the tail's bytes are part of the file, but the part of it that was
	 * read is in the offset already: the input's size counts each once */
	bytes = tb_reader_input_bytes(r);
	printf("file bytes:     %" PRIu64 "\n", bytes);
	if (recs)
		printf("bytes/event:    %.2f (file bytes / records)\n", (double)bytes / recs);
	print_losses(r, &ss, dropped_bytes);
	tb_reader_close(r);
	free_stats_stream(&ss);
	return 0;
}
