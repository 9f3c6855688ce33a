// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* serve.c - the recorder's --serve socket (serve.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "record/serve.h"

#define MAX_CLIENTS 16

struct client {
	int fd;
	uint64_t off;
	unsigned id;
	uint64_t mark, mark_ms;   /* off when it last grew, and when (final pump) */
};

struct tb_server {
	int lfd, file_fd;
	char path[108];
	size_t max_lag;
	uid_t user;           /* the recording's: with root, the only reader */
	unsigned refused;     /* clients of other users */
	struct client c[MAX_CLIENTS];
	int n;
	unsigned next_id;
	uint64_t prev_size;   /* file size at the previous pump */
	dev_t dev;            /* the socket's, as bound: what the end removes */
	ino_t ino;
};

/* The socket's identity, as bound (unlink_ours). */
static int bound_as(struct tb_server *s, const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return -errno;
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	return 0;
}

/* The socket removed at the end, if the name is still it: in a directory
 * others write to, what is there by then may be someone else's. */
static void unlink_ours(const struct tb_server *s)
{
	struct stat st;

	if (!lstat(s->path, &st) && S_ISSOCK(st.st_mode) && st.st_dev == s->dev &&
	    st.st_ino == s->ino)
		unlink(s->path);
}

/* The recording's user: the one sudo ran it for (SUDO_UID, when it is a
 * number), else the real uid. */
static uid_t recording_user(void)
{
	const char *s = getenv("SUDO_UID");
	unsigned long v;
	char *end;

	if (s && isdigit((unsigned char)*s)) {
		errno = 0;
		v = strtoul(s, &end, 10);
		if (!errno && !*end && v < (uid_t)-1)
			return (uid_t)v;
	}
	return getuid();
}

/* The listening socket at path: mode 0600 from the moment it exists (the
 * umask is 0177 around bind: the recorder has no other thread that could
 * create a file meanwhile), the recording user's, so that it may connect. */
static int listen_at(struct tb_server *s, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	mode_t mask;
	int err = 0;

	strcpy(sa.sun_path, path);
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lfd < 0)
		return -errno;
	mask = umask(0177);
	if (bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)))
		err = -errno;
	umask(mask);
	if (err) {
		close(s->lfd);
		return err;
	}
	if ((s->user && lchown(path, s->user, (gid_t)-1)) || listen(s->lfd, 8))
		err = -errno;
	if (!err)
		err = bound_as(s, path);
	if (err) {
		close(s->lfd);
		unlink(path);
	}
	return err;
}

