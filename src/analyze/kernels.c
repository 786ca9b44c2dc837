/* Kernel groups (one per distinct name; copies and sets by direction) and the kernel tables:
 * per group calls, total, mean, median, min, max and share, over the run and per stage. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "run_internal.h"
#include "llmprof/sat.h"

static const char *const copy_names[4] = {"[CUDA memcpy HtoD]", "[CUDA memcpy DtoH]",
                                          "[CUDA memcpy DtoD]", "[CUDA memcpy other]"};

int lp_copy_direction(uint32_t copy_kind)
{
    switch (copy_kind) {
    case 1: return 0;
    case 2: return 1;
    case 8: return 2;
    default: return 3;
    }
}

struct name_map {
    uint64_t *hash;
    uint32_t *group;
    lp_str *first_id;             /* a string id holding the group's raw text */
    size_t cap;
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int add_group(struct lp_run *r, const char *raw, enum lp_kcat forced, int force)
{
    size_t n = r->n_names;
    char **names = realloc(r->names, (n + 1) * sizeof *names);
    if (!names)
        return LP_ERR_NOMEM;
    r->names = names;
    char **shorts = realloc(r->short_names, (n + 1) * sizeof *shorts);
    if (!shorts)
        return LP_ERR_NOMEM;
    r->short_names = shorts;
    enum lp_kcat *cats = realloc(r->cats, (n + 1) * sizeof *cats);
    if (!cats)
        return LP_ERR_NOMEM;
    r->cats = cats;
    char *full = lp_kernel_demangle(raw);
    char buf[128];
    char *sh = full ? strdup(lp_kernel_short_name(full, buf, sizeof buf)) : NULL;
    if (!full || !sh) {
        free(full);
        free(sh);
        return LP_ERR_NOMEM;
    }
    names[n] = full;
    shorts[n] = sh;
    cats[n] = force ? forced : lp_kernel_category(full);
    r->n_names++;
    return LP_OK;
}

/* Group of a kernel name: the same text under two string ids (the writer's table starts
 * over when full) is one group. */
static int group_of(struct lp_run *r, struct name_map *m, uint32_t *by_id, size_t n_ids,
                    const struct lp_trace *t, lp_str id, uint32_t *out)
{
    if (id < n_ids && by_id[id] != UINT32_MAX) {
        *out = by_id[id];
        return LP_OK;
    }
    const char *s = lp_trace_str(t, id);
    uint64_t h = hash_str(s);
    size_t i = h & (m->cap - 1);
    while (m->group[i] != UINT32_MAX &&
           (m->hash[i] != h || strcmp(lp_trace_str(t, m->first_id[i]), s) != 0))
        i = (i + 1) & (m->cap - 1);
    if (m->group[i] == UINT32_MAX) {
        int rc = add_group(r, s, LP_KCAT_OTHER, 0);
        if (rc)
            return rc;
        m->hash[i] = h;
        m->first_id[i] = id;
        m->group[i] = (uint32_t)(r->n_names - 1);
    }
    if (id < n_ids)
        by_id[id] = m->group[i];
    *out = m->group[i];
    return LP_OK;
}

/* Whether each kind of GPU work is in start order in the trace */
static int in_order(const struct lp_trace *t)
{
    for (size_t i = 1; i < t->n_kernels; i++)
        if (t->kernels[i].start < t->kernels[i - 1].start)
            return 0;
    for (size_t i = 1; i < t->n_memcpys; i++)
        if (t->memcpys[i].start < t->memcpys[i - 1].start)
            return 0;
    for (size_t i = 1; i < t->n_memsets; i++)
        if (t->memsets[i].start < t->memsets[i - 1].start)
            return 0;
    return 1;
}

/* The next piece of work by (start, kind, index) from kinds each in start order: kind << 32 |
 * index, NEXT advanced (kernels, copies, sets) */
static uint64_t merge_next(const struct lp_trace *t, size_t next[3])
{
    uint64_t best = 0; /* no time is a sentinel: any, 2^64 - 1 too, is a record's */
    int kind = -1;
    if (next[0] < t->n_kernels) {
        best = t->kernels[next[0]].start;
        kind = 0;
    }
    if (next[1] < t->n_memcpys && (kind < 0 || t->memcpys[next[1]].start < best)) {
        best = t->memcpys[next[1]].start;
        kind = 1;
    }
    if (next[2] < t->n_memsets && (kind < 0 || t->memsets[next[2]].start < best))
        kind = 2;
    static const uint64_t op[3] = {LP_OP_KERNEL, LP_OP_MEMCPY, LP_OP_MEMSET};
    return op[kind] << 32 | next[kind]++;
}

