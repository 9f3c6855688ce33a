#!/usr/bin/env bash
# bench/fast.sh (called by bench/run.sh): the fast path's cost per event,
# four ways side by side. Each of BENCH_FAST_RUNS (7) runs measures, in
# turn (the runs interleaved: A B C D A B C D ...), N = BENCH_FAST_N
# (2,000,000) two-integer instants from one thread:
#
#   A first hit    `tracebpf record -q --no-json -v -o X -- probe_cost N
#                  instant2`: the defaults (-v only adds the counts below),
#                  timed in a fresh thread from its first hit, so its
#                  events before its ring is mapped and while the ring
#                  stays full past its wait take the probes (the slow path)
#   B once mapped  the same with PROBE_COST_FAST=1 (the thread warms up
#                  until its ring is mapped) and --fast-buffer-size 128M
#                  (a ring that holds the whole loop), as bench/lttng.sh's
#                  tracebpf runs
#   C LTTng-UST    probe_cost_lttng N instant2: the same event recorded by
#                  LTTng-UST in a channel that holds the whole loop
#                  (bench/lttng.sh's session, BENCH_LTTNG_SUBBUF x
#                  BENCH_LTTNG_NSUBBUF per CPU)
#   D floor        fast_floor N: the fast path's ring protocol alone, in a
#                  plain shared mapping (a 16M ring that wraps) drained by a
#                  thread every 1 ms (bench/fast_floor.c)
#   E fresh floor  fast_floor N 128M 1000 fresh: the same into a ring that
#                  holds the whole loop and whose pages this process has
#                  not touched before, as a thread's new ring: what the
#                  host charges for a process's first touch of a page
#                  (docs/fast-path.md, "What a new ring costs": microseconds a page
#                  on a VM with shadow page tables)
#   F lapped ring  A with `--fast-buffer-size 4M --fast-buffer-max 4M`: a
#                  ring that may not grow, so the thread laps pages it
#                  has touched before and the drain reads them again; when
#                  the drain falls behind the ring fills and the overflow
#                  takes the probes. What a thread that goes back to its
#                  drained ring instead of a new one would pay.
#   G long loop    A over BENCH_FAST_LONG (40,000,000) events: the thread's
#                  rings stop growing at --fast-buffer-max (4M by
#                  default), and it laps its last one: the defaults' cost
#                  over a long run, with its slow-path share and drain rate.
#
# Prints each row's median with its 95% bootstrap interval
# (bench/stats.sh), the paired ratios first hit / once mapped, first hit /
# LTTng-UST, once mapped / floor, once mapped / fresh floor and first hit /
# fresh floor; where A's time goes, read from its trace's own timestamps
# (bench/first_hit.py: writing the events, stalls of the thread on
# fast-path events, events on the slow path, each in ns per event so that
# they add up to A's); the share of A's events that took the slow path and
# the recorder's fast-path drain rate (record -v's lines; "n/a" when the
# recorder does not print it), the same two for F and G, the paired
# ratio F / A, and the goal: first hit with the defaults
# <= 60 ns/event. Fails (exit 1) if a program is missing, a
# recording or the floor fails; without LTTng-UST (see bench/lttng.sh) its
# rows print "skipped: <reason>".
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/stats.sh
. bench/lttng_lib.sh
B=build/bench
T=build/tracebpf
P=$B/probe_cost_lttng
N=${BENCH_FAST_N:-2000000}
LONG=${BENCH_FAST_LONG:-40000000}
runs=${BENCH_FAST_RUNS:-7}
subbuf=${BENCH_LTTNG_SUBBUF:-8M}
nsubbuf=${BENCH_LTTNG_NSUBBUF:-16}
goal=60
session=tracebpf-fast-$$
out=$(mktemp -d)
cleanup() { lttng_cleanup; rm -rf "$out"; }
trap cleanup EXIT
die() { echo "bench: fast: $*" >&2; exit 1; }
ns() { sed -n 's/.*ns_per_hit=\([0-9.]*\).*/\1/p' "$1"; }

for f in "$T" "$B/probe_cost" "$B/fast_floor"; do
  [ -x "$f" ] || die "$f is missing: build it with 'make'"
