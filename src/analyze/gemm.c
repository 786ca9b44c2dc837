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

/* One shape of the table while the calls are summed in (112 bytes). A trace of a few bytes
 * per call can make each call a shape of its own, so the whole lp_gemm_row (about 370 bytes,
 * and kilobytes in report.json) is made only for the shapes listed. */
struct acc {
    lp_u128 flops, quarters;      /* of its linked calls (least bytes in quarters), exact: the
                                     same whatever order the calls are summed in */
    uint64_t calls, linked, kernels, gpu_ns;
    uint64_t start;               /* of the call it shows */
    uint64_t vary_hi, vary_step;  /* as lp_gemm_row's */
    uint32_t call;                /* the GEMM it shows (lp_run_gemm): its first, or the first
                                     that knew its algorithm */
    uint32_t top_group;           /* UINT32_MAX none */
    uint32_t vary_values;
    int32_t stage;
    uint8_t replayed;
    char vary_dim;
    uint8_t vary;                 /* enum lp_gemm_vary */
};

/* Shapes by GPU time, then calls (both descending); ties (shapes whose calls ran no kernel)
 * by stage, eager before replayed, the shown call's start, then shape */
static int cmp_acc(const void *a, const void *b, void *arg)
{
    const struct acc *x = a, *y = b;
    if (x->gpu_ns != y->gpu_ns)
        return x->gpu_ns < y->gpu_ns ? 1 : -1;
    if (x->calls != y->calls)
        return x->calls < y->calls ? 1 : -1;
    if (x->stage != y->stage)
        return x->stage < y->stage ? -1 : 1;
    if (x->replayed != y->replayed)
        return x->replayed < y->replayed ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    struct lp_gemm p = lp_run_gemm(arg, x->call), q = lp_run_gemm(arg, y->call);
    return lp_gemm_shape_cmp(&p, &q);
}

/* ---- sizes stepping through a progression: one row ---- */

#define VARY_MIN 4 /* sizes that make a progression */

/* Dimension DIM ('m' or 'n') of the shape K */
static uint64_t dim_of(const struct lp_gemm_kind *k, char dim)
{
    return dim == 'm' ? k->m : k->n;
}

/* Shapes X (of kind A) and Y (of B) alike but for dimension DIM: stage, replays, the other
 * sizes, types. */
static int cmp_but(const struct acc *x, const struct lp_gemm_kind *a, const struct acc *y,
                   const struct lp_gemm_kind *b, char dim)
{
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
    const struct lp_run_ctx *c;
    const struct acc *accs;
    char dim;
};

static int cmp_vary(const void *a, const void *b, void *arg)
{
    const struct vary_sort *s = arg;
    const struct acc *x = &s->accs[*(const uint32_t *)a], *y = &s->accs[*(const uint32_t *)b];
    const struct lp_gemm_kind *p = lp_run_gemm_kind(s->c, x->call),
                              *q = lp_run_gemm_kind(s->c, y->call);
    int c = cmp_but(x, p, y, q, s->dim);
    uint64_t u = dim_of(p, s->dim), v = dim_of(q, s->dim);
    return c ? c : (u > v) - (u < v);
}

/* Why the sizes LO..HI of calls reducing over K step: the decode's context (batch x prompt up
 * to batch x (prompt + generated)), over MLA's compressed KV cache when K is the model's
 * kv_lora_rank. */
static enum lp_gemm_vary vary_cause(const struct lp_run *r, uint64_t k, uint64_t lo, uint64_t hi)
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
            (uint64_t)m->groups[i].attn.kv_lora_rank == k)
            return LP_GEMM_VARY_MLA;
    return LP_GEMM_VARY_CONTEXT;
}

/* Shapes of a decode stage alike but for one dimension whose sizes, VARY_MIN or more, step
 * by one stride (HF's MLA runs kv_b_proj over the whole context: 4096 x 513..527 x 512, one
 * size per step) become one, the smallest size's; the others are removed from ACCS (*N). */
