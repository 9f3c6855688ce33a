"""make install / make uninstall: the installed tree is all an application
and its user need (the binary, the header with its pkg-config file, the man
pages), and uninstall takes back exactly that.

A program outside the source tree is compiled against the DESTDIR with
nothing but PKG_CONFIG_PATH and PKG_CONFIG_SYSROOT_DIR pointing into it,
then recorded with the installed tracebpf."""
import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, load

# `make install` with a PREFIX of each test's own regenerates build/*.pc in
# the one source tree: side by side, one test's install got another's
# PREFIX (tracebpf/reader.h "missing"; mv of build/tracebpf.pc.tmp
# failing). Every test that installs runs on one xdist worker, in turn
# (tests/run.sh: --dist loadgroup).
pytestmark = pytest.mark.xdist_group("make-install")

PREFIX = "/usr"

APP_C = r"""
#include <stdio.h>
#include <tracebpf/trace.h>

static int work(int i)
{
	TRACE_EVENT1("install", "work", "i", i);
	return 2 * i;
}

int main(void)
{
	int sum = 0;
	TRACE_EVENT_INSTANT0("install", "start", TRACE_EVENT_SCOPE_THREAD);
	for (int i = 0; i < 5; i++) {
		sum += work(i);
		TRACE_COUNTER1("install", "sum", sum);
	}
	printf("sum=%d\n", sum);
	return 0;
}
"""

APP_CXX = r"""
#include <cstdio>
#include <string>
#include <tracebpf/trace.h>

struct Job {
	int n;
	int run() const
	{
		TRACE_EVENT1("install", "work", "i", n);
		auto twice = [this] { TRACE_EVENT0("install", "lambda"); return 2 * n; };
		return twice();
	}
};

int main()
{
	int sum = 0;
	TRACE_EVENT_INSTANT0("install", "start", TRACE_EVENT_SCOPE_THREAD);
	for (int i = 0; i < 5; i++) {
		sum += Job{i}.run();
		TRACE_COUNTER1("install", "sum", sum);
	}
	std::printf("sum=%d\n", sum);
	return 0;
}
"""


def make(*args):
    # not the flags of a make that runs the suite (make test: -j, V=1)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    r = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), *args],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, f"make {' '.join(args)} failed:\n{r.stdout}\n{r.stderr}"
    return r


def tree(root):
    """Every file and directory below root, as paths relative to it."""
    return sorted(str(p.relative_to(root)) for p in Path(root).rglob("*"))


def version():
    m = re.search(r"^VERSION\s*:?=\s*(\S+)", (ROOT / "Makefile").read_text(), re.M)
    return m.group(1)


def expected_files():
    """What install must put below PREFIX, from the source tree itself."""
    headers = [f"include/tracebpf/{h.name}" for h in (ROOT / "lib/include/tracebpf").glob("*.h")]
    cmds = [f"share/man/man1/{d.stem}.1" for d in (ROOT / "docs").glob("tracebpf-*.md")]
    so = f"lib/libtracebpf.so.{version()}"
    libs = ["lib/libtracebpf.a", so, "lib/libtracebpf.so.0", "lib/libtracebpf.so",
            "lib/pkgconfig/libtracebpf.pc", "share/man/man3/libtracebpf.3"]
    catalogs = [f"share/tracebpf/usdt/{c.name}" for c in (ROOT / "tools/usdt").glob("*.usdt")]
    return sorted(["bin/tracebpf", "lib/pkgconfig/tracebpf.pc", "share/man/man1/tracebpf.1",
                   "share/man/man3/tracebpf.3", "share/tracebpf/installed", *headers, *cmds,
                   *libs, *catalogs])


@pytest.fixture(scope="module")
def dest(tmp_path_factory):
    d = tmp_path_factory.mktemp("destdir")
    make("install", f"DESTDIR={d}", f"PREFIX={PREFIX}")
    return d


def pkg_env(dest):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PKG_CONFIG")}
    env["PKG_CONFIG_PATH"] = f"{dest}{PREFIX}/lib/pkgconfig"
    env["PKG_CONFIG_SYSROOT_DIR"] = str(dest)
    return env


def pkg_flags(dest):
    r = subprocess.run(["pkg-config", "--cflags", "--libs", "tracebpf"], env=pkg_env(dest),
                       capture_output=True, text=True)
    assert r.returncode == 0, f"pkg-config --cflags --libs tracebpf: {r.stderr}"
    return shlex.split(r.stdout)


def test_install_puts_exactly_the_listed_files(dest):
    files = [p for p in tree(dest / PREFIX.lstrip("/")) if (dest / PREFIX.lstrip("/") / p).is_file()]
    assert files == expected_files()
    assert os.access(dest / "usr/bin/tracebpf", os.X_OK), "tracebpf is not executable"
    assert (dest / "usr/include/tracebpf/trace.h").read_bytes() == \
        (ROOT / "lib/include/tracebpf/trace.h").read_bytes()