int lp_run_name_groups(struct lp_run_ctx *c)
{
    const struct lp_trace *t = c->t;
    struct lp_run *r = c->r;
    size_t n = t->n_kernels + t->n_memcpys + t->n_memsets;
    if (n >= INT32_MAX) { /* kernel_work, occurrences and ranges index work in 31 bits */
        snprintf(c->err, c->errlen, "%zu kernels, copies and sets: at most %d", n, INT32_MAX - 1);
        return LP_ERR_ARG;
    }
    int rc = LP_ERR_NOMEM;
    size_t n_ids = t->n_strings + 1;
    uint32_t *by_id = malloc(n_ids * sizeof *by_id);
    struct name_map m = {0};
    m.cap = 64;
    while (m.cap < 2 * n_ids + 16)
        m.cap *= 2;
    m.hash = malloc(m.cap * sizeof *m.hash);
    m.group = malloc(m.cap * sizeof *m.group);
    m.first_id = malloc(m.cap * sizeof *m.first_id);
    /* (start, kind << 32 | index) of every piece of work, sorted in place; none when each
     * kind's records are in start order already (they usually are): merged then */
    int merge = in_order(t);
    struct lp_kv *kv = merge ? NULL : malloc((n ? n : 1) * sizeof *kv);
    /* the run owns the work, and later each kernel's place in it (lp_run_kernel_places) */
    c->work = r->work = malloc((n ? n : 1) * sizeof *c->work);
    if (!by_id || !m.hash || !m.group || !m.first_id || (!kv && !merge) || !c->work)
        goto out;
    memset(by_id, 0xff, n_ids * sizeof *by_id);
    memset(m.group, 0xff, m.cap * sizeof *m.group);
    /* copies, sets and whole graph replays first: fixed group ids 0..5 */
    for (int d = 0; d < 4; d++)
        if ((rc = add_group(r, copy_names[d], LP_KCAT_MEMCPY, 1)))
            goto out;
    if ((rc = add_group(r, "[CUDA memset]", LP_KCAT_MEMSET, 1)) ||
        (rc = add_group(r, "[CUDA graph replay]", LP_KCAT_GRAPH, 1)))
        goto out;
    rc = LP_ERR_NOMEM;
    /* (kind, index) by start, ties by kind then index, then the work array in that order */
    if (kv) {
        size_t k = 0;
        for (size_t i = 0; i < t->n_kernels; i++)
            kv[k++] = (struct lp_kv){t->kernels[i].start, (uint64_t)LP_OP_KERNEL << 32 | i};
        for (size_t i = 0; i < t->n_memcpys; i++)
            kv[k++] = (struct lp_kv){t->memcpys[i].start, (uint64_t)LP_OP_MEMCPY << 32 | i};
        for (size_t i = 0; i < t->n_memsets; i++)
            kv[k++] = (struct lp_kv){t->memsets[i].start, (uint64_t)LP_OP_MEMSET << 32 | i};
        lp_sort_kv_inplace(kv, n);
    }
    size_t next[3] = {0, 0, 0}; /* the merge's place in each kind */
    for (size_t i = 0; i < n; i++) {
        uint64_t val = kv ? kv[i].val : merge_next(t, next);
        uint32_t kind = (uint32_t)(val >> 32), idx = (uint32_t)val;
        struct lp_work *w = &c->work[i];
        *w = (struct lp_work){.index = idx, .call = LP_NO_CALL, .occ = -1};
        if (kind == LP_OP_KERNEL) {
            const struct lp_kernel_rec *x = &t->kernels[idx];
            const struct lp_kernel_config *kc = lp_trace_kernel_config(t, x);
            if (kc->flags & LP_KERNEL_FLAG_REPLAY) {
                w->group = LP_GROUP_REPLAY;
                r->replays_whole++;
            } else if ((rc = group_of(r, &m, by_id, n_ids, t, kc->name, &w->group))) {
                goto out;
            }
        } else if (kind == LP_OP_MEMCPY) {
            w->group = (uint32_t)lp_copy_direction(t->memcpys[idx].copy_kind);
        } else {
            w->group = 4;
        }
    }
    c->n_work = n;
    rc = LP_OK;
out:
    free(by_id);
    free(m.hash);
    free(m.group);
    free(m.first_id);
    free(kv);
    return rc;
}

