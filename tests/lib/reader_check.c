// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * reader_check.c - a program that knows libtracebpf only as installed:
 * built with `pkg-config --cflags --libs libtracebpf` and nothing of the
 * source tree (tests/integration/test_library.py builds and runs it).
 *
 *   reader_check [-v] json FILE      the Chrome JSON, on stdout
 *   reader_check [-v] ftrace FILE    the ftrace text, then "lines N" on stderr
 *   reader_check [-v] records FILE   "records N": every record, in time order
 *                                     (exit 2 at the first out of order)
 *   reader_check [-v] model FILE     one line per model event, then the
 *                                     threads and the counts
 * -v sets a print function (the library's warnings, on stderr); without it
 * the library must print nothing. Exit 1 when a call fails.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tracebpf/reader.h>

static void print_stderr(enum tracebpf_print_level level, const char *fmt, va_list ap)
{
	fprintf(stderr, "[%s] ", level == TRACEBPF_PRINT_WARN ? "warn" : "info");
	vfprintf(stderr, fmt, ap);
}

static int check_records(struct tracebpf_trace *t)
{
	const struct tracebpf_record *rec;
	uint64_t n = 0, last = 0;
	int ret;

	while ((ret = tracebpf_next_record(t, &rec)) > 0) {
		if (rec->ts < last) {
			fprintf(stderr, "record %" PRIu64 " (type %u) at %" PRIu64
				" after %" PRIu64 "\n", n, rec->type, rec->ts, last);
			return 2;
		}
		if (rec->size < sizeof(*rec)) {
			fprintf(stderr, "record %" PRIu64 ": size %u\n", n, rec->size);
			return 2;
		}
		last = rec->ts;
		n++;
	}
	printf("records %" PRIu64 "\n", n);
	return ret;
}

static void print_arg(const struct tracebpf_arg *a)
{
	printf(" %s=", a->name);
	switch (a->type) {
	case TRACEBPF_ARG_INT:
	case TRACEBPF_ARG_BOOL:
		printf("%" PRId64, a->v.i);
		break;
	case TRACEBPF_ARG_DOUBLE:
		printf("%.17g", a->v.d);
		break;
	case TRACEBPF_ARG_STR:
		printf("\"%.*s\"", (int)a->v.s.len, a->v.s.p ? a->v.s.p : "");
		break;
	default:
		printf("%" PRIu64, a->v.u);
		break;
	}
}

/* A name as one field: its spaces as '_' ("records lost"). */
static void print_name(const char *name, size_t n)
{
	for (size_t i = 0; i < n; i++)
		putchar(name[i] == ' ' ? '_' : name[i]);
}

/* ph ts dur pid tid cat name [args] [unfinished] */
static void on_event(void *ctx, const struct tracebpf_event *e)
{
	(void)ctx;
	printf("event %c %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu32 " %s ", e->ph, e->ts,
	       e->dur, e->pid, e->tid, e->cat);
	print_name(e->name ? e->name : "", e->name ? e->name_len : 0);
	for (int i = 0; i < e->nargs; i++)
		print_arg(&e->args[i]);
	if (e->unfinished)
		printf(" unfinished");
	if (e->lost)
		printf(" lost=%" PRIu64, e->lost);
	putchar('\n');
}

static int on_thread(void *ctx, const struct tracebpf_thread *t)
{
	(void)ctx;
	printf("thread %" PRIu64 " %" PRIu32 " %.*s\n", t->pid, t->tid, (int)t->name_len, t->name);
	return 0;
}

static int on_end(void *ctx, const struct tracebpf_model *m)
{
	struct tracebpf_counts c;

	tracebpf_model_counts(m, &c);
	printf("counts events=%" PRIu64 " drops_total=%" PRIu64 " gaps=%" PRIu64
	       " gap_records=%" PRIu64 " slices_cut_at_gaps=%" PRIu64 "\n", c.events,
	       c.drops_total, c.gaps, c.gap_records, c.slices_cut_at_gaps);
	return tracebpf_model_threads(m, on_thread, ctx);
}

static int run(const char *what, struct tracebpf_trace *t)
{
	const struct tracebpf_model_ops ops = { .event = on_event, .end = on_end };
	long lines;

	if (!strcmp(what, "json"))
		return tracebpf_write_chrome_json(t, stdout);
	if (!strcmp(what, "records"))
		return check_records(t);
	if (!strcmp(what, "model"))
		return tracebpf_model_run(t, &ops);
	if (!strcmp(what, "ftrace")) {
		lines = tracebpf_write_ftrace_text(t, stdout);
		if (lines >= 0)
			fprintf(stderr, "lines %ld\n", lines);
		return lines < 0 ? (int)lines : 0;
	}
	return -EINVAL;
}

int main(int argc, char **argv)
{
	struct tracebpf_trace *t;
	int verbose = argc > 1 && !strcmp(argv[1], "-v"), err;

	if (argc != 3 + verbose) {
		fprintf(stderr, "usage: reader_check [-v] json|ftrace|records|model FILE\n");
		return 64;
	}
	if (verbose)
		tracebpf_set_print(print_stderr);
	err = tracebpf_open(&t, argv[2 + verbose]);
	if (err) {
		fprintf(stderr, "open %s: %s\n", argv[2 + verbose], strerror(-err));
		return 1;
	}
	err = run(argv[1 + verbose], t);
	if (!err && tracebpf_tail_reason(t))
		fprintf(stderr, "tail %" PRIu64 " bytes: %s\n", tracebpf_tail_bytes(t),
			tracebpf_tail_reason(t));
	fflush(stdout);
	tracebpf_close(t);
	if (err > 0)
		return err;
	if (err)
		fprintf(stderr, "%s: %s\n", argv[1 + verbose], strerror(-err));
	return err ? 1 : 0;
}
