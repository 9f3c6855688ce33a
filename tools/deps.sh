#!/usr/bin/env bash
# Install the Debian 12 packages tracebpf needs to build, run and test.
# Quick when everything is present (only dpkg is asked). Needs root to install.
set -euo pipefail
# libbpf >= 1.3 attaches all of a binary's USDT sites with one uprobe_multi
# link (and detaches them with one synchronisation). Debian 12 ships 1.1.2;
# its bookworm-backports suite carries libbpf 1.4.6 and bpftool 7.5.
LIBBPF_MIN=1.3
backports=/etc/apt/sources.list.d/tracebpf-bookworm-backports.sources
enable_backports() {
  . /etc/os-release
  [ "${VERSION_CODENAME:-}" = bookworm ] || return 0
  grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/ && return 0
  echo "tracebpf: deps: enabling bookworm-backports for libbpf >= $LIBBPF_MIN ($backports)"
  cat > "$backports" <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  apt-get update -qq
}
# libbpf-dev at >= LIBBPF_MIN and bpftool from the same suite (7.5 writes
# skeletons for 1.4's API).
bpf_ok() {
  local v
  v=$(dpkg-query -W -f='${Version}' libbpf-dev 2>/dev/null) || return 1
  dpkg --compare-versions "$v" ge "1:$LIBBPF_MIN" || return 1
  v=$(dpkg-query -W -f='${Version}' bpftool 2>/dev/null) || return 1
  dpkg --compare-versions "$v" ge 7.3
}
# libclang-rt-14-dev: the libFuzzer and sanitizer runtimes of the fuzz target
# (clang only recommends it, and recommends are not installed here).
# lowdown renders docs/*.md as the man pages (make, make install); man-db
# (man -l, lexgrog) and pkg-config are what tests/integration/test_install.py
# checks the installed pages and tracebpf.pc with.
# systemtap-sdt-dev (<sys/sdt.h>) builds the test programs that carry other
# programs' USDT probes (tests/progs/sdt_app.c, libsdt.c, sdt_exec.c), and
# postgresql (15, whose postgres binary has them) is the real program
# record --usdt is tested against (tests/integration/pgcluster.py).
# protobuf-compiler's protoc decodes every Perfetto trace the tests write
# against Perfetto's schema (tests/integration/test_perfetto.py).
pkgs=(make gcc g++ clang llvm libelf-dev zlib1g-dev libdeflate-dev pkg-config
      binutils libcmocka-dev libtraceevent-dev python3 python3-pytest python3-pytest-xdist procps util-linux
      libclang-rt-14-dev lowdown man-db systemtap-sdt-dev postgresql protobuf-compiler)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js may come from elsewhere than Debian (its npm then conflicts with
# Debian's): only ask for Debian's when there is no node/npm at all.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
bpf_ok || missing+=("libbpf-dev>=$LIBBPF_MIN" bpftool)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "tracebpf: deps: missing packages: ${missing[*]}" >&2
    echo "tracebpf: hint: run 'sudo make deps' (or: sudo apt-get install ${missing[*]})" >&2
    exit 1
  fi
  echo "tracebpf: deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  enable_backports
  plain=()
  for p in "${missing[@]}"; do
    case "$p" in libbpf-dev*|bpftool) ;; *) plain+=("$p") ;; esac
  done
  if [ ${#plain[@]} -gt 0 ]; then
    apt-get install -y -qq --no-install-recommends "${plain[@]}" >/dev/null
  fi
  if ! bpf_ok; then
    enable_backports
    # On Debian 12 libbpf and bpftool come from backports, together.
    bp=()
    grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/ && bp=(-t bookworm-backports)
    apt-get install -y -qq --no-install-recommends "${bp[@]}" libbpf-dev libbpf1 bpftool >/dev/null
    bpf_ok || { echo "tracebpf: deps: failed to install libbpf-dev >= $LIBBPF_MIN and bpftool >= 7.3" >&2
                echo "tracebpf: hint: on Debian 12 enable bookworm-backports; elsewhere install libbpf >= $LIBBPF_MIN" >&2
                exit 1; }
  fi
fi
# The Chrome DevTools trace engine, a real consumer the tests load every
# produced JSON file with (version pinned in tests/consumers/package-lock.json).
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -f "$here/tests/consumers/package-lock.json" ] && \
   [ ! -d "$here/tests/consumers/node_modules/@paulirish/trace_engine" ]; then
  echo "tracebpf: deps: installing the DevTools trace engine (npm ci in tests/consumers)"
  (cd "$here/tests/consumers" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
