/* Entry points of libllmprof.so. CUDA calls InitializeInjection at initialisation
 * (CUDA_INJECTION64_PATH); NVTX calls InitializeInjectionNvtx2 at its first use
 * (NVTX_INJECTION64_PATH), which is forwarded to the CUPTI the process uses. Everything
 * here fails open: a problem becomes a warning and a loss record, never an abort.
 *
 * Configuration: the LLMPROF_* environment (set by `llmprof record`), read once at the start
 * (config.h; the table of variables: llmprof/envconfig.h, docs/collector.md). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "activity.h"
#include "attach.h"
#include "clock.h"
#include "config.h"
#include "counters.h"
#include "cupti_api.h"
#include "gemm.h"
#include "graph.h"
#include "launch.h"
#include "log.h"
#include "nvml.h"
#include "nvtx.h"
#include "pmsample.h"
#include "procinfo.h"
#include "sink.h"
#include "window.h"

#define LP_EXPORT __attribute__((visibility("default")))

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pid_t owner_pid;
static int started;
static unsigned flush_ms = 500;
static pthread_t flusher;
static int flusher_running, flusher_stop;
static pthread_mutex_t flusher_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t flusher_cv;

static int wakeup_pending;

static void wake_flusher(void)
{
    pthread_mutex_lock(&flusher_mu);
    wakeup_pending = 1;
    pthread_cond_signal(&flusher_cv);
    pthread_mutex_unlock(&flusher_mu);
}

static uint64_t mono_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* llmprof's own thread: converts completed buffers and writes a chunk at least every
 * flush_ms, so a killed process loses about the last flush period. CUPTI is asked for
 * partly filled buffers only when none completed in a period (a quiet program): a busy
 * one fills buffers fast enough, and the request is not free. */
static void *flush_loop(void *arg)
{
    (void)arg;
    uint64_t seen = 0, last_write = mono_ms();
    pthread_mutex_lock(&flusher_mu);
    while (!flusher_stop) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        uint64_t ns = (uint64_t)t.tv_nsec + (uint64_t)flush_ms * 1000000u;
        t.tv_sec += (time_t)(ns / 1000000000u);
        t.tv_nsec = (long)(ns % 1000000000u);
        int timed_out = 0;
        while (!flusher_stop && !wakeup_pending && !timed_out)
            timed_out = pthread_cond_timedwait(&flusher_cv, &flusher_mu, &t) == ETIMEDOUT;
        wakeup_pending = 0;
        if (flusher_stop)
            break;
        pthread_mutex_unlock(&flusher_mu);
        uint64_t done = lp_activity_completions();
        if (timed_out && done == seen)
            lp_activity_flush(0);
        seen = lp_activity_completions();
        lp_activity_drain();
        lp_launch_drain();
        lp_gemm_drain();
        lp_graph_drain();
        if (mono_ms() - last_write >= flush_ms) {
            lp_sink_flush();
            last_write = mono_ms();
        }
        pthread_mutex_lock(&flusher_mu);
    }
    pthread_mutex_unlock(&flusher_mu);
    return NULL;
}

/* llmprof's one CUPTI subscriber: each part takes the domains it enabled */
static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain,
                                 CUpti_CallbackId cbid, const void *data)
{
    /* windows first: a graph launch that opens one is then recorded by launch.c */
    lp_window_callback(domain, cbid, data);
    lp_activity_callback(domain, cbid, data);
    lp_launch_callback(domain, cbid, data);
    lp_graph_callback(userdata, domain, cbid, data);
    lp_nvtx_callback(domain, cbid, data);
    lp_counters_callback(domain, cbid, data);
    lp_pmsample_callback(domain, cbid, data);
    lp_window_renew_point(domain, cbid, data); /* last: it may finalize CUPTI */
}

static void shutdown_collector(void)
{
    if (!started || getpid() != owner_pid)
        return; /* a forked child: the parent's trace is not ours to close */
    started = 0;
    if (flusher_running) {
        pthread_mutex_lock(&flusher_mu);
        flusher_stop = 1;
        pthread_cond_signal(&flusher_cv);
        pthread_mutex_unlock(&flusher_mu);
        pthread_join(flusher, NULL);
    }
    lp_nvml_stop();
    lp_counters_stop();
    lp_pmsample_stop();
    lp_window_stop();
    lp_activity_flush(1);
    lp_activity_drain();
    lp_activity_finish();
    lp_launch_stop();
    lp_gemm_stop();
    lp_graph_stop();
    lp_sink_set_meta_time("end_trace_ns", lp_clock_ns());
    lp_procinfo_set_end_meta();
    lp_sink_close();
}

static void in_child_after_fork(void)
{
    /* Threads do not survive fork; the child must not write the parent's file. */
    started = 0;
    flusher_running = 0;
    lp_gemm_forget();
    lp_launch_forget();
    lp_window_forget();
    lp_graph_forget();
    lp_counters_forget();
    lp_pmsample_forget();
}

/* Makes NVTX deliver to CUPTI when the program starts using NVTX after CUDA. */
static void point_nvtx_here(void)
{
    if (getenv("NVTX_INJECTION64_PATH"))
        return;
    Dl_info info;
    if (dladdr((void *)&point_nvtx_here, &info) && info.dli_fname)
        setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
}

