// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record_restart.c - `tracebpf ctl restart [-o FILE]` (docs/control.md,
 * "Restarting a recording"): the recording goes on in a new trace file.
 *
 * Owns: what a new file needs from before it began, kept as the records
 * go by (rec_keep_note): the last SITE record of every (process, site), and
 * the last name or sort index the application gave each thread and
 * process (events of `M` sites), both dropped when their process execs
 * or exits; the switch itself (rec_restart_output): every record drained
 * into the old file, which is closed complete and converted to JSON by a
 * child `tracebpf convert`, then the new file opened and given the kept
 * records, the thread names, the command lines, the categories and the
 * stop state; the drop counts from then on (the STATS records of a file
 * count its own); the converters reaped at the end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hmap.h"
#include "record/recorder.h"
#include "kern/kern.h"
#include "format/tbfile.h"

/* Records kept per process and kind, at most: a traced process names its
 * sites (any 64-bit value in its fast-path ring) and its threads, so what
 * it sends is bounded here, the rest counted (r->kept_over, reported). A
 * program with more sites than this restarts with the others unresolved. */
#define KEPT_MAX 65536u

/* One traced process's kept records, each a malloc'd copy. */
struct kept_proc {
	struct tb_hmap sites;   /* site address -> SITE record */
	struct tb_hmap names;   /* (tid, site) -> EVENT record of an M site */
	struct tb_hmap msites;  /* site address -> (void *)1: an M site */
};

static struct kept_proc *kept_get(struct recorder *r, uint32_t pid, bool create)
{
	struct kept_proc *k = tb_hmap_get(&r->kept, pid);

	if (k || !create)
		return k;
	k = calloc(1, sizeof(*k));
	if (k && tb_hmap_put(&r->kept, pid, k)) {
		free(k);
		k = NULL;
	}
	return k;
}

static void free_vals(struct tb_hmap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->vals[i] != (void *)1)
			free(m->vals[i]);
	tb_hmap_free(m);
}

/* The process's image is gone (exec, exit): nothing of it is kept. */
static void kept_drop(struct recorder *r, uint32_t pid)
{
	struct kept_proc *k = kept_get(r, pid, false);

	if (!k)
		return;
	free_vals(&k->sites);
	free_vals(&k->names);
	tb_hmap_free(&k->msites);
}

/* v replaces key's value in m (a copy of h), unless m is full. */
static void keep_copy(struct recorder *r, struct tb_hmap *m, uint64_t key,
		      const struct tb_rec_hdr *h)
{
	void *old = tb_hmap_get(m, key), *c;

	if (!old && m->n >= KEPT_MAX) {
		r->kept_over++;
		return;
	}
	c = malloc(h->size);
	if (!c)
		return;   /* a new file would lack it: its events show unresolved */
	memcpy(c, h, h->size);
	if (tb_hmap_put(m, key, c)) {
		free(c);
		return;
	}
	free(old);
}

/* Whether site may be an M site. The filter's answer for the last site
 * it turned down is kept: most events are of the site before them, and
 * hashing each one's address was 8% of the recorder's time draining one
 * thread's loop (perf record -e cpu-clock). */
static bool bloom_test(struct recorder *r, uint64_t site)
{
	uint64_t b;

	if (site == r->msite_miss)
		return false;
	b = tb_hash64(site) & (TB_MSITE_BLOOM_BITS - 1);
	if (r->msite_bloom[b / 64] >> (b % 64) & 1)
		return true;
	r->msite_miss = site;
	return false;
}

