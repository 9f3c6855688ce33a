"""End-to-end: instrumented programs -> USDT -> BPF ring buffers -> trace file
-> Chrome JSON, asserting on the content of the JSON each run produces."""
import json
import os
import re
import signal
import struct
import subprocess
import time
from collections import Counter, defaultdict

import pytest

from conftest import (BUILD, SCHED_BREAK_CAT, TRACEBPF, Trace, child_pid_of, devtools_check,
                      fd_infos, load, prog, scale, user_events, wait_for)


@pytest.mark.both_paths
def test_multithreaded_exact_counts(recorder):
    nthreads, nevents = 4, 300
    rec = recorder("--", prog("mt_events"), nthreads, nevents).wait()
    t = rec.trace()
    work = t.named("work", "X")
    ticks = t.named("tick", "I")
    per_tid_work = Counter(e["tid"] for e in work)
    per_tid_tick = Counter(e["tid"] for e in ticks)
    assert len(per_tid_work) == nthreads, per_tid_work
    assert set(per_tid_work.values()) == {nevents}, per_tid_work
    assert per_tid_tick == per_tid_work
    pids = {e["pid"] for e in work}
    assert len(pids) == 1
    pid = pids.pop()
    assert pid not in per_tid_work, "events come from the worker threads, not main"
    # every sequence number exactly once per thread, in order
    for tid in per_tid_work:
        seqs = [e["args"]["seq"] for e in work if e["tid"] == tid]
        assert seqs == list(range(nevents)), f"tid {tid}: {seqs[:10]}..."
        tick_seqs = [e["args"]["seq"] for e in ticks if e["tid"] == tid]
        assert tick_seqs == list(range(nevents))
    # each tick lies inside the work slice with the same seq on its thread
    work_by = {(e["tid"], e["args"]["seq"]): e for e in work}
    for e in ticks:
        w = work_by[(e["tid"], e["args"]["seq"])]
        assert w["ts"] <= e["ts"] <= w["ts"] + w["dur"], (w, e)
    # counters: one per thread, value = thread index
    done = t.named("done", "C")
    assert sorted(e["args"]["value"] for e in done) == list(range(nthreads))
    # names from the kernel's comm
    names = t.thread_names()
    assert sorted(names[(pid, tid)] for tid in per_tid_work) == \
        [f"worker-{i}" for i in range(nthreads)]
    assert t.process_names()[pid] == "mt_events"
    assert t.process_labels()[pid] == f"{prog('mt_events')} {nthreads} {nevents}"
    assert t.meta["events"] >= nthreads * nevents * 3
    assert t.meta["drops_total"] == 0
    assert "\x1b[K" not in rec.stderr, "no live status when stderr is not a terminal"
    # the DevTools engine sees the same slices on the same threads
    dt = t.devtools
    dt_work = Counter(s["tid"] for s in dt["slices"] if s["name"] == "work")
    assert dt_work == per_tid_work


@pytest.mark.both_paths
def test_sigkill_loses_nothing(recorder, tmp_path):
    countfile = tmp_path / "count"
    rec = recorder("--", prog("seq_until_killed"), countfile)
    pid = child_pid_of(rec)

    def emitted():
        try:
            with open(countfile, "rb") as f:
                data = f.read(8)
            return struct.unpack("<Q", data)[0] if len(data) == 8 else 0
        except OSError:
            return 0
    wait_for(lambda: emitted() >= 20000, what="20000 events emitted")
    os.kill(pid, signal.SIGKILL)
    rec.wait()   # the recorder stops by itself once its target is gone
    after_kill = emitted()
    t = rec.trace()
    seqs = [e["args"]["seq"] for e in t.named("seq", "I")]
    assert seqs == list(range(len(seqs))), "a gap or reordering in the sequence"
    # the counter is bumped after each hit: the last hit may be one ahead
    assert len(seqs) in (after_kill, after_kill + 1), (len(seqs), after_kill)
    # the slice open at the kill is closed at the thread's exit and marked
    outer = t.named("outer", "X")
    assert len(outer) == 1
    o = outer[0]
    # closed at the thread's exit; or, when the kill fell inside a write on
    # the fast path, at the one event that sample held, lost and marked (it
    # was not counted yet: the count is exact)
    cut = "events lost" in str(o["args"].get("tracebpf_incomplete")) and \
        len(seqs) == after_kill and t.meta["gap_records"] == 1
    assert "thread exited" in str(o["args"].get("tracebpf_unfinished")) or cut, (o, t.meta)
    last_seq_ts = t.named("seq", "I")[-1]["ts"]
    assert o["ts"] + o["dur"] >= last_seq_ts


@pytest.mark.both_paths
def test_quiet_thread_event_delivered(recorder, tmp_path):
    rec = recorder("--", prog("quiet_thread"))
    pid = child_pid_of(rec)
    # Delivery without wakeups: the record reaches the file on the timer,
    # while the program is still blocked. Read the in-progress file.
    partial = tmp_path / "partial.json"

    def quiet_in_file():
        p = subprocess.run([TRACEBPF, "convert", str(rec.tbt), "-o", str(partial)],
                           capture_output=True, text=True)
        return p.returncode == 0 and Trace(partial).named("quiet")
    wait_for(quiet_in_file, what="the quiet thread's event in the file being written")
    rec.stop(signal.SIGINT)   # the command gets SIGTERM, and ends
    assert not alive(pid)
    t = rec.trace()
    quiet = t.named("quiet", "I")
    assert len(quiet) == 1
    assert quiet[0]["pid"] == pid and quiet[0]["tid"] != pid
    assert len(t.named("main_ready", "I")) == 1


@pytest.mark.both_paths
def test_fork_child_recorded_under_child_pid(recorder):
    rec = recorder("--", prog("fork_child")).wait()
    m = re.search(r"parent=(\d+) child=(\d+)", rec.stdout)
    assert m, rec.stdout
    parent, child = int(m.group(1)), int(m.group(2))
    t = rec.trace()
    for name in ("parent_before_fork", "parent_after_fork"):
        ev = t.named(name, "I")
        assert [e["pid"] for e in ev] == [parent], (name, ev)
    ce = t.named("child_event", "I")
    assert [e["args"]["seq"] for e in ce] == list(range(10))
    assert {e["pid"] for e in ce} == {child}
    cs = t.named("child_slice", "X")
    assert len(cs) == 1 and cs[0]["pid"] == child
    for e in ce:
        assert cs[0]["ts"] <= e["ts"] <= cs[0]["ts"] + cs[0]["dur"]
    # the child's events never land on the parent's timeline
    assert not [e for e in user_events(t, parent) if e["name"].startswith("child")]
    assert child in t.process_names()


@pytest.mark.both_paths
def test_attach_to_running_pid(recorder, spawn):
    app = spawn(prog("loop_events"), 0)
    pid = int(re.match(r"pid=(\d+)", app.stdout.readline()).group(1))
    rec = recorder("-p", pid, "--duration", "1.5").wait()
    t = rec.trace()
    loop = t.named("loop", "I")
    assert len(loop) > 10
    assert {e["pid"] for e in loop} == {pid}
    seqs = [e["args"]["seq"] for e in loop]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "gap in an attached recording"
    assert app.poll() is None, "the target keeps running after we detach"
    assert t.process_names()[pid] == "loop_events"
    assert t.process_labels()[pid] == f"{prog('loop_events')} 0"   # read at attach


def test_cmd_records_first_hit_and_shared_library(recorder):
    rec = recorder("--", prog("lib_user")).wait()
    t = rec.trace()
    first = t.named("main_first", "I")
    assert len(first) == 1
    lib = t.named("lib_event", "I")
    assert [e["args"]["i"] for e in lib] == list(range(10))
    assert {e["cat"] for e in lib} == {"lib"}
    assert first[0]["ts"] <= lib[0]["ts"]


