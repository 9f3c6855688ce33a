// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * dump.c - `tracebpf dump FILE`: one readable line per record, in file
 * order (records appear as soon as their round is on disk: with --follow or
 * --connect it keeps up with a recording). Site descriptors are parsed as
 * the model parses them (tb_site_parse) and resolved by (pid, address),
 * falling back to the address alone (a forked child runs its parent's
 * sites).
 */
#include <argp.h>
#include <ctype.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ftrace.h"
#include "util/hmap.h"
#include "convert/model.h"
#include "cli/cli.h"
#include "tracebpf.h"

/* A SITE record read, and its descriptor as the model parses it (the
 * strings point into the copy of the record). */
struct dsite {
	uint32_t pid;
	uint64_t addr;
	struct site s;
	struct dsite *next;
	_Alignas(8) unsigned char rec[];
};

/* Descriptors read so far, and (a file) all of the file's, read first:
 * a site's SITE record can come later in file order than events of it
 * (streams and CPUs are written in separate chunks). Address -> the
 * latest descriptor at that address, ->next the earlier ones. */
static struct tb_hmap sites, later;

static void add_site(struct tb_hmap *table, const struct tb_rec_site *rec)
{
	struct dsite *s = malloc(sizeof(*s) + rec->hdr.size);

	if (!s)
		return;   /* no memory: dump shows the address, as for no descriptor */
	memcpy(s->rec, rec, rec->hdr.size);
	tb_site_parse((const void *)s->rec, &s->s);
	if (!s->s.valid) {
		free(s);
		return;
	}
	s->pid = rec->hdr.pid;
	s->addr = rec->site;
	s->next = tb_hmap_get(table, s->addr);
	if (tb_hmap_put(table, s->addr, s))
		free(s);
}

static const struct dsite *lookup(const struct tb_hmap *table, uint32_t pid, uint64_t addr,
				  const struct dsite **any)
{
	for (const struct dsite *s = tb_hmap_get(table, addr); s; s = s->next) {
		if (s->pid == pid)
			return s;
		if (!*any)
			*any = s;
	}
	return NULL;
}

/* This process's descriptor read so far, else the file's; else another
 * process's (a forked child runs its parent's sites). */
static const struct dsite *find(uint32_t pid, uint64_t addr)
{
	const struct dsite *s, *any = NULL, *any_later = NULL;

	s = lookup(&sites, pid, addr, &any);
	if (!s)
		s = lookup(&later, pid, addr, &any_later);
	return s ? s : any ? any : any_later;
}

static void free_table(struct tb_hmap *table)
{
	for (size_t i = 0; i < table->cap; i++) {
		for (struct dsite *s = table->vals[i], *n; s; s = n) {
			n = s->next;
			free(s);
		}
	}
	tb_hmap_free(table);
}

static void free_sites(void)
{
	free_table(&sites);
	free_table(&later);
}

static void put_str(FILE *f, const char *p, size_t n)
{
	fputc('"', f);
	for (size_t i = 0; i < n && p[i]; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (isprint(c))
			fputc(c, f);
		else
			fprintf(f, "\\x%02x", c);
	}
	fputc('"', f);
}

/* A command line as a reader takes it: the NULs between the arguments
 * (the kernel side copies them) are spaces, those at its end dropped. */
static void dump_cmdline(FILE *f, const char *p, size_t n)
{
	char buf[TB_CMDLINE_MAX + 1];

	n = n < TB_CMDLINE_MAX ? n : TB_CMDLINE_MAX;
	while (n && !p[n - 1])
		n--;
	for (size_t i = 0; i < n; i++)
		buf[i] = p[i] ? p[i] : ' ';
	put_str(f, buf, n);
}

static void comm(FILE *f, const char *c)
{
	put_str(f, c, strnlen(c, 16));
}

