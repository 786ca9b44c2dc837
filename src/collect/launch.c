/* Launch records (see launch.h). Calls are picked by name prefix at run time, as CUPTI's
 * callback ids differ between versions; recording every API call cost +43...57 % on HF
 * decode. A callback takes the call's start at its entry and pushes one record at its exit
 * into a queue the flusher empties, so the program's thread never waits on the sink. */
#include "launch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "attach.h"
#include "clock.h"
#include "config.h"
#include "cupti_api.h"
#include "log.h"
#include "queue.h"
#include "sink.h"

enum { MAX_CBID = 2048, QUEUE_CAP = 65536, RT = 0, DRV = 1 };

static const char *const prefixes[2][8] = {
    [RT] = {"cudaLaunch", "cudaGraphLaunch", "cudaMemcpy", "cudaMemset", "cudaDeviceSynchronize",
            "cudaStreamSynchronize", "cudaEventSynchronize", NULL},
    [DRV] = {"cuLaunch", "cuGraphLaunch", "cuMemcpy", "cuMemset", "cuCtxSynchronize",
             "cuStreamSynchronize", "cuEventSynchronize", NULL},
};
static const CUpti_CallbackDomain cupti_domain[2] = {[RT] = CUPTI_CB_DOMAIN_RUNTIME_API,
                                                     [DRV] = CUPTI_CB_DOMAIN_DRIVER_API};

static const char *names[2][MAX_CBID];
static uint8_t traced[2][MAX_CBID];
static uint8_t kept[2][MAX_CBID]; /* still wanted after a finalize: window.c's */
static unsigned n_traced[2];
static int via_callbacks;
static uint32_t correlation_base, max_id; /* lp_launch_correlation_base; CUPTI's ids since */
static int callbacks_on;        /* recording: capture windows switch it */
static int in_cupti;            /* the callbacks are enabled in CUPTI (off only after a
                                   finalize, lp_launch_new_epoch) */
static int enabled;             /* records are kept (not after exit or in a forked child) */
static uint32_t generation = 1; /* counts switch-ons */
/* the generation in which this thread entered a traced runtime call still open: a driver
 * call made inside it is the runtime's own, and the runtime call is the record */
static _Thread_local uint32_t runtime_open;
/* lp_launch_drop_current: the runtime call open on this thread is not recorded */
static _Thread_local int drop_runtime;
static struct lp_queue queue = LP_QUEUE_INIT(struct lp_api, QUEUE_CAP);
/* the contexts launched into since recording was last switched on (windows) */
enum { MAX_CONTEXTS = 8 };
static CUcontext contexts[MAX_CONTEXTS];
static size_t n_contexts;
static uint64_t open_ns;        /* when recording was last switched on */
static uint64_t close_ns;       /* ...and off */
static _Thread_local int own_thread; /* llmprof's thread: its calls are not the program's */
static _Thread_local int thread_counted;
static unsigned n_threads;      /* lp_launch_threads (atomic) */
/* Capture windows: the correlation ids launched while recording was on, one span per
 * switch-on, in order (ids grow with every call). Kernels launched after a window closed but
 * recorded before kernel activity went off (window.c) fall outside every span. */
struct span {
    uint32_t lo, hi; /* lo 0: nothing launched yet */
};
static pthread_mutex_t spans_lock = PTHREAD_MUTEX_INITIALIZER;
static struct span *spans;
static size_t n_spans, cap_spans;
static int spans_on;             /* windowed through callbacks: spans are kept */
static uint64_t outside_spans;   /* records left out by lp_launch_in_window */

static int side_of(CUpti_CallbackDomain d)
{
    return d == CUPTI_CB_DOMAIN_RUNTIME_API ? RT : d == CUPTI_CB_DOMAIN_DRIVER_API ? DRV : -1;
}

const char *lp_launch_api_name(uint32_t domain, uint32_t cbid)
{
    if (cbid >= MAX_CBID || (domain != LP_API_DOMAIN_RUNTIME && domain != LP_API_DOMAIN_DRIVER))
        return NULL;
    return names[domain == LP_API_DOMAIN_RUNTIME ? RT : DRV][cbid];
}

static int has_prefix(const char *name, const char *const *p)
{
    for (; *p; p++)
        if (!strncmp(name, *p, strlen(*p)))
            return 1;
    return 0;
}

/* Names every call of both domains ("cudaLaunchKernel_v7000" -> "cudaLaunchKernel"; "_ptsz"
 * variants are kept) and marks the traced ones. */
