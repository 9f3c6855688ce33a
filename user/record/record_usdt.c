// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record_usdt.c - other programs' USDT probes (record --usdt): the probes
 * the rules want in each object the targets map, attached with the probe's
 * id as the cookie (bpf/record.bpf.c, tb_usdt), and described in the file
 * (TB_REC_USDT_PROBE) before their first hit and at the start of each file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kern/kern.h"
#include "record.skel.h"
#include "record/recorder.h"
#include "format/tbfile.h"
#include "probes/probes.h"

/* A probe a recording attached somewhere: its id is its index. */
struct usdt_probe {
	char *provider, *name;
	struct tb_usdt_desc d;
};

/* The distinct wanted probes of one object, and their arguments. */
struct wanted {
	const struct tb_usdt_rules *rules;
	struct { char *provider, *name; int nargs; } *v;
	int n;
};

static bool want_note(const char *provider, const char *name, void *ctx)
{
	return tb_usdt_wanted(ctx, provider, name);
}

int rec_usdt_open(struct recorder *r)
{
	char why[512];
	int err;

	if (!r->o->nusdt)
		return 0;
	err = tb_usdt_rules_build(&r->usdt_rules, r->o->usdt, r->o->nusdt, why, sizeof(why));
	if (err) {
		ERR("invalid --usdt: %s", err == -EINVAL ? why : strerror(-err));
		return err;
	}
	tb_probes_also(want_note, r->usdt_rules);
	return 0;
}

void rec_usdt_close(struct recorder *r)
{
	tb_probes_also(NULL, NULL);
	for (int i = 0; i < r->nusdt; i++) {
		free(r->usdt[i].provider);
		free(r->usdt[i].name);
	}
	free(r->usdt);
	r->usdt = NULL;
	r->nusdt = 0;
	tb_usdt_rules_free(r->usdt_rules);
	r->usdt_rules = NULL;
}

/* Room for a description's text: a provider and a name (each cut to 255
 * bytes: they come from the ELF file), the event's name and 12 argument
 * names, NULs included. */
#define PROBE_TEXT (2 * 256 + sizeof(((struct tb_usdt_desc *)0)->event) + \
		    TB_USDT_MAX_ARGS * sizeof(((struct tb_usdt_desc *)0)->argname[0]))

/* s, NUL-terminated and cut to 255 bytes, at text + *len. */
static void put_text(char *text, size_t *len, const char *s)
{
	*len += (size_t)snprintf(text + *len, PROBE_TEXT - *len, "%.255s", s) + 1;
}

/* The probe's description into the file (nothing before it is open). */
static void log_probe(struct recorder *r, int id)
{
	const struct usdt_probe *p = &r->usdt[id];
	char buf[sizeof(struct tb_rec_usdt_probe) + PROBE_TEXT];
	struct tb_rec_usdt_probe *rec = (void *)buf;
	char *text = (char *)(rec + 1);
	size_t len = 0;

	if (!r->w)
		return;
	memset(buf, 0, sizeof(buf));
	put_text(text, &len, p->provider);
	put_text(text, &len, p->name);
	put_text(text, &len, p->d.event);
	for (int i = 0; i < p->d.nargs; i++) {
		put_text(text, &len, p->d.argname[i]);
		rec->arg_src[i] = p->d.src[i];
		rec->arg_type[i] = p->d.type[i];
	}
	rec->id = id;
	rec->kind = p->d.kind;
	rec->nargs = p->d.nargs;
	rec->len = len;
	rec->hdr.type = TB_REC_USDT_PROBE;
	rec->hdr.size = TB_REC_ALIGN(sizeof(*rec) + len);
	rec->hdr.cpu = ~0u;
	rec->hdr.ts = now_ns(CLOCK_MONOTONIC);
	tb_writer_append(r->w, &rec->hdr);
}

int rec_usdt_log_all(struct recorder *r)
{
	for (int i = 0; i < r->nusdt; i++)
		log_probe(r, i);
	return 0;
}

/* The id of provider:name, a new one described (its string arguments
 * told to the kernel side first); -errno. */
