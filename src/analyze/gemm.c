/* GEMMs in a run: the table by shape, dtype and stage (calls, GPU time, TFLOP/s, share of
 * the dtype's dense peak, hints on tile fit and GEMV-like shapes), measured GEMM FLOPs and
 * "measured MFU (GEMMs)" per stage beside the analytic ones, and the GEMM kernels no recorded
 * call launched (CUTLASS, grouped GEMMs, Triton, graph replays) as time without shapes. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "run_internal.h"
#include "llmprof/sat.h"

/* ---- the table ---- */

static uint64_t shape_hash(const struct lp_gemm *g, int stage, int replayed)
{
    const uint64_t v[] = {g->m, g->n, g->k, g->batch, (uint64_t)g->transa << 8 | g->transb,
                          (uint64_t)g->a_type << 32 | g->b_type,
                          (uint64_t)g->d_type << 32 | g->compute_type, g->epilogue,
                          (uint64_t)(int64_t)stage, (uint64_t)replayed};
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        h = (h ^ v[i]) * 1099511628211ull;
    return h;
}

/* "MATMUL_TILE_256x128" style tile: rows x cols of D per CTA; 0 when unknown */
static int tile_dims(const char *tile, uint64_t *tm, uint64_t *tn)
{
    unsigned long a, b;
    if (!tile || sscanf(tile, "%lux%lu", &a, &b) != 2 || !a || !b)
        return 0;
    *tm = a;
    *tn = b;
    return 1;
}

/* Hints an engineer acts on: GEMV-like calls, tiles the shape fills badly, too few tiles for
 * the SMs, dimensions tensor cores cannot take aligned. */
static void hint(const struct lp_run *r, struct lp_gemm_row *row, uint32_t sms)
{
    const struct lp_gemm *g = &row->call;
    uint64_t small = g->m < g->n ? g->m : g->n;
    int gemv = small <= 16 && g->k >= 256;
    row->bw_share = row->gbs / r->util.gpu.mem_bw_gbs;
    if (row->peak_dtype >= 0)
        row->ridge = r->util.gpu.tflops[row->peak_dtype] * 1e3 / r->util.gpu.mem_bw_gbs;
    if (row->gpu_ns && gemv)
        row->hints |= LP_GEMM_HINT_GEMV;
    else if (row->gpu_ns && row->memory_bound)
        row->hints |= LP_GEMM_HINT_MEMORY_BOUND;
    uint64_t tm, tn;
    if (!gemv && tile_dims(lp_trace_str(r->trace, g->tile), &tm, &tn) && g->m && g->n) {
        uint64_t bm = (g->m + tm - 1) / tm, bn = (g->n + tn - 1) / tn;
        row->tile_m = tm;
        row->tile_n = tn;
        row->tile_fill = (double)g->m * (double)g->n / ((double)(bm * tm) * (double)(bn * tn));
        if (row->tile_fill < 0.85)
            row->hints |= LP_GEMM_HINT_TILE_FILL;
        /* the last wave of tiles over the SMs: how full the SMs are on average */
        row->ctas = bm * bn * g->batch;
        row->sms = sms;
        row->waves = sms ? (row->ctas + sms - 1) / sms : 0;
        row->sm_fill = row->waves ? (double)row->ctas / (double)(row->waves * sms) : 1;
        if (row->sm_fill < 0.75)
            row->hints |= LP_GEMM_HINT_WAVES;
    }
    /* tensor-core loads want 16-byte aligned rows: dimensions in multiples of 16 bytes */
    double eb = lp_cuda_type_bytes(g->a_type);
    uint64_t mult = eb >= 0.5 && eb <= 16 ? (uint64_t)(16 / eb) : 0;
    if (small > 16 && mult > 1 && (g->k % mult || g->m % mult || g->n % mult)) {
        row->align_elems = mult;
        row->hints |= LP_GEMM_HINT_UNALIGNED;
    }
}

