// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* main.c - tracebpf command line: `tracebpf record|convert|info|report|dump|pack|ctl|version`. */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/probes.h"
#include "convert/convert.h"
#include "cli/cli.h"
#include "ctl/ctl.h"
#include "report/report.h"
#include "kern/kern.h"
#include "tracebpf.h"

const char *argp_program_version = "tracebpf " TRACEBPF_VERSION;
const char *argp_program_bug_address = "the tracebpf issue tracker";

static const char top_doc[] =
	"tracebpf -- trace C/C++ applications with USDT probes and BPF\n\n"
	"Commands:\n"
	"  record     record a running process (-p PID) or a command (-- CMD)\n"
	"  convert    render a trace file (.tbt) as Chrome trace JSON\n"
	"  info       describe a trace file: version, streams, events, drops\n"
	"  report     summarize a trace: losses, slices by total and self time\n"
	"  dump       print a trace file one line per record\n"
	"  list       list the sites a program carries (tracebpf's 'perf list')\n"
	"  pack       rewrite a trace at maximum compression for transport\n"
	"  ctl        control a running recording (start|stop|status|list|filter)\n"
	"  version    print the version\n\n"
	"Run 'tracebpf COMMAND --help' for a command's options.";

/* ---- record ---- */
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

static int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

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

		if (parse_size(arg, size) || *size < 4096 || (*size & (*size - 1)) ||
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
		if (parse_size(arg, &o->serve_max_lag) || !o->serve_max_lag)
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

static char *join_args(int argc, char **argv)
{
	size_t len = 1;
	char *s;

	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	s = calloc(1, len);
	if (!s)
		return NULL;
	for (int i = 0; i < argc; i++) {
		if (i)
			strcat(s, " ");
		strcat(s, argv[i]);
	}
	return s;
}

static int cmd_record(int argc, char **argv, char *cmdline)
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

/* ---- convert ---- */
struct convert_args {
	struct tb_io_source src;   /* first: tb_io_source_parse's state->input */
	const char *out;
	bool verbose;
	struct tb_filter_args filter;   /* tb_filter_argp's input */
	size_t split;
};

enum { OPT_SPLIT = 2000 };

static const struct argp_option convert_options[] = {
	{ "output", 'o', "FILE", 0, "Output JSON (default: the input with .json; - for stdout; "
				     "FILE.json.gz is gzip-compressed)", 0 },
	{ "follow", 'f', NULL, 0, "Read a trace still being written, until the recorder "
				  "finishes it or Ctrl-C", 0 },
	{ "connect", 'c', "SOCKET", 0, "Read a live recording from 'record --serve SOCKET'", 0 },
	{ "verbose", 'v', NULL, 0, "Say more", 0 },
	{ "split", OPT_SPLIT, "SIZE", 0, "Write OUT-001.json, OUT-002.json, ... of about "
					 "SIZE each (K/M/G suffix, at least 64K) instead of "
					 "OUT.json, each a trace of its own", 0 },
	{ 0 },
};

/* "tracebpf: convert: bad --OPT 'ARG': WHY", then argp's "Try --help"
 * and exit 64. */
static void bad_option(struct argp_state *state, const char *opt, const char *arg,
		       const char *why)
{
	fprintf(stderr, "tracebpf: convert: bad --%s '%s': %s\n", opt, arg, why);
	argp_state_help(state, stderr, ARGP_HELP_STD_ERR);
}

static error_t convert_parse(int key, char *arg, struct argp_state *state)
{
	struct convert_args *a = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		a->filter.cmd = "convert";
		state->child_inputs[0] = &a->filter;
		break;
	case 'o': a->out = arg; break;
	case 'v': a->verbose = true; break;
	case OPT_SPLIT:
		if (parse_size(arg, &a->split) || a->split < (64 << 10))
			bad_option(state, "split", arg, "give a size of at least 64K, e.g. 400M");
		break;
	default:   /* the trace source: as dump and info */
		return tb_io_source_parse(key, arg, state);
	}
	return 0;
}

