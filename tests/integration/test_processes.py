"""Processes and threads through fork, exec, dlopen, thread churn, pid reuse
and C++ exceptions: exact JSON events, and what Chrome DevTools' trace engine
builds from them (slices, threads, processes)."""
import contextlib
import os
import re
import time

import pytest
import signal
import subprocess
from collections import Counter

from conftest import BUILD, TRACEBPF, in_poll, prog, user_events, wait_for

STRIP = ("ts", "pid", "tid", "dur")


def shape(events):
    return [{k: v for k, v in e.items() if k not in STRIP} for e in events]


def dt_slices(t, pid):
    return [(s["name"], s["tid"]) for s in t.devtools["slices"] if s["pid"] == pid]


@pytest.mark.both_paths
def test_fork_ghost_slices(recorder):
    rec = recorder("--", prog("fork_ghost")).wait()
    parent, child = map(int, re.search(r"parent=(\d+) child=(\d+)", rec.stdout).groups())
    t = rec.trace()
    pe, ce = user_events(t, parent), user_events(t, child)
    # the parent's timeline is untouched by the child
    assert shape(pe) == [
        {"ph": "X", "cat": "test", "name": "manual", "args": {}},
        {"ph": "X", "cat": "test", "name": "scoped", "args": {}},
        {"ph": "X", "cat": "test", "name": "dropped", "args": {}},
    ]
    inh = {"tracebpf_inherited": "open in the parent at fork"}
    # ended in the child: inherited slices from the fork; "dropped" is gone
    assert shape(ce) == [
        {"ph": "X", "cat": "test", "name": "manual", "args": inh},
        {"ph": "X", "cat": "test", "name": "scoped", "args": inh},
        {"ph": "I", "s": "t", "cat": "test", "name": "child_work", "args": {}},
    ]
    man, sco, work = ce
    assert man["ts"] == sco["ts"] and man["dur"] >= sco["dur"]
    assert sco["ts"] <= work["ts"] <= sco["ts"] + sco["dur"]
    # the fork happened while the parent's three slices were open
    for e in pe:
        assert e["ts"] <= man["ts"] <= e["ts"] + e["dur"]
    assert sorted(dt_slices(t, child)) == sorted(
        [("manual", child), ("scoped", child), ("child_work", child)])
    assert sorted(n for n, _ in dt_slices(t, parent)) == ["dropped", "manual", "scoped"]


def check_exec_target(t, pid):
    ev = [e for e in user_events(t, pid) if e["cat"] == "target"]
    assert shape(ev) == [
        {"ph": "I", "s": "t", "cat": "target", "name": "target_first", "args": {}},
        {"ph": "X", "cat": "target", "name": "target_work", "args": {}},
    ] + [{"ph": "I", "s": "t", "cat": "target", "name": "target_tick", "args": {"seq": i}}
         for i in range(5)]
    assert t.process_names()[pid] == "exec_target"
    assert t.devtools["processes"][str(pid)] == "exec_target"
    assert Counter(n for n, _ in dt_slices(t, pid))["target_tick"] == 5


@pytest.mark.both_paths
def test_exec_into_another_instrumented_program(recorder):
    rec = recorder("--", prog("exec_chain"), prog("exec_target")).wait()
    pid = int(re.search(r"chain pid=(\d+)", rec.stdout).group(1))
    assert f"target pid={pid}" in rec.stdout
    t = rec.trace()
    chain = [e for e in user_events(t, pid) if e["cat"] == "chain"]
    # the slice open at exec is closed at exec time and marked
    assert shape(chain) == [
        {"ph": "X", "cat": "chain", "name": "pending",
         "args": {"tracebpf_unfinished": "process exec'd"}},
        {"ph": "I", "s": "t", "cat": "chain", "name": "before_exec", "args": {}},
    ]
    first = t.named("target_first")[0]
    assert chain[0]["ts"] + chain[0]["dur"] <= first["ts"]
    check_exec_target(t, pid)
    # the command line after exec is the new image's
    assert t.process_labels()[pid] == prog("exec_target"), t.process_labels()


