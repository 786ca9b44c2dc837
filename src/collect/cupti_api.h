/* Late-bound CUPTI: the functions the collector uses, resolved with dlsym from the CUPTI
 * the process already has loaded (PyTorch ships its own) or, failing that, from the
 * first one found. One process, one CUPTI: NVTX forwarding uses the same copy.
 * Every call goes through LP_CUPTI(), which checks the result and warns once. */
#ifndef LP_COLLECT_CUPTI_API_H
#define LP_COLLECT_CUPTI_API_H

#include <cupti.h>

struct lp_cupti_api {
    void *handle;
    char path[512];          /* the file the functions came from */
    uint32_t version;        /* cuptiGetVersion at run time */
    CUptiResult (*GetVersion)(uint32_t *);
    CUptiResult (*GetResultString)(CUptiResult, const char **);
    CUptiResult (*GetTimestamp)(uint64_t *);
    CUptiResult (*GetCallbackName)(CUpti_CallbackDomain, uint32_t, const char **);
    CUptiResult (*ActivityEnable)(CUpti_ActivityKind);
    CUptiResult (*ActivityDisable)(CUpti_ActivityKind);
    CUptiResult (*ActivityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc,
                                             CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*ActivityFlushAll)(uint32_t);
    CUptiResult (*ActivityGetNextRecord)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*ActivityGetNumDroppedRecords)(CUcontext, uint32_t, size_t *);
    CUptiResult (*Subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    /* optional: NULL on CUPTI versions without them */
    CUptiResult (*ActivityEnableRuntimeApi)(CUpti_CallbackId, uint8_t);
    CUptiResult (*ActivityEnableDriverApi)(CUpti_CallbackId, uint8_t);
    CUptiResult (*EnableCallback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                  CUpti_CallbackId);
    CUptiResult (*GetGraphNodeId)(CUgraphNode, uint64_t *);
    CUptiResult (*GetGraphId)(CUgraph, uint32_t *);
    CUptiResult (*GetGraphExecId)(CUgraphExec, uint32_t *);
    int (*InitializeInjectionNvtx2)(void *);
};

extern struct lp_cupti_api lp_cupti;

/* Loads CUPTI once; 0 on success, else -1 with a reason in ERR. Thread-safe. */
int lp_cupti_load(char *err, size_t errlen);
/* Address of NAME in the process's loaded CUDA driver (often loaded RTLD_LOCAL by cudart,
 * out of dlsym(RTLD_DEFAULT)'s reach), else in the global scope, or NULL. */
void *lp_cuda_driver_sym(const char *name);
/* Checks a CUPTI result: on error warns once per call site and returns the error. */
CUptiResult lp_cupti_check(CUptiResult rc, const char *what);

#define LP_CUPTI(fn, ...) \
    lp_cupti_check(lp_cupti.fn ? lp_cupti.fn(__VA_ARGS__) : CUPTI_ERROR_NOT_INITIALIZED, "cupti" #fn)

#endif