def test_installed_tracebpf_finds_its_catalogs(dest, tmp_path):
    """record --usdt=NAME reads share/tracebpf/usdt next to the installed
    program (docs/tracebpf-record.md, "OTHER PROGRAMS' PROBES")."""
    env = {k: v for k, v in os.environ.items() if k != "TRACEBPF_USDT_PATH"}
    r = subprocess.run([str(dest / "usr/bin/tracebpf"), "record", "-q", "--no-sched", "-o",
                        str(tmp_path / "x.json"), "--usdt=libstdcxx", "--",
                        str(ROOT / "build/progs/cxx_unwind")], capture_output=True, text=True,
                       cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    with open(tmp_path / "x.json") as f:
        names = [e.get("name") for e in json.load(f)["traceEvents"]]
    assert names.count("libstdcxx:throw") == 1 and names.count("libstdcxx:catch") == 1


def test_installed_tracebpf_version(dest):
    r = subprocess.run([str(dest / "usr/bin/tracebpf"), "--version"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"tracebpf {version()}"


def test_pkg_config_points_into_the_destdir(dest):
    r = subprocess.run(["pkg-config", "--modversion", "tracebpf"], env=pkg_env(dest),
                       capture_output=True, text=True)
    assert r.stdout.strip() == version(), r.stderr
    assert f"-I{dest}{PREFIX}/include" in pkg_flags(dest)


def compile_app(dest, tmp_path, compiler, source, suffix):
    src = tmp_path / f"app{suffix}"
    src.write_text(source)
    exe = tmp_path / f"app-{compiler}"
    cmd = [compiler, "-Wall", "-Wextra", "-Werror", str(src), "-o", str(exe), *pkg_flags(dest)]
    r = subprocess.run(cmd, cwd=tmp_path, env=pkg_env(dest), capture_output=True, text=True)
    assert r.returncode == 0, f"{shlex.join(cmd)}:\n{r.stderr}"
    # the header came from the DESTDIR, not from the source tree or the host
    deps = subprocess.run([compiler, "-M", str(src), *pkg_flags(dest)], cwd=tmp_path,
                          capture_output=True, text=True, check=True).stdout
    assert f"{dest}{PREFIX}/include/tracebpf/trace.h" in deps.split(), deps
    return exe


def usdt_notes(exe):
    out = subprocess.run(["readelf", "-n", str(exe)], capture_output=True, text=True,
                         check=True).stdout
    return re.findall(r"Provider: (\S+)\n\s+Name: (\S+)", out)


@pytest.mark.parametrize("compiler,source,suffix", [("cc", APP_C, ".c"), ("c++", APP_CXX, ".cc")],
                         ids=["c", "cxx"])
def test_app_built_with_pkg_config_is_traced(dest, tmp_path, compiler, source, suffix):
    exe = compile_app(dest, tmp_path, compiler, source, suffix)
    notes = usdt_notes(exe)
    assert ("tracebpf", "event") in notes, f"no tracebpf:event USDT note in {exe}: {notes}"
    assert {p for p, _ in notes} == {"tracebpf"}, notes

    plain = subprocess.run([str(exe)], capture_output=True, text=True)
    assert plain.returncode == 0 and plain.stdout == "sum=20\n", plain

    out = tmp_path / "app.json"
    rec = subprocess.run([str(dest / "usr/bin/tracebpf"), "record", "-q", "--no-sched",
                          "-o", str(out), "--", str(exe)], capture_output=True, text=True,
                         timeout=120)
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout == "sum=20\n"
    t = load(out)
    work = t.named("work", "X")
    assert sorted(e["args"]["i"] for e in work) == list(range(5))
    assert len(t.named("start", "I")) == 1
    sums = [e["args"]["value"] for e in t.named("sum", "C")]
    assert sums == [0, 2, 6, 12, 20]


def installed_pages(dest):
    pages = sorted((dest / "usr/share/man").glob("man*/*"))
    assert pages, "no man page installed"
    return pages


def test_man_pages_render_without_warnings(dest):
    env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8", MANPAGER="cat", PAGER="cat")
    for page in installed_pages(dest):
        name, section = page.stem, page.suffix[1:]
        # (--warnings adds groff's `mac` warnings to its default ones: a
        # page that renders silently with them renders so without them)
        r = subprocess.run(["man", "--warnings", "-l", str(page)], env=env,
                           capture_output=True, text=True)
        # groff and tbl say "warning" on stderr (the text itself may use
        # the word); nothing else may be said there either
        assert r.returncode == 0, f"man --warnings -l {page}:\n{r.stderr}"
        assert r.stderr == "", f"man --warnings -l {page}:\n{r.stderr}"
        text = r.stdout
        assert text.startswith(f"{name}({section})"), f"{page}: header line {text[:80]!r}"
        for heading in ("NAME", "SYNOPSIS", "DESCRIPTION"):
            assert re.search(rf"^{heading}$", text, re.M), f"{page} has no {heading} section"
        # whatis/apropos read the NAME line: "tracebpf-record - record ..."
        w = subprocess.run(["lexgrog", str(page)], capture_output=True, text=True)
        assert w.returncode == 0 and f': "{name} - ' in w.stdout, f"lexgrog {page}: {w.stdout}"


def test_docs_title_lines_name_the_pages():
    """md2man.sh renders docs/tracebpf-CMD.md as tracebpf-CMD(1) and
    docs/api.md as tracebpf(3), docs/libtracebpf.md as libtracebpf(3); each
    doc's first line must say so."""
    docs = {d: f"# {d.stem}(1)" for d in [ROOT / "docs/tracebpf.md",
                                          *(ROOT / "docs").glob("tracebpf-*.md")]}
    docs[ROOT / "docs/api.md"] = "# tracebpf(3)"
    docs[ROOT / "docs/libtracebpf.md"] = "# libtracebpf(3)"
    for doc, title in docs.items():
        first = doc.read_text().split("\n", 1)[0]
        assert first == title, f"{doc.relative_to(ROOT)} starts with {first!r}, not {title!r}"


def test_man_pages_cover_every_command(dest):
    names = {p.name for p in installed_pages(dest)}
    helped = subprocess.run([str(dest / "usr/bin/tracebpf"), "--help"], capture_output=True,
                            text=True).stdout
    cmds = re.findall(r"^  ([a-z]+)\s{2,}", helped.split("Commands:")[1].split("\n\n")[0], re.M)
    assert "record" in cmds, helped
    # one table (user/main.c) says the commands, for dispatch and for help
    table = subprocess.run([str(dest / "usr/bin/tracebpf"), "help", "--commands"],
                           capture_output=True, text=True).stdout.split()
    assert table == cmds, (table, cmds)
    # and tracebpf(1)'s COMMANDS table lists them, in the table's order
    page = (ROOT / "docs/tracebpf.md").read_text().split("## COMMANDS", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `([a-z]+)` \|", page, re.M)
    assert listed == table, (listed, table)
    with_pages = {c for c in cmds if c not in ("version", "help")}
    for cmd in with_pages:
        assert f"tracebpf-{cmd}.1" in names, f"no man page for 'tracebpf {cmd}'"
    pages = {n[len("tracebpf-"):-len(".1")] for n in names if n.startswith("tracebpf-")}
    assert pages == with_pages, f"man pages of no command: {pages - with_pages}"
    for cmd in cmds:   # each dispatches to a command of that name
        r = subprocess.run([str(dest / "usr/bin/tracebpf"), cmd, "--help"],
                           capture_output=True, text=True)
        assert r.returncode == 0 and (cmd in ("version", "help") or
                                      f"tracebpf {cmd}" in r.stdout), (cmd, r.stdout[:200])


@pytest.mark.parametrize("layout", ["destdir", "prefix"])
def test_uninstall_removes_all_it_installed(tmp_path, layout):
    root = tmp_path / "root"
    if layout == "destdir":
        args = [f"DESTDIR={root}", f"PREFIX={PREFIX}"]
    else:  # no DESTDIR: a PREFIX install creates the prefix itself
        args = [f"PREFIX={root}/opt/tracebpf"]
    root.mkdir()
    make("install", *args)
    assert tree(root), "install put nothing there"
    make("uninstall", *args)
    assert tree(root) == [], "left behind by uninstall"


def test_uninstall_keeps_what_was_there_before(tmp_path):
    root = tmp_path / "root"
    # as on Debian: /usr/local/share/man and /usr/local/include exist, empty
    (root / "usr/local/share/man").mkdir(parents=True)
    (root / "usr/local/include").mkdir(parents=True)
    (root / "usr/local/bin").mkdir(parents=True)
    (root / "usr/local/bin/other").write_text("not ours\n")
    before = tree(root)
    args = [f"DESTDIR={root}", "PREFIX=/usr/local"]
    make("install", *args)
    make("install", *args)  # a second install over the first changes nothing
    make("uninstall", *args)
    assert tree(root) == before


def test_install_script_keeps_symbolic_links(tmp_path):
    """A library's soname links are INSTALL_FILES entries like any file:
    installed as the same link, removed by uninstall."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "libx.so.0.1.0").write_bytes(b"\x7fELF not really\n")
    (src / "libx.so.0").symlink_to("libx.so.0.1.0")
    (src / "libx.so").symlink_to("libx.so.0")
    root = tmp_path / "root"
    root.mkdir()
    entries = [f"755:{src}/libx.so.0.1.0:/usr/lib", f"777:{src}/libx.so.0:/usr/lib",
               f"777:{src}/libx.so:/usr/lib"]
    script = ["bash", str(ROOT / "tools/install.sh")]
    manifest = "/usr/share/x/installed"
    subprocess.run([*script, "install", str(root), manifest, *entries], check=True,
                   capture_output=True)
    lib = root / "usr/lib"
    assert os.readlink(lib / "libx.so") == "libx.so.0"
    assert os.readlink(lib / "libx.so.0") == "libx.so.0.1.0"
    assert not (lib / "libx.so.0.1.0").is_symlink()
    assert (lib / "libx.so").read_bytes() == (src / "libx.so.0.1.0").read_bytes()
    subprocess.run([*script, "uninstall", str(root), manifest, *entries], check=True,
                   capture_output=True)
    assert tree(root) == []
