"""Bad input: a clear message, a non-zero exit, no crash, nothing left behind."""
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections import Counter

import pytest

from conftest import BUILD, ROOT, TRACEBPF, fd_infos, kill_group, load, possible_cpus, prog


def run(*args, user=None, wrap=(), timeout=60, env=None):
    """tracebpf ARGS, as USER (no capabilities) or under wrap=[PROGRAM, ARG...]
    (which execs it)."""
    cmd = [*map(str, wrap), TRACEBPF, *map(str, args)]
    if user:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups",
               "--inh-caps=-all", "--bounding-set=-all", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=env and dict(os.environ, **env))


def leaked_tracebpf_progs():
    """tracebpf programs still loaded but held by no running recorder: pinned,
    or kept alive by a leftover child that inherited the fds. (A recorder
    running concurrently, e.g. another test session, holds its own.)"""
    p = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    leaked = []
    fd_holders = None
    for x in json.loads(p.stdout or "[]"):
        if not str(x.get("name", "")).startswith("tb_"):
            continue
        holders = [h.get("comm") for h in x.get("pids", [])]
        if not holders:
            # this bpftool may not list holders: read /proc/*/fdinfo
            if fd_holders is None:
                fd_holders = prog_fd_holders()
            holders = fd_holders.get(x["id"], [])
        if not holders or any(c != "tracebpf" for c in holders):
            leaked.append(x)
    return leaked


def persistently_leaked(settle=3.0):
    """Leaked programs that stay leaked: a concurrent recorder (another test
    session) can exit between the listing and the holder scan."""
    import time
    end = time.monotonic() + settle
    leaked = leaked_tracebpf_progs()
    while leaked and time.monotonic() < end:
        time.sleep(0.2)
        again = {x["id"] for x in leaked_tracebpf_progs()}
        leaked = [x for x in leaked if x["id"] in again]
    return leaked


def prog_fd_holders():
    """prog id -> comms of the processes holding an fd of it (or of a link
    to it), from /proc/*/fdinfo ("prog_id:" lines)."""
    holders = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        for info in fd_infos(pid):
            if info.get("prog_id", "").isdigit():
                holders.setdefault(int(info["prog_id"]), []).append(comm)
    return holders


def check_failed(p, *needles):
    assert p.returncode != 0, f"expected failure, got 0: {p.stderr}"
    assert p.returncode < 128, f"crashed with signal {p.returncode - 128}: {p.stderr}"
    for n in needles:
        assert n in p.stderr, f"{n!r} not in stderr: {p.stderr!r}"
    assert "tracebpf" in p.stderr
    assert persistently_leaked() == [], "a BPF program stayed loaded after the error"


def test_not_root(tmp_path):
    os.chmod(tmp_path, 0o777)
    p = run("record", "-o", tmp_path / "x.json", "--", prog("mt_events"), 1, 1, user=65534)
    check_failed(p, "Operation not permitted", "run as root")


def test_bpf_refused_with_capabilities(tmp_path):
    """Root, but the kernel refuses to load programs (a seccomp filter fails
    BPF_PROG_LOAD, bpf command 5, as a container's can): the hint says what
    else blocks BPF instead of telling root to run as root."""
    p = run("record", "-o", tmp_path / "x.json", "--", prog("pingpong"), 1,
            wrap=[prog("deny_bpf_cmd"), 5])
    check_failed(p, "failed to load BPF programs: Operation not permitted",
                 "tracebpf has the capabilities it needs", "seccomp filter")
    assert "run as root" not in p.stderr, p.stderr


