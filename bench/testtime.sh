#!/usr/bin/env bash
# bench/testtime.sh (called by bench/run.sh): how long the last `make test`
# took, from build/test-results/duration.txt (tests/run.sh writes it:
# seconds, mode, passed, failed, CPUs, when), held to its goal: 5 minutes
# or less on 2 CPUs. A bench does not run the tests itself (they take
# minutes and need a quiet machine): run `make test` first.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/stats.sh
f=build/test-results/duration.txt
label "make test, the last run"
if [ ! -s "$f" ]; then
  echo "no run recorded ($f): run 'sudo make test' first"
  exit 0
fi
read -r secs mode passed failed cpus when <"$f"
if [ "$mode" != quick ]; then
  echo "the last run was tests/run.sh $mode ($when), not make test"
  exit 0
fi
verdict="met"
[ "$secs" -le 300 ] || verdict="not met"
echo "$secs s on $cpus CPUs, $passed passed, $failed failed ($when); goal <= 300 s: $verdict"
