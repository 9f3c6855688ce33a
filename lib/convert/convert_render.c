// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert_render.c - the converter's last stage: Chrome trace JSON
 * (docs/output.md).
 *
 * Owns: how an output event is written (its args: the begin's and the
 * end's, and the marks of what is unfinished, inherited or lost) and the
 * templates most events are written from (one per site and phase); the
 * end of each file (names, systemTraceEvents, metadata) is
 * convert_meta.c's. Also the event accessors of model.h (names, counter
 * series, the public API's events). What a record holds (its name, id,
 * string arguments) it reads with convert_util.c's accessors.
 *
 * Receives: output events (struct oev) with the JSON writer (struct
 * tb_json) they go to, from the writer thread (convert_queue.c), the
 * filters and parts (convert_select.c) or the plain JSON sink
 * (lib/convert/convert.c).
 * Hands on: bytes, to the FILE behind the struct tb_json (json.h).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "convert/convert_int.h"

struct arg {
	const char *name;
	const struct site *site;
	const struct tb_rec_event *ev;
	int i;
	const char *str;    /* a fixed string value instead */
};

struct args {
	struct arg a[2 * TB_SITE_ARGS + 6];   /* the begin's, the end's, the marks */
	int n;
};

/* The raw value of argument i of site s's event ev: a TB_REC_USDT holds
 * the note's arguments (s->argsrc says which), the others TB_MAX_ARGS. */
static uint64_t raw_arg(const struct site *s, const struct tb_rec_event *ev, int i)
{
	const struct tb_rec_usdt *u = (const void *)ev;

	if (ev->hdr.type != TB_REC_USDT)
		return ev->args[i];
	return s->argsrc[i] < u->nargs ? u->args[s->argsrc[i]] : 0;
}

/* A hit of another program's probe lacks the arguments its note lacks
 * (another note of the same probe may have more). */
static bool has_arg(const struct site *s, const struct tb_rec_event *ev, int i)
{
	return ev->hdr.type != TB_REC_USDT ||
	       s->argsrc[i] < ((const struct tb_rec_usdt *)ev)->nargs;
}

/* Adds an arg; a later one with the same name replaces the earlier (the end
 * of a slice overrides its begin), so keys are unique. */
static void args_add(struct args *as, struct arg a)
{
	int k;

	for (k = 0; k < as->n; k++) {
		if (strcmp(as->a[k].name, a.name) == 0) {
			as->a[k] = a;
			return;
		}
	}
	as->a[as->n++] = a;
}

static void args_of(struct args *as, const struct site *s,
		    const struct tb_rec_event *ev)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < s->nargs; i++)
		if (has_arg(s, ev, i))
			args_add(as, (struct arg){ .name = s->argname[i], .site = s, .ev = ev, .i = i });
}

static double arg_double(const struct site *s, const struct tb_rec_event *ev, int i)
{
	uint64_t v = raw_arg(s, ev, i);
	double d;

	memcpy(&d, &v, sizeof(d));
	return d;
}

static void arg_value(struct tb_json *j, const struct arg *a)
{
	uint64_t v;
	const char *p;
	char buf[24];
	double d;
	size_t n;

	if (a->str) {
		tb_json_string(j, a->str);
		return;
	}
	v = raw_arg(a->site, a->ev, a->i);
	switch (a->site->arg_type[a->i]) {
	case TB_ARG_INT:
		tb_json_int(j, (int64_t)v);
		break;
	case TB_ARG_UINT:
		tb_json_uint(j, v);
		break;
	case TB_ARG_DOUBLE:
		/* A number field must never hold nan/inf: say it in a string. */
		d = arg_double(a->site, a->ev, a->i);
		if (isnan(d))
			tb_json_string(j, "NaN");
		else if (isinf(d))
			tb_json_string(j, d > 0 ? "Infinity" : "-Infinity");
		else
			tb_json_double(j, d);
		break;
	case TB_ARG_BOOL:
		tb_json_bool(j, v != 0);
		break;
	case TB_ARG_STR:
		p = tb_conv_str_arg(a->site, a->ev, a->i, &n);
		if (p)
			tb_json_string_n(j, p, n);
		else
			tb_json_string(j, "<unreadable>");
		break;
	default:   /* TB_ARG_PTR */
		snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
		tb_json_string(j, buf);
		break;
	}
}

