/* PM sampling (see pmsample.h). Sequence, from CUPTI's guide: profiler initialise, chip
 * name, PM-sampling counter availability, host object and config image (one pass; the
 * triage set is trimmed in order where a chip cannot fit it), enable on the device, set
 * config (GPU-time trigger, keep-oldest hardware buffer), counter-data image, start; then
 * decode every DECODE_MS on this file's thread, evaluate each completed sample on the host
 * and reset the image. Behaviours measured by others and handled here: a hardware buffer
 * that overflows stops sampling until the sampler is enabled again; the first sample after
 * a start spans back to before it (dropped, counted); samples after a stop can be empty. */
#include "pmsample.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attach.h"
#include "clock.h"
#include "config.h"
#include "cupti_api.h"
#include "log.h"
#include "metric_config.h"
#include "sink.h"

/* The triage set on GH100-class chips, in the order a chip that cannot fit it all in one
 * pass gives them up (last first). Percentages of peak, except DRAM (sectors) and the clock
 * (Hz). */
static const struct {
    enum lp_pm id;
    const char *metric;
} metrics[] = {
    {LP_PM_TENSOR, "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed"},
    /* counted, not a percentage: dramc__read_throughput read 0.2 % at most on an H200 under a
     * GEMM that moved about 30 % of peak; sectors are 32 bytes */
    {LP_PM_DRAM_READ, "dramc__sectors_op_read.sum"},
    {LP_PM_DRAM_WRITE, "dramc__sectors_op_write.sum"},
    {LP_PM_SM_ISSUE, "sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed"},
    {LP_PM_GR_ACTIVE, "gr__cycles_active.sum.pct_of_peak_sustained_elapsed"},
    {LP_PM_IDLE_SM_WARPS, "tpc__warps_inactive_sm_idle_realtime.avg.pct_of_peak_sustained_elapsed"},
    {LP_PM_SM_ACTIVE, "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"},
    {LP_PM_L2, "lts__t_sectors.avg.pct_of_peak_sustained_elapsed"},
    {LP_PM_GPC_MHZ, "gpc__cycles_elapsed.avg.per_second"},
};
enum { N_METRICS = sizeof metrics / sizeof *metrics };
enum { DECODE_MS = 50, MAX_ROUNDS = 64 };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static struct {
    int on;                       /* started and not forgotten */
    int have_device, stop, running;
    uint32_t device;
    pthread_t thread;
    uint64_t interval_ns;
    size_t hw_bytes, slots;
    CUpti_PmSampling_Object *obj;
    struct lp_metric_config cfg;
    uint8_t *data;
    size_t data_size;
    uint64_t last_end;            /* end of the last sample written */
    int gap;                      /* samples were lost since LAST_END */
    uint64_t written, spanning, empty, lost, overflows, decodes;
} p;

/* the sampler stops for the rest of the run, said once */
static void fail(const char *what, CUptiResult rc)
{
    const char *why = "";
    switch (rc) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
        why = ": the driver lets only administrators read GPU performance counters "
              "(NVreg_RestrictProfilingToAdminUsers=1)";
        break;
    case CUPTI_ERROR_HARDWARE_BUSY:
    case CUPTI_ERROR_INVALID_OPERATION:
        why = ": another tool (Nsight Compute, DCGM profiling, a second profiler) may hold the "
              "GPU's counters";
        break;
    default: break;
    }
    lp_collect_warn(LP_LOSS_SOURCE_PM, 0, "PM sampling off: %s (CUPTI error %d)%s", what, (int)rc,
                    why);
}

