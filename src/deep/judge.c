/* Kernels in depth: what bounds each kernel Nsight Compute profiled (Speed Of Light, ncu's
 * 60 % rule; "too small" is llmprof's), what caps its occupancy, and its largest warp
 * stalls. Facts and codes only: the report says them (issue 14). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "llmprof/deep.h"
#include "llmprof/status.h"

static int has(const struct lp_ncu_kernel *k, enum lp_ncu_metric m)
{
    return (k->valid >> m) & 1;
}

static enum lp_deep_bound bound_of(const struct lp_ncu_kernel *k)
{
    if (!has(k, LP_NCU_SOL_SM) || !has(k, LP_NCU_SOL_MEMORY))
        return LP_DEEP_BOUND_UNKNOWN;
    double sm = k->metric[LP_NCU_SOL_SM], mem = k->metric[LP_NCU_SOL_MEMORY];
    if (sm >= LP_DEEP_BOUND_PCT || mem >= LP_DEEP_BOUND_PCT)
        return sm >= mem ? LP_DEEP_BOUND_COMPUTE : LP_DEEP_BOUND_MEMORY;
    if (has(k, LP_NCU_WAVES) && k->metric[LP_NCU_WAVES] < LP_DEEP_SMALL_WAVES)
        return LP_DEEP_BOUND_SMALL;
    return LP_DEEP_BOUND_LATENCY;
}

/* the limits at the smallest blocks per SM, as bits; BLOCKS gets that number */
static unsigned limits_of(const struct lp_ncu_kernel *k, double *blocks)
{
    static const enum lp_ncu_metric metric[LP_DEEP_LIMIT_COUNT] = {
        [LP_DEEP_LIMIT_REGISTERS] = LP_NCU_LIMIT_REGISTERS,
        [LP_DEEP_LIMIT_SHARED_MEM] = LP_NCU_LIMIT_SHARED_MEM,
        [LP_DEEP_LIMIT_WARPS] = LP_NCU_LIMIT_WARPS,
        [LP_DEEP_LIMIT_BLOCKS] = LP_NCU_LIMIT_BLOCKS,
        [LP_DEEP_LIMIT_BARRIERS] = LP_NCU_LIMIT_BARRIERS,
    };
    unsigned bits = 0;
    *blocks = INFINITY;
    for (int l = 0; l < LP_DEEP_LIMIT_COUNT; l++) {
        if (!has(k, metric[l]))
            continue;
        double v = k->metric[metric[l]];
        if (v < *blocks) {
            *blocks = v;
            bits = 0;
        }
        if (v == *blocks)
            bits |= 1u << l;
    }
    if (!bits)
        *blocks = 0;
    return bits;
}

int lp_deep_judge(const struct lp_ncu_report *r, struct lp_deep_kernel **out)
{
    *out = calloc(r->n_kernels ? r->n_kernels : 1, sizeof **out);
    if (!*out)
        return LP_ERR_NOMEM;
    for (size_t i = 0; i < r->n_kernels; i++) {
        struct lp_deep_kernel *d = &(*out)[i];
        const struct lp_ncu_kernel *k = &r->kernels[i];
        d->k = k;
        d->bound = bound_of(k);
        d->limits = limits_of(k, &d->limit_blocks);
        for (int j = 0; j < LP_DEEP_STALLS; j++)
            d->stall[j] = -1;
        /* the largest, by selection (there are about twenty); "selected" is the warp that
         * issued, not a stall */
        for (int j = 0; j < LP_DEEP_STALLS; j++) {
            double best = 0;
            for (size_t s = 0; s < r->n_stalls; s++) {
                double v = k->stall[s];
                int taken = !strcmp(r->stall_names[s], "selected");
                for (int q = 0; q < j; q++)
                    taken |= d->stall[q] == (int)s;
                if (!taken && isfinite(v) && v > best) {
                    best = v;
                    d->stall[j] = (int)s;
                }
            }
        }
    }
    return LP_OK;
}
