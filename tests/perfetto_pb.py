#!/usr/bin/env python3
"""llmprof export --perfetto FILE.pftrace against the JSON export of the same trace.

A small reader of the protobuf wire format decodes the file by Perfetto's field numbers
(protos/perfetto/trace: TracePacket, TrackEvent, TrackDescriptor, InternedData,
ClockSnapshot) and checks what trace_processor relies on: every packet on a sequence,
each sequence opened with its state cleared, its incremental clock snapshotted and its
default track, every interned id defined on its sequence before use, every track used
described, slices balanced per track. It then rebuilds the events (incremental timestamps
summed, names resolved, slices paired) and compares them with the JSON's, event for event:
slices with their thread or stream, name, start and duration (ns), kernel categories and
launch configurations, instants, requests, flows from launch to work, NVML counters.
Usage: perfetto_pb.py LLMPROF FIXTURES_DIR. Exit status 1 when a check fails."""
import collections
import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

LP, FIX = sys.argv[1], sys.argv[2]
MAX_TRACE = 250000   # bytes
failed = 0


def check(cond, what, detail=""):
    global failed
    if cond:
        print("ok - " + what)
    else:
        failed += 1
        print("not ok - " + what + (f" ({str(detail)[:800]})" if detail != "" else ""))
    return cond


def varint(b, i):
    v = shift = 0
    while True:
        if i >= len(b):
            raise ValueError("a varint runs past the end")
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i
        if shift > 63:
            raise ValueError("a varint longer than 10 bytes")


def fields(b):
    """(field, wire type, value) of message B: ints for varint and fixed64, bytes else."""
    out, i = [], 0
    while i < len(b):
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            if i + 8 > len(b):
                raise ValueError("a fixed64 runs past the end")
            v = int.from_bytes(b[i:i + 8], "little")
            i += 8
        elif wt == 2:
            n, i = varint(b, i)
            if i + n > len(b):
                raise ValueError("a length-delimited field runs past the end")
            v = b[i:i + n]
            i += n
        else:
            raise ValueError(f"wire type {wt} (field {f})")
        out.append((f, wt, v))
    return out


def one(fs, num, default=None):
    vals = [v for f, _, v in fs if f == num]
    return vals[-1] if vals else default


def many(fs, num):
    return [v for f, _, v in fs if f == num]


def as_double(bits):
    import struct
    return struct.unpack("<d", bits.to_bytes(8, "little"))[0]


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