done
[ "$(id -u)" = 0 ] || die "recording needs root"

lttng=1
if ! { lttng_ready && lttng_build "$P" bench/probe_cost_lttng.c bench/probe_cost_lttng_tp.c &&
       lttng_start_sessiond; }; then
  lttng=
fi

# record [VAR=VALUE...] -- [RECORD OPTIONS]: probe_cost N instant2 under
# tracebpf record; appends its ns per hit to $out/$name, fails on a
# recorder error or a line without ns_per_hit, warns of drops.
record() {  # NAME [ENV...] -- [OPTION...]
  local name=$1 v n=${n:-$N}
  local -a envs=()
  shift
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  rm -f "$out"/r.tbt*
  env "${envs[@]}" "$T" record -q --no-json "$@" -o "$out/r.tbt" -- "$B/probe_cost" "$n" instant2 \
    >"$out/r.out" 2>"$out/r.err" || die "$name: tracebpf record failed ($?): $(tail -n 5 "$out/r.err")"
  v=$(ns "$out/r.out")
  [ -n "$v" ] || die "$name: probe_cost printed no ns_per_hit: $(cat "$out/r.out"; grep -v '^libbpf' "$out/r.err" | tail -n 3)"
  echo "$v" >>"$out/$name"
  grep -q "^tracebpf: recorded .* 0 dropped" "$out/r.err" ||
    echo "bench: WARNING: $name: $(grep '^tracebpf: recorded' "$out/r.err")" >&2
}

# record -v's counts of the last run: the slow path's share (per cent) to
# $out/SLOW, the drain's events/s to $out/DRAIN.
v_counts() {  # NAME SLOW DRAIN
  local s r
  s=$(sed -n 's/^tracebpf: record: [0-9]* of [0-9]* application events took the probes (the slow path, \([0-9.]*\)%).*/\1/p' \
      "$out/r.err")
  [ -n "$s" ] || die "$1: no slow-path count from record -v: $(grep '^tracebpf:' "$out/r.err" | tail -n 5)"
  echo "$s" >>"$out/$2"
  r=$(sed -n 's/^tracebpf: record: fast-path drain: [0-9]* events in [0-9.]* ms (\([0-9.]*\) events\/s).*/\1/p' \
      "$out/r.err")
  if [ -n "$r" ]; then echo "$r" >>"$out/$3"; fi
}

# The first hit's run (A), with record -v's counts (slow, drain); and where
# its time went, from the trace's own timestamps (bench/first_hit.py), to
# $out/where.
first_hit() {
  record first -- -v
  "$T" dump "$out/r.tbt" | python3 bench/first_hit.py >>"$out/where" ||
    die "first hit: bench/first_hit.py found no events in the trace"
  v_counts "first hit" slow drain
}

# The lapped ring's run (F), with record -v's counts (lslow, ldrain).
lapped() {
  record lapped -- -v --fast-buffer-size 4M --fast-buffer-max 4M
  v_counts "lapped ring" lslow ldrain
}

# The long loop's run (G), with record -v's counts (gslow, gdrain).
long_loop() {
  n=$LONG record long -- -v
  v_counts "long loop" gslow gdrain
}

# The LTTng-UST run (C): warns unless it kept all N events.
lttng_run() {
  local d c
  lttng_record "$subbuf" "$nsubbuf" "$P" "$N" instant2 >"$out/l.out" ||
    die "LTTng-UST run failed: $(tail -n 3 "$out/lttng.log")"
  ns "$out/l.out" >>"$out/lttng"
  read -r d c <"$out/check"
  if [ "$d" != 0 ] || { [ "$c" != - ] && [ "$c" != "$N" ]; }; then
    echo "bench: WARNING: LTTng-UST: $d discarded, $c of $N events in the trace" >&2
  fi
}

floor_run() {
  "$B/fast_floor" "$N" >"$out/f.out" 2>"$out/f.err" ||
    die "fast_floor failed: $(cat "$out/f.out" "$out/f.err")"
  ns "$out/f.out" >>"$out/floor"
  "$B/fast_floor" "$N" $((128 << 20)) 1000 fresh >"$out/e.out" 2>"$out/e.err" ||
    die "fast_floor fresh failed: $(cat "$out/e.out" "$out/e.err")"
  ns "$out/e.out" >>"$out/fresh"
  sed -n 's/.* full=\([0-9]*\).*/\1/p' "$out/f.out" >>"$out/full"
  # its consumer was kept off the CPU: the run waited, and is slower
  grep -q ' full=0 ' "$out/f.out" ||
    echo "bench: WARNING: floor: the ring filled: $(tail -n 1 "$out/f.out")" >&2
}