/* at most 2^GROUP_BITS kernel names, 255 stages */
#define GROUP_BITS 20

static int cmp_row_total(const void *a, const void *b)
{
    const struct lp_kernel_row *x = a, *y = b;
    if (x->total_ns != y->total_ns)
        return x->total_ns < y->total_ns ? 1 : -1;
    return (x->group > y->group) - (x->group < y->group);
}

/* The durations of one table's work, grouped: segment I, [at[I], at[I + 1]), holds the
 * durations of key KEY[I] (stage * n_names + group, or the group) in increasing key order.
 * Counted, 4 bytes a piece of work (V32), when every duration is below 2^32 ns (4.3 s) and
 * the keys are few enough to count each; else packed, 8 bytes (V, each duration in the bits
 * MASK): the key in the bits above the duration, when every duration leaves it room (below
 * 2^36 ns, 68 s, with the most names and stages; days with a few hundred); else through
 * (key, duration) pairs, 16 bytes each, whose durations then move to the front of the same
 * memory. */
struct grouped {
    uint32_t *v32;
    uint64_t *v, mask;
    uint64_t *key;
    size_t *at, n_seg;
};

/* Duration I of G */
static inline uint64_t grouped_at(const struct grouped *g, size_t i)
{
    return g->v32 ? g->v32[i] : g->v[i] & g->mask;
}

static void grouped_free(struct grouped *g)
{
    free(g->v32);
    free(g->v);
    free(g->key);
    free(g->at);
    memset(g, 0, sizeof *g);
}

static int bit_width(uint64_t x)
{
    int b = 0;
    for (; x; x >>= 1)
        b++;
    return b;
}

/* G's segments: N values, the key of the I-th KEY_OF(I) */
#define SEGMENTS(g, n, key_of)                                                                 \
    do {                                                                                       \
        size_t segs = 0;                                                                       \
        for (size_t i = 0; i < (n); i++)                                                       \
            segs += i == 0 || key_of(i) != key_of(i - 1);                                      \
        (g)->key = malloc((segs ? segs : 1) * sizeof *(g)->key);                               \
        (g)->at = malloc((segs + 1) * sizeof *(g)->at);                                        \
        if (!(g)->key || !(g)->at)                                                             \
            return LP_ERR_NOMEM;                                                               \
        for (size_t i = 0; i < (n); i++)                                                       \
            if (i == 0 || key_of(i) != key_of(i - 1)) {                                        \
                (g)->key[(g)->n_seg] = key_of(i);                                              \
                (g)->at[(g)->n_seg++] = i;                                                     \
            }                                                                                  \
        (g)->at[(g)->n_seg] = (n);                                                             \
    } while (0)

/* The work's durations by group, or BY_STAGE by (stage, group), into G; LONGEST is the
 * longest. LP_OK or LP_ERR_NOMEM (G then freed by the caller). */
