/* Communication kernels (NCCL's and the like, by name: lp_kernel_category) and how much of
 * their time compute ran beside them on the same GPU: the overlap HTA defines, the share of
 * communication time during which a computation kernel was running. Computation: every other
 * kernel, whole CUDA graph replays included; copies and sets are neither. Per stage and for
 * the run. */
#include <math.h>
#include <stdlib.h>

#include "run_internal.h"
#include "llmprof/sat.h"

struct iv {
    uint64_t start, end;
    uint32_t device;
};

static int by_device_start(const void *a, const void *b)
{
    const struct iv *x = a, *y = b;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Merges V (sorted by device, start) into disjoint intervals per device, in place; returns
 * how many remain. */
static size_t merge(struct iv *v, size_t n)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && v[m - 1].device == v[i].device && v[i].start <= v[m - 1].end) {
            if (v[i].end > v[m - 1].end)
                v[m - 1].end = v[i].end;
        } else {
            v[m++] = v[i];
        }
    }
    return m;
}

/* Time of [S, E) on DEVICE covered by the merged intervals U. */
static uint64_t covered(const struct iv *u, size_t n, uint32_t device, uint64_t s, uint64_t e)
{
    /* the first interval of DEVICE ending after S */
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (u[mid].device < device || (u[mid].device == device && u[mid].end <= s))
            lo = mid + 1;
        else
            hi = mid;
    }
    uint64_t t = 0;
    for (size_t i = lo; i < n && u[i].device == device && u[i].start < e; i++) {
        uint64_t a = u[i].start > s ? u[i].start : s, b = u[i].end < e ? u[i].end : e;
        if (b > a)
            t += b - a;
    }
    return t;
}

int lp_run_comm(struct lp_run_ctx *c)
{
    struct lp_run *r = c->r;
    const struct lp_trace *t = c->t;
    r->comm.overlap_share = NAN;
    for (size_t s = 0; s < r->n_stages; s++)
        r->stages[s].comm_overlap_share = NAN;
    size_t n_comm = 0, n_comp = 0;
    for (size_t i = 0; i < t->n_kernels; i++) {
        enum lp_kcat k = r->cats[lp_run_kernel_group(r, i)];
        n_comm += k == LP_KCAT_COMMUNICATION;
        n_comp += k != LP_KCAT_COMMUNICATION && k != LP_KCAT_MEMCPY && k != LP_KCAT_MEMSET;
    }
    if (!n_comm)
        return LP_OK;
    struct iv *comp = malloc((n_comp ? n_comp : 1) * sizeof *comp);
    if (!comp)
        return LP_ERR_NOMEM;
    size_t m = 0;
    for (size_t i = 0; i < t->n_kernels; i++) {
        const struct lp_kernel_rec *k = &t->kernels[i];
        uint64_t end = lp_trace_kernel_end(t, k);
        enum lp_kcat cat = r->cats[lp_run_kernel_group(r, i)];
        if (cat != LP_KCAT_COMMUNICATION && cat != LP_KCAT_MEMCPY && cat != LP_KCAT_MEMSET &&
            end > k->start)
            comp[m++] = (struct iv){k->start, end, lp_trace_kernel_config(t, k)->device};
    }
    qsort(comp, m, sizeof *comp, by_device_start);
    m = merge(comp, m);
    for (size_t i = 0; i < t->n_kernels; i++) {
        const struct lp_kernel_rec *k = &t->kernels[i];
        uint64_t end = lp_trace_kernel_end(t, k);
        if (r->cats[lp_run_kernel_group(r, i)] != LP_KCAT_COMMUNICATION || end <= k->start)
            continue;
        uint64_t d = end - k->start;
        uint64_t o = covered(comp, m, lp_trace_kernel_config(t, k)->device, k->start, end);
        r->comm.kernels++;
        /* both saturate alike, so the overlap never passes the time */
        r->comm.ns = lp_sat_add(r->comm.ns, d);
        r->comm.overlap_ns = lp_sat_add(r->comm.overlap_ns, o);
        int32_t s = lp_run_kernel_stage(r, i);
        if (s >= 0 && (size_t)s < r->n_stages) {
            r->stages[s].comm_ns = lp_sat_add(r->stages[s].comm_ns, d);
            r->stages[s].comm_overlap_ns = lp_sat_add(r->stages[s].comm_overlap_ns, o);
        }
    }
    free(comp);
    if (r->comm.ns)
        r->comm.overlap_share = (double)r->comm.overlap_ns / (double)r->comm.ns;
    for (size_t s = 0; s < r->n_stages; s++)
        if (r->stages[s].comm_ns)
            r->stages[s].comm_overlap_share =
                (double)r->stages[s].comm_overlap_ns / (double)r->stages[s].comm_ns;
    return LP_OK;
}
