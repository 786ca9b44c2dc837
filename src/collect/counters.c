/* Hardware counters per segment (see counters.h). Sequence, from CUPTI's guide: profiler
 * initialise, chip name, counter availability, host object, metrics, config image (one
 * pass or refused), enable on the context, counter-data image, set config (user range,
 * user replay, one nesting level), start; then at each cut pop the open range and push the
 * next. When the image holds PER_PASS ranges, a cut stops, decodes (this synchronises the
 * context: once per PER_PASS segments), writes the records and starts again. The end
 * (context destruction, or exit) does the same once more. Values are evaluated on the
 * host from the decoded image. */
#include "counters.h"

#include <math.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach.h"
#include "clock.h"
#include "config.h"
#include "cupti_api.h"
#include "dlbind.h"
#include "log.h"
#include "metric_config.h"
#include "nvtx.h"
#include "sink.h"

/* The metric behind each counter on GH100-class chips (tests/gpu/counters_probe.md), in the
 * order a default set gives them up when the chip cannot fit them in one pass (last first).
 * Tensor counters are asked for by their dtype (lp_counter_dtype); the others always. */
static const struct {
    enum lp_counter id;
    const char *metric;
} metrics[] = {
    {LP_COUNTER_DRAM_READ, "dram__bytes_read.sum"},
    {LP_COUNTER_DRAM_WRITE, "dram__bytes_write.sum"},
    {LP_COUNTER_GPU_NS, "gpu__time_duration.sum"},
    {LP_COUNTER_TENSOR_BF16, "sm__ops_path_tensor_src_bf16_dst_fp32.sum"},
    {LP_COUNTER_TENSOR_FP8, "sm__ops_path_tensor_src_fp8.sum"},
    {LP_COUNTER_TENSOR_FP16, "sm__ops_path_tensor_src_fp16.sum"},
    {LP_COUNTER_TENSOR_TF32, "sm__ops_path_tensor_src_tf32_dst_fp32.sum"},
    {LP_COUNTER_SM_CYCLES, "sm__cycles_elapsed.max"},
    {LP_COUNTER_L2_BYTES, "lts__t_bytes.sum"},
};
enum { N_METRICS = sizeof metrics / sizeof *metrics };
#define DEFAULT_DTYPES "bf16,fp8" /* the pair that fits one pass with the rest on GH100 */

enum state { ST_OFF, ST_WAITING, ST_ON, ST_DONE };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int state;                    /* read without the lock in callbacks: atomic */
    int user_set;                 /* the dtypes were chosen: refuse rather than trim */
    unsigned wanted;              /* bits of enum lp_counter */
    regex_t re;
    uint64_t owner;               /* the thread that cuts, once one has */
    int has_owner;
    CUcontext ctx;
    uint32_t device;
    CUpti_RangeProfiler_Object *rp;
    struct lp_metric_config cfg;  /* the metrics, their config image and host object */
    uint8_t *data;
    size_t data_size;
    size_t per_pass, in_pass;     /* ranges an image holds; pushed into this one */
    uint32_t first;               /* segment number of this image's first range */
    uint64_t *t_start, *t_end;    /* per range of this image */
    uint32_t next;                /* segments started */
    int open;                     /* a range is pushed and not popped */
    uint64_t other_threads;       /* cuts seen on other threads, ignored */
    uint64_t written, dropped;
    int finished;                 /* lp_counters_stop has said its totals */
} c;

static CUresult (*cuCtxGetCurrent_p)(CUcontext *);
static CUresult (*cuCtxGetDevice_p)(CUdevice *);

/* a CUPTI call with its parameter struct, warned once per call site on error */
#define CALL(fn, params) LP_CUPTI(fn, params)

/* the counters asked for: the tensor ones of the dtype LIST and every other one */
static unsigned wanted_of(const char *list, char *err, size_t errlen)
{
    unsigned tensor = 0;
    if (lp_counter_parse_dtypes(list, &tensor, err, errlen) != LP_OK)
        return 0;
    for (size_t i = 0; i < N_METRICS; i++)
        if (!lp_counter_dtype(metrics[i].id))
            tensor |= 1u << metrics[i].id;
    return tensor;
}

/* the counters stop for the rest of the run: said once, with the segments LOST */
static void fail(uint64_t lost, const char *what, const char *detail)
{
    lp_collect_warn(LP_LOSS_SOURCE_COUNTERS, lost, "hardware counters off: %s%s%s", what,
                    *detail ? ": " : "", detail);
    __atomic_store_n(&c.state, ST_DONE, __ATOMIC_RELEASE);
}

