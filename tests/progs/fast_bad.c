/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fast_bad N [far] - a thread that writes into its fast-path ring what
 * trace.h never writes: once its ring is mapped ("warm" instants until then), N
 * "seq" instants (seq = 0 .. N-1) with, after each, one sample of an
 * unknown type (99) and one as long as a head but no event (type
 * TRACEBPF_FAST_EVENT, 24 bytes), both committed with the ring's own
 * protocol. The recorder must leave these 2N samples out, say how many,
 * and keep every "seq". With `far`, then, the ring's producer position is
 * set 2^40 bytes ahead (the ring claims to hold more than it can), once
 * the recorder has read all it held; once the recorder has switched the
 * process to its probes (the switch no longer LIVE; at most 25 s), N
 * "after" instants. (A fixed sleep there let a recorder kept off the CPU
 * miss the position: the first "after" event set it right again.)
 * Prints "fast=F bad=B" (F: 1 if the ring was mapped; B: the samples
 * written). Reads and writes the header's
 * per-thread state: a test program may, an application has no reason to.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tracebpf/trace.h"

/* One committed sample of `len` bytes (a multiple of 8) and `type`. */
static int bad_sample(uint16_t type, uint32_t len)
{
	struct tracebpf__fast_thread *t = &tracebpf__fast_tls;
	struct tracebpf_fast_rec *r;
	uint32_t *hdr = tracebpf__fast_reserve(t, len);

	if (!hdr)
		return 0;
	r = (struct tracebpf_fast_rec *)(hdr + 2);
	r->type = type;
	r->size = (uint16_t)len;
	r->cpu = 0;
	r->ts = tracebpf__now();
	tracebpf__fast_commit(hdr, len);
	return 1;
}

int main(int argc, char **argv)
{
	const struct timespec pause = { 0, 200 * 1000 };
	long n = argc > 1 ? atol(argv[1]) : 1000, bad = 0;
	int fast;

	for (int w = 0; w < 10000 && tracebpf__fast_tls.state != TRACEBPF__FAST_READY; w++) {
		TRACE_EVENT_INSTANT1("fast", "warm", TRACE_EVENT_SCOPE_THREAD, "w", w);
		nanosleep(&pause, NULL);
	}
	for (long i = 0; i < n; i++) {
		TRACE_EVENT_INSTANT1("fast", "seq", TRACE_EVENT_SCOPE_THREAD, "seq", i);
		if (tracebpf__fast_tls.state == TRACEBPF__FAST_READY) {
			bad += bad_sample(99, sizeof(struct tracebpf_fast_rec));
			bad += bad_sample(TRACEBPF_FAST_EVENT, 24);
		}
	}
	fast = tracebpf__fast_tls.state == TRACEBPF__FAST_READY;
	if (argc > 2 && !strcmp(argv[2], "far") && fast) {
		const struct timespec ms = { 0, 1000 * 1000 };

		/* the recorder has read every event first (the open batch
		 * closed, so that the kernel may step over it) */
		tracebpf__fast_close(&tracebpf__fast_tls);
		for (int w = 0; w < 25000 && __atomic_load_n(tracebpf__fast_tls.cons,
							    __ATOMIC_ACQUIRE) !=
						tracebpf__fast_tls.pos; w++)
			nanosleep(&ms, NULL);
		__atomic_store_n(tracebpf__fast_tls.prod, tracebpf__fast_tls.pos + (1ul << 40),
				 __ATOMIC_RELEASE);
		for (int w = 0; w < 25000 && tracebpf__fast_tls.ctl->live == TRACEBPF_FAST_LIVE; w++)
			nanosleep(&ms, NULL);
		for (long i = 0; i < n; i++)
			TRACE_EVENT_INSTANT1("fast", "after", TRACE_EVENT_SCOPE_THREAD, "seq", i);
	}
	printf("fast=%d bad=%ld\n", fast, bad);
	return 0;
}
