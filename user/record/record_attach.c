// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record_attach.c - what `tracebpf record` traces and how it gets there:
 * the targets (-- CMD, -p PID) and the objects with probes they map; the
 * BPF objects opened, configured (rodata, map sizes, rings) and loaded;
 * the lifecycle tracepoints, the USDT probes of every object and the
 * loader hook attached; the probes detached and attached again around a
 * `tracebpf ctl stop`; and the processes the kernel side stopped at exec
 * or dlopen, released once their new objects are attached.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kern/kern.h"
#include "format/tbrecords.h"
#include "record.skel.h"
#include "format/tbctl.h"
#include "ctl/ctl.h"
#include "fast/fast.h"
#include "format/outfile.h"
#include "probes/probes.h"
#include "record/recorder.h"
#include "tracebpf.h"

static int add_traced(struct recorder *r, pid_t pid, __u64 gen)
{
	__u32 key = pid;
	__u64 val = gen;

	if (bpf_map_update_elem(bpf_map__fd(r->skel->maps.traced), &key, &val, BPF_ANY))
		return -errno;
	return 0;
}

static int add_link(struct recorder *r, struct bpf_link *link)
{
	return tb_links_add(&r->links, &r->nlinks, link);
}

/* Objects are attached once per file (uprobes are per inode: attaching a
 * file twice would record every hit twice): a file's key. */
static void stat_key(const struct stat *st, char key[64])
{
	snprintf(key, 64, "%llu:%llu", (unsigned long long)st->st_dev,
		 (unsigned long long)st->st_ino);
}

static int file_key(const char *path, char key[64])
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	stat_key(&st, key);
	return 0;
}

static bool key_attached(const struct recorder *r, const char *key)
{
	for (int i = 0; i < r->nobjs; i++)
		if (!strcmp(r->objs[i].key, key))
			return true;
	return false;
}

static bool is_attached(struct recorder *r, const char *path)
{
	char key[64];

	return !file_key(path, key) && key_attached(r, key);
}

static const struct { const char *name; bool id; } usdt_probes[TB_NPROBES] = {
	{ TB_PROBE, false }, { TB_PROBE_ID, true }, { TB_PROBE_RING, false },
};

/* The program for one probe name of an object: the one that reads the
 * current header's fixed registers when every note of that name uses them,
 * else the one that decodes each note's argument spec (older builds). */
static struct bpf_program *usdt_prog(struct recorder *r, int i, bool fixed)
{
	struct record_bpf *sk = r->skel;

	if (i == 2)
		return sk->progs.tb_ring_req;
	if (usdt_probes[i].id)
		return fixed ? sk->progs.tb_event_id : sk->progs.tb_event_id_usdt;
	return fixed ? sk->progs.tb_event : sk->progs.tb_event_usdt;
}

/* Attaches both probe names of an object (those not attached yet), through
 * path: one uprobe_multi link per name for all its sites (libbpf >= 1.3). */
static int attach_usdt(struct recorder *r, struct object *ob, const char *path)
{
	struct bpf_link *link;
	int err, n, i, other, total = 0;

	for (i = 0; i < TB_NPROBES; i++) {
		if (ob->link[i] || (i == 2 && !tb_fast_has_rings(r->fast)))
			continue;
		n = tb_elf_probe_regs(path, usdt_probes[i].name, &other);
		if (n <= 0 || (i == 2 && other))
			continue;   /* no sites, or a request probe we do not know */
		if (other && r->o->verbose)
			fprintf(stderr, "tracebpf: record: %d of the %d %s probes in '%s' use other "
				"registers than this trace.h: decoding their arguments per hit\n",
				other, n, usdt_probes[i].name, ob->path);
		link = bpf_program__attach_usdt(usdt_prog(r, i, !other), -1, path,
						TB_PROVIDER, usdt_probes[i].name, NULL);
		if (!link) {
			err = -errno;
			ERR("failed to attach to the %s probes of '%s': %s", usdt_probes[i].name,
			    ob->path, strerror(-err));
			tb_hint_bpf(err, "run with -v to see libbpf's log");
			return err;
		}
		ob->link[i] = link;
		total += n;
	}
	if (r->o->verbose)
		fprintf(stderr, "tracebpf: record: attached to %d probes in '%s'\n",
			total, ob->path);
	return 0;
}

