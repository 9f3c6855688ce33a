"""Categories: `record --categories/--exclude-categories` and `tracebpf ctl
enable|disable CATEGORY` (docs/tracebpf-record.md, CATEGORIES). A real
recorder and the phases program (tests/progs/phases.c), whose `c N`
command emits N numbered events in each of io, net,
disabled-by-default-deep, the group "io,net" and net.debug, and whose `a`
command answers which of io, net and deep TRACE_EVENT_CATEGORY_ACTIVE says
are recorded.

A site of a category that is off writes nothing and takes no probe: the
trace file holds none of its events, with the fast path and with
--no-fast-path alike (each traced process has its switch, which holds the
rules). A program built without the fast path (TRACEBPF_NO_FAST_PATH)
cannot read the rules: its sites take their probes, and the converter
leaves their events out by the rules the file holds (TB_REC_CATS)."""
import os
import re
import select
from collections import defaultdict

import pytest

from conftest import SCHED_BREAK_CAT, prog
from test_ctl import Phases, check_ok, ctl, dump

N = 40


def seqs(t):
    """{(cat, name): sorted seq values} of the application events (not the
    marks of the CPUs' chain breaks)."""
    out = defaultdict(list)
    for e in t.events:
        if e["ph"] in ("I", "X", "C") and e.get("cat") not in ("__metadata", SCHED_BREAK_CAT):
            v = e["args"].get("seq", e["args"].get("value"))
            out[(e["cat"], e["name"])].append(v)
    return {k: sorted(v) for k, v in out.items()}


def active(ph):
    """(enabled, io, net, deep) from the program's `a` answer."""
    ph.cmd.write("a\n")
    ph.cmd.flush()
    got = b""
    while not got.endswith(b"\n"):
        ready, _, _ = select.select([ph.ack], [], [], 60)
        assert ready, "phases did not answer 'a'"
        got += os.read(ph.ack, 64)
    m = re.fullmatch(rb"ok (\d+)\n", got)
    assert m, got
    v = int(m.group(1))
    return bool(v & 1), bool(v & 2), bool(v & 4), bool(v & 8)


def file_events(tbt):
    """(cat:name) of every application event record in the trace file."""
    return [r["text"].split(" ", 1)[0] for r in dump(tbt) if r["kind"] in ("I", "B", "E", "C")]


def finish(ph):
    return ph.finish().trace()


@pytest.mark.both_paths
def test_record_categories_and_exclusions(recorder, tmp_path, path_args):
    ph = Phases(recorder, tmp_path, "--categories", "io,disabled-by-default-deep",
                "--exclude-categories", "net*")
    # the guard reads the rules in the process's switch on both paths
    assert active(ph) == (True, True, False, True)
    ph.do(f"c {N}")
    t = finish(ph)
    s = seqs(t)
    every = list(range(N))
    assert s.get(("io", "read")) == every
    assert s.get(("disabled-by-default-deep", "probe")) == every
    assert s.get(("io,net", "both")) == every   # a group: io is recorded
    assert ("net", "send") not in s and ("net.debug", "ctr") not in s, s
    assert t.meta["categories"] == ["+io", "+disabled-by-default-deep", "-net*"]
    recs = file_events(ph.rec.tbt)
    # the sites wrote nothing, and took no probe (on the probes path the
    # file would hold what they sent: the probes' records all go in it)
    assert "net:send" not in recs and "net.debug:ctr" not in recs, recs
    assert recs.count("io:read") == N
    assert t.meta["events_of_categories_off"] == 0


def test_default_leaves_disabled_by_default_off(recorder, tmp_path):
    ph = Phases(recorder, tmp_path)
    assert active(ph) == (True, True, True, False)
    ph.do(f"c {N}")
    s = seqs(finish(ph))
    assert ("disabled-by-default-deep", "probe") not in s
    for k in (("io", "read"), ("net", "send"), ("io,net", "both"), ("net.debug", "ctr")):
        assert s.get(k) == list(range(N)), k


