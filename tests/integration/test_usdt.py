"""Other programs' USDT probes (record --usdt; docs/tracebpf-record.md
"OTHER PROGRAMS' PROBES", docs/output.md "Other programs' probes"):
tests/progs/sdt_app.c has plain <sys/sdt.h> probes with integer, string
and pointer arguments, a semaphore-guarded one, probes in a shared library
(libsdt.so), in a forked child and in an exec'd program (sdt_exec). Every
count and value is known from its arguments. Every trace passes the
DevTools engine and the output-contract checks (conftest.load)."""
import collections
import json
import os
import re
import shutil
import signal
import subprocess

import pytest

from conftest import TRACEBPF, load, prog, wait_for
from sdtnotes import semaphore_of

N = 25


@pytest.fixture
def sdt(tmp_path):
    """A private copy of sdt_app (with libsdt.so and sdt_exec next to it):
    uprobes are per file, so a recording of the shared build/progs/sdt_app
    side by side would raise this one's semaphores too."""
    d = tmp_path / "sdt"
    d.mkdir()
    for f in ("sdt_app", "sdt_exec", "libsdt.so"):
        shutil.copy2(prog(f), d / f)
    return str(d / "sdt_app")


def hits(t, name, ph="I"):
    return [e for e in t.events if e.get("name") == name and e["ph"] == ph]


def app_pid(stdout):
    m = re.search(r"done pid=(\d+)", stdout)
    assert m, stdout
    return int(m[1])


def check_app(t, pid, n=N):
    """sdtapp's probes in the main process: exact arguments, in order."""
    ticks = hits(t, "sdtapp:tick")
    assert [(e["pid"], e["args"]) for e in ticks] == \
        [(pid, {"arg0": i, "arg1": 3 * i}) for i in range(n)]
    assert len(hits(t, "sdtapp:ten")) == len(range(0, n, 10))
    assert all(e["args"] == {} and e["cat"] == "sdtapp" for e in hits(t, "sdtapp:ten"))
    guarded = hits(t, "sdtapp:guarded")
    assert [e["args"]["arg0"] for e in guarded] == list(range(n))


def test_instants_with_every_argument(recorder, sdt):
    """Each hit an instant PROVIDER:NAME with arg0..argN as integers,
    whatever the argument's size and sign in the note (-4@, -8@, 1@, 8@);
    the semaphore-guarded probe fires because the kernel raised its
    semaphore (the program counts how often it fired)."""
    rec = recorder("--no-sched", "--usdt", "sdtapp:*", "--", sdt, N,
                   stdin=subprocess.DEVNULL).wait()
    t = rec.trace()
    pid = app_pid(rec.stdout)
    assert f"guarded={N}" in rec.stdout
    check_app(t, pid)
    mixed = hits(t, "sdtapp:mixed")
    assert len(mixed) == N
    for i, e in enumerate(mixed):
        a = e["args"]
        assert (a["arg0"], a["arg2"], a["arg3"]) == (-5 - i, 7, 0x1122334455667788)
        assert a["arg1"] > 0   # the string's address, as an integer
    assert t.meta["drops_total"] == 0


def test_arguments_named_and_typed(recorder, sdt):
    """--usdt-args: names in order, str copied at the hit, uint, hex, and
    - leaves one out; a probe it names is recorded without a --usdt glob."""
    rec = recorder("--no-sched", "--usdt-args", "sdtapp:mixed=neg,name:str,-,ptr:hex",
                   "--", sdt, N, stdin=subprocess.DEVNULL).wait()
    t = rec.trace()
    assert [e["args"] for e in hits(t, "sdtapp:mixed")] == \
        [{"neg": -5 - i, "name": f"name-{i}", "ptr": "0x1122334455667788"} for i in range(N)]
    assert not hits(t, "sdtapp:tick")   # not asked for
    # not attached: nobody raised its semaphore
    assert "guarded=0" in rec.stdout


