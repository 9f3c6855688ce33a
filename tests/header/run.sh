#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/header/run.sh - tests of lib/include/tracebpf/trace.h that need no
# root and no tracer.
#
# Builds test programs with gcc and clang, as C11 and C++, at -O0 and -O2, and
# checks what a tracer relies on:
#   - the .note.stapsdt notes: provider "tracebpf", name "event" with exactly
#     four arguments `8@%reg` (three in the red-zone build), "event_id" with
#     six, "ring" with one (never memory, never %rsp), the semaphore address
#     equal to tracebpf_event_semaphore (one per binary, in .probes,
#     progbits), the base equal to .stapsdt.base;
#   - the probe instruction at every note's pc: 8-aligned `0f 1f 44 00 00`
#     preceded by `lea -0x80(%rsp),%rsp` (after nop padding) and followed by
#     `lea 0x80(%rsp),%rsp`;
#   - every site descriptor in the binary: magic, size, phase, scope, types,
#     strings, and the list of all of them against expected_sites*.txt;
#   - that the programs compute the right results with the sites disabled
#     (and with the semaphore forced on, the probe nops executed), and
#     evaluate arguments only when enabled;
#   - that non-literal categories, names and argument names, over-long
#     strings and unsupported argument types do not compile;
#   - that each shared object has its own semaphore;
#   - that the red-zone test program really keeps locals in the red zone;
#   - that gdb and perf recognise the probes (when installed).
#
# Prints "ok - <name>" or "not ok - <name>: expected X got Y" per check and
# ends with "N passed, N failed"; exits 1 if any check failed.
# Build outputs go to $BUILD_DIR (default build/header-tests).

set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/tests/header
BUILD_DIR=${BUILD_DIR:-build/header-tests}
case $BUILD_DIR in
/*) ;;
*) BUILD_DIR=$ROOT/$BUILD_DIR ;;
esac
rm -rf "$BUILD_DIR"
mkdir -p "$BUILD_DIR" || exit 1
B=$BUILD_DIR
T=$B/.scratch.$$ # per-run scratch files
mkdir -p "$T" || exit 1

INC="-I$ROOT/lib/include"
WARN="-Wall -Wextra -Werror"
CSTD="-std=c11 -pedantic"
CXXSTD="-std=c++17"

PASSED=0
FAILED=0

ok() {
	echo "ok - $1"
	PASSED=$((PASSED + 1))
}

not_ok() {
	echo "not ok - $1: $2"
	FAILED=$((FAILED + 1))
}

# check_eq NAME EXPECTED ACTUAL
check_eq() {
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		not_ok "$1" "expected '$2' got '$3'"
	fi
}

# check_ge NAME MIN ACTUAL
check_ge() {
	if [ "$3" -ge "$2" ] 2>/dev/null; then
		ok "$1"
	else
		not_ok "$1" "expected >= $2 got '$3'"
	fi
}

# compile NAME LOG -- command...: one check, the compiler output in LOG.
compile() {
	local name=$1 log=$2
	shift 3
	if "$@" >"$log" 2>&1; then
		ok "$name"
		return 0
	fi
	not_ok "$name" "expected success got failure (see $log: $(grep -m1 -E 'error' "$log"))"
	return 1
}

# compile_fails NAME LOG PATTERN -- command...: the compiler must refuse, and
# say PATTERN (an ERE) if one is given.
compile_fails() {
	local name=$1 log=$2 pattern=$3
	shift 4
	if "$@" >"$log" 2>&1; then
		not_ok "$name" "expected a compile error got success"
	elif [ -n "$pattern" ] && ! grep -qE "$pattern" "$log"; then
		not_ok "$name" "expected an error matching /$pattern/ got '$(grep -m1 error "$log")'"
	else
		ok "$name"
	fi
}

need() {
	command -v "$1" >/dev/null 2>&1
}

for tool in gcc g++ clang clang++ readelf objdump nm od; do
	if ! need $tool; then
		not_ok "tool $tool" "expected it installed got nothing"
	fi
done

# --- helpers reading a binary ------------------------------------------------

# notes BIN: one line per stapsdt note: provider name pc base sema args...
notes() {
	readelf -nW "$1" 2>/dev/null | awk '
		/Provider:/ { p = $0; sub(/.*Provider:[ \t]*/, "", p); split(p, q, /[ \t]+/); prov = q[1] }
		/Name:/ { p = $0; sub(/.*Name:[ \t]*/, "", p); split(p, q, /[ \t]+/); name = q[1] }
		/Location:/ {
			gsub(",", "")
			loc = $2; base = $4; sema = $6
		}
		/Arguments:/ {
			sub(/^[ \t]*Arguments:[ \t]*/, "")
			print prov, name, loc, base, sema, $0
		}'
}

