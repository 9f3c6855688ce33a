// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * hmap.c - an open-addressed map from a 64-bit key to a pointer (see
 * hmap.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/hmap.h"

#define HMAP_MIN 16   /* slots of a table's first allocation */

/* v goes into k's slot, or the empty slot its probe reaches first. */
static void place(struct tb_hmap *m, uint64_t k, void *v)
{
	size_t i;

	for (i = tb_hash64(k) & (m->cap - 1); m->vals[i]; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == k) {
			m->vals[i] = v;
			return;
		}
	}
	m->keys[i] = k;
	m->vals[i] = v;
	m->n++;
}

static int grow(struct tb_hmap *m)
{
	struct tb_hmap nm = { .cap = m->cap ? m->cap * 2 : HMAP_MIN };

	nm.keys = calloc(nm.cap, sizeof(*nm.keys));
	nm.vals = calloc(nm.cap, sizeof(*nm.vals));
	if (!nm.keys || !nm.vals) {
		free(nm.keys);
		free(nm.vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->vals[i])
			place(&nm, m->keys[i], m->vals[i]);
	free(m->keys);
	free(m->vals);
	*m = nm;
	return 0;
}

int tb_hmap_put(struct tb_hmap *m, uint64_t k, void *v)
{
	if ((m->n + 1) * 2 > m->cap) {
		int err = grow(m);

		if (err)
			return err;
	}
	place(m, k, v);
	return 0;
}

void tb_hmap_free(struct tb_hmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}
