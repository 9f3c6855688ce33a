// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record_args.c - `tracebpf record`'s options (docs/tracebpf-record.md):
 * parsed and checked into struct tb_record_opts, then tb_record.
 */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "ctl/ctl.h"
#include "kern/kern.h"
#include "probes/probes.h"
#include "tracebpf.h"

enum { OPT_BTF = 1000, OPT_FLUSH, OPT_NO_JSON, OPT_SERVE, OPT_SERVE_LAG, OPT_NO_SCHED,
       OPT_SCHED, OPT_SCHED_EVENTS, OPT_KBUF, OPT_PAUSED, OPT_MAX_PROCS, OPT_FAST,
       OPT_FAST_BUF, OPT_FAST_RINGS, OPT_FAST_MAX, OPT_FAST_WAIT, OPT_KEEP, OPT_REALTIME,
       OPT_NO_REALTIME,
       OPT_SESSION, OPT_TID, OPT_CATS, OPT_XCATS, OPT_NO_MEMORY, OPT_MEMDUMP, OPT_USDT,
       OPT_USDT_SLICE, OPT_USDT_ASYNC, OPT_USDT_ARGS, OPT_USDT_COUNTER, OPT_USDT_ENABLE };

static const struct argp_option record_options[] = {
	{ "pid", 'p', "PID[,PID...]", 0, "Record these running processes (and their children)", 0 },
	{ "tid", OPT_TID, "TID[,TID...]", 0, "Record the application events of these running "
					    "threads only (their processes are recorded as by -p: "
					    "their other threads' events are not)", 0 },
	{ "categories", OPT_CATS, "GLOB[,GLOB...]", 0, "Record only the application events of "
						      "these categories (globs; default all but "
						      "disabled-by-default-*, which are recorded only "
						      "when named)", 0 },
	{ "exclude-categories", OPT_XCATS, "GLOB[,GLOB...]", 0, "Do not record the application "
							       "events of these categories", 0 },
	{ "output", 'o', "FILE", 0, "Trace file: FILE.tbt while recording, FILE.json at the end "
				     "(default trace.json)", 0 },
	{ "duration", 'd', "SEC", 0, "Stop after SEC seconds", 0 },
	{ "session", OPT_SESSION, "NAME", 0, "Name this recording for 'tracebpf ctl --session "
					     "NAME' (default tb-<recorder pid>; printed at start)", 0 },
	{ "keep-running", OPT_KEEP, NULL, 0, "Leave the command (-- CMD) running when the "
					     "recording ends by a signal or --duration (by default "
					     "it gets SIGTERM, and its last events are recorded)", 0 },
	{ "realtime", OPT_REALTIME, NULL, 0, "Run at SCHED_FIFO 1 in the rounds in which threads "
					     "wait on their probes for fast-path rings (the default; "
					     "with this option, a refusal is said)", 0 },
	{ "no-realtime", OPT_NO_REALTIME, NULL, 0, "Never run at SCHED_FIFO: stay at nice -20 "
						   "(threads starting by the hundreds on a loaded "
						   "machine may then lose events)", 0 },
	{ "buffer-size", 'b', "SIZE", 0, "Each of the two rings per CPU for the application's "
					  "events, a power of two (K/M suffix; default 8M)", 0 },
	{ "kernel-buffer-size", OPT_KBUF, "SIZE", 0, "Ring buffer per CPU for kernel events "
						     "(scheduler, -e; a full one spills into the other), a power of two (default 1M)", 0 },
	{ "max-processes", OPT_MAX_PROCS, "N", 0, "Trace at most N processes at once (targets "
						   "and their children; default 16384): one started "
						   "beyond that is counted as lost, not traced", 0 },
	{ "no-fast-path", OPT_FAST, NULL, 0, "Every event through its USDT probe: no ring "
						 "buffers mapped into the traced threads (see the "
						 "record page's FAST PATH)", 0 },
	{ "fast-buffer-size", OPT_FAST_BUF, "SIZE", 0, "Fast-path ring buffer of each thread at "
						       "first, a power of two (default 64K); a full "
						       "one waits for the drain (--fast-wait), then "
						       "grows or sends events to the probes", 0 },
	{ "fast-buffer-max", OPT_FAST_MAX, "SIZE", 0, "A thread whose fast-path ring stays full "
						      "past its wait gets a bigger one, up to SIZE "
						      "(default 4M; the --fast-buffer-size: never)",
	  0 },
	{ "fast-wait", OPT_FAST_WAIT, "US", 0, "A thread whose fast-path ring is full waits up "
					       "to US microseconds for the drain to leave room "
					       "before it grows or takes the probes (default "
					       "1000; 0: never waits)", 0 },
	{ "max-fast-rings", OPT_FAST_RINGS, "N", 0, "At most N fast-path rings at once (default "
						    "1024); other threads take the probes", 0 },
	{ "flush-interval", OPT_FLUSH, "MS", 0, "Drain the rings and append to the file every MS "
						 "milliseconds (default 50; sooner while a thread's fast-path "
						 "ring fills faster)", 0 },
	{ "compress-level", 'z', "N", 0, "zlib level for trace chunks, 0 (store) to 9 (default 1)", 0 },
	{ "btf", OPT_BTF, "PATH", 0, "Kernel BTF to require (default /sys/kernel/btf/vmlinux)", 0 },
	{ "no-json", OPT_NO_JSON, NULL, 0, "Only write the .tbt file (convert it later)", 0 },
	{ "paused", OPT_PAUSED, NULL, 0, "Start with recording stopped: processes are followed, "
					 "but nothing is recorded until 'tracebpf ctl start'", 0 },
	{ "serve", OPT_SERVE, "SOCKET", 0, "Serve the trace on a Unix socket: clients "
					   "('dump/convert --connect SOCKET') get the file so far, then live chunks", 0 },
	{ "serve-max-lag", OPT_SERVE_LAG, "SIZE", 0, "Disconnect a client more than SIZE "
						     "bytes behind (default 64M)", 0 },
	{ "no-memory", OPT_NO_MEMORY, NULL, 0, "Do not record the traced processes' resident "
					       "memory (on by default: kmem:rss_stat, as "
					       "mem.rss.* counters)", 0 },
	{ "memory-dump-interval", OPT_MEMDUMP, "DURATION", 0, "Ask the application's memory "
							     "dumpers (tracebpf_memdump_register) for a dump every "
							     "DURATION (250ms, 2s; default 1s; 0: no dumps)", 0 },
	{ "no-sched", OPT_NO_SCHED, NULL, 0, "No scheduler events (on by default: context switches, "
					       "wakeups, CPU idle of the whole system)", 0 },
	{ "sched", OPT_SCHED, "SCOPE", 0, "Scheduler events of the whole system (all, default) or "
					  "only those involving traced processes (traced)", 0 },
	{ "sched-events", OPT_SCHED_EVENTS, "LIST", 0, "Only these scheduler and power "
						       "tracepoints (comma-separated: sched_switch, sched_waking, "
						       "sched_wakeup, sched_wakeup_new, cpu_idle, cpu_frequency; "
						       "default all). Process fork/exec/exit/rename are always on", 0 },
	{ "event", 'e', "SUBSYS:EVENT", 0, "Also record this tracefs tracepoint (repeatable; globs "
					    "like 'irq:*')", 0 },
	{ "usdt", OPT_USDT, "PROVIDER:NAME", 0, "Also record these USDT probes of the traced "
					       "programs and their libraries (repeatable; globs like "
					       "'postgresql:*'; or a catalog: --usdt=postgresql)", 0 },
	{ "usdt-slice", OPT_USDT_SLICE, "P:BEGIN=P:END[=NAME]", 0, "Pair these two probes per "
								  "thread into slices (repeatable)", 0 },
	{ "usdt-async", OPT_USDT_ASYNC, "P:BEGIN=P:END[=NAME]", 0, "Pair these two probes per "
								  "process into async slices, keyed by "
								  "each probe's first argument (repeatable)", 0 },
	{ "usdt-enable", OPT_USDT_ENABLE, "P:NAME", 0, "Attach this probe only to raise its "
						       "semaphore: its hits are not recorded (some "
						       "programs fire other probes only while one is "
						       "raised)", 0 },
	{ "usdt-args", OPT_USDT_ARGS, "P:NAME=ARG[:TYPE],...", 0, "Name the probe's arguments "
								  "in order; TYPE int (default), uint, str "
								  "(copied at the hit), hex; - hides one", 0 },
	{ "usdt-counter", OPT_USDT_COUNTER, "P:NAME=ARG", 0, "Show the probe as a counter of "
							     "one argument (argK or a name from "
							     "--usdt-args)", 0 },
	{ "verbose", 'v', NULL, 0, "Show libbpf's debug output", 0 },
	{ "quiet", 'q', NULL, 0, "No live status line", 0 },
	{ 0 },
};

