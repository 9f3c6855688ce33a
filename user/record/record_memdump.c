// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record_memdump.c - the application's memory dumps (docs/api.md, "Memory
 * dumps"): the recorder tells each traced process's dumping thread, the
 * one tracebpf/trace.h starts at the first tracebpf_memdump_register(),
 * the interval of its dumps.
 *
 * The thread is named "tracebpf-md NN" (NN: the signal it waits for) and
 * sleeps in rt_sigtimedwait() with every signal blocked. It is found two
 * ways: in /proc when the recording starts (rec_md_scan_all), and by its
 * `dumper` site (phase 'v', tracebpf/site.h: the SITE record its first
 * hit in each process gives) when it starts while the recording runs,
 * in a process started or forked since (rec_md_note). It is
 * told by a queued signal (SI_QUEUE, the value the interval in ms, 0 to
 * stop) sent through a pidfd of the thread, after its name was checked
 * through that pidfd's task: a thread id reused by another thread is
 * never signalled. The interval is sent again at ctl start, 0 at ctl stop
 * and when the recording ends (the thread also stops on its own when no
 * tracer is attached any more: a recorder killed).
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "record/recorder.h"
#include "format/tbrecords.h"
#include "tracebpf/site.h"

#define MD_COMM "tracebpf-md "
#ifndef PIDFD_THREAD
#define PIDFD_THREAD 0200   /* O_EXCL: a pidfd of the thread (Linux 6.9) */
#endif

/* The signal tid of pid waits for (its name says), or 0. */
static int md_thread_signal(uint32_t pid, uint32_t tid)
{
	char comm[16];
	int sig = 0;

	if (!rec_read_comm((pid_t)pid, (pid_t)tid, comm) && !strncmp(comm, MD_COMM, strlen(MD_COMM)))
		sig = atoi(comm + strlen(MD_COMM));
	return sig >= SIGRTMIN && sig <= SIGRTMAX ? sig : 0;
}

/* Tells one thread the interval (ms, 0: stop). 0, or a negative errno:
 * -ESRCH when the thread is gone or is not a dumping thread any more. */
static int md_send(const struct md_thread *t, long ms)
{
	siginfo_t info = { .si_signo = t->sig, .si_code = SI_QUEUE };
	int fd = (int)syscall(SYS_pidfd_open, t->tid, PIDFD_THREAD), err = 0;

	if (fd < 0)
		return -errno;
	info.si_pid = getpid();
	info.si_uid = getuid();
	info.si_value.sival_int = (int)ms;
	/* the pidfd holds the task: the name is that of the thread signalled */
	if (md_thread_signal(t->pid, t->tid) != t->sig)
		err = -ESRCH;
	else if (syscall(SYS_pidfd_send_signal, fd, t->sig, &info, 0))
		err = -errno;
	close(fd);
	return err;
}

/* The interval to send now: 0 while ctl stop holds. */
static long md_interval(const struct recorder *r)
{
	return r->ctl.off ? 0 : (long)r->o->memdump_ms;
}

/* A dumping thread found: kept, and told the interval. */
static void md_add(struct recorder *r, uint32_t pid, uint32_t tid, int sig)
{
	struct md_thread t = { pid, tid, sig };
	size_t i;
	int err;

	for (i = 0; i < r->md.n; i++)
		if (r->md.v[i].pid == pid && r->md.v[i].tid == tid)
			return;
	if (r->md.n == r->md.cap) {
		size_t cap = r->md.cap ? 2 * r->md.cap : 16;
		struct md_thread *v = realloc(r->md.v, cap * sizeof(*v));

		if (!v)
			return;   /* its dumps are not asked for; nothing is lost */
		r->md.v = v;
		r->md.cap = cap;
	}
	r->md.v[r->md.n++] = t;
	if (md_interval(r) && (err = md_send(&t, md_interval(r))) && err != -ESRCH)
		fprintf(stderr, "tracebpf: record: warning: failed to signal the memory-dump "
				"thread %u of process %u (%s): its dumps are not recorded\n",
			tid, pid, strerror(-err));
}

/* The threads of a process that is gone, or exec'd (which ends them). */
static void md_forget(struct recorder *r, uint32_t pid)
{
	size_t i = 0;

	while (i < r->md.n)
		if (r->md.v[i].pid == pid)
			r->md.v[i] = r->md.v[--r->md.n];
		else
			i++;
}

static void md_on_site(struct recorder *r, const struct tb_rec_site *s)
{
	const struct tracebpf_site *d = (const void *)(s + 1);
	static const char name[] = "__metadata\0dumper";
	int sig;

	if (s->hdr.size < sizeof(*s) + sizeof(*d) + sizeof(name) || s->len < sizeof(*d) + sizeof(name) ||
	    d->phase != TRACEBPF_PHASE_MEMDUMP || memcmp(d + 1, name, sizeof(name)))
		return;
	/* each process gets its own SITE record of the site, from the one
	 * thread that hits it: its dumping thread (the event itself may come
	 * before or after it, and is not looked at) */
	sig = md_thread_signal(s->hdr.pid, s->hdr.tid);
	if (sig)
		md_add(r, s->hdr.pid, s->hdr.tid, sig);
}

/* Every record goes by: the `dumper` sites' SITE records (no event is
 * looked at), and the processes that end. */
void rec_md_note(struct recorder *r, const struct tb_rec_hdr *h)
{
	switch (h->type) {
	case TB_REC_SITE:
		md_on_site(r, (const void *)h);
		break;
	case TB_REC_EXEC:
		md_forget(r, h->pid);
		break;
	case TB_REC_EXIT:
		if (h->size >= sizeof(struct tb_rec_exit) &&
		    ((const struct tb_rec_exit *)h)->flags & TB_EXITF_PROCESS)
			md_forget(r, h->pid);
		break;
	default:
		break;
	}
}

/* The dumping threads of one traced process, from /proc. */
static void md_scan(struct recorder *r, pid_t pid)
{
	char path[64];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		uint32_t tid = (uint32_t)strtoul(e->d_name, NULL, 10);
		int sig = tid ? md_thread_signal((uint32_t)pid, tid) : 0;

		if (sig)
			md_add(r, (uint32_t)pid, tid, sig);
	}
	closedir(d);
}

/* At the start: the threads already running (their `dumper` site fired
 * before the probes were attached). */
void rec_md_scan_all(struct recorder *r)
{
	if (r->o->memdump_ms)
		rec_each_traced(r, md_scan);
}

/* Every known thread told the interval now (ctl start), or to stop
 * (ctl stop, the recording's end: off). */
void rec_md_tell_all(struct recorder *r, bool off)
{
	long ms = off ? 0 : (long)r->o->memdump_ms;
	size_t i = 0;

	if (!r->o->memdump_ms)
		return;
	while (i < r->md.n)
		if (md_send(&r->md.v[i], ms) == -ESRCH)
			r->md.v[i] = r->md.v[--r->md.n];
		else
			i++;
}

void rec_md_free(struct recorder *r)
{
	free(r->md.v);
	r->md.v = NULL;
	r->md.n = r->md.cap = 0;
}
