"""Perfetto's protobuf trace format (docs/perfetto.md): `convert -o X.pftrace`
on real recordings of every kind of event, each trace held to

- Perfetto's schema: protoc decodes it as perfetto.protos.Trace;
- the rules of pftrace.py (every iid defined before use on its sequence,
  time in order per sequence, begins and ends balanced per track);
- the JSON of the same recording, event by event (pftrace.py rebuilds
  them): slices with their nesting and args, instants, counters, names and
  metadata;
- Perfetto's trace processor: no import error or data loss but the
  format's own (one skipped switch per CPU), and the same rows of slice,
  args, thread, process, counter, flow and sched as its import of the
  JSON, but for the differences docs/perfetto.md names.
"""
import json
import os
import re
import subprocess
from collections import Counter

import pytest

import pftrace
from conftest import (ROOT, TRACEBPF, Trace, perfetto_query, prog, scale,
                      us_to_ns)

PROTO = ROOT.parent / "shared" / "perfetto" / "perfetto_trace.proto"
NO_GROWTH = ("--fast-buffer-max", "64K")


def convert(tbt, out, *opts):
    p = subprocess.run([TRACEBPF, "convert", *map(str, opts), str(tbt), "-o", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stderr


def protoc_decodes(path):
    p = subprocess.run(["protoc", f"--proto_path={PROTO.parent}",
                        "--decode=perfetto.protos.Trace", PROTO.name],
                       stdin=open(path, "rb"), capture_output=True, timeout=300)
    assert p.returncode == 0, f"protoc cannot decode {path}: {p.stderr[-2000:]!r}"
    return p.stdout


def tp(path, sql):
    return perfetto_query(path, sql)


def tp_complaints(path):
    rows = tp(path, "select name, value from stats where value > 0 and "
                    "severity in ('error', 'data_loss')")
    return {r["name"]: int(r["value"]) for r in rows}


def loads_clean(path, cpus=64):
    """trace processor imports path with no complaint but the compact
    form's skipped first switch, at most one per CPU."""
    got = tp_complaints(path)
    assert got.pop("compact_sched_switch_skipped", 0) <= cpus
    assert got == {}, f"trace processor's complaints about {path}: {got}"


def num(v):
    """A value as trace processor's CSV or either file gives it, compared as
    the number it is when it is one (a double 1.0 and an integer 1 alike)."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return v


# ---- the trace processor's tables of the two files -----------------------

SLICES = """select s.ts, s.dur, s.name, s.category, s.depth, t.tid, p.name as parent
  from slice s left join thread_track tt on s.track_id = tt.id
  left join thread t using(utid) left join slice p on p.id = s.parent_id"""
ARGS = """select s.ts, s.name, replace(replace(a.key, 'args.', ''), 'debug.', '') as k,
  coalesce(a.int_value, a.real_value, a.string_value) as v
  from slice s join args a on a.arg_set_id = s.arg_set_id
  where a.key like 'args.%' or a.key like 'debug.%'"""
PROCESSES = "select pid, name from process where name is not null"
# the threads with slices (their names: the JSON's importer names them
# after the switches' comm over the JSON's thread_name; same_events holds
# the names to the JSON's own)
THREADS = """select t.tid from thread t where t.utid in
  (select utid from thread_track join slice on slice.track_id = thread_track.id)"""
COUNTERS = """select ct.name, c.ts / 1000 as us, c.value from counter c
  join counter_track ct on c.track_id = ct.id"""
FLOWS = """select so.name, so.ts, si.name, si.ts from flow f
  join slice so on so.id = f.slice_out join slice si on si.id = f.slice_in"""
SCHED = """select s.ts / 1000 as us, s.cpu, t.tid from sched s join thread t using(utid)"""
SCHED_STATES = """select s.ts / 1000 as us, s.cpu, t.tid,
  replace(s.end_state, 'I', 'S') as state from sched s join thread t using(utid)
  where s.end_state is not null"""


def rows(path, sql):
    return Counter(tuple(num(v) for v in r.values()) for r in tp(path, sql))


def same_tables(json_path, pf_path):
    for name, sql in (("slice", SLICES), ("args", ARGS), ("process", PROCESSES),
                      ("thread", THREADS), ("counter", COUNTERS), ("flow", FLOWS)):
        a, b = rows(json_path, sql), rows(pf_path, sql)
        assert a == b, f"{name}: only in the JSON's {list((a - b).items())[:5]}, " \
                       f"only in the protobuf's {list((b - a).items())[:5]}"
    a, b = rows(json_path, SCHED), rows(pf_path, SCHED)
    cpus = len({r[1] for r in a})
    # the compact form has no previous task for each CPU's first switch
    assert not b - a and sum((a - b).values()) <= cpus, \
        f"sched: only in the JSON's {list((a - b).items())[:5]}, " \
        f"only in the protobuf's {list((b - a).items())[:5]}"
    # A task's state as it left the CPU: where the JSON's switches say it
    # (after a break of the chain, docs/output.md "Scheduler chain breaks",
    # the JSON's importer leaves it unknown; the compact form has no
    # previous task to contradict)
    a, b = rows(json_path, SCHED_STATES), rows(pf_path, SCHED_STATES)
    assert sum((a - b).values()) <= cpus, \
        f"sched states: only in the JSON's {list((a - b).items())[:5]}"
    return sum(a.values())


# ---- the JSON's events against the protobuf's -------------------------------

def json_value(v):
    return v if not isinstance(v, float) or not v.is_integer() else int(v)


def norm_args(d):
    return {k: json_value(json.loads(v) if k == "dump" else v) for k, v in d.items()}


def json_slices(t):
    """(pid, tid, name, cat, begin, end, depth, args) of the JSON's X."""
    out, by_thread = [], {}
    for e in t.by_ph("X"):
        by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    for (pid, tid), evs in by_thread.items():
        evs.sort(key=lambda e: (us_to_ns(e["ts"]), -us_to_ns(e["ts"] + e["dur"])))
        stack = []
        for e in evs:
            b, end = us_to_ns(e["ts"]), us_to_ns(e["ts"] + e["dur"])
            while stack and stack[-1] <= b:
                stack.pop()
            out.append((pid, tid, e["name"], e["cat"], b, end, len(stack),
                        json.dumps(norm_args(e.get("args", {})), sort_keys=True)))
            stack.append(end)
    return Counter(out)


def pf_slices(pt):
    out = []
    for s in pt.slices:
        pid, tid = pt.thread_of(s["track"])
        if tid is None:
            continue   # an async slice: trace processor's tables compare those
        out.append((pid, tid, s["name"], s["cat"], s["ts"], s["end"], s["depth"],
                    json.dumps(norm_args(s["args"]), sort_keys=True)))
    return Counter(out)


def json_instants(t):
    out = []
    for e in t.by_ph("I"):
        tid = e["tid"] if e.get("s", "t") == "t" else None
        pid = None if e.get("s") == "g" else e["pid"]
        out.append((pid, tid, e["name"], e["cat"], us_to_ns(e["ts"]),
                    json.dumps(norm_args(e.get("args", {})), sort_keys=True)))
    return Counter(out)


def pf_instants(pt):
    out = []
    for i in pt.instants:
        pid, tid = pt.thread_of(i["track"])
        if pt.tracks[i["track"]].get("kind") not in ("thread", "process", None) or \
                (pid is not None and tid is None and
                 pt.tracks[i["track"]].get("kind") != "process"):
            continue   # an async instant
        if "dump" in i["args"]:
            continue   # a memory dump: compared below
        out.append((pid, tid, i["name"], i["cat"], i["ts"],
                    json.dumps(norm_args(i["args"]), sort_keys=True)))
    return Counter(out)


def json_counters(t):
    out = []
    for e in t.by_ph("C"):
        name = e["name"] + (f" id: {e['id']}" if "id" in e else "")
        for k, v in e["args"].items():
            out.append((e["pid"], f"{name} {k}", us_to_ns(e["ts"]), float(v)))
    return Counter(out)


def pf_counters(pt):
    return Counter((pt.thread_of(c["track"])[0], pt.tracks[c["track"]]["name"], c["ts"],
                    float(c["value"])) for c in pt.counters)


def same_events(t, pt):
    for what, a, b in (("slices", json_slices(t), pf_slices(pt)),
                       ("instants", json_instants(t), pf_instants(pt)),
                       ("counters", json_counters(t), pf_counters(pt))):
        assert a == b, f"{what}: only in the JSON {list((a - b).items())[:3]}, " \
                       f"only in the protobuf {list((b - a).items())[:3]}"
    names = {(d["pid"], d["tid"]): d.get("tname") for d in pt.tracks.values()
             if d.get("kind") == "thread" and d.get("tname")}
    assert t.thread_names() == names
    pnames = {d["pid"]: d.get("pname") for d in pt.tracks.values()
              if d.get("kind") == "process" and d.get("pname")}
    assert t.process_names() == pnames
    meta = json.loads(pt.metadata)
    # the JSON's text leaves forks, execs, exits and renames out
    assert meta.pop("kernel_events") >= t.meta["kernel_events"]
    assert meta == {k: v for k, v in t.meta.items() if k != "kernel_events"}


def check(json_path, tbt, tmp_path, *opts):
    """Converts tbt to a .pftrace (with opts) and holds it to everything
    above; returns the rebuilt trace."""
    pf = tmp_path / (tbt.stem + ".pftrace")
    convert(tbt, pf, *opts)
    protoc_decodes(pf)
    pt = pftrace.Trace(pf)
    assert not pt.errors, pt.errors[:10]
    t = Trace(json_path)
    same_events(t, pt)
    got = tp_complaints(pf)
    skipped = got.pop("compact_sched_switch_skipped", 0)
    assert got == {}, f"trace processor's complaints about {pf}: {got}"
    assert skipped <= len(t.meta.get("drops_per_cpu", [])), skipped
    same_tables(json_path, pf)
    return pt


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    """api_events with the scheduler: async slices, flows, counters with
    ids, COPY names, process and thread names, switches."""
    d = tmp_path_factory.mktemp("api")
    p = subprocess.run([TRACEBPF, "record", "-q", "-o", str(d / "api.json"), "--",
                        prog("api_events")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return d


def test_every_kind_of_event(api, tmp_path):
    pt = check(api / "api.json", api / "api.tbt", tmp_path)
    t = Trace(api / "api.json")
    assert pt.slices and pt.instants and pt.counters and pt.flows
    assert pt.switches > 0, "the scheduler's switches went in compact_sched"
    # flows and async slices: there at all (trace processor's tables
    # compared them with the JSON's)
    assert len(tp(tmp_path / "api.pftrace", FLOWS)) > 0
    assert t.by_ph("b") and tp(tmp_path / "api.pftrace",
                               "select * from slice where name = 'request'")


def test_compressed_holds_the_same(api, tmp_path):
    plain = tmp_path / "plain.pftrace"
    convert(api / "api.tbt", plain)
    z = check(api / "api.json", api / "api.tbt", tmp_path, "--compress")
    assert len(z.slices) == len(pftrace.Trace(plain).slices)
    raw = open(tmp_path / "api.pftrace", "rb").read()
    assert b"api_events" not in raw, "the names are in deflated groups"


def test_filters_apply(api, tmp_path):
    """--name keeps the slices of that name, as in the JSON."""
    t = Trace(api / "api.json")
    name = t.by_ph("X")[0]["name"]
    pf, js = tmp_path / "f.pftrace", tmp_path / "f.json"
    convert(api / "api.tbt", pf, "--name", name)
    convert(api / "api.tbt", js, "--name", name)
    pt = pftrace.Trace(pf)
    assert not pt.errors
    loads_clean(pf)
    assert pt.slices and {s["name"] for s in pt.slices} == {name}
    assert json_slices(Trace(js)) == pf_slices(pt)


def test_memory_dumps_fork_ghosts_and_tracepoints(recorder, tmp_path):
    rec = recorder("--memory-dump-interval=100ms", "-e", "signal:*", "--", prog("memdump"),
                   1).wait()
    pt = check(rec.out, rec.tbt, tmp_path)
    # a dump's values are its counters (docs/perfetto.md, "Events")
    assert Trace(rec.out).by_ph("v")
    assert any(c for c in pt.counters if pt.tracks[c["track"]]["name"].startswith("mem.dump"))
    rec = recorder("--no-sched", "--", prog("fork_ghost"), name="ghost").wait()
    pt = check(rec.out, rec.tbt, tmp_path)
    assert any("tracebpf_inherited" in s["args"] for s in pt.slices)


def test_signal_tracepoints_are_generic_events(recorder, tmp_path):
    rec = recorder("-e", "signal:*", "--no-sched", "--", prog("writer"), 3, 1).wait()
    pf = tmp_path / "sig.pftrace"
    convert(rec.tbt, pf)
    loads_clean(pf)
    text = protoc_decodes(pf).decode()
    assert 'event_name: "signal_generate"' in text or 'event_name: "signal_deliver"' in text
    got = tp(pf, "select count(*) as n from ftrace_event where name like 'signal%'")
    assert int(got[0]["n"]) > 0


def test_marks_at_gaps(recorder, tmp_path):
    """numbered_nest through the smallest rings: records lost, slices cut,
    ends and begins marked; the protobuf carries the same marks."""
    rec = recorder("--no-sched", "-b", "4K", *NO_GROWTH, "--", prog("numbered_nest"), 2,
                   scale(3000, 20000), 10).wait(timeout=120)
    t = Trace(rec.out)
    assert t.meta["drops_total"] > 0
    pt = check(rec.out, rec.tbt, tmp_path)
    marked = [s for s in pt.slices + pt.instants
              if any(k.startswith("tracebpf_") for k in s["args"])]
    assert marked


def test_split_parts_each_open_alone(recorder, tmp_path):
    """--split: each part a trace of its own (its rules held, protoc, trace
    processor clean), the slices of all parts those of the whole, each
    whole in one part. (Without losses: a gap may leave an async slice open
    to the end, and so one part; test_marks_at_gaps covers the gaps.)"""
    rec = recorder("--no-sched", "--", prog("numbered_nest"), 2, scale(1000, 20000),
                   10).wait(timeout=120)
    whole = tmp_path / "whole.pftrace"
    convert(rec.tbt, whole)
    err = convert(rec.tbt, tmp_path / "p.pftrace", "--split", "64K")
    parts = sorted(tmp_path.glob("p-*.pftrace"))
    assert len(parts) > 2 and f"wrote {len(parts)} parts" in err, err
    assert not list(tmp_path.glob("p.pftrace*")), "no temporary left"
    key = lambda t, s: (t.thread_of(s["track"]), s["name"], s["ts"], s["end"],
                        json.dumps(s["args"], sort_keys=True))
    got = Counter()
    for part in parts:
        protoc_decodes(part)
        loads_clean(part)
        pt = pftrace.Trace(part)
        assert not pt.errors, (part, pt.errors[:5])
        assert pt.metadata and pt.tracks
        got += Counter(key(pt, s) for s in pt.slices
                       if "tracebpf_unfinished" not in s["args"])
    pw = pftrace.Trace(whole)
    want = Counter(key(pw, s) for s in pw.slices)
    # every slice whole in one part; but an async slice open across four
    # times the size, which ends with its part, marked (the note says how
    # many)
    m = re.search(r"note: (\d+) async slices were open across", err)
    assert not got - want and sum((want - got).values()) == (int(m.group(1)) if m else 0), \
        (list((got - want).items())[:3], list((want - got).items())[:3])


def test_plain_and_general_paths_agree(api, tmp_path):
    """The plain events' shortcut writes what the general way writes."""
    a, b = tmp_path / "a.pftrace", tmp_path / "b.pftrace"
    convert(api / "api.tbt", a)
    env = {**os.environ, "TRACEBPF_TEST_PFTRACE_GENERAL": "1"}
    p = subprocess.run([TRACEBPF, "convert", str(api / "api.tbt"), "-o", str(b)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert pftrace.Trace(a).slices, "the recording has plain slices"
    loads_clean(a)
    # the same iids in the same order, the same fields: the same bytes
    assert open(a, "rb").read() == open(b, "rb").read()


def test_bad_options(tmp_path, api):
    p = subprocess.run([TRACEBPF, "convert", "--format", "xml", str(api / "api.tbt")],
                       capture_output=True, text=True)
    assert p.returncode == 64 and "give json or perfetto" in p.stderr
    p = subprocess.run([TRACEBPF, "convert", "--compress", str(api / "api.tbt"), "-o",
                        str(tmp_path / "x.json")], capture_output=True, text=True)
    assert p.returncode == 64 and "--compress is for Perfetto" in p.stderr
    p = subprocess.run([TRACEBPF, "convert", "--split", "1M", str(api / "api.tbt"), "-o",
                        "-", "--format", "perfetto"], capture_output=True, text=True)
    assert p.returncode == 64 and "--split writes files" in p.stderr


def test_record_writes_it(tmp_path):
    """record -o NAME.pftrace: NAME.tbt while recording, Perfetto's format at
    the end (no JSON), the same bytes as convert's; convert --follow of the
    finished file writes it too."""
    out = tmp_path / "r.pftrace"
    p = subprocess.run([TRACEBPF, "record", "-q", "-o", str(out), "--", prog("api_events")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert f"wrote {out}" in p.stderr and not (tmp_path / "r.json").exists()
    again = tmp_path / "again.pftrace"
    convert(tmp_path / "r.tbt", again)
    assert open(out, "rb").read() == open(again, "rb").read()
    followed = tmp_path / "followed.perfetto-trace"
    convert(tmp_path / "r.tbt", followed, "--follow")
    assert open(followed, "rb").read() == open(again, "rb").read()
    pt = pftrace.Trace(out)
    assert not pt.errors and pt.slices
    loads_clean(out)
