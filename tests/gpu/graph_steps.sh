#!/usr/bin/env bash
# Issue 15 on the GPU machine: capture windows on a step count for programs that name no
# steps (record --capture 'graphs[@FIRST[-LAST]][/EVERY]'). The CUDA-graph decode without step
# ranges (one replay per step; warm-up and 2 requests of 32 steps: 96 steps) and the
# piecewise graphs (17 replays per step) are recorded with chosen steps; each window must
# hold whole steps: its replays (or, node by node, its kernels) as many as the steps it
# covers times a step's. Expects build/ carried. Writes $OUT/graph_steps-log.txt and
# $OUT/graph-steps-runs.tar.gz (fixtures).
. "$(dirname "$0")/setup.sh" graph_steps
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
fails=0

# NAME WINDOWS REPLAYS KERNELS RECORD-ARGS... -- COMMAND: records, then checks the count of
# windows, of whole replays and of kernels recorded one by one (-: not checked)
rec() {
    local name=$1 windows=$2 replays=$3 kernels=$4
    shift 4
    step "$name"
    timeout 300 "$L" record -o "$T/$name" "$@" | tail -1
    local rc=${PIPESTATUS[0]}
    echo "exit $rc"
    "$L" info "$T/$name" | grep -E "graphs|capture|records|lost|left out|windows"
    "$L" report "$T/$name" --quiet || { echo "report failed: $?"; rc=1; }
    grep -E "Capture windows|TPOT" "$T/$name/report.md" | cut -c1-300
    python3 - "$T/$name" "$windows" "$replays" "$kernels" <<'PYEOF' || rc=1
import json, sys
d, want = sys.argv[1], sys.argv[2:]
j = json.load(open(d + "/report.json"))
c = j["capture"]
replays = j["timeline"].get("graph_replays_whole") or 0
kernels = sum(s.get("kernels") or 0 for s in j["stages"])
got = [str(c["windows"]), str(replays), str(kernels)]
print("windows", got[0], "replays whole", got[1], "kernels one by one", got[2],
      "energy in windows", c.get("energy_j"), "J")
for s in j["stages"]:
    print(" ", s["name"], "occ", s.get("occurrences"), "kernels", s.get("kernels"),
          "graph_replays", s.get("graph_replays"), "steps", (s.get("steps") or {}).get("count"))
bad = [f"{k}: {g} (want {w})" for k, g, w in zip(("windows", "replays", "kernels"), got, want)
       if w != "-" and g != w]
print("MISMATCH " + "; ".join(bad) if bad else "counts as expected")
sys.exit(1 if bad else 0)
PYEOF
    [ "$rc" -eq 0 ] || fails=$((fails + 1))
}
GD=("$PY" tests/gpu/graph_decode.py --requests 2 --new-tokens 33)
# steps 40-47 (the first timed request's 8th to 15th): one window of 8 replays
rec graphs-40-47 1 8 - --capture 'graphs@40-47' -- "${GD[@]}"
# one step in eight of 96: 12 windows of one replay each
rec graphs-8 12 12 - --capture 'graphs/8' -- "${GD[@]}"
# node by node: 12 windows of one replay's kernel nodes each (612 per replay, plus the next
# step's two eager copies, which come before its launch)
rec graphs-8-node 12 0 - --graphs node --capture 'graphs/8' -- "${GD[@]}"
# piecewise graphs, 8 layers: 17 launches per step, 15 steps per request, warm-up and 2
# requests: 45 steps; one step in eight: steps 1, 9, ..., 41: 6 windows of 17 replays
rec piecewise-8 6 102 - --capture 'graphs/8' -- "$PY" tests/gpu/graph_styles.py --style piecewise
step "pack"
tar -C "$T" --exclude=report.html --exclude='*.csv' --exclude=report.json \
    -czf "$OUT/graph-steps-runs.tar.gz" graphs-8 piecewise-8
ls -la "$OUT"
echo "$fails recorded programs failed"
[ "$fails" -eq 0 ]
