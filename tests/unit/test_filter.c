// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_filter.c - the convert filters (lib/filter.c): parsing each option,
 * bad values, and the predicate's rules (time window, globs, ids, kernel
 * records).
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../lib/filter.h"

#define MS 1000000ull
#define S  1000000000ull

static int set_time(struct tb_filter *f, const char *arg)
{
	const char *why = NULL;
	int err = tb_filter_set_time(f, arg, &why);

	if (err)
		assert_non_null(why);
	return err;
}

static void test_time_forms(void **state)
{
	struct tb_filter f = { 0 };
	static const struct { const char *arg; uint64_t from, to; } ok[] = {
		{ "1.5s,3s", 1500 * MS, 3 * S },
		{ "200ms,1s", 200 * MS, 1 * S },
		{ "1.5s,+200ms", 1500 * MS, 1700 * MS },
		{ "10us,20000ns", 10000, 20000 },
		{ ",2s", 0, 2 * S },
		{ "2s,", 2 * S, UINT64_MAX },
		{ "0.000000001s,2ns", 1, 2 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(set_time(&f, ok[i].arg), 0);
		assert_true(f.has_time);
		assert_int_equal(f.from, ok[i].from);
		assert_int_equal(f.to, ok[i].to);
	}
	tb_filter_free(&f);
}

static void test_time_bad(void **state)
{
	static const char *const bad[] = {
		"", "1s", "1s,2s,3s", "1,2s", "1s,2", "1x,2s", "1.5,2s", "s,2s",
		"2s,1s", "1s,1s", "1s,+0s", ".s,1s", "1.0000000001s,2s", "0.5ns,1ns",
		"99999999999999999999s,1s", "1s,+99999999999999999999ns", "-1s,2s",
	};
	struct tb_filter f = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (set_time(&f, bad[i]) != -EINVAL)
			fail_msg("--time '%s' was accepted: %" PRIu64 "..%" PRIu64, bad[i],
				 f.from, f.to);
		assert_false(f.has_time);
	}
}

static void test_ids(void **state)
{
	struct tb_filter f = { 0 };
	const char *why = NULL;

	(void)state;
	assert_int_equal(tb_filter_add_pids(&f, "12,34", &why), 0);
	assert_int_equal(tb_filter_add_pids(&f, "56", &why), 0);   /* adds */
	assert_int_equal(f.npids, 3);
	assert_int_equal(f.pids[2], 56);
	assert_int_equal(tb_filter_add_tids(&f, "7", &why), 0);
	assert_int_equal(tb_filter_add_pids(&f, "1,,2", &why), -EINVAL);
	assert_int_equal(tb_filter_add_pids(&f, "abc", &why), -EINVAL);
	assert_int_equal(tb_filter_add_tids(&f, "4194304", &why), -EINVAL);
	assert_int_equal(tb_filter_add_tids(&f, "", &why), -EINVAL);
	assert_true(tb_filter_active(&f));
	tb_filter_free(&f);
	assert_false(tb_filter_active(&f));
}

static struct tb_filter_event ev(char ph, uint64_t ts, uint64_t dur, uint32_t pid,
				 uint32_t tid, const char *cat, const char *name)
{
	return (struct tb_filter_event){ .ph = ph, .ts = ts, .dur = dur, .pid = pid, .tid = tid,
					 .cat = cat, .name = name,
					 .name_len = name ? strlen(name) : 0 };
}

static void test_match_window(void **state)
{
	struct tb_filter f = { 0 };
	uint64_t base = 1000 * S;
	struct tb_filter_event e;

	(void)state;
	assert_int_equal(set_time(&f, "1s,2s"), 0);
	tb_filter_set_base(&f, base);
	/* points: [from, to) */
	e = ev('I', base + 1 * S, 0, 1, 1, "c", "n");
	assert_true(tb_filter_match(&f, &e));
	e.ts = base + 2 * S;
	assert_false(tb_filter_match(&f, &e));
	e.ts = base + 1 * S - 1;
	assert_false(tb_filter_match(&f, &e));
	/* slices: begin before the end, end after the start */
	e = ev('X', base + 500 * MS, 501 * MS, 1, 1, "c", "n");
	assert_true(tb_filter_match(&f, &e));
	e.dur = 500 * MS;   /* ends at the window's start: outside */
	assert_false(tb_filter_match(&f, &e));
	e.dur = 0;
	assert_false(tb_filter_match(&f, &e));
	e = ev('X', base + 1999 * MS, 5 * S, 1, 1, "c", "n");
	assert_true(tb_filter_match(&f, &e));
	e = ev('X', base, 10 * S, 1, 1, "c", "n");   /* encloses it */
	assert_true(tb_filter_match(&f, &e));
	/* a counter is a point whatever its dur says */
	e = ev('C', base, 10 * S, 1, 1, "c", "n");
	assert_false(tb_filter_match(&f, &e));
	tb_filter_free(&f);
}

