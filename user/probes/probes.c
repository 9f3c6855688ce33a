// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* probes.c - find ELF objects with tracebpf probes (see probes.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probes/probes.h"
#include "tracebpf/trace.h"

extern char **environ;

int tb_paths_add(struct tb_paths *p, const char *path)
{
	char **nv;
	int i;

	for (i = 0; i < p->n; i++)
		if (!strcmp(p->v[i], path))
			return 0;
	if (p->n == p->cap) {
		int cap = p->cap ? 2 * p->cap : 8;

		nv = realloc(p->v, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		p->v = nv;
		p->cap = cap;
	}
	p->v[p->n] = strdup(path);
	if (!p->v[p->n])
		return -ENOMEM;
	p->n++;
	return 0;
}

void tb_paths_free(struct tb_paths *p)
{
	int i;

	for (i = 0; i < p->n; i++)
		free(p->v[i]);
	free(p->v);
	p->v = NULL;
	p->n = p->cap = 0;
}

/* The argument string the current trace.h writes for a probe name. */
static const char *fixed_regs(const char *probe)
{
	return !strcmp(probe, TB_PROBE) ? TRACEBPF_REGS_EVENT :
	       !strcmp(probe, TB_PROBE_ID) ? TRACEBPF_REGS_EVENT_ID :
	       !strcmp(probe, TB_PROBE_RING) ? TB_REGS_RING : NULL;
}

struct regs_count {
	const char *probe;   /* NULL: event or event_id */
	int count, other;
};

/* A tracebpf note of the probe asked for: counted, and in other when its
 * argument string is not the current header's fixed registers. */
static int count_note(const char *provider, const char *name, const char *args,
		      unsigned long long sema, void *ctx)
{
	struct regs_count *c = ctx;

	(void)sema;
	if (strcmp(provider, TB_PROVIDER) ||
	    (c->probe ? strcmp(name, c->probe) : strcmp(name, TB_PROBE) && strcmp(name, TB_PROBE_ID)))
		return 0;
	c->count++;
	if (!fixed_regs(name) || strcmp(args, fixed_regs(name)))
		c->other++;
	return 0;
}

/* The notes of one .note.stapsdt section: type 3, owner "stapsdt"; the
 * descriptor is three addresses (pc, base, semaphore) followed by
 * provider\0 name\0 args\0. */
static int each_in(Elf_Data *data, size_t asz, tb_note_fn fn, void *ctx)
{
	GElf_Nhdr nh;
	size_t off = 0, noff, doff;
	int ret = 0;

	while (!ret && (off = gelf_getnote(data, off, &nh, &noff, &doff)) > 0) {
		const char *d = (const char *)data->d_buf + doff, *owner = (const char *)data->d_buf + noff;
		const char *prov, *name, *args, *end = d + nh.n_descsz;
		unsigned long long sema = 0;

		if (nh.n_type != 3 || nh.n_namesz != 8 || memcmp(owner, "stapsdt", 8) ||
		    nh.n_descsz < 3 * asz + 3)
			continue;
		memcpy(&sema, d + 2 * asz, asz);
		prov = d + 3 * asz;
		name = memchr(prov, 0, end - prov);
		args = name ? memchr(name + 1, 0, end - name - 1) : NULL;
		if (!args || !memchr(args + 1, 0, end - args - 1))
			continue;
		ret = fn(prov, name + 1, args + 1, sema, ctx);
	}
	return ret;
}

int tb_elf_each_note(const char *path, tb_note_fn fn, void *ctx)
{
	size_t shstrndx, asz;
	Elf_Scn *scn = NULL;
	Elf *elf;
	int fd, ret;

	ret = tb_elf_open(path, &fd, &elf);
	if (ret)
		return ret;
	if (elf_getshdrstrndx(elf, &shstrndx)) {
		tb_elf_close(fd, elf);
		return -ENOEXEC;
	}
	asz = gelf_getclass(elf) == ELFCLASS32 ? 4 : 8;
	while (!ret && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *sname;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		sname = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!sname || strcmp(sname, ".note.stapsdt") || !(data = elf_getdata(scn, NULL)))
			continue;
		ret = each_in(data, asz, fn, ctx);
	}
	tb_elf_close(fd, elf);
	return ret;
}

