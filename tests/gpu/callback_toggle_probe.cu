/* Whether switching CUPTI's API callbacks on and off while the program runs keeps CUPTI's
 * bookkeeping of calls sound, and which ways of switching do not. llmprof's capture windows
 * used to switch the launch callbacks off after a close (docs/collector.md): a piecewise
 * CUDA-graph decode recorded with `--capture graphs/8` on an H200 saw calls' exits reported
 * twice and every later call given the same correlation id.
 * The main thread launches kernels through the runtime (each cudaLaunchKernel makes a
 * cuLaunchKernel inside it) and, in the graph phases, CUDA graphs; each phase switches the
 * runtime's and the driver's callbacks of those calls one way:
 *   none         never switched (the baseline)
 *   between      on and off by the main thread between its calls
 *   thread       on and off by a second thread at random moments (as llmprof's switching
 *                thread does when a window closes)
 *   nested-on    on inside the driver call's entry callback, so the runtime call around it
 *                exits with its entry unseen (as a window opened at cuGraphLaunch's entry)
 *   nested-off   off inside the driver call's entry callback, so the runtime call's exit
 *                is not seen after its entry was
 *   graph-on     nested-on with cudaGraphLaunch/cuGraphLaunch (llmprof's graphs windows)
 *   exit-off     off inside the runtime call's own exit callback, on again between calls
 *   activity     the callbacks never switched; kernel activity switched on and off by a
 *                second thread at random moments (as llmprof's switching thread does)
 *   activity-busy   the same with kernels of about 20 us, the GPU behind the host (kernels
 *                launched with kernel activity on still run when it goes off)
 *   graph-activity  the same over CUDA graph launches (graph-level records on throughout),
 *                the GPU behind the host
 *   graph-window as llmprof's windows on graph steps: kernel activity enabled in the entry
 *                callback of every eighth cuGraphLaunch, the GPU behind; at the next launch a
 *                second thread synchronises the context and disables it
 * For each phase it prints: calls made, entries and exits seen, exits without their entry,
 * exits seen twice (a second exit of an entry already exited, with the same correlation id;
 * "stale": another id, an exit whose entry was not seen reading an old slot), correlation
 * ids given again to a later call, and kernels recorded with how many distinct correlation
 * ids. Sound: no exit twice, no id again, one id per kernel
 * (in the activity phase kernels launched while it was off are missing, as they should be).
 * Usage: callback_toggle_probe [PHASE] [ITERATIONS]; without PHASE every phase runs, each in
 * a child process (one corrupted phase must not spoil the next). Needs a GPU. */
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"


__global__ void tick(float *p) { p[threadIdx.x] += 1.0f; }
/* about 20 us: the graph phases' GPU falls behind the host, as a decode's does */
__global__ void spin(float *p)
{
    long long t0 = clock64();
    while (clock64() - t0 < 40000)
        ;
    p[threadIdx.x] += 1.0f;
}

enum { P_NONE, P_BETWEEN, P_THREAD, P_NESTED_ON, P_NESTED_OFF, P_GRAPH_ON, P_EXIT_OFF,
       P_ACTIVITY, P_ACTIVITY_BUSY, P_GRAPH_ACTIVITY, P_GRAPH_WINDOW, P_COUNT };
static const char *const phase_names[P_COUNT] = {
    "none",     "between",  "thread",   "nested-on",      "nested-off",
    "graph-on", "exit-off", "activity", "activity-busy", "graph-activity", "graph-window"};
static int phase;
static CUpti_SubscriberHandle sub;
static int stop_thread; /* atomic */

/* the switched calls: [0] runtime, [1] driver */
static CUpti_CallbackId cb_launch[2] = {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                                        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel};
static CUpti_CallbackId cb_graph[2] = {CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
                                       CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch};
static const CUpti_CallbackDomain dom[2] = {CUPTI_CB_DOMAIN_RUNTIME_API,
                                            CUPTI_CB_DOMAIN_DRIVER_API};

enum { MAX_IDS = 1 << 22 };
static unsigned char *id_seen[2]; /* [domain][correlation id]: exits seen with that id */
static unsigned long long enters[2], exits[2], exit_unentered[2], exit_twice[2], exit_stale[2],
    id_again[2];
static uint32_t *exit_id; /* [entry's number]: the correlation id of its first exit, + 1 */
static unsigned long long seq;
static unsigned long long kernels, kernel_ids;
static unsigned char *kernel_id_seen;
static unsigned long long graph_launches, replays;
static sem_t close_sem; /* graph-window: the closing thread's turn */

static void runtime_switch(int on, const CUpti_CallbackId *cb)
{
    CHECK_STATUS(cuptiEnableCallback((uint32_t)on, sub, dom[0], cb[0]));
}

