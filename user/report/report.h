/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * report.h - `tracebpf report FILE`: a summary of a trace on the terminal
 * or as JSON (docs/tracebpf-report.md), a sink of the model (model.h).
 */
#ifndef TRACEBPF_REPORT_H
#define TRACEBPF_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "format/tbfile.h"

/* The command: argv[0] is "tracebpf report". Returns the exit status. */

struct tb_filter;

/* The report of the events of r that filter keeps (NULL or nothing
 * given: every event), as text or JSON, on out (default sort and rows),
 * with each thread's tables too when per_thread. Returns 0 or -errno and
 * prints no error message. */
int tb_report_file(struct tb_reader *r, FILE *out, bool json, bool per_thread,
		   const struct tb_filter *filter);

#endif
