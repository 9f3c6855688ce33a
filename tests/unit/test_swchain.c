// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_swchain.c - each CPU's chain of switches (lib/swchain.h): a switch
 * that switches out the task its CPU's switch before switched in follows
 * on, one that does not breaks the chain there, with the first cause that
 * applies (kernel records of that CPU lost between the two, the recording
 * stopped, a switch left out by a filter, record --sched=traced, else
 * not reported); a CPU's first switch and the other CPUs' switches break
 * nothing; the CPU of a record of ~0 is 0, as the ftrace text prints it;
 * the hold for the marks; the recorder's command line read for
 * --sched=traced.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "../../lib/swchain.h"

static struct tb_rec_switch sw(uint32_t cpu, uint64_t ts, uint32_t prev, uint32_t next)
{
	struct tb_rec_switch r = {
		.hdr = { .type = TB_REC_SWITCH, .size = sizeof(r), .cpu = cpu, .ts = ts,
			 .pid = prev, .tid = prev },
		.next_tid = next, .next_tgid = next,
	};

	strcpy(r.prev_comm, "prev");
	strcpy(r.next_comm, "next");
	return r;
}

/* The switch's outcome: -1 no break, else its cause. */
static int add(struct tb_swchain *ch, uint32_t cpu, uint64_t ts, uint32_t prev, uint32_t next,
	       struct tb_swbreak *b)
{
	struct tb_rec_switch r = sw(cpu, ts, prev, next);
	int ret = tb_swchain_add(ch, &r, b);

	assert_true(ret == 0 || ret == 1);
	return ret ? (int)b->cause : -1;
}

static struct tb_rec_gap gap(uint32_t cpu, uint64_t ts, uint64_t last, uint16_t kind)
{
	return (struct tb_rec_gap){
		.hdr = { .type = TB_REC_GAP, .size = sizeof(struct tb_rec_gap), .cpu = cpu, .ts = ts },
		.last_ts = last, .count = 3, .kind = kind,
	};
}

static void test_chain_and_causes(void **state)
{
	struct tb_swchain *ch;
	struct tb_swbreak b;
	struct tb_rec_gap g;
	struct tb_rec_switch r;

	(void)state;
	assert_int_equal(tb_swchain_new(&ch, false), 0);
	assert_false(tb_swchain_any(ch));
	assert_int_equal(add(ch, 0, 10, 0, 5, &b), -1);     /* a CPU's first */
	assert_int_equal(add(ch, 1, 11, 7, 0, &b), -1);     /* another CPU's first */
	assert_true(tb_swchain_any(ch));
	assert_int_equal(add(ch, 0, 20, 5, 6, &b), -1);     /* follows on */
	/* 6 was switched in; 8 is switched out: not reported */
	assert_int_equal(add(ch, 0, 30, 8, 0, &b), TB_SWBREAK_UNREPORTED);
	assert_int_equal(b.cpu, 0);
	assert_true(b.from_ts == 20 && b.ts == 30 && b.last_tid == 6 && b.prev_tid == 8);
	assert_memory_equal(b.last_comm, "next", 5);
	assert_memory_equal(b.prev_comm, "prev", 5);
	/* the chain goes on from the switch that broke it */
	assert_int_equal(add(ch, 0, 40, 0, 9, &b), -1);

	/* an application gap changes nothing; a kernel gap of the CPU makes
	 * the next break a loss, and only the next */
	g = gap(0, 45, 46, TB_GAP_APP);
	tb_swchain_gap(ch, &g);
	assert_int_equal(add(ch, 0, 50, 1, 9, &b), TB_SWBREAK_UNREPORTED);
	g = gap(0, 55, 56, TB_GAP_KERNEL);
	tb_swchain_gap(ch, &g);
	assert_int_equal(add(ch, 1, 57, 2, 3, &b), TB_SWBREAK_UNREPORTED);   /* CPU 1: not its */
	assert_int_equal(add(ch, 0, 60, 2, 3, &b), TB_SWBREAK_LOST);
	assert_int_equal(add(ch, 0, 70, 4, 3, &b), TB_SWBREAK_UNREPORTED);
	/* records lost up to 100, read before the switch at 80: the next one
	 * may be hidden too */
	g = gap(0, 75, 100, TB_GAP_KERNEL);
	tb_swchain_gap(ch, &g);
	assert_int_equal(add(ch, 0, 80, 3, 4, &b), -1);
	assert_int_equal(add(ch, 0, 90, 5, 4, &b), TB_SWBREAK_LOST);
	assert_int_equal(add(ch, 0, 110, 4, 2, &b), -1);
	assert_int_equal(add(ch, 0, 120, 5, 2, &b), TB_SWBREAK_UNREPORTED);
	/* a gap of no CPU (~0 is CPU 0; past every CPU: all of them) */
	g = gap(1u << 20, 125, 126, TB_GAP_KERNEL);
	tb_swchain_gap(ch, &g);
	assert_int_equal(add(ch, 1, 127, 9, 1, &b), TB_SWBREAK_LOST);
	assert_int_equal(add(ch, 0, 128, 9, 1, &b), TB_SWBREAK_LOST);

	/* a stop: every CPU's next break is the stop's, a loss wins over it */
	tb_swchain_stopped(ch);
	g = gap(1, 129, 129, TB_GAP_KERNEL);
	tb_swchain_gap(ch, &g);
	assert_int_equal(add(ch, 0, 130, 7, 1, &b), TB_SWBREAK_STOPPED);
	assert_int_equal(add(ch, 1, 131, 7, 1, &b), TB_SWBREAK_LOST);
	assert_int_equal(add(ch, 0, 140, 6, 1, &b), TB_SWBREAK_UNREPORTED);

	/* a switch left out (a filter): the chain goes on from the last one
	 * shown, and its break is the filter's */
	r = sw(0, 150, 1, 2);
	tb_swchain_left_out(ch, &r);
	assert_int_equal(add(ch, 0, 160, 2, 3, &b), TB_SWBREAK_FILTERED);
	assert_int_equal(b.last_tid, 1);
	r = sw(0, 165, 3, 4);
	tb_swchain_left_out(ch, &r);
	assert_int_equal(add(ch, 0, 170, 3, 5, &b), -1);   /* followed on all the same */
	assert_int_equal(add(ch, 0, 180, 4, 5, &b), TB_SWBREAK_UNREPORTED);

	/* ~0 is CPU 0, as the text prints it */
	assert_int_equal(add(ch, ~0u, 190, 5, 6, &b), -1);
	assert_int_equal(add(ch, 0, 200, 6, 7, &b), -1);
	/* a malformed CPU is not checked */
	assert_int_equal(add(ch, 1u << 30, 210, 6, 7, &b), -1);
	assert_int_equal(add(ch, 1u << 30, 220, 1, 7, &b), -1);

	assert_int_equal(tb_swchain_breaks(ch, TB_SWBREAK_UNREPORTED), 7);
	assert_int_equal(tb_swchain_breaks(ch, TB_SWBREAK_LOST), 5);
	assert_int_equal(tb_swchain_breaks(ch, TB_SWBREAK_STOPPED), 1);
	assert_int_equal(tb_swchain_breaks(ch, TB_SWBREAK_FILTERED), 1);
	assert_int_equal(tb_swchain_total(ch), 14);
	tb_swchain_free(ch);
}