static void on_site(struct recorder *r, const struct tb_rec_site *s)
{
	struct kept_proc *k;
	uint64_t b;

	if (s->hdr.size < sizeof(*s) || !(k = kept_get(r, s->hdr.pid, true)))
		return;
	keep_copy(r, &k->sites, s->site, &s->hdr);
	/* the descriptor's phase (tracebpf/site.h: offset 6) */
	if (!tb_hmap_get(&k->sites, s->site) || s->len < sizeof(struct tracebpf_site) ||
	    s->hdr.size < sizeof(*s) + sizeof(struct tracebpf_site) ||
	    ((const struct tracebpf_site *)(s + 1))->phase != TRACEBPF_PHASE_METADATA)
		return;
	tb_hmap_put(&k->msites, s->site, (void *)1);
	b = tb_hash64(s->site) & (TB_MSITE_BLOOM_BITS - 1);
	r->msite_bloom[b / 64] |= 1ull << (b % 64);
	r->msite_miss = 0;   /* its answer may be yes now */
}

void rec_keep_note(struct recorder *r, const struct tb_rec_hdr *h)
{
	const struct tb_rec_event *ev = (const void *)h;
	struct kept_proc *k;

	switch (h->type) {
	case TB_REC_SITE:
		on_site(r, (const void *)h);
		break;
	case TB_REC_EVENT:
		if (h->size < sizeof(*ev) || !bloom_test(r, ev->site) ||
		    !(k = kept_get(r, h->pid, false)) || !tb_hmap_get(&k->msites, ev->site))
			break;
		keep_copy(r, &k->names, tb_hash64((uint64_t)h->tid << 32 | h->pid) ^ ev->site, h);
		break;
	case TB_REC_EXEC:
		kept_drop(r, h->pid);
		break;
	case TB_REC_EXIT:
		if (h->size >= sizeof(struct tb_rec_exit) &&
		    (((const struct tb_rec_exit *)h)->flags & TB_EXITF_PROCESS))
			kept_drop(r, h->pid);
		break;
	default:
		break;
	}
}

void rec_keep_free(struct recorder *r)
{
	for (size_t i = 0; i < r->kept.cap; i++)
		if (r->kept.vals[i]) {
			kept_drop(r, (uint32_t)r->kept.keys[i]);
			free(r->kept.vals[i]);
		}
	tb_hmap_free(&r->kept);
}

/* Every record of m into the current file. */
static int replay(struct recorder *r, const struct tb_hmap *m)
{
	int err = 0;

	for (size_t i = 0; i < m->cap && !err; i++)
		if (m->vals[i])
			err = tb_writer_append(r->w, m->vals[i]);
	return err;
}

