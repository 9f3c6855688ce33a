"""The fast path (docs/fast-path.md, "The fast path"): threads of a process
recorded (unless --no-fast-path) write their events into ring buffers the
recorder's BPF maps own, mapped into them, instead of trapping into their
probes. Every test runs real BPF against tests/progs/fast_seq, which reads
the header's state to say whether its ring was mapped ("fast=1")."""
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from collections import Counter, defaultdict

import pytest

from conftest import TRACEBPF, child_pid_of, load, prog, wait_for

ROOT_DIR = "/sys/fs/bpf/tracebpf"
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
DAEMON = ["setpriv", "--reuid=1", "--regid=1", "--clear-groups"]


def per_thread(t, name):
    """{t arg: [seq args in time order]} of the instants `name`."""
    out = defaultdict(list)
    for e in sorted(t.named(name, "I"), key=lambda e: (e["ts"], e["args"]["seq"])):
        out[e["args"]["t"]].append(e["args"]["seq"])
    return out


def fast_flags(stdout):
    return {int(m[0]): int(m[1]) for m in re.findall(r"thread (\d+) fast=(\d)", stdout)}


def busy_app(spawn, threads):
    """fast_seq attach: THREADS threads numbering events until killed; the
    lines it prints (one per thread when its ring is mapped) collect in the
    returned list."""
    app = spawn(prog("fast_seq"), "attach", threads, 10**12)
    lines = []
    threading.Thread(target=lambda: lines.extend(app.stdout), daemon=True).start()
    return app, lines


def holes(s):
    """The missing runs of a sorted sequence, as (first, last) pairs."""
    return [(a + 1, b - 1) for a, b in zip(s, s[1:]) if b != a + 1]


def one_run(seq, who, meta=None):
    """Each thread's events are one run of consecutive numbers (meta, the
    trace's metadata, goes into the message: a hole with drops counted is
    not the same failure as one without)."""
    for t, s in seq.items():
        assert s and s == list(range(s[0], s[0] + len(s))), \
            f"{who} thread {t}: {len(s)} events from {s[0]} to {s[-1]}, not one run: " \
            f"missing {holes(s)[:5]}, {meta}"


