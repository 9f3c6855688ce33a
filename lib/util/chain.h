/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * chain.h - a chained hash table of intrusive entries, for the readers'
 * tables keyed by more than one field (convert's async slices and flows,
 * report's threads, names and counters).
 *
 * An entry starts with struct tb_chain_link, whose h the caller sets to
 * the key's hash before adding it; lookups walk tb_chain_first(t, h) and
 * compare the keys themselves (tb_hash64 and tb_hash_bytes make hashes). The table doubles when it holds as many
 * entries as buckets. It owns its buckets, never the entries.
 */
#ifndef TRACEBPF_CHAIN_H
#define TRACEBPF_CHAIN_H

#include <stddef.h>
#include <stdint.h>

/* murmur3's 64-bit finaliser: spreads a key over every bit (the tables
 * take the low bits). */
static inline uint64_t tb_hash64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return k;
}

/* FNV-1a over the n bytes at p, going on from h. */
static inline uint64_t tb_hash_bytes(uint64_t h, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 0x100000001b3ULL;
	return h;
}

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
