#!/usr/bin/env bash
# GPU tests of the collector, run on the H200 machine (see docs/testing.md). Expects a
# build carried in build/ (bin/llmprof, bin/check_trace, lib/libllmprof.so, gpu/workload).
# Writes log.txt and fixtures.tar.gz under $OUT. Exit status: number of failed steps.
. "$(dirname "$0")/setup.sh" gpu nolog
fails=0
check() { if "$@"; then echo "step ok"; else echo "STEP FAILED: $*"; fails=$((fails + 1)); fi; }
timed() { if [ -x /usr/bin/time ]; then /usr/bin/time -f "%e s, max RSS %M KB" "$@"; else time "$@"; fi; }
trace_of() { ls "$1"/trace.*.lpt 2>/dev/null | head -1; }

# LLMPROF_GPU_ONLY=report runs the report steps alone, =gemm the GEMM capture steps alone,
# =harness the scripts written the common way, =graphs the CUDA-graph steps, =killed the
# SIGKILL step, =ocr2 DeepSeek-OCR-2 and the HF parameter counts
only=${LLMPROF_GPU_ONLY:-}

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
ldd "$B/lib/libllmprof.so" | grep -E "zstd|libz|not found"
"$PY" -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'

if [ -z "$only" ]; then
step "C workload (default mode), checked exactly"
check "$B/bin/llmprof" record -o "$T/workload" -- "$B/gpu/workload"
"$B/bin/llmprof" info "$T/workload"
check "$B/bin/check_trace" workload "$(trace_of "$T/workload")"

step "C workload, --light"
check "$B/bin/llmprof" record --light -o "$T/workload-light" -- "$B/gpu/workload"
"$B/bin/llmprof" info "$T/workload-light"

step "PyTorch NVTX"
check "$B/bin/llmprof" record -o "$T/torch" -- "$PY" tests/gpu/torch_nvtx.py
"$B/bin/llmprof" info "$T/torch"
check "$B/bin/check_trace" torch "$(trace_of "$T/torch")"

step "torch.profiler inside a recorded run (second CUPTI subscriber)"
"$PY" tests/gpu/torch_profiler.py
check "$B/bin/llmprof" record -o "$T/profiler" -- "$PY" tests/gpu/torch_profiler.py
"$B/bin/llmprof" info "$T/profiler"
check "$B/bin/check_trace" profiler "$(trace_of "$T/profiler")"

step "another CUPTI client first (the program subscribes before CUDA starts)"
check "$B/bin/llmprof" record -o "$T/cupti-first" -- "$B/gpu/workload" --cupti-first
"$B/bin/llmprof" info "$T/cupti-first"
check "$B/bin/check_trace" cupti-first "$(trace_of "$T/cupti-first")"

fi # tests of the C workload and torch

if [ -z "$only" ] || [ "$only" = killed ]; then
step "SIGKILL mid-run"
"$B/bin/llmprof" record -o "$T/killed" -- "$B/gpu/workload" --loop 60 &
rec=$!
sleep 8
child=$(pgrep -P "$rec" | head -1)
kill_ns=$(date +%s%N)
kill -9 "$child"
wait "$rec"; echo "record exit status $? (137 expected)"
# kept beside the trace, so the fixture's test checks the loss against the real kill time
echo "$kill_ns" >"$T/killed/kill_ns"
"$B/bin/llmprof" info "$T/killed"
check "$B/bin/check_trace" killed "$(trace_of "$T/killed")" "$kill_ns"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print("meta:", m["status"], m.get("signal"), m.get("exit_code"))' "$T/killed/meta.json"
fi # SIGKILL

if [ -z "$only" ]; then

step "child processes: two CUDA ranks under a parent without CUDA"
check "$B/bin/llmprof" record -o "$T/ranks" -- "$PY" tests/gpu/two_ranks.py
ls "$T/ranks"
check test "$(ls "$T"/ranks/trace.rank0.*.lpt "$T"/ranks/trace.rank1.*.lpt | wc -l)" -eq 2
check test "$(ls "$T"/ranks/*.lpt | wc -l)" -eq 2
"$B/bin/llmprof" info "$T/ranks" | grep -E "^trace|process|records"

