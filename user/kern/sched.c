// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sched.c - load and attach bpf/sched.bpf.c beside record.bpf.c.
 *
 * Why a second object (not programs in record.bpf.c behind autoload
 * switches): the scheduler side is one concern with its own triplet
 * (bpf/sched.bpf.c, user/kern/sched.c, lib/ftrace.c), it can be turned off
 * whole (--no-sched) without touching the USDT side, and a verifier
 * rejection of a scheduler program never prevents user events from being
 * recorded. The maps that must be shared (rings, traced, tb_ctl) are pointed
 * at record.bpf.c's with bpf_map__reuse_fd before loading.
 *
 * Each program exists as a tp_btf/raw_tp pair, both "?" (not loaded by
 * default). For each tracepoint we turn on one of the two after probing:
 * the kernel knows BPF_PROG_TYPE_TRACING and vmlinux BTF has
 * btf_trace_<name> -> tp_btf; otherwise raw_tp if the tracepoint exists;
 * optional ones (cpu_idle, cpu_frequency) are skipped when absent.
 * TRACEBPF_FORCE_RAW_TP=1 in the environment forces the fallback (tests).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <event-parse.h>

#include "kern/kern.h"
#include "format/tbrecords.h"
#include "format/tbctl.h"
#include "sched.skel.h"
#include "format/tbfile.h"

#define ERR(fmt, ...) fprintf(stderr, "tracebpf: record: " fmt "\n", ##__VA_ARGS__)
#define TRACEFS "/sys/kernel/tracing"

struct tp_event {
	char sys[64], name[128];
	char *format;           /* "SYS\0" + the format file */
	size_t format_len;
	int id;
	__u64 cookie;
};

struct tb_sched {
	struct tb_sched_opts o;
	struct sched_bpf *skel;
	struct tp_event *ev;
	int nev;
	struct bpf_link **links;
	int nlinks;
	bool staging;            /* hot programs stage records (bpf/sched.bpf.c) */
	__u32 *taken;            /* after unstage: bytes taken out of each CPU's
				  * staging buffer (stragglers land past them) */
	struct tb_rings rings;   /* kernel events' rings (--kernel-buffer-size) */
	struct tb_gaps gaps;     /* their gap marks (user/kern/gaps.c) */
	struct ring_buffer *rb;  /* polls them (and record.bpf.c's) */
	tb_ring_fn fn;           /* takes their records */
	void *fn_ctx;
};

const char *const tb_sched_tracepoints[TB_SCHED_NTP] = {
	"sched_switch", "sched_waking", "sched_wakeup", "sched_wakeup_new",
	"sched_process_fork", "sched_process_exec", "sched_process_exit", "task_rename",
	"cpu_idle", "cpu_frequency",
};

int tb_sched_parse_select(const char *list, unsigned *select, const char **bad)
{
	static char name[64];
	unsigned sel = TB_SCHED_ALWAYS;
	const char *p = list;

	if (!strcmp(list, "all")) {
		*select = TB_SCHED_ALL;
		return 0;
	}
	for (;;) {
		size_t n = strcspn(p, ",");
		int i;

		for (i = 0; i < TB_SCHED_NTP; i++)
			if (strlen(tb_sched_tracepoints[i]) == n &&
			    !strncmp(p, tb_sched_tracepoints[i], n))
				break;
		if (i == TB_SCHED_NTP) {
			snprintf(name, sizeof(name), "%.*s", (int)(n < 63 ? n : 63), p);
			*bad = name;
			return -EINVAL;
		}
		sel |= 1u << i;
		if (!p[n])
			break;
		p += n + 1;
	}
	*select = sel;
	return 0;
}

