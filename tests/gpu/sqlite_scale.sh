#!/usr/bin/env bash
# The SQLite export of the long real serving trace that report_scale.sh recorded last
# (/tmp/lpscale/run), on the H200 (issue 49): this build's export and OLD's (another
# build's llmprof), interleaved, ROUNDS rounds, each run's max RSS and CPU time; then every
# row of OLD's database against this build's, in the trace's order: the kernels and calls
# (tables in OLD's schema, views in this one's) column by column, every other table whole.
# Log: $OUT/sqlite-scale.txt. Usage: sqlite_scale.sh ROUNDS OLD
set -u
cd "$(dirname "$0")/../.."
L=$PWD/build/bin/llmprof
OLD=$2
PY=$(command -v python3)
[ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
OUT=${OUT:-/tmp/llmprof-gpu-out}
T=/tmp/lpscale
mkdir -p "$OUT"
exec > >(tee "$OUT/sqlite-scale.txt") 2>&1
[ -d $T/run ] || { echo "no recorded run in $T/run: run report_scale.sh first"; exit 1; }
measure() { "$PY" tests/gpu/measure.py "$@"; }
for r in $(seq "$1"); do
    rm -f $T/new.db $T/old.db
    measure "new round $r" "$L" export $T/run --sqlite $T/new.db
    measure "old round $r" "$OLD" export $T/run --sqlite $T/old.db
done
ls -l $T/new.db $T/old.db
"$PY" - $T/old.db $T/new.db <<'PYEOF'
import itertools, sqlite3, sys
old, new = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2])
def same(a, b):
    n = 0
    end = object()
    for x, y in itertools.zip_longest(a, b, fillvalue=end):
        if x is end or y is end:
            return f"row counts differ after {n}"
        if x != y:
            return f"row {n} differs: {x} / {y}"
        n += 1
    return n
def order(db, t):
    """rows in the order written: kernels by kernel_id (a view, this schema) else by rowid;
    a table WITHOUT ROWID by its primary key"""
    info = db.execute(f"PRAGMA table_info({t})").fetchall()
    if t == "kernels":
        return "trace_id, kernel_id" if any(r[1] == "kernel_id" for r in info) else \
            "trace_id, rowid"
    if t == "api_calls":
        return "api_id"
    if db.execute(f"SELECT 1 FROM sqlite_master WHERE name = ? AND sql LIKE '%WITHOUT ROWID%'",
                  (t,)).fetchone():
        return ", ".join(r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5]))
    return "rowid"
bad = 0
tables = [n for (n,) in old.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND "
                                     "name NOT IN ('kernels', 'api_calls')")]
for t in ["kernels", "api_calls"] + tables:
    cols = ", ".join(r[1] for r in old.execute(f"PRAGMA table_info({t})"))
    got = same(old.execute(f"SELECT {cols} FROM {t} ORDER BY {order(old, t)}"),
               new.execute(f"SELECT {cols} FROM {t} ORDER BY {order(new, t)}"))
    print(f"{t}: {got if isinstance(got, str) else f'{got} rows, the same'}")
    bad += isinstance(got, str)
print("every row the same" if not bad else f"{bad} tables differ")
PYEOF
