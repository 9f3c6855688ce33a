// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record_output.c - where `tracebpf record` writes: the output paths (-o:
 * x.tbt and x.json, a directory, or - for the trace on stdout), an
 * existing trace kept as .old, the trace file opened (its header and the
 * kernel events' formats), the records of the targets' thread names and
 * command lines, the write errors and their hints, and the JSON at the
 * end. Opening and finishing the output as steps of the recording
 * (ctl's first answer, --serve, the last drain) are record.c's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>

#include "format/tbrecords.h"
#include "convert/convert.h"
#include "perfetto/pftrace.h"
#include "format/outfile.h"
#include "probes/probes.h"
#include "record/recorder.h"
#include "kern/kern.h"
#include "format/tbfile.h"
#include "cli/cli.h"
#include "tracebpf.h"

/* 0, or -ELOOP when path is a symbolic link tracebpf does not follow: one
 * owned by another user (outfile.h). */
static int check_link(const char *path)
{
	char real[PATH_MAX];
	uid_t uid;
	int err = tb_out_resolve(path, real, sizeof(real), &uid);

	return err < 0 ? err : 0;
}

/* x.json -> x.tbt + x.json; x.tbt -> x.tbt + x.json; x -> x.tbt + x.json;
 * x.pftrace (.perfetto-trace) -> x.tbt + x.pftrace (Perfetto's format);
 * a directory d -> d/trace.tbt + d/trace.json (d a symbolic link only when
 * it is root's: -ELOOP else) */
int rec_output_paths(struct recorder *r, const char *out)
{
	size_t len = strlen(out);
	int base = (int)len;
	struct stat st;

	if (!strcmp(out, "-")) {   /* the trace stream on stdout, no JSON */
		strcpy(r->tbt_path, "-");
		r->json_path[0] = '\0';
		return 0;
	}
	if (!stat(out, &st) && S_ISDIR(st.st_mode)) {
		const char *sep = len && out[len - 1] == '/' ? "" : "/";
		int err = check_link(out);

		if (err)
			return err;
		if (snprintf(r->tbt_path, sizeof(r->tbt_path), "%s%strace.tbt", out, sep) >=
		    (int)sizeof(r->tbt_path) ||
		    snprintf(r->json_path, sizeof(r->json_path), "%s%strace.json", out, sep) >=
		    (int)sizeof(r->json_path))
			return -ENAMETOOLONG;
		return 0;
	}
	if (len > 5 && !strcmp(out + len - 5, ".json"))
		base = len - 5;
	else if (len > 4 && !strcmp(out + len - 4, ".tbt"))
		base = len - 4;
	else if (tb_pftrace_name(out))
		base = (int)(strrchr(out, '.') - out);
	if (snprintf(r->tbt_path, sizeof(r->tbt_path), "%.*s.tbt", base, out) >= (int)sizeof(r->tbt_path) ||
	    snprintf(r->json_path, sizeof(r->json_path), "%.*s%s", base, out,
		     tb_pftrace_name(out) ? out + base : ".json") >= (int)sizeof(r->json_path))
		return -ENAMETOOLONG;
	return 0;
}

/* Names of the threads of pid as they are now: at the start for -p targets,
 * at the end for every process still alive. */
void rec_write_comms(struct recorder *r, pid_t pid)
{
	struct tb_rec_comm rec;
	struct dirent *de;
	char path[64];
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		pid_t tid = atoi(de->d_name);

		if (tid <= 0)
			continue;
		memset(&rec, 0, sizeof(rec));
		if (rec_read_comm(pid, tid, rec.comm))
			continue;
		rec.hdr.type = TB_REC_COMM;
		rec.hdr.size = sizeof(rec);
		rec.hdr.cpu = ~0u;
		rec.hdr.ts = now_ns(CLOCK_MONOTONIC);
		rec.hdr.pid = pid;
		rec.hdr.tid = tid;
		tb_writer_append(r->w, &rec.hdr);
	}
	closedir(d);
}

/* The command line of pid as it is now, as a TB_REC_CMDLINE record. */
void rec_write_cmdline(struct recorder *r, pid_t pid)
{
	char path[128], dir[96], buf[sizeof(struct tb_rec_cmdline) + TB_CMDLINE_MAX + 8];
	struct tb_rec_cmdline *rec = (void *)buf;
	char *text = (char *)(rec + 1);
	ssize_t n;
	int fd;

	/* A process stopped at exec after the last drain is released at
	 * cleanup, when the file is closed: nothing to write it to. */
	if (!r->w)
		return;
	tb_proc_dir(pid, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/cmdline", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, text, TB_CMDLINE_MAX - 1);
	close(fd);
	if (n <= 0)
		return;   /* a kernel thread or a zombie: no command line */
	while (n > 0 && !text[n - 1])
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (!text[i])
			text[i] = ' ';
	text[n] = 0;
	memset(rec, 0, sizeof(*rec));
	rec->len = n + 1;
	rec->hdr.type = TB_REC_CMDLINE;
	rec->hdr.size = TB_REC_ALIGN(sizeof(*rec) + rec->len);
	memset(text + rec->len, 0, rec->hdr.size - sizeof(*rec) - rec->len);
	rec->hdr.cpu = ~0u;
	rec->hdr.ts = now_ns(CLOCK_MONOTONIC);
	rec->hdr.pid = pid;
	rec->hdr.tid = pid;
	tb_writer_append(r->w, &rec->hdr);
}

/* The trace file could not be written (or created): what is in it is a
 * readable prefix of the recording (docs/format.md); say how to get all of
 * it next time. */
void rec_err_write(const char *path, int err, bool create)
{
	char buf[160];
	/* a link or a file of another user's refused (outfile.h), else the
	 * write's own */
	const char *hint = tb_out_hint(path, err, buf, sizeof(buf));

	if (!hint)
		hint = tb_write_hint(err);
	ERR("failed to %s '%s': %s", create ? "create" : "write", path, strerror(-err));
	if (hint)
		fprintf(stderr, "tracebpf: hint: %s\n", hint);
	if (err == -ENOSPC || err == -EDQUOT)
		fprintf(stderr, "tracebpf: hint: -z 9, --no-sched or a shorter --duration make "
				"a smaller trace\n");
	else if (!hint && !create && strcmp(path, "-"))
		fprintf(stderr, "tracebpf: hint: what reached the file is readable: "
				"tracebpf convert '%s'\n", path);
}

/* Whether a trace at path is locked by another recorder still writing it. */
static bool busy(const char *path)
{
	bool locked = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	if (fd >= 0) {
		locked = flock(fd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK;
		close(fd);
	}
	return locked;
}

/* path renamed to old, never replacing what another user put at old (a
 * link there is neither followed nor removed): only an earlier .old, a
 * file of ours (one generation). -EEXIST for anything else. */
static int move_to_old(const char *path, const char *old)
{
	struct stat st;

	if (!renameat2(AT_FDCWD, path, AT_FDCWD, old, RENAME_NOREPLACE))
		return 0;
	if (errno != EEXIST && errno != EINVAL)   /* EINVAL: no RENAME_NOREPLACE here */
		return -errno;
	if (!lstat(old, &st) && (!S_ISREG(st.st_mode) || st.st_uid != geteuid()))
		return -EEXIST;
	/* rename(2) replaces the name; it never follows a link */
	return rename(path, old) ? -errno : 0;
}

/* Why path could not be kept as old (err): how to go on. */
static void old_hint(const char *old, int err)
{
	struct stat st;

	if (err == -EEXIST && !lstat(old, &st))
		fprintf(stderr, "tracebpf: hint: '%s' is %s owned by uid %u, not an earlier "
				"recording: remove it, or record with another -o\n", old,
			S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISREG(st.st_mode) ?
			"a file" : "not a regular file", (unsigned)st.st_uid);
	else
		fprintf(stderr, "tracebpf: hint: move it away, or record with another -o\n");
}

/* An output that exists is kept as PATH.old (one generation, as perf keeps
 * perf.data.old): a recording never replaces the last one silently. A
 * device, FIFO or root's symlink is written through, as before; a trace
 * another recorder is still writing (locked) is left for tb_writer_open to
 * refuse: 1 then, else 0 or a negative errno (said). */
static int keep_old(const char *path)
{
	char old[PATH_MAX + 8];
	struct stat st;
	int err;

	if (lstat(path, &st) || !S_ISREG(st.st_mode))
		return 0;
	if (busy(path))
		return 1;
	snprintf(old, sizeof(old), "%s.old", path);
	err = move_to_old(path, old);
	if (err) {
		ERR("failed to keep the existing '%s' as '%s': %s", path, old, strerror(-err));
		old_hint(old, err);
		return err;
	}
	fprintf(stderr, "tracebpf: record: kept the existing '%s' as '%s'\n", path, old);
	return 0;
}

/* The outputs, checked before anything is moved or written: neither may
 * be another user's symbolic link (outfile.h). 0, or -ELOOP (said). */
static int check_links(struct recorder *r)
{
	const char *paths[2] = { r->tbt_path, r->o->no_json ? "" : r->json_path };
	int i, err;

	for (i = 0; i < 2; i++) {
		if (!paths[i][0])
			continue;
		err = check_link(paths[i]);
		if (err) {
			rec_err_write(paths[i], err, true);
			return err;
		}
	}
	return 0;
}

/* The .tbt and .json already there kept as .old (nothing moved for a
 * recording that is going to be refused). *fresh: the trace file is to be
 * created (nothing is at its name now): one that appears meanwhile, an
 * attacker's, is not written. */
static int clear_outputs(struct recorder *r, bool *fresh)
{
	struct stat st;
	int err;

	err = check_links(r);
	if (!err)
		err = keep_old(r->tbt_path);
	if (!err && !r->o->no_json && r->json_path[0])
		err = keep_old(r->json_path);
	*fresh = lstat(r->tbt_path, &st) && errno == ENOENT;
	return err < 0 ? err : 0;
}

/* The trace file at r->tbt_path, opened (an existing one kept as .old),
 * with its header and the kernel events' formats. */
int rec_open_writer(struct recorder *r)
{
	const struct tb_record_opts *o = r->o;
	struct tb_file_info info = {};
	struct tb_writer_opts wo = { .info = &info, .zlevel = o->zlevel };
	struct utsname uts;
	bool fresh = false;
	int err;

	if (strcmp(r->tbt_path, "-")) {
		err = clear_outputs(r, &fresh);
		if (err)
			return err;
		wo.excl = fresh;
	}
	gethostname(info.hostname, sizeof(info.hostname) - 1);
	if (!uname(&uts))
		snprintf(info.kernel, sizeof(info.kernel), "%s", uts.release);
	snprintf(info.cmdline, sizeof(info.cmdline), "%s", o->cmdline ? o->cmdline : "");
	info.clock_id = CLOCK_MONOTONIC;
	info.start_ts = now_ns(CLOCK_MONOTONIC);
	info.realtime_offset_ns = (__s64)(now_ns(CLOCK_REALTIME) - info.start_ts);
	err = tb_writer_open(&r->w, r->tbt_path, &wo);
	if (err) {
		rec_err_write(r->tbt_path, err, true);
		return err;
	}
	err = tb_sched_write_formats(r->sched, r->w, now_ns(CLOCK_MONOTONIC));
	if (err)
		rec_err_write(r->tbt_path, err, false);
	return err;
}

/* The threads' names of every process still traced. */
void rec_write_all_comms(struct recorder *r)
{
	rec_each_traced(r, rec_write_comms);
}

/* The command line of every process still traced. */
void rec_write_all_cmdlines(struct recorder *r)
{
	rec_each_traced(r, rec_write_cmdline);
}

/* The JSON (unless --no-json), and the one recording that cannot have
 * recorded anything: a command without probes that never executed or
 * loaded anything with probes (only a warning at the start, since it
 * could have). */
int rec_write_json(struct recorder *r)
{
	const struct tb_record_opts *o = r->o;
	int err = 0;

	if (!o->no_json && r->json_path[0]) {
		struct tb_convert_opts co = { .in = r->tbt_path, .out = r->json_path,
					      .perfetto = tb_pftrace_name(r->json_path) };

		err = tb_convert(&co);
		if (!err)
			fprintf(stderr, "tracebpf: wrote %s (open it in https://ui.perfetto.dev)\n",
				r->json_path);
	}
	if (!err && o->cmd && !r->nobjs) {
		ERR("'%s' has no tracebpf probes, and neither had anything it executed or loaded",
		    o->cmd[0]);
		fprintf(stderr, "tracebpf: hint: include <tracebpf/trace.h>, add TRACE_EVENT* macros "
				"and rebuild (see README.md); 'readelf -n PROGRAM' lists the probes\n");
		err = -ENOENT;
	}
	return err;
}