static void dump_event(FILE *f, const struct tb_rec_event *e)
{
	const struct dsite *s = find(e->hdr.pid, e->site);
	const struct tb_rec_event_id *x = (const void *)e;
	bool with_id = e->hdr.type == TB_REC_EVENT_ID;
	size_t soff = with_id ? sizeof(*x) : sizeof(*e);
	int i;

	if (!s) {
		fprintf(f, "EVENT site=0x%" PRIx64 " args=0x%" PRIx64 ",0x%" PRIx64,
			(uint64_t)e->site, (uint64_t)e->args[0], (uint64_t)e->args[1]);
		return;
	}
	fprintf(f, "%c %s:%s", s->s.phase, s->s.cat, s->s.name);
	if (s->s.flags & TB_SITE_STEP)
		fprintf(f, " step=%s", s->s.step);
	if (with_id)
		fprintf(f, " id=0x%" PRIx64, (uint64_t)x->id);
	for (i = 0; i < s->s.nargs; i++) {
		uint64_t v = e->args[i];
		double d;

		fprintf(f, " %s=", s->s.argname[i]);
		switch (s->s.arg_type[i]) {
		case TB_ARG_INT: fprintf(f, "%" PRId64, (int64_t)v); break;
		case TB_ARG_UINT: fprintf(f, "%" PRIu64, v); break;
		case TB_ARG_DOUBLE: memcpy(&d, &v, 8); fprintf(f, "%g", d); break;
		case TB_ARG_BOOL: fputs(v ? "true" : "false", f); break;
		case TB_ARG_STR:
			if (e->str_len[i] && soff + e->str_len[i] <= e->hdr.size)
				put_str(f, (const char *)e + soff, e->str_len[i]);
			else
				fputs("<unreadable>", f);
			soff += e->str_len[i];
			break;
		default: fprintf(f, "0x%" PRIx64, v); break;
		}
	}
	if (with_id && (s->s.flags & TB_SITE_COPY_NAME)) {
		/* the runtime name follows the string arguments */
		fputs(" name=", f);
		if (x->name_len && soff <= e->hdr.size && x->name_len <= e->hdr.size - soff)
			put_str(f, (const char *)e + soff, x->name_len);
		else
			fputs("<unreadable>", f);
	}
	if (e->flags & TB_EVF_FAST)
		fputs(" [fast]", f);
}

/* The category rules: "CATS gen=G +a -b*". */
static void dump_cats(FILE *f, const struct tb_rec_cats *x)
{
	uint32_t len = x->len, room = x->hdr.size - (uint32_t)sizeof(*x);
	const char *r = (const char *)(x + 1);

	fprintf(f, "CATS gen=%u", x->gen);
	if (len > room)
		len = room;
	for (uint32_t i = 0; i < len; i += (uint32_t)strnlen(r + i, len - i) + 1) {
		fputc(' ', f);
		put_str(f, r + i, strnlen(r + i, len - i));
	}
}

/* One list of a filter: "tids=1,2", "tids=" (none), "tids=all" (off). */
static void dump_ids(FILE *f, const char *what, bool on, const uint32_t *ids, uint32_t n)
{
	fprintf(f, " %s=%s", what, on ? "" : "all");
	for (uint32_t i = 0; on && i < n; i++)
		fprintf(f, "%s%u", i ? "," : "", ids[i]);
}

/* The filter from now on: "FILTER tids=4251,4252 pids=all". */
static void dump_filter(FILE *f, const struct tb_rec_filter *x)
{
	const uint32_t *ids = (const uint32_t *)(x + 1);
	uint32_t room = (x->hdr.size - (uint32_t)sizeof(*x)) / sizeof(uint32_t);
	uint32_t nt = x->ntids < room ? x->ntids : room;
	uint32_t np = x->npids < room - nt ? x->npids : room - nt;

	fputs("FILTER", f);
	dump_ids(f, "tids", x->which & TB_RECF_TIDS, ids, nt);
	dump_ids(f, "pids", x->which & TB_RECF_PIDS, ids + nt, np);
}

/* A gap mark: whose records, how many, until when (the line's time is the
 * earliest a lost record can carry), which threads. */
/* Other programs' probes by id, as their latest USDT_PROBE names them
 * ("provider:name"). */
static char *usdt_names[TB_USDT_MAX_PROBES];

static void free_usdt_names(void)
{
	for (size_t i = 0; i < TB_USDT_MAX_PROBES; i++) {
		free(usdt_names[i]);
		usdt_names[i] = NULL;
	}
}

/* A hit of another program's probe: its id, the probe it is, and the raw
 * arguments. */
static void dump_usdt(FILE *f, const struct tb_rec_usdt *u)
{
	const char *name = u->probe < TB_USDT_MAX_PROBES ? usdt_names[u->probe] : NULL;

	fprintf(f, "USDT probe=%u %s", u->probe, name ? name : "<undescribed>");
	for (int k = 0; k < u->nargs && k < TB_USDT_MAX_ARGS; k++)
		fprintf(f, " %" PRId64 "%s", (int64_t)u->args[k], u->str_len[k] ? "(str)" : "");
	if (u->flags & TB_EVF_STR_FAULT)
		fputs(" string-unreadable", f);
}

