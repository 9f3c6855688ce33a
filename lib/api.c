// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * api.c - libtracebpf's public API (tracebpf/reader.h) over the reader
 * (tbfile.h), the time-order merge (merge.h), the model (model.h) and the
 * renderers (convert.h, ftrace.h). Only these functions are exported from
 * the shared library (-fvisibility=hidden, TRACEBPF_API).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "convert/convert.h"
#include "ftrace.h"
#include "merge.h"
#include "convert/model.h"
#include "format/tbfile.h"
#include "tracebpf/reader.h"

#ifndef TRACEBPF_VERSION
#define TRACEBPF_VERSION "0.1.0"
#endif

/* The public record header and record types are the file's own. */
_Static_assert(sizeof(struct tracebpf_record) == sizeof(struct tb_rec_hdr) &&
	       __builtin_offsetof(struct tracebpf_record, size) ==
	       __builtin_offsetof(struct tb_rec_hdr, size) &&
	       __builtin_offsetof(struct tracebpf_record, cpu) ==
	       __builtin_offsetof(struct tb_rec_hdr, cpu) &&
	       __builtin_offsetof(struct tracebpf_record, ts) ==
	       __builtin_offsetof(struct tb_rec_hdr, ts) &&
	       __builtin_offsetof(struct tracebpf_record, pid) ==
	       __builtin_offsetof(struct tb_rec_hdr, pid) &&
	       __builtin_offsetof(struct tracebpf_record, tid) ==
	       __builtin_offsetof(struct tb_rec_hdr, tid), "tracebpf_record layout");
_Static_assert(TRACEBPF_REC_EVENT == TB_REC_EVENT && TRACEBPF_REC_SITE == TB_REC_SITE &&
	       TRACEBPF_REC_FORK == TB_REC_FORK && TRACEBPF_REC_EXEC == TB_REC_EXEC &&
	       TRACEBPF_REC_EXIT == TB_REC_EXIT && TRACEBPF_REC_COMM == TB_REC_COMM &&
	       TRACEBPF_REC_STATS == TB_REC_STATS && TRACEBPF_REC_EVENT_ID == TB_REC_EVENT_ID &&
	       TRACEBPF_REC_SWITCH == TB_REC_SWITCH && TRACEBPF_REC_WAKE == TB_REC_WAKE &&
	       TRACEBPF_REC_KTASK == TB_REC_KTASK && TRACEBPF_REC_CPU == TB_REC_CPU &&
	       TRACEBPF_REC_TP == TB_REC_TP && TRACEBPF_REC_FORMAT == TB_REC_FORMAT &&
	       TRACEBPF_REC_CMDLINE == TB_REC_CMDLINE && TRACEBPF_REC_CTL == TB_REC_CTL &&
	       TRACEBPF_REC_GAP == TB_REC_GAP && TRACEBPF_REC_CATS == TB_REC_CATS &&
	       TRACEBPF_REC_RSS == TB_REC_RSS && TRACEBPF_REC_FILTER == TB_REC_FILTER,
	       "tracebpf record types");

/* Records held in time order at most (as convert). */
#define MERGE_MAX (4u << 20)

struct tracebpf_trace {
	struct tb_reader *r;
	struct tb_merge *merge;     /* tracebpf_next_record's, made at its first call */
};

struct tracebpf_model {
	const struct tb_model *m;
};

TRACEBPF_API const char *tracebpf_version(void)
{
	return TRACEBPF_VERSION;
}

static int wrap(struct tracebpf_trace **t, struct tb_reader *r, int err)
{
	*t = NULL;
	if (err)
		return err;
	*t = calloc(1, sizeof(**t));
	if (!*t) {
		tb_reader_close(r);
		return -ENOMEM;
	}
	(*t)->r = r;
	return 0;
}

TRACEBPF_API int tracebpf_open(struct tracebpf_trace **t, const char *path)
{
	struct tb_reader *r = NULL;
	int err = tb_reader_open(&r, path);

	return wrap(t, r, err);
}

TRACEBPF_API int tracebpf_open_fd(struct tracebpf_trace **t, int fd, bool own)
{
	struct tb_reader *r = NULL;
	int err = tb_reader_open_fd(&r, fd, own);

	return wrap(t, r, err);
}

TRACEBPF_API int tracebpf_connect(struct tracebpf_trace **t, const char *path)
{
	struct tb_reader *r = NULL;
	int err = tb_reader_connect(&r, path);

	return wrap(t, r, err);
}

TRACEBPF_API void tracebpf_follow(struct tracebpf_trace *t, const volatile int *stop)
{
	tb_reader_set_follow(t->r, stop);
}

TRACEBPF_API void tracebpf_close(struct tracebpf_trace *t)
{
	if (!t)
		return;
	tb_merge_free(t->merge);
	tb_reader_close(t->r);
	free(t);
}

TRACEBPF_API void tracebpf_get_info(const struct tracebpf_trace *t, struct tracebpf_info *o)
{
	const struct tb_file_info *i = tb_reader_info(t->r);

	*o = (struct tracebpf_info){
		.major = i->major, .minor = i->minor, .clock_id = i->clock_id,
		.realtime_offset_ns = i->realtime_offset_ns, .start_ns = i->start_ts,
		.hostname = i->hostname, .kernel = i->kernel, .cmdline = i->cmdline,
	};
}

TRACEBPF_API const char *tracebpf_tail_reason(const struct tracebpf_trace *t)
{
	return tb_reader_tail_reason(t->r);
}

TRACEBPF_API uint64_t tracebpf_tail_bytes(const struct tracebpf_trace *t)
{
	return tb_reader_tail_reason(t->r) ? tb_reader_tail_bytes(t->r) : 0;
}

