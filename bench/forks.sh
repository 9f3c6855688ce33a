#!/usr/bin/env bash
# bench/forks.sh (called by bench/run.sh): a forking server recorded.
# build/bench/forks N PAR EVENTS (BENCH_FORKS_N 2,000 children, at most 8
# at once, 1,000 events each, every tenth killed) is run BENCH_FORKS_RUNS
# (3) times each way, interleaved:
#
#   A untraced       the program alone
#   B defaults       `tracebpf record -q -v --no-json -- forks ...`
#   C probes only    the same with --no-fast-path
#
# Prints the median wall time of each (the program's own elapsed_ms), the
# ratios B / A and B / C, B's share of events on the slow path, its
# children that ended before their fast-path ring was made, and for the
# others the time from a child's first event to its first event on the
# fast path (median and 90th percentile over B's children, from the last
# run's trace); warns of drops or of rings run out. Fails (exit 1) if a
# program is missing or a run fails.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/stats.sh
B=build/bench
T=build/tracebpf
N=${BENCH_FORKS_N:-2000}
runs=${BENCH_FORKS_RUNS:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
die() { echo "bench: forks: $*" >&2; exit 1; }
ms() { sed -n 's/^elapsed_ms=\([0-9.]*\).*/\1/p' "$1"; }

for f in "$T" "$B/forks"; do
  [ -x "$f" ] || die "$f is missing: build it with 'make'"
done
[ "$(id -u)" = 0 ] || die "recording needs root"

# recorded NAME [RECORD OPTION...]: appends the run's ms to $out/NAME
recorded() {
  local name=$1
  shift
  "$T" record -q -v --no-json "$@" -o "$out/f.tbt" -- "$B/forks" "$N" 8 1000 \
    >"$out/r.out" 2>"$out/r.err" || die "$name: tracebpf record failed: $(tail -n 3 "$out/r.err")"
  ms "$out/r.out" >>"$out/$name"
  if ! grep -q "^tracebpf: recorded .* 0 dropped" "$out/r.err" ||
     grep -q "fast-path rings are in use" "$out/r.err"; then
    echo "bench: WARNING: forks: $name: $(grep -E '^tracebpf: (recorded|record: all)' "$out/r.err" | tr '\n' ' ')" >&2
  fi
}

for f in alone rec probes slow; do : >"$out/$f"; done
for _ in $(seq "$runs"); do
  "$B/forks" "$N" 8 1000 >"$out/a.out" || die "the program failed alone"
  ms "$out/a.out" >>"$out/alone"
  recorded probes --no-fast-path
  recorded rec
  sed -n 's/.*took the probes (the slow path, \([0-9.]*\)%).*/\1/p' "$out/r.err" >>"$out/slow"
done

# Per child of the last defaults run: its first event and its first on the
# fast path (none if it ended first).
"$T" dump "$out/f.tbt" | awk '$6 == "srv:work" {
    split($4, a, "/"); p = a[1]
    if (!(p in first)) first[p] = $1
    if ($NF == "[fast]" && !(p in fast)) fast[p] = $1
  } END {
    for (p in first) if (p in fast) printf "%.1f\n", (fast[p] - first[p]) * 1e6; else print "never"
  }' >"$out/tofast"
never=$(grep -c never "$out/tofast" || true)
grep -v never "$out/tofast" | sort -g >"$out/tofast.ok" || true
pct() { awk -v q="$1" '{a[NR] = $1} END { if (NR) print a[int((NR - 1) * q) + 1]; else print "n/a" }' "$out/tofast.ok"; }

echo "forking server: forks $N 8 1000, $runs runs interleaved, medians"
label "untraced"; echo "$(median <"$out/alone") ms"
label "recorded, defaults"; echo "$(median <"$out/rec") ms"
label "recorded, --no-fast-path"; echo "$(median <"$out/probes") ms"
label "ratio defaults / untraced"; echo "$(ratios "$out/rec" "$out/alone" | median)x"
label "ratio defaults / --no-fast-path"; echo "$(ratios "$out/rec" "$out/probes" | median)x"
label "defaults: events on the slow path"; echo "$(median <"$out/slow") % (median)"
label "defaults: children before their ring"
echo "$never of $(wc -l <"$out/tofast") ended before it was made (last run)"
label "defaults: first event to the fast path"
echo "median $(pct 0.5) us, 90th percentile $(pct 0.9) us (last run, the others)"
