/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * json.h - a small streaming JSON writer over a FILE *.
 *
 * The writer places the commas and colons; callers only say what comes
 * next. Strings are always valid JSON and valid UTF-8 whatever bytes they
 * are given: `"` and `\` are escaped, every control character (< 0x20 and
 * 0x7f) too, and each invalid UTF-8 sequence (overlong, surrogate, beyond
 * U+10FFFF, truncated, stray continuation byte) becomes one U+FFFD per
 * maximal invalid subpart. Numbers are never nan or inf.
 *
 * Output is buffered in the writer (TB_JSON_BUF bytes) and written to the
 * FILE in large blocks; tb_json_error() writes out what is buffered. Write
 * nothing else to the FILE between tb_json_init() and tb_json_error().
 *
 * Errors are sticky: check tb_json_error() once at the end.
 */
#ifndef TRACEBPF_JSON_H
#define TRACEBPF_JSON_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define TB_JSON_MAX_DEPTH 32
#define TB_JSON_BUF (64 * 1024)

struct tb_json {
	FILE *f;
	size_t len;                      /* bytes pending in buf */
	int depth;
	bool first[TB_JSON_MAX_DEPTH];   /* nothing written yet at this level */
	bool obj[TB_JSON_MAX_DEPTH];     /* this level is an object */
	bool after_key;                  /* a key was written, value is next */
	bool newline;                    /* put a newline before what follows */
	int err;                         /* 0 or -errno, sticky */
	char buf[TB_JSON_BUF];
};

void tb_json_init(struct tb_json *j, FILE *f);
/* Writes what is buffered to the FILE (not fflush()), then returns 0,
 * -EINVAL when the calls did not make valid JSON (unbalanced, a key
 * outside an object, a value without its key, depth exceeded), or
 * -errno (-EIO when the stream does not say) from the FILE. */
int tb_json_error(struct tb_json *j);

static inline void tb_json_begin_object(struct tb_json *j);
static inline void tb_json_end_object(struct tb_json *j);
void tb_json_begin_array(struct tb_json *j);
void tb_json_end_array(struct tb_json *j);
/* A line break before the next value or key (after its comma) or closing
 * bracket, e.g. one trace event per line. */
static inline void tb_json_newline(struct tb_json *j);

static inline void tb_json_key(struct tb_json *j, const char *key);
static inline void tb_json_string(struct tb_json *j, const char *s);
/* n bytes of s; NUL bytes are written as \u0000. */
static inline void tb_json_string_n(struct tb_json *j, const char *s, size_t n);
/* One string value written in parts (for text too large to hold in memory):
 * begin, any number of parts, end. A part must not split a UTF-8 sequence
 * (a split one is replaced by U+FFFD like any invalid sequence). */
void tb_json_string_begin(struct tb_json *j);
void tb_json_string_part(struct tb_json *j, const char *s, size_t n);
void tb_json_string_end(struct tb_json *j);
static inline void tb_json_int(struct tb_json *j, int64_t v);
static inline void tb_json_uint(struct tb_json *j, uint64_t v);
/* Shortest text that reads back as v; nan and inf are written as 0: do not
 * pass them. */
void tb_json_double(struct tb_json *j, double v);
void tb_json_bool(struct tb_json *j, bool v);
void tb_json_null(struct tb_json *j);
/* One whole value, n bytes of JSON text that a writer wrote before
 * (tracebpf convert's memory dumps: docs/output.md, "Memory"): written as
 * it is, with the comma before it; not checked. */
void tb_json_raw(struct tb_json *j, const char *s, size_t n);
/* Integer nanoseconds as microseconds with exactly three decimals, no
 * floating point: 1234567 -> 1234.567, 0 -> 0.000. */
static inline void tb_json_ts_ns(struct tb_json *j, uint64_t ns);

/* key + value in one call. */
static inline void tb_json_kstr(struct tb_json *j, const char *key, const char *v);
static inline void tb_json_kint(struct tb_json *j, const char *key, int64_t v);
static inline void tb_json_kuint(struct tb_json *j, const char *key, uint64_t v);
static inline void tb_json_kts(struct tb_json *j, const char *key, uint64_t ns);
/* key: [v[0], ..., v[n-1]] */
void tb_json_kuint_array(struct tb_json *j, const char *key, const uint32_t *v, size_t n);
/* The duration of a slice that starts at ts (integer ns), written so that
 * a viewer adding "ts" and "dur" as doubles (they all do) gets exactly the
 * double its end, ts + dur, reads back as: equal ends stay equal and a
 * slice never ends past one that ends later or at the same ns. Three
 * decimals when they already add up; otherwise the exact double that
 * does (for example 554.175999879837 where 554.176 would end 0.2 ps late). */
void tb_json_kdur(struct tb_json *j, const char *key, uint64_t ts, uint64_t dur);

/* ------------------------------------------------------------------------
 * Below: the per-value calls, inline so that a caller writing millions of
 * small values (tracebpf convert) pays no call, strlen or copy loop per
 * piece. Nothing here is for callers to use directly.
 */

#define TB_JSON__INLINE static inline __attribute__((always_inline))

void tb_json__flush(struct tb_json *j);
void tb_json__write(struct tb_json *j, const char *s, size_t n);
void tb_json__string(struct tb_json *j, const char *s, size_t n);
extern const char tb_json__pairs[200];
/* Bytes written as they are in a JSON string: printable ASCII but " and \.
 * Here, not in json.c, so that the check of a literal key folds away. */
static const bool tb_json__plain[256] = {
	[0x20 ... 0x21] = true, [0x23 ... 0x5b] = true, [0x5d ... 0x7e] = true,
};

/* memcpy, without a call for the few bytes of a key or a name: fixed-size
 * copies, the last one overlapping (a byte loop would become a call). */
TB_JSON__INLINE void tb_json__copy(char *d, const char *s, size_t n)
{
	if (__builtin_constant_p(n) || n > 32) {
		memcpy(d, s, n);
	} else if (n >= 8) {
		while (n > 8) {
			memcpy(d, s, 8);
			d += 8;
			s += 8;
			n -= 8;
		}
		memcpy(d + n - 8, s + n - 8, 8);
	} else if (n >= 4) {
		memcpy(d, s, 4);
		memcpy(d + n - 4, s + n - 4, 4);
	} else if (n) {
		d[0] = s[0];
		d[n / 2] = s[n / 2];
		d[n - 1] = s[n - 1];
	}
}

/* Room for n more bytes (n <= TB_JSON_BUF / 2). After an error, what is
 * put there is dropped at the next flush (nothing more is written). */
TB_JSON__INLINE char *tb_json__reserve(struct tb_json *j, size_t n)
{
	if (TB_JSON_BUF - j->len < n)
		tb_json__flush(j);
	return j->buf + j->len;
}

TB_JSON__INLINE void tb_json__put(struct tb_json *j, const char *s, size_t n)
{
	char *p;

	if (n > TB_JSON_BUF / 2) {
		tb_json__write(j, s, n);
		return;
	}
	p = tb_json__reserve(j, n);
	tb_json__copy(p, s, n);
	j->len += n;
}

TB_JSON__INLINE void tb_json__put1(struct tb_json *j, char c)
{
	char *p = tb_json__reserve(j, 1);

	*p = c;
	j->len++;
}

TB_JSON__INLINE void tb_json__pending_newline(struct tb_json *j)
{
	if (j->newline)
		tb_json__put1(j, '\n');
	j->newline = false;
}

/* Before any value: the comma, unless it follows a key or comes first. */
TB_JSON__INLINE void tb_json__value_start(struct tb_json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->obj[j->depth])
		j->err = -EINVAL;   /* a value in an object needs a key */
	if (!j->first[j->depth])
		tb_json__put1(j, ',');
	j->first[j->depth] = false;
	tb_json__pending_newline(j);
}

TB_JSON__INLINE void tb_json__open(struct tb_json *j, char c)
{
	tb_json__value_start(j);
	if (j->depth + 1 >= TB_JSON_MAX_DEPTH) {
		j->err = -EINVAL;
		return;
	}
	tb_json__put1(j, c);
	j->depth++;
	j->first[j->depth] = true;
	j->obj[j->depth] = c == '{';
}

TB_JSON__INLINE void tb_json__close(struct tb_json *j, char c)
{
	if (j->depth == 0 || j->after_key || j->obj[j->depth] != (c == '}')) {
		j->err = -EINVAL;
		return;
	}
	tb_json__pending_newline(j);
	j->depth--;
	tb_json__put1(j, c);
}

static inline void tb_json_begin_object(struct tb_json *j) { tb_json__open(j, '{'); }
static inline void tb_json_end_object(struct tb_json *j) { tb_json__close(j, '}'); }

static inline void tb_json_newline(struct tb_json *j)
{
	if (j->depth == 0)
		tb_json__put1(j, '\n');
	else
		j->newline = true;
}

TB_JSON__INLINE bool tb_json__is_plain(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!tb_json__plain[(unsigned char)s[i]])
			return false;
	return true;
}

/* "s" (then c, if not 0) in one piece when s needs no escaping. */
TB_JSON__INLINE void tb_json__quoted(struct tb_json *j, const char *s, size_t n, char c)
{
	char *p;

	if (n <= 256 && tb_json__is_plain(s, n)) {
		p = tb_json__reserve(j, n + 3);
		p[0] = '"';
		tb_json__copy(p + 1, s, n);
		p[n + 1] = '"';
		p[n + 2] = c;
		j->len += n + 2 + !!c;
		return;
	}
	tb_json__string(j, s, n);
	if (c)
		tb_json__put1(j, c);
}

TB_JSON__INLINE void tb_json_key(struct tb_json *j, const char *key)
{
	if (j->after_key || !j->obj[j->depth]) {
		j->err = -EINVAL;
		return;
	}
	if (!j->first[j->depth])
		tb_json__put1(j, ',');
	j->first[j->depth] = false;
	tb_json__pending_newline(j);
	tb_json__quoted(j, key, strlen(key), ':');
	j->after_key = true;
}

TB_JSON__INLINE void tb_json_string_n(struct tb_json *j, const char *s, size_t n)
{
	tb_json__value_start(j);
	tb_json__quoted(j, s, n, 0);
}

TB_JSON__INLINE void tb_json_string(struct tb_json *j, const char *s)
{
	tb_json_string_n(j, s, strlen(s));
}

/* The number of decimal digits of v. */
TB_JSON__INLINE size_t tb_json__ndigits(uint64_t v)
{
	size_t n = 1;

	while (v >= 10000) {
		v /= 10000;
		n += 4;
	}
	return n + (v >= 10) + (v >= 100) + (v >= 1000);
}

/* The len decimal digits of v at p. */
TB_JSON__INLINE void tb_json__digits(char *p, size_t len, uint64_t v)
{
	p += len;
	while (v >= 100) {
		unsigned d = (unsigned)(v % 100) * 2;

		v /= 100;
		*--p = tb_json__pairs[d + 1];
		*--p = tb_json__pairs[d];
	}
	if (v >= 10) {
		*--p = tb_json__pairs[v * 2 + 1];
		*--p = tb_json__pairs[v * 2];
	} else {
		*--p = (char)('0' + v);
	}
}

/* [-]digits of the magnitude m, formatted in the buffer itself. */
TB_JSON__INLINE void tb_json__number(struct tb_json *j, bool neg, uint64_t m)
{
	size_t n = tb_json__ndigits(m);
	char *p = tb_json__reserve(j, 21);

	if (neg)
		*p = '-';
	tb_json__digits(p + neg, n, m);
	j->len += n + neg;
}

TB_JSON__INLINE void tb_json_int(struct tb_json *j, int64_t v)
{
	tb_json__value_start(j);
	/* the magnitude of INT64_MIN does not fit int64_t: negate unsigned */
	tb_json__number(j, v < 0, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
}

TB_JSON__INLINE void tb_json_uint(struct tb_json *j, uint64_t v)
{
	tb_json__value_start(j);
	tb_json__number(j, false, v);
}

TB_JSON__INLINE void tb_json_ts_ns(struct tb_json *j, uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned frac = (unsigned)(ns % 1000);
	size_t n = tb_json__ndigits(us);
	char *p;

	tb_json__value_start(j);
	p = tb_json__reserve(j, 24);
	tb_json__digits(p, n, us);
	p += n;
	p[0] = '.';
	p[1] = (char)('0' + frac / 100);
	p[2] = (char)('0' + frac / 10 % 10);
	p[3] = (char)('0' + frac % 10);
	j->len += n + 4;
}

TB_JSON__INLINE void tb_json_kstr(struct tb_json *j, const char *key, const char *v)
{
	tb_json_key(j, key);
	tb_json_string(j, v);
}

TB_JSON__INLINE void tb_json_kint(struct tb_json *j, const char *key, int64_t v)
{
	tb_json_key(j, key);
	tb_json_int(j, v);
}

TB_JSON__INLINE void tb_json_kuint(struct tb_json *j, const char *key, uint64_t v)
{
	tb_json_key(j, key);
	tb_json_uint(j, v);
}

TB_JSON__INLINE void tb_json_kts(struct tb_json *j, const char *key, uint64_t ns)
{
	tb_json_key(j, key);
	tb_json_ts_ns(j, ns);
}

#endif /* TRACEBPF_JSON_H */