def proc_state(pid):
    """The state letter of /proc/PID/stat ('T' = stopped), or None once gone."""
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return None


@contextlib.contextmanager
def held_at_exec(recorder):
    """A traced process (exec_chain, recorded with -p) held stopped at its
    exec of quiet_thread, with the recorder frozen (SIGSTOP) across the exec
    so that it has not released it: yields (target Popen, pid, recording)."""
    target = subprocess.Popen([prog("exec_chain"), prog("quiet_thread")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, EXEC_CHAIN_WAIT="1"))
    try:
        pid = int(re.search(r"chain pid=(\d+)", target.stdout.readline()).group(1))
        rec = recorder("-p", pid)
        wait_for(lambda: in_poll(rec.proc.pid), what="recorder in its loop")
        os.kill(rec.proc.pid, signal.SIGSTOP)
        target.stdin.write("go\n")
        target.stdin.flush()
        wait_for(lambda: proc_state(pid) == "T", what="target stopped at exec")
        yield target, pid, rec
    finally:
        target.kill()
        target.wait()


def test_stop_while_a_process_waits_at_exec(recorder):
    """Ctrl-C while a traced process is stopped at exec, before the recorder
    has attached its new image: the recorder releases it and exits cleanly.
    It used to crash (SIGSEGV), writing that process's command line into the
    file it had already closed."""
    with held_at_exec(recorder) as (target, pid, rec):
        os.kill(rec.proc.pid, signal.SIGINT)
        os.kill(rec.proc.pid, signal.SIGCONT)
        rec.wait()
        assert rec.rc == 0, (rec.rc, rec.stderr[-2000:])
        wait_for(lambda: proc_state(pid) not in ("T", None), what="target released")
        rec.trace()   # the file and its JSON are whole


def test_recorder_killed_while_a_process_waits_at_exec(recorder):
    """As above with SIGKILL: the recorder cannot release the process it
    holds stopped at exec, which used to stay stopped for ever. Its
    releaser (a child that keeps the `stopped` map and sees the recorder's
    death) resumes it."""
    with held_at_exec(recorder) as (target, pid, rec):
        os.kill(rec.proc.pid, signal.SIGKILL)
        rec.wait()
        wait_for(lambda: proc_state(pid) not in ("T", None), what="target resumed")
        # and it runs the new image: quiet_thread says it is ready
        assert "ready" in target.stdout.readline()


def test_sh_c_records_the_program(recorder):
    # dash execs the last command directly; "; true" makes it fork first
    for script in (prog("exec_target"), prog("exec_target") + "; true"):
        rec = recorder("--", "sh", "-c", script, name="sh").wait()
        pid = int(re.search(r"target pid=(\d+)", rec.stdout).group(1))
        t = rec.trace()
        check_exec_target(t, pid)


@pytest.mark.both_paths
def test_dlopen_library_attached_while_recording(recorder):
    rec = recorder("--", prog("dlopen_user"), BUILD / "progs" / "libtbdl.so").wait()
    assert "dl ok" in rec.stdout
    t = rec.trace()
    ev = user_events(t)
    # nothing lost: the library's constructor and its first calls included
    assert [e["name"] for e in ev] == ["before_dlopen", "dl_ctor"] + ["dl_event"] * 5 + \
        ["after_dl"]
    assert [e["args"]["i"] for e in ev if e["name"] == "dl_event"] == list(range(5))
    assert {e["cat"] for e in ev if e["name"].startswith("dl_")} == {"dl"}


