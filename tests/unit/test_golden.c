// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_golden.c - the golden files of every released version of the trace
 * format (tests/data/, listed in its README): each still reads, with its
 * version, a clean end, its index or none, and exactly its number of
 * records of each type; records new in a version are checked field by
 * field. Run from the repository's root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "../../lib/format/tbfile.h"

/* Golden files: what each released version wrote still reads. Reads the
 * whole file, checks its version, a clean end, whether it has an index
 * (finished) and its number of records of each type (want); check(h) looks
 * at each record. */
static void check_golden(const char *file, unsigned major, unsigned minor, bool finished,
			 const unsigned want[TB_REC_TYPE_MAX],
			 void (*check)(const struct tb_rec_hdr *))
{
	unsigned counts[TB_REC_TYPE_MAX] = { 0 };
	const struct tb_rec_hdr *h;
	struct tb_reader *r;
	int ret;

	assert_int_equal(tb_reader_open(&r, file), 0);
	assert_int_equal(tb_reader_info(r)->major, major);
	assert_int_equal(tb_reader_info(r)->minor, minor);
	assert_int_equal(tb_reader_info(r)->clock_id, 1);
	while ((ret = tb_reader_next(r, &h)) == 1) {
		assert_true(h->type < TB_REC_TYPE_MAX);
		counts[h->type]++;
		if (check)
			check(h);
	}
	assert_int_equal(ret, 0);
	assert_null(tb_reader_tail_reason(r));
	assert_int_equal(tb_reader_finished(r), finished);
	tb_reader_close(r);
	assert_memory_equal(counts, want, sizeof(counts));
}

static void test_golden_v1_0(void **state)
{
	static const unsigned want[TB_REC_TYPE_MAX] = {
		[TB_REC_EVENT] = 122, [TB_REC_SITE] = 4, [TB_REC_FORK] = 2,
		[TB_REC_EXEC] = 1, [TB_REC_EXIT] = 3, [TB_REC_STATS] = 1,
	};

	(void)state;
	/* 1.0 had no index */
	check_golden("tests/data/v1.0-mt_events.tbt", 1, 0, false, want, NULL);
}

static void test_golden_v2_0(void **state)
{
	static const unsigned want[TB_REC_TYPE_MAX] = {
		[TB_REC_EVENT] = 122, [TB_REC_SITE] = 4, [TB_REC_FORK] = 2,
		[TB_REC_EXEC] = 1, [TB_REC_EXIT] = 3, [TB_REC_COMM] = 3,
		[TB_REC_CMDLINE] = 1, [TB_REC_STATS] = 1,
	};

	(void)state;
	check_golden("tests/data/v2.0-mt_events.tbt", 2, 0, true, want, NULL);
}

/* 2.1: the scheduler records in KPACK chunks, their comms from the cache. */
static void check_sched_v2_1(const struct tb_rec_hdr *h)
{
	if (h->type == TB_REC_SWITCH) {
		const struct tb_rec_switch *s = (const void *)h;

		assert_true(s->prev_comm[0] && s->next_comm[0]);
		assert_true(s->hdr.tid == 0 || strncmp(s->prev_comm, "swapper", 7));
	}
	if (h->type == TB_REC_WAKE) {
		const struct tb_rec_wake *w = (const void *)h;

		assert_true(w->kind >= TB_WAKE_WAKING && w->kind <= TB_WAKE_WAKEUP_NEW);
		assert_true(w->comm[0] && w->tgid && w->prio == 120);
	}
}

static void test_golden_v2_1(void **state)
{
	static const unsigned want[TB_REC_TYPE_MAX] = {
		[TB_REC_EVENT] = 122, [TB_REC_SITE] = 6, [TB_REC_FORK] = 2,
		[TB_REC_EXEC] = 1, [TB_REC_EXIT] = 3, [TB_REC_COMM] = 3,
		[TB_REC_CMDLINE] = 1, [TB_REC_STATS] = 1, [TB_REC_SWITCH] = 16,
		[TB_REC_WAKE] = 20, [TB_REC_KTASK] = 8,
	};

	(void)state;
	check_golden("tests/data/v2.1-mt_events.tbt", 2, 1, true, want, check_sched_v2_1);
}

/* 2.2: TB_REC_CTL, written by user space: stopped (--paused), then started. */
static unsigned ctl_seen;