step "exit status and stdio pass through"
echo "hello" | "$B/bin/llmprof" record -o "$T/cat" -- cat; echo "cat exit $?"
"$B/bin/llmprof" record -o "$T/exit7" -- sh -c 'exit 7'; rc=$?
check test "$rc" -eq 7

step "LLM fixture: Llama-style decoder, prompt 512, 32 new tokens"
check "$B/bin/llmprof" record -o "$T/llama" -- "$PY" bench/llama_decode.py --new-tokens 32 --runs 1 --warmup 1
"$B/bin/llmprof" info "$T/llama"
check "$B/bin/check_trace" llama "$(trace_of "$T/llama")"

fi # collector steps

if [ -z "$only" ] || [ "$only" = gemm ]; then
step "GEMM capture: C program, every cuBLAS entry point, checked exactly"
"$B/gpu/gemm" >"$T/gemm.plain.out"; echo "without llmprof: exit $?"
check "$B/bin/llmprof" record -o "$T/gemm" -- "$B/gpu/gemm" >"$T/gemm.out"
check cmp "$T/gemm.plain.out" "$T/gemm.out"   # the logger must not print into the program
diff "$T/gemm.plain.out" "$T/gemm.out" | head -5
"$B/bin/llmprof" info "$T/gemm"
check "$B/bin/check_trace" gemm "$(trace_of "$T/gemm")"

step "GEMM capture: the user's own CUBLASLT_LOG_LEVEL is left alone"
check env CUBLASLT_LOG_LEVEL=2 CUBLASLT_LOG_FILE="$T/lt.log" "$B/bin/llmprof" record \
    -o "$T/gemm-userlog" -- "$B/gpu/gemm"
check grep -q "cublasLtTSTMatmul" "$T/lt.log"
"$B/bin/llmprof" info "$T/gemm-userlog" | grep -i gemm

step "GEMM capture: PyTorch matmuls of known shapes"
check "$B/bin/llmprof" record -o "$T/torch-gemm" -- "$PY" tests/gpu/torch_gemm.py
check "$B/bin/check_trace" torch-gemm "$(trace_of "$T/torch-gemm")"

step "GEMM capture: host time added per cuBLAS call"
bash bench/gemm_overhead.sh 8 20000 "$T/gemm-bench" | tail -1

step "GEMM capture: Llama decoder, prompt 512, 16 new tokens (with and without NVTX)"
check "$B/bin/llmprof" record -o "$T/llama-gemm" -- "$PY" bench/llama_decode.py \
    --new-tokens 16 --runs 1 --warmup 1
"$B/bin/llmprof" info "$T/llama-gemm"
check "$B/bin/llmprof" record -o "$T/llama-nonvtx" -- "$PY" bench/llama_decode.py \
    --new-tokens 16 --runs 1 --warmup 1 --no-nvtx
"$B/bin/llmprof" info "$T/llama-nonvtx" | grep -E "records|nvtx|gemm"
for d in llama-gemm llama-nonvtx; do
    check "$B/bin/llmprof" report "$T/$d" --quiet --model tests/configs/llama-bench-1.1b.json \
        --prefill-logits all
    sed -n '/## GEMM/,/^## [^G]/p' "$T/$d/report.md" | head -40
done
fi # GEMM steps

