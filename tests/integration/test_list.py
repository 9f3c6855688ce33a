"""`tracebpf list` (docs/tracebpf-list.md): the sites in a program's ELF
files, read from the descriptors the test programs were built with, file
and line included. The expected lines are found in the programs' sources,
so that the tests say where each macro is, not a copy of the output."""
import json
import os
import re
import subprocess

from conftest import ROOT, TRACEBPF, prog, wait_for


def source_line(src, needle):
    """The 1-based line of the source file that holds needle (once)."""
    lines = [i + 1 for i, l in enumerate((ROOT / "tests" / "progs" / src).read_text()
                                         .splitlines()) if needle in l and "*" not in l[:3]]
    assert len(lines) == 1, (src, needle, lines)
    return lines[0]


def list_json(*args):
    p = subprocess.run([TRACEBPF, "list", "--json", *map(str, args)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def sites(doc, path_end):
    [obj] = [o for o in doc["objects"] if o["path"].endswith(path_end)]
    return sorted((s["category"], s["name"], s["phase"],
                   tuple((a["name"], a["type"]) for a in s["args"]), s["file"], s["line"])
                  for s in obj["sites"])


def test_list_matches_the_descriptors_built():
    doc = list_json(prog("mt_events"))
    work = source_line("mt_events.c", 'TRACE_EVENT1("test", "work"')
    tick = source_line("mt_events.c", 'TRACE_EVENT_INSTANT1("test", "tick"')
    done = source_line("mt_events.c", 'TRACE_COUNTER1("test", "done"')
    assert sites(doc, "/mt_events") == sorted([
        ("test", "work", "begin", (("seq", "int"),), "mt_events.c", work),
        ("test", "work", "end", (), "mt_events.c", work),
        ("test", "tick", "instant", (("seq", "int"),), "mt_events.c", tick),
        ("test", "done", "counter", (("value", "int"),), "mt_events.c", done),
    ])
    assert doc["categories"] == {"test": 4} and doc["sites"] == 4
    assert all(re.fullmatch(r"0x[0-9a-f]+", s["address"])
               for o in doc["objects"] for s in o["sites"])


def test_list_follows_the_libraries_a_program_loads():
    doc = list_json(prog("lib_user"))
    assert [os.path.basename(o["path"]) for o in doc["objects"]] == ["lib_user",
                                                                     "libtbtest.so"]
    assert sites(doc, "/libtbtest.so") == [
        ("lib", "lib_event", "instant", (("i", "int"),), "libtbtest.c",
         source_line("libtbtest.c", 'TRACE_EVENT_INSTANT1("lib", "lib_event"'))]
    assert sites(doc, "/lib_user") == [
        ("test", "main_first", "instant", (), "lib_user.c",
         source_line("lib_user.c", 'TRACE_EVENT_INSTANT0("test", "main_first"'))]
    assert doc["categories"] == {"test": 1, "lib": 1}


def test_list_a_running_process(spawn):
    app = spawn(prog("quiet_thread"))
    assert app.stdout.readline() == "ready\n"
    p = subprocess.run([TRACEBPF, "list", "-p", str(app.pid)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    quiet = source_line("quiet_thread.c", 'TRACE_EVENT_INSTANT0("test", "quiet"')
    ready = source_line("quiet_thread.c", 'TRACE_EVENT_INSTANT0("test", "main_ready"')
    assert re.search(rf"^/proc/{app.pid}/root/.*/quiet_thread \(2 sites\)$", p.stdout, re.M), \
        p.stdout
    assert re.search(rf"^  test:quiet  instant  quiet_thread\.c:{quiet}$", p.stdout, re.M)
    assert re.search(rf"^  test:main_ready  instant  quiet_thread\.c:{ready}$", p.stdout, re.M)
    assert p.stdout.endswith("2 sites; per category: test 2\n"), p.stdout


def test_list_thousands_of_sites():
    doc = list_json(prog("many_sites"))
    assert doc["sites"] == sum(doc["categories"].values()) == \
        sum(len(o["sites"]) for o in doc["objects"])
    assert doc["sites"] >= 4000 and len(doc["objects"]) == 2, \
        (doc["sites"], [o["path"] for o in doc["objects"]])
    assert all(s["file"] and s["line"] > 0 for o in doc["objects"] for s in o["sites"])


def test_list_errors(tmp_path):
    def run(*args):
        return subprocess.run([TRACEBPF, "list", *map(str, args)], capture_output=True,
                              text=True, timeout=60)
    for args in ((), ("-p", "x"), ("-p", "1", prog("mt_events"))):
        p = run(*args)
        assert p.returncode == 64 and "tracebpf list" in p.stderr, (args, p.stderr)
    p = run(tmp_path / "missing")
    assert p.returncode == 1 and "tracebpf: list: failed to read" in p.stderr, p.stderr
    text = tmp_path / "text"
    text.write_text("not a program\n")
    text.chmod(0o755)
    p = run(text)
    assert p.returncode == 1 and "not an ELF file" in p.stderr, p.stderr
    p = run("-p", 2147483647)
    assert p.returncode == 1 and "failed to read process 2147483647" in p.stderr, p.stderr
