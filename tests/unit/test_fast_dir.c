// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_fast_dir.c - the fast path's directories (user/fast/fast_dir.c), in a
 * scratch directory of an ordinary file system: the walk that removes a
 * process's directory never follows a link (a link to a directory of
 * root's is unlinked, what it leads to stays) and goes no deeper than the
 * recorder's own trees (a tree 5,000 deep is left, without a crash: the
 * old recursion took a frame and a path per level); a directory the
 * recorder makes is root's, of its mode, and one that is a link, a file
 * or another user's is refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../user/fast/fast_dir.c"
#include "tmpdir.h"

static char dir[] = "/tmp/tb-fastdir-XXXXXX";
static int dfd = -1;
static void put_file(int at, const char *name, const char *text)
{
	int fd = openat(at, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static bool exists(const char *name)
{
	struct stat st;

	return !fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW);
}

/* proc/ holds a pin-like file, a directory with a file, and a link to
 * keep/, whose file must outlive the removal of proc/. */
static void test_remove_follows_no_link(void **state)
{
	(void)state;
	assert_int_equal(mkdirat(dfd, "keep", 0755), 0);
	put_file(dfd, "keep/victim", "root's own");
	assert_int_equal(mkdirat(dfd, "proc", 0711), 0);
	put_file(dfd, "proc/f0", "a pin");
	assert_int_equal(mkdirat(dfd, "proc/sub", 0700), 0);
	put_file(dfd, "proc/sub/x", "x");
	assert_int_equal(symlinkat("../keep", dfd, "proc/link"), 0);
	assert_int_equal(symlinkat("../keep/victim", dfd, "proc/ctl"), 0);
	fast_dir_remove(dfd, "proc", true);   /* a link named ctl is no switch */
	assert_false(exists("proc"));
	assert_true(exists("keep/victim"));
	assert_true(exists("keep"));
}

/* A link where the directory was: the link goes, not what it leads to. */
static void test_remove_a_link_itself(void **state)
{
	(void)state;
	assert_int_equal(mkdirat(dfd, "keep2", 0755), 0);
	put_file(dfd, "keep2/victim", "root's own");
	assert_int_equal(symlinkat("keep2", dfd, "proc2"), 0);
	fast_dir_remove(dfd, "proc2", true);
	assert_false(exists("proc2"));
	assert_true(exists("keep2/victim"));
}

/* 5,000 levels: removed as deep as REMOVE_DEPTH, the rest left. */
static void test_remove_a_deep_tree(void **state)
{
	char name[16];
	int at = dup(dfd);

	(void)state;
	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "%s", i ? "a" : "deep");
		assert_int_equal(mkdirat(at, name, 0700), 0);
		int next = openat(at, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		assert_true(next >= 0);
		close(at);
		at = next;
	}
	put_file(at, "bottom", "deep");
	close(at);
	fast_dir_remove(dfd, "deep", false);
	/* opened down to REMOVE_DEPTH (3) below "deep": what lies deeper is
	 * none of the recorder's, and stays */
	assert_true(exists("deep/a/a/a/a"));
}

static void test_make_refuses_links_files_and_others(void **state)
{
	struct stat st;
	int fd;

	(void)state;
	assert_int_equal(symlinkat("keep", dfd, "ln"), 0);
	assert_int_equal(fast_dir_make(dfd, "ln", 0711, "ln"), -EPERM);
	put_file(dfd, "file", "not a directory");
	assert_int_equal(fast_dir_make(dfd, "file", 0711, "file"), -EPERM);
	fd = fast_dir_make(dfd, "mine", 0711, "mine");
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0711);
	close(fd);
	assert_int_equal(fchmodat(dfd, "mine", 0777, 0), 0);
	fd = fast_dir_make(dfd, "mine", 0711, "mine");   /* its mode set again */
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0711);
	close(fd);
	if (geteuid() != 0)
		skip();   /* another user's directory needs root to make */
	assert_int_equal(mkdirat(dfd, "theirs", 0777), 0);
	assert_int_equal(fchownat(dfd, "theirs", 65534, 65534, 0), 0);
	assert_int_equal(fast_dir_make(dfd, "theirs", 0711, "theirs"), -EPERM);
}

static int setup(void **state)
{
	if (tmpdir_make(dir, NULL, 0, NULL))
		return -1;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*state = dir;
	return dfd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	char cmd[64];

	(void)state;
	close(dfd);
	/* with the deep tree the test left below REMOVE_DEPTH */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) ? -1 : 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_remove_follows_no_link),
		cmocka_unit_test(test_remove_a_link_itself),
		cmocka_unit_test(test_remove_a_deep_tree),
		cmocka_unit_test(test_make_refuses_links_files_and_others),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
