/* Collectives matched across ranks: each rank's communication kernels by stream (a
 * communicator's own, told apart by the order of its first launch, the same on every rank
 * of an SPMD program), kernel name and order among those kernels, which NCCL keeps the same
 * on every rank of a communicator. A (stream, name) pair that did not run equally often on
 * every rank with communication is left out. */
#include <stdlib.h>

#include "compare_internal.h"

/* a rank's collectives in (stream, name, start) order */
struct key {
    uint32_t stream;
    uint64_t hash, start;
    size_t idx;                         /* into the rank's coll */
};

static int key_cmp(const struct key *x, const struct key *y)
{
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    return x->hash < y->hash ? -1 : x->hash > y->hash;
}

static int by_name_start(const void *a, const void *b)
{
    const struct key *x = a, *y = b;
    int c = key_cmp(x, y);
    if (c)
        return c;
    return x->start < y->start ? -1 : x->start > y->start;
}

struct order {
    struct key *v;
    size_t n, at;
    struct lp_rank *k;
};

int lp_coll_match(const struct lp_ranks *out, lp_coll_visit visit, void *ctx,
                  struct lp_coll_match *how)
{
    *how = (struct lp_coll_match){0};
    size_t m = 0;
    for (size_t i = 0; i < out->n; i++)
        m += out->ranks[i].n_coll > 0;
    how->ranks = m;
    if (m < 2)
        return LP_OK;
    struct order *o = calloc(m, sizeof *o);
    size_t *cnt = malloc(m * sizeof *cnt);
    struct lp_rank **k = malloc(m * sizeof *k);
    const struct lp_rank_coll **c = malloc(m * sizeof *c);
    int rc = LP_ERR_NOMEM;
    if (!o || !cnt || !k || !c)
        goto done;
    m = 0;
    for (size_t i = 0; i < out->n; i++) {
        struct lp_rank *r = &out->ranks[i];
        if (!r->n_coll)
            continue;
        o[m].k = r;
        o[m].n = r->n_coll;
        if (!(o[m].v = malloc(r->n_coll * sizeof *o[m].v)))
            goto done;
        for (size_t j = 0; j < r->n_coll; j++)
            o[m].v[j] = (struct key){r->coll[j].stream, r->coll[j].name_hash,
                                     r->coll[j].start, j};
        qsort(o[m].v, r->n_coll, sizeof *o[m].v, by_name_start);
        m++;
    }
    for (;;) {
        /* the least (stream, name) at the ranks' heads, and how often each rank ran it */
        const struct key *h = NULL;
        int equal = 1;
        for (size_t i = 0; i < m; i++)
            if (o[i].at < o[i].n && (!h || key_cmp(&o[i].v[o[i].at], h) < 0))
                h = &o[i].v[o[i].at];
        if (!h)
            break;
        struct key least = *h;
        for (size_t i = 0; i < m; i++) {
            cnt[i] = 0;
            while (o[i].at + cnt[i] < o[i].n && !key_cmp(&o[i].v[o[i].at + cnt[i]], &least))
                cnt[i]++;
            equal &= cnt[i] == cnt[0] && cnt[i] > 0;
        }
        how->names++;
        how->names_unmatched += !equal;
        for (size_t j = 0; equal && j < cnt[0]; j++, how->matched++) {
            for (size_t i = 0; i < m; i++) {
                k[i] = o[i].k;
                c[i] = &o[i].k->coll[o[i].v[o[i].at + j].idx];
            }
            visit(k, c, m, ctx);
        }
        for (size_t i = 0; i < m; i++)
            o[i].at += cnt[i];
    }
    rc = LP_OK;
done:
    for (size_t i = 0; o && i < m; i++)
        free(o[i].v);
    free(o);
    free(cnt);
    free(k);
    free(c);
    return rc;
}
