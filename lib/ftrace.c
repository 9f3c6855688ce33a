// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ftrace.c - kernel records as ftrace text (systemTraceEvents, dump lines).
 *
 * What the viewers need (docs/output.md), and how it is met here:
 * - header "# tracer: nop", "# clock_type=LINUX_CLOCK_MONOTONIC" (the
 *   records' bpf_ktime_get_ns clock, the clock of traceEvents), every line
 *   ending with '\n';
 * - "<comm>-<tid> (<tgid>) [<cpu>] <4 flags> <sec>.<usec>: " with one space
 *   after ')' and exactly 4 flag characters (catapult's [dX.][N.][Hhs.]
 *   [0-9a-f.]);
 * - no spaces (nor control characters) in any comm, in the prefix or in the
 *   fields: Perfetto splits the fields on spaces;
 * - sched_waking for Perfetto, sched_wakeup with success=1 for catapult;
 * - prev_state as one letter or "R+" (catapult's (\S\+?|\S\|\S)); the
 *   states catapult does not know (I for idle kernel threads, P for parked)
 *   are shown as S, the sleep they are;
 * - no fork/exec/exit/rename lines (neither viewer reads them; processes
 *   and threads come from M events and the TGID column).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>

#include "ftrace.h"
#include "util/hmap.h"
#include "util/json.h"

struct task_info {
	uint32_t tgid;
	char comm[16];
};

struct tb_ftrace {
	struct tb_hmap tasks;         /* tid -> struct task_info: last comm, tgid */
	struct tep_handle *tep;
	unsigned char *tpbuf;         /* zero-padded copy of a raw entry */
	size_t tpbuf_dirty;
	FILE *spill;                  /* the systemTraceEvents text so far */
	FILE *times;                  /* each line's ts (tb_ftrace_keep_times) */
	uint64_t len;
	bool no_collect;
	char *text;                   /* tb_ftrace_text's copy */
	uint64_t lines, truncated;
	struct trace_seq seq;
};

/* Largest offset + length a __data_loc field can describe (16 + 16 bits),
 * so libtraceevent never reads outside tpbuf whatever a record claims. */
#define TPBUF_SIZE (0x10000u + 0x10000u + 64u)

bool tb_ftrace_is_kernel(uint16_t type)
{
	return type >= TB_REC_SWITCH && type <= TB_REC_FORMAT;
}

int tb_ftrace_new(struct tb_ftrace **fp)
{
	struct tb_ftrace *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->tep = tep_alloc();
	f->tpbuf = calloc(1, TPBUF_SIZE);
	if (!f->tep || !f->tpbuf) {
		tb_ftrace_free(f);
		return -ENOMEM;
	}
	tep_set_long_size(f->tep, 8);
	tep_set_page_size(f->tep, 4096);
	trace_seq_init(&f->seq);
	*fp = f;
	return 0;
}

void tb_ftrace_free(struct tb_ftrace *f)
{
	if (!f)
		return;
	if (f->tep)
		trace_seq_destroy(&f->seq);
	if (f->tep)
		tep_free(f->tep);
	free(f->tpbuf);
	for (size_t i = 0; i < f->tasks.cap; i++)
		free(f->tasks.vals[i]);
	tb_hmap_free(&f->tasks);
	free(f->text);
	if (f->spill)
		fclose(f->spill);
	if (f->times)
		fclose(f->times);
	free(f);
}

/* ------------------------------------------------------------- names -- */

static struct task_info *task_get(struct tb_ftrace *f, uint32_t tid, bool create)
{
	struct task_info *t = tb_hmap_get(&f->tasks, tid);

	if (t || !create)
		return t;
	t = calloc(1, sizeof(*t));
	if (t && tb_hmap_put(&f->tasks, tid, t)) {
		free(t);
		t = NULL;
	}
	return t;
}

static void learn(struct tb_ftrace *f, uint32_t tid, uint32_t tgid, const char *comm)
{
	struct task_info *t = task_get(f, tid, true);

	if (!t)
		return;   /* names are best effort: "<...>" */
	t->tgid = tgid;
	if (comm) {
		memset(t->comm, 0, sizeof(t->comm));
		memcpy(t->comm, comm, strnlen(comm, 16));
	}
}

/* A comm as a single token: printable ASCII, no spaces, never empty. */
static void clean_comm(char out[17], const char *comm, size_t max)
{
	size_t i, n = strnlen(comm, max < 16 ? max : 16);

	for (i = 0; i < n; i++) {
		unsigned char ch = comm[i];

		out[i] = ch > ' ' && ch < 0x7f ? ch : '_';
	}
	out[n] = 0;
	if (!n)
		strcpy(out, "<...>");
}

/* ------------------------------------------------------------ output -- */

struct line {
	char *buf;
	size_t len, cap;   /* len may exceed cap - 1: truncated */
};

static void put(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(l->len < l->cap ? l->buf + l->len : NULL,
		      l->len < l->cap ? l->cap - l->len : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		l->len += n;
}

static void prefix(struct tb_ftrace *f, struct line *l, const struct tb_rec_hdr *h,
		   const char *flags)
{
	struct task_info *t = task_get(f, h->tid, false);
	char comm[17];

	if (h->tid == 0)
		strcpy(comm, "<idle>");
	else if (t && t->comm[0])
		clean_comm(comm, t->comm, 16);
	else
		strcpy(comm, "<...>");
	put(l, "%16s-%-7" PRIu32 " (%7" PRIu32 ") [%03" PRIu32 "] %.4s %5" PRIu64 ".%06" PRIu64 ": ",
	    comm, h->tid, h->pid, h->cpu == ~0u ? 0 : h->cpu, flags,
	    (uint64_t)(h->ts / 1000000000u), (uint64_t)(h->ts % 1000000000u / 1000u));
}

static const char *state_str(uint16_t st, bool viewers)
{
	static const char letters[] = "SDTtXZPI";
	static char buf[4];
	int bit = -1;

	if (st & TB_TASK_PREEMPTED)
		return "R+";
	for (int i = 7; i >= 0; i--) {
		if (st & (1u << i)) {
			bit = i;
			break;
		}
	}
	if (bit < 0)
		return "R";
	if (viewers && (letters[bit] == 'I' || letters[bit] == 'P'))
		return "S";
	buf[0] = letters[bit];
	buf[1] = 0;
	return buf;
}

static void fmt_switch(struct tb_ftrace *f, struct line *l, const struct tb_rec_switch *r,
		       bool viewers)
{
	char pc[17], nc[17];

	clean_comm(pc, r->prev_comm, 16);
	clean_comm(nc, r->next_comm, 16);
	prefix(f, l, &r->hdr, "d..2");
	put(l, "sched_switch: prev_comm=%s prev_pid=%" PRIu32 " prev_prio=%d prev_state=%s ==> "
	    "next_comm=%s next_pid=%" PRIu32 " next_prio=%d", pc, r->hdr.tid, r->prev_prio,
	    state_str(r->prev_state, viewers), nc, r->next_tid, r->next_prio);
}

static void fmt_wake(struct tb_ftrace *f, struct line *l, const struct tb_rec_wake *r,
		     bool viewers)
{
	char c[17];

	clean_comm(c, r->comm, 16);
	prefix(f, l, &r->hdr, "d...");
	if (r->kind == TB_WAKE_WAKING)
		put(l, "sched_waking: comm=%s pid=%" PRIu32 " prio=%d target_cpu=%03" PRIu32,
		    c, r->tid, r->prio, r->target_cpu);
	else
		put(l, "%s: comm=%s pid=%" PRIu32 " prio=%d success=1 target_cpu=%03" PRIu32,
		    r->kind == TB_WAKE_WAKEUP_NEW && !viewers ? "sched_wakeup_new" : "sched_wakeup",
		    c, r->tid, r->prio, r->target_cpu);
}

static void fmt_ktask(struct tb_ftrace *f, struct line *l, const struct tb_rec_ktask *r)
{
	char c[17], c2[17];

	clean_comm(c, r->comm, 16);
	clean_comm(c2, r->comm2, 16);
	prefix(f, l, &r->hdr, "....");
	switch (r->kind) {
	case TB_KTASK_FORK:
		put(l, "sched_process_fork: pid=%" PRIu32 " child_comm=%s child_pid=%" PRIu32
		    " child_tgid=%" PRIu32, r->hdr.tid, c, r->tid, r->tgid);
		break;
	case TB_KTASK_EXEC:
		put(l, "sched_process_exec: comm=%s pid=%" PRIu32 " old_pid=%" PRIu32,
		    c, r->hdr.tid, r->tid);
		break;
	case TB_KTASK_EXIT:
		put(l, "sched_process_exit: comm=%s pid=%" PRIu32 " exit_code=%d",
		    c, r->tid, r->value);
		break;
	default:
		put(l, "task_rename: pid=%" PRIu32 " oldcomm=%s newcomm=%s", r->tid, c, c2);
		break;
	}
}

static void fmt_cpu(struct tb_ftrace *f, struct line *l, const struct tb_rec_cpu *r)
{
	prefix(f, l, &r->hdr, "d...");
	put(l, "%s: state=%" PRIu32 " cpu_id=%" PRIu32,
	    r->kind == TB_CPU_FREQUENCY ? "cpu_frequency" : "cpu_idle", r->state, r->cpu_id);
}

/* Flags from the entry's common_flags and common_preempt_count, as ftrace
 * prints them (4 characters: irqs-off, need-resched, hard/softirq, depth). */
static void tp_flags(const unsigned char *data, char out[5])
{
	unsigned fl = data[2], pc = data[3] & 0xf;

	out[0] = fl & 0x01 ? 'd' : '.';
	out[1] = fl & 0x04 ? 'N' : '.';
	out[2] = (fl & 0x08) && (fl & 0x10) ? 'H' : fl & 0x08 ? 'h' : fl & 0x10 ? 's' : '.';
	out[3] = pc ? "0123456789abcdef"[pc] : '.';
	out[4] = 0;
}

/* Is a dynamic field's data inside the copied bytes? */
static bool tp_complete(struct tep_event *ev, const unsigned char *data, size_t len)
{
	for (struct tep_format_field *fl = ev->format.fields; fl; fl = fl->next) {
		uint32_t loc, off;

		if (!(fl->flags & TEP_FIELD_IS_DYNAMIC))
			continue;
		if ((size_t)fl->offset + 4 > len)
			return false;
		memcpy(&loc, data + fl->offset, 4);
		off = loc & 0xffff;
		if (fl->flags & TEP_FIELD_IS_RELATIVE)
			off += fl->offset + fl->size;
		if ((size_t)off + (loc >> 16) > len)
			return false;
	}
	return true;
}

static void fmt_tp(struct tb_ftrace *f, struct line *l, const struct tb_rec_tp *r, bool viewers)
{
	size_t len = r->len;
	struct tep_record rec = {};
	struct tep_event *ev;
	char flags[5];

	if (len > r->hdr.size - sizeof(*r) || len < 8)
		return;
	ev = tep_find_event(f->tep, r->id);
	if (!ev)
		return;   /* no format for it: nothing to decode with */
	/* libtraceevent trusts __data_loc offsets: give it a zero-padded copy
	 * large enough for any offset a record can claim. */
	if (f->tpbuf_dirty > len)
		memset(f->tpbuf + len, 0, f->tpbuf_dirty - len);
	memcpy(f->tpbuf, r + 1, len);
	f->tpbuf_dirty = len;
	rec.ts = r->hdr.ts;
	rec.cpu = r->hdr.cpu;
	rec.data = f->tpbuf;
	rec.size = len;
	tp_flags(f->tpbuf, flags);
	trace_seq_reset(&f->seq);
	if (viewers)
		/* the event's own print format: the text ftrace shows, which is
		 * what the viewers' parsers were written for */
		tep_print_event(f->tep, &f->seq, &rec, "%s", TEP_PRINT_INFO);
	else
		tep_print_fields(&f->seq, f->tpbuf, len, ev);
	trace_seq_terminate(&f->seq);
	prefix(f, l, &r->hdr, flags);
	put(l, "%s: ", ev->name);
	/* one line per event: no newline or control character may survive */
	for (const char *p = f->seq.buffer + strspn(f->seq.buffer, " "); *p; p++) {
		char ch = (unsigned char)*p < ' ' || *p == 0x7f ? ' ' : *p;

		put(l, "%c", ch);
	}
	while (l->len && l->len <= l->cap && l->buf[l->len - 1] == ' ')
		l->len--;
	if ((r->flags & TB_TPF_TRUNCATED) || !tp_complete(ev, f->tpbuf, len))
		put(l, viewers ? " [truncated]" : " (truncated)");
}

/* A raw entry in the zero-padded buffer, and its event; NULL: none. */
static struct tep_event *tp_load(struct tb_ftrace *f, const struct tb_rec_tp *r)
{
	size_t len = r->len;
	struct tep_event *ev;

	if (len > r->hdr.size - sizeof(*r) || len < 8)
		return NULL;
	ev = tep_find_event(f->tep, r->id);
	if (!ev)
		return NULL;
	if (f->tpbuf_dirty > len)
		memset(f->tpbuf + len, 0, f->tpbuf_dirty - len);
	memcpy(f->tpbuf, r + 1, len);
	f->tpbuf_dirty = len;
	return ev;
}

/* One field's value: a string (a char array or __data_loc) or a number. */
static bool tp_field(struct tb_ftrace *f, struct tep_format_field *fl, size_t len,
		     struct tb_ftrace_field *out)
{
	unsigned long long v;

	*out = (struct tb_ftrace_field){ .name = fl->name };
	if (fl->flags & (TEP_FIELD_IS_STRING | TEP_FIELD_IS_DYNAMIC)) {
		uint32_t loc, off = fl->offset, n = fl->size;

		if ((size_t)fl->offset + 4 > len)
			return false;
		if (fl->flags & TEP_FIELD_IS_DYNAMIC) {
			memcpy(&loc, f->tpbuf + fl->offset, 4);
			off = loc & 0xffff;
			n = loc >> 16;
			if (fl->flags & TEP_FIELD_IS_RELATIVE)
				off += fl->offset + fl->size;
		}
		if ((size_t)off + n > len || off + n >= TPBUF_SIZE)
			return false;
		out->str = (const char *)f->tpbuf + off;
		out->len = strnlen(out->str, n);
		return true;
	}
	if ((size_t)fl->offset + fl->size > len || fl->size > 8 ||
	    tep_read_number_field(fl, f->tpbuf, &v))
		return false;
	out->num = v;
	out->is_signed = fl->flags & TEP_FIELD_IS_SIGNED;
	return true;
}

const char *tb_ftrace_tp_fields(struct tb_ftrace *f, const struct tb_rec_hdr *h,
				void (*fn)(void *ctx, const struct tb_ftrace_field *fl), void *ctx)
{
	const struct tb_rec_tp *r = (const void *)h;
	struct tep_event *ev;
	struct tb_ftrace_field out;

	if (h->type != TB_REC_TP || h->size < sizeof(*r) || !(ev = tp_load(f, r)))
		return NULL;
	for (struct tep_format_field *fl = ev->format.fields; fl; fl = fl->next)
		if (tp_field(f, fl, r->len, &out))
			fn(ctx, &out);
	return ev->name;
}

int tb_ftrace_format_line(struct tb_ftrace *f, const struct tb_rec_hdr *h, bool viewers,
			  char *buf, size_t len)
{
	struct line l = { buf, 0, len };

	if (!len)
		return 0;
	buf[0] = 0;
	if (h->size < tb_rec_min_size(h->type))
		return 0;
	switch (h->type) {
	case TB_REC_SWITCH:
		fmt_switch(f, &l, (const void *)h, viewers);
		break;
	case TB_REC_WAKE:
		fmt_wake(f, &l, (const void *)h, viewers);
		break;
	case TB_REC_KTASK:
		if (!viewers)
			fmt_ktask(f, &l, (const void *)h);
		break;
	case TB_REC_CPU:
		fmt_cpu(f, &l, (const void *)h);
		break;
	case TB_REC_TP:
		fmt_tp(f, &l, (const void *)h, viewers);
		break;
	default:
		break;
	}
	if (l.len >= len) {
		l.len = len - 1;
		buf[l.len] = 0;
	}
	buf[l.len] = 0;
	return (int)l.len;
}

/* ----------------------------------------------------------- feeding -- */

static void on_format(struct tb_ftrace *f, const struct tb_rec_format *r)
{
	const char *text = (const char *)(r + 1);
	size_t len = r->len, slen;

	if (len > r->hdr.size - sizeof(*r))
		return;
	slen = strnlen(text, len);
	if (!slen || slen >= len)
		return;
	if (tep_find_event(f->tep, r->id))
		return;   /* the same event saved twice */
	/* A format that does not parse leaves its events undecoded. */
	tep_parse_event(f->tep, text + slen + 1, len - slen - 1, text);
}

static int append_text(struct tb_ftrace *f, const char *s, size_t n)
{
	if (!f->spill) {
		f->spill = tmpfile();
		if (!f->spill)
			return -errno;
	}
	if (fwrite(s, 1, n, f->spill) != n)
		return -EIO;
	f->len += n;
	return 0;
}

void tb_ftrace_collect(struct tb_ftrace *f, bool on)
{
	f->no_collect = !on;
}

int tb_ftrace_write_json(struct tb_ftrace *f, struct tb_json *j)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int err = 0;

	tb_json_string_begin(j);
	if (f->spill) {
		if (fflush(f->spill) || fseeko(f->spill, 0, SEEK_SET))
			err = -errno;
		/* whole lines, so no UTF-8 sequence is split between parts */
		while (!err && (n = getline(&line, &cap, f->spill)) > 0)
			tb_json_string_part(j, line, n);
		if (!err && ferror(f->spill))
			err = -EIO;
		fseeko(f->spill, 0, SEEK_END);
	}
	tb_json_string_end(j);
	free(line);
	return err;
}

int tb_ftrace_keep_times(struct tb_ftrace *f)
{
	f->times = tmpfile();
	return f->times ? 0 : -errno;
}

uint64_t tb_ftrace_bytes(const struct tb_ftrace *f)
{
	return f->len;
}

/* The two header lines of the text (written before the first event line). */
#define HEADER_LINES 2

static int write_range(struct tb_ftrace *f, struct tb_json *j, uint64_t from, uint64_t to,
		       char **line, size_t *cap)
{
	uint64_t ts, i;
	ssize_t n;

	if (fflush(f->spill) || fseeko(f->spill, 0, SEEK_SET) ||
	    fflush(f->times) || fseeko(f->times, 0, SEEK_SET))
		return -errno;
	for (i = 0; i < HEADER_LINES && (n = getline(line, cap, f->spill)) > 0; i++)
		tb_json_string_part(j, *line, n);
	while ((n = getline(line, cap, f->spill)) > 0) {
		if (fread(&ts, sizeof(ts), 1, f->times) != 1)
			return -EIO;
		if (ts >= from && ts < to)
			tb_json_string_part(j, *line, n);
	}
	return ferror(f->spill) ? -EIO : 0;
}

int tb_ftrace_write_json_range(struct tb_ftrace *f, struct tb_json *j, uint64_t from,
			       uint64_t to)
{
	char *line = NULL;
	size_t cap = 0;
	int err = 0;

	if (f->spill && !f->times)
		return -EINVAL;
	tb_json_string_begin(j);
	if (f->spill) {
		err = write_range(f, j, from, to, &line, &cap);
		fseeko(f->spill, 0, SEEK_END);
		fseeko(f->times, 0, SEEK_END);
	}
	tb_json_string_end(j);
	free(line);
	return err;
}

int tb_ftrace_add(struct tb_ftrace *f, const struct tb_rec_hdr *h)
{
	char line[1024];
	int n, err;

	if (!tb_ftrace_is_kernel(h->type) || h->size < tb_rec_min_size(h->type))
		return 0;
	switch (h->type) {
	case TB_REC_SWITCH: {
		const struct tb_rec_switch *r = (const void *)h;

		learn(f, r->hdr.tid, r->hdr.pid, r->prev_comm);
		learn(f, r->next_tid, r->next_tgid, r->next_comm);
		break;
	}
	case TB_REC_WAKE: {
		const struct tb_rec_wake *r = (const void *)h;

		learn(f, r->tid, r->tgid, r->comm);
		break;
	}
	case TB_REC_KTASK: {
		const struct tb_rec_ktask *r = (const void *)h;

		if (r->kind == TB_KTASK_FORK)
			learn(f, r->tid, r->tgid, r->comm);
		else if (r->kind == TB_KTASK_EXEC)
			learn(f, r->hdr.tid, r->hdr.pid, r->comm);
		break;
	}
	case TB_REC_FORMAT:
		on_format(f, (const void *)h);
		return 0;
	}
	n = tb_ftrace_format_line(f, h, true, line, sizeof(line));
	/* a rename takes effect after its (unrendered) line */
	if (h->type == TB_REC_KTASK && ((const struct tb_rec_ktask *)h)->kind == TB_KTASK_RENAME)
		learn(f, h->tid, h->pid, ((const struct tb_rec_ktask *)h)->comm2);
	if (h->type == TB_REC_TP && (((const struct tb_rec_tp *)h)->flags & TB_TPF_TRUNCATED))
		f->truncated++;
	if (n <= 0 || f->no_collect)
		return 0;
	if (!f->len) {
		static const char hdr[] = "# tracer: nop\n"
					  "# clock_type=LINUX_CLOCK_MONOTONIC\n";

		err = append_text(f, hdr, sizeof(hdr) - 1);
		if (err)
			return err;
	}
	err = append_text(f, line, n);
	if (!err)
		err = append_text(f, "\n", 1);
	if (!err && f->times && fwrite(&h->ts, sizeof(h->ts), 1, f->times) != 1)
		err = -EIO;
	if (!err)
		f->lines++;
	return err;
}

const char *tb_ftrace_text(struct tb_ftrace *f)
{
	char *t;

	if (!f->lines || !f->spill)
		return NULL;
	t = realloc(f->text, f->len + 1);
	if (!t)
		return NULL;
	f->text = t;
	fflush(f->spill);
	if (fseeko(f->spill, 0, SEEK_SET) || fread(t, 1, f->len, f->spill) != f->len)
		t[0] = 0;
	else
		t[f->len] = 0;
	fseeko(f->spill, 0, SEEK_END);
	return t;
}

uint64_t tb_ftrace_lines(const struct tb_ftrace *f)
{
	return f->lines;
}

uint64_t tb_ftrace_truncated(const struct tb_ftrace *f)
{
	return f->truncated;
}