# normalise a hex address: lower case, no 0x, no leading zeros
hexnorm() {
	local h=${1#0x}
	h=$(echo "$h" | tr 'A-F' 'a-f' | sed 's/^0*//')
	echo "${h:-0}"
}

# symaddr BIN SYMBOL: the address of a symbol (normalised), "" if none
symaddr() {
	local a
	a=$(nm "$1" 2>/dev/null | awk -v s="$2" '$3 == s { print $1 }')
	if [ "$(echo "$a" | grep -c .)" -ne 1 ]; then
		echo "count:$(echo "$a" | grep -c .)"
		return
	fi
	hexnorm "$a"
}

# section_of BIN ADDR(hex, normalised): "name type" of the section holding it
section_of() {
	readelf -SW "$1" | sed 's/^ *\[ *[0-9]*\]//' | awk -v want="$2" '
		function h2d(h,   i, d, c) {
			d = 0; h = tolower(h)
			for (i = 1; i <= length(h); i++) {
				c = index("0123456789abcdef", substr(h, i, 1)) - 1
				d = d * 16 + c
			}
			return d
		}
		$2 ~ /^[A-Z_]+$/ && NF >= 6 {
			a = h2d($3); s = h2d($5); w = h2d(want)
			if (a > 0 && w >= a && w < a + s) { print $1, $2, $3, $4; exit }
		}'
}

# probe_sites BIN: for every note pc, one line:
#   pc function aligned(0/1) bytes|joined prev_non_nop_insn|next_insn padding
probe_sites() {
	local bin=$1
	notes "$bin" | awk '{ print $3 }' >"$T/pcs"
	objdump -dw "$bin" | awk -v pcfile="$T/pcs" '
		function h2d(h,   i, d, c) {
			d = 0; h = tolower(h); sub(/^0x/, "", h)
			for (i = 1; i <= length(h); i++) {
				c = index("0123456789abcdef", substr(h, i, 1)) - 1
				d = d * 16 + c
			}
			return d
		}
		BEGIN {
			while ((getline line < pcfile) > 0) { npc++; PC[npc] = h2d(line) }
			FS = "\t"
		}
		/^[0-9a-f]+ <.*>:$/ {
			fn = $0; sub(/^[0-9a-f]+ </, "", fn); sub(/>:$/, "", fn)
			next
		}
		/^ *[0-9a-f]+:\t/ {
			a = $1; sub(/:$/, "", a); gsub(/ /, "", a)
			if ($3 == "") {   # continuation line of a long instruction
				BY[n] = BY[n] " " $2
				next
			}
			n++
			A[n] = h2d(a); BY[n] = $2; INS[n] = $3; FN[n] = fn
			POS[A[n]] = n
		}
		function isnop(s) {
			return s ~ /^(nop|xchg +%ax,%ax|data16|cs nop|ds nop)/ ||
			       s ~ /^(data16 )+cs nop/
		}
		END {
			for (k = 1; k <= npc; k++) {
				pc = PC[k]
				if (!(pc in POS)) { printf "%x ? 0 none none none 0\n", pc; continue }
				i = POS[pc]
				b = BY[i]; gsub(/^ +| +$/, "", b); gsub(/ +/, "", b)
				j = i - 1
				while (j > 0 && isnop(INS[j]) && FN[j] == FN[i]) j--
				prev = INS[j]; gsub(/ +/, "_", prev)
				nxt = INS[i + 1]; gsub(/ +/, "_", nxt)
				pad = pc - A[j + 1]
				printf "%x %s %d %s %s %s %d\n", pc, FN[i], (pc % 8 == 0),
				       b, prev, nxt, pad
			}
		}'
}

# descriptors BIN: for every site descriptor symbol, one line
#   ok|bad:<reasons> symbol phase scope nargs t0 t1 cat|name|arg...
# (the bytes are read from the file through the section table)
descriptors() {
	local bin=$1
	readelf -SW "$bin" | sed 's/^ *\[ *[0-9]*\]//' |
		awk 'NF >= 6 && $2 ~ /^[A-Z_]+$/ && $2 != "NOBITS" { print $3, $4, $5 }' >"$T/secs"
	nm -S --defined-only "$bin" | grep -E 'tracebpf__(site|b[0-9]|e[0-9])' >"$T/syms"
	od -An -v -tu1 "$bin" | awk -v secs="$T/secs" -v syms="$T/syms" '
		function h2d(h,   i, d, c) {
			d = 0; h = tolower(h); sub(/^0x/, "", h)
			for (i = 1; i <= length(h); i++) {
				c = index("0123456789abcdef", substr(h, i, 1)) - 1
				d = d * 16 + c
			}
			return d
		}
		{ for (i = 1; i <= NF; i++) F[nb++] = $i }
		END {
			while ((getline line < secs) > 0) {
				split(line, f, " ")
				ns++; SA[ns] = h2d(f[1]); SO[ns] = h2d(f[2]); SS[ns] = h2d(f[3])
			}
			while ((getline line < syms) > 0) {
				split(line, f, " ")
				describe(f[1], h2d(f[1]), h2d(f[2]), f[4])
			}
		}
		function describe(addrhex, addr, symsize, sym,   k, off, i, b, err, magic, size,
				  ph, sc, na, t0, t1, flags, line, nul, s, cur, scs, copy, step, isid, file) {
			off = -1
			for (k = 1; k <= ns; k++)
				if (SA[k] > 0 && addr >= SA[k] && addr < SA[k] + SS[k]) off = addr - SA[k] + SO[k]
			if (off < 0) { print "bad:no-section", sym; return }
			for (i = 0; i < symsize; i++) b[i] = F[off + i]
			err = ""
			magic = b[0] + 256 * b[1] + 65536 * b[2] + 16777216 * b[3]
			size = b[4] + 256 * b[5]
			ph = sprintf("%c", b[6]); sc = b[7]; na = b[8]
			t0 = b[9]; t1 = b[10]; flags = b[11]
			line = b[12] + 256 * b[13] + 65536 * b[14] + 16777216 * b[15]
			if (magic != 827540052) err = err ",magic"
			if (size > 512 || size > symsize || size < 20) { err = err ",size"; size = symsize }
			if (ph !~ /^[BEICbenstfMv]$/) err = err ",phase"
			if (ph == "I" && sc != 116 && sc != 112 && sc != 103) err = err ",scope"
			if (ph != "I" && sc != 0) err = err ",scope"
			copy = flags % 2; step = int(flags / 2) % 2; isid = int(flags / 4) % 2
			if (flags >= 8) err = err ",flags"
			if (ph ~ /^[benstf]$/ && !isid) err = err ",id-flag"
			if (step && ph !~ /^[nt]$/) err = err ",step"
			if (na > 2) err = err ",nargs"
			if (t0 > 6 || t1 > 6) err = err ",type"
			if ((na < 1 && t0 != 0) || (na < 2 && t1 != 0)) err = err ",unused-type"
			if ((na >= 1 && t0 == 0) || (na >= 2 && t1 == 0)) err = err ",missing-type"
			if (line < 1) err = err ",line"
			if (addr % 8 != 0) err = err ",align"
			# the strings, then the source file (format 2.5)
			nul = 0; s = ""; cur = ""; file = ""
			for (i = 16; i < size; i++) {
				if (b[i] == 0) {
					if (cur == "" && !(copy && nul == 1)) err = err ",empty-string"
					if (nul == 2 + step + na) file = cur
					else s = s (nul ? "|" : "") cur
					cur = ""; nul++
				} else {
					cur = cur sprintf("%c", b[i])
				}
			}
			if (b[size - 1] != 0) err = err ",unterminated"
			if (nul != 3 + step + na) err = err ",strings"
			if (file !~ /^[^\/]+\.(c|cc|cpp|h|hpp)$/) err = err ",file"
			scs = sc ? sprintf("%c", sc) : "-"
			printf "%s %s %s %s %d %d %d %s\n", (err == "" ? "ok" : "bad:" substr(err, 2)),
			       sym, ph, scs, na, t0, t1, s
		}'
}

# check_binary LABEL BIN MODE MIN_NOTES
#   MODE lea: every site is the guarded 5-byte nop; nop1: every site is a
#   1-byte nop; redzone: as lea, except the site in rz_naive, a bare nop5.
check_binary() {
	local label=$1 bin=$2 mode=$3 min=$4
	local n sem bad base sec

	notes "$bin" >"$T/notes"
	# ring: the fast path's request for a thread's ring (one per object
	# and translation unit in C, one per object in C++), not a site.
	check_eq "$label: all notes are tracebpf:event, event_id or ring" "$(grep -c . "$T/notes")" \
		"$(awk '$1 == "tracebpf" && ($2 == "event" || $2 == "event_id" || $2 == "ring")' "$T/notes" | grep -c .)"
	check_eq "$label: every ring note passes the object's key in %rdi" "" \
		"$(awk '$2 == "ring" { $1 = $2 = $3 = $4 = $5 = ""; sub(/^ +/, ""); if ($0 != "8@%rdi") print }' "$T/notes" | head -1)"
	grep -v ' ring ' "$T/notes" >"$T/notes.sites" || true
	mv "$T/notes.sites" "$T/notes"
	n=$(grep -c . "$T/notes")
	check_ge "$label: stapsdt notes" "$min" "$n"
	# The recorder reads the arguments straight from these registers
	# (TRACEBPF_REGS_EVENT, TRACEBPF_REGS_EVENT_ID in trace.h).
	# redzone is built with TRACEBPF_NO_PROBE_TIME: no time in %r8.
	local regs="8@%rdi 8@%rsi 8@%rdx 8@%r8"
	[ "$mode" = redzone ] && regs="8@%rdi 8@%rsi 8@%rdx"
	bad=$(awk -v want="$regs" '$2 == "event" { $1 = $2 = $3 = $4 = $5 = ""; sub(/^ +/, ""); if ($0 != want) print }' "$T/notes" | head -1)
	check_eq "$label: every event note has the fixed registers $regs" "" "$bad"
	bad=$(awk '$2 == "event_id" { $1 = $2 = $3 = $4 = $5 = ""; sub(/^ +/, ""); if ($0 != "8@%rdi 8@%rsi 8@%rdx 8@%rcx 8@%rax 8@%r8") print }' "$T/notes" | head -1)
	check_eq "$label: every event_id note has the fixed registers 8@%rdi 8@%rsi 8@%rdx 8@%rcx 8@%rax 8@%r8" "" "$bad"
	check_eq "$label: no memory operand in any arg" "0" \
		"$(awk '{ $1 = $2 = $3 = $4 = $5 = "" } /\(/' "$T/notes" | grep -c .)"
	check_eq "$label: no %rsp/%esp/%sp operand in any arg" "0" \
		"$(awk '{ $1 = $2 = $3 = $4 = $5 = "" } /%(rsp|esp|sp)( |$)/' "$T/notes" | grep -c .)"

	sem=$(symaddr "$bin" tracebpf_event_semaphore)
	case $sem in
	count:*) not_ok "$label: one tracebpf_event_semaphore symbol" "expected 1 got ${sem#count:}" ;;
	*) ok "$label: one tracebpf_event_semaphore symbol" ;;
	esac
	check_eq "$label: every note's semaphore is tracebpf_event_semaphore ($sem)" "$n" \
		"$(awk -v s="$sem" '{ a = tolower($5); sub(/^0x0*/, "", a) } a == s && a != "" && a != "0"' "$T/notes" | grep -c .)"
	sec=$(section_of "$bin" "$sem" | awk '{ print $1, $2 }')
	check_eq "$label: semaphore lives in .probes (progbits)" ".probes PROGBITS" "$sec"
	base=$(readelf -SW "$bin" | sed 's/^ *\[ *[0-9]*\]//' | awk '$1 == ".stapsdt.base" { print $3 }')
	base=$(hexnorm "${base:-0}")
	check_eq "$label: every note's base is .stapsdt.base (0x$base)" "$n" \
		"$(awk -v s="$base" '{ a = tolower($4); sub(/^0x0*/, "", a) } a == s && a != "0"' "$T/notes" | grep -c .)"

	probe_sites "$bin" >"$T/sites"
	case $mode in
	nop1)
		# TRACEBPF_PROBE_NOP1 sites are deliberately plain: no alignment.
		check_eq "$label: probe bytes are 90 (TRACEBPF_PROBE_NOP1)" "" \
			"$(awk '$4 != "90" { print "0x" $1 ": " $4; exit }' "$T/sites")"
		check_eq "$label: 1-byte nop sites are not wrapped in lea" "" \
			"$(awk '$5 ~ /^lea_-0x80\(%rsp\),%rsp$/ || $6 ~ /^lea_0x80\(%rsp\),%rsp$/ { print "0x" $1; exit }' "$T/sites")"
		;;
	*)
		check_eq "$label: every probe pc is 8-aligned" "" \
			"$(awk '$3 != 1 { print "pc 0x" $1 " in " $2; exit }' "$T/sites")"
		check_eq "$label: probe bytes are 0f 1f 44 00 00" "" \
			"$(awk '$4 != "0f1f440000" { print "0x" $1 ": " $4; exit }' "$T/sites")"
		check_eq "$label: every probe is preceded by lea -0x80(%rsp),%rsp" "" \
			"$(awk -v m="$mode" '!(m == "redzone" && $2 == "rz_naive") && ($5 !~ /^lea_-0x80\(%rsp\),%rsp$/ || $7 > 7) { print "0x" $1 ": " $5 " pad " $7; exit }' "$T/sites")"
		check_eq "$label: every probe is followed by lea 0x80(%rsp),%rsp" "" \
			"$(awk -v m="$mode" '!(m == "redzone" && $2 == "rz_naive") && $6 !~ /^lea_0x80\(%rsp\),%rsp$/ { print "0x" $1 ": " $6; exit }' "$T/sites")"
		;;
	esac

	descriptors "$bin" >"$T/desc"
	check_eq "$label: every site descriptor is well-formed" "" \
		"$(grep -v '^ok ' "$T/desc" | head -1)"
	check_ge "$label: notes >= descriptors with their own probe" \
		"$(grep -cE 'tracebpf__(site|b[0-9])' "$T/desc")" "$n"

	if need gdb; then
		check_eq "$label: gdb lists the probes" "$n" \
			"$(gdb -batch -nx -ex 'info probes stap tracebpf event' "$bin" 2>/dev/null | grep -c '^stap  *tracebpf  *event')"
	fi
}