/* The counter-data image emptied, for the next decode. */
static CUptiResult reset_image(void)
{
    CUpti_PmSampling_CounterDataImage_Initialize_Params di = {
        CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    di.pPmSamplingObject = p.obj;
    di.counterDataSize = p.data_size;
    di.pCounterData = p.data;
    return lp_cupti.PmSamplingCounterDataImageInitialize(&di);
}

/* A sampler on the device with the chosen config and a fresh image, started. */
static CUptiResult enable_sampler(int first)
{
    CUpti_PmSampling_Enable_Params en = {CUpti_PmSampling_Enable_Params_STRUCT_SIZE};
    en.deviceIndex = p.device;
    CUptiResult rc = lp_cupti.PmSamplingEnable(&en);
    if (rc != CUPTI_SUCCESS)
        return rc;
    p.obj = en.pPmSamplingObject;
    CUpti_PmSampling_SetConfig_Params sc = {CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE};
    sc.pPmSamplingObject = p.obj;
    sc.configSize = p.cfg.image_size;
    sc.pConfig = p.cfg.image;
    sc.hardwareBufferSize = p.hw_bytes;
    sc.samplingInterval = p.interval_ns;
    sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
    sc.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
    if ((rc = lp_cupti.PmSamplingSetConfig(&sc)) != CUPTI_SUCCESS)
        return rc;
    if (first) { /* the image's size is asked once: asking again breaks later resets */
        CUpti_PmSampling_GetCounterDataSize_Params ds = {
            CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE};
        ds.pPmSamplingObject = p.obj;
        ds.pMetricNames = p.cfg.names;
        ds.numMetrics = p.cfg.n;
        ds.maxSamples = (uint32_t)p.slots;
        if ((rc = lp_cupti.PmSamplingGetCounterDataSize(&ds)) != CUPTI_SUCCESS)
            return rc;
        if (!(p.data = calloc(1, ds.counterDataSize)))
            return CUPTI_ERROR_OUT_OF_MEMORY;
        p.data_size = ds.counterDataSize;
    }
    if ((rc = reset_image()) != CUPTI_SUCCESS)
        return rc;
    CUpti_PmSampling_Start_Params st = {CUpti_PmSampling_Start_Params_STRUCT_SIZE};
    st.pPmSamplingObject = p.obj;
    return lp_cupti.PmSamplingStart(&st);
}

static void disable_sampler(int stop)
{
    if (!p.obj)
        return;
    if (stop) {
        CUpti_PmSampling_Stop_Params sp = {CUpti_PmSampling_Stop_Params_STRUCT_SIZE};
        sp.pPmSamplingObject = p.obj;
        lp_cupti.PmSamplingStop(&sp);
    }
    CUpti_PmSampling_Disable_Params dis = {CUpti_PmSampling_Disable_Params_STRUCT_SIZE};
    dis.pPmSamplingObject = p.obj;
    lp_cupti.PmSamplingDisable(&dis);
    p.obj = NULL;
}

static int setup(void)
{
    CUpti_Device_GetChipName_Params cn = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    cn.deviceIndex = p.device;
    CUpti_PmSampling_GetCounterAvailability_Params ca = {
        CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE};
    ca.deviceIndex = p.device;
    CUptiResult rc;
    if ((rc = lp_profiler_load()) != CUPTI_SUCCESS ||
        (rc = lp_cupti.DeviceGetChipName(&cn)) != CUPTI_SUCCESS ||
        (rc = lp_cupti.PmSamplingGetCounterAvailability(&ca)) != CUPTI_SUCCESS) {
        fail("the sampler could not start", rc);
        return -1;
    }
    uint8_t *avail = calloc(1, ca.counterAvailabilityImageSize ? ca.counterAvailabilityImageSize : 1);
    ca.pCounterAvailabilityImage = avail;
    if (!avail || (rc = lp_cupti.PmSamplingGetCounterAvailability(&ca)) != CUPTI_SUCCESS) {
        free(avail);
        fail("no counter availability", rc);
        return -1;
    }
    const char *names[N_METRICS];
    unsigned ids[N_METRICS];
    for (size_t i = 0; i < N_METRICS; i++) {
        names[i] = metrics[i].metric;
        ids[i] = metrics[i].id;
    }
    enum lp_metric_choice got = lp_metric_config_choose(&p.cfg, LP_PROFILER_TYPE_PM_SAMPLING,
                                                        cn.pChipName, avail, names, ids,
                                                        N_METRICS, 0);
    free(avail);
    if (got == LP_METRIC_CHOICE_NONE) {
        char msg[640];
        snprintf(msg, sizeof msg, "no triage metric fits one pass on %s", cn.pChipName);
        fail(msg, CUPTI_SUCCESS);
        return -1;
    }
    if (got == LP_METRIC_CHOICE_TRIMMED)
        lp_collect_warn(LP_LOSS_SOURCE_PM, 0, "PM sampling: %s cannot sample every triage "
                        "metric in one pass: left out %s", cn.pChipName, p.cfg.left);
    if ((rc = enable_sampler(1)) != CUPTI_SUCCESS) {
        disable_sampler(0);
        fail("the sampler could not be enabled", rc);
        return -1;
    }
    char list[1024];
    lp_metric_config_list(&p.cfg, list, sizeof list);
    lp_sink_set_meta("pm_metrics", list);
    lp_sink_set_meta("pm_chip", cn.pChipName);
    lp_sink_set_meta_u64("pm_device", p.device);
    lp_sink_set_meta_u64("pm_started_ns", lp_clock_ns());
    lp_sink_set_meta_u64("pm_image_bytes", p.data_size);
    return 0;
}

static uint32_t to_u32(double v)
{
    if (!(v > 0)) /* NaN and negatives */
        return 0;
    return v >= 4e9 ? UINT32_MAX : (uint32_t)(v + 0.5);
}

/* Writes the completed samples of the image. */
static void write_samples(void)
{
    CUpti_PmSampling_GetCounterDataInfo_Params gi = {
        CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE};
    gi.pCounterDataImage = p.data;
    gi.counterDataImageSize = p.data_size;
    if (LP_CUPTI(PmSamplingGetCounterDataInfo, &gi) != CUPTI_SUCCESS)
        return;
    double v[LP_METRIC_CONFIG_MAX];
    lp_sink_lock();
    for (size_t i = 0; i < gi.numCompletedSamples; i++) {
        CUpti_PmSampling_CounterData_GetSampleInfo_Params si = {
            CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE};
        si.pPmSamplingObject = p.obj;
        si.pCounterDataImage = p.data;
        si.counterDataImageSize = p.data_size;
        si.sampleIndex = i;
        if (LP_CUPTI(PmSamplingCounterDataGetSampleInfo, &si) != CUPTI_SUCCESS)
            continue;
        if (si.endTimestamp <= si.startTimestamp) { /* after a stop: covers no time */
            p.empty++;
            continue;
        }
        if (si.endTimestamp - si.startTimestamp > 4 * p.interval_ns) {
            p.spanning++; /* the first after a start reaches back before it */
            continue;
        }
        struct lp_host_evaluate_params ev = LP_HOST_PARAMS(lp_host_evaluate_params);
        ev.pHostObject = p.cfg.host;
        ev.pCounterDataImage = p.data;
        ev.counterDataImageSize = p.data_size;
        ev.rangeIndex = i;
        ev.ppMetricNames = p.cfg.names;
        ev.numMetrics = p.cfg.n;
        ev.pMetricValues = v;
        if (LP_CUPTI(ProfilerHostEvaluateToGpuValues, &ev) != CUPTI_SUCCESS)
            continue;
        struct lp_pm_sample r = {.start = si.startTimestamp, .end = si.endTimestamp,
                                 .device = p.device};
        for (size_t k = 0; k < p.cfg.n; k++) {
            if (isnan(v[k]))
                continue;
            unsigned id = p.cfg.ids[k];
            r.valid |= 1u << id;
            /* percent in hundredths; DRAM sectors (32 bytes) in KiB; the clock (Hz) in MHz */
            r.value[id] = to_u32(id == LP_PM_GPC_MHZ                             ? v[k] / 1e6
                                 : id == LP_PM_DRAM_READ || id == LP_PM_DRAM_WRITE ? v[k] / 32
                                                                                   : v[k] * 100);
        }
        if (p.gap && r.start > p.last_end)
            p.lost += (r.start - p.last_end) / p.interval_ns;
        p.gap = 0;
        p.last_end = r.end;
        lp_sink_add(&(struct lp_record){.type = LP_REC_PM_SAMPLE, .u.pm = r});
        p.written++;
    }
    lp_sink_unlock();
}

/* Decodes the hardware buffer until it is drained (or ROUNDS images later). -1: sampling
 * is off for good. */
static int decode(void)
{
    for (int round = 0; round < MAX_ROUNDS; round++) {
        CUpti_PmSampling_DecodeData_Params dd = {CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE};
        dd.pPmSamplingObject = p.obj;
        dd.pCounterDataImage = p.data;
        dd.counterDataImageSize = p.data_size;
        CUptiResult rc = lp_cupti.PmSamplingDecodeData(&dd);
        p.decodes++;
        if (rc == CUPTI_ERROR_OUT_OF_MEMORY || dd.overflow) {
            /* the hardware buffer overflowed: sampling resumes only with a new sampler */
            write_samples();
            p.overflows++;
            p.gap = 1;
            disable_sampler(1);
            if ((rc = enable_sampler(0)) != CUPTI_SUCCESS) {
                disable_sampler(0);
                fail("the sampler could not be enabled again after its buffer overflowed", rc);
                return -1;
            }
            return 0;
        }
        if (rc != CUPTI_SUCCESS) {
            fail("the samples could not be decoded", rc);
            return -1;
        }
        write_samples();
        if ((rc = reset_image()) != CUPTI_SUCCESS) {
            fail("the sample image could not be reset", rc);
            return -1;
        }
        if (dd.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL)
            return 0;
    }
    return 0;
}

/* The decoder: every DECODE_MS until stopped, then stop, decode the rest, disable. */
static void *loop(void *arg)
{
    (void)arg;
    int ok = 1;
    pthread_mutex_lock(&mu);
    while (!p.stop && ok) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        t.tv_nsec += DECODE_MS * 1000000L;
        if (t.tv_nsec >= 1000000000L) {
            t.tv_sec++;
            t.tv_nsec -= 1000000000L;
        }
        while (!p.stop && pthread_cond_timedwait(&cv, &mu, &t) != ETIMEDOUT)
            ;
        if (p.stop)
            break;
        pthread_mutex_unlock(&mu);
        ok = decode() == 0;
        pthread_mutex_lock(&mu);
    }
    pthread_mutex_unlock(&mu);
    if (!ok)
        return NULL;
    CUpti_PmSampling_Stop_Params sp = {CUpti_PmSampling_Stop_Params_STRUCT_SIZE};
    sp.pPmSamplingObject = p.obj;
    LP_CUPTI(PmSamplingStop, &sp);
    if (decode() == 0)
        disable_sampler(0);
    return NULL;
}

