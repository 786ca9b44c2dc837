/* Collectives matched across ranks by their ends. An NCCL collective ends at nearly the same
 * moment on every rank of its communicator (its last step waits for the last rank's data):
 * within 1.3 us on the two- and four-H200 fixtures, with every communicator of a process on
 * one stream (PyTorch's), so neither the stream nor the order of launch tells communicators
 * apart, and kernels of one name can belong to several. Two ranks' collectives of one
 * kernel name are linked where each is the other's nearest by end and their ends lie within
 * LP_COLL_TOGETHER_NS; two ranks share a group for that name where at least 3 and at least
 * half of the fewer side's collectives are linked (chance links between groups in near
 * lockstep: under 2 % on the fixtures, a third between a pipeline run's send/receive
 * pairs). The groups of a name are the connected sets of that relation where every pair is
 * related (else the largest such part, clique_of); each of their collectives that ends
 * together on every member is one matched collective. Collectives left over are looked at
 * again without those matched (up to LP_COLL_ROUNDS times), so that a group whose
 * collectives share a name with a busier group's is found once the busier one's are taken.
 * Last, each group's leftovers of the names it was found for are matched by their order
 * (fill_by_order). Groups of several names with the same members are one group (a process
 * group: the trace cannot tell two communicators over the same ranks apart). Times must be
 * on one clock: several hosts' are aligned first (clocks.c), and ranks of hosts that were
 * not take no part. */
#include <stdlib.h>
#include <string.h>

#include "compare_internal.h"
#include "llmprof/sat.h"

#define LP_COLL_ROUNDS 16

