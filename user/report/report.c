// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * report.c - `tracebpf report FILE`: a summary of a trace on the terminal
 * (or as one JSON document), streaming, in bounded memory.
 *
 * It is a sink of the model convert builds (model.h): the same slices,
 * matched and cut the same way, never re-derived. What was lost comes
 * first. Then, for the whole trace, per process and (--per-thread) per
 * thread, the slices by name with count, total and self time (total minus
 * the slices directly inside, on the same thread), mean, p50, p99 and max;
 * percentiles come from a log-linear histogram per name (hist.h: within
 * 0.79 %), kept per thread and merged exactly into the process's and the
 * trace's at the end, so memory grows with the distinct (thread, category,
 * name) keys, never with the events. Slices
 * left open or cut at a gap are counted apart, never mixed with complete
 * ones. Then the counters: min, max and last value per series.
 * With filters (filter.h, the options convert takes) the model hands on
 * only the events they keep, decided as convert decides; the losses stay
 * the whole trace's. docs/tracebpf-report.md describes the output.
 *
 * This file is the command; report_internal.h lists the other parts
 * (collect, aggregate, text, JSON) and what each owns.
 */
#include <argp.h>
#include <errno.h>
#include <string.h>

#include "report/report.h"
#include "report/report_internal.h"
#include "cli/cli.h"
#include "tracebpf.h"

#define PFX "tracebpf: report: "

enum { OPT_PER_THREAD = 0x100 };   /* long options only */

static const struct argp_option report_options[] = {
	{ "sort", 's', "KEY", 0, "Order slices by total (default), self, count, max or mean", 0 },
	{ "top", 'n', "N", 0, "Show N names per table (default 10 on the terminal, all in "
			      "--json; 0: all)", 0 },
	{ "per-thread", OPT_PER_THREAD, NULL, 0, "Each thread's tables too, under its process's",
	  0 },
	{ "json", 'j', NULL, 0, "Write one JSON document (docs/tracebpf-report.md) instead", 0 },
	{ 0 },
};

static error_t report_parse(int key, char *arg, struct argp_state *state)
{
	struct report_opts *o = state->input;
	size_t i;

	switch (key) {
	case ARGP_KEY_INIT:
		o->filter.cmd = "report";
		state->child_inputs[0] = &o->filter;
		break;
	case 's':
		for (i = 0; i < NSORT; i++)
			if (!strcmp(arg, report_sort_names[i]))
				break;
		if (i == NSORT)
			argp_error(state, "invalid --sort '%s': give total, self, count, max or mean",
				   arg);
		o->sort = (enum sort_key)i;
		break;
	case 'n':
		o->top = tb_io_arg_range(state, arg, 0, 1000000000, "--top", NULL);
		break;
	case OPT_PER_THREAD:
		o->per_thread = true;
		break;
	case 'j':
		o->json = true;
		break;
	case ARGP_KEY_ARG:
		if (o->in)
			argp_error(state, "one trace at a time");
		o->in = arg;
		break;
	case ARGP_KEY_END:
		if (!o->in)
			argp_error(state, "give the trace file (FILE.tbt, - for stdin)");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* Runs the model into a report and prints it on o->out; on failure
 * *verb says what failed ("read" the input, "summarize" it, "write"). */
static int report_run(const struct report_opts *o, struct tb_reader *rd, const char **verb)
{
	struct report r = { .o = o };
	bool read_failed = false;
	int err = report_collect(&r, rd, &read_failed);

	if (!err)
		err = report_aggregate(&r);
	if (err)
		*verb = read_failed ? "read" : "summarize";
	else if ((err = o->json ? report_print_json(&r, rd) : report_print_text(&r, rd)))
		*verb = "write";
	report_free(&r);
	return err;
}

int tb_report_file(struct tb_reader *r, FILE *out, bool json, bool per_thread,
		   const struct tb_filter *filter)
{
	struct report_opts o = { .in = "-", .top = -1, .json = json, .per_thread = per_thread,
				 .out = out };
	const char *verb;

	if (filter)
		o.filter.filter = *filter;   /* shares its lists: never freed here */

	return report_run(&o, r, &verb);
}

int tb_cmd_report(int argc, char **argv, const char *cmdline)
{
	static const struct argp_child children[] = { { &tb_filter_argp, 0, NULL, 1 }, { 0 } };
	static const struct argp argp = { report_options, report_parse, "FILE.tbt",
					  "Summarize a trace: what was lost, then for the whole "
					  "trace and per process (and thread: --per-thread) the "
					  "slices by total and self time with percentiles, and "
					  "the counters.", children, NULL, NULL };
	struct report_opts o = { .sort = SORT_TOTAL, .top = -1, .out = stdout };
	struct tb_reader *rd = NULL;
	const char *verb;
	int err;

	(void)cmdline;
	argp_parse(&argp, argc, argv, 0, NULL, &o);
	err = tb_io_open(&rd, "report", o.in, NULL, 0);
	if (err) {
		tb_filter_free(&o.filter.filter);
		return 1;
	}
	err = report_run(&o, rd, &verb);
	if (err) {
		bool out = !strcmp(verb, "write");

		fprintf(stderr, PFX "failed to %s '%s': %s\n", verb, out ? "<stdout>" :
			strcmp(o.in, "-") ? o.in : "<stdin>", strerror(-err));
		if (out && tb_write_hint(err))
			fprintf(stderr, PFX "hint: %s\n", tb_write_hint(err));
	}
	tb_reader_close(rd);
	tb_filter_free(&o.filter.filter);
	return err ? 1 : 0;
}
