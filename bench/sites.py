#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""bench/sites.py (called by bench/run.sh): how attaching and detaching
scale with the number of probe sites. For N in 20, 200 and 2,000 sites in
an executable plus as many in a shared library it links (the programs of
tests/progs/gen_many_sites.py, built here), medians of BENCH_SITES_RUNS
runs of:

  start    `record -- many_sites`: from starting the recorder to the
           program's first line (it runs only once every site is attached)
  exit     from the program's last line to the recorder's exit
  stop     `tracebpf ctl stop` while recording (every site detached)
  start    `tracebpf ctl start` (every site attached again)
  -p       `record -p PID`: from starting the recorder to its poll loop
           (everything attached)

Goals (2,000 + 2,000): start, exit and -p within 1 s, ctl stop and start
within 0.5 s each."""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TB = os.path.join(ROOT, "build", "tracebpf")
RUNS = int(os.environ.get("BENCH_SITES_RUNS", "5"))
CC = os.environ.get("CC", "cc")


def build(n, d):
    subprocess.run([sys.executable, os.path.join(ROOT, "tests/progs/gen_many_sites.py"),
                    str(n), d], check=True)
    inc = "-I" + os.path.join(ROOT, "lib/include")
    subprocess.run([CC, "-O2", inc, "-fPIC", "-shared", f"{d}/libmany_sites.c",
                    "-o", f"{d}/libmany_sites.so"], check=True)
    subprocess.run([CC, "-O2", inc, f"{d}/many_sites.c", f"-L{d}", "-lmany_sites",
                    "-Wl,-rpath,$ORIGIN", "-o", f"{d}/many_sites"], check=True)
    return f"{d}/many_sites"


def in_poll(pid):
    try:
        nr = open(f"/proc/{pid}/syscall").read().split()[0]
    except (OSError, IndexError):
        return False
    return nr in ("232", "281", "441")   # epoll_wait, epoll_pwait, epoll_pwait2


def readline(p, pattern):
    line = p.stdout.readline()
    if not re.match(pattern, line):
        raise SystemExit(f"bench: sites: unexpected line {line!r} (wanted {pattern})")
    return line


def record_run(exe, tmp):
    """start and exit latency, ctl stop and start of one recording."""
    t0 = time.monotonic()
    rec = subprocess.Popen([TB, "record", "-q", "--no-sched", "--no-json", "-o",
                            f"{tmp}/s.tbt", "--", exe, "2", "--wait"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
    readline(rec, r"pid=")
    start = time.monotonic() - t0
    readline(rec, r"ready enabled=1")
    t = time.monotonic()
    subprocess.run([TB, "ctl", "stop"], check=True, capture_output=True)
    stop = time.monotonic() - t
    t = time.monotonic()
    subprocess.run([TB, "ctl", "start"], check=True, capture_output=True)
    cstart = time.monotonic() - t
    rec.stdin.write("go\n")
    rec.stdin.flush()
    readline(rec, r"round=0")
    readline(rec, r"ready")
    rec.stdin.write("go\n")
    rec.stdin.flush()
    readline(rec, r"round=1")
    t = time.monotonic()
    rec.stdin.close()
    if rec.wait(timeout=120):
        raise SystemExit("bench: sites: tracebpf record failed")
    return start, time.monotonic() - t, stop, cstart


def attach_run(exe, tmp):
    """from `record -p` to the recorder's poll loop."""
    app = subprocess.Popen([exe, "1", "--wait"], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
    readline(app, r"pid=")
    readline(app, r"ready enabled=0")
    t0 = time.monotonic()
    rec = subprocess.Popen([TB, "record", "-q", "--no-sched", "--no-json", "-o",
                            f"{tmp}/p.tbt", "-p", str(app.pid)], stderr=subprocess.DEVNULL)
    while not in_poll(rec.pid):
        if rec.poll() is not None:
            raise SystemExit("bench: sites: tracebpf record -p failed")
        time.sleep(0.001)
    took = time.monotonic() - t0
    app.stdin.write("go\n")
    app.stdin.close()
    app.wait(timeout=60)
    rec.wait(timeout=120)
    return took


def main():
    with tempfile.TemporaryDirectory() as tmp:
        print(f"sites: executable + library, medians of {RUNS} runs (seconds)")
        print(f"{'sites':>12} {'start':>7} {'exit':>7} {'ctl stop':>9} {'ctl start':>10} "
              f"{'-p':>7}")
        for n in (20, 200, 2000):
            exe = build(n, f"{tmp}/s{n}")
            runs = [record_run(exe, tmp) for _ in range(RUNS)]
            att = [attach_run(exe, tmp) for _ in range(RUNS)]
            med = [statistics.median(col) for col in zip(*runs)]
            print(f"{n:>5} + {n:<5} {med[0]:7.3f} {med[1]:7.3f} {med[2]:9.3f} {med[3]:10.3f} "
                  f"{statistics.median(att):7.3f}")
        print("goals at 2000 + 2000: start, exit, -p <= 1 s; ctl stop, ctl start <= 0.5 s")


if __name__ == "__main__":
    main()
