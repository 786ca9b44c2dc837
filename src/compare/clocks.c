/* The hosts of a run's ranks and their clocks. Traces from one host share its clock
 * (CUPTI's, CLOCK_REALTIME on Linux); hosts' clocks differ by their NTP or PTP offset. Each
 * further host's offset from the reference host (that of the lowest rank that ran
 * collectives) is found where its ranks and an aligned host's ran the same collectives: an
 * NCCL collective ends at nearly the same moment on every rank of its communicator (its last
 * step waits for the last rank's data). First a rough offset from one communicator's
 * collectives paired in order (first_offset), then every collective linked across the two
 * hosts once moved by it (collectives.c) gives one estimate: the offset is their median, its
 * uncertainty half their interquartile range. Hosts are aligned one after another against
 * all those aligned before, so a host that shares collectives only with another further
 * host is aligned through it. A host is not aligned with fewer than LP_CLOCK_MIN_COLLECTIVES
 * estimates, or when no collectives run equally often end together across the hosts (data-
 * parallel replicas that never communicate across them drift apart); one without
 * communication kernels does not keep the others' waits from being computed. The offsets
 * are applied to the ranks' collectives. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare_internal.h"
#include "llmprof/sat.h"

struct estimates {
    int64_t *v;                         /* one per linked pair of collectives */
    size_t n, cap;
    int failed;
    const struct lp_rank_coll *ci, *cj; /* the two ranks' collectives */
};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
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

static int push(struct estimates *s, int64_t v)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        int64_t *p = realloc(s->v, cap * sizeof *p);
        if (!p)
            return -1;
        s->v = p;
        s->cap = cap;
    }
    s->v[s->n++] = v;
    return 0;
}

/* V's N values sorted: the median (*MID) and half the interquartile range */
static double spread_of(int64_t *v, size_t n, int64_t *mid)
{
    qsort(v, n, sizeof *v, cmp_i64);
    int64_t lo = v[(n - 1) / 2], hi = v[n / 2];
    *mid = lo / 2 + hi / 2 + (lo % 2 + hi % 2) / 2;
    return ((double)v[3 * n / 4] - (double)v[n / 4]) / 2;
}