static void write_args(struct tb_json *j, const struct args *as)
{
	int k;

	tb_json_key(j, "args");
	tb_json_begin_object(j);
	for (k = 0; k < as->n; k++) {
		tb_json_key(j, as->a[k].name);
		arg_value(j, &as->a[k]);
	}
	tb_json_end_object(j);
}

/* Counter series: numeric arguments only; non-finite values are left out. */
static int counter_args(struct args *as, const struct oev *e)
{
	const struct site *s = e->site;
	int i;

	for (i = 0; i < s->nargs; i++) {
		uint8_t t = s->arg_type[i];

		if (t == TB_ARG_STR || t == TB_ARG_PTR || !has_arg(s, e->ev, i))
			continue;
		if (t == TB_ARG_DOUBLE && !isfinite(arg_double(s, e->ev, i)))
			continue;
		args_add(as, (struct arg){ .name = s->argname[i], .site = s, .ev = e->ev, .i = i });
	}
	return as->n;
}

static void write_counter_value(struct tb_json *j, const struct arg *a)
{
	uint64_t v = raw_arg(a->site, a->ev, a->i);

	switch (a->site->arg_type[a->i]) {
	case TB_ARG_INT:
		tb_json_int(j, (int64_t)v);
		break;
	case TB_ARG_UINT:
		tb_json_uint(j, v);
		break;
	case TB_ARG_BOOL:
		tb_json_int(j, v != 0);
		break;
	default:
		tb_json_double(j, arg_double(a->site, a->ev, a->i));
		break;
	}
}

static void write_name(struct tb_json *j, const struct site *s,
		       const struct tb_rec_event *ev)
{
	size_t n;
	const char *name = tb_conv_ev_name(s, ev, &n);

	tb_json_key(j, "name");
	if (name)
		tb_json_string_n(j, name, n);
	else
		tb_json_string(j, "<unreadable>");
}

/* Async, flow and counter ids, as the hex strings Chrome writes. */
static void write_id(struct tb_json *j, const struct oev *e)
{
	bool usdt_async = e->ev->hdr.type == TB_REC_USDT && strchr("ben", e->ph);
	char buf[24];

	if (e->ev->hdr.type != TB_REC_EVENT_ID && !usdt_async)
		return;
	if (!strchr("bentsf", e->ph) && e->ph != 'C')
		return;
	snprintf(buf, sizeof(buf), "0x%" PRIx64, tb_conv_ev_id(e->ev));
	tb_json_kstr(j, "id", buf);
	/* steps and ends bind to the enclosing slice, like the begin */
	if (e->ph == 't' || e->ph == 'f')
		tb_json_kstr(j, "bp", "e");
}

/* ----------------------------------- the common events, from templates -- */

/* Most events of a large trace are instants and slices of sites whose
 * arguments are integers. The generic calls keep the JSON writer's state
 * and take every piece anew, about 1,500 instructions an event; such an
 * event is written instead from its site's template: the bytes the
 * generic calls write for that site and phase, rendered by them once,
 * with the event's numbers put in between. The output is the same byte
 * for byte (test_templates in tests/unit/test_convert.c compares the two
 * on every kind of site and event). */

#define TMPL_SLOTS 1024   /* direct-mapped by site and phase */
#define TMPL_MAX   1024   /* a longer template: the generic calls */

bool tb_convert_no_templates;

struct tmpl {
	const struct site *site;
	char ph;                      /* 'I' or 'X' */
	bool plain;                   /* false: the generic calls */
	uint8_t nargs;
	uint8_t type[TB_MAX_ARGS];
	uint16_t tail_len;            /* ,"s":..,"cat":..,"name":..,"args":{ */
	uint16_t key_len[TB_MAX_ARGS];   /* then each "key": with its comma */
	char bytes[TMPL_MAX];
};

