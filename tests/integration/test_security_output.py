"""What the recorder (root) writes where other users can reach it: the files
a user names for output (record -o and the JSON beside it, the .old kept of
an earlier recording, convert -o, pack OUT) are never written through a
symbolic link another user planted, and the --serve socket gives the trace
only to root and the recording's own user, and cannot hold the recorder's
exit (docs/tracebpf-record.md, FILES and --serve). The attacker is uid
65534 (nobody): its links are made by root and handed to it with lchown
(the test's directory is root's), its clients run under setpriv. This
machine has fs.protected_symlinks=0: the kernel does not refuse those
links for us."""
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import BUILD, ROOT, TRACEBPF, in_poll, prog, wait_for

NOBODY_UID = 65534
NOBODY = ["setpriv", f"--reuid={NOBODY_UID}", f"--regid={NOBODY_UID}", "--clear-groups"]
# nobody, but past the socket file's mode: only the recorder's peer check
# stands between it and the trace
NOBODY_DAC = [*NOBODY, "--inh-caps=+dac_override", "--ambient-caps=+dac_override"]
# a python other users may run (not one under root's home)
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
TRACE = ROOT / "tests" / "data" / "v2.1-mt_events.tbt"
VICTIM_TEXT = b"root's file: must stay as it is\n"
LINK_HINT = (f"refusing to follow a symbolic link owned by uid {NOBODY_UID}; "
             "remove it or choose another path")

# A client of the socket as some user: connects, reads until the end or
# 10 s of silence, prints "connected N MAGIC" or "error ERRNO-NAME".
CLIENT = r"""
import errno, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("error", errno.errorcode[e.errno]); sys.exit(0)
s.settimeout(10)
data = b""
while len(data) < 1 << 16:
    try:
        b = s.recv(1 << 16)
    except socket.timeout:
        break
    if not b:
        break
    data += b
print("connected", len(data), data[:8].decode("latin-1") or "-")
"""


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