static int probe_id(struct recorder *r, const char *provider, const char *name, int nargs)
{
	struct usdt_probe *nv, *p;
	__u32 key, strs;

	for (int i = 0; i < r->nusdt; i++)
		if (!strcmp(r->usdt[i].provider, provider) && !strcmp(r->usdt[i].name, name))
			return i;
	if (r->nusdt == TB_USDT_MAX_PROBES)
		return -E2BIG;
	nv = realloc(r->usdt, (r->nusdt + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	r->usdt = nv;
	p = &nv[r->nusdt];
	p->provider = strdup(provider);
	p->name = strdup(name);
	if (!p->provider || !p->name) {
		free(p->provider);
		free(p->name);
		return -ENOMEM;
	}
	tb_usdt_describe(r->usdt_rules, provider, name, nargs, &p->d);
	key = r->nusdt;
	strs = p->d.strs | (p->d.switch_only ? TB_USDT_SWITCH_ONLY : 0);
	if (strs && bpf_map_update_elem(bpf_map__fd(r->skel->maps.usdt_strs), &key, &strs, 0))
		return -errno;
	if (p->d.kind == TB_USDT_COUNTER && !p->d.nargs)
		fprintf(stderr, "tracebpf: record: warning: --usdt-counter %s:%s names no integer "
				"argument of the probe (it has %d): its hits are not shown\n",
			provider, name, nargs);
	log_probe(r, r->nusdt);
	return r->nusdt++;
}

static int collect(const char *provider, const char *name, const char *args,
		   unsigned long long sema, void *ctx)
{
	struct wanted *w = ctx;
	int nargs = tb_usdt_spec_nargs(args), i;
	void *nv;

	(void)sema;
	if (!tb_usdt_wanted(w->rules, provider, name))
		return 0;
	for (i = 0; i < w->n; i++)
		if (!strcmp(w->v[i].provider, provider) && !strcmp(w->v[i].name, name))
			break;
	if (i == w->n) {
		nv = realloc(w->v, (w->n + 1) * sizeof(*w->v));
		if (!nv)
			return -ENOMEM;
		w->v = nv;
		w->v[i].provider = strdup(provider);
		w->v[i].name = strdup(name);
		w->v[i].nargs = 0;
		w->n++;
		if (!w->v[i].provider || !w->v[i].name)
			return -ENOMEM;
	}
	if (nargs > w->v[i].nargs)
		w->v[i].nargs = nargs;
	return 0;
}

static void wanted_free(struct wanted *w)
{
	for (int i = 0; i < w->n; i++) {
		free(w->v[i].provider);
		free(w->v[i].name);
	}
	free(w->v);
}

/* One probe name of the object, all its sites (one uprobe_multi link). A
 * probe libbpf cannot attach (an argument spec it does not know) is said
 * and left out: the others are still recorded. */
static int attach_one(struct recorder *r, struct object *ob, const char *path,
		      const char *provider, const char *name, int nargs)
{
	LIBBPF_OPTS(bpf_usdt_opts, uo);
	struct bpf_link *link;
	int id = probe_id(r, provider, name, nargs);

	if (id < 0) {
		ERR("failed to record %s:%s: %s", provider, name, strerror(-id));
		return id;
	}
	uo.usdt_cookie = id;
	link = bpf_program__attach_usdt(r->skel->progs.tb_usdt, -1, path, provider, name, &uo);
	if (!link) {
		fprintf(stderr, "tracebpf: record: warning: failed to attach to %s:%s in '%s' "
				"(%s): its hits are not recorded; -v shows why libbpf "
				"refused it (an argument spec it does not decode)\n",
			provider, name, ob->path,
			strerror(errno));
		return 0;
	}
	return tb_links_add(&ob->ulinks, &ob->nulinks, link);
}

int rec_usdt_attach(struct recorder *r, struct object *ob, const char *path)
{
	struct wanted w = { .rules = r->usdt_rules };
	int err;

	if (!r->usdt_rules || ob->nulinks)
		return 0;
	err = tb_elf_each_note(path, collect, &w);
	if (err == -ENOEXEC)
		err = 0;
	for (int i = 0; !err && i < w.n; i++)
		err = attach_one(r, ob, path, w.v[i].provider, w.v[i].name, w.v[i].nargs);
	if (!err && w.n && r->o->verbose)
		fprintf(stderr, "tracebpf: record: attached to %d of the %d probe names --usdt "
				"asks for in '%s'\n", ob->nulinks, w.n, ob->path);
	wanted_free(&w);
	return err;
}

void rec_usdt_detach(struct object *ob)
{
	tb_links_destroy(&ob->ulinks, &ob->nulinks);
}
