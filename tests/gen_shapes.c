/* A trace whose every cuBLAS call is a GEMM shape of its own (m = 1, 2, ...), each launching
 * one kernel, for the tests of the GEMM table's bound (LP_GEMM_ROWS_MAX listed, the rest
 * counted). Synthetic: no timing in it is a measurement.
 * Usage: gen_shapes OUT.lpt SHAPES */
#include <stdio.h>
#include <stdlib.h>

#include "llmprof/trace.h"

int main(int argc, char **argv)
{
    long n = argc == 3 ? atol(argv[2]) : -1;
    if (n < 0) {
        fprintf(stderr, "usage: gen_shapes OUT.lpt SHAPES\n");
        return 2;
    }
    struct lp_trace_writer *w;
    char err[256];
    if (lp_trace_writer_open(&w, argv[1], NULL, err, sizeof err) != LP_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    lp_trace_writer_set_meta(w, "command", "tests/gen_shapes (synthetic)");
    lp_trace_writer_set_meta(w, "gemm", "on");
    lp_trace_writer_write_header(w);
    struct lp_record r = {.type = LP_REC_DEVICE};
    r.u.device = (struct lp_device){.name = lp_trace_writer_intern(w, "NVIDIA H200"),
                                    .cc_major = 9, .sm_count = 132};
    int rc = lp_trace_writer_add(w, &r);
    lp_str api = lp_trace_writer_intern(w, "cublasGemmEx"),
           launch = lp_trace_writer_intern(w, "cudaLaunchKernel"),
           name = lp_trace_writer_intern(w, "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT");
    uint64_t t = 1000000000ull;
    for (long i = 0; i < n && rc == 0; i++, t += 10000) {
        uint32_t corr = (uint32_t)i + 1;
        r.type = LP_REC_GEMM;
        r.u.gemm = (struct lp_gemm){.start = t, .end = t + 3000, .thread = 1, .api = api,
                                    .m = 1 + (uint64_t)i, .n = 4096, .k = 4096, .batch = 1,
                                    .a_type = 14, .b_type = 14, .c_type = 14, .d_type = 14,
                                    .compute_type = 68, .algo = -1, .epilogue = 1};
        rc |= lp_trace_writer_add(w, &r);
        r.type = LP_REC_API;
        r.u.api = (struct lp_api){.start = t + 1000, .end = t + 2000, .correlation = corr,
                                  .thread = 1, .domain = LP_API_DOMAIN_RUNTIME, .cbid = 211,
                                  .name = launch};
        rc |= lp_trace_writer_add(w, &r);
        r.type = LP_REC_KERNEL;
        r.u.kernel = (struct lp_kernel){.start = t + 4000, .end = t + 6000 + (uint64_t)i % 977,
                                        .name = name, .correlation = corr, .stream = 7,
                                        .grid = {132, 1, 1}, .block = {128, 1, 1}};
        rc |= lp_trace_writer_add(w, &r);
    }
    rc |= lp_trace_writer_close(w);
    if (rc) {
        fprintf(stderr, "gen_shapes: writing %s failed\n", argv[1]);
        return 1;
    }
    return 0;
}
