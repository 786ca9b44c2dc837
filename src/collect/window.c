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
 * - graphs: steps are counted at the entry of the driver's graph launch (the runtime's call
 *   makes it), whose callbacks stay on throughout; a chosen step's first launch opens a
 *   window before the launch itself is seen by launch.c (inject.c calls windows first), so
 *   that launch and its replay are recorded; the next step not chosen closes it.
 * When a window closes, launch records and GEMM capture stop at once for calls entered
 * after it, but kernel activity only once the GPU has run what was launched before: CUPTI
 * gives kernels still running when it is disabled end times from its next enabling (a
 * CUDA-graph step closed by its range's pop read 12 ms per kernel on an H200). The same
 * thread waits for that with cuCtxSynchronize, which blocks only itself and waits only for
 * work already launched; kernel activity then goes off at the program's next traced call or
 * NVTX range, on that thread (disable_if_ready). Kernels launched after the close and
 * recorded before the disable are left out by their correlation ids (launch.c). The
 * launch callbacks stay enabled and only stop recording: disabling them while a call is in
 * flight corrupts CUPTI (launch.c).
 * Disabled kernel activity still costs each launch about half of what it costs on, until
 * CUPTI is finalized (docs/benchmarks.md). With record --finalize, a second after the
 * disable (LLMPROF_FINALIZE_AFTER_MS), at the exit of the program's next traced call with no
 * NVTX range open, CUPTI is finalized there, on the program's thread, as CUPTI advises; the
 * switching thread sets it up again (attach.c), the launch callbacks off till the next
 * window.
 * Never once the program may have made a CUDA graph (a finalize would turn graph-level
 * records off and on again with a graph made, which crashed CUPTI; with them off since an
 * earlier finalize, it is untried), once a second thread made CUDA calls, nor with hardware
 * counters, which a finalize ends (docs/collector.md says what crashed otherwise). */
#include "window.h"

#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "activity.h"
#include "attach.h"
#include "clock.h"
#include "config.h"
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
static int disable_ready;          /* ...and its work has run: off at a program's call (atomic) */
enum { MAX_CONTEXTS = 8, MAX_CBID = 2048 };
static CUcontext disable_contexts[MAX_CONTEXTS]; /* ...to be synchronised before it goes off */
static size_t n_disable_contexts;
/* Stream captures in progress: synchronising a context while one of its streams captures
 * invalidates the capture (torch.compile's reduce-overhead captures during decode), so the
 * switching thread synchronises only while none is, and a capture that starts meanwhile
 * waits for the synchronisation to end (sync_lock, held through it). Begin and end calls are
 * counted in both domains (the runtime's call makes the driver's, so the counts stay
 * paired). */
static pthread_mutex_t sync_lock = PTHREAD_MUTEX_INITIALIZER;
static int captures;
enum { CAPTURE_BEGIN = 1, CAPTURE_END = 2 };
static uint8_t capture_call[2][MAX_CBID]; /* [runtime, driver][cbid] */
static uint64_t generation;        /* counts window openings */
/* Finalizing between windows (see the top): allowed at all, and where it stands (atomic) */
static int renew_allowed;
static int captures_began;         /* a stream capture began: a graph may exist (atomic) */
static int cupti_lost;             /* the new subscription after a finalize failed (atomic) */
enum renew_state {
    RENEW_IDLE,
    RENEW_WAITING,   /* kernel activity off; the switching thread waits renew_after_ms */
    RENEW_ARMED,     /* the next traced call's exit finalizes */
    RENEW_DETACHING, /* a program's thread is finalizing */
    RENEW_DETACHED,  /* finalized: the switching thread sets CUPTI up again */
};
static int renew_state;
static uint64_t renew_gen;         /* the window generation the renewal follows */
static struct timespec renew_deadline; /* WAITING: when to arm; ARMED: when to re-check */
static unsigned renew_after_ms = 1000; /* LLMPROF_FINALIZE_AFTER_MS */
static uint64_t detach_t0;
static uint64_t arm_ns;            /* when the finalize was last armed */
static int detach_returned;        /* the finalizing thread left lp_window_renew_point */
static uint64_t renewals, detach_ns, reattach_ns, renew_missed;
static _Thread_local int own_thread; /* the switching thread */
/* graphs: each graph exec's latest step, in an open-addressed table (cleared when full) */
enum { EXEC_SLOTS = 1024 };
static struct exec_step {
    const void *exec;
    uint64_t step;
} exec_steps[EXEC_SLOTS];
static size_t n_execs;
static uint64_t steps;             /* begun */
static const CUpti_CallbackId graph_launch_cbids[] = {CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
                                                      CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz};
static CUresult (*cuCtxSetCurrent_p)(CUcontext);
static CUresult (*cuCtxSynchronize_p)(void);

void lp_window_mode(struct lp_capture_spec *s)
{
    char err[512];
    if (lp_capture_parse(lp_config_get()->capture, s, err, sizeof err) != 0) {
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

/* graphs, or --finalize: the graph launch callbacks on for the whole run (launch.c, which
 * traces them too, leaves them on when it switches its own off). 1 when they are. */
static int watch_graph_launches(CUpti_SubscriberHandle subscriber)
{
    int ok = subscriber != NULL;
    for (size_t i = 0; ok && i < sizeof graph_launch_cbids / sizeof *graph_launch_cbids; i++) {
        lp_launch_keep_enabled(CUPTI_CB_DOMAIN_DRIVER_API, graph_launch_cbids[i]);
        ok = lp_attach_callback(1, CUPTI_CB_DOMAIN_DRIVER_API, graph_launch_cbids[i]) ==
             CUPTI_SUCCESS;
    }
    return ok;
}

/* With the lock held: 1 when a window opened. */
static int open_window(uint64_t now, enum lp_window_cause cause, uint32_t thread)
{
    if (open_ || !active)
        return 0;
    int state = __atomic_load_n(&renew_state, __ATOMIC_SEQ_CST);
    if (state == RENEW_DETACHING || state == RENEW_DETACHED) { /* CUPTI is being set up */
        if (renew_missed++ == 0)
            lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "capture windows: a window that "
                            "opened while llmprof set CUPTI up again was not recorded (the "
                            "count is in the trace header)");
        return 0;
    }
    if (state != RENEW_IDLE) /* a window again before the finalize: none is needed */
        __atomic_store_n(&renew_state, RENEW_IDLE, __ATOMIC_SEQ_CST);
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
    __atomic_store_n(&disable_ready, 0, __ATOMIC_SEQ_CST);
    write_window();
    return 1;
}

/* With the lock held. DEFER: kernel activity goes off once the switching thread saw the GPU
 * run the window's work, at a program's next call (else at once). */
static void close_window(uint64_t now, int defer)
{
    if (!open_)
        return;
    CUcontext ctx[MAX_CONTEXTS];
    size_t n_ctx = lp_launch_contexts(ctx, MAX_CONTEXTS);
    defer = defer && switcher_running && n_ctx && cuCtxSetCurrent_p && cuCtxSynchronize_p;
    uint64_t t0 = lp_clock_ns();
    for (const lp_window_switch *s = switches + (defer ? 1 : 0); *s; s++)
        (*s)(0);
    switch_ns += lp_clock_ns() - t0;
    if (defer) {
        disable_pending = 1;
        memcpy(disable_contexts, ctx, n_ctx * sizeof *ctx);
        n_disable_contexts = n_ctx;
        sem_post(&wake);
    }
    current.end = now;
    write_window();
    open_ = 0;
    n_windows++;
}

/* A stream capture's begin or end call (see sync_lock). A begin is counted first, so the
 * switching thread sees it, then waits for a synchronisation under way, for 100 ms at most:
 * the switching thread's cuCtxSynchronize might wait on this very call. */
static void capture_edge(int kind, const CUpti_CallbackData *cd)
{
    int failed = cd->callbackSite == CUPTI_API_EXIT && cd->functionReturnValue &&
                 *(const int *)cd->functionReturnValue != 0;
    int delta = kind == CAPTURE_BEGIN
                    ? (cd->callbackSite == CUPTI_API_ENTER ? 1 : failed ? -1 : 0)
                    : (cd->callbackSite == CUPTI_API_EXIT && !failed ? -1 : 0);
    if (delta < 0) {
        int n = __atomic_load_n(&captures, __ATOMIC_RELAXED);
        while (n > 0 && !__atomic_compare_exchange_n(&captures, &n, n - 1, 0, __ATOMIC_RELAXED,
                                                     __ATOMIC_RELAXED))
            ;
    } else if (delta > 0) {
        __atomic_store_n(&captures_began, 1, __ATOMIC_SEQ_CST); /* no finalize from now on */
        for (int ms = 0; ms < 200 && lp_attach_renewing(); ms++)
            nanosleep(&(struct timespec){0, 1000000}, NULL);
        __atomic_add_fetch(&captures, 1, __ATOMIC_SEQ_CST);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 100000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        if (pthread_mutex_timedlock(&sync_lock, &until) == 0)
            pthread_mutex_unlock(&sync_lock);
    }
}

static size_t exec_slot(const void *exec)
{
    return (size_t)(((uintptr_t)exec >> 4) * 0x9E3779B97F4A7C15ull >> 32) % EXEC_SLOTS;
}

/* graphs: a launch of EXEC; a new step when EXEC was launched in the current one already. */
static void graph_launch(const void *exec, uint32_t thread)
{
    uint64_t now = lp_clock_ns();
    pthread_mutex_lock(&lock);
    size_t h = exec_slot(exec);
    while (exec_steps[h].exec && exec_steps[h].exec != exec)
        h = (h + 1) % EXEC_SLOTS;
    struct exec_step *e = &exec_steps[h];
    if (!steps || (e->exec && e->step == steps)) {
        steps++;
        int chosen = lp_capture_selects(&spec, steps);
        if (open_ && !chosen) {
            close_window(now, 1);
            lp_launch_drop_current(); /* cudaGraphLaunch around this cuGraphLaunch */
        } else if (!open_ && chosen)
            open_window(now, LP_WINDOW_CAUSE_GRAPH_STEP, thread);
    }
    if (!e->exec && ++n_execs > EXEC_SLOTS / 2) { /* a program making graphs without end */
        memset(exec_steps, 0, sizeof exec_steps);
        n_execs = 1;
        e = &exec_steps[exec_slot(exec)];
    }
    *e = (struct exec_step){exec, steps};
    pthread_mutex_unlock(&lock);
}

/* Whether CUPTI may be finalized now: nothing that must outlive it exists, and one thread
 * of the program makes CUDA calls (finalizing while another thread launched corrupted the
 * heap: H200, CUPTI 13.0, tests/gpu/finalize_threads.py). */
static int renew_possible(void)
{
    return renew_allowed && !__atomic_load_n(&captures_began, __ATOMIC_SEQ_CST) &&
           !lp_activity_graphs_seen() && lp_launch_threads() <= 1 && !switcher_stopping;
}

/* ...and no NVTX range is open (its end after the finalize would lose its start). */
static int renew_still_allowed(void) { return renew_possible() && lp_nvtx_open_ranges() == 0; }

static void deadline_in(unsigned ms)
{
    clock_gettime(CLOCK_REALTIME, &renew_deadline);
    uint64_t ns = (uint64_t)renew_deadline.tv_nsec + (uint64_t)ms * 1000000u;
    renew_deadline.tv_sec += (time_t)(ns / 1000000000u);
    renew_deadline.tv_nsec = (long)(ns % 1000000000u);
}

/* With the lock held: the renewal as it ends, RC as lp_attach_detach or _reattach gave it. */
static void renew_end(int rc, const char *why)
{
    if (rc < 0) {
        renew_allowed = 0;
        int lost = lp_attach_subscriber() == NULL;
        if (lost) {
            __atomic_store_n(&active, 0, __ATOMIC_RELAXED);
            /* lp_window_stop still writes the windows' facts */
            __atomic_store_n(&cupti_lost, 1, __ATOMIC_RELAXED);
        }
        lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "capture windows: %s; %s", why,
                        lost ? "llmprof lost CUPTI: no later window is recorded"
                             : "CUPTI is no longer finalized between windows");
    }
    __atomic_store_n(&renew_state, RENEW_IDLE, __ATOMIC_SEQ_CST);
}

/* On a program's thread, at a traced call's exit while ARMED: finalizes CUPTI (inside the
 * callback, as CUPTI advises), or waits for a later gap when an NVTX range is open. The new
 * subscription is the switching thread's: subscribing again before this callback returned
 * crashed the process at its next CUDA call (H200, CUPTI 13.0). */
static void detach(void)
{
    int state = RENEW_ARMED;
    if (!__atomic_compare_exchange_n(&renew_state, &state, RENEW_DETACHING, 0, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST))
        return;
    pthread_mutex_lock(&lock);
    int go = !open_ && generation == renew_gen && active;
    pthread_mutex_unlock(&lock);
    int rc = 1;
    char why[256] = "";
    uint64_t t0 = lp_clock_ns();
    if (go) {
        const struct lp_attach_renewal r = {renew_still_allowed, lp_launch_new_epoch};
        rc = lp_attach_detach(&r, why, sizeof why);
    }
    pthread_mutex_lock(&lock);
    if (rc == 0) {
        detach_t0 = t0;
        detach_ns += lp_clock_ns() - t0;
        __atomic_store_n(&renew_state, RENEW_DETACHED, __ATOMIC_SEQ_CST);
    } else if (rc > 0 && go) { /* a range is open: a call after a while */
        deadline_in(renew_after_ms);
        __atomic_store_n(&renew_state, RENEW_WAITING, __ATOMIC_SEQ_CST);
    } else {
        renew_end(rc, why);
    }
    pthread_mutex_unlock(&lock);
    sem_post(&wake);
}

/* The switching thread: CUPTI set up again once the finalizing thread left its callback
 * (its return from llmprof's part, then 10 ms for CUPTI's: subscribing before it returned
 * crashed the program). */
static void reattach(void)
{
    for (int ms = 0; ms < 1000 && !__atomic_load_n(&detach_returned, __ATOMIC_SEQ_CST); ms++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    nanosleep(&(struct timespec){0, 10000000}, NULL);
    char why[256] = "";
    int rc = lp_attach_reattach(why, sizeof why);
    pthread_mutex_lock(&lock);
    if (rc == 0) {
        renewals++;
        reattach_ns += lp_clock_ns() - detach_t0;
    }
    renew_end(rc, why);
    pthread_mutex_unlock(&lock);
}

/* The switching thread, at the deadline: the finalize armed (it happens at the next call's
 * exit), the arming checked every 200 ms. Each change is a compare-and-swap: a program's
 * thread may have taken ARMED meanwhile. */
static void renew_timer(void)
{
    pthread_mutex_lock(&lock);
    int state = __atomic_load_n(&renew_state, __ATOMIC_SEQ_CST);
    int stale = open_ || generation != renew_gen || !renew_possible();
    if (state == RENEW_WAITING || state == RENEW_ARMED) {
        int next = stale ? RENEW_IDLE : RENEW_ARMED;
        if (__atomic_compare_exchange_n(&renew_state, &state, next, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST) && next == RENEW_ARMED) {
            if (state == RENEW_WAITING)
                __atomic_store_n(&arm_ns, lp_clock_ns(), __ATOMIC_RELAXED);
            deadline_in(200);
        }
    }
    pthread_mutex_unlock(&lock);
}

int lp_window_disable_ready(void) { return __atomic_load_n(&disable_ready, __ATOMIC_SEQ_CST); }

int lp_window_renew_armed(void)
{
    return __atomic_load_n(&renew_state, __ATOMIC_SEQ_CST) == RENEW_ARMED;
}

void lp_window_renew_point(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
    const CUpti_CallbackData *cd = data;
    if (__atomic_load_n(&renew_state, __ATOMIC_RELAXED) != RENEW_ARMED || own_thread || !cd)
        return;
    /* A traced runtime call's exit whose entry came after the arming (launch.c keeps the
     * entry's time): not a driver call's, which may be nested in a runtime call whose entry
     * was not seen; finalizing inside a runtime call crashed the program when the runtime
     * call returned (H200, CUPTI 13.0). */
    if (domain != CUPTI_CB_DOMAIN_RUNTIME_API || cd->callbackSite != CUPTI_API_EXIT ||
        !lp_launch_traced(domain, cbid) || !cd->correlationData ||
        *cd->correlationData < __atomic_load_n(&arm_ns, __ATOMIC_RELAXED))
        return;
    __atomic_store_n(&detach_returned, 0, __ATOMIC_SEQ_CST);
    detach();
    __atomic_store_n(&detach_returned, 1, __ATOMIC_SEQ_CST);
}

void lp_window_allow_renew(int allowed)
{
    renew_allowed = allowed;
    renew_after_ms = (unsigned)lp_config_get()->finalize_after_ms; /* at most 3600000 */
}

/* On a program's thread, at a traced call or NVTX range: kernel activity off once the closed
 * window's work has run (finish_disable), unless a window opened meanwhile; a finalize is
 * armed then. Not on the switching thread: on the H200 (CUPTI 13.0) windowed piecewise-graph
 * runs whose activity that thread disabled while the program ran corrupted the heap when
 * allocations were recorded (glibc aborts at exit or mid-run, 23 of 408 runs in four
 * parallel lanes; 0 of 88 without allocation records); switched off at the close on the
 * program's thread (without the wait), 0 of 44 (docs/benchmarks.md). */
static void disable_if_ready(void)
{
    if (!__atomic_load_n(&disable_ready, __ATOMIC_ACQUIRE) || own_thread)
        return;
    int armed = 0;
    pthread_mutex_lock(&lock);
    if (__atomic_exchange_n(&disable_ready, 0, __ATOMIC_SEQ_CST) && !open_) {
        uint64_t t0 = lp_clock_ns();
        switches[0](0);
        switch_ns += lp_clock_ns() - t0;
        if (renew_possible()) {
            renew_gen = generation;
            deadline_in(renew_after_ms);
            __atomic_store_n(&renew_state, RENEW_WAITING, __ATOMIC_SEQ_CST);
            armed = 1;
        }
    }
    pthread_mutex_unlock(&lock);
    if (armed) /* the switching thread times the finalize */
        sem_post(&wake);
}

void CUPTIAPI lp_window_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data)
{
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
        /* a context: the process uses CUDA, whether or not a window opens */
        if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED &&
            __atomic_load_n(&active, __ATOMIC_RELAXED))
            lp_sink_mark_used();
        return;
    }
    disable_if_ready();
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API &&
        (cbid == graph_launch_cbids[0] || cbid == graph_launch_cbids[1])) {
        const CUpti_CallbackData *cd = data;
        if (!cd || cd->callbackSite != CUPTI_API_ENTER)
            return;
        if (renew_allowed)
            lp_activity_graph_launched();
        if (spec.mode == LP_CAPTURE_MODE_GRAPHS && cd->functionParams &&
            __atomic_load_n(&active, __ATOMIC_RELAXED))
            graph_launch(((const cuGraphLaunch_params *)cd->functionParams)->hGraph,
                         (uint32_t)pthread_self());
        return;
    }
    const CUpti_CallbackData *cd = data;
    int side = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? 0 : domain == CUPTI_CB_DOMAIN_DRIVER_API
                                                                ? 1 : -1;
    if (side >= 0 && cbid < MAX_CBID && capture_call[side][cbid] && cd &&
        __atomic_load_n(&active, __ATOMIC_RELAXED)) {
        capture_edge(capture_call[side][cbid], cd);
        return;
    }
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

