"""tracebpf report: its numbers against a program with known nesting and
counts, against the converted JSON of the same trace at every level (the
whole trace, each process, each thread with --per-thread), losses first on
a recording through 4 KiB rings, --sort/--top, convert's filters, and bad
input."""
import json
import math
import re
import subprocess
from collections import Counter, defaultdict
from decimal import Decimal

import pytest

from conftest import ROOT, TRACEBPF, load, perfetto_query, prog, scale, us_to_ns

GOLDEN = sorted((ROOT / "tests" / "data").glob("v*.tbt"))
# the four losses report and convert's metadata both count, among others
LOSS_KEYS = ("drops_total", "drops_per_cpu", "lost_processes", "unresolved_sites",
             "unmatched_ends", "ends_before_recording", "gaps", "gap_records", "kernel_gaps",
             "kernel_gap_records", "slices_cut_at_gaps", "ends_after_gaps", "events_in_gaps",
             "flow_events_left_out", "truncated_tail_bytes")
MARKS = ("tracebpf_unfinished", "tracebpf_incomplete", "tracebpf_begin_lost")


def report(*args, check=True, **kw):
    p = subprocess.run([TRACEBPF, "report", *map(str, args)], capture_output=True, text=True,
                       timeout=300, **kw)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def report_json(*args):
    return json.loads(report("--json", *args).stdout)


PT = "--per-thread"
LAYOUT = 2   # the JSON's tracebpf_report
# the counts every level (whole_trace, a process, a thread) has
LEVEL_COUNTS = ("slice_count", "incomplete_slices", "instant_count", "counter_samples",
                "async_events", "flow_events")


def converted(tbt, tmp_path, *args):
    """convert's JSON of tbt (with args: its options, e.g. filters)."""
    out = tmp_path / (tbt.stem + ".json")
    c = subprocess.run([TRACEBPF, "convert", str(tbt), "-o", str(out), *map(str, args)],
                       capture_output=True, text=True, timeout=300)
    assert c.returncode == 0, c.stderr
    with open(out, "rb") as f:   # exact decimals: ts and dur are integer ns / 1000
        doc = json.loads(f.read().decode(), parse_float=Decimal)
    return doc


def ns(us):
    """A ts (three decimals of us) in integer ns."""
    ns = Decimal(us) * 1000
    assert ns == int(ns), us
    return int(ns)


def dur_ns(e):
    """An X event's duration in ns. dur is written so that ts + dur added
    in doubles is the end's own double (docs/output.md): the end in ns is
    that double's nearest integer ns."""
    end = float(e["ts"]) + float(e["dur"])
    return round(Decimal(end) * 1000) - ns(e["ts"])


def threads_of(rep):
    """{(pid, tid): thread} of a report document, each with its process."""
    out = {}
    for p in rep["processes"]:
        for t in p["threads"]:
            out[(p["pid"], t["tid"])] = dict(t, process=p["name"])
    return out


def slices_of(thread):
    return {(s["cat"], s["name"]): s for s in thread["slices"]}


def self_times(events):
    """Per (pid, tid, cat, name), the self time of the X events: each
    slice's duration minus those of the slices directly inside it on its
    thread (complete ones only, as report counts them)."""
    per_thread = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            per_thread[(e["pid"], e["tid"])].append(e)
    self = defaultdict(int)
    for (pid, tid), evs in per_thread.items():
        stack = []   # [end, dur, child, key, complete]

        def close():
            end, dur, child, key, complete = stack.pop()
            if complete:
                self[key] += dur - min(child, dur)
        # the converter's order: by ts, longer first
        for e in sorted(evs, key=lambda e: (ns(e["ts"]), -dur_ns(e))):
            b, d = ns(e["ts"]), dur_ns(e)
            while stack and (stack[-1][0] <= b or stack[-1][0] < b + d):
                close()
            if stack:
                stack[-1][2] += d
            complete = not any(k in e.get("args", {}) for k in MARKS)
            stack.append([b + d, d, 0, (pid, tid, e["cat"], e["name"]), complete])
        while stack:
            close()
    return self


def exact_quantile(durs, q):
    """The value of rank ceil(q * n) of durs, as tb_hist_quantile ranks."""
    v = sorted(durs)
    return v[min(max(math.ceil(q * len(v)), 1), len(v)) - 1]


def expected_level(events):
    """What report says of a level (the whole trace, a process, a thread)
    whose events, convert's, these are: (counts, slices, instants), each
    slice name with the durations of its complete slices."""
    counts = Counter({k: 0 for k in LEVEL_COUNTS})
    slices = defaultdict(lambda: {"count": 0, "total_ns": 0, "incomplete": 0,
                                  "incomplete_ns": 0, "unpaired": 0, "durs": []})
    instants = Counter()
    for e in events:
        key, args, kind = (e["cat"], e["name"]), e.get("args", {}), KIND.get(e["ph"])
        if e["ph"] == "X":
            w, d = slices[key], dur_ns(e)
            counts["slice_count"] += 1
            if any(k in args for k in MARKS):
                counts["incomplete_slices"] += 1
                w["incomplete"] += 1
                w["incomplete_ns"] += d
            else:
                w["count"] += 1
                w["total_ns"] += d
                w["durs"].append(d)
        elif e["ph"] == "I" and ("tracebpf_begin_of" in args or "tracebpf_end_of" in args):
            slices[key]["unpaired"] += 1
        elif e["ph"] == "I":
            counts["instant_count"] += 1
            instants[key] += 1
        elif kind in ("counter_samples", "async", "flow"):
            counts[kind if kind == "counter_samples" else kind + "_events"] += 1
    return counts, slices, instants


