// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fast.c - the recorder's side of the fast path (see fast.h).
 *
 * The session's directory is TRACEBPF_FAST_ROOT/s<recorder pid>; a traced
 * process that asks for a ring gets a directory <pid> in it, owned by its
 * user with mode 0700, holding `ctl` (the session's switch, read-only) and
 * its threads' rings r<tid>-<key>; TRACEBPF_FAST_ROOT/<pid> is a symbolic
 * link to it, which is how the process finds it. A session a recorder left
 * behind (killed) is switched off and removed by the next one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "tbrecords.h"
#include "record.skel.h"
#include "fast.h"
#include "rings.h"
#include "tbfile.h"
#include "tracebpf/trace.h"

_Static_assert(sizeof(struct tb_fast_rec) == sizeof(struct tracebpf_fast_rec), "fast rec");
_Static_assert(offsetof(struct tb_fast_rec, ts) == offsetof(struct tracebpf_fast_rec, ts),
	       "fast rec");
_Static_assert(offsetof(struct tb_fast_rec, site) == offsetof(struct tracebpf_fast_rec, site),
	       "fast rec");
_Static_assert(offsetof(struct tb_fast_rec, args) == TRACEBPF_FAST_HEAD &&
	       TB_FAST_HEAD == TRACEBPF_FAST_HEAD, "fast rec");
_Static_assert(TB_FAST_EVENT_STR == TRACEBPF_FAST_EVENT_STR && TB_STR_MAX == TRACEBPF_FAST_STR_MAX &&
	       TB_FAST_STR_NULL == TRACEBPF_FAST_STR_NULL &&
	       TB_FAST_NAME_NULL == TRACEBPF_FAST_NAME_NULL && TB_FAST_EVENT_ID == TRACEBPF_FAST_EVENT_ID &&
	       sizeof(struct tb_fast_id) == sizeof(struct tracebpf_fast_id) &&
	       offsetof(struct tb_fast_id, name_len) == offsetof(struct tracebpf_fast_id, name_len) &&
	       sizeof(struct tb_fast_str) == sizeof(struct tracebpf_fast_str) &&
	       offsetof(struct tb_fast_str, flags) == offsetof(struct tracebpf_fast_str, flags),
	       "string samples: lib/tbrecords.h and trace.h must agree");
_Static_assert(TB_FAST_EVENT == TRACEBPF_FAST_EVENT && TB_FAST_SITE == TRACEBPF_FAST_SITE,
	       "fast rec types");

#define ERR(fmt, ...) fprintf(stderr, "tracebpf: record: " fmt "\n", ##__VA_ARGS__)
#define BPF_FS "/sys/fs/bpf"
#define BPF_FS_MAGIC_ 0xcafe4a11
#define DRAIN_MAX (128 * 1024)   /* the kernel's BPF_MAX_USER_RINGBUF_SAMPLES */

struct fring {
	int fd;                /* -1: a free slot */
	uint32_t pid, tid;
	uint64_t key;
	uint64_t dead;         /* the round its thread was seen gone, 0 alive */
	uint64_t dead_ts;      /* when (its exit or exec record) */
	const unsigned long *pos;  /* consumer page, producer page (read-only) */
	char path[96];         /* "" once unpinned */
};

struct fproc {
	uint32_t pid;
	int ctl_fd;            /* its switch (one per process: it may write it) */
	bool refused;          /* another session has it */
	char dir[80];
};

struct req {
	uint32_t pid, tid;
	uint64_t key;
};

/* A thread killed in the middle of writing a sample: one event lost. */
struct lost {
	uint32_t pid, tid;
	uint64_t ts;
};

struct tb_fast {
	struct record_bpf *skel;
	struct tb_fast_opts o;
	int tmpl_fd, outer_fd, drain_fd;
	char sess[64];
	struct fring *rings;   /* by slot */
	struct fproc *procs;
	size_t nprocs;
	struct req *reqs;
	size_t nreqs, creqs;
	uint64_t round, lost;
	unsigned fill;             /* tb_fast_fill's */
	struct lost *lost_v;       /* not yet marked in the trace */
	size_t nlost;
	bool said_full, said_err;
};

/* A process's switch set by another session that records it too: not
 * LIVE, so the process takes its probes (both sessions see them). */
#define TB_FAST_SHARED 0x44524853u   /* "SHRD" */

/* What the recorder maps of a thread's ring: the consumer and producer
 * positions' pages (it never reads the data: the drain program does). */
#define RING_META (2 * 4096)

static bool pid_alive(long pid)
{
	return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

/* bpffs at /sys/fs/bpf, mounted when missing (as bpftool does). */
static int need_bpffs(void)
{
	struct statfs sf;

	if (!statfs(BPF_FS, &sf) && sf.f_type == BPF_FS_MAGIC_)
		return 0;
	if (mount("bpf", BPF_FS, "bpf", 0, NULL))
		return -errno;
	fprintf(stderr, "tracebpf: record: mounted the BPF filesystem on %s (for the fast "
			"path)\n", BPF_FS);
	return 0;
}

static int mkdir_mode(const char *path, mode_t mode)
{
	if (mkdir(path, mode) && errno != EEXIST)
		return -errno;
	return chmod(path, mode) ? -errno : 0;
}

static void ctl_dead(int fd);

/* Switches a left-behind session off (its processes stop writing) and
 * removes its pins. */
static void remove_session(const char *dir, bool off)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[PATH_MAX];

	while (d && (e = readdir(d))) {
		int fd;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (e->d_type == DT_DIR) {
			remove_session(path, off);
			continue;
		}
		if (off && !strcmp(e->d_name, "ctl") && (fd = bpf_obj_get(path)) >= 0) {
			ctl_dead(fd);
			close(fd);
		}
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* Links into nothing (a process's link after its session is gone). */
static void sweep_links(DIR *d)
{
	struct dirent *e;
	char path[PATH_MAX];
	struct stat st;

	while ((e = readdir(d))) {
		snprintf(path, sizeof(path), "%s/%s", TRACEBPF_FAST_ROOT, e->d_name);
		if (e->d_type == DT_LNK && stat(path, &st))
			unlink(path);
	}
}

/* Sessions whose recorder is gone, and links into nothing. */
static void sweep(void)
{
	DIR *d = opendir(TRACEBPF_FAST_ROOT);
	struct dirent *e;
	char path[PATH_MAX];

	if (!d)
		return;
	while ((e = readdir(d))) {
		snprintf(path, sizeof(path), "%s/%s", TRACEBPF_FAST_ROOT, e->d_name);
		if (e->d_name[0] == 's' && e->d_type == DT_DIR && !pid_alive(atol(e->d_name + 1)))
			remove_session(path, true);
	}
	rewinddir(d);
	sweep_links(d);
	closedir(d);
}

void tb_fast_sweep_recorder(pid_t recorder)
{
	char path[PATH_MAX];
	DIR *d;

	snprintf(path, sizeof(path), "%s/s%d", TRACEBPF_FAST_ROOT, (int)recorder);
	remove_session(path, true);
	d = opendir(TRACEBPF_FAST_ROOT);
	if (d) {
		sweep_links(d);
		closedir(d);
	}
}

static int make_template(struct tb_fast *f)
{
	f->tmpl_fd = bpf_map_create(BPF_MAP_TYPE_USER_RINGBUF, "tb_fast_tmpl", 0, 0,
				    f->o.ring_size, NULL);
	return f->tmpl_fd < 0 ? -errno : 0;
}

/* A process's switch: made off, LIVE once the process is this session's
 * alone (get_proc), off again when the session ends. */
static int make_ctl(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_MMAPABLE);
	struct tracebpf_fast_ctl off = { 0, (uint32_t)getpid() };
	__u32 zero = 0;
	int fd, err;

	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "tb_fast_ctl", 4, sizeof(off), 1, &mo);
	if (fd < 0)
		return -errno;
	if (bpf_map_update_elem(fd, &zero, &off, 0)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static int ctl_set(int fd, uint32_t live)
{
	struct tracebpf_fast_ctl v = { live, (uint32_t)getpid() };
	__u32 zero = 0;

	return bpf_map_update_elem(fd, &zero, &v, 0) ? -errno : 0;
}

static void ctl_dead(int fd)
{
	if (fd >= 0)
		ctl_set(fd, 0);
}

/* The recorder of e when it is another live session's directory, or 0. */
static long other_recorder(const struct dirent *e)
{
	long p = e->d_name[0] == 's' ? atol(e->d_name + 1) : 0;

	return e->d_type == DT_DIR && p != getpid() && pid_alive(p) ? p : 0;
}

/* The recorder of another live session than ours, or 0. */
static long other_session(void)
{
	DIR *d = opendir(TRACEBPF_FAST_ROOT);
	struct dirent *e;
	long pid = 0;

	while (d && !pid && (e = readdir(d)))
		pid = other_recorder(e);
	if (d)
		closedir(d);
	return pid;
}

/* Switches every process another live session has on its fast path to
 * its probes (TB_FAST_SHARED), so that this session sees all of its
 * events too. */
static void share_others(void)
{
	DIR *d = opendir(TRACEBPF_FAST_ROOT);
	char path[PATH_MAX], target[96];
	struct tracebpf_fast_ctl v;
	struct dirent *e;
	__u32 zero = 0;
	ssize_t n;
	long rec;
	int fd;

	while (d && (e = readdir(d))) {
		if (e->d_type != DT_LNK)
			continue;
		snprintf(path, sizeof(path), "%s/%s", TRACEBPF_FAST_ROOT, e->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n <= 1 || target[0] != 's')
			continue;
		target[n] = 0;
		rec = atol(target + 1);
		if (rec == getpid() || !pid_alive(rec))
			continue;
		snprintf(path, sizeof(path), "%s/%s/ctl", TRACEBPF_FAST_ROOT, e->d_name);
		fd = bpf_obj_get(path);
		if (fd < 0)
			continue;
		if (!bpf_map_lookup_elem(fd, &zero, &v) && v.live == TRACEBPF_FAST_LIVE)
			ctl_set(fd, TB_FAST_SHARED);
		close(fd);
	}
	if (d)
		closedir(d);
}

/* This session's directory. It is made with the fast path off too: it
 * tells other sessions that one more recorder runs (get_proc). */
static char announced[64];
static bool other_seen;   /* and said so */

static void say_other(long other)
{
	if (!other || other_seen)
		return;
	other_seen = true;
	fprintf(stderr, "tracebpf: record: another tracebpf (pid %ld) is recording: while both "
			"record, processes take their probes for every event\n", other);
}

/* Sessions announce themselves, then look at the others; a process is
 * given the fast path only after its link is made and no other session
 * is seen (get_proc). So of two recorders one always sees the other:
 * either it is the later one and switches the other's processes to their
 * probes before attaching its own, or the earlier one sees the later's
 * directory and keeps its new processes off. No process is then on the
 * fast path of one session while another records it. */
static int announce(void)
{
	long other;
	int err;

	err = need_bpffs();
	if (err)
		return err;
	err = mkdir_mode(TRACEBPF_FAST_ROOT, 0711);
	if (err)
		return err;
	sweep();
	snprintf(announced, sizeof(announced), "%s/s%d", TRACEBPF_FAST_ROOT, (int)getpid());
	remove_session(announced, false);   /* a pid of ours reused: nothing lives there */
	err = mkdir_mode(announced, 0711);
	if (err) {
		announced[0] = 0;
		return err;
	}
	share_others();
	other = other_session();
	say_other(other);
	return 0;
}

void tb_fast_pin_stopped(int fd)
{
	char path[PATH_MAX];

	if (!announced[0])
		return;
	snprintf(path, sizeof(path), "%s/stopped", announced);
	if (bpf_obj_pin(fd, path))
		fprintf(stderr, "tracebpf: record: warning: failed to pin %s (%s): another "
				"tracebpf may resume a process before this one has attached to "
				"it\n", path, strerror(errno));
}

bool tb_fast_held_elsewhere(uint32_t pid)
{
	DIR *d = opendir(TRACEBPF_FAST_ROOT);
	char path[PATH_MAX];
	struct dirent *e;
	bool held = false;
	__u32 why;
	int fd;

	while (d && !held && (e = readdir(d))) {
		if (!other_recorder(e))
			continue;
		snprintf(path, sizeof(path), "%s/%s/stopped", TRACEBPF_FAST_ROOT, e->d_name);
		fd = bpf_obj_get(path);
		if (fd < 0)
			continue;
		held = !bpf_map_lookup_elem(fd, &pid, &why);
		close(fd);
	}
	if (d)
		closedir(d);
	return held;
}

static void withdraw(void)
{
	if (announced[0])
		remove_session(announced, false);
	announced[0] = 0;
}

static int make_session(struct tb_fast *f)
{
	int err = announce();

	if (!err)
		snprintf(f->sess, sizeof(f->sess), "%s", announced);
	return err;
}

static void fast_off(const char *why, int err)
{
	fprintf(stderr, "tracebpf: record: the fast path is off (%s%s%s): every event takes "
			"its probe\n", why, err ? ": " : "", err ? strerror(-err) : "");
}

int tb_fast_prepare(struct tb_fast **fp, struct record_bpf *skel,
		    const struct tb_fast_opts *o)
{
	struct tb_fast *f;
	int err;

	*fp = NULL;
	if (o->off) {
		fast_off("--no-fast-path", 0);
		announce();   /* others' processes must still take the probes */
		goto off;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->skel = skel;
	f->o = *o;
	f->tmpl_fd = f->outer_fd = f->drain_fd = -1;
	f->rings = calloc(o->max_rings, sizeof(*f->rings));
	if (!f->rings) {
		free(f);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < o->max_rings; i++)
		f->rings[i].fd = -1;
	err = make_template(f);
	if (err) {
		fast_off("no BPF user ring buffers", err);
		tb_fast_close(f);
		goto off;
	}
	err = make_session(f);
	if (err) {
		fast_off("cannot pin in " BPF_FS, err);
		tb_fast_close(f);
		goto off;
	}
	err = bpf_map__set_max_entries(skel->maps.fast_rings, o->max_rings);
	if (!err)
		err = bpf_map__set_inner_map_fd(skel->maps.fast_rings, f->tmpl_fd);
	if (err) {
		tb_fast_close(f);
		return err;
	}
	*fp = f;
	return 0;
off:
	bpf_program__set_autoload(skel->progs.tb_fast_drain, false);
	bpf_program__set_autoload(skel->progs.tb_ring_req, false);
	return 0;
}

int tb_fast_start(struct tb_fast *f)
{
	if (!f)
		return 0;
	f->outer_fd = bpf_map__fd(f->skel->maps.fast_rings);
	f->drain_fd = bpf_program__fd(f->skel->progs.tb_fast_drain);
	return 0;
}

/* The user a process's pins belong to: its file-system ids. */
static int proc_ids(uint32_t pid, uid_t *uid, gid_t *gid)
{
	char path[64], line[256];
	unsigned long v[4];
	int found = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	fp = fopen(path, "re");
	if (!fp)
		return -errno;
	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "Uid: %lu %lu %lu %lu", &v[0], &v[1], &v[2], &v[3]) == 4) {
			*uid = (uid_t)v[3];
			found |= 1;
		} else if (sscanf(line, "Gid: %lu %lu %lu %lu", &v[0], &v[1], &v[2],
				  &v[3]) == 4) {
			*gid = (gid_t)v[3];
			found |= 2;
		}
	}
	fclose(fp);
	return found == 3 ? 0 : -ENOENT;
}

static int pin_for(int fd, const char *path, uid_t uid, gid_t gid, mode_t mode)
{
	if (bpf_obj_pin(fd, path))
		return -errno;
	if (chown(path, uid, gid) || chmod(path, mode)) {
		int err = -errno;

		unlink(path);
		return err;
	}
	return 0;
}

/* TRACEBPF_FAST_ROOT/<pid> -> s<us>/<pid>, unless a live session has it. */
/* A process's link (TRACEBPF_FAST_ROOT/<pid>) and what it holds when it
 * leads into this session (s<recorder>/<pid>). */
static void link_paths(const struct tb_fast *f, uint32_t pid, char link[96], char target[96])
{
	snprintf(link, 96, "%s/%u", TRACEBPF_FAST_ROOT, pid);
	snprintf(target, 96, "%s/%u", strrchr(f->sess, '/') + 1, pid);
}

static int link_proc(struct tb_fast *f, struct fproc *p)
{
	char link[96], target[96], cur[96];
	ssize_t n;

	link_paths(f, p->pid, link, target);
	n = readlink(link, cur, sizeof(cur) - 1);
	if (n > 0) {
		cur[n] = 0;
		if (!strcmp(cur, target))
			return 0;
		if (cur[0] == 's' && pid_alive(atol(cur + 1)))
			return -EBUSY;
	}
	unlink(link);
	return symlink(target, link) ? -errno : 0;
}

/* A process's link, if it leads into this session. */
static void unlink_ours(struct tb_fast *f, uint32_t pid)
{
	char link[96], target[96], cur[96];
	ssize_t n;

	link_paths(f, pid, link, target);
	n = readlink(link, cur, sizeof(cur) - 1);
	if (n > 0) {
		cur[n] = 0;
		if (!strcmp(cur, target))
			unlink(link);
	}
}

/* The directory of a process that asked for a ring (made once). */
static struct fproc *get_proc(struct tb_fast *f, uint32_t pid, uid_t uid, gid_t gid)
{
	struct fproc *p, *nv;
	char path[128];
	long other;
	int err;

	for (size_t i = 0; i < f->nprocs; i++)
		if (f->procs[i].pid == pid)
			return f->procs[i].refused ? NULL : &f->procs[i];
	nv = realloc(f->procs, (f->nprocs + 1) * sizeof(*nv));
	if (!nv)
		return NULL;
	f->procs = nv;
	p = &f->procs[f->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	snprintf(p->dir, sizeof(p->dir), "%s/%u", f->sess, pid);
	snprintf(path, sizeof(path), "%s/ctl", p->dir);
	p->ctl_fd = make_ctl();
	err = p->ctl_fd < 0 ? p->ctl_fd : 0;
	if (!err && mkdir(p->dir, 0700))
		err = -errno;
	if (!err && chown(p->dir, uid, gid))
		err = -errno;
	if (!err)
		err = pin_for(p->ctl_fd, path, uid, gid, 0600);
	if (!err)
		err = link_proc(f, p);
	if (!err && (other = other_session())) {
		say_other(other);
		err = -EUSERS;   /* announce(): the other session may record it too */
	}
	if (!err)
		err = ctl_set(p->ctl_fd, TRACEBPF_FAST_LIVE);
	if (err) {
		if (err != -EUSERS && !(err == -EBUSY && other_seen))
			fprintf(stderr, "tracebpf: record: %s: process %u takes the probes for "
					"every event\n", err == -EBUSY ? "another tracebpf records "
					"it" : "failed to make its fast-path directory", pid);
		unlink_ours(f, pid);
		remove_session(p->dir, false);
		if (p->ctl_fd >= 0)
			close(p->ctl_fd);
		p->ctl_fd = -1;
		p->refused = true;
		return NULL;
	}
	return p;
}

static struct fring *find_ring(struct tb_fast *f, uint32_t pid, uint32_t tid, uint64_t key)
{
	for (unsigned i = 0; i < f->o.max_rings; i++) {
		struct fring *r = &f->rings[i];

		if (r->fd >= 0 && !r->dead && r->pid == pid && r->tid == tid && r->key == key)
			return r;
	}
	return NULL;
}

static struct fring *free_slot(struct tb_fast *f, __u32 *slot)
{
	for (unsigned i = 0; i < f->o.max_rings; i++)
		if (f->rings[i].fd < 0) {
			*slot = i;
			return &f->rings[i];
		}
	return NULL;
}

/* Made, pinned for the thread's user, and in fast_rings at its slot. */
static int make_ring(struct tb_fast *f, struct fring *r, __u32 slot, const struct req *q,
		     uid_t uid, gid_t gid)
{
	char name[BPF_OBJ_NAME_LEN];
	struct fproc *p = get_proc(f, q->pid, uid, gid);
	void *pos;
	int fd, err;

	if (!p)
		return -ESRCH;
	snprintf(name, sizeof(name), "tb_fr%u", q->tid % 1000000000u);
	fd = bpf_map_create(BPF_MAP_TYPE_USER_RINGBUF, name, 0, 0, f->o.ring_size, NULL);
	if (fd < 0)
		return -errno;
	pos = mmap(NULL, RING_META, PROT_READ, MAP_SHARED, fd, 0);
	snprintf(r->path, sizeof(r->path), "%s/r%u-%llx", p->dir, q->tid,
		 (unsigned long long)q->key);
	err = pos == MAP_FAILED ? -errno : 0;
	if (!err && bpf_map_update_elem(f->outer_fd, &slot, &fd, 0))
		err = -errno;
	if (!err)
		err = pin_for(fd, r->path, uid, gid, 0600);
	if (err) {
		if (pos != MAP_FAILED)
			munmap(pos, RING_META);
		bpf_map_delete_elem(f->outer_fd, &slot);
		close(fd);
		return err;
	}
	r->fd = fd;
	r->pos = pos;
	r->pid = q->pid;
	r->tid = q->tid;
	r->key = q->key;
	r->dead = 0;
	return 0;
}

static void serve_request(struct tb_fast *f, const struct req *q)
{
	char task[64];
	struct fring *r;
	uid_t uid = 0;
	gid_t gid = 0;
	__u32 slot;
	int err;

	snprintf(task, sizeof(task), "/proc/%u/task/%u", q->pid, q->tid);
	if (find_ring(f, q->pid, q->tid, q->key) || access(task, F_OK) ||
	    proc_ids(q->pid, &uid, &gid))
		return;   /* made already, or the thread is gone */
	r = free_slot(f, &slot);
	if (!r) {
		if (!f->said_full)
			fprintf(stderr, "tracebpf: record: all %u fast-path rings are in use: "
					"more threads take their probes (raise --max-fast-rings)\n",
				f->o.max_rings);
		f->said_full = true;
		return;
	}
	err = make_ring(f, r, slot, q, uid, gid);
	if (err == -ESRCH)
		return;   /* get_proc: the process takes its probes (said) */
	if (err && !f->said_err) {
		ERR("failed to make a fast-path ring for thread %u: %s (it takes the probes)",
		    q->tid, strerror(-err));
		f->said_err = true;
	}
}

void tb_fast_request(struct tb_fast *f, const struct tb_ring_req *q)
{
	struct req *nv;

	if (!f)
		return;
	if (f->nreqs == f->creqs) {
		size_t c = f->creqs ? 2 * f->creqs : 16;

		nv = realloc(f->reqs, c * sizeof(*nv));
		if (!nv)
			return;   /* the thread asks again */
		f->reqs = nv;
		f->creqs = c;
	}
	f->reqs[f->nreqs++] = (struct req){ q->hdr.pid, q->hdr.tid, q->key };
}

/* Unpinned now (the same path may be asked for again: a new thread with
 * the tid, a new image), drained and closed in the next round. */
static void ring_gone(struct tb_fast *f, struct fring *r, uint64_t ts)
{
	r->dead_ts = ts;
	if (r->path[0])
		unlink(r->path);
	r->path[0] = 0;
	r->dead = f->round;
}

void tb_fast_exit(struct tb_fast *f, uint32_t pid, uint32_t tid, bool process, uint64_t ts)
{
	if (!f)
		return;
	for (unsigned i = 0; i < f->o.max_rings; i++) {
		struct fring *r = &f->rings[i];

		if (r->fd >= 0 && !r->dead && r->pid == pid && (process || r->tid == tid))
			ring_gone(f, r, ts);
	}
	for (size_t i = 0; process && i < f->nprocs; i++)
		if (f->procs[i].pid == pid && !f->procs[i].refused) {
			char link[96];

			snprintf(link, sizeof(link), "%s/%u", TRACEBPF_FAST_ROOT, pid);
			unlink(link);
			remove_session(f->procs[i].dir, false);
			close(f->procs[i].ctl_fd);
			f->procs[i] = f->procs[--f->nprocs];
			break;
		}
}

void tb_fast_exec(struct tb_fast *f, uint32_t pid, uint64_t ts)
{
	if (!f)
		return;
	for (unsigned i = 0; i < f->o.max_rings; i++)
		if (f->rings[i].fd >= 0 && !f->rings[i].dead && f->rings[i].pid == pid)
			ring_gone(f, &f->rings[i], ts);
}

/* One ring into this CPU's ring (as many runs as it takes). */
static int drain_ring(struct tb_fast *f, __u32 slot, struct fring *r)
{
	struct tb_fast_drain d;
	LIBBPF_OPTS(bpf_test_run_opts, t, .ctx_in = &d, .ctx_size_in = sizeof(d));
	int err;

	do {
		memset(&d, 0, sizeof(d));
		d.slot = slot;
		d.pid = r->pid;
		d.tid = r->tid;
		err = bpf_prog_test_run_opts(f->drain_fd, &t);
		if (err)
			return -errno;
		if (d.ret < 0)
			return (int)d.ret;
	} while (d.drained >= DRAIN_MAX && !d.full);
	return d.full;
}

static void unmap_ring(struct fring *r)
{
	munmap((void *)r->pos, RING_META);
	close(r->fd);
	r->fd = -1;
}

/* Bytes of r its thread has written and the drain not yet taken. */
static unsigned long ring_used(const struct fring *r)
{
	unsigned long cons = __atomic_load_n(&r->pos[0], __ATOMIC_ACQUIRE);
	unsigned long prod = __atomic_load_n(&r->pos[4096 / sizeof(long)], __ATOMIC_ACQUIRE);

	return prod - cons;
}

/* A ring whose thread is gone: anything left in it is the one sample the
 * thread was writing when it died (BUSY forever), lost. */
static void close_ring(struct tb_fast *f, __u32 slot, struct fring *r)
{
	if (ring_used(r)) {
		struct lost *nv = realloc(f->lost_v, (f->nlost + 1) * sizeof(*nv));

		f->lost++;
		if (nv) {
			f->lost_v = nv;
			nv[f->nlost++] = (struct lost){ r->pid, r->tid, r->dead_ts };
		}
	}
	bpf_map_delete_elem(f->outer_fd, &slot);
	unmap_ring(r);
}

/* ring_used, per mille of the ring's size. */
static unsigned ring_fill(const struct tb_fast *f, const struct fring *r)
{
	unsigned long used = ring_used(r);

	return used >= f->o.ring_size ? 1000 : (unsigned)(used * 1000 / f->o.ring_size);
}

/* Every ring into the recorder's rings; consume(ctx) empties those when
 * they fill up, and the drain goes on. */
void tb_fast_drain_all(struct tb_fast *f, void (*consume)(void *), void *ctx)
{
	if (!f)
		return;
	f->round++;
	f->fill = 0;
	for (__u32 i = 0; i < f->o.max_rings; i++) {
		struct fring *r = &f->rings[i];
		unsigned fill;
		int err;

		if (r->fd < 0)
			continue;
		fill = ring_fill(f, r);
		if (fill > f->fill)
			f->fill = fill;
		while ((err = drain_ring(f, i, r)) == 1)
			consume(ctx);
		if (err && !f->said_err) {
			ERR("failed to drain the fast-path ring of thread %u: %s", r->tid,
			    strerror(-err));
			f->said_err = true;
		}
		if (r->dead && r->dead < f->round)
			close_ring(f, i, r);
	}
}

void tb_fast_round_end(struct tb_fast *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nreqs; i++)
		serve_request(f, &f->reqs[i]);
	f->nreqs = 0;
}

void tb_fast_finish(struct tb_fast *f, void (*consume)(void *), void *ctx)
{
	struct timespec ms = { 0, 1000000 }, t;
	uint64_t now;

	if (!f)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t);
	now = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
	for (size_t i = 0; i < f->nprocs; i++)
		ctl_dead(f->procs[i].ctl_fd);
	/* A write that saw the session live takes well under this. */
	nanosleep(&ms, NULL);
	for (unsigned i = 0; i < f->o.max_rings; i++)
		if (f->rings[i].fd >= 0 && !f->rings[i].dead) {
			f->rings[i].dead = f->round;
			f->rings[i].dead_ts = now;
		}
	tb_fast_drain_all(f, consume, ctx);
}

unsigned tb_fast_fill(const struct tb_fast *f)
{
	return f ? f->fill : 0;
}

uint64_t tb_fast_lost(const struct tb_fast *f)
{
	return f ? f->lost : 0;
}

int tb_fast_marks(struct tb_fast *f, struct tb_writer *w)
{
	int err = 0;

	for (size_t i = 0; f && i < f->nlost && !err; i++) {
		struct tb_rec_gap m;

		memset(&m, 0, sizeof(m));
		m.hdr.type = TB_REC_GAP;
		m.hdr.size = sizeof(m);
		m.hdr.cpu = ~0u;
		m.hdr.ts = m.last_ts = f->lost_v[i].ts;
		m.hdr.pid = f->lost_v[i].pid;
		m.hdr.tid = f->lost_v[i].tid;
		m.count = 1;
		m.kind = TB_GAP_APP;
		m.flags = TB_GAPF_SWEPT;
		m.ntids = 1;
		m.tid[0] = f->lost_v[i].tid;
		err = tb_writer_append(w, &m.hdr);
	}
	if (f)
		f->nlost = 0;
	return err;
}

void tb_fast_close(struct tb_fast *f)
{
	withdraw();
	if (!f)
		return;
	for (size_t i = 0; i < f->nprocs; i++) {
		char link[96];

		/* no process writes into this session again */
		ctl_dead(f->procs[i].ctl_fd);
		snprintf(link, sizeof(link), "%s/%u", TRACEBPF_FAST_ROOT, f->procs[i].pid);
		if (!f->procs[i].refused)
			unlink(link);
		if (f->procs[i].ctl_fd >= 0)
			close(f->procs[i].ctl_fd);
	}
	if (f->sess[0])
		remove_session(f->sess, false);
	for (unsigned i = 0; i < f->o.max_rings; i++)
		if (f->rings[i].fd >= 0)
			unmap_ring(&f->rings[i]);
	if (f->tmpl_fd >= 0)
		close(f->tmpl_fd);
	free(f->rings);
	free(f->procs);
	free(f->reqs);
	free(f->lost_v);
	free(f);
}
