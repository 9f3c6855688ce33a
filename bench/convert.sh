#!/usr/bin/env bash
# bench/convert.sh (called by bench/run.sh): how fast `tracebpf convert`
# turns a trace into JSON, and in how much memory. The traces are recorded
# once per run, from bench/rate with two threads:
#   2-int instants   TRACE_EVENT_INSTANT2 at 1 M/s for 1 s, 10 s and, when
#                    the disk has room for the JSON (BENCH_CONVERT_BIG=0
#                    skips it), 23 s
#   slices           TRACE_EVENT_BEGIN1 + END0 pairs (rate's NARGS 0), as
#                    many as it reaches in 1 s and 10 s
# Each is converted BENCH_CONVERT_RUNS (3) times to a file in a scratch
# directory on the disk of $TMPDIR (/tmp): reported are trace events per
# second of wall-clock time (median, min-max), per second of CPU time (user
# + system of both threads, median: what the machine's other load changes
# least), the peak RSS (largest, from /usr/bin/time) and the JSON's bytes
# per event. The 10 s traces are
# converted to /dev/null too, which leaves the disk out. Last, the pipe:
# record -o - -- rate 1000000 3 2 2 | convert -, events lost (goal 0).
# Then the largest trace two threads make here (bench/fast_trace.sh: 54 M
# 2-integer instants from probe_cost's tight loop on the fast path, in
# about 2 s), converted to /dev/null: its 6.6 GB of JSON formatted in full
# but not written (written, they take the disk's time, about 350 MB/s
# here, and 10 s or more of kernel time; BENCH_CONVERT_BIG=0 skips the one
# run that writes them to a file); goal >= 10 M events/s.
# Then Perfetto's trace processor (the engine of ui.perfetto.dev, from
# ../shared/perfetto/) imports the JSON of the 10 s traces, timed beside
# one more conversion of the same trace: its wall-clock time, events per
# second and peak RSS, and the slices and counter samples it made of them
# (every instant, slice and counter of the file: a check that it took
# them all).
# Each run starts with no dirty pages (sync, untimed): this VM's disk
# writes about 350 MB/s, and 5 M events/s is 620 MB/s of JSON, so a run
# that follows another, or one whose JSON passes the kernel's writeback
# threshold (10% of memory dirty), also measures the disk.
# The machine's other load shows in the figures; the goals are >= 5 M
# instants/s (>= 10 M for the fast trace to /dev/null), >= 2 M slices/s and
# an RSS that does not grow with the trace.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/stats.sh
. bench/fast_trace.sh
T=build/tracebpf
R=build/bench/rate
runs=${BENCH_CONVERT_RUNS:-3}
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT

# record NAME SECONDS NARGS: the trace $out/NAME.tbt
record() {
  "$T" record -q --no-json --no-sched -o "$out/$1.tbt" -- "$R" 1000000 "$2" "$3" 2 \
    >/dev/null 2>"$out/rec.err" || { cat "$out/rec.err" >&2; exit 1; }
}

# convert_runs NAME DEST LABEL: converts $out/NAME.tbt $runs times to DEST
convert_runs() {
  local name=$1 dest=$2 label=$3 n=0 i
  : >"$out/rates"; : >"$out/cpu"; : >"$out/rss"
  for i in $(seq "$runs"); do
    # each run starts as a user's would: the last run's JSON gone and
    # nothing dirty left to write back (a run after another would share
    # the disk with the kernel writing the other's 1-3 GB out)
    [ "$dest" = /dev/null ] || rm -f "$dest"
    sync
    /usr/bin/time -f '%e %M %U %S' -o "$out/time" "$T" convert -v "$out/$name.tbt" -o "$dest" \
      2>"$out/conv.err" || { cat "$out/conv.err" >&2; exit 1; }
    n=$(sed -n 's/.*events, \([0-9]*\) trace events written.*/\1/p' "$out/conv.err")
    read -r secs rss user sys <"$out/time"
    awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.3f\n", n / s / 1e6 }' >>"$out/rates"
    awk -v n="$n" -v u="$user" -v s="$sys" 'BEGIN { printf "%.3f\n", n / (u + s) / 1e6 }' >>"$out/cpu"
    echo "$rss" >>"$out/rss"
  done
  local bytes=0
  [ -f "$dest" ] && bytes=$(stat -c %s "$dest")
  awk -v label="$label" -v n="$n" -v med="$(median <"$out/rates")" \
      -v lo="$(sort -g "$out/rates" | head -1)" -v hi="$(sort -g "$out/rates" | tail -1)" \
      -v rss="$(sort -g "$out/rss" | tail -1)" -v bytes="$bytes" -v runs="$runs" \
      -v cpu="$(median <"$out/cpu")" 'BEGIN {
    printf "convert, %s, %.1f M events: %.2f M events/s (%.2f-%.2f over %d runs; %.2f M per CPU second), peak RSS %.1f MB",
      label, n / 1e6, med, lo, hi, runs, cpu, rss / 1024
    if (bytes) printf ", %.1f B/event", bytes / n
    printf "\n" }'
  rm -f "$out/x.json"
}

