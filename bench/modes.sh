# The recording modes the overhead benchmarks compare: one list, sourced by overhead.sh and
# launch_overhead.sh. lp_bench_rec MODE DIR fills the array rec with the command that runs a
# program in MODE (empty for none); it returns 1 for an unknown mode.
#   none                  the program alone
#   default, light        llmprof record, and --light (NVTX, PM sampling, NVML; no kernels)
#   graphs-node           record --graphs node: each kernel of a CUDA graph replay recorded
#                         (the default records each replay whole)
#   default-nonvml        --nvml-hz 0
#   default-nogemm        --no-gemm (GEMM capture's cost: default against this)
#   default-nosub         without holding CUPTI's subscriber slot (LLMPROF_SUBSCRIBE=0)
#   default-devbuf, graphs-node-devbuf   the default (and --graphs node) with 16 of CUPTI's
#                         device buffers made at each context's creation (its default: 3)
#   kernels               kernel, NVTX, device and overhead records only, no GEMM capture, no
#                         NVML (what --light was before PM sampling): CUPTI's kernel tracing
#   kernels-nosub, kernels-noflush, kernels-bigbuf   the same without the subscriber slot,
#                         with a periodic flush every 100 s, with 32 MiB activity buffers
#   launches              kernels with launch records (the launch callbacks): against
#                         kernels, what tying kernels to threads costs; default against it,
#                         the copy, set and memory kinds, GEMM capture and NVML
#   counters, pm          --counters; --pm-sampling 200 (on top of the default)
#   light-counters        --light --counters: the range profiler instead of PM sampling
#   light-nocounters      what --light enables without its counters: marker, device and
#                         overhead activity, NVTX, NVML, no GEMM capture
#   attach                CUPTI attached and subscribed, device record only, no NVML, no
#                         GEMM capture: what CUPTI's presence alone costs
#   attach-nosub          the same without the subscriber
#   k:LIST                llmprof record with LLMPROF_KINDS=LIST
#   capture, capture-nogemm   record --capture cuda-profiler (and --no-gemm): kernels only
#                         between the program's cudaProfilerStart and Stop
#   capture-bare          capture with nothing on outside windows but what switches (as
#                         windowed-bare)
#   capture-bare-node     capture-bare with --graphs node: no graph-level records
#   windowed              record --capture 'nvtx:^step$/8': one decode step in 8 (the
#                         program's NVTX ranges "step", as the harnesses' --step-ranges make)
#   windowed-node         windowed with --graphs node
#   windowed-nolaunch     the same without launch records (LLMPROF_KINDS without api): only
#                         kernel activity and GEMM capture are switched
#   windowed-bare         windowed with nothing on between windows but kernel activity and
#                         launch records (LLMPROF_KINDS=kernel,api; the launch callbacks stay
#                         enabled, recording nothing), no GEMM capture, no NVML: what
#                         llmprof's always-on parts cost outside windows
#   windowed-never        windowed-bare whose range never comes (--capture 'nvtx:^never$'): the
#                         state between windows without a window ever switched on and off
#   activity              the default with launch calls from CUPTI's API activity records
#                         (LLMPROF_LAUNCH=activity), as before the callbacks
#   launch-driver         the default with callbacks on the driver's launch calls only
#                         (LLMPROF_LAUNCH=driver): two callbacks per runtime launch, not four
#   floor                 not llmprof: bench/floor.c, CUPTI's kernel activity alone (the floor)
#   floor-stop-disable, floor-stop-finalize   the floor, kernel activity disabled (and CUPTI
#                         finalized) when the program calls cudaProfilerStop
#   floor-graph, floor-graph-only   the floor with CUPTI's graph-level records (one per graph
#                         launch) beside kernel activity, or alone
#   MODE-finalize         MODE (one with --capture) with --finalize: CUPTI finalized between
#                         capture windows
#   MODE-oldlib           MODE (a recording one; -oldlib last, after -finalize) with
#                         build/lib/old/libllmprof.so (a library from before a change, built
#                         from a git worktree) instead of build/lib's
#   floor-window, floor-ctx-window   kernel activity on only between the program's
#                         cudaProfilerStart and Stop (and, ctx-window, from the start until
#                         its first context is made): a capture window at CUPTI's level
lp_bench_rec() {
    local mode=$1 dir=$2 finalize= old=
    case $mode in *-oldlib) old=1 mode=${mode%-oldlib} ;; esac
    case $mode in *-finalize) finalize=1 mode=${mode%-finalize} ;; esac
    lp_bench_rec_mode "$mode" "$dir" || return 1
    [ -z "$finalize" ] || rec+=(--finalize)
    if [ -n "$old" ]; then # none and the floor load no llmprof library
        [[ ${rec[*]-} == *"/bin/llmprof record"* ]] || return 1
        rec=(env "LLMPROF_LIB=$B/lib/old/libllmprof.so" "${rec[@]}")
    fi
    return 0
}