static void pick_calls(void)
{
    for (int s = RT; s <= DRV; s++)
        for (uint32_t cbid = 1; cbid < MAX_CBID; cbid++) {
            const char *name = NULL;
            if (lp_cupti.GetCallbackName(cupti_domain[s], cbid, &name) != CUPTI_SUCCESS || !name)
                continue;
            char *copy = strdup(name);
            if (!copy)
                continue;
            char *u = strrchr(copy, '_');
            if (u && u[1] == 'v' && u[2] >= '0' && u[2] <= '9')
                *u = 0;
            names[s][cbid] = copy;
            traced[s][cbid] = (uint8_t)has_prefix(copy, prefixes[s]);
        }
}

/* Switches the traced calls' callbacks; returns how many switched. Off only between a
 * finalize and the new subscription, where it changes what attach.c sets up again: CUPTI
 * disabling a callback while a call of it is in flight (entered, not yet exited) on any
 * thread loses its exit and corrupts CUPTI's bookkeeping of calls: later exits come twice,
 * correlation ids repeat and freeze (tests/gpu/callback_toggle_probe.cu, H200, CUPTI 13.0),
 * so capture windows switch only recording (callbacks_on). */
static unsigned switch_callbacks(int on)
{
    unsigned n = 0;
    for (int s = RT; s <= DRV; s++)
        for (uint32_t cbid = 1; cbid < MAX_CBID; cbid++)
            if (traced[s][cbid] && (on || !kept[s][cbid]))
                n += lp_attach_callback((uint32_t)on, cupti_domain[s], cbid) == CUPTI_SUCCESS;
    return n;
}

void lp_launch_keep_enabled(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    int s = side_of(domain);
    if (s >= 0 && cbid < MAX_CBID)
        kept[s][cbid] = 1;
}

int lp_launch_set_recording(int on)
{
    if (!via_callbacks || on == callbacks_on)
        return 0;
    if (!on) {
        __atomic_store_n(&close_ns, lp_clock_ns(), __ATOMIC_RELAXED);
        __atomic_store_n(&callbacks_on, 0, __ATOMIC_RELEASE);
        return 0;
    }
    __atomic_add_fetch(&generation, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&spans_lock);
    n_contexts = 0;
    __atomic_store_n(&open_ns, lp_clock_ns(), __ATOMIC_RELAXED);
    if (n_spans && !spans[n_spans - 1].lo)
        n_spans--; /* the last window launched nothing: its span is reused */
    if (n_spans == cap_spans) {
        size_t cap = cap_spans ? 2 * cap_spans : 64;
        struct span *p = realloc(spans, cap * sizeof *p);
        if (p) {
            spans = p;
            cap_spans = cap;
        }
    }
    if (n_spans < cap_spans) /* else the last span grows to hold this one */
        spans[n_spans++] = (struct span){0, 0};
    /* on only with the new span in place: lp_launch_in_window reads both under the lock;
     * released after open_ns, which the callbacks read without it */
    __atomic_store_n(&callbacks_on, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&spans_lock);
    /* after a finalize (enabling is safe at any time: a call in flight then has no exit) */
    if (!__atomic_exchange_n(&in_cupti, 1, __ATOMIC_RELAXED))
        switch_callbacks(1);
    return 0;
}

void lp_launch_drop_current(void)
{
    drop_runtime = runtime_open != 0;
}

