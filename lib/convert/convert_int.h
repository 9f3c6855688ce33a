/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * convert_int.h - what the stages of the converter share, inside
 * libtracebpf only: the converter's state (struct conv, which every stage
 * keeps its part of) and the functions one stage calls in another. A
 * function used in one file only is static there. The stages, their files
 * and what passes between them: lib/convert/convert.c.
 *
 * The files call one another in one order, each only files after it
 * (lib/convert/convert.c lists it): convert.c, convert_model.c,
 * convert_usdt.c, convert_pair.c, convert_memdump.c, convert_select.c,
 * convert_meta.c, convert_sched.c, convert_queue.c, convert_render.c,
 * convert_tables.c, convert_util.c, then lib/util/. The functions below are
 * declared file by file in that order: a stage may call what is declared
 * after its own section, never what is declared before it.
 *
 * struct site, struct lost and struct oev: model.h.
 */
#ifndef TRACEBPF_CONVERT_INT_H
#define TRACEBPF_CONVERT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/chain.h"
#include "convert/convert.h"
#include "filter.h"
#include "util/hmap.h"
#include "util/json.h"
#include "convert/model.h"
#include "format/tbfile.h"
#include "tracebpf/cats.h"

struct tb_merge;
struct tb_outq;
struct tb_swchain;
struct tb_ftrace;
struct tmpls;

/* One allocator of an application memory dump (docs/output.md, "Memory"). */
struct md_alloc {
	char *name;                 /* its path, "cache/entries" (owned) */
	size_t nlen;
	uint64_t size, objects;
	bool has_objects;
};

/* A process's memory dump in progress: from its "dump" record to its
 * "dump_end" (lib/convert/convert_memdump.c). */
struct memdump {
	bool open;
	uint64_t ts, seq;           /* of its begin: its events carry them */
	uint64_t id, rss, trigger;
	uint32_t pid, tid;
	struct md_alloc *a;         /* by path, each once (a later one wins) */
	size_t n, cap;
	uint64_t received;          /* allocator records, those not kept too */
	uint64_t dropped;           /* allocators past MD_ALLOC_MAX: not kept */
};

struct proc {
	uint32_t pid;
	/* A pid reused within the recording is a new process: incarnation n
	 * is written as pid + n * TB_PID_SPAN, so it never merges with the
	 * old one in a viewer. */
	uint32_t incarnation;
	uint64_t out_pid;
	bool dead;                  /* its last thread exited */
	bool has_name;
	char name[17];
	/* Set by the application (TRACE_PROCESS_NAME / _SORT_INDEX): wins
	 * over the kernel's comm. Owned (a copy). */
	char *app_name;
	size_t app_name_len;
	bool has_sort;
	int64_t sort_index;
	char *cmdline;              /* latest TB_REC_CMDLINE (owned) */
	/* ... written by the kernel side at a probe hit (record --usdt): what
	 * the process calls itself then ("postgres: alice shop [local] idle")
	 * names it */
	bool title;
	int64_t rss[4];             /* TB_REC_RSS: the last count of each kind */
	struct memdump md;          /* the application's memory dump, if open */
	struct tb_hmap sites;          /* site address -> struct site * */
	uint32_t image;             /* bumped at each exec */
	/* Forked from parent, whose image was parent_image, and not exec'd
	 * since: the parent's sites hold here too. */
	bool forked;
	uint32_t parent, parent_image;
};

struct pair;

struct open_slice {
	const struct tb_rec_event *ev;
	const struct site *site;
	uint64_t seq;
	struct pair *pair;          /* an async slice's, with filters or --split */
	uint64_t child;             /* what closed inside it (oev.child, model.h) */
	bool parent_lost;           /* oev.parent_lost */
	/* Its BEGIN was lost in gap `lost`, which said so (struct
	 * tb_gap_depth): ev is a record made for it at the gap's end, and
	 * its END names it (convert_pair.c, win_settle) */
	bool begin_lost;
	struct lost lost;
};

