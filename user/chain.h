/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * chain.h - a chained hash table of intrusive entries, for the readers'
 * tables keyed by more than one field (convert's async slices and flows,
 * report's threads, names and counters).
 *
 * An entry starts with struct tb_chain_link, whose h the caller sets to
 * the key's hash before adding it; lookups walk tb_chain_first(t, h) and
 * compare the keys themselves. The table doubles when it holds as many
 * entries as buckets. It owns its buckets, never the entries.
 */
#ifndef TRACEBPF_CHAIN_H
#define TRACEBPF_CHAIN_H

#include <stddef.h>
#include <stdint.h>

struct tb_chain_link {
	struct tb_chain_link *next;
	uint64_t h;
};

struct tb_chain {
	struct tb_chain_link **b;
	size_t cap, n;
};

/* 0, or -ENOMEM (e is then not in the table). */
int tb_chain_add(struct tb_chain *t, struct tb_chain_link *e);
/* The first entry of h's bucket (follow ->next; other hashes share it). */
struct tb_chain_link *tb_chain_first(const struct tb_chain *t, uint64_t h);
/* Unlinks e, which is in t. */
void tb_chain_del(struct tb_chain *t, struct tb_chain_link *e);
/* The entries in an array the caller frees, *n of them; NULL: no memory. */
void **tb_chain_list(const struct tb_chain *t, size_t *n);
/* Calls free_entry (if not NULL) on every entry, then frees the buckets. */
void tb_chain_free(struct tb_chain *t, void (*free_entry)(void *));

#endif /* TRACEBPF_CHAIN_H */
