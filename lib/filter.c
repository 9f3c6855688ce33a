// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * filter.c - the --pid, --tid, --cat, --name and --time filters: their
 * options, parsing and the predicate (filter.h).
 */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "util/json.h"

#define PID_LIMIT (1u << 22)   /* PID_MAX_LIMIT: no pid or tid is larger */

/* ------------------------------------------------------------ parsing -- */

/* Calls add(f, item, n) for each comma-separated item of arg; an empty
 * item is an error. */
static int each_item(struct tb_filter *f, const char *arg, const char **why,
		     int (*add)(struct tb_filter *, const char *, size_t, const char **))
{
	const char *p = arg;
	int err;

	for (;;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);

		if (!n) {
			*why = "an empty item in the list";
			return -EINVAL;
		}
		err = add(f, p, n, why);
		if (err)
			return err;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

static int push_id(uint32_t **v, size_t *n, uint32_t id)
{
	uint32_t *nv = realloc(*v, (*n + 1) * sizeof(**v));

	if (!nv)
		return -ENOMEM;
	nv[(*n)++] = id;
	*v = nv;
	return 0;
}

static int parse_id(const char *s, size_t n, uint32_t *id, const char **why)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9') {
			*why = "not a number (give decimal ids, comma-separated)";
			return -EINVAL;
		}
		v = v * 10 + (uint64_t)(s[i] - '0');
		if (v >= PID_LIMIT) {
			*why = "too large for a process or thread id";
			return -EINVAL;
		}
	}
	*id = (uint32_t)v;
	return 0;
}

static int add_pid(struct tb_filter *f, const char *s, size_t n, const char **why)
{
	uint32_t id;
	int err = parse_id(s, n, &id, why);

	return err ? err : push_id(&f->pids, &f->npids, id);
}

static int add_tid(struct tb_filter *f, const char *s, size_t n, const char **why)
{
	uint32_t id;
	int err = parse_id(s, n, &id, why);

	return err ? err : push_id(&f->tids, &f->ntids, id);
}

static int push_glob(char ***v, size_t *n, const char *s, size_t len)
{
	char **nv = realloc(*v, (*n + 1) * sizeof(**v));

	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[*n] = strndup(s, len);
	if (!nv[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

static int add_cat(struct tb_filter *f, const char *s, size_t n, const char **why)
{
	(void)why;
	return push_glob(&f->cats, &f->ncats, s, n);
}

static int add_name(struct tb_filter *f, const char *s, size_t n, const char **why)
{
	(void)why;
	return push_glob(&f->names, &f->nnames, s, n);
}

int tb_filter_add_pids(struct tb_filter *f, const char *arg, const char **why)
{
	return each_item(f, arg, why, add_pid);
}

int tb_filter_add_tids(struct tb_filter *f, const char *arg, const char **why)
{
	return each_item(f, arg, why, add_tid);
}

int tb_filter_add_cats(struct tb_filter *f, const char *arg, const char **why)
{
	return each_item(f, arg, why, add_cat);
}

int tb_filter_add_names(struct tb_filter *f, const char *arg, const char **why)
{
	return each_item(f, arg, why, add_name);
}

/* The ns in a unit's name (ns, us, ms, s), 0 for anything else. */
static uint64_t unit_ns(const char *u, size_t n)
{
	static const struct { const char *name; uint64_t ns; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 },
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strlen(units[i].name) == n && !memcmp(units[i].name, u, n))
			return units[i].ns;
	return 0;
}

/* s[0..n) as DIGITS[.DIGITS]UNIT into *ns, exactly (no floating point). */
static int parse_duration(const char *s, size_t n, uint64_t *ns, const char **why)
{
	uint64_t whole = 0, frac = 0, scale = 1, unit;
	size_t i = 0, digits = 0;

	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
		if (whole > UINT64_MAX / 10 - 1) {
			*why = "too large";
			return -EINVAL;
		}
		whole = whole * 10 + (uint64_t)(s[i] - '0');
	}
	if (i < n && s[i] == '.') {
		for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
			if (scale >= 1000000000) {
				*why = "more than nine decimals";
				return -EINVAL;
			}
			frac = frac * 10 + (uint64_t)(s[i] - '0');
			scale *= 10;
		}
	}
	if (!digits) {
		*why = "a time needs a number, e.g. 1.5s or 200ms";
		return -EINVAL;
	}
	unit = unit_ns(s + i, n - i);
	if (!unit) {
		*why = i == n ? "a time needs a unit: ns, us, ms or s" :
		       "unknown unit (give ns, us, ms or s)";
		return -EINVAL;
	}
	if (whole > UINT64_MAX / unit) {
		*why = "too large";
		return -EINVAL;
	}
	if ((frac * unit) % scale) {
		*why = "finer than a nanosecond";
		return -EINVAL;
	}
	*ns = whole * unit + frac * unit / scale;
	return 0;
}

