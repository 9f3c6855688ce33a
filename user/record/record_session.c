// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record_session.c - the recording session as `tracebpf ctl` and the user
 * see it while it runs: a ctl request answered (stop and start, a
 * tracepoint added, the categories, the filter, restart), ctl status's
 * figures, the live status line, and the summary at the end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "record.skel.h"
#include "format/tbctl.h"
#include "ctl/ctl.h"
#include "fast/fast.h"
#include "util/print.h"
#include "record/recorder.h"
#include "kern/kern.h"
#include "format/tbfile.h"
#include "tracebpf.h"

/* `ctl enable -e SPEC` of a tracepoint not recorded yet: attached now,
 * its format in the file first. */
static int add_event(struct recorder *r, const char *spec)
{
	size_t n = strlen(r->added_events);
	int err = tb_sched_add_event(r->sched, spec, r->w, now_ns(CLOCK_MONOTONIC));

	if (err)
		return err;
	snprintf(r->added_events + n, sizeof(r->added_events) - n, "%s%s", n ? ", " : "", spec);
	if (!r->o->quiet)
		fprintf(stderr, "%stracebpf: recording %s from now on (tracebpf ctl)\n",
			r->tty ? "\r\033[K" : "", spec);
	return 0;
}

/* A `tracebpf ctl` request. Stop: the kernel side is switched off already;
 * detach the probes. Start: attach them again, then switch the kernel side
 * on. Each change goes to the file (a TB_REC_CTL record) and, unless -q, to
 * stderr; so does a filter changed before the request (a TB_REC_FILTER
 * record: `ctl filter` asks once more after its change). A negative errno
 * when the file could not take the record. */
int rec_handle_ctl(struct recorder *r, bool tty)
{
	bool want_off, gate_off, say = !r->o->quiet;
	char arg[TB_CTL_PATH_MAX];
	unsigned act;
	int err = 0, werr = 0;
	__u32 by;
	__u64 ts;

	if (!tb_ctl_request(&r->ctl, &want_off, &by, &ts, &gate_off))
		return 0;
	werr = rec_cats_check(r);   /* ctl enable|disable CATEGORY */
	act = werr ? 0 : tb_ctl_action(&r->ctl, arg);
	if (act == TB_CTL_ACT_RESTART)
		err = rec_restart_output(r, arg);   /* the recording goes on in a new file */
	else if (act == TB_CTL_ACT_EVENT)
		err = add_event(r, arg);
	say = say && by != (__u32)getpid();   /* --paused says so itself */
	if (want_off == r->ctl.off && want_off == gate_off)
		rec_take_all(r);   /* a request that changes nothing: ctl filter's drain */
	if (!werr)
		werr = rec_filter_log(r, ts, false);
	if (!r->ctl.off && (want_off || gate_off)) {
		rec_take_all(r);
		rec_detach_usdt(r);
		rec_md_tell_all(r, true);
		werr = tb_ctl_log(&r->ctl, r->w, true, ts, by);
		if (say)
			fprintf(stderr, "%stracebpf: recording stopped (tracebpf ctl, process %u)\n",
				tty ? "\r\033[K" : "", by);
	}
	if (!want_off && r->ctl.off && !werr) {
		err = rec_reattach_usdt(r);
		rec_md_tell_all(r, false);
		werr = tb_ctl_log(&r->ctl, r->w, false, tb_ctl_open_gate(&r->ctl), by);
		if (say)
			fprintf(stderr, "%stracebpf: recording started (tracebpf ctl, process %u)\n",
				tty ? "\r\033[K" : "", by);
	}
	tb_ctl_done(&r->ctl, ts, err);
	return werr;
}

void rec_status_line(struct recorder *r, double elapsed, double rate)
{
	char bytes[32], drops[24] = "?";
	__u64 app, kern;

	if (!rec_total_drops(r, &app, &kern))
		snprintf(drops, sizeof(drops), "%llu", (unsigned long long)(app + kern));
	tb_fmt_bytes(bytes, sizeof(bytes), tb_writer_bytes(r->w));
	fprintf(stderr, "\r\033[K[%6.1fs] %llu events  %.0f/s  drops %s  %s%s",
			elapsed, (unsigned long long)r->events, rate, drops, bytes,
			r->ctl.off ? "  STOPPED (tracebpf ctl start)" : "");
}