struct thread {
	uint32_t tid, pid;
	uint64_t out_pid;           /* of its process's incarnation */
	uint64_t out_gen;           /* the site_gen out_pid was found at, + 1 */
	bool dead;                  /* exited: a reused tid is a new thread */
	/* Slices open in the forking thread when this (main) thread's process
	 * was forked: an END here that matches one closes an inherited slice
	 * that starts at ghost_ts. Never ended: dropped. Each ghost's ev is
	 * its own copy (the parent frees its own when its slice closes). */
	struct open_slice *ghosts;
	size_t nghosts;
	uint64_t ghost_ts;
	bool has_name;
	char name[17];
	char *app_name;             /* TRACE_THREAD_NAME, owned */
	size_t app_name_len;
	bool has_sort;
	int64_t sort_index;
	struct open_slice *stack;
	size_t depth, cap;
	/* 1 + the recording window (0 until the first tracebpf ctl start,
	 * then one more per start) in which the thread was born (a FORK
	 * record); 0: it was there before. On a thread older than the window,
	 * an END with nothing open ends a slice that began before the window:
	 * slices nest, so one still open then encloses everything the thread
	 * recorded since, which is what an empty stack says. */
	uint32_t born_window;
	/* The last gap in which this thread may have lost events (count 0:
	 * none): up to gap_until its BEGINs and ENDs cannot be paired, and
	 * after it an END with nothing open ends a slice begun before. */
	struct lost lost;
	uint64_t gap_until;
	/* The last of those gaps that did not say what this thread lost: a
	 * slice at its top level since may be inside one whose BEGIN was
	 * lost there (oev.parent_lost) */
	struct lost blind;
	/* The gaps open on it until gap_until that did say (struct
	 * tb_gap_depth, docs/converter.md "Gaps in the output"): its stack
	 * was win_base deep at their start; the marks' lows and nets summed,
	 * and those of its BEGINs and ENDs read in them, bound what its
	 * stack did there, in whatever order: slices at win_base + low or
	 * above may have ended (they are cut at win_cut), net - low begun
	 * there are open after */
	bool win;
	size_t win_base;
	int64_t win_low, win_net, win_klow, win_knet;
	uint64_t win_cut;
	uint64_t last_ts;           /* of its latest record */
	bool placeholder;           /* known only from a gap's threads */
};

/* With filters or --split, an async slice (b .. e) or a flow (s, t .. f)
 * is written whole or not at all, and all in one part: its events share
 * this, each holding a reference. */
struct pair {
	unsigned refs;
	bool decided, keep;         /* by its first event (b, s) */
	size_t part;                /* 1 + the part its first written event went to */
	bool counted;               /* holds that part open (part.open_pairs) */
	bool closed;                /* its last event was written */
	bool abandoned;             /* it gets no last event (a flow cut at a gap) */
};

/* One JSON file of the output: the whole of it, or a part (--split). Its
 * events are written as they come; its tail (names, systemTraceEvents,
 * metadata) at the end, when the names are known. */
struct part {
	FILE *f;                    /* NULL while closed (a finished part) */
	char *tmp, *name;           /* --split: its temporary and final names */
	struct tb_json j;           /* the writer's state after its events */
	uint64_t from, to;          /* its span: from its first event's ts */
	uint64_t kbytes0;           /* systemTraceEvents bytes when it began */
	struct tb_hmap pids, tasks;    /* what its events name: pid, (pid, tid) */
	uint64_t last_task;         /* key of the last event's (pid, tid) + 1 */
	uint64_t bytes;             /* its size, once finished */
	/* Pairs that began in it and have not ended: a part after which the
	 * next one began stays open (p->j.f = p->f) until they end in it. */
	size_t open_pairs;
};