/* The decimal digits of numbers that recur: pids, tids, and the upper
 * digits of timestamps (those above the last four of the microseconds,
 * the same for 10 ms of events). Direct-mapped by value. */
#define DIGITS_SLOTS 64

struct digits {
	uint64_t v;
	uint8_t n;                    /* 0: empty */
	char d[23];
};

struct tmpls {
	struct tmpl *slot[TMPL_SLOTS];
	struct digits digits[DIGITS_SLOTS];
	struct tb_json scratch;       /* where templates are rendered */
};

struct tmpls *tb_conv_tmpls_new(void)
{
	return tb_convert_no_templates ? NULL : calloc(1, sizeof(struct tmpls));
}

void tb_conv_tmpls_free(struct tmpls *ts)
{
	for (size_t i = 0; ts && i < TMPL_SLOTS; i++)
		free(ts->slot[i]);
	free(ts);
}

/* Whether the site's events can come from a template: a name of its own,
 * no step, integer or bool arguments with distinct names. */
static bool site_plain(const struct site *s)
{
	int i, k;

	if (s->step || (s->flags & TB_SITE_COPY_NAME) || s->nargs > TB_MAX_ARGS || s->usdt)
		return false;
	for (i = 0; i < s->nargs; i++) {
		uint8_t t = s->arg_type[i];

		if (t != TB_ARG_INT && t != TB_ARG_UINT && t != TB_ARG_BOOL)
			return false;
		for (k = 0; k < i; k++)
			if (!strcmp(s->argname[k], s->argname[i]))
				return false;
	}
	return true;
}

/* Renders what tb_conv_write_event writes for site s in phase ph after "tid",
 * with the generic calls; false when it does not fit. */
static bool render_tmpl(struct tmpl *t, struct tb_json *sj, const struct site *s)
{
	size_t mark, n;
	int i;

	tb_json_init(sj, NULL);
	tb_json_begin_object(sj);
	tb_json_kuint(sj, "tid", 0);
	mark = sj->len;
	if (t->ph == 'I') {
		tb_json_key(sj, "s");
		tb_json_string_n(sj, s->scope ? &s->scope : "t", 1);
	}
	tb_json_kstr(sj, "cat", s->cat);
	write_name(sj, s, NULL);
	tb_json_key(sj, "args");
	tb_json_begin_object(sj);
	t->tail_len = (uint16_t)(sj->len - mark);
	for (i = 0; i < s->nargs; i++) {
		n = sj->len;
		tb_json_key(sj, s->argname[i]);
		t->key_len[i] = (uint16_t)(sj->len - n);
		tb_json_int(sj, 0);
	}
	n = sj->len - mark;
	if (sj->err || n > TMPL_MAX - 16)
		return false;
	/* the value pieces are left out: copy the keys between them */
	memcpy(t->bytes, sj->buf + mark, t->tail_len);
	n = t->tail_len;
	mark += t->tail_len;
	for (i = 0; i < s->nargs; i++) {
		memcpy(t->bytes + n, sj->buf + mark, t->key_len[i]);
		n += t->key_len[i];
		mark += t->key_len[i] + 1;   /* the 0 */
	}
	t->nargs = s->nargs;
	memcpy(t->type, s->arg_type, sizeof(t->type));
	return true;
}

/* The template of s in phase ph, or NULL for the generic calls. */
static const struct tmpl *tmpl_of(struct tmpls *ts, const struct site *s, char ph)
{
	size_t i = (size_t)(((((uintptr_t)s >> 3) + (uint64_t)ph) * 0x9e3779b97f4a7c15ull) >> 54);
	struct tmpl *t = ts->slot[i];

	if (!t || t->site != s || t->ph != ph) {
		if (!t && !(t = ts->slot[i] = calloc(1, sizeof(*t))))
			return NULL;
		t->site = s;
		t->ph = ph;
		t->plain = site_plain(s) && render_tmpl(t, &ts->scratch, s);
	}
	return t->plain ? t : NULL;
}

