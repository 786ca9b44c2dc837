/* Kernels in depth, step 2: Nsight Compute's measurements set in the run's stages. Each
 * measured kernel is matched to the run by name (as ncu exports it with --print-kernel-base
 * mangled, or demangled) and launch configuration; its stage is the one where that
 * configuration ran (its NVTX ranges decide when it ran in several). Instances of one
 * configuration in one stage make one row, shown by the instance of median duration, with
 * achieved FLOP/s and arithmetic intensity from the counted FLOPs and DRAM bytes, and the
 * code of one next step. Facts only: the report says them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "llmprof/deep.h"

static int has(const struct lp_ncu_kernel *k, enum lp_ncu_metric m)
{
    return (k->valid >> m) & 1;
}

/* a launch configuration measured by ncu, and where the run ran it */
struct config {
    uint32_t group;
    int32_t grid[3], block[3];
    uint64_t *ns, *calls;        /* per stage */
    long next;                   /* the next config of the same group, -1 */
};

struct measured {
    size_t kernel;               /* index into the ncu report */
    long config;                 /* -1: its name is not in the run */
    int stage;
    uint32_t flags;
};

/* a name and its group, sorted by name for lookups */
struct named {
    const char *name;
    long group;
};

/* by name, then group: one name two groups have (a demangled name as another's mangled
 * one) is theirs in group order */
static int cmp_named(const void *a, const void *b)
{
    const struct named *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return (x->group > y->group) - (x->group < y->group);
}

/* the group of NAME: BY holds each group's mangled and demangled names, sorted (2 n); of
 * groups sharing it, the first */
static long group_of(const struct named *by, size_t n, const char *name)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(by[mid].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && !strcmp(by[lo].name, name) ? by[lo].group : -1;
}

/* whether one of the ranges that open STAGE's occurrences is named in NVTX, as ncu writes
 * it: "<thread>  \"<domain>:<name>:<payload>...\"" */
static int nvtx_names_stage(const struct lp_run *r, int stage, const char *nvtx)
{
    for (size_t i = 0; i < r->ranges.n && nvtx[0]; i++) {
        if (r->range_stage[i] != stage)
            continue;
        const char *name = lp_trace_str(r->trace, r->ranges.v[i].name);
        size_t l = strlen(name);
        for (const char *p = strchr(nvtx, ':'); p; p = strchr(p + 1, ':'))
            if (!strncmp(p + 1, name, l) && p[1 + l] == ':')
                return 1;
    }
    return 0;
}

/* the stage of a measured kernel: where its configuration ran */
static void place(const struct lp_run *r, const struct config *c, const struct lp_ncu_kernel *k,
                  struct measured *m)
{
    int best = -1, n = 0;
    for (size_t s = 0; s < r->n_stages; s++) {
        if (!c->calls[s] || !lp_stage_measured(&r->stages[s]))
            continue;
        n++;
        if (best < 0 || c->ns[s] > c->ns[best])
            best = (int)s;
    }
    if (n > 1)
        for (size_t s = 0; s < r->n_stages; s++)
            if (c->calls[s] && lp_stage_measured(&r->stages[s]) &&
                nvtx_names_stage(r, (int)s, k->nvtx)) {
                best = (int)s;
                m->flags |= LP_DEEP_ROW_BY_NVTX;
                break;
            }
    if (best < 0) { /* a configuration the run did not launch: where its kernel spent most */
        m->flags |= LP_DEEP_ROW_UNSEEN;
        uint64_t most = 0;
        for (size_t s = 0; s < r->n_stages; s++) {
            const struct lp_stage_report *st = &r->stages[s];
            for (size_t i = 0; lp_stage_measured(st) && i < st->top.n_groups; i++)
                if (st->top.v[i].group == c->group && st->top.v[i].total_ns > most) {
                    most = st->top.v[i].total_ns;
                    best = (int)s;
                }
        }
    }
    m->stage = best;
}

static int dtype_of_ops(enum lp_ncu_metric m)
{
    switch (m) {
    case LP_NCU_OPS_BF16: return LP_DTYPE_BF16;
    case LP_NCU_OPS_FP16: return LP_DTYPE_FP16;
    case LP_NCU_OPS_FP8: return LP_DTYPE_FP8;
    case LP_NCU_OPS_TF32: return LP_DTYPE_TF32;
    default: return -1;
    }
}

