// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fuzz_reader.c - libFuzzer target: any bytes as a trace file, read with
 * every stream, with the index (seek) path, converted to JSON, converted
 * again through the filters and --split, and summarized by tracebpf
 * report (text and JSON, then with the filters). Must never crash, hang
 * or allocate without bound (-rss_limit_mb), and what convert and report
 * say they wrote must be there and be JSON.
 *
 * An input is a spec line, then the trace:
 *
 *     p=100,101 t=101 c=app,m* n=w?rk T=1ms,+2ms s=1024 j\n<trace bytes>
 *
 * The spec is the bytes before the first '\n' in the first SPEC_MAX bytes
 * (none there: no spec, the whole input is the trace). Its words, split at
 * spaces, are p= --pid, t= --tid, c= --cat, n= --name, T= --time (each
 * value given to lib/filter.c's parser as the option's argument: a bad
 * one is left out), s= the --split size in bytes (SPLIT_MIN..SPLIT_MAX,
 * SPLIT_DEFAULT without it: small, so that an input makes many parts),
 * and j: the filtered report as JSON instead of text. Other words are
 * ignored. Each input is then
 *  1. read with the index path (user stream only);
 *  2. converted (tb_convert_file), converted to Perfetto's format
 *     (tb_pftrace_run, plain and compressed) and reported (text, JSON)
 *     whole;
 *  3. converted with the filters (tb_convert, when any was given) to one
 *     file, and with the filters and --split to OUT-001.json, ... in a
 *     private scratch directory, emptied after each run;
 *  4. reported with the filters.
 * Checked, abort() when not (libFuzzer reports it as a crash): every JSON
 * that convert or report wrote when it returned 0 is one valid JSON object
 * (valid UTF-8); every Perfetto trace written is a Trace of whole packets
 * (their fields whole inside them), and the conversion to it fails exactly
 * when the JSON's does; the filtered and split runs leave exactly their files when
 * they return 0 (OUT-001.json to OUT-N.json, no gap, no temporary) and
 * nothing when they fail; and they fail exactly when the whole conversion
 * does (both read the same trace).
 *
 * tests/fuzz/corpus: every seed is a spec line and a trace.
 *  - v1.0, v2.0-cut, v2.0-packed, v2.1-kpack: no filter (the line is
 *    "s=4096"): older formats, a torn file, packed and KPACK chunks;
 *  - mt-*: tests/data's golden traces of mt_events (one process, two
 *    worker threads: work slices, tick instants, a done counter) with
 *    filters that keep part of them: a worker's tid, a time window, a
 *    category or name glob, --split 256 to 2048 (2 to 15 parts);
 *  - gaps: the trace test_gaps in tests/unit/test_convert.c writes (async
 *    slices and flows across lost records), with a time window so that a
 *    pair begins inside it and ends after it, and --split 256;
 *  - gaps-split: that trace with --split 256 alone (8 parts: pairs that
 *    begin in one part and end in a later one);
 *  - scenario: the trace test_scenario there writes (a fork and an exec,
 *    unresolved and faulted sites, odd arguments), its child's pid and
 *    a name glob, --split 256, the report as JSON;
 *  - sched-break: mt-child as the fuzzer changed it (a part copied over
 *    another), whose switches break a CPU's chain where the break's mark
 *    is the first event queued: the queue popped it with no heap made
 *    yet (&out[0] of a NULL out, undefined).
 */
#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/convert/convert.h"
#include "../../lib/perfetto/pftrace.h"
#include "../../lib/filter.h"
#include "../../lib/include/tracebpf/reader.h"
#include "../../lib/format/tbfile.h"
#include "../../user/report/report.h"
#include "../../user/tracebpf.h"
#include "../unit/tmpdir.h"

#define SPEC_MAX 128
#define SPLIT_MIN 256
#define SPLIT_MAX (1u << 20)
#define SPLIT_DEFAULT 2048
#define JSON_DEPTH 64          /* deeper than the writer goes (TB_JSON_MAX_DEPTH) */

static char scratch[64];      /* the private directory for convert's files */

/* --------------------------------------------------- a strict JSON check -- */

struct jcur {
	const unsigned char *p, *end;
};

static bool j_value(struct jcur *c, int depth);

static void j_space(struct jcur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' ||
				 *c->p == '\r'))
		c->p++;
}

static bool j_eat(struct jcur *c, char ch)
{
	j_space(c);
	if (c->p < c->end && *c->p == (unsigned char)ch) {
		c->p++;
		return true;
	}
	return false;
}

static bool j_cont(const unsigned char *p, const unsigned char *end, int n)
{
	for (int i = 1; i <= n; i++)
		if (p + i >= end || (p[i] & 0xc0) != 0x80)
			return false;
	return true;
}

