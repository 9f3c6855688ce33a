#!/usr/bin/env bash
# bench/busy.sh (called by bench/run.sh): one busy thread, as a server's
# event loop is, at 1.5 M events/s (bench/rate, two-integer instants, 4 s)
# under `tracebpf record` with the default buffers, against the same with
# a fast-path ring large enough never to fill in a round (64M). Prints the
# share of the thread's events that took the fast path (the rest went to
# the probes, at about 20 times the cost, while its ring was full), median
# of BENCH_BUSY_RUNS (3) runs each. The recorder drains sooner while a ring
# fills fast (tb_fast_round_wait); the goal is the peer's share.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/stats.sh
T=build/tracebpf
R=build/bench/rate
runs=${BENCH_BUSY_RUNS:-3}
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT

# share [RECORD OPTIONS]: per cent of the events marked [fast] in the dump
share() {
  "$T" record -q --no-sched --no-json -o "$out/b.tbt" "$@" -- "$R" 1500000 4 2 1 \
    >/dev/null 2>"$out/rec.err" || { cat "$out/rec.err" >&2; exit 1; }
  "$T" dump "$out/b.tbt" | awk '$5 == "I" { n++; if ($NF == "[fast]") f++ }
    END { printf "%.2f\n", n ? 100 * f / n : 0 }'
  rm -f "$out/b.tbt"
}

: >"$out/def"; : >"$out/big"
for _ in $(seq "$runs"); do
  share >>"$out/def"
  share --fast-buffer-size 64M >>"$out/big"
done
echo "busy thread, 1.5 M events/s, on the fast path: $(median <"$out/def") % with the default" \
     "rings (64K, grown as it fills), $(median <"$out/big") % with a 64M one (medians of $runs)"
