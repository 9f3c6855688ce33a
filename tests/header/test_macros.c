/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * test_macros.c - uses every tracebpf macro; compiled as C11 and as C++
 * (-x c++) by tests/header/run.sh, linked with test_tu2.c.
 *
 *   test_macros          run with the sites disabled (no tracer)
 *   test_macros force    set the semaphore first, as an attached tracer
 *                        would: every site executes its probe nop
 *
 * Prints the results of some traced computations (they must not depend on
 * the tracing), the number of argument evaluations (0 when disabled: values
 * are evaluated only when a tracer is attached) and the outcome of the
 * argument value conversions.
 */
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif
#include "tracebpf/trace.h"

int tu2_work(int n);
const volatile unsigned short *tu2_semaphore(void);

enum color { RED, GREEN = 5 };
enum negative { MINUS_THREE = -3 };

static int evals;

static int count_eval(int v)
{
	evals++;
	return v;
}

static uint64_t fib(unsigned n)
{
	TRACE_EVENT1("test", "fib", "n", n);
	if (n < 2)
		return n; /* the scope's END runs on this return too */
	return fib(n - 1) + fib(n - 2);
}

static int scopes(int k)
{
	int total = 0;
	int i;

	TRACE_EVENT0("test", "outer");
	TRACE_EVENT0("test", "outer_again"); /* twice in one scope */
	for (i = 0; i < k; i++) {
		TRACE_EVENT2("test", "iter", "i", i, "half", i / 2.0);
		if (i == 3)
			continue;
		{
			TRACE_EVENT0("test", "inner");
			total += i;
		}
		if (i == 7)
			break;
	}
	return total;
}

/* Every macro, with argument values that count their evaluations. */
static int all_macros(void)
{
	const char *cs = "a const string";
	char buf[16];
	int x = -5;
	int r = 0;

	strcpy(buf, "a buffer");
	{
		TRACE_EVENT0("all", "scoped0");
		TRACE_EVENT1("all", "scoped1", "a", count_eval(1));
		TRACE_EVENT2("all", "scoped2", "a", count_eval(2), "b", cs);
		r += 1;
	}
	TRACE_EVENT_BEGIN0("all", "begin0");
	TRACE_EVENT_BEGIN1("all", "begin1", "a", count_eval(3));
	TRACE_EVENT_BEGIN2("all", "begin2", "a", count_eval(4), "b", buf);
	TRACE_EVENT_END2("all", "begin2", "a", count_eval(5), "b", 2.5);
	TRACE_EVENT_END1("all", "begin1", "a", count_eval(6));
	TRACE_EVENT_END0("all", "begin0");
	TRACE_EVENT_INSTANT0("all", "instant0", TRACE_EVENT_SCOPE_THREAD);
	TRACE_EVENT_INSTANT1("all", "instant1", TRACE_EVENT_SCOPE_PROCESS, "a",
			     count_eval(7));
	TRACE_EVENT_INSTANT2("all", "instant2", TRACE_EVENT_SCOPE_GLOBAL, "a",
			     count_eval(8), "b", &x);
	TRACE_EVENT_INSTANT0("all", "instant_char_scope", 't');
	TRACE_COUNTER1("all", "counter1", count_eval(9));
	TRACE_COUNTER2("all", "counter2", "x", count_eval(10), "y",
		       (unsigned)count_eval(11));
	/* One of each argument type. */
	TRACE_EVENT_INSTANT2("types", "int_uint", 't', "int", x, "uint", 7u);
	TRACE_EVENT_INSTANT2("types", "double_bool", 't', "double", 1.5, "bool",
			     (bool)true);
	TRACE_EVENT_INSTANT2("types", "str_ptr", 't', "str", "literal", "ptr",
			     (void *)&x);
	TRACE_EVENT_INSTANT2("types", "small", 't', "short", (short)-2, "uchar",
			     (unsigned char)200);
	TRACE_EVENT_INSTANT2("types", "wide", 't', "ll", (long long)-1, "ull",
			     ~0ull);
	TRACE_EVENT_INSTANT2("types", "float_ld", 't', "float", 0.25f, "ld",
			     1.0L);
	/* In a statement position without braces: one statement each. */
	if (x < 0)
		TRACE_EVENT_INSTANT0("all", "unbraced_if", 't');
	else
		TRACE_COUNTER1("all", "unbraced_else", x);
	return r;
}

