/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * cats.h - the category rules (tracebpf/cats.h) as commands build them:
 * `record --categories/--exclude-categories`, `ctl enable|disable
 * CATEGORY`, and their description in messages and `ctl status`.
 */
#ifndef TRACEBPF_USER_CATS_H
#define TRACEBPF_USER_CATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tracebpf/cats.h"

/* The rules of a recording: "+GLOB" for each of the comma-separated
 * include (all, "+*", when NULL), then "-GLOB" for each of exclude (none
 * when NULL). 0, or -EINVAL with *why saying what is wrong. gen is left
 * as it was. */
int tb_cats_build(struct tracebpf_cats *k, const char *include, const char *exclude,
		  const char **why);

/* glob turned on (or off): its earlier entries go, "+glob" ("-glob") is
 * appended. 0, or -EINVAL (*why) when it is not a valid glob or the rules
 * are full. */
int tb_cats_change(struct tracebpf_cats *k, const char *glob, bool on, const char **why);

/* The rules as one line: "all", "none", or the entries separated by
 * spaces ("+io +net* -net.debug"). */
void tb_cats_describe(const char *rules, uint32_t len, char *buf, size_t n);

#endif
