/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * recs.h - the unit tests' list of records: copies of what a reader or a
 * merge handed out, to compare with what was written. Include after
 * cmocka.h and the record types.
 */
#ifndef TRACEBPF_TEST_RECS_H
#define TRACEBPF_TEST_RECS_H

#include <stdlib.h>
#include <string.h>

struct recs {
	struct tb_rec_hdr **v;
	size_t n;
};

static void recs_add(struct recs *r, const struct tb_rec_hdr *h)
{
	struct tb_rec_hdr *c = malloc(h->size);

	assert_non_null(c);
	memcpy(c, h, h->size);
	r->v = realloc(r->v, (r->n + 1) * sizeof(*r->v));
	assert_non_null(r->v);
	r->v[r->n++] = c;
}

static void recs_free(struct recs *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i]);
	free(r->v);
	r->v = NULL;
	r->n = 0;
}

#endif /* TRACEBPF_TEST_RECS_H */
