/* Stages inferred from GEMM shapes, for a run without prefill or decode ranges (vision ranges,
 * from hooks on a vision tower, may be there: their GEMMs are theirs): the tokens in flight of
 * each cuBLAS call (min(m, n)) split prefill (many) from decode (a few); a decode step ends
 * at its largest GEMM, the lm_head. Only a program that looks like an LLM gets stages: decode
 * steps that repeat, running the same weights as the prefill. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "run_internal.h"

/* GEMM indices by (start, index) */
static int cmp_start(const void *a, const void *b, void *arg)
{
    const struct lp_gemm_rec *v = arg;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    if (v[i].start != v[j].start)
        return v[i].start < v[j].start ? -1 : 1;
    return (i > j) - (i < j);
}

static int add_occ(struct lp_run_ctx *c, size_t *made, uint64_t start, uint64_t end, int stage,
                   int64_t tokens)
{
    if (lp_occ_reserve(c, *made + 1) != LP_OK)
        return -1;
    c->occ[(*made)++] = (struct lp_occ){.start = start, .end = end, .range_end = end, .carved_from = -1,
                                        .stage = stage, .range = -1, .request = -1,
                                        .shape_tokens = tokens};
    return 0;
}

/* A weight's dimensions: (rows or columns, k) packed in one key. */
static uint64_t weight_key(uint64_t dim, uint64_t k)
{
    return dim * 0x9e3779b97f4a7c15ull ^ k;
}

/* Whether the classified calls look like an LLM: at least two decode steps (calls of the
 * largest decode shape), and most decode calls running a weight the prefill runs too (with
 * no prefill: at least three steps of the same number of calls). */
static int looks_like_llm(const struct lp_trace *t, const uint32_t *ord, const uint8_t *cls,
                          size_t n)
{
    size_t n_pre = 0, n_dec = 0;
    for (size_t i = 0; i < n; i++)
        n_dec += cls[i];
    n_pre = n - n_dec;
    if (n_dec == 0)
        return 0;
    uint64_t *pre = malloc((2 * n_pre + 1) * sizeof *pre);
    if (!pre)
        return 0;
    size_t np = 0, shared = 0, steps = 0, best = 0;
    struct lp_gemm lm = {0};
    int have_lm = 0;
    for (size_t i = 0; i < n; i++) {
        struct lp_gemm g = lp_trace_gemm(t, ord[i]);
        if (!cls[i]) {
            pre[np++] = weight_key(g.m, g.k);
            pre[np++] = weight_key(g.n, g.k);
        } else if (!have_lm || lp_gemm_weight(&g, 0) > best) {
            best = lp_gemm_weight(&g, 0);
            lm = g;
            have_lm = 1;
        }
    }
    qsort(pre, np, sizeof *pre, lp_cmp_u64);
    /* steps: calls of the largest decode shape; calls between them should not vary */
    size_t since = 0, prev_len = 0, same_len = 0;
    for (size_t i = 0; i < n; i++) {
        if (!cls[i])
            continue;
        struct lp_gemm g = lp_trace_gemm(t, ord[i]);
        uint64_t key = weight_key(g.m > g.n ? g.m : g.n, g.k);
        shared += np && bsearch(&key, pre, np, sizeof *pre, lp_cmp_u64) != NULL;
        since++;
        if (lp_gemm_same_shape(&g, &lm)) {
            steps++;
            same_len += since == prev_len;
            prev_len = since;
            since = 0;
        }
    }
    free(pre);
    if (steps < 2)
        return 0;
    if (n_pre)
        return 2 * shared >= n_dec;
    return steps >= 3 && 5 * (same_len + 1) >= 4 * steps;
}

/* (start, end) pairs by start, then end */
static int cmp_span(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

/* The end of the last of the N sorted spans (start, end pairs) that began at or before TS,
 * or 0; *INSIDE: whether TS falls inside it. */
static uint64_t span_before(const uint64_t *sp, size_t n, uint64_t ts, int *inside)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sp[2 * mid] <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    *inside = lo > 0 && ts <= sp[2 * (lo - 1) + 1];
    return lo > 0 ? sp[2 * (lo - 1) + 1] : 0;
}

