// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * swchain.c - each CPU's chain of context switches, and where it breaks
 * (swchain.h).
 *
 * What a break is must be what Perfetto's trace processor counts as
 * mismatched_sched_switch_tids when it reads the same switches as ftrace
 * text: per CPU, from its second switch on, a prev_pid that is not the
 * next_pid of the CPU's switch before (FtraceSchedEventTracker::
 * PushSchedSwitch). The text prints a record's CPU, ~0 as 0
 * (ftrace.c, prefix), so this does too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "swchain.h"

/* More CPUs than Linux has (NR_CPUS is at most 8192): a record of such a
 * CPU is malformed, and not checked. */
#define CPU_MAX 65536u

struct cpu_chain {
	bool seen;                  /* a switch shown on it */
	uint32_t next_tid;          /* the last one's next task */
	char next_comm[16];
	uint64_t ts;                /* its time */
	/* since then: kernel records lost, the recording stopped, a switch
	 * left out */
	bool lost, stopped, left_out;
	uint64_t lost_until;        /* the latest end of a gap of this CPU */
};

struct tb_swchain {
	struct cpu_chain *cpu;
	uint32_t ncpus;
	bool sched_traced;
	bool any;
	uint64_t breaks[TB_SWBREAK_NCAUSES];
};

int tb_swchain_new(struct tb_swchain **ch, bool sched_traced)
{
	*ch = calloc(1, sizeof(**ch));
	if (!*ch)
		return -ENOMEM;
	(*ch)->sched_traced = sched_traced;
	return 0;
}

void tb_swchain_free(struct tb_swchain *ch)
{
	if (!ch)
		return;
	free(ch->cpu);
	free(ch);
}

static uint32_t cpu_of(const struct tb_rec_hdr *h)
{
	return h->cpu == ~0u ? 0 : h->cpu;
}

/* CPU n's chain, made on first use; NULL: malformed or no memory. */
static struct cpu_chain *get_cpu(struct tb_swchain *ch, uint32_t n)
{
	uint32_t cap;
	struct cpu_chain *p;

	if (n < ch->ncpus)
		return &ch->cpu[n];
	if (n >= CPU_MAX)
		return NULL;
	cap = ch->ncpus ? ch->ncpus : 8;
	while (cap <= n)
		cap *= 2;
	p = realloc(ch->cpu, cap * sizeof(*p));
	if (!p)
		return NULL;
	memset(p + ch->ncpus, 0, (cap - ch->ncpus) * sizeof(*p));
	ch->cpu = p;
	ch->ncpus = cap;
	return &p[n];
}

static enum tb_swbreak_cause cause_of(const struct tb_swchain *ch, const struct cpu_chain *c)
{
	if (c->lost)
		return TB_SWBREAK_LOST;
	if (c->stopped)
		return TB_SWBREAK_STOPPED;
	if (c->left_out || ch->sched_traced)
		return TB_SWBREAK_FILTERED;
	return TB_SWBREAK_UNREPORTED;
}

int tb_swchain_add(struct tb_swchain *ch, const struct tb_rec_switch *r, struct tb_swbreak *b)
{
	struct cpu_chain *c = get_cpu(ch, cpu_of(&r->hdr));
	int ret = 0;

	if (!c)
		return cpu_of(&r->hdr) >= CPU_MAX ? 0 : -ENOMEM;
	ch->any = true;
	if (c->seen && c->next_tid != r->hdr.tid) {
		*b = (struct tb_swbreak){
			.cpu = cpu_of(&r->hdr), .cause = cause_of(ch, c),
			.from_ts = c->ts, .ts = r->hdr.ts,
			.last_tid = c->next_tid, .prev_tid = r->hdr.tid,
		};
		memcpy(b->last_comm, c->next_comm, sizeof(b->last_comm));
		memcpy(b->prev_comm, r->prev_comm, sizeof(b->prev_comm));
		ch->breaks[b->cause]++;
		ret = 1;
	}
	c->seen = true;
	c->next_tid = r->next_tid;
	memcpy(c->next_comm, r->next_comm, sizeof(c->next_comm));
	c->ts = r->hdr.ts;
	/* records lost past this switch may still hide the next one's */
	c->lost = c->lost_until > r->hdr.ts;
	c->stopped = false;
	c->left_out = false;
	return ret;
}

