"""The extended macro set (lib/include/tracebpf/trace.h): one test per macro
family. tests/progs/api_events.c uses each family once, in a fixed order; the
tests check the exact JSON events (phase, cat, name, id, args, scope,
binding) and what Chrome DevTools' trace engine builds from them."""
import re

import pytest

from conftest import prog, user_events

STRIP = ("ts", "pid", "tid")


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    import subprocess
    from conftest import TRACEBPF, load
    out = tmp_path_factory.mktemp("api") / "api.json"
    p = subprocess.run([TRACEBPF, "record", "-q", "-o", str(out), "--", prog("api_events")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    m = re.search(r"pid=(\d+) active=(\d) enabled=(\d)", p.stdout)
    assert m, p.stdout
    t = load(out)
    t.pid, t.active, t.enabled = map(int, m.groups())
    return t


def shape(events):
    return [{k: v for k, v in e.items() if k not in STRIP} for e in events]


def cat_events(t, cat):
    return [e for e in user_events(t, t.pid) if e.get("cat") == cat]


def test_counter_ids(api):
    assert shape(cat_events(api, "ctr")) == [
        {"ph": "C", "cat": "ctr", "name": "queue", "id": "0x7", "args": {"value": 3}},
        {"ph": "C", "cat": "ctr", "name": "mem", "id": "0x8", "args": {"used": 10, "free": 2.5}},
    ]
    assert api.devtools["counters"] >= 2


def test_async_begin_step_end(api):
    ev = cat_events(api, "async")
    ids = {e["id"] for e in ev}
    assert len(ids) == 1 and re.fullmatch(r"0x[0-9a-f]+", ids.pop()), ev
    pid_id = ev[0]["id"]
    assert shape(ev) == [
        {"ph": "b", "cat": "async", "name": "request", "id": pid_id, "args": {"url": "/index"}},
        {"ph": "n", "cat": "async", "name": "request", "id": pid_id,
         "args": {"step": "parse", "bytes": 100}},
        {"ph": "n", "cat": "async", "name": "request", "id": pid_id, "args": {"step": "reply"}},
        {"ph": "e", "cat": "async", "name": "request", "id": pid_id, "args": {"status": 200}},
    ]
    assert [e["ts"] for e in ev] == sorted(e["ts"] for e in ev)


def test_nestable_async(api):
    assert shape(cat_events(api, "nest")) == [
        {"ph": "b", "cat": "nest", "name": "outer", "id": "0x5", "args": {}},
        {"ph": "b", "cat": "nest", "name": "inner", "id": "0x5", "args": {"k": 1}},
        {"ph": "n", "cat": "nest", "name": "mark", "id": "0x5", "args": {"a": -1, "b": True}},
        {"ph": "e", "cat": "nest", "name": "inner", "id": "0x5", "args": {}},
        {"ph": "e", "cat": "nest", "name": "outer", "id": "0x5", "args": {"x": 1, "y": 2.5}},
    ]


def test_flows_bound_to_enclosing_slices(api):
    ev = cat_events(api, "flow")
    slices = {e["name"]: e for e in ev if e["ph"] == "X"}
    flows = [e for e in ev if e["ph"] in "stf"]
    assert shape(flows) == [
        {"ph": "s", "cat": "flow", "name": "job", "id": "0x99", "args": {"n": 1}},
        {"ph": "t", "cat": "flow", "name": "job", "id": "0x99", "bp": "e",
         "args": {"step": "relayed"}},
        {"ph": "f", "cat": "flow", "name": "job", "id": "0x99", "bp": "e",
         "args": {"where": "consumer"}},
    ]
    # each flow event sits at the start of its enclosing slice, same thread
    for f, sname in zip(flows, ("produce", "relay", "consume")):
        s = slices[sname]
        assert (f["ts"], f["pid"], f["tid"], f["cat"]) == (s["ts"], s["pid"], s["tid"], s["cat"])
    assert slices["consume"]["tid"] != api.pid
    # DevTools draws the arrows between exactly these slices
    dt = api.devtools["flows"]
    assert [[(x["name"], x["tid"]) for x in flow] for flow in dt] == \
        [[("produce", api.pid), ("relay", api.pid), ("consume", slices["consume"]["tid"])]]


def test_copy_names(api):
    ev = cat_events(api, "copy")
    assert shape(ev) == [
        {"ph": "X", "dur": ev[0]["dur"], "cat": "copy", "name": "dyn_7", "args": {"a": 1}},
        {"ph": "I", "s": "p", "cat": "copy", "name": "dyn_7", "args": {"s": "dyn_7"}},
        # bounded: TRACEBPF_COPY_NAME_MAX (256) bytes with the NUL
        {"ph": "I", "s": "t", "cat": "copy", "name": "x" * 255, "args": {}},
        {"ph": "b", "cat": "copy", "name": "dyn_7", "id": "0x3", "args": {}},
        {"ph": "e", "cat": "copy", "name": "dyn_7", "id": "0x3", "args": {}},
    ]
    assert [s["name"] for s in api.devtools["slices"] if s["cat"] == "copy"][:2] == \
        ["dyn_7", "dyn_7"]


def test_category_guards(api):
    assert (api.active, api.enabled) == (1, 1)
    assert shape(cat_events(api, "guard")) == [
        {"ph": "I", "s": "t", "cat": "guard", "name": "expensive", "args": {"active": 1}}]


def test_guards_off_without_tracer(tmp_path):
    import shutil
    import subprocess
    # a copy: uprobes are per file, and a recording of api_events running
    # side by side (another test) enables the sites of every process
    # running that file (seen once: active=1 enabled=1)
    copy = tmp_path / "api_events"
    shutil.copy(prog("api_events"), copy)
    out = subprocess.run([str(copy)], capture_output=True, text=True).stdout
    assert re.search(r"active=0 enabled=0", out), out


def test_names_and_sort_indices(api):
    meta = [e for e in api.events if e["ph"] == "M" and e["pid"] == api.pid]
    consumer = [e["tid"] for e in cat_events(api, "flow") if e["name"] == "consume"][0]
    got = {(e["name"], e["tid"]): e["args"] for e in meta}
    assert got[("process_name", api.pid)] == {"name": "api process"}
    assert got[("process_sort_index", api.pid)] == {"sort_index": -5}
    assert got[("thread_name", api.pid)] == {"name": "dyn_7"}
    assert got[("thread_sort_index", api.pid)] == {"sort_index": 2}
    assert got[("thread_name", consumer)] == {"name": "consumer thread"}
    assert got[("thread_sort_index", consumer)] == {"sort_index": 7}
    dt = api.devtools
    assert dt["processes"][str(api.pid)] == "api process"
    names = {(th["pid"], th["tid"]): th["name"] for th in dt["threads"]}
    assert names[(api.pid, api.pid)] == "dyn_7"
    assert names[(api.pid, consumer)] == "consumer thread"
    # no metadata event leaks into the timeline
    assert not [e for e in api.events if e.get("cat") == "__metadata"]