def test_disk_full(tmp_path):
    """The file system fills up while recording: the recorder says so, with
    a hint, exits 1 and leaves nothing loaded; what reached the file is a
    readable prefix of the recording."""
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(small)], check=True)
    try:
        # RATE_EXACT: 3 M events however long they take, so that the file
        # system fills. Paced by time, a loaded run whose events took the
        # probes (another test's recording running: no fast path) emitted
        # 37,147 in 3 s, and the 256 KiB were not reached.
        p = run("record", "-o", small / "x.json", "--", str(BUILD / "bench" / "rate"), "1e6", 3,
                env={"RATE_EXACT": "1"}, timeout=120)
        check_failed(p, f"failed to write '{small / 'x.tbt'}': No space left on device",
                     "hint: free space on that file system")
        c = run("convert", small / "x.tbt", "-o", tmp_path / "prefix.json")
        assert c.returncode == 0, c.stderr
        t = load(tmp_path / "prefix.json", consumer=False)
        assert t.named("rate", "I"), "no event of the prefix converted"
        # and packing that prefix onto the full file system fails the same way
        k = run("pack", small / "x.tbt", small / "packed.tbt")
        check_failed(k, f"'{small / 'packed.tbt'}': No space left on device",
                     "hint: free space on that file system")
    finally:
        subprocess.run(["umount", "-l", str(small)])


@pytest.mark.parametrize("command", ["dump", "info", "version", "convert"])
def test_stdout_full(command):
    """A command whose output cannot be written (stdout on /dev/full) says so
    and exits 1: a full disk never passes for a complete dump."""
    from conftest import ROOT
    args = [] if command == "version" else [str(ROOT / "tests" / "data" / "v2.1-mt_events.tbt")]
    if command == "convert":
        args += ["-o", "-"]
    with open("/dev/full", "w") as full:
        p = subprocess.run([TRACEBPF, command, *args], stdout=full, stderr=subprocess.PIPE,
                           text=True, timeout=60)
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert p.stderr.count(f"tracebpf: {command}: failed to write '<stdout>'") == 1, p.stderr
    assert "hint: " in p.stderr, p.stderr


def test_output_in_use(tmp_path):
    """A second writer of a trace file that a recorder is writing (another
    `record -o` with the same name, or `pack` onto it) is refused before it
    touches the file: the first recording stays whole."""
    out = tmp_path / "busy.json"
    first = subprocess.Popen([TRACEBPF, "record", "-q", "-o", str(out), "--", prog("quiet_thread")],
                             start_new_session=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert first.stdout.readline().strip() == "ready"
        p = run("record", "-o", out, "--", prog("pingpong"), 10)
        check_failed(p, f"failed to create '{tmp_path / 'busy.tbt'}': Device or resource busy",
                     "another tracebpf process is writing that file")
        k = run("pack", ROOT / "tests" / "data" / "v2.1-mt_events.tbt", tmp_path / "busy.tbt")
        assert k.returncode == 1, k.stderr
        assert "Device or resource busy" in k.stderr and "hint: another tracebpf process is writing that file" \
            in k.stderr, k.stderr
    finally:
        first.send_signal(signal.SIGINT)
        first.wait(timeout=60)
        # the command ends with the recording (SIGTERM); the group, in case
        kill_group(first)
        _, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    t = load(out, consumer=False)
    assert len(t.named("main_ready", "I")) == 1, "the first recording lost its events"


@pytest.mark.parametrize("command", ["convert", "pack"])
@pytest.mark.parametrize("how", ["same path", "symlink"])
def test_output_is_the_input(tmp_path, command, how):
    """Writing the output over the trace being read would destroy it: refused,
    the trace untouched."""
    src = tmp_path / "t.tbt"
    shutil.copy(ROOT / "tests" / "data" / "v2.1-mt_events.tbt", src)
    before = src.read_bytes()
    out = src
    if how == "symlink":
        out = tmp_path / "link.tbt"
        out.symlink_to(src)
    args = [src, "-o", out] if command == "convert" else [src, out]
    p = run(command, *args)
    assert p.returncode == 1, p.stderr
    assert f"tracebpf: {command}: failed to write '{out}': it is the trace being read" in p.stderr
    assert f"tracebpf: {command}: hint: write to another file" in p.stderr
    assert src.read_bytes() == before, "the input trace was changed"


def test_no_ptrace_access(tmp_path):
    """-p of another user's process without CAP_SYS_PTRACE: its files cannot
    be opened through /proc/PID/root, which used to pass for "no tracebpf
    probes in its executable". Now: what failed, and what gives access."""
    target = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               prog("quiet_thread")], stdout=subprocess.PIPE, text=True)
    try:
        assert target.stdout.readline().strip() == "ready"
        p = subprocess.run(["setpriv", "--bounding-set=-sys_ptrace", "--inh-caps=-sys_ptrace",
                            TRACEBPF, "record", "-p", str(target.pid), "-o",
                            str(tmp_path / "x.json")], capture_output=True, text=True, timeout=60)
    finally:
        target.kill()
        target.wait()
    check_failed(p, f"failed to read the mappings of process {target.pid}: Permission denied",
                 "need ptrace access to that process", "CAP_SYS_PTRACE")
    assert "no tracebpf probes" not in p.stderr, p.stderr


