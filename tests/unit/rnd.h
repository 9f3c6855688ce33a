/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rnd.h - the unit tests' pseudo-random numbers: xorshift64, the same
 * sequence on every run, so that a failure repeats.
 */
#ifndef TRACEBPF_TEST_RND_H
#define TRACEBPF_TEST_RND_H

#include <stdint.h>

static inline uint64_t xorshift64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The next of one sequence per test program. */
static inline uint64_t rnd(void)
{
	static uint64_t state = 88172645463325252ull;

	return xorshift64(&state);
}

#endif
