/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tracebpf/fast_ring.h - the fast path's ring protocol: the samples a thread
 * writes into its ring, and the switch (struct tracebpf_fast_ctl) its
 * process maps. The one definition of both, included by tracebpf/trace.h
 * (whose producer, tracebpf/fast_producer.h, writes them) and by the
 * recorder (user/fast*.c, which reads them).
 */
#ifndef TRACEBPF_FAST_RING_H
#define TRACEBPF_FAST_RING_H

#include <stdint.h>

#include "site.h"
#include "cats.h"

/* The fast path (docs/fast-path.md, "The fast path"). While the tracebpf
 * recorder records this process, an enabled site writes its record into a
 * ring buffer of the calling thread that the recorder's BPF maps own (a
 * BPF_MAP_TYPE_USER_RINGBUF pinned in bpffs for this process's user), and
 * does not trap. A site takes its USDT probe (trace.h; the slow path) instead:
 * while its thread has no ring yet, when the ring stays full past the
 * thread's wait for the drain (tracebpf__fast_wait), inside a signal
 * handler that interrupted an event of the same thread, and whenever no
 * tracebpf recorder
 * offers a ring (other tools such as bpftrace then see every hit). Define
 * TRACEBPF_NO_FAST_PATH to compile the fast path out.
 *
 * The producer protocol is the kernel's for user ring buffers: a sample is
 * an 8-byte header {u32 len (bit 31 BUSY), u32 0} and len bytes, padded to
 * 8. The producer sets BUSY, advances the producer position (release),
 * writes the sample and clears BUSY (release). One ring per thread and per
 * executable or shared object, so there is one producer per ring. A thread
 * killed between the two releases leaves one BUSY sample: the recorder
 * counts it as lost. Samples are struct tracebpf_fast_rec.
 *
 * Events go in batches: one kernel sample (header {len | BUSY,
 * TRACEBPF_FAST_BATCH}) of up to TRACEBPF__FAST_BATCH_BYTES whose payload
 * is a run of samples as above, each committed on its own; the one after
 * the last committed has a zero header (written before that commit; the
 * payload's last 8 bytes are kept for it). The batch's producer position is
 * published when it opens, and BUSY is cleared when the next event does
 * not fit (or the ring is left). The recorder reads each committed event
 * of an open batch from its own mapping; the kernel steps over one sample
 * per batch. An event that fits no batch is a sample of its own, and so is
 * every event when the recorder's switch does not say TRACEBPF_FAST_F_BATCH
 * (a recorder that reads no batches).                                       */

#define TRACEBPF_FAST_ROOT  "/sys/fs/bpf/tracebpf"  /* <pid>/ctl, <pid>/r<tid>-<key> */
#define TRACEBPF_FAST_EVENT 1   /* tracebpf_fast_rec: an event of a site */
#define TRACEBPF_FAST_SITE  2   /* head, then the descriptor's bytes */
#define TRACEBPF_FAST_EVENT_STR 3   /* tracebpf_fast_rec, tracebpf_fast_str,
				     * then each string argument's bytes */
#define TRACEBPF_FAST_EVENT_ID 4    /* the same, then tracebpf_fast_id, the
				     * strings and the runtime name */
#define TRACEBPF_FAST_STR_MAX 256u  /* bytes of a string argument, its NUL
				     * included: longer ones are cut, as the
				     * probe cuts them */
#define TRACEBPF_FAST_STR_NULL 1u   /* tracebpf_fast_str.flags: a string
				     * argument was a null pointer */
#define TRACEBPF_FAST_NAME_NULL 2u  /* a COPY site's name was a null pointer */
#define TRACEBPF_FAST_LIVE  0x4556494cu   /* tracebpf_fast_ctl.live: "LIVE" */
#define TRACEBPF_FAST_BUSY  0x80000000u   /* the kernel's BPF_RINGBUF_BUSY_BIT */
#define TRACEBPF_FAST_BATCH 0x48435442u   /* a batch's second header word: "BTCH" */
#define TRACEBPF_FAST_F_BATCH 1u          /* tracebpf_fast_ctl.features: batches */
#define TRACEBPF_FAST_HEAD  24u           /* type .. ts, site */

struct tracebpf_fast_rec {
	uint16_t type;     /* TRACEBPF_FAST_* */
	uint16_t size;     /* bytes of the sample, a multiple of 8 */
	uint32_t cpu;      /* the thread's CPU (rseq), or UINT32_MAX */
	uint64_t ts;       /* CLOCK_MONOTONIC ns */
	uint64_t site;     /* descriptor address */
	uint64_t args[TRACEBPF_MAX_ARGS];   /* EVENT: the values */
};