def test_no_btf(tmp_path):
    p = run("record", "--btf", "/nonexistent/vmlinux", "-o", tmp_path / "x.json", "--",
            prog("mt_events"), 1, 1)
    check_failed(p, "BTF", "/nonexistent/vmlinux", "CONFIG_DEBUG_INFO_BTF")


def test_pid_not_found(tmp_path):
    # a pid that existed and is gone: reaped child
    c = subprocess.Popen(["true"])
    c.wait()
    p = run("record", "-p", c.pid, "-o", tmp_path / "x.json")
    check_failed(p, f"failed to find process {c.pid}", "No such process")


def test_invalid_pid_argument(tmp_path):
    p = run("record", "-p", "abc", "-o", tmp_path / "x.json")
    check_failed(p, "invalid pid 'abc'")


def test_command_without_probes(tmp_path):
    # A warning at the start: the command may exec an instrumented program
    # (tracebpf record -- sh -c ./app, recorded in test_processes.py). When it
    # never does, nothing could be recorded: a clear error, non-zero exit.
    p = run("record", "-o", tmp_path / "x.json", "--", prog("noprobes"))
    assert "warning: " in p.stderr and "has no tracebpf probes" in p.stderr, p.stderr
    check_failed(p, "neither had anything it executed or loaded", "include <tracebpf/trace.h>")


def test_pid_without_probes(tmp_path):
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        p = run("record", "-p", sleeper.pid, "-o", tmp_path / "x.json")
        check_failed(p, f"process {sleeper.pid} has no tracebpf probes")
    finally:
        sleeper.kill()
        sleeper.wait()


def test_command_not_found(tmp_path):
    p = run("record", "-o", tmp_path / "x.json", "--", "/nonexistent/app")
    check_failed(p, "failed to find command '/nonexistent/app'", "No such file")
    p = run("record", "-o", tmp_path / "x.json", "--", "no-such-command-xyz")
    check_failed(p, "failed to find command 'no-such-command-xyz'", "$PATH")


def test_nothing_to_record():
    p = run("record")
    check_failed(p, "nothing to record")


def test_bad_buffer_size(tmp_path):
    p = run("record", "--buffer-size", "3000", "-o", tmp_path / "x.json", "--", prog("noprobes"))
    check_failed(p, "power of two")


def limited_cgroup(tmp_name, controller, limit):
    """A cgroup whose `controller` ("memory" or "pids") is limited to
    `limit` (v1 or v2), or None. BPF maps are charged to the creator's
    memory cgroup, so rings larger than a memory limit fail with ENOMEM on
    any machine, however much RAM it has."""
    knobs = {"memory": ("memory.limit_in_bytes", "memory.max"), "pids": ("pids.max", "pids.max")}
    v1 = f"/sys/fs/cgroup/{controller}"
    v2 = "/sys/fs/cgroup"
    try:
        v2_controllers = open(f"{v2}/cgroup.controllers").read().split()
    except OSError:
        v2_controllers = []
    if os.path.exists(f"{v1}/cgroup.procs"):   # a v1 hierarchy of its own
        d, knob = f"{v1}/{tmp_name}", knobs[controller][0]
    elif controller in v2_controllers:
        d, knob = f"{v2}/{tmp_name}", knobs[controller][1]
    else:
        return None
    try:
        os.makedirs(d, exist_ok=True)
        with open(f"{d}/{knob}", "w") as f:
            f.write(str(limit))
    except OSError:   # read-only cgroupfs; v2 without it in subtree_control
        remove_cgroup(d)
        return None
    return d