static int merge_steps(const struct lp_run_ctx *c, struct acc *accs, size_t *n_accs)
{
    const struct lp_run *r = c->r;
    uint32_t *idx = malloc((*n_accs ? *n_accs : 1) * sizeof *idx);
    if (!idx)
        return LP_ERR_NOMEM;
    for (int d = 0; d < 2; d++) {
        char dim = d ? 'm' : 'n';
        size_t n = 0;
        for (size_t i = 0; i < *n_accs; i++) {
            const struct acc *a = &accs[i];
            if (a->calls && !a->vary_dim && a->stage >= 0 &&
                r->stages[a->stage].kind == LP_STAGE_KIND_DECODE)
                idx[n++] = (uint32_t)i;
        }
        struct vary_sort key = {c, accs, dim};
        qsort_r(idx, n, sizeof *idx, cmp_vary, &key);
        for (size_t i = 0, j; i < n; i = j) {
            struct acc *to = &accs[idx[i]];
            const struct lp_gemm_kind *k = lp_run_gemm_kind(c, to->call);
            for (j = i + 1; j < n && !cmp_but(to, k, &accs[idx[j]],
                                              lp_run_gemm_kind(c, accs[idx[j]].call), dim);
                 j++)
                ;
            if (j - i < VARY_MIN)
                continue;
            uint64_t lo = dim_of(k, dim);
            uint64_t step = dim_of(lp_run_gemm_kind(c, accs[idx[i + 1]].call), dim) - lo, hi = lo;
            int even = step > 0;
            for (size_t q = i + 1; q < j && even; q++) {
                uint64_t v = dim_of(lp_run_gemm_kind(c, accs[idx[q]].call), dim);
                even = v - hi == step;
                hi = v;
            }
            if (!even)
                continue;
            for (size_t q = i + 1; q < j; q++) {
                struct acc *g = &accs[idx[q]];
                to->calls += g->calls;
                to->linked += g->linked;
                to->kernels += g->kernels;
                to->gpu_ns = lp_sat_add(to->gpu_ns, g->gpu_ns);
                to->flops = lp_sat_add_u128(to->flops, g->flops);
                to->quarters = lp_sat_add_u128(to->quarters, g->quarters);
                if (to->top_group == UINT32_MAX)
                    to->top_group = g->top_group;
                g->calls = 0; /* merged: removed below */
            }
            to->vary_dim = dim;
            to->vary_hi = hi;
            to->vary_step = step;
            to->vary_values = (uint32_t)(j - i);
            to->vary = (uint8_t)vary_cause(r, k->k, lo, hi);
        }
    }
    free(idx);
    size_t k = 0;
    for (size_t i = 0; i < *n_accs; i++)
        if (accs[i].calls)
            accs[k++] = accs[i];
    *n_accs = k;
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

/* The table of shapes (SLOT, SLOT_HASH, *N_SLOTS of each) doubled: shapes are few, calls
 * many, so it grows with the shapes rather than start at the calls' number. LP_OK or
 * LP_ERR_NOMEM (the table then unchanged). */
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

/* The GEMMs that ran, outside warm-up, summed by shape, stage and replay into *ACCS (*N) */
static int sum_shapes(struct lp_run_ctx *c, const struct call_info *ci, struct acc **accs,
                      size_t *n)
{
    struct lp_run *r = c->r;
    size_t cap = 64, n_slots = 256; /* at most half full */
    int32_t *slot = malloc(n_slots * sizeof *slot);
    uint64_t *slot_hash = malloc(n_slots * sizeof *slot_hash);
    struct acc *v = malloc(cap * sizeof *v);
    int rc = LP_ERR_NOMEM;
    *n = 0;
    if (!slot || !slot_hash || !v)
        goto out;
    memset(slot, 0xff, n_slots * sizeof *slot);
    for (size_t i = 0; i < c->n_gemms; i++) {
        int stage = ci[i].stage;
        if (ci[i].captured || ci[i].unrecorded) /* it ran in its replays; or unrecorded */
            continue;
        if (stage >= 0 && r->stages[stage].kind == LP_STAGE_KIND_WARMUP) {
            r->gemm.warmup_calls++; /* counted, kept out of the table */
            continue;
        }
        struct lp_gemm g = lp_run_gemm(c, i);
        const struct lp_gemm_kind *kind = lp_run_gemm_kind(c, i);
        if (2 * (*n + 1) > n_slots && grow_slots(&slot, &slot_hash, &n_slots))
            goto out;
        uint64_t h = shape_hash(&g, stage, ci[i].replayed);
        size_t s = h & (n_slots - 1);
        for (; slot[s] >= 0; s = (s + 1) & (n_slots - 1)) {
            const struct acc *a = &v[slot[s]];
            if (slot_hash[s] != h || a->stage != stage || a->replayed != ci[i].replayed)
                continue;
            if (lp_run_gemm_kind(c, a->call) == kind) /* a kind is one shape */
                break;
            struct lp_gemm shown = lp_run_gemm(c, a->call);
            if (lp_gemm_same_shape(&shown, &g))
                break;
        }
        if (slot[s] < 0) {
            if (*n == cap) {
                struct acc *p = realloc(v, 2 * cap * sizeof *p);
                if (!p)
                    goto out;
                v = p;
                cap *= 2;
            }
            v[*n] = (struct acc){.call = (uint32_t)i, .start = g.start, .stage = stage,
                                 .replayed = ci[i].replayed, .top_group = UINT32_MAX};
            slot[s] = (int32_t)(*n)++;
            slot_hash[s] = h;
        }
        struct acc *a = &v[slot[s]];
        a->calls++;
        if (g.algo >= 0 && lp_run_gemm_kind(c, a->call)->algo < 0) {
            a->call = (uint32_t)i; /* the first call that knew its algorithm */
            a->start = g.start;
        }
        if (ci[i].kernels) {
            a->linked++;
            a->kernels += ci[i].kernels;
            a->gpu_ns = lp_sat_add(a->gpu_ns, ci[i].ns);
            a->flops = lp_sat_add_u128(a->flops, lp_gemm_flops_exact(&g));
            a->quarters = lp_sat_add_u128(a->quarters, lp_gemm_min_quarter_bytes(&g));
            if (a->top_group == UINT32_MAX) /* calls of one shape launch the same kernels */
                a->top_group = ci[i].top_group;
        }
    }
    rc = LP_OK;
out:
    free(slot);
    free(slot_hash);
    if (rc != LP_OK) {
        free(v);
        v = NULL;
    }
    *accs = v;
    return rc;
}

/* Shape A as a row of the table, with its figures and hints */
static void fill_row(const struct lp_run_ctx *c, const struct acc *a, struct lp_gemm_row *row)
{
    const struct lp_run *r = c->r;
    *row = (struct lp_gemm_row){
        .call = lp_run_gemm(c, a->call), .stage = a->stage, .replayed = a->replayed,
        .calls = a->calls, .linked = a->linked, .kernels = a->kernels, .gpu_ns = a->gpu_ns,
        .top_group = a->top_group == UINT32_MAX ? SIZE_MAX : a->top_group,
        .flops = (double)a->flops, .bytes = (double)a->quarters / 4, .vary_dim = a->vary_dim,
        .vary_hi = a->vary_hi, .vary_step = a->vary_step, .vary_values = a->vary_values,
        .vary = (enum lp_gemm_vary)a->vary};
    row->vary_lo = a->vary_dim ? dim_of(lp_run_gemm_kind(c, a->call), a->vary_dim) : 0;
    row->flops_per_call = lp_gemm_flops(&row->call);
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
    const struct lp_trace *t = c->t;
    if (peak > 0 && r->util.gpu.mem_bw_gbs > 0)
        hint(r, row, t->n_devices ? t->devices[0].sm_count : 0);
    if (row->vary_dim) /* tiles and alignment differ from size to size */
        row->hints = (row->hints & ~(uint32_t)(LP_GEMM_HINT_TILE_FILL | LP_GEMM_HINT_WAVES |
                                               LP_GEMM_HINT_UNALIGNED)) |
                     LP_GEMM_HINT_STEPS;
}

/* The table: the shapes summed and merged, the costliest LP_GEMM_ROWS_MAX listed, the rest
 * counted; and each stage's FLOPs over the growing context */
static int build_rows(struct lp_run_ctx *c, const struct call_info *ci)
{
    struct lp_run *r = c->r;
    struct acc *accs;
    size_t n;
    int rc = sum_shapes(c, ci, &accs, &n);
    if (rc == LP_OK && (rc = merge_steps(c, accs, &n)) != LP_OK)
        free(accs);
    if (rc != LP_OK)
        return rc;
    lp_u128 *context = calloc(r->n_stages + 1, sizeof *context);
    size_t listed = n < LP_GEMM_ROWS_MAX ? n : LP_GEMM_ROWS_MAX;
    r->gemm.rows = calloc(listed ? listed : 1, sizeof *r->gemm.rows);
    if (!context || !r->gemm.rows) {
        free(accs);
        free(context);
        return LP_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const struct acc *a = &accs[i];
        /* the FLOPs of calls over the growing context, per stage */
        if (a->stage >= 0 && a->vary_dim && a->vary != LP_GEMM_VARY_STEPS)
            context[a->stage] = lp_sat_add_u128(context[a->stage], a->flops);
        if (a->stage >= 0 && a->vary_dim && a->vary == LP_GEMM_VARY_MLA)
            r->stages[a->stage].gemm_mla = 1;
    }
    for (size_t s = 0; s < r->n_stages; s++)
        r->stages[s].gemm_context_flops = (double)context[s];
    qsort_r(accs, n, sizeof *accs, cmp_acc, c);
    for (size_t i = 0; i < listed; i++)
        fill_row(c, &accs[i], &r->gemm.rows[i]);
    r->gemm.n_rows = listed;
    struct lp_gemm_unlisted *u = &r->gemm.unlisted;
    lp_u128 flops = 0;
    uint64_t table_ns = 0;
    for (size_t i = 0; i < n; i++) {
        table_ns = lp_sat_add(table_ns, accs[i].gpu_ns);
        if (i < listed)
            continue;
        u->shapes++;
        u->calls += accs[i].calls;
        u->linked += accs[i].linked;
        u->kernels += accs[i].kernels;
        u->gpu_ns = lp_sat_add(u->gpu_ns, accs[i].gpu_ns);
        flops = lp_sat_add_u128(flops, accs[i].flops);
    }
    u->flops = (double)flops;
    u->share = table_ns ? (double)u->gpu_ns / (double)table_ns : -1;
    free(accs);
    free(context);
    return LP_OK;
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
