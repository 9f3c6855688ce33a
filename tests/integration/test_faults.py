"""Fault injection: each bpf(2) command `tracebpf record` uses is refused at
each of its calls in turn (tests/progs/deny_bpf_cmd --after N: a seccomp
supervisor lets the first N calls of that command through and fails the
next ones with EPERM), while recording a pingpong. Whatever the call, the
recorder must not hang, crash, or lose data silently: either it says what
failed, with a hint that is not "run as root", and exits 1 leaving no
program loaded and no process stopped, or it exits 0 with the whole
pingpong in the trace (a warning allowed); make test takes every sixth
call, make test-full every one. The sweep
of a command ends at the first N where nothing was refused: that recording
must be whole too."""
import os
import re
import subprocess
from collections import Counter

import pytest

from conftest import TRACEBPF, load, prog, scale
from test_errors import persistently_leaked
from test_sched import parse_kv, pingpong_ids, switches

ROUNDS = 200
MAX_CALLS = 80   # more calls of one command than any recording makes
# make test refuses every sixth call of a command (the 1st, 7th, ...),
# make test-full every call
STRIDE = scale(6, 1)

COMMANDS = {
    0: "BPF_MAP_CREATE", 1: "BPF_MAP_LOOKUP_ELEM", 2: "BPF_MAP_UPDATE_ELEM",
    3: "BPF_MAP_DELETE_ELEM", 4: "BPF_MAP_GET_NEXT_KEY", 5: "BPF_PROG_LOAD",
    10: "BPF_PROG_TEST_RUN", 15: "BPF_OBJ_GET_INFO_BY_FD", 18: "BPF_BTF_LOAD",
    22: "BPF_MAP_FREEZE", 28: "BPF_LINK_CREATE", 35: "BPF_PROG_BIND_MAP",
}


# The environment every recording of this module gives its command (the
# recorder passes its own to the command it starts): a process left stopped
# is found by it, not by a name another process on the machine may have.
MARK = f"TRACEBPF_FAULTS_RUN={os.getpid()}"


def stopped_pingpongs():
    """This module's traced processes left stopped: [(pid, comm, state)]."""
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        comm, state = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2]
        if state in "Tt" and MARK.encode() in env:
            left.append((int(pid), comm, state))
    return left


class Run:
    def __init__(self, p, out):
        self.rc, self.stdout, self.stderr, self.out = p.returncode, p.stdout, p.stderr, out


def record_refusing(tmp_path, cmd, after):
    out = tmp_path / f"f{cmd}_{after}.json"
    p = subprocess.run([prog("deny_bpf_cmd"), "--after", str(after), str(cmd), TRACEBPF,
                        "record", "-q", "-o", str(out), "--", prog("pingpong"), str(ROUNDS)],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, **dict([MARK.split("=", 1)])))
    return Run(p, out)


def check_whole(r, what):
    assert r.rc == 0, f"{what}: rc {r.rc}: {r.stderr[-2000:]}"
    t = load(r.out, consumer=False)
    ping, pong, cpu = pingpong_ids(r)
    # every round switches into each of them on the CPU they are pinned to,
    # and one of them wakes the other (which one blocks depends on wakeup
    # preemption: test_sched.check_pingpong has the details)
    into = Counter(int(s["next_pid"]) for s in switches(t) if s["cpu"] == cpu)
    assert into[ping] >= ROUNDS and into[pong] >= ROUNDS, (what, into[ping], into[pong])
    wakes = [parse_kv(l["details"]) | {"tid": l["tid"]} for l in t.systrace
             if l["event"] == "sched_waking"]
    between = [w for w in wakes if {int(w["pid"]), w["tid"]} == {ping, pong}]
    assert len(between) >= ROUNDS // 2, (what, len(between))
    assert t.meta["drops_total"] == 0, what
    assert t.meta["events"] > 0, f"{what}: no application events"


@pytest.mark.parametrize("cmd", sorted(COMMANDS), ids=lambda c: COMMANDS[c])
def test_every_call_refused(tmp_path, cmd):
    outcomes = []
    for after in range(0, MAX_CALLS, STRIDE):
        r = record_refusing(tmp_path, cmd, after)
        what = f"{COMMANDS[cmd]} refused after {after} calls"
        assert r.rc in (0, 1), f"{what}: rc {r.rc} (a crash or a usage error): {r.stderr[-2000:]}"
        if "deny_bpf_cmd: refused" not in r.stderr:
            check_whole(r, f"{COMMANDS[cmd]}, {after} calls, none refused")
            break
        if r.rc == 1:
            errors = [l for l in r.stderr.splitlines() if re.match(r"tracebpf: \w+: failed to ", l)]
            assert errors, f"{what}: exit 1 without saying what failed: {r.stderr[-2000:]}"
            # and what to do: a refused call as root is not a privilege problem
            hints = [l for l in r.stderr.splitlines() if l.startswith("tracebpf: hint: ")]
            assert hints, f"{what}: no hint after {errors[0]!r}: {r.stderr[-2000:]}"
            assert not any("run as root" in h for h in hints), (what, hints)
            outcomes.append(errors[0])
        else:
            check_whole(r, what)
            outcomes.append("recorded")
        assert stopped_pingpongs() == [], f"{what}: the traced process was left stopped"
    else:
        pytest.fail(f"{COMMANDS[cmd]} still refused after {MAX_CALLS} calls")
    assert persistently_leaked() == [], "a BPF program stayed loaded after a refused call"
    print(f"{COMMANDS[cmd]}: {len(outcomes)} calls refused in turn:", *sorted(set(outcomes)),
          sep="\n  ")
