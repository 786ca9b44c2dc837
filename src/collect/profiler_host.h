/* The few types of CUPTI's profiler host API (cupti_profiler_host.h) the counters use,
 * declared here because CUDA 13.0's header includes the C++ <string> and cannot be read by
 * a C compiler. Each parameter struct is declared up to the last field its
 * ..._STRUCT_SIZE macro names, in the header's order; tests/test_profiler_abi.c compiles
 * against the real header and checks every size and offset. */
#ifndef LP_COLLECT_PROFILER_HOST_H
#define LP_COLLECT_PROFILER_HOST_H

#include <stddef.h>
#include <stdint.h>

typedef struct CUpti_Profiler_Host_Object CUpti_Profiler_Host_Object;

enum lp_profiler_type { /* CUpti_ProfilerType */
    LP_PROFILER_TYPE_RANGE_PROFILER = 0,
    LP_PROFILER_TYPE_PM_SAMPLING = 1,
};

struct lp_host_init_params {
    size_t structSize;
    void *pPriv;
    int profilerType; /* the enum CUpti_ProfilerType, an int */
    const char *pChipName;
    const uint8_t *pCounterAvailabilityImage;
    CUpti_Profiler_Host_Object *pHostObject;
};

struct lp_host_deinit_params {
    size_t structSize;
    void *pPriv;
    CUpti_Profiler_Host_Object *pHostObject;
};

struct lp_host_add_metrics_params {
    size_t structSize;
    void *pPriv;
    CUpti_Profiler_Host_Object *pHostObject;
    const char **ppMetricNames;
    size_t numMetrics;
};

struct lp_host_config_size_params {
    size_t structSize;
    void *pPriv;
    CUpti_Profiler_Host_Object *pHostObject;
    size_t configImageSize;
};

struct lp_host_config_image_params {
    size_t structSize;
    void *pPriv;
    CUpti_Profiler_Host_Object *pHostObject;
    size_t configImageSize;
    uint8_t *pConfigImage;
};

struct lp_host_passes_params {
    size_t structSize;
    void *pPriv;
    size_t configImageSize;
    uint8_t *pConfigImage;
    size_t numOfPasses;
};

struct lp_host_evaluate_params {
    size_t structSize;
    void *pPriv;
    CUpti_Profiler_Host_Object *pHostObject;
    const uint8_t *pCounterDataImage;
    size_t counterDataImageSize;
    size_t rangeIndex;
    const char **ppMetricNames;
    size_t numMetrics;
    double *pMetricValues;
};

/* every struct above ends with its last field: its size is what CUPTI's macro gives */
#define LP_HOST_PARAMS(type) ((struct type){.structSize = sizeof(struct type)})

#endif