static void check_ctl_v2_2(const struct tb_rec_hdr *h)
{
	check_sched_v2_1(h);
	if (h->type == TB_REC_CTL) {
		const struct tb_rec_ctl *c = (const void *)h;

		assert_int_equal(h->cpu, ~0u);
		assert_int_equal(c->off, ctl_seen == 0);
		assert_true(c->by_pid != 0);
		ctl_seen++;
	}
}

static void test_golden_v2_2(void **state)
{
	static const unsigned want[TB_REC_TYPE_MAX] = {
		[TB_REC_EVENT] = 122, [TB_REC_SITE] = 5, [TB_REC_FORK] = 3,
		[TB_REC_EXEC] = 3, [TB_REC_EXIT] = 4, [TB_REC_COMM] = 5,
		[TB_REC_CMDLINE] = 3, [TB_REC_STATS] = 1, [TB_REC_SWITCH] = 18,
		[TB_REC_WAKE] = 27, [TB_REC_KTASK] = 13, [TB_REC_CTL] = 2,
	};

	(void)state;
	ctl_seen = 0;
	check_golden("tests/data/v2.2-mt_events.tbt", 2, 2, true, want, check_ctl_v2_2);
	assert_int_equal(ctl_seen, 2);
}

/* 2.3: STATS records end with lost_procs (the second sleep, the set of
 * traced processes holding 2). */
static uint64_t lost_seen;

static void check_lost_v2_3(const struct tb_rec_hdr *h)
{
	check_sched_v2_1(h);
	if (h->type == TB_REC_STATS) {
		const struct tb_rec_stats *st = (const void *)h;

		assert_int_equal(tb_stats_ncpus(st), 2);
		assert_int_equal(h->size, sizeof(*st) + 3 * 8);
		lost_seen = tb_stats_lost_procs(st);
	}
}

static void test_golden_v2_3(void **state)
{
	static const unsigned want[TB_REC_TYPE_MAX] = {
		[TB_REC_EVENT] = 122, [TB_REC_SITE] = 8, [TB_REC_FORK] = 4,
		[TB_REC_EXEC] = 3, [TB_REC_EXIT] = 4, [TB_REC_COMM] = 5,
		[TB_REC_CMDLINE] = 3, [TB_REC_STATS] = 2, [TB_REC_SWITCH] = 53,
		[TB_REC_WAKE] = 65, [TB_REC_KTASK] = 14,
	};

	(void)state;
	lost_seen = 0;
	check_golden("tests/data/v2.3-mt_events.tbt", 2, 3, true, want, check_lost_v2_3);
	assert_int_equal(lost_seen, 1);
}

/* 2.4: TB_REC_GAP, one mark per CPU, one written by the kernel side ahead
 * of that CPU's next record and one taken by the recorder; together they
 * count every record the STATS records say was lost. */
static uint64_t gap_records, gap_drops;
static unsigned gap_swept, gap_cpus;

static void check_gap_v2_4(const struct tb_rec_hdr *h)
{
	check_sched_v2_1(h);
	if (h->type == TB_REC_GAP) {
		const struct tb_rec_gap *g = (const void *)h;
		struct tb_gap_depth d;

		/* before 2.11: no depths, which a reader then does not know */
		assert_int_equal(h->size, TB_REC_GAP_SIZE_2_4);
		assert_false(tb_gap_depth(g, 0, &d));
		assert_true(h->cpu < 2 && h->pid == 0 && h->tid == 0);
		assert_int_equal(g->kind, TB_GAP_APP);
		assert_true(g->last_ts >= h->ts && g->count > 0);
		assert_int_equal(g->ntids, 1);   /* the worker on that CPU */
		assert_false(g->flags & TB_GAPF_ALL);
		gap_swept += !!(g->flags & TB_GAPF_SWEPT);
		gap_cpus |= 1u << h->cpu;
		gap_records += g->count;
	}
	if (h->type == TB_REC_STATS)
		gap_drops = ((const struct tb_rec_stats *)h)->drops_total;
}

