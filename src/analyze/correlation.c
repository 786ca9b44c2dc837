/* Correlation ids to API records: which call launched a kernel, copy or set. CUPTI counts
 * ids up, so a direct table usually fits; otherwise open addressing. The passes use the map;
 * lp_calls is the same for exports, which tie rows to their calls. */
#include "run_internal.h"

#include <string.h>


int lp_corr_build(const struct lp_trace *t, struct lp_corr_map *m)
{
    uint32_t lo = UINT32_MAX, hi = 0;
    for (size_t i = 0; i < t->n_apis; i++) {
        uint32_t k = t->apis[i].correlation;
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
    }
    if (t->n_apis && (uint64_t)hi - lo < 4 * (uint64_t)t->n_apis + 1024) {
        m->direct = 1;
        m->base = lo;
        m->cap = (size_t)(hi - lo) + 1;
        m->idx = malloc(m->cap * sizeof *m->idx);
        if (!m->idx)
            return LP_ERR_NOMEM;
        memset(m->idx, 0xff, m->cap * sizeof *m->idx);
        for (size_t i = t->n_apis; i-- > 0;) /* the first record of an id wins */
            m->idx[t->apis[i].correlation - lo] = (uint32_t)i;
        return LP_OK;
    }
    m->cap = 64;
    while (m->cap < 2 * t->n_apis)
        m->cap *= 2;
    m->key = malloc(m->cap * sizeof *m->key);
    m->idx = malloc(m->cap * sizeof *m->idx);
    if (!m->key || !m->idx)
        return LP_ERR_NOMEM;
    memset(m->idx, 0xff, m->cap * sizeof *m->idx);
    for (size_t i = 0; i < t->n_apis; i++) {
        uint32_t k = t->apis[i].correlation;
        size_t s = (k * 2654435761u) & (m->cap - 1);
        while (m->idx[s] != UINT32_MAX && m->key[s] != k)
            s = (s + 1) & (m->cap - 1);
        if (m->idx[s] == UINT32_MAX) {
            m->key[s] = k;
            m->idx[s] = (uint32_t)i;
        }
    }
    return LP_OK;
}

const struct lp_api_rec *lp_corr_find(const struct lp_trace *t, const struct lp_corr_map *m,
                                      uint32_t k)
{
    if (k == 0 || t->n_apis == 0)
        return NULL;
    if (m->direct) {
        if (k < m->base || k - m->base >= m->cap || m->idx[k - m->base] == UINT32_MAX)
            return NULL;
        return &t->apis[m->idx[k - m->base]];
    }
    size_t s = (k * 2654435761u) & (m->cap - 1);
    while (m->idx[s] != UINT32_MAX) {
        if (m->key[s] == k)
            return &t->apis[m->idx[s]];
        s = (s + 1) & (m->cap - 1);
    }
    return NULL;
}

void lp_corr_free(struct lp_corr_map *m)
{
    free(m->key);
    free(m->idx);
    memset(m, 0, sizeof *m);
}

struct lp_calls {
    const struct lp_trace *t;
    struct lp_corr_map m;
};

struct lp_calls *lp_calls_index(const struct lp_trace *t)
{
    struct lp_calls *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->t = t;
    if (lp_corr_build(t, &x->m) != LP_OK) {
        lp_calls_free(x);
        return NULL;
    }
    return x;
}

int64_t lp_calls_find(const struct lp_calls *x, uint32_t correlation)
{
    const struct lp_api_rec *a = lp_corr_find(x->t, &x->m, correlation);
    return a ? (int64_t)(a - x->t->apis) : -1;
}

void lp_calls_free(struct lp_calls *x)
{
    if (!x)
        return;
    lp_corr_free(&x->m);
    free(x);
}