# site_list FILE: "phase scope nargs t0 t1 cat|name|args", sorted, unique: the
# format of expected_sites.txt (sites common to C and C++) and
# expected_sites_cxx.txt (C++ only: category "cxx")
site_list() {
	awk '{ $1 = $2 = ""; sub(/^ +/, ""); print }' "$1" | sort -u
}

EXPECTED_OUT="fib(20)=6765
scopes(10)=25
all_macros=1
tu2_work(6)=55
extras=18
same_semaphore=1
values=ok"

# --- 1. the main test program in the compiler matrix --------------------------

for cc in gcc clang; do
	for lang in c c++; do
		for opt in -O0 -O2; do
			if [ $lang = c ]; then
				comp=$cc
				std=$CSTD
				tag=$cc-c11$opt
			else
				comp=$([ $cc = gcc ] && echo g++ || echo clang++)
				std="-x c++ $CXXSTD"
				tag=$comp-c++17$opt
			fi
			bin=$B/test_macros.$tag
			compile "compile test_macros $tag" "$bin.log" -- \
				$comp $std $opt $WARN $INC "$HERE/test_macros.c" "$HERE/test_tu2.c" -o "$bin" || continue

			out=$("$bin" 2>&1)
			check_eq "$tag: results with sites disabled" "$EXPECTED_OUT