TRACEBPF_API bool tracebpf_finished(const struct tracebpf_trace *t)
{
	return tb_reader_finished(t->r);
}

TRACEBPF_API int tracebpf_next_record(struct tracebpf_trace *t,
				      const struct tracebpf_record **rec)
{
	const struct tb_rec_hdr *h;
	int ret;

	if (!t->merge) {
		ret = tb_merge_new(&t->merge, t->r, tb_model_rank, MERGE_MAX);
		if (ret)
			return ret;
		tb_merge_ahead(t->merge, TB_AHEAD_MERGE);
	}
	ret = tb_merge_next(t->merge, &h);
	*rec = ret > 0 ? (const struct tracebpf_record *)h : NULL;
	return ret;
}

/* ---- the model ---- */

struct model_call {
	const struct tracebpf_model_ops *ops;
};

static void model_event(void *ctx, const struct oev *e)
{
	const struct model_call *mc = ctx;
	struct tracebpf_event pub;

	if (e->ph == 'v')
		return;   /* a memory dump: its counters come as 'C' events */
	tb_model_public_event(e, &pub);
	mc->ops->event(mc->ops->ctx, &pub);
}

static int model_end(void *ctx, const struct tb_model *m)
{
	const struct model_call *mc = ctx;
	struct tracebpf_model pub = { m };

	return mc->ops->end ? mc->ops->end(mc->ops->ctx, &pub) : 0;
}

TRACEBPF_API int tracebpf_model_run(struct tracebpf_trace *t,
				    const struct tracebpf_model_ops *ops)
{
	struct model_call mc = { ops };
	const struct tb_model_sink sink = { .ctx = &mc, .event = model_event, .end = model_end };
	bool read_failed;

	if (!ops || !ops->event)
		return -EINVAL;
	if (t->merge)
		return -EBUSY;   /* records were already taken one by one */
	return tb_model_run(t->r, &sink, &read_failed);
}

TRACEBPF_API void tracebpf_model_counts(const struct tracebpf_model *m,
					struct tracebpf_counts *o)
{
	struct tb_model_counts c;

	tb_model_counts(m->m, &c);
	*o = (struct tracebpf_counts){
		.events = c.events, .unresolved_sites = c.unresolved_sites,
		.unmatched_ends = c.unmatched_ends,
		.ends_before_recording = c.ends_before_recording,
		.gaps = c.gaps, .gap_records = c.gap_records, .kernel_gaps = c.kernel_gaps,
		.kernel_gap_records = c.kernel_gap_records,
		.slices_cut_at_gaps = c.slices_cut_at_gaps, .ends_after_gaps = c.ends_after_gaps,
		.events_in_gaps = c.events_in_gaps, .stopped_windows = c.stopped_windows,
		.records_while_stopped = c.records_while_stopped,
		.drops_total = c.drops_total, .lost_processes = c.lost_processes,
	};
}

struct thread_call {
	int (*fn)(void *ctx, const struct tracebpf_thread *t);
	void *ctx;
};

static int thread_of(void *ctx, const struct tb_model_thread *t)
{
	const struct thread_call *tc = ctx;
	const struct tracebpf_thread pub = {
		.pid = t->pid, .tid = t->tid, .name = t->name, .process = t->process,
		.name_len = t->name_len, .process_len = t->process_len,
	};

	return tc->fn(tc->ctx, &pub);
}

TRACEBPF_API int tracebpf_model_threads(const struct tracebpf_model *m,
					int (*fn)(void *ctx, const struct tracebpf_thread *t),
					void *ctx)
{
	struct thread_call tc = { fn, ctx };

	return tb_model_threads(m->m, thread_of, &tc);
}

/* ---- renderers ---- */

TRACEBPF_API int tracebpf_write_chrome_json(struct tracebpf_trace *t, FILE *out)
{
	if (t->merge)
		return -EBUSY;
	return tb_convert_file(t->r, out);
}

/* One kernel record's systemTraceEvents line, after the header at the
 * first: 1 written, 0 none, -errno. */
static int ftrace_line(struct tb_ftrace *f, const struct tb_rec_hdr *h, FILE *out, long n)
{
	static const char hdr[] = "# tracer: nop\n# clock_type=LINUX_CLOCK_MONOTONIC\n";
	char line[4096];
	int len;

	if (!tb_ftrace_is_kernel(h->type))
		return 0;
	len = tb_ftrace_format_line(f, h, true, line, sizeof(line));
	if (len <= 0)
		return 0;
	if (!n && fputs(hdr, out) == EOF)
		return -EIO;
	if (fwrite(line, 1, (size_t)len, out) != (size_t)len || fputc('\n', out) == EOF)
		return -EIO;
	return 1;
}

TRACEBPF_API long tracebpf_write_ftrace_text(struct tracebpf_trace *t, FILE *out)
{
	const struct tracebpf_record *rec;
	struct tb_ftrace *f;
	long n = 0;
	int ret;

	ret = tb_ftrace_new(&f);
	if (ret)
		return ret;
	tb_ftrace_collect(f, false);
	while ((ret = tracebpf_next_record(t, &rec)) > 0) {
		const struct tb_rec_hdr *h = (const struct tb_rec_hdr *)rec;

		ret = tb_ftrace_add(f, h);
		if (!ret)
			ret = ftrace_line(f, h, out, n);
		if (ret < 0)
			break;
		n += ret;
	}
	tb_ftrace_free(f);
	if (!ret && fflush(out))
		ret = -EIO;
	return ret < 0 ? ret : n;
}
