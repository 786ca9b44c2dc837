/* CUPTI activity collection (see activity.h). Launch calls are launch.c's (callbacks, or
 * API activity records it enables itself when it cannot use them); those records are
 * converted here with the rest, and named by launch.c. */
#include "activity.h"

#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attach.h"
#include "convert.h"
#include "cupti_api.h"
#include "launch.h"
#include "llmprof/envconfig.h"
#include "log.h"
#include "sink.h"

static struct lp_activity_options opts;
static int recording; /* the per-launch kinds are on (capture windows switch them) */
/* Buffers (all_bufs) are either free, lent to CUPTI, or completed and waiting to be
 * drained (buf_state): each list is at most max_buffers long, so memory is bounded by
 * max_buffers x buffer_bytes. A buffer moves only along free -> lent -> completed -> free:
 * CUPTI has broken its own bookkeeping before (calls exited twice, launch.c), and a buffer
 * it returned twice would otherwise be queued, drained and lent twice, past the lists'
 * ends (a second return after the buffer was lent again cannot be told from its return).
 * They are handed out zeroed (ZEROED_OUT_ACTIVITY_BUFFER): CUPTI otherwise zeroes each
 * buffer on the program's thread as it takes it (4 MiB, a stall in the step that happens to
 * fill one), while llmprof zeroes them on its own thread after the drain and gets fresh ones
 * zeroed by the allocator. A few are made at the start, so the first requests do not wait
 * for it. */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t **free_bufs, **done_bufs, **all_bufs;
static size_t *done_valid;
static uint32_t *done_base; /* the correlation base when each completed (launch.h) */
enum buf_state { BUF_FREE, BUF_LENT, BUF_DONE };
static uint8_t *buf_state; /* enum buf_state, by index in all_bufs */
static unsigned n_free, n_done, n_alloc;
static uint64_t denied, dropped_total, dropped_renewing; /* the last: as CUPTI was finalized */
static uint64_t unlent; /* buffers CUPTI returned that were not lent to it */
static int zeroed; /* CUPTI takes our buffers as zeroed */
enum { PREALLOCATED_BUFFERS = 4 };
static uint64_t untimed_replays; /* graph replays CUPTI could not time (drain's thread) */
static _Atomic uint64_t active_devices;
static _Atomic uint64_t completions;
static void (*notify)(void);
/* graph-level records wait for the first graph instantiation (see lp_activity_start) */
enum { MAX_CBID = 2048 };
static uint8_t instantiates[2][MAX_CBID]; /* [runtime, driver][cbid]: an instantiation call */
static int graphs_pending;                /* armed, records not on yet (atomic) */
static int instantiating;                 /* an instantiation call was entered (atomic) */
static pthread_mutex_t graph_lock = PTHREAD_MUTEX_INITIALIZER;

static const struct {
    const char *name, *alias;
    CUpti_ActivityKind cupti;
} kinds_info[LP_KIND_COUNT] = {
#define LP_KIND_INFO(id, name, alias, cupti, light) [LP_KIND_INDEX_##id] = {name, alias, cupti},
    LP_KIND_LIST(LP_KIND_INFO)
#undef LP_KIND_INFO
};

const char *lp_kind_name(unsigned index)
{
    return index < LP_KIND_COUNT ? kinds_info[index].name : NULL;
}

static int word_is(const char *word, size_t len, const char *name)
{
    return name && strlen(name) == len && strncmp(name, word, len) == 0;
}

int lp_kinds_parse(const char *list, unsigned *kinds, char *err, size_t errlen)
{
    *kinds = 0;
    const char *p = list;
    while (*p) {
        size_t len = strcspn(p, ",");
        unsigned i = 0;
        while (i < LP_KIND_COUNT && !word_is(p, len, kinds_info[i].name) &&
               !word_is(p, len, kinds_info[i].alias))
            i++;
        if (i == LP_KIND_COUNT) {
            char known[256] = "";
            for (unsigned k = 0, used = 0; k < LP_KIND_COUNT && used < sizeof known; k++)
                used += (unsigned)snprintf(known + used, sizeof known - used, "%s%s",
                                           k ? ", " : "", kinds_info[k].name);
            snprintf(err, errlen, "unknown kind '%.*s' (known: %s)", (int)len, p, known);
            return -1;
        }
        *kinds |= 1u << i;
        p += len + (p[len] == ',');
    }
    return 0;
}