/* Argument type selection, checked at compile time. */
#define EXPECT_TYPE(expr, t) \
	TRACEBPF__SASSERT(TRACEBPF__ARG_TYPE(expr) == (t), "type of " #expr)

static void check_types(void)
{
	char buf[4];
	const char *cs = "x";
	const char *const ccs = "y";
	int i = 0;
	bool b = true;
	enum negative en = MINUS_THREE;

	(void)buf;
	(void)cs;
	(void)ccs;
	(void)i;
	(void)b;
	(void)en;
	EXPECT_TYPE(i, TRACEBPF_ARG_INT);
	EXPECT_TYPE((char)'a', TRACEBPF_ARG_INT);
	EXPECT_TYPE((signed char)1, TRACEBPF_ARG_INT);
	EXPECT_TYPE((short)1, TRACEBPF_ARG_INT);
	EXPECT_TYPE(1L, TRACEBPF_ARG_INT);
	EXPECT_TYPE(1LL, TRACEBPF_ARG_INT);
	EXPECT_TYPE((int8_t)1, TRACEBPF_ARG_INT);
	EXPECT_TYPE((int64_t)1, TRACEBPF_ARG_INT);
	EXPECT_TYPE((unsigned char)1, TRACEBPF_ARG_UINT);
	EXPECT_TYPE((unsigned short)1, TRACEBPF_ARG_UINT);
	EXPECT_TYPE(1u, TRACEBPF_ARG_UINT);
	EXPECT_TYPE(1ul, TRACEBPF_ARG_UINT);
	EXPECT_TYPE(1ull, TRACEBPF_ARG_UINT);
	EXPECT_TYPE(sizeof(int), TRACEBPF_ARG_UINT);
	EXPECT_TYPE((uint8_t)1, TRACEBPF_ARG_UINT);
	EXPECT_TYPE(1.0f, TRACEBPF_ARG_DOUBLE);
	EXPECT_TYPE(1.0, TRACEBPF_ARG_DOUBLE);
	EXPECT_TYPE(1.0L, TRACEBPF_ARG_DOUBLE);
	EXPECT_TYPE(b, TRACEBPF_ARG_BOOL);
	EXPECT_TYPE((bool)i, TRACEBPF_ARG_BOOL);
	EXPECT_TYPE("literal", TRACEBPF_ARG_STR);
	EXPECT_TYPE(buf, TRACEBPF_ARG_STR);
	EXPECT_TYPE(cs, TRACEBPF_ARG_STR);
	EXPECT_TYPE((char *)buf, TRACEBPF_ARG_STR);
	EXPECT_TYPE(ccs, TRACEBPF_ARG_STR);
	EXPECT_TYPE(&i, TRACEBPF_ARG_PTR);
	EXPECT_TYPE((void *)&i, TRACEBPF_ARG_PTR);
	EXPECT_TYPE((const void *)&i, TRACEBPF_ARG_PTR);
	EXPECT_TYPE((unsigned char *)buf, TRACEBPF_ARG_PTR);
	EXPECT_TYPE(&check_types, TRACEBPF_ARG_PTR);
	EXPECT_TYPE(en, TRACEBPF_ARG_INT);
#ifdef __cplusplus
	EXPECT_TYPE(GREEN, TRACEBPF_ARG_INT);
	EXPECT_TYPE(nullptr, TRACEBPF_ARG_PTR);
	EXPECT_TYPE(true, TRACEBPF_ARG_BOOL);
	EXPECT_TYPE(i < 1, TRACEBPF_ARG_BOOL);
#else
	/* C: an enum has its compatible type, unsigned int without negative
	 * constants (gcc, clang); true and comparisons are int. */
	EXPECT_TYPE((enum color)GREEN, TRACEBPF_ARG_UINT);
	EXPECT_TYPE((void *)0, TRACEBPF_ARG_PTR);
	EXPECT_TYPE(true, TRACEBPF_ARG_INT);
#endif
}

/* Argument values as the probe passes them, checked at run time. */
static int value_failures;

static void expect_val(const char *what, uint64_t got, uint64_t want)
{
	if (got != want) {
		printf("value mismatch: %s: expected 0x%016llx got 0x%016llx\n",
		       what, (unsigned long long)want, (unsigned long long)got);
		value_failures++;
	}
}

#define EXPECT_VAL(expr, want) \
	expect_val(#expr, TRACEBPF__ARG_VAL(expr), (uint64_t)(want))

struct bits {
	unsigned a : 3;
	int b : 5;
	unsigned long long wide : 40;
	long long swide : 40;
};

static void check_values(void)
{
	struct bits bf = { 5, -3, 123, -4 };
	int x = -5;
	const char *cs = "str";
	char buf[4] = "ab";
	volatile double vd = -2.5; /* not a constant */

	EXPECT_VAL(x, 0xfffffffffffffffbull);
	EXPECT_VAL((int)0x7fffffff, 0x7fffffffull);
	EXPECT_VAL((unsigned)0xffffffffu, 0xffffffffull);
	EXPECT_VAL((short)-2, 0xfffffffffffffffeull);
	EXPECT_VAL((unsigned short)0xfffe, 0xfffeull);
	EXPECT_VAL((signed char)-1, ~0ull);
	EXPECT_VAL((unsigned char)200, 200);
	EXPECT_VAL((char)'a', 97);
	EXPECT_VAL((long long)INT64_MIN, 0x8000000000000000ull);
	EXPECT_VAL(~0ull, ~0ull);
	EXPECT_VAL(1.5, 0x3ff8000000000000ull);
	EXPECT_VAL(0.25f, 0x3fd0000000000000ull);
	EXPECT_VAL(vd, 0xc004000000000000ull);
	EXPECT_VAL(1.0L, 0x3ff0000000000000ull);
	EXPECT_VAL((bool)5, 1);
	EXPECT_VAL((bool)0, 0);
	EXPECT_VAL(cs, (uintptr_t)cs);
	EXPECT_VAL(buf, (uintptr_t)buf);
	EXPECT_VAL(&x, (uintptr_t)&x);
	EXPECT_VAL((void *)0, 0);
	EXPECT_VAL(MINUS_THREE, 0xfffffffffffffffdull);
	/* bit-fields: gcc gives them types of their own, handled apart */
	EXPECT_VAL(bf.a, 5);
	EXPECT_VAL(bf.b, 0xfffffffffffffffdull);
	EXPECT_VAL(bf.wide, 123);
	EXPECT_VAL(bf.swide, 0xfffffffffffffffcull);
	TRACEBPF__SASSERT(TRACEBPF__ARG_TYPE(bf.b) == TRACEBPF_ARG_INT, "bf.b");
	TRACEBPF__SASSERT(TRACEBPF__ARG_TYPE(bf.swide) == TRACEBPF_ARG_INT, "bf.swide");
	TRACEBPF__SASSERT(TRACEBPF__ARG_TYPE(bf.a) == TRACEBPF_ARG_INT ||
			  TRACEBPF__ARG_TYPE(bf.a) == TRACEBPF_ARG_UINT, "bf.a");
#ifdef __cplusplus
	enum class big : long long { low = -7 };
	EXPECT_VAL(big::low, 0xfffffffffffffff9ull);
	EXPECT_VAL(nullptr, 0);
	EXPECT_VAL(true, 1);
#endif
}

#ifdef __cplusplus
/* C++ only: sites in a template, an inline member function and a lambda. */
template <typename T>
static T twice(T v)
{
	TRACE_EVENT1("cxx", "twice", "v", v);
	return v + v;
}

struct counter {
	int n = 0;
	inline void bump(int by)
	{
		TRACE_EVENT_INSTANT1("cxx", "bump", TRACE_EVENT_SCOPE_THREAD, "by",
				     by);
		n += by;
	}
};

static int extras(void)
{
	counter c;
	auto add = [&c](int v) {
		TRACE_EVENT1("cxx", "lambda", "v", v);
		c.bump(v);
	};
	add(3);
	add(4);
	return c.n + twice(5) + (int)twice(0.5);
}
#else
static int extras(void)
{
	return 7 + 10 + 1; /* the C++ extras compute the same */
}
#endif

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "force") == 0)
		tracebpf_event_semaphore = 1;

	check_types();
	check_values();
	printf("fib(20)=%llu\n", (unsigned long long)fib(20));
	printf("scopes(10)=%d\n", scopes(10));
	printf("all_macros=%d\n", all_macros());
	printf("tu2_work(6)=%d\n", tu2_work(6));
	printf("extras=%d\n", extras());
	printf("same_semaphore=%d\n",
	       tu2_semaphore() == &tracebpf_event_semaphore);
	printf("values=%s\n", value_failures ? "FAIL" : "ok");
	printf("enabled=%d evals=%d\n", TRACEBPF_ENABLED(), evals);
	return 0;
}
