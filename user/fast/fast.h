/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fast.h - the recorder's side of the fast path (docs/fast-path.md, "The fast
 * path"): the session's directory in bpffs, one user ring buffer per
 * thread (and object) that asks for one, read every round by the
 * recorder (fast_read.c), which hands the records to tb_fast_output's
 * put, and moved past by tb_fast_drain.
 *
 * Order: tb_fast_prepare (before the object is loaded), tb_fast_start
 * (after), then per round tb_fast_drain_all before the rings are consumed
 * and tb_fast_round_end after; tb_fast_request / _exit / _exec as their
 * records arrive; tb_fast_finish before the last drain; tb_fast_close.
 * A fast path that cannot start says why once and leaves the probes to
 * record everything.
 */
#ifndef TRACEBPF_FAST_H
#define TRACEBPF_FAST_H

#include <stdbool.h>
#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

struct record_bpf;
struct tb_ring_req;
struct tb_fast;
struct tb_writer;

struct tb_fast_opts {
	size_t ring_size;      /* --fast-buffer-size, a power of 2 */
	size_t ring_max;       /* --fast-buffer-max: a full ring grows to this */
	unsigned max_rings;    /* --max-fast-rings */
	uint32_t wait_us;      /* --fast-wait: a full ring's wait for the drain */
	bool off;              /* --no-fast-path: each process gets its switch
				* (its categories, so that the sites of a
				* category off skip their probes), no rings */
};

/* *f stays NULL when the fast path cannot start (said); with --no-fast-path
 * it makes switches only. 0 or a negative errno. */
int tb_fast_prepare(struct tb_fast **f, struct record_bpf *skel,
		    const struct tb_fast_opts *o);
int tb_fast_start(struct tb_fast *f);
/* Threads write into rings of their own (not --no-fast-path, nor a drain
 * that cannot run). */
bool tb_fast_has_rings(const struct tb_fast *f);
/* Since the last tb_fast_round_end, processes forked, threads started or
 * threads asked for rings: rings to make this round. */
bool tb_fast_pending(const struct tb_fast *f);
/* Where the records go that the recorder makes of what the threads' rings
 * hold (as its rings' records go). */
void tb_fast_output(struct tb_fast *f, int (*put)(void *ctx, void *rec, size_t size),
		    void *ctx);
/* Called with tb_fast_output's ctx between the chunks of a long reading
 * of one ring (the recorder's own rings consumed meanwhile). */
void tb_fast_between(struct tb_fast *f, void (*between)(void *ctx));
/* The control map's STATE entry (ctl.h, mapped): each sample is checked
 * against the stop as it is when read, not only as the round found it. */
struct tb_ctl;
void tb_fast_ctl_state(struct tb_fast *f, const struct tb_ctl *state);
/* A process traced from the start (-p, or the command before its exec):
 * its directory and a spare ring for each of its threads, made now, so
 * that each takes its ring at its first event. */
void tb_fast_target(struct tb_fast *f, uint32_t pid);
void tb_fast_request(struct tb_fast *f, const struct tb_ring_req *q);
/* Traced process `parent` forked `child`: if the parent has a directory,
 * the child gets one, with spares, at the end of the round. */
void tb_fast_fork(struct tb_fast *f, uint32_t parent, uint32_t child);
/* Traced process `pid` started a thread: a spare is made for it before the
 * next drain. */
void tb_fast_thread(struct tb_fast *f, uint32_t pid);
void tb_fast_exit(struct tb_fast *f, uint32_t pid, uint32_t tid, bool process, uint64_t ts);
void tb_fast_exec(struct tb_fast *f, uint32_t pid, uint64_t ts);
void tb_fast_drain_all(struct tb_fast *f);
void tb_fast_round_end(struct tb_fast *f);
/* The categories recorded from now on: into every process's switch, and
 * into those made from now on (tracebpf/cats.h). */
