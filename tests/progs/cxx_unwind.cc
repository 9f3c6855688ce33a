// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// cxx_unwind - C++: scoped events end when an exception unwinds through
// them ("thrower" inside "catcher"); macros inside a function template and a
// lambda. Prints "caught=1 sum=<n>".
#include <cstdio>
#include <stdexcept>
#include "tracebpf/trace.h"

template <typename T>
static T twice(T v)
{
	TRACE_EVENT1("cxx", "twice", "v", v);
	return v + v;
}

static void thrower(int depth)
{
	TRACE_EVENT1("cxx", "thrower", "depth", depth);
	if (depth == 0)
		throw std::runtime_error("boom");
	thrower(depth - 1);
}

int main()
{
	int caught = 0;
	{
		TRACE_EVENT0("cxx", "catcher");
		try {
			thrower(2);
		} catch (const std::exception &) {
			caught = 1;
			TRACE_EVENT_INSTANT0("cxx", "caught", TRACE_EVENT_SCOPE_THREAD);
		}
	}
	auto lam = [](int x) {
		TRACE_EVENT1("cxx", "lambda", "x", x);
		return twice(x) + static_cast<int>(twice(0.5));
	};
	int sum = lam(3) + lam(4);
	std::printf("caught=%d sum=%d\n", caught, sum);
	return 0;
}
