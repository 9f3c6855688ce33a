/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * report_internal.h - the parts of `tracebpf report` (report.h) and what
 * each owns:
 *
 *   report.c            the command: options, running the parts in turn
 *   report_collect.c    the model's sink: per thread, the names' counts,
 *                       self times and histograms, the counter series;
 *                       the keys of a level and freeing them
 *   report_aggregate.c  at the end, from the threads' levels: each
 *                       process's and the whole trace's, merged (the
 *                       histograms exactly, tb_hist_merge); the tables
 *                       in the order shown
 *   report_text.c       the report on the terminal
 *   report_json.c       the report as one JSON document
 *
 * Only report.c's functions are outside report; these are shared by its
 * parts alone. Nothing is added per event for the process and trace
 * levels: they are built once, from the threads' tables.
 */
#ifndef TRACEBPF_REPORT_INTERNAL_H
#define TRACEBPF_REPORT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "util/chain.h"
#include "cli/cli.h"
#include "report/hist.h"
#include "convert/model.h"

enum sort_key { SORT_TOTAL, SORT_SELF, SORT_COUNT, SORT_MAX, SORT_MEAN, NSORT };

/* The --sort keys by enum sort_key (report.c). */
extern const char *const report_sort_names[NSORT];

struct report_opts {
	const char *in;             /* trace file, "-" = stdin */
	enum sort_key sort;
	long top;                   /* rows per table; 0: all, -1: default */
	bool json;
	bool per_thread;            /* each thread's tables too */
	FILE *out;                  /* where the report goes */
	struct tb_filter_args filter;   /* --pid, --tid, --cat, --name, --time */
};

/* What the slices (or instants) of one name on one level (a thread, a
 * process, the whole trace) add up to. */
struct key {
	struct tb_chain_link l;
	char *cat, *name;           /* owned; name may hold any byte */
	size_t name_len;
	bool instant;               /* instants: count only */
	struct tb_hist hist;        /* complete slices' durations: count, sum, max */
	uint64_t self;              /* of the complete slices */
	uint64_t instants;
	uint64_t incomplete, incomplete_total;   /* left open, or cut at a gap */
	uint64_t unpaired;          /* a begin or an end without its other half */
};

/* A site the thread has seen, and its key (sites of one name share it). */
struct site_key {
	struct tb_chain_link l;
	const struct site *site;
	struct key *key;
};

/* The names of a thread, a process or the whole trace, and the number
 * of its events by kind. */
struct level {
	struct tb_chain keys;       /* struct key by (kind, cat, name) */
	uint64_t slices, incomplete, instants, counters, async, flows;
};

struct rthread {
	struct tb_chain_link l;
	uint64_t pid;               /* the process incarnation's, as events carry it */
	uint32_t tid;
	char *name, *process;       /* convert's names, set at the end */
	size_t name_len, process_len;   /* (an app-set name may hold a NUL) */
	struct tb_chain sites;      /* struct site_key by site */
	const struct site *last_site;   /* the site key_of found last, */
	struct key *last_key;           /* and its key */
	struct level lv;            /* counted as the events come */
};

/* A process: its threads shown, and their levels merged. */
struct rprocess {
	uint64_t pid;
	const char *name;           /* its threads' process name (NULL: unknown) */
	size_t name_len;
	struct rthread **threads;   /* in report.shown */
	size_t nthreads;
	struct level lv;
};

/* One series of a counter of a process. */
struct series {
	struct tb_chain_link l;
	uint64_t pid, id;
	bool has_id;
	char *cat, *name, *series;
	size_t name_len;
	double min, max, last;
	uint64_t samples;
};

/* Why slices were incomplete, as the model says it (oev.unfinished, or
 * cut at a gap). */
#define NREASONS 8
struct reason {
	const char *why;
	uint64_t n;
};

/* The events the filters left out, by kind (as report_event counts them:
 * unpaired begins and ends with the instants). */
struct left_out {
	uint64_t events, slices, instants, counters, async, flows, other;
};

#define RTHREAD_CACHE 64

struct report {
	const struct report_opts *o;
	int err;
	struct tb_chain threads;         /* struct rthread by (pid, tid) */
	struct rthread *tcache[RTHREAD_CACHE];   /* by tid: thread_of's finds */
	struct tb_chain counters;        /* struct series */
	struct tb_model_counts counts;
	struct tb_rec_stats *stats; /* a copy of counts.stats */
	struct reason reasons[NREASONS];
	uint64_t unpaired, other;
	uint64_t kept;              /* trace events handed to report_event */
	struct left_out left_out;   /* by the filters */
	/* set by report_aggregate */
	struct rthread **shown;     /* the threads with something to show, by (pid, tid) */
	size_t nshown;
	struct rprocess *procs;     /* by pid */
	size_t nprocs;
	struct level whole;         /* the whole trace's */
	struct series **series;     /* by (pid, cat, name, id, series) */
	size_t nseries;
};

/* report_collect.c */
/* Runs the model of rd into r (r->o set, the rest zeroed); on failure
 * *read_failed says whether reading rd failed. 0 or -errno. */
int report_collect(struct report *r, struct tb_reader *rd, bool *read_failed);
/* Whether the trace is whole: nothing lost, nothing unreadable. */
bool report_complete(const struct report *r, struct tb_reader *rd);
/* The key of (kind, cat, name) in keys, added if new; NULL: no memory. */
struct key *report_key(struct tb_chain *keys, const char *cat, const char *name, size_t n,
		       bool instant);
void report_free_level(struct level *lv);
void report_free(struct report *r);

/* report_aggregate.c */
/* Sets r's threads shown, processes, whole trace and series, from the
 * threads' levels. 0 or -ENOMEM. */
int report_aggregate(struct report *r);
/* qsort_r's order of keys: largest first by *(enum sort_key *)by, then
 * incomplete ones, then by name. */
int report_cmp_keys(const void *a, const void *b, void *by);
/* lv's keys of one kind, sorted by `by`; *n of them. NULL: no memory. */
struct key **report_sorted_keys(const struct level *lv, bool instant, enum sort_key by,
				size_t *n);

/* report_text.c, report_json.c: r on r->o->out. 0 or -errno. */
int report_print_text(const struct report *r, struct tb_reader *rd);
int report_print_json(const struct report *r, struct tb_reader *rd);

#endif /* TRACEBPF_REPORT_INTERNAL_H */