static int group_durations(const struct lp_run_ctx *c, int by_stage, uint64_t longest,
                           struct grouped *g)
{
    size_t n = c->n_work, names = c->r->n_names;
    uint64_t keys = by_stage ? (uint64_t)c->r->n_stages * names : names;
    int kb = bit_width(keys > 1 ? keys - 1 : 0), db = 64 - kb, key_bytes = (kb + 7) / 8;
#define KEY_OF_WORK(w)                                                                         \
    (by_stage ? (uint64_t)lp_work_stage(c, (w)) * names + (w)->group : (w)->group)
    /* counted: each key's durations placed after the keys before it (a key per eight pieces
     * of work at most, so the counts add half a byte a piece) */
    if (longest <= UINT32_MAX && n < UINT32_MAX && keys <= n / 8 + 4096) {
        uint32_t *pos = calloc(keys + 1, sizeof *pos);
        if (!pos || !(g->v32 = malloc((n ? n : 1) * sizeof *g->v32))) {
            free(pos);
            return LP_ERR_NOMEM;
        }
        for (size_t i = 0; i < n; i++)
            pos[KEY_OF_WORK(&c->work[i]) + 1]++;
        size_t segs = 0;
        for (size_t k = 0; k < keys; k++) {
            segs += pos[k + 1] != 0;
            pos[k + 1] += pos[k];
        }
        g->key = malloc((segs ? segs : 1) * sizeof *g->key);
        g->at = malloc((segs + 1) * sizeof *g->at);
        if (!g->key || !g->at) {
            free(pos);
            return LP_ERR_NOMEM;
        }
        for (size_t k = 0; k < keys; k++)
            if (pos[k + 1] != pos[k]) {
                g->key[g->n_seg] = k;
                g->at[g->n_seg++] = pos[k];
            }
        g->at[g->n_seg] = n;
        for (size_t i = 0; i < n; i++) { /* POS[k] moves from key k's start to its end */
            const struct lp_work *w = &c->work[i];
            g->v32[pos[KEY_OF_WORK(w)]++] = (uint32_t)lp_work_dur(c->t, w);
        }
        free(pos);
        g->mask = UINT32_MAX;
        return LP_OK;
    }
    if (kb == 0 || longest < (1ull << db)) {
        if (!(g->v = malloc((n ? n : 1) * sizeof *g->v)))
            return LP_ERR_NOMEM;
        for (size_t i = 0; i < n; i++) {
            const struct lp_work *w = &c->work[i];
            g->v[i] = (kb ? KEY_OF_WORK(w) << db : 0) | lp_work_dur(c->t, w);
        }
        lp_group_u64(g->v, n, key_bytes);
        g->mask = kb ? (1ull << db) - 1 : UINT64_MAX;
#define KEY_OF_PACKED(i) (kb ? g->v[i] >> db : 0)
        SEGMENTS(g, n, KEY_OF_PACKED);
#undef KEY_OF_PACKED
        return LP_OK;
    }
    struct lp_kv *kv = malloc((n ? n : 1) * sizeof *kv);
    if (!kv)
        return LP_ERR_NOMEM;
    g->v = (uint64_t *)(void *)kv;
    for (size_t i = 0; i < n; i++) {
        const struct lp_work *w = &c->work[i];
        kv[i] = (struct lp_kv){KEY_OF_WORK(w) << db, lp_work_dur(c->t, w)};
    }
#undef KEY_OF_WORK
    lp_group_kv(kv, n, key_bytes);
    g->mask = UINT64_MAX;
#define KEY_OF_PAIR(i) (kv[i].key >> db)
    SEGMENTS(g, n, KEY_OF_PAIR);
#undef KEY_OF_PAIR
    for (size_t i = 0; i < n; i++) { /* pair I is read before its bytes are written */
        uint64_t d = kv[i].val;
        g->v[i] = d;
    }
    return LP_OK;
}

/* One row from G's durations [FROM, FROM + N) (N > 0). The median by selection; the mean and
 * spread from integer deviations from the mean's floor, so they do not depend on the
 * values' order; totals saturate at LP_SAT_MAX. */
static void row_of(const struct grouped *g, size_t from, size_t n, uint64_t scope_ns,
                   struct lp_kernel_row *x)
{
    uint64_t total = 0, min = UINT64_MAX, max = 0;
    long double sum = 0;
    for (size_t q = from; q < from + n; q++) {
        uint64_t d = grouped_at(g, q);
        total = lp_sat_add(total, d);
        sum += (long double)d;
        min = d < min ? d : min;
        max = d > max ? d : max;
    }
    /* exact while the total has not saturated (584 years of GPU time) */
    long double approx = sum / (long double)n; /* at most max, but for rounding */
    uint64_t floor_mean = total < LP_SAT_MAX            ? total / n
                          : approx >= (long double)max ? max
                                                       : (uint64_t)approx;
    /* the deviations' sum and their squares' as integers: exact in any order (a long double
     * of the squares rounded once past 2^64, about 18 M calls of one kernel 1 ms apart) */
    lp_i128 dev_sum = 0;
    lp_u128 sq_sum = 0;
    for (size_t q = from; q < from + n; q++) {
        uint64_t d = grouped_at(g, q);
        uint64_t a = d >= floor_mean ? d - floor_mean : floor_mean - d;
        dev_sum += d >= floor_mean ? (lp_i128)a : -(lp_i128)a;
        sq_sum = lp_sat_add_u128(sq_sum, (lp_u128)a * a);
    }
    long double dev = (long double)dev_sum, sq = (long double)sq_sum;
    x->calls = n;
    x->total_ns = total;
    x->min_ns = lp_sat_clamp(min);
    x->max_ns = lp_sat_clamp(max);
    /* the middle one, or the mean of the middle two without their sum, which may wrap */
    size_t k = (n - 1) / 2;
    uint64_t lo = g->v32 ? lp_select_u32(g->v32 + from, n, k)
                         : lp_select_u64(g->v + from, n, k) & g->mask;
    uint64_t hi = lo;
    if (n % 2 == 0) {
        hi = grouped_at(g, from + k + 1);
        for (size_t q = from + k + 2; q < from + n; q++)
            hi = grouped_at(g, q) < hi ? grouped_at(g, q) : hi;
    }
    x->median_ns = lp_sat_clamp(lp_mid_u64(lo, hi));
    long double mean = (long double)floor_mean + dev / (long double)n;
    x->mean_ns = (double)mean;
    /* the squares about the mean: about the floor less the mean's fraction's share */
    long double m2 = sq - dev * dev / (long double)n;
    x->std_ns = n > 1 && m2 > 0 ? (double)sqrtl(m2 / (long double)(n - 1)) : 0;
    x->share = scope_ns ? (double)(mean * (long double)n) / (double)scope_ns : 0;
}

