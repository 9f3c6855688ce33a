"""What the recorder (root) writes where other users can reach it: the files
a user names for output (record -o and the JSON beside it, the .old kept of
an earlier recording, convert -o, pack OUT) are never written through a
symbolic link another user planted (docs/tracebpf-record.md, FILES). The
attacker is uid 65534 (nobody): its links are made by root and handed to it
with lchown (the test's directory is root's). This machine has
fs.protected_symlinks=0: the kernel does not refuse those links for us."""
import os
import stat
import subprocess

import pytest

from conftest import ROOT, TRACEBPF, prog

NOBODY_UID = 65534
TRACE = ROOT / "tests" / "data" / "v2.1-mt_events.tbt"
VICTIM_TEXT = b"root's file: must stay as it is\n"
LINK_HINT = (f"refusing to follow a symbolic link owned by uid {NOBODY_UID}; "
             "remove it or choose another path")


def victim(tmp_path):
    """A root file, mode 0644, with known content: what a link points at."""
    v = tmp_path / "victim"
    v.write_bytes(VICTIM_TEXT)
    os.chmod(v, 0o644)
    return v


def check_victim(v):
    st = os.lstat(v)
    assert stat.S_ISREG(st.st_mode), f"{v} is no longer a regular file"
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, 0, 0o644), \
        f"{v}: expected owner 0:0 mode 0644, got {st.st_uid}:{st.st_gid} " \
        f"mode {oct(stat.S_IMODE(st.st_mode))}"
    got = v.read_bytes()
    assert got == VICTIM_TEXT, f"{v} was written: expected {VICTIM_TEXT!r}, got {got[:80]!r}"


def plant(link, target, uid=NOBODY_UID):
    """A symbolic link at `link` to `target`, owned by uid."""
    os.symlink(target, link)
    os.lchown(link, uid, uid)


def check_link(link, target):
    assert os.path.islink(link), f"{link} is no longer a symbolic link"
    assert os.readlink(link) == str(target), (os.readlink(link), str(target))


def record(*args, timeout=120, **kw):
    return subprocess.run([TRACEBPF, "record", "-q", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, **kw)


def check_refused(p, cmd, verb, link):
    assert p.returncode != 0, f"{cmd} succeeded through the link: {p.stderr}"
    msg = f"tracebpf: {cmd}: failed to {verb} '{link}': Too many levels of symbolic links"
    assert msg in p.stderr, f"expected {msg!r} in:\n{p.stderr}"
    assert LINK_HINT in p.stderr, f"expected {LINK_HINT!r} in:\n{p.stderr}"


@pytest.mark.parametrize("which", ["tbt", "json"])
def test_record_refuses_a_foreign_link(tmp_path, which):
    """record -o r.tbt where r.tbt (or the JSON beside it, r.json) is
    nobody's link to a root file: refused before anything is recorded, the
    file it points at untouched, the link left in place."""
    v = victim(tmp_path)
    link = tmp_path / f"r.{which}"
    plant(link, v)
    p = record("-o", tmp_path / "r.tbt", "--", prog("mt_events"), 1, 5)
    check_refused(p, "record", "create", link)
    check_victim(v)
    check_link(link, v)
    other = tmp_path / ("r.json" if which == "tbt" else "r.tbt")
    assert not other.exists(), f"{other} was written by a refused recording"


def test_record_refuses_a_foreign_link_to_a_directory(tmp_path):
    """record -o D where D is nobody's link to a directory: refused, nothing
    written in the directory it points at."""
    d = tmp_path / "rootdir"
    d.mkdir()
    link = tmp_path / "d"
    plant(link, d)
    p = record("-o", link, "--", prog("mt_events"), 1, 5)
    assert p.returncode != 0, p.stderr
    msg = f"tracebpf: record: failed to use output '{link}': Too many levels of symbolic links"
    assert msg in p.stderr and LINK_HINT in p.stderr, p.stderr
    assert os.listdir(d) == [], os.listdir(d)


@pytest.mark.parametrize("command", ["convert", "pack"])
def test_convert_and_pack_refuse_a_foreign_link(tmp_path, command):
    """convert -o L and pack IN L, L nobody's link to a root file: refused,
    the file untouched."""
    v = victim(tmp_path)
    link = tmp_path / ("out.json" if command == "convert" else "out.tbt")
    plant(link, v)
    args = [TRACE, "-o", link] if command == "convert" else [TRACE, link]
    p = subprocess.run([TRACEBPF, command, *map(str, args)], capture_output=True, text=True,
                       timeout=120)
    check_refused(p, command, "open" if command == "convert" else "create", link)
    check_victim(v)
    check_link(link, v)


def test_old_is_not_replaced_when_it_is_a_foreign_link(tmp_path):
    """An existing r.tbt is kept as r.tbt.old; nobody's link planted at
    r.tbt.old is neither written through nor replaced: the recording is
    refused, the first recording stays as r.tbt, the link and its target as
    they were."""
    tbt = tmp_path / "r.tbt"
    first = record("--no-json", "-o", tbt, "--", prog("mt_events"), 1, 5)
    assert first.returncode == 0, first.stderr
    before = tbt.read_bytes()
    v = victim(tmp_path)
    old = tmp_path / "r.tbt.old"
    plant(old, v)
    p = record("--no-json", "-o", tbt, "--", prog("mt_events"), 1, 5)
    assert p.returncode != 0, f"the second recording replaced the link: {p.stderr}"
    msg = f"tracebpf: record: failed to keep the existing '{tbt}' as '{old}': File exists"
    assert msg in p.stderr, p.stderr
    assert f"'{old}' is a symbolic link owned by uid {NOBODY_UID}" in p.stderr, p.stderr
    check_link(old, v)
    check_victim(v)
    assert tbt.read_bytes() == before, "the first recording was changed"


def test_old_replaces_an_earlier_old(tmp_path):
    """One generation, as before: a third recording replaces the r.tbt.old
    the second one kept (a regular root file), and says so."""
    tbt, old = tmp_path / "r.tbt", tmp_path / "r.tbt.old"
    prev = None
    for i in range(3):
        p = record("--no-json", "-o", tbt, "--", prog("mt_events"), 1, 5 + i)
        assert p.returncode == 0, p.stderr
        if i:
            assert f"kept the existing '{tbt}' as '{old}'" in p.stderr, p.stderr
            assert old.read_bytes() == prev, f"{old} is not recording {i}'s trace"
        prev = tbt.read_bytes()
    assert not old.is_symlink() and stat.S_IMODE(old.stat().st_mode) == 0o600


def test_root_links_are_followed(tmp_path):
    """A link root made is followed, as before: record -o L.tbt writes the
    trace where it points (the link stays), convert -o L2 writes through
    L2 (a link to an existing file)."""
    real = tmp_path / "real.tbt"
    link = tmp_path / "r.tbt"
    os.symlink(real, link)
    p = record("-o", link, "--", prog("mt_events"), 1, 5)
    assert p.returncode == 0, p.stderr
    check_link(link, real)
    assert real.read_bytes()[:8] == b"TRACEBPF", "the trace is not where the link points"
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    assert (tmp_path / "r.json").stat().st_size > 0
    jreal, jlink = tmp_path / "real.json", tmp_path / "c.json"
    jreal.write_text("")
    os.symlink(jreal, jlink)
    c = subprocess.run([TRACEBPF, "convert", str(TRACE), "-o", str(jlink)],
                       capture_output=True, text=True, timeout=120)
    assert c.returncode == 0, c.stderr
    check_link(jlink, jreal)
    assert jreal.read_text().startswith("{"), jreal.read_text()[:80]