/* FLOPs, bytes, the roofline and the next step of ROW from its median instance */
static void figures(const struct lp_run *r, const struct lp_ncu_report *n, struct lp_deep_row *w)
{
    const struct lp_ncu_kernel *k = w->j.k;
    static const enum lp_ncu_metric ops[] = {LP_NCU_OPS_BF16, LP_NCU_OPS_FP16, LP_NCU_OPS_FP8,
                                             LP_NCU_OPS_TF32};
    int counted = 0;
    double most = 0;
    w->peak_dtype = -1;
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (has(k, ops[i])) {
            counted = 1;
            w->tensor_flops += k->metric[ops[i]];
            if (k->metric[ops[i]] > most) {
                most = k->metric[ops[i]];
                w->peak_dtype = dtype_of_ops(ops[i]);
            }
        }
    /* the tensor cores say what the name does not: a matmul (or attention) by another name */
    if (w->tensor_flops > 0 && r->cats[w->group] != LP_KCAT_GEMM &&
        r->cats[w->group] != LP_KCAT_ATTENTION)
        w->flags |= LP_DEEP_ROW_TENSOR_UNNAMED;
    if (has(k, LP_NCU_FFMA) || has(k, LP_NCU_FADD) || has(k, LP_NCU_FMUL)) {
        counted = 1;
        w->fp32_flops = 2 * (has(k, LP_NCU_FFMA) ? k->metric[LP_NCU_FFMA] : 0) +
                        (has(k, LP_NCU_FADD) ? k->metric[LP_NCU_FADD] : 0) +
                        (has(k, LP_NCU_FMUL) ? k->metric[LP_NCU_FMUL] : 0);
        if (w->peak_dtype < 0 && w->fp32_flops > 0)
            w->peak_dtype = LP_DTYPE_FP32;
    }
    double s = k->metric[LP_NCU_DURATION] * 1e-9;
    double flops = w->tensor_flops + w->fp32_flops;
    w->flops_per_s = counted && s > 0 ? flops / s : NAN;
    w->dram_bytes = has(k, LP_NCU_DRAM_BW) ? k->metric[LP_NCU_DRAM_BW] * s : NAN;
    w->intensity = counted && w->dram_bytes > 0 ? flops / w->dram_bytes : NAN;
    double bw = r->util.gpu.mem_bw_gbs * 1e9;
    if (w->peak_dtype >= 0 && r->util.gpu.tflops[w->peak_dtype] > 0 && bw > 0) {
        w->peak_flops = r->util.gpu.tflops[w->peak_dtype] * 1e12;
        w->ridge = w->peak_flops / bw;
    }
    /* both units past 60 %: the roofline says which one the kernel's DRAM traffic and math
     * put it under (a GEMM keeps L1 and shared memory busy feeding its tensor cores, which
     * counts as memory in SOL memory) */
    struct lp_deep_kernel *j = &w->j;
    if ((j->bound == LP_DEEP_BOUND_COMPUTE || j->bound == LP_DEEP_BOUND_MEMORY) &&
        k->metric[LP_NCU_SOL_SM] >= LP_DEEP_BOUND_PCT &&
        k->metric[LP_NCU_SOL_MEMORY] >= LP_DEEP_BOUND_PCT && isfinite(w->intensity) &&
        w->ridge > 0) {
        j->bound = w->intensity >= w->ridge ? LP_DEEP_BOUND_COMPUTE : LP_DEEP_BOUND_MEMORY;
        w->flags |= LP_DEEP_ROW_BY_ROOFLINE;
    }
    /* the next step */
    switch (j->bound) {
    case LP_DEEP_BOUND_COMPUTE:
        w->advice = w->fp32_flops > w->tensor_flops &&
                    (!has(k, LP_NCU_TENSOR) || k->metric[LP_NCU_TENSOR] < 20)
                        ? LP_DEEP_ADVICE_TENSOR_CORES : LP_DEEP_ADVICE_FEWER_FLOPS;
        break;
    case LP_DEEP_BOUND_MEMORY: w->advice = LP_DEEP_ADVICE_FEWER_BYTES; break;
    case LP_DEEP_BOUND_SMALL: w->advice = LP_DEEP_ADVICE_MORE_WORK; break;
    case LP_DEEP_BOUND_LATENCY: {
        /* waiting on memory with few warps to hide it, the warps capped by registers or
         * shared memory, and no tensor-core pipeline (whose one block per SM is by design):
         * more warps per SM is the lead; else the largest stall */
        const char *top = j->stall[0] >= 0 ? n->stall_names[j->stall[0]] : "";
        int memory_wait = !strcmp(top, "long_scoreboard") || !strcmp(top, "lg_throttle");
        int capped = j->limits & ((1u << LP_DEEP_LIMIT_REGISTERS) |
                                  (1u << LP_DEEP_LIMIT_SHARED_MEM));
        int mma = !has(k, LP_NCU_TENSOR) || k->metric[LP_NCU_TENSOR] >= 10;
        if (memory_wait && capped && !mma && has(k, LP_NCU_OCC_THEORETICAL) &&
            k->metric[LP_NCU_OCC_THEORETICAL] <= 25)
            w->advice = LP_DEEP_ADVICE_OCCUPANCY;
        else
            w->advice = j->stall[0] >= 0 ? LP_DEEP_ADVICE_STALL : LP_DEEP_ADVICE_NONE;
        break;
    }
    default: w->advice = LP_DEEP_ADVICE_NONE; break;
    }
}

