/* Feasibility probe for issue 13 (hardware counters per stage without replay), run on the
 * GPU machine: can the CUPTI Range Profiler, driven from C, count a set of metrics in one
 * pass over user ranges, and do the counts match what the work must do? It runs a bf16
 * cuBLAS GEMM (known FLOPs) and a device-to-device copy (known bytes) each in its own range,
 * then prints, per candidate metric set, the passes it needs and, for one-pass sets, each
 * range's values. Not part of llmprof: the collector will bind these calls late.
 * Build: see tests/gpu/build.sh (C, CUPTI headers; an empty <string> stands in for the C++
 * include of cupti_profiler_host.h in CUDA 13.0). */
#include <cublas_v2.h>
#include <cuda.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        int rc_ = (int)(call);                                                             \
        if (rc_ != 0) {                                                                    \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, rc_);     \
            return -1;                                                                     \
        }                                                                                  \
    } while (0)

static const char *chip;
static uint8_t *avail;

/* passes a metric set needs: 0 when CUPTI refuses a name */
static int passes_of(const char **names, size_t n, size_t *passes, uint8_t **config,
                     size_t *config_size, CUpti_Profiler_Host_Object **host)
{
    CUpti_Profiler_Host_Initialize_Params hi = {CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    hi.pChipName = chip;
    hi.pCounterAvailabilityImage = avail;
    CHECK(cuptiProfilerHostInitialize(&hi));
    *host = hi.pHostObject;
    CUpti_Profiler_Host_ConfigAddMetrics_Params am = {
        CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    am.pHostObject = hi.pHostObject;
    am.ppMetricNames = names;
    am.numMetrics = n;
    CHECK(cuptiProfilerHostConfigAddMetrics(&am));
    CUpti_Profiler_Host_GetConfigImageSize_Params cs = {
        CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
    cs.pHostObject = hi.pHostObject;
    CHECK(cuptiProfilerHostGetConfigImageSize(&cs));
    *config = calloc(1, cs.configImageSize);
    *config_size = cs.configImageSize;
    CUpti_Profiler_Host_GetConfigImage_Params ci = {
        CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    ci.pHostObject = hi.pHostObject;
    ci.configImageSize = cs.configImageSize;
    ci.pConfigImage = *config;
    CHECK(cuptiProfilerHostGetConfigImage(&ci));
    CUpti_Profiler_Host_GetNumOfPasses_Params np = {
        CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
    np.configImageSize = cs.configImageSize;
    np.pConfigImage = *config;
    CHECK(cuptiProfilerHostGetNumOfPasses(&np));
    *passes = np.numOfPasses;
    return 0;
}

struct work {
    cublasHandle_t h;
    CUdeviceptr a, b, c, src, dst;
    int n;
    size_t copy_bytes;
};

static int run_work(CUpti_RangeProfiler_Object *rp, struct work *w)
{
    const float one = 1, zero = 0;
    CUpti_RangeProfiler_PushRange_Params pu = {CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
    CUpti_RangeProfiler_PopRange_Params po = {CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
    pu.pRangeProfilerObject = rp;
    po.pRangeProfilerObject = rp;
    pu.pRangeName = "gemm";
    CHECK(cuptiRangeProfilerPushRange(&pu));
    for (int i = 0; i < 4; i++)
        CHECK(cublasGemmEx(w->h, CUBLAS_OP_N, CUBLAS_OP_N, w->n, w->n, w->n, &one, (void *)w->a,
                           CUDA_R_16BF, w->n, (void *)w->b, CUDA_R_16BF, w->n, &zero,
                           (void *)w->c, CUDA_R_16BF, w->n, CUBLAS_COMPUTE_32F,
                           CUBLAS_GEMM_DEFAULT));
    CHECK(cuptiRangeProfilerPopRange(&po));
    pu.pRangeName = "copy";
    CHECK(cuptiRangeProfilerPushRange(&pu));
    for (int i = 0; i < 4; i++)
        CHECK(cuMemcpyDtoDAsync(w->dst, w->src, w->copy_bytes, 0));
    CHECK(cuptiRangeProfilerPopRange(&po));
    return 0;
}

static int measure(CUcontext ctx, const char *label, const char **names, size_t n,
                   struct work *w)
{
    size_t passes = 0, config_size = 0;
    uint8_t *config = NULL;
    CUpti_Profiler_Host_Object *host = NULL;
    if (passes_of(names, n, &passes, &config, &config_size, &host) != 0) {
        printf("set %s: refused\n", label);
        return 0;
    }
    printf("set %s: %zu metrics, %zu pass%s\n", label, n, passes, passes == 1 ? "" : "es");
    if (passes != 1)
        return 0;
    CUpti_RangeProfiler_Enable_Params en = {CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    en.ctx = ctx;
    CHECK(cuptiRangeProfilerEnable(&en));
    CUpti_RangeProfiler_Object *rp = en.pRangeProfilerObject;
    CUpti_RangeProfiler_GetCounterDataSize_Params ds = {
        CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    ds.pRangeProfilerObject = rp;
    ds.pMetricNames = names;
    ds.numMetrics = n;
    ds.maxNumOfRanges = 8;
    ds.maxNumRangeTreeNodes = 8;
    CHECK(cuptiRangeProfilerGetCounterDataSize(&ds));
    uint8_t *data = calloc(1, ds.counterDataSize);
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params di = {
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    di.pRangeProfilerObject = rp;
    di.counterDataSize = ds.counterDataSize;
    di.pCounterData = data;
    CHECK(cuptiRangeProfilerCounterDataImageInitialize(&di));
    CUpti_RangeProfiler_SetConfig_Params sc = {CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    sc.pRangeProfilerObject = rp;
    sc.configSize = config_size;
    sc.pConfig = config;
    sc.counterDataImageSize = ds.counterDataSize;
    sc.pCounterDataImage = data;
    sc.range = CUPTI_UserRange;
    sc.replayMode = CUPTI_UserReplay;
    sc.maxRangesPerPass = 8;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.passIndex = 0;
    sc.targetNestingLevel = 1;
    CHECK(cuptiRangeProfilerSetConfig(&sc));
    CUpti_RangeProfiler_Start_Params st = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    st.pRangeProfilerObject = rp;
    CHECK(cuptiRangeProfilerStart(&st));
    if (run_work(rp, w) != 0)
        return -1;
    CUpti_RangeProfiler_Stop_Params sp = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    sp.pRangeProfilerObject = rp;
    CHECK(cuptiRangeProfilerStop(&sp));
    CUpti_RangeProfiler_DecodeData_Params dd = {CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    dd.pRangeProfilerObject = rp;
    CHECK(cuptiRangeProfilerDecodeData(&dd));
    CUpti_RangeProfiler_GetCounterDataInfo_Params gi = {
        CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    gi.pCounterDataImage = data;
    gi.counterDataImageSize = ds.counterDataSize;
    CHECK(cuptiRangeProfilerGetCounterDataInfo(&gi));
    printf("  ranges %zu, dropped %zu\n", gi.numTotalRanges, dd.numOfRangeDropped);
    double *v = calloc(n, sizeof *v);
    for (size_t r = 0; r < gi.numTotalRanges; r++) {
        CUpti_RangeProfiler_CounterData_GetRangeInfo_Params ri = {
            CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE};
        ri.pCounterDataImage = data;
        ri.counterDataImageSize = ds.counterDataSize;
        ri.rangeIndex = r;
        ri.rangeDelimiter = "/";
        CHECK(cuptiRangeProfilerCounterDataGetRangeInfo(&ri));
        CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {
            CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
        ev.pHostObject = host;
        ev.pCounterDataImage = data;
        ev.counterDataImageSize = ds.counterDataSize;
        ev.rangeIndex = r;
        ev.ppMetricNames = names;
        ev.numMetrics = n;
        ev.pMetricValues = v;
        CHECK(cuptiProfilerHostEvaluateToGpuValues(&ev));
        for (size_t i = 0; i < n; i++)
            printf("  %-6s %-75s %.6g\n", ri.rangeName, names[i], v[i]);
    }
    CUpti_RangeProfiler_Disable_Params dis = {CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
    dis.pRangeProfilerObject = rp;
    CHECK(cuptiRangeProfilerDisable(&dis));
    CUpti_Profiler_Host_Deinitialize_Params hd = {
        CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
    hd.pHostObject = host;
    CHECK(cuptiProfilerHostDeinitialize(&hd));
    free(v);
    free(data);
    free(config);
    return 0;
}

/* `counters_probe pm`: the PM-sampling base metrics of the chip whose names the triage set
 * (pmsample.c) draws from, then exit */
static int list_pm_metrics(void)
{
    CUpti_Profiler_Host_Initialize_Params hi = {CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    hi.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
    hi.pChipName = chip;
    CUpti_PmSampling_GetCounterAvailability_Params ca = {
        CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE};
    ca.deviceIndex = 0;
    CHECK(cuptiPmSamplingGetCounterAvailability(&ca));
    uint8_t *pm_avail = calloc(1, ca.counterAvailabilityImageSize);
    ca.pCounterAvailabilityImage = pm_avail;
    CHECK(cuptiPmSamplingGetCounterAvailability(&ca));
    hi.pCounterAvailabilityImage = pm_avail;
    CHECK(cuptiProfilerHostInitialize(&hi));
    static const char *const want[] = {"lts__", "dramc__", "realtime", "gr__cycles", "gpc__cycles",
                                       "sm__cycles_active", "pcie__", "nvl"};
    for (int type = 0; type < CUPTI_METRIC_TYPE__COUNT; type++) {
        CUpti_Profiler_Host_GetBaseMetrics_Params bm = {
            CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE};
        bm.pHostObject = hi.pHostObject;
        bm.metricType = (CUpti_MetricType)type;
        CHECK(cuptiProfilerHostGetBaseMetrics(&bm));
        printf("PM sampling base metrics of type %d: %zu\n", type, bm.numMetrics);
        for (size_t i = 0; i < bm.numMetrics; i++)
            for (size_t k = 0; k < sizeof want / sizeof *want; k++)
                if (strstr(bm.ppMetricNames[i], want[k])) {
                    printf("  pm %d %s\n", type, bm.ppMetricNames[i]);
                    break;
                }
    }
    free(pm_avail);
    return 0;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CUpti_Profiler_Initialize_Params pi = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    CHECK(cuptiProfilerInitialize(&pi));
    CUpti_Device_GetChipName_Params cn = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    cn.deviceIndex = 0;
    CHECK(cuptiDeviceGetChipName(&cn));
    chip = cn.pChipName;
    if (argc > 1 && !strcmp(argv[1], "pm"))
        return list_pm_metrics();
    CUpti_Profiler_GetCounterAvailability_Params ca = {
        CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    ca.ctx = ctx;
    CHECK(cuptiProfilerGetCounterAvailability(&ca));
    avail = calloc(1, ca.counterAvailabilityImageSize);
    ca.pCounterAvailabilityImage = avail;
    CHECK(cuptiProfilerGetCounterAvailability(&ca));
    printf("chip %s, counter availability image %zu bytes\n", chip, ca.counterAvailabilityImageSize);

    struct work w = {.n = 4096, .copy_bytes = (size_t)1 << 30};
    size_t mat = (size_t)w.n * w.n * 2;
    CHECK(cuMemAlloc(&w.a, mat));
    CHECK(cuMemAlloc(&w.b, mat));
    CHECK(cuMemAlloc(&w.c, mat));
    CHECK(cuMemAlloc(&w.src, w.copy_bytes));
    CHECK(cuMemAlloc(&w.dst, w.copy_bytes));
    CHECK(cuMemsetD8(w.a, 0x3c, mat));
    CHECK(cuMemsetD8(w.b, 0x3c, mat));
    CHECK(cublasCreate(&w.h));
    /* warm-up outside any range: cuBLAS picks and loads its kernel */
    const float one = 1, zero = 0;
    CHECK(cublasGemmEx(w.h, CUBLAS_OP_N, CUBLAS_OP_N, w.n, w.n, w.n, &one, (void *)w.a,
                       CUDA_R_16BF, w.n, (void *)w.b, CUDA_R_16BF, w.n, &zero, (void *)w.c,
                       CUDA_R_16BF, w.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CHECK(cuCtxSynchronize());
    printf("expected: gemm %.6g FLOPs (4 x 2 n^3), copy %.6g bytes read and as many written\n",
           4 * 2.0 * w.n * w.n * w.n, 4.0 * (double)w.copy_bytes);

    /* the base counter metrics of this chip whose names say tensor work or DRAM bytes */
    {
        CUpti_Profiler_Host_Initialize_Params hi = {
            CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
        hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
        hi.pChipName = chip;
        hi.pCounterAvailabilityImage = avail;
        CHECK(cuptiProfilerHostInitialize(&hi));
        for (int type = 0; type < CUPTI_METRIC_TYPE__COUNT; type++) {
            CUpti_Profiler_Host_GetBaseMetrics_Params bm = {
                CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE};
            bm.pHostObject = hi.pHostObject;
            bm.metricType = (CUpti_MetricType)type;
            CHECK(cuptiProfilerHostGetBaseMetrics(&bm));
            printf("base metrics of type %d: %zu\n", type, bm.numMetrics);
            for (size_t i = 0; i < bm.numMetrics; i++)
                if (strstr(bm.ppMetricNames[i], "tensor") ||
                    strstr(bm.ppMetricNames[i], "dram__bytes") ||
                    strstr(bm.ppMetricNames[i], "flop") ||
                    !strncmp(bm.ppMetricNames[i], "sm__throughput", 14) ||
                    !strncmp(bm.ppMetricNames[i], "gpu__time", 9))
                    printf("  %d %s\n", type, bm.ppMetricNames[i]);
        }
        CUpti_Profiler_Host_Deinitialize_Params hd = {
            CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
        hd.pHostObject = hi.pHostObject;
        CHECK(cuptiProfilerHostDeinitialize(&hd));
    }
    /* passes of each candidate alone */
    static const char *each[] = {
        "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum",
        "sm__ops_path_tensor_op_hgmma_src_fp16_dst_fp32_sparsity_off.sum",
        "sm__ops_path_tensor_op_hgmma_src_fp16_dst_fp16_sparsity_off.sum",
        "sm__ops_path_tensor_op_hgmma_src_fp8_dst_fp32_sparsity_off.sum",
        "sm__ops_path_tensor_op_hgmma_src_e4m3_dst_fp32_sparsity_off.sum",
        "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32_sparsity_off.sum",
        "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32_sparsity_off.sum",
        "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32_sparsity_off.sum",
        "sm__ops_path_tensor_op_hmma_src_tf32_dst_fp32_sparsity_off.sum",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
        "sm__pipe_tensor_cycles_active.sum", "sm__cycles_elapsed.sum", "sm__cycles_elapsed.max",
        "gpc__cycles_elapsed.max", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum",
        "gpu__time_duration.sum", "sm__inst_executed.sum",
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum"};
    for (size_t i = 0; i < sizeof each / sizeof *each; i++) {
        size_t passes = 0, cs = 0;
        uint8_t *cfg = NULL;
        CUpti_Profiler_Host_Object *host = NULL;
        if (passes_of(&each[i], 1, &passes, &cfg, &cs, &host) == 0)
            printf("alone: %-70s %zu pass%s\n", each[i], passes, passes == 1 ? "" : "es");
        else
            printf("alone: %-70s refused\n", each[i]);
        free(cfg);
    }
    /* greedily, the candidates in order of importance that still fit one pass together */
    static const char *candidates[] = {
        "sm__ops_path_tensor_src_bf16_dst_fp32.sum", "sm__ops_path_tensor_src_fp16.sum",
        "sm__ops_path_tensor_src_fp8.sum", "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
        "dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
        "sm__cycles_elapsed.max", "sm__pipe_tensor_cycles_active.sum",
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", "lts__t_bytes.sum",
        "sm__ops_path_tensor_src_int8.sum", "sm__inst_executed.sum",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"};
    const char *kept[sizeof candidates / sizeof *candidates];
    size_t n_kept = 0;
    for (size_t i = 0; i < sizeof candidates / sizeof *candidates; i++) {
        size_t passes = 0, cs = 0;
        uint8_t *cfg = NULL;
        CUpti_Profiler_Host_Object *host = NULL;
        kept[n_kept] = candidates[i];
        int ok = passes_of(kept, n_kept + 1, &passes, &cfg, &cs, &host) == 0;
        printf("greedy: + %-66s %s\n", candidates[i],
               !ok ? "refused" : passes == 1 ? "kept (1 pass)" : "left out (2+ passes)");
        if (ok && passes == 1)
            n_kept++;
        free(cfg);
    }
    measure(ctx, "greedy", kept, n_kept, &w);
    static const char *tensor[] = {
        "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum",
        "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32_sparsity_off.sum",
        "sm__inst_executed_pipe_tensor_op_hgmma.sum",
    };
    static const char *memory[] = {"dram__bytes_read.sum", "dram__bytes_write.sum",
                                   "lts__t_bytes.sum", "gpu__time_duration.sum"};
    static const char *triage[] = {
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
        "gpc__cycles_elapsed.max"};
    static const char *fp32[] = {"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
                                 "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
                                 "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum"};
    static const char *wanted[] = {
        "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum",
        "sm__ops_path_tensor_op_hgmma_src_fp16_dst_fp32_sparsity_off.sum",
        "sm__ops_path_tensor_op_hgmma_src_fp8_dst_fp32_sparsity_off.sum",
        "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32_sparsity_off.sum",
        "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32_sparsity_off.sum",
        "dram__bytes_read.sum", "dram__bytes_write.sum",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed", "gpc__cycles_elapsed.max",
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"};
#define N(a) (sizeof a / sizeof *a)
    for (size_t i = 0; i < N(tensor); i++)
        measure(ctx, tensor[i], &tensor[i], 1, &w);
    measure(ctx, "memory", memory, N(memory), &w);
    measure(ctx, "triage", triage, N(triage), &w);
    measure(ctx, "fp32", fp32, N(fp32), &w);
    measure(ctx, "wanted", wanted, N(wanted), &w);
    /* the largest prefix of the wanted set that fits one pass */
    for (size_t k = N(wanted) - 1; k > 1; k--) {
        size_t passes = 0, cs = 0;
        uint8_t *cfg = NULL;
        CUpti_Profiler_Host_Object *host = NULL;
        if (passes_of(wanted, k, &passes, &cfg, &cs, &host) == 0) {
            printf("wanted[0..%zu): %zu pass%s\n", k, passes, passes == 1 ? "" : "es");
            CUpti_Profiler_Host_Deinitialize_Params hd = {
                CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
            hd.pHostObject = host;
            cuptiProfilerHostDeinitialize(&hd);
            free(cfg);
            if (passes == 1)
                break;
        }
    }
    return 0;
}
