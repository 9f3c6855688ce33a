#!/usr/bin/env bash
# Install the Debian 12 packages tracebpf needs to build, run and test.
# Quick when everything is present (only dpkg is asked). Needs root to install.
set -euo pipefail
# libclang-rt-14-dev: the libFuzzer and sanitizer runtimes of the fuzz target
# (clang only recommends it, and recommends are not installed here)
pkgs=(make gcc g++ clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev pkg-config
      binutils libcmocka-dev libtraceevent-dev python3 python3-pytest procps util-linux
      libclang-rt-14-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js may come from elsewhere than Debian (its npm then conflicts with
# Debian's): only ask for Debian's when there is no node/npm at all.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "tracebpf: deps: missing packages: ${missing[*]}" >&2
    echo "tracebpf: hint: run 'sudo make deps' (or: sudo apt-get install ${missing[*]})" >&2
    exit 1
  fi
  echo "tracebpf: deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The Chrome DevTools trace engine, a real consumer the tests load every
# produced JSON file with (version pinned in tests/consumers/package-lock.json).
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -f "$here/tests/consumers/package-lock.json" ] && \
   [ ! -d "$here/tests/consumers/node_modules/@paulirish/trace_engine" ]; then
  echo "tracebpf: deps: installing the DevTools trace engine (npm ci in tests/consumers)"
  (cd "$here/tests/consumers" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
