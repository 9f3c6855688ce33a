/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * gaps.h - the recorder's side of the gap marks (bpf/ring.bpf.h `gaps`,
 * struct tb_gap_state in lib/format/tbrecords.h): the kernel side writes a
 * TB_REC_GAP ahead of the next record of the CPU that lost records; what
 * is still pending after a drain (the CPU wrote nothing since, or its
 * mark was being updated) the recorder takes here and appends to the
 * trace itself, so that a mark is never later than the round after its
 * losses, and none is left behind at the end.
 *
 * Order of calls: tb_gaps_size before the object is loaded, tb_gaps_open
 * after, tb_gaps_sweep after each drain, tb_gaps_close at the end.
 */
#ifndef TRACEBPF_GAPS_H
#define TRACEBPF_GAPS_H

#include <stddef.h>
#include <stdint.h>

struct bpf_map;
struct tb_writer;
struct tb_gap_state;

struct tb_gaps {
	struct tb_gap_state *map;  /* mapped: one entry per possible CPU */
	size_t bytes;
	int ncpus;
	uint16_t kind;             /* enum tb_gap_kind of the object's records */
};

/* One entry per CPU (before load). 0 or a negative errno. */
int tb_gaps_size(struct bpf_map *map, int ncpus);
/* Maps the loaded `gaps` map. 0 or a negative errno (nothing printed). */
int tb_gaps_open(struct tb_gaps *g, int map_fd, int ncpus, uint16_t kind);
/* Appends a TB_REC_GAP (TB_GAPF_SWEPT) to w for every CPU with losses not
 * yet marked. Returns the number of marks written or the writer's error. */
int tb_gaps_sweep(struct tb_gaps *g, struct tb_writer *w);
void tb_gaps_close(struct tb_gaps *g);

#endif
