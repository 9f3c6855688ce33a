/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tmpdir.h - the tests' scratch directory: made from a mkdtemp template
 * at group setup (the fuzz target: at its start), emptied and removed at
 * group teardown (at its exit).
 */
#ifndef TRACEBPF_TEST_TMPDIR_H
#define TRACEBPF_TEST_TMPDIR_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* mkdtemp(dir), then path = dir/name (if path). 0 or -1. */
static inline int tmpdir_make(char *dir, char *path, size_t len, const char *name)
{
	if (!mkdtemp(dir))
		return -1;
	if (path)
		snprintf(path, len, "%s/%s", dir, name);
	return 0;
}

/* Removes every file in dir, then dir. */
static inline void tmpdir_remove(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[512];

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

/* A cmocka group teardown for a group whose setup set *state = dir. */
static inline int tmpdir_teardown(void **state)
{
	tmpdir_remove(*state);
	return 0;
}

#endif
