# bench/lttng_lib.sh - sourced by the bench scripts that measure LTTng-UST
# as a peer (bench/lttng.sh, bench/fast.sh, bench/burst.sh): installing it,
# building a program with a tracepoint provider, the root session daemon,
# sessions and their counts. The caller sets $out (its temp dir) and
# $session (a session name of its own) first, and calls lttng_cleanup on
# exit. A step that cannot be done returns non-zero; lttng_why then holds
# the reason (for the caller's "skipped: <reason>").
# shellcheck shell=bash disable=SC2154,SC2034  # out, session: the caller's

lttng_sessiond=  # the pid of the session daemon started here, if any
lttng_why=

# liblttng-ust-dev and lttng-tools are needed; babeltrace2 only counts.
lttng_install() {
  local need=() p
  for p in liblttng-ust-dev lttng-tools babeltrace2; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
  done
  [ ${#need[@]} -eq 0 ] && return 0
  echo "bench: installing ${need[*]} (LTTng-UST peer)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" \
    >"$out/apt.log" 2>&1 || true
}

# lttng_ready NAME: root, the packages (installed if missing), and the
# tools; 1 with lttng_why set if LTTng-UST cannot be had. NAME is the
# program the reason names.
lttng_ready() {
  [ "$(id -u)" = 0 ] || { lttng_why="needs root (the root session daemon)"; return 1; }
  lttng_install
  if ! { command -v lttng && command -v lttng-sessiond; } >/dev/null; then
    lttng_why="lttng-tools not installed ($(tail -n 1 "$out/apt.log" 2>/dev/null))"
    return 1
  fi
  if ! pkg-config --exists lttng-ust; then
    lttng_why="liblttng-ust-dev not installed ($(tail -n 1 "$out/apt.log" 2>/dev/null))"
    return 1
  fi
}

# lttng_build OUTPUT SOURCE... [-DMACRO...]: a program with an LTTng-UST
# tracepoint provider (its header in bench/), -Werror as the Makefile's.
lttng_build() {
  local o=$1
  shift
  mkdir -p "$(dirname "$o")"
  # shellcheck disable=SC2046  # pkg-config's flags are words
  if ! ${CC:-cc} -std=gnu11 -O2 -g -Wall -Wextra -Werror -Ibench -Ilib/include -pthread \
      "$@" -o "$o" $(pkg-config --cflags --libs lttng-ust) >"$out/cc.err" 2>&1; then
    lttng_why="$(basename "$o") does not build: $(head -c 200 "$out/cc.err")"
    return 1
  fi
}

# The root session daemon: the running one, or one started here (no
# kernel tracer: only user space is traced, and lttng-modules is not needed).
lttng_start_sessiond() {
  pgrep -u 0 -x lttng-sessiond >/dev/null && return 0
  if lttng-sessiond --daemonize --no-kernel >"$out/sessiond.err" 2>&1 &&
     lttng_sessiond=$(cat /var/run/lttng/lttng-sessiond.pid 2>/dev/null); then
    return 0
  fi
  lttng_why="lttng-sessiond does not start: $(head -c 200 "$out/sessiond.err")"
  return 1
}

# The session (if any) destroyed, and the daemon started here ended.
lttng_cleanup() {
  lttng destroy "$session" >/dev/null 2>&1 || true
  [ -n "$lttng_sessiond" ] || return 0
  kill "$lttng_sessiond" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$lttng_sessiond" 2>/dev/null || break; sleep 0.1; done
}

# lttng CMD... into $out/lttng.log; on failure says so with the log's end.
lttng_ctl() {
  lttng "$@" >>"$out/lttng.log" 2>&1 ||
    { echo "bench: lttng $1 failed: $(tail -n 3 "$out/lttng.log")" >&2; return 1; }
}

# Events the session's channels discarded (all channels, all CPUs). A
# count of 2^63 or more is LTTng's "not known" (seen once in a run of 500
# threads, where the trace lacked 24,893 events): left out of the sum,
# the events missing from the trace say how many.
lttng_discarded() {
  lttng list "$1" | awk '/Discarded events:/ && $3 < 2^62 { s += $3 } END { print s + 0 }'
}

# Did stop or destroy warn of discarded events or lost packets (in
# $out/lttng.log)?
lttng_warned() { grep -q 'were discarded\|were lost' "$out/lttng.log"; }

# Events in trace DIR (babeltrace2's counter), or "-" without babeltrace2.
lttng_count_events() {
  command -v babeltrace2 >/dev/null || { echo -; return; }
  babeltrace2 "$1" -c sink.utils.counter -p 'step=+0' 2>/dev/null |
    awk '/Event messages/ { c = $1 } END { print c + 0 }'
}

# lttng_record SUBBUF NSUBBUF CMD [ARG...]: runs CMD while session
# $session records bench:* into a trace in $out/trace, in a channel of
# NSUBBUF sub-buffers of SUBBUF per CPU (per-user buffers), or in LTTng's
# default channel if SUBBUF is "": prints CMD's output and leaves
# "DISCARDED COUNTED" in $out/check (DISCARDED gets "+warned" if stop or
# destroy warned of losses; COUNTED is lttng_count_events'). The trace is
# removed. Non-zero if an lttng command or CMD failed.
lttng_record() {
  local subbuf=$1 nsubbuf=$2 dir="$out/trace" d rc=0
  shift 2
  rm -rf "$dir"; : >"$out/lttng.log"
  lttng_ctl create "$session" --output="$dir" || return 1
  if [ -n "$subbuf" ]; then
    lttng_ctl enable-channel -u -s "$session" --subbuf-size="$subbuf" --num-subbuf="$nsubbuf" bench &&
      lttng_ctl enable-event -u -s "$session" -c bench 'bench:*' || return 1
  else
    lttng_ctl enable-event -u -s "$session" 'bench:*' || return 1
  fi
  lttng_ctl start "$session" || return 1
  "$@" || rc=$?
  lttng_ctl stop "$session" || return 1
  d=$(lttng_discarded "$session")
  lttng_ctl destroy "$session" || return 1
  # stop and destroy warn of discarded events and lost packets
  if lttng_warned; then d="$d+warned"; fi
  echo "$d $(lttng_count_events "$dir")" >"$out/check"
  rm -rf "$dir"
  return "$rc"
}
