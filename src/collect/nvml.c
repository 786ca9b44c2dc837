/* NVML sampler (see nvml.h). Only the prototypes used are declared: the build machines
 * have no nvml.h. Devices are matched to CUDA ordinals by UUID, so CUDA_VISIBLE_DEVICES
 * renumbering is respected. Until a device has run recorded work, every visible device
 * is sampled; from then on only the devices the program uses. */
#include "nvml.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "activity.h"
#include "clock.h"
#include "config.h"
#include "cupti_api.h"
#include "dlbind.h"
#include "log.h"
#include "sink.h"

typedef void *nvml_device;
typedef struct { unsigned int gpu, memory; } nvml_utilization;
typedef struct { unsigned long long total, free, used; } nvml_memory;
typedef struct {
    unsigned int field_id, scope_id;
    long long timestamp, latency_usec;
    int value_type, nvml_return;
    union { double d; unsigned int ui; unsigned long ul; unsigned long long ull; long long sll; } value;
} nvml_field_value;

enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_TEMPERATURE_GPU = 0,
       NVML_FI_DEV_POWER_INSTANT = 186, NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
       NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4 };

/* The NVML functions used, the one list they are declared and bound from:
 * X(FIELD, SYMBOL, REQUIRED, PARAMETERS), each returning an nvmlReturn_t (0: success). */
#define NVML_FUNCTIONS(X)                                                                  \
    X(Init, "nvmlInit_v2", 1, (void))                                                      \
    X(Shutdown, "nvmlShutdown", 1, (void))                                                 \
    X(DeviceGetHandleByUUID, "nvmlDeviceGetHandleByUUID", 1, (const char *, nvml_device *)) \
    X(SystemGetDriverVersion, "nvmlSystemGetDriverVersion", 0, (char *, unsigned int))     \
    X(DeviceGetPowerUsage, "nvmlDeviceGetPowerUsage", 0, (nvml_device, unsigned int *))    \
    X(DeviceGetFieldValues, "nvmlDeviceGetFieldValues", 0,                                 \
      (nvml_device, int, nvml_field_value *))                                              \
    X(DeviceGetTotalEnergyConsumption, "nvmlDeviceGetTotalEnergyConsumption", 0,           \
      (nvml_device, unsigned long long *))                                                 \
    X(DeviceGetClockInfo, "nvmlDeviceGetClockInfo", 0, (nvml_device, int, unsigned int *)) \
    X(DeviceGetMaxClockInfo, "nvmlDeviceGetMaxClockInfo", 0,                               \
      (nvml_device, int, unsigned int *))                                                  \
    X(DeviceGetUtilizationRates, "nvmlDeviceGetUtilizationRates", 0,                       \
      (nvml_device, nvml_utilization *))                                                   \
    X(DeviceGetTemperature, "nvmlDeviceGetTemperature", 0, (nvml_device, int, unsigned int *)) \
    X(DeviceGetCurrentClocksEventReasons, "nvmlDeviceGetCurrentClocksEventReasons", 0,     \
      (nvml_device, unsigned long long *))                                                 \
    X(DeviceGetMemoryInfo, "nvmlDeviceGetMemoryInfo", 0, (nvml_device, nvml_memory *))     \
    X(DeviceGetEnforcedPowerLimit, "nvmlDeviceGetEnforcedPowerLimit", 0,                   \
      (nvml_device, unsigned int *))

static struct {
#define NVML_FIELD(field, symbol, required, params) int(*field) params;
    NVML_FUNCTIONS(NVML_FIELD)
#undef NVML_FIELD
} nv;

/* libcuda, already loaded by the process: only used to map ordinals to UUIDs */
static int (*cu_device_get_count)(int *);
static int (*cu_device_get)(int *, int);
static int (*cu_device_get_uuid)(void *, int);

#define MAX_DEV 64
static nvml_device handles[MAX_DEV];
static int n_dev = -1; /* -1: not mapped yet */
static int power_instant_ok = 1;
static uint64_t period_ns;
static pthread_t thread;
static int running, stop_flag;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;

