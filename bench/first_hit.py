#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""bench/first_hit.py (called by bench/fast.sh): where a recorded loop's
time goes, read from the trace itself. Reads `tracebpf dump FILE` on stdin,
takes the instants of NAME (default bench:hit2) of the thread that has the
most of them, in the order the loop wrote them (argument i), and splits the
time between each event and the one before it:

  write   the intervals under STALL_NS (500 ns): the event written with
          nothing in the way
  stall   the longer intervals that end in an event on the fast path
          (`[fast]`): the thread stopped, mostly on a page it touched for
          the first time (docs/fast-path.md, "What a new ring costs"), at
          times preempted or interrupted
  slow    the longer intervals that end in an event that took its probe
          (the slow path: a trap, the BPF program, the recorder's ring)

Prints one line, each part in ns per event over the loop (so that they add
up to ns, the loop's own ns per event from the first event's time to the
last), with the count of each kind of long interval and its mean in us:
  ns=<x> write=<x> stall=<x> stalls=<n> stall_us=<x> slow=<x> slows=<n> slow_us=<x>
Exits 1 when the trace holds fewer than two such events."""
import collections
import sys

STALL_NS = 500


def events(lines, name):
    """{tid: [(i, ts_ns, fast)]} of NAME's instants."""
    by_tid = collections.defaultdict(list)
    for line in lines:
        f = line.split()
        # <sec.ns> [cpu] pid/tid I cat:name i=<i> j=<j> [fast]
        if len(f) < 7 or f[4] != "I" or f[5] != name or not f[6].startswith("i="):
            continue
        sec, _, ns = f[0].partition(".")
        by_tid[f[3]].append((int(f[6][2:]), int(sec) * 1000000000 + int(ns.ljust(9, "0")),
                             f[-1] == "[fast]"))
    return by_tid


def split(evs):
    evs.sort()
    n = len(evs) - 1
    parts = {"write": 0, "stall": 0, "slow": 0}
    counts = {"stall": 0, "slow": 0}
    for (_, t0, _), (_, t1, fast) in zip(evs, evs[1:]):
        d = t1 - t0
        kind = "write" if d < STALL_NS else "stall" if fast else "slow"
        parts[kind] += d
        if kind != "write":
            counts[kind] += 1
    span = evs[-1][1] - evs[0][1]

    def mean_us(k):
        return parts[k] / counts[k] / 1000 if counts[k] else 0.0
    return (f"ns={span / n:.2f} write={parts['write'] / n:.2f} stall={parts['stall'] / n:.2f} "
            f"stalls={counts['stall']} stall_us={mean_us('stall'):.2f} "
            f"slow={parts['slow'] / n:.2f} slows={counts['slow']} slow_us={mean_us('slow'):.2f}")


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "bench:hit2"
    by_tid = events(sys.stdin, name)
    evs = max(by_tid.values(), key=len, default=[])
    if len(evs) < 2:
        print(f"first_hit: fewer than two '{name}' instants in the dump", file=sys.stderr)
        return 1
    print(split(evs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
