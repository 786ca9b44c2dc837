/* llmprof's deep dive: Nsight Compute's measurements of a recorded run's top kernels. Which
 * kernels to profile (pick.c), what bounds each one measured (judge.c), and the measurements
 * set in the run's stages (join.c); Nsight Compute's raw page itself is read by ncu_raw.c
 * (llmprof/ncu.h). Built on one run's analysis (llmprof/analyze.h); facts and codes only. */
#ifndef LLMPROF_DEEP_H
#define LLMPROF_DEEP_H

#include <stddef.h>
#include <stdint.h>

#include "llmprof/analyze.h"
#include "llmprof/ncu.h"

/* ---- kernels in depth: Nsight Compute's metrics judged (judge.c) ---- */

struct lp_ncu_report;
struct lp_ncu_kernel;

/* What bounds a kernel. Nsight Compute's Speed Of Light rule: a unit at 60 % of its peak or
 * more bounds it (compute: the SM; memory: the busiest memory unit; the higher names it, a
 * tie compute). Below 60 % on both, llmprof's own rule: too small when its grid fills less
 * than 0.8 of one wave of the GPU's SMs (a fifth of the SMs idle: idleness, not stalls, holds
 * it back; a grid a few blocks short of a wave is not), latency bound otherwise. */
enum lp_deep_bound {
    LP_DEEP_BOUND_COMPUTE,
    LP_DEEP_BOUND_MEMORY,
    LP_DEEP_BOUND_LATENCY,
    LP_DEEP_BOUND_SMALL,
    LP_DEEP_BOUND_UNKNOWN,       /* a metric it needs is missing */
};
#define LP_DEEP_BOUND_PCT 60.0
#define LP_DEEP_SMALL_WAVES 0.8

/* The launch limits on blocks per SM; the smallest caps the theoretical occupancy. */
enum lp_deep_limit {
    LP_DEEP_LIMIT_REGISTERS,
    LP_DEEP_LIMIT_SHARED_MEM,
    LP_DEEP_LIMIT_WARPS,
    LP_DEEP_LIMIT_BLOCKS,
    LP_DEEP_LIMIT_BARRIERS,
    LP_DEEP_LIMIT_COUNT
};

#define LP_DEEP_STALLS 3
struct lp_deep_kernel {
    const struct lp_ncu_kernel *k;
    enum lp_deep_bound bound;
    unsigned limits;             /* bits (1 << enum lp_deep_limit) of the smallest limits (a
                                    tie sets several); 0: the limits were not reported */
    double limit_blocks;         /* blocks per SM they allow */
    int stall[LP_DEEP_STALLS];   /* the largest stall reasons (lp_ncu_report.stall_names
                                    indices; "selected", the issuing warp, left out),
                                    largest first; -1 past the last */
};

/* Judges every kernel of R into OUT (R's order), which the caller frees. Returns LP_OK or
 * LP_ERR_NOMEM. */
int lp_deep_judge(const struct lp_ncu_report *r, struct lp_deep_kernel **out);

/* ---- kernels in depth: which to profile (pick.c) ---- */

/* One launch configuration (kernel, grid, block) of a picked kernel: what Nsight Compute's
 * --filter-mode per-launch-config counts its --launch-skip and --launch-count on. */
struct lp_deep_config {
    size_t pick;                 /* index into lp_deep_plan.picks: the first stage that runs it */
    int32_t grid[3], block[3];
    uint64_t launches;           /* in the picked stages and warm-up (ncu's filter sees both) */
    uint64_t profiled;           /* what ncu will profile: launches past the skip, at most
                                    the instances */
};

struct lp_deep_pick {
    int stage;                   /* index into lp_run.stages */
    size_t group;                /* index into lp_run.names */
    const char *mangled;         /* its name in the trace, as ncu's filter sees it */
    uint64_t gpu_ns;             /* in the stage's measured occurrences */
    double share;                /* of the stage's GPU time */
    uint64_t profiled;           /* over its configurations */
};

/* The range names that open a picked stage's occurrences (warm-up's too), for ncu's NVTX
 * filter: at most LP_DEEP_MAX_RANGE_NAMES distinct ones, else their common prefix. */
#define LP_DEEP_MAX_RANGE_NAMES 16
struct lp_deep_stage_ranges {
    int stage;
    const char *domain;          /* "" the default domain */
    const char *names[LP_DEEP_MAX_RANGE_NAMES];
    size_t n_names;
    char *prefix;                /* when there are more names: what all begin with (malloc'd),
                                    else NULL */
};

struct lp_deep_plan_options {
    size_t top;                  /* kernels per stage by GPU time (0: 10) */
    double share;                /* ... and every kernel above this share of its stage (0: 5 %) */
    uint64_t skip;               /* per configuration: launches skipped (UINT64_MAX: 1, or 0
                                    when a picked configuration runs only once) */
    uint64_t instances;          /* ... then profiled (0: 1) */
};

