// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* merge.c - time-ordered records in bounded memory (see merge.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "merge.h"

struct item {
	uint64_t ts;
	uint64_t seq;       /* file order */
	uint32_t rank;
	struct tb_rec_hdr *rec;
};

struct tb_merge {
	struct tb_reader *r;
	uint32_t (*rank)(uint16_t);
	size_t max_held;
	struct item *heap;
	size_t n, cap, peak;
	uint64_t seq, forced;
	uint64_t rounds;          /* reader's count at the last record */
	uint64_t cur_max, prev_max, watermark;
	bool have_cur, have_prev, have_wm;
	bool eof;
	struct tb_rec_hdr *out;   /* last record handed out */
};

static bool less(const struct item *a, const struct item *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts;
	if (a->rank != b->rank)
		return a->rank < b->rank;
	return a->seq < b->seq;
}

static void sift_up(struct item *h, size_t i)
{
	while (i) {
		size_t p = (i - 1) / 2;
		struct item t;

		if (!less(&h[i], &h[p]))
			break;
		t = h[i]; h[i] = h[p]; h[p] = t;
		i = p;
	}
}

static void sift_down(struct item *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct item t;

		if (l < n && less(&h[l], &h[m]))
			m = l;
		if (r < n && less(&h[r], &h[m]))
			m = r;
		if (m == i)
			break;
		t = h[i]; h[i] = h[m]; h[m] = t;
		i = m;
	}
}

int tb_merge_new(struct tb_merge **mp, struct tb_reader *r,
		 uint32_t (*rank)(uint16_t), size_t max_held)
{
	struct tb_merge *m = calloc(1, sizeof(*m));

	*mp = NULL;
	if (!m)
		return -ENOMEM;
	m->r = r;
	m->rank = rank;
	m->max_held = max_held ? max_held : 1;
	*mp = m;
	return 0;
}

static int push(struct tb_merge *m, const struct tb_rec_hdr *h)
{
	struct tb_rec_hdr *c;

	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 1024;
		struct item *p = realloc(m->heap, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		m->heap = p;
		m->cap = cap;
	}
	c = malloc(h->size);
	if (!c)
		return -ENOMEM;
	memcpy(c, h, h->size);
	m->heap[m->n] = (struct item){ h->ts, m->seq++, m->rank ? m->rank(h->type) : 0, c };
	sift_up(m->heap, m->n++);
	if (m->n > m->peak)
		m->peak = m->n;
	return 0;
}

static struct tb_rec_hdr *pop(struct tb_merge *m)
{
	struct tb_rec_hdr *rec = m->heap[0].rec;

	m->heap[0] = m->heap[--m->n];
	sift_down(m->heap, m->n, 0);
	return rec;
}

/* Is the oldest held record releasable? */
static bool ready(const struct tb_merge *m)
{
	if (!m->n)
		return false;
	if (m->eof || m->n > m->max_held)
		return true;
	return m->have_wm && m->heap[0].ts <= m->watermark;
}

int tb_merge_next(struct tb_merge *m, const struct tb_rec_hdr **rec)
{
	const struct tb_rec_hdr *h;
	int ret;

	free(m->out);
	m->out = NULL;
	*rec = NULL;
	while (!ready(m)) {
		if (m->eof)
			return 0;
		ret = tb_reader_next(m->r, &h);
		if (ret < 0)
			return ret;
		if (tb_reader_rounds(m->r) != m->rounds) {
			/* round(s) ended before h: release up to the newest ts
			 * of the round before the one that ended */
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
		if (ret == 0) {
			m->eof = true;
			continue;
		}
		if (!m->have_cur || h->ts > m->cur_max)
			m->cur_max = h->ts;
		m->have_cur = true;
		ret = push(m, h);
		if (ret)
			return ret;
	}
	if (!m->eof && m->n > m->max_held &&
	    !(m->have_wm && m->heap[0].ts <= m->watermark))
		m->forced++;
	m->out = pop(m);
	*rec = m->out;
	return 1;
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
	if (!m)
		return;
	while (m->n)
		free(pop(m));
	free(m->heap);
	free(m->out);
	free(m);
}
