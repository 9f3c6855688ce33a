/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tracebpf/cats.h - which categories a recording records: the one
 * definition of the rules (record --categories and --exclude-categories,
 * tracebpf ctl enable|disable CATEGORY) and of how a category is judged
 * by them.
 *
 * Included by tracebpf/trace.h (each site judges its category by the
 * rules in its process's fast-path switch), the recorder (which writes
 * them there, in its control map and in the trace file) and the converter
 * (which judges the events that could not judge themselves). No includes
 * of its own: the includer provides uint32_t.
 *
 * The rules are entries "+GLOB" or "-GLOB", each ended by a NUL, in order.
 * A category is recorded when the last entry whose glob matches it is a
 * "+" one, and not when it is a "-" one or none matches. A glob matches
 * the whole category; `*` stands for any run of characters and `?` for
 * one. A category named "disabled-by-default-..." is matched by a "+"
 * entry only when the entry's glob itself starts so (Chromium's
 * convention: `*` does not turn them on). A site's category may be a
 * group, "a,b": it is recorded when one of its members is. "__metadata"
 * (process and thread names, sort indices) is always recorded.
 */
#ifndef TRACEBPF_CATS_H
#define TRACEBPF_CATS_H

#define TRACEBPF_CATS_BYTES 4088u   /* rules, NULs included */

/* The rules as the recorder publishes them. gen is even and never 0 while
 * the rules can be read, odd while they are being rewritten; it changes
 * with every change. */
struct tracebpf_cats {
	uint32_t gen;
	uint32_t len;                    /* bytes of rules[] in use */
	char rules[TRACEBPF_CATS_BYTES];
};

#define TRACEBPF__DBD "disabled-by-default-"
#define TRACEBPF__DBD_LEN 20u

#ifdef __cplusplus
#define TRACEBPF__CATS_FN inline __attribute__((unused))
#else
#define TRACEBPF__CATS_FN static inline __attribute__((unused))
#endif

/* Whether glob g (gn bytes) matches all of s (sn bytes). */
TRACEBPF__CATS_FN int tracebpf_glob(const volatile char *g, uint32_t gn, const char *s,
				    uint32_t sn)
{
	uint32_t gi = 0, si = 0, star = gn + 1, mark = 0;

	while (si < sn) {
		if (gi < gn && (g[gi] == '?' || g[gi] == s[si])) {
			gi++;
			si++;
		} else if (gi < gn && g[gi] == '*') {
			star = gi++;
			mark = si;
		} else if (star <= gn) {
			gi = star + 1;
			si = ++mark;
		} else {
			return 0;
		}
	}
	while (gi < gn && g[gi] == '*')
		gi++;
	return gi == gn;
}

/* Whether s (n bytes) starts with "disabled-by-default-". */
TRACEBPF__CATS_FN int tracebpf__cats_dbd(const volatile char *s, uint32_t n)
{
	uint32_t i;

	if (n < TRACEBPF__DBD_LEN)
		return 0;
	for (i = 0; i < TRACEBPF__DBD_LEN; i++)
		if (s[i] != TRACEBPF__DBD[i])
			return 0;
	return 1;
}

/* Whether the single category m (n bytes) is recorded under rules. */
TRACEBPF__CATS_FN int tracebpf_cats_member(const volatile char *rules, uint32_t len,
					   const char *m, uint32_t n)
{
	int on = 0, dbd = tracebpf__cats_dbd(m, n);
	uint32_t i = 0, e;

	while (i < len) {
		for (e = i + 1; e < len && rules[e]; e++)
			;
		if (e > i + 1 && tracebpf_glob(rules + i + 1, e - i - 1, m, n) &&
		    (rules[i] == '-' || !dbd || tracebpf__cats_dbd(rules + i + 1, e - i - 1)))
			on = rules[i] == '+';
		i = e + 1;
	}
	return on;
}

/* Whether category group cat ("a" or "a,b", NUL-terminated) is recorded
 * under rules (len bytes). */
TRACEBPF__CATS_FN int tracebpf_cats_on(const volatile char *rules, uint32_t len,
				       const char *cat)
{
	static const char meta[] = "__metadata";
	uint32_t i = 0, s = 0;

	for (i = 0; cat[i] == meta[i]; i++)
		if (!cat[i])
			return 1;   /* names and sort indices: always */
	i = 0;
	if (len > TRACEBPF_CATS_BYTES)
		len = TRACEBPF_CATS_BYTES;
	for (;; i++) {
		if (cat[i] != ',' && cat[i])
			continue;
		if (tracebpf_cats_member(rules, len, cat + s, i - s))
			return 1;
		if (!cat[i])
			return 0;
		s = i + 1;
	}
}

#endif /* TRACEBPF_CATS_H */
