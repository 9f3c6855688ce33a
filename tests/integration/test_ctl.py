"""`tracebpf ctl start|stop|status` and `record --paused`: a running
recording switched off and on. Real recorders and a real instrumented
program (tests/progs/phases) that emits numbered events only when told to,
so each event is known to fall before or after a switch."""
import json
import os
import re
import select
import signal
import subprocess
import time

import pytest

from conftest import SCHED_BREAK_CAT, TRACEBPF, child_pid_of, load, prog, wait_for
from test_errors import run

NCPUS = os.cpu_count()


def ctl(*args, user=None):
    return run("ctl", *args, user=user)


def check_ok(p):
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    return p.stdout


def check_error(p, *expected):
    """Exit 1, one `tracebpf: ctl: ...` line saying what failed, and a hint."""
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert re.search(r"^tracebpf: ctl: ", p.stderr, re.M), p.stderr
    assert "tracebpf: hint: " in p.stderr, p.stderr
    for e in expected:
        assert e in p.stderr, (e, p.stderr)


class Phases:
    """The phases program under `tracebpf record`, driven over two FIFOs."""

    def __init__(self, recorder, tmp_path, *opts, name="t", before=None, program="phases"):
        """before: a shell command the traced shell runs first (then it
        execs phases); program: phases, or phases_slow (no fast path)."""
        self.cmd_path, self.ack_path = tmp_path / f"{name}.cmd", tmp_path / f"{name}.ack"
        os.mkfifo(self.cmd_path)
        os.mkfifo(self.ack_path)
        cmd = [prog(program), self.cmd_path, self.ack_path]
        if before:
            cmd = ["sh", "-c", before + ' && exec "$0" "$@"', *cmd]
        self.rec = recorder(*opts, "--", *cmd, name=name)
        # the program opens them once the recorder has attached and let it
        # run; a recorder that failed must fail the test, not hang it
        def writer():
            assert self.rec.proc.poll() is None, self.rec.proc.communicate()
            try:
                return os.open(self.cmd_path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                return None
        fd = wait_for(writer, what="the phases program to start")
        os.set_blocking(fd, True)
        self.cmd = os.fdopen(fd, "w")
        # read-write: no EOF before the program opens it; select bounds the wait
        self.ack = os.open(self.ack_path, os.O_RDWR)

    def do(self, line):
        self.cmd.write(line + "\n")
        self.cmd.flush()
        got = b""
        while not got.endswith(b"\n"):
            ready, _, _ = select.select([self.ack], [], [], 60)
            assert ready, f"phases did not answer {line!r}"
            got += os.read(self.ack, 64)
        assert re.fullmatch(rb"ok [01]\n", got), (line, got)
        return got == b"ok 1\n"   # the sites enabled: a tracer attached

    def finish(self):
        self.cmd.close()
        os.close(self.ack)
        return self.rec.wait()


def dump(tbt):
    p = subprocess.run([TRACEBPF, "dump", str(tbt)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    recs = []
    for line in p.stdout.splitlines():
        ts, _cpu, rest = line.split(" ", 1)[0], None, line.split("] ", 1)[1]
        pidtid, kind, *more = rest.split(" ", 2)
        recs.append({"ts": int(ts.replace(".", "")), "pid": int(pidtid.split("/")[0]),
                     "kind": kind, "text": more[0] if more else ""})
    return recs


def windows(recs):
    """[(from_ns, to_ns or None)] from the CTL records, as the file says."""
    out = []
    for r in sorted((r for r in recs if r["kind"] == "CTL"), key=lambda r: r["ts"]):
        if r["text"].startswith("stopped") and (not out or out[-1][1] is not None):
            out.append((r["ts"], None))
        elif r["text"].startswith("started") and out and out[-1][1] is None:
            out[-1] = (out[-1][0], r["ts"])
    return out


def inside(ts, wins):
    return any(a <= ts and (b is None or ts < b) for a, b in wins)


@pytest.mark.both_paths
def test_stop_and_start(recorder, tmp_path):
    ph = Phases(recorder, tmp_path, "--paused")
    pid = ph.rec.proc.pid
    st = check_ok(ctl("status"))
    assert re.search(rf"^recording {pid}: stopped since it started \(--paused\), writing "
                     rf"{re.escape(str(ph.rec.tbt))}$", st, re.M), st
    # stopped: no probe attached, so the sites' semaphore is 0 and a hit
    # costs the program a load and a branch
    assert not ph.do("i 5")   # seq 0-4: paused, not recorded
    ph.do("b")             # its end comes after the start: unmatched
    ph.do("s 200")         # switches while paused
    assert check_ok(ctl("start")) == f"recording {pid} started\n"
    assert f"recording {pid}: on" in check_ok(ctl("status"))
    assert ph.do("i 5")    # 5-9 recorded
    ph.do("e")
    ph.do("b")             # "span": open when recording stops
    ph.do("s 200")
    assert check_ok(ctl("stop")) == f"recording {pid} stopped\n"
    assert check_ok(ctl("stop")) == f"recording {pid} is already stopped\n"
    assert re.search(rf"^recording {pid}: stopped for [0-9.]+ s \(by process \d+\)",
                     check_ok(ctl("status")), re.M)
    assert not ph.do("i 5")   # 10-14 not recorded
    ph.do("s 200")
    check_ok(ctl("start"))
    ph.do("e")             # span's end: span was cut at the stop
    assert ph.do("i 5")    # 15-19 recorded
    ph.do("s 200")
    rec = ph.finish()
    t = rec.trace()

    seqs = sorted(e["args"]["seq"] for e in t.named("phase"))
    assert seqs == [*range(5, 10), *range(15, 20)], seqs
    md = t.meta
    wins = md["recording_stopped"]
    assert len(wins) == 2 and all("to_ns" in w for w in wins), wins
    assert wins[0]["from_ns"] < wins[0]["to_ns"] < wins[1]["from_ns"] < wins[1]["to_ns"], wins
    span = t.named("span", "X")
    assert len(span) == 1, span
    assert span[0]["args"]["tracebpf_unfinished"] == "recording stopped", span
    # it ends where recording stopped (ts and dur are microseconds)
    assert abs((span[0]["ts"] + span[0]["dur"]) * 1000 - wins[1]["from_ns"]) < 2, (span, wins)
    # the end after --paused and span's after the stop are the ends of
    # slices that began before a start: marked instants, never paired
    assert md["unmatched_ends"] == 0 and md["ends_before_recording"] == 2, md
    marks = [e for e in t.by_ph("I") if "tracebpf_end_of" in e["args"]]
    assert [e["args"]["tracebpf_end_of"] for e in marks] == \
        ["began before tracebpf ctl start"] * 2, marks
    # a CPU's chain of switches that breaks over a stop breaks there
    # (unless its records were lost too), and nowhere else (docs/output.md,
    # "Scheduler chain breaks"; load checked each mark against the lines)
    for m in (e for e in t.events if e.get("cat") == SCHED_BREAK_CAT):
        a = m["args"]
        since, end = a["unknown_since_ns"], round((m["ts"] + m["dur"]) * 1000)
        over = any(since <= w["from_ns"] <= end for w in wins)
        assert (a["cause"] in ("recording stopped", "records lost")) if over else \
            a["cause"] != "recording stopped", (m, wins)
    assert md.get("sched_breaks_by_cause", {}).get("recording_stopped", 0) <= 2 * NCPUS, md

    # The kernel side, not only the converter: the file holds no event of
    # the stopped phases, and of kernel records at most what was in flight
    # on each CPU when the switch flipped.
    recs = dump(rec.tbt)
    file_wins = windows(recs)
    assert file_wins == [(w["from_ns"], w["to_ns"]) for w in wins], file_wins
    user = [r for r in recs if re.match(r"test:(phase|span)\b", r["text"])]
    assert [r for r in user if inside(r["ts"], file_wins)] == []
    assert sorted(int(r["text"].split("seq=")[1].split()[0]) for r in user
                  if "seq=" in r["text"]) == seqs
    kernel = [r for r in recs if r["kind"] == "KERNEL" and re.search(
        r": (sched_switch|sched_waking|sched_wakeup|sched_wakeup_new|cpu_idle|cpu_frequency):",
        r["text"])]
    stray = [r for r in kernel if inside(r["ts"], file_wins)]
    assert len(stray) <= 2 * NCPUS, stray
    assert md["records_while_stopped"] == len(stray), (md, stray)
    # not vacuous: the phases that ran while on recorded the program's switches
    pid = t.named("phase")[0]["pid"]
    ours = [r for r in kernel if r["pid"] == pid and ": sched_switch:" in r["text"]]
    assert len(ours) >= 200, len(ours)


@pytest.mark.both_paths
def test_start_after_a_traced_process_exited(recorder, tmp_path):
    """A start attaches again to every object found so far, through the file
    the recorder keeps open: loop_events' was found as /proc/PID/root/...
    of a process that has exited by then."""
    ph = Phases(recorder, tmp_path, before=f"{prog('loop_events')} 0.2")
    assert ph.do("i 2")
    assert check_ok(ctl("stop")).endswith(" stopped\n")
    assert not ph.do("i 2")
    assert check_ok(ctl("start")).endswith(" started\n")
    assert ph.do("i 2")
    rec = ph.finish()
    assert "failed to attach" not in rec.stderr, rec.stderr
    t = rec.trace()
    assert sorted(e["args"]["seq"] for e in t.named("phase")) == [0, 1, 4, 5]
    assert t.named("loop"), "loop_events ran traced before phases"


def test_errors(recorder, tmp_path):
    # nothing running
    check_error(ctl("stop"), "no tracebpf recording is running", "--paused")
    check_error(ctl("status"), "no tracebpf recording is running")
    # usage errors
    for args in ((), ("pause",), ("start", "stop"), ("-r", "x", "stop"), ("-r", "0", "stop")):
        p = ctl(*args)
        assert p.returncode == 64 and "tracebpf ctl" in p.stderr, (args, p.stderr)

    a = Phases(recorder, tmp_path, name="a")
    b = Phases(recorder, tmp_path, "--paused", name="b")
    pa, pb = a.rec.proc.pid, b.rec.proc.pid
    st = check_ok(ctl("status"))
    assert f"recording {pa}: on" in st and f"recording {pb}: stopped" in st, st
    # which one? never both, never a guess
    check_error(ctl("stop"), "2 recordings are running", f" {pa})", f" {pb})", "--recorder")
    check_error(ctl("-r", os.getpid(), "stop"), f"no tracebpf recording runs in process "
                f"{os.getpid()}", "tracebpf ctl list")
    assert check_ok(ctl("-r", pb, "start")) == f"recording {pb} started\n"
    assert check_ok(ctl("--recorder", pa, "stop")) == f"recording {pa} stopped\n"
    st = check_ok(ctl("status"))
    assert f"recording {pa}: stopped" in st and f"recording {pb}: on" in st, st
    st = check_ok(ctl("-r", pa, "status"))
    assert all(l.startswith(f"recording {pa}: ") for l in st.splitlines()), st

    # not root: says so, and how
    check_error(ctl("stop", user=65534), "failed to list the running recordings",
                "run as root")
    for ph in (a, b):
        ph.do("i 3")
        assert ph.finish().rc == 0, ph.rec.stderr
    # a emitted while stopped, b after its start
    assert a.rec.trace().named("phase") == []
    assert len(b.rec.trace().named("phase")) == 3
    assert "stopped at the end" in subprocess.run(
        [TRACEBPF, "info", str(a.rec.tbt)], capture_output=True, text=True).stdout


def test_named_sessions(recorder, tmp_path):
    """docs/tracebpf-ctl.md, "Sessions": each recording has a name
    (--session, or tb-<recorder pid>); `ctl list` shows them; --session
    reaches that one only; without it ctl refuses to guess and names them;
    a name that runs already is refused."""
    a = Phases(recorder, tmp_path, "--paused", "--session", "alpha", name="a")
    b = Phases(recorder, tmp_path, "--paused", name="b")
    pa, pb = a.rec.proc.pid, b.rec.proc.pid
    lst = check_ok(ctl("list"))
    assert lst.splitlines()[0].split() == ["SESSION", "RECORDER", "STATE", "OUTPUT"], lst
    assert re.search(rf"^alpha +{pa} +stopped +{re.escape(str(a.rec.tbt))}$", lst, re.M), lst
    assert re.search(rf"^tb-{pb} +{pb} +stopped +{re.escape(str(b.rec.tbt))}$", lst, re.M), lst
    assert check_ok(ctl("--session", "alpha", "list")).count("\n") == 2
    check_error(ctl("start"), "2 recordings are running", f"alpha (recorder {pa})",
                f"tb-{pb} (recorder {pb})", "--session NAME")
    check_error(ctl("--session", "gamma", "stop"), "no tracebpf session named 'gamma' is "
                "running", "tracebpf ctl list")
    check_error(ctl("--session", "alpha", "-r", pb, "stop"), "no tracebpf session named "
                f"'alpha' has recorder {pb}")
    for bad in ("a/b", "x" * 32, ""):
        p = ctl("--session", bad, "list")
        assert p.returncode == 64 and "invalid session name" in p.stderr, (bad, p.stderr)
    # the name is taken; a new name is printed at start (then the missing
    # command fails the recording)
    p = run("record", "-q", "--session", "alpha", "--", prog("phases"))
    assert p.returncode == 1 and f"a session named 'alpha' is already running " \
        f"(recorder {pa})" in p.stderr, p.stderr
    p = run("record", "--session", "zeta", "--", str(tmp_path / "missing"))
    assert p.returncode == 1 and "tracebpf: record: session 'zeta' (tracebpf ctl --session " \
        "zeta" in p.stderr, p.stderr
    # --session reaches its own only
    assert check_ok(ctl("--session", f"tb-{pb}", "start")) == f"recording {pb} started\n"
    lst = check_ok(ctl("list"))
    assert re.search(rf"^alpha +{pa} +stopped ", lst, re.M) and \
        re.search(rf"^tb-{pb} +{pb} +on ", lst, re.M), lst
    for ph in (a, b):
        ph.do("i 3")
        assert ph.finish().rc == 0, ph.rec.stderr
    assert a.rec.trace().named("phase") == []
    assert len(b.rec.trace().named("phase")) == 3


@pytest.mark.both_paths
def test_filters_at_run_time(recorder, tmp_path):
    """docs/tracebpf-ctl.md, "Filters": `ctl filter add|remove --pid|--tid`
    and `filter clear [tid|pid]` between known events: each numbered event is in the trace
    exactly when the filters in effect when it was emitted let its process
    and thread through, on either path."""
    ph = Phases(recorder, tmp_path, "--session", "flt")
    pid = child_pid_of(ph.rec)

    def f(*args):
        return check_ok(ctl("--session", "flt", "filter", *args))
    ph.do("i 2")                              # 0-1: no filter
    assert f("add", "--pid", 1) == f"recording {ph.rec.proc.pid}: only the application " \
        "events of processes 1\n"
    ph.do("i 3")                              # 2-4: not process 1's
    out = f("add", "--pid", pid)
    assert re.search(rf"processes (1, {pid}|{pid}, 1)$", out, re.M), out
    ph.do("i 4")                              # 5-8
    f("add", "--tid", 1)
    st = check_ok(ctl("status"))
    assert "only the application events of threads 1\n" in st, st
    ph.do("i 1")                              # 9: not thread 1
    f("clear", "tid")
    ph.do("i 2")                              # 10-11
    f("remove", "--pid", pid)
    ph.do("i 1")                              # 12: only process 1 again
    assert f("clear") == f"recording {ph.rec.proc.pid}: no filter, every traced " \
        "thread's events\n"
    ph.do("i 1")                              # 13
    assert ph.finish().rc == 0, ph.rec.stderr
    t = ph.rec.trace()
    seqs = sorted(e["args"]["seq"] for e in t.named("phase"))
    assert seqs == [0, 1, 5, 6, 7, 8, 10, 11, 13], seqs
    # docs/output.md, "Processes, threads and metadata": each filter
    # change, in order, in the file
    both = sorted([1, pid])
    filters = t.meta["event_filters"]
    assert [{k: v for k, v in x.items() if k != "from_ns"} for x in filters] == [
        {"pids": [1]}, {"pids": both}, {"tids": [1], "pids": both}, {"pids": both},
        {"pids": [1]}, {}], filters
    at = [x["from_ns"] for x in filters]
    assert at == sorted(at) and len(set(at)) == len(at), at
    # each one after the events emitted before its command, before the next
    phase = sorted((e["args"]["seq"], round(float(e["ts"]) * 1000)) for e in t.named("phase"))
    ts = dict(phase)
    assert ts[1] < at[0] and at[1] < ts[5] and at[2] < ts[10] < at[4] < ts[13], (ts, at)


def test_filter_usage():
    for args in (("filter",), ("filter", "drop"), ("filter", "add"),
                 ("filter", "add", "--tid", "x"), ("--tid", "5", "stop"),
                 ("filter", "clear", "--tid", "5"), ("filter", "clear", "all")):
        p = ctl(*args)
        assert p.returncode == 64 and "tracebpf ctl" in p.stderr, (args, p.stderr)


def test_status_shows_what_a_recording_does(recorder, tmp_path):
    """docs/tracebpf-ctl.md, "Status": per recording, the session, the
    traced processes, the events and bytes so far, the drops (in all and
    per CPU), the kernel events and the filters; --json has the same."""
    ph = Phases(recorder, tmp_path, "--session", "st", "--sched=traced", "-e",
                "syscalls:sys_enter_openat")
    pid, rec = child_pid_of(ph.rec), ph.rec.proc.pid
    ph.do("i 500")
    check_ok(ctl("-s", "st", "filter", "add", "--tid", pid))

    def status():
        j = json.loads(check_ok(ctl("-s", "st", "status", "--json")))
        return j if "events" in j[0] and j[0]["events"] >= 500 else None
    # figures are written once a second: wait for some that count the 500
    j = wait_for(status, what="ctl status --json to count the events")
    assert len(j) == 1, j
    s = j[0]
    assert (s["session"], s["recorder"], s["state"], s["output"]) == \
        ("st", rec, "on", str(ph.rec.tbt)), s
    assert s["filters"] == {"tids": [pid], "pids": None}, s
    assert s["targets"] == [pid] and s["ntargets"] == 1, s
    assert s["kernel_events"] == "sched (traced), syscalls:sys_enter_openat", s
    assert s["bytes"] > 0 and s["drops"]["application"] == 0, s
    assert len(s["drops"]["per_cpu"]) == min(NCPUS, 8), s
    st = check_ok(ctl("status"))
    for want in (rf"^recording {rec}: on, writing ", rf"^recording {rec}: session st$",
                 rf"^recording {rec}: 1 traced process: {pid}$",
                 rf"^recording {rec}: \d+ events, \d+/s; [\d.]+ (B|KiB|MiB) written$",
                 rf"^recording {rec}: dropped 0 application and \d+ kernel events \(per CPU:",
                 rf"^recording {rec}: kernel events: sched \(traced\), syscalls:",
                 rf"^recording {rec}: only the application events of threads {pid}$"):
        assert re.search(want, st, re.M), (want, st)
    assert ph.finish().rc == 0, ph.rec.stderr
    p = ctl("status", "--json")
    assert p.returncode == 1 and "no tracebpf recording is running" in p.stderr, p.stderr


def test_recorder_frozen(recorder, tmp_path):
    """A recorder that cannot answer (SIGSTOP): ctl gives up with a hint
    instead of hanging. The stop is in effect at once all the same; a start
    asked for meanwhile replaces it, and once the recorder runs again the
    file has the window (the stop it never saw, stamped at the start's
    request) and recording is on."""
    ph = Phases(recorder, tmp_path)
    pid = ph.rec.proc.pid
    ph.do("i 2")                       # 0-1 recorded
    os.kill(pid, signal.SIGSTOP)
    try:
        # --wait 1: the recorder cannot answer; a shorter wait than the 5 s
        check_error(ctl("stop", "--wait", "1"), f"failed to stop recording {pid}",
                    "did not confirm within 1.0 s", f"kill -CONT {pid}")
        ph.do("i 2")                   # 2-3: switched off in BPF already
        check_error(ctl("start", "-w", "1"), f"failed to start recording {pid}",
                    "did not confirm", "recording starts when it answers")
        # status says what is in effect, and what waits
        st = check_ok(ctl("status"))
        assert f"recording {pid}: stopped, writing" in st, st
        assert re.search(rf"^recording {pid}: the start asked by process \d+ waits for the "
                         "recorder$", st, re.M), st
    finally:
        os.kill(pid, signal.SIGCONT)
    # "on" only once the recorder has attached again and opened the switch
    wait_for(lambda: ctl("status").stdout.startswith(f"recording {pid}: on, writing "
                                                     f"{ph.rec.tbt}\nrecording {pid}: session "),
             what="the start to be handled")
    assert ph.do("i 2")                # 4-5 recorded, the probes attached again
    t = ph.finish().trace()
    assert sorted(e["args"]["seq"] for e in t.named("phase")) == [0, 1, 4, 5]
    wins = t.meta["recording_stopped"]
    assert len(wins) == 1 and wins[0]["from_ns"] < wins[0]["to_ns"], wins


def test_recorder_killed_while_ctl_waits(recorder, tmp_path):
    ph = Phases(recorder, tmp_path)
    pid = ph.rec.proc.pid
    os.kill(pid, signal.SIGSTOP)
    c = subprocess.Popen([TRACEBPF, "ctl", "stop"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    # ctl has found the recording and asked once status shows the request
    # waiting for the (frozen) recorder: only then does killing the recorder
    # test a ctl that waits (a fixed sleep could end before ctl asked, and
    # ctl would then find no recording)
    wait_for(lambda: re.search(rf"^recording {pid}: the stop asked by process {c.pid} waits "
                               rf"for the recorder", ctl("status").stdout, re.M),
             what="ctl stop to wait for the recorder")
    ph.rec.proc.kill()
    ph.cmd.close()
    os.close(ph.ack)
    ph.rec.wait()
    out, err = c.communicate(timeout=30)
    check_error(subprocess.CompletedProcess(c.args, c.returncode, out, err),
                f"failed to stop recording {pid}", "nothing left to stop")


def test_killed_while_stopped(recorder, tmp_path):
    """SIGKILL while stopped: the file still says where recording stopped."""
    ph = Phases(recorder, tmp_path)
    ph.do("i 4")
    check_ok(ctl("stop"))
    ph.do("i 4")
    ph.rec.proc.kill()
    ph.cmd.close()   # the program exits, and with it the recorder's stdout
    os.close(ph.ack)
    ph.rec.wait()
    out = tmp_path / "k.json"
    c = subprocess.run([TRACEBPF, "convert", str(ph.rec.tbt), "-o", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert c.returncode == 0, c.stderr
    t = load(out)
    assert sorted(e["args"]["seq"] for e in t.named("phase")) == [0, 1, 2, 3]
    wins = t.meta["recording_stopped"]
    assert len(wins) == 1 and "to_ns" not in wins[0], wins


def check_late_names(t, pid, worker):
    assert t.process_names().get(pid) == "late process", t.process_names()
    names = t.thread_names()
    assert (names.get((pid, pid)), names.get((pid, worker))) == ("late main", "late worker"), \
        names
    assert len(t.named("after", "I")) == 2


@pytest.mark.both_paths
def test_names_set_before_attach_survive(recorder, spawn):
    """docs/api.md, "Names and ordering": names the program set before `record -p`
    attached are written again once its threads find the session: into
    their fast-path rings, or through the probe when they take no ring
    (--no-fast-path); so the JSON names them (it said "late_names"
    before)."""
    app = spawn(prog("late_names"), stdin=subprocess.PIPE)
    m = re.fullmatch(r"named pid=(\d+) worker=(\d+)\n", app.stdout.readline())
    pid, worker = int(m.group(1)), int(m.group(2))
    rec = recorder("--no-sched", "-p", pid)

    def recording():
        st = json.loads(ctl("-r", rec.proc.pid, "status", "--json").stdout or "[{}]")
        return "events" in st[0]
    # figures are published from the recorder's loop: it has attached
    wait_for(recording, what="the recorder to attach")
    app.stdin.write("go\n")
    app.stdin.close()
    assert app.wait(timeout=60) == 0
    rec.wait()
    check_late_names(rec.trace(), pid, worker)


@pytest.mark.both_paths
def test_names_set_while_paused_survive(recorder, tmp_path):
    """Names set under --paused, before `ctl start`, are in the JSON."""
    rec = recorder("--no-sched", "--paused", "--", prog("late_names"), stdin=subprocess.PIPE)
    m = re.fullmatch(r"named pid=(\d+) worker=(\d+)\n", rec.proc.stdout.readline())
    pid, worker = int(m.group(1)), int(m.group(2))
    assert check_ok(ctl("-r", rec.proc.pid, "start")) == f"recording {rec.proc.pid} started\n"
    rec.proc.stdin.write("go\n")
    rec.proc.stdin.close()
    rec.proc.stdin = None   # communicate() would flush it
    rec.wait()
    check_late_names(rec.trace(), pid, worker)


def test_kernel_events_switched_at_run_time(recorder, tmp_path):
    """docs/tracebpf-ctl.md, "Kernel events": `ctl disable|enable --sched`
    and `-e SUBSYS:EVENT` between marker instants: in each window the
    program's context switches and its write() tracepoint hits are there
    exactly when switched on."""
    if not os.path.exists("/sys/kernel/tracing/events/syscalls/sys_enter_write"):
        pytest.skip("no syscalls:sys_enter_write tracepoint on this kernel")
    tp = "syscalls:sys_enter_write"
    ph = Phases(recorder, tmp_path, "--session", "kev", "--sched=traced", "-e", tp)
    pid, rec = child_pid_of(ph.rec), ph.rec.proc.pid

    def window():
        ph.do("i 1")
        ph.do("s 20")      # 20 round trips over a pipe: switches and writes
        ph.do("i 1")

    def k(*args):
        return check_ok(ctl("-s", "kev", *args))
    window()                                                  # markers 0, 1
    assert k("disable", "--sched", "-e", tp) == \
        f"recording {rec}: scheduler events off\nrecording {rec}: {tp} off\n"
    st = check_ok(ctl("status"))
    assert "; scheduler events switched off; 1 tracepoint switched off\n" in st, st
    window()                                                  # 2, 3
    assert k("enable", "--sched") == f"recording {rec}: scheduler events on\n"
    window()                                                  # 4, 5
    assert k("enable", "-e", tp) == f"recording {rec}: {tp} on\n"
    window()                                                  # 6, 7
    check_error(ctl("-s", "kev", "disable", "-e", "signal:signal_generate"),
                f"recording {rec} does not record signal:signal_generate", "-e")
    # a tracepoint not given at the start: attached now, recorded from then
    tp2 = "syscalls:sys_exit_write"
    assert k("enable", "-e", tp2) == f"recording {rec}: {tp2} on (attached now)\n"
    # status's figures are rewritten about once a second: waits for the next
    # (the list of kernel events is cut short of 64 bytes: TB_CTL_EVENTS)
    want = f"kernel events: sched (traced), {tp}, syscalls:sys_exit_w"
    wait_for(lambda: want in check_ok(ctl("status")), what="status to list the tracepoint")
    window()                                                  # 8, 9
    check_error(ctl("-s", "kev", "enable", "-e", "nosuch:event"), "nosuch:event")
    assert ph.finish().rc == 0, ph.rec.stderr
    t = ph.rec.trace()
    marks = {e["args"]["seq"]: e["ts"] for e in t.named("phase", "I")}
    assert sorted(marks) == list(range(10)), marks

    def count(event, a, b):
        return sum(1 for l in t.systrace if l["event"] == event and l["tgid"] == pid and
                   marks[a] < l["ts_ns"] / 1000 < marks[b])
    got = [(count("sched_switch", a, a + 1), count("sys_enter_write", a, a + 1))
           for a in (0, 2, 4, 6)]
    assert got[1] == (0, 0) and got[2][1] == 0, got
    assert all(sw >= 20 for sw, _ in (got[0], got[2], got[3])), got
    assert got[0][1] >= 20 and got[3][1] >= 20, got
    exits = [count("sys_exit_write", a, a + 1) for a in (0, 2, 4, 6, 8)]
    assert exits[:4] == [0, 0, 0, 0] and exits[4] >= 20, exits


def test_kernel_switch_usage():
    for args in (("enable",), ("disable", "-e", "irq:*"), ("disable", "-e", "nocolon"),
                 ("stop", "--sched"), ("status", "-e", "a:b"), ("stop", "--wait", "0"),
                 ("stop", "--wait", "x")):
        p = ctl(*args)
        assert p.returncode == 64 and "tracebpf ctl" in p.stderr, (args, p.stderr)


def test_switch_and_filter_errors(recorder, tmp_path):
    """What ctl refuses on a running recording, each with a hint: the
    scheduler's events of a recording made without them, and a thread set
    beyond its 1,024 entries (the ids in it stay as they were)."""
    ph = Phases(recorder, tmp_path, "--session", "err", "--no-sched")
    check_error(ctl("-s", "err", "disable", "--sched"),
                f"recording {ph.rec.proc.pid} records no scheduler events", "--no-sched")
    many = ",".join(str(i) for i in range(1, 1025))
    check_ok(ctl("-s", "err", "filter", "add", "--tid", many))
    check_error(ctl("-s", "err", "filter", "add", "--tid", 5000),
                "failed to add 5000 to recording", "the set is full", "filter remove")
    st = check_ok(ctl("-s", "err", "status"))
    assert "only the application events of threads " in st and " 5000" not in st, st
    check_ok(ctl("-s", "err", "filter", "clear"))
    assert ph.finish().rc == 0, ph.rec.stderr


def names_of(t, pid):
    """(process name, {tid: thread name}) from the M events of pid."""
    proc = [e["args"]["name"] for e in t.events
            if e["ph"] == "M" and e["name"] == "process_name" and e["pid"] == pid]
    threads = {e["tid"]: e["args"]["name"] for e in t.events
               if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == pid}
    return proc[0] if proc else None, threads


@pytest.mark.both_paths
def test_restart_splits_the_recording_into_files(recorder, tmp_path, path_args):
    """ctl restart closes the file complete (its JSON written by the
    recorder) and goes on in a new one: every event in exactly one file,
    the sites and the names the application set before in each."""
    name = f"rs{len(path_args)}"
    ph = Phases(recorder, tmp_path, "--session", name)
    pid = child_pid_of(ph.rec)
    ph.do("n")
    ph.do("c 10")                                   # seq 0-9: t.json
    ph.do("b")                                      # a slice across the cut
    out = check_ok(ctl("restart", "-s", name))
    auto = tmp_path / "t.1.tbt"
    assert out == f"recording {ph.rec.proc.pid}: now writing {auto}\n", out
    ph.do("c 10")                                   # 10-19: t.1.json
    ph.do("e")
    check_ok(ctl("-s", name, "filter", "add", "--pid", pid))   # keeps all it records
    out = check_ok(ctl("restart", "-s", name, "-o", str(tmp_path / "last.json")))
    assert f"now writing {tmp_path / 'last.tbt'}" in out, out
    st = check_ok(ctl("status", "-s", name))
    assert f"writing {tmp_path / 'last.tbt'}" in st, st
    ph.do("c 10")                                   # 20-29: last.json
    rec = ph.finish()
    assert rec.rc == 0, rec.stderr
    files = [tmp_path / "t.json", tmp_path / "t.1.json", tmp_path / "last.json"]
    got = []
    for k, f in enumerate(files):
        t = load(f)
        seqs = sorted(e["args"]["seq"] for e in t.events
                      if e["ph"] == "I" and e["name"] == "read")
        assert seqs == list(range(10 * k, 10 * k + 10)), (f, seqs)
        got += seqs
        proc, threads = names_of(t, pid)
        assert (proc, threads.get(pid)) == ("phases-app", "phases-main"), (f, proc, threads)
        assert t.meta["unresolved_sites"] == 0 and t.meta["drops_total"] == 0, t.meta
        # the filter, where it was set and at the start of the next file
        filters = [{k: v for k, v in x.items() if k != "from_ns"}
                   for x in t.meta.get("event_filters", [])]
        assert filters == ([] if k == 0 else [{"pids": [pid]}]), (f, filters)
        span = [e for e in t.events if e.get("name") == "span"]
        if k == 0:   # cut at the end of its file
            assert [e["args"].get("tracebpf_unfinished") for e in span] == ["recording ended"]
        elif k == 1:   # its end, in the next file
            assert [e["args"].get("tracebpf_end_of") for e in span] == \
                ["began before the recording started"], span
    assert sorted(got) == list(range(30))
    for f in ("t.tbt", "t.1.tbt", "last.tbt"):
        info = subprocess.run([TRACEBPF, "info", str(tmp_path / f)], capture_output=True,
                              text=True, timeout=60)
        assert "finished:       yes" in info.stdout, (f, info.stdout)


def test_restart_into_a_bad_path_goes_on(recorder, tmp_path):
    ph = Phases(recorder, tmp_path, "--session", "rsbad")
    ph.do("c 5")
    p = ctl("restart", "-s", "rsbad", "-o", str(tmp_path / "no" / "such" / "dir" / "x"))
    check_error(p, "failed to restart recording")
    ph.do("c 5")
    t = ph.finish().trace()
    assert sorted(e["args"]["seq"] for e in t.events if e["ph"] == "I" and
                  e["name"] == "read") == list(range(10))
    assert not (tmp_path / "t.1.tbt").exists()


def test_restart_refuses_other_verbs_options():
    p = ctl("stop", "-o", "x")
    assert p.returncode == 64 and "-o goes with 'restart'" in p.stderr, p.stderr


def bpftool_json(*args):
    p = subprocess.run(["bpftool", "--json", *args], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def check_map_pins(objs, phases):
    """Each session's programs' maps are pinned under its recorder's
    session-NAME directory, and only there."""
    pins = {m["id"]: m.get("pinned", []) for m in bpftool_json("map", "show", "-f")}
    for name, o in objs.items():
        mine = f"/sys/fs/bpf/tracebpf/s{phases[name].rec.proc.pid}/session-{name}/"
        used = set()
        for pid in o["programs"]:
            used |= set(bpftool_json("prog", "show", "id", str(pid)).get("map_ids", []))
        assert len(used) >= 10, (name, used)
        for mid in used | {o["session_map"], o["ctl_map"]}:
            where = [p for p in pins.get(mid, []) if "/session-" in p]
            assert where and all(p.startswith(mine) for p in where), (name, mid, where)


def test_status_names_each_sessions_bpf_objects(recorder, tmp_path):
    """docs/tracebpf-ctl.md, "Sessions": bpftool tells two sessions apart
    by the map named after each, by each program's metadata (`session`),
    and by the paths `bpftool map show -f` prints for each session's maps
    (pinned in session-NAME/, '.' as '_'): every map a session's programs
    use is pinned in its own directory and in no other. `ctl status` lists
    each one's programs (those that use one of its maps): the same
    programs."""
    a = Phases(recorder, tmp_path, "--session", "bpf-one", name="a")
    b = Phases(recorder, tmp_path, "--session", "bpf-two", name="b")
    got = {}
    for s in json.loads(check_ok(ctl("status", "--json"))):
        if s["session"] in ("bpf-one", "bpf-two"):
            got[s["session"]] = s["bpf"]
    assert set(got) == {"bpf-one", "bpf-two"}, got
    one, two = got["bpf-one"], got["bpf-two"]
    assert one["programs"] and two["programs"]
    assert not set(one["programs"]) & set(two["programs"])
    for name, objs in (("bpf_one", one), ("bpf_two", two)):
        assert bpftool_json("map", "show", "id", str(objs["session_map"]))["name"] == name
        assert bpftool_json("map", "show", "id", str(objs["ctl_map"]))["name"] == "tb_ctl"
    by_metadata = {}
    for p in bpftool_json("prog", "show"):
        by_metadata.setdefault(p.get("metadata", {}).get("session"), set()).add(p["id"])
    assert by_metadata.get("bpf-one") == set(one["programs"]), by_metadata.get("bpf-one")
    assert by_metadata.get("bpf-two") == set(two["programs"]), by_metadata.get("bpf-two")
    check_map_pins({"bpf-one": one, "bpf-two": two}, {"bpf-one": a, "bpf-two": b})
    st = check_ok(ctl("status", "-s", "bpf-one"))
    assert re.search(rf"BPF maps tb_ctl {one['ctl_map']}, session map "
                     rf"{one['session_map']}; {len(one['programs'])} programs: ", st), st
    for ph in (a, b):
        assert ph.finish().rc == 0


def test_enable_event_refused_without_kernel_programs(recorder, tmp_path):
    """`enable -e` attaches a tracepoint at run time only where the kernel
    programs are loaded: --no-sched without -e has none, and says how."""
    ph = Phases(recorder, tmp_path, "--no-sched", "--session", "nokern")
    check_error(ctl("-s", "nokern", "enable", "-e", "syscalls:sys_enter_write"),
                "does not record syscalls:sys_enter_write",
                "it records no kernel events (--no-sched without -e)")
    check_error(ctl("-s", "nokern", "restart", "-o", "/" + "x" * 200),
                "the path is longer than 159 bytes")
    assert ph.finish().rc == 0
