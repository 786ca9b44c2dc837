#!/usr/bin/env bash
# Issue 14 on the GPU machine, end to end: llmprof record, then llmprof deep with the real
# Nsight Compute, then llmprof report. Each deep dive is timed against its prediction.
# usage: deep_run.sh [fit|check]
#   fit (default): the HF Llama harness (TinyLlama's shape, and Llama-3-8B's layer shape,
#     whose decode GEMVs fill an H200) and counters_check (recorded with --counters, so the
#     deep dive's tensor FLOPs can be set against the counters'): the runs the time
#     constants were fitted on.
#   check: runs the constants were not fitted on (other shapes, --top and --instances, one
#     repeated for the noise), the CUDA-graph decode (kernels replayed from graphs, reached
#     through --graph-profiling node), and llmprof profile --deep.
# Expects build/ carried (bin, lib, gpu/). Writes $OUT/deep-run-log.txt and
# $OUT/deep-run.tar.gz (the runs with deep/ and their reports; each report also exported by
# ncu with its default units, for checking the import).
. "$(dirname "$0")/setup.sh" deep-run
ncu --version; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

# NAME DEEP-OPTIONS... -- CMD...: record, deep (timed), report, ncu's own export
dive() {
    local name=$1; shift
    local dopts=()
    while [ "$1" != "--" ]; do dopts+=("$1"); shift; done
    shift
    step "$name: record"
    "$L" record -o "$T/$name" "${REC_OPTS[@]}" -- "$@" | tail -3
    grep '"duration_s"' "$T/$name/meta.json"
    step "$name: deep ${dopts[*]}"
    local t0=$EPOCHREALTIME
    "$L" deep "$T/$name" "${dopts[@]}"
    echo "deep exit $?, wall $(awk "BEGIN { printf \"%.1f\", $EPOCHREALTIME - $t0 }") s"
    grep -E '"(predicted_s|elapsed_s|predicted_kernels|measured_kernels|stopped|ncu_exit)"' \
        "$T/$name/deep/deep.json"
    ncu -i "$T/$name/deep/deep.ncu-rep" --csv --page raw >"$T/$name/deep/ncu-default-units.csv" \
        2>/dev/null
    step "$name: report"
    "$L" report "$T/$name" --quiet
    sed -n '/## Kernels in depth/,/## Operators/p' "$T/$name/report.md" | cut -c1-400
}

REC_OPTS=()
HF=("$PY" tests/gpu/hf_loop.py --requests 1)
case "${1:-fit}" in
fit)
    dive hf-llama -- "${HF[@]}" --arch llama --new-tokens 16
    dive hf-llama3-8b --top 4 -- "${HF[@]}" --arch llama3-8b --layers 4 --new-tokens 16
    REC_OPTS=(--counters)
    dive ctr-check -- "$B/gpu/counters_check" --twice
    ;;
check)
    dive l8b-a --top 6 --instances 1 -- "${HF[@]}" --arch llama3-8b --layers 4 --new-tokens 16
    dive l8b-b --top 6 --instances 1 -- "${HF[@]}" --arch llama3-8b --layers 4 --new-tokens 16
    dive l8b-8 --top 8 -- "${HF[@]}" --arch llama3-8b --layers 8 --new-tokens 24
    dive tiny-5x3 --top 5 --instances 3 -- "${HF[@]}" --arch llama --new-tokens 16
    REC_OPTS=(--graphs node) # the deep dive matches the replays' kernels by name
    dive graph --top 6 -- "$PY" tests/gpu/graph_decode.py --requests 1 --new-tokens 32
    REC_OPTS=()
    # which kernels of the graph decode ncu reached, and in which stage the report put them
    cut -d, -f1-12 "$T/graph/deep.csv" | head -20
    step "profile --deep 4"
    t0=$EPOCHREALTIME
    "$L" profile -o "$T/profile" --deep 4 --quiet -- "${HF[@]}" --arch llama --new-tokens 8
    echo "profile exit $?, wall $(awk "BEGIN { printf \"%.1f\", $EPOCHREALTIME - $t0 }") s"
    grep -E '"(predicted_s|elapsed_s|predicted_kernels|measured_kernels)"' "$T/profile/deep/deep.json"
    sed -n '/## Kernels in depth/,/## Operators/p' "$T/profile/report.md" | cut -c1-300 | head -20
    ;;
*) echo "usage: deep_run.sh [fit|check]"; exit 2 ;;
esac

step "pack"
# the .ncu-rep files stay behind (megabytes each; deep-ctr-check's is a committed fixture)
tar -C "$T" --exclude='*.ncu-rep' --exclude=report.html -czf "$OUT/deep-run.tar.gz" .
ls -la "$OUT"; du -sh "$T"/*
