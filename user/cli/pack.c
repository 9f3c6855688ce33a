// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pack.c - `tracebpf pack IN.tbt OUT.tbt`: the transport form of a trace.
 * Records keep their file order (per-CPU runs: re-sorting a multi-threaded
 * trace by time interleaves threads and weakens the packed deltas, which
 * made files larger), go into large chunks (several input rounds merged into
 * one round, which keeps the round property readers rely on) at zlib level
 * 9, without duplicate site descriptors: a SITE record equal to one already
 * written for the same process (same address and bytes, and no exec of that
 * process in between) is dropped. A 1.x input (no rounds) is rewritten in
 * time order, which gives it rounds. A finished input that would come out
 * larger (already packed) is copied instead: pack never makes a file
 * larger. Streams in bounded memory (about a round of records).
 */
#include <argp.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "util/chain.h"
#include "util/hmap.h"
#include "merge.h"
#include "convert/model.h"
#include "format/outfile.h"
#include "cli/cli.h"
#include "tracebpf.h"

/* A SITE record kept, by (pid, address, epoch, CRC and length of its
 * bytes). */
struct seen {
	struct tb_chain_link l;
	uint32_t pid, epoch, crc, len;
	uint64_t addr;
	uint64_t ts;        /* the earliest kept copy's */
};

static struct tb_chain seen;

/* A process's site table starts anew at its exec, at a fork that creates
 * it and after its exit (a reused pid): convert clears it there. Those
 * moments, per pid, split its SITE records into epochs. */
struct gen {
	uint32_t pid, gen;          /* boundaries seen so far (time order) */
	uint64_t *ts;               /* all of them (first pass), sorted */
	size_t n, cap;
};
static struct tb_hmap gens;   /* pid -> struct gen */

static struct gen *gen_of(uint32_t pid)
{
	struct gen *g = tb_hmap_get(&gens, pid);

	if (g)
		return g;
	g = calloc(1, sizeof(*g));
	if (g && tb_hmap_put(&gens, pid, g)) {
		free(g);
		return NULL;
	}
	if (g)
		g->pid = pid;
	return g;
}

