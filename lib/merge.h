/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * merge.h - a trace file's records in time order, in bounded memory.
 *
 * Records arrive per chunk, per stream, per CPU: roughly but not exactly in
 * time order. The recorder ends every flush (a "round") with a
 * TB_CHUNK_ROUND_END chunk, and a record drained in round n+1 was produced
 * after round n-1 was drained. So, as perf does with its "finished rounds",
 * when round n ends every held record up to the newest timestamp of round
 * n-1 is released in order. Memory holds about two rounds of records.
 * Files without rounds (format 1.x) are held whole up to `max_held`
 * records, then released oldest first (time order may then break).
 * A finished file is read in the time order of its chunks instead
 * (tb_reader_time_order): after each record, what is older than every
 * record still to come (tb_reader_time_pos) is released, and a record
 * older than those and than every held one is not held at all. Memory
 * then holds the chunks that overlap in time, whatever the rounds.
 */
#ifndef TRACEBPF_MERGE_H
#define TRACEBPF_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "format/tbfile.h"

struct tb_merge;

/* rank orders records of equal ts (lower first); then file order. Asks r
 * for time order (before r's first record is read). */
int tb_merge_new(struct tb_merge **m, struct tb_reader *r,
		 uint32_t (*rank)(uint16_t type), size_t max_held);
/* How tb_merge_ahead shares the work with a second thread. */
enum tb_ahead {
	/* The merge runs on the thread and hands over copies of its records
	 * in large batches (about 4 MiB in all): for a caller that does much
	 * with each record (convert). */
	TB_AHEAD_MERGE,
	/* The thread reads and decodes the chunks ahead of the merge
	 * (tb_reader_decode_ahead), the caller merges: for a caller that does
	 * little with each record (report), since unpacked records are the
	 * least that must pass between the two. */
	TB_AHEAD_DECODE,
};

/* Before the first record: if r reads a finished file in time order, a
 * second thread works ahead of the caller, as how says. With
 * TB_AHEAD_MERGE, r and the counts below are the thread's until
 * tb_merge_next has returned 0 or an error, or tb_merge_free. The records
 * are the same either way. */
void tb_merge_ahead(struct tb_merge *m, enum tb_ahead how);
/* 1 and *rec (owned by the merge, valid until the next call), 0 at the
 * end, -errno on a read error. */
int tb_merge_next(struct tb_merge *m, const struct tb_rec_hdr **rec);
/* Records released out of time order because max_held was reached. */
uint64_t tb_merge_forced(const struct tb_merge *m);
/* The most records held at once. */
size_t tb_merge_peak(const struct tb_merge *m);
void tb_merge_free(struct tb_merge *m);

#endif
