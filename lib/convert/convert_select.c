// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert_select.c - the converter's fourth stage: selection and parts
 * (docs/tracebpf-convert.md, FILTERS and SPLIT).
 *
 * Owns: the filters (--pid, --tid, --cat, --name, --time), which keep or
 * leave out each event, and an async slice or a flow whole by its first
 * event (struct pair); the parts of --split, JSON files of about a size
 * each, cut between two timestamps, a pair staying in the part it began
 * in; kernel records left out by the filters.
 *
 * Receives: output events (struct oev) in ts order from the queue, as its
 * sink (tb_conv_sel_write, convert_queue.c); kernel records from the model
 * (tb_conv_add_kernel).
 * Hands on: each event it keeps, with its part's JSON writer (struct
 * part, struct tb_json), to the renderer (tb_conv_write_event,
 * convert_render.c); at the end each part to tb_conv_render_tail, then,
 * with --split, the parts renamed into place; each switch record to the
 * CPUs' chains (tb_conv_on_switch, convert_sched.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convert/convert_int.h"
#include "ftrace.h"
#include "util/print.h"

/* Whether e passes the filters: by its real pid (e->pid is the recorded
 * one until tb_conv_add_out, the incarnation's after: TB_PID_SPAN). */
bool tb_conv_sel_match(const struct conv *c, const struct oev *e)
{
	struct tb_filter_event v = {
		.ph = e->ph, .ts = e->ts, .dur = e->dur,
		.pid = (uint32_t)(e->pid & (TB_PID_SPAN - 1)), .tid = e->tid,
		.cat = e->site->cat,
	};

	v.name = tb_conv_ev_name(e->site, e->ev, &v.name_len);
	return tb_filter_match(&c->filt, &v);
}

/* A pair is kept or left out by its first event. */
void tb_conv_pair_decide(struct conv *c, struct pair *p, const struct oev *e)
{
	if (!p || p->decided)
		return;
	p->decided = true;
	p->keep = !c->filtering || tb_conv_sel_match(c, e);
}

static struct part *cur_part(struct conv *c)
{
	return &c->parts[c->nparts - 1];
}

static void part_close(struct conv *c, struct part *p);

/* p no longer holds its part open; a part the next one followed closes
 * when nothing holds it. */
static void pair_uncount(struct conv *c, struct pair *p)
{
	struct part *part;

	if (!p->counted)
		return;
	p->counted = false;
	part = &c->parts[p->part - 1];
	if (!--part->open_pairs && part != cur_part(c))
		part_close(c, part);
}

/* It will not end (a flow cut at a gap): it no longer holds a part open. */
void tb_conv_pair_abandon(struct conv *c, struct pair *p)
{
	if (!p)
		return;
	p->abandoned = true;
	pair_uncount(c, p);
}

/* e, of a pair, was written to part: the pair's first event there keeps
 * it open until the last (which may come first: a flow's end moved to an
 * earlier slice begin). */
static void pair_written(struct conv *c, const struct oev *e, struct part *part)
{
	struct pair *p = e->pair;
	bool first = !p->part;

	if (first)
		p->part = (size_t)(part - c->parts) + 1;
	if (e->pair_end) {
		p->closed = true;
		pair_uncount(c, p);
	} else if (first && !p->closed && !p->abandoned) {
		p->counted = true;
		part->open_pairs++;
	}
}

/* Names are written for the processes and threads a part's events name. */
static int note_task(struct part *p, const struct oev *e)
{
	uint64_t key = e->pid << 22 | e->tid;
	int err;

	if (key + 1 == p->last_task)
		return 0;
	p->last_task = key + 1;
	err = tb_hmap_put(&p->pids, e->pid, (void *)1);
	return err ? err : tb_hmap_put(&p->tasks, key, (void *)1);
}

/* Kernel text grew to `bytes` with a line at ts (marked every 4 KiB). */
static int kq_push(struct conv *c, uint64_t ts, uint64_t bytes)
{
	struct kmark *last = c->kq_n > c->kq_head ? &c->kq[c->kq_n - 1] : NULL;

	if (last && bytes - last->bytes < 4096)
		return 0;
	if (c->kq_head > c->kq_n / 2) {
		memmove(c->kq, c->kq + c->kq_head, (c->kq_n - c->kq_head) * sizeof(*c->kq));
		c->kq_n -= c->kq_head;
		c->kq_head = 0;
	}
	if (tb_conv_grow_array((void **)&c->kq, &c->kq_cap, c->kq_n + 1, sizeof(*c->kq)))
		return -ENOMEM;
	c->kq[c->kq_n++] = (struct kmark){ ts, bytes };
	return 0;
}

