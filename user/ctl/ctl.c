// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* ctl.c - `tracebpf ctl start|stop|status|...`: finds the recordings and
 * asks them through their control maps (the recorder's side is
 * ctl_rec.c). */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "ctl/ctl.h"
#include "ctl/ctl_int.h"
#include "kern/kern.h"
#include "format/tbfile.h"
#include "tracebpf.h"

#define ERR(fmt, ...) fprintf(stderr, "tracebpf: ctl: " fmt "\n", ##__VA_ARGS__)

/* How long `tracebpf ctl` waits for the recorder to log a change (--wait;
 * it looks once per --flush-interval, 50 ms by default). */
static __u64 ack_timeout_ns = 5ull * 1000000000ull;

static void free_recordings(struct recording *v, int n)
{
	for (int i = 0; i < n; i++) {
		munmap(v[i].m, tb_ctl_map_bytes());
		close(v[i].fd);
	}
	free(v);
}

/* Is this map a recorder's control map? */
static bool is_ctl_map(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	return !bpf_obj_get_info_by_fd(fd, &info, &len) &&
	       !strcmp(info.name, TB_CTL_MAP_NAME) && info.type == BPF_MAP_TYPE_ARRAY &&
	       info.value_size == sizeof(struct tb_ctl) && info.max_entries == TB_CTL_NKEYS &&
	       (info.map_flags & BPF_F_MMAPABLE);
}

/* Every running recording: the maps named TB_CTL_MAP_NAME whose recorder
 * is set and alive. 0 or a negative errno. */
static int find_recordings(struct recording **out, int *nout)
{
	struct recording *v = NULL, *nv;
	__u32 id = 0;
	int n = 0, err = 0;

	for (;;) {
		struct tb_ctl *m;
		__u32 pid;
		int fd;

		if (bpf_map_get_next_id(id, &id)) {
			if (errno != ENOENT)
				err = -errno;
			break;
		}
		fd = bpf_map_get_fd_by_id(id);
		if (fd < 0) {
			if (errno == ENOENT)
				continue;   /* freed meanwhile */
			err = -errno;
			break;
		}
		if (!is_ctl_map(fd) || !(m = tb_ctl_map(fd))) {
			close(fd);
			continue;
		}
		pid = __atomic_load_n(&m[TB_CTL_RECORDER].pid, __ATOMIC_ACQUIRE);
		nv = NULL;
		if (pid && !(kill(pid, 0) && errno == ESRCH)) {
			nv = realloc(v, (n + 1) * sizeof(*v));
			err = nv ? 0 : -ENOMEM;
		}
		if (!nv) {   /* not set up yet, its recorder is gone, or ENOMEM */
			munmap(m, tb_ctl_map_bytes());
			close(fd);
			if (err)
				break;
			continue;
		}
		v = nv;
		v[n] = (struct recording){ fd, m, pid, "" };
		memcpy(v[n].session, m[TB_CTL_RECORDER].session, sizeof(v[n].session) - 1);
		n++;
	}
	if (err) {
		free_recordings(v, n);
		return err;
	}
	*out = v;
	*nout = n;
	return 0;
}

bool tb_session_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (!n || n >= TB_CTL_SESSION_MAX)
		return false;
	return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789._-") == n;
}

long tb_session_recorder(const char *name)
{
	struct recording *v;
	long pid = 0;
	int n, err = find_recordings(&v, &n);

	if (err)
		return err;
	for (int i = 0; i < n; i++)
		if (!strcmp(v[i].session, name))
			pid = v[i].pid;
	free_recordings(v, n);
	return pid;
}

/* Waits until the recorder has handled request ts (what: "stop", "start",
 * "restart", "filter" or "log the filter of"). 0 or a negative errno
 * (said). */