enabled=0 evals=0" "$out"
			out=$("$bin" force 2>&1)
			check_eq "$tag: results with the semaphore forced on" "$EXPECTED_OUT
enabled=1 evals=11" "$out"

			check_binary "$tag" "$bin" lea 30

			site_list "$T/desc" >"$bin.sites"
			grep -v ' cxx|' "$bin.sites" >"$bin.sites.common"
			if diff -u "$HERE/expected_sites.txt" "$bin.sites.common" >"$bin.sites.diff"; then
				ok "$tag: site descriptors are the expected ones"
			else
				not_ok "$tag: site descriptors are the expected ones" \
					"expected tests/header/expected_sites.txt got $bin.sites.common (diff: $bin.sites.diff)"
			fi
			if [ $lang = c++ ]; then
				if grep ' cxx|' "$bin.sites" | diff -u "$HERE/expected_sites_cxx.txt" - >"$bin.cxx.diff"; then
					ok "$tag: C++ template/lambda/member site descriptors"
				else
					not_ok "$tag: C++ template/lambda/member site descriptors" \
						"expected tests/header/expected_sites_cxx.txt got diff $bin.cxx.diff"
				fi
				check_eq "$tag: no guard variables (descriptors are constant-initialised)" "0" \
					"$(nm "$bin" | grep -c -E '_ZGV|__cxa_guard')"
			fi
		done
	done
