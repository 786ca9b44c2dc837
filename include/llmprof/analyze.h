/* llmprof analysis: what is computed from a trace. Reads traces through the reader
 * (llmprof/trace.h); never touches CUPTI; formats nothing: findings, notes and hints are
 * codes with the numbers they cite, and the report layer (src/report/text.c) says them. */
#ifndef LLMPROF_ANALYZE_H
#define LLMPROF_ANALYZE_H

#include <stddef.h>
#include <stdint.h>

#include "llmprof/model.h"
#include "llmprof/trace.h"

/* ---- sorting ---- */

/* Key/value pairs and their sorts (the analysis' own, also for exports that order records):
 * lp_sort_kv is a radix sort by key (LSD, stable), TMP holding N pairs; lp_sort_kv_inplace
 * sorts by (key, val) without TMP's memory: what lp_sort_kv's stable order gives wherever
 * values of equal keys were added in increasing order. Linear (16 passes at most over
 * shrinking buckets). */
struct lp_kv {
    uint64_t key, val;
};
void lp_sort_kv(struct lp_kv *v, struct lp_kv *tmp, size_t n);
void lp_sort_kv_inplace(struct lp_kv *v, size_t n);
/* Orders V in place by the KEY_BYTES highest bytes of its keys only (their lower bytes
 * zero): equal keys together, their values in no set order. Cheaper than a sort where only
 * each key's values as a set matter. */
void lp_group_kv(struct lp_kv *v, size_t n, int key_bytes);
/* The same for values whose KEY_BYTES highest bytes are their key: equal keys together, in
 * increasing order of those bytes */
void lp_group_u64(uint64_t *v, size_t n, int key_bytes);

/* ---- launching calls ---- */

/* The call that launched each correlation id, as the analysis ties work to calls (the first
 * call record of an id): lp_calls_index returns NULL when out of memory; lp_calls_find gives
 * the index into T->apis of CORRELATION's call, -1 when none was recorded (and for 0). */
struct lp_calls;
struct lp_calls *lp_calls_index(const struct lp_trace *t);
int64_t lp_calls_find(const struct lp_calls *x, uint32_t correlation);
void lp_calls_free(struct lp_calls *x);

/* ---- NVTX ranges paired from markers ---- */

enum lp_range_flag {
    LP_RANGE_UNCLOSED = 1 << 0, /* no end marker: ends at the last timestamp of the trace */
};

struct lp_range {
    uint64_t start, end;
    lp_str name, domain;
    uint32_t thread;      /* thread of the start marker */
    uint32_t depth;       /* 0 = top level on its thread */
    int64_t parent;       /* index into the range array, -1 at top level */
    uint32_t flags;       /* enum lp_range_flag */
};

struct lp_ranges {
    struct lp_range *v;   /* sorted by (thread, start, longer first) */
    size_t n;
    size_t unmatched_ends; /* end markers whose start was not recorded */
    size_t unclosed;
    /* ranges of the request convention ("request <id>", docs/serving.md): they overlap, so
     * they are kept apart from V, by start, never nested (depth 0, parent -1) */
    struct lp_range *req;
    size_t n_req;
    size_t req_unclosed;  /* of them, never ended: the recording stopped first */
};

/* Pairs start and end markers by id (push/pop and start/end alike) and nests the ranges
 * of each thread by time; ranges named like a request (lp_request_word) go to REQ when the
 * trace has a token mark too (the request convention). */
int lp_ranges_build(const struct lp_trace *t, struct lp_ranges *out);
void lp_ranges_free(struct lp_ranges *r);
/* The innermost range open on THREAD at time TS (an index into RG->v), or -1. */
int32_t lp_ranges_at(const struct lp_ranges *rg, uint32_t thread, uint64_t ts);
/* The same, starting from *HINT (0 at first), which it updates: asked in time order on one
 * thread, each answer costs a step instead of a search */
int32_t lp_ranges_at_hint(const struct lp_ranges *rg, uint32_t thread, uint64_t ts, size_t *hint);

/* The request convention (docs/serving.md): when NAME is "KEYWORD <id>[ more words]" (KEYWORD
 * "request" for a request's range, "token" or "prefill" for a mark), the id's length, its
 * first character at NAME + strlen(KEYWORD) + 1; else 0. An id is its first
 * LP_REQUEST_ID_MAX bytes at most (cut at a character's boundary): each request keeps and
 * writes its id, and a trace can name thousands by one long string. */
#define LP_REQUEST_ID_MAX 256
size_t lp_request_word(const char *name, const char *keyword);

/* A range name without its key=value words: "prefill tokens=512" -> "prefill". Writes
 * into BUF (size LEN) and returns it. */
const char *lp_range_group_name(const char *name, char *buf, size_t len);

/* ---- a quick summary of one trace (llmprof info) ---- */

struct lp_range_group {
    char *name;
    size_t count;
    uint64_t total_ns, min_ns, max_ns;
};

struct lp_trace_summary {
    uint64_t first_ns, last_ns;    /* span of all timestamped records */
    uint64_t kernel_ns;            /* sum of kernel durations (whole graph replays included) */
    size_t n_replays;              /* kernel records that are whole CUDA graph replays */
    uint64_t memcpy_bytes, memset_bytes;
    uint64_t lost_records;         /* sum of loss counts */
    size_t n_loss_notes;           /* losses with count 0: notes, or records not counted */
    size_t n_launch_matched;       /* kernels whose launching API call was recorded */
    size_t n_gemm_tied;            /* GEMM calls tied to at least one kernel */
    size_t n_gemm_kernels;         /* kernels launched by GEMM calls */
    size_t n_gemm_algo;            /* GEMM calls whose algorithm is known */
    /* NVML samples: how long the queries took (the alignment uncertainty of a sample is
     * half of it) and the mean interval between samples of one device */
    uint64_t nvml_query_p50_ns, nvml_query_p99_ns, nvml_interval_ns;
    size_t n_nvml_devices;
    /* hardware counters: each counter's total over the segments, bits (1 << enum
     * lp_counter) counted in any */
    double counter_total[LP_COUNTER_COUNT];
    unsigned counter_valid;
    /* PM samples: each value's mean over the samples that have it (lp_pm_value's unit),
     * DRAM read and write as totals in bytes; pm_n: samples with the value */
    double pm_value[LP_PM_COUNT];
    size_t pm_n[LP_PM_COUNT];
    uint64_t window_ns;            /* capture windows: their summed lengths (closed ones) */
    size_t n_windows;              /* and how many (a window is written open, then closed) */
    struct lp_range_group *top;    /* top-level NVTX ranges grouped by name, by total desc */
    size_t n_top;
    struct lp_ranges ranges;
};

int lp_trace_summarize(const struct lp_trace *t, struct lp_trace_summary *s);
void lp_trace_summary_free(struct lp_trace_summary *s);

/* ---- kernel names ---- */

enum lp_kcat {
    LP_KCAT_GEMM, LP_KCAT_ATTENTION, LP_KCAT_NORM, LP_KCAT_ELEMENTWISE, LP_KCAT_REDUCTION,
    LP_KCAT_MEMCPY, LP_KCAT_MEMSET, LP_KCAT_COMMUNICATION,
    LP_KCAT_GRAPH,                /* whole CUDA graph replays (record --graphs replay) */
    LP_KCAT_OTHER, LP_KCAT_COUNT
};
const char *lp_kcat_name(enum lp_kcat c);
/* Category of a (demangled) kernel name from the words libraries put in their names. */
enum lp_kcat lp_kernel_category(const char *name);
/* 1 for the grouped GEMMs MoE layers run their experts in (CUTLASS grouped problem shapes,
 * PyTorch's _grouped_mm, fused_moe, MoE GEMM kernels), by name */
int lp_kernel_grouped_gemm(const char *name);
/* Demangled copy of a C++ kernel name (malloc'd); other names are copied as they are. */
char *lp_kernel_demangle(const char *mangled);
/* Short form for tables: no parameter list, no return type, no common namespaces, at most
 * 90 characters. Writes into BUF and returns it. */
const char *lp_kernel_short_name(const char *demangled, char *buf, size_t len);
/* Where DEMANGLED's parameter list starts (the first '(' outside template arguments that is
 * not "(anonymous namespace)"), its length when it has none: the name without it is the
 * kernel's name whatever its arguments. */
size_t lp_kernel_name_end(const char *demangled);

/* ---- GEMM calls (trace format 1.1) ---- */

/* For each of T's kernels, the index of the GEMM record whose call launched it (a launch on
 * the GEMM's thread within its [start, end]; for a kernel replayed from a CUDA graph, the
 * call that was running where and when its node was captured), or -1. *KERNEL_GEMM is
 * malloc'd with t->n_kernels entries (NULL when no kernel has a GEMM). KERNEL_ORIGIN (may be
 * NULL) gets, likewise, the graph record of each replayed kernel's captured node, -1 none
 * (NULL when the trace has no graph records). Returns LP_OK or LP_ERR_NOMEM. */