static const char record_doc[] =
	"Record trace events.\v"
	"Examples:\n"
	"  sudo tracebpf record -- ./app --its-args     # start ./app and record it\n"
	"  sudo tracebpf record -p 1234 -d 10           # attach to pid 1234 for 10 s\n"
	"  sudo tracebpf record -o run.json -- ./app     # run.tbt + run.json\n"
	"Stops when every traced process has exited, on Ctrl-C or SIGTERM, or after --duration; "
	"then a command it started that still runs gets SIGTERM (unless --keep-running).";


/* The process of thread `tid` (tid itself if it cannot be read: record
 * then says it does not exist). */
static long tgid_of(long tid)
{
	char path[64], line[128];
	long tgid = tid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", tid);
	f = fopen(path, "re");
	if (!f)
		return tid;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %ld", &tgid) == 1)
			break;
	fclose(f);
	return tgid > 0 ? tgid : tid;
}

/* -p takes processes; a thread id names the process it belongs to (the
 * kernel side keys traced processes by tgid: a tid would match nothing). */
static long process_of(long pid)
{
	long tgid = tgid_of(pid);

	if (tgid != pid) {
		fprintf(stderr, "tracebpf: record: %ld is a thread of process %ld: recording "
				"process %ld\n", pid, tgid, tgid);
		return tgid;
	}
	return pid;
}

