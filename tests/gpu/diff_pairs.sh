#!/usr/bin/env bash
# Issue 19 on the GPU machine: real run pairs for llmprof diff. The Llama-style decoder of
# graph_decode.py (8 layers, a warm-up and 3 requests of 32 decode steps) recorded twice with
# an eager decode and twice with its decode step replayed as one CUDA graph, interleaved
# (eager, graph, eager, graph). Then: the same workload twice (nothing should be flagged
# beyond the noise) and eager against graph (the decode improvement and the kernel change),
# each with a gate; and the graph run's report against the eager one (report --baseline).
# Expects build/ carried. Writes $OUT/diff_pairs-log.txt and
# $OUT/diff-pairs-runs.tar.gz (fixtures: the four runs and the diffs).
. "$(dirname "$0")/setup.sh" diff_pairs
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
GD=("$PY" tests/gpu/graph_decode.py --layers 8 --requests 3 --new-tokens 33)
for i in 1 2; do
    for mode in eager graph; do
        name=$mode-$i
        step "record $name"
        extra=()
        [ "$mode" = eager ] && extra=(--eager)
        mkdir -p "$T/$name.side"
        timeout 300 "$L" record -o "$T/$name" -- "${GD[@]}" "${extra[@]}" \
            --timer "$T/$name.side/timer.json" --config-out "$T/$name.side/config.json" | tail -1
        echo "exit ${PIPESTATUS[0]}"
        cp "$T/$name.side/"*.json "$T/$name/"
        "$L" info "$T/$name" | grep -E "records|lost|graphs"
    done
done
# NAME A B RULES...: the diff of B against A, its gate's status and the md's head
dif() {
    local name=$1 a=$2 b=$3
    shift 3
    step "diff $name"
    local args=()
    for r in "$@"; do args+=(--fail-if "$r"); done
    "$L" diff "$T/$a" "$T/$b" --model "$T/$a/config.json" -o "$T/diff-$name" "${args[@]}"
    echo "diff exit $?"
    sed -n '/## Gate/,/## Stages/p' "$T/diff-$name/diff.md"
    grep -A14 '^### decode' "$T/diff-$name/diff.md"
}
dif eager-twice eager-1 eager-2 'tpot>+5%' 'ttft>+10%' 'decode.tokens_s<-5%'
dif graph-twice graph-1 graph-2 'tpot>+5%' 'ttft>+10%' 'decode.tokens_s<-5%'
dif eager-graph eager-1 graph-1 'tpot>+5%' 'decode.kernels>+0%'
dif graph-eager graph-1 eager-1 'tpot>+5%' 'ttft>+10%'
# the same comparison inside the report of the graph run (report --baseline)
step "report graph-1 --baseline eager-1"
"$L" report "$T/graph-1" --baseline "$T/eager-1" --model "$T/graph-1/config.json" \
    -o "$T/report-graph-1" | sed -n '/^against/,$p'
echo "report exit ${PIPESTATUS[0]}"
ls "$T/report-graph-1"
step "pack"
tar -C "$T" -czf "$OUT/diff-pairs-runs.tar.gz" eager-1 eager-2 graph-1 graph-2 diff-eager-twice \
    diff-graph-twice diff-eager-graph diff-graph-eager report-graph-1
ls -la "$OUT"
