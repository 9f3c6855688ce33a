/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * report.h - `tracebpf report FILE`: a summary of a trace on the terminal
 * or as JSON (docs/tracebpf-report.md), a sink of the model (model.h).
 */
#ifndef TRACEBPF_REPORT_H
#define TRACEBPF_REPORT_H

/* The command: argv[0] is "tracebpf report". Returns the exit status. */
int tb_cmd_report(int argc, char **argv);

#endif