/* One UTF-8 sequence at c->p (shortest form, no surrogate, <= U+10FFFF). */
static bool j_utf8(struct jcur *c)
{
	const unsigned char *p = c->p;
	int n = *p >= 0xc2 && *p <= 0xdf ? 1 : *p >= 0xe0 && *p <= 0xef ? 2 :
		*p >= 0xf0 && *p <= 0xf4 ? 3 : -1;

	if (n < 0 || !j_cont(p, c->end, n))
		return false;
	if ((*p == 0xe0 && p[1] < 0xa0) || (*p == 0xed && p[1] > 0x9f) ||
	    (*p == 0xf0 && p[1] < 0x90) || (*p == 0xf4 && p[1] > 0x8f))
		return false;
	c->p += n + 1;
	return true;
}

static bool j_escape(struct jcur *c)
{
	if (c->p >= c->end)
		return false;
	if (strchr("\"\\/bfnrt", *c->p) && *c->p) {
		c->p++;
		return true;
	}
	if (*c->p++ != 'u' || c->end - c->p < 4)
		return false;
	for (int i = 0; i < 4; i++, c->p++)
		if (!strchr("0123456789abcdefABCDEF", *c->p) || !*c->p)
			return false;
	return true;
}

static bool j_string(struct jcur *c)
{
	if (!j_eat(c, '"'))
		return false;
	while (c->p < c->end && *c->p != '"') {
		if (*c->p < 0x20)
			return false;
		if (*c->p == '\\') {
			c->p++;
			if (!j_escape(c))
				return false;
		} else if (*c->p >= 0x80) {
			if (!j_utf8(c))
				return false;
		} else {
			c->p++;
		}
	}
	return j_eat(c, '"');
}

static size_t j_digits(struct jcur *c)
{
	const unsigned char *p = c->p;

	while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
		c->p++;
	return (size_t)(c->p - p);
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool j_number(struct jcur *c)
{
	const unsigned char *int_part;

	j_eat(c, '-');
	int_part = c->p;
	if (!j_digits(c) || (*int_part == '0' && c->p - int_part > 1))
		return false;
	if (c->p < c->end && *c->p == '.' && (c->p++, !j_digits(c)))
		return false;
	if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
		c->p++;
		if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
			c->p++;
		if (!j_digits(c))
			return false;
	}
	return true;
}

static bool j_word(struct jcur *c, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n))
		return false;
	c->p += n;
	return true;
}

/* The items of an array or an object after its '[' or '{', up to close. */
static bool j_items(struct jcur *c, char close, int depth)
{
	if (j_eat(c, close))
		return true;
	do {
		if (close == '}' && !(j_string(c) && j_eat(c, ':')))
			return false;
		if (!j_value(c, depth + 1))
			return false;
	} while (j_eat(c, ','));
	return j_eat(c, close);
}

static bool j_value(struct jcur *c, int depth)
{
	j_space(c);
	if (depth > JSON_DEPTH || c->p >= c->end)
		return false;
	switch (*c->p) {
	case '{':
		c->p++;
		return j_items(c, '}', depth);
	case '[':
		c->p++;
		return j_items(c, ']', depth);
	case '"':
		return j_string(c);
	case 't':
		return j_word(c, "true");
	case 'f':
		return j_word(c, "false");
	case 'n':
		return j_word(c, "null");
	default:
		return j_number(c);
	}
}

/* Whether d[0..n) is one JSON object and nothing else but white space. */
static bool json_object(const char *d, size_t n)
{
	struct jcur c = { (const unsigned char *)d, (const unsigned char *)d + n };

	j_space(&c);
	if (c.p >= c.end || *c.p != '{' || !j_value(&c, 0))
		return false;
	j_space(&c);
	return c.p == c.end;
}

static void fail(const char *what, const char *name)
{
	fprintf(stderr, "fuzz_reader: %s: %s\n", name, what);
	abort();
}

static void check_json(const char *d, size_t n, const char *name)
{
	if (!json_object(d, n))
		fail("not one valid JSON object", name);
}

/* ---------------------------------------------------------- the spec -- */

struct spec {
	struct tb_filter filter;
	uint64_t split;
	bool json;                /* the filtered report as JSON */
};

