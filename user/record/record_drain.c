// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record_drain.c - the rings drained into the trace file: the ring
 * buffers, the slot rings and the fast-path rings, in a round cut at one
 * instant (records past it held for the next round) or all at once; every
 * record as it goes by (rec_on_record); and the drop counts, written as
 * STATS records whenever they grew, with the gap marks. The rounds
 * themselves are record.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "format/tbrecords.h"
#include "record.skel.h"
#include "ctl/ctl.h"
#include "fast/fast.h"
#include "kern/kern.h"
#include "probes/probes.h"
#include "record/recorder.h"
#include "format/tbfile.h"

/* Everything the programs wrote: the ring buffers, then the slot rings. */
void rec_consume_rings(void *ctx)
{
	struct recorder *r = ctx;

	ring_buffer__consume(r->rb);
	tb_slots_consume(&r->slots, rec_on_record, r);
}

static void append_rec(struct recorder *r, const struct tb_rec_hdr *h)
{
	int err = tb_writer_append(r->w, h);

	if (err && !r->write_err)
		r->write_err = err;
}

/* A record past the cut waits for the next round. */
static void hold_rec(struct recorder *r, const struct tb_rec_hdr *h)
{
	if (r->nheld + h->size > r->cheld) {
		size_t c = r->cheld ? 2 * r->cheld : 1 << 16;
		char *nv;

		while (c < r->nheld + h->size)
			c *= 2;
		nv = realloc(r->held, c);
		if (!nv) {
			append_rec(r, h);   /* out of order rather than lost */
			return;
		}
		r->held = nv;
		r->cheld = c;
	}
	memcpy(r->held + r->nheld, h, h->size);
	r->nheld += h->size;
}

/* The last round's records past its cut, ahead of this round's. */
static void release_held(struct recorder *r)
{
	for (size_t off = 0; off < r->nheld; off += ((struct tb_rec_hdr *)(r->held + off))->size)
		append_rec(r, (const void *)(r->held + off));
	r->nheld = 0;
}

/* With the fast path a thread's events travel two ways: through its probes
 * into the recorder's rings at once, and through its own ring until the
 * next drain (also later than events it sent to the probes after its ring
 * filled). So that a round, the unit a killed recorder keeps or loses,
 * holds every event stamped up to one instant and none after (a prefix of
 * every thread's events), the round takes the time first (cut), drains the
 * threads' rings, then the recorder's, and keeps what is stamped after the
 * cut for the next round. Everything committed before the drain is then
 * delivered in the round (merge.h's rounds). last: the session ends, and
 * everything is taken. */
void rec_drain_fast(struct recorder *r, bool last)
{
	if (!r->fast)
		return;
	release_held(r);
	r->cut = last ? 0 : now_ns(CLOCK_MONOTONIC);
	if (last)
		tb_fast_finish(r->fast);
	else
		tb_fast_drain_all(r->fast);
}

/* Before a stop is logged: every record, none held back for the next
 * round. The programs record nothing stamped after the stop, so what the
 * rings and the held records have is what precedes it, and `ctl stop`
 * returns only once that is in the file. */
void rec_take_all(struct recorder *r)
{
	release_held(r);
	r->cut = 0;
	if (r->fast)
		tb_fast_drain_all(r->fast);
	rec_consume_rings(r);
}

/* Threads and images that are gone give up their fast-path rings. */
static void fast_follow(struct recorder *r, const struct tb_rec_hdr *h)
{
	if (h->type == TB_REC_EXIT && h->size >= sizeof(struct tb_rec_exit))
		tb_fast_exit(r->fast, h->pid, h->tid,
			     ((const struct tb_rec_exit *)h)->flags & TB_EXITF_PROCESS, h->ts);
	else if (h->type == TB_REC_EXEC)
		tb_fast_exec(r->fast, h->pid, h->ts);
	else if (h->type == TB_REC_FORK && h->size >= sizeof(struct tb_rec_fork) &&
		 (((const struct tb_rec_fork *)h)->flags & TB_FORKF_THREAD))
		tb_fast_thread(r->fast, h->pid);
	else if (h->type == TB_REC_FORK && h->size >= sizeof(struct tb_rec_fork))
		tb_fast_fork(r->fast, h->pid, ((const struct tb_rec_fork *)h)->child_pid);
}

/* One ring record holds one tracebpf record, or (staged by the scheduler
 * programs, bpf/sched.bpf.c) several back to back. */
/* An application event: through the fast path, or through its probe. */
static void count_path(struct recorder *r, const struct tb_rec_hdr *h)
{
	if ((h->type != TB_REC_EVENT && h->type != TB_REC_EVENT_ID) ||
	    h->size < sizeof(struct tb_rec_event))
		return;
	r->app_events++;
	r->fast_events += !!(((const struct tb_rec_event *)h)->flags & TB_EVF_FAST);
}

int rec_on_record(void *ctx, void *data, size_t size)
{
	struct recorder *r = ctx;
	size_t off = 0;

	while (size - off >= sizeof(struct tb_rec_hdr)) {
		const struct tb_rec_hdr *h = (const void *)((const char *)data + off);

		if (h->size < sizeof(*h) || h->size > size - off)
			return 0;   /* cannot happen with our programs; never crash */
		if (h->type == TB_RING_KICK) {   /* a wakeup, not a record */
			off += h->size;
			continue;
		}
		if (h->type == TB_RING_FAST_REQ) {   /* a thread asks for a ring */
			if (h->size >= sizeof(struct tb_ring_req))
				tb_fast_request(r->fast, (const void *)h);
			off += h->size;
			continue;
		}
		fast_follow(r, h);
		rec_keep_note(r, h);
		rec_md_note(r, h);
		r->events++;
		count_path(r, h);
		if (r->cut && h->ts > r->cut)
			hold_rec(r, h);
		else
			append_rec(r, h);
		off += h->size;
	}
	return 0;
}

