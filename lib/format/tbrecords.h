/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tbrecords.h - the trace's records: what the kernel side hands to user
 * space, and the trace file stores unchanged (docs/format.md). The
 * library owns it: the reader needs nothing of bpf/.
 *
 * Shared by bpf/record.bpf.c (which includes vmlinux.h first) and by user
 * space (which includes <linux/types.h> first). Deliberately no includes of
 * its own: fixed-width __uN types only, no pointers, no padding the compiler
 * could choose differently on the two sides. Every record starts with
 * struct tb_rec_hdr; `size` covers the header and is always a multiple of 8
 * so records can be walked in a buffer without alignment faults.
 *
 * Changing a layout here is a trace-file format change: bump
 * TB_FORMAT_MINOR (compatible additions) or TB_FORMAT_MAJOR (anything else)
 * in lib/format/tbfile.h and document it in docs/format.md.
 */
#ifndef TRACEBPF_TBRECORDS_H
#define TRACEBPF_TBRECORDS_H

enum tb_rec_type {
	TB_REC_EVENT   = 1,  /* a USDT hit: struct tb_rec_event [+ strings] */
	TB_REC_SITE    = 2,  /* a site descriptor, once per (process, site) */
	TB_REC_FORK    = 3,  /* new process or thread of a traced process */
	TB_REC_EXEC    = 4,  /* a traced process replaced its image */
	TB_REC_EXIT    = 5,  /* a traced thread exited (and maybe its process) */
	TB_REC_COMM    = 6,  /* a thread's name (from /proc or the kernel) */
	TB_REC_STATS   = 7,  /* recorder statistics: drops per CPU, counts */
	TB_REC_EVENT_ID = 8,  /* an event_id hit: struct tb_rec_event_id [+ strings] */
	/* Kernel events (bpf/sched.bpf.c), system-wide: TB_STREAM_SCHED. */
	TB_REC_SWITCH  = 9,  /* sched_switch */
	TB_REC_WAKE    = 10, /* sched_waking, sched_wakeup, sched_wakeup_new */
	TB_REC_KTASK   = 11, /* sched_process_fork/exec/exit, task_rename */
	TB_REC_CPU     = 12, /* cpu_idle, cpu_frequency */
	TB_REC_TP      = 13, /* a generic tracepoint (-e): the raw trace entry */
	TB_REC_FORMAT  = 14, /* user space: a tracepoint's tracefs format file */
	TB_REC_CMDLINE = 15, /* user space: a process's command line */
	TB_REC_CTL     = 16, /* user space: recording stopped or started (2.2) */
	TB_REC_GAP     = 17, /* records a CPU lost: when, how many, whose (2.4) */
	TB_REC_CATS    = 18, /* user space: the categories recorded (2.6) */
	TB_REC_RSS     = 19, /* kmem:rss_stat of a traced process (2.7) */
	TB_REC_FILTER  = 20, /* user space: the threads and processes recorded (2.9) */
	TB_REC_USDT    = 21, /* a hit of another program's USDT probe (2.10) */
	TB_REC_USDT_PROBE = 22, /* user space: such a probe and how it is shown (2.10) */
	TB_REC_TYPE_MAX,
};

struct tb_rec_hdr {
	__u16 type;   /* enum tb_rec_type */
	__u16 size;   /* bytes of the whole record, header included, 8-aligned */
	__u32 cpu;    /* CPU the record was produced on (or ~0 for user space) */
	__u64 ts;     /* CLOCK_MONOTONIC ns, bpf_ktime_get_ns() */
	__u32 pid;    /* tgid */
	__u32 tid;    /* thread id */
};

/* Argument types, as encoded in a site descriptor (TRACEBPF_ARG_* in
 * tracebpf/site.h: the same values, asserted below). */
enum tb_arg_type {
	TB_ARG_NONE   = 0,
	TB_ARG_INT    = 1,  /* int64 */
	TB_ARG_UINT   = 2,  /* uint64 */
	TB_ARG_DOUBLE = 3,  /* IEEE-754 bits in a u64 */
	TB_ARG_BOOL   = 4,
	TB_ARG_STR    = 5,  /* user pointer; the string is copied at the hit */
	TB_ARG_PTR    = 6,  /* pointer value, rendered as hex */
};

#define TB_MAX_ARGS      2
/* Longest string argument copied at a hit, terminating NUL included. Longer
 * strings are truncated (the record's str_len says how much was copied). */
