// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_merge.c - the time-ordered merge of a file's records: whatever the
 * input order (interleaved ascending runs, descending stretches, equal
 * timestamps of different ranks, large records), the merge hands out the
 * file's records in (ts, rank, file order), or, past max_held, exactly as
 * "release the oldest held" does. The expected order is computed here by
 * a naive reference from the records as the reader returns them. A
 * finished file is read through its index in the chunks' time order: the
 * same order, holding about a chunk per stream, never forced, and the
 * same again when the merge reads ahead on a thread of its own.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../lib/merge.h"
#include "tmpdir.h"
#include "recs.h"

static char dir[] = "/tmp/test_merge.XXXXXX";
static char path[256];

static uint32_t rank(uint16_t type)
{
	return type == TB_REC_COMM ? 0 : 1;
}

/* Record i at ts: a COMM naming i, or every third one an EVENT carrying i
 * with a string of up to 40 KiB (some items then straddle blocks). */
static struct tb_rec_hdr *mk(unsigned i, uint64_t ts)
{
	size_t size, slen = 0;
	struct tb_rec_hdr *h;

	if (i % 3) {
		size = sizeof(struct tb_rec_comm);
	} else {
		slen = i % 97 == 0 ? 40000 : (i * 13) % 300;
		size = TB_REC_ALIGN(sizeof(struct tb_rec_event) + slen);
	}
	h = calloc(1, size);
	assert_non_null(h);
	h->type = i % 3 ? TB_REC_COMM : TB_REC_EVENT;
	h->size = (uint16_t)size;
	h->cpu = i % 4;
	h->ts = ts;
	h->pid = h->tid = 100;
	if (i % 3) {
		snprintf(((struct tb_rec_comm *)h)->comm, 16, "r%u", i);
	} else {
		struct tb_rec_event *e = (void *)h;

		e->site = 0x401000;
		e->args[0] = i;
		e->str_len[0] = (uint16_t)slen;
		memset(e + 1, 'a' + i % 26, slen);
	}
	return h;
}

/* The timestamp of record i of n: four interleaved ascending streams with
 * jitter, then a descending stretch, then equal timestamps. */
static uint64_t ts_of(unsigned i, unsigned n)
{
	if (i < n / 2)
		return 1000000 + (uint64_t)(i % 4) * 7 + (i / 4) * 40 + (i * 2654435761u) % 90;
	if (i < n / 2 + 200)
		return 5000000 - (uint64_t)i * 3;
	return 2000000 + (i % 5) * 1000;
}

static void write_file_with(unsigned n, uint64_t (*ts)(unsigned i, unsigned n),
			    size_t chunk_max)
{
	struct tb_file_info info;
	struct tb_writer_opts o = { .info = &info, .chunk_max = chunk_max };
	struct tb_writer *w;

	memset(&info, 0, sizeof(info));
	info.clock_id = 1;
	assert_int_equal(tb_writer_open(&w, path, &o), 0);
	for (unsigned i = 0; i < n; i++) {
		struct tb_rec_hdr *h = mk(i, ts(i, n));

		assert_int_equal(tb_writer_append(w, h), 0);
		free(h);
	}
	/* one round: nothing is released before the end or max_held (in
	 * file order) */
	assert_int_equal(tb_writer_close(w), 0);
}

static void write_file(unsigned n)
{
	write_file_with(n, ts_of, 0);
}

static void read_file(struct recs *out)
{
	struct tb_reader *r;
	const struct tb_rec_hdr *h;
	int ret;

	assert_int_equal(tb_reader_open(&r, path), 0);
	while ((ret = tb_reader_next(r, &h)) == 1)
		recs_add(out, h);
	assert_int_equal(ret, 0);
	tb_reader_close(r);
}

/* a before b: (ts, rank, file order); ia, ib are file positions */
static bool before(const struct tb_rec_hdr *a, size_t ia,
		   const struct tb_rec_hdr *b, size_t ib)
{
	if (a->ts != b->ts)
		return a->ts < b->ts;
	if (rank(a->type) != rank(b->type))
		return rank(a->type) < rank(b->type);
	return ia < ib;
}

/* The reference: hold records in file order, release the oldest whenever
 * more than max_held are held, then the rest in order. */
