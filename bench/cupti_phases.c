/* libcupti_phases.so: switches, inside one process, between the ways of using CUPTI whose
 * per-launch cost the overhead split compares (bench/launch_split.cu in C, bench/torch_split.py
 * in PyTorch through ctypes), so that the host's drift between processes falls out:
 *   detached     CUPTI finalized (Kineto's way out): the reference without CUPTI
 *   sub-only     finalized, then subscribed again, no activity buffers registered
 *   buffers-only finalized, then activity buffers registered again, no subscriber
 *   attached     subscribed and activity buffers registered, nothing enabled since CUPTI was
 *                finalized (Kineto's "finalize and subscribe again")
 *   floor        concurrent-kernel activity (what any kernel tracer pays)
 *   floor-off    as attached, right after the floor: kernel activity enabled and disabled
 *                once, no callback ever since CUPTI was finalized
 *   re-detached  finalized again (a second reference without CUPTI)
 *   cb-only      the callbacks of cb-empty (below) without kernel activity, right after a finalize
 *   cb-off       as attached, right after cb-only: callbacks enabled and disabled once, kernel
 *                activity never
 *   hook-fresh   finalized, set up again, and the callbacks of cb-one (below) alone: what a
 *                runtime and driver callback on calls never made cost (llmprof keeps such on
 *                between windows: stream capture, profiler start and stop)
 *   graph-fresh  finalized, set up again, and graph-level records alone (llmprof's default
 *                keeps them on all run)
 *   kinds        floor + the other activity kinds llmprof's default enables that CUPTI can
 *                switch here (memcpy, memset, memory, overhead, device)
 *   cb-one       floor + the callbacks of one call per domain that the program never makes
 *                (cudaProfilerStop, cuProfilerStop): what a hooked domain costs other calls
 *   cb-empty     floor + callbacks on the calls llmprof's launch records trace (launches,
 *                graph launches, copies, sets, synchronisations; both domains), returning
 *   cb-body      the same doing what llmprof's callback does: a timestamp at the entry; at the
 *                exit another and a 40-byte record pushed under a mutex into a ring; the
 *                driver's call inside the runtime's skipped
 *   cb-driver    floor + the driver's calls only, with that body (two callbacks a launch)
 *   disabled     as attached, but right after kernel activity and the callbacks were enabled
 *                and disabled again: the state capture windows leave between windows
 *   graph-on     disabled with graph-level records on (llmprof's default keeps them on all run)
 *   ctx-floor    finalized, set up again, and kernel activity enabled for the current context
 *                only (cuptiActivityEnableContext), not globally
 *   ctx-off      as attached, right after ctx-floor: kernel activity enabled and disabled
 *                once for the context (cuptiActivityDisableContext): whether a window switched
 *                per context leaves what floor-off leaves
 * The callers run the phases in rotating order, so each phase but a round's first comes right
 * after the one listed before it: the order above is what makes "attached" fresh and
 * "disabled" cycled.
 * With LSP_NVTX=1 it also points NVTX at this CUPTI (NVTX_INJECTION64_PATH) and enables the
 * callback of nvtxRangePushA whenever it subscribes, counting per phase the pushes CUPTI
 * delivers: whether NVTX still reaches a subscriber made after a finalize (capture windows
 * on NVTX ranges would need it to).
 * It links the toolkit's CUPTI (CMake builds it beside libfloor.so when that library is found). */
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_CBID = 2048, RING = 1 << 16 };
enum { RT = 0, DRV = 1 };

struct record { /* the size of llmprof's struct lp_api */
    uint64_t start, end;
    uint32_t correlation, thread, domain, cbid, status, name;
};

static const char *const prefixes[2][8] = {
    [RT] = {"cudaLaunch", "cudaGraphLaunch", "cudaMemcpy", "cudaMemset", "cudaDeviceSynchronize",
            "cudaStreamSynchronize", "cudaEventSynchronize", NULL},
    [DRV] = {"cuLaunch", "cuGraphLaunch", "cuMemcpy", "cuMemset", "cuCtxSynchronize",
             "cuStreamSynchronize", "cuEventSynchronize", NULL},
};
static const CUpti_CallbackDomain domains[2] = {CUPTI_CB_DOMAIN_RUNTIME_API,
                                                CUPTI_CB_DOMAIN_DRIVER_API};
static const CUpti_ActivityKind other_kinds[] = {
    CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_MEMORY2,
    CUPTI_ACTIVITY_KIND_OVERHEAD, CUPTI_ACTIVITY_KIND_DEVICE};