/* The switching thread: once the GPU has run the closed window's work, kernel activity may
 * go off (disable_if_ready), unless a window opened meanwhile. */
static void finish_disable(void)
{
    pthread_mutex_lock(&lock);
    int pending = disable_pending;
    CUcontext ctx[MAX_CONTEXTS];
    size_t n_ctx = n_disable_contexts;
    memcpy(ctx, disable_contexts, n_ctx * sizeof *ctx);
    uint64_t gen = generation;
    disable_pending = 0;
    pthread_mutex_unlock(&lock);
    if (!pending)
        return;
    pthread_mutex_lock(&sync_lock);
    while (__atomic_load_n(&captures, __ATOMIC_SEQ_CST) > 0 &&
           !__atomic_load_n(&switcher_stopping, __ATOMIC_RELAXED)) {
        pthread_mutex_unlock(&sync_lock);
        nanosleep(&(struct timespec){0, 1000000}, NULL);
        pthread_mutex_lock(&sync_lock);
    }
    /* an error (a context gone) leaves nothing to wait for */
    for (size_t i = 0; i < n_ctx && !__atomic_load_n(&switcher_stopping, __ATOMIC_RELAXED); i++)
        if (cuCtxSetCurrent_p(ctx[i]) == CUDA_SUCCESS)
            cuCtxSynchronize_p();
    pthread_mutex_unlock(&sync_lock);
    pthread_mutex_lock(&lock);
    if (!open_ && gen == generation && !switcher_stopping)
        __atomic_store_n(&disable_ready, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&lock);
}