static void test_golden_v2_4(void **state)
{
	static const unsigned want[TB_REC_TYPE_MAX] = {
		[TB_REC_EVENT] = 116, [TB_REC_SITE] = 6, [TB_REC_FORK] = 2,
		[TB_REC_EXEC] = 1, [TB_REC_EXIT] = 1, [TB_REC_COMM] = 3,
		[TB_REC_CMDLINE] = 1, [TB_REC_STATS] = 2, [TB_REC_SWITCH] = 21,
		[TB_REC_WAKE] = 25, [TB_REC_KTASK] = 8, [TB_REC_GAP] = 2,
	};

	(void)state;
	gap_records = gap_drops = 0;
	gap_swept = gap_cpus = 0;
	check_golden("tests/data/v2.4-mt_events.tbt", 2, 4, true, want, check_gap_v2_4);
	assert_int_equal(gap_records, 1090);
	assert_int_equal(gap_records, gap_drops);
	assert_int_equal(gap_swept, 1);
	assert_int_equal(gap_cpus, 3);
}

/* 2.5: a descriptor holds its source line, and its source file after the
 * other strings. */
static unsigned sites_with_source;

static void check_site_v2_5(const struct tb_rec_hdr *h)
{
	const struct tb_rec_site *rec = (const void *)h;
	struct tracebpf_site d;
	const char *desc = (const char *)(rec + 1), *last = NULL;

	if (h->type != TB_REC_SITE)
		return;
	assert_true(rec->len >= sizeof(d) && rec->len <= h->size - sizeof(*rec));
	memcpy(&d, desc, sizeof(d));
	assert_true(d.size <= rec->len && desc[d.size - 1] == 0);
	for (const char *p = desc + sizeof(d); p < desc + d.size; p += strlen(p) + 1)
		last = p;
	assert_true(d.line > 0);
	assert_string_equal(last, "mt_events.c");
	sites_with_source++;
}

static void test_golden_v2_5(void **state)
{
	static const unsigned want[TB_REC_TYPE_MAX] = {
		[TB_REC_EVENT] = 122, [TB_REC_SITE] = 4, [TB_REC_FORK] = 2,
		[TB_REC_EXEC] = 1, [TB_REC_EXIT] = 3, [TB_REC_COMM] = 3,
		[TB_REC_CMDLINE] = 1, [TB_REC_STATS] = 1, [TB_REC_SWITCH] = 12,
		[TB_REC_WAKE] = 19, [TB_REC_KTASK] = 8,
	};

	(void)state;
	sites_with_source = 0;
	check_golden("tests/data/v2.5-mt_events.tbt", 2, 5, true, want, check_site_v2_5);
	assert_int_equal(sites_with_source, 4);
}

/* 2.6: the categories recorded, one TB_REC_CATS record at the start. */
static unsigned cats_records;

static void check_cats_v2_6(const struct tb_rec_hdr *h)
{
	const struct tb_rec_cats *rec = (const void *)h;
	static const char rules[] = "+test\0+other*\0-x";

	if (h->type != TB_REC_CATS)
		return;
	assert_int_equal(h->cpu, ~0u);
	assert_int_equal(rec->len, sizeof(rules));
	assert_true(sizeof(*rec) + rec->len <= h->size);
	assert_memory_equal(rec + 1, rules, sizeof(rules));
	cats_records++;
}

static void test_golden_v2_6(void **state)
{
	static const unsigned want[TB_REC_TYPE_MAX] = {
		[TB_REC_EVENT] = 122, [TB_REC_SITE] = 4, [TB_REC_FORK] = 2,
		[TB_REC_EXEC] = 1, [TB_REC_EXIT] = 3, [TB_REC_COMM] = 3,
		[TB_REC_CMDLINE] = 1, [TB_REC_STATS] = 1, [TB_REC_SWITCH] = 12,
		[TB_REC_WAKE] = 18, [TB_REC_KTASK] = 8, [TB_REC_CATS] = 1,
	};

	(void)state;
	cats_records = 0;
	check_golden("tests/data/v2.6-mt_events.tbt", 2, 6, true, want, check_cats_v2_6);
	assert_int_equal(cats_records, 1);
}

/* 2.7: the traced processes' resident memory, TB_REC_RSS. */
static unsigned rss_records;

static void check_rss_v2_7(const struct tb_rec_hdr *h)
{
	const struct tb_rec_rss *rec = (const void *)h;

	if (h->type != TB_REC_RSS)
		return;
	assert_int_equal(h->size, sizeof(*rec));
	assert_true(rec->member <= TB_RSS_SHMEM && rec->bytes >= 0);
	rss_records++;
}