/* Rows by GPU time, then calls (both descending); ties (rows whose calls ran no kernel) by
 * stage, eager before replayed, the first call's start, then shape */
static int cmp_rows(const void *a, const void *b)
{
    const struct lp_gemm_row *x = a, *y = b;
    if (x->gpu_ns != y->gpu_ns)
        return x->gpu_ns < y->gpu_ns ? 1 : -1;
    if (x->calls != y->calls)
        return x->calls < y->calls ? 1 : -1;
    if (x->stage != y->stage)
        return x->stage < y->stage ? -1 : 1;
    if (x->replayed != y->replayed)
        return x->replayed < y->replayed ? -1 : 1;
    if (x->call.start != y->call.start)
        return x->call.start < y->call.start ? -1 : 1;
    return lp_gemm_shape_cmp(&x->call, &y->call);
}

/* ---- sizes stepping through a progression: one row ---- */

#define VARY_MIN 4 /* sizes that make a progression */

/* Row R's dimension DIM ('m' or 'n'). */
static uint64_t dim_of(const struct lp_gemm_row *r, char dim)
{
    return dim == 'm' ? r->call.m : r->call.n;
}

/* Rows X and Y alike but for dimension DIM: stage, replays, the other sizes, types. */
static int cmp_but(const struct lp_gemm_row *x, const struct lp_gemm_row *y, char dim)
{
    const struct lp_gemm *a = &x->call, *b = &y->call;
    const uint64_t u[] = {(uint64_t)(int64_t)x->stage, (uint64_t)x->replayed,
                          dim == 'm' ? a->n : a->m, a->k, a->batch, a->transa, a->transb,
                          a->a_type, a->b_type, a->d_type, a->compute_type, a->epilogue};
    const uint64_t v[] = {(uint64_t)(int64_t)y->stage, (uint64_t)y->replayed,
                          dim == 'm' ? b->n : b->m, b->k, b->batch, b->transa, b->transb,
                          b->a_type, b->b_type, b->d_type, b->compute_type, b->epilogue};
    for (size_t i = 0; i < sizeof u / sizeof *u; i++)
        if (u[i] != v[i])
            return (u[i] > v[i]) - (u[i] < v[i]);
    return 0;
}

struct vary_sort {
    const struct lp_gemm_row *rows;
    char dim;
};

static int cmp_vary(const void *a, const void *b, void *arg)
{
    const struct vary_sort *k = arg;
    const struct lp_gemm_row *x = &k->rows[*(const uint32_t *)a],
                             *y = &k->rows[*(const uint32_t *)b];
    int c = cmp_but(x, y, k->dim);
    if (c)
        return c;
    uint64_t p = dim_of(x, k->dim), q = dim_of(y, k->dim);
    return (p > q) - (p < q);
}

/* Why sizes LO..HI of dimension DIM step: the decode's context (batch x prompt up to batch x
 * (prompt + generated)), over MLA's compressed KV cache when K is the model's kv_lora_rank. */
static enum lp_gemm_vary vary_cause(const struct lp_run *r, const struct lp_gemm *g, uint64_t lo,
                                    uint64_t hi)
{
    const struct lp_llm_metrics *l = &r->llm;
    int64_t b = l->batch > 0 ? l->batch : 1, p = l->prompt_per_sequence;
    if (p <= 0 || !l->decode_requests || l->decode_steps <= 0)
        return LP_GEMM_VARY_STEPS;
    int64_t gen = l->decode_steps / (int64_t)l->decode_requests;
    if (lo < (uint64_t)(b * p) || hi > (uint64_t)(b * (p + gen + 1)))
        return LP_GEMM_VARY_STEPS;
    const struct lp_model *m = r->opt.model;
    for (int i = 0; m && i < m->n_groups; i++)
        if (m->groups[i].attn.kind == LP_ATTN_KIND_MLA &&
            (uint64_t)m->groups[i].attn.kv_lora_rank == g->k)
            return LP_GEMM_VARY_MLA;
    return LP_GEMM_VARY_CONTEXT;
}

