#!/usr/bin/env bash
# Issue 16 on the machine with two GPUs (nvidia-h200-x2). PART (first argument):
#   record    a tensor-parallel decoder under torchrun (2 ranks, NCCL all-reduce after
#             attention and MLP; tests/gpu/tp_decode.py), transformers' own tensor parallelism
#             (tp_plan="auto", generate()), and two independent processes, one per GPU, under
#             one record; checks the traces (one per process, named by rank, each GPU's UUID,
#             NVML samples) and reports them; packs small runs as fixtures
#             ($OUT/multi-gpu-runs.tar.gz).
#   overlap   the TP decoder with --overlap 4 (each row-parallel GEMM in 4 blocks, each block's
#             all-reduce asynchronous beside the next block's GEMM) and without, small, one
#             after the other; prints each run report's communication, overlap and energy
#             lines; packs both as fixtures ($OUT/multi-gpu-overlap.tar.gz).
#   hosts     the TP decoder's two ranks started by hand, rank 1 as a simulated second host
#             whose clock is SHIFT ns ahead (LLMPROF_TEST_HOST, LLMPROF_TEST_CLOCK_SHIFT_NS):
#             the run report must find that offset from the collectives within 50 us; prints
#             ranks.md's Hosts table; packs the run ($OUT/multi-gpu-hosts.tar.gz).
#   groups    (nvidia-h200-x4) the TP decoder as 2 replicas of TP 2 on 4 GPUs (--tp 2: two TP
#             groups, two DP groups that all-reduce once per decode step), under torchrun;
#             again with the replicas never communicating (--dp-sync 0); as two pipeline
#             stages of TP 2 (--pp 2: hidden states sent stage to stage); and again started by
#             hand with the second replica's ranks (2, 3) as a simulated second host whose
#             clock is SHIFT ns ahead, so that only the DP groups cross the hosts; prints
#             ranks.md's groups and hosts, checks the offset found (within 50 us); packs the
#             four runs ($OUT/multi-gpu-groups.tar.gz).
#   overhead  ROUNDS (second argument, default 6) interleaved rounds of the TP decoder
#             unprofiled, under llmprof record and under the floor (CUPTI kernel activity
#             alone), each rank's timings a JSON line in $OUT/tp-overhead.jsonl, summarised
#             per rank by bench/summarize.py.
# Expects build/ carried (bench/floor.c's library among it for overhead).
part=${1:-record}
. "$(dirname "$0")/setup.sh" "multi_gpu-$part"
. bench/modes.sh
nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv,noheader
nvidia-smi topo -m 2>/dev/null | head -4
TR=("$PY" -m torch.distributed.run --standalone --nproc-per-node 2)
fails=0

# NAME TRACES RECORD-ARGS... -- COMMAND: records; checks the number of traces and prints
# what info says of each
rec() {
    local name=$1 want=$2
    shift 2
    step "$name"
    timeout 400 "$L" record -o "$T/$name" "$@" 2>&1 | tail -6
    local rc=${PIPESTATUS[0]}
    echo "exit $rc"
    local n
    n=$(ls "$T/$name"/trace.*.lpt 2>/dev/null | wc -l)
    echo "traces: $n (want $want)"
    [ "$n" -eq "$want" ] || rc=1
    for t in "$T/$name"/trace.*.lpt; do
        echo "--- $(basename "$t")"
        "$L" info "$t" | grep -E "process|device|records|lost|nvml|NVML|stage|decode|prefill" | head -14
    done
    "$L" report "$T/$name" --quiet || { echo "report failed"; rc=1; }
    ls "$T/$name"
    [ "$rc" -eq 0 ] || fails=$((fails + 1))
}

