/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libchaosdl.so - dlopened by chaos_app: chaos_dl_seq(s, n) emits the chaos
 * run's numbered event from a site of its own.
 */
#include <stdint.h>
#include "tracebpf/trace.h"

__attribute__((visibility("default"))) void chaos_dl_seq(int64_t s, int64_t n)
{
	TRACE_EVENT_INSTANT2("chaos", "seq", TRACE_EVENT_SCOPE_THREAD, "s", s, "seq", n);
}