uint64_t lp_activity_active_devices(void) { return atomic_load(&active_devices); }

/* With pool_lock held: BUFFER's index in all_bufs, or -1 when it is not one of ours. */
static int slot_of(const uint8_t *buffer)
{
    for (unsigned i = 0; buffer && i < n_alloc; i++)
        if (all_bufs[i] == buffer)
            return (int)i;
    return -1;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *max_records = 0;
    pthread_mutex_lock(&pool_lock);
    uint8_t *b = NULL;
    if (n_free > 0) { /* the longest free: a late second return of it is then told */
        b = free_bufs[0];
        memmove(free_bufs, free_bufs + 1, --n_free * sizeof *free_bufs);
        buf_state[slot_of(b)] = BUF_LENT;
    } else if (n_alloc < opts.max_buffers) {
        b = calloc(1, opts.buffer_bytes); /* CUPTI needs 8-byte alignment: calloc's is 16 */
        if (b) {
            buf_state[n_alloc] = BUF_LENT;
            all_bufs[n_alloc++] = b; /* never freed: reused until exit */
        }
    }
    if (!b)
        denied++;
    pthread_mutex_unlock(&pool_lock);
    *buffer = b;
    *size = b ? opts.buffer_bytes : 0;
}

static lp_str intern_cb(void *user, const char *s)
{
    (void)user;
    return lp_sink_intern(s);
}

/* Kernels, copies and sets launched after a window closed, recorded while kernel activity
 * waited to go off (window.c): left out. */
static int in_window(const struct lp_record *r)
{
    switch (r->type) {
    case LP_REC_KERNEL: return lp_launch_in_window(r->u.kernel.correlation);
    case LP_REC_MEMCPY: return lp_launch_in_window(r->u.memcpy.correlation);
    case LP_REC_MEMSET: return lp_launch_in_window(r->u.memset.correlation);
    default: return 1;
    }
}

/* Correlation ids as llmprof numbers them: CUPTI's start again after a finalize (launch.h). */
static void rebase(struct lp_record *r, uint32_t base)
{
    uint32_t *c = r->type == LP_REC_KERNEL   ? &r->u.kernel.correlation
                  : r->type == LP_REC_MEMCPY ? &r->u.memcpy.correlation
                  : r->type == LP_REC_MEMSET ? &r->u.memset.correlation
                  : r->type == LP_REC_MEMORY ? &r->u.memory.correlation
                  : r->type == LP_REC_API    ? &r->u.api.correlation
                                             : NULL;
    if (c && *c)
        *c += base;
}

static const char *api_name_cb(void *user, uint32_t domain, uint32_t cbid)
{
    (void)user;
    return lp_launch_api_name(domain, cbid);
}

/* Runs on CUPTI's thread: only queues the buffer, so CUPTI is never held up by llmprof's
 * conversion and compression, which happen in lp_activity_drain on llmprof's thread. */
static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                      size_t size, size_t valid)
{
    (void)size;
    size_t dropped = 0;
    if (lp_cupti.ActivityGetNumDroppedRecords(ctx, stream, &dropped) != CUPTI_SUCCESS)
        dropped = 0;
    /* CUPTI drops about one record a finalize (docs/collector.md): those are said once, at
     * the end (lp_activity_finish) */
    int renewing = lp_attach_renewing();
    pthread_mutex_lock(&pool_lock);
    dropped_total += dropped;
    if (renewing)
        dropped_renewing += dropped;
    int slot = slot_of(buffer);
    int lent = slot >= 0 && buf_state[slot] == BUF_LENT;
    if (lent) {
        buf_state[slot] = BUF_DONE;
        done_bufs[n_done] = buffer;
        done_base[n_done] = lp_launch_correlation_base();
        done_valid[n_done++] = valid;
    } else if (slot >= 0) {
        unlent++;
    }
    pthread_mutex_unlock(&pool_lock);
    if (buffer && slot < 0) /* only if another CUPTI client re-registered callbacks */
        lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0,
                        "a buffer of another CUPTI client reached llmprof "
                        "and was left alone: its records are not recorded");
    if (dropped && !renewing) /* CUPTI may count a finalize's drop in a later buffer */
        lp_collect_warn(LP_LOSS_SOURCE_CUPTI_DROPPED, dropped, "%s",
                        lp_attach_finalized()
                            ? "CUPTI dropped activity records (buffers full, or as it was "
                              "finalized between capture windows); counts are in the trace"
                            : "CUPTI dropped activity records (buffers full); counts are in the "
                              "trace");
    atomic_fetch_add(&completions, 1);
    if (notify)
        notify();
}