def remove_cgroup(d):
    """rmdir, once no process is left in it (a killed one takes a moment)."""
    for _ in range(50):
        try:
            os.rmdir(d)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)


@pytest.mark.parametrize("option", ["--buffer-size", "--kernel-buffer-size"])
def test_rings_out_of_memory(tmp_path, option):
    """Rings that cannot be allocated: a clear error naming the option to
    lower, no crash, nothing left loaded. The recorder runs in a memory
    cgroup of 256 MiB and asks for 512 MiB rings."""
    cg = limited_cgroup(f"tracebpf-test-{os.getpid()}", "memory", 256 << 20)
    if cg is None:
        pytest.skip("no memory cgroup controller on this machine")
    try:
        cmd = [TRACEBPF, "record", option, "512M", "-o", str(tmp_path / "x.json"), "--",
               prog("pingpong"), "1"]
        p = subprocess.run(["sh", "-c", f'echo $$ > {cg}/cgroup.procs && exec "$@"', "sh", *cmd],
                           capture_output=True, text=True, timeout=60)
    finally:
        remove_cgroup(cg)
    what = "kernel ring buffer" if option == "--kernel-buffer-size" else "ring buffer"
    check_failed(p, f"failed to create {what} for CPU 0 (536870912 bytes): Cannot allocate memory",
                 f"hint: try a smaller {option}\n")
    assert not (tmp_path / "x.json").exists()


def test_slot_rings_out_of_memory(tmp_path):
    """The slot rings take --buffer-size per CPU next to the ring buffers:
    a memory cgroup that holds the ring buffers (128 MiB a CPU) with 64 MiB
    to spare, but not the slot rings (96 MiB a CPU), gets the same clear
    error naming the option, not a failed load with a verifier hint."""
    n = possible_cpus()
    cg = limited_cgroup(f"tracebpf-test-{os.getpid()}", "memory", (n * 128 + 64) << 20)
    if cg is None:
        pytest.skip("no memory cgroup controller on this machine")
    try:
        cmd = [TRACEBPF, "record", "-b", "128M", "-o", str(tmp_path / "x.json"), "--",
               prog("pingpong"), "1"]
        p = subprocess.run(["sh", "-c", f'echo $$ > {cg}/cgroup.procs && exec "$@"', "sh", *cmd],
                           capture_output=True, text=True, timeout=60)
    finally:
        remove_cgroup(cg)
    check_failed(p, "failed to create the slot rings (100663296 bytes a CPU): Cannot allocate "
                 "memory", "hint: try a smaller --buffer-size\n")
    assert "verifier" not in p.stderr, p.stderr
    assert not (tmp_path / "x.json").exists()


def test_convert_corrupt_file(tmp_path):
    bad = tmp_path / "bad.tbt"
    bad.write_bytes(b"this is not a trace file at all\n" * 4)
    p = run("convert", bad, "-o", tmp_path / "bad.json")
    check_failed(p, "convert", str(bad))
    p = run("convert", tmp_path / "missing.tbt")
    check_failed(p, "missing.tbt", "No such file")


@pytest.mark.parametrize("cmd", ["info", "dump", "convert"])
def test_reading_commands_need_a_source(cmd):
    """convert, info and dump share one source parser (lib/tbio.c): no trace and no
    --connect is a usage error that says what to give; info has no --follow."""
    check_failed(run(cmd), "give the trace file (FILE.tbt, - for stdin) or --connect SOCKET")
    check_failed(run(cmd, "a.tbt", "b.tbt"), "one trace at a time")
    if cmd == "info":
        check_failed(run(cmd, "--follow", "a.tbt"), "unrecognized option")