/* A record's size is a u16: past this many CPUs the per-CPU drops are summed
 * into drops_total only (the per-CPU list is cut, never the total). */
#define TB_STATS_MAX_CPUS ((0xfff8 - sizeof(struct tb_rec_stats)) / sizeof(__u64))

/* Records lost because a ring was full, per CPU into vals[r->ncpus]
 * (the application's rings and the kernel's summed); the two totals into
 * *app and *kern. An error when a drop counter cannot be read: then how
 * much was lost is unknown, which the caller must say. */
int rec_read_drops(struct recorder *r, __u64 *vals, __u64 *app, __u64 *kern)
{
	__u32 zero = 0;

	*app = *kern = 0;
	memset(vals, 0, r->ncpus * sizeof(*vals));
	if (bpf_map_lookup_elem(bpf_map__fd(r->skel->maps.drops), &zero, vals)) {
		memset(vals, 0, r->ncpus * sizeof(*vals));
		return -errno;
	}
	for (int i = 0; i < r->ncpus; i++)
		*app += vals[i];
	return tb_sched_add_drops(r->sched, vals, r->ncpus, kern);
}

/* Processes that traced processes started but that the kernel side could
 * not add to `traced` (full): a plain read of the mapped .bss. */
__u64 rec_lost_procs(struct recorder *r)
{
	return *(volatile __u64 *)&r->skel->bss->lost_procs;
}

/* A STATS record with the drop counts so far (the last one in the file
 * wins): written whenever they grew, so that a recorder killed later
 * leaves them in the file, and at the end. An error (-ENOMEM, or rec_read_drops')
 * only when the counts are unknown; a write error goes to r->write_err. */
int rec_write_stats(struct recorder *r)
{
	int ncpus = r->ncpus < (int)TB_STATS_MAX_CPUS ? r->ncpus : (int)TB_STATS_MAX_CPUS;
	size_t sz = sizeof(struct tb_rec_stats) + (ncpus + 1) * sizeof(__u64);
	__u64 lost = rec_lost_procs(r);
	struct tb_rec_stats *st = calloc(1, sz);
	__u64 *vals = calloc(r->ncpus, sizeof(__u64));
	__u64 app, kern;
	int err = -ENOMEM;

	if (!st || !vals)
		goto out;
	err = rec_read_drops(r, vals, &app, &kern);
	if (err)
		goto out;
	r->stats_app = app;
	r->stats_kern = kern;
	r->stats_lost = lost;
	if (r->base_vals) {   /* after a ctl restart: this file's own counts */
		for (int i = 0; i < r->ncpus; i++)
			vals[i] -= r->base_vals[i];
		app -= r->base_app;
		kern -= r->base_kern;
		lost -= r->base_lost;
	}
	memcpy(st + 1, vals, ncpus * sizeof(__u64));
	memcpy((__u64 *)(st + 1) + ncpus, &lost, sizeof(lost));   /* 2.3 */
	st->hdr.type = TB_REC_STATS;
	st->hdr.size = sz;
	st->hdr.cpu = ~0u;
	st->hdr.ts = now_ns(CLOCK_MONOTONIC);
	st->events = r->events - r->base_events;
	st->ncpus = ncpus;
	st->drops_total = app + kern;
	if ((err = tb_writer_append(r->w, &st->hdr)) && !r->write_err)
		r->write_err = err;   /* reported with the other write errors */
	err = 0;
out:
	free(st);
	free(vals);
	return err;
}

/* A new file begins (ctl restart): its STATS records count from here. */
void rec_stats_baseline(struct recorder *r)
{
	if (!r->base_vals && !(r->base_vals = calloc(r->ncpus, sizeof(__u64))))
		return;   /* the new file's counts then include the old one's */
	if (rec_read_drops(r, r->base_vals, &r->base_app, &r->base_kern)) {
		memset(r->base_vals, 0, r->ncpus * sizeof(__u64));
		r->base_app = r->base_kern = 0;
	}
	r->base_lost = rec_lost_procs(r);
	r->base_events = r->events;
}

/* The drop totals (0 or a negative errno, as rec_read_drops). */
int rec_total_drops(struct recorder *r, __u64 *app, __u64 *kern)
{
	__u64 *vals = calloc(r->ncpus, sizeof(__u64));
	int err = vals ? rec_read_drops(r, vals, app, kern) : -ENOMEM;

	free(vals);
	return err;
}

/* The gap marks still pending after a drain, into the file (user/kern/gaps.c):
 * a mark is in the round after its losses at the latest. */
void rec_sweep_gaps(struct recorder *r)
{
	int err = tb_gaps_sweep(&r->gaps, r->w);

	if (err >= 0)
		err = tb_sched_sweep_gaps(r->sched, r->w);
	if (err >= 0)
		err = tb_fast_marks(r->fast, r->w);
	if (err < 0 && !r->write_err)
		r->write_err = err;
}

/* The records of losses after a drain: the gap marks left pending, and a
 * STATS record in every round in which the counters grew (they are
 * totals: if they cannot be read now, the read at the end still gets them
 * all, or says it cannot). */
void rec_stats_if_grown(struct recorder *r)
{
	__u64 app, kern;

	rec_sweep_gaps(r);
	if ((!rec_total_drops(r, &app, &kern) && app + kern != r->stats_app + r->stats_kern) ||
	    rec_lost_procs(r) != r->stats_lost)
		rec_write_stats(r);
}
