/* Capture windows (see window.h).
 * - cuda-profiler: cudaProfilerStart opens a window at the call's exit, cudaProfilerStop
 *   closes it at its entry; the runtime's calls make the driver's (cuProfilerStart/Stop), so
 *   both are watched and the second of a pair does nothing, and a program calling the driver
 *   directly is seen too. A start inside a window and a stop outside one change nothing, as
 *   for nsys --capture-range=cudaProfilerApi.
 * - nvtx: the chosen occurrences of a range open a window at their push and close it at
 *   their pop (nvtx.c tells which pop is theirs).
 * - signal: SIGUSR1 opens a window, the next one closes it. The handler only posts a
 *   semaphore; llmprof's own thread does the switching, which is not async-signal-safe.
 * When a window closes, launch callbacks and GEMM capture stop at once, but kernel activity
 * only once the GPU has run what was launched before: CUPTI gives kernels still running
 * when it is disabled end times from its next enabling (a CUDA-graph step closed by its
 * range's pop read 12 ms per kernel on an H200). The same thread waits for that with
 * cuCtxSynchronize, which blocks only itself and waits only for work already launched.
 * Kernels launched after the close and recorded before the disable have no launch record
 * (the callbacks are off); analysis leaves them out. */
#include "window.h"

#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "cupti_api.h"
#include "dlbind.h"
#include "launch.h"
#include "log.h"
#include "nvtx.h"
#include "sink.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int active;                /* windows are in use */
static int open_;                 /* a window is open */
static struct lp_window current;
static uint64_t n_windows;
static uint64_t switch_ns;        /* time the program's threads spent switching */
static const lp_window_switch *switches;
static struct lp_capture_spec spec;
static regex_t range_re;
static uint64_t occurrences;      /* of the nvtx range */
/* llmprof's switching thread: woken by SIGUSR1 and by a closed window */
static sem_t wake;
static pthread_t switcher;
static int switcher_running, switcher_stopping;
static int signals_pending;        /* SIGUSR1s not yet acted on (atomic) */
static int disable_pending;        /* a window closed: kernel activity still on */
static CUcontext disable_context;  /* ...to be synchronised before it goes off */
static uint64_t generation;        /* counts window openings */
static CUresult (*cuCtxSetCurrent_p)(CUcontext);
static CUresult (*cuCtxSynchronize_p)(void);

void lp_window_mode(struct lp_capture_spec *s)
{
    char err[512];
    if (lp_capture_parse(getenv("LLMPROF_CAPTURE"), s, err, sizeof err) != 0) {
        lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "ignoring LLMPROF_CAPTURE: %s; everything "
                        "is recorded", err);
        memset(s, 0, sizeof *s);
    }
}

/* Switches everything; 0, or -1 when kernel activity could not be switched on. */
static int set_recording(int on)
{
    int rc = 0;
    for (const lp_window_switch *s = switches; *s; s++)
        if ((*s)(on) != 0 && s == switches && on)
            rc = -1;
    return rc;
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

/* With the lock held: 1 when a window opened. */
static int open_window(uint64_t now, enum lp_window_cause cause, uint32_t thread)
{
    if (open_ || !active)
        return 0;
    uint64_t t0 = lp_clock_ns();
    int rc = set_recording(1);
    switch_ns += lp_clock_ns() - t0;
    if (rc != 0) {
        set_recording(0);
        lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "a capture window could not enable "
                        "kernel activity (see the CUPTI error before this): it records "
                        "no kernels");
        return 0;
    }
    current = (struct lp_window){.start = now, .end = now, .cause = cause, .thread = thread};
    open_ = 1;
    generation++;
    disable_pending = 0;
    write_window();
    return 1;
}

/* With the lock held. DEFER: kernel activity goes off on the switching thread, once the
 * GPU has run the window's work (else at once). */