uint64_t lp_activity_completions(void) { return atomic_load(&completions); }
void lp_activity_set_notify(void (*fn)(void)) { notify = fn; }

void lp_activity_drain(void)
{
    struct lp_convert_ctx cc = {intern_cb, api_name_cb, NULL, lp_cupti.version};
    for (;;) {
        pthread_mutex_lock(&pool_lock);
        if (n_done == 0) {
            pthread_mutex_unlock(&pool_lock);
            return;
        }
        uint8_t *buffer = done_bufs[0];
        size_t valid = done_valid[0];
        uint32_t base = done_base[0];
        n_done--;
        memmove(done_bufs, done_bufs + 1, n_done * sizeof *done_bufs);
        memmove(done_valid, done_valid + 1, n_done * sizeof *done_valid);
        memmove(done_base, done_base + 1, n_done * sizeof *done_base);
        pthread_mutex_unlock(&pool_lock);
        CUpti_Activity *a = NULL;
        uint64_t devices = 0;
        lp_sink_lock();
        while (valid > 0 && lp_cupti.ActivityGetNextRecord(buffer, valid, &a) == CUPTI_SUCCESS) {
            struct lp_record r;
            if (!lp_convert_activity(a, &cc, &r))
                continue;
            if (base)
                rebase(&r, base);
            if (opts.windowed && !in_window(&r))
                continue;
            if (r.type == LP_REC_KERNEL && (r.u.kernel.flags & LP_KERNEL_FLAG_REPLAY) &&
                !r.u.kernel.start && !r.u.kernel.end) {
                untimed_replays++;
                continue;
            }
            if (r.type == LP_REC_KERNEL && r.u.kernel.device < 64)
                devices |= 1ull << r.u.kernel.device;
            lp_sink_add(&r);
        }
        lp_sink_unlock();
        if (devices)
            atomic_fetch_or(&active_devices, devices);
        if (zeroed) /* whole: CUPTI may have written past what it reported valid */
            memset(buffer, 0, opts.buffer_bytes);
        pthread_mutex_lock(&pool_lock);
        buf_state[slot_of(buffer)] = BUF_FREE; /* queued buffers are ours */
        free_bufs[n_free++] = buffer;
        pthread_mutex_unlock(&pool_lock);
    }
}

/* the kinds capture windows switch: the per-launch activity kinds */
static int windowed_kind(unsigned i)
{
    return !(LP_KINDS_LIGHT & 1u << i) && kinds_info[i].cupti != CUPTI_ACTIVITY_KIND_INVALID;
}

int lp_activity_set_recording(int on)
{
    if (on == recording)
        return 0;
    recording = on;
    int rc = 0;
    for (unsigned i = 0; i < LP_KIND_COUNT; i++) {
        if (!(opts.kinds & 1u << i) || !windowed_kind(i))
            continue;
        CUptiResult r = lp_attach_kind(on, kinds_info[i].cupti);
        if (r != CUPTI_SUCCESS && on && i == LP_KIND_INDEX_KERNEL)
            rc = -1;
    }
    return rc;
}

/* CUDA graph replays recorded node by node from now on, WHY in the warning. */
static void replays_by_node(const char *why)
{
    lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "%s: CUDA graph replays are recorded node by "
                    "node (as record --graphs node)", why);
    __atomic_store_n(&opts.graph_replays, 0, __ATOMIC_RELAXED);
    lp_sink_set_meta("graphs", "node");
}

/* Graph-level records (CUPTI_ACTIVITY_KIND_GRAPH_TRACE), for replays recorded whole; on
 * refusal, replays are recorded node by node. 0 when on. */
