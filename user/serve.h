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
 */
#ifndef TRACEBPF_SERVE_H
#define TRACEBPF_SERVE_H

#include <stdint.h>
#include <stddef.h>

struct tb_server;

int tb_serve_open(struct tb_server **s, const char *sock_path,
		  const char *file_path, size_t max_lag);
/* Accepts new clients and sends what each has not got of file[0, size). */
void tb_serve_pump(struct tb_server *s, uint64_t size);
/* Final pump: sends every client the rest (the index included) for as
 * long as it keeps taking bytes; one idle for timeout_ms is cut off. Then
 * closes and unlinks. */
void tb_serve_close(struct tb_server *s, uint64_t size, int timeout_ms);

#endif
