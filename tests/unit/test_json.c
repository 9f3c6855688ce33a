// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_json.c - the streaming JSON writer: escaping, UTF-8 repair,
 * timestamps, numbers, commas and misuse.
 *
 * gcc -std=gnu11 -Wall -Wextra -Werror -O2 -g tests/unit/test_json.c \
 *     lib/util/json.c -lcmocka -o test_json
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../lib/util/json.h"
#include "rnd.h"

#define FFFD "\xef\xbf\xbd"

/* Output of one call on a fresh writer, as a malloc'd string. */
struct out {
	FILE *f;
	char *buf;
	size_t len;
	struct tb_json j;
};

static void out_open(struct out *o)
{
	o->buf = NULL;
	o->len = 0;
	o->f = open_memstream(&o->buf, &o->len);
	assert_non_null(o->f);
	tb_json_init(&o->j, o->f);
}

static char *out_close(struct out *o)
{
	assert_int_equal(tb_json_error(&o->j), 0);
	assert_int_equal(fclose(o->f), 0);
	return o->buf;
}

static char *str_json(const char *s, size_t n)
{
	struct out o;

	out_open(&o);
	tb_json_string_n(&o.j, s, n);
	return out_close(&o);
}

static void check_str(const char *in, size_t n, const char *want)
{
	char *got = str_json(in, n);

	assert_string_equal(got, want);
	free(got);
}

#define CHECK_STR(lit, want) check_str(lit, sizeof(lit) - 1, want)

static void test_control_chars(void **state)
{
	static const char *const shortesc[32] = {
		['\b'] = "\\b", ['\f'] = "\\f", ['\n'] = "\\n",
		['\r'] = "\\r", ['\t'] = "\\t",
	};
	char want[16], in[3];
	int c;

	(void)state;
	for (c = 0; c < 0x20; c++) {
		in[0] = 'a';
		in[1] = (char)c;
		in[2] = 'z';
		if (shortesc[c])
			snprintf(want, sizeof(want), "\"a%sz\"", shortesc[c]);
		else
			snprintf(want, sizeof(want), "\"a\\u%04xz\"", c);
		check_str(in, 3, want);
	}
	check_str("\x7f", 1, "\"\\u007f\"");
	/* tb_json_string stops at the NUL, tb_json_string_n does not */
	check_str("a\0b", 3, "\"a\\u0000b\"");
}

static void test_quotes_backslash(void **state)
{
	char in[0x7f - 0x20 + 1], want[sizeof(in) + 8];
	char *w = want;
	int c;

	(void)state;
	CHECK_STR("say \"hi\"", "\"say \\\"hi\\\"\"");
	CHECK_STR("C:\\dir\\", "\"C:\\\\dir\\\\\"");
	CHECK_STR("\\\"", "\"\\\\\\\"\"");
	CHECK_STR("", "\"\"");
	/* every other printable ASCII character passes unchanged */
	*w++ = '"';
	for (c = 0x20; c < 0x7f; c++) {
		in[c - 0x20] = (char)c;
		if (c == '"' || c == '\\')
			*w++ = '\\';
		*w++ = (char)c;
	}
	*w++ = '"';
	*w = '\0';
	check_str(in, 0x7f - 0x20, want);
}

