#!/usr/bin/env bash
# Serving engines (issue 45), on the H200: the miniature engine (serve_engine.py) eager and
# with CUDA-graph decode buckets, each unmarked and with the request convention, graphs also
# recorded node by node, a profiler window of a running server (--capture cuda-profiler) and
# a window opened and closed by SIGUSR1 (--capture signal),
# and transformers' generate_batch and its ContinuousBatchingManager with requests arriving
# over time, all without stage ranges. Each run's report beside it.
# Writes serving-log.txt and serving-fixtures.tar.gz (each run: trace, meta.json, the
# program's own timings as truth.json, config.json) under $OUT. Expects build/ carried.
. "$(dirname "$0")/setup.sh" serving
fails=0
run() { # NAME RECORD-OPTIONS... -- PROGRAM ARGS...
    local name=$1; shift
    step "$name"
    local opts=()
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    mkdir -p "$T/fx"
    if ! "$L" record -o "$T/fx/$name" "${opts[@]}" -- "$PY" "$@" --truth "$T/truth-$name.json" \
        --config-out "$T/config-$name.json"; then
        echo "STEP FAILED: $name"; fails=$((fails + 1)); return
    fi
    mv "$T/truth-$name.json" "$T/fx/$name/truth.json"
    mv "$T/config-$name.json" "$T/fx/$name/config.json"
    ls -la "$T/fx/$name"
    "$L" info "$T/fx/$name" | head -30
    "$L" report "$T/fx/$name" --model "$T/fx/$name/config.json" -o "$T/rep-$name" >/dev/null &&
        sed -n 1,40p "$T/rep-$name/summary.md"
}
E=tests/gpu/serve_engine.py
step "machine"
nvidia-smi --query-gpu=name,driver_version --format=csv
"$PY" -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
step "smoke: the engine unprofiled, 4 requests"
if ! "$PY" $E --requests 4 --layers 2; then echo "STEP FAILED: smoke"; exit 1; fi
"$PY" $E --requests 4 --layers 2 --graphs || { echo "STEP FAILED: smoke graphs"; exit 1; }
run serve-eager -- $E
run serve-eager-mark -- $E --mark
run serve-graphs -- $E --graphs
run serve-graphs-mark -- $E --graphs --mark
run serve-graphs-node --graphs node -- $E --graphs --mark
run serve-window --capture cuda-profiler -- $E --graphs --mark --profile-iters 40:100
run serve-signal --capture signal -- $E --mark --signal-iters 30:60
run hf-batch -- tests/gpu/hf_batch.py
run hf-cb -- tests/gpu/hf_cb.py
step "unprofiled, for the engine's own timings beside the profiled ones"
for v in "" --graphs; do "$PY" $E $v --truth "$T/plain$v.json"; done
cp "$T"/plain*.json "$T/fx/" 2>/dev/null
tar -C "$T/fx" -czf "$OUT/serving-fixtures.tar.gz" .
ls -la "$OUT"
echo "failed steps: $fails"
exit $fails
