"""libtracebpf as a program outside the source tree sees it: installed with
make install DESTDIR=..., then tests/lib/reader_check.c built with nothing
but `pkg-config libtracebpf` pointing into the DESTDIR (shared, and with the
static archive), run over the golden traces (tests/data) and checked
against what tracebpf convert and info say of them (docs/libtracebpf.md)."""
import collections
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, TRACEBPF
from test_install import PREFIX, dest, pkg_env, version  # noqa: F401 (dest: a fixture)

# `make install` with a PREFIX of each test's own regenerates build/*.pc in
# the one source tree: side by side, one test's install got another's
# PREFIX (tracebpf/reader.h "missing"; mv of build/tracebpf.pc.tmp
# failing). Every test that installs runs on one xdist worker, in turn
# (tests/run.sh: --dist loadgroup).
pytestmark = pytest.mark.xdist_group("make-install")

GOLDEN = sorted((ROOT / "tests/data").glob("v*.tbt"))
# libdeflate: Perfetto's compressed packet groups (docs/perfetto.md,
# "Compression"), twice as fast as zlib's deflate at level 1
ALLOWED_NEEDED = {"libc.so.6", "libz.so.1", "libdeflate.so.0", "libtraceevent.so.1"}


def libdir(dest):
    return dest / PREFIX.lstrip("/") / "lib"


def pkg(dest, *args):
    r = subprocess.run(["pkg-config", *args, "libtracebpf"], env=pkg_env(dest),
                       capture_output=True, text=True)
    assert r.returncode == 0, f"pkg-config {args} libtracebpf: {r.stderr}"
    return shlex.split(r.stdout)


def build(dest, out, static):
    """reader_check, linked against the shared library or the archive."""
    flags = pkg(dest, "--cflags", "--libs", *(["--static"] if static else []))
    if static:   # the archive for libtracebpf, its dependencies shared
        flags = [str(libdir(dest) / "libtracebpf.a") if f == "-ltracebpf" else f for f in flags]
    cmd = ["cc", "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror",
           str(ROOT / "tests/lib/reader_check.c"), "-o", str(out), *flags]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, f"{shlex.join(cmd)}:\n{r.stderr}"
    return out


@pytest.fixture(scope="module", params=["shared", "static"])
def checker(request, dest, tmp_path_factory):
    exe = build(dest, tmp_path_factory.mktemp("rc") / "reader_check", request.param == "static")
    needed = readelf_needed(exe)
    assert ("libtracebpf.so.0" in needed) == (request.param == "shared"), needed
    env = dict(os.environ, LD_LIBRARY_PATH=str(libdir(dest)))

    def call(*args, check=True):
        r = subprocess.run([str(exe), *map(str, args)], env=env, capture_output=True)
        if check:
            assert r.returncode == 0, f"reader_check {args}: {r.stderr.decode()}"
        return r
    return call