/* sort key of a measured kernel: stage, config, duration */
struct key {
    int stage;
    long config;
    double dur;
    size_t m;
};

static int cmp_key(const void *a, const void *b)
{
    const struct key *x = a, *y = b;
    if (x->stage != y->stage)
        return x->stage < y->stage ? -1 : 1;
    if (x->config != y->config)
        return x->config < y->config ? -1 : 1;
    if (x->dur != y->dur)
        return x->dur < y->dur ? -1 : 1;
    return (x->m > y->m) - (x->m < y->m); /* equal durations: in ncu's order */
}

static int cmp_row(const void *a, const void *b)
{
    const struct lp_deep_row *x = a, *y = b;
    if (x->stage != y->stage)
        return x->stage < y->stage ? -1 : 1;
    if (x->run_ns != y->run_ns)
        return x->run_ns > y->run_ns ? -1 : 1;
    return x->j.k->id < y->j.k->id ? -1 : x->j.k->id > y->j.k->id;
}

/* Every group's names, as the trace has them (mangled) and demangled, sorted for
 * group_of; returns how many (at most twice the groups) */
static size_t names_index(const struct lp_run *r, const char **mangled, struct named *by)
{
    const struct lp_trace *t = r->trace;
    size_t n_by = 0;
    for (size_t i = 0; i < t->n_kernels; i++)
        if (!mangled[lp_run_kernel_group(r, i)])
            mangled[lp_run_kernel_group(r, i)] =
                lp_trace_str(t, lp_trace_kernel_config(t, &t->kernels[i])->name);
    for (size_t g = 0; g < r->n_names; g++) {
        if (mangled[g])
            by[n_by++] = (struct named){mangled[g], (long)g};
        if (!mangled[g] || strcmp(mangled[g], r->names[g]))
            by[n_by++] = (struct named){r->names[g], (long)g};
    }
    qsort(by, n_by, sizeof *by, cmp_named);
    return n_by;
}

/* One row per stage and configuration measured (KEYS sorted by them), judged by its median
 * instance, into r->deep */
static int make_rows(struct lp_run *r, const struct lp_ncu_report *ncu, const struct config *cf,
                     const struct measured *ms, const struct key *keys, size_t n_keys,
                     const struct lp_deep_kernel *judged)
{
    struct lp_deep *d = r->deep;
    d->rows = calloc(n_keys ? n_keys : 1, sizeof *d->rows);
    if (!d->rows)
        return LP_ERR_NOMEM;
    for (size_t i = 0, j; i < n_keys; i = j) {
        for (j = i; j < n_keys && keys[j].stage == keys[i].stage &&
                    keys[j].config == keys[i].config; j++)
            ;
        const struct config *c = &cf[keys[i].config];
        struct lp_deep_row *w = &d->rows[d->n_rows++];
        int s = keys[i].stage;
        w->stage = s;
        w->group = c->group;
        memcpy(w->grid, c->grid, sizeof w->grid);
        memcpy(w->block, c->block, sizeof w->block);
        for (size_t q = i; q < j; q++)
            w->flags |= ms[keys[q].m].flags;
        w->run_ns = c->ns[s];
        w->run_calls = c->calls[s];
        w->share = r->stages[s].gpu_ns ? (double)w->run_ns / (double)r->stages[s].gpu_ns : 0;
        w->instances = j - i;
        w->dur_min_ns = keys[i].dur;
        w->dur_max_ns = keys[j - 1].dur;
        w->j = judged[keys[i + (j - i - 1) / 2].m];
        figures(r, ncu, w);
    }
    return LP_OK;
}