static int enable_graph_records(void)
{
    if (lp_attach_kind(1, CUPTI_ACTIVITY_KIND_GRAPH_TRACE) == CUPTI_SUCCESS)
        return 0;
    replays_by_node("CUPTI refused graph-level records");
    return -1;
}

/* Arms the entry callbacks of every graph instantiation call of both domains (the runtime's
 * make the driver's); graph-level records go on at the first (lp_activity_callback, which
 * the subscriber's callback calls). 0 when all are armed; else none is, and the caller
 * enables the records at once. */
static int watch_instantiation(void)
{
    static const CUpti_CallbackDomain domains[2] = {CUPTI_CB_DOMAIN_RUNTIME_API,
                                                    CUPTI_CB_DOMAIN_DRIVER_API};
    static const char *const prefixes[2] = {"cudaGraphInstantiate", "cuGraphInstantiate"};
    /* the subscriber's callback must pass them on to lp_activity_callback */
    if (!lp_attach_subscriber() || !opts.callback || !lp_cupti.EnableCallback ||
        !lp_cupti.GetCallbackName)
        return -1;
    unsigned armed = 0, failed = 0;
    __atomic_store_n(&graphs_pending, 1, __ATOMIC_RELEASE);
    for (int d = 0; d < 2; d++)
        for (uint32_t cbid = 1; cbid < MAX_CBID; cbid++) {
            const char *name = NULL;
            if (lp_cupti.GetCallbackName(domains[d], cbid, &name) != CUPTI_SUCCESS || !name ||
                strncmp(name, prefixes[d], strlen(prefixes[d])) != 0)
                continue;
            instantiates[d][cbid] = 1;
            if (lp_attach_callback(1, domains[d], cbid) == CUPTI_SUCCESS)
                armed++;
            else
                failed++;
        }
    if (armed && !failed)
        return 0;
    /* a call left unwatched could instantiate a graph while the records are off */
    __atomic_store_n(&graphs_pending, 0, __ATOMIC_RELEASE);
    for (int d = 0; d < 2; d++)
        for (uint32_t cbid = 1; cbid < MAX_CBID; cbid++)
            if (instantiates[d][cbid])
                lp_attach_callback(0, domains[d], cbid);
    return -1;
}

