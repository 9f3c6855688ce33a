/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* tracebpf.h - the commands of the tracebpf CLI and their options. */
#ifndef TRACEBPF_CLI_H
#define TRACEBPF_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifndef TRACEBPF_VERSION
#define TRACEBPF_VERSION "0.1.0"
#endif

#define TB_MAX_TARGETS 64
#define TB_MAX_TIDS 1024   /* --tid */
#define TB_MAX_EVENT_SPECS 64
#define TB_MAX_USDT_OPTS 128

/* One of record's options about other programs' probes (user/probes/probes.h):
 * kind 'p' (--usdt), 's' (--usdt-slice), 'y' (--usdt-async), 'a'
 * (--usdt-args), 'c' (--usdt-counter), 'e' (--usdt-enable). */
struct tb_usdt_opt {
	char kind;
	const char *text;
};

struct tb_record_opts {
	pid_t pids[TB_MAX_TARGETS];      /* -p (and the processes of --tid) */
	int npids;
	pid_t tids[TB_MAX_TIDS];         /* --tid: only these threads' events */
	int ntids;
	char **cmd;                      /* -- CMD ARGS (NULL-terminated) */
	const char *out;                 /* -o: x.tbt, x.json or a base name */
	double duration;                 /* --duration, 0 = until targets exit */
	size_t buffer_size;              /* --buffer-size, per CPU, power of 2 */
	size_t kernel_buffer_size;       /* --kernel-buffer-size, the same */
	unsigned flush_ms;               /* drain/flush period */
	int zlevel;                      /* zlib level for chunks */
	const char *btf_path;            /* kernel BTF to check (default sysfs) */
	const char *session;             /* --session NAME (default tb-<recorder pid>) */
	const char *categories;          /* --categories GLOB,... (NULL: all) */
	const char *exclude_categories;  /* --exclude-categories GLOB,... */
	bool verbose;                    /* -v: libbpf debug output */
	bool quiet;                      /* -q: no live status */
	bool no_json;                    /* --no-json: keep only the .tbt */
	bool paused;                     /* --paused: until tracebpf ctl start */
	bool keep_running;               /* --keep-running: -- CMD outlives the recording */
	bool realtime;                   /* --realtime: asked for (a refusal is said) */
	bool no_realtime;                /* --no-realtime: never SCHED_FIFO */
	const char *cmdline;             /* the recorder's own command line */
	const char *serve;               /* --serve: Unix socket path */
	size_t serve_max_lag;            /* --serve-max-lag: bytes */
	bool no_sched;                   /* --no-sched: no scheduler events */
	bool no_memory;                  /* --no-memory: no kmem:rss_stat */
	unsigned memdump_ms;             /* --memory-dump-interval, ms (0: none) */
	bool sched_traced;               /* --sched=traced: only traced tasks' */
	unsigned sched_select;           /* --sched-events (kern/kern.h), 0 = all */
	char *events[TB_MAX_EVENT_SPECS];/* -e SUBSYS:EVENT (globs) */
	int nevents;
	unsigned max_procs;              /* --max-processes: size of the traced set */
	bool no_fast_path;               /* --no-fast-path */
	size_t fast_buffer_size;         /* --fast-buffer-size, per thread */
	size_t fast_buffer_max;          /* --fast-buffer-max */
	uint32_t fast_wait_us;           /* --fast-wait */
	unsigned max_fast_rings;         /* --max-fast-rings */
	struct tb_usdt_opt usdt[TB_MAX_USDT_OPTS];   /* --usdt, --usdt-slice, ... in order */
	int nusdt;
};

int tb_record(const struct tb_record_opts *o);

/* A command of `tracebpf` (main.c's table): run with its own argv
 * (argv[0] "tracebpf NAME") and the whole command line, as typed. 0, 1
 * when it failed (said), 64 for a usage error. */
struct tb_command {
	const char *name;
	int (*run)(int argc, char **argv, const char *cmdline);
	const char *summary;
};

int tb_cmd_record(int argc, char **argv, const char *cmdline);    /* record/record_args.c */
int tb_cmd_convert(int argc, char **argv, const char *cmdline);   /* cli/convert_cmd.c */
int tb_cmd_info(int argc, char **argv, const char *cmdline);      /* cli/info.c */
int tb_cmd_report(int argc, char **argv, const char *cmdline);    /* report/report.c */
int tb_cmd_dump(int argc, char **argv, const char *cmdline);      /* cli/dump.c */
int tb_cmd_list(int argc, char **argv, const char *cmdline);      /* cli/list.c */
int tb_cmd_pack(int argc, char **argv, const char *cmdline);      /* cli/pack.c */
int tb_cmd_ctl(int argc, char **argv, const char *cmdline);       /* ctl/ctl.c */

/* tracebpf convert (user/cli/convert_cmd.c): o->in to o->out. The output file
 * appears whole or not at all (written to a temporary next to it, then
 * renamed). Returns 0 or -errno; errors are printed on stderr as
 * "tracebpf: convert: failed to <verb> '<object>': <strerror>" + a hint. */
struct tb_convert_opts;
int tb_convert(const struct tb_convert_opts *o);

#endif
