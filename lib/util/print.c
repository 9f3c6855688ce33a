// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * print.c - how libtracebpf says something: through the function the
 * program set with tracebpf_set_print(), never on its own (a library
 * writes nothing to stderr). The tracebpf commands print to stderr.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/print.h"

static tracebpf_print_fn print_fn;

TRACEBPF_API tracebpf_print_fn tracebpf_set_print(tracebpf_print_fn fn)
{
	tracebpf_print_fn old = print_fn;

	print_fn = fn;
	return old;
}

void tb_say(enum tracebpf_print_level level, const char *fmt, ...)
{
	va_list ap;

	if (!print_fn)
		return;
	va_start(ap, fmt);
	print_fn(level, fmt, ap);
	va_end(ap);
}

const char *tb_write_hint(int err)
{
	switch (err) {
	case -ENOSPC:
	case -EDQUOT:
		return "free space on that file system, or write to another one";
	case -EACCES:
	case -EPERM:
	case -EROFS:
		return "write to a directory you may write to";
	case -EBUSY:   /* tb_writer_open: another writer holds the file */
		return "another tracebpf process is writing that file: stop it, or write "
		       "to another file";
	case -EPIPE:
		return "what reads the output stopped reading before the end";
	}
	return NULL;
}

int tb_is_gz(const char *path)
{
	size_t n = strlen(path);

	return n > 3 && !strcmp(path + n - 3, ".gz");
}

void tb_fmt_bytes(char *buf, size_t len, unsigned long long b)
{
	if (b >= 10ull << 20)
		snprintf(buf, len, "%.1f MiB", b / 1048576.0);
	else if (b >= 10ull << 10)
		snprintf(buf, len, "%.1f KiB", b / 1024.0);
	else
		snprintf(buf, len, "%llu B", b);
}