static void init(void)
{
    owner_pid = getpid();
    lp_config_load();
    const struct lp_envconfig *cfg = lp_config_get();
    lp_collect_set_quiet(cfg->quiet);
    lp_sink_simulate_host(cfg->test_host, cfg->test_clock_shift_ns);
    const char *dir = cfg->out;
    char cupti_err[512] = "";
    int cupti_ok = lp_cupti_load(cupti_err, sizeof cupti_err) == 0;
    /* light: NVTX, counters and NVML; no per-kernel, copy or API records */
    int light = cfg->light;
    lp_procinfo_set_start_meta(cupti_ok ? lp_cupti.version : 0, cupti_ok ? lp_cupti.path : "");
    lp_sink_set_meta_time("start_trace_ns", lp_clock_ns());
    lp_sink_set_meta("mode", light ? "light" : "default");
    /* windows only where kernels are recorded at all */
    struct lp_capture_spec capture = {0};
    if (!light)
        lp_window_mode(&capture);
    int windowed = capture.mode != LP_CAPTURE_MODE_ALL;
    lp_sink_set_meta("capture", windowed ? cfg->capture : "all");
    char err[512];
    int opened = lp_sink_open(dir, err, sizeof err) == 0;
    lp_config_warn(); /* the bad values, into the trace when it opened */
    if (!opened) {
        fprintf(stderr, "llmprof: warning: %s; nothing will be recorded for process %ld\n", err,
                (long)owner_pid);
        return;
    }
    started = 1;
    lp_cond_init_monotonic(&flusher_cv); /* before CUPTI can call wake_flusher */
    pthread_atfork(NULL, NULL, in_child_after_fork);
    if (!cupti_ok) {
        lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "%s: no kernels or NVTX ranges are recorded",
                        cupti_err);
    } else {
        struct lp_activity_options ao = {
            .kinds = light ? LP_KINDS_LIGHT : LP_KINDS_DEFAULT,
            .buffer_bytes = (size_t)cfg->buffer_kb * 1024,
            .max_buffers = (unsigned)cfg->max_buffers,
            .subscribe = cfg->subscribe,
            .callback = on_callback,
            .windowed = windowed,
            /* CUPTI's device buffers: its defaults unless asked (docs/collector.md) */
            .device_buffer_bytes = (size_t)cfg->device_buffer_kb * 1024,
            .device_buffer_limit = (size_t)cfg->device_buffer_limit,
            .device_buffers = (size_t)cfg->device_buffers,
            /* CUDA graph replays: whole (default) or node by node */
            .graph_replays = cfg->graphs != LP_ENVCONFIG_GRAPHS_NODE,
        };
        char kerr[256];
        unsigned chosen = 0;
        if (cfg->kinds) {
            if (lp_kinds_parse(cfg->kinds, &chosen, kerr, sizeof kerr) == 0)
                ao.kinds = chosen;
            else
                lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "ignoring LLMPROF_KINDS: %s", kerr);
        }
        lp_sink_set_meta_u64("kinds", ao.kinds);
        lp_activity_set_notify(wake_flusher);
        int act = lp_activity_start(&ao);
        if (act < 0)
            lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0,
                            "CUPTI activity could not be enabled (see the CUPTI error before "
                            "this): kernels are not recorded; the program runs on");
        lp_sink_set_meta("graphs", act != 0 || !(ao.kinds & LP_KIND_KERNEL) ? "none"
                                   : lp_activity_graph_replays()              ? "replay"
                                                                              : "node");
        if (act == 0) {
            CUpti_SubscriberHandle sub = lp_attach_subscriber();
            if (ao.kinds & LP_KIND_API)
                lp_launch_start(sub, windowed, wake_flusher);
            lp_graph_start(sub, wake_flusher);
            lp_counters_start(sub);
            lp_pmsample_start(sub);
            /* finalizing between windows (record --finalize): not with counters, which it
             * would end, and only where a first graph would be seen (docs/collector.md) */
            int finalize = windowed && cfg->finalize;
            int can = finalize && lp_attach_can_renew() && !lp_activity_graphs_seen() &&
                      !cfg->counters && cfg->pm_sampling_us == 0 && lp_launch_via_callbacks() &&
                      lp_nvtx_watch(sub) == 0;
            if (finalize && !can)
                lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0,
                                "--finalize: CUPTI cannot be finalized between windows here (it "
                                "needs launch records from callbacks, graph replays recorded "
                                "whole, no --counters or --pm-sampling, and NVTX's callbacks); "
                                "it stays attached");
            lp_window_allow_renew(can);
            static const lp_window_switch switches[] = {
                lp_activity_set_recording, lp_launch_set_recording, lp_gemm_set_recording, NULL};
            lp_window_start(sub, &capture, cfg->capture, switches);
        } else {
            lp_sink_set_meta("graph_nodes", "off: CUPTI activity could not be enabled for llmprof "
                                            "(see the warnings)");
            lp_sink_set_meta("capture", "all"); /* no windows: nothing recorded, said above */
        }
        point_nvtx_here();
    }
    lp_gemm_start(wake_flusher);
    if (cfg->nvml_hz > 0)
        lp_nvml_start(cfg->nvml_hz);
    flush_ms = (unsigned)cfg->flush_ms; /* at least 10, at most UINT_MAX: the table's bounds */
    lp_sink_set_meta_u64("flush_ms", flush_ms);
    if (pthread_create(&flusher, NULL, flush_loop, NULL) == 0)
        flusher_running = 1;
    else
        lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "cannot start the flusher thread: records are "
                                              "written only when buffers fill and at exit");
    atexit(shutdown_collector);
}

LP_EXPORT int InitializeInjection(void)
{
    pthread_once(&init_once, init);
    return 1;
}

/* A program may open NVTX ranges before it initialises CUDA: the collector starts here
 * too, so marker activity is on before the first range reaches CUPTI. */
LP_EXPORT int InitializeInjectionNvtx2(void *get_export_table)
{
    pthread_once(&init_once, init);
    if (lp_cupti_load(NULL, 0) != 0 || !lp_cupti.InitializeInjectionNvtx2)
        return 0;
    return lp_cupti.InitializeInjectionNvtx2(get_export_table);
}
