#!/usr/bin/env bash
# Issue 15 on the GPU machine: record --finalize (CUPTI finalized and set up again between
# capture windows: window.c, attach.c). Parts ($FIN_PARTS, default all, in this order):
# cost: bench/window_cost, one process per run, against no profiler: what a closed window
#    leaves behind without the finalize (capture-bare) and with it (capture-bare-finalize,
#    capture-finalize), the finalize right after the close (LLMPROF_FINALIZE_AFTER_MS=0: the
#    program's phase after its window lasts less than the default second); $FIN_ROUNDS rounds.
# kinds: what the finalize takes the program's thread with each activity kind beside kernels
#    and launch records (window_cost, capture_finalize_ns over capture_finalized).
# threads: tests/gpu/finalize_threads.py, windows every 10 steps, finalizing after each: the
#    main thread alone (CUPTI finalized), and with four more threads launching (never
#    finalized: that corrupted the heap). Exit status, identical results, info's lines.
# graphs: finalize_threads.py --graph-at 11: a CUDA graph captured just after a finalize
#    (unseen while CUPTI is away) and replayed, then a second one; unprofiled first, then
#    with --finalize, results compared with the unprofiled run's; with $FIN_OLD_LIB (a
#    libllmprof.so from before a change, an absolute path) the same with that library, shown
#    but not counted as failures.
# profiler: finalize_threads.py --torch-profiler: torch.profiler present, with --finalize.
# hf: HF eager decode, --finalize, one step in eight (NVTX) and around the warm-up request
#    (cudaProfilerStart/Stop): exit status, info's capture lines, report.
# window_threads: window_threads.sh (threads, a graph capture midway, torch.profiler),
#    without it.
# Expects build/ carried. Writes $OUT/finalize-log.txt (and the logs of the scripts it runs).
. "$(dirname "$0")/setup.sh" finalize
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
fails=0
# NAME ARGS...: record ARGS and the program after --, its exit status and info's lines
rec() {
    local name=$1; shift
    timeout 300 "$L" record -o "$T/$name" "$@" 2>&1 | grep -v '^llmprof: 1 trace' | tail -3
    local rc=${PIPESTATUS[0]}
    echo "$name: exit $rc"
    [ "$rc" -eq 0 ] || fails=$((fails + 1))
    "$L" info "$T/$name" | grep -E "capture|finalized|opened on|records|lost|left out"
}
all_parts="cost kinds threads graphs profiler hf window_threads"
parts=" ${FIN_PARTS:-$all_parts} "
for p in $parts; do
    [[ " $all_parts " == *" $p "* ]] || { echo "FIN_PARTS: unknown part $p (of: $all_parts)"; exit 2; }
done
want() { [[ $parts == *" $1 "* ]]; }
FT=("$PY" tests/gpu/finalize_threads.py)
if want cost; then
    step "window_cost"
    LLMPROF_FINALIZE_AFTER_MS=0 WINDOW_ROUNDS=${FIN_ROUNDS:-10} \
        WINDOW_MODES='none capture-bare capture-bare-finalize capture-finalize' \
        bash tests/gpu/window_cost.sh | tail -8
    for r in "$T"/../llmprof-window_cost.*/runs/capture-bare-finalize-0 \
        "$T"/../llmprof-window_cost.*/runs/capture-finalize-0; do
        [ -d "$r" ] && "$L" info "$r" | grep -E "capture|finalized|lost"
    done
fi
if want kinds; then
    step "the finalize's time by the kinds on (window_cost, two runs each)"
    for k in kernel,api kernel,api,marker kernel,api,device kernel,api,overhead \
        kernel,api,memcpy,memset kernel,api,memory all all+gemm+nvml; do
        envs=(LLMPROF_FINALIZE_AFTER_MS=0) extra=(--no-gemm --nvml-hz 0)
        case $k in all) ;; all+gemm+nvml) extra=() ;; *) envs+=("LLMPROF_KINDS=$k") ;; esac
        for i in 1 2; do
            d=$T/kinds-$k-$i
            env "${envs[@]}" "$L" record --quiet -o "$d" "${extra[@]}" --capture cuda-profiler \
                --finalize -- build/gpu/window_cost 20000 7 > /dev/null 2>&1
            rc=$?
            [ "$rc" -eq 0 ] || fails=$((fails + 1))
            echo "$k run $i: exit $rc $("$L" info "$d" | grep -E 'finaliz' | tr -s ' ' | head -2 |
                tr '\n' ' ')"
        done
    done
