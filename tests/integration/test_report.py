"""tracebpf report: its numbers against a program with known nesting and
counts, against the converted JSON of the same trace, losses first on a
recording through 4 KiB rings, --sort/--top, and bad input."""
import json
import re
import subprocess
from collections import defaultdict
from decimal import Decimal

import pytest

from conftest import ROOT, TRACEBPF, load, prog

GOLDEN = sorted((ROOT / "tests" / "data").glob("v*.tbt"))
# the four losses report and convert's metadata both count, among others
LOSS_KEYS = ("drops_total", "drops_per_cpu", "lost_processes", "unresolved_sites",
             "unmatched_ends", "ends_before_recording", "gaps", "gap_records", "kernel_gaps",
             "kernel_gap_records", "slices_cut_at_gaps", "ends_after_gaps", "events_in_gaps",
             "flow_events_left_out", "truncated_tail_bytes")
MARKS = ("tracebpf_unfinished", "tracebpf_incomplete")


def report(*args, check=True, **kw):
    p = subprocess.run([TRACEBPF, "report", *map(str, args)], capture_output=True, text=True,
                       timeout=300, **kw)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def report_json(*args):
    return json.loads(report("--json", *args).stdout)


def converted(tbt, tmp_path):
    out = tmp_path / (tbt.stem + ".json")
    c = subprocess.run([TRACEBPF, "convert", str(tbt), "-o", str(out)], capture_output=True,
                       text=True, timeout=300)
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


def cross_check(rep, doc):
    """Everything report says about slices, instants, counters, names and
    losses, recomputed from convert's JSON of the same trace."""
    meta = doc["metadata"]
    for k in LOSS_KEYS:
        assert rep["losses"][k] == meta[k], (k, rep["losses"][k], meta[k])
    assert rep["events"] == meta["events"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    pnames = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"]
              if e["ph"] == "M" and e["name"] == "process_name"}
    want = defaultdict(lambda: {"count": 0, "total_ns": 0, "incomplete": 0,
                                "incomplete_ns": 0, "unpaired": 0})
    instants = defaultdict(int)
    series = {}
    for e in doc["traceEvents"]:
        key = (e.get("pid"), e.get("tid"), e.get("cat"), e.get("name"))
        args = e.get("args", {})
        if e["ph"] == "X":
            w = want[key]
            if any(k in args for k in MARKS):
                w["incomplete"] += 1
                w["incomplete_ns"] += dur_ns(e)
            else:
                w["count"] += 1
                w["total_ns"] += dur_ns(e)
        elif e["ph"] == "I" and ("tracebpf_begin_of" in args or "tracebpf_end_of" in args):
            want[key]["unpaired"] += 1
        elif e["ph"] == "I":
            instants[key] += 1
        elif e["ph"] == "C":
            cid = int(e["id"], 16) if "id" in e else None
            for s, v in args.items():
                k = (e["pid"], e["cat"], e["name"], cid, s)
                lo, hi, _, n = series.get(k, (v, v, v, 0))
                series[k] = (min(lo, v), max(hi, v), v, n + 1)
    got = {}
    got_instants = {}
    for (pid, tid), t in threads_of(rep).items():
        assert t["name"] == names[(pid, tid)]
        assert t["process"] == pnames[pid]
        for s in t["slices"]:
            got[(pid, tid, s["cat"], s["name"])] = {k: s[k] for k in want.default_factory()}
        for i in t["instants"]:
            got_instants[(pid, tid, i["cat"], i["name"])] = i["count"]
    assert got == dict(want)
    assert got_instants == dict(instants)
    selfs = self_times(doc["traceEvents"])
    for (pid, tid), t in threads_of(rep).items():
        for s in t["slices"]:
            assert s["self_ns"] == selfs[(pid, tid, s["cat"], s["name"])], s
    got_series = {}
    for p in rep["processes"]:
        for c in p["counters"]:
            k = (p["pid"], c["cat"], c["name"], c.get("id"), c["series"])
            got_series[k] = (c["min"], c["max"], c["last"], c["samples"])
    assert got_series == {k: tuple(float(x) for x in v[:3]) + (v[3],)
                          for k, v in series.items()}


# ------------------------------------------------- a program with known numbers --

N, SPIN = 300, 20000   # iterations per thread; busy-wait ns