static void CUPTIAPI on_call(void *user, CUpti_CallbackDomain d, CUpti_CallbackId cbid,
                             const void *data)
{
    (void)user;
    const CUpti_CallbackData *cd = (const CUpti_CallbackData *)data;
    int s = d == CUPTI_CB_DOMAIN_RUNTIME_API ? 0 : 1;
    if (cd->callbackSite == CUPTI_API_ENTER) {
        enters[s]++;
        *cd->correlationData = ++seq;
        /* the nested phases switch the runtime's callback from inside the driver's call */
        if (s == 1 && cbid == cb_launch[1] && phase == P_NESTED_ON)
            runtime_switch(1, cb_launch);
        if (s == 1 && cbid == cb_launch[1] && phase == P_NESTED_OFF)
            runtime_switch(0, cb_launch);
        if (s == 1 && cbid == cb_graph[1] && phase == P_GRAPH_ON)
            runtime_switch(1, cb_graph);
        if (s == 1 && cbid == cb_graph[1] && phase == P_GRAPH_WINDOW) {
            unsigned long long n = graph_launches++;
            if (n % 8 == 0) /* a window opens at this launch */
                CHECK_STATUS(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
            else if (n % 8 == 1) /* ...and closes at the next */
                sem_post(&close_sem);
        }
        return;
    }
    exits[s]++;
    if (s == 0 && phase == P_EXIT_OFF)
        for (int k = 0; k < 2; k++)
            CHECK_STATUS(cuptiEnableCallback(0, sub, dom[k], cb_launch[k]));
    uint64_t mark = *cd->correlationData; /* the entry's number */
    uint32_t id = cd->correlationId;
    int again = 0;
    if (mark == 0) {
        exit_unentered[s]++;
    } else if (mark < MAX_IDS && exit_id[mark]) { /* that entry exited before */
        again = 1;
        if (exit_id[mark] == id + 1)
            exit_twice[s]++;
        else
            exit_stale[s]++;
    } else if (mark < MAX_IDS) {
        exit_id[mark] = id + 1;
    }
    if (id < MAX_IDS) {
        if (id_seen[s][id] && !again)
            id_again[s]++;
        id_seen[s][id] = 1;
    }
}

static void CUPTIAPI requested(uint8_t **buf, size_t *size, size_t *max)
{
    *buf = (uint8_t *)aligned_alloc(8, 1 << 22);
    *size = 1 << 22;
    *max = 0;
}

static void CUPTIAPI completed(CUcontext, uint32_t, uint8_t *buf, size_t, size_t valid)
{
    CUpti_Activity *a = NULL;
    while (valid && cuptiActivityGetNextRecord(buf, valid, &a) == CUPTI_SUCCESS) {
        uint32_t id = 0;
        if (a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
            id = ((const CUpti_ActivityKernel10 *)a)->correlationId;
        } else if (a->kind == CUPTI_ACTIVITY_KIND_GRAPH_TRACE) {
            id = ((const CUpti_ActivityGraphTrace2 *)a)->correlationId;
            if (phase >= P_GRAPH_ACTIVITY) { /* kernels are the other kind's here */
                replays++;
                continue;
            }
        } else {
            continue;
        }
        kernels++;
        if (id < MAX_IDS && !kernel_id_seen[id]) {
            kernel_id_seen[id] = 1;
            kernel_ids++;
        }
    }
    free(buf);
}

static void *toggler(void *arg)
{
    (void)arg;
    unsigned r = 12345;
    for (int on = 0; !__atomic_load_n(&stop_thread, __ATOMIC_RELAXED); on ^= 1) {
        if (phase == P_ACTIVITY || phase == P_ACTIVITY_BUSY || phase == P_GRAPH_ACTIVITY)
            CHECK_STATUS(on ? cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
                     : cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
        else
            for (int s = 0; s < 2; s++)
                CHECK_STATUS(cuptiEnableCallback((uint32_t)on, sub, dom[s], cb_launch[s]));
        r = r * 1103515245u + 12345u;
        struct timespec ts = {0, (long)(2000 + (r >> 8) % 30000)};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* graph-window: each window's close, as llmprof's switching thread makes it */
static void *closer(void *arg)
{
    (void)arg;
    CHECK_STATUS(cudaSetDevice(0));
    for (;;) {
        while (sem_wait(&close_sem) != 0)
            ;
        if (__atomic_load_n(&stop_thread, __ATOMIC_RELAXED))
            return NULL;
        CHECK_STATUS(cudaDeviceSynchronize());
        CHECK_STATUS(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    }
}

static int run_phase(int p, int iters)
{
    phase = p;
    for (int s = 0; s < 2; s++)
        id_seen[s] = (unsigned char *)calloc(MAX_IDS, 1);
    kernel_id_seen = (unsigned char *)calloc(MAX_IDS, 1);
    exit_id = (uint32_t *)calloc(MAX_IDS, sizeof *exit_id);
    CHECK_STATUS(cuptiActivityRegisterCallbacks(requested, completed));
    CHECK_STATUS(cuptiSubscribe(&sub, (CUpti_CallbackFunc)on_call, NULL));
    int graphs = p == P_GRAPH_ON || p >= P_GRAPH_ACTIVITY;
    const CUpti_CallbackId *cb = graphs ? cb_graph : cb_launch;
    for (int s = 0; s < 2; s++)
        CHECK_STATUS(cuptiEnableCallback(1, sub, dom[s], cb[s]));
    CHECK_STATUS(cuptiActivityEnable(graphs ? CUPTI_ACTIVITY_KIND_GRAPH_TRACE
                                     : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    if (p == P_GRAPH_ACTIVITY)
        CHECK_STATUS(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    float *d;
    CHECK_STATUS(cudaMalloc(&d, 1024 * sizeof *d));
    cudaStream_t st;
    CHECK_STATUS(cudaStreamCreate(&st));
    cudaGraphExec_t exec = NULL;
    if (graphs) {
        cudaGraph_t g;
        CHECK_STATUS(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
        for (int i = 0; i < 4; i++)
            if (p >= P_GRAPH_ACTIVITY)
                spin<<<1, 32, 0, st>>>(d);
            else
                tick<<<1, 32, 0, st>>>(d);
        CHECK_STATUS(cudaStreamEndCapture(st, &g));
        CHECK_STATUS(cudaGraphInstantiate(&exec, g, 0));
    }
    pthread_t t;
    if (p == P_THREAD || p == P_ACTIVITY || p == P_ACTIVITY_BUSY || p == P_GRAPH_ACTIVITY)
        CHECK_STATUS(pthread_create(&t, NULL, toggler, NULL));
    if (p == P_GRAPH_WINDOW) {
        CHECK_STATUS(sem_init(&close_sem, 0, 0));
        CHECK_STATUS(pthread_create(&t, NULL, closer, NULL));
    }
    unsigned long long calls = 0;
    for (int i = 0; i < iters; i++) {
        if (p == P_BETWEEN)
            for (int s = 0; s < 2; s++)
                CHECK_STATUS(cuptiEnableCallback((uint32_t)(i & 1), sub, dom[s], cb[s]));
        /* the nested phases: the runtime's callback off (on for nested-off) between calls,
         * switched inside the next call */
        if (p == P_NESTED_ON || p == P_GRAPH_ON)
            runtime_switch(0, cb);
        if (p == P_NESTED_OFF)
            runtime_switch(1, cb);
        if (p == P_EXIT_OFF)
            for (int s = 0; s < 2; s++)
                CHECK_STATUS(cuptiEnableCallback(1, sub, dom[s], cb[s]));
        if (graphs)
            CHECK_STATUS(cudaGraphLaunch(exec, st));
        else if (p == P_ACTIVITY_BUSY)
            spin<<<1, 32, 0, st>>>(d);
        else
            tick<<<1, 32, 0, st>>>(d);
        calls++;
        if (i % 256 == 255)
            CHECK_STATUS(cudaStreamSynchronize(st));
    }
    if (p == P_THREAD || p == P_ACTIVITY || p == P_ACTIVITY_BUSY || p == P_GRAPH_ACTIVITY ||
        p == P_GRAPH_WINDOW) {
        __atomic_store_n(&stop_thread, 1, __ATOMIC_RELAXED);
        if (p == P_GRAPH_WINDOW)
            sem_post(&close_sem);
        pthread_join(t, NULL);
    }
    CHECK_STATUS(cudaStreamSynchronize(st));
    CHECK_STATUS(cuptiActivityFlushAll(1));
    printf("%-10s calls %llu", phase_names[p], calls);
    for (int d = 0; d < 2; d++)
        printf(" | %s: enters %llu exits %llu unentered %llu twice %llu stale %llu id-again "
               "%llu", d ? "driver" : "runtime", enters[d], exits[d], exit_unentered[d],
               exit_twice[d], exit_stale[d], id_again[d]);
    printf(" | %s %llu with %llu ids, graph records %llu\n",
           p == P_GRAPH_ON ? "replays" : "kernels", kernels, kernel_ids, replays);
    /* graph phases' kernels share their replay's id */
    int sound = !exit_twice[0] && !exit_twice[1] && !exit_stale[0] && !exit_stale[1] &&
                !id_again[0] && !id_again[1] && (kernel_ids == kernels || p >= P_GRAPH_ACTIVITY);
    printf("%-10s %s\n", phase_names[p], sound ? "sound" : "NOT SOUND");
    fflush(stdout);
    return sound ? 0 : 2;
}

int main(int argc, char **argv)
{
    int iters = argc > 2 ? atoi(argv[2]) : 20000;
    if (argc > 1 && *argv[1]) {
        for (int p = 0; p < P_COUNT; p++)
            if (!strcmp(argv[1], phase_names[p]))
                return run_phase(p, iters);
        fprintf(stderr, "unknown phase %s\n", argv[1]);
        return 1;
    }
    int bad = 0;
    for (int p = 0; p < P_COUNT; p++) {
        fflush(stdout);
        pid_t c = fork();
        if (c == 0)
            _exit(run_phase(p, iters));
        int st = 0;
        waitpid(c, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            printf("%-10s ended %s %d\n", phase_names[p],
                   WIFSIGNALED(st) ? "by signal" : "with status",
                   WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
            bad++;
        }
    }
    return bad ? 2 : 0;
}
