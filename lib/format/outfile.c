// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* outfile.c - the files a user names for output, opened without following
 * another user's symbolic link (outfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/outfile.h"

/* real[n], a symbolic link, becomes what it points at (a relative target
 * is relative to the link's directory). */
static int follow(char *real, size_t n)
{
	char target[PATH_MAX];
	ssize_t len = readlink(real, target, sizeof(target) - 1);
	const char *slash = strrchr(real, '/');
	size_t dir;

	if (len < 0)
		return -errno;
	target[len] = '\0';
	dir = target[0] == '/' || !slash ? 0 : (size_t)(slash - real) + 1;
	if (dir + (size_t)len >= n)
		return -ENAMETOOLONG;
	memcpy(real + dir, target, (size_t)len + 1);
	return 0;
}

int tb_out_resolve(const char *path, char *real, size_t n, uid_t *uid)
{
	struct stat st;
	int i, err;

	*uid = 0;
	if (snprintf(real, n, "%s", path) >= (int)n)
		return -ENAMETOOLONG;
	for (i = 0; i <= TB_OUT_MAX_LINKS; i++) {
		if (lstat(real, &st) || !S_ISLNK(st.st_mode))
			return 0;   /* nothing there yet, or not a link */
		if (st.st_uid != 0 && st.st_uid != geteuid()) {
			*uid = st.st_uid;
			return -ELOOP;
		}
		if (!strncmp(real, "/proc/", 6))
			return 1;   /* /proc/self/fd/1: the kernel's to follow */
		err = follow(real, n);
		if (err)
			return err;
	}
	return -ELOOP;
}

/* An existing file fd (not one just made) that another user owns: what
 * is written into it would be theirs to read, and a FIFO of theirs theirs
 * to hold. -EPERM, or 0. */
static int foreign(int fd, struct stat *st)
{
	if (fstat(fd, st))
		return -errno;
	return st->st_uid != 0 && st->st_uid != geteuid() ? -EPERM : 0;
}

/* Opened without truncating and without blocking (a FIFO with no reader),
 * so that a file refused is left as it was; then truncated as asked, and
 * back to blocking writes. */
int tb_out_open(const char *path, int flags, mode_t mode)
{
	char real[PATH_MAX];
	struct stat st;
	uid_t uid;
	int ret = tb_out_resolve(path, real, sizeof(real), &uid), fd, err;

	if (ret < 0)
		return ret;
	fd = open(real, (flags & ~O_TRUNC) | O_CLOEXEC | O_NONBLOCK |
		  (ret == 1 ? 0 : O_NOFOLLOW), mode);
	if (fd < 0)
		return -errno;
	err = ret == 1 ? fstat(fd, &st) ? -errno : 0 : foreign(fd, &st);
	if (!err && (flags & O_TRUNC) && S_ISREG(st.st_mode) && ftruncate(fd, 0))
		err = -errno;
	if (!err && !(flags & O_NONBLOCK) && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK))
		err = -errno;
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

const char *tb_out_hint(const char *path, int err, char *buf, size_t n)
{
	char real[PATH_MAX];
	uid_t uid;

	struct stat st;

	if (err == -EPERM && !stat(path, &st) && st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(buf, n, "refusing to write into a file owned by uid %u (it would be "
			 "theirs to read); remove it or choose another path", (unsigned)st.st_uid);
		return buf;
	}
	if (err != -ELOOP)
		return NULL;
	if (tb_out_resolve(path, real, sizeof(real), &uid) == -ELOOP && uid)
		snprintf(buf, n, "refusing to follow a symbolic link owned by uid %u; "
			 "remove it or choose another path", (unsigned)uid);
	else
		snprintf(buf, n, "only symbolic links of root's (or the user's running "
			 "tracebpf) are followed, %d at most; remove the link or choose "
			 "another path", TB_OUT_MAX_LINKS);
	return buf;
}
