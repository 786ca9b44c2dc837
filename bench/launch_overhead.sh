#!/usr/bin/env bash
# CPU time llmprof adds to each kernel launch: build/gpu/workload --launches N per mode,
# ROUNDS rounds in rotating order. Launch-bound LLM decode pays this per kernel.
# Usage: launch_overhead.sh ROUNDS N RESULTS.jsonl WORKDIR
# LLMPROF_BENCH_CMD replaces the program (it must print one JSON line with ns_per_launch),
# e.g. "python3 bench/torch_launch.py" for PyTorch's launch path.
# Modes ($LLMPROF_BENCH_MODES, default "none default light"): see bench/modes.sh.
set -u
cd "$(dirname "$0")/.."
rounds=$1 n=$2 results=$3 work=$4
B=$PWD/build
. bench/modes.sh
read -r -a modes <<<"${LLMPROF_BENCH_MODES:-none default light}"
m=${#modes[@]}
mkdir -p "$work"
for ((i = 0; i < rounds; i++)); do
    for ((j = 0; j < m; j++)); do
        mode=${modes[$(((i + j) % m))]}
        lp_bench_rec "$mode" "$work/${mode//[:,]/_}-$i" || { echo "unknown mode $mode" >&2; exit 2; }
        read -r -a cmd <<<"${LLMPROF_BENCH_CMD:-$B/gpu/workload --launches $n}"
        line=$(${rec[@]+"${rec[@]}"} "${cmd[@]}" | tail -1)
        case $line in "{"*) ;; *) echo "round $i, $mode: the run printed no JSON line: left out" >&2; continue ;; esac
        echo "{\"round\": $i, \"mode\": \"$mode\", \"run\": $line}" | tee -a "$results"
    done
done
python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
keys = [k for k in rows[0]["run"] if k.startswith("ns_per")]
for key in keys:
    by = {}
    for r in rows:
        by.setdefault(r["mode"], []).append(r["run"][key])
    base = statistics.median(by["none"])
    print(f"| mode | {key} (median) | added | runs |")
    print("|---|---|---|---|")
    for m, v in by.items():
        med = statistics.median(v)
        print(f"| {m} | {med:.0f} | {med - base:+.0f} ns ({100 * (med / base - 1):+.1f} %) | {len(v)} |")
PY
