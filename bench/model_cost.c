/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * model_cost FILE.tbt - where the time of the trace model goes, stage by
 * stage, in CPU time per record: reading (decompressing and unpacking
 * every chunk), reading and merging into time order (lib/merge.c), and
 * the whole model (lib/convert/model.h) with a sink that does nothing: in ts
 * order ("model", what convert costs before its output) and in any order
 * ("any", what report costs). Each stage reads the file again from its
 * start. Prints one line per stage.
 */
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include "merge.h"
#include "convert/model.h"
#include "format/tbfile.h"

static double cpu_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint32_t same_rank(uint16_t type)
{
	(void)type;
	return 0;
}

static void count_event(void *ctx, const struct oev *e)
{
	(void)e;
	(*(unsigned long *)ctx)++;
}

static void say(const char *stage, unsigned long n, const char *what, unsigned long recs,
		double s)
{
	printf("%-6s %10lu %-8s %6.2f s  %6.1f ns/record  %5.2f M records/s\n", stage, n, what,
	       s, s / (double)recs * 1e9, (double)recs / s / 1e6);
}

/* Stage "read": every record, read as the merge reads them (a finished
 * file's chunks in time order). */
static int stage_read(const char *path, unsigned long *recs)
{
	const struct tb_rec_hdr *h;
	struct tb_reader *r;
	double t;

	if (tb_reader_open(&r, path))
		return 1;
	tb_reader_time_order(r);
	t = cpu_s();
	while (tb_reader_next(r, &h) > 0)
		(*recs)++;
	say("read", *recs, "records", *recs, cpu_s() - t);
	tb_reader_close(r);
	return 0;
}

static int stage_merge(const char *path, unsigned long recs)
{
	const struct tb_rec_hdr *h;
	unsigned long merged = 0;
	struct tb_reader *r;
	struct tb_merge *m;
	double t;

	if (tb_reader_open(&r, path) || tb_merge_new(&m, r, same_rank, 4u << 20))
		return 1;
	t = cpu_s();
	while (tb_merge_next(m, &h) > 0)
		merged++;
	say("merge", merged, "records", recs, cpu_s() - t);
	tb_merge_free(m);
	tb_reader_close(r);
	return 0;
}

/* The model into a sink that counts: in ts order (convert's), or in any
 * order (report's, model.h). */
static int stage_model(const char *path, unsigned long recs, bool any_order)
{
	unsigned long events = 0;
	struct tb_model_sink sink = { .ctx = &events, .event = count_event,
				      .any_order = any_order };
	struct tb_reader *r;
	bool read_failed;
	double t;

	if (tb_reader_open(&r, path))
		return 1;
	t = cpu_s();
	if (tb_model_run(r, &sink, &read_failed))
		return 1;
	say(any_order ? "any" : "model", events, "events", recs, cpu_s() - t);
	tb_reader_close(r);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long recs = 0;
	struct tb_reader *r;

	if (argc != 2 || tb_reader_open(&r, argv[1])) {
		fprintf(stderr, "usage: model_cost FILE.tbt (a trace file)\n");
		return 2;
	}
	tb_reader_close(r);
	return stage_read(argv[1], &recs) || stage_merge(argv[1], recs) ||
	       stage_model(argv[1], recs, false) || stage_model(argv[1], recs, true);
}