/* a row's linked calls' FLOPs and least bytes (in quarters), exact: the same whatever order
 * the calls are summed in; read into the row's doubles once the rows are merged */
struct row_sum {
    lp_u128 flops, quarters;
};

/* Rows of a decode stage alike but for one dimension whose sizes, VARY_MIN or more, step by
 * one stride (HF's MLA runs kv_b_proj over the whole context: 4096 x 513..527 x 512, one size
 * per step) become one row (SUMS, each row's, merged alike); the others are removed. */
static int merge_steps(struct lp_run *r, struct row_sum *sums)
{
    uint32_t *idx = malloc((r->gemm.n_rows ? r->gemm.n_rows : 1) * sizeof *idx);
    if (!idx)
        return LP_ERR_NOMEM;
    for (int d = 0; d < 2; d++) {
        char dim = d ? 'm' : 'n';
        size_t n = 0;
        for (size_t i = 0; i < r->gemm.n_rows; i++) {
            const struct lp_gemm_row *g = &r->gemm.rows[i];
            if (g->calls && !g->vary_dim && g->stage >= 0 &&
                r->stages[g->stage].kind == LP_STAGE_KIND_DECODE)
                idx[n++] = (uint32_t)i;
        }
        struct vary_sort key = {r->gemm.rows, dim};
        qsort_r(idx, n, sizeof *idx, cmp_vary, &key);
        for (size_t i = 0, j; i < n; i = j) {
            for (j = i + 1; j < n && !cmp_but(&r->gemm.rows[idx[i]], &r->gemm.rows[idx[j]], dim);
                 j++)
                ;
            if (j - i < VARY_MIN)
                continue;
            uint64_t lo = dim_of(&r->gemm.rows[idx[i]], dim);
            uint64_t step = dim_of(&r->gemm.rows[idx[i + 1]], dim) - lo;
            int even = step > 0;
            for (size_t q = i + 1; q < j && even; q++)
                even =
                    dim_of(&r->gemm.rows[idx[q]], dim) - dim_of(&r->gemm.rows[idx[q - 1]], dim) ==
                    step;
            if (!even)
                continue;
            struct lp_gemm_row *to = &r->gemm.rows[idx[i]];
            for (size_t q = i + 1; q < j; q++) {
                struct lp_gemm_row *g = &r->gemm.rows[idx[q]];
                to->calls += g->calls;
                to->linked += g->linked;
                to->kernels += g->kernels;
                to->gpu_ns = lp_sat_add(to->gpu_ns, g->gpu_ns);
                struct row_sum *st = &sums[idx[i]], *sg = &sums[idx[q]];
                st->flops = lp_sat_add_u128(st->flops, sg->flops);
                st->quarters = lp_sat_add_u128(st->quarters, sg->quarters);
                if (to->top_group == SIZE_MAX)
                    to->top_group = g->top_group;
                g->calls = 0; /* merged: removed below */
            }
            to->vary_dim = dim;
            to->vary_lo = lo;
            to->vary_hi = dim_of(&r->gemm.rows[idx[j - 1]], dim);
            to->vary_step = step;
            to->vary_values = j - i;
            to->vary = vary_cause(r, &to->call, lo, to->vary_hi);
        }
    }
    free(idx);
    size_t k = 0;
    for (size_t i = 0; i < r->gemm.n_rows; i++) {
        if (r->gemm.rows[i].calls) {
            sums[k] = sums[i];
            r->gemm.rows[k++] = r->gemm.rows[i];
        }
    }
    r->gemm.n_rows = k;
    return LP_OK;
}

/* per GEMM that ran (lp_run_gemm): its stage, its kernels, their time and the costliest one */
struct call_info {                /* 40 bytes: one per GEMM call at the report's peak */
    uint64_t ns, top_ns;
    uint64_t first_start;         /* its first kernel's start */
    int32_t stage;
    uint32_t kernels;
    uint32_t top_group;
    uint8_t captured, replayed;   /* a call captured into a graph; one replay of such a call */
    uint8_t unrecorded;           /* made outside the capture windows, no kernel recorded: left
                                     out (its kernels were not recorded) */
};

