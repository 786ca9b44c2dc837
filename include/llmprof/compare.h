/* llmprof's comparisons, built on the analysis of single runs (llmprof/analyze.h): the
 * traces of one run side by side (ranks.c: ranks or independent processes, their waits in
 * collectives) and two runs compared (diff.c: figures with their noise, kernels, GEMMs,
 * operators, and a gate's rules on them). Facts and codes only. */
#ifndef LLMPROF_COMPARE_H
#define LLMPROF_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include "llmprof/analyze.h"

/* ---- several traces of one run: ranks, or independent processes (ranks.c) ---- */

/* A stage of one rank, as its own analysis found it (measured occurrences). */
struct lp_rank_stage {
    char *name;
    enum lp_stage_kind kind;
    size_t occurrences;
    uint64_t wall_ns, busy_ns, gpu_ns;  /* summed over the occurrences */
    uint64_t comm_ns, comm_overlap_ns;
    uint64_t wait_ns;                   /* in collectives, waiting for the last rank (set by
                                           lp_ranks_analyze; 0 when not compared) */
};

/* What a communication kernel does, from its name (NCCL's ncclDevKernel_AllReduce_...,
 * ncclKernel_SendRecv_...): bits, so that a group's are one word */
enum lp_coll_op {
    LP_COLL_OP_ALL_REDUCE = 1 << 0,
    LP_COLL_OP_ALL_GATHER = 1 << 1,
    LP_COLL_OP_REDUCE_SCATTER = 1 << 2,
    LP_COLL_OP_BROADCAST = 1 << 3,
    LP_COLL_OP_REDUCE = 1 << 4,
    LP_COLL_OP_SEND_RECV = 1 << 5,      /* point to point: send, receive, all-to-all */
    LP_COLL_OP_OTHER = 1 << 6,
};
#define LP_COLL_OP_COUNT 7

/* One communication kernel, for matching collectives across ranks. */
struct lp_rank_coll {
    uint64_t start, end;
    uint64_t name_hash;                 /* of its full name */
    int32_t stage;                      /* index into lp_rank.stages, -1 */
    uint32_t op;                        /* enum lp_coll_op */
};

/* What the run report needs of one trace, kept after its analysis is freed. */
struct lp_rank {
    char *trace;                        /* the trace's file name */
    int64_t rank, local_rank, world_size; /* from the launcher's variables; -1 unknown */
    int64_t pid;                        /* -1 unknown */
    char *host;                         /* NULL unknown */
    uint32_t device;                    /* the CUDA ordinal most of its kernels ran on */
    int has_uuid;
    uint8_t uuid[16];                   /* that GPU's */
    char *gpu_name;                     /* NULL unknown */
    size_t kernels;                     /* kernel records, graph replays recorded whole among
                                           them */
    uint64_t kernel_ns;                 /* their summed durations */
    size_t comm_kernels;
    uint64_t comm_ns, comm_overlap_ns, wait_ns;
    double comm_overlap_share;          /* NaN without communication */
    double energy_j, power_mean_w;      /* its GPU over the run, NVML; NaN: no samples of it */
    size_t nvml_samples;
    double ttft_s, tpot_s;              /* medians; 0 not measured */
    struct lp_rank_stage *stages;       /* the analysis's stages, in its order */
    size_t n_stages;
    struct lp_rank_coll *coll;          /* by start; after lp_ranks_analyze on the reference
                                           host's clock (lp_ranks.hosts) */
    size_t n_coll;
    size_t host_index;                  /* into lp_ranks.hosts (set by lp_ranks_analyze) */
};

/* Keeps what R says of the run report's figures in OUT (TRACE_PATH names it). LP_OK or
 * LP_ERR_NOMEM (OUT then empty). */
int lp_rank_take(const struct lp_run *r, const char *trace_path, struct lp_rank *out);
void lp_rank_free(struct lp_rank *k);

