"""Trace storage (issue #3): a recorder killed at random moments leaves a
readable trace holding a per-thread prefix of the events; SIGTERM loses
nothing; follow, stdout/stdin, serve/connect (with a slow client cut off),
pack, gzip JSON, golden files, info."""
import gzip
import json
import os
import random
import re
import signal
import socket
import struct
import subprocess
import threading
import time
from collections import Counter

import pytest

import pftrace
from conftest import (BUILD, PERFETTO_COMPLAINTS, ROOT, SCHED_BREAK_CAT, TRACEBPF, Trace,
                      check_chrome_rules, devtools_check, kill_group, load, perfetto_query, prog,
                      scale, wait_for)


def run(*args, **kw):
    p = subprocess.run([TRACEBPF, *map(str, args)], capture_output=True, text=True,
                       timeout=kw.pop("timeout", 120), **kw)
    return p


def count_of(path):
    try:
        with open(path, "rb") as f:
            data = f.read(8)
        return struct.unpack("<Q", data)[0] if len(data) == 8 else 0
    except OSError:
        return 0


def child_of(pid, name="seq_until_killed"):
    """The recorder's child running `name` (not the ld.so probe it runs
    first to list libraries)."""
    def get():
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                kids = f.read().split()
            for k in kids:
                with open(f"/proc/{k}/cmdline", "rb") as f:
                    if name.encode() in f.read().split(b"\0")[0]:
                        return int(k)
        except OSError:
            pass
        return None
    return wait_for(get, what="the traced child")


def seqs_of(trace):
    return [e["args"]["seq"] for e in trace.named("seq", "I")]


def kill_quietly(pid, sig=signal.SIGKILL):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass   # the recorder's death took it (PR_SET_PDEATHSIG) or it was reaped


