/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * slots.h - the recorder's side of the slot rings (struct tb_slot in
 * lib/format/tbrecords.h; `slot_pos` and `slots` in bpf/record.bpf.c): each CPU's
 * fixed-size events, which the probe programs write with plain stores.
 * The recorder maps both arrays and turns every slot it reads back into
 * the TB_REC_EVENT or TB_REC_EVENT_ID the ring buffer would have carried.
 *
 * Order of calls: tb_slots_create before the object is loaded, tb_slots_open
 * after, tb_slots_consume wherever the ring buffers are consumed,
 * tb_slots_close at the end.
 */
#ifndef TRACEBPF_SLOTS_H
#define TRACEBPF_SLOTS_H

#include <stddef.h>

struct bpf_map;
struct tb_slot;
struct tb_slot_pos;

struct tb_slots {
	struct tb_slot_pos *pos;   /* mapped: one per possible CPU */
	struct tb_slot *slot;      /* mapped: ncpus << bits */
	size_t pos_bytes, slot_bytes;
	int ncpus;
	unsigned bits;             /* log2 of each CPU's slots: the object's slot_bits */
};

/* Before load: sizes `pos` for ncpus and creates the slots of `slots`
 * (2^bits per CPU, the most that fit in bytes), as tb_rings_create
 * creates rings, so that memory that is short is said as such, naming
 * option. 0 or a negative errno (said). */
int tb_slots_create(struct tb_slots *s, struct bpf_map *pos, struct bpf_map *slots,
		    int ncpus, size_t bytes, const char *option);
/* After load: maps both. 0 or a negative errno (nothing printed). */
int tb_slots_open(struct tb_slots *s, int pos_fd, int slots_fd);
/* Hands every slot written since the last call to fn(ctx, record, size) as
 * a TB_REC_EVENT or TB_REC_EVENT_ID of its CPU, oldest first, and frees
 * them. Returns the number of records. */
size_t tb_slots_consume(struct tb_slots *s, int (*fn)(void *ctx, void *data, size_t size),
			void *ctx);
void tb_slots_close(struct tb_slots *s);

#endif
