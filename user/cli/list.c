// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * list.c - `tracebpf list FILE... | -p PID [--json]`: the sites an
 * application carries, read from its ELF files (the executable and every
 * library with tracebpf probes it loads): category, name, phase, argument
 * names and types, source file and line, and a count per category.
 *
 * A site's descriptor (struct tracebpf_site, tracebpf/site.h) is static
 * data, 8-byte aligned, starting with TRACEBPF_SITE_MAGIC: each allocated
 * PROGBITS section is scanned for descriptors that the converter's own
 * parser (tb_site_parse) accepts.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/types.h>

#include "format/tbrecords.h"
#include "util/json.h"
#include "convert/model.h"
#include "probes/probes.h"
#include "cli/cli.h"
#include "tracebpf.h"

#define ERR(fmt, ...) fprintf(stderr, "tracebpf: list: " fmt "\n", ##__VA_ARGS__)

/* One descriptor found: its address in the object, and its bytes in a
 * SITE record (allocated: s points into it) so that tb_site_parse reads
 * it as the converter does. */
struct found {
	uint64_t addr;
	struct site s;
	unsigned char *rec;
};

struct sites {
	struct found *v;
	size_t n, cap;
};

struct list_args {
	char **files;
	int nfiles;
	long pid;
	bool json;
	bool usdt;      /* --usdt: other programs' probes, not tracebpf's sites */
};

/* The header's own sites (tracebpf__fast_names writes the kept thread
 * and process names again through them): not the program's. They are in
 * tracebpf/fast_producer.h, or in trace.h in programs built before it. */
static bool header_own(const struct site *s)
{
	return s->file && (!strcmp(s->file, "fast_producer.h") || !strcmp(s->file, "trace.h")) &&
	       !strcmp(s->cat, "__metadata");
}

/* The descriptor at p (at most avail bytes), if the parser takes it. */
static int take_site(struct sites *out, const unsigned char *p, size_t avail, uint64_t addr)
{
	struct tracebpf_site d;
	struct tb_rec_site *rec;
	struct found *f;
	size_t len;

	memcpy(&d, p, sizeof(d));
	if (d.size < sizeof(d) || d.size > TB_SITE_MAX || d.size > avail)
		return 0;
	if (out->n == out->cap) {
		size_t cap = out->cap ? 2 * out->cap : 64;
		struct found *nv = realloc(out->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		out->v = nv;
		out->cap = cap;
	}
	f = &out->v[out->n];
	f->rec = calloc(1, sizeof(*rec) + TB_SITE_MAX);
	if (!f->rec)
		return -ENOMEM;
	rec = (struct tb_rec_site *)f->rec;
	len = d.size;
	rec->hdr.size = (uint16_t)(sizeof(*rec) + len);
	rec->len = (uint32_t)len;
	rec->site = addr;
	memcpy(f->rec + sizeof(*rec), p, len);
	tb_site_parse(rec, &f->s);
	/* a site's strings end with its last byte (bytes that only look
	 * like a descriptor, a copy the compiler made, do not) */
	if (!f->s.valid || !f->s.file || header_own(&f->s)) {
		free(f->rec);
		return 0;
	}
	f->addr = addr;
	out->n++;
	return 0;
}

/* Every descriptor in one section's bytes. */
static int scan_section(struct sites *out, const unsigned char *b, size_t size, uint64_t base)
{
	uint32_t magic = TRACEBPF_SITE_MAGIC;
	size_t off = (8 - base % 8) % 8;
	int err = 0;

	for (; !err && off + sizeof(struct tracebpf_site) <= size; off += 8)
		if (!memcmp(b + off, &magic, sizeof(magic)))
			err = take_site(out, b + off, size - off, base + off);
	return err;
}

/* The descriptors of the ELF file at path. */
static int scan_file(const char *path, struct sites *out)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf *elf;
	int fd, err = 0;

	err = tb_elf_open(path, &fd, &elf);
	if (err)
		return err;
	while (!err && (scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_ALLOC) || (sh.sh_flags & SHF_EXECINSTR))
			continue;
		data = elf_getdata(scn, NULL);
		if (data && data->d_buf)
			err = scan_section(out, data->d_buf, data->d_size, sh.sh_addr);
	}
	tb_elf_close(fd, elf);
	return err;
}