fi
if want threads; then
    step "finalize_threads.py"
    for n in 0 4; do
        LLMPROF_FINALIZE_AFTER_MS=0 rec "threads$n" --capture cuda-profiler --finalize -- \
            "${FT[@]}" --threads "$n"
    done
fi
if want graphs; then
    step "graphs made after a finalize (finalize_threads.py --threads 0 --graph-at 11)"
    # the program's JSON line in FILE: its results identical to the unprofiled run's ($ref)
    same() {
        python3 -c 'import json, sys
line = [l for l in open(sys.argv[1]) if l.startswith("{\"threads\"")][-1]
d, ref = json.loads(line), json.loads(sys.argv[2])
ok = d["identical"] and d["graph_results"] == ref["graph_results"]
print("results", "identical to the unprofiled run" if ok else "DIFFER", d["graph_results"])
sys.exit(0 if ok else 1)' "$1" "$ref"
    }
    ref=$("${FT[@]}" --threads 0 --graph-at 11 | tail -1)
    echo "unprofiled: $ref"
    for i in 1 2 3 4; do
        LLMPROF_FINALIZE_AFTER_MS=0 timeout 300 "$L" record -o "$T/graphs$i" --capture \
            cuda-profiler --finalize -- "${FT[@]}" --threads 0 --graph-at 11 > "$T/graphs$i.log" 2>&1
        rc=$?
        echo "graphs$i: exit $rc"
        [ "$rc" -eq 0 ] && same "$T/graphs$i.log" || fails=$((fails + 1))
        "$L" info "$T/graphs$i" | grep -E "capture|finalized|graphs|node by node|records"
    done
    for i in 1 2 3 4; do # shown, not counted: a library from before a change
        [ -n "${FIN_OLD_LIB:-}" ] || break
        LLMPROF_LIB=$FIN_OLD_LIB LLMPROF_FINALIZE_AFTER_MS=0 timeout 300 "$L" record \
            -o "$T/graphs-old$i" --capture cuda-profiler --finalize -- \
            "${FT[@]}" --threads 0 --graph-at 11 > "$T/graphs-old$i.log" 2>&1
        echo "graphs-old$i ($FIN_OLD_LIB): exit $?"
        grep -E "Error|failed" "$T/graphs-old$i.log" | cut -c1-240
        same "$T/graphs-old$i.log"
    done
fi
if want profiler; then
    step "torch.profiler present (finalize_threads.py --threads 0 --torch-profiler)"
    LLMPROF_FINALIZE_AFTER_MS=0 rec profiler --capture cuda-profiler --finalize -- \
        "${FT[@]}" --threads 0 --torch-profiler
fi
if want hf; then
    for spec in 'nvtx:^step$/8' cuda-profiler; do
        step "HF eager decode, --capture $spec --finalize"
        args=(--new-tokens 64 --requests 3)
        [ "$spec" = cuda-profiler ] && args+=(--cuda-profiler warmup) || args+=(--step-ranges)
        rec "hf-${spec%%:*}" --capture "$spec" --finalize -- "$PY" tests/gpu/hf_loop.py "${args[@]}"
        "$L" report "$T/hf-${spec%%:*}" --quiet || { echo "report failed: $?"; fails=$((fails + 1)); }
    done
fi
if want window_threads; then
    step "window_threads"
    bash tests/gpu/window_threads.sh | tail -30 || fails=$((fails + 1))
fi
step "summary"
echo "$fails runs or reports failed"
[ "$fails" -eq 0 ]
