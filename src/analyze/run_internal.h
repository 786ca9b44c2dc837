/* Internal state of one run's analysis, shared by the files of src/analyze that fill
 * struct lp_run: one unified array of GPU work with its attribution, and the stage
 * occurrences. Not installed. */
#ifndef LP_RUN_INTERNAL_H
#define LP_RUN_INTERNAL_H

#include <stdint.h>
#include <stdlib.h>

#include "llmprof/analyze.h"
#include "llmprof/sat.h"

enum { LP_OP_KERNEL, LP_OP_MEMCPY, LP_OP_MEMSET };
/* the fixed group of whole CUDA graph replays (kernels.c): after the 4 copy groups and sets */
enum { LP_GROUP_REPLAY = 5 };

/* the most stages a run may have: the stage rules' and the fixed ones (run, warmup, prefill,
 * decode, outside) */
#define LP_MAX_STAGES INT16_MAX

/* lp_work.call of work whose launching call was not recorded */
#define LP_NO_CALL UINT32_MAX

/* one piece of GPU work: a kernel, a copy or a set */
struct lp_work {
    uint32_t group;               /* index into lp_run.names: its kind too (lp_work_kind) */
    uint32_t call;                /* the launching call (index into the trace's API calls),
                                     LP_NO_CALL: lp_work_launch, lp_work_thread and
                                     lp_work_range; after the stages, attributed by time */
    int32_t occ;                  /* stage occurrence, -1 none: its stage (lp_work_stage) */
    uint32_t index;               /* into the trace's array of its kind, whose record gives
                                     its start and end (lp_work_start, lp_work_end) */
};                                /* 16 bytes: one per kernel at the analysis' peak */

/* lp_gemm_flops and lp_gemm_min_bytes as exact integers (bytes in quarters: 4-bit and 6-bit
 * types), at most LP_U128_MAX: summed in any order to the same total (gemm_types.c) */
lp_u128 lp_gemm_flops_exact(const struct lp_gemm *g);
lp_u128 lp_gemm_min_quarter_bytes(const struct lp_gemm *g);
/* Two calls' weights m x k, exactly, then m, then k: <0, 0, >0. The largest of a set is the
 * same whatever order the calls come in. */
int lp_gemm_weight_cmp(const struct lp_gemm *a, const struct lp_gemm *b);

/* W's kind (LP_OP_*), from its group: the four copy groups, sets, then kernels' (a kernel
 * named like a fixed group has a group of its own: those are not in the names' map) */
static inline int lp_work_kind(const struct lp_work *w)
{
    return w->group < 4 ? LP_OP_MEMCPY : w->group == 4 ? LP_OP_MEMSET : LP_OP_KERNEL;
}

/* W's start in T, the trace it came from (ns): its record's */
static inline uint64_t lp_work_start(const struct lp_trace *t, const struct lp_work *w)
{
    int kind = lp_work_kind(w);
    return kind == LP_OP_KERNEL   ? t->kernels[w->index].start
           : kind == LP_OP_MEMCPY ? t->memcpys[w->index].start
                                  : t->memsets[w->index].start;
}

/* W's end in T: its record's, or its start for a torn record that ends before it starts
 * (then of zero length) */
static inline uint64_t lp_work_end(const struct lp_trace *t, const struct lp_work *w)
{
    int kind = lp_work_kind(w);
    uint64_t start, end;
    if (kind == LP_OP_KERNEL) {
        start = t->kernels[w->index].start;
        end = lp_trace_kernel_end(t, &t->kernels[w->index]);
    } else if (kind == LP_OP_MEMCPY) {
        start = t->memcpys[w->index].start;
        end = t->memcpys[w->index].end;
    } else {
        start = t->memsets[w->index].start;
        end = t->memsets[w->index].end;
    }
    return end > start ? end : start;
}

/* W's duration in T, ns */
static inline uint64_t lp_work_dur(const struct lp_trace *t, const struct lp_work *w)
{
    return lp_work_end(t, w) - lp_work_start(t, w);
}

/* The start of W's launching call in T, 0 when not recorded */
static inline uint64_t lp_work_launch(const struct lp_trace *t, const struct lp_work *w)
{
    return w->call == LP_NO_CALL ? 0 : t->apis[w->call].start;
}

