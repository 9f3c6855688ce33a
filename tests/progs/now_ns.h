/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* now_ns.h - CLOCK_MONOTONIC in ns, for the test and bench programs. */
#ifndef TRACEBPF_NOW_NS_H
#define TRACEBPF_NOW_NS_H

#include <stdint.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
