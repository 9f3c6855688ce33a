"""A reader of the Perfetto traces tracebpf writes (docs/perfetto.md), for the
tests: protobuf's wire format decoded by hand, the rules every trace must
keep checked, and the events rebuilt to hold against the JSON of the same
recording (docs/output.md).

The rules (check): every interned id is defined on its sequence before it
is used; timestamps never go back on a sequence; every END ends a slice
begun on its track, and no slice is left open.
"""
import struct
import zlib

# TracePacket
P_FTRACE, P_CHROME, P_CLOCK, P_TIME, P_SEQ, P_TE, P_INTERNED, P_FLAGS = 1, 5, 6, 8, 10, 11, 12, 13
P_COMPRESSED, P_CLOCK_ID, P_DEFAULTS, P_DESCRIPTOR = 50, 58, 59, 60
# TrackEvent
TE_CATS, TE_DEBUG, TE_TYPE, TE_NAME_IID, TE_TRACK, TE_NAME = 3, 4, 9, 10, 11, 23
TE_COUNTER, TE_DCOUNTER, TE_FLOWS, TE_TERM = 30, 44, 47, 48
BEGIN, END, INSTANT, COUNTER = 1, 2, 3, 4
INCREMENTAL_CLOCK = 64
KINDS = {1: "cat", 2: "name", 3: "arg"}


def fields(buf):
    """(field, value) of a message: ints for varints and fixed64s (wire
    types 0 and 1), bytes for length-delimited ones."""
    i, n = 0, len(buf)
    while i < n:
        key, i = varint(buf, i)
        f, w = key >> 3, key & 7
        if w == 0:
            v, i = varint(buf, i)
        elif w == 1:
            v = struct.unpack_from("<Q", buf, i)[0]
            i += 8
        elif w == 2:
            ln, i = varint(buf, i)
            v = bytes(buf[i:i + ln])
            if len(v) != ln:
                raise ValueError("length past the end")
            i += ln
        elif w == 5:
            v = struct.unpack_from("<I", buf, i)[0]
            i += 4
        else:
            raise ValueError(f"wire type {w}")
        yield f, v


def varint(buf, i):
    shift = v = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7f) << shift
        if not b & 0x80:
            return v, i
        shift += 7


def msg(buf):
    """A message as {field: [values]}."""
    out = {}
    for f, v in fields(buf):
        out.setdefault(f, []).append(v)
    return out


def one(m, f, default=None):
    return m[f][-1] if f in m else default


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def packets(path):
    """Every packet of the file, compressed groups inflated, in order."""
    data = open(path, "rb").read()
    for f, v in fields(data):
        assert f == 1, f"Trace field {f}"
        p = msg(v)
        if P_COMPRESSED in p:
            for g, inner in fields(zlib.decompress(p[P_COMPRESSED][0])):
                assert g == 1
                yield msg(inner)
        else:
            yield p


class Seq:
    def __init__(self):
        self.interned = {k: {} for k in KINDS.values()}
        self.clock = None           # the default clock (trace_packet_defaults)
        self.track = None           # the default track
        self.incr = None            # the incremental clock's last value
        self.last = None            # the last absolute time