static int by_source(const void *a, const void *b)
{
	const struct site *x = &((const struct found *)a)->s, *y = &((const struct found *)b)->s;
	int c = strcmp(x->file ? x->file : "", y->file ? y->file : "");

	if (c)
		return c;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return strcmp(x->name, y->name);
}

static const char *phase_name(char ph)
{
	switch (ph) {
	case 'B': return "begin";
	case 'E': return "end";
	case 'I': return "instant";
	case 'C': return "counter";
	case 'b': return "async_begin";
	case 'e': return "async_end";
	case 'n': return "async_instant";
	case 's': return "flow_begin";
	case 't': return "flow_step";
	case 'f': return "flow_end";
	case 'M': return "metadata";
	case 'v': return "memory_dump";
	}
	return "?";
}

static const char *type_name(uint8_t t)
{
	static const char *const names[] = { "none", "int", "uint", "double", "bool", "string",
					     "pointer" };

	return t < sizeof(names) / sizeof(names[0]) ? names[t] : "?";
}

/* The categories of all objects, each with its count. */
struct cat_count {
	const char *cat;
	unsigned n;
};

static int count_cat(struct cat_count **v, size_t *n, const char *cat)
{
	struct cat_count *nv;

	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*v)[i].cat, cat)) {
			(*v)[i].n++;
			return 0;
		}
	nv = realloc(*v, (*n + 1) * sizeof(**v));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	(*v)[(*n)++] = (struct cat_count){ cat, 1 };
	return 0;
}

static void print_site_text(const struct found *f)
{
	const struct site *s = &f->s;

	printf("  %s:%s  %s", s->cat, s->name[0] ? s->name : "(name given at run time)",
	       phase_name(s->phase));
	for (int i = 0; i < s->nargs; i++)
		printf("%s%s %s", i ? ", " : "  (", s->argname[i], type_name(s->arg_type[i]));
	printf("%s  %s:%u\n", s->nargs ? ")" : "", s->file ? s->file : "?", s->line);
}

static void print_site_json(struct tb_json *j, const struct found *f)
{
	const struct site *s = &f->s;
	char addr[24];

	tb_json_begin_object(j);
	tb_json_kstr(j, "category", s->cat);
	tb_json_kstr(j, "name", s->name);
	tb_json_kstr(j, "phase", phase_name(s->phase));
	tb_json_key(j, "args");
	tb_json_begin_array(j);
	for (int i = 0; i < s->nargs; i++) {
		tb_json_begin_object(j);
		tb_json_kstr(j, "name", s->argname[i]);
		tb_json_kstr(j, "type", type_name(s->arg_type[i]));
		tb_json_end_object(j);
	}
	tb_json_end_array(j);
	tb_json_kstr(j, "file", s->file);
	tb_json_kuint(j, "line", s->line);
	snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)f->addr);
	tb_json_kstr(j, "address", addr);
	tb_json_end_object(j);
}

/* The objects to read: the files given (with the libraries each loads),
 * or those mapped by -p PID. */
static int find_objects(const struct list_args *a, struct tb_paths *objs)
{
	char exe[4096];
	int err = 0;

	if (a->pid) {
		err = tb_proc_probe_objects((pid_t)a->pid, objs);
		if (err)
			ERR("failed to read process %ld's objects: %s", a->pid, strerror(-err));
		return err;
	}
	for (int i = 0; !err && i < a->nfiles; i++) {
		err = tb_resolve_cmd(a->files[i], exe, sizeof(exe));
		if (!err)
			err = tb_elf_count_probes(exe) < 0 ? -ENOEXEC : 0;
		if (!err)
			err = tb_cmd_probe_objects(exe, objs);
		if (err)
			ERR("failed to read '%s': %s", a->files[i],
			    err == -ENOEXEC ? "not an ELF file" : strerror(-err));
	}
	return err;
}

