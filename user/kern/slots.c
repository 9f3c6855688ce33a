// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * slots.c - the slot rings, read by the recorder (see kern.h). The
 * program stores a slot, then its CPU's head; the recorder loads the head
 * (acquire), reads the slots below it, then stores the tail (release), and
 * the program writes a slot only while head - tail is below the ring's
 * size: a slot is never written while it is read.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "format/tbrecords.h"
#include "kern/kern.h"

#define ERR(fmt, ...) fprintf(stderr, "tracebpf: record: " fmt "\n", ##__VA_ARGS__)

static unsigned slot_bits(size_t bytes)
{
	unsigned bits = 0;

	while (((size_t)sizeof(struct tb_slot) << (bits + 1)) <= bytes)
		bits++;
	return bits;
}

int tb_slots_create(struct tb_slots *s, struct bpf_map *pos, struct bpf_map *slots,
		    int ncpus, size_t bytes, const char *option)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_MMAPABLE);
	__u32 n;
	int fd, err;

	memset(s, 0, sizeof(*s));
	s->ncpus = ncpus;
	s->bits = slot_bits(bytes);
	n = (__u32)ncpus << s->bits;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "slots", sizeof(__u32), sizeof(struct tb_slot),
			    n, &mo);
	if (fd < 0) {
		err = -errno;
		ERR("failed to create the slot rings (%zu bytes a CPU): %s",
		    sizeof(struct tb_slot) << s->bits, strerror(-err));
		if (err == -ENOMEM)
			fprintf(stderr, "tracebpf: hint: try a smaller %s\n", option);
		else
			tb_hint_bpf(err, NULL);
		return err;
	}
	err = bpf_map__reuse_fd(slots, fd);   /* libbpf keeps its own copy */
	close(fd);
	if (!err)
		err = bpf_map__set_max_entries(pos, ncpus);
	if (err) {
		ERR("failed to set up the slot rings' maps: %s", strerror(-err));
		tb_hint_bpf(err, "run with -v to see libbpf's log");
	}
	return err;
}

static size_t page_round(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (n + pg - 1) / pg * pg;
}

int tb_slots_open(struct tb_slots *s, int pos_fd, int slots_fd)
{
	void *p;

	s->pos_bytes = page_round(s->ncpus * sizeof(struct tb_slot_pos));
	s->slot_bytes = page_round(((size_t)s->ncpus << s->bits) * sizeof(struct tb_slot));
	p = mmap(NULL, s->pos_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, pos_fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	s->pos = p;
	p = mmap(NULL, s->slot_bytes, PROT_READ, MAP_SHARED, slots_fd, 0);
	if (p == MAP_FAILED) {
		int err = -errno;

		munmap(s->pos, s->pos_bytes);
		s->pos = NULL;
		return err;
	}
	s->slot = p;
	return 0;
}

/* The record a slot stands for, in *x; its size. */
static size_t slot_rec(const struct tb_slot *sl, __u32 cpu, struct tb_rec_event_id *x)
{
	bool id = sl->site & TB_SLOT_ID;

	memset(x, 0, sizeof(*x));
	x->ev.hdr.type = id ? TB_REC_EVENT_ID : TB_REC_EVENT;
	x->ev.hdr.size = id ? sizeof(*x) : sizeof(x->ev);
	x->ev.hdr.cpu = cpu;
	x->ev.hdr.ts = sl->ts;
	x->ev.hdr.pid = sl->pid_tgid >> 32;
	x->ev.hdr.tid = (__u32)sl->pid_tgid;
	x->ev.site = sl->site & TB_SLOT_ADDR;
	x->ev.args[0] = sl->args[0];
	x->ev.args[1] = sl->args[1];
	x->ev.flags = (sl->site & ~TB_SLOT_ID) >> TB_SLOT_FLAGS_SHIFT;
	x->id = sl->id;
	return x->ev.hdr.size;
}

size_t tb_slots_consume(struct tb_slots *s, int (*fn)(void *ctx, void *data, size_t size),
			void *ctx)
{
	__u64 mask = (1ull << s->bits) - 1, head, tail;
	struct tb_rec_event_id x;
	size_t n = 0, size;

	for (int c = 0; s->pos && c < s->ncpus; c++) {
		const struct tb_slot *ring = s->slot + ((size_t)c << s->bits);

		head = __atomic_load_n(&s->pos[c].head, __ATOMIC_ACQUIRE);
		tail = __atomic_load_n(&s->pos[c].tail, __ATOMIC_RELAXED);
		if (head - tail > mask + 1)   /* cannot happen with our program; never spin */
			tail = head - (mask + 1);
		for (; tail != head; tail++) {
			size = slot_rec(&ring[tail & mask], c, &x);
			fn(ctx, &x, size);
			n++;
		}
		__atomic_store_n(&s->pos[c].tail, tail, __ATOMIC_RELEASE);
	}
	return n;
}

void tb_slots_close(struct tb_slots *s)
{
	if (s->slot)
		munmap(s->slot, s->slot_bytes);
	if (s->pos)
		munmap(s->pos, s->pos_bytes);
	memset(s, 0, sizeof(*s));
}
