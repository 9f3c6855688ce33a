/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sched_events.h - scheduler, power and generic (-e) tracepoints for `tracebpf
 * record`: the user side of bpf/sched.bpf.c.
 *
 * Order of calls, inside tb_record's open -> load -> attach:
 *   tb_sched_prepare   (before anything is loaded: checks -e specs, reads
 *                       their tracefs formats; the errors a user can fix)
 *   tb_sched_load      (after record.bpf.c is loaded: shares its traced
 *                       set; creates its own rings and drop counter)
 *   tb_sched_write_formats, tb_sched_attach
 *   tb_sched_flush     (before each drain of the rings)
 *   tb_sched_sweep_gaps (after each drain)
 *   tb_sched_destroy
 * Every function returns 0 or a negative errno and prints its own error.
 */
#ifndef TRACEBPF_SCHED_EVENTS_H
#define TRACEBPF_SCHED_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "kern/rings.h"

struct bpf_object;

struct tb_writer;
struct tb_sched;

/* The scheduler and power tracepoints `record` attaches, in this order; bit
 * i of tb_sched_opts.select is tb_sched_tracepoints[i]. The process
 * lifecycle ones (TB_SCHED_ALWAYS) are rare and name every thread: they are
 * on whenever scheduler events are. */
extern const char *const tb_sched_tracepoints[];
#define TB_SCHED_NTP 10
#define TB_SCHED_ALL     ((1u << TB_SCHED_NTP) - 1)
#define TB_SCHED_ALWAYS  0xf0u   /* sched_process_fork/exec/exit, task_rename */
#define TB_SCHED_POWER   0x300u  /* cpu_idle, cpu_frequency: not with --sched=traced */

struct tb_sched_opts {
	bool sched;              /* scheduler + power tracepoints (not --no-sched) */
	unsigned select;         /* --sched-events: bits of tb_sched_tracepoints,
				  * TB_SCHED_ALWAYS included (0 = all) */
	bool traced_only;        /* --sched=traced */
	char **events;           /* -e SUBSYS:EVENT specs (globs allowed) */
	int nevents;
	size_t ring_size;        /* --kernel-buffer-size: bytes per CPU, power of 2 */
	bool verbose;
	const char *session;     /* the session's name, in the programs' metadata */
};

/* Mounts tracefs if it is not (said on stderr); why: what needs it. */
int tb_sched_ensure_tracefs(const char *why);

/* Writes a BPF object's `bpf_metadata_session` (bpf/ring.bpf.h) before its
 * load: the session's name, which `bpftool prog show` prints. */
void tb_bpf_metadata_session(char *dst, size_t size, const char *session);

int tb_sched_prepare(struct tb_sched **s, const struct tb_sched_opts *o);
/* Loads bpf/sched.bpf.c with its traced, spill and tb_ctl maps pointing at
 * traced_fd, spill_fd and ctl_fd (record.bpf.c's traced, rings and tb_ctl),
 * and its own per-CPU rings of ring_size bytes, which it adds to *rb
 * (created if NULL) with fn(ctx, ...) as callback. */
int tb_sched_load(struct tb_sched *s, int traced_fd, int spill_fd, int ctl_fd,
		  struct ring_buffer **rb, tb_ring_fn fn, void *ctx);
/* Adds the records the kernel rings lost on CPU i to vals[i] (i < n) and
 * their total to *total (0 when nothing is loaded). Prints nothing: the
 * caller says what an error means. */
int tb_sched_add_drops(struct tb_sched *s, __u64 *vals, int n, __u64 *total);
/* The kernel records' gap marks still pending, into w (user/kern/gaps.c): the
 * number written or the writer's error; prints nothing. */
int tb_sched_sweep_gaps(struct tb_sched *s, struct tb_writer *w);
/* One TB_REC_FORMAT record per -e event, stamped ts. */
int tb_sched_write_formats(struct tb_sched *s, struct tb_writer *w, __u64 ts);
int tb_sched_attach(struct tb_sched *s);
/* Moves the records the hot scheduler programs staged on every CPU into the
 * ring buffers (bpf/sched.bpf.c, "stage"): call before draining them. If the
 * kernel refuses to run the flush on a CPU, it warns, hands every CPU's
 * staged records to the ring callback itself, and turns staging off for the
 * rest of the recording; an error only if it cannot read them either. */
int tb_sched_flush(struct tb_sched *s);
/* The map of the -e events switched off (tb_tp_off), or -1 when loaded
 * with none. */
int tb_sched_tp_off_fd(struct tb_sched *s);

/* `tracebpf ctl enable -e SPEC` of a recording that does not record it:
 * the tracepoints SPEC names (one, or a glob), their formats into w
 * (stamped ts), listed for ctl disable, attached. 0, or a negative errno
 * (said): -ENOTSUP when the recording loaded no kernel programs
 * (--no-sched without -e), -EEXIST when it records them all already. */
int tb_sched_add_event(struct tb_sched *s, const char *spec, struct tb_writer *w, __u64 ts);
void tb_sched_destroy(struct tb_sched *s);
/* The scheduler programs' BPF object (its maps pinned with the session's),
 * or NULL. */
struct bpf_object *tb_sched_object(const struct tb_sched *s);

/* Parse --sched-events: "all" or a comma-separated list of names from
 * tb_sched_tracepoints. Sets *select (TB_SCHED_ALWAYS always included);
 * -EINVAL with *bad pointing at the first unknown name (a static copy). */
int tb_sched_parse_select(const char *list, unsigned *select, const char **bad);

/* Parse "SUBSYS:EVENT" (each part a name or an fnmatch glob). 0 or -EINVAL. */
int tb_sched_parse_spec(const char *spec, char *sys, size_t syslen, char *ev, size_t evlen);

#endif