def test_library_fork_and_exec(recorder, sdt):
    """Probes in a linked library, in a forked child (its own pid) and in
    the program the process execs, with its string argument."""
    rec = recorder("--no-sched", "--usdt", "sdt*:*", "--usdt-args", "sdtexec:hit=i,s:str",
                   "--", sdt, N, "lib", "fork", "exec",
                   stdin=subprocess.DEVNULL).wait()
    t = rec.trace()
    pid = app_pid(rec.stdout)
    check_app(t, pid)
    assert [(e["pid"], e["args"]) for e in hits(t, "sdtlib:call")] == \
        [(pid, {"arg0": i, "arg1": 100 + i}) for i in range(N)]
    child = hits(t, "sdtapp:child")
    assert len(child) == N
    cpid = child[0]["pid"]
    assert cpid != pid
    assert [(e["pid"], e["args"]) for e in child] == \
        [(cpid, {"arg0": cpid, "arg1": i}) for i in range(N)]
    assert [(e["pid"], e["args"]) for e in hits(t, "sdtexec:hit")] == \
        [(pid, {"i": i, "s": f"exec-{i}"}) for i in range(N)]


def test_attach_by_pid_follows_a_fork(recorder, spawn, sdt):
    """-p PID of a program without tracebpf probes: its own probes, and its
    child's, forked after the attach."""
    app = spawn(sdt, N, "fork", stdin=subprocess.PIPE)
    assert app.stdout.readline() == "ready\n"
    rec = recorder("--no-sched", "--usdt", "sdtapp:*", "-p", app.pid)
    # the guarded probe's semaphore is raised once the recorder attached
    wait_for(lambda: semaphore_up(app.pid, sdt), what="the recorder to attach")
    app.stdin.write("g")
    app.stdin.close()
    out = app.stdout.read()
    assert app.wait(timeout=60) == 0
    rec.wait()
    t = rec.trace()
    check_app(t, app.pid)
    child = hits(t, "sdtapp:child")
    assert len(child) == N and child[0]["pid"] != app.pid
    assert f"guarded={N}" in out


def wait_attached(rec):
    """Until the recorder publishes its figures, which it does from its loop,
    once attached (`ctl status`). Not the semaphore of a program another
    test records too (postgres): that test's recorder raises it as well."""
    def published():
        p = subprocess.run([TRACEBPF, "ctl", "-r", str(rec.proc.pid), "status", "--json"],
                           capture_output=True, text=True)
        return p.returncode == 0 and "events" in (json.loads(p.stdout or "[{}]") or [{}])[0]
    wait_for(published, what="the recorder to attach")


def semaphore_up(pid, exe):
    return semaphore_of(pid, exe, "guarded")


def test_slices_and_counters(recorder, sdt):
    """--usdt-slice pairs two probes per thread (here tick opens, mixed
    closes: N slices, each holding tick's and mixed's arguments);
    --usdt-counter shows one argument as a counter series."""
    rec = recorder("--no-sched", "--usdt-slice", "sdtapp:tick=sdtapp:mixed=step",
                   "--usdt-args", "sdtapp:mixed=neg,name:str",
                   "--usdt-counter", "sdtlib:call=arg1",
                   "--", sdt, N, "lib", stdin=subprocess.DEVNULL).wait()
    t = rec.trace()
    pid = app_pid(rec.stdout)
    steps = hits(t, "step", "X")
    # the arguments --usdt-args does not name keep their argK names
    assert [e["args"] for e in steps] == \
        [{"arg0": i, "arg1": 3 * i, "neg": -5 - i, "name": f"name-{i}", "arg2": 7,
          "arg3": 0x1122334455667788} for i in range(N)]
    assert all(e["pid"] == pid and e["dur"] >= 0 for e in steps)
    assert [e["args"] for e in hits(t, "sdtlib:call", "C")] == \
        [{"arg1": 100 + i} for i in range(N)]


