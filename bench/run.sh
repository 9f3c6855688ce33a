#!/usr/bin/env bash
# make bench: every figure against a peer measured in the same run.
#   the probe site   disabled site against the empty loop; memory dumps
#                    untraced against the empty loop; a recording
#                    stopped with ctl; a site of a category that is off
#                    while recording; the 5-byte against the 1-byte nop
#   bench/hotpath.sh a recorded hit against the floor program and bpftrace
#   bench/lttng.sh   the same 2-integer event recorded by LTTng-UST
#   bench/fast.sh    the fast path from a thread's first hit with the
#                    defaults, once its ring is mapped, against LTTng-UST
#                    and the ring protocol alone (fast_floor.c); the share
#                    of events on the slow path
#   bench/burst.sh   100 and 500 threads in bursts (1 M and 5 M events in
#                    1 s), each tracer with its defaults: tracebpf's lost
#                    events against LTTng-UST's discarded ones
#   bench/forks.sh   a server forking 2,000 children of 1,000 events
#                    (forks.c), untraced, recorded and recorded on the
#                    probes only; how soon a child's events take its ring
#   bench/sites.py   attach and detach with 20, 200 and 2,000 sites
#   bench/usdt.py    pgbench's tps untraced, recorded with
#                    --usdt=postgresql, and with bpftrace counting the
#                    same probes
#   bench/rate.sh    1 M events/s from two threads, 60 s
#   bench/sched.sh   scheduler events against trace-cmd
#   bench/convert.sh convert's events/s and memory: instants and slices,
#                    1 M to 23 M events, and record -o - | convert -;
#                    54 M fast-path instants to /dev/null (goal >= 10 M
#                    events/s); Perfetto's trace processor importing the
#                    10 s JSONs, beside convert writing them
#   bench/perfetto.sh convert to Perfetto's format: events/s, bytes per
#                    event, plain and compressed, against the JSON; trace
#                    processor importing each
#   bench/busy.sh    one thread at 1.5 M events/s: the share of its events
#                    on the fast path, default ring against a 64M one
#   bench/report.sh  report's events/s and memory on 10 M instants,
#                    10 M nested slices and 54 M fast-path instants (goal
#                    <= 5 s), beside convert -o /dev/null
#   bench/testtime.sh how long the last make test took (goal <= 5 min)
# Numbers vary with the machine's load, ratios less so.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/stats.sh
B=build/bench
T=build/tracebpf
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
if [ "$(id -u)" != 0 ]; then
  echo "bench: recording needs root: run 'sudo make bench'" >&2; exit 1
fi
ns() { sed -n 's/.*ns_per_hit=\([0-9.]*\).*/\1/p'; }

runs=${BENCH_RUNS:-5}
N_OFF=${BENCH_N_OFF:-200000000}
N_ON=${BENCH_N_ON:-1000000}

echo "tracebpf bench ($(nproc) CPUs, kernel $(uname -r)), medians of $runs runs"
: >"$out/off"; : >"$out/empty"
for i in $(seq "$runs"); do
  "$B/probe_cost" "$N_OFF" empty | ns >>"$out/empty"
  "$B/probe_cost" "$N_OFF" instant2 | ns >>"$out/off"
done
off=$(median <"$out/off"); empty=$(median <"$out/empty")
echo "empty loop (no site)                    : ${empty} ns/iteration"
echo "disabled site (no tracer)               : ${off} ns/hit"
awk -v a="$off" -v b="$empty" 'BEGIN { printf "disabled - empty                        : %.2f ns (goal <= 1)\n", a - b }'
# Memory dumps, untraced (docs/api.md, "Memory dumps"): TRACE_MEMORY_DUMP()
# against the empty loop; a register and unregister pair; the first
# registration, which starts the dumping thread.
: >"$out/md"; : >"$out/mdreg"; : >"$out/mdfirst"
for i in $(seq "$runs"); do
  "$B/probe_cost" "$N_OFF" memdump | ns >>"$out/md"
  "$B/probe_cost" 10000000 memdump_reg >"$out/mdr"
  ns <"$out/mdr" >>"$out/mdreg"
  sed -n 's/^first_register_us=//p' "$out/mdr" >>"$out/mdfirst"
done
md=$(median <"$out/md")
awk -v a="$md" -v b="$empty" 'BEGIN { printf "TRACE_MEMORY_DUMP() untraced - empty    : %.2f ns\n", a - b }'
echo "memdump register + unregister (untraced): $(median <"$out/mdreg") ns"
echo "first memdump register (starts a thread): $(median <"$out/mdfirst") us"
# A recording stopped with tracebpf ctl stop (--paused: stopped from the
# start) has no uprobe attached: the peer is the disabled site above.
paused=$(for i in $(seq "$runs"); do
  "$T" record -q --no-json --paused -o "$out/pp.tbt" -- "$B/probe_cost" "$N_OFF" 2>"$out/err" | ns
done | median)
echo "site while recording is stopped (ctl)   : ${paused} ns/hit"
awk -v a="$paused" -v b="$off" 'BEGIN { printf "ratio stopped / disabled                : %.2fx\n", a / b }'
# A recording that records other categories: the semaphore is set, and
# each hit of the loop's site (category "bench", excluded) stops at its
# category check. Its peer is the empty loop.
catoff=$(for i in $(seq "$runs"); do
  "$T" record -q --no-json --no-sched --exclude-categories bench -o "$out/pc.tbt" -- \
    "$B/probe_cost" "$N_OFF" 2>"$out/err" | ns
done | median)
echo "site of a category that is off          : ${catoff} ns/hit"
awk -v a="$catoff" -v b="$empty" 'BEGIN { printf "category off - empty                    : %.2f ns (goal <= 2)\n", a - b }'
on5=$(for i in $(seq "$runs"); do
  "$T" record -q --no-json --no-sched -o "$out/p5.tbt" -- "$B/probe_cost" "$N_ON" 2>"$out/err" | ns
  grep -q " 0 dropped" "$out/err" || echo "bench: WARNING: drops: $(cat "$out/err")" >&2
done | median)
echo "enabled site, 5-byte nop, recorded      : ${on5} ns/hit"
on1=$(for i in $(seq "$runs"); do
  "$T" record -q --no-json --no-sched -o "$out/p1.tbt" -- "$B/probe_cost_nop1" "$N_ON" 2>"$out/err" | ns
done | median)
echo "enabled site, 1-byte nop, recorded      : ${on1} ns/hit"
awk -v a="$on1" -v b="$on5" 'BEGIN { printf "ratio 1-byte / 5-byte                   : %.2fx\n", a / b }'

bash bench/hotpath.sh
# a peer, not a part: its failure only skips its lines
bash bench/lttng.sh || echo "LTTng-UST enabled, recording            : skipped: bench/lttng.sh failed"
bash bench/fast.sh
bash bench/burst.sh
bash bench/forks.sh
python3 bench/sites.py
python3 bench/usdt.py || echo "PostgreSQL with --usdt=postgresql        : skipped: bench/usdt.py failed"
bash bench/rate.sh
bash bench/sched.sh
bash bench/busy.sh
bash bench/convert.sh
bash bench/perfetto.sh
bash bench/report.sh
bash bench/testtime.sh