static void test_utf8_valid(void **state)
{
	(void)state;
	CHECK_STR("caf\xc3\xa9", "\"caf\xc3\xa9\"");                 /* U+00E9 */
	CHECK_STR("\xc2\x80", "\"\xc2\x80\"");                        /* U+0080 */
	CHECK_STR("\xdf\xbf", "\"\xdf\xbf\"");                        /* U+07FF */
	CHECK_STR("\xe0\xa0\x80", "\"\xe0\xa0\x80\"");                /* U+0800 */
	CHECK_STR("\xe2\x82\xac 5", "\"\xe2\x82\xac 5\"");            /* euro */
	CHECK_STR("\xed\x9f\xbf", "\"\xed\x9f\xbf\"");                /* U+D7FF */
	CHECK_STR("\xee\x80\x80", "\"\xee\x80\x80\"");                /* U+E000 */
	CHECK_STR(FFFD, "\"" FFFD "\"");
	CHECK_STR("\xf0\x90\x80\x80", "\"\xf0\x90\x80\x80\"");        /* U+10000 */
	CHECK_STR("\xf0\x9d\x84\x9e", "\"\xf0\x9d\x84\x9e\"");        /* G clef */
	CHECK_STR("\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\"");        /* U+10FFFF */
	CHECK_STR("\xe6\x97\xa5\xe6\x9c\xac\"", "\"\xe6\x97\xa5\xe6\x9c\xac\\\"\"");
}

static void test_utf8_invalid(void **state)
{
	(void)state;
	/* one U+FFFD per maximal invalid subpart */
	CHECK_STR("\x80", "\"" FFFD "\"");                       /* stray continuation */
	CHECK_STR("a\xbf" "b", "\"a" FFFD "b\"");
	CHECK_STR("\xff", "\"" FFFD "\"");
	CHECK_STR("\xfe\xfe", "\"" FFFD FFFD "\"");
	CHECK_STR("\xc0\xaf", "\"" FFFD FFFD "\"");              /* overlong '/' */
	CHECK_STR("\xc1\xbf", "\"" FFFD FFFD "\"");              /* overlong */
	CHECK_STR("\xe0\x80\xaf", "\"" FFFD FFFD FFFD "\"");     /* overlong 3 */
	CHECK_STR("\xe0\x9f\xbf", "\"" FFFD FFFD FFFD "\"");     /* overlong U+07FF */
	CHECK_STR("\xf0\x80\x80\xaf", "\"" FFFD FFFD FFFD FFFD "\"");
	CHECK_STR("\xf0\x8f\xbf\xbf", "\"" FFFD FFFD FFFD FFFD "\""); /* overlong U+FFFF */
	CHECK_STR("\xed\xa0\x80", "\"" FFFD FFFD FFFD "\"");     /* U+D800 */
	CHECK_STR("\xed\xbf\xbf", "\"" FFFD FFFD FFFD "\"");     /* U+DFFF */
	CHECK_STR("\xf4\x90\x80\x80", "\"" FFFD FFFD FFFD FFFD "\""); /* U+110000 */
	CHECK_STR("\xf5\x80\x80\x80", "\"" FFFD FFFD FFFD FFFD "\"");
	CHECK_STR("\xf8\x88\x80\x80\x80", "\"" FFFD FFFD FFFD FFFD FFFD "\"");
	/* truncated sequences: the valid prefix is one subpart */
	CHECK_STR("\xc3", "\"" FFFD "\"");
	CHECK_STR("\xe2\x82", "\"" FFFD "\"");
	CHECK_STR("\xf0\x9d\x84", "\"" FFFD "\"");
	CHECK_STR("\xe2\x82" "A", "\"" FFFD "A\"");
	CHECK_STR("\xf0\x9d\x84\"", "\"" FFFD "\\\"\"");
	CHECK_STR("\xe2\x82\n", "\"" FFFD "\\n\"");
	CHECK_STR("x\xc3\xc3\xa9y", "\"x" FFFD "\xc3\xa9y\"");
	/* cut before a NUL given by length */
	check_str("\xe2\x82\xac", 2, "\"" FFFD "\"");
}

static void test_keys_escaped(void **state)
{
	struct out o;
	char *s;

	(void)state;
	out_open(&o);
	tb_json_begin_object(&o.j);
	tb_json_kstr(&o.j, "a\"\n\xff", "v\t");
	tb_json_end_object(&o.j);
	s = out_close(&o);
	assert_string_equal(s, "{\"a\\\"\\n" FFFD "\":\"v\\t\"}");
	free(s);
}

