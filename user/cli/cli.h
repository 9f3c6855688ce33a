/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * cli.h - user/cli/'s interface: the small commands (info, dump, pack,
 * list, convert: tracebpf.h declares their entry points) and what every
 * command that reads a trace shares: opening its input (tbio.c: a file,
 * a recording still written, a --serve socket) and the filter options
 * (filter_args.c). Each part keeps the head comment it had as a header
 * of its own.
 */
#ifndef TRACEBPF_CLI_CLI_H
#define TRACEBPF_CLI_CLI_H

#include <argp.h>
#include <stdio.h>
#include "util/print.h"
#include "format/tbfile.h"
#include "filter.h"

/* ---- tbio.c ---- */
/*
 * tbio.c - what the reading commands (convert, dump, info, pack) share:
 * opening a trace from a path, stdin or a recorder's --serve socket,
 * following it, gzip output, and the storage commands themselves.
 */

/* Set by SIGINT/SIGTERM once tb_io_catch_signals() ran: a follower stops. */
extern volatile int tb_io_stop;
void tb_io_catch_signals(void);

/* Opens in ("-" = stdin) or, with connect, the Unix socket a recorder
 * serves (--serve). follow: keep reading a file still being written.
 * Prints "tracebpf: <cmd>: failed to ..." with a hint on failure. */
int tb_io_open(struct tb_reader **r, const char *cmd, const char *in,
	       const char *connect, int follow);

/* Where convert, dump and info read from: FILE.tbt ("-" = stdin) or
 * --connect SOCKET (one of the two is required), and --follow (convert and
 * dump). */
struct tb_io_source {
	const char *in, *connect;
	int follow;
};
/* The argp parser of those options; state->input is a struct tb_io_source.
 * A command lists the options it offers: 'c' (connect), 'f' (follow). */
error_t tb_io_source_parse(int key, char *arg, struct argp_state *state);

/* An option's whole-number value from lo to hi; anything else is a usage
 * error (exit 64): "invalid WHAT 'ARG': give LO to HI[ UNIT]". */
/* "64K", "8M", "1G" (K, M, G: powers of 2; "KiB", "KB" alike) into *out.
 * 0 or -EINVAL. */
int tb_parse_size(const char *s, size_t *out);
long tb_io_arg_range(struct argp_state *state, const char *arg, long lo, long hi,
		     const char *what, const char *unit);
/* tb_io_open of a parsed source. */
int tb_io_open_source(struct tb_reader **r, const char *cmd, const struct tb_io_source *src);

/* A FILE that gzip-compresses what is written into f's descriptor; fclose
 * it (which finishes the gzip stream) before closing f. */
FILE *tb_io_gz_wrap(FILE *f);

/* -EEXIST (printed, with a hint) when out names the same file as in (a
 * path, a hard link or a symlink to it): writing it would destroy the trace
 * being read. 0 otherwise, "-" and files that do not exist yet included. */
int tb_io_check_distinct(const char *cmd, const char *in, const char *out);

/* Says, after reading, whether the trace ended cleanly. */
void tb_io_report_end(const char *cmd, struct tb_reader *r, int connected);

/* `tracebpf list`: the sites in a program's ELF files (user/cli/list.c). */

/* ---- filter_args.c ---- */
/* filter_args.c - the filter options of tracebpf convert and report. */

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