def test_untraced_neighbour_contributes_nothing(recorder, spawn):
    neighbour = spawn(prog("loop_events"), 0)
    npid = int(re.match(r"pid=(\d+)", neighbour.stdout.readline()).group(1))
    rec = recorder("--", prog("loop_events"), 1).wait()
    m = re.search(r"pid=(\d+)", rec.stdout)
    target = int(m.group(1))
    t = rec.trace()
    # (the marks of the CPUs' chain breaks are the CPUs' process's)
    pids = {e["pid"] for e in t.events if e["ph"] != "M" and e.get("cat") != SCHED_BREAK_CAT}
    assert pids == {target}, f"events from {pids - {target}} (neighbour {npid})"
    assert len(t.named("loop", "I")) > 100
    assert neighbour.poll() is None


def test_redzone_locals_survive_tracing(recorder):
    rec = recorder("--", prog("redzone"), 20000).wait()
    m = re.search(r"safe_corrupted=(\d+) naive_corrupted=(\d+) calls=(\d+)", rec.stdout)
    assert m, rec.stdout
    safe, naive, calls = map(int, m.groups())
    assert calls == 20000
    assert safe == 0, f"tracebpf's probe site corrupted {safe} red-zone locals"
    t = rec.trace()
    assert len(t.by_ph("I")) >= 2 * 20000 - 10
    # The control proves the test can see corruption on this kernel: only a
    # kernel that rewrites a 5-byte-nop uprobe into a call (6.18) corrupts
    # the naive site. Elsewhere there is nothing to see: skip, not fail.
    if naive == 0:
        pytest.skip("this kernel does not optimize 5-byte-nop uprobes: the naive site "
                    "is not corrupted, so the guard cannot be shown to matter here")


def test_string_and_typed_args(recorder):
    rec = recorder("--", build_demo()).wait()
    t = rec.trace()
    assert t.by_ph("X") and t.by_ph("I") and t.by_ph("C")
    # The demo's arguments decode to their JSON types and values, checked
    # per event (not pooled over all events: the metadata's thread_name
    # args are strings too, which once let a broken string argument pass).
    # consumers process the 300 items the producer labels "item-<id>"
    process = {e["args"]["id"]: e["args"]["weight"] for e in t.named("process", "X")}
    assert sorted(process) == list(range(300)), sorted(process)[:5]
    assert all(w == 0.5 + (i % 7) * 0.25 for i, w in process.items()), process
    inspect = t.named("inspect", "X")
    assert len(inspect) == 300
    for e in inspect:
        label, urgent = e["args"]["label"], e["args"]["urgent"]
        assert isinstance(label, str) and re.fullmatch(r"item-\d+", label), e
        assert urgent is (int(label[5:]) % 10 == 0), e
    checks = {e["args"]["label"] for e in t.named("checksum", "X")}
    assert checks == {f"item-{i}" for i in range(300)}, sorted(checks)[:5]
    ptrs = [e["args"]["ptr"] for e in t.named("item_at", "I")]
    assert len(ptrs) == 300 and all(re.fullmatch(r"0x[0-9a-f]+", p) for p in ptrs), ptrs[:3]


def build_demo():
    from conftest import BUILD
    return str(BUILD / "demo")


# Events a second for the tests that overflow 4 KiB rings and then load the
# JSON in DevTools. Flat out, a fast machine records over 4 M events in a
# second even through 4 KiB rings, and their JSON passes the 512 MiB a
# JavaScript string can hold. Paced at 2 M/s, at most 2 M events are emitted
# (about 200 MB of JSON), and a 4 KiB ring still overflows within 50 us.
RATE_BOUNDED = 2 * 10**6
# Tests that need records lost: a thread's fast-path ring that grows keeps
# up with the writer, and the drain waits for room in the recorder's rings
# rather than drop; rings that may not grow send their overflow to the
# probes, which the small rings refuse.
NO_GROWTH = ("--fast-buffer-max", "64K")