/* A stage across the ranks that have it: its wall and GPU busy time per rank. */
struct lp_ranks_stage {
    char *name;
    enum lp_stage_kind kind;
    size_t n;                           /* ranks with it */
    double wall_min, wall_median, wall_max; /* ns; NaN for work outside every stage */
    double busy_min, busy_median, busy_max;
    double wall_spread;                 /* (max - min) / median; NaN with one rank */
    size_t slowest;                     /* index into lp_ranks.ranks of the longest wall;
                                           SIZE_MAX none */
    uint64_t comm_ns, comm_overlap_ns, wait_ns; /* summed over the ranks */
    double comm_overlap_share;          /* NaN without communication */
};

/* Why waits in collectives were not computed (lp_ranks.waits 0). */
enum lp_ranks_wait {
    LP_RANKS_WAIT_DONE,
    LP_RANKS_WAIT_NO_COMM,              /* no communication kernels on two ranks or more */
    LP_RANKS_WAIT_HOSTS,                /* traces from several hosts whose clocks could not
                                           be aligned (lp_ranks.hosts says which) */
    LP_RANKS_WAIT_UNMATCHED,            /* no collective ended together on two ranks */
};
/* Two ranks' collectives of one name end together, as one communicator's, when their ends
 * lie this close (1.3 us at most on the two- and four-H200 fixtures; chance coincidences
 * of groups in near lockstep there: under 2 % of their collectives) */
#define LP_COLL_TOGETHER_NS 10000

/* A group of ranks whose collectives end together: a communicator, or several over the same
 * ranks, which the trace cannot tell apart (a process group, such as one tensor-parallel
 * group, one data-parallel group, or a pipeline stage pair) */
struct lp_ranks_group {
    size_t *members;                    /* indices into lp_ranks.ranks, ascending */
    uint64_t *member_wait_ns;           /* parallel: each member's waits in its collectives */
    size_t n_members;
    size_t n_hosts;                     /* hosts its members are on */
    size_t collectives;                 /* matched, each counted once */
    size_t by_order;                    /* of them, matched by their order between two that
                                           ended together, not by their own ends */
    uint32_t *coll;                     /* collectives x n_members: each one's index into
                                           each member's lp_rank.coll */
    size_t names;                       /* distinct kernel names among them */
    uint32_t ops;                       /* enum lp_coll_op, of them all */
    uint64_t comm_ns, wait_ns;          /* its members' kernel time and waits in them */
    double end_spread_ns;               /* the latest member's end less the earliest's,
                                           median over its collectives */
    size_t straggler;                   /* index into lp_ranks.ranks: the member that waited
                                           least, the others waiting for it; SIZE_MAX none */
    size_t replica_of;                  /* index into lp_ranks.groups of the first group that
                                           ran collectives of the same names, as often within
                                           5 %, on as many other ranks: replicas of one
                                           layout, such as the TP groups of data-parallel
                                           replicas (itself for that first one); SIZE_MAX:
                                           no replica */
    uint64_t signature;                 /* of its collectives' distinct names */
    uint64_t kernel_ns;                 /* its members' kernel time, summed */
    uint64_t wall_ns;                   /* its time in the run's measured stages (warm-up
                                           and work outside every stage left out): per
                                           stage its slowest member's wall, summed; 0: none */
    double vs_fastest;                  /* WALL_NS over the least of its replicas', less 1;
                                           NaN without replicas or walls */
};

/* How a host's clock offset was found (lp_ranks_host.how) */
enum lp_clock_how {
    LP_CLOCK_HOW_REFERENCE,             /* the reference host: that of the lowest rank that
                                           ran collectives */
    LP_CLOCK_HOW_COLLECTIVES,           /* from the ends of the collectives its ranks ran
                                           with an aligned host's (clocks.c) */
    LP_CLOCK_HOW_NONE,                  /* too few such collectives: not aligned */
    LP_CLOCK_HOW_DISAGREE,              /* collectives run with an aligned host's whose ends
                                           do not agree on one offset (half their
                                           interquartile range past LP_COLL_TOGETHER_NS, or
                                           two tight sequences at offsets further apart):
                                           not aligned */
};
/* shared collectives a host's offset needs */
#define LP_CLOCK_MIN_COLLECTIVES 3