#define TB_STR_MAX       256
/* Longest site descriptor (header + cat, name, arg names) read from user
 * memory. A longer one is refused by the header at compile time. */
#define TB_SITE_MAX      512

/* TB_REC_EVENT. When the site has string arguments, their bytes follow the
 * fixed part: str_len[i] bytes for each TB_ARG_STR argument i in order
 * (NUL included, 0 when the pointer could not be read), then padding to 8. */
struct tb_rec_event {
	struct tb_rec_hdr hdr;
	__u64 site;                /* user address of the site descriptor */
	__u64 args[TB_MAX_ARGS];   /* raw values; strings: the user pointer */
	__u16 str_len[TB_MAX_ARGS];
	__u32 flags;               /* TB_EVF_* */
};

#define TB_EVF_STR_FAULT  1u   /* a string argument could not be read */
#define TB_EVF_NAME_FAULT 2u   /* the runtime name could not be read */

/* TB_REC_EVENT_ID: a hit of a `tracebpf:event_id` site (async, flow,
 * counter with id, COPY name). Starts like TB_REC_EVENT (ev.hdr.type says
 * which). Behind the fixed part: the string arguments as in TB_REC_EVENT,
 * then name_len bytes of the runtime name (sites with
 * TRACEBPF_SITEF_COPY_NAME; NUL included, at most TB_STR_MAX), padding to 8. */
struct tb_rec_event_id {
	struct tb_rec_event ev;
	__u64 id;                  /* async / flow / counter id, 0 if none */
	__u16 name_len;
	__u16 pad[3];
};

/* Site descriptor flags (TRACEBPF_SITEF_* in tracebpf/site.h). */
#define TB_SITE_COPY_NAME 0x01u
#define TB_SITE_STEP      0x02u
#define TB_SITE_ID        0x04u

/* The descriptor's own constants, where tracebpf/site.h is included first
 * (record.bpf.c, and the readers through tbfile.h): the same values. */
#ifdef TRACEBPF_SITE_H
_Static_assert(TB_ARG_INT == TRACEBPF_ARG_INT && TB_ARG_UINT == TRACEBPF_ARG_UINT &&
	       TB_ARG_DOUBLE == TRACEBPF_ARG_DOUBLE && TB_ARG_BOOL == TRACEBPF_ARG_BOOL &&
	       TB_ARG_STR == TRACEBPF_ARG_STR && TB_ARG_PTR == TRACEBPF_ARG_PTR,
	       "argument types as tracebpf/site.h has them");
_Static_assert(TB_SITE_COPY_NAME == TRACEBPF_SITEF_COPY_NAME &&
	       TB_SITE_STEP == TRACEBPF_SITEF_STEP && TB_SITE_ID == TRACEBPF_SITEF_ID,
	       "site flags as tracebpf/site.h has them");
_Static_assert(TB_MAX_ARGS == TRACEBPF_MAX_ARGS && TB_SITE_MAX == TRACEBPF_SITE_MAX,
	       "site limits as tracebpf/site.h has them");
#endif

/* Why the kernel side stopped a traced process (the `stopped` map). */
#define TB_STOP_EXEC      1u   /* new image: attach its probes, then SIGCONT */
#define TB_STOP_DLOPEN    2u   /* the loader mapped objects: rescan maps */

/* A ring-only record: a bare struct tb_rec_hdr submitted with a forced
 * wakeup when a traced process waits for user space (stopped at dlopen)
 * and nothing else would wake the recorder before its next
 * --flush-interval tick. The recorder skips it; it is never stored, so it
 * is outside enum tb_rec_type. */
#define TB_RING_KICK      0xffffu

/* The fast path (docs/fast-path.md, "The fast path"): the samples a thread
 * writes into its own user ring buffer, as lib/include/tracebpf/trace.h
 * lays them out (struct tracebpf_fast_rec; user/fast/fast.c asserts that the two
 * agree). The recorder turns them into TB_REC_EVENT and TB_REC_SITE
 * records (user/fast/fast_read.c), and tb_fast_drain moves the ring past them. */
#define TB_FAST_EVENT     1u   /* struct tb_fast_rec */
#define TB_FAST_SITE      2u   /* the head, then the descriptor's bytes */
#define TB_FAST_EVENT_STR 3u   /* tb_fast_rec, tb_fast_str, then the strings */
#define TB_FAST_EVENT_ID  4u   /* tb_fast_rec, tb_fast_str, tb_fast_id, the strings,
				* then the runtime name */
