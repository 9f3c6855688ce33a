// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pftrace_part.c - each Perfetto file's start and end, and the parts of
 * --split (docs/perfetto.md, "Parts").
 *
 * A file starts with the system's information; it ends with the ENDs of
 * the slices still open, the kernel's bundles, the process tree, every
 * name and the metadata. With --split, a part that has reached its size
 * ends so at the next event, and the next starts as a file of its own:
 * every sequence is started again (its state cleared, its strings
 * interned anew) and every track described again, so each part opens
 * alone. A slice is whole in the part it began in, and so is an async
 * slice, but for one open across four times the size.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "perfetto/pftrace_int.h"
#include "util/print.h"

#define PFX "tracebpf: convert: "

enum {
	PKT_CHROME_EVENTS = 5, CEB_METADATA = 2, CM_NAME = 1, CM_JSON = 5,
	PKT_SYSTEM_INFO = 45, SI_UTSNAME = 1, UTS_SYSNAME = 1, UTS_RELEASE = 3,
	TE_TRACK_UUID = 11, TE_DEBUG = 4, DA_STRING = 6, DA_NAME = 10,
};

/* The JSON metadata, as Chrome's metadata (a "tracebpf" entry). */
static int metadata(struct pf *p, const struct tb_model *m)
{
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);
	struct tb_pb *b = p->pkt;
	int err;

	if (!f)
		return -ENOMEM;
	err = tb_model_metadata(m, p->r, p->kernel_events, f);
	if (fclose(f) && !err)
		err = -ENOMEM;
	if (!err) {
		pf_packet_begin(p, &p->own, p->last_ts, false);
		tb_pb_begin(b, PKT_CHROME_EVENTS);
		tb_pb_begin(b, CEB_METADATA);
		tb_pb_string(b, CM_NAME, "tracebpf");
		tb_pb_bytes(b, CM_JSON, text, n);
		err = pf_packet_end(p, &p->own);
	}
	free(text);
	return err;
}

/* The kernel's release: trace processor reads the switches' task states
 * by it. */
static int system_info(struct pf *p)
{
	const struct tb_file_info *info = tb_reader_info(p->r);
	struct tb_pb *b = p->pkt;

	pf_packet_begin(p, &p->own, info->start_ts, false);
	tb_pb_begin(b, PKT_SYSTEM_INFO);
	tb_pb_begin(b, SI_UTSNAME);
	tb_pb_string(b, UTS_SYSNAME, "Linux");
	tb_pb_bytes(b, UTS_RELEASE, info->kernel, strnlen(info->kernel, sizeof(info->kernel)));
	return pf_packet_end(p, &p->own);
}

int pf_file_open(struct pf *p, FILE *f)
{
	int err = pf_out_open(&p->out, f, p->o.compress);

	return err ? err : system_info(p);
}

/* The ENDs of every slice still open, each at its end. */
static int end_all(struct pf *p)
{
	int err = 0;

	for (size_t i = 0; i < p->seqs.cap && !err; i++) {
		struct pf_seq *s = p->seqs.vals[i];

		while (s && s->depth && !err) {
			if (s->stack[s->depth - 1].end > p->last_ts)
				p->last_ts = s->stack[s->depth - 1].end;
			err = pf_end_slice(p, s);
		}
	}
	return err;
}

int pf_file_close(struct pf *p, const struct tb_model *m)
{
	int err = end_all(p);

	if (!err)
		err = pf_sched_flush(p);
	if (!err)
		err = pf_sched_tasks(p, p->last_ts);
	if (!err)
		err = pf_name_all(p, m, p->last_ts);
	if (!err)
		err = metadata(p, m);
	if (!err)
		tb_model_counts(m, &p->counts);
	return err;
}

/* OUT-NNN.pftrace of OUT.pftrace (or .perfetto-trace). */
static char *part_name(const char *base, size_t n)
{
	const char *ext = strrchr(base, '.');
	size_t stem = ext && !strchr(ext, '/') ? (size_t)(ext - base) : strlen(base);
	size_t len = strlen(base) + 16;
	char *name = malloc(len);

	if (name)
		snprintf(name, len, "%.*s-%03zu%s", (int)stem, base, n, base + stem);
	return name;
}

