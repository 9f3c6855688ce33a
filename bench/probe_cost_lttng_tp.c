/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* probe_cost_lttng_tp.c - creates the probes of probe_cost_lttng_tp.h. */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "probe_cost_lttng_tp.h"