#define TB_FAST_HEAD      24u  /* type .. site */

struct tb_fast_rec {
	__u16 type;
	__u16 size;    /* bytes of the sample, a multiple of 8 */
	__u32 cpu;     /* the thread's CPU (rseq), or ~0 */
	__u64 ts;      /* CLOCK_MONOTONIC ns */
	__u64 site;
	__u64 args[TB_MAX_ARGS];
};

/* After the head of a TB_FAST_EVENT_STR sample: each string argument's
 * bytes (NUL included, at most TB_STR_MAX) follow, in argument order. */
struct tb_fast_str {
	__u16 len[TB_MAX_ARGS];   /* 0: not a string, or a null pointer */
	__u32 flags;              /* TB_FAST_STR_NULL */
};
#define TB_FAST_STR_NULL  1u   /* a string argument was a null pointer */
#define TB_FAST_NAME_NULL 2u   /* a COPY site's runtime name was a null pointer */

struct tb_fast_id {
	__u64 id;
	__u16 name_len;   /* NUL included; 0: none */
	__u16 pad[3];
};

#define TB_EVF_FAST       4u   /* written by the fast path */

/* A ring-only record (never stored): a thread of a traced process asks for
 * its fast-path ring (the `tracebpf:ring` probe). */
#define TB_RING_FAST_REQ  0xfffeu

struct tb_ring_req {
	struct tb_rec_hdr hdr;
	__u64 key;     /* the object: its semaphore's address */
};

/* Requests of one process a millisecond that the kernel side passes on;
 * the rest of that millisecond's are left out and counted (req_limited):
 * a process may make as many as it likes (bpf/fast.bpf.h). */
#define TB_FAST_REQ_PER_MS 256u

/* The context of one run of tb_fast_drain (BPF_PROG_TEST_RUN): in, then
 * out. */
struct tb_fast_drain {
	__u32 slot;      /* in: the ring's index in fast_rings */
	__u32 pid;       /* in: the thread the ring belongs to */
	__u32 tid;
	__u32 skip;      /* out: the filters leave this thread out */
	__u64 limit;     /* in: samples to move the consumer past (0: none) */
	__u64 drained;   /* out: samples moved past */
	__u64 stop_ts;   /* out: events stamped from here on are dropped (a
			  * ctl stop), ~0 when recording */
	__s64 ret;       /* out: bpf_user_ringbuf_drain's return */
};

/* TB_REC_SITE: the descriptor bytes exactly as the application holds them
 * (struct tracebpf_site followed by its NUL-separated strings). */
struct tb_rec_site {
	struct tb_rec_hdr hdr;
	__u64 site;    /* user address, the key events refer to */
	__u32 len;     /* bytes of desc[] that are valid */
	__u32 flags;   /* TB_SITEF_* */
	/* __u8 desc[len], padded to 8 */
};

#define TB_SITEF_FAULT    1u   /* the descriptor could not be read */

/* TB_REC_FORK: hdr.pid/tid are the parent's. */
struct tb_rec_fork {
	struct tb_rec_hdr hdr;
	__u32 child_pid;   /* tgid of the child */
	__u32 child_tid;
	__u32 flags;       /* TB_FORKF_* */
	__u32 pad;
	char comm[16];
};

#define TB_FORKF_THREAD   1u   /* a new thread in the same process */

/* TB_REC_EXEC: hdr.pid/tid after exec. */
struct tb_rec_exec {
	struct tb_rec_hdr hdr;
	__u32 old_tid;     /* tid before exec (a non-leader thread may exec) */
	__u32 pad;
	char comm[16];
	char filename[256];
};

/* TB_REC_EXIT: hdr.pid/tid are the exiting thread. */
struct tb_rec_exit {
	struct tb_rec_hdr hdr;
	__u32 flags;       /* TB_EXITF_* */
	__s32 exit_code;   /* task->exit_code: signal in low 7 bits */
	char comm[16];
};

#define TB_EXITF_PROCESS  1u   /* last thread: the whole process is gone */

/* TB_REC_COMM: a thread's name as seen at hdr.ts. */
struct tb_rec_comm {
	struct tb_rec_hdr hdr;
	char comm[16];
};

/* TB_REC_STATS: written by user space (hdr.cpu = ~0). Totals so far; the last
 * one in a file wins. drops[] has ncpus entries; since 2.3 a __u64
 * lost_procs follows them (when hdr.size leaves room for it: tb_stats_lost_procs
 * in lib/format/tbfile.h). */
