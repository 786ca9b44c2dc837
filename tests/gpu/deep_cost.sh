#!/usr/bin/env bash
# Issue 49 on the GPU machine: where a deep dive's time goes, and what --sections report (the
# metrics "Kernels in depth" reads, no section) saves against --sections full (ncu's eight
# sections and the FLOP counts, the set before). Each program is recorded once, then its deep
# dive runs with each set in turn (full, report; then report, full ...). Per deep dive: the wall
# time against the prediction, the kernels measured and ncu's replay passes per kernel (its
# "N passes" lines in ncu.log); the report's "Kernels in depth" (deep.csv) of every dive is
# kept, to compare the two sets' values of the same kernels.
# usage: deep_cost.sh [ROUNDS] (default 2). Expects build/ carried (bin, lib).
# Writes $OUT/deep-cost-log.txt and $OUT/deep-cost.tar.gz.
. "$(dirname "$0")/setup.sh" deep-cost
rounds=${1:-2}
ncu --version | tail -1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
HF=("$PY" tests/gpu/hf_loop.py --requests 1)

# NAME SET ROUND DEEP-OPTIONS...: one deep dive of the recorded run NAME, timed, then its report
dive() {
    local name=$1 set=$2 round=$3
    shift 3
    rm -rf "$T/$name/deep"
    local t0=$EPOCHREALTIME rc
    "$L" deep "$T/$name" --sections "$set" --quiet "$@"
    rc=$?
    local wall
    wall=$(awk "BEGIN { printf \"%.1f\", $EPOCHREALTIME - $t0 }")
    local passes
    passes=$(grep -oE '[0-9]+ passes' "$T/$name/deep/ncu.log" |
        awk '{s += $1; n++} END {if (n) printf "%d kernels, %.1f passes each", n, s / n}')
    echo "RESULT $name $set round $round: exit $rc, wall $wall s, $passes;" \
        "$(grep -oE '"(predicted_s|elapsed_s|measured_kernels)": [0-9.]+' \
            "$T/$name/deep/deep.json" | tr '\n' ' ')"
    "$L" report "$T/$name" --quiet
    cp "$T/$name/deep.csv" "$T/$name-$set-$round.deep.csv"
    cp "$T/$name/deep/ncu-raw.csv" "$T/$name-$set-$round.raw.csv"
    grep -m3 -E 'passes' "$T/$name/deep/ncu.log"
}

step "record"
"$L" record -o "$T/l8b" -- "${HF[@]}" --arch llama3-8b --layers 4 --new-tokens 16 | tail -2
"$L" record -o "$T/tiny" -- "${HF[@]}" --arch llama --new-tokens 16 | tail -2
grep '"duration_s"' "$T/l8b/meta.json" "$T/tiny/meta.json"

for round in $(seq "$rounds"); do
    sets="full report"
    [ $((round % 2)) = 0 ] && sets="report full" # neither always first
    for set in $sets; do
        step "Llama-3-8B layers (4), --top 8, $set, round $round"
        dive l8b "$set" "$round" --top 8
        step "TinyLlama shape, --top 10, $set, round $round"
        dive tiny "$set" "$round" --top 10
    done
done

step "pack"
tar -C "$T" -czf "$OUT/deep-cost.tar.gz" --exclude='*.ncu-rep' --exclude='*.lpt' \
    --exclude=report.html .
grep RESULT "$OUT/deep-cost-log.txt"