static int wait_ack(struct recording *r, __u64 ts, const char *what)
{
	struct timespec tick = { 0, 5 * 1000 * 1000 };
	bool on = !strcmp(what, "start");
	__u64 t0 = tb_ctl_mono_ns();

	while (__atomic_load_n(&r->m[TB_CTL_RECORDER].ts, __ATOMIC_ACQUIRE) < ts) {
		if (kill(r->pid, 0) && errno == ESRCH) {
			ERR("failed to %s recording %u: it ended before it could log that",
			    what, r->pid);
			fprintf(stderr, "tracebpf: hint: nothing left to %s: its trace file "
					"holds what it recorded until it ended\n", what);
			return -ESRCH;
		}
		if (tb_ctl_mono_ns() - t0 > ack_timeout_ns) {
			ERR("failed to %s recording %u: the recorder did not confirm within %.1f s",
			    what, r->pid, ack_timeout_ns / 1e9);
			fprintf(stderr, "tracebpf: hint: %s; is the recorder itself stopped "
					"(kill -CONT %u)?\n", !strcmp(what, "stop") ? "its BPF "
					"programs record nothing already, but the trace file does not "
					"say so yet" : on ? "recording starts when it answers" :
					!strcmp(what, "restart") ? "it records into the same "
					"file until it answers" : !strcmp(what, "filter") ?
					"the filter is unchanged" : "the filter is changed, but "
					"the trace file does not say so yet", r->pid);
			return -ETIMEDOUT;
		}
		nanosleep(&tick, NULL);
	}
	return 0;
}

/* Flip the switch and wait until the recorder has written the change. */
static int switch_recording(struct recording *r, bool off)
{
	const char *done = off ? "stopped" : "started";
	int err;

	/* one `tracebpf ctl` at a time: two with opposite verbs would mix
	 * their writes (every BPF map fd shares one inode, so this is one
	 * lock for all of them, held only for a few milliseconds) */
	if (flock(r->fd, LOCK_EX)) {
		ERR("failed to lock recording %u's control map: %s", r->pid, strerror(errno));
		return -errno;
	}
	if (r->m[TB_CTL_STATE].want_off == (off ? 1u : 0u) &&
	    r->m[TB_CTL_RECORDER].ts == r->m[TB_CTL_STATE].ts) {
		printf("recording %u is already %s\n", r->pid, done);
		return 0;
	}
	err = wait_ack(r, tb_ctl_ask(r->m, off, getpid()), off ? "stop" : "start");
	if (err)
		return err;
	err = __atomic_load_n(&r->m[TB_CTL_RECORDER].err, __ATOMIC_RELAXED);
	if (err) {
		ERR("recording %u %s, but failed to attach to some probes again: %s", r->pid,
		    done, strerror(-err));
		fprintf(stderr, "tracebpf: hint: the recorder said which on its stderr; their "
				"events are missing from now on\n");
		return err;
	}
	printf("recording %u %s\n", r->pid, done);
	return 0;
}

/* `ctl restart [-o FILE]`: the recorder closes its file and goes on in
 * FILE (absolute here: the recorder has its own working directory), or
 * in the next automatic name. */