static void stop_at_exit(void) { lp_pmsample_stop(); }

/* On the thread that made the first context: the sampler is set up and started here, and
 * only then is the exit handler registered. CUPTI's profiler host library builds state on
 * first use that its own exit handlers destroy; exit handlers run in reverse order, so
 * registering after that first use makes ours (stop, last decode) run before them. */
static void begin(uint32_t device)
{
    p.device = device;
    uint64_t t0 = lp_clock_ns();
    if (setup() != 0)
        return;
    lp_sink_set_meta_u64("pm_setup_ns", lp_clock_ns() - t0);
    lp_cond_init_monotonic(&cv);
    if (pthread_create(&p.thread, NULL, loop, NULL) != 0) {
        disable_sampler(1);
        lp_collect_warn(LP_LOSS_SOURCE_PM, 0, "PM sampling off: no thread to decode the samples");
        return;
    }
    p.running = 1;
    atexit(stop_at_exit);
}

void lp_pmsample_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
    if (!__atomic_load_n(&p.on, __ATOMIC_ACQUIRE) || domain != CUPTI_CB_DOMAIN_RESOURCE ||
        cbid != CUPTI_CBID_RESOURCE_CONTEXT_CREATED || !data)
        return;
    uint32_t dev = 0;
    if (LP_CUPTI(GetDeviceId, ((const CUpti_ResourceData *)data)->context, &dev) != CUPTI_SUCCESS)
        return;
    pthread_mutex_lock(&mu);
    int first = !p.have_device;
    p.have_device = 1;
    if (first)
        begin(dev);
    pthread_mutex_unlock(&mu);
}