static void expected(const struct recs *file, size_t max_held, struct recs *out)
{
	bool *gone = calloc(file->n, sizeof(*gone));
	size_t held = 0, read = 0;

	assert_non_null(gone);
	while (out->n < file->n) {
		size_t best = SIZE_MAX;

		if (read < file->n && held <= max_held) {
			read++;
			held++;
			if (held <= max_held)
				continue;
		}
		for (size_t i = 0; i < read; i++)
			if (!gone[i] && (best == SIZE_MAX ||
					 before(file->v[i], i, file->v[best], best)))
				best = i;
		gone[best] = true;
		held--;
		recs_add(out, file->v[best]);
	}
	free(gone);
}

#define NO_AHEAD (-1)   /* or an enum tb_ahead */

/* Merges the file (in_index: through its index, in time order, else in
 * file order; ahead: tb_merge_ahead's how, or NO_AHEAD) and compares with
 * the reference; returns the peak held. */
static size_t check_merge_ahead(size_t max_held, bool want_forced, bool in_index, int ahead)
{
	struct recs file = { 0 }, want = { 0 };
	struct tb_reader *r;
	struct tb_merge *m;
	const struct tb_rec_hdr *h;
	size_t k = 0, peak;
	int ret;

	read_file(&file);
	expected(&file, want_forced ? max_held : SIZE_MAX, &want);
	assert_int_equal(tb_reader_open(&r, path), 0);
	tb_reader_use_index(r, in_index);
	assert_int_equal(tb_merge_new(&m, r, rank, max_held), 0);
	if (ahead != NO_AHEAD)
		tb_merge_ahead(m, (enum tb_ahead)ahead);
	while ((ret = tb_merge_next(m, &h)) == 1) {
		assert_true(k < want.n);
		if (h->size != want.v[k]->size || memcmp(h, want.v[k], h->size)) {
			print_error("record %zu: ts %llu, want ts %llu\n", k,
				    (unsigned long long)h->ts,
				    (unsigned long long)want.v[k]->ts);
			fail();
		}
		k++;
	}
	assert_int_equal(ret, 0);
	assert_int_equal(k, want.n);
	assert_int_equal(tb_merge_forced(m) > 0, want_forced);
	peak = tb_merge_peak(m);
	tb_merge_free(m);
	tb_reader_close(r);
	recs_free(&file);
	recs_free(&want);
	return peak;
}

static size_t check_merge_as(size_t max_held, bool want_forced, bool in_index)
{
	return check_merge_ahead(max_held, want_forced, in_index, NO_AHEAD);
}

static void check_merge(size_t max_held, bool want_forced)
{
	check_merge_as(max_held, want_forced, false);
}

static void test_sorted_whole(void **state)
{
	(void)state;
	write_file(3000);
	check_merge(1u << 20, false);
}

/* In file order, one round: past max_held the oldest are forced out. */
static void test_bounded(void **state)
{
	(void)state;
	write_file(3000);
	check_merge(50, true);
}

/* Ascending with jitter of up to 60 records' spacing, so that chunks
 * overlap in time, and a stretch of equal timestamps across chunks. */
static uint64_t ts_local(unsigned i, unsigned n)
{
	if (i >= n / 2 && i < n / 2 + 300)
		return 10000 + (uint64_t)(n / 2) * 10;
	return 10000 + (uint64_t)i * 10 + (i * 2654435761u) % 600;
}

static void test_time_order(void **state)
{
	size_t whole, peak;

	(void)state;
	write_file_with(6000, ts_local, 4096);   /* about 400 chunks */
	whole = check_merge_as(1u << 20, false, false);
	/* file order holds the one round whole; time order a few chunks, so
	 * a limit of a sixth of the file forces nothing out of order */
	peak = check_merge_as(1000, false, true);
	assert_int_equal(whole, 6000);
	if (peak > 600)
		fail_msg("time order held %zu records at once", peak);
	/* with a thread, either way: the same records, counts, and peak */
	assert_int_equal(check_merge_ahead(1000, false, true, TB_AHEAD_MERGE), peak);
	assert_int_equal(check_merge_ahead(1000, false, true, TB_AHEAD_DECODE), peak);
	/* in file order it does not read ahead, but gives the same records */
	assert_int_equal(check_merge_ahead(1u << 20, false, false, TB_AHEAD_MERGE), whole);
	assert_int_equal(check_merge_ahead(1u << 20, false, false, TB_AHEAD_DECODE), whole);
}

/* Two streams ascending in steps of 10, with outliers: every 500th record
 * 5000 early (a chunk's least ts near its end), every 700th 5000 late,
 * and runs of equal timestamps across the streams, which only rank and
 * file order separate. */
