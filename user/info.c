// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * info.c - `tracebpf info FILE`: version, streams, records per stream, time
 * range, drops, bytes per event, and whether the file is whole. Reads every
 * chunk header and checks every CRC, but decompresses only the statistics.
 */
#include <argp.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tbio.h"

static const char *const stream_names[TB_NSTREAMS] = {
	[TB_STREAM_PROC] = "proc", [TB_STREAM_SCHED] = "sched",
	[TB_STREAM_USER] = "user", [TB_STREAM_SITE] = "site",
	[TB_STREAM_STATS] = "stats", [TB_STREAM_INDEX] = "index",
};

int tb_cmd_info(int argc, char **argv)
{
	static const struct argp_option opts[] = {
		{ "connect", 'c', "SOCKET", 0, "Read from a recorder's --serve socket", 0 },
		{ 0 },
	};
	static const struct argp argp = { opts, tb_io_source_parse, "FILE.tbt",
		"Describe a trace file: version, streams, events, time range, drops, "
		"size per event, and a torn tail if there is one.", NULL, NULL, NULL };
	struct tb_io_source a = { 0 };
	const struct tb_file_info *fi;
	const struct tb_rec_hdr *h;
	struct tb_rec_stats *stats = NULL;
	struct tb_reader *r;
	uint64_t recs = 0, lo = 0, hi = 0, bytes, dropped_bytes = 0;
	unsigned s, i, ctl_stops = 0, ctl_starts = 0, ctl_off = 0;
	int ret, any = 0;

	argp_parse(&argp, argc, argv, 0, NULL, &a);
	if (tb_io_open_source(&r, "info", &a))
		return 1;
	tb_reader_use_index(r, 0);   /* check every chunk */
	tb_reader_set_streams(r, 1u << TB_STREAM_STATS);
	while ((ret = tb_reader_next(r, &h)) > 0) {
		if (h->type == TB_REC_CTL && h->size >= sizeof(struct tb_rec_ctl)) {
			ctl_off = ((const struct tb_rec_ctl *)h)->off;
			ctl_stops += ctl_off;
			ctl_starts += !ctl_off;
		}
		if (h->type != TB_REC_STATS)
			continue;
		free(stats);
		stats = malloc(h->size);
		if (stats)
			memcpy(stats, h, h->size);
	}
	if (ret < 0) {
		fprintf(stderr, "tracebpf: info: failed to read '%s': %s\n",
			a.connect ? a.connect : a.in, strerror(-ret));
		tb_reader_close(r);
		free(stats);
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
	printf("streams:\n  %-6s %8s %12s %12s %10s %16s %16s\n", "name", "chunks",
	       "records", "bytes", "B/record", "first ts", "last ts");
	for (s = 1; s < TB_NSTREAMS; s++) {
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
		if (!any || st->first_ts < lo)
			lo = st->first_ts;
		if (!any || st->last_ts > hi)
			hi = st->last_ts;
		any = 1;
	}
	if (any)
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
	if (stats) {
		uint32_t n = tb_stats_ncpus(stats);

		printf("drops:          %" PRIu64 " (per cpu:", (uint64_t)stats->drops_total);
		for (i = 0; i < n; i++)
			printf(" %" PRIu64, tb_stats_drop(stats, i));
		printf(")\n");
		printf("lost processes: %" PRIu64 " (started by traced processes, not traced: "
		       "the traced set was full)\n", tb_stats_lost_procs(stats));
	} else {
		printf("drops:          unknown (no statistics record)\n");
	}
	if (ctl_stops || ctl_starts)
		printf("tracebpf ctl:   %u stop%s, %u start%s%s\n", ctl_stops,
		       ctl_stops == 1 ? "" : "s", ctl_starts, ctl_starts == 1 ? "" : "s",
		       ctl_off ? "; stopped at the end" : "");
	if (tb_reader_tail_reason(r))
		printf("truncated tail: %" PRIu64 " bytes (%s)\n", tb_reader_tail_bytes(r),
		       tb_reader_tail_reason(r));
	if (dropped_bytes)
		printf("incomplete round: %" PRIu64 " bytes of chunks whose round never "
		       "ended: readers drop their records (no per-thread gap)\n",
		       dropped_bytes);
	tb_reader_close(r);
	free(stats);
	return 0;
}