/* tracebpf ctl stop: no uprobe left, so every site's semaphore is 0 and a
 * hit costs the application a load and a branch. */
void rec_detach_usdt(struct recorder *r)
{
	for (int i = 0; i < r->nobjs; i++) {
		for (int k = 0; k < TB_NPROBES; k++) {
			bpf_link__destroy(r->objs[i].link[k]);
			r->objs[i].link[k] = NULL;
		}
		rec_usdt_detach(&r->objs[i]);
	}
}

/* An object's probes, tracebpf's and --usdt's, attached through the
 * recorder's own descriptor of its file: the targets map that inode,
 * whatever its path says now, and a path through a target's root can
 * vanish (its group leader ending while its other threads go on). */
static int attach_probes(struct recorder *r, struct object *ob)
{
	char via[64];
	int err;

	snprintf(via, sizeof(via), "/proc/self/fd/%d", ob->fd);
	err = attach_usdt(r, ob, via);
	return err ? err : rec_usdt_attach(r, ob, via);
}

/* tracebpf ctl start: every object again. The first error, after trying
 * them all (each one said). */
int rec_reattach_usdt(struct recorder *r)
{
	int err = 0, e;

	for (int i = 0; i < r->nobjs; i++) {
		e = attach_probes(r, &r->objs[i]);
		if (e && !err)
			err = e;
	}
	return err;
}

/* An object found in a target could not be opened: say which, and why
 * when it is gone (a -p target that exited while the programs loaded). */
static int open_failed(const char *path, int err)
{
	ERR("failed to open '%s': %s", path, strerror(-err));
	if (err == -ENOENT || err == -ESRCH)
		fprintf(stderr, "tracebpf: hint: the process it was found in exited while "
			"tracebpf was loading\n");
	return err;
}

/* A path through a process's root, /proc/PID/root/FILE, whose group
 * leader has ended since it was found (the process lives on in its other
 * threads, and the leader's root is gone): the same file through a
 * running thread's root into out. False when there is no other way. */
static bool through_a_thread(const char *path, char *out, size_t size)
{
	char dir[96];
	int pid, n = 0;

	if (sscanf(path, "/proc/%d/root/%n", &pid, &n) != 1 || !n)
		return false;
	tb_proc_dir(pid, dir, sizeof(dir));
	if (!strncmp(dir, "/proc/", 6) && !strchr(dir + 6, '/'))
		return false;   /* the leader's own: nothing else to try */
	return snprintf(out, size, "%s/root/%s", dir, path + n) < (int)size;
}

/* Opens an object found in a target, through a running thread's root
 * when the leader's is gone (the path then points at alt), with its key
 * (device and inode of what was opened). The descriptor, or a negative
 * errno. */