void lp_pmsample_start(CUpti_SubscriberHandle subscriber)
{
    const struct lp_envconfig *cfg = lp_config_get();
    double us = cfg->pm_sampling_us; /* 0 (off) or 10-100000 */
    if (us == 0)
        return;
    if (!lp_cupti.PmSamplingEnable || !lp_cupti.PmSamplingCounterDataGetSampleInfo ||
        !lp_cupti.ProfilerHostInitialize || !lp_cupti.ProfilerHostEvaluateToGpuValues ||
        !lp_cupti.ProfilerInitialize || !lp_cupti.DeviceGetChipName || !lp_cupti.GetDeviceId) {
        lp_collect_warn(LP_LOSS_SOURCE_PM, 0, "PM sampling off: this CUPTI (%u) has no PM "
                        "sampling (CUDA 12.6 or later has)", lp_cupti.version);
        return;
    }
    if (!subscriber || lp_attach_callback(1, CUPTI_CB_DOMAIN_RESOURCE,
                                          CUPTI_CBID_RESOURCE_CONTEXT_CREATED) != CUPTI_SUCCESS) {
        lp_collect_warn(LP_LOSS_SOURCE_PM, 0, "PM sampling off: llmprof holds no CUPTI subscriber "
                        "for the context callbacks");
        return;
    }
    double buf = cfg->pm_buffer_mb; /* 1-4096 */
    p.interval_ns = (uint64_t)(us * 1000);
    p.hw_bytes = (size_t)buf << 20;
    /* room for eight decode periods: a late decode does not fill the image */
    size_t per = (size_t)(DECODE_MS * 1e6 / (double)p.interval_ns) + 1;
    p.slots = per * 8 < 256 ? 256 : per * 8 > 16384 ? 16384 : per * 8;
    __atomic_store_n(&p.on, 1, __ATOMIC_RELEASE);
    lp_sink_set_meta_u64("pm_interval_ns", p.interval_ns);
    lp_sink_set_meta_u64("pm_buffer_bytes", p.hw_bytes);
}

void lp_pmsample_forget(void)
{
    __atomic_store_n(&p.on, 0, __ATOMIC_RELAXED);
    p.running = 0;
}

void lp_pmsample_stop(void)
{
    if (!p.running)
        return;
    pthread_mutex_lock(&mu);
    p.stop = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(p.thread, NULL);
    p.running = 0;
    __atomic_store_n(&p.on, 0, __ATOMIC_RELEASE);
    lp_sink_set_meta_u64("pm_samples", p.written);
    lp_sink_set_meta_u64("pm_samples_spanning", p.spanning);
    lp_sink_set_meta_u64("pm_samples_empty", p.empty);
    lp_sink_set_meta_u64("pm_decodes", p.decodes);
    lp_sink_set_meta_u64("pm_overflows", p.overflows);
    if (p.overflows)
        lp_collect_warn(LP_LOSS_SOURCE_PM, p.lost, "PM sampling: the hardware buffer overflowed "
                        "%llu times (about %llu samples lost); a larger LLMPROF_PM_BUFFER_MB or "
                        "interval avoids it", (unsigned long long)p.overflows,
                        (unsigned long long)p.lost);
}
