"""A real application's scale: 2,000 distinct sites in an executable and
2,000 in a shared library it links (tests/progs/gen_many_sites.py). Every
hit of every site is recorded exactly once, under `record --`, `record -p`
and across `ctl stop`/`ctl start`, and nothing of the recorder's stays in
the kernel afterwards. No assertion on time: bench/sites.sh times these."""
import json
import re
import subprocess

from conftest import in_poll, prog, wait_for
from test_ctl import ctl, check_ok

N = 2000   # per object: MANY_SITES in the Makefile
OURS = ("tb_", "floor_")   # our BPF programs' name prefixes


def bpftool(*args):
    p = subprocess.run(["bpftool", "-j", *args], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout or "[]")


def our_prog_ids():
    return {p["id"] for p in bpftool("prog", "show") if p.get("name", "").startswith(OURS)}


def links_to(paths):
    """bpftool's links (and perf-event attachments) that probe any of paths."""
    found = [l for l in bpftool("link", "show")
             if any(p in json.dumps(l) for p in paths)]
    found += [e for e in bpftool("perf", "list") if any(p in json.dumps(e) for p in paths)]
    return found


def site_counts(t):
    """{(object, site index): [rounds]} from the JSON's instants."""
    got = {}
    for e in t.by_ph("I"):
        m = re.fullmatch(r"(exe|lib)_(\d+)", e["name"])
        if m:
            assert int(m.group(2)) == e["args"]["site"], e
            got.setdefault((m.group(1), e["args"]["site"]), []).append(e["args"]["round"])
    return got


def check_exact(t, rounds):
    got = site_counts(t)
    expect = sorted(rounds)
    assert len(got) == 2 * N, f"{len(got)} sites recorded, {2 * N} expected"
    wrong = {k: v for k, v in got.items() if sorted(v) != expect}
    assert not wrong, f"{len(wrong)} sites with other rounds than {expect}: " \
                      f"{list(wrong.items())[:3]}"


def paths():
    return [prog("many_sites"), prog("libmany_sites.so")]


def test_every_site_recorded_and_nothing_left(recorder):
    before = our_prog_ids()
    rec = recorder("--no-sched", "--", prog("many_sites"), 3).wait(timeout=120)
    assert rec.rc == 0, rec.stderr
    t = rec.trace()
    check_exact(t, [0, 1, 2])
    assert sum(t.meta["drops_per_cpu"]) == 0, t.meta["drops_per_cpu"]
    assert not links_to(paths()), links_to(paths())
    assert our_prog_ids() <= before, our_prog_ids() - before


class Waiting:
    """many_sites ROUNDS --wait: a round per line written to it."""

    def __init__(self, p, rounds):
        self.p = p
        self.rounds = rounds
        self.enabled = self.ready()

    def ready(self):
        line = self.p.stdout.readline()
        m = re.fullmatch(r"ready enabled=([01])\n", line)
        assert m, line
        return m.group(1) == "1"

    def round(self, r):
        self.p.stdin.write("go\n")
        self.p.stdin.flush()
        assert self.p.stdout.readline() == f"round={r}\n"
        if r + 1 < self.rounds:
            self.enabled = self.ready()


def test_ctl_stop_detaches_every_site(recorder, tmp_path):
    rec = recorder("--no-sched", "--", prog("many_sites"), 4, "--wait",
                   stdin=subprocess.PIPE)
    # the recorder's stdout is the program's: read it through the recording
    assert rec.proc.stdout.readline().startswith("pid=")
    w = Waiting(rec.proc, 4)
    assert w.enabled
    w.round(0)
    check_ok(ctl("stop"))
    assert not links_to(paths()), links_to(paths())
    w.round(1)                     # stopped: not recorded
    assert not w.enabled           # the semaphore went back to 0
    check_ok(ctl("start"))
    w.round(2)
    assert w.enabled
    w.round(3)
    rec.wait(timeout=120)   # closes stdin: the program has exited anyway
    check_exact(rec.trace(), [0, 2, 3])
    assert not links_to(paths())


def test_attach_to_a_running_process(recorder, spawn):
    p = spawn(prog("many_sites"), 3, "--wait", stdin=subprocess.PIPE)
    assert p.stdout.readline().startswith(f"pid={p.pid} sites={2 * N}")
    w = Waiting(p, 3)
    assert not w.enabled
    w.round(0)                     # not traced
    rec = recorder("--no-sched", "-p", p.pid)
    wait_for(lambda: rec.proc.poll() is not None or in_poll(rec.proc.pid),
             what="the recorder to attach")
    assert rec.proc.poll() is None, rec.proc.communicate()
    w.round(1)
    assert w.enabled
    w.round(2)
    p.stdin.close()
    p.wait(timeout=60)
    rec.wait(timeout=120)
    check_exact(rec.trace(), [1, 2])
    assert not links_to(paths())