int tb_sched_parse_spec(const char *spec, char *sys, size_t syslen, char *ev, size_t evlen)
{
	const char *colon = strchr(spec, ':');
	size_t n;

	if (!colon || strchr(colon + 1, ':'))
		return -EINVAL;
	n = colon - spec;
	if (!n || n >= syslen || !colon[1] || strlen(colon + 1) >= evlen)
		return -EINVAL;
	/* names, '*', '?' and [] globs only: no paths */
	if (strspn(spec, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-*?[]:!")
	    != strlen(spec))
		return -EINVAL;
	memcpy(sys, spec, n);
	sys[n] = 0;
	strcpy(ev, colon + 1);
	return 0;
}

static int read_file(const char *path, char **buf, size_t *len, size_t prefix_room)
{
	size_t cap = 4096 + prefix_room, n = prefix_room;
	char *b = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0 || !b) {
		int err = fd < 0 ? -errno : -ENOMEM;

		if (fd >= 0)
			close(fd);
		free(b);
		return err;
	}
	while ((r = read(fd, b + n, cap - n - 1)) > 0) {
		n += r;
		if (cap - n < 2) {
			char *nb = cap > (1 << 20) ? NULL : realloc(b, cap * 2);

			if (!nb) {
				free(b);
				close(fd);
				return -EFBIG;
			}
			b = nb;
			cap *= 2;
		}
	}
	close(fd);
	if (r < 0) {
		free(b);
		return -errno;
	}
	b[n] = 0;
	*buf = b;
	*len = n;
	return 0;
}

/* tracefs is needed for -e (event ids and formats) and kmem:rss_stat
 * (libbpf attaches a tracepoint by its id there); mount it like bpftool
 * does when a fresh machine has not. why: what needs it. */
int tb_sched_ensure_tracefs(const char *why)
{
	struct stat st;

	if (!stat(TRACEFS "/events", &st))
		return 0;
	if (mount("tracefs", TRACEFS, "tracefs", 0, NULL)) {
		int err = -errno;

		ERR("failed to mount tracefs on '%s': %s", TRACEFS, strerror(-err));
		fprintf(stderr, "tracebpf: hint: %s needs tracefs: mount -t tracefs tracefs %s\n",
			why, TRACEFS);
		return err;
	}
	fprintf(stderr, "tracebpf: record: mounted tracefs on %s (needed for %s)\n", TRACEFS, why);
	return 0;
}

/* Read the event's format, learn its id, fixed size and whether it has
 * dynamic fields, with libtraceevent (the converter decodes with the same
 * text, saved in the trace). */
static int load_event(struct tp_event *e)
{
	char path[512];
	struct tep_handle *tep;
	struct tep_event *te = NULL;
	struct tep_format_field *f;
	size_t slen = strlen(e->sys) + 1;
	int fixed = 0, dyn = 0, err;

	snprintf(path, sizeof(path), TRACEFS "/events/%s/%s/format", e->sys, e->name);
	err = read_file(path, &e->format, &e->format_len, slen);
	if (err) {
		ERR("failed to read the format of tracepoint '%s:%s': %s", e->sys, e->name,
		    strerror(-err));
		return err;
	}
	memcpy(e->format, e->sys, slen);
	tep = tep_alloc();
	if (!tep)
		return -ENOMEM;
	if (tep_parse_format(tep, &te, e->format + slen, e->format_len - slen, e->sys) || !te) {
		ERR("failed to parse the format of tracepoint '%s:%s' (libtraceevent)", e->sys,
		    e->name);
		tep_free(tep);
		return -EINVAL;
	}
	e->id = te->id;
	for (f = te->format.common_fields; f; f = f->next)
		if (f->offset + f->size > fixed)
			fixed = f->offset + f->size;
	for (f = te->format.fields; f; f = f->next) {
		if (f->offset + f->size > fixed)
			fixed = f->offset + f->size;
		if (f->flags & TEP_FIELD_IS_DYNAMIC)
			dyn = 1;
	}
	tep_free(tep);
	if (fixed > 0xffff)
		fixed = 0xffff;
	/* cookie: bytes to copy | fixed size << 16 | truncated flag << 32 |
	 * event id << 40 (bpf/sched.bpf.c, tb_tp) */
	e->cookie = (__u64)(dyn ? TB_TP_MAX : (fixed < TB_TP_MAX ? fixed : TB_TP_MAX)) |
		    (__u64)fixed << 16 |
		    (__u64)(!dyn && fixed > TB_TP_MAX ? TB_TPF_TRUNCATED : 0) << 32 |
		    (__u64)(e->id & 0xffffff) << 40;
	return 0;
}

