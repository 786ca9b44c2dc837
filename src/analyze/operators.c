/* Operators: ranges that are not stages (PyTorch's emit_nvtx and record_function ranges,
 * user ranges) grouped by name. A kernel counts for every operator open around its launch
 * (GPU time is inclusive, like the CPU time of the range) and as self time for the innermost
 * one, so nested operators never add up to more than the run. */
#include <string.h>

#include "run_internal.h"
#include "llmprof/sat.h"

struct pair_map {
    uint64_t *key;
    uint64_t *ns;
    size_t cap, n;
};

static int pair_add(struct pair_map *m, uint64_t key, uint64_t ns)
{
    if (2 * (m->n + 1) > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        uint64_t *k = malloc(cap * sizeof *k), *v = calloc(cap, sizeof *v);
        if (!k || !v) {
            free(k);
            free(v);
            return LP_ERR_NOMEM;
        }
        memset(k, 0xff, cap * sizeof *k);
        for (size_t i = 0; i < m->cap; i++) {
            if (m->key[i] == UINT64_MAX)
                continue;
            size_t s = (m->key[i] * 0x9e3779b97f4a7c15ull) >> 20 & (cap - 1);
            while (k[s] != UINT64_MAX)
                s = (s + 1) & (cap - 1);
            k[s] = m->key[i];
            v[s] = m->ns[i];
        }
        free(m->key);
        free(m->ns);
        m->key = k;
        m->ns = v;
        m->cap = cap;
    }
    size_t s = (key * 0x9e3779b97f4a7c15ull) >> 20 & (m->cap - 1);
    while (m->key[s] != UINT64_MAX && m->key[s] != key)
        s = (s + 1) & (m->cap - 1);
    if (m->key[s] == UINT64_MAX) {
        m->key[s] = key;
        m->n++;
    }
    m->ns[s] = lp_sat_add(m->ns[s], ns);
    return LP_OK;
}

int lp_run_operators(struct lp_run_ctx *c)
{
    struct lp_run *r = c->r;
    if (r->n_ops == 0)
        return LP_OK;
    struct pair_map m = {0};
    int rc = LP_OK;
    for (size_t i = 0; i < c->n_work && rc == LP_OK; i++) {
        const struct lp_work *w = &c->work[i];
        uint64_t d = w->end - w->start;
        int32_t seen[64];
        int n_seen = 0;
        for (int64_t j = w->range; j >= 0; j = r->ranges.v[j].parent) {
            int32_t op = c->ri[j].op;
            if (op < 0)
                continue;
            int dup = 0;
            for (int q = 0; q < n_seen; q++)
                dup |= seen[q] == op;
            if (dup)
                continue;
            struct lp_op_row *o = &r->ops[op];
            if (n_seen == 0)
                o->self_gpu_ns = lp_sat_add(o->self_gpu_ns, d);
            o->gpu_ns = lp_sat_add(o->gpu_ns, d);
            o->kernels++;
            if (n_seen < 64)
                seen[n_seen++] = op;
            rc = pair_add(&m, (uint64_t)op << 32 | w->group, d);
            if (rc)
                break;
        }
    }
    for (size_t i = 0; i < r->n_ops; i++)
        for (int k = 0; k < 3; k++)
            r->ops[i].top_group[k] = SIZE_MAX;
    for (size_t s = 0; s < m.cap; s++) {
        if (m.key[s] == UINT64_MAX)
            continue;
        struct lp_op_row *o = &r->ops[m.key[s] >> 32];
        size_t g = (size_t)(m.key[s] & 0xffffffffu);
        uint64_t ns = m.ns[s];
        for (int k = 0; k < 3; k++) {
            if (o->top_group[k] == SIZE_MAX || ns > o->top_ns[k]) {
                for (int q = 2; q > k; q--) {
                    o->top_group[q] = o->top_group[q - 1];
                    o->top_ns[q] = o->top_ns[q - 1];
                }
                o->top_group[k] = g;
                o->top_ns[k] = ns;
                break;
            }
        }
    }
    free(m.key);
    free(m.ns);
    /* by GPU time, then CPU time */
    for (size_t i = 1; i < r->n_ops; i++) {
        struct lp_op_row x = r->ops[i];
        size_t j = i;
        while (j > 0 && (r->ops[j - 1].gpu_ns < x.gpu_ns ||
                         (r->ops[j - 1].gpu_ns == x.gpu_ns && r->ops[j - 1].cpu_ns < x.cpu_ns))) {
            r->ops[j] = r->ops[j - 1];
            j--;
        }
        r->ops[j] = x;
    }
    return rc;
}

void lp_run_operators_free(struct lp_run *r)
{
    for (size_t i = 0; i < r->n_ops; i++)
        free(r->ops[i].name);
    free(r->ops);
}
