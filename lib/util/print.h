/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * print.h - libtracebpf's messages (tracebpf_set_print in
 * <tracebpf/reader.h>) and the texts every command shares.
 */
#ifndef TRACEBPF_PRINT_H
#define TRACEBPF_PRINT_H

#include "tracebpf/reader.h"

/* A message, through the program's print function (none: nothing). Each
 * is whole lines, "tracebpf: CMD: ..." ending with a newline. */
void tb_say(enum tracebpf_print_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define tb_print(...) tb_say(TRACEBPF_PRINT_WARN, __VA_ARGS__)

/* What to do after writing an output (a trace, its JSON, stdout) failed
 * with err, or NULL when there is nothing to say. One text for every
 * command. */
const char *tb_write_hint(int err);
/* Whether path names a gzip output (ends with .gz). */
int tb_is_gz(const char *path);
/* A byte count for people: "123 B", "45.6 KiB", "7.8 MiB" (KiB from 10
 * KiB, MiB from 10 MiB). */
void tb_fmt_bytes(char *buf, size_t len, unsigned long long b);

#endif
