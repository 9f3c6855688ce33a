/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pftrace_int.h - what the files of the Perfetto writer share, inside
 * lib/perfetto only (docs/perfetto.md): its state and the functions one
 * file calls in another.
 *
 * The files call one another in one order, each only files after it:
 * pftrace.c (the model's sink: events to packets), pftrace_part.c (each
 * file's start and end, --split's parts), pftrace_sched.c
 * (kernel records to ftrace bundles), pftrace_seq.c (sequences, tracks,
 * interning, packets), pftrace_out.c (the file: plain or compressed
 * packet groups), pb.c (the wire format).
 */
#ifndef TRACEBPF_PFTRACE_INT_H
#define TRACEBPF_PFTRACE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "convert/model.h"
#include "perfetto/pb.h"
#include "perfetto/pftrace.h"
#include "util/hmap.h"

/* Field numbers of perfetto_trace.proto that more than one file writes. */
enum {
	PF_TRACE_PACKET = 1,                 /* Trace.packet */
	PF_PKT_TIMESTAMP = 8,                /* TracePacket */
	PF_PKT_SEQ_ID = 10,
	PF_PKT_TRACK_EVENT = 11,
	PF_PKT_INTERNED = 12,
	PF_PKT_SEQ_FLAGS = 13,
	PF_PKT_CLOCK_ID = 58,
	PF_PKT_TRACK_DESCRIPTOR = 60,
	PF_TE_TYPE = 9,                      /* TrackEvent */
	PF_TE_FLOW_IDS = 47,
	PF_TE_TERM_FLOW_IDS = 48,
	PF_TYPE_END = 2,                     /* TrackEvent.Type */
};

#define PF_SEQ_CLEARED 1u    /* SEQ_INCREMENTAL_STATE_CLEARED */
#define PF_SEQ_NEEDS   2u    /* SEQ_NEEDS_INCREMENTAL_STATE */
#define PF_CLOCK_BOOT  6u    /* BuiltinClocks.BOOTTIME: the trace's clock */
#define PF_CLOCK_INCR  64u   /* a sequence's own, incremental */

/* The kinds of interned strings (InternedData's fields). */
enum pf_kind { PF_CAT = 1, PF_NAME = 2, PF_ARG = 3 };

/* A slice begun on a thread's track, its END to come. */
struct pf_open {
	uint64_t end;
	uint64_t *flows;            /* flow ids bound to it (flow_ids) */
	uint64_t *term;             /* ... and those it ends (terminating) */
	uint32_t nflows, nterm;
};

/* A site's strings as interned on one sequence. */
struct pf_site {
	const struct site *site;
	uint32_t cat, name;
	uint32_t arg[TB_SITE_ARGS];
};

/* One sequence: a thread's packets, or the trace's own (id 1). */
struct pf_seq {
	uint32_t id;
	uint64_t pid;
	uint32_t tid;
	uint64_t track;             /* its thread's track (the default) */
	uint64_t last_ts;           /* of the incremental clock */
	bool started;
	/* interned on it: (string pointer, kind) -> iid, and names copied at
	 * the hit by their text (bounded) */
	struct tb_hmap iids;
	struct tb_hmap copied;
	struct tb_hmap sites;       /* struct site * -> struct pf_site * */
	struct pf_site *last_site;
	uint32_t next_iid[4];       /* by enum pf_kind */
	struct pf_open *stack;      /* slices begun, innermost last */
	size_t depth, cap;
};

struct pf_out {
	FILE *f;
	bool compress;
	struct tb_pb b;             /* packets not yet written */
	struct tb_pb z;             /* a compressed group, framed */
	void *zc;                   /* the compressor */
	struct tb_outq *q;          /* to the deflating thread, or NULL */
	int qerr;                   /* the deflating thread's first error */
	uint64_t bytes;             /* written to f */
	int err;
};

struct pf_sched;
struct tb_outq;

