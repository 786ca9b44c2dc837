/* GEMMs of known shapes through every kind of cuBLAS entry point, for the GEMM capture
 * test: cublasGemmEx (bf16, fp16, tf32), cublasSgemm, cublasHgemm, strided-batched,
 * transposed operands, cublasLtMatmul (bf16 with a bias epilogue, fp8 e4m3), one call on a
 * second thread, and one call that fails (m = -1). tests/check_trace.c (mode "gemm") holds
 * the same list; keep the two in step. Exits non-zero if any call but the failing one
 * fails.
 *
 *   gemm --calls N   instead: N small bf16 GEMMs (64x64x64) in groups of 256 that never fill
 *                    the launch queue, and print the host time per call: what GEMM capture
 *                    adds to each call (bench/gemm_overhead.sh) */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

static const size_t BUF = 256u << 20;
static void *A, *B, *C, *bias, *workspace;
static const float one = 1.f, zero = 0.f;

static void *second_thread(void *arg)
{
    (void)arg;
    cublasHandle_t h;
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    CHECK_BLAS(cublasCreate(&h));
    CHECK_BLAS(cublasSetStream(h, s));
    CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 4096, 512, 4096, &one, A, CUDA_R_16BF,
                            4096, B, CUDA_R_16BF, 4096, &zero, C, CUDA_R_16BF, 4096,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CHECK(cudaStreamSynchronize(s));
    cublasDestroy(h);
    cudaStreamDestroy(s);
    return NULL;
}

static void lt_matmul(cublasLtHandle_t lt, cudaDataType ab, cudaDataType cd, int m, int n, int k,
                      cublasLtEpilogue_t epi)
{
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CHECK_BLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (epi != CUBLASLT_EPILOGUE_DEFAULT) {
        CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                                  sizeof epi));
        CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                  sizeof bias));
    }
    CHECK_BLAS(cublasLtMatrixLayoutCreate(&la, ab, k, m, k)); /* op(A) = A^T: m x k */
    CHECK_BLAS(cublasLtMatrixLayoutCreate(&lb, ab, k, n, k));
    CHECK_BLAS(cublasLtMatrixLayoutCreate(&lc, cd, m, n, m));
    CHECK_BLAS(cublasLtMatmul(lt, desc, &one, A, la, B, lb, &zero, C, lc, C, lc, NULL, workspace,
                              32u << 20, 0));
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(desc);
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int call_cost(long n)
{
    cublasHandle_t h;
    CHECK_BLAS(cublasCreate(&h));
    double in_calls = 0;
    long done = 0;
    while (done < n) {
        double t0 = now_ns();
        for (int i = 0; i < 256 && done < n; i++, done++)
            CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &one, A, CUDA_R_16BF,
                                    64, B, CUDA_R_16BF, 64, &zero, C, CUDA_R_16BF, 64,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        in_calls += now_ns() - t0;
        CHECK(cudaDeviceSynchronize());
    }
    printf("{\"calls\": %ld, \"ns_per_call\": %.1f}\n", n, in_calls / (double)n);
    cublasDestroy(h);
    return 0;
}

int main(int argc, char **argv)
{
    CHECK(cudaMalloc(&A, BUF));
    CHECK(cudaMalloc(&B, BUF));
    CHECK(cudaMalloc(&C, BUF));
    CHECK(cudaMalloc(&bias, 1 << 20));
    CHECK(cudaMalloc(&workspace, 32u << 20));
    CHECK(cudaMemset(A, 0, BUF));
    CHECK(cudaMemset(B, 0, BUF));
    CHECK(cudaMemset(bias, 0, 1 << 20));
    if (argc == 3 && !strcmp(argv[1], "--calls"))
        return call_cost(atol(argv[2]));
    cublasHandle_t h;
    CHECK_BLAS(cublasCreate(&h));
    const __half hone = __float2half(1.f), hzero = __float2half(0.f);
    for (int rep = 0; rep < 3; rep++) {
        /* prefill-like bf16 projection */
        CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 4096, 512, 4096, &one, A,
                                CUDA_R_16BF, 4096, B, CUDA_R_16BF, 4096, &zero, C, CUDA_R_16BF,
                                4096, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        /* decode-like: one token, fp16, A transposed */
        CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 11008, 1, 4096, &one, A, CUDA_R_16F,
                                4096, B, CUDA_R_16F, 4096, &zero, C, CUDA_R_16F, 11008,
                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    for (int rep = 0; rep < 2; rep++) {
        /* dimensions that fit no tile, tf32 */
        CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, 1000, 333, 777, &one, A, CUDA_R_32F,
                                1000, B, CUDA_R_32F, 333, &zero, C, CUDA_R_32F, 1000,
                                CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
        CHECK_BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 512, 512, 512, &one, (float *)A, 512,
                               (float *)B, 512, &zero, (float *)C, 512));
        /* attention-like batched product */
        CHECK_BLAS(cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 128, 512, 64, &one, A,
                                              CUDA_R_16BF, 64, 128 * 64, B, CUDA_R_16BF, 64,
                                              512 * 64, &zero, C, CUDA_R_16BF, 128, 128 * 512, 32,
                                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    CHECK_BLAS(cublasHgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 256, 128, 64, &hone, (__half *)A, 256,
                           (__half *)B, 64, &hzero, (__half *)C, 256));
    /* a call cuBLAS refuses: recorded with its status, launches nothing */
    cublasStatus_t bad = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 8, 8, &one, A, CUDA_R_16BF,
                                      8, B, CUDA_R_16BF, 8, &zero, C, CUDA_R_16BF, 8,
                                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (bad != CUBLAS_STATUS_INVALID_VALUE) {
        fprintf(stderr, "m = -1: expected CUBLAS_STATUS_INVALID_VALUE, got %d\n", (int)bad);
        return 1;
    }
    cublasLtHandle_t lt;
    CHECK_BLAS(cublasLtCreate(&lt));
    for (int rep = 0; rep < 2; rep++) {
        lt_matmul(lt, CUDA_R_16BF, CUDA_R_16BF, 2048, 256, 1024, CUBLASLT_EPILOGUE_BIAS);
        lt_matmul(lt, CUDA_R_8F_E4M3, CUDA_R_16BF, 4096, 512, 4096, CUBLASLT_EPILOGUE_DEFAULT);
    }
    CHECK(cudaDeviceSynchronize());
    pthread_t th;
    pthread_create(&th, NULL, second_thread, NULL);
    pthread_join(th, NULL);
    cublasLtDestroy(lt);
    cublasDestroy(h);
    printf("gemm: all calls done\n");
    return 0;
}