static int restart_recording(struct recording *r, const char *out)
{
	struct tb_ctl *st = &r->m[TB_CTL_STATE];
	char full[2 * PATH_MAX + 2], cwd[PATH_MAX];
	int err;

	if (!strcmp(r->m[TB_CTL_RECORDER].path, "<stdout>")) {
		ERR("recording %u writes its trace to stdout: there is no file to restart", r->pid);
		fprintf(stderr, "tracebpf: hint: record with -o FILE to cut a recording into "
				"files\n");
		return -EINVAL;
	}
	full[0] = '\0';
	if (out && out[0] != '/' && getcwd(cwd, sizeof(cwd)))
		snprintf(full, sizeof(full), "%s/%s", cwd, out);
	else if (out)
		snprintf(full, sizeof(full), "%s", out);
	if (strlen(full) >= TB_CTL_PATH_MAX) {   /* STATE's path holds it */
		ERR("failed to restart recording %u in '%s': the path is longer than %d bytes",
		    r->pid, full, TB_CTL_PATH_MAX - 1);
		fprintf(stderr, "tracebpf: hint: give a shorter path (run ctl from its "
				"directory)\n");
		return -ENAMETOOLONG;
	}
	if (flock(r->fd, LOCK_EX)) {
		ERR("failed to lock recording %u's control map: %s", r->pid, strerror(errno));
		return -errno;
	}
	memcpy(st->path, full, sizeof(st->path));
	__atomic_store_n(&st->action, TB_CTL_ACT_RESTART, __ATOMIC_RELEASE);
	err = wait_ack(r, tb_ctl_ask(r->m, st->want_off, getpid()), "restart");
	if (!err && (err = __atomic_load_n(&r->m[TB_CTL_RECORDER].err, __ATOMIC_RELAXED))) {
		ERR("failed to restart recording %u: %s", r->pid, strerror(-err));
		fprintf(stderr, "tracebpf: hint: the recorder said why on its stderr; it goes "
				"on in %.*s\n", TB_CTL_PATH_MAX, r->m[TB_CTL_RECORDER].path);
	} else if (!err) {
		printf("recording %u: now writing %.*s\n", r->pid, TB_CTL_PATH_MAX,
		       r->m[TB_CTL_RECORDER].path);
	}
	__atomic_store_n(&st->action, 0u, __ATOMIC_RELEASE);   /* if it did not */
	return err;
}

struct ctl_args {
	const char *verb;
	const char *action;    /* filter: add, remove or clear */
	const char *clear_kind;   /* filter clear tid|pid (NULL: both) */
	bool json;             /* status --json */
	bool sched;            /* enable|disable --sched */
	const char *tp;        /* enable|disable -e SUBSYS:EVENT */
	const char *session;
	long recorder;
	__u32 ids[2][TB_FILTER_MAX];   /* --tid, --pid */
	int nids[2];
	const char *cats[64];  /* enable|disable CATEGORY... (globs) */
	int ncats;
	const char *out;       /* restart -o FILE */
};


/* One set of the filter changed as `action` says; its bit in *filter. */
static int change_set(struct recording *r, const struct ctl_args *a, int k, __u32 *filter)
{
	__u8 one = 1;
	__u32 key;
	int fd = bpf_map_get_fd_by_id(r->m[TB_CTL_RECORDER].set_id[k]), err = 0;

	if (fd < 0) {
		ERR("failed to open recording %u's set of %s: %s", r->pid, tb_ctl_kind_name[k],
		    strerror(errno));
		return -errno;
	}
	if (!strcmp(a->action, "clear")) {
		while (!bpf_map_get_next_key(fd, NULL, &key))
			bpf_map_delete_elem(fd, &key);
		*filter &= ~tb_ctl_kind_bit[k];
	}
	for (int i = 0; i < a->nids[k] && !strcmp(a->action, "add"); i++)
		if (bpf_map_update_elem(fd, &a->ids[k][i], &one, BPF_ANY)) {
			err = -errno;
			ERR("failed to add %u to recording %u's %s: %s", a->ids[k][i], r->pid,
			    tb_ctl_kind_name[k], err == -E2BIG ? "the set is full" : strerror(-err));
			if (err == -E2BIG)
				fprintf(stderr, "tracebpf: hint: a set holds %d ids: take some out "
						"('filter remove') or filter by process (--pid)\n",
					TB_FILTER_MAX);
			break;
		}
	for (int i = 0; i < a->nids[k] && !strcmp(a->action, "remove"); i++)
		bpf_map_delete_elem(fd, &a->ids[k][i]);   /* one not there: nothing to do */
	if (!strcmp(a->action, "add") && !err)
		*filter |= tb_ctl_kind_bit[k];
	close(fd);
	return err;
}

