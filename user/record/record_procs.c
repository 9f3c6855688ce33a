// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record_procs.c - the processes around the recording: the open-files
 * limit (raised for the recorder, given back to the command), the command
 * it starts (-- CMD, held before exec until the probes are attached), the
 * releaser (the child that resumes stopped targets if the recorder is
 * killed), and the traced processes: listed, their threads' names read,
 * and whether any still lives. It calls no other file of the recorder.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "record.skel.h"
#include "fast/fast.h"
#include "record/recorder.h"

/* The open-files limit the recorder found, given back to the command it
 * starts: raising it for tracebpf must not change the traced program. */
static struct rlimit nofile_orig;
static bool nofile_raised;

/* Every map, program, link and per-CPU ring buffer is a file descriptor
 * (about 70 on 2 CPUs): raise the soft limit, and the hard one if need be
 * (root may), to what that takes, or say what to do. */
int rec_check_nofile(void)
{
	int ncpus = libbpf_num_possible_cpus();
	rlim_t need = 128 + 8 * (rlim_t)(ncpus > 0 ? ncpus : 1);
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
		return 0;
	nofile_orig = rl;
	rl.rlim_cur = need;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
		rl.rlim_max = need;
	if (setrlimit(RLIMIT_NOFILE, &rl)) {
		int err = -errno;

		ERR("failed to raise the open-files limit from %llu to %llu: %s",
		    (unsigned long long)nofile_orig.rlim_cur, (unsigned long long)need,
		    strerror(-err));
		fprintf(stderr, "tracebpf: hint: each BPF map, program and ring buffer is a file "
				"descriptor: allow at least %llu (ulimit -n %llu)\n",
			(unsigned long long)need, (unsigned long long)need);
		return err;
	}
	nofile_raised = true;
	return 0;
}

