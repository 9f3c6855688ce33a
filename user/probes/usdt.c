// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* usdt.c - the rules of record --usdt and its catalogs (see probes.h). */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probes/probes.h"

#define PROV_MAX 64
#define NAME_MAX_ 128
#define CATALOG_DEPTH 4

struct pname {
	char prov[PROV_MAX], name[NAME_MAX_];
};

struct arg_rule {
	char name[32];
	unsigned char type;   /* TB_ARG_*; TB_ARG_NONE: hidden */
};

struct args_rule {
	struct pname p;
	int n;
	struct arg_rule a[TB_USDT_MAX_ARGS];
};

struct slice_rule {
	struct pname begin, end;
	char event[128];
	bool async;           /* --usdt-async */
};

struct counter_rule {
	struct pname p;
	char arg[32];
};

struct tb_usdt_rules {
	struct pname *globs;
	struct pname *switches;   /* --usdt-enable */
	struct slice_rule *slices;
	struct args_rule *args;
	struct counter_rule *counters;
	int nglobs, nswitches, nslices, nargs, ncounters;
};

/* Grows *v (n elements of size sz) by one zeroed element. */
static void *push(void *vp, int *n, size_t sz)
{
	void **v = vp;
	char *nv = realloc(*v, (*n + 1) * sz);

	if (!nv)
		return NULL;
	*v = nv;
	memset(nv + *n * sz, 0, sz);
	return nv + (*n)++ * sz;
}

/* "PROVIDER:NAME" (len bytes of s) into p; false when malformed. */
static bool parse_pname(const char *s, size_t len, struct pname *p)
{
	const char *colon = memchr(s, ':', len);
	size_t pl, nl;

	if (!colon)
		return false;
	pl = colon - s;
	nl = len - pl - 1;
	if (!pl || !nl || pl >= PROV_MAX || nl >= NAME_MAX_ || memchr(colon + 1, ':', nl))
		return false;
	memcpy(p->prov, s, pl);
	p->prov[pl] = 0;
	memcpy(p->name, colon + 1, nl);
	p->name[nl] = 0;
	return true;
}

static bool pname_is(const struct pname *p, const char *prov, const char *name)
{
	return !strcmp(p->prov, prov) && !strcmp(p->name, name);
}

static int bad(char *why, size_t len, const char *fmt, const char *what)
{
	snprintf(why, len, fmt, what);
	return -EINVAL;
}

static int type_of(const char *t)
{
	static const struct { const char *name; int type; } types[] = {
		{ "int", TB_ARG_INT }, { "uint", TB_ARG_UINT }, { "str", TB_ARG_STR },
		{ "hex", TB_ARG_PTR },
	};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(t, types[i].name))
			return types[i].type;
	return -1;
}

/* NAME[:TYPE] or -, the argument rule's item (len bytes of s). */
static bool parse_arg_item(const char *s, size_t len, struct arg_rule *a)
{
	char item[64], *colon;
	int t = TB_ARG_INT;

	if (!len || len >= sizeof(item))
		return false;
	memcpy(item, s, len);
	item[len] = 0;
	if (!strcmp(item, "-")) {
		a->type = TB_ARG_NONE;
		return true;
	}
	colon = strchr(item, ':');
	if (colon) {
		*colon = 0;
		t = type_of(colon + 1);
	}
	if (t < 0 || !*item || strlen(item) >= sizeof(a->name))
		return false;
	strcpy(a->name, item);
	a->type = (unsigned char)t;
	return true;
}

static int add_args(struct tb_usdt_rules *r, const char *s, char *why, size_t wl)
{
	const char *eq = strchr(s, '='), *p;
	struct args_rule *a;

	if (!eq || !(a = push(&r->args, &r->nargs, sizeof(*a))))
		return eq ? -ENOMEM : bad(why, wl, "'%s': give PROVIDER:NAME=ARG[:TYPE],...", s);
	if (!parse_pname(s, eq - s, &a->p))
		return bad(why, wl, "'%s': give PROVIDER:NAME=ARG[:TYPE],...", s);
	for (p = eq + 1; ; p++) {
		size_t len = strcspn(p, ",");

		if (a->n == TB_USDT_MAX_ARGS || !parse_arg_item(p, len, &a->a[a->n]))
			return bad(why, wl, "'%s': each argument is NAME, NAME:TYPE (int, uint, "
				   "str, hex) or -, at most 12", s);
		a->n++;
		p += len;
		if (!*p)
			return 0;
	}
}

