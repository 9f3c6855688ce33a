// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * json.c - streaming JSON writer (see json.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"

void tb_json_init(struct tb_json *j, FILE *f)
{
	memset(j, 0, offsetof(struct tb_json, buf));
	j->f = f;
	j->first[0] = true;
}

static void write_out(struct tb_json *j, const char *s, size_t n)
{
	errno = 0;
	if (n && fwrite(s, 1, n, j->f) != n)
		j->err = errno ? -errno : -EIO;
}

static void flush_buf(struct tb_json *j)
{
	if (!j->err)
		write_out(j, j->buf, j->len);
	j->len = 0;
}

int tb_json_error(struct tb_json *j)
{
	flush_buf(j);
	if (j->err)
		return j->err;
	if (ferror(j->f))
		return -EIO;
	return 0;
}

void tb_json__flush(struct tb_json *j)
{
	flush_buf(j);
}

/* A large piece: what is buffered, then the piece itself. */
void tb_json__write(struct tb_json *j, const char *s, size_t n)
{
	flush_buf(j);
	if (!j->err)
		write_out(j, s, n);
}

#define put tb_json__put
#define put1 tb_json__put1

static void puts_(struct tb_json *j, const char *s)
{
	put(j, s, strlen(s));
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is invalid;
 * then *bad is the length of its maximal invalid subpart (>= 1), which is
 * replaced by a single U+FFFD (Unicode 15, 3.9 "U+FFFD substitution"). */
static size_t utf8_seq(const unsigned char *s, size_t n, size_t *bad)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0;      /* no overlongs */
		else if (c == 0xed)
			hi = 0x9f;      /* no surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;      /* no overlongs */
		else if (c == 0xf4)
			hi = 0x8f;      /* nothing above U+10FFFF */
	} else {
		*bad = 1;               /* 80..c1, f5..ff never start a sequence */
		return 0;
	}
	for (i = 1; i < len; i++) {
		if (i >= n || s[i] < lo || s[i] > hi) {
			*bad = i;
			return 0;
		}
		lo = 0x80;
		hi = 0xbf;
	}
	return len;
}


/* The length of the plain prefix of s. */
static inline size_t plain_len(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n && tb_json__plain[s[i]])
		i++;
	return i;
}

static void string_escaped(struct tb_json *j, const unsigned char *s, size_t n);

static inline void string_body(struct tb_json *j, const unsigned char *s, size_t n)
{
	size_t i = plain_len(s, n);

	put(j, (const char *)s, i);
	if (i < n)
		string_escaped(j, s + i, n - i);
}

/* s from its first byte that is not plain. */
static void string_escaped(struct tb_json *j, const unsigned char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i = 0, run = 0;   /* s[i - run, i) is pending verbatim */

	while (i < n) {
		unsigned char c = s[i];
		const char *esc = NULL;
		char u[7];
		size_t len, bad = 1;

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			i++;
			run++;
			continue;
		}
		if (c >= 0x80) {
			len = utf8_seq(s + i, n - i, &bad);
			if (len) {
				i += len;
				run += len;
				continue;
			}
		}
		put(j, (const char *)s + i - run, run);
		run = 0;
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		default:
			break;
		}
		if (esc) {
			puts_(j, esc);
			i++;
		} else if (c < 0x80) {       /* other controls and DEL */
			u[0] = '\\';
			u[1] = 'u';
			u[2] = '0';
			u[3] = '0';
			u[4] = hex[c >> 4];
			u[5] = hex[c & 15];
			put(j, u, 6);
			i++;
		} else {
			puts_(j, "\xef\xbf\xbd");   /* U+FFFD */
			i += bad;
		}
	}
	put(j, (const char *)s + i - run, run);
}

/* s as a JSON string, escaped as needed. */
void tb_json__string(struct tb_json *j, const char *s, size_t n)
{
	put1(j, '"');
	string_body(j, (const unsigned char *)s, n);
	put1(j, '"');
}

void tb_json_string_begin(struct tb_json *j)
{
	tb_json__value_start(j);
	put1(j, '"');
}

void tb_json_string_part(struct tb_json *j, const char *s, size_t n)
{
	string_body(j, (const unsigned char *)s, n);
}

void tb_json_string_end(struct tb_json *j)
{
	put1(j, '"');
}

const char tb_json__pairs[200] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

static const uint64_t pow10_u[20] = {
	1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
	100000000ull, 1000000000ull, 10000000000ull, 100000000000ull,
	1000000000000ull, 10000000000000ull, 100000000000000ull,
	1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
	1000000000000000000ull, 10000000000000000000ull,
};

typedef unsigned __int128 u128;

/* v > 0 a normal double as mant * 2^-shift, mant in [2^52, 2^53). */
static uint64_t split_double(double v, int *shift)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	*shift = 1075 - (int)((bits >> 52) & 0x7ff);
	return (bits & ((1ull << 52) - 1)) | (1ull << 52);
}

/* The exact value of mant * 2^-shift * 10^k rounded half to even: the
 * digits printf writes. 3 <= shift <= 120, k <= 19. */
static uint64_t scaled_digits(uint64_t mant, int shift, int k)
{
	u128 x = (u128)mant * pow10_u[k], rem, half;
	uint64_t m = (uint64_t)(x >> shift);

	rem = x & (((u128)1 << shift) - 1);
	half = (u128)1 << (shift - 1);
	if (rem > half || (rem == half && (m & 1)))
		m++;
	return m;
}