static int open_object(const char **path, char *alt, size_t size, char key[64])
{
	struct stat st;
	int fd = open(*path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0 && errno == ENOENT && through_a_thread(*path, alt, size)) {
		*path = alt;
		fd = open(*path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		close(fd);
		return err;
	}
	stat_key(&st, key);
	return fd;
}

/* Records an object the targets map, and attaches to it unless recording
 * is stopped (then it is attached at the next start). say: report an
 * object that cannot be opened (attaching reports its own errors). */
static int attach_object(struct recorder *r, const char *path, bool say)
{
	struct object *nv, *ob;
	char key[64], alt[PATH_MAX];
	int err, fd;

	fd = open_object(&path, alt, sizeof(alt), key);
	if (fd < 0)
		return say ? open_failed(path, fd) : fd;
	if (key_attached(r, key)) {
		close(fd);
		return 0;
	}
	nv = realloc(r->objs, (r->nobjs + 1) * sizeof(*nv));
	if (!nv) {
		close(fd);
		return -ENOMEM;
	}
	r->objs = nv;
	ob = &nv[r->nobjs];
	memset(ob, 0, sizeof(*ob));
	strcpy(ob->key, key);
	ob->fd = fd;
	ob->path = strdup(path);
	err = ob->path ? 0 : -ENOMEM;
	if (!err && !r->ctl.off)
		err = attach_probes(r, ob);
	if (err) {
		rec_usdt_detach(ob);
		for (int k = 0; k < TB_NPROBES; k++)
			bpf_link__destroy(ob->link[k]);
		free(ob->path);
		close(ob->fd);
		return err;
	}
	r->nobjs++;
	return 0;
}

/* The dynamic loader's r_brk hook: a traced process that maps new objects
 * (dlopen) stops there until they are attached (bpf/record.bpf.c). */
static void attach_loader_hook(struct recorder *r)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = "_dl_debug_state");
	static const char *const loaders[] = {
		"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-x86-64.so.2",
	};
	char real[PATH_MAX];
	struct bpf_link *link;

	for (size_t i = 0; i < sizeof(loaders) / sizeof(loaders[0]); i++) {
		if (!realpath(loaders[i], real))
			continue;
		link = bpf_program__attach_uprobe_opts(r->skel->progs.tb_dlstate, -1,
						       real, 0, &uo);
		if (!link) {
			fprintf(stderr, "tracebpf: record: warning: failed to attach to "
					"'%s' _dl_debug_state (%s): libraries loaded later "
					"with dlopen are not traced\n", real, strerror(errno));
			return;
		}
		add_link(r, link);
		return;
	}
}

/* Processes the kernel side stopped at exec or at the loader hook: attach
 * to what they map now (and, after exec, to the libraries the new image's
 * loader is about to map), then let them go. */
void rec_release_stopped(struct recorder *r, bool attach)
{
	int fd = bpf_map__fd(r->skel->maps.stopped);
	__u32 key, next, *prev = NULL, why;
	__u32 pids[256];
	int n = 0;

	while (n < 256 && !bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		pids[n++] = key;
	}

	for (int i = 0; i < n; i++) {
		struct tb_paths objs = {};
		char link[128], dir[96], exe[PATH_MAX];

		/* gone meanwhile: released already. Unreadable: released all the
		 * same, as after an exec (which attaches everything it maps). */
		if (bpf_map_lookup_elem(fd, &pids[i], &why)) {
			if (errno == ENOENT)
				continue;
			why = TB_STOP_EXEC;
		}
		if (attach) {
			tb_proc_probe_objects(pids[i], &objs);
			tb_proc_dir((pid_t)pids[i], dir, sizeof(dir));
			snprintf(link, sizeof(link), "%s/exe", dir);
			/* an image seen before: its libraries are attached */
			if (why == TB_STOP_EXEC && realpath(link, exe) &&
			    !is_attached(r, exe))
				tb_cmd_probe_objects(exe, &objs);
			for (int k = 0; k < objs.n; k++)
				attach_object(r, objs.v[k], false);
			tb_paths_free(&objs);
		}
		/* still stopped: this is the new image's command line */
		if (why == TB_STOP_EXEC)
			rec_write_cmdline(r, pids[i]);
		bpf_map_delete_elem(fd, &pids[i]);
		/* another recording of it may still be attaching: it resumes it */
		if (!tb_fast_held_elsewhere(pids[i]))
			kill(pids[i], SIGCONT);
	}
}