done

# Other language versions and build modes: compile warning-free and run right.
for variant in "g++ -x c++ -std=c++11" "g++ -x c++ -std=c++20" \
	"clang++ -x c++ -std=c++11" "clang++ -x c++ -std=c++20" \
	"gcc -std=c17 -pedantic" "gcc -std=gnu11" "gcc -std=c11 -no-pie -fno-pie" \
	"gcc -std=c11 -flto"; do
	set -- $variant
	tag=$(echo "$variant" | tr -d ' ' | tr -c 'a-zA-Z0-9+=_-' '_')
	bin=$B/test_macros.$tag
	compile "compile test_macros $variant -O2" "$bin.log" -- \
		$variant -O2 $WARN $INC "$HERE/test_macros.c" "$HERE/test_tu2.c" -o "$bin" || continue
	check_eq "$variant: results" "$EXPECTED_OUT
enabled=0 evals=0
$EXPECTED_OUT
enabled=1 evals=11" "$("$bin" 2>&1; "$bin" force 2>&1)"
	check_eq "$variant: every probe is the guarded 5-byte nop" "" \
		"$(probe_sites "$bin" | awk '$3 != 1 || $4 != "0f1f440000" || $5 !~ /^lea_-0x80/ || $6 !~ /^lea_0x80/ { print "0x" $1; exit }')"
	case $variant in
	*no-pie*)
		check_binary "$variant" "$bin" lea 30
		check_eq "$variant: binary is ET_EXEC" "EXEC" \
			"$(readelf -h "$bin" | awk '/Type:/ { print $2 }')"
		;;
	esac
