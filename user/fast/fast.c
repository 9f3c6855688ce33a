// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fast.c - the recorder's side of the fast path (see fast.h), its top
 * layer (fast_int.h): the session and the drain.
 *
 * The session's directory is TRACEBPF_FAST_ROOT/s<recorder pid>; a traced
 * process that asks for a ring gets a directory <pid> in it (root's, 0711:
 * docs/security.md), holding `ctl` (its switch) and the spares made ahead
 * of its threads (fast_pool.c); TRACEBPF_FAST_ROOT/<pid> is a symbolic
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

#include "format/tbrecords.h"
#include "record.skel.h"
#include "fast/fast_int.h"
#include "kern/kern.h"
#include "format/tbfile.h"
#include "tracebpf/fast_ring.h"

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
	       "string samples: lib/format/tbrecords.h and trace.h must agree");
_Static_assert(TB_FAST_EVENT == TRACEBPF_FAST_EVENT && TB_FAST_SITE == TRACEBPF_FAST_SITE,
	       "fast rec types");

#define BPF_FS "/sys/fs/bpf"


/* Links into nothing (a process's link after its session is gone). */
static void sweep_links(int root_fd)
{
	DIR *d = fast_dir_list(root_fd);
	struct dirent *e;
	struct stat st;

	while (d && (e = readdir(d)))
		if (!fstatat(root_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st.st_mode) &&
		    fstatat(root_fd, e->d_name, &st, 0))
			unlinkat(root_fd, e->d_name, 0);
	if (d)
		closedir(d);
}

/* Sessions whose recorder is gone, and links into nothing. */
static void sweep(int root_fd)
{
	DIR *d = fast_dir_list(root_fd);
	struct dirent *e;

	while (d && (e = readdir(d)))
		if (e->d_name[0] == 's' && !fast_pid_alive(atol(e->d_name + 1)))
			fast_dir_remove(root_fd, e->d_name, true);
	if (d)
		closedir(d);
	sweep_links(root_fd);
}

void tb_fast_sweep_recorder(pid_t recorder)
{
	int root_fd = fast_dir_open(AT_FDCWD, TRACEBPF_FAST_ROOT);
	char name[32];

	if (root_fd < 0)
		return;
	snprintf(name, sizeof(name), "s%d", (int)recorder);
	fast_dir_remove(root_fd, name, true);
	sweep_links(root_fd);
	close(root_fd);
}

static int make_template(struct tb_fast *f)
{
	f->tmpl_fd = bpf_map_create(BPF_MAP_TYPE_USER_RINGBUF, "tb_fast_tmpl", 0, 0,
				    f->o.ring_size, NULL);
	return f->tmpl_fd < 0 ? -errno : 0;
}

/* This session's directory. It is made with the fast path off too: it
 * tells other sessions that one more recorder runs (get_proc). */
static char announced[64];
static int root_fd = -1, sess_fd = -1;   /* TRACEBPF_FAST_ROOT, announced */

/* Sessions announce themselves, then look at the others; a process is
 * given the fast path only after its link is made and no other session
 * is seen (get_proc). So of two recorders one always sees the other:
 * either it is the later one and switches the other's processes to their
 * probes before attaching its own, or the earlier one sees the later's
 * directory and keeps its new processes off. No process is then on the
 * fast path of one session while another records it. */
static int announce(void)
{
	char name[32];
	long other;
	int fd;

	if (root_fd < 0 && (root_fd = fast_dir_root()) < 0)
		return root_fd;
	sweep(root_fd);
	snprintf(name, sizeof(name), "s%d", (int)getpid());
	fast_dir_remove(root_fd, name, false);   /* a pid of ours reused: nothing lives there */
	fd = fast_dir_make(root_fd, name, 0711, name);
	if (fd < 0)
		return fd;
	sess_fd = fd;
	snprintf(announced, sizeof(announced), "%s/%s", TRACEBPF_FAST_ROOT, name);
	fast_share_others();
	other = fast_other_session();
	fast_say_other(other);
	return 0;
}