static uint8_t traced[2][MAX_CBID];
static CUpti_SubscriberHandle sub;
static int body;
static int kinds_on, graph_on, ctx_kernel_on;
static pthread_mutex_t ring_mu = PTHREAD_MUTEX_INITIALIZER;
static struct record ring[RING];
static uint64_t pushed, kernels;
static uint32_t last_correlation;  /* the callbacks' thread: the callers' one */
static int nvtx_watch;             /* LSP_NVTX */
static int current;                /* the phase set last */
static uint64_t correlation_resets;
static _Thread_local int runtime_open;
static int finalize_pending;      /* the next cuCtxGetCurrent exit finalizes CUPTI */
static CUptiResult finalize_result;
static int have_sub, have_buffers;  /* what CUPTI has now */

enum { NEED_SUB = 1, NEED_BUFFERS = 2, NEED_BOTH = 3 };
enum { CB_RT = 1, CB_DRV = 2, CB_ONE = 4 };
static const struct phase {
    const char *name;
    int kernel, kinds, callbacks, body, needs, graph, fresh, ctx_kernel;
} phases[] = {
    {"detached", 0, 0, 0, 0, 0},
    {"sub-only", 0, 0, 0, 0, NEED_SUB},
    {"buffers-only", 0, 0, 0, 0, NEED_BUFFERS},
    {"attached", 0, 0, 0, 0, NEED_BOTH},
    {"floor", 1, 0, 0, 0, NEED_BOTH},
    {"floor-off", 0, 0, 0, 0, NEED_BOTH},
    {"re-detached", 0, 0, 0, 0, 0},
    {"cb-only", 0, 0, CB_RT | CB_DRV, 0, NEED_BOTH},
    {"cb-off", 0, 0, 0, 0, NEED_BOTH},
    {"hook-fresh", 0, 0, CB_ONE, 0, NEED_BOTH, 0, 1},
    {"graph-fresh", 0, 0, 0, 0, NEED_BOTH, 1, 1},
    {"kinds", 1, 1, 0, 0, NEED_BOTH},
    {"cb-one", 1, 0, CB_ONE, 0, NEED_BOTH},
    {"cb-empty", 1, 0, CB_RT | CB_DRV, 0, NEED_BOTH},
    {"cb-body", 1, 0, CB_RT | CB_DRV, 1, NEED_BOTH},
    {"cb-driver", 1, 0, CB_DRV, 1, NEED_BOTH},
    {"disabled", 0, 0, 0, 0, NEED_BOTH},
    {"graph-on", 0, 0, 0, 0, NEED_BOTH, 1},
    {"ctx-floor", 0, 0, 0, 0, NEED_BOTH, 0, 1, 1},
    {"ctx-off", 0, 0, 0, 0, NEED_BOTH},
};
enum { PHASES = sizeof phases / sizeof *phases };
static uint64_t nvtx_seen[PHASES];
static uint64_t phase_kernels[PHASES]; /* kernel records delivered, by the phase they ran in */

static uint64_t now_ns(void)
{
    uint64_t t = 0;
    cuptiGetTimestamp(&t);
    return t;
}

static void CUPTIAPI on_callback(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data)
{
    (void)user;
    if (finalize_pending && domain == CUPTI_CB_DOMAIN_DRIVER_API &&
        cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent &&
        ((const CUpti_CallbackData *)data)->callbackSite == CUPTI_API_EXIT) {
        finalize_pending = 0;
        finalize_result = cuptiFinalize();
        return;
    }
    if (domain == CUPTI_CB_DOMAIN_NVTX) {
        nvtx_seen[current]++;
        return;
    }
    int s = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? RT : DRV;
    if (!body || cbid >= MAX_CBID || !traced[s][cbid])
        return;
    const CUpti_CallbackData *cd = data;
    /* whether CUPTI starts correlation ids again after a finalize (llmprof's launch spans
     * assume they only grow); the body phases follow finalizing ones */
    if (cd->callbackSite == CUPTI_API_EXIT) {
        if (cd->correlationId < last_correlation)
            correlation_resets++;
        last_correlation = cd->correlationId;
    }
    int enter = cd->callbackSite == CUPTI_API_ENTER;
    if (s == DRV && runtime_open)
        return;
    if (s == RT)
        runtime_open = enter;
    if (enter) {
        *cd->correlationData = now_ns();
        return;
    }
    struct record r = {*cd->correlationData, now_ns(), cd->correlationId,
                       (uint32_t)pthread_self(), (uint32_t)s, cbid, 0, 0};
    pthread_mutex_lock(&ring_mu);
    ring[pushed++ % RING] = r;
    pthread_mutex_unlock(&ring_mu);
}

