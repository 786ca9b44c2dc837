/* Error checks of the GPU test programs: a failed CUDA, CUPTI or cuBLAS call ends the
 * program with its file, line and status, so a GPU test never goes on with a broken setup. */
#ifndef LP_TESTS_GPU_CHECK_H
#define LP_TESTS_GPU_CHECK_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(x)                                                                           \
    do {                                                                                   \
        cudaError_t e_ = (x);                                                              \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));   \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)
/* Any call whose status is an integer, 0 on success (CUPTI's too). */
#define CHECK_STATUS(x)                                                                    \
    do {                                                                                   \
        int rc_ = (int)(x);                                                                \
        if (rc_) {                                                                         \
            fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #x, rc_);             \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)
#define CHECK_BLAS(x)                                                                      \
    do {                                                                                   \
        cublasStatus_t s_ = (x);                                                           \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                 \
            fprintf(stderr, "%s:%d: cublas status %d\n", __FILE__, __LINE__, (int)s_);     \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#endif