def test_slice_name_defaults_to_the_common_prefix(recorder, sdt):
    """Without =NAME a slice is named after its provider and the words the
    two probe names begin with (query__start, query__done: query); with
    none in common (tick, ten), the begin probe's name."""
    rec = recorder("--no-sched", "--usdt-slice", "sdtapp:tick=sdtapp:ten",
                   "--usdt-slice", "sdtexec:hit__a=sdtexec:hit__b",
                   "--", sdt, 1, stdin=subprocess.DEVNULL).wait()
    t = rec.trace()
    assert [e["name"] for e in t.by_ph("X") if e["cat"] == "sdtapp"] == ["sdtapp:tick"]
    d = subprocess.run([TRACEBPF, "dump", str(rec.tbt)], capture_output=True, text=True)
    assert " sdtapp:ten end sdtapp:tick" in d.stdout, d.stdout


def test_a_catalog_from_the_path(recorder, tmp_path, sdt):
    """--usdt=NAME reads NAME.usdt from $TRACEBPF_USDT_PATH: the options
    without dashes, one a line, # comments, catalogs naming catalogs."""
    (tmp_path / "mine.usdt").write_text(
        "# sdt_app's probes\nusdt sdtapp:tick\nusdt other\n"
        "usdt-args sdtapp:tick=i,triple\n")
    (tmp_path / "other.usdt").write_text("usdt-counter sdtapp:guarded=arg0\n")
    rec = recorder("--no-sched", "--usdt=mine", "--", sdt, N,
                   stdin=subprocess.DEVNULL, env={"TRACEBPF_USDT_PATH": str(tmp_path)}).wait()
    t = rec.trace()
    assert [e["args"] for e in hits(t, "sdtapp:tick")] == \
        [{"i": i, "triple": 3 * i} for i in range(N)]
    assert [e["args"]["arg0"] for e in hits(t, "sdtapp:guarded", "C")] == list(range(N))
    assert not hits(t, "sdtapp:mixed")


