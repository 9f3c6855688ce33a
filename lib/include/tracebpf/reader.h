/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tracebpf/reader.h - libtracebpf: read tracebpf traces (.tbt) without
 * libbpf, root or a kernel: the file, its records in time order, the trace
 * model that tracebpf convert and report use, and the Chrome JSON and
 * ftrace text renderers. docs/libtracebpf.md describes it; the man page is
 * libtracebpf(3).
 *
 *   cc app.c $(pkg-config --cflags --libs tracebpf)
 *
 * Every function returning int returns 0 (or a count) or a negative errno.
 * The library prints nothing unless the program sets a print function
 * (tracebpf_set_print). Objects are not shared between threads; distinct
 * traces may be read in distinct threads.
 */
#ifndef TRACEBPF_READER_H
#define TRACEBPF_READER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tracebpf/site.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TRACEBPF_API __attribute__((visibility("default")))

/* The library's version, "MAJOR.MINOR.PATCH"; the soname carries MAJOR. */
TRACEBPF_API const char *tracebpf_version(void);

/* ---- messages ---------------------------------------------------- */

enum tracebpf_print_level {
	TRACEBPF_PRINT_WARN,   /* about the trace or the output: lost events,
				* a torn tail, a JSON too large for viewers */
	TRACEBPF_PRINT_INFO,   /* counts (tracebpf_json_opts.verbose) */
};
/* fmt and ap make whole lines, each ending with '\n' and starting with
 * "tracebpf: convert: " or the like. */
typedef void (*tracebpf_print_fn)(enum tracebpf_print_level level, const char *fmt,
				  va_list ap);
/* Sets the print function (NULL, the default: print nothing); returns the
 * one before. Process-wide. */
TRACEBPF_API tracebpf_print_fn tracebpf_set_print(tracebpf_print_fn fn);

/* ---- a trace ----------------------------------------------------- */

struct tracebpf_trace;

/* path "-" reads stdin. -EINVAL: not a trace file; -EPROTONOSUPPORT: a
 * newer format major version; -EBADMSG: a corrupt file header. */
TRACEBPF_API int tracebpf_open(struct tracebpf_trace **t, const char *path);
/* From fd (a pipe, a socket, a memfd); closed with the trace if own. */
TRACEBPF_API int tracebpf_open_fd(struct tracebpf_trace **t, int fd, bool own);
/* What a recorder serves on the Unix socket path (tracebpf record --serve
 * PATH), from the start of its trace. */
TRACEBPF_API int tracebpf_connect(struct tracebpf_trace **t, const char *path);
/* A regular file still being written: at its end, wait for more instead of
 * stopping, until the recorder finishes it or *stop becomes non-zero (set
 * it from a signal handler). Call before reading. */
TRACEBPF_API void tracebpf_follow(struct tracebpf_trace *t, const volatile int *stop);
TRACEBPF_API void tracebpf_close(struct tracebpf_trace *t);

struct tracebpf_info {
	unsigned major, minor;          /* the file's format version */
	uint32_t clock_id;              /* of every ts: CLOCK_MONOTONIC */
	int64_t realtime_offset_ns;     /* CLOCK_REALTIME - clock_id at start */
	uint64_t start_ns;              /* when recording started */
	const char *hostname, *kernel, *cmdline;   /* the recorder's */
};
TRACEBPF_API void tracebpf_get_info(const struct tracebpf_trace *t,
				    struct tracebpf_info *info);

/* Once reading ended: why the tail was not read (a torn or corrupt last
 * chunk: a recorder killed mid-write) and how many bytes it has, or NULL
 * and 0 when the trace ended cleanly. Never an error: everything before
 * the tail was read. */
TRACEBPF_API const char *tracebpf_tail_reason(const struct tracebpf_trace *t);
TRACEBPF_API uint64_t tracebpf_tail_bytes(const struct tracebpf_trace *t);
/* Once reading ended: whether the recorder closed the file (its chunk
 * index was read). */