/* The kernel text's bytes before ts (to 4 KiB, never more). */
static uint64_t kq_upto(struct conv *c, uint64_t ts)
{
	while (c->kq_head < c->kq_n && c->kq[c->kq_head].ts < ts) {
		c->kdone_ts = c->kq[c->kq_head].ts;
		c->kdone = c->kq[c->kq_head++].bytes;
	}
	return c->kdone;
}

/* The kernel text's bytes before a part that begins at ts, never fewer
 * (to 4 KiB): what the part's own text is counted from, so that a part
 * is never cut before its text and events reach SIZE. Exact when the cut
 * is right after a marked line (split_kernel's cut). */
static uint64_t kq_before_part(struct conv *c, uint64_t ts)
{
	uint64_t below = kq_upto(c, ts);

	if (c->kdone_ts + 1 == ts && below)
		return below;
	return c->kq_head < c->kq_n ? c->kq[c->kq_head].bytes : tb_ftrace_bytes(c->ftrace);
}

/* The part's kernel text so far, as the marks tell (at most 4 KiB short). */
static uint64_t part_kbytes(const struct part *p, uint64_t upto)
{
	return upto > p->kbytes0 ? upto - p->kbytes0 : 0;
}

/* What reached the current part's FILE and what the JSON writer still
 * holds for it (up to TB_JSON_BUF, more than a small --split). */
static uint64_t file_bytes(struct conv *c, struct part *p)
{
	off_t n = ftello(p->f);

	return (n > 0 ? (uint64_t)n : 0) + c->j.len;
}

static int next_part(struct conv *c, uint64_t ts);

/* Cuts after the kernel lines before ts that fill the part: a burst of
 * scheduler lines between two events spreads over parts. A cut after a
 * line not earlier than every written event keeps the order, since every
 * event still to come is at ts or later. */
static void split_kernel(struct conv *c, uint64_t ts)
{
	while (!c->sel_err && c->kq_head < c->kq_n && c->kq[c->kq_head].ts < ts) {
		struct kmark *m = &c->kq[c->kq_head];
		struct part *p = cur_part(c);

		if (m->ts >= c->last_written_ts && m->ts + 1 > p->from &&
		    c->part_fbytes + part_kbytes(p, m->bytes) >= c->split) {
			next_part(c, m->ts + 1);   /* after the line at m->ts */
			continue;
		}
		c->kdone_ts = m->ts;
		c->kdone = m->bytes;
		c->kq_head++;
	}
}

/* Cuts before e when the part is full, between two timestamps: at a
 * kernel line if the kernel text filled it, else at e. The file's size
 * is looked at every check_every events (ftello is not free). */
static void maybe_split(struct conv *c, const struct oev *e)
{
	struct part *p;

	if (c->sel_err)   /* no part to write to: said once */
		return;
	if (++c->part_events % c->check_every == 0)
		c->part_fbytes = file_bytes(c, cur_part(c));
	split_kernel(c, e->ts);
	p = cur_part(c);
	if (!c->want_split)
		c->want_split = c->part_fbytes + part_kbytes(p, c->kdone) >= c->split;
	if (c->want_split && e->ts > c->last_written_ts && !c->sel_err)
		next_part(c, e->ts);
}

/* Whether the filters keep e: a pair's event as its pair was decided. */
bool tb_conv_sel_keep(const struct conv *c, const struct oev *e)
{
	return e->pair ? e->pair->keep : !c->filtering || tb_conv_sel_match(c, e);
}

/* Writes e if the filters keep it, to the current part or, for a later
 * event of a pair, to the part the pair began in. Whether it was. */
bool tb_conv_sel_write(struct conv *c, const struct oev *e)
{
	struct part *part;

	if (!tb_conv_sel_keep(c, e)) {
		c->left_out++;
		return false;
	}
	if (e->pair && e->pair->part) {
		part = &c->parts[e->pair->part - 1];
	} else {
		if (c->split)
			maybe_split(c, e);
		part = cur_part(c);
		c->last_written_ts = e->ts;
	}
	if (!c->sel_err)
		c->sel_err = note_task(part, e);
	tb_conv_write_event(c->tmpls, part == cur_part(c) ? &c->j : &part->j, e);
	if (e->pair)
		pair_written(c, e, part);
	return true;
}

