#!/usr/bin/env bash
# Runs the test suites and ends with one line "N passed, N failed".
#   tests/run.sh              header + unit + integration
#   tests/run.sh unit         header + unit (no root needed)
#   tests/run.sh integration  integration and the 60 s chaos run (root: real BPF)
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
passed=0 failed=0
log=$(mktemp); trap 'rm -f "$log"' EXIT

count() { # $1 = suite name, $2 = exit status; counts from $log
  local p f
  case "$1" in
    header) p=$(sed -n 's/^\([0-9]\+\) passed, \([0-9]\+\) failed$/\1/p' "$log" | tail -1)
            f=$(sed -n 's/^\([0-9]\+\) passed, \([0-9]\+\) failed$/\2/p' "$log" | tail -1) ;;
    unit)   p=$(sed -n 's/^\[  PASSED  \] \([0-9]\+\) test.*/\1/p' "$log" | tail -1)
            f=$(sed -n 's/^\[  FAILED  \] \([0-9]\+\) test.*/\1/p' "$log" | tail -1) ;;
    pytest) p=$(grep -oE '[0-9]+ passed' "$log" | tail -1 | grep -oE '[0-9]+')
            f=$(grep -oE '[0-9]+ (failed|error)' "$log" | awk '{s+=$1} END {print s+0}') ;;
  esac
  p=${p:-0} f=${f:-0}
  # a suite that failed without saying how many: count it as one failure
  if [ "$2" != 0 ] && [ "$f" = 0 ]; then f=1; fi
  passed=$((passed + p)) failed=$((failed + f))
}

if [ "$what" != integration ]; then
  echo "== header tests (tests/header/run.sh)"
  bash tests/header/run.sh 2>&1 | tee "$log"; count header "${PIPESTATUS[0]}"
  for t in build/unit/test_*; do
    [ -x "$t" ] || continue
    echo "== unit: $t"
    "$t" 2>&1 | tee "$log"; count unit "${PIPESTATUS[0]}"
  done
  echo "== fuzz: reader, convert (filters, --split), report, 20 s (make fuzz runs longer)"
  if make --no-print-directory fuzz FUZZ_TIME=20 >"$log" 2>&1; then
    tail -1 "$log"; passed=$((passed + 1))
  else
    tail -30 "$log"; echo "fuzz run FAILED (crash, leak, timeout or memory limit)"; failed=$((failed + 1))
  fi
fi
if [ "$what" != unit ]; then
  echo "== integration tests (pytest, real BPF)"
  if [ "$(id -u)" != 0 ]; then
    echo "integration tests need root (they load BPF programs): run 'sudo make test'"
    failed=$((failed + 1))
  else
    /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/integration 2>&1 | tee "$log"
    count pytest "${PIPESTATUS[0]}"
    echo "== chaos: 60 s (make chaos DURATION=600 runs longer)"
    /usr/bin/python3 tests/chaos/chaos.py 60 2>&1 | tee "$log"
    count header "${PIPESTATUS[0]}"
  fi
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
