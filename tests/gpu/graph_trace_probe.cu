/* What CUPTI records for CUDA-graph replays when graph-level records
 * (CUPTI_ACTIVITY_KIND_GRAPH_TRACE) and kernel records are switched on and off between
 * replays, and whether the choice is made at instantiation or at launch. llmprof's
 * `record --graphs` and its capture windows rely on the answers (docs/collector.md).
 * Each phase replays the graphs, runs one eager kernel, synchronises and flushes, then
 * prints the records it got: kernel records of graph nodes, of eager launches, and graph
 * records, each per graph. Needs a GPU; tests/gpu/build.sh builds it. */
#include <cuda_runtime.h>
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define NODES 8
#define REPLAYS 5

__global__ void tick(float *p) { p[threadIdx.x] += 1.0f; }

static unsigned long long node_k[4], eager_k, graph_r[4];
static unsigned graph_ids[4]; /* graph ids seen, in order */

static int slot(unsigned id)
{
    for (int i = 0; i < 4; i++)
        if (graph_ids[i] == id || graph_ids[i] == 0) {
            graph_ids[i] = id;
            return i;
        }
    return 3;
}

static void CUPTIAPI requested(uint8_t **buf, size_t *size, size_t *max)
{
    *buf = (uint8_t *)aligned_alloc(8, 1 << 20);
    *size = 1 << 20;
    *max = 0;
}

static void CUPTIAPI completed(CUcontext, uint32_t, uint8_t *buf, size_t, size_t valid)
{
    CUpti_Activity *a = NULL;
    while (valid && cuptiActivityGetNextRecord(buf, valid, &a) == CUPTI_SUCCESS) {
        if (a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)a;
            if (k->graphId)
                node_k[slot(k->graphId)]++;
            else
                eager_k++;
        } else if (a->kind == CUPTI_ACTIVITY_KIND_GRAPH_TRACE) {
            graph_r[slot(((const CUpti_ActivityGraphTrace2 *)a)->graphId)]++;
        }
    }
    free(buf);
}

static float *d;
static cudaStream_t s;

static cudaGraphExec_t make_graph(void)
{
    cudaGraph_t g;
    cudaGraphExec_t e;
    CHECK_STATUS(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < NODES; i++)
        tick<<<1, 32, 0, s>>>(d);
    CHECK_STATUS(cudaStreamEndCapture(s, &g));
    CHECK_STATUS(cudaGraphInstantiate(&e, g, 0));
    return e;
}

static void phase(const char *what, cudaGraphExec_t *e, int n)
{
    for (int r = 0; r < REPLAYS; r++)
        for (int i = 0; i < n; i++)
            CHECK_STATUS(cudaGraphLaunch(e[i], s));
    tick<<<1, 32, 0, s>>>(d);
    CHECK_STATUS(cudaStreamSynchronize(s));
    CHECK_STATUS(cuptiActivityFlushAll(1));
    printf("%-58s eager kernels %llu", what, eager_k);
    for (int i = 0; i < n; i++)
        printf(" | graph %c: node kernels %llu, graph records %llu", 'A' + i, node_k[i],
               graph_r[i]);
    printf("\n");
    eager_k = 0;
    for (int i = 0; i < 4; i++)
        node_k[i] = graph_r[i] = 0;
}

#define ON(kind) CHECK_STATUS(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_##kind))
#define OFF(kind) CHECK_STATUS(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_##kind))

/* Each scenario runs in its own process: a switch that crashes CUPTI ends only it. */
static void scenario(int n, cudaGraphExec_t *e)
{
    switch (n) {
    case 1: /* graph trace from the start, then off and on (the windows' question) */
        ON(CONCURRENT_KERNEL);
        ON(GRAPH_TRACE);
        e[0] = make_graph();
        phase("1a kernel + graph trace on before A", e, 1);
        OFF(GRAPH_TRACE);
        phase("1b graph trace off", e, 1);
        e[1] = make_graph();
        phase("1c B made with graph trace off", e, 2);
        ON(GRAPH_TRACE);
        phase("1d graph trace on again", e, 2);
        break;
    case 2: /* graph trace stays on, kernel records switched (windows in replay mode) */
        ON(CONCURRENT_KERNEL);
        ON(GRAPH_TRACE);
        e[0] = make_graph();
        OFF(CONCURRENT_KERNEL);
        phase("2a kernel off, graph trace on", e, 1);
        ON(CONCURRENT_KERNEL);
        phase("2b kernel on again", e, 1);
        OFF(CONCURRENT_KERNEL);
        OFF(GRAPH_TRACE);
        phase("2c both off", e, 1);
        ON(GRAPH_TRACE);
        ON(CONCURRENT_KERNEL);
        phase("2d both on again", e, 1);
        break;
    case 3: /* graph trace only */
        ON(GRAPH_TRACE);
        e[0] = make_graph();
        phase("3a graph trace only", e, 1);
        ON(CONCURRENT_KERNEL);
        phase("3b kernel on too", e, 1);
        break;
    case 4: /* graph trace enabled after a graph was instantiated without it */
        ON(CONCURRENT_KERNEL);
        e[0] = make_graph();
        phase("4a kernel on, A made", e, 1);
        ON(GRAPH_TRACE);
        e[1] = make_graph();
        phase("4b graph trace on after A, B made", e, 2);
        break;
    case 5: /* as 4, but A is never replayed after graph trace goes on */
        ON(CONCURRENT_KERNEL);
        e[0] = make_graph();
        ON(GRAPH_TRACE);
        e[1] = make_graph();
        phase("5a graph trace on after A; only B replayed", e + 1, 1);
        break;
    case 6: /* graph trace on while no graph exists yet but CUDA is running */
        ON(CONCURRENT_KERNEL);
        phase("6a eager only", e, 0);
        ON(GRAPH_TRACE);
        e[0] = make_graph();
        phase("6b graph trace on, then A made", e, 1);
        break;
    }
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc > 1) {
        cudaGraphExec_t e[3];
        CHECK_STATUS(cuptiActivityRegisterCallbacks(requested, completed));
        CHECK_STATUS(cudaMalloc(&d, 1024));
        CHECK_STATUS(cudaStreamCreate(&s));
        scenario(atoi(argv[1]), e);
        return 0;
    }
    printf("each graph: %d kernel nodes, %d replays per phase\n", NODES, REPLAYS);
    for (int n = 1; n <= 6; n++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            char arg[8];
            snprintf(arg, sizeof arg, "%d", n);
            execl("/proc/self/exe", argv[0], arg, (char *)NULL);
            _exit(127);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        if (WIFSIGNALED(st))
            printf("scenario %d: killed by signal %d\n", n, WTERMSIG(st));
        else if (WEXITSTATUS(st))
            printf("scenario %d: exit %d\n", n, WEXITSTATUS(st));
    }
    return 0;
}