/* A host of the run (by the traces' "host" header; a trace naming none is taken to be on
 * the reference host) and its clock */
struct lp_ranks_host {
    char *name;                         /* NULL: no trace names a host */
    size_t ranks;
    enum lp_clock_how how;
    int64_t offset_ns;                  /* added to its times puts them on the reference's
                                           clock: the median of the estimates */
    double uncertainty_ns;              /* half the estimates' interquartile range; 0 for the
                                           reference, NaN with too few; DISAGREE: the
                                           estimates' spread */
    size_t collectives;                 /* collectives that gave an estimate (linked pairs);
                                           not aligned: the most of one name its ranks ran
                                           as often as an aligned rank */
};

/* Per-process figures whose distribution over the processes lp_ranks_analyze gives */
enum lp_ranks_figure {
    LP_RANKS_FIGURE_KERNEL_NS,
    LP_RANKS_FIGURE_COMM_NS,            /* processes with communication */
    LP_RANKS_FIGURE_OVERLAP,            /* share, those with communication */
    LP_RANKS_FIGURE_WAIT_NS,            /* when the waits were computed, those with comm. */
    LP_RANKS_FIGURE_ENERGY_J,           /* those with NVML samples of their GPU */
    LP_RANKS_FIGURE_POWER_W,
    LP_RANKS_FIGURE_TTFT_NS,            /* those that measured it */
    LP_RANKS_FIGURE_TPOT_NS,
    LP_RANKS_FIGURE_COUNT
};
/* past this many processes ranks.md gives distributions instead of a row per process */
#define LP_RANKS_TABLE_MAX 16

/* A figure over the processes that have it: nearest-rank percentiles, the extremes and
 * which process (index into lp_ranks.ranks) holds each */
struct lp_ranks_dist {
    size_t n;                           /* 0: no process has it */
    double p50, p90, min, max;
    size_t min_at, max_at;
};

struct lp_ranks {
    struct lp_rank *ranks;              /* by rank, then pid (owned) */
    size_t n;
    int one_host;                       /* every trace names the same host (or none does) */
    struct lp_ranks_host *hosts;        /* the reference first */
    size_t n_hosts, ref_host;
    int aligned;                        /* every host with communication kernels on the
                                           reference's clock (one host: trivially): waits
                                           compare across hosts */
    enum lp_ranks_wait waits;
    struct lp_ranks_group *groups;      /* by members */
    size_t n_groups;
    size_t coll_matched;                /* collectives matched across the ranks (each once) */
    size_t coll_kernels, coll_unmatched; /* communication kernels over the ranks; of them,
                                            in no matched collective */
    double coll_end_spread_ns;          /* matched collectives' end spread (latest rank's
                                           end less the earliest's), median; NaN: none */
    size_t coll_names, coll_names_unmatched; /* distinct kernel names of collectives; of
                                                them, never matched */
    size_t shared_gpus;                 /* ranks whose GPU another rank also used */
    size_t duplicate_ranks;             /* traces claiming a rank an earlier one claims (two
                                           processes with RANK=0: a launcher's environment
                                           passed twice, or runs mixed in one directory) */
    int64_t duplicate_rank;             /* the first such rank */
    size_t kernels;                     /* over the ranks */
    uint64_t kernel_ns, comm_ns, comm_overlap_ns, wait_ns;
    double comm_overlap_share;          /* NaN without communication */
    double wait_share;                  /* wait_ns of comm_ns; NaN unless waits were computed */
    double energy_j;                    /* over the ranks' GPUs with samples (each GPU once) */
    size_t energy_gpus;
    struct lp_ranks_dist dist[LP_RANKS_FIGURE_COUNT];
    struct lp_ranks_stage *stages;      /* by first appearance */
    size_t n_stages;
    /* the run's traces that could not be read, left out of all the above (set by the caller,
       not owned) */
    const struct lp_ranks_unread *unread;
    size_t n_unread;
};