def test_stdout_reader_goes_away(tmp_path):
    """`record -o -` whose reader exits early: a write error (EPIPE) that the
    recorder reports and cleans up after (exit 1, nothing loaded, the traced
    command not left stopped), not a death by SIGPIPE."""
    sh = (f'"{TRACEBPF}" record -q -o - -- "{prog("pingpong")}" 200000 | head -c 1000 >/dev/null;'
          ' echo "rc=${PIPESTATUS[0]}" >&2')
    p = subprocess.run(["bash", "-c", sh], capture_output=True, text=True, timeout=120)
    m = re.search(r"rc=(\d+)", p.stderr)
    assert m and m.group(1) == "1", p.stderr
    p.returncode = 1
    check_failed(p, "failed to write '-': Broken pipe", "hint: what reads the output stopped")
    from test_faults import stopped_pingpongs
    assert stopped_pingpongs() == []


def test_cpu_count_unreadable(tmp_path):
    """The number of possible CPUs (sizes the per-CPU rings) cannot be read:
    here /sys/devices/system/cpu/possible is an empty file, bound over the
    real one in a private mount namespace. A clear error, nothing loaded."""
    empty = tmp_path / "possible"
    empty.write_text("")
    sh = (f'mount --bind "{empty}" /sys/devices/system/cpu/possible && exec "{TRACEBPF}" '
          f'record -o "{tmp_path / "x.json"}" -- "{prog("pingpong")}" 10')
    p = subprocess.run(["unshare", "-m", "sh", "-c", sh], capture_output=True, text=True,
                       timeout=60)
    check_failed(p, "failed to count possible CPUs", "/sys/devices/system/cpu/possible")


def test_open_files_limit(tmp_path):
    """Every map, program, link and per-CPU ring is a file descriptor. A low
    soft limit is raised for the recorder (and given back to the command it
    starts); a hard limit it cannot raise (no CAP_SYS_RESOURCE) is a clear
    error up front, not a libbpf failure halfway ("Bad file descriptor",
    "Too many open files" with a hint about the verifier)."""
    out = tmp_path / "x.json"
    cmd = (f'ulimit -S -n 16 && exec "{TRACEBPF}" record -q -o "{out}" -- sh -c '
           f'\'echo limit=$(ulimit -n); exec "{prog("pingpong")}" 50\'')
    p = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "limit=16" in p.stdout, p.stdout   # the command's limit is its own
    assert load(out, consumer=False).named("pingpong", "X")
    cmd = (f'ulimit -n 48 && exec "{TRACEBPF}" record -o "{out}" -- "{prog("pingpong")}" 50')
    p = subprocess.run(["setpriv", "--bounding-set=-sys_resource", "--inh-caps=-sys_resource",
                        "sh", "-c", cmd], capture_output=True, text=True, timeout=60)
    check_failed(p, "failed to raise the open-files limit from 48", "ulimit -n")


def test_releaser_cannot_start(tmp_path):
    """The recorder forks a releaser right after loading (it resumes the
    targets if the recorder is killed). In a pids cgroup that allows only the
    recorder itself, that fork fails: a clear error naming the limit,
    nothing loaded."""
    target = subprocess.Popen([prog("quiet_thread")], stdout=subprocess.PIPE, text=True)
    cg = limited_cgroup(f"tracebpf-pids-{os.getpid()}", "pids", 1)
    try:
        assert target.stdout.readline().strip() == "ready"
        if cg is None:
            pytest.skip("no pids cgroup controller on this machine")
        cmd = [TRACEBPF, "record", "-p", str(target.pid), "-o", str(tmp_path / "x.json")]
        p = subprocess.run(["sh", "-c", f'echo $$ > {cg}/cgroup.procs && exec "$@"', "sh", *cmd],
                           capture_output=True, text=True, timeout=60)
    finally:
        target.kill()
        target.wait()
        if cg:
            remove_cgroup(cg)
    check_failed(p, "failed to start the process that resumes targets if tracebpf is killed",
                 "pids.max")


