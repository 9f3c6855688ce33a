/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ctl.h - stopping and starting a running recording: `tracebpf ctl
 * start|stop|status` (tb_cmd_ctl), and the recorder's side of it: the
 * control map (lib/format/tbctl.h) mapped into its memory, each change logged as a
 * TB_REC_CTL record and then acknowledged.
 */
#ifndef TRACEBPF_USER_CTL_H
#define TRACEBPF_USER_CTL_H

#include <stdbool.h>
#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>
#include "tracebpf/cats.h"

struct tb_writer;

struct tb_ctl_rec {
	struct tb_ctl *map;    /* TB_CTL_NKEYS entries, mmap'ed */
	__u64 handled_ts;      /* the last request handled (its STATE ts) */
	__u64 acked_ts;        /* ... and acknowledged */
	int err;               /* how it went: acknowledged with it */
	bool off;              /* stopped, as the file says */
};

/* Maps the control map (map_fd, BPF_F_MMAPABLE) and fills in the recorder's
 * entry (its pid, the trace file path, the session's name); with paused,
 * switches recording off before anything is attached (handled as a
 * request once the file is open). 0 or a negative errno. */
int tb_ctl_init(struct tb_ctl_rec *c, int map_fd, bool paused, const char *path,
		const char *session);

struct tb_ctl_stats;

/* The recorder's figures for `ctl status` (s->seq is set here). */
void tb_ctl_publish(struct tb_ctl_rec *c, struct tb_ctl_stats *s);

/* The filter sets' map ids for `tracebpf ctl filter`, and the filters in
 * effect from the start (TB_FILTER_*: record --tid). 0 or a negative
 * errno. */
int tb_ctl_filters(struct tb_ctl_rec *c, int tids_fd, int pids_fd, __u32 filter);

/* The map of the -e events for `tracebpf ctl disable -e` (tp_off_fd -1:
 * none recorded). */
void tb_ctl_kernel(struct tb_ctl_rec *c, int tp_off_fd);

/* The map of the categories recorded, for `tracebpf ctl enable|disable
 * CATEGORY`. */
void tb_ctl_cats(struct tb_ctl_rec *c, int cats_fd);

/* A session name as `record --session` takes it: 1-31 of [A-Za-z0-9._-]. */
bool tb_session_name_ok(const char *name);

/* The pid of the recorder of a running session named `name`, 0 when none
 * runs, or a negative errno when the recordings cannot be listed. */
long tb_session_recorder(const char *name);

/* A request not handled yet: 1 with *want_off, *by and *ts filled in, else
 * 0. *gate_off: the kernel side's switch as it is now. */
int tb_ctl_request(struct tb_ctl_rec *c, bool *want_off, __u32 *by, __u64 *ts,
		   bool *gate_off);

/* What the request being handled asks for besides stop or start:
 * TB_CTL_ACT_* (0: nothing), with its argument in arg (TB_CTL_PATH_MAX
 * bytes). Clears it. */
unsigned tb_ctl_action(struct tb_ctl_rec *c, char *arg);

/* The trace file `ctl status` shows. */
void tb_ctl_set_path(struct tb_ctl_rec *c, const char *path);

/* Clears the kernel side's switch: the time read just before. */
__u64 tb_ctl_open_gate(struct tb_ctl_rec *c);

/* Records a change (a TB_REC_CTL record) and the state: 0 or a writer
 * error. */
int tb_ctl_log(struct tb_ctl_rec *c, struct tb_writer *w, bool off, __u64 ts, __u32 by);

/* The request *ts is handled, with err (0 or a negative errno). */
void tb_ctl_done(struct tb_ctl_rec *c, __u64 ts, int err);

/* After the round that holds the records is written: tells `tracebpf ctl`
 * its request is handled. */
void tb_ctl_ack(struct tb_ctl_rec *c);

void tb_ctl_close(struct tb_ctl_rec *c);

/* `tracebpf ctl ...`: the exit status. */

/* ---- cats.c ---- */
/*
 * cats.c - the category rules (tracebpf/cats.h) as commands build them:
 * `record --categories/--exclude-categories`, `ctl enable|disable
 * CATEGORY`, and their description in messages and `ctl status`.
 */

/* The rules of a recording: "+GLOB" for each of the comma-separated
 * include (all, "+*", when NULL), then "-GLOB" for each of exclude (none
 * when NULL). 0, or -EINVAL with *why saying what is wrong. gen is left
 * as it was. */
int tb_cats_build(struct tracebpf_cats *k, const char *include, const char *exclude,
		  const char **why);

/* glob turned on (or off): its earlier entries go, "+glob" ("-glob") is
 * appended. 0, or -EINVAL (*why) when it is not a valid glob or the rules
 * are full. */
int tb_cats_change(struct tracebpf_cats *k, const char *glob, bool on, const char **why);

/* The rules as one line: "all", "none", or the entries separated by
 * spaces ("+io +net* -net.debug"). */
void tb_cats_describe(const char *rules, uint32_t len, char *buf, size_t n);

#endif
