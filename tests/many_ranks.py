#!/usr/bin/env python3
"""A generated run of 64 tensor-parallel ranks on 8 hosts whose clocks are set apart by
known offsets (bench/gen_ranks.c), reported by `llmprof report`: every host's offset found
within 1 us of the one applied, the waits computed on the aligned clock, the stragglers
(local rank 3 of each host, arriving 30 us late) waiting least, and ranks.md giving each
figure's distribution instead of 64 rows. Usage: many_ranks.py LLMPROF GEN_RANKS"""
import json
import os
import subprocess
import sys
import tempfile

LP, GEN = sys.argv[1], sys.argv[2]
failed = 0


def check(ok, what, got=None):
    global failed
    print(("ok - " if ok else "not ok - ") + what + ("" if ok else f" ({got!r})"))
    failed += not ok


with tempfile.TemporaryDirectory(prefix="lp_many_ranks.") as tmp:
    run, out = os.path.join(tmp, "run"), os.path.join(tmp, "out")
    os.mkdir(run)
    subprocess.run([GEN, run, "64", "4"], check=True)
    p = subprocess.run([LP, "report", run, "-o", out, "--quiet"], capture_output=True, text=True)
    check(p.returncode == 0, "report of 64 generated ranks exits 0", p.stderr[-500:])
    with open(os.path.join(run, "offsets.txt")) as f:
        applied = {name: int(ns) for name, ns in (line.split() for line in f)}
    with open(os.path.join(out, "ranks.json")) as f:
        d = json.load(f)
    check(d["processes"] == 64 and d["one_host"] is False and d["clocks_aligned"] is True,
          "64 processes on several hosts, clocks aligned",
          (d["processes"], d["one_host"], d["clocks_aligned"]))
    hosts = {h["name"]: h for h in d["hosts"]}
    check(sorted(hosts) == sorted(applied) and d["hosts"][0]["name"] == "node0"
          and d["hosts"][0]["clock"] == "reference", "8 hosts, node0 the reference", sorted(hosts))
    off = {n: hosts[n]["offset_ns"] + applied[n] for n in applied if n in hosts}
    check(all(abs(e) <= 1000 for e in off.values()) and len(off) == 8,
          "every host's offset within 1 us of the one applied", off)
    check(all(h["clock"] == "collectives" and h["collectives"] == 8 * 4 * 32 and
              h["uncertainty_ns"] < 2000 for h in d["hosts"][1:]),
          "each from its 8 ranks' 128 all-reduces, uncertainty under 2 us",
          [(h["clock"], h["collectives"], h["uncertainty_ns"]) for h in d["hosts"]])
    check(d["waits"]["status"] == "done" and d["waits"]["collectives_matched"] == 128,
          "waits computed across the hosts", d["waits"])
    waits = sorted((r["wait_ns"], r["rank"]) for r in d["ranks"])
    check({rank % 8 for _, rank in waits[:8]} == {3}, "the 8 late ranks wait least",
          waits[:8])
    w = d["distributions"]["wait_ns"]
    check(w["processes"] == 64 and w["min"] == waits[0][0] and w["max"] == waits[-1][0]
          and w["p50"] == waits[31][0] and w["p90"] == waits[57][0],
          "wait distribution: nearest-rank p50 and p90, min and max", w)
    check(d["ranks"][w["min_at"]]["rank"] == waits[0][1], "the least wait's process named",
          (w["min_at"], waits[0]))
    with open(os.path.join(out, "ranks.md")) as f:
        md = f.read()
    check("| figure | processes | p50 | p90 | min (process) | max (process) |" in md,
          "ranks.md: the distribution table", md[:300])
    check(f"| wait in collectives | 64 |" in md and "| rank 0 (local 0) |" not in md,
          "ranks.md: no row per process past 16", None)
    check("| node7 | 8 | -" in md, "ranks.md: the Hosts table", None)
    with open(os.path.join(out, "ranks.csv")) as f:
        rows = f.read().splitlines()
    check(len(rows) == 1 + 64 * 2, "ranks.csv keeps every process's rows", len(rows))
print(f"# {failed} failed")
sys.exit(1 if failed else 0)