/* list --usdt: every object with a probe of another provider than
 * tracebpf's. */
static bool any_note(const char *provider, const char *name, void *ctx)
{
	(void)name;
	(void)ctx;
	return strcmp(provider, TB_PROVIDER) != 0;
}

struct usdt_out {
	struct tb_json *j;
	const char *path;
	int n;
};

static int print_note(const char *provider, const char *name, const char *args,
		      unsigned long long sema, void *ctx)
{
	struct usdt_out *o = ctx;

	if (!strcmp(provider, TB_PROVIDER))
		return 0;
	o->n++;
	if (!o->j) {
		printf("  %s:%s  %s%s\n", provider, name, *args ? args : "(no arguments)",
		       sema ? "  semaphore" : "");
		return 0;
	}
	tb_json_begin_object(o->j);
	tb_json_kstr(o->j, "path", o->path);
	tb_json_kstr(o->j, "provider", provider);
	tb_json_kstr(o->j, "name", name);
	tb_json_kstr(o->j, "args", args);
	tb_json_kuint(o->j, "nargs", (uint64_t)tb_usdt_spec_nargs(args));
	tb_json_key(o->j, "semaphore");
	tb_json_bool(o->j, sema != 0);
	tb_json_end_object(o->j);
	return 0;
}

/* Each object's notes (one line per site: a probe name may have several),
 * or a JSON object {"usdt": [...]}. */
static int list_usdt(const struct tb_paths *objs, bool json)
{
	struct usdt_out o = { 0 };
	int err = 0, total = 0;

	if (json && !(o.j = malloc(sizeof(*o.j))))
		return -ENOMEM;
	if (o.j) {
		tb_json_init(o.j, stdout);
		tb_json_begin_object(o.j);
		tb_json_key(o.j, "usdt");
		tb_json_begin_array(o.j);
	}
	for (int i = 0; !err && i < objs->n; i++) {
		o.path = objs->v[i];
		o.n = 0;
		if (!o.j)
			printf("%s\n", o.path);
		err = tb_elf_each_note(o.path, print_note, &o);
		total += o.n;
		if (err)
			ERR("failed to read '%s': %s", o.path, strerror(-err));
	}
	if (o.j) {
		tb_json_end_array(o.j);
		tb_json_end_object(o.j);
		if (!err && !(err = tb_json_error(o.j)))
			putchar('\n');
		free(o.j);
	} else if (!err) {
		printf("%d probe site%s\n", total, total == 1 ? "" : "s");
	}
	return err;
}

