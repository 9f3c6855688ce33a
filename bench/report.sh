#!/usr/bin/env bash
# bench/report.sh [RUNS] - events/s and peak RSS of `tracebpf report` (and of
# `tracebpf convert -o /dev/null`, the same model with the JSON writer) on
# two ~10 M-event traces: 10 M instants from two threads (bench/rate) and
# about 10 M slice, instant and counter events (tests/progs/report_nest:
# three nested levels); and on the largest trace two threads make here,
# 54 M 2-integer instants in about 2 s (bench/fast_trace.sh). Records them
# first (root) into $TMPDIR unless they are there. Prints, per run, user
# CPU seconds and events/s over them, wall seconds and events/s over them
# (the machine may be shared: wall time varies more), and peak RSS; then
# the CPU time per record of the model's stages (build/bench/model_cost);
# last, report's median wall and CPU (user + system) seconds on the
# largest trace (goal <= 5 s).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/stats.sh
. bench/fast_trace.sh
runs=${1:-3}
dir=${TMPDIR:-/tmp}
tb=build/tracebpf
instants=$dir/report-bench-instants.tbt
slices=$dir/report-bench-slices.tbt
fast=$dir/report-bench-fast.tbt

[ -f "$instants" ] || $tb record -q --no-sched --no-json -o "$instants" -- \
  build/bench/rate 1000000 10 2 2 >/dev/null
# 64M rings: no drops at full speed, so every slice is complete
[ -f "$slices" ] || $tb record -q --no-sched --no-json -b 64M -o "$slices" -- \
  build/progs/report_nest 2 420000 0 >/dev/null
fast_trace "$fast"

events() { $tb report --json "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["events"])'; }

measure() { # $1 = label, $2 = events, the rest = the command
  local label=$1 n=$2 log
  shift 2
  log=$(mktemp)
  for _ in $(seq "$runs"); do
    /usr/bin/time -v "$@" >/dev/null 2>"$log"
    awk -v l="$label" -v n="$n" -F': ' '
      /User time/ {u = $2} /Maximum resident/ {rss = $2}
      /Elapsed \(wall clock\)/ {k = split($2, f, ":"); w = f[k] + (k > 1 ? 60 * f[k - 1] : 0)}
      END {printf "%-22s %5.2f s user %6.2f M/s  %5.2f s wall %6.2f M/s  %6.1f MiB peak RSS\n",
                  l, u, n / u / 1e6, w, n / w / 1e6, rss / 1024}' "$log"
  done
  rm -f "$log"
}

for t in "$instants" "$slices" "$fast"; do
  n=$(events "$t")
  echo "== $(basename "$t"): $n events"
  measure "report" "$n" $tb report "$t"
  measure "report --json" "$n" $tb report --json "$t"
  measure "convert -o /dev/null" "$n" $tb convert "$t" -o /dev/null
  # the model's own stages: read, + merge, + model (a sink doing nothing)
  build/bench/model_cost "$t"
done

# report on the largest trace: the median of $runs runs (goal <= 5 s)
log=$(mktemp)
: >"$log.w"; : >"$log.c"
for _ in $(seq "$runs"); do
  /usr/bin/time -f '%e %U %S' -o "$log" $tb report "$fast" >/dev/null
  read -r w u s <"$log"
  echo "$w" >>"$log.w"
  awk -v u="$u" -v s="$s" 'BEGIN { print u + s }' >>"$log.c"
done
printf "report, %s: %s s wall (median of %d; goal <= 5 s), %s s CPU (user + system)\n" \
  "$(basename "$fast")" "$(median <"$log.w")" "$runs" "$(median <"$log.c")"
rm -f "$log" "$log.w" "$log.c"
