/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pftrace.h - render a trace file (.tbt) in Perfetto's protobuf trace
 * format (docs/perfetto.md), for Perfetto UI and trace_processor.
 */
#ifndef TRACEBPF_PFTRACE_H
#define TRACEBPF_PFTRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "convert/convert.h"
#include "filter.h"
#include "tracebpf/reader.h"

struct tb_pftrace_opts {
	bool compress;                   /* deflate-compressed packet groups */
	bool verbose;                    /* counts, as TRACEBPF_PRINT_INFO */
	const struct tb_filter *filter;  /* NULL: every event */
	/* > 0: parts split_base-001.pftrace, ... of about this many bytes
	 * each, every one a trace of its own (out unused) */
	uint64_t split;
	const char *split_base;
};

/* Renders r on out as o asks. Warnings about the trace go to the print
 * function. 0 or -errno, *stage telling where it failed. */
int tb_pftrace_run(struct tb_reader *r, FILE *out, const struct tb_pftrace_opts *o,
		   enum tb_conv_stage *stage);

/* Whether a file name asks for this format (.pftrace, .perfetto-trace). */
bool tb_pftrace_name(const char *name);

#endif /* TRACEBPF_PFTRACE_H */