/* A kept kernel record, to a model's sink that takes them: the names
 * are learnt (tb_model_threads names the CPUs' tasks), no text kept. */
static int kernel_to_sink(struct conv *c, const struct tb_rec_hdr *h)
{
	int err;

	tb_ftrace_collect(c->ftrace, false);
	err = tb_ftrace_add(c->ftrace, h);
	tb_ftrace_collect(c->ftrace, true);
	return err ? err : c->ksink->kernel(c->ksink->ctx, h);
}

/* A kernel record, into systemTraceEvents unless the filters leave it
 * out; its names are learnt either way (a later line may need them). */
int tb_conv_add_kernel(struct conv *c, const struct tb_rec_hdr *h)
{
	bool keep = !c->filtering || h->type == TB_REC_FORMAT ||
		    tb_filter_match_kernel(&c->filt, h);
	int err = 0;

	/* each CPU's chain of the switches shown (convert_sched.c) */
	if (h->type == TB_REC_SWITCH)
		err = tb_conv_on_switch(c, (const void *)h, keep);
	if (err)
		return err;
	if (keep && c->ksink)
		return kernel_to_sink(c, h);
	if (keep) {
		err = tb_ftrace_add(c->ftrace, h);
		if (!err && c->split)
			err = kq_push(c, h->ts, tb_ftrace_bytes(c->ftrace));
		return err;
	}
	c->kleft_out++;
	tb_ftrace_collect(c->ftrace, false);
	err = tb_ftrace_add(c->ftrace, h);
	tb_ftrace_collect(c->ftrace, true);
	return err;
}

/* A part's file failed (with --split: said here, naming it). */
static int split_fail(struct conv *c, const char *verb, const char *obj, int err)
{
	if (!c->split)
		return err;
	tb_convert_fail(verb, obj, err, tb_write_hint(err));
	c->said = true;
	return err;
}

/* A part's temporary, opened again to append its tail: the file mkstemp
 * made, not a symbolic link put at its name since (O_NOFOLLOW). NULL and
 * errno set on failure. */
static FILE *reopen_part(const char *tmp)
{
	int fd = open(tmp, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC), e;
	FILE *f;

	if (fd < 0)
		return NULL;
	f = fdopen(fd, "a");
	if (!f) {
		e = errno;
		close(fd);
		errno = e;
	}
	return f;
}

/* The parts' tails (each finished part is opened again to append it),
 * then, with --split, every part renamed into place. */
static int finish_parts(struct conv *c, struct tb_reader *r)
{
	size_t i;
	int err = 0;

	for (i = 0; i < c->nparts && !err; i++) {
		struct part *p = &c->parts[i];
		bool last = i == c->nparts - 1;
		struct tb_json *j = last ? &c->j : &p->j;

		if (!p->f && !(p->f = reopen_part(p->tmp)))
			return split_fail(c, "open", p->tmp, -errno);
		j->f = p->f;
		err = tb_conv_render_tail(c, r, j, p->f, p);
		p->bytes = ftello(p->f) > 0 ? (uint64_t)ftello(p->f) : 0;
		if (c->split) {
			if (fclose(p->f) && !err)
				err = -errno;
			p->f = NULL;
			if (err)
				return split_fail(c, "write", p->name, err);
		}
	}
	for (i = 0; i < c->nparts && !err && c->split; i++) {
		struct part *p = &c->parts[i];

		if (rename(p->tmp, p->name))
			return split_fail(c, "rename", p->tmp, -errno);
		free(p->tmp);
		p->tmp = NULL;
	}
	return err;
}

int tb_conv_render_end(struct conv *c, struct tb_reader *r, FILE *f)
{
	if (c->split)
		split_kernel(c, UINT64_MAX);   /* the kernel lines after the last event */
	if (c->sel_err)
		return c->sel_err;
	if (c->selective)
		return finish_parts(c, r);
	return tb_conv_render_tail(c, r, &c->j, f, NULL);
}

/* "OUT-NNN.json" for OUT.json (or OUT), part n from 1. */
static char *part_name(const char *out, size_t n)
{
	size_t len = strlen(out);
	char *name;

	if (len > 5 && !strcmp(out + len - 5, ".json"))
		len -= 5;
	if (asprintf(&name, "%.*s-%03zu.json", (int)len, out, n) < 0)
		return NULL;
	return name;
}

