/* libfloor.so: the reference CUPTI client the overhead benchmarks measure llmprof against
 * (bench/modes.sh, modes floor*). Loaded like llmprof's collector (CUDA_INJECTION64_PATH), it
 * only enables CUPTI's concurrent-kernel activity, hands CUPTI plain buffers and counts the
 * records it gets back: what any kernel tracer pays at least. LP_FLOOR chooses what happens
 * when the program calls cudaProfilerStop (torch.cuda.profiler.stop()):
 *   kernel (default)  nothing: kernel activity stays on for the whole run (the floor)
 *   stop-disable      kernel activity disabled and flushed: what disabled activity still costs
 *   stop-finalize     disabled, flushed, then cuptiFinalize, from the call's exit callback as
 *                     Kineto's teardown does: whether finalizing gives the cost back
 *   graph             kernel activity and graph-level records (CUPTI_ACTIVITY_KIND_GRAPH_TRACE,
 *                     one per graph launch) from the start, on for the whole run
 *   graph-only        graph-level records alone
 *   window            kernel activity off at the start, on from each cudaProfilerStart to the
 *                     next cudaProfilerStop (at their exit): a capture window's switching at
 *                     CUPTI's level, enabled in mid-run
 *   ctx-window        the same, but on at the start and off when the program's first context
 *                     has been made: whether a context made under kernel activity keeps the
 *                     cost a window leaves behind away
 * At exit it prints one line on stderr: the records counted (kernels and graph launches
 * apart) and what happened at the stop. */
#include <cupti.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_BYTES (8u << 20)

#define FLOOR_FUNCTIONS(X)                                                                  \
    X(ActivityEnable, (CUpti_ActivityKind))                                                 \
    X(ActivityDisable, (CUpti_ActivityKind))                                                \
    X(ActivityRegisterCallbacks,                                                            \
      (CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc))                \
    X(ActivityFlushAll, (uint32_t))                                                         \
    X(ActivityGetNextRecord, (uint8_t *, size_t, CUpti_Activity **))                        \
    X(Subscribe, (CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *))                    \
    X(EnableCallback, (uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId)) \
    X(Finalize, (void))

static struct {
#define FLOOR_FIELD(name, params) CUptiResult (*name) params;
    FLOOR_FUNCTIONS(FLOOR_FIELD)
#undef FLOOR_FIELD
} cupti;

enum floor_mode { FLOOR_KERNEL, FLOOR_STOP_DISABLE, FLOOR_STOP_FINALIZE, FLOOR_GRAPH,
                  FLOOR_GRAPH_ONLY, FLOOR_WINDOW, FLOOR_CTX_WINDOW };
static enum floor_mode mode;
static _Atomic unsigned long long records, kernels, graphs, windows;
static _Atomic int stopped, context_made;
static CUpti_SubscriberHandle subscriber;
static const char *outcome = "no stop";

static void CUPTIAPI requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(8, BUF_BYTES);
    *size = *buffer ? BUF_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                               size_t valid)
{
    (void)ctx, (void)stream, (void)size;
    CUpti_Activity *a = NULL;
    unsigned long long n = 0, k = 0, g = 0;
    while (valid && cupti.ActivityGetNextRecord(buffer, valid, &a) == CUPTI_SUCCESS) {
        n++;
        k += a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        g += a->kind == CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
    }
    atomic_fetch_add(&records, n);
    atomic_fetch_add(&kernels, k);
    atomic_fetch_add(&graphs, g);
    free(buffer);
}

static void CUPTIAPI on_callback(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data)
{
    (void)user;
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) { /* ctx-window: the first context is made */
        if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED && !atomic_exchange(&context_made, 1))
            cupti.ActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        return;
    }
    const CUpti_CallbackData *cd = data;
    if (cd->callbackSite != CUPTI_API_EXIT)
        return;
    if (mode == FLOOR_WINDOW || mode == FLOOR_CTX_WINDOW) {
        if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000) {
            cupti.ActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
            atomic_fetch_add(&windows, 1);
        } else {
            cupti.ActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
            cupti.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        }
        return;
    }
    if (cbid != CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000 || atomic_exchange(&stopped, 1))
        return;
    cupti.ActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cupti.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    outcome = "disabled at the stop";
    if (mode == FLOOR_STOP_FINALIZE)
        outcome = cupti.Finalize() == CUPTI_SUCCESS ? "disabled and finalized at the stop"
                                                    : "disabled at the stop, finalize failed";
}

