"""tracebpf convert's filters (--pid, --tid, --cat, --name, --time), --split
and the warning about files too large for some viewers.

One recording of two tests/progs/filter_events processes (a producer and
a consumer thread each, slices, instants, counters, and async slices and
flows from one thread to the other) is converted with and without the
options. The expected events are always computed from the unfiltered
conversion of the same .tbt with the rules of docs/tracebpf-convert.md
(FILTERS), never written down; the filtered output must equal them
exactly, in order."""
import fnmatch
import json
import re
import subprocess
from collections import Counter

import pytest

from conftest import SCHED_BREAK_CAT, TRACEBPF, Trace, load, prog

ROUNDS = 120


def convert(tbt, out, *args, env=None):
    return subprocess.run([TRACEBPF, "convert", str(tbt), "-o", str(out), *map(str, args)],
                          capture_output=True, text=True, timeout=120, env=env)


@pytest.fixture(scope="module")
def rec(tmp_path_factory):
    """Records `sh -c 'filter_events & filter_events; wait'` once; returns
    (directory, .tbt, the unfiltered Trace)."""
    d = tmp_path_factory.mktemp("filters")
    fe = prog("filter_events")
    # --no-memory: the memory samples of three processes starting would fill
    # most of test_split's first part before the first session begins
    p = subprocess.run([TRACEBPF, "record", "-q", "--no-memory", "-o", str(d / "all.json"),
                        "--", "sh", "-c", f"{fe} {ROUNDS} & {fe} {ROUNDS}; wait"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    full = load(d / "all.json")
    return d, d / "all.tbt", full


def key(e):
    return json.dumps(e, sort_keys=True)


def events(t):
    """The events but the marks of the CPUs' chain breaks, which follow
    from the kernel lines a filter keeps (each file's own; conftest.load
    checks them)."""
    return [e for e in t.events if e["ph"] != "M" and e.get("cat") != SCHED_BREAK_CAT]


def ns(us):
    return round(us * 1000)


def workers(full):
    """{thread name: [(pid, tid)]} of the filter_events threads."""
    out = {}
    for (pid, tid), name in full.thread_names().items():
        out.setdefault(name, []).append((pid, tid))
    assert len(out["producer"]) == 2 and len(out["consumer"]) == 2, out
    return out


class Rules:
    """The FILTERS rules over the unfiltered events."""

    def __init__(self, start_ts, pids=(), tids=(), cats=(), names=(), window=None):
        self.start = start_ts
        self.pids, self.tids, self.cats, self.names = set(pids), set(tids), cats, names
        self.window = window    # (from_ns, to_ns or None) after start_ts

    def point_or_slice(self, e):
        if self.pids and e["pid"] not in self.pids:
            return False
        if self.tids and e["tid"] not in self.tids:
            return False
        if self.cats and not any(fnmatch.fnmatchcase(e["cat"], g) for g in self.cats):
            return False
        if self.names and not any(fnmatch.fnmatchcase(e["name"], g) for g in self.names):
            return False
        if self.window is None:
            return True
        lo = self.start + self.window[0]
        hi = None if self.window[1] is None else self.start + self.window[1]
        ts = ns(e["ts"])
        if hi is not None and ts >= hi:
            return False
        if ts >= lo:
            return True
        return e["ph"] == "X" and ns(e["dur"]) > 0 and ns(e["ts"] + e["dur"]) > lo

    def expected(self, evs):
        """Pairs (async b..e by cat+id, flows s..f by cat+name+id) follow
        their first event, b or s; everything else is judged alone."""
        decided = {}
        for e in evs:
            if e["ph"] in "bs":
                decided.setdefault(pair_key(e), self.point_or_slice(e))
        out = []
        for e in evs:
            k = pair_key(e)
            keep = decided[k] if k in decided else self.point_or_slice(e)
            if keep:
                out.append(e)
        return out


def pair_key(e):
    if e["ph"] in "be":
        return ("async", e["pid"], e["cat"], e["id"])
    if e["ph"] in "stf":
        return ("flow", e["cat"], e["name"], e["id"])
    return None


def check_whole_pairs(evs):
    """No half async slice or flow: every begin has its end."""
    c = Counter((pair_key(e), e["ph"]) for e in evs if pair_key(e))
    for (k, ph), n in c.items():
        other = {"b": "e", "e": "b", "s": "f", "f": "s"}[ph]
        assert c[(k, other)] == n, f"half of {k}: {n} {ph}, {c[(k, other)]} {other}"


def check_names(t):
    """Every process and thread the events name has its M names."""
    threads = t.thread_names()
    procs = t.process_names()
    every = [e for e in t.events if e["ph"] != "M"]
    for e in every:
        assert (e["pid"], e["tid"]) in threads, f"no thread_name for {e}"
        assert e["pid"] in procs, f"no process_name for {e}"
    named = {(e["pid"], e["tid"]) for e in every}
    for pt in threads:
        assert pt in named, f"thread_name of {pt}, which no event names"


def run_filtered(rec, name, *args):
    d, tbt, full = rec
    out = d / f"{name}.json"
    p = convert(tbt, out, *args)
    assert p.returncode == 0, p.stderr
    return load(out, consumer=False), out


def assert_filtered(rec, name, rules, *args, consumer=False):
    d, tbt, full = rec
    t, out = run_filtered(rec, name, *args)
    want = [key(e) for e in rules.expected(events(full))]
    got = [key(e) for e in events(t)]
    assert want, f"the test's filter {args} keeps nothing: it would prove nothing"
    assert len(want) < len(events(full)), f"the test's filter {args} keeps everything"
    assert got == want, (f"{args}: {len(got)} events, expected {len(want)}; missing "
                         f"{sorted(set(want) - set(got))[:5]}, extra {sorted(set(got) - set(want))[:5]}")
    check_whole_pairs(events(t))
    check_names(t)
    if consumer:
        load(out)
    return t


def start_ts(full):
    return full.meta["start_ts"]


def test_filter_pid(rec):
    d, tbt, full = rec
    w = workers(full)
    pid = w["producer"][1][0]
    t = assert_filtered(rec, "pid", Rules(start_ts(full), pids=[pid]), "--pid", pid,
                        consumer=True)
    assert t.meta["filters"] == {"pid": [pid]}
    # and the marks of its chain breaks (the CPUs' process's: left out)
    assert not [e for e in t.events if e.get("cat") == SCHED_BREAK_CAT]
    assert t.meta["filtered_out_trace_events"] == \
        len(events(full)) - len(events(t)) + t.meta["sched_breaks"]


def test_filter_tid_list_and_repeat(rec):
    d, tbt, full = rec
    w = workers(full)
    a, b = w["producer"][0][1], w["consumer"][1][1]
    rules = Rules(start_ts(full), tids=[a, b])
    t = assert_filtered(rec, "tids", rules, "--tid", f"{a},{b}")
    t2 = assert_filtered(rec, "tids2", rules, "--tid", a, "--tid", b)
    assert [key(e) for e in events(t)] == [key(e) for e in events(t2)]
    # flows and async slices begin on the producer: kept whole, their ends
    # on its process's consumer come with them
    assert any(e["ph"] in "ef" and e["tid"] not in (a, b) for e in events(t))


def test_filter_tid_kernel_lines(rec):
    """Kernel lines by tid: the line's own task, a switch's next task, a
    wakeup's woken task; cpu_idle and cpu_frequency name no task: kept."""
    d, tbt, full = rec
    tid = workers(full)["consumer"][0][1]
    t, _ = run_filtered(rec, "ktid", "--tid", tid)

    def names_tid(line):
        if re.search(r": cpu_(idle|frequency): ", line):
            return True
        m = re.match(r"^\s*.+-(\d+)\s+\(", line)
        if int(m.group(1)) == tid:
            return True
        m = re.search(r"next_pid=(\d+)", line) or re.search(r"sched_wak\w+: comm=\S+ pid=(\d+)", line)
        return bool(m) and int(m.group(1)) == tid

    lines = full.doc["systemTraceEvents"].splitlines()[2:]
    want = [ln for ln in lines if names_tid(ln)]
    got = t.doc["systemTraceEvents"].splitlines()[2:]
    assert want and len(want) < len(lines)
    assert got == want
    assert t.meta["filtered_out_kernel_records"] >= len(lines) - len(want)


@pytest.mark.parametrize("globs", [["al*"], ["beta", "pair"], ["beta,pair"]])
def test_filter_cat(rec, globs):
    d, tbt, full = rec
    args = [a for g in globs for a in ("--cat", g)]
    cats = [c for g in globs for c in g.split(",")]
    t = assert_filtered(rec, "cat", Rules(start_ts(full), cats=cats), *args)
    assert t.meta["filters"] == {"cat": cats}


def test_filter_name(rec):
    d, tbt, full = rec
    t = assert_filtered(rec, "name", Rules(start_ts(full), names=["io.*", "m?rk"]),
                        "--name", "io.*,m?rk", consumer=True)
    assert {e["name"] for e in events(t)} == {"io.read", "mark"}


def trace_span(full):
    ts = [ns(e["ts"]) - start_ts(full) for e in events(full)]
    return min(ts), max(ts)


def window_at(full, at, keep=lambda e: True):
    """The whole millisecond (ns after start_ts) at or before the first
    event `keep` takes at `at` or later: a window from there holds that
    event, whatever gaps the recording has (the two filter_events
    processes overlap in time only as the machine's load lets them)."""
    s0 = start_ts(full)
    ts = sorted(ns(e["ts"]) - s0 for e in events(full) if keep(e))
    later = [t for t in ts if t >= at] or ts[-1:]
    return later[0] // 1000000 * 1000000


@pytest.mark.parametrize("form", ["abs", "rel", "units"])
def test_filter_time_forms(rec, form):
    """The same window, written three ways, gives exactly the events the
    rules say (slices overlapping it, points inside it)."""
    d, tbt, full = rec
    lo, hi = trace_span(full)
    a = window_at(full, lo + (hi - lo) // 3)    # whole ms after start_ts
    b = a + 20000000
    arg = {"abs": f"{a // 1000000}ms,{b // 1000000}ms",
           "rel": f"{a // 1000000}ms,+20ms",
           "units": f"{a / 1e9:.3f}s,{b // 1000}us"}[form]
    t = assert_filtered(rec, f"time-{form}", Rules(start_ts(full), window=(a, b)),
                        "--time", arg, consumer=form == "abs")
    assert t.meta["filters"] == {"time_from_ns": a, "time_to_ns": b}


def test_filter_time_edges(rec):
    """A window starting inside a slice keeps it; an event at END is out."""
    d, tbt, full = rec
    s0 = start_ts(full)
    xs = [e for e in events(full) if e["ph"] == "X" and e["name"] == "round" and ns(e["dur"]) > 2]
    inner = xs[len(xs) // 2]
    a = ns(inner["ts"]) - s0 + ns(inner["dur"]) // 2
    marks = [e for e in events(full) if e["ph"] == "I" and ns(e["ts"]) - s0 > a + 5000000]
    b = ns(marks[0]["ts"]) - s0
    t = assert_filtered(rec, "edges", Rules(s0, window=(a, b)), "--time", f"{a}ns,{b}ns")
    assert key(inner) in map(key, events(t)), "the slice the window starts in"
    assert key(marks[0]) not in map(key, events(t)), "the instant at END"


def test_filter_time_open_ends(rec):
    d, tbt, full = rec
    lo, hi = trace_span(full)
    mid = (lo + hi) // 2 // 1000 * 1000
    assert_filtered(rec, "tail", Rules(start_ts(full), window=(mid, None)), "--time",
                    f"{mid // 1000}us,")
    t = assert_filtered(rec, "head", Rules(start_ts(full), window=(0, mid)), "--time",
                        f",{mid}ns")
    # kernel lines are cut at the window too (to the microsecond the line shows)
    end = (start_ts(full) + mid) / 1e9
    for line in t.doc["systemTraceEvents"].splitlines()[2:]:
        assert float(re.search(r"\s(\d+\.\d+):\s", line).group(1)) <= end, line


def test_filter_combined(rec):
    d, tbt, full = rec
    w = workers(full)
    pid = w["consumer"][0][0]
    lo, hi = trace_span(full)
    a = window_at(full, (lo + hi) // 2,
                  lambda e: e["pid"] == pid and e.get("cat") in ("beta", "pair"))
    rules = Rules(start_ts(full), pids=[pid], cats=["beta", "pair"], window=(a, a + 30000000))
    t = assert_filtered(rec, "comb", rules, "--pid", pid, "--cat", "beta,pair", "--time",
                        f"{a // 1000000}ms,+30ms", consumer=True)
    assert t.meta["filters"] == {"pid": [pid], "cat": ["beta", "pair"],
                                 "time_from_ns": a, "time_to_ns": a + 30000000}


@pytest.mark.parametrize("opt,value,why", [
    ("--time", "1s", "give START,END"),
    ("--time", "1,2s", "a time needs a unit"),
    ("--time", "1s,2x", "unknown unit"),
    ("--time", "2s,1s", "END is not after START"),
    ("--time", "1s,+0ms", "END is not after START"),
    ("--time", "1.5.2s,3s", "unknown unit"),
    ("--time", "0.0000000001s,1s", "more than nine decimals"),
    ("--pid", "12,x", "not a number"),
    ("--tid", "1,,2", "an empty item"),
    ("--pid", "99999999", "too large"),
    ("--cat", "", "an empty item"),
    ("--split", "1K", "give a size of at least 64K"),
    ("--split", "lots", "give a size of at least 64K"),
])
def test_bad_values(rec, opt, value, why):
    d, tbt, full = rec
    out = d / "bad.json"
    p = convert(tbt, out, opt, value)
    assert p.returncode == 64, (p.returncode, p.stderr)
    assert f"tracebpf: convert: bad {opt} '{value}': {why}" in p.stderr, p.stderr
    assert not out.exists()


@pytest.mark.parametrize("out", ["-", "x.json.gz"])
def test_split_needs_a_file(rec, out):
    d, tbt, full = rec
    p = subprocess.run([TRACEBPF, "convert", str(tbt), "-o", out, "--split", "1M"],
                       capture_output=True, text=True, cwd=d, timeout=60)
    assert p.returncode == 64, p.stderr
    assert "--split writes files" in p.stderr and p.stdout == ""


def split_parts(rec, name, size, *args):
    d, tbt, full = rec
    out = d / f"{name}.json"
    for old in d.glob(f"{name}-*.json"):
        old.unlink()
    p = convert(tbt, out, "--split", size, *args)
    assert p.returncode == 0, p.stderr
    paths = sorted(d.glob(f"{name}-*.json"))
    assert not out.exists()
    assert [x.name for x in paths] == [f"{name}-{i:03d}.json" for i in range(1, len(paths) + 1)]
    assert f"wrote {len(paths)} parts: {paths[0]} to {paths[-1]}" in p.stderr
    return paths


def check_parts(paths, whole):
    """The parts, each loaded on its own by every check and DevTools, add
    up to `whole` (a Trace) exactly: events, kernel lines, in order."""
    parts = [load(x) for x in paths]
    want = [key(e) for e in events(whole)]
    got = [key(e) for t in parts for e in events(t)]
    assert sorted(got) == sorted(want), "events lost or written twice"
    assert len(set(want)) == len(want)
    order = {k: n for n, k in enumerate(want)}
    for i, t in enumerate(parts, 1):   # each part in the order of the whole
        seq = [order[key(e)] for e in events(t)]
        assert seq == sorted(seq), f"part {i} is not in the whole's order"
    kernel = [ln for t in parts for ln in t.doc["systemTraceEvents"].splitlines()[2:]]
    assert kernel == whole.doc["systemTraceEvents"].splitlines()[2:]
    # the whole's chain breaks, each marked in one part; a part counts
    # those whose two switches it holds (load checked them with Perfetto)
    marks = [key(e) for t in parts for e in t.events if e.get("cat") == SCHED_BREAK_CAT]
    assert sorted(marks) == sorted(key(e) for e in whole.events
                                   if e.get("cat") == SCHED_BREAK_CAT)
    assert sum(t.meta["sched_breaks"] for t in parts) <= whole.meta["sched_breaks"]
    n = len(parts)
    for i, t in enumerate(parts, 1):
        check_names(t)
        check_whole_pairs(events(t))
        sp = t.meta["split"]
        assert (sp["part"], sp["parts"]) == (i, n)
        assert ("from_ts" in sp) == (i > 1) and ("to_ts" in sp) == (i < n)
        if i < n:
            assert parts[i].meta["split"]["from_ts"] == sp["to_ts"]
        # every event in its span, but the later events of a pair, which
        # are all in the part of its first event
        first = {}
        for e in events(t):
            k = pair_key(e)
            if k is None or k not in first:
                assert sp.get("from_ts", 0) <= ns(e["ts"]) < sp.get("to_ts", 2 ** 64), (i, e)
                if k:
                    first[k] = i
        # a part without events holds the kernel lines that filled it
        assert events(t) or len(t.doc["systemTraceEvents"].splitlines()) > 2, f"part {i} is empty"
    where = {}
    for i, t in enumerate(parts, 1):
        for e in events(t):
            if pair_key(e):
                assert where.setdefault(pair_key(e), i) == i, f"{pair_key(e)} in two parts"
    return parts


def test_split(rec):
    d, tbt, full = rec
    paths = split_parts(rec, "sp", "128K")
    assert len(paths) >= 3, [x.stat().st_size for x in paths]
    parts = check_parts(paths, full)
    # each process's session, open from its first event to its last, does
    # not hold the cuts back: it is whole in the part where it begins, the
    # first one's in the first part with events. (The two processes overlap by chance:
    # on a loaded machine the second may begin after the first cut.)
    sessions = [[(e["pid"], e["ph"]) for e in events(t) if e["name"] == "session"]
                for t in parts]
    begun = {pid: i for i, s in enumerate(sessions) for pid, ph in s if ph == "b"}
    ended = {pid: i for i, s in enumerate(sessions) for pid, ph in s if ph == "e"}
    # (the scheduler lines before the first event may fill parts of their own)
    first = min(i for i, t in enumerate(parts) if events(t))
    assert len(begun) == 2 and begun == ended and first in begun.values(), sessions
    # about SIZE: the events and kernel lines; names and metadata on top
    # (the first part also holds every kernel line before the first event)
    for x in paths[1:-1]:
        assert 128 * 1024 <= x.stat().st_size < 128 * 1024 * 1.5, (x, x.stat().st_size)


def test_split_kernel_burst(tmp_path):
    """Regression: a part was cut only before an application event, so
    the scheduler lines between two events all went into one part (a
    middle part of 251,425 bytes for --split 128K). pingpong's one slice
    holds 2,000 switches: they spread over parts of about SIZE, the
    lines after its end too."""
    p = subprocess.run([TRACEBPF, "record", "-q", "--no-memory", "--no-json",
                        "-o", str(tmp_path / "pp.tbt"), "--", prog("pingpong"), "1000"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    whole = tmp_path / "pp.json"
    assert convert(tmp_path / "pp.tbt", whole).returncode == 0
    full = load(whole)
    paths = split_parts((tmp_path, tmp_path / "pp.tbt", full), "pps", "128K")
    kernel = len(full.doc["systemTraceEvents"])
    assert len(paths) >= kernel // (128 * 1024) - 1, (kernel, len(paths))
    parts = check_parts(paths, full)
    assert sum(1 for t in parts if not events(t)) >= 2   # kernel lines only
    for x in paths[1:-1]:
        assert 128 * 1024 <= x.stat().st_size < 128 * 1024 * 1.5, (x, x.stat().st_size)


def test_split_parts_reach_size(tmp_path):
    """Regression: a part began counting its kernel text at the 4 KiB mark
    before its first event, so it counted up to 4 KiB of the previous
    part's lines as its own and ended short of SIZE (a middle part of
    130,239 bytes for --split 128K; 14 short parts in this sweep, of 466).
    Every part but the last reaches SIZE, at 11 sizes from 64K to 194K, in
    a trace of events with scheduler lines between them."""
    tbt = tmp_path / "fe.tbt"
    p = subprocess.run([TRACEBPF, "record", "-q", "--no-memory", "--no-json", "-o", str(tbt),
                        "--", prog("filter_events"), "2000"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    short, cuts = [], 0
    for k in range(64, 200, 13):
        out = tmp_path / f"r{k}.json"
        c = convert(tbt, out, "--split", f"{k}K")
        assert c.returncode == 0, c.stderr
        paths = sorted(tmp_path.glob(f"r{k}-*.json"))
        cuts += len(paths) - 1
        short += [(k, x.name, x.stat().st_size) for x in paths[:-1]
                  if x.stat().st_size < k * 1024]
        for x in paths:
            x.unlink()
    assert cuts > 50, cuts
    assert short == []


def test_split_filtered(rec):
    """Filters and --split: the parts add up to the filtered conversion."""
    d, tbt, full = rec
    pid = workers(full)["producer"][0][0]
    t, _ = run_filtered(rec, "flt", "--pid", pid)
    paths = split_parts(rec, "spf", "64K", "--pid", pid)
    assert len(paths) >= 2
    parts = check_parts(paths, t)
    assert all(p.meta["filters"] == {"pid": [pid]} for p in parts)


def size_text(n):
    """As convert writes a size (lib/convert/convert.c, format_size)."""
    if n >= 1 << 30:
        return f"{n / (1 << 30):.1f} GiB"
    if n >= 100 << 20:
        return f"{n / (1 << 20):.0f} MiB"
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    return f"{n / 1024:.0f} KiB"


def test_size_warning(rec):
    """Above the limit (lowered for the test: TRACEBPF_TEST_VIEWER_MAX), one
    warning naming the file, its size and the limit; exit 0."""
    d, tbt, full = rec
    out = d / "big.json"
    p = convert(tbt, out)
    assert p.returncode == 0 and "DevTools" not in p.stderr, p.stderr
    size = out.stat().st_size
    env = {"TRACEBPF_TEST_VIEWER_MAX": str(size // 2), "PATH": "/usr/bin:/bin"}
    p = convert(tbt, out, env=env)
    assert p.returncode == 0, p.stderr
    warn = [ln for ln in p.stderr.splitlines() if "DevTools" in ln]
    assert len(warn) == 1, p.stderr
    assert re.search(rf"warning: {re.escape(str(out))} is {size_text(size)}; DevTools and other "
                     rf"viewers that read the file as one string open at most "
                     rf"{size_text(size // 2)}: take a window with --time, --pid, --tid, --cat or --name, or cut it "
                     r"with --split 400M", warn[0]), warn[0]
    assert Trace(out).doc["traceEvents"]   # written whole all the same
    # into a pipe, and through gzip (the size a viewer reads once decompressed)
    p = convert(tbt, "-", env=env)
    assert p.returncode == 0 and json.loads(p.stdout)["traceEvents"]
    assert f"warning: <stdout> is {size_text(size)}; DevTools" in p.stderr, p.stderr
    p = convert(tbt, d / "big.json.gz", env=env)
    assert p.returncode == 0, p.stderr
    assert f"big.json.gz is {size_text(size)} once decompressed; DevTools" in p.stderr, p.stderr
    # under the limit: nothing said; with --split, parts under it: nothing
    env["TRACEBPF_TEST_VIEWER_MAX"] = str(size + 1)
    assert "DevTools" not in convert(tbt, out, env=env).stderr
    env["TRACEBPF_TEST_VIEWER_MAX"] = str(size // 2)
    p = convert(tbt, d / "bigs.json", "--split", "64K", env=env)
    assert p.returncode == 0 and "DevTools" not in p.stderr, p.stderr


@pytest.mark.parametrize("mount,error", [
    ("ro", r"failed to create '.*/x-001\.json': Read-only file system"),
    ("size=150k", r"failed to (write|create) '.*/x-\d{3}\.json': No space left on device"),
])
def test_split_fails_whole(rec, tmp_path, mount, error):
    """A part that cannot be created or written (a read-only or full file
    system, in a private mount namespace): exit 1, said once with the
    part's name, and no part left behind, not even the ones written."""
    d, tbt, full = rec
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    p = subprocess.run(["unshare", "-m", "sh", "-c",
                        f'mount -t tmpfs -o {mount} tmpfs "$1" && "$2" convert "$3" -o "$1/x.json" '
                        '--split 64K; rc=$?; ls -A "$1"; exit $rc',
                        "sh", str(mnt), TRACEBPF, str(tbt)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert re.search(r"tracebpf: convert: " + error, p.stderr), p.stderr
    assert len(p.stderr.strip().splitlines()) == 2, p.stderr   # the failure and its hint
    assert p.stdout == "", f"left behind: {p.stdout}"
