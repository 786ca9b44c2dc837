/* Capture windows (see window.h). cudaProfilerStart opens a window at the call's exit,
 * cudaProfilerStop closes it at its entry; the runtime's calls make the driver's
 * (cuProfilerStart/Stop), so both are watched and the second of a pair does nothing, and a
 * program calling the driver directly is seen too. A start inside a window and a stop
 * outside one change nothing, as for nsys --capture-range=cudaProfilerApi. */
#include "window.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "activity.h"
#include "clock.h"
#include "cupti_api.h"
#include "log.h"
#include "sink.h"

static const char *const mode_names[] = {[LP_CAPTURE_ALL] = "all",
                                         [LP_CAPTURE_CUDA_PROFILER] = "cuda-profiler"};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int active;                /* windows are in use: callbacks enabled */
static int open_;                 /* a window is open */
static struct lp_window current;
static uint64_t n_windows;

enum lp_capture lp_window_mode(void)
{
    const char *v = getenv("LLMPROF_CAPTURE");
    if (!v || !*v)
        return LP_CAPTURE_ALL;
    for (size_t i = 0; i < sizeof mode_names / sizeof *mode_names; i++)
        if (!strcmp(v, mode_names[i]))
            return (enum lp_capture)i;
    lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "ignoring LLMPROF_CAPTURE=%s (all or "
                    "cuda-profiler): everything is recorded", v);
    return LP_CAPTURE_ALL;
}

/* With the lock held: the window as it is now. It is written when it opens (end = start)
 * and again when it closes, so a killed process's trace still has the one it was in. */
static void write_window(void)
{
    struct lp_record r = {.type = LP_REC_WINDOW, .u.window = current};
    lp_sink_lock();
    lp_sink_add(&r);
    lp_sink_unlock();
}

/* With the lock held. */
static void close_window(uint64_t now)
{
    if (!open_)
        return;
    lp_activity_set_recording(0);
    current.end = now;
    write_window();
    open_ = 0;
    n_windows++;
}

void CUPTIAPI lp_window_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data)
{
    const CUpti_CallbackData *cd = data;
    int start, stop;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
        start = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000;
        stop = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000;
    } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        start = cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart;
        stop = cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop;
    } else {
        return;
    }
    if (!cd || !(start || stop) ||
        cd->callbackSite != (start ? CUPTI_API_EXIT : CUPTI_API_ENTER) ||
        !__atomic_load_n(&active, __ATOMIC_RELAXED))
        return;
    uint64_t now = lp_clock_ns();
    pthread_mutex_lock(&lock);
    if (!__atomic_load_n(&active, __ATOMIC_RELAXED)) {
        /* lp_window_stop came first (exit) */
    } else if (start && !open_) {
        if (lp_activity_set_recording(1) == 0) {
            current = (struct lp_window){.start = now, .end = now,
                                         .cause = LP_WINDOW_CAUSE_PROFILER_API,
                                         .thread = (uint32_t)pthread_self()};
            open_ = 1;
            write_window();
        } else {
            lp_activity_set_recording(0);
            lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "a capture window could not enable "
                            "kernel activity (see the CUPTI error before this): it records "
                            "no kernels");
        }
    } else if (stop) {
        close_window(now);
    }
    pthread_mutex_unlock(&lock);
}

void lp_window_start(CUpti_SubscriberHandle subscriber, enum lp_capture mode)
{
    if (mode == LP_CAPTURE_ALL)
        return;
    const struct {
        CUpti_CallbackDomain domain;
        CUpti_CallbackId cbid;
    } calls[] = {
        {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000},
        {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop},
    };
    int ok = subscriber && lp_cupti.EnableCallback;
    for (size_t i = 0; ok && i < sizeof calls / sizeof *calls; i++)
        ok = LP_CUPTI(EnableCallback, 1, subscriber, calls[i].domain, calls[i].cbid) ==
             CUPTI_SUCCESS;
    if (!ok) {
        int on = lp_activity_set_recording(1) == 0;
        lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "capture windows need CUPTI's callbacks, "
                        "which llmprof could not enable here: %s", on
                        ? "kernels are recorded for the whole run"
                        : "and kernel activity could not be enabled: no kernels are recorded");
        lp_sink_set_meta("capture", "all");
        return;
    }
    lp_sink_set_meta("capture", mode_names[mode]);
    __atomic_store_n(&active, 1, __ATOMIC_RELAXED);
}

void lp_window_stop(void)
{
    if (!__atomic_load_n(&active, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&lock);
    close_window(lp_clock_ns());
    __atomic_store_n(&active, 0, __ATOMIC_RELAXED);
    lp_sink_set_meta_u64("capture_windows", n_windows);
    pthread_mutex_unlock(&lock);
}