/* The table of rows by shape (SLOT, SLOT_HASH, *N_SLOTS of each) doubled: rows are few
 * (distinct shapes), calls many, so it grows with the rows rather than start at the calls'
 * number. LP_OK or LP_ERR_NOMEM (the table then unchanged). */
static int grow_slots(int32_t **slot, uint64_t **slot_hash, size_t *n_slots)
{
    size_t n = *n_slots * 2;
    int32_t *s = malloc(n * sizeof *s);
    uint64_t *h = malloc(n * sizeof *h);
    if (!s || !h) {
        free(s);
        free(h);
        return LP_ERR_NOMEM;
    }
    memset(s, 0xff, n * sizeof *s);
    for (size_t i = 0; i < *n_slots; i++) {
        if ((*slot)[i] < 0)
            continue;
        size_t at = (*slot_hash)[i] & (n - 1);
        while (s[at] >= 0)
            at = (at + 1) & (n - 1);
        s[at] = (*slot)[i];
        h[at] = (*slot_hash)[i];
    }
    free(*slot);
    free(*slot_hash);
    *slot = s;
    *slot_hash = h;
    *n_slots = n;
    return LP_OK;
}

static int build_rows(struct lp_run_ctx *c, const struct call_info *ci)
{
    const struct lp_trace *t = c->t;
    struct lp_run *r = c->r;
    size_t cap = 64, n_slots = 256; /* at most half full */
    int32_t *slot = malloc(n_slots * sizeof *slot);
    uint64_t *slot_hash = malloc(n_slots * sizeof *slot_hash);
    struct row_sum *sums = malloc(cap * sizeof *sums);
    lp_u128 *context = calloc(r->n_stages + 1, sizeof *context);
    r->gemm.rows = calloc(cap, sizeof *r->gemm.rows);
    int rc = LP_ERR_NOMEM;
    if (!slot || !slot_hash || !sums || !context || !r->gemm.rows)
        goto out;
    memset(slot, 0xff, n_slots * sizeof *slot);
    uint32_t sms = t->n_devices ? t->devices[0].sm_count : 0;
    for (size_t i = 0; i < c->n_gemms; i++) {
        int stage = ci[i].stage;
        if (ci[i].captured || ci[i].unrecorded) /* it ran in its replays; or unrecorded */
            continue;
        struct lp_gemm call = lp_run_gemm(c, i);
        const struct lp_gemm *g = &call;
        if (stage >= 0 && r->stages[stage].kind == LP_STAGE_KIND_WARMUP) {
            r->gemm.warmup_calls++; /* counted, kept out of the table */
            continue;
        }
        if (2 * (r->gemm.n_rows + 1) > n_slots && grow_slots(&slot, &slot_hash, &n_slots))
            goto out;
        uint64_t h = shape_hash(g, stage, ci[i].replayed);
        size_t s = h & (n_slots - 1);
        while (slot[s] >= 0 && !(slot_hash[s] == h && r->gemm.rows[slot[s]].stage == stage &&
                                 r->gemm.rows[slot[s]].replayed == ci[i].replayed &&
                                 lp_gemm_same_shape(&r->gemm.rows[slot[s]].call, g)))
            s = (s + 1) & (n_slots - 1);
        if (slot[s] < 0) {
            if (r->gemm.n_rows == cap) {
                struct lp_gemm_row *p = realloc(r->gemm.rows, 2 * cap * sizeof *p);
                if (p)
                    r->gemm.rows = p;
                struct row_sum *q = p ? realloc(sums, 2 * cap * sizeof *q) : NULL;
                if (!q)
                    goto out;
                sums = q;
                cap *= 2;
            }
            struct lp_gemm_row *row = &r->gemm.rows[r->gemm.n_rows];
            memset(row, 0, sizeof *row);
            sums[r->gemm.n_rows] = (struct row_sum){0, 0};
            row->call = *g;
            row->stage = stage;
            row->replayed = ci[i].replayed;
            row->top_group = SIZE_MAX;
            row->flops_per_call = lp_gemm_flops(g);
            slot[s] = (int32_t)r->gemm.n_rows++;
            slot_hash[s] = h;
        }
        struct lp_gemm_row *row = &r->gemm.rows[slot[s]];
        row->calls++;
        if (row->call.algo < 0 && g->algo >= 0) /* the first call that knew its algorithm */
            row->call = *g;
        if (ci[i].kernels) {
            row->linked++;
            row->kernels += ci[i].kernels;
            row->gpu_ns = lp_sat_add(row->gpu_ns, ci[i].ns);
            struct row_sum *sum = &sums[slot[s]];
            sum->flops = lp_sat_add_u128(sum->flops, lp_gemm_flops_exact(g));
            sum->quarters = lp_sat_add_u128(sum->quarters, lp_gemm_min_quarter_bytes(g));
            if (row->top_group == SIZE_MAX) /* calls of one shape launch the same kernels */
                row->top_group = ci[i].top_group;
        }
    }
    if ((rc = merge_steps(r, sums)) != LP_OK)
        goto out;
    for (size_t i = 0; i < r->gemm.n_rows; i++) {
        struct lp_gemm_row *row = &r->gemm.rows[i];
        row->flops = (double)sums[i].flops;
        row->bytes = (double)sums[i].quarters / 4;
        /* the FLOPs of calls over the growing context, per stage */
        if (row->stage >= 0 && row->vary_dim && row->vary != LP_GEMM_VARY_STEPS)
            context[row->stage] = lp_sat_add_u128(context[row->stage], sums[i].flops);
    }
    for (size_t s = 0; s < r->n_stages; s++)
        r->stages[s].gemm_context_flops = (double)context[s];
    for (size_t i = 0; i < r->gemm.n_rows; i++) {
        struct lp_gemm_row *row = &r->gemm.rows[i];
        double bytes = lp_gemm_min_bytes(&row->call);
        if (row->vary_dim && row->linked) /* the mean call of its sizes */
            row->flops_per_call = row->flops / (double)row->linked;
        if (row->vary_dim && row->bytes > 0)
            row->intensity = row->flops / row->bytes;
        else
            row->intensity = bytes > 0 ? row->flops_per_call / bytes : 0;
        row->peak_dtype = lp_gemm_peak_dtype(&row->call);
        row->peak_share = -1;
        if (row->gpu_ns) {
            row->mean_ns = (double)row->gpu_ns / (double)row->linked;
            row->tflops = row->flops / (double)row->gpu_ns / 1e3;
            row->gbs = row->bytes / (double)row->gpu_ns;
        }
        double peak = row->peak_dtype >= 0 ? r->util.gpu.tflops[row->peak_dtype] : 0;
        if (peak > 0 && row->gpu_ns)
            row->peak_share = row->tflops / peak;
        if (peak > 0 && r->util.gpu.mem_bw_gbs > 0)
            row->memory_bound = row->intensity < peak * 1e3 / r->util.gpu.mem_bw_gbs;
        if (peak > 0 && r->util.gpu.mem_bw_gbs > 0)
            hint(r, row, sms);
        if (row->vary_dim) /* tiles and alignment differ from size to size */
            row->hints = (row->hints & ~(uint32_t)(LP_GEMM_HINT_TILE_FILL | LP_GEMM_HINT_WAVES |
                                                   LP_GEMM_HINT_UNALIGNED)) |
                         LP_GEMM_HINT_STEPS;
    }
    qsort(r->gemm.rows, r->gemm.n_rows, sizeof *r->gemm.rows, cmp_rows);
    rc = LP_OK;
out:
    free(slot);
    free(slot_hash);
    free(sums);
    free(context);
    return rc;
}