/* Another program's probe: "USDT_PROBE id PROVIDER:NAME kind EVENT". */
static void dump_usdt_probe(FILE *f, const struct tb_rec_usdt_probe *p)
{
	static const char *const kinds[] = { "instant", "begin", "end", "counter",
					     "async-begin", "async-end" };
	const char *t = (const char *)(p + 1), *end = t + p->len, *s[3];
	char *name;

	if (p->len > p->hdr.size - sizeof(*p)) {
		fprintf(f, "USDT_PROBE %u <damaged>", p->id);
		return;
	}
	for (int i = 0; i < 3; i++) {
		const char *nul = memchr(t, 0, end - t);

		s[i] = nul ? t : "?";
		t = nul ? nul + 1 : end;
	}
	fprintf(f, "USDT_PROBE %u %s:%s %s %s", p->id, s[0], s[1],
		p->kind < 6 ? kinds[p->kind] : "?", s[2]);
	if (p->id < TB_USDT_MAX_PROBES && asprintf(&name, "%s:%s", s[0], s[1]) >= 0) {
		free(usdt_names[p->id]);
		usdt_names[p->id] = name;
	}
}

/* Since 2.11, what each thread lost of its BEGINs and ENDs: " depths="
 * then per thread LOW/NET, or ? when not known. */
static void dump_gap_depths(FILE *f, const struct tb_rec_gap *g)
{
	struct tb_gap_depth d;

	if (g->hdr.size < sizeof(*g) || g->kind != TB_GAP_APP || !g->ntids)
		return;
	fputs(" depths=", f);
	for (uint32_t i = 0; i < g->ntids && i < TB_GAP_TIDS; i++) {
		if (tb_gap_depth(g, i, &d))
			fprintf(f, "%s%d/%+d", i ? "," : "", d.low, d.net);
		else
			fprintf(f, "%s?", i ? "," : "");
	}
}

static void dump_gap(FILE *f, const struct tb_rec_gap *g)
{
	fprintf(f, "GAP %s records=%" PRIu64 " until=%" PRIu64 ".%09" PRIu64 " threads=",
		g->kind == TB_GAP_APP ? "application" : g->kind == TB_GAP_KERNEL ? "kernel" : "?",
		(uint64_t)g->count, (uint64_t)g->last_ts / 1000000000u,
		(uint64_t)g->last_ts % 1000000000u);
	for (uint32_t i = 0; i < g->ntids && i < TB_GAP_TIDS; i++)
		fprintf(f, "%s%u", i ? "," : "", g->tid[i]);
	if (g->flags & TB_GAPF_ALL)
		fputs(g->ntids ? ",others" : "all", f);
	dump_gap_depths(f, g);
	if (g->flags & TB_GAPF_SWEPT)
		fputs(" (taken by the recorder)", f);
}

/* Kernel records (scheduler, power, -e tracepoints) are printed by the
 * ftrace module, which learns task names and tracepoint formats as it goes. */
static struct tb_ftrace *kernel;

static void dump_rec(FILE *f, const struct tb_rec_hdr *h)
{
	if (kernel && tb_ftrace_is_kernel(h->type)) {
		char line[1024];
		int n;

		tb_ftrace_add(kernel, h);   /* names and formats; collect is off */
		n = tb_ftrace_format_line(kernel, h, false, line, sizeof(line));
		if (n > 0) {
			fprintf(f, "%" PRIu64 ".%09" PRIu64 " [%3u] %u/%u KERNEL %s\n",
				(uint64_t)h->ts / 1000000000u, (uint64_t)h->ts % 1000000000u,
				h->cpu, h->pid, h->tid, line);
		}
		return;
	}
	fprintf(f, "%" PRIu64 ".%09" PRIu64 " ", (uint64_t)h->ts / 1000000000u,
		(uint64_t)h->ts % 1000000000u);
	if (h->cpu == ~0u)
		fputs("[  -] ", f);
	else
		fprintf(f, "[%3u] ", h->cpu);
	fprintf(f, "%u/%u ", h->pid, h->tid);
	switch (h->type) {
	case TB_REC_EVENT:
	case TB_REC_EVENT_ID:
		dump_event(f, (const void *)h);
		break;
	case TB_REC_SITE: {
		const struct tb_rec_site *s = (const void *)h;
		const struct dsite *d;

		add_site(&sites, s);
		d = find(h->pid, s->site);
		fprintf(f, "SITE 0x%" PRIx64 " %s%s%s", (uint64_t)s->site,
			d ? d->s.cat : "<invalid>", d ? ":" : "", d ? d->s.name : "");
		break;
	}
	case TB_REC_FORK: {
		const struct tb_rec_fork *x = (const void *)h;

		fprintf(f, "FORK %s %u/%u ", x->flags & TB_FORKF_THREAD ? "thread" : "process",
			x->child_pid, x->child_tid);
		comm(f, x->comm);
		break;
	}
	case TB_REC_EXEC: {
		const struct tb_rec_exec *x = (const void *)h;

		fprintf(f, "EXEC old_tid=%u ", x->old_tid);
		comm(f, x->comm);
		fputc(' ', f);
		put_str(f, x->filename, sizeof(x->filename));
		break;
	}
	case TB_REC_EXIT: {
		const struct tb_rec_exit *x = (const void *)h;

		fprintf(f, "EXIT %s code=%d ", x->flags & TB_EXITF_PROCESS ? "process" : "thread",
			x->exit_code);
		comm(f, x->comm);
		break;
	}
	case TB_REC_COMM:
		fputs("COMM ", f);
		comm(f, ((const struct tb_rec_comm *)h)->comm);
		break;
	case TB_REC_CMDLINE: {
		const struct tb_rec_cmdline *x = (const void *)h;
		size_t room = h->size - sizeof(*x);

		fputs("CMDLINE ", f);
		dump_cmdline(f, (const char *)(x + 1), x->len < room ? x->len : room);
		break;
	}
	case TB_REC_STATS: {
		const struct tb_rec_stats *s = (const void *)h;

		fprintf(f, "STATS events=%" PRIu64 " drops=%" PRIu64 " lost_procs=%" PRIu64,
			(uint64_t)s->events, (uint64_t)s->drops_total, tb_stats_lost_procs(s));
		break;
	}
	case TB_REC_CTL: {
		const struct tb_rec_ctl *x = (const void *)h;

		fprintf(f, "CTL %s by=%u", x->off ? "stopped" : "started", x->by_pid);
		break;
	}
	case TB_REC_GAP:
		dump_gap(f, (const void *)h);
		break;
	case TB_REC_CATS:
		dump_cats(f, (const void *)h);
		break;
	case TB_REC_FILTER:
		dump_filter(f, (const void *)h);
		break;
	case TB_REC_USDT:
		dump_usdt(f, (const void *)h);
		break;
	case TB_REC_USDT_PROBE:
		dump_usdt_probe(f, (const void *)h);
		break;
	case TB_REC_RSS: {
		static const char *const kind[4] = { "file", "anon", "swap", "shmem" };
		const struct tb_rec_rss *x = (const void *)h;

		fprintf(f, "RSS %s=%" PRId64, x->member < 4 ? kind[x->member] : "?",
			(int64_t)x->bytes);
		break;
	}
	default:
		fprintf(f, "type=%u size=%u", h->type, h->size);
	}
	fputc('\n', f);
}

