/* Where each replayed kernel came from. A kernel launched by a CUDA graph carries the node
 * id of its executable graph; graph records (trace format 1.2) say that node was cloned from
 * another at instantiation, or given another node's parameters by cudaGraphExecUpdate, and
 * that the node at the end of that chain was made at a time on a thread: inside the library
 * call and the NVTX ranges that captured it. Parameters the program set on an executable
 * graph's node itself (cudaGraphExec*NodeSetParams) end the chain: the kernel's origin is
 * then unknown. */
#include <stdlib.h>

#include "run_internal.h"

#define MAX_HOPS 16
/* cudaGraphExecUpdate also reports "params set" for each node it updates, right after */
#define UPDATE_SET_NS 1000000ull

struct entry {
    uint64_t key, ts;                 /* the node the event is about, its time */
    uint32_t idx;                     /* into t->graphs */
};

static int cmp_entry(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* the node an event is about: for an update, the executable graph's node it changed */
static uint64_t key_of(const struct lp_graph *g)
{
    switch (g->event) {
    case LP_GRAPH_EVENT_NODE_CREATED:
    case LP_GRAPH_EVENT_NODE_CLONED:
    case LP_GRAPH_EVENT_NODE_SET_PARAMS: return g->node_id;
    case LP_GRAPH_EVENT_NODE_UPDATED: return g->original_node_id;
    default: return 0;
    }
}

/* the last event about NODE at or before TS, or -1 */
static ptrdiff_t last_event(const struct entry *e, size_t n, uint64_t node, uint64_t ts)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* first entry after (node, ts) */
        size_t mid = lo + (hi - lo) / 2;
        if (e[mid].key < node || (e[mid].key == node && e[mid].ts <= ts))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && e[lo - 1].key == node ? (ptrdiff_t)lo - 1 : -1;
}

static int32_t origin_of(const struct lp_trace *t, const struct entry *e, size_t n,
                         uint64_t node, uint64_t ts)
{
    for (int hop = 0; hop < MAX_HOPS; hop++) {
        ptrdiff_t p = last_event(e, n, node, ts);
        if (p < 0)
            return -1;
        const struct lp_graph *g = &t->graphs[e[p].idx];
        if (g->event == LP_GRAPH_EVENT_NODE_SET_PARAMS) {
            const struct lp_graph *u = p > 0 && e[p - 1].key == node ? &t->graphs[e[p - 1].idx]
                                                                     : NULL;
            if (!u || u->event != LP_GRAPH_EVENT_NODE_UPDATED || u->thread != g->thread ||
                g->timestamp - u->timestamp > UPDATE_SET_NS)
                return -1;
            g = u;
        }
        switch (g->event) {
        case LP_GRAPH_EVENT_NODE_CREATED: return (int32_t)e[p].idx;
        case LP_GRAPH_EVENT_NODE_CLONED: node = g->original_node_id; break;
        case LP_GRAPH_EVENT_NODE_UPDATED: node = g->node_id; break;
        default: return -1;
        }
        ts = g->timestamp; /* the source as it was when copied */
    }
    return -1;
}

int lp_graph_origins(const struct lp_trace *t, const struct lp_corr_map *m, int32_t **origin)
{
    *origin = NULL;
    if (t->n_kernels == 0 || t->n_graphs == 0)
        return LP_OK;
    int32_t *out = malloc(t->n_kernels * sizeof *out);
    struct entry *e = malloc(t->n_graphs * sizeof *e);
    if (!out || !e) {
        free(out);
        free(e);
        return LP_ERR_NOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < t->n_graphs; i++) {
        uint64_t key = key_of(&t->graphs[i]);
        if (key)
            e[n++] = (struct entry){key, t->graphs[i].timestamp, (uint32_t)i};
    }
    qsort(e, n, sizeof *e, cmp_entry);
    for (size_t i = 0; i < t->n_kernels; i++) {
        const struct lp_kernel_rec *k = &t->kernels[i];
        const struct lp_kernel_config *kc = lp_trace_kernel_config(t, k);
        uint64_t node = kc->graph_node_id;
        out[i] = -1;
        if (!(kc->flags & LP_KERNEL_FLAG_GRAPH) || !node)
            continue;
        /* the update in force when the replay was launched */
        const struct lp_api_rec *a = m ? lp_corr_find(t, m, k->correlation) : NULL;
        out[i] = origin_of(t, e, n, node, a ? a->start : k->start);
    }
    free(e);
    *origin = out;
    return LP_OK;
}