static int bind_nvml(void)
{
    static const struct lp_dl_sym syms[] = {
#define NVML_SYM(field, symbol, required, params) LP_DL_SYM(nv.field, symbol, required),
        NVML_FUNCTIONS(NVML_SYM)
#undef NVML_SYM
        /* its name before driver 535 */
        LP_DL_SYM(nv.DeviceGetCurrentClocksEventReasons,
                  "nvmlDeviceGetCurrentClocksThrottleReasons", 0),
    };
    const char *path = lp_config_get()->nvml_path; /* tests force a missing NVML */
    void *h = dlopen(path ? path : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return -1;
    return lp_dl_bind(h, LP_DL_FALLBACK_NONE, syms, sizeof syms / sizeof *syms) ? -1 : 0;
}

static void bind_cuda(void)
{
    static const struct lp_dl_sym syms[] = {
        LP_DL_SYM(cu_device_get_count, "cuDeviceGetCount", 0),
        LP_DL_SYM(cu_device_get, "cuDeviceGet", 0),
        LP_DL_SYM(cu_device_get_uuid, "cuDeviceGetUuid_v2", 0),
        LP_DL_SYM(cu_device_get_uuid, "cuDeviceGetUuid", 0), /* drivers without _v2 */
    };
    lp_cuda_driver_bind(syms, sizeof syms / sizeof *syms);
}

/* Maps CUDA ordinals to NVML handles once CUDA answers; records NVML's device facts. */
static void map_devices(void)
{
    int count = 0;
    if (!cu_device_get_count || !cu_device_get || !cu_device_get_uuid)
        bind_cuda(); /* the driver loads after the collector when NVTX came first */
    if (!cu_device_get_count || !cu_device_get || !cu_device_get_uuid)
        return;
    if (cu_device_get_count(&count) != 0)
        return; /* CUDA still initialising: try again next tick */
    n_dev = count < MAX_DEV ? count : MAX_DEV;
    for (int i = 0; i < n_dev; i++) {
        int dev = 0;
        unsigned char u[16];
        char uuid[64];
        handles[i] = NULL;
        if (cu_device_get(&dev, i) != 0 || cu_device_get_uuid(u, dev) != 0)
            continue;
        snprintf(uuid, sizeof uuid,
                 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
                 u[12], u[13], u[14], u[15]);
        if (nv.DeviceGetHandleByUUID(uuid, &handles[i]) != 0) {
            handles[i] = NULL;
            continue;
        }
        struct lp_record r = {.type = LP_REC_DEVICE};
        r.u.device.id = (uint32_t)i;
        memcpy(r.u.device.uuid, u, 16);
        if (nv.DeviceGetMaxClockInfo) {
            nv.DeviceGetMaxClockInfo(handles[i], NVML_CLOCK_SM, &r.u.device.max_sm_mhz);
            nv.DeviceGetMaxClockInfo(handles[i], NVML_CLOCK_MEM, &r.u.device.max_mem_mhz);
        }
        if (nv.DeviceGetEnforcedPowerLimit)
            nv.DeviceGetEnforcedPowerLimit(handles[i], &r.u.device.power_limit_mw);
        lp_sink_lock();
        lp_sink_add(&r);
        lp_sink_unlock();
    }
}

static void sample(int i)
{
    nvml_device d = handles[i];
    struct lp_record r = {.type = LP_REC_NVML};
    struct lp_nvml_sample *s = &r.u.nvml;
    uint64_t t0 = lp_clock_ns();
    s->device = (uint32_t)i;
    if (power_instant_ok && nv.DeviceGetFieldValues) {
        nvml_field_value fv = {.field_id = NVML_FI_DEV_POWER_INSTANT};
        if (nv.DeviceGetFieldValues(d, 1, &fv) == 0 && fv.nvml_return == 0) {
            int wide = fv.value_type == NVML_VALUE_TYPE_UNSIGNED_LONG_LONG ||
                       fv.value_type == NVML_VALUE_TYPE_SIGNED_LONG_LONG;
            s->power_mw = wide ? (uint32_t)fv.value.ull : fv.value.ui;
            s->valid |= LP_NVML_FIELD_POWER;
        } else {
            power_instant_ok = 0; /* not on this GPU or driver: use the average from now on */
        }
    }
    if (!(s->valid & LP_NVML_FIELD_POWER) && nv.DeviceGetPowerUsage &&
        nv.DeviceGetPowerUsage(d, &s->power_mw) == 0)
        s->valid |= LP_NVML_FIELD_POWER | LP_NVML_FIELD_POWER_AVERAGED;
    unsigned long long energy = 0;
    if (nv.DeviceGetTotalEnergyConsumption && nv.DeviceGetTotalEnergyConsumption(d, &energy) == 0) {
        s->energy_mj = energy;
        s->valid |= LP_NVML_FIELD_ENERGY;
    }
    if (nv.DeviceGetClockInfo) {
        if (nv.DeviceGetClockInfo(d, NVML_CLOCK_SM, &s->sm_mhz) == 0)
            s->valid |= LP_NVML_FIELD_SM_CLOCK;
        if (nv.DeviceGetClockInfo(d, NVML_CLOCK_MEM, &s->mem_mhz) == 0)
            s->valid |= LP_NVML_FIELD_MEM_CLOCK;
    }
    nvml_utilization u;
    if (nv.DeviceGetUtilizationRates && nv.DeviceGetUtilizationRates(d, &u) == 0) {
        s->util_gpu = u.gpu;
        s->util_mem = u.memory;
        s->valid |= LP_NVML_FIELD_UTIL;
    }
    if (nv.DeviceGetTemperature && nv.DeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &s->temp_c) == 0)
        s->valid |= LP_NVML_FIELD_TEMP;
    unsigned long long reasons = 0;
    if (nv.DeviceGetCurrentClocksEventReasons &&
        nv.DeviceGetCurrentClocksEventReasons(d, &reasons) == 0) {
        s->clock_events = reasons;
        s->valid |= LP_NVML_FIELD_CLOCK_EVENTS;
    }
    nvml_memory m;
    if (nv.DeviceGetMemoryInfo && nv.DeviceGetMemoryInfo(d, &m) == 0) {
        s->mem_used = m.used;
        s->valid |= LP_NVML_FIELD_MEM_USED;
    }
    uint64_t t1 = lp_clock_ns();
    s->timestamp = t0 + (t1 - t0) / 2;
    s->query_ns = (uint32_t)(t1 - t0 > UINT32_MAX ? UINT32_MAX : t1 - t0);
    lp_sink_lock();
    lp_sink_add(&r);
    lp_sink_unlock();
}