/* -p PID[,PID...]: a thread id stands for its process; duplicates go. */
static void add_pid(struct argp_state *state, struct tb_record_opts *o, long v)
{
	for (int i = 0; i < o->npids; i++)
		if (o->pids[i] == v)
			return;   /* given twice, or two threads of it */
	if (o->npids == TB_MAX_TARGETS)
		argp_error(state, "too many pids (at most %d)", TB_MAX_TARGETS);
	o->pids[o->npids++] = v;
}

/* A positive id of a comma-separated list ("pid" or "thread id"). */
static long parse_id(struct argp_state *state, const char *tok, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(tok, &end, 10);
	if (errno || *end || v <= 0 || v > INT_MAX)
		argp_error(state, "invalid %s '%s': give a positive %s", what, tok,
			   strcmp(what, "pid") ? what : "process id");
	return v;
}

/* --tid: each thread, and its process as a target. A thread that does not
 * exist is an error once the targets are looked up (its process is). */
static void add_tids(struct argp_state *state, struct tb_record_opts *o, char *arg)
{
	char *tok, *save;
	long v;

	for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		v = parse_id(state, tok, "thread id");
		if (o->ntids == TB_MAX_TIDS)
			argp_error(state, "too many thread ids (at most %d)", TB_MAX_TIDS);
		o->tids[o->ntids++] = v;
		add_pid(state, o, tgid_of(v));
	}
}

static void add_pids(struct argp_state *state, struct tb_record_opts *o, char *arg)
{
	char *tok, *save;

	for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		add_pid(state, o, process_of(parse_id(state, tok, "pid")));
}

/* -e SUBSYS:EVENT: the syntax is a usage error (64); whether the event
 * exists is known once tracefs is read (exit 1). */
static void add_event(struct argp_state *state, struct tb_record_opts *o, char *arg)
{
	char sys[64], ev[128];

	if (o->nevents == TB_MAX_EVENT_SPECS)
		argp_error(state, "too many -e (at most %d)", TB_MAX_EVENT_SPECS);
	if (tb_sched_parse_spec(arg, sys, sizeof(sys), ev, sizeof(ev)))
		argp_error(state, "invalid tracepoint '%s': give SUBSYS:EVENT, e.g. "
			   "-e sched:sched_migrate_task or -e 'irq:*'", arg);
	o->events[o->nevents++] = arg;
}

/* The whole command line: what goes with what. */
/* --categories and --exclude-categories make valid rules. */
static void check_categories(struct argp_state *state, const struct tb_record_opts *o)
{
	static struct tracebpf_cats k;
	const char *why = NULL;

	if (tb_cats_build(&k, o->categories, o->exclude_categories, &why))
		argp_error(state, "invalid category list: %s", why);
}

/* The --usdt options make rules, and their catalogs exist. */
static void check_usdt(struct argp_state *state, const struct tb_record_opts *o)
{
	struct tb_usdt_rules *r;
	char why[512];
	int err;

	if (!o->nusdt)
		return;
	err = tb_usdt_rules_build(&r, o->usdt, o->nusdt, why, sizeof(why));
	if (err == -EINVAL)
		argp_error(state, "invalid --usdt option: %s", why);
	tb_usdt_rules_free(r);
}

