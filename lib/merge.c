// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * merge.c - time-ordered records in bounded memory (see merge.h).
 *
 * Records arrive in long ascending runs (a chunk of one CPU's stream is
 * nearly sorted), so held records are kept as sorted runs: each new record
 * is appended to a run whose last record precedes it, and the runs are
 * merged by a small heap of their first records. A run is a queue of
 * large blocks the records are copied into back to back, so holding a
 * record costs no allocation. A record that fits no run once MAX_RUNS
 * exist (input in no useful order) goes to a plain heap of copies instead.
 * Every record has a distinct key (ts, rank, file order), so the order
 * released is exactly the key order whichever structure held it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "merge.h"
#include "util/outq.h"

#define MAX_RUNS   32
#define BLK_SIZE   (64u * 1024)
#define MAX_SPARES 8

struct key {
	uint64_t ts;
	uint64_t seq;       /* file order */
	uint32_t rank;
};

/* A held record in a run's block: the key, then the record, 8-aligned. */
struct item {
	struct key k;
	uint32_t size;      /* of the item, padding included */
};

struct blk {
	struct blk *next;
	size_t len, cap;
	_Alignas(8) char data[];
};

struct run {
	struct blk *head, *tail;
	size_t off;         /* of the first record in head */
	size_t n;
	struct key last;    /* of the latest record appended */
	size_t pos;         /* index in the run heap while n > 0 */
};

/* A record that fits no run: a copy of its own. */
struct loose {
	struct key k;
	struct tb_rec_hdr *rec;
};

struct tb_merge {
	/* Reading ahead (tb_merge_ahead): the thread's records, in batches.
	 * The caller's, changed at every record: on a cache line of its own,
	 * apart from the thread's (the rest). */
	struct {
		bool ahead_wanted, ahead_ended;
		enum tb_ahead how;
		struct tb_outq *q;
		const char *bpos, *bend;  /* what is left of the batch taken last */
		int result;               /* the thread's last tb_merge_next */
	} f;
	_Alignas(64) struct tb_reader *r;
	uint32_t (*rank)(uint16_t);
	size_t max_held;
	struct run runs[MAX_RUNS];
	size_t nruns, last_run;
	struct run *rheap[MAX_RUNS];   /* non-empty runs by first record */
	size_t nrheap;
	struct loose *heap;            /* loose records */
	size_t nheap, heap_cap;
	struct blk *spare[MAX_SPARES];
	size_t nspare;
	size_t n, peak;
	uint64_t seq, forced;
	uint64_t rounds;          /* reader's count at the last record */
	uint64_t cur_max, prev_max, watermark;
	bool have_cur, have_prev, have_wm;
	bool eof;
	struct tb_rec_hdr *out;   /* last loose record handed out */
	struct blk *done;         /* blocks emptied by the last record handed out */
};

static bool less(const struct key *a, const struct key *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts;
	if (a->rank != b->rank)
		return a->rank < b->rank;
	return a->seq < b->seq;
}

/* ------------------------------------------------------------ runs -- */

static struct item *first_item(const struct run *r)
{
	return (struct item *)(r->head->data + r->off);
}

static const struct key *run_key(const struct run *r)
{
	return &first_item(r)->k;
}

static void rheap_swap(struct tb_merge *m, size_t i, size_t j)
{
	struct run *t = m->rheap[i];

	m->rheap[i] = m->rheap[j];
	m->rheap[j] = t;
	m->rheap[i]->pos = i;
	m->rheap[j]->pos = j;
}

static void rheap_up(struct tb_merge *m, size_t i)
{
	while (i) {
		size_t p = (i - 1) / 2;

		if (!less(run_key(m->rheap[i]), run_key(m->rheap[p])))
			break;
		rheap_swap(m, i, p);
		i = p;
	}
}

static void rheap_down(struct tb_merge *m, size_t i)
{
	size_t n = m->nrheap;

	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, s = i;

		if (l < n && less(run_key(m->rheap[l]), run_key(m->rheap[s])))
			s = l;
		if (r < n && less(run_key(m->rheap[r]), run_key(m->rheap[s])))
			s = r;
		if (s == i)
			break;
		rheap_swap(m, i, s);
		i = s;
	}
}

static struct blk *blk_new(struct tb_merge *m, size_t need)
{
	struct blk *b;

