/* Late-bound CUPTI: the functions the collector uses, bound (dlbind.h) from the CUPTI
 * the process already has loaded (PyTorch ships its own) or, failing that, from the
 * first one found. One process, one CUPTI: NVTX forwarding uses the same copy.
 * Every call goes through LP_CUPTI(), which checks the result and warns once. */
#ifndef LP_COLLECT_CUPTI_API_H
#define LP_COLLECT_CUPTI_API_H

#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include "profiler_host.h"

/* The CUPTI functions the collector uses, the one list they are declared and bound from:
 * X(NAME, REQUIRED, PARAMETERS) is cupti<NAME>, returning CUptiResult. Optional ones are
 * NULL on CUPTI versions without them. */
#define LP_CUPTI_FUNCTIONS(X)                                                            \
    X(GetVersion, 1, (uint32_t *))                                                       \
    X(GetResultString, 1, (CUptiResult, const char **))                                  \
    X(GetTimestamp, 1, (uint64_t *))                                                     \
    X(GetCallbackName, 0, (CUpti_CallbackDomain, uint32_t, const char **))               \
    X(ActivityEnable, 1, (CUpti_ActivityKind))                                           \
    X(ActivityDisable, 1, (CUpti_ActivityKind))                                          \
    X(ActivityRegisterCallbacks, 1,                                                      \
      (CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc))             \
    X(ActivityFlushAll, 1, (uint32_t))                                                   \
    X(ActivityGetNextRecord, 1, (uint8_t *, size_t, CUpti_Activity **))                  \
    X(ActivityGetNumDroppedRecords, 1, (CUcontext, uint32_t, size_t *))                  \
    X(ActivitySetAttribute, 0, (CUpti_ActivityAttribute, size_t *, void *))              \
    X(ActivityGetAttribute, 0, (CUpti_ActivityAttribute, size_t *, void *))              \
    X(Subscribe, 1, (CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *))              \
    X(ActivityEnableRuntimeApi, 0, (CUpti_CallbackId, uint8_t))                          \
    X(ActivityEnableDriverApi, 0, (CUpti_CallbackId, uint8_t))                           \
    X(EnableCallback, 0,                                                                 \
      (uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId))        \
    X(GetGraphNodeId, 0, (CUgraphNode, uint64_t *))                                      \
    X(GetGraphId, 0, (CUgraph, uint32_t *))                                              \
    X(GetGraphExecId, 0, (CUgraphExec, uint32_t *))                                      \
    X(GetDeviceId, 0, (CUcontext, uint32_t *))                                           \
    X(Finalize, 0, (void))                                                               \
    X(Unsubscribe, 0, (CUpti_SubscriberHandle))                                          \
    /* the range profiler (counters.c), CUPTI 12.6 and later */                          \
    X(ProfilerInitialize, 0, (CUpti_Profiler_Initialize_Params *))                       \
    X(DeviceGetChipName, 0, (CUpti_Device_GetChipName_Params *))                         \
    X(ProfilerGetCounterAvailability, 0, (CUpti_Profiler_GetCounterAvailability_Params *)) \
    X(ProfilerHostInitialize, 0, (struct lp_host_init_params *))                         \
    X(ProfilerHostDeinitialize, 0, (struct lp_host_deinit_params *))                     \
    X(ProfilerHostConfigAddMetrics, 0, (struct lp_host_add_metrics_params *))            \
    X(ProfilerHostGetConfigImageSize, 0, (struct lp_host_config_size_params *))          \
    X(ProfilerHostGetConfigImage, 0, (struct lp_host_config_image_params *))             \
    X(ProfilerHostGetNumOfPasses, 0, (struct lp_host_passes_params *))                   \
    X(ProfilerHostEvaluateToGpuValues, 0, (struct lp_host_evaluate_params *))            \
    X(RangeProfilerEnable, 0, (CUpti_RangeProfiler_Enable_Params *))                     \
    X(RangeProfilerDisable, 0, (CUpti_RangeProfiler_Disable_Params *))                   \
    X(RangeProfilerGetCounterDataSize, 0, (CUpti_RangeProfiler_GetCounterDataSize_Params *)) \
    X(RangeProfilerCounterDataImageInitialize, 0,                                        \
      (CUpti_RangeProfiler_CounterDataImage_Initialize_Params *))                        \
    X(RangeProfilerSetConfig, 0, (CUpti_RangeProfiler_SetConfig_Params *))               \
    X(RangeProfilerStart, 0, (CUpti_RangeProfiler_Start_Params *))                       \
    X(RangeProfilerStop, 0, (CUpti_RangeProfiler_Stop_Params *))                         \
    X(RangeProfilerPushRange, 0, (CUpti_RangeProfiler_PushRange_Params *))               \
    X(RangeProfilerPopRange, 0, (CUpti_RangeProfiler_PopRange_Params *))                 \
    X(RangeProfilerDecodeData, 0, (CUpti_RangeProfiler_DecodeData_Params *))             \
    X(RangeProfilerGetCounterDataInfo, 0, (CUpti_RangeProfiler_GetCounterDataInfo_Params *)) \
    X(RangeProfilerCounterDataGetRangeInfo, 0,                                           \
      (CUpti_RangeProfiler_CounterData_GetRangeInfo_Params *))                           \
    /* PM sampling (pmsample.c), CUPTI 12.6 and later */                                 \
    X(PmSamplingGetCounterAvailability, 0, (CUpti_PmSampling_GetCounterAvailability_Params *)) \
    X(PmSamplingEnable, 0, (CUpti_PmSampling_Enable_Params *))                           \
    X(PmSamplingDisable, 0, (CUpti_PmSampling_Disable_Params *))                         \
    X(PmSamplingSetConfig, 0, (CUpti_PmSampling_SetConfig_Params *))                     \
    X(PmSamplingStart, 0, (CUpti_PmSampling_Start_Params *))                             \
    X(PmSamplingStop, 0, (CUpti_PmSampling_Stop_Params *))                               \
    X(PmSamplingDecodeData, 0, (CUpti_PmSampling_DecodeData_Params *))                   \
    X(PmSamplingGetCounterDataSize, 0, (CUpti_PmSampling_GetCounterDataSize_Params *))   \
    X(PmSamplingCounterDataImageInitialize, 0,                                           \
      (CUpti_PmSampling_CounterDataImage_Initialize_Params *))                           \
    X(PmSamplingGetCounterDataInfo, 0, (CUpti_PmSampling_GetCounterDataInfo_Params *))   \
    X(PmSamplingCounterDataGetSampleInfo, 0,                                             \
      (CUpti_PmSampling_CounterData_GetSampleInfo_Params *))