/* `ctl filter add|remove|clear`: the kernel side's sets and switch, written
 * here (the probes and the next drain apply them). */
static int filter_recording(struct recording *r, const struct ctl_args *a)
{
	__u32 filter;
	int err = 0;
	bool all = !a->nids[0] && !a->nids[1] && !a->clear_kind;

	if (flock(r->fd, LOCK_EX)) {
		ERR("failed to lock recording %u's control map: %s", r->pid, strerror(errno));
		return -errno;
	}
	/* a request that changes nothing: the recorder drains every ring
	 * first, so what was emitted before this command is judged by the
	 * filter it was emitted under (the fast path's events are judged
	 * when drained) */
	err = wait_ack(r, tb_ctl_ask(r->m, r->m[TB_CTL_STATE].want_off, getpid()), "filter");
	if (err)
		return err;
	filter = __atomic_load_n(&r->m[TB_CTL_STATE].filter, __ATOMIC_ACQUIRE);
	for (int k = 0; k < 2 && !err; k++)
		if (a->nids[k] || all || (a->clear_kind && !strcmp(a->clear_kind, k ? "pid" : "tid")))
			err = change_set(r, a, k, &filter);
	__atomic_store_n(&r->m[TB_CTL_STATE].filter, filter, __ATOMIC_RELEASE);
	/* and once more: the recorder logs the filter in its file */
	if (!err)
		err = wait_ack(r, tb_ctl_ask(r->m, r->m[TB_CTL_STATE].want_off, getpid()),
			       "log the filter of");
	if (!filter)
		printf("recording %u: no filter, every traced thread's events\n", r->pid);
	tb_ctl_print_filter(r);
	return err;
}

/* The tracefs id of SUBSYS:EVENT, or a negative errno. */
static long tracepoint_id(const char *spec)
{
	char path[320];
	size_t sys = strcspn(spec, ":");
	long id = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/tracing/events/%.*s/%s/id", (int)sys, spec,
		 spec + sys + 1);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (fscanf(f, "%ld", &id) != 1)
		id = -EINVAL;
	fclose(f);
	return id;
}

/* Switches the scheduler's events (TB_KOFF_SCHED) on or off. */
static int switch_sched(struct recording *r, bool on)
{
	struct tb_ctl_stats st;
	__u32 *koff = &r->m[TB_CTL_STATE].kernel_off;

	if (tb_ctl_read_stats(r, &st) && strncmp(st.kernel, "sched", 5)) {
		ERR("recording %u records no scheduler events", r->pid);
		fprintf(stderr, "tracebpf: hint: they are on unless record is given --no-sched\n");
		return -ENOENT;
	}
	if (on)
		__atomic_fetch_and(koff, ~TB_KOFF_SCHED, __ATOMIC_RELEASE);
	else
		__atomic_fetch_or(koff, TB_KOFF_SCHED, __ATOMIC_RELEASE);
	printf("recording %u: scheduler events %s\n", r->pid, on ? "on" : "off");
	return 0;
}

/* Has the recorder attach tracepoint spec now (it records it from then
 * on). */
static int add_tp(struct recording *r, const char *spec)
{
	struct tb_ctl *st = &r->m[TB_CTL_STATE];
	int err;

	memset(st->path, 0, sizeof(st->path));
	strncpy(st->path, spec, sizeof(st->path) - 1);
	__atomic_store_n(&st->action, TB_CTL_ACT_EVENT, __ATOMIC_RELEASE);
	err = wait_ack(r, tb_ctl_ask(r->m, st->want_off, getpid()), "enable");
	__atomic_store_n(&st->action, 0u, __ATOMIC_RELEASE);   /* if it did not */
	if (!err && (err = __atomic_load_n(&r->m[TB_CTL_RECORDER].err, __ATOMIC_RELAXED))) {
		ERR("failed to enable %s in recording %u: %s", spec, r->pid, strerror(-err));
		fprintf(stderr, "tracebpf: hint: %s\n", err == -ENOTSUP ?
			"it records no kernel events (--no-sched without -e): record again "
			"without --no-sched or with -e" : "the recorder said why on its stderr");
		return err;
	}
	if (!err)
		printf("recording %u: %s on (attached now)\n", r->pid, spec);
	return err;
}