static void CUPTIAPI requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *size = 8u << 20;
    *buffer = aligned_alloc(8, *size);
    if (!*buffer)
        *size = 0;
    *max_records = 0;
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                               size_t valid)
{
    (void)ctx, (void)stream, (void)size;
    CUpti_Activity *a = NULL;
    uint64_t k = 0;
    while (valid && cuptiActivityGetNextRecord(buffer, valid, &a) == CUPTI_SUCCESS)
        k += a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    __atomic_add_fetch(&kernels, k, __ATOMIC_RELAXED);
    __atomic_add_fetch(&phase_kernels[current], k, __ATOMIC_RELAXED);
    free(buffer);
}

static int has_prefix(const char *name, const char *const *p)
{
    for (; *p; p++)
        if (!strncmp(name, *p, strlen(*p)))
            return 1;
    return 0;
}

/* Sets up what NEEDS asks for that CUPTI does not have yet. */
static CUptiResult attach(int needs)
{
    CUptiResult r = CUPTI_SUCCESS;
    if ((needs & NEED_BUFFERS) && !have_buffers) {
        r = cuptiActivityRegisterCallbacks(requested, completed);
        have_buffers = r == CUPTI_SUCCESS;
    }
    if (r == CUPTI_SUCCESS && (needs & NEED_SUB) && !have_sub) {
        r = cuptiSubscribe(&sub, on_callback, NULL);
        have_sub = r == CUPTI_SUCCESS;
        if (have_sub && nvtx_watch)
            r = cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangePushA);
    }
    return r;
}

/* 0, or the CUPTI error that stopped it. Call before the program's first CUDA call or after. */
int lsp_init(void)
{
    const char *w = getenv("LSP_NVTX");
    Dl_info info;
    nvtx_watch = w && *w && strcmp(w, "0");
    if (nvtx_watch && dladdr((void *)&cuptiSubscribe, &info) && info.dli_fname)
        setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
    for (int s = RT; s <= DRV; s++)
        for (uint32_t cbid = 1; cbid < MAX_CBID; cbid++) {
            const char *name = NULL;
            if (cuptiGetCallbackName(domains[s], cbid, &name) == CUPTI_SUCCESS && name)
                traced[s][cbid] = (uint8_t)has_prefix(name, prefixes[s]);
        }
    return (int)attach(NEED_BOTH);
}

static CUptiResult set_callbacks(int runtime, int driver, int one)
{
    const int on[2] = {runtime, driver};
    const CUpti_CallbackId unused[2] = {CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000,
                                        CUPTI_DRIVER_TRACE_CBID_cuProfilerStop};
    CUptiResult r = CUPTI_SUCCESS;
    for (int s = RT; s <= DRV; s++) {
        for (uint32_t cbid = 1; cbid < MAX_CBID && r == CUPTI_SUCCESS; cbid++)
            if (traced[s][cbid])
                r = cuptiEnableCallback((uint32_t)on[s], sub, domains[s], cbid);
        if (r == CUPTI_SUCCESS)
            r = cuptiEnableCallback((uint32_t)one, sub, domains[s], unused[s]);
    }
    return r;
}

/* cuptiFinalize, once everything is off and flushed: from the exit callback of a
 * cuCtxGetCurrent made here while subscribed (CUPTI's advice: finalize from an API exit
 * callback; floor.c does it at the program's cudaProfilerStop), directly otherwise (the
 * callers are single-threaded). The driver is already loaded by the program. */
static CUptiResult detach(void)
{
    CUptiResult r = CUPTI_SUCCESS;
    if (!have_sub) {
        r = cuptiFinalize();
    } else {
        CUresult (*get_current)(CUcontext *) = NULL;
        void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (cuda)
            *(void **)&get_current = dlsym(cuda, "cuCtxGetCurrent");
        r = get_current ? cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API,
                                              CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent)
                        : CUPTI_ERROR_NOT_INITIALIZED;
        finalize_result = CUPTI_ERROR_UNKNOWN;
        if (r == CUPTI_SUCCESS) {
            CUcontext c = NULL;
            finalize_pending = 1;
            get_current(&c);
            finalize_pending = 0;
            r = finalize_result;
        }
        if (cuda)
            dlclose(cuda);
    }
    if (r == CUPTI_SUCCESS)
        have_sub = have_buffers = 0;
    return r;
}

