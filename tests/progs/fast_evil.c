/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fast_evil MODE N - a traced process that attacks its recorder through
 * what the fast path shares with it (docs/security.md). Once its ring is
 * mapped ("warm" instants until then), it emits N "seq" instants (seq =
 * 0 .. N-1), makes its attack, and emits N "after" instants (through its
 * ring, or its probes once the recorder has sent it there). Modes:
 *   made       writes its switch's pools as if the recorder had made 2^32
 *              - 4096 spares, all claimed, and fills every claim slot, by
 *              this thread, as if each were one of them (the recorder
 *              must count its own spares and give none it did not make);
 *   unaligned  moves its ring's producer position 4 bytes past what it
 *              wrote, once the recorder has read all of it: the kernel
 *              refuses to drain such a ring (its process alone goes to
 *              its probes; it waits for that, at most 25 s);
 *   requests   asks the recorder 2,000,000 times for a ring and as many
 *              times to drain it now;
 *   sites      writes 100,000 site descriptors of made-up sites;
 *   hoard      for 1.5 s, says every spare made is claimed, and never
 *              says by whom: the recorder makes more, for ever if it
 *              lets a process hold more than its share of the rings.
 * Prints "fast=F mode=MODE" (F: 1 if its ring was mapped). Reads and writes
 * the header's state and the pages it maps, as no application would.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tracebpf/trace.h"

static void pause_ms(long ms)
{
	const struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&t, NULL);
}

static int warm(void)
{
	const struct timespec p = { 0, 200 * 1000 };

	for (int w = 0; w < 15000 && tracebpf__fast_tls.state != TRACEBPF__FAST_READY; w++) {
		TRACE_EVENT_INSTANT1("evil", "warm", TRACE_EVENT_SCOPE_THREAD, "w", w);
		nanosleep(&p, NULL);
	}
	return tracebpf__fast_tls.state == TRACEBPF__FAST_READY;
}

/* Every pool made and claimed as far as the switch can say, and every
 * claim slot filled for this thread. */
static void forge_made(void)
{
	volatile struct tracebpf_fast_ctl *c = tracebpf__fast_proc.ctl;
	uint32_t tid = (uint32_t)tracebpf__sys(TRACEBPF__SYS_GETTID, 0, 0, 0, 0, 0, 0);
	uint32_t big = 0xfffff000u;

	for (int pool = 0; pool < 2; pool++) {
		c->pool[pool].made = big;
		c->pool[pool].taken = big;
	}
	for (uint32_t n = 0; n < TRACEBPF_FAST_CLAIMS; n++) {
		c->claim[n].tid = tid;
		c->claim[n].key = 0;
		c->claim[n].seq = n + 1;
	}
	for (uint32_t n = 0; n < TRACEBPF_FAST_GCLAIMS; n++) {
		c->gclaim[n].tid = tid;
		c->gclaim[n].seq = n + 1;
	}
}

/* The producer position 4 bytes on, once the recorder has read the ring
 * (its batch closed); then waits for the recorder to switch the process
 * to its probes. */
static void unalign(void)
{
	struct tracebpf__fast_thread *t = &tracebpf__fast_tls;

	tracebpf__fast_close(t);
	for (int w = 0; w < 25000 && __atomic_load_n(t->cons, __ATOMIC_ACQUIRE) != t->pos; w++)
		pause_ms(1);
	__atomic_store_n(t->prod, t->pos + 4, __ATOMIC_RELEASE);
	for (int w = 0; w < 25000 && t->ctl->live == TRACEBPF_FAST_LIVE; w++)
		pause_ms(1);
}

static void hoard(void)
{
	volatile struct tracebpf_fast_ctl *c = tracebpf__fast_proc.ctl;

	for (int i = 0; i < 1500; i++) {
		c->pool[0].taken = c->pool[0].made;
		pause_ms(1);
	}
}

static void flood_requests(void)
{
	uintptr_t key = (uintptr_t)&tracebpf_event_semaphore;

	for (int i = 0; i < 2000000; i++) {
		tracebpf__fast_request_key(key);
		tracebpf__fast_request_key(key | 1u);
	}
}

/* A descriptor of a made-up site, at address `site`. */
static int fake_site(uint64_t site)
{
	static const char strs[] = "evil\0fake";
	struct tracebpf__fast_thread *t = &tracebpf__fast_tls;
	uint32_t dlen = (uint32_t)(sizeof(struct tracebpf_site) + sizeof(strs));
	uint32_t len = (TRACEBPF_FAST_HEAD + dlen + 7u) & ~7u;
	struct tracebpf_site d = { .magic = TRACEBPF_SITE_MAGIC, .size = (uint16_t)dlen,
				   .phase = TRACEBPF_PHASE_INSTANT };
	struct tracebpf_fast_rec *r;
	uint32_t *hdr = tracebpf__fast_reserve(t, len);

	if (!hdr)
		return 0;
	r = (struct tracebpf_fast_rec *)(hdr + 2);
	r->type = TRACEBPF_FAST_SITE;
	r->size = (uint16_t)len;
	r->cpu = 0;
	r->ts = tracebpf__now();
	r->site = site;
	memcpy(r->args, &d, sizeof(d));
	memcpy((char *)r->args + sizeof(d), strs, sizeof(strs));
	tracebpf__fast_commit(hdr, len);
	return 1;
}

static void flood_sites(void)
{
	int done = 0;

	for (uint64_t i = 0; i < 100000; i++) {
		int ok = fake_site(0x7e0000000000ull + i * 64);

		/* a ring full past its wait (a loaded machine's drain kept
		 * off the CPU): wait for room, up to 10 s a site */
		for (int w = 0; !ok && w < 10000; w++) {
			pause_ms(1);
			ok = fake_site(0x7e0000000000ull + i * 64);
		}
		done += ok;
		if (i % 1000 == 999)
			pause_ms(1);   /* a ring the drain keeps up with */
	}
	printf("sites=%d\n", done);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long n = argc > 2 ? atol(argv[2]) : 1000;
	int fast = warm();

	for (long i = 0; i < n; i++)
		TRACE_EVENT_INSTANT1("evil", "seq", TRACE_EVENT_SCOPE_THREAD, "seq", i);
	if (fast && !strcmp(mode, "made"))
		forge_made();
	else if (fast && !strcmp(mode, "unaligned"))
		unalign();
	else if (fast && !strcmp(mode, "requests"))
		flood_requests();
	else if (fast && !strcmp(mode, "sites"))
		flood_sites();
	else if (fast && !strcmp(mode, "hoard"))
		hoard();
	else if (fast) {
		fprintf(stderr, "fast_evil: unknown mode '%s'\n", mode);
		return 64;
	}
	pause_ms(100);   /* a round of the recorder's, or two */
	for (long i = 0; i < n; i++)
		TRACE_EVENT_INSTANT1("evil", "after", TRACE_EVENT_SCOPE_THREAD, "seq", i);
	printf("fast=%d mode=%s\n", fast, mode);
	return 0;
}