for f in first once lttng floor fresh slow drain full where lapped lslow ldrain \
         long gslow gdrain; do
  : >"$out/$f"
done
for _ in $(seq "$runs"); do
  first_hit
  record once PROBE_COST_FAST=1 -- --fast-buffer-size 128M
  if [ -n "$lttng" ]; then lttng_run; fi
  floor_run
  lapped
  long_loop
done

# "MEDIAN (95% interval LO-HI)" of FILE
summary() { printf '%s (95%% interval %s)' "$(median <"$1")" "$(interval <"$1")"; }
# the same for the paired ratios FILE_A / FILE_B
ratio() { printf '%.3fx (95%% interval %s)' "$(ratios "$1" "$2" | median)" "$(ratios "$1" "$2" | interval)"; }

echo "fast path: probe_cost $N instant2, $runs runs interleaved, medians (95% bootstrap intervals)"
label "first hit, defaults"; echo "$(summary "$out/first") ns/event"
label "once mapped, 128M ring"; echo "$(summary "$out/once") ns/event"
label "LTTng-UST, $nsubbuf x $subbuf per CPU"
if [ -n "$lttng" ]; then echo "$(summary "$out/lttng") ns/event"; else echo "skipped: $lttng_why"; fi
label "floor (fast_floor, 16M ring)"
echo "$(summary "$out/floor") ns/event ($(awk '{ s += $1 } END { print s + 0 }' "$out/full") waits for a full ring)"
label "floor, fresh pages (128M ring)"; echo "$(summary "$out/fresh") ns/event"
label "ratio first hit / once mapped"; ratio "$out/first" "$out/once"; echo
label "ratio first hit / LTTng-UST"
if [ -n "$lttng" ]; then ratio "$out/first" "$out/lttng"; echo; else echo "skipped: $lttng_why"; fi
label "ratio once mapped / floor"; ratio "$out/once" "$out/floor"; echo
label "ratio once mapped / fresh floor"; ratio "$out/once" "$out/fresh"; echo
label "ratio first hit / fresh floor"; ratio "$out/first" "$out/fresh"; echo
label "first hit: share on the slow path"; echo "$(median <"$out/slow") % (median)"
# the median of bench/first_hit.py's field NAME over the first hit's runs
where() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" "$out/where" | median; }
label "first hit: writing the events"; echo "$(where write) ns/event (median)"
label "first hit: stalls on fast-path events"
echo "$(where stall) ns/event (median; $(where stalls) stalls over 0.5 us of $(where stall_us) us each)"
label "first hit: events on the slow path"
echo "$(where slow) ns/event (median; $(where slows) events of $(where slow_us) us each)"
label "first hit: fast-path drain"
if [ -s "$out/drain" ]; then echo "$(median <"$out/drain") events/s (median)"; else echo "n/a"; fi
label "lapped 4M ring, first hit"; echo "$(summary "$out/lapped") ns/event"
label "lapped ring: share on the slow path"; echo "$(median <"$out/lslow") % (median)"
label "lapped ring: fast-path drain"
if [ -s "$out/ldrain" ]; then echo "$(median <"$out/ldrain") events/s (median)"; else echo "n/a"; fi
label "ratio lapped ring / first hit"; ratio "$out/lapped" "$out/first"; echo
label "long loop ($LONG), defaults"; echo "$(summary "$out/long") ns/event"
label "long loop: share on the slow path"; echo "$(median <"$out/gslow") % (median)"
label "long loop: fast-path drain"
if [ -s "$out/gdrain" ]; then echo "$(median <"$out/gdrain") events/s (median)"; else echo "n/a"; fi
label "goal: first hit, defaults <= $goal ns"
echo "$(verdict "$(interval <"$out/first")" "$goal") (median $(median <"$out/first") ns/event)"
