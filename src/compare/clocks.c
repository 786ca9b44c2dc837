/* The hosts of a run's ranks and their clocks. Traces from one host share its clock
 * (CUPTI's, CLOCK_REALTIME on Linux); hosts' clocks differ by their NTP or PTP offset. Each
 * further host's offset from the reference host (that of the lowest rank naming one) is
 * found where its ranks and the reference's ran the same collective: an NCCL collective
 * ends at nearly the same moment on every rank of it (its last step waits for the last
 * rank's data), so each shared collective gives one estimate, the difference of the two
 * hosts' ranks' median ends in it. The offset is the median of the estimates, its
 * uncertainty half their interquartile range; with fewer than LP_CLOCK_MIN_COLLECTIVES the
 * host is not aligned (one without communication kernels does not keep the others' waits
 * from being computed). The offsets are then applied to the ranks' collectives. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare_internal.h"

struct estimates {
    int64_t *v;
    size_t n, cap;
};

struct align {
    struct lp_ranks *out;
    struct estimates *est;              /* per host */
    uint64_t *ends;                     /* scratch: one collective's ends on one host */
    int failed;
};

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* the median end of host H's ranks in this collective; 0 when it has none there */
static uint64_t host_end(struct align *a, struct lp_rank *const *k,
                         const struct lp_rank_coll *const *c, size_t m, size_t h)
{
    size_t n = 0;
    for (size_t i = 0; i < m; i++)
        if (k[i]->host_index == h)
            a->ends[n++] = c[i]->end;
    if (!n)
        return 0;
    qsort(a->ends, n, sizeof *a->ends, cmp_u64);
    uint64_t lo = a->ends[(n - 1) / 2], hi = a->ends[n / 2];
    return lo / 2 + hi / 2 + (lo & hi & 1);
}

/* A - B as a signed number, clamped */
static int64_t diff(uint64_t a, uint64_t b)
{
    if (a >= b)
        return a - b > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)(a - b);
    return b - a > (uint64_t)INT64_MAX ? -INT64_MAX : -(int64_t)(b - a);
}

static void estimate(struct lp_rank *const *k, const struct lp_rank_coll *const *c, size_t m,
                     void *ctx)
{
    struct align *a = ctx;
    const struct lp_ranks *out = a->out;
    uint64_t ref = host_end(a, k, c, m, out->ref_host);
    if (!ref)
        return;
    for (size_t h = 0; h < out->n_hosts; h++) {
        uint64_t e = h == out->ref_host ? 0 : host_end(a, k, c, m, h);
        if (!e)
            continue;
        struct estimates *s = &a->est[h];
        if (s->n == s->cap) {
            int64_t *p = realloc(s->v, (s->cap = s->cap ? 2 * s->cap : 64) * sizeof *p);
            if (!p) {
                a->failed = 1;
                return;
            }
            s->v = p;
        }
        s->v[s->n++] = diff(ref, e);
    }
}

/* T moved by D (saturating at 0 and UINT64_MAX) */
static uint64_t shifted(uint64_t t, int64_t d)
{
    if (d >= 0)
        return UINT64_MAX - t < (uint64_t)d ? UINT64_MAX : t + (uint64_t)d;
    return t < (uint64_t)-d ? 0 : t - (uint64_t)-d;
}

/* OUT's hosts by name, in the order of the ranks (the reference first); a rank that names
 * none is taken to be on the reference host */
static int find_hosts(struct lp_ranks *out)
{
    out->hosts = calloc(out->n ? out->n : 1, sizeof *out->hosts);
    if (!out->hosts)
        return LP_ERR_NOMEM;
    for (size_t i = 0; i < out->n; i++) {
        struct lp_rank *k = &out->ranks[i];
        if (!k->host)
            continue;
        size_t h = 0;
        while (h < out->n_hosts && strcmp(out->hosts[h].name, k->host))
            h++;
        if (h == out->n_hosts) {
            if (!(out->hosts[h].name = strdup(k->host)))
                return LP_ERR_NOMEM;
            out->hosts[h].how = h ? LP_CLOCK_HOW_NONE : LP_CLOCK_HOW_REFERENCE;
            out->hosts[h].uncertainty_ns = h ? NAN : 0;
            out->n_hosts++;
        }
        k->host_index = h;
    }
    if (!out->n_hosts) { /* no trace names its host: one, unnamed */
        out->hosts[0] = (struct lp_ranks_host){.how = LP_CLOCK_HOW_REFERENCE};
        out->n_hosts = 1;
    }
    out->ref_host = 0;
    for (size_t i = 0; i < out->n; i++) {
        struct lp_rank *k = &out->ranks[i];
        if (!k->host)
            k->host_index = out->ref_host;
        out->hosts[k->host_index].ranks++;
    }
    return LP_OK;
}

int lp_ranks_align(struct lp_ranks *out)
{
    int rc = find_hosts(out);
    out->one_host = out->n_hosts == 1;
    out->aligned = out->one_host;
    if (rc != LP_OK || out->one_host)
        return rc;
    struct align a = {.out = out, .est = calloc(out->n_hosts, sizeof *a.est),
                      .ends = malloc(out->n * sizeof *a.ends)};
    struct lp_coll_match how;
    rc = a.est && a.ends ? lp_coll_match(out, estimate, &a, &how) : LP_ERR_NOMEM;
    if (rc == LP_OK && a.failed)
        rc = LP_ERR_NOMEM;
    out->aligned = rc == LP_OK;
    for (size_t h = 0; rc == LP_OK && h < out->n_hosts; h++) {
        struct lp_ranks_host *x = &out->hosts[h];
        struct estimates *s = &a.est[h];
        x->collectives = h == out->ref_host ? 0 : s->n;
        if (h == out->ref_host || s->n < LP_CLOCK_MIN_COLLECTIVES) {
            /* a host without communication is not aligned, but takes no part in the waits */
            int comm = 0;
            for (size_t i = 0; i < out->n; i++)
                comm |= out->ranks[i].host_index == h && out->ranks[i].n_coll > 0;
            out->aligned &= h == out->ref_host || !comm;
            continue;
        }
        qsort(s->v, s->n, sizeof *s->v, cmp_i64);
        int64_t lo = s->v[(s->n - 1) / 2], hi = s->v[s->n / 2];
        x->offset_ns = lo / 2 + hi / 2 + (lo % 2 + hi % 2) / 2;
        x->uncertainty_ns = ((double)s->v[3 * s->n / 4] - (double)s->v[s->n / 4]) / 2;
        x->how = LP_CLOCK_HOW_COLLECTIVES;
    }
    /* the ranks' collectives on the reference's clock */
    for (size_t i = 0; rc == LP_OK && out->aligned && i < out->n; i++) {
        struct lp_rank *k = &out->ranks[i];
        int64_t d = out->hosts[k->host_index].offset_ns;
        for (size_t j = 0; d && j < k->n_coll; j++) {
            k->coll[j].start = shifted(k->coll[j].start, d);
            k->coll[j].end = shifted(k->coll[j].end, d);
        }
    }
    for (size_t h = 0; a.est && h < out->n_hosts; h++)
        free(a.est[h].v);
    free(a.est);
    free(a.ends);
    return rc;
}
