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
#include "tbfile.h"

#ifndef TRACEBPF_VERSION
#define TRACEBPF_VERSION "0.1.0"
#endif

struct tb_convert_opts {
	const char *in;    /* trace file, "-" = stdin */
	const char *out;   /* JSON file, "-" = stdout */
	bool verbose;      /* counts on stderr */
	bool follow;       /* read a trace still being written (tbio.h) */
	const char *connect;  /* read from a recorder's --serve socket */
	const struct tb_filter *filter;  /* NULL or nothing given: every event */
	/* > 0: write OUT-001.json, OUT-002.json, ... of about this many
	 * bytes each instead of OUT (a file name, not "-" nor .gz) */
	uint64_t split;
};

/* Converts o->in to o->out. The output file appears whole or not at all
 * (written to a temporary next to it, then renamed). Returns 0 or -errno;
 * errors are printed on stderr as
 * "tracebpf: convert: failed to <verb> '<object>': <strerror>" + a hint. */
int tb_convert(const struct tb_convert_opts *o);

/* Renders every record r yields as one JSON object on out. Returns 0 or
 * -errno and prints no error message (the caller knows the names to put in
 * one); warnings about the trace itself (lost events, torn tail) go to
 * stderr. */
int tb_convert_file(struct tb_reader *r, FILE *out);

#endif /* TRACEBPF_CONVERT_H */