struct tb_rec_stats {
	struct tb_rec_hdr hdr;
	__u64 events;      /* records received from the kernel */
	__u64 drops_total; /* records lost because a ring buffer was full */
	__u32 ncpus;
	__u32 pad;
	/* __u64 drops[ncpus] */
	/* __u64 lost_procs: processes that traced processes started and that
	 * could not be traced (the traced set was full), since 2.3 */
};

/* TB_REC_SWITCH: hdr.pid/tid are prev's (tgid, tid), as in every record.
 * 72 bytes: sched_switch is the hot path system-wide. */
struct tb_rec_switch {
	struct tb_rec_hdr hdr;
	__u32 next_tid;
	__u32 next_tgid;
	__s16 prev_prio;   /* task->prio, as ftrace prints it */
	__s16 next_prio;
	__u16 prev_state;  /* TB_TASK_* bits as ftrace reports them; 0 = R */
	__u16 flags;       /* TB_SWF_* */
	char prev_comm[16];
	char next_comm[16];
};

/* prev_state: the kernel's TASK_REPORT bits (S=1, D=2, T=4, t=8, X=16, Z=32,
 * P=64, I=128); TB_TASK_PREEMPTED is ftrace's "R+" (preempted while
 * runnable). */
#define TB_TASK_PREEMPTED 0x100u

/* TB_REC_WAKE: hdr.pid/tid are the waker (current, 0 in interrupts of the
 * idle task); the target is the woken task. */
struct tb_rec_wake {
	struct tb_rec_hdr hdr;
	__u32 kind;        /* TB_WAKE_* */
	__u32 tid;         /* the woken task */
	__u32 tgid;
	__s32 prio;
	__u32 target_cpu;
	__u32 pad;
	char comm[16];
};

enum tb_wake_kind {
	TB_WAKE_WAKING    = 1,  /* sched_waking: try_to_wake_up() started */
	TB_WAKE_WAKEUP    = 2,  /* sched_wakeup: the task is runnable */
	TB_WAKE_WAKEUP_NEW = 3, /* sched_wakeup_new: a new task is runnable */
};

/* TB_REC_KTASK: process and thread lifecycle, system-wide. hdr.pid/tid are
 * current's (fork: the parent; exec: after exec; exit: the exiting thread;
 * rename: the renamed task). */
struct tb_rec_ktask {
	struct tb_rec_hdr hdr;
	__u32 kind;        /* TB_KTASK_* */
	__u32 tid;         /* fork: child tid; exec: old tid; else hdr.tid */
	__u32 tgid;        /* fork: child tgid; else hdr.pid */
	__s32 value;       /* exit: exit_code; fork: child prio; else 0 */
	char comm[16];     /* fork: child; exec, exit: current; rename: old */
	char comm2[16];    /* rename: new name; else zeros */
};

enum tb_ktask_kind {
	TB_KTASK_FORK   = 1,
	TB_KTASK_EXEC   = 2,
	TB_KTASK_EXIT   = 3,
	TB_KTASK_RENAME = 4,
};

/* TB_REC_CPU: power events, hdr.cpu is the CPU that ran the tracepoint. */
struct tb_rec_cpu {
	struct tb_rec_hdr hdr;
	__u32 kind;        /* TB_CPU_* */
	__u32 state;       /* idle: state index, 0xffffffff = exit; freq: kHz */
	__u32 cpu_id;      /* the CPU the event is about */
	__u32 pad;
};

enum tb_cpu_kind {
	TB_CPU_IDLE = 1,
	TB_CPU_FREQUENCY = 2,
};

/* TB_REC_TP: a tracefs tracepoint selected with -e. data[] is the raw trace
 * entry as the kernel builds it (common_type first), decoded in user space
 * with the event's format (TB_REC_FORMAT with the same id). */
#define TB_TP_MAX 512   /* bytes of the entry copied at most */
struct tb_rec_tp {
	struct tb_rec_hdr hdr;
	__u32 id;          /* tracefs event id (= common_type) */
	__u16 len;         /* bytes of data[] */
	__u16 flags;       /* TB_TPF_* */
	/* __u8 data[len], padded to 8 */
};

#define TB_TPF_TRUNCATED  1u  /* the entry may be longer than len */

/* TB_REC_FORMAT: written by user space before the events that use it. text
 * is "SYSTEM\0" then the tracefs format file ("name: ...\nID: ...\n..."). */