/* The thread of W's launching call in T, 0 when not recorded */
static inline uint32_t lp_work_thread(const struct lp_trace *t, const struct lp_work *w)
{
    return w->call == LP_NO_CALL ? 0 : lp_trace_api_kind(t, &t->apis[w->call])->thread;
}

/* One occurrence of a stage: a top-level stage range, or one inferred from GEMM shapes. */
struct lp_occ {
    uint64_t start, end;          /* the range; after steps.c, its effective span: from the
                                     later of its start and the end of the previous one's GPU
                                     work, to the later of its end and its own GPU work's */
    int stage;                    /* the stage of its rule (before warmup is set apart) */
    int warmup;                   /* named warmup (1) or found to be one (2) */
    int64_t tokens, batch;        /* from the range name, 0 when absent */
    int32_t range;
    int32_t request;              /* the request it belongs to (requests.c), -1 none */
    uint64_t busy, cur_end;       /* GPU busy union of its work */
    uint64_t range_end;           /* the range's own end */
    int32_t carved_from;          /* classify: the prefill occurrence it was cut out of, -1 */
    uint64_t open_start;          /* a prefill's range start when vision was cut out of its
                                     head (its start then follows the vision); 0 otherwise */
    uint64_t gpu_end;             /* end of its last GPU work, 0 none */
    int64_t shape_tokens;         /* token dimension of its GEMM calls (their mode), 0 none */
    int64_t lm_head_tokens;       /* tokens of its largest-weight GEMM (the lm_head), 0 none */
    /* resolved by steps.c: tokens (all sequences) and decode steps, with their sources */
    int64_t n_tokens, steps;
    uint8_t tokens_source;        /* enum lp_tokens_source */
    uint8_t steps_source;         /* enum lp_steps_source */
    uint32_t first_step, n_step_ns; /* its step durations in ctx step_ns, when found */
    uint32_t part;                /* capture windows: its range's part in the k-th window it
                                     spans (0: the first, the one the range names) */
    uint8_t cut;                  /* capture windows: shorter than its range (cut at a
                                     window's edge): its time is not the stage's */
    uint32_t made;                /* its place when made: ties of the sort by start */
};

struct lp_range_info {
    int32_t occ;                  /* occurrence the range is in (itself or an ancestor) */
    int32_t rule;                 /* stage rule it matched, -1 */
    int32_t sub;                  /* sub-stage (nested stage range) it is in, -1 */
    int32_t op;                   /* operator group when not a stage range, -1 */
    uint8_t warmup;
};

/* A replay of a GEMM call captured into a CUDA graph: a GEMM that ran (lp_run_ctx.replays) */
struct lp_run_replay {
    uint64_t start, end;          /* the graph launch's call (its kernel's, not recorded) */
    uint32_t thread;              /* of that call, 0 unknown */
    uint32_t call;                /* the captured call it replays: index into t->gemms */
};

struct lp_run_ctx {
    const struct lp_trace *t;
    struct lp_run *r;
    struct lp_work *work;         /* sorted by start */
    size_t n_work;
    struct lp_occ *occ;           /* sorted by start */
    size_t n_occ, occ_cap;
    struct lp_range_info *ri;     /* parallel to r->ranges.v */
    const struct lp_window *windows; /* lp_run.capture.windows (windows.c); NULL: none */
    size_t n_windows;
    /* stage rules */
    char **rule_names;
    size_t n_rules;
    int *rule_stage;              /* stage index of each rule, -1 until it has occurrences */
    int warmup_stage, outside_stage;
    /* sub-stages: (stage, name) pairs */
    struct { int stage; int rule; } *subs;
    size_t n_subs;
    /* steps.c: GEMM calls tied to kernels and occurrences, and the step durations found */
    /* GEMMs that ran (graphs.c): the trace's calls (t->gemms), then one per replay of a
     * call captured into a CUDA graph (REPLAYS); every per-GEMM array below is indexed like
     * them. Read one through lp_run_gemm. */
    size_t n_gemms;
    struct lp_run_replay *replays; /* n_gemms - t->n_gemms of them (owned) */
    int replays_made;             /* lp_run_replays ran: N_GEMMS and the links below are set */
    uint32_t *gemm_replays;       /* per trace GEMM record: its replays (> 0: captured) */
    int32_t *kernel_gemm;         /* GEMM that launched each kernel, -1 (NULL: none) */
    int32_t *kernel_origin;       /* graph record of each replayed kernel's node, -1 */
    int32_t *kernel_work;         /* index into work of each kernel; NULL until
                                     lp_run_kernel_places, after the timeline's peak */
    int32_t *gemm_occ;            /* occurrence of each GEMM, -1 */
    uint64_t *gemm_end;           /* end of each GEMM's last kernel, 0 none */
    double *step_ns;
    size_t n_step_ns, step_cap;
    char *err;
    size_t errlen;
};