static void *switcher_loop(void *arg)
{
    (void)arg;
    lp_launch_ignore_thread(); /* its cuCtxSynchronize is not the program's */
    own_thread = 1;
    for (;;) {
        int state = __atomic_load_n(&renew_state, __ATOMIC_SEQ_CST);
        if (state == RENEW_DETACHED) {
            reattach(); /* then the signals that waited for it */
        } else if (state == RENEW_WAITING || state == RENEW_ARMED) {
            pthread_mutex_lock(&lock);
            struct timespec until = renew_deadline;
            pthread_mutex_unlock(&lock);
            int rc;
            while ((rc = sem_timedwait(&wake, &until)) != 0 && errno == EINTR)
                ;
            if (rc != 0) {
                renew_timer();
                continue;
            }
        } else {
            while (sem_wait(&wake) != 0 && errno == EINTR)
                ;
        }
        pthread_mutex_lock(&lock);
        int stopping = switcher_stopping;
        state = __atomic_load_n(&renew_state, __ATOMIC_SEQ_CST);
        int away = state == RENEW_DETACHING || state == RENEW_DETACHED; /* wait for CUPTI */
        for (; !stopping && !away && __atomic_load_n(&signals_pending, __ATOMIC_RELAXED) > 0;
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

/* Enables the callbacks of the stream capture calls (see sync_lock), named by launch.c. */
static void watch_captures(CUpti_SubscriberHandle subscriber)
{
    static const char *const begin[2] = {"cudaStreamBeginCapture", "cuStreamBeginCapture"},
                             *end[2] = {"cudaStreamEndCapture", "cuStreamEndCapture"};
    static const CUpti_CallbackDomain domain[2] = {CUPTI_CB_DOMAIN_RUNTIME_API,
                                                   CUPTI_CB_DOMAIN_DRIVER_API};
    static const uint32_t lp_domain[2] = {LP_API_DOMAIN_RUNTIME, LP_API_DOMAIN_DRIVER};
    for (int d = 0; d < 2 && subscriber && lp_cupti.EnableCallback; d++)
        for (uint32_t cbid = 1; cbid < MAX_CBID; cbid++) {
            const char *name = lp_launch_api_name(lp_domain[d], cbid);
            int kind = !name                                            ? 0
                       : !strncmp(name, begin[d], strlen(begin[d])) ? CAPTURE_BEGIN
                       : !strncmp(name, end[d], strlen(end[d]))     ? CAPTURE_END
                                                                    : 0;
            if (kind && lp_attach_callback(1, domain[d], cbid) == CUPTI_SUCCESS)
                capture_call[d][cbid] = (uint8_t)kind;
        }
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
    watch_captures(subscriber);
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
            ok = lp_attach_callback(1, calls[i].domain, calls[i].cbid) == CUPTI_SUCCESS;
    } else if (ok && spec.mode == LP_CAPTURE_MODE_NVTX) {
        ok = regcomp(&range_re, spec.range, REG_EXTENDED | REG_ICASE | REG_NOSUB) == 0 &&
             lp_nvtx_add_client(subscriber, &nvtx_client) == 0;
    } else if (spec.mode == LP_CAPTURE_MODE_SIGNAL) {
        ok = watch_signal(why, sizeof why) == 0;
    } else if (ok && spec.mode == LP_CAPTURE_MODE_GRAPHS) {
        ok = watch_graph_launches(subscriber);
    }
    /* --finalize: graph launches are seen between windows too (lp_activity_graph_launched),
     * so that a graph made while CUPTI was away rules out the next finalize */
    if (ok && renew_allowed && spec.mode != LP_CAPTURE_MODE_GRAPHS &&
        !watch_graph_launches(subscriber)) {
        renew_allowed = 0;
        lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "--finalize: graph launches cannot be "
                        "watched here; CUPTI is not finalized between windows");
    }
    if (!ok) {
        int on = set_recording(1) == 0;
        lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "capture windows (%s) cannot open here: "
                        "%s; %s", text, why, on ? "everything is recorded for the whole run"
                        : "and kernel activity could not be enabled: no kernels are recorded");
        lp_sink_set_meta("capture", "all");
        return;
    }
    /* a process whose windows never open still keeps its trace if it made a context
     * (sink.c): the report then says no window opened */
    if (!subscriber || lp_attach_callback(1, CUPTI_CB_DOMAIN_RESOURCE,
                                          CUPTI_CBID_RESOURCE_CONTEXT_CREATED) != CUPTI_SUCCESS)
        lp_sink_mark_used();
    lp_sink_set_meta("capture", text);
    __atomic_store_n(&active, 1, __ATOMIC_RELAXED);
}