/* A new part from ts on, written to f, or with --split to a temporary of
 * its own (said when it fails). */
static int add_part(struct conv *c, uint64_t ts, FILE *f)
{
	struct part *p;
	int err = tb_conv_grow_array((void **)&c->parts, &c->parts_cap, c->nparts + 1,
				     sizeof(*c->parts));

	if (err) {
		tb_convert_fail("convert", "--split", err, NULL);
		c->said = true;
		return err;
	}
	p = &c->parts[c->nparts];
	*p = (struct part){ .f = f, .from = ts, .to = UINT64_MAX, .kbytes0 = kq_before_part(c, ts) };
	if (c->split) {
		p->name = part_name(c->split_base, c->nparts + 1);
		if (!p->name) {
			tb_convert_fail("create", c->split_base, -ENOMEM, NULL);
			c->said = true;
			return -ENOMEM;
		}
		err = tb_convert_create_tmp(p->name, p->name, &p->tmp, &p->f);
		if (err) {
			free(p->name);
			c->said = true;   /* create_tmp did */
			return err;
		}
	}
	c->nparts++;
	tb_conv_render_begin(c, p->f);
	return 0;
}

/* Closes a part whose events are all written (its tail is written at
 * the end, when the names are known). A failure is said and kept in
 * c->sel_err. */
static void part_close(struct conv *c, struct part *p)
{
	int err = tb_json_error(&p->j);

	if (fclose(p->f) && !err)
		err = -errno;
	p->f = NULL;
	p->j.f = NULL;
	if (err && !c->sel_err) {
		tb_convert_fail("write", p->name, err, tb_write_hint(err));
		c->said = true;
		c->sel_err = err;
	}
}

/* Ends the current part's span before ts and starts the next. The part
 * stays open while pairs that began in it have not ended. */
static int next_part(struct conv *c, uint64_t ts)
{
	struct part *p = cur_part(c);

	p->to = ts;
	p->j = c->j;
	if (!p->open_pairs)
		part_close(c, p);
	if (!c->sel_err) {
		c->want_split = false;
		c->part_events = 0;
		c->part_fbytes = 0;
		c->sel_err = add_part(c, ts, NULL);
	}
	/* Without a new part, c->j still writes into the part just closed (its
	 * FILE freed): the error, sticky, stops that (a write into the freed
	 * FILE ended in "free(): invalid pointer" on a full disk). */
	if (c->sel_err)
		c->j.err = c->sel_err;
	return c->sel_err;
}

/* The filters f (NULL or none given: none), before the first record:
 * pairs are tracked while they are on. */
void tb_conv_sel_filter(struct conv *c, const struct tb_filter *f, struct tb_reader *r)
{
	c->filtering = f && tb_filter_active(f);
	if (!c->filtering)
		return;
	c->selective = true;
	c->filt = *f;   /* shares its lists: never freed here */
	tb_filter_set_base(&c->filt, tb_reader_info(r)->start_ts);
}

/* Filters and --split, before the first record. out: the file of a
 * conversion without --split. */
int tb_conv_sel_start(struct conv *c, const struct tb_convert_opts *o, struct tb_reader *r,
		      FILE *out)
{
	int err;

	tb_conv_sel_filter(c, o->filter, r);
	c->split = o->split;
	c->selective = c->filtering || c->split;
	if (!c->selective) {
		tb_conv_render_begin(c, out);
		return 0;
	}
	if (c->split) {
		c->split_base = o->out;
		/* about 1% of a part between two looks at its size */
		c->check_every = c->split / 12800;
		if (c->check_every < 1)
			c->check_every = 1;
		if (c->check_every > 4096)
			c->check_every = 4096;
		err = tb_ftrace_keep_times(c->ftrace);
		if (err) {
			tb_convert_fail("create", "a temporary file for --split", err, NULL);
			c->said = true;
			return err;
		}
	}
	return add_part(c, 0, out);
}

void tb_conv_free_parts(struct conv *c)
{
	for (size_t i = 0; i < c->nparts; i++) {
		struct part *p = &c->parts[i];

		if (p->f && c->split)
			fclose(p->f);
		if (p->tmp)
			unlink(p->tmp);
		free(p->tmp);
		free(p->name);
		tb_hmap_free(&p->pids);
		tb_hmap_free(&p->tasks);
	}
	free(c->parts);
}