static int add_event(struct tb_sched *s, const char *sys, const char *name)
{
	struct tp_event *ne;

	for (int i = 0; i < s->nev; i++)
		if (!strcmp(s->ev[i].sys, sys) && !strcmp(s->ev[i].name, name))
			return 0;   /* selected twice */
	ne = realloc(s->ev, (s->nev + 1) * sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	s->ev = ne;
	ne = &s->ev[s->nev];
	memset(ne, 0, sizeof(*ne));
	if (strlen(sys) >= sizeof(ne->sys) || strlen(name) >= sizeof(ne->name))
		return -ENAMETOOLONG;
	memcpy(ne->sys, sys, strlen(sys) + 1);
	memcpy(ne->name, name, strlen(name) + 1);
	s->nev++;
	return load_event(ne);
}

static bool is_event_dir(const char *sys, const char *name)
{
	char path[1024];

	snprintf(path, sizeof(path), TRACEFS "/events/%s/%s/format", sys, name);
	return access(path, R_OK) == 0;
}

static int resolve_spec(struct tb_sched *s, const char *spec)
{
	char sys[64], ev[128];
	struct dirent *ds, *de;
	DIR *d, *d2;
	int found = 0, err = 0;

	if (tb_sched_parse_spec(spec, sys, sizeof(sys), ev, sizeof(ev))) {
		ERR("invalid tracepoint '%s': give SUBSYS:EVENT, e.g. -e sched:sched_migrate_task "
		    "or -e 'irq:*'", spec);
		return -EINVAL;
	}
	d = opendir(TRACEFS "/events");
	if (!d) {
		err = -errno;
		ERR("failed to list tracepoints in '%s': %s", TRACEFS "/events", strerror(-err));
		return err;
	}
	while (!err && (ds = readdir(d))) {
		char path[1024];

		if (ds->d_name[0] == '.' || fnmatch(sys, ds->d_name, 0))
			continue;
		snprintf(path, sizeof(path), TRACEFS "/events/%s", ds->d_name);
		d2 = opendir(path);
		if (!d2)
			continue;
		while (!err && (de = readdir(d2))) {
			if (de->d_name[0] == '.' || fnmatch(ev, de->d_name, 0) ||
			    !is_event_dir(ds->d_name, de->d_name))
				continue;
			err = add_event(s, ds->d_name, de->d_name);
			found++;
		}
		closedir(d2);
	}
	closedir(d);
	if (!err && !found) {
		ERR("failed to find tracepoint '%s': %s", spec,
		    strpbrk(spec, "*?[") ? "the pattern matches no tracepoint" : "no such tracepoint");
		fprintf(stderr, "tracebpf: hint: '%s/available_events' lists them "
				"(SUBSYS:EVENT)\n", TRACEFS);
		return -ENOENT;
	}
	return err;
}

void tb_bpf_metadata_session(char *dst, size_t size, const char *session)
{
	snprintf(dst, size, "%s", session ? session : "");
}

struct bpf_object *tb_sched_object(const struct tb_sched *s)
{
	return s && s->skel ? s->skel->obj : NULL;
}

int tb_sched_prepare(struct tb_sched **sp, const struct tb_sched_opts *o)
{
	struct tb_sched *s = calloc(1, sizeof(*s));
	int err = 0;

	if (!s)
		return -ENOMEM;
	s->o = *o;
	if (o->nevents)
		err = tb_sched_ensure_tracefs("-e");
	for (int i = 0; !err && i < o->nevents; i++)
		err = resolve_spec(s, o->events[i]);
	if (err) {
		tb_sched_destroy(s);
		return err;
	}
	*sp = s;
	return 0;
}

/* tp_btf works here: load "return 0" as a BPF_TRACE_RAW_TP tracing program
 * against btf_trace_sched_switch. A feature probe, not a version check. */
static bool probe_tp_btf(const struct btf *vmlinux)
{
	struct bpf_insn insns[2] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int id = btf__find_by_name_kind(vmlinux, "btf_trace_sched_switch", BTF_KIND_TYPEDEF);
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_RAW_TP,
		    .attach_btf_id = id);
	int fd;

	if (id < 0)
		return false;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "tb_probe", "GPL", insns, 2, &opts);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