def readelf_needed(path):
    out = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True).stdout
    return set(re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", out))


def golden_json(g):
    import json
    return json.loads(g.with_suffix(".json").read_text())


def test_golden_traces_exist():
    assert len(GOLDEN) >= 6, GOLDEN


@pytest.mark.parametrize("g", GOLDEN, ids=lambda g: g.stem)
def test_chrome_json_is_converts_output_byte_for_byte(checker, g):
    r = checker("json", g)
    assert r.stdout == g.with_suffix(".json").read_bytes(), f"{g.name} renders otherwise"
    # no print function set: the library said nothing (v2.4 lost events)
    assert r.stderr == b""


def test_print_function_gets_the_warnings(checker):
    g = next(g for g in GOLDEN if golden_json(g)["metadata"].get("drops_total"))
    r = checker("-v", "json", g)
    drops = golden_json(g)["metadata"]["drops_total"]
    assert f"[warn] tracebpf: convert: warning: {drops} events were lost".encode() in r.stderr


@pytest.mark.parametrize("g", GOLDEN, ids=lambda g: g.stem)
def test_ftrace_text_is_system_trace_events(checker, g):
    r = checker("ftrace", g)
    text = golden_json(g).get("systemTraceEvents", "")
    assert r.stdout.decode() == text
    lines = int(re.search(rb"lines (\d+)", r.stderr).group(1))
    assert lines == max(0, text.count("\n") - 2)


@pytest.mark.parametrize("g", GOLDEN, ids=lambda g: g.stem)
def test_records_in_time_order_are_all_records(checker, g):
    r = checker("records", g)
    info = subprocess.run([TRACEBPF, "info", str(g)], capture_output=True, text=True)
    assert info.returncode == 0, info.stderr
    want = int(re.search(r"^records:\s+(\d+)", info.stdout, re.M).group(1))
    assert r.stdout.decode() == f"records {want}\n"


def model_lines(checker, g):
    out = checker("model", g).stdout.decode().splitlines()
    events = [ln.split(" ") for ln in out if ln.startswith("event ")]
    threads = [ln.split(" ", 3) for ln in out if ln.startswith("thread ")]
    counts = dict(kv.split("=") for ln in out if ln.startswith("counts ")
                  for kv in ln.split(" ")[1:])
    return events, threads, counts


@pytest.mark.parametrize("g", GOLDEN, ids=lambda g: g.stem)
def test_model_events_are_the_json_events(checker, g):
    j = golden_json(g)
    events, threads, counts = model_lines(checker, g)
    # (reader_check prints a name's spaces as '_'; a memory dump, `v` in
    # the JSON, comes to the API as its counters: reader.h)
    want = collections.Counter((e["ph"], e["pid"], e["tid"], e["name"].replace(" ", "_"))
                               for e in j["traceEvents"] if e["ph"] not in "Mv")
    got = collections.Counter((f[1], int(f[4]), int(f[5]), f[7]) for f in events)
    assert got == want
    # times: ns in the model, us with three decimals in the JSON
    js = sorted((e["ph"], e["pid"], e["tid"], round(e["ts"] * 1000), round(e.get("dur", 0) * 1000))
                for e in j["traceEvents"] if e["ph"] not in "Mv")
    ms = sorted((f[1], int(f[4]), int(f[5]), int(f[2]), int(f[3])) for f in events)
    assert ms == js
    names = {(e["pid"], e["tid"], e["args"]["name"]) for e in j["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {(int(t[1]), int(t[2]), t[3]) for t in threads} == names
    for k in ("events", "drops_total", "gaps", "gap_records", "slices_cut_at_gaps"):
        assert int(counts[k]) == j["metadata"][k], k


def test_torn_trace_reads_to_the_tail(checker, tmp_path):
    g = GOLDEN[-1]
    data = g.read_bytes()
    torn = tmp_path / "torn.tbt"
    torn.write_bytes(data[: len(data) * 2 // 3])
    r = checker("records", torn)
    n = int(r.stdout.split()[1])
    assert 0 < n < int(checker("records", g).stdout.split()[1])
    assert re.search(rb"^tail \d+ bytes: ", r.stderr, re.M), r.stderr


def test_not_a_trace_is_an_error(checker, tmp_path):
    bad = tmp_path / "bad.tbt"
    bad.write_text("not a trace\n")
    r = checker("json", bad, check=False)
    assert r.returncode == 1 and b"Invalid argument" in r.stderr, r.stderr
    assert r.stdout == b""


def test_shared_library_exports_the_api_only(dest):
    so = libdir(dest) / f"libtracebpf.so.{version()}"
    out = subprocess.run(["nm", "-D", "--defined-only", str(so)], capture_output=True,
                         text=True).stdout
    exported = {ln.split()[-1] for ln in out.splitlines() if ln.strip()}
    header = (ROOT / "lib/include/tracebpf/reader.h").read_text()
    declared = set(re.findall(r"^TRACEBPF_API[^(]*?\b(tracebpf_\w+)\(", header, re.M))
    assert len(declared) >= 15, declared
    assert exported == declared
    assert readelf_needed(so) <= ALLOWED_NEEDED, readelf_needed(so)
    dyn = subprocess.run(["readelf", "-d", str(so)], capture_output=True, text=True).stdout
    assert "Library soname: [libtracebpf.so.0]" in dyn
    assert os.readlink(libdir(dest) / "libtracebpf.so.0") == so.name
    assert os.readlink(libdir(dest) / "libtracebpf.so") == so.name


def test_header_compiles_as_cxx(dest, tmp_path):
    src = tmp_path / "v.cc"
    src.write_text("#include <tracebpf/reader.h>\n#include <cstring>\n"
                   "int main() { return std::strcmp(tracebpf_version(), \"%s\") != 0; }\n"
                   % version())
    exe = tmp_path / "v"
    cmd = ["g++", "-std=c++11", "-Wall", "-Wextra", "-Werror", str(src), "-o", str(exe),
           *pkg(dest, "--cflags", "--libs")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, f"{shlex.join(cmd)}:\n{r.stderr}"
    r = subprocess.run([str(exe)], env=dict(os.environ, LD_LIBRARY_PATH=str(libdir(dest))))
    assert r.returncode == 0