static void test_match_globs_ids(void **state)
{
	struct tb_filter f = { 0 };
	const char *why;
	struct tb_filter_event e;

	(void)state;
	assert_int_equal(tb_filter_add_cats(&f, "net*,disk", &why), 0);
	assert_int_equal(tb_filter_add_names(&f, "read?", &why), 0);
	assert_int_equal(tb_filter_add_names(&f, "<unreadable>", &why), 0);
	e = ev('I', 0, 0, 1, 1, "network", "reads");
	assert_true(tb_filter_match(&f, &e));
	e.cat = "disk";
	assert_true(tb_filter_match(&f, &e));
	e.cat = "diskio";
	assert_false(tb_filter_match(&f, &e));
	e.cat = "net";
	e.name = "readsx";
	e.name_len = 5;   /* not NUL-terminated: "reads" */
	assert_true(tb_filter_match(&f, &e));
	e.name_len = 6;
	assert_false(tb_filter_match(&f, &e));
	e.name = NULL;    /* unreadable: matched as the output shows it */
	assert_true(tb_filter_match(&f, &e));
	assert_int_equal(tb_filter_add_pids(&f, "5", &why), 0);
	assert_int_equal(tb_filter_add_tids(&f, "6,7", &why), 0);
	e = ev('I', 0, 0, 5, 7, "net", "reads");
	assert_true(tb_filter_match(&f, &e));
	e.tid = 8;
	assert_false(tb_filter_match(&f, &e));
	e.tid = 6;
	e.pid = 4;
	assert_false(tb_filter_match(&f, &e));
	tb_filter_free(&f);
}

static void test_match_kernel(void **state)
{
	struct tb_filter f = { 0 };
	struct tb_rec_switch sw = { .hdr = { .type = TB_REC_SWITCH, .size = sizeof(sw),
					     .ts = 1500, .pid = 10, .tid = 11 },
				    .next_tgid = 20, .next_tid = 21 };
	struct tb_rec_cpu cpu = { .hdr = { .type = TB_REC_CPU, .size = sizeof(cpu), .ts = 1500 } };
	const char *why;

	(void)state;
	assert_int_equal(tb_filter_add_tids(&f, "21", &why), 0);
	assert_true(tb_filter_match_kernel(&f, &sw.hdr));    /* its next task */
	sw.next_tid = 22;
	assert_false(tb_filter_match_kernel(&f, &sw.hdr));
	sw.hdr.tid = 21;                                     /* its prev task */
	assert_true(tb_filter_match_kernel(&f, &sw.hdr));
	assert_true(tb_filter_match_kernel(&f, &cpu.hdr));   /* names no task */
	assert_int_equal(set_time(&f, "1us,2us"), 0);
	tb_filter_set_base(&f, 0);
	assert_true(tb_filter_match_kernel(&f, &cpu.hdr));
	cpu.hdr.ts = 2000;
	assert_false(tb_filter_match_kernel(&f, &cpu.hdr));
	tb_filter_free(&f);
}

/* What tb_filter_print writes for f, in buf. */
static const char *printed(const struct tb_filter *f, char *buf, size_t len)
{
	FILE *m = fmemopen(buf, len, "w");

	assert_non_null(m);
	tb_filter_print(f, m);
	assert_int_equal(fclose(m), 0);
	return buf;
}

/* Written as options again, each reads back as the same filter. */
static void test_print_reads_back(void **state)
{
	static const char *const cases[][2] = {
		{ "1.5s,+250ms", "--time 1500ms,1750ms" },
		{ ",2s", "--time 0ns,2s" },
		{ "7ns,", "--time 7ns," },
		{ "0.000001s,3001us", "--time 1us,3001us" },
	};
	char buf[256], again[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tb_filter f = { 0 }, g = { 0 };

		assert_int_equal(set_time(&f, cases[i][0]), 0);
		assert_string_equal(printed(&f, buf, sizeof(buf)), cases[i][1]);
		assert_int_equal(set_time(&g, buf + strlen("--time ")), 0);
		assert_true(f.from == g.from && f.to == g.to);
	}
	{
		struct tb_filter f = { 0 };
		const char *why;

		assert_int_equal(tb_filter_add_pids(&f, "12,13", &why), 0);
		assert_int_equal(tb_filter_add_tids(&f, "14", &why), 0);
		assert_int_equal(tb_filter_add_cats(&f, "a*", &why), 0);
		assert_int_equal(tb_filter_add_names(&f, "x,y?", &why), 0);
		assert_int_equal(set_time(&f, "1s,2s"), 0);
		assert_string_equal(printed(&f, buf, sizeof(buf)),
				    "--pid 12,13 --tid 14 --cat a* --name x,y? --time 1s,2s");
		tb_filter_free(&f);
		assert_string_equal(printed(&f, again, sizeof(again)), "");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_forms),
		cmocka_unit_test(test_time_bad),
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_match_window),
		cmocka_unit_test(test_match_globs_ids),
		cmocka_unit_test(test_match_kernel),
		cmocka_unit_test(test_print_reads_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