/* --usdt*: kept in order, checked once all are read. */
static void add_usdt(struct argp_state *state, struct tb_record_opts *o, char kind, char *arg)
{
	if (o->nusdt == TB_MAX_USDT_OPTS)
		argp_error(state, "too many --usdt options (at most %d)", TB_MAX_USDT_OPTS);
	o->usdt[o->nusdt++] = (struct tb_usdt_opt){ kind, arg };
}

static void check_record_args(struct argp_state *state, const struct tb_record_opts *o)
{
	if (!o->cmd && !o->npids)
		argp_error(state, "nothing to record: give -p PID, --tid TID or -- COMMAND");
	if (o->cmd && o->ntids)
		argp_error(state, "--tid names running threads: give it with -p PID or "
			   "alone, not with -- COMMAND");
	if (o->cmd && o->npids)
		argp_error(state, "give either -p PID or -- COMMAND, not both");
	if (o->no_sched && o->sched_select)
		argp_error(state, "--no-sched and --sched-events contradict each other: give one");
	if (o->serve && !strcmp(o->out, "-"))
		argp_error(state, "--serve serves the trace file: give -o FILE, not -o -");
	check_categories(state, o);
	check_usdt(state, o);
}

/* --memory-dump-interval: 0, or 1 ms to 24 days, in whole ms. */
static void parse_memdump(struct argp_state *state, const char *arg)
{
	struct tb_record_opts *o = state->input;
	const char *why = NULL;
	uint64_t ns = 0;

	if (strcmp(arg, "0") && tb_parse_duration(arg, &ns, &why))
		argp_error(state, "bad --memory-dump-interval '%s': %s", arg, why);
	if (ns % 1000000 || ns > (uint64_t)INT32_MAX * 1000000)
		argp_error(state, "bad --memory-dump-interval '%s': give whole milliseconds, "
			   "from 1ms to 24 days, or 0 for no dumps", arg);
	o->memdump_ms = (unsigned)(ns / 1000000);
}

/* record's options for kernel events (scheduler, -e, memory): true when key was one of them. */
static bool parse_kernel_opt(int key, char *arg, struct argp_state *state)
{
	struct tb_record_opts *o = state->input;

	switch (key) {
	case OPT_NO_MEMORY:
		o->no_memory = true;
		return true;
	case OPT_MEMDUMP:
		parse_memdump(state, arg);
		return true;
	case OPT_NO_SCHED:
		o->no_sched = true;
		return true;
	case OPT_SCHED:
		if (!strcmp(arg, "all"))
			o->sched_traced = false;
		else if (!strcmp(arg, "traced"))
			o->sched_traced = true;
		else
			argp_error(state, "invalid --sched scope '%s': give 'all' or 'traced'", arg);
		return true;
	case OPT_SCHED_EVENTS: {
		const char *bad = NULL;

		if (tb_sched_parse_select(arg, &o->sched_select, &bad)) {
			char names[256] = "";

			for (int i = 0; i < TB_SCHED_NTP; i++)
				if (!(TB_SCHED_ALWAYS & (1u << i)))
					snprintf(names + strlen(names), sizeof(names) - strlen(names),
						 "%s%s", *names ? ", " : "", tb_sched_tracepoints[i]);
			argp_error(state, "unknown scheduler event '%s' in --sched-events: give "
				   "'all' or a comma-separated list of %s", bad, names);
		}
		return true;
	}
	case 'e':
		add_event(state, o, arg);
		return true;
	case OPT_USDT:
		add_usdt(state, o, 'p', arg);
		return true;
	case OPT_USDT_SLICE:
		add_usdt(state, o, 's', arg);
		return true;
	case OPT_USDT_ASYNC:
		add_usdt(state, o, 'y', arg);
		return true;
	case OPT_USDT_ENABLE:
		add_usdt(state, o, 'e', arg);
		return true;
	case OPT_USDT_ARGS:
		add_usdt(state, o, 'a', arg);
		return true;
	case OPT_USDT_COUNTER:
		add_usdt(state, o, 'c', arg);
		return true;
	default:
		return false;
	}
}

