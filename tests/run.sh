#!/usr/bin/env bash
# Runs the test suites and ends with one line "N passed, N failed".
#   tests/run.sh              the quick run (make test): everything, with the
#                             big-scale cases scaled down and a 20 s chaos run
#   tests/run.sh full         the long run (make test-full): the big-scale
#                             cases at full size, 600 s of chaos, 60 s of fuzz
#   tests/run.sh unit         header, layout, unit, fuzz (no root needed)
#   tests/run.sh integration  integration and chaos (root: real BPF)
#
# The integration tests run side by side (pytest-xdist, one worker per CPU
# and two more: most of a test's time is spent waiting on its recorder),
# and they keep both CPUs busy. The tests marked `serial` watch the whole
# machine (bpftool listings, ctl, pinned files) and run afterwards, alone
# among the integration tests, then the chaos run: one at a time, they
# leave a CPU free, and the header suite, and the unit and fuzz suites,
# two lanes that load no BPF, pin nothing and start no recording, run
# beside them. Prints the time of each suite and the ten slowest
# integration tests; JUnit XML goes to build/test-results/.
#
# The integration tests and the chaos run run at nice -20 (as root): a
# recorder raises itself to nice -20, and side by side a busy one left
# the programs of the other tests, at nice 0, about one share of a CPU in
# a hundred (a test that takes 5 s alone took 72 s in the suite, and 364 s
# beside two loops at nice -20). At one nice every process gets its
# share, as it would on a machine that runs one recording.
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-quick}
case $what in
  quick|full|unit|integration) ;;
  *) echo "usage: tests/run.sh [quick|full|unit|integration]" >&2; exit 64 ;;
esac
PY=/usr/bin/python3
RESULTS=build/test-results
JOBS=$(( $(nproc) + 2 ))
CHAOS_S=20 FUZZ_S=10 MARK="not full"
if [ "$what" = full ]; then
  CHAOS_S=600 FUZZ_S=60 MARK=""
  export TRACEBPF_TEST_FULL=1
fi
rm -rf "$RESULTS"; mkdir -p "$RESULTS"
passed=0 failed=0 t0=$(date +%s)
times=$RESULTS/times.txt; : > "$times"

# count LOG NAME STATUS: adds a suite's passed and failed to the totals
count() {
  local log=$1 name=$2 rc=$3 p f
  p=$(sed -n 's/^\([0-9]\+\) passed, \([0-9]\+\) failed$/\1/p; s/^\[  PASSED  \] \([0-9]\+\) test.*/\1/p' "$log" | tail -1)
  f=$(sed -n 's/^\([0-9]\+\) passed, \([0-9]\+\) failed$/\2/p; s/^\[  FAILED  \] \([0-9]\+\) test.*/\1/p' "$log" | tail -1)
  local summary='(passed|failed|errors?|deselected|skipped|no tests ran).* in [0-9.]+s'
  if grep -qE "$summary" "$log"; then   # pytest's last line
    p=$(grep -E "$summary" "$log" | tail -1 | grep -oE '[0-9]+ passed' | grep -oE '[0-9]+')
    f=$(grep -E "$summary" "$log" | tail -1 | grep -oE '[0-9]+ (failed|errors?)' \
        | awk '{s += $1} END {print s + 0}')
  fi
  p=${p:-0} f=${f:-0}
  # a suite that failed without saying how many counts as one failure
  if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; fi
  passed=$((passed + p)) failed=$((failed + f))
  [ "$f" = 0 ] || echo "FAILED: $name ($f)"
}

# suite NAME CMD...: runs CMD with its output in a log of its own, notes its time
suite() {
  local name=$1; shift
  local log=$RESULTS/$(echo "$name" | tr -c 'a-zA-Z0-9_.\n-' '_').log s=$(date +%s)
  "$@" > "$log" 2>&1
  echo "$? $(( $(date +%s) - s )) $name" > "$log.rc"
}