int lp_gemm_link(const struct lp_trace *t, int32_t **kernel_gemm, int32_t **kernel_origin);
/* Sets MADE[i] (t->n_gemms entries) to 1 for each GEMM call during which a CUDA graph node
 * was made on its thread (graph records): a call captured into a graph. LP_OK or
 * LP_ERR_NOMEM. */
int lp_gemm_made_nodes(const struct lp_trace *t, uint8_t *made);
/* FLOPs of one call: 2 m n k per product (8 for complex types), times the batch. */
double lp_gemm_flops(const struct lp_gemm *g);
/* Bytes one call must move at least: A, B and D once each (reading C is not counted:
 * beta is not recorded). */
double lp_gemm_min_bytes(const struct lp_gemm *g);
/* "bf16", "fp8e4m3", "fp32", "c64" ... for a cudaDataType value; "other" for the rest. */
const char *lp_cuda_type_name(uint32_t cuda_type);
/* Bytes per element of a cudaDataType (0.5 for 4-bit types, 0 unknown). */
double lp_cuda_type_bytes(uint32_t cuda_type);
/* "32F", "32F_FAST_TF32", ... for a cublasComputeType_t value. */
const char *lp_compute_type_name(uint32_t compute_type);
/* The dtype whose dense peak bounds a GEMM: its inputs' type, or TF32/BF16/FP16 when the
 * compute type lets fp32 run on tensor cores. -1 when the table has no such column (fp64,
 * complex). */
int lp_gemm_peak_dtype(const struct lp_gemm *g);

/* ---- CUPTI's overhead records ---- */

/* What an overhead record (CUPTI's OVERHEAD activity, recorded all run) is host time of. */
enum lp_overhead_class {
    LP_OVERHEAD_CLASS_PROFILER,   /* CUPTI's own work: buffer flushes and requests, its
                                     instrumentation and resources, UVM set-up */
    LP_OVERHEAD_CLASS_LOADING,    /* CUDA loading code: JIT compilation, module and lazy
                                     function loading (paid with or without a profiler) */
    LP_OVERHEAD_CLASS_QUEUE,      /* a launch waiting for space in a command buffer: the
                                     GPU's queue was full */
    LP_OVERHEAD_CLASS_OTHER,      /* a kind this build does not know */
    LP_OVERHEAD_CLASS_COUNT
};
/* The kinds CUPTI records (CUpti_ActivityOverheadKind), UNKNOWN for one this build does not
 * know. */
enum lp_overhead_kind {
    LP_OVERHEAD_KIND_UNKNOWN, LP_OVERHEAD_KIND_COMPILER, LP_OVERHEAD_KIND_BUFFER_FLUSH,
    LP_OVERHEAD_KIND_INSTRUMENTATION, LP_OVERHEAD_KIND_RESOURCE,
    LP_OVERHEAD_KIND_MODULE_LOADING, LP_OVERHEAD_KIND_LAZY_LOADING,
    LP_OVERHEAD_KIND_COMMAND_BUFFER_FULL, LP_OVERHEAD_KIND_BUFFER_REQUEST,
    LP_OVERHEAD_KIND_UVM_INIT, LP_OVERHEAD_KIND_COUNT
};
/* The kind of a recorded CUpti_ActivityOverheadKind value, and a kind's class. */
enum lp_overhead_kind lp_overhead_kind_of(uint32_t cupti_kind);
enum lp_overhead_class lp_overhead_kind_class(enum lp_overhead_kind k);

/* One kind of overhead over the run. Durations are summed as CUPTI gave them. */
struct lp_overhead_row {
    enum lp_overhead_kind kind;
    enum lp_overhead_class cls;
    size_t count;
    uint64_t total_ns, max_ns;
    uint64_t program_ns;          /* on the program's threads: those with launch calls, NVTX
                                     ranges or GEMM calls (others are llmprof's and CUPTI's) */
    uint64_t measured_ns;         /* of that, the parts inside measured stage occurrences */
};

struct lp_run_overhead {
    size_t records;               /* 0: none recorded (kind off, or an older trace) */
    size_t untimed;               /* of them, without a duration (CUPTI could not time
                                     them): in no row */
    int launches_known;           /* the trace has launch records: else (--light) a thread
                                     that only launched work is not known as the program's */
    struct lp_overhead_row *rows; /* by total time, longest first */
    size_t n_rows;
    uint64_t program_ns[LP_OVERHEAD_CLASS_COUNT], measured_ns[LP_OVERHEAD_CLASS_COUNT];
};

/* ---- the report of one run: everything the report writers print ---- */

/* How a stage's range was recognised. */
enum lp_stage_kind {
    LP_STAGE_KIND_PREFILL, LP_STAGE_KIND_DECODE, LP_STAGE_KIND_VISION, LP_STAGE_KIND_OTHER,
    LP_STAGE_KIND_RUN,      /* no ranges: the whole run is one stage */
    LP_STAGE_KIND_WARMUP,   /* occurrences named warmup, of any stage */
    LP_STAGE_KIND_OUTSIDE,  /* kernels launched outside every stage range */
};
const char *lp_stage_kind_name(enum lp_stage_kind k);

/* Where a token count (or the batch) came from; the first that applies wins. */
enum lp_tokens_source {
    LP_TOKENS_NONE,         /* unknown (a batch of 1 is then assumed) */
    LP_TOKENS_FLAG,         /* --prefill-tokens, --decode-tokens, --batch */
    LP_TOKENS_RANGE_NAME,   /* tokens= and batch= words in range names */
    LP_TOKENS_SHAPES,       /* the token dimension of the GEMM calls (prefill n = batch x
                               prompt, decode n = batch) */
    LP_TOKENS_STEPS,        /* decode: the steps found (enum lp_steps_source) x batch */
    LP_TOKENS_SOURCE_COUNT
};

/* How the decode steps inside a stage's ranges were counted. */
enum lp_steps_source {
    LP_STEPS_NONE,          /* not found: no TPOT */
    LP_STEPS_TOKENS,        /* a token count (flag or range name) / batch */
    LP_STEPS_RANGES,        /* one per range: nothing in them repeats */
    LP_STEPS_LM_HEAD,       /* calls of the largest GEMM (the lm_head), once per forward */
    LP_STEPS_GRAPHS,        /* launches of the CUDA graph each step replays */
    LP_STEPS_SEQUENCE,      /* the kernel sequence that repeats once per step */
    LP_STEPS_SOURCE_COUNT
};

/* Sample statistics over the occurrences of a stage (values in ns). */
struct lp_stat {
    size_t n;
    double total, mean, std, cv, min, max;
};

/* A distribution over requests or steps (values in ns): percentiles by linear
 * interpolation between the closest ranks, and the values themselves in time order (what
 * lp_diff resamples). */
struct lp_dist {
    size_t n;
    double mean, min, p50, p90, p99, max;
    double *v;                    /* the N values in time order (owned); NULL when N is 0 */
};

struct lp_kernel_row {
    size_t group;                 /* index into lp_run.names */
    uint64_t calls, total_ns, min_ns, max_ns, median_ns;
    double mean_ns, std_ns;
    double share;                 /* of the GPU time of its scope (0..1) */
};

struct lp_kernel_table {
    struct lp_kernel_row *v;      /* by total time, descending */
    size_t n;
    size_t n_groups;              /* distinct names in the scope */
    uint64_t gpu_ns;              /* sum of all kernel/memcpy/memset durations in scope */
};

struct lp_substage {
    char *name;
    size_t count;
    uint64_t wall_ns, gpu_ns;     /* wall of its ranges, GPU time of its kernels */
    double ttft_share;            /* wall_ns / the measured requests' TTFT summed; 0 n/a */
};

/* Why the tensor cores executed more or less than the model's useful matmul FLOPs
 * (lp_stage_counters.excess: bits; more than 1.1 or under 0.8 of them). */
enum lp_excess {
    LP_EXCESS_TILE_PADDING = 1 << 0, /* 64 tokens a pass or fewer: padded to the tensor-core
                                        tile (8 to 64 rows or columns, by kernel) */
    LP_EXCESS_MLA = 1 << 1,          /* a GEMM row of the stage expands MLA's compressed KV
                                        cache over the context (LP_GEMM_VARY_MLA) */
    LP_EXCESS_MOE = 1 << 2,          /* grouped expert GEMMs ran: expert groups padded to tiles */
    LP_EXCESS_UNEXPLAINED = 1 << 3,  /* more, and none of the above: recomputation, or matmuls
                                        the config does not describe */
    LP_EXCESS_SHORT = 1 << 4,        /* under 0.8: matmuls in a type the counters do not count
                                        (fp16, tf32), on CUDA cores, or a config larger than the
                                        model run */
};
#define LP_EXCESS_BITS 5

