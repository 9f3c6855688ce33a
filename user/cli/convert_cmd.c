// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert_cmd.c - tracebpf convert's command: the input it opens (a file,
 * stdin, a --serve socket, --follow), the output it creates (a temporary
 * renamed over the JSON at the end, gzip, a pipe) and its error messages.
 * The conversion itself is libtracebpf's (lib/convert/convert.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "convert/convert.h"
#include "format/outfile.h"
#include "perfetto/pftrace.h"
#include "cli/cli.h"
#include "tracebpf.h"

#define PFX "tracebpf: convert: "
#define STR_(x) #x
#define STR(x) STR_(x)

static const char *open_hint(int err)
{
	switch (err) {
	case -EINVAL:
		return "this is not a tracebpf trace file (no TRACEBPF magic at its "
		       "start); 'tracebpf record -o FILE.tbt' writes one";
	case -EPROTONOSUPPORT:
		return "the trace was written by a newer tracebpf (format major "
		       "version above " STR(TB_FORMAT_MAJOR) "); convert it with "
		       "that version";
	case -EBADMSG:
		return "the file header is corrupt (CRC mismatch or impossible size); "
		       "nothing in the file can be trusted";
	case -ENOENT:
		return "check the path; 'tracebpf record -o FILE.tbt' writes a trace";
	default:
		return NULL;
	}
}

/* Counts what goes through to `to`: the size of a JSON written into a
 * pipe or through gzip (what a viewer reads once it is decompressed). */
struct counted {
	FILE *to;
	uint64_t n;
};

static ssize_t counted_write(void *cookie, const char *buf, size_t n)
{
	struct counted *c = cookie;

	if (fwrite(buf, 1, n, c->to) != n)
		return -1;
	c->n += n;
	return (ssize_t)n;
}

/* out, a device, FIFO or root's symbolic link (outfile.h: never another
 * user's), written through, never replaced. */
static int open_through(const char *out, const char *out_name, FILE **f)
{
	char buf[160];
	int fd = tb_out_open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600), err;

	if (fd >= 0 && (*f = fdopen(fd, "w")))
		return 0;
	err = fd < 0 ? fd : -errno;
	if (fd >= 0)
		close(fd);
	tb_convert_fail("open", out_name, err, tb_out_hint(out, err, buf, sizeof(buf)));
	return err;
}

static FILE *count_wrap(FILE *to, struct counted *c)
{
	cookie_io_functions_t io = { .write = counted_write };
	FILE *f;

	c->to = to;
	f = fopencookie(c, "w", io);
	if (f)
		setvbuf(f, NULL, _IOFBF, 1 << 16);
	return f;
}

/* The conversion, in the format asked for. */
static int run(struct tb_reader *r, FILE *out, const struct tb_convert_opts *o,
	       const char *out_name, const uint64_t *written, enum tb_conv_stage *stage)
{
	const struct tb_pftrace_opts po = { .compress = o->compress, .filter = o->filter,
					    .verbose = o->verbose, .split = o->split,
					    .split_base = o->out };

	if (o->perfetto)
		return tb_pftrace_run(r, out, &po, stage);
	return tb_convert_run(r, out, o, out_name, written, stage);
}

