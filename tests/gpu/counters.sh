#!/usr/bin/env bash
# Issue 13 on the GPU machine: `record --counters` (range profiler and PM sampling) on the
# harness scripts, the three-GEMM program against `ncu --metrics`, fail-open cases, and
# (steps launch and overhead, LLMPROF_COUNTERS_OVERHEAD=N rounds) the overhead as interleaved
# rounds in rotating order (bench/launch_overhead.sh, bench/overhead.sh; modes in bench/modes.sh,
# chosen with LLMPROF_LAUNCH_MODES and LLMPROF_OVERHEAD_MODES).
# Expects build/ carried (bin/llmprof, lib/libllmprof.so, gpu/). Writes $OUT/counters-log.txt,
# $OUT/counters-runs.tar.gz (the run directories, for fixtures) and the benchmarks' *.jsonl.
. "$(dirname "$0")/setup.sh" counters
# LLMPROF_GPU_STEPS: the steps to run, comma-separated (default: all but launch and overhead):
# probe check ncu ncurep busy workload llama hf moe pm launch overhead
steps=",${LLMPROF_GPU_STEPS:-probe,check,ncu,busy,workload,llama,hf,moe,pm},"
want() { case $steps in *,"$1",*) return 0 ;; esac; return 1; }

step "machine"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv
"$PY" -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'

