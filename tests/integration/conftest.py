"""Shared helpers for the integration tests: run the real recorder (real BPF,
real instrumented child processes), parse the real JSON it writes, and check
every file against the Chrome JSON rules, the DevTools trace engine and
Perfetto's trace processor."""
import csv
import io
import json
import math
import os
import signal
import subprocess
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from systrace import check_system_trace

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
TRACEBPF = str(BUILD / "tracebpf")
PROGS = BUILD / "progs"
CONSUMER = ROOT / "tests" / "consumers" / "devtools_check.mjs"
# Perfetto's trace processor, the engine of ui.perfetto.dev: a static binary
# in the read-only shared/ beside the repository (in CI too)
TRACE_PROCESSOR = ROOT.parent / "shared" / "perfetto" / "trace_processor_shell"


def prog(name):
    return str(PROGS / name)


def wait_for(pred, timeout=90.0, what="condition"):
    """Poll pred() until true. The timeout only bounds a hung test; nothing
    asserts on how long anything took. It is long: with the tests side by
    side on two CPUs, loading and attaching a recorder's BPF programs has
    taken over 20 s."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


class Trace:
    """A parsed Chrome JSON trace with convenience views."""

    def __init__(self, path):
        self.path = Path(path)
        with open(path, "rb") as f:
            raw = f.read()
        self.doc = json.loads(raw.decode("utf-8"))
        self.events = self.doc["traceEvents"]
        self.meta = self.doc.get("metadata", {})

    def by_ph(self, ph):
        return [e for e in self.events if e.get("ph") == ph]

    def named(self, name, ph=None):
        return [e for e in self.events if e.get("name") == name and (ph is None or e["ph"] == ph)]

    def thread_names(self):
        return {(e["pid"], e["tid"]): e["args"]["name"]
                for e in self.events if e["ph"] == "M" and e["name"] == "thread_name"}

    def process_labels(self):
        return {e["pid"]: e["args"]["labels"]
                for e in self.events if e["ph"] == "M" and e["name"] == "process_labels"}

    def process_names(self):
        return {e["pid"]: e["args"]["name"]
                for e in self.events if e["ph"] == "M" and e["name"] == "process_name"}


def check_chrome_rules(t):
    """Every rule of docs/output.md that applies to traceEvents."""
    doc = t.doc
    assert isinstance(doc, dict), "object form expected"
    assert doc.get("displayTimeUnit") in ("ms", "ns")
    assert isinstance(doc["traceEvents"], list)
    for key in ("tracebpf_version", "kernel_release", "command_line", "clock", "drops_per_cpu"):
        assert key in t.meta, f"metadata.{key} missing"
    stacks = defaultdict(list)
    last_ts = -1.0
    events = t.events
    if t.meta.get("events_out_of_order", 0):
        # events written ahead of a slice open for very long, counted
        # (docs/output.md, "Slices"): the other rules hold in time order,
        # the order every viewer sorts them into
        events = sorted(events, key=lambda e: e["ts"])
    for e in events:
        ph = e["ph"]
        assert ph not in ("B", "E", "S", "T", "F"), f"phase {ph} must not be emitted: {e}"
        for k in ("ts", "dur"):
            if k in e:
                v = e[k]
                assert isinstance(v, (int, float)) and not isinstance(v, bool), f"{k} not a number: {e}"
                assert math.isfinite(v) and v >= 0, f"bad {k}: {e}"
        if ph == "M":
            assert e["name"] in ("process_name", "thread_name", "process_sort_index",
                                 "thread_sort_index", "process_labels"), e
            continue
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        # sorted by time
        assert e["ts"] >= last_ts, f"not sorted by ts at {e}"
        last_ts = e["ts"]
        if ph == "i":
            raise AssertionError("lowercase instant: DevTools only reads 'I'")
        if ph == "I":
            assert e.get("s") in ("t", "p", "g"), e
        if ph == "X":
            # strictly nested per thread, in ns and in a viewer's doubles
            st = stacks[(e["pid"], e["tid"])]
            b, end = round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)
            while st and st[-1][0] <= b:
                st.pop()
            if st:
                assert end <= st[-1][0], f"partially overlapping slice on thread: {e}"
                assert e["ts"] + e["dur"] <= st[-1][1], f"ends past its parent in doubles: {e}"
            st.append((end, e["ts"] + e["dur"]))
        for v in (e.get("args") or {}).values():
            if isinstance(v, float):
                assert math.isfinite(v), e


_ENGINE = {}   # this test process's devtools_check.mjs --serve


def engine_check(path):
    """The engine's summary of one file, from a devtools_check.mjs --serve
    that this process starts once (loading the engine takes about half a
    second, the check of a small trace much less)."""
    p = _ENGINE.get("proc")
    if p is None or p.poll() is not None:
        p = _ENGINE["proc"] = subprocess.Popen(
            ["node", str(CONSUMER), "--serve", "--timeout", "120"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True)
    p.stdin.write(f"{os.path.abspath(path)}\n")
    p.stdin.flush()
    line = p.stdout.readline()
    assert line, f"trace engine exited (status {p.poll()}) checking {path}"
    return json.loads(line)


def devtools_check(path):
    """Load the file with Chrome DevTools' trace engine (a real consumer)."""
    if not CONSUMER.exists() or not (CONSUMER.parent / "node_modules").exists():
        pytest.fail("DevTools trace engine not installed: run 'bash tools/deps.sh'")
    res = engine_check(path)
    assert res.get("ok") is True, f"trace engine failed: {str(res)[:2000]}"
    assert not res.get("errors"), f"trace engine reported errors: {res['errors']}"
    # the engine drops partially overlapping or unpaired slices silently
    dropped = {(th["pid"], th["tid"]): th["dropped"] for th in res["threads"] if th["dropped"]}
    assert not dropped, f"trace engine dropped slices on threads {dropped}"
    return res


