#!/usr/bin/env bash
# Issue 14 on the GPU machine, end to end: llmprof record, then llmprof deep with the real
# Nsight Compute, then llmprof report, on the HF Llama harness (TinyLlama's shape, and
# Llama-3-8B's layer shape, whose decode GEMVs fill an H200) and on counters_check (recorded
# with --counters, so the deep dive's tensor FLOPs can be set against the counters'). Each
# deep dive is timed against its prediction. Expects build/ carried (bin, lib, gpu/). Writes
# $OUT/deep-run-log.txt and $OUT/deep-run.tar.gz (the runs with deep/ and their reports; each
# report also exported by ncu with its default units, for checking the import).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/llmprof-gpu-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/deep-run-log.txt") 2>&1
B=$PWD/build
L=$B/bin/llmprof
T=$(mktemp -d /tmp/llmprof-deep.XXXXXX)
PY=$(command -v python3)
[ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
step() { echo; echo "=== $*"; }
ncu --version; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

# NAME DEEP-OPTIONS... -- CMD...: record, deep (timed), report, ncu's own export
dive() {
    local name=$1; shift
    local dopts=()
    while [ "$1" != "--" ]; do dopts+=("$1"); shift; done
    shift
    step "$name: record"
    "$L" record -o "$T/$name" "${REC_OPTS[@]}" -- "$@" | tail -3
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
dive hf-llama -- "$PY" tests/gpu/hf_loop.py --arch llama --new-tokens 16 --requests 1
dive hf-llama3-8b --top 4 -- "$PY" tests/gpu/hf_loop.py --arch llama3-8b --layers 4 \
    --new-tokens 16 --requests 1
REC_OPTS=(--counters)
dive ctr-check -- "$B/gpu/counters_check" --twice

step "pack"
for d in "$T"/*/; do rm -f "$d"/report.html; done
tar -C "$T" -czf "$OUT/deep-run.tar.gz" .
ls -la "$OUT"; du -sh "$T"/*