def starve(rec, seconds=0.1):
    """Stops the recorder (SIGSTOP) for `seconds` once its program has
    printed its first line (bench/rate prints "pid=N", then emits), so that
    nothing drains the rings meanwhile: 4 KiB rings overflow however soon a
    running recorder drains them (at SCHED_FIFO, user/record/record.c, it once
    lost nothing of bench/rate at 2 M events/s in a full test run).
    Returns that line."""
    line = rec.proc.stdout.readline()
    os.kill(rec.proc.pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(rec.proc.pid, signal.SIGCONT)
    return line


def test_drops_are_counted_and_reported(recorder):
    # A 4 KiB ring at 2 M events/s: most events are lost, and every loss is
    # counted: recorded + lost accounts for every hit. The rate is paced, not
    # flat out, so the JSON stays far below the 512 MiB a JavaScript string
    # can hold however fast the machine records (RATE_BOUNDED).
    from conftest import BUILD
    # (0.4 s of it: about 800,000 events, and drops within the first
    # milliseconds; the JSON is checked by the engine in the gap tests)
    rec = recorder("--buffer-size", "4K", "--flush-interval", "200", *NO_GROWTH, "--",
                   str(BUILD / "bench" / "rate"), RATE_BOUNDED, 0.4)
    starve(rec)
    rec.wait()
    m = re.search(r"emitted=(\d+)", rec.stdout)
    emitted = int(m.group(1))
    t = rec.trace(consumer=False)
    got = len(t.named("rate", "I"))
    drops = t.meta["drops_total"]
    assert drops > 0, "a 4K ring at full speed must overflow"
    assert got < emitted
    assert got + drops >= emitted, (got, drops, emitted)
    assert sum(t.meta["drops_per_cpu"]) == drops
    assert "LOST" in rec.stderr and str(drops) in rec.stderr


@pytest.mark.both_paths
def test_drops_survive_a_killed_recorder(recorder, tmp_path):
    """The drop counts reach the file in the round after they grow, not
    only at the end: the file of a recorder killed with SIGKILL still says
    how many records were lost (read while it was being written, and after
    the kill). Fails if the counts are written only when the recorder
    stops."""
    from conftest import BUILD
    # drops for certain on both paths: a fast-path ring that may not grow
    # sends the overflow to the probes, and the 4K rings refuse most of it
    # (a ring that grows keeps every event: no drops to find)
    rec = recorder("--buffer-size", "4K", "--fast-buffer-size", "4K", "--fast-buffer-max", "4K",
                   "--", str(BUILD / "bench" / "rate"), 10**9, 60)
    pid = child_pid_of(rec)
    partial = tmp_path / "partial.json"

    def drops_in_file():
        p = subprocess.run([TRACEBPF, "convert", str(rec.tbt), "-o", str(partial)],
                           capture_output=True, text=True)
        return p.returncode == 0 and Trace(partial).meta["drops_total"] > 0
    wait_for(drops_in_file, what="drops reported in the file being written")
    rec.proc.kill()
    rec.proc.wait(timeout=60)
    os.kill(pid, signal.SIGKILL)   # it holds our stdout pipe open
    rec.wait()
    after = tmp_path / "after.json"
    p = subprocess.run([TRACEBPF, "convert", str(rec.tbt), "-o", str(after)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    drops = Trace(after).meta["drops_total"]
    assert drops > 0
    assert f"{drops} events were lost" in p.stderr, p.stderr


@pytest.mark.parametrize("out,tbt,json_", [
    ("run.json", "run.tbt", "run.json"),
    ("run.tbt", "run.tbt", "run.json"),
    ("run", "run.tbt", "run.json"),
    ("outdir", "outdir/trace.tbt", "outdir/trace.json"),
    ("outdir/", "outdir/trace.tbt", "outdir/trace.json"),
])
def test_output_names(tmp_path, out, tbt, json_):
    """-o FILE.json, FILE.tbt or FILE name both files; an existing directory
    gets trace.tbt and trace.json inside it (not a file named after it)."""
    (tmp_path / "outdir").mkdir()
    p = subprocess.run([TRACEBPF, "record", "-q", "-o", out, "--", prog("pingpong"), "5"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / tbt).is_file() and (tmp_path / json_).is_file(), \
        sorted(str(x.relative_to(tmp_path)) for x in tmp_path.rglob("*"))
    assert not (tmp_path / "outdir.tbt").exists()
    assert load(tmp_path / json_, consumer=False).named("pingpong", "X")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_stop_signals(recorder, sig):
    """Ctrl-C, kill and a closed terminal (SIGHUP, which killed the recorder
    before its last drain) all end the recording cleanly: exit 0, the file
    finished, the events in it."""
    rec = recorder("--", prog("quiet_thread"))
    pid = child_pid_of(rec)
    assert rec.proc.stdout.readline().strip() == "ready"   # its events are out
    rec.stop(sig)   # the command gets SIGTERM, and ends
    assert not alive(pid)
    t = rec.trace(consumer=False)
    assert len(t.named("main_ready", "I")) == 1
    info = subprocess.run([TRACEBPF, "info", str(rec.tbt)], capture_output=True, text=True)
    assert "finished:       yes" in info.stdout, info.stdout


def test_live_status_on_a_terminal(tmp_path):
    """On a tty, stderr carries a one-line status (rewritten in place with \\r)
    and a final summary; off a tty (every other test) there is none."""
    import pty
    import select
    from conftest import BUILD
    out = tmp_path / "s.json"
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(TRACEBPF, [TRACEBPF, "record", "-o", str(out), "--",
                            str(BUILD / "bench" / "rate"), "20000", "2.5"])
    buf = b""
    while True:
        r, _, _ = select.select([fd], [], [], 60)
        if not r:
            break
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        buf += chunk
    _, status = os.waitpid(pid, 0)
    text = buf.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, text
    status_lines = re.findall(r"\r\x1b\[K\[\s*[\d.]+s\] (\d+) events\s+(\d+)/s\s+drops (\d+)\s+\S+ \S+", text)
    assert status_lines, f"no live status line in {text!r}"
    assert int(status_lines[-1][0]) > 0 and int(status_lines[-1][1]) > 0
    assert re.search(r"tracebpf: recorded \d+ records in [\d.]+ s, 0 dropped, wrote \S+\.tbt", text), text


def test_attach_to_several_pids(recorder, spawn):
    apps = [spawn(prog("loop_events"), 0) for _ in range(2)]
    pids = [int(re.match(r"pid=(\d+)", a.stdout.readline()).group(1)) for a in apps]
    bystander = spawn(prog("loop_events"), 0)
    bpid = int(re.match(r"pid=(\d+)", bystander.stdout.readline()).group(1))
    rec = recorder("-p", f"{pids[0]},{pids[1]}", "--duration", "1.5").wait()
    t = rec.trace()
    by_pid = Counter(e["pid"] for e in t.named("loop", "I"))
    assert set(by_pid) == set(pids), (by_pid, pids, bpid)
    assert min(by_pid.values()) > 10


def test_notes_with_other_registers(recorder):
    """A binary with notes whose arguments are not in trace.h's fixed
    registers (as one built with an older header): every site of it is
    decoded from the notes' specs, and each value is exact. With the
    fixed-register program the 'other' site's values would be whatever
    %rdi/%rsi/%rdx held. The 'older' site is the previous header's probe,
    which passes no time: its events carry the kernel's time, not the 12345
    its %r8 holds, so every event lies in the loop's CLOCK_MONOTONIC window
    the program prints."""
    n = 50
    rec = recorder("-v", "--no-sched", "--", prog("other_regs"), n).wait()
    assert rec.rc == 0, rec.stderr[-2000:]
    # 4: other, older, fixed, and the header's own probe for names set
    # before a recording (docs/api.md, "Names and ordering")
    assert re.search(r"tracebpf: record: 2 of the 4 event probes in '.*other_regs' use other "
                     r"registers than this trace.h: decoding their arguments per hit",
                     rec.stderr), rec.stderr[-3000:]
    m = re.search(r"t0=(\d+) t1=(\d+)", rec.stdout)
    assert m, rec.stdout
    t0, t1 = int(m.group(1)) / 1000, int(m.group(2)) / 1000
    t = rec.trace()
    evs = {name: t.named(name, "I") for name in ("other", "older", "fixed")}
    assert [e["args"] for e in evs["other"]] == [{"i": i, "sq": i * i} for i in range(n)]
    assert [e["args"] for e in evs["older"]] == [{"i": i, "cube": i ** 3} for i in range(n)]
    assert [e["args"] for e in evs["fixed"]] == [{"i": i, "neg": -i} for i in range(n)]
    for name, es in evs.items():
        outside = [e["ts"] for e in es if not t0 <= e["ts"] <= t1]
        assert not outside, (name, t0, t1, outside[:3])
    # program order, one iteration after the other: other, older, fixed
    for i in range(n):
        assert evs["other"][i]["ts"] <= evs["older"][i]["ts"] <= evs["fixed"][i]["ts"], i


def slot_heads(pid):
    """The `head` of every CPU's slot ring in the slot_pos map that pid
    holds open (lib/format/tbrecords.h, struct tb_slot_pos)."""
    for info in fd_infos(pid):
        if "map_id" not in info:
            continue
        show = json.loads(subprocess.run(["bpftool", "-j", "map", "show", "id", info["map_id"]],
                                         capture_output=True, text=True).stdout or "{}")
        if show.get("name") == "slot_pos":
            dump = json.loads(subprocess.run(["bpftool", "-j", "map", "dump", "id",
                                              info["map_id"]], capture_output=True,
                                             text=True, check=True).stdout)
            return [e["formatted"]["value"]["head"] for e in dump]
    return None


def test_probe_events_take_the_slot_rings(recorder):
    """Fixed-size events of the probes go through the slot rings (written
    without a helper call): with rings that never fill, the heads of all
    CPUs add up to exactly the events emitted, and the trace has each one,
    in order. Without slot_put in on_hit the heads stay 0."""
    n = 5000
    rec = recorder("--no-fast-path", "--no-sched", "--", "sh", "-c",
                   f"{BUILD / 'bench' / 'probe_cost'} {n} instant2; echo emitted; read x",
                   stdin=subprocess.PIPE)
    line = rec.proc.stdout.readline()
    while line and "emitted" not in line:
        line = rec.proc.stdout.readline()
    heads = slot_heads(rec.proc.pid)
    rec.proc.stdin.write("x\n")
    rec.proc.stdin.flush()
    rec.wait()
    assert rec.rc == 0, rec.stderr[-2000:]
    assert heads is not None and sum(heads) == n, heads
    hits = [e["args"]["i"] for e in rec.trace().named("hit2", "I")]
    assert hits == list(range(n)), hits[:5]


def test_event_stamped_before_its_sites_report(recorder):
    """An event's time is read by the application before its probe, so an
    event can reach a CPU after the descriptor report of another thread's
    later event there (site_order: thread A reads the clock, B hits the
    site first, then A). A's event must report the site again, stamped
    with its own time: the converter reads in time order, and without the
    second report A's event was dropped as an unresolved site."""
    rec = recorder("--no-sched", "--", prog("site_order")).wait()
    assert rec.rc == 0, rec.stderr[-2000:]
    m = re.search(r"a=(\d+) b=(\d+)", rec.stdout)
    assert m and int(m.group(1)) < int(m.group(2)), rec.stdout
    t = rec.trace()
    order = sorted((e["ts"], e["args"]["who"]) for e in t.named("order", "I"))
    assert [who for _, who in order] == [0, 1], order
    assert order[0][0] == int(m.group(1)) / 1000, (order, m.group(0))
    assert t.meta["unresolved_sites"] == 0, t.meta


def test_fixed_registers_read_directly(recorder):
    """An ordinary binary (every note in the fixed registers) gets the
    program that reads them straight from the saved registers: no message
    about decoding, and exact values."""
    rec = recorder("-v", "--no-sched", "--", prog("mt_events"), 2, 50).wait()
    assert rec.rc == 0, rec.stderr[-2000:]
    assert "use other registers" not in rec.stderr
    t = rec.trace()
    for tid in {e["tid"] for e in t.named("work", "X")}:
        seqs = [e["args"]["seq"] for e in t.named("work", "X") if e["tid"] == tid]
        assert seqs == list(range(50)), seqs[:5]


def test_processes_the_traced_set_cannot_hold(recorder):
    """--max-processes 3: the shell and two of its five children are
    traced, the other three cannot be added to the full set. They are
    counted and reported like drops: a warning, info, dump, the JSON's
    metadata.lost_processes. The five children are alive together (sleep 2),
    so none frees its place before the last has started."""
    rec = recorder("--max-processes", 3, "--no-sched", "--", "sh", "-c",
                   "for i in 1 2 3 4 5; do sleep 2 & done; wait; " + prog("loop_events") + " 0.01"
                   ).wait(timeout=120)
    assert rec.rc == 0, rec.stderr[-2000:]
    assert re.search(r"tracebpf: WARNING: 3 processes started by traced processes were NOT "
                     r"TRACED because the set of traced processes was full \(3\); record again "
                     r"with a larger --max-processes", rec.stderr), rec.stderr[-2000:]
    t = rec.trace()
    assert t.meta["lost_processes"] == 3, t.meta
    assert t.named("loop", "I"), "the traced shell's later child was recorded"
    info = subprocess.run([TRACEBPF, "info", str(rec.tbt)], capture_output=True, text=True)
    assert re.search(r"^lost processes: 3 ", info.stdout, re.M), info.stdout
    dump = subprocess.run([TRACEBPF, "dump", str(rec.tbt)], capture_output=True, text=True)
    assert re.findall(r"STATS .* lost_procs=(\d+)", dump.stdout)[-1] == "3", dump.stdout[-500:]
    conv = subprocess.run([TRACEBPF, "convert", str(rec.tbt), "-o", str(rec.tbt) + ".json"],
                          capture_output=True, text=True)
    assert "warning: 3 processes started by traced processes were not traced" in conv.stderr


def test_max_processes_usage_error(recorder):
    rec = recorder("--max-processes", 0, "--", prog("loop_events"), 0.01).wait()
    assert rec.rc == 64, (rec.rc, rec.stderr)
    assert "invalid --max-processes '0': give 1 to 4194304" in rec.stderr


def test_outputs_private_and_kept(tmp_path):
    """Trace files are created 0600 whatever the umask (they hold the whole
    machine's scheduling, other users' process names included), as perf
    creates perf.data; a second recording with the same -o keeps the first
    one's files as FILE.old (one generation) and says so."""
    out, tbt = tmp_path / "r.json", tmp_path / "r.tbt"

    def record():
        p = subprocess.run(["sh", "-c", 'umask 0 && exec "$@"', "sh", TRACEBPF, "record", "-q",
                            "-o", str(out), "--", prog("mt_events"), "1", "5"],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        return p
    first = record()
    assert "kept the existing" not in first.stderr, first.stderr
    for f in (tbt, out):
        assert f.stat().st_mode & 0o777 == 0o600, (f, oct(f.stat().st_mode))
    before = {f: f.read_bytes() for f in (tbt, out)}
    second = record()
    for f in (tbt, out):
        old = f.with_name(f.name + ".old")
        assert f"tracebpf: record: kept the existing '{f}' as '{old}'" in second.stderr, \
            second.stderr
        assert old.read_bytes() == before[f], f"{old} is not the first recording's {f.name}"
        assert f.stat().st_mode & 0o777 == 0o600
        assert f.read_bytes() != before[f]   # a new recording (its own host time, pids)
    gz = tmp_path / "r.json.gz"
    p = subprocess.run(["sh", "-c", 'umask 0 && exec "$@"', "sh", TRACEBPF, "convert", str(tbt),
                        "-o", str(gz)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert gz.stat().st_mode & 0o777 == 0o600, oct(gz.stat().st_mode)


def test_attach_in_the_middle_of_scopes(recorder, spawn):
    """record -p of threads busy in nested scopes (an outer scope of 50
    inner ones): the recorder attaches while they are inside both, and the
    kernel turns the sites on one by one, so a thread's first records can
    be ENDs, and the outer scope's END comes after inner slices recorded
    inside it. Each is the end of a slice that began before the recording: a
    marked instant, counted in ends_before_recording, before any recorded
    slice of its name; nothing is unmatched and nothing is paired wrongly
    (every complete outer slice holds exactly its inner slices 0..49, in
    order).
    Five attaches at different moments of the loop, and a sixth when none
    has landed inside a scope: how often one does depends on the machine's
    load and kernel (a busy CI machine saw 0 in 5, and 0 in 15 on this
    kernel; it skips when none of the six did: each attach is checked all
    the same)."""
    before_total = 0
    for k in range(6):
        if k >= 5 and before_total:
            break
        # The program ends while recorded, so every slice ends at its own
        # END (test_slices_ending_on_the_same_ns_nest_exactly covers the
        # slices closed together at a recording's end).
        p = spawn(prog("nested_loop"), 2, 0.6)
        assert p.stdout.readline().startswith("pid=")
        time.sleep(0.05 * (k % 5))
        rec = recorder("--no-sched", "-p", p.pid, name=f"a{k}").wait(timeout=60)
        assert p.wait(timeout=60) == 0
        if rec.rc == 1 and "exited while tracebpf was loading" in rec.stderr:
            # on a loaded machine the program can end before the recorder
            # has attached to it (it says so): try again
            continue
        assert rec.rc == 0, rec.stderr[-2000:]
        t = rec.trace(consumer=(k == 0))   # the viewer once: the JSON is alike
        assert t.meta["unmatched_ends"] == 0, t.meta
        marks = [e for e in t.by_ph("I") if e["args"].get("tracebpf_end_of")]
        assert len(marks) == t.meta["ends_before_recording"], (len(marks), t.meta)
        before_total += len(marks)
        for tid in {e["tid"] for e in t.by_ph("X")}:
            xs = [e for e in t.by_ph("X") if e["tid"] == tid]   # in ts order
            mine = [e for e in marks if e["tid"] == tid]
            # Marks end scopes entered before the site's BEGIN was live:
            # several inner ones when the kernel enabled the inner END's
            # site before its BEGIN's. All come before any recorded slice
            # of their name (once both sites are live, every scope pairs).
            assert {e["name"] for e in mine} <= {"inner", "outer"}, mine
            for name in ("inner", "outer"):
                first = next((x["ts"] for x in xs if x["name"] == name), None)
                assert first is None or all(m["ts"] <= first for m in mine
                                            if m["name"] == name), (name, mine, first)
            # each complete outer slice holds exactly the inner ones 0..49
            inner = [x for x in xs if x["name"] == "inner"]
            k = 0
            for o in (x for x in xs if x["name"] == "outer"
                      and "tracebpf_unfinished" not in x["args"]):
                while k < len(inner) and inner[k]["ts"] < o["ts"]:
                    k += 1
                js = []
                while k < len(inner) and inner[k]["ts"] + inner[k]["dur"] <= o["ts"] + o["dur"]:
                    js.append(inner[k]["args"]["j"])
                    k += 1
                assert js == list(range(50)), (o, js[:5], len(js))
    # The race is real, but whether an attach lands in its window (the
    # semaphore on, the BEGIN's probe not yet installed, its END's probe
    # installed before the scope ends) depends on how the kernel installs
    # the probes: on some machines none of 15 does, whatever the build.
    # Every attach above was checked all the same; what a thread's
    # first END becomes is test_ends_before_recording's (test_convert).
    if before_total == 0:
        pytest.skip("no attach landed inside a scope in 6: the race did not happen here")


def test_slices_ending_on_the_same_ns_nest_exactly(recorder, spawn):
    """A recording stopped inside nested scopes closes the outer and the
    inner slice at the same ns. Viewers add ts and dur as doubles, and the
    plain three-decimal dur can put the child a fraction of a ps past its
    parent: DevTools then drops it from the flame chart. Every X's dur is
    written so that ts + dur, added as doubles, is exactly the double of its
    end (docs/output.md): equal ends stay equal, and DevTools drops
    nothing. The ns values are read exactly (as decimals) from the file."""
    from decimal import Decimal
    p = spawn(prog("nested_loop"), 2, 30)
    assert p.stdout.readline().startswith("pid=")
    rec = recorder("--no-sched", "--flush-interval", "50", "-p", p.pid)

    def both_scopes_recorded():
        d = subprocess.run([TRACEBPF, "dump", str(rec.tbt)], capture_output=True, text=True)
        return d.returncode == 0 and d.stdout.count("B nest:outer") >= 4
    wait_for(both_scopes_recorded, what="outer scopes in the file")
    # each thread then stays inside an outer and an inner scope for good
    # (the test used to stop the recording at a random moment and count on
    # the threads being inside both: a loaded machine once had neither)
    p.send_signal(signal.SIGUSR1)
    assert p.stdout.readline() == "held\n"
    rec.stop()
    assert rec.rc == 0, rec.stderr[-2000:]
    doc = json.loads(rec.out.read_text(), parse_float=Decimal)
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    def end_of(e):   # the end to the ns, as the converter knew it
        return (e["ts"] + e["dur"]).quantize(Decimal("0.001"))
    ends = defaultdict(list)   # (tid, end) -> slices
    for e in xs:
        ends[e["tid"], end_of(e)].append(e)
    shared = [v for v in ends.values() if len(v) > 1]
    # each thread, inside an outer and an inner scope at the stop, has both
    # closed at one ns
    assert len(shared) == 2 and all(len(v) == 2 for v in shared), shared
    assert len({v[0]["tid"] for v in shared}) == 2, shared
    for pair in shared:
        assert {e["name"] for e in pair} == {"outer", "inner"}, pair
        assert len({float(e["ts"]) + float(e["dur"]) for e in pair}) == 1, pair
    for e in xs:   # a viewer's sum is the end's own double
        assert float(e["ts"]) + float(e["dur"]) == float(end_of(e)), e
    dt = rec.trace().devtools
    assert all(th["dropped"] == 0 for th in dt["threads"]), dt["threads"]
    assert max(th["max_depth"] for th in dt["threads"]) == 2, dt["threads"]


def ns(us):
    return round(us * 1000)


def marked(e):
    return any(k.startswith("tracebpf_") for k in e.get("args", {}))


# The marks of a slice or instant that is not a whole pair (docs/output.md,
# "Slices"); tracebpf_parent_lost marks a whole pair whose enclosing slice
# may be lost.
CUT_MARKS = ("tracebpf_incomplete", "tracebpf_unfinished", "tracebpf_end_of",
             "tracebpf_begin_of", "tracebpf_inherited", "tracebpf_begin_lost")


def cut(e):
    return any(k in e.get("args", {}) for k in CUT_MARKS)


def check_numbered_threads(t, inner_n):
    """Every X slice of tests/progs/numbered_nest joins the begin and the
    end of one numbered scope, with the nesting of the program, or is
    marked: an inner slice sits in the outer slice of its number, or says
    that its parent may be lost; a whole outer slice holds its own inner
    ones in order, those a gap took cut or missing. Returns how many whole
    outer and inner slices there are."""
    whole = Counter()
    threads, gaps = defaultdict(list), defaultdict(list)
    for e in t.events:
        if e["ph"] in "XI" and e.get("cat") != "tracebpf":   # not the gaps' instants
            threads[e["tid"]].append(e)   # in ts order
        elif e["ph"] == "I":
            gaps[e["tid"]].append(e)
    for mine in threads.values():
        stack = []   # the X slices enclosing the event, innermost last
        for k, x in enumerate(mine):
            a = x["args"]
            b, e = ns(x["ts"]), ns(x["ts"] + x.get("dur", 0))
            while stack and ns(stack[-1]["ts"] + stack[-1]["dur"]) < b:
                stack.pop()
            if x["ph"] == "I" or cut(x):
                assert marked(x), ("an END or BEGIN shown as an instant, unmarked", x)
                assert x["ph"] == "I" or "tracebpf_incomplete" in a or \
                    "tracebpf_unfinished" in a or "tracebpf_begin_lost" in a, x
                # a gap inside a whole outer slice cuts only what it lost of
                # its inner ones: the gap marks say the outer did not end
                # there (docs/output.md, "Slices")
                assert x["name"] == "inner" or \
                    not any(o["name"] == "outer" and not marked(o) for o in stack), \
                    ("an outer slice marked inside a whole outer slice", x, stack)
            else:
                assert a["i"] == a["end_i"], ("begin and end of different scopes", x)
                if x["name"] == "inner":
                    assert a["j"] == a["end_j"], ("begin and end of different scopes", x)
                    # (an outer slice whose BEGIN was lost has its END's number)
                    assert all(o["name"] == "outer" and
                               o["args"].get("i", o["args"].get("end_i")) == a["i"]
                               for o in stack), ("an inner slice inside another scope", x, stack)
                    # its outer is shown (whole or cut), or its lost parent is said
                    assert stack or "tracebpf_parent_lost" in a, \
                        ("an inner slice without its outer, unmarked", x)
                    assert not (stack and "tracebpf_parent_lost" in a), \
                        ("a parent said lost, and shown", x, stack)
                else:
                    # a whole outer slice holds exactly its inner ones, in order
                    inside = []
                    for y in mine[k + 1:]:
                        if ns(y["ts"]) > e:
                            break
                        inside.append((y["ph"], y["name"], y["args"].get("i"),
                                       y["args"].get("j"), marked(y)))
                    # where records were lost inside it, those inner ones are
                    # cut (marked) or missing, and nothing else is there
                    assert all(n == "inner" and i == a["i"] for _, n, i, _, _ in inside), \
                        ("a whole outer slice holds its inner ones only", x, inside[:4])
                    js = [j for ph, _, _, j, m in inside if ph == "X" and not m]
                    assert js == sorted(set(js)), ("inner ones out of order", x, inside)
                    if js != list(range(inner_n)):
                        assert any(m for *_, m in inside) or any(
                            b <= ns(g["ts"]) <= e for g in gaps.get(x["tid"], [])), \
                            ("inner ones missing with no gap", x, inside)
                whole[x["name"]] += 1
            if x["ph"] == "X":
                stack.append(x)
    return whole


def check_marks_counted(t):
    """metadata counts every slice marked tracebpf_parent_lost, and has no
    such count in a trace without gaps."""
    n = sum(1 for e in t.events if e["ph"] == "X" and "tracebpf_parent_lost" in e["args"])
    if t.meta.get("gaps", 0):
        assert t.meta["slices_parent_lost"] == n, (t.meta["slices_parent_lost"], n)
    else:
        assert n == 0 and "slices_parent_lost" not in t.meta, (n, t.meta)
    return n


def check_gaps_on_timelines(t, dump_out):
    """Every gap of application records shows on the timeline of each
    thread it names that the JSON has (a "records lost" instant, category
    tracebpf, with its number and count), and a gap of every thread on
    each process's. dump_out: `tracebpf dump`'s output."""
    gaps = re.findall(r"GAP application records=(\d+) until=\S+ threads=(\S+)", dump_out)
    named = {tid for (_, tid) in t.thread_names()}
    pids = {pid for pid in t.process_names()}
    # dump lists the marks in file order, convert numbers them in time
    # order: match each mark by its count, as a multiset per timeline
    got, numbers = Counter(), set()
    for e in t.events:
        if e.get("cat") == "tracebpf" and e["name"] == "records lost":
            assert e["ph"] == "I" and e["s"] in "tp", e
            got[(e["s"], e["tid"] if e["s"] == "t" else e["pid"], e["args"]["records_lost"])] += 1
            numbers.add(e["args"]["gap"])
    want = Counter()
    for count, tids in gaps:
        for x in tids.split(","):
            if x in ("others", "all"):
                want.update(("p", pid, int(count)) for pid in pids)
            elif int(x) in named:
                want[("t", int(x), int(count))] += 1
    # a thread first known from a gap (its FORK lost in it) has no process
    # to be drawn in yet: only such thread instants may be missing
    assert not got - want, ("instants of no gap", got - want)
    missing = want - got
    assert all(s == "t" for s, _, _ in missing), ("gaps not on the timeline", missing)
    assert numbers <= set(range(1, len(gaps) + 1)), numbers
    return len(gaps)


def check_numbered_ids(t):
    """Async slices paired by (pid, cat, id) as the viewers pair them, and
    flows by (cat, name, id) (a start keeps its place until its end, as in
    Perfetto), join one scope's begin and end, or end marked; returns the
    number of whole async slices and arrows."""
    whole = Counter()
    open_async, open_flow = defaultdict(list), {}
    for e in t.events:
        if e.get("name") == "req":
            key = (e["pid"], e["cat"], e["id"])
            if e["ph"] == "b":
                open_async[key].append(e)
            elif e["ph"] == "n" or not open_async[key]:
                assert marked(e), ("an async end or instant with nothing open, unmarked", e)
            else:
                b = open_async[key].pop()
                if marked(e):
                    assert "tracebpf_incomplete" in e["args"], e
                else:
                    assert b["args"]["i"] == e["args"]["end_i"], ("async across scopes", b, e)
                    whole["async"] += 1
        if e.get("name") == "hop":
            key = (e["cat"], e["name"], e["id"])
            if e["ph"] == "s":
                open_flow.setdefault(key, e)
            elif key in open_flow:
                s = open_flow.pop(key)
                assert s["args"]["i"] == e["args"]["end_i"], ("an arrow across scopes", s, e)
                whole["flow"] += 1
    return whole


def test_numbered_scopes_without_loss_are_whole_and_unmarked(recorder):
    """The rule the gap test checks holds at zero loss: every slice of
    numbered_nest is whole, in its scope, and nothing is marked."""
    inner_n = 5
    rec = recorder("--no-sched", "--", prog("numbered_nest"), 2, 2000, inner_n).wait(timeout=120)
    t = rec.trace()
    assert t.meta["drops_total"] == 0 and t.meta.get("gaps", 0) == 0, t.meta
    whole = check_numbered_threads(t, inner_n)
    assert whole == {"outer": 2 * 2000, "inner": 2 * 2000 * inner_n}, whole
    assert not [e for e in t.events if marked(e) or e.get("cat") == "tracebpf"]
    assert check_marks_counted(t) == 0


@pytest.mark.parametrize("size", ["4K", pytest.param("8K", marks=pytest.mark.full),
                                  pytest.param("32K", marks=pytest.mark.full)])
def test_gaps_never_pair_across_lost_records(recorder, size):
    """numbered_nest through small rings (4 KiB: the smallest --buffer-size;
    8 and 32 KiB under make test-full): many records are lost, and each
    CPU's losses leave gap marks. Every slice in
    the JSON joins the begin and end of one numbered scope (nesting as in
    the program: a whole outer slice holds exactly its inner slices), or
    is marked: cut at a gap, or a begin or end shown as a marked instant.
    Async slices and flows, whose ids the program reuses, likewise. The
    marks count every lost record. Fails when the converter pairs an END
    after a gap with a BEGIN before it."""
    inner_n = 10
    rec = recorder("--no-sched", "-b", size, *NO_GROWTH, "--", prog("numbered_nest"), 2,
                   scale(5000, 20000), inner_n).wait(timeout=120)
    t = rec.trace(consumer=False)   # the content first, the viewer at the end
    m = t.meta
    assert m["drops_total"] > 0, f"{size} rings at full speed must overflow"
    assert m["gaps"] > 0 and m["gap_records"] == m["drops_total"], m
    assert m["kernel_gaps"] == 0 and m["unmatched_ends"] == 0, m
    assert m["slices_cut_at_gaps"] + m["ends_after_gaps"] > 0, m
    whole = check_numbered_threads(t, inner_n)
    # some slices made it whole between the gaps: the check saw real pairs
    assert whole["outer"] > 0 and whole["inner"] > 0, whole
    check_marks_counted(t)
    ids = check_numbered_ids(t)
    assert ids["async"] > 0, ids
    # a flow whose one end was lost is left out; one whose two ends were
    # kept is whole (check_numbered_ids checked those). 8 and 32 KiB may
    # lose too few records (the recorder drains at real-time priority:
    # user/record/record.c) to cut a flow. So may 4 KiB on a loaded
    # machine: in a fresh clone's make test the run lost 258,418 of about
    # 260,000 records, the rest kept in a few long runs whose edges held
    # no flow's end, and all 61 flows kept were whole
    assert m["flow_events_left_out"] > 0 or ids["flow"] > 0, (m, ids)
    # the marks, as dump and info show them
    d = subprocess.run([TRACEBPF, "dump", str(rec.tbt)], capture_output=True, text=True)
    assert d.returncode == 0, d.stderr
    gaps = re.findall(r"\[ *(\d+)\] 0/0 GAP application records=(\d+) until=\S+ threads=\S+",
                       d.stdout)
    assert len(gaps) == m["gaps"], (len(gaps), m["gaps"])
    assert sum(int(n) for _, n in gaps) == m["drops_total"]
    assert check_gaps_on_timelines(t, d.stdout) == m["gaps"]
    per_cpu = [0] * len(m["drops_per_cpu"])
    for cpu, n in gaps:
        per_cpu[int(cpu)] += int(n)
    assert per_cpu == m["drops_per_cpu"], (per_cpu, m["drops_per_cpu"])
    info = subprocess.run([TRACEBPF, "info", str(rec.tbt)], capture_output=True, text=True)
    assert (f"gaps:           {m['gaps']} ({m['drops_total']} application records lost; "
            f"per cpu: {' '.join(map(str, per_cpu))}), 0 in kernel records") in info.stdout, \
        info.stdout
    devtools_check(rec.out)


# bench/rate's nested mode (NARGS 3): per thread, event n is BEGIN outer
# {i: n}, BEGIN inner {i: n}, END inner {end_i: n}, END outer {end_i: n};
# each record's place in its thread's sequence, and its step of the stack.
NEST_STEP = {("B", "outer"): (0, 1), ("B", "inner"): (1, 1), ("E", "inner"): (2, -1),
             ("E", "outer"): (3, -1)}


def nest_records(dump_out):
    """tracebpf dump's nested bench/rate events, per thread: {index: ts}."""
    got = defaultdict(dict)
    for ts, tid, ph, name, n in re.findall(
            r"^(\S+) \[...\] \d+/(\d+) ([BE]) bench:(outer|inner) (?:end_)?i=(\d+)",
            dump_out, re.M):
        got[int(tid)][4 * int(n) + NEST_STEP[ph, name][0]] = float(ts)
    return got


def lost_depths(kept, total, gaps):
    """What each gap mark of a thread says it lost of its BEGINs and ENDs,
    against what the thread lost (the indices below total missing from
    kept, its records by index): each run of lost records lies between two records
    kept, stamped a and b, and belongs to the marks of the thread whose
    time spans that; a mark that shares a run with another one is left
    out (which of them lost which record is not known). Returns the pairs
    (said, lost) of the marks compared, and the runs no mark covers."""
    steps = [s for _, s in sorted(NEST_STEP.values())]
    idx = sorted(kept)
    runs = []
    for a, b in zip([-1] + idx, idx + [None]):
        last = b if b is not None else total
        if last - a > 1:
            runs.append((kept.get(a, 0.0), kept.get(b, float("inf")), range(a + 1, last)))
    owners = [[k for k, (first, until, _) in enumerate(gaps) if a <= until and b >= first]
              for a, b, _ in runs]
    uncovered = [r for r, o in zip(runs, owners) if not o]
    pairs = []
    for k, (_, _, said) in enumerate(gaps):
        mine = [r for r, o in zip(runs, owners) if o == [k]]
        if said is None or not mine or any(k in o and len(o) > 1 for o in owners):
            continue
        d = low = 0
        for _, _, lost in mine:
            for i in lost:
                d += steps[i % 4]
                low = min(low, d)
        pairs.append((said, (low, d)))
    return pairs, uncovered


NESTS = 300000   # 1.2 M records at 1 M nests a second, emitted whatever the load


def test_nested_slices_after_losses_are_placed_by_the_gap_depths(recorder):
    """docs/converter.md, "Gaps in the output": two threads of nested
    numbered slices (outer n holding inner n) through 8 KiB rings lose
    records; each gap mark says what each thread lost of its BEGINs and
    ENDs (the lowest depth they reached, and where they left it), which is
    what the thread lost (compared with the numbers missing from the
    trace). So after a gap the converter knows which slices ended in it
    and which began in it: every slice is whole and unmarked or marked,
    none joins two scopes or sits in another scope unmarked, and a mark on
    a slice that the program entered as shown (its begin, end and parent
    the program's) is needless: at most 0.1% of the slices carry one (with
    tracebpf_parent_lost on every top-level slice after a thread's first
    gap, nearly all did). Fails when the marks say other than what was
    lost, or when the converter pairs across a gap."""
    rec = recorder("--no-sched", "-b", "8K", *NO_GROWTH, "--", str(BUILD / "bench" / "rate"),
                   10**6, NESTS / 10**6, 3, 2, env={"RATE_EXACT": "1"}).wait(timeout=120)
    assert rec.rc == 0, rec.stderr[-2000:]
    t = rec.trace(consumer=False)
    m = t.meta
    assert m["drops_total"] > 0, "8 KiB rings and 64 KiB fast-path rings must overflow"
    assert m["gaps"] > 0 and m["gap_records"] == m["drops_total"], m
    # placed and marked
    c = Counter()
    by_tid = defaultdict(list)
    for e in t.events:
        if e["ph"] in "XI" and e.get("cat") == "bench":
            by_tid[e["tid"]].append(e)
    for mine in by_tid.values():
        stack = []
        for x in sorted(mine, key=lambda e: (e["ts"], -e.get("dur", 0))):
            while stack and ns(stack[-1]["ts"] + stack[-1]["dur"]) < ns(x["ts"]):
                stack.pop()
            if x["ph"] == "I":
                assert marked(x), ("an unpaired BEGIN or END, unmarked", x)
                continue
            a, parent = x["args"], stack[-1] if stack else None
            own = "i" in a and a["i"] == a.get("end_i")
            if x["name"] == "inner":
                n = a.get("i", a.get("end_i"))
                pn = parent and parent["args"].get("i", parent["args"].get("end_i"))
                right = parent is not None and parent["name"] == "outer" and pn == n
                exact = right and parent["args"].get("i") == parent["args"].get("end_i") \
                    and not marked(parent)
            else:
                right = exact = parent is None
            c["slices"] += 1
            if marked(x):
                c["marked"] += 1
                c["needless"] += own and exact
            else:
                assert own and right, ("a slice across scopes, unmarked", x, parent)
            stack.append(x)
    assert c["slices"] > 0 and c["needless"] * 1000 <= c["slices"], c
    check_marks_counted(t)
    assert m["slices_cut_at_gaps"] + m["ends_after_gaps"] > 0, m
    # the marks' depths are what each thread lost
    d = dump_text(rec.tbt)
    kept = nest_records(d)
    assert len(kept) == 2, kept.keys()
    compared = 0
    for tid, recs in kept.items():
        gaps = []
        for first, until, tids, depths in re.findall(
                r"^(\S+) \[...\] 0/0 GAP application records=\d+ until=(\S+) threads=(\S+)"
                r" depths=(\S+)", d, re.M):
            for x, dep in zip(tids.split(","), depths.split(",")):
                if x == str(tid):
                    said = None if dep == "?" else tuple(map(int, dep.split("/")))
                    gaps.append((float(first), float(until), said))
        pairs, uncovered = lost_depths(recs, 4 * NESTS // 2, gaps)
        assert not uncovered, ("records lost that no mark of the thread covers", uncovered[:3])
        for said, lost in pairs:
            assert said == lost, (tid, said, lost)
        compared += len(pairs)
    assert compared > 0, ("no gap mark could be compared with what was lost",
                          re.findall(r"^.* GAP .*$", d, re.M)[:10])
    devtools_check(rec.out)


@pytest.mark.parametrize("kind", ["application", "kernel"])
def test_gap_marks_count_every_drop(recorder, kind):
    """Records lost because a ring is full leave gap marks (TB_REC_GAP, as
    tracebpf dump prints them) that count every one of them: the
    application's events through 4 KiB rings (the smallest --buffer-size),
    or scheduler records through 4 KiB kernel rings that spill into 4 KiB
    rings (a staged batch never fits). With --no-sched or --sched=traced
    nothing is recorded once the program is gone, so the marks account for
    every drop. The JSON counts them."""
    from conftest import BUILD
    if kind == "application":
        rec = recorder("--no-sched", "-b", "4K", *NO_GROWTH, "--",
                       str(BUILD / "bench" / "rate"), RATE_BOUNDED, 0.4)
        pid = int(re.search(r"pid=(\d+)", starve(rec)).group(1))
        rec.wait(timeout=120)
    else:
        rec = recorder("--sched=traced", "-b", "4K", "--kernel-buffer-size", "4K", "--",
                       prog("pingpong"), 20000).wait(timeout=120)
    assert rec.rc == 0, rec.stderr[-2000:]
    d = subprocess.run([TRACEBPF, "dump", str(rec.tbt)], capture_output=True, text=True)
    assert d.returncode == 0, d.stderr
    every = re.findall(r" 0/0 GAP (\w+) records=(\d+) until=\S+ threads=(\S+)", d.stdout)
    marks = [(n, threads) for k, n, threads in every if k == kind]
    drops = int(re.findall(r" STATS events=\d+ drops=(\d+) ", d.stdout)[-1])
    assert drops > 0 and marks, ("4 KiB rings must overflow", drops, len(marks))
    assert sum(int(n) for _, n, _ in every) == drops, (len(every), drops)
    if kind == "application":   # the one thread that emits: named, not "all"
        assert {threads for _, threads in marks} == {str(pid)}, marks[:5]
    m = rec.trace(consumer=False).meta
    key = "gaps" if kind == "application" else "kernel_gaps"
    assert m[key] == len(marks), m
    assert m[key.replace("gaps", "gap_records")] == sum(int(n) for n, _ in marks), m
    assert m["gap_records"] + m["kernel_gap_records"] == drops == m["drops_total"], m


def command_pid(rec):
    """The pid of the command `record -- CMD` started: its EXEC record."""
    return int(re.search(r"^\S+ \[\s*\d+\] (\d+)/\1 EXEC ", dump_text(rec.tbt),
                         re.M).group(1))


def dump_text(tbt):
    d = subprocess.run([TRACEBPF, "dump", str(tbt)], capture_output=True, text=True,
                       timeout=120)
    assert d.returncode == 0, d.stderr
    return d.stdout


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("how", ["duration", "SIGINT"])
def test_the_command_ends_with_the_recording(recorder, how):
    """docs/tracebpf-record.md, "The command": a recording that ends by
    --duration or by a signal sends the command it started SIGTERM, as
    perf record does, and records until it has exited: its exit by
    SIGTERM (code 15) is in the trace, and nothing of it runs on."""
    if how == "duration":
        rec = recorder("--no-sched", "--duration", "1", "--", prog("quiet_thread")).wait()
    else:
        rec = recorder("--no-sched", "--", prog("quiet_thread"))
        assert rec.proc.stdout.readline() == "ready\n"
        rec.stop(signal.SIGINT)
    assert rec.rc == 0, rec.stderr
    pid = command_pid(rec)
    assert re.search(rf"\] {pid}/\d+ EXIT process code=15 ", dump_text(rec.tbt)), \
        dump_text(rec.tbt)[-2000:]
    assert not alive(pid)


def test_keep_running_leaves_the_command_running(tmp_path):
    """--keep-running: the command outlives a recording ended by
    --duration. (Output to files: the command keeps the recorder's stdout
    and stderr open, a pipe would never end.)"""
    with open(tmp_path / "out", "w") as out, open(tmp_path / "err", "w") as err:
        p = subprocess.run([TRACEBPF, "record", "-q", "--no-sched", "--no-json",
                            "--keep-running", "--duration", "1", "-o", str(tmp_path / "t.tbt"),
                            "--", prog("quiet_thread")], stdout=out, stderr=err, timeout=120)
    assert p.returncode == 0, (tmp_path / "err").read_text()
    text = dump_text(tmp_path / "t.tbt")
    pid = int(re.search(r"^\S+ \[\s*\d+\] (\d+)/\1 EXEC ", text, re.M).group(1))
    try:
        assert alive(pid), f"--keep-running: the command {pid} was ended"
        assert " EXIT process" not in text
    finally:
        os.kill(pid, signal.SIGKILL)


def test_a_command_that_ignores_sigterm_is_left_running(tmp_path):
    """The command ignores SIGTERM: the recording waits for it (5 s at
    most), then ends, leaves it running and says so."""
    with open(tmp_path / "out", "w") as out, open(tmp_path / "err", "w+") as err:
        p = subprocess.run([TRACEBPF, "record", "-q", "--no-sched", "--no-json",
                            "--duration", "1", "-o", str(tmp_path / "t.tbt"), "--", "sh", "-c",
                            f"trap '' TERM; exec {prog('quiet_thread')}"],
                           stdout=out, stderr=err, timeout=120)
        err.seek(0)
        stderr = err.read()
    assert p.returncode == 0, stderr
    m = re.search(r"tracebpf: record: the command \(process (\d+)\) has not exited within "
                  r"5 s of SIGTERM: it is left running", stderr)
    assert m, stderr
    pid = int(m.group(1))
    try:
        assert alive(pid)
    finally:
        os.kill(pid, signal.SIGKILL)


@pytest.mark.both_paths
def test_tid_records_only_those_threads(recorder, spawn):
    """docs/tracebpf-record.md, --tid: of a running process's 4 threads,
    the application events of the 2 chosen ones are recorded (each its own
    unbroken run of numbers), the others' not at all, on either path."""
    # (a sleep every 10 events: enough to check, a JSON quick to read)
    app = spawn(prog("fast_seq"), "attach", 4, 10**12,
                env=dict(os.environ, FAST_SEQ_BURST="10"))
    tasks = wait_for(lambda: len(os.listdir(f"/proc/{app.pid}/task")) == 5 and
                     sorted(map(int, os.listdir(f"/proc/{app.pid}/task"))),
                     what="fast_seq's 4 threads")
    chosen = [t for t in tasks if t != app.pid][1:3]
    rec = recorder("--no-sched", "--tid", ",".join(map(str, chosen)), "--duration", "0.8").wait()
    assert app.poll() is None, "the target keeps running after we detach"
    t = rec.trace()
    seq = t.named("seq", "I")
    assert {e["tid"] for e in seq} == set(chosen), Counter(e["tid"] for e in seq)
    assert {e["pid"] for e in t.events if e["ph"] != "M"} <= {app.pid}
    for tid in chosen:
        s = [e["args"]["seq"] for e in sorted(seq, key=lambda e: e["ts"]) if e["tid"] == tid]
        assert s == list(range(s[0], s[0] + len(s))), f"thread {tid}: a hole"
    # docs/output.md, "Processes, threads and metadata": the filter, from
    # the file's start
    f = t.meta["event_filters"]
    assert [{k: v for k, v in x.items() if k != "from_ns"} for x in f] == \
        [{"tids": sorted(chosen)}], f
    assert f[0]["from_ns"] <= min(round(float(e["ts"]) * 1000) for e in seq), f


def test_tid_errors(tmp_path):
    p = run_record("--tid", "x", "-o", tmp_path / "t.json")
    assert p.returncode == 64 and "invalid thread id 'x'" in p.stderr, p.stderr
    p = run_record("--tid", str(os.getpid()), "-o", tmp_path / "t.json", "--", "true")
    assert p.returncode == 64 and "--tid names running threads" in p.stderr, p.stderr
    p = run_record("--tid", "2147483647", "-o", tmp_path / "t.json")
    assert p.returncode == 1 and "tracebpf: hint: " in p.stderr, p.stderr


def run_record(*args):
    return subprocess.run([TRACEBPF, "record", "-q", *map(str, args)], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("args,rt", [([], True), (["--realtime"], True),
                                     (["--no-fast-path"], False),
                                     (["--no-realtime"], False)],
                         ids=["default", "realtime", "no-rings", "no-realtime"])
def test_recorder_realtime_while_threads_wait_for_rings(tmp_path, args, rt):
    """user/record/record.c, raise_priority and pace: the
    recorder is at SCHED_FIFO 1 in the rounds in which threads wait on
    their probes for rings (8 threads starting: some rounds), never
    without rings to make (--no-fast-path), nor with --no-realtime; what
    it starts is not real-time: the command runs at SCHED_OTHER with the
    nice the recorder was started with."""
    script = (f"chrt -p $$; cut -d' ' -f19 /proc/$$/stat; "
              f"exec {prog('fast_seq')} run 8 1000")
    # (nice 3 itself, not 3 more than the test's own: tests/run.sh runs at -20)
    p = subprocess.run([TRACEBPF, "record", "-v", "--no-sched", "--no-json",
                        "-o", str(tmp_path / "t.tbt"), *args,
                        "--", "sh", "-c", script], capture_output=True, text=True, timeout=120,
                       preexec_fn=lambda: os.setpriority(os.PRIO_PROCESS, 0, 3),
                       env={**os.environ, "FAST_SEQ_WARM": "500"})   # not 3 s without a ring
    assert p.returncode == 0, p.stderr[-2000:]
    lines = p.stdout.splitlines()
    assert any("policy: SCHED_OTHER" in x for x in lines), lines
    assert "3" in [x.strip() for x in lines], lines
    m = re.search(r"; (\d+) rounds at SCHED_FIFO", p.stderr)
    assert m, p.stderr[-2000:]
    assert (int(m[1]) > 0) == rt, m[0]


@pytest.mark.parametrize("args,said", [(["--realtime"], "warning: --realtime"),
                                       (["-v"], "real-time rounds"), ([], None)],
                         ids=["realtime", "verbose", "default"])
def test_realtime_refused_is_said(tmp_path, args, said):
    """Real-time rounds without CAP_SYS_NICE (dropped from the bounding
    set, so the recorder, exec'd by root, lacks it): the recording goes on
    at nice -20, and stderr says why and what it needs, once, when
    --realtime asked for them or with -v; by default it says nothing."""
    p = subprocess.run(["setpriv", "--bounding-set=-sys_nice", "--inh-caps=-sys_nice",
                        TRACEBPF, "record", *args, "--no-sched", "--no-json",
                        "-o", str(tmp_path / "t.tbt"), "--", prog("fast_seq"), "run", "8", "1000"],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "FAST_SEQ_WARM": "500"})
    assert p.returncode == 0, p.stderr[-2000:]
    refused = "cannot run at SCHED_FIFO (Operation not permitted): recording at nice -20"
    if said:
        assert p.stderr.count(f"{said}: {refused}") == 1, p.stderr
        assert p.stderr.count("hint: it needs CAP_SYS_NICE") == 1, p.stderr
    else:
        assert refused not in p.stderr and "hint:" not in p.stderr, p.stderr
    assert "recorded" in p.stderr, p.stderr


@pytest.mark.parametrize("when", ["after", "before", "during"])
def test_record_p_of_a_process_whose_group_leader_ended(recorder, spawn, tmp_path, when):
    """record -p of a process whose main thread ends with pthread_exit(),
    once recorded (after) or before the recorder attaches (before): its
    group leader is a zombie while its other thread goes on. Attaching
    reads that thread's memory map and root (tb_proc_dir, user/probes/probes.c:
    the leader's are empty); the recorder prunes a traced process that is
    a zombie with no thread left (one whose exit it did not see, which a
    parent that reaps only later keeps as a zombie: user/record/record_procs.c,
    process_exited), not this one. Every event of the thread is recorded,
    with the process's command line, and the recording ends when the
    thread does, though the process is reaped only after.
    "during": the leader ends while the recorder attaches, once it has
    read the process's memory map and created its file, before it opens
    the program's: through the leader's root
    that open failed as if the whole process had exited (seen when another
    recording of the same program raised its semaphores at that moment)."""
    n = 1000
    out = tmp_path / "t.tbt"   # the recording's file (conftest's recorder)
    app = spawn(prog("leader_exits"), n, *{"before": ["now"], "after": [],
                                           "during": ["when-file", out]}[when])
    pid = int(re.match(r"pid=(\d+)", app.stdout.readline()).group(1))
    if when == "before":
        wait_for(lambda: open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z",
                 what="the group leader to end")
    rec = recorder("--no-sched", "-p", pid).wait(timeout=60)   # the ticks take 1 s and more
    assert rec.rc == 0, rec.stderr
    t = rec.trace()
    # the thread starts once the semaphore is up, which is before the
    # attach ends and the recording starts (a CI machine recorded from
    # tick 239): every tick from the first recorded to the last, and the
    # last event, so the recording outlived the leader by far more than
    # the 250 ms between two looks for zombies
    ticks = [e["args"]["i"] for e in t.named("tick", "I")]
    assert ticks and ticks == list(range(ticks[0], n)) and ticks[0] < n // 2, ticks[:3]
    assert len(t.named("done", "I")) == 1
    assert t.process_labels()[pid].startswith(prog("leader_exits")), t.process_labels()
    assert app.wait(timeout=60) == 0