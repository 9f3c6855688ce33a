// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fast_pool.c - the processes of a fast-path session (fast.h). Each has a
 * directory <session>/<pid>, root's with mode 0711 (docs/security.md),
 * holding its switch `ctl` and the spare rings made ahead of its threads:
 * f<n> of the ring size, and g<n>, bigger, for a thread whose ring
 * filled, each pinned for the process's user (0600).
 * TRACEBPF_FAST_ROOT/<pid> is a symbolic link to it. A thread takes a
 * spare by claiming it in the switch (trace.h, struct tracebpf_fast_ctl);
 * every drain first takes the claims in, gives each claimed ring its
 * thread, makes a bigger spare for a process whose ring filled (grow),
 * and keeps a spare ahead for each thread the process started that has
 * no ring yet (its FORK record wakes the recorder: the spare is there
 * before the thread's first event). Every round's end keeps SPARES_AHEAD
 * more ahead (one, for a process none of whose threads has taken a ring
 * yet: spares_ahead), and one more for each thread that waits for one or
 * asked for one, counted once however often it asked (unique_requests).
 * A directory is made only for a process that still runs,
 * and goes with the process's end (or, its end record lost, within a
 * second: sweep_ended).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>
#include <linux/types.h>
#include <bpf/bpf.h>

#include "format/tbrecords.h"
#include "fast/fast_int.h"
#include "probes/probes.h"

/* Spares of a process kept ahead of its threads' claims, at least. */
#define SPARES_AHEAD 4u
/* The bigger ring made ahead for a target's first thread whose wait for
 * the drain runs out on a full ring (it grows again from there). */
#define TARGET_GROWN (4ull << 20)
/* A grown ring holds this long of its thread's writing. */
#define GROW_HOLD_MS 100u
/* Grown rings, all together, at most (a thread's ring grows to
 * --fast-buffer-max while this allows). */
#define GROWN_MAX (512ull << 20)
/* The rings a process may hold whatever the number of processes
 * (fast_share), when --max-fast-rings has that many. */
#define SHARE_MIN 64u
/* Requests for rings taken in a round, at most: the kernel lets each
 * process ask at most TB_FAST_REQ_PER_MS times a millisecond
 * (bpf/fast.bpf.h); a thread whose request is left out asks again. */
#define REQS_MAX TB_FAST_REQS_MAX

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

/* A process's directory in the session's, opened O_NOFOLLOW, or a
 * negative errno. */
static int proc_dir(const struct tb_fast *f, const struct fproc *p)
{
	return fast_dir_open(f->sess_fd, p->dir);
}

/* A process's link (TRACEBPF_FAST_ROOT/<pid>, in f->root_fd) and what it
 * holds when it leads into this session (s<recorder>/<pid>). */
static void link_paths(const struct tb_fast *f, uint32_t pid, char link[16], char target[96])
{
	snprintf(link, 16, "%u", pid);
	snprintf(target, 96, "%s/%u", strrchr(f->sess, '/') + 1, pid);
}

static int link_proc(struct tb_fast *f, struct fproc *p)
{
	char link[16], target[96], cur[96];
	ssize_t n;

	link_paths(f, p->pid, link, target);
	n = readlinkat(f->root_fd, link, cur, sizeof(cur) - 1);
	if (n > 0) {
		cur[n] = 0;
		if (!strcmp(cur, target))
			return 0;
		if (cur[0] == 's' && fast_pid_alive(atol(cur + 1)))
			return -EBUSY;
	}
	unlinkat(f->root_fd, link, 0);
	return symlinkat(target, f->root_fd, link) ? -errno : 0;
}

/* A process's link, if it leads into this session. */
static void unlink_ours(struct tb_fast *f, uint32_t pid)
{
	char link[16], target[96], cur[96];
	ssize_t n;

	link_paths(f, pid, link, target);
	n = readlinkat(f->root_fd, link, cur, sizeof(cur) - 1);
	if (n > 0) {
		cur[n] = 0;
		if (!strcmp(cur, target))
			unlinkat(f->root_fd, link, 0);
	}
}


static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static unsigned long ring_prod(const struct fring *r)
{
	return __atomic_load_n(&r->pos[4096 / sizeof(long)], __ATOMIC_ACQUIRE);
}

/* The ring a thread that filled r grows to: what it writes in GROW_HOLD at
 * the rate it wrote since it took r (a power of two), at least four
 * times r, at most --fast-buffer-max. */
