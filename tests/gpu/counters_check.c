/* Three cuBLAS bf16 GEMMs of known FLOPs, each alone in an NVTX stage range, for issue 13's
 * cross-check: `llmprof record --counters` counts each range, `ncu --metrics` each kernel;
 * the two must agree. Shapes: a compute-bound square GEMM, a decode-like GEMV (one token
 * through an 8192 x 8192 weight: memory bound) and a middle one. Each runs once warm
 * outside any range first, so the ranges hold exactly one GEMM each. --twice measures the
 * three twice (the first range of a run also holds the range profiler's start).
 * Build: tests/gpu/build.sh. */
#include <cublas_v2.h>
#include <cuda.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        int rc_ = (int)(call);                                                             \
        if (rc_ != 0) {                                                                    \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, rc_);     \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

static const struct {
    const char *range;
    int m, n, k;
} shapes[] = {
    {"prefill square 4096", 4096, 4096, 4096},
    {"decode gemv 8192", 8192, 1, 8192},
    {"prefill mid 2048x512", 2048, 512, 2048},
};

int main(int argc, char **argv)
{
    int passes = argc > 1 && !strcmp(argv[1], "--twice") ? 3 : 2;
    CUdevice dev;
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    cublasHandle_t h;
    CHECK(cublasCreate(&h));
    CUdeviceptr a, b, c;
    size_t bytes = (size_t)8192 * 8192 * 2;
    CHECK(cuMemAlloc(&a, bytes));
    CHECK(cuMemAlloc(&b, bytes));
    CHECK(cuMemAlloc(&c, bytes));
    CHECK(cuMemsetD8(a, 0x3c, bytes));
    CHECK(cuMemsetD8(b, 0x3c, bytes));
    const float one = 1, zero = 0;
    for (int pass = 0; pass < passes; pass++) /* the first warms up, outside any range */
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
            if (pass)
                nvtxRangePushA(shapes[i].range);
            CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, shapes[i].m, shapes[i].n,
                               shapes[i].k, &one, (void *)a, CUDA_R_16BF, shapes[i].m,
                               (void *)b, CUDA_R_16BF, shapes[i].k, &zero, (void *)c,
                               CUDA_R_16BF, shapes[i].m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
            if (pass)
                nvtxRangePop();
            CHECK(cuCtxSynchronize());
        }
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        printf("%s: %.6g FLOPs (2 m n k)\n", shapes[i].range,
               2.0 * shapes[i].m * shapes[i].n * shapes[i].k);
    return 0;
}
