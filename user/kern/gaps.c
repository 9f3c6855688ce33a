// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gaps.c - gap marks the kernel side could not write, taken by the
 * recorder (see kern.h). The take is the kernel side's (gap_take in
 * bpf/ring.bpf.h), with C11 atomics on the mapped entries: claim the
 * entry while no program updates it, exchange its fields, and keep them
 * only if nothing changed meanwhile; otherwise give them back.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/libbpf.h>

#include "kern/kern.h"
#include "format/tbfile.h"

#define SEQ __ATOMIC_SEQ_CST

int tb_gaps_size(struct bpf_map *map, int ncpus)
{
	return bpf_map__set_max_entries(map, ncpus);
}

int tb_gaps_open(struct tb_gaps *g, int map_fd, int ncpus, uint16_t kind)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	void *p;

	memset(g, 0, sizeof(*g));
	g->bytes = (ncpus * sizeof(struct tb_gap_state) + pg - 1) / pg * pg;
	p = mmap(NULL, g->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	g->map = p;
	g->ncpus = ncpus;
	g->kind = kind;
	return 0;
}

static void atomic_max(__u64 *p, __u64 v)
{
	__u64 old = __atomic_load_n(p, SEQ);

	while (old < v && !__atomic_compare_exchange_n(p, &old, v, false, SEQ, SEQ))
		;
}

/* gap_add_tid of bpf/ring.bpf.h: tid + 1 in a free half, its place; or
 * "all", -1. */
static int add_tid(struct tb_gap_state *g, __u64 t)
{
	for (int i = 0; i < TB_GAP_TIDS / 2; i++) {
		__u64 v = __atomic_load_n(&g->tid[i], SEQ), nv;

		for (;;) {
			if ((v & 0xffffffff) == t)
				return 2 * i;
			if ((v >> 32) == t)
				return 2 * i + 1;
			if ((v & 0xffffffff) && (v >> 32))
				break;
			nv = v & 0xffffffff ? v | t << 32 : v | t;
			if (__atomic_compare_exchange_n(&g->tid[i], &v, nv, false, SEQ, SEQ))
				return v & 0xffffffff ? 2 * i + 1 : 2 * i;
		}
	}
	__atomic_fetch_or(&g->bits, TB_GAPS_ALL, SEQ);
	return -1;
}

/* A thread's depth taken, d, back before what it lost since (gap_depth_add
 * of bpf/ring.bpf.h with `first`). */
static void depth_back(__u64 *p, __u64 d)
{
	__u64 old = __atomic_load_n(p, SEQ);

	while (!__atomic_compare_exchange_n(p, &old, tb_gap_depth_then(d, old), false, SEQ, SEQ))
		;
}

/* What a take that lost the race read, merged back into the entry: each
 * thread at its place now (it may have lost more meanwhile). */
static void give_back(struct tb_gap_state *g, __u64 first_inv, __u64 last, __u64 bits,
		      const __u64 *tid, const __u64 *depth)
{
	atomic_max(&g->first_inv, first_inv);
	atomic_max(&g->last_ts, last);
	if (bits & TB_GAPS_ALL)
		__atomic_fetch_or(&g->bits, TB_GAPS_ALL, SEQ);
	for (int i = 0; i < TB_GAP_TIDS; i++) {
		__u64 t = i & 1 ? tid[i / 2] >> 32 : tid[i / 2] & 0xffffffff;
		int slot = t ? add_tid(g, t) : -1;

		if (slot < 0)
			continue;
		if (depth[i])
			depth_back(&g->depth[slot], depth[i]);
		if (bits & TB_GAPS_NODEPTH(i))
			__atomic_fetch_or(&g->bits, TB_GAPS_NODEPTH(slot), SEQ);
	}
}

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);   /* bpf_ktime_get_ns()'s clock */
	return (__u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* m (zeroed) from what was taken; the threads' depths for an
 * application's mark (kernel records have none). */
static void fill(struct tb_rec_gap *m, uint16_t kind, __u64 w, __u64 first_inv, __u64 last,
		 __u64 bits, const __u64 *tid, const __u64 *depth)
{
	__u64 now = mono_ns();

	m->hdr.ts = first_inv ? ~first_inv : 0;
	m->last_ts = last < now ? last : now;
	m->count = TB_GAP_COUNT(w);
	m->flags = TB_GAPF_SWEPT | (bits & TB_GAPS_ALL ? TB_GAPF_ALL : 0);
	for (int i = 0; i < TB_GAP_TIDS; i++) {
		__u64 t = i & 1 ? tid[i / 2] >> 32 : tid[i / 2] & 0xffffffff;

		if (!t)
			continue;
		m->depth[m->ntids] = (struct tb_gap_depth){ TB_GAP_LOW(depth[i]),
							    TB_GAP_NET(depth[i]) };
		if (kind == TB_GAP_APP && !(bits & TB_GAPS_NODEPTH(i)))
			m->depth_known |= 1u << m->ntids;
		m->tid[m->ntids++] = t - 1;
	}
}

/* One CPU's pending losses into m (zeroed by the caller), cleared; false
 * when there are none, or a program is updating them or another take is
 * under way (the next sweep, or the kernel side, takes them). */
static bool take(struct tb_gap_state *g, uint16_t kind, struct tb_rec_gap *m)
{
	__u64 w = __atomic_load_n(&g->word, SEQ), want = w;
	__u64 first_inv, last, bits, tid[TB_GAP_TIDS / 2], depth[TB_GAP_TIDS];

	if (!TB_GAP_COUNT(w) || w >> 48)
		return false;
	if (!__atomic_compare_exchange_n(&g->word, &want, w | TB_GAP_TAKING, false, SEQ, SEQ))
		return false;
	first_inv = __atomic_exchange_n(&g->first_inv, 0, SEQ);
	last = __atomic_exchange_n(&g->last_ts, 0, SEQ);
	bits = __atomic_exchange_n(&g->bits, 0, SEQ);
	for (int i = 0; i < TB_GAP_TIDS / 2; i++)
		tid[i] = __atomic_exchange_n(&g->tid[i], 0, SEQ);
	for (int i = 0; i < TB_GAP_TIDS; i++)
		depth[i] = __atomic_exchange_n(&g->depth[i], 0, SEQ);
	want = w | TB_GAP_TAKING;
	if (!__atomic_compare_exchange_n(&g->word, &want, 0, false, SEQ, SEQ)) {
		give_back(g, first_inv, last, bits, tid, depth);
		__atomic_fetch_and(&g->word, ~TB_GAP_TAKING, SEQ);
		return false;
	}
	fill(m, kind, w, first_inv, last, bits, tid, depth);
	return true;
}

int tb_gaps_sweep(struct tb_gaps *g, struct tb_writer *w)
{
	int n = 0, err;

	if (!g->map)
		return 0;
	for (int cpu = 0; cpu < g->ncpus; cpu++) {
		struct tb_rec_gap m;

		memset(&m, 0, sizeof(m));
		/* a program updating the entry is done in nanoseconds */
		for (int try = 0; try < 3 && !take(&g->map[cpu], g->kind, &m); try++)
			memset(&m, 0, sizeof(m));
		if (!m.count)
			continue;
		m.hdr.type = TB_REC_GAP;
		m.hdr.size = sizeof(m);
		m.hdr.cpu = cpu;
		m.kind = g->kind;
		err = tb_writer_append(w, &m.hdr);
		if (err)
			return err;
		n++;
	}
	return n;
}

void tb_gaps_close(struct tb_gaps *g)
{
	if (g->map)
		munmap(g->map, g->bytes);
	memset(g, 0, sizeof(*g));
}
