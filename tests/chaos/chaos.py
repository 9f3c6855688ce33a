#!/usr/bin/env python3
"""The chaos run: `make chaos DURATION=600` (make test runs 20 s, make test-full 600 s).

Rounds of a few seconds each. A round starts chaos_app processes
(tests/progs/chaos_app.c: threads that churn, children that fork and exec,
a library dlopened over and over; every event numbered per stream), records
them with `tracebpf record --` and `record -p` (sometimes two recorders of
one process, sometimes an output on a tmpfs that fills up), and meanwhile,
at random:
  - SIGKILLs programs, recorders and `tracebpf ctl` commands;
  - sends `ctl stop` and `ctl start`;
  - starts a second recorder.
After each round, with every recorder ended:
  - every trace file reads (`tracebpf convert`, exit 0), and Perfetto's
    trace processor (../shared/perfetto/, as the integration tests use it)
    imports its JSON without a complaint of severity error or data_loss
    (the recordings have no scheduler events and the program only
    instants: docs/output.md, "What Perfetto's trace processor reports",
    leaves none);
  - each stream's events are consecutive numbers, except where the file
    says why: a gap mark of its thread (or of all) or a stopped window
    overlapping the missing ones; none twice;
  - no process is left stopped (state T);
  - no BPF program, map or link outlives its recorder (bpftool against the
    baseline taken before the first round), and no fast-path session or
    link is left in /sys/fs/bpf/tracebpf.
Ends with "N passed, N failed" (one check per invariant per round); seed
with CHAOS_SEED to replay a run's choices. A round starts only if the
longest so far (with its checks) still fits in DURATION, so the run ends
within it, after one round at least.
"""
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TB = os.path.join(ROOT, "build", "tracebpf")
APP = os.path.join(ROOT, "build", "progs", "chaos_app")
LIB = os.path.join(ROOT, "build", "progs", "libchaosdl.so")
TRACE_PROCESSOR = os.path.join(os.path.dirname(ROOT), "shared", "perfetto",
                               "trace_processor_shell")
FAST_ROOT = "/sys/fs/bpf/tracebpf"
ROUND_S = 6.0
MARGIN_NS = 200 * 10**6
EDGE_NS = 10**6


def bpf_ids():
    """{kind: {id: name}} of every BPF program, map and link."""
    out = {}
    for kind in ("prog", "map", "link"):
        p = subprocess.run(["bpftool", "-j", kind, "show"], capture_output=True, text=True,
                           timeout=60)
        items = json.loads(p.stdout or "[]") if p.returncode == 0 else []
        out[kind] = {i["id"]: i.get("name", i.get("type", "?")) for i in items}
    return out


