// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert_usdt.c - other programs' USDT probes (record --usdt) in the
 * model: each TB_REC_USDT_PROBE becomes a site (model.h, usdt), and each
 * hit an event of that site, paired and rendered as an application
 * event's (docs/output.md, "Other programs' probes").
 *
 * Receives: those two record types, in time order, from the model's loop
 * (convert_model.c).
 * Hands on: the hits with their sites, to pairing (tb_conv_on_site_event,
 * convert_pair.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "convert/convert_int.h"

static const char phase_of[] = {
	[TB_USDT_INSTANT] = 'I', [TB_USDT_BEGIN] = 'B', [TB_USDT_END] = 'E',
	[TB_USDT_COUNTER] = 'C', [TB_USDT_ASYNC_BEGIN] = 'b', [TB_USDT_ASYNC_END] = 'e',
};

/* The site a probe's description makes; its strings point into rec
 * (checked: the file may be damaged). False when it makes none. */
static bool parse_probe(const struct tb_rec_usdt_probe *rec, struct site *s)
{
	const char *p = (const char *)(rec + 1), *end = p + rec->len, *str[3];
	size_t room = rec->hdr.size - sizeof(*rec);

	if (rec->len > room || rec->kind > TB_USDT_ASYNC_END || rec->nargs > TB_SITE_ARGS)
		return false;
	for (int i = 0; i < 3 + rec->nargs; i++) {
		const char *nul = memchr(p, 0, end - p);

		if (!nul)
			return false;
		if (i < 3)
			str[i] = p;
		else
			s->argname[i - 3] = p;
		p = nul + 1;
	}
	for (int i = 0; i < rec->nargs; i++) {
		uint8_t t = rec->arg_type[i];

		if (rec->arg_src[i] >= TB_USDT_MAX_ARGS ||
		    (t != TB_ARG_INT && t != TB_ARG_UINT && t != TB_ARG_STR && t != TB_ARG_PTR))
			return false;
		s->argsrc[i] = rec->arg_src[i];
		s->arg_type[i] = t;
	}
	s->cat = str[0];
	s->name = str[2];
	s->name_args = strchr(s->name, '{') != NULL;
	s->nargs = rec->nargs;
	s->phase = phase_of[rec->kind];
	s->scope = 't';
	s->usdt = true;
	s->valid = true;
	return true;
}

int tb_conv_on_usdt_probe(struct conv *c, const struct tb_rec_usdt_probe *orig)
{
	size_t need = (size_t)orig->id + 1;
	struct site *s;
	int err;

	if (orig->id >= TB_USDT_MAX_PROBES)
		return 0;
	err = tb_conv_grow_array((void **)&c->sites, &c->sites_cap, c->nsites + 1,
				 sizeof(*c->sites));
	if (!err && need > c->usdt_cap) {
		size_t old = c->usdt_cap;

		err = tb_conv_grow_array((void **)&c->usdt, &c->usdt_cap, need, sizeof(*c->usdt));
		if (!err)
			memset(c->usdt + old, 0, (c->usdt_cap - old) * sizeof(*c->usdt));
	}
	if (err)
		return err;
	/* kept with its record; an earlier one may still be in use (open
	 * slices, events queued) */
	s = calloc(1, sizeof(*s) + orig->hdr.size);
	if (!s)
		return -ENOMEM;
	memcpy(s + 1, orig, orig->hdr.size);
	c->sites[c->nsites++] = s;
	if (parse_probe((const void *)(s + 1), s))
		c->usdt[orig->id] = s;
	return 0;
}

/* A site named by its hits' arguments, and one such name's copy of it. */
struct named_site {
	struct site s;
	const struct site *from;
	char name[];
};

/* The text of {ref} (rlen bytes: ARG or ARG|stem) for hit u of site s,
 * into out (room bytes, room > 0): "?" for an argument it lacks. */
static size_t arg_text(const struct site *s, const struct tb_rec_usdt *u, const char *ref,
		       size_t rlen, char *out, size_t room)
{
	const char *bar = memchr(ref, '|', rlen), *str = NULL, *slash, *dot;
	size_t nlen = bar ? (size_t)(bar - ref) : rlen, n = 0;
	char num[24];
	int i;

	for (i = 0; i < s->nargs; i++)
		if (strlen(s->argname[i]) == nlen && !memcmp(s->argname[i], ref, nlen))
			break;
	if (i == s->nargs || s->argsrc[i] >= u->nargs) {
		str = "?";
		n = 1;
	} else if (s->arg_type[i] == TB_ARG_STR) {
		str = tb_conv_str_arg(s, (const struct tb_rec_event *)u, i, &n);
		if (!str) {
			str = "?";
			n = 1;
		}
	} else {
		uint64_t v = u->args[s->argsrc[i]];

		n = (size_t)snprintf(num, sizeof(num), s->arg_type[i] == TB_ARG_INT ? "%lld" :
				     s->arg_type[i] == TB_ARG_UINT ? "%llu" : "0x%llx",
				     (unsigned long long)v);
		str = num;
	}
	if (bar && rlen - nlen - 1 == 4 && !memcmp(bar + 1, "stem", 4)) {
		/* a path's file name without its extension: a Python module's */
		slash = memrchr(str, '/', n);
		if (slash) {
			n -= (size_t)(slash + 1 - str);
			str = slash + 1;
		}
		dot = memrchr(str, '.', n);
		if (dot && dot != str)
			n = (size_t)(dot - str);
	}
	n = n < room - 1 ? n : room - 1;
	memcpy(out, str, n);
	return n;
}

/* s's name with each {ref} replaced by hit u's argument. */
static size_t render_name(const struct site *s, const struct tb_rec_usdt *u, char *out,
			  size_t room)
{
	const char *p = s->name, *close;
	size_t n = 0;

	while (*p && n + 1 < room) {
		if (*p != '{' || !(close = strchr(p, '}'))) {
			out[n++] = *p++;
			continue;
		}
		n += arg_text(s, u, p + 1, (size_t)(close - p - 1), out + n, room - n);
		p = close + 1;
	}
	out[n] = 0;
	return n;
}

/* The site of hit u's name, made once per (site, name). */
static struct site *named(struct conv *c, struct site *s, const struct tb_rec_usdt *u)
{
	char name[TB_STR_MAX * 2];
	size_t n = render_name(s, u, name, sizeof(name));
	uint64_t key = tb_hash_bytes(tb_hash64((uintptr_t)s), name, n);
	struct named_site *ns = tb_hmap_get(&c->usdt_named, key);

	if (ns && ns->from == s && !strcmp(ns->name, name))
		return &ns->s;
	if (tb_conv_grow_array((void **)&c->sites, &c->sites_cap, c->nsites + 1,
			       sizeof(*c->sites)) || !(ns = malloc(sizeof(*ns) + n + 1)))
		return NULL;
	c->sites[c->nsites++] = ns;
	ns->s = *s;
	ns->s.name_args = false;
	ns->from = s;
	memcpy(ns->name, name, n + 1);
	ns->s.name = ns->name;
	if (!tb_hmap_get(&c->usdt_named, key))   /* a collision: not kept */
		tb_hmap_put(&c->usdt_named, key, ns);
	return &ns->s;
}

int tb_conv_on_usdt(struct conv *c, const struct tb_rec_usdt *rec, uint64_t seq)
{
	struct site *s = rec->probe < c->usdt_cap ? c->usdt[rec->probe] : NULL;

	if (s && s->name_args && !(s = named(c, s, rec)))
		return -ENOMEM;
	return tb_conv_on_site_event(c, (const struct tb_rec_event *)rec, s, seq);
}
