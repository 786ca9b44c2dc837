/* CUDA graphs through the CUDA API, for the graph provenance test (issue 18): one step of
 * three bf16 cublasGemmEx calls (decode-shaped, n = 1) and one small kernel of ours, run
 *
 *   eager          4 steps launched directly                 range "eager"
 *   capture        the step captured from a stream; instantiated  "capture"
 *   replay         4 replays on the capturing stream         "replay"
 *   replay_other   4 replays on a second stream              "replay_other"
 *   update         the step captured again on other buffers and given to the executable
 *                  graph with cudaGraphExecUpdate, then 4 replays      "replay_updated"
 *   set_params     our kernel's node given new arguments with
 *                  cudaGraphExecKernelNodeSetParams, then 2 replays    "replay_set"
 *
 * Each step runs inside a "step" range. tests/test_graphs.c holds the same shapes; keep the
 * two in step. Exits non-zero when a CUDA or cuBLAS call fails. */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>

#include "check.h"

enum { HIDDEN = 2048, QKV = 3072, FFN = 5632, REPS = 4 };

static const float one = 1.f, zero = 0.f;

__global__ void scale(__nv_bfloat16 *x, int n, float f)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = __float2bfloat16(__bfloat162float(x[i]) * f);
}

struct bufs {
    void *w1, *w2, *w3, *x, *y, *z;
};

static void gemm(cublasHandle_t h, int m, int k, const void *w, const void *x, void *y)
{
    /* y (m x 1) = W^T (m x k) x x (k x 1), as PyTorch's linear reaches cuBLAS */
    CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, 1, k, &one, w, CUDA_R_16BF, k, x,
                            CUDA_R_16BF, k, &zero, y, CUDA_R_16BF, m, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
}

static void step(cublasHandle_t h, cudaStream_t s, const struct bufs *b)
{
    nvtxRangePushA("step");
    gemm(h, QKV, HIDDEN, b->w1, b->x, b->y);               /* 3072 x 1 x 2048 */
    gemm(h, FFN, HIDDEN, b->w2, b->x, b->z);               /* 5632 x 1 x 2048 */
    scale<<<(FFN + 255) / 256, 256, 0, s>>>((__nv_bfloat16 *)b->z, FFN, 0.5f);
    CHECK(cudaGetLastError());
    gemm(h, HIDDEN, FFN, b->w3, b->z, b->x);               /* 2048 x 1 x 5632 */
    nvtxRangePop();
}

static void alloc(struct bufs *b)
{
    CHECK(cudaMalloc(&b->w1, (size_t)QKV * HIDDEN * 2));
    CHECK(cudaMalloc(&b->w2, (size_t)FFN * HIDDEN * 2));
    CHECK(cudaMalloc(&b->w3, (size_t)HIDDEN * FFN * 2));
    CHECK(cudaMalloc(&b->x, FFN * 2));
    CHECK(cudaMalloc(&b->y, FFN * 2));
    CHECK(cudaMalloc(&b->z, FFN * 2));
    CHECK(cudaMemset(b->x, 0, FFN * 2));
}

static cudaGraph_t capture(cublasHandle_t h, cudaStream_t s, const struct bufs *b)
{
    cudaGraph_t g;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    step(h, s, b);
    CHECK(cudaStreamEndCapture(s, &g));
    return g;
}

static void replays(const char *range, cudaGraphExec_t e, cudaStream_t s, int n)
{
    nvtxRangePushA(range);
    for (int i = 0; i < n; i++)
        CHECK(cudaGraphLaunch(e, s));
    CHECK(cudaStreamSynchronize(s));
    nvtxRangePop();
}

int main(void)
{
    struct bufs b1, b2;
    alloc(&b1);
    alloc(&b2);
    cudaStream_t s, other;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
    cublasHandle_t h;
    CHECK_BLAS(cublasCreate(&h));
    CHECK_BLAS(cublasSetStream(h, s));
    /* a workspace of our own: cuBLAS then allocates nothing while a stream is captured */
    void *ws;
    CHECK(cudaMalloc(&ws, 32u << 20));
    CHECK_BLAS(cublasSetWorkspace(h, ws, 32u << 20));

    nvtxRangePushA("eager");
    for (int i = 0; i < REPS; i++)
        step(h, s, &b1);
    CHECK(cudaStreamSynchronize(s));
    nvtxRangePop();

    nvtxRangePushA("capture");
    cudaGraph_t g = capture(h, s, &b1);
    cudaGraphExec_t e;
    CHECK(cudaGraphInstantiate(&e, g, 0));
    nvtxRangePop();

    replays("replay", e, s, REPS);
    replays("replay_other", e, other, REPS);

    nvtxRangePushA("update");
    cudaGraph_t g2 = capture(h, s, &b2);
    cudaGraphExecUpdateResultInfo info;
    CHECK(cudaGraphExecUpdate(e, g2, &info));
    nvtxRangePop();
    replays("replay_updated", e, s, REPS);

    /* our kernel's node, given a new factor */
    size_t n = 0;
    CHECK(cudaGraphGetNodes(g, NULL, &n));
    cudaGraphNode_t nodes[64];
    if (n > 64)
        n = 64;
    CHECK(cudaGraphGetNodes(g, nodes, &n));
    int set = 0;
    for (size_t i = 0; i < n && !set; i++) {
        cudaGraphNodeType type;
        CHECK(cudaGraphNodeGetType(nodes[i], &type));
        cudaKernelNodeParams p;
        if (type != cudaGraphNodeTypeKernel || cudaGraphKernelNodeGetParams(nodes[i], &p) ||
            p.func != (void *)scale)
            continue;
        float f = 0.25f;
        void *argv[] = {p.kernelParams[0], p.kernelParams[1], &f};
        p.kernelParams = argv;
        CHECK(cudaGraphExecKernelNodeSetParams(e, nodes[i], &p));
        set = 1;
    }
    if (!set) {
        fprintf(stderr, "graphs: our kernel's node was not found in the captured graph\n");
        return 1;
    }
    replays("replay_set", e, s, 2);

    CHECK(cudaGraphExecDestroy(e));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaGraphDestroy(g2));
    cublasDestroy(h);
    printf("graphs: %d eager steps, %d replays\n", REPS, 3 * REPS + 2);
    return 0;
}
