/* launch_split: what each part of llmprof's per-launch work costs, in C, inside one process
 * so that the host's drift between processes falls out. The phases are libcupti_phases.so's
 * (bench/cupti_phases.c lists them). Each round runs every phase once, in rotating order; per
 * phase the table gives the median host time of an empty-kernel launch, of a cudaGetDevice
 * and of a cuCtxGetCurrent (calls that are not traced, as PyTorch makes several per op), and,
 * paired per round, the launch's difference from the floor and from CUPTI finalized. With
 * LSP_NVTX=1, also how many of the NVTX range pushes made once per phase and round CUPTI
 * delivered in each phase (whether NVTX survives a finalize).
 * Usage: launch_split [CALLS_PER_PHASE [ROUNDS]]   (default 20000, 15) */
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern "C" {
int lsp_init(void);
int lsp_phase(int phase);
const char *lsp_phase_name(int phase);
int lsp_phases(void);
void lsp_counts(uint64_t *kernel_records, uint64_t *launch_records);
uint64_t lsp_correlation_resets(void);
long long lsp_nvtx_seen(int phase);
uint64_t lsp_phase_kernels(int phase);
}

#include "launch_time.cuh"

static double get_device_ns(int n)
{
    int d = 0;
    double t0 = now_s();
    for (int i = 0; i < n; i++)
        cudaGetDevice(&d);
    return (now_s() - t0) * 1e9 / n;
}

static double ctx_current_ns(int n)
{
    CUcontext c = NULL;
    double t0 = now_s();
    for (int i = 0; i < n; i++)
        cuCtxGetCurrent(&c);
    return (now_s() - t0) * 1e9 / n;
}

/* The phase named NAME, or -1. */
static int phase_index(const char *name)
{
    for (int p = 0; p < lsp_phases(); p++)
        if (!strcmp(lsp_phase_name(p), name))
            return p;
    return -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

enum { MEASURES = 3 };

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20000, rounds = argc > 2 ? atoi(argv[2]) : 15;
    if (n < 256 || rounds < 1 || rounds > 1000) {
        fprintf(stderr, "usage: launch_split [CALLS_PER_PHASE>=256 [ROUNDS 1..1000]]\n");
        return 2;
    }
    int rc = lsp_init();
    if (rc) {
        fprintf(stderr, "launch_split: CUPTI could not be set up (%d)\n", rc);
        return 1;
    }
    cudaFree(0);
    launch_ns(n); /* module load, first launches */
    int phases = lsp_phases(), refs[2] = {phase_index("floor"), phase_index("detached")};
    if (refs[0] < 0 || refs[1] < 0) {
        fprintf(stderr, "launch_split: libcupti_phases.so has no floor or detached phase\n");
        return 1;
    }
    double *t = (double *)calloc((size_t)rounds * phases * MEASURES, sizeof *t);
    double *col = (double *)calloc((size_t)rounds, sizeof *col);
    if (!t || !col)
        return 1;
    for (int r = 0; r < rounds; r++)
        for (int j = 0; j < phases; j++) {
            int p = (r + j) % phases;
            cudaDeviceSynchronize();
            if ((rc = lsp_phase(p)) != 0) {
                fprintf(stderr, "launch_split: phase %s could not be set (%d)\n",
                        lsp_phase_name(p), rc);
                return 1;
            }
            double *m = &t[(r * phases + p) * MEASURES];
            m[0] = launch_ns(n);
            m[1] = get_device_ns(n);
            m[2] = ctx_current_ns(n);
            nvtxRangePushA("launch_split"); /* counted by CUPTI under LSP_NVTX */
            nvtxRangePop();
        }
    cudaDeviceSynchronize();
    lsp_phase(0);
    printf("launch_split: %d calls of each kind per phase, %d rounds, phases in rotating order; "
           "host ns per call, medians over rounds\n", n, rounds);
    printf("%-12s %8s %33s %33s %14s %16s\n", "phase", "launch", "vs floor (range) above",
           "vs detached (range) above", "cudaGetDevice", "cuCtxGetCurrent");
    for (int p = 0; p < phases; p++) {
        double med[MEASURES];
        for (int k = 0; k < MEASURES; k++) {
            for (int r = 0; r < rounds; r++)
                col[r] = t[(r * phases + p) * MEASURES + k];
            med[k] = median(col, rounds);
        }
        printf("%-12s %8.0f", lsp_phase_name(p), med[0]);
        for (int f = 0; f < 2; f++) {
            double lo = 1e30, hi = -1e30;
            int above = 0;
            for (int r = 0; r < rounds; r++) {
                col[r] = t[(r * phases + p) * MEASURES] - t[(r * phases + refs[f]) * MEASURES];
                lo = col[r] < lo ? col[r] : lo;
                hi = col[r] > hi ? col[r] : hi;
                above += col[r] > 0;
            }
            printf(" %+8.0f (%+6.0f ... %+6.0f) %2d/%-2d", median(col, rounds), lo, hi, above,
                   rounds);
        }
        printf(" %14.1f %16.1f\n", med[1], med[2]);
    }
    uint64_t k = 0, l = 0;
    lsp_counts(&k, &l);
    printf("records: %llu kernels, %llu launch records pushed; a traced call's correlation id "
           "was lower than the one before %llu times (finalizing restarts them?)\n",
           (unsigned long long)k, (unsigned long long)l,
           (unsigned long long)lsp_correlation_resets());
    printf("kernel records per phase:");
    for (int p = 0; p < phases; p++)
        printf(" %s %llu", lsp_phase_name(p), (unsigned long long)lsp_phase_kernels(p));
    printf("\n");
    if (lsp_nvtx_seen(0) >= 0) {
        printf("nvtxRangePushA calls CUPTI delivered per phase (one a round):");
        for (int p = 0; p < phases; p++)
            printf(" %s %lld", lsp_phase_name(p), lsp_nvtx_seen(p));
        printf("\n");
    }
    free(t);
    free(col);
    return 0;
}
