/* The hosts of a run's ranks and their clocks. Traces from one host share its clock
 * (CUPTI's, CLOCK_REALTIME on Linux); hosts' clocks differ by their NTP or PTP offset. Each
 * further host's offset from the reference host (that of the lowest rank naming one) is
 * found where its ranks and the reference's ran the same collective: an NCCL collective
 * ends at nearly the same moment on every rank of it (its last step waits for the last
 * rank's data), so each shared collective gives one estimate, the difference of the two
 * hosts' ranks' median ends in it. The offset is the median of the estimates, its
 * uncertainty half their interquartile range. A host is not aligned with fewer than
 * LP_CLOCK_MIN_COLLECTIVES estimates, or when they disagree by more than a collective lasts
 * (conclude); one without communication kernels does not keep the others' waits from being
 * computed. The offsets are then applied to the ranks' collectives. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare_internal.h"
#include "llmprof/sat.h"

struct estimates {
    int64_t *v;                         /* one per shared collective */
    uint64_t *dur;                      /* that collective's median duration on the host */
    size_t n, cap;
    int clamped;                        /* an estimate past INT64_MAX: not aligned */
};

/* a value of one rank in one collective, by its host */
struct by_host {
    size_t host;
    uint64_t v;
};

struct align {
    struct lp_ranks *out;
    struct estimates *est;              /* per host */
    struct by_host *ends, *durs;        /* scratch: one collective's ranks */
    int failed;
};

static int cmp_by_host(const void *a, const void *b)
{
    const struct by_host *x = a, *y = b;
    if (x->host != y->host)
        return x->host < y->host ? -1 : 1;
    return (x->v > y->v) - (x->v < y->v);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* the median of V's N sorted values */
static uint64_t mid(const struct by_host *v, size_t n)
{
    return lp_mid_u64(v[(n - 1) / 2].v, v[n / 2].v);
}

/* the median of V's N values (sorting them) */
static uint64_t median_u64(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_u64);
    return lp_mid_u64(v[(n - 1) / 2], v[n / 2]);
}

/* A - B as a signed number; *CLAMPED set past INT64_MAX either way */
static int64_t diff(uint64_t a, uint64_t b, int *clamped)
{
    uint64_t d = a >= b ? a - b : b - a;
    if (d > (uint64_t)INT64_MAX) {
        *clamped = 1;
        d = (uint64_t)INT64_MAX;
    }
    return a >= b ? (int64_t)d : -(int64_t)d;
}

static int grow(struct estimates *s)
{
    size_t cap = s->cap ? 2 * s->cap : 64;
    int64_t *v = realloc(s->v, cap * sizeof *v);
    if (v)
        s->v = v;
    uint64_t *d = realloc(s->dur, cap * sizeof *d);
    if (d)
        s->dur = d;
    if (!v || !d)
        return -1;
    s->cap = cap;
    return 0;
}

/* One collective: its ranks' ends and durations sorted by host, each host's medians; an
 * estimate for every host that has ranks in it beside the reference's */
static void estimate(struct lp_rank *const *k, const struct lp_rank_coll *const *c, size_t m,
                     void *ctx)
{
    struct align *a = ctx;
    const struct lp_ranks *out = a->out;
    if (a->failed)
        return;
    for (size_t i = 0; i < m; i++) {
        a->ends[i] = (struct by_host){k[i]->host_index, c[i]->end};
        a->durs[i] = (struct by_host){k[i]->host_index, c[i]->end - c[i]->start};
    }
    qsort(a->ends, m, sizeof *a->ends, cmp_by_host);
    qsort(a->durs, m, sizeof *a->durs, cmp_by_host);
    size_t r = 0;
    while (r < m && a->ends[r].host != out->ref_host)
        r++;
    if (r == m)
        return;
    size_t rn = 0;
    while (r + rn < m && a->ends[r + rn].host == out->ref_host)
        rn++;
    uint64_t ref = mid(a->ends + r, rn);
    for (size_t i = 0, j; i < m; i = j) {
        for (j = i; j < m && a->ends[j].host == a->ends[i].host; j++)
            ;
        if (a->ends[i].host == out->ref_host)
            continue;
        struct estimates *s = &a->est[a->ends[i].host];
        if (s->n == s->cap && grow(s) != 0) {
            a->failed = 1;
            return;
        }
        s->dur[s->n] = mid(a->durs + i, j - i);
        s->v[s->n++] = diff(ref, mid(a->ends + i, j - i), &s->clamped);
    }
}