int tb_parse_duration(const char *s, uint64_t *ns, const char **why)
{
	return parse_duration(s, strlen(s), ns, why);
}

int tb_filter_set_time(struct tb_filter *f, const char *arg, const char **why)
{
	const char *comma = strchr(arg, ','), *end;
	uint64_t from = 0, to = UINT64_MAX, d;
	bool rel;

	if (!comma || strchr(comma + 1, ',')) {
		*why = "give START,END (e.g. 1.5s,3s or 1.5s,+200ms)";
		return -EINVAL;
	}
	if (comma > arg && parse_duration(arg, (size_t)(comma - arg), &from, why))
		return -EINVAL;
	end = comma + 1;
	rel = *end == '+';
	if (*end) {
		if (parse_duration(end + rel, strlen(end + rel), &d, why))
			return -EINVAL;
		if (rel && d > UINT64_MAX - 1 - from) {
			*why = "too large";
			return -EINVAL;
		}
		to = rel ? from + d : d;
	}
	if (to <= from) {
		*why = "END is not after START: the window is empty";
		return -EINVAL;
	}
	f->has_time = true;
	f->from = from;
	f->to = to;
	return 0;
}

bool tb_filter_active(const struct tb_filter *f)
{
	return f->npids || f->ntids || f->ncats || f->nnames || f->has_time;
}

void tb_filter_set_base(struct tb_filter *f, uint64_t start_ts)
{
	f->base = start_ts;
}

/* ----------------------------------------------------------- matching -- */