struct lp_ranks_unread {
    const char *trace, *reason;
};

/* Compares RANKS (N of them, taken: freed with OUT, also on failure). LP_OK or
 * LP_ERR_NOMEM. */
int lp_ranks_analyze(struct lp_rank *ranks, size_t n, struct lp_ranks *out);
void lp_ranks_free(struct lp_ranks *r);

/* ---- repeats: several runs of one command (repeats.c) ---- */

/* The figures compared across repeats. Run-level ones are the headline's (medians over the
 * run's requests; a serving loop's from its request convention); per stage, the means over
 * its measured occurrences. NaN in a repeat: not measured there. */
enum lp_repeat_figure {
    LP_REPEAT_FIGURE_TTFT_NS,
    LP_REPEAT_FIGURE_TPOT_NS,
    LP_REPEAT_FIGURE_ITL_NS,
    LP_REPEAT_FIGURE_PREFILL_TOKENS_S,
    LP_REPEAT_FIGURE_DECODE_TOKENS_S,
    LP_REPEAT_FIGURE_MFU,
    LP_REPEAT_FIGURE_MBU,
    LP_REPEAT_FIGURE_GPU_BUSY,
    LP_REPEAT_FIGURE_COUNT
};
enum lp_repeat_stage_figure {
    LP_REPEAT_STAGE_WALL_NS,            /* per occurrence */
    LP_REPEAT_STAGE_GPU_NS,             /* GPU time per occurrence */
    LP_REPEAT_STAGE_TOKENS_S,
    LP_REPEAT_STAGE_MFU,
    LP_REPEAT_STAGE_MBU,
    LP_REPEAT_STAGE_J_PER_TOKEN,
    LP_REPEAT_STAGE_COUNT
};

/* What one repeat's analysis found, kept small (lp_repeat_take) */
struct lp_repeat_stage {
    char *name;
    double fig[LP_REPEAT_STAGE_COUNT];
    int energy_coarse;                  /* its ranges last less than two NVML refreshes in
                                           all: its energy per token is left out (NaN) */
};
struct lp_repeat {
    char *label;                        /* its directory's name ("repeat-2") */
    double fig[LP_REPEAT_FIGURE_COUNT];
    struct lp_repeat_stage *stages;     /* its measured stages, in the analysis's order */
    size_t n_stages;
    char *request;                      /* the program's stated request (JSON), NULL: none */
};
/* R's figures into OUT (freed with lp_repeat_free). LP_OK or LP_ERR_NOMEM. */
int lp_repeat_take(const struct lp_run *r, const char *label, struct lp_repeat *out);
void lp_repeat_free(struct lp_repeat *k);

/* One figure over the repeats that measured it: sample deviation (n - 1), its share of the
 * mean (CV), and the largest |x - mean| / |mean| against the tolerance. */