/* Hardware counters (record --counters, trace format 1.3) of a stage's measured occurrences:
 * sums over the segments whose middle falls inside one of them. Counted by the GPU; the
 * ratios set beside them come from the model (--model) and the cuBLAS calls. */
struct lp_stage_counters {
    size_t segments;
    unsigned valid;                  /* bits (1 << enum lp_counter) counted */
    double value[LP_COUNTER_COUNT];  /* sums */
    double tensor_flops;             /* the tensor counters summed (tensor-core FLOPs) */
    double dram_bytes;               /* read + written */
    double tflops, executed_share;   /* tensor_flops over the wall time; of the dense peak of
                                        the run's dtype (0 n/a): the work executed, not the
                                        model's useful FLOPs that MFU counts */
    double gbs, mbu;                 /* dram_bytes over the wall time; of peak bandwidth */
    double units;                    /* what per_unit is per: decode steps, else occurrences */
    double flops_per_unit, bytes_per_unit;
    double vs_model_flops;           /* flops_per_unit / the model's matmul FLOPs; 0 n/a */
    double vs_model_bytes;           /* bytes_per_unit / the model's bytes; 0 n/a */
    double vs_gemm_flops;            /* tensor_flops / the cuBLAS calls' 2mnk FLOPs; 0 n/a */
    int64_t pass_tokens;             /* tokens per forward pass: decode's batch, a prefill's
                                        tokens per occurrence; 0 unknown */
    uint32_t excess;                 /* enum lp_excess bits, from vs_model_flops */
};

/* The whole run's counters: every segment, and those outside any measured occurrence. */
struct lp_run_counters {
    size_t segments, outside;        /* outside: warm-up, gaps between stages */
    unsigned valid;
    double value[LP_COUNTER_COUNT];
    const char *metrics;             /* the trace's "counters_metrics" header, NULL absent */
    const char *chip;
};

/* PM samples (record --pm-sampling, trace format 1.4) over a span of time: means weighted
 * by each sample's duration. Sampled by the GPU whatever runs; DRAM bytes are counted. */
struct lp_pm_stats {
    size_t samples;
    unsigned valid;                  /* bits (1 << enum lp_pm) sampled */
    double seconds;                  /* time the samples cover */
    double mean[LP_PM_COUNT];        /* percent of peak (throughputs), MHz (clock); for
                                        DRAM read and write: GB/s */
    double dram_bytes;               /* read + written */
    double dram_gbs, mbu;            /* dram_bytes over SECONDS; of peak bandwidth (0 n/a) */
};

/* The run's PM samples: all of them, those outside any measured stage occurrence (warm-up,
 * gaps), and the timeline drawn in report.html (at most LP_PM_BINS bins of equal time). */
#define LP_PM_BINS 600
struct lp_pm_bin {
    uint64_t start, end;
    struct lp_pm_stats s;
};
struct lp_run_pm {
    struct lp_pm_stats all, outside;
    uint64_t interval_ns;            /* the trace's "pm_interval_ns", 0 absent */
    uint64_t first_ns, last_ns;      /* span of the samples */
    const char *metrics, *chip;      /* the trace's headers, NULL absent */
    struct lp_pm_bin *bins;
    size_t n_bins;
};

struct lp_stage_report {
    char *name;
    enum lp_stage_kind kind;
    size_t occurrences;           /* measured ones (warmup apart) */
    struct lp_stat wall, busy;    /* per occurrence: range wall time, GPU busy time */
    int variable;                 /* wall CV above 10 % */
    uint64_t busy_ns;             /* union of its GPU work (kernels, copies, sets) */
    double busy_share;            /* busy_ns / wall (can pass 1: work outlives its ranges);
                                     NaN, as host_wait_share and kernels_per_occurrence, when
                                     no kernels were recorded (lp_run.kernels_recorded) */
    uint64_t gpu_ns;              /* sum of durations */
    double kernels_per_occurrence;
    size_t kernels, graph_kernels;
    uint64_t graph_replays;       /* CUDA-graph launches whose kernels ran in this stage */
    size_t gaps;                  /* idle gaps over the threshold between its GPU work */
    uint64_t gap_ns;
    uint64_t host_wait_ns;        /* idle gaps where the next work was launched late */
    double host_wait_share;       /* of its idle time (wall - busy) */
    uint64_t launch_delay_p50_ns; /* launch call start -> kernel start, median */
    int64_t tokens;               /* processed in the measured occurrences (all sequences) */
    int64_t batch;
    enum lp_tokens_source tokens_source;
    int64_t steps;                /* decode: steps in the measured occurrences */
    enum lp_steps_source steps_source;
    struct lp_dist step;          /* decode: duration of each step whose bounds were found */
    double tokens_per_s;          /* tokens / wall */
    double cat_ns[LP_KCAT_COUNT];
    double cat_share[LP_KCAT_COUNT]; /* cat_ns / gpu_ns; 0 without GPU time */
    /* communication kernels (comm.c): their time, the part of it with a computation kernel
       running on the same GPU, and that part's share (NaN without communication) */
    uint64_t comm_ns, comm_overlap_ns;
    double comm_overlap_share;
    uint64_t memcpy_bytes[4];     /* HtoD, DtoH, DtoD, other */
    uint64_t memset_bytes;
    uint64_t peak_alloc_bytes;    /* held through cudaMalloc (caching allocators' reserve) */
    uint64_t peak_nvml_used_bytes; /* whole device, NVML; 0 when no sample fell inside */
    /* power: NVML samples and the energy counter over the occurrences */
    size_t nvml_samples;
    double power_mean_w, power_peak_w, energy_j, j_per_token;
    int energy_from_counter;      /* energy from the counter, else mean power x time */
    int power_coarse;             /* its ranges last less than two NVML updates in all: the
                                     power and energy shown are uncertain */
    /* utilisation against the analytic model (has_util) */
    int has_util;
    double model_flops, model_bytes; /* per occurrence */
    double achieved_tflops, achieved_gbs, mfu, mbu;
    double model_matmul_flops;    /* analytic matmul FLOPs per occurrence (has_util) */
    double model_linear_flops;    /* the same without attention scores (QK^T, PV) */
    /* GEMMs measured through cuBLAS (trace format 1.1), over the measured occurrences */
    uint64_t gemm_calls, gemm_ns; /* calls tied to kernels of this stage, their GPU time */
    uint64_t gemm_unshaped_ns;    /* GPU time of GEMM kernels (by name) no recorded call
                                     launched: CUTLASS, grouped, Triton, graph replays */
    double gemm_coverage;         /* gemm_ns / (gemm_ns + gemm_unshaped_ns); -1 no GEMMs */
    int gemm_partial;             /* coverage under 95 %: measured GEMM figures cover part */
    double gemm_flops;            /* 2 m n k batch of those calls */
    double gemm_tflops;           /* gemm_flops / gemm_ns */
    double gemm_mfu;              /* gemm_flops / wall / dense peak of the run's dtype; 0 n/a */
    double gemm_vs_model;         /* measured GEMM FLOPs / analytic matmul FLOPs; 0 n/a */
    double gemm_context_flops;    /* of the measured GEMM FLOPs, those of rows over the whole
                                     context every step (LP_GEMM_VARY_CONTEXT, _MLA) */
    double gemm_vs_model_rest;    /* gemm_vs_model without them; 0 n/a */
    int gemm_mla;                 /* some of them expand MLA's compressed KV cache
                                     (LP_GEMM_VARY_MLA), listed or not */
    double gemm_vs_linear;        /* ... / analytic matmul FLOPs without attention scores */
    uint64_t moe_gemm_ns;         /* MoE experts: grouped GEMM kernels (by name) and
                                     batched cuBLAS calls of an expert's shape (--model) */
    size_t moe_gemm_kernels;
    double moe_gemm_share;        /* of the stage's GPU time */
    double ttft_share;            /* vision and prefill: time over the measured requests'
                                     TTFT summed (vision inside a prefill is its own stage) */
    double ttft_ns_per_request;   /* its time per measured request */
    /* CUPTI's overhead records on the program's threads inside its occurrences
       (overhead.c): time and count per class, and the time's share of its wall time
       (summed over threads: records on several threads at once can pass 1) */
    uint64_t overhead_ns[LP_OVERHEAD_CLASS_COUNT];
    size_t overhead_n[LP_OVERHEAD_CLASS_COUNT];
    double overhead_share[LP_OVERHEAD_CLASS_COUNT];
    struct lp_stage_counters ctr; /* hardware counters (segments 0: none) */
    struct lp_pm_stats pm;        /* PM samples in its measured occurrences (samples 0: none) */
    struct lp_kernel_table top;
    struct lp_substage *sub;      /* nested stage ranges: notes, not added twice */
    size_t n_sub;
};