/* Samples in the threads' rings that were not records: never written by
 * trace.h, so said whether -v or not. */
static void fast_bad_said(const struct recorder *r)
{
	struct tb_fast_stats st;

	if (!r->fast)
		return;
	tb_fast_stats(r->fast, &st);
	if (st.bad)
		fprintf(stderr, "tracebpf: WARNING: %llu samples in the threads' fast-path rings "
				"were not events and were left out (a ring written by other means "
				"than tracebpf/trace.h)\n", (unsigned long long)st.bad);
}

/* What traced processes asked for past the recorder's limits
 * (docs/security.md): each limit reached, counted. */
static void limits_said(const struct recorder *r)
{
	struct tb_fast_stats st;
	__u64 reqs = r->skel ? *(volatile __u64 *)&r->skel->bss->req_limited : 0;

	tb_fast_stats(r->fast, &st);
	if (reqs || st.over_reqs)
		fprintf(stderr, "tracebpf: WARNING: %llu fast-path ring requests of traced "
				"processes were left out (more than %u a millisecond from one "
				"process, or %u in a round): their threads asked again\n",
			(unsigned long long)(reqs + st.over_reqs), TB_FAST_REQ_PER_MS,
			TB_FAST_REQS_MAX);
	if (st.over_share)
		fprintf(stderr, "tracebpf: WARNING: %llu fast-path rings were not made for "
				"processes that held their share of --max-fast-rings: those "
				"threads took their probes\n", (unsigned long long)st.over_share);
	if (st.faults)
		fprintf(stderr, "tracebpf: WARNING: %llu fast-path rings held what trace.h never "
				"writes: their processes took their probes from then on, and "
				"what those rings held since the round before was left out\n",
			(unsigned long long)st.faults);
	if (r->kept_over)
		fprintf(stderr, "tracebpf: WARNING: %llu site or name records were not kept for a "
				"restart (over 65536 per process): a file begun by `ctl restart` "
				"lacks them\n", (unsigned long long)r->kept_over);
}

/* The summary line and a warning for every kind of loss. */
void rec_report(struct recorder *r)
{
	__u64 app = 0, kern = 0;
	char bytes[32], drops[24] = "an unknown number";
	struct stat st;

	/* the trace's own counts: the scheduler's programs run until they are
	 * detached, and a drop counted after the last STATS record was written
	 * is of an event after the end of the trace (test_kernel_drops_counted
	 * once saw 3424 on stderr against 3244 in the file) */
	if (r->stats_final) {
		app = r->stats_app;
		kern = r->stats_kern;
		snprintf(drops, sizeof(drops), "%llu", (unsigned long long)(app + kern));
	} else if (!rec_total_drops(r, &app, &kern)) {
		snprintf(drops, sizeof(drops), "%llu", (unsigned long long)(app + kern));
	}
	bytes[0] = '\0';
	if (strcmp(r->tbt_path, "-")) {
		strcpy(bytes, " (");
		tb_fmt_bytes(bytes + 2, sizeof(bytes) - 3,
			  stat(r->tbt_path, &st) ? 0 : (__u64)st.st_size);
		strcat(bytes, ")");
	}
	fprintf(stderr, "tracebpf: recorded %llu records in %.1f s, %s dropped, wrote %s%s\n",
		(unsigned long long)r->events, (now_ns(CLOCK_MONOTONIC) - r->t0) / 1e9,
		drops, strcmp(r->tbt_path, "-") ? r->tbt_path : "the trace to stdout", bytes);
	if (r->o->verbose && r->app_events)
		fprintf(stderr, "tracebpf: record: %llu of %llu application events took "
				"the probes (the slow path, %.1f%%), %llu the fast path\n",
			(unsigned long long)(r->app_events - r->fast_events),
			(unsigned long long)r->app_events,
			100.0 * (r->app_events - r->fast_events) / r->app_events,
			(unsigned long long)r->fast_events);
	if (r->o->verbose && tb_fast_has_rings(r->fast)) {
		struct tb_fast_stats st;

		tb_fast_stats(r->fast, &st);
		fprintf(stderr, "tracebpf: record: fast-path drain: %llu events in %.1f ms "
				"(%.0f events/s), %llu kernel samples; %llu rings made, %llu of "
				"them grown; %llu requests to drain a full ring\n",
			(unsigned long long)st.drained, st.drain_ns / 1e6,
			st.drain_ns ? st.drained * 1e9 / st.drain_ns : 0.0,
			(unsigned long long)st.steps, (unsigned long long)st.made,
			(unsigned long long)st.grown, (unsigned long long)st.wakes);
	}
	fast_bad_said(r);
	limits_said(r);
	if (r->o->verbose)
		fprintf(stderr, "tracebpf: record: drained the rings %llu times on the "
				"--flush-interval timer, %llu times woken by the kernel; %llu "
				"rounds at SCHED_FIFO\n",
			(unsigned long long)r->ticks, (unsigned long long)r->woken,
			(unsigned long long)r->rt_rounds);
	if (app)
		fprintf(stderr, "tracebpf: WARNING: %llu events were LOST because a ring buffer "
				"was full; record again with a larger --buffer-size\n",
			(unsigned long long)app);
	if (kern)
		fprintf(stderr, "tracebpf: WARNING: %llu kernel events were LOST because a "
				"kernel ring buffer and the ring buffer it spills into were "
				"full; record again with a larger --kernel-buffer-size or "
				"--buffer-size\n", (unsigned long long)kern);
	if (rec_lost_procs(r))
		fprintf(stderr, "tracebpf: WARNING: %llu processes started by traced processes "
				"were NOT TRACED because the set of traced processes was full "
				"(%u); record again with a larger --max-processes\n",
			(unsigned long long)rec_lost_procs(r), r->o->max_procs);
	if (tb_fast_lost(r->fast))
		fprintf(stderr, "tracebpf: WARNING: %llu events were LOST in fast-path rings: "
				"each one the last event of a thread killed while writing it\n",
			(unsigned long long)tb_fast_lost(r->fast));
}

