/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* filter_args.h - the filter options of tracebpf convert and report. */
#ifndef TRACEBPF_FILTER_ARGS_H
#define TRACEBPF_FILTER_ARGS_H

#include "filter.h"

/* The five options (--pid, --tid, --cat, --name, --time) for a command's
 * argp, one definition for every command that filters: add it as a child
 * (struct argp_child) whose input is a struct tb_filter_args (set
 * state->child_inputs[i] at ARGP_KEY_INIT). A bad value is said as
 * "tracebpf: CMD: bad --OPT 'ARG': WHY", then argp's "Try ... --help",
 * and exits 64. */
struct tb_filter_args {
	const char *cmd;               /* for the message: "convert", "report" */
	struct tb_filter filter;
};
struct argp;
extern const struct argp tb_filter_argp;

#endif
