"""USDT semaphores as a traced process holds them: whether a tracer has
attached to a probe (the kernel raises the probe's semaphore in every
process that maps its object when a uprobe with that reference counter is
attached). Used by the tests and bench/usdt.py to wait for an attach
without timing it."""
import re
import subprocess


def semaphore_of(pid, exe, name):
    """The semaphore of probe `name` in ELF file exe, as process pid maps
    it, is raised (not 0). The note's semaphore address is a link-time
    address: relocated by the file's first mapping (offset 0)."""
    notes = subprocess.run(["readelf", "-n", exe], capture_output=True, text=True,
                           check=True).stdout
    m = re.search(rf"Name: {re.escape(name)}\n.*Semaphore: (0x[0-9a-f]+)", notes)
    if not m or not int(m[1], 16):
        raise ValueError(f"{exe} has no probe {name} with a semaphore")
    with open(f"/proc/{pid}/maps") as f:
        base = next(int(line.split("-")[0], 16) for line in f
                    if line.rstrip().endswith(" " + exe))
    with open(f"/proc/{pid}/mem", "rb") as mem:
        mem.seek(base + int(m[1], 16))
        return int.from_bytes(mem.read(2), "little") != 0