def test_dlopen_under_two_recordings_waits_for_both(recorder, spawn):
    """Two recorders of one process each stop it at dlopen until they have
    attached to the library. The first to be done must not resume it while
    the other is still attaching: each resumes it only when no other live
    recorder still holds it (their `stopped` maps, pinned in their session
    directories), so both record the library's first events."""
    app = spawn(prog("dlopen_user"), BUILD / "progs" / "libtbdl.so",
                stdin=subprocess.PIPE, env={**os.environ, "DLOPEN_USER_WAIT": "1"})
    assert app.stdout.readline() == "waiting\n"
    recs = [recorder("-p", app.pid, name=f"r{i}") for i in range(2)]
    # both attached: each one's session holds its pinned `stopped` map, and
    # its probes are attached right after (waits for the pins, then 1 s)
    wait_for(lambda: all(os.path.exists(f"/sys/fs/bpf/tracebpf/s{r.proc.pid}/stopped")
                         for r in recs), what="both recorders' sessions")
    time.sleep(1.0)
    # the second recorder is frozen while the process dlopens, so the
    # first is done attaching long before it: without the check the first
    # resumed the process, and the second missed the library's events
    recs[1].proc.send_signal(signal.SIGSTOP)
    app.stdin.write("go\n")
    app.stdin.flush()
    time.sleep(1.0)
    recs[1].proc.send_signal(signal.SIGCONT)
    assert app.wait(timeout=60) == 0
    for r in recs:
        r.wait(timeout=60)
        ev = [e["name"] for e in user_events(r.trace(consumer=False))]
        assert ev == ["before_dlopen", "dl_ctor"] + ["dl_event"] * 5 + ["after_dl"], \
            (r.out, ev, r.stderr[-500:])


def test_dlopen_and_exit_wake_the_recorder(recorder):
    """A process stopped at dlopen waits for the recorder, and the recorder
    stops when its target exits: with a 10 s --flush-interval, both must
    wake it at once (TB_RING_KICK, and the forced wakeup of a process's
    last exit record) instead of at the next tick. Counted, not timed: the
    recorder reports how many drains its timer caused (-v)."""
    rec = recorder("-v", "--flush-interval", "10000", "--",
                   prog("dlopen_user"), BUILD / "progs" / "libtbdl.so").wait()
    assert rec.rc == 0 and "dl ok" in rec.stdout, rec.stderr[-2000:]
    m = re.search(r"drained the rings (\d+) times on the --flush-interval timer, "
                  r"(\d+) times woken", rec.stderr)
    assert m, rec.stderr[-2000:]
    ticks, woken = int(m.group(1)), int(m.group(2))
    # exec, the two dlopen stops (the loader's hook runs before and after)
    # and the exit each wake it
    assert ticks == 0 and woken >= 3, (ticks, woken)
    ev = user_events(rec.trace())
    assert [e["name"] for e in ev] == ["before_dlopen", "dl_ctor"] + ["dl_event"] * 5 + \
        ["after_dl"]


@pytest.mark.parametrize("fast", [[], ["--no-fast-path"]], ids=["fast-path", "probes"])
def test_thread_churn_1000(recorder, fast):
    # with the fast path each thread's first event also asks for a ring:
    # rings made for threads already gone must not cost an event
    n = 1000
    rec = recorder(*fast, "--", prog("thread_churn"), n).wait(timeout=300)
    assert "churn done" in rec.stdout
    t = rec.trace()
    ev = t.named("churn", "I")
    assert sorted(e["args"]["i"] for e in ev) == list(range(n))
    tids = {e["tid"] for e in ev}
    # the kernel may give a tid again once its thread is gone (pid_max is
    # 32768 here, and a day of tests wraps it): the trace's own FORK
    # records say which tids were reused, and those threads share a tid
    dump = subprocess.run([TRACEBPF, "dump", str(rec.tbt)], capture_output=True,
                          text=True, timeout=120).stdout
    born = Counter(int(m) for m in re.findall(r" FORK thread \d+/(\d+) ", dump))
    reused = {tid for tid, k in born.items() if k > 1}
    assert len(tids) == n - sum(born[tid] - 1 for tid in reused & tids), \
        ("every thread its own tid, but for the tids the kernel gave again", reused)
    pid = ev[0]["pid"]
    assert {e["pid"] for e in ev} == {pid} and pid not in tids
    # names: the thread renamed itself (task_rename) before emitting
    names = t.thread_names()
    for e in ev:
        if e["tid"] not in reused:
            assert names[(pid, e["tid"])] == f"churn-{e['args']['i']}", e
    dt_names = {(th["pid"], th["tid"]): th["name"] for th in t.devtools["threads"]}
    for e in [e for e in ev if e["tid"] not in reused][:50]:
        assert dt_names[(pid, e["tid"])] == f"churn-{e['args']['i']}"
    assert t.meta["drops_total"] == 0