/* -- CMD: the program and the objects with probes it would map. */
static int find_cmd_objects(struct recorder *r)
{
	const struct tb_record_opts *o = r->o;
	int err;

	err = tb_resolve_cmd(o->cmd[0], r->exe, sizeof(r->exe));
	if (err) {
		ERR("failed to find command '%s': %s", o->cmd[0], strerror(-err));
		if (err == -ENOENT)
			fprintf(stderr, "tracebpf: hint: give a path (./app) or a command in $PATH\n");
		return err;
	}
	err = tb_cmd_probe_objects(r->exe, &r->found);
	if (err) {
		ERR("failed to inspect '%s': %s", r->exe, strerror(-err));
		return err;
	}
	/* Not an error: a shell or launcher may exec or dlopen an
	 * instrumented program (tracebpf record -- sh -c ./app). */
	if (!r->found.n && !o->quiet) {
		fprintf(stderr, "tracebpf: record: warning: '%s' has no tracebpf probes%s, neither "
				"in it nor in the libraries it links; recording only the "
				"programs it executes and the libraries it loads\n", r->exe,
			r->usdt_rules ? " nor probes --usdt asks for" : "");
		fprintf(stderr, "tracebpf: hint: include <tracebpf/trace.h>, add TRACE_EVENT* macros "
				"and rebuild (see README.md); 'readelf -n %s' lists the probes\n", r->exe);
	}
	return 0;
}

/* pid exited: no such process, or a zombie (its memory is gone: no exe)
 * with no thread left. */