static void close_window(uint64_t now, int defer)
{
    if (!open_)
        return;
    CUcontext ctx = lp_launch_context();
    defer = defer && switcher_running && ctx && cuCtxSetCurrent_p && cuCtxSynchronize_p;
    uint64_t t0 = lp_clock_ns();
    for (const lp_window_switch *s = switches + (defer ? 1 : 0); *s; s++)
        (*s)(0);
    switch_ns += lp_clock_ns() - t0;
    if (defer) {
        disable_pending = 1;
        disable_context = ctx;
        sem_post(&wake);
    }
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
    if (!cd || !(start || stop) || spec.mode != LP_CAPTURE_MODE_CUDA_PROFILER ||
        cd->callbackSite != (start ? CUPTI_API_EXIT : CUPTI_API_ENTER) ||
        !__atomic_load_n(&active, __ATOMIC_RELAXED))
        return;
    uint64_t now = lp_clock_ns();
    pthread_mutex_lock(&lock);
    if (start)
        open_window(now, LP_WINDOW_CAUSE_PROFILER_API, (uint32_t)pthread_self());
    else
        close_window(now, 1);
    pthread_mutex_unlock(&lock);
}

static int nvtx_push(const char *name, uint32_t thread, uint64_t now)
{
    if (!name || !__atomic_load_n(&active, __ATOMIC_RELAXED) ||
        regexec(&range_re, name, 0, NULL, 0) != 0)
        return 0;
    pthread_mutex_lock(&lock);
    uint64_t n = ++occurrences;
    int opened = !open_ && lp_capture_selects(&spec, n) &&
                 open_window(now, LP_WINDOW_CAUSE_NVTX, thread);
    pthread_mutex_unlock(&lock);
    return opened;
}

static void nvtx_pop(uint32_t thread, uint64_t now)
{
    (void)thread;
    pthread_mutex_lock(&lock);
    close_window(now, 1);
    pthread_mutex_unlock(&lock);
}

static const struct lp_nvtx_client nvtx_client = {nvtx_push, nvtx_pop};

static void on_sigusr1(int sig)
{
    (void)sig;
    int saved = errno;
    __atomic_add_fetch(&signals_pending, 1, __ATOMIC_RELAXED);
    sem_post(&wake);
    errno = saved;
}

/* Kernel activity off after the GPU has run the closed window's work, unless a window
 * opened meanwhile. */
static void finish_disable(void)
{
    pthread_mutex_lock(&lock);
    int pending = disable_pending;
    CUcontext ctx = disable_context;
    uint64_t gen = generation;
    disable_pending = 0;
    pthread_mutex_unlock(&lock);
    if (!pending)
        return;
    if (cuCtxSetCurrent_p(ctx) == CUDA_SUCCESS)
        cuCtxSynchronize_p(); /* an error (a context gone) leaves nothing to wait for */
    pthread_mutex_lock(&lock);
    if (!open_ && gen == generation && !switcher_stopping)
        switches[0](0);
    pthread_mutex_unlock(&lock);
}

static void *switcher_loop(void *arg)
{
    (void)arg;
    for (;;) {
        while (sem_wait(&wake) != 0 && errno == EINTR)
            ;
        pthread_mutex_lock(&lock);
        int stopping = switcher_stopping;
        for (; !stopping && __atomic_load_n(&signals_pending, __ATOMIC_RELAXED) > 0;
             __atomic_sub_fetch(&signals_pending, 1, __ATOMIC_RELAXED)) {
            if (open_)
                close_window(lp_clock_ns(), 1);
            else
                open_window(lp_clock_ns(), LP_WINDOW_CAUSE_SIGNAL, (uint32_t)pthread_self());
        }
        pthread_mutex_unlock(&lock);
        if (stopping)
            return NULL;
        finish_disable();
    }
}

/* 0 when the switching thread runs; else ERR says why not. */
static int start_switcher(char *err, size_t errlen)
{
    if (sem_init(&wake, 0, 0) != 0) {
        snprintf(err, errlen, "no semaphore (%s)", strerror(errno));
        return -1;
    }
    sigset_t all, before;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &before); /* the thread takes no signal itself */
    int rc = pthread_create(&switcher, NULL, switcher_loop, NULL);
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "no thread (%s)", strerror(rc));
        return -1;
    }
    switcher_running = 1;
    return 0;
}