/* The traced processes: how many, and the first TB_CTL_TARGETS. */
static void list_targets(struct recorder *r, struct tb_ctl_stats *s)
{
	int fd = bpf_map__fd(r->skel->maps.traced);
	__u32 key, next, *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if (s->ntargets < TB_CTL_TARGETS)
			s->targets[s->ntargets] = next;
		s->ntargets++;
		key = next;
		prev = &key;
	}
}

/* What the kernel side records besides the application: "sched (all)",
 * "sched (traced)", the -e specs; cut to fit. */
static void kernel_events(const struct recorder *r, char *buf, size_t len)
{
	const struct tb_record_opts *o = r->o;
	size_t n = 0;

	buf[0] = 0;
	if (!o->no_sched)
		n = (size_t)snprintf(buf, len, "sched (%s)", o->sched_traced ? "traced" : "all");
	for (int i = 0; i < o->nevents && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", o->events[i]);
	for (size_t i = 0; r->added_events[i] && n + 3 < len; i++) {   /* ctl enable -e */
		if (!i && n) {
			buf[n++] = ',';
			buf[n++] = ' ';
		}
		buf[n++] = r->added_events[i];
		buf[n] = '\0';
	}
}

void rec_publish_stats(struct recorder *r, __u64 now)
{
	struct tb_ctl_stats s = { .ncpus = (__u32)r->ncpus, .ts = now, .events = r->events };
	__u64 *vals;

	if (r->last_pub && now - r->last_pub < 1000000000ull)
		return;
	if (r->last_pub)
		s.rate = (r->events - r->pub_events) * 1000000000ull / (now - r->last_pub);
	s.bytes = tb_writer_bytes(r->w);
	vals = calloc((size_t)r->ncpus, sizeof(*vals));
	if (vals && !rec_read_drops(r, vals, &s.drops_app, &s.drops_kern))
		for (int i = 0; i < r->ncpus && i < TB_CTL_STAT_CPUS; i++)
			s.cpu_drops[i] = vals[i];
	free(vals);
	list_targets(r, &s);
	kernel_events(r, s.kernel, sizeof(s.kernel));
	tb_ctl_publish(&r->ctl, &s);
	r->last_pub = now;
	r->pub_events = r->events;
}
