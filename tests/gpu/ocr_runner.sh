#!/usr/bin/env bash
# Issue 47 on the GPU machine: the DeepSeek-OCR runner (examples/deepseek-ocr/run.py).
# MODE probe: random weights written for DeepSeek-OCR (v1, assembled from transformers' parts)
# and DeepSeek-OCR-2, their parameters part by part against `llmprof model`, and one short
# pass of the runner over two pages without llmprof.
# MODE check: the runner once more as committed (two pages, no profiler; a damaged page).
# MODE record: each model recorded over the bundled page set under `llmprof profile
# --repeat 3`, reported with --model, each repeat against the runner's own timer; one
# --operators run; small fixtures packed into $OUT/ocr-runs.tar.gz.
# Expects build/ carried. Writes $OUT/ocr-MODE-log.txt.
MODE=${1:-probe}
. "$(dirname "$0")/setup.sh" "ocr-$MODE"
R=examples/deepseek-ocr/run.py
M=${OCR_MODELS:-/tmp/llmprof-ocr-models}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$PY" -c 'import torch, transformers; print("torch", torch.__version__, "transformers",
transformers.__version__, "native DeepseekOcr:", hasattr(transformers,
"DeepseekOcrForConditionalGeneration"))'
init() { # NAME CONFIG: a model directory with random weights
    mkdir -p "$M/$1"
    cp "$2" "$M/$1/config.json"
    ls "$M/$1"/*.safetensors >/dev/null 2>&1 ||
        timeout 300 "$PY" "$R" --model-path "$M/$1" --init-weights 2>&1 | tail -5
    du -sh "$M/$1"
}
if [ "$MODE" = probe ]; then
    step "DeepSeek-OCR (v1): random weights, parameters"
    init ocr1 tests/configs/deepseek-ocr.json
    "$L" model "$M/ocr1/config.json" | sed -n '/## Parameters/,/^KV/p'
    step "DeepSeek-OCR-2: random weights, parameters"
    init ocr2 examples/deepseek-ocr2/config.json
    "$L" model "$M/ocr2/config.json" | sed -n '/## Parameters/,/^KV/p'
    mkdir -p "$T/two" && cp examples/deepseek-ocr/pages/page-0[14].png "$T/two/"
    for m in ocr1 ocr2; do
        step "runner, $m: two pages, 8 new tokens, no profiler"
        timeout 300 "$PY" "$R" --model-path "$M/$m" --input-dir "$T/two" --max-new-tokens 8 \
            --timer "$T/$m.json" 2>&1 | tail -8
        echo "exit ${PIPESTATUS[0]}"
    done
    step "runner: flash-attn asked"
    "$PY" "$R" --model-path "$M/ocr1" --use-flash-attn --dry-run; echo "exit $?"
    exit 0
fi
if [ "$MODE" = check ]; then
    # the runner as committed, once: v1 on two pages without the profiler, with Pillow where
    # PyTorch's Python has it; a damaged page refused before the model is built
    "$PY" -c 'import PIL; print("Pillow", PIL.__version__)' 2>&1 | tail -1
    init ocr1 tests/configs/deepseek-ocr.json
    mkdir -p "$T/two" "$T/bad"
    cp examples/deepseek-ocr/pages/page-0[14].png "$T/two/"
    step "runner, v1: two pages, 4 new tokens"
    timeout 200 "$PY" "$R" --model-path "$M/ocr1" --input-dir "$T/two" --max-new-tokens 4 \
        --timer "$T/t.json" 2>&1 | tail -4
    echo "exit ${PIPESTATUS[0]}"
    head -c 100 examples/deepseek-ocr/pages/page-01.png >"$T/bad/cut.png"
    step "runner, v1: a damaged page"
    start=$(date +%s)
    timeout 200 "$PY" "$R" --model-path "$M/ocr1" --input-dir "$T/bad" 2>&1 | tail -2
    echo "exit ${PIPESTATUS[0]} after $(($(date +%s) - start)) s"
    exit 0
fi
# ---- record: fixtures first (small, committed), then the whole page set ----
init ocr1 tests/configs/deepseek-ocr.json
init ocr2 examples/deepseek-ocr2/config.json
mkdir -p "$T/side" "$T/two" "$T/one" "$T/fix"
cp examples/deepseek-ocr/pages/page-0[14].png "$T/two/"
cp examples/deepseek-ocr/pages/page-04.png "$T/one/"
# profile --repeat N (ARGS after the name): each process writes its timer as timer.PID.json
# (sh execs Python: one process), moved into its repeat's directory afterwards
profile_repeats() { # OUT N MODEL INPUT NEW [runner options...]
    local out=$1 n=$2 model=$3 input=$4 new=$5
    shift 5
    timeout 280 "$L" profile --repeat "$n" -o "$out" --quiet -- sh -c 'exec "$0" "$@" \
        --timer "$SIDE/timer.$$.json"' "$PY" "$R" --model-path "$M/$model" --input-dir "$input" \
        --max-new-tokens "$new" "$@" 2>&1 | grep -v "^run.py: repeat" | tail -8
    echo "profile exit ${PIPESTATUS[0]}"
    for d in "$out"/repeat-*; do
        local pid
        pid=$(ls "$d"/trace.*.lpt | head -1 | sed 's/.*\.\([0-9]*\)\.lpt$/\1/')
        mv "$SIDE/timer.$pid.json" "$d/timer.json" 2>/dev/null || echo "no timer for $d"
    done
    cp "$M/$model/config.json" "$out/config.json"
}
compare() { # DIR: each repeat's TTFT/TPOT against its own timer, then repeats.md
    "$L" report "$1" --model "$1/config.json" --quiet; echo "report exit $?"
    for d in "$1"/repeat-*; do
        echo "$(basename "$d"):"
        "$PY" tests/gpu/compare_timer.py "$d/report.json" "$d/timer.json" 2>&1 | tail -3
    done
    sed -n '1,/^## /p' "$1/repeats.md" | head -40
    grep -A12 "^| figure" "$1/repeats.md" | head -14
}
export SIDE=$T/side
step "fixture: DeepSeek-OCR (v1), 2 pages, 8 new tokens, profile --repeat 3"
profile_repeats "$T/fix/ocr1-repeats" 3 ocr1 "$T/two" 8
compare "$T/fix/ocr1-repeats"
step "fixture: DeepSeek-OCR-2, same runner, 2 pages, 8 new tokens, profile --repeat 2"
profile_repeats "$T/fix/ocr2-repeats" 2 ocr2 "$T/two" 8
compare "$T/fix/ocr2-repeats"
step "fixture: DeepSeek-OCR (v1) with --operators (emit_nvtx, record_shapes), 1 page, 4 tokens"
profile_repeats "$T/fix/ocr1-operators" 1 ocr1 "$T/one" 4 --operators
grep -c "sizes = " "$T/fix/ocr1-operators"/repeat-1/report.json
sed -n '/## Operators/,/^## [A-Z]/p' "$T/fix/ocr1-operators"/repeat-1/report.md | head -30
tar -C "$T/fix" -czf "$OUT/ocr-fixtures.tar.gz" --exclude='*.html' --exclude='*.csv' \
    --exclude='report.*' --exclude='summary.md' --exclude='repeats.*' .
ls -la "$OUT"
for m in ocr1 ocr2; do
    step "whole page set: $m, 12 pages, 32 new tokens, profile --repeat 3"
    profile_repeats "$T/full-$m" 3 "$m" examples/deepseek-ocr/pages 32
    compare "$T/full-$m"
    cat "$T/full-$m/repeat-1/summary.md"
done
tar -C "$T" -czf "$OUT/ocr-full-reports.tar.gz" --exclude='*.lpt' full-ocr1 full-ocr2
ls -la "$OUT"

