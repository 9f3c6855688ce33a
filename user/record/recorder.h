/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * recorder.h - `tracebpf record`'s internal interface: the recorder's state
 * (one struct recorder per recording) and the functions its files call
 * across each other. Not used outside user/record/.
 *
 * Calls run one way: a file calls only the files below it in this list,
 * never one above; a helper that several need sits in the lowest file
 * that fits. Top to bottom:
 *
 *   record_args.c     the options, parsed and checked, then tb_record
 *   record.c          the command's flow: the environment checked, then
 *                     tb_record's steps in order (the output opened and
 *                     finished, the command started), the poll loop and
 *                     its rounds, destroy()
 *   record_session.c  a `tracebpf ctl` request answered, ctl status, the
 *                     status line, the summary
 *   record_restart.c  ctl restart: the old file closed and converted, the
 *                     new one opened
 *   record_attach.c   the targets, the BPF objects loaded, their probes
 *                     attached (and detached, and attached again), the
 *                     processes stopped for attach released
 *   record_usdt.c     other programs' USDT probes (--usdt): attached, and
 *                     described in the file
 *   record_filter.c   the categories recorded (the rules, in the switches,
 *                     changed by `tracebpf ctl`) and the threads and
 *                     processes recorded, both in the file
 *   record_drain.c    the rings drained, every record as it goes by, the
 *                     drop counts and the gap marks
 *   record_memdump.c  the application's memory dumps: its dumping threads
 *                     found and told the interval
 *   record_keep.c     the records a file begun by ctl restart needs, kept
 *   record_output.c   the trace file's paths, .old, header, thread names
 *                     and command lines, write errors; the JSON
 *   record_procs.c    the processes around the recording: the command,
 *                     the releaser, the open-files limit; the traced
 *                     processes listed, named, and whether any lives
 *   serve.c           --serve's socket (serve.h)
 */
#ifndef TRACEBPF_RECORDER_H
#define TRACEBPF_RECORDER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>
#include <sys/types.h>
#include <linux/types.h>

#include "ctl/ctl.h"
#include "kern/kern.h"
#include "util/hmap.h"
#include "probes/probes.h"
#include "tracebpf.h"

#define ERR(fmt, ...) fprintf(stderr, "tracebpf: record: " fmt "\n", ##__VA_ARGS__)

#define TB_MSITE_BLOOM_BITS 4096   /* a filter of the sites of names */

struct bpf_link;
struct record_bpf;
struct ring_buffer;
struct tb_fast;
struct tb_rec_hdr;
struct tb_sched;
struct tb_server;
struct tb_writer;

