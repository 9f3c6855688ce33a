/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fast_floor [N [RING_BYTES [ROUND_US [fresh]]]] - the floor of the fast path: a
 * bare loop that writes N (2,000,000) two-integer events into a ring the
 * way an enabled site on the fast path does, and nothing else (no check of
 * the thread's ring or of the session, no signal guard, no site table).
 * Prints probe_cost's line (bench/threads.h), then the consumer's counts:
 *     ns_per_hit=<x.xx> n=<N> threads=1 rate=<hits/s>
 *     drained=<samples> bad=<samples not as written> full=<waits for room>
 *     rounds=<the consumer's rounds>
 *
 * The ring is laid out and mapped as the kernel maps a user ring buffer
 * (BPF_MAP_TYPE_USER_RINGBUF) into the thread: a consumer page, a producer
 * page, then RING_BYTES (default 16M) of data mapped twice in a row (a
 * memfd), so that a sample that wraps is contiguous; every page is present
 * before the loop, as the kernel's are. Each sample is trace.h's: an
 * 8-byte header {len | BUSY, 0}, then struct tracebpf_fast_rec (type,
 * size, CPU from rseq, CLOCK_MONOTONIC from the vDSO, site, the two
 * arguments), in trace.h's batches: one ring sample of up to 4 KiB (a
 * quarter of the ring at most, never past its end) whose payload is a run
 * of such samples, each committed on its own, the header after the last
 * one zero. With `fresh` the data pages are left as mapped, never
 * touched by this process before the loop, as a thread's new ring is:
 * with a ring that holds all N events (RING_BYTES >= N x 48) the loop then
 * pays whatever the host charges for a process's first touch of a page
 * (on a VM with shadow page tables, microseconds each). The producer
 * follows tracebpf__fast_open, tracebpf__fast_reserve and
 * tracebpf__fast_commit: a batch is opened when the next event does not
 * fit the open one (which is closed: its header release-stored without
 * BUSY), the consumer position read again only when the last one read
 * leaves no room for it, and the producer position release-stored past
 * it; an event's header is set BUSY, the one after it zeroed, the record
 * written, and the header release-stored without BUSY.
 *
 * A consumer thread drains as the kernel's bpf_user_ringbuf_drain and the
 * recorder's reading together do: it acquire-loads the producer position
 * and each batch's header, stops at a BUSY one, copies each event of the
 * batch out and release-stores the consumer position after each batch. It drains in rounds, a sleep of ROUND_US (1000) us
 * apart, the shortest the recorder waits between rounds (but 0). At about
 * 30 ns an event a round frees a tenth of the ring, and the ring wraps 6
 * times; it holds some 10 ms of events, so that a consumer kept off the
 * CPU by a busy machine seldom lets it fill. (A consumer that never sleeps
 * shares the lines the producer writes, and doubles its cost.) An event
 * that finds the ring full waits for room, counted in full= (its site
 * would take the probe instead): the floor writes all N events, and the
 * consumer checks every sample (type, size, site, the arguments'
 * sequence); the exit status is 1 unless all N were drained intact.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/rseq.h>
#include <time.h>
#include <unistd.h>
#include "tracebpf/trace.h"
#include "threads.h"

#define PAGE 4096ul
#define SAMPLE_LEN ((uint32_t)sizeof(struct tracebpf_fast_rec))   /* 40 */
#define BATCH 4096ul                       /* TRACEBPF__FAST_BATCH_BYTES */

/* The producer's view (trace.h's struct tracebpf__fast_thread). */
struct ring {
	unsigned char *data;           /* mapped twice */
	unsigned long *prod;           /* producer position */
	const unsigned long *cons;     /* consumer position */
	unsigned long mask;
	unsigned long pos;             /* our producer position */
	unsigned long cons_seen;       /* the consumer position last read */
	uint32_t *batch;               /* the open batch's header */
	uint32_t boff, bend;           /* its next event's offset, its end */
};

static struct ring ring;
static unsigned long *cons_pos;   /* the consumer's (the kernel's) side */
static uint64_t n, full;
static int done;
static const char site = 0;       /* stands for a site descriptor */