/* The slice's default name: PROVIDER:the words the two names begin with
 * (words end at '_': query__start and query__done make query), else the
 * begin's name. */
static void slice_event(struct slice_rule *sl)
{
	size_t n = 0;

	while (sl->begin.name[n] && sl->begin.name[n] == sl->end.name[n])
		n++;
	while (n && sl->begin.name[n - 1] != '_')
		n--;
	while (n && sl->begin.name[n - 1] == '_')
		n--;
	snprintf(sl->event, sizeof(sl->event), "%s:%.*s", sl->begin.prov,
		 (int)(n ? n : strlen(sl->begin.name)), sl->begin.name);
}

static int add_slice(struct tb_usdt_rules *r, const char *s, bool async, char *why,
		     size_t wl)
{
	const char *eq = strchr(s, '='), *eq2 = eq ? strchr(eq + 1, '=') : NULL;
	size_t elen = eq2 ? (size_t)(eq2 - eq - 1) : (eq ? strlen(eq + 1) : 0);
	struct slice_rule *sl;

	if (!eq || !parse_pname(s, eq - s, &(struct pname){}) ||
	    !parse_pname(eq + 1, elen, &(struct pname){}) ||
	    (eq2 && (!eq2[1] || strlen(eq2 + 1) >= sizeof(sl->event))))
		return bad(why, wl, "'%s': give PROVIDER:BEGIN=PROVIDER:END[=NAME]", s);
	sl = push(&r->slices, &r->nslices, sizeof(*sl));
	if (!sl)
		return -ENOMEM;
	parse_pname(s, eq - s, &sl->begin);
	parse_pname(eq + 1, elen, &sl->end);
	sl->async = async;
	if (eq2)
		strcpy(sl->event, eq2 + 1);
	else
		slice_event(sl);
	return 0;
}

static int add_counter(struct tb_usdt_rules *r, const char *s, char *why, size_t wl)
{
	const char *eq = strchr(s, '=');
	struct counter_rule *c;

	if (!eq || !eq[1] || strlen(eq + 1) >= sizeof(c->arg) ||
	    !parse_pname(s, eq - s, &(struct pname){}))
		return bad(why, wl, "'%s': give PROVIDER:NAME=ARG (argK or a name "
			   "from --usdt-args)", s);
	c = push(&r->counters, &r->ncounters, sizeof(*c));
	if (!c)
		return -ENOMEM;
	parse_pname(s, eq - s, &c->p);
	strcpy(c->arg, eq + 1);
	return 0;
}

static int add_opt(struct tb_usdt_rules *r, char kind, const char *text, int depth,
		   char *why, size_t wl);

/* The directories catalogs are looked for in: $TRACEBPF_USDT_PATH
 * (colon-separated), then next to the program, installed
 * (BINDIR/../share/tracebpf/usdt) or in the source tree (tools/usdt). */
static FILE *open_catalog(const char *name, char *path, size_t len)
{
	const char *env = getenv("TRACEBPF_USDT_PATH");
	char exe[PATH_MAX], *slash;
	const char *rel[] = { "../share/tracebpf/usdt", "../tools/usdt" };
	FILE *f;
	ssize_t n;

	while (env && *env) {
		size_t dl = strcspn(env, ":");

		snprintf(path, len, "%.*s/%s.usdt", (int)dl, env, name);
		if (dl && (f = fopen(path, "re")))
			return f;
		env += dl + (env[dl] == ':');
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = 0;
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		if (snprintf(path, len, "%.3000s/%s/%.64s.usdt", exe, rel[i], name) >= (int)len)
			continue;
		if ((f = fopen(path, "re")))
			return f;
	}
	return NULL;
}

/* One catalog line: OPTION VALUE, the option without its dashes. */
static int catalog_line(struct tb_usdt_rules *r, char *line, int depth, char *why, size_t wl)
{
	static const struct { const char *opt; char kind; } opts[] = {
		{ "usdt", 'p' }, { "usdt-slice", 's' }, { "usdt-args", 'a' },
		{ "usdt-counter", 'c' }, { "usdt-async", 'y' }, { "usdt-enable", 'e' },
	};
	char *val = line + strcspn(line, " \t");

	if (*val)
		*val++ = 0;
	val += strspn(val, " \t");
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (!strcmp(line, opts[i].opt) && *val)
			return add_opt(r, opts[i].kind, val, depth + 1, why, wl);
	return -EINVAL;
}