/* A batched cuBLAS call over MoE experts' weights (HF's batched_mm for a few tokens): batch
 * 2 to the expert count, reducing over an expert matrix's input (gate and up: hidden; down:
 * the expert's width) into its output. Shared experts run unbatched. */
static int expert_call(const struct lp_model *m, const struct lp_gemm *g)
{
    for (int i = 0; m && g->batch >= 2 && i < m->n_groups; i++) {
        const struct lp_mlp_spec *s = &m->groups[i].mlp;
        if (s->kind != LP_MLP_KIND_MOE || g->batch > (uint64_t)s->experts)
            continue;
        uint64_t h = (uint64_t)m->hidden, w = (uint64_t)s->intermediate;
        const uint64_t out[] = {2 * w, w, h}, in[] = {h, h, w};
        for (int j = 0; j < 3; j++)
            if (g->k == in[j] && (g->m == out[j] || g->n == out[j]))
                return 1;
    }
    return 0;
}

/* Measured GEMM FLOPs per stage against the analytic matmul FLOPs of the same stage. */
static int stage_gemms(struct lp_run_ctx *c, const struct call_info *ci)
{
    struct lp_run *r = c->r;
    lp_u128 *flops = calloc(r->n_stages + 1, sizeof *flops); /* exact, per stage */
    if (!flops)
        return LP_ERR_NOMEM;
    for (size_t i = 0; i < c->n_gemms; i++) {
        if (ci[i].stage < 0 || ci[i].captured || ci[i].unrecorded)
            continue;
        struct lp_stage_report *st = &r->stages[ci[i].stage];
        st->gemm_calls++;
        st->gemm_ns = lp_sat_add(st->gemm_ns, ci[i].ns);
        lp_u128 *f = &flops[ci[i].stage];
        struct lp_gemm g = lp_run_gemm(c, i);
        *f = lp_sat_add_u128(*f, lp_gemm_flops_exact(&g));
        if (expert_call(r->opt.model, &g)) {
            st->moe_gemm_ns = lp_sat_add(st->moe_gemm_ns, ci[i].ns);
            st->moe_gemm_kernels += ci[i].kernels;
        }
    }
    for (size_t s = 0; s < r->n_stages; s++)
        r->stages[s].gemm_flops = (double)flops[s];
    free(flops);
    double peak = r->util.gpu.tflops[r->util.dtype];
    for (size_t s = 0; s < r->n_stages; s++) {
        struct lp_stage_report *st = &r->stages[s];
        if (!st->gemm_calls)
            continue;
        if (st->gemm_ns)
            st->gemm_tflops = st->gemm_flops / (double)st->gemm_ns / 1e3;
        if (peak > 0 && st->wall.total > 0)
            st->gemm_mfu = st->gemm_flops / (st->wall.total / 1e9) / 1e12 / peak;
        /* analytic FLOPs are per occurrence (per decode step); measured ones are summed */
        double units = st->kind == LP_STAGE_KIND_DECODE ? (double)st->steps
                                                        : (double)st->occurrences;
        if (st->has_util && units > 0 && st->model_matmul_flops > 0) {
            st->gemm_vs_model = st->gemm_flops / units / st->model_matmul_flops;
            st->gemm_vs_model_rest = (st->gemm_flops - st->gemm_context_flops) / units /
                                     st->model_matmul_flops;
        }
        if (st->has_util && units > 0 && st->model_linear_flops > 0)
            st->gemm_vs_linear = st->gemm_flops / units / st->model_linear_flops;
    }
    return LP_OK;
}

