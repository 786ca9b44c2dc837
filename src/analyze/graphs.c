/* CUDA-graph replays in a run (graph_nodes.c joins each replayed kernel to its captured
 * node). Each replay of a GEMM call captured into a graph becomes one GEMM that ran, as an
 * eager call is, so the GEMM table, the measured GEMM FLOPs and the per-step figures count
 * replays; the captured call itself ran nothing. Then, per executable graph and stage: its
 * replays, their kernels, how many of its GEMM kernels have a shape, and the range it was
 * captured in; and per replayed kernel, that range. */
#include <stdlib.h>
#include <string.h>

#include "run_internal.h"
#include "llmprof/sat.h"

int lp_run_replays(struct lp_run_ctx *c)
{
    const struct lp_trace *t = c->t;
    if (c->replays_made) /* the serving pass made them before the steps */
        return LP_OK;
    c->replays_made = 1;
    c->gemms = t->gemms;
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
        if ((t->kernels[i].flags & LP_KERNEL_FLAG_GRAPH) && c->kernel_gemm[i] >= 0)
            kv[n++] = (struct lp_kv){(uint64_t)c->kernel_gemm[i] << 32 | t->kernels[i].correlation,
                                     i};
    if (rc == LP_OK && n) {
        lp_sort_kv_inplace(kv, n); /* values (kernel indices) rise: the stable order */
        size_t runs = 0;
        for (size_t i = 0; i < n; i++)
            runs += i == 0 || kv[i].key != kv[i - 1].key;
        struct lp_gemm *g = malloc((t->n_gemms + runs) * sizeof *g);
        c->gemm_replay_of = malloc((t->n_gemms + runs) * sizeof *c->gemm_replay_of);
        if (!g || !c->gemm_replay_of) {
            free(g);
            rc = LP_ERR_NOMEM;
        } else {
            memcpy(g, t->gemms, t->n_gemms * sizeof *g);
            for (size_t i = 0; i < t->n_gemms; i++)
                c->gemm_replay_of[i] = -1;
            size_t at = t->n_gemms;
            for (size_t i = 0; i < n; i++) {
                const struct lp_kernel_rec *k = &t->kernels[kv[i].val];
                uint32_t call = (uint32_t)(kv[i].key >> 32);
                if (i == 0 || kv[i].key != kv[i - 1].key) {
                    /* one replay of CALL: when and where the graph launch was made */
                    const struct lp_api *a = lp_corr_find(t, &m, k->correlation);
                    g[at] = t->gemms[call];
                    g[at].start = a ? a->start : k->start;
                    g[at].end = a ? a->end : k->end;
                    g[at].thread = a ? a->thread : 0;
                    c->gemm_replay_of[at++] = (int32_t)call;
                    c->gemm_replays[call]++;
                }
                c->kernel_gemm[kv[i].val] = (int32_t)(at - 1);
            }
            c->gemm_store = g;
            c->gemms = g;
            c->n_gemms = at;
        }
    }
    lp_corr_free(&m);
    free(kv);
    return rc;
}

struct key {
    uint32_t stage, graph, correlation, kernel;
};

static int cmp_key(const void *a, const void *b)
{
    const struct key *x = a, *y = b;
    if (x->stage != y->stage)
        return x->stage < y->stage ? -1 : 1;
    if (x->graph != y->graph)
        return x->graph < y->graph ? -1 : 1;
    if (x->correlation != y->correlation)
        return x->correlation < y->correlation ? -1 : 1;
    return (x->kernel > y->kernel) - (x->kernel < y->kernel);
}

/* Kernel nodes the executable graph GRAPH has (graph records: each was cloned into it at
 * instantiation; a kernel record's graph id is its executable graph's), 0 unknown. */
static uint64_t kernel_nodes(const struct lp_trace *t, uint32_t graph)
{
    uint64_t n = 0;
    for (size_t i = 0; i < t->n_graphs; i++)
        n += t->graphs[i].event == LP_GRAPH_EVENT_NODE_CLONED && t->graphs[i].graph_id == graph &&
             t->graphs[i].node_type == 0;
    return n;
}

