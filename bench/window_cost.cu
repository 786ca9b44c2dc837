/* window_cost: what a capture window leaves behind, in C, inside one process. Host ns per
 * empty-kernel launch in BLOCKS blocks before the process's first cudaProfilerStart, then a
 * window (cudaProfilerStart, 1,000 launches, cudaProfilerStop), a pause in which a profiler
 * that switches kernel activity off once the GPU has run the window's work (llmprof
 * --capture cuda-profiler, libfloor.so's stop modes) has done so, and BLOCKS blocks after.
 * Prints one JSON line: the medians before and after, and after/before − 1. Run under
 * a profiler, and without one to measure how a process drifts from its start to its end
 * (tests/gpu/window_cost.sh pairs them by round).
 * Usage: window_cost [LAUNCHES_PER_BLOCK [BLOCKS]]   (default 20000, 7) */
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "launch_time.cuh"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of BLOCKS blocks of N launches. */
static double blocks_ns(int n, int blocks, double *v)
{
    for (int i = 0; i < blocks; i++)
        v[i] = launch_ns(n);
    qsort(v, (size_t)blocks, sizeof *v, cmp_double);
    return blocks % 2 ? v[blocks / 2] : (v[blocks / 2 - 1] + v[blocks / 2]) / 2;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20000, blocks = argc > 2 ? atoi(argv[2]) : 7;
    if (n < 256 || blocks < 1 || blocks > 1000) {
        fprintf(stderr, "usage: window_cost [LAUNCHES_PER_BLOCK>=256 [BLOCKS 1..1000]]\n");
        return 2;
    }
    double *v = (double *)calloc((size_t)blocks, sizeof *v);
    if (!v || cudaFree(0) != cudaSuccess) {
        fprintf(stderr, "window_cost: no CUDA device or no memory\n");
        return 1;
    }
    launch_ns(n); /* module load, first launches */
    double before = blocks_ns(n, blocks, v);
    cudaProfilerStart();
    launch_ns(1000);
    cudaProfilerStop();
    cudaDeviceSynchronize();
    struct timespec pause = {0, 200000000};
    nanosleep(&pause, NULL);
    double after = blocks_ns(n, blocks, v);
    printf("{\"before_ns\": %.1f, \"after_ns\": %.1f, \"change\": %.5f}\n", before, after,
           after / before - 1);
    free(v);
    return 0;
}
