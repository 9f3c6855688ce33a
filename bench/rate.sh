#!/usr/bin/env bash
# bench/rate.sh (called by bench/run.sh): a sustained load. bench/rate
# emits BENCH_RATE (1,000,000) 2-integer events per second from two threads
# for BENCH_RATE_SECS (60) seconds; `tracebpf record -p` records it with its
# defaults (scheduler events on). Reported: events lost (goal 0), the
# recorder's own CPU time from /proc/PID/stat (utime + stime, not its
# children's) over the steady part of the run (goal <= 10% of one core),
# and its resident memory at the start and the end of that part (flat).
# Then the same for BENCH_RATE_CMP_SECS (15) seconds with --no-fast-path:
# on the fast path the recorder drains what the probes' traps did in the
# application before, so its CPU share is the price of the application's.
set -euo pipefail
cd "$(dirname "$0")/.."
T=build/tracebpf
rate=${BENCH_RATE:-1000000}
secs=${BENCH_RATE_SECS:-60}
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
hz=$(getconf CLK_TCK)
# utime + stime (fields 14 and 15; field 2 may hold spaces) and RSS in KiB
sample() {
  awk -v pid="$1" '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
  awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}
# run_rate SECS RECORD_OPTIONS LABEL
run_rate() {
  local secs=$1 opts=$2 label=$3
  build/bench/rate "$rate" $((secs + 4)) 2 2 >"$out/rate.out" &
  app=$!
  until grep -q pid= "$out/rate.out"; do sleep 0.05; done
  "$T" record -q --no-json $opts -o "$out/rate.tbt" -p "$app" -d "$secs" 2>"$out/rec.err" &
  rec=$!
  sleep 2
  read -r c1 m1 < <(sample "$rec" | paste -sd' ')
  t1=$(date +%s.%N)
  sleep $((secs - 4))
  read -r c2 m2 < <(sample "$rec" | paste -sd' ')
  t2=$(date +%s.%N)
  wait "$rec" || { cat "$out/rec.err" >&2; exit 1; }
  wait "$app"
  summary=$(grep "recorded" "$out/rec.err")
  recs=$(sed -n 's/.*recorded \([0-9]*\) records.*/\1/p' <<<"$summary")
  dropped=$(sed -n 's/.* \([0-9]*\) dropped.*/\1/p' <<<"$summary")
  awk -v c1="$c1" -v c2="$c2" -v t1="$t1" -v t2="$t2" -v hz="$hz" -v m1="$m1" -v m2="$m2" \
      -v rate="$rate" -v secs="$secs" -v recs="$recs" -v dropped="$dropped" -v label="$label" \
      -v bytes="$(stat -c %s "$out/rate.tbt")" 'BEGIN {
    cpu = 100 * (c2 - c1) / hz / (t2 - t1)
    printf "%d events/s from 2 threads, %d s, record -p%s: %d records, %d dropped (goal 0), %.1f MB\n",
      rate, secs, label, recs, dropped, bytes / 1e6
    printf "recorder CPU (own utime+stime)          : %.1f%% of one core (goal <= 10%%)\n", cpu
    printf "recorder RSS, %.0f s apart               : %d KiB -> %d KiB\n", t2 - t1, m1, m2 }'
}
run_rate "$secs" "" "  "
run_rate "${BENCH_RATE_CMP_SECS:-15}" --no-fast-path ", --no-fast-path"
