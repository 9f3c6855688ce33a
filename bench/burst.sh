#!/usr/bin/env bash
# bench/burst.sh (called by bench/run.sh): many threads with bursts of
# events, each tracer with its defaults. build/bench/burst T starts T
# threads together; each emits a burst of 200 two-integer instants every
# 20 ms for 1 s and exits (T = 100: 1,000,000 events, 1 M events/s).
# For T = 100 and T = 500, BENCH_BURST_RUNS (3) runs each, interleaved
# (tracebpf then LTTng-UST, for each T, run after run):
#
#   tracebpf    `tracebpf record -q --no-json -o X -- burst T`. Lost: the
#               events the program emitted that are not in the file
#               (`tracebpf dump`'s bench:burst instants); beside them the
#               recorder's own count: its summary line's "D dropped" and
#               the events its WARNING lines say were LOST
#   LTTng-UST   build/bench/burst_lttng T (the same loop with the
#               tracepoint bench:hit2, built here) while a session with
#               LTTng's defaults records it (`lttng enable-event -u`, no
#               channel of our own). Discarded: `lttng list`'s
#               "Discarded events"; beside them the events babeltrace2
#               does not find in the trace
#
# Prints each run (with how long its bursts took: 1 s when the program
# kept the pace), then the medians and the goals: 100 threads, tracebpf
# loses nothing; 500 threads, tracebpf loses no more than LTTng-UST
# discards. Fails (exit 1) if a program is missing or the recorder
# fails; without LTTng-UST (see bench/lttng.sh) its side prints
# "skipped: <reason>".
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/stats.sh
. bench/lttng_lib.sh
B=build/bench
T=build/tracebpf
runs=${BENCH_BURST_RUNS:-3}
threads_list="100 500"
session=tracebpf-burst-$$
out=$(mktemp -d)
cleanup() { lttng_cleanup; rm -rf "$out"; }
trap cleanup EXIT
die() { echo "bench: burst: $*" >&2; exit 1; }

for f in "$T" "$B/burst"; do
  [ -x "$f" ] || die "$f is missing: build it with 'make'"
done
[ "$(id -u)" = 0 ] || die "recording needs root"

lttng=1
if ! { lttng_ready && lttng_build "$B/burst_lttng" bench/burst.c bench/probe_cost_lttng_tp.c -DBURST_LTTNG &&
       lttng_start_sessiond; }; then
  lttng=
fi

emitted() { sed -n 's/^emitted=\([0-9]*\).*/\1/p' "$1"; }
took() { sed -n 's/.* seconds=\([0-9.]*\).*/\1/p' "$1"; }

# One tracebpf run of burst THREADS: prints "LOST DROPPED WARNED SECONDS":
# lost = emitted - the bench:burst instants in the file; dropped = the
# summary line's (application and kernel events); warned = the application
# events the WARNING lines say were LOST; seconds = how long the bursts
# took (1 s if emitting kept the pace).
run_tracebpf() {  # THREADS
  local e c d w
  rm -f "$out"/b.tbt*
  "$T" record -q --no-json -o "$out/b.tbt" -- "$B/burst" "$1" >"$out/b.out" 2>"$out/b.err" ||
    die "tracebpf record failed ($?): $(tail -n 5 "$out/b.err")"
  e=$(emitted "$out/b.out")
  [ -n "$e" ] || die "burst $1 printed no count: $(cat "$out/b.out"; tail -n 3 "$out/b.err")"
  d=$(sed -n 's/^tracebpf: recorded [0-9]* records in [0-9.]* s, \(.*\) dropped, .*/\1/p' "$out/b.err")
  [ -n "$d" ] || die "no summary line from the recorder: $(tail -n 5 "$out/b.err")"
  [ "$d" -eq "$d" ] 2>/dev/null || d="?"   # "an unknown number"
  w=$(awk '/^tracebpf: WARNING: [0-9]+ events were LOST/ { s += $3 } END { print s + 0 }' "$out/b.err")
  # SITE records name the site too: count the instants only
  c=$("$T" dump "$out/b.tbt" | awk '$5 == "I" && $6 == "bench:burst" { c++ } END { print c + 0 }') ||
    die "tracebpf dump failed on a burst $1 trace"
  rm -f "$out"/b.tbt*
  echo "$((e - c)) $d $w $(took "$out/b.out")"
}

# One LTTng-UST run of burst_lttng THREADS with LTTng's defaults: prints
# "DISCARDED MISSING SECONDS": lttng list's discarded events (with
# "+warned" if lttng warned of losses), emitted - the events in the trace
# ("-" without babeltrace2), and how long the bursts took.
run_lttng() {  # THREADS
  local e d c
  lttng_record "" "" "$B/burst_lttng" "$1" >"$out/l.out" ||
    die "LTTng-UST run of burst_lttng $1 failed: $(tail -n 3 "$out/lttng.log")"
  e=$(emitted "$out/l.out")
  [ -n "$e" ] || die "burst_lttng $1 printed no count: $(cat "$out/l.out" "$out/lttng.log")"
  read -r d c <"$out/check"
  [ "$c" = - ] || c=$((e - c))
  echo "$d $c $(took "$out/l.out")"
}

echo "burst: T threads x 50 bursts of 200 events, 20 ms apart (1 s), $runs runs each, defaults"
for t in $threads_list; do : >"$out/tb$t"; : >"$out/lt$t"; : >"$out/lm$t"; done
for r in $(seq "$runs"); do
  for t in $threads_list; do
    run_tracebpf "$t" >"$out/res"
    read -r lost d w sec <"$out/res"
    echo "$lost" >>"$out/tb$t"
    label "run $r, $t threads, tracebpf"
    echo "$lost of $((t * 10000)) lost (recorder: $d dropped, $w LOST in its warnings); ${sec} s"
    [ -n "$lttng" ] || continue
    run_lttng "$t" >"$out/res"
    read -r d c sec <"$out/res"
    echo "${d%+warned}" >>"$out/lt$t"
    echo "$c" >>"$out/lm$t"
    label "run $r, $t threads, LTTng-UST"
    echo "$d of $((t * 10000)) discarded ($c not in the trace); ${sec} s"
  done
done

for t in $threads_list; do
  label "$t threads, tracebpf (median)"
  echo "$(median <"$out/tb$t") events lost (most $(sort -n "$out/tb$t" | tail -n 1))"
  label "$t threads, LTTng-UST (median)"
  if [ -n "$lttng" ]; then
    echo "$(median <"$out/lt$t") events discarded ($(median <"$out/lm$t") not in the trace)"
  else
    echo "skipped: $lttng_why"
  fi
done

label "goal: 100 threads: tracebpf loses nothing"
if [ "$(sort -n "$out/tb100" | tail -n 1)" = 0 ]; then echo "met (0 lost in every run)"
else echo "not met ($(awk '$1 > 0 { n++ } END { print n + 0 }' "$out/tb100") of $runs runs lost events)"; fi
label "goal: 500 threads: tracebpf <= LTTng-UST"
if [ -n "$lttng" ]; then
  echo "$(verdict "$(interval <"$out/tb500")" "$(median <"$out/lt500")") (tracebpf" \
       "$(median <"$out/tb500") lost, LTTng-UST $(median <"$out/lt500") discarded, medians)"
else
  echo "skipped: $lttng_why"
fi
