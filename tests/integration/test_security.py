"""A traced process is untrusted (docs/security.md): run as `nobody`
against a root recorder, it must not get root to act on the host through
what the fast path shares with it (its directory in bpffs, its switch, its
ring), nor take the fast path from other processes, nor grow the
recorder without bound. Each test makes one attack and asserts that the
host is untouched and the recording goes on.

Every recording here runs in a mount namespace of its own with a fresh
bpffs on /sys/fs/bpf (`isolated`): its fast-path directories are its own,
so another recording on the machine neither sees it nor turns its fast
path off, and the tests run side by side with the others."""
import os
import re
import shutil
import stat
import subprocess
import tempfile
from collections import Counter

import pytest

from conftest import TRACEBPF, prog

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
ROOT_DIR = "/sys/fs/bpf/tracebpf"
# a fresh bpffs of the recording's own (as a fresh machine has: 1777, as
# this project's machines mount it), then the recorder
FRESH = 'mount -t bpf bpf /sys/fs/bpf && chmod 1777 /sys/fs/bpf && exec "$0" "$@"'


def isolated(setup=""):
    """recorder(wrap=...) for a mount namespace with a fresh bpffs; `setup`
    runs there, as root, before the recorder starts."""
    script = FRESH if not setup else FRESH.replace("&& exec", f"&& {setup} && exec")
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", script]


@pytest.fixture
def scratch():
    """A directory everyone may write in (pytest's tmp_path is root's,
    0700), with a victim: a file of root's, 0644, that no test may see
    changed."""
    d = tempfile.mkdtemp(prefix="tb-sec-")
    os.chmod(d, 0o777)
    victim = os.path.join(d, "victim")
    with open(victim, "w") as f:
        f.write("root's own\n")
    os.chmod(victim, 0o644)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def untouched(path):
    st = os.lstat(path)
    with open(path) as f:
        content = f.read()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode), stat.S_ISREG(st.st_mode),
            content) == (0, 0, 0o644, True, "root's own\n"), (st, content)


def script(d, name, text):
    """An executable shell script d/name."""
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + text)
    os.chmod(path, 0o755)
    return path


# a traced program with probes first (a recording of programs with none
# fails), then waits for the process's fast-path directory to hold its
# switch
WAIT_DIR = prog("fast_seq") + """ run 1 10 >/dev/null
d=/sys/fs/bpf/tracebpf/$$
i=0
while [ ! -e $d/ctl ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done
[ -e $d/ctl ] || { echo "no directory"; exit 1; }
"""


@pytest.mark.parametrize("pin", ["ctl", "f0"], ids=["switch", "spare"])
def test_a_symlinked_pin_before_a_setgid_exec(recorder, scratch, pin):
    """The process replaces a pin of its directory (its switch, or a spare
    made ahead of its threads) with a link to a file of root's, then execs
    a setgid program: the recorder gives the process's pins to its new
    group. It used to chown them by path, through the link: the file
    became nobody:shadow."""
    victim = os.path.join(scratch, "victim")
    attack = script(scratch, "attack.sh", WAIT_DIR + f"""
rm -f $d/{pin} 2>/dev/null && echo "rm done" || echo "rm refused"
ln -s {victim} $d/{pin} 2>/dev/null && echo "ln done" || echo "ln refused"
exec chage -l nobody
""")
    rec = recorder("--no-sched", "--", *NOBODY, attack, wrap=isolated()).wait(timeout=120)
    assert rec.rc == 0, rec.stderr[-2000:]
    assert "rm refused" in rec.stdout and "ln refused" in rec.stdout, rec.stdout
    assert "Maximum number of days" in rec.stdout, rec.stdout   # chage ran
    untouched(victim)