/* by GPU time, descending; equal times by stage, then group */
static int unshaped_cmp(const void *a, const void *b)
{
    const struct lp_unshaped_gemm *x = a, *y = b;
    if (x->gpu_ns != y->gpu_ns)
        return x->gpu_ns < y->gpu_ns ? 1 : -1;
    if (x->stage != y->stage)
        return x->stage < y->stage ? -1 : 1;
    return (x->group > y->group) - (x->group < y->group);
}

/* GEMM kernels (by name) no recorded call launched: per stage, and the costliest rows */
static int unshaped(struct lp_run_ctx *c)
{
    struct lp_run *r = c->r;
    struct lp_u64map rows = {0}; /* (stage, group) -> row + 1 */
    struct lp_unshaped_gemm *v = NULL;
    size_t n = 0, cap = 0;
    /* per name, once: 1 a grouped (MoE) GEMM, 0 not, -1 not looked at yet */
    signed char *grouped = malloc(r->n_names ? r->n_names : 1);
    if (!grouped)
        return LP_ERR_NOMEM;
    memset(grouped, -1, r->n_names);
    int rc = LP_OK;
    for (size_t i = 0; i < c->n_work; i++) {
        const struct lp_work *w = &c->work[i];
        if (lp_work_kind(w) != LP_OP_KERNEL || r->cats[w->group] != LP_KCAT_GEMM)
            continue;
        struct lp_stage_report *st = &r->stages[lp_work_stage(c, w)];
        if (grouped[w->group] < 0)
            grouped[w->group] = (signed char)lp_kernel_grouped_gemm(r->names[w->group]);
        if (grouped[w->group]) {
            st->moe_gemm_ns = lp_sat_add(st->moe_gemm_ns, lp_work_dur(c->t, w));
            st->moe_gemm_kernels++;
        }
        if (c->kernel_gemm && c->kernel_gemm[w->index] >= 0)
            continue;
        st->gemm_unshaped_ns = lp_sat_add(st->gemm_unshaped_ns, lp_work_dur(c->t, w));
        if (st->kind == LP_STAGE_KIND_WARMUP)
            continue;
        r->gemm.unshaped_ns = lp_sat_add(r->gemm.unshaped_ns, lp_work_dur(c->t, w));
        uint64_t *row = lp_u64map_at(&rows, (uint64_t)lp_work_stage(c, w) << 32 | w->group, NULL);
        if (row && !*row && n == cap) {
            cap = cap ? 2 * cap : 16;
            struct lp_unshaped_gemm *p = realloc(v, cap * sizeof *v);
            row = p ? row : NULL;
            v = p ? p : v;
        }
        if (!row) {
            rc = LP_ERR_NOMEM;
            break;
        }
        if (!*row) {
            v[n] = (struct lp_unshaped_gemm){.stage = lp_work_stage(c, w), .group = w->group};
            *row = ++n;
        }
        v[*row - 1].calls++;
        v[*row - 1].gpu_ns = lp_sat_add(v[*row - 1].gpu_ns, lp_work_dur(c->t, w));
    }
    free(grouped);
    lp_u64map_free(&rows);
    if (rc == LP_OK && !v && !(v = calloc(1, sizeof *v)))
        rc = LP_ERR_NOMEM;
    if (rc != LP_OK) {
        free(v);
        return rc;
    }
    qsort(v, n, sizeof *v, unshaped_cmp);
    r->gemm.unshaped = v;
    r->gemm.n_unshaped = n;
    for (size_t s = 0; s < r->n_stages; s++) {
        struct lp_stage_report *st = &r->stages[s];
        uint64_t all = st->gemm_ns + st->gemm_unshaped_ns;
        st->moe_gemm_share = st->gpu_ns ? (double)st->moe_gemm_ns / (double)st->gpu_ns : 0;
        st->gemm_coverage = all ? (double)st->gemm_ns / (double)all : -1;
        st->gemm_partial = all && st->gemm_coverage < 0.95;
    }
    for (size_t i = 0; i < r->gemm.n_unshaped; i++) {
        const struct lp_stage_report *st = &r->stages[r->gemm.unshaped[i].stage];
        uint64_t all = st->gemm_ns + st->gemm_unshaped_ns;
        r->gemm.unshaped[i].stage_share =
            all ? (double)r->gemm.unshaped[i].gpu_ns / (double)all : 0;
    }
    return LP_OK;
}

