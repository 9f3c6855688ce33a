/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tracebpf/site.h - the site descriptor: the one definition of what every
 * TRACE_* site leaves in the application's data for the tracer to read.
 *
 * Included by tracebpf/trace.h (the application), bpf/record.bpf.c and
 * bpf/fast.bpf.h (which copy it into TB_REC_SITE records), and the trace
 * readers in user/ (which parse those records). No includes of its own:
 * the includer provides uint8_t, uint16_t and uint32_t (<stdint.h> in user
 * space, vmlinux.h in BPF programs). Changing the layout is a trace-file
 * format change (docs/format.md, "TB_REC_SITE (2): a site descriptor, 40
 * bytes + descriptor").
 */
#ifndef TRACEBPF_SITE_H
#define TRACEBPF_SITE_H

#define TRACEBPF_SITE_MAGIC 0x31534254u /* "TBS1" in memory order */
#define TRACEBPF_SITE_MAX   512         /* header + strings, bytes */

#define TRACEBPF_PHASE_BEGIN   'B'
#define TRACEBPF_PHASE_END     'E'
#define TRACEBPF_PHASE_INSTANT 'I'
#define TRACEBPF_PHASE_COUNTER 'C'
/* Sites of the `event_id` probe (an id and/or a runtime name): */
#define TRACEBPF_PHASE_ASYNC_BEGIN   'b'  /* async and nestable async */
#define TRACEBPF_PHASE_ASYNC_END     'e'
#define TRACEBPF_PHASE_ASYNC_INSTANT 'n'  /* nestable instant, async step */
#define TRACEBPF_PHASE_FLOW_BEGIN    's'
#define TRACEBPF_PHASE_FLOW_STEP     't'
#define TRACEBPF_PHASE_FLOW_END      'f'
/* Process and thread names and sort indices (plain `event` probe): the
 * descriptor's name is "process_name", "thread_name", "process_sort_index"
 * or "thread_sort_index", its one argument the value. */
#define TRACEBPF_PHASE_METADATA      'M'
/* Memory dumps (`event_id` sites, the dump's id as id; since format 2.8).
 * Told apart by the descriptor's name: "dump" (category "memory", args
 * resident_set_bytes and trigger: 0 periodic, 1 TRACE_MEMORY_DUMP()) begins
 * one; a site with TRACEBPF_SITEF_COPY_NAME (category "memory", the
 * allocator's name at run time, args size [, objects]) is one allocator's
 * numbers; "dump_end" (arg allocators: how many were reported) ends it;
 * "dumper" (category "__metadata", arg signal, id 0) says the process's
 * dumping thread waits for the recorder's signal. */
#define TRACEBPF_PHASE_MEMDUMP       'v'

/* tracebpf_site.flags */
#define TRACEBPF_SITEF_COPY_NAME 0x01u /* the name is a runtime string passed
					* to the probe, copied by the tracer */
#define TRACEBPF_SITEF_STEP      0x02u /* a step string follows the name */
#define TRACEBPF_SITEF_ID        0x04u /* an `event_id` site (id argument) */
/* Longest runtime name copied at a hit, terminating NUL included. */
#define TRACEBPF_COPY_NAME_MAX   256

#define TRACEBPF_SCOPE_THREAD  't'
#define TRACEBPF_SCOPE_PROCESS 'p'
#define TRACEBPF_SCOPE_GLOBAL  'g'

/* Same values as enum tb_arg_type in lib/format/tbrecords.h (asserted there). */
#define TRACEBPF_ARG_NONE   0
#define TRACEBPF_ARG_INT    1 /* int64 */
#define TRACEBPF_ARG_UINT   2 /* uint64 */
#define TRACEBPF_ARG_DOUBLE 3 /* IEEE-754 bits */
#define TRACEBPF_ARG_BOOL   4 /* 0 or 1 */
#define TRACEBPF_ARG_STR    5 /* const char *, copied by the tracer */
#define TRACEBPF_ARG_PTR    6 /* any other pointer, shown as hex */

#define TRACEBPF_MAX_ARGS 2

/* Followed in the same object by cat "\0" name ["\0" step] "\0" argname0
 * "\0" ..., then the source file "\0" (its base name where the compiler
 * has __FILE_NAME__). */
struct tracebpf_site {
	uint32_t magic;     /* TRACEBPF_SITE_MAGIC */
	uint16_t size;      /* header + strings, bytes, <= TRACEBPF_SITE_MAX */
	uint8_t  phase;     /* TRACEBPF_PHASE_* */
	uint8_t  scope;     /* instants: TRACEBPF_SCOPE_*; 0 otherwise */
	uint8_t  nargs;     /* 0..TRACEBPF_MAX_ARGS */
	uint8_t  arg_type[TRACEBPF_MAX_ARGS]; /* TRACEBPF_ARG_* */
	uint8_t  flags;     /* TRACEBPF_SITEF_* */
	uint32_t line;      /* the site's source line (0 from headers before
			     * format 2.5, which wrote no file either) */
};

#ifdef __cplusplus
#define TRACEBPF__SITE_ASSERT(e, msg) static_assert(e, msg)
#else
#define TRACEBPF__SITE_ASSERT(e, msg) _Static_assert(e, msg)
#endif
TRACEBPF__SITE_ASSERT(sizeof(struct tracebpf_site) == 16, "tracebpf_site layout");
TRACEBPF__SITE_ASSERT(__builtin_offsetof(struct tracebpf_site, size) == 4 &&
		      __builtin_offsetof(struct tracebpf_site, phase) == 6 &&
		      __builtin_offsetof(struct tracebpf_site, nargs) == 8 &&
		      __builtin_offsetof(struct tracebpf_site, arg_type) == 9 &&
		      __builtin_offsetof(struct tracebpf_site, flags) == 11 &&
		      __builtin_offsetof(struct tracebpf_site, line) == 12,
		      "tracebpf_site field offsets (docs/format.md)");
#undef TRACEBPF__SITE_ASSERT

#endif /* TRACEBPF_SITE_H */
