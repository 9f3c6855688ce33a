// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_fast_read.c - the recorder's reading of a thread's fast-path ring
 * (user/fast/fast_read.c) against what trace.h writes into it, both sides the
 * project's own code: trace.h's producer (tracebpf__fast_reserve,
 * tracebpf__fast_commit, tracebpf__fast_close) writes into a ring held in
 * memory, and fast_read reads it as the recorder reads a mapped one.
 * Batches: the events of an open batch are read as they are committed, up
 * to the zero header after the last one, and the kernel is told to step
 * over a batch only once it is closed; an event still BUSY stops the
 * reading (torn) and is lost only when its thread is gone; a ring with
 * nothing new costs nothing (fast_idle). Chunks: at most c.max samples a
 * reading, the rest in the next. What trace.h never writes in a batch is
 * counted as bad, once. And a recorder whose switch does not say it reads
 * batches (one older than them) gets a sample per event. A full ring: its
 * thread waits for the drain up to the switch's wait (another thread of
 * the test drains), a wait that runs out is not made again until the
 * drain moves, and a switch with no wait sends the event to the probe at
 * once. A ctl stop made while a round reads: what was stamped after it is
 * dropped.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tracebpf/trace.h"   /* the producer */
#include "../../user/fast/fast_read.c"

#define SIZE (64u << 10)

static unsigned char ring_buf[SIZE] __attribute__((aligned(4096)));
static unsigned long meta[1024];     /* the producer position at 4096 bytes */
static unsigned long cons_pos;       /* the kernel's consumer position */
static struct tracebpf__fast_thread w;
static struct tb_fast fs;
static struct fring fr;
static uint64_t got[4096];           /* the first argument of each event read */
static unsigned ngot;
static const char site = 0;
static struct tracebpf_fast_ctl ctl;   /* no bigger spare: pool 1 empty */
static const struct tb_ctl *live;      /* the control map's STATE, or NULL */

static int collect(void *ctx, void *rec, size_t size)
{
	const struct tb_rec_event *ev = rec;

	(void)ctx;
	assert_true(size >= sizeof(*ev));
	assert_int_equal(ev->hdr.type, TB_REC_EVENT);
	if (ngot < 4096)
		got[ngot++] = ev->args[0];
	return 0;
}

static int setup(void **state)
{
	(void)state;
	memset(ring_buf, 0xa5, sizeof(ring_buf));   /* an older lap's bytes */
	memset(meta, 0, sizeof(meta));
	memset(&w, 0, sizeof(w));
	memset(&fs, 0, sizeof(fs));
	memset(&fr, 0, sizeof(fr));
	cons_pos = 0;
	ngot = 0;
	w.data = ring_buf;
	w.prod = &meta[4096 / sizeof(long)];
	w.cons = &cons_pos;
	w.mask = SIZE - 1;
	fs.put = collect;
	fr.size = SIZE;
	fr.data = ring_buf;
	fr.pos = meta;
	fr.fd = -1;
	tracebpf__fast_proc.batch = 1;   /* the recorder's switch says it reads them */
	tracebpf__fast_proc.wait_ns = 0;
	memset(&ctl, 0, sizeof(ctl));
	w.ctl = &ctl;
	live = NULL;
	return 0;
}

/* An event of 40 bytes reserved; committed unless `hold`. */
static uint32_t *event(uint64_t i, int hold)
{
	uint32_t *hdr = tracebpf__fast_reserve(&w, sizeof(struct tracebpf_fast_rec));
	struct tracebpf_fast_rec *r;

	assert_non_null(hdr);
	r = tracebpf__fast_head(hdr, TRACEBPF_FAST_EVENT, sizeof(*r), &site);
	r->args[0] = i;
	r->args[1] = 0;
	if (!hold)
		tracebpf__fast_commit(hdr, sizeof(*r));
	return hdr;
}

/* fast_read as a round calls it, then the kernel's step over the samples
 * read (the consumer position moved past them). */
static struct fast_taken reading(uint64_t max, bool final, uint64_t *lost)
{
	struct fast_cut c = { .until = *w.prod, .stop_ts = ~0ull, .final = final, .max = max,
			      .live = live };
	struct fast_taken t = fast_read(&fs, &fr, &c, lost);
	unsigned long p = cons_pos;

	for (uint64_t n = 0; n < t.samples; n++) {
		uint32_t len = *(uint32_t *)(ring_buf + (p & (SIZE - 1)));

		p += (len + 8u + 7u) & ~7u;
	}
	cons_pos = p;
	assert_int_equal(cons_pos, fr.rd);
	return t;
}