enum lp_gap_cause {
    LP_GAP_HOST,      /* the next work was launched after the GPU went idle */
    LP_GAP_DEVICE,    /* the next work was queued but started late (dependencies, events) */
    LP_GAP_UNKNOWN,   /* the next work has no recorded launch */
    LP_GAP_CAUSE_COUNT
};

/* An idle gap. The longest are kept (warmup's left out, as its stage is not measured). */
struct lp_gap {
    uint64_t start, dur;          /* ns, trace clock */
    int stage;                    /* index into lp_run.stages, -1 outside */
    enum lp_gap_cause cause;
    uint64_t host_api_ns;         /* of the gap, time its launching thread spent in CUDA calls */
    const char *api;              /* the CUDA call it spent most of it in, or NULL */
};

struct lp_util_bin {
    uint64_t start;
    float busy;                   /* GPU busy fraction in the bin (of its recorded time: NaN
                                     when it lies wholly between capture windows) */
};

struct lp_power_point {
    uint64_t t;
    float power_w, sm_mhz, mem_mhz, util, temp_c;
};

#define LP_THROTTLE_BITS 10

/* What the diagnosis found. Each code cites fields of its stage (STAGE) and of struct lp_run,
 * and the numbers of struct lp_finding named beside it. */
enum lp_finding_code {
    LP_FINDING_TRACE_NOT_WHOLE,   /* losses, reader warnings, no end chunk (lp_run.trace) */
    LP_FINDING_LAUNCH_BOUND,      /* STAGE idles waiting for launches: unit, per_ns, busy_ns,
                                     idle_ns, kernels_per_unit */
    LP_FINDING_DECODE_LOW_MBU,    /* STAGE (decode) busy, MBU under 50 % */
    LP_FINDING_PREFILL_LOW_MFU,   /* STAGE (prefill) MFU under 30 % (GEMM share of its time) */
    LP_FINDING_PREFILL_FEW_GEMMS, /* STAGE (prefill, no model): GEMMs under half its time */
    LP_FINDING_COPIES,            /* STAGE: copies 10 % of its GPU time or more */
    LP_FINDING_VARIANCE,          /* STAGE's time varies (CV over 10 %) */
    LP_FINDING_THROTTLED,         /* throttle_bits: clock-event reasons in 5 % of samples */
    LP_FINDING_OUTSIDE_WORK,      /* STAGE (outside): share of all GPU time, over 20 % */
    LP_FINDING_NO_STAGES,         /* no range matched a stage rule, none inferred */
    LP_FINDING_LOADING,           /* STAGE: CUDA loaded code (lazy loading, JIT) inside its
                                     measured occurrences, 1 % of its time or more:
                                     overhead_ns, overhead_n, share (of its wall time) */
    LP_FINDING_PROFILER_WORK,     /* STAGE: CUPTI's own work on the program's threads, 1 % of
                                     its time or more: overhead_ns, overhead_n, share */
    LP_FINDING_CODE_COUNT
};

/* the unit a launch-bound stage's idle time is counted per */
enum lp_finding_unit {
    LP_FINDING_UNIT_OCCURRENCE, LP_FINDING_UNIT_STEP, LP_FINDING_UNIT_PREFILL,
};

/* Where a prefill far from the compute peak (LP_FINDING_PREFILL_LOW_MFU) loses its time, read
 * off the stage's own figures, so that the advice never contradicts its tables */
enum lp_mfu_reason {
    LP_MFU_REASON_REPLAYS,        /* CUDA graph replays recorded whole: its kernels unknown */
    LP_MFU_REASON_IDLE,           /* the GPU idle half its wall time or more */
    LP_MFU_REASON_GEMM_SLOW,      /* GEMM kernels half its GPU time or more, the measured ones
                                     under 40 % of the peak while they run (share) */
    LP_MFU_REASON_GEMM_ELSEWHERE, /* GEMM kernels half its GPU time or more, the measured ones
                                     at 40 % of the peak or more while they run (share): the
                                     time goes to GEMMs without shapes (grouped, CUTLASS,
                                     Triton) or beside them */
    LP_MFU_REASON_NON_GEMM,       /* other kernels most of its GPU time (attention already a
                                     fused kernel when the stage has attention kernels) */
};

struct lp_finding {
    enum lp_finding_code code;
    int severity;                 /* 2 act on it, 1 worth a look, 0 fyi */
    int stage;                    /* index into lp_run.stages, -1 the whole run */
    enum lp_finding_unit unit;
    double per_ns, busy_ns, idle_ns; /* per unit: wall, GPU busy and idle time */
    double kernels_per_unit;
    double share;                 /* OUTSIDE_WORK: of all GPU time; LOADING,
                                     PROFILER_WORK: of the stage's wall time; PREFILL_FEW_GEMMS:
                                     elementwise, norm, reduction and copies, of its GPU time */
    uint32_t throttle_bits;       /* bit b: lp_run.power.throttle_share[b] counted */
    double overhead_ns;           /* LOADING, PROFILER_WORK: the time, summed */
    size_t overhead_n;            /* ... and how many records */
    enum lp_mfu_reason reason;    /* PREFILL_LOW_MFU: where the time goes (share: the measured
                                     GEMMs' share of the peak while they run, -1 unknown) */
};

/* A note on how a figure was made or why one is missing. */
enum lp_note_code {
    LP_NOTE_STAGES_INFERRED,      /* prefill and decode inferred from GEMM shapes; count 1:
                                     vision ranges exist, but no prefill or decode range */
    LP_NOTE_ONE_STAGE,            /* the whole run is one stage; count: NVTX ranges (none
                                     matched a stage rule) */
    LP_NOTE_WORK_BY_TIME,         /* count of of pieces of GPU work had no launch call */
    LP_NOTE_TOKENS_PARTIAL,       /* STAGE: count of of occurrences have a token count */
    LP_NOTE_GEMMS_UNLINKED,       /* count of of successful GEMM calls launched no kernel */
    LP_NOTE_GPU_GIVEN,            /* the GPU named (lp_run.util.gpu) is not the one the trace
                                     recorded (its device 0): its peaks are used */
    LP_NOTE_MODEL_MISFIT,         /* the model given does not fit the recorded GEMMs: count,
                                     of: the k and m of the largest weight (the lm_head);
                                     value: the share of linear calls reading the model's
                                     hidden size (lp_run.util.model_misfit) */
    LP_NOTE_VISION_ROWS,          /* count rows per request through the vision projector's
                                     GEMMs, value the rows of lp_run.util.vision_mode */
    /* a token or batch flag against the trace's token dimensions (the flag's value is used):
     * count the value given, of the value the trace shows, value the occurrences whose
     * evidence disagrees (BATCH: decode occurrences with a GEMM token dimension) */
    LP_NOTE_PREFILL_TOKENS_GIVEN, /* --prefill-tokens; the prefills' GEMM token dimension */
    LP_NOTE_DECODE_TOKENS_GIVEN,  /* --decode-tokens; the decode steps found x the batch */
    LP_NOTE_BATCH_GIVEN,          /* --batch; the decode GEMMs' token dimension */
    LP_NOTE_TOKENS_IMPOSSIBLE,    /* value: occurrences whose token count from a flag the run
                                     cannot hold (a prefill of 2^31 tokens or more, a decode of
                                     more steps than pieces of GPU work): withheld, with the
                                     steps and TPOT of a decode */
    LP_NOTE_CODE_COUNT
};

struct lp_note {
    enum lp_note_code code;
    int stage;                    /* index into lp_run.stages, -1 none */
    int64_t count, of;
    double value;
};

/* Why MFU and MBU are missing (lp_run.util.has 0), or LP_UTIL_OK. */
enum lp_util_status {
    LP_UTIL_OK,
    LP_UTIL_NO_MODEL,             /* no model given */
    LP_UTIL_NO_PEAK,              /* the GPU has no peak for the dtype, or no bandwidth */
    LP_UTIL_NO_PREFILL,           /* no prefill stage with a token count */
    LP_UTIL_MODEL_REFUSED,        /* the model refused the workload: lp_run.util.error */
    LP_UTIL_PROMPT_UNDER_SLOTS,   /* the prefill's tokens per sequence (util_workload.prompt)
                                     are fewer than the image slots (vision_tokens) */
    LP_UTIL_OVER_PEAK,            /* the model's FLOPs or (least) bytes over the measured time
                                     pass the GPU's peak: the workload (tokens, batch) or the
                                     model does not describe the run; withheld
                                     (lp_run.util.over: the largest MFU or MBU, over_what
                                     the stage, -1 the request; over_bytes: MBU) */
};

/* Where the prefill logits assumption came from. */
enum lp_logits_source { LP_LOGITS_ASSUMED, LP_LOGITS_GIVEN, LP_LOGITS_LM_HEAD_SHAPE };

/* a stage and kernel category that cost the most GPU time */
struct lp_cost_centre {
    int stage;
    enum lp_kcat cat;
    uint64_t gpu_ns;
    double share;                 /* of lp_run.measured_gpu_ns */
    size_t top_group;             /* its costliest kernel group, SIZE_MAX if none */
};

