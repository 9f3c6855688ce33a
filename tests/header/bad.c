/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * bad.c - misuses of the macros that must not compile (run.sh builds it with
 * -DCASE=1..6 and expects failures; CASE=0 is the control that compiles).
 */
#include "tracebpf/trace.h"

struct point {
	int x, y;
};

void bad(void);

void bad(void)
{
	const char *cat = "cat";
	const char *name = "name";
	struct point pt = { 1, 2 };

	(void)cat;
	(void)name;
	(void)pt;
#if CASE == 0
	TRACE_EVENT_INSTANT1("cat", "name", 't', "arg", pt.x);
	TRACE_EVENT0("cat", "name");
#elif CASE == 1
	TRACE_EVENT_INSTANT0(cat, "name", 't');
#elif CASE == 2
	TRACE_EVENT_INSTANT0("cat", name, 't');
#elif CASE == 3
	TRACE_EVENT_INSTANT1("cat", "name", 't', name, 1);
#elif CASE == 4
	TRACE_EVENT0(cat, "name");
#elif CASE == 5
#define S50 "01234567890123456789012345678901234567890123456789"
#define S500 S50 S50 S50 S50 S50 S50 S50 S50 S50 S50
	TRACE_EVENT_INSTANT0("cat", S500, 't');
#elif CASE == 6
	TRACE_EVENT_INSTANT1("cat", "name", 't', "pt", pt);
#endif
}