static void test_an_open_batch_is_read_as_it_is_written(void **state)
{
	uint64_t lost = 0;
	struct fast_taken t;
	uint32_t *held;

	(void)state;
	for (int i = 0; i < 3; i++)
		event(i, 0);
	t = reading(0, false, &lost);
	assert_int_equal(ngot, 3);
	assert_int_equal(t.samples, 0);   /* the batch is open: the kernel waits */
	assert_false(fr.torn);
	assert_true(fast_idle(&fr, *w.prod));
	held = event(3, 1);                /* reserved, not committed */
	assert_false(fast_idle(&fr, *w.prod));
	t = reading(0, false, &lost);
	assert_int_equal(ngot, 3);
	assert_true(fr.torn);
	tracebpf__fast_commit(held, sizeof(struct tracebpf_fast_rec));
	event(4, 0);
	t = reading(0, false, &lost);
	assert_int_equal(ngot, 5);
	assert_false(fr.torn);
	tracebpf__fast_close(&w);
	t = reading(0, false, &lost);
	assert_int_equal(ngot, 5);         /* nothing read twice */
	assert_int_equal(t.samples, 1);    /* the kernel steps over the batch */
	assert_int_equal(fr.in, 0);
	assert_int_equal(lost, 0);
	for (unsigned i = 0; i < ngot; i++)
		assert_int_equal(got[i], i);
}

/* A ctl stop made after the round asked the kernel for the stop (so its
 * cut says none) and before it read an open batch: the events stamped
 * after the stop are dropped, those before it kept. A recorder frozen
 * between the two kept them. */
static void test_events_stamped_after_a_stop_made_while_reading_are_dropped(void **state)
{
	struct tb_ctl st;
	uint64_t lost = 0;

	(void)state;
	memset(&st, 0, sizeof(st));
	live = &st;
	event(0, 0);
	reading(0, false, &lost);
	event(1, 0);
	st.off_ts = tracebpf__now();   /* ctl stop: off_ts, then off */
	st.off = 1;
	event(2, 0);
	event(3, 0);
	reading(0, false, &lost);
	assert_int_equal(ngot, 2);
	assert_int_equal(got[0], 0);
	assert_int_equal(got[1], 1);
	st.off = 0;                     /* the recorder started again */
	event(4, 0);
	reading(0, false, &lost);
	assert_int_equal(ngot, 3);
	assert_int_equal(got[2], 4);
}

static void test_batches_fill_and_follow_each_other(void **state)
{
	uint64_t lost = 0;
	struct fast_taken t;
	unsigned n = 300;   /* more than three 4 KiB batches of 48-byte events */

	(void)state;
	for (unsigned i = 0; i < n; i++)
		event(i, 0);
	t = reading(0, false, &lost);
	assert_int_equal(ngot, n);
	assert_int_equal(t.samples, n / (4088 / 48));   /* the closed ones */
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(got[i], i);
	assert_int_equal(fs.bad, 0);
}

static void test_a_killed_thread_loses_only_the_event_it_was_writing(void **state)
{
	uint64_t lost = 0;

	(void)state;
	event(0, 0);
	event(1, 0);
	reading(0, true, &lost);           /* gone: its open batch read */
	assert_int_equal(ngot, 2);
	assert_int_equal(lost, 0);
	event(2, 1);                       /* and now one it was writing */
	reading(0, true, &lost);
	assert_int_equal(ngot, 2);
	assert_int_equal(lost, 1);
}

static void test_a_long_reading_comes_in_chunks(void **state)
{
	uint64_t lost = 0;
	struct fast_taken t;
	unsigned n = 1000;

	(void)state;
	for (unsigned i = 0; i < n; i++)
		event(i, 0);
	tracebpf__fast_close(&w);
	t = reading(4, false, &lost);
	assert_int_equal(t.samples, 4);
	assert_true(t.more);
	assert_int_equal(ngot, 4 * (4088 / 48));
	while (t.more)
		t = reading(4, false, &lost);
	assert_int_equal(ngot, n);
	assert_int_equal(cons_pos, *w.prod);
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(got[i], i);
}

static void test_what_trace_h_never_writes_in_a_batch_is_bad(void **state)
{
	uint64_t lost = 0;
	uint32_t *hdr;

	(void)state;
	event(0, 0);
	hdr = event(1, 0);
	hdr[0] = 4096;                     /* an event past its batch's end */
	tracebpf__fast_close(&w);
	reading(0, false, &lost);
	assert_int_equal(ngot, 1);
	assert_int_equal(fs.bad, 1);
	assert_int_equal(cons_pos, *w.prod);   /* and the batch passed over */
}

static void test_a_batch_that_wraps_is_counted_once_when_closed(void **state)
{
	unsigned long at = SIZE - 64;   /* 64 bytes before the ring's end */
	uint32_t *hdr = (uint32_t *)(ring_buf + at);
	uint64_t lost = 0;

	(void)state;
	cons_pos = fr.rd = at;
	hdr[0] = 4088u | TRACEBPF_FAST_BUSY;   /* open, 4 KiB: past the end */
	hdr[1] = TRACEBPF_FAST_BATCH;
	*w.prod = at + 4096;
	reading(0, false, &lost);
	reading(0, false, &lost);
	assert_int_equal(fs.bad, 0);           /* still open: met again */
	__atomic_store_n(hdr, 4088u, __ATOMIC_RELEASE);
	reading(0, false, &lost);
	assert_int_equal(fs.bad, 1);
	assert_int_equal(cons_pos, at + 4096);
	reading(0, false, &lost);
	assert_int_equal(fs.bad, 1);
	assert_int_equal(ngot, 0);
}