def check_level(level, events, selfs, what):
    """A level of report's JSON against convert's events of it: counts,
    each name's count, total, self, incomplete and unpaired, and min, max,
    p50 and p99 of all its complete slices (exact merges of its threads':
    within the histogram's error of the exact value of that rank).
    selfs: {(cat, name): self time} of the level's slices."""
    counts, want, instants = expected_level(events)
    assert {k: level[k] for k in LEVEL_COUNTS} == dict(counts), (what, level, counts)
    got = {(s["cat"], s["name"]): s for s in level["slices"]}
    assert sorted(got) == sorted(want), (what, sorted(got), sorted(want))
    for key, w in want.items():
        s, durs = got[key], w["durs"]
        for k in ("count", "total_ns", "incomplete", "incomplete_ns", "unpaired"):
            assert s[k] == w[k], (what, key, k, s[k], w[k])
        assert s["self_ns"] == selfs.get(key, 0), (what, key, s["self_ns"], selfs.get(key))
        if not durs:
            assert s["p50_ns"] is None and s["min_ns"] is None, (what, s)
            continue
        assert (s["min_ns"], s["max_ns"]) == (min(durs), max(durs)), (what, s)
        assert s["mean_ns"] == s["total_ns"] // s["count"], (what, s)
        for q, k in ((0.5, "p50_ns"), (0.99, "p99_ns")):
            exact = exact_quantile(durs, q)
            assert abs(s[k] - exact) * 128 <= exact, (what, key, k, s[k], exact)
    assert {(i["cat"], i["name"]): i["count"] for i in level["instants"]} == dict(instants), what


def check_levels(rep, doc):
    """The whole trace, each process and (with --per-thread) each thread
    of report's JSON, each against convert's events of it alone."""
    events = [e for e in doc["traceEvents"] if e["ph"] != "M"]
    selfs = self_times(doc["traceEvents"])
    by_pid, by_thread = defaultdict(list), defaultdict(list)
    for e in events:
        by_pid[e["pid"]].append(e)
        by_thread[(e["pid"], e["tid"])].append(e)

    def check(level, evs, keep, what):
        """keep(pid, tid): whether a thread is the level's."""
        sums = defaultdict(int)
        for (pid, tid, cat, name), v in selfs.items():
            if keep(pid, tid):
                sums[(cat, name)] += v
        check_level(level, evs, sums, what)

    whole = rep["whole_trace"]
    assert whole["process_count"] == len(by_pid) == len(rep["processes"])
    assert whole["thread_count"] == len(by_thread)
    check(whole, events, lambda pid, tid: True, "whole trace")
    assert [p["pid"] for p in rep["processes"]] == sorted(by_pid)
    for p in rep["processes"]:
        pid = p["pid"]
        assert p["thread_count"] == sum(1 for k in by_thread if k[0] == pid), p
        check(p, by_pid[pid], lambda a, b, pid=pid: a == pid, f"process {pid}")
        assert ("threads" in p) == rep["per_thread"], p.keys()
        for t in p.get("threads", []):
            pt = (pid, t["tid"])
            check(t, by_thread[pt], lambda a, b, pt=pt: (a, b) == pt, f"thread {pt}")


def cross_check(rep, doc):
    """Everything report says about slices, instants, counters, names and
    losses, recomputed from convert's JSON of the same trace, at every
    level (rep is --per-thread's)."""
    assert rep["tracebpf_report"] == LAYOUT and rep["per_thread"] is True
    check_levels(rep, doc)
    meta = doc["metadata"]
    for k in LOSS_KEYS:
        assert rep["losses"][k] == meta[k], (k, rep["losses"][k], meta[k])
    # convert writes it only when there are gaps; report always
    assert rep["losses"]["slices_parent_lost"] == meta.get("slices_parent_lost", 0)
    # the chain breaks: convert writes them only for a trace with switches
    assert rep["losses"]["sched_breaks"] == meta.get("sched_breaks", 0)
    assert {k: v for k, v in rep["losses"]["sched_breaks_by_cause"].items() if v} == \
        {k: v for k, v in meta.get("sched_breaks_by_cause", {}).items() if v}
    assert rep["events"] == meta["events"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    pnames = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"]
              if e["ph"] == "M" and e["name"] == "process_name"}
    for p in rep["processes"]:
        assert p["name"] == pnames[p["pid"]], p["name"]
    for (pid, tid), t in threads_of(rep).items():
        assert t["name"] == names[(pid, tid)]
        assert t["process"] == pnames[pid]
    series = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "C":
            cid = int(e["id"], 16) if "id" in e else None
            for s, v in e.get("args", {}).items():
                k = (e["pid"], e["cat"], e["name"], cid, s)
                lo, hi, _, n = series.get(k, (v, v, v, 0))
                series[k] = (min(lo, v), max(hi, v), v, n + 1)
    got_series = {}
    for p in rep["processes"]:
        for c in p["counters"]:
            k = (p["pid"], c["cat"], c["name"], c.get("id"), c["series"])
            got_series[k] = (c["min"], c["max"], c["last"], c["samples"])
    assert got_series == {k: tuple(float(x) for x in v[:3]) + (v[3],)
                          for k, v in series.items()}
    # the totals before the levels are the whole trace's
    whole = rep["whole_trace"]
    assert (rep["slices"], rep["incomplete_slices"], rep["instants"], rep["counter_samples"],
            rep["async_events"], rep["flow_events"]) == tuple(whole[k] for k in LEVEL_COUNTS)
    kinds = kind_counts(doc)
    assert (rep["async_events"], rep["flow_events"]) == (kinds["async"], kinds["flow"]), kinds