/* Switches one -e tracepoint of the recording on or off; one it does not
 * record is attached when switched on. */
static int switch_tp(struct recording *r, const char *spec, bool on)
{
	long id = tracepoint_id(spec);
	__u32 key = (__u32)id;
	__u8 v = !on, old;
	int fd = -1, err = 0;

	if (id < 0) {
		ERR("failed to find tracepoint %s: %s", spec, strerror((int)-id));
		fprintf(stderr, "tracebpf: hint: '/sys/kernel/tracing/available_events' lists "
				"them (SUBSYS:EVENT)\n");
		return (int)id;
	}
	if (!r->m[TB_CTL_RECORDER].tp_off_id ||
	    (fd = bpf_map_get_fd_by_id(r->m[TB_CTL_RECORDER].tp_off_id)) < 0 ||
	    bpf_map_lookup_elem(fd, &key, &old)) {
		if (fd >= 0)
			close(fd);
		if (on && r->m[TB_CTL_RECORDER].tp_off_id)
			return add_tp(r, spec);
		ERR("recording %u does not record %s", r->pid, spec);
		fprintf(stderr, "tracebpf: hint: %s ('tracebpf ctl status' lists what it "
				"records)\n", on ? "it records no kernel events (--no-sched "
				"without -e)" : "'enable -e' attaches it");
		return -ENOENT;
	} else if (bpf_map_update_elem(fd, &key, &v, BPF_EXIST)) {
		err = -errno;
		ERR("failed to switch %s %s: %s", spec, on ? "on" : "off", strerror(-err));
	} else {
		printf("recording %u: %s %s\n", r->pid, spec, on ? "on" : "off");
	}
	if (fd >= 0)
		close(fd);
	return err;
}

/* The categories of a->cats switched in the recording's session map (the
 * recorder applies them when it handles the next request). */
static int switch_cats(struct recording *r, const struct ctl_args *a, bool on)
{
	static struct tracebpf_cats k;
	const char *why = "";
	__u32 key = 0;
	int fd = -1, err = 0;

	if (!r->m[TB_CTL_RECORDER].cats_id ||
	    (fd = bpf_map_get_fd_by_id(r->m[TB_CTL_RECORDER].cats_id)) < 0 ||
	    bpf_map_lookup_elem(fd, &key, &k)) {
		ERR("failed to read recording %u's categories: %s", r->pid,
		    fd < 0 && r->m[TB_CTL_RECORDER].cats_id ? strerror(errno) :
		    "its recorder is older than this tracebpf");
		if (fd >= 0)
			close(fd);
		return -ENOENT;
	}
	for (int i = 0; i < a->ncats && !err; i++)
		if ((err = tb_cats_change(&k, a->cats[i], on, &why)))
			ERR("failed to %s '%s': %s", a->verb, a->cats[i], why);
	k.gen += 2;
	if (!err && bpf_map_update_elem(fd, &key, &k, BPF_EXIST)) {
		err = -errno;
		ERR("failed to write recording %u's categories: %s", r->pid, strerror(-err));
	}
	close(fd);
	return err;
}

/* `ctl enable|disable [CATEGORY...] --sched -e SUBSYS:EVENT`: after a
 * request that has the recorder drain every ring, as `filter` does (and
 * apply the categories written before it). */