struct tb_rec_format {
	struct tb_rec_hdr hdr;
	__u32 id;          /* tracefs event id */
	__u32 len;         /* bytes of text[] */
	/* char text[len], padded to 8 */
};

/* TB_REC_CMDLINE: written by user space for a target at the start and for a
 * traced process after each exec (read while the kernel side holds it
 * stopped, so it is the new image's). text[len] follows: the arguments
 * separated by single spaces, NUL-terminated, padded to 8. */
struct tb_rec_cmdline {
	struct tb_rec_hdr hdr;
	__u32 len;         /* bytes of text, NUL included */
	__u32 pad;
	/* char text[len] */
};

#define TB_CMDLINE_MAX 1024

/* TB_REC_CTL: written by user space (hdr.cpu = ~0, hdr.pid/tid = 0) when
 * the recorder sees `tracebpf ctl stop` or `start` (lib/format/tbctl.h), and at the
 * start of a `record --paused`. hdr.ts is when the switch was set: from
 * then on the kernel side records no application or kernel events (only
 * process lifecycle) until the next TB_REC_CTL with off = 0. */
struct tb_rec_ctl {
	struct tb_rec_hdr hdr;
	__u32 off;         /* 1: stopped, 0: started */
	__u32 by_pid;      /* the `tracebpf ctl` process (the recorder itself
			    * for --paused) */
};

/* TB_REC_CATS: written by user space (hdr.cpu = ~0, hdr.pid/tid = 0) at
 * the start and after each change (`tracebpf ctl enable|disable
 * CATEGORY`), once every process's switch holds the new rules. From hdr.ts
 * on, an application event whose category the rules do not record is not
 * in the trace; a reader leaves out any that is (one a site could not
 * judge itself). rules[len] follows, padded to 8: the entries of
 * tracebpf/cats.h. */
struct tb_rec_cats {
	struct tb_rec_hdr hdr;
	__u32 len;         /* bytes of rules */
	__u32 gen;         /* the rules' generation */
	/* char rules[len] */
};

/* TB_REC_FILTER: written by user space (hdr.cpu = ~0, hdr.pid/tid = 0)
 * at the start of a file when a filter is on (`record --tid`), and after
 * each `tracebpf ctl filter` that changed it. From hdr.ts on, only the
 * application events of the threads in the tid list (TB_RECF_TIDS) and of
 * the processes in the pid list (TB_RECF_PIDS) are recorded; with neither
 * flag, those of every traced thread. ids[ntids + npids] follow, the tids
 * then the pids, each list ascending, padded to 8. */
struct tb_rec_filter {
	struct tb_rec_hdr hdr;
	__u32 which;       /* TB_RECF_* */
	__u32 ntids;
	__u32 npids;
	__u32 pad;
	/* __u32 ids[ntids + npids] */
};

#define TB_RECF_TIDS      1u   /* the thread list applies (TB_FILTER_TID) */
#define TB_RECF_PIDS      2u   /* the process list applies (TB_FILTER_PID) */
#define TB_RECF_MAX_IDS   1024u   /* per list: lib/format/tbctl.h's TB_FILTER_MAX */

/* Other programs' USDT probes (record --usdt). At most this many
 * arguments: libbpf's BPF_USDT_MAX_ARG_CNT. */
#define TB_USDT_MAX_ARGS  12
/* Probe ids (provider:name pairs recorded) per recording. */
#define TB_USDT_MAX_PROBES 4096
/* bpf/record.bpf.c's usdt_strs: the probe is attached only for its
 * semaphore (record --usdt-enable), its hits are not recorded. */
#define TB_USDT_SWITCH_ONLY (1u << 31)

/* TB_REC_USDT: a hit of probe `probe` (its TB_REC_USDT_PROBE), written by
 * bpf/record.bpf.c's tb_usdt. args[] are the note's arguments as libbpf
 * decodes them (sign-extended to 64 bits), nargs of them, zero beyond.
 * For each argument k the probe's description marks as a string, in
 * order of k: str_len[k] bytes copied from the pointer at the hit (NUL
 * included, at most TB_STR_MAX; 0 when unreadable), then padding to 8. */
struct tb_rec_usdt {
	struct tb_rec_hdr hdr;
	__u32 probe;       /* the id of its TB_REC_USDT_PROBE */
	__u8 nargs;        /* arguments the hit's note has */
	__u8 pad;
	__u16 flags;       /* TB_EVF_STR_FAULT */
	__u64 args[TB_USDT_MAX_ARGS];
	__u16 str_len[TB_USDT_MAX_ARGS];
	/* __u8 strings[], padded to 8 */
};