static error_t list_parse(int key, char *arg, struct argp_state *state)
{
	struct list_args *a = state->input;
	char *end;

	switch (key) {
	case 'p':
		errno = 0;
		a->pid = strtol(arg, &end, 10);
		if (errno || *end || a->pid <= 0 || a->pid > 0x7fffffff)
			argp_error(state, "invalid pid '%s': give a positive process id", arg);
		break;
	case 'j':
		a->json = true;
		break;
	case 'u':
		a->usdt = true;
		break;
	case ARGP_KEY_ARGS:
		a->files = state->argv + state->next;
		a->nfiles = state->argc - state->next;
		break;
	case ARGP_KEY_END:
		if (!a->nfiles == !a->pid)
			argp_error(state, "give the program's files or -p PID (one of the two)");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* Prints one object's sites (sorted by source) from s, as JSON into j
 * when not NULL; counts their categories (the counts point into s). */
static int list_object(const char *path, struct tb_json *j, struct sites *s,
		       struct cat_count **cats, size_t *ncats)
{
	int err = scan_file(path, s);

	if (err) {
		ERR("failed to read '%s': %s", path, strerror(-err));
		return err;
	}
	qsort(s->v, s->n, sizeof(*s->v), by_source);
	if (j) {
		tb_json_begin_object(j);
		tb_json_kstr(j, "path", path);
		tb_json_key(j, "sites");
		tb_json_begin_array(j);
	} else {
		printf("%s (%zu site%s)\n", path, s->n, s->n == 1 ? "" : "s");
	}
	for (size_t i = 0; !err && i < s->n; i++) {
		if (j)
			print_site_json(j, &s->v[i]);
		else
			print_site_text(&s->v[i]);
		err = count_cat(cats, ncats, s->v[i].s.cat);
	}
	if (j) {
		tb_json_end_array(j);
		tb_json_end_object(j);
	}
	return err;
}

static void print_categories(struct tb_json *j, const struct cat_count *v, size_t n,
			     size_t total)
{
	if (j) {
		tb_json_key(j, "categories");
		tb_json_begin_object(j);
		for (size_t i = 0; i < n; i++)
			tb_json_kuint(j, v[i].cat, v[i].n);
		tb_json_end_object(j);
		tb_json_kuint(j, "sites", total);
		return;
	}
	printf("%zu site%s%s", total, total == 1 ? "" : "s", n ? "; per category:" : "");
	for (size_t i = 0; i < n; i++)
		printf("%s %s %u", i ? "," : "", v[i].cat, v[i].n);
	printf("\n");
}

int tb_cmd_list(int argc, char **argv, const char *cmdline)
{
	static const struct argp_option options[] = {
		{ "pid", 'p', "PID", 0, "The objects a running process has mapped", 0 },
		{ "json", 'j', NULL, 0, "As JSON", 0 },
		{ "usdt", 'u', NULL, 0, "List the objects' other USDT probes (what record "
					"--usdt records), with their argument specs", 0 },
		{ 0 },
	};
	static const struct argp argp = { options, list_parse, "PROGRAM... | -p PID",
		"List the tracebpf sites a program carries: its executable and every "
		"library with tracebpf probes it loads (or a running process's), each site "
		"with its category, name, phase, arguments and source line, and a count "
		"per category.", NULL, NULL, NULL };
	struct list_args a = { 0 };
	struct tb_paths objs = { 0 };
	struct cat_count *cats = NULL;
	struct sites *sites = NULL;
	struct tb_json *j = NULL;
	size_t ncats = 0, total = 0;
	int err;

	(void)cmdline;
	argp_parse(&argp, argc, argv, 0, NULL, &a);
	if (a.usdt)
		tb_probes_also(any_note, NULL);
	err = find_objects(&a, &objs);
	if (!err && a.usdt) {
		err = list_usdt(&objs, a.json);
		tb_paths_free(&objs);
		return err ? 1 : 0;
	}
	if (!err && objs.n && !(sites = calloc((size_t)objs.n, sizeof(*sites))))
		err = -ENOMEM;
	if (!err && a.json) {
		j = malloc(sizeof(*j));   /* a 64 KiB buffer */
		if (!j)
			err = -ENOMEM;
		else
			tb_json_init(j, stdout);
	}
	if (j) {
		tb_json_begin_object(j);
		tb_json_key(j, "objects");
		tb_json_begin_array(j);
	}
	for (int i = 0; !err && i < objs.n; i++) {
		err = list_object(objs.v[i], j, &sites[i], &cats, &ncats);
		total += sites[i].n;
	}
	if (j)
		tb_json_end_array(j);
	if (!err)
		print_categories(j, cats, ncats, total);
	if (j) {
		tb_json_end_object(j);
		if (!err && !(err = tb_json_error(j)))
			putchar('\n');
		free(j);
	}
	for (int i = 0; sites && i < objs.n; i++) {
		for (size_t k = 0; k < sites[i].n; k++)
			free(sites[i].v[k].rec);
		free(sites[i].v);
	}
	free(sites);
	free(cats);
	tb_paths_free(&objs);
	return err ? 1 : 0;
}
