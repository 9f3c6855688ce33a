/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libsdt.so - a shared library with a plain <sys/sdt.h> probe, linked by
 * sdt_app: sdtlib_calls(n) fires sdtlib:call (int i, int 100+i) for i in
 * 0..n-1. A tracer must find the library's notes, not only the program's.
 */
#include <sys/sdt.h>

void sdtlib_calls(int n);

__attribute__((visibility("default"))) void sdtlib_calls(int n)
{
	int i;

	for (i = 0; i < n; i++) {
		int a = i, b = 100 + i;

		/* keep both in registers the probe reads, not folded constants */
		__asm__ __volatile__("" : "+r"(a), "+r"(b));
		STAP_PROBE2(sdtlib, call, a, b);
	}
}