static int part_open(struct pf *p)
{
	FILE *f;
	int err;

	p->part_name = part_name(p->o.split_base, ++p->nparts);
	if (!p->part_name)
		return -ENOMEM;
	err = tb_convert_create_tmp(p->part_name, p->part_name, &p->part_tmp, &f);
	if (err) {
		p->said = true;   /* said, naming it */
		return err;
	}
	p->part_f = f;
	return pf_file_open(p, f);
}

/* The part's file, finished and renamed into place. */
static int part_finish(struct pf *p)
{
	int err = pf_out_close(&p->out);

	if (fclose(p->part_f) && !err)
		err = -EIO;
	p->part_f = NULL;
	if (!err && rename(p->part_tmp, p->part_name))
		err = -errno;
	if (err) {
		unlink(p->part_tmp);
		tb_convert_fail("write", p->part_name, err, NULL);
		p->said = true;
	}
	if (p->nparts == 1)
		p->first_name = p->part_name;
	else
		free(p->last_name), p->last_name = p->part_name;
	free(p->part_tmp);
	p->part_tmp = NULL;
	p->part_name = NULL;
	return err;
}

int pf_parts_start(struct pf *p)
{
	return part_open(p);
}

#define CONTINUES "continues in the next part"

/* The async slices still open when a part is forced to end: each ended at
 * the part's end, marked (tracebpf_unfinished, as a slice closed by the
 * end of a trace is). */
static int end_asyncs(struct pf *p)
{
	struct tb_pb *b = p->pkt;
	int err = 0;

	for (size_t i = 0; i < p->async.cap && !err; i++) {
		for (uintptr_t d = (uintptr_t)p->async.vals[i]; d > 1 && !err; d--) {
			pf_packet_begin(p, &p->own, p->last_ts, true);
			tb_pb_varint(b, PF_TE_TYPE, PF_TYPE_END);
			tb_pb_varint(b, TE_TRACK_UUID, p->async.keys[i]);
			tb_pb_begin(b, TE_DEBUG);
			tb_pb_string(b, DA_NAME, "tracebpf_unfinished");
			tb_pb_string(b, DA_STRING, CONTINUES);
			err = pf_packet_end(p, &p->own);
		}
	}
	return err;
}

/* A part ends once it holds split bytes and no async slice is open, so
 * that each is whole in one part; or, with some open for good, at four
 * times the size (their ends then left out of the later parts). */
int pf_part_check(struct pf *p)
{
	uint64_t n = p->out.bytes + p->out.b.len;
	int err;

	if (n < p->o.split || !p->m || (p->async_open && n / 4 < p->o.split))
		return 0;
	err = end_asyncs(p);
	if (!err)
		err = pf_file_close(p, p->m);
	if (!err)
		err = part_finish(p);
	pf_seqs_reset(p);
	tb_hmap_free(&p->async);
	p->async_open = 0;
	return err ? err : part_open(p);
}

int pf_parts_finish(struct pf *p, int err)
{
	if (p->part_f && !err)
		return part_finish(p);
	if (p->part_f) {
		pf_out_close(&p->out);
		fclose(p->part_f);
		unlink(p->part_tmp);
	}
	return err;
}

void pf_parts_say(const struct pf *p)
{
	if (p->async_ends_dropped)
		tb_print(PFX "note: %" PRIu64 " async slices were open across four times "
			 "--split's size: each ends with its part, marked tracebpf_unfinished "
			 "('" CONTINUES "'), and its end in a later part is left out\n",
			 p->async_ends_dropped);
	tb_print(PFX "wrote %zu part%s: %s%s%s\n", p->nparts, p->nparts > 1 ? "s" : "",
		 p->first_name, p->nparts > 1 ? " to " : "", p->nparts > 1 ? p->last_name : "");
}

void pf_parts_free(struct pf *p)
{
	tb_hmap_free(&p->async);
	free(p->part_name);
	free(p->part_tmp);
	free(p->first_name);
	free(p->last_name);
}
