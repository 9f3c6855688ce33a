// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_convert.c - trace file -> Chrome trace JSON: slices, instants,
 * counters, names, metadata, hostile input, error messages. The output is
 * checked textually and parsed by Python's json module (bare NaN/Infinity
 * refused), which also checks ordering and per-thread nesting.
 *
 * make build/unit/test_convert builds it with every library and CLI
 * source it needs (CORE_SRCS in the Makefile).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "rnd.h"
#include "tmpdir.h"
#include "../../lib/convert/convert.h"
#include "../../lib/filter.h"
#include "../../lib/convert/model.h"
#include "../../lib/util/print.h"
#include "../../user/tracebpf.h"
#include "../../lib/format/tbfile.h"

static char dir[] = "/tmp/test_convert.XXXXXX";
static char in_path[256], out_path[256], err_path[256], py_path[256];

/* ------------------------------------------------------- trace making -- */

static struct tb_writer *open_trace(size_t chunk_max)
{
	struct tb_file_info info;
	struct tb_writer_opts o = { .info = &info, .zlevel = 6, .chunk_max = chunk_max };
	struct tb_writer *w;

	memset(&info, 0, sizeof(info));
	info.clock_id = 1;
	info.realtime_offset_ns = 1700000000000000000LL;
	info.start_ts = 500;
	strcpy(info.hostname, "box");
	strcpy(info.kernel, "6.18.0");
	strcpy(info.cmdline, "tracebpf record -- ./app \"quoted\"");
	assert_int_equal(tb_writer_open(&w, in_path, &o), 0);
	return w;
}

static void hdr(struct tb_rec_hdr *h, uint16_t type, size_t size, uint64_t ts,
		uint32_t pid, uint32_t tid)
{
	h->type = type;
	h->size = (uint16_t)size;
	h->cpu = 0;
	h->ts = ts;
	h->pid = pid;
	h->tid = tid;
}

enum { SITE_OK, SITE_BAD_MAGIC, SITE_UNTERMINATED, SITE_FAULT };

/* A SITE record; flags: TRACEBPF_SITEF_* of the descriptor. */
static void site_flags(struct tb_writer *w, uint64_t ts, uint32_t pid, uint64_t addr,
		       char phase, char scope, const char *cat, const char *name,
		       int nargs, const uint8_t *types, const char *const *names, int how,
		       uint8_t flags)
{
	uint64_t buf[128];
	struct tb_rec_site *s = (void *)buf;
	struct tracebpf_site *d = (void *)(s + 1);
	char *p = (char *)(d + 1);
	size_t len;
	int i;

	memset(buf, 0, sizeof(buf));
	d->magic = how == SITE_BAD_MAGIC ? 0x12345678 : TRACEBPF_SITE_MAGIC;
	d->phase = (uint8_t)phase;
	d->scope = (uint8_t)scope;
	d->nargs = (uint8_t)nargs;
	d->flags = flags;
	for (i = 0; i < nargs; i++)
		d->arg_type[i] = types[i];
	p = stpcpy(p, cat) + 1;
	p = stpcpy(p, name) + 1;
	for (i = 0; i < nargs; i++)
		p = stpcpy(p, names[i]) + 1;
	len = (size_t)(p - (char *)d);
	if (how == SITE_UNTERMINATED)
		len--;        /* the last string runs off the descriptor */
	d->size = (uint16_t)len;
	s->site = addr;
	s->len = (uint32_t)len;
	if (how == SITE_FAULT) {
		s->flags = TB_SITEF_FAULT;
		s->len = 0;
		len = 0;
	}
	hdr(&s->hdr, TB_REC_SITE, TB_REC_ALIGN(sizeof(*s) + len), ts, pid, pid);
	assert_int_equal(tb_writer_append(w, &s->hdr), 0);
}

static void site(struct tb_writer *w, uint64_t ts, uint32_t pid, uint64_t addr,
		 char phase, char scope, const char *cat, const char *name,
		 int nargs, const uint8_t *types, const char *const *names, int how)
{
	site_flags(w, ts, pid, addr, phase, scope, cat, name, nargs, types, names, how, 0);
}

/* s0/s1: bytes of string arguments 0/1 (n0/n1 of them, NUL included). */
static void event(struct tb_writer *w, uint64_t ts, uint32_t pid, uint32_t tid,
		  uint64_t addr, uint64_t a0, uint64_t a1,
		  const char *s0, size_t n0, const char *s1, size_t n1)
{
	uint64_t buf[128];
	struct tb_rec_event *e = (void *)buf;
	char *p = (char *)(e + 1);

	memset(buf, 0, sizeof(buf));
	e->site = addr;
	e->args[0] = a0;
	e->args[1] = a1;
	if (s0) {
		memcpy(p, s0, n0);
		p += n0;
		e->str_len[0] = (uint16_t)n0;
	}
	if (s1) {
		memcpy(p, s1, n1);
		p += n1;
		e->str_len[1] = (uint16_t)n1;
	}
	hdr(&e->hdr, TB_REC_EVENT, TB_REC_ALIGN((size_t)(p - (char *)e)), ts, pid, tid);
	assert_int_equal(tb_writer_append(w, &e->hdr), 0);
}

#define EV(w, ts, pid, tid, addr, a0, a1) event(w, ts, pid, tid, addr, a0, a1, NULL, 0, NULL, 0)

static void set_comm(char dst[16], const char *name)
{
	size_t n = strlen(name);

	memcpy(dst, name, n < 16 ? n : 16);
}

static void comm(struct tb_writer *w, uint64_t ts, uint32_t pid, uint32_t tid,
		 const char *name)
{
	struct tb_rec_comm c;

	memset(&c, 0, sizeof(c));
	hdr(&c.hdr, TB_REC_COMM, sizeof(c), ts, pid, tid);
	set_comm(c.comm, name);
	assert_int_equal(tb_writer_append(w, &c.hdr), 0);
}

static void fork_(struct tb_writer *w, uint64_t ts, uint32_t pid, uint32_t tid,
		  uint32_t cpid, uint32_t ctid, const char *name)
{
	struct tb_rec_fork f;

	memset(&f, 0, sizeof(f));
	hdr(&f.hdr, TB_REC_FORK, sizeof(f), ts, pid, tid);
	f.child_pid = cpid;
	f.child_tid = ctid;
	f.flags = cpid == pid ? TB_FORKF_THREAD : 0;
	set_comm(f.comm, name);
	assert_int_equal(tb_writer_append(w, &f.hdr), 0);
}

static void exec_(struct tb_writer *w, uint64_t ts, uint32_t pid, const char *name)
{
	struct tb_rec_exec x;

	memset(&x, 0, sizeof(x));
	hdr(&x.hdr, TB_REC_EXEC, sizeof(x), ts, pid, pid);
	x.old_tid = pid;
	set_comm(x.comm, name);
	strcpy(x.filename, "/bin/other");
	assert_int_equal(tb_writer_append(w, &x.hdr), 0);
}

static void exit_(struct tb_writer *w, uint64_t ts, uint32_t pid, uint32_t tid,
		  const char *name, bool process)
{
	struct tb_rec_exit x;

	memset(&x, 0, sizeof(x));
	hdr(&x.hdr, TB_REC_EXIT, sizeof(x), ts, pid, tid);
	x.flags = process ? TB_EXITF_PROCESS : 0;
	set_comm(x.comm, name);
	assert_int_equal(tb_writer_append(w, &x.hdr), 0);
}

static void stats(struct tb_writer *w, uint64_t ts, uint32_t ncpus,
		  const uint64_t *drops)
{
	uint64_t buf[64];
	struct tb_rec_stats *s = (void *)buf;
	uint32_t i;

	memset(buf, 0, sizeof(buf));
	hdr(&s->hdr, TB_REC_STATS, sizeof(*s) + 8 * ncpus, ts, 0, 0);
	s->hdr.cpu = ~0u;
	s->ncpus = ncpus;
	for (i = 0; i < ncpus; i++) {
		((uint64_t *)(s + 1))[i] = drops[i];
		s->drops_total += drops[i];
	}
	s->events = 1000;
	assert_int_equal(tb_writer_append(w, &s->hdr), 0);
}

/* A tracebpf:event_id hit (async, flow): id, one integer argument. */
static void event_id(struct tb_writer *w, uint64_t ts, uint32_t pid, uint32_t tid,
		     uint64_t addr, uint64_t id, uint64_t a0)
{
	struct tb_rec_event_id x;

	memset(&x, 0, sizeof(x));
	hdr(&x.ev.hdr, TB_REC_EVENT_ID, sizeof(x), ts, pid, tid);
	x.ev.site = addr;
	x.ev.args[0] = a0;
	x.id = id;
	assert_int_equal(tb_writer_append(w, &x.ev.hdr), 0);
}

/* An event_id hit with two arguments and, for a COPY site, the name
 * copied at the hit (NULL: none). */
static void event_id2(struct tb_writer *w, uint64_t ts, uint32_t pid, uint32_t tid,
		      uint64_t addr, uint64_t id, uint64_t a0, uint64_t a1, const char *name)
{
	uint64_t buf[64];
	struct tb_rec_event_id *x = (void *)buf;
	size_t n = name ? strlen(name) + 1 : 0;

	memset(buf, 0, sizeof(buf));
	x->ev.site = addr;
	x->ev.args[0] = a0;
	x->ev.args[1] = a1;
	x->id = id;
	x->name_len = (uint16_t)n;
	if (name)
		memcpy(x + 1, name, n);
	hdr(&x->ev.hdr, TB_REC_EVENT_ID, TB_REC_ALIGN(sizeof(*x) + n), ts, pid, tid);
	assert_int_equal(tb_writer_append(w, &x->ev.hdr), 0);
}

/* A gap mark of the application's records on CPU 0: count records lost
 * from ts to last, of the threads tids (ntids of them; all: others too). */
static void gap(struct tb_writer *w, uint64_t ts, uint64_t last, uint64_t count,
		uint16_t kind, bool all, uint32_t ntids, const uint32_t *tids)
{
	struct tb_rec_gap g;

	memset(&g, 0, sizeof(g));
	hdr(&g.hdr, TB_REC_GAP, sizeof(g), ts, 0, 0);
	g.last_ts = last;
	g.count = count;
	g.kind = kind;
	g.flags = all ? TB_GAPF_ALL : 0;
	g.ntids = ntids;
	memcpy(g.tid, tids, ntids * sizeof(*tids));
	assert_int_equal(tb_writer_append(w, &g.hdr), 0);
}

/* A gap of application records of thread tid that says what it lost of
 * its BEGINs and ENDs (since 2.11): the lowest depth they reached, and
 * where they left it. */
static void gap_said(struct tb_writer *w, uint64_t ts, uint64_t last, uint64_t count,
		     uint32_t tid, int32_t low, int32_t net)
{
	struct tb_rec_gap g;

	memset(&g, 0, sizeof(g));
	hdr(&g.hdr, TB_REC_GAP, sizeof(g), ts, 0, 0);
	g.last_ts = last;
	g.count = count;
	g.kind = TB_GAP_APP;
	g.ntids = 1;
	g.tid[0] = tid;
	g.depth_known = 1;
	g.depth[0] = (struct tb_gap_depth){ low, net };
	assert_int_equal(tb_writer_append(w, &g.hdr), 0);
}

static uint64_t dbl(double d)
{
	uint64_t v;

	memcpy(&v, &d, sizeof(v));
	return v;
}

/* ------------------------------------------------------------ running -- */