def perfetto_query(path, sql):
    """Rows (dicts of strings) of one SQL query over the file, imported by
    Perfetto's trace processor (`query TRACE SQL`: CSV on stdout). One
    process per call: it starts in about 20 ms, and a process per file
    keeps one file's import from touching another's."""
    if not os.access(TRACE_PROCESSOR, os.X_OK):
        pytest.fail(f"Perfetto's trace processor not found at {TRACE_PROCESSOR}: every "
                    "JSON is checked with it (the repository's ../shared/perfetto/)")
    p = subprocess.run([str(TRACE_PROCESSOR), "query", str(path), sql],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, \
        f"trace processor failed on {path} (status {p.returncode}): {p.stderr[-2000:]}"
    return list(csv.DictReader(io.StringIO(p.stdout)))


# the category of the marks of the CPUs' chain breaks (docs/output.md)
SCHED_BREAK_CAT = "tracebpf_sched_break"

PERFETTO_COMPLAINTS = ("select name, idx, severity, source, value from stats "
                       "where value > 0 and severity in ('error', 'data_loss')")


def sched_chain_breaks(lines):
    """The switches of the parsed systemTraceEvents lines whose prev_pid is
    not the next_pid of the switch before on their CPU: what the trace
    processor counts as mismatched_sched_switch_tids. A list of (cpu, the
    switch before, the switch), each a parsed line."""
    last, breaks = {}, []
    for l in lines:
        if l["event"] != "sched_switch":
            continue
        before = last.get(l["cpu"])
        if before and before["args"]["next_pid"] != l["args"]["prev_pid"]:
            breaks.append((l["cpu"], before, l))
        last[l["cpu"]] = l
    return breaks


CAUSES = {"records lost": "records_lost", "recording stopped": "recording_stopped",
          "filtered out": "filtered", "switch not reported": "not_reported"}


def check_break_marks(t):
    """Each break of a CPU's chain has its mark, in order (docs/output.md,
    "Scheduler chain breaks"): a slice "task unknown" on its CPU's track
    (thread "CPU n" of the CPUs' process), from the switch before the
    break (unknown_since_ns; later only when events after it were written
    already) to the switch that breaks the chain, naming the task the one
    switched in and the other switched out, its cause counted."""
    marks = [e for e in t.events if e.get("cat") == SCHED_BREAK_CAT]
    breaks = sched_chain_breaks(t.systrace)
    names = t.thread_names()
    causes = Counter()
    # the lines have microseconds: marks and breaks, CPU by CPU, in order
    for cpu in {b[0] for b in breaks} | {m["args"]["cpu"] for m in marks}:
        bs = [b for b in breaks if b[0] == cpu]
        ms = [m for m in marks if m["args"]["cpu"] == cpu]
        assert len(ms) == len(bs), f"CPU {cpu}: {len(ms)} marks of {len(bs)} breaks"
        for m, (_, before, sw) in zip(ms, bs):
            a = m["args"]
            assert m["ph"] == "X" and m["name"] == "task unknown", m
            assert names[(m["pid"], m["tid"])] == f"CPU {cpu}", (m, names.get((m["pid"], m["tid"])))
            since, end = a["unknown_since_ns"], us_to_ns(m["ts"] + m["dur"])
            assert since // 1000 * 1000 == before["ts_ns"] and end // 1000 * 1000 == sw["ts_ns"], \
                (m, before["line"], sw["line"])
            assert since <= us_to_ns(m["ts"]) <= end, m
            prev, nxt = sw["args"], before["args"]
            assert (a["switched_in"].replace(" ", "_"), a["switched_out"].replace(" ", "_")) == \
                (f'{nxt["next_comm"]}-{nxt["next_pid"]}', f'{prev["prev_comm"]}-{prev["prev_pid"]}'), \
                (m, before["line"], sw["line"])
            causes[CAUSES[a["cause"]]] += 1
    assert {k: v for k, v in t.meta.get("sched_breaks_by_cause", {}).items() if v} == \
        dict(causes), (t.meta.get("sched_breaks_by_cause"), causes)


def us_to_ns(v):
    return round(v * 1000)


def perfetto_flow_complaints(t):
    """What Perfetto's JSON importer says of the file's flows, by design
    (docs/output.md, "What Perfetto's trace processor reports"): it reads
    the events in time order (file order at equal ts); a flow event binds
    to the slice last begun on its thread (flow_no_enclosing_slice when
    none was: the application's flow event outside any slice, or a filter
    that left its slices out), and it never ends a flow, so a start whose
    (cat, name, id) began before is flow_duplicate_id (an application
    that reuses its flow ids). Checks first that no step or end comes
    without its start: tracebpf writes flows whole, or their start alone."""
    events = [e for e in t.events if e["ph"] != "M"]
    started = set()
    for e in events:
        if e["ph"] in "stf":
            k = (e["cat"], e["name"], int(e["id"], 16))
            assert e["ph"] == "s" or k in started, f"a flow's {e['ph']} without its start: {e}"
            started.add(k)
    order = sorted(range(len(events)), key=lambda i: us_to_ns(events[i]["ts"]))
    sliced, begun, n = set(), set(), Counter()
    for e in (events[i] for i in order):
        track = (e["pid"], e["tid"])
        if e["ph"] == "X" or (e["ph"] == "I" and e.get("s") == "t"):
            sliced.add(track)
        if e["ph"] not in "stf":
            continue
        k = (e["cat"], e["name"], int(e["id"], 16))
        if track not in sliced:
            n["flow_no_enclosing_slice"] += 1
        elif e["ph"] == "s":
            n["flow_duplicate_id" if k in begun else ""] += 1
            begun.add(k)
        # (a step or end of a start not taken: severity info, not counted)
    return {k: v for k, v in n.items() if k}


def perfetto_check(t, expect=None):
    """Load the file with Perfetto's trace processor. Its import complaints
    (stats of severity error or data_loss) must be none but those expected:
    mismatched_sched_switch_tids, each a break of a CPU's chain of
    switches that tracebpf counted itself (docs/output.md, "Scheduler
    chain breaks"); the flows' complaints perfetto_flow_complaints
    explains; and what the test names in expect {stat: value} (a loss it
    caused on purpose)."""
    rows = perfetto_query(t.path, PERFETTO_COMPLAINTS)
    got = {r["name"] if r["idx"] in ("", "[NULL]") else f'{r["name"]}[{r["idx"]}]': int(r["value"])
           for r in rows}
    breaks = t.meta.get("sched_breaks", 0)
    # our count of the lines, tracebpf's and the engine's agree
    assert len(sched_chain_breaks(t.systrace)) == breaks, \
        f"the switches' chains break {len(sched_chain_breaks(t.systrace))} times, " \
        f"metadata says {breaks}"
    if breaks:
        assert sum(t.meta["sched_breaks_by_cause"].values()) == breaks, t.meta
    if "filters" not in t.meta and "split" not in t.meta:
        check_break_marks(t)
    want = {"mismatched_sched_switch_tids": breaks, **perfetto_flow_complaints(t),
            **(expect or {})}
    want = {k: v for k, v in want.items() if v}
    assert got == want, f"trace processor's complaints {got}, expected {want} ({t.path})"
    return got


def in_poll(pid):
    """pid is blocked in epoll_wait: tracebpf record is in its loop."""
    try:
        nr = open(f"/proc/{pid}/syscall").read().split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return nr in ("232", "281", "441")   # epoll_wait, epoll_pwait, epoll_pwait2


def possible_cpus():
    """The number of CPUs /sys/devices/system/cpu/possible lists."""
    n = 0
    for part in open("/sys/devices/system/cpu/possible").read().strip().split(","):
        lo, _, hi = part.partition("-")
        n += int(hi or lo) - int(lo) + 1
    return n


def fd_infos(pid):
    """The fields of /proc/PID/fdinfo/* ("map_id", "map_type", "prog_id",
    ...: str -> str), one dict per open fd; none if pid is gone."""
    try:
        fds = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        return
    for fd in fds:
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                text = f.read()
        except OSError:
            continue
        fields = (line.split(":", 1) for line in text.splitlines() if ":" in line)
        yield {k: v.strip() for k, v in fields}


def load(path, consumer=True, perfetto=None):
    """The file, checked: the Chrome JSON rules, the kernel lines, Perfetto's
    trace processor (always; perfetto: the complaints a test expects, as
    perfetto_check's expect) and, unless consumer is False, the DevTools
    trace engine."""
    t = Trace(path)
    check_chrome_rules(t)
    # kernel events: every line against catapult's and Perfetto's grammars
    t.systrace = check_system_trace(t.doc["systemTraceEvents"]) \
        if "systemTraceEvents" in t.doc else []
    t.perfetto = perfetto_check(t, perfetto)
    if consumer:
        t.devtools = devtools_check(path)
    return t


def child_pid_of(rec):
    """The command `tracebpf record -- CMD` started: its child that runs
    neither tracebpf (the releaser, or the command before its exec) nor the
    ld.so probe."""
    def is_loader_probe(pid):
        # the recorder briefly runs the program with LD_TRACE_LOADED_OBJECTS
        # to learn its libraries (user/probes/probes.c): not the traced child.
        # Inside execve the new /proc/PID/exe is visible before the new
        # environment is: an empty environ is not known yet, so look again
        # (taking it for the child made callers kill a probe that had
        # already exited: ProcessLookupError in test_stop_signals and
        # test_drops_survive_a_killed_recorder).
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read()
        except OSError:
            return True
        return not env or b"LD_TRACE_LOADED_OBJECTS=1" in env.split(b"\0")

    def runs_tracebpf(pid):
        try:
            return os.path.realpath(f"/proc/{pid}/exe") == os.path.realpath(TRACEBPF)
        except OSError:
            return True

    def get():
        try:
            with open(f"/proc/{rec.proc.pid}/task/{rec.proc.pid}/children") as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            return None
        # a child not yet exec'd still runs tracebpf's image (the traced
        # command is held before exec; the loader probe's environment is
        # only set by its exec): wait for it to run its own program
        kids = [k for k in kids if not runs_tracebpf(k) and not is_loader_probe(k)]
        return kids[0] if kids else None
    return wait_for(get, what="the traced child to start")


def kill_group(proc):
    """SIGKILLs what is left of the process group of `proc`, started with
    start_new_session=True: `record -- CMD` leaves CMD running when the
    recorder is killed, or with --keep-running. (pkill -f NAME would also kill the same program of a
    test running side by side.)"""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class Recording:
    def __init__(self, proc, out, tbt):
        self.proc = proc
        self.out = out
        self.tbt = tbt
        self.stdout = self.stderr = ""
        self.rc = None

    def wait(self, timeout=60):
        self.stdout, self.stderr = self.proc.communicate(timeout=timeout)
        self.rc = self.proc.returncode
        return self

    def stop(self, sig=signal.SIGINT, timeout=60):
        self.proc.send_signal(sig)
        return self.wait(timeout)

    def trace(self, consumer=True, perfetto=None):
        assert self.rc == 0, f"tracebpf failed rc={self.rc}: {self.stderr}"
        return load(self.out, consumer, perfetto)


FULL = os.environ.get("TRACEBPF_TEST_FULL") == "1"


def scale(quick, full):
    """A size for a big-scale case: `full` under `make test-full`
    (TRACEBPF_TEST_FULL=1), `quick` under `make test`."""
    return full if FULL else quick


# Tests that watch the whole machine: bpftool's listings of every program,
# map and link, ctl commands that reach every recording, pinned files under
# /sys/fs/bpf/tracebpf, the fast path's "another recording live?" checks.
# And the memory cgroup cases: a limit the rings pass by far, or by a
# margin, is met under the side-by-side load by the kernel's own
# allocations charged to the cgroup, and the recorder was OOM-killed
# before its ring allocation could fail with ENOMEM (seen for
# test_slot_rings_out_of_memory and for
# test_rings_out_of_memory[--kernel-buffer-size]).
# tests/run.sh runs them alone, after the side-by-side ones.
# test_categories.py: a site judges its category itself only on the fast
# path, which a second recording on the machine turns off (each process
# then takes its probes, for both)
SERIAL_MODULES = {"test_ctl.py", "test_many_sites.py", "test_fast.py", "test_faults.py",
                  "test_categories.py"}
SERIAL_TESTS = {"test_attach_in_the_middle_of_scopes", "test_record_staged_after_the_recovery",
                "test_slot_rings_out_of_memory", "test_rings_out_of_memory"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in SERIAL_MODULES or item.originalname in SERIAL_TESTS:
            item.add_marker(pytest.mark.serial)
        # the fast path's tests run again with every event through its
        # probe under make test-full; the probes alone are tested everywhere
        # else
        if item.path.name == "test_fast.py" and item.name.endswith("[probes]"):
            item.add_marker(pytest.mark.full)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "serial: watches the whole machine; tests/run.sh runs it alone")
    config.addinivalue_line(
        "markers", "full: a big-scale or long case, run by `make test-full` only")
    config.addinivalue_line(
        "markers", "both_paths: run twice, with the fast path (the default) and with "
        "`record --no-fast-path` (every event through its probe)")


def pytest_generate_tests(metafunc):
    if metafunc.definition.get_closest_marker("both_paths"):
        metafunc.parametrize("path_args", [[], ["--no-fast-path"]], ids=["fast-path", "probes"])


@pytest.fixture
def path_args():
    """Options the recorder fixture adds: both_paths tests get each way."""
    return []


@pytest.fixture
def recorder(tmp_path, path_args):
    """recorder(args...) starts `tracebpf record -q -o tmp/t.json args...`;
    wrap=[PROGRAM, ARG...] runs it under that program (which execs it);
    stdin=subprocess.PIPE gives the recorder (and the command it starts) a
    pipe to write to; env={NAME: VALUE} adds to the environment."""
    procs = []

    def start(*args, name="t", cwd=None, wrap=(), stdin=None, env=None):
        out = tmp_path / f"{name}.json"
        cmd = [*map(str, wrap), TRACEBPF, "record", "-q", "-o", str(out), *path_args,
               *map(str, args)]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=cwd, stdin=stdin, env=env and {**os.environ, **env})
        procs.append(p)
        return Recording(p, out, tmp_path / f"{name}.tbt")

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


@pytest.fixture
def spawn():
    """Start helper processes; kill whatever is left at the end."""
    procs = []

    def start(*args, **kw):
        p = subprocess.Popen(list(map(str, args)), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, **kw)
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def user_events(t, pid=None):
    """The application's events (not names, not the kernel's memory counters,
    docs/output.md "Memory", nor the marks of the CPUs' chain breaks)."""
    return [e for e in t.events if e["ph"] != "M" and
            e.get("cat") not in ("memory", SCHED_BREAK_CAT) and
            (pid is None or e["pid"] == pid)]