static uint64_t drained, bad, rounds;
static long round_us = 1000;
static int fresh;                 /* the data pages not touched before the loop */

/* The thread's CPU as trace.h takes it: rseq's cpu_id, or UINT32_MAX. */
static inline uint32_t cpu(void)
{
	if (!__rseq_size)
		return UINT32_MAX;
	return ((volatile struct rseq *)((char *)__builtin_thread_pointer() +
					 __rseq_offset))->cpu_id;
}

static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* tracebpf__fast_close. */
static void close_batch(struct ring *r)
{
	if (r->batch)
		__atomic_store_n(r->batch, r->bend + 8u, __ATOMIC_RELEASE);
	r->batch = NULL;
	r->boff = r->bend = 0;
}

/* tracebpf__fast_open, which waits for room where the site would take
 * the probe. */
static void open_batch(struct ring *r)
{
	unsigned long size = r->mask + 1, pos, cap = BATCH;
	uint32_t *hdr;

	close_batch(r);
	pos = r->pos;
	if (cap > size - (pos & r->mask))
		cap = size - (pos & r->mask);
	if (cap > size / 4)
		cap = size / 4;
	if (pos - r->cons_seen + cap > size) {
		r->cons_seen = __atomic_load_n(r->cons, __ATOMIC_ACQUIRE);
		if (__builtin_expect(pos - r->cons_seen + cap > size, 0)) {
			full++;
			do {
				__builtin_ia32_pause();
				r->cons_seen = __atomic_load_n(r->cons, __ATOMIC_ACQUIRE);
			} while (pos - r->cons_seen + cap > size);
		}
	}
	hdr = (uint32_t *)(r->data + (pos & r->mask));
	hdr[0] = (uint32_t)(cap - 8) | TRACEBPF_FAST_BUSY;
	hdr[1] = TRACEBPF_FAST_BATCH;
	hdr[2] = 0;
	r->batch = hdr;
	r->bend = (uint32_t)(cap - 16);
	r->pos = pos + cap;
	__atomic_store_n(r->prod, pos + cap, __ATOMIC_RELEASE);
}

/* tracebpf__fast_reserve. */
static inline uint32_t *reserve(struct ring *r, uint32_t len)
{
	uint32_t next = r->boff + len + 8u;
	unsigned char *p;
	uint32_t *hdr;

	if (__builtin_expect(next > r->bend, 0)) {
		open_batch(r);
		next = len + 8u;
	}
	p = (unsigned char *)(r->batch + 2);
	hdr = (uint32_t *)(p + r->boff);
	hdr[0] = len | TRACEBPF_FAST_BUSY;
	hdr[1] = 0;
	*(uint32_t *)(p + next) = 0;
	r->boff = next;
	return hdr;
}

/* tracebpf__fast_event's write: head, arguments, commit. */
static void loop(void)
{
	for (uint64_t i = 0; i < n; i++) {
		uint32_t *hdr = reserve(&ring, SAMPLE_LEN);
		struct tracebpf_fast_rec *r = (struct tracebpf_fast_rec *)(hdr + 2);

		r->type = TRACEBPF_FAST_EVENT;
		r->size = (uint16_t)SAMPLE_LEN;
		r->cpu = cpu();
		r->ts = mono_ns();
		r->site = (uintptr_t)&site;
		r->args[0] = i;
		r->args[1] = i & 4095;
		__atomic_store_n(hdr, SAMPLE_LEN, __ATOMIC_RELEASE);   /* commit */
	}
	close_batch(&ring);
}

/* The kernel's drain, one round after another until the producer is done
 * and all is read. */