def test_a_process_directory_takes_no_tree_and_no_link(recorder, scratch):
    """The process tries to fill its directory with a link to a directory
    of root's and a tree 3,000 deep, for the recorder to walk when the
    process ends: the walk used to follow what the link led to, and a
    tree that deep overflowed its stack (SIGSEGV). The directory is root's
    now: nothing goes in, and the recorder removes it."""
    keep = os.path.join(scratch, "keep")
    os.mkdir(keep)
    shutil.copy(os.path.join(scratch, "victim"), os.path.join(keep, "victim"))
    os.chmod(os.path.join(keep, "victim"), 0o644)
    attack = script(scratch, "attack.sh", WAIT_DIR + f"""
echo "pid $$"
ln -s {keep} $d/sub 2>/dev/null && echo "ln done" || echo "ln refused"
exec python3 -c '
import os, sys
d = sys.argv[1]
try:
    os.chdir(d)
    for i in range(3000):
        os.mkdir("a")
        os.chdir("a")
    print("tree made")
except OSError as e:
    print("tree refused", e.errno)
' $d
""")
    rec = recorder("--no-sched", "--", *NOBODY, attack, wrap=isolated()).wait(timeout=120)
    assert rec.rc == 0, rec.stderr[-2000:]
    assert "ln refused" in rec.stdout and "tree refused 13" in rec.stdout, rec.stdout
    untouched(os.path.join(keep, "victim"))


def test_fast_path_directories_are_roots(recorder, scratch):
    """What a traced process of another user is given: its directory is
    root's, 0711 (it can open its pins by name, and list, add or remove
    nothing), its switch and spares are its own, 0600."""
    look = script(scratch, "look.sh", WAIT_DIR + """
stat -c 'dir %u %a' $d/
stat -c 'pin %n %u %a' $d/ctl $d/f0
ls $d >/dev/null 2>&1 && echo "listed" || echo "not listed"
touch $d/x 2>/dev/null && echo "made" || echo "not made"
""")
    rec = recorder("--no-sched", "--", *NOBODY, look, wrap=isolated()).wait(timeout=120)
    assert rec.rc == 0, rec.stderr[-2000:]
    assert "dir 0 711" in rec.stdout, rec.stdout
    pins = re.findall(r"pin \S+/(\w+) (\d+) (\d+)", rec.stdout)
    assert pins == [("ctl", "65534", "600"), ("f0", "65534", "600")], rec.stdout
    assert "not listed" in rec.stdout and "not made" in rec.stdout, rec.stdout


def seq_of(dump, name):
    """(seq, fast, pid, tid) of the instants `name` in a dump, in the order
    of (ts, seq): fast when it came through the fast path."""
    out = []
    for line in dump.splitlines():
        m = re.match(rf"(\d+\.\d+) \[ *\d+\] (\d+)/(\d+) I \w+:{name} .*?\bseq=(\d+)", line)
        if m:
            out.append((float(m[1]), int(m[4]), line.endswith(" [fast]"), int(m[2]), int(m[3])))
    return [e[1:] for e in sorted(out)]