struct tp_pair {
	struct bpf_program *btf, *raw;
	bool optional;
};

static bool tracefs_has(const char *tp)
{
	static const char *const systems[] = { "sched", "power", "task" };
	char path[256];

	for (size_t i = 0; i < sizeof(systems) / sizeof(systems[0]); i++) {
		snprintf(path, sizeof(path), TRACEFS "/events/%s/%s", systems[i], tp);
		if (!access(path, F_OK))
			return true;
	}
	return false;
}

static int choose_programs(struct tb_sched *s)
{
	struct sched_bpf *k = s->skel;
	/* in the order of tb_sched_tracepoints */
	struct tp_pair pairs[TB_SCHED_NTP] = {
		{ k->progs.tb_switch_btf, k->progs.tb_switch_raw, false },
		{ k->progs.tb_waking_btf, k->progs.tb_waking_raw, false },
		{ k->progs.tb_wakeup_btf, k->progs.tb_wakeup_raw, false },
		{ k->progs.tb_wakeup_new_btf, k->progs.tb_wakeup_new_raw, false },
		{ k->progs.tb_kfork_btf, k->progs.tb_kfork_raw, false },
		{ k->progs.tb_kexec_btf, k->progs.tb_kexec_raw, false },
		{ k->progs.tb_kexit_btf, k->progs.tb_kexit_raw, false },
		{ k->progs.tb_rename_btf, k->progs.tb_rename_raw, false },
		{ k->progs.tb_idle_btf, k->progs.tb_idle_raw, true },
		{ k->progs.tb_freq_btf, k->progs.tb_freq_raw, true },
	};
	unsigned select = s->o.select ? s->o.select : TB_SCHED_ALL;
	const char *force = getenv("TRACEBPF_FORCE_RAW_TP");
	struct btf *vmlinux = btf__load_vmlinux_btf();
	bool tracing = false;

	if (vmlinux && !(force && *force && strcmp(force, "0")))
		tracing = probe_tp_btf(vmlinux);
	for (size_t i = 0; i < TB_SCHED_NTP; i++) {
		const char *tp = tb_sched_tracepoints[i];
		char name[64];
		bool in_btf;

		if (!(select & (1u << i))) {
			if (s->o.verbose)
				fprintf(stderr, "tracebpf: record: %s not selected "
						"(--sched-events), skipped\n", tp);
			continue;
		}
		/* --sched=traced keeps no power events (they belong to no
		 * process): do not pay for their programs on every idle change */
		if (s->o.traced_only && (TB_SCHED_POWER & (1u << i))) {
			if (s->o.verbose)
				fprintf(stderr, "tracebpf: record: %s not recorded with "
						"--sched=traced, skipped\n", tp);
			continue;
		}
		snprintf(name, sizeof(name), "btf_trace_%s", tp);
		in_btf = vmlinux && btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF) >= 0;
		if (in_btf && tracing) {
			bpf_program__set_autoload(pairs[i].btf, true);
		} else if (in_btf || tracefs_has(tp)) {
			bpf_program__set_autoload(pairs[i].raw, true);
		} else if (pairs[i].optional) {
			if (s->o.verbose)
				fprintf(stderr, "tracebpf: record: no %s tracepoint here, "
						"skipped\n", tp);
			continue;
		} else {
			ERR("failed to find the %s tracepoint in this kernel", tp);
			fprintf(stderr, "tracebpf: hint: record without it (--sched-events= "
					"listing the others) or without scheduler events (--no-sched)\n");
			btf__free(vmlinux);
			return -ENOENT;
		}
		if (s->o.verbose)
			fprintf(stderr, "tracebpf: record: %s via %s\n", tp,
				in_btf && tracing ? "tp_btf" : "raw_tp");
	}
	btf__free(vmlinux);
	return 0;
}