/* TB_REC_USDT_PROBE: written by user space (hdr.cpu = ~0, hdr.pid/tid = 0)
 * when a probe is first attached, ahead of its hits, and again at the start
 * of each file (ctl restart). text[len] follows, padded to 8: "PROVIDER\0
 * NAME\0EVENT\0" (EVENT: the name its events have), then the name of each
 * argument shown, NUL-terminated. */
struct tb_rec_usdt_probe {
	struct tb_rec_hdr hdr;
	__u32 id;
	__u8 kind;         /* TB_USDT_* */
	__u8 nargs;        /* arguments shown, at most TB_USDT_MAX_ARGS */
	__u16 len;         /* bytes of text */
	__u8 arg_src[TB_USDT_MAX_ARGS];   /* shown argument i: the note's arg_src[i] */
	__u8 arg_type[TB_USDT_MAX_ARGS];  /* its TB_ARG_*: INT, UINT, STR or PTR */
	/* char text[len] */
};

enum tb_usdt_kind {
	TB_USDT_INSTANT = 0,   /* each hit an instant */
	TB_USDT_BEGIN   = 1,   /* begins a slice on its thread (--usdt-slice) */
	TB_USDT_END     = 2,   /* ends the thread's innermost slice */
	TB_USDT_COUNTER = 3,   /* a counter: its one argument (--usdt-counter) */
	TB_USDT_ASYNC_BEGIN = 4,   /* begins an async slice of its process, the
				    * note's first argument its id (--usdt-async) */
	TB_USDT_ASYNC_END = 5,     /* ends the one with that id */
};

/* TB_REC_RSS: a traced process's resident memory of one kind, from the
 * kmem:rss_stat tracepoint when the process itself changed it (bpf/record.bpf.c,
 * tb_rss): hdr.pid/tid are the thread that did. Written when the count
 * moved by TB_RSS_STEP bytes or more, or TB_RSS_NS after the last one of
 * that process and kind. */
struct tb_rec_rss {
	struct tb_rec_hdr hdr;
	__u32 member;      /* TB_RSS_FILE, TB_RSS_ANON, TB_RSS_SWAP, TB_RSS_SHMEM */
	__u32 pad;
	__s64 bytes;       /* the count now */
};

enum tb_rss_member {   /* the kernel's MM_* counters */
	TB_RSS_FILE  = 0,
	TB_RSS_ANON  = 1,
	TB_RSS_SWAP  = 2,
	TB_RSS_SHMEM = 3,
};

#define TB_RSS_STEP (256u << 10)
#define TB_RSS_NS   (10ull * 1000 * 1000)

/* TB_REC_GAP: records lost on one CPU because its ring (and the ring it
 * spills into) was full. Written by the kernel side ahead of the next
 * record that CPU writes, or by the recorder when it finds the count still
 * pending after a drain (TB_GAPF_SWEPT): every lost record is in the count
 * of exactly one mark. hdr.cpu is the CPU, hdr.pid = hdr.tid = 0, and
 * hdr.ts the earliest time a lost record can carry: readers that sort by
 * time see the mark before anything recorded after the first loss. */
#define TB_GAP_TIDS 8

/* What the BEGIN and END records a thread lost in one gap did to its
 * stack of open slices, in the order it wrote them, counted from its depth
 * at the gap's start: each BEGIN one up, each END one down. low: the
 * lowest depth reached (<= 0: -low slices open at the gap's start ended
 * in it); net: the depth at its end (net - low slices begun in it are
 * still open after it). */
struct tb_gap_depth {
	__s32 low;
	__s32 net;
};

struct tb_rec_gap {
	struct tb_rec_hdr hdr;
	__u64 last_ts;     /* no lost record carries a later time */
	__u64 count;       /* records lost */
	__u16 kind;        /* TB_GAP_APP or TB_GAP_KERNEL: whose records */
	__u16 flags;       /* TB_GAPF_* */
	__u32 ntids;       /* entries of tid[] */
	__u32 tid[TB_GAP_TIDS];  /* threads some of whose records were lost */
	/* Since 2.11 (hdr.size says whether the record has them): bit i set
	 * when depth[i] is what tid[i] lost; clear when one of its lost
	 * records may have been a BEGIN or an END without saying which
	 * (another program's probe, a site not read, an exec or exit) */
	__u32 depth_known;
	__u32 pad;
	struct tb_gap_depth depth[TB_GAP_TIDS];
};

