// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record_restart.c - `tracebpf ctl restart [-o FILE]` (docs/control.md,
 * "Restarting a recording"): the recording goes on in a new trace file.
 *
 * Owns the switch itself (rec_restart_output): every record drained into
 * the old file, which is closed complete and converted to JSON by a child
 * `tracebpf convert`, then the new file opened and given the records kept
 * for it (record_keep.c), the thread names, the command lines, the
 * categories and the stop state; the drop counts from then on (the STATS
 * records of a file count its own); the converters reaped at the end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record/recorder.h"
#include "kern/kern.h"
#include "format/tbfile.h"

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
	int err = rec_keep_replay(r);

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