/* Staging needs tb_stage_flush to run on every CPU (BPF_PROG_TEST_RUN with
 * BPF_F_TEST_RUN_ON_CPU); without it, records go straight to the rings. */
static void choose_staging(struct tb_sched *s)
{
	const char *env = getenv("TRACEBPF_NO_STAGE");
	LIBBPF_OPTS(bpf_test_run_opts, opts, .flags = BPF_F_TEST_RUN_ON_CPU, .cpu = 0);
	bool forced_off = env && *env && strcmp(env, "0");
	int err = forced_off ? 0 :
		  bpf_prog_test_run_opts(bpf_program__fd(s->skel->progs.tb_stage_flush), &opts);

	s->staging = !forced_off && !err;
	s->skel->bss->no_stage = !s->staging;
	if (s->o.verbose)
		fprintf(stderr, "tracebpf: record: scheduler records %s\n",
			s->staging ? "staged per CPU" :
			forced_off ? "go straight to the rings (TRACEBPF_NO_STAGE)" :
				     "go straight to the rings (cannot run a program on each CPU)");
}

/* The -e events into tb_tp_off, each on (0): `tracebpf ctl disable -e`
 * switches off only what is there. */
static int list_tp_events(struct tb_sched *s)
{
	int fd = bpf_map__fd(s->skel->maps.tb_tp_off);
	__u8 on = 0;

	for (int i = 0; i < s->nev && i < TB_TP_OFF_MAX; i++) {
		__u32 id = (__u32)s->ev[i].id;

		if (bpf_map_update_elem(fd, &id, &on, BPF_ANY)) {
			int err = -errno;

			ERR("failed to list -e event %s:%s for tracebpf ctl: %s", s->ev[i].sys,
			    s->ev[i].name, strerror(-err));
			return err;
		}
	}
	return 0;
}

int tb_sched_tp_off_fd(struct tb_sched *s)
{
	return s && s->skel && bpf_map__fd(s->skel->maps.tb_tp_off) >= 0 ?
	       bpf_map__fd(s->skel->maps.tb_tp_off) : -1;
}

int tb_sched_load(struct tb_sched *s, int traced_fd, int spill_fd, int ctl_fd,
		  struct ring_buffer **rb, tb_ring_fn fn, void *ctx)
{
	int err, ncpus;

	if (!s->o.sched && !s->nev)
		return 0;
	s->skel = sched_bpf__open();
	if (!s->skel) {
		err = -errno;
		ERR("failed to open the scheduler BPF object: %s", strerror(-err));
		return err;
	}
	err = bpf_map__reuse_fd(s->skel->maps.traced, traced_fd);
	if (!err)
		err = bpf_map__reuse_fd(s->skel->maps.spill, spill_fd);
	if (!err)
		err = bpf_map__reuse_fd(s->skel->maps.tb_ctl, ctl_fd);
	if (err) {
		ERR("failed to share the traced processes and rings with the scheduler "
		    "programs: %s", strerror(-err));
		tb_hint_bpf(err, "record without scheduler events: --no-sched");
		return err;
	}
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0) {
		err = ncpus ? ncpus : -EINVAL;
		ERR("failed to count possible CPUs: %s", strerror(-err));
		fprintf(stderr, "tracebpf: hint: libbpf reads them from "
				"/sys/devices/system/cpu/possible: is sysfs mounted?\n");
		return err;
	}
	/* Rings of their own: see bpf/ring.bpf.h on why they are small. */
	err = tb_rings_create(&s->rings, s->skel->maps.rings, ncpus, s->o.ring_size, "tb_kring",
			      "kernel ring buffer", "--kernel-buffer-size");
	if (err)
		return err;
	s->skel->rodata->wakeup_bytes = s->o.ring_size / 4;
	s->skel->rodata->traced_only = s->o.traced_only;
	tb_bpf_metadata_session((char *)s->skel->rodata->bpf_metadata_session,
				sizeof(s->skel->rodata->bpf_metadata_session), s->o.session);
	err = tb_gaps_size(s->skel->maps.gaps, ncpus);
	if (err) {
		ERR("failed to size the scheduler programs' gap marks: %s", strerror(-err));
		return err;
	}
	if (s->o.sched) {
		err = choose_programs(s);
		if (err)
			return err;
	}
	/* always: ctl enable -e attaches it to more tracepoints later */
	bpf_program__set_autoload(s->skel->progs.tb_tp, true);
	bpf_program__set_autoload(s->skel->progs.tb_stage_flush, s->o.sched);
	err = sched_bpf__load(s->skel);
	if (err) {
		ERR("failed to load the scheduler BPF programs: %s", strerror(-err));
		tb_hint_bpf(err, "run with -v to see the verifier's log, or record without "
				 "scheduler events: --no-sched");
		return err;
	}
	err = list_tp_events(s);
	if (err)
		return err;
	err = tb_rings_insert(&s->rings, bpf_map__fd(s->skel->maps.rings), rb, fn, ctx);
	if (err)
		return err;
	err = tb_gaps_open(&s->gaps, bpf_map__fd(s->skel->maps.gaps), ncpus, TB_GAP_KERNEL);
	if (err) {
		ERR("failed to map the scheduler programs' gap marks: %s", strerror(-err));
		fprintf(stderr, "tracebpf: hint: the kernel must allow mmap of BPF arrays "
				"(BPF_F_MMAPABLE, Linux 5.5 and later)\n");
		return err;
	}
	s->rb = *rb;
	s->fn = fn;
	s->fn_ctx = ctx;
	if (s->o.sched)
		choose_staging(s);
	return 0;
}

