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

#include "convert_int.h"

static const char phase_of[] = {
	[TB_USDT_INSTANT] = 'I', [TB_USDT_BEGIN] = 'B', [TB_USDT_END] = 'E',
	[TB_USDT_COUNTER] = 'C',
};

/* The site a probe's description makes; its strings point into rec
 * (checked: the file may be damaged). False when it makes none. */
static bool parse_probe(const struct tb_rec_usdt_probe *rec, struct site *s)
{
	const char *p = (const char *)(rec + 1), *end = p + rec->len, *str[3];
	size_t room = rec->hdr.size - sizeof(*rec);

	if (rec->len > room || rec->kind > TB_USDT_COUNTER || rec->nargs > TB_SITE_ARGS)
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

int tb_conv_on_usdt(struct conv *c, const struct tb_rec_usdt *rec, uint64_t seq)
{
	struct site *s = rec->probe < c->usdt_cap ? c->usdt[rec->probe] : NULL;

	return tb_conv_on_site_event(c, (const struct tb_rec_event *)rec, s, seq);
}