/* why, prefixed with the catalog line it is about. */
static void at_line(char *why, size_t wl, const char *path, int no)
{
	char inner[512];

	snprintf(inner, sizeof(inner), "%s", *why ? why :
		 "give OPTION VALUE, OPTION one of usdt, usdt-slice, usdt-async, usdt-args, "
		 "usdt-counter, usdt-enable");
	snprintf(why, wl, "%.256s:%d: %s", path, no, inner);
}

static int load_catalog(struct tb_usdt_rules *r, const char *name, int depth,
			char *why, size_t wl)
{
	char path[PATH_MAX], line[512];
	int err = 0, no = 0;
	FILE *f;

	if (strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_+-") != strlen(name) ||
	    !*name || depth > CATALOG_DEPTH)
		return bad(why, wl, "'%s': give PROVIDER:NAME (globs allowed) or the name "
			   "of a catalog", name);
	f = open_catalog(name, path, sizeof(path));
	if (!f)
		return bad(why, wl, "no catalog '%s' (TRACEBPF_USDT_PATH, share/tracebpf/usdt)",
			   name);
	while (!err && fgets(line, sizeof(line), f)) {
		char *s = line + strspn(line, " \t");

		no++;
		s[strcspn(s, "\r\n")] = 0;
		if (!*s || *s == '#')
			continue;
		err = catalog_line(r, s, depth, why, wl);
		if (err == -EINVAL)
			at_line(why, wl, path, no);
	}
	fclose(f);
	return err;
}

static int add_opt(struct tb_usdt_rules *r, char kind, const char *text, int depth,
		   char *why, size_t wl)
{
	struct pname *g;

	switch (kind) {
	case 's':
	case 'y':
		return add_slice(r, text, kind == 'y', why, wl);
	case 'a':
		return add_args(r, text, why, wl);
	case 'c':
		return add_counter(r, text, why, wl);
	case 'e':
		g = push(&r->switches, &r->nswitches, sizeof(*g));
		if (!g)
			return -ENOMEM;
		if (!parse_pname(text, strlen(text), g))
			return bad(why, wl, "'%s': give PROVIDER:NAME", text);
		return 0;
	default:
		if (!strchr(text, ':'))
			return load_catalog(r, text, depth, why, wl);
		g = push(&r->globs, &r->nglobs, sizeof(*g));
		if (!g)
			return -ENOMEM;
		if (!parse_pname(text, strlen(text), g))
			return bad(why, wl, "'%s': give PROVIDER:NAME (globs allowed) or the name "
				   "of a catalog", text);
		return 0;
	}
}

int tb_usdt_rules_build(struct tb_usdt_rules **out, const struct tb_usdt_opt *opts, int n,
			char *why, size_t whylen)
{
	struct tb_usdt_rules *r = calloc(1, sizeof(*r));
	int err = r ? 0 : -ENOMEM;

	*why = 0;
	for (int i = 0; !err && i < n; i++)
		err = add_opt(r, opts[i].kind, opts[i].text, 0, why, whylen);
	if (err) {
		tb_usdt_rules_free(r);
		r = NULL;
	}
	*out = r;
	return err;
}

void tb_usdt_rules_free(struct tb_usdt_rules *r)
{
	if (!r)
		return;
	free(r->globs);
	free(r->switches);
	free(r->slices);
	free(r->args);
	free(r->counters);
	free(r);
}

/* provider:name is recorded: a glob or a rule names it. */
static bool recorded(const struct tb_usdt_rules *r, const char *prov, const char *name)
{
	for (int i = 0; i < r->nglobs; i++)
		if (!fnmatch(r->globs[i].prov, prov, 0) && !fnmatch(r->globs[i].name, name, 0))
			return true;
	for (int i = 0; i < r->nslices; i++)
		if (pname_is(&r->slices[i].begin, prov, name) ||
		    pname_is(&r->slices[i].end, prov, name))
			return true;
	for (int i = 0; i < r->nargs; i++)
		if (pname_is(&r->args[i].p, prov, name))
			return true;
	for (int i = 0; i < r->ncounters; i++)
		if (pname_is(&r->counters[i].p, prov, name))
			return true;
	return false;
}