static bool has_id(const uint32_t *v, size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

/* Whether s[0..n) matches one of the globs (an unreadable NULL name is
 * matched as "<unreadable>", the name the output shows). */
static bool has_glob(char *const *globs, size_t nglobs, const char *s, size_t n)
{
	char buf[256], *str = buf;
	bool hit = false;

	if (!s) {
		s = "<unreadable>";
		n = strlen(s);
	}
	if (n >= sizeof(buf) && !(str = malloc(n + 1)))
		return false;
	memcpy(str, s, n);
	str[n] = '\0';
	for (size_t i = 0; i < nglobs && !hit; i++)
		hit = fnmatch(globs[i], str, 0) == 0;
	if (str != buf)
		free(str);
	return hit;
}

/* The window in the trace's clock: [*lo, *hi). */
static void window(const struct tb_filter *f, uint64_t *lo, uint64_t *hi)
{
	*lo = f->base + f->from;
	*hi = f->to == UINT64_MAX || f->to > UINT64_MAX - f->base ? UINT64_MAX : f->base + f->to;
}

static bool in_window(const struct tb_filter *f, uint64_t ts, uint64_t dur, bool slice)
{
	uint64_t lo, hi;

	if (!f->has_time)
		return true;
	window(f, &lo, &hi);
	if (ts >= hi)
		return false;
	if (ts >= lo)
		return true;
	return slice && dur && ts + dur > lo;
}

static bool task_ok(const struct tb_filter *f, uint32_t pid, uint32_t tid)
{
	return (!f->npids || has_id(f->pids, f->npids, pid)) &&
	       (!f->ntids || has_id(f->tids, f->ntids, tid));
}

bool tb_filter_match(const struct tb_filter *f, const struct tb_filter_event *e)
{
	if (!task_ok(f, e->pid, e->tid))
		return false;
	if (!in_window(f, e->ts, e->dur, e->ph == 'X'))
		return false;
	if (f->ncats && !has_glob(f->cats, f->ncats, e->cat, e->cat ? strlen(e->cat) : 0))
		return false;
	return !f->nnames || has_glob(f->names, f->nnames, e->name, e->name_len);
}

/* The second task a kernel record names, besides hdr's: a switch's next
 * task, a wakeup's woken one, a fork's child. */
static bool other_task(const struct tb_rec_hdr *h, uint32_t *pid, uint32_t *tid)
{
	if (h->type == TB_REC_SWITCH && h->size >= sizeof(struct tb_rec_switch)) {
		const struct tb_rec_switch *r = (const void *)h;

		*pid = r->next_tgid;
		*tid = r->next_tid;
		return true;
	}
	if (h->type == TB_REC_WAKE && h->size >= sizeof(struct tb_rec_wake)) {
		const struct tb_rec_wake *r = (const void *)h;

		*pid = r->tgid;
		*tid = r->tid;
		return true;
	}
	if (h->type == TB_REC_KTASK && h->size >= sizeof(struct tb_rec_ktask)) {
		const struct tb_rec_ktask *r = (const void *)h;

		*pid = r->tgid;
		*tid = r->tid;
		return true;
	}
	return false;
}

bool tb_filter_match_kernel(const struct tb_filter *f, const struct tb_rec_hdr *h)
{
	uint32_t pid, tid;

	if (!in_window(f, h->ts, 0, false))
		return false;
	if ((!f->npids && !f->ntids) || h->type == TB_REC_CPU)
		return true;
	if (task_ok(f, h->pid, h->tid))
		return true;
	return other_task(h, &pid, &tid) && task_ok(f, pid, tid);
}

/* ----------------------------------------------------------- metadata -- */

static void write_globs(struct tb_json *j, const char *key, char *const *v, size_t n)
{
	tb_json_key(j, key);
	tb_json_begin_array(j);
	for (size_t i = 0; i < n; i++)
		tb_json_string(j, v[i]);
	tb_json_end_array(j);
}

void tb_filter_write_json(const struct tb_filter *f, struct tb_json *j)
{
	tb_json_begin_object(j);
	if (f->npids)
		tb_json_kuint_array(j, "pid", f->pids, f->npids);
	if (f->ntids)
		tb_json_kuint_array(j, "tid", f->tids, f->ntids);
	if (f->ncats)
		write_globs(j, "cat", f->cats, f->ncats);
	if (f->nnames)
		write_globs(j, "name", f->names, f->nnames);
	if (f->has_time) {
		/* ns after start_ts; an open end is left out */
		tb_json_kuint(j, "time_from_ns", f->from);
		if (f->to != UINT64_MAX)
			tb_json_kuint(j, "time_to_ns", f->to);
	}
	tb_json_end_object(j);
}

void tb_filter_free(struct tb_filter *f)
{
	for (size_t i = 0; i < f->ncats; i++)
		free(f->cats[i]);
	for (size_t i = 0; i < f->nnames; i++)
		free(f->names[i]);
	free(f->cats);
	free(f->names);
	free(f->pids);
	free(f->tids);
	memset(f, 0, sizeof(*f));
}

/* ------------------------------------------------------------ options -- */

/* ns in the largest unit that holds it exactly: 1500ms, 2s, 7ns. */
static void print_time(FILE *out, uint64_t ns)
{
	static const struct { const char *name; uint64_t ns; } units[] = {
		{ "s", 1000000000 }, { "ms", 1000000 }, { "us", 1000 },
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (ns && ns % units[i].ns == 0) {
			fprintf(out, "%" PRIu64 "%s", ns / units[i].ns, units[i].name);
			return;
		}
	fprintf(out, "%" PRIu64 "ns", ns);
}

static void print_ids(FILE *out, const char *opt, const uint32_t *v, size_t n, bool *sp)
{
	if (!n)
		return;
	fprintf(out, "%s--%s ", *sp ? " " : "", opt);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s%" PRIu32, i ? "," : "", v[i]);
	*sp = true;
}

static void print_globs(FILE *out, const char *opt, char *const *v, size_t n, bool *sp)
{
	if (!n)
		return;
	fprintf(out, "%s--%s ", *sp ? " " : "", opt);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s%s", i ? "," : "", v[i]);
	*sp = true;
}

void tb_filter_print(const struct tb_filter *f, FILE *out)
{
	bool sp = false;

	print_ids(out, "pid", f->pids, f->npids, &sp);
	print_ids(out, "tid", f->tids, f->ntids, &sp);
	print_globs(out, "cat", f->cats, f->ncats, &sp);
	print_globs(out, "name", f->names, f->nnames, &sp);
	if (!f->has_time)
		return;
	fprintf(out, "%s--time ", sp ? " " : "");
	print_time(out, f->from);
	fputc(',', out);
	if (f->to != UINT64_MAX)
		print_time(out, f->to);
}
