// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* serve.c - the recorder's --serve socket (serve.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"

#define MAX_CLIENTS 16

struct client {
	int fd;
	uint64_t off;
	unsigned id;
};

struct tb_server {
	int lfd, file_fd;
	char path[108];
	size_t max_lag;
	struct client c[MAX_CLIENTS];
	int n;
	unsigned next_id;
	uint64_t prev_size;   /* file size at the previous pump */
};

int tb_serve_open(struct tb_server **sp, const char *sock_path,
		  const char *file_path, size_t max_lag)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct tb_server *s;
	int err;

	*sp = NULL;
	if (strlen(sock_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->max_lag = max_lag;
	strcpy(s->path, sock_path);
	strcpy(sa.sun_path, sock_path);
	s->file_fd = open(file_path, O_RDONLY | O_CLOEXEC);
	if (s->file_fd < 0) {
		err = -errno;
		free(s);
		return err;
	}
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(s->lfd, 8)) {
		err = -errno;
		if (s->lfd >= 0)
			close(s->lfd);
		close(s->file_fd);
		free(s);
		return err;
	}
	*sp = s;
	return 0;
}

static void drop(struct tb_server *s, int i)
{
	close(s->c[i].fd);
	s->c[i] = s->c[--s->n];
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
	int fd, i;

	while ((fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		if (s->n == MAX_CLIENTS) {
			fprintf(stderr, "tracebpf: record: serve: refused a client: already "
				"%d connected\n", MAX_CLIENTS);
			close(fd);
			continue;
		}
		{
			/* the kernel's share of a client's backlog stays small:
			 * the lag bound is then what a client can be behind */
			int sz = 64 << 10;

			setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
		}
		s->c[s->n++] = (struct client){ fd, 0, ++s->next_id };
	}
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

/* The end: every client gets the rest of the file, index included, as
 * long as it takes it; one that takes nothing for timeout_ms is cut. */
void tb_serve_close(struct tb_server *s, uint64_t size, int timeout_ms)
{
	struct timespec t0, t;
	uint64_t sent, last_sent = 0;
	int i, left;

	if (!s)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pump(s, size, false);
		for (left = 0, sent = 0, i = 0; i < s->n; i++) {
			left += s->c[i].off < size;
			sent += s->c[i].off;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (sent != last_sent) {   /* progress: the wait starts again */
			last_sent = sent;
			t0 = t;
		}
		if (!left || (t.tv_sec - t0.tv_sec) * 1000 +
		    (t.tv_nsec - t0.tv_nsec) / 1000000 > timeout_ms)
			break;
		poll(NULL, 0, 5);
	}
	for (i = 0; i < s->n; i++)
		if (s->c[i].off < size)
			fprintf(stderr, "tracebpf: record: serve: client %u took nothing for "
				"%d ms: cut off %" PRIu64 " bytes before the end\n",
				s->c[i].id, timeout_ms, size - s->c[i].off);
	while (s->n)
		drop(s, 0);
	close(s->lfd);
	close(s->file_fd);
	unlink(s->path);
	free(s);
}