# RANKS_JSON SHIFT: the simulated host's offset found within 50 us of -SHIFT, its clock
# aligned; prints the hosts and the error
check_offset() {
    python3 - "$1" "$2" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
shift = int(sys.argv[2])
for h in d["hosts"]:
    print(h)
b = [h for h in d["hosts"] if h["name"] == "sim-host-b"][0]
if b["offset_ns"] is None:
    sys.exit(f"sim-host-b not aligned: {b}")
err = b["offset_ns"] + shift
print(f"offset {b['offset_ns']} ns, applied {-shift} ns: error {err} ns, uncertainty "
      f"{b['uncertainty_ns']} ns, {b['collectives']} collectives; waits {d['waits']}")
sys.exit(0 if d["clocks_aligned"] and abs(err) <= 50000 else 1)
PYEOF
}

if [ "$part" = record ]; then
    # fixtures: small enough to commit (4 layers, 2 timed requests of 16 tokens)
    SMALL=(--layers 4 --requests 2 --new-tokens 16 --prompt 256)
    rec tp-manual 2 -- "${TR[@]}" tests/gpu/tp_decode.py "${SMALL[@]}"
    rec tp-hf 2 -- "${TR[@]}" tests/gpu/tp_decode.py --impl hf "${SMALL[@]}"
    rec two-procs 2 -- bash -c "CUDA_VISIBLE_DEVICES=0 $PY tests/gpu/tp_decode.py ${SMALL[*]} &
        CUDA_VISIBLE_DEVICES=1 $PY tests/gpu/tp_decode.py ${SMALL[*]} --layers 6 & wait"
    # the larger decoder the overhead part times, recorded once
    rec tp-manual-8l 2 -- "${TR[@]}" tests/gpu/tp_decode.py
    step "pack"
    tar -C "$T" --exclude=report.html --exclude='*.csv' --exclude='report.json' \
        --exclude='report.md' --exclude='summary.md' \
        -czf "$OUT/multi-gpu-runs.tar.gz" tp-manual tp-hf two-procs
    ls -la "$OUT"
    echo "$fails recorded programs failed"
    [ "$fails" -eq 0 ]
    exit
fi

if [ "$part" = overlap ]; then
    SMALL=(--layers 4 --requests 2 --new-tokens 16 --prompt 256)
    rec tp-overlap 2 -- "${TR[@]}" tests/gpu/tp_decode.py --overlap 4 "${SMALL[@]}"
    rec tp-plain 2 -- "${TR[@]}" tests/gpu/tp_decode.py "${SMALL[@]}"
    for name in tp-overlap tp-plain; do
        step "$name: run report"
        sed -n '/^| process/,/^$/p;/^| stage/,/^$/p;/^Communication/p;/^Energy/p;/energy/p' \
            "$T/$name/ranks.md" | head -40
        for d in "$T/$name"/trace.*/; do
            echo "--- $(basename "$d")"
            sed -n '/^## Communication/,/^## Utilisation/p' "$d/report.md" | grep -v '^$' | head -12
        done
    done
    step "pack"
    tar -C "$T" --exclude=report.html --exclude='*.csv' --exclude='report.json' \
        --exclude='report.md' --exclude='summary.md' \
        -czf "$OUT/multi-gpu-overlap.tar.gz" tp-overlap tp-plain
    ls -la "$OUT"
    echo "$fails recorded programs failed"
    [ "$fails" -eq 0 ]
    exit
fi

if [ "$part" = hosts ]; then
    SMALL=(--layers 4 --requests 2 --new-tokens 16 --prompt 256)
    SHIFT=1234567890
    E="MASTER_ADDR=127.0.0.1 MASTER_PORT=29541 WORLD_SIZE=2"
    rec tp-hosts 2 -- bash -c "env $E RANK=0 LOCAL_RANK=0 $PY tests/gpu/tp_decode.py ${SMALL[*]} &
        env $E RANK=1 LOCAL_RANK=1 LLMPROF_TEST_HOST=sim-host-b \
            LLMPROF_TEST_CLOCK_SHIFT_NS=$SHIFT $PY tests/gpu/tp_decode.py ${SMALL[*]} & wait"
    step "hosts: ranks.md"
    sed -n '/^## Hosts/,/^## Processes/p' "$T/tp-hosts/ranks.md"
    grep -i "waits in collectives" "$T/tp-hosts/ranks.md"
    step "hosts: the offset found against the one applied"
    check_offset "$T/tp-hosts/ranks.json" "$SHIFT" || fails=$((fails + 1))
    step "pack"
    tar -C "$T" --exclude=report.html --exclude='*.csv' --exclude='report.json' \
        --exclude='report.md' --exclude='summary.md' -czf "$OUT/multi-gpu-hosts.tar.gz" tp-hosts
    ls -la "$OUT"
    echo "$fails failed"
    [ "$fails" -eq 0 ]
    exit