@pytest.mark.parametrize("fast", [True, False], ids=["fast-path", "probes"])
def test_exact_counts_and_the_switch(recorder, fast):
    n, threads = 20000, 2
    args = ["--no-sched"] + ([] if fast else ["--no-fast-path"])
    rec = recorder(*args, "--", prog("fast_seq"), "run", threads, n).wait(timeout=120)
    assert fast_flags(rec.stdout) == {i: int(fast) for i in range(threads)}, rec.stdout
    t = rec.trace()
    warm = {int(m[0]): int(m[1]) for m in re.findall(r"thread (\d+) fast=\d warm=(\d+)",
                                                     rec.stdout)}
    seq, w = per_thread(t, "seq"), per_thread(t, "warm")
    for i in range(threads):
        # every event once, in order: none lost or doubled where the thread
        # moved from its probe to its ring (the warm events cross it)
        assert seq[i] == list(range(n)), f"thread {i}: {len(seq[i])} of {n}"
        assert w[i] == list(range(warm[i])), f"thread {i} warm: {w[i][:5]}..."
    # string arguments, on the fast path too: each exact, and a long one cut
    # to 255 bytes as the probe cuts it
    for i in range(threads):
        names = [e["args"]["name"] for e in sorted(t.named("label", "I"), key=lambda e: e["ts"])
                 if e["args"]["t"] == i]
        want = [f"t{i}-{k}" + ("x" * (399 - len(f"t{i}-{k}")) if k % 1000 == 50 else "")
                for k in range(50, n, 100)]
        assert names == [w[:255] for w in want], f"thread {i}: {names[:3]}"
    # `event_id` sites: async slices by id, counters with ids, copied names
    for i in range(threads):
        ks = range(70, n, 100)
        ops = sorted(int(e["id"], 16) for e in t.events if e.get("name") == "op" and
                     e["ph"] == "b" and int(e["id"], 16) // 10**9 == i)
        assert ops == [i * 10**9 + k for k in ks], f"thread {i}: {len(ops)} async begins"
        ends = [e for e in t.events if e.get("name") == "op" and e["ph"] == "e" and
                int(e["id"], 16) // 10**9 == i]
        assert len(ends) == len(ks)
        copied = sorted(e["name"] for e in t.events if e.get("ph") == "I" and
                        e["name"].startswith(f"c{i}-"))
        assert copied == sorted(f"c{i}-{k}" for k in ks), f"thread {i}: {copied[:3]}"
    dump = subprocess.run([TRACEBPF, "dump", str(rec.tbt)], capture_output=True,
                          text=True).stdout
    # every event resolved: dump reads a file's descriptors first (with the
    # fast path a SITE record can come later in file order than its events)
    assert " EVENT site=" not in dump
    ids = [l for l in dump.splitlines() if " test:op id=" in l or " test:level id=" in l]
    assert len(ids) == 3 * threads * len(range(70, n, 100)), len(ids)
    fast_ids = sum(l.endswith(" [fast]") for l in ids)
    assert fast_ids > len(ids) // 2 if fast else fast_ids == 0, (fast_ids, len(ids))
    labels = [l for l in dump.splitlines() if " I test:label " in l]
    assert len(labels) == threads * len(range(50, n, 100)), len(labels)
    fast_labels = sum(l.endswith(" [fast]") for l in labels)
    if fast:
        # after its switch a thread's labels go to its ring: all but those
        # that found it full
        assert fast_labels > len(labels) // 2, (fast_labels, len(labels))
    else:
        assert fast_labels == 0 and not any(l.endswith(" [fast]") for l in dump.splitlines())
    blocks = [e for e in t.named("block", "X")]
    assert len(blocks) == threads * n // 100
    assert all(not e.get("args", {}).get("tracebpf_unfinished") for e in blocks)
    assert t.meta["drops_total"] == 0 and t.meta["unresolved_sites"] == 0
    # the fast path says once why it is off, and only then
    said = rec.stderr.count("the fast path is off (--no-fast-path): every event of a category "
                            "recorded takes its probe")
    assert said == (0 if fast else 1), rec.stderr


def test_rings_all_in_use(recorder):
    # one ring for two threads: one thread gets it, the other keeps its
    # probes until the ring is free again (its thread exited); nothing is
    # lost either way, and stderr says what to raise
    n = 5000
    rec = recorder("--no-sched", "--max-fast-rings", 1, "--", prog("fast_seq"), "run", 2,
                   n).wait(timeout=120)
    assert 1 in fast_flags(rec.stdout).values(), rec.stdout
    assert rec.stderr.count("all 1 fast-path rings are in use: more threads take their "
                            "probes (raise --max-fast-rings)") == 1, rec.stderr
    seq = per_thread(rec.trace(consumer=False), "seq")
    assert seq[0] == list(range(n)) and seq[1] == list(range(n))


def test_sigkill_loses_at_most_the_event_being_written(recorder, tmp_path):
    countfile = tmp_path / "count"
    rec = recorder("--no-sched", "--", prog("fast_seq"), "kill", 1, 0,
                   countfile)
    wait_for(lambda: countfile.exists() and countfile.stat().st_size == 8 and
             int.from_bytes(countfile.read_bytes(), "little") > 100000,
             what="100000 events")
    child = child_pid_of(rec)
    os.kill(child, signal.SIGKILL)
    rec.wait(timeout=120)
    count = int.from_bytes(countfile.read_bytes(), "little")
    assert "fast=1" in rec.stdout, rec.stdout
    t = rec.trace(consumer=False)
    seq = per_thread(t, "seq")[0]
    # everything committed is there, in order (count events had returned,
    # the next may have been committed too); the one the thread may have
    # been writing when it died is lost, and then marked as a gap
    assert seq == list(range(len(seq)))
    assert count <= len(seq) <= count + 1, (count, len(seq))
    assert t.meta["gap_records"] <= 1 and t.meta["drops_total"] == 0, t.meta


def ring_pins(pid):
    d = f"{ROOT_DIR}/{pid}"
    return [f"{d}/{n}" for n in sorted(os.listdir(d))]


def test_unprivileged_process_and_other_users(recorder, spawn):
    # where nobody may write its count (pytest's tmp_path is root's, 0700)
    shared = tempfile.TemporaryDirectory(prefix="tb-fast-")
    os.chmod(shared.name, 0o777)
    countfile = os.path.join(shared.name, "count")
    # a sleep every 20 events: the test needs the thread alive, not its
    # millions of events (converting those took minutes)
    rec = recorder("--no-sched", "--", *NOBODY, prog("fast_seq"), "kill", 1, 20,
                   countfile)
    # fast_seq prints this one line once its thread has tried the fast
    # path: read it once (waiting for a second line would block for ever)
    line = rec.proc.stdout.readline()
    assert line.startswith("thread 0 fast=1"), \
        f"the unprivileged thread has no ring: {line!r} (another recording live?)"
    child = int(subprocess.check_output(["pgrep", "-n", "-x", "fast_seq"], text=True))
    # fast_seq kill runs until killed, as nobody: a failure here must not
    # leave it running (one left spinning slowed every later test)
    try:
        # the directory is root's (docs/security.md): the process opens the
        # pins given to it by name, and can change nothing in it
        st = os.stat(f"{ROOT_DIR}/{child}/")
        assert (st.st_uid, st.st_mode & 0o777) == (0, 0o711)
        pins = ring_pins(child)
        # the switch, and the spare ring made ahead for its next thread (a
        # thread's own ring is unpinned once it has claimed it)
        assert any(re.fullmatch(r"f\d+", os.path.basename(p)) for p in pins) and \
            any(p.endswith("/ctl") for p in pins), pins
        same = subprocess.run([*NOBODY, prog("fast_open"), *pins], capture_output=True,
                              text=True).stdout.split("\n")
        other = subprocess.run([*DAEMON, prog("fast_open"), *pins], capture_output=True,
                               text=True).stdout.split("\n")
        # a spare listed above may be claimed and unpinned by the recorder's
        # next round before fast_open reaches it (seen in CI: f0 ENOENT):
        # such a pin is gone now, and only the pins still there are judged
        gone = {p for p in pins if not os.path.exists(p)}
        assert len(gone) < len(pins) and f"{ROOT_DIR}/{child}/ctl" not in gone, (pins, gone)
        for results, want in ((same, "ok"), (other, "EACCES")):
            got = [l.rsplit(" ", 1) for l in results if l]
            assert [p for p, _ in got] == pins, results
            assert all(r == want or (r == "ENOENT" and p in gone) for p, r in got), results
        # a process the recording does not trace, running the same binary (its
        # sites are enabled: uprobes are per file), finds nothing to open in
        # 500 tries 200 us apart (a traced thread's ring comes within a
        # round; the 3 s default kept the recording above running, and its
        # JSON growing, for that long)
        untraced = spawn(prog("fast_seq"), "run", 1, 10, env={**os.environ, "FAST_SEQ_WARM": "500"})
        out, _ = untraced.communicate(timeout=60)
        assert "fast=0" in out and not os.path.exists(f"{ROOT_DIR}/{untraced.pid}"), out
    finally:
        os.kill(child, signal.SIGKILL)
    rec.wait(timeout=120)
    seq = per_thread(rec.trace(consumer=False), "seq")[0]
    assert seq == list(range(len(seq))) and len(seq) > 0
    assert not os.path.exists(f"{ROOT_DIR}/{child}"), "the process's pins outlive it"


@pytest.mark.parametrize("fast", [True, False], ids=["fast-path", "probes"])
def test_fork_child_after_the_parent_hit_its_sites(recorder, fast):
    # Linux 6.18 turns a hit site into a call to a trampoline page that
    # fork() does not copy: without the header's fork handler the child
    # died (SIGSEGV) on its first site the parent had hit, with or without
    # the fast path. The child must not find its parent's ring either.
    n = 2000
    args = ["--no-sched"] + ([] if fast else ["--no-fast-path"])
    rec = recorder(*args, "--", prog("fast_seq"), "fork", 1, n).wait(timeout=120)
    assert f"child fast={int(fast)}" in rec.stdout, rec.stdout
    assert f"thread 101 fast={int(fast)}" in rec.stdout, rec.stdout
    t = rec.trace()
    seq = per_thread(t, "seq")
    assert seq[0] == list(range(n)) and seq[101] == list(range(n)), \
        {k: len(v) for k, v in seq.items()}
    pids = {e["pid"] for e in t.named("seq", "I")}
    assert len(pids) == 2, pids
    assert t.meta["drops_total"] == 0 and t.meta["unresolved_sites"] == 0
    dump = subprocess.run([TRACEBPF, "dump", str(rec.tbt)], capture_output=True,
                          text=True).stdout
    codes = re.findall(r"EXIT process code=(\d+)", dump)
    assert codes == ["0", "0"], codes


def test_a_forking_server_keeps_its_fast_path(recorder):
    """A server that forks a child per request, reaped late: the recorder
    makes a process's directory and spares when it sees the fork, and used
    to make them also for a child that had ended by then (its end seen in
    the same round, or a zombie not yet reaped), which nothing removed
    after: with --max-fast-rings 40, 100 such children used up every ring
    and a later child never got one (last fast=0 after 15000 warm events,
    3 runs of 3). Now the late child takes its ring, and every event of
    every process is in the trace, on one path or the other."""
    n = 100
    rec = recorder("--no-sched", "--max-fast-rings", 40, "--", prog("fork_churn"),
                   n).wait(timeout=120)
    assert rec.rc == 0, rec.stderr[-2000:]
    assert "last fast=1" in rec.stdout, (rec.stdout, rec.stderr[-2000:])
    t = rec.trace(consumer=False)
    for name in ("spawn", "child"):
        got = sorted(e["args"]["i"] for e in t.named(name, "I"))
        assert got == list(range(n)), (name, len(got))
    assert len({e["pid"] for e in t.named("child", "I")}) == n
    assert t.named("warm", "I"), "the last child's events"
    assert t.meta["drops_total"] == 0 and t.meta["unresolved_sites"] == 0, t.meta


def test_a_forked_child_gets_one_spare_until_it_takes_it(recorder):
    """A forked child is given one spare ring, not SPARES_AHEAD (4): the
    recorder makes and closes every child's spares, and a forking server's
    short-lived children made that cost more than the fast path spared
    them (bench/forks.sh). fork_churn's last child holds 3 s before its
    first event: its directory has one spare all that time; it then takes
    it, and the recording is whole."""
    rec = recorder("--no-sched", "--", prog("fork_churn"), 3,
                   env={"FORK_CHURN_HOLD": "3"})
    line = rec.proc.stdout.readline()
    m = re.match(r"last pid=(\d+)", line)
    assert m, line
    d = f"{ROOT_DIR}/{m[1]}"
    spares = lambda: sorted(f for f in os.listdir(d) if f[0] in "fg") if os.path.isdir(d) else None
    wait_for(lambda: spares(), timeout=30, what="the last child's spare")
    seen = set()
    for _ in range(10):   # 1 s of the 3 s hold, while nothing of it is claimed
        seen.update(spares() or [])
        time.sleep(0.1)
    assert seen == {"f0"}, seen
    rec.wait(timeout=120)
    assert rec.rc == 0, rec.stderr[-2000:]
    assert "last fast=1" in rec.stdout, rec.stdout
    t = rec.trace(consumer=False)
    assert sorted(e["args"]["i"] for e in t.named("child", "I")) == [0, 1, 2]
    assert t.meta["drops_total"] == 0, t.meta


@pytest.mark.parametrize("fast", [True, False], ids=["fast-path", "probes"])
def test_attach_under_load_no_loss_or_duplicate_at_the_switch(recorder, spawn, fast):
    # `record -p` of two busy threads: each thread's first events take its
    # probe, then (fast path) its ring once the recorder has made it. The
    # recorded events of a thread are one run of consecutive numbers, and
    # with the fast path the run crosses the switch (both ways are in it)
    threads = 2
    app, lines = busy_app(spawn, threads)
    time.sleep(0.3)   # it runs untraced first; nothing below depends on how long
    args = ["--no-sched"] + ([] if fast else ["--no-fast-path"])
    rec = recorder(*args, "-p", app.pid)
    if fast:
        # waits for each thread to take its ring, then for events after it
        wait_for(lambda: len(lines) == threads, timeout=30, what="both threads' rings")
    else:
        # the recorder has attached: its file holds records (not a fixed
        # time, which a loaded machine may spend loading)
        wait_for(lambda: rec.tbt.exists() and rec.tbt.stat().st_size > 32 << 10, timeout=30,
                 what="records in the file")
    time.sleep(0.3)   # then more events (tens of thousands; past the switch)
    rec.stop(timeout=120)
    app.kill()
    switch = {int(m[0]): int(m[1]) for m in re.findall(r"thread (\d+) fast_from=(\d+)",
                                                       "".join(lines))}
    assert len(switch) == (threads if fast else 0), lines
    t = rec.trace(consumer=False)
    seq = per_thread(t, "seq")
    assert sorted(seq) == list(range(threads)), {k: len(v) for k, v in seq.items()}
    one_run(seq, "the", t.meta)
    for i in range(threads):
        if fast:
            assert seq[i][0] < switch[i] <= seq[i][-1], (i, seq[i][0], switch[i], seq[i][-1])
    assert t.meta["drops_total"] == 0 and t.meta["unresolved_sites"] == 0, t.meta


def test_drain_outpaces_a_small_recorder_ring(recorder):
    # threads' rings large enough for every event, the recorder's 16 times
    # smaller than one thread's: the recorder reads the threads' rings
    # itself (user/fast/fast_read.c), so their events never pass through its
    # ring, and nothing is lost however small that is
    # 100,000 samples of 48 bytes: each thread writes about 9 times the
    # recorder's ring
    n, threads = 100000, 2
    rec = recorder("--no-sched", "-b", "512K", "--fast-buffer-size", "16M", "--",
                   prog("fast_seq"), "run", threads, n).wait(timeout=120)
    assert fast_flags(rec.stdout) == {i: 1 for i in range(threads)}, rec.stdout
    t = rec.trace(consumer=False)
    seq = per_thread(t, "seq")
    for i in range(threads):
        assert seq[i] == list(range(n)), f"thread {i}: {len(seq[i])} of {n}"
    assert t.meta["drops_total"] == 0 and t.meta["gap_records"] == 0, t.meta


def test_samples_that_are_not_events_are_left_out_and_said(recorder):
    """fast_bad writes, after each of its 3,000 events, two samples trace.h
    never writes (an unknown type; an event's head without its values),
    committed with the ring's protocol. The kernel moves past them as past
    any sample; the recorder leaves them out, says how many, and every
    event around them is there, in order."""
    n = 3000
    rec = recorder("--no-sched", "--", prog("fast_bad"), n).wait(timeout=120)
    assert rec.rc == 0, rec.stderr[-2000:]
    assert f"fast=1 bad={2 * n}" in rec.stdout, rec.stdout
    assert re.search(rf"WARNING: {2 * n} samples in the threads' fast-path rings were not "
                     "events", rec.stderr), rec.stderr[-2000:]
    seq = [e["args"]["seq"] for e in sorted(rec.trace().named("seq", "I"),
                                            key=lambda e: (e["ts"], e["args"]["seq"]))]
    assert seq == list(range(n)), f"{len(seq)} of {n}: missing {holes(seq)[:5]}"


def test_a_producer_position_past_the_ring_stops_its_reading(recorder):
    """fast_bad ... far: after its 3,000 events (each with two samples that
    are no event) have been read, the thread sets its ring's producer
    position 2^40 bytes ahead; once the recorder has switched its process
    to the probes it emits 3,000 "after" events (fast_bad waits for the
    switch: after a fixed 300 ms, a recorder kept off the CPU could miss
    the position, which the first "after" event set right again).
    What lies past a ring's worth would be an older lap: reading it would
    repeat events (and walking 2^40 bytes would hold the recorder for
    half an hour). The recorder reads that ring no more, says so, and
    switches the process to its probes: each event once, in order, the
    "after" ones through the probes."""
    n = 3000
    rec = recorder("--no-sched", "-v", "--", prog("fast_bad"), n, "far").wait(timeout=60)
    assert rec.rc == 0, rec.stderr[-2000:]
    assert f"fast=1 bad={2 * n}" in rec.stdout, rec.stdout
    assert re.search(r"moved its fast-path ring's producer position past what the ring "
                     r"holds .* the process takes its probes from now on", rec.stderr), \
        rec.stderr[-2000:]
    slow = re.search(r"(\d+) of \d+ application events took the probes", rec.stderr)
    assert slow and int(slow[1]) >= n, rec.stderr[-2000:]   # "after", and any "warm"
    t = rec.trace()
    for name in ("seq", "after"):
        seq = [e["args"]["seq"] for e in sorted(t.named(name, "I"),
                                                key=lambda e: (e["ts"], e["args"]["seq"]))]
        assert seq == list(range(n)), f"{name}: {len(seq)} of {n}: missing {holes(seq)[:5]}"


def test_small_rings_fill_and_refill(recorder):
    """4 KiB thread rings (about 85 events) under `fast_seq attach` (100 us
    of sleep every 100 events, so the loop outlasts many 10 ms drains):
    each ring fills, its overflow takes the probe, and after each drain it
    takes events again. Exact per-thread sequences, nothing lost, and many
    ring-fulls of events on the fast path: a writer that never saw the
    drain's new consumer position would stop after the first."""
    n, threads, ring_events = 100000, 2, 4096 // 48
    rec = recorder("--no-sched", "--fast-buffer-size", "4K", "--fast-buffer-max", "4K",
                   "--flush-interval", "10", "--",
                   prog("fast_seq"), "attach", threads, n).wait(timeout=120)
    assert rec.rc == 0, rec.stderr[-2000:]
    t = rec.trace(consumer=False)
    seq = per_thread(t, "seq")
    assert sorted(seq) == list(range(threads)), sorted(seq)
    for i in range(threads):
        assert seq[i] == list(range(n)), f"thread {i}: {len(seq[i])} of {n}"
    assert t.meta["drops_total"] == 0, t.meta
    dump = subprocess.run([TRACEBPF, "dump", str(rec.tbt)], capture_output=True,
                          text=True).stdout
    fast = Counter(re.search(r" t=(\d+) ", l).group(1) for l in dump.splitlines()
                   if " I test:seq " in l and l.endswith(" [fast]"))
    assert len(fast) == threads and min(fast.values()) > 4 * ring_events, fast


def test_pins_refused_the_recording_takes_the_probes(recorder):
    # a read-only bpffs (in a mount namespace of the recorder's own): the
    # session cannot pin, so the fast path is off, said once with why, and
    # every event takes its probe, exactly once
    n, threads = 3000, 2
    ro = 'mount -t bpf -o ro bpf /sys/fs/bpf && exec "$0" "$@"'
    rec = recorder("--no-sched", "--", prog("fast_seq"), "run", threads, n,
                   wrap=["unshare", "-m", "--propagation", "private", "sh", "-c", ro],
                   env={"FAST_SEQ_WARM": "50"})   # no ring comes: not 3 s of warming
    rec.wait(timeout=120)
    assert rec.stderr.count("the fast path is off (cannot pin in /sys/fs/bpf: "
                            "Read-only file system): every event takes its probe") == 1, \
        rec.stderr
    assert fast_flags(rec.stdout) == {i: 0 for i in range(threads)}, rec.stdout
    seq = per_thread(rec.trace(consumer=False), "seq")
    for i in range(threads):
        assert seq[i] == list(range(n)), f"thread {i}: {len(seq[i])} of {n}"


def fast_maps():
    """ids of the fast path's maps (rings, switches, the ring template)."""
    p = subprocess.run(["bpftool", "-j", "map", "show"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    import json
    return {m["id"] for m in json.loads(p.stdout) if m.get("name", "").startswith("tb_f")}


def test_killed_recorder_leaves_no_fast_path_maps(recorder, spawn):
    # the recorder's releaser switches a SIGKILLed recorder's session off
    # and removes its pins, so its maps go with the processes that map
    # them, not with the next recorder
    before = fast_maps()
    app, lines = busy_app(spawn, 2)
    rec = recorder("--no-sched", "-p", app.pid)
    wait_for(lambda: len(lines) == 2, timeout=30, what="both threads' rings")
    assert fast_maps() - before
    session = f"{ROOT_DIR}/s{rec.proc.pid}"
    assert os.path.isdir(session)
    rec.proc.kill()
    rec.proc.wait()
    # waits for the releaser: it leaves after its SIGCONT rounds (0.5 s)
    wait_for(lambda: not os.path.exists(session) and
             not os.path.lexists(f"{ROOT_DIR}/{app.pid}"), timeout=30,
             what="the dead recorder's session to be removed")
    assert app.poll() is None, "the traced process died with its recorder"
    app.kill()
    app.wait()
    wait_for(lambda: not fast_maps() - before, timeout=30,
             what="the fast path's maps to be freed")


@pytest.mark.parametrize("second_fast", [True, False], ids=["fast-path", "probes"])
def test_two_recordings_of_one_process_are_both_complete(recorder, spawn, second_fast):
    # a process on the fast path of one recording, then attached by a
    # second: each recording must hold every event of its time (the second
    # switches the first's processes to their probes, which both see);
    # without that, the second missed what went to the first's rings
    threads = 2
    app, lines = busy_app(spawn, threads)
    r1 = recorder("--no-sched", "-p", app.pid, name="r1")
    wait_for(lambda: len(lines) == threads, timeout=30, what="both threads' rings")
    r2 = recorder("--no-sched", *([] if second_fast else ["--no-fast-path"]), "-p", app.pid,
                  name="r2")
    time.sleep(1.5)   # both record meanwhile; nothing below depends on how long
    r2.stop(timeout=120)
    r1.stop(timeout=120)
    app.kill()
    said = (f"another tracebpf (pid {r1.proc.pid}) is recording: while both record, "
            "processes take their probes for every event")
    assert r2.stderr.count(said) == 1, r2.stderr
    s1 = per_thread(r1.trace(consumer=False), "seq")
    s2 = per_thread(r2.trace(consumer=False), "seq")
    assert sorted(s1) == sorted(s2) == list(range(threads)), (sorted(s1), sorted(s2))
    one_run(s1, "first")
    one_run(s2, "second")
    for t in range(threads):
        assert s1[t][0] < s2[t][0] and s2[t][-1] < s1[t][-1], (t, s1[t][0], s2[t][0])


def record_fast_seq(tmp_path, *opts, threads=2, n=3000):
    """`record -v` of `fast_seq run THREADS N`: its stdout, its stderr, the
    dump's application events, and the counts record -v gave (slow, total,
    fast)."""
    out = tmp_path / "f.json"
    p = subprocess.run([TRACEBPF, "record", "-v", "--no-sched", *opts, "-o", str(out), "--",
                        prog("fast_seq"), "run", str(threads), str(n)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    d = subprocess.run([TRACEBPF, "dump", str(tmp_path / "f.tbt")], capture_output=True,
                       text=True, timeout=120)
    assert d.returncode == 0, d.stderr
    events = [l for l in d.stdout.splitlines()
              if re.search(r"\] \d+/\d+ [BEICbentsf] test:", l)]
    m = re.search(r"record: (\d+) of (\d+) application events took the probes "
                  r"\(the slow path, [\d.]+%\), (\d+) the fast path", p.stderr)
    assert m, p.stderr[-2000:]
    return p.stdout, p.stderr, events, tuple(map(int, m.groups()))


def test_fresh_thread_goes_fast_from_its_first_event(tmp_path):
    """Threads that start while recorded (with the defaults) take a spare
    ring the recorder made ahead at their first event: every event of
    theirs, the first included, is on the fast path (TB_EVF_FAST: `[fast]`
    in dump), and record -v counts no event on the probes. (Rings of 1M:
    with the default the burst may fill a ring before it grows.)"""
    stdout, _, events, (slow, total, fast) = record_fast_seq(tmp_path, "--fast-buffer-size",
                                                             "1M")
    assert fast_flags(stdout) == {0: 1, 1: 1}, \
        f"a thread got no ring (another recording live?): {stdout}"
    seq = [l for l in events if " I test:seq " in l]
    assert len(seq) == 2 * 3000, len(seq)
    assert all(l.endswith(" [fast]") for l in events), \
        [l for l in events if "[fast]" not in l][:3]
    assert (slow, total, fast) == (0, len(events), len(events))


def test_full_rings_take_the_probes_and_the_slow_share_is_counted(tmp_path):
    """4 KiB rings that may not grow, whose threads do not wait for the
    drain (--fast-wait 0): a thread's burst overflows its ring, the
    overflow takes the probes, and record -v's counts of both paths are
    the file's own."""
    _, _, events, (slow, total, fast) = record_fast_seq(
        tmp_path, "--fast-buffer-size", "4K", "--fast-buffer-max", "4K", "--fast-wait", "0",
        n=20000)
    assert len([l for l in events if " I test:seq " in l]) == 2 * 20000
    fast_in_file = sum(l.endswith(" [fast]") for l in events)
    assert (total, fast, slow) == (len(events), fast_in_file, len(events) - fast_in_file)
    assert slow > 0 and fast > 0, (slow, fast)


def test_a_full_ring_waits_for_the_drain_instead_of_the_probes(tmp_path):
    """The same 4 KiB rings, with a wait long enough for any drain
    (--fast-wait 1000000: a second): a thread whose ring is full asks the
    recorder to drain it and waits for room (trace.h,
    tracebpf__fast_wait), so every event of its burst is on the fast path,
    and record -v counts its requests. With --fast-wait 0 above, its
    overflow takes the probes."""
    n = 20000
    _, err, events, (slow, total, fast) = record_fast_seq(
        tmp_path, "--fast-buffer-size", "4K", "--fast-buffer-max", "4K", "--fast-wait",
        "1000000", n=n)
    seq = [l for l in events if " I test:seq " in l]
    assert len(seq) == 2 * n
    assert (slow, fast) == (0, total) and all(l.endswith(" [fast]") for l in events), \
        (slow, total, [l for l in events if not l.endswith(" [fast]")][:3])
    asked = int(re.search(r"(\d+) requests to drain a full ring", err).group(1))
    assert asked >= 1, err[-2000:]


def bench_prog(name):
    return os.path.join(os.path.dirname(TRACEBPF), "bench", name)


def record_v(tmp_path, *cmd, opts=()):
    """`record -v --no-sched` of cmd with the defaults: (stdout, stderr,
    the file's path)."""
    out = tmp_path / "r.tbt"
    p = subprocess.run([TRACEBPF, "record", "-v", "--no-sched", "--no-json", *opts,
                        "-o", str(out), "--", *map(str, cmd)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout, p.stderr, out


def dump_count(path, pattern):
    """Lines of `tracebpf dump path` that match the regex pattern."""
    d = subprocess.run(f"{TRACEBPF} dump {path} | grep -cE '{pattern}'", shell=True,
                       capture_output=True, text=True, timeout=300)
    return int(d.stdout.strip() or 0)


def test_events_go_in_batches_the_kernel_steps_over_once(tmp_path):
    """A thread's events go into its ring in batches of up to 4 KiB
    (trace.h, "Events go in batches"): the kernel's drain steps over one
    sample per batch, and the recorder reads each event of it. 200,000
    2-integer instants from one thread: every one in the file, on the fast
    path, with at most one kernel sample per 40 events drained (a full
    batch holds 84). Writing a sample per event, as before batches, makes
    one per event. (A full ring waits up to a second for the drain here:
    with the default millisecond, a recorder still busy with its start
    can send a few events to the probes.)"""
    n = 200000
    _, err, out = record_v(tmp_path, bench_prog("probe_cost"), n, "instant2",
                           opts=("--fast-wait", "1000000"))
    m = re.search(r"fast-path drain: (\d+) events in [0-9.]+ ms \([0-9]+ events/s\), "
                  r"(\d+) kernel samples", err)
    assert m, err[-2000:]
    drained, steps = int(m[1]), int(m[2])
    assert drained >= n and 0 < steps <= drained // 40, (drained, steps)
    assert dump_count(out, r" I .*\[fast\]$") == n


def test_many_threads_starting_at_once_lose_nothing(tmp_path):
    """100 threads start together and each emits bursts of 200 instants
    every 20 ms for 1 s (1 M events/s in all), recorded with the defaults:
    each takes a spare ring the recorder made ahead (or made at once when
    the threads asked for more), nothing is dropped, and every event is in
    the file."""
    threads = 100
    stdout, stderr, out = record_v(tmp_path, bench_prog("burst"), threads)
    emitted = int(re.search(r"emitted=(\d+)", stdout).group(1))
    assert emitted == threads * 10000, stdout
    assert re.search(r"recorded \d+ records in [\d.]+ s, 0 dropped", stderr), stderr[-2000:]
    assert dump_count(out, r" I bench:burst t=") == emitted
    made = int(re.search(r"fast-path drain: .*; (\d+) rings made", stderr).group(1))
    assert made >= threads, stderr[-2000:]


def test_each_new_thread_has_a_spare_before_its_first_event(tmp_path):
    """A recorded process starts 200 threads that emit nothing yet: the
    recorder makes a spare ring for each as it sees the thread start (its
    FORK record), not when the thread first asks. Once the process's
    directory holds 200 spares, the threads are released together: every
    one takes its ring at its first event, and no event takes the probes.
    (Before, a process kept 4 spares ahead until its threads asked, and a
    crowd of new threads started on the slow path.)"""
    threads = 200
    out = tmp_path / "h.tbt"
    # stderr (record -v says much) to a file: a full pipe would block it
    err = open(tmp_path / "h.err", "w+")
    rec = subprocess.Popen([TRACEBPF, "record", "-v", "--no-sched", "--no-json", "-o",
                            str(out), "--", prog("held_threads"), str(threads)],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                           text=True)
    try:
        assert rec.stdout.readline() == "started\n"
        pid = int(subprocess.check_output(["pgrep", "-n", "-x", "held_threads"], text=True))

        def spares():
            try:
                return sum(bool(re.fullmatch(r"f\d+", n))
                           for n in os.listdir(f"{ROOT_DIR}/{pid}/")) >= threads
            except FileNotFoundError:
                return False
        # waits for the recorder to have made them, however long it takes
        wait_for(spares, what=f"{threads} spare rings in {ROOT_DIR}/{pid}")
        stdout, _ = rec.communicate(input="", timeout=120)   # end of file: released
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()
        err.seek(0)
        stderr = err.read()
        err.close()
    assert rec.returncode == 0, stderr[-2000:]
    assert stdout.strip() == f"fast={threads}", stdout
    m = re.search(r"record: (\d+) of (\d+) application events took the probes", stderr)
    assert m and m.groups() == ("0", str(threads)), stderr[-2000:]
    assert dump_count(out, r" I test:held t=[0-9]+ \[fast\]$") == threads


@pytest.mark.parametrize("us", ["-1", "1000001", "1ms", ""])
def test_bad_fast_wait(tmp_path, us):
    """--fast-wait outside 0..1,000,000 us: a usage error that names the
    option and the range, and no file."""
    p = subprocess.run([TRACEBPF, "record", "--fast-wait", us, "-o", str(tmp_path / "x.json"),
                        "--", "true"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 64, p.stderr
    assert f"invalid fast-path wait '{us}': give 0 to 1000000 us" in p.stderr, p.stderr
    assert not (tmp_path / "x.tbt").exists()


def test_a_thread_writing_faster_than_the_drain_gets_a_bigger_ring(tmp_path):
    """A tight loop of 2 M instants from a fresh thread (about 80 MB, faster
    than the recorder drains) whose full ring does not wait for the drain
    (--fast-wait 0, as when a wait runs out): its first ring fills in a
    millisecond, and the thread takes the bigger one the recorder made
    ahead for the command (and asks for bigger ones as those fill). Every
    event is in the file, the full rings were drained and closed without
    loss, and record -v says rings grew."""
    n = 2000000
    _, stderr, out = record_v(tmp_path, bench_prog("probe_cost"), n, "instant2",
                              opts=("--fast-wait", "0"))
    grown = int(re.search(r"rings made, (\d+) of them grown", stderr).group(1))
    assert grown >= 1, stderr[-2000:]
    assert re.search(r"recorded \d+ records in [\d.]+ s, 0 dropped", stderr), stderr[-2000:]
    assert dump_count(out, r" I bench:hit2 i=") == n
    assert "LOST" not in stderr, stderr[-2000:]


def test_drain_refused_the_recorder_reads_the_rings(tmp_path):
    """BPF_PROG_TEST_RUN refused after the first drain: the recorder says
    so, switches every thread to its probes, and reads what the threads'
    rings hold from its own mapping: each thread's numbered events are all
    there, in order, none twice."""
    # each ring takes at least one drain, so with two threads' rings the
    # second call is made, and refused, however short the run (--after 3
    # was not reached when the program ended within one round)
    n, threads = 20000, 2
    out = tmp_path / "d.json"
    p = subprocess.run([prog("deny_bpf_cmd"), "--after", "1", "10", TRACEBPF, "record",
                        "--no-sched", "-o", str(out), "--", prog("fast_seq"), "run",
                        str(threads), str(n)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "deny_bpf_cmd: refused" in p.stderr and \
        "failed to drain the fast-path rings" in p.stderr, p.stderr[-2000:]
    # which events were in rings when the drain was refused depends on
    # when the threads took them (the main thread's ring may take the two
    # calls first): whatever the split, every event is there once
    t = load(out, consumer=False)
    seq = per_thread(t, "seq")
    for i in range(threads):
        assert seq[i] == list(range(n)), f"thread {i}: {len(seq[i])} of {n}"
    assert t.meta["drops_total"] == 0 and t.meta["gap_records"] == 0, t.meta


def test_a_write_held_across_the_switch_is_read_later(tmp_path):
    """A thread that found its session live, then was held before it
    reserved its sample (here a page fault on its string argument, which
    the program's handler holds until the drain was refused and the switch
    moved, and 200 ms more), writes into its old ring after the recorder's
    first reading of it. The recorder reads the rings every round until
    their threads are gone: the held event is there, once, and nothing is
    counted lost. (The recorder used to read each ring once, 1 ms after the
    switch, and close it: the event was lost and not counted.)"""
    n = 2000
    out, trigger = tmp_path / "w.json", tmp_path / "refuse"
    p = subprocess.run([prog("deny_bpf_cmd"), "--when", str(trigger), "10", TRACEBPF,
                        "record", "--no-sched", "-o", str(out), "--", prog("fast_window"),
                        str(n), str(trigger)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "held fast=1 live=0" in p.stdout, p.stdout + p.stderr[-2000:]
    assert "deny_bpf_cmd: refused" in p.stderr and \
        "failed to drain the fast-path rings" in p.stderr, p.stderr[-2000:]
    t = load(out)
    held = t.named("held", "I")
    assert [e["args"]["s"] for e in held] == ["held"], held
    for name in ("seq", "after"):
        assert sorted(e["args"]["seq"] for e in t.named(name, "I")) == list(range(n)), name
    assert t.meta["drops_total"] == 0 and t.meta["gap_records"] == 0, t.meta


def test_recorder_killed_as_its_session_appears_leaves_nothing(tmp_path):
    """The session's directory in /sys/fs/bpf/tracebpf is made only once the
    releaser runs, which removes it when the recorder dies: a recorder
    SIGKILLed while loading its programs left it behind (the chaos run
    caught it). Kills the recorder the moment its directory appears."""
    p = subprocess.Popen([TRACEBPF, "record", "-q", "-o", str(tmp_path / "t.json"), "--",
                          prog("seq_until_killed"), str(tmp_path / "count")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sess = f"/sys/fs/bpf/tracebpf/s{p.pid}"
    try:
        deadline = time.monotonic() + 30
        while not os.path.isdir(sess) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.0005)
        assert os.path.isdir(sess), "the session's directory never appeared"
    finally:
        p.kill()
        p.wait()
    # the releaser's SIGCONT rounds take 0.5 s, then it sweeps: waits for that
    wait_for(lambda: not os.path.exists(sess), timeout=10,
             what="the killed recorder's session directory to go")