int tb_sched_add_drops(struct tb_sched *s, __u64 *vals, int n, __u64 *total)
{
	int ncpus = libbpf_num_possible_cpus(), err = 0;
	__u64 *mine;
	__u32 zero = 0;

	*total = 0;
	if (!s || !s->skel)
		return 0;
	if (ncpus <= 0)
		return ncpus ? ncpus : -EINVAL;
	mine = calloc(ncpus, sizeof(*mine));
	if (!mine)
		return -ENOMEM;
	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.drops), &zero, mine))
		err = -errno;
	else
		for (int i = 0; i < ncpus; i++) {
			*total += mine[i];
			if (i < n)
				vals[i] += mine[i];
		}
	free(mine);
	return err;
}

int tb_sched_sweep_gaps(struct tb_sched *s, struct tb_writer *w)
{
	return s ? tb_gaps_sweep(&s->gaps, w) : 0;
}

/* One -e event's format, as a TB_REC_FORMAT record stamped ts. */
static int write_format(const struct tp_event *e, struct tb_writer *w, __u64 ts)
{
	size_t size = TB_REC_ALIGN(sizeof(struct tb_rec_format) + e->format_len);
	struct tb_rec_format *rec;
	int err;

	if (size > 0xffff) {
		ERR("failed to save the format of '%s:%s': %zu bytes is too long",
		    e->sys, e->name, e->format_len);
		return -EFBIG;
	}
	rec = calloc(1, size);
	if (!rec)
		return -ENOMEM;
	rec->hdr.type = TB_REC_FORMAT;
	rec->hdr.size = size;
	rec->hdr.cpu = ~0u;
	rec->hdr.ts = ts;
	rec->id = e->id;
	rec->len = e->format_len;
	memcpy(rec + 1, e->format, e->format_len);
	err = tb_writer_append(w, &rec->hdr);
	free(rec);
	return err;
}

int tb_sched_write_formats(struct tb_sched *s, struct tb_writer *w, __u64 ts)
{
	int err = 0;

	for (int i = 0; i < s->nev && !err; i++)
		err = write_format(&s->ev[i], w, ts);
	return err;
}

static int add_link(struct tb_sched *s, struct bpf_link *l)
{
	return tb_links_add(&s->links, &s->nlinks, l);
}

/* The generic program on one -e tracepoint. */
static int attach_event(struct tb_sched *s, const struct tp_event *e)
{
	LIBBPF_OPTS(bpf_tracepoint_opts, opts, .bpf_cookie = e->cookie);
	struct bpf_link *l;
	int err;

	l = bpf_program__attach_tracepoint_opts(s->skel->progs.tb_tp, e->sys, e->name, &opts);
	if (!l) {
		err = -errno;
		ERR("failed to attach to tracepoint '%s:%s': %s", e->sys, e->name,
		    strerror(-err));
		tb_hint_bpf(err, "record without that -e event");
		return err;
	}
	return add_link(s, l);
}