@pytest.mark.parametrize("args,rc", [
    (["info"], 64), (["dump", "--bogus"], 64), (["pack", "a"], 64), (["convert"], 64),
    (["ctl", "bogus"], 64), (["record"], 64), (["record", "-b", "3", "--", "true"], 64),
    (["record", "-e", "sched", "--", "true"], 64), (["bogus"], 64),
    (["info", "/nonexistent.tbt"], 1), (["dump", "/nonexistent.tbt"], 1),
    (["convert", "/nonexistent.tbt"], 1), (["pack", "/nonexistent.tbt", "/tmp/never.tbt"], 1),
    (["version"], 0),
])
def test_exit_status_as_documented(args, rc):
    """The EXIT STATUS of every command page: 64 for a usage error, 1 for a
    failure said on stderr, 0 for success."""
    p = subprocess.run([TRACEBPF, *args], capture_output=True, text=True, timeout=60)
    assert p.returncode == rc, (args, p.returncode, p.stderr[-500:])
    if rc:
        assert p.stderr.strip(), f"{args}: exit {rc} without saying why"


def test_convert_into_a_read_only_directory(tmp_path):
    """convert cannot create its temporary file next to the output (a
    read-only mount, in a private mount namespace): exit 1, what failed, the
    hint, and no file left behind."""
    ro = tmp_path / "ro"
    ro.mkdir()
    golden = ROOT / "tests" / "data" / "v2.3-mt_events.tbt"
    p = subprocess.run(["unshare", "-m", "sh", "-c",
                        'mount -t tmpfs -o ro tmpfs "$1" && exec "$2" convert "$3" -o "$1/x.json"',
                        "sh", str(ro), TRACEBPF, str(golden)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert re.search(r"tracebpf: convert: failed to create '.*/ro/x\.json': Read-only file system",
                     p.stderr), p.stderr
    assert "hint: the output directory must be writable" in p.stderr, p.stderr
    assert not list(ro.iterdir())


def test_target_exits_while_the_recorder_loads(tmp_path):
    """`record -p` of a program that exits while the recorder loads its
    programs: it records what it can (exit 0) or says what failed and
    why, never exit 1 without a word (it did when an object found in the
    target was gone by the time it was opened). Staggered starts put the
    exit before, during and after the load."""
    outcomes = set()
    for k in range(8):
        p = subprocess.Popen([prog("nested_loop"), "2", str(0.1 * (k + 1))], stdout=subprocess.PIPE,
                             text=True)
        assert p.stdout.readline().startswith("pid=")
        time.sleep(0.03 * k)
        r = run("record", "-q", "--no-sched", "-p", p.pid, "-o", tmp_path / f"x{k}.json")
        p.wait(timeout=60)
        assert r.returncode in (0, 1), (r.returncode, r.stderr)
        if r.returncode:
            # what failed, not a wrong reason ("has no tracebpf probes")
            assert re.search(r"^tracebpf: record: failed to \w+ ", r.stderr, re.M), r.stderr
            assert "tracebpf: hint: " in r.stderr, r.stderr
        outcomes.add(r.returncode)
    print("exit codes seen:", sorted(outcomes))


def test_session_maps_not_pinned_is_said_once(tmp_path):
    """Every BPF_OBJ_PIN refused (deny_bpf_cmd 6): the session's maps
    cannot be pinned under session-NAME/ (docs/tracebpf-ctl.md). One
    warning says so, which map it stopped at and what is lost, and the
    recording goes on whole. (It was one warning per map, 31 lines.)"""
    out = tmp_path / "p.json"
    p = subprocess.run([prog("deny_bpf_cmd"), "6", TRACEBPF, "record", "--no-sched",
                        "--session", "pins.refused", "-o", str(out), "--",
                        prog("mt_events"), "2", "100"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    said = [l for l in p.stderr.splitlines() if "failed to pin this session's maps" in l]
    assert len(said) == 1, p.stderr
    assert re.search(r"\(record-\w+: Operation not permitted\): `bpftool map show -f` will "
                     r"not show them under session-pins_refused/; the recording goes on$",
                     said[0]), said
    t = load(out, consumer=False)
    assert sorted(Counter(e["tid"] for e in t.named("work", "X")).values()) == [100, 100]