static void *run(void *arg)
{
    (void)arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    pthread_mutex_lock(&mu);
    while (!stop_flag) {
        pthread_mutex_unlock(&mu);
        if (n_dev < 0)
            map_devices();
        uint64_t active = lp_activity_active_devices();
        for (int i = 0; i < n_dev; i++)
            if (handles[i] && (!active || (i < 64 && (active >> i & 1))))
                sample(i);
        uint64_t ns = (uint64_t)next.tv_nsec + period_ns;
        next.tv_sec += (time_t)(ns / 1000000000u);
        next.tv_nsec = (long)(ns % 1000000000u);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > next.tv_sec || (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec))
            next = now; /* a slow read: skip the missed periods rather than sample in a burst */
        pthread_mutex_lock(&mu);
        while (!stop_flag && pthread_cond_timedwait(&cv, &mu, &next) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

int lp_nvml_start(double hz)
{
    if (hz <= 0)
        return 0;
    if (bind_nvml() != 0) {
        lp_collect_warn(LP_LOSS_SOURCE_NVML, 0, "NVML (libnvidia-ml.so.1) not available: power, "
                                         "clocks and utilisation are not recorded");
        return -1;
    }
    int rc = nv.Init();
    if (rc != 0) {
        lp_collect_warn(LP_LOSS_SOURCE_NVML, 0, "nvmlInit failed (%d): power, clocks and "
                                         "utilisation are not recorded", rc);
        return -1;
    }
    char version[96] = "";
    if (nv.SystemGetDriverVersion && nv.SystemGetDriverVersion(version, sizeof version) == 0)
        lp_sink_set_meta("driver_version", version);
    /* at most 1 kHz; at least one sample in 1000 s (a tiny rate would overflow the cast) */
    double p = 1e9 / hz;
    period_ns = p < 1e6 ? 1000000 : p > 1e12 ? (uint64_t)1e12 : (uint64_t)p;
    lp_sink_set_meta_u64("nvml_period_ns", period_ns);
    lp_cond_init_monotonic(&cv);
    stop_flag = 0;
    if (pthread_create(&thread, NULL, run, NULL) != 0) {
        lp_collect_warn(LP_LOSS_SOURCE_NVML, 0, "cannot start the NVML sampler thread");
        nv.Shutdown();
        return -1;
    }
    running = 1;
    return 0;
}

void lp_nvml_stop(void)
{
    if (!running)
        return;
    pthread_mutex_lock(&mu);
    stop_flag = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(thread, NULL);
    running = 0;
    nv.Shutdown();
}