static void *drain(void *arg)
{
	const unsigned long *prod = ring.prod;
	unsigned long cons = 0;
	struct tracebpf_fast_rec rec;
	struct timespec round = { 0, round_us * 1000 };

	(void)arg;
	for (;;) {
		unsigned long p = __atomic_load_n(prod, __ATOMIC_ACQUIRE);
		int stop = __atomic_load_n(&done, __ATOMIC_ACQUIRE);

		while (cons < p) {
			uint32_t *hdr = (uint32_t *)(ring.data + (cons & ring.mask));
			uint32_t len = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);
			const unsigned char *q = (const unsigned char *)(hdr + 2);

			if (len & TRACEBPF_FAST_BUSY)
				break;
			for (uint32_t at = 0; hdr[1] == TRACEBPF_FAST_BATCH && at + 8 <= len;) {
				uint32_t n = __atomic_load_n((const uint32_t *)(q + at),
							     __ATOMIC_ACQUIRE);

				if (!n)
					break;
				memcpy(&rec, q + at + 8, sizeof(rec));
				if (n != SAMPLE_LEN || rec.type != TRACEBPF_FAST_EVENT ||
				    rec.size != SAMPLE_LEN || rec.site != (uintptr_t)&site ||
				    rec.args[0] != drained || rec.args[1] != (drained & 4095))
					bad++;
				drained++;
				at += (n + 8u + 7u) & ~7u;
			}
			if (hdr[1] != TRACEBPF_FAST_BATCH)
				bad++;
			cons += (len + 8u + 7u) & ~7ul;
			__atomic_store_n(cons_pos, cons, __ATOMIC_RELEASE);
		}
		rounds++;
		if (stop && cons == __atomic_load_n(prod, __ATOMIC_ACQUIRE))
			return NULL;
		nanosleep(&round, NULL);
	}
}

/* The consumer page, the producer page and the data twice, from a memfd,
 * every page touched before the loop (the kernel's are all present). */
static int map_ring(unsigned long size)
{
	int fd = memfd_create("fast_floor", 0);
	unsigned char *cons, *base;

	if (fd < 0 || ftruncate(fd, (off_t)(2 * PAGE + size))) {
		perror("fast_floor: failed to create the ring's memfd");
		return -1;
	}
	cons = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	base = mmap(NULL, PAGE + 2 * size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (cons == MAP_FAILED || base == MAP_FAILED ||
	    mmap(base, PAGE + size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_POPULATE,
		 fd, (off_t)PAGE) == MAP_FAILED ||
	    mmap(base + PAGE + size, size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd, (off_t)(2 * PAGE)) == MAP_FAILED) {
		perror("fast_floor: failed to map the ring");
		close(fd);
		return -1;
	}
	close(fd);
	if (!fresh)
		memset(base + PAGE, 0, size);
	cons_pos = (unsigned long *)cons;
	ring.cons = cons_pos;
	ring.prod = (unsigned long *)base;
	ring.data = base + PAGE;
	ring.mask = size - 1;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long size = 1ul << 24;
	pthread_t consumer;
	int err;

	n = argc > 1 ? strtoull(argv[1], NULL, 0) : 2000000;
	if (argc > 2)
		size = strtoul(argv[2], NULL, 0);
	if (argc > 3)
		round_us = strtol(argv[3], NULL, 10);
	if (argc > 4)
		fresh = !strcmp(argv[4], "fresh");
	if (argc > 5 || (argc > 4 && !fresh) || n == 0 || size < PAGE || (size & (size - 1)) || round_us < 1 ||
	    round_us > 999999) {
		fprintf(stderr, "usage: fast_floor [N [RING_BYTES [ROUND_US [fresh]]]] (N > 0, "
				"RING_BYTES a power of two >= 4096, ROUND_US 1..999999)\n");
		return 2;
	}
	if (map_ring(size))
		return 1;
	err = pthread_create(&consumer, NULL, drain, NULL);
	if (err) {
		fprintf(stderr, "fast_floor: failed to start the consumer: %s\n", strerror(err));
		return 1;
	}
	bench.loop = loop;
	if (bench_run("fast_floor", 1, n))
		return 1;
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	pthread_join(consumer, NULL);
	printf("drained=%llu bad=%llu full=%llu rounds=%llu\n", (unsigned long long)drained,
	       (unsigned long long)bad, (unsigned long long)full, (unsigned long long)rounds);
	if (drained != n || bad) {
		fprintf(stderr, "fast_floor: the consumer read %llu of %llu samples, %llu not "
				"as written\n", (unsigned long long)drained,
			(unsigned long long)n, (unsigned long long)bad);
		return 1;
	}
	return 0;
}
