#!/usr/bin/env bash
# Record the bundled demo app and render build/demo.json.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
  echo "tracebpf: demo: recording needs root: run 'sudo make demo'" >&2
  exit 1
fi
build/tracebpf record -o build/demo.json -- build/demo
echo
echo "Open build/demo.json in https://ui.perfetto.dev (Open trace file) or chrome://tracing."