@pytest.fixture(scope="module")
def nest_trace(tmp_path_factory):
    """report_nest 2 N SPIN, recorded without scheduler events."""
    d = tmp_path_factory.mktemp("nest")
    p = subprocess.run([TRACEBPF, "record", "-q", "--no-sched", "-o", str(d / "t.json"), "--",
                        prog("report_nest"), "2", str(N), str(SPIN)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return d / "t.tbt"


def test_known_counts_nesting_and_counters(nest_trace):
    rep = report_json(nest_trace)
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
    for k in (1, 2):
        m = re.search(rf"^ thread \d+ nest-{k}: (\d+) slices \((\d+) incomplete\), (\d+) "
                      r"instants, (\d+) counter samples$", out, re.M)
        assert m and m.groups() == (str(5 * N + 1), "1", str(N), str(N)), out
    rows = re.findall(r"^    (outer|inner|leaf|unclosed) +(\d+) ", out, re.M)
    assert sorted(set(rows)) == sorted({("outer", str(N)), ("inner", str(2 * N)),
                                        ("leaf", str(2 * N)), ("unclosed", "0")}), rows
    assert re.search(r"^ +\d+ gauge +value +-3 +12 +7 +4  rep$", out, re.M), out


def test_json_matches_convert(nest_trace, tmp_path):
    cross_check(report_json(nest_trace), converted(nest_trace, tmp_path))


@pytest.mark.parametrize("golden", GOLDEN, ids=[g.name for g in GOLDEN])
def test_golden_files_match_convert(golden, tmp_path):
    # every format version; 2.2 stopped and started, 2.3 lost a process,
    # 2.4 lost records in gaps and cut a slice there
    cross_check(report_json(golden), converted(golden, tmp_path))


@pytest.mark.parametrize("cmd", [["fork_ghost"], ["pid_reuse"], ["numbered_nest", "2", "50", "3"],
                                 ["exec_chain"], ["api_events"]], ids=lambda c: c[0])
def test_processes_match_convert(recorder, tmp_path, cmd):
    # ghost slices after fork, a reused pid, async and flows, exec, COPY
    # names, counters with ids, names set by the application
    rec = recorder("--no-sched", "--", prog(cmd[0]), *cmd[1:]).wait()
    assert rec.rc == 0, rec.stderr
    cross_check(report_json(rec.tbt), converted(rec.tbt, tmp_path))


# ---------------------------------------------------------------- losses first --

# Paced like test_record's RATE_BOUNDED (2 M events/s): an iteration's 12
# events take at least 3 spins of this many ns, so two threads emit at most
# 2 M events/s; 50,000 iterations each, 1.2 M events in all, keep the JSON
# small however fast the machine is.
RATE_BOUNDED_SPIN = 4000


def test_drops_and_gaps_come_first(recorder, tmp_path):
    rec = recorder("--no-sched", "-b", "4K", "--flush-interval", "200", "--",
                   prog("report_nest"), 2, 50000, RATE_BOUNDED_SPIN).wait(timeout=120)
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
    rep = report_json(rec.tbt)
    assert rep["complete"] is False
    cut = sum(1 for e in t.by_ph("X") if "tracebpf_incomplete" in e.get("args", {}))
    assert cut == meta["slices_cut_at_gaps"]
    assert rep["incomplete_by_reason"].get("cut at a gap (lost events)") == cut
    incomplete = sum(1 for e in t.by_ph("X") if any(k in e.get("args", {}) for k in MARKS))
    assert rep["incomplete_slices"] == incomplete
    assert f"incomplete slices: {incomplete} (" in head
    cross_check(rep, converted(rec.tbt, tmp_path))


# ----------------------------------------------------------------- --sort/--top --

SORT_FIELD = {"total": "total_ns", "self": "self_ns", "count": "count", "max": "max_ns",
              "mean": "mean_ns"}


@pytest.mark.parametrize("by", sorted(SORT_FIELD))
def test_sort_orders_every_thread(nest_trace, by):
    rep = report_json("--sort", by, nest_trace)
    assert rep["sort"] == by
    field = SORT_FIELD[by]
    for t in threads_of(rep).values():
        values = [s[field] or 0 for s in t["slices"]]
        assert values == sorted(values, reverse=True), (by, t["slices"])
    if by == "count":   # inner and leaf tie at 2N: then by name
        for t in threads_of(rep).values():
            if t["slices"]:
                assert [s["name"] for s in t["slices"][:3]] == ["inner", "leaf", "outer"]


def test_top_limits_rows(nest_trace):
    rep = report_json("--top", 2, "--sort", "count", nest_trace)
    assert rep["top"] == 2
    workers = [t for t in threads_of(rep).values() if t["name"].startswith("nest-")]
    assert workers and all([s["name"] for s in t["slices"]] == ["inner", "leaf"]
                           for t in workers), workers
    lines = report("--top", 1, nest_trace).stdout.splitlines()
    heads = [i for i, l in enumerate(lines) if l == "  slices by total (1 of 4 names)"]
    assert len(heads) == 2, lines
    for i in heads:   # the header, one row (outer holds both inners), no more
        assert lines[i + 1].split()[:2] == ["name", "count"], lines[i:i + 4]
        assert lines[i + 2].split()[:2] == ["outer", str(N)], lines[i:i + 4]
        assert not lines[i + 3].startswith("    "), lines[i:i + 4]
    full = report_json(nest_trace)
    assert full["top"] is None
    assert all(len(t["slices"]) == 4 for t in threads_of(full).values()
               if t["name"].startswith("nest-"))


def test_stdin_reads_the_same(nest_trace):
    with open(nest_trace, "rb") as f:
        piped = json.loads(report("--json", "-", stdin=f).stdout)
    direct = report_json(nest_trace)
    assert piped.pop("trace") == "-" and direct.pop("trace") == str(nest_trace)
    assert piped == direct


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
