/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ftrace.h - kernel records (scheduler, power, -e tracepoints) as ftrace
 * text: the "systemTraceEvents" string of Chrome JSON, and one line per
 * record for a text dump.
 *
 * The lines follow docs/output.md, the form that both
 * catapult's TGID line parser and Perfetto's systrace tokenizer accept:
 *   <comm>-<tid> (<tgid>) [<cpu>] <4 flags> <sec>.<usec>: <event>: <fields>
 * Generic tracepoints are decoded with libtraceevent from the format saved
 * in the trace (TB_REC_FORMAT). Reading needs no libbpf.
 */
#ifndef TRACEBPF_FTRACE_H
#define TRACEBPF_FTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/tbfile.h"

struct tb_ftrace;

int tb_ftrace_new(struct tb_ftrace **f);
void tb_ftrace_free(struct tb_ftrace *f);

/* True for the record types this module renders (TB_REC_SWITCH..FORMAT). */
bool tb_ftrace_is_kernel(uint16_t type);

/* Feed one record, in time order. Learns names (comm per tid, tgid) and
 * formats; appends the record's systemTraceEvents line, if it has one.
 * Returns 0 or -ENOMEM. Malformed records are skipped, never trusted. */
int tb_ftrace_add(struct tb_ftrace *f, const struct tb_rec_hdr *rec);

/* One line (no newline) for rec into buf, using the names and formats fed
 * so far. viewers = true gives the systemTraceEvents form, which leaves out
 * what the viewers reject or misread (fork, exec, exit, rename lines; a new
 * task's wakeup is shown as sched_wakeup); false gives every kernel record
 * under its own name with tracepoint fields as name=value (for a dump).
 * Returns the length (truncated to len-1), 0 when the record has no line. */
int tb_ftrace_format_line(struct tb_ftrace *f, const struct tb_rec_hdr *rec,
			  bool viewers, char *buf, size_t len);

/* A -e tracepoint's fields (TB_REC_TP), decoded with the formats fed so
 * far: fn gets each field of the event's own (the common_ ones aside),
 * str set for a string (len bytes, in f's buffer) and num for a
 * number (is_signed telling how to read it). Returns the event's name, or
 * NULL when no format describes it. Fields past the copied bytes are not
 * given. */
struct tb_ftrace_field {
	const char *name;
	const char *str;
	size_t len;
	uint64_t num;
	bool is_signed;
};
const char *tb_ftrace_tp_fields(struct tb_ftrace *f, const struct tb_rec_hdr *rec,
				void (*fn)(void *ctx, const struct tb_ftrace_field *fl), void *ctx);

/* With collect off, tb_ftrace_add only learns names and formats (for a
 * dump, which prints each line itself); on by default. */
void tb_ftrace_collect(struct tb_ftrace *f, bool on);

/* The systemTraceEvents text ("# tracer: nop\n", the clock line, one line
 * per event, each ending with "\n") is kept in a temporary file, not in
 * memory, so it does not grow the converter with the recording's length.
 * tb_ftrace_write_json writes it as one JSON string value (after the
 * caller's key); 0 or -errno. */
struct tb_json;
int tb_ftrace_write_json(struct tb_ftrace *f, struct tb_json *j);
/* For a trace cut in parts (convert --split): remember each line's record
 * time (8 bytes a line, in a second temporary file), so that
 * tb_ftrace_write_json_range can write the lines of one time span. Call
 * before the first tb_ftrace_add. 0 or -errno. */
int tb_ftrace_keep_times(struct tb_ftrace *f);
/* The header and the lines whose record ts is in [from, to), as one JSON
 * string value like tb_ftrace_write_json; needs tb_ftrace_keep_times. */
int tb_ftrace_write_json_range(struct tb_ftrace *f, struct tb_json *j, uint64_t from,
			       uint64_t to);
/* Bytes of systemTraceEvents text so far. */
uint64_t tb_ftrace_bytes(const struct tb_ftrace *f);
/* The whole text read back into memory (tests), or NULL when no kernel
 * event produced a line. Valid until the next call or tb_ftrace_free. */
const char *tb_ftrace_text(struct tb_ftrace *f);
uint64_t tb_ftrace_lines(const struct tb_ftrace *f);
/* -e records whose raw entry was cut at TB_TP_MAX bytes. */
uint64_t tb_ftrace_truncated(const struct tb_ftrace *f);

#endif