def start_seq(tmp_path, name, *extra):
    """seq_until_killed recorded into NAME.tbt: about 500,000 events/s
    (100 us of sleep every 100 events), a high rate whose JSON stays small
    enough to check quickly."""
    countfile = tmp_path / f"{name}.count"
    tbt = tmp_path / f"{name}.tbt"
    p = subprocess.Popen([TRACEBPF, "record", "-q", "--no-json", "-o", str(tbt), *extra,
                          "--", prog("seq_until_killed"), str(countfile), "100"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: count_of(countfile) >= 1, what="the child to run")
    child = child_of(p.pid)
    return p, child, countfile, tbt


@pytest.mark.parametrize("half", [0, 1])
def test_sigkill_recorder_many_times(tmp_path, half):
    """SIGKILL the recorder at random moments of a high-rate recording, 6
    times (20 under make test-full) in two halves that run side by side:
    every file reads, converts to valid JSON, and holds exactly events
    0..k-1 of the thread's sequence (a prefix, no gap)."""
    rnd = random.Random(1234 + half)
    prefixes = []
    for i in range(scale(3, 10)):
        p, child, countfile, tbt = start_seq(tmp_path, f"k{i}")
        try:
            wait_for(lambda: count_of(countfile) >= 1000, what="events flowing")
            time.sleep(rnd.uniform(0.0, 0.4))
            p.kill()
            p.wait()
        finally:
            kill_quietly(child)
        emitted = count_of(countfile)
        info = run("info", tbt)
        assert info.returncode == 0, info.stderr
        assert "format:         2.11" in info.stdout
        out = tmp_path / f"k{i}.json"
        c = run("convert", tbt, "-o", out)
        assert c.returncode == 0, c.stderr
        t = load(out, consumer=(i % 5 == 0))
        s = seqs_of(t)
        assert s == list(range(len(s))), f"kill {i}: not a prefix: {s[:5]}... gap somewhere"
        assert len(s) <= emitted
        prefixes.append((len(s), emitted, "truncated tail" in info.stdout))
        os.unlink(tbt)
    # the kills landed at different moments: not all the same prefix
    assert len({n for n, _, _ in prefixes}) > len(prefixes) // 2, prefixes
    print("kills (events kept, events emitted, torn tail):", prefixes)


def proc_state(pid):
    """The state letter of /proc/PID/stat (after the parenthesised comm)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def test_sigterm_loses_nothing(tmp_path):
    # --keep-running: the recorder ends at the SIGTERM, instead of telling
    # the command (stopped below, so it cannot end) to end and recording
    # on for the 5 s it may take
    p, child, countfile, tbt = start_seq(tmp_path, "term", "--keep-running")
    try:
        wait_for(lambda: count_of(countfile) >= 20000, what="20000 events")
        os.kill(child, signal.SIGSTOP)
        # The count is final once the child is stopped: wait for its state
        # to say so ('T' in /proc/PID/stat), not for a fixed 50 ms, which a
        # busy machine can outlast before the signal is delivered.
        wait_for(lambda: proc_state(child) == "T", what="the child to stop")
        emitted = count_of(countfile)
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=60)   # the stopped child holds the pipes open
    finally:
        kill_quietly(child)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    info = run("info", tbt)
    assert "finished:       yes" in info.stdout, info.stdout
    assert "truncated tail" not in info.stdout
    out = tmp_path / "term.json"
    assert run("convert", tbt, "-o", out).returncode == 0
    s = seqs_of(load(out))
    # stopped between an event and its count update: one more than counted
    assert s in (list(range(emitted)), list(range(emitted + 1))), (len(s), emitted)


def test_follow_keeps_up(tmp_path):
    tbt = tmp_path / "f.tbt"
    rec = subprocess.Popen([TRACEBPF, "record", "-q", "--no-json", "-o", str(tbt), "--",
                            str(BUILD / "bench" / "rate"), "20000", "1.5"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: tbt.exists() and tbt.stat().st_size > 0, what="the trace file")
    dump = subprocess.Popen([TRACEBPF, "dump", "--follow", str(tbt)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    conv = subprocess.Popen([TRACEBPF, "convert", "--follow", str(tbt), "-o",
                             str(tmp_path / "f.json")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    # the followers see events while the recording is still going
    first = dump.stdout.readline()
    assert first, dump.stderr.read()
    assert rec.poll() is None, "recording ended before the follower read anything"
    rec.communicate(timeout=60)
    assert rec.returncode == 0
    # ... and end by themselves when the recorder finishes the file
    rest = dump.stdout.read()   # not communicate(): it would skip what readline buffered
    assert dump.wait(timeout=60) == 0, dump.stderr.read()
    _, cerr = conv.communicate(timeout=60)
    assert conv.returncode == 0, cerr
    lines = [first] + rest.splitlines(keepends=True)
    full = run("dump", tbt).stdout.splitlines(keepends=True)
    if lines != full:
        import difflib
        print("".join(difflib.unified_diff(lines, full, n=1))[:3000])
    assert lines == full
    t = load(tmp_path / "f.json")
    s = [e["args"]["seq"] for e in t.named("rate", "I")]
    assert s == list(range(len(s))) and len(s) > 1000


def test_stdout_pipe_to_stdin(tmp_path):
    out = tmp_path / "p.json"
    sh = (f"{TRACEBPF} record -q -o - -- {prog('mt_events')} 3 100 | "
          f"{TRACEBPF} convert - -o {out}")
    p = subprocess.run(["bash", "-o", "pipefail", "-c", sh], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    t = load(out)
    work = t.named("work", "X")
    assert Counter(Counter(e["tid"] for e in work).values()) == {100: 3}
    # dump reads a stream too
    sh = f"{TRACEBPF} record -q -o - -- {prog('mt_events')} 1 10 | {TRACEBPF} dump -"
    p = subprocess.run(["bash", "-o", "pipefail", "-c", sh], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert sum(" B test:work" in l for l in p.stdout.splitlines()) == 10


def rate_through_pipe(tmp_path, rate_args, reader="", record_args="", env=""):
    """record -o - -- bench/rate ... | [reader prefix] convert - -o out: the
    recorder's stderr (the rate program's output is there too), convert's
    stderr, the events' (tid, seq) in the JSON and its metadata. The JSON
    has one event per line, so it is read line by line (millions of events:
    too many for json.loads). {rerr} in reader is the recorder's stderr;
    env goes before the recorder, which passes it to the program."""
    out, rerr, cerr = tmp_path / "r.json", tmp_path / "rec.err", tmp_path / "conv.err"
    reader = reader.replace("{rerr}", str(rerr))
    sh = (f"{env} {TRACEBPF} record --no-sched {record_args} -o - -- "
          f"{BUILD / 'bench' / 'rate'} {rate_args} 2>{rerr} | "
          f"{{ {reader} {TRACEBPF} convert - -o {out} 2>{cerr}; }}")
    p = subprocess.run(["bash", "-o", "pipefail", "-c", sh], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, (rerr.read_text(), cerr.read_text())
    ev = re.compile(rb'^\{"ph":"I","ts":[0-9.]+,"pid":[0-9]+,"tid":([0-9]+),.*'
                    rb'"name":"rate2","args":\{"seq":([0-9]+),')
    seqs, meta = {}, None
    with open(out, "rb") as f:
        for line in f:
            m = ev.match(line)
            if m:
                seqs.setdefault(int(m.group(1)), []).append(int(m.group(2)))
            elif line.startswith(b'"metadata":'):
                # the last line: "metadata":{...} and the document's }
                meta = json.loads(b"{" + line.rstrip()[:-1] + b"}")["metadata"]
    assert meta, "no metadata line"
    rec_err = rerr.read_text()
    m = re.search(r"^emitted=([0-9]+)$", rec_err, re.M)
    assert m, rec_err
    return int(m.group(1)), rec_err, cerr.read_text(), seqs, meta


def test_stdout_pipe_keeps_up(tmp_path):
    # 1 M events/s from two threads through a pipe: convert keeps up, so
    # the recorder never waits long enough on the pipe for a ring to fill
    emitted, rec_err, conv_err, seqs, meta = rate_through_pipe(tmp_path, "1000000 3 2 2")
    assert " 0 dropped" in rec_err, rec_err
    assert meta["drops_total"] == 0 and meta["gap_records"] == 0, meta
    assert "lost" not in conv_err, conv_err
    assert len(seqs) == 2, seqs.keys()
    # every event, each thread's numbered 0..n-1 in order
    assert sum(len(s) for s in seqs.values()) == emitted == meta["events"]
    for tid, s in seqs.items():
        assert s == list(range(len(s))), tid


def test_stdout_pipe_slow_reader_counts_losses(tmp_path):
    # a reader that does not read until the program has ended: the
    # recorder waits on the full pipe and its (small) rings overflow; every
    # lost event is counted, reported by both commands and marked in the
    # JSON. (The threads' fast-path rings may not grow: grown ones could
    # hold the whole wait, and nothing would overflow.) The program emits
    # all of its 3 M events however slowly a loaded machine runs it
    # (RATE_EXACT), far more than the 1 MiB pipe and the rings hold: a
    # 5 s sleep let a starved program emit too few to overflow anything.
    emitted, rec_err, conv_err, seqs, meta = rate_through_pipe(
        tmp_path, "1000000 3 2 2", env="RATE_EXACT=1",
        reader="until grep -q '^emitted=' {rerr}; do sleep 0.1; done;",
        record_args="-b 256K --fast-buffer-max 64K")
    assert emitted == 3000000
    m = re.search(r"([0-9]+) events were LOST", rec_err)
    assert m, rec_err
    lost = int(m.group(1))
    assert lost > 0 and meta["drops_total"] == lost and meta["gap_records"] == lost, meta
    assert f"{lost} events were lost" in conv_err, conv_err
    got = sum(len(s) for s in seqs.values())
    assert got == meta["events"] and got < emitted
    # what is missing is what was counted (a few lost records may be
    # the threads' comm or exit records, not events)
    assert got + lost >= emitted, (got, lost, emitted)
    for tid, s in seqs.items():
        assert s == sorted(s) and len(set(s)) == len(s), tid


def test_serve_connect_clients_get_the_whole_stream(tmp_path):
    """dump and convert --connect get every byte, the final index included.
    (The default lag bound, 64 MiB, is far above this recording's size:
    a client that the machine's load slows down is never cut off here.)"""
    tbt, sock = tmp_path / "s.tbt", str(tmp_path / "s.sock")
    rec = subprocess.Popen([TRACEBPF, "record", "-q", "--no-json", "-o", str(tbt),
                            "--serve", sock, "--",
                            str(BUILD / "bench" / "rate"), "200000", "2"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: os.path.exists(sock), what="the socket")
    # (its output goes to a file: a pipe nobody reads would stall it)
    good_out = open(tmp_path / "good.txt", "w")
    good = subprocess.Popen([TRACEBPF, "dump", "--connect", sock], stdout=good_out,
                            stderr=subprocess.PIPE, text=True)
    conv = subprocess.Popen([TRACEBPF, "convert", "--connect", sock, "-o",
                             str(tmp_path / "s.json")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    _, rerr = rec.communicate(timeout=60)
    assert rec.returncode == 0, rerr
    assert "serve:" not in rerr, rerr
    _, derr = good.communicate(timeout=60)
    good_out.close()
    assert good.returncode == 0, derr
    assert "closed the connection before the end" not in derr, derr
    full = run("dump", tbt).stdout.splitlines()
    got = (tmp_path / "good.txt").read_text().splitlines()
    assert got == full and len(got) > 1000, (len(got), len(full), derr)
    _, cerr = conv.communicate(timeout=60)
    assert conv.returncode == 0, cerr
    assert "closed the connection before the end" not in cerr, cerr
    check_chrome_rules(Trace(tmp_path / "s.json"))


def read_all(sock, into):
    """Reads a socket to its end into a list of byte strings."""
    while True:
        b = sock.recv(1 << 16)
        if not b:
            return
        into.append(b)


def test_serve_cuts_off_a_slow_client(tmp_path):
    """A client that never reads is cut off at --serve-max-lag, the
    recording goes on, and a client that reads gets every byte of the file.
    (The reader is a thread that only copies bytes, so that it keeps within
    256 KiB, about a second of this stream, even on a loaded machine: a
    client that decodes as it reads, such as dump, can fall behind there
    and be cut off rightly.)
    The program emits all of its 2,000,000 events however slowly a loaded
    machine runs it (RATE_EXACT): about 2.3 MiB, far past the lag and the
    client's socket buffers, and written round after round before the
    recording ends. Paced by time, a starved program once emitted 37,277
    records in 4 s (333 KiB): the lag was never reached, and the client
    was cut at the end instead, for taking nothing."""
    tbt, sock = tmp_path / "s.tbt", str(tmp_path / "s.sock")
    rec = subprocess.Popen([TRACEBPF, "record", "-q", "--no-json", "-o", str(tbt),
                            "--serve", sock, "--serve-max-lag", "256K", "--",
                            str(BUILD / "bench" / "rate"), "1000000", "2"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=dict(os.environ, RATE_EXACT="1"))
    wait_for(lambda: os.path.exists(sock), what="the socket")
    slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.connect(sock)
    good = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    good.connect(sock)
    chunks = []
    reader = threading.Thread(target=read_all, args=(good, chunks))
    reader.start()
    _, rerr = rec.communicate(timeout=60)
    reader.join(timeout=60)
    good.close()
    assert rec.returncode == 0, rerr
    # exactly one client cut off: the first to connect, the one not reading
    cut_lines = [ln for ln in rerr.splitlines() if "serve:" in ln]
    assert cut_lines == ["tracebpf: record: serve: client 1 fell more than 262144 "
                         "bytes behind: disconnected (the recording goes on)"], rerr
    assert b"".join(chunks) == tbt.read_bytes()
    # the slow client got a cut stream: what it has is a readable prefix
    slow.settimeout(5)
    data = b""
    while True:
        try:
            b = slow.recv(1 << 20)
        except socket.timeout:
            break
        if not b:
            break
        data += b
    slow.close()
    cut = tmp_path / "cut.tbt"
    cut.write_bytes(data)
    info = run("info", cut)
    assert info.returncode == 0, info.stderr
    assert len(data) < tbt.stat().st_size


def test_pack_and_gzip_json(tmp_path):
    out = tmp_path / "d.json"
    rec = subprocess.run([TRACEBPF, "record", "-q", "-o", str(out), "--", prog("mt_events"),
                          "4", "2000"], capture_output=True, text=True, timeout=120)
    assert rec.returncode == 0, rec.stderr
    tbt = tmp_path / "d.tbt"
    packed = tmp_path / "packed.tbt"
    p = run("pack", tbt, packed)
    assert p.returncode == 0, p.stderr
    # never larger (file order kept, level 9, large chunks), here smaller
    assert packed.stat().st_size <= tbt.stat().st_size, (packed.stat().st_size,
                                                          tbt.stat().st_size)
    # packing a packed file: still never larger
    again = tmp_path / "again.tbt"
    p = run("pack", packed, again)
    assert p.returncode == 0, p.stderr
    assert again.stat().st_size <= packed.stat().st_size
    assert "finished:       yes" in run("info", again).stdout
    assert run("convert", packed, "-o", tmp_path / "p.json").returncode == 0
    a, b = Trace(out), load(tmp_path / "p.json")
    norm = lambda t: sorted(json.dumps(e, sort_keys=True) for e in t.events)
    assert norm(a) == norm(b)
    # gzip JSON: Python and the DevTools engine read it
    gz = tmp_path / "d.json.gz"
    c = run("convert", tbt, "-o", gz)
    assert c.returncode == 0, c.stderr
    with gzip.open(gz) as f:
        doc = json.load(f)
    assert sorted(json.dumps(e, sort_keys=True) for e in doc["traceEvents"]) == norm(a)
    devtools_check(gz)
    # and Perfetto's trace processor (which reads gzip) as the plain JSON
    rows = perfetto_query(gz, PERFETTO_COMPLAINTS)
    assert {r["name"]: int(r["value"]) for r in rows} == b.perfetto, rows


def test_golden_files_convert(tmp_path):
    golden = sorted((ROOT / "tests" / "data").glob("v*.tbt"))
    versions = [g.name.split("-")[0][1:] for g in golden]
    # one per released format version; an empty list must not pass
    assert {"1.0", "2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "2.7", "2.8",
            "2.9", "2.10"} <= set(versions), golden
    for g, version in zip(golden, versions):
        out = tmp_path / (g.stem + ".json")
        c = run("convert", g, "-o", out)
        assert c.returncode == 0, c.stderr
        # The rendering, byte for byte (tests/data/README.md says when and
        # how the expected files are rendered again).
        expected = g.with_suffix(".json")
        assert out.read_bytes() == expected.read_bytes(), f"{g.name} renders otherwise"
        # and in Perfetto's format (docs/perfetto.md), held to its rules
        pf = tmp_path / (g.stem + ".pftrace")
        c = run("convert", g, "-o", pf)
        assert c.returncode == 0, c.stderr
        assert pf.read_bytes() == g.with_suffix(".pftrace").read_bytes(), \
            f"{g.name} renders otherwise in Perfetto's format"
        assert not pftrace.Trace(pf).errors
        got = {r["name"]: r["value"] for r in perfetto_query(pf, PERFETTO_COMPLAINTS)}
        got.pop("compact_sched_switch_skipped", None)   # one per CPU: the format's
        assert got == {}, (g.name, got)
        t = load(out)
        if version != "2.4":   # recorded through 4 KiB rings: most of it lost
            assert len(t.named("work", "X")) == 40
        # dump resolves every event with the model's own site parser: the
        # same (category, name) pairs as the JSON, none left as an address
        d = run("dump", g)
        assert d.returncode == 0 and " EVENT site=" not in d.stdout, d.stdout[-2000:]
        dumped = set(re.findall(r"^\S+ \[...\] \d+/\d+ [BEIC] ([^: ]+):(\S+)", d.stdout, re.M))
        # (the gaps' "records lost" instants and the marks of the CPUs'
        # chain breaks are convert's, not records; the memory counters are
        # RSS records, dumped as such; other programs' probes are USDT
        # records, dumped by probe)
        usdt = set(re.findall(r" USDT_PROBE \d+ ([^: ]+):", d.stdout))
        shown = {(e["cat"], e["name"]) for e in t.events
                 if e["ph"] in "XIC" and
                 e["cat"] not in ("tracebpf", SCHED_BREAK_CAT, "memory", *usdt)}
        assert dumped and dumped == shown, (dumped, shown)
        assert bool(re.search(r"^\S+ \[...\] \d+/\d+ RSS ", d.stdout, re.M)) == \
            any(e.get("cat") == "memory" for e in t.events), g
        info = run("info", g)
        assert info.returncode == 0 and f"format:         {version}" in info.stdout
        # info counts the chain breaks convert counts; every golden trace
        # with switches was recorded --sched=traced (its command line says
        # so): each break is the filter's
        n = t.meta.get("sched_breaks")
        if version not in ("1.0", "2.0"):
            assert n is not None and t.meta["sched_breaks_by_cause"]["filtered"] == n, t.meta
            assert re.search(rf"^sched breaks:   {n} of \d+ switches \(records lost 0, "
                             rf"recording stopped 0, filtered out {n}, ", info.stdout, re.M), \
                info.stdout
        else:
            assert n is None and "sched breaks" not in info.stdout
        if version == "2.2":   # recorded --paused, then tracebpf ctl start
            assert len(t.meta["recording_stopped"]) == 1, t.meta
            assert "tracebpf ctl:   1 stop, 1 start\n" in info.stdout, info.stdout
        if version == "2.3":   # the second sleep did not fit in --max-processes 2
            assert t.meta["lost_processes"] == 1, t.meta
            assert "lost processes: 1 " in info.stdout, info.stdout
        if tuple(map(int, version.split("."))) < (2, 4):
            assert t.meta["gaps"] == 0, t.meta
            assert "gaps:           not marked (format before 2.4)\n" in info.stdout
        if version == "2.10":   # record --usdt: sdt_app 3's probes
            app = [e for e in t.events if e.get("cat") == "sdtapp"]
            assert [e["name"] for e in app if e["ph"] == "X"] == ["m name-0", "m name-1",
                                                                  "m name-2"]
            assert [e["args"]["arg1"] for e in app if e["ph"] == "C"] == [0, 3, 6]
            assert t.process_names()[app[0]["pid"]] == "build/progs/sdt_app 3"
        if version == "2.4":   # -b 4K: one gap mark per CPU
            assert t.meta["gaps"] == 2 and t.meta["gap_records"] == t.meta["drops_total"] == 1090
            assert t.meta["slices_cut_at_gaps"] == 1, t.meta
            assert "gaps:           2 (1090 application records lost; per cpu: 544 546), " \
                   "0 in kernel records (0 lost)\n" in info.stdout, info.stdout


def test_info_truncated_and_errors(tmp_path):
    out = tmp_path / "i.json"
    rec = subprocess.run([TRACEBPF, "record", "-q", "-o", str(out), "--", prog("mt_events"),
                          "2", "50"], capture_output=True, text=True, timeout=120)
    assert rec.returncode == 0
    data = (tmp_path / "i.tbt").read_bytes()
    cut = tmp_path / "cut.tbt"
    cut.write_bytes(data[:-100])
    info = run("info", cut)
    assert info.returncode == 0
    assert "truncated tail: " in info.stdout and "finished:       no" in info.stdout
    # the file's size, not more: the bytes read of the torn chunk count once
    # (they were counted in the offset and again in the tail: 17,130 for a
    # 10,000-byte file); the same through a pipe
    assert f"file bytes:     {len(data) - 100}\n" in info.stdout, info.stdout
    piped = subprocess.run([TRACEBPF, "info", "-"], input=data[:-100], capture_output=True)
    assert f"file bytes:     {len(data) - 100}\n".encode() in piped.stdout, piped.stdout
    assert "bytes/event:" in info.stdout
    # a newer major is refused with a clear message
    newer = bytearray(data)
    newer[8:10] = struct.pack("<H", 99)
    bad = tmp_path / "newer.tbt"
    bad.write_bytes(bytes(newer))
    for cmd in ("info", "dump", "convert"):
        r = run(cmd, bad)
        assert r.returncode != 0
        assert "newer tracebpf" in r.stderr, r.stderr
    empty = tmp_path / "empty.tbt"
    empty.write_bytes(b"")
    r = run("dump", empty)
    assert r.returncode != 0 and "not a tracebpf trace" in r.stderr


def test_follow_ends_when_the_recorder_is_killed(tmp_path):
    """A follower of a file whose recorder was killed (no index will ever
    come) converts what the recorder wrote and ends, instead of waiting for
    ever: the writer's lock on the file is gone."""
    tbt = tmp_path / "k.tbt"
    rec = subprocess.Popen([TRACEBPF, "record", "-q", "--no-json", "-o", str(tbt), "--",
                            prog("quiet_thread")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, start_new_session=True)
    assert rec.stdout.readline().strip() == "ready"
    conv = subprocess.Popen([TRACEBPF, "convert", "--follow", str(tbt), "-o",
                             str(tmp_path / "k.json")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    # the quiet thread's event reaches the file on the recorder's timer
    partial = tmp_path / "partial.json"

    def quiet_in_file():
        p = run("convert", tbt, "-o", partial)
        return p.returncode == 0 and Trace(partial).named("quiet", "I")
    wait_for(quiet_in_file, what="the quiet thread's event in the file")
    rec.kill()
    rec.wait(timeout=60)
    kill_group(rec)
    rec.communicate(timeout=60)
    try:
        _, err = conv.communicate(timeout=60)   # it used to wait for ever
    finally:
        conv.kill()
    assert conv.returncode == 0, err
    t = load(tmp_path / "k.json")
    assert len(t.named("quiet", "I")) == 1


def test_follow_a_redirected_stdout(tmp_path):
    """`record -o - > FILE` locks FILE too: a follower of FILE keeps waiting
    while the recorder runs, and ends when it finishes."""
    tbt = tmp_path / "r.tbt"
    with open(tbt, "wb") as f:
        rec = subprocess.Popen([TRACEBPF, "record", "-q", "-o", "-", "--", prog("quiet_thread")],
                               stdout=f, stderr=subprocess.PIPE, text=True, start_new_session=True)
    wait_for(lambda: tbt.stat().st_size > 0, what="the trace on stdout")
    conv = subprocess.Popen([TRACEBPF, "convert", "--follow", str(tbt), "-o",
                             str(tmp_path / "r.json")], stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    alive = conv.poll() is None
    rec.send_signal(signal.SIGINT)
    rec.wait(timeout=60)
    kill_group(rec)
    rec.communicate(timeout=60)
    try:
        _, err = conv.communicate(timeout=60)
    finally:
        conv.kill()
    assert alive, f"the follower stopped while the recorder was running: {err}"
    assert conv.returncode == 0, err
    assert load(tmp_path / "r.json").named("main_ready", "I")