/* A regular file: its descriptors, before printing anything. A stream
 * cannot be read twice, nor a live recording: those resolve what came
 * before. Errors are left to the printing pass. */
static void read_sites_first(struct tb_io_source *a)
{
	const struct tb_rec_hdr *h;
	struct tb_reader *r;
	struct stat st;

	if (!a->in || !strcmp(a->in, "-") || stat(a->in, &st) || !S_ISREG(st.st_mode) ||
	    tb_reader_open(&r, a->in))
		return;
	while (tb_reader_next(r, &h) > 0)
		if (h->type == TB_REC_SITE)
			add_site(&later, (const void *)h);
	tb_reader_close(r);
}

int tb_cmd_dump(int argc, char **argv, const char *cmdline)
{
	static const struct argp_option opts[] = {
		{ "follow", 'f', NULL, 0, "Keep reading a file still being written (like tail -f) "
					  "until the recorder finishes it or Ctrl-C", 0 },
		{ "connect", 'c', "SOCKET", 0, "Read a live recording from 'record --serve SOCKET'", 0 },
		{ 0 },
	};
	static const struct argp argp = { opts, tb_io_source_parse, "FILE.tbt",
		"Print one line per record, in file order:\n"
		"  <sec.ns> [cpu] pid/tid <phase> cat:name arg=value...", NULL, NULL, NULL };
	struct tb_io_source a = { 0 };
	const struct tb_rec_hdr *h;
	struct tb_reader *r;
	int ret;

	(void)cmdline;
	argp_parse(&argp, argc, argv, 0, NULL, &a);
	if (tb_ftrace_new(&kernel))
		kernel = NULL;   /* kernel records then print as type=N */
	else
		tb_ftrace_collect(kernel, false);
	if (a.follow || a.connect)
		tb_io_catch_signals();
	if (!a.follow && !a.connect)
		read_sites_first(&a);
	if (tb_io_open_source(&r, "dump", &a))
		return 1;
	for (uint64_t n = 1; (ret = tb_reader_next(r, &h)) > 0; n++) {
		dump_rec(stdout, h);
		/* live input: lines show up in batches, not per write(2) */
		if ((a.follow || a.connect) && n % 256 == 0)
			fflush(stdout);
	}
	fflush(stdout);
	if (ret < 0)
		fprintf(stderr, "tracebpf: dump: failed to read '%s': %s\n",
			a.connect ? a.connect : a.in, strerror(-ret));
	else
		tb_io_report_end("dump", r, a.connect != NULL);
	tb_reader_close(r);
	free_sites();
	free_usdt_names();
	tb_ftrace_free(kernel);
	return ret < 0;
}
