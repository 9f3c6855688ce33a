#!/usr/bin/env bash
# Regenerate vmlinux/x86/vmlinux.h from the running kernel's BTF.
# The committed header is what CO-RE programs compile against; relocations
# make the resulting objects run on any BTF kernel, so regenerate only to
# reach types or fields the current header lacks.
set -euo pipefail
btf=${1:-/sys/kernel/btf/vmlinux}
out=${2:-"$(dirname "$0")/../vmlinux/x86/vmlinux.h"}
if [ ! -r "$btf" ]; then
  echo "gen-vmlinux: cannot read '$btf': this kernel has no BTF (CONFIG_DEBUG_INFO_BTF)" >&2
  exit 1
fi
bpftool btf dump file "$btf" format c > "$out.tmp"
mv "$out.tmp" "$out"
echo "gen-vmlinux: wrote $out"