static int switch_kernel(struct recording *r, const struct ctl_args *a)
{
	bool on = !strcmp(a->verb, "enable");
	int err = 0;

	if (flock(r->fd, LOCK_EX)) {
		ERR("failed to lock recording %u's control map: %s", r->pid, strerror(errno));
		return -errno;
	}
	if (a->ncats)
		err = switch_cats(r, a, on);
	if (!err)
		err = wait_ack(r, tb_ctl_ask(r->m, r->m[TB_CTL_STATE].want_off, getpid()), a->verb);
	if (!err && a->ncats)
		tb_ctl_print_cats(r);
	if (!err && a->sched)
		err = switch_sched(r, on);
	if (!err && a->tp)
		err = switch_tp(r, a->tp, on);
	return err;
}

/* --tid or --pid LIST into the ids of kind k. */
static void parse_ids(struct argp_state *state, struct ctl_args *a, int k, char *arg)
{
	char *end, *tok, *save;
	long v;

	for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		errno = 0;
		v = strtol(tok, &end, 10);
		if (errno || *end || v <= 0 || v > 0x7fffffff)
			argp_error(state, "invalid %s id '%s': give positive ids", k ? "process" :
				   "thread", tok);
		if (a->nids[k] == TB_FILTER_MAX)
			argp_error(state, "too many ids (at most %d)", TB_FILTER_MAX);
		a->ids[k][a->nids[k]++] = (__u32)v;
	}
}

static const struct argp_option ctl_options[] = {
	{ "session", 's', "NAME", 0, "The session to act on (record --session; 'ctl list' "
				     "lists them)", 0 },
	{ "recorder", 'r', "PID", 0, "The recording to act on: its recorder's process id", 0 },
	{ "json", 'j', NULL, 0, "status: as JSON", 0 },
	{ "sched", 'S', NULL, 0, "enable, disable: the scheduler's and power events", 0 },
	{ "event", 'e', "SUBSYS:EVENT", 0, "enable, disable: this -e tracepoint of the "
					  "recording", 0 },
	{ "tid", 't', "TID[,TID...]", 0, "filter: these threads", 0 },
	{ "wait", 'w', "SEC", 0, "Wait at most SEC seconds for the recorder to confirm a change "
				 "(default 5)", 0 },
	{ "output", 'o', "FILE", 0, "restart: the new trace file (default: the first file's "
				    "name, then .1, .2, ...)", 0 },
	{ "pid", 'p', "PID[,PID...]", 0, "filter: these processes", 0 },
	{ 0 },
};

/* The whole command line: what goes with what. */
static void check_args(struct argp_state *state, const struct ctl_args *a)
{
	bool ids = a->nids[0] || a->nids[1];

	if (!a->verb)
		argp_error(state, "no command: start, stop, restart, status, list, filter, enable or "
			   "disable");
	if (!strcmp(a->verb, "filter") && !a->action)
		argp_error(state, "filter: add, remove or clear?");
	if (a->json && strcmp(a->verb, "status"))
		argp_error(state, "--json goes with 'status'");
	if (a->out && strcmp(a->verb, "restart"))
		argp_error(state, "-o goes with 'restart'");
	if (ids && !a->action)
		argp_error(state, "--tid and --pid go with 'filter add|remove|clear'");
	if (a->action && strcmp(a->action, "clear") && !ids)
		argp_error(state, "filter %s: give --tid LIST or --pid LIST", a->action);
	if (a->action && !strcmp(a->action, "clear") && ids)
		argp_error(state, "filter clear drops a whole set: 'filter clear tid', "
			   "'filter clear pid' or 'filter clear' (both)");
	if (!strcmp(a->verb, "enable") || !strcmp(a->verb, "disable")) {
		if (!a->sched && !a->tp && !a->ncats)
			argp_error(state, "%s: give categories (globs), --sched and/or -e "
				   "SUBSYS:EVENT", a->verb);
	} else if (a->sched || a->tp) {
		argp_error(state, "--sched and -e go with 'enable' or 'disable'");
	}
}

