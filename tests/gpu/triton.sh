#!/usr/bin/env bash
# Issue 46 on the H200: a decoder whose matmuls are all Triton kernels (triton_decoder.py, no
# cuBLAS): recorded with its NVTX ranges, with --counters, and without any range; each report
# beside the script's own timer (compare_timer.py).
# Writes triton-log.txt and triton-fixtures.tar.gz (each run: trace, meta.json, timer.json,
# config.json) under $OUT. Expects build/ carried.
. "$(dirname "$0")/setup.sh" triton
fails=0
S=tests/gpu/triton_decoder.py
run() { # NAME RECORD-OPTIONS... -- SCRIPT-OPTIONS...
    local name=$1; shift
    step "$name"
    local opts=()
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    mkdir -p "$T/fx"
    if ! timeout 300 "$L" record -o "$T/fx/$name" "${opts[@]}" -- "$PY" $S "$@" \
        --timer "$T/timer-$name.json" --config-out "$T/config-$name.json" >"$T/$name.out"; then
        echo "STEP FAILED: $name"; fails=$((fails + 1)); return
    fi
    mv "$T/timer-$name.json" "$T/fx/$name/timer.json"
    mv "$T/config-$name.json" "$T/fx/$name/config.json"
    ls -la "$T/fx/$name"
    "$L" info "$T/fx/$name" | head -30
    "$L" report "$T/fx/$name" --model "$T/fx/$name/config.json" -o "$T/rep-$name" >/dev/null &&
        sed -n 1,60p "$T/rep-$name/summary.md" &&
        "$PY" tests/gpu/compare_timer.py "$T/rep-$name/report.json" "$T/fx/$name/timer.json"
    grep -n -A8 "## Hardware counters" "$T/rep-$name/report.md" | cut -c1-300
}
step "machine"
nvidia-smi --query-gpu=name,driver_version --format=csv
"$PY" -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
step "smoke: unprofiled, twice"
"$PY" $S --requests 2 | cut -c1-600 || { echo "STEP FAILED: smoke"; exit 1; }
"$PY" $S --requests 2 | cut -c1-600
run triton-dec --
run triton-dec-ctr --counters --
run triton-dec-nonvtx -- --no-nvtx
step "fixtures"
tar -C "$T/fx" -czf "$OUT/triton-fixtures.tar.gz" . && ls -la "$OUT"
echo "failures: $fails"