done

# The memory-dump API, in every language version: untraced, registration
# works, the 65th is refused, and nothing is called or woken.
for variant in "gcc $CSTD -O0" "gcc $CSTD -O2" "clang $CSTD -O2" "g++ -x c++ -std=c++11 -O2" \
	"g++ -x c++ -std=c++20 -O0" "clang++ -x c++ -std=c++11 -O2"; do
	tag=$(echo "$variant" | tr -d ' ' | tr -c 'a-zA-Z0-9+=_-' '_')
	bin=$B/memdump_api.$tag
	compile "compile memdump_api $variant" "$bin.log" -- \
		$variant $WARN $INC "$HERE/memdump_api.c" -o "$bin" || continue
	check_eq "$variant: memory-dump API untraced" \
		"register=0 full=-1 unregister=0 unknown=-1 called=0 wakes=0" "$("$bin" 2>&1)"
done

# --- 2. what must not compile --------------------------------------------------

for comp in "gcc $CSTD" "clang $CSTD" "g++ -x c++ $CXXSTD" "clang++ -x c++ $CXXSTD"; do
	tag=${comp%% *}
	compile "$tag: bad.c control case compiles" "$B/bad.$tag.0.log" -- \
		$comp $WARN $INC -DCASE=0 -c "$HERE/bad.c" -o "$B/bad.o"
	compile_fails "$tag: non-literal category fails to compile" "$B/bad.$tag.1.log" "" -- \
		$comp $WARN $INC -DCASE=1 -c "$HERE/bad.c" -o "$B/bad.o"
	compile_fails "$tag: non-literal name fails to compile" "$B/bad.$tag.2.log" "" -- \
		$comp $WARN $INC -DCASE=2 -c "$HERE/bad.c" -o "$B/bad.o"
	compile_fails "$tag: non-literal argument name fails to compile" "$B/bad.$tag.3.log" "" -- \
		$comp $WARN $INC -DCASE=3 -c "$HERE/bad.c" -o "$B/bad.o"
	compile_fails "$tag: non-literal category in a scoped TRACE_EVENT0 fails" "$B/bad.$tag.4.log" "" -- \
		$comp $WARN $INC -DCASE=4 -c "$HERE/bad.c" -o "$B/bad.o"
	compile_fails "$tag: descriptor over 512 bytes fails with a clear message" "$B/bad.$tag.5.log" "too long" -- \
		$comp $WARN $INC -DCASE=5 -c "$HERE/bad.c" -o "$B/bad.o"
	compile_fails "$tag: a struct argument value fails to compile" "$B/bad.$tag.6.log" "" -- \
		$comp $WARN $INC -DCASE=6 -c "$HERE/bad.c" -o "$B/bad.o"
done

# --- 3. shared objects: one semaphore each -------------------------------------

for comp in "gcc $CSTD" "clang $CSTD" "g++ -x c++ $CXXSTD"; do
	tag=${comp%% *}
	lib=$B/libshlib.$tag.so
	exe=$B/shlib_main.$tag
	compile "$tag: build shared library with -fPIC -shared" "$lib.log" -- \
		$comp -O2 $WARN $INC -fPIC -shared "$HERE/shlib.c" -o "$lib" || continue
	compile "$tag: build executable linked to it" "$exe.log" -- \
		$comp -O2 $WARN $INC "$HERE/shlib_main.c" -o "$exe" -x none "$lib" -Wl,-rpath,"$B" || continue
	check_eq "$tag: library does not export tracebpf_event_semaphore" "0" \
		"$(nm -D --defined-only "$lib" | grep -c tracebpf_event_semaphore)"
	check_binary "$tag lib" "$lib" lea 2
	check_binary "$tag exe" "$exe" lea 2
	check_eq "$tag: executable and library semaphores are distinct objects at run time" \
		"exe_enabled=0 lib_enabled=0 distinct=1
exe_enabled=1 lib_enabled=0 lib_sum=45 distinct=1" "$("$exe" 2>&1; "$exe" force 2>&1)"
done

# --- 4. the instrumented test programs, the demo and the benchmarks --------------

