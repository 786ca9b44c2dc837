#!/usr/bin/env bash
# Host time GEMM capture adds to each cuBLAS call: build/gpu/gemm --calls N (small GEMMs in
# groups that never fill the launch queue) under `llmprof record --no-gemm` and under
# `llmprof record`, in alternating order, ROUNDS times. Prints one JSON line per run and the
# median difference per call. Usage: gemm_overhead.sh ROUNDS CALLS WORKDIR
set -u
cd "$(dirname "$0")/.."
rounds=$1 calls=$2 work=$3
B=$PWD/build
mkdir -p "$work"
for ((i = 0; i < rounds; i++)); do
    for mode in $( ((i % 2)) && echo "gemm nogemm" || echo "nogemm gemm"); do
        flag=--no-gemm
        [ "$mode" = gemm ] && flag=
        line=$("$B/bin/llmprof" record --quiet $flag -o "$work/$mode-$i" -- "$B/gpu/gemm" --calls "$calls" | tail -1)
        echo "{\"round\": $i, \"mode\": \"$mode\", \"run\": $line}"
    done
done | tee "$work/gemm_overhead.jsonl"
python3 - "$work/gemm_overhead.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {(r["round"], r["mode"]): r["run"]["ns_per_call"] for r in rows}
rounds = sorted({r["round"] for r in rows})
d = [by[(i, "gemm")] - by[(i, "nogemm")] for i in rounds]
print(f"per call: without capture {statistics.median(by[(i, 'nogemm')] for i in rounds):.0f} ns, "
      f"with {statistics.median(by[(i, 'gemm')] for i in rounds):.0f} ns; "
      f"added {statistics.median(d):.0f} ns (paired median, range {min(d):.0f} … {max(d):.0f})")
PY
