#!/usr/bin/env bash
# Time and memory of `llmprof report` on a generated trace of N kernels (default 1,000,000;
# bench/gen_trace.c: decode-shaped, each kernel with its launch call, NVML every 50 ms); with
# MODE, tests/gen_hostile.c's trace of N items of that mode (shapes, ops, replays, reqid,
# rangename: inputs that make the analysis keep or compare one thing per item).
# Prints one line per run and the median. Usage: bench/report.sh [N] [RUNS] [MODE]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000} runs=${2:-5} mode=${3:-}
cmake --build build -j "$(nproc)" --target llmprof gen_trace gen_hostile >/dev/null
T=$(mktemp -d /tmp/lp_bench_report.XXXXXX)
trap 'rm -rf "$T"' EXIT
if [ -n "$mode" ]; then
    build/bin/gen_hostile "$T/t.lpt" "$mode" "$n"
else
    build/bin/gen_trace "$T/t.lpt" "$n"
fi
cpu=$(lscpu | sed -n 's/^Model name: *//p')
echo "trace: ${mode:-decode-shaped} x $n, $(stat -c %s "$T/t.lpt") bytes; $(nproc) cores, $cpu"
for i in $(seq "$runs"); do
    rm -rf "$T/out"
    /usr/bin/time -f "%e %M" -o "$T/time" build/bin/llmprof report "$T/t.lpt" -o "$T/out" --quiet
    read -r s kb <"$T/time"
    echo "run $i: $s s, max RSS $((kb / 1024)) MiB"
    echo "$s $kb" >>"$T/all"
done
sort -n "$T/all" | awk '{a[NR]=$1; m[NR]=$2} END {i=int((NR+1)/2); printf "median: %s s, max RSS %d MiB\n", a[i], m[i]/1024}'