int lp_run_deep(struct lp_run *r, struct lp_ncu_report *ncu)
{
    const struct lp_trace *t = r->trace;
    struct lp_deep *d = calloc(1, sizeof *d);
    const char **mangled = calloc(r->n_names ? r->n_names : 1, sizeof *mangled);
    long *first = malloc((r->n_names ? r->n_names : 1) * sizeof *first);
    struct config *cf = calloc(ncu->n_kernels ? ncu->n_kernels : 1, sizeof *cf);
    struct measured *ms = calloc(ncu->n_kernels ? ncu->n_kernels : 1, sizeof *ms);
    struct key *keys = calloc(ncu->n_kernels ? ncu->n_kernels : 1, sizeof *keys);
    struct named *by = calloc(2 * (r->n_names ? r->n_names : 1), sizeof *by);
    size_t n_by = 0;
    struct lp_deep_kernel *judged = NULL;
    size_t n_cf = 0;
    int rc = LP_ERR_NOMEM;
    if (!d || !mangled || !first || !cf || !ms || !keys || !by) {
        lp_ncu_free(ncu);
        free(d);
        d = NULL;
        goto out;
    }
    d->ncu = ncu;
    r->deep = d;
    r->deep_free = lp_run_deep_free;
    d->n_kernels = ncu->n_kernels;
    d->mem_bw = r->util.gpu.mem_bw_gbs * 1e9;
    if (lp_deep_judge(ncu, &judged) != LP_OK)
        goto out;
    for (size_t g = 0; g < r->n_names; g++)
        first[g] = -1;
    n_by = names_index(r, mangled, by);
    /* the distinct configurations ncu measured, chained per group */
    for (size_t i = 0; i < ncu->n_kernels; i++) {
        const struct lp_ncu_kernel *k = &ncu->kernels[i];
        ms[i] = (struct measured){.kernel = i, .config = -1, .stage = -1};
        long g = k->name ? group_of(by, n_by, k->name) : -1;
        if (g < 0) {
            d->unmatched++;
            continue;
        }
        long c = first[g];
        while (c >= 0 && (memcmp(cf[c].grid, k->grid, sizeof k->grid) ||
                          memcmp(cf[c].block, k->block, sizeof k->block)))
            c = cf[c].next;
        if (c < 0) {
            c = (long)n_cf++;
            cf[c].group = (uint32_t)g;
            memcpy(cf[c].grid, k->grid, sizeof k->grid);
            memcpy(cf[c].block, k->block, sizeof k->block);
            cf[c].ns = calloc(r->n_stages ? r->n_stages : 1, sizeof *cf[c].ns);
            cf[c].calls = calloc(r->n_stages ? r->n_stages : 1, sizeof *cf[c].calls);
            if (!cf[c].ns || !cf[c].calls)
                goto out;
            cf[c].next = first[g];
            first[g] = c;
        }
        ms[i].config = c;
    }
    /* where the run ran each of them */
    for (size_t i = 0; i < t->n_kernels; i++) {
        const struct lp_kernel_rec *k = &t->kernels[i];
        const struct lp_kernel_config *kc = lp_trace_kernel_config(t, k);
        int32_t s = lp_run_kernel_stage(r, i);
        for (long c = first[lp_run_kernel_group(r, i)]; c >= 0 && s >= 0; c = cf[c].next)
            if (!memcmp(cf[c].grid, kc->grid, sizeof kc->grid) &&
                !memcmp(cf[c].block, kc->block, sizeof kc->block)) {
                cf[c].ns[s] += lp_trace_kernel_end(t, k) - k->start;
                cf[c].calls[s]++;
                break;
            }
    }
    size_t n_keys = 0;
    for (size_t i = 0; i < ncu->n_kernels; i++) {
        if (ms[i].config < 0)
            continue;
        place(r, &cf[ms[i].config], &ncu->kernels[i], &ms[i]);
        if (ms[i].stage < 0) {
            d->unmatched++;
            continue;
        }
        keys[n_keys++] = (struct key){ms[i].stage, ms[i].config,
                                      ncu->kernels[i].metric[LP_NCU_DURATION], i};
    }
    qsort(keys, n_keys, sizeof *keys, cmp_key);
    if (make_rows(r, ncu, cf, ms, keys, n_keys, judged) != LP_OK)
        goto out;
    qsort(d->rows, d->n_rows, sizeof *d->rows, cmp_row);
    rc = LP_OK;
out:
    for (size_t i = 0; i < n_cf; i++) {
        free(cf[i].ns);
        free(cf[i].calls);
    }
    free(cf);
    free(ms);
    free(keys);
    free(judged);
    free(by);
    free(mangled);
    free(first);
    if (!d)
        return LP_ERR_NOMEM;
    return rc;
}

void lp_run_deep_free(struct lp_run *r)
{
    if (!r->deep)
        return;
    lp_ncu_free(r->deep->ncu);
    free(r->deep->rows);
    free(r->deep);
    r->deep = NULL;
}