P=$B/progs
mkdir -p "$P"
for cc in gcc clang; do
	for prog in mt_events seq_until_killed quiet_thread fork_child loop_events \
		lib_user noprobes redzone api_events; do
		[ $prog = lib_user ] && continue
		compile "$cc: compile tests/progs/$prog.c" "$P/$prog.$cc.log" -- \
			$cc -std=c11 -O2 $WARN $INC "$ROOT/tests/progs/$prog.c" -o "$P/$prog.$cc" -pthread
	done
	compile "$cc: compile tests/progs/libtbtest.c (-fPIC -shared)" "$P/libtbtest.$cc.log" -- \
		$cc -std=c11 -O2 $WARN $INC -fPIC -shared "$ROOT/tests/progs/libtbtest.c" -o "$P/libtbtest.so"
	compile "$cc: compile tests/progs/lib_user.c" "$P/lib_user.$cc.log" -- \
		$cc -std=c11 -O2 $WARN $INC "$ROOT/tests/progs/lib_user.c" -o "$P/lib_user.$cc" \
		-L"$P" -ltbtest -Wl,-rpath,'$ORIGIN' -pthread
	compile "$cc: compile examples/demo.c" "$P/demo.$cc.log" -- \
		$cc -std=c11 -O2 $WARN $INC "$ROOT/examples/demo.c" -o "$P/demo.$cc" -pthread
	compile "$cc: compile bench/probe_cost.c" "$P/probe_cost.$cc.log" -- \
		$cc -std=c11 -O2 $WARN $INC "$ROOT/bench/probe_cost.c" -o "$P/probe_cost.$cc" -pthread
	compile "$cc: compile bench/probe_cost.c -DTRACEBPF_PROBE_NOP1" "$P/probe_cost_nop1.$cc.log" -- \
		$cc -std=c11 -O2 $WARN $INC -DTRACEBPF_PROBE_NOP1 "$ROOT/bench/probe_cost.c" -o "$P/probe_cost_nop1.$cc" -pthread
	compile "$cc: compile bench/rate.c" "$P/rate.$cc.log" -- \
		$cc -std=c11 -O2 $WARN $INC "$ROOT/bench/rate.c" -o "$P/rate.$cc" -pthread

	[ -x "$P/probe_cost.$cc" ] && check_binary "$cc probe_cost" "$P/probe_cost.$cc" lea 6
	# the extended API (event_id sites) in C and as C++
	cxx=$([ $cc = gcc ] && echo g++ || echo clang++)
	compile "$cxx: compile tests/progs/api_events.c as C++17" "$P/api_events.$cxx.log" -- \
		$cxx -x c++ -std=c++17 -O2 $WARN $INC "$ROOT/tests/progs/api_events.c" -o "$P/api_events.$cxx" -pthread
	for bin in "$P/api_events.$cc" "$P/api_events.$cxx"; do
		[ -x "$bin" ] || continue
		check_binary "$(basename "$bin")" "$bin" lea 25
		check_ge "$(basename "$bin"): event_id notes" 20 \
			"$(awk '$2 == "event_id"' "$T/notes" | grep -c .)"
		check_eq "$(basename "$bin"): phases of the descriptors" "C I M b e f n s t B E" \
			"$(awk '{ print $3 }' "$T/desc" | sort | uniq | grep -v '^X$' | tr '\n' ' ' | sed 's/ $//' | awk '{ n = split($0, a, " "); o = ""; for (i = 1; i <= n; i++) if (a[i] ~ /[a-z]/ || a[i] ~ /[CIM]/) o = o (o ? " " : "") a[i]; for (i = 1; i <= n; i++) if (a[i] ~ /^[BE]$/) o = o " " a[i]; print o }')"
		check_eq "$(basename "$bin"): runs untraced" "active=0 enabled=0" \
			"$("$bin" | sed -n 's/^pid=[0-9]* //p')"
	done
	[ -x "$P/probe_cost_nop1.$cc" ] && check_binary "$cc probe_cost_nop1" "$P/probe_cost_nop1.$cc" nop1 6
	[ -x "$P/noprobes.$cc" ] && check_eq "$cc noprobes: has no stapsdt notes" "0" \
		"$(notes "$P/noprobes.$cc" | grep -c .)"
	[ -x "$P/lib_user.$cc" ] && check_eq "$cc lib_user: runs" "done" \
		"$("$P/lib_user.$cc" 2>&1)"
	[ -x "$P/mt_events.$cc" ] && check_eq "$cc mt_events 4 1000: runs" "done" \
		"$("$P/mt_events.$cc" 4 1000 2>&1)"
	[ -x "$P/fork_child.$cc" ] && check_eq "$cc fork_child: runs" "ok" \
		"$("$P/fork_child.$cc" 2>&1 | sed -n 's/^parent=[0-9][0-9]* child=[0-9][0-9]*$/ok/p')"
	[ -x "$P/probe_cost.$cc" ] && check_eq "$cc probe_cost 1000000: output" "ok" \
		"$("$P/probe_cost.$cc" 1000000 | sed -n 's/^ns_per_hit=[0-9]*\.[0-9][0-9] n=1000000 threads=1 rate=[0-9]*$/ok/p')"

	# The red-zone program: its leaf functions must really use the red zone,
	# or it proves nothing.
	rz=$P/redzone.$cc
	if [ -x "$rz" ]; then
		for fn in rz_safe rz_naive; do
			body=$(objdump -d --no-show-raw-insn "$rz" | awk -v f="<$fn>:" '$2 == f { on = 1; next } on && /^$/ { exit } on')
			check_eq "$cc redzone: $fn has no sub ...,%rsp (no stack frame)" "0" \
				"$(echo "$body" | grep -cE 'sub +\$?[^,]*,%rsp')"
			check_ge "$cc redzone: $fn keeps locals at negative %rsp offsets" 1 \
				"$(echo "$body" | grep -cE '[[:space:],]-0x[0-9a-f]+\(%rsp')"
		done
		check_binary "$cc redzone" "$rz" redzone 2
		check_eq "$cc redzone: the naive site is a bare 8-aligned nop5 (no lea pair)" "1" \
			"$(awk '$2 == "rz_naive" && $3 == 1 && $4 == "0f1f440000" && $5 !~ /^lea_-0x80/ && $6 !~ /^lea_0x80/' "$T/sites" | grep -c .)"
		check_eq "$cc redzone 1000 without a tracer" "safe_corrupted=0 naive_corrupted=0 calls=1000" \
			"$("$rz" 1000 2>&1)"
	fi