void lp_window_stop(void)
{
    int pending = RENEW_WAITING, armed = RENEW_ARMED;
    __atomic_compare_exchange_n(&renew_state, &pending, RENEW_IDLE, 0, __ATOMIC_SEQ_CST,
                                __ATOMIC_SEQ_CST);
    __atomic_compare_exchange_n(&renew_state, &armed, RENEW_IDLE, 0, __ATOMIC_SEQ_CST,
                                __ATOMIC_SEQ_CST);
    if (switcher_running) {
        pthread_mutex_lock(&lock);
        __atomic_store_n(&switcher_stopping, 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&lock);
        sem_post(&wake);
        /* bounded: a synchronisation that never ends (GPU work waiting on a dead peer)
         * must not keep the program from exiting */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 2;
        if (pthread_timedjoin_np(switcher, NULL, &until) != 0) {
            pthread_detach(switcher);
            lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "capture windows: at exit llmprof's "
                            "thread was still waiting for the GPU; left behind");
        }
        switcher_running = 0;
    }
    if (__atomic_load_n(&renew_state, __ATOMIC_SEQ_CST) == RENEW_DETACHED)
        reattach(); /* finalized, the switching thread gone before it set CUPTI up again */
    disable_if_ready(); /* the switching thread is gone: nothing races it */
    /* no windows ran (capture all, windows that could not open): nothing to close or say */
    if (!__atomic_load_n(&active, __ATOMIC_RELAXED) &&
        !__atomic_load_n(&cupti_lost, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&lock);
    close_window(lp_clock_ns(), 0);
    __atomic_store_n(&active, 0, __ATOMIC_RELAXED);
    lp_sink_set_meta_u64("capture_windows", n_windows);
    lp_sink_set_meta_u64("capture_switch_ns", switch_ns);
    lp_sink_set_meta("capture_finalize", renew_allowed || renewals ? "on" : "off");
    lp_sink_set_meta_u64("capture_finalized", renewals);
    lp_sink_set_meta_u64("capture_finalize_ns", detach_ns);
    lp_sink_set_meta_u64("capture_reattach_ns", reattach_ns);
    lp_sink_set_meta_u64("capture_finalize_missed", renew_missed);
    pthread_mutex_unlock(&lock);
}

void lp_window_forget(void)
{
    __atomic_store_n(&active, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&cupti_lost, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&renew_state, RENEW_IDLE, __ATOMIC_SEQ_CST);
    __atomic_store_n(&disable_ready, 0, __ATOMIC_SEQ_CST);
    switcher_running = 0; /* the thread did not survive the fork */
    if (spec.mode == LP_CAPTURE_MODE_SIGNAL)
        signal(SIGUSR1, SIG_DFL);
}