void lp_activity_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
    int d = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? 0 : domain == CUPTI_CB_DOMAIN_DRIVER_API
                                                            ? 1 : -1;
    const CUpti_CallbackData *cd = data;
    if (d < 0 || cbid >= MAX_CBID || !instantiates[d][cbid] || !cd ||
        cd->callbackSite != CUPTI_API_ENTER || !__atomic_load_n(&graphs_pending, __ATOMIC_ACQUIRE))
        return;
    /* no finalize may overlap the first instantiation (lp_activity_graphs_seen) */
    __atomic_store_n(&instantiating, 1, __ATOMIC_SEQ_CST);
    for (int ms = 0; ms < 200 && lp_attach_renewing(); ms++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    /* a second thread instantiating meanwhile waits here until the records are on */
    pthread_mutex_lock(&graph_lock);
    if (__atomic_load_n(&graphs_pending, __ATOMIC_RELAXED)) {
        /* CUPTI was finalized between capture windows before (or is being: this call waited
         * 200 ms for it): a graph may have been made unseen while it was away, and replaying
         * a graph made while graph-level records were off, once they are on, crashed CUPTI
         * (H200, CUPTI 13.0) */
        if (lp_attach_finalized() || lp_attach_renewing())
            replays_by_node("the program's first CUDA graph came after CUPTI was finalized "
                            "between capture windows, when a graph may have been made unseen");
        else
            enable_graph_records();
        __atomic_store_n(&graphs_pending, 0, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&graph_lock);
}

void lp_activity_graph_launched(void)
{
    if (!__atomic_load_n(&graphs_pending, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&graph_lock);
    if (__atomic_load_n(&graphs_pending, __ATOMIC_RELAXED) &&
        (lp_attach_finalized() || lp_attach_renewing())) {
        replays_by_node("a CUDA graph whose instantiation was not seen (made while CUPTI was "
                        "finalized between capture windows) was launched");
        __atomic_store_n(&graphs_pending, 0, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&graph_lock);
}

static void CUPTIAPI no_callbacks(void *userdata, CUpti_CallbackDomain domain,
                                  CUpti_CallbackId cbid, const void *data)
{
    (void)userdata, (void)domain, (void)cbid, (void)data;
}

/* CUPTI's device buffers (kernel, copy and set records wait there for the host): the sizes
 * asked for, set before any context exists, as CUPTI applies them to contexts made later;
 * then what CUPTI holds, into the trace header (a value it cannot say is left out). */
static void device_buffers(void)
{
    static const struct {
        CUpti_ActivityAttribute attr;
        size_t offset;
        const char *key;
        enum lp_envconfig_var var;
    } attrs[] = {
        /* the limit first: a context makes fewer buffers at its creation than it */
        {CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT,
         offsetof(struct lp_activity_options, device_buffer_limit),
         "cupti_device_buffer_limit", LP_ENVCONFIG_VAR_DEVICE_BUFFER_LIMIT},
        {CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE,
         offsetof(struct lp_activity_options, device_buffer_bytes),
         "cupti_device_buffer_bytes", LP_ENVCONFIG_VAR_DEVICE_BUFFER_KB},
        {CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE,
         offsetof(struct lp_activity_options, device_buffers), "cupti_device_buffers",
         LP_ENVCONFIG_VAR_DEVICE_BUFFERS},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof *attrs; i++) {
        size_t v = *(const size_t *)((const char *)&opts + attrs[i].offset), size = sizeof v;
        if (v && lp_attach_attribute(attrs[i].attr, size, &v) != CUPTI_SUCCESS)
            lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0,
                            "CUPTI refused %s=%zu: its default is kept",
                            lp_envconfig_name(attrs[i].var),
                            attrs[i].attr == CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE ? v / 1024
                                                                                     : v);
        size_t now = 0;
        size = sizeof now;
        if (lp_cupti.ActivityGetAttribute &&
            lp_cupti.ActivityGetAttribute(attrs[i].attr, &size, &now) == CUPTI_SUCCESS)
            lp_sink_set_meta_u64(attrs[i].key, now);
    }
}

int lp_activity_start(const struct lp_activity_options *o)
{
    opts = *o;
    recording = !opts.windowed;
    free_bufs = calloc(opts.max_buffers, sizeof *free_bufs);
    done_bufs = calloc(opts.max_buffers, sizeof *done_bufs);
    all_bufs = calloc(opts.max_buffers, sizeof *all_bufs);
    done_valid = calloc(opts.max_buffers, sizeof *done_valid);
    done_base = calloc(opts.max_buffers, sizeof *done_base);
    buf_state = calloc(opts.max_buffers, sizeof *buf_state);
    if (!free_bufs || !done_bufs || !all_bufs || !done_valid || !done_base || !buf_state)
        return -1;
    /* CUPTI has one subscriber slot. Holding it (with only graph.c's callbacks on) keeps a later
     * torch.profiler from taking over the activity API mid-run; it then reports
     * CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED and profiles the CPU side only. A tool
     * that already holds the slot keeps it, and llmprof stays off CUPTI in this process. */
    CUpti_CallbackFunc cb = opts.callback ? opts.callback : no_callbacks;
    CUptiResult sub = opts.subscribe ? lp_attach_subscribe(cb) : CUPTI_SUCCESS;
    if (sub == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0,
                        "another CUPTI client (nsys, ncu, compute-sanitizer, torch.profiler ...) "
                        "is active in this process: llmprof records no kernels, copies or NVTX "
                        "ranges here; the program and that tool run on unaffected");
        return 1;
    }
    if (sub != CUPTI_SUCCESS)
        lp_cupti_check(sub, "cuptiSubscribe");
    device_buffers();
    uint8_t yes = 1;
    zeroed = lp_attach_attribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, sizeof yes,
                                 &yes) == CUPTI_SUCCESS;
    for (unsigned i = 0; i < PREALLOCATED_BUFFERS && n_alloc < opts.max_buffers; i++) {
        uint8_t *b = calloc(1, opts.buffer_bytes);
        if (!b)
            break;
        all_bufs[n_alloc++] = b;
        free_bufs[n_free++] = b;
    }
    if (lp_attach_buffers(buffer_requested, buffer_completed) != CUPTI_SUCCESS)
        return -1;
    unsigned kinds = opts.kinds;
    for (unsigned i = 0; i < LP_KIND_COUNT; i++) {
        if (!(kinds & 1u << i) || kinds_info[i].cupti == CUPTI_ACTIVITY_KIND_INVALID ||
            (opts.windowed && windowed_kind(i)))
            continue;
        /* kernels are what every report hangs on: without them activity is of no use */
        if (lp_attach_kind(1, kinds_info[i].cupti) != CUPTI_SUCCESS && i == LP_KIND_INDEX_KERNEL)
            return -1;
    }
    /* Graph-level records are chosen per replay, at its launch, and must be on before a graph
     * is instantiated: on the H200 (CUPTI 2025.3.1) replaying a graph instantiated while they
     * were off, once they are on again, crashed the process (tests/gpu/graph_trace_probe.cu).
     * Once on they stay on: capture windows switch kernel activity only, and replays outside
     * the windows are left out like kernels. They go on at the entry of the program's first
     * graph instantiation, not here: on they cost every eager launch about 0.45 us in CUPTI,
     * kernel activity off (docs/benchmarks.md), which a program that makes no graph, or a
     * capture window's program before its first graph, need not pay. Where the
     * instantiation calls cannot all be watched, they go on here. */
    opts.graph_replays = opts.graph_replays && (kinds & LP_KIND_KERNEL);
    if (opts.graph_replays && watch_instantiation() != 0)
        enable_graph_records();
    return 0;
}

