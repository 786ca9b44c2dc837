#!/usr/bin/env bash
# Issue 15 on the GPU machine: capture windows must never leave CUPTI's bookkeeping of calls
# corrupt (disabling a callback while a call of it is in flight did: launch.c).
# (1) callback_toggle_probe's phases (tests/gpu/callback_toggle_probe.cu), TOGGLE_PROBES times;
# (2) the piecewise CUDA-graph decode under --capture graphs/8, TOGGLE_ROUNDS rounds: each
# run's exit status, replays recorded whole (want 102), and in its trace the launch records
# whose call exited twice and the most launch records sharing one correlation id (want 0
# and 1); with TOGGLE_OLD_LIB (an absolute path to a libllmprof.so from before a change) the
# same with that library in each round, shown but not counted as failures.
# Expects build/ carried. Writes $OUT/toggle-log.txt.
. "$(dirname "$0")/setup.sh" toggle
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
fails=0
step "probe"
# the ways of switching that were sound on the H200 (CUPTI 13.0); thread and nested-off,
# which disable a callback with a call in flight, were not (docs/benchmarks.md)
sound="none between nested-on graph-on exit-off activity activity-busy graph-activity graph-window"
for i in $(seq "${TOGGLE_PROBES:-2}"); do
    out=$(timeout 300 "$B/gpu/callback_toggle_probe" "" "${TOGGLE_ITERS:-20000}")
    rc=$?
    echo "$out"
    echo "probe exit $rc (2: some phase not sound, as expected)"
    for ph in $sound; do
        grep -qE "^$ph +sound$" <<<"$out" || { echo "MISMATCH: $ph not sound"; fails=$((fails + 1)); }
    done
done
step "piecewise graphs/8"
libs=(new)
[ -n "${TOGGLE_OLD_LIB:-}" ] && libs+=(old)
for r in $(seq "${TOGGLE_ROUNDS:-6}"); do
    for lib in "${libs[@]}"; do
        d=$T/$lib-$r
        envs=()
        [ "$lib" = old ] && envs=("LLMPROF_LIB=$TOGGLE_OLD_LIB")
        env ${envs[@]+"${envs[@]}"} timeout 120 "$L" record --quiet -o "$d" --capture 'graphs/8' -- \
            "$PY" tests/gpu/graph_styles.py --style piecewise >"$d.log" 2>&1
        rc=$?
        "$L" export "$d" --sqlite "$d.db" >/dev/null 2>&1
        line="$lib $r exit $rc $("$L" info "$d" 2>/dev/null | grep -oE '[0-9]+ CUDA graph replays recorded whole') $("$PY" - "$d.db" <<'PYEOF'
import sqlite3, sys
try:
    c = sqlite3.connect(sys.argv[1])
    twice = c.execute("select count(*) from api_calls a join api_calls b on a.trace_id=b.trace_id"
                      " and a.start_ns=b.start_ns and a.thread=b.thread and a.cbid=b.cbid"
                      " and a.rowid<b.rowid").fetchone()[0]
    same = c.execute("select max(n) from (select count(*) n from api_calls where correlation>0"
                     " group by trace_id, correlation)").fetchone()[0]
    print(f"exits-twice {twice} most-per-id {same}")
except Exception as e:
    print("no trace:", e)
PYEOF
)"
        echo "$line"
        grep -iE "corrupt|abort|error" "$d.log" | head -3
        if [ "$lib" = new ] && { [ "$rc" -ne 0 ] || [[ "$line" != *" 102 CUDA graph"* ]] ||
            [[ "$line" != *"exits-twice 0 most-per-id 1"* ]]; }; then
            fails=$((fails + 1))
        fi
    done
done
echo "$fails probe phases or runs with the build's library failed"
[ "$fails" -eq 0 ]