/* Requests are a prefill (with the vision before it) and the decode after it. TTFT: from
 * a request's start to the end of its prefill's GPU work; TPOT: a request's decode time over
 * its steps; ITL: each decode step whose bounds were found. Headline values are medians. */
/* Why no prefill or decode was found. */
enum lp_llm_why_not {
    LP_LLM_FOUND,
    LP_LLM_NO_SHAPES,             /* no stage ranges, and no GEMM shapes to infer them from */
    LP_LLM_NOT_LLM_SHAPES,        /* no stage ranges, and the GEMM shapes are no LLM's */
    LP_LLM_NO_STAGE_KIND,         /* stage ranges, none of them prefill or decode */
    LP_LLM_SERVING,               /* no stage ranges, and a serving loop (lp_run.serving):
                                     its prefill and decode share forward passes */
};

struct lp_llm_metrics {
    int found;                    /* a prefill or decode stage, from ranges or inferred */
    enum lp_llm_why_not why_not;
    size_t requests;              /* measured ones */
    size_t decode_requests;       /* of them, those with a decode */
    size_t cut_requests;          /* of them, those whose prefill or decode a capture window
                                     cut: no TTFT, TPOT or ITL from them */
    double ttft_s, tpot_s;        /* medians; 0: not measurable */
    struct lp_dist ttft, tpot, itl;
    double prefill_tokens_per_s, decode_tokens_per_s;
    int64_t prefill_tokens, decode_tokens, batch; /* over the measured ranges */
    int64_t prompt_tokens;        /* of one prefill range (all sequences), 0 unknown */
    int64_t prompt_per_sequence;  /* prompt_tokens / batch, 0 unknown */
    int64_t decode_steps;
    enum lp_tokens_source prefill_source, decode_source, batch_source;
    enum lp_steps_source steps_source;
    int prefill_logits;           /* lm_head in prefill: 0 unknown, 1 last token, 2 every token */
    double ttft_outside_share;    /* with a vision stage: of the TTFT summed, the time in no
                                     vision or prefill stage (host work before and between) */
};

/* Why an occurrence was set apart as warmup without being named so (enum values are the
 * figure that gave it away). */
enum lp_warmup_cause {
    LP_WARMUP_NONE, LP_WARMUP_TTFT, LP_WARMUP_TPOT, LP_WARMUP_STAGE_TIME,
};

struct lp_warmup_found {
    enum lp_warmup_cause cause;
    int stage;                    /* the stage whose figure gave it away (before it moved) */
    double value_ns, median_ns;   /* the outlier and the median of the others */
    double ratio;                 /* value / median */
    size_t others;                /* how many others */
    size_t occurrences;           /* occurrences set apart with it (its whole request) */
};

/* Consecutive occurrences of one stage, for timelines. */
struct lp_span {
    uint64_t start, end;
    int stage;
};

/* GEMM kernels (by name) that no recorded cuBLAS call launched, per stage. */
struct lp_unshaped_gemm {
    int stage;
    size_t group;                 /* index into lp_run.names */
    uint64_t calls, gpu_ns;
    double stage_share;           /* of the stage's GEMM-kernel time, shaped or not */
};

struct lp_op_row {
    char *name;
    uint64_t calls, cpu_ns, gpu_ns, self_gpu_ns, kernels;
    size_t top_group[3];          /* kernels under it by GPU time; SIZE_MAX = none */
    uint64_t top_ns[3];
};

/* Operator ranges by operator and input shapes: PyTorch's emit_nvtx(record_shapes=True)
 * names a range "aten::mm, seq = 1, op_id = 2, sizes = [[4, 8], [8, 8]], input_op_ids = ..".
 * A shapes text longer than LP_OP_SHAPES_MAX bytes is cut after a whole element of the outer
 * list and ends ", …]" ("[…]" when the first is longer), so lists that agree up to the cut
 * share a row. */
#define LP_OP_SHAPES_MAX 240
struct lp_op_shape_row {
    size_t op;                    /* its operator: index into lp_run.ops */
    char *shapes;                 /* "[[4, 8], [8, 8]]": no space but one after each comma */
    uint64_t calls, cpu_ns, gpu_ns, self_gpu_ns, kernels; /* as lp_op_row's */
};

/* What a GEMM row's shape says to act on. */
enum lp_gemm_hint {
    LP_GEMM_HINT_GEMV = 1 << 0,         /* min(m, n) <= 16, k >= 256: reads one operand */
    LP_GEMM_HINT_MEMORY_BOUND = 1 << 1, /* intensity below the ridge (not GEMV-like) */
    LP_GEMM_HINT_TILE_FILL = 1 << 2,    /* its tiles under 85 % filled by m x n */
    LP_GEMM_HINT_WAVES = 1 << 3,        /* the last wave leaves SMs idle: under 75 % busy */
    LP_GEMM_HINT_UNALIGNED = 1 << 4,    /* m, n or k not a multiple of 16 bytes */
    LP_GEMM_HINT_STEPS = 1 << 5,        /* one row for sizes stepping through a progression */
};
#define LP_GEMM_HINT_BITS 6

/* Why a row's calls differ in one dimension only (lp_gemm_row.vary_dim). */
enum lp_gemm_vary {
    LP_GEMM_VARY_STEPS,           /* sizes in steps of one stride, nothing more known */
    LP_GEMM_VARY_CONTEXT,         /* sizes within the decode's context (batch x prompt to batch
                                     x (prompt + generated)): the whole context re-projected
                                     every step rather than cached */
    LP_GEMM_VARY_MLA,             /* CONTEXT, reducing over the model's kv_lora_rank: MLA's
                                     compressed KV cache expanded through kv_b_proj every step
                                     (transformers' MLA; absorbed MLA does not) */
};

/* One GEMM shape and dtype in one stage: a row of the report's GEMM table. */
struct lp_gemm_row {
    struct lp_gemm call;          /* its first call: shape, types, entry point, algo, tile */
    int stage;                    /* index into lp_run.stages; -1: no kernel of it ran */
    int replayed;                 /* replays of calls captured into a CUDA graph */
    uint64_t calls, linked;       /* calls (replays), and those tied to kernels */
    uint64_t kernels, gpu_ns;     /* its kernels and their summed duration */
    double flops_per_call;
    double mean_ns;               /* GPU time per linked call */
    double tflops;                /* FLOPs of the linked calls / their GPU time */
    int peak_dtype;               /* enum lp_dtype of the peak it is held to, -1 none */
    double peak_share;            /* of that dense peak, -1 unknown */
    double intensity;             /* FLOPs per least byte moved */
    int memory_bound;             /* intensity below the GPU's ridge (peak / bandwidth) */
    double gbs;                   /* least bytes / GPU time */
    size_t top_group;             /* its costliest kernel (lp_run.names), SIZE_MAX none */
    uint32_t hints;               /* enum lp_gemm_hint bits, with the numbers below */
    double bw_share;              /* gbs / the GPU's bandwidth */
    double ridge;                 /* FLOP/B where its peak meets the bandwidth */
    uint64_t tile_m, tile_n;      /* its tile (rows x columns of D per CTA) */
    double tile_fill;             /* of the tiles, the part m x n fills */
    uint64_t ctas, waves;         /* tiles over the SMs, in waves */
    uint32_t sms;
    double sm_fill;               /* SM slots busy over the waves */
    uint64_t align_elems;         /* elements in 16 bytes of its input type */
    double flops, bytes;          /* its linked calls' FLOPs and least bytes moved */
    /* Calls of a decode stage alike but for one dimension whose sizes step through a
     * progression (a projection over the growing context): one row, the call holding the
     * smallest size; VARY_DIM 'm' or 'n' (0: one shape) from VARY_LO to VARY_HI by VARY_STEP,
     * VARY_VALUES sizes; VARY why */
    char vary_dim;
    uint64_t vary_lo, vary_hi, vary_step;
    size_t vary_values;
    enum lp_gemm_vary vary;
};

/* Rows of lp_run.graphs at most: each graph id costs a few bytes in a trace, a row
 * kilobytes in report.json */
#define LP_GRAPH_ROWS_MAX 1000

/* What the rows of lp_run.graphs past LP_GRAPH_ROWS_MAX add up to */
struct lp_graph_unlisted {
    size_t rows;
    uint64_t replays, kernels, gpu_ns;
};

/* One executable CUDA graph's replays in one stage. */
struct lp_graph_row {
    uint32_t graph_id;            /* as its kernels carry it */
    int stage;                    /* index into lp_run.stages */
    uint64_t replays, kernels, gpu_ns; /* kernels: recorded one by one (0 when whole) */
    double kernels_per_replay;    /* when whole: its kernel nodes (graph records), 0 unknown */
    int whole;                    /* replays recorded whole (record --graphs replay): no
                                     kernel of it was recorded, gpu_ns spans the replays */
    uint64_t gemm_kernels;        /* kernels of the GEMM category */
    uint64_t gemm_shaped;         /* ... tied to a captured GEMM call: shape and dtype known */
    uint64_t traced;              /* kernels whose captured node was found */
    int32_t capture_range;        /* innermost range open where it was captured (index into
                                     lp_run.ranges.v), -1 unknown */
};