done

if [ -x "$P/demo.gcc" ]; then
	check_eq "demo runs to completion" "demo: 300 items through 2 consumers" \
		"$(timeout 20 "$P/demo.gcc" 2>&1)"
fi

# perf recognises the SDT event (its cache goes to the build directory).
if need perf && [ -x "$B/test_macros.gcc-c11-O2" ]; then
	perf --buildid-dir "$B/perf-buildid" buildid-cache -a "$B/test_macros.gcc-c11-O2" >/dev/null 2>&1
	check_eq "perf lists sdt_tracebpf:event" "1" \
		"$(perf --buildid-dir "$B/perf-buildid" list sdt 2>/dev/null | grep -c 'sdt_tracebpf:event')"
fi

# The descriptor's constants (tracebpf/site.h) and lib/format/tbrecords.h's are tied
# by _Static_assert: the pair compiles, and a value that differs does not.
if [ -f "$ROOT/lib/format/tbrecords.h" ]; then
	pair='#include <stdint.h>
#include <linux/types.h>
#include "tracebpf/site.h"'
	check_eq "site.h and tbrecords.h agree" "ok" \
		"$(printf '%s\n#include "format/tbrecords.h"\n' "$pair" |
		   gcc -std=c11 -fsyntax-only -I"$ROOT/lib/include" -I"$ROOT/lib" -x c - 2>&1 && echo ok)"
	for c in "TRACEBPF_SITE_MAX 511:site limits" "TRACEBPF_ARG_PTR 7:argument types" \
		 "TRACEBPF_SITEF_ID 8:site flags"; do
		def=${c%%:*} what=${c#*:}
		check_eq "a different ${def% *} is refused" "1" \
			"$(printf '%s\n#undef %s\n#define %s\n#include "format/tbrecords.h"\n' "$pair" "${def% *}" "$def" |
			   gcc -std=c11 -fsyntax-only -I"$ROOT/lib/include" -I"$ROOT/lib" -x c - 2>&1 |
			   grep -c "$what as tracebpf/site.h has them")"
	done
fi

# The build refuses a libbpf older than 1.3 (one perf-event uprobe per
# site) with a message that says what to do; a recent one passes (-n: the
# check runs when the Makefile is read, nothing is built).
msg=$(make -s -n -C "$ROOT" LIBBPF_VER=1.1.2 all 2>&1 >/dev/null)
check_eq "make refuses libbpf 1.1.2" "yes" \
	"$(grep -q "tracebpf needs libbpf >= 1.3, found 1.1.2: run 'sudo make deps'" <<<"$msg" && echo yes || echo "no: $msg")"
check_eq "make takes libbpf 1.4.6" "0" \
	"$(make -s -n -C "$ROOT" LIBBPF_VER=1.4.6 all >/dev/null 2>&1; echo $?)"

rm -rf "$T" "$B/bad.o"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