# finish NAME: prints a finished suite's log (all of it if it failed) and counts it
finish() {
  local log=$RESULTS/$(echo "$1" | tr -c 'a-zA-Z0-9_.\n-' '_').log rc secs
  read -r rc secs _ < "$log.rc"
  echo "== $1 (${secs} s)"
  if [ "$rc" = 0 ]; then tail -3 "$log"; else cat "$log"; fi
  count "$log" "$1" "$rc"
  printf '%6d s  %s\n' "$secs" "$1" >> "$times"
}

# two lanes: the header suite (one compiler at a time, 80-90 s), and the
# unit suites then the fuzzer (40-50 s), beside the serial integration
# tests and the chaos run, which leave more than a CPU free. At nice 0
# they take what those leave and hold up neither (none of them waits on
# another process, and the fuzzer's 10 s are its own).
offline_suites() {
  [ "$(id -u)" = 0 ] && renice -n 0 -p $BASHPID >/dev/null
  suite "header tests" bash tests/header/run.sh &
  suite "layout" $PY tests/layout/layout.py
  for t in build/unit/test_*; do
    [ -x "$t" ] && suite "unit: ${t#build/unit/}" "$t"
  done
  suite "fuzz ${FUZZ_S} s" make --no-print-directory fuzz FUZZ_TIME="$FUZZ_S"
  wait
}
finish_offline() {
  finish "header tests"
  finish "layout"
  for t in build/unit/test_*; do
    [ -x "$t" ] && finish "unit: ${t#build/unit/}"
  done
  finish "fuzz ${FUZZ_S} s"
}

pytest_run() { # NAME MARKEXPR [xdist args...]
  local name=$1 mark=$2; shift 2
  suite "$name" $PY -m pytest -q -p no:cacheprovider -rfE \
    --junitxml="$RESULTS/$name.xml" -m "$mark" "$@" tests/integration
}

mark() { # joins the -m expressions given
  local out="" m
  for m in "$@"; do [ -n "$m" ] && out="${out:+$out and }$m"; done
  echo "${out:-True}"
}

root_ok=1
if [ "$what" != unit ] && [ "$(id -u)" != 0 ]; then
  echo "integration tests need root (they load BPF programs): run 'sudo make test'"
  failed=$((failed + 1)) root_ok=0
fi

# (what the recorder does to itself; see the top of this file)
[ "$(id -u)" = 0 ] && renice -n -20 -p $$ >/dev/null
if [ "$what" != unit ] && [ "$root_ok" = 1 ]; then
  echo "== integration tests side by side ($JOBS workers)"
  pytest_run "side by side" "$(mark "not serial" "$MARK")" -n "$JOBS" --dist loadgroup
  finish "side by side"
fi
if [ "$what" != integration ]; then
  offline_suites &
  offline_pid=$!
fi
if [ "$what" != unit ] && [ "$root_ok" = 1 ]; then
  echo "== integration tests that watch the whole machine, alone"
  pytest_run "alone" "$(mark "serial" "$MARK")"
  finish "alone"
fi
if [ "$what" != unit ] && [ "$root_ok" = 1 ]; then
  suite "chaos ${CHAOS_S} s" $PY tests/chaos/chaos.py "$CHAOS_S"
  finish "chaos ${CHAOS_S} s"
fi
if [ "$what" != integration ]; then
  wait "$offline_pid"
  finish_offline
fi

echo "== time per suite"
cat "$times"
if ls "$RESULTS"/*.xml >/dev/null 2>&1; then
  echo "== the ten slowest integration tests"
  $PY tests/slowest.py 10 "$RESULTS"/*.xml
fi
whole=$(( $(date +%s) - t0 ))
echo "== the whole run: $whole s"
# for make bench, which holds make test to 5 minutes
echo "$whole $what $passed $failed $(nproc) $(date -u +%FT%TZ)" > "$RESULTS/duration.txt"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