/* The default stage rules as one regular expression (extended, case-insensitive) matching
 * the name of any range one of them matches: what `record --counters` cuts segments at.
 * Allocated; NULL out of memory. */
char *lp_stage_rules_regex(void);
/* The stage rules the report uses when none are given (NAME=REGEX), *N of them */
const char *const *lp_stage_default_rules(size_t *n);
/* The number of a "KEY=N" word of a range name ("decode tokens=64": 64), 0 when absent */
int64_t lp_stage_name_value(const char *name, const char *key);

/* What lp_run_analyze works out */
enum lp_run_scope {
    LP_RUN_SCOPE_REPORT = 0,      /* every figure of the report */
    LP_RUN_SCOPE_PLACES = 1,      /* what the exports write: the ranges, the groups (names,
                                     short names, categories), capture windows, serving
                                     iterations, stages and their spans, each kernel's group,
                                     stage and capture range, t0_ns, kernels_recorded and the
                                     timeline's first_ns and last_ns; the passes that make
                                     them fill in some more (stage statistics, steps, warmup,
                                     the graphs' table). The kernel tables, operators,
                                     timeline, power, communication, overhead, tokens, LLM
                                     metrics, spread, utilisation, GEMM table, counters, PM
                                     and findings are left 0 or NULL: not for a report. */
};

struct lp_run_options {
    enum lp_run_scope scope;
    const char *const *stage_rules; /* "NAME=REGEX" (extended, case-insensitive); NULL: defaults */
    size_t n_stage_rules;
    size_t top_k;                 /* rows per kernel table (0: 15) */
    uint64_t gap_ns;              /* idle gap threshold (0: 100 us) */
    int keep_warmup;              /* count warmup occurrences as measured, named or found */
    int64_t prefill_tokens, decode_tokens, batch; /* per occurrence; 0: from ranges */
    /* utilisation: needs MODEL; the GPU from GPU_NAME or the trace's device */
    const struct lp_model *model;
    const struct lp_workload *workload; /* dtypes and vision mode; NULL: defaults */
    int vision_set;               /* the workload's vision mode and tiles were given; else a
                                     DeepSeek-OCR-2 run's crops are read off its projector */
    int prefill_logits_set;       /* the workload's prefill_logits_all was chosen by the user;
                                     else it follows the prefill's lm_head shape */
    const struct lp_gpu_table *gpus;
    const char *gpu_name;
    double peak_tflops, mem_bw_gbs; /* overrides when > 0 */
    const char *command;          /* the recorded command line, for the reports; may be NULL */
    /* provenance of MODEL: the config.json read and its text, kept whole in report.json;
     * NULL: not known */
    const char *model_file, *model_config;
    /* what the program said it was asked to do (meta.json's "request"), JSON text; NULL: none */
    const char *request;
};

/* Capture windows (record --capture): kernels were recorded only inside them, so stage and
 * step figures come only from the stage ranges' parts inside a window. */
struct lp_capture_facts {
    int windowed;                 /* the trace's "capture" is not "all": 1 */
    const char *mode;             /* that header value (the trace's string), NULL: all */
    int kind;                     /* what opened the windows: enum lp_capture_mode */
    size_t n_windows;
    struct lp_window *windows;    /* by start, each once, closed (one never closed: to the last
                                     kernel) */
    uint64_t recorded_ns;         /* summed window lengths */
    uint64_t span_ns;             /* the recording's span (header start to end, else the
                                     records'), 0 unknown */
    size_t occ_outside;           /* stage range occurrences outside every window: left out */
    size_t occ_cut;               /* occurrences cut at a window's edge */
    size_t occ_across;            /* occurrences over two windows or more: one part per
                                     window, the time between them left out */
    /* NVML (power.c; NVML samples everywhere): energy in the windows its samples bracket */
    double *window_energy_j;      /* per window, NaN where no samples bracket it; NULL
                                     without samples */
    size_t n_energy;              /* windows with energy */
    double energy_j;              /* summed over them */
    double power_mean_w;          /* energy_j over their summed length */
};

/* ---- serving engines: the iterations of continuous batching (serving.c) ---- */

/* What a forward pass of a serving loop ran: decode sequences (one token each), prompt tokens
 * (prefill chunks), or both. */
enum lp_iter_kind {
    LP_ITER_KIND_DECODE,          /* tokens in flight = sequences sampled, or a CUDA graph */
    LP_ITER_KIND_PREFILL,         /* prompt tokens only */
    LP_ITER_KIND_MIXED,           /* decode sequences and prompt tokens (chunked prefill) */
    LP_ITER_KIND_UNKNOWN,         /* no token dimension was seen (no GEMM, no graph) */
    LP_ITER_KIND_COUNT
};

/* Where an iteration's decode sequences (and so its prompt tokens) came from. */
enum lp_iter_source {
    LP_ITER_SOURCE_SHAPES,        /* exact: tokens in flight = sequences sampled (or a graph),
                                     or the recording's first forward (nothing to decode) */
    LP_ITER_SOURCE_CARRIED,       /* inferred: the sequences the iteration before sampled, at
                                     most those this one samples (a sequence that finished
                                     there is counted once too many) */
    LP_ITER_SOURCE_MARKS,         /* counted: the request convention's token (and prefill)
                                     marks */
    LP_ITER_SOURCE_COUNT
};

/* One forward pass: from the first kernel of its forward (its first linear GEMM, or its CUDA
 * graph) to the end of its lm_head's kernels, the one GEMM every pass runs once. */
struct lp_iteration {
    uint64_t host_ns;             /* host start of its lm_head call */
    uint64_t start, end;          /* GPU, trace clock; START 0: not known (the first) */
    uint64_t period_ns;           /* END - the previous iteration's END: what each of its decode
                                     sequences waited for its token; 0 for the first, and after
                                     an iteration outside every capture window */
    uint64_t gap_ns;              /* of the period, before START: sampling, scheduling, input
                                     preparation of the host between two forwards */
    uint64_t busy_ns;             /* GPU busy in the period */
    int64_t tokens;               /* tokens in flight: the token dimension of its forward's
                                     linear GEMMs (a graph: its sequences sampled); 0 unknown */
    int64_t sampled;              /* sequences sampled: the lm_head's token dimension */
    int64_t decode;               /* decode sequences, each one token (enum lp_iter_source) */
    int64_t prefill_tokens;       /* prompt tokens: TOKENS - DECODE, or the prefill marks' */
    int64_t bucket;               /* a CUDA graph replay: the token dimension it was captured
                                     for (BUCKET - SAMPLED rows padded); 0 eager or unknown */
    enum lp_iter_kind kind;
    enum lp_iter_source source;
};

/* Iteration times (END - START) of one kind of iteration. */
struct lp_iter_class {
    size_t n;                     /* iterations of the kind */
    struct lp_dist time;          /* of those with a START */
    int64_t tokens, decode, prefill_tokens, sampled; /* summed */
};

/* Decode-only and mixed iterations with DECODE sequences in [LO, HI] (powers of two): the
 * cost of a prefill chunk to the decodes that wait for it. */
struct lp_batch_row {
    int64_t lo, hi;
    size_t n_decode, n_mixed;
    double decode_p50_ns, mixed_p50_ns; /* iteration time medians; 0 none */
    double decode_p90_ns, mixed_p90_ns; /* ... and 90th percentiles */
    double mixed_prefill_mean;          /* prompt tokens per mixed iteration */
};

/* CUDA graph replays of one captured size. */
struct lp_graph_bucket {
    int64_t bucket;
    size_t n;                     /* iterations */
    int64_t sampled;              /* their sequences, summed (the real rows) */
    double mean_sampled;          /* sampled / n */
    double padding_share;         /* of its rows, those past the sequences sampled */
};

/* One request of the request convention: its range, marks and latency. */
struct lp_serving_request {
    char *id;
    int64_t prompt;               /* its range's prompt=N word, 0 absent */
    uint64_t admit, end;          /* its range (END: the recording's end when cut) */
    uint64_t first_token, last_token; /* 0: no token mark */
    int64_t tokens;               /* token marks */
    int64_t prefill_tokens;       /* from its prefill marks, 0 none */
    size_t prefill_iterations;    /* iterations its prefill marks fell before */
    double ttft_ns;               /* first token - admission; -1 no token */
    double queue_ns;              /* admission - start of the forward of its first prefill
                                     mark; -1 without prefill marks */
    double prefill_ns;            /* that start to its first token (TTFT - queue); -1 */
    int64_t shared_tokens;        /* tokens in flight of its prefill iterations that were not
                                     its prompt's: decodes and other prompts beside it */
    double tpot_ns;               /* (last token - first) / (tokens - 1); -1 under 2 tokens */
    int cut;                      /* never ended: the recording stopped first */
    uint64_t prefill_from;        /* the start of the forward of its first prefill mark, 0 */
};

