#!/usr/bin/env bash
# CPU time llmprof adds to each kernel launch: build/gpu/workload --launches N without
# llmprof, with it and with --light, ROUNDS rounds in rotating order. Launch-bound LLM
# decode pays this per kernel. Usage: launch_overhead.sh ROUNDS N RESULTS.jsonl WORKDIR
set -u
cd "$(dirname "$0")/.."
rounds=$1 n=$2 results=$3 work=$4
B=$PWD/build
modes=(none default light)
mkdir -p "$work"
for ((i = 0; i < rounds; i++)); do
    for ((j = 0; j < 3; j++)); do
        mode=${modes[$(((i + j) % 3))]}
        case $mode in
        none) line=$("$B/gpu/workload" --launches "$n") ;;
        default) line=$("$B/bin/llmprof" record --quiet -o "$work/$mode-$i" -- "$B/gpu/workload" --launches "$n") ;;
        light) line=$("$B/bin/llmprof" record --quiet --light -o "$work/$mode-$i" -- "$B/gpu/workload" --launches "$n") ;;
        esac
        echo "{\"round\": $i, \"mode\": \"$mode\", \"run\": $line}" | tee -a "$results"
    done
done
python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault(r["mode"], []).append(r["run"]["ns_per_launch"])
base = statistics.median(by["none"])
print("| mode | ns per launch (median) | added per launch | runs |")
print("|---|---|---|---|")
for m, v in by.items():
    med = statistics.median(v)
    print(f"| {m} | {med:.0f} | {med - base:+.0f} ns ({100 * (med / base - 1):+.1f} %) | {len(v)} |")
PY