struct pf {
	struct tb_pftrace_opts o;
	const struct tb_model *m;   /* the model, while it runs */
	struct pf_out out;
	struct tb_pb *pkt;          /* the packet being built: &out.b */
	struct tb_pb interned;      /* ... and what it interns (InternedData) */
	struct pf_seq own;          /* sequence 1: descriptors, metadata */
	struct tb_hmap seqs;        /* (pid, tid) -> struct pf_seq * */
	struct pf_seq *last;
	uint32_t next_seq;
	struct tb_hmap tracks;      /* track uuids described */
	struct pf_sched *sched;
	struct tb_reader *r;
	uint64_t events, kernel_events;
	uint64_t flows_unbound;     /* flow events with no slice around them */
	uint64_t last_ts;           /* the latest time written */
	bool general;               /* every event the general way (tests) */
	/* --split: the part being written, how many were, the first's and
	 * the last's names (for the message) */
	FILE *part_f;
	char *part_name, *part_tmp, *first_name, *last_name;
	size_t nparts;
	bool said;                  /* an error was said where it happened */
	/* async track -> 1 + its slices open in this file; how many in all */
	struct tb_hmap async;
	uint64_t async_open, async_ends_dropped;
	struct tb_model_counts counts;
	int err;
};

/* ---- pftrace_part.c: each file's start and end; --split ---- */

int pf_file_open(struct pf *p, FILE *f);
/* The ENDs still to come, the kernel's bundles, names and metadata. */
int pf_file_close(struct pf *p, const struct tb_model *m);
int pf_parts_start(struct pf *p);
/* With --split: ends the part and starts the next once it is full. */
int pf_part_check(struct pf *p);
/* The last part finished (err 0) or removed; returns err or its own. */
int pf_parts_finish(struct pf *p, int err);
void pf_parts_say(const struct pf *p);
void pf_parts_free(struct pf *p);

/* ---- pftrace_sched.c: kernel records ---- */

int pf_sched_add(struct pf *p, const struct tb_rec_hdr *h);
int pf_sched_flush(struct pf *p);
/* The tasks the kernel records named (thread -> process), at ts: a
 * ProcessTree, so their threads join their processes. */
int pf_sched_tasks(struct pf *p, uint64_t ts);
void pf_sched_free(struct pf *p);

/* ---- pftrace_seq.c: sequences, tracks, interning, packets ---- */

/* The sequence of thread (pid, tid), started; NULL: no memory. */
struct pf_seq *pf_seq_of(struct pf *p, uint64_t pid, uint32_t tid, uint64_t ts);
/* Starts a packet on s at ts (absolute ns); its TrackEvent is opened when
 * te. */
void pf_packet_begin(struct pf *p, struct pf_seq *s, uint64_t ts, bool te);
/* Ends it: the TrackEvent, the interned data it defined, the packet. */
int pf_packet_end(struct pf *p, struct pf_seq *s);
/* The iid of str (kind) on s, defining it in the packet being built when
 * new; by pointer: str lives as long as the conversion. 0: write it
 * inline. */
uint32_t pf_iid(struct pf *p, struct pf_seq *s, enum pf_kind kind, const char *str);
/* The same by text (a name copied at the hit). */
uint32_t pf_iid_text(struct pf *p, struct pf_seq *s, const char *str, size_t n);
/* The iids of site's category, name and argument names on s, defined in
 * the packet being built when new; NULL: no memory. */
struct pf_site *pf_site_iids(struct pf *p, struct pf_seq *s, const struct site *site);
/* Track uuids. */
uint64_t pf_process_track(uint64_t pid);
uint64_t pf_thread_track(uint64_t pid, uint32_t tid);
/* Describes the track once (a TrackDescriptor on the trace's sequence). */
int pf_describe_process(struct pf *p, uint64_t pid, uint64_t ts);
int pf_describe_thread(struct pf *p, uint64_t pid, uint32_t tid, uint64_t ts);
int pf_describe_child(struct pf *p, uint64_t uuid, uint64_t parent, const char *name, size_t n,
		      bool counter, uint64_t ts);
/* The END of s's innermost open slice, with the flows bound to it. */
int pf_end_slice(struct pf *p, struct pf_seq *s);
/* Every sequence to be started again and every track described again
 * (a new part). */
void pf_seqs_reset(struct pf *p);
/* Names every process and thread the model knows, at ts. */
int pf_name_all(struct pf *p, const struct tb_model *m, uint64_t ts);
void pf_seqs_free(struct pf *p);

/* ---- pftrace_out.c: the file ---- */

int pf_out_open(struct pf_out *o, FILE *f, bool compress);
/* Begins a packet (Trace.packet) in o->b, where it is built. */
void pf_out_begin(struct pf_out *o);
/* Ends it, and what is open in it; writes what o holds once it is enough. */
int pf_out_end(struct pf_out *o);
int pf_out_close(struct pf_out *o);

#endif /* TRACEBPF_PFTRACE_INT_H */