void lp_launch_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
    int s = side_of(domain);
    if (s < 0 || cbid >= MAX_CBID || !traced[s][cbid] || !data || own_thread)
        return;
    const CUpti_CallbackData *cd = data;
    if (!thread_counted) {
        thread_counted = 1;
        __atomic_add_fetch(&n_threads, 1, __ATOMIC_SEQ_CST);
    }
    uint32_t gen = __atomic_load_n(&generation, __ATOMIC_RELAXED);
    int enter = cd->callbackSite == CUPTI_API_ENTER;
    /* every id, recorded or not: kernels of calls left out still come with theirs */
    uint32_t seen = __atomic_load_n(&max_id, __ATOMIC_RELAXED);
    while (!enter && cd->correlationId > seen &&
           !__atomic_compare_exchange_n(&max_id, &seen, cd->correlationId, 1, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
        ;
    if (s == DRV && runtime_open == gen)
        return;
    if (s == RT) {
        runtime_open = enter ? gen : 0;
        int drop = drop_runtime && !enter;
        drop_runtime = 0;
        if (drop)
            return;
    }
    if (!cd->correlationData)
        return;
    if (enter) {
        *cd->correlationData = lp_clock_ns();
        return;
    }
    uint64_t start = *cd->correlationData, end = lp_clock_ns();
    /* no start, or one before recording was last switched on: the entry came before (a
     * call in flight across a window's opening, whose work is outside it); switched off: a
     * call that entered after the close. A call that entered inside the window and exits
     * after its close is recorded: its work is the window's. */
    int on = __atomic_load_n(&callbacks_on, __ATOMIC_ACQUIRE);
    if (!__atomic_load_n(&enabled, __ATOMIC_RELAXED) || start == 0 || start > end ||
        start < __atomic_load_n(&open_ns, __ATOMIC_RELAXED) ||
        (!on && start > __atomic_load_n(&close_ns, __ATOMIC_RELAXED)))
        return;
    struct lp_api a = {
        .start = start,
        .end = end,
        .correlation = cd->correlationId + __atomic_load_n(&correlation_base, __ATOMIC_RELAXED),
        .thread = (uint32_t)pthread_self(), /* CUPTI's thread ids are pthread_self's low bits */
        .domain = s == RT ? LP_API_DOMAIN_RUNTIME : LP_API_DOMAIN_DRIVER,
        .cbid = cbid,
        .status = cd->functionReturnValue ? (uint32_t)*(const int *)cd->functionReturnValue : 0,
    };
    lp_queue_push(&queue, &a);
    if (__atomic_load_n(&spans_on, __ATOMIC_RELAXED)) {
        pthread_mutex_lock(&spans_lock);
        size_t k = 0;
        while (k < n_contexts && contexts[k] != cd->context)
            k++;
        if (k == n_contexts && n_contexts < MAX_CONTEXTS && cd->context)
            contexts[n_contexts++] = cd->context;
        struct span *sp = n_spans ? &spans[n_spans - 1] : NULL;
        if (sp && (!sp->lo || a.correlation < sp->lo))
            sp->lo = a.correlation;
        if (sp && a.correlation > sp->hi)
            sp->hi = a.correlation;
        pthread_mutex_unlock(&spans_lock);
    }
}

int lp_launch_in_window(uint32_t correlation)
{
    if (!__atomic_load_n(&spans_on, __ATOMIC_RELAXED) || correlation == 0)
        return 1;
    pthread_mutex_lock(&spans_lock);
    /* the last span starting at or before CORRELATION (only the last can be empty) */
    size_t lo = 0, hi = n_spans;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (spans[mid].lo && spans[mid].lo <= correlation)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* within a closed window's span, or past the start of the open window's */
    int in = lo > 0 && (correlation <= spans[lo - 1].hi ||
                        (lo == n_spans && __atomic_load_n(&callbacks_on, __ATOMIC_RELAXED)));
    outside_spans += !in;
    pthread_mutex_unlock(&spans_lock);
    return in;
}

size_t lp_launch_contexts(CUcontext *out, size_t max)
{
    pthread_mutex_lock(&spans_lock);
    size_t n = n_contexts < max ? n_contexts : max;
    memcpy(out, contexts, n * sizeof *out);
    pthread_mutex_unlock(&spans_lock);
    return n;
}

void lp_launch_ignore_thread(void) { own_thread = 1; }

uint32_t lp_launch_correlation_base(void)
{
    return __atomic_load_n(&correlation_base, __ATOMIC_RELAXED);
}

void lp_launch_new_epoch(void)
{
    uint32_t seen = __atomic_exchange_n(&max_id, 0, __ATOMIC_RELAXED);
    __atomic_add_fetch(&correlation_base, seen + 1, __ATOMIC_RELAXED);
    /* the finalize disabled them safely: the new subscription leaves them off until the
     * next window, which is what finalizing is for */
    if (via_callbacks && !__atomic_load_n(&callbacks_on, __ATOMIC_RELAXED)) {
        switch_callbacks(0);
        __atomic_store_n(&in_cupti, 0, __ATOMIC_RELAXED);
    }
}

int lp_launch_via_callbacks(void) { return via_callbacks; }

int lp_launch_traced(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    int s = side_of(domain);
    return s >= 0 && cbid < MAX_CBID && traced[s][cbid];
}

unsigned lp_launch_threads(void) { return __atomic_load_n(&n_threads, __ATOMIC_SEQ_CST); }

/* Without a subscriber: CUPTI's API activity records for the traced calls, on all run. */
static unsigned enable_activity(void)
{
    CUptiResult (*enable[2])(CUpti_CallbackId, uint8_t) = {
        [RT] = lp_cupti.ActivityEnableRuntimeApi, [DRV] = lp_cupti.ActivityEnableDriverApi};
    if (!enable[RT] || !enable[DRV])
        return 0;
    unsigned n = 0;
    for (int s = RT; s <= DRV; s++)
        for (uint32_t cbid = 1; cbid < MAX_CBID; cbid++)
            if (traced[s][cbid] && enable[s](cbid, 1) == CUPTI_SUCCESS)
                n++;
    return n;
}

int lp_launch_start(CUpti_SubscriberHandle sub, int windowed, void (*notify)(void))
{
    if (!lp_cupti.GetCallbackName) {
        lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "this CUPTI (%u) cannot name API calls: "
                        "launch correlation (which thread launched each kernel) is not "
                        "recorded", lp_cupti.version);
        return -1;
    }
    pick_calls();
    for (int s = RT; s <= DRV; s++)
        for (uint32_t cbid = 1; cbid < MAX_CBID; cbid++)
            n_traced[s] += traced[s][cbid];
    int how = lp_config_get()->launch;
    int activity = how == LP_ENVCONFIG_LAUNCH_ACTIVITY;
    /* LLMPROF_LAUNCH=driver: the driver's calls only (the runtime's make them), two callbacks
     * per runtime launch instead of four; records then name the driver's calls */
    int driver_only = how == LP_ENVCONFIG_LAUNCH_DRIVER;
    if (driver_only) {
        memset(traced[RT], 0, sizeof traced[RT]);
        n_traced[RT] = 0;
    }
    unsigned on = 0;
    queue.notify = notify;
    __atomic_store_n(&enabled, 1, __ATOMIC_RELAXED);
    if (sub && lp_cupti.EnableCallback && !activity) {
        via_callbacks = 1;
        on = switch_callbacks(1); /* on for the whole run, also when windowed */
        in_cupti = 1;
        callbacks_on = !windowed;
        __atomic_store_n(&spans_on, windowed, __ATOMIC_RELAXED);
        lp_sink_set_meta("launch_records", driver_only ? "callbacks-driver" : "callbacks");
    } else {
        on = enable_activity();
        lp_sink_set_meta("launch_records", "activity");
    }
    lp_sink_set_meta_u64("api_calls_traced_runtime", n_traced[RT]);
    lp_sink_set_meta_u64("api_calls_traced_driver", n_traced[DRV]);
    if (on == 0) {
        lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "no launch call could be traced: launch "
                        "correlation (which thread launched each kernel) is not recorded");
        return -1;
    }
    return 0;
}