def test_pid_reuse_is_a_new_process(recorder):
    rec = recorder("--", prog("pid_reuse")).wait()
    first, second = map(int, re.search(r"first=(\d+) second=(\d+)", rec.stdout).groups())
    assert first == second, rec.stdout
    t = rec.trace()
    life = t.named("life", "I")
    assert [e["args"]["gen"] for e in life] == [1, 2]
    p1, p2 = life[0]["pid"], life[1]["pid"]
    assert p1 == first and p2 != p1, (p1, p2)
    names = t.process_names()
    assert names[p1] == "pid_reuse"
    assert names[p2] == f"pid_reuse [pid {first} #2]"
    # each incarnation has its own slice; never merged
    lt = t.named("lifetime", "X")
    assert sorted(e["pid"] for e in lt) == sorted([p1, p2])
    assert {str(p1), str(p2)} <= set(t.devtools["processes"])
    assert Counter(s["pid"] for s in t.devtools["slices"] if s["name"] == "lifetime") == \
        {p1: 1, p2: 1}


def test_cxx_exception_unwind_templates_lambdas(recorder):
    rec = recorder("--", prog("cxx_unwind")).wait()
    assert "caught=1 sum=16" in rec.stdout
    t = rec.trace()
    ev = user_events(t)
    assert shape(ev) == [
        {"ph": "X", "cat": "cxx", "name": "catcher", "args": {}},
        {"ph": "X", "cat": "cxx", "name": "thrower", "args": {"depth": 2}},
        {"ph": "X", "cat": "cxx", "name": "thrower", "args": {"depth": 1}},
        {"ph": "X", "cat": "cxx", "name": "thrower", "args": {"depth": 0}},
        {"ph": "I", "s": "t", "cat": "cxx", "name": "caught", "args": {}},
        {"ph": "X", "cat": "cxx", "name": "lambda", "args": {"x": 3}},
        {"ph": "X", "cat": "cxx", "name": "twice", "args": {"v": 3}},
        {"ph": "X", "cat": "cxx", "name": "twice", "args": {"v": 0.5}},
        {"ph": "X", "cat": "cxx", "name": "lambda", "args": {"x": 4}},
        {"ph": "X", "cat": "cxx", "name": "twice", "args": {"v": 4}},
        {"ph": "X", "cat": "cxx", "name": "twice", "args": {"v": 0.5}},
    ]
    # the throwers ended by unwinding, before the handler ran
    caught = ev[4]
    for th in ev[1:4]:
        assert th["ts"] + th["dur"] <= caught["ts"]
        assert "tracebpf_unfinished" not in th["args"]
    dt = t.devtools
    depth = {(s["name"], s.get("depth")) for s in dt["slices"] if s["name"] == "thrower"}
    assert depth == {("thrower", 1), ("thrower", 2), ("thrower", 3)}


def test_rename_comes_from_task_rename(recorder):
    """pthread_setname_np reaches the trace through the kernel's task_rename
    tracepoint, as a COMM record taken on a CPU, before the thread's events
    (not only from the exit record or /proc at the end)."""
    import subprocess
    from conftest import TRACEBPF
    rec = recorder("--no-sched", "--", prog("mt_events"), 2, 3).wait()
    assert rec.rc == 0, rec.stderr
    p = subprocess.run([TRACEBPF, "dump", str(rec.tbt)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    renames = [l for l in lines if re.search(r'\[\s*\d+\] \d+/\d+ COMM "worker-\d"', l)]
    assert len(renames) == 2, lines
    for r in renames:
        tid = re.search(r"\] \d+/(\d+) COMM", r).group(1)
        first_event = next(i for i, l in enumerate(lines)
                           if f"/{tid} " in l and re.search(r"/\d+ (B|I|E|C) ", l))
        assert lines.index(r) < first_event, (r, lines[first_event])
