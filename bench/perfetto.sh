#!/usr/bin/env bash
# bench/perfetto.sh (called by bench/run.sh): Perfetto's protobuf output
# (docs/perfetto.md) against the JSON, on the same traces, recorded once
# per run from bench/rate with two threads:
#   tight   2-int instants in a tight loop for 1 s (rate asks 100 M/s: as
#           many as the fast path takes)
#   i10     2-int instants at 1 M/s for 10 s
# Each is converted BENCH_PERFETTO_RUNS (3) times to .pftrace, to
# .pftrace --compress and to .json: events per second of wall-clock time
# and of CPU time (user + system, median), peak RSS, bytes per event
# (goals: plain <= 32 B and >= 20 M events/s, compressed <= 6 B and >= 8 M
# events/s, against 123 B for the JSON). Then Perfetto's trace processor
# (../shared/perfetto/) imports the .pftrace and the JSON of i10: its
# time, events per second and peak RSS for each, and the slices it made
# (every instant: a check that it took them all).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/stats.sh
T=build/tracebpf
R=build/bench/rate
TP=../shared/perfetto/trace_processor_shell
runs=${BENCH_PERFETTO_RUNS:-3}
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT

record() {   # record NAME RATE SECONDS: $out/NAME.tbt
  "$T" record -q --no-json --no-sched -o "$out/$1.tbt" -- "$R" "$2" "$3" 2 2 \
    >/dev/null 2>"$out/rec.err" || { cat "$out/rec.err" >&2; exit 1; }
}

# runs NAME EXT LABEL [OPTS...]: converts $out/NAME.tbt to $out/x.EXT
runs() {
  local name=$1 ext=$2 label=$3 n=0 i secs rss user sys bytes
  shift 3
  : >"$out/rates"; : >"$out/cpu"; : >"$out/rss"
  for i in $(seq "$runs"); do
    rm -f "$out/x.$ext"
    sync
    /usr/bin/time -f '%e %M %U %S' -o "$out/time" "$T" convert -v "$@" "$out/$name.tbt" \
      -o "$out/x.$ext" 2>"$out/conv.err" || { cat "$out/conv.err" >&2; exit 1; }
    n=$(sed -n 's/.*events, \([0-9]*\) trace events written.*/\1/p' "$out/conv.err")
    read -r secs rss user sys <"$out/time"
    awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.3f\n", n / s / 1e6 }' >>"$out/rates"
    awk -v n="$n" -v u="$user" -v s="$sys" 'BEGIN { printf "%.3f\n", n / (u + s) / 1e6 }' >>"$out/cpu"
    echo "$rss" >>"$out/rss"
  done
  bytes=$(stat -c %s "$out/x.$ext")
  awk -v label="$label" -v n="$n" -v med="$(median <"$out/rates")" -v runs="$runs" \
      -v cpu="$(median <"$out/cpu")" -v rss="$(sort -g "$out/rss" | tail -1)" -v b="$bytes" 'BEGIN {
    printf "perfetto, %s, %.1f M events: %.2f M events/s (median of %d; %.2f M per CPU second), peak RSS %.1f MB, %.1f B/event\n",
      label, n / 1e6, med, runs, cpu, rss / 1024, b / n }'
}

# tp FILE LABEL EVENTS: the trace processor's import of FILE, timed
tp() {
  local secs rss got
  if [ ! -x "$TP" ]; then echo "perfetto, import, $2: skipped: $TP not found"; return; fi
  sync
  /usr/bin/time -f '%e %M' -o "$out/time" "$TP" query "$1" \
    "select count(*) || ' slices' from slice" >"$out/tp.out" 2>"$out/tp.err" ||
    { tail -5 "$out/tp.err" >&2; echo "perfetto, import, $2: failed"; return; }
  read -r secs rss <"$out/time"
  got=$(tail -1 "$out/tp.out" | tr -d '"')
  awk -v l="$2" -v n="$3" -v s="$secs" -v rss="$rss" -v got="$got" -v b="$(stat -c %s "$1")" 'BEGIN {
    printf "perfetto, import, %s, %d events, %.0f MB: trace processor %.1f s (%.2f M events/s), peak RSS %.0f MB (%s)\n",
      l, n, b / 1e6, s, n / s / 1e6, rss / 1024, got }'
}

record tight 100000000 1
record i10 1000000 10
runs tight pftrace "tight loop, .pftrace"
runs tight pftrace "tight loop, .pftrace --compress" --compress
runs tight json "tight loop, .json"
runs i10 pftrace "1 M/s for 10 s, .pftrace"
runs i10 pftrace "1 M/s for 10 s, .pftrace --compress" --compress
n=$(sed -n 's/.*events, \([0-9]*\) trace events written.*/\1/p' "$out/conv.err")
"$T" convert "$out/i10.tbt" -o "$out/i10.pftrace" 2>/dev/null
tp "$out/i10.pftrace" ".pftrace" "$n"
rm -f "$out/i10.pftrace"
"$T" convert "$out/i10.tbt" -o "$out/i10.json" 2>/dev/null
tp "$out/i10.json" ".json" "$n"
