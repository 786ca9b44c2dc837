#!/usr/bin/env bash
# Overhead of `llmprof record` on bench/llama_decode.py: ROUNDS rounds, each running the
# workload once per mode, in rotating order so drift hits all modes alike. One JSON line
# per run goes to RESULTS; bench/summarize.py turns them into medians.
# Usage: overhead.sh ROUNDS RESULTS.jsonl WORKDIR [workload args]
# Modes ($LLMPROF_BENCH_MODES, default "none default light"):
#   none            the workload alone
#   default, light  llmprof record, and llmprof record --light
#   default-nonvml  llmprof record --nvml-hz 0
#   default-nogemm  llmprof record --no-gemm (GEMM capture's cost: default against this)
#   light-noflush   --light with a periodic flush of 100 s (measures the flush's cost)
#   light-nosub, default-nosub   without holding CUPTI's subscriber slot (LLMPROF_SUBSCRIBE=0)
set -u
cd "$(dirname "$0")/.."
rounds=$1 results=$2 work=$3
shift 3
B=$PWD/build
PY=$(command -v python3)
[ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
read -r -a modes <<<"${LLMPROF_BENCH_MODES:-none default light}"
n=${#modes[@]}
mkdir -p "$work"
for ((i = 0; i < rounds; i++)); do
    for ((j = 0; j < n; j++)); do
        mode=${modes[$(((i + j) % n))]}
        dir="$work/$mode-$i"
        rec=("$B/bin/llmprof" record --quiet -o "$dir")
        case $mode in
        none) rec=() ;;
        default) ;;
        light) rec+=(--light) ;;
        default-nonvml) rec+=(--nvml-hz 0) ;;
        default-nogemm) rec+=(--no-gemm) ;;
        light-noflush) rec=(env LLMPROF_FLUSH_MS=100000 "${rec[@]}" --light) ;;
        light-nosub) rec=(env LLMPROF_SUBSCRIBE=0 "${rec[@]}" --light) ;;
        default-nosub) rec=(env LLMPROF_SUBSCRIBE=0 "${rec[@]}") ;;
        *) echo "unknown mode $mode" >&2; exit 2 ;;
        esac
        line=$("${rec[@]}" "$PY" bench/llama_decode.py "$@" | tail -1)
        bytes=0 kernels=0
        if [ "$mode" != none ]; then
            trace=$(ls "$dir"/trace.*.lpt | head -1)
            bytes=$(stat -c %s "$trace")
            kernels=$("$B/bin/llmprof" info "$trace" | sed -n 's/^  records  \([0-9]*\) kernels.*/\1/p')
        fi
        echo "{\"round\": $i, \"mode\": \"$mode\", \"trace_bytes\": $bytes, \"kernels\": ${kernels:-0}, \"run\": $line}" | tee -a "$results"
    done
done