static inline __u64 now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* event, event_id, and ring (the fast path's requests) */
#define TB_NPROBES 3

/* An object (executable or library) with tracebpf probes: its USDT links
 * are NULL while a `tracebpf ctl stop` holds. */
struct object {
	char *path;            /* as found (often /proc/PID/root/...) */
	int fd;                /* the file itself, to attach to again after a
				* stop: the path may be gone with PID, or name
				* a new file, by then */
	char key[64];          /* "dev:ino": uprobes are per inode */
	struct bpf_link *link[TB_NPROBES];
	struct bpf_link **ulinks;   /* record --usdt: one per probe name */
	int nulinks;
};

/* A traced process's memory-dumping thread (record_memdump.c). */
struct md_thread {
	__u32 pid, tid;
	int sig;               /* the signal it waits for */
};

struct recorder {
	int nice0;                       /* the nice the recorder had (the command's) */
	bool realtime;                   /* at SCHED_FIFO (record.c, realtime) */
	bool may_rt;                     /* SCHED_FIFO is allowed, and wanted */
	__u64 slow_seen;                 /* app_events - fast_events at the last pace() */
	__u64 rt_rounds;                 /* rounds at SCHED_FIFO (-v) */
	__u64 zombie_check;              /* last look for zombie targets (record_procs.c) */
	bool targets_gone;               /* every traced process has exited */
	const struct tb_record_opts *o;
	struct record_bpf *skel;
	struct ring_buffer *rb;
	struct tb_writer *w;
	struct bpf_link **links;
	int nlinks;
	struct tb_rings rings;  /* the application's events (--buffer-size) */
	struct tb_gaps gaps;    /* their gap marks (user/kern/gaps.c) */
	struct tb_slots slots;  /* the probes' fixed-size events (user/kern/slots.c) */
	int ncpus;
	__u64 events;          /* records received */
	/* application events received, and those of them written by the fast
	 * path (TB_EVF_FAST): the others took the probes (the slow path) */
	__u64 app_events, fast_events;
	__u64 woken, ticks;    /* drains after a kernel wakeup / on the timer */
	unsigned wait_ms;      /* the last round's wait (tb_fast_round_wait) */
	/* drops_total of the last STATS record written: its application and
	 * kernel parts */
	__u64 stats_app, stats_kern;
	bool stats_final;      /* the trace's last STATS record is written */
	__u64 stats_lost;      /* lost_procs of the last STATS record written */
	int write_err;         /* first writer error */
	char tbt_path[PATH_MAX];
	char session[32];      /* its name (TB_CTL_SESSION_MAX) */
	char json_path[PATH_MAX];
	struct object *objs;   /* every object with probes the targets mapped */
	int nobjs;
	pid_t child;           /* -- CMD */
	bool ending;           /* the command was told to end: no --duration */
	int go_fd;             /* write end: releases the child */
	int exec_err_fd;       /* read end: the child's exec errno */
	struct tb_server *server;  /* --serve */
	struct tb_sched *sched; /* scheduler and -e tracepoints (user/kern/sched.c) */
	struct tb_fast *fast;   /* the fast path (user/fast/fast.c), NULL when off */
	pid_t releaser;        /* rec_start_releaser's process */
	int releaser_fd;       /* write end of its pipe */
	struct tb_ctl_rec ctl; /* tracebpf ctl stop|start (user/ctl/ctl_rec.c) */
	char exe[PATH_MAX];    /* -- CMD, resolved */
	struct tb_paths found; /* objects with probes the targets map at the start */
	bool tty;              /* a live status line on stderr */
	__u64 t0;              /* the recording's start */
	__u64 last_status, last_events;  /* at the last status line */
	__u64 last_pub, pub_events;      /* at the last rec_publish_stats */
	__u64 cut;             /* with the fast path: this round takes the records
				* stamped up to here (0: all) */
	char *held;            /* records past the cut, for the next round */
	size_t nheld, cheld;
	/* ctl restart (record_restart.c; kept: record_keep.c) */
	struct tb_hmap kept;   /* pid -> struct kept_proc: SITE and name records */
	__u64 kept_over;       /* records not kept: their process's were full */
	__u64 msite_bloom[TB_MSITE_BLOOM_BITS / 64];   /* M sites' addresses */
	__u64 msite_miss;      /* a site the filter said no to since its last
				* bit was set (0: none): an event loop's site */
	pid_t *convs;          /* converters of closed files, to reap */
	int nconvs;
	unsigned restarts;     /* automatic names given */
	char out_base[PATH_MAX];   /* the first file's name without .tbt */
	/* the counts when the current file began: its STATS count from there */
	__u64 *base_vals, base_app, base_kern, base_lost, base_events;
	char added_events[256];   /* -e events ctl enabled later, ", " between */
	int cats_fd;           /* the session map (record_filter.c) */
	struct tracebpf_cats *cats;   /* ... mapped */
	__u32 cats_gen;        /* the rules in the switches and the file */
	struct tb_rec_filter *filter_logged;   /* the file's latest (record_filter.c) */
	struct tb_usdt_rules *usdt_rules;   /* record --usdt (record_usdt.c), or NULL */
	struct usdt_probe *usdt;            /* the probes attached: index = id */
	int nusdt;
	struct {               /* memory dumps (record_memdump.c) */
		struct md_thread *v;
		size_t n, cap;
	} md;
};

/* Each function is described where it is defined; the files in the
 * order above. */

/* record_session.c */
int rec_handle_ctl(struct recorder *r, bool tty);
/* ctl status's figures into the control map, about once a second. */
void rec_publish_stats(struct recorder *r, __u64 now);
void rec_status_line(struct recorder *r, double elapsed, double rate);
void rec_report(struct recorder *r);

/* record_restart.c */
int rec_restart_output(struct recorder *r, const char *path);
int rec_reap_converts(struct recorder *r);

/* record_attach.c */
void rec_detach_usdt(struct recorder *r);
int rec_reattach_usdt(struct recorder *r);
void rec_release_stopped(struct recorder *r, bool attach);
int rec_find_targets(struct recorder *r);
int rec_load_bpf(struct recorder *r);
int rec_attach_targets(struct recorder *r);

/* record_usdt.c */
int rec_usdt_open(struct recorder *r);
void rec_usdt_close(struct recorder *r);
int rec_usdt_attach(struct recorder *r, struct object *ob, const char *path);
void rec_usdt_detach(struct object *ob);
int rec_usdt_log_all(struct recorder *r);

/* record_filter.c */
int rec_cats_open(struct recorder *r);
int rec_cats_log(struct recorder *r, __u64 ts);
int rec_cats_check(struct recorder *r);
void rec_cats_close(struct recorder *r);
int rec_filter_log(struct recorder *r, __u64 ts, bool fresh);

/* record_drain.c */
void rec_consume_rings(void *ctx);
void rec_drain_fast(struct recorder *r, bool last);
void rec_take_all(struct recorder *r);
int rec_on_record(void *ctx, void *data, size_t size);
/* The drops so far: per CPU (vals, ncpus of them), and in all. */
int rec_read_drops(struct recorder *r, __u64 *vals, __u64 *app, __u64 *kern);
__u64 rec_lost_procs(struct recorder *r);
int rec_write_stats(struct recorder *r);
void rec_stats_baseline(struct recorder *r);
int rec_total_drops(struct recorder *r, __u64 *app, __u64 *kern);
void rec_sweep_gaps(struct recorder *r);
void rec_stats_if_grown(struct recorder *r);

/* record_memdump.c */
void rec_md_note(struct recorder *r, const struct tb_rec_hdr *h);
void rec_md_scan_all(struct recorder *r);
void rec_md_tell_all(struct recorder *r, bool off);
void rec_md_free(struct recorder *r);

/* record_keep.c */
void rec_keep_note(struct recorder *r, const struct tb_rec_hdr *h);
int rec_keep_replay(struct recorder *r);
void rec_keep_free(struct recorder *r);

/* record_output.c */
int rec_output_paths(struct recorder *r, const char *out);
void rec_write_comms(struct recorder *r, pid_t pid);
void rec_write_cmdline(struct recorder *r, pid_t pid);
void rec_err_write(const char *path, int err, bool create);
int rec_open_writer(struct recorder *r);
void rec_write_all_comms(struct recorder *r);
void rec_write_all_cmdlines(struct recorder *r);
int rec_write_json(struct recorder *r);

/* record_procs.c */
int rec_check_nofile(void);
int rec_spawn_child(struct recorder *r, const char *exe);
int rec_start_child(struct recorder *r);
int rec_start_releaser(struct recorder *r);
void rec_stop_releaser(struct recorder *r);
void rec_each_traced(struct recorder *r, void (*fn)(struct recorder *, pid_t));
int rec_read_comm(pid_t pid, pid_t tid, char comm[16]);
int rec_targets_alive(struct recorder *r, __u64 now);

#endif