TRACEBPF_API bool tracebpf_finished(const struct tracebpf_trace *t);

/* ---- records in time order --------------------------------------- */

/* Every record starts with this header; the layouts behind it are those of
 * docs/format.md, by type. */
struct tracebpf_record {
	uint16_t type;    /* TRACEBPF_REC_* */
	uint16_t size;    /* bytes of the whole record, this header included */
	uint32_t cpu;     /* the CPU it was produced on, ~0 for user space */
	uint64_t ts;      /* ns of clock_id */
	uint32_t pid;     /* process (tgid) */
	uint32_t tid;     /* thread */
};
#define TRACEBPF_REC_EVENT     1    /* an application event */
#define TRACEBPF_REC_SITE      2    /* a site descriptor */
#define TRACEBPF_REC_FORK      3
#define TRACEBPF_REC_EXEC      4
#define TRACEBPF_REC_EXIT      5
#define TRACEBPF_REC_COMM      6    /* a thread's name */
#define TRACEBPF_REC_STATS     7    /* the recorder's counts, drops per CPU */
#define TRACEBPF_REC_EVENT_ID  8    /* an application event with an id */
#define TRACEBPF_REC_SWITCH    9    /* sched_switch */
#define TRACEBPF_REC_WAKE      10
#define TRACEBPF_REC_KTASK     11
#define TRACEBPF_REC_CPU       12
#define TRACEBPF_REC_TP        13   /* a tracepoint of record -e */
#define TRACEBPF_REC_FORMAT    14
#define TRACEBPF_REC_CMDLINE   15
#define TRACEBPF_REC_CTL       16   /* tracebpf ctl stop or start */
#define TRACEBPF_REC_GAP       17   /* records a CPU lost */
#define TRACEBPF_REC_CATS      18   /* the categories recorded from then on */
#define TRACEBPF_REC_RSS       19   /* a traced process's resident memory */
#define TRACEBPF_REC_FILTER    20   /* the threads and processes recorded from then on */

/* The next record in time order (equal times: as convert orders them),
 * in memory that stays about two recorder flushes however long the
 * trace. 1 and *rec (valid until the next call), 0 at the end, -errno on
 * a read error. Do not mix with tracebpf_model_run on one trace. A
 * finished file is read on a second thread, ahead of the caller, until
 * the end or tracebpf_close. */
TRACEBPF_API int tracebpf_next_record(struct tracebpf_trace *t,
				      const struct tracebpf_record **rec);

/* ---- the model --------------------------------------------------- */

/* An argument's value; type is a TRACEBPF_ARG_* of tracebpf/site.h. */
struct tracebpf_arg {
	const char *name;
	uint8_t type;
	union {
		int64_t i;      /* INT; BOOL: 0 or 1 */
		uint64_t u;     /* UINT, PTR */
		double d;       /* DOUBLE (may be NaN or infinite) */
		struct {
			const char *p;  /* NULL: unreadable at the hit */
			size_t len;
		} s;            /* STR: not NUL-terminated */
	} v;
};
#define TRACEBPF_EVENT_MAX_ARGS (2 * TRACEBPF_MAX_ARGS)

/* One finished event, as convert writes it to the JSON (docs/output.md).
 * ph: 'X' a slice (its begin and end paired on a thread), 'I' an instant
 * (also a begin or end that could not be paired: see why), 'C' a counter,
 * 'b' 'e' 'n' async, 's' 't' 'f' flow. An application's memory dump (a
 * 'v' event in the JSON) comes as its 'C' counters, one per allocator
 * (docs/output.md, "Memory"). Strings live only during the call. */
