/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fast_int.h - what the fast path's files share, in layers that call
 * only down:
 *   fast.c       the session (its directory, the drain, the end): fast.h
 *   fast_pool.c  the processes (their directories and switches), the spare
 *                rings made ahead of their threads, growth, the rings' slots
 *   fast_read.c  one ring read into records
 *   fast_dir.c   bpffs: directories and pins by descriptor, switches, the
 *                other sessions
 * Not for other users of fast.h.
 */
#ifndef TRACEBPF_FAST_INT_H
#define TRACEBPF_FAST_INT_H

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "fast/fast.h"
#include "tracebpf/fast_ring.h"

#define ERR(fmt, ...) fprintf(stderr, "tracebpf: record: " fmt "\n", ##__VA_ARGS__)

/* A ring in fast_rings: a spare (made ahead, no thread yet), a thread's,
 * or one its thread left for a bigger one (retired: drained, then closed). */
struct fring {
	int fd;                /* -1: a free slot */
	uint32_t pid, tid;     /* tid 0: a spare */
	uint64_t key;
	uint64_t size;         /* bytes of data */
	uint64_t dead;         /* the round its thread was seen gone, 0 alive */
	uint64_t dead_ts;      /* when (its exit or exec record) */
	unsigned fill;         /* per mille, when last drained */
	uint64_t given_ns;     /* when its thread's claim was taken in */
	unsigned long prod0;   /* its producer position then */
	unsigned long rd;      /* read up to here (fast_read) */
	uint32_t in;           /* and so far into the open batch at rd */
	bool torn;             /* the last reading stopped at a sample still BUSY */
	const unsigned char *data;   /* mapped read-only, once read */
	bool spare, retired;
	bool hot;              /* its thread asked for a bigger one (its wait
				* for the drain ran out on it full) */
	bool corrupt;          /* its producer position is past what it holds:
				* read no more (fast_corrupt) */
	bool stale;            /* closed, still in fast_rings (fast_flush_stale) */
	const unsigned long *pos;  /* consumer page, producer page (read-only) */
	char path[16];         /* its pin in its process's directory
				* (f<n>, g<n>), "" once unpinned */
};

/* A process with a directory in this session. */
struct fproc {
	uint32_t pid;
	uid_t uid;
	gid_t gid;
	int ctl_fd;            /* its switch (one per process: it may write it) */
	volatile struct tracebpf_fast_ctl *c;   /* mapped */
	bool refused;          /* another session has it */
	uint32_t made[2];      /* spares published, per pool: the recorder's
				* own count (the switch's `made` is the
				* process's to overwrite) */
	uint32_t seen[2];      /* claims taken in, per pool */
	bool given[2][TRACEBPF_FAST_CLAIMS];   /* claim n taken in, by n, until seen */
	uint32_t slot[2][TRACEBPF_FAST_CLAIMS];   /* spare n's ring, by n */
	unsigned asked;        /* requests this round */
	unsigned waiting;      /* threads it started, not yet given a ring nor gone */
	bool grow_planned;
	char dir[16];          /* its directory's name in the session's */
};

/* A spare to make (fast_pool.c). */
struct plan {
	struct fproc *p;
	int pool;
	uint64_t size;
	uint32_t slot;         /* once its ring is made; ~0u before */
};

struct req {
	uint32_t pid, tid;
	uint64_t key;
};

/* Events lost in a thread's ring: the one it was writing when it was
 * killed, or all it held when the drain could not run. */
struct lost {
	uint32_t pid, tid;
	uint64_t ts;
	uint64_t n;
};

