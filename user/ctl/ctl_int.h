/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ctl_int.h - what `tracebpf ctl`'s files share: a running recording as
 * ctl.c finds it (its control map, lib/format/tbctl.h, mapped), and the printing of
 * its state and figures (ctl_status.c).
 */
#ifndef TRACEBPF_CTL_INT_H
#define TRACEBPF_CTL_INT_H

#include <stdbool.h>
#include <linux/types.h>

#include "format/tbctl.h"

struct recording {
	int fd;                /* the control map */
	struct tb_ctl *m;      /* mapped: TB_CTL_NKEYS entries */
	__u32 pid;             /* its recorder */
	char session[TB_CTL_SESSION_MAX];
};

/* The filter's two sets: index 0 threads (tb_tids), 1 processes (tb_pids). */
static const char *const tb_ctl_kind_name[2] = { "threads", "processes" };
static const __u32 tb_ctl_kind_bit[2] = { TB_FILTER_TID, TB_FILTER_PID };

/* CLOCK_MONOTONIC (bpf_ktime_get_ns()'s clock), ns. */
__u64 tb_ctl_mono_ns(void);

/* The recorder's last figures (struct tb_ctl_stats, a consistent copy);
 * false when it has published none yet. */
bool tb_ctl_read_stats(const struct recording *r, struct tb_ctl_stats *out);

/* `ctl list`: a line per session. */
void tb_ctl_print_list(const struct recording *v, int n);
/* `ctl status`: the lines of one recording, all "recording PID: ...". */
void tb_ctl_print_status(const struct recording *r);
struct tracebpf_cats;
/* The recording's category rules (tracebpf/cats.h); false when they
 * cannot be read (a recorder older than this ctl). */
bool tb_ctl_read_cats(const struct recording *r, struct tracebpf_cats *k);
/* The categories recorded, a line (status, enable, disable). */
void tb_ctl_print_cats(const struct recording *r);
/* The filters in effect, a line per set (status, filter). */
void tb_ctl_print_filter(const struct recording *r);
/* `ctl status --json`: an array of the recordings v (only `only` when
 * not NULL). 0 or a negative errno from writing stdout. */
int tb_ctl_print_json(const struct recording *v, int n, const struct recording *only);

/* ctl_rec.c: the control map, as both sides map it */
size_t tb_ctl_map_bytes(void);
struct tb_ctl *tb_ctl_map(int fd);
/* A request (start when !off, stop) written into the map for the
 * recorder; its sequence number. */
__u64 tb_ctl_ask(struct tb_ctl *m, bool off, __u32 by);

#endif