@pytest.mark.parametrize("opt,why", [
    (["--usdt", "nocolon!"], "give PROVIDER:NAME"),
    (["--usdt", "a:b:c"], "give PROVIDER:NAME"),
    (["--usdt", "nosuchcatalog"], "no catalog 'nosuchcatalog'"),
    (["--usdt-slice", "a:b"], "PROVIDER:BEGIN=PROVIDER:END"),
    (["--usdt-args", "a:b=x:float"], "NAME:TYPE"),
    (["--usdt-counter", "a:b"], "PROVIDER:NAME=ARG"),
])
def test_bad_options_are_usage_errors(opt, why, tmp_path, sdt):
    p = subprocess.run([TRACEBPF, "record", "-o", str(tmp_path / "x.json"), *opt, "--",
                        sdt, "1"], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 64, p.stderr
    assert why in p.stderr and "invalid --usdt option" in p.stderr, p.stderr
    assert not (tmp_path / "x.tbt").exists()


@pytest.mark.parametrize("line,why", [
    ("usdt-slice nope", "'nope': give PROVIDER:BEGIN=PROVIDER:END"),
    ("slice a:b=a:c", "give OPTION VALUE, OPTION one of usdt, usdt-slice"),
    ("usdt-args", "give OPTION VALUE"),
])
def test_a_bad_catalog_line_is_named(tmp_path, sdt, line, why):
    (tmp_path / "bad.usdt").write_text(f"# ok\nusdt a:b\n{line}\n")
    p = subprocess.run([TRACEBPF, "record", "-o", str(tmp_path / "x.json"), "--usdt=bad",
                        "--", sdt, "1"], capture_output=True, text=True,
                       env={"TRACEBPF_USDT_PATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 64
    assert f"{tmp_path}/bad.usdt:3: {why}" in p.stderr, p.stderr


def test_a_counter_of_no_integer_is_said(recorder, sdt):
    """--usdt-counter naming a string argument (or none the probe has):
    one warning that names the probe, the recording goes on without it."""
    rec = recorder("--no-sched", "--usdt-args", "sdtapp:mixed=neg,name:str",
                   "--usdt-counter", "sdtapp:mixed=name", "--usdt", "sdtapp:tick",
                   "--", sdt, N, stdin=subprocess.DEVNULL).wait()
    t = rec.trace()
    assert rec.stderr.count("--usdt-counter sdtapp:mixed names no integer argument") == 1, \
        rec.stderr
    assert not hits(t, "sdtapp:mixed", "C") and len(hits(t, "sdtapp:tick")) == N


def test_a_pid_without_wanted_probes_is_refused(spawn, tmp_path, sdt):
    """-p of a process with neither tracebpf probes nor the probes asked
    for: an error that says both, nothing recorded."""
    app = spawn(sdt, 1, stdin=subprocess.PIPE)
    assert app.stdout.readline() == "ready\n"
    p = subprocess.run([TRACEBPF, "record", "-o", str(tmp_path / "x.json"), "--usdt",
                        "nosuch:probe", "-p", str(app.pid)], capture_output=True, text=True)
    assert p.returncode == 1
    assert "has no tracebpf probes nor probes --usdt asks for" in p.stderr, p.stderr


def test_the_trace_file_describes_each_probe_once(recorder, sdt):
    """tracebpf dump shows the probes' descriptions and hits (format 2.10)."""
    rec = recorder("--no-sched", "--no-json", "--usdt", "sdtapp:t*", "--", sdt,
                   3, stdin=subprocess.DEVNULL).wait()
    assert rec.rc == 0, rec.stderr
    d = subprocess.run([TRACEBPF, "dump", str(rec.tbt)], capture_output=True, text=True)
    assert d.returncode == 0, d.stderr
    probes = re.findall(r" USDT_PROBE (\d+) (\S+) instant (\S+)", d.stdout)
    assert sorted(p[1] for p in probes) == ["sdtapp:ten", "sdtapp:tick"], d.stdout[-2000:]
    tick = [p[0] for p in probes if p[1] == "sdtapp:tick"][0]
    assert re.findall(rf" USDT probe={tick} sdtapp:tick (.*)", d.stdout) == \
        ["0 0", "1 3", "2 6"]


def test_list_shows_other_programs_probes(sdt):
    """tracebpf list --usdt PROGRAM: every note, with its argument spec
    and semaphore."""
    p = subprocess.run([TRACEBPF, "list", "--usdt", sdt], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    assert re.search(r"sdtapp:guarded\s+-4@%\w+\s+semaphore", p.stdout), p.stdout
    assert re.search(r"sdtapp:mixed\s+-8@\S+ 8@\S+ 1@\S+ 8@\S+", p.stdout), p.stdout
    j = subprocess.run([TRACEBPF, "list", "--usdt", "--json", sdt],
                       capture_output=True, text=True)
    probes = json.loads(j.stdout)["usdt"]
    assert {p["provider"] + ":" + p["name"] for p in probes} >= \
        {"sdtapp:tick", "sdtapp:mixed", "sdtapp:ten", "sdtapp:guarded", "sdtapp:child"}


def test_names_from_arguments(recorder, sdt):
    """A slice's name may refer to its begin's arguments ({ARG}): each of
    sdtapp:mixed's N hits opens a slice named by its string argument,
    sdtapp:guarded's N hits close them, innermost first."""
    rec = recorder("--no-sched", "--usdt-slice", "sdtapp:mixed=sdtapp:guarded=m {name} {neg}",
                   "--usdt-args", "sdtapp:mixed=neg,name:str,-,-",
                   "--", sdt, N, stdin=subprocess.DEVNULL).wait()
    t = rec.trace()
    xs = sorted((e for e in t.by_ph("X") if e["cat"] == "sdtapp"), key=lambda e: e["ts"])
    assert [e["name"] for e in xs] == [f"m name-{i} {-5 - i}" for i in range(N)]
    for outer, inner in zip(xs, xs[1:]):   # each inside the one before
        assert outer["ts"] <= inner["ts"] and \
            inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]


def test_a_probe_enabled_only_for_its_semaphore(recorder, sdt):
    """--usdt-enable attaches a probe (its semaphore is raised: the
    program's guarded branch runs) without recording its hits."""
    rec = recorder("--no-sched", "--usdt-enable", "sdtapp:guarded", "--usdt", "sdtapp:tick",
                   "--", sdt, N, stdin=subprocess.DEVNULL).wait()
    t = rec.trace()
    assert f"guarded={N}" in rec.stdout
    assert not hits(t, "sdtapp:guarded")
    assert len(hits(t, "sdtapp:tick")) == N


def test_libstdcxx_catalog_throw_and_catch(recorder):
    """--usdt=libstdcxx: the one exception cxx_unwind throws and catches,
    instants on its thread inside the slices it was thrown and caught in,
    with the same object and type."""
    rec = recorder("--no-sched", "--usdt=libstdcxx", "--", prog("cxx_unwind")).wait()
    t = rec.trace()
    throw, catch = hits(t, "libstdcxx:throw"), hits(t, "libstdcxx:catch")
    assert len(throw) == 1 and len(catch) == 1, (throw, catch)
    assert throw[0]["args"] == catch[0]["args"]
    assert set(throw[0]["args"]) == {"object", "type_info"}
    assert not hits(t, "libstdcxx:rethrow")

    def inside(e, name):
        return any(x["name"] == name and x["tid"] == e["tid"] and
                   x["ts"] <= e["ts"] <= x["ts"] + x["dur"] for x in t.by_ph("X"))
    assert inside(throw[0], "thrower") and inside(catch[0], "catcher")
    assert throw[0]["ts"] < catch[0]["ts"]


CALL_TREE = """
def leaf(x):
    return x + 1
def mid(x):
    return leaf(x) + leaf(x + 1)
def top():
    return [mid(1), mid(2)]
top()
"""


def test_python_catalog_call_tree(recorder, tmp_path):
    """--usdt=python on Debian's python3: each call a slice named
    module:function (a -c program's module is <string>), nested as the
    calls were: top holds two mid, each mid two leaf. CPython 3.11 fires
    function__entry only while python:line's semaphore is raised: the
    catalog raises it (--usdt-enable)."""
    # a copy of Debian's python3 (the probes are per file: the pytest
    # workers run that one), with its library where it was
    py = tmp_path / "python3"
    shutil.copy2(os.path.realpath("/usr/bin/python3"), py)
    rec = recorder("--no-sched", "--usdt=python", "--", py, "-c", CALL_TREE,
                   env={"PYTHONHOME": "/usr"}).wait()
    t = rec.trace()
    def within(a, b):
        return b["ts"] <= a["ts"] and a["ts"] + a["dur"] <= b["ts"] + b["dur"]
    (top,) = t.named("<string>:top", "X")
    # python's own startup runs other code compiled from strings too; a
    # module's entry is at its line 0, a function's at its def
    assert [m["args"]["line"] for m in t.named("<string>:<module>", "X")
            if within(top, m)] == [0]
    calls = sorted((e for e in t.by_ph("X") if within(e, top)), key=lambda e: e["ts"])
    assert [e["name"] for e in calls] == \
        ["<string>:top"] + ["<string>:mid", "<string>:leaf", "<string>:leaf"] * 2
    top, mid1, l1, l2, mid2, l3, l4 = calls
    assert all(within(m, top) for m in (mid1, mid2))
    assert within(l1, mid1) and within(l2, mid1) and within(l3, mid2) and within(l4, mid2)
    assert [e["args"]["line"] for e in (top, mid1, l1)] == [6, 4, 2]
    # nothing unpaired: every return had its entry
    assert not [e for e in t.events if e.get("cat") == "python" and e["ph"] == "I"]
    assert [e for e in t.by_ph("X") if e["name"] == "import json"] == []


def test_postgresql_catalog_queries_on_forked_backends(recorder, tmp_path):
    """docs/tracebpf-record.md: `record --usdt=postgresql -p POSTMASTER`
    records the backends PostgreSQL forks for connections made after the
    attach: a slice per query with its text, on that backend's pid, the
    process named by its title; a transaction spanning queries as an async
    slice keyed by its local transaction id. The checkpointer, forked
    before the attach, is recorded when its pid is given too: a CHECKPOINT
    shows there as its request and the buffers it wrote."""
    from pgcluster import PgCluster
    with PgCluster() as pg:
        ckpt = pg.child("checkpointer")
        # checkpoint__done's argument specs are RIP-relative, which libbpf
        # refuses: said, and the other probes are recorded all the same
        rec = recorder("--no-sched", "--usdt=postgresql", "--usdt", "postgresql:checkpoint__done",
                       "-p", f"{pg.postmaster_pid},{ckpt}")
        wait_attached(rec)
        texts = [f"select {k} * 7 as tb_q{k}" for k in range(5)]
        for q in texts:
            assert pg.psql(q).strip() == str(int(q.split()[1]) * 7)
        assert pg.psql("begin", "select 41 as tb_in_tx", "commit").strip() == "41"
        pg.psql("checkpoint")   # returns once the checkpointer is done
        rec.stop()
    t = rec.trace()
    assert "warning: failed to attach to postgresql:checkpoint__done" in rec.stderr and \
        "-v shows why libbpf refused it" in rec.stderr, rec.stderr
    queries = sorted(hits(t, "postgresql:query", "X"), key=lambda e: e["ts"])
    assert [e["args"]["query"] for e in queries] == \
        texts + ["begin", "select 41 as tb_in_tx", "commit", "checkpoint"]
    pids = [e["pid"] for e in queries]
    assert pg.postmaster_pid not in pids and ckpt not in pids
    assert len(set(pids[:5])) == 5 and len(set(pids[5:8])) == 1
    (req,) = [e for e in hits(t, "postgresql:checkpoint__start") if e["pid"] == ckpt]
    (wrote,) = [e for e in hits(t, "postgresql:checkpoint_buffers", "X") if e["pid"] == ckpt]
    assert req["args"]["flags"] == wrote["args"]["flags"] and req["ts"] <= wrote["ts"]
    assert queries[-1]["ts"] <= req["ts"] <= queries[-1]["ts"] + queries[-1]["dur"]
    # named by their titles at their first hit (the postmaster: its comm)
    names = {e["pid"]: e["args"]["name"] for e in t.named("process_name")}
    labels = {e["pid"]: e["args"]["labels"] for e in t.named("process_labels")}
    for pid in set(pids):
        assert names[pid].startswith("postgres: nobody postgres [local]"), names
        assert labels[pid] == names[pid]
    assert names[pg.postmaster_pid] == "postgres"
    assert names[ckpt].startswith("postgres: checkpointer"), names[ckpt]
    # each query parsed, planned and executed inside its slice
    for q in queries[:5]:
        inner = [e["name"] for e in t.by_ph("X") if e["pid"] == q["pid"] and
                 q["ts"] <= e["ts"] and e["ts"] + e["dur"] <= q["ts"] + q["dur"]]
        assert {"postgresql:query__parse", "postgresql:query__plan",
                "postgresql:query__execute"} <= set(inner), inner
    # the explicit transaction: one async slice from BEGIN's query to COMMIT's
    tx = [e for e in t.events if e.get("name") == "postgresql:transaction" and
          e["pid"] == pids[5] and e["ph"] in "be"]
    spans = collections.defaultdict(list)
    for e in tx:
        spans[e["id"]].append(e)
    long = [v for v in spans.values() if len(v) == 2 and
            v[0]["ts"] < queries[6]["ts"] < v[1]["ts"]]
    assert len(long) == 1, spans
    assert long[0][0]["ph"] == "b" and long[0][1]["ph"] == "e"
    assert long[0][0]["args"]["lxid"] == int(long[0][0]["id"], 16)


def test_ctl_start_attaches_and_restart_describes_again(recorder, tmp_path, sdt):
    """A --paused recording attaches no probe, so the guarded probe's
    semaphore stays 0; `ctl start` attaches them (it is raised); after a
    `ctl restart` the new file describes the probes again, so its hits are
    named and their arguments shown."""
    rec = recorder("--no-sched", "--paused", "--session", "usdtctl", "--usdt", "sdtapp:*",
                   "--", sdt, N, stdin=subprocess.PIPE)
    assert rec.proc.stdout.readline() == "ready\n"
    pid = int(subprocess.run(["pgrep", "-P", str(rec.proc.pid), "-x", "sdt_app"],
                             capture_output=True, text=True).stdout.split()[0])
    assert not semaphore_of(pid, sdt, "guarded")
    for verb in ("start", "restart"):
        p = subprocess.run([TRACEBPF, "ctl", "-s", "usdtctl", verb], capture_output=True,
                           text=True)
        assert p.returncode == 0, p.stderr
    assert semaphore_of(pid, sdt, "guarded")
    rec.proc.stdin.write("g")
    rec.proc.stdin.close()
    rec.proc.stdin = None   # communicate() would flush it
    rec.wait()
    assert rec.rc == 0, rec.stderr
    first, second = load(tmp_path / "t.json"), load(tmp_path / "t.1.json")
    assert not [e for e in first.events if e.get("cat") == "sdtapp"]
    check_app(second, pid)
    assert second.meta["unresolved_sites"] == 0


def test_postgresql_catalog_lock_wait(recorder):
    """A backend that waits for a table lock another holds: one lock wait
    slice on it, inside its query's slice, lasting until the holder
    committed (docs/tracebpf-record.md, the postgresql catalog)."""
    from pgcluster import PgCluster
    with PgCluster() as pg:
        pg.psql("create table tb_locked (x int)")
        rec = recorder("--no-sched", "--usdt=postgresql", "-p", pg.postmaster_pid)
        wait_attached(rec)
        holder = pg.spawn_psql("begin", "lock table tb_locked in access exclusive mode",
                               "select 'locked'", "select pg_sleep(600)")
        assert holder.stdout.readline().strip() == "locked"
        waiter = pg.spawn_psql("select count(*) from tb_locked")
        # the waiter is blocked on the lock: the server says so
        wait_for(lambda: pg.psql("select count(*) from pg_locks where not granted").strip()
                 == "1", what="the waiter to wait")
        pg.psql("select pg_cancel_backend(pid) from pg_stat_activity "
                "where query = 'select pg_sleep(600)'")
        assert waiter.wait(timeout=60) == 0 and waiter.stdout.read().strip() == "0"
        holder.wait(timeout=60)
        rec.stop()
    t = rec.trace()
    (wait,) = hits(t, "postgresql:lock__wait", "X")
    (query,) = [q for q in hits(t, "postgresql:query", "X")
                if q["args"]["query"] == "select count(*) from tb_locked"]
    assert wait["pid"] == query["pid"]
    assert query["ts"] <= wait["ts"] and \
        wait["ts"] + wait["dur"] <= query["ts"] + query["dur"]
    assert wait["args"]["lockmode"] == 1   # AccessShareLock, what a select takes


@pytest.mark.parametrize("end", [signal.SIGINT, signal.SIGKILL], ids=["stopped", "killed"])
def test_nothing_stays_attached(recorder, spawn, sdt, end):
    """A recording that ends, or whose recorder is SIGKILLed, leaves no
    probe attached: the guarded probe's semaphore, raised while it
    records, is 0 again in the process that outlives it."""
    app = spawn(sdt, 1, stdin=subprocess.PIPE)
    assert app.stdout.readline() == "ready\n"
    rec = recorder("--no-sched", "--usdt", "sdtapp:*", "-p", app.pid)
    wait_for(lambda: semaphore_up(app.pid, sdt), what="the recorder to attach")
    rec.proc.send_signal(end)
    rec.wait()
    # the links go with the recorder's file descriptors: at its exit
    wait_for(lambda: not semaphore_up(app.pid, sdt), what="the probes to be detached")
    app.stdin.write("g")
    app.stdin.close()
    assert "guarded=0" in app.stdout.read()