int lp_activity_graph_replays(void)
{
    return __atomic_load_n(&opts.graph_replays, __ATOMIC_RELAXED);
}

int lp_activity_graphs_seen(void)
{
    return !__atomic_load_n(&graphs_pending, __ATOMIC_SEQ_CST) ||
           __atomic_load_n(&instantiating, __ATOMIC_SEQ_CST);
}

void lp_activity_flush(int forced)
{
    if (lp_cupti.ActivityFlushAll && !lp_attach_renewing()) /* not into a finalize */
        lp_cupti.ActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
}

void lp_activity_finish(void)
{
    size_t dropped = 0;
    if (lp_cupti.ActivityGetNumDroppedRecords &&
        lp_cupti.ActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS && dropped)
        lp_collect_warn(LP_LOSS_SOURCE_CUPTI_DROPPED, dropped, "CUPTI dropped activity records");
    pthread_mutex_lock(&pool_lock);
    uint64_t d = denied, total = dropped_total + dropped, at_renewal = dropped_renewing;
    uint64_t twice = unlent;
    unsigned peak = n_alloc;
    pthread_mutex_unlock(&pool_lock);
    if (at_renewal)
        lp_collect_warn(LP_LOSS_SOURCE_CUPTI_DROPPED, at_renewal,
                        "CUPTI dropped %llu activity record%s as it was finalized between "
                        "capture windows", (unsigned long long)at_renewal,
                        at_renewal == 1 ? "" : "s");
    if (d)
        lp_collect_warn(LP_LOSS_SOURCE_BUFFER_DENIED, 0, /* a count of requests, not records */
                        "the activity buffer pool reached its bound (%u x %zu bytes) %llu times; "
                        "CUPTI dropped what did not fit", opts.max_buffers, opts.buffer_bytes,
                        (unsigned long long)d);
    if (twice)
        lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, /* buffers: their records are unknown */
                        "CUPTI returned %llu activity buffer%s llmprof had not lent it (one "
                        "it had returned already): left alone",
                        (unsigned long long)twice, twice == 1 ? "" : "s");
    if (untimed_replays)
        lp_collect_warn(LP_LOSS_SOURCE_CUPTI_DROPPED, untimed_replays,
                        "%llu CUDA graph replays came without times from CUPTI and are not "
                        "recorded", (unsigned long long)untimed_replays);
    lp_sink_set_meta_u64("cupti_dropped_records", total);
    lp_sink_set_meta_u64("activity_buffers_peak", peak);
    lp_sink_set_meta_u64("activity_buffers_unlent", twice);
    lp_sink_set_meta_u64("activity_buffer_bytes", opts.buffer_bytes);
}
