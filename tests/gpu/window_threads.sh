#!/usr/bin/env bash
# Issue 15 on the GPU machine: capture windows under several threads, a CUDA-graph capture
# that begins while other threads' windows close, and torch.profiler as a second CUPTI
# client (tests/gpu/window_threads.py: every step's result must equal the one computed
# alone). Each recorded with windows on one step in four, replays whole and node by node,
# beside a full record. Expects build/ carried. Writes $OUT/window_threads-log.txt.
. "$(dirname "$0")/setup.sh" window_threads
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
fails=0
# NAME ARGS...: record ARGS and the program's options after --, its line, info and report
run() {
    local name=$1; shift
    step "$name"
    timeout 300 "$L" record -o "$T/$name" "$@" | tail -1
    local rc=${PIPESTATUS[0]}
    echo "exit $rc"
    [ "$rc" -eq 0 ] || fails=$((fails + 1))
    "$L" info "$T/$name" | grep -E "capture|graphs|records|lost|launches|^    -|left out"
    "$L" report "$T/$name" --quiet --stage 'decode=^step$' ||
        { echo "report failed: $?"; fails=$((fails + 1)); }
}
P=("$PY" tests/gpu/window_threads.py)
run all -- "${P[@]}"
run nvtx4 --capture 'nvtx:^step$/4' -- "${P[@]}"
run nvtx4-node --graphs node --capture 'nvtx:^step$/4' -- "${P[@]}"
run nvtx4-profiler --capture 'nvtx:^step$/4' -- "${P[@]}" --torch-profiler
run all-profiler -- "${P[@]}" --torch-profiler
step "summary"
echo "$fails runs or reports failed"
[ "$fails" -eq 0 ]