#define LP_REPEATS_TOLERANCE 0.10       /* the plan's run-to-run criterion: within ±10 % */
struct lp_repeat_stat {
    size_t n;                           /* repeats that measured it */
    double mean, std, cv, min, max;
    size_t min_at, max_at;              /* the repeats (indices) of min and max */
    double worst;                       /* max |x - mean| / |mean|; NaN with n < 2 or mean 0 */
    size_t worst_at;
    int within;                         /* worst <= tolerance; 0 with n < 2 */
};
struct lp_repeats_stage {
    const char *name;                   /* a repeat's (owned by the lp_repeat) */
    struct lp_repeat_stat fig[LP_REPEAT_STAGE_COUNT];
    size_t energy_coarse;               /* repeats whose energy per token it left out */
};
enum lp_repeats_verdict {
    LP_REPEATS_VERDICT_WITHIN,          /* every figure with two values or more is within */
    LP_REPEATS_VERDICT_OUTSIDE,         /* at least one is not (n_outside) */
    LP_REPEATS_VERDICT_TOO_FEW,         /* no figure has two values */
};
struct lp_repeats {
    const struct lp_repeat *reps;       /* the repeats compared (the caller's) */
    size_t n;
    double tolerance;
    struct lp_repeat_stat fig[LP_REPEAT_FIGURE_COUNT];
    struct lp_repeats_stage *stages;    /* by name, in the first repeat's order, then new
                                           names in later ones */
    size_t n_stages;
    size_t n_outside;                   /* figures (run-level and per stage) outside */
    enum lp_repeats_verdict verdict;
    int requests_differ;                /* the repeats' stated requests are not all one */
    /* stages whose wall time per occurrence is outside the tolerance while their GPU time per
     * occurrence held steady (within a fifth of the tolerance, and at most a quarter of the
     * wall time's deviation): the same GPU work, so the spread came from the host (launches,
     * scheduling); the largest GPU-time deviation among them */
    size_t n_host_spread;
    double host_spread_gpu_worst;
};
/* Compares the N repeats REPS (kept by the caller until lp_repeats_free) into OUT, each
 * figure against TOLERANCE (0: LP_REPEATS_TOLERANCE). LP_OK or LP_ERR_NOMEM. */
int lp_repeats_analyze(const struct lp_repeat *reps, size_t n, double tolerance,
                       struct lp_repeats *out);
/* Stage STAGE's (index into R->stages) figure FIG in repeat REPEAT; NaN where not measured */
double lp_repeats_value(const struct lp_repeats *r, size_t stage, size_t repeat, int fig);
void lp_repeats_free(struct lp_repeats *r);

/* ---- two runs compared (diff.c) ---- */

/* How a compared figure's noise is known. */
enum lp_diff_basis {
    LP_DIFF_BASIS_BOOTSTRAP,      /* per-step or per-request values: a block bootstrap of the
                                     quantile in each run, the change's 2.5-97.5 % range */
    LP_DIFF_BASIS_MEANS,          /* per-call or per-occurrence values known by their mean,
                                     deviation and count: a normal interval of the ratio */
    LP_DIFF_BASIS_SINGLE,         /* one value per run (derived, analytic, or from NVML) */
    LP_DIFF_BASIS_COUNTED,        /* counted: exact, no noise */
};

enum lp_diff_verdict {
    LP_DIFF_VERDICT_MISSING,      /* not measured in one run or both */
    LP_DIFF_VERDICT_SAME,         /* no change: the interval holds 0, or the change is under
                                     the least change that counts (lp_diff_options) */
    LP_DIFF_VERDICT_HIGHER,       /* B is higher, beyond the noise */
    LP_DIFF_VERDICT_LOWER,
    LP_DIFF_VERDICT_UNSURE,       /* past the least change, but the values are too few for an
                                     interval (basis bootstrap or means): noise unknown */
};

/* One figure of runs A and B. */
struct lp_diff_value {
    double a, b;                  /* NaN: not measured */
    double change;                /* b / a - 1; NaN when either is missing or A is 0 */
    double lo, hi;                /* 95 % interval of CHANGE; NaN when there is none (too few
                                     values, or BASIS single or counted) */
    size_t n_a, n_b;              /* the values behind it in each run (1: a single value) */
    enum lp_diff_basis basis;
    enum lp_diff_verdict verdict;
    int worse;                    /* 1: the change is for the worse (slower, less throughput,
                                     more energy), -1 for the better, 0 none or neither */
};

/* Quantiles compared for TTFT, TPOT, ITL and decode steps: p50, p90, p99. */
#define LP_DIFF_QUANTILES 3