/* A TB_REC_GAP before 2.11 ends at depth_known. */
#define TB_REC_GAP_SIZE_2_4 80u

enum tb_gap_kind {
	TB_GAP_APP    = 1,  /* bpf/record.bpf.c: events, sites, process lifecycle */
	TB_GAP_KERNEL = 2,  /* bpf/sched.bpf.c: scheduler, power, -e, KTASK */
};

#define TB_GAPF_ALL   1u   /* records of threads not in tid[] were lost too */
#define TB_GAPF_SWEPT 2u   /* taken by the recorder, not by the kernel side */

#define TB_REC_ALIGN(n)   (((n) + 7u) & ~7u)

/* Not in the file: the value of bpf/sched.bpf.c's per-CPU `stage` map, where
 * the hot scheduler programs batch their records (docs/rings.md,
 * "Staging"). Here because user space reads it too, when it cannot have a
 * CPU flush its own buffer (user/kern/sched.c, unstage). buf holds len bytes of
 * whole records; it has room for one more record past TB_STAGE_BYTES so the
 * verifier can bound a write at any len. */
#define TB_STAGE_BYTES 4096u
#define TB_STAGE_MAX_REC 128u

struct tb_stage {
	__u32 len;         /* bytes staged */
	__u32 nrec;        /* records staged (counted as drops if they are lost) */
	__u32 busy;        /* a program on this CPU is between begin and commit */
	__u32 pad;
	__u8 buf[TB_STAGE_BYTES + TB_STAGE_MAX_REC];
};

/* Not in the file: one CPU's records lost since its last TB_REC_GAP, an
 * entry of the `gaps` map of each BPF object (bpf/ring.bpf.h), indexed by
 * CPU and mapped by the recorder, which takes what the kernel side could
 * not write (user/kern/gaps.c). Two cache lines per CPU. `word` holds the
 * count (TB_GAP_COUNT), the programs updating the other fields right now
 * (TB_GAP_IN each) and TB_GAP_TAKING: a taker claims the fields only while
 * no program updates them, and keeps what it took only if `word` did not
 * change meanwhile, so a mark never takes a count without the times,
 * threads and depths of its records (docs/rings.md, "Gaps"). */
struct tb_gap_state {
	__u64 word;
	__u64 first_inv;   /* ~(earliest time of a lost record); 0: none */
	__u64 last_ts;     /* latest time of a lost record */
	__u64 bits;        /* TB_GAPS_ALL, TB_GAPS_NODEPTH(i) */
	__u64 tid[TB_GAP_TIDS / 2];  /* two (tid + 1) per word, 0 = free */
	/* thread i's (tid[i / 2], i & 1 the high half) struct tb_gap_depth,
	 * TB_GAP_DEPTH packed: updated only by that thread, and by takers */
	__u64 depth[TB_GAP_TIDS];
};

#define TB_GAP_IN       (1ull << 48)
#define TB_GAP_TAKING   (1ull << 63)
#define TB_GAP_COUNT(w) ((w) & (TB_GAP_IN - 1))

#define TB_GAPS_ALL        1ull                  /* threads not in tid[] lost records */
#define TB_GAPS_NODEPTH(i) (1ull << (8 + (i)))   /* thread i's depth is not known */

/* A struct tb_gap_depth in one word (low in the high half), so that it
 * changes in one compare-and-swap; 0 is nothing lost. */
#define TB_GAP_DEPTH(low, net) ((__u64)(__u32)(low) << 32 | (__u32)(net))
#define TB_GAP_LOW(d)          ((__s32)((d) >> 32))
#define TB_GAP_NET(d)          ((__s32)(__u32)(d))
#define TB_GAP_BEGIN           TB_GAP_DEPTH(0, 1)     /* one lost BEGIN */
#define TB_GAP_END             TB_GAP_DEPTH(-1, -1)   /* one lost END */

/* What was lost in a, then in b, as one: the lowest depth of either, b's
 * counted from where a ended. */
static inline __u64 tb_gap_depth_then(__u64 a, __u64 b)
{
	__s32 la = TB_GAP_LOW(a), na = TB_GAP_NET(a), lb = na + TB_GAP_LOW(b);

	return TB_GAP_DEPTH(la < lb ? la : lb, na + TB_GAP_NET(b));
}

