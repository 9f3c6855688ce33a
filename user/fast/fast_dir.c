// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fast_dir.c - the fast path's bottom layer (fast_int.h): its
 * directories in bpffs (docs/security.md), the processes' switches, and
 * the other sessions seen there.
 * Every directory the recorder makes there is root's, mode 0711: a traced
 * process may open the pins given to its user by name (its switch, its
 * spares), and can neither list, add, remove nor replace anything. The
 * recorder still acts on every entry through a descriptor of the
 * directory that holds it, opened O_NOFOLLOW | O_DIRECTORY, with *at()
 * calls that follow no symbolic link, and removes trees only as deep as
 * its own and never across a link: a directory left by an older recorder
 * (its processes' own, 0700) or made by someone else is handled as
 * untrusted all the same.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>

#include "fast/fast_int.h"

#define BPF_FS "/sys/fs/bpf"
#define BPF_FS_MAGIC_ 0xcafe4a11
/* Directories below the one removed that are opened, at most: a
 * session's <pid> and session-<name> directories hold only pins, so
 * anything deeper is none of the recorder's (and a tree thousands deep
 * would otherwise take the recursion's stack). */
#define REMOVE_DEPTH 3

/* bpffs at /sys/fs/bpf, mounted when missing (as bpftool does), with a
 * mode that lets other users reach the pins given to them and nothing
 * more. */
int fast_dir_bpffs(void)
{
	struct statfs sf;

	if (!statfs(BPF_FS, &sf) && sf.f_type == BPF_FS_MAGIC_)
		return 0;
	if (mount("bpf", BPF_FS, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0711"))
		return -errno;
	fprintf(stderr, "tracebpf: record: mounted the BPF filesystem on %s, mode 0711 (for the "
			"fast path)\n", BPF_FS);
	return 0;
}

/* A directory found at name in dirfd that is no directory of root's. */
static int refuse_dir(const char *shown, const char *what, long uid)
{
	if (uid >= 0)
		ERR("refusing %s: it is owned by uid %ld, not by root (remove it, as root, "
		    "while nothing records, and record again)", shown, uid);
	else
		ERR("refusing %s: it is %s, not a directory (remove it, as root, while nothing "
		    "records, and record again)", shown, what);
	return -EPERM;
}

/* Directory `name` in dirfd, made if missing: root's, of mode `mode`,
 * opened O_NOFOLLOW | O_DIRECTORY. Its descriptor, or a negative errno;
 * one that is a link, not a directory or not root's is refused (said,
 * -EPERM). `shown` names it in messages. */
int fast_dir_make(int dirfd, const char *name, mode_t mode, const char *shown)
{
	struct stat st;
	int fd, err;

	if (mkdirat(dirfd, name, mode) && errno != EEXIST)
		return -errno;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		if (err != -ELOOP && err != -ENOTDIR)
			return err;
		return refuse_dir(shown, !fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) &&
				  S_ISLNK(st.st_mode) ? "a symbolic link" : "a file", -1);
	}
	if (fstat(fd, &st)) {
		err = -errno;
		close(fd);
		return err;
	}
	if (st.st_uid != 0) {
		close(fd);
		return refuse_dir(shown, NULL, (long)st.st_uid);
	}
	if ((st.st_mode & 07777) != mode && fchmod(fd, mode)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* TRACEBPF_FAST_ROOT, opened once checked (fast_dir_root), and what
 * every look at the other sessions goes through. */
static int root = -1;

/* TRACEBPF_FAST_ROOT, checked (fast_dir_make): its descriptor, the same
 * one every call (kept open for the process). */
int fast_dir_root(void)
{
	int err, fd;

	if (root >= 0)
		return root;
	err = fast_dir_bpffs();
	if (err)
		return err;
	fd = open(BPF_FS, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = fast_dir_make(fd, strrchr(TRACEBPF_FAST_ROOT, '/') + 1, 0711, TRACEBPF_FAST_ROOT);
	close(fd);
	if (err >= 0)
		root = err;
	return err;
}

/* The entries of directory dirfd, from the first, or NULL. Opened anew
 * (a dup would share dirfd's offset: a second listing found it at the
 * end, and saw nothing). */
DIR *fast_dir_list(int dirfd)
{
	int fd = dirfd >= 0 ? openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d && fd >= 0)
		close(fd);
	return d;
}

/* The entries of TRACEBPF_FAST_ROOT (fast_dir_root's), or NULL before it
 * was opened. */
DIR *fast_dir_entries(void)
{
	return fast_dir_list(root);
}

/* Pinned object `name` (a path below TRACEBPF_FAST_ROOT: the links there
 * and the session directories are root's) opened: its fd, or -1. */
int fast_dir_get(const char *name)
{
	LIBBPF_OPTS(bpf_obj_get_opts, go, .file_flags = BPF_F_PATH_FD, .path_fd = root);

	return root >= 0 ? bpf_obj_get_opts(name, &go) : -1;
}

/* Directory `name` in dirfd, opened without following a link. */
int fast_dir_open(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* Map `fd` pinned as `name` in dirfd for uid:gid, mode `mode`; the pin is
 * taken back when it cannot be given. */
int fast_dir_pin(int fd, int dirfd, const char *name, uid_t uid, gid_t gid, mode_t mode)
{
	LIBBPF_OPTS(bpf_obj_pin_opts, po, .file_flags = BPF_F_PATH_FD, .path_fd = dirfd);
	int err;

	if (bpf_obj_pin_opts(fd, name, &po))
		return -errno;
	err = fast_dir_give(dirfd, name, uid, gid);
	if (!err && fchmodat(dirfd, name, mode, AT_SYMLINK_NOFOLLOW))
		err = -errno;
	if (err)
		unlinkat(dirfd, name, 0);
	return err;
}

/* Entry `name` of dirfd (never a link's target) to uid:gid. */
int fast_dir_give(int dirfd, const char *name, uid_t uid, gid_t gid)
{
	return fchownat(dirfd, name, uid, gid, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
}

/* The pinned switch `name` in dirfd (a directory of root's) switched off:
 * the process that maps it stops writing into the session. */
static void switch_off(int dirfd, const char *name)
{
	LIBBPF_OPTS(bpf_obj_get_opts, go, .file_flags = BPF_F_PATH_FD, .path_fd = dirfd);
	struct stat st;
	int fd;

	if (fstat(dirfd, &st) || st.st_uid != 0 || (st.st_mode & 022))
		return;   /* its name could be swapped before the kernel resolves it */
	fd = bpf_obj_get_opts(name, &go);
	if (fd >= 0) {
		fast_ctl_set(fd, 0);
		close(fd);
	}
}

/* Entry `name` of dirfd removed: a directory with what it holds (down to
 * REMOVE_DEPTH), anything else as the entry itself (a link is unlinked,
 * never followed). With `off`, a switch (`ctl`) met on the way is
 * switched off first. */
static void remove_at(int dirfd, const char *name, bool off, unsigned depth)
{
	struct dirent *e;
	struct stat st;
	DIR *d;
	int fd;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return;
	if (!S_ISDIR(st.st_mode)) {
		if (off && S_ISREG(st.st_mode) && !strcmp(name, "ctl"))
			switch_off(dirfd, name);
		unlinkat(dirfd, name, 0);
		return;
	}
	if (depth > REMOVE_DEPTH || (fd = fast_dir_open(dirfd, name)) < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			remove_at(fd, e->d_name, off, depth + 1);
	closedir(d);
	unlinkat(dirfd, name, AT_REMOVEDIR);
}

void fast_dir_remove(int dirfd, const char *name, bool off)
{
	remove_at(dirfd, name, off, 0);
}

/* The same by path: its parent directory opened without following a
 * link in its last component. */
void fast_remove_dir(const char *path, bool off)
{
	char parent[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd;

	if (!slash || slash == path || (size_t)(slash - path) >= sizeof(parent))
		return;
	memcpy(parent, path, (size_t)(slash - path));
	parent[slash - path] = 0;
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	fast_dir_remove(fd, slash + 1, off);
	close(fd);
}

/* Pin `leaf` of process pid's directory in the session's (sess_fd)
 * taken back. */
void fast_dir_unpin(int sess_fd, uint32_t pid, const char *leaf)
{
	char name[16];
	int fd;

	snprintf(name, sizeof(name), "%u", pid);
	fd = fast_dir_open(sess_fd, name);
	if (fd < 0)
		return;
	unlinkat(fd, leaf, 0);
	close(fd);
}

bool fast_pid_alive(long pid)
{
	return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

/* A process's switch: made off, LIVE once the process is this session's
 * alone (get_proc), off again when the session ends. */
int fast_ctl_make(uint32_t wait_us)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_MMAPABLE);
	struct tracebpf_fast_ctl off = { .pid = (uint32_t)getpid(),
					 .features = TRACEBPF_FAST_F_BATCH,
					 .wait_us = wait_us };
	__u32 zero = 0;
	int fd, err;

	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "tb_fast_ctl", 4, sizeof(off), 1, &mo);
	if (fd < 0)
		return -errno;
	if (bpf_map_update_elem(fd, &zero, &off, 0)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* Sets a switch's `live` to `to` if it is `from` (any, when from is 0),
 * in place: the rest of it (the spares' pools) is the processes' too. */
static void ctl_swap(int fd, uint32_t from, uint32_t to)
{
	volatile struct tracebpf_fast_ctl *c;
	size_t len = TRACEBPF_FAST_CTL_BYTES;
	uint32_t cur;

	if (fd < 0)
		return;
	c = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (c == MAP_FAILED)   /* an older recorder's one-page switch */
		c = mmap(NULL, len = 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (c == MAP_FAILED)
		return;
	cur = from ? from : __atomic_load_n(&c->live, __ATOMIC_ACQUIRE);
	__atomic_compare_exchange_n(&c->live, &cur, to, false, __ATOMIC_ACQ_REL,
				    __ATOMIC_ACQUIRE);
	munmap((void *)c, len);
}

void fast_ctl_set(int fd, uint32_t live)
{
	ctl_swap(fd, 0, live);
}

/* The recorder of e when it is another live session's directory, or 0. */
long fast_other_recorder(const struct dirent *e)
{
	long p = e->d_name[0] == 's' ? atol(e->d_name + 1) : 0;

	return e->d_type == DT_DIR && p != getpid() && fast_pid_alive(p) ? p : 0;
}

/* The recorder of another live session than ours, or 0. */
long fast_other_session(void)
{
	DIR *d = fast_dir_entries();
	struct dirent *e;
	long pid = 0;

	while (d && !pid && (e = readdir(d)))
		pid = fast_other_recorder(e);
	if (d)
		closedir(d);
	return pid;
}

/* Switches every process another live session has on its fast path to
 * its probes (TB_FAST_SHARED), so that this session sees all of its
 * events too. */
void fast_share_others(void)
{
	DIR *d = fast_dir_entries();
	char path[PATH_MAX], target[96];
	struct dirent *e;
	ssize_t n;
	long rec;
	int fd;

	while (d && (e = readdir(d))) {
		if (e->d_type != DT_LNK)
			continue;
		n = readlinkat(root, e->d_name, target, sizeof(target) - 1);
		if (n <= 1 || target[0] != 's')
			continue;
		target[n] = 0;
		rec = atol(target + 1);
		if (rec == getpid() || !fast_pid_alive(rec))
			continue;
		snprintf(path, sizeof(path), "%s/ctl", e->d_name);
		fd = fast_dir_get(path);
		if (fd < 0)
			continue;
		ctl_swap(fd, TRACEBPF_FAST_LIVE, TB_FAST_SHARED);
		close(fd);
	}
	if (d)
		closedir(d);
}

static bool other_seen;   /* another session seen, and said so */

bool fast_other_seen(void)
{
	return other_seen;
}

void fast_say_other(long other)
{
	if (!other || other_seen)
		return;
	other_seen = true;
	fprintf(stderr, "tracebpf: record: another tracebpf (pid %ld) is recording: while both "
			"record, processes take their probes for every event\n", other);
}