	if (need <= BLK_SIZE && m->nspare) {
		b = m->spare[--m->nspare];
	} else {
		size_t cap = need > BLK_SIZE ? need : BLK_SIZE;

		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->cap = cap;
	}
	b->next = NULL;
	b->len = 0;
	return b;
}

static void blk_free(struct tb_merge *m, struct blk *b)
{
	if (b->cap == BLK_SIZE && m->nspare < MAX_SPARES)
		m->spare[m->nspare++] = b;
	else
		free(b);
}

/* The run h can be appended to: the one appended to last if h follows its
 * latest record, else the one whose latest record is the nearest before h,
 * else an empty one, else a new one; NULL when there is none. */
static struct run *pick_run(struct tb_merge *m, const struct key *k)
{
	struct run *best = NULL, *empty = NULL;
	size_t i;

	if (m->nruns && less(&m->runs[m->last_run].last, k))
		return &m->runs[m->last_run];
	for (i = 0; i < m->nruns; i++) {
		struct run *r = &m->runs[i];

		if (!r->n && !empty)
			empty = r;
		if (r->n && less(&r->last, k) && (!best || less(&best->last, &r->last)))
			best = r;
	}
	if (!best)
		best = empty;
	if (!best && m->nruns < MAX_RUNS) {
		best = &m->runs[m->nruns++];
		memset(best, 0, sizeof(*best));
	}
	if (best)
		m->last_run = (size_t)(best - m->runs);
	return best;
}

static int run_append(struct tb_merge *m, struct run *r, const struct key *k,
		      const struct tb_rec_hdr *h)
{
	size_t size = (sizeof(struct item) + h->size + 7) & ~(size_t)7;
	struct item *it;

	if (!r->tail || r->tail->cap - r->tail->len < size) {
		struct blk *b = blk_new(m, size);

		if (!b)
			return -ENOMEM;
		if (!r->tail) {
			r->head = b;
		} else if (!r->n) {   /* nothing left in the old tail */
			blk_free(m, r->tail);
			r->head = b;
			r->off = 0;
		} else {
			r->tail->next = b;
		}
		r->tail = b;
	}
	it = (struct item *)(r->tail->data + r->tail->len);
	it->k = *k;
	it->size = (uint32_t)size;
	memcpy(it + 1, h, h->size);
	r->tail->len += size;
	r->last = *k;
	if (!r->n++) {
		r->pos = m->nrheap;
		m->rheap[m->nrheap++] = r;
		rheap_up(m, r->pos);
	}
	return 0;
}

/* Takes the first record of the run on top of the heap; the block it is
 * in is freed at the next call, once the record is no longer in use. */
static const struct tb_rec_hdr *run_pop(struct tb_merge *m)
{
	struct run *r = m->rheap[0];
	struct item *it = first_item(r);

	r->off += it->size;
	if (r->off == r->head->len && r->head != r->tail) {
		struct blk *b = r->head;

		r->head = b->next;
		r->off = 0;
		b->next = m->done;
		m->done = b;
	}
	if (--r->n) {
		rheap_down(m, 0);
	} else {
		m->rheap[0] = m->rheap[--m->nrheap];
		if (m->nrheap) {
			m->rheap[0]->pos = 0;
			rheap_down(m, 0);
		}
	}
	return (const struct tb_rec_hdr *)(it + 1);
}

/* ---------------------------------------------------- loose records -- */

static void loose_up(struct loose *h, size_t i)
{
	while (i) {
		size_t p = (i - 1) / 2;
		struct loose t;

		if (!less(&h[i].k, &h[p].k))
			break;
		t = h[i]; h[i] = h[p]; h[p] = t;
		i = p;
	}
}

static void loose_down(struct loose *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct loose t;

		if (l < n && less(&h[l].k, &h[m].k))
			m = l;
		if (r < n && less(&h[r].k, &h[m].k))
			m = r;
		if (m == i)
			break;
		t = h[i]; h[i] = h[m]; h[m] = t;
		i = m;
	}
}