/* Rows of G's segments [FROM, TO), one each, into TAB, by GPU time; the first KEEP (0: all)
 * in TAB->n */
static int rows_of(const struct grouped *g, size_t from, size_t to, size_t names,
                   uint64_t scope_ns, size_t keep, struct lp_kernel_table *tab)
{
    size_t n_rows = to - from;
    struct lp_kernel_row *v = calloc(n_rows ? n_rows : 1, sizeof *v);
    if (!v)
        return LP_ERR_NOMEM;
    for (size_t s = from; s < to; s++) {
        struct lp_kernel_row *x = &v[s - from];
        x->group = (size_t)(g->key[s] % names);
        row_of(g, g->at[s], g->at[s + 1] - g->at[s], scope_ns, x);
    }
    qsort(v, n_rows, sizeof *v, cmp_row_total);
    tab->n_groups = n_rows;
    tab->gpu_ns = scope_ns;
    tab->n = keep && keep < n_rows ? keep : n_rows;
    tab->v = v;
    return LP_OK;
}

/* The three (stage, category) pairs with the most GPU time, warmup and work outside the
 * stages left out, each with its costliest kernel; shares are of the measured stages' GPU
 * time. */
static void cost_centres(struct lp_run *r)
{
    double all = 0;
    for (size_t s = 0; s < r->n_stages; s++)
        if (lp_stage_measured(&r->stages[s]))
            all += (double)r->stages[s].gpu_ns;
    r->measured_gpu_ns = lp_sat_from_double(all);
    for (size_t k = 0; k < 3; k++) {
        struct lp_cost_centre best = {.stage = -1};
        for (size_t s = 0; s < r->n_stages; s++) {
            const struct lp_stage_report *st = &r->stages[s];
            if (!lp_stage_measured(st))
                continue;
            for (int cat = 0; cat < LP_KCAT_COUNT; cat++) {
                int taken = 0;
                for (size_t q = 0; q < r->n_centres; q++)
                    taken |= r->centres[q].stage == (int)s && r->centres[q].cat == (enum lp_kcat)cat;
                if (!taken && st->cat_ns[cat] > (double)best.gpu_ns)
                    best = (struct lp_cost_centre){(int)s, (enum lp_kcat)cat,
                                                   lp_sat_from_double(st->cat_ns[cat]), 0,
                                                   SIZE_MAX};
            }
        }
        if (best.stage < 0 || best.gpu_ns == 0)
            break;
        best.share = all > 0 ? (double)best.gpu_ns / all : 0;
        const struct lp_kernel_table *tab = &r->stages[best.stage].top;
        for (size_t i = 0; i < tab->n_groups; i++)
            if (r->cats[tab->v[i].group] == best.cat) {
                best.top_group = tab->v[i].group;
                break;
            }
        r->centres[r->n_centres++] = best;
    }
}

