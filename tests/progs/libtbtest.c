/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libtbtest.so - a shared library with a tracebpf site, used by lib_user.
 * It has its own tracebpf_event_semaphore (hidden): a tracer must attach to
 * the library's notes, not only to the executable's.
 */
#include "tracebpf/trace.h"

void tbtest_lib_event(int i);

__attribute__((visibility("default"))) void tbtest_lib_event(int i)
{
	TRACE_EVENT_INSTANT1("lib", "lib_event", TRACE_EVENT_SCOPE_THREAD, "i", i);
}
