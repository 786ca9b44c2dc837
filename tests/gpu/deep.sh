#!/usr/bin/env bash
# Issue 14 on the GPU machine, first step: what Nsight Compute gives for the kernels a deep
# dive will profile, and how long it takes. Runs ncu with the stage-2 sections on the three
# GEMMs of counters_check and on the top GEMM kernels of the HF Llama harness's prefill and
# decode (NVTX-filtered, a few instances after warm-up), times each run, and exports each
# report's raw page as CSV. Expects build/ carried (gpu/). Writes $OUT/deep-log.txt and
# $OUT/deep-runs.tar.gz (the .ncu-rep files, their CSV, the timings: fixtures for the importer).
. "$(dirname "$0")/setup.sh" deep
SECTIONS=(--section SpeedOfLight --section Occupancy --section LaunchStats
    --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis
    --section SpeedOfLight_RooflineChart --section WarpStateStats --section SchedulerStats)

step "ncu"
command -v ncu && ncu --version
ncu --list-sections 2>&1 | head -60 >"$T/sections.txt"
cat "$T/sections.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv

# NAME then ncu options then -- CMD...: profile, time, export the raw page
deep() {
    local name=$1; shift
    local opts=()
    while [ "$1" != "--" ]; do opts+=("$1"); shift; done
    shift
    local t0 t1
    t0=$EPOCHREALTIME
    timeout 500 ncu "${SECTIONS[@]}" --clock-control none "${opts[@]}" -o "$T/$name" -f "$@" \
        >"$T/$name.out" 2>&1
    echo "ncu exit $?"
    t1=$EPOCHREALTIME
    echo "$name: $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s wall"
    echo "$name $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }")" >>"$T/timings.txt"
    tail -5 "$T/$name.out"
    ncu -i "$T/$name.ncu-rep" --csv --page raw >"$T/$name.raw.csv" 2>"$T/$name.raw.err"
    echo "raw csv: $(wc -l <"$T/$name.raw.csv") lines, $(head -1 "$T/$name.raw.csv" | tr ',' '\n' | wc -l) columns"
    ncu -i "$T/$name.ncu-rep" --csv --page details >"$T/$name.details.csv" 2>/dev/null
}

step "the program alone (for the time ncu adds)"
t0=$EPOCHREALTIME; "$B/gpu/counters_check" >/dev/null; t1=$EPOCHREALTIME
echo "counters_check alone: $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s"

step "counters_check: the three GEMMs' second run (launch-skip 3, count 3)"
deep deep-check --launch-skip 3 --launch-count 3 -- "$B/gpu/counters_check"

step "HF Llama harness alone"
t0=$EPOCHREALTIME
"$PY" tests/gpu/hf_loop.py --arch llama --new-tokens 16 --requests 1 >/dev/null
t1=$EPOCHREALTIME
echo "hf_loop alone: $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s"

step "HF Llama decode: nvjet GEMMs inside decode, after warm-up (4 instances)"
deep deep-hf-decode --nvtx --nvtx-include "decode/" -k regex:nvjet --launch-skip 200 \
    --launch-count 4 -- "$PY" tests/gpu/hf_loop.py --arch llama --new-tokens 16 --requests 1

step "HF Llama prefill: nvjet GEMMs inside prefill (4 instances)"
deep deep-hf-prefill --nvtx --nvtx-include "prefill/" -k regex:nvjet --launch-skip 160 \
    --launch-count 4 -- "$PY" tests/gpu/hf_loop.py --arch llama --new-tokens 16 --requests 1

step "pack"
cp "$T/sections.txt" "$T/timings.txt" "$T"/*.raw.csv "$OUT/" 2>/dev/null
tar -C "$T" -czf "$OUT/deep-runs.tar.gz" $(cd "$T" && ls *.ncu-rep *.csv *.out *.txt 2>/dev/null)
ls -la "$OUT"
