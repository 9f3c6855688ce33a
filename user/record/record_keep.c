// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record_keep.c - what a file that `tracebpf ctl restart` begins needs
 * from before it began, kept as the records go by (rec_keep_note): the
 * last SITE record of every (process, site), and the last name or sort
 * index the application gave each thread and process (events of `M`
 * sites), both dropped when their process execs or exits; written into
 * the new file by rec_keep_replay (record_restart.c). It calls no other
 * file of the recorder.
 */
#include <stdlib.h>
#include <string.h>

#include "util/hmap.h"
#include "record/recorder.h"
#include "format/tbfile.h"

/* Records kept per process and kind, at most: a traced process names its
 * sites (any 64-bit value in its fast-path ring) and its threads, so what
 * it sends is bounded here, the rest counted (r->kept_over, reported). A
 * program with more sites than this restarts with the others unresolved. */
#define KEPT_MAX 65536u

/* One traced process's kept records, each a malloc'd copy. */
struct kept_proc {
	struct tb_hmap sites;   /* site address -> SITE record */
	struct tb_hmap names;   /* (tid, site) -> EVENT record of an M site */
	struct tb_hmap msites;  /* site address -> (void *)1: an M site */
};

static struct kept_proc *kept_get(struct recorder *r, uint32_t pid, bool create)
{
	struct kept_proc *k = tb_hmap_get(&r->kept, pid);

	if (k || !create)
		return k;
	k = calloc(1, sizeof(*k));
	if (k && tb_hmap_put(&r->kept, pid, k)) {
		free(k);
		k = NULL;
	}
	return k;
}

static void free_vals(struct tb_hmap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->vals[i] != (void *)1)
			free(m->vals[i]);
	tb_hmap_free(m);
}

/* The process's image is gone (exec, exit): nothing of it is kept. */
static void kept_drop(struct recorder *r, uint32_t pid)
{
	struct kept_proc *k = kept_get(r, pid, false);

	if (!k)
		return;
	free_vals(&k->sites);
	free_vals(&k->names);
	tb_hmap_free(&k->msites);
}

/* v replaces key's value in m (a copy of h), unless m is full. */
static void keep_copy(struct recorder *r, struct tb_hmap *m, uint64_t key,
		      const struct tb_rec_hdr *h)
{
	void *old = tb_hmap_get(m, key), *c;

	if (!old && m->n >= KEPT_MAX) {
		r->kept_over++;
		return;
	}
	c = malloc(h->size);
	if (!c)
		return;   /* a new file would lack it: its events show unresolved */
	memcpy(c, h, h->size);
	if (tb_hmap_put(m, key, c)) {
		free(c);
		return;
	}
	free(old);
}

/* Whether site may be an M site. The filter's answer for the last site
 * it turned down is kept: most events are of the site before them, and
 * hashing each one's address was 8% of the recorder's time draining one
 * thread's loop (perf record -e cpu-clock). */
static bool bloom_test(struct recorder *r, uint64_t site)
{
	uint64_t b;

	if (site == r->msite_miss)
		return false;
	b = tb_hash64(site) & (TB_MSITE_BLOOM_BITS - 1);
	if (r->msite_bloom[b / 64] >> (b % 64) & 1)
		return true;
	r->msite_miss = site;
	return false;
}

static void on_site(struct recorder *r, const struct tb_rec_site *s)
{
	struct kept_proc *k;
	uint64_t b;

	if (s->hdr.size < sizeof(*s) || !(k = kept_get(r, s->hdr.pid, true)))
		return;
	keep_copy(r, &k->sites, s->site, &s->hdr);
	/* the descriptor's phase (tracebpf/site.h: offset 6) */
	if (!tb_hmap_get(&k->sites, s->site) || s->len < sizeof(struct tracebpf_site) ||
	    s->hdr.size < sizeof(*s) + sizeof(struct tracebpf_site) ||
	    ((const struct tracebpf_site *)(s + 1))->phase != TRACEBPF_PHASE_METADATA)
		return;
	tb_hmap_put(&k->msites, s->site, (void *)1);
	b = tb_hash64(s->site) & (TB_MSITE_BLOOM_BITS - 1);
	r->msite_bloom[b / 64] |= 1ull << (b % 64);
	r->msite_miss = 0;   /* its answer may be yes now */
}

void rec_keep_note(struct recorder *r, const struct tb_rec_hdr *h)
{
	const struct tb_rec_event *ev = (const void *)h;
	struct kept_proc *k;

	switch (h->type) {
	case TB_REC_SITE:
		on_site(r, (const void *)h);
		break;
	case TB_REC_EVENT:
		if (h->size < sizeof(*ev) || !bloom_test(r, ev->site) ||
		    !(k = kept_get(r, h->pid, false)) || !tb_hmap_get(&k->msites, ev->site))
			break;
		keep_copy(r, &k->names, tb_hash64((uint64_t)h->tid << 32 | h->pid) ^ ev->site, h);
		break;
	case TB_REC_EXEC:
		kept_drop(r, h->pid);
		break;
	case TB_REC_EXIT:
		if (h->size >= sizeof(struct tb_rec_exit) &&
		    (((const struct tb_rec_exit *)h)->flags & TB_EXITF_PROCESS))
			kept_drop(r, h->pid);
		break;
	default:
		break;
	}
}

void rec_keep_free(struct recorder *r)
{
	for (size_t i = 0; i < r->kept.cap; i++)
		if (r->kept.vals[i]) {
			kept_drop(r, (uint32_t)r->kept.keys[i]);
			free(r->kept.vals[i]);
		}
	tb_hmap_free(&r->kept);
}

/* Every record of m into the current file. */
static int replay(struct recorder *r, const struct tb_hmap *m)
{
	int err = 0;

	for (size_t i = 0; i < m->cap && !err; i++)
		if (m->vals[i])
			err = tb_writer_append(r->w, m->vals[i]);
	return err;
}

/* Every record kept into the current file (a new one): each process's
 * sites, then its names. 0, or the writer's error. */
int rec_keep_replay(struct recorder *r)
{
	int err = 0;

	for (size_t i = 0; i < r->kept.cap && !err; i++) {
		struct kept_proc *k = r->kept.vals[i];

		if (k)
			err = replay(r, &k->sites);
		if (k && !err)
			err = replay(r, &k->names);
	}
	return err;
}