static uint64_t grown_size(const struct tb_fast *f, const struct fring *r)
{
	uint64_t dt = mono_ns() - r->given_ns, bytes = ring_prod(r) - r->prod0, want, size;

	if (dt < 1000000)
		dt = 1000000;
	want = bytes * GROW_HOLD_MS / (dt / 1000000);
	for (size = r->size * 4; size < want && size < f->o.ring_max; size *= 2)
		;
	return size < f->o.ring_max ? size : f->o.ring_max;
}

static uint32_t pool_cap(int pool)
{
	return pool ? TRACEBPF_FAST_GCLAIMS : TRACEBPF_FAST_CLAIMS;
}

static struct fproc *find_proc(struct tb_fast *f, uint32_t pid)
{
	for (size_t i = 0; i < f->nprocs; i++)
		if (f->procs[i]->pid == pid)
			return f->procs[i];
	return NULL;
}

static int free_slot(struct tb_fast *f, __u32 *slot)
{
	for (unsigned i = 0; i < f->o.max_rings; i++)
		if (f->rings[i].fd < 0 && !f->rings[i].stale) {
			*slot = i;
			return 0;
		}
	if (!f->said_full)
		fprintf(stderr, "tracebpf: record: all %u fast-path rings are in use: more "
				"threads take their probes (raise --max-fast-rings)\n",
			f->o.max_rings);
	f->said_full = true;
	return -ENOSPC;
}

/* Room in *v (*cap elements of elem bytes) for element n: doubled when
 * full. 0, or -ENOMEM (*v left as it was). */
