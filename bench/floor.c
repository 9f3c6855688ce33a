// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * floor BINARY - attaches bench/floor.bpf.c to every tracebpf:event site of
 * BINARY (all processes), prints "attached" (flushed), drains the ring every
 * 50 ms until SIGINT or SIGTERM, then prints "records=<n>". The reference
 * program of make bench (bench/run.sh).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "floor.skel.h"

static volatile sig_atomic_t done;

static void on_signal(int sig)
{
	(void)sig;
	done = 1;
}

static int on_rec(void *ctx, void *data, size_t size)
{
	(void)data;
	(void)size;
	++*(unsigned long long *)ctx;
	return 0;
}

int main(int argc, char **argv)
{
	struct ring_buffer *rb = NULL;
	struct floor_bpf *skel;
	unsigned long long n = 0;
	struct bpf_link *link;
	int err = 1;

	if (argc != 2) {
		fprintf(stderr, "usage: floor BINARY\n");
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	skel = floor_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "floor: failed to load: %s\n", strerror(errno));
		return 1;
	}
	link = bpf_program__attach_usdt(skel->progs.floor_event, -1, argv[1], "tracebpf",
					"event", NULL);
	if (!link) {
		fprintf(stderr, "floor: failed to attach to '%s': %s\n", argv[1], strerror(errno));
		goto out;
	}
	rb = ring_buffer__new(bpf_map__fd(skel->maps.floor_ring), on_rec, &n, NULL);
	if (!rb) {
		fprintf(stderr, "floor: failed to open the ring: %s\n", strerror(errno));
		goto out;
	}
	printf("attached\n");
	fflush(stdout);
	/* Records are submitted without a wakeup: drain on a timer, as the
	 * tracebpf recorder does. */
	while (!done) {
		ring_buffer__poll(rb, 50);
		if (ring_buffer__consume(rb) < 0)
			break;
	}
	ring_buffer__consume(rb);
	printf("records=%llu\n", n);
	err = 0;
out:
	ring_buffer__free(rb);
	bpf_link__destroy(link);
	floor_bpf__destroy(skel);
	return err;
}