/* Whether strtod reads m / 10^k back as mant * 2^-shift: the decimal lies
 * between the midpoints to the neighbouring doubles (a tie goes to the
 * even mantissa). m < 10^17, shift <= 66: every product fits 128 bits. */
static bool reads_back(uint64_t m, int k, uint64_t mant, int shift)
{
	u128 d = (u128)m << (shift + 1), up = (u128)(2 * mant + 1) * pow10_u[k], lo;

	if (d > up || (d == up && (mant & 1)))
		return false;
	if (mant == 1ull << 52) {   /* the double below is half as far */
		d <<= 1;
		lo = (u128)(4 * mant - 1) * pow10_u[k];
		return d >= lo;
	}
	lo = (u128)(2 * mant - 1) * pow10_u[k];
	return d > lo || (d == lo && !(mant & 1));
}

/* "%.Pg" of v (P = 15, 16 or 17), in the C locale, without printf: its
 * length when it reads back as v, 0 when it does not, -1 when v is
 * outside 1e-4 <= |v| < 1e15 (the caller uses printf). */
static int fmt_g(double v, int prec, char *buf)
{
	double a = v < 0 ? -v : v;
	uint64_t mant, m = 0, lo = pow10_u[prec - 1], hi = pow10_u[prec];
	int x, k = 0, shift;
	char d[24], *p = buf;
	size_t n, i, point;

	if (!(a >= 1e-4 && a < 1e15))
		return -1;
	mant = split_double(a, &shift);
	x = 0;                      /* about log10(a), then fixed by the digits' count */
	while (x < 14 && a >= (double)pow10_u[x + 1])
		x++;
	while (x <= 0 && x > -4 && a < 1 / (double)pow10_u[-x])
		x--;
	for (int tries = 0; tries < 3; tries++) {
		k = prec - 1 - x;
		if (k < 0 || k > 19)
			return -1;
		m = scaled_digits(mant, shift, k);
		if (m >= hi)
			x++;
		else if (m < lo)
			x--;
		else
			break;
	}
	if (m < lo || m >= hi)
		return -1;
	if (!reads_back(m, k, mant, shift))
		return 0;
	n = tb_json__ndigits(m);
	tb_json__digits(d, n, m);
	if (v < 0)
		*p++ = '-';
	if ((size_t)k >= n) {          /* 0.000ddd */
		*p++ = '0';
		*p++ = '.';
		for (i = n; i < (size_t)k; i++)
			*p++ = '0';
		memcpy(p, d, n);
		p += n;
	} else {
		point = n - (size_t)k;
		memcpy(p, d, point);
		p += point;
		*p++ = '.';
		memcpy(p, d + point, (size_t)k);
		p += k;
	}
	while (p[-1] == '0')           /* %g drops trailing zeros... */
		p--;
	if (p[-1] == '.')              /* ...and a bare point */
		p--;
	return (int)(p - buf);
}

void tb_json_double(struct tb_json *j, double v)
{
	char buf[40];
	char *p;

	tb_json__value_start(j);
	if (!isfinite(v)) {
		put1(j, '0');
		return;
	}
	for (int digits = 15; digits <= 17; digits++) {
		int n = fmt_g(v, digits, buf);

		if (n > 0) {
			put(j, buf, (size_t)n);
			return;
		}
		if (n < 0)
			break;
	}
	for (int digits = 15; digits <= 17; digits++) {
		snprintf(buf, sizeof(buf), "%.*g", digits, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	/* Whatever LC_NUMERIC says, JSON's decimal point is '.'. */
	for (p = buf; *p; p++)
		if (*p == ',')
			*p = '.';
	puts_(j, buf);
}

void tb_json_kuint_array(struct tb_json *j, const char *key, const uint32_t *v, size_t n)
{
	tb_json_key(j, key);
	tb_json_begin_array(j);
	for (size_t i = 0; i < n; i++)
		tb_json_uint(j, v[i]);
	tb_json_end_array(j);
}

void tb_json_bool(struct tb_json *j, bool v)
{
	tb_json__value_start(j);
	puts_(j, v ? "true" : "false");
}

void tb_json_null(struct tb_json *j)
{
	tb_json__value_start(j);
	puts_(j, "null");
}

void tb_json_raw(struct tb_json *j, const char *s, size_t n)
{
	tb_json__value_start(j);
	put(j, s, n);
}

void tb_json_begin_array(struct tb_json *j)
{
	tb_json__open(j, '[');
}

/* What a viewer reads "ns / 1000 with three decimals" as: the nearest
 * double. Below 2^53 the integer is exact and the one division rounds
 * correctly; above it (104 days of uptime) the text is parsed, in the C
 * locale whatever LC_NUMERIC says. */
static double us_of(uint64_t ns)
{
	static locale_t c_locale;
	char buf[32];

	if (ns < (UINT64_C(1) << 53))
		return (double)ns / 1000.0;
	if (!c_locale)
		c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
	snprintf(buf, sizeof(buf), "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
	return c_locale ? strtod_l(buf, NULL, c_locale) : strtod(buf, NULL);
}

void tb_json_kdur(struct tb_json *j, const char *key, uint64_t ts, uint64_t dur)
{
	double start = us_of(ts), end = us_of(ts + dur);
	double exact = end - start;   /* exact when start >= end / 2 (Sterbenz) */

	if (start + us_of(dur) == end || start + exact != end) {
		tb_json_kts(j, key, dur);
		return;
	}
	tb_json_key(j, key);
	tb_json_double(j, exact);
}

void tb_json_end_array(struct tb_json *j)
{
	tb_json__close(j, ']');
}