/* Lost records (TB_REC_GAP) and what the converter did about them. */
struct gaps_seen {
	uint64_t marks, records;    /* of the application's records */
	uint64_t kmarks, krecords;  /* of kernel records (no slices in them) */
	uint64_t cut, ends_after, inside, flows_left_out;
	uint64_t parent_lost;       /* slices marked so (oev.parent_lost) */
	/* The "records lost" instants drawn on the timelines of the threads
	 * (scope t) and processes (scope p) a gap touched */
	struct site site_t, site_p;
	/* The last gap that lost records of any thread, and its end: threads
	 * first seen later may have lost events in it too. */
	struct lost all;
	uint64_t all_until;
	/* The last gap of all, and its end: async ids and flows are not per
	 * thread, so every gap concerns them. */
	struct lost last;
	uint64_t until;
	/* open async slices and flows come and go (tb_chain_del): memory
	 * does not grow with them */
	struct tb_chain asyncs;         /* struct async_track by (pid, cat, id) */
	struct tb_chain flows;          /* struct flow by (cat, name, id) */
};

/* The CPUs' switch chains (lib/convert/convert_sched.c, docs/output.md,
 * "Scheduler chain breaks"): each switch the output shows is checked, and
 * a break is counted and marked on its CPU's timeline, a track of the
 * CPUs' own process (TB_CPU_PID). */
struct sched_breaks {
	struct tb_swchain *ch;
	/* the whole trace's chain whatever the filters keep (the model's
	 * other sinks, whose counts are the whole trace's) */
	bool whole;
	struct site site;           /* the marks': "task unknown" */
	bool *marked;               /* per CPU: a mark is on its track */
	uint32_t nmarked;
	/* with --split, each break (a part counts those it shows whole) */
	struct split_break { uint64_t from, ts; uint8_t cause; } *list;
	size_t n, cap;
};

/* The pid of the CPUs' process in the output, and its threads' tids
 * (TB_CPU_PID + 1 + cpu): far above every real pid and every pid + n *
 * TB_PID_SPAN of a pid reused fewer than 511 times, and below 2^31. */
#define TB_CPU_PID 0x7ff00000u

/* Copies of small records are allocated in POOL_STEP classes and, once an
 * output event is written, kept for the next copy instead of freed (a
 * malloc and a free per event were 8% of the conversion). Every copy is
 * allocated at its class's size, so any of them may go to the pool, and
 * free() is right for any of them too. */
#define POOL_MAX_SIZE 256
#define POOL_STEP     64
#define POOL_KEEP     4096   /* per class */

#define THREAD_CACHE 64
#define SITE_CACHE   256

struct conv {
	struct tb_merge *merge;
	size_t nrecs;

	void **sites;               /* struct site + its record, never moved */
	size_t nsites, sites_cap;
	struct site **usdt;         /* by probe id (convert_usdt.c): the latest, in sites */
	size_t usdt_cap;
	struct tb_hmap usdt_named;  /* (site, name) -> the site of hits so named */
	struct tb_hmap procs;          /* pid -> struct proc * */
	struct tb_hmap threads;        /* tid -> struct thread * */
	struct proc *last_proc;     /* the latest tb_conv_get_proc() found */
	struct thread *last_thread; /* the latest tb_conv_get_thread() found */
	struct thread *tcache[THREAD_CACHE];   /* by tid: what tb_conv_get_thread found */
	/* tb_conv_find_site's answers while site_gen stays: records that change
	 * what a lookup finds (SITE, FORK, EXEC, EXIT, a new process) move
	 * it on */
	struct site_slot { uint64_t addr, gen; uint32_t pid; struct site *s; } scache[SITE_CACHE];
	uint64_t site_gen;
	struct proc **old_procs;    /* earlier incarnations of reused pids */
	size_t nold_procs, old_procs_cap;
	struct thread **old_threads;
	size_t nold_threads, old_threads_cap;
	/* Output events held: a queue of those that came in order (most do),
	 * a min-heap by cmp_out of the others; the next out is the smaller
	 * of their heads. */
	struct oev *fifo;           /* ring, fifo_cap a power of 2 */
	size_t fifo_head, fifo_n, fifo_cap;
	struct oev *out;            /* min-heap by cmp_out */
	size_t nout, out_cap, written, forced;
	const struct tb_model_sink *sink;   /* takes each event out_pop writes */
	const struct tb_model_sink *ksink;  /* takes kernel records (tb_model_run) */
	bool direct;                /* the sink takes any order: no queue */
	/* the writer thread's, on cache lines of their own (128 bytes: the
	 * prefetcher fetches lines in pairs), apart from what the model's
	 * thread writes for every event (the pool, the queue): sharing a
	 * line with them cost 11% of convert's CPU time */
	_Alignas(128) struct tb_json j;
	_Alignas(128) struct tmpls *tmpls;   /* the common events' templates, or NULL */
	bool json_open;
	/* The writer thread, which writes the events into j (NULL: they are
	 * written as they leave the queue). */
	struct tb_outq *q;

