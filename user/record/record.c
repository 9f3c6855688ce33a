// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record.c - `tracebpf record`: the command's flow (record_args.c parses
 * the options). tb_record checks the environment (privileges, kernel BTF,
 * the open-files limit), then runs its steps in order: find the targets,
 * open -> configure -> load the BPF objects, open the output (the file,
 * ctl's first answer, --serve), attach, catch the signals and let the
 * command run, poll round by round until the targets exit, a signal or
 * --duration (each round drains the rings, releases the processes held
 * for attach, answers ctl and flushes the file), finish the file (the
 * last drain, the last counts), report, render the JSON, and destroy(),
 * the one cleanup path. It owns the flow and calls down into the other
 * files of the recorder, which never call back up (recorder.h gives their
 * order).
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/types.h>
#include <bpf/libbpf.h>

#include "kern/kern.h"
#include "record.skel.h"
#include "fast/fast.h"
#include "record/recorder.h"
#include "ctl/ctl.h"
#include "record/serve.h"
#include "format/tbfile.h"
#include "tracebpf.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* Effective capabilities: CAP_SYS_ADMIN, or CAP_BPF + CAP_PERFMON. */
static int check_caps(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2] = {};
	__u64 eff;

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	eff = ((__u64)data[1].effective << 32) | data[0].effective;
#ifndef CAP_BPF
#define CAP_PERFMON 38
#define CAP_BPF 39
#endif
	if (eff & (1ull << CAP_SYS_ADMIN))
		return 0;
	if ((eff & (1ull << CAP_BPF)) && (eff & (1ull << CAP_PERFMON)))
		return 0;
	return -EPERM;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	return vfprintf(stderr, fmt, ap);
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_WARN)
		return vfprintf(stderr, fmt, ap);
	return 0;
}

static int check_btf(const char *path)
{
	if (access(path, R_OK)) {
		int err = -errno;

		ERR("failed to read kernel BTF '%s': %s", path, strerror(-err));
		fprintf(stderr, "tracebpf: hint: tracebpf needs a kernel built with "
				"CONFIG_DEBUG_INFO_BTF=y (Debian 12's kernels are)\n");
		return err;
	}
	return 0;
}

/* ---- tb_record's steps: check the environment, find the targets, load,
 * open the output, attach, poll, finish, report, destroy. Each returns 0 or
 * a negative errno after saying what failed; destroy() undoes whatever the
 * steps before it did. */

static int check_env(const struct tb_record_opts *o)
{
	int err = check_caps();

	if (err) {
		ERR("failed to load BPF programs: %s", strerror(EPERM));
		fprintf(stderr, "tracebpf: hint: run as root (sudo tracebpf record ...), or give "
				"the binary CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE\n");
		return -EPERM;
	}
	err = check_btf(o->btf_path ? o->btf_path : "/sys/kernel/btf/vmlinux");
	if (err)
		return err;
	return rec_check_nofile();
}

/* The file first: nothing the kernel hands us may be lost. Then --serve. */
static int open_output(struct recorder *r)
{
	const struct tb_record_opts *o = r->o;
	size_t n = strlen(r->tbt_path);
	int err;

	snprintf(r->out_base, sizeof(r->out_base), "%.*s", (int)(n > 4 ? n - 4 : n),
		 r->tbt_path);   /* ctl restart's names: base.1.tbt, ... */
	err = rec_open_writer(r);
	if (err)
		return err;
	/* --paused: the file says so first, before anything is attached */
	err = rec_handle_ctl(r, false);
	if (!err)
		err = rec_cats_log(r, now_ns(CLOCK_MONOTONIC));
	if (!err)   /* record --tid (logged already when rec_handle_ctl ran first) */
		err = rec_filter_log(r, now_ns(CLOCK_MONOTONIC), false);
	if (!err && o->paused && !o->quiet)
		fprintf(stderr, "tracebpf: recording is stopped until 'tracebpf ctl "
				"start' (--paused)\n");
	if (err) {
		rec_err_write(r->tbt_path, err, false);
		return err;
	}
	if (o->serve) {
		err = tb_serve_open(&r->server, o->serve, tb_writer_fd(r->w), o->serve_max_lag);
		if (err) {
			ERR("failed to serve on '%s': %s", o->serve, strerror(-err));
			if (err == -EADDRINUSE)
				fprintf(stderr, "tracebpf: hint: remove the stale socket or "
						"choose another path\n");
		}
	}
	return err;
}