static char *put_u64(char *p, uint64_t v)
{
	size_t n = tb_json__ndigits(v);

	tb_json__digits(p, n, v);
	return p + n;
}

/* v's digits through the cache. */
static char *put_cached(struct tmpls *ts, char *p, uint64_t v)
{
	struct digits *d = &ts->digits[(v * 0x9e3779b97f4a7c15ull) >> 58];

	if (d->v != v || !d->n) {
		d->n = (uint8_t)tb_json__ndigits(v);
		tb_json__digits(d->d, d->n, v);
		d->v = v;
	}
	memcpy(p, d->d, 8);
	memcpy(p + 8, d->d + 8, 8);
	if (d->n > 16)
		memcpy(p + 16, d->d + 16, 4);
	return p + d->n;
}

/* Integer nanoseconds as tb_json_ts_ns writes them: microseconds, three
 * decimals. */
static char *put_ts(struct tmpls *ts, char *p, uint64_t ns)
{
	uint64_t us = ns / 1000, hi = us / 10000;
	unsigned lo = (unsigned)(us % 10000), frac = (unsigned)(ns % 1000);

	if (hi) {
		p = put_cached(ts, p, hi);
		memcpy(p, tb_json__pairs + lo / 100 * 2, 2);
		memcpy(p + 2, tb_json__pairs + lo % 100 * 2, 2);
		p += 4;
	} else {
		p = put_u64(p, lo);
	}
	p[0] = '.';
	p[1] = (char)('0' + frac / 100);
	p[2] = (char)('0' + frac / 10 % 10);
	p[3] = (char)('0' + frac % 10);
	return p + 4;
}

/* n bytes of a template in 16-byte pieces: up to 15 more are read (the
 * template's array holds them) and written (the reservation has room). */
static char *put_tmpl(char *p, const char *s, size_t n)
{
	for (size_t o = 0; o < n; o += 16)
		memcpy(p + o, s + o, 16);
	return p + n;
}

/* A value of t's argument i. */
static char *put_arg(char *p, const struct tmpl *t, int i, uint64_t v)
{
	switch (t->type[i]) {
	case TB_ARG_INT:
		if ((int64_t)v < 0) {
			*p++ = '-';
			v = 0 - v;
		}
		return put_u64(p, v);
	case TB_ARG_UINT:
		return put_u64(p, v);
	default:   /* TB_ARG_BOOL */
		if (v) {
			memcpy(p, "true", 4);
			return p + 4;
		}
		memcpy(p, "false", 5);
		return p + 5;
	}
}

/* e as tb_conv_write_event writes it, from its site's template: true, or false
 * (nothing written) when e is not one of the common events. */
static bool write_plain(struct tmpls *ts, struct tb_json *j, const struct oev *e)
{
	const struct tmpl *t;
	const char *k;
	char *p0, *p;
	int i;

	if (!ts || (e->ph != 'I' && e->ph != 'X') || e->inherited || e->unfinished ||
	    e->begun_before || e->begin_of || e->lost.count || e->parent_lost ||
	    (e->esite && e->esite->nargs))
		return false;
	t = tmpl_of(ts, e->site, e->ph);
	if (!t)
		return false;
	tb_json_newline(j);
	tb_json_begin_object(j);
	p = p0 = tb_json__reserve(j, 40);
	memcpy(p, e->ph == 'I' ? "\"ph\":\"I\",\"ts\":" : "\"ph\":\"X\",\"ts\":", 14);
	p = put_ts(ts, p + 14, e->ts);
	j->len += (size_t)(p - p0);
	j->first[j->depth] = false;
	if (e->ph == 'X')
		tb_json_kdur(j, "dur", e->ts, e->dur);
	p = p0 = tb_json__reserve(j, TMPL_MAX + 16 + (2 + TB_MAX_ARGS) * 24);
	memcpy(p, ",\"pid\":", 7);
	p = put_cached(ts, p + 7, e->pid);
	memcpy(p, ",\"tid\":", 7);
	p = put_cached(ts, p + 7, e->tid);
	p = put_tmpl(p, t->bytes, t->tail_len);
	k = t->bytes + t->tail_len;
	for (i = 0; i < t->nargs; i++) {
		p = put_tmpl(p, k, t->key_len[i]);
		k += t->key_len[i];
		p = put_arg(p, t, i, e->ev->args[i]);
	}
	*p++ = '}';
	j->len += (size_t)(p - p0);
	tb_json_end_object(j);
	return true;
}