int tb_convert(const struct tb_convert_opts *o)
{
	const char *in = o->in ? o->in : "-", *out = o->out ? o->out : "-";
	const char *in_name = strcmp(in, "-") ? in : "<stdin>";
	const char *out_name = strcmp(out, "-") ? out : "<stdout>";
	struct tb_reader *r = NULL;
	char *tmp = NULL;
	FILE *f = NULL, *gz = NULL, *counter = NULL;
	struct counted count = { 0 };
	enum tb_conv_stage stage;
	struct stat st;
	int err;

	if (!o->connect && (err = tb_io_check_distinct("convert", in, out)))
		return err;
	if (o->follow || o->connect)
		tb_io_catch_signals();   /* Ctrl-C ends the input, not the JSON */
	if (o->follow || o->connect) {
		err = tb_io_open(&r, "convert", in, o->connect, o->follow);
		if (err)
			return err;
	} else {
		err = tb_reader_open(&r, in);
		if (err) {
			tb_convert_fail("open", in_name, err, open_hint(err));
			return err;
		}
	}
	if (o->split) {
		/* parts are files of their own, created as they begin */
		if (!strcmp(out, "-") || tb_is_gz(out)) {
			err = -EINVAL;
			tb_print(PFX "--split writes files NAME-001.json, ...: give "
				"-o NAME.json (neither stdout nor .gz)\n");
			goto out;
		}
	} else if (strcmp(out, "-") == 0) {
		f = stdout;
	} else if (lstat(out, &st) == 0 && !S_ISREG(st.st_mode)) {
		if ((err = open_through(out, out_name, &f)))
			goto out;
	} else if ((err = tb_convert_create_tmp(out, out_name, &tmp, &f))) {
		goto out;
	}

	if (!o->split && tb_is_gz(out)) {
		gz = tb_io_gz_wrap(f);
		if (!gz) {
			err = -ENOMEM;
			tb_convert_fail("create", out_name, err, NULL);
			goto out;
		}
	}
	if (!o->split && ftello(gz ? gz : f) < 0)
		counter = count_wrap(gz ? gz : f, &count);
	err = run(r, counter ? counter : gz ? gz : f, o, out_name, counter ? &count.n : NULL,
		  &stage);
	if (counter && fclose(counter) && !err) {
		err = -EIO;
		stage = TB_STAGE_WRITE;
	}
	if (gz) {
		if (fclose(gz) && !err) {
			err = -EIO;
			stage = TB_STAGE_WRITE;
		}
		gz = NULL;
	}
	if (!err && o->connect)
		tb_io_report_end("convert", r, 1);
	if (err) {
		if (stage == TB_STAGE_READ)
			tb_convert_fail("read", in_name, err, NULL);
		else if (stage == TB_STAGE_WRITE)
			tb_convert_fail("write", out_name, err, tb_write_hint(err));
		else if (stage != TB_STAGE_SAID)
			tb_convert_fail("convert", in_name, err, NULL);
		goto out;
	}
	if (tmp) {
		err = fclose(f) ? -errno : 0;
		f = NULL;
		if (err) {
			tb_convert_fail("write", out_name, err, NULL);
			goto out;
		}
		if (rename(tmp, out)) {
			err = -errno;
			tb_convert_fail("rename", tmp, err, NULL);
			goto out;
		}
		free(tmp);
		tmp = NULL;
	}
out:
	if (f && f != stdout)
		fclose(f);
	if (tmp) {
		unlink(tmp);
		free(tmp);
	}
	tb_reader_close(r);
	return err;
}

/* `tracebpf convert`'s options. */
struct convert_args {
	struct tb_io_source src;   /* first: tb_io_source_parse's state->input */
	const char *out;
	bool verbose;
	struct tb_filter_args filter;   /* tb_filter_argp's input */
	size_t split;
	const char *format;
	bool compress;
};

enum { OPT_SPLIT = 2000, OPT_FORMAT, OPT_COMPRESS };

static const struct argp_option convert_options[] = {
	{ "output", 'o', "FILE", 0, "Output file (default: the input with .json; - for stdout; "
				     "FILE.json.gz is gzip-compressed; FILE.pftrace or "
				     "FILE.perfetto-trace is Perfetto's format)", 0 },
	{ "format", OPT_FORMAT, "FORMAT", 0, "json (Chrome trace JSON) or perfetto (Perfetto's "
					     "protobuf trace); default: by the output's name, "
					     "else json", 0 },
	{ "compress", OPT_COMPRESS, NULL, 0, "perfetto: deflate the packets in groups "
					     "(compressed_packets), about 5 times smaller", 0 },
	{ "follow", 'f', NULL, 0, "Read a trace still being written, until the recorder "
				  "finishes it or Ctrl-C", 0 },
	{ "connect", 'c', "SOCKET", 0, "Read a live recording from 'record --serve SOCKET'", 0 },
	{ "verbose", 'v', NULL, 0, "Say more", 0 },
	{ "split", OPT_SPLIT, "SIZE", 0, "Write OUT-001.json, OUT-002.json, ... of about "
					 "SIZE each (K/M/G suffix, at least 64K) instead of "
					 "OUT.json, each a trace of its own", 0 },
	{ 0 },
};