# Scripts written the way people write them: one range per prompt and per decode loop, no
# token counts, an unnamed warm-up first; the script's own timer and the model's config.json
# are kept beside each trace (fixtures hf-*, graph-decode).
harness() { # NAME SCRIPT [ARGS...]: record, keep the timer and config, report
    local name=$1; shift
    # LLMPROF_HARNESS=NAME,NAME runs those alone
    case ",${LLMPROF_HARNESS:-$name}," in *",$name,"*) ;; *) return 0 ;; esac
    mkdir -p "$T/$name.side"
    check timeout "${LLMPROF_HARNESS_TIMEOUT:-400}" "$B/bin/llmprof" record -o "$T/$name" \
        "${rec_flags[@]}" -- "$PY" "$@" \
        --timer "$T/$name.side/timer.json" \
        --config-out "$T/$name.side/config.json"
    cp "$T/$name.side"/*.json "$T/$name/" 2>/dev/null
    "$B/bin/llmprof" info "$T/$name" | grep -E "records|kernels|gemm|nvtx"
    local model=()
    [ -f "$T/$name/config.json" ] && model=(--model "$T/$name/config.json")
    check "$B/bin/llmprof" report "$T/$name" --quiet "${model[@]}"
    sed -n '1,/^## Stages/p' "$T/$name/report.md" | head -60
    cat "$T/$name/summary.md"
    "$PY" tests/gpu/compare_timer.py "$T/$name/report.json" "$T/$name/timer.json"
}
rec_flags=()

if [ -z "$only" ] || [ "$only" = harness ]; then
step "harness: HF Llama, prefill and decode ranges around each request, warm-up first"
harness hf-llama tests/gpu/hf_loop.py --arch llama --new-tokens 32
step "harness: HF Llama, batch 4"
harness hf-llama-b4 tests/gpu/hf_loop.py --arch llama --batch 4 --new-tokens 16 --requests 2
step "harness: HF DeepSeek-V2-Lite (MoE, grouped GEMM experts)"
harness hf-moe tests/gpu/hf_loop.py --arch deepseek-v2-lite --new-tokens 16
step "harness: HF generate() in one unnamed-stage range, streamer timer"
harness hf-generate tests/gpu/hf_generate.py --new-tokens 32
step "harness: HF Llama without GEMM records (--no-gemm)"
rec_flags=(--no-gemm)
harness hf-llama-nogemm tests/gpu/hf_loop.py --arch llama --new-tokens 16 --requests 2
rec_flags=()
step "harness: CUDA-graph decode (static KV cache, one replay per token)"
harness graph-decode tests/gpu/graph_decode.py
for style in sync-loop per-step sample compile; do
    step "harness: another way to write it: $style"
    harness "style-$style" tests/gpu/hf_styles.py --style "$style"
done
for d in hf-llama hf-llama-b4 hf-moe hf-generate hf-llama-nogemm graph-decode \
    style-sync-loop style-per-step style-sample style-compile; do
    mkdir -p "$T/fixtures/$d"
    cp "$T/$d"/*.lpt "$T/$d"/*.json "$T/fixtures/$d/" 2>/dev/null
    rm -f "$T/fixtures/$d/report.json"
    cp "$T/$d/report.md" "$T/fixtures/$d/report.old.md" 2>/dev/null
done
fi # harness steps

if [ -z "$only" ] || [ "$only" = graphs ]; then
# CUDA-graph provenance: replayed kernels keep their GEMM shape and capture range
step "graphs: the CUDA API (capture, replay on another stream, exec update, set params)"
check "$B/bin/llmprof" record -o "$T/graph-api" --graphs node -- "$B/gpu/graphs"
"$B/bin/llmprof" info "$T/graph-api"
check "$B/bin/llmprof" report "$T/graph-api" --quiet
sed -n '/## GEMM/,/^## [^G]/p' "$T/graph-api/report.md" | head -40
rec_flags=(--graphs node) # each replayed kernel, as these fixtures were recorded
for style in compare compile piecewise stream; do
    step "graphs: decode as graph replays, $style"
    harness "graph-$style" tests/gpu/graph_styles.py --style "$style"
    sed -n '/## GEMM/,/^## [^G]/p' "$T/graph-$style/report.md" | head -30
done
for d in graph-compare graph-compile graph-piecewise graph-stream; do
    mkdir -p "$T/fixtures/$d"
    cp "$T/$d"/*.lpt "$T/$d"/*.json "$T/fixtures/$d/" 2>/dev/null
    rm -f "$T/fixtures/$d/report.json"
done
fi # graph steps

if [ -z "$only" ] || [ "$only" = report ]; then
step "report: per-operator ranges (emit_nvtx) on a 4-layer Llama decoder, 8 new tokens"
check "$B/bin/llmprof" record -o "$T/llama-ops" -- "$PY" bench/llama_decode.py --emit-nvtx \
    --layers 4 --new-tokens 8 --runs 1 --warmup 1
"$B/bin/llmprof" info "$T/llama-ops" | grep -E "records|launches|nvtx"
check "$B/bin/llmprof" report "$T/llama-ops" --quiet
grep -A12 "## Operators" "$T/llama-ops/report.md"
check grep -q "aten::linear" "$T/llama-ops/operators.csv"

step "profile end to end: Llama decode, default shape (prompt 512, 3 runs of 128 tokens)"
timed "$B/bin/llmprof" profile -o "$T/profile" \
    --model tests/configs/llama-bench-1.1b.json --prefill-logits all -- \
    "$PY" bench/llama_decode.py | tee "$T/profile.out"
check test -s "$T/profile/report.html"
grep '^{' "$T/profile.out" | tail -1 >"$OUT/llama_timer.json"
echo "report time on this trace:"
timed "$B/bin/llmprof" report "$T/profile" --quiet \
    --model tests/configs/llama-bench-1.1b.json --prefill-logits all
"$B/bin/llmprof" info "$T/profile" | grep -E "records|file"
check "$B/bin/llmprof" export "$T/profile" --perfetto "$T/profile/trace.json"
ls -la "$T/profile"
mkdir -p "$OUT/profile"
cp "$T/profile"/report.md "$T/profile"/summary.md "$T/profile"/report.html "$OUT/profile/"
fi # report steps

if [ -z "$only" ] || [ "$only" = ocr2 ]; then
step "parameters as HF counts them (meta device): DeepSeek-OCR-2, Qwen2-MoE, Qwen3-MoE"
check "$PY" tests/gpu/hf_params.py "$OUT/hf-params.json"
mkdir -p "$T/fixtures/hf-params" && "$PY" tests/gpu/hf_params.py --parts "$OUT/hf-params.json" "$T/fixtures/hf-params"
step "harness: DeepSeek-OCR-2, one page (vision inside the prefill's forward)"
harness deepseek-ocr2 examples/deepseek-ocr2/infer.py --new-tokens 16
step "harness: DeepSeek-OCR-2, one page and 6 local crops"
harness deepseek-ocr2-crops examples/deepseek-ocr2/infer.py --crops 6 --new-tokens 8 --requests 2
step "harness: DeepSeek-OCR-2 through model.generate() (ranges from the hooks alone)"
harness deepseek-ocr2-generate examples/deepseek-ocr2/infer.py --generate --new-tokens 16
for d in deepseek-ocr2 deepseek-ocr2-crops deepseek-ocr2-generate; do
    mkdir -p "$T/fixtures/$d"
    cp "$T/$d"/*.lpt "$T/$d"/*.json "$T/fixtures/$d/" 2>/dev/null
    rm -f "$T/fixtures/$d/report.json"
    cp "$T/$d/report.md" "$T/fixtures/$d/report.old.md" 2>/dev/null
done
fi # DeepSeek-OCR-2

step "pack fixtures"
case $only in
report) set -- llama-ops ;;
harness|ocr2) set -- ;;
graphs) set -- graph-api ;;
killed) set -- killed ;;
gemm) set -- gemm torch-gemm llama-gemm llama-nonvtx ;;
*) set -- workload workload-light torch profiler cupti-first killed llama llama-ops gemm torch-gemm \
    llama-gemm llama-nonvtx graph-api ;;
esac
for d in "$@"; do
    mkdir -p "$T/fixtures/$d"
    cp "$T/$d"/*.lpt "$T/$d/meta.json" "$T/fixtures/$d/" 2>/dev/null
    [ -f "$T/$d/kill_ns" ] && cp "$T/$d/kill_ns" "$T/fixtures/$d/"
done
tar -C "$T/fixtures" -czf "$OUT/fixtures.tar.gz" .
echo "failed steps so far: $fails"

if [ "${LLMPROF_BENCH_PAIRS:-0}" -gt 0 ]; then
    if [ "$only" != gemm ]; then
        step "benchmark: CPU time added per kernel launch"
        bash bench/launch_overhead.sh 5 200000 "$OUT/launch.jsonl" "$T/launch"
    fi
    step "benchmark: overhead and bytes per kernel"
    bash bench/overhead.sh "$LLMPROF_BENCH_PAIRS" "$OUT/bench.jsonl" "$T/bench"
    python3 bench/summarize.py "$OUT/bench.jsonl"
fi
ls -la "$OUT"
echo "failed steps: $fails"
exit "$fails"
