#!/usr/bin/env bash
# Issue 49 on the GPU machine: where ncu's time per kernel goes. One small PyTorch program
# (a bf16 matmul and an add, 12 launches each after a warm-up) under ncu with each group of
# the metrics llmprof deep asks for, alone and together: ncu's replay passes per kernel (its
# "N passes" lines) and the wall time of 12 profiled kernels against the program under ncu
# profiling none. Then the report set with --cache-control none, and the eight sections.
# usage: ncu_passes.sh. Writes $OUT/ncu-passes-log.txt.
. "$(dirname "$0")/setup.sh" ncu-passes
ncu --version | tail -1
cat >"$T/mm.py" <<'EOF'
import torch
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    (a @ b).add_(1)
torch.cuda.synchronize()
for _ in range(12):
    (a @ b).add_(1)
torch.cuda.synchronize()
EOF
base="gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes.sum.per_second,sm__warps_active.avg.pct_of_peak_sustained_active,sm__maximum_warps_per_active_cycle_pct,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__occupancy_limit_blocks,launch__occupancy_limit_warps,launch__registers_per_thread,launch__grid_size,launch__block_size,launch__sm_count,launch__waves_per_multiprocessor,sm__cycles_elapsed.avg.per_second,launch__occupancy_limit_barriers,device__attribute_display_name"
tensor_pipe="sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"
stalls='regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$'
tensor_ops="sm__ops_path_tensor_src_bf16_dst_fp32.sum,sm__ops_path_tensor_src_fp16.sum,sm__ops_path_tensor_src_fp8.sum,sm__ops_path_tensor_src_tf32_dst_fp32.sum"
fp32="smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,smsp__sass_thread_inst_executed_op_fmul_pred_on.sum"
all="$base,$tensor_pipe,$stalls,$tensor_ops,$fp32"
sections=(--section SpeedOfLight --section Occupancy --section LaunchStats
    --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis
    --section SpeedOfLight_RooflineChart --section WarpStateStats --section SchedulerStats)

# NAME NCU-OPTIONS...: the program under ncu, profiling the 24 launches after the warm-up's 6
probe() {
    local name=$1
    shift
    local t0=$EPOCHREALTIME
    ncu --config-file off --clock-control none --launch-skip 6 --launch-count 24 "$@" \
        "$PY" "$T/mm.py" >"$T/$name.log" 2>&1
    local rc=$? wall
    wall=$(awk "BEGIN { printf \"%.1f\", $EPOCHREALTIME - $t0 }")
    echo "RESULT $name: exit $rc, wall $wall s," \
        "$(grep -oE '[0-9]+ passes' "$T/$name.log" | sort | uniq -c | tr '\n' ' ')"
    [ $rc = 0 ] || tail -3 "$T/$name.log"
}

step "passes and time per group"
probe none-profiled -k regex:no_such_kernel --metrics gpu__time_duration.sum
probe duration --metrics gpu__time_duration.sum
probe base --metrics "$base"
probe base+tensor-pipe --metrics "$base,$tensor_pipe"
probe stalls --metrics "$stalls"
probe tensor-ops --metrics "$tensor_ops"
probe fp32-sass --metrics "$fp32"
probe report --metrics "$all"
probe report-cache-none --metrics "$all" --cache-control none
probe report-no-fp32 --metrics "$base,$tensor_pipe,$stalls,$tensor_ops"
probe full "${sections[@]}" --metrics "$tensor_ops,$fp32"
probe report-again --metrics "$all"
grep RESULT "$OUT/ncu-passes-log.txt"