	struct tb_rec_stats *stats; /* a copy of the last one */
	void *pool[POOL_MAX_SIZE / POOL_STEP];   /* copies to reuse, linked */
	size_t npool[POOL_MAX_SIZE / POOL_STEP];
	/* tracebpf ctl stop..start windows (TB_REC_CTL): events stamped inside
	 * one are left out (a program that read the switch just before a stop
	 * may still have written one) */
	struct { uint64_t from, to; } *stopped;   /* to = UINT64_MAX: open */
	size_t nstopped, stopped_cap;
	uint64_t while_stopped;     /* records left out for that */
	/* the category rules in effect (TB_REC_CATS, the last read), NULL
	 * before the first; events of categories they do not record are left
	 * out (a site that could not judge itself wrote them) */
	struct tracebpf_cats *cats;
	uint32_t cats_gen;          /* TB_REC_CATS records read */
	uint64_t cats_left_out;
	/* the filters (TB_REC_FILTER records, copies, in file order): the
	 * threads and processes recorded from each one's time on */
	struct tb_rec_filter **filters;
	size_t nfilters;
	struct site rss_site[5];    /* mem.rss.file, .anon, mem.swap, .shmem, mem.rss */
	/* Application memory dumps (convert_memdump.c): the v events' sites
	 * (periodic, explicit), the counters' sites by name, the dumps open,
	 * written, and the records of a dump whose begin was not seen */
	struct site md_site[2];
	struct tb_chain md_counters;
	size_t md_open;
	uint64_t md_dumps, md_orphans;
	struct tb_ftrace *ftrace;   /* kernel records -> systemTraceEvents */
	struct sched_breaks sched;  /* the CPUs' switch chains */
	uint64_t out_ts;            /* the latest ts of an event handed on */
	uint64_t last_ts;
	uint64_t events, unresolved, unmatched;
	uint64_t ends_before;       /* ENDs of slices begun before the recording */
	uint32_t window;            /* tracebpf ctl starts seen */
	struct gaps_seen gap;       /* TB_REC_GAP */

	/* Filters and --split (docs/tracebpf-convert.md, FILTERS, SPLIT). */
	bool selective;             /* either is on: pairs are tracked */
	bool filtering;
	struct tb_filter filt;      /* a copy, with the trace's start */
	uint64_t left_out, kleft_out;   /* trace events and kernel records */
	uint64_t split;             /* bytes a part should not exceed */
	const char *split_base;     /* the output's name without .json */
	struct part *parts;
	size_t nparts, parts_cap;
	bool want_split;            /* the part is full: cut at the next chance */
	uint64_t part_events, check_every, last_written_ts;
	uint64_t part_fbytes;       /* the part's file bytes at the last look */
	int sel_err;                /* failing to start a part (said) */
	bool said;                  /* an error was said where it happened */
	/* systemTraceEvents bytes by time: kernel records are read ahead of
	 * the events written, so a part counts the bytes of the lines before
	 * its latest event (kdone), learnt from these marks at 4 KiB steps */
	struct kmark { uint64_t ts, bytes; } *kq;
	size_t kq_head, kq_n, kq_cap;
	uint64_t kdone, kdone_ts;   /* ... and the time of that mark's line */
};