run() { # NAME [record options] -- CMD...: record, side files, info
    local name=$1; shift
    local opts=()
    while [ "$1" != "--" ]; do opts+=("$1"); shift; done
    shift
    mkdir -p "$T/$name.side"
    timeout 400 "$B/bin/llmprof" record "${opts[@]}" -o "$T/$name" -- "$@"
    echo "record exit $?"
    cp "$T/$name.side"/*.json "$T/$name/" 2>/dev/null
    "$B/bin/llmprof" info "$T/$name" | grep -E -i "mode|records|kernels|counter|pm |loss|warn|  - "
    grep -o '"counters[a-z_]*": *"[^"]*"' "$T/$name"/trace*.lpt 2>/dev/null | head
}

if want probe; then
step "PM-sampling metrics of this chip (triage set names)"
"$B/gpu/counters_probe" pm 2>&1 | head -150
fi
if want check; then
step "three GEMMs, one per range, --counters"
run ctr-check --counters -- "$B/gpu/counters_check"
fi
if want ncu; then
step "the same kernels under ncu (no cache flush, clocks as they are)"
if command -v ncu >/dev/null; then
    ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__ops_path_tensor_src_bf16_dst_fp32.sum,lts__t_bytes.sum \
        --cache-control none --clock-control none --csv --print-units base \
        --launch-skip 3 "$B/gpu/counters_check" >"$T/ctr-check.ncu.csv" 2>"$T/ctr-check.ncu.err"
    echo "ncu exit $?"; cat "$T/ctr-check.ncu.csv" | cut -c1-400 | tail -30
    tail -3 "$T/ctr-check.ncu.err"
    mkdir -p "$T/ctr-check"; cp "$T/ctr-check.ncu.csv" "$T/ctr-check/ncu.csv"
fi
fi
if want ncurep; then
step "the three GEMMs measured twice per run, under --counters and under ncu, alternating"
for i in 1 2 3; do
    run ctr-rep-$i --counters -- "$B/gpu/counters_check" --twice >/dev/null
    ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__ops_path_tensor_src_bf16_dst_fp32.sum,lts__t_bytes.sum \
        --cache-control none --clock-control none --csv --print-units base \
        --launch-skip 3 "$B/gpu/counters_check" --twice >"$T/ctr-rep-$i/ncu.csv" 2>/dev/null
    echo "round $i: ncu exit $?"
done
fi
if want busy; then
step "counters while ncu profiles another process on the GPU: the run goes on, one warning"
if command -v ncu >/dev/null; then
    ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum --replay-mode application \
        "$B/gpu/workload" --loop 30 >"$T/busy-ncu.log" 2>&1 &
    npid=$!
    sleep 6
    run ctr-busy --counters -- "$B/gpu/counters_check"
    run pm-busy --pm-sampling 200 -- "$B/gpu/counters_check"
    kill "$npid" 2>/dev/null; wait "$npid" 2>/dev/null
    tail -3 "$T/busy-ncu.log"
fi
fi
if want workload; then
step "C workload, 4 segments per decode (the image filled and started again)"
LLMPROF_COUNTER_SEGMENTS=4 run ctr-workload --counters --counter-ranges '.' -- "$B/gpu/workload"
fi
if want llama; then
step "Llama-style decoder, named steps: prompt 512, 32 new tokens"
run ctr-llama --counters -- "$PY" bench/llama_decode.py --new-tokens 32 --runs 1 --warmup 1
fi
if want hf; then
step "HF Llama, the common harness (prefill range, one decode range, warm-up first)"
run ctr-hf-llama --counters -- "$PY" tests/gpu/hf_loop.py --arch llama --new-tokens 16 \
    --requests 2 --timer "$T/ctr-hf-llama.side/timer.json" --config-out "$T/ctr-hf-llama.side/config.json"
step "HF Llama, the common harness, --light --counters (the range profiler, no kernels)"
run ctr-hf-llama-only --light --counters -- "$PY" tests/gpu/hf_loop.py --arch llama --new-tokens 16 \
    --requests 2 --timer "$T/ctr-hf-llama-only.side/timer.json" --config-out "$T/ctr-hf-llama-only.side/config.json"
fi
if want moe; then
step "HF DeepSeek-V2-Lite (MoE: routed experts in CUTLASS grouped GEMMs)"
run ctr-hf-moe --counters -- "$PY" tests/gpu/hf_loop.py --arch deepseek-v2-lite --new-tokens 16 \
    --requests 2 --timer "$T/ctr-hf-moe.side/timer.json" --config-out "$T/ctr-hf-moe.side/config.json"
fi
if want pm; then
step "PM sampling alone (the collector without record, no range profiler), kernels on"
mkdir -p "$T/pm-alone"
env CUDA_INJECTION64_PATH="$B/lib/libllmprof.so" LLMPROF_OUT="$T/pm-alone" \
    LLMPROF_PM_SAMPLING=200 "$B/gpu/counters_check"
echo "exit $?"
"$B/bin/llmprof" info "$T/pm-alone" | grep -E -i "mode|records|kernels|counter|pm |loss|warn|  - "
step "--pm-sampling 200 on the three GEMMs"
run pm-check --pm-sampling 200 -- "$B/gpu/counters_check"
step "--light --counters on the three GEMMs (the range profiler, no kernels)"
run ctr-check-only --light --counters -- "$B/gpu/counters_check"
step "--light on the C workload (PM sampling, no kernels)"
run light-workload --light -- "$B/gpu/workload"
step "--pm-sampling 100 on the C workload"
run pm-workload --pm-sampling 100 -- "$B/gpu/workload"
step "HF Llama, the common harness, --pm-sampling 200"
run pm-hf-llama --pm-sampling 200 -- "$PY" tests/gpu/hf_loop.py --arch llama --new-tokens 16 \
    --requests 2 --timer "$T/pm-hf-llama.side/timer.json" --config-out "$T/pm-hf-llama.side/config.json"
step "HF Llama, the common harness, --light, and its report"
run pm-hf-llama-light --light -- "$PY" tests/gpu/hf_loop.py --arch llama \
    --new-tokens 16 --requests 2 --timer "$T/pm-hf-llama-light.side/timer.json" \
    --config-out "$T/pm-hf-llama-light.side/config.json"
"$B/bin/llmprof" report "$T/pm-hf-llama-light" --model "$T/pm-hf-llama-light/config.json" \
    -o "$T/pm-hf-llama-light.report" >/dev/null
echo "report exit $?"
grep -E "No kernels" "$T/pm-hf-llama-light.report/summary.md"
grep -E "throughput|^\| (prefill|decode)" "$T/pm-hf-llama-light.report/report.md" | head
fi

if want launch; then
step "CPU time per launch (C loop, then PyTorch), ${LLMPROF_COUNTERS_OVERHEAD:-3} rounds"
export LLMPROF_BENCH_MODES=${LLMPROF_LAUNCH_MODES:-none attach attach-nosub light-nocounters light-counters light kernels}
bash bench/launch_overhead.sh "${LLMPROF_COUNTERS_OVERHEAD:-3}" 200000 "$OUT/launch-c.jsonl" "$T/launch-c"
LLMPROF_BENCH_CMD="$PY bench/torch_launch.py" bash bench/launch_overhead.sh \
    "${LLMPROF_COUNTERS_OVERHEAD:-3}" 0 "$OUT/launch-torch.jsonl" "$T/launch-torch"
rm -rf "$T/launch-c" "$T/launch-torch"
fi
if want overhead; then
step "overhead: HF Llama eager decode, ${LLMPROF_COUNTERS_OVERHEAD:-3} rounds in rotating order"
export LLMPROF_BENCH_MODES=${LLMPROF_OVERHEAD_MODES:-none default light counters pm}
LLMPROF_BENCH_CMD="$PY tests/gpu/hf_loop.py --arch llama --new-tokens 64 --requests ${LLMPROF_OVERHEAD_REQUESTS:-5}" \
    bash bench/overhead.sh "${LLMPROF_COUNTERS_OVERHEAD:-3}" "$OUT/overhead.jsonl" "$T/ovh"
for stat in "" --min; do
    python3 bench/summarize.py "$OUT/overhead.jsonl" ${stat:+"$stat"} counters/default pm/default light/none \
        light-counters/light light-nocounters/none default/light
done
rm -rf "$T/ovh"
fi

step "pack"
tar -C "$T" -czf "$OUT/counters-runs.tar.gz" $(cd "$T" && ls -d ctr-* pm-* 2>/dev/null | grep -v side)
ls -la "$OUT"