static int room_for(void **v, size_t *cap, size_t n, size_t elem)
{
	size_t c = *cap ? 2 * *cap : 16;
	void *nv;

	if (n < *cap)
		return 0;
	nv = realloc(*v, c * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = c;
	return 0;
}

/* The rings one process may hold at once, spares included, while others
 * have directories: --max-fast-rings shared evenly, or SHARE_MIN if more.
 * A process alone may hold them all. */
static unsigned fast_share(const struct tb_fast *f)
{
	unsigned share = f->o.max_rings / (unsigned)(f->nprocs ? f->nprocs : 1);

	return share > SHARE_MIN ? share : SHARE_MIN;
}

/* The rings p holds and those planned for it. */
static unsigned held(const struct tb_fast *f, const struct fproc *p)
{
	unsigned n = 0;

	for (unsigned i = 0; i < f->o.max_rings; i++)
		n += f->rings[i].fd >= 0 && f->rings[i].pid == p->pid;
	for (size_t i = 0; i < f->nplan; i++)
		n += f->plan[i].p == p;
	return n;
}

/* Whether p may have one more ring (counted and said once when not). */
static bool within_share(struct tb_fast *f, const struct fproc *p)
{
	unsigned share = fast_share(f);

	if (held(f, p) < share)
		return true;
	f->over_share++;
	if (!f->said_share)
		ERR("process %u holds its share of the fast-path rings (%u of %u, with %zu "
		    "processes recorded): its other threads take their probes", p->pid, share,
		    f->o.max_rings, f->nprocs);
	f->said_share = true;
	return false;
}

/* A spare to make at the end of this step (make_planned). */
static void plan(struct tb_fast *f, struct fproc *p, int pool, uint64_t size)
{
	if (f->o.off)
		return;   /* switches only (--no-fast-path) */
	if (!within_share(f, p))
		return;
	if (room_for((void **)&f->plan, &f->cplan, f->nplan, sizeof(*f->plan)))
		return;   /* its threads ask again */
	f->plan[f->nplan++] = (struct plan){ p, pool, size, ~0u };
}

/* A planned spare's ring: made and mapped, in a free slot, not yet in
 * fast_rings. */
static int new_ring(struct tb_fast *f, struct plan *w)
{
	char name[BPF_OBJ_NAME_LEN];
	struct fring *r;
	void *pos;
	__u32 slot;
	int fd, err;

	err = free_slot(f, &slot);
	if (err)
		return err;
	snprintf(name, sizeof(name), "tb_fr%u", w->p->pid % 1000000000u);
	fd = bpf_map_create(BPF_MAP_TYPE_USER_RINGBUF, name, 0, 0, (__u32)w->size, NULL);
	if (fd < 0)
		return -errno;
	pos = mmap(NULL, RING_META, PROT_READ, MAP_SHARED, fd, 0);
	if (pos == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	r = &f->rings[slot];
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->pos = pos;
	r->pid = w->p->pid;
	r->size = w->size;
	r->spare = true;
	w->slot = slot;
	return 0;
}

/* A planned spare pinned for the process's user as spare `made` of its
 * pool; then the pool says it is there. */
static int publish(struct tb_fast *f, const struct plan *w)
{
	volatile struct tracebpf_fast_pool *pl = &w->p->c->pool[w->pool];
	struct fring *r = &f->rings[w->slot];
	uint32_t n = w->p->made[w->pool];
	int err, dir = proc_dir(f, w->p);

	if (dir < 0)
		return dir;
	snprintf(r->path, sizeof(r->path), "%c%u", w->pool ? 'g' : 'f', n);
	err = fast_dir_pin(r->fd, dir, r->path, w->p->uid, w->p->gid, 0600);
	close(dir);
	if (err) {
		r->path[0] = 0;
		return err;
	}
	w->p->slot[w->pool][n % pool_cap(w->pool)] = w->slot;
	w->p->made[w->pool] = n + 1;
	pl->size = w->size;
	__atomic_store_n(&pl->made, n + 1, __ATOMIC_RELEASE);
	f->made++;
	f->grown += w->pool;
	return 0;
}

static void say_spare_err(struct tb_fast *f, const struct fproc *p, int err);

/* Inserts the new rings into fast_rings in one batch: each update of a
 * map-in-map waits for an RCU grace period, a batch once. */
static int insert_batch(struct tb_fast *f, __u32 *keys, int *fds, __u32 n)
{
	__u32 count = n;

	if (!n || !bpf_map_update_batch(f->outer_fd, keys, fds, &count, NULL))
		return 0;
	for (__u32 i = 0; i < n; i++)
		if (bpf_map_update_elem(f->outer_fd, &keys[i], &fds[i], 0))
			return -errno;
	return 0;
}

/* The planned spares: made, in fast_rings, published, in plan order. */
static void make_planned(struct tb_fast *f)
{
	__u32 *keys = calloc(f->nplan + 1, sizeof(*keys)), n = 0;
	int *fds = calloc(f->nplan + 1, sizeof(*fds)), err = 0;

	for (size_t i = 0; keys && fds && i < f->nplan; i++) {
		err = new_ring(f, &f->plan[i]);
		if (err) {
			say_spare_err(f, f->plan[i].p, err);
			continue;
		}
		keys[n] = f->plan[i].slot;
		fds[n++] = f->rings[f->plan[i].slot].fd;
	}
	err = insert_batch(f, keys, fds, n);
	for (size_t i = 0; i < f->nplan; i++) {
		struct plan *w = &f->plan[i];

		if (w->slot == ~0u)
			continue;
		if (!err && (err = publish(f, w)) == 0)
			continue;
		say_spare_err(f, w->p, err);
		fast_close_slot(f, w->slot);
	}
	f->nplan = 0;
	free(keys);
	free(fds);
}

static void say_spare_err(struct tb_fast *f, const struct fproc *p, int err)
{
	if (f->said_err || err == -ENOSPC)
		return;
	ERR("failed to make a fast-path ring for process %u: %s (its threads take the probes "
	    "until one is made)", p->pid, strerror(-err));
	f->said_err = true;
}

/* The ring its thread left for a bigger one: drained, then closed. */
static void retire_old(struct tb_fast *f, const struct fring *nr)
{
	for (unsigned i = 0; i < f->o.max_rings; i++) {
		struct fring *r = &f->rings[i];

		if (r != nr && r->fd >= 0 && !r->spare && !r->dead && !r->retired &&
		    r->pid == nr->pid && r->tid == nr->tid && r->key == nr->key)
			r->retired = true;
	}
}

/* A claimed spare becomes its thread's ring. A thread already gone (its
 * exit taken in before its claim) has it drained once more and closed. */
static void give(struct tb_fast *f, struct fproc *p, struct fring *r,
		 const struct tracebpf_fast_claim *cl, int pool)
{
	char task[64];

	r->tid = cl->tid;
	r->key = cl->key;
	r->spare = false;
	r->given_ns = mono_ns();
	r->prod0 = ring_prod(r);
	if (r->path[0])
		fast_dir_unpin(f->sess_fd, p->pid, r->path);   /* nobody else maps it */
	r->path[0] = 0;
	if (!pool && p->waiting)
		p->waiting--;
	if (pool)
		retire_old(f, r);
	snprintf(task, sizeof(task), "/proc/%u/task/%u", r->pid, r->tid);
	if (access(task, F_OK)) {
		r->dead = f->round;
		r->dead_ts = r->given_ns;   /* gone by now; a mark at 0 would be off the trace */
	}
}

/* Spares of a pool claimed, as the switch says, within what the
 * recorder published: the process may write any number there. */
static uint32_t claimed(const struct fproc *p, int pool)
{
	uint32_t taken = __atomic_load_n(&p->c->pool[pool].taken, __ATOMIC_ACQUIRE);

	if ((int32_t)(taken - p->seen[pool]) < 0)
		return p->seen[pool];
	return (int32_t)(taken - p->made[pool]) > 0 ? p->made[pool] : taken;
}

/* Claim slot n of a pool, read once into *cl: whether it is filled. */
static bool read_claim(const struct fproc *p, int pool, uint32_t n,
		       struct tracebpf_fast_claim *cl)
{
	const volatile struct tracebpf_fast_claim *v =
		pool ? &p->c->gclaim[n % pool_cap(pool)] : &p->c->claim[n % pool_cap(pool)];

	cl->seq = __atomic_load_n(&v->seq, __ATOMIC_ACQUIRE);
	cl->tid = v->tid;
	cl->key = v->key;
	return cl->seq == n + 1;
}

/* The claims of one pool whose slots are filled, in any order (a thread
 * may be preempted between its claim and filling the slot: the others do
 * not wait for it, and its claim is never given up). Only spares the
 * recorder published are taken in, each once, by the slot it recorded
 * for it: nothing in the switch names a ring. */
static void take_pool(struct tb_fast *f, struct fproc *p, int pool)
{
	uint32_t cap = pool_cap(pool), taken = claimed(p, pool);
	struct tracebpf_fast_claim cl;

	for (uint32_t n = p->seen[pool]; n != taken; n++) {
		if (p->given[pool][n % cap] || !read_claim(p, pool, n, &cl))
			continue;
		if (cl.tid)
			give(f, p, &f->rings[p->slot[pool][n % cap]], &cl, pool);
		else   /* its thread could not map it: nothing in it */
			fast_close_slot(f, p->slot[pool][n % cap]);
		p->given[pool][n % cap] = true;
	}
	while (p->seen[pool] < taken && p->given[pool][p->seen[pool] % cap]) {
		p->given[pool][p->seen[pool] % cap] = false;
		p->seen[pool]++;
	}
}

static void grow(struct tb_fast *f);

/* Pool 0 kept `want` spares ahead (at most TRACEBPF_FAST_CLAIMS). */
static void top_up(struct tb_fast *f, struct fproc *p, unsigned want)
{
	uint32_t taken = claimed(p, 0);
	uint32_t ahead = p->made[0] - taken;
	uint32_t room = TRACEBPF_FAST_CLAIMS - (p->made[0] - p->seen[0]);

	if (want > TRACEBPF_FAST_CLAIMS)
		want = TRACEBPF_FAST_CLAIMS;
	for (uint32_t i = ahead; i < want && room; i++, room--)
		plan(f, p, 0, f->o.ring_size);
}

/* The spares a process keeps ahead: SPARES_AHEAD once one of its threads
 * has taken a ring, one before (a forked child has one thread; each
 * thread it starts has one made for it when its FORK is seen). A forking
 * server's short-lived children each cost the recorder a directory and
 * their spares, made and closed: more than they spared their threads. */
static unsigned spares_ahead(const struct fproc *p)
{
	return p->seen[0] || p->seen[1] ? SPARES_AHEAD : 1;
}

/* Before a drain: the claims taken in, and the bigger rings made for the
 * threads whose ring filled (here, not at the round's end: a drain may
 * take long while a thread writes faster than it). */
void fast_take_claims(struct tb_fast *f)
{
	for (size_t i = 0; i < f->nprocs; i++)
		if (f->procs[i]->c) {
			take_pool(f, f->procs[i], 0);
			take_pool(f, f->procs[i], 1);
		}
	grow(f);
	for (size_t i = 0; i < f->nprocs; i++)
		if (f->procs[i]->c && f->procs[i]->waiting)
			top_up(f, f->procs[i], spares_ahead(f->procs[i]) + f->procs[i]->waiting);
	make_planned(f);
}

/* The rules into switch c, as a seqlock: gen odd while they change. */
static void put_cats(volatile struct tracebpf_fast_ctl *c, const struct tracebpf_cats *k)
{
	__atomic_store_n(&c->cats.gen, k->gen - 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy((void *)c->cats.rules, k->rules, k->len);
	c->cats.len = k->len;
	__atomic_store_n(&c->cats.gen, k->gen, __ATOMIC_RELEASE);
}

/* The switch no longer says what this session records: every site of the
 * process judges its category again (tracebpf__cat_judge, which then
 * looks for the switch of the session that records it, if any). */
static void drop_cats(volatile struct tracebpf_fast_ctl *c)
{
	if (c)
		__atomic_store_n(&c->cats.gen, 1u, __ATOMIC_RELEASE);
}

void tb_fast_cats(struct tb_fast *f, const struct tracebpf_cats *k)
{
	if (!f)
		return;
	f->cats.len = k->len;
	memcpy(f->cats.rules, k->rules, k->len);
	f->cats.gen = k->gen;
	for (size_t i = 0; i < f->nprocs; i++)
		if (f->procs[i]->c && !f->procs[i]->refused)
			put_cats(f->procs[i]->c, &f->cats);
}

static void unmap_ctl(struct fproc *p)
{
	if (p->c)
		munmap((void *)p->c, TRACEBPF_FAST_CTL_BYTES);
	p->c = NULL;
}

/* A process's directory, root's (0711: its threads open their pins by
 * name, and can change nothing in it), and its switch pinned there for
 * its user. */
static int make_dir(struct tb_fast *f, struct fproc *p)
{
	int dir, err;

	if (mkdirat(f->sess_fd, p->dir, 0711))
		return -errno;
	dir = proc_dir(f, p);
	if (dir < 0)
		return dir;
	err = fchmod(dir, 0711) ? -errno : 0;   /* whatever the umask */
	if (!err)
		err = fast_dir_pin(p->ctl_fd, dir, "ctl", p->uid, p->gid, 0600);
	close(dir);
	return err;
}

/* The directory of a process (made once): its switch, mapped, LIVE once
 * its link is made and no other session is seen. NULL when the process
 * takes its probes (said). */
static struct fproc *get_proc(struct tb_fast *f, uint32_t pid, uid_t uid, gid_t gid)
{
	struct fproc *p = find_proc(f, pid), **nv;
	long other;
	int err;

	if (p)
		return p->refused ? NULL : p;
	nv = realloc(f->procs, (f->nprocs + 1) * sizeof(*nv));
	if (!nv)
		return NULL;
	f->procs = nv;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	f->procs[f->nprocs++] = p;
	p->pid = pid;
	p->uid = uid;
	p->gid = gid;
	snprintf(p->dir, sizeof(p->dir), "%u", pid);
	p->ctl_fd = fast_ctl_make(f->o.wait_us);
	err = p->ctl_fd < 0 ? p->ctl_fd : 0;
	if (!err) {
		p->c = mmap(NULL, TRACEBPF_FAST_CTL_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
			     p->ctl_fd, 0);
		if (p->c == MAP_FAILED) {
			p->c = NULL;
			err = -errno;
		}
	}
	if (!err)
		err = make_dir(f, p);
	if (!err)
		err = link_proc(f, p);
	if (!err && (other = fast_other_session())) {
		fast_say_other(other);
		err = -EUSERS;   /* announce(): the other session may record it too */
	}
	if (!err) {
		put_cats(p->c, &f->cats);
		fast_ctl_set(p->ctl_fd, TRACEBPF_FAST_LIVE);
	}
	if (err) {
		if (err != -EUSERS && !(err == -EBUSY && fast_other_seen()))
			fprintf(stderr, "tracebpf: record: %s: process %u takes the probes for "
					"every event\n", err == -EBUSY ? "another tracebpf records "
					"it" : "failed to make its fast-path directory", pid);
		unlink_ours(f, pid);
		fast_dir_remove(f->sess_fd, p->dir, false);
		if (p->ctl_fd >= 0)
			close(p->ctl_fd);
		p->ctl_fd = -1;
		unmap_ctl(p);
		p->refused = true;
		return NULL;
	}
	return p;
}

/* A process whose user changed (an exec of a setuid program, or of the
 * command after `su`): its switch and spares become the new user's, so
 * that it can open them (its directory stays root's), each by its entry
 * in the directory, never through a link. */
static void reown(struct tb_fast *f, struct fproc *p, uid_t uid, gid_t gid)
{
	int dir = proc_dir(f, p), err;

	p->uid = uid;
	p->gid = gid;
	err = dir < 0 ? dir : fast_dir_give(dir, "ctl", uid, gid);
	if (err)
		ERR("failed to give process %u its fast-path switch: %s", p->pid, strerror(-err));
	for (unsigned i = 0; dir >= 0 && i < f->o.max_rings; i++)
		if (f->rings[i].fd >= 0 && f->rings[i].pid == p->pid && f->rings[i].path[0] &&
		    (err = fast_dir_give(dir, f->rings[i].path, uid, gid)))
			ERR("failed to give process %u its ring %s: %s", p->pid,
			    f->rings[i].path, strerror(-err));
	if (dir >= 0)
		close(dir);
}

/* The directory of a live process, made if new (and its user's). */
static struct fproc *proc_for(struct tb_fast *f, uint32_t pid)
{
	struct fproc *p = find_proc(f, pid);
	uid_t uid = 0;
	gid_t gid = 0;

	if (proc_ids(pid, &uid, &gid) || (!p && tb_proc_ended((pid_t)pid)))
		return p && !p->refused ? p : NULL;   /* gone, or ending: a directory
						       * made now would outlive it */
	if (p && !p->refused && (p->uid != uid || p->gid != gid))
		reown(f, p, uid, gid);
	return get_proc(f, pid, uid, gid);
}

static unsigned count_threads(uint32_t pid)
{
	char path[64];
	struct dirent *e;
	unsigned n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	d = opendir(path);
	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

void tb_fast_target(struct tb_fast *f, uint32_t pid)
{
	struct fproc *p;

	if (!f || f->broken || !(p = proc_for(f, pid)))
		return;
	top_up(f, p, count_threads(pid) + SPARES_AHEAD);
	if (f->o.ring_max > f->o.ring_size)   /* for the first thread that fills its ring */
		plan(f, p, 1, f->o.ring_max < TARGET_GROWN ? f->o.ring_max : TARGET_GROWN);
	make_planned(f);
}

/* A request with the key's bit 0 set is a thread that waits for its full
 * ring to be drained (tracebpf_fast_ctl.wait_us): it woke the recorder,
 * whose round drains it; nothing more. */
void tb_fast_request(struct tb_fast *f, const struct tb_ring_req *q)
{
	if (f && (q->key & 1)) {
		f->wakes++;
		return;
	}
	if (f && f->nreqs >= REQS_MAX) {
		f->over_reqs++;   /* the thread asks again */
		return;
	}
	if (!f || room_for((void **)&f->reqs, &f->creqs, f->nreqs, sizeof(*f->reqs)))
		return;   /* the thread asks again */
	f->reqs[f->nreqs++] = (struct req){ q->hdr.pid, q->hdr.tid, q->key };
}

void tb_fast_fork(struct tb_fast *f, uint32_t parent, uint32_t child)
{
	if (!f || parent == child || !find_proc(f, parent) ||
	    room_for((void **)&f->forks, &f->cforks, f->nforks, sizeof(*f->forks)))
		return;   /* its threads ask */
	f->forks[f->nforks++] = child;
}

/* A new thread of a process with spares: it waits for its ring until it
 * claims one or is gone, and each waiting thread has a spare made for it
 * before the next drain, ready for its first event. */
void tb_fast_thread(struct tb_fast *f, uint32_t pid)
{
	struct fproc *p = f ? find_proc(f, pid) : NULL;

	if (p && p->c) {
		p->waiting++;
		f->new_threads++;
	}
}

bool tb_fast_pending(const struct tb_fast *f)
{
	return f && (f->nforks || f->nreqs || f->new_threads);
}

/* A thread asks when it has no ring and finds no spare, or when its ring
 * is full and it finds no bigger one. */
static void serve_request(struct tb_fast *f, const struct req *q)
{
	struct fproc *p = proc_for(f, q->pid);

	if (!p)
		return;
	for (unsigned i = 0; i < f->o.max_rings; i++) {
		struct fring *r = &f->rings[i];

		if (r->fd >= 0 && !r->spare && r->pid == q->pid && r->tid == q->tid &&
		    r->key == q->key) {
			r->hot |= !r->dead && !r->retired;   /* full: it grows */
			return;
		}
	}
	p->asked++;
}

/* A bigger spare for each process one of whose threads asked for one
 * (its ring was full, and its wait for the drain ran out:
 * tracebpf/fast_producer.h, tracebpf__fast_grow): one at a time per
 * process, of grown_size, while the grown rings together stay under
 * GROWN_MAX. A ring the drain keeps up with, however full, does not grow:
 * on a host where a new page costs microseconds, its thread waits less
 * for the drain than it would write into new pages. */
static void grow(struct tb_fast *f)
{
	uint64_t grown = 0;

	for (unsigned i = 0; i < f->o.max_rings; i++)
		if (f->rings[i].fd >= 0 && f->rings[i].size > f->o.ring_size)
			grown += f->rings[i].size;
	for (unsigned i = 0; i < f->o.max_rings; i++) {
		struct fring *r = &f->rings[i];
		struct fproc *p;
		uint64_t size;

		if (r->fd < 0 || r->spare || r->dead || r->retired || !r->hot)
			continue;
		size = grown_size(f, r);
		if (size <= r->size || grown + size > GROWN_MAX)
			continue;
		p = find_proc(f, r->pid);
		if (!p || !p->c || p->grow_planned || p->made[1] != claimed(p, 1) ||
		    p->made[1] - p->seen[1] >= TRACEBPF_FAST_GCLAIMS)
			continue;
		r->hot = false;
		p->grow_planned = true;
		plan(f, p, 1, size);
		grown += size;
	}
	for (size_t i = 0; i < f->nprocs; i++)
		f->procs[i]->grow_planned = false;
}

/* Was pid's end seen this round, before it had a directory? */
static bool ended(const struct tb_fast *f, uint32_t pid)
{
	for (size_t i = 0; i < f->nended; i++)
		if (f->ended[i] == pid)
			return true;
	return false;
}

static void proc_gone(struct tb_fast *f, size_t i, uint64_t ts);

/* Processes that ended without their end being seen (its record lost
 * with others when the recorder's rings were full): their directories
 * and spares go, at most once a second. */
static void sweep_ended(struct tb_fast *f)
{
	uint64_t now = mono_ns();

	if (now - f->swept_ns < 1000000000u)
		return;
	f->swept_ns = now;
	for (size_t i = 0; i < f->nprocs;)
		if (tb_proc_ended((pid_t)f->procs[i]->pid))
			proc_gone(f, i, now);   /* moves the last one to i */
		else
			i++;
}

static int req_cmp(const void *a, const void *b)
{
	const struct req *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* The round's requests, one per thread: a thread with no ring asks again
 * and again until it has one (up to TB_FAST_REQ_PER_MS a millisecond for
 * its process), and each request counted as one more thread would have
 * a spare made for each, up to the process's share: with rings of
 * 512 MiB, which take the kernel a while to make, more memory than the
 * host had. */
static void unique_requests(struct tb_fast *f)
{
	size_t n = 0;

	qsort(f->reqs, f->nreqs, sizeof(*f->reqs), req_cmp);
	for (size_t i = 0; i < f->nreqs; i++)
		if (!n || req_cmp(&f->reqs[n - 1], &f->reqs[i]))
			f->reqs[n++] = f->reqs[i];
	f->nreqs = n;
}

/* Spares for the processes that fork made and the threads that asked
 * (none for one that has ended since); closed rings out of fast_rings. */
void tb_fast_round_end(struct tb_fast *f)
{
	if (!f || f->broken)
		return;
	sweep_ended(f);
	for (size_t i = 0; i < f->nforks; i++)
		if (!ended(f, f->forks[i]))
			proc_for(f, f->forks[i]);
	f->nforks = 0;
	unique_requests(f);
	for (size_t i = 0; i < f->nreqs; i++)
		if (!ended(f, f->reqs[i].pid))
			serve_request(f, &f->reqs[i]);
	f->nreqs = 0;
	f->nended = 0;
	for (size_t i = 0; i < f->nprocs; i++) {
		struct fproc *p = f->procs[i];

		/* a new thread both waits (its FORK) and asks: one spare */
		if (p->c)
			top_up(f, p, spares_ahead(p) +
				     (p->waiting > p->asked ? p->waiting : p->asked));
		p->asked = 0;
	}
	make_planned(f);
	fast_flush_stale(f);
	f->new_threads = 0;
}

/* Unpinned now (the same path may be asked for again: a new thread with
 * the tid, a new image), drained and closed in the next round. */
static void ring_gone(struct tb_fast *f, struct fring *r, uint64_t ts)
{
	r->dead_ts = ts;
	if (r->path[0])
		fast_dir_unpin(f->sess_fd, r->pid, r->path);
	r->path[0] = 0;
	r->dead = f->round;
}

static void free_proc(struct tb_fast *f, struct fproc *p)
{
	char link[16];

	fast_ctl_set(p->ctl_fd, 0);   /* no thread of it writes into this session again */
	drop_cats(p->c);
	snprintf(link, sizeof(link), "%u", p->pid);
	if (!p->refused && f->root_fd >= 0)
		unlinkat(f->root_fd, link, 0);
	if (p->ctl_fd >= 0)
		close(p->ctl_fd);
	unmap_ctl(p);
	free(p);
}

/* A process gone: what its threads claimed is theirs (and gone with them),
 * its spares closed, its directory removed. */
static void proc_gone(struct tb_fast *f, size_t i, uint64_t ts)
{
	struct fproc *p = f->procs[i];

	if (p->c) {
		take_pool(f, p, 0);
		take_pool(f, p, 1);
	}
	for (unsigned k = 0; k < f->o.max_rings; k++) {
		struct fring *r = &f->rings[k];

		if (r->fd < 0 || r->pid != p->pid || r->dead)
			continue;
		if (r->spare && !fast_ring_used(r))
			fast_close_slot(f, k);
		else
			ring_gone(f, r, ts);
	}
	fast_dir_remove(f->sess_fd, p->dir, false);
	free_proc(f, p);
	f->procs[i] = f->procs[--f->nprocs];
}

void tb_fast_exit(struct tb_fast *f, uint32_t pid, uint32_t tid, bool process, uint64_t ts)
{
	struct fproc *p;
	bool had = false;

	if (!f)
		return;
	for (size_t i = 0; process && i < f->nprocs; i++)
		if (f->procs[i]->pid == pid) {
			proc_gone(f, i, ts);
			return;
		}
	if (process && !room_for((void **)&f->ended, &f->cended, f->nended, sizeof(*f->ended)))
		f->ended[f->nended++] = pid;   /* its fork or its threads' requests may
						* be in this round: no directory for it */
	for (unsigned i = 0; i < f->o.max_rings; i++) {
		struct fring *r = &f->rings[i];

		if (r->fd >= 0 && !r->dead && !r->spare && r->pid == pid &&
		    (process || r->tid == tid)) {
			ring_gone(f, r, ts);
			had = true;
		}
	}
	if (!had && (p = find_proc(f, pid)) && p->waiting)
		p->waiting--;   /* gone before it took a ring */
}

void tb_fast_exec(struct tb_fast *f, uint32_t pid, uint64_t ts)
{
	struct fproc *p;

	if (!f)
		return;
	p = find_proc(f, pid);
	if (p && p->c) {   /* what the old image claimed goes with it */
		take_pool(f, p, 0);
		take_pool(f, p, 1);
		proc_for(f, pid);   /* its user may have changed */
	}
	for (unsigned i = 0; i < f->o.max_rings; i++)
		if (f->rings[i].fd >= 0 && !f->rings[i].dead && !f->rings[i].spare &&
		    f->rings[i].pid == pid)
			ring_gone(f, &f->rings[i], ts);
}

void fast_close_procs(struct tb_fast *f)
{
	for (size_t i = 0; i < f->nprocs; i++)
		free_proc(f, f->procs[i]);
	free(f->procs);
	f->procs = NULL;
	f->nprocs = 0;
}

/* p to its probes (TB_FAST_SHARED), unless another session has it. */
static void share(struct fproc *p)
{
	if (p && !p->refused) {
		fast_ctl_set(p->ctl_fd, TB_FAST_SHARED);
		drop_cats(p->c);
	}
}

/* One process switched to its probes: one of its rings cannot be read
 * any more. */
void fast_share_proc(struct tb_fast *f, uint32_t pid)
{
	share(find_proc(f, pid));
}

void fast_share_all(struct tb_fast *f)
{
	for (size_t i = 0; i < f->nprocs; i++)
		share(f->procs[i]);
}

void fast_unmap_ring(struct fring *r)
{
	if (r->data)
		munmap((void *)r->data, r->size);
	r->data = NULL;
	munmap((void *)r->pos, RING_META);
	close(r->fd);
	r->fd = -1;
}

/* Bytes of r its thread has written and the drain not yet taken. */
unsigned long fast_ring_used(const struct fring *r)
{
	unsigned long cons = __atomic_load_n(&r->pos[0], __ATOMIC_ACQUIRE);
	unsigned long prod = __atomic_load_n(&r->pos[4096 / sizeof(long)], __ATOMIC_ACQUIRE);

	return prod - cons;
}

/* A ring that holds nothing of anyone's: closed, its slot taken out of
 * fast_rings with the others at the round's end (fast_flush_stale). */
void fast_close_slot(struct tb_fast *f, __u32 slot)
{
	struct fring *r = &f->rings[slot];


	if (r->path[0])
		fast_dir_unpin(f->sess_fd, r->pid, r->path);
	r->path[0] = 0;
	fast_unmap_ring(r);
	r->stale = true;
}

/* Each update or delete of a map-in-map waits for an RCU grace period
 * (milliseconds here), but a batch waits once: the slots closed in a
 * round are overwritten together with the template ring (empty, never
 * drained), which lets their rings go. (Arrays of maps have no batch
 * delete.) */
void fast_flush_stale(struct tb_fast *f)
{
	__u32 *keys = calloc(f->o.max_rings, sizeof(*keys)), n = 0, count;
	int *fds = calloc(f->o.max_rings, sizeof(*fds));

	for (__u32 i = 0; keys && fds && i < f->o.max_rings; i++)
		if (f->rings[i].stale) {
			keys[n] = i;
			fds[n++] = f->tmpl_fd;
		}
	count = n;
	if (n && bpf_map_update_batch(f->outer_fd, keys, fds, &count, NULL))
		for (__u32 i = 0; i < n; i++)
			bpf_map_delete_elem(f->outer_fd, &keys[i]);
	for (__u32 i = 0; i < n; i++)
		f->rings[keys[i]].stale = false;
	free(keys);
	free(fds);
}