struct tb_model {
	struct conv c;
};

/* Above PID_MAX_LIMIT (2^22): an incarnation's pid never equals a real one. */
#define TB_PID_SPAN (1ull << 22)

#define ALL_PIDS UINT32_MAX   /* no pid is that large (PID_MAX_LIMIT: 2^22) */

/* ---- convert_model.c: the loop over the records; processes, threads,
 * sites, names, categories, ctl windows as the records say ---- */

int tb_conv_model_open(struct conv *c, struct tb_reader *r, const struct tb_model_sink *sink);
int tb_conv_process(struct conv *c, enum tb_conv_stage *stage);
void tb_conv_free_proc(struct proc *p);
void tb_conv_free_thread(struct thread *t);

/* ---- convert_usdt.c: other programs' probes ---- */

int tb_conv_on_usdt_probe(struct conv *c, const struct tb_rec_usdt_probe *rec);
int tb_conv_on_usdt(struct conv *c, const struct tb_rec_usdt *rec, uint64_t seq);

/* ---- convert_pair.c: pairing, gaps, resident memory ---- */

int tb_conv_on_event(struct conv *c, const struct tb_rec_event *rec, uint64_t seq);
/* An event of site s (NULL: unresolved); rec is a TB_REC_USDT when s->usdt. */
int tb_conv_on_site_event(struct conv *c, const struct tb_rec_event *rec, struct site *s,
			  uint64_t seq);
/* TB_REC_RSS: the process's counter of that kind, and its total. */
int tb_conv_on_rss(struct conv *c, const struct tb_rec_rss *r);
int tb_conv_on_gap(struct conv *c, const struct tb_rec_gap *g);
int tb_conv_close_stack(struct conv *c, struct thread *t, uint64_t ts,
			const char *why, const struct lost *lost);
int tb_conv_close_process(struct conv *c, uint32_t pid, uint64_t ts, const char *why);
int tb_conv_inherit_ghosts(struct conv *c, const struct tb_rec_fork *f);
void tb_conv_drop_ghosts(struct thread *t, size_t from);
void tb_conv_gaps_free(struct conv *c);

/* ---- convert_memdump.c: the application's memory dumps ---- */

/* An event of a 'v' site: a dump's begin, allocator or end. */
int tb_conv_on_memdump(struct conv *c, const struct tb_rec_event *ev, struct site *s,
		       uint64_t seq);
/* Renders process pid's open dump (ALL_PIDS: every process's) as it is,
 * marked incomplete with why. */
int tb_conv_md_close(struct conv *c, uint32_t pid, const char *why);
/* low, or the begin of an earlier dump still open: its events carry it. */
uint64_t tb_conv_md_low(const struct conv *c, uint64_t low);
void tb_conv_md_free_proc(struct proc *p);
void tb_conv_md_free(struct conv *c);

/* ---- convert_select.c: filters and --split; kernel records ---- */

void tb_conv_pair_decide(struct conv *c, struct pair *p, const struct oev *e);
void tb_conv_pair_abandon(struct conv *c, struct pair *p);
bool tb_conv_sel_match(const struct conv *c, const struct oev *e);
bool tb_conv_sel_keep(const struct conv *c, const struct oev *e);
bool tb_conv_sel_write(struct conv *c, const struct oev *e);
int tb_conv_add_kernel(struct conv *c, const struct tb_rec_hdr *h);
void tb_conv_sel_filter(struct conv *c, const struct tb_filter *f, struct tb_reader *r);
int tb_conv_sel_start(struct conv *c, const struct tb_convert_opts *o, struct tb_reader *r,
		      FILE *out);
