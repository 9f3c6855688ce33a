/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libtbdl.so - loaded only with dlopen by dlopen_user. Its constructor emits
 * "dl_ctor"; tbtest_dl_event(i) emits "dl_event" with i.
 */
#include "tracebpf/trace.h"

void tbtest_dl_event(int i);

__attribute__((constructor)) static void ctor(void)
{
	TRACE_EVENT_INSTANT0("dl", "dl_ctor", TRACE_EVENT_SCOPE_THREAD);
}

__attribute__((visibility("default"))) void tbtest_dl_event(int i)
{
	TRACE_EVENT_INSTANT1("dl", "dl_event", TRACE_EVENT_SCOPE_THREAD, "i", i);
}