/* A stage of either run, matched by name. Per unit: per decode step when both runs counted
 * the steps of their decode, else per measured occurrence. */
struct lp_diff_stage {
    char *name;
    enum lp_stage_kind kind;
    int a, b;                     /* index into each run's stages; -1 not in that run */
    int per_step;
    double units_a, units_b;
    struct lp_diff_value wall;    /* per occurrence (mean) */
    struct lp_diff_value step[LP_DIFF_QUANTILES]; /* decode step durations */
    struct lp_diff_value tokens_s, mfu, mbu, j_per_token, busy_share;
    struct lp_diff_value kernels, gpu_ns; /* kernels and their GPU time per unit */
    size_t kernels_added, kernels_removed, kernels_changed;
};

enum lp_diff_status {
    LP_DIFF_STATUS_SAME, LP_DIFF_STATUS_CHANGED, LP_DIFF_STATUS_ADDED, LP_DIFF_STATUS_REMOVED,
};

/* Kernels of one normalised name (demangled, parameter list dropped) in one stage. */
struct lp_diff_kernel {
    size_t stage;                 /* index into lp_diff.stages */
    char *name, *short_name;
    enum lp_kcat cat;
    enum lp_diff_status status;
    struct lp_diff_value calls;   /* per unit */
    struct lp_diff_value mean_ns; /* per call */
    struct lp_diff_value gpu_ns;  /* per unit */
};

/* A GEMM shape and dtype in one stage. */
struct lp_diff_gemm {
    size_t stage;                 /* index into lp_diff.stages */
    struct lp_gemm call;          /* shape and types (its lp_str fields are the first run's
                                     with it: not for printing) */
    enum lp_diff_status status;
    struct lp_diff_value calls;   /* per unit */
    struct lp_diff_value mean_ns; /* GPU time per call */
    struct lp_diff_value tflops;
};

/* An operator (NVTX range of PyTorch's emit_nvtx or record_function) over each run. */
struct lp_diff_op {
    char *name;
    enum lp_diff_status status;
    struct lp_diff_value calls;   /* over the run */
    struct lp_diff_value mean_ns; /* GPU time per call */
};

/* What makes the comparison doubtful (bits of lp_diff.warnings). */
enum lp_diff_warning {
    LP_DIFF_WARN_GPU = 1 << 0,          /* the runs' GPUs have different names */
    LP_DIFF_WARN_SHAPES = 1 << 1,       /* under half of the GEMM weight shapes of either run
                                           are in both: other models, or another parallelism */
    LP_DIFF_WARN_WINDOWS = 1 << 2,      /* one run recorded capture windows, the other not */
    LP_DIFF_WARN_LOSSES = 1 << 3,       /* a run lost records, or has losses without a count */
    LP_DIFF_WARN_NO_KERNELS = 1 << 4,   /* a run recorded no kernels (record --light) */
    LP_DIFF_WARN_ALTERED = 1 << 5,      /* a run's trace file was altered after it was written
                                           (lp_trace.altered) */
    LP_DIFF_WARN_UNLISTED = 1 << 6,     /* a run has more GEMM shapes than its table lists
                                           (lp_run_gemms.unlisted): only those are compared */
};
#define LP_DIFF_WARN_BITS 7

struct lp_diff_options {
    double min_change;            /* changes under this fraction are no change (0: 0.02) */
    uint64_t seed;                /* of the bootstrap (0: a fixed one; the same inputs give
                                     the same intervals) */
};

/* A rule judged on the comparison. */
struct lp_diff_check;

