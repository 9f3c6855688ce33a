/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * filter.h - which events of a trace to keep: by process, thread,
 * category, name (fnmatch globs) and a time window relative to the trace's
 * start (docs/tracebpf-convert.md, FILTERS).
 *
 * The options are parsed into one struct tb_filter (each parse function
 * adds to its set: a repeated option widens it); tb_filter_match() is the
 * predicate over one output event, tb_filter_match_kernel() over one
 * kernel record. An event passes when it passes every filter that was
 * given; a filter passes when any of its values matches. Nothing here
 * knows the converter: a command describes each event in a struct
 * tb_filter_event.
 */
#ifndef TRACEBPF_FILTER_H
#define TRACEBPF_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "format/tbfile.h"

struct tb_filter {
	uint32_t *pids, *tids;
	size_t npids, ntids;
	char **cats, **names;          /* globs, owned */
	size_t ncats, nnames;
	bool has_time;
	/* the window [from, to) in ns after the trace's start; to = UINT64_MAX:
	 * to the end */
	uint64_t from, to;
	uint64_t base;                 /* the trace's start_ts (tb_filter_set_base) */
};

/* One event as a filter sees it: ts and dur in the trace's clock (ns),
 * the recorded pid and tid, the category and name (NULL: unreadable). */
struct tb_filter_event {
	char ph;                       /* 'X' has a duration; anything else is a point */
	uint64_t ts, dur;
	uint32_t pid, tid;
	const char *cat;
	const char *name;
	size_t name_len;
};

/* Each adds the comma-separated values of arg to its set. 0, -EINVAL with
 * *why saying what is wrong with arg (for the caller's message), or
 * -ENOMEM. */
int tb_filter_add_pids(struct tb_filter *f, const char *arg, const char **why);
int tb_filter_add_tids(struct tb_filter *f, const char *arg, const char **why);
int tb_filter_add_cats(struct tb_filter *f, const char *arg, const char **why);
int tb_filter_add_names(struct tb_filter *f, const char *arg, const char **why);
/* START,END: each a decimal number and a unit (ns, us, ms, s), END also
 * +DURATION (after START); an empty START is the trace's start, an empty
 * END its end. A second --time replaces the first. */
int tb_filter_set_time(struct tb_filter *f, const char *arg, const char **why);
/* DIGITS[.DIGITS]UNIT (ns, us, ms, s) into *ns: 0, or -EINVAL and *why. */
int tb_parse_duration(const char *s, uint64_t *ns, const char **why);

/* Whether any filter was given. */
bool tb_filter_active(const struct tb_filter *f);
/* The trace's start (metadata start_ts), which --time counts from. */
void tb_filter_set_base(struct tb_filter *f, uint64_t start_ts);

/* Time rule: a slice ('X') is kept when it begins before the window's end
 * and ends after its start (a slice of no duration: when it begins inside
 * it); any other event when its ts is inside [from, to). */
bool tb_filter_match(const struct tb_filter *f, const struct tb_filter_event *e);
/* A kernel record (sched_switch, wakeup, cpu, -e tracepoints): by time,
 * and by pid/tid where it has one (a switch or wakeup passes when either
 * task it names does; cpu idle and frequency records name none). Category
 * and name filters do not apply to kernel records. */
bool tb_filter_match_kernel(const struct tb_filter *f, const struct tb_rec_hdr *h);

/* What was given, as the JSON object metadata.filters shows it. */
struct tb_json;
void tb_filter_write_json(const struct tb_filter *f, struct tb_json *j);

void tb_filter_free(struct tb_filter *f);

/* What was given, as options again ("--pid 12,13 --time 1s,2s": lists
 * comma-separated, times in the largest exact unit), on out. */
void tb_filter_print(const struct tb_filter *f, FILE *out);

#endif /* TRACEBPF_FILTER_H */