struct lp_deep_plan {
    struct lp_deep_pick *picks;  /* by stage, then GPU time */
    size_t n_picks;
    struct lp_deep_config *configs;
    size_t n_configs;
    struct lp_deep_stage_ranges *ranges; /* one per stage picked from, when it has ranges */
    size_t n_ranges;
    int by_nvtx;                 /* the stages are NVTX ranges (not inferred, not the whole run):
                                    ncu filters on them */
    uint64_t profiled;           /* kernels ncu will profile in all */
    uint64_t skip, instances;    /* as used */
};

/* Picks the kernels of R's measured stages to profile, and counts what Nsight Compute will
 * profile of them. LP_OK; LP_ERR_ARG with ERR when R has no kernels or no stage with any;
 * LP_ERR_NOMEM. */
int lp_deep_plan_make(const struct lp_run *r, const struct lp_deep_plan_options *o,
                      struct lp_deep_plan *p, char *err, size_t errlen);
void lp_deep_plan_free(struct lp_deep_plan *p);

/* ---- kernels in depth: Nsight Compute's results in the run's stages (join.c) ---- */

/* What the numbers point at first, for the one next step the report gives. */
enum lp_deep_advice {
    LP_DEEP_ADVICE_FEWER_FLOPS,  /* compute bound on the tensor cores: less math per result */
    LP_DEEP_ADVICE_TENSOR_CORES, /* compute bound with the tensor pipe idle: FP32 on CUDA cores */
    LP_DEEP_ADVICE_FEWER_BYTES,  /* memory bound: move fewer bytes (fuse, quantise, batch) */
    LP_DEEP_ADVICE_OCCUPANCY,    /* latency bound, achieved occupancy low and capped by a limit */
    LP_DEEP_ADVICE_STALL,        /* latency bound: the largest stall is the lead */
    LP_DEEP_ADVICE_MORE_WORK,    /* too small: more work per launch (batch, fuse, graphs) */
    LP_DEEP_ADVICE_NONE,         /* a metric it needs is missing */
};

enum lp_deep_row_flag {
    LP_DEEP_ROW_BY_NVTX = 1 << 0,   /* its configuration ran in several stages: the stage is
                                       the one its NVTX ranges name */
    LP_DEEP_ROW_UNSEEN = 1 << 1,    /* its configuration is not in the recorded run: the stage
                                       is the one where its kernel spent the most time */
    LP_DEEP_ROW_BY_ROOFLINE = 1 << 2, /* SM and memory both past 60 %: the bound is the
                                       roofline's (FLOP/byte against the ridge) */
    LP_DEEP_ROW_TENSOR_UNNAMED = 1 << 3, /* tensor-core work counted in a kernel whose name
                                       says neither GEMM nor attention: a matmul the kernel
                                       tables count under another category */
};

/* One launch configuration of a kernel in one stage, as Nsight Compute measured it: the
 * instance of median duration, judged. */
struct lp_deep_row {
    int stage;
    size_t group;
    int32_t grid[3], block[3];
    uint32_t flags;              /* enum lp_deep_row_flag */
    uint64_t run_ns, run_calls;  /* the recorded run: its GPU time and launches in the stage */
    double share;                /* run_ns of the stage's GPU time */
    size_t instances;            /* measured by ncu */
    double dur_min_ns, dur_max_ns;
    struct lp_deep_kernel j;     /* the median instance (j.k), judged; when SM and memory are
                                    both past 60 %, the bound is set by the roofline */
    double tensor_flops, fp32_flops; /* counted: tensor-core ops, 2 ffma + fadd + fmul */
    double flops_per_s;          /* (tensor + FP32) / duration; NaN not counted */
    double dram_bytes;           /* DRAM bandwidth x duration; NaN absent */
    double intensity;            /* FLOPs per DRAM byte; NaN n/a */
    int peak_dtype;              /* enum lp_dtype of the peak it is set against, -1 none */
    double peak_flops, ridge;    /* that dense peak (FLOP/s) and peak / bandwidth (FLOP/byte);
                                    0 n/a (GPU not in the table) */
    enum lp_deep_advice advice;
};

struct lp_deep {
    struct lp_ncu_report *ncu;   /* owned */
    struct lp_deep_row *rows;    /* by stage, then the run's GPU time */
    size_t n_rows;
    size_t n_kernels;            /* ncu's measurements */
    size_t unmatched;            /* of them, kernels the run does not have (by name) */
    double mem_bw;               /* the GPU's peak bandwidth, byte/s (0 n/a) */
};

/* Joins NCU (taken: freed with R, also on failure) to R's stages into R->deep, which
 * lp_run_free frees (through R->deep_free). LP_OK or LP_ERR_NOMEM. */
int lp_run_deep(struct lp_run *r, struct lp_ncu_report *ncu);
/* frees what lp_run_deep made (R->deep_free) */
void lp_run_deep_free(struct lp_run *r);

#endif