static void test_sched_traced(void **state)
{
	struct tb_swchain *ch;
	struct tb_swbreak b;

	(void)state;
	assert_int_equal(tb_swchain_new(&ch, true), 0);
	assert_int_equal(add(ch, 0, 10, 0, 5, &b), -1);
	assert_int_equal(add(ch, 0, 20, 6, 0, &b), TB_SWBREAK_FILTERED);
	tb_swchain_stopped(ch);
	assert_int_equal(add(ch, 0, 30, 6, 0, &b), TB_SWBREAK_STOPPED);
	assert_int_equal(tb_swchain_total(ch), 2);
	tb_swchain_free(ch);
}

/* Marks begin at each CPU's last switch into a task, not into its idle
 * task. */
static void test_low(void **state)
{
	struct tb_swchain *ch;
	struct tb_swbreak b;

	(void)state;
	assert_int_equal(tb_swchain_new(&ch, false), 0);
	assert_int_equal(tb_swchain_low(ch, 1000), 1000);
	add(ch, 0, 100, 0, 5, &b);
	add(ch, 1, 50, 3, 0, &b);   /* to idle: not held for */
	assert_int_equal(tb_swchain_low(ch, 1000), 100);
	assert_int_equal(tb_swchain_low(ch, 90), 90);
	add(ch, 0, 200, 5, 0, &b);
	assert_int_equal(tb_swchain_low(ch, 1000), 1000);
	tb_swchain_free(ch);
}

static void test_words(void **state)
{
	(void)state;
	assert_string_equal(tb_swbreak_key(TB_SWBREAK_LOST), "records_lost");
	assert_string_equal(tb_swbreak_key(TB_SWBREAK_UNREPORTED), "not_reported");
	assert_string_equal(tb_swbreak_words(TB_SWBREAK_FILTERED), "filtered out");
	assert_string_equal(tb_swbreak_key(TB_SWBREAK_NCAUSES), "?");
}

static void test_cmdline(void **state)
{
	(void)state;
	assert_true(tb_swchain_cmdline_traced("tracebpf record --sched=traced -- app"));
	assert_true(tb_swchain_cmdline_traced("tracebpf record -o x --sched traced -p 5"));
	assert_true(tb_swchain_cmdline_traced("tracebpf record --sched=all  --sched=traced"));
	assert_false(tb_swchain_cmdline_traced("tracebpf record --sched=traced --sched all"));
	assert_false(tb_swchain_cmdline_traced("tracebpf record -- app --sched=traced"));
	assert_false(tb_swchain_cmdline_traced("tracebpf record --sched-events=sched_switch"));
	assert_false(tb_swchain_cmdline_traced("tracebpf record --sched=tracedx"));
	assert_false(tb_swchain_cmdline_traced("tracebpf record --sched"));
	assert_false(tb_swchain_cmdline_traced(""));
	assert_false(tb_swchain_cmdline_traced(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain_and_causes),
		cmocka_unit_test(test_sched_traced),
		cmocka_unit_test(test_low),
		cmocka_unit_test(test_words),
		cmocka_unit_test(test_cmdline),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