struct lp_cupti_api {
    void *handle;
    char path[512];          /* the file the functions came from */
    uint32_t version;        /* cuptiGetVersion at run time */
#define LP_CUPTI_FIELD(name, required, params) CUptiResult(*name) params;
    LP_CUPTI_FUNCTIONS(LP_CUPTI_FIELD)
#undef LP_CUPTI_FIELD
    int (*InitializeInjectionNvtx2)(void *); /* optional, bound with the list */
};

extern struct lp_cupti_api lp_cupti;

/* Loads CUPTI once; 0 on success, else -1 with a reason in ERR. Thread-safe. */
int lp_cupti_load(char *err, size_t errlen);
/* Binds LIST (dlbind.h) from the process's loaded CUDA driver (often loaded RTLD_LOCAL by
 * cudart, out of dlsym(RTLD_DEFAULT)'s reach), else from the global scope. */
struct lp_dl_sym;
void lp_cuda_driver_bind(const struct lp_dl_sym *list, size_t n);
/* The same for one symbol: its address, or NULL. */
void *lp_cuda_driver_sym(const char *name);
/* Checks a CUPTI result: on error warns once per call site and returns the error. */
CUptiResult lp_cupti_check(CUptiResult rc, const char *what);

#define LP_CUPTI(fn, ...) \
    lp_cupti_check(lp_cupti.fn ? lp_cupti.fn(__VA_ARGS__) : CUPTI_ERROR_NOT_INITIALIZED, "cupti" #fn)

#endif