/* Kernel activity for the current context only (ON), or not. */
static CUptiResult set_ctx_kernel(int on)
{
    CUresult (*get_current)(CUcontext *) = NULL;
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (cuda)
        *(void **)&get_current = dlsym(cuda, "cuCtxGetCurrent");
    CUcontext c = NULL;
    CUptiResult r = CUPTI_ERROR_NOT_INITIALIZED;
    if (get_current && get_current(&c) == CUDA_SUCCESS && c)
        r = on ? cuptiActivityEnableContext(c, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
               : cuptiActivityDisableContext(c, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (cuda)
        dlclose(cuda);
    if (r == CUPTI_SUCCESS)
        ctx_kernel_on = on;
    return r;
}

/* Kernel activity, the other kinds, graph-level records and the callbacks as asked (what
 * is set up of them). */
static CUptiResult set_uses(int kernel, int kinds, int graph, int callbacks, int ctx_kernel)
{
    CUptiResult r = CUPTI_SUCCESS;
    if (have_buffers) {
        r = kernel ? cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
                   : cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        for (size_t i = 0; r == CUPTI_SUCCESS && kinds != kinds_on &&
                           i < sizeof other_kinds / sizeof *other_kinds; i++)
            r = kinds ? cuptiActivityEnable(other_kinds[i]) : cuptiActivityDisable(other_kinds[i]);
        if (r == CUPTI_SUCCESS)
            kinds_on = kinds;
        if (r == CUPTI_SUCCESS && graph != graph_on)
            r = graph ? cuptiActivityEnable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE)
                      : cuptiActivityDisable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
        if (r == CUPTI_SUCCESS)
            graph_on = graph;
        /* after the global setting, which would otherwise override it */
        if (r == CUPTI_SUCCESS && ctx_kernel != ctx_kernel_on)
            r = set_ctx_kernel(ctx_kernel);
        if (r == CUPTI_SUCCESS)
            r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    }
    if (r == CUPTI_SUCCESS && have_sub)
        r = set_callbacks(callbacks & CB_RT, callbacks & CB_DRV, callbacks & CB_ONE);
    return r;
}

/* Flushes and switches to PHASE: 0, or CUPTI's error. The caller has waited for the GPU
 * first (cudaDeviceSynchronize, torch.cuda.synchronize), so no kernel spans two phases. */
int lsp_phase(int phase)
{
    if (phase < 0 || phase >= PHASES)
        return -1;
    const struct phase *p = &phases[phase];
    CUptiResult r = CUPTI_SUCCESS;
    if (have_buffers) /* what the phase left has its kernels counted as its own */
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    body = p->body;
    current = phase;
    /* what this phase must not have (or, fresh, anything) goes by finalizing, once everything
     * is off */
    if ((have_sub && !(p->needs & NEED_SUB)) || (have_buffers && !(p->needs & NEED_BUFFERS)) ||
        (p->fresh && (have_sub || have_buffers))) {
        r = set_uses(0, 0, 0, 0, 0);
        if (r == CUPTI_SUCCESS)
            r = detach();
        if (r == CUPTI_SUCCESS)
            kinds_on = graph_on = ctx_kernel_on = 0;
    }
    if (r == CUPTI_SUCCESS)
        r = attach(p->needs);
    if (r == CUPTI_SUCCESS)
        r = set_uses(p->kernel, p->kinds, p->graph, p->callbacks, p->ctx_kernel);
    return (int)r;
}

const char *lsp_phase_name(int phase)
{
    return phase >= 0 && phase < PHASES ? phases[phase].name : NULL;
}

int lsp_phases(void) { return PHASES; }

/* The nvtxRangePushA calls CUPTI delivered in PHASE (LSP_NVTX), or -1 when not watched. */
long long lsp_nvtx_seen(int phase)
{
    return nvtx_watch && phase >= 0 && phase < PHASES ? (long long)nvtx_seen[phase] : -1;
}

/* Kernel records CUPTI delivered for the work of PHASE so far. */
uint64_t lsp_phase_kernels(int phase)
{
    return phase >= 0 && phase < PHASES ? __atomic_load_n(&phase_kernels[phase], __ATOMIC_RELAXED)
                                        : 0;
}

/* How many times a traced call's correlation id was lower than the one before. */
uint64_t lsp_correlation_resets(void) { return correlation_resets; }

/* Kernel records CUPTI delivered and launch records pushed so far. */
void lsp_counts(uint64_t *kernel_records, uint64_t *launch_records)
{
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    *kernel_records = __atomic_load_n(&kernels, __ATOMIC_RELAXED);
    pthread_mutex_lock(&ring_mu);
    *launch_records = pushed;
    pthread_mutex_unlock(&ring_mu);
}
