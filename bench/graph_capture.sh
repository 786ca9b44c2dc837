#!/usr/bin/env bash
# What graph node records cost: capture and instantiation time of tests/gpu/graph_styles.py
# (compare: one graph of the whole step; piecewise: 17 graphs) recorded with graph node
# records on and off (LLMPROF_GRAPH_NODES=0), PAIRS interleaved pairs each. Prints one JSON
# line per run; bench/summarize.py is not needed: compare the capture_ms medians.
# Usage (on the GPU machine, build carried): bench/graph_capture.sh PAIRS OUT.jsonl TMPDIR
set -u
cd "$(dirname "$0")/.."
pairs=${1:-5} out=${2:-/tmp/graph_capture.jsonl} tmp=${3:-/tmp/graph_capture}
PY=$(command -v python3)
[ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
mkdir -p "$tmp"
: >"$out"
for i in $(seq "$pairs"); do
    for style in compare piecewise; do
        order="1 0"; [ $((i % 2)) -eq 0 ] && order="0 1" # alternate which runs first
        for nodes in $order; do
            rm -rf "$tmp/run"
            LLMPROF_GRAPH_NODES=$nodes build/bin/llmprof record --quiet -o "$tmp/run" -- \
                "$PY" tests/gpu/graph_styles.py --style "$style" --requests 1 --new-tokens 4 \
                --timer "$tmp/timer.json" >/dev/null 2>&1
            "$PY" -c 'import json,sys; t=json.load(open(sys.argv[1])); print(json.dumps({"pair": int(sys.argv[2]), "style": t["style"], "graph_nodes": int(sys.argv[3]), "capture_ms": t["capture_ms"]}))' \
                "$tmp/timer.json" "$i" "$nodes" | tee -a "$out"
            rm -f "$tmp/timer.json"
        done
    done
done