struct lp_diff {
    struct lp_diff_options opt;
    const char *label[2];         /* how the outputs name the runs (set by the caller, not
                                     owned; NULL: "A", "B") */
    char *gpu[2];                 /* each run's GPU (the device its kernels ran on), NULL */
    char *command[2];             /* each run's command line, NULL */
    unsigned warnings;            /* enum lp_diff_warning bits */
    double shapes_shared;         /* of the weight shapes of both, those in both (0..1); NaN
                                     without GEMMs in one run */
    struct lp_diff_value ttft[LP_DIFF_QUANTILES], tpot[LP_DIFF_QUANTILES],
        itl[LP_DIFF_QUANTILES];
    struct lp_diff_value mfu, mbu; /* of the request (the analytic model, --model) */
    struct lp_diff_stage *stages; /* A's order, then B's stages A has not */
    size_t n_stages;
    struct lp_diff_kernel *kernels; /* by stage, then the change of GPU time per unit, largest
                                       first (added and removed by their time) */
    size_t n_kernels;
    struct lp_diff_gemm *gemms;   /* by stage, then GPU time */
    size_t n_gemms;
    struct lp_diff_op *ops;       /* by the change of GPU time, largest first */
    size_t n_ops;
    struct lp_diff_check *checks; /* lp_diff_gate's, in the rules' order */
    size_t n_checks;
    size_t failed;                /* checks failed (FAILED, MISSING or UNSURE) */
};

/* Compares run A with run B (both analysed; B is the one judged against A). LP_OK or
 * LP_ERR_NOMEM (OUT then empty). The runs and their traces must outlive OUT. */
int lp_diff_build(const struct lp_run *a, const struct lp_run *b,
                  const struct lp_diff_options *opt, struct lp_diff *out);
void lp_diff_free(struct lp_diff *d);

/* A gate rule, "METRIC>+5%" (fails when METRIC rose by more than 5 %, beyond the noise) or
 * "METRIC<-5%" (fell by more). METRIC: ttft, tpot, itl (.p50, .p90, .p99; p50 alone), mfu,
 * mbu, or STAGE.FIGURE with FIGURE one of wall, step (.p90 ...), tokens_s, mfu, mbu,
 * j_per_token, busy, kernels, gpu_time. */
struct lp_diff_rule {
    const char *text;             /* as given (not owned) */
    char stage[64];               /* "" for a run figure */
    int figure;                   /* index into the figures' table (diff.c) */
    int quantile;                 /* 0 p50, 1 p90, 2 p99 */
    int up;                       /* 1 '>': a rise fails; 0 '<': a fall fails */
    double limit;                 /* fraction, signed as the rule: +0.05, -0.05 */
};
/* Parses TEXT into R: LP_OK, or LP_ERR_ARG with ERR saying what is wrong. */
int lp_diff_rule_parse(const char *text, struct lp_diff_rule *r, char *err, size_t errlen);
/* What the figure a rule names counts. */
enum lp_diff_unit {
    LP_DIFF_UNIT_NS, LP_DIFF_UNIT_SHARE, LP_DIFF_UNIT_TOKENS_S, LP_DIFF_UNIT_J,
    LP_DIFF_UNIT_COUNT,
};
enum lp_diff_unit lp_diff_rule_unit(const struct lp_diff_rule *r);

enum lp_diff_rule_result {
    LP_DIFF_RULE_PASSED,
    LP_DIFF_RULE_NOISE,           /* past the limit, but inside the noise: passed */
    LP_DIFF_RULE_FAILED,
    LP_DIFF_RULE_MISSING,         /* the figure is not measured in a run (or no such stage):
                                     failed, since it cannot be checked */
    LP_DIFF_RULE_UNSURE,          /* past the limit with too few values for an interval:
                                     failed, for the same reason */
};
struct lp_diff_check {
    struct lp_diff_rule rule;
    enum lp_diff_rule_result result;
    const struct lp_diff_value *value; /* the figure in D; NULL: no such stage */
};
/* Judges the N RULES on D into D->checks (replacing earlier ones) and counts the failed.
 * LP_OK or LP_ERR_NOMEM. */
int lp_diff_gate(struct lp_diff *d, const struct lp_diff_rule *rules, size_t n);

#endif