static void spec_word(struct spec *s, const char *w)
{
	const char *why, *v = w + 2;
	unsigned long long n;

	if (!strcmp(w, "j")) {
		s->json = true;
		return;
	}
	if (!w[0] || w[1] != '=')
		return;
	switch (w[0]) {
	case 'p':
		(void)tb_filter_add_pids(&s->filter, v, &why);
		break;
	case 't':
		(void)tb_filter_add_tids(&s->filter, v, &why);
		break;
	case 'c':
		(void)tb_filter_add_cats(&s->filter, v, &why);
		break;
	case 'n':
		(void)tb_filter_add_names(&s->filter, v, &why);
		break;
	case 'T':
		(void)tb_filter_set_time(&s->filter, v, &why);
		break;
	case 's':
		n = strtoull(v, NULL, 0);
		s->split = n < SPLIT_MIN ? SPLIT_MIN : n > SPLIT_MAX ? SPLIT_MAX : n;
		break;
	}
}

/* Parses the spec line at the start of d (the header comment) into s and
 * returns its length with its '\n': where the trace begins. */
static size_t spec_parse(struct spec *s, const uint8_t *d, size_t n)
{
	const uint8_t *nl = memchr(d, '\n', n < SPEC_MAX ? n : SPEC_MAX);
	char line[SPEC_MAX], *w, *save;

	*s = (struct spec){ .split = SPLIT_DEFAULT };
	if (!nl)
		return 0;
	memcpy(line, d, (size_t)(nl - d));
	line[nl - d] = '\0';
	for (w = strtok_r(line, " ", &save); w; w = strtok_r(NULL, " ", &save))
		spec_word(s, w);
	return (size_t)(nl - d) + 1;
}

/* -------------------------------------------------------------- runs -- */

static int as_fd(const uint8_t *d, size_t n)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (n && write(fd, d, n) != (ssize_t)n) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The trace in the memfd fd, under a name of its own: each reader opens
 * it anew (an offset of its own). */
static void trace_path(int fd, char *path, size_t len)
{
	snprintf(path, len, "/proc/self/fd/%d", fd);
}

static void read_indexed(const char *trace)
{
	const struct tb_rec_hdr *h;
	struct tb_reader *r;

	if (tb_reader_open(&r, trace))
		return;
	tb_reader_set_streams(r, 1u << TB_STREAM_USER);   /* index path */
	while (tb_reader_next(r, &h) > 0)
		;
	tb_reader_close(r);
}

/* The whole conversion into memory, checked: its result, or 1 when the
 * trace could not be opened. */
static int convert_whole(const char *trace)
{
	struct tb_reader *r;
	char *buf = NULL;
	size_t len = 0;
	FILE *out;
	int err;

	if (tb_reader_open(&r, trace))
		return 1;
	out = open_memstream(&buf, &len);
	if (!out)
		abort();
	err = tb_convert_file(r, out);
	tb_reader_close(r);
	if (fclose(out))
		abort();
	if (!err)
		check_json(buf, len, "tb_convert_file");
	free(buf);
	return err;
}

/* A varint at *p (before end), or false when it runs past end or ten bytes. */
static bool pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; *p < end && shift < 70; shift += 7) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* One protobuf message's fields, each whole inside it. */
static bool pb_message(const uint8_t *p, const uint8_t *end)
{
	uint64_t key, v;

	while (p < end) {
		if (!pb_varint(&p, end, &key) || !(key >> 3))
			return false;
		switch (key & 7) {
		case 0:
			if (!pb_varint(&p, end, &v))
				return false;
			break;
		case 1:
		case 5:
			if ((size_t)(end - p) < ((key & 7) == 1 ? 8u : 4u))
				return false;
			p += (key & 7) == 1 ? 8 : 4;
			break;
		case 2:
			if (!pb_varint(&p, end, &v) || v > (uint64_t)(end - p))
				return false;
			p += v;
			break;
		default:
			return false;
		}
	}
	return true;
}

/* A Perfetto trace: packets (Trace field 1), each a message. */
static void check_pftrace(const char *d, size_t n)
{
	const uint8_t *p = (const uint8_t *)d, *end = p + n;
	uint64_t key, len;

	while (p < end) {
		if (!pb_varint(&p, end, &key) || key != (1 << 3 | 2) ||
		    !pb_varint(&p, end, &len) || len > (uint64_t)(end - p) ||
		    !pb_message(p, p + len))
			fail("not a Perfetto trace of whole packets", "tb_pftrace_run");
		p += len;
	}
}

/* The conversion to Perfetto's format, plain and compressed, into memory:
 * it fails exactly when the JSON's does (both read the same trace), and
 * what it writes is a trace of whole packets. */
static void convert_pftrace(const char *trace, int whole, bool compress)
{
	const struct tb_pftrace_opts o = { .compress = compress };
	enum tb_conv_stage stage;
	struct tb_reader *r;
	char *buf = NULL;
	size_t len = 0;
	FILE *out;
	int err;

	if (tb_reader_open(&r, trace))
		return;
	out = open_memstream(&buf, &len);
	if (!out)
		abort();
	err = tb_pftrace_run(r, out, &o, &stage);
	tb_reader_close(r);
	if (fclose(out))
		abort();
	if (!err != !whole)
		fail(err ? "failed where the JSON did not" : "did not fail where the JSON did",
		     "tb_pftrace_run");
	if (!err)
		check_pftrace(buf, len);
	free(buf);
}