static bool process_gone(pid_t pid)
{
	char path[128], dir[96], exe[16];

	if (kill(pid, 0) && errno == ESRCH)
		return true;
	tb_proc_dir(pid, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/exe", dir);
	return readlink(path, exe, sizeof(exe)) < 0 && errno == ENOENT;
}

/* -p PID: the objects with probes it maps. */
static int find_pid_objects(struct recorder *r, pid_t pid)
{
	int n = r->found.n, err;

	if (kill(pid, 0) && errno == ESRCH) {
		ERR("failed to find process %d: %s", pid, strerror(ESRCH));
		fprintf(stderr, "tracebpf: hint: check the pid with 'ps -p %d'\n", pid);
		return -ESRCH;
	}
	err = tb_proc_probe_objects(pid, &r->found);
	if (err) {
		ERR("failed to read the mappings of process %d: %s", pid, strerror(-err));
		if (err == -EACCES || err == -EPERM)
			fprintf(stderr, "tracebpf: hint: /proc/%d/maps and /proc/%d/root need "
					"ptrace access to that process: record as its user or with "
					"CAP_SYS_PTRACE (a security module can refuse it too)\n",
				pid, pid);
		return err;
	}
	if (r->found.n == n) {
		/* objects already found for another pid may be shared */
		struct tb_paths mine = {};
		int found;

		tb_proc_probe_objects(pid, &mine);
		found = mine.n;
		tb_paths_free(&mine);
		if (!found && process_gone(pid)) {
			ERR("failed to find process %d: it exited while tracebpf was loading", pid);
			fprintf(stderr, "tracebpf: hint: check the pid with 'ps -p %d'\n", pid);
			return -ESRCH;
		}
		if (!found) {
			ERR("process %d has no tracebpf probes%s in its executable or libraries",
			    pid, r->usdt_rules ? " nor probes --usdt asks for" : "");
			fprintf(stderr, "tracebpf: hint: build it with <tracebpf/trace.h> and "
					"TRACE_EVENT* macros (see README.md)\n");
			return -ENOENT;
		}
	}
	return 0;
}

int rec_find_targets(struct recorder *r)
{
	const struct tb_record_opts *o = r->o;
	int err = o->cmd ? find_cmd_objects(r) : 0;

	for (int i = 0; !err && i < o->npids; i++)
		err = find_pid_objects(r, o->pids[i]);
	if (!err) {
		err = rec_output_paths(r, o->out);
		if (err) {
			char buf[160];
			const char *hint = tb_out_hint(o->out, err, buf, sizeof(buf));

			ERR("failed to use output '%s': %s", o->out, strerror(-err));
			if (hint)
				fprintf(stderr, "tracebpf: hint: %s\n", hint);
		}
	}
	return err;
}

/* record --tid: the threads into the kernel side's set; one that does not
 * exist (or not in the process it was in when the options were read) is
 * an error, as a -p that does not. */
static int choose_tids(struct recorder *r)
{
	const struct tb_record_opts *o = r->o;
	char path[64];
	__u8 one = 1;

	for (int i = 0; i < o->ntids; i++) {
		__u32 tid = (__u32)o->tids[i];
		bool found = false;

		for (int k = 0; k < o->npids && !found; k++) {
			snprintf(path, sizeof(path), "/proc/%d/task/%u", o->pids[k], tid);
			found = !access(path, F_OK);
		}
		if (!found) {
			ERR("no thread %u runs", tid);
			fprintf(stderr, "tracebpf: hint: --tid takes running threads' ids "
					"(ls /proc/PID/task lists a process's)\n");
			return -ESRCH;
		}
		if (bpf_map_update_elem(bpf_map__fd(r->skel->maps.tb_tids), &tid, &one, BPF_ANY)) {
			int err = -errno;

			ERR("failed to choose thread %u: %s", tid, strerror(-err));
			return err;
		}
	}
	return 0;
}

/* open -> configure -> load record.bpf.c; its rings. */
/* kmem:rss_stat, for the traced processes' resident memory (on unless
 * --no-memory): said when the kernel has none. */
static bool want_rss(const struct tb_record_opts *o)
{
	if (o->no_memory)
		return false;
	if (!tb_sched_ensure_tracefs("the resident memory counters") && !access("/sys/kernel/tracing/events/kmem/rss_stat/id", R_OK))
		return true;
	fprintf(stderr, "tracebpf: record: no kmem:rss_stat tracepoint in tracefs: the traced "
			"processes' resident memory is not recorded\n");
	return false;
}

static int load_record_bpf(struct recorder *r)
{
	const struct tb_record_opts *o = r->o;
	int err;

	r->skel = record_bpf__open();
	if (!r->skel) {
		err = -errno;
		ERR("failed to open BPF object: %s", strerror(-err));
		return err;
	}
	r->ncpus = libbpf_num_possible_cpus();
	if (r->ncpus <= 0) {
		err = r->ncpus ? r->ncpus : -EINVAL;
		ERR("failed to count possible CPUs: %s", strerror(-err));
		fprintf(stderr, "tracebpf: hint: libbpf reads them from "
				"/sys/devices/system/cpu/possible: is sysfs mounted?\n");
		return err;
	}
	err = bpf_map__set_max_entries(r->skel->maps.site_cache, r->ncpus);
	if (!err)
		err = bpf_map__set_max_entries(r->skel->maps.proc_cache, r->ncpus);
	if (!err)
		err = tb_gaps_size(r->skel->maps.gaps, r->ncpus);
	if (err) {
		ERR("failed to size the per-CPU caches: %s", strerror(-err));
		return err;
	}
	err = bpf_map__set_max_entries(r->skel->maps.traced, o->max_procs);
	if (err) {
		ERR("failed to size the set of traced processes: %s", strerror(-err));
		return err;
	}
	r->skel->rodata->wakeup_bytes = o->buffer_size / 4;
	tb_bpf_metadata_session((char *)r->skel->rodata->bpf_metadata_session,
				sizeof(r->skel->rodata->bpf_metadata_session), r->session);
	bpf_program__set_autoload(r->skel->progs.tb_rss, want_rss(o));
	r->skel->rodata->stop_for_attach = true;
	err = tb_rings_create(&r->rings, r->skel->maps.rings, r->ncpus, o->buffer_size, "tb_ring",
			      "ring buffer", "--buffer-size");
	if (!err)
		err = tb_slots_create(&r->slots, r->skel->maps.slot_pos, r->skel->maps.slots,
				      r->ncpus, o->buffer_size, "--buffer-size");
	r->skel->rodata->slot_bits = r->slots.bits;
	if (!err)
		err = tb_fast_prepare(&r->fast, r->skel, &(struct tb_fast_opts){
			.ring_size = o->fast_buffer_size, .max_rings = o->max_fast_rings,
			.wait_us = o->fast_wait_us,
			.ring_max = o->fast_buffer_max > o->fast_buffer_size ?
				    o->fast_buffer_max : o->fast_buffer_size,
			.off = o->no_fast_path });
	if (err)
		return err;
	err = record_bpf__load(r->skel);
	if (err) {
		ERR("failed to load BPF programs: %s", strerror(-err));
		tb_hint_bpf(err, "run with -v to see the verifier's log");
		return err;
	}
	return choose_tids(r);
}

/* Each map of obj not pinned yet (ids: those pinned, n of them), as
 * OBJ-NAME in the session's pin directory (an internal map by its section:
 * record-rodata; bpffs takes no '.' in a name). 0, or the first error,
 * with *what the map it stopped at. */
static int pin_object_maps(struct recorder *r, struct bpf_object *obj, const char *prefix,
			   __u32 *ids, size_t *n, size_t max, char *what, size_t what_size)
{
	struct bpf_map *m;
	int err = 0;

	bpf_object__for_each_map(m, obj) {
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_map__fd(m);
		const char *name = bpf_map__name(m);
		size_t i;

		if (fd < 0 || bpf_map_get_info_by_fd(fd, &info, &len))
			continue;
		for (i = 0; i < *n && ids[i] != info.id; i++)
			;
		if (i < *n || *n == max)
			continue;
		ids[(*n)++] = info.id;
		if (strrchr(name, '.'))
			name = strrchr(name, '.') + 1;
		snprintf(what, what_size, "%s-%s", prefix, name);
		err = tb_fast_pin_session_map(r->session, fd, what);
		if (err)
			break;
	}
	return err;
}

/* The session's maps, pinned where `bpftool map show -f` shows them with
 * the session's name: both objects' and the session map. The first
 * failure is said, once, and ends the pinning (-ENOENT: no session
 * directory, already said). */
static void pin_session_maps(struct recorder *r)
{
	struct bpf_object *sched = tb_sched_object(r->sched);
	char what[96] = "session";
	__u32 ids[64];
	size_t n = 0;
	int err;

	err = pin_object_maps(r, r->skel->obj, "record", ids, &n, 64, what, sizeof(what));
	if (!err && sched)
		err = pin_object_maps(r, sched, "sched", ids, &n, 64, what, sizeof(what));
	if (!err && r->cats_fd >= 0) {
		snprintf(what, sizeof(what), "session");
		err = tb_fast_pin_session_map(r->session, r->cats_fd, what);
	}
	if (err && err != -ENOENT) {
		char dir[64];

		tb_fast_pin_dir_name(r->session, dir, sizeof(dir));
		fprintf(stderr, "tracebpf: record: warning: failed to pin this session's maps "
				"(%s: %s): `bpftool map show -f` will not show them under "
				"%s/; the recording goes on\n", what, strerror(-err), dir);
	}
}

/* Both BPF objects loaded, their rings in one manager, the releaser and
 * the ctl switch ready; nothing attached yet. */
int rec_load_bpf(struct recorder *r)
{
	const struct tb_record_opts *o = r->o;
	struct tb_sched_opts so = {
		.sched = !o->no_sched, .select = o->sched_select,
		.traced_only = o->sched_traced,
		.events = (char **)o->events, .nevents = o->nevents, .verbose = o->verbose,
		.ring_size = o->kernel_buffer_size, .session = r->session,
	};
	int err;

	err = tb_sched_prepare(&r->sched, &so);
	if (!err)
		err = load_record_bpf(r);
	if (err)
		return err;
	err = rec_start_releaser(r);
	if (err) {
		ERR("failed to start the process that resumes targets if tracebpf is killed: %s",
		    strerror(-err));
		if (err == -EAGAIN)
			fprintf(stderr, "tracebpf: hint: too many processes: raise the limit "
					"(ulimit -u, or the cgroup's pids.max)\n");
		else
			tb_hint_bpf(err, NULL);
		return err;
	}
	err = tb_rings_insert(&r->rings, bpf_map__fd(r->skel->maps.rings), &r->rb, rec_on_record, r);
	if (!err)
		err = tb_fast_start(r->fast);
	tb_fast_output(r->fast, rec_on_record, r);
	tb_fast_between(r->fast, rec_consume_rings);
	if (err)
		return err;
	tb_fast_pin_stopped(bpf_map__fd(r->skel->maps.stopped));
	/* before anything is attached: --paused holds from the first event */
	err = tb_ctl_init(&r->ctl, bpf_map__fd(r->skel->maps.tb_ctl), o->paused,
			  strcmp(r->tbt_path, "-") ? r->tbt_path : "<stdout>", r->session);
	if (!err)
		err = tb_ctl_filters(&r->ctl, bpf_map__fd(r->skel->maps.tb_tids),
				     bpf_map__fd(r->skel->maps.tb_pids),
				     o->ntids ? TB_FILTER_TID : 0);
	if (!err)
		tb_fast_ctl_state(r->fast, &r->ctl.map[TB_CTL_STATE]);
	if (err) {
		ERR("failed to map the control map (for tracebpf ctl): %s", strerror(-err));
		fprintf(stderr, "tracebpf: hint: the kernel must allow mmap of BPF arrays "
				"(BPF_F_MMAPABLE, Linux 5.5 and later)\n");
		return err;
	}
	err = rec_cats_open(r);
	if (err)
		return err;
	err = tb_gaps_open(&r->gaps, bpf_map__fd(r->skel->maps.gaps), r->ncpus, TB_GAP_APP);
	if (err) {
		ERR("failed to map the gap marks: %s", strerror(-err));
		return err;
	}
	err = tb_slots_open(&r->slots, bpf_map__fd(r->skel->maps.slot_pos),
			    bpf_map__fd(r->skel->maps.slots));
	if (err) {
		ERR("failed to map the slot rings: %s", strerror(-err));
		return err;
	}
	err = tb_sched_load(r->sched, bpf_map__fd(r->skel->maps.traced),
			    bpf_map__fd(r->skel->maps.rings), bpf_map__fd(r->skel->maps.tb_ctl),
			    &r->rb, rec_on_record, r);
	if (err)
		return err;
	tb_ctl_kernel(&r->ctl, tb_sched_tp_off_fd(r->sched));
	pin_session_maps(r);
	return 0;
}

static int trace_process(struct recorder *r, pid_t pid, __u64 gen)
{
	int err = add_traced(r, pid, gen);

	if (err) {
		ERR("failed to trace process %d: %s", pid, strerror(-err));
		tb_hint_bpf(err, NULL);
		return err;
	}
	tb_fast_target(r->fast, (uint32_t)pid);
	return 0;
}

/* Lifecycle tracepoints first, so that no fork of a target is missed; then
 * the targets (the command started, held before exec) and their objects'
 * probes. */
int rec_attach_targets(struct recorder *r)
{
	const struct tb_record_opts *o = r->o;
	int err, i;

	err = record_bpf__attach(r->skel);
	if (err) {
		ERR("failed to attach to the sched_process_* tracepoints: %s", strerror(-err));
		tb_hint_bpf(err, "run with -v to see libbpf's log");
		return err;
	}
	err = tb_sched_attach(r->sched);
	if (err)
		return err;
	if (o->cmd) {
		err = rec_spawn_child(r, r->exe);
		if (err) {
			ERR("failed to start '%s': %s", o->cmd[0], strerror(-err));
			return err;
		}
		err = trace_process(r, r->child, 1);
		if (err)
			return err;
	}
	for (i = 0; i < o->npids; i++) {
		err = trace_process(r, o->pids[i], 2 + i);
		if (err)
			return err;
		rec_write_comms(r, o->pids[i]);
		rec_write_cmdline(r, o->pids[i]);
	}
	for (i = 0; i < r->found.n; i++) {
		err = attach_object(r, r->found.v[i], true);
		if (err)
			return err;
	}
	attach_loader_hook(r);
	return 0;
}