/* one linked pair: rank I's end less rank J's */
static void link_estimate(uint32_t a, uint32_t b, void *ctx)
{
    struct estimates *s = ctx;
    int clamped = 0;
    int64_t d = diff(s->ci[a].end, s->cj[b].end, &clamped);
    if (!s->failed && !clamped && push(s, d) != 0)
        s->failed = 1;
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

/* Rank I takes part in aligning: it ran collectives on a host already aligned */
static int aligned_rank(const struct lp_ranks *out, size_t i)
{
    enum lp_clock_how h = out->hosts[out->ranks[i].host_index].how;
    return out->ranks[i].n_coll &&
           (h == LP_CLOCK_HOW_REFERENCE || h == LP_CLOCK_HOW_COLLECTIVES);
}

/* The most paired collectives a candidate first offset is judged on (evenly spaced) */
#define LP_CLOCK_SAMPLE 256

/* One candidate: rank I's and rank J's collectives of one name paired in order, N pairs
 * from VI and VJ (their by-name indices), judged on up to LP_CLOCK_SAMPLE of them. *MID:
 * the median of the end differences; returns half their interquartile range, +inf when one
 * pair's difference passed INT64_MAX, NAN out of memory. */
static double judge(const struct lp_rank *ki, const struct lp_rank *kj, const uint32_t *vi,
                    const uint32_t *vj, size_t n, struct estimates *s, int64_t *mid)
{
    size_t step = n > LP_CLOCK_SAMPLE ? n / LP_CLOCK_SAMPLE : 1;
    int clamped = 0;
    s->n = 0;
    for (size_t c = 0; c < n; c += step)
        if (push(s, diff(ki->coll[vi[c]].end, kj->coll[vj[c]].end, &clamped)) != 0)
            return NAN;
    return clamped ? INFINITY : spread_of(s->v, s->n, mid);
}

/* A first offset for host H: the collectives of one name that a rank of H and a rank of an
 * aligned host ran (3 times at least), paired in order (from the first of each, and from
 * the last where their counts differ: a recording that started or stopped at another
 * moment), whose end differences agree within LP_COLL_TOGETHER_NS (half their interquartile
 * range): one communicator's, which end together. The pair with the most such collectives
 * gives it (*FOUND set). Without one, X says why: too few, or sequences that never end
 * together (groups that do not communicate across the hosts, whose ends drift apart). When
 * two such candidates disagree by more than LP_COLL_TOGETHER_NS, the host is not aligned
 * either (DISAGREE, half their distance as the uncertainty): groups that keep in step at a
 * steady lag, or collectives at a steady period paired one period off, are as tight as one
 * communicator, and the clock cannot be told from the lag. */
static int first_offset(struct lp_ranks *out, const struct lp_coll_index *ix, size_t h,
                        int64_t *offset, int *found)
{
    struct lp_ranks_host *x = &out->hosts[h];
    struct estimates s = {0};
    size_t best = 0, seen = 0;
    double loosest = NAN;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    *found = 0;
    x->how = LP_CLOCK_HOW_NONE;
    x->uncertainty_ns = NAN;
    for (size_t j = 0; j < out->n; j++) {
        const struct lp_rank *kj = &out->ranks[j];
        if (kj->host_index != h || !ix->by_name[j])
            continue;
        for (size_t i = 0; i < out->n; i++) {
            if (!aligned_rank(out, i) || !ix->by_name[i])
                continue;
            const struct lp_rank *ki = &out->ranks[i];
            for (size_t q = 0; q < kj->n_coll;) { /* each name of J's once */
                size_t fj, fi;
                uint64_t name = kj->coll[ix->by_name[j][q]].name_hash;
                size_t nj = lp_coll_index_name(out, ix, j, name, &fj);
                size_t ni = lp_coll_index_name(out, ix, i, name, &fi);
                q = fj + nj;
                size_t n = ni < nj ? ni : nj;
                seen = n > seen ? n : seen;
                if (n < LP_CLOCK_MIN_COLLECTIVES)
                    continue;
                for (int from_end = 0; from_end < 1 + (ni != nj); from_end++) {
                    const uint32_t *vi = ix->by_name[i] + fi + (from_end ? ni - n : 0),
                                   *vj = ix->by_name[j] + fj + (from_end ? nj - n : 0);
                    int64_t mid;
                    double sp = judge(ki, kj, vi, vj, n, &s, &mid);
                    if (isnan(sp)) {
                        free(s.v);
                        return LP_ERR_NOMEM;
                    }
                    if (sp > (double)LP_COLL_TOGETHER_NS) {
                        if (isfinite(sp))
                            loosest = isnan(loosest) || sp > loosest ? sp : loosest;
                        continue;
                    }
                    lo = mid < lo ? mid : lo;
                    hi = mid > hi ? mid : hi;
                    if (n > best) {
                        best = n;
                        *offset = mid;
                        *found = 1;
                    }
                }
            }
        }
    }
    free(s.v);
    if (*found && (double)hi - (double)lo > (double)LP_COLL_TOGETHER_NS) {
        *found = 0;
        x->how = LP_CLOCK_HOW_DISAGREE;
        x->uncertainty_ns = ((double)hi - (double)lo) / 2;
    } else if (!*found && !isnan(loosest)) {
        x->how = LP_CLOCK_HOW_DISAGREE;
        x->uncertainty_ns = loosest;
    }
    x->collectives = seen;
    return LP_OK;
}

/* Host H's offset: each of its ranks' collectives linked (lp_coll_links) to those of one
 * rank of an aligned host once moved by the first offset gives one estimate, the
 * difference of their ends; the offset is their median, its uncertainty half their
 * interquartile range. That partner is the first aligned rank that shares a group with it
 * (linked on at least half the fewer side's collectives of a name, whose links alone count):
 * one partner per rank keeps this part linear in the ranks (first_offset compares every
 * pair, on a sample of each). */
static int refine(struct lp_ranks *out, const struct lp_coll_index *ix, size_t h,
                  int64_t first)
{
    struct lp_ranks_host *x = &out->hosts[h];
    struct estimates s = {0};
    for (size_t j = 0; j < out->n && !s.failed; j++) {
        const struct lp_rank *kj = &out->ranks[j];
        if (kj->host_index != h || !ix->by_name[j])
            continue;
        for (size_t i = 0; i < out->n && !s.failed; i++) {
            if (!aligned_rank(out, i) || !ix->by_name[i])
                continue;
            size_t before = s.n;
            s.ci = out->ranks[i].coll;
            s.cj = kj->coll;
            for (size_t q = 0; q < kj->n_coll;) { /* each name of J's once */
                size_t fi, fj, at = s.n;
                uint64_t name = kj->coll[ix->by_name[j][q]].name_hash;
                size_t nj = lp_coll_index_name(out, ix, j, name, &fj);
                size_t ni = lp_coll_index_name(out, ix, i, name, &fi);
                q = fj + nj;
                size_t links = lp_coll_links(out, ix, i, j, name, first, link_estimate, &s);
                if (links < LP_CLOCK_MIN_COLLECTIVES || 2 * links < (ni < nj ? ni : nj))
                    s.n = at; /* chance links of a name they do not share a group for */
            }
            if (s.n > before)
                break;
        }
    }
    int rc = s.failed ? LP_ERR_NOMEM : LP_OK;
    x->collectives = s.n;
    if (rc == LP_OK && s.n >= LP_CLOCK_MIN_COLLECTIVES) {
        x->uncertainty_ns = spread_of(s.v, s.n, &x->offset_ns);
        x->how = LP_CLOCK_HOW_COLLECTIVES;
    }
    free(s.v);
    return rc;
}

int lp_ranks_align(struct lp_ranks *out)
{
    int rc = find_hosts(out);
    out->one_host = out->n_hosts == 1;
    out->aligned = out->one_host;
    if (rc != LP_OK || out->one_host)
        return rc;
    struct lp_coll_index ix;
    rc = lp_coll_index_build(out, &ix);
    /* host by host, each against all those aligned before it, until none is added */
    for (int more = 1; rc == LP_OK && more;) {
        more = 0;
        for (size_t h = 0; rc == LP_OK && h < out->n_hosts; h++) {
            struct lp_ranks_host *x = &out->hosts[h];
            if (x->how == LP_CLOCK_HOW_REFERENCE || x->how == LP_CLOCK_HOW_COLLECTIVES)
                continue;
            int64_t first = 0;
            int found;
            rc = first_offset(out, &ix, h, &first, &found);
            if (rc == LP_OK && found)
                rc = refine(out, &ix, h, first);
            if (rc != LP_OK || x->how != LP_CLOCK_HOW_COLLECTIVES)
                continue;
            more = 1;
            for (size_t i = 0; i < out->n; i++) { /* its ranks on the reference's clock */
                struct lp_rank *k = &out->ranks[i];
                for (size_t j = 0; k->host_index == h && j < k->n_coll; j++) {
                    k->coll[j].start = shifted(k->coll[j].start, x->offset_ns);
                    k->coll[j].end = shifted(k->coll[j].end, x->offset_ns);
                }
            }
        }
    }
    lp_coll_index_free(&ix);
    /* a host without communication is not aligned, but takes no part in the waits */
    out->aligned = rc == LP_OK;
    for (size_t i = 0; i < out->n; i++)
        if (out->ranks[i].n_coll && !aligned_rank(out, i))
            out->aligned = 0;
    return rc;
}
