#!/usr/bin/env bash
# Render one docs/*.md page as a man page with lowdown (Debian: lowdown).
#   tools/md2man.sh DOC.md NAME SECTION VERSION > PAGE
# DOC.md starts with the line "# NAME(SECTION)" (the page's name and
# section, checked), then "## NAME", "## SYNOPSIS", ... as in any man page.
# Before lowdown sees the text, two Markdown constructs that read well on a
# web page but not in a terminal are rewritten:
#   - a table becomes a definition list (its first column the term, the
#     second its meaning indented below it, as man pages list options; more
#     columns are "header: cell; ..."); its header row goes;
#   - a link to another docs/ file, [x.md](x.md), becomes "docs/x.md" (the
#     page is read away from the source tree; web links stay as they are).
# The page's date is its last commit's (none outside a git checkout). Words
# are not hyphenated and lines not justified (options and paths stay whole).
set -euo pipefail

fail() { # $1 = object, $2 = why
  echo "tracebpf: md2man: failed to render '$1': $2" >&2
  exit 1
}

# A title that disagrees is said, not fatal: the page is still rendered as
# NAME(SECTION), and tests/integration/test_install.py fails on the title.
check_title() { # $1 = doc, $2 = name, $3 = section
  local want="# $2($3)" got
  got=$(head -n 1 "$1")
  [ "$got" = "$want" ] ||
    echo "tracebpf: md2man: warning: '$1' starts with '$got', not '$want' (rendered as $2($3))" >&2
}

# Drops the title line, rewrites tables and links (see above).
to_lowdown_markdown() { # $1 = doc
  awk '
    NR == 1 { next }
    # a table: its header row, then a |---|---| separator
    /^\|/ && !in_table { header = $0; if ((getline sep) > 0 && sep ~ /^\|[-: |]+\|$/) { in_table = 1; cells(header, head); next }
                         print header; print sep; next }
    in_table && /^\|/ { print_row($0); next }
    in_table { in_table = 0 }
    { print relink($0) }
    function cells(row, cell,    n, i) {
      gsub(/\\\|/, "\001", row)              # an escaped | inside a cell
      sub(/^\| */, "", row); sub(/ *\| *$/, "", row)
      n = split(row, cell, / *\| */)
      for (i = 1; i <= n; i++) gsub(/\001/, "|", cell[i])
      return n
    }
    # two columns: term and meaning; more: the others as "header: cell; ..."
    function print_row(row,    n, cell, i, def) {
      n = cells(row, cell)
      if (n == 2) def = cell[2]
      else for (i = 2; i <= n; i++) def = def (i > 2 ? "; " : "") head[i] ": " cell[i]
      print relink(cell[1]); if (n > 1) print ": " relink(def); print ""
    }
    function relink(s,    out, m, text, target) {
      out = ""
      while (match(s, /\[[^]]*\]\([^)]*\)/)) {
        m = substr(s, RSTART, RLENGTH)
        text = m; sub(/^\[/, "", text); sub(/\]\(.*$/, "", text)
        target = m; sub(/^\[[^]]*\]\(/, "", target); sub(/\)$/, "", target)
        if (target ~ /^[a-z]+:/ || target ~ /^#/) out = out substr(s, 1, RSTART + RLENGTH - 1)
        else out = out substr(s, 1, RSTART - 1) (text == target ? "docs/" target : text)
        s = substr(s, RSTART + RLENGTH)
      }
      return out s
    }
  ' "$1"
}

page_date() { # $1 = doc; the date of its last commit, or nothing
  git -C "$(dirname "$1")" log -1 --format=%cs -- "$(basename "$1")" 2>/dev/null || true
}

main() {
  [ $# = 4 ] || { echo "usage: tools/md2man.sh DOC.md NAME SECTION VERSION" >&2; exit 2; }
  local doc=$1 name=$2 section=$3 version=$4 date md
  [ -r "$doc" ] || fail "$doc" "cannot read it"
  command -v lowdown >/dev/null || fail "$doc" "lowdown is not installed (hint: run 'sudo make deps')"
  check_title "$doc" "$name" "$section"
  date=$(page_date "$doc")
  md=$(to_lowdown_markdown "$doc")
  printf '%s\n' "$md" | lowdown -s -Tman --parse-no-intraemph --parse-no-metadata -M "title=$name" -M "section=$section" \
    -M shiftheadinglevelby=-1 -M "source=tracebpf $version" ${date:+-M "date=$date"} |
    sed '/^\.TH /a .nr HY 0\n.nh\n.ad l'   # options and paths are not hyphenated nor stretched
}

main "$@"
