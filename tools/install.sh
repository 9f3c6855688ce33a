#!/usr/bin/env bash
# make install / make uninstall (see the Makefile's install section).
#   tools/install.sh install   DESTDIR MANIFEST MODE:FILE:DIR...
#   tools/install.sh uninstall DESTDIR MANIFEST MODE:FILE:DIR...
# install copies each FILE into DESTDIR/DIR with MODE (a symbolic link as
# the same link, as a library's libtracebpf.so -> libtracebpf.so.0) and
# writes MANIFEST (a path under the prefix, also below DESTDIR): the files
# it installed and the directories it had to create, one "f PATH" or
# "d PATH" a line.
# uninstall removes the files of the list and of MANIFEST, then those
# directories when they are empty, deepest first: a directory that was
# there before (/usr/local/share/man, empty on Debian) is never removed.
set -euo pipefail

say() { printf '  %-8s %s\n' "$1" "$2"; }

fail() { # $1 = verb, $2 = object, $3 = why
  echo "tracebpf: $mode: failed to $1 '$2': $3" >&2
  case "$3" in *ermission*)
    echo "tracebpf: hint: run 'sudo make $mode', or choose a PREFIX you own (PREFIX=\$HOME/.local)" >&2 ;;
  esac
  exit 1
}

# The directories that mkdir -p DESTDIR/$1 would create, as prefix paths,
# deepest first (DESTDIR itself is never one of them).
missing_dirs() { # $1 = a directory below the prefix
  local d=$1
  while [ -n "$d" ] && [ "$d" != / ] && [ ! -d "$destdir$d" ]; do
    echo "$d"
    d=$(dirname "$d")
  done
}

check_entry() { # $1 = MODE:FILE:DIR
  local m=${1%%:*} dir=${1##*:}
  [[ $m =~ ^[0-7]{3,4}$ ]] || fail "read" "$1" "not MODE:FILE:DIR"
  case "$dir" in /*) ;; *) fail "read" "$1" "DIR is not an absolute path (set PREFIX to one)" ;; esac
  case "/$dir/" in */../*) fail "read" "$1" "DIR contains '..'" ;; esac
}

install_one() { # $1 = MODE:FILE:DIR; appends to $created and $files
  local m=${1%%:*} rest=${1#*:} file dir target err
  file=${rest%:*} dir=${1##*:}
  target=$dir/$(basename "$file")
  [ -f "$file" ] || fail "install" "$file" "no such file (run make first)"
  created+=$(missing_dirs "$dir")$'\n'
  err=$(install -d -- "$destdir$dir" 2>&1) || fail "create" "$destdir$dir" "${err##*: }"
  if [ -L "$file" ]; then   # a library's soname link: the same link (MODE unused)
    err=$(ln -sfn -- "$(readlink -- "$file")" "$destdir$target" 2>&1) ||
      fail "link" "$destdir$target" "${err##*: }"
  else
    err=$(install -m "$m" -- "$file" "$destdir$target" 2>&1) ||
      fail "install" "$destdir$target" "${err##*: }"
  fi
  files+=$target$'\n'
  say INSTALL "$destdir$target"
}

write_manifest() { # merges with what an earlier install recorded
  local old="" err dir
  dir=$(dirname "$manifest")
  created+=$(missing_dirs "$dir")$'\n'
  err=$(install -d -- "$destdir$dir" 2>&1) || fail "create" "$destdir$dir" "${err##*: }"
  [ -f "$destdir$manifest" ] && old=$(cat -- "$destdir$manifest")
  files+=$manifest$'\n'
  { printf '%s\n' "$old"
    printf '%s' "$files" | sed -n 's|^/|f /|p'
    printf '%s' "$created" | sed -n 's|^/|d /|p'; } | sed '/^$/d' | sort -u > "$destdir$manifest.tmp" ||
    fail "write" "$destdir$manifest" "cannot write it"
  mv -- "$destdir$manifest.tmp" "$destdir$manifest"
}

do_install() {
  local e created="" files=""
  for e in "$@"; do check_entry "$e"; done
  for e in "$@"; do install_one "$e"; done
  write_manifest
}

remove_file() { # $1 = prefix path
  [ -e "$destdir$1" ] || [ -L "$destdir$1" ] || return 0
  rm -f -- "$destdir$1" || fail "remove" "$destdir$1" "rm failed"
  say RM "$destdir$1"
}

do_uninstall() {
  local e rest listed="" recorded="" p
  for e in "$@"; do
    check_entry "$e"
    rest=${e#*:}
    listed+=${e##*:}/$(basename "${rest%:*}")$'\n'
  done
  [ -f "$destdir$manifest" ] && recorded=$(cat -- "$destdir$manifest")
  while read -r p; do [ -n "$p" ] && remove_file "$p"; done <<< "$listed"
  while read -r p; do remove_file "$p"; done < <(printf '%s\n' "$recorded" | sed -n 's/^f //p')
  remove_file "$manifest"
  # deepest first: sort -r puts /a/b before /a
  while read -r p; do
    [ -d "$destdir$p" ] && rmdir -- "$destdir$p" 2>/dev/null && say RMDIR "$destdir$p"
  done < <(printf '%s\n' "$recorded" | sed -n 's/^d //p' | sort -r)
  return 0
}

main() {
  [ $# -ge 3 ] || { echo "usage: tools/install.sh install|uninstall DESTDIR MANIFEST MODE:FILE:DIR..." >&2; exit 2; }
  mode=$1 destdir=${2%/} manifest=$3
  shift 3
  case "$mode" in
    install) do_install "$@" ;;
    uninstall) do_uninstall "$@" ;;
    *) echo "tracebpf: install.sh: unknown mode '$mode'" >&2; exit 2 ;;
  esac
}

main "$@"