static const char *why(CUptiResult rc)
{
    switch (rc) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
        return "the driver lets only administrators read GPU performance counters "
               "(NVreg_RestrictProfilingToAdminUsers=1): run as root or change that setting";
    case CUPTI_ERROR_HARDWARE_BUSY:
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
        return "another tool holds the GPU's counters (Nsight Compute, DCGM profiling, a second "
               "profiler)";
    default: return "see the CUPTI error before this";
    }
}

/* Picks the metrics: the wanted set if it fits one pass; else, for the default set, those
 * that fit in list order; for a chosen set, none (refused, with what would fit). */
static int choose_metrics(const char *chip, const uint8_t *avail)
{
    const char *all[N_METRICS];
    unsigned ids[N_METRICS];
    size_t n = 0;
    for (size_t i = 0; i < N_METRICS; i++)
        if (c.wanted & (1u << metrics[i].id)) {
            ids[n] = metrics[i].id;
            all[n++] = metrics[i].metric;
        }
    enum lp_metric_choice got = lp_metric_config_choose(&c.cfg, LP_PROFILER_TYPE_RANGE_PROFILER,
                                                        chip, avail, all, ids, n, c.user_set);
    char msg[2048];
    if (got == LP_METRIC_CHOICE_NONE) {
        snprintf(msg, sizeof msg, "the counters asked for need %zu passes on %s (llmprof counts in "
                 "one, without replay): left out: %s; one pass holds: %s", c.cfg.passes, chip,
                 c.cfg.left, *c.cfg.fits ? c.cfg.fits : "none");
        fail(0, msg, "");
        return -1;
    }
    if (got == LP_METRIC_CHOICE_TRIMMED)
        lp_collect_warn(LP_LOSS_SOURCE_COUNTERS, 0, "hardware counters: %s cannot count every "
                        "default metric in one pass: left out %s", chip, c.cfg.left);
    return 0;
}

