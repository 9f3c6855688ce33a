// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* ctl_status.c - what `tracebpf ctl` prints of a running recording:
 * `list`, `status` (text and --json) and the filters in effect, read from
 * its control map and the maps whose ids it holds (ctl_int.h): its
 * figures and its categories. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "ctl/ctl.h"
#include "ctl/ctl_int.h"
#include "util/json.h"
#include "util/print.h"

/* The ids in one of the filter's sets, in map order: printed as a list. */
static void print_set(int fd)
{
	__u32 key, next, *prev = NULL;
	int n = 0;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		printf("%s%u", n++ ? ", " : " ", next);
		key = next;
		prev = &key;
	}
	if (!n)
		printf(" none");
}

/* What the filters let through, a line per set in effect. */
void tb_ctl_print_filter(const struct recording *r)
{
	__u32 filter = __atomic_load_n(&r->m[TB_CTL_STATE].filter, __ATOMIC_ACQUIRE);

	for (int k = 0; k < 2; k++) {
		int fd;

		if (!(filter & tb_ctl_kind_bit[k]))
			continue;
		fd = bpf_map_get_fd_by_id(r->m[TB_CTL_RECORDER].set_id[k]);
		printf("recording %u: only the application events of %s", r->pid, tb_ctl_kind_name[k]);
		if (fd < 0)
			printf(" (unreadable: %s)", strerror(errno));
		else
			print_set(fd);
		printf("\n");
		if (fd >= 0)
			close(fd);
	}
}

/* On, stopped, or asked to change: one word for `ctl list`. */
static const char *state_word(const struct recording *r)
{
	const struct tb_ctl *st = &r->m[TB_CTL_STATE], *rec = &r->m[TB_CTL_RECORDER];

	if (rec->ts != st->ts)
		return st->want_off ? "stopping" : "starting";
	return st->off ? "stopped" : "on";
}

/* `ctl list`: the running sessions, a line each. */
void tb_ctl_print_list(const struct recording *v, int n)
{
	printf("%-*s %-8s %-8s %s\n", TB_CTL_SESSION_MAX - 1, "SESSION", "RECORDER", "STATE",
	       "OUTPUT");
	for (int i = 0; i < n; i++)
		printf("%-*s %-8u %-8s %.*s\n", TB_CTL_SESSION_MAX - 1,
		       v[i].session[0] ? v[i].session : "-", v[i].pid, state_word(&v[i]),
		       TB_CTL_PATH_MAX, v[i].m[TB_CTL_RECORDER].path);
}

/* What is in effect (the kernel side's switch), and a request the recorder
 * has not answered yet. */
static void print_status(const struct recording *r)
{
	const struct tb_ctl *st = &r->m[TB_CTL_STATE], *rec = &r->m[TB_CTL_RECORDER];
	char path[TB_CTL_PATH_MAX + 1];

	snprintf(path, sizeof(path), "%.*s", TB_CTL_PATH_MAX, rec->path);
	if (!st->off)
		printf("recording %u: on, writing %s\n", r->pid, path);
	else if (!st->want_off)   /* a start not answered yet */
		printf("recording %u: stopped, writing %s\n", r->pid, path);
	else if (st->pid == r->pid)
		printf("recording %u: stopped since it started (--paused), writing %s\n",
		       r->pid, path);
	else
		printf("recording %u: stopped for %.1f s (by process %u), writing %s\n", r->pid,
		       (tb_ctl_mono_ns() - st->ts) / 1e9, st->pid, path);
	if (rec->ts != st->ts)
		printf("recording %u: the %s asked by process %u waits for the recorder\n",
		       r->pid, st->want_off ? "stop" : "start", st->pid);
}

/* The recorder's categories, as its category map holds them. */
bool tb_ctl_read_cats(const struct recording *r, struct tracebpf_cats *k)
{
	__u32 key = 0;
	int fd = r->m[TB_CTL_RECORDER].cats_id ?
		 bpf_map_get_fd_by_id(r->m[TB_CTL_RECORDER].cats_id) : -1;
	bool ok = fd >= 0 && !bpf_map_lookup_elem(fd, &key, k);

	if (fd >= 0)
		close(fd);
	return ok && k->len <= TRACEBPF_CATS_BYTES;
}

