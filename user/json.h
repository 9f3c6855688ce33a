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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

void tb_json_begin_object(struct tb_json *j);
void tb_json_end_object(struct tb_json *j);
void tb_json_begin_array(struct tb_json *j);
void tb_json_end_array(struct tb_json *j);
/* A line break before the next value or key (after its comma) or closing
 * bracket, e.g. one trace event per line. */
void tb_json_newline(struct tb_json *j);

void tb_json_key(struct tb_json *j, const char *key);
void tb_json_string(struct tb_json *j, const char *s);
/* n bytes of s; NUL bytes are written as \u0000. */
void tb_json_string_n(struct tb_json *j, const char *s, size_t n);
/* One string value written in parts (for text too large to hold in memory):
 * begin, any number of parts, end. A part must not split a UTF-8 sequence
 * (a split one is replaced by U+FFFD like any invalid sequence). */
void tb_json_string_begin(struct tb_json *j);
void tb_json_string_part(struct tb_json *j, const char *s, size_t n);
void tb_json_string_end(struct tb_json *j);
void tb_json_int(struct tb_json *j, int64_t v);
void tb_json_uint(struct tb_json *j, uint64_t v);
/* Shortest text that reads back as v; nan and inf are written as 0: do not
 * pass them. */
void tb_json_double(struct tb_json *j, double v);
void tb_json_bool(struct tb_json *j, bool v);
void tb_json_null(struct tb_json *j);
/* Integer nanoseconds as microseconds with exactly three decimals, no
 * floating point: 1234567 -> 1234.567, 0 -> 0.000. */
void tb_json_ts_ns(struct tb_json *j, uint64_t ns);

/* key + value in one call. */
void tb_json_kstr(struct tb_json *j, const char *key, const char *v);
void tb_json_kint(struct tb_json *j, const char *key, int64_t v);
void tb_json_kuint(struct tb_json *j, const char *key, uint64_t v);
void tb_json_kts(struct tb_json *j, const char *key, uint64_t ns);
/* The duration of a slice that starts at ts (integer ns), written so that
 * a viewer adding "ts" and "dur" as doubles (they all do) gets exactly the
 * double its end, ts + dur, reads back as: equal ends stay equal and a
 * slice never ends past one that ends later or at the same ns. Three
 * decimals when they already add up; otherwise the exact double that
 * does (for example 554.175999879837 where 554.176 would end 0.2 ps late). */
void tb_json_kdur(struct tb_json *j, const char *key, uint64_t ts, uint64_t dur);

#endif /* TRACEBPF_JSON_H */