int tb_serve_open(struct tb_server **sp, const char *sock_path, int file_fd,
		  size_t max_lag)
{
	struct tb_server *s;
	char self[64];
	int err;

	*sp = NULL;
	if (strlen(sock_path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return -ENAMETOOLONG;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->max_lag = max_lag;
	s->user = recording_user();
	strcpy(s->path, sock_path);
	/* the writer's file itself, not whatever its name is now */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", file_fd);
	s->file_fd = open(self, O_RDONLY | O_CLOEXEC);
	if (s->file_fd < 0) {
		err = -errno;
		free(s);
		return err;
	}
	err = listen_at(s, sock_path);
	if (err) {
		close(s->file_fd);
		free(s);
		return err;
	}
	*sp = s;
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static void drop(struct tb_server *s, int i)
{
	close(s->c[i].fd);
	s->c[i] = s->c[--s->n];
}

/* Root and the recording's user may read the trace (the socket's mode
 * keeps others out; this, those past it). Another is refused, counted,
 * and said once. */
static bool may_read(struct tb_server *s, int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len))
		cr.uid = (uid_t)-1;
	if (cr.uid == 0 || cr.uid == s->user)
		return true;
	if (!s->refused++) {
		char also[32] = "";

		if (s->user)
			snprintf(also, sizeof(also), " and uid %u", (unsigned)s->user);
		fprintf(stderr, "tracebpf: record: serve: refused a client of uid %u: only root%s "
			"may read this recording (further refusals are counted)\n",
			(unsigned)cr.uid, also);
	}
	return false;
}

/* The clients waiting to connect, accepted (up to MAX_CLIENTS). */
static void accept_all(struct tb_server *s)
{
	/* the kernel's share of a client's backlog stays small: the lag
	 * bound is then what a client can be behind */
	int fd, sz = 64 << 10;

	while ((fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		if (!may_read(s, fd)) {
			close(fd);
			continue;
		}
		if (s->n == MAX_CLIENTS) {
			fprintf(stderr, "tracebpf: record: serve: refused a client: already "
				"%d connected\n", MAX_CLIENTS);
			close(fd);
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
		s->c[s->n++] = (struct client){ .fd = fd, .id = ++s->next_id,
						.mark_ms = now_ms() };
	}
}

/* Sends what fits without blocking. 0, or -1 when the client is gone. */
static int pump_one(struct tb_server *s, struct client *c, uint64_t size)
{
	char buf[65536];

	while (c->off < size) {
		size_t want = size - c->off < sizeof(buf) ? size - c->off : sizeof(buf);
		ssize_t n = pread(s->file_fd, buf, want, (off_t)c->off), w;

		if (n <= 0)
			return 0;   /* not on disk yet: later */
		w = send(c->fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
		c->off += (uint64_t)w;
		if (w < n)
			return 0;
	}
	return 0;
}

/* Lag: a client is cut off when, after this pump, it still lacks more than
 * max_lag bytes of what was already there at the previous pump: it had a
 * whole flush interval to take them. (Measured against the new size, one
 * big flush would cut off a client that keeps up.) */
static void pump(struct tb_server *s, uint64_t size, bool check_lag)
{
	int i;

	accept_all(s);
	for (i = 0; i < s->n; i++) {
		struct client *c = &s->c[i];

		if (pump_one(s, c, size)) {
			drop(s, i--);
			continue;
		}
		if (check_lag && s->prev_size > c->off &&
		    s->prev_size - c->off > s->max_lag) {
			fprintf(stderr, "tracebpf: record: serve: client %u fell more than %zu "
				"bytes behind: disconnected (the recording goes on)\n",
				c->id, s->max_lag);
			drop(s, i--);
		}
	}
	s->prev_size = size;
}

void tb_serve_pump(struct tb_server *s, uint64_t size)
{
	pump(s, size, true);
}

/* Final pump: client i, still short of size bytes at time t, is cut off
 * when it took nothing for idle_ms, or when `last` (the wait is over).
 * Says so, with what it had not read. 1 if it was. */
static int cut_off(struct tb_server *s, int i, uint64_t size, uint64_t t,
		   int idle_ms, int waited_ms, bool last)
{
	struct client *c = &s->c[i];

	if (c->off != c->mark) {   /* it took something: its wait starts again */
		c->mark = c->off;
		c->mark_ms = t;
	}
	if (c->off >= size || (t - c->mark_ms <= (uint64_t)idle_ms && !last))
		return 0;
	if (t - c->mark_ms > (uint64_t)idle_ms)
		fprintf(stderr, "tracebpf: record: serve: client %u took nothing for %d ms: "
			"disconnected with %" PRIu64 " bytes it had not read\n",
			c->id, idle_ms, size - c->off);
	else
		fprintf(stderr, "tracebpf: record: serve: client %u was still reading %d ms "
			"after the recording ended: disconnected with %" PRIu64 " bytes it "
			"had not read\n", c->id, waited_ms, size - c->off);
	drop(s, i);
	return 1;
}

void tb_serve_finish(struct tb_server *s, int idle_ms, int max_ms)
{
	uint64_t size, t, t0 = now_ms();
	struct stat st;
	int i, left;
	bool last;

	if (!s)
		return;
	size = fstat(s->file_fd, &st) ? 0 : (uint64_t)st.st_size;   /* index included */
	for (i = 0; i < s->n; i++) {
		s->c[i].mark = s->c[i].off;
		s->c[i].mark_ms = t0;
	}
	do {
		pump(s, size, false);
		t = now_ms();
		last = t - t0 > (uint64_t)max_ms;
		for (left = 0, i = 0; i < s->n; i++) {
			if (cut_off(s, i, size, t, idle_ms, max_ms, last))
				i--;
			else
				left += s->c[i].off < size;
		}
		if (left)
			poll(NULL, 0, 5);
	} while (left);
	tb_serve_close(s);
}

void tb_serve_close(struct tb_server *s)
{
	if (!s)
		return;
	if (s->refused > 1)
		fprintf(stderr, "tracebpf: record: serve: refused %u clients of other users "
			"in all\n", s->refused);
	while (s->n)
		drop(s, 0);
	close(s->lfd);
	close(s->file_fd);
	unlink_ours(s);
	free(s);
}