static int set_config(void)
{
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params di = {
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    di.pRangeProfilerObject = c.rp;
    di.counterDataSize = c.data_size;
    di.pCounterData = c.data;
    CUpti_RangeProfiler_SetConfig_Params sc = {CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    sc.pRangeProfilerObject = c.rp;
    sc.configSize = c.cfg.image_size;
    sc.pConfig = c.cfg.image;
    sc.counterDataImageSize = c.data_size;
    sc.pCounterDataImage = c.data;
    sc.range = CUPTI_UserRange;
    sc.replayMode = CUPTI_UserReplay;
    sc.maxRangesPerPass = c.per_pass;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.targetNestingLevel = 1;
    CUpti_RangeProfiler_Start_Params st = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    st.pRangeProfilerObject = c.rp;
    if (CALL(RangeProfilerCounterDataImageInitialize, &di) != CUPTI_SUCCESS ||
        CALL(RangeProfilerSetConfig, &sc) != CUPTI_SUCCESS ||
        CALL(RangeProfilerStart, &st) != CUPTI_SUCCESS)
        return -1;
    c.in_pass = 0;
    c.first = c.next;
    return 0;
}

/* Everything up to the first range, on the first cut (a context is current there). */
static int enable(void)
{
    CUcontext ctx = NULL;
    CUdevice dev = 0;
    if (!cuCtxGetCurrent_p || cuCtxGetCurrent_p(&ctx) != 0 || !ctx)
        return 1; /* no context yet: try at the next cut */
    if (cuCtxGetDevice_p && cuCtxGetDevice_p(&dev) != 0)
        dev = 0;
    CUpti_Device_GetChipName_Params cn = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    cn.deviceIndex = (size_t)dev;
    CUpti_Profiler_GetCounterAvailability_Params ca = {
        CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    ca.ctx = ctx;
    /* called plainly: a refusal here (counters busy or restricted) is said once, below */
    CUptiResult rc;
    if ((rc = lp_profiler_load()) != CUPTI_SUCCESS ||
        (rc = lp_cupti.DeviceGetChipName(&cn)) != CUPTI_SUCCESS ||
        (rc = lp_cupti.ProfilerGetCounterAvailability(&ca)) != CUPTI_SUCCESS) {
        char msg[160];
        snprintf(msg, sizeof msg, "the profiler could not start (CUPTI error %d)", (int)rc);
        fail(0, msg, why(rc));
        return -1;
    }
    uint8_t *avail = calloc(1, ca.counterAvailabilityImageSize ? ca.counterAvailabilityImageSize : 1);
    ca.pCounterAvailabilityImage = avail;
    if (!avail || (rc = lp_cupti.ProfilerGetCounterAvailability(&ca)) != CUPTI_SUCCESS) {
        free(avail);
        fail(0, "no counter availability", why(rc));
        return -1;
    }
    int chosen = choose_metrics(cn.pChipName, avail);
    free(avail);
    if (chosen != 0)
        return -1;
    CUpti_RangeProfiler_Enable_Params en = {CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    en.ctx = ctx;
    if ((rc = lp_cupti.RangeProfilerEnable(&en)) != CUPTI_SUCCESS) {
        fail(0, "the range profiler could not be enabled", why(rc));
        return -1;
    }
    c.rp = en.pRangeProfilerObject;
    c.ctx = ctx;
    c.device = (uint32_t)dev;
    CUpti_RangeProfiler_GetCounterDataSize_Params ds = {
        CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    ds.pRangeProfilerObject = c.rp;
    ds.pMetricNames = c.cfg.names;
    ds.numMetrics = c.cfg.n;
    ds.maxNumOfRanges = c.per_pass;
    ds.maxNumRangeTreeNodes = c.per_pass;
    if (CALL(RangeProfilerGetCounterDataSize, &ds) != CUPTI_SUCCESS ||
        !(c.data = calloc(1, ds.counterDataSize)) ||
        !(c.t_start = calloc(c.per_pass, sizeof *c.t_start)) ||
        !(c.t_end = calloc(c.per_pass, sizeof *c.t_end))) {
        fail(0, "no counter-data image", "");
        return -1;
    }
    c.data_size = ds.counterDataSize;
    if (set_config() != 0) {
        fail(0, "the range profiler could not start", why(CUPTI_SUCCESS));
        return -1;
    }
    char names[1024];
    lp_metric_config_list(&c.cfg, names, sizeof names);
    lp_sink_set_meta("counters_metrics", names);
    lp_sink_set_meta("counters_chip", cn.pChipName);
    lp_sink_set_meta_u64("counters_image_bytes", c.data_size);
    return 0;
}

static uint64_t to_u64(double v)
{
    if (!(v >= 0)) /* NaN and negatives: not a count */
        return 0;
    return v >= 1.8e19 ? UINT64_MAX : (uint64_t)(v + 0.5);
}

/* Stops the pass, decodes and writes its ranges (the decode synchronises the context). */
static int end_pass(void)
{
    CUpti_RangeProfiler_Stop_Params sp = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    sp.pRangeProfilerObject = c.rp;
    CUpti_RangeProfiler_DecodeData_Params dd = {CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    dd.pRangeProfilerObject = c.rp;
    CUpti_RangeProfiler_GetCounterDataInfo_Params gi = {
        CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    gi.pCounterDataImage = c.data;
    gi.counterDataImageSize = c.data_size;
    if (CALL(RangeProfilerStop, &sp) != CUPTI_SUCCESS ||
        CALL(RangeProfilerDecodeData, &dd) != CUPTI_SUCCESS ||
        CALL(RangeProfilerGetCounterDataInfo, &gi) != CUPTI_SUCCESS) {
        fail(c.in_pass, "the counter data could not be decoded", "the open pass's segments are lost");
        return -1;
    }
    c.dropped += dd.numOfRangeDropped;
    double v[N_METRICS];
    size_t n = gi.numTotalRanges < c.in_pass ? gi.numTotalRanges : c.in_pass;
    lp_sink_lock();
    for (size_t i = 0; i < n; i++) {
        CUpti_RangeProfiler_CounterData_GetRangeInfo_Params ri = {
            CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE};
        ri.pCounterDataImage = c.data;
        ri.counterDataImageSize = c.data_size;
        ri.rangeIndex = i;
        ri.rangeDelimiter = "/";
        struct lp_host_evaluate_params ev = LP_HOST_PARAMS(lp_host_evaluate_params);
        ev.pHostObject = c.cfg.host;
        ev.pCounterDataImage = c.data;
        ev.counterDataImageSize = c.data_size;
        ev.rangeIndex = i;
        ev.ppMetricNames = c.cfg.names;
        ev.numMetrics = c.cfg.n;
        ev.pMetricValues = v;
        /* the range's name is its segment number: ranges CUPTI dropped leave no hole */
        char *end = NULL;
        unsigned long seg = 0;
        if (CALL(RangeProfilerCounterDataGetRangeInfo, &ri) != CUPTI_SUCCESS || !ri.rangeName ||
            (seg = strtoul(ri.rangeName, &end, 10), *end) || seg < c.first ||
            seg - c.first >= c.in_pass || CALL(ProfilerHostEvaluateToGpuValues, &ev) != CUPTI_SUCCESS) {
            c.dropped++;
            continue;
        }
        struct lp_counters r = {.start = c.t_start[seg - c.first], .end = c.t_end[seg - c.first],
                                .thread = (uint32_t)c.owner, .device = c.device,
                                .index = (uint32_t)seg};
        for (size_t k = 0; k < c.cfg.n; k++)
            if (!isnan(v[k])) {
                r.valid |= 1u << c.cfg.ids[k];
                r.value[c.cfg.ids[k]] = to_u64(v[k]);
            }
        lp_sink_add(&(struct lp_record){.type = LP_REC_COUNTERS, .u.counters = r});
        c.written++;
    }
    lp_sink_unlock();
    if (gi.numTotalRanges < c.in_pass)
        c.dropped += c.in_pass - gi.numTotalRanges;
    return 0;
}

static int push(uint64_t now)
{
    if (c.in_pass == c.per_pass && (end_pass() != 0 || set_config() != 0)) {
        if (__atomic_load_n(&c.state, __ATOMIC_ACQUIRE) != ST_DONE)
            fail(0, "the range profiler could not start again", "");
        return -1;
    }
    char name[16];
    snprintf(name, sizeof name, "%u", c.next);
    CUpti_RangeProfiler_PushRange_Params pu = {CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
    pu.pRangeProfilerObject = c.rp;
    pu.pRangeName = name;
    if (CALL(RangeProfilerPushRange, &pu) != CUPTI_SUCCESS) {
        fail(0, "a profiler range could not be opened", "");
        return -1;
    }
    c.t_start[c.in_pass] = now;
    c.t_end[c.in_pass] = now;
    c.in_pass++;
    c.next++;
    c.open = 1;
    return 0;
}

static void pop(uint64_t now)
{
    if (!c.open)
        return;
    CUpti_RangeProfiler_PopRange_Params po = {CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
    po.pRangeProfilerObject = c.rp;
    c.open = 0;
    c.t_end[c.in_pass - 1] = now;
    if (CALL(RangeProfilerPopRange, &po) != CUPTI_SUCCESS)
        fail(0, "a profiler range could not be closed", "");
}

static void stop_at_exit(void) { lp_counters_stop(); }

/* A counted range started or ended on THREAD: the open segment ends, the next begins. */
static void cut(uint64_t thread)
{
    pthread_mutex_lock(&mu);
    int st = __atomic_load_n(&c.state, __ATOMIC_ACQUIRE);
    if (st == ST_WAITING || st == ST_ON) {
        if (c.has_owner && thread != c.owner) {
            c.other_threads++;
        } else if (st == ST_WAITING) {
            int rc = enable();
            if (rc == 0) {
                /* registered after the profiler's first use, so it runs before the exit
                 * handlers of the state that use built (see pmsample.c): the last decode
                 * finds that state whole */
                atexit(stop_at_exit);
                c.owner = thread;
                c.has_owner = 1;
                __atomic_store_n(&c.state, ST_ON, __ATOMIC_RELEASE);
                push(lp_clock_ns());
            }
        } else {
            uint64_t now = lp_clock_ns();
            pop(now);
            if (__atomic_load_n(&c.state, __ATOMIC_ACQUIRE) == ST_ON)
                push(now);
        }
    }
    pthread_mutex_unlock(&mu);
}

/* NVTX (nvtx.c): a counted range opened or closed cuts the segment. */
static int on_push(const char *name, uint32_t thread, uint64_t now)
{
    (void)now;
    int st = __atomic_load_n(&c.state, __ATOMIC_ACQUIRE);
    if (st == ST_OFF || st == ST_DONE || !name || regexec(&c.re, name, 0, NULL, 0) != 0)
        return 0;
    cut(thread);
    return 1;
}

static void on_pop(uint32_t thread, uint64_t now)
{
    (void)now;
    int st = __atomic_load_n(&c.state, __ATOMIC_ACQUIRE);
    if (st != ST_OFF && st != ST_DONE)
        cut(thread);
}

static const struct lp_nvtx_client nvtx_client = {on_push, on_pop};

void lp_counters_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
    if (__atomic_load_n(&c.state, __ATOMIC_ACQUIRE) == ST_OFF || !data ||
        domain != CUPTI_CB_DOMAIN_RESOURCE)
        return;
    const CUpti_ResourceData *rd = data;
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING && rd->context == c.ctx)
        lp_counters_stop();
}

void lp_counters_start(CUpti_SubscriberHandle subscriber)
{
    const struct lp_envconfig *cfg = lp_config_get();
    const char *want = cfg->counters; /* NULL: unset, empty or "0" */
    if (!want)
        return;
    if (!lp_cupti.RangeProfilerEnable || !lp_cupti.ProfilerHostInitialize ||
        !lp_cupti.RangeProfilerCounterDataGetRangeInfo || !lp_cupti.ProfilerInitialize ||
        !lp_cupti.DeviceGetChipName || !lp_cupti.ProfilerGetCounterAvailability ||
        !lp_cupti.ProfilerHostConfigAddMetrics || !lp_cupti.ProfilerHostDeinitialize) {
        lp_collect_warn(LP_LOSS_SOURCE_COUNTERS, 0, "hardware counters off: this CUPTI (%u) has "
                        "no range profiler (CUDA 12.6 or later has)", lp_cupti.version);
        return;
    }
    if (!subscriber || !lp_cupti.EnableCallback) {
        lp_collect_warn(LP_LOSS_SOURCE_COUNTERS, 0, "hardware counters off: llmprof holds no "
                        "CUPTI subscriber for the NVTX callbacks");
        return;
    }
    char err[256] = "";
    c.user_set = strcmp(want, "1") && strcmp(want, "default");
    c.wanted = wanted_of(c.user_set ? want : DEFAULT_DTYPES, err, sizeof err);
    if (!c.wanted) {
        lp_collect_warn(LP_LOSS_SOURCE_COUNTERS, 0, "hardware counters off: LLMPROF_COUNTERS: %s",
                        err);
        return;
    }
    const char *pattern = cfg->counter_ranges; /* the table's default when unset */
    int rc = regcomp(&c.re, pattern, REG_EXTENDED | REG_ICASE | REG_NOSUB);
    if (rc != 0) {
        regerror(rc, &c.re, err, sizeof err);
        lp_collect_warn(LP_LOSS_SOURCE_COUNTERS, 0, "hardware counters off: "
                        "LLMPROF_COUNTER_RANGES '%.200s': %s", pattern, err);
        return;
    }
    c.per_pass = (size_t)cfg->counter_segments; /* 2-65536 */
    const struct lp_dl_sym driver[] = {
        LP_DL_SYM(cuCtxGetCurrent_p, "cuCtxGetCurrent", 0),
        LP_DL_SYM(cuCtxGetDevice_p, "cuCtxGetDevice", 0),
    };
    lp_cuda_driver_bind(driver, sizeof driver / sizeof *driver);
    __atomic_store_n(&c.state, ST_WAITING, __ATOMIC_RELEASE);
    if (lp_nvtx_add_client(subscriber, &nvtx_client) != 0) {
        __atomic_store_n(&c.state, ST_OFF, __ATOMIC_RELEASE);
        lp_collect_warn(LP_LOSS_SOURCE_COUNTERS, 0, "hardware counters off: CUPTI's NVTX "
                        "callbacks could not be enabled");
        return;
    }
    lp_attach_callback(1, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
    lp_sink_set_meta("counters", "on");
    lp_sink_set_meta("counters_ranges", pattern);
    lp_sink_set_meta_u64("counters_segments_per_decode", c.per_pass);
}

void lp_counters_forget(void) { __atomic_store_n(&c.state, ST_OFF, __ATOMIC_RELAXED); }

void lp_counters_stop(void)
{
    pthread_mutex_lock(&mu);
    int st = __atomic_load_n(&c.state, __ATOMIC_ACQUIRE);
    if (st == ST_ON) {
        pop(lp_clock_ns());
        if (__atomic_load_n(&c.state, __ATOMIC_ACQUIRE) == ST_ON && end_pass() == 0) {
            CUpti_RangeProfiler_Disable_Params dis = {
                CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
            dis.pRangeProfilerObject = c.rp;
            CALL(RangeProfilerDisable, &dis);
        }
    }
    if (st != ST_OFF && !c.finished) { /* once: context destruction, then exit */
        c.finished = 1;
        __atomic_store_n(&c.state, ST_DONE, __ATOMIC_RELEASE);
        lp_sink_set_meta_u64("counters_records", c.written);
        lp_sink_set_meta_u64("counters_segments", c.next);
        lp_sink_set_meta_u64("counters_dropped", c.dropped);
        lp_sink_set_meta_u64("counters_other_threads", c.other_threads);
        if (c.dropped)
            lp_collect_warn(LP_LOSS_SOURCE_COUNTERS, c.dropped, "hardware counters of %llu "
                            "segments were not returned by CUPTI", (unsigned long long)c.dropped);
    }
    pthread_mutex_unlock(&mu);
}