/* GEMM I that ran (I < c->n_gemms), whole: a call of the trace, or a replay of one with the
 * replay's times and thread */
static inline struct lp_gemm lp_run_gemm(const struct lp_run_ctx *c, size_t i)
{
    size_t n = c->t->n_gemms;
    if (i < n)
        return lp_trace_gemm(c->t, i);
    const struct lp_run_replay *r = &c->replays[i - n];
    struct lp_gemm g = lp_trace_gemm(c->t, r->call);
    g.start = r->start;
    g.end = r->end;
    g.thread = r->thread;
    return g;
}

/* The kind (shape, types, thread, ...) of GEMM I that ran: a replay's is its call's */
static inline const struct lp_gemm_kind *lp_run_gemm_kind(const struct lp_run_ctx *c, size_t i)
{
    size_t n = c->t->n_gemms;
    return lp_trace_gemm_kind(c->t, &c->t->gemms[i < n ? i : c->replays[i - n].call]);
}

/* The start of GEMM I that ran, without the rest (sorts) */
static inline uint64_t lp_run_gemm_start(const struct lp_run_ctx *c, size_t i)
{
    size_t n = c->t->n_gemms;
    return i < n ? c->t->gemms[i].start : c->replays[i - n].start;
}

/* W's stage (index into lp_run.stages), -1 before the stages pass attributed it: its
 * occurrence's, else the stage of work outside every stage */
static inline int lp_work_stage(const struct lp_run_ctx *c, const struct lp_work *w)
{
    return w->occ >= 0 ? c->occ[w->occ].stage : c->outside_stage;
}

/* The innermost range open on W's launching thread when it was launched, -1 none or not
 * recorded: looked up rather than kept (4 bytes per kernel), by the few passes that read it.
 * HINT: as lp_ranges_at_hint, 0 before a walk's first call. */
static inline int32_t lp_work_range(const struct lp_run_ctx *c, const struct lp_work *w,
                                    size_t *hint)
{
    if (w->call == LP_NO_CALL)
        return -1;
    const struct lp_api_rec *a = &c->t->apis[w->call];
    return lp_ranges_at_hint(&c->r->ranges, lp_trace_api_kind(c->t, a)->thread, a->start, hint);
}

/* correlation.c: correlation id -> API record (the launching call) */
struct lp_corr_map {
    uint32_t *key;
    uint32_t *idx;
    size_t cap;
    uint32_t base;                /* direct table: idx[k - base], key unused */
    int direct;
};
int lp_corr_build(const struct lp_trace *t, struct lp_corr_map *m);
const struct lp_api_rec *lp_corr_find(const struct lp_trace *t, const struct lp_corr_map *m,
                                  uint32_t correlation);
void lp_corr_free(struct lp_corr_map *m);

/* graph_nodes.c: for each kernel replayed from a CUDA graph, the graph record (index into
 * t->graphs) of the node made for it at capture, -1 for eager kernels and unknown origins;
 * M (may be NULL) gives launch times. *ORIGIN is NULL when the trace has no graph records. */
int lp_graph_origins(const struct lp_trace *t, const struct lp_corr_map *m, int32_t **origin);

/* ---- the passes (run.c runs them in this order); each fills its part of struct lp_run, and
 * the ones that allocate there free it with their _free ---- */

/* kernels.c: the group of every piece of work (lp_run.names) */
int lp_run_name_groups(struct lp_run_ctx *c);
/* each kernel's place in the work (kernel_work): made after the passes whose temporaries are
 * the analysis' largest, for those after it and for the run's readers */
int lp_run_kernel_places(struct lp_run_ctx *c);
void lp_run_names_free(struct lp_run *r);
/* serving.c: the iterations of a serving loop (continuous batching) from the lm_head's calls,
 * whether the program is one, and the requests of the request convention; before the stages,
 * which infer no prefill or decode in a serving loop */