class Pb:
    """The decoded trace: tracks, slices, instants, counters, flows."""

    def __init__(self, data):
        self.problems = []
        self.tracks = {}      # uuid -> dict(kind, pid, tid, name, parent, unit)
        self.slices = []      # (uuid, cat, name, start, end, annotations)
        self.instants = []    # (uuid, cat, name, ts)
        self.counters = []    # (uuid, ts, value)
        self.flows_out, self.flows_in = [], []   # (flow id, track, ts)
        self.packets = 0
        seqs = {}
        open_ = collections.defaultdict(list)   # uuid -> stack of open slices
        for f, wt, pkt in fields(data):
            if f != 1 or wt != 2:
                self.problems.append(f"a Trace field {f} (wire type {wt}) beside the packets")
                continue
            self.packets += 1
            p = fields(pkt)
            seq = one(p, 10)
            if seq is None:
                self.problems.append("a packet without trusted_packet_sequence_id")
                continue
            st = seqs.get(seq)
            if one(p, 13, 0) & 1:
                st = seqs[seq] = {"clock": None, "track": None, "names": {}, "cats": {},
                                  "anames": {}, "astrings": {}}
            td = one(p, 60)
            if td is not None:
                self.descriptor(fields(td))
                continue
            if st is None:
                self.problems.append(f"sequence {seq}: a packet before its state was cleared")
                continue
            d = one(p, 59)
            if d is not None:
                dd = fields(d)
                if one(dd, 58) != 64:
                    self.problems.append(f"sequence {seq}: default clock {one(dd, 58)}")
                ted = one(dd, 11)
                st["track"] = one(fields(ted), 11) if ted is not None else None
            interned = one(p, 12)
            if interned is not None:
                for num, key in ((1, "cats"), (2, "names"), (3, "anames"), (29, "astrings")):
                    for e in many(fields(interned), num):
                        ef = fields(e)
                        st[key][one(ef, 1)] = one(ef, 2, b"").decode("utf-8", "replace")
            cs = one(p, 6)
            if cs is not None:
                clocks = {one(fields(c), 1): fields(c) for c in many(fields(cs), 1)}
                c64, boot = clocks.get(64), clocks.get(6)
                if not (c64 and one(c64, 3) == 1 and boot is not None and
                        one(c64, 2, 0) == one(boot, 2, 0)):
                    self.problems.append(f"sequence {seq}: its clock snapshot {clocks}")
                st["clock"] = one(c64, 2, 0) if c64 else 0
                continue
            te = one(p, 11)
            if te is None:
                continue
            if st["clock"] is None:
                self.problems.append(f"sequence {seq}: an event before its clock snapshot")
                continue
            st["clock"] += one(p, 8, 0)
            self.event(seq, st, fields(te), st["clock"], open_)
        for uuid, stack in open_.items():
            if stack:
                self.problems.append(f"track {uuid}: {len(stack)} slices never ended")
        for uuid, t in self.tracks.items():
            if t.get("parent") and t["parent"] not in self.tracks:
                self.problems.append(f"track {uuid}: parent {t['parent']} not described")

    def descriptor(self, d):
        uuid = one(d, 1)
        t = {"parent": one(d, 5), "name": one(d, 2, b"").decode()}
        if one(d, 3) is not None:
            pd = fields(one(d, 3))
            t.update(kind="process", pid=one(pd, 1), name=one(pd, 6, b"").decode())
        elif one(d, 4) is not None:
            th = fields(one(d, 4))
            t.update(kind="thread", pid=one(th, 1), tid=one(th, 2))
        else:
            t["kind"] = "named"
            if one(d, 8) is not None:
                t["unit"] = one(fields(one(d, 8)), 6, b"").decode()
        if uuid in self.tracks:
            self.problems.append(f"track {uuid} described twice")
        self.tracks[uuid] = t

    def lookup(self, st, table, iid, seq):
        if iid not in st[table]:
            self.problems.append(f"sequence {seq}: {table} iid {iid} used before defined")
            return "?"
        return st[table][iid]

    def event(self, seq, st, e, ts, open_):
        uuid = one(e, 11, st["track"])
        if uuid not in self.tracks:
            self.problems.append(f"sequence {seq}: track {uuid} used before described")
        typ = one(e, 9)
        cats = [self.lookup(st, "cats", c, seq) for c in many(e, 3)]
        name = one(e, 23)
        name = name.decode() if name is not None else (
            self.lookup(st, "names", one(e, 10), seq) if one(e, 10) is not None else None)
        ann = {}
        for a in many(e, 4):
            af = fields(a)
            key = self.lookup(st, "anames", one(af, 1), seq)
            if one(af, 17) is not None:
                ann[key] = self.lookup(st, "astrings", one(af, 17), seq)
            elif one(af, 6) is not None:
                ann[key] = one(af, 6).decode()
            elif one(af, 4) is not None:
                ann[key] = signed(one(af, 4))
            else:
                ann[key] = one(af, 3)
        for fid in many(e, 47):
            self.flows_out.append((fid, uuid, ts))
        for fid in many(e, 48):
            self.flows_in.append((fid, uuid, ts))
        if typ == 1:
            open_[uuid].append((",".join(cats), name, ts, ann))
        elif typ == 2:
            if not open_[uuid]:
                self.problems.append(f"track {uuid}: an end with no slice open")
                return
            cat, n, s, a = open_[uuid].pop()
            self.slices.append((uuid, cat, n, s, ts, a))
        elif typ == 3:
            self.instants.append((uuid, ",".join(cats), name, ts))
        elif typ == 4:
            self.counters.append((uuid, ts, as_double(one(e, 44))))
        else:
            self.problems.append(f"event type {typ}")

    def place(self, uuid):
        """(pid, tid or stream or track name) as the JSON places the track's events."""
        t = self.tracks.get(uuid, {})
        while t.get("kind") == "named" and (self.tracks.get(t.get("parent"), {}).get("kind")
                                             == "thread"):
            t = self.tracks[t["parent"]]         # an overlap lane of a thread
        if t.get("kind") == "thread":
            return (t["pid"], t["tid"])
        parent = self.tracks.get(t.get("parent"), {})
        name = re.sub(r" \(overlapping \d+\)$", "", t.get("name", ""))
        m = re.fullmatch(r"stream (\d+)", name)
        return (parent.get("pid"), int(m.group(1)) if m else name)


def ns(us):
    return round(us * 1000)


