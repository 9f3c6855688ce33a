#!/usr/bin/env bash
# make bench: the cost of a probe site, measured against peers in the same
# run (the same site built with a 1-byte nop; no tracer at all), and whether
# one thread at 1 million events per second loses anything.
# Prints a table; numbers vary with the machine's load, ratios less so.
set -euo pipefail
cd "$(dirname "$0")/.."
B=build/bench
T=build/tracebpf
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
if [ "$(id -u)" != 0 ]; then
  echo "bench: recording needs root: run 'sudo make bench'" >&2; exit 1
fi
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ns() { sed -n 's/.*ns_per_hit=\([0-9.]*\).*/\1/p'; }

runs=${BENCH_RUNS:-5}
N_OFF=${BENCH_N_OFF:-200000000}
N_ON=${BENCH_N_ON:-1000000}

echo "tracebpf bench ($(nproc) CPUs, kernel $(uname -r)), medians of $runs runs"
off=$(for i in $(seq "$runs"); do "$B/probe_cost" "$N_OFF" | ns; done | median)
echo "disabled site (no tracer)              : ${off} ns/hit"
# A recording stopped with tracebpf ctl stop (--paused: stopped from the
# start) has no uprobe attached: the peer is the disabled site above.
paused=$(for i in $(seq "$runs"); do
  "$T" record -q --no-json --paused -o "$out/pp.tbt" -- "$B/probe_cost" "$N_OFF" 2>"$out/err" | ns
done | median)
echo "site while recording is stopped (ctl)  : ${paused} ns/hit"
awk -v a="$paused" -v b="$off" 'BEGIN { printf "ratio stopped / disabled                : %.2fx\n", a / b }'
on5=$(for i in $(seq "$runs"); do
  "$T" record -q --no-json -o "$out/p5.tbt" -- "$B/probe_cost" "$N_ON" 2>"$out/err" | ns
  grep -q " 0 dropped" "$out/err" || echo "bench: WARNING: drops: $(cat "$out/err")" >&2
done | median)
echo "enabled site, 5-byte nop, recorded     : ${on5} ns/hit"
on1=$(for i in $(seq "$runs"); do
  "$T" record -q --no-json -o "$out/p1.tbt" -- "$B/probe_cost_nop1" "$N_ON" 2>"$out/err" | ns
done | median)
echo "enabled site, 1-byte nop, recorded     : ${on1} ns/hit"
awk -v a="$on1" -v b="$on5" 'BEGIN { printf "ratio 1-byte / 5-byte                  : %.2fx\n", a / b }'

# Peer: the cheapest possible BPF consumer of the same site (bpftrace
# counting hits, no record written), in the same run: what the uprobe entry
# itself costs on this machine right now. tracebpf's overhead is the rest.
if ! command -v bpftrace >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bpftrace >/dev/null 2>&1 || true
fi
if command -v bpftrace >/dev/null; then
  mountpoint -q /sys/kernel/tracing || mount -t tracefs tracefs /sys/kernel/tracing
  bpftrace -e "usdt:$PWD/$B/probe_cost:tracebpf:event { @c = count(); }" >"$out/bt" 2>&1 &
  btpid=$!
  # wait until bpftrace has attached (it prints "Attaching N probes...")
  for i in $(seq 100); do grep -q Attaching "$out/bt" 2>/dev/null && break; sleep 0.1; done
  sleep 0.5
  bt=$(for i in $(seq "$runs"); do "$B/probe_cost" "$N_ON" | ns; done | median)
  kill -INT "$btpid"; wait "$btpid" 2>/dev/null || true
  echo "peer: bpftrace count() on the same site: ${bt} ns/hit"
  awk -v a="$on5" -v b="$bt" 'BEGIN { printf "ratio tracebpf record / bpftrace count : %.2fx\n", a / b }'
else
  echo "peer: bpftrace not available, ratio skipped"
fi

rate=${BENCH_RATE:-1000000}
secs=${BENCH_SECS:-3}
"$T" record -q --no-json -o "$out/rate.tbt" -- "$B/rate" "$rate" "$secs" >"$out/rate.out" 2>"$out/rate.err"
emitted=$(sed -n 's/.*emitted=\([0-9]*\).*/\1/p' "$out/rate.out")
summary=$(grep "recorded" "$out/rate.err")
dropped=$(echo "$summary" | sed -n 's/.* \([0-9]*\) dropped.*/\1/p')
recs=$(echo "$summary" | sed -n 's/.*recorded \([0-9]*\) records.*/\1/p')
bytes=$(stat -c %s "$out/rate.tbt")
echo "one thread at $rate ev/s for ${secs}s      : emitted $emitted, records $recs, dropped $dropped, file $bytes bytes"

# ---- scheduler events (issue #5): bench/sched.sh ----
bash bench/sched.sh
