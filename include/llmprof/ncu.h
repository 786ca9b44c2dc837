/* Nsight Compute's results for a deep dive (issue 14), as `ncu -i REPORT --csv --page raw`
 * exports them: a row of metric names, a row of their units, then one row per profiled
 * kernel. llmprof reads the metrics its per-kernel view needs, in base units, and the warp
 * stall reasons; every other column is skipped. Layout and names measured with Nsight
 * Compute 2025.3.1 on an H200: tests/gpu/deep.md. */
#ifndef LLMPROF_NCU_H
#define LLMPROF_NCU_H

#include <stddef.h>
#include <stdint.h>

/* What each unit row entry may say, and the base unit the value is converted to. */
enum lp_ncu_unit {
    LP_NCU_UNIT_TIME,    /* ns, us, ms, s (or nsecond ...): to ns */
    LP_NCU_UNIT_PCT,     /* %: percent as written */
    LP_NCU_UNIT_RATE,    /* byte/s or byte/second with K, M, G, T prefixes (powers of 1000,
                            as ncu's Kbyte is 1000 bytes): to byte/s */
    LP_NCU_UNIT_FREQ,    /* hz with K, M, G prefixes, or cycle/second, cycle/usecond,
                            cycle/nsecond (older ncu): to Hz */
    LP_NCU_UNIT_ANY,     /* counts (block, SM, register/thread, none): as written */
    LP_NCU_UNIT_COUNT,   /* counts of work (inst, op, none) with K, M, G, T prefixes (ncu
                            scales them unless exported with --print-units base): to one */
};

/* The metrics read: X(ID, COLUMN, UNIT, REQUIRED). A file without a required column is
 * refused; an optional one missing, or in a unit not read, leaves the metric absent, as does
 * a value that is no number ("n/a") in any column. Add at the end only. */