# tp_import NAME LABEL: $out/NAME.tbt converted once more, then imported
# by the trace processor; both timed
TP=../shared/perfetto/trace_processor_shell
tp_import() {
  local name=$1 label=$2 n csecs crss tsecs trss got bytes
  if [ ! -x "$TP" ]; then
    echo "trace processor import, $label: skipped: $TP not found"
    return
  fi
  sync
  /usr/bin/time -f '%e %M' -o "$out/time" "$T" convert -v "$out/$name.tbt" -o "$out/tp.json" \
    2>"$out/conv.err" || { cat "$out/conv.err" >&2; exit 1; }
  read -r csecs crss <"$out/time"
  n=$(sed -n 's/.*events, \([0-9]*\) trace events written.*/\1/p' "$out/conv.err")
  bytes=$(stat -c %s "$out/tp.json")
  sync
  /usr/bin/time -f '%e %M' -o "$out/time" "$TP" query "$out/tp.json" \
    "select (select count(*) from slice) || ' slices, ' || (select count(*) from counter)
       || ' counter samples'" >"$out/tp.out" 2>"$out/tp.err" ||
    { tail -5 "$out/tp.err" >&2; echo "trace processor import, $label: failed" ; return; }
  read -r tsecs trss <"$out/time"
  got=$(tail -1 "$out/tp.out" | tr -d '"')
  awk -v label="$label" -v n="$n" -v b="$bytes" -v cs="$csecs" -v crss="$crss" -v ts="$tsecs" \
      -v trss="$trss" -v got="$got" 'BEGIN {
    printf "import, %s, %d events, %.0f MB of JSON: Perfetto trace processor %.1f s (%.2f M events/s, peak RSS %.0f MB; %s); tracebpf convert wrote it in %.1f s (%.2f M events/s, peak RSS %.1f MB)\n",
      label, n, b / 1e6, ts, n / ts / 1e6, trss / 1024, got, cs, n / cs / 1e6, crss / 1024 }'
  rm -f "$out/tp.json"
}

record i1 1 2
record i10 10 2
record s1 1 0
record s10 10 0
convert_runs i1 "$out/x.json" "2-int instants"
convert_runs i10 "$out/x.json" "2-int instants"
convert_runs i10 /dev/null "2-int instants to /dev/null"
# 23 M instants: about 3 GB of JSON
if [ "${BENCH_CONVERT_BIG:-1}" != 0 ] &&
   [ "$(df -Pk "$out" | awk 'NR == 2 { print $4 }')" -gt $((8 * 1024 * 1024)) ]; then
  record i23 23 2
  convert_runs i23 "$out/x.json" "2-int instants"
  rm -f "$out/i23.tbt"
else
  echo "convert, 2-int instants, 23 M events: skipped (BENCH_CONVERT_BIG=0 or under 8 GB free)"
fi
convert_runs s1 "$out/x.json" "begin/end slices"
convert_runs s10 "$out/x.json" "begin/end slices"
convert_runs s10 /dev/null "begin/end slices to /dev/null"
fast_trace "$out/f54.tbt"
convert_runs f54 /dev/null "2-int instants, fast path, to /dev/null (goal >= 10 M events/s)"
if [ "${BENCH_CONVERT_BIG:-1}" != 0 ] &&
   [ "$(df -Pk "$out" | awk 'NR == 2 { print $4 }')" -gt $((16 * 1024 * 1024)) ]; then
  runs=1 convert_runs f54 "$out/x.json" "2-int instants, fast path, to a file"
else
  echo "convert, 2-int instants, fast path, to a file: skipped (BENCH_CONVERT_BIG=0 or under 16 GB free)"
fi
rm -f "$out/f54.tbt"
tp_import i10 "2-int instants"
tp_import s10 "begin/end slices"

"$T" record --no-sched -o - -- "$R" 1000000 3 2 2 2>"$out/rec.err" |
  "$T" convert - -o "$out/p.json" 2>"$out/conv.err"
emitted=$(sed -n 's/^emitted=//p' "$out/rec.err")
dropped=$(sed -n 's/.* \([0-9]*\) dropped.*/\1/p' "$out/rec.err")
echo "record -o - | convert -, 1 M events/s from 2 threads, 3 s: $emitted events, $dropped dropped (goal 0)"