def wait_gone(pids, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        if not any(os.path.exists(f"/proc/{p}") for p in pids):
            return True
        time.sleep(0.05)
    return False


class Round:
    def __init__(self, n, rng, work, tmpfs):
        self.n, self.rng, self.work, self.tmpfs = n, rng, work, tmpfs
        self.apps, self.recs, self.ctls, self.pending = [], [], [], []
        self.actions = {"kill-app": 0, "kill-rec": 0, "kill-ctl": 0, "stop": 0,
                        "start": 0, "second": 0, "disk": 0, "filled": 0}

    # ---- processes ----
    def app(self, secs):
        p = subprocess.Popen([APP, str(secs), LIB], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        self.apps.append(p)
        return p

    def record(self, *args, small_disk=False):
        d = self.tmpfs if small_disk else self.work
        out = os.path.join(d, f"r{self.n}-{len(self.recs)}.tbt")
        err = open(os.path.join(self.work, f"r{self.n}-{len(self.recs)}.err"), "w")
        p = subprocess.Popen([TB, "record", "-q", "--no-json", "--no-sched", "-o", out,
                              *map(str, args)], stdout=subprocess.DEVNULL, stderr=err,
                             start_new_session=True)
        self.recs.append({"p": p, "out": out, "err": err.name, "killed": False,
                          "small": small_disk, "cmd": args[0] == "--"})
        return p

    def live_recs(self):
        return [r for r in self.recs if r["p"].poll() is None]

    # ---- the random actions ----
    def act(self):
        r = self.rng.random()
        live = self.live_recs()
        now = time.time()
        for t, rec in [x for x in self.pending if x[0] <= now]:
            self.pending.remove((t, rec))
            if rec["p"].poll() is None:
                self.ctl(rec, "start", kill=self.rng.random() < 0.15)
        if r < 0.2 and live:
            rec = self.rng.choice(live)
            self.ctl(rec, "stop", kill=self.rng.random() < 0.15)
            # started again a moment later (a stop that stays is rarer)
            if self.rng.random() < 0.85:
                self.pending.append((now + 0.2 + self.rng.random() * 0.8, rec))
        elif r < 0.45:
            self.kill_app_process()
        elif r < 0.52 and live:
            rec = self.rng.choice(live)
            rec["p"].kill()
            rec["killed"] = True
            self.actions["kill-rec"] += 1
        elif r < 0.65:
            leaders, others = self.app_pids()
            if leaders:
                self.record("-p", self.rng.choice(leaders))
                self.actions["second"] += 1

    def ctl(self, rec, what, kill=False):
        p = subprocess.Popen([TB, "ctl", "-r", str(rec["p"].pid), what],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.ctls.append(p)
        if kill:
            time.sleep(self.rng.random() * 0.05)
            p.kill()
            self.actions["kill-ctl"] += 1
        else:
            self.actions[what] += 1

    def groups(self):
        """Process groups of the round's programs: the -p targets', and the
        `record --` recorders' (their command runs in theirs)."""
        return {a.pid for a in self.apps} | {r["p"].pid for r in self.recs if r["cmd"]}

    def app_pids(self):
        """(leaders, others): live chaos_app processes of the round."""
        groups, leaders, others = self.groups(), [], []
        for x in os.listdir("/proc"):
            try:
                pid = int(x)
                if os.getpgid(pid) in groups and \
                        os.path.basename(os.readlink(f"/proc/{x}/exe")) == "chaos_app":
                    (leaders if pid in groups or self.is_cmd(pid) else others).append(pid)
            except (ValueError, OSError):
                continue
        return leaders, others

    def is_cmd(self, pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return False
        return any(r["p"].pid == ppid for r in self.recs)

    def kill_app_process(self):
        """SIGKILL one chaos_app process: mostly a child, sometimes a
        program itself."""
        leaders, others = self.app_pids()
        pick = others if others and self.rng.random() < 0.8 else leaders or others
        if pick:
            try:
                os.kill(self.rng.choice(pick), signal.SIGKILL)
                self.actions["kill-app"] += 1
            except OSError:
                pass

    def run(self):
        self.record("--", APP, int(ROUND_S) + 2, LIB,
                    small_disk=self.rng.random() < 0.3)
        if self.recs[-1]["small"]:
            self.actions["disk"] += 1
        target = self.app(int(ROUND_S) + 2)
        time.sleep(0.2)
        self.record("-p", target.pid)
        end = time.time() + ROUND_S
        while time.time() < end:
            time.sleep(0.1 + self.rng.random() * 0.4)
            self.act()

    def end(self):
        for c in self.ctls:
            try:
                c.wait(timeout=30)
            except subprocess.TimeoutExpired:
                c.kill()
        for r in self.recs:
            if r["p"].poll() is None:
                r["p"].send_signal(signal.SIGINT)
        for r in self.recs:
            try:
                r["p"].wait(timeout=120)
            except subprocess.TimeoutExpired:
                r["p"].kill()
                r["p"].wait()
                r["hung"] = True


def stopped_processes(groups):
    """Processes of the round's process groups in state T (stopped)."""
    found = []
    for x in os.listdir("/proc"):
        if not x.isdigit():
            continue
        try:
            if os.getpgid(int(x)) not in groups:
                continue
            with open(f"/proc/{x}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state in ("T", "t"):
            found.append(int(x))
    return found


GAP = re.compile(r"^(\d+)\.(\d+) \[.*\] \S+ GAP application records=\d+ until=(\d+)\.(\d+) "
                 r"threads=(\S+)")


def gaps_of(tbt):
    """[(from_ns, until_ns, tids or None for all)] of the file's app gaps."""
    p = subprocess.run([TB, "dump", tbt], capture_output=True, text=True, timeout=600)
    out = []
    for line in p.stdout.splitlines():
        m = GAP.match(line)
        if m:
            t0 = int(m[1]) * 10**9 + int(m[2])
            t1 = int(m[3]) * 10**9 + int(m[4])
            names = m[5].split(",")
            tids = None if "all" in names or "others" in names else \
                {int(t) for t in names if t.isdigit()}
            out.append((t0, t1, tids))
    return out


TOTAL = {"streams": 0, "events": 0, "gaps": 0, "stops": 0}


def perfetto_complaints(js):
    """What Perfetto's trace processor could not take of the JSON: its stats
    rows of severity error or data_loss ("name=value"), or why it failed."""
    if not os.access(TRACE_PROCESSOR, os.X_OK):
        return [f"not found at {TRACE_PROCESSOR}"]
    p = subprocess.run([TRACE_PROCESSOR, "query", js,
                        "select name || '=' || value from stats where value > 0 and "
                        "severity in ('error', 'data_loss')"],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        return [f"exit {p.returncode}: {p.stderr.strip()[-300:]}"]
    return [line.strip('"') for line in p.stdout.splitlines()[1:]]


def check_file(rec, work):
    """Problems with one recording's file: it reads, and its streams."""
    tbt = rec["out"]
    if not os.path.exists(tbt):
        return ([] if rec["killed"] else [f"{tbt}: no file"]), None
    js = os.path.join(work, os.path.basename(tbt) + ".json")
    p = subprocess.run([TB, "convert", tbt, "-o", js], capture_output=True, text=True,
                       timeout=600)
    if p.returncode != 0:
        with open(rec["err"]) as f:
            said = f.read().strip()[-300:]
        return [f"{tbt}: convert exit {p.returncode}: {p.stderr.strip()[:300]} "
                f"(the recorder said: {said})"], None
    with open(js) as f:
        doc = json.load(f)
    complaints = perfetto_complaints(js)
    os.unlink(js)
    meta = doc.get("metadata", {})
    stops = [(w["from_ns"], w.get("to_ns", 2**63)) for w in meta.get("recording_stopped", [])]
    gaps = gaps_of(tbt)
    streams, spid = {}, {}
    pids = {e.get("pid") for e in doc["traceEvents"]}
    for e in doc["traceEvents"]:
        if e.get("name") == "seq" and e.get("ph") == "I" and e.get("cat") == "chaos":
            spid[e["args"]["s"]] = e["pid"]
            a = e["args"]
            streams.setdefault(a["s"], []).append((round(e["ts"] * 1000), a["seq"], e["tid"]))
    TOTAL["streams"] += len(streams)
    TOTAL["events"] += sum(len(v) for v in streams.values())
    TOTAL["gaps"] += len(gaps)
    TOTAL["stops"] += len(stops)
    problems = [f"{tbt}: trace processor: {c}" for c in complaints]
    for s, evs in streams.items():
        evs.sort()
        for (t0, q0, tid), (t1, q1, _) in zip(evs, evs[1:]):
            if q1 <= q0:
                problems.append(f"{tbt}: stream {s:#x}: {q1} after {q0} (twice or reordered)")
                break
            if q1 == q0 + 1:
                continue
            lo, hi = t0 - EDGE_NS, t1 + EDGE_NS
            explained = any(a < hi and b > lo for a, b in stops) or \
                any(g0 < hi and g1 > lo and (tids is None or tid in tids)
                    for g0, g1, tids in gaps)
            if not explained:
                problems.append(f"{tbt}: stream {s:#x} (tid {tid}): {q0} then {q1} at "
                                f"{t0}..{t1} ns, unmarked")
                break
    excused = stops + [(g0, g1) for g0, g1, _ in gaps]
    return problems, {"file": tbt, "streams": streams, "excused": excused, "pids": pids,
                      "spid": spid}


def agree(a, b):
    """Two recordings of the same time: a stream in both holds the same
    events while both were recording (from the later one's first event to
    the earlier one's last), except where either was stopped or lost
    records. A recording that misses events another one has shows here,
    also when what it misses is the end of a stream."""
    def span(info):
        ts = [e[0] for v in info["streams"].values() for e in v]
        return (min(ts), max(ts)) if ts else (0, -1)
    (a0, a1), (b0, b1) = span(a), span(b)
    # a margin at both ends: a recording's first events depend on when each
    # of its probes was attached, and the sample a thread is writing when
    # a recorder ends (or is killed, which loses its last flush) is lost
    lo, hi = max(a0, b0) + MARGIN_NS, min(a1, b1) - MARGIN_NS
    excused = a["excused"] + b["excused"]

    # an event's time differs between two recordings when one took it
    # from its ring (stamped in the application) and the other from its
    # probe (stamped in BPF, later): events within EDGE_NS of an edge may be
    # on either side of it
    def inside(t):
        return lo + EDGE_NS <= t <= hi - EDGE_NS and \
            not any(x - EDGE_NS <= t <= y + EDGE_NS for x, y in excused)
    # the streams of processes both recorded (a stream one of them has no
    # event of is compared too: a recording that lost a thread's events
    # after its first ones has nothing of it in the window)
    both = {s for s in set(a["streams"]) | set(b["streams"])
            if a["spid"].get(s, b["spid"].get(s)) in a["pids"] & b["pids"]}
    for s in both:
        ea = {q for t, q, _ in a["streams"].get(s, []) if inside(t)}
        eb = {q for t, q, _ in b["streams"].get(s, []) if inside(t)}
        if ea != eb:
            only = sorted(ea ^ eb)
            at = [t for t, q, _ in a["streams"].get(s, []) + b["streams"].get(s, [])
                  if q == only[0]][0]
            near = min((min(abs(at - x), abs(at - y)), x, y) for x, y in excused) \
                if excused else None
            return [f"{a['file']} and {b['file']}: stream {s:#x}: {len(ea - eb)} events only "
                    f"in the first, {len(eb - ea)} only in the second (from seq {only[0]} "
                    f"at {at} ns; nearest stop or gap: {near}; window {lo}..{hi})"]
    return []


def check_round(rnd, work, base):
    """{invariant: [problems]} after the round's recorders ended."""
    res = {"files": [], "streams": [], "agree": [], "stopped": [], "bpf": []}
    infos = []
    for r in rnd.recs:
        if r.get("hung"):
            res["files"].append(f"recorder {r['p'].pid} did not end on SIGINT")
        if r["small"] and r["p"].returncode not in (0, -signal.SIGKILL):
            # a full disk ends the recording with exit 1 and says why
            with open(r["err"]) as f:
                said = f.read()
            if "No space left on device" in said and r["p"].returncode == 1:
                rnd.actions["filled"] += 1
            else:
                res["files"].append(f"recorder on the small disk: exit {r['p'].returncode}: "
                                    f"{said.strip()[-300:]}")
        problems, info = check_file(r, work)
        for p in problems:
            (res["files"] if "convert" in p or "no file" in p else res["streams"]).append(p)
        if info:
            infos.append(info)
    for i, a in enumerate(infos):
        for b in infos[i + 1:]:
            res["agree"] += agree(a, b)
    time.sleep(1.0)   # the releasers' SIGCONT rounds (0.5 s)
    groups = rnd.groups()
    st = stopped_processes(groups)
    if st:
        res["stopped"].append(f"stopped: {st}")
    for g in groups:
        try:
            os.killpg(g, signal.SIGKILL)
        except OSError:
            pass
    for a in rnd.apps:
        a.wait()
    wait_gone([r["p"].pid for r in rnd.recs])
    deadline = time.time() + 20
    while True:
        now = bpf_ids()
        extra = {k: {i: n for i, n in now[k].items() if i not in base[k]} for k in now}
        left = os.listdir(FAST_ROOT) if os.path.isdir(FAST_ROOT) else []
        if not any(extra.values()) and not left:
            break
        if time.time() > deadline:
            res["bpf"].append(f"left: {extra} {FAST_ROOT}: {left}")
            break
        time.sleep(0.2)
    return res


def main():
    duration = float(sys.argv[1]) if len(sys.argv) > 1 else 60
    seed = int(os.environ.get("CHAOS_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    for path in (TB, APP, LIB):
        if not os.path.exists(path):
            print(f"chaos: {path} is missing: run make first")
            print("0 passed, 1 failed")
            return 1
    work = tempfile.mkdtemp(prefix="tb-chaos-")
    tmpfs = os.path.join(work, "small")
    os.mkdir(tmpfs)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", tmpfs], check=True)
    print(f"chaos: {duration:.0f} s, seed {seed} (CHAOS_SEED={seed} replays it)")
    base = bpf_ids()
    passed = failed = 0
    end = time.time() + duration
    n = 0
    longest = 0.0   # a round with its checks: one starts only if it fits
    try:
        while n == 0 or time.time() + longest <= end:
            t0 = time.time()
            rnd = Round(n, rng, work, tmpfs)
            rnd.run()
            rnd.end()
            for k in TOTAL:
                TOTAL[k] = 0
            res = check_round(rnd, work, base)
            bad = {k: v for k, v in res.items() if v}
            passed += len(res) - len(bad)
            failed += len(bad)
            acts = " ".join(f"{k}={v}" for k, v in rnd.actions.items() if v)
            seen = " ".join(f"{k}={v}" for k, v in TOTAL.items())
            print(f"round {n}: {len(rnd.recs)} recordings, {acts}; checked {seen}: "
                  f"{'ok' if not bad else 'FAILED'}")
            for k, v in bad.items():
                for p in v[:5]:
                    print(f"  {k}: {p}")
            for f in os.listdir(tmpfs):
                os.unlink(os.path.join(tmpfs, f))
            for f in os.listdir(work):
                if f.endswith((".tbt", ".old", ".err")):
                    os.unlink(os.path.join(work, f))
            n += 1
            longest = max(longest, time.time() - t0)
    finally:
        subprocess.run(["umount", tmpfs])
        shutil.rmtree(work, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