static void report(const char *trace, bool json, bool per_thread, const struct tb_filter *f)
{
	struct tb_reader *r;
	char *buf = NULL;
	size_t len = 0;
	FILE *out;
	int err;

	if (tb_reader_open(&r, trace))
		return;
	out = open_memstream(&buf, &len);
	if (!out)
		abort();
	err = tb_report_file(r, out, json, per_thread, f);
	tb_reader_close(r);
	if (fclose(out))
		abort();
	if (!err && json)
		check_json(buf, len, "tb_report_file --json");
	free(buf);
}

static void check_file(const char *path)
{
	FILE *f = fopen(path, "r");
	struct stat st;
	char *buf;

	if (!f || fstat(fileno(f), &st))
		fail("cannot be read", path);
	buf = malloc((size_t)st.st_size + 1);
	if (!buf || fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size)
		abort();
	fclose(f);
	check_json(buf, (size_t)st.st_size, path);
	free(buf);
}

/* Whether name is part i of a split (OUT-001.json ...), i from 1. */
static bool part_index(const char *name, size_t *i)
{
	char want[64];

	if (sscanf(name, "out-%zu.json", i) != 1 || *i < 1)
		return false;
	snprintf(want, sizeof(want), "out-%03zu.json", *i);
	return !strcmp(name, want);
}

/* Checks what a tb_convert that returned err left in the scratch
 * directory (split: OUT-001.json to OUT-N.json; else one.json; nothing
 * when it failed) and empties it. */
static void check_outputs(int err, bool split)
{
	DIR *dir = opendir(scratch);
	size_t count = 0, top = 0, i;
	struct dirent *e;
	char path[512];

	if (!dir)
		abort();
	while ((e = readdir(dir))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", scratch, e->d_name);
		if (err)
			fail("left behind by a conversion that failed", path);
		if (split ? !part_index(e->d_name, &i) : strcmp(e->d_name, "one.json"))
			fail("not a file this conversion writes", path);
		check_file(path);
		unlink(path);
		count++;
		if (split && i > top)
			top = i;
	}
	closedir(dir);
	if (!err && (count < 1 || (split && top != count)))
		fail(count ? "parts missing between OUT-001.json and the last" :
		     "no file written by a conversion that succeeded", scratch);
}

/* tb_convert with the filters f and, if split, --split split. whole: what
 * the whole conversion returned (1: it could not open the trace). */
static void convert_to(const char *trace, const struct tb_filter *f, uint64_t split,
		       int whole)
{
	char out[128];
	struct tb_convert_opts o = { .in = trace, .out = out, .filter = f, .split = split };
	int err;

	snprintf(out, sizeof(out), "%s/%s", scratch, split ? "out.json" : "one.json");
	err = tb_convert(&o);
	check_outputs(err, split);
	if (whole != 1 && !err != !whole)
		fail(err ? "fails, the whole conversion did not" :
		     "succeeds, the whole conversion failed", split ? "--split" : "filters");
}

/* The library's messages, formatted (their arguments come from the
 * input) and dropped: thousands a second would drown libFuzzer's lines. */
static void print_nowhere(enum tracebpf_print_level level, const char *fmt, va_list ap)
{
	char buf[1024];

	(void)level;
	vsnprintf(buf, sizeof(buf), fmt, ap);
}

static void remove_scratch(void)
{
	tmpdir_remove(scratch);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(scratch, sizeof(scratch), "%s/fuzz_reader.XXXXXX",
		 access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
	if (tmpdir_make(scratch, NULL, 0, NULL))
		fail("mkdtemp failed", scratch);
	atexit(remove_scratch);
	tracebpf_set_print(print_nowhere);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct spec s;
	size_t skip = spec_parse(&s, d, n);
	int fd = as_fd(d + skip, n - skip), whole;
	char trace[64];

	if (fd < 0) {
		tb_filter_free(&s.filter);
		return 0;
	}
	trace_path(fd, trace, sizeof(trace));
	read_indexed(trace);
	whole = convert_whole(trace);
	convert_pftrace(trace, whole, false);
	convert_pftrace(trace, whole, true);
	report(trace, false, true, NULL);
	report(trace, true, true, NULL);
	if (tb_filter_active(&s.filter))
		convert_to(trace, &s.filter, 0, whole);
	convert_to(trace, &s.filter, s.split, whole);
	report(trace, s.json, false, &s.filter);
	close(fd);
	tb_filter_free(&s.filter);
	return 0;
}
