/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * probes.h - find the ELF objects that carry tracebpf probes: in a running
 * process (/proc/PID/maps) or in a command about to be started (the
 * executable and the shared libraries the dynamic loader would map).
 */
#ifndef TRACEBPF_PROBES_H
#define TRACEBPF_PROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>
#include "format/tbrecords.h"
#include "tracebpf.h"

#define TB_PROVIDER "tracebpf"
#define TB_PROBE    "event"
#define TB_PROBE_ID "event_id"   /* sites with an id or a runtime name */
#define TB_PROBE_RING "ring"     /* a thread asks for its fast-path ring */
#define TB_REGS_RING "8@%rdi"

struct tb_paths {
	char **v;
	int n, cap;
};

/* Number of tracebpf:event and tracebpf:event_id notes in the ELF file at
 * path (>= 0), or -errno (-ENOEXEC when it is not an ELF file). */
int tb_elf_count_probes(const char *path);
/* The same for one probe name (TB_PROBE or TB_PROBE_ID). */
int tb_elf_count_probe(const char *path, const char *probe);
/* The same, and in *other_regs how many of those notes do not pass their
 * arguments in the fixed registers of the current trace.h
 * (TRACEBPF_REGS_EVENT, TRACEBPF_REGS_EVENT_ID). */
int tb_elf_probe_regs(const char *path, const char *probe, int *other_regs);
/* Every stapsdt note of the ELF file at path: fn(provider, name, the
 * argument spec, the semaphore's address (0: none), ctx) until it returns
 * non-zero (returned). -errno when the file cannot be read as ELF. */
typedef int (*tb_note_fn)(const char *provider, const char *name, const char *args,
			  unsigned long long sema, void *ctx);
int tb_elf_each_note(const char *path, tb_note_fn fn, void *ctx);
/* Opens the ELF file at path for reading: 0, -ENOEXEC (not ELF) or
 * -errno. tb_elf_close ends both. */
struct Elf;
int tb_elf_open(const char *path, int *fd, struct Elf **elf);
void tb_elf_close(int fd, struct Elf *elf);
/* Adds path unless already there. 0 or -ENOMEM. */
int tb_paths_add(struct tb_paths *p, const char *path);
void tb_paths_free(struct tb_paths *p);
/* From now on, a file also counts as one with probes (below) when one of
 * its stapsdt notes is one want(provider, name, ctx) accepts: record
 * --usdt's. NULL: only tracebpf's. */
void tb_probes_also(bool (*want)(const char *provider, const char *name, void *ctx), void *ctx);
/* Adds every file mapped by pid that carries tracebpf probes. Paths are
 * given through /proc/PID/root (tb_proc_dir) so they resolve in the
 * target's mount namespace. Returns 0, -ESRCH (no such process) or -errno: -EACCES when
 * its maps or its root cannot be read (no ptrace access to it). */
int tb_proc_probe_objects(pid_t pid, struct tb_paths *out);
/* The /proc directory to read process pid's memory map, root, exe and
 * command line through: "/proc/PID", or, when its group leader has ended
 * (main called pthread_exit(): a zombie, with no memory) or is ending (its
 * root already gone) while another thread runs, "/proc/PID/task/TID" of
 * that thread. */
void tb_proc_dir(pid_t pid, char *buf, size_t size);
/* Process pid has ended: gone, or a zombie (its parent has not reaped it)
 * with no thread left running. */
bool tb_proc_ended(pid_t pid);
/* Resolves cmd like execvp does: into out, or -ENOENT / -EACCES. */
int tb_resolve_cmd(const char *cmd, char *out, size_t len);
/* Adds exe and each shared library it links (as resolved by its dynamic
 * loader) that carries tracebpf probes. */
int tb_cmd_probe_objects(const char *exe, struct tb_paths *out);

/* ---- usdt.c ---- */
/*
 * usdt.c - other programs' USDT probes (record --usdt): which probes a
 * recording takes, and how each is shown (docs/tracebpf-record.md, "OTHER
 * PROGRAMS' PROBES"). The rules come from the command line and from
 * catalogs (tools/usdt/NAME.usdt, installed in share/tracebpf/usdt), whose
 * lines are the same options without their dashes.
 */

struct tb_usdt_rules;

/* The rules of n options (catalogs read). 0, or -EINVAL with the reason in
 * why (a catalog's line named), -ENOMEM. */
int tb_usdt_rules_build(struct tb_usdt_rules **out, const struct tb_usdt_opt *opts, int n,
			char *why, size_t whylen);
void tb_usdt_rules_free(struct tb_usdt_rules *r);

/* Whether provider:name is recorded (never tracebpf's own provider). */
bool tb_usdt_wanted(const struct tb_usdt_rules *r, const char *provider, const char *name);

/* How a probe with nargs arguments in its note is shown. */
struct tb_usdt_desc {
	enum tb_usdt_kind kind;
	char event[128];                  /* its events' name */
	int nargs;                        /* arguments shown */
	unsigned char src[TB_USDT_MAX_ARGS], type[TB_USDT_MAX_ARGS];
	char argname[TB_USDT_MAX_ARGS][32];
	unsigned strs;                    /* bit k: the note's argument k is a string */
	bool switch_only;                 /* --usdt-enable: attached, not recorded */
};
void tb_usdt_describe(const struct tb_usdt_rules *r, const char *provider, const char *name,
		      int nargs, struct tb_usdt_desc *d);

/* Arguments in a note's argument spec ("-4@%edi 8@%rsi": 2). */
int tb_usdt_spec_nargs(const char *args);

#endif