def from_json(doc):
    """The JSON export's events, in the terms Pb.place gives."""
    out = {"slices": collections.Counter(), "instants": collections.Counter(),
           "requests": collections.Counter(), "counters": [], "flows_out": collections.Counter(),
           "flows_in": collections.Counter(), "processes": {}}
    open_req = {}
    for e in doc["traceEvents"]:
        ph = e["ph"]
        if ph == "X":
            a = e.get("args", {})
            tid = "serving iterations" if e["tid"] == 999999 else e["tid"]
            if e["cat"] == "kernel":
                cat = a["category"]
                launch = (f"grid [{','.join(map(str, a['grid']))}] block "
                          f"[{','.join(map(str, a['block']))}], {a['registers per thread']} "
                          f"registers per thread, {a['shared memory']} B shared memory")
                extra = (launch, a.get("graph", 0) or None, a.get("captured in"))
            elif e["cat"] in ("memcpy", "memset"):
                cat, extra = e["cat"], (a["bytes"],)
            else:
                cat, extra = e["cat"], ()
            out["slices"][(e["pid"], tid, cat, e["name"], ns(e["ts"]),
                           ns(e["ts"]) + ns(e["dur"]), extra)] += 1
        elif ph == "i":
            out["instants"][(e["pid"], e["tid"], e["name"], ns(e["ts"]))] += 1
        elif ph == "b":
            open_req[e["id"]] = (e["name"], ns(e["ts"]))
        elif ph == "e":
            name, s = open_req.pop(e["id"])
            out["requests"][(name, s, ns(e["ts"]))] += 1
        elif ph == "C":
            (unit, v), = e["args"].items()
            out["counters"].append((e["pid"], e["name"], unit, ns(e["ts"]), v))
        elif ph == "s":
            out["flows_out"][(e["id"], (e["pid"], e["tid"]), ns(e["ts"]))] += 1
        elif ph == "f":
            out["flows_in"][(e["id"], (e["pid"], e["tid"]), ns(e["ts"]))] += 1
        elif ph == "M" and e["name"] == "process_name":
            out["processes"][e["pid"]] = e["args"]["name"]
    return out


def from_pb(pb):
    out = {"slices": collections.Counter(), "instants": collections.Counter(),
           "requests": collections.Counter(), "counters": [], "flows_out": collections.Counter(),
           "flows_in": collections.Counter(), "processes": {}, "unpaired": []}
    for uuid, cat, name, s, e, a in pb.slices:
        pid, tid = pb.place(uuid)
        if cat == "request":
            out["requests"][(name, s, e)] += 1
            continue
        if cat in ("memcpy", "memset") and "bytes" in a:
            extra = (a["bytes"],)
        elif cat in ("nvtx", "cuda_api", "cupti_overhead", "iteration"):
            extra = ()
        else:   # a kernel: its category is its kind
            extra = (a.get("launch"), a.get("graph"), a.get("captured in"))
        out["slices"][(pid, tid, cat, name, s, e, extra)] += 1
    for uuid, cat, name, ts in pb.instants:
        pid, tid = pb.place(uuid)
        out["instants"][(pid, tid, name, ts)] += 1
    for uuid, ts, v in pb.counters:
        t = pb.tracks[uuid]
        pid = pb.tracks.get(t.get("parent"), {}).get("pid")
        out["counters"].append((pid, t["name"], t.get("unit"), ts, v))
    # the JSON's correlation id is the low 32 bits: a call whose several GPU records share it
    # (a CUDA graph launch) starts one flow per record, (J << 32) | id
    starts = set()
    for fid, uuid, ts in pb.flows_out:
        out["flows_out"][(fid & 0xFFFFFFFF, pb.place(uuid), ts)] = 1
        starts.add(fid)
    for fid, uuid, ts in pb.flows_in:
        out["flows_in"][(fid & 0xFFFFFFFF, pb.place(uuid), ts)] += 1
        if fid not in starts:
            out["unpaired"].append(fid)
    ends = collections.Counter(fid for fid, _, _ in pb.flows_in)
    out["ended_twice"] = [fid for fid, n in ends.items() if n > 1]
    for t in pb.tracks.values():
        if t.get("kind") == "process":
            out["processes"][t["pid"]] = t["name"]
    return out


def compare(name, j, p):
    for key in ("slices", "instants", "requests"):
        missing, extra = j[key] - p[key], p[key] - j[key]
        check(not missing and not extra,
              f"{name}: the protobuf's {key} are the JSON's ({sum(j[key].values())})",
              {"missing": list(missing.items())[:3], "extra": list(extra.items())[:3]})
    pc = sorted(c for c in p["counters"] if not c[1].startswith("PM "))
    jc = sorted(j["counters"])
    same = len(pc) == len(jc) and all(
        a[:4] == b[:4] and abs(a[4] - b[4]) <= 0.0006 for a, b in zip(jc, pc))
    check(same, f"{name}: the NVML counters are the JSON's ({len(jc)})",
          [(a, b) for a, b in zip(jc, pc) if a[:4] != b[:4] or abs(a[4] - b[4]) > 0.0006][:3]
          or (len(jc), len(pc)))
    check(j["flows_out"] == p["flows_out"] and j["flows_in"] == p["flows_in"],
          f"{name}: the flows are the JSON's ({sum(j['flows_out'].values())} out, "
          f"{sum(j['flows_in'].values())} in)",
          list((j["flows_out"] - p["flows_out"]).items())[:3] +
          list((p["flows_out"] - j["flows_out"]).items())[:3] +
          list((j["flows_in"] - p["flows_in"]).items())[:3] +
          list((p["flows_in"] - j["flows_in"]).items())[:3])
    # trace_processor closes a flow at its terminating id: each id ended once, and each from
    # a start unless the JSON's end has no start either
    sourceless = {k[0] for k in j["flows_in"]} - {k[0] for k in j["flows_out"]}
    bad = [f for f in p["unpaired"] if f & 0xFFFFFFFF not in sourceless]
    check(not bad and not p["ended_twice"],
          f"{name}: every flow ended once, from a start of its own",
          {"unpaired": bad[:5], "ended twice": p["ended_twice"][:5]})
    check(j["processes"] == p["processes"], f"{name}: the processes are the JSON's",
          (j["processes"], p["processes"]))


