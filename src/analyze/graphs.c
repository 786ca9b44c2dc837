/* CUDA-graph replays in a run (graph_nodes.c joins each replayed kernel to its captured
 * node). Each replay of a GEMM call captured into a graph becomes one GEMM that ran, as an
 * eager call is, so the GEMM table, the measured GEMM FLOPs and the per-step figures count
 * replays; the captured call itself ran nothing. Then, per executable graph and stage: its
 * replays, their kernels, how many of its GEMM kernels have a shape, and the range it was
 * captured in; and per replayed kernel, that range. */
#include <stdlib.h>

#include "run_internal.h"
#include "llmprof/sat.h"

int lp_run_replays(struct lp_run_ctx *c)
{
    const struct lp_trace *t = c->t;
    if (c->replays_made) /* the serving pass made them before the steps */
        return LP_OK;
    c->replays_made = 1;
    c->n_gemms = t->n_gemms;
    int rc = lp_gemm_link(t, &c->kernel_gemm, &c->kernel_origin);
    if (rc || !c->kernel_gemm || !c->kernel_origin || t->n_gemms == 0)
        return rc;
    c->gemm_replays = calloc(t->n_gemms, sizeof *c->gemm_replays);
    /* (captured call, replay) of each replayed GEMM kernel */
    struct lp_kv *kv = malloc((t->n_kernels ? t->n_kernels : 1) * sizeof *kv); /* in place */
    struct lp_corr_map m = {0};
    rc = c->gemm_replays && kv ? lp_corr_build(t, &m) : LP_ERR_NOMEM;
    size_t n = 0;
    for (size_t i = 0; rc == LP_OK && i < t->n_kernels; i++)
        if ((lp_trace_kernel_config(t, &t->kernels[i])->flags & LP_KERNEL_FLAG_GRAPH) &&
            c->kernel_gemm[i] >= 0)
            kv[n++] = (struct lp_kv){(uint64_t)c->kernel_gemm[i] << 32 | t->kernels[i].correlation,
                                     i};
    if (rc == LP_OK && n) {
        lp_sort_kv_inplace(kv, n); /* values (kernel indices) rise: the stable order */
        size_t runs = 0;
        for (size_t i = 0; i < n; i++)
            runs += i == 0 || kv[i].key != kv[i - 1].key;
        struct lp_run_replay *g = c->replays = malloc(runs * sizeof *g);
        if (!g) {
            rc = LP_ERR_NOMEM;
        } else {
            size_t at = 0;
            for (size_t i = 0; i < n; i++) {
                const struct lp_kernel_rec *k = &t->kernels[kv[i].val];
                uint32_t call = (uint32_t)(kv[i].key >> 32);
                if (i == 0 || kv[i].key != kv[i - 1].key) {
                    /* one replay of CALL: when and where the graph launch was made */
                    const struct lp_api_rec *a = lp_corr_find(t, &m, k->correlation);
                    g[at++] = (struct lp_run_replay){
                        .start = a ? a->start : k->start,
                        .end = a ? lp_trace_api_end(t, a) : lp_trace_kernel_end(t, k),
                        .thread = a ? lp_trace_api_kind(t, a)->thread : 0,
                        .call = call};
                    c->gemm_replays[call]++;
                }
                c->kernel_gemm[kv[i].val] = (int32_t)(t->n_gemms + at - 1);
            }
            c->n_gemms = t->n_gemms + at;
        }
    }
    lp_corr_free(&m);
    free(kv);
    return rc;
}

static int cmp_row(const void *a, const void *b)
{
    const struct lp_graph_row *x = a, *y = b;
    if (x->stage != y->stage)
        return x->stage < y->stage ? -1 : 1;
    return (x->graph_id > y->graph_id) - (x->graph_id < y->graph_id);
}

/* by GPU time, descending; ties by stage and graph id */
static int cmp_cost(const void *a, const void *b)
{
    const struct lp_graph_row *x = a, *y = b;
    if (x->gpu_ns != y->gpu_ns)
        return x->gpu_ns < y->gpu_ns ? 1 : -1;
    return cmp_row(a, b);
}

/* The kernel nodes of each executable graph into NODES (graph id -> count): each was
 * cloned into it at instantiation (graph records; a kernel record's graph id is its
 * executable graph's). Counted once: a trace can hold as many whole replays as records. */
static int kernel_nodes(const struct lp_trace *t, struct lp_u64map *nodes)
{
    for (size_t i = 0; i < t->n_graphs; i++) {
        const struct lp_graph *g = &t->graphs[i];
        if (g->event != LP_GRAPH_EVENT_NODE_CLONED || g->node_type != 0)
            continue;
        uint64_t *n = lp_u64map_at(nodes, g->graph_id, NULL);
        if (!n)
            return LP_ERR_NOMEM;
        ++*n;
    }
    return LP_OK;
}

/* The row of R->graphs of (STAGE, GRAPH), made when new, with *FIRST (its least correlation
 * and kernel that has a capture range, from UINT64_MAX) grown beside it. NULL out of memory. */