/* What showed a serving engine (continuous batching). */
enum lp_serving_cause {
    LP_SERVING_CAUSE_NONE,        /* not found: a one-request-at-a-time program */
    LP_SERVING_CAUSE_CONVENTION,  /* request ranges or token marks of the convention */
    LP_SERVING_CAUSE_SHRANK,      /* decode-only iterations whose batch shrank with no prefill
                                     between: a sequence left while others ran on */
    LP_SERVING_CAUSE_RAGGED,      /* a prefill of several sequences whose tokens are no
                                     multiple of them: prompts of several lengths in one flat
                                     batch */
};

#define LP_SERVING_SLOWEST 5
struct lp_serving {
    enum lp_serving_cause cause;  /* NONE: no serving section */
    int64_t cause_value[3];       /* SHRANK: the batch before and after and the iteration;
                                     RAGGED: tokens, sequences, the iteration (iterations count
                                     from 0, as in iters) */
    struct lp_iteration *iters;   /* in time order (iterations outside capture windows left
                                     out) */
    uint32_t device;              /* the CUDA ordinal the iterations' kernels ran on (most) */
    size_t n_iters;
    size_t anchors_outside;       /* lm_head calls recorded with no kernel (captured into a
                                     graph, or their kernels not recorded): no iteration */
    struct lp_iter_class cls[LP_ITER_KIND_COUNT];
    struct lp_dist period;        /* over iterations with a period */
    /* token-weighted inter-token latency: each decode sequence of an iteration waited its
       period, so each generated token counts once (no request identity needed) */
    struct lp_dist itl;
    size_t itl_inferred;          /* of its tokens, those of iterations with inferred decodes */
    int64_t generated;            /* tokens sampled by the iterations (with the convention,
                                     the token marks that fell in them) */
    int64_t prefill_tokens;
    uint64_t span_ns;             /* first iteration's START (or END) to the last END */
    double generated_per_s, prefill_per_s;
    /* the periods of the iterations with decodes: their gaps before the forward (sampling,
       scheduling, input preparation, Python; GPU work before the first GEMM too) and the GPU
       busy time in them (what is not busy is the GPU waiting, within the forwards too) */
    uint64_t sched_gap_ns, sched_period_ns, sched_busy_ns;
    double sched_share;           /* gap / period; NaN none */
    double decode_busy_share;     /* busy / period; NaN none */
    struct lp_batch_row *batches;
    size_t n_batches;
    double interference;          /* median over batch rows with both kinds of
                                     mixed_p50 / decode_p50; 0 none */
    size_t interference_rows;
    struct lp_graph_bucket *buckets; /* by size */
    size_t n_buckets;
    double padding_share;         /* padded rows of the graph iterations / their bucket rows;
                                     NaN without graphs */
    /* the request convention: absent (n_reqs 0), per-request figures are not given */
    struct lp_serving_request *reqs; /* by admission */
    size_t n_reqs;
    size_t reqs_cut;              /* never ended: left out of the distributions */
    size_t reqs_no_token;         /* ended without a token mark */
    size_t ids_reused;            /* request ranges whose id an earlier one had */
    size_t marks_unknown;         /* token or prefill marks of no request range open then */
    size_t token_marks, prefill_marks;
    size_t marked_tokens;         /* token marks that fell in a recorded iteration */
    struct lp_dist ttft, tpot, queue, req_itl; /* over requests (req_itl: each token gap) */
    size_t slowest[LP_SERVING_SLOWEST]; /* indices into reqs by TTFT, longest first */
    size_t n_slowest;
};

/* The parts of a run's report that one pass fills (struct lp_run below) */

/* the timeline (timeline.c): busy, idle gaps and their causes, bins, copies and memory */
struct lp_run_timeline {
    uint64_t first_ns, last_ns;         /* span of GPU work */
    uint64_t busy_ns;
    double busy_share;                  /* of the GPU span, less unrecorded_ns; NaN: no
                                           kernels recorded */
    uint64_t unrecorded_ns;             /* of the GPU span, between capture windows */
    size_t n_gaps;
    uint64_t gap_ns, gap_ns_by_cause[LP_GAP_CAUSE_COUNT], gap_host_api_ns;
    struct lp_gap *top_gaps;            /* the longest, by duration */
    size_t n_top_gaps;
    struct lp_util_bin *bins;           /* busy over time from bins_from_ns to last_ns */
    size_t n_bins;
    uint64_t bins_from_ns;              /* first_ns, or the end of a leading warm-up */
    uint64_t memcpy_bytes[4], memset_bytes, peak_alloc_bytes;
};

/* how the GPU's work was tied to stages (stages.c) */
struct lp_run_attribution {
    size_t by_launch, by_time, outside; /* kernels: by their launching call, by time, in none */
};

/* NVML's samples (power.c) */
struct lp_run_power {
    int device;                         /* -1 without samples */
    size_t samples;
    int averaged;
    double mean_w, peak_w, energy_j;
    uint64_t update_ns;                 /* median time between changes of the readings */
    double throttle_share[LP_THROTTLE_BITS]; /* share of samples with each reason bit */
    struct lp_power_point *points;
    size_t n_points;
};

/* MFU and MBU against the analytic model (utilisation.c) */
struct lp_run_util {
    int has;
    double over;                        /* LP_UTIL_OVER_PEAK: the largest MFU or MBU found */
    int over_what, over_bytes;          /* its stage (-1 the request); 1: an MBU */
    int model_misfit;                   /* the model given does not fit the recorded GEMM
                                           shapes (LP_NOTE_MODEL_MISFIT): its MFU and MBU are
                                           kept out of the headline */
    enum lp_util_status status;         /* why not (has 0) */
    char error[256];                    /* MODEL_REFUSED: the model's message */
    struct lp_workload workload;        /* the workload modelled: the text prompt, the
                                           generated tokens (steps + 1), batch, dtypes */
    int64_t decode_context;             /* the model's context at the mean decode step */
    enum lp_logits_source logits_source;
    struct lp_gpu gpu;
    enum lp_dtype dtype;
    double request_flops, request_bytes, request_s, request_tflops, request_gbs, mfu, mbu;
    /* a model with vision: its image slots per prompt in the workload's vision mode, and the
     * measured prompt's rest (text) */
    int64_t vision_tokens, text_tokens;
    enum lp_vision_mode vision_mode;
    int64_t vision_crops;               /* DeepSeek-OCR-2: local crops per image (gundam) */
    int vision_from_rows;               /* mode and crops read off the projector's rows */
    int64_t image_rows;                 /* measured: tokens per request through the vision
                                           projector's GEMMs (cuBLAS shapes); 0 unknown */
};

/* Shapes the GEMM table lists at most (lp_run_gemms.rows): the costliest; the others are
 * counted in lp_run_gemms.unlisted. A trace a few bytes per call can make every call a shape
 * of its own, and each listed one costs kilobytes in report.json. */
#define LP_GEMM_ROWS_MAX 1000

/* What the GEMM table's shapes past LP_GEMM_ROWS_MAX add up to. With the rows they add up
 * to the calls, linked calls, GPU time and FLOPs of lp_run_gemms less those in warm-up. */
struct lp_gemm_unlisted {
    size_t shapes;
    uint64_t calls, linked, kernels, gpu_ns;
    double flops;                       /* of their linked calls */
    double share;                       /* gpu_ns over the table's (rows' and these'); -1
                                           when that is 0 */
};

/* GEMM calls (gemm.c, trace format 1.1) */
struct lp_run_gemms {
    struct lp_gemm_row *rows;           /* by total GPU time; at most LP_GEMM_ROWS_MAX */
    size_t n_rows;
    struct lp_gemm_unlisted unlisted;   /* the shapes past those */
    uint64_t calls, linked, failed, ns;
    double flops;
    char state[160];                    /* the trace's "gemm" header: on, or off and why;
                                           "" not recorded (format 1.0, or a light record) */
    uint64_t unshaped_ns;               /* GEMM kernels no recorded call launched */
    struct lp_unshaped_gemm *unshaped;  /* by GPU time, warmup left out */
    size_t n_unshaped;
    uint64_t warmup_calls;              /* calls in warmup: counted, not in the table */
    uint64_t captured;                  /* calls captured into a CUDA graph (they ran nothing
                                           then); each replay of one counts as a call */
    uint64_t replayed;                  /* replays of captured calls, among calls */
};

/* communication kernels over the run (comm.c; per stage in lp_stage_report) */
struct lp_run_comm {
    size_t kernels;
    uint64_t ns, overlap_ns;
    double overlap_share;               /* NaN without communication */
};

