/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * usdt.h - other programs' USDT probes (record --usdt): which probes a
 * recording takes, and how each is shown (docs/tracebpf-record.md, "OTHER
 * PROGRAMS' PROBES"). The rules come from the command line and from
 * catalogs (tools/usdt/NAME.usdt, installed in share/tracebpf/usdt), whose
 * lines are the same options without their dashes.
 */
#ifndef TRACEBPF_USDT_H
#define TRACEBPF_USDT_H

#include <stdbool.h>
#include <stddef.h>

#include <linux/types.h>

#include "format/tbrecords.h"
#include "tracebpf.h"

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