void tb_swchain_left_out(struct tb_swchain *ch, const struct tb_rec_switch *r)
{
	struct cpu_chain *c = get_cpu(ch, cpu_of(&r->hdr));

	if (c)
		c->left_out = true;
}

static void lose(struct cpu_chain *c, uint64_t until)
{
	c->lost = true;
	if (until > c->lost_until)
		c->lost_until = until;
}

void tb_swchain_gap(struct tb_swchain *ch, const struct tb_rec_gap *g)
{
	struct cpu_chain *c;

	if (g->kind == TB_GAP_APP)
		return;
	c = get_cpu(ch, cpu_of(&g->hdr));
	if (c) {
		lose(c, g->last_ts);
		return;
	}
	/* not a CPU (or no memory to say which): every CPU's */
	for (uint32_t i = 0; i < ch->ncpus; i++)
		lose(&ch->cpu[i], g->last_ts);
}

void tb_swchain_stopped(struct tb_swchain *ch)
{
	for (uint32_t i = 0; i < ch->ncpus; i++)
		ch->cpu[i].stopped = true;
}

uint64_t tb_swchain_breaks(const struct tb_swchain *ch, enum tb_swbreak_cause cause)
{
	return cause < TB_SWBREAK_NCAUSES ? ch->breaks[cause] : 0;
}

uint64_t tb_swchain_total(const struct tb_swchain *ch)
{
	uint64_t n = 0;

	for (int i = 0; i < TB_SWBREAK_NCAUSES; i++)
		n += ch->breaks[i];
	return n;
}

bool tb_swchain_any(const struct tb_swchain *ch)
{
	return ch->any;
}

uint64_t tb_swchain_low(const struct tb_swchain *ch, uint64_t low)
{
	for (uint32_t i = 0; i < ch->ncpus; i++) {
		const struct cpu_chain *c = &ch->cpu[i];

		if (c->seen && c->next_tid && c->ts < low)
			low = c->ts;
	}
	return low;
}

static const char *const keys[TB_SWBREAK_NCAUSES] = {
	[TB_SWBREAK_LOST] = "records_lost",
	[TB_SWBREAK_STOPPED] = "recording_stopped",
	[TB_SWBREAK_FILTERED] = "filtered",
	[TB_SWBREAK_UNREPORTED] = "not_reported",
};

static const char *const words[TB_SWBREAK_NCAUSES] = {
	[TB_SWBREAK_LOST] = "records lost",
	[TB_SWBREAK_STOPPED] = "recording stopped",
	[TB_SWBREAK_FILTERED] = "filtered out",
	[TB_SWBREAK_UNREPORTED] = "switch not reported",
};

const char *tb_swbreak_key(enum tb_swbreak_cause cause)
{
	return cause < TB_SWBREAK_NCAUSES ? keys[cause] : "?";
}

const char *tb_swbreak_words(enum tb_swbreak_cause cause)
{
	return cause < TB_SWBREAK_NCAUSES ? words[cause] : "?";
}

/* The command line is the recorder's argv joined with spaces: its options
 * come before a "--"; --sched takes its value as "--sched=V" or as the
 * next word, and the last one wins. */
bool tb_swchain_cmdline_traced(const char *cmdline)
{
	bool traced = false, value_next = false;
	const char *p = cmdline;

	while (p && *p) {
		size_t n;

		p += strspn(p, " ");
		n = strcspn(p, " ");
		if (!n)
			break;
		if (value_next)
			traced = n == 6 && !strncmp(p, "traced", 6);
		else if (n == 2 && !strncmp(p, "--", 2))
			break;
		else if (n > 8 && !strncmp(p, "--sched=", 8))
			traced = n == 14 && !strncmp(p + 8, "traced", 6);
		value_next = !value_next && n == 7 && !strncmp(p, "--sched", 7);
		p += n;
	}
	return traced;
}
