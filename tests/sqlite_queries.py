#!/usr/bin/env python3
"""Every SQL block of docs/multi-gpu.md and docs/sqlite-schema.md runs as printed on real
exports and answers: the fixture `tp-hosts` (rank 1 recorded on a simulated second host
whose clock is 1.23 s ahead) exported as run.db, `tp-manual` as before.db beside it. The
traces table carries rank, host and the clock offset found; on the aligned clock every
collective's ends across the ranks lie within 50 us (1.23 s apart without it). Each work row's
api_id names the call of its trace with its correlation id. Usage: sqlite_queries.py LLMPROF
SOURCE_DIR"""
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

LP, SRC = sys.argv[1], sys.argv[2]
FIX = os.path.join(SRC, "tests", "fixtures")
failed = 0


def check(ok, what, got=None):
    global failed
    print(("ok - " if ok else "not ok - ") + what + ("" if ok else f" ({got!r})"))
    failed += not ok


with open(os.path.join(SRC, "docs", "multi-gpu.md")) as f:
    blocks = re.findall(r"```sql\n(.*?)```", f.read(), re.S)
check(len(blocks) >= 4, "docs/multi-gpu.md has its SQL blocks", len(blocks))
with open(os.path.join(SRC, "docs", "sqlite-schema.md")) as f:
    schema_blocks = re.findall(r"```sql\n(.*?)```", f.read(), re.S)
check(len(schema_blocks) >= 3, "docs/sqlite-schema.md has its SQL blocks", len(schema_blocks))
blocks += schema_blocks
with tempfile.TemporaryDirectory(prefix="lp_sqlq.") as tmp:
    for name, fx in (("run.db", "tp-hosts"), ("before.db", "tp-manual")):
        p = subprocess.run([LP, "export", os.path.join(FIX, fx), "--sqlite",
                            os.path.join(tmp, name)], capture_output=True, text=True)
        check(p.returncode == 0, f"export --sqlite of {fx}", p.stderr[-300:])
    os.chdir(tmp)  # ATTACH 'before.db' as printed
    db = sqlite3.connect("run.db")
    rows = db.execute("SELECT rank, host, clock_offset_ns FROM traces ORDER BY rank").fetchall()
    check(len(rows) == 2 and rows[0] == (0, "vm", 0) and rows[1][:2] == (1, "sim-host-b")
          and abs(rows[1][2] + 1234567890) <= 50000, "traces: rank, host and the offset found",
          rows)
    for i, sql in enumerate(blocks):
        first = sql.strip().splitlines()[0]
        try:
            db.executescript(sql)  # every statement, as the sqlite3 shell runs them
            last = [s for s in sql.split(";") if s.strip()][-1]
            got = db.execute(last).fetchall()  # the last one again, for its rows
        except sqlite3.Error as e:
            got = repr(e)
        check(isinstance(got, list) and len(got) > 0, f"block {i + 1} runs and answers: {first}",
              got)
        if "end_spread_us" in sql and isinstance(got, list) and got:
            check(got[0][1] == 2 and got[0][2] < 50, "the largest end spread on the aligned "
                  "clock is under 50 us", got[0])
        if "group_members" in sql and isinstance(got, list):
            check([(r[0], r[2], r[3], r[4]) for r in got] ==
                  [(0, 2, 0, "vm"), (0, 2, 1, "sim-host-b")] and "all_reduce" in got[0][1],
                  "groups: the TP group of both ranks, across the two hosts", got)
        if "ATTACH" in sql:
            db.execute("DETACH before")
    for table in ("kernels", "memcpys", "memsets"):
        tied, same = db.execute(f"SELECT COUNT(*), SUM(a.trace_id = w.trace_id AND a.correlation"
                                f" = w.correlation) FROM {table} w JOIN api_calls a USING "
                                f"(api_id)").fetchone()
        untied = db.execute(f"SELECT COUNT(*) FROM {table} w WHERE api_id IS NULL AND EXISTS "
                            f"(SELECT 1 FROM api_calls a WHERE a.trace_id = w.trace_id AND "
                            f"a.correlation = w.correlation AND w.correlation > 0)").fetchone()[0]
        check((table != "kernels" or tied > 0) and same == tied and untied == 0,
              f"{table}: api_id is the call with its trace and correlation id, where one was "
              f"recorded", (tied, same, untied))
    calls = db.execute("SELECT MIN(api_id), MAX(api_id), COUNT(*) FROM api_calls").fetchone()
    check(calls[0] == 1 and calls[1] == calls[2], "api_calls numbered 1 on across the traces",
          calls)
print(f"# {failed} failed")
sys.exit(1 if failed else 0)