static void check_ts(uint64_t ns, const char *want)
{
	struct out o;
	char *s;

	out_open(&o);
	tb_json_ts_ns(&o.j, ns);
	s = out_close(&o);
	assert_string_equal(s, want);
	free(s);
}

static void test_ts(void **state)
{
	(void)state;
	check_ts(0, "0.000");
	check_ts(1, "0.001");
	check_ts(999, "0.999");
	check_ts(1000, "1.000");
	check_ts(1001, "1.001");
	check_ts(1234567, "1234.567");
	check_ts(1000000, "1000.000");
	check_ts(8123456789012ULL, "8123456789.012");
	check_ts(UINT64_MAX, "18446744073709551.615");
}

/* kdur's value: the text between '{"d":' and '}'. */
static char *dur_json(uint64_t ts, uint64_t dur)
{
	struct out o;
	char *s;
	size_t n;

	out_open(&o);
	tb_json_begin_object(&o.j);
	tb_json_kdur(&o.j, "d", ts, dur);
	tb_json_end_object(&o.j);
	s = out_close(&o);
	n = strlen(s);
	assert_true(n > 6 && !strncmp(s, "{\"d\":", 5) && s[n - 1] == '}');
	memmove(s, s + 5, n - 6);
	s[n - 6] = '\0';
	return s;
}

/* What a viewer reads the three-decimal text of ns as. */
static double text_us(uint64_t ns)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
	return strtod(buf, NULL);
}

/* A viewer's ts + dur, in doubles, must be exactly the end's double; the
 * text is the plain three decimals whenever they add up, and reads back
 * as the duration to within half a ns otherwise. */
static void check_dur(uint64_t ts, uint64_t dur)
{
	char *got = dur_json(ts, dur), plain[32];
	double d = strtod(got, NULL);

	snprintf(plain, sizeof(plain), "%" PRIu64 ".%03u", dur / 1000, (unsigned)(dur % 1000));
	if (text_us(ts) + text_us(dur) == text_us(ts + dur))
		assert_string_equal(got, plain);
	assert_true(text_us(ts) + d == text_us(ts + dur));
	if (ts < (UINT64_C(1) << 50))
		assert_true(fabs(d * 1000 - (double)dur) < 0.5);
	free(got);
}

static void test_dur(void **state)
{
	uint64_t x = 88172645463325252ULL;
	char *s;

	(void)state;
	/* 1199221297.630 + 554.176 is 0.2 ps past 1199221851.806 in doubles */
	s = dur_json(1199221297630ULL, 554176);
	assert_string_equal(s, "554.175999879837");
	free(s);
	s = dur_json(1000, 500);
	assert_string_equal(s, "0.500");
	free(s);
	check_dur(0, 0);
	check_dur((UINT64_C(1) << 54) + 12345, 987654321);   /* parsed, not divided */
	for (int i = 0; i < 200000; i++) {
		xorshift64(&x);
		uint64_t ts = UINT64_C(1000000000) + (x >> 12) % (UINT64_C(1) << 52);
		uint64_t dur = (x * 2654435761u) % (i & 1 ? 100000 : UINT64_C(10000000000));
		check_dur(ts, dur);
	}
}

static char *num_json(int kind, int64_t i, uint64_t u, double d)
{
	struct out o;

	out_open(&o);
	if (kind == 0)
		tb_json_int(&o.j, i);
	else if (kind == 1)
		tb_json_uint(&o.j, u);
	else
		tb_json_double(&o.j, d);
	return out_close(&o);
}

#define CHECK_NUM(kind, i, u, d, want) do {             \
	char *s_ = num_json(kind, i, u, d);              \
	assert_string_equal(s_, want);                   \
	free(s_);                                        \
} while (0)

