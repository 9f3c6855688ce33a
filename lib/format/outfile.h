/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * outfile.h - the files a user names for output (record -o and the JSON
 * beside it, convert -o, pack OUT), opened by a command that may run as
 * root in a directory other users write to (/tmp), where one of them may
 * have planted a symbolic link at that name (fs.protected_symlinks may be
 * off: the kernel does not refuse it for us).
 *
 * A symbolic link owned by root is followed, each link on the way being
 * root's too (root made it, so root chose where it leads), and so is one
 * of the user running the command (convert and pack need no root: a
 * user's own link); a link owned by anyone else is refused with -ELOOP,
 * what O_NOFOLLOW gives for a link planted after the check. The last name
 * is opened with O_NOFOLLOW (a /proc link such as /dev/stdout's excepted:
 * the kernel's own). An existing file another user owns is not written
 * into (the trace would be theirs to read). Nothing here prints; the callers say what failed,
 * with tb_out_hint.
 */
#ifndef TRACEBPF_OUTFILE_H
#define TRACEBPF_OUTFILE_H

#include <stddef.h>
#include <sys/types.h>

#define TB_OUT_MAX_LINKS 8

/* The name to open for path in real[n]: path itself, or where the links
 * followed lead. 0; 1 when real is a /proc link (open it without
 * O_NOFOLLOW); -ELOOP for a link owned by another user (*uid: its owner)
 * or more than TB_OUT_MAX_LINKS links (*uid: 0); -ENAMETOOLONG, or
 * readlink(2)'s error. */
int tb_out_resolve(const char *path, char *real, size_t n, uid_t *uid);
/* open(2) of tb_out_resolve(path) with flags | O_NOFOLLOW | O_CLOEXEC: an
 * fd, or a negative errno; -EPERM for an existing file of another user's
 * (left as it was: O_TRUNC is applied only once it is known to be ours). */
int tb_out_open(const char *path, int flags, mode_t mode);
/* The hint for err, a failure of the two above for path (a link refused:
 * whose), in buf; NULL for any other error. */
const char *tb_out_hint(const char *path, int err, char *buf, size_t n);

#endif
