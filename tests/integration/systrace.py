"""Checks a systemTraceEvents string against the two grammars that read it,
line by line, and parses it for the tests.

The regular expressions are our own transcriptions of the viewers' sources
(read with the project's search tool), not copies:

* catapult (chrome://tracing), tracing/tracing/extras/importer/linux_perf/
  ftrace_importer.js: `lineREWithTGID`, the line format with a TGID column,
  which the importer auto-detects from the first line; and the sched parser
  (linux_perf/sched_parser.js) `schedSwitchRE` and `schedWakeupRE`, and the
  power parser's `state=(\\d+) cpu_id=(\\d+)`.
* Perfetto, src/trace_processor/importers/systrace/systrace_line_tokenizer.cc
  (the regex searched anywhere in the line; task = the trimmed text before
  the match, args = the trimmed text after it), and systrace_line_parser.cc:
  args split on single spaces into key=value; sched_switch needs integer
  prev_pid, prev_prio, next_pid, next_prio; sched_waking an integer pid;
  cpu_idle and cpu_frequency an integer cpu_id and a numeric state.
One line that fails Perfetto fails its whole import, so every line counts.
"""
import re

# catapult ftrace_importer.js, lineREWithTGID
CATAPULT_TGID_LINE = re.compile(
    r"^\s*(.+)-(\d+)\s+\(\s*(\d+|-+)\)\s\[(\d+)\]"
    r"\s+[dX.][N.][Hhs.][0-9a-f.]"
    r"\s+(\d+\.\d+):\s+(\S+):\s(.*)$")
# catapult sched_parser.js
CATAPULT_SCHED_SWITCH = re.compile(
    r"prev_comm=(.+) prev_pid=(\d+) prev_prio=(\d+) prev_state=(\S\+?|\S\|\S) ==> "
    r"next_comm=(.+) next_pid=(\d+) next_prio=(\d+)")
CATAPULT_SCHED_WAKEUP = re.compile(
    r"comm=(.+) pid=(\d+) prio=(\d+) success=(\d+) target_cpu=(\d+)")
# catapult power_parser.js (cpu_idle, cpu_frequency)
CATAPULT_POWER = re.compile(r"state=(\d+) cpu_id=(\d+)")
# Perfetto systrace_line_tokenizer.cc (std::regex flavour, regex_search)
PERFETTO_LINE = re.compile(
    r"-(\d+)\s+\(?\s*(\d+|-+)?\)?\s?\[(\d+)\]\s*"
    r"([a-zA-Z.]{3}[0-9a-f.]{1,2}\s*)?(\d+\.\d+):\s+(\S+):")


def perfetto_args(args_str):
    """systrace_line_parser.cc: split on ' ', then on '=' (empty pieces are
    skipped by base::StringSplitter); a token without '=' is key 'name'."""
    args = {}
    for tok in filter(None, args_str.split(" ")):
        if "=" not in tok:
            args["name"] = tok
            continue
        key = value = ""
        for piece in filter(None, tok.split("=")):
            if not key:
                key = piece
            else:
                value = piece
        args[key] = value
    return args


def _uint(s):
    return s.isdigit()


def _num(s):
    try:
        float(s)
        return True
    except ValueError:
        return False


def check_line(line):
    """Both grammars accept line and agree on it; returns the parsed line."""
    c = CATAPULT_TGID_LINE.match(line)
    assert c, f"catapult's TGID line format rejects: {line!r}"
    p = PERFETTO_LINE.search(line)
    assert p, f"Perfetto's tokenizer rejects: {line!r}"
    task = line[:p.start()].strip()
    args_str = line[p.end():].strip()
    comm, tid, tgid, cpu, ts, event, details = c.groups()
    assert (task, p.group(1), p.group(3), p.group(5), p.group(6)) == \
        (comm, tid, cpu, ts, event), f"the grammars disagree on {line!r}"
    assert p.group(2) == tgid, f"Perfetto reads tgid {p.group(2)!r}, catapult {tgid!r}: {line!r}"
    assert not re.search(r"\s", task), f"comm with a space: {line!r}"
    flags = line[c.end(4) + 1:].split()[0]
    assert len(flags) == 4, f"flags must be exactly 4 characters: {line!r}"
    assert re.search(r"\) \[", line), f"exactly one space after ')': {line!r}"
    args = perfetto_args(args_str)
    if event == "sched_switch":
        assert CATAPULT_SCHED_SWITCH.search(details), f"catapult sched_switch: {line!r}"
        for k in ("prev_pid", "prev_prio", "next_pid", "next_prio"):
            assert _uint(args.get(k, "")), f"Perfetto sched_switch {k}: {line!r}"
        for k in ("prev_comm", "next_comm"):
            assert k in args and args[k], f"Perfetto sched_switch {k}: {line!r}"
    elif event == "sched_wakeup":
        assert CATAPULT_SCHED_WAKEUP.search(details), f"catapult sched_wakeup: {line!r}"
    elif event == "sched_waking":
        assert _uint(args.get("pid", "")), f"Perfetto sched_waking pid: {line!r}"
    elif event in ("cpu_idle", "cpu_frequency"):
        assert CATAPULT_POWER.search(details), f"catapult {event}: {line!r}"
        assert _uint(args.get("cpu_id", "")) and _num(args.get("state", "")), line
    return {"comm": comm, "tid": int(tid), "tgid": int(tgid), "cpu": int(cpu),
            "ts": ts, "ts_ns": int(ts.replace(".", "")) * 1000, "event": event,
            "details": details, "args": args, "line": line}


def check_system_trace(text):
    """Every rule of docs/output.md for systemTraceEvents; returns the lines."""
    assert isinstance(text, str)
    assert text.startswith("# tracer: nop\n"), text[:80]
    assert text.endswith("\n"), "Perfetto drops a last line without a newline"
    body = text.split("\n")[:-1]
    assert "# clock_type=LINUX_CLOCK_MONOTONIC" in body, "no clock_type line"
    lines = [check_line(l) for l in body if not l.startswith("#")]
    ts = [l["ts_ns"] for l in lines]
    assert ts == sorted(ts), "lines not in time order"
    return lines