static void test_numbers(void **state)
{
	static const double rt[] = {
		0.1, 1.0 / 3, 2.5e-310, 1.7976931348623157e308, 123456789.123,
		-42.0, 5e-324, 0.30000000000000004,
	};
	size_t k;

	(void)state;
	CHECK_NUM(0, 0, 0, 0, "0");
	CHECK_NUM(0, -1, 0, 0, "-1");
	CHECK_NUM(0, INT64_MIN, 0, 0, "-9223372036854775808");
	CHECK_NUM(0, INT64_MAX, 0, 0, "9223372036854775807");
	CHECK_NUM(1, 0, UINT64_MAX, 0, "18446744073709551615");
	CHECK_NUM(2, 0, 0, 0.5, "0.5");
	CHECK_NUM(2, 0, 0, 0.1, "0.1");
	CHECK_NUM(2, 0, 0, -2.25, "-2.25");
	CHECK_NUM(2, 0, 0, 1e300, "1e+300");
	CHECK_NUM(2, 0, 0, 3.0, "3");
	/* never nan or inf */
	CHECK_NUM(2, 0, 0, NAN, "0");
	CHECK_NUM(2, 0, 0, INFINITY, "0");
	CHECK_NUM(2, 0, 0, -INFINITY, "0");
	/* the shortest text reads back exactly */
	for (k = 0; k < sizeof(rt) / sizeof(rt[0]); k++) {
		char *s = num_json(2, 0, 0, rt[k]);

		assert_true(strtod(s, NULL) == rt[k]);
		assert_null(strpbrk(s, "ni"));   /* no nan/inf text */
		free(s);
	}
}

/* What tb_json_double wrote with printf alone: "%.15g", "%.16g" or
 * "%.17g", the first that reads back. */
static void printf_double(char *buf, size_t len, double v)
{
	for (int digits = 15; digits <= 17; digits++) {
		snprintf(buf, len, "%.*g", digits, v);
		if (strtod(buf, NULL) == v)
			break;
	}
}

/* The next double after v (v > 0) up or down, without libm. */
static double step(double v, int dir)
{
	uint64_t b;

	memcpy(&b, &v, sizeof(b));
	b += (uint64_t)(int64_t)dir;
	memcpy(&v, &b, sizeof(v));
	return v;
}

static void check_double(double v)
{
	char want[40], *got = num_json(2, 0, 0, v);

	printf_double(want, sizeof(want), v);
	if (strcmp(got, want))
		fail_msg("%a: wrote %s, printf %s", v, got, want);
	free(got);
}

/* Doubles of up to 15 digits are formatted without printf: the same text
 * as printf, for differences of timestamps (kdur's), values with few and
 * with all mantissa bits, ties, powers of ten and the range's edges. */
static void test_doubles_like_printf(void **state)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	double edges[] = { 1e-4, 1e15, 9.99999999999999e14, 0.0001000000000000001,
			   999999999999999.9, 9.9999999999999995, 0.5, 1e-5, 123.0,
			   0.000123456789012345, 2.5, 0.125, 1.0000000000000002 };

	(void)state;
	for (size_t k = 0; k < sizeof(edges) / sizeof(edges[0]); k++) {
		check_double(edges[k]);
		check_double(-edges[k]);
		check_double(step(edges[k], -1));
		check_double(step(edges[k], 1));
	}
	/* powers of two, where the double below is half as far */
	for (double p = 1.0 / 32768; p < 1e16; p *= 2)
		for (int d = -3; d <= 3; d++) {
			double q = p;

			for (int k = 0; k < (d < 0 ? -d : d); k++)
				q = step(q, d < 0 ? -1 : 1);
			check_double(q);
		}
	for (double p = 1e-5; p < 1e17; p *= 10)
		for (int d = 1; d <= 9; d++)
			check_double(d * p);
	for (int i = 0; i < 300000; i++) {
		xorshift64(&x);
		uint64_t ns = UINT64_C(1000000000) + (x >> 12) % (UINT64_C(1) << 52);
		uint64_t dur = (x * 2654435761u) % (i & 1 ? 100000 : UINT64_C(10000000000));
		double start = (double)ns / 1000, end = (double)(ns + dur) / 1000, bits;
		uint64_t b = (x & 0x800fffffffffffffull) | ((uint64_t)(1010 + x % 60) << 52);

		check_double(end - start);
		memcpy(&bits, &b, sizeof(bits));
		check_double(bits);                              /* all bits */
		check_double((double)(x >> 40) / 1024.0);        /* few bits */
		check_double((double)(x % 2000000000000000ull) / 1000 + 0.0005);   /* ties */
	}
}

