#!/usr/bin/env bash
# Issue 15 on the GPU machine: record --finalize (CUPTI finalized and set up again between
# capture windows: window.c, attach.c).
# 1. bench/window_cost, one process per run, against no profiler: what a closed window
#    leaves behind without the finalize (capture-bare) and with it (capture-bare-finalize,
#    capture-finalize), the finalize right after the close (LLMPROF_FINALIZE_AFTER_MS=0: the
#    program's phase after its window lasts less than the default second).
# 2. tests/gpu/finalize_threads.py, windows every 10 steps, finalizing after each: the main
#    thread alone (CUPTI finalized), and with four more threads launching (never finalized:
#    that corrupted the heap). Exit status, identical results, info's capture lines.
# 3. HF eager decode, --finalize, one step in eight (NVTX) and around the warm-up request
#    (cudaProfilerStart/Stop): exit status, info's capture lines, report.
# 4. window_threads.sh (threads, a graph capture midway, torch.profiler), without it.
# Expects build/ carried. Writes $OUT/finalize-log.txt (and the logs of the scripts it runs).
. "$(dirname "$0")/setup.sh" finalize
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
fails=0
# NAME ARGS...: record ARGS and the program after --, its exit status and info's lines
rec() {
    local name=$1; shift
    timeout 300 "$L" record -o "$T/$name" "$@" 2>&1 | grep -v '^llmprof: 1 trace' | tail -3
    local rc=${PIPESTATUS[0]}
    echo "$name: exit $rc"
    [ "$rc" -eq 0 ] || fails=$((fails + 1))
    "$L" info "$T/$name" | grep -E "capture|finalized|opened on|records|lost|left out"
}
step "window_cost"
LLMPROF_FINALIZE_AFTER_MS=0 WINDOW_ROUNDS=${FIN_ROUNDS:-10} \
    WINDOW_MODES='none capture-bare capture-bare-finalize capture-finalize' \
    bash tests/gpu/window_cost.sh | tail -8
for r in "$T"/../llmprof-window_cost.*/runs/capture-bare-finalize-0 \
    "$T"/../llmprof-window_cost.*/runs/capture-finalize-0; do
    [ -d "$r" ] && "$L" info "$r" | grep -E "capture|finalized|lost"
done
step "finalize_threads.py"
for n in 0 4; do
    LLMPROF_FINALIZE_AFTER_MS=0 rec "threads$n" --capture cuda-profiler --finalize -- \
        "$PY" tests/gpu/finalize_threads.py --threads "$n"
done
for spec in 'nvtx:^step$/8' cuda-profiler; do
    step "HF eager decode, --capture $spec --finalize"
    args=(--new-tokens 64 --requests 3)
    [ "$spec" = cuda-profiler ] && args+=(--cuda-profiler warmup) || args+=(--step-ranges)
    rec "hf-${spec%%:*}" --capture "$spec" --finalize -- "$PY" tests/gpu/hf_loop.py "${args[@]}"
    "$L" report "$T/hf-${spec%%:*}" --quiet || { echo "report failed: $?"; fails=$((fails + 1)); }
done
step "window_threads"
bash tests/gpu/window_threads.sh | tail -30 || fails=$((fails + 1))
step "summary"
echo "$fails runs or reports failed"
[ "$fails" -eq 0 ]