static char *slurp(const char *p)
{
	struct stat st;
	char *b;
	int fd = open(p, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	b = malloc(st.st_size + 1);
	assert_non_null(b);
	assert_int_equal(read(fd, b, st.st_size), st.st_size);
	b[st.st_size] = '\0';
	close(fd);
	return b;
}

/* stderr goes to err_path between these two. */
static int capture_stderr(void)
{
	int saved, fd;

	fflush(stderr);
	saved = dup(2);
	fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(saved >= 0 && fd >= 0);
	dup2(fd, 2);
	close(fd);
	return saved;
}

static char *restore_stderr(int saved)
{
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	return slurp(err_path);
}

/* Runs tb_convert with stderr captured; returns its result. */
static int convert(const char *in, const char *out, char **err_text)
{
	struct tb_convert_opts o = { .in = in, .out = out };
	int saved = capture_stderr(), ret;

	ret = tb_convert(&o);
	*err_text = restore_stderr(saved);
	return ret;
}

/* Feeds json to a python3 program; returns its exit status. */
static int python(const char *prog, const char *json)
{
	FILE *p = popen(prog, "w");
	int st;

	assert_non_null(p);
	fputs(json, p);
	st = pclose(p);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

#define PY_PARSE "python3 -c 'import json,sys; json.load(sys.stdin, " \
	"parse_constant=lambda c: sys.exit(\"bare \" + c))'"

/* Checks every Chrome-JSON rule that holds for any output, then `extra`. */
static const char py_generic[] =
"import json, sys\n"
"def bad(c): sys.exit('bare constant ' + c)\n"
"d = json.load(sys.stdin, parse_constant=bad)\n"
"assert set(d) - {'systemTraceEvents'} == {'traceEvents', 'displayTimeUnit', 'metadata'}, d.keys()\n"
"st = d.get('systemTraceEvents', '# tracer: nop\\n')\n"
"assert st.startswith('# tracer: nop\\n') and st.endswith('\\n'), st[:200]\n"
"assert d['displayTimeUnit'] == 'ns'\n"
"ev, md = d['traceEvents'], d['metadata']\n"
"last = -1\n"
"for e in ev:\n"
"    assert e['ph'] in 'XICMbenstfv', e\n"
"    for k in ('ts', 'dur'):\n"
"        if k in e:\n"
"            assert isinstance(e[k], (int, float)) and e[k] >= 0, e\n"
"    assert isinstance(e['pid'], int) and isinstance(e['tid'], int), e\n"
"    if e['ph'] == 'M':\n"
"        continue  # names come last, written once known; viewers take M anywhere\n"
"    assert e['ts'] >= last, ('not sorted', e)\n"
"    last = e['ts']\n"
"    if e['ph'] == 'I': assert e['s'] in ('t', 'p', 'g'), e\n"
"    if e['ph'] == 'C':\n"
"        assert e['args'] and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in e['args'].values()), e\n"
"stacks = {}\n"
"for e in ev:\n"
"    if e['ph'] != 'X': continue\n"
"    st = stacks.setdefault(e['tid'], [])\n"
"    b, end = round(e['ts'] * 1000), round((e['ts'] + e['dur']) * 1000)\n"
"    while st and st[-1] <= b and not (st[-1] == b and end == b): st.pop()\n"
"    assert not st or end <= st[-1], ('overlap', e, st)\n"
"    st.append(end)\n"
"for k in ('tracebpf_version', 'hostname', 'kernel_release', 'command_line',\n"
"          'clock', 'realtime_offset_ns', 'start_ts', 'events', 'drops_total',\n"
"          'drops_per_cpu', 'unresolved_sites', 'unmatched_ends',\n"
"          'truncated_tail_bytes'):\n"
"    assert k in md, k\n"
"def find(ph, name, **kw):\n"
"    r = [e for e in ev if e['ph'] == ph and e['name'] == name and\n"
"         all(abs(e.get(k, -1) - v) < 1e-9 if isinstance(v, float) else e.get(k) == v for k, v in kw.items())]\n"
"    assert len(r) == 1, (ph, name, kw, r)\n"
"    return r[0]\n"
"def meta(what, pid, tid):\n"
"    r = [e['args']['name'] for e in ev if e['ph'] == 'M' and e['name'] == what and e['pid'] == pid and e['tid'] == tid]\n"
"    assert len(r) == 1, (what, pid, tid, r)\n"
"    return r[0]\n";

static int py_check(const char *json, const char *extra)
{
	char cmd[300];
	FILE *f = fopen(py_path, "w");

	assert_non_null(f);
	fputs(py_generic, f);
	fputs(extra, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "python3 %s", py_path);
	return python(cmd, json);
}

/* --------------------------------------------------------------- tests -- */

enum {
	A_OUTER = 0x1000, A_OUTER_E = 0x1010, A_INNER = 0x1020, A_INNER_E = 0x1030,
	A_TICK = 0x1040, A_QUEUE = 0x1050, A_PLAIN = 0x1060, A_BAD = 0x1070,
	A_TRUNC = 0x1080, A_FAULT = 0x1090,
};

static void write_scenario(void)
{
	static const uint8_t t_int[] = { TB_ARG_INT };
	static const uint8_t t_strptr[] = { TB_ARG_STR, TB_ARG_PTR };
	static const uint8_t t_strdbl[] = { TB_ARG_STR, TB_ARG_DOUBLE };
	static const uint8_t t_udbl[] = { TB_ARG_UINT, TB_ARG_DOUBLE };
	static const uint8_t t_boolint[] = { TB_ARG_BOOL, TB_ARG_INT };
	static const char *const n_x[] = { "x" }, *const n_ret[] = { "ret" };
	static const char *const n_lp[] = { "label", "p" };
	static const char *const n_mv[] = { "msg", "val" };
	static const char *const n_dl[] = { "depth", "load" };
	static const char *const n_fn[] = { "flag", "neg" };
	static const uint64_t drops[] = { 0, 3, 0, 1 };
	static const char label[] = "hello\n\"world\"";
	struct tb_writer *w = open_trace(200);   /* many small chunks */

	comm(w, 10, 100, 100, "app");
	fork_(w, 20, 100, 100, 100, 101, "app");
	comm(w, 30, 100, 101, "worker thread");

	/* descriptors stamped like the BPF side does: same ts as the hit */
	site(w, 1000, 100, A_OUTER, 'B', 0, "app", "outer", 1, t_int, n_x, SITE_OK);
	EV(w, 1000, 100, 100, A_OUTER, (uint64_t)-5, 0);
	site(w, 2000, 100, A_INNER, 'B', 0, "app", "inner", 2, t_strptr, n_lp, SITE_OK);
	event(w, 2000, 100, 100, A_INNER, 0x7fff0000, 0xdeadbeef,
	      label, sizeof(label), NULL, 0);
	site(w, 3500, 100, A_INNER_E, 'E', 0, "app", "inner", 0, NULL, NULL, SITE_OK);
	EV(w, 3500, 100, 100, A_INNER_E, 0, 0);
	fork_(w, 4000, 100, 100, 200, 200, "app");
	event(w, 5000, 100, 101, A_INNER, 0, 0, "", 0, NULL, 0);   /* unreadable */
	site(w, 6000, 100, A_QUEUE, 'C', 0, "app", "queue", 2, t_udbl, n_dl, SITE_OK);
	EV(w, 6000, 100, 100, A_QUEUE, 5, dbl(0.5));
	site(w, 6200, 100, A_TICK, 'I', 'p', "app", "tick", 2, t_strdbl, n_mv, SITE_OK);
	event(w, 6200, 100, 100, A_TICK, 0, dbl(NAN), "hi", 3, NULL, 0);
	site(w, 6300, 100, A_PLAIN, 'I', 0, "misc", "plain", 2, t_boolint, n_fn, SITE_OK);
	EV(w, 6300, 100, 100, A_PLAIN, 1, (uint64_t)-3);
	site(w, 6400, 100, A_BAD, 'I', 't', "app", "bad", 0, NULL, NULL, SITE_BAD_MAGIC);
	EV(w, 6400, 100, 100, A_BAD, 0, 0);                        /* unresolved 1 */
	EV(w, 6450, 100, 100, 0x9999, 0, 0);                       /* unresolved 2 */
	site(w, 6460, 100, A_TRUNC, 'I', 't', "app", "trunc", 0, NULL, NULL,
	     SITE_UNTERMINATED);
	EV(w, 6460, 100, 100, A_TRUNC, 0, 0);                      /* unresolved 3 */
	EV(w, 6500, 100, 100, A_QUEUE, 7, dbl(NAN));
	site(w, 6600, 100, A_FAULT, 'I', 't', "app", "fault", 0, NULL, NULL, SITE_FAULT);
	EV(w, 6600, 100, 100, A_FAULT, 0, 0);                      /* unresolved 4 */
	EV(w, 6700, 100, 100, A_TICK, (uint64_t)-1, dbl(-INFINITY));
	exit_(w, 7000, 100, 101, "worker thread", false);
	/* the child runs its parent's image: sites known without SITE records */
	event(w, 8000, 200, 200, A_TICK, 0, dbl(2.5), "from child", 11, NULL, 0);
	EV(w, 8200, 200, 200, A_OUTER, 9, 0);
	comm(w, 8500, 200, 200, "child");
	exec_(w, 9000, 200, "execd");
	event(w, 9500, 200, 200, A_TICK, 0, 0, "x", 2, NULL, 0);  /* unresolved 5 */
	site(w, 10000, 100, A_OUTER_E, 'E', 0, "app", "outer", 1, t_int, n_ret, SITE_OK);
	EV(w, 10000, 100, 100, A_OUTER_E, 42, 0);
	EV(w, 11000, 100, 100, A_INNER_E, 0, 0);                   /* began before */
	EV(w, 12000, 100, 100, A_OUTER, 1, 0);                     /* never ends */
	EV(w, 13000, 300, 300, A_TICK, 0, 0);                      /* unresolved 6 */
	stats(w, 15000, 4, (const uint64_t[]){ 9, 9, 9, 9 });
	stats(w, 20000, 4, drops);                                 /* last wins */
	assert_int_equal(tb_writer_close(w), 0);
}

static const char py_scenario[] =
"o = find('X', 'outer', tid=100, ts=1.0)\n"
"assert abs(o['dur'] - 9.0) < 1e-9, o\n"
"assert o['args'] == {'x': -5, 'ret': 42}, o\n"
"assert o['cat'] == 'app' and o['pid'] == 100\n"
"i = find('X', 'inner', tid=100)\n"
"assert abs(i['ts'] - 2.0) < 1e-9 and abs(i['dur'] - 1.5) < 1e-9, i\n"
"assert i['args'] == {'label': 'hello\\n\"world\"', 'p': '0xdeadbeef'}, i\n"
"assert ev.index(o) < ev.index(i)\n"
"w = find('X', 'inner', tid=101)\n"
"assert abs(w['ts'] - 5.0) < 1e-9 and abs(w['dur'] - 2.0) < 1e-9, w\n"
"assert w['args'] == {'label': '<unreadable>', 'p': '0x0',\n"
"                     'tracebpf_unfinished': 'thread exited'}, w\n"
"x = find('X', 'outer', pid=200)\n"
"assert abs(x['ts'] - 8.2) < 1e-9 and abs(x['dur'] - 0.8) < 1e-9, x\n"
"assert x['args']['tracebpf_unfinished'] == \"process exec'd\", x\n"
"e = find('X', 'outer', tid=100, ts=12.0)\n"
"assert abs(e['dur'] - 8.0) < 1e-9, e\n"
"assert e['args'] == {'x': 1, 'tracebpf_unfinished': 'recording ended'}, e\n"
"assert len([e for e in ev if e['ph'] == 'X']) == 5\n"
"t = find('I', 'tick', ts=6.2)\n"
"assert t['s'] == 'p' and t['args'] == {'msg': 'hi', 'val': 'NaN'}, t\n"
"t = find('I', 'tick', ts=6.7)\n"
"assert t['args'] == {'msg': '<unreadable>', 'val': '-Infinity'}, t\n"
"c = find('I', 'tick', pid=200)\n"
"assert c['args'] == {'msg': 'from child', 'val': 2.5}, c\n"
"p = find('I', 'plain')\n"
"assert p['s'] == 't' and p['cat'] == 'misc' and p['args'] == {'flag': True, 'neg': -3}, p\n"
"assert len([e for e in ev if e['ph'] == 'I']) == 5\n"
"i = [e for e in ev if e['ph'] == 'I' and 'tracebpf_end_of' in e['args']]\n"
"assert [(e['name'], e['tid'], e['ts']) for e in i] == [('inner', 100, 11.0)], i\n"
"q = [e for e in ev if e['ph'] == 'C']\n"
"assert len(q) == 2, q\n"
"assert q[0]['name'] == 'queue' and q[0]['pid'] == 100 and q[0]['args'] == {'depth': 5, 'load': 0.5}, q\n"
"assert q[1]['args'] == {'depth': 7}, q\n"
"assert meta('process_name', 100, 100) == 'app'\n"
"assert meta('thread_name', 100, 101) == 'worker thread'\n"
"assert meta('process_name', 200, 200) == 'execd'\n"
"assert meta('thread_name', 200, 200) == 'execd'\n"
"assert meta('process_name', 300, 300) == 'pid 300'\n"
"assert meta('thread_name', 300, 300) == 'tid 300'\n"
"assert not [e for e in ev if e['ph'] == 'M' and e['pid'] == 0]\n"
"assert md['drops_total'] == 4 and md['drops_per_cpu'] == [0, 3, 0, 1], md\n"
"assert md['unresolved_sites'] == 6 and md['unmatched_ends'] == 0, md\n"
"assert md['ends_before_recording'] == 1, md\n"
"assert md['events'] == 20, md\n"
"assert md['truncated_tail_bytes'] == 0 and 'truncated_tail_reason' not in md\n"
"assert md['clock'] == 'CLOCK_MONOTONIC' and md['hostname'] == 'box'\n"
"assert md['kernel_release'] == '6.18.0' and md['command_line'] == 'tracebpf record -- ./app \"quoted\"'\n"
"assert md['realtime_offset_ns'] == 1700000000000000000 and md['start_ts'] == 500\n"
"assert md['tracebpf_version'] and md['format_version'] == '2.11'\n";

static void test_scenario(void **state)
{
	char *err, *out;

	(void)state;
	write_scenario();
	assert_int_equal(convert(in_path, out_path, &err), 0);
	out = slurp(out_path);

	/* text-level */
	assert_non_null(strstr(out, "{\"traceEvents\":["));
	assert_non_null(strstr(out, "\"displayTimeUnit\":\"ns\""));
	assert_non_null(strstr(out, "\"ph\":\"X\",\"ts\":1.000,\"dur\":9.000,"
				    "\"pid\":100,\"tid\":100,\"cat\":\"app\","
				    "\"name\":\"outer\",\"args\":{\"x\":-5,\"ret\":42}"));
	assert_non_null(strstr(out, "\"ts\":2.000,\"dur\":1.500,"));
	assert_non_null(strstr(out, "\"label\":\"hello\\n\\\"world\\\"\""));
	assert_non_null(strstr(out, "\"tracebpf_unfinished\":\"thread exited\""));
	assert_non_null(strstr(out, "\"tracebpf_unfinished\":\"recording ended\""));
	assert_non_null(strstr(out, "\"ph\":\"I\",\"ts\":6.200,\"pid\":100,"
				    "\"tid\":100,\"s\":\"p\""));
	assert_non_null(strstr(out, "\"val\":\"NaN\""));
	assert_null(strstr(out, ":NaN"));
	assert_null(strstr(out, ":nan"));
	assert_null(strstr(out, "Infinity,"));
	assert_non_null(strstr(out, "\"ph\":\"C\",\"ts\":6.000,\"pid\":100,"));
	assert_non_null(strstr(out, "\"args\":{\"depth\":5,\"load\":0.5}"));
	assert_non_null(strstr(out, "\"args\":{\"depth\":7}"));
	assert_non_null(strstr(out, "{\"ph\":\"M\",\"ts\":0.000,\"pid\":100,"
				    "\"tid\":101,\"name\":\"thread_name\","
				    "\"args\":{\"name\":\"worker thread\"}}"));
	assert_non_null(strstr(out, "\"name\":\"process_name\",\"args\":{\"name\":\"app\"}"));
	assert_non_null(strstr(out, "\"drops_total\":4,\"drops_per_cpu\":[0,3,0,1]"));
	assert_non_null(strstr(out, "\"unresolved_sites\":6"));
	assert_non_null(strstr(out, "\"unmatched_ends\":0,\"ends_before_recording\":1"));
	assert_null(strstr(out, "systemTraceEvents"));
	assert_null(strstr(out, "\"name\":\"bad\""));

	/* stderr: the drop warning, nothing else */
	assert_string_equal(err,
		"tracebpf: convert: warning: 4 events were lost because a ring "
		"buffer was full (see metadata.drops_per_cpu); record again with "
		"a larger --buffer-size (application events) or "
		"--kernel-buffer-size (scheduler, -e)\n");

	assert_int_equal(python(PY_PARSE, out), 0);
	assert_int_equal(py_check(out, py_scenario), 0);
	free(out);
	free(err);
}

/* tb_convert_file on a reader the caller opened, to any FILE. */
static void test_convert_file(void **state)
{
	struct tb_reader *r;
	char *buf = NULL, *err;
	size_t len = 0;
	int saved, ret;
	FILE *f;

	(void)state;
	write_scenario();
	assert_int_equal(tb_reader_open(&r, in_path), 0);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	saved = capture_stderr();
	ret = tb_convert_file(r, f);
	err = restore_stderr(saved);
	assert_int_equal(ret, 0);
	assert_non_null(strstr(err, "4 events were lost"));
	free(err);
	fclose(f);
	tb_reader_close(r);
	assert_int_equal(py_check(buf, py_scenario), 0);
	free(buf);
}

/* Zero-length slices nested at one timestamp: parents still first. */
static void test_equal_timestamps(void **state)
{
	struct tb_writer *w = open_trace(0);
	char *err, *out, *a, *b;

	(void)state;
	site(w, 100, 1, 0xa, 'B', 0, "c", "parent", 0, NULL, NULL, SITE_OK);
	site(w, 100, 1, 0xb, 'B', 0, "c", "child", 0, NULL, NULL, SITE_OK);
	site(w, 100, 1, 0xe, 'E', 0, "c", "end", 0, NULL, NULL, SITE_OK);
	EV(w, 100, 1, 1, 0xa, 0, 0);
	EV(w, 100, 1, 1, 0xb, 0, 0);
	EV(w, 100, 1, 1, 0xe, 0, 0);
	EV(w, 100, 1, 1, 0xe, 0, 0);
	/* and a parent that begins with its child but lasts longer */
	EV(w, 200, 1, 1, 0xa, 0, 0);
	EV(w, 200, 1, 1, 0xb, 0, 0);
	EV(w, 250, 1, 1, 0xe, 0, 0);
	EV(w, 300, 1, 1, 0xe, 0, 0);
	assert_int_equal(tb_writer_close(w), 0);
	assert_int_equal(convert(in_path, out_path, &err), 0);
	assert_string_equal(err, "");
	out = slurp(out_path);
	a = strstr(out, "\"ts\":0.100,\"dur\":0.000,\"pid\":1,\"tid\":1,\"cat\":\"c\",\"name\":\"parent\"");
	b = strstr(out, "\"ts\":0.100,\"dur\":0.000,\"pid\":1,\"tid\":1,\"cat\":\"c\",\"name\":\"child\"");
	assert_non_null(a);
	assert_non_null(b);
	assert_true(a < b);
	/* 0.2 + 0.1 is 0.30000000000000004 in doubles, past the end's 0.3: the
	 * dur that adds up to it is 0.3 - 0.2 (docs/output.md) */
	a = strstr(out, "\"ts\":0.200,\"dur\":0.09999999999999998,\"pid\":1,\"tid\":1,\"cat\":\"c\",\"name\":\"parent\"");
	b = strstr(out, "\"ts\":0.200,\"dur\":0.050,\"pid\":1,\"tid\":1,\"cat\":\"c\",\"name\":\"child\"");
	assert_non_null(a);
	assert_non_null(b);
	assert_true(a < b);
	assert_int_equal(py_check(out, "assert len([e for e in ev if e['ph'] == 'X']) == 4\n"), 0);
	free(out);
	free(err);
}

/* A slice open from the start while n instants follow, never ended. */
static void write_long_open_slice(unsigned n)
{
	struct tb_writer *w = open_trace(0);

	site(w, 100, 1, 0xa, 'B', 0, "c", "outer", 0, NULL, NULL, SITE_OK);
	site(w, 100, 1, 0xc, 'I', 't', "c", "tick", 0, NULL, NULL, SITE_OK);
	EV(w, 100, 1, 1, 0xa, 0, 0);
	for (unsigned i = 0; i < n; i++)
		EV(w, 200 + i, 1, 1, 0xc, 0, 0);
	assert_int_equal(tb_writer_close(w), 0);
}

/* Events wait behind the begin of a slice still open (its X is written
 * when it ends, at its begin's ts). Up to 1 M of them (OUT_MAX) the
 * output stays in time order; past that the oldest are written first,
 * and exactly those are counted in metadata.events_out_of_order and said
 * (docs/output.md). */
static void test_long_open_slice(void **state)
{
	unsigned long long forced, before = 0;
	char *err, *out, *p, *outer, said[128];

	(void)state;
	write_long_open_slice(1000);
	assert_int_equal(convert(in_path, out_path, &err), 0);
	out = slurp(out_path);
	assert_null(strstr(out, "events_out_of_order"));
	assert_null(strstr(err, "out of time order"));
	assert_int_equal(py_check(out, "ts = [e['ts'] for e in ev if e['ph'] != 'M']\n"
				       "assert ts == sorted(ts) and len(ts) == 1001\n"), 0);
	free(out);
	free(err);

	write_long_open_slice((1u << 20) + 20000);
	assert_int_equal(convert(in_path, out_path, &err), 0);
	out = slurp(out_path);
	p = strstr(out, "\"events_out_of_order\":");
	assert_non_null(p);
	forced = strtoull(p + strlen("\"events_out_of_order\":"), NULL, 10);
	assert_true(forced > 0 && forced <= 20000);
	/* the ones written before the slice they follow, and no others */
	outer = strstr(out, "\"name\":\"outer\"");
	assert_non_null(outer);
	for (p = out; (p = strstr(p, "\"name\":\"tick\"")) && p < outer; p++)
		before++;
	assert_int_equal(before, forced);
	snprintf(said, sizeof(said), "%llu trace events and 0 records were released out of "
		 "time order", forced);
	assert_non_null(strstr(err, said));
	free(out);
	free(err);
}

/* --split SIZE: every part but the last holds about SIZE bytes of events
 * (what the JSON writer still buffers counted: its buffer, 64 KiB, is
 * larger than a small SIZE), plus its names and metadata. */
static void test_split_size(void **state)
{
	static const uint8_t t_int[] = { TB_ARG_INT };
	static const char *const n_i[] = { "i" };
	const uint64_t size = 100 << 10;
	struct tb_convert_opts o = { .in = in_path, .out = out_path, .split = size };
	struct tb_writer *w = open_trace(0);
	off_t sizes[64];
	size_t n, parts;
	char path[300], *err;
	struct stat st;
	int saved;

	(void)state;
	site(w, 100, 1, 0xa, 'I', 't', "c", "tick", 1, t_int, n_i, SITE_OK);
	for (uint64_t i = 0; i < 5000; i++)   /* about 500 KB of JSON */
		EV(w, 1000 + i * 10, 1, 1, 0xa, i, 0);
	assert_int_equal(tb_writer_close(w), 0);
	saved = capture_stderr();
	assert_int_equal(tb_convert(&o), 0);
	err = restore_stderr(saved);
	for (parts = 0; parts < 64; parts++) {
		snprintf(path, sizeof(path), "%s/out-%03zu.json", dir, parts + 1);
		if (stat(path, &st))
			break;
		sizes[parts] = st.st_size;
		unlink(path);
	}
	assert_in_range(parts, 4, 6);
	for (n = 0; n + 1 < parts; n++)
		assert_in_range(sizes[n], size, size + size / 20);
	free(err);
}

static void ctl(struct tb_writer *w, uint64_t ts, bool off)
{
	struct tb_rec_ctl c;

	memset(&c, 0, sizeof(c));
	hdr(&c.hdr, TB_REC_CTL, sizeof(c), ts, 0, 0);
	c.hdr.cpu = ~0u;
	c.off = off;
	c.by_pid = 77;
	assert_int_equal(tb_writer_append(w, &c.hdr), 0);
}

/* tracebpf ctl stop..start: a slice open at a stop ends there, marked; an
 * event stamped inside a window is left out (a program that read the
 * switch just before it flipped); the end of the cut slice recorded after
 * the start, before the thread's first BEGIN of that window, is an instant
 * marked as the end of a slice that began before the start (not paired
 * with anything); a window still open at the end has no to_ns. */
static void test_stopped_windows(void **state)
{
	struct tb_writer *w = open_trace(0);
	char *err, *out;

	(void)state;
	site(w, 100, 1, 0xa, 'B', 0, "c", "span", 0, NULL, NULL, SITE_OK);
	site(w, 100, 1, 0xe, 'E', 0, "c", "span", 0, NULL, NULL, SITE_OK);
	site(w, 100, 1, 0xc, 'I', 't', "c", "tick", 1, (const uint8_t[]){ TB_ARG_INT },
	     (const char *const[]){ "n" }, SITE_OK);
	EV(w, 1000, 1, 1, 0xa, 0, 0);
	EV(w, 1500, 1, 1, 0xc, 1, 0);
	ctl(w, 2000, true);
	EV(w, 2001, 1, 1, 0xc, 2, 0);     /* stamped after the stop: left out */
	EV(w, 2500, 1, 1, 0xe, 0, 0);     /* left out too */
	ctl(w, 2600, true);               /* already stopped: no new window */
	ctl(w, 3000, false);
	EV(w, 3500, 1, 1, 0xc, 3, 0);
	EV(w, 4000, 1, 1, 0xe, 0, 0);     /* span was cut at 2000: unmatched */
	EV(w, 4500, 1, 1, 0xa, 0, 0);     /* open at the next stop */
	ctl(w, 5000, true);
	EV(w, 5500, 1, 1, 0xc, 4, 0);
	assert_int_equal(tb_writer_close(w), 0);
	assert_int_equal(convert(in_path, out_path, &err), 0);
	assert_string_equal(err, "");
	out = slurp(out_path);
	assert_int_equal(py_check(out,
"assert sorted(e['args']['n'] for e in ev if e['ph'] == 'I' and e['name'] == 'tick') == [1, 3], ev\n"
"e = [e for e in ev if e['ph'] == 'I' and e['name'] == 'span']\n"
"assert len(e) == 1 and e[0]['ts'] == 4.0 and e[0]['s'] == 't', e\n"
"assert e[0]['args'] == {'tracebpf_end_of': 'began before tracebpf ctl start'}, e\n"
"s = find('X', 'span', ts=1.0)\n"
"assert abs(s['dur'] - 1.0) < 1e-9 and s['args']['tracebpf_unfinished'] == 'recording stopped', s\n"
"s = find('X', 'span', ts=4.5)\n"
"assert abs(s['dur'] - 0.5) < 1e-9 and s['args']['tracebpf_unfinished'] == 'recording stopped', s\n"
"assert md['recording_stopped'] == [{'from_ns': 2000, 'to_ns': 3000}, {'from_ns': 5000}], md\n"
"assert md['records_while_stopped'] == 3 and md['unmatched_ends'] == 0, md\n"
"assert md['ends_before_recording'] == 1, md\n"
"assert md['format_version'] == '2.11', md\n"), 0);
	free(out);
	free(err);
}

/* Attaching in the middle of scopes: on a thread that existed when the
 * recording started, an END with nothing open ends a slice that began
 * before the recording (one still open then encloses everything recorded
 * on the thread since): a marked instant, counted, never paired; also after
 * slices of its own were recorded (an outer scope around them). On a thread
 * born during the recording it is unmatched (nothing of it is older). */
static void test_ends_before_recording(void **state)
{
	struct tb_writer *w = open_trace(0);
	char *err, *out;

	(void)state;
	site(w, 100, 1, 0xa, 'B', 0, "c", "inner", 0, NULL, NULL, SITE_OK);
	site(w, 100, 1, 0xe, 'E', 0, "c", "inner", 0, NULL, NULL, SITE_OK);
	site(w, 100, 1, 0xf, 'E', 0, "c", "outer", 0, NULL, NULL, SITE_OK);
	EV(w, 1000, 1, 1, 0xe, 0, 0);     /* began before: inner */
	EV(w, 1100, 1, 1, 0xf, 0, 0);     /* began before: outer */
	EV(w, 2000, 1, 1, 0xa, 0, 0);
	EV(w, 2500, 1, 1, 0xe, 0, 0);     /* the slice 2000-2500 */
	EV(w, 3000, 1, 1, 0xf, 0, 0);     /* after its own slice: began before */
	EV(w, 3500, 1, 2, 0xf, 0, 0);     /* another old thread: began before */
	fork_(w, 4000, 1, 1, 1, 3, "new");
	EV(w, 4500, 1, 3, 0xe, 0, 0);     /* born at 4000: unmatched */
	assert_int_equal(tb_writer_close(w), 0);
	assert_int_equal(convert(in_path, out_path, &err), 0);
	assert_string_equal(err, "");
	out = slurp(out_path);
	assert_int_equal(py_check(out,
"b = [(e['tid'], e['name'], e['ts']) for e in ev if e['ph'] == 'I']\n"
"assert b == [(1, 'inner', 1.0), (1, 'outer', 1.1), (1, 'outer', 3.0), (2, 'outer', 3.5)], b\n"
"assert all(e['args'] == {'tracebpf_end_of': 'began before the recording started'}\n"
"           for e in ev if e['ph'] == 'I'), ev\n"
"x = [(e['tid'], e['name'], e['ts'], e['dur']) for e in ev if e['ph'] == 'X']\n"
"assert x == [(1, 'inner', 2.0, 0.5)], x\n"
"assert md['ends_before_recording'] == 4 and md['unmatched_ends'] == 1, md\n"), 0);
	free(out);
	free(err);
}

/* Lost records: the slices open on thread 1 (named by the gap) end at the
 * gap, marked; its BEGINs and ENDs inside the gap, and its ENDs after it
 * with nothing open, are marked instants, never paired; thread 2 (not
 * named) keeps its slice across the gap. An async slice open at the gap
 * ends there, marked, and its end after the gap is a marked async
 * instant; a flow open at the gap is never written again (a viewer would
 * join its start to the next end of its id), one that starts inside it
 * is left out, another one after it is whole; an end whose start was not
 * written is left out. A gap of
 * every thread reaches a thread first seen after it, but not one born
 * after it. Kernel records' gaps are only counted. */
static void test_gaps(void **state)
{
	static const uint8_t t_int[] = { TB_ARG_INT };
	static const char *const n_i[] = { "i" };
	struct tb_writer *w = open_trace(0);
	char *err, *out;

	(void)state;
	site(w, 100, 1, 0xa, 'B', 0, "c", "outer", 1, t_int, n_i, SITE_OK);
	site(w, 100, 1, 0xb, 'E', 0, "c", "outer", 0, NULL, NULL, SITE_OK);
	site(w, 100, 1, 0xc, 'B', 0, "c", "inner", 1, t_int, n_i, SITE_OK);
	site(w, 100, 1, 0xd, 'E', 0, "c", "inner", 0, NULL, NULL, SITE_OK);
	site(w, 100, 1, 0x1b, 'b', 0, "c", "req", 1, t_int, n_i, SITE_OK);
	site(w, 100, 1, 0x1e, 'e', 0, "c", "req", 0, NULL, NULL, SITE_OK);
	site(w, 100, 1, 0x25, 's', 0, "c", "hop", 0, NULL, NULL, SITE_OK);
	site(w, 100, 1, 0x2f, 'f', 0, "c", "hop", 0, NULL, NULL, SITE_OK);
	EV(w, 1000, 1, 1, 0xa, 1, 0);
	EV(w, 1000, 1, 2, 0xa, 2, 0);
	event_id(w, 1200, 1, 2, 0x1b, 7, 1);
	event_id(w, 1300, 1, 2, 0x25, 9, 0);
	EV(w, 1500, 1, 1, 0xc, 3, 0);
	gap(w, 2000, 2200, 5, TB_GAP_APP, false, 1, (const uint32_t[]){ 1 });
	EV(w, 2100, 1, 1, 0xd, 0, 0);          /* inside: an END, marked */
	event_id(w, 2100, 1, 2, 0x1b, 7, 2);   /* inside: an async begin, marked */
	event_id(w, 2120, 1, 2, 0x25, 11, 0);  /* inside: left out */
	EV(w, 2150, 1, 1, 0xc, 4, 0);          /* inside: a BEGIN, marked */
	EV(w, 2500, 1, 1, 0xd, 0, 0);          /* after, nothing open: marked */
	event_id(w, 2700, 1, 2, 0x1e, 7, 0);   /* after, nothing open: marked */
	event_id(w, 2800, 1, 2, 0x2f, 9, 0);   /* the flow spans the gap: left out */
	EV(w, 3000, 1, 1, 0xb, 0, 0);          /* after: marked */
	EV(w, 3000, 1, 2, 0xb, 0, 0);          /* thread 2: its slice 1000-3000 */
	EV(w, 3500, 1, 1, 0xa, 5, 0);
	gap(w, 3550, 3560, 2, TB_GAP_KERNEL, true, 0, NULL);   /* cuts nothing */
	EV(w, 3600, 1, 1, 0xb, 0, 0);          /* a slice of its own: paired */
	event_id(w, 4000, 1, 2, 0x1b, 7, 3);
	event_id(w, 4100, 1, 2, 0x1e, 7, 0);   /* paired */
	event_id(w, 4200, 1, 2, 0x25, 9, 0);   /* cut for good: left out */
	event_id(w, 4300, 1, 2, 0x2f, 9, 0);   /* left out */
	EV(w, 4350, 1, 2, 0xc, 6, 0);
	event_id(w, 4400, 1, 2, 0x25, 10, 0);
	event_id(w, 4500, 1, 2, 0x2f, 10, 0);  /* another flow: whole */
	EV(w, 4550, 1, 2, 0xd, 0, 0);
	event_id(w, 4600, 1, 2, 0x2f, 11, 0);  /* its start was left out: left out */
	event_id(w, 4700, 1, 2, 0x2f, 10, 0);  /* no start open: left out (Perfetto
						* would join it to 4.4's) */
	event_id(w, 4800, 1, 2, 0x25, 12, 0);  /* no slice around it: left out */
	gap(w, 6000, 6100, 3, TB_GAP_APP, true, 0, NULL);
	fork_(w, 6500, 1, 1, 1, 4, "born");
	EV(w, 7000, 1, 3, 0xb, 0, 0);          /* first seen: may have lost its BEGIN */
	EV(w, 7100, 1, 4, 0xb, 0, 0);          /* born after the gap: unmatched */
	assert_int_equal(tb_writer_close(w), 0);
	assert_int_equal(convert(in_path, out_path, &err), 0);
	out = slurp(out_path);
	assert_int_equal(py_check(out,
"L = 'events lost at ts 2.000: 5 records'\n"
"x = sorted((e['tid'], e['name'], e['ts'], round(e['dur'] * 1000)) for e in ev if e['ph'] == 'X')\n"
"assert x == [(1, 'inner', 1.5, 499), (1, 'outer', 1.0, 1000), (1, 'outer', 3.5, 100),\n"
"             (2, 'inner', 4.35, 200), (2, 'outer', 1.0, 2000)], x\n"
"assert find('X', 'outer', tid=1, ts=1.0)['args'] == {'i': 1, 'tracebpf_incomplete': L}\n"
"assert find('X', 'inner', tid=1)['args'] == {'i': 3, 'tracebpf_incomplete': L}\n"
"assert find('X', 'outer', tid=2)['args'] == {'i': 2}\n"
"P = 'began after lost events: a slice enclosing it may be among them'\n"
"assert find('X', 'outer', tid=1, ts=3.5)['args'] == {'i': 5, 'tracebpf_parent_lost': P}\n"
"assert md['slices_parent_lost'] == 1, md\n"
"g = [(e['s'], e['pid'], e['tid'], e['ts'], e['name'], e['args'])\n"
"     for e in ev if e.get('cat') == 'tracebpf']\n"
"assert g == [('t', 1, 1, 2.0, 'records lost', {'gap': 1, 'records_lost': 5}),\n"
"             ('p', 1, 1, 6.0, 'records lost', {'gap': 2, 'records_lost': 3})], g\n"
"E = 'began before or during lost events'\n"
"i = [(e['tid'], e['name'], e['ts'], e['args']) for e in ev\n"
"     if e['ph'] == 'I' and e['cat'] != 'tracebpf']\n"
"assert i == [(1, 'inner', 2.1, {'tracebpf_end_of': E, 'tracebpf_incomplete': L}),\n"
"             (1, 'inner', 2.15, {'i': 4, 'tracebpf_begin_of': 'ended during or after lost events',\n"
"                                 'tracebpf_incomplete': L}),\n"
"             (1, 'inner', 2.5, {'tracebpf_end_of': E, 'tracebpf_incomplete': L}),\n"
"             (1, 'outer', 3.0, {'tracebpf_end_of': E, 'tracebpf_incomplete': L}),\n"
"             (3, 'outer', 7.0, {'tracebpf_end_of': E,\n"
"                                'tracebpf_incomplete': 'events lost at ts 6.000: 3 records'})], i\n"
"a = [(e['ph'], e['ts'], e['id'], e['args']) for e in ev if e['name'] == 'req']\n"
"assert a == [('b', 1.2, '0x7', {'i': 1}), ('e', 2.0, '0x7', {'i': 1, 'tracebpf_incomplete': L}),\n"
"             ('n', 2.1, '0x7', {'i': 2, 'tracebpf_begin_of': 'ended during or after lost events',\n"
"                                'tracebpf_incomplete': L}),\n"
"             ('n', 2.7, '0x7', {'tracebpf_end_of': E, 'tracebpf_incomplete': L}),\n"
"             ('b', 4.0, '0x7', {'i': 3}), ('e', 4.1, '0x7', {})], a\n"
"f = [(e['ph'], e['ts'], e['id']) for e in ev if e['name'] == 'hop']\n"
"assert f == [('s', 1.0, '0x9'), ('s', 4.35, '0xa'), ('f', 4.35, '0xa')], f\n"
"assert md['gaps'] == 2 and md['gap_records'] == 8, md\n"
"assert md['kernel_gaps'] == 1 and md['kernel_gap_records'] == 2, md\n"
"assert md['slices_cut_at_gaps'] == 3 and md['ends_after_gaps'] == 4, md\n"
"assert md['events_in_gaps'] == 3 and md['flow_events_left_out'] == 7, md\n"
"assert md['unmatched_ends'] == 1 and md['ends_before_recording'] == 0, md\n"), 0);
	free(out);
	free(err);
}

/* Gaps whose marks say what each thread lost. Thread 1, in outer 1 and
 * inner 1, loses END inner, END outer, BEGIN outer, BEGIN inner (lowest
 * depth -2, back to 0, across its top level): both slices end at the gap,
 * cut; the two begun in it are drawn from its end to their ENDs, marked
 * begin lost, and what is inside them or after them is whole and
 * unmarked (no tracebpf_parent_lost). Thread 3 loses a BEGIN (0, +1) and
 * an END of it is read inside the gap: in whatever order they came, its
 * outer slice may have ended there, so it is cut, and the END after the
 * gap closes a slice begun in it. Thread 2, not named, keeps its slice. */
static void test_gap_depths(void **state)
{
	static const uint8_t t_int[] = { TB_ARG_INT };
	static const char *const n_i[] = { "i" }, *const n_end[] = { "end_i" };
	struct tb_writer *w = open_trace(0);
	char *err, *out;

	(void)state;
	site(w, 100, 1, 0xa, 'B', 0, "c", "outer", 1, t_int, n_i, SITE_OK);
	site(w, 100, 1, 0xb, 'E', 0, "c", "outer", 1, t_int, n_end, SITE_OK);
	site(w, 100, 1, 0xc, 'B', 0, "c", "inner", 1, t_int, n_i, SITE_OK);
	site(w, 100, 1, 0xd, 'E', 0, "c", "inner", 1, t_int, n_end, SITE_OK);
	EV(w, 1000, 1, 1, 0xa, 1, 0);
	EV(w, 1000, 1, 2, 0xa, 5, 0);
	EV(w, 1000, 1, 3, 0xa, 10, 0);
	EV(w, 1100, 1, 1, 0xc, 1, 0);
	gap_said(w, 2000, 2200, 4, 1, -2, 0);
	gap_said(w, 2000, 2200, 1, 3, 0, 1);
	EV(w, 2100, 1, 3, 0xd, 11, 0);          /* inside: an END, marked */
	EV(w, 2500, 1, 1, 0xd, 2, 0);           /* inner 2, begun in the gap */
	EV(w, 2600, 1, 1, 0xc, 3, 0);
	EV(w, 2700, 1, 1, 0xd, 3, 0);           /* inner 3: whole, in outer 2 */
	EV(w, 3000, 1, 1, 0xb, 2, 0);           /* outer 2, begun in the gap */
	EV(w, 3000, 1, 3, 0xb, 10, 0);          /* outer 10, maybe ended in it */
	EV(w, 3000, 1, 2, 0xb, 5, 0);
	EV(w, 3500, 1, 1, 0xa, 4, 0);
	EV(w, 3600, 1, 1, 0xb, 4, 0);           /* outer 4: whole, unmarked */
	assert_int_equal(tb_writer_close(w), 0);
	assert_int_equal(convert(in_path, out_path, &err), 0);
	out = slurp(out_path);
	assert_int_equal(py_check(out,
"L = 'events lost at ts 2.000: 4 records'\n"
"M = 'events lost at ts 2.000: 1 records'\n"
"x = sorted((e['tid'], e['ts'], e['name'], round(e['dur'] * 1000), e['args'])\n"
"           for e in ev if e['ph'] == 'X')\n"
"assert x == [(1, 1.0, 'outer', 1000, {'i': 1, 'tracebpf_incomplete': L}),\n"
"             (1, 1.1, 'inner', 899, {'i': 1, 'tracebpf_incomplete': L}),\n"
"             (1, 2.2, 'inner', 300, {'end_i': 2, 'tracebpf_begin_lost': L}),\n"
"             (1, 2.2, 'outer', 800, {'end_i': 2, 'tracebpf_begin_lost': L}),\n"
"             (1, 2.6, 'inner', 100, {'i': 3, 'end_i': 3}),\n"
"             (1, 3.5, 'outer', 100, {'i': 4, 'end_i': 4}),\n"
"             (2, 1.0, 'outer', 2000, {'i': 5, 'end_i': 5}),\n"
"             (3, 1.0, 'outer', 1000, {'i': 10, 'tracebpf_incomplete': M}),\n"
"             (3, 2.2, 'outer', 800, {'end_i': 10, 'tracebpf_begin_lost': M})], x\n"
"i = [(e['tid'], e['name'], e['ts'], e['args']) for e in ev\n"
"     if e['ph'] == 'I' and e['cat'] != 'tracebpf']\n"
"assert i == [(3, 'inner', 2.1, {'end_i': 11, 'tracebpf_end_of':\n"
"              'began before or during lost events', 'tracebpf_incomplete': M})], i\n"
"assert md['gaps'] == 2 and md['slices_cut_at_gaps'] == 3, md\n"
"assert md['ends_after_gaps'] == 3 and md['events_in_gaps'] == 1, md\n"
"assert md['slices_parent_lost'] == 0 and md['unmatched_ends'] == 0, md\n"), 0);
	free(out);
	free(err);
}

static void test_empty_trace(void **state)
{
	struct tb_writer *w = open_trace(0);
	char *err, *out;

	(void)state;
	assert_int_equal(tb_writer_close(w), 0);
	assert_int_equal(convert(in_path, out_path, &err), 0);
	assert_string_equal(err, "");
	out = slurp(out_path);
	assert_int_equal(py_check(out,
		"assert ev == [] and md['drops_total'] == 0 and md['drops_per_cpu'] == []\n"
		"assert md['events'] == 0\n"), 0);
	free(out);
	free(err);
}

static void test_truncated_trace(void **state)
{
	struct stat st;
	char *err, *out;

	(void)state;
	write_scenario();
	assert_int_equal(stat(in_path, &st), 0);
	assert_int_equal(truncate(in_path, st.st_size - 30), 0);
	assert_int_equal(convert(in_path, out_path, &err), 0);
	assert_non_null(strstr(err, "tracebpf: convert: warning: the trace ends with "));
	assert_non_null(strstr(err, "unreadable bytes (truncated payload)"));
	out = slurp(out_path);
	assert_int_equal(py_check(out,
		"assert md['truncated_tail_bytes'] > 0, md\n"
		"assert md['truncated_tail_reason'] == 'truncated payload', md\n"), 0);
	free(out);
	free(err);
}

static void test_stdin_stdout(void **state)
{
	int in_fd, out_fd, saved_in, saved_out, ret;
	char *err, *out;

	(void)state;
	write_scenario();
	fflush(stdout);
	saved_in = dup(0);
	saved_out = dup(1);
	in_fd = open(in_path, O_RDONLY);
	out_fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(in_fd >= 0 && out_fd >= 0 && saved_in >= 0 && saved_out >= 0);
	dup2(in_fd, 0);
	dup2(out_fd, 1);
	close(in_fd);
	close(out_fd);
	ret = convert("-", "-", &err);
	fflush(stdout);
	dup2(saved_in, 0);
	dup2(saved_out, 1);
	close(saved_in);
	close(saved_out);
	assert_int_equal(ret, 0);
	out = slurp(out_path);
	assert_int_equal(py_check(out, py_scenario), 0);
	free(out);
	free(err);
}

static void test_errors(void **state)
{
	char *err, bad_out[300];
	struct stat st;
	unsigned char hdr[64];
	uint16_t major = 9;
	int fd;

	(void)state;
	assert_int_equal(convert("/nonexistent/x.tbt", out_path, &err), -ENOENT);
	assert_non_null(strstr(err, "tracebpf: convert: failed to open "
				    "'/nonexistent/x.tbt': No such file or directory\n"
				    "tracebpf: convert: hint: "));
	free(err);

	fd = open(in_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_int_equal(write(fd, "{\"traceEvents\":[]}\n", 19), 19);
	close(fd);
	assert_int_equal(convert(in_path, out_path, &err), -EINVAL);
	assert_non_null(strstr(err, "failed to open '"));
	assert_non_null(strstr(err, "': Invalid argument\n"));
	assert_non_null(strstr(err, "hint: this is not a tracebpf trace file"));
	free(err);

	/* a newer major version */
	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, "TRACEBPF", 8);
	memcpy(hdr + 8, &major, 2);
	fd = open(in_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_int_equal(write(fd, hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	close(fd);
	assert_int_equal(convert(in_path, out_path, &err), -EPROTONOSUPPORT);
	assert_non_null(strstr(err, "hint: the trace was written by a newer tracebpf"));
	free(err);

	/* a corrupt header */
	write_scenario();
	fd = open(in_path, O_WRONLY);
	assert_int_equal(pwrite(fd, "X", 1, 20), 1);
	close(fd);
	assert_int_equal(convert(in_path, out_path, &err), -EBADMSG);
	assert_non_null(strstr(err, "hint: the file header is corrupt"));
	free(err);

	/* a failed conversion leaves an existing output as it was */
	fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_int_equal(write(fd, "old", 3), 3);
	close(fd);
	assert_int_equal(convert(in_path, out_path, &err), -EBADMSG);
	free(err);
	err = slurp(out_path);
	assert_string_equal(err, "old");
	free(err);

	write_scenario();
	snprintf(bad_out, sizeof(bad_out), "%s/nodir/out.json", dir);
	assert_int_equal(convert(in_path, bad_out, &err), -ENOENT);
	assert_non_null(strstr(err, "tracebpf: convert: failed to create '"));
	free(err);
	/* a device is written through, not replaced; a write error is reported */
	assert_int_equal(convert(in_path, "/dev/full", &err), -ENOSPC);
	assert_non_null(strstr(err, "tracebpf: convert: failed to write '/dev/full': "
				    "No space left on device\n"));
	free(err);
	assert_int_equal(stat("/dev/full", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	/* a successful one replaces it whole, with no temporary left */
	assert_int_equal(convert(in_path, out_path, &err), 0);
	free(err);
	{
		DIR *d = opendir(dir);
		struct dirent *de;
		int n = 0;

		assert_non_null(d);
		while ((de = readdir(d)))
			n += strncmp(de->d_name, "out.json.", 9) == 0;
		closedir(d);
		assert_int_equal(n, 0);
	}
}

/* Random records with plausible headers and hostile contents: the
 * converter must not crash and must still write valid JSON. */
static void test_hostile(void **state)
{
	struct tb_writer *w = open_trace(4096);
	uint64_t buf[128];
	char *err, *out;
	unsigned seed = 12345, i, k;

	(void)state;
	for (i = 0; i < 4000; i++) {
		struct tb_rec_hdr *h = (void *)buf;
		uint16_t type = 1 + rand_r(&seed) % (TB_REC_TYPE_MAX - 1);
		size_t size = tb_rec_min_size(type) + 8 * (rand_r(&seed) % 40);
		unsigned char *p = (unsigned char *)buf;

		for (k = 0; k < size; k++)
			p[k] = (unsigned char)rand_r(&seed);
		hdr(h, type, size, rand_r(&seed) % 5000, 1 + rand_r(&seed) % 3,
		    1 + rand_r(&seed) % 5);
		if (type == TB_REC_SITE) {
			struct tb_rec_site *s = (void *)h;
			struct tracebpf_site *d = (void *)(s + 1);
			static const char ph[] = "BEICX";

			s->site = rand_r(&seed) % 8;
			s->flags = rand_r(&seed) % 4 == 0;
			s->len = rand_r(&seed) % 400;
			if (size >= sizeof(*s) + sizeof(*d)) {
				d->magic = rand_r(&seed) % 8 ? TRACEBPF_SITE_MAGIC : 0;
				d->size = rand_r(&seed) % 400;
				d->phase = ph[rand_r(&seed) % 5];
				d->nargs = rand_r(&seed) % 4;
				d->arg_type[0] = rand_r(&seed) % 8;
				d->arg_type[1] = rand_r(&seed) % 8;
			}
		} else if (type == TB_REC_EVENT) {
			((struct tb_rec_event *)h)->site = rand_r(&seed) % 8;
		} else if (type == TB_REC_STATS) {
			((struct tb_rec_stats *)h)->ncpus = rand_r(&seed) % 100;
		} else if (type == TB_REC_CATS && rand_r(&seed) % 4) {
			/* mostly rules that record everything: a random one
			 * may leave every later event out, as it says */
			((struct tb_rec_cats *)h)->len = 3;
			memcpy((struct tb_rec_cats *)h + 1, "+*", 3);
		}
		assert_int_equal(tb_writer_append(w, h), 0);
	}
	assert_int_equal(tb_writer_close(w), 0);
	assert_int_equal(convert(in_path, out_path, &err), 0);
	out = slurp(out_path);
	assert_int_equal(python(PY_PARSE, out), 0);
	assert_int_equal(py_check(out, "assert md['events'] > 0\n"), 0);
	free(out);
	free(err);
}

/* ------------------------------------------------------------ templates -- */

/* Sites of every kind the templates take, and of kinds they leave to the
 * generic calls: escapes, a long name, a duplicate argument name, double
 * and string arguments, an END with an argument. */
struct tsite {
	char phase, scope;
	const char *cat, *name;
	int nargs;
	uint8_t types[2];
	const char *names[2];
};

static const struct tsite tsites[] = {
	{ 'I', 0,   "bench", "tick", 2, { TB_ARG_INT, TB_ARG_INT }, { "seq", "t" } },
	{ 'I', 'p', "net\"io", "recv\tall", 1, { TB_ARG_UINT }, { "bytes" } },
	{ 'I', 'g', "\xe5\x90\x8d", "\x01\x7f\xff", 2, { TB_ARG_BOOL, TB_ARG_INT }, { "ok", "a\"b" } },
	{ 'I', 't', "c", "n", 0, { 0 }, { NULL } },
	{ 'I', 0,   "dup", "dup", 2, { TB_ARG_INT, TB_ARG_INT }, { "x", "x" } },
	{ 'I', 0,   "dbl", "dbl", 1, { TB_ARG_DOUBLE }, { "d" } },
	{ 'B', 0,   "work", "slice", 1, { TB_ARG_INT }, { "n" } },
	{ 'E', 0,   "work", "slice", 0, { 0 }, { NULL } },
	{ 'B', 0,   "work", "other", 2, { TB_ARG_UINT, TB_ARG_BOOL }, { "u", "b" } },
	{ 'E', 0,   "work", "other", 1, { TB_ARG_INT }, { "ret" } },
	{ 'I', 0,   "long", NULL, 1, { TB_ARG_INT }, { "v" } },
};
#define NTSITES (sizeof(tsites) / sizeof(tsites[0]))
#define TSITE(i) (0x10000 + 0x40 * (uint64_t)(i))

static uint64_t tvalue(void)
{
	switch (rnd() % 5) {
	case 0: return (uint64_t)INT64_MIN;
	case 1: return UINT64_MAX;
	case 2: return rnd() % 10;
	case 3: return (uint64_t)-(int64_t)(rnd() % 100000);
	default: return rnd();
	}
}

/* 40,000 events of 5 threads in 3 processes, timestamps from under 10 ms
 * (no upper digits) to 2^62 ns. */
static void write_template_trace(void)
{
	static char longname[400];
	struct tb_writer *w = open_trace(4096);
	static const uint32_t pids[] = { 7, 4194303, 31337 };
	uint64_t ts = 1000;
	int i, depth[5] = { 0 };

	memset(longname, 'L', sizeof(longname) - 1);
	for (i = 0; i < (int)NTSITES; i++)
		for (int p = 0; p < 3; p++)
			site(w, 500, pids[p], TSITE(i), tsites[i].phase, tsites[i].scope,
			     tsites[i].cat, tsites[i].name ? tsites[i].name : longname,
			     tsites[i].nargs, tsites[i].types, tsites[i].names, SITE_OK);
	for (i = 0; i < 40000; i++) {
		int t = (int)(rnd() % 5), k = (int)(rnd() % NTSITES);
		uint32_t pid = pids[t % 3], tid = pid + (uint32_t)t;

		ts += i == 20000 ? (1ull << 62) : 1 + rnd() % 3000000;
		if (tsites[k].phase == 'E' || (tsites[k].phase == 'B' && depth[t] > 3)) {
			if (!depth[t])
				continue;
			k = rnd() % 2 ? 7 : 9;
			depth[t]--;
		} else if (tsites[k].phase == 'B') {
			depth[t]++;
		}
		EV(w, ts, pid, tid, TSITE(k), tvalue(), tvalue());
	}
	assert_int_equal(tb_writer_close(w), 0);
}

/* The common events come from per-site templates: the same bytes as the
 * generic calls write, whatever the names, values and timestamps. */
static void test_templates(void **state)
{
	char out2[300], *err, *a, *b;

	(void)state;
	write_template_trace();
	assert_int_equal(convert(in_path, out_path, &err), 0);
	free(err);
	tb_convert_no_templates = true;
	snprintf(out2, sizeof(out2), "%s/generic.json", dir);
	assert_int_equal(convert(in_path, out2, &err), 0);
	tb_convert_no_templates = false;
	free(err);
	a = slurp(out_path);
	b = slurp(out2);
	/* events of each kind were written: instants and slices, with the
	 * extreme values, past 2^62 ns */
	assert_non_null(strstr(a, "\"name\":\"tick\",\"args\":{\"seq\":-9223372036854775808"));
	assert_non_null(strstr(a, "\"bytes\":18446744073709551615}"));
	assert_non_null(strstr(a, "{\"ph\":\"X\",\"ts\":4611686"));
	assert_non_null(strstr(a, "\"ok\":true"));
	assert_true(strlen(a) > 4000000);
	assert_string_equal(a, b);
	free(a);
	free(b);
	unlink(out2);
}

/* ------------------------------------------- the model, in any order -- */

/* What a test sink keeps of each event. */
struct got {
	char ph;
	uint64_t ts, dur, seq, child, pid;
	uint32_t tid;
};

struct gots {
	struct got *v;
	size_t n;
};

static void got_event(void *ctx, const struct oev *e)
{
	struct gots *g = ctx;

	g->v = realloc(g->v, (g->n + 1) * sizeof(*g->v));
	assert_non_null(g->v);
	g->v[g->n++] = (struct got){ e->ph, e->ts, e->dur, e->seq,
				     e->ph == 'X' ? e->child : 0, e->pid, e->tid };
}

static void run_model(struct gots *g, bool any_order, const struct tb_filter *f)
{
	struct tb_model_sink sink = { .ctx = g, .event = got_event, .any_order = any_order,
				      .filter = f };
	struct tb_reader *r;
	bool read_failed;

	g->n = 0;
	assert_int_equal(tb_reader_open(&r, in_path), 0);
	assert_int_equal(tb_model_run(r, &sink, &read_failed), 0);
	tb_reader_close(r);
}

static int cmp_got(const void *a, const void *b)
{
	const struct got *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->dur != y->dur)
		return x->dur > y->dur ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return (x->ph > y->ph) - (x->ph < y->ph);
}

/* The time of the slices directly inside each X of g (in ts order, longer
 * first) found from their times alone, as a viewer nests a thread's
 * slices: the innermost slice before it that holds it is its parent. */
static void nest_children(const struct gots *g, uint64_t *child)
{
	size_t *stack = calloc(g->n + 1, sizeof(*stack));

	assert_non_null(stack);
	for (size_t i = 0; i < g->n; i++)
		child[i] = 0;
	for (size_t i = 0; i < g->n; i++) {
		const struct got *e = &g->v[i];
		size_t depth = 0;

		if (e->ph != 'X')
			continue;
		/* the thread's slices before e that are still open at its
		 * begin and end after it, innermost last */
		for (size_t j = 0; j < i; j++) {
			const struct got *p = &g->v[j];

			if (p->ph == 'X' && p->pid == e->pid && p->tid == e->tid &&
			    p->ts + p->dur > e->ts && p->ts + p->dur >= e->ts + e->dur)
				stack[depth++] = j;
		}
		if (depth)
			child[stack[depth - 1]] += e->dur;
	}
	free(stack);
}

/* Ordered and any-order runs hand out the same events, and each slice's
 * child time is what nesting the ordered ones by time gives. */
static void check_orders(const struct tb_filter *f)
{
	struct gots ordered = { 0 }, any = { 0 };
	uint64_t *child;
	size_t slices = 0;

	run_model(&ordered, false, f);
	run_model(&any, true, f);
	assert_true(ordered.n > 0);
	assert_int_equal(ordered.n, any.n);
	for (size_t i = 1; i < ordered.n; i++)
		assert_true(cmp_got(&ordered.v[i - 1], &ordered.v[i]) < 0);
	qsort(any.v, any.n, sizeof(*any.v), cmp_got);
	for (size_t i = 0; i < ordered.n; i++) {
		const struct got *x = &ordered.v[i], *y = &any.v[i];

		assert_true(x->ph == y->ph && x->ts == y->ts && x->dur == y->dur &&
			    x->seq == y->seq && x->child == y->child && x->pid == y->pid &&
			    x->tid == y->tid);
	}
	child = calloc(ordered.n, sizeof(*child));
	assert_non_null(child);
	nest_children(&ordered, child);
	for (size_t i = 0; i < ordered.n; i++) {
		if (ordered.v[i].ph != 'X')
			continue;
		slices++;
		if (child[i] != ordered.v[i].child)
			fail_msg("slice at %llu (tid %u, dur %llu): child %llu, nesting says %llu",
				 (unsigned long long)ordered.v[i].ts, ordered.v[i].tid,
				 (unsigned long long)ordered.v[i].dur,
				 (unsigned long long)ordered.v[i].child, (unsigned long long)child[i]);
	}
	assert_true(slices > 0);
	free(child);
	free(ordered.v);
	free(any.v);
}

/* The X of g that begins at ts and lasts dur, on tid. */
static const struct got *slice_at(const struct gots *g, uint32_t tid, uint64_t ts, uint64_t dur)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->v[i].ph == 'X' && g->v[i].tid == tid && g->v[i].ts == ts &&
		    g->v[i].dur == dur)
			return &g->v[i];
	fail_msg("no slice at %llu + %llu on %u", (unsigned long long)ts,
		 (unsigned long long)dur, tid);
	return NULL;
}

enum { G_A = 0x2000, G_A_E = 0x2010, G_B = 0x2020, G_B_E = 0x2030, G_C = 0x2040,
       G_D = 0x2050, G_D_E = 0x2060 };

/* The sites of the nesting tests in pid at ts: begins a, b, c, d and
 * the ends of a, b and d. */
static void nest_sites(struct tb_writer *w, uint64_t ts, uint32_t pid)
{
	static const struct { uint64_t addr; char ph; const char *name; } v[] = {
		{ G_A, 'B', "a" }, { G_A_E, 'E', "a" }, { G_B, 'B', "b" }, { G_B_E, 'E', "b" },
		{ G_C, 'B', "c" }, { G_D, 'B', "d" }, { G_D_E, 'E', "d" },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		site(w, ts, pid, v[i].addr, v[i].ph, 0, "g", v[i].name, 0, NULL, NULL, SITE_OK);
}

/* a > b > c open in pid 100 when it forks 200. The child runs d, ends b
 * (which drops c, inside it) and a; the parent ends c, b and a. */
static void write_ghosts(void)
{
	struct tb_writer *w = open_trace(200);

	comm(w, 10, 100, 100, "app");
	nest_sites(w, 1000, 100);
	EV(w, 1000, 100, 100, G_A, 0, 0);
	EV(w, 1100, 100, 100, G_B, 0, 0);
	EV(w, 1200, 100, 100, G_C, 0, 0);
	fork_(w, 1300, 100, 100, 200, 200, "app");
	EV(w, 1400, 200, 200, G_D, 0, 0);
	EV(w, 1500, 200, 200, G_D_E, 0, 0);
	EV(w, 1700, 200, 200, G_B_E, 0, 0);
	EV(w, 1900, 200, 200, G_A_E, 0, 0);
	EV(w, 2000, 100, 100, G_B_E, 0, 0);   /* ends c: ENDs pop the innermost */
	EV(w, 2100, 100, 100, G_B_E, 0, 0);
	EV(w, 2200, 100, 100, G_A_E, 0, 0);
	assert_int_equal(tb_writer_close(w), 0);
}

static void test_child_time_of_ghosts(void **state)
{
	struct tb_filter f = { 0 };
	struct gots g = { 0 };
	const char *why;

	(void)state;
	write_ghosts();
	check_orders(NULL);
	run_model(&g, true, NULL);
	assert_int_equal(g.n, 6);
	assert_int_equal(slice_at(&g, 200, 1400, 100)->child, 0);     /* d */
	assert_int_equal(slice_at(&g, 200, 1300, 400)->child, 100);   /* b: d, not c */
	assert_int_equal(slice_at(&g, 200, 1300, 600)->child, 400);   /* a: b */
	assert_int_equal(slice_at(&g, 100, 1200, 800)->child, 0);
	assert_int_equal(slice_at(&g, 100, 1100, 1000)->child, 800);
	assert_int_equal(slice_at(&g, 100, 1000, 1200)->child, 1000);
	/* left out, b's time is a's own, and what b held is directly in a */
	assert_int_equal(tb_filter_add_names(&f, "a,d", &why), 0);
	check_orders(&f);
	run_model(&g, true, &f);
	assert_int_equal(g.n, 3);
	assert_int_equal(slice_at(&g, 200, 1300, 600)->child, 100);
	assert_int_equal(slice_at(&g, 100, 1000, 1200)->child, 0);
	tb_filter_free(&f);
	free(g.v);
}

/* Random nesting on three threads, forks with slices open (ghosts, some
 * ended in the child), slices left open at the end: the two orders agree
 * and the child times are the nesting's. */
static void write_random_nesting(void)
{
	static const uint64_t begin[] = { G_A, G_B, G_C, G_D }, end[] = { G_A_E, G_B_E, G_D_E };
	struct tb_writer *w = open_trace(300);
	uint32_t tids[] = { 100, 101, 300 }, next_pid = 400;
	unsigned depth[3] = { 0 };
	uint64_t ts = 1000;

	comm(w, 10, 100, 100, "app");
	fork_(w, 20, 100, 100, 100, 101, "app");
	comm(w, 30, 300, 300, "other");
	nest_sites(w, 40, 100);
	nest_sites(w, 40, 300);
	for (int i = 0; i < 3000; i++) {
		unsigned k = (unsigned)(rnd() % 3);
		uint32_t tid = tids[k], pid = tid == 101 ? 100 : tid;
		uint64_t r = rnd() % 16;

		ts += 1 + rnd() % 50;
		if (tid == 100 && r == 0) {   /* a child with ghosts; ends a few */
			uint32_t child = next_pid++;

			fork_(w, ts, 100, 100, child, child, "app");
			for (uint64_t n = rnd() % 4; n; n--)
				EV(w, ts += 1 + rnd() % 50, child, child, end[rnd() % 3], 0, 0);
		} else if (pid == 300) {
			EV(w, ts, pid, tid, r < 8 ? G_A : G_A_E, 0, 0);
		} else if (r < 8 && depth[k] < 8) {
			EV(w, ts, pid, tid, begin[rnd() % 4], 0, 0);
			depth[k]++;
		} else if (depth[k]) {
			EV(w, ts, pid, tid, end[rnd() % 3], 0, 0);
			depth[k]--;
		}
	}
	assert_int_equal(tb_writer_close(w), 0);
}

static void test_child_time_at_random(void **state)
{
	struct tb_filter f = { 0 };
	const char *why;

	(void)state;
	write_random_nesting();
	check_orders(NULL);
	assert_int_equal(tb_filter_add_names(&f, "b,c", &why), 0);
	check_orders(&f);
	tb_filter_free(&f);
}

/* ------------------------------------------------- memory dumps -- */

enum { MD_DUMP = 0x100, MD_ALLOC2 = 0x110, MD_ALLOC1 = 0x118, MD_END = 0x120,
       MD_DUMPER = 0x130, MD_TICK = 0x200 };

/* The memory dump sites of tracebpf/trace.h in process pid. */
static void md_sites(struct tb_writer *w, uint64_t ts, uint32_t pid)
{
	static const uint8_t t_uu[] = { TB_ARG_UINT, TB_ARG_UINT }, t_i[] = { TB_ARG_INT };
	static const char *const n_dump[] = { "resident_set_bytes", "trigger" };
	static const char *const n_alloc[] = { "size", "objects" };
	static const char *const n_end[] = { "allocators" }, *const n_sig[] = { "signal" };
	const uint8_t id = TRACEBPF_SITEF_ID, copy = TRACEBPF_SITEF_ID | TRACEBPF_SITEF_COPY_NAME;

	site_flags(w, ts, pid, MD_DUMP, 'v', 0, "memory", "dump", 2, t_uu, n_dump, SITE_OK, id);
	site_flags(w, ts, pid, MD_ALLOC2, 'v', 0, "memory", "", 2, t_uu, n_alloc, SITE_OK, copy);
	site_flags(w, ts, pid, MD_ALLOC1, 'v', 0, "memory", "", 1, t_uu, n_alloc, SITE_OK, copy);
	site_flags(w, ts, pid, MD_END, 'v', 0, "memory", "dump_end", 1, t_uu, n_end, SITE_OK, id);
	site_flags(w, ts, pid, MD_DUMPER, 'v', 0, "__metadata", "dumper", 1, t_i, n_sig, SITE_OK,
		   id);
}

#define MD_ID(n) (0xa00000000ull | (n))

/* Process 10's dumps on its thread 11, its main thread's ticks in between:
 * two complete dumps; one whose end was lost, then another whose end counts
 * an allocator that did not arrive; an allocator and an end of dumps never
 * begun; one dump of process 20 that exits in it, one of 10 open at the
 * end. */
static void write_memdumps(void)
{
	static const uint8_t t_u[] = { TB_ARG_UINT };
	static const char *const n_i[] = { "i" };
	struct tb_writer *w = open_trace(0);

	md_sites(w, 100, 10);
	md_sites(w, 100, 20);
	site(w, 100, 10, MD_TICK, 'I', 't', "app", "tick", 1, t_u, n_i, SITE_OK);
	event_id2(w, 900, 10, 11, MD_DUMPER, 0, 61, 0, NULL);   /* shows nothing */
	event_id2(w, 1000, 10, 11, MD_DUMP, MD_ID(1), 0x1000000, 0, NULL);
	event_id2(w, 1100, 10, 11, MD_ALLOC2, MD_ID(1), 4096, 12, "cache/entries");
	EV(w, 1150, 10, 10, MD_TICK, 1, 0);   /* written after the dump, at 1.0 */
	event_id2(w, 1200, 10, 11, MD_ALLOC1, MD_ID(1), 65536, 0, "malloc");
	event_id2(w, 1300, 10, 11, MD_END, MD_ID(1), 2, 0, NULL);
	event_id2(w, 2000, 10, 11, MD_DUMP, MD_ID(2), 0x2000000, 1, NULL);
	event_id2(w, 2100, 10, 11, MD_ALLOC2, MD_ID(2), 8192, 20, "cache/entries");
	event_id2(w, 2200, 10, 11, MD_ALLOC1, MD_ID(2), 131072, 0, "malloc");
	event_id2(w, 2300, 10, 11, MD_END, MD_ID(2), 2, 0, NULL);
	event_id2(w, 3000, 10, 11, MD_DUMP, MD_ID(3), 0x3000000, 0, NULL);
	event_id2(w, 3100, 10, 11, MD_ALLOC1, MD_ID(3), 1000, 0, "malloc");
	/* its end was lost */
	event_id2(w, 4000, 10, 11, MD_DUMP, MD_ID(4), 0x4000000, 0, NULL);
	event_id2(w, 4100, 10, 11, MD_ALLOC2, MD_ID(4), 100, 1, "cache/entries");
	event_id2(w, 4200, 10, 11, MD_ALLOC1, MD_ID(4), 2000, 0, "malloc");
	event_id2(w, 4300, 10, 11, MD_END, MD_ID(4), 3, 0, NULL);   /* 3, 2 arrived */
	event_id2(w, 5000, 10, 11, MD_ALLOC1, MD_ID(99), 5, 0, "malloc");   /* no begin */
	event_id2(w, 5100, 10, 11, MD_END, MD_ID(98), 1, 0, NULL);          /* no begin */
	event_id2(w, 5500, 20, 21, MD_DUMP, MD_ID(7), 0x500, 0, NULL);
	event_id2(w, 5550, 20, 21, MD_ALLOC1, MD_ID(7), 7, 0, "arena");
	exit_(w, 5600, 20, 21, "other", true);
	event_id2(w, 6000, 10, 11, MD_DUMP, MD_ID(5), 0x6000000, 0, NULL);
	event_id2(w, 6100, 10, 11, MD_ALLOC1, MD_ID(5), 3000, 0, "malloc");
	EV(w, 6500, 10, 10, MD_TICK, 2, 0);
	assert_int_equal(tb_writer_close(w), 0);
}

static const char py_memdumps[] =
"import re\n"
"v = [e for e in ev if e['ph'] == 'v']\n"
"guids = []\n"
"for e in v:\n"
"    for a in e['args']['dumps']['allocators'].values():\n"
"        assert re.fullmatch('[0-9a-f]{16}', a['guid']), a\n"
"        guids.append(a.pop('guid'))\n"
"assert len(guids) == 9 and len(set(guids)) == 9, guids\n"
"def S(size, objects=None):\n"
"    a = {'size': {'type': 'scalar', 'units': 'bytes', 'value': size}}\n"
"    if objects is not None:\n"
"        a['object_count'] = {'type': 'scalar', 'units': 'objects', 'value': objects}\n"
"    return {'attrs': a}\n"
"def D(rss, allocators, why=None):\n"
"    d = {'dumps': {'level_of_detail': 'detailed', 'process_totals': {'resident_set_bytes': rss},\n"
"                   'allocators': allocators}}\n"
"    if why: d['tracebpf_incomplete'] = why\n"
"    return d\n"
"def V(ts, pid, tid, name, id, args):\n"
"    return {'ph': 'v', 'ts': ts, 'pid': pid, 'tid': tid, 'cat': 'memory', 'name': name,\n"
"            'id': id, 'args': args}\n"
"P, X = 'periodic_interval', 'explicitly_triggered'\n"
"want = [\n"
"    V(1.0, 10, 11, P, '0xa00000001', D('1000000', {'cache/entries': S('1000', 'c'), 'malloc': S('10000')})),\n"
"    V(2.0, 10, 11, X, '0xa00000002', D('2000000', {'cache/entries': S('2000', '14'), 'malloc': S('20000')})),\n"
"    V(3.0, 10, 11, P, '0xa00000003', D('3000000', {'malloc': S('3e8')}, \"the dump's end was not recorded\")),\n"
"    V(4.0, 10, 11, P, '0xa00000004', D('4000000', {'cache/entries': S('64', '1'), 'malloc': S('7d0')},\n"
"                                       '2 of 3 allocators recorded')),\n"
"    V(5.5, 20, 21, P, '0xa00000007', D('500', {'arena': S('7')}, \"the process exited before the dump's end\")),\n"
"    V(6.0, 10, 11, P, '0xa00000005', D('6000000', {'malloc': S('bb8')},\n"
"                                       \"the recording ended before the dump's end\")),\n"
"]\n"
"assert v == want, v\n"
"c = [(e['name'], e['pid'], e['tid'], e['ts'], e['cat'], e['args']) for e in ev if e['ph'] == 'C']\n"
"def C(name, ts, value, pid=10, tid=11):\n"
"    return ('mem.dump.' + name, pid, tid, ts, 'memory', {'value': value})\n"
"assert c == [C('cache/entries', 1.0, 4096), C('cache/entries.objects', 1.0, 12), C('malloc', 1.0, 65536),\n"
"             C('cache/entries', 2.0, 8192), C('cache/entries.objects', 2.0, 20), C('malloc', 2.0, 131072),\n"
"             C('malloc', 3.0, 1000),\n"
"             C('cache/entries', 4.0, 100), C('cache/entries.objects', 4.0, 1), C('malloc', 4.0, 2000),\n"
"             C('arena', 5.5, 7, 20, 21), C('malloc', 6.0, 3000)], c\n"
"# each dump's events together: its v event, then its counters\n"
"k = [(e['ph'], e['ts']) for e in ev if e['ph'] in 'vC']\n"
"assert k == sorted(k, key=lambda x: (x[1], x[0] != 'v')), k\n"
"t = [(e['ts'], e['args']) for e in ev if e['ph'] == 'I']\n"
"assert t == [(1.15, {'i': 1}), (6.5, {'i': 2})], t\n"
"assert md['memory_dumps'] == 6 and md['memory_dump_records_without_dump'] == 2, md\n"
"assert md['unresolved_sites'] == 0 and md['events'] == 23, md\n";

/* Application memory dumps: catapult's v events (exact, incomplete ones
 * marked, never invented), the counters the other viewers draw, the
 * counts; the same events for an any-order sink, and filters and --split
 * keep a v event whole. */
static void test_memdumps(void **state)
{
	struct tb_convert_opts o = { .in = in_path, .out = out_path };
	struct tb_filter f = { 0 };
	const char *why;
	struct gots g = { 0 };
	size_t nv = 0, nc = 0;
	char *err, *out, part[300];
	int saved;

	(void)state;
	write_memdumps();
	assert_int_equal(convert(in_path, out_path, &err), 0);
	assert_string_equal(err, "");
	free(err);
	out = slurp(out_path);
	assert_non_null(strstr(out, "{\"ph\":\"v\",\"ts\":1.000,\"pid\":10,\"tid\":11,"
				    "\"cat\":\"memory\",\"name\":\"periodic_interval\","
				    "\"id\":\"0xa00000001\",\"args\":{\"dumps\":{"
				    "\"level_of_detail\":\"detailed\",\"process_totals\":"
				    "{\"resident_set_bytes\":\"1000000\"},\"allocators\":"
				    "{\"cache/entries\":{\"guid\":\""));
	assert_non_null(strstr(out, "{\"ph\":\"C\",\"ts\":1.000,\"pid\":10,\"tid\":11,"
				    "\"cat\":\"memory\",\"name\":\"mem.dump.malloc\","
				    "\"args\":{\"value\":65536}}"));
	assert_int_equal(py_check(out, py_memdumps), 0);
	free(out);

	/* an any-order sink gets them too, as does one in order */
	run_model(&g, true, NULL);
	for (size_t i = 0; i < g.n; i++) {
		nv += g.v[i].ph == 'v';
		nc += g.v[i].ph == 'C';
	}
	assert_int_equal(nv, 6);
	assert_int_equal(nc, 12);
	run_model(&g, false, NULL);
	assert_int_equal(g.n, 6 + 12 + 2);
	free(g.v);

	/* filtered: by the names of the events, the counts stay the trace's */
	assert_int_equal(tb_filter_add_names(&f, "explicitly_triggered,mem.dump.malloc", &why), 0);
	o.filter = &f;
	assert_int_equal(tb_convert(&o), 0);
	out = slurp(out_path);
	assert_int_equal(py_check(out,
"assert [(e['ph'], e['name'], e['ts']) for e in ev if e['ph'] != 'M'] == [\n"
"    ('C', 'mem.dump.malloc', 1.0), ('v', 'explicitly_triggered', 2.0), ('C', 'mem.dump.malloc', 2.0),\n"
"    ('C', 'mem.dump.malloc', 3.0), ('C', 'mem.dump.malloc', 4.0), ('C', 'mem.dump.malloc', 6.0)], ev\n"
"assert md['memory_dumps'] == 6 and md['filtered_out_trace_events'] == 14, md\n"), 0);
	free(out);
	tb_filter_free(&f);

	/* --split: a v event is one event, whole in its part */
	o.filter = NULL;
	o.split = 64 << 10;
	saved = capture_stderr();
	assert_int_equal(tb_convert(&o), 0);
	free(restore_stderr(saved));
	snprintf(part, sizeof(part), "%s/out-001.json", dir);
	out = slurp(part);
	unlink(part);
	assert_int_equal(py_check(out,
"assert len([e for e in ev if e['ph'] == 'v']) == 6 and md['split']['parts'] == 1, md\n"), 0);
	free(out);
}

/* A dump of more allocators than a v event holds, with paths to escape:
 * the v event keeps those that fit and says how many it left out, the
 * counters go up to the 1024 a dump keeps; the events recorded while it
 * is open come after it. */
static void test_memdump_large(void **state)
{
	struct tb_writer *w = open_trace(0);
	static const uint8_t t_u[] = { TB_ARG_UINT };
	static const char *const n_i[] = { "i" };
	char *err, *out, *v, name[300];

	(void)state;
	md_sites(w, 100, 10);
	site(w, 100, 10, MD_TICK, 'I', 't', "app", "tick", 1, t_u, n_i, SITE_OK);
	event_id2(w, 1000, 10, 11, MD_DUMP, MD_ID(1), 0x1000, 1, NULL);
	for (int i = 0; i < 1100; i++) {
		snprintf(name, sizeof(name), "big/%04d/\x01\"%0240d", i, 0);
		event_id2(w, 1001 + (uint64_t)i, 10, 11, MD_ALLOC2, MD_ID(1), (uint64_t)i, 1,
			  name);
	}
	/* while it is open, more events than the queue takes between two
	 * looks: they wait for the dump, which comes before them */
	for (uint64_t i = 0; i < 5000; i++)
		EV(w, 2200 + i, 10, 10, MD_TICK, i, 0);
	event_id2(w, 9000, 10, 11, MD_END, MD_ID(1), 1100, 0, NULL);
	assert_int_equal(tb_writer_close(w), 0);
	assert_int_equal(convert(in_path, out_path, &err), 0);
	free(err);
	out = slurp(out_path);
	assert_int_equal(py_check(out,
"v = [e for e in ev if e['ph'] == 'v']\n"
"assert len(v) == 1 and v[0]['name'] == 'explicitly_triggered', v\n"
"a = v[0]['args']['dumps']['allocators']\n"
"n = len(a)\n"
"assert 100 < n < 200, n\n"
"assert list(a) == ['big/%04d/\\x01\"%0240d' % (i, 0) for i in range(n)], list(a)[:2]\n"
"assert a['big/0007/\\x01\"%0240d' % 0]['attrs']['size']['value'] == '7'\n"
"assert v[0]['args']['tracebpf_incomplete'] == '%d allocators left out: more than one event holds' % (1100 - n)\n"
"c = [e for e in ev if e['ph'] == 'C']\n"
"assert len(c) == 2048 and c[-1]['name'] == 'mem.dump.big/1023/\\x01\"%0240d.objects' % 0, c[-1]\n"
"assert md['memory_dumps'] == 1 and 'memory_dump_records_without_dump' not in md, md\n"
"p = [e['ph'] for e in ev if e['ph'] != 'M']\n"
"assert p[0] == 'v' and len(p) == 1 + 2048 + 5000, len(p)\n"), 0);
	/* filled up to the record's limit (64 KiB with its header) */
	v = strstr(out, "{\"ph\":\"v\"");
	assert_non_null(v);
	assert_in_range(strchr(v, '\n') - v, 60000, UINT16_MAX + 200);
	free(out);
}

static int setup(void **state)
{
	*state = dir;
	if (tmpdir_make(dir, in_path, sizeof(in_path), "in.tbt"))
		return -1;
	snprintf(out_path, sizeof(out_path), "%s/out.json", dir);
	snprintf(err_path, sizeof(err_path), "%s/stderr.txt", dir);
	snprintf(py_path, sizeof(py_path), "%s/check.py", dir);
	return 0;
}

/* As the tracebpf CLI does: the library itself prints nothing. */
static void print_stderr(enum tracebpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	vfprintf(stderr, fmt, ap);
}

int main(void)
{
	tracebpf_set_print(print_stderr);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scenario),
		cmocka_unit_test(test_convert_file),
		cmocka_unit_test(test_equal_timestamps),
		cmocka_unit_test(test_long_open_slice),
		cmocka_unit_test(test_stopped_windows),
		cmocka_unit_test(test_ends_before_recording),
		cmocka_unit_test(test_gaps),
		cmocka_unit_test(test_gap_depths),
		cmocka_unit_test(test_memdumps),
		cmocka_unit_test(test_memdump_large),
		cmocka_unit_test(test_split_size),
		cmocka_unit_test(test_empty_trace),
		cmocka_unit_test(test_truncated_trace),
		cmocka_unit_test(test_stdin_stdout),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_templates),
		cmocka_unit_test(test_child_time_of_ghosts),
		cmocka_unit_test(test_child_time_at_random),
	};

	return cmocka_run_group_tests(tests, setup, tmpdir_teardown);
}