int tb_elf_count_probes(const char *path)
{
	return tb_elf_count_probe(path, NULL);
}

int tb_elf_count_probe(const char *path, const char *probe)
{
	int other;

	return tb_elf_probe_regs(path, probe, &other);
}

int tb_elf_probe_regs(const char *path, const char *probe, int *other_regs)
{
	struct regs_count c = { .probe = probe };
	int ret = tb_elf_each_note(path, count_note, &c);

	*other_regs = c.other;
	return ret < 0 ? ret : c.count;
}

int tb_elf_open(const char *path, int *fd, Elf **elf)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return -errno;
	*elf = elf_begin(*fd, ELF_C_READ, NULL);
	if (*elf && elf_kind(*elf) == ELF_K_ELF)
		return 0;
	tb_elf_close(*fd, *elf);
	return -ENOEXEC;
}

void tb_elf_close(int fd, Elf *elf)
{
	if (elf)
		elf_end(elf);
	close(fd);
}

/* The state letter of the task whose /proc directory is dir (0: unknown). */
static char task_state(const char *dir)
{
	char path[96], buf[512], *p;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/stat", dir);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] ? p[2] : 0;
}

static bool root_readable(const char *dir)
{
	char path[112], target[8];

	snprintf(path, sizeof(path), "%s/root", dir);
	return readlink(path, target, sizeof(target)) >= 0 || errno != ENOENT;
}

void tb_proc_dir(pid_t pid, char *buf, size_t size)
{
	char task[64];
	struct dirent *e;
	DIR *d;

	snprintf(buf, size, "/proc/%d", (int)pid);
	/* A leader that is ending lets go of its root (exit_fs) before it
	 * turns zombie: a root that reads no more is as good as gone. */
	if (task_state(buf) != 'Z' && root_readable(buf))
		return;
	snprintf(task, sizeof(task), "/proc/%d/task", (int)pid);
	d = opendir(task);
	while (d && (e = readdir(d))) {
		long tid = strtol(e->d_name, NULL, 10);
		char dir[96];
		char st;

		if (tid <= 0 || tid == pid)
			continue;
		snprintf(dir, sizeof(dir), "%s/%ld", task, tid);
		st = task_state(dir);
		if (st && st != 'Z' && st != 'X') {
			snprintf(buf, size, "%s", dir);
			break;
		}
	}
	if (d)
		closedir(d);
}

bool tb_proc_ended(pid_t pid)
{
	char dir[96], st;

	tb_proc_dir(pid, dir, sizeof(dir));   /* a running thread's, if any */
	st = task_state(dir);
	if (!st)   /* unreadable: ended only if gone */
		return kill(pid, 0) && errno == ESRCH;
	return st == 'Z' || st == 'X';
}

static struct {
	bool (*want)(const char *provider, const char *name, void *ctx);
	void *ctx;
} also;

void tb_probes_also(bool (*want)(const char *provider, const char *name, void *ctx), void *ctx)
{
	also.want = want;
	also.ctx = ctx;
}

static int wanted_note(const char *provider, const char *name, const char *args,
		       unsigned long long sema, void *ctx)
{
	(void)args;
	(void)sema;
	(void)ctx;
	return also.want(provider, name, also.ctx);
}

/* The file has tracebpf probes, or other probes tb_probes_also wants. */
static bool has_probes(const char *path)
{
	if (tb_elf_count_probes(path) > 0)
		return true;
	return also.want && tb_elf_each_note(path, wanted_note, NULL) > 0;
}