int tb_sched_attach(struct tb_sched *s)
{
	struct bpf_program *prog;
	struct bpf_link *l;
	int err;

	if (!s->skel)
		return 0;
	bpf_object__for_each_program(prog, s->skel->obj) {
		if (!bpf_program__autoload(prog) || prog == s->skel->progs.tb_tp ||
		    prog == s->skel->progs.tb_stage_flush)
			continue;
		l = bpf_program__attach(prog);
		if (!l) {
			err = -errno;
			ERR("failed to attach '%s' to its tracepoint: %s",
			    bpf_program__section_name(prog), strerror(-err));
			tb_hint_bpf(err, "record without it (--sched-events) or without "
					 "scheduler events (--no-sched)");
			return err;
		}
		if ((err = add_link(s, l)))
			return err;
	}
	for (int i = 0; i < s->nev; i++)
		if ((err = attach_event(s, &s->ev[i])))
			return err;
	return 0;
}

int tb_sched_add_event(struct tb_sched *s, const char *spec, struct tb_writer *w, __u64 ts)
{
	int n0 = s ? s->nev : 0, err;
	__u8 on = 0;

	if (!s || !s->skel) {
		ERR("cannot record '%s' from now on: the recording loaded no kernel programs "
		    "(--no-sched without -e)", spec);
		return -ENOTSUP;
	}
	err = tb_sched_ensure_tracefs("-e");
	if (!err)
		err = resolve_spec(s, spec);
	if (!err && s->nev == n0)
		err = -EEXIST;
	for (int i = n0; i < s->nev && !err; i++) {
		__u32 id = (__u32)s->ev[i].id;

		err = write_format(&s->ev[i], w, ts);
		if (!err && bpf_map_update_elem(bpf_map__fd(s->skel->maps.tb_tp_off), &id, &on,
						BPF_ANY))
			err = -errno;
		if (!err)
			err = attach_event(s, &s->ev[i]);
	}
	if (err && err != -EEXIST)
		s->nev = n0;   /* as it was: none of them is recorded */
	return err;
}

/* A flush failed while recording: the records staged on every CPU are taken
 * out of the `stage` map by user space instead, and every program writes
 * straight to the rings from now on. Programs read no_stage each time: once
 * it is set, one that started before it is done in microseconds (wait for
 * that, and for every busy flag to clear, for a bounded time), and no
 * program writes a buffer again. The rings are drained first, so each CPU's
 * records reach the file in the order they were written. Returns the number
 * of records recovered, or a negative errno if the map cannot be read (the
 * caller then ends the recording with an error). */
static long unstage(struct tb_sched *s)
{
	int fd = bpf_map__fd(s->skel->maps.stage), ncpu = libbpf_num_possible_cpus();
	size_t vsz = bpf_map__value_size(s->skel->maps.stage);
	struct tb_stage *v;
	__u32 zero = 0;
	long n = 0;
	bool busy;

	if (vsz != sizeof(struct tb_stage) || ncpu <= 0)
		return -EINVAL;   /* cannot happen: one struct, from tbrecords.h */
	v = calloc(ncpu, sizeof(*v));
	s->taken = calloc(ncpu, sizeof(*s->taken));
	if (!v || !s->taken) {
		free(v);
		return -ENOMEM;
	}
	s->skel->bss->no_stage = true;
	s->staging = false;
	nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	for (int try = 0; try < 1000; try++) {
		if (bpf_map_lookup_elem(fd, &zero, v)) {
			n = -errno;
			free(v);
			return n;
		}
		busy = false;
		for (int cpu = 0; cpu < ncpu; cpu++)
			busy |= v[cpu].busy != 0;
		if (!busy)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 10000 }, NULL);
	}
	ring_buffer__consume(s->rb);
	for (int cpu = 0; cpu < ncpu; cpu++) {
		__u32 len = v[cpu].len < TB_STAGE_BYTES ? v[cpu].len : TB_STAGE_BYTES;

		s->taken[cpu] = len;
		if (!len)
			continue;
		s->fn(s->fn_ctx, v[cpu].buf, len);
		n += v[cpu].nrec;
	}
	free(v);
	return n;
}

