/* Entry points of libllmprof.so. CUDA calls InitializeInjection at initialisation
 * (CUDA_INJECTION64_PATH); NVTX calls InitializeInjectionNvtx2 at its first use
 * (NVTX_INJECTION64_PATH), which is forwarded to the CUPTI the process uses. Everything
 * here fails open: a problem becomes a warning and a loss record, never an abort.
 *
 * Configuration (set by `llmprof record`): LLMPROF_OUT (run directory), LLMPROF_LIGHT,
 * LLMPROF_NVML_HZ, LLMPROF_FLUSH_MS, LLMPROF_BUFFER_KB, LLMPROF_MAX_BUFFERS, LLMPROF_QUIET,
 * LLMPROF_CUPTI_PATH, LLMPROF_NVML_PATH, LLMPROF_KINDS, LLMPROF_COUNTERS,
 * LLMPROF_COUNTER_RANGES, LLMPROF_COUNTER_SEGMENTS, LLMPROF_PM_SAMPLING, LLMPROF_PM_BUFFER_MB,
 * LLMPROF_CAPTURE, LLMPROF_GRAPHS, LLMPROF_LAUNCH,
 * LLMPROF_DEVICE_BUFFER_KB, LLMPROF_DEVICE_BUFFER_LIMIT, LLMPROF_DEVICE_BUFFERS,
 * LLMPROF_FINALIZE
 * (docs/collector.md). */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "activity.h"
#include "attach.h"
#include "clock.h"
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

static double env_double(const char *name, double def)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end = NULL;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || *end || !isfinite(d) || d < 0) { /* nan and inf: no value to cast */
        lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "ignoring %s=%s: not a non-negative number",
                        name, v);
        return def;
    }
    return d;
}

/* A whole count from the environment, at most MAX (past it: warned, DEF): casting a larger
 * double to an integer is undefined. */
static size_t env_count(const char *name, size_t def, size_t max)
{
    double d = env_double(name, (double)def);
    if (d != floor(d)) { /* 0.5 would be cut to 0 */
        lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "ignoring %s=%s: not a whole number", name,
                        getenv(name));
        return def;
    }
    if (d > (double)max) {
        lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "ignoring %s=%s: more than %zu", name,
                        getenv(name), max);
        return def;
    }
    return (size_t)d;
}

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
    lp_sink_set_meta_u64("end_trace_ns", lp_clock_ns());
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
    lp_collect_set_quiet(env_double("LLMPROF_QUIET", 0) > 0);
    const char *dir = getenv("LLMPROF_OUT");
    if (!dir || !*dir)
        dir = ".";
    char cupti_err[512] = "";
    int cupti_ok = lp_cupti_load(cupti_err, sizeof cupti_err) == 0;
    /* light: NVTX, counters and NVML; no per-kernel, copy or API records */
    int light = env_double("LLMPROF_LIGHT", 0) > 0;
    lp_procinfo_set_start_meta(cupti_ok ? lp_cupti.version : 0, cupti_ok ? lp_cupti.path : "");
    lp_sink_set_meta_u64("start_trace_ns", lp_clock_ns());
    lp_sink_set_meta("mode", light ? "light" : "default");
    /* windows only where kernels are recorded at all */
    struct lp_capture_spec capture = {0};
    if (!light)
        lp_window_mode(&capture);
    int windowed = capture.mode != LP_CAPTURE_MODE_ALL;
    lp_sink_set_meta("capture", windowed ? getenv("LLMPROF_CAPTURE") : "all");
    char err[512];
    if (lp_sink_open(dir, err, sizeof err) != 0) {
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
            .buffer_bytes = env_count("LLMPROF_BUFFER_KB", 4096, 1u << 20) * 1024,
            .max_buffers = (unsigned)env_count("LLMPROF_MAX_BUFFERS", 64, 1u << 16),
            .subscribe = env_double("LLMPROF_SUBSCRIBE", 1) > 0,
            .callback = on_callback,
            .windowed = windowed,
            /* CUPTI's device buffers: its defaults unless asked (docs/collector.md) */
            .device_buffer_bytes = env_count("LLMPROF_DEVICE_BUFFER_KB", 0, 1u << 20) * 1024,
            .device_buffer_limit = env_count("LLMPROF_DEVICE_BUFFER_LIMIT", 0, 100000),
            .device_buffers = env_count("LLMPROF_DEVICE_BUFFERS", 0, 10000),
        };
        if (ao.buffer_bytes < 64 * 1024)
            ao.buffer_bytes = 64 * 1024;
        if (ao.max_buffers < 2)
            ao.max_buffers = 2;
        const char *kinds = getenv("LLMPROF_KINDS");
        char kerr[256];
        unsigned chosen = 0;
        if (kinds && *kinds) {
            if (lp_kinds_parse(kinds, &chosen, kerr, sizeof kerr) == 0)
                ao.kinds = chosen;
            else
                lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "ignoring LLMPROF_KINDS: %s", kerr);
        }
        /* CUDA graph replays: whole (default) or node by node */
        const char *graphs = getenv("LLMPROF_GRAPHS");
        ao.graph_replays = !graphs || !*graphs || strcmp(graphs, "node") != 0;
        if (graphs && *graphs && strcmp(graphs, "node") && strcmp(graphs, "replay"))
            lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0,
                            "ignoring LLMPROF_GRAPHS=%s (replay or node): replays are recorded "
                            "whole", graphs);
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
            const char *counters = getenv("LLMPROF_COUNTERS"), *pm = getenv("LLMPROF_PM_SAMPLING");
            int finalize = windowed && env_double("LLMPROF_FINALIZE", 0) > 0;
            int can = finalize && lp_attach_can_renew() && !lp_activity_graphs_seen() &&
                      (!counters || !*counters || !strcmp(counters, "0")) &&
                      (!pm || !*pm || !strcmp(pm, "0")) && lp_launch_via_callbacks() &&
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
            lp_window_start(sub, &capture, getenv("LLMPROF_CAPTURE"), switches);
        } else {
            lp_sink_set_meta("graph_nodes", "off: CUPTI activity could not be enabled for llmprof "
                                            "(see the warnings)");
            lp_sink_set_meta("capture", "all"); /* no windows: nothing recorded, said above */
        }
        point_nvtx_here();
    }
    lp_gemm_start(wake_flusher);
    double hz = env_double("LLMPROF_NVML_HZ", 20);
    if (hz > 0)
        lp_nvml_start(hz);
    flush_ms = (unsigned)env_double("LLMPROF_FLUSH_MS", 500);
    if (flush_ms < 10)
        flush_ms = 10;
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