static void test_golden_v2_7(void **state)
{
	static const unsigned want[TB_REC_TYPE_MAX] = {
		[TB_REC_EVENT] = 122, [TB_REC_SITE] = 4, [TB_REC_FORK] = 2,
		[TB_REC_EXEC] = 1, [TB_REC_EXIT] = 3, [TB_REC_COMM] = 3,
		[TB_REC_CMDLINE] = 1, [TB_REC_STATS] = 1, [TB_REC_SWITCH] = 14,
		[TB_REC_WAKE] = 23, [TB_REC_KTASK] = 8, [TB_REC_CATS] = 1, [TB_REC_RSS] = 13,
	};

	(void)state;
	rss_records = 0;
	check_golden("tests/data/v2.7-mt_events.tbt", 2, 7, true, want, check_rss_v2_7);
	assert_int_equal(rss_records, 13);
}

/* 2.8: the application's memory dumps, EVENT_ID hits of 'v' sites. */
static unsigned md_sites, md_dumper_sites;

static void check_memdump_v2_8(const struct tb_rec_hdr *h)
{
	const struct tb_rec_site *s = (const void *)h;
	const struct tracebpf_site *d = (const void *)(s + 1);

	if (h->type != TB_REC_SITE || s->len < sizeof(*d) || d->phase != TRACEBPF_PHASE_MEMDUMP)
		return;
	md_sites++;
	md_dumper_sites += !strcmp((const char *)(d + 1), "__metadata") &&
			   !strcmp((const char *)(d + 1) + sizeof("__metadata"), "dumper");
}

static void test_golden_v2_8(void **state)
{
	static const unsigned want[TB_REC_TYPE_MAX] = {
		[TB_REC_EVENT] = 154, [TB_REC_SITE] = 12, [TB_REC_FORK] = 6,
		[TB_REC_EXEC] = 3, [TB_REC_EXIT] = 7, [TB_REC_COMM] = 6,
		[TB_REC_STATS] = 1, [TB_REC_EVENT_ID] = 30, [TB_REC_SWITCH] = 157,
		[TB_REC_WAKE] = 174, [TB_REC_KTASK] = 19, [TB_REC_CMDLINE] = 3,
		[TB_REC_CATS] = 1, [TB_REC_RSS] = 34,
	};

	(void)state;
	md_sites = md_dumper_sites = 0;
	check_golden("tests/data/v2.8-memdump.tbt", 2, 8, true, want, check_memdump_v2_8);
	assert_true(md_sites >= 4);   /* dumper, dump, an allocator, dump_end */
	assert_int_equal(md_dumper_sites, 1);
}

/* 2.9: a TB_REC_FILTER record, `ctl filter add --pid` of the process
 * that then runs mt_events: its events are all there. */
static unsigned filter_records, filter_pid;

static void check_filter_v2_9(const struct tb_rec_hdr *h)
{
	const struct tb_rec_filter *f = (const void *)h;

	if (h->type == TB_REC_FILTER) {
		filter_records++;
		assert_int_equal(f->which, TB_RECF_PIDS);
		assert_int_equal(f->ntids, 0);
		assert_int_equal(f->npids, 1);
		assert_true(h->size >= sizeof(*f) + sizeof(__u32));
		filter_pid = ((const __u32 *)(f + 1))[0];
	} else if (h->type == TB_REC_EVENT && filter_pid) {
		assert_int_equal(h->pid, filter_pid);   /* after the filter: its own */
	}
}

static void test_golden_v2_9(void **state)
{
	static const unsigned want[TB_REC_TYPE_MAX] = {
		[TB_REC_EVENT] = 122, [TB_REC_SITE] = 6, [TB_REC_FORK] = 3,
		[TB_REC_EXEC] = 3, [TB_REC_EXIT] = 4, [TB_REC_COMM] = 5,
		[TB_REC_CMDLINE] = 3, [TB_REC_STATS] = 1, [TB_REC_SWITCH] = 45,
		[TB_REC_WAKE] = 65, [TB_REC_KTASK] = 13, [TB_REC_CATS] = 1,
		[TB_REC_RSS] = 31, [TB_REC_FILTER] = 1,
	};

	(void)state;
	filter_records = filter_pid = 0;
	check_golden("tests/data/v2.9-filter.tbt", 2, 9, true, want, check_filter_v2_9);
	assert_int_equal(filter_records, 1);
	assert_true(filter_pid > 0);
}

