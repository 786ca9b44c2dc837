#!/usr/bin/env bash
# Overhead of `llmprof record` on bench/llama_decode.py: ROUNDS rounds, each running the
# workload once per mode, in rotating order so drift hits all modes alike. One JSON line
# per run goes to RESULTS; bench/summarize.py turns them into medians.
# Usage: overhead.sh ROUNDS RESULTS.jsonl WORKDIR [workload args]
# Modes ($LLMPROF_BENCH_MODES, default "none default light"): see bench/modes.sh.
# LLMPROF_BENCH_CMD replaces the workload (it must print, last, one JSON line with
# prefill_ms_median and decode_ms_per_token_median, as tests/gpu/hf_loop.py does).
set -u
cd "$(dirname "$0")/.."
rounds=$1 results=$2 work=$3
shift 3
B=$PWD/build
. bench/modes.sh
PY=$(command -v python3)
[ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
read -r -a modes <<<"${LLMPROF_BENCH_MODES:-none default light}"
n=${#modes[@]}
mkdir -p "$work"
for ((i = 0; i < rounds; i++)); do
    if [ -n "${LLMPROF_BENCH_UNTIL:-}" ] && [ "$(date +%s)" -ge "$LLMPROF_BENCH_UNTIL" ]; then
        echo "stopped before round $i: LLMPROF_BENCH_UNTIL passed" >&2
        break
    fi
    for ((j = 0; j < n; j++)); do
        mode=${modes[$(((i + j) % n))]}
        dir="$work/${mode//[:,]/_}-$i"
        lp_bench_rec "$mode" "$dir" || { echo "unknown mode $mode" >&2; exit 2; }
        cmd=("$PY" bench/llama_decode.py "$@")
        [ -n "${LLMPROF_BENCH_CMD:-}" ] && read -r -a cmd <<<"$LLMPROF_BENCH_CMD"
        line=$(${rec[@]+"${rec[@]}"} "${cmd[@]}" | tail -1)
        case $line in "{"*) ;; *) echo "round $i, $mode: the run printed no JSON line: left out" >&2; continue ;; esac
        bytes=0 kernels=0
        if [ "$mode" != none ]; then
            trace=$(ls "$dir"/trace.*.lpt 2>/dev/null | head -1)
            [ -n "$trace" ] && bytes=$(stat -c %s "$trace")
            [ -n "$trace" ] && kernels=$("$B/bin/llmprof" info "$trace" | sed -n 's/^  records  \([0-9]*\) kernels.*/\1/p')
        fi
        echo "{\"round\": $i, \"mode\": \"$mode\", \"trace_bytes\": $bytes, \"kernels\": ${kernels:-0}, \"run\": $line}" | tee -a "$results"
    done
done