static void test_structure(void **state)
{
	struct out o;
	char *s;

	(void)state;
	out_open(&o);
	tb_json_begin_object(&o.j);
	tb_json_key(&o.j, "a");
	tb_json_begin_array(&o.j);
	tb_json_int(&o.j, 1);
	tb_json_newline(&o.j);
	tb_json_string(&o.j, "x");
	tb_json_begin_object(&o.j);
	tb_json_end_object(&o.j);
	tb_json_begin_array(&o.j);
	tb_json_end_array(&o.j);
	tb_json_bool(&o.j, true);
	tb_json_bool(&o.j, false);
	tb_json_null(&o.j);
	tb_json_newline(&o.j);
	tb_json_end_array(&o.j);
	tb_json_kts(&o.j, "ts", 1500);
	tb_json_kuint(&o.j, "u", 7);
	tb_json_kint(&o.j, "i", -7);
	tb_json_key(&o.j, "o");
	tb_json_begin_object(&o.j);
	tb_json_kstr(&o.j, "k", "v");
	tb_json_end_object(&o.j);
	tb_json_end_object(&o.j);
	s = out_close(&o);
	assert_string_equal(s, "{\"a\":[1,\n\"x\",{},[],true,false,null\n],"
			       "\"ts\":1.500,\"u\":7,\"i\":-7,\"o\":{\"k\":\"v\"}}");
	free(s);
}

static int misuse(int what)
{
	struct out o;
	int err;

	out_open(&o);
	switch (what) {
	case 0:   /* close without open */
		tb_json_end_object(&o.j);
		break;
	case 1:   /* key in an array */
		tb_json_begin_array(&o.j);
		tb_json_key(&o.j, "k");
		break;
	case 2:   /* value in an object without a key */
		tb_json_begin_object(&o.j);
		tb_json_int(&o.j, 1);
		break;
	case 3:   /* mismatched close */
		tb_json_begin_object(&o.j);
		tb_json_end_array(&o.j);
		break;
	case 4:   /* key without value */
		tb_json_begin_object(&o.j);
		tb_json_key(&o.j, "k");
		tb_json_end_object(&o.j);
		break;
	case 5: { /* too deep */
		int i;

		for (i = 0; i < TB_JSON_MAX_DEPTH + 1; i++)
			tb_json_begin_array(&o.j);
		break;
	}
	}
	err = tb_json_error(&o.j);
	fclose(o.f);
	free(o.buf);
	return err;
}

static void test_misuse(void **state)
{
	int k;

	(void)state;
	for (k = 0; k <= 5; k++)
		assert_int_equal(misuse(k), -EINVAL);
}

static void test_write_error(void **state)
{
	struct tb_json j;
	FILE *f = fopen("/dev/full", "w");

	(void)state;
	if (!f)
		skip();
	setvbuf(f, NULL, _IONBF, 0);
	tb_json_init(&j, f);
	tb_json_begin_array(&j);
	tb_json_string(&j, "hello");
	tb_json_end_array(&j);
	assert_int_equal(tb_json_error(&j), -ENOSPC);
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_control_chars),
		cmocka_unit_test(test_quotes_backslash),
		cmocka_unit_test(test_utf8_valid),
		cmocka_unit_test(test_utf8_invalid),
		cmocka_unit_test(test_keys_escaped),
		cmocka_unit_test(test_ts),
		cmocka_unit_test(test_dur),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_doubles_like_printf),
		cmocka_unit_test(test_structure),
		cmocka_unit_test(test_misuse),
		cmocka_unit_test(test_write_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