def dump_of(rec):
    p = subprocess.run([TRACEBPF, "dump", str(rec.tbt)], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def beside_a_victim(scratch, mode, n):
    """A shell that runs fast_seq (root's, on the fast path, one thread
    numbering "seq" until killed) and, while it runs, fast_evil MODE N as
    nobody; then fast_seq a while more."""
    count = os.path.join(scratch, "count")
    open(count, "w").close()
    return script(scratch, "both.sh", f"""
{prog("fast_seq")} kill 1 5 {count} &
victim=$!
{" ".join(NOBODY)} {prog("fast_evil")} {mode} {n}
sleep 0.5
kill $victim
wait
""")


def test_a_forged_spare_count_is_not_trusted(recorder, scratch):
    """fast_evil made: its switch says 2^32 - 4096 spares made and claimed,
    every claim slot filled by its thread. The recorder bounded its walk
    of the claims by the process's `made`: it spun for ever, and gave the
    process rings it never made (another process's, whose events then
    carried the attacker's thread). It counts its own spares now."""
    n = 2000
    both = beside_a_victim(scratch, "made", n)
    rec = recorder("--no-sched", "--no-json", "--", both, wrap=isolated()).wait(timeout=120)
    assert rec.rc == 0, rec.stderr[-2000:]
    assert "fast=1 mode=made" in rec.stdout and "thread 0 fast=1" in rec.stdout, rec.stdout
    dump = dump_of(rec)
    after = seq_of(dump, "after")
    assert [s for s, _, _, _ in after] == list(range(n)), f"{len(after)} of {n}"
    evil = {(p, t) for _, _, p, t in after}
    assert len(evil) == 1, evil
    theirs = [(s, f, t) for s, f, p, t in seq_of(dump, "seq") if (p, t) not in evil]
    tids = Counter(t for _, _, t in theirs)
    assert len(tids) == 1 and not {t for _, t in evil} & set(tids), \
        f"fast_seq's events credited to other threads: {tids}, the attacker: {evil}"
    assert [s for s, _, _ in theirs] == list(range(len(theirs))) and len(theirs) > 100, \
        len(theirs)
    # beside the attacker, fast_seq keeps its fast path. While the recorder
    # makes the attacker's spares (up to its share: each claimed at once,
    # as the forged claims say) its rounds are longer, and on a loaded
    # machine fast_seq's ring can fill past --fast-wait and put events on
    # its probes for a while (4,407 of 25,125 in one fresh-clone make
    # test, all in its first half); every one is still recorded, and by
    # its last quarter it is back on its fast path
    last = theirs[3 * len(theirs) // 4:]
    slow = [s for s, f, _ in last if not f]
    assert len(slow) < len(last) // 20, \
        f"fast_seq lost its fast path: {len(slow)} of its last {len(last)} events took " \
        f"the probes (first {slow[:5]})"


def test_an_unaligned_producer_position_costs_its_process_alone(recorder, scratch):
    """fast_evil unaligned moves its ring's producer position 4 bytes past
    what it wrote: the kernel refuses to drain the ring. The recorder sent
    every thread of every process to its probes; now the attacker alone
    goes (said), and fast_seq beside it keeps the fast path to its end."""
    n = 2000
    both = beside_a_victim(scratch, "unaligned", n)
    rec = recorder("--no-sched", "--no-json", "--", both, wrap=isolated()).wait(timeout=120)
    assert rec.rc == 0, rec.stderr[-2000:]
    assert "fast=1 mode=unaligned" in rec.stdout and "thread 0 fast=1" in rec.stdout, \
        rec.stdout
    assert re.search(r"left its fast-path ring in a state the kernel refuses to drain .* the "
                     r"process takes its probes from now on", rec.stderr), rec.stderr[-2000:]
    assert "failed to drain the fast-path rings" not in rec.stderr, rec.stderr[-2000:]
    dump = dump_of(rec)
    evil_pid = {p for _, _, p, _ in seq_of(dump, "after")}
    assert len(evil_pid) == 1, evil_pid
    after = seq_of(dump, "after")
    assert [s for s, _, _, _ in after] == list(range(n)) and not any(f for _, f, _, _ in after)
    theirs = [(s, f) for s, f, p, _ in seq_of(dump, "seq") if p not in evil_pid]
    assert [s for s, _ in theirs] == list(range(len(theirs))) and len(theirs) > 100
    # fast_seq ran on for 0.5 s after fast_evil ended: sent to its probes
    # with the attacker, every event of that last part took them. A thread
    # the drain keeps waiting past --fast-wait on a loaded machine may put
    # an event or two on its probes, and that is all
    last = theirs[len(theirs) // 2:]
    slow = [s for s, f in last if not f]
    assert len(slow) < len(last) // 20, \
        f"{len(slow)} of fast_seq's last {len(last)} events took the probes (first {slow[:5]})"


def test_a_flood_of_ring_requests_is_limited_and_counted(recorder):
    """fast_evil requests asks 2,000,000 times for a ring and as many
    times for a drain: each was a record and the recorder's work, and
    each "drain now" a wakeup. The kernel side passes at most 256 a
    millisecond per process; the rest are counted and said."""
    n = 1000
    rec = recorder("--no-sched", "--no-json", "--", *NOBODY, prog("fast_evil"), "requests", n,
                   wrap=isolated()).wait(timeout=180)
    assert rec.rc == 0, rec.stderr[-2000:]
    assert "fast=1 mode=requests" in rec.stdout, rec.stdout
    m = re.search(r"WARNING: (\d+) fast-path ring requests of traced processes were left out",
                  rec.stderr)
    assert m and int(m[1]) > 4000000 // 2, rec.stderr[-2000:]
    dump = dump_of(rec)
    for name in ("seq", "after"):
        assert [s for s, _, _, _ in seq_of(dump, name)] == list(range(n)), name


def test_threads_that_ask_again_and_again_get_one_spare_each(recorder):
    """40 threads start at once (bench/burst) with fixed 8 MiB rings: each
    asks for a ring again and again until the recorder has made one, and
    each request counted as one more thread: every round made a spare for
    each, up to the process's share (at least 64 rings; with
    --fast-buffer-size 512M, 32 GiB: `make bench`'s two threads into
    512 MiB rings filled this host's memory). Now a round makes one spare
    for each thread that waits or asks, at most: each thread's ring, and
    at the end no more spares than SPARES_AHEAD (4) and one a thread.
    At fe5a304 this run made 111 and 116 rings."""
    from conftest import BUILD
    threads = 40
    rec = recorder("-v", "--no-sched", "--no-json", "--fast-buffer-size", "8M",
                   "--fast-buffer-max", "8M", "--", str(BUILD / "bench" / "burst"), threads,
                   wrap=isolated()).wait(timeout=180)
    assert rec.rc == 0, rec.stderr[-2000:]
    made = re.search(r"(\d+) rings made, 0 of them grown", rec.stderr)
    # the main thread's and each thread's, then the spares of one round
    assert made and int(made[1]) <= 2 * (threads + 1) + 4, rec.stderr[-2000:]


def test_a_flood_of_site_ids_is_bounded_and_counted(recorder):
    """fast_evil sites writes 100,000 descriptors of made-up sites (any
    64-bit value names a site): the recorder kept each one for a restart,
    without bound. It keeps 65,536 per process and counts the rest."""
    n = 1000
    rec = recorder("--no-sched", "--no-json", "--", *NOBODY, prog("fast_evil"), "sites", n,
                   wrap=isolated()).wait(timeout=180)
    assert rec.rc == 0, rec.stderr[-2000:]
    assert "fast=1 mode=sites" in rec.stdout, rec.stdout
    # every one written (fast_evil waits for room in a ring kept full)
    assert "sites=100000" in rec.stdout, rec.stdout
    m = re.search(r"WARNING: (\d+) site or name records were not kept for a restart "
                  r"\(over 65536 per process\)", rec.stderr)
    # the made-up sites and fast_evil's own few, past 65,536
    assert m and 100000 - 65536 <= int(m[1]) <= 100000 - 65536 + 10, rec.stderr[-2000:]
    dump = dump_of(rec)
    for name in ("seq", "after"):
        assert [s for s, _, _, _ in seq_of(dump, name)] == list(range(n)), name


def test_a_process_holds_no_more_than_its_share_of_the_rings(recorder, scratch):
    """fast_evil hoard says, every millisecond for 1.5 s, that every spare
    made for it is claimed (by nobody): the recorder makes more, and made
    them until --max-fast-rings were all its, so that fast_seq, started
    meanwhile, found none ("all 128 fast-path rings are in use"). A
    process holds at most its share now (said), and fast_seq's two
    threads each get a ring."""
    both = script(scratch, "hoard.sh", f"""
{" ".join(NOBODY)} {prog("fast_evil")} hoard 100 &
sleep 0.5
{prog("fast_seq")} run 2 1000
wait
""")
    rec = recorder("--no-sched", "--no-json", "--max-fast-rings", 128, "--", both,
                   wrap=isolated()).wait(timeout=120)
    assert rec.rc == 0, rec.stderr[-2000:]
    assert "fast=1 mode=hoard" in rec.stdout, rec.stdout
    assert re.search(r"thread 0 fast=1.*\n.*thread 1 fast=1|thread 1 fast=1.*\n.*thread 0 fast=1",
                     rec.stdout), rec.stdout
    assert re.search(r"process \d+ holds its share of the fast-path rings \(64 of 128", rec.stderr), \
        rec.stderr[-2000:]
    assert "all 128 fast-path rings are in use" not in rec.stderr, rec.stderr[-2000:]
    m = re.search(r"WARNING: (\d+) fast-path rings were not made for processes that held "
                  r"their share", rec.stderr)
    assert m and int(m[1]) > 0, rec.stderr[-2000:]


@pytest.mark.parametrize("plant", ["mkdir", "ln -s /tmp"], ids=["directory", "link"])
def test_a_tracebpf_directory_not_roots_is_refused(recorder, plant):
    """/sys/fs/bpf is 1777: another user can make /sys/fs/bpf/tracebpf
    (a directory of theirs, or a link) before any recorder does, and the
    recorder then made its sessions there (and chmod'ed through the
    link). It refuses it, with why and what to do, and records nothing."""
    setup = " ".join(NOBODY) + f" {plant} {ROOT_DIR}"
    rec = recorder("--no-sched", "--", prog("fast_seq"), "run", 1, 10,
                   wrap=isolated(setup)).wait(timeout=120)
    assert rec.rc != 0, rec.stderr[-2000:]
    want = "it is owned by uid 65534, not by root" if plant == "mkdir" else \
        "it is a symbolic link, not a directory"
    assert f"tracebpf: record: refusing {ROOT_DIR}: {want}" in rec.stderr, rec.stderr[-2000:]
    assert "remove it, as root" in rec.stderr, rec.stderr[-2000:]


def test_a_killed_sessions_leftovers_are_swept(recorder):
    """A recorder killed (and its releaser with it) leaves its session's
    directory and its processes' links behind: the next recording sweeps
    both. The sweep listed the root directory through a dup of one
    descriptor, whose offset the first listing had left at the end: the
    dead links were never seen."""
    setup = (f"mkdir -m 0711 {ROOT_DIR} && mkdir -m 0711 {ROOT_DIR}/s999999 && "
             f"mkdir -m 0711 {ROOT_DIR}/s999999/4242 && ln -s s999999/4242 {ROOT_DIR}/4242 && "
             f"ln -s s999998/4243 {ROOT_DIR}/4243")
    rec = recorder("--no-sched", "--", "sh", "-c",
                   f"ls -a {ROOT_DIR}; exec {prog('fast_seq')} run 1 10",
                   wrap=isolated(setup)).wait(timeout=120)
    assert rec.rc == 0, rec.stderr[-2000:]
    listed = set(rec.stdout.split())
    assert not {"s999999", "4242", "4243"} & listed, rec.stdout


def test_bpffs_mounted_by_the_recorder_is_not_world_writable(recorder):
    """Where no bpffs is mounted, the recorder mounts one: mode 0711
    (others reach the pins given to them, and make nothing there; bpffs
    adds the sticky bit itself). Every bpffs mounted there is unmounted
    first: one may be stacked on another."""
    wrap = ["unshare", "-m", "--propagation", "private", "sh", "-c",
            'while umount /sys/fs/bpf 2>/dev/null; do :; done; exec "$0" "$@"']
    rec = recorder("--no-sched", "--", "sh", "-c",
                   f"stat -c mode=%a /sys/fs/bpf; exec {prog('fast_seq')} run 1 10",
                   wrap=wrap).wait(timeout=120)
    assert rec.rc == 0, rec.stderr[-2000:]
    assert "mounted the BPF filesystem on /sys/fs/bpf, mode 0711" in rec.stderr, rec.stderr
    mode = re.search(r"mode=(\d+)", rec.stdout)
    assert mode and int(mode[1], 8) & 0o7777 in (0o711, 0o1711), rec.stdout   # bpffs: sticky