#define LP_NCU_METRIC_LIST(X)                                                                  \
    X(DURATION, "gpu__time_duration.sum", LP_NCU_UNIT_TIME, 1)                                \
    X(SOL_SM, "sm__throughput.avg.pct_of_peak_sustained_elapsed", LP_NCU_UNIT_PCT, 1)          \
    X(SOL_MEMORY, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",         \
      LP_NCU_UNIT_PCT, 1)                                                                      \
    X(SOL_DRAM, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", LP_NCU_UNIT_PCT, 0)  \
    X(DRAM_BW, "dram__bytes.sum.per_second", LP_NCU_UNIT_RATE, 0)                              \
    X(OCC_ACHIEVED, "sm__warps_active.avg.pct_of_peak_sustained_active", LP_NCU_UNIT_PCT, 0)   \
    X(OCC_THEORETICAL, "sm__maximum_warps_per_active_cycle_pct", LP_NCU_UNIT_PCT, 0)           \
    X(LIMIT_REGISTERS, "launch__occupancy_limit_registers", LP_NCU_UNIT_ANY, 0)               \
    X(LIMIT_SHARED_MEM, "launch__occupancy_limit_shared_mem", LP_NCU_UNIT_ANY, 0)             \
    X(LIMIT_BLOCKS, "launch__occupancy_limit_blocks", LP_NCU_UNIT_ANY, 0)                     \
    X(LIMIT_WARPS, "launch__occupancy_limit_warps", LP_NCU_UNIT_ANY, 0)                       \
    X(REGISTERS, "launch__registers_per_thread", LP_NCU_UNIT_ANY, 0)                          \
    X(TENSOR, "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",              \
      LP_NCU_UNIT_PCT, 0)                                                                      \
    X(GRID, "launch__grid_size", LP_NCU_UNIT_ANY, 0)                                          \
    X(BLOCK, "launch__block_size", LP_NCU_UNIT_ANY, 0)                                        \
    X(SM_COUNT, "launch__sm_count", LP_NCU_UNIT_ANY, 0)                                       \
    X(WAVES, "launch__waves_per_multiprocessor", LP_NCU_UNIT_ANY, 0)                          \
    X(SM_CLOCK, "sm__cycles_elapsed.avg.per_second", LP_NCU_UNIT_FREQ, 0)                    \
    X(LIMIT_BARRIERS, "launch__occupancy_limit_barriers", LP_NCU_UNIT_ANY, 0)                 \
    X(OPS_BF16, "sm__ops_path_tensor_src_bf16_dst_fp32.sum", LP_NCU_UNIT_COUNT, 0)            \
    X(OPS_FP16, "sm__ops_path_tensor_src_fp16.sum", LP_NCU_UNIT_COUNT, 0)                     \
    X(OPS_FP8, "sm__ops_path_tensor_src_fp8.sum", LP_NCU_UNIT_COUNT, 0)                       \
    X(OPS_TF32, "sm__ops_path_tensor_src_tf32_dst_fp32.sum", LP_NCU_UNIT_COUNT, 0)            \
    X(FFMA, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", LP_NCU_UNIT_COUNT, 0)      \
    X(FADD, "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", LP_NCU_UNIT_COUNT, 0)      \
    X(FMUL, "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", LP_NCU_UNIT_COUNT, 0)

enum lp_ncu_metric {
#define LP_NCU_METRIC_ID(id, column, unit, required) LP_NCU_##id,
    LP_NCU_METRIC_LIST(LP_NCU_METRIC_ID)
#undef LP_NCU_METRIC_ID
    LP_NCU_METRIC_COUNT
};

/* The metrics the sections llmprof deep asks for do not hold, added with --metrics: the
 * tensor-core FLOPs by input type (the counters `record --counters` reads) and the FP32
 * instructions, for achieved FLOP/s and arithmetic intensity. */
#define LP_NCU_EXTRA_METRICS                                                                   \
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum,sm__ops_path_tensor_src_fp16.sum,"              \
    "sm__ops_path_tensor_src_fp8.sum,sm__ops_path_tensor_src_tf32_dst_fp32.sum,"               \
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,"                                     \
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,"                                     \
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum"

/* What llmprof deep asks ncu for by default (--sections report): the metrics this file
 * reads and no section, so that ncu replays each kernel as few times as they need; the
 * stall reasons as a regular expression (ncu's "regex:"), all in its one --metrics. */
#define LP_NCU_METRIC_COLUMN(id, column, unit, required) column ","
#define LP_NCU_REPORT_METRICS                                                                  \
    LP_NCU_METRIC_LIST(LP_NCU_METRIC_COLUMN) "device__attribute_display_name,"                 \
    "regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio$"

/* Warp stall reasons are the columns smsp__average_warps_issue_stalled_<REASON>_per_issue_
 * active.ratio: warps stalled for REASON per issued instruction. */
struct lp_ncu_kernel {
    uint32_t id;                       /* ncu's ID: the order it profiled the kernels in */
    char *name;                        /* the kernel's name as ncu wrote it (mangled when
                                          exported with --print-kernel-base mangled) */
    int32_t grid[3], block[3];         /* "Grid Size" and "Block Size"; 0 when absent */
    char *nvtx;                        /* the push/pop ranges open on its thread as ncu wrote
                                          them with --nvtx ("<default domain>:decode:..."),
                                          "" without */
    double metric[LP_NCU_METRIC_COUNT];
    uint32_t valid;                    /* bit (1 << enum lp_ncu_metric): the value was there */
    double *stall;                     /* lp_ncu_report.n_stalls values; NaN: not there */
};

struct lp_ncu_report {
    char *name;                        /* the file it was read from */
    char *device;                      /* device__attribute_display_name of the first kernel */
    struct lp_ncu_kernel *kernels;
    size_t n_kernels;
    char **stall_names;                /* REASON of each stall column, in the file's order */
    size_t n_stalls;
};

/* Bounds: files over 256 MiB, more than 100,000 kernels, 20,000 columns or 64 stall columns
 * are refused. */
#define LP_NCU_MAX_BYTES ((size_t)256 << 20)

/* Reads PATH (lp_ncu_parse on its bytes). Returns LP_OK, or an error with ERR saying which
 * file, which column or row, and what to do. */
int lp_ncu_read(struct lp_ncu_report **out, const char *path, char *err, size_t errlen);
/* The same on SIZE bytes at DATA, NAME in the messages. */
int lp_ncu_parse(struct lp_ncu_report **out, const void *data, size_t size, const char *name,
                 char *err, size_t errlen);
void lp_ncu_free(struct lp_ncu_report *r);
/* The column a metric is read from; NULL past the list. */
const char *lp_ncu_metric_column(enum lp_ncu_metric m);

#endif
