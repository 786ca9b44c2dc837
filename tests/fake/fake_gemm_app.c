/* A GEMM-calling program for CI (tests/gemm_capture.sh): starts the collector as the CUDA
 * driver would (fake_cuda_app.c), then calls the fake cuBLAS (fake_cublas.c) with known
 * shapes, one call from a second thread and one failing call, and prints how many calls
 * reached the library and what the failing one returned: the same with and without
 * llmprof. check_trace's "gemm-fake" mode holds the same list. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

extern int fake_cublas_calls;
int cublasGemmEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A,
                 int at, int lda, const void *B, int bt, int ldb, const void *beta, void *C,
                 int ct, int ldc, int compute, int algo);
int cublasSgemm_v2(void *h, int ta, int tb, int m, int n, int k, const float *alpha,
                   const float *A, int lda, const float *B, int ldb, const float *beta, float *C,
                   int ldc);
int cublasGemmStridedBatchedEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha,
                               const void *A, int at, int lda, long long sa, const void *B,
                               int bt, int ldb, long long sb, const void *beta, void *C, int ct,
                               int ldc, long long sc, int batch, int compute, int algo);

enum { BF16 = 14, FP32 = 0, COMPUTE_32F = 68 };

static void *other_thread(void *arg)
{
    (void)arg;
    cublasGemmEx(NULL, 0, 0, 4096, 512, 4096, NULL, NULL, BF16, 4096, NULL, BF16, 4096, NULL,
                 NULL, BF16, 4096, COMPUTE_32F, -1);
    return NULL;
}

int main(void)
{
    const char *lib = getenv("CUDA_INJECTION64_PATH");
    if (lib) {
        void *h = dlopen(lib, RTLD_NOW);
        int (*init)(void) = NULL;
        if (h)
            *(void **)&init = dlsym(h, "InitializeInjection");
        if (!init)
            return 99;
        init();
    }
    for (int i = 0; i < 3; i++)
        cublasGemmEx(NULL, 0, 0, 4096, 512, 4096, NULL, NULL, BF16, 4096, NULL, BF16, 4096, NULL,
                     NULL, BF16, 4096, COMPUTE_32F, -1);
    for (int i = 0; i < 2; i++)
        cublasSgemm_v2(NULL, 1, 0, 1000, 7, 333, NULL, NULL, 333, NULL, 333, NULL, NULL, 1000);
    cublasGemmStridedBatchedEx(NULL, 1, 0, 128, 512, 64, NULL, NULL, BF16, 64, 0, NULL, BF16, 64,
                               0, NULL, NULL, BF16, 128, 0, 32, COMPUTE_32F, -1);
    int bad = cublasGemmEx(NULL, 0, 0, -1, 8, 8, NULL, NULL, BF16, 8, NULL, BF16, 8, NULL, NULL,
                           BF16, 8, COMPUTE_32F, -1);
    pthread_t t;
    pthread_create(&t, NULL, other_thread, NULL);
    pthread_join(t, NULL);
    printf("calls=%d failing=%d\n", fake_cublas_calls, bad);
    return 0;
}
