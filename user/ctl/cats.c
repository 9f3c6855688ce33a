// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cats.c - the category rules as commands build them (cats.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctl/ctl.h"

/* A glob a category list can hold: not empty, no ',' (it separates
 * entries), printable. */
static bool glob_ok(const char *g, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (g[i] == ',' || (unsigned char)g[i] < 0x21 || g[i] == 0x7f)
			return false;
	return true;
}

static int append(struct tracebpf_cats *k, char sign, const char *g, size_t n,
		  const char **why)
{
	if (!glob_ok(g, n)) {
		*why = "a category glob is empty or holds a space, a comma or a control "
		       "character";
		return -EINVAL;
	}
	if (k->len + n + 2 > TRACEBPF_CATS_BYTES) {
		*why = "too many categories (the rules hold 4 KiB)";
		return -EINVAL;
	}
	k->rules[k->len] = sign;
	memcpy(k->rules + k->len + 1, g, n);
	k->rules[k->len + 1 + n] = '\0';
	k->len += (uint32_t)n + 2;
	return 0;
}

static int append_list(struct tracebpf_cats *k, char sign, const char *list, const char **why)
{
	size_t n;
	int err = 0;

	for (const char *p = list; !err; p += n + 1) {
		n = strcspn(p, ",");
		err = append(k, sign, p, n, why);
		if (!p[n])
			break;
	}
	return err;
}

int tb_cats_build(struct tracebpf_cats *k, const char *include, const char *exclude,
		  const char **why)
{
	int err;

	k->len = 0;
	err = append_list(k, '+', include ? include : "*", why);
	if (!err && exclude)
		err = append_list(k, '-', exclude, why);
	return err;
}

/* Takes out every entry for glob g (either sign). */
static void drop(struct tracebpf_cats *k, const char *g)
{
	uint32_t i = 0, n;

	while (i < k->len) {
		n = (uint32_t)strnlen(k->rules + i, k->len - i) + 1;
		if (!strcmp(k->rules + i + 1, g)) {
			memmove(k->rules + i, k->rules + i + n, k->len - i - n);
			k->len -= n;
		} else {
			i += n;
		}
	}
}

int tb_cats_change(struct tracebpf_cats *k, const char *glob, bool on, const char **why)
{
	if (!glob_ok(glob, strlen(glob))) {
		*why = "a category glob is empty or holds a space, a comma or a control "
		       "character";
		return -EINVAL;
	}
	drop(k, glob);
	return append(k, on ? '+' : '-', glob, strlen(glob), why);
}

void tb_cats_describe(const char *rules, uint32_t len, char *buf, size_t n)
{
	size_t off = 0;

	if (len == 3 && !memcmp(rules, "+*", 3)) {
		snprintf(buf, n, "all");
		return;
	}
	buf[0] = '\0';
	for (uint32_t i = 0; i < len && off < n; i += (uint32_t)strnlen(rules + i, len - i) + 1)
		off += (size_t)snprintf(buf + off, n - off, "%s%s", off ? " " : "", rules + i);
	if (!off)
		snprintf(buf, n, "none");
}
