// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record_filter.c - the threads and processes whose application events a
 * recording records (record --tid, tracebpf ctl filter), in the trace
 * file: a TB_REC_FILTER record at the start of a file when a filter is
 * on, and after each change. The kernel side's sets and switch are
 * written by record --tid (record_attach.c) and by `tracebpf ctl filter`
 * (ctl.c), which asks the recorder to log the change once it is made.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "record.skel.h"
#include "format/tbctl.h"
#include "record/recorder.h"
#include "format/tbfile.h"

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
