#!/usr/bin/env bash
# Issue 15 on the GPU machine, one call: where the default's cost over CUPTI's floor goes on
# eager launches, and what CUPTI's device buffers change on a graph decode recorded node by
# node. Expects build/ carried (build/lib/libcupti_phases.so from CMake, build/gpu/launch_split
# from tests/gpu/build.sh).
#   1. The per-launch split inside one process (the phases of bench/cupti_phases.c): in C
#      (bench/launch_split.cu), and on HF eager decode steps and PyTorch ops
#      (bench/torch_split.py). $SPLIT_PROBES=0 skips it.
#   2. HF eager decode (hf_loop.py $SPLIT_ARGS), interleaved rounds of $SPLIT_MODES (default
#      "none floor default") until $SPLIT_SECONDS (default 600) less the graph part have
#      passed; summarised three ways (median request, least disturbed request, 10th
#      percentile of the steps' host times), again from the main thread's CPU time per
#      step (--cpu), and from the steps a one-in-8 window run leaves outside its windows
#      (--outside 8).
#   3. The CUDA-graph decode, modes none graphs-node graphs-node-devbuf, $SPLIT_GRAPH_ROUNDS
#      rounds (default 3; 0: skipped), and each recorded run's "Host time CUPTI recorded".
# Writes $OUT/overhead_split-log.txt, $OUT/torch_split.txt, $OUT/eager.jsonl and
# $OUT/graph-devbuf.jsonl.
. "$(dirname "$0")/setup.sh" overhead_split
start=$(date +%s)
total=${SPLIT_SECONDS:-600} graph_rounds=${SPLIT_GRAPH_ROUNDS:-3}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$PY" -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"

if [ "${SPLIT_PROBES:-1}" != 0 ]; then
    step "launch_split (one process)"
    timeout 120 build/gpu/launch_split 20000 15
    step "torch_split (one process)"
    timeout 240 "$PY" bench/torch_split.py --rounds 10 | tee "$OUT/torch_split.txt" | grep -v '^{'
fi

step "HF eager decode: ${SPLIT_MODES:-none floor default}"
LLMPROF_BENCH_UNTIL=$((start + total - 60 - graph_rounds * 45)) \
    LLMPROF_BENCH_MODES="${SPLIT_MODES:-none floor default}" \
    LLMPROF_BENCH_CMD="$PY tests/gpu/hf_loop.py --new-tokens 64 --requests 3 --step-ranges ${SPLIT_ARGS:-}" \
    bash bench/overhead.sh 20 "$OUT/eager.jsonl" "$T/eager" | grep -v '^{'
pairs=(default/floor windowed/floor launch-driver/default launch-driver/floor
       windowed/windowed-bare windowed/floor-stop-disable windowed-bare/floor-stop-disable
       windowed-bare/windowed-never windowed-never/floor-stop-disable kernels/floor
       launches/kernels default/launches)
for stat in "" --min --p10 --cpu "--cpu --p10" "--outside 8" "--outside 8 --p10"; do
    python3 bench/summarize.py "$OUT/eager.jsonl" $stat "${pairs[@]}"
done

if [ "$graph_rounds" -gt 0 ]; then
    step "CUDA-graph decode node by node: CUPTI's device buffers"
    LLMPROF_BENCH_MODES="none graphs-node graphs-node-devbuf" \
        LLMPROF_BENCH_CMD="$PY tests/gpu/graph_decode.py --new-tokens 129 --requests 2" \
        bash bench/overhead.sh "$graph_rounds" "$OUT/graph-devbuf.jsonl" "$T/graph" | grep -v '^{'
    python3 bench/summarize.py "$OUT/graph-devbuf.jsonl" graphs-node-devbuf/graphs-node
    for d in "$T"/graph/graphs-node*-0; do
        step "$(basename "$d"): what CUPTI recorded of its own time"
        "$L" info "$d" | grep -E "cupti_device|overhead" | head -6
        "$L" report "$d" --quiet -o "$d/rep" &&
            sed -n '/^## Host time CUPTI recorded/,/^## /p' "$d/rep/report.md" | head -30
    done
fi
echo "elapsed $(($(date +%s) - start)) s"
