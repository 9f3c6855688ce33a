// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record_filter.c - which application events a recording records, and
 * the trace file's record of it:
 *
 * - the categories (tracebpf/cats.h, docs/control.md "Categories"): the
 *   rules of --categories and --exclude-categories in the session's map
 *   (named after the session: the "session map"), which `tracebpf ctl
 *   enable|disable CATEGORY` rewrites; in every traced process's switch,
 *   where the sites read them; and in the trace file, a TB_REC_CATS
 *   record at the start and after each change;
 * - the threads and processes (record --tid, tracebpf ctl filter): a
 *   TB_REC_FILTER record at the start of a file when a filter is on, and
 *   after each change. The kernel side's sets and switch are written by
 *   record --tid (record_attach.c) and by `tracebpf ctl filter` (ctl.c),
 *   which asks the recorder to log the change once it is made.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "record.skel.h"
#include "format/tbctl.h"
#include "ctl/ctl.h"
#include "fast/fast.h"
#include "record/recorder.h"
#include "format/tbfile.h"

/* ---- The categories ---- */

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

/* ---- The threads and processes ---- */

_Static_assert(TB_RECF_TIDS == TB_FILTER_TID && TB_RECF_PIDS == TB_FILTER_PID &&
	       TB_RECF_MAX_IDS == TB_FILTER_MAX, "filter flags as lib/format/tbctl.h has them");

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

/* The ids in one set, ascending: how many (at most TB_RECF_MAX_IDS). */
static __u32 read_set(int fd, __u32 *ids)
{
	__u32 key, next, *prev = NULL, n = 0;

	while (n < TB_RECF_MAX_IDS && !bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		ids[n++] = key;
	}
	qsort(ids, n, sizeof(*ids), cmp_u32);
	return n;
}

/* The filter in effect, as a TB_REC_FILTER record (malloc'ed). */
static struct tb_rec_filter *filter_now(struct recorder *r)
{
	struct tb_rec_filter *f = calloc(1, sizeof(*f) + 2 * TB_RECF_MAX_IDS * sizeof(__u32));
	__u32 *ids;

	if (!f)
		return NULL;
	ids = (__u32 *)(f + 1);
	f->which = __atomic_load_n(&r->ctl.map[TB_CTL_STATE].filter, __ATOMIC_ACQUIRE) &
		   (TB_RECF_TIDS | TB_RECF_PIDS);
	if (f->which & TB_RECF_TIDS)
		f->ntids = read_set(bpf_map__fd(r->skel->maps.tb_tids), ids);
	if (f->which & TB_RECF_PIDS)
		f->npids = read_set(bpf_map__fd(r->skel->maps.tb_pids), ids + f->ntids);
	f->hdr.type = TB_REC_FILTER;
	f->hdr.size = (__u16)TB_REC_ALIGN(sizeof(*f) + (f->ntids + f->npids) * sizeof(__u32));
	f->hdr.cpu = ~0u;
	return f;
}

static bool same_filter(const struct tb_rec_filter *a, const struct tb_rec_filter *b)
{
	return a->which == b->which && a->ntids == b->ntids && a->npids == b->npids &&
	       !memcmp(a + 1, b + 1, (a->ntids + a->npids) * sizeof(__u32));
}

/* Logs the filter in effect, stamped ts, when it differs from the one
 * the file has (fresh: a new file, which has none, and so no filter). 0
 * or a negative errno. */
int rec_filter_log(struct recorder *r, __u64 ts, bool fresh)
{
	struct tb_rec_filter *f = filter_now(r);
	int err;

	if (!f)
		return -ENOMEM;
	if (fresh) {
		free(r->filter_logged);
		r->filter_logged = NULL;
	}
	if (r->filter_logged ? same_filter(f, r->filter_logged) : !f->which) {
		free(f);
		return 0;
	}
	f->hdr.ts = ts;
	err = tb_writer_append(r->w, &f->hdr);
	free(r->filter_logged);
	r->filter_logged = f;
	return err;
}