int lp_run_graphs(struct lp_run_ctx *c)
{
    const struct lp_trace *t = c->t;
    struct lp_run *r = c->r;
    size_t n = 0;
    for (size_t i = 0; c->kernel_work && i < t->n_kernels; i++)
        n += (t->kernels[i].flags & LP_KERNEL_FLAG_GRAPH) && c->kernel_work[i] >= 0 &&
             c->work[c->kernel_work[i]].stage >= 0;
    if (n == 0)
        return LP_OK;
    struct key *k = malloc(n * sizeof *k);
    if (!k)
        return LP_ERR_NOMEM;
    n = 0;
    for (size_t i = 0; i < t->n_kernels; i++) {
        int32_t w = c->kernel_work[i];
        if ((t->kernels[i].flags & LP_KERNEL_FLAG_GRAPH) && w >= 0 && c->work[w].stage >= 0)
            k[n++] = (struct key){(uint32_t)c->work[w].stage, t->kernels[i].graph_id,
                                  t->kernels[i].correlation, (uint32_t)i};
    }
    qsort(k, n, sizeof *k, cmp_key);
    size_t rows = 0;
    for (size_t i = 0; i < n; i++)
        rows += i == 0 || k[i].stage != k[i - 1].stage || k[i].graph != k[i - 1].graph;
    r->graphs = calloc(rows, sizeof *r->graphs);
    if (c->kernel_origin)
        r->kernel_capture_range = malloc(t->n_kernels * sizeof *r->kernel_capture_range);
    if (!r->graphs || (c->kernel_origin && !r->kernel_capture_range)) {
        free(k);
        return LP_ERR_NOMEM;
    }
    for (size_t i = 0; r->kernel_capture_range && i < t->n_kernels; i++) {
        int32_t o = c->kernel_origin[i];
        r->kernel_capture_range[i] =
            o < 0 ? -1 : lp_ranges_at(&r->ranges, t->graphs[o].thread, t->graphs[o].timestamp);
    }
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || k[i].stage != k[i - 1].stage || k[i].graph != k[i - 1].graph)
            r->graphs[r->n_graphs++] = (struct lp_graph_row){
                .graph_id = k[i].graph, .stage = (int)k[i].stage, .capture_range = -1};
        struct lp_graph_row *g = &r->graphs[r->n_graphs - 1];
        const struct lp_kernel_rec *kr = &t->kernels[k[i].kernel];
        int first = g->replays == 0 || k[i].correlation != k[i - 1].correlation;
        g->replays += first;
        g->gpu_ns = lp_sat_add(g->gpu_ns, kr->end - kr->start);
        if (kr->flags & LP_KERNEL_FLAG_REPLAY) {
            g->whole = 1;
            continue;
        }
        g->kernels++;
        int gemm = r->cats[r->kernel_group[k[i].kernel]] == LP_KCAT_GEMM;
        g->gemm_kernels += gemm;
        g->gemm_shaped += gemm && c->kernel_gemm && c->kernel_gemm[k[i].kernel] >= 0;
        int32_t o = c->kernel_origin ? c->kernel_origin[k[i].kernel] : -1;
        g->traced += o >= 0;
        if (g->capture_range < 0 && o >= 0)
            g->capture_range = r->kernel_capture_range[k[i].kernel];
    }
    for (size_t i = 0; i < r->n_graphs; i++) {
        struct lp_graph_row *g = &r->graphs[i];
        g->kernels_per_replay = g->whole ? (double)kernel_nodes(t, g->graph_id)
                                         : (double)g->kernels / (double)g->replays;
        r->stages[g->stage].graph_replays += g->replays;
    }
    free(k);
    return LP_OK;
}

void lp_run_graphs_free(struct lp_run *r)
{
    free(r->graphs);
    free(r->kernel_capture_range);
}