/* Ctrl-C, kill and a closed terminal stop the recording the same way:
 * last drain, processes released, file finished. */
static void catch_signals(void)
{
	struct sigaction sa = {};

	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* Everything attached (record_attach.c), the signals caught, then the
 * command runs. */
static int attach_and_start(struct recorder *r)
{
	int err = rec_attach_targets(r);

	if (err)
		return err;
	catch_signals();
	return r->o->cmd ? rec_start_child(r) : 0;
}

/* The recorder runs at nice -20 when it may (root), and at the lowest
 * real-time priority (SCHED_FIFO 1) while threads wait on their probes for
 * fast-path rings (pace, below; not with --no-realtime): 500 threads
 * starting at once on 2 CPUs, each on its probes until its ring is made,
 * left a recorder at nice -20 one share in seven; it made their rings too
 * late and their events filled its rings. Not longer: a recorder
 * draining a thread that writes flat out runs round after round, and at
 * real-time priority would keep a CPU from everything else. What it starts
 * (the command, the releaser, converters) and its threads run as anything
 * else does (SCHED_RESET_ON_FORK); the command gets the nice the recorder
 * had. The attach runs at nice -20: at real-time priority it ran without a
 * break, and no thread of a target ran between the sites it enabled. Where
 * SCHED_FIFO is refused (no CAP_SYS_NICE, no real-time budget in the
 * cgroup) the recording goes on at nice -20, said when --realtime asked
 * for it, and with -v. */
static void raise_priority(struct recorder *r)
{
	errno = 0;
	r->nice0 = getpriority(PRIO_PROCESS, 0);
	if (errno)
		r->nice0 = 0;
	if (setpriority(PRIO_PROCESS, 0, -20) == 0 && r->o->verbose)
		fprintf(stderr, "tracebpf: record: running at nice -20 (the command at %d)\n",
			r->nice0);
	r->may_rt = !r->o->no_realtime;   /* tried when a round needs it */
}

/* SCHED_FIFO 1 on or off (as far as it is allowed). */
static void realtime(struct recorder *r, bool on)
{
	struct sched_param sp = { .sched_priority = on ? 1 : 0 };

	if (!r->may_rt || on == r->realtime)
		return;
	if (!sched_setscheduler(0, on ? SCHED_FIFO | SCHED_RESET_ON_FORK : SCHED_OTHER, &sp)) {
		r->realtime = on;
	} else if (on) {
		r->may_rt = false;   /* not allowed: said once */
		if (!r->o->realtime && !r->o->verbose)
			return;
		fprintf(stderr, "tracebpf: record: %s: cannot run at SCHED_FIFO (%s): "
				"recording at nice -20\n",
			r->o->realtime ? "warning: --realtime" : "real-time rounds", strerror(errno));
		fprintf(stderr, "tracebpf: hint: it needs CAP_SYS_NICE, and a real-time "
				"budget for the recorder's cgroup (cpu.rt_runtime_us)\n");
	}
}

/* The recording is over: rendering the JSON is no longer urgent. */
static void lower_priority(struct recorder *r)
{
	realtime(r, false);
	r->may_rt = false;
}

/* SCHED_FIFO (realtime) while threads wait on their probes for rings: some
 * events since the last round took the probes where rings are made, or
 * threads started or asked for rings; not while rounds run back to back
 * (a thread writing flat out), where it would keep a CPU. */
static void pace(struct recorder *r)
{
	__u64 slow = r->app_events - r->fast_events;
	bool want = tb_fast_has_rings(r->fast) && r->wait_ms > 0 &&
		    (slow != r->slow_seen || tb_fast_pending(r->fast));

	realtime(r, want);
	r->rt_rounds += want && r->realtime;
	r->slow_seen = slow;
}

/* A round's drain: waits for the kernel's records (at most the round's
 * wait), then drains every ring up to the round's cut (record_drain.c).
 * 0; 1 when a signal cut the wait short (nothing drained); or a negative
 * errno (said). */
static int drain_round(struct recorder *r)
{
	int err;

	/* Records are submitted without wakeups below the threshold, so poll
	 * wakes on the timeout: that bounds the delivery latency. A thread
	 * that fills its fast-path ring faster shortens it. */
	r->wait_ms = tb_fast_round_wait(r->wait_ms, tb_fast_fill(r->fast), r->o->flush_ms);
	err = ring_buffer__poll(r->rb, (int)r->wait_ms);
	if (err == -EINTR)
		return 1;
	if (err < 0) {
		ERR("failed to poll ring buffers: %s", strerror(-err));
		return err;
	}
	if (err > 0)
		r->woken++;
	else
		r->ticks++;
	tb_slots_consume(&r->slots, rec_on_record, r);   /* as poll did the ring buffers */
	rec_drain_fast(r, false);
	err = tb_sched_flush(r->sched);
	if (err)
		return err;
	rec_consume_rings(r);
	/* Anything consumed from here to the next round's cut was stamped
	 * before that cut: it belongs to the next round as it is, and holding
	 * it would only copy it twice. */
	r->cut = 0;
	return 0;
}

/* The round into the file: the processes held for attach released, the
 * losses' records, ctl answered, the file flushed and --serve's clients
 * sent it. 0, or a negative errno (said). */
static int write_round(struct recorder *r)
{
	int err, cerr;

	rec_release_stopped(r, true);
	rec_stats_if_grown(r);
	cerr = rec_handle_ctl(r, r->tty);
	if (cerr && !r->write_err)
		r->write_err = cerr;
	err = tb_writer_flush(r->w);
	if (!err)
		err = r->write_err;
	if (err) {
		rec_err_write(r->tbt_path, err, false);
		return err;
	}
	tb_ctl_ack(&r->ctl);   /* the change is in the file now */
	if (r->server)
		tb_serve_pump(r->server, tb_writer_bytes(r->w));
	return 0;
}

/* The live status line, about once a second. */
static void status_tick(struct recorder *r, __u64 now)
{
	if (!r->tty || now - r->last_status < 1000000000ull)
		return;
	rec_status_line(r, (now - r->t0) / 1e9,
			(r->events - r->last_events) * 1e9 / (now - r->last_status));
	r->last_status = now;
	r->last_events = r->events;
}

/* After a round: the command reaped when it has exited, ctl status's
 * figures, the status line. 1 when the recording is over (--duration, or
 * every target has exited), 0 to go on, or a negative errno (said). */
static int end_round(struct recorder *r)
{
	const struct tb_record_opts *o = r->o;
	int alive;
	__u64 now;

	if (r->child > 0 && waitpid(r->child, NULL, WNOHANG) == r->child)
		r->child = -1;
	now = now_ns(CLOCK_MONOTONIC);
	rec_publish_stats(r, now);
	status_tick(r, now);
	if (o->duration > 0 && !r->ending && now - r->t0 >= o->duration * 1e9)
		return 1;
	alive = rec_targets_alive(r, now);
	r->targets_gone = !alive;
	return alive <= 0 ? (alive ? alive : 1) : 0;
}

/* One round: drain the rings, release the processes held for attach,
 * answer ctl, append to the file. 1 when the recording is over, 0 to go
 * on, or a negative errno (said). */
static int poll_round(struct recorder *r)
{
	int err = drain_round(r);

	if (err)
		return err > 0 ? 0 : err;   /* a signal: the loop sees it */
	pace(r);
	tb_fast_round_end(r->fast);
	err = write_round(r);
	return err ? err : end_round(r);
}

/* How long a command told to end may take to exit while still recorded. */
#define END_CMD_NS (5ull * 1000000000ull)

/* Every traced process has exited, the command too (its exit record came,
 * or it is gone or a zombie), but it may be in the middle of its exit, not
 * yet a zombie to reap: reaped here (within a second), so that the command
 * never outlives the recorder. */
static void reap_command(struct recorder *r)
{
	struct timespec ms = { 0, 1000000 };

	for (int i = 0; i < 1000 && r->child > 0; i++) {
		if (waitpid(r->child, NULL, WNOHANG) == r->child)
			r->child = -1;
		else
			nanosleep(&ms, NULL);
	}
}

/* The recording ends (a signal, --duration) while the command it started
 * still runs: like perf record, it sends the command SIGTERM, and records
 * on until the command has exited (its last events are in the file), for
 * at most END_CMD_NS; a second signal ends it at once. --keep-running
 * leaves the command running. */
static int end_command(struct recorder *r)
{
	__u64 until;
	int ret = 0;

	if (r->targets_gone)
		reap_command(r);
	if (r->child > 0 && waitpid(r->child, NULL, WNOHANG) == r->child)
		r->child = -1;
	if (r->child <= 0 || r->o->keep_running || r->go_fd >= 0)
		return 0;
	if (kill(r->child, SIGTERM))
		return 0;
	r->ending = true;
	stop_signal = 0;
	until = now_ns(CLOCK_MONOTONIC) + END_CMD_NS;
	while (!stop_signal && !ret && r->child > 0 && now_ns(CLOCK_MONOTONIC) < until)
		ret = poll_round(r);
	if (r->targets_gone)
		reap_command(r);
	if (r->child > 0 && ret >= 0)
		fprintf(stderr, "tracebpf: record: the command (process %d) has not exited %s "
				"SIGTERM: it is left running\n", r->child,
			stop_signal ? "after" : "within 5 s of");
	return ret < 0 ? ret : 0;
}

static int record_loop(struct recorder *r)
{
	int ret = 0;

	r->t0 = r->last_status = now_ns(CLOCK_MONOTONIC);
	while (!stop_signal && !ret)
		ret = poll_round(r);
	if (ret >= 0)
		ret = end_command(r);
	if (r->tty)
		fputs("\r\033[K", stderr);
	return ret < 0 ? ret : 0;
}

/* The drop counters could not be read at the end. */
static void err_drops(int err)
{
	ERR("failed to read the drop counters: %s (the trace was written, but whether "
	    "records were lost since the last count in it is unknown)", strerror(-err));
	tb_hint_bpf(err, "record again");
}

/* The last drain (everything the targets emitted is in the rings or
 * staged), the names, the last counts, the file closed. err is the
 * recording's so far; returns it, or the first error of these steps. */
static int finish_output(struct recorder *r, int err)
{
	int e;

	rec_md_tell_all(r, true);   /* no dump begins that the file would lack */
	rec_drain_fast(r, true);
	e = tb_sched_flush(r->sched);
	if (e && !err)
		err = e;
	rec_consume_rings(r);
	rec_write_all_comms(r);
	e = rec_handle_ctl(r, false);   /* a request in the last round */
	if (e && !r->write_err)
		r->write_err = e;
	rec_sweep_gaps(r);
	e = rec_write_stats(r);
	if (e) {
		err_drops(e);
		if (!err)
			err = e;
	}
	r->stats_final = !e;
	e = tb_writer_close(r->w);
	r->w = NULL;
	/* the rest to --serve's clients: 2 s for one taking nothing, 10 s in all */
	tb_serve_finish(r->server, 2000, 10000);
	r->server = NULL;
	if (!e)
		e = r->write_err;   /* a record of the last drain not taken */
	if (e && !err) {
		rec_err_write(r->tbt_path, e, false);
		err = e;
	}
	if (!e)
		tb_ctl_ack(&r->ctl);
	return err;
}

/* Undo whatever the steps did, whichever failed. */
static void destroy(struct recorder *r, int err)
{
	int i;

	if (r->go_fd >= 0)
		close(r->go_fd);   /* the child sees EOF and exits without exec */
	if (r->exec_err_fd >= 0)
		close(r->exec_err_fd);
	if (r->child > 0) {
		/* A command still running was told to end (end_command) or is
		 * left running (--keep-running); one we failed to start is
		 * killed. */
		if (err && r->go_fd < 0 && r->exec_err_fd < 0)
			kill(r->child, SIGKILL);
		waitpid(r->child, NULL, err ? 0 : WNOHANG);
	}
	rec_md_free(r);
	if (r->w)
		tb_writer_close(r->w);
	if (r->server)
		tb_serve_close(r->server);
	tb_links_destroy(&r->links, &r->nlinks);
	rec_detach_usdt(r);
	tb_sched_destroy(r->sched);
	tb_fast_close(r->fast);
	if (r->skel) {
		/* nothing stops a process any more: release whoever waits */
		record_bpf__detach(r->skel);
		rec_release_stopped(r, false);
	}
	rec_stop_releaser(r);
	for (i = 0; i < r->nobjs; i++) {
		rec_usdt_detach(&r->objs[i]);
		free(r->objs[i].path);
		close(r->objs[i].fd);
	}
	free(r->held);
	free(r->objs);
	tb_ctl_close(&r->ctl);
	rec_cats_close(r);
	free(r->filter_logged);
	rec_keep_free(r);
	free(r->base_vals);
	tb_gaps_close(&r->gaps);
	tb_slots_close(&r->slots);
	ring_buffer__free(r->rb);
	tb_rings_close(&r->rings);
	record_bpf__destroy(r->skel);
	tb_paths_free(&r->found);
	rec_usdt_close(r);
}

/* The session's name: --session, or tb-<our pid>; one that a running
 * session has is refused. */
static int name_session(struct recorder *r)
{
	long pid;

	snprintf(r->session, sizeof(r->session), "%s", r->o->session ? r->o->session : "");
	if (!r->o->session)
		snprintf(r->session, sizeof(r->session), "tb-%d", (int)getpid());
	pid = tb_session_recorder(r->session);
	if (pid > 0) {
		ERR("a session named '%s' is already running (recorder %ld)", r->session, pid);
		fprintf(stderr, "tracebpf: hint: give this one another name with --session NAME "
				"('tracebpf ctl list' lists the sessions)\n");
		return -EEXIST;
	}
	if (!r->o->quiet)
		fprintf(stderr, "tracebpf: record: session '%s' (tracebpf ctl --session %s "
				"stop|start|status)\n", r->session, r->session);
	return 0;
}

int tb_record(const struct tb_record_opts *o)
{
	struct recorder r = { .o = o, .go_fd = -1, .exec_err_fd = -1, .child = -1,
			      .releaser = -1, .releaser_fd = -1, .tty = isatty(2) && !o->quiet };
	int err;

	libbpf_set_print(o->verbose ? libbpf_print : libbpf_quiet);
	/* A reader of `-o -` that goes away, or a releaser killed before we
	 * tell it to leave, is a write error (EPIPE), not a death that would
	 * leave a process stopped at exec. The command gets it back. */
	signal(SIGPIPE, SIG_IGN);
	err = check_env(o);
	if (err)
		return err;
	raise_priority(&r);
	err = name_session(&r);
	if (!err)
		err = rec_usdt_open(&r);
	if (!err)
		err = rec_find_targets(&r);
	if (!err)
		err = rec_load_bpf(&r);
	if (!err)
		err = open_output(&r);
	if (!err)
		err = attach_and_start(&r);
	if (!err) {
		rec_md_scan_all(&r);
		err = finish_output(&r, record_loop(&r));
		rec_report(&r);
		lower_priority(&r);
		if (!err)
			err = rec_write_json(&r);
	}
	if (rec_reap_converts(&r) && !err)   /* the files ctl restart closed */
		err = -EIO;
	destroy(&r, err);
	return err;
}