/* An application's memory dump (ph v, docs/output.md "Memory"): its args
 * are the JSON text its record holds behind the header
 * (lib/convert/convert_memdump.c). */
static void write_memdump(struct tb_json *j, const struct oev *e)
{
	const struct tb_rec_event_id *x = (const void *)e->ev;
	char id[24];

	tb_json_newline(j);
	tb_json_begin_object(j);
	tb_json_kstr(j, "ph", "v");
	tb_json_kts(j, "ts", e->ts);
	tb_json_kuint(j, "pid", e->pid);
	tb_json_kuint(j, "tid", e->tid);
	tb_json_kstr(j, "cat", e->site->cat);
	tb_json_kstr(j, "name", e->site->name);
	snprintf(id, sizeof(id), "0x%" PRIx64, (uint64_t)x->id);
	tb_json_kstr(j, "id", id);
	tb_json_key(j, "args");
	tb_json_raw(j, (const char *)(x + 1), x->ev.hdr.size - sizeof(*x));
	tb_json_end_object(j);
}

void tb_conv_write_event(struct tmpls *ts, struct tb_json *j, const struct oev *e)
{
	struct args as;
	char lost[96];
	int k;

	if (e->ph == 'v') {
		write_memdump(j, e);
		return;
	}
	if (write_plain(ts, j, e))
		return;
	as.n = 0;
	if (e->ph == 'C' && !counter_args(&as, e))
		return;   /* no series: catapult would drop it with a warning */
	tb_json_newline(j);
	tb_json_begin_object(j);
	tb_json_key(j, "ph");
	tb_json_string_n(j, &e->ph, 1);
	tb_json_kts(j, "ts", e->ts);
	if (e->ph == 'X')
		tb_json_kdur(j, "dur", e->ts, e->dur);
	tb_json_kuint(j, "pid", e->pid);
	tb_json_kuint(j, "tid", e->tid);
	if (e->ph == 'I') {
		tb_json_key(j, "s");
		/* an END site has no scope: its instant is the thread's */
		tb_json_string_n(j, e->site->scope ? &e->site->scope : "t", 1);
	}
	tb_json_kstr(j, "cat", e->site->cat);
	write_name(j, e->site, e->ev);
	write_id(j, e);
	if (e->ph == 'C') {
		tb_json_key(j, "args");
		tb_json_begin_object(j);
		for (k = 0; k < as.n; k++) {
			tb_json_key(j, as.a[k].name);
			write_counter_value(j, &as.a[k]);
		}
		tb_json_end_object(j);
	} else {
		if (e->site->step)
			args_add(&as, (struct arg){ .name = "step", .str = e->site->step });
		args_of(&as, e->site, e->ev);
		args_of(&as, e->esite, e->eev);
		if (e->inherited)
			args_add(&as, (struct arg){ .name = "tracebpf_inherited",
						    .str = "open in the parent at fork" });
		if (e->unfinished)
			args_add(&as, (struct arg){ .name = "tracebpf_unfinished",
						    .str = e->unfinished });
		if (e->begun_before)
			args_add(&as, (struct arg){ .name = "tracebpf_end_of",
						    .str = e->begun_before });
		if (e->begin_of)
			args_add(&as, (struct arg){ .name = "tracebpf_begin_of",
						    .str = e->begin_of });
		if (e->lost.count) {
			/* the gap's time as the events' ts show it: microseconds */
			snprintf(lost, sizeof(lost), "events lost at ts %" PRIu64 ".%03u: %"
				 PRIu64 " records", e->lost.ts / 1000, (unsigned)(e->lost.ts % 1000),
				 e->lost.count);
			args_add(&as, (struct arg){ .name = e->begin_lost ? "tracebpf_begin_lost" :
							    "tracebpf_incomplete", .str = lost });
		}
		if (e->parent_lost)
			args_add(&as, (struct arg){ .name = "tracebpf_parent_lost",
						    .str = "began after lost events: a slice "
							   "enclosing it may be among them" });
		write_args(j, &as);
	}
	tb_json_end_object(j);
}