/* The pid whose site table h starts anew, or 0. */
static uint32_t boundary_pid(const struct tb_rec_hdr *h)
{
	if (h->type == TB_REC_EXEC)
		return h->pid;
	if (h->type == TB_REC_EXIT &&
	    ((const struct tb_rec_exit *)h)->flags & TB_EXITF_PROCESS)
		return h->pid;
	if (h->type == TB_REC_FORK &&
	    !(((const struct tb_rec_fork *)h)->flags & TB_FORKF_THREAD))
		return ((const struct tb_rec_fork *)h)->child_pid;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* First pass (a seekable input read in file order): every boundary. */
static int collect_boundaries(const char *path)
{
	struct tb_reader *r;
	const struct tb_rec_hdr *h;
	int ret;

	ret = tb_reader_open(&r, path);
	if (ret)
		return ret;
	tb_reader_set_streams(r, 1u << TB_STREAM_PROC);
	while ((ret = tb_reader_next(r, &h)) > 0) {
		uint32_t pid = boundary_pid(h);
		struct gen *g;

		if (!pid)
			continue;
		g = gen_of(pid);
		if (!g || (g->n == g->cap &&
			   !(g->ts = realloc(g->ts, (g->cap = g->cap ? 2 * g->cap : 4) *
					     sizeof(*g->ts))))) {
			ret = -ENOMEM;
			break;
		}
		g->ts[g->n++] = h->ts;
	}
	tb_reader_close(r);
	for (size_t i = 0; i < gens.cap; i++) {
		struct gen *g = gens.vals[i];

		if (g && g->n > 1)
			qsort(g->ts, g->n, sizeof(*g->ts), cmp_u64);
	}
	return ret < 0 ? ret : 0;
}

/* Boundaries of pid before ts (a SITE at a boundary's ts sorts before it,
 * as convert ranks them). */
static uint32_t epoch_of(const struct gen *g, uint64_t ts, bool all)
{
	uint32_t k = 0;

	if (!all)
		return g->gen;
	while (k < g->n && g->ts[k] < ts)
		k++;
	return k;
}

/* 1: a duplicate to drop, 0: keep (and remember), -ENOMEM. A SITE equal to
 * a kept one of the same process epoch with ts <= its own is dropped. In
 * file order an equal descriptor can come later with an earlier ts
 * (another CPU's chunk): it is kept then. */
static int duplicate_site(const struct tb_rec_site *s, bool all)
{
	struct gen *g = gen_of(s->hdr.pid);
	size_t len = s->hdr.size - sizeof(*s);
	uint32_t c, epoch;
	uint64_t h;
	struct seen *e;

	if (!g)
		return -ENOMEM;
	epoch = epoch_of(g, s->hdr.ts, all);
	c = (uint32_t)crc32(0, (const void *)&s->len, (uInt)(8 + len));
	h = tb_hash64(s->site ^ (uint64_t)s->hdr.pid << 32 ^ (uint64_t)c << 16 ^ epoch);
	for (struct tb_chain_link *x = tb_chain_first(&seen, h); x; x = x->next) {
		e = (struct seen *)x;
		if (x->h == h && e->pid == s->hdr.pid && e->addr == s->site &&
		    e->epoch == epoch && e->crc == c && e->len == len) {
			if (e->ts <= s->hdr.ts)
				return 1;
			e->ts = s->hdr.ts;
			return 0;
		}
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	*e = (struct seen){ { NULL, h }, s->hdr.pid, epoch, c, (uint32_t)len, s->site, s->hdr.ts };
	if (tb_chain_add(&seen, &e->l)) {
		free(e);
		return -ENOMEM;
	}
	return 0;
}

static void free_tabs(void)
{
	tb_chain_free(&seen, free);
	for (size_t i = 0; i < gens.cap; i++) {
		struct gen *g = gens.vals[i];

		if (g) {
			free(g->ts);
			free(g);
		}
	}
	tb_hmap_free(&gens);
}

/* Output records per round at least (input rounds are merged up to it). */
#define ROUND_RECS 65536

/* Copies in to out (regular files) when out came out larger. 1 if done.
 * out is opened again as it was the first time (outfile.h: not through
 * another user's link planted since), and truncated only once it is
 * known to be a regular file. */
static int copy_if_smaller(const char *in, const char *out)
{
	struct stat si, so;
	char buf[1 << 16];
	int fi, fo, ok = 1;
	ssize_t n = 0;

	if (stat(in, &si) || !S_ISREG(si.st_mode))
		return 0;
	fo = tb_out_open(out, O_WRONLY, 0);
	if (fo < 0)
		return 0;
	if (fstat(fo, &so) || !S_ISREG(so.st_mode) || so.st_size <= si.st_size ||
	    (fi = open(in, O_RDONLY | O_CLOEXEC)) < 0) {
		close(fo);
		return 0;
	}
	if (ftruncate(fo, 0))
		ok = 0;
	while (ok && (n = read(fi, buf, sizeof(buf))) > 0)
		ok = write(fo, buf, (size_t)n) == n;
	if (n < 0)
		ok = 0;
	if (close(fo))
		ok = 0;
	close(fi);
	return ok ? 1 : -1;
}

struct pack_args {
	const char *in, *out;
	int zlevel;
};

static error_t pack_parse(int key, char *arg, struct argp_state *state)
{
	struct pack_args *a = state->input;

	switch (key) {
	case 'z':
		a->zlevel = (int)tb_io_arg_range(state, arg, 0, 9, "compression level", NULL);
		break;
	case ARGP_KEY_ARG:
		if (!a->in)
			a->in = arg;
		else if (!a->out)
			a->out = arg;
		else
			argp_error(state, "give IN.tbt and OUT.tbt");
		break;
	case ARGP_KEY_END:
		if (!a->out)
			argp_error(state, "give IN.tbt and OUT.tbt (- for stdin/stdout)");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static void write_failed(const char *out, int err, bool create)
{
	char buf[160];
	/* a link or a file of another user's refused (outfile.h), else the
	 * write's own */
	const char *hint = tb_out_hint(out, err, buf, sizeof(buf));

	if (!hint)
		hint = tb_write_hint(err);
	fprintf(stderr, "tracebpf: pack: failed to %s '%s': %s\n", create ? "create" : "write",
		out, strerror(-err));
	if (hint)
		fprintf(stderr, "tracebpf: pack: hint: %s\n", hint);
}

/* One run of pack: the input, the output and what was written. */
struct pack {
	struct pack_args a;
	struct tb_file_info info;
	struct tb_reader *r;
	struct tb_merge *m;         /* 1.x input: time order */
	struct tb_writer *w;
	uint64_t n, dropped, since, rounds;
	bool file_order;            /* 2.x input: it has rounds */
	bool all_bounds;            /* every process's boundaries were read first */
};

/* The reader, the first pass, the merge (1.x) and the writer. 0, 1 (said:
 * nothing to clean but the reader) or a negative errno. */
static int pack_open(struct pack *k)
{
	struct tb_writer_opts wo = { .chunk_max = 4u << 20 };
	int err = 0;

	if (tb_io_check_distinct("pack", k->a.in, k->a.out))
		return 1;
	if (tb_io_open(&k->r, "pack", k->a.in, NULL, 0))
		return 1;
	k->info = *tb_reader_info(k->r);
	wo.info = &k->info;
	wo.zlevel = k->a.zlevel;
	k->file_order = k->info.major >= 2;
	/* In file order, which sites are duplicates needs every process's
	 * exec/fork/exit times first: a second read (not on a pipe, where
	 * sites are then all kept). */
	if (k->file_order && strcmp(k->a.in, "-")) {
		err = collect_boundaries(k->a.in);
		k->all_bounds = !err;
		if (err == -ENOMEM)
			return err;
		err = 0;
	}
	if (!k->file_order)
		err = tb_merge_new(&k->m, k->r, tb_model_rank, 4u << 20);
	if (!err) {
		err = tb_writer_open(&k->w, k->a.out, &wo);
		if (err)
			write_failed(k->a.out, err, true);
	}
	return err;
}

/* An input round ended before the next record: end ours there once it is
 * large enough (file order), or every ROUND_RECS records (time order):
 * rounds keep the merge of a reader of OUT bounded. */
static int pack_round(struct pack *k, bool before)
{
	if (before && k->file_order && tb_reader_rounds(k->r) != k->rounds) {
		k->rounds = tb_reader_rounds(k->r);
		if (k->since < ROUND_RECS)
			return 0;
	} else if (before || k->file_order || k->since < ROUND_RECS) {
		return 0;
	}
	k->since = 0;
	return tb_writer_flush(k->w);
}

/* One record: process boundaries are counted, duplicate descriptors
 * dropped, the rest written. */
static int pack_record(struct pack *k, const struct tb_rec_hdr *h)
{
	int ret, err;

	if (boundary_pid(h)) {
		struct gen *g = gen_of(boundary_pid(h));

		if (!g)
			return -ENOMEM;
		g->gen++;   /* time order (no first pass): as they come */
	} else if (h->type == TB_REC_SITE && (k->all_bounds || !k->file_order)) {
		ret = duplicate_site((const void *)h, k->all_bounds);
		if (ret < 0)
			return ret;
		if (ret) {
			k->dropped++;
			return 0;
		}
	}
	err = tb_writer_append(k->w, h);
	k->n++;
	k->since++;
	return err ? err : pack_round(k, false);
}

/* Every record of IN into OUT. 0 or a negative errno (said). */
static int pack_copy(struct pack *k)
{
	const struct tb_rec_hdr *h;
	int ret, err = 0;

	while (!err && (ret = k->file_order ? tb_reader_next(k->r, &h)
					    : tb_merge_next(k->m, &h)) > 0) {
		err = pack_round(k, true);
		if (!err)
			err = pack_record(k, h);
	}
	if (!err && ret < 0) {
		err = ret;
		fprintf(stderr, "tracebpf: pack: failed to read '%s': %s\n", k->a.in,
			strerror(-err));
	} else if (err) {
		write_failed(k->a.out, err, false);
	}
	return err;
}

/* OUT closed; a finished input that came out no smaller is copied; the
 * summary. 0 or a negative errno (said). */
static int pack_finish(struct pack *k, int err)
{
	int cerr = tb_writer_close(k->w), c;

	k->w = NULL;
	if (cerr && !err) {
		err = cerr;
		write_failed(k->a.out, err, false);
	}
	if (err)
		return err;
	tb_io_report_end("pack", k->r, 0);
	if (tb_reader_finished(k->r) && !tb_reader_tail_reason(k->r) &&
	    strcmp(k->a.in, "-") && strcmp(k->a.out, "-")) {
		c = copy_if_smaller(k->a.in, k->a.out);
		if (c < 0) {
			fprintf(stderr, "tracebpf: pack: failed to write '%s'\n", k->a.out);
			return -EIO;
		}
		if (c)
			fprintf(stderr, "tracebpf: pack: '%s' is already packed "
				"(rewriting it would not make it smaller): copied\n", k->a.in);
	}
	fprintf(stderr, "tracebpf: pack: %" PRIu64 " records written, %" PRIu64
		" duplicate site descriptors dropped\n", k->n, k->dropped);
	return 0;
}

int tb_cmd_pack(int argc, char **argv, const char *cmdline)
{
	static const struct argp_option opts[] = {
		{ "compress-level", 'z', "N", 0, "zlib level (default 9)", 0 },
		{ 0 },
	};
	static const struct argp argp = { opts, pack_parse, "IN.tbt OUT.tbt",
		"Rewrite a trace for transport: large chunks, maximum compression, "
		"duplicate site descriptors removed; never larger than IN.", NULL, NULL, NULL };
	struct pack k = { .a = { .zlevel = 9 } };
	bool opened;
	int err;

	(void)cmdline;
	argp_parse(&argp, argc, argv, 0, NULL, &k.a);
	err = pack_open(&k);
	if (err == 1)
		return 1;
	if (!err)
		err = pack_copy(&k);
	opened = k.w;
	if (opened)
		err = pack_finish(&k, err);
	else if (err == -ENOMEM)   /* with a writer, the failed write was said */
		fprintf(stderr, "tracebpf: pack: out of memory\n");
	tb_merge_free(k.m);
	tb_reader_close(k.r);
	free_tabs();
	return err ? 1 : 0;
}
