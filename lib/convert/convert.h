/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * convert.h - render a trace file (.tbt) as Chrome trace JSON for Perfetto
 * UI, chrome://tracing and Chrome DevTools (docs/format.md for the input,
 * docs/output.md for what the output must satisfy).
 */
#ifndef TRACEBPF_CONVERT_H
#define TRACEBPF_CONVERT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "filter.h"
#include "format/tbfile.h"

#ifndef TRACEBPF_VERSION
#define TRACEBPF_VERSION "0.1.0"
#endif

struct tb_convert_opts {
	const char *in;    /* trace file, "-" = stdin */
	const char *out;   /* JSON file, "-" = stdout */
	bool verbose;      /* counts, as TRACEBPF_PRINT_INFO */
	bool follow;       /* read a trace still being written */
	const char *connect;  /* read from a recorder's --serve socket */
	const struct tb_filter *filter;  /* NULL or nothing given: every event */
	/* > 0: write OUT-001.json, OUT-002.json, ... of about this many
	 * bytes each instead of OUT (a file name, not "-" nor .gz) */
	uint64_t split;
	/* Perfetto's protobuf trace format (docs/perfetto.md) instead of
	 * JSON; compress: its packets deflated in groups */
	bool perfetto, compress;
};

/* Where tb_convert_run failed: reading the trace, converting it, writing
 * the output; SAID: and it said so itself. */
enum tb_conv_stage { TB_STAGE_READ, TB_STAGE_CONVERT, TB_STAGE_WRITE, TB_STAGE_SAID };

/* Renders r as o asks (o NULL: everything, to out) on out, or into o's
 * --split parts. out_name names out in messages; written: the bytes
 * written to out when ftello cannot tell (a pipe, gzip), or NULL. Warnings
 * and notes about the trace go to the print function (print.h). 0 or
 * -errno, *stage telling where it failed. */
int tb_convert_run(struct tb_reader *r, FILE *out, const struct tb_convert_opts *o,
		   const char *out_name, const uint64_t *written, enum tb_conv_stage *stage);
/* For tests: true writes every event with the generic JSON calls, none
 * from its site's template (the output is the same; only slower). */
extern bool tb_convert_no_templates;

/* "tracebpf: convert: failed to VERB 'OBJ': strerror" [+ hint], printed. */
void tb_convert_fail(const char *verb, const char *obj, int err, const char *hint);
/* A temporary file next to out, 0600, to be renamed over it at the end:
 * *tmp its name. Says why when it fails. */
int tb_convert_create_tmp(const char *out, const char *out_name, char **tmp, FILE **f);

/* Renders every record r yields as one JSON object on out. Returns 0 or
 * -errno and prints no error message (the caller knows the names to put in
 * one); warnings about the trace itself (lost events, torn tail) go to
 * the print function. */
int tb_convert_file(struct tb_reader *r, FILE *out);

#endif /* TRACEBPF_CONVERT_H */