class Trace:
    """The events of a .pftrace, rebuilt; check() has held its rules."""

    def __init__(self, path):
        self.path = path
        self.seqs = {}
        self.tracks = {}            # uuid -> descriptor fields
        self.stacks = {}            # uuid -> [open slice]
        self.slices, self.instants, self.counters = [], [], []
        self.flows = {}             # flow id -> [slice]
        self.metadata = None
        self.errors = []
        self.switches = 0
        for p in packets(path):
            self.packet(p)
        for uuid, st in self.stacks.items():
            if st:
                self.errors.append(f"track {uuid:#x}: {len(st)} slices never ended")

    def err(self, what):
        self.errors.append(what)

    def packet(self, p):
        sid = one(p, P_SEQ, 0)
        s = self.seqs.setdefault(sid, Seq())
        if one(p, P_FLAGS, 0) & 1:
            s.interned = {k: {} for k in KINDS.values()}
        if P_DEFAULTS in p:
            d = msg(p[P_DEFAULTS][0])
            s.clock = one(d, 58)
            if 11 in d:
                s.track = one(msg(d[11][0]), 11)
        if P_CLOCK in p:
            for c in msg(p[P_CLOCK][0]).get(1, []):
                c = msg(c)
                if one(c, 3):
                    s.incr = one(c, 2)
        if P_INTERNED in p:
            self.intern(s, msg(p[P_INTERNED][0]))
        ts = self.time(s, p)
        if ts is not None:
            if s.last is not None and ts < s.last:
                self.err(f"sequence {sid}: time goes back from {s.last} to {ts}")
            s.last = ts
        if P_DESCRIPTOR in p:
            self.describe(msg(p[P_DESCRIPTOR][0]))
        if P_TE in p:
            self.event(s, sid, ts, msg(p[P_TE][0]))
        if P_CHROME in p:
            for m in msg(p[P_CHROME][0]).get(2, []):
                m = msg(m)
                if one(m, 1) == b"tracebpf":
                    self.metadata = one(m, 5).decode()
        if P_FTRACE in p:
            b = msg(p[P_FTRACE][0])
            if 4 in b:
                self.switches += len(list(packed(msg(b[4][0]).get(1, []))))

    def intern(self, s, m):
        for f, kind in KINDS.items():
            for e in m.get(f, []):
                e = msg(e)
                iid, name = one(e, 1), one(e, 2, b"").decode("utf-8", "replace")
                if iid in s.interned[kind]:
                    self.err(f"{kind} iid {iid} defined twice")
                s.interned[kind][iid] = name

    def time(self, s, p):
        if P_TIME not in p:
            return None
        t = one(p, P_TIME)
        clock = one(p, P_CLOCK_ID, s.clock)
        if clock == INCREMENTAL_CLOCK:
            if s.incr is None:
                self.err("an incremental time before its clock")
                return None
            s.incr += t
            return s.incr
        return t

    def describe(self, d):
        uuid = one(d, 1)
        old = self.tracks.get(uuid, {})
        new = {"parent": one(d, 5), "name": one(d, 2, b"").decode() or old.get("name")}
        if 3 in d:
            pr = msg(d[3][0])
            new.update(kind="process", pid=one(pr, 1),
                       pname=one(pr, 6, b"").decode() or old.get("pname"))
        if 4 in d:
            th = msg(d[4][0])
            new.update(kind="thread", pid=one(th, 1), tid=one(th, 2),
                       tname=one(th, 5, b"").decode() or old.get("tname"))
        if 8 in d:
            new["kind"] = "counter"
        for k, v in new.items():
            if v is None and k in old:
                new[k] = old[k]
        self.tracks[uuid] = {**old, **new}

    def name_of(self, s, kind, iid):
        if iid not in s.interned[kind]:
            self.err(f"{kind} iid {iid} used before it is defined")
            return None
        return s.interned[kind][iid]

    def args(self, s, te):
        out = {}
        for a in te.get(TE_DEBUG, []):
            a = msg(a)
            key = (one(a, 10).decode() if 10 in a   # a name written in full
                   else self.name_of(s, "arg", one(a, 1)))
            if 2 in a:
                v = bool(one(a, 2))
            elif 3 in a:
                v = one(a, 3)
            elif 4 in a:
                v = signed(one(a, 4))
            elif 5 in a:
                v = struct.unpack("<d", struct.pack("<Q", one(a, 5)))[0]
            elif 6 in a:
                v = one(a, 6).decode("utf-8", "replace")
            elif 7 in a:
                v = f"0x{one(a, 7):x}"
            elif 9 in a:
                v = one(a, 9).decode()
            else:
                v = None
            out[key] = v
        return out

    def event(self, s, sid, ts, te):
        track = one(te, TE_TRACK, s.track)
        if track not in self.tracks:
            self.err(f"track {track} used before it is described")
        typ = one(te, TE_TYPE)
        cats = [self.name_of(s, "cat", c) for c in te.get(TE_CATS, [])]
        name = (self.name_of(s, "name", one(te, TE_NAME_IID)) if TE_NAME_IID in te
                else one(te, TE_NAME, b"").decode() if TE_NAME in te else None)
        ev = {"ts": ts, "track": track, "cat": ",".join(c or "" for c in cats), "name": name,
              "args": self.args(s, te), "seq": sid}
        st = self.stacks.setdefault(track, [])
        if typ == BEGIN:
            ev["depth"] = len(st)
            st.append(ev)
        elif typ == END:
            if not st:
                self.err(f"an END with nothing begun on track {track:#x}")
                return
            b = st.pop()
            b["end"] = ts
            b["args"].update(ev["args"])
            for f in te.get(TE_FLOWS, []) + te.get(TE_TERM, []):
                self.flows.setdefault(f, []).append(b)
            self.slices.append(b)
        elif typ == INSTANT:
            ev["depth"] = len(st)
            self.instants.append(ev)
        elif typ == COUNTER:
            v = one(te, TE_COUNTER)
            ev["value"] = signed(v) if v is not None else struct.unpack(
                "<d", struct.pack("<Q", one(te, TE_DCOUNTER)))[0]
            self.counters.append(ev)
        else:
            self.err(f"event type {typ}")

    def thread_of(self, track):
        """(pid, tid) of a thread's track, (pid, None) of a process's or a
        child of one, (None, None) otherwise."""
        d = self.tracks.get(track, {})
        if d.get("kind") == "thread":
            return d["pid"], d["tid"]
        if d.get("kind") == "process":
            return d["pid"], None
        if d.get("parent") is not None:
            return self.thread_of(d["parent"])[0], None
        return None, None


def packed(values):
    for v in values:
        i = 0
        while i < len(v):
            x, i = varint(v, i)
            yield x