/* Fork the command, stopped before exec until released by rec_start_child(). */
int rec_spawn_child(struct recorder *r, const char *exe)
{
	int go[2], ex[2];
	pid_t pid;

	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(ex, O_CLOEXEC)) {
		close(go[0]);
		close(go[1]);
		return -errno;
	}
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		char c;
		int e;

		close(go[1]);
		close(ex[0]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);   /* an ignored signal stays ignored after exec */
		if (nofile_raised)
			setrlimit(RLIMIT_NOFILE, &nofile_orig);
		setpriority(PRIO_PROCESS, 0, r->nice0);
		/* stdout carries the trace (-o -): the command's output goes
		 * to stderr */
		if (!strcmp(r->tbt_path, "-") && dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
			_exit(127);
		/* wait until the probes are attached; EOF means give up */
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execv(exe, r->o->cmd);
		e = errno;
		if (write(ex[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(ex[1]);
	r->child = pid;
	r->go_fd = go[1];
	r->exec_err_fd = ex[0];
	return 0;
}

int rec_start_child(struct recorder *r)
{
	int e = 0;
	ssize_t n;

	if (write(r->go_fd, "g", 1) != 1)
		return -errno;
	close(r->go_fd);
	r->go_fd = -1;
	/* EOF on the CLOEXEC pipe: exec succeeded */
	n = read(r->exec_err_fd, &e, sizeof(e));
	close(r->exec_err_fd);
	r->exec_err_fd = -1;
	if (n == sizeof(e)) {
		ERR("failed to execute '%s': %s", r->o->cmd[0], strerror(e));
		return -e;
	}
	return 0;
}

/* A recorder killed with SIGKILL cannot release the processes the kernel
 * side holds stopped for attaching (`stopped`): they would never run again.
 * So a small child of the recorder keeps that map open, and the read end of
 * a pipe whose write end only the recorder holds. When the recorder ends
 * well it writes one byte and the child leaves; at any other death the
 * child reads EOF, and sends SIGCONT to every process left in the map, a
 * few times over while the dead recorder's programs are being detached;
 * then it switches off and removes the dead recorder's fast-path session,
 * so that no map of it outlives the recorder in bpffs (the processes see
 * their switch off and unmap their rings). Nothing else stays open in it:
 * no program, link, ring or output. */
static void releaser_main(int rfd, int map, pid_t recorder)
{
	__u32 key, next, *prev;
	char c;
	ssize_t n;
	int dn;

	setsid();   /* no terminal signals: it outlives a Ctrl-C'd recorder */
	/* the pipe at 3, the map at 4, /dev/null at 0-2, nothing else */
	rfd = fcntl(rfd, F_DUPFD, 10);
	map = fcntl(map, F_DUPFD, 10);
	dn = open("/dev/null", O_RDWR);
	if (rfd < 0 || map < 0 || dn < 0 || dup2(dn, 0) < 0 || dup2(dn, 1) < 0 ||
	    dup2(dn, 2) < 0 || dup2(rfd, 3) < 0 || dup2(map, 4) < 0)
		_exit(1);
	close_range(5, ~0u, 0);
	while ((n = read(3, &c, 1)) < 0 && errno == EINTR)
		;
	if (n == 1)
		_exit(0);   /* the recorder released everyone itself */
	for (int round = 0; round < 5; round++) {
		prev = NULL;
		while (!bpf_map_get_next_key(4, prev, &next)) {
			key = next;
			prev = &key;
			bpf_map_delete_elem(4, &key);
			kill(key, SIGCONT);
		}
		nanosleep(&(struct timespec){ .tv_nsec = 100 * 1000 * 1000 }, NULL);
	}
	tb_fast_sweep_recorder(recorder);
	_exit(0);
}

int rec_start_releaser(struct recorder *r)
{
	int p[2], map = bpf_map__fd(r->skel->maps.stopped), err;
	pid_t pid, self = getpid();

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(p[0]);
		close(p[1]);
		return err;
	}
	if (pid == 0) {
		close(p[1]);
		releaser_main(p[0], map, self);
	}
	close(p[0]);
	r->releaser = pid;
	r->releaser_fd = p[1];
	return 0;
}

/* The recorder is done and released everyone: the releaser leaves. */
void rec_stop_releaser(struct recorder *r)
{
	if (r->releaser_fd >= 0) {
		/* if this fails it sees EOF: a needless sweep of an empty map */
		(void)!write(r->releaser_fd, "x", 1);
		close(r->releaser_fd);
		r->releaser_fd = -1;
	}
	if (r->releaser > 0) {
		waitpid(r->releaser, NULL, 0);
		r->releaser = -1;
	}
}

/* fn(r, pid) for every process still traced. */
void rec_each_traced(struct recorder *r, void (*fn)(struct recorder *, pid_t))
{
	int fd = bpf_map__fd(r->skel->maps.traced);
	__u32 key, next, *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		fn(r, key);
	}
	if (errno != ENOENT)
		fprintf(stderr, "tracebpf: record: warning: failed to list the traced "
				"processes (%s): the trace may lack the names and command "
				"lines of their threads\n", strerror(errno));
}

/* The name of thread tid of process pid, cut to 15 bytes and NUL-padded:
 * 0, or a negative errno. */
int rec_read_comm(pid_t pid, pid_t tid, char comm[16])
{
	char path[64], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	n = strlen(buf);
	memset(comm, 0, 16);
	memcpy(comm, buf, n < 15 ? n : 15);
	return 0;
}

/* Whether traced process pid has exited: it is gone, or (deep) it is a
 * zombie its parent has not reaped with no thread left running
 * (tb_proc_ended: a group leader that ended before its threads is a
 * zombie too). */
static bool process_exited(__u32 pid, bool deep)
{
	if (kill(pid, 0))
		return errno == ESRCH;
	return deep && tb_proc_ended((pid_t)pid);
}

/* How often rec_targets_alive looks for zombies in /proc. */
#define ZOMBIE_CHECK_NS 250000000ull

/* The traced map is empty once every traced process has exited. A pid that
 * ended without an exit record (it exited before we added it, between the
 * exit tracepoint's attach and the map's update) is pruned: gone, or, at
 * most every ZOMBIE_CHECK_NS, a zombie (a parent that reaps it only once
 * the recorder is done, as a test harness does, would wait for ever).
 * 1 while one lives, 0 when none does, a negative errno (printed) when the
 * map cannot be listed. */
int rec_targets_alive(struct recorder *r, __u64 now)
{
	int fd = bpf_map__fd(r->skel->maps.traced);
	__u32 key, next, *prev = NULL;
	bool deep = now - r->zombie_check >= ZOMBIE_CHECK_NS;
	int any = 0;

	if (deep)
		r->zombie_check = now;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (process_exited(key, deep))
			bpf_map_delete_elem(fd, &key);
		else
			any = 1;
	}
	if (errno != ENOENT) {
		int err = -errno;

		ERR("failed to list the traced processes: %s", strerror(-err));
		tb_hint_bpf(err, NULL);
		return err;
	}
	return any;
}
