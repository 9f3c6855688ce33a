/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * kern.h - user/kern/'s interface: what the recorder reads from the
 * kernel besides the fast path. The per-CPU BPF ring buffers (rings.c),
 * the gap marks of what a CPU lost (gaps.c), the slot rings of the
 * probes' hot path (slots.c), the scheduler's programs and their events
 * (sched.c), and the BPF links the loaders keep. Each part keeps the
 * head comment it had as a header of its own.
 */
#ifndef TRACEBPF_KERN_KERN_H
#define TRACEBPF_KERN_KERN_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <linux/types.h>
#include <errno.h>
#include <stdlib.h>
#include <bpf/libbpf.h>

/* ---- rings.c ---- */
/*
 * rings.c - a set of per-CPU BPF ring buffers behind an ARRAY_OF_MAPS
 * (bpf/ring.bpf.h, `rings`). The recorder owns one set for the
 * application's events (--buffer-size, created in record_attach.c),
 * sched.c another for kernel events (--kernel-buffer-size); both are
 * drained by the recorder's one ring_buffer manager.
 *
 * Order of calls: tb_rings_create (before the object is loaded: sizes the
 * outer map and gives it its inner template), then after load
 * tb_rings_insert, and tb_rings_close at the end. 0 or a negative errno;
 * each prints its own error. tb_hint_bpf is the loaders' shared hint for a
 * failed bpf(2) call.
 */

struct bpf_map;
struct ring_buffer;
typedef int (*tb_ring_fn)(void *ctx, void *data, size_t size);

struct tb_rings {
	int *fds;            /* one RINGBUF per possible CPU */
	int n;
	const char *what;    /* "ring buffer", "kernel ring buffer": for errors */
};

/* n rings of size bytes, named PREFIX<cpu>; outer (unloaded) gets n entries
 * and ring 0 as its inner template. option (the one that sets size) is
 * named in the hint when the kernel is out of memory. */
int tb_rings_create(struct tb_rings *r, struct bpf_map *outer, int n, size_t size,
		    const char *prefix, const char *what, const char *option);
/* After load: ring i at index i of outer_fd, each added to *rb (created on
 * first use) with fn(ctx, ...) as its callback. */
int tb_rings_insert(struct tb_rings *r, int outer_fd, struct ring_buffer **rb,
		    tb_ring_fn fn, void *ctx);
void tb_rings_close(struct tb_rings *r);

/* The hint after a bpf(2) call failed with err: EPERM or EACCES (the
 * recorder checked its capabilities first) means something else refuses BPF
 * here, lockdown, a seccomp filter or a security module, and it says which
 * it can tell; EMFILE/ENFILE the open-files limit; any other error gets
 * `otherwise` (NULL: no hint). */
void tb_hint_bpf(int err, const char *otherwise);

/* ---- gaps.c ---- */
/*
 * gaps.c - the recorder's side of the gap marks (bpf/ring.bpf.h `gaps`,
 * struct tb_gap_state in lib/format/tbrecords.h): the kernel side writes a
 * TB_REC_GAP ahead of the next record of the CPU that lost records; what
 * is still pending after a drain (the CPU wrote nothing since, or its
 * mark was being updated) the recorder takes here and appends to the
 * trace itself, so that a mark is never later than the round after its
 * losses, and none is left behind at the end.
 *
 * Order of calls: tb_gaps_size before the object is loaded, tb_gaps_open
 * after, tb_gaps_sweep after each drain, tb_gaps_close at the end.
 */

struct bpf_map;
struct tb_writer;
struct tb_gap_state;

struct tb_gaps {
	struct tb_gap_state *map;  /* mapped: one entry per possible CPU */
	size_t bytes;
	int ncpus;
	uint16_t kind;             /* enum tb_gap_kind of the object's records */
};

/* One entry per CPU (before load). 0 or a negative errno. */
int tb_gaps_size(struct bpf_map *map, int ncpus);
/* Maps the loaded `gaps` map. 0 or a negative errno (nothing printed). */
int tb_gaps_open(struct tb_gaps *g, int map_fd, int ncpus, uint16_t kind);
/* Appends a TB_REC_GAP (TB_GAPF_SWEPT) to w for every CPU with losses not
 * yet marked. Returns the number of marks written or the writer's error. */
