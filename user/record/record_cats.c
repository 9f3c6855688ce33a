// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record_cats.c - the categories a recording records (tracebpf/cats.h,
 * docs/control.md "Categories"): the rules of --categories and
 * --exclude-categories in the session's map (named after the session:
 * the "session map"), which `tracebpf ctl
 * enable|disable CATEGORY` rewrites; in every traced process's switch,
 * where the sites read them; and in the trace file, a TB_REC_CATS record
 * at the start and after each change.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "ctl/ctl.h"
#include "fast/fast.h"
#include "record/recorder.h"
#include "format/tbfile.h"

/* Bytes of the map's one value, mapped: whole pages. */
static size_t cats_bytes(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (sizeof(struct tracebpf_cats) + pg - 1) / pg * pg;
}

/* The map's name: the session's, in the characters BPF names take
 * ([A-Za-z0-9_.], '-' read as '_'), cut to 15: `bpftool map show`
 * names the session by it. */
static void map_name(const char *session, char name[16])
{
	size_t i;

	for (i = 0; i < 15 && session[i]; i++)
		name[i] = session[i] == '-' ? '_' : session[i];
	name[i] = '\0';
}

/* The map, with the command line's rules; the fast path's switches get
 * them from here. */
int rec_cats_open(struct recorder *r)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_MMAPABLE);
	const char *why = "";
	char name[16];
	void *p;
	int err;

	map_name(r->session, name);
	r->cats_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, name, 4,
				    sizeof(struct tracebpf_cats), 1, &mo);
	if (r->cats_fd < 0) {
		err = -errno;
		ERR("failed to create the map of the categories recorded: %s", strerror(-err));
		tb_hint_bpf(err, NULL);
		return err;
	}
	p = mmap(NULL, cats_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, r->cats_fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		ERR("failed to map the map of the categories recorded: %s", strerror(-err));
		fprintf(stderr, "tracebpf: hint: the kernel must allow mmap of BPF arrays "
				"(BPF_F_MMAPABLE, Linux 5.5 and later)\n");
		return err;
	}
	r->cats = p;
	if (tb_cats_build(r->cats, r->o->categories, r->o->exclude_categories, &why)) {
		ERR("invalid category list: %s", why);   /* checked by the parser */
		return -EINVAL;
	}
	r->cats->gen = r->cats_gen = 2;
	tb_fast_cats(r->fast, r->cats);
	tb_ctl_cats(&r->ctl, r->cats_fd);
	return 0;
}

/* The rules in effect, as a TB_REC_CATS record stamped ts. */
int rec_cats_log(struct recorder *r, __u64 ts)
{
	struct {
		struct tb_rec_cats h;
		char rules[TRACEBPF_CATS_BYTES + 8];
	} rec = {};
	__u32 len = r->cats->len;

	if (len > TRACEBPF_CATS_BYTES)
		return -EINVAL;
	rec.h.hdr.type = TB_REC_CATS;
	rec.h.hdr.size = (__u32)TB_REC_ALIGN(sizeof(rec.h) + len);
	rec.h.hdr.cpu = ~0u;
	rec.h.hdr.ts = ts;
	rec.h.len = len;
	rec.h.gen = r->cats->gen;
	memcpy(rec.rules, r->cats->rules, len);
	return tb_writer_append(r->w, &rec.h.hdr);
}

/* After a `tracebpf ctl` request: when it changed the rules (it wrote
 * them before asking, and waits for the answer), what was recorded under
 * the old ones is taken first, then every switch gets the new ones, and
 * the file says so from then on. */
int rec_cats_check(struct recorder *r)
{
	char desc[256];
	int err;

	if (!r->cats || __atomic_load_n(&r->cats->gen, __ATOMIC_ACQUIRE) == r->cats_gen)
		return 0;
	rec_take_all(r);
	tb_fast_cats(r->fast, r->cats);
	r->cats_gen = r->cats->gen;
	err = rec_cats_log(r, now_ns(CLOCK_MONOTONIC));
	if (!r->o->quiet) {
		tb_cats_describe(r->cats->rules, r->cats->len, desc, sizeof(desc));
		fprintf(stderr, "%stracebpf: categories recorded now: %s (tracebpf ctl)\n",
			r->tty ? "\r\033[K" : "", desc);
	}
	return err;
}

void rec_cats_close(struct recorder *r)
{
	if (r->cats)
		munmap(r->cats, cats_bytes());
	r->cats = NULL;
	if (r->cats_fd > 0)
		close(r->cats_fd);
	r->cats_fd = -1;
}
