/* Stands in for libcublas.so.13 on machines without a GPU: three GEMM entry points and
 * cublasGetMathMode, which count their calls and return success (CUBLAS_STATUS_INVALID_VALUE
 * for m < 0, as cuBLAS does). CI runs the collector's GEMM wrappers against it
 * (tests/gemm_capture.sh). Types are spelled as the ABI passes them, not from CUDA headers. */
#include <stdint.h>

__attribute__((visibility("default"))) int fake_cublas_calls;

#define EXPORT __attribute__((visibility("default")))

EXPORT int cublasGemmEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha,
                        const void *A, int at, int lda, const void *B, int bt, int ldb,
                        const void *beta, void *C, int ct, int ldc, int compute, int algo)
{
    (void)h, (void)ta, (void)tb, (void)n, (void)k, (void)alpha, (void)A, (void)at, (void)lda;
    (void)B, (void)bt, (void)ldb, (void)beta, (void)C, (void)ct, (void)ldc, (void)compute;
    (void)algo;
    fake_cublas_calls++;
    return m < 0 ? 7 : 0;
}

EXPORT int cublasSgemm_v2(void *h, int ta, int tb, int m, int n, int k, const float *alpha,
                          const float *A, int lda, const float *B, int ldb, const float *beta,
                          float *C, int ldc)
{
    (void)h, (void)ta, (void)tb, (void)n, (void)k, (void)alpha, (void)A, (void)lda, (void)B;
    (void)ldb, (void)beta, (void)C, (void)ldc;
    fake_cublas_calls++;
    return m < 0 ? 7 : 0;
}

EXPORT int cublasGemmStridedBatchedEx(void *h, int ta, int tb, int m, int n, int k,
                                      const void *alpha, const void *A, int at, int lda,
                                      long long sa, const void *B, int bt, int ldb, long long sb,
                                      const void *beta, void *C, int ct, int ldc, long long sc,
                                      int batch, int compute, int algo)
{
    (void)h, (void)ta, (void)tb, (void)n, (void)k, (void)alpha, (void)A, (void)at, (void)lda;
    (void)sa, (void)B, (void)bt, (void)ldb, (void)sb, (void)beta, (void)C, (void)ct, (void)ldc;
    (void)sc, (void)batch, (void)compute, (void)algo;
    fake_cublas_calls++;
    return m < 0 ? 7 : 0;
}

/* math mode 3: CUBLAS_TF32_TENSOR_OP_MATH, so Sgemm is recorded as TF32 compute */
EXPORT int cublasGetMathMode(void *h, int *mode)
{
    (void)h;
    *mode = 3;
    return 0;
}