int tb_gaps_sweep(struct tb_gaps *g, struct tb_writer *w);
void tb_gaps_close(struct tb_gaps *g);

/* ---- slots.c ---- */
/*
 * slots.c - the recorder's side of the slot rings (struct tb_slot in
 * lib/format/tbrecords.h; `slot_pos` and `slots` in bpf/record.bpf.c): each CPU's
 * fixed-size events, which the probe programs write with plain stores.
 * The recorder maps both arrays and turns every slot it reads back into
 * the TB_REC_EVENT or TB_REC_EVENT_ID the ring buffer would have carried.
 *
 * Order of calls: tb_slots_create before the object is loaded, tb_slots_open
 * after, tb_slots_consume wherever the ring buffers are consumed,
 * tb_slots_close at the end.
 */

struct bpf_map;
struct tb_slot;
struct tb_slot_pos;

struct tb_slots {
	struct tb_slot_pos *pos;   /* mapped: one per possible CPU */
	struct tb_slot *slot;      /* mapped: ncpus << bits */
	size_t pos_bytes, slot_bytes;
	int ncpus;
	unsigned bits;             /* log2 of each CPU's slots: the object's slot_bits */
};

/* Before load: sizes `pos` for ncpus and creates the slots of `slots`
 * (2^bits per CPU, the most that fit in bytes), as tb_rings_create
 * creates rings, so that memory that is short is said as such, naming
 * option. 0 or a negative errno (said). */
int tb_slots_create(struct tb_slots *s, struct bpf_map *pos, struct bpf_map *slots,
		    int ncpus, size_t bytes, const char *option);
/* After load: maps both. 0 or a negative errno (nothing printed). */
int tb_slots_open(struct tb_slots *s, int pos_fd, int slots_fd);
/* Hands every slot written since the last call to fn(ctx, record, size) as
 * a TB_REC_EVENT or TB_REC_EVENT_ID of its CPU, oldest first, and frees
 * them. Returns the number of records. */
size_t tb_slots_consume(struct tb_slots *s, int (*fn)(void *ctx, void *data, size_t size),
			void *ctx);
void tb_slots_close(struct tb_slots *s);

/* ---- sched.c ---- */
/*
 * sched.c - scheduler, power and generic (-e) tracepoints for `tracebpf
 * record`: the user side of bpf/sched.bpf.c.
 *
 * Order of calls, inside tb_record's open -> load -> attach:
 *   tb_sched_prepare   (before anything is loaded: checks -e specs, reads
 *                       their tracefs formats; the errors a user can fix)
 *   tb_sched_load      (after record.bpf.c is loaded: shares its traced
 *                       set; creates its own rings and drop counter)
 *   tb_sched_write_formats, tb_sched_attach
 *   tb_sched_flush     (before each drain of the rings)
 *   tb_sched_sweep_gaps (after each drain)
 *   tb_sched_destroy
 * Every function returns 0 or a negative errno and prints its own error.
 */

struct bpf_object;

struct tb_writer;
struct tb_sched;

/* The scheduler and power tracepoints `record` attaches, in this order; bit
 * i of tb_sched_opts.select is tb_sched_tracepoints[i]. The process
 * lifecycle ones (TB_SCHED_ALWAYS) are rare and name every thread: they are
 * on whenever scheduler events are. */
extern const char *const tb_sched_tracepoints[];
#define TB_SCHED_NTP 10
#define TB_SCHED_ALL     ((1u << TB_SCHED_NTP) - 1)
#define TB_SCHED_ALWAYS  0xf0u   /* sched_process_fork/exec/exit, task_rename */
#define TB_SCHED_POWER   0x300u  /* cpu_idle, cpu_frequency: not with --sched=traced */

struct tb_sched_opts {
	bool sched;              /* scheduler + power tracepoints (not --no-sched) */
	unsigned select;         /* --sched-events: bits of tb_sched_tracepoints,
				  * TB_SCHED_ALWAYS included (0 = all) */
	bool traced_only;        /* --sched=traced */
	char **events;           /* -e SUBSYS:EVENT specs (globs allowed) */
	int nevents;
	size_t ring_size;        /* --kernel-buffer-size: bytes per CPU, power of 2 */
	bool verbose;
	const char *session;     /* the session's name, in the programs' metadata */
};

/* Mounts tracefs if it is not (said on stderr); why: what needs it. */
int tb_sched_ensure_tracefs(const char *why);

