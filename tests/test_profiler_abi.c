/* The profiler host API as src/collect/profiler_host.h declares it (the real header is C++
 * in CUDA 13.0) against the real header, compiled here with an empty <string> in front:
 * every parameter struct must have the size CUPTI's ..._STRUCT_SIZE macro gives and each
 * field its offset, or CUPTI would read the collector's calls wrong. */
#include <cupti_profiler_host.h>
#include <stddef.h>

#include "collect/profiler_host.h"

#define SAME(ours, theirs, field) \
    _Static_assert(offsetof(struct ours, field) == offsetof(theirs, field), #ours "." #field)
#define SIZE(ours, theirs) \
    _Static_assert(sizeof(struct ours) == theirs##_STRUCT_SIZE, #ours " size")

SIZE(lp_host_init_params, CUpti_Profiler_Host_Initialize_Params);
SAME(lp_host_init_params, CUpti_Profiler_Host_Initialize_Params, profilerType);
SAME(lp_host_init_params, CUpti_Profiler_Host_Initialize_Params, pChipName);
SAME(lp_host_init_params, CUpti_Profiler_Host_Initialize_Params, pCounterAvailabilityImage);
SAME(lp_host_init_params, CUpti_Profiler_Host_Initialize_Params, pHostObject);
_Static_assert((int)LP_PROFILER_TYPE_RANGE_PROFILER == (int)CUPTI_PROFILER_TYPE_RANGE_PROFILER, "type");
_Static_assert((int)LP_PROFILER_TYPE_PM_SAMPLING == (int)CUPTI_PROFILER_TYPE_PM_SAMPLING, "type");
_Static_assert(sizeof(int) == sizeof(CUpti_ProfilerType), "enum size");

SIZE(lp_host_deinit_params, CUpti_Profiler_Host_Deinitialize_Params);
SAME(lp_host_deinit_params, CUpti_Profiler_Host_Deinitialize_Params, pHostObject);

SIZE(lp_host_add_metrics_params, CUpti_Profiler_Host_ConfigAddMetrics_Params);
SAME(lp_host_add_metrics_params, CUpti_Profiler_Host_ConfigAddMetrics_Params, pHostObject);
SAME(lp_host_add_metrics_params, CUpti_Profiler_Host_ConfigAddMetrics_Params, ppMetricNames);
SAME(lp_host_add_metrics_params, CUpti_Profiler_Host_ConfigAddMetrics_Params, numMetrics);

SIZE(lp_host_config_size_params, CUpti_Profiler_Host_GetConfigImageSize_Params);
SAME(lp_host_config_size_params, CUpti_Profiler_Host_GetConfigImageSize_Params, configImageSize);

SIZE(lp_host_config_image_params, CUpti_Profiler_Host_GetConfigImage_Params);
SAME(lp_host_config_image_params, CUpti_Profiler_Host_GetConfigImage_Params, configImageSize);
SAME(lp_host_config_image_params, CUpti_Profiler_Host_GetConfigImage_Params, pConfigImage);

SIZE(lp_host_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params);
SAME(lp_host_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params, configImageSize);
SAME(lp_host_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params, pConfigImage);
SAME(lp_host_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params, numOfPasses);

SIZE(lp_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params);
SAME(lp_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pHostObject);
SAME(lp_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pCounterDataImage);
SAME(lp_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, counterDataImageSize);
SAME(lp_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, rangeIndex);
SAME(lp_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, ppMetricNames);
SAME(lp_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, numMetrics);
SAME(lp_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pMetricValues);

int main(void) { return 0; } /* the checks above ran when this compiled */