void tb_fast_pin_stopped(int fd)
{
	if (!announced[0])
		return;
	if (fast_dir_pin(fd, sess_fd, "stopped", 0, 0, 0600))
		fprintf(stderr, "tracebpf: record: warning: failed to pin %s/stopped (%s): "
				"another tracebpf may resume a process before this one has "
				"attached to it\n", announced, strerror(errno));
}

void tb_fast_pin_dir_name(const char *session, char *buf, size_t size)
{
	snprintf(buf, size, "session-%s", session);
	for (char *c = buf; *c; c++)
		if (*c == '.')
			*c = '_';   /* bpffs takes no '.' in a name */
}

int tb_fast_pin_session_map(const char *session, int fd, const char *file)
{
	char name[64];
	int dir, err;

	if (!announced[0])
		return -ENOENT;
	tb_fast_pin_dir_name(session, name, sizeof(name));
	dir = fast_dir_make(sess_fd, name, 0711, name);
	if (dir < 0)
		return dir;
	err = fast_dir_pin(fd, dir, file, 0, 0, 0600);
	close(dir);
	return err;
}

bool tb_fast_held_elsewhere(uint32_t pid)
{
	DIR *d = fast_dir_entries();
	char path[PATH_MAX];
	struct dirent *e;
	bool held = false;
	__u32 why;
	int fd;

	while (d && !held && (e = readdir(d))) {
		if (!fast_other_recorder(e))
			continue;
		snprintf(path, sizeof(path), "%s/stopped", e->d_name);
		fd = fast_dir_get(path);
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
		fast_dir_remove(root_fd, strrchr(announced, '/') + 1, false);
	announced[0] = 0;
	if (sess_fd >= 0)
		close(sess_fd);
	sess_fd = -1;
}

static int make_session(struct tb_fast *f)
{
	int err = announce();

	if (!err) {
		snprintf(f->sess, sizeof(f->sess), "%s", announced);
		f->root_fd = root_fd;
		f->sess_fd = sess_fd;
	}
	return err;
}

/* The session's directory can be made (it is made by tb_fast_start). */
static int can_pin(void)
{
	if (root_fd < 0)
		root_fd = fast_dir_root();
	return root_fd < 0 ? root_fd : 0;
}

static void fast_off(const char *why, int err)
{
	fprintf(stderr, "tracebpf: record: the fast path is off (%s%s%s): every event takes "
			"its probe\n", why, err ? ": " : "", err ? strerror(-err) : "");
}

/* Whether the session can pin (can_pin): 0; 1 when it cannot, said, f
 * closed (the fast path is off); a directory someone else made refuses
 * the recording (said): -EPERM, f closed. */
static int pin_or_off(struct tb_fast *f)
{
	int err = can_pin();

	if (!err)
		return 0;
	tb_fast_close(f);
	if (err == -EPERM)
		return err;
	fast_off("cannot pin in " BPF_FS, err);
	return 1;
}

int tb_fast_prepare(struct tb_fast **fp, struct record_bpf *skel,
		    const struct tb_fast_opts *o)
{
	struct tb_fast *f;
	int err;

	*fp = NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->skel = skel;
	f->o = *o;
	f->tmpl_fd = f->outer_fd = f->drain_fd = f->root_fd = f->sess_fd = -1;
	f->rings = calloc(o->max_rings, sizeof(*f->rings));
	if (!f->rings) {
		free(f);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < o->max_rings; i++)
		f->rings[i].fd = -1;
	if (o->off) {
		/* switches only: each process's categories, no rings */
		fprintf(stderr, "tracebpf: record: the fast path is off (--no-fast-path): "
				"every event of a category recorded takes its probe\n");
		err = pin_or_off(f);
		if (err < 0)
			return err;
		if (!err)
			*fp = f;
		goto off;
	}
	err = make_template(f);
	if (err) {
		fast_off("no BPF user ring buffers", err);
		tb_fast_close(f);
		goto off;
	}
	err = pin_or_off(f);
	if (err < 0)
		return err;
	if (err)
		goto off;
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

/* The session's directory is made here, once the releaser runs (which
 * removes it if the recorder is killed): a recorder killed while loading
 * its programs left it behind. Without the fast path the directory is
 * made all the same: others' processes must still take the probes. */
int tb_fast_start(struct tb_fast *f)
{
	int err;

	if (!f) {
		err = announce();
		return err == -EPERM ? err : 0;   /* a directory someone else made: said */
	}
	err = make_session(f);
	if (err == -EPERM)
		return err;
	if (err) {
		fast_off("cannot pin in " BPF_FS, err);
		f->broken = true;   /* every process on its probes */
		return 0;
	}
	if (!f->o.off) {
		f->outer_fd = bpf_map__fd(f->skel->maps.fast_rings);
		f->drain_fd = bpf_program__fd(f->skel->progs.tb_fast_drain);
	}
	return 0;
}

bool tb_fast_has_rings(const struct tb_fast *f)
{
	return f && !f->o.off && !f->broken;
}

/* Runs tb_fast_drain for r into d: with limit 0 it says what r's events
 * are subject to now, else it moves r's consumer position past that many
 * samples (or the most one run may: d->drained says). A negative errno
 * when the program cannot run (no ring can be drained); RING_REFUSED when
 * it ran and the kernel refused this ring (d->ret): a fault of the ring's
 * process alone (fast_fault). */
#define RING_REFUSED 1
static int drain_run(struct tb_fast *f, __u32 slot, const struct fring *r, uint64_t limit,
		     struct tb_fast_drain *d)
{
	LIBBPF_OPTS(bpf_test_run_opts, t, .ctx_in = d, .ctx_size_in = sizeof(*d));

	memset(d, 0, sizeof(*d));
	d->slot = slot;
	d->pid = r->pid;
	d->tid = r->tid;
	d->limit = limit;
	if (bpf_prog_test_run_opts(f->drain_fd, &t))
		return -errno;
	return d->ret < 0 ? RING_REFUSED : 0;
}

/* r holds what trace.h never writes: its producer position is further
 * ahead than r holds (what lies past a ring's worth would be an older
 * lap, read again), or the kernel refuses to step over it (a position
 * or header it cannot take). r is read no more (what it held since the
 * last round is left out, said here), and its process alone takes its
 * probes from its next event, so that nothing after goes unrecorded;
 * every other process keeps its fast path. */
static void fast_fault(struct tb_fast *f, struct fring *r, const char *what)
{
	r->corrupt = true;
	f->faults++;
	ERR("thread %u of process %u %s (trace.h never does: did the program write over its "
	    "ring?): what the ring held since the last round is left out, and the process "
	    "takes its probes from now on", r->tid, r->pid, what);
	fast_share_proc(f, r->pid);
}

static void fast_corrupt(struct tb_fast *f, struct fring *r)
{
	fast_fault(f, r, "moved its fast-path ring's producer position past what the ring holds");
}

static void fast_refused(struct tb_fast *f, struct fring *r)
{
	fast_fault(f, r, "left its fast-path ring in a state the kernel refuses to drain");
}

/* Samples read from one ring before its consumer position is moved and
 * the recorder's own rings are consumed: 8 MiB of batches. The first lap
 * of a 128 MiB ring read in one go held the thread's ring full (the
 * position moves only after the reading) and the recorder's rings
 * unread for over half a second, while the thread's events went to its
 * probes: the long loop of bench/fast.sh lost 66,588-212,434 of 40 M
 * events in 3 runs of 7 that way. */
#define READ_CHUNK 2048u
/* And bytes: a thread whose ring is full waits for the position to move
 * (tracebpf/fast_producer.h, tracebpf__fast_wait), so it moves every
 * 256 KiB, about 5,000 events. Moving it is one BPF_PROG_TEST_RUN. */
#define READ_CHUNK_BYTES (256u << 10)

/* The consumer position moved past t's samples (and the one the kernel
 * refuses, which it reports). The kernel finding fewer samples than were
 * read cannot happen with trace.h's protocol: like the kernel's own
 * refusal, it is the ring's fault (RING_REFUSED). */
static int drain_move(struct tb_fast *f, __u32 slot, const struct fring *r,
		      const struct fast_taken *t)
{
	uint64_t n = t->samples + t->refused, moved = 0;
	struct tb_fast_drain d;
	int err;

	f->steps += t->samples;
	while (moved < n) {
		err = drain_run(f, slot, r, n - moved, &d);
		if (err)
			return err;
		if (!d.drained)
			return RING_REFUSED;
		moved += d.drained;
	}
	return 0;
}

/* One ring read into the recorder's records, up to `until` (its producer
 * position when the round began: a thread writing faster than the drain
 * would otherwise hold the round forever; what it wrote since is stamped
 * after the cut), READ_CHUNK samples or READ_CHUNK_BYTES at a time, its
 * consumer position moved past each chunk, and the recorder's rings consumed between
 * them. */
static int drain_ring(struct tb_fast *f, __u32 slot, struct fring *r, unsigned long until)
{
	struct fast_cut c = { .until = until, .max = READ_CHUNK, .max_bytes = READ_CHUNK_BYTES,
			      .live = f->ctl };
	struct tb_fast_drain d;
	struct fast_taken t;
	uint64_t lost = 0;
	int err;

	if (fast_idle(r, until))
		return 0;
	err = drain_run(f, slot, r, 0, &d);
	if (err)
		return err == RING_REFUSED ? (fast_refused(f, r), 0) : err;
	c.skip = d.skip;
	c.stop_ts = d.stop_ts;
	do {
		t = fast_read(f, r, &c, &lost);
		if (t.corrupt) {
			fast_corrupt(f, r);
			return 0;
		}
		if (t.err)   /* the recorder reads on as when the kernel refuses */
			return t.err;
		err = drain_move(f, slot, r, &t);
		if (err == RING_REFUSED) {
			fast_refused(f, r);
			return 0;
		}
		if (err)
			return err;
		if (t.more && f->between)
			f->between(f->put_ctx);
	} while (t.more && !t.refused);
	return 0;
}

/* A ring whose thread is gone: anything left in it is the one sample the
 * thread was writing when it died (BUSY forever), lost. */
static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void add_lost(struct tb_fast *f, const struct fring *r, uint64_t n, uint64_t ts)
{
	struct lost *nv = realloc(f->lost_v, (f->nlost + 1) * sizeof(*nv));

	f->lost += n;
	if (nv) {
		f->lost_v = nv;
		nv[f->nlost++] = (struct lost){ r->pid, r->tid, ts, n };
	}
}

/* A ring whose thread is gone, after its last reading: what the kernel
 * could not step over is the sample its thread was writing when killed (a
 * batch it left open holds none, unless that reading stopped at one). */
static void close_ring(struct tb_fast *f, __u32 slot, struct fring *r)
{
	if (fast_ring_used(r) && r->torn)
		add_lost(f, r, 1, r->dead_ts);
	fast_close_slot(f, slot);
}

/* The drain program cannot run (BPF_PROG_TEST_RUN refused): every process
 * takes its probes from its next event on, and what the rings hold is
 * read by the recorder itself (fast_salvage.c) every round, each ring
 * closed once its thread can write no more into it: gone (the exit seen a
 * round ago), moved to a bigger ring, or the recording over. A thread that
 * found its session live just before the switch may write one more sample
 * any time later (held between the switch and its reservation). */
static void drain_broken(struct tb_fast *f, int err)
{
	uint64_t now = mono_ns();

	if (!f->broken) {
		ERR("failed to drain the fast-path rings: %s: every thread takes its probes "
		    "from now on (the recorder reads what their rings hold)", strerror(-err));
		f->broken = true;
		fast_share_all(f);
	}
	for (__u32 i = 0; i < f->o.max_rings; i++) {
		struct fring *r = &f->rings[i];
		struct fast_cut c = { .stop_ts = ~0ull, .live = f->ctl };
		uint64_t n = 0;

		if (r->fd < 0 || r->spare)
			continue;
		c.final = (r->dead && r->dead < f->round) || r->retired;
		c.until = __atomic_load_n(&r->pos[4096 / sizeof(long)], __ATOMIC_ACQUIRE);
		if (!r->corrupt && fast_read(f, r, &c, &n).corrupt)
			fast_corrupt(f, r);
		if (n)
			add_lost(f, r, n, r->dead ? r->dead_ts : now);
		if (c.final)
			fast_close_slot(f, i);
	}
}

/* ring_used, per mille of the ring's size. */
static unsigned ring_fill(const struct fring *r)
{
	unsigned long used = fast_ring_used(r);

	return used >= r->size ? 1000 : (unsigned)(used * 1000 / r->size);
}

/* One thread's ring drained; closed if its thread is gone, or if it is a
 * ring the thread left for a bigger one and is empty now. */
static void drain_one(struct tb_fast *f, __u32 i)
{
	struct fring *r = &f->rings[i];
	unsigned long until = __atomic_load_n(&r->pos[4096 / sizeof(long)], __ATOMIC_ACQUIRE);
	int err;

	if (r->corrupt) {
		if ((r->dead && r->dead < f->round) || r->retired)
			fast_close_slot(f, i);
		return;
	}
	r->fill = ring_fill(r);
	if (r->fill > f->fill)
		f->fill = r->fill;
	err = drain_ring(f, i, r, until);
	if (err) {
		drain_broken(f, err);
		return;
	}
	if (r->dead && r->dead < f->round)
		close_ring(f, i, r);
	else if (r->retired && !fast_ring_used(r))
		fast_close_slot(f, i);
}

/* Every thread's ring read into the recorder's records. Claims first: a thread
 * writes into a spare only after its claim, so what a spare holds past a
 * claim not yet seen here is stamped after this round's cut. */
void tb_fast_drain_all(struct tb_fast *f)
{
	uint64_t t0;

	if (!f)
		return;
	f->round++;
	f->fill = 0;
	fast_take_claims(f);
	if (f->broken) {   /* rings claimed before the threads saw the switch */
		drain_broken(f, 0);
		return;
	}
	t0 = mono_ns();
	for (__u32 i = 0; i < f->o.max_rings && !f->broken; i++)
		if (f->rings[i].fd >= 0 && !f->rings[i].spare)
			drain_one(f, i);
	f->drain_ns += mono_ns() - t0;
}

void tb_fast_finish(struct tb_fast *f)
{
	struct timespec ms = { 0, 1000000 };
	uint64_t now;

	if (!f)
		return;
	now = mono_ns();
	for (size_t i = 0; i < f->nprocs; i++)
		fast_ctl_set(f->procs[i]->ctl_fd, 0);
	/* A write that saw the session live takes well under this. */
	nanosleep(&ms, NULL);
	for (unsigned i = 0; i < f->o.max_rings; i++)
		if (f->rings[i].fd >= 0 && !f->rings[i].dead && !f->rings[i].spare) {
			f->rings[i].dead = f->round;
			f->rings[i].dead_ts = now;
		}
	tb_fast_drain_all(f);
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
		m.count = f->lost_v[i].n;
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
	fast_close_procs(f);

	for (unsigned i = 0; i < f->o.max_rings; i++)
		if (f->rings[i].fd >= 0)
			fast_unmap_ring(&f->rings[i]);
	if (f->tmpl_fd >= 0)
		close(f->tmpl_fd);
	free(f->rings);
	free(f->reqs);
	free(f->forks);
	free(f->ended);
	free(f->plan);
	free(f->lost_v);
	free(f);
}

void tb_fast_between(struct tb_fast *f, void (*between)(void *ctx))
{
	if (f)
		f->between = between;
}

void tb_fast_ctl_state(struct tb_fast *f, const struct tb_ctl *state)
{
	if (f)
		f->ctl = state;
}

void tb_fast_output(struct tb_fast *f, int (*put)(void *ctx, void *rec, size_t size),
		    void *ctx)
{
	if (!f)
		return;
	f->put = put;
	f->put_ctx = ctx;
}

void tb_fast_stats(const struct tb_fast *f, struct tb_fast_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!f)
		return;
	st->bad = f->bad;
	st->drained = f->drained;
	st->steps = f->steps;
	st->wakes = f->wakes;
	st->drain_ns = f->drain_ns;
	st->made = f->made;
	st->grown = f->grown;
	st->faults = f->faults;
	st->over_share = f->over_share;
	st->over_reqs = f->over_reqs;
}