/* The recorder's last figures (a consistent copy: seq even and the same
 * before and after); false when it has published none yet. */
bool tb_ctl_read_stats(const struct recording *r, struct tb_ctl_stats *out)
{
	const struct tb_ctl_stats *s = (const struct tb_ctl_stats *)&r->m[TB_CTL_STATS];

	for (int tries = 0; tries < 100; tries++) {
		__u32 seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);

		if (seq & 1)
			continue;
		memcpy(out, (const void *)s, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&s->seq, __ATOMIC_RELAXED) == seq)
			return out->ts != 0;
	}
	return false;
}

/* The -e tracepoints `ctl disable -e` switched off. */
static unsigned tps_off(const struct recording *r)
{
	__u32 key, next, *prev = NULL;
	unsigned n = 0;
	__u8 v;
	int fd;

	if (!r->m[TB_CTL_RECORDER].tp_off_id ||
	    (fd = bpf_map_get_fd_by_id(r->m[TB_CTL_RECORDER].tp_off_id)) < 0)
		return 0;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		n += !bpf_map_lookup_elem(fd, &next, &v) && v;
		key = next;
		prev = &key;
	}
	close(fd);
	return n;
}

/* `status`'s lines after the first: the session, its targets and
 * figures, its drops, the kernel events it records. */
#define MAX_PROGS 64

/* The ids of the maps program id uses (at most 64 into maps): their count,
 * or -1 when the program is gone. */
static int prog_maps(__u32 id, __u32 maps[64])
{
	struct bpf_prog_info pi = { .nr_map_ids = 64, .map_ids = (__u64)(unsigned long)maps };
	__u32 len = sizeof(pi);
	int fd = bpf_prog_get_fd_by_id(id), err;

	if (fd < 0)
		return -1;
	err = bpf_obj_get_info_by_fd(fd, &pi, &len);
	close(fd);
	return err ? -1 : (int)(pi.nr_map_ids < 64 ? pi.nr_map_ids : 64);
}