static uint64_t ts_outliers(unsigned i, unsigned n)
{
	uint64_t ts = 100000 + (uint64_t)i * 10;

	(void)n;
	if (i % 500 == 499)
		return ts - 5000;
	if (i % 700 == 1)
		return ts + 5000;
	if (i % 1000 < 40)
		return 100000 + (uint64_t)(i / 1000) * 10000;
	return ts;
}

/* Read in time order, a record is handed out without being held when
 * nothing held or to come precedes it: a chunk's outliers and equal
 * timestamps must not let one out early. */
static void test_time_order_outliers(void **state)
{
	size_t peak;

	(void)state;
	write_file_with(8000, ts_outliers, 2048);
	peak = check_merge_as(1u << 20, false, true);
	assert_int_equal(check_merge_ahead(1u << 20, false, true, TB_AHEAD_MERGE), peak);
	assert_int_equal(check_merge_ahead(1u << 20, false, true, TB_AHEAD_DECODE), peak);
	/* mostly ascending: about a chunk is held, not the stretch an early
	 * outlier spans */
	if (peak > 400)
		fail_msg("time order held %zu records at once", peak);
}

/* Reading ahead, the caller may stop at any record: tb_merge_free and
 * tb_reader_close end the thread wherever it is (waiting for room, or
 * reading). */
static void test_ahead_stop_early(void **state)
{
	const struct tb_rec_hdr *h;
	struct tb_reader *r;
	struct tb_merge *m;

	(void)state;
	write_file_with(60000, ts_local, 4096);   /* more than its batches hold */
	for (unsigned stop_at = 0; stop_at < 6000; stop_at += 997) {
		assert_int_equal(tb_reader_open(&r, path), 0);
		assert_int_equal(tb_merge_new(&m, r, rank, 1u << 20), 0);
		tb_merge_ahead(m, stop_at % 2 ? TB_AHEAD_DECODE : TB_AHEAD_MERGE);
		for (unsigned k = 0; k < stop_at; k++)
			assert_int_equal(tb_merge_next(m, &h), 1);
		tb_merge_free(m);
		tb_reader_close(r);
	}
}

/* A corrupt chunk ends the data: reading ahead, the records before it,
 * the error's place and its reason are the same as without. */
static void test_ahead_corrupt(void **state)
{
	const struct tb_rec_hdr *h;
	const char *reason[3];
	size_t n[3];
	FILE *f;
	long mid;
	int c;

	(void)state;
	write_file_with(6000, ts_local, 4096);
	f = fopen(path, "r+b");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	mid = ftell(f) / 2;   /* inside a chunk (they are small) */
	assert_int_equal(fseek(f, mid, SEEK_SET), 0);
	c = fgetc(f);
	assert_int_equal(fseek(f, mid, SEEK_SET), 0);
	fputc(c ^ 0x5a, f);
	fclose(f);
	for (int ahead = 0; ahead < 3; ahead++) {   /* none, merge, decode */
		struct tb_reader *r;
		struct tb_merge *m;
		int ret;

		assert_int_equal(tb_reader_open(&r, path), 0);
		assert_int_equal(tb_merge_new(&m, r, rank, 1u << 20), 0);
		if (ahead)
			tb_merge_ahead(m, ahead == 1 ? TB_AHEAD_MERGE : TB_AHEAD_DECODE);
		n[ahead] = 0;
		while ((ret = tb_merge_next(m, &h)) == 1)
			n[ahead]++;
		assert_int_equal(ret, 0);
		reason[ahead] = tb_reader_tail_reason(r);
		assert_non_null(reason[ahead]);
		tb_merge_free(m);
		tb_reader_close(r);
	}
	assert_int_equal(n[0], n[1]);
	assert_int_equal(n[0], n[2]);
	assert_true(n[0] > 100 && n[0] < 5900);
	assert_string_equal(reason[0], reason[1]);
	assert_string_equal(reason[0], reason[2]);
}

static int setup(void **state)
{
	(void)state;
	return tmpdir_make(dir, path, sizeof(path), "m.tbt");
}

static int teardown(void **state)
{
	(void)state;
	tmpdir_remove(dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sorted_whole),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_time_order),
		cmocka_unit_test(test_time_order_outliers),
		cmocka_unit_test(test_ahead_stop_early),
		cmocka_unit_test(test_ahead_corrupt),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