struct tracebpf_event {
	char ph;
	char scope;                 /* I: TRACEBPF_SCOPE_* */
	uint64_t ts, dur;           /* ns of clock_id; dur: X only */
	uint64_t pid;               /* the process's pid; one reused for a
				     * second process carries the high bits
				     * convert gives it (docs/output.md) */
	uint32_t tid;
	const char *cat;
	const char *name;           /* NULL: a runtime name unreadable */
	size_t name_len;
	bool has_id;                /* async, flow and counter ids */
	uint64_t id;
	const char *step;           /* async step, flow step: or NULL */
	int nargs;                  /* the begin's, then the end's */
	struct tracebpf_arg args[TRACEBPF_EVENT_MAX_ARGS];
	/* What is incomplete, never invented (docs/output.md): */
	const char *unfinished;     /* X closed by exit, exec, ctl stop or the
				     * end of the trace: which */
	const char *end_of;         /* I: the end of a slice whose begin was
				     * not recorded: why */
	const char *begin_of;       /* I: a begin whose end was not recorded */
	uint64_t lost, lost_ts;     /* > 0: cut or unpaired at a gap where
				     * this many records were lost, at lost_ts */
	bool inherited;             /* X: open in the parent at fork, ended in
				     * the child (a ghost slice) */
	bool parent_lost;           /* X: began at its thread's top level after
				     * a gap of that thread: a slice enclosing
				     * it may be among the lost records */
	bool begin_lost;            /* X: its BEGIN was among the records lost
				     * at lost_ts: it is drawn from that gap's
				     * end (lost > 0) */
};

struct tracebpf_model;

/* The counts convert puts in its JSON's metadata (docs/output.md). */
struct tracebpf_counts {
	uint64_t events, unresolved_sites, unmatched_ends, ends_before_recording;
	uint64_t gaps, gap_records, kernel_gaps, kernel_gap_records;
	uint64_t slices_cut_at_gaps, ends_after_gaps, events_in_gaps;
	uint64_t stopped_windows, records_while_stopped;
	uint64_t drops_total, lost_processes;
};
TRACEBPF_API void tracebpf_model_counts(const struct tracebpf_model *m,
					struct tracebpf_counts *counts);

/* A thread and its process, named as convert names them. Names are not
 * NUL-terminated. */
struct tracebpf_thread {
	uint64_t pid;
	uint32_t tid;
	const char *name, *process;
	size_t name_len, process_len;
};
/* Calls fn for each thread of the trace; stops at fn's first non-zero
 * return and returns it. */
TRACEBPF_API int tracebpf_model_threads(const struct tracebpf_model *m,
					int (*fn)(void *ctx, const struct tracebpf_thread *t),
					void *ctx);

struct tracebpf_model_ops {
	/* Each finished event, in ts order (at equal ts longer slices
	 * first). Required. */
	void (*event)(void *ctx, const struct tracebpf_event *e);
	/* After the last event, with the whole model: threads and counts.
	 * Optional; a non-zero return is tracebpf_model_run's. */
	int (*end)(void *ctx, const struct tracebpf_model *m);
	void *ctx;
};
/* Reads the whole trace through the model (begin/end pairing, pid reuse,
 * ghost slices after fork, exec and exit, ctl stop/start windows, gaps).
 * Memory stays bounded in the trace's length. ops' functions run in the
 * caller's thread; a finished file is read on a second one meanwhile. */
TRACEBPF_API int tracebpf_model_run(struct tracebpf_trace *t,
				    const struct tracebpf_model_ops *ops);

/* ---- renderers --------------------------------------------------- */

/* The whole trace as Chrome trace JSON (the traceEvents array and the
 * systemTraceEvents ftrace text) on out, exactly as tracebpf convert
 * writes it. Warnings about the trace go to the print function. */
TRACEBPF_API int tracebpf_write_chrome_json(struct tracebpf_trace *t, FILE *out);
/* The kernel records (scheduler, -e tracepoints) as ftrace text, the
 * lines of systemTraceEvents (docs/output.md), one per record, after the
 * "# tracer: nop" header. Returns the number of lines, or -errno. */
TRACEBPF_API long tracebpf_write_ftrace_text(struct tracebpf_trace *t, FILE *out);

#ifdef __cplusplus
}
#endif

#endif /* TRACEBPF_READER_H */
