/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* links.h - a growing array of BPF links (the recorder's, an object's,
 * the scheduler's). */
#ifndef TRACEBPF_LINKS_H
#define TRACEBPF_LINKS_H

#include <errno.h>
#include <stdlib.h>
#include <bpf/libbpf.h>

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
