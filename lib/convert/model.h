/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * model.h - the trace model that convert builds, for every output of it.
 *
 * The converter (lib/convert/, docs/converter.md "The converter's stages")
 * turns a trace file's records into finished output events:
 * begin/end matched per thread into complete slices (X, with dur), pid
 * reuse, ghost slices after fork, exec and exit, tracebpf ctl stop/start
 * windows, slices cut at gaps marked as such (docs/tracebpf-convert.md).
 * It hands each finished event to a sink: the Chrome JSON writer is one
 * (tracebpf convert), the summary of tracebpf report another. A filter
 * (which events to keep) is a sink that passes what it keeps on to
 * another sink.
 */
#ifndef TRACEBPF_MODEL_H
#define TRACEBPF_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "swchain.h"
#include "format/tbfile.h"
#include "tracebpf/reader.h"

/* The most arguments a site shows: another program's probe's (record
 * --usdt); a tracebpf site has at most TB_MAX_ARGS. */
#define TB_SITE_ARGS TB_USDT_MAX_ARGS

/* A site descriptor as the model parsed it, or another program's probe
 * as its TB_REC_USDT_PROBE describes it (usdt). */
struct site {
	bool valid;
	char phase;                 /* 'B', 'E', 'I', 'C', 'b', 'e', 'n', 's', 't', 'f', 'M', 'v' */
	char scope;                 /* 't', 'p', 'g' */
	uint8_t nargs;
	uint8_t arg_type[TB_SITE_ARGS];
	uint8_t flags;              /* TB_SITE_* */
	/* its events are TB_REC_USDT: argument i is the hit's argsrc[i]; with
	 * name_args, its name refers to arguments ({ARG}): each hit's event
	 * has a site of its own name (convert_usdt.c) */
	bool usdt, name_args;
	uint8_t argsrc[TB_SITE_ARGS];
	const char *cat, *name, *argname[TB_SITE_ARGS];  /* into the record */
	const char *step;           /* TB_SITE_STEP: async step / flow step */
	const char *file;           /* the source file (since 2.5), or NULL */
	uint32_t line;              /* its line, 0 unknown */
	uint32_t cats_gen;          /* the converter's: the category rules ... */
	bool cats_on;               /* ... it was last judged by, and how */
};

/* Parses the descriptor of a SITE record; s->valid tells whether it can
 * be used (else s is all zero). s's strings point into rec. */
void tb_site_parse(const struct tb_rec_site *rec, struct site *s);

/* A gap, as the args of what it cut or left unpaired show it. */
struct lost {
	uint64_t ts;                /* its first lost record's time */
	uint64_t count;             /* records lost there */
};

/* Shared by the events of one async slice or flow when convert filters
 * or splits its output (lib/convert/convert_select.c): they are written whole or not at
 * all. */
struct pair;

/* One output event. X: site/ev are the begin, esite/eev the end (NULL when
 * the slice was closed by exit, exec or the end of the trace). v: an
 * application's memory dump, ev a record made for it, its args' JSON text
 * behind the header (lib/convert/convert_memdump.c). */
struct oev {
	uint64_t ts, dur, seq;
	uint64_t pid;               /* the process incarnation's pid */
	uint32_t tid;
	char ph;
	const struct site *site, *esite;
	const struct tb_rec_event *ev, *eev;
	const char *unfinished;
	const char *begun_before;   /* I: the end of a slice that began before
				     * the recording (window) started, or a gap */
	const char *begin_of;       /* I: a begin that cannot be paired */
	struct lost lost;           /* count > 0: cut or unpaired at a gap */
	bool begin_lost;            /* X: lost is where its BEGIN was: it is
				     * drawn from that gap's end to its END */
	bool inherited;             /* X: a ghost slice ended in a forked child */
	/* X: begun at its thread's top level after a gap of that thread, so
	 * a slice that enclosed it may have begun among the lost records
	 * (docs/output.md, "Slices") */
	bool parent_lost;
	/* among the events made of one record (a memory dump's: its v event
	 * and counters), the order they were made in, after seq */
	uint32_t sub;
	struct pair *pair;          /* with filters or --split: its pair, or NULL */
	bool pair_end;              /* the pair's last event (e, f) */
	/* X: the time of the slices directly inside it on its thread, as
	 * the model nested them (an inherited slice holds those its thread
	 * ended at its own top level). With a filter, the slices it leaves
	 * out do not count, and those they held count as directly inside:
	 * dur - child is the self time of the events the filter keeps. */
	uint64_t child;
};

/* The model while it runs (or, in a sink's end, once it has run). */
struct tb_model;
struct tb_filter;