/* After the head of a TRACEBPF_FAST_EVENT_STR or _EVENT_ID sample. */
struct tracebpf_fast_str {
	uint16_t len[TRACEBPF_MAX_ARGS];   /* string bytes, NUL included; 0: none */
	uint32_t flags;                    /* TRACEBPF_FAST_STR_NULL, _NAME_NULL */
};

/* After tracebpf_fast_str in a TRACEBPF_FAST_EVENT_ID sample. */
struct tracebpf_fast_id {
	uint64_t id;         /* async / flow / counter id, 0 if none */
	uint16_t name_len;   /* the runtime name's bytes, NUL included; 0: none */
	uint16_t pad[3];
};

/* Rings the recorder makes ahead of the threads that take them (spares),
 * in two pools: pool 0 of the ring size, for a thread's first ring (pins
 * f<n>), pool 1 of a bigger size, for a thread whose ring is full (pins
 * g<n>). A thread claims spare n by moving `taken` from n to n + 1, maps
 * it, and then says whose it is in claim slot n (seq = n + 1, release). */
#define TRACEBPF_FAST_CLAIMS  480u  /* pool 0: slots, the spares ahead at most */
#define TRACEBPF_FAST_GCLAIMS 8u    /* pool 1 */

struct tracebpf_fast_claim {
	uint32_t seq;      /* n + 1 once spare n is claimed and this filled */
	uint32_t tid;      /* the thread that took it (0: it could not map it) */
	uint64_t key;      /* its object (the semaphore's address) */
};

#define TRACEBPF_FAST_CTL_BYTES 12288u  /* a switch's mapping: three pages */

struct tracebpf_fast_pool {
	uint32_t made;     /* spares made, n < made (the recorder, release) */
	uint32_t taken;    /* spares claimed (the threads, compare-and-swap) */
	uint64_t size;     /* bytes of each spare's ring (written before made) */
};

/* The recording session's switch and its spares, one per process, mapped
 * by every thread of it that records on the fast path. */
struct tracebpf_fast_ctl {
	uint32_t live;     /* TRACEBPF_FAST_LIVE while the session records */
	uint32_t pid;      /* the recorder */
	struct tracebpf_fast_pool pool[2];
	struct tracebpf_fast_claim claim[TRACEBPF_FAST_CLAIMS];     /* pool 0, by n */
	struct tracebpf_fast_claim gclaim[TRACEBPF_FAST_GCLAIMS];   /* pool 1 */
	struct tracebpf_cats cats;   /* the categories recorded (tracebpf/cats.h) */
	uint32_t features;           /* TRACEBPF_FAST_F_*: what the recorder reads
				      * (0 from a recorder older than the field) */
	uint32_t wait_us;            /* how long a thread whose ring is full waits
				      * for the drain (tracebpf__fast_wait; 0:
				      * not at all, as with an older recorder) */
};

#ifdef __cplusplus
#define TRACEBPF__FAST_ASSERT(e, msg) static_assert(e, msg)
#else
#define TRACEBPF__FAST_ASSERT(e, msg) _Static_assert(e, msg)
#endif
TRACEBPF__FAST_ASSERT(sizeof(struct tracebpf_fast_rec) == 40, "tracebpf_fast_rec layout");
TRACEBPF__FAST_ASSERT(__builtin_offsetof(struct tracebpf_fast_rec, args) == TRACEBPF_FAST_HEAD,
		      "tracebpf_fast_rec layout");
TRACEBPF__FAST_ASSERT(sizeof(struct tracebpf_fast_ctl) == 11952 &&
		      __builtin_offsetof(struct tracebpf_fast_ctl, cats) == 7848 &&
		      __builtin_offsetof(struct tracebpf_fast_ctl, features) == 11944 &&
		      __builtin_offsetof(struct tracebpf_fast_ctl, wait_us) == 11948 &&
		      sizeof(struct tracebpf_fast_ctl) <= TRACEBPF_FAST_CTL_BYTES,
		      "tracebpf_fast_ctl layout: three pages, the categories, then the "
		      "features and the wait (zero past an older recorder's switch, in "
		      "the same pages)");
#undef TRACEBPF__FAST_ASSERT

#endif /* TRACEBPF_FAST_RING_H */
