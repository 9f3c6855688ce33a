#!/usr/bin/env python3
"""make bench: PostgreSQL's throughput with its USDT probes recorded.

pgbench (select-only, 4 clients, 2 threads) against a throwaway cluster
(tests/integration/pgcluster.py), in rounds A B C: untraced; recorded by
`tracebpf record --usdt=postgresql -p POSTMASTER` (the catalog: query
slices with their text, stages, transactions, lock waits); and bpftrace
counting hits of the same probe names, attached by path. The clients
connect after each tracer attached, so their backends are forked under
it. Prints each one's median tps and the ratios to untraced, per round
and median. BENCH_USDT_ROUNDS (default 3), BENCH_USDT_SECONDS (8)."""
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))
from pgcluster import PgCluster  # noqa: E402
from sdtnotes import semaphore_of  # noqa: E402

TRACEBPF = str(ROOT / "build" / "tracebpf")
ROUNDS = int(os.environ.get("BENCH_USDT_ROUNDS", "3"))
SECONDS = int(os.environ.get("BENCH_USDT_SECONDS", "8"))


def catalog_probes():
    """provider:name of every probe the postgresql catalog names."""
    text = (ROOT / "tools" / "usdt" / "postgresql.usdt").read_text()
    return sorted(set(re.findall(r"\b(postgresql:[a-z_]+)", text)))


def pgbench(pg, *args):
    return pg._run("pgbench", "-h", str(pg.sockdir), "-p", str(pg.port), *args,
                   "postgres", timeout=SECONDS + 120)


def tps(pg):
    p = pgbench(pg, "-S", "-n", "-c", "4", "-j", "2", "-T", str(SECONDS))
    m = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", p.stdout)
    if not m:
        raise RuntimeError(f"pgbench said: {p.stdout[-500:]} {p.stderr[-500:]}")
    return float(m[1])


def wait_attached(pg, proc):
    for _ in range(600):
        if proc.poll() is not None:
            raise RuntimeError(f"the tracer exited: {proc.stderr.read()[-500:]}")
        if semaphore_of(pg.postmaster_pid, pg.bin, "query__start"):
            return
        time.sleep(0.05)
    raise RuntimeError("the tracer did not attach")


def traced(pg, cmd):
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_attached(pg, proc)
        return tps(pg)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=300)


def main():
    if os.geteuid() != 0:
        sys.exit("bench: recording needs root: run 'sudo make bench'")
    if not shutil.which("bpftrace"):
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                        "bpftrace"], env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    probes = catalog_probes()
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"tb-bench-usdt-{os.getpid()}"
    out.mkdir()
    res = {"untraced": [], "tracebpf": [], "bpftrace": []}
    with PgCluster(settings={"max_connections": "20"}) as pg:
        pgbench(pg, "-i", "-q", "-s", "2")
        script = " ".join(f"usdt:{pg.bin}:{p} {{ @[probe] = count(); }}" for p in probes)
        for r in range(ROUNDS):
            res["untraced"].append(tps(pg))
            res["tracebpf"].append(traced(pg, [TRACEBPF, "record", "-q", "--no-sched",
                                                "--no-json", "-o", str(out / f"pg{r}.tbt"),
                                                "--usdt=postgresql", "-p",
                                                str(pg.postmaster_pid)]))
            if shutil.which("bpftrace"):
                res["bpftrace"].append(traced(pg, ["bpftrace", "-e", script]))
    shutil.rmtree(out, ignore_errors=True)
    base = res["untraced"]
    print(f"pgbench -S, 4 clients, {SECONDS} s, {ROUNDS} rounds ({len(probes)} probe names "
          f"of the postgresql catalog)")
    for k, v in res.items():
        if not v:
            print(f"  {k:<9}: skipped (bpftrace not installed)")
            continue
        ratios = [a / b for a, b in zip(v, base)]
        print(f"  {k:<9}: {statistics.median(v):9.0f} tps (rounds {', '.join(f'{x:.0f}' for x in v)}); "
              f"/ untraced {statistics.median(ratios):.3f} (rounds "
              f"{', '.join(f'{x:.3f}' for x in ratios)})")


if __name__ == "__main__":
    main()