/* 0 when SIGUSR1 reaches llmprof; else ERR says why not. */
static int watch_signal(char *err, size_t errlen)
{
    struct sigaction old;
    if (sigaction(SIGUSR1, NULL, &old) != 0 || old.sa_handler != SIG_DFL) {
        snprintf(err, errlen, "the program already handles SIGUSR1");
        return -1;
    }
    if (!switcher_running) {
        snprintf(err, errlen, "llmprof's thread could not start");
        return -1;
    }
    struct sigaction sa = {.sa_handler = on_sigusr1, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, NULL) != 0) {
        snprintf(err, errlen, "sigaction failed (%s)", strerror(errno));
        return -1;
    }
    return 0;
}

void lp_window_start(CUpti_SubscriberHandle subscriber, const struct lp_capture_spec *s,
                     const char *text, const lp_window_switch *sw)
{
    switches = sw;
    spec = *s;
    if (spec.mode == LP_CAPTURE_MODE_ALL) { /* everything started switched on */
        lp_sink_set_meta("capture", "all");
        return;
    }
    set_recording(0); /* GEMM capture starts on; the rest started off */
    char why[256] = "CUPTI's callbacks could not be enabled";
    const struct lp_dl_sym driver[] = {
        LP_DL_SYM(cuCtxSetCurrent_p, "cuCtxSetCurrent", 0),
        LP_DL_SYM(cuCtxSynchronize_p, "cuCtxSynchronize", 0),
    };
    lp_cuda_driver_bind(driver, sizeof driver / sizeof *driver);
    char serr[128];
    if (start_switcher(serr, sizeof serr) != 0)
        lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "capture windows: %s; kernel activity "
                        "goes off as a window closes, so CUDA-graph kernels still running "
                        "then get wrong end times", serr);
    int ok = subscriber && lp_cupti.EnableCallback;
    if (ok && spec.mode == LP_CAPTURE_MODE_CUDA_PROFILER) {
        const struct {
            CUpti_CallbackDomain domain;
            CUpti_CallbackId cbid;
        } calls[] = {
            {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000},
            {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000},
            {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart},
            {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop},
        };
        for (size_t i = 0; ok && i < sizeof calls / sizeof *calls; i++)
            ok = LP_CUPTI(EnableCallback, 1, subscriber, calls[i].domain, calls[i].cbid) ==
                 CUPTI_SUCCESS;
    } else if (ok && spec.mode == LP_CAPTURE_MODE_NVTX) {
        ok = regcomp(&range_re, spec.range, REG_EXTENDED | REG_ICASE | REG_NOSUB) == 0 &&
             lp_nvtx_add_client(subscriber, &nvtx_client) == 0;
    } else if (spec.mode == LP_CAPTURE_MODE_SIGNAL) {
        ok = watch_signal(why, sizeof why) == 0;
    }
    if (!ok) {
        int on = set_recording(1) == 0;
        lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "capture windows (%s) cannot open here: "
                        "%s; %s", text, why, on ? "everything is recorded for the whole run"
                        : "and kernel activity could not be enabled: no kernels are recorded");
        lp_sink_set_meta("capture", "all");
        return;
    }
    lp_sink_set_meta("capture", text);
    __atomic_store_n(&active, 1, __ATOMIC_RELAXED);
}

void lp_window_stop(void)
{
    if (switcher_running) {
        pthread_mutex_lock(&lock);
        switcher_stopping = 1;
        pthread_mutex_unlock(&lock);
        sem_post(&wake);
        pthread_join(switcher, NULL);
        switcher_running = 0;
    }
    if (!__atomic_load_n(&active, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&lock);
    close_window(lp_clock_ns(), 0);
    __atomic_store_n(&active, 0, __ATOMIC_RELAXED);
    lp_sink_set_meta_u64("capture_windows", n_windows);
    lp_sink_set_meta_u64("capture_switch_ns", switch_ns);
    pthread_mutex_unlock(&lock);
}

void lp_window_forget(void)
{
    __atomic_store_n(&active, 0, __ATOMIC_RELAXED);
    switcher_running = 0; /* the thread did not survive the fork */
    if (spec.mode == LP_CAPTURE_MODE_SIGNAL)
        signal(SIGUSR1, SIG_DFL);
}