/* Where the model hands what it built. */
struct tb_model_sink {
	void *ctx;
	/* Each finished event, in ts order (at equal ts longer slices
	 * first), except those released early to bound memory (counted in
	 * tb_model_counts' forced). e and what it points to live only
	 * during the call. */
	void (*event)(void *ctx, const struct oev *e);
	/* event() takes events in any order: the model then hands each
	 * slice (X) over when it ends, a memory dump's events (v and its
	 * counters, at its begin's time) when it ends, and every other event
	 * as it reads it, so those are in ts order among themselves, and it
	 * holds nothing back (no copy, no queue). */
	bool any_order;
	/* After the last event, with the model whole: its names and counts
	 * (below). NULL: nothing to do. Returns 0 or -errno. */
	int (*end)(void *ctx, const struct tb_model *m);
	/* NULL, or no filter given: event() gets every event. Otherwise only
	 * those the filter keeps, decided as tracebpf convert's filters
	 * decide (docs/tracebpf-convert.md, FILTERS): slices, instants and
	 * counters by tb_filter_match, async slices and flows whole by their
	 * first event; its --time counts from the trace's start. The counts
	 * (tb_model_counts) stay the whole trace's. */
	const struct tb_filter *filter;
	/* With a filter: each event it leaves out (NULL: not told). */
	void (*left_out)(void *ctx, const struct oev *e);
	/* Before the first event: the model, which tb_model_threads and
	 * tb_model_metadata may read while it runs (NULL: not wanted). */
	void (*start)(void *ctx, const struct tb_model *m);
	/* Each kernel record the filter keeps (scheduler, wakeups, tasks,
	 * CPUs, -e tracepoints and their TB_REC_FORMAT), in ts order (NULL:
	 * not wanted). Returns 0 or -errno, which ends the run. */
	int (*kernel)(void *ctx, const struct tb_rec_hdr *h);
};

/* Runs the model over every record r yields, handing the events to sink.
 * Returns 0 or -errno; *read_failed tells whether the error was reading
 * r. Prints nothing. */
int tb_model_run(struct tb_reader *r, const struct tb_model_sink *sink, bool *read_failed);

/* The counts convert puts in its JSON metadata (docs/tracebpf-convert.md,
 * same names), and the trace's last statistics record. */
struct tb_model_counts {
	uint64_t events, unresolved_sites, unmatched_ends, ends_before_recording;
	uint64_t gaps, gap_records, kernel_gaps, kernel_gap_records;
	uint64_t slices_cut_at_gaps, ends_after_gaps, events_in_gaps;
	uint64_t flow_events_left_out;
	uint64_t slices_parent_lost;
	uint64_t stopped_windows, records_while_stopped;
	uint64_t forced;            /* events released out of ts order */
	uint64_t memory_dumps, memory_dump_records_without_dump;
	uint64_t drops_total, lost_processes;
	/* whether the trace has switches, and the breaks of the CPUs' chains
	 * of switches by cause (swchain.h; docs/output.md, "Scheduler chain
	 * breaks"): the whole trace's, whatever the filter keeps */
	bool sched_switches;
	uint64_t sched_breaks[TB_SWBREAK_NCAUSES];
	/* the last TB_REC_STATS (drops per CPU: tb_stats_drop), NULL when
	 * the trace has none; it lives as long as the model */
	const struct tb_rec_stats *stats;
};
void tb_model_counts(const struct tb_model *m, struct tb_model_counts *out);

/* The JSON object convert writes as its "metadata" (docs/output.md,
 * "Processes, threads and metadata"), on f; kernel_events: the kernel
 * records the output holds. 0 or -errno. */
int tb_model_metadata(const struct tb_model *m, struct tb_reader *r, uint64_t kernel_events,
		      FILE *f);

/* A thread, named as convert names it (its thread_name and its process's
 * process_name M events). */
struct tb_model_thread {
	uint64_t pid;               /* as its events carry it (an incarnation) */
	uint32_t tid;
	const char *name, *process;
	size_t name_len, process_len;
};
/* Calls fn for every thread the trace names; stops at fn's first non-zero
 * return, which it returns. */
int tb_model_threads(const struct tb_model *m,
		     int (*fn)(void *ctx, const struct tb_model_thread *t), void *ctx);

/* The event's name, *n bytes (a COPY site's is copied at the hit): NULL
 * when it could not be read (convert writes "<unreadable>"). */
const char *tb_model_event_name(const struct oev *e, size_t *n);

/* A counter's series as convert writes them (numeric arguments, finite
 * values, the later of two with one name): up to TB_MAX_ARGS, returns how
 * many. */
struct tb_model_series {
	const char *name;
	double value;
};
int tb_model_counter_series(const struct oev *e, struct tb_model_series *s);

/* The order of records of equal ts the model reads them in (tb_merge_new's
 * rank): sites and gaps first, then fork, exec and names, events, exits,
 * the rest. */
uint32_t tb_model_rank(uint16_t type);

/* Every argument of e as the JSON writer writes them, in its order: the
 * begin's, then the end's (a later one with the same name replacing the
 * earlier), or a counter's series; at most max. Returns how many. */
#define TB_MODEL_ARGS_MAX (2 * TB_SITE_ARGS)
int tb_model_event_args(const struct oev *e, struct tracebpf_arg *o, int max);

/* e as the public API gives it (struct tracebpf_event, tracebpf/reader.h):
 * what the JSON writer writes of it. */
void tb_model_public_event(const struct oev *e, struct tracebpf_event *o);

#endif /* TRACEBPF_MODEL_H */