struct tracebpf_cats;
void tb_fast_cats(struct tb_fast *f, const struct tracebpf_cats *k);
/* The session is over: no thread writes again; the rings drained. */
void tb_fast_finish(struct tb_fast *f);
/* How full the fullest ring was when tb_fast_drain_all last took it, per
 * mille of its size (1000: full, its thread's events went to the probes
 * meanwhile). */
unsigned tb_fast_fill(const struct tb_fast *f);
/* The fill a recorder's rounds aim at, per mille of a thread's ring. */
#define TB_FAST_FILL_AIM 250u

/* How long a recorder's next round waits, given the last round's wait and
 * the fill tb_fast_fill found at its drain: most (the flush interval)
 * while rings fill slowly, else the last wait scaled by
 * TB_FAST_FILL_AIM / fill, so that rounds come as often as it takes for
 * the fullest ring to be drained at about a quarter full and never fill
 * (a full ring sends its thread's events to the probes, at 20 times the
 * cost, until the next drain). From 0, it grows again by at least 1 ms. */
static inline unsigned tb_fast_round_wait(unsigned last, unsigned fill, unsigned most)
{
	unsigned long w = last ? last : 1;

	w = fill ? w * TB_FAST_FILL_AIM / fill : most;
	return w < most ? (unsigned)w : most;
}

/* Ring requests taken in a round, at most (a thread whose request is left
 * out asks again). */
#define TB_FAST_REQS_MAX 16384u

struct tb_fast_stats {
	uint64_t drained;    /* samples the drain took: events and descriptors */
	uint64_t steps;      /* the kernel's samples it stepped over (a batch
			      * of events is one) */
	uint64_t drain_ns;   /* time in the drain (the recorder's thread) */
	uint64_t made;       /* rings made */
	uint64_t grown;      /* of them, bigger rings for threads whose ring filled */
	uint64_t wakes;      /* "drain now" requests of threads waiting on a
			      * full ring (at most one a millisecond each) */
	uint64_t bad;        /* samples that were not a record (a process that
			      * wrote its ring by other means than trace.h) */
	uint64_t faults;     /* rings the drain refused or that claimed more
			      * than they hold: each sent its process alone
			      * to its probes */
	uint64_t over_share; /* spares not made: their process held its share
			      * of --max-fast-rings */
	uint64_t over_reqs;  /* ring requests left out: too many in a round */
};
void tb_fast_stats(const struct tb_fast *f, struct tb_fast_stats *st);

/* Events lost in the rings: a thread killed in the middle of a write. */
uint64_t tb_fast_lost(const struct tb_fast *f);
/* A TB_REC_GAP (one record, the thread named) in w for each such event not
 * yet marked. 0 or the writer's error. */
int tb_fast_marks(struct tb_fast *f, struct tb_writer *w);
void tb_fast_close(struct tb_fast *f);
/* What a killed recorder's session left (its processes' switches, their
 * pins and links): switched off and removed. Run by its releaser. */
void tb_fast_sweep_recorder(pid_t recorder);
/* The recorder's `stopped` map, pinned in its session directory: another
 * recorder that holds a process stopped for attaching does not resume it
 * while this one still holds it (tb_fast_held_elsewhere). Both need the
 * session directory, which every recorder makes, also without the fast
 * path. */
void tb_fast_pin_stopped(int fd);
/* Map fd pinned as `session-SESSION/FILE` in the session directory ('.'
 * written '_': bpffs takes none), so
 * that `bpftool map show -f` names the session of each of its maps. 0 or
 * a negative errno (-ENOENT: no session directory). */
int tb_fast_pin_session_map(const char *session, int fd, const char *file);
/* That directory's name: "session-SESSION", '.' written '_'. */
void tb_fast_pin_dir_name(const char *session, char *buf, size_t size);
/* Another live recorder holds process pid stopped. A recorder deletes its
 * own entry first, then asks: of two, the last to finish resumes it. */
bool tb_fast_held_elsewhere(uint32_t pid);

#endif