int lp_run_kernels(struct lp_run_ctx *c)
{
    struct lp_run *r = c->r;
    size_t n = c->n_work;
    if (r->n_names >= (1u << GROUP_BITS) || r->n_stages >= 256) {
        snprintf(c->err, c->errlen, "more than %u distinct kernel names or 255 stages",
                 1u << GROUP_BITS);
        return LP_ERR_ARG;
    }
    struct grouped g = {0};
    uint64_t *stage_ns = calloc(r->n_stages + 1, sizeof *stage_ns);
    int rc = LP_ERR_NOMEM;
    if (!stage_ns)
        goto out;
    uint64_t total = 0, longest = 0;
    for (size_t i = 0; i < n; i++) {
        const struct lp_work *w = &c->work[i];
        uint64_t d = lp_work_dur(c->t, w);
        total = lp_sat_add(total, d);
        longest = d > longest ? d : longest;
        int stage = lp_work_stage(c, w);
        struct lp_stage_report *s = &r->stages[stage];
        stage_ns[stage] = lp_sat_add(stage_ns[stage], d);
        double *cat_ns = &s->cat_ns[r->cats[w->group]];
        *cat_ns = lp_sat_add_double(*cat_ns, (double)d);
        /* a whole graph replay is GPU time, not a kernel: graphs.c counts replays */
        const struct lp_kernel_rec *k =
            lp_work_kind(w) == LP_OP_KERNEL ? &c->t->kernels[w->index] : NULL;
        uint32_t flags = k ? lp_trace_kernel_config(c->t, k)->flags : 0;
        if (lp_work_kind(w) == LP_OP_KERNEL && !(flags & LP_KERNEL_FLAG_REPLAY)) {
            s->kernels++;
            s->graph_kernels += (flags & LP_KERNEL_FLAG_GRAPH) != 0;
        }
    }
    if ((rc = group_durations(c, 0, longest, &g)) ||
        (rc = rows_of(&g, 0, g.n_seg, r->n_names, total, 0, &r->all_kernels)))
        goto out;
    rc = LP_ERR_NOMEM;
    r->kernels = r->all_kernels;
    r->kernels.n = r->opt.top_k < r->all_kernels.n ? r->opt.top_k : r->all_kernels.n;
    r->kernels.v = malloc((r->kernels.n ? r->kernels.n : 1) * sizeof *r->kernels.v);
    if (!r->kernels.v)
        goto out;
    memcpy(r->kernels.v, r->all_kernels.v, r->kernels.n * sizeof *r->kernels.v);
    /* per stage: by (stage, group), each stage's segments together */
    grouped_free(&g);
    if ((rc = group_durations(c, 1, longest, &g)))
        goto out;
    for (size_t i = 0, s = 0; s < r->n_stages; s++) {
        size_t j = i;
        while (j < g.n_seg && g.key[j] / r->n_names == s)
            j++;
        struct lp_stage_report *st = &r->stages[s];
        st->gpu_ns = stage_ns[s];
        for (int k = 0; k < LP_KCAT_COUNT; k++)
            st->cat_share[k] = st->gpu_ns ? st->cat_ns[k] / (double)st->gpu_ns : 0;
        st->kernels_per_occurrence =
            st->occurrences ? (double)st->kernels / (double)st->occurrences : 0;
        if ((rc = rows_of(&g, i, j, r->n_names, stage_ns[s], r->opt.top_k, &st->top)))
            goto out;
        i = j;
    }
    cost_centres(r);
    rc = LP_OK;
out:
    grouped_free(&g);
    free(stage_ns);
    return rc;
}

int lp_run_kernel_places(struct lp_run_ctx *c)
{
    size_t n = c->t->n_kernels;
    c->kernel_work = c->r->kernel_work = malloc((n ? n : 1) * sizeof *c->kernel_work);
    int32_t *os = c->r->occ_stage = malloc((c->n_occ ? c->n_occ : 1) * sizeof *os);
    if (!c->kernel_work || !os)
        return LP_ERR_NOMEM;
    for (size_t i = 0; i < c->n_occ; i++) /* the occurrences' stages are final here */
        os[i] = c->occ[i].stage;
    c->r->outside_stage = c->outside_stage;
    for (size_t i = 0; i < c->n_work; i++)
        if (lp_work_kind(&c->work[i]) == LP_OP_KERNEL)
            c->kernel_work[c->work[i].index] = (int32_t)i;
    return LP_OK;
}

void lp_run_names_free(struct lp_run *r)
{
    for (size_t i = 0; i < r->n_names; i++) {
        free(r->names[i]);
        free(r->short_names[i]);
    }
    free(r->names);
    free(r->short_names);
    free(r->cats);
    free(r->work);
    free(r->kernel_work);
    free(r->occ_stage);
}

uint32_t lp_run_kernel_group(const struct lp_run *r, size_t i)
{
    return r->kernel_work ? r->work[r->kernel_work[i]].group : 0;
}

int32_t lp_run_kernel_stage(const struct lp_run *r, size_t i)
{
    if (!r->kernel_work)
        return -1;
    int32_t o = r->work[r->kernel_work[i]].occ;
    return o >= 0 ? r->occ_stage[o] : r->outside_stage;
}

void lp_run_kernels_free(struct lp_run *r)
{
    free(r->kernels.v);
    free(r->all_kernels.v);
}