int tb_proc_probe_objects(pid_t pid, struct tb_paths *out)
{
	char maps[128], line[PATH_MAX + 256], path[PATH_MAX + 128], dir[96];
	struct tb_paths seen = {};
	FILE *f;
	int ret = 0;

	tb_proc_dir(pid, dir, sizeof(dir));
	snprintf(maps, sizeof(maps), "%s/maps", dir);
	f = fopen(maps, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/');
		size_t len;

		/* only file-backed mappings; skip "(deleted)" files */
		if (!file || strstr(line, " (deleted)"))
			continue;
		len = strlen(file);
		if (len && file[len - 1] == '\n')
			file[len - 1] = 0;
		ret = tb_paths_add(&seen, file);
		if (ret)
			goto out;
	}
	/* The files are opened through the process's root (its mount
	 * namespace), which, like maps, needs ptrace access to it: refused,
	 * every file would look like one without probes. */
	snprintf(path, sizeof(path), "%s/root/", dir);
	if (seen.n && access(path, F_OK) && (errno == EACCES || errno == EPERM)) {
		ret = -errno;
		goto out;
	}
	for (int i = 0; i < seen.n; i++) {
		snprintf(path, sizeof(path), "%s/root%s", dir, seen.v[i]);
		if (has_probes(path)) {
			ret = tb_paths_add(out, path);
			if (ret)
				goto out;
		}
	}
out:
	fclose(f);
	tb_paths_free(&seen);
	return ret;
}

static int is_exec_file(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) || access(path, X_OK))
		return -EACCES;
	return 0;
}

int tb_resolve_cmd(const char *cmd, char *out, size_t len)
{
	const char *path = getenv("PATH");
	int err, last = -ENOENT;

	if (strchr(cmd, '/')) {
		err = is_exec_file(cmd);
		if (err)
			return err;
		if (!realpath(cmd, out) || strlen(out) >= len)
			return -ENAMETOOLONG;
		return 0;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *end = strchrnul(path, ':');
		char cand[PATH_MAX];

		snprintf(cand, sizeof(cand), "%.*s/%s", (int)(end - path),
			 end == path ? "." : path, cmd);
		err = is_exec_file(cand);
		if (!err) {
			if (!realpath(cand, out))
				return -errno;
			return 0;
		}
		if (err == -EACCES)
			last = err;
		path = *end ? end + 1 : end;
	}
	return last;
}

static int has_interp(const char *path)
{
	size_t n = 0;
	Elf *elf;
	int fd, ret = 0;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF && !elf_getphdrnum(elf, &n)) {
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_INTERP)
				ret = 1;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return ret;
}

/* Ask the program's own dynamic loader which libraries it would map: the
 * loader's search rules (RUNPATH, LD_LIBRARY_PATH, ld.so.cache) are exactly
 * reproduced only by the loader. With LD_TRACE_LOADED_OBJECTS set, ld.so
 * prints "name => /path (addr)" lines and exits before running any code of
 * the program. Only done for dynamically linked programs: a static one
 * would ignore the variable and run. */
static int loader_libs(const char *exe, struct tb_paths *libs)
{
	int pfd[2], status, ret = 0;
	char line[PATH_MAX + 128];
	pid_t pid;
	FILE *f;

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		close(pfd[0]);
		close(pfd[1]);
		return ret;
	}
	if (pid == 0) {
		char *argv[] = { (char *)exe, NULL };
		int devnull = open("/dev/null", O_RDWR);

		dup2(pfd[1], 1);
		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 2);
		}
		setenv("LD_TRACE_LOADED_OBJECTS", "1", 1);
		execve(exe, argv, environ);
		_exit(127);
	}
	close(pfd[1]);
	f = fdopen(pfd[0], "r");
	if (!f) {
		ret = -errno;
		close(pfd[0]);
	} else {
		while (fgets(line, sizeof(line), f)) {
			char *p = strstr(line, "=> ");
			char *end;

			p = p ? p + 3 : line + strspn(line, " \t");
			if (*p != '/')
				continue;
			end = strstr(p, " (");
			if (!end)
				end = p + strcspn(p, "\n");
			*end = 0;
			if (!ret)
				ret = tb_paths_add(libs, p);
		}
		fclose(f);
	}
	waitpid(pid, &status, 0);
	return ret;
}

int tb_cmd_probe_objects(const char *exe, struct tb_paths *out)
{
	struct tb_paths libs = {};
	int ret = 0;

	if (has_probes(exe))
		ret = tb_paths_add(out, exe);
	if (!ret && has_interp(exe))
		ret = loader_libs(exe, &libs);
	for (int i = 0; !ret && i < libs.n; i++) {
		char real[PATH_MAX];

		if (!realpath(libs.v[i], real))
			continue;
		if (has_probes(real))
			ret = tb_paths_add(out, real);
	}
	tb_paths_free(&libs);
	return ret;
}