struct tb_fast {
	struct record_bpf *skel;
	struct tb_fast_opts o;
	int tmpl_fd, outer_fd, drain_fd;
	int root_fd, sess_fd;  /* TRACEBPF_FAST_ROOT and sess, opened O_NOFOLLOW
				* (fast_dir.c): every pin is made, given and
				* taken back relative to them */
	char sess[64];
	struct fring *rings;   /* by slot */
	struct fproc **procs;
	size_t nprocs;
	struct req *reqs;
	size_t nreqs, creqs;
	struct plan *plan;
	size_t nplan, cplan;
	uint32_t *forks;       /* processes forked by one with a directory */
	size_t nforks, cforks;
	uint32_t *ended;       /* processes whose end was seen this round
				* without a directory: none is made for them */
	size_t nended, cended;
	uint64_t swept_ns;     /* the last look for processes that ended unseen */
	uint64_t round, lost;
	unsigned fill;             /* tb_fast_fill's */
	struct lost *lost_v;       /* not yet marked in the trace */
	size_t nlost;
	uint64_t drained, steps, drain_ns, made, grown, wakes;   /* tb_fast_stats */
	uint64_t bad;          /* samples that were not a record */
	uint64_t faults;       /* rings whose process was sent to its probes
				* for what it wrote into them (fast_fault) */
	uint64_t over_share;   /* spares not made: their process held its
				* share of the rings (fast_share) */
	uint64_t over_reqs;    /* ring requests left out: too many in a round */
	bool said_full, said_err, said_share;
	bool broken;           /* the drain cannot run: every process on its probes */
	unsigned new_threads;  /* tb_fast_thread calls this round */
	struct tracebpf_cats cats;   /* the categories recorded (tb_fast_cats) */
	int (*put)(void *ctx, void *rec, size_t size);   /* tb_fast_output */
	void *put_ctx;
	void (*between)(void *ctx);   /* tb_fast_between */
	const struct tb_ctl *ctl;     /* tb_fast_ctl_state: the stop as it is now */
};

/* A process's switch set by another session that records it too: not
 * LIVE, so the process takes its probes (both sessions see them). */
#define TB_FAST_SHARED 0x44524853u   /* "SHRD" */

/* The consumer and producer positions' pages, ahead of a ring's data in
 * its mapping. */
#define RING_META (2 * 4096)

/* fast_dir.c: the directories in bpffs, root's, handled by descriptor */
int fast_dir_bpffs(void);
int fast_dir_root(void);
DIR *fast_dir_list(int dirfd);
DIR *fast_dir_entries(void);
int fast_dir_get(const char *name);
int fast_dir_make(int dirfd, const char *name, mode_t mode, const char *shown);
int fast_dir_open(int dirfd, const char *name);
int fast_dir_pin(int fd, int dirfd, const char *name, uid_t uid, gid_t gid, mode_t mode);
int fast_dir_give(int dirfd, const char *name, uid_t uid, gid_t gid);
void fast_dir_remove(int dirfd, const char *name, bool off);
void fast_dir_unpin(int sess_fd, uint32_t pid, const char *leaf);
void fast_remove_dir(const char *path, bool off);


/* fast_dir.c: the switches, and the other sessions' directories */
bool fast_pid_alive(long pid);
int fast_ctl_make(uint32_t wait_us);
void fast_ctl_set(int fd, uint32_t live);
long fast_other_session(void);
long fast_other_recorder(const struct dirent *e);
void fast_share_others(void);
void fast_say_other(long other);
bool fast_other_seen(void);

/* fast_pool.c: the rings' slots */
unsigned long fast_ring_used(const struct fring *r);
void fast_unmap_ring(struct fring *r);
void fast_close_slot(struct tb_fast *f, uint32_t slot);
void fast_flush_stale(struct tb_fast *f);


/* fast_read.c: what a ring is read under, and what was read. */
struct fast_cut {
	unsigned long until;   /* the producer position the round stops at */
	uint64_t stop_ts;      /* events stamped from here on are dropped */
	bool skip;             /* the filters leave the ring's thread out */
	bool final;            /* its thread can write no more into it */
	uint64_t max;          /* samples read at most (0: all) */
	uint64_t max_bytes;    /* and bytes, at least a whole sample (0: all) */
	const struct tb_ctl *live;   /* the stop as it is when a sample is read
				      * (NULL: stop_ts only) */
};

struct fast_taken {
	uint64_t samples;      /* the kernel's consumer position moves past these */
	bool more;             /* stopped at c->max: more to read */
	bool refused;          /* and stops at a header it refuses */
	bool corrupt;          /* nothing read: the producer position is further
				* ahead than the ring holds */
	int err;               /* nothing read: the data cannot be mapped */
};

bool fast_idle(const struct fring *r, unsigned long until);
struct fast_taken fast_read(struct tb_fast *f, struct fring *r, const struct fast_cut *c,
			    uint64_t *lost);

/* fast_pool.c */
/* The processes' claims of spares, taken in before a drain (after the
 * round's cut: a thread writes into a spare only after its claim), and
 * bigger rings made for the threads whose ring filled. */
void fast_take_claims(struct tb_fast *f);
void fast_close_procs(struct tb_fast *f);
/* Every process of the session switched to its probes (TB_FAST_SHARED). */
void fast_share_all(struct tb_fast *f);
void fast_share_proc(struct tb_fast *f, uint32_t pid);

#endif
