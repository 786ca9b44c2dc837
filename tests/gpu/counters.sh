#!/usr/bin/env bash
# Issue 13 on the GPU machine: `record --counters` on the harness scripts, the three-GEMM
# program against `ncu --metrics`, fail-open cases, and (LLMPROF_COUNTERS_OVERHEAD=N) the
# overhead as N interleaved rounds of plain / default / --counters / counters-only runs.
# Expects build/ carried (bin/llmprof, lib/libllmprof.so, gpu/). Writes $OUT/counters-log.txt
# and $OUT/counters-runs.tar.gz (the run directories, for fixtures).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/llmprof-gpu-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/counters-log.txt") 2>&1
B=$PWD/build
T=$(mktemp -d /tmp/llmprof-ctr.XXXXXX)
PY=$(command -v python3)
[ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
step() { echo; echo "=== $*"; }
only=${LLMPROF_COUNTERS_ONLY:-all}

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
    "$B/bin/llmprof" info "$T/$name" | grep -E -i "records|counter|loss|warn"
    grep -o '"counters[a-z_]*": *"[^"]*"' "$T/$name"/trace*.lpt 2>/dev/null | head
}

if [ "$only" = all ] || [ "$only" = functional ]; then
step "three GEMMs, one per range, --counters"
run ctr-check --counters -- "$B/gpu/counters_check"
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
if [ "$only" = all ] || [ "$only" = busy ]; then
step "counters while ncu profiles another process on the GPU: the run goes on, one warning"
if command -v ncu >/dev/null; then
    ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum --replay-mode application \
        "$B/gpu/workload" --loop 30 >"$T/busy-ncu.log" 2>&1 &
    npid=$!
    sleep 6
    run ctr-busy --counters -- "$B/gpu/counters_check"
    kill "$npid" 2>/dev/null; wait "$npid" 2>/dev/null
    tail -3 "$T/busy-ncu.log"
fi
step "C workload, 4 segments per decode (the image filled and started again)"
LLMPROF_COUNTER_SEGMENTS=4 run ctr-workload --counters --counter-ranges '.' -- "$B/gpu/workload"
step "Llama-style decoder, named steps: prompt 512, 32 new tokens"
run ctr-llama --counters -- "$PY" bench/llama_decode.py --new-tokens 32 --runs 1 --warmup 1
step "HF Llama, the common harness (prefill range, one decode range, warm-up first)"
run ctr-hf-llama --counters -- "$PY" tests/gpu/hf_loop.py --arch llama --new-tokens 16 \
    --requests 2 --timer "$T/ctr-hf-llama.side/timer.json" --config-out "$T/ctr-hf-llama.side/config.json"
step "HF DeepSeek-V2-Lite (MoE: routed experts in CUTLASS grouped GEMMs)"
run ctr-hf-moe --counters -- "$PY" tests/gpu/hf_loop.py --arch deepseek-v2-lite --new-tokens 16 \
    --requests 2 --timer "$T/ctr-hf-moe.side/timer.json" --config-out "$T/ctr-hf-moe.side/config.json"
fi

if [ -n "${LLMPROF_COUNTERS_OVERHEAD:-}" ]; then
step "overhead: HF Llama eager decode, ${LLMPROF_COUNTERS_OVERHEAD} interleaved rounds"
for i in $(seq "$LLMPROF_COUNTERS_OVERHEAD"); do
    for mode in plain default counters; do
        f="$T/ovh.$mode.$i.json"
        case $mode in
        plain) "$PY" tests/gpu/hf_loop.py --arch llama --new-tokens 64 --requests 3 --timer "$f" >/dev/null ;;
        default) "$B/bin/llmprof" record --quiet -o "$T/ovh-$mode-$i" -- "$PY" tests/gpu/hf_loop.py \
            --arch llama --new-tokens 64 --requests 3 --timer "$f" >/dev/null ;;
        counters) "$B/bin/llmprof" record --quiet --counters -o "$T/ovh-$mode-$i" -- "$PY" \
            tests/gpu/hf_loop.py --arch llama --new-tokens 64 --requests 3 --timer "$f" >/dev/null ;;
        esac
        rm -rf "$T/ovh-$mode-$i"
        "$PY" - "$f" "$mode" "$i" <<'PYEOF'
import json, sys, statistics
t = json.load(open(sys.argv[1]))
reqs = t.get("requests", t)
tpot = [r["tpot_ms"] for r in reqs if not r.get("warmup")] if isinstance(reqs, list) else []
print(f"round {sys.argv[3]} {sys.argv[2]:9s} tpot_ms {statistics.median(tpot) if tpot else 'n/a'} raw {json.dumps(t)[:300]}")
PYEOF
    done
done
fi

step "pack"
tar -C "$T" -czf "$OUT/counters-runs.tar.gz" $(cd "$T" && ls -d ctr-* 2>/dev/null | grep -v side)
ls -la "$OUT"
