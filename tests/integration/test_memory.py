"""The traced processes' resident memory (docs/output.md, "Memory"):
kmem:rss_stat in BPF, sampled per process and kind (TB_RSS_STEP bytes or
TB_RSS_NS), as mem.rss.* counters on the process. A real recorder and a
real program that writes every page of 64 MiB (tests/progs/touch_mem.c)."""
import subprocess

from conftest import TRACEBPF, load, prog

MIB = 1 << 20
STEP = 256 << 10   # TB_RSS_STEP, lib/format/tbrecords.h: the sampling's granularity


def counters(t, pid, name):
    return [(e["ts"], e["args"]["value"]) for e in t.events
            if e["ph"] == "C" and e.get("cat") == "memory" and e["name"] == name and
            e["pid"] == pid]


def marker(t, name):
    return next(e for e in t.events if e["ph"] == "I" and e["name"] == name)


def test_anon_rss_rises_with_touched_memory(recorder):
    rec = recorder("--no-sched", "--", prog("touch_mem"), 64).wait()
    t = rec.trace()
    before = marker(t, "before")
    pid = before["pid"]
    anon = counters(t, pid, "mem.rss.anon")
    total = counters(t, pid, "mem.rss")
    assert anon and total, [e for e in t.events if e.get("cat") == "memory"][:5]
    base = [v for ts, v in anon if ts <= before["ts"]]
    base = base[-1] if base else 0
    peak = max(v for _, v in anon)
    assert peak - base >= 64 * MIB - STEP, (base, peak)
    # the total holds the anonymous memory too
    assert max(v for _, v in total) >= peak
    # sampled, not every page: far fewer counters than the 16,384 pages
    assert len(anon) < 2000, len(anon)


def test_no_memory_records_none(recorder):
    rec = recorder("--no-sched", "--no-memory", "--", prog("touch_mem"), 16).wait()
    t = rec.trace()
    assert not [e for e in t.events if e.get("cat") == "memory"]
    assert marker(t, "after")


def test_tracefs_not_mounted(tmp_path):
    """Regression: on a fresh machine nothing had mounted tracefs, and the
    recorder (which attaches kmem:rss_stat by its tracefs id) recorded no
    memory unless an earlier -e had mounted it. Now it mounts tracefs
    itself: here in a private mount namespace without it."""
    out = tmp_path / "m.json"
    p = subprocess.run(["unshare", "-m", "sh", "-c",
                        'umount /sys/kernel/tracing 2>/dev/null; '
                        'test -e /sys/kernel/tracing/events && exit 99; '
                        'exec "$@"', "sh", TRACEBPF, "record", "-o", str(out), "--no-sched",
                        "--", prog("touch_mem"), "16"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, (p.returncode, p.stderr)
    assert "mounted tracefs on /sys/kernel/tracing (needed for the resident memory " \
           "counters)" in p.stderr, p.stderr
    t = load(out)
    before = marker(t, "before")
    assert max(v for _, v in counters(t, before["pid"], "mem.rss.anon")) >= 16 * MIB - STEP