@pytest.mark.both_paths
def test_ctl_enable_and_disable_at_run_time(recorder, tmp_path, path_args):
    name = f"cats{len(path_args)}"
    ph = Phases(recorder, tmp_path, "--session", name)
    ph.do(f"c {N}")                                    # seq 0..N-1: all but deep
    out = check_ok(ctl("disable", "io", "--session", name))
    assert re.search(r"^recording \d+: categories: \+\* -io$", out, re.M), out
    assert active(ph)[1:] == (False, True, False)
    ph.do(f"c {N}")                                    # N..2N-1: no io
    out = check_ok(ctl("enable", "io", "disabled-by-default-*", "-s", name))
    out = check_ok(ctl("disable", "n*", "-s", name))
    assert "categories: +* +io +disabled-by-default-* -n*" in out, out
    assert active(ph)[1:] == (True, False, True)
    st = check_ok(ctl("status", "-s", name))
    assert "categories: +* +io +disabled-by-default-* -n*" in st, st
    ph.do(f"c {N}")                                    # 2N..3N-1: no net
    t = finish(ph)
    s = seqs(t)
    r = range
    assert s.get(("io", "read")) == [*r(N), *r(2 * N, 3 * N)]
    assert s.get(("net", "send")) == list(r(2 * N))
    assert s.get(("net.debug", "ctr")) == list(r(2 * N))
    assert s.get(("disabled-by-default-deep", "probe")) == list(r(2 * N, 3 * N))
    assert s.get(("io,net", "both")) == list(r(3 * N))   # one of the two, always
    cats = [x["text"] for x in dump(ph.rec.tbt) if x["kind"] == "CATS"]
    assert [c.split(" ", 1)[1] for c in cats] == [
        '"+*"', '"+*" "-io"', '"+*" "+io" "+disabled-by-default-*"',
        '"+*" "+io" "+disabled-by-default-*" "-n*"'], cats
    recs = file_events(ph.rec.tbt)
    assert recs.count("io:read") == 2 * N and recs.count("net:send") == 2 * N, recs


def test_program_without_fast_path_is_judged_by_the_file(recorder, tmp_path):
    """A site that cannot read the rules (TRACEBPF_NO_FAST_PATH) takes its
    probe; the converter leaves out what the rules in the file exclude."""
    ph = Phases(recorder, tmp_path, "--exclude-categories", "io", program="phases_slow")
    # the guard has no rules to read: it says what the semaphore says
    assert active(ph) == (True, True, True, True)
    ph.do(f"c {N}")
    t = finish(ph)
    s = seqs(t)
    assert ("io", "read") not in s and ("disabled-by-default-deep", "probe") not in s
    assert s.get(("net", "send")) == list(range(N))
    assert s.get(("io,net", "both")) == list(range(N))
    assert t.meta["events_of_categories_off"] == 2 * N
    assert file_events(ph.rec.tbt).count("io:read") == N


@pytest.mark.parametrize("args,msg", [
    (["--categories", ""], "invalid category list"),
    (["--categories", "a,,b"], "invalid category list"),
    (["--exclude-categories", "a b"], "invalid category list"),
    (["--categories", "a", "--categories", "b"], "give --categories once"),
])
def test_record_refuses_bad_category_lists(args, msg):
    from test_errors import run
    p = run("record", *args, "--", "true")
    assert p.returncode == 64, (p.returncode, p.stderr)
    assert msg in p.stderr, p.stderr


def test_ctl_refuses_bad_category(recorder, tmp_path):
    ph = Phases(recorder, tmp_path, "--session", "badcat")
    p = ctl("disable", "a b", "-s", "badcat")
    assert p.returncode == 1 and "failed to disable 'a b'" in p.stderr, p.stderr
    st = check_ok(ctl("status", "-s", "badcat"))
    assert "categories: all" in st, st
    finish(ph)


def test_child_of_fork_judges_by_its_parents_rules(recorder, tmp_path):
    """A forking server whose parent never hit a site: each child judges
    its sites by the rules its parent copied at fork (the parent maps its
    switch then), not through its probes, before its own switch exists."""
    children, n = 20, 1000
    rec = recorder("--no-sched", "--exclude-categories", "off", "--",
                   prog("fork_cats"), children, n).wait()
    t = rec.trace()
    hits = [e for e in t.events if e["ph"] == "I" and e["name"] == "hit"]
    assert len({e["pid"] for e in hits}) == children
    assert sorted(e["args"]["i"] for e in hits if e["cat"] == "on") == \
        sorted(list(range(n)) * children)
    assert not [e for e in hits if e["cat"] == "off"]
    assert t.meta["events_of_categories_off"] == 0   # nothing to leave out
    assert "off:hit" not in file_events(rec.tbt)
