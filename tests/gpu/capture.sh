#!/usr/bin/env bash
# Issue 15 on the GPU machine: capture windows. record --capture cuda-profiler on the HF
# harness (eager) and on the CUDA-graph decode, each calling torch.cuda.profiler.start/stop
# around its timed requests, with a full record of the same command beside it (kernel
# counts, stages); then what a record costs whose only window is the warm-up, interleaved
# with no profiler and the default (bench/overhead.sh, modes capture and capture-nogemm).
# Expects build/ carried (bin, lib). Writes $OUT/capture-log.txt, $OUT/capture.jsonl and
# $OUT/capture-runs.tar.gz (the windowed runs: fixtures).
. "$(dirname "$0")/setup.sh" capture
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

# NAME CMD...: a windowed record and a full one, their info, the windowed report's lines
pair() {
    local name=$1; shift
    step "$name: --capture cuda-profiler"
    "$L" record -o "$T/cap-$name" --capture cuda-profiler -- "$@" | tail -1
    "$L" info "$T/cap-$name" | grep -E "capture|records|lost"
    step "$name: everything"
    "$L" record -o "$T/full-$name" -- "$@" | tail -1
    "$L" info "$T/full-$name" | grep -E "records|lost"
    step "$name: reports"
    "$L" report "$T/cap-$name" --quiet
    "$L" report "$T/full-$name" --quiet
    for r in cap full; do
        echo "-- $r"
        grep -E "Capture windows|GPU work from|TTFT|TPOT|warm-up" "$T/$r-$name/report.md" | cut -c1-300
        python3 -c "
import json,sys
j=json.load(open('$T/$r-$name/report.json'))
print('capture', json.dumps(j.get('capture'))[:400])
for s in j['stages']: print(s['name'], s.get('occurrences'), s.get('kernels'), s.get('gpu_ns'), s.get('steps'))"
    done
}
pair hf "$PY" tests/gpu/hf_loop.py --requests 2 --new-tokens 16 --cuda-profiler timed
pair graph "$PY" tests/gpu/graph_decode.py --requests 2 --new-tokens 32 --cuda-profiler timed

step "overhead: the only window is the warm-up"
LLMPROF_BENCH_MODES="none default capture capture-nogemm" \
LLMPROF_BENCH_CMD="$PY tests/gpu/hf_loop.py --new-tokens 64 --requests 2 --cuda-profiler warmup" \
    timeout 300 bash bench/overhead.sh 5 "$OUT/capture.jsonl" "$T/bench" 2>&1 | grep -v '^{' |
    grep -v "trace in" | tail -5
python3 bench/summarize.py "$OUT/capture.jsonl" capture/none capture-nogemm/none capture/default
python3 bench/summarize.py "$OUT/capture.jsonl" --min capture/none capture-nogemm/none

step "pack"
rm -rf "$T/bench"
tar -C "$T" --exclude=report.html -czf "$OUT/capture-runs.tar.gz" cap-hf cap-graph
ls -la "$OUT"; du -sh "$T"/*