int tb_conv_render_end(struct conv *c, struct tb_reader *r, FILE *f);
void tb_conv_free_parts(struct conv *c);

/* ---- convert_meta.c: each file's start and end ---- */

void tb_conv_render_begin(struct conv *c, FILE *f);
int tb_conv_render_tail(struct conv *c, struct tb_reader *r, struct tb_json *jp, FILE *f,
			const struct part *part);
/* A process's name: its comm, or the title a probe hit copied (proc.title),
 * with its incarnation when its pid was reused. */
#define TB_PROC_LABEL_MAX 320
void tb_conv_proc_label(const struct proc *p, char name[TB_PROC_LABEL_MAX]);

/* ---- convert_sched.c: the CPUs' switch chains ---- */

/* Before the first record: the chain checker, told whether the recording
 * kept only traced processes' switches (its command line). */
int tb_conv_sched_open(struct conv *c, struct tb_reader *r);
/* A switch record; shown: its line is in the output (not filtered out). */
int tb_conv_on_switch(struct conv *c, const struct tb_rec_switch *r, bool shown);
/* low, or the earliest time a break's mark still to come may begin at. */
uint64_t tb_conv_sched_low(const struct conv *c, uint64_t low);
/* Whether the output shows switches at all. */
bool tb_conv_sched_any(const struct conv *c);
/* The breaks, by cause (enum tb_swbreak_cause), that the file of part
 * shows (NULL: the whole output). */
void tb_conv_sched_counts(const struct conv *c, const struct part *part, uint64_t *n);
/* The CPUs' process and the tracks with marks (of part, or all), as M
 * events. */
void tb_conv_sched_names(const struct conv *c, struct tb_json *j, const struct part *part);
int tb_conv_sched_threads(const struct conv *c,
			  int (*fn)(void *ctx, const struct tb_model_thread *t), void *ctx);
void tb_conv_sched_free(struct conv *c);

/* ---- convert_queue.c: the output queue and the writer thread ---- */

int tb_conv_add_out(struct conv *c, const struct oev *e);
/* The same for an event whose pid is already the one to write. */
int tb_conv_add_out_as(struct conv *c, const struct oev *e);
void tb_conv_out_direct(struct conv *c, const struct oev *e);
/* Writes the held events before low (all: every one), and the oldest
 * past the queue's bound. */
void tb_conv_out_flush(struct conv *c, uint64_t low, bool all);
void tb_conv_out_free(struct conv *c, const struct oev *e);
struct oev *tb_conv_fifo_at(const struct conv *c, size_t i);
void tb_conv_out_send(struct conv *c, const struct oev *e);
void tb_conv_write_batch(void *ctx, char *data, size_t len);

/* ---- convert_render.c: JSON rendering and templates ---- */

struct tmpls *tb_conv_tmpls_new(void);
void tb_conv_tmpls_free(struct tmpls *ts);
void tb_conv_write_event(struct tmpls *ts, struct tb_json *j, const struct oev *e);

/* ---- convert_tables.c: processes, threads, sites, names, categories ---- */

/* The lookups below answer most calls inline, from what the call before
 * found (the model makes several an event), and call their _slow part,
 * in convert_tables.c, for the rest. */

/* The live process of pid, a new one (a new incarnation when the pid was
 * reused) if there is none; NULL: no memory. */
struct proc *tb_conv_get_proc_slow(struct conv *c, uint32_t pid);
static inline struct proc *tb_conv_get_proc(struct conv *c, uint32_t pid)
{
	struct proc *p = c->last_proc;

	/* a live process is the one its pid maps to (an older incarnation
	 * is dead), and none is freed before the end */
	return p && p->pid == pid && !p->dead ? p : tb_conv_get_proc_slow(c, pid);
}

