/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * swchain.h - each CPU's chain of context switches, checked: a switch
 * (TB_REC_SWITCH) switches out the task the CPU's switch before it
 * switched in, or the chain breaks there. Where it breaks, which task ran
 * on that CPU between the two switches is unknown, and a viewer that
 * reads the switches as ftrace text (Perfetto's trace processor) counts
 * the break as `mismatched_sched_switch_tids` (docs/output.md,
 * "Scheduler chain breaks").
 *
 * A break is counted once, by cause, as far as the records tell it:
 * records of that CPU's kernel stream lost between the two switches (a
 * TB_REC_GAP of kind TB_GAP_KERNEL), the recording stopped between them
 * (tracebpf ctl), switches left out between them by a filter (record
 * --sched=traced, or the reader's own filters), or none of those: no
 * switch between them was reported (by the kernel, or while `tracebpf ctl
 * disable --sched` held, which the trace does not record). Nothing is
 * invented: the chain goes on from the switch that broke it.
 *
 * The caller feeds the records in time order (merge.h): the switches it
 * shows, those it leaves out, gap marks, stops. Reading needs no libbpf.
 */
#ifndef TRACEBPF_SWCHAIN_H
#define TRACEBPF_SWCHAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "format/tbfile.h"

enum tb_swbreak_cause {
	TB_SWBREAK_LOST,        /* the CPU's kernel records were lost between them */
	TB_SWBREAK_STOPPED,     /* the recording was stopped between them */
	TB_SWBREAK_FILTERED,    /* a filter left out the switches between them */
	TB_SWBREAK_UNREPORTED,  /* none of those: no switch between them reported */
	TB_SWBREAK_NCAUSES
};

/* One break: on cpu, the switch at ts switched out prev_tid, but the
 * switch before it on that CPU (at from_ts) switched in last_tid. */
struct tb_swbreak {
	uint32_t cpu;
	enum tb_swbreak_cause cause;
	uint64_t from_ts, ts;
	uint32_t last_tid, prev_tid;
	char last_comm[16], prev_comm[16];   /* as recorded: maybe not terminated */
};

struct tb_swchain;

/* sched_traced: the recording kept only the switches of traced processes
 * (record --sched=traced): a break nothing else explains is the filter's.
 * 0 or -ENOMEM. */
int tb_swchain_new(struct tb_swchain **ch, bool sched_traced);
void tb_swchain_free(struct tb_swchain *ch);

/* A switch shown: 1 and *b when it breaks its CPU's chain, 0 when it
 * follows on (or is its CPU's first), -ENOMEM. */
int tb_swchain_add(struct tb_swchain *ch, const struct tb_rec_switch *r, struct tb_swbreak *b);
/* A switch the caller leaves out (a filter): its CPU's chain goes on
 * from the last switch shown, and a break there is the filter's. */
void tb_swchain_left_out(struct tb_swchain *ch, const struct tb_rec_switch *r);
/* A gap mark (TB_REC_GAP): kernel records lost on g's CPU, up to
 * g->last_ts (a mark of application records changes nothing). */
void tb_swchain_gap(struct tb_swchain *ch, const struct tb_rec_gap *g);
/* The recording was stopped (TB_REC_CTL): every CPU's next switch may
 * break. */
void tb_swchain_stopped(struct tb_swchain *ch);

/* Breaks so far, per cause, and in all. */
uint64_t tb_swchain_breaks(const struct tb_swchain *ch, enum tb_swbreak_cause cause);
uint64_t tb_swchain_total(const struct tb_swchain *ch);
/* Whether a switch was shown at all. */
bool tb_swchain_any(const struct tb_swchain *ch);
/* The earliest time a break still to come could start from: the time of
 * the last switch shown on each CPU that switched in a task (not its idle
 * task, whose CPU may rest long), or `low` if that is earlier. */
uint64_t tb_swchain_low(const struct tb_swchain *ch, uint64_t low);

/* A cause as a JSON key ("records_lost", "recording_stopped",
 * "filtered", "not_reported") and in words ("records lost", "recording
 * stopped", "filtered out", "switch not reported"). */
const char *tb_swbreak_key(enum tb_swbreak_cause cause);
const char *tb_swbreak_words(enum tb_swbreak_cause cause);

/* Whether the recorder's command line (tb_file_info.cmdline) asked for
 * --sched=traced: its last --sched before a "--". */
bool tb_swchain_cmdline_traced(const char *cmdline);

#endif /* TRACEBPF_SWCHAIN_H */