static struct lp_graph_row *row_of(struct lp_run *r, struct lp_u64map *rows, uint64_t **first,
                                   size_t *cap, int stage, uint32_t graph)
{
    uint64_t *at = lp_u64map_at(rows, (uint64_t)(uint32_t)stage << 32 | graph, NULL);
    if (!at)
        return NULL;
    if (!*at) {
        if (r->n_graphs == *cap) {
            size_t n = *cap ? 2 * *cap : 16;
            struct lp_graph_row *v = realloc(r->graphs, n * sizeof *v);
            if (v)
                r->graphs = v;
            uint64_t *f = v ? realloc(*first, n * sizeof *f) : NULL;
            if (!f)
                return NULL;
            *first = f;
            *cap = n;
        }
        r->graphs[r->n_graphs] = (struct lp_graph_row){.graph_id = graph, .stage = stage,
                                                       .capture_range = -1};
        (*first)[r->n_graphs] = UINT64_MAX;
        *at = ++r->n_graphs;
    }
    return &r->graphs[*at - 1];
}

/* Per executable graph and stage, from its kernels in the trace's order: rows kept by
 * (stage, graph) and the replays by (row, correlation) in maps, nothing per kernel. */
int lp_run_graphs(struct lp_run_ctx *c)
{
    const struct lp_trace *t = c->t;
    struct lp_run *r = c->r;
    if (!c->kernel_work)
        return LP_OK;
    if (c->kernel_origin) {
        r->kernel_capture_range = malloc(t->n_kernels * sizeof *r->kernel_capture_range);
        if (!r->kernel_capture_range)
            return LP_ERR_NOMEM;
        for (size_t i = 0; i < t->n_kernels; i++) {
            int32_t o = c->kernel_origin[i];
            r->kernel_capture_range[i] = o < 0 ? -1 : lp_ranges_at(&r->ranges, t->graphs[o].thread,
                                                                    t->graphs[o].timestamp);
        }
    }
    struct lp_u64map rows = {0}, replays = {0};
    uint64_t *first = NULL;
    size_t cap = 0;
    int rc = LP_OK;
    for (size_t i = 0; i < t->n_kernels && rc == LP_OK; i++) {
        const struct lp_kernel_rec *kr = &t->kernels[i];
        const struct lp_kernel_config *kc = lp_trace_kernel_config(t, kr);
        int32_t w = c->kernel_work[i];
        if (!(kc->flags & LP_KERNEL_FLAG_GRAPH) || w < 0 || lp_work_stage(c, &c->work[w]) < 0)
            continue;
        struct lp_graph_row *g =
            row_of(r, &rows, &first, &cap, lp_work_stage(c, &c->work[w]), kc->graph_id);
        size_t row = g ? (size_t)(g - r->graphs) : 0;
        int fresh = 0;
        if (!g || !lp_u64map_at(&replays, (uint64_t)row << 32 | kr->correlation, &fresh)) {
            rc = LP_ERR_NOMEM;
            break;
        }
        g->replays += fresh;
        g->gpu_ns = lp_sat_add(g->gpu_ns, lp_trace_kernel_end(t, kr) - kr->start);
        if (kc->flags & LP_KERNEL_FLAG_REPLAY) {
            g->whole = 1;
            continue;
        }
        g->kernels++;
        int gemm = r->cats[lp_run_kernel_group(r, i)] == LP_KCAT_GEMM;
        g->gemm_kernels += gemm;
        g->gemm_shaped += gemm && c->kernel_gemm && c->kernel_gemm[i] >= 0;
        int32_t o = c->kernel_origin ? c->kernel_origin[i] : -1;
        g->traced += o >= 0;
        uint64_t key = (uint64_t)kr->correlation << 32 | (uint32_t)i;
        if (o >= 0 && key < first[row]) {
            first[row] = key;
            g->capture_range = r->kernel_capture_range[i];
        }
    }
    lp_u64map_free(&rows);
    lp_u64map_free(&replays);
    free(first);
    if (rc != LP_OK)
        return rc;
    if (r->n_graphs == 0) { /* no graph kernel in a stage: no capture ranges to tell */
        free(r->kernel_capture_range);
        r->kernel_capture_range = NULL;
        return LP_OK;
    }
    qsort(r->graphs, r->n_graphs, sizeof *r->graphs, cmp_row);
    struct lp_u64map nodes = {0};
    rc = kernel_nodes(t, &nodes);
    for (size_t i = 0; i < r->n_graphs && rc == LP_OK; i++) {
        struct lp_graph_row *g = &r->graphs[i];
        const uint64_t *n = g->whole ? lp_u64map_at(&nodes, g->graph_id, NULL) : NULL;
        if (g->whole && !n)
            rc = LP_ERR_NOMEM;
        g->kernels_per_replay = g->whole ? (double)(n ? *n : 0)
                                         : (double)g->kernels / (double)g->replays;
        r->stages[g->stage].graph_replays += g->replays;
    }
    lp_u64map_free(&nodes);
    if (rc != LP_OK || r->n_graphs <= LP_GRAPH_ROWS_MAX)
        return rc;
    qsort(r->graphs, r->n_graphs, sizeof *r->graphs, cmp_cost);
    struct lp_graph_unlisted *u = &r->graphs_unlisted;
    for (size_t i = LP_GRAPH_ROWS_MAX; i < r->n_graphs; i++) {
        u->rows++;
        u->replays += r->graphs[i].replays;
        u->kernels += r->graphs[i].kernels;
        u->gpu_ns = lp_sat_add(u->gpu_ns, r->graphs[i].gpu_ns);
    }
    r->n_graphs = LP_GRAPH_ROWS_MAX;
    qsort(r->graphs, r->n_graphs, sizeof *r->graphs, cmp_row);
    return LP_OK;
}

void lp_run_graphs_free(struct lp_run *r)
{
    free(r->graphs);
    free(r->kernel_capture_range);
}