static void at_exit(void)
{
    if (!atomic_load(&stopped))
        cupti.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (mode == FLOOR_WINDOW || mode == FLOOR_CTX_WINDOW)
        fprintf(stderr, "libfloor: %llu activity records (%llu kernels) in %llu windows%s\n",
                atomic_load(&records), atomic_load(&kernels), atomic_load(&windows),
                mode == FLOOR_CTX_WINDOW && !atomic_load(&context_made) ? ", no context seen"
                                                                        : "");
    else
        fprintf(stderr, "libfloor: %llu activity records (%llu kernels, %llu graph launches), "
                "%s\n", atomic_load(&records), atomic_load(&kernels), atomic_load(&graphs),
                outcome);
}

static void *open_cupti(void)
{
    /* the copy the process has (PyTorch ships one), else the first found */
    void *h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_GLOBAL);
    if (!h)
        h = dlopen("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so", RTLD_NOW | RTLD_GLOBAL);
    return h;
}

__attribute__((visibility("default"))) int InitializeInjection(void)
{
    void *h = open_cupti();
    if (!h) {
        fprintf(stderr, "libfloor: no CUPTI: %s\n", dlerror());
        return 1;
    }
#define FLOOR_BIND(name, params) *(void **)&cupti.name = dlsym(h, "cupti" #name);
    FLOOR_FUNCTIONS(FLOOR_BIND)
#undef FLOOR_BIND
    const char *m = getenv("LP_FLOOR");
    mode = !m || !strcmp(m, "kernel")  ? FLOOR_KERNEL
           : !strcmp(m, "stop-disable") ? FLOOR_STOP_DISABLE
           : !strcmp(m, "stop-finalize") ? FLOOR_STOP_FINALIZE
           : !strcmp(m, "graph")         ? FLOOR_GRAPH
           : !strcmp(m, "graph-only")    ? FLOOR_GRAPH_ONLY
           : !strcmp(m, "window")        ? FLOOR_WINDOW
           : !strcmp(m, "ctx-window")    ? FLOOR_CTX_WINDOW
                                         : (fprintf(stderr, "libfloor: LP_FLOOR=%s is not kernel, "
                                                    "stop-disable, stop-finalize, graph, "
                                                    "graph-only, window or ctx-window: kernel\n",
                                                    m),
                                            FLOOR_KERNEL);
    int graph = mode == FLOOR_GRAPH || mode == FLOOR_GRAPH_ONLY;
    int kernel_at_start = mode != FLOOR_GRAPH_ONLY && mode != FLOOR_WINDOW;
    if (cupti.ActivityRegisterCallbacks(requested, completed) != CUPTI_SUCCESS ||
        (kernel_at_start &&
         cupti.ActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) ||
        (graph && cupti.ActivityEnable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE) != CUPTI_SUCCESS)) {
        fprintf(stderr, "libfloor: CUPTI activity could not be enabled\n");
        return 1;
    }
    int window = mode == FLOOR_WINDOW || mode == FLOOR_CTX_WINDOW;
    if ((mode == FLOOR_STOP_DISABLE || mode == FLOOR_STOP_FINALIZE || window) &&
        cupti.Subscribe(&subscriber, on_callback, NULL) == CUPTI_SUCCESS) {
        /* the runtime's calls only: finalizing inside the driver call it makes is not safe */
        cupti.EnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                             CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000);
        if (window)
            cupti.EnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                                 CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
        if (mode == FLOOR_CTX_WINDOW)
            cupti.EnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                 CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
    }
    atexit(at_exit);
    return 1;
}