/* After unstage: a program that had read no_stage as false just before it
 * was set, and whose vCPU then stalled past unstage's wait (a host can
 * deschedule a vCPU for milliseconds), stages its record after the map was
 * read. Every round (and the last) takes what lies past the bytes already
 * taken; a buffer shorter than that was rewritten from its start (only from
 * outside: programs no longer flush it) and is taken whole. A map that
 * cannot be read now is read at the next round. */
static void sweep_stragglers(struct tb_sched *s)
{
	int fd = bpf_map__fd(s->skel->maps.stage), ncpu = libbpf_num_possible_cpus();
	struct tb_stage *v = ncpu > 0 ? calloc(ncpu, sizeof(*v)) : NULL;
	__u32 zero = 0;

	if (v && !bpf_map_lookup_elem(fd, &zero, v)) {
		for (int cpu = 0; cpu < ncpu; cpu++) {
			__u32 len = v[cpu].len < TB_STAGE_BYTES ? v[cpu].len : TB_STAGE_BYTES;
			__u32 from = len < s->taken[cpu] ? 0 : s->taken[cpu];

			if (v[cpu].busy || len == from)
				continue;   /* one still writing: at the next round */
			s->fn(s->fn_ctx, v[cpu].buf + from, len - from);
			s->taken[cpu] = len;
			if (s->o.verbose)
				fprintf(stderr, "tracebpf: record: took %u bytes staged on CPU %d "
						"after the staging buffers were read\n", len - from, cpu);
		}
	}
	free(v);
}

int tb_sched_flush(struct tb_sched *s)
{
	int fd, ncpu, err = 0;

	if (!s || !s->skel)
		return 0;
	if (!s->staging) {
		if (s->taken)
			sweep_stragglers(s);
		return 0;
	}
	fd = bpf_program__fd(s->skel->progs.tb_stage_flush);
	ncpu = libbpf_num_possible_cpus();
	for (int cpu = 0; cpu < ncpu; cpu++) {
		for (int try = 0; try < 100; try++) {
			LIBBPF_OPTS(bpf_test_run_opts, opts, .flags = BPF_F_TEST_RUN_ON_CPU,
				    .cpu = cpu);

			err = bpf_prog_test_run_opts(fd, &opts);
			if (err == -ENXIO) {   /* an offline CPU: nothing staged */
				err = 0;
				break;
			}
			if (err) {
				long n = unstage(s);

				if (n < 0) {
					ERR("failed to flush CPU %d's staged scheduler events (%s), "
					    "and to read them: %s", cpu, strerror(-err),
					    strerror((int)-n));
					fprintf(stderr, "tracebpf: hint: record again with "
							"TRACEBPF_NO_STAGE=1 (scheduler records "
							"straight to the rings)\n");
					return (int)n;
				}
				fprintf(stderr, "tracebpf: record: warning: failed to flush CPU %d's "
						"staged scheduler events (%s): took %ld records out of "
						"the staging buffers; scheduler records go straight to "
						"the rings from now on\n", cpu, strerror(-err), n);
				return 0;
			}
			if (!opts.retval)
				break;
			/* a program on that CPU was writing its buffer (a window
			 * of nanoseconds; after 100 tries the next drain has it) */
			nanosleep(&(struct timespec){ .tv_nsec = 10000 }, NULL);
		}
	}
	return 0;
}

void tb_sched_destroy(struct tb_sched *s)
{
	if (!s)
		return;
	tb_links_destroy(&s->links, &s->nlinks);
	free(s->taken);
	tb_gaps_close(&s->gaps);
	sched_bpf__destroy(s->skel);
	tb_rings_close(&s->rings);
	for (int i = 0; i < s->nev; i++)
		free(s->ev[i].format);
	free(s->ev);
	free(s);
}
