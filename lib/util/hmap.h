/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hmap.h - an open-addressed map from a 64-bit key to a pointer, for the
 * readers' tables keyed by one number (convert's processes, threads and
 * sites, the ftrace renderer's tasks, dump's sites). Tables keyed by more
 * than one field use chain.h.
 *
 * Values are never NULL: an empty slot holds NULL. The table doubles when
 * half full and never shrinks; entries are not removed. A caller walks
 * every entry as vals[0 .. cap) that are not NULL.
 */
#ifndef TRACEBPF_HMAP_H
#define TRACEBPF_HMAP_H

#include <stddef.h>
#include <stdint.h>

#include "util/chain.h"   /* tb_hash64 */

struct tb_hmap {
	uint64_t *keys;
	void **vals;
	size_t cap, n;
};

/* k's value, or NULL. Inline: the readers look up once or twice a record. */
static inline void *tb_hmap_get(const struct tb_hmap *m, uint64_t k)
{
	if (!m->cap)
		return NULL;
	for (size_t i = tb_hash64(k) & (m->cap - 1); m->vals[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == k)
			return m->vals[i];
	return NULL;
}

/* Sets k's value to v (not NULL). 0, or -ENOMEM (m unchanged). */
int tb_hmap_put(struct tb_hmap *m, uint64_t k, void *v);
/* Frees the table, not the values; m is empty again. */
void tb_hmap_free(struct tb_hmap *m);

#endif /* TRACEBPF_HMAP_H */
