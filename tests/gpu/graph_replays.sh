#!/usr/bin/env bash
# Issue 15 on the GPU machine, CUDA graph replays recorded whole (record --graphs replay, the
# default) beside each replayed kernel (--graphs node): the CUDA-graph decode recorded both
# ways (records, steps, TPOT, the graphs table), with one step in eight (--capture), and
# torch.compile reduce-overhead and piecewise graphs recorded whole (they must run to their
# end). Then the probe of what CUPTI does when graph-level records are switched
# (graph_trace_probe). Expects build/ carried. Writes $OUT/graph_replays-log.txt and
# $OUT/graph-replays-runs.tar.gz (fixtures).
. "$(dirname "$0")/setup.sh" graph_replays
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

# DIR: info's lines, the report's headline and graph lines, and per stage its figures
show() {
    "$L" info "$1" | grep -E "graphs|capture|records|lost|launch|^    -|left out"
    "$L" report "$1" --quiet || echo "report failed: $?"
    grep -E "TTFT|TPOT|replays were recorded whole|^\| (decode|prefill) \| [0-9]+ \| [0-9]+ \|" \
        "$1/report.md" | cut -c1-260
    python3 - "$1" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1] + "/report.json"))
print("replays whole", j["timeline"].get("graph_replays_whole"))
for s in j["stages"]:
    print(" ", s["name"], "occ", s.get("occurrences"), "kernels", s.get("kernels"),
          "graph_replays", s.get("graph_replays"), "gpu_ns", s.get("gpu_ns"),
          "steps", (s.get("steps") or {}).get("count"),
          "graph replay ns", s["categories_ns"].get("graph replay"))
for g in j.get("graphs", []):
    print("  graph", g["graph_id"], g["stage"], "replays", g["replays"], "kernels per replay",
          g["kernels_per_replay"], "whole", g.get("recorded_whole"))
PYEOF
}
rec() { # NAME ARGS...: record NAME with record ARGS and the command after --
    local name=$1; shift
    step "$name"
    timeout 400 "$L" record -o "$T/$name" "$@" | tail -1
    local rc=${PIPESTATUS[0]}
    echo "exit $rc"
    [ "$rc" -eq 0 ] || fails=$((fails + 1))
    show "$T/$name"
}
fails=0
GR=("$PY" tests/gpu/graph_decode.py --requests 2 --new-tokens 33 --step-ranges)
rec graph-replay -- "${GR[@]}"
rec graph-node --graphs node -- "${GR[@]}"
rec graph-replay-nvtx8 --capture 'nvtx:^step$/8' -- "${GR[@]}"
rec compile-replay -- "$PY" tests/gpu/graph_styles.py --style compile
rec piecewise-replay -- "$PY" tests/gpu/graph_styles.py --style piecewise
step "graph_trace_probe"
"$B/gpu/graph_trace_probe"
step "pack"
tar -C "$T" --exclude=report.html --exclude='*.csv' --exclude=report.json \
    -czf "$OUT/graph-replays-runs.tar.gz" graph-replay graph-replay-nvtx8 compile-replay
ls -la "$OUT"; du -sh "$T"/*
echo "$fails recorded programs failed"
[ "$fails" -eq 0 ]