lp_bench_rec_mode() {
    local mode=$1 dir=$2
    rec=("$B/bin/llmprof" record --quiet -o "$dir")
    case $mode in
    none) rec=() ;;
    default) ;;
    light) rec+=(--light) ;;
    graphs-node) rec+=(--graphs node) ;;
    default-nonvml) rec+=(--nvml-hz 0) ;;
    default-nogemm) rec+=(--no-gemm) ;;
    default-nosub) rec=(env LLMPROF_SUBSCRIBE=0 "${rec[@]}") ;;
    default-devbuf) rec=(env LLMPROF_DEVICE_BUFFERS=16 "${rec[@]}") ;;
    graphs-node-devbuf) rec=(env LLMPROF_DEVICE_BUFFERS=16 "${rec[@]}" --graphs node) ;;
    kernels*)
        rec=(env LLMPROF_KINDS=kernel,marker,device,overhead "${rec[@]}" --no-gemm --nvml-hz 0)
        case $mode in
        kernels) ;;
        kernels-nosub) rec=(env LLMPROF_SUBSCRIBE=0 "${rec[@]:1}") ;;
        kernels-noflush) rec=(env LLMPROF_FLUSH_MS=100000 "${rec[@]:1}") ;;
        kernels-bigbuf) rec=(env LLMPROF_BUFFER_KB=32768 "${rec[@]:1}") ;;
        *) return 1 ;;
        esac ;;
    launches)
        rec=(env LLMPROF_KINDS=kernel,marker,device,overhead,api "${rec[@]}" --no-gemm
             --nvml-hz 0) ;;
    counters) rec+=(--counters) ;;
    pm) rec+=(--pm-sampling 200) ;;
    light-counters) rec+=(--light --counters) ;;
    light-nocounters) rec=(env LLMPROF_KINDS=marker,device,overhead "${rec[@]}" --no-gemm) ;;
    attach) rec=(env LLMPROF_KINDS=device "${rec[@]}" --no-gemm --nvml-hz 0) ;;
    attach-nosub) rec=(env LLMPROF_KINDS=device LLMPROF_SUBSCRIBE=0 "${rec[@]}" --no-gemm --nvml-hz 0) ;;
    k:*) rec=(env "LLMPROF_KINDS=${mode#k:}" "${rec[@]}") ;;
    capture) rec+=(--capture cuda-profiler) ;;
    capture-nogemm) rec+=(--capture cuda-profiler --no-gemm) ;;
    capture-bare | capture-bare-node)
        rec=(env LLMPROF_KINDS=kernel,api "${rec[@]}" --no-gemm --nvml-hz 0
             --capture cuda-profiler)
        [ "$mode" = capture-bare-node ] && rec+=(--graphs node) ;;
    windowed) rec+=(--capture 'nvtx:^step$/8') ;;
    windowed-node) rec+=(--graphs node --capture 'nvtx:^step$/8') ;;
    windowed-bare)
        rec=(env LLMPROF_KINDS=kernel,api "${rec[@]}" --no-gemm --nvml-hz 0
             --capture 'nvtx:^step$/8') ;;
    windowed-never)
        rec=(env LLMPROF_KINDS=kernel,api "${rec[@]}" --no-gemm --nvml-hz 0
             --capture 'nvtx:^never$') ;;
    windowed-nolaunch)
        rec=(env LLMPROF_KINDS=kernel,marker,device,overhead,memcpy,memset,memory "${rec[@]}"
             --capture 'nvtx:^step$/8') ;;
    activity) rec=(env LLMPROF_LAUNCH=activity "${rec[@]}") ;;
    launch-driver) rec=(env LLMPROF_LAUNCH=driver "${rec[@]}") ;;
    floor) rec=(env "CUDA_INJECTION64_PATH=$B/lib/libfloor.so" LP_FLOOR=kernel) ;;
    floor-stop-disable|floor-stop-finalize|floor-graph|floor-graph-only|floor-window|floor-ctx-window)
        rec=(env "CUDA_INJECTION64_PATH=$B/lib/libfloor.so" "LP_FLOOR=${mode#floor-}") ;;
    *) return 1 ;;
    esac
    return 0
}