static bool has_id(const __u32 *v, int n, __u32 id)
{
	for (int i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

/* The maps of the session whose control map is ctl_id (at most 256 into
 * set): those the programs that use the control map use, the .rodata
 * each of its objects binds to all its programs among them. */
static int session_maps(__u32 ctl_id, __u32 set[256])
{
	__u32 id = 0, maps[64];
	int n = 0;

	while (!bpf_prog_get_next_id(id, &id)) {
		int m = prog_maps(id, maps);

		if (m <= 0 || !has_id(maps, m, ctl_id))
			continue;
		for (int i = 0; i < m; i++)
			if (n < 256 && !has_id(set, n, maps[i]))
				set[n++] = maps[i];
	}
	return n;
}

/* The session's BPF objects: its programs, those that use one of its maps
 * (the ids of at most MAX_PROGS into ids; every map a recorder creates is
 * its own), the control map's id and the session map's (its categories:
 * user/record/record_filter.c). The count of programs. */
static int session_objects(const struct recording *r, __u32 *ids, __u32 *ctl_id)
{
	struct bpf_map_info mi = {};
	__u32 len = sizeof(mi), id = 0, maps[64], set[256];
	int n = 0, nset;

	*ctl_id = bpf_obj_get_info_by_fd(r->fd, &mi, &len) ? 0 : mi.id;
	nset = *ctl_id ? session_maps(*ctl_id, set) : 0;
	while (nset && n < MAX_PROGS && !bpf_prog_get_next_id(id, &id)) {
		int m = prog_maps(id, maps);

		for (int i = 0; i < m; i++)
			if (has_id(set, nset, maps[i])) {
				ids[n++] = id;
				break;
			}
	}
	return n;
}

static void print_objects(const struct recording *r)
{
	__u32 ids[MAX_PROGS], ctl_id;
	int n = session_objects(r, ids, &ctl_id);

	printf("recording %u: BPF maps tb_ctl %u, session map %u; %d programs:", r->pid,
	       ctl_id, r->m[TB_CTL_RECORDER].cats_id, n);
	for (int i = 0; i < n; i++)
		printf("%s %u", i ? "," : "", ids[i]);
	printf("\n");
}

static void json_objects(struct tb_json *j, const struct recording *r)
{
	__u32 ids[MAX_PROGS], ctl_id;
	int n = session_objects(r, ids, &ctl_id);

	tb_json_key(j, "bpf");
	tb_json_begin_object(j);
	tb_json_kuint(j, "ctl_map", ctl_id);
	tb_json_kuint(j, "session_map", r->m[TB_CTL_RECORDER].cats_id);
	tb_json_key(j, "programs");
	tb_json_begin_array(j);
	for (int i = 0; i < n; i++)
		tb_json_uint(j, ids[i]);
	tb_json_end_array(j);
	tb_json_end_object(j);
}

static void print_details(const struct recording *r)
{
	struct tb_ctl_stats s;
	char size[32];
	__u32 n;

	printf("recording %u: session %s\n", r->pid, r->session[0] ? r->session : "-");
	if (!tb_ctl_read_stats(r, &s)) {
		printf("recording %u: no figures yet (the recorder writes them once a "
		       "second)\n", r->pid);
		return;
	}
	n = s.ntargets < TB_CTL_TARGETS ? s.ntargets : TB_CTL_TARGETS;
	printf("recording %u: %u traced process%s:", r->pid, s.ntargets,
	       s.ntargets == 1 ? "" : "es");
	for (__u32 i = 0; i < n; i++)
		printf("%s %u", i ? "," : "", s.targets[i]);
	printf("%s\n", s.ntargets > n ? ", ..." : "");
	tb_fmt_bytes(size, sizeof(size), s.bytes);
	printf("recording %u: %llu events, %llu/s; %s written\n", r->pid,
	       (unsigned long long)s.events, (unsigned long long)s.rate, size);
	printf("recording %u: dropped %llu application and %llu kernel events (per CPU:",
	       r->pid, (unsigned long long)s.drops_app, (unsigned long long)s.drops_kern);
	for (__u32 i = 0; i < s.ncpus && i < TB_CTL_STAT_CPUS; i++)
		printf("%s %llu", i ? "," : "", (unsigned long long)s.cpu_drops[i]);
	printf("%s)\n", s.ncpus > TB_CTL_STAT_CPUS ? ", ..." : "");
	printf("recording %u: kernel events: %.*s", r->pid, TB_CTL_EVENTS,
	       s.kernel[0] ? s.kernel : "none");
	if (r->m[TB_CTL_STATE].kernel_off & TB_KOFF_SCHED)
		printf("; scheduler events switched off");
	if (tps_off(r))
		printf("; %u tracepoint%s switched off", tps_off(r), tps_off(r) == 1 ? "" : "s");
	printf("\n");
}

/* One filter set as a JSON array, or null when not in effect. */
static void json_set(struct tb_json *j, const struct recording *r, int k)
{
	__u32 filter = __atomic_load_n(&r->m[TB_CTL_STATE].filter, __ATOMIC_ACQUIRE);
	__u32 key, next, *prev = NULL;
	int fd;

	if (!(filter & tb_ctl_kind_bit[k]) ||
	    (fd = bpf_map_get_fd_by_id(r->m[TB_CTL_RECORDER].set_id[k])) < 0) {
		tb_json_null(j);
		return;
	}
	tb_json_begin_array(j);
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		tb_json_uint(j, next);
		key = next;
		prev = &key;
	}
	tb_json_end_array(j);
	close(fd);
}

/* A fixed-size text field of the map, cut at its NUL. */
static void json_field(struct tb_json *j, const char *key, const char *s, size_t max)
{
	tb_json_key(j, key);
	tb_json_string_n(j, s, strnlen(s, max));
}

/* The recorder's figures, into the recording's object. */
static void json_stats(struct tb_json *j, const struct recording *r,
		       const struct tb_ctl_stats *s)
{
	tb_json_kuint(j, "bytes", s->bytes);
	tb_json_kuint(j, "events", s->events);
	tb_json_kuint(j, "events_per_s", s->rate);
	tb_json_key(j, "drops");
	tb_json_begin_object(j);
	tb_json_kuint(j, "application", s->drops_app);
	tb_json_kuint(j, "kernel", s->drops_kern);
	tb_json_key(j, "per_cpu");
	tb_json_begin_array(j);
	for (__u32 i = 0; i < s->ncpus && i < TB_CTL_STAT_CPUS; i++)
		tb_json_uint(j, s->cpu_drops[i]);
	tb_json_end_array(j);
	tb_json_end_object(j);
	tb_json_kuint(j, "ntargets", s->ntargets);
	tb_json_key(j, "targets");
	tb_json_begin_array(j);
	for (__u32 i = 0; i < s->ntargets && i < TB_CTL_TARGETS; i++)
		tb_json_uint(j, s->targets[i]);
	tb_json_end_array(j);
	json_field(j, "kernel_events", s->kernel, TB_CTL_EVENTS);
	tb_json_key(j, "sched_off");
	tb_json_bool(j, r->m[TB_CTL_STATE].kernel_off & TB_KOFF_SCHED);
	tb_json_kuint(j, "tracepoints_off", tps_off(r));
}

/* The category rules, in order ("+GLOB" or "-GLOB"), or null. */
static void json_cats(struct tb_json *j, const struct recording *r)
{
	static struct tracebpf_cats k;

	tb_json_key(j, "categories");
	if (!tb_ctl_read_cats(r, &k)) {
		tb_json_null(j);
		return;
	}
	tb_json_begin_array(j);
	for (__u32 i = 0; i < k.len; i += (__u32)strnlen(k.rules + i, k.len - i) + 1)
		tb_json_string_n(j, k.rules + i, strnlen(k.rules + i, k.len - i));
	tb_json_end_array(j);
}

void tb_ctl_print_cats(const struct recording *r)
{
	static struct tracebpf_cats k;
	char desc[512] = "unknown (a recorder older than this tracebpf)";

	if (tb_ctl_read_cats(r, &k))
		tb_cats_describe(k.rules, k.len, desc, sizeof(desc));
	printf("recording %u: categories: %s\n", r->pid, desc);
}

/* One recording's object (docs/tracebpf-ctl.md, "Status"). */
static void json_recording(struct tb_json *j, const struct recording *r)
{
	struct tb_ctl_stats s;

	tb_json_begin_object(j);
	json_field(j, "session", r->session, sizeof(r->session));
	tb_json_kuint(j, "recorder", r->pid);
	tb_json_kstr(j, "state", state_word(r));
	json_field(j, "output", r->m[TB_CTL_RECORDER].path, TB_CTL_PATH_MAX);
	tb_json_key(j, "filters");
	tb_json_begin_object(j);
	tb_json_key(j, "tids");
	json_set(j, r, 0);
	tb_json_key(j, "pids");
	json_set(j, r, 1);
	tb_json_end_object(j);
	json_cats(j, r);
	json_objects(j, r);
	if (tb_ctl_read_stats(r, &s))
		json_stats(j, r, &s);
	tb_json_end_object(j);
}

int tb_ctl_print_json(const struct recording *v, int n, const struct recording *only)
{
	static struct tb_json j;   /* its buffer is 64 KiB */
	int err;

	tb_json_init(&j, stdout);
	tb_json_begin_array(&j);
	for (int i = 0; i < n; i++)
		if (!only || only == &v[i])
			json_recording(&j, &v[i]);
	tb_json_end_array(&j);
	err = tb_json_error(&j);
	putchar('\n');
	return err;
}

void tb_ctl_print_status(const struct recording *r)
{
	print_status(r);
	print_details(r);
	tb_ctl_print_cats(r);
	tb_ctl_print_filter(r);
	print_objects(r);
}
