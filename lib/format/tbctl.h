/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tbctl.h - the control map: `tracebpf ctl stop` and `tracebpf ctl start`
 * switch a running recording off and on (docs/control.md, "Stopping and
 * starting a recording").
 *
 * Every recorder has one BPF array map named TB_CTL_MAP_NAME with three
 * entries (two struct tb_ctl, then struct tb_ctl_stats), shared by its BPF
 * objects and mapped into the recorder's memory. The kernel side reads
 * TB_CTL_STATE's `off`: while it is set, the programs that record
 * application and kernel events return at once (those that follow
 * processes keep running); `filter` and `kernel_off` narrow what they
 * record.
 *
 * `tracebpf ctl` finds recorders by listing the maps with that name (a
 * recorder's session name is in TB_CTL_RECORDER, set before its pid) and
 * writes a request in TB_CTL_STATE: `want_off`, `pid`, then `ts` last (the
 * request's id). A stop also sets `off` itself (and `off_ts` before it,
 * if it was not set), before `ts`, so that it takes effect at once. The recorder handles a request in its next flush
 * round: for a stop it detaches its USDT probes (the sites' semaphores drop
 * to 0, so a stopped recording costs the application nothing), for a start
 * it attaches them again and only then clears `off`. It logs each change as
 * a TB_REC_CTL record, and once the round is written, acknowledges the
 * request in TB_CTL_RECORDER (`ts`, `err`). Each field has one writer at a
 * time: `tracebpf ctl` holds a lock while it writes and waits.
 *
 * No includes, fixed-width types: shared by BPF and user space like
 * tbrecords.h.
 */
#ifndef TRACEBPF_CTL_H
#define TRACEBPF_CTL_H

#define TB_CTL_MAP_NAME "tb_ctl"

enum tb_ctl_key {
	TB_CTL_STATE    = 0,
	TB_CTL_RECORDER = 1,
	TB_CTL_STATS    = 2,   /* struct tb_ctl_stats, for `ctl status` */
	TB_CTL_NKEYS    = 3,
};

#define TB_CTL_PATH_MAX 160

/* tb_ctl.filter: which sets choose the application events recorded
 * (record --tid, tracebpf ctl filter). */
#define TB_FILTER_TID 1u   /* only the threads in the map named "tb_tids" */
#define TB_FILTER_PID 2u   /* only the processes in "tb_pids" */
#define TB_FILTER_MAX 1024 /* entries of each */

/* tb_ctl.kernel_off: kernel events switched off (tracebpf ctl disable). */
#define TB_KOFF_SCHED 1u   /* the scheduler's and power events */
#define TB_TP_OFF_MAX 256  /* entries of tb_tp_off: the -e events, by id */
#define TB_CTL_SESSION_MAX 32   /* a session's name, with its NUL */

/* tb_ctl.action (STATE) */
#define TB_CTL_ACT_RESTART 1u   /* ctl restart: path, the new file ("": the next name) */
#define TB_CTL_ACT_EVENT   2u   /* ctl enable -e: path, SUBSYS:EVENT to attach now */

struct tb_ctl {
	__u32 off;       /* STATE: 1 while the programs record nothing */
	__u32 pid;       /* STATE: who asked last; RECORDER: the recorder */
	__u64 ts;        /* STATE: when it asked (CLOCK_MONOTONIC ns: the
			  * request's id); RECORDER: the last request handled */
	__u32 want_off;  /* STATE: what it asked for */
	__s32 err;       /* RECORDER: 0, or the negative errno of the last
			  * request (probes that could not be attached again) */
	__u64 off_ts;    /* STATE: when `off` was last set (a start asked
			  * since leaves it): events the threads stamped
			  * after it and wrote into their fast-path rings are
			  * dropped when drained, as the probes drop theirs */
	__u32 filter;    /* STATE: TB_FILTER_* (ctl filter writes it) */
	__u32 set_id[2]; /* RECORDER: the ids of the maps tb_tids, tb_pids */
	__u32 kernel_off;  /* STATE: TB_KOFF_* (ctl disable writes it) */
	__u32 tp_off_id;   /* RECORDER: the id of the map tb_tp_off (0: none) */
	__u32 cats_id;     /* RECORDER: the id of the session map (named
			    * after the session), the categories recorded
			    * (struct tracebpf_cats,
			    * tracebpf/cats.h; ctl enable|disable writes it) */
	__u32 action;      /* STATE: TB_CTL_ACT_* with a request that asks
			    * for more than stop or start, its argument in
			    * path; the recorder clears it */
	__u32 pad;
	char path[TB_CTL_PATH_MAX];  /* RECORDER: the trace file; STATE: the
				      * action's argument */
	char session[TB_CTL_SESSION_MAX];  /* RECORDER: the session's name */
};

_Static_assert(sizeof(struct tb_ctl) == 256, "tb_ctl layout");

#define TB_CTL_STAT_CPUS 8    /* CPUs whose drops are listed one by one */
#define TB_CTL_TARGETS   16   /* traced processes listed */
#define TB_CTL_EVENTS    64   /* the kernel events recorded, as a string */

/* The recorder's figures, rewritten about once a second, read by `ctl
 * status` (the entry TB_CTL_STATS, in place of a struct tb_ctl). `seq` is
 * odd while it is being written. */
struct tb_ctl_stats {
	__u32 seq;
	__u32 ncpus;       /* possible CPUs (cpu_drops has the first ones) */
	__u64 ts;          /* when written, CLOCK_MONOTONIC ns */
	__u64 events;      /* records received so far */
	__u64 rate;        /* records per second over the last period */
	__u64 bytes;       /* written to the trace file */
	__u64 drops_app;   /* application events lost, all CPUs */
	__u64 drops_kern;  /* kernel events lost */
	__u32 ntargets;    /* traced processes (targets has the first ones) */
	__u32 pad;
	__u64 cpu_drops[TB_CTL_STAT_CPUS];   /* both kinds, per CPU */
	__u32 targets[TB_CTL_TARGETS];
	char kernel[TB_CTL_EVENTS];          /* e.g. "sched (all), irq:*"; "" none */
};

_Static_assert(sizeof(struct tb_ctl_stats) == 256, "tb_ctl_stats layout");

#endif /* TRACEBPF_CTL_H */