/* "tracebpf: convert: bad --OPT 'ARG': WHY", then argp's "Try --help"
 * and exit 64. */
static void bad_option(struct argp_state *state, const char *opt, const char *arg,
		       const char *why)
{
	fprintf(stderr, "tracebpf: convert: bad --%s '%s': %s\n", opt, arg, why);
	argp_state_help(state, stderr, ARGP_HELP_STD_ERR);
}

static error_t convert_parse(int key, char *arg, struct argp_state *state)
{
	struct convert_args *a = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		a->filter.cmd = "convert";
		state->child_inputs[0] = &a->filter;
		break;
	case 'o': a->out = arg; break;
	case 'v': a->verbose = true; break;
	case OPT_COMPRESS: a->compress = true; break;
	case OPT_FORMAT:
		if (strcmp(arg, "json") && strcmp(arg, "perfetto"))
			bad_option(state, "format", arg, "give json or perfetto");
		a->format = arg;
		break;
	case OPT_SPLIT:
		if (tb_parse_size(arg, &a->split) || a->split < (64 << 10))
			bad_option(state, "split", arg, "give a size of at least 64K, e.g. 400M");
		break;
	default:   /* the trace source: as dump and info */
		return tb_io_source_parse(key, arg, state);
	}
	return 0;
}

int tb_cmd_convert(int argc, char **argv, const char *cmdline)
{
	static const struct argp_child children[] = { { &tb_filter_argp, 0, NULL, 1 }, { 0 } };
	static const struct argp argp = { convert_options, convert_parse, "FILE.tbt",
					  "Render a trace file as Chrome trace JSON (Perfetto UI, "
					  "chrome://tracing, Chrome DevTools) or in Perfetto's "
					  "protobuf trace format (Perfetto UI, trace_processor).",
					  children, NULL, NULL };
	struct convert_args a = {};
	char out[PATH_MAX];
	struct tb_convert_opts co = {};
	int ret;

	(void)cmdline;
	argp_parse(&argp, argc, argv, 0, NULL, &a);
	if (!a.src.in)
		a.src.in = "-";   /* --connect alone: the output defaults to stdout */
	if (!a.out) {
		size_t len = strlen(a.src.in);
		int base = len > 4 && !strcmp(a.src.in + len - 4, ".tbt") ? (int)len - 4 : (int)len;

		if (!strcmp(a.src.in, "-"))
			snprintf(out, sizeof(out), "-");
		else
			snprintf(out, sizeof(out), "%.*s.%s", base, a.src.in,
				 a.format && !strcmp(a.format, "perfetto") ? "pftrace" : "json");
		a.out = out;
	}
	co.in = a.src.in;
	co.out = a.out;
	co.verbose = a.verbose;
	co.follow = a.src.follow;
	co.connect = a.src.connect;
	co.filter = &a.filter.filter;
	co.split = a.split;
	co.perfetto = a.format ? !strcmp(a.format, "perfetto") : tb_pftrace_name(a.out);
	co.compress = a.compress;
	if (a.compress && !co.perfetto) {
		fprintf(stderr, "tracebpf: convert: --compress is for Perfetto's format: give "
			"--format perfetto or -o NAME.pftrace (NAME.json.gz compresses JSON)\n");
		tb_filter_free(&a.filter.filter);
		return 64;
	}
	if (a.split && (!strcmp(a.out, "-") || tb_is_gz(a.out))) {
		fprintf(stderr, "tracebpf: convert: --split writes files NAME-001.json (or "
			"NAME-001.pftrace), ...: give -o NAME.json or -o NAME.pftrace (neither "
			"stdout nor .gz)\n");
		tb_filter_free(&a.filter.filter);
		return 64;
	}
	ret = tb_convert(&co) ? 1 : 0;
	tb_filter_free(&a.filter.filter);
	return ret;
}