static error_t ctl_parse(int key, char *arg, struct argp_state *state)
{
	struct ctl_args *a = state->input;
	char *end;

	switch (key) {
	case 's':
		if (!tb_session_name_ok(arg))
			argp_error(state, "invalid session name '%s': 1 to %d letters, digits, "
				   "'.', '_' or '-' ('tracebpf ctl list' lists them)", arg,
				   TB_CTL_SESSION_MAX - 1);
		a->session = arg;
		break;
	case 'r':
		errno = 0;
		a->recorder = strtol(arg, &end, 10);
		if (errno || *end || a->recorder <= 0 || a->recorder > 0x7fffffff)
			argp_error(state, "invalid recorder pid '%s': give a positive process id "
				   "('tracebpf ctl list' lists them)", arg);
		break;
	case 't':
	case 'p':
		parse_ids(state, a, key == 'p', arg);
		break;
	case 'j':
		a->json = true;
		break;
	case 'o':
		a->out = arg;
		break;
	case 'w': {
		double w = strtod(arg, &end);

		if (*end || !(w >= 0.1 && w <= 3600))
			argp_error(state, "invalid wait '%s': give seconds, 0.1 to 3600", arg);
		ack_timeout_ns = (__u64)(w * 1e9);
		break;
	}
	case 'S':
		a->sched = true;
		break;
	case 'e':
		if (!strchr(arg, ':') || strpbrk(arg, "*?[/") || arg[0] == ':' ||
		    !arg[strcspn(arg, ":") + 1])
			argp_error(state, "invalid tracepoint '%s': give one SUBSYS:EVENT the "
				   "recording records (no globs)", arg);
		a->tp = arg;
		break;
	case ARGP_KEY_ARG:
		if (a->action && !strcmp(a->action, "clear") && !a->clear_kind) {
			if (strcmp(arg, "tid") && strcmp(arg, "pid"))
				argp_error(state, "filter clear: 'tid', 'pid' or nothing (both), "
					   "not '%s'", arg);
			a->clear_kind = arg;
			break;
		}
		if (a->verb && !strcmp(a->verb, "filter") && !a->action) {
			if (strcmp(arg, "add") && strcmp(arg, "remove") && strcmp(arg, "clear"))
				argp_error(state, "unknown filter action '%s': add, remove or "
					   "clear", arg);
			a->action = arg;
			break;
		}
		if (a->verb && (!strcmp(a->verb, "enable") || !strcmp(a->verb, "disable"))) {
			if (a->ncats == (int)(sizeof(a->cats) / sizeof(a->cats[0])))
				argp_error(state, "too many categories (at most 64 at once)");
			a->cats[a->ncats++] = arg;
			break;
		}
		if (a->verb)
			argp_error(state, "one command only, not '%s' after '%s'", arg, a->verb);
		if (strcmp(arg, "start") && strcmp(arg, "stop") && strcmp(arg, "status") &&
		    strcmp(arg, "list") && strcmp(arg, "filter") && strcmp(arg, "enable") &&
		    strcmp(arg, "disable") && strcmp(arg, "restart"))
			argp_error(state, "unknown command '%s': start, stop, restart, status, list, "
				   "filter, enable or disable", arg);
		a->verb = arg;
		break;
	case ARGP_KEY_END:
		check_args(state, a);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* The recording --session or --recorder names (NULL when neither is
 * given); says so when none matches, and sets *err. */
static struct recording *chosen(const struct ctl_args *a, struct recording *v, int n, int *err)
{
	for (int i = 0; i < n; i++)
		if ((!a->session || !strcmp(v[i].session, a->session)) &&
		    (!a->recorder || v[i].pid == (__u32)a->recorder))
			return a->session || a->recorder ? &v[i] : NULL;
	if (a->session && a->recorder)
		ERR("no tracebpf session named '%s' has recorder %ld", a->session, a->recorder);
	else if (a->session)
		ERR("no tracebpf session named '%s' is running", a->session);
	else if (a->recorder)
		ERR("no tracebpf recording runs in process %ld", a->recorder);
	else
		return NULL;
	fprintf(stderr, "tracebpf: hint: 'tracebpf ctl list' lists the sessions and their "
			"recorders' process ids\n");
	*err = -ESRCH;
	return NULL;
}

/* Several run and none was named: never guess. */
static int refuse_to_guess(const struct recording *v, int n, const char *verb)
{
	ERR("%d recordings are running: which one should %s?", n, verb);
	fprintf(stderr, "tracebpf: hint: choose one with --session NAME (or --recorder PID):");
	for (int i = 0; i < n; i++)
		fprintf(stderr, "%s %s (recorder %u)", i ? "," : "",
			v[i].session[0] ? v[i].session : "-", v[i].pid);
	fprintf(stderr, "\n");
	return -EINVAL;
}

int tb_cmd_ctl(int argc, char **argv, const char *cmdline)
{
	static const struct argp argp = { ctl_options, ctl_parse,
		"start|stop|status|list\nrestart [-o FILE]\nfilter add|remove [--tid LIST] [--pid LIST]\nfilter clear [tid|pid]\nenable|disable [CATEGORY...] [--sched] [-e SUBSYS:EVENT]",
		"Stop and start a running recording without ending it: 'stop' switches "
		"recording off in the kernel (processes are still followed, nothing else "
		"is recorded), 'start' switches it back on, 'status' says what each "
		"recording does, 'list' lists the sessions, 'filter' records only the "
		"application events of some threads or processes, 'restart' closes the "
		"trace file and goes on in a new one, 'enable' and 'disable' "
		"switch categories (globs) and kernel events. With several recordings "
		"running, --session NAME says which. 'tracebpf record --paused' starts "
		"one switched off.", NULL, NULL, NULL };
	struct ctl_args a = {};
	struct recording *v = NULL, *r = NULL;
	int n = 0, err, i;

	(void)cmdline;
	argp_parse(&argp, argc, argv, 0, NULL, &a);
	err = find_recordings(&v, &n);
	if (err) {
		ERR("failed to list the running recordings: %s", strerror(-err));
		if (err == -EPERM && geteuid())
			fprintf(stderr, "tracebpf: hint: run as root, like the recorder "
					"(sudo tracebpf ctl %s)\n", a.verb);
		else
			tb_hint_bpf(err, NULL);
		return 1;
	}
	r = chosen(&a, v, n, &err);
	if (err) {
		/* said */
	} else if (!n && !strcmp(a.verb, "list")) {
		tb_ctl_print_list(v, n);
	} else if (!n) {
		ERR("no tracebpf recording is running");
		fprintf(stderr, "tracebpf: hint: start one with 'sudo tracebpf record -p PID' or "
				"'sudo tracebpf record -- CMD' (--paused starts it stopped)\n");
		err = -ESRCH;
	} else if (!strcmp(a.verb, "list")) {
		tb_ctl_print_list(r ? r : v, r ? 1 : n);
	} else if (!strcmp(a.verb, "status") && a.json) {
		err = tb_ctl_print_json(v, n, r);
	} else if (!strcmp(a.verb, "status")) {
		for (i = 0; i < n; i++)
			if (!r || r == &v[i])
				tb_ctl_print_status(&v[i]);
	} else if (!r && n > 1) {
		err = refuse_to_guess(v, n, a.verb);
	} else if (!strcmp(a.verb, "filter")) {
		err = filter_recording(r ? r : &v[0], &a);
	} else if (!strcmp(a.verb, "enable") || !strcmp(a.verb, "disable")) {
		err = switch_kernel(r ? r : &v[0], &a);
	} else if (!strcmp(a.verb, "restart")) {
		err = restart_recording(r ? r : &v[0], a.out);
	} else {
		err = switch_recording(r ? r : &v[0], !strcmp(a.verb, "stop"));
	}
	free_recordings(v, n);
	return err ? 1 : 0;
}
