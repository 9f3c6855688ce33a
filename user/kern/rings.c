// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rings.c - per-CPU BPF ring buffer sets (see kern.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kern/kern.h"

#define ERR(fmt, ...) fprintf(stderr, "tracebpf: record: " fmt "\n", ##__VA_ARGS__)

int tb_rings_create(struct tb_rings *r, struct bpf_map *outer, int n, size_t size,
		    const char *prefix, const char *what, const char *option)
{
	int err;

	r->what = what;
	r->fds = calloc(n, sizeof(int));
	if (!r->fds)
		return -ENOMEM;
	for (int cpu = 0; cpu < n; cpu++) {
		char name[BPF_OBJ_NAME_LEN];
		int fd;

		snprintf(name, sizeof(name), "%s%u", prefix, (unsigned)cpu % 100000u);
		fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, name, 0, 0, size, NULL);
		if (fd < 0) {
			err = -errno;
			ERR("failed to create %s for CPU %d (%zu bytes): %s", what, cpu, size,
			    strerror(-err));
			if (err == -ENOMEM)
				fprintf(stderr, "tracebpf: hint: try a smaller %s\n", option);
			else
				tb_hint_bpf(err, NULL);
			return err;
		}
		r->fds[cpu] = fd;
		r->n = cpu + 1;
	}
	err = bpf_map__set_max_entries(outer, n);
	/* The inner map template must have the size of the rings we insert
	 * (bpf_map__inner_map() + set_max_entries crashes in libbpf 1.1). */
	if (!err)
		err = bpf_map__set_inner_map_fd(outer, r->fds[0]);
	if (err) {
		ERR("failed to set up the %ss' map: %s", what, strerror(-err));
		tb_hint_bpf(err, "run with -v to see libbpf's log");
	}
	return err;
}

int tb_rings_insert(struct tb_rings *r, int outer_fd, struct ring_buffer **rb,
		    tb_ring_fn fn, void *ctx)
{
	int err;

	for (int cpu = 0; cpu < r->n; cpu++) {
		__u32 key = cpu;
		int fd = r->fds[cpu];

		if (bpf_map_update_elem(outer_fd, &key, &fd, BPF_ANY)) {
			err = -errno;
			ERR("failed to insert %s for CPU %d: %s", r->what, cpu, strerror(-err));
			tb_hint_bpf(err, "run with -v to see libbpf's log");
			return err;
		}
		if (!*rb) {
			*rb = ring_buffer__new(fd, fn, ctx, NULL);
			err = *rb ? 0 : -errno;
		} else {
			err = ring_buffer__add(*rb, fd, fn, ctx) ? -errno : 0;
		}
		if (err) {
			ERR("failed to poll %s for CPU %d: %s", r->what, cpu, strerror(-err));
			tb_hint_bpf(err, "run with -v to see libbpf's log");
			return err;
		}
	}
	return 0;
}

void tb_rings_close(struct tb_rings *r)
{
	for (int i = 0; i < r->n; i++)
		if (r->fds[i] > 0)
			close(r->fds[i]);
	free(r->fds);
	r->fds = NULL;
	r->n = 0;
}

void tb_hint_bpf(int err, const char *otherwise)
{
	char buf[128] = "", *b, *e;
	FILE *f;

	if (err == -EMFILE || err == -ENFILE) {
		fprintf(stderr, "tracebpf: hint: each BPF map, program and ring buffer is a file "
				"descriptor: raise the open-files limit (ulimit -n)\n");
		return;
	}
	if (err != -EPERM && err != -EACCES) {
		if (otherwise)
			fprintf(stderr, "tracebpf: hint: %s\n", otherwise);
		return;
	}
	f = fopen("/sys/kernel/security/lockdown", "re");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	b = strchr(buf, '[');
	e = b ? strchr(b, ']') : NULL;
	if (b && e && strncmp(b, "[none]", 6)) {
		*e = '\0';
		fprintf(stderr, "tracebpf: hint: the kernel is locked down (%s: /sys/kernel/security/"
				"lockdown), which blocks BPF tracing; record on a kernel booted "
				"without lockdown\n", b + 1);
		return;
	}
	fprintf(stderr, "tracebpf: hint: tracebpf has the capabilities it needs, so something "
			"else refuses BPF here: a seccomp filter (as in many containers: run "
			"it on the host, or allow bpf(2)) or a security module\n");
}