def test_pack_writes_into_no_file_of_another_user(tmp_path):
    """pack IN OUT where OUT is an existing regular file of nobody's: pack
    wrote the trace into it in place (O_WRONLY, no O_EXCL), for nobody to
    read. Refused now, with whose it is, and the file left as it was."""
    out = tmp_path / "out.tbt"
    out.write_bytes(b"nobody's own\n")
    os.chown(out, NOBODY_UID, NOBODY_UID)
    os.chmod(out, 0o644)
    p = subprocess.run([TRACEBPF, "pack", str(TRACE), str(out)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode != 0, p.stderr
    assert f"tracebpf: pack: failed to create '{out}': Operation not permitted" in p.stderr, \
        p.stderr
    assert f"refusing to write into a file owned by uid {NOBODY_UID}" in p.stderr, p.stderr
    assert out.read_bytes() == b"nobody's own\n"


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


def client(sock, wrap=()):
    """Runs CLIENT as whoever `wrap` makes it: its one line, split."""
    p = subprocess.run([*wrap, PYTHON, "-c", CLIENT, str(sock)], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout.split()


def serving(tmp_path, env=None, sock_dir=None, **kw):
    """A recorder serving a running program on s.sock (in tmp_path, or in
    sock_dir), started with umask 0."""
    tbt, sock = tmp_path / "s.tbt", (sock_dir or tmp_path) / "s.sock"
    rec = subprocess.Popen([TRACEBPF, "record", "-q", "--no-json", "-o", str(tbt),
                            "--serve", str(sock), "--", prog("seq_until_killed"),
                            str(tmp_path / "count")], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, preexec_fn=lambda: os.umask(0),
                           start_new_session=True, env=env and {**os.environ, **env}, **kw)
    try:
        # in its loop: clients are served, SIGINT ends the recording
        wait_for(lambda: in_poll(rec.pid) or rec.poll() is not None,
                 what="the recorder's loop")
        assert rec.poll() is None, rec.communicate(timeout=60)[1]
    except BaseException:
        if rec.poll() is None:
            kill(rec)
        raise
    return rec, sock


def kill(rec):
    """The recorder and its command, whatever is left of them."""
    try:
        os.killpg(rec.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    rec.wait()


def stop(rec):
    rec.send_signal(signal.SIGINT)
    try:
        _, err = rec.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        kill(rec)
        raise
    assert rec.returncode == 0, err
    return err


def socket_owner_mode(sock):
    st = os.lstat(sock)
    return st.st_uid, stat.S_IMODE(st.st_mode)


def test_serve_is_private_whatever_the_umask(tmp_path):
    """Under umask 000 the socket is 0600 (it was 0777), nobody gets no trace
    byte, neither through the socket's mode nor past it (its peer check
    refuses it, and says so once), and root gets the stream."""
    rec, sock = serving(tmp_path)
    try:
        assert socket_owner_mode(sock) == (0, 0o600), \
            f"socket owner, mode: {socket_owner_mode(sock)[0]}, {oct(socket_owner_mode(sock)[1])}"
        assert client(sock, NOBODY) == ["error", "EACCES"]
        for _ in range(2):
            assert client(sock, NOBODY_DAC) == ["connected", "0", "-"], \
                "nobody got trace bytes past the socket's mode"
        got = client(sock)
        assert got[0] == "connected" and int(got[1]) > 0 and got[2] == "TRACEBPF", got
    finally:
        err = stop(rec)
    refusals = [ln for ln in err.splitlines() if "refused" in ln]
    assert refusals == [f"tracebpf: record: serve: refused a client of uid {NOBODY_UID}: only "
                        "root may read this recording (further refusals are counted)",
                        "tracebpf: record: serve: refused 2 clients of other users in all"], err


def test_serve_gives_the_recording_user_the_stream(tmp_path):
    """Under sudo (SUDO_UID) the socket is that user's, 0600, and that user
    gets the stream; another (uid 1, past the mode) gets nothing."""
    # a directory that uid 65534 can reach (pytest's tmp_path is 0700)
    sock_dir = tempfile.mkdtemp(prefix="tracebpf-serve-")
    os.chmod(sock_dir, 0o711)
    try:
        rec, sock = serving(tmp_path, env={"SUDO_UID": str(NOBODY_UID)},
                            sock_dir=Path(sock_dir))
    except BaseException:
        shutil.rmtree(sock_dir)
        raise
    try:
        assert socket_owner_mode(sock) == (NOBODY_UID, 0o600), socket_owner_mode(sock)
        got = client(sock, NOBODY)
        assert got[0] == "connected" and int(got[1]) > 0 and got[2] == "TRACEBPF", got
        daemon = ["setpriv", "--reuid=1", "--regid=1", "--clear-groups",
                  "--inh-caps=+dac_override", "--ambient-caps=+dac_override"]
        assert client(sock, daemon) == ["connected", "0", "-"]
    finally:
        err = stop(rec)
        shutil.rmtree(sock_dir)
    assert "refused a client of uid 1: only root and uid 65534 may read" in err, err


def trickle(sock, got, stop_reading):
    """A client that keeps taking a little, slower than the trace comes."""
    while not stop_reading.is_set():
        try:
            b = sock.recv(32 << 10)
        except OSError:
            return
        if not b:
            return
        got[0] += len(b)
        time.sleep(0.5)


def test_serve_slow_clients_do_not_hold_the_exit(tmp_path):
    """Two clients that take the stream slower than it comes: one never
    reads, one reads 32 KiB every half second (it used to keep the
    recorder waiting for as long as it kept taking bytes: minutes for
    this trace). After SIGINT the recorder exits while both are still
    connected, and says how many bytes each had not read."""
    tbt, sock = tmp_path / "s.tbt", tmp_path / "s.sock"
    rec = subprocess.Popen([TRACEBPF, "record", "-q", "--no-json", "-z", "0", "-o", str(tbt),
                            "--serve", str(sock), "--serve-max-lag", "1G", "--",
                            str(BUILD / "bench" / "rate"), "200000", "100000"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    try:
        wait_for(lambda: in_poll(rec.pid) or rec.poll() is not None,
                 what="the recorder's loop")
        assert rec.poll() is None, rec.communicate()[1]
        idle = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        idle.connect(str(sock))
        slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        slow.connect(str(sock))
        got, stop_reading = [0], threading.Event()
        reader = threading.Thread(target=trickle, args=(slow, got, stop_reading), daemon=True)
        reader.start()
        # far more than the trickle takes in a minute
        wait_for(lambda: tbt.stat().st_size > 16 << 20, timeout=180,
                 what="16 MiB of trace")
        rec.send_signal(signal.SIGINT)
        try:
            _, err = rec.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the recorder still waits for slow clients 60 s after SIGINT "
                        f"(the reader took {got[0]} bytes)")
    finally:
        if rec.poll() is None:
            kill(rec)
    stop_reading.set()
    assert rec.returncode == 0, err
    cut = [ln for ln in err.splitlines() if "serve:" in ln]
    assert len(cut) == 2 and all(" bytes it had not read" in ln for ln in cut), err
    size = tbt.stat().st_size
    for ln in cut:
        n = int(ln.split(" bytes it had not read")[0].rsplit(" ", 1)[1])
        assert 0 < n < size, (n, size, ln)
    idle.close()
    slow.close()


def test_serve_removes_only_its_own_socket(tmp_path):
    """The recorder removes its socket at the end by name: in a directory
    others write to, what is at that name by then may be someone else's.
    It removes the name only while it is still the socket it bound."""
    rec, sock = serving(tmp_path)
    try:
        os.rename(sock, tmp_path / "moved.sock")
        sock.write_bytes(b"another's file\n")
    except BaseException:
        kill(rec)
        raise
    stop(rec)
    assert sock.read_bytes() == b"another's file\n", "the recorder removed another's file"
    (tmp_path / "again").mkdir()
    rec2, sock2 = serving(tmp_path, sock_dir=tmp_path / "again")
    stop(rec2)
    assert not sock2.exists(), "the recorder left its own socket behind"