/* record's options for the session (name, categories, the command's end, --paused): true when key was one of them. */
static bool parse_session_opt(int key, char *arg, struct argp_state *state)
{
	struct tb_record_opts *o = state->input;

	switch (key) {
	case OPT_SESSION:
		if (!tb_session_name_ok(arg))
			argp_error(state, "invalid session name '%s': 1 to 31 letters, digits, "
				   "'.', '_' or '-'", arg);
		o->session = arg;
		return true;
	case OPT_CATS:
	case OPT_XCATS:
		if (*(key == OPT_CATS ? &o->categories : &o->exclude_categories))
			argp_error(state, "give --%scategories once, with a comma-separated list",
				   key == OPT_CATS ? "" : "exclude-");
		*(key == OPT_CATS ? &o->categories : &o->exclude_categories) = arg;
		return true;
	case OPT_KEEP:
		o->keep_running = true;
		return true;
	case OPT_REALTIME:
		o->realtime = true;
		o->no_realtime = false;
		return true;
	case OPT_NO_REALTIME:
		o->no_realtime = true;
		o->realtime = false;
		return true;
	case OPT_PAUSED:
		o->paused = true;
		return true;
	default:
		return false;
	}
}

static error_t record_parse(int key, char *arg, struct argp_state *state)
{
	struct tb_record_opts *o = state->input;
	char *end;

	switch (key) {
	case 'p':
		add_pids(state, o, arg);
		break;
	case OPT_TID:
		add_tids(state, o, arg);
		break;
	case 'o':
		o->out = arg;
		break;
	case 'd':
		errno = 0;
		o->duration = strtod(arg, &end);
		if (errno || *end || o->duration <= 0)
			argp_error(state, "invalid duration '%s': give seconds > 0", arg);
		break;
	case 'b':
	case OPT_KBUF:
	case OPT_FAST_BUF:
	case OPT_FAST_MAX: {
		size_t *size = key == 'b' ? &o->buffer_size :
			       key == OPT_KBUF ? &o->kernel_buffer_size :
			       key == OPT_FAST_MAX ? &o->fast_buffer_max : &o->fast_buffer_size;

		if (tb_parse_size(arg, size) || *size < 4096 || (*size & (*size - 1)) ||
		    *size > (1ull << 30))
			argp_error(state, "invalid buffer size '%s': give a power of two from 4K to 1G, "
				   "e.g. 16M", arg);
		break;
	}
	case OPT_FAST_WAIT:
		o->fast_wait_us = (uint32_t)tb_io_arg_range(state, arg, 0, 1000000, "fast-path wait",
							    "us");
		break;
	case OPT_MAX_PROCS:
		o->max_procs = tb_io_arg_range(state, arg, 1, 1 << 22, "--max-processes", NULL);
		break;
	case OPT_FAST:
		o->no_fast_path = true;
		break;
	case OPT_FAST_RINGS:
		o->max_fast_rings = tb_io_arg_range(state, arg, 1, 1 << 16, "--max-fast-rings", NULL);
		break;
	case OPT_FLUSH:
		o->flush_ms = tb_io_arg_range(state, arg, 1, 10000, "flush interval", "ms");
		break;
	case 'z':
		o->zlevel = tb_io_arg_range(state, arg, 0, 9, "compression level", NULL);
		break;
	case OPT_BTF:
		o->btf_path = arg;
		break;
	case 'v':
		o->verbose = true;
		break;
	case 'q':
		o->quiet = true;
		break;
	case OPT_NO_JSON:
		o->no_json = true;
		break;
	case OPT_SERVE:
		o->serve = arg;
		break;
	case OPT_SERVE_LAG:
		if (tb_parse_size(arg, &o->serve_max_lag) || !o->serve_max_lag)
			argp_error(state, "invalid lag '%s': give a size, e.g. 64M", arg);
		break;
	case ARGP_KEY_ARG:
		/* The first non-option starts the command; the rest is its argv. */
		o->cmd = &state->argv[state->next - 1];
		state->next = state->argc;
		break;
	case ARGP_KEY_END:
		check_record_args(state, o);
		break;
	default:
		if (!parse_kernel_opt(key, arg, state) && !parse_session_opt(key, arg, state))
			return ARGP_ERR_UNKNOWN;
	}
	return 0;
}


int tb_cmd_record(int argc, char **argv, const char *cmdline)
{
	static const struct argp argp = { record_options, record_parse, "[-p PID] [-- COMMAND [ARG...]]",
					  record_doc, NULL, NULL, NULL };
	struct tb_record_opts o = {
		.out = "trace.json",
		.buffer_size = 8 << 20,
		.kernel_buffer_size = 1 << 20,
		.flush_ms = 50,
		.zlevel = 1,
		.cmdline = cmdline,
		.serve_max_lag = 64 << 20,
		.max_procs = 16384,
		.memdump_ms = 1000,
		.fast_buffer_size = 64 << 10,
		.fast_buffer_max = 4 << 20,
		.fast_wait_us = 1000,
		.max_fast_rings = 1024,
	};

	argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, &o);
	return tb_record(&o) ? 1 : 0;
}
