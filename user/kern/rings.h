/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rings.h - a set of per-CPU BPF ring buffers behind an ARRAY_OF_MAPS
 * (bpf/ring.bpf.h, `rings`). The recorder owns one set for the
 * application's events (--buffer-size, created in record_attach.c),
 * sched.c another for kernel events (--kernel-buffer-size); both are
 * drained by the recorder's one ring_buffer manager.
 *
 * Order of calls: tb_rings_create (before the object is loaded: sizes the
 * outer map and gives it its inner template), then after load
 * tb_rings_insert, and tb_rings_close at the end. 0 or a negative errno;
 * each prints its own error. tb_hint_bpf is the loaders' shared hint for a
 * failed bpf(2) call.
 */
#ifndef TRACEBPF_RINGS_H
#define TRACEBPF_RINGS_H

#include <stddef.h>

struct bpf_map;
struct ring_buffer;
typedef int (*tb_ring_fn)(void *ctx, void *data, size_t size);

struct tb_rings {
	int *fds;            /* one RINGBUF per possible CPU */
	int n;
	const char *what;    /* "ring buffer", "kernel ring buffer": for errors */
};

/* n rings of size bytes, named PREFIX<cpu>; outer (unloaded) gets n entries
 * and ring 0 as its inner template. option (the one that sets size) is
 * named in the hint when the kernel is out of memory. */
int tb_rings_create(struct tb_rings *r, struct bpf_map *outer, int n, size_t size,
		    const char *prefix, const char *what, const char *option);
/* After load: ring i at index i of outer_fd, each added to *rb (created on
 * first use) with fn(ctx, ...) as its callback. */
int tb_rings_insert(struct tb_rings *r, int outer_fd, struct ring_buffer **rb,
		    tb_ring_fn fn, void *ctx);
void tb_rings_close(struct tb_rings *r);

/* The hint after a bpf(2) call failed with err: EPERM or EACCES (the
 * recorder checked its capabilities first) means something else refuses BPF
 * here, lockdown, a seccomp filter or a security module, and it says which
 * it can tell; EMFILE/ENFILE the open-files limit; any other error gets
 * `otherwise` (NULL: no hint). */
void tb_hint_bpf(int err, const char *otherwise);

#endif
