/* A synthetic trace shaped like batch-1 decode of a 22-layer model, for timing
 * `llmprof report` on large traces: STEPS decode ranges of 1000 kernels each (one prefill
 * range first), every kernel with its launch call, NVML every 50 ms. Not a measurement:
 * only the analysis time and memory are benchmarked on it.
 * Usage: gen_trace OUT.lpt KERNELS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmprof/trace.h"

static const char *const names[] = {
    "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT", "nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN",
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_",
    "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOpsIffffEEjfLi4ELi4EEEEEvT1_",
    "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1",
    "_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_22gpu_kernel_impl_nocastIZZZNS0_23direct_copy_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE8_clEvEUlN3c108BFloat16EE_EEvS4_RKT_EUliE_EEviT1_",
    "rms_norm_kernel", "silu_and_mul_kernel", "rotary_embedding_kernel", "argmax_kernel"};
#define N_NAMES (sizeof names / sizeof *names)

static int add(struct lp_trace_writer *w, struct lp_record *r)
{
    return lp_trace_writer_add(w, r);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: gen_trace OUT.lpt KERNELS\n");
        return 2;
    }
    long n = atol(argv[2]);
    struct lp_trace_writer *w;
    char err[256];
    if (lp_trace_writer_open(&w, argv[1], NULL, err, sizeof err) != LP_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    lp_trace_writer_set_meta(w, "command", "bench/gen_trace (synthetic)");
    /* the recording's start, as the collector writes it (the first record's time below):
     * the report takes the header's window, as it does for real traces */
    lp_trace_writer_set_meta(w, "start_trace_ns", "1000000000");
    lp_trace_writer_write_header(w);
    lp_str ids[N_NAMES];
    for (size_t i = 0; i < N_NAMES; i++)
        ids[i] = lp_trace_writer_intern(w, names[i]);
    lp_str launch = lp_trace_writer_intern(w, "cudaLaunchKernel");
    struct lp_record r = {.type = LP_REC_DEVICE};
    r.u.device = (struct lp_device){.name = lp_trace_writer_intern(w, "NVIDIA H200"),
                                    .cc_major = 9, .sm_count = 132};
    add(w, &r);
    const long per_step = 1000;
    uint64_t t = 1000000000ull, next_nvml = t;
    uint32_t corr = 1, marker = 1;
    int rc = 0;
    for (long k = 0; k < n && rc == 0;) {
        uint64_t step_start = t;
        char name[64];
        snprintf(name, sizeof name, k == 0 ? "prefill tokens=512" : "decode step=%ld tokens=1",
                 k / per_step);
        r.type = LP_REC_MARKER;
        r.u.marker = (struct lp_marker){.timestamp = t, .id = marker, .flags = LP_MARKER_FLAG_START,
                                        .name = lp_trace_writer_intern(w, name), .thread = 1};
        rc |= add(w, &r);
        for (long j = 0; j < per_step && k < n; j++, k++) {
            uint64_t dur = 1500 + (uint64_t)(k * 7919 % 9000);
            r.type = LP_REC_API;
            r.u.api = (struct lp_api){.start = t, .end = t + 2500, .correlation = corr,
                                      .thread = 1, .domain = LP_API_DOMAIN_RUNTIME, .cbid = 211,
                                      .name = launch};
            rc |= add(w, &r);
            r.type = LP_REC_KERNEL;
            r.u.kernel = (struct lp_kernel){.start = t + 4000, .end = t + 4000 + dur,
                                            .name = ids[(size_t)(k * 31 % N_NAMES)],
                                            .correlation = corr, .stream = 7,
                                            .grid = {132, 1, 1}, .block = {128, 1, 1},
                                            .registers = 64};
            rc |= add(w, &r);
            corr++;
            t += 3000 + (dur > 3000 ? dur - 3000 : 0);
        }
        r.type = LP_REC_MARKER;
        r.u.marker = (struct lp_marker){.timestamp = t, .id = marker++, .flags = LP_MARKER_FLAG_END,
                                        .thread = 1};
        rc |= add(w, &r);
        for (; next_nvml < t; next_nvml += 50000000) {
            r.type = LP_REC_NVML;
            r.u.nvml = (struct lp_nvml_sample){
                .timestamp = next_nvml, .valid = LP_NVML_FIELD_POWER | LP_NVML_FIELD_ENERGY | LP_NVML_FIELD_SM_CLOCK,
                .power_mw = 300000, .energy_mj = (next_nvml - 1000000000ull) / 1000000 * 300,
                .sm_mhz = 1980};
            rc |= add(w, &r);
        }
        (void)step_start;
    }
    rc |= lp_trace_writer_close(w);
    if (rc) {
        fprintf(stderr, "gen_trace: writing %s failed\n", argv[1]);
        return 1;
    }
    return 0;
}