const char *tb_model_event_name(const struct oev *e, size_t *n)
{
	return tb_conv_ev_name(e->site, e->ev, n);
}

int tb_model_counter_series(const struct oev *e, struct tb_model_series *s)
{
	struct args as = { .n = 0 };
	int k;

	counter_args(&as, e);
	for (k = 0; k < as.n && k < TB_MAX_ARGS; k++) {
		const struct arg *a = &as.a[k];
		uint64_t v = raw_arg(a->site, a->ev, a->i);

		s[k].name = a->name;
		switch (a->site->arg_type[a->i]) {
		case TB_ARG_INT:
			s[k].value = (double)(int64_t)v;
			break;
		case TB_ARG_UINT:
			s[k].value = (double)v;
			break;
		case TB_ARG_BOOL:
			s[k].value = v != 0;
			break;
		default:
			s[k].value = arg_double(a->site, a->ev, a->i);
			break;
		}
	}
	return k;
}

/* An argument as the public API gives it (tracebpf/reader.h). */
static void public_arg(const struct arg *a, struct tracebpf_arg *o)
{
	uint64_t v = raw_arg(a->site, a->ev, a->i);

	o->name = a->name;
	o->type = a->site->arg_type[a->i];
	switch (o->type) {
	case TB_ARG_INT:
		o->v.i = (int64_t)v;
		break;
	case TB_ARG_BOOL:
		o->v.i = v != 0;
		break;
	case TB_ARG_DOUBLE:
		o->v.d = arg_double(a->site, a->ev, a->i);
		break;
	case TB_ARG_STR:
		o->v.s.p = tb_conv_str_arg(a->site, a->ev, a->i, &o->v.s.len);
		if (!o->v.s.p)
			o->v.s.len = 0;
		break;
	default:   /* UINT, PTR */
		o->v.u = v;
		break;
	}
}

/* The begin's and the end's arguments (a later one with the same name
 * replaces the earlier, as in the JSON); a counter's series. */
int tb_model_event_args(const struct oev *e, struct tracebpf_arg *o, int max)
{
	struct args as = { .n = 0 };
	int n;

	if (e->ph == 'C') {
		counter_args(&as, e);
	} else {
		args_of(&as, e->site, e->ev);
		args_of(&as, e->esite, e->eev);
	}
	for (n = 0; n < as.n && n < max; n++)
		public_arg(&as.a[n], &o[n]);
	return n;
}

static void public_args(const struct oev *e, struct tracebpf_event *o)
{
	o->nargs = tb_model_event_args(e, o->args, TRACEBPF_EVENT_MAX_ARGS);
}

void tb_model_public_event(const struct oev *e, struct tracebpf_event *o)
{
	*o = (struct tracebpf_event){
		.ph = e->ph, .ts = e->ts, .dur = e->ph == 'X' ? e->dur : 0,
		.pid = e->pid, .tid = e->tid, .cat = e->site->cat, .step = e->site->step,
		.unfinished = e->unfinished, .end_of = e->begun_before,
		.begin_of = e->begin_of, .lost = e->lost.count, .lost_ts = e->lost.ts,
		.inherited = e->inherited, .parent_lost = e->parent_lost,
		.begin_lost = e->begin_lost,
	};
	if (e->ph == 'I')
		o->scope = e->site->scope ? e->site->scope : 't';
	o->name = tb_conv_ev_name(e->site, e->ev, &o->name_len);
	if (e->ev->hdr.type == TB_REC_EVENT_ID && strchr("bentsfCv", e->ph)) {
		o->has_id = true;
		o->id = tb_conv_ev_id(e->ev);
	}
	public_args(e, o);
}