def export(run, out, *extra):
    r = subprocess.run([LP, "export", run, "--perfetto", out, "--force", *extra],
                       capture_output=True, text=True, timeout=300)
    return r


def main():
    tmp = tempfile.mkdtemp(prefix="lp-pftrace-")
    try:
        return run_all(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_all(tmp):
    # the fixtures of one trace, the largest left out: this reader is slow, and they add
    # nothing the others lack
    runs = sorted(d for d in glob.glob(os.path.join(FIX, "*"))
                  if os.path.isdir(d) and len(glob.glob(os.path.join(d, "*.lpt"))) == 1 and
                  os.path.getsize(glob.glob(os.path.join(d, "*.lpt"))[0]) < MAX_TRACE)
    check(len(runs) >= 20, f"fixtures with one trace each ({len(runs)})")
    kernels = size = 0
    seen = collections.Counter()
    for run in runs:
        name = os.path.basename(run)
        js, pf = os.path.join(tmp, name + ".json"), os.path.join(tmp, name + ".pftrace")
        rj, rp = export(run, js), export(run, pf)
        if not check(rj.returncode == 0 and rp.returncode == 0 and "were cut" not in rp.stderr,
                     f"{name}: both exports written, no slice cut", (rj.stderr, rp.stderr)):
            continue
        data = open(pf, "rb").read()
        try:
            pb = Pb(data)
        except ValueError as e:
            check(False, f"{name}: the protobuf decodes", e)
            continue
        check(not pb.problems, f"{name}: {pb.packets} packets as trace_processor reads them",
              pb.problems[:5])
        j = from_json(json.load(open(js)))
        p = from_pb(pb)
        compare(name, j, p)
        k = sum(n for key, n in j["slices"].items()
                if key[2] not in ("nvtx", "cuda_api", "cupti_overhead", "memcpy", "memset",
                                  "iteration"))
        kernels += k
        size += len(data)
        pm = [c for c in p["counters"] if c[1].startswith("PM ")]
        seen["PM counters"] += bool(pm)
        odd = [c for c in pm if not math.isfinite(c[4]) or c[4] < 0 or
               (c[2] == "%" and c[4] > 100.5)]
        if pm:
            check(not odd, f"{name}: {len(pm)} PM counter values, finite, percentages in "
                  "0-100", odd[:3])
        seen["requests"] += bool(p["requests"])
        seen["iterations"] += any(key[1] == "serving iterations" for key in p["slices"])
        seen["overlap tracks"] += any("overlapping" in t["name"] for t in pb.tracks.values())
        seen["captured in"] += any(key[6][2:3] not in ((None,), ()) for key in p["slices"])
        seen["graph launches' flows"] += any(f >> 32 for f, _, _ in pb.flows_out)
        check(len(data) * 3 < os.path.getsize(js) or k < 100,
              f"{name}: the protobuf is under a third of the JSON "
              f"({len(data)} against {os.path.getsize(js)} bytes)")
    for what in ("PM counters", "requests", "iterations", "captured in", "overlap tracks",
                 "graph launches' flows"):
        check(seen[what] > 0, f"the fixtures exercise {what} ({seen[what]})")
    # a window: the same events as the JSON's window
    run = os.path.join(FIX, "llama")
    js, pf = os.path.join(tmp, "w.json"), os.path.join(tmp, "w.pftrace")
    if export(run, js, "--window", "100:300").returncode == 0 and \
            export(run, pf, "--window", "100:300").returncode == 0:
        pb = Pb(open(pf, "rb").read())
        check(not pb.problems, "window: packets as trace_processor reads them", pb.problems[:5])
        j, p = from_json(json.load(open(js))), from_pb(pb)
        check(sum(j["slices"].values()) > 0, "window: the JSON's window holds slices")
        compare("llama --window 100:300", j, p)
    else:
        check(False, "window: both exports written")
    print(f"# {kernels} kernels in {size} bytes of protobuf: "
          f"{size / max(kernels, 1):.1f} bytes per kernel, calls, ranges and counters included")
    print(f"# {'failed' if failed else 'passed'}: {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
