/* Host time of empty-kernel launches, shared by the in-process overhead probes
 * (launch_split.cu, window_cost.cu). */
#ifndef LP_BENCH_LAUNCH_TIME_CUH
#define LP_BENCH_LAUNCH_TIME_CUH

#include <cuda_runtime.h>
#include <time.h>

extern "C" __global__ void empty_kernel(void) {}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Host ns per launch of N empty kernels, synchronising every 256 (not timed) so the queue
 * never fills. */
static double launch_ns(int n)
{
    cudaDeviceSynchronize();
    double t0 = now_s(), waited = 0;
    for (int i = 0; i < n; i++) {
        empty_kernel<<<1, 1>>>();
        if (i % 256 == 255) {
            double s0 = now_s();
            cudaDeviceSynchronize();
            waited += now_s() - s0;
        }
    }
    cudaDeviceSynchronize();
    return (now_s() - t0 - waited) * 1e9 / n;
}

#endif
