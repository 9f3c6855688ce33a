// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_round_wait.c - how long the recorder's rounds wait
 * (tb_fast_round_wait, user/fast/fast.h), against a simulated thread that
 * writes its fast-path ring at a steady rate while each round also spends
 * some time of its own draining and writing: the wait is the flush
 * interval while the ring fills slowly, it shrinks until the ring is
 * drained at about a quarter full and never full, and it grows back once
 * the thread is quiet.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../user/fast/fast.h"

#define FLUSH_MS 50u
#define RING (1u << 20)

struct sim {
	unsigned wait;        /* the last round's */
	unsigned fill;        /* at the last drain */
	unsigned full;        /* rounds whose ring had filled */
};

/* One round: wait, then drain what rate (bytes/ms) wrote meanwhile and
 * during work_ms of the round's own. */
static void round_(struct sim *s, double rate, double work_ms)
{
	double used;

	s->wait = tb_fast_round_wait(s->wait, s->fill, FLUSH_MS);
	used = rate * (s->wait + work_ms);
	s->fill = used >= RING ? 1000 : (unsigned)(used * 1000 / RING);
	s->full += s->fill == 1000;
}

static void test_idle_and_slow_wait_the_interval(void **state)
{
	struct sim s = { 0 };

	(void)state;
	assert_int_equal(tb_fast_round_wait(0, 0, FLUSH_MS), FLUSH_MS);
	assert_int_equal(tb_fast_round_wait(3, 0, FLUSH_MS), FLUSH_MS);
	/* 1 MiB in 400 ms: an eighth of the ring a round, never sooner */
	for (int k = 0; k < 100; k++) {
		round_(&s, RING / 400.0, 2);
		assert_int_equal(s.wait, FLUSH_MS);
	}
	assert_int_equal(s.full, 0);
}

/* A thread that fills the ring in 20 ms (1.2 M events/s of 48 bytes) with
 * rounds that work 3 ms: the interval alone fills it every round. */
static void test_busy_thread_is_drained_before_full(void **state)
{
	struct sim s = { 0 };

	(void)state;
	for (int k = 0; k < 200; k++)
		round_(&s, RING / 20.0, 3);
	assert_true(s.full <= 2);   /* the first rounds, before it adapts */
	assert_true(s.wait < FLUSH_MS);
	assert_true(s.fill <= 2 * TB_FAST_FILL_AIM);
	/* then quiet: back to the interval */
	for (int k = 0; k < 200 && s.wait < FLUSH_MS; k++)
		round_(&s, 0, 3);
	assert_int_equal(s.wait, FLUSH_MS);
}

/* Faster than any wait can keep up with (the round's own work fills a
 * quarter): the wait goes to 0 and stays there, never below. */
static void test_overrun_waits_not_at_all(void **state)
{
	struct sim s = { 0 };

	(void)state;
	for (int k = 0; k < 100; k++)
		round_(&s, RING / 8.0, 3);
	assert_int_equal(s.wait, 0);
	assert_int_equal(tb_fast_round_wait(0, 1000, FLUSH_MS), 0);
	/* from 0, a lighter load lets it grow again */
	assert_true(tb_fast_round_wait(0, 100, FLUSH_MS) >= 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idle_and_slow_wait_the_interval),
		cmocka_unit_test(test_busy_thread_is_drained_before_full),
		cmocka_unit_test(test_overrun_waits_not_at_all),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