/* `tracebpf convert OLD.tbt -o OLD.json` in a child, reaped at the end. */
static void convert_behind(struct recorder *r, const char *tbt, const char *json)
{
	char *argv[] = { "tracebpf", "convert", (char *)tbt, "-o", (char *)json, NULL };
	pid_t pid, *nv;
	int err;

	nv = realloc(r->convs, (r->nconvs + 1) * sizeof(*nv));
	if (!nv) {
		ERR("failed to convert '%s': %s", tbt, strerror(ENOMEM));
		return;
	}
	r->convs = nv;
	pid = fork();
	if (pid == 0) {
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	if (pid < 0) {
		err = errno;
		ERR("failed to start the conversion of '%s': %s", tbt, strerror(err));
		fprintf(stderr, "tracebpf: hint: convert it yourself: tracebpf convert '%s'\n", tbt);
		return;
	}
	r->convs[r->nconvs++] = pid;
}

int rec_reap_converts(struct recorder *r)
{
	int st, err = 0;

	for (int i = 0; i < r->nconvs; i++)
		if (waitpid(r->convs[i], &st, 0) != r->convs[i] || !WIFEXITED(st) ||
		    WEXITSTATUS(st)) {
			ERR("the conversion of a closed trace file (process %d) failed",
			    r->convs[i]);
			err = -EIO;
		}
	free(r->convs);
	r->convs = NULL;
	r->nconvs = 0;
	return err;
}

/* Everything drained into the old file, with its gap marks and counts:
 * it is complete once closed. */
static int finish_old(struct recorder *r)
{
	int err;

	rec_take_all(r);
	err = tb_sched_flush(r->sched);
	rec_consume_rings(r);
	rec_sweep_gaps(r);
	if (!err)
		err = rec_write_stats(r);
	return err ? err : r->write_err;
}

/* What the new file needs from before it began. */
static int fill_new(struct recorder *r)
{
	int err = 0;

	for (size_t i = 0; i < r->kept.cap && !err; i++) {
		struct kept_proc *k = r->kept.vals[i];

		if (k)
			err = replay(r, &k->sites);
		if (k && !err)
			err = replay(r, &k->names);
	}
	rec_write_all_cmdlines(r);
	rec_write_all_comms(r);
	if (!err)
		err = rec_cats_log(r, now_ns(CLOCK_MONOTONIC));
	if (!err)
		err = rec_filter_log(r, now_ns(CLOCK_MONOTONIC), true);
	if (!err)
		err = rec_usdt_log_all(r);
	if (!err && r->ctl.off)
		err = tb_ctl_log(&r->ctl, r->w, true, now_ns(CLOCK_MONOTONIC), getpid());
	return err ? err : r->write_err;
}

/* The next automatic name: the first -o's base, then .1, .2, ... */
static int next_name(struct recorder *r, char *out, size_t n)
{
	r->restarts++;
	if (snprintf(out, n, "%s.%u.tbt", r->out_base, r->restarts) >= (int)n)
		return -ENAMETOOLONG;
	return 0;
}

/* The paths of a file. */
struct paths {
	char tbt[PATH_MAX], json[PATH_MAX];
};

/* The new file at path (the next automatic name when ""), opened while
 * the old one is still current: when it cannot be, the recording goes on
 * in the old one. *old gets the old file's writer and paths. 0, or a
 * negative errno. */
static int open_new(struct recorder *r, const char *path, struct tb_writer **old,
		    struct paths *was)
{
	char name[PATH_MAX];
	int err = 0;

	if (!path[0])
		err = next_name(r, name, sizeof(name));
	snprintf(was->tbt, sizeof(was->tbt), "%s", r->tbt_path);
	snprintf(was->json, sizeof(was->json), "%s", r->json_path);
	*old = r->w;
	r->w = NULL;
	if (!err)
		err = rec_output_paths(r, path[0] ? path : name);
	if (!err && !strcmp(r->tbt_path, was->tbt))
		err = -EEXIST;
	if (!err)
		err = rec_open_writer(r);   /* says why it failed */
	if (err) {
		snprintf(r->tbt_path, sizeof(r->tbt_path), "%s", was->tbt);
		snprintf(r->json_path, sizeof(r->json_path), "%s", was->json);
		r->w = *old;
		*old = NULL;
	}
	return err;
}

int rec_restart_output(struct recorder *r, const char *path)
{
	static struct paths was;
	struct tb_writer *old;
	int err;

	if (!strcmp(r->tbt_path, "-") || r->server) {
		ERR("cannot restart: the trace goes to %s", r->server ? "--serve's clients" :
		    "stdout");
		return -EINVAL;
	}
	err = finish_old(r);
	if (!err)
		err = open_new(r, path, &old, &was);
	if (err) {
		ERR("failed to restart in a new trace file: %s; recording goes on in %s",
		    strerror(-err), r->tbt_path);
		return err;
	}
	err = tb_writer_close(old);
	if (err)
		rec_err_write(was.tbt, err, false);
	else if (!r->o->no_json && was.json[0])
		convert_behind(r, was.tbt, was.json);
	rec_stats_baseline(r);
	tb_ctl_set_path(&r->ctl, r->tbt_path);
	if (!r->o->quiet)
		fprintf(stderr, "%stracebpf: closed %s; recording into %s (tracebpf ctl restart)\n",
			r->tty ? "\r\033[K" : "", was.tbt, r->tbt_path);
	return fill_new(r);
}