int lp_run_gemms(struct lp_run_ctx *c)
{
    const struct lp_trace *t = c->t;
    struct lp_run *r = c->r;
    const char *state = lp_trace_meta(t, "gemm");
    snprintf(r->gemm.state, sizeof r->gemm.state, "%s", state ? state : "");
    if (c->n_gemms == 0)
        return unshaped(c);
    const int32_t *kg = c->kernel_gemm;
    struct call_info *ci = calloc(c->n_gemms, sizeof *ci);
    uint8_t *made = r->replays_whole ? malloc(t->n_gemms ? t->n_gemms : 1) : NULL;
    if (!ci || (r->replays_whole && (!made || lp_gemm_made_nodes(t, made) != LP_OK))) {
        free(ci);
        free(made);
        return LP_ERR_NOMEM;
    }
    for (size_t i = 0; i < c->n_gemms; i++) {
        ci[i].stage = -1;
        /* with replays recorded whole no replayed kernel names the call: the graph node
         * it made does */
        ci[i].captured = i < t->n_gemms && ((c->gemm_replays && c->gemm_replays[i]) ||
                                            (made && made[i]));
        ci[i].replayed = i >= t->n_gemms;
    }
    for (size_t i = 0; i < t->n_kernels; i++) {
        if (!kg || kg[i] < 0)
            continue;
        struct call_info *x = &ci[kg[i]];
        const struct lp_kernel_rec *k = &t->kernels[i];
        uint64_t ns = lp_trace_kernel_end(t, k) - k->start;
        if (!x->kernels || k->start < x->first_start) { /* the stage of its first kernel */
            x->first_start = k->start;
            x->stage = c->kernel_work[i] >= 0 ? lp_work_stage(c, &c->work[c->kernel_work[i]]) : -1;
        }
        x->kernels++;
        x->ns = lp_sat_add(x->ns, ns);
        /* the longest kernel; of equal ones the smallest group, in whatever order they come */
        uint32_t g = lp_run_kernel_group(r, i);
        if (x->kernels == 1 || ns > x->top_ns || (ns == x->top_ns && g < x->top_group)) {
            x->top_ns = ns;
            x->top_group = g;
        }
    }
    /* a call that launched nothing (failed, or captured into a graph): where it was made */
    for (size_t i = 0; i < c->n_gemms; i++) {
        if (!ci[i].kernels && c->gemm_occ[i] >= 0)
            ci[i].stage = c->occ[c->gemm_occ[i]].stage;
        ci[i].unrecorded = !ci[i].kernels && !lp_run_in_window(c, lp_run_gemm_start(c, i));
    }
    lp_u128 flops = 0; /* exact: the same in any order */
    for (size_t i = 0; i < c->n_gemms; i++) {
        if (ci[i].captured) {
            r->gemm.captured++;
            continue;
        }
        if (ci[i].unrecorded)
            continue;
        r->gemm.calls++;
        r->gemm.replayed += ci[i].replayed;
        struct lp_gemm g = lp_run_gemm(c, i);
        r->gemm.failed += g.status != 0;
        if (ci[i].kernels) {
            r->gemm.linked++;
            r->gemm.ns = lp_sat_add(r->gemm.ns, ci[i].ns);
            flops = lp_sat_add_u128(flops, lp_gemm_flops_exact(&g));
        }
    }
    r->gemm.flops = (double)flops;
    int rc = build_rows(c, ci);
    if (rc == LP_OK && (rc = stage_gemms(c, ci)) == LP_OK)
        rc = unshaped(c);
    if (rc == LP_OK && r->gemm.calls - r->gemm.failed > r->gemm.linked)
        rc = lp_run_note(r, LP_NOTE_GEMMS_UNLINKED, -1,
                         (int64_t)(r->gemm.calls - r->gemm.failed - r->gemm.linked),
                         (int64_t)(r->gemm.calls - r->gemm.failed), 0);
    free(ci);
    free(made);
    return rc;
}

void lp_run_gemms_free(struct lp_run *r)
{
    free(r->gemm.rows);
    free(r->gemm.unshaped);
}