static int loose_push(struct tb_merge *m, const struct key *k,
		      const struct tb_rec_hdr *h)
{
	struct tb_rec_hdr *c;

	if (m->nheap == m->heap_cap) {
		size_t cap = m->heap_cap ? 2 * m->heap_cap : 1024;
		struct loose *p = realloc(m->heap, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		m->heap = p;
		m->heap_cap = cap;
	}
	c = malloc(h->size);
	if (!c)
		return -ENOMEM;
	memcpy(c, h, h->size);
	m->heap[m->nheap] = (struct loose){ *k, c };
	loose_up(m->heap, m->nheap++);
	return 0;
}

static struct tb_rec_hdr *loose_pop(struct tb_merge *m)
{
	struct tb_rec_hdr *rec = m->heap[0].rec;

	m->heap[0] = m->heap[--m->nheap];
	loose_down(m->heap, m->nheap, 0);
	return rec;
}

/* ----------------------------------------------------------- merge -- */

int tb_merge_new(struct tb_merge **mp, struct tb_reader *r,
		 uint32_t (*rank)(uint16_t), size_t max_held)
{
	size_t size = (sizeof(struct tb_merge) + 63) & ~(size_t)63;
	struct tb_merge *m = aligned_alloc(_Alignof(struct tb_merge), size);

	*mp = NULL;
	if (!m)
		return -ENOMEM;
	memset(m, 0, sizeof(*m));
	m->r = r;
	m->rank = rank;
	m->max_held = max_held ? max_held : 1;
	tb_reader_time_order(r);
	*mp = m;
	return 0;
}

static struct key key_of(const struct tb_merge *m, const struct tb_rec_hdr *h, uint64_t seq)
{
	return (struct key){ h->ts, seq, m->rank ? m->rank(h->type) : 0 };
}

static int push(struct tb_merge *m, const struct tb_rec_hdr *h, const struct key *k)
{
	struct run *r = pick_run(m, k);
	int err = r ? run_append(m, r, k, h) : loose_push(m, k, h);

	if (err)
		return err;
	if (++m->n > m->peak)
		m->peak = m->n;
	return 0;
}

/* The key of the oldest held record (there is one). */
static const struct key *oldest(const struct tb_merge *m)
{
	if (!m->nrheap)
		return &m->heap[0].k;
	if (!m->nheap || less(run_key(m->rheap[0]), &m->heap[0].k))
		return run_key(m->rheap[0]);
	return &m->heap[0].k;
}

static const struct tb_rec_hdr *pop(struct tb_merge *m)
{
	m->n--;
	if (m->nrheap && (!m->nheap || less(run_key(m->rheap[0]), &m->heap[0].k)))
		return run_pop(m);
	m->out = loose_pop(m);
	return m->out;
}

/* Is the oldest held record releasable? */
static bool ready(const struct tb_merge *m)
{
	if (!m->n)
		return false;
	if (m->eof || m->n > m->max_held)
		return true;
	return m->have_wm && oldest(m)->ts <= m->watermark;
}

/* What the record handed out last held: no longer in use. */
static void release_out(struct tb_merge *m)
{
	free(m->out);
	m->out = NULL;
	while (m->done) {
		struct blk *b = m->done;

		m->done = b->next;
		blk_free(m, b);
	}
}

/* A round (or rounds) ended before the next record: releases up to the
 * newest ts of the round before the one that ended. */
static void round_ended(struct tb_merge *m)
{
	m->rounds = tb_reader_rounds(m->r);
	if (m->have_prev) {
		if (!m->have_wm || m->prev_max > m->watermark)
			m->watermark = m->prev_max;
		m->have_wm = true;
	}
	m->prev_max = m->cur_max;
	m->have_prev = m->have_cur;
	m->have_cur = false;
}

/* Reading in time order (tb_reader_time_pos), every record to come is at
 * least low: what is older is released. */
static void time_read(struct tb_merge *m, uint64_t low)
{
	if (low && (!m->have_wm || low - 1 > m->watermark)) {
		m->watermark = low - 1;
		m->have_wm = true;
	}
}

/* tb_merge_next without reading ahead. */
static int merge_step(struct tb_merge *m, const struct tb_rec_hdr **rec)
{
	const struct tb_rec_hdr *h;
	struct key k;
	uint64_t low, pos;
	int ret;

	release_out(m);
	*rec = NULL;
	while (!ready(m)) {
		if (m->eof)
			return 0;
		ret = tb_reader_next(m->r, &h);
		if (ret < 0)
			return ret;
		if (ret > 0 && tb_reader_time_pos(m->r, &low, &pos)) {
			k = key_of(m, h, pos);   /* pos: its place in the file */

			time_read(m, low);
			if (h->ts < low && (!m->n || less(&k, oldest(m)))) {
				*rec = h;   /* before all held and all to come: not held */
				return 1;
			}
			ret = push(m, h, &k);
			if (ret)
				return ret;
			continue;
		}
		if (tb_reader_rounds(m->r) != m->rounds)
			round_ended(m);
		if (ret == 0) {
			m->eof = true;
			continue;
		}
		if (!m->have_cur || h->ts > m->cur_max)
			m->cur_max = h->ts;
		m->have_cur = true;
		k = key_of(m, h, m->seq++);
		ret = push(m, h, &k);
		if (ret)
			return ret;
	}
	if (!m->eof && m->n > m->max_held &&
	    !(m->have_wm && oldest(m)->ts <= m->watermark))
		m->forced++;
	*rec = pop(m);
	return 1;
}

/* ------------------------------------------------------ reading ahead -- */

void tb_merge_ahead(struct tb_merge *m, enum tb_ahead how)
{
	m->f.ahead_wanted = true;
	m->f.how = how;
}

/* The thread: every record the merge releases, copied into the batches. */
static int produce(void *ctx, struct tb_outq *q)
{
	struct tb_merge *m = ctx;
	const struct tb_rec_hdr *h;
	int ret;

	while ((ret = merge_step(m, &h)) > 0) {
		void *p = tb_outq_reserve(q, h->size);

		if (!p)
			return 0;   /* the consumer has quit */
		memcpy(p, h, h->size);
		tb_outq_commit(q, h->size);
	}
	return ret;
}

/* Before the first record: if the reader reads a finished file in time
 * order, a thread reads ahead as tb_merge_ahead was asked (else, or
 * without a thread, all is done here). */
static int ahead_start(struct tb_merge *m)
{
	int ret = tb_reader_time_ordered(m->r);

	m->f.ahead_wanted = false;
	if (ret > 0 && m->f.how == TB_AHEAD_DECODE)
		tb_reader_decode_ahead(m->r);
	else if (ret > 0)
		tb_outq_ahead(&m->f.q, produce, m);   /* on failure q is NULL */
	return ret < 0 ? ret : 0;
}

/* The next record of the thread's batches. At their end the thread is
 * joined, so what it wrote into m (counts, the reader's tail) is the
 * caller's to read. */
static int ahead_next(struct tb_merge *m, const struct tb_rec_hdr **rec)
{
	const struct tb_rec_hdr *h;

	if (m->f.bpos == m->f.bend) {
		size_t len;
		const char *b = tb_outq_take(m->f.q, &len);

		if (!b) {
			m->f.result = tb_outq_result(m->f.q);
			tb_outq_finish(m->f.q);
			m->f.q = NULL;
			m->f.ahead_ended = true;
			return m->f.result;
		}
		m->f.bpos = b;
		m->f.bend = b + len;
	}
	h = (const void *)m->f.bpos;   /* 8-aligned: batch start, record sizes */
	m->f.bpos += h->size;
	*rec = h;
	return 1;
}

int tb_merge_next(struct tb_merge *m, const struct tb_rec_hdr **rec)
{
	*rec = NULL;
	if (m->f.ahead_wanted) {
		int err = ahead_start(m);

		if (err)
			return err;
	}
	if (m->f.q)
		return ahead_next(m, rec);
	if (m->f.ahead_ended)
		return m->f.result;
	return merge_step(m, rec);
}

uint64_t tb_merge_forced(const struct tb_merge *m)
{
	return m->forced;
}

size_t tb_merge_peak(const struct tb_merge *m)
{
	return m->peak;
}

void tb_merge_free(struct tb_merge *m)
{
	size_t i;

	if (!m)
		return;
	tb_outq_finish(m->f.q);   /* first: the thread may be using m */
	release_out(m);
	for (i = 0; i < m->nruns; i++) {
		while (m->runs[i].head) {
			struct blk *b = m->runs[i].head;

			m->runs[i].head = b->next;
			free(b);
		}
	}
	while (m->nheap)
		free(loose_pop(m));
	while (m->nspare)
		free(m->spare[--m->nspare]);
	free(m->heap);
	free(m);
}
