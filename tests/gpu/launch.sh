#!/usr/bin/env bash
# Issue 15 on the GPU machine, launch records from callbacks and windows by NVTX range and
# signal: the same command recorded with launch calls from callbacks (the default) and from
# CUPTI's API activity records (LLMPROF_LAUNCH=activity), compared (kernels, launch records,
# kernels tied to a launch, stages); then windows on one decode step in 8
# (--capture 'nvtx:^step$/8'), on SIGUSR1 around the timed requests and on cudaProfilerStart,
# each beside a full record. Expects build/ carried. Writes $OUT/launch-log.txt and
# $OUT/launch-runs.tar.gz (fixtures).
. "$(dirname "$0")/setup.sh" launch
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

# DIR: info's record lines, and per stage occurrences, kernels, GPU time, steps
show() {
    "$L" info "$1" | grep -E "capture|records|lost|launch|gemm|^    -|left out|switching"
    "$L" report "$1" --quiet || echo "report failed: $?"
    grep -E "Capture windows|TTFT|TPOT|warm-up" "$1/report.md" | cut -c1-240
    python3 - "$1" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1] + "/report.json"))
print("capture", json.dumps(j.get("capture"))[:300])
for s in j["stages"]:
    print(" ", s["name"], "occ", s.get("occurrences"), "kernels", s.get("kernels"),
          "gpu_ns", s.get("gpu_ns"), "steps", s.get("steps"))
PYEOF
}
# NAME ARGS...: record NAME with record ARGS and the command after --
rec() {
    local name=$1; shift
    step "$name"
    "$L" record -o "$T/$name" "$@" | tail -1
    show "$T/$name"
}
HF=("$PY" tests/gpu/hf_loop.py --requests 2 --new-tokens 17 --step-ranges)
GR=("$PY" tests/gpu/graph_decode.py --requests 2 --new-tokens 33 --step-ranges)
rec hf-callbacks -- "${HF[@]}"
LLMPROF_LAUNCH=activity rec hf-activity -- "${HF[@]}"
rec hf-nvtx8 --capture 'nvtx:^step$/8' -- "${HF[@]}"
rec hf-signal --capture signal -- "${HF[@]}" --signal timed
rec hf-nvtx-range --capture 'nvtx:^step$@20-24' -- "${HF[@]}"
# --graphs node: each replayed kernel tied to its launch, as these fixtures were recorded
rec graph-callbacks --graphs node -- "${GR[@]}"
LLMPROF_LAUNCH=activity rec graph-activity --graphs node -- "${GR[@]}"
rec graph-nvtx8 --graphs node --capture 'nvtx:^step$/8' -- "${GR[@]}"
rec graph-profiler --capture cuda-profiler -- "${GR[@]}" --cuda-profiler timed
rec graph-signal --capture signal -- "${GR[@]}" --signal timed
step "pack"
tar -C "$T" --exclude=report.html --exclude='*.csv' -czf "$OUT/launch-runs.tar.gz" .
ls -la "$OUT"; du -sh "$T"/*