# the kinds report counts events by (its filtered_out keys)
KIND = {"X": "slices", "I": "instants", "C": "counter_samples", "b": "async", "e": "async",
        "n": "async", "s": "flow", "t": "flow", "f": "flow"}


def kind_counts(doc):
    """The trace events (not M) of a converted JSON, by kind."""
    return Counter(KIND.get(e["ph"], "other") for e in doc["traceEvents"] if e["ph"] != "M")


# ------------------------------------------------- a program with known numbers --

N, SPIN = 300, 20000   # iterations per thread; busy-wait ns


@pytest.fixture(scope="module")
def nest_trace(tmp_path_factory):
    """report_nest 2 N SPIN, recorded without scheduler events."""
    d = tmp_path_factory.mktemp("nest")
    p = subprocess.run([TRACEBPF, "record", "-q", "--no-sched", "--no-memory",
                        "-o", str(d / "t.json"), "--",
                        prog("report_nest"), "2", str(N), str(SPIN)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return d / "t.tbt"


def test_known_counts_nesting_and_counters(nest_trace):
    rep = report_json(PT, nest_trace)
    assert rep["complete"] is True, rep["losses"]
    assert rep["losses"]["drops_total"] == 0
    workers = {t["name"]: t for t in threads_of(rep).values() if t["name"].startswith("nest-")}
    assert sorted(workers) == ["nest-1", "nest-2"], workers.keys()
    for name, t in workers.items():
        s = slices_of(t)
        outer, inner, leaf = s[("rep", "outer")], s[("rep", "inner")], s[("rep", "leaf")]
        assert (outer["count"], inner["count"], leaf["count"]) == (N, 2 * N, 2 * N), name
        for x in (outer, inner, leaf):
            assert x["incomplete"] == 0 and x["unpaired"] == 0, x
            assert x["min_ns"] <= x["p50_ns"] <= x["p99_ns"] <= x["max_ns"], x
            assert x["min_ns"] <= x["mean_ns"] <= x["max_ns"], x
            assert x["mean_ns"] == x["total_ns"] // x["count"], x
        # self = total minus the slices directly inside: outer holds exactly
        # the inners, an inner exactly one leaf, a leaf nothing
        assert outer["self_ns"] == outer["total_ns"] - inner["total_ns"]
        assert inner["self_ns"] == inner["total_ns"] - leaf["total_ns"]
        assert leaf["self_ns"] == leaf["total_ns"]
        assert 0 < outer["self_ns"] < outer["total_ns"]
        # ranges from the busy-waits: an inner spins SPIN, an outer SPIN
        # and two inners (p50 within the histogram's error)
        assert inner["min_ns"] >= SPIN and outer["min_ns"] >= 3 * SPIN
        assert inner["p50_ns"] >= SPIN * (1 - rep["percentile_relative_error"])
        assert inner["total_ns"] > leaf["total_ns"]
        # the slice left open at the thread's exit is counted apart
        unclosed = s[("rep", "unclosed")]
        assert (unclosed["count"], unclosed["incomplete"]) == (0, 1), unclosed
        assert unclosed["p50_ns"] is None and unclosed["total_ns"] == 0
        assert t["incomplete_slices"] == 1
        assert {(i["name"], i["count"]) for i in t["instants"]} == {("mark", N)}
    assert rep["incomplete_slices"] == 2
    assert rep["incomplete_by_reason"] == {"thread exited": 2}
    # the whole trace and the process: both threads' slices together
    for level in (rep["whole_trace"], rep["processes"][0]):
        s = slices_of(level)
        outer, inner, leaf = s[("rep", "outer")], s[("rep", "inner")], s[("rep", "leaf")]
        assert (outer["count"], inner["count"], leaf["count"]) == (2 * N, 4 * N, 4 * N)
        assert outer["self_ns"] == outer["total_ns"] - inner["total_ns"]
        assert inner["self_ns"] == inner["total_ns"] - leaf["total_ns"]
        assert (s[("rep", "unclosed")]["count"], s[("rep", "unclosed")]["incomplete"]) == (0, 2)
        assert {(i["name"], i["count"]) for i in level["instants"]} == {("mark", 2 * N)}
        assert level["incomplete_slices"] == 2
    counters = {(c["name"], c.get("id")): c for p in rep["processes"] for c in p["counters"]}
    g = counters[("gauge", None)]
    assert (g["min"], g["max"], g["last"], g["samples"]) == (-3, 12, 7, 4)
    for k in (1, 2):
        c = counters[("progress", k)]
        assert (c["min"], c["max"], c["last"], c["samples"]) == (0, N - 1, N - 1, N)


def test_text_says_the_same(nest_trace):
    out = report(nest_trace).stdout
    lines = out.splitlines()
    assert lines[0] == "trace: complete (nothing lost)", lines[0]
    assert re.search(r"^incomplete slices: 2 \(2 thread exited\)", out, re.M), out
    # the whole trace: one process, its main thread (4 gauge samples) and
    # two workers; the process's tables are the same, and said so
    whole = (str(10 * N + 2), "2", str(2 * N), str(2 * N + 4))
    m = re.search(r"^whole trace \(1 process, 3 threads\): (\d+) slices \((\d+) incomplete\), "
                  r"(\d+) instants, (\d+) counter samples$", out, re.M)
    assert m and m.groups() == whole, out
    m = re.search(r"^process \d+ \S+ \(3 threads\): (\d+) slices \((\d+) incomplete\), "
                  r"(\d+) instants, (\d+) counter samples\n(.*)$", out, re.M)
    assert m and m.groups() == whole + ("  slices and instants: as the whole trace's (its only "
                                        "process)",), out
    rows = re.findall(r"^    (outer|inner|leaf|unclosed) +(\d+) ", out, re.M)
    assert sorted(set(rows)) == sorted({("outer", str(2 * N)), ("inner", str(4 * N)),
                                        ("leaf", str(4 * N)), ("unclosed", "0")}), rows
    assert re.search(r"^ +\d+ gauge +value +-3 +12 +7 +4  rep$", out, re.M), out
    out = report(PT, nest_trace).stdout
    for k in (1, 2):
        m = re.search(rf"^ thread \d+ nest-{k}: (\d+) slices \((\d+) incomplete\), (\d+) "
                      r"instants, (\d+) counter samples$", out, re.M)
        assert m and m.groups() == (str(5 * N + 1), "1", str(N), str(N)), out
    rows = re.findall(r"^    (outer|inner|leaf|unclosed) +(\d+) ", out, re.M)
    assert sorted(set(rows)) == sorted({("outer", str(N)), ("inner", str(2 * N)),
                                        ("leaf", str(2 * N)), ("unclosed", "0"),
                                        ("outer", str(2 * N)), ("inner", str(4 * N)),
                                        ("leaf", str(4 * N))}), rows


def test_json_matches_convert(nest_trace, tmp_path):
    cross_check(report_json(PT, nest_trace), converted(nest_trace, tmp_path))


@pytest.mark.parametrize("golden", GOLDEN, ids=[g.name for g in GOLDEN])
def test_golden_files_match_convert(golden, tmp_path):
    # every format version; 2.2 stopped and started, 2.3 lost a process,
    # 2.4 lost records in gaps and cut a slice there
    cross_check(report_json(PT, golden), converted(golden, tmp_path))


@pytest.mark.parametrize("cmd", [["fork_ghost"], ["pid_reuse"], ["numbered_nest", "2", "50", "3"],
                                 ["exec_chain"], ["api_events"]], ids=lambda c: c[0])
def test_processes_match_convert(recorder, tmp_path, cmd):
    # ghost slices after fork, a reused pid, async and flows, exec, COPY
    # names, counters with ids, names set by the application
    rec = recorder("--no-sched", "--no-memory", "--", prog(cmd[0]), *cmd[1:]).wait()
    assert rec.rc == 0, rec.stderr
    cross_check(report_json(PT, rec.tbt), converted(rec.tbt, tmp_path))


# ---------------------------------------------------------------- losses first --

# Paced like test_record's RATE_BOUNDED (2 M events/s): an iteration's 12
# events take at least 3 spins of this many ns, so two threads emit at most
# 2 M events/s; 50,000 iterations each, 1.2 M events in all, keep the JSON
# small however fast the machine is.
RATE_BOUNDED_SPIN = 4000


def test_drops_and_gaps_come_first(recorder, tmp_path):
    # the fast-path rings may not grow: their overflow is what the 4K rings
    # drop (test_record.NO_GROWTH)
    rec = recorder("--no-sched", "--no-memory", "-b", "4K", "--flush-interval", "200",
                   "--fast-buffer-max", "64K", "--",
                   prog("report_nest"), 2, scale(10000, 50000), RATE_BOUNDED_SPIN).wait(timeout=120)
    assert rec.rc == 0, rec.stderr
    t = load(rec.out, consumer=False)
    meta = t.meta
    assert meta["drops_total"] > 0 and meta["gaps"] > 0, meta
    assert meta["slices_cut_at_gaps"] > 0, meta
    out = report(rec.tbt).stdout.splitlines()
    assert out[0] == "trace: INCOMPLETE: events are missing, see below", out[:3]
    first_process = next(i for i, l in enumerate(out) if l.startswith("process "))
    head = "\n".join(out[:first_process])
    per_cpu = " ".join(map(str, meta["drops_per_cpu"]))
    assert f"drops:            {meta['drops_total']} events lost in full ring buffers " \
           f"(per cpu: {per_cpu})" in head, head
    assert f"gaps:             {meta['gaps']} ({meta['gap_records']} application records " \
           "lost)" in head, head
    assert f"at gaps:          {meta['slices_cut_at_gaps']} slices cut" in head, head
    rep = report_json(PT, rec.tbt)
    assert rep["complete"] is False
    cut = sum(1 for e in t.by_ph("X") if "tracebpf_incomplete" in e.get("args", {}))
    assert cut == meta["slices_cut_at_gaps"]
    assert rep["incomplete_by_reason"].get("cut at a gap (lost events)") == cut
    # slices whose BEGIN the gap's mark says was lost, drawn from its end
    begun = sum(1 for e in t.by_ph("X") if "tracebpf_begin_lost" in e.get("args", {}))
    assert rep["incomplete_by_reason"].get("begun in a gap (lost events)", 0) == begun
    incomplete = sum(1 for e in t.by_ph("X") if any(k in e.get("args", {}) for k in MARKS))
    assert rep["incomplete_slices"] == incomplete
    assert f"incomplete slices: {incomplete} (" in head
    cross_check(rep, converted(rec.tbt, tmp_path))


# ----------------------------------------------------------------- --sort/--top --

SORT_FIELD = {"total": "total_ns", "self": "self_ns", "count": "count", "max": "max_ns",
              "mean": "mean_ns"}


def levels_of(rep):
    """Every level of a report document: the whole trace, the processes,
    the threads."""
    return [rep["whole_trace"], *rep["processes"], *threads_of(rep).values()]


@pytest.mark.parametrize("by", sorted(SORT_FIELD))
def test_sort_orders_every_table(nest_trace, by):
    rep = report_json(PT, "--sort", by, nest_trace)
    assert rep["sort"] == by
    field = SORT_FIELD[by]
    levels = levels_of(rep)
    assert len(levels) == 5   # the trace, its process, 3 threads
    for level in levels:
        values = [s[field] or 0 for s in level["slices"]]
        assert values == sorted(values, reverse=True), (by, level["slices"])
    if by == "count":   # inner and leaf tie (at 2N a thread, 4N above): then by name
        for level in levels:
            if level["slices"]:
                assert [s["name"] for s in level["slices"][:3]] == ["inner", "leaf", "outer"]


def test_top_limits_rows(nest_trace):
    rep = report_json(PT, "--top", 2, "--sort", "count", nest_trace)
    assert rep["top"] == 2
    tables = [l for l in levels_of(rep) if l["slice_count"]]
    assert len(tables) == 4 and all([s["name"] for s in l["slices"]] == ["inner", "leaf"]
                                    for l in tables), tables
    # the whole trace's table (the process's is the same), then each
    # worker's: the header, one row (outer holds both inners), no more
    for args, want in (([], [2 * N]), ([PT], [2 * N, N, N])):
        lines = report("--top", 1, *args, nest_trace).stdout.splitlines()
        heads = [i for i, l in enumerate(lines) if l == "  slices by total (1 of 4 names)"]
        assert len(heads) == len(want), lines
        for i, count in zip(heads, want):
            assert lines[i + 1].split()[:2] == ["name", "count"], lines[i:i + 4]
            assert lines[i + 2].split()[:2] == ["outer", str(count)], lines[i:i + 4]
            assert not lines[i + 3].startswith("    "), lines[i:i + 4]
    full = report_json(PT, nest_trace)
    assert full["top"] is None
    assert all(len(l["slices"]) == 4 for l in levels_of(full) if l["slice_count"])


def test_stdin_reads_the_same(nest_trace):
    with open(nest_trace, "rb") as f:
        piped = json.loads(report("--json", "-", stdin=f).stdout)
    direct = report_json(nest_trace)
    assert piped.pop("trace") == "-" and direct.pop("trace") == str(nest_trace)
    assert piped == direct


# ----------------------------------------------------------------- the levels --

def text_tables(out):
    """{section: {name: count}} of report's text: each section (the whole
    trace, a process, a thread: its header line up to the first ':') with
    the rows of its first slice table."""
    tables, section, rows = {}, None, None
    for line in out.splitlines():
        if line.startswith(("whole trace", "process ", " thread ")):
            section = line.split(":")[0].strip()
            tables[section], rows = {}, None
        elif line.startswith("  slices by ") and not line.startswith("  slices by self"):
            rows = tables[section]
        elif line.startswith("  "):
            m = re.match(r"^    (\S+) +(\d+) ", line)
            if rows is not None and m:
                rows[m[1]] = int(m[2])
            elif not line.startswith("    "):
                rows = None
        else:
            rows = None
    return tables


def test_whole_trace_is_the_sum_of_its_threads(nest_trace):
    """Two worker threads: what the whole trace says of each name is the
    sum of what --per-thread says of the threads (min and max theirs),
    in the JSON and on the terminal."""
    rep = report_json(PT, nest_trace)
    threads = threads_of(rep).values()
    workers = [t for t in threads if t["slices"]]
    assert len(workers) == 2, threads
    whole = slices_of(rep["whole_trace"])
    names = set().union(*(slices_of(t) for t in workers))
    assert set(whole) == names, (whole.keys(), names)
    for key in names:
        parts = [slices_of(t)[key] for t in workers if key in slices_of(t)]
        for k in ("count", "total_ns", "self_ns", "incomplete", "incomplete_ns", "unpaired"):
            assert whole[key][k] == sum(p[k] for p in parts), (key, k, whole[key], parts)
        complete = [p for p in parts if p["count"]]
        if complete:
            assert whole[key]["min_ns"] == min(p["min_ns"] for p in complete), key
            assert whole[key]["max_ns"] == max(p["max_ns"] for p in complete), key
    for k in LEVEL_COUNTS:
        assert rep["whole_trace"][k] == sum(t[k] for t in threads), k
    marks = Counter()
    for t in workers:
        marks.update({(i["cat"], i["name"]): i["count"] for i in t["instants"]})
    assert {(i["cat"], i["name"]): i["count"] for i in rep["whole_trace"]["instants"]} == marks
    # the terminal: the whole trace's rows against the threads' rows
    tables = text_tables(report(PT, "--top", 0, nest_trace).stdout)
    whole_rows = tables.pop("whole trace (1 process, 3 threads)")
    thread_rows = [rows for section, rows in tables.items() if section.startswith("thread ")]
    assert len(thread_rows) == 3, tables.keys()
    sums = Counter()
    for rows in thread_rows:
        sums.update(rows)
    assert whole_rows == dict(sums) and whole_rows["outer"] == 2 * N, (whole_rows, thread_rows)


def test_processes_have_their_own_tables(fe_trace, tmp_path):
    """Two processes: each has its counts and tables, on the terminal and
    in the JSON; they add up to the whole trace's, and each is what
    convert's JSON says of that pid (and without --per-thread no thread
    is shown)."""
    tbt, full = fe_trace
    rep = report_json(tbt)
    assert rep["per_thread"] is False
    procs = rep["processes"]
    assert len(procs) == 2 and all(p["slice_count"] > 0 and p["slices"] for p in procs), procs
    assert not any("threads" in p for p in procs), procs[0].keys()
    check_levels(rep, full)
    for k in LEVEL_COUNTS:
        assert rep["whole_trace"][k] == sum(p[k] for p in procs), k
    total = Counter()
    for p in procs:
        total.update({key: s["count"] for key, s in slices_of(p).items()})
    assert {key: s["count"] for key, s in slices_of(rep["whole_trace"]).items()} == total
    out = report("--top", 0, tbt).stdout
    assert not re.search(r"^ thread ", out, re.M), out
    tables = text_tables(out)
    for p in procs:
        head = next(l for l in out.splitlines() if l.startswith(f"process {p['pid']} "))
        assert head.endswith(f" (2 threads): {p['slice_count']} slices ("
                             f"{p['incomplete_slices']} incomplete), {p['instant_count']} "
                             f"instants, {p['counter_samples']} counter samples, "
                             f"{p['async_events']} async events, {p['flow_events']} flow "
                             "events"), head
        rows = tables[head.split(":")[0]]
        assert rows == {s["name"]: s["count"] for s in p["slices"]}, (rows, p["slices"])


def test_per_thread_adds_the_threads(nest_trace):
    """--per-thread: under each process, each thread's header and tables,
    the process's and the whole trace's unchanged."""
    plain, pt = report(nest_trace).stdout, report(PT, nest_trace).stdout
    assert not re.search(r"^ thread ", plain, re.M), plain
    heads = re.findall(r"^ thread \d+ (\S+): ", pt, re.M)
    assert sorted(heads) == ["nest-1", "nest-2", "report_nest"], heads
    tables = text_tables(pt)
    workers = {s: rows for s, rows in tables.items() if re.match(r"thread \d+ nest-", s)}
    assert len(workers) == 2, tables.keys()
    for rows in workers.values():
        assert rows == {"outer": N, "inner": 2 * N, "leaf": 2 * N, "unclosed": 0}, rows
    # the rest is what plain says
    rest, in_thread = [], False
    for line in pt.splitlines():
        in_thread = line.startswith(" thread ") or in_thread and line.startswith("  ")
        if not in_thread:
            rest.append(line)
    assert rest == plain.splitlines()


def test_json_has_three_levels(nest_trace):
    """The layout: whole_trace, then processes, each with its threads
    under --per-thread only; the levels above the threads do not depend on
    --per-thread."""
    plain, pt = report_json(nest_trace), report_json(PT, nest_trace)
    for rep in (plain, pt):
        assert rep["tracebpf_report"] == LAYOUT
        assert list(rep) == ["tracebpf_report", "trace", "sort", "top", "per_thread", "complete",
                             "losses", "filters", "filtered_out", "kept_trace_events", "events",
                             "slices", "incomplete_slices", "incomplete_by_reason", "unpaired",
                             "instants", "counter_samples", "async_events", "flow_events",
                             "percentile_relative_error", "whole_trace", "processes"], list(rep)
        level = list(LEVEL_COUNTS) + ["slices", "instants"]
        assert list(rep["whole_trace"]) == ["process_count", "thread_count"] + level
        for p in rep["processes"]:
            assert list(p)[:3 + len(level) + 1] == ["pid", "name", "thread_count"] + level + \
                ["counters"], list(p)
    assert plain["per_thread"] is False and pt["per_thread"] is True
    assert all("threads" not in p for p in plain["processes"])
    for p in pt["processes"]:
        assert len(p["threads"]) == p["thread_count"] == 3, p
        for t in p["threads"]:
            assert list(t) == ["tid", "name"] + level, list(t)
        p.pop("threads")
    pt["per_thread"] = False
    assert pt == plain


# -------------------------------------------------------------------- filters --

FE_ROUNDS = 120


@pytest.fixture(scope="module")
def fe_trace(tmp_path_factory):
    """Two tests/progs/filter_events processes (a producer and a consumer
    thread each: slices, instants, counters, async slices and flows from
    one thread to the other), recorded without scheduler events; returns
    (.tbt, convert's unfiltered JSON of it)."""
    d = tmp_path_factory.mktemp("rfilt")
    fe = prog("filter_events")
    p = subprocess.run([TRACEBPF, "record", "-q", "--no-sched", "--no-memory",
                        "-o", str(d / "t.json"), "--",
                        "sh", "-c", f"{fe} {FE_ROUNDS} & {fe} {FE_ROUNDS}; wait"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return d / "t.tbt", converted(d / "t.tbt", d)


def fe_workers(doc):
    """{thread name: [(pid, tid)]} of the filter_events threads."""
    out = defaultdict(list)
    for e in doc["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "thread_name":
            out[e["args"]["name"]].append((e["pid"], e["tid"]))
    assert len(out["producer"]) == 2 and len(out["consumer"]) == 2, dict(out)
    return out


def fe_window(doc):
    """A 30 ms window in whole ms, in the middle third of the events, after
    start_ts: (from_ns, to_ns)."""
    start = doc["metadata"]["start_ts"]
    ts = sorted(ns(e["ts"]) - start for e in doc["traceEvents"] if e["ph"] != "M")
    a = ts[len(ts) // 2] // 1000000 * 1000000
    return a, a + 30000000


# each a function of the unfiltered JSON: the options
FILTERS = {
    "pid": lambda doc: ["--pid", fe_workers(doc)["consumer"][1][0]],
    # the producer begins the async slices and flows: their ends on the
    # consumer come with them
    "tid": lambda doc: ["--tid", fe_workers(doc)["producer"][0][1]],
    "cat": lambda doc: ["--cat", "beta,pair"],
    "name": lambda doc: ["--name", "io.*,m?rk", "--name", "job"],
    "time": lambda doc: ["--time", "%dms,%dms" % tuple(x // 1000000 for x in fe_window(doc))],
    "combined": lambda doc: ["--pid", fe_workers(doc)["consumer"][0][0], "--cat", "alpha,pair",
                             "--time", "%dms,+30ms" % (fe_window(doc)[0] // 1000000)],
}


@pytest.mark.parametrize("which", sorted(FILTERS))
def test_filters_match_convert(fe_trace, tmp_path, which):
    """report with a filter says what convert's JSON of the same filters on
    the same .tbt says; the losses stay the whole trace's."""
    tbt, full = fe_trace
    args = FILTERS[which](full)
    rep = report_json(PT, *args, tbt)
    doc = converted(tbt, tmp_path, *args)
    cross_check(rep, doc)
    meta = doc["metadata"]
    assert rep["filters"] == meta["filters"], (rep["filters"], meta["filters"])
    out = rep["filtered_out"]
    assert out["trace_events"] == meta["filtered_out_trace_events"], (out, meta)
    assert 0 < out["trace_events"] < sum(kind_counts(full).values()), \
        f"the test's filter {args} leaves out nothing or everything: it would prove nothing"
    kept, all_ = kind_counts(doc), kind_counts(full)
    assert rep["kept_trace_events"] == sum(kept.values())
    for k in ("slices", "instants", "counter_samples", "async", "flow"):
        field = k if k in out else k + "_events"
        assert out[field] == all_[k] - kept[k], (k, out, all_, kept)
    for k in LOSS_KEYS:   # not the filtered events': the whole trace's
        assert rep["losses"][k] == full["metadata"][k], k
    # so are the chain breaks (the filtered JSON's would count those its
    # filter makes)
    assert rep["losses"]["sched_breaks"] == full["metadata"].get("sched_breaks", 0)
    assert rep["events"] == full["metadata"]["events"]


def test_filters_in_text(fe_trace):
    tbt, full = fe_trace
    a, b = (x // 1000000 for x in fe_window(full))
    args = ["--pid", fe_workers(full)["consumer"][0][0], "--cat", "alpha,pair", "--time",
            f"{a}ms,{b}ms"]
    rep = report_json(*args, tbt)
    lines = report(*args, tbt).stdout.splitlines()
    line = next(l for l in lines if l.startswith("filters:"))
    out = rep["filtered_out"]
    assert line == (f"filters:          {' '.join(map(str, args))}: kept "
                    f"{rep['kept_trace_events']} of {rep['kept_trace_events'] + out['trace_events']}"
                    f" trace events, left out {out['trace_events']} ({out['slices']} slices, "
                    f"{out['instants']} instants and unpaired, {out['counter_samples']} counter "
                    f"samples, {out['async_events']} async, {out['flow_events']} flow)"), line
    assert lines.index(line) < next(i for i, l in enumerate(lines) if l.startswith("events:"))
    assert not any(l.startswith("filters:") for l in report(tbt).stdout.splitlines())


@pytest.mark.parametrize("args", [["--name", "*"], ["--time", ","], ["--time", "0s,"],
                                  ["--cat", "alpha,beta,pair,rep*", "--name", "*"]],
                         ids=["name", "time", "time0", "cat-name"])
def test_filter_keeping_everything(fe_trace, args):
    tbt, full = fe_trace
    filtered = report_json(*args, tbt)
    whole = report_json(tbt)
    assert filtered.pop("filtered_out")["trace_events"] == 0
    assert filtered.pop("filters") and whole.pop("filters") == {}
    whole.pop("filtered_out")
    assert filtered == whole


@pytest.mark.parametrize("opt,value", [
    ("--time", "1s"), ("--time", "1,2s"), ("--time", "1s,2x"), ("--time", "2s,1s"),
    ("--time", "1s,+0ms"), ("--time", "0.0000000001s,1s"), ("--pid", "12,x"),
    ("--tid", "1,,2"), ("--pid", "99999999"), ("--cat", ""), ("--name", "a,"),
])
def test_bad_filter_values_as_convert(fe_trace, tmp_path, opt, value):
    tbt, _ = fe_trace
    c = subprocess.run([TRACEBPF, "convert", str(tbt), "-o", str(tmp_path / "x.json"), opt, value],
                       capture_output=True, text=True, timeout=60)
    r = report(tbt, opt, value, check=False)
    assert c.returncode == 64 and r.returncode == c.returncode, (c, r)
    assert r.stdout == ""
    assert f"tracebpf: report: bad {opt} '{value}': " in r.stderr, r.stderr
    assert r.stderr == c.stderr.replace("tracebpf convert", "tracebpf report") \
        .replace("tracebpf: convert:", "tracebpf: report:"), (r.stderr, c.stderr)


# ------------------------------------------------------------------- bad input --

def test_missing_file(tmp_path):
    p = report(tmp_path / "none.tbt", check=False)
    assert p.returncode == 1 and p.stdout == ""
    assert f"tracebpf: report: failed to open '{tmp_path / 'none.tbt'}': No such file" \
        in p.stderr, p.stderr


@pytest.mark.parametrize("content", [b"", b"not a trace\n" * 100], ids=["empty", "text"])
def test_not_a_trace(tmp_path, content):
    f = tmp_path / "x.tbt"
    f.write_bytes(content)
    p = report(f, check=False)
    assert p.returncode == 1 and p.stdout == "", p
    assert "failed to open" in p.stderr and "not a tracebpf trace" in p.stderr, p.stderr


def test_usage_errors(nest_trace):
    for args in (["--sort", "name", nest_trace], ["--top", "-1", nest_trace], [],
                 [nest_trace, nest_trace]):
        p = report(*args, check=False)
        assert p.returncode == 64 and p.stdout == "", (args, p)
        assert "tracebpf report:" in p.stderr, p.stderr


def test_torn_trace_says_so(nest_trace, tmp_path):
    data = nest_trace.read_bytes()
    cut = tmp_path / "cut.tbt"
    cut.write_bytes(data[:len(data) * 2 // 3])
    p = report(cut)
    lines = p.stdout.splitlines()
    assert lines[0] == "trace: INCOMPLETE: events are missing, see below"
    assert any(l.startswith("truncated tail:   ") for l in lines), p.stdout
    rep = report_json(cut)
    assert rep["complete"] is False and rep["losses"]["truncated_tail_bytes"] > 0
    assert rep["losses"]["finished"] is False


def test_full_stdout_fails(nest_trace):
    with open("/dev/full", "w") as full:
        p = subprocess.run([TRACEBPF, "report", str(nest_trace)], stdout=full,
                           stderr=subprocess.PIPE, text=True, timeout=60)
    assert p.returncode == 1
    assert "failed to write '<stdout>'" in p.stderr, p.stderr


def test_report_and_perfetto_agree(recorder):
    """The same trace, summed by tracebpf report and by Perfetto's trace
    processor over the JSON: a program with nesting (report_nest), async
    slices, flows, counters, instants (api_events) and a fork with slices
    open (fork_ghost). Per category and name, trace processor's count and
    total duration of the slices on threads and processes equal report's
    slices (complete and incomplete) and instants; per process and
    counter series, the samples, min and max. Where the two count
    differently by design (docs/output.md, "What Perfetto's trace
    processor reports"), the relation holds: an async begin..end pair is
    one slice there (and each async instant one), report counts the async
    events; a flow of k events is k - 1 arrows there, report counts the
    events."""
    sh = f"{prog('api_events')}; {prog('report_nest')} 2 50 1000; {prog('fork_ghost')}"
    rec = recorder("--", "sh", "-c", sh).wait(timeout=120)
    t = rec.trace()
    rep = report_json(rec.tbt)
    rows = perfetto_query(rec.out, """
        select s.category cat, s.name, t.type like 'legacy_async%' async,
               count(*) n, sum(s.dur) d
        from slice s join track t on s.track_id = t.id group by 1, 2, 3""")
    tp = {(r["cat"], r["name"]): (int(r["n"]), int(r["d"])) for r in rows if r["async"] == "0"}
    mine = defaultdict(lambda: [0, 0])
    for s in rep["whole_trace"]["slices"]:
        mine[(s["cat"], s["name"])][0] += s["count"] + s["incomplete"]
        mine[(s["cat"], s["name"])][1] += s["total_ns"] + s["incomplete_ns"]
    for s in rep["whole_trace"]["instants"]:
        mine[(s["cat"], s["name"])][0] += s["count"]
    assert tp == {k: tuple(v) for k, v in mine.items()}, (tp, dict(mine))
    w = rep["whole_trace"]
    # (slice_count holds the incomplete ones)
    assert sum(n for n, _ in tp.values()) == w["slice_count"] + w["instant_count"]
    # every kind was there: nesting, incomplete slices, the fork's ghosts
    assert w["incomplete_slices"] > 0 and tp[("rep", "leaf")][0] == 200
    assert tp[("test", "manual")][0] == 2   # the parent's, and the child's inherited one

    # async: Perfetto's slices against the JSON's events, report's total
    ev = [e for e in t.events if e["ph"] in "ben"]
    assert rep["async_events"] == len(ev) and ev
    async_tp = {(r["cat"], r["name"]): (int(r["n"]), int(r["d"])) for r in rows
                if r["async"] == "1"}
    want, open_ = defaultdict(lambda: [0, 0]), defaultdict(list)
    for e in ev:
        k = (e["cat"], e["name"])
        if e["ph"] == "b":
            open_[(e["pid"], e["id"]) + k].append(e)
        elif e["ph"] == "e":
            b = open_[(e["pid"], e["id"]) + k].pop()
            want[k][0] += 1
            want[k][1] += us_to_ns(e["ts"]) - us_to_ns(b["ts"])
        else:
            want[k][0] += 1
    assert async_tp == {k: tuple(v) for k, v in want.items()}, (async_tp, dict(want))

    # flows: arrows against events
    flows = [e for e in t.events if e["ph"] in "stf"]
    assert rep["flow_events"] == len(flows) and flows
    (arrows,) = perfetto_query(rec.out, "select count(*) n from flow")
    assert int(arrows["n"]) == len(flows) - sum(1 for e in flows if e["ph"] == "s")

    # counters: each process's series
    rows = perfetto_query(rec.out, """
        select p.pid, t.name, count(*) n, min(c.value) lo, max(c.value) hi
        from counter c join process_counter_track t on c.track_id = t.id
        join process p using (upid) group by 1, 2""")
    tp = {(int(r["pid"]), r["name"]): (int(r["n"]), float(r["lo"]), float(r["hi"])) for r in rows}
    mine = {}
    for p in rep["processes"]:
        for c in p.get("counters", []):
            name = c["name"] + (f" id: {c['id']:#x}" if "id" in c else "") + " " + c["series"]
            mine[(p["pid"], name)] = (c["samples"], float(c["min"]), float(c["max"]))
    assert tp == mine and any(n[1].startswith("progress id: 0x1") for n in mine), (tp, mine)