bool tb_usdt_wanted(const struct tb_usdt_rules *r, const char *prov, const char *name)
{
	if (!r || !strcmp(prov, TB_PROVIDER))
		return false;
	for (int i = 0; i < r->nswitches; i++)
		if (pname_is(&r->switches[i], prov, name))
			return true;
	return recorded(r, prov, name);
}

/* The arguments shown: the note's, named and typed by the last
 * --usdt-args of the probe, those it hides left out. */
static void describe_args(const struct tb_usdt_rules *r, const char *prov, const char *name,
			  int nargs, struct tb_usdt_desc *d)
{
	const struct args_rule *ar = NULL;

	for (int i = 0; i < r->nargs; i++)
		if (pname_is(&r->args[i].p, prov, name))
			ar = &r->args[i];
	d->nargs = 0;
	d->strs = 0;
	for (int k = 0; k < nargs && k < TB_USDT_MAX_ARGS; k++) {
		const struct arg_rule *a = ar && k < ar->n ? &ar->a[k] : NULL;
		int i = d->nargs;

		if (a && a->type == TB_ARG_NONE)
			continue;
		d->src[i] = (unsigned char)k;
		d->type[i] = a ? a->type : TB_ARG_INT;
		if (a)
			snprintf(d->argname[i], sizeof(d->argname[i]), "%s", a->name);
		else
			snprintf(d->argname[i], sizeof(d->argname[i]), "arg%d", k);
		if (d->type[i] == TB_ARG_STR)
			d->strs |= 1u << k;
		d->nargs++;
	}
}

/* A counter shows one argument: argK, or the one --usdt-args names so. */
static void describe_counter(const struct counter_rule *c, struct tb_usdt_desc *d)
{
	int keep = -1;

	for (int i = 0; i < d->nargs; i++) {
		char k[16];

		snprintf(k, sizeof(k), "arg%d", d->src[i]);
		if (!strcmp(c->arg, d->argname[i]) || !strcmp(c->arg, k))
			keep = i;
	}
	d->kind = TB_USDT_COUNTER;
	if (keep < 0 || d->type[keep] == TB_ARG_STR) {
		d->nargs = 0;   /* said by the recorder: nothing to count */
		return;
	}
	d->src[0] = d->src[keep];
	d->type[0] = d->type[keep] == TB_ARG_PTR ? TB_ARG_UINT : d->type[keep];
	memmove(d->argname[0], d->argname[keep], sizeof(d->argname[0]));
	d->nargs = 1;
}

void tb_usdt_describe(const struct tb_usdt_rules *r, const char *prov, const char *name,
		      int nargs, struct tb_usdt_desc *d)
{
	memset(d, 0, sizeof(*d));
	d->kind = TB_USDT_INSTANT;
	snprintf(d->event, sizeof(d->event), "%s:%s", prov, name);
	describe_args(r, prov, name, nargs, d);
	for (int i = 0; i < r->nslices; i++) {
		const struct slice_rule *sl = &r->slices[i];

		if (pname_is(&sl->begin, prov, name) || pname_is(&sl->end, prov, name)) {
			d->kind = pname_is(&sl->begin, prov, name) ? TB_USDT_BEGIN : TB_USDT_END;
			if (sl->async)
				d->kind = d->kind == TB_USDT_BEGIN ? TB_USDT_ASYNC_BEGIN
								   : TB_USDT_ASYNC_END;
			snprintf(d->event, sizeof(d->event), "%s", sl->event);
		}
	}
	for (int i = 0; i < r->ncounters; i++)
		if (pname_is(&r->counters[i].p, prov, name))
			describe_counter(&r->counters[i], d);
	/* a probe recorded otherwise is not one only for its semaphore */
	d->switch_only = !recorded(r, prov, name);
}

int tb_usdt_spec_nargs(const char *args)
{
	int n = 0;

	while (*args) {
		args += strspn(args, " ");
		if (!*args)
			break;
		n++;
		args += strcspn(args, " ");
	}
	return n;
}
