/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * serve.h - `record --serve SOCKET`: stream the trace file to clients.
 *
 * A client that connects gets the file from its first byte (what is on
 * disk), then every chunk as it is appended. The file itself is the
 * buffer: each client is an offset into it, pumped with non-blocking sends
 * from the recorder's loop, so a slow client never slows the recorder. A
 * client that stays more than max_lag bytes behind what was on disk at the
 * previous pump (a whole flush interval earlier) is disconnected with a message on
 * the recorder's stderr (the client sees the stream end early and says so).
 *
 * The trace is as private as its file (0600): the socket is created mode
 * 0600, owned by the recording's user (SUDO_UID when sudo ran the
 * recorder, else its real uid), and a client whose peer credentials
 * (SO_PEERCRED) are neither root's nor that user's is closed at once,
 * counted, and said once on stderr.
 */
#ifndef TRACEBPF_SERVE_H
#define TRACEBPF_SERVE_H

#include <stdint.h>
#include <stddef.h>

struct tb_server;

/* Serves the file that file_fd (the writer's) has open, on a new socket
 * at sock_path (-EADDRINUSE when something is there). */
int tb_serve_open(struct tb_server **s, const char *sock_path, int file_fd,
		  size_t max_lag);
/* Accepts new clients and sends what each has not got of file[0, size). */
void tb_serve_pump(struct tb_server *s, uint64_t size);
/* The end: every client gets the rest of the file as it is now (the index
 * included) while it keeps taking bytes, for max_ms at most; one that
 * takes nothing for idle_ms, or is still short at max_ms, is disconnected
 * with a message saying how many bytes it had not read. Then as
 * tb_serve_close: the recorder's exit never waits longer for a client. */
void tb_serve_finish(struct tb_server *s, int idle_ms, int max_ms);
/* Disconnects every client, closes and unlinks the socket, frees s. */
void tb_serve_close(struct tb_server *s);

#endif