static int cmd_convert(int argc, char **argv)
{
	static const struct argp_child children[] = { { &tb_filter_argp, 0, NULL, 1 }, { 0 } };
	static const struct argp argp = { convert_options, convert_parse, "FILE.tbt",
					  "Render a trace file as Chrome trace JSON (Perfetto UI, "
					  "chrome://tracing, Chrome DevTools).", children, NULL, NULL };
	struct convert_args a = {};
	char out[PATH_MAX];
	struct tb_convert_opts co = {};
	int ret;

	argp_parse(&argp, argc, argv, 0, NULL, &a);
	if (!a.src.in)
		a.src.in = "-";   /* --connect alone: the output defaults to stdout */
	if (!a.out) {
		size_t len = strlen(a.src.in);
		int base = len > 4 && !strcmp(a.src.in + len - 4, ".tbt") ? (int)len - 4 : (int)len;

		if (!strcmp(a.src.in, "-"))
			snprintf(out, sizeof(out), "-");
		else
			snprintf(out, sizeof(out), "%.*s.json", base, a.src.in);
		a.out = out;
	}
	co.in = a.src.in;
	co.out = a.out;
	co.verbose = a.verbose;
	co.follow = a.src.follow;
	co.connect = a.src.connect;
	co.filter = &a.filter.filter;
	co.split = a.split;
	if (a.split && (!strcmp(a.out, "-") || tb_is_gz(a.out))) {
		fprintf(stderr, "tracebpf: convert: --split writes files NAME-001.json, ...: give "
			"-o NAME.json (neither stdout nor .gz)\n");
		tb_filter_free(&a.filter.filter);
		return 64;
	}
	ret = tb_convert(&co) ? 1 : 0;
	tb_filter_free(&a.filter.filter);
	return ret;
}

/* What a command printed must have reached stdout: a full disk would
 * otherwise pass for success (coreutils' close_stdout does the same). */
static int check_stdout(const char *cmd, int ret)
{
	int err;

	errno = 0;
	if ((!fflush(stdout) && !ferror(stdout)) || ret)
		return ret;   /* a command that failed has said why */
	err = errno;   /* 0: an earlier write failed, its errno is gone */
	fprintf(stderr, "tracebpf: %s: failed to write '<stdout>': %s\n", cmd,
		err ? strerror(err) : "a write failed, the output is cut short");
	if (!err)
		fprintf(stderr, "tracebpf: hint: check the free space where the output goes, "
				"or redirect it to another file system\n");
	else if (tb_write_hint(-err))
		fprintf(stderr, "tracebpf: hint: %s\n", tb_write_hint(-err));
	return ret ? ret : 1;
}

/* libtracebpf's warnings and notes, on stderr like every message. */
static void print_stderr(enum tracebpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	vfprintf(stderr, fmt, ap);
}

int main(int argc, char **argv)
{
	static const struct argp top = { NULL, NULL, "COMMAND [ARG...]", top_doc, NULL, NULL, NULL };
	char *cmdline;
	int ret;

	tracebpf_set_print(print_stderr);
	if (argc < 2 || argv[1][0] == '-') {
		if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))) {
			puts(argp_program_version);
			return 0;
		}
		if (argc < 2)
			fprintf(stderr, "tracebpf: no command given: try 'tracebpf --help'\n");
		argp_parse(&top, argc, argv, 0, NULL, NULL);
		return 64;
	}
	cmdline = join_args(argc, argv);
	/* argv[1..] as the command's argv: argv[0] becomes "tracebpf record" */
	if (!strcmp(argv[1], "record")) {
		argv[1] = "tracebpf record";
		ret = cmd_record(argc - 1, argv + 1, cmdline);
	} else if (!strcmp(argv[1], "convert")) {
		argv[1] = "tracebpf convert";
		ret = cmd_convert(argc - 1, argv + 1);
	} else if (!strcmp(argv[1], "info")) {
		argv[1] = "tracebpf info";
		ret = tb_cmd_info(argc - 1, argv + 1);
	} else if (!strcmp(argv[1], "list")) {
		argv[1] = "tracebpf list";
		ret = tb_cmd_list(argc - 1, argv + 1);
	} else if (!strcmp(argv[1], "dump")) {
		argv[1] = "tracebpf dump";
		ret = tb_cmd_dump(argc - 1, argv + 1);
	} else if (!strcmp(argv[1], "report")) {
		argv[1] = "tracebpf report";
		ret = tb_cmd_report(argc - 1, argv + 1);
	} else if (!strcmp(argv[1], "pack")) {
		argv[1] = "tracebpf pack";
		ret = tb_cmd_pack(argc - 1, argv + 1);
	} else if (!strcmp(argv[1], "ctl")) {
		argv[1] = "tracebpf ctl";
		ret = tb_cmd_ctl(argc - 1, argv + 1);
	} else if (!strcmp(argv[1], "version")) {
		puts(argp_program_version);
		ret = 0;
	} else {
		fprintf(stderr, "tracebpf: unknown command '%s': try 'tracebpf --help'\n", argv[1]);
		ret = 64;
	}
	free(cmdline);
	if (ret != 64)   /* usage errors print to stderr only */
		ret = check_stdout(strncmp(argv[1], "tracebpf ", 9) ? argv[1] : argv[1] + 9, ret);
	return ret;
}