/* 2.10: another program's probes (record --usdt): 5 USDT_PROBE
 * descriptions ahead of the 10 USDT hits of sdt_app 3, each hit's id
 * described, its arguments as the note has them; and the command line the
 * kernel side copied at sdt_app's first hit, its arguments NUL-separated. */
static unsigned usdt_probes, usdt_hits, usdt_described;
static bool usdt_known[TB_USDT_MAX_PROBES];

static void check_usdt_v2_10(const struct tb_rec_hdr *h)
{
	const struct tb_rec_usdt_probe *p = (const void *)h;
	const struct tb_rec_usdt *u = (const void *)h;
	const struct tb_rec_cmdline *c = (const void *)h;

	if (h->type == TB_REC_USDT_PROBE) {
		usdt_probes++;
		assert_true(p->id < TB_USDT_MAX_PROBES && p->len <= h->size - sizeof(*p));
		assert_string_equal((const char *)(p + 1), "sdtapp");
		usdt_known[p->id] = true;
	} else if (h->type == TB_REC_USDT) {
		usdt_hits++;
		assert_true(u->probe < TB_USDT_MAX_PROBES && usdt_known[u->probe]);
		usdt_described += u->nargs <= TB_USDT_MAX_ARGS;
	} else if (h->type == TB_REC_CMDLINE && h->cpu != ~0u) {
		assert_true(c->len > sizeof("build/progs/sdt_app"));
		assert_memory_equal(c + 1, "build/progs/sdt_app\0" "3", sizeof("build/progs/sdt_app"));
	}
}

static void test_golden_v2_10(void **state)
{
	static const unsigned want[TB_REC_TYPE_MAX] = {
		[TB_REC_EVENT] = 122, [TB_REC_SITE] = 4, [TB_REC_FORK] = 4,
		[TB_REC_EXEC] = 3, [TB_REC_EXIT] = 5, [TB_REC_COMM] = 5,
		[TB_REC_STATS] = 1, [TB_REC_SWITCH] = 39, [TB_REC_WAKE] = 59,
		[TB_REC_KTASK] = 14, [TB_REC_CMDLINE] = 4, [TB_REC_CATS] = 1,
		[TB_REC_RSS] = 34, [TB_REC_USDT] = 10, [TB_REC_USDT_PROBE] = 5,
	};

	(void)state;
	usdt_probes = usdt_hits = usdt_described = 0;
	check_golden("tests/data/v2.10-usdt.tbt", 2, 10, true, want, check_usdt_v2_10);
	assert_int_equal(usdt_probes, 5);
	assert_int_equal(usdt_described, 10);
}

/* Before 2.3 a STATS record ends with its per-CPU drops: no lost_procs. */
static void test_stats_without_lost_procs(void **state)
{
	__u64 buf[6 + 2] = { 0 };
	struct tb_rec_stats *st = (void *)buf;

	(void)state;
	st->hdr.type = TB_REC_STATS;
	st->hdr.size = sizeof(*st) + 2 * 8;
	st->ncpus = 2;
	buf[6] = 5;
	buf[7] = 7;
	assert_int_equal(tb_stats_lost_procs(st), 0);
	assert_int_equal(tb_stats_drop(st, 1), 7);
	st->ncpus = 9;   /* more than its size holds: clamped */
	assert_int_equal(tb_stats_ncpus(st), 2);
	assert_int_equal(tb_stats_drop(st, 5), 0);
	assert_int_equal(tb_stats_lost_procs(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_v1_0),
		cmocka_unit_test(test_golden_v2_0),
		cmocka_unit_test(test_golden_v2_1),
		cmocka_unit_test(test_golden_v2_2),
		cmocka_unit_test(test_golden_v2_3),
		cmocka_unit_test(test_golden_v2_4),
		cmocka_unit_test(test_golden_v2_5),
		cmocka_unit_test(test_golden_v2_6),
		cmocka_unit_test(test_golden_v2_7),
		cmocka_unit_test(test_golden_v2_8),
		cmocka_unit_test(test_golden_v2_9),
		cmocka_unit_test(test_golden_v2_10),
		cmocka_unit_test(test_stats_without_lost_procs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