int lp_run_serving(struct lp_run_ctx *c);
void lp_run_serving_free(struct lp_run *r);
/* stages.c: stage rules, ranges classified into occurrences, work attributed to them */
int lp_run_stages(struct lp_run_ctx *c);
/* windows.c: the capture windows (lp_run.capture, c->windows: by start, merged, closed; a
 * pass of its own, before serving.c reads them); then occurrences from FIRST on kept only for
 * their parts inside them (after classifying the ranges, and again after inferring stages). */
int lp_run_windows_load(struct lp_run_ctx *c);
int lp_run_windows_clip(struct lp_run_ctx *c, size_t first);
/* The last capture window that starts at or before T, -1 before the first (or none). */
int64_t lp_run_window_of(const struct lp_run_ctx *c, uint64_t t);
/* 1 when host time T was recorded: inside a window, or the run has none. */
int lp_run_in_window(const struct lp_run_ctx *c, uint64_t t);
/* How much of [A, B) lies outside every window (0 in a run without windows). */
uint64_t lp_run_outside_windows(const struct lp_run_ctx *c, uint64_t a, uint64_t b);
void lp_run_stages_free(struct lp_run *r);
/* steps.c: GEMM links (graphs.c's replays first), effective spans, tokens from GEMM shapes,
 * decode steps */
int lp_run_steps(struct lp_run_ctx *c);
/* requests.c: occurrences grouped into requests; a first request (or occurrence) that is an
 * outlier is set apart as warmup (moved with its work to the warmup stage) */
int lp_run_warmup(struct lp_run_ctx *c);
/* stages.c: per-stage statistics (wall, busy, sub-stages) and the stage spans */
int lp_run_stage_stats(struct lp_run_ctx *c);
int lp_run_kernels(struct lp_run_ctx *c);      /* kernels.c: kernel tables, cost centres */
void lp_run_kernels_free(struct lp_run *r);
int lp_run_operators(struct lp_run_ctx *c);    /* operators.c */
void lp_run_operators_free(struct lp_run *r);
int lp_run_bounds(struct lp_run_ctx *c);       /* timeline.c: t0, first and last work */
int lp_run_timeline(struct lp_run_ctx *c);     /* timeline.c: busy, gaps, bins, memory */
void lp_run_timeline_free(struct lp_run *r);
int lp_run_power(struct lp_run_ctx *c);        /* power.c */
int lp_run_comm(struct lp_run_ctx *c);         /* comm.c: communication and its overlap */
/* overhead.c: CUPTI's overhead records per kind, thread and stage */
int lp_run_overhead(struct lp_run_ctx *c);
void lp_run_overhead_free(struct lp_run *r);
void lp_run_power_free(struct lp_run *r);
int lp_run_tokens(struct lp_run_ctx *c);       /* utilisation.c: tokens per stage */
/* requests.c: TTFT, TPOT and inter-token latency over the measured requests and steps */
int lp_run_llm_metrics(struct lp_run_ctx *c);
void lp_run_llm_free(struct lp_run *r);
/* spread.c: the in-process spread of the stages' times and of TTFT and TPOT (after the
 * stage statistics and the LLM metrics it reads), each against the +/-10 % criterion */
int lp_run_spread(struct lp_run_ctx *c);
void lp_run_spread_free(struct lp_run *r);
int lp_run_utilisation(struct lp_run_ctx *c);  /* utilisation.c: MFU and MBU */
int lp_run_gemms(struct lp_run_ctx *c);        /* gemm.c: GEMM table, per-stage GEMM FLOPs */
void lp_run_gemms_free(struct lp_run *r);
int lp_run_graphs(struct lp_run_ctx *c);       /* graphs.c: replays per graph and stage */
int lp_run_counters(struct lp_run_ctx *c);     /* counters.c: hardware counters per stage */
int lp_run_pm(struct lp_run_ctx *c);           /* pm.c: PM samples per stage, timeline */
void lp_run_pm_free(struct lp_run *r);
void lp_run_graphs_free(struct lp_run *r);
int lp_run_diagnose(struct lp_run_ctx *c);     /* diagnosis.c */
void lp_run_findings_free(struct lp_run *r);

/* ---- what passes call in the passes before them ---- */