static void test_a_recorder_that_reads_no_batches_gets_a_sample_an_event(void **state)
{
	uint64_t lost = 0;
	struct fast_taken t;

	(void)state;
	tracebpf__fast_proc.batch = 0;   /* its switch has no TRACEBPF_FAST_F_BATCH */
	for (int i = 0; i < 100; i++)
		event(i, 0);
	t = reading(0, false, &lost);
	assert_int_equal(ngot, 100);
	assert_int_equal(t.samples, 100);
	assert_int_equal(cons_pos, *w.prod);
	for (unsigned i = 0; i < ngot; i++)
		assert_int_equal(got[i], i);
}

/* Events until the ring has no room (the switch's wait is 0 here): how
 * many went in. */
static unsigned fill_ring(void)
{
	unsigned n = 0;
	uint32_t *hdr;

	while ((hdr = tracebpf__fast_reserve(&w, sizeof(struct tracebpf_fast_rec)))) {
		struct tracebpf_fast_rec *r;

		r = tracebpf__fast_head(hdr, TRACEBPF_FAST_EVENT, sizeof(*r), &site);
		r->args[0] = n++;
		r->args[1] = 0;
		tracebpf__fast_commit(hdr, sizeof(*r));
	}
	return n;
}

static int writer_done;   /* the writer's reserve returned */

/* The drain, in another thread: once the writer has started its wait (it
 * asked for a drain: w.woke set), what the ring holds is read; nothing if
 * the writer returned without waiting. */
static void *drain_when_asked(void *arg)
{
	uint64_t lost = 0;

	(void)arg;
	while (!__atomic_load_n(&w.woke, __ATOMIC_ACQUIRE))
		if (__atomic_load_n(&writer_done, __ATOMIC_ACQUIRE))
			return NULL;
	reading(0, false, &lost);
	return NULL;
}

static void test_a_full_ring_waits_for_the_drain(void **state)
{
	unsigned n = fill_ring();
	pthread_t th;
	uint32_t *hdr;

	(void)state;
	assert_true(n > 1000);   /* 64 KiB of 48-byte events, less the batch headers */
	assert_int_equal(w.woke, 0);   /* no wait without the switch's */
	tracebpf__fast_proc.wait_ns = 60ull * 1000000000u;   /* the drain comes first */
	assert_int_equal(pthread_create(&th, NULL, drain_when_asked, NULL), 0);
	writer_done = 0;
	hdr = tracebpf__fast_reserve(&w, sizeof(struct tracebpf_fast_rec));
	__atomic_store_n(&writer_done, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_non_null(hdr);   /* it waited: the event is on the fast path */
	assert_int_not_equal(w.woke, 0);
	assert_int_equal(w.stalled, 0);
	assert_int_equal(ngot, n);
}

static void test_a_wait_that_runs_out_is_not_made_again_until_the_drain_moves(void **state)
{
	uint64_t lost = 0;
	unsigned n = fill_ring();

	(void)state;
	tracebpf__fast_proc.wait_ns = 1000000;   /* 1 ms, and nothing drains */
	assert_null(tracebpf__fast_reserve(&w, sizeof(struct tracebpf_fast_rec)));
	assert_int_equal(w.stalled, cons_pos + 1);
	w.woke = 0;
	assert_null(tracebpf__fast_reserve(&w, sizeof(struct tracebpf_fast_rec)));
	assert_int_equal(w.woke, 0);   /* no second wait, no second request */
	reading(0, false, &lost);
	assert_int_equal(ngot, n);
	assert_non_null(tracebpf__fast_reserve(&w, sizeof(struct tracebpf_fast_rec)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_an_open_batch_is_read_as_it_is_written, setup),
		cmocka_unit_test_setup(test_batches_fill_and_follow_each_other, setup),
		cmocka_unit_test_setup(
			test_events_stamped_after_a_stop_made_while_reading_are_dropped, setup),
		cmocka_unit_test_setup(test_a_killed_thread_loses_only_the_event_it_was_writing,
				       setup),
		cmocka_unit_test_setup(test_a_long_reading_comes_in_chunks, setup),
		cmocka_unit_test_setup(test_what_trace_h_never_writes_in_a_batch_is_bad, setup),
		cmocka_unit_test_setup(test_a_batch_that_wraps_is_counted_once_when_closed, setup),
		cmocka_unit_test_setup(
			test_a_recorder_that_reads_no_batches_gets_a_sample_an_event, setup),
		cmocka_unit_test_setup(test_a_full_ring_waits_for_the_drain, setup),
		cmocka_unit_test_setup(
			test_a_wait_that_runs_out_is_not_made_again_until_the_drain_moves, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
