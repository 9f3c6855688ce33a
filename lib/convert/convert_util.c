// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert_util.c - what any stage of the converter may use, calling no
 * stage itself (the last file of the order in lib/convert/convert.c).
 *
 * Owns: growing the arrays of struct conv and the stages' own; the
 * copies of records the stages keep (an open slice's begin, an output
 * event's records), and the pool those copies come from and go back to
 * (POOL_*, convert_int.h); the life of a struct pair (an async slice's
 * or a flow's events share one, each holding a reference), which the
 * pairing stage makes, the selection decides and the queue lets go of;
 * what an event's record holds: its name (a COPY site's is in the
 * record), its id, its string arguments; the output files' messages and
 * their temporaries (tb_convert_fail, tb_convert_create_tmp: convert.h),
 * which the CLI uses too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "convert/convert_int.h"
#include "util/print.h"

#define PFX "tracebpf: convert: "

int tb_conv_grow_array(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *np;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 64;
	while (ncap < need)
		ncap *= 2;
	np = realloc(*p, ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

static size_t rec_alloc_size(size_t size)
{
	return size <= POOL_MAX_SIZE ? (size + POOL_STEP - 1) & ~(size_t)(POOL_STEP - 1) : size;
}

/* Out of line: tb_conv_pool_copy, in this file, gets a copy from the pool
 * without a frame of its own, and from here only when the pool has none. */
__attribute__((noinline)) void *tb_conv_copy_rec(const void *rec)
{
	const struct tb_rec_hdr *h = rec;
	void *c = malloc(rec_alloc_size(h->size));

	if (c)
		memcpy(c, h, h->size);
	return c;
}

/* The pool slot for a record of size bytes, or -1. */
static int pool_class(size_t size)
{
	return size <= POOL_MAX_SIZE ? (int)((size - 1) / POOL_STEP) : -1;
}

/* tb_conv_copy_rec, from the pool when it has one of that class. */
void *tb_conv_pool_copy(struct conv *c, const struct tb_rec_hdr *h)
{
	int k = pool_class(h->size);
	void **p;

	if (k < 0 || !c->pool[k])
		return tb_conv_copy_rec(h);
	p = c->pool[k];
	c->pool[k] = *p;
	c->npool[k]--;
	memcpy(p, h, h->size);
	return p;
}

/* A copy no longer needed: to the pool, or freed. */
void tb_conv_pool_put(struct conv *c, const void *rec)
{
	const struct tb_rec_hdr *h = rec;
	int k;

	if (!h)
		return;
	k = pool_class(h->size);
	if (k < 0 || c->npool[k] >= POOL_KEEP) {
		free((void *)h);
		return;
	}
	*(void **)h = c->pool[k];
	c->pool[k] = (void *)h;
	c->npool[k]++;
}

void tb_conv_pool_free(struct conv *c)
{
	for (size_t k = 0; k < POOL_MAX_SIZE / POOL_STEP; k++) {
		while (c->pool[k]) {
			void **p = c->pool[k];

			c->pool[k] = *p;
			free(p);
		}
	}
}

/* ------------------------------------------------------------ pairs -- */

struct pair *tb_conv_pair_new(void)
{
	struct pair *p = calloc(1, sizeof(*p));

	if (p)
		p->refs = 1;
	return p;
}

struct pair *tb_conv_pair_ref(struct pair *p)
{
	if (p)
		p->refs++;
	return p;
}

void tb_conv_pair_put(struct pair *p)
{
	if (p && !--p->refs)
		free(p);
}

/* ------------------------------------------------ an event's record -- */

/* The event's name, *n bytes: for a COPY site, the name copied at the
 * hit; NULL when that could not be read. */
const char *tb_conv_ev_name(const struct site *s, const struct tb_rec_event *ev, size_t *n)
{
	const struct tb_rec_event_id *x = (const void *)ev;
	size_t off = sizeof(*x);
	int k;

	if (!(s->flags & TB_SITE_COPY_NAME)) {
		*n = strlen(s->name);
		return s->name;
	}
	if (ev->hdr.type != TB_REC_EVENT_ID || !x->name_len)
		return NULL;
	for (k = 0; k < s->nargs && k < TB_MAX_ARGS; k++)
		if (s->arg_type[k] == TB_ARG_STR)
			off += ev->str_len[k];
	if (off > ev->hdr.size || x->name_len > ev->hdr.size - off)
		return NULL;
	*n = strnlen((const char *)ev + off, x->name_len);
	return (const char *)ev + off;
}

/* An event_id hit's id; another program's probe's: its first argument
 * (an async slice's, TB_USDT_ASYNC_*). */
uint64_t tb_conv_ev_id(const struct tb_rec_event *ev)
{
	const struct tb_rec_usdt *u = (const void *)ev;

	if (ev->hdr.type == TB_REC_USDT)
		return u->nargs ? u->args[0] : 0;
	return ev->hdr.type == TB_REC_EVENT_ID ? ((const struct tb_rec_event_id *)ev)->id : 0;
}

static size_t ev_fixed_size(const struct tb_rec_event *ev)
{
	return ev->hdr.type == TB_REC_EVENT_ID ? sizeof(struct tb_rec_event_id)
					       : sizeof(*ev);
}

/* A TB_REC_USDT's: str_len[k] bytes for each note argument k with some. */
static const char *usdt_str(const struct site *s, const struct tb_rec_usdt *u, int i,
			    size_t *n)
{
	size_t off = sizeof(*u), len;
	int k, src = s->argsrc[i];

	if (src >= u->nargs)
		return NULL;
	for (k = 0; k < src; k++)
		off += u->str_len[k];
	len = u->str_len[src];
	if (!len || off > u->hdr.size || len > u->hdr.size - off)
		return NULL;
	*n = strnlen((const char *)u + off, len);
	return (const char *)u + off;
}

/* The bytes of string argument i: str_len[k] bytes for each string
 * argument k in order after the fixed part. NULL when unreadable. */
const char *tb_conv_str_arg(const struct site *s, const struct tb_rec_event *ev,
			    int i, size_t *n)
{
	size_t off = ev_fixed_size(ev), len;
	int k;

	if (ev->hdr.type == TB_REC_USDT)
		return usdt_str(s, (const void *)ev, i, n);
	len = ev->str_len[i];
	for (k = 0; k < i; k++)
		if (s->arg_type[k] == TB_ARG_STR)
			off += ev->str_len[k];
	if (!len || off > ev->hdr.size || len > ev->hdr.size - off)
		return NULL;
	*n = strnlen((const char *)ev + off, len);
	return (const char *)ev + off;
}

/* ------------------------------------------------- the output files -- */

void tb_convert_fail(const char *verb, const char *obj, int err, const char *hint)
{
	tb_print(PFX "failed to %s '%s': %s\n", verb, obj, strerror(-err));
	if (hint)
		tb_print(PFX "hint: %s\n", hint);
}

/* The file the JSON is written to, next to out and renamed over it at the
 * end: a viewer must never see a half-written object (Perfetto rejects
 * it). *tmp is its name (freed and NULL on failure, said). */
int tb_convert_create_tmp(const char *out, const char *out_name, char **tmp, FILE **f)
{
	int err, fd;

	*tmp = malloc(strlen(out) + sizeof(".XXXXXX"));
	if (!*tmp) {
		tb_convert_fail("create", out_name, -ENOMEM, NULL);
		return -ENOMEM;
	}
	strcpy(*tmp, out);
	strcat(*tmp, ".XXXXXX");
	fd = mkstemp(*tmp);
	/* 0600 whatever the umask, like the trace it renders
	 * (docs/tracebpf-record.md, FILES) */
	if (fd >= 0 && !fchmod(fd, 0600) && (*f = fdopen(fd, "w")))
		return 0;
	err = -errno;
	if (fd < 0) {
		tb_convert_fail("create", out_name, err, err == -EACCES || err == -EROFS ?
		     "the output directory must be writable" : NULL);
	} else {
		tb_convert_fail("create", *tmp, err, NULL);
		close(fd);
		unlink(*tmp);
	}
	free(*tmp);
	*tmp = NULL;
	return err;
}