int lp_run_infer_stages(struct lp_run_ctx *c, int prefill_stage, int decode_stage)
{
    const struct lp_trace *t = c->t;
    size_t first = c->n_occ; /* occurrences from ranges (vision) stay; GEMMs in them are theirs */
    uint32_t *ord = malloc((t->n_gemms ? t->n_gemms : 1) * sizeof *ord);
    uint8_t *cls = malloc(t->n_gemms ? t->n_gemms : 1);
    uint64_t *spans = malloc((2 * first + 1) * sizeof *spans);
    if (!ord || !cls || !spans) {
        free(ord);
        free(cls);
        free(spans);
        return -1;
    }
    for (size_t i = 0; i < first; i++) {
        spans[2 * i] = c->occ[i].start;
        spans[2 * i + 1] = c->occ[i].range_end;
    }
    qsort(spans, first, 2 * sizeof *spans, cmp_span);
    size_t n = 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < t->n_gemms; i++) {
        struct lp_gemm g = lp_trace_gemm(t, i);
        int inside = 0;
        if (g.status || g.batch != 1 || !g.m || !g.n)
            continue;
        if (first)
            span_before(spans, first, g.start, &inside);
        if (inside)
            continue;
        ord[n++] = (uint32_t)i;
        uint64_t tk = lp_gemm_tokens(&g);
        lo = tk < lo ? tk : lo;
        hi = tk > hi ? tk : hi;
    }
    qsort_r(ord, n, sizeof *ord, cmp_start, t->gemms);
    /* two populations far apart: prompt-sized and batch-sized; the cut is their geometric
     * middle. One population: decode when it is a few tokens, else prefill. */
    double cut = hi >= 8 * lo ? sqrt((double)lo * (double)hi) : (hi <= 64 ? (double)hi + 1 : 0);
    for (size_t i = 0; i < n; i++) {
        struct lp_gemm g = lp_trace_gemm(t, ord[i]);
        cls[i] = (double)lp_gemm_tokens(&g) < cut; /* 1 decode */
    }
    /* a short run of decode-sized calls inside prefill-sized ones joins them; never the
     * other way: a call of many tokens is no decode step */
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i; j < n && cls[j] == cls[i]; j++)
            ;
        if (i > 0 && j - i < 3 && cls[i])
            for (size_t k = i; k < j; k++)
                cls[k] = cls[i - 1];
    }
    size_t made = first;
    if (!looks_like_llm(t, ord, cls, n))
        n = 0;
    uint64_t prev_end = n ? t->gemms[ord[0]].start : 0;
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i; j < n && cls[j] == cls[i]; j++)
            ;
        int decode = cls[i];
        uint64_t tokens = 0;
        for (size_t a = i; a < j; a++) {
            struct lp_gemm g = lp_trace_gemm(t, ord[a]);
            tokens = lp_gemm_tokens(&g) > tokens ? lp_gemm_tokens(&g) : tokens;
        }
        uint64_t last_end = lp_trace_gemm(t, ord[j - 1]).end;
        if (!decode) {
            /* a prefill starts after the ranges (vision) that ran before its first GEMM */
            int inside;
            uint64_t before = first ? span_before(spans, first, t->gemms[ord[i]].start, &inside)
                                    : 0;
            if (before > prev_end)
                prev_end = before;
            if (add_occ(c, &made, prev_end, last_end, prefill_stage, (int64_t)tokens))
                goto nomem;
            prev_end = last_end;
            continue;
        }
        /* decode: one step ends after each call of the segment's largest GEMM (the lm_head,
         * once per forward pass and last); calls after the last one join the last step */
        struct lp_gemm rg = lp_trace_gemm(t, ord[i]);
        for (size_t a = i + 1; a < j; a++) {
            struct lp_gemm g = lp_trace_gemm(t, ord[a]);
            if (lp_gemm_weight(&g, 0) > lp_gemm_weight(&rg, 0))
                rg = g;
        }
        for (size_t a = i; a < j; a++) {
            struct lp_gemm g = lp_trace_gemm(t, ord[a]);
            if (!lp_gemm_same_shape(&g, &rg))
                continue;
            if (a == i && made > first && c->occ[made - 1].stage == prefill_stage) {
                /* the prefill's own lm_head on its last token: the prefill ends there */
                c->occ[made - 1].end = c->occ[made - 1].range_end = g.end;
            } else if (add_occ(c, &made, prev_end, g.end, decode_stage,
                               (int64_t)lp_gemm_tokens(&rg))) {
                goto nomem;
            }
            prev_end = g.end;
        }
        if (made && last_end > prev_end) {
            prev_end = last_end;
            c->occ[made - 1].end = c->occ[made - 1].range_end = prev_end;
        }
    }
    c->n_occ = made;
    free(ord);
    free(cls);
    free(spans);
    return (int)(made - first);
nomem:
    free(ord);
    free(cls);
    free(spans);
    return -1;
}