/* The in-process run-to-run spread (spread.c): the repeats within one process (each measured
 * stage's occurrences, the requests' TTFT and TPOT) against the plan's +/-10 % criterion. */
#define LP_SPREAD_TOLERANCE 0.10        /* every value within +/-10 % of its figure's mean */

enum lp_spread_what {
    LP_SPREAD_STAGE,                    /* a measured stage's time per occurrence (wall) */
    LP_SPREAD_TTFT,                     /* TTFT over the measured requests (llm.ttft) */
    LP_SPREAD_TPOT,                     /* TPOT over the measured requests (llm.tpot) */
};

enum lp_spread_verdict {
    LP_SPREAD_TOO_FEW,                  /* no figure with 2 values or more */
    LP_SPREAD_WITHIN,                   /* every figure within the tolerance */
    LP_SPREAD_OUTSIDE,                  /* one figure or more outside it */
};

/* one figure with 2 values or more: its statistics over them (times in ns) */
struct lp_spread_figure {
    enum lp_spread_what what;           /* a stage, TTFT or TPOT */
    int stage;                          /* STAGE: index into lp_run.stages; -1 otherwise */
    size_t n;                           /* values: occurrences or requests */
    double mean_ns, std_ns;             /* mean; sample standard deviation (n - 1) */
    double cv;                          /* std / mean (0 when the mean is 0) */
    double min_ns, max_ns;              /* the smallest and largest value */
    double worst;                       /* max |x - mean| / mean over the values (0: mean 0) */
    int within;                         /* worst <= tolerance: every value within it */
};

struct lp_run_spread {
    double tolerance;                   /* LP_SPREAD_TOLERANCE */
    struct lp_spread_figure *figures;   /* stages in their order, then TTFT, TPOT */
    size_t n_figures;                   /* those with 2 values or more */
    size_t outside;                     /* of them, those not within the tolerance */
    size_t single_stages;               /* measured stages with one occurrence: left out */
    size_t step_stages;                 /* decode stages whose occurrences are single steps:
                                           their jitter is per token (ITL), not between
                                           repeats; left out, TPOT judges the requests */
    enum lp_spread_verdict verdict;     /* TOO_FEW when n_figures is 0 */
};

struct lp_work; /* one piece of GPU work (src/analyze/run_internal.h) */

struct lp_run {
    const struct lp_trace *trace;
    struct lp_run_options opt;
    /* kernel groups: distinct names (kernels, then "[CUDA memcpy HtoD]"-style copies) */
    char **names, **short_names;
    enum lp_kcat *cats;
    size_t n_names;
    /* the analysis' GPU work by start, each of the trace's kernels' place in it, the stage of
     * each stage occurrence and of work outside them: read through lp_run_kernel_group and
     * lp_run_kernel_stage */
    struct lp_work *work;
    int32_t *kernel_work;
    int32_t *occ_stage;
    int32_t outside_stage;
    uint64_t t0_ns;                     /* earliest timestamp of any record */
    struct lp_stage_report *stages;
    size_t n_stages;
    struct lp_kernel_table kernels;     /* top-K over the run */
    struct lp_kernel_table all_kernels; /* every group over the run */
    struct lp_op_row *ops;
    size_t n_ops;
    uint64_t op_ranges;
    struct lp_op_shape_row *op_shapes;  /* by GPU time, then CPU time (operators.c) */
    size_t n_op_shapes;
    uint64_t op_shapes_unread;          /* operator ranges whose sizes list could not be read
                                           (unbalanced, not numbers): in ops only */
    struct lp_llm_metrics llm;
    struct lp_run_timeline timeline;    /* timeline.c */
    struct lp_run_attribution attribution; /* stages.c */
    struct lp_run_power power;          /* power.c: device -1 without samples */
    struct lp_run_util util;            /* utilisation.c: has 0 without MFU and MBU */
    /* what the reader could not make whole, and notes to show */
    struct lp_note *notes;
    size_t n_notes;
    struct lp_finding *findings;
    size_t n_findings;
    struct lp_run_gemms gemm;           /* gemm.c (trace format 1.1) */
    int stages_inferred;                /* no stage ranges: prefill/decode from GEMM shapes */
    int kernels_recorded;               /* 0: the record kept no kernels (--light) */
    struct lp_run_comm comm;            /* comm.c */
    struct lp_run_spread spread;        /* spread.c: the in-process spread, +/-10 % check */
    uint64_t replays_whole;             /* CUDA graph replays recorded whole (record --graphs
                                           replay): GPU work whose kernels are unknown */
    struct lp_capture_facts capture;    /* windows.c */
    struct lp_graph_row *graphs;        /* by stage, then graph id: at most LP_GRAPH_ROWS_MAX,
                                           those of most GPU time */
    size_t n_graphs;
    struct lp_graph_unlisted graphs_unlisted; /* the rows past those */
    int32_t *kernel_capture_range;      /* per kernel of the trace: the range its graph node
                                           was captured in, -1; NULL without graph records */
    struct lp_warmup_found warmup;      /* cause NONE: nothing set apart by the rule */
    struct lp_span *spans;              /* stage spans in time order */
    int32_t *range_stage;               /* per range (ranges.v): the stage of the occurrence
                                           it opens, -1 when it opens none */
    size_t n_spans;
    struct lp_cost_centre centres[3];
    size_t n_centres;
    uint64_t measured_gpu_ns;           /* GPU time of the measured stages (warmup and work
                                           outside the stages left out): the centres' base */
    uint64_t lost_records;              /* sum of the trace's loss counts */
    size_t losses_uncounted;            /* losses with count 0: notes, or records not counted */
    struct lp_run_counters counters;    /* segments 0: no counters recorded */
    struct lp_serving serving;          /* serving.c: cause NONE when not a serving loop */
    struct lp_run_pm pm;                /* all.samples 0: no PM samples recorded */
    struct lp_run_overhead overhead;    /* CUPTI's overhead records (overhead.c) */
    struct lp_ranges ranges;
    struct lp_deep *deep;               /* kernels in depth (llmprof/deep.h); NULL: none */
    void (*deep_free)(struct lp_run *r); /* frees deep: set by who made it (the deep dive
                                            sits on top of this analysis) */
};

/* Copy direction of a CUpti memcpy kind: 0 HtoD, 1 DtoH, 2 DtoD, 3 other. It is also the
 * group (lp_run.names index) of copies in that direction; group 4 is memset. */
int lp_copy_direction(uint32_t copy_kind);

/* ---- helpers the products built on runs share (llmprof/compare.h, llmprof/deep.h) ---- */

/* The Q quantile of sorted V (N > 0): linear between the closest ranks, as lp_dist's. */
double lp_quantile_sorted(const double *v, size_t n, double q);
/* The CUDA ordinal most of T's kernels ran on (below 64; equal counts: the lowest), -1
 * without kernels. */
int lp_kernel_device(const struct lp_trace *t);
/* qsort comparators of doubles and of uint64_t, ascending */
int lp_cmp_double(const void *a, const void *b);
int lp_cmp_u64(const void *a, const void *b);
/* a stage whose time is measured: not warm-up, not the work outside the stages */
int lp_stage_measured(const struct lp_stage_report *s);
int lp_stage_kind_measured(enum lp_stage_kind k);
/* two GEMM calls of one shape: m, n, k, batch, transposes, types, compute type and epilogue
 * alike */
int lp_gemm_same_shape(const struct lp_gemm *a, const struct lp_gemm *b);
/* A total order of the shapes lp_gemm_same_shape tells apart: <0, 0 (the same shape), >0 */
int lp_gemm_shape_cmp(const struct lp_gemm *a, const struct lp_gemm *b);

/* The bytes lp_run_analyze takes at its peak beyond T itself, at least: per piece of GPU
 * work its entry in the work array, the per-kernel arrays and the kernel tables' grouping
 * (docs/report-memory.md; more where records are out of start order). An estimate from T's
 * counts, before the analysis. */
uint64_t lp_run_memory_need(const struct lp_trace *t);
/* Analyses trace T. Returns LP_OK, or an error with ERR (bad stage rule, no memory). */
int lp_run_analyze(const struct lp_trace *t, const struct lp_run_options *opt,
                   struct lp_run *r, char *err, size_t errlen);
void lp_run_free(struct lp_run *r);
/* The group (index into R's names) of the trace's kernel I, as analysed. Inside the analysis
 * only from the pass that places the kernels in the work on (lp_run_kernel_places, after the
 * timeline): 0 before. */
uint32_t lp_run_kernel_group(const struct lp_run *r, size_t i);
/* The stage (index into R's stages: warmup and outside are stages too) of the trace's kernel
 * I; -1 before the kernels were placed, as for lp_run_kernel_group */
int32_t lp_run_kernel_stage(const struct lp_run *r, size_t i);

#endif