void lp_launch_drain(void)
{
    size_t n;
    uint64_t lost;
    struct lp_api *batch = lp_queue_take(&queue, &n, &lost);
    if (lost)
        lp_collect_warn(LP_LOSS_SOURCE_LAUNCH, lost, "launch records dropped: the queue of %d "
                        "was full between two flushes (their kernels are kept, without their "
                        "launching thread)", QUEUE_CAP);
    if (!batch)
        return;
    /* string ids are the writer's; interned once per call per drain */
    static lp_str interned[2][MAX_CBID];
    memset(interned, 0, sizeof interned);
    lp_sink_lock();
    for (size_t i = 0; i < n; i++) {
        struct lp_record r = {.type = LP_REC_API, .u.api = batch[i]};
        int s = r.u.api.domain == LP_API_DOMAIN_RUNTIME ? RT : DRV;
        lp_str *id = &interned[s][r.u.api.cbid];
        if (!*id)
            *id = lp_sink_intern(names[s][r.u.api.cbid]);
        r.u.api.name = *id;
        lp_sink_add(&r);
    }
    lp_sink_unlock();
    lp_queue_release(&queue, batch);
}

void lp_launch_stop(void)
{
    __atomic_store_n(&enabled, 0, __ATOMIC_RELAXED);
    lp_launch_drain();
    if (!via_callbacks)
        return;
    uint64_t rec, drop;
    lp_queue_counts(&queue, &rec, &drop);
    lp_sink_set_meta_u64("launch_records_recorded", rec);
    lp_sink_set_meta_u64("launch_records_dropped", drop);
    if (__atomic_load_n(&spans_on, __ATOMIC_RELAXED)) {
        pthread_mutex_lock(&spans_lock); /* not held into the sink's lock: the drain nests them */
        uint64_t outside = outside_spans;
        pthread_mutex_unlock(&spans_lock);
        lp_sink_set_meta_u64("capture_after_close", outside);
    }
}

void lp_launch_forget(void) { __atomic_store_n(&enabled, 0, __ATOMIC_RELAXED); }
