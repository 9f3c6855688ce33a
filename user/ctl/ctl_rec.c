// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* ctl_rec.c - the recorder's side of the control map (ctl.h,
 * lib/format/tbctl.h): made at the start, its requests taken and logged
 * each round, the stats published for `ctl status`. The map's mapping and
 * a request's writing are `tracebpf ctl`'s too (ctl.c, ctl_int.h). */
#include <errno.h>
#include <limits.h>
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

#define ERR(fmt, ...) fprintf(stderr, "tracebpf: ctl: " fmt "\n", ##__VA_ARGS__)

__u64 tb_ctl_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);   /* bpf_ktime_get_ns()'s clock */
	return (__u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

size_t tb_ctl_map_bytes(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (TB_CTL_NKEYS * sizeof(struct tb_ctl) + pg - 1) / pg * pg;
}

struct tb_ctl *tb_ctl_map(int fd)
{
	void *p = mmap(NULL, tb_ctl_map_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* A request: `off` first for a stop (it takes effect at once, and its time
 * was read before), `ts` last (release): the recorder reads ts first. */
__u64 tb_ctl_ask(struct tb_ctl *m, bool off, __u32 by)
{
	struct tb_ctl *st = &m[TB_CTL_STATE];
	__u64 ts = tb_ctl_mono_ns();

	if (off && !__atomic_load_n(&st->off, __ATOMIC_RELAXED)) {
		__atomic_store_n(&st->off_ts, ts, __ATOMIC_RELAXED);
		__atomic_store_n(&st->off, 1u, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&st->want_off, off ? 1u : 0u, __ATOMIC_RELAXED);
	__atomic_store_n(&st->pid, by, __ATOMIC_RELAXED);
	__atomic_store_n(&st->ts, ts, __ATOMIC_RELEASE);
	return ts;
}

/* ---- the recorder's side ---- */

int tb_ctl_init(struct tb_ctl_rec *c, int map_fd, bool paused, const char *path,
		const char *session)
{
	struct tb_ctl *m = tb_ctl_map(map_fd), *rec;
	char cwd[PATH_MAX], full[PATH_MAX];

	memset(c, 0, sizeof(*c));
	if (!m)
		return -errno;
	c->map = m;
	rec = &m[TB_CTL_RECORDER];
	/* for `tracebpf ctl status`; a long path is cut */
	if (path[0] != '/' && strcmp(path, "<stdout>") && getcwd(cwd, sizeof(cwd)) &&
	    strlen(cwd) + 1 + strlen(path) < sizeof(full)) {
		strcpy(full, cwd);
		strcat(full, "/");
		path = strcat(full, path);
	}
	strncpy(rec->path, path, sizeof(rec->path) - 1);
	strncpy(rec->session, session, sizeof(rec->session) - 1);
	if (paused)   /* a stop request of our own, handled by the caller */
		tb_ctl_ask(m, true, getpid());
	/* the pid last: `tracebpf ctl` skips a map whose recorder is not set */
	__atomic_store_n(&rec->pid, (__u32)getpid(), __ATOMIC_RELEASE);
	return 0;
}

void tb_ctl_publish(struct tb_ctl_rec *c, struct tb_ctl_stats *s)
{
	struct tb_ctl_stats *d;
	__u32 seq;

	if (!c->map)
		return;
	d = (struct tb_ctl_stats *)&c->map[TB_CTL_STATS];
	seq = __atomic_load_n(&d->seq, __ATOMIC_RELAXED);
	__atomic_store_n(&d->seq, seq + 1, __ATOMIC_RELAXED);   /* odd: being written */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	s->seq = seq + 1;
	memcpy(d, s, sizeof(*s));
	__atomic_store_n(&d->seq, seq + 2, __ATOMIC_RELEASE);
}

static __u32 map_id(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

int tb_ctl_filters(struct tb_ctl_rec *c, int tids_fd, int pids_fd, __u32 filter)
{
	struct tb_ctl *rec = &c->map[TB_CTL_RECORDER];

	rec->set_id[0] = map_id(tids_fd);
	rec->set_id[1] = map_id(pids_fd);
	if (!rec->set_id[0] || !rec->set_id[1])
		return -errno;
	__atomic_store_n(&c->map[TB_CTL_STATE].filter, filter, __ATOMIC_RELEASE);
	return 0;
}

void tb_ctl_kernel(struct tb_ctl_rec *c, int tp_off_fd)
{
	if (c->map)
		c->map[TB_CTL_RECORDER].tp_off_id = tp_off_fd >= 0 ? map_id(tp_off_fd) : 0;
}

void tb_ctl_cats(struct tb_ctl_rec *c, int cats_fd)
{
	if (c->map)
		c->map[TB_CTL_RECORDER].cats_id = map_id(cats_fd);
}

int tb_ctl_request(struct tb_ctl_rec *c, bool *want_off, __u32 *by, __u64 *ts,
		   bool *gate_off)
{
	struct tb_ctl *st;

	if (!c->map)
		return 0;
	st = &c->map[TB_CTL_STATE];
	*ts = __atomic_load_n(&st->ts, __ATOMIC_ACQUIRE);
	if (*ts == c->handled_ts)
		return 0;
	*want_off = __atomic_load_n(&st->want_off, __ATOMIC_RELAXED);
	*by = __atomic_load_n(&st->pid, __ATOMIC_RELAXED);
	*gate_off = __atomic_load_n(&st->off, __ATOMIC_RELAXED);
	return 1;
}

unsigned tb_ctl_action(struct tb_ctl_rec *c, char *arg)
{
	struct tb_ctl *st;
	unsigned act;

	if (!c->map)
		return 0;
	st = &c->map[TB_CTL_STATE];
	act = __atomic_load_n(&st->action, __ATOMIC_ACQUIRE);
	if (!act)
		return 0;
	memcpy(arg, st->path, TB_CTL_PATH_MAX);
	arg[TB_CTL_PATH_MAX - 1] = '\0';
	__atomic_store_n(&st->action, 0u, __ATOMIC_RELEASE);
	return act;
}

void tb_ctl_set_path(struct tb_ctl_rec *c, const char *path)
{
	struct tb_ctl *rec;

	if (!c->map)
		return;
	rec = &c->map[TB_CTL_RECORDER];
	memset(rec->path, 0, sizeof(rec->path));
	strncpy(rec->path, path, sizeof(rec->path) - 1);
}

__u64 tb_ctl_open_gate(struct tb_ctl_rec *c)
{
	__u64 ts = tb_ctl_mono_ns();

	__atomic_store_n(&c->map[TB_CTL_STATE].off, 0u, __ATOMIC_RELEASE);
	return ts;
}

int tb_ctl_log(struct tb_ctl_rec *c, struct tb_writer *w, bool off, __u64 ts, __u32 by)
{
	struct tb_rec_ctl rec = {};
	int err;

	rec.hdr.type = TB_REC_CTL;
	rec.hdr.size = sizeof(rec);
	rec.hdr.cpu = ~0u;
	rec.hdr.ts = ts;
	rec.off = off;
	rec.by_pid = by;
	err = tb_writer_append(w, &rec.hdr);
	if (err)
		return err;
	c->off = off;
	return 0;
}

void tb_ctl_done(struct tb_ctl_rec *c, __u64 ts, int err)
{
	c->handled_ts = ts;
	c->err = err;
}

void tb_ctl_ack(struct tb_ctl_rec *c)
{
	struct tb_ctl *rec;

	if (!c->map || c->acked_ts == c->handled_ts)
		return;
	rec = &c->map[TB_CTL_RECORDER];
	__atomic_store_n(&rec->err, c->err, __ATOMIC_RELAXED);
	__atomic_store_n(&rec->ts, c->handled_ts, __ATOMIC_RELEASE);
	c->acked_ts = c->handled_ts;
}

void tb_ctl_close(struct tb_ctl_rec *c)
{
	if (c->map)
		munmap(c->map, tb_ctl_map_bytes());
	c->map = NULL;
}

/* ---- tracebpf ctl ---- */