/* Not in the file: the slot rings (`slot_pos` and `slots` in
 * bpf/record.bpf.c, mapped by the recorder: user/kern/slots.c). Each CPU has a
 * ring of 2^slot_bits fixed-size slots that the probe programs fill with
 * plain stores, no helper call: one slot per event without strings. The
 * recorder turns each slot back into a TB_REC_EVENT or TB_REC_EVENT_ID.
 * `head` is the program's (slots written; stored after the slot), `tail`
 * the recorder's (slots read; stored after reading them), `busy` a
 * program between the two (another one on the CPU, which preempted it,
 * takes the ring buffer instead). docs/rings.md, "Slot rings". */
struct tb_slot {
	__u64 ts;
	__u64 pid_tgid;
	__u64 site;        /* the descriptor's address | TB_SLOT_ID | flags */
	__u64 args[TB_MAX_ARGS];
	__u64 id;          /* TB_SLOT_ID: the event's id */
};

/* User addresses are below 2^56 (also with 5-level page tables): the top
 * byte of tb_slot.site says what the slot holds. 48 bytes a slot, where 64
 * cost the program a cache line's worth more memory traffic per event. */
#define TB_SLOT_ID          (1ull << 63)   /* a TB_REC_EVENT_ID, else TB_REC_EVENT */
#define TB_SLOT_FLAGS_SHIFT 56             /* TB_EVF_* */
#define TB_SLOT_ADDR        ((1ull << TB_SLOT_FLAGS_SHIFT) - 1)

struct tb_slot_pos {
	__u64 head;
	__u64 tail;
	__u64 busy;
	__u64 pad[5];      /* one cache line per CPU */
};

_Static_assert(sizeof(struct tb_rec_hdr) == 24, "tb_rec_hdr layout");
_Static_assert(sizeof(struct tb_rec_event) == 56, "tb_rec_event layout");
_Static_assert(sizeof(struct tb_rec_site) == 40, "tb_rec_site layout");
_Static_assert(sizeof(struct tb_rec_fork) == 56, "tb_rec_fork layout");
_Static_assert(sizeof(struct tb_rec_exec) == 304, "tb_rec_exec layout");
_Static_assert(sizeof(struct tb_rec_exit) == 48, "tb_rec_exit layout");
_Static_assert(sizeof(struct tb_rec_comm) == 40, "tb_rec_comm layout");
_Static_assert(sizeof(struct tb_rec_stats) == 48, "tb_rec_stats layout");
_Static_assert(sizeof(struct tb_rec_event_id) == 72, "tb_rec_event_id layout");
_Static_assert(sizeof(struct tb_rec_switch) == 72, "tb_rec_switch layout");
_Static_assert(sizeof(struct tb_rec_wake) == 64, "tb_rec_wake layout");
_Static_assert(sizeof(struct tb_rec_ktask) == 72, "tb_rec_ktask layout");
_Static_assert(sizeof(struct tb_rec_cpu) == 40, "tb_rec_cpu layout");
_Static_assert(sizeof(struct tb_rec_tp) == 32, "tb_rec_tp layout");
_Static_assert(sizeof(struct tb_slot) == 48, "tb_slot layout");
_Static_assert(((__u64)(TB_EVF_STR_FAULT | TB_EVF_NAME_FAULT) << TB_SLOT_FLAGS_SHIFT) < TB_SLOT_ID,
	       "tb_slot flags");
_Static_assert(sizeof(struct tb_slot_pos) == 64, "tb_slot_pos layout");
_Static_assert(sizeof(struct tb_rec_format) == 32, "tb_rec_format layout");
_Static_assert(sizeof(struct tb_rec_cmdline) == 32, "tb_rec_cmdline layout");
_Static_assert(sizeof(struct tb_rec_ctl) == 32, "tb_rec_ctl layout");
_Static_assert(sizeof(struct tb_rec_gap) == 152 &&
	       __builtin_offsetof(struct tb_rec_gap, depth_known) == TB_REC_GAP_SIZE_2_4,
	       "tb_rec_gap layout");
_Static_assert(sizeof(struct tb_rec_rss) == 40, "tb_rec_rss layout");
_Static_assert(sizeof(struct tb_rec_cats) == 32, "tb_rec_cats layout");
_Static_assert(sizeof(struct tb_rec_filter) == 40, "tb_rec_filter layout");
_Static_assert(sizeof(struct tb_gap_state) == 128, "tb_gap_state layout");
_Static_assert(sizeof(struct tb_stage) == 16 + 4096 + 128, "tb_stage layout");

#endif /* TRACEBPF_TBRECORDS_H */
