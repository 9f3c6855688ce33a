// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * filter_args.c - the filter options (--pid, --tid, --cat, --name, --time)
 * as one argp child for every command that filters (cli.h). What
 * they mean is lib/filter.c's.
 */
#include <argp.h>
#include <stdio.h>

#include "cli/cli.h"

enum { OPT_PID = 0x5000, OPT_TID, OPT_CAT, OPT_NAME, OPT_TIME };

static const struct argp_option filter_options[] = {
	{ NULL, 0, NULL, 0, "Filters (an event is kept when it passes every one given; "
			    "repeat an option or give a comma-separated list to add values):", 0 },
	{ "pid", OPT_PID, "PID[,PID...]", 0, "Only these processes' events", 0 },
	{ "tid", OPT_TID, "TID[,TID...]", 0, "Only these threads' events", 0 },
	{ "cat", OPT_CAT, "GLOB[,GLOB...]", 0, "Only events whose category matches (fnmatch)", 0 },
	{ "name", OPT_NAME, "GLOB[,GLOB...]", 0, "Only events whose name matches (fnmatch)", 0 },
	{ "time", OPT_TIME, "START,END", 0, "Only this window, from the trace's start: "
					    "e.g. 1.5s,3s or 200ms,+50ms (units ns, us, ms, s; "
					    "an empty START or END: the trace's start or end)", 0 },
	{ 0 },
};

static int add_option(struct tb_filter *f, int key, const char *arg, const char **why)
{
	switch (key) {
	case OPT_PID: return tb_filter_add_pids(f, arg, why);
	case OPT_TID: return tb_filter_add_tids(f, arg, why);
	case OPT_CAT: return tb_filter_add_cats(f, arg, why);
	case OPT_NAME: return tb_filter_add_names(f, arg, why);
	default: return tb_filter_set_time(f, arg, why);
	}
}

static error_t filter_parse(int key, char *arg, struct argp_state *state)
{
	static const char *const opt[] = { "pid", "tid", "cat", "name", "time" };
	struct tb_filter_args *a = state->input;
	const char *why = "out of memory";

	if (key < OPT_PID || key > OPT_TIME)
		return ARGP_ERR_UNKNOWN;
	if (add_option(&a->filter, key, arg, &why)) {
		fprintf(stderr, "tracebpf: %s: bad --%s '%s': %s\n", a->cmd, opt[key - OPT_PID],
			arg, why);
		argp_state_help(state, stderr, ARGP_HELP_STD_ERR);
	}
	return 0;
}

const struct argp tb_filter_argp = { filter_options, filter_parse, NULL, NULL, NULL, NULL, NULL };
