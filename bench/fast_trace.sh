#!/usr/bin/env bash
# bench/fast_trace.sh (sourced by bench/convert.sh and bench/report.sh):
# the largest trace two threads make here, to time what reads it.
#
# fast_trace FILE [N]: records FILE unless it exists, with the recorder's
# defaults but the scheduler: `record --no-sched --no-json -- probe_cost
# N instant2 2` with PROBE_COST_FAST=1, two threads emitting 2-integer
# instants in a tight loop through the fast path, N each (default
# BENCH_FAST_TRACE_N, 27 M: about 2 s, 54 M records, 18 MiB here).
# Says what it recorded; warns of drops.
fast_trace() {
  local file=$1 n=${2:-${BENCH_FAST_TRACE_N:-27000000}} err
  [ -f "$file" ] && return 0
  err=$(mktemp)
  if ! PROBE_COST_FAST=1 build/tracebpf record -q --no-sched --no-json -o "$file" -- \
      build/bench/probe_cost "$n" instant2 2 >/dev/null 2>"$err"; then
    cat "$err" >&2; rm -f "$err" "$file"; return 1
  fi
  grep -q " 0 dropped" "$err" ||
    echo "bench: WARNING: fast trace: $(grep '^tracebpf: recorded' "$err")" >&2
  rm -f "$err"
}