/* The pid an event of process pid is written with (its incarnation's). */
static inline uint64_t tb_conv_out_pid(struct conv *c, uint32_t pid)
{
	struct proc *p = tb_conv_get_proc(c, pid);

	return p ? p->out_pid : pid;
}

/* A new thread tid, replacing old (a dead thread whose tid was reused). */
struct thread *tb_conv_new_thread(struct conv *c, uint32_t tid, struct thread *old);
/* The live thread tid, of process pid from now on (a new one if none). */
struct thread *tb_conv_get_thread_slow(struct conv *c, uint32_t tid, uint32_t pid);
static inline struct thread *tb_conv_get_thread(struct conv *c, uint32_t tid, uint32_t pid)
{
	struct thread *t = c->last_thread;

	/* its process unchanged since it was found: tb_conv_get_thread_slow */
	if (!t || t->tid != tid || t->dead || t->pid != pid || t->out_gen != c->site_gen + 1)
		return tb_conv_get_thread_slow(c, tid, pid);
	t->placeholder = false;
	return t;
}

/* The valid site at addr in process pid (or an ancestor's), or NULL. */
struct site *tb_conv_find_site_slow(struct conv *c, uint32_t pid, uint64_t addr);
static inline struct site *tb_conv_find_site(struct conv *c, uint32_t pid, uint64_t addr)
{
	struct site_slot *x = &c->scache[(addr >> 4 ^ pid * 0x9e3779b1u) % SITE_CACHE];

	if (x->gen == c->site_gen && x->addr == addr && x->pid == pid && x->s)
		return x->s;
	return tb_conv_find_site_slow(c, pid, addr);
}
/* An event of an M site: a name or sort index of its thread or process. */
int tb_conv_on_metadata(struct conv *c, const struct tb_rec_event *ev, const struct site *s);
/* Whether the category rules keep an event of site s on thread t (NULL
 * when unknown): an END only when no slice of its category is open on t. */
bool tb_conv_cats_keep(struct conv *c, struct site *s, const struct thread *t);

/* ---- convert_util.c: arrays, record copies, the pool, pairs, records ---- */

/* *p, an array of *cap elements of elem bytes, grown (doubling, from 64)
 * to hold need. 0 or -ENOMEM (*p unchanged). */
int tb_conv_grow_array(void **p, size_t *cap, size_t need, size_t elem);
/* A copy of a record (its header's size), allocated at its pool class's
 * size (POOL_*), or NULL. */
void *tb_conv_copy_rec(const void *rec);
/* tb_conv_copy_rec, from the pool when it has one of that class. */
void *tb_conv_pool_copy(struct conv *c, const struct tb_rec_hdr *h);
/* A copy no longer needed: to the pool, or freed (NULL: nothing). */
void tb_conv_pool_put(struct conv *c, const void *rec);
void tb_conv_pool_free(struct conv *c);
/* A new pair, its one reference the caller's (NULL: no memory). */
struct pair *tb_conv_pair_new(void);
/* Another reference to p (NULL: none). */
struct pair *tb_conv_pair_ref(struct pair *p);
/* Drops a reference to p (NULL: none); the last frees it. */
void tb_conv_pair_put(struct pair *p);
/* The event's name, *n bytes: for a COPY site, the name copied at the
 * hit; NULL when that could not be read. */
const char *tb_conv_ev_name(const struct site *s, const struct tb_rec_event *ev, size_t *n);
/* An event_id hit's id; another program's probe's: its first argument. */
uint64_t tb_conv_ev_id(const struct tb_rec_event *ev);
/* String argument i of site s's event ev, *n bytes; NULL when unreadable. */
const char *tb_conv_str_arg(const struct site *s, const struct tb_rec_event *ev,
			    int i, size_t *n);

#endif /* TRACEBPF_CONVERT_INT_H */