/* T moved by D (saturating at 0 and UINT64_MAX) */
static uint64_t shifted(uint64_t t, int64_t d)
{
    if (d >= 0)
        return UINT64_MAX - t < (uint64_t)d ? UINT64_MAX : t + (uint64_t)d;
    return t < (uint64_t)-d ? 0 : t - (uint64_t)-d;
}

/* OUT's hosts by name, in the order of the ranks, the reference first: the host of the
 * lowest rank that ran collectives (else of the lowest rank); a rank that names none is
 * taken to be on the reference host */
static int find_hosts(struct lp_ranks *out)
{
    out->hosts = calloc(out->n ? out->n : 1, sizeof *out->hosts);
    if (!out->hosts)
        return LP_ERR_NOMEM;
    /* the reference: the host of the lowest rank that ran collectives (else of the lowest) */
    size_t first = 0;
    while (first < out->n && (!out->ranks[first].n_coll || !out->ranks[first].host))
        first++;
    for (size_t j = 0; j <= out->n; j++) {
        size_t i = j == 0 ? first : j - 1;
        if (i >= out->n || (j > 0 && i == first))
            continue;
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

/* Host X's offset from its estimates S: the median, half their interquartile range; not
 * aligned with too few, with one clamped, or when they disagree by more than the median
 * collective lasts (collectives of groups that never communicate across the hosts, whose
 * ends drift apart: data-parallel replicas, one per host) */
static void conclude(struct lp_ranks_host *x, struct estimates *s)
{
    x->collectives = s->n;
    if (s->n < LP_CLOCK_MIN_COLLECTIVES || s->clamped)
        return;
    uint64_t dur = median_u64(s->dur, s->n);
    qsort(s->v, s->n, sizeof *s->v, cmp_i64);
    int64_t lo = s->v[(s->n - 1) / 2], hi = s->v[s->n / 2];
    double spread = ((double)s->v[3 * s->n / 4] - (double)s->v[s->n / 4]) / 2;
    x->uncertainty_ns = spread;
    if (spread > (double)dur) {
        x->how = LP_CLOCK_HOW_DISAGREE;
        return;
    }
    x->offset_ns = lo / 2 + hi / 2 + (lo % 2 + hi % 2) / 2;
    x->how = LP_CLOCK_HOW_COLLECTIVES;
}

int lp_ranks_align(struct lp_ranks *out)
{
    int rc = find_hosts(out);
    out->one_host = out->n_hosts == 1;
    out->aligned = out->one_host;
    if (rc != LP_OK || out->one_host)
        return rc;
    struct align a = {.out = out, .est = calloc(out->n_hosts, sizeof *a.est),
                      .ends = malloc((out->n ? out->n : 1) * sizeof *a.ends),
                      .durs = malloc((out->n ? out->n : 1) * sizeof *a.durs)};
    struct lp_coll_match how;
    rc = a.est && a.ends && a.durs ? lp_coll_match(out, estimate, &a, &how) : LP_ERR_NOMEM;
    if (rc == LP_OK && a.failed)
        rc = LP_ERR_NOMEM;
    out->aligned = rc == LP_OK;
    for (size_t h = 0; rc == LP_OK && h < out->n_hosts; h++) {
        if (h == out->ref_host)
            continue;
        conclude(&out->hosts[h], &a.est[h]);
        /* a host without communication is not aligned, but takes no part in the waits */
        int comm = 0;
        for (size_t i = 0; i < out->n; i++)
            comm |= out->ranks[i].host_index == h && out->ranks[i].n_coll > 0;
        out->aligned &= out->hosts[h].how == LP_CLOCK_HOW_COLLECTIVES || !comm;
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
    for (size_t h = 0; a.est && h < out->n_hosts; h++) {
        free(a.est[h].v);
        free(a.est[h].dur);
    }
    free(a.est);
    free(a.ends);
    free(a.durs);
    return rc;
}