fi

if [ "$part" = groups ]; then
    SMALL=(--layers 4 --requests 2 --new-tokens 16 --prompt 256 --tp 2)
    TR4=("$PY" -m torch.distributed.run --standalone --nproc-per-node 4)
    rec tp-groups 4 -- "${TR4[@]}" tests/gpu/tp_decode.py "${SMALL[@]}"
    rec tp-replicas 4 -- "${TR4[@]}" tests/gpu/tp_decode.py "${SMALL[@]}" --dp-sync 0
    rec tp-pipeline 4 -- "${TR4[@]}" tests/gpu/tp_decode.py "${SMALL[@]}" --pp 2
    SHIFT=1234567890
    E="MASTER_ADDR=127.0.0.1 MASTER_PORT=29542 WORLD_SIZE=4"
    B2="LLMPROF_TEST_HOST=sim-host-b LLMPROF_TEST_CLOCK_SHIFT_NS=$SHIFT"
    rec tp-groups-hosts 4 -- bash -c "
        env $E RANK=0 LOCAL_RANK=0 $PY tests/gpu/tp_decode.py ${SMALL[*]} &
        env $E RANK=1 LOCAL_RANK=1 $PY tests/gpu/tp_decode.py ${SMALL[*]} &
        env $E RANK=2 LOCAL_RANK=2 $B2 $PY tests/gpu/tp_decode.py ${SMALL[*]} &
        env $E RANK=3 LOCAL_RANK=3 $B2 $PY tests/gpu/tp_decode.py ${SMALL[*]} & wait"
    for name in tp-groups tp-replicas tp-pipeline tp-groups-hosts; do
        step "$name: ranks.md"
        sed -n '/^## Groups/,/^## Processes/p' "$T/$name/ranks.md" | head -60
        grep -i "waits in collectives" "$T/$name/ranks.md"
    done
    step "hosts: the offset found against the one applied"
    check_offset "$T/tp-groups-hosts/ranks.json" "$SHIFT" || fails=$((fails + 1))
    step "pack"
    tar -C "$T" --exclude=report.html --exclude='*.csv' --exclude='report.json' \
        --exclude='report.md' --exclude='summary.md' \
        -czf "$OUT/multi-gpu-groups.tar.gz" tp-groups tp-replicas tp-pipeline tp-groups-hosts
    ls -la "$OUT"
    echo "$fails failed"
    [ "$fails" -eq 0 ]
    exit
fi

rounds=${2:-6}
modes=(none default floor)
res="$OUT/tp-overhead.jsonl"
: >"$res"
for ((i = 0; i < rounds; i++)); do
    for ((j = 0; j < ${#modes[@]}; j++)); do
        mode=${modes[$(((i + j) % ${#modes[@]}))]}
        lp_bench_rec "$mode" "$T/$mode-$i"
        ${rec[@]+"${rec[@]}"} "${TR[@]}" tests/gpu/tp_decode.py 2>/dev/null | grep '^{' |
            while read -r line; do
                r=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["rank"])' "$line")
                echo "{\"round\": $i, \"mode\": \"$mode\", \"rank\": $r, \"run\": $line}" | tee -a "$res"
            done
        rm -rf "$T/$mode-$i"
    done
done
for r in 0 1; do
    step "rank $r"
    grep "\"rank\": $r," "$res" >"$T/rank$r.jsonl"
    python3 bench/summarize.py "$T/rank$r.jsonl" default/floor
    python3 bench/summarize.py "$T/rank$r.jsonl" --min default/floor
done