/* C[A] against C[B] by (name, end) */
static int by_name_end(const struct lp_rank_coll *c, uint32_t a, uint32_t b)
{
    const struct lp_rank_coll *x = &c[a], *y = &c[b];
    if (x->name_hash != y->name_hash)
        return x->name_hash < y->name_hash ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

/* V's indices into C by (name, end): a merge sort (qsort_r, which would take C, is not C17) */
static void sort_idx(uint32_t *v, uint32_t *tmp, size_t n, const struct lp_rank_coll *c)
{
    if (n < 2)
        return;
    size_t h = n / 2;
    sort_idx(v, tmp, h, c);
    sort_idx(v + h, tmp, n - h, c);
    size_t i = 0, j = h, o = 0;
    while (i < h && j < n)
        tmp[o++] = by_name_end(c, v[j], v[i]) < 0 ? v[j++] : v[i++];
    while (i < h)
        tmp[o++] = v[i++];
    while (j < n)
        tmp[o++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

int lp_coll_index_build(const struct lp_ranks *out, struct lp_coll_index *ix)
{
    memset(ix, 0, sizeof *ix);
    ix->n = out->n;
    ix->by_name = calloc(out->n ? out->n : 1, sizeof *ix->by_name);
    ix->used = calloc(out->n ? out->n : 1, sizeof *ix->used);
    if (!ix->by_name || !ix->used)
        goto fail;
    for (size_t i = 0; i < out->n; i++) {
        const struct lp_rank *k = &out->ranks[i];
        if (!k->n_coll)
            continue;
        if (k->n_coll > UINT32_MAX)
            continue; /* a rank is left out (BY_NAME NULL) rather than its indices wrapped */
        uint32_t *v = malloc(k->n_coll * sizeof *v), *tmp = malloc(k->n_coll * sizeof *tmp);
        ix->by_name[i] = v;
        ix->used[i] = calloc(k->n_coll, 1);
        if (!v || !tmp || !ix->used[i]) {
            free(tmp);
            goto fail;
        }
        for (size_t j = 0; j < k->n_coll; j++)
            v[j] = (uint32_t)j;
        sort_idx(v, tmp, k->n_coll, k->coll);
        free(tmp);
    }
    return LP_OK;
fail:
    lp_coll_index_free(ix);
    return LP_ERR_NOMEM;
}

void lp_coll_index_free(struct lp_coll_index *ix)
{
    for (size_t i = 0; ix->by_name && i < ix->n; i++)
        free(ix->by_name[i]);
    for (size_t i = 0; ix->used && i < ix->n; i++)
        free(ix->used[i]);
    free(ix->by_name);
    free(ix->used);
    memset(ix, 0, sizeof *ix);
}

/* the first of V's N indices into C whose name is NAME or after (AFTER 0), or after NAME
 * (AFTER 1) */
static size_t bound(const struct lp_rank_coll *c, const uint32_t *v, size_t n, uint64_t name,
                    int after)
{
    size_t lo = 0, hi = v ? n : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t h = c[v[mid]].name_hash;
        if (h < name || (after && h == name))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t lp_coll_index_name(const struct lp_ranks *out, const struct lp_coll_index *ix, size_t i,
                          uint64_t name, size_t *first)
{
    const struct lp_rank *k = &out->ranks[i];
    *first = bound(k->coll, ix->by_name[i], k->n_coll, name, 0);
    return bound(k->coll, ix->by_name[i], k->n_coll, name, 1) - *first;
}

/* |a - b| */
static uint64_t dist(uint64_t a, uint64_t b)
{
    return a > b ? a - b : b - a;
}

/* The end of C moved by D (saturating) */
static uint64_t moved(uint64_t t, int64_t d)
{
    if (d >= 0)
        return UINT64_MAX - t < (uint64_t)d ? UINT64_MAX : t + (uint64_t)d;
    return t < (uint64_t)-d ? 0 : t - (uint64_t)-d;
}

size_t lp_coll_links(const struct lp_ranks *out, const struct lp_coll_index *ix, size_t i,
                     size_t j, uint64_t name, int64_t shift_j, lp_coll_link link, void *ctx)
{
    size_t fi, fj;
    size_t ni = lp_coll_index_name(out, ix, i, name, &fi);
    size_t nj = lp_coll_index_name(out, ix, j, name, &fj);
    const struct lp_rank_coll *ci = out->ranks[i].coll, *cj = out->ranks[j].coll;
    const uint32_t *vi = ix->by_name[i] + fi, *vj = ix->by_name[j] + fj;
    const uint8_t *ui = ix->used[i], *uj = ix->used[j];
    size_t links = 0, b = 0;
#define ENDI(x) (ci[vi[x]].end)
#define ENDJ(x) moved(cj[vj[x]].end, shift_j)
    for (size_t a = 0; a < ni; a++) {
        if (ui[vi[a]])
            continue;
        uint64_t e = ENDI(a);
        while (b + 1 < nj && ENDJ(b + 1) <= e)
            b++;
        /* j's unused nearest to E, within reach: from B (the last at or before E, or the
         * first) on both sides */
        size_t best = SIZE_MAX;
        for (size_t q = b; q < nj && !(ENDJ(q) > e && ENDJ(q) - e > LP_COLL_TOGETHER_NS); q++)
            if (!uj[vj[q]] && (best == SIZE_MAX || dist(ENDJ(q), e) < dist(ENDJ(best), e)))
                best = q;
        for (size_t q = b; q-- > 0 && e - ENDJ(q) <= LP_COLL_TOGETHER_NS;)
            if (!uj[vj[q]] && (best == SIZE_MAX || dist(ENDJ(q), e) < dist(ENDJ(best), e)))
                best = q;
        if (best == SIZE_MAX || dist(ENDJ(best), e) > LP_COLL_TOGETHER_NS)
            continue;
        uint64_t eb = ENDJ(best), d = dist(eb, e);
        /* and A i's unused nearest to it (the earlier of two as near) */
        int mutual = 1;
        for (size_t q = a + 1; q < ni && mutual && dist(ENDI(q), eb) <= d; q++)
            mutual = ui[vi[q]] || dist(ENDI(q), eb) >= d;
        for (size_t q = a; q-- > 0 && mutual && dist(ENDI(q), eb) <= d;)
            mutual = ui[vi[q]] || dist(ENDI(q), eb) > d;
        if (!mutual)
            continue;
        links++;
        if (link)
            link(vi[a], vj[best], ctx);
    }
#undef ENDI
#undef ENDJ
    return links;
}

/* ---- groups ---- */

struct state {
    struct lp_ranks *out;
    struct lp_coll_index ix;
    uint64_t *names;                    /* distinct, ascending */
    size_t n_names;
    size_t *links;                      /* n x n, for one name: links of related ranks, else 0 */
    size_t *comp;                       /* union-find parents */
    size_t *unused;                     /* per rank: its unused collectives of one name */
    uint32_t *ev;                       /* one collective's indices, per member */
    struct formed {                     /* the names each group was found for */
        size_t g;
        uint64_t name;
    } *formed;
    size_t n_formed, cap_formed;
};

/* Group G was found for NAME: kept once. LP_OK or LP_ERR_NOMEM. */
static int add_formed(struct state *s, size_t g, uint64_t name)
{
    for (size_t i = 0; i < s->n_formed; i++)
        if (s->formed[i].g == g && s->formed[i].name == name)
            return LP_OK;
    if (s->n_formed == s->cap_formed) {
        size_t cap = s->cap_formed ? 2 * s->cap_formed : 16;
        struct formed *p = realloc(s->formed, cap * sizeof *p);
        if (!p)
            return LP_ERR_NOMEM;
        s->formed = p;
        s->cap_formed = cap;
    }
    s->formed[s->n_formed++] = (struct formed){g, name};
    return LP_OK;
}

static int collect_names(struct state *s)
{
    size_t total = 0;
    for (size_t i = 0; i < s->out->n; i++)
        total += s->out->ranks[i].n_coll;
    if (!total)
        return LP_OK;
    if (!(s->names = malloc(total * sizeof *s->names)))
        return LP_ERR_NOMEM;
    for (size_t i = 0; i < s->out->n; i++)
        for (size_t j = 0; j < s->out->ranks[i].n_coll; j++)
            s->names[s->n_names++] = s->out->ranks[i].coll[j].name_hash;
    qsort(s->names, s->n_names, sizeof *s->names, lp_cmp_u64);
    size_t m = 0;
    for (size_t i = 0; i < s->n_names; i++)
        if (!m || s->names[m - 1] != s->names[i])
            s->names[m++] = s->names[i];
    s->n_names = m;
    return LP_OK;
}

static size_t find(size_t *p, size_t x)
{
    while (p[x] != x)
        x = p[x] = p[p[x]];
    return x;
}

/* Rank I takes part: it has collectives and its host's clock is the reference's */
static int on_clock(const struct lp_ranks *out, size_t i)
{
    const struct lp_rank *k = &out->ranks[i];
    if (!k->n_coll)
        return 0;
    enum lp_clock_how h = out->hosts ? out->hosts[k->host_index].how : LP_CLOCK_HOW_REFERENCE;
    return h == LP_CLOCK_HOW_REFERENCE || h == LP_CLOCK_HOW_COLLECTIVES;
}

/* the unused collectives of NAME on rank I */
static size_t count_unused(const struct state *s, size_t i, uint64_t name)
{
    size_t f, n = lp_coll_index_name(s->out, &s->ix, i, name, &f), u = 0;
    for (size_t q = 0; q < n; q++)
        u += !s->ix.used[i][s->ix.by_name[i][f + q]];
    return u;
}

/* The group with members M (N, ascending), found or added: its index, or SIZE_MAX out of
 * memory */
static size_t group_of(struct lp_ranks *out, const size_t *m, size_t n)
{
    for (size_t g = 0; g < out->n_groups; g++)
        if (out->groups[g].n_members == n && !memcmp(out->groups[g].members, m, n * sizeof *m))
            return g;
    struct lp_ranks_group *p = realloc(out->groups, (out->n_groups + 1) * sizeof *p);
    if (!p)
        return SIZE_MAX;
    out->groups = p;
    struct lp_ranks_group *g = &p[out->n_groups];
    *g = (struct lp_ranks_group){.n_members = n, .straggler = SIZE_MAX,
                                 .replica_of = SIZE_MAX};
    g->members = malloc(n * sizeof *g->members);
    g->member_wait_ns = calloc(n, sizeof *g->member_wait_ns);
    if (!g->members || !g->member_wait_ns) {
        free(g->members);
        free(g->member_wait_ns);
        return SIZE_MAX;
    }
    memcpy(g->members, m, n * sizeof *m);
    return out->n_groups++;
}

/* the index of the member M's unused collective of NAME nearest to E and within reach, or
 * UINT32_MAX */
static uint32_t nearest_unused(const struct state *s, size_t m, uint64_t name, uint64_t e)
{
    size_t f, n = lp_coll_index_name(s->out, &s->ix, m, name, &f);
    const uint32_t *v = s->ix.by_name[m] + f;
    const struct lp_rank_coll *c = s->out->ranks[m].coll;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c[v[mid]].end < e)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint32_t best = UINT32_MAX;
    uint64_t bd = LP_COLL_TOGETHER_NS + 1;
    for (size_t q = lo; q < n && c[v[q]].end - e <= LP_COLL_TOGETHER_NS; q++) /* >= E */
        if (!s->ix.used[m][v[q]] && dist(c[v[q]].end, e) < bd)
            bd = dist(c[v[q]].end, e), best = v[q];
    for (size_t q = lo; q-- > 0 && e - c[v[q]].end <= LP_COLL_TOGETHER_NS;) /* < E */
        if (!s->ix.used[m][v[q]] && dist(c[v[q]].end, e) < bd)
            bd = dist(c[v[q]].end, e), best = v[q];
    return best;
}

/* S->EV (one collective per member) added to group G as one matched collective, and marked
 * used. LP_OK or LP_ERR_NOMEM. */
static int add_event(struct state *s, size_t g)
{
    struct lp_ranks_group *gr = &s->out->groups[g];
    size_t n = gr->n_members;
    if (gr->collectives % 64 == 0) {
        uint32_t *p = realloc(gr->coll, (gr->collectives + 64) * n * sizeof *p);
        if (!p)
            return LP_ERR_NOMEM;
        gr->coll = p;
    }
    memcpy(gr->coll + gr->collectives * n, s->ev, n * sizeof *s->ev);
    gr->collectives++;
    for (size_t q = 0; q < n; q++)
        s->ix.used[gr->members[q]][s->ev[q]] = 1;
    return LP_OK;
}

/* The collectives of NAME that end together on every one of the N members M: added to
 * group G and marked used. Returns how many, or SIZE_MAX out of memory. */
static size_t take_events(struct state *s, size_t g, const size_t *m, size_t n, uint64_t name)
{
    struct lp_ranks *out = s->out;
    size_t f, na = lp_coll_index_name(out, &s->ix, m[0], name, &f), made = 0;
    for (size_t a = 0; a < na; a++) {
        uint32_t c0 = s->ix.by_name[m[0]][f + a];
        if (s->ix.used[m[0]][c0])
            continue;
        uint64_t e = out->ranks[m[0]].coll[c0].end;
        s->ev[0] = c0;
        size_t q = 1;
        for (; q < n; q++)
            if ((s->ev[q] = nearest_unused(s, m[q], name, e)) == UINT32_MAX)
                break;
        if (q < n)
            continue;
        if (add_event(s, g) != LP_OK)
            return SIZE_MAX;
        made++;
    }
    return made;
}

/* Of the K ranks M (ascending) of one connected set, a clique of the relation, moved to the
 * front of M (ascending; its size returned): all of them where every pair relates; else,
 * grown from the pair with the most links, the rank related to all so far with the most
 * links to them, again and again (a chain of pipeline stages, or a TP group and a DP group
 * of one kernel name run as often: the cliques one after another, and what their
 * collectives leave in later rounds). Fewer than 2: none (no pair relates). */
static size_t clique_of(const struct state *s, size_t *m, size_t k)
{
    size_t n = s->out->n, a = 0, b = 1, best = 0;
    int clique = 1;
    for (size_t x = 0; x < k; x++)
        for (size_t y = x + 1; y < k; y++) {
            size_t l = s->links[m[x] * n + m[y]];
            clique &= l > 0;
            if (l > best)
                best = l, a = x, b = y;
        }
    if (!best)
        return 0;
    if (clique)
        return k;
    /* M reordered in place, the clique first: the pair (A < B, so M[B] stays put) */
    size_t t, got = 2;
    t = m[0], m[0] = m[a], m[a] = t;
    t = m[1], m[1] = m[b], m[b] = t;
    for (;;) {
        size_t pick = SIZE_MAX, most = 0;
        for (size_t x = got; x < k; x++) {
            size_t sum = 0;
            int all = 1;
            for (size_t y = 0; y < got && all; y++) {
                size_t l = s->links[m[x] * n + m[y]];
                all = l > 0;
                sum += l;
            }
            if (all && (pick == SIZE_MAX || sum > most))
                pick = x, most = sum;
        }
        if (pick == SIZE_MAX)
            break;
        t = m[got], m[got] = m[pick], m[pick] = t;
        got++;
    }
    for (size_t x = 1; x < got; x++) /* ascending again */
        for (size_t y = x; y > 0 && m[y - 1] > m[y]; y--)
            t = m[y], m[y] = m[y - 1], m[y - 1] = t;
    return got;
}

/* One round over every name: the groups its unused collectives show, and their matched
 * collectives. *MADE: how many. */
static int round_of(struct state *s, size_t *made)
{
    struct lp_ranks *out = s->out;
    size_t n = out->n;
    *made = 0;
    size_t *m = malloc(n * sizeof *m);
    if (!m)
        return LP_ERR_NOMEM;
    for (size_t h = 0; h < s->n_names; h++) {
        uint64_t name = s->names[h];
        memset(s->links, 0, n * n * sizeof *s->links);
        for (size_t i = 0; i < n; i++) {
            s->comp[i] = i;
            s->unused[i] = on_clock(out, i) ? count_unused(s, i, name) : 0;
        }
        for (size_t i = 0; i < n; i++)
            for (size_t j = i + 1; s->unused[i] && j < n; j++) {
                if (!s->unused[j])
                    continue;
                size_t l = lp_coll_links(out, &s->ix, i, j, name, 0, NULL, NULL);
                size_t fewer = s->unused[i] < s->unused[j] ? s->unused[i] : s->unused[j];
                if (l >= LP_CLOCK_MIN_COLLECTIVES && 2 * l >= fewer) {
                    s->links[i * n + j] = s->links[j * n + i] = l;
                    s->comp[find(s->comp, i)] = find(s->comp, j);
                }
            }
        for (size_t i = 0; i < n; i++) {
            if (find(s->comp, i) != i)
                continue;
            size_t k = 0;
            for (size_t j = 0; j < n; j++)
                if (find(s->comp, j) == i)
                    m[k++] = j;
            /* its cliques, one after another from what the ones before leave */
            for (size_t *rest = m; k >= 2;) {
                size_t c = clique_of(s, rest, k);
                if (c < 2)
                    break;
                size_t g = group_of(out, rest, c);
                size_t e = g == SIZE_MAX || add_formed(s, g, name) != LP_OK
                               ? SIZE_MAX : take_events(s, g, rest, c, name);
                if (e == SIZE_MAX) {
                    free(m);
                    return LP_ERR_NOMEM;
                }
                *made += e;
                rest += c;
                k -= c;
                for (size_t x = 1; x < k; x++) /* ascending, as clique_of wants them */
                    for (size_t y = x; y > 0 && rest[y - 1] > rest[y]; y--) {
                        size_t t = rest[y];
                        rest[y] = rest[y - 1];
                        rest[y - 1] = t;
                    }
            }
        }
    }
    free(m);
    return LP_OK;
}

/* Group G's collectives that did not end together, matched by order: NCCL runs a
 * communicator's collectives in one order on every rank, and the last rank's kernel can run
 * on well after the others end (9 of 48 all-reduces of a four-H200 run ended 48 us apart,
 * its kernel 61 us long against 5). For each name the group was found for (not others: the
 * leftovers of a name another group runs on the same ranks are that group's), between two
 * of the group's matched collectives of that name (or before the first, after the last),
 * the members' unused collectives of that name pair up in order where every member has as
 * many; where the matched ones come in another order on some member, that name is left as
 * it is. LP_OK or LP_ERR_NOMEM. */
static int fill_by_order(struct state *s, size_t g)
{
    struct lp_ranks *out = s->out;
    size_t k = out->groups[g].n_members;
    const size_t *m = out->groups[g].members;
    int32_t **evid = calloc(k, sizeof *evid);
    size_t *at = malloc(k * sizeof *at), *first = malloc(k * sizeof *first),
           *cnt = malloc(k * sizeof *cnt), *run = malloc(k * sizeof *run);
    int rc = evid && at && first && cnt && run ? LP_OK : LP_ERR_NOMEM;
    for (size_t q = 0; rc == LP_OK && q < k; q++) {
        size_t nc = out->ranks[m[q]].n_coll;
        if (!(evid[q] = malloc(nc * sizeof **evid))) {
            rc = LP_ERR_NOMEM;
            break;
        }
        for (size_t j = 0; j < nc; j++)
            evid[q][j] = -1;
        for (size_t e = 0; e < out->groups[g].collectives; e++)
            evid[q][out->groups[g].coll[e * k + q]] = (int32_t)e;
    }
    for (size_t h = 0; rc == LP_OK && h < s->n_formed; h++) {
        if (s->formed[h].g != g)
            continue;
        int all = 1;
        for (size_t q = 0; q < k; q++) {
            cnt[q] = lp_coll_index_name(out, &s->ix, m[q], s->formed[h].name, &first[q]);
            at[q] = 0;
            all &= cnt[q] > 0;
        }
        while (all && rc == LP_OK) {
            /* each member's unused collectives up to its next matched one of the group */
            int32_t anchor = -2;
            int same = 1;
            for (size_t q = 0; q < k; q++) {
                const uint32_t *v = s->ix.by_name[m[q]] + first[q];
                run[q] = 0;
                size_t j = at[q];
                for (; j < cnt[q] && evid[q][v[j]] < 0; j++)
                    run[q] += !s->ix.used[m[q]][v[j]];
                int32_t id = j < cnt[q] ? evid[q][v[j]] : -1;
                same &= anchor == -2 || id == anchor;
                anchor = id;
            }
            if (!same) /* the matched ones in another order on some member */
                break;
            int equal = 1;
            for (size_t q = 1; q < k; q++)
                equal &= run[q] == run[0];
            for (size_t c = 0; equal && c < run[0] && rc == LP_OK; c++) {
                for (size_t q = 0; q < k; q++) { /* each member's next unused */
                    const uint32_t *v = s->ix.by_name[m[q]] + first[q];
                    while (s->ix.used[m[q]][v[at[q]]])
                        at[q]++;
                    s->ev[q] = v[at[q]];
                }
                rc = add_event(s, g);
                out->groups[g].by_order += rc == LP_OK;
            }
            /* past the run and the matched one that ends it */
            for (size_t q = 0; q < k; q++) {
                const uint32_t *v = s->ix.by_name[m[q]] + first[q];
                while (at[q] < cnt[q] && evid[q][v[at[q]]] < 0)
                    at[q]++;
                at[q]++;
            }
            if (anchor < 0)
                break;
        }
    }
    for (size_t q = 0; evid && q < k; q++)
        free(evid[q]);
    free(evid);
    free(at);
    free(first);
    free(cnt);
    free(run);
    return rc;
}

static int by_members(const void *a, const void *b)
{
    const struct lp_ranks_group *x = a, *y = b;
    for (size_t i = 0; i < x->n_members && i < y->n_members; i++)
        if (x->members[i] != y->members[i])
            return x->members[i] < y->members[i] ? -1 : 1;
    return (x->n_members > y->n_members) - (x->n_members < y->n_members);
}

int lp_ranks_find_groups(struct lp_ranks *out)
{
    struct state s = {.out = out};
    size_t n = out->n;
    int rc = lp_coll_index_build(out, &s.ix);
    if (rc == LP_OK)
        rc = collect_names(&s);
    if (rc == LP_OK && n && s.n_names &&
        (!(s.links = malloc(n * n * sizeof *s.links)) || !(s.comp = malloc(n * sizeof *s.comp)) ||
         !(s.ev = malloc(n * sizeof *s.ev)) || !(s.unused = malloc(n * sizeof *s.unused))))
        rc = LP_ERR_NOMEM;
    for (int r = 0; rc == LP_OK && s.n_names && r < LP_COLL_ROUNDS; r++) {
        size_t made;
        rc = round_of(&s, &made);
        if (!made)
            break;
    }
    for (size_t g = 0; rc == LP_OK && g < out->n_groups; g++)
        rc = fill_by_order(&s, g);
    if (rc == LP_OK && out->n_groups)
        qsort(out->groups, out->n_groups, sizeof *out->groups, by_members);
    free(s.names);
    free(s.links);
    free(s.comp);
    free(s.unused);
    free(s.ev);
    free(s.formed);
    lp_coll_index_free(&s.ix);
    return rc;
}

int lp_coll_match(const struct lp_ranks *out, lp_coll_visit visit, void *ctx)
{
    size_t cap = 0;
    for (size_t g = 0; g < out->n_groups; g++)
        cap = out->groups[g].n_members > cap ? out->groups[g].n_members : cap;
    struct lp_rank **k = malloc((cap ? cap : 1) * sizeof *k);
    const struct lp_rank_coll **c = malloc((cap ? cap : 1) * sizeof *c);
    if (!k || !c) {
        free(k);
        free(c);
        return LP_ERR_NOMEM;
    }
    for (size_t g = 0; g < out->n_groups; g++) {
        const struct lp_ranks_group *gr = &out->groups[g];
        size_t m = gr->n_members;
        for (size_t e = 0; e < gr->collectives; e++) {
            for (size_t q = 0; q < m; q++) {
                k[q] = &out->ranks[gr->members[q]];
                c[q] = &k[q]->coll[gr->coll[e * m + q]];
            }
            visit(g, k, c, m, ctx);
        }
    }
    free(k);
    free(c);
    return LP_OK;
}
