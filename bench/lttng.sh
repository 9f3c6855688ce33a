#!/usr/bin/env bash
# bench/lttng.sh (called by bench/run.sh): LTTng-UST as a peer of the
# probe site. bench/probe_cost_lttng.c is probe_cost's instant2 loop with an
# LTTng-UST tracepoint (bench:hit2, two 64-bit integers) in place of the
# tracebpf site. Each of BENCH_LTTNG_RUNS (11) runs measures, in turn:
#
#   enabled     an LTTng session records bench:* to a file in a temp dir
#               (`lttng create --output`, enable-channel, enable-event -u,
#               start, the loop of BENCH_LTTNG_N (2,000,000) events, stop,
#               destroy); then the same with two threads
#   disabled    the same loop with no session (the tracepoint's branch)
#   empty       the loop without a tracepoint
#   tracebpf    `tracebpf record --no-sched -- probe_cost N instant2` on the
#               fast path (PROBE_COST_FAST=1: timed once the ring is mapped,
#               a ring that holds the whole loop), so that tracebpf /
#               LTTng-UST is a paired ratio of this run
#
# The disabled and empty loops run BENCH_LTTNG_N_OFF (200,000,000) times.
# The channel's sub-buffers (BENCH_LTTNG_NSUBBUF x BENCH_LTTNG_SUBBUF, 16 x
# 8M per CPU, per-user buffers) hold a whole run: each run checks that
# LTTng discarded nothing and, with babeltrace2, that the trace holds
# exactly N events per thread. Reported: medians with their 95% bootstrap
# intervals (bench/stats.sh). Both stamp their events with
# CLOCK_MONOTONIC read in user space (the vDSO): tracebpf's fast path
# takes the time in the header, as LTTng-UST does.
#
# Installs liblttng-ust-dev, lttng-tools and babeltrace2 if missing, and
# starts a root session daemon if none runs (and ends it after). If LTTng
# cannot be had, prints "skipped: <reason>" and exits 0.
#
# By hand: bash bench/lttng.sh (root), after `make`; the program is left in
# build/bench/probe_cost_lttng.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/stats.sh
. bench/lttng_lib.sh
B=build/bench
T=build/tracebpf
P=$B/probe_cost_lttng
N=${BENCH_LTTNG_N:-2000000}
N_OFF=${BENCH_LTTNG_N_OFF:-200000000}
runs=${BENCH_LTTNG_RUNS:-11}
subbuf=${BENCH_LTTNG_SUBBUF:-8M}    # sub-buffer size and count, per CPU
nsubbuf=${BENCH_LTTNG_NSUBBUF:-16}
session=tracebpf-bench-$$
out=$(mktemp -d)
ns() { sed -n 's/.*ns_per_hit=\([0-9.]*\).*/\1/p'; }
rate() { sed -n 's/.*rate=\([0-9]*\).*/\1/p'; }

cleanup() { lttng_cleanup; rm -rf "$out"; }
trap cleanup EXIT

skip() { label "LTTng-UST enabled, recording"; echo "skipped: $1"; exit 0; }

# One recorded run of `probe_cost_lttng N instant2 THREADS`: prints the
# program's line; leaves "discarded counted" in $out/check.
run_enabled() {  # THREADS
  lttng_record "$subbuf" "$nsubbuf" "$P" "$N" instant2 "$1"
}

# Warns, and counts the run in $out/bad, unless it discarded nothing and
# its trace holds N x THREADS events.
check() {  # THREADS
  local d c
  read -r d c <"$out/check"
  if [ "$d" != 0 ] || { [ "$c" != - ] && [ "$c" != $((N * $1)) ]; }; then
    echo "bench: WARNING: LTTng-UST, $1 thread(s): $d discarded, $c of $((N * $1)) events in the trace" >&2
    echo "$1" >>"$out/bad"
  fi
}

run_tracebpf() {
  rm -f "$out"/tb.tbt*
  PROBE_COST_FAST=1 "$T" record -q --no-json --no-sched --fast-buffer-size 128M \
    -o "$out/tb.tbt" -- "$B/probe_cost" "$N" instant2 2>"$out/tb.err"
  grep -q " 0 dropped" "$out/tb.err" || echo "bench: WARNING: drops: $(cat "$out/tb.err")" >&2
}

measure() {
  local f
  for f in on on2 r1 r2 off empty tb bad; do : >"$out/$f"; done
  for _ in $(seq "$runs"); do
    run_enabled 1 >"$out/line"; check 1
    ns <"$out/line" >>"$out/on"; rate <"$out/line" >>"$out/r1"
    run_enabled 2 >"$out/line"; check 2
    ns <"$out/line" >>"$out/on2"; rate <"$out/line" >>"$out/r2"
    "$P" "$N_OFF" instant2 | ns >>"$out/off"
    "$P" "$N_OFF" empty | ns >>"$out/empty"
    if [ -x "$T" ]; then run_tracebpf | ns >>"$out/tb"; fi
  done
}

# "MEDIAN (95% interval LO-HI)" of FILE
summary() { printf '%s (95%% interval %s)' "$(median <"$1")" "$(interval <"$1")"; }
# the same for the paired ratios FILE_A / FILE_B
ratio() { printf '%.3fx (95%% interval %s)' "$(ratios "$1" "$2" | median)" "$(ratios "$1" "$2" | interval)"; }

# Did every recorded run keep all its events?
kept() {
  local how="babeltrace2 counted N x threads"
  command -v babeltrace2 >/dev/null || how="no babeltrace2 to count them"
  if [ -s "$out/bad" ]; then echo "LOST EVENTS in $(wc -l <"$out/bad") of $((2 * runs)) runs"
  else echo "0 discarded in all runs ($how)"; fi
}

report() {
  echo "LTTng-UST $(dpkg-query -W -f='${Version}' liblttng-ust-dev 2>/dev/null):" \
       "probe_cost_lttng $N instant2, $runs runs, sub-buffers $nsubbuf x $subbuf per CPU"
  label "LTTng-UST enabled, recording"
  echo "$(summary "$out/on") ns/event; $(kept)"
  label "LTTng-UST enabled, recording, 2 threads"
  echo "$(summary "$out/on2") ns/event per thread"
  label "LTTng-UST two threads / one"
  echo "$(ratio "$out/r2" "$out/r1") aggregate rate ($(median <"$out/r2") vs $(median <"$out/r1") events/s)"
  label "LTTng-UST disabled tracepoint"
  echo "$(summary "$out/off") ns/hit"
  label "LTTng-UST loop without a tracepoint"
  echo "$(summary "$out/empty") ns/iteration"
  label "ratio LTTng-UST disabled / empty"; ratio "$out/off" "$out/empty"; echo
  label "ratio LTTng-UST enabled / empty"; ratio "$out/on" "$out/empty"; echo
  if [ -s "$out/tb" ]; then
    label "ratio tracebpf fast path / LTTng-UST"
    echo "$(ratio "$out/tb" "$out/on"); tracebpf $(median <"$out/tb") ns/hit in the same runs"
  fi
}

lttng_ready || skip "$lttng_why"
lttng_build "$P" bench/probe_cost_lttng.c bench/probe_cost_lttng_tp.c || skip "$lttng_why"
lttng_start_sessiond || skip "$lttng_why"
measure
report
