/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * probe_cost_lttng_tp.h - the LTTng-UST tracepoint provider of
 * bench/probe_cost_lttng.c: bench:hit2, two 64-bit integers, the fields of
 * probe_cost's instant2 site. Read several times by <lttng/tracepoint.h>
 * (the multi-read header pattern); the probes are created in
 * probe_cost_lttng_tp.c. Needs -Ibench.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "probe_cost_lttng_tp.h"

#if !defined(PROBE_COST_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define PROBE_COST_LTTNG_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(
	bench, hit2,
	LTTNG_UST_TP_ARGS(int64_t, i, int64_t, j),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(int64_t, i, i)
		lttng_ust_field_integer(int64_t, j, j)
	)
)

#endif /* PROBE_COST_LTTNG_TP_H */

#include <lttng/tracepoint-event.h>