/* stages.c: the occurrence of host work on THREAD at TS, as a launch there would get, -1 */
int32_t lp_run_occ_at(const struct lp_run_ctx *c, uint32_t thread, uint64_t ts);
/* The occurrence whose span holds TS, on any thread (for what has no thread), or -1. */
int32_t lp_run_occ_span_at(const struct lp_run_ctx *c, uint64_t ts);
/* stages.c: the warmup stage's index, made when missing; -1 out of memory */
int lp_run_warmup_stage(struct lp_run_ctx *c);
/* graphs.c: GEMM links, with one GEMM that ran per replay of a captured call (c->replays,
 * after the trace's calls; read through lp_run_gemm); run once, by the first pass that
 * reads the GEMMs that ran (serving.c, else steps.c) */
int lp_run_replays(struct lp_run_ctx *c);
/* infer.c: prefill and decode occurrences from the GEMMs' tokens in flight, for a run
 * without stage ranges; their stage fields get PREFILL_STAGE or DECODE_STAGE. Returns the
 * number made (c->n_occ), or -1 out of memory. */
int lp_run_infer_stages(struct lp_run_ctx *c, int prefill_stage, int decode_stage);

/* ---- common.c: shared by every pass ---- */

/* appends a note: LP_OK or LP_ERR_NOMEM */
int lp_run_note(struct lp_run *r, enum lp_note_code code, int stage, int64_t count, int64_t of,
                double value);
void lp_run_notes_free(struct lp_run *r);
void lp_stat_compute(struct lp_stat *s, const double *v, size_t n);
/* percentiles of V (sorted in place) */
/* D over V (N values in time order, sorted in place), keeping a copy of them in time order:
 * LP_OK or LP_ERR_NOMEM (D then empty). lp_dist_free frees that copy. */
int lp_dist_compute(struct lp_dist *d, double *v, size_t n);
void lp_dist_free(struct lp_dist *d);
/* In N elements of SIZE bytes at V sorted by the uint64_t at OFFSET: how many have it at or
 * before T. */
size_t lp_count_until(const void *v, size_t n, size_t size, size_t offset, uint64_t t);
/* The K-th smallest of V's N values (K < N), V permuted so that none before K is larger and
 * none after it smaller (Hoare's selection) */
uint64_t lp_select_u64(uint64_t *v, size_t n, size_t k);
uint32_t lp_select_u32(uint32_t *v, size_t n, size_t k);
/* A map of 64-bit keys (UINT64_MAX is none) to 64-bit values: open addressing, doubled past
 * half full, so its memory is the keys met, never one slot per record. Its slots are KEY and
 * VAL (KEY UINT64_MAX: empty), in an order set by the keys and the order they came in. */
struct lp_u64map {
    uint64_t *key, *val;
    size_t cap, n;
};
/* KEY's value, 0 when KEY is new (then *FRESH is set, when FRESH is not NULL); NULL when out
 * of memory */
uint64_t *lp_u64map_at(struct lp_u64map *m, uint64_t key, int *fresh);
void lp_u64map_free(struct lp_u64map *m);
/* qsort comparators (lp_cmp_double, lp_cmp_u64: llmprof/analyze.h) */
int lp_cmp_u32(const void *a, const void *b);
/* V's N values in increasing order: a radix sort through TMP (N values), a few bytes of
 * passes where the values differ in few (labels, ids) */
void lp_sort_u64(uint64_t *v, uint64_t *tmp, size_t n);
/* Room for N occurrences in c->occ (grown by doubling); LP_OK or LP_ERR_NOMEM */
int lp_occ_reserve(struct lp_run_ctx *c, size_t n);
/* the kind of the stage occurrence O is in now */
enum lp_stage_kind lp_occ_kind(const struct lp_run_ctx *c, const struct lp_occ *o);

/* ---- gemm_types.c: GEMM shapes ---- */

/* weight elements of a GEMM call whose token dimension is TOKENS (0: unknown, then the larger
 * of m and n is the weight's): what sets the lm_head apart, vocabulary x hidden */
uint64_t lp_gemm_weight(const struct lp_gemm *g, uint64_t tokens);
/* PyTorch's y = x W^T reaches cuBLAS with the tokens as n; min(m, n) also holds for
 * programs that put them in m */
uint64_t lp_gemm_tokens(const struct lp_gemm *g);

#endif
