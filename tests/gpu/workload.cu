/* A CUDA C workload whose recorded trace is known exactly: cuBLAS GEMMs, its own
 * kernels, a CUDA graph, copies, a memset, nested NVTX push/pop ranges, a start/end
 * range closed on another thread and a range in a named domain. tests/check_workload.c
 * holds the expectations; keep the two in step.
 *
 *   workload            run once and exit 0
 *   workload --loop S   repeat "iter" ranges of small kernels for S seconds (kill tests)
 *   workload --cupti-first  subscribe to CUPTI before CUDA starts (as nsys or ncu would),
 *                       then run as plain `workload`: llmprof must stand aside
 *   workload --launches N  launch N empty kernels back to back and print the CPU time per
 *                       launch: the launch-bound regime of LLM decode (bench/launch_overhead.sh)
 */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

enum { BYTES = 1 << 20, N = BYTES / 4, GEMM = 256 };

extern "C" __global__ void scale_kernel(float *x, int n, float a)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] *= a;
}

extern "C" __global__ void add_kernel(float *y, const float *x, int n)
{
    extern __shared__ float tile[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? x[i] : 0.f;
    __syncthreads();
    if (i < n)
        y[i] += tile[threadIdx.x];
}

extern "C" __global__ void empty_kernel(void) {}

static void CUPTIAPI no_callbacks(void *, CUpti_CallbackDomain, CUpti_CallbackId, const void *) {}

static nvtxRangeId_t worker_range;

static void *end_on_other_thread(void *arg)
{
    (void)arg;
    nvtxRangeEnd(worker_range);
    return NULL;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int loop(double seconds)
{
    float *d;
    CHECK(cudaMalloc(&d, BYTES));
    CHECK(cudaMemset(d, 0, BYTES));
    double end = now_s() + seconds;
    for (int it = 0; now_s() < end; it++) {
        char name[64];
        snprintf(name, sizeof name, "iter i=%d", it);
        nvtxRangePushA(name);
        for (int k = 0; k < 4; k++)
            scale_kernel<<<N / 256, 256>>>(d, N, 1.0f);
        CHECK(cudaDeviceSynchronize());
        nvtxRangePop();
        if (it % 100 == 0) {
            printf("iter %d\n", it);
            fflush(stdout);
        }
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    CHECK(cudaFree(d));
    return 0;
}

static int launches(long n)
{
    CHECK(cudaFree(0));
    /* a stage range, so that --counters counts the loop (its set-up falls in the warm-up) */
    nvtxRangePushA("decode");
    for (int i = 0; i < 1000; i++) /* warm up: module load, first launches */
        empty_kernel<<<1, 32>>>();
    CHECK(cudaDeviceSynchronize());
    double t0 = now_s();
    for (long i = 0; i < n; i++)
        empty_kernel<<<1, 32>>>();
    double t1 = now_s();
    CHECK(cudaDeviceSynchronize());
    double t2 = now_s();
    nvtxRangePop();
    printf("{\"launches\": %ld, \"ns_per_launch\": %.1f, \"ns_per_kernel_incl_drain\": %.1f}\n", n,
           (t1 - t0) * 1e9 / (double)n, (t2 - t0) * 1e9 / (double)n);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--loop"))
        return loop(atof(argv[2]));
    if (argc == 3 && !strcmp(argv[1], "--launches"))
        return launches(atol(argv[2]));
    if (argc == 2 && !strcmp(argv[1], "--cupti-first")) {
        CUpti_SubscriberHandle sub;
        printf("own cuptiSubscribe: %d\n", (int)cuptiSubscribe(&sub, no_callbacks, NULL));
    }

    nvtxRangePushA("workload");

    nvtxRangePushA("setup");
    float *a, *b, *c;
    float *host = (float *)malloc(BYTES);
    for (int i = 0; i < N; i++)
        host[i] = (float)(i % 7);
    CHECK(cudaMalloc(&a, BYTES));
    CHECK(cudaMalloc(&b, BYTES));
    CHECK(cudaMalloc(&c, BYTES));
    CHECK(cudaMemcpy(a, host, BYTES, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b, host, BYTES, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(c, 0, BYTES));
    nvtxRangePop();

    nvtxRangePushA("gemms");
    cublasHandle_t h;
    CHECK_BLAS(cublasCreate(&h));
    const float one = 1.f, zero = 0.f;
    /* bf16 inputs, fp32 accumulate: three GEMMs on the same buffers */
    for (int i = 0; i < 3; i++)
        CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, GEMM, GEMM, GEMM, &one, a, CUDA_R_16BF,
                                GEMM, b, CUDA_R_16BF, GEMM, &zero, c, CUDA_R_16BF, GEMM,
                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CHECK(cudaDeviceSynchronize());
    nvtxRangePop();

    nvtxRangePushA("kernels");
    for (int i = 0; i < 10; i++)
        scale_kernel<<<N / 256, 256>>>(a, N, 1.0f);
    for (int i = 0; i < 5; i++)
        add_kernel<<<N / 128, 128, 128 * sizeof(float)>>>(c, a, N);
    CHECK(cudaDeviceSynchronize());
    nvtxRangePop();

    nvtxRangePushA("graph");
    cudaStream_t s;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < 3; i++)
        scale_kernel<<<N / 256, 256, 0, s>>>(b, N, 1.0f);
    CHECK(cudaStreamEndCapture(s, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    nvtxRangePop();

    worker_range = nvtxRangeStartA("worker");
    pthread_t t;
    pthread_create(&t, NULL, end_on_other_thread, NULL);
    pthread_join(t, NULL);

    nvtxDomainHandle_t dom = nvtxDomainCreateA("llmprof-test");
    nvtxEventAttributes_t attr;
    memset(&attr, 0, sizeof attr);
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attr.message.ascii = "domain range";
    nvtxDomainRangePushEx(dom, &attr);
    CHECK(cudaMemcpy(host, c, BYTES, cudaMemcpyDeviceToHost));
    nvtxDomainRangePop(dom);

    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaStreamDestroy(s));
    CHECK_BLAS(cublasDestroy(h));
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    CHECK(cudaFree(c));
    free(host);
    nvtxRangePop();
    printf("workload ok\n");
    return 0;
}
