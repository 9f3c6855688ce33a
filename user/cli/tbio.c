// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* tbio.c - inputs and outputs of the reading commands (cli.h). */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <zlib.h>

#include "cli/cli.h"

volatile int tb_io_stop;

static void on_stop(int sig)
{
	(void)sig;
	tb_io_stop = 1;
}

void tb_io_catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop };   /* no SA_RESTART */

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int tb_io_open(struct tb_reader **r, const char *cmd, const char *in,
	       const char *connect, int follow)
{
	const char *name = connect ? connect : strcmp(in, "-") ? in : "<stdin>";
	const char *hint = NULL;
	int err;

	if (connect) {
		err = tb_reader_connect(r, connect);
	} else {
		err = tb_reader_open(r, in);
		if (!err && follow)
			tb_reader_set_follow(*r, &tb_io_stop);
	}
	if (!err)
		return 0;
	switch (err) {
	case -EINVAL:
		hint = "this is not a tracebpf trace (no TRACEBPF magic at its start)";
		break;
	case -EPROTONOSUPPORT:
		hint = "the trace was written by a newer tracebpf (a newer major "
		       "format version): read it with that version";
		break;
	case -EBADMSG:
		hint = "the file header is corrupt (CRC mismatch or impossible size)";
		break;
	case -ECONNREFUSED:
	case -ENOENT:
		if (connect)
			hint = "is 'tracebpf record --serve PATH' running with that path?";
		break;
	}
	fprintf(stderr, "tracebpf: %s: failed to %s '%s': %s\n", cmd,
		connect ? "connect to" : "open", name, strerror(-err));
	if (hint)
		fprintf(stderr, "tracebpf: %s: hint: %s\n", cmd, hint);
	return err;
}

int tb_io_check_distinct(const char *cmd, const char *in, const char *out)
{
	struct stat a, b;

	if (!in || !out || !strcmp(in, "-") || !strcmp(out, "-") ||
	    stat(in, &a) || stat(out, &b) || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return 0;
	fprintf(stderr, "tracebpf: %s: failed to write '%s': it is the trace being read\n",
		cmd, out);
	fprintf(stderr, "tracebpf: %s: hint: write to another file\n", cmd);
	return -EEXIST;
}

void tb_io_report_end(const char *cmd, struct tb_reader *r, int connected)
{
	if (tb_reader_tail_reason(r))
		fprintf(stderr, "tracebpf: %s: warning: the trace ends with %" PRIu64
			" unreadable bytes (%s); read everything before them\n", cmd,
			tb_reader_tail_bytes(r), tb_reader_tail_reason(r));
	if (connected && !tb_reader_finished(r) && !tb_io_stop)
		fprintf(stderr, "tracebpf: %s: warning: the recorder closed the connection "
			"before the end of the trace (it stopped, or cut this client off "
			"for falling behind: see its stderr)\n", cmd);
}

static ssize_t gz_write(void *cookie, const char *buf, size_t n)
{
	int w;

	if (!n)
		return 0;
	w = gzwrite(cookie, buf, (unsigned)n);
	return w <= 0 ? -1 : w;
}

static int gz_close(void *cookie)
{
	return gzclose(cookie) == Z_OK ? 0 : -1;
}

FILE *tb_io_gz_wrap(FILE *f)
{
	cookie_io_functions_t io = { .write = gz_write, .close = gz_close };
	int fd = dup(fileno(f));
	gzFile gz;
	FILE *g;

	if (fd < 0)
		return NULL;
	gz = gzdopen(fd, "wb6");
	if (!gz) {
		close(fd);
		return NULL;
	}
	g = fopencookie(gz, "w", io);
	if (!g)
		gzclose(gz);
	return g;
}

long tb_io_arg_range(struct argp_state *state, const char *arg, long lo, long hi,
		     const char *what, const char *unit)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < lo || v > hi)
		argp_error(state, "invalid %s '%s': give %ld to %ld%s%s", what, arg, lo, hi,
			   unit ? " " : "", unit ? unit : "");
	return v;
}

error_t tb_io_source_parse(int key, char *arg, struct argp_state *state)
{
	struct tb_io_source *a = state->input;

	switch (key) {
	case 'f': a->follow = 1; break;
	case 'c': a->connect = arg; break;
	case ARGP_KEY_ARG:
		if (a->in)
			argp_error(state, "one trace at a time");
		a->in = arg;
		break;
	case ARGP_KEY_END:
		if (!a->in && !a->connect)
			argp_error(state, "give the trace file (FILE.tbt, - for stdin) or --connect SOCKET");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

int tb_io_open_source(struct tb_reader **r, const char *cmd, const struct tb_io_source *src)
{
	return tb_io_open(r, cmd, src->in ? src->in : "-", src->connect, src->follow);
}

int tb_parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}