/* Writes a BPF object's `bpf_metadata_session` (bpf/ring.bpf.h) before its
 * load: the session's name, which `bpftool prog show` prints. */
void tb_bpf_metadata_session(char *dst, size_t size, const char *session);

int tb_sched_prepare(struct tb_sched **s, const struct tb_sched_opts *o);
/* Loads bpf/sched.bpf.c with its traced, spill and tb_ctl maps pointing at
 * traced_fd, spill_fd and ctl_fd (record.bpf.c's traced, rings and tb_ctl),
 * and its own per-CPU rings of ring_size bytes, which it adds to *rb
 * (created if NULL) with fn(ctx, ...) as callback. */
int tb_sched_load(struct tb_sched *s, int traced_fd, int spill_fd, int ctl_fd,
		  struct ring_buffer **rb, tb_ring_fn fn, void *ctx);
/* Adds the records the kernel rings lost on CPU i to vals[i] (i < n) and
 * their total to *total (0 when nothing is loaded). Prints nothing: the
 * caller says what an error means. */
int tb_sched_add_drops(struct tb_sched *s, __u64 *vals, int n, __u64 *total);
/* The kernel records' gap marks still pending, into w (user/kern/gaps.c): the
 * number written or the writer's error; prints nothing. */
int tb_sched_sweep_gaps(struct tb_sched *s, struct tb_writer *w);
/* One TB_REC_FORMAT record per -e event, stamped ts. */
int tb_sched_write_formats(struct tb_sched *s, struct tb_writer *w, __u64 ts);
int tb_sched_attach(struct tb_sched *s);
/* Moves the records the hot scheduler programs staged on every CPU into the
 * ring buffers (bpf/sched.bpf.c, "stage"): call before draining them. If the
 * kernel refuses to run the flush on a CPU, it warns, hands every CPU's
 * staged records to the ring callback itself, and turns staging off for the
 * rest of the recording; an error only if it cannot read them either. */
int tb_sched_flush(struct tb_sched *s);
/* The map of the -e events switched off (tb_tp_off), or -1 when loaded
 * with none. */
int tb_sched_tp_off_fd(struct tb_sched *s);

/* `tracebpf ctl enable -e SPEC` of a recording that does not record it:
 * the tracepoints SPEC names (one, or a glob), their formats into w
 * (stamped ts), listed for ctl disable, attached. 0, or a negative errno
 * (said): -ENOTSUP when the recording loaded no kernel programs
 * (--no-sched without -e), -EEXIST when it records them all already. */
int tb_sched_add_event(struct tb_sched *s, const char *spec, struct tb_writer *w, __u64 ts);
void tb_sched_destroy(struct tb_sched *s);
/* The scheduler programs' BPF object (its maps pinned with the session's),
 * or NULL. */
struct bpf_object *tb_sched_object(const struct tb_sched *s);

/* Parse --sched-events: "all" or a comma-separated list of names from
 * tb_sched_tracepoints. Sets *select (TB_SCHED_ALWAYS always included);
 * -EINVAL with *bad pointing at the first unknown name (a static copy). */
int tb_sched_parse_select(const char *list, unsigned *select, const char **bad);

/* Parse "SUBSYS:EVENT" (each part a name or an fnmatch glob). 0 or -EINVAL. */
int tb_sched_parse_spec(const char *spec, char *sys, size_t syslen, char *ev, size_t evlen);

/* ---- the BPF links ---- */
/* links - a growing array of BPF links (the recorder's, an object's,
 * the scheduler's). */

/* Appends link to (*v)[*n]; on -ENOMEM the link is destroyed. */
static inline int tb_links_add(struct bpf_link ***v, int *n, struct bpf_link *link)
{
	struct bpf_link **nl = realloc(*v, (*n + 1) * sizeof(*nl));

	if (!nl) {
		bpf_link__destroy(link);
		return -ENOMEM;
	}
	*v = nl;
	nl[(*n)++] = link;
	return 0;
}

/* Destroys every link of the array and frees it: empty again. */
static inline void tb_links_destroy(struct bpf_link ***v, int *n)
{
	for (int i = 0; i < *n; i++)
		bpf_link__destroy((*v)[i]);
	free(*v);
	*v = NULL;
	*n = 0;
}

#endif
