#!/usr/bin/env bash
# llmprof's main job on an embedded default. With an NVIDIA GPU: record the bundled sample
# workload (the Llama-style decoder when PyTorch and transformers are installed, else the
# CUDA C workload) and report on it. Without one: report on the bundled MoE run recorded on
# an H200. Either way it ends in the report (report.md, summary.md, report.html ...).
# Usage: demo.sh [RUN_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
lp_deps
# the demo runs no test: the configure says nothing about the tests' own tools (chromium)
LLMPROF_NO_TEST_WARNINGS=1 cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" >/dev/null
LP=build/bin/llmprof
MODEL=(--model tests/configs/llama-bench-1.1b.json --prefill-logits all)
run=${1:-llmprof-demo-$(date +%Y%m%d-%H%M%S)}
if ! nvidia-smi -L >/dev/null 2>&1; then
    # HF DeepSeek-V2-Lite (random weights) run the common way: one range per prompt and per
    # decode loop, no token counts, an unnamed warm-up request first
    fix=tests/fixtures/hf-moe
    echo "No NVIDIA GPU here: reporting on the bundled run recorded on an H200 ($fix) into $run/."
    "$LP" report "$fix" -o "$run" --model "$fix/config.json"
    echo "open $run/report.html in a browser; $run/report.md has everything"
    exit 0
fi
if [ ! -e build/lib/libllmprof.so ]; then
    echo "demo.sh: the collector was not built (no CUPTI headers under /usr/local/cuda)" >&2
    exit 1
fi
PY=$(command -v python3 || true)
if [ -n "$PY" ] && "$PY" -c 'import torch, transformers' 2>/dev/null; then
    "$LP" profile -o "$run" "${MODEL[@]}" -- "$PY" bench/llama_decode.py --new-tokens 32 --runs 1
else
    bash tests/gpu/build.sh
    "$LP" profile -o "$run" -- build/gpu/workload
fi
echo "open $run/report.html in a browser; $run/report.md has everything"
