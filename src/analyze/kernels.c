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

int lp_run_name_groups(struct lp_run_ctx *c)
{
    const struct lp_trace *t = c->t;
    struct lp_run *r = c->r;
    size_t n = t->n_kernels + t->n_memcpys + t->n_memsets;
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
    struct lp_kv *kv = malloc((n ? n : 1) * sizeof *kv); /* sorted in place */
    r->kernel_group = malloc((t->n_kernels ? t->n_kernels : 1) * sizeof *r->kernel_group);
    if (!by_id || !m.hash || !m.group || !m.first_id || !kv || !r->kernel_group)
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
    /* sort (kind, index) by start, then build the work array in that order */
    size_t k = 0;
    for (size_t i = 0; i < t->n_kernels; i++)
        kv[k++] = (struct lp_kv){t->kernels[i].start, (uint64_t)LP_OP_KERNEL << 32 | i};
    for (size_t i = 0; i < t->n_memcpys; i++)
        kv[k++] = (struct lp_kv){t->memcpys[i].start, (uint64_t)LP_OP_MEMCPY << 32 | i};
    for (size_t i = 0; i < t->n_memsets; i++)
        kv[k++] = (struct lp_kv){t->memsets[i].start, (uint64_t)LP_OP_MEMSET << 32 | i};
    lp_sort_kv_inplace(kv, n);
    c->work = malloc((n ? n : 1) * sizeof *c->work);
    if (!c->work)
        goto out;
    for (size_t i = 0; i < n; i++) {
        uint32_t kind = (uint32_t)(kv[i].val >> 32), idx = (uint32_t)kv[i].val;
        struct lp_work *w = &c->work[i];
        *w = (struct lp_work){.kind = (uint8_t)kind, .index = idx, .range = -1, .occ = -1,
                              .stage = -1};
        if (kind == LP_OP_KERNEL) {
            const struct lp_kernel_rec *x = &t->kernels[idx];
            w->start = x->start;
            w->end = x->end;
            if (x->flags & LP_KERNEL_FLAG_REPLAY) {
                w->group = LP_GROUP_REPLAY;
                r->replays_whole++;
            } else if ((rc = group_of(r, &m, by_id, n_ids, t, x->name, &w->group))) {
                goto out;
            }
            r->kernel_group[idx] = w->group;
        } else if (kind == LP_OP_MEMCPY) {
            const struct lp_memcpy *x = &t->memcpys[idx];
            w->start = x->start;
            w->end = x->end;
            w->group = (uint32_t)lp_copy_direction(x->copy_kind);
        } else {
            w->start = t->memsets[idx].start;
            w->end = t->memsets[idx].end;
            w->group = 4;
        }
        if (w->end < w->start)
            w->end = w->start; /* a torn record: zero length rather than negative */
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

/* the grouping keys: a kernel name group (20 bits) in the key's top bits, or a stage (8
 * bits) and then a group, so that lp_group_kv looks at 3 or 4 bytes */
#define GROUP_BITS 20
#define GROUP_SHIFT (64 - GROUP_BITS)
#define STAGE_SHIFT (64 - 8)
#define STAGE_GROUP_SHIFT (STAGE_SHIFT - GROUP_BITS)

static int cmp_row_total(const void *a, const void *b)
{
    const struct lp_kernel_row *x = a, *y = b;
    if (x->total_ns != y->total_ns)
        return x->total_ns < y->total_ns ? 1 : -1;
    return (x->group > y->group) - (x->group < y->group);
}

static int cmp_kv_val(const void *a, const void *b)
{
    uint64_t x = ((const struct lp_kv *)a)->val, y = ((const struct lp_kv *)b)->val;
    return (x > y) - (x < y);
}

/* The K-th smallest value of V[0..N) (K < N), V's values permuted so that none before K is
 * larger and none after it smaller: Hoare's selection, by qsort past 64 rounds (inputs that
 * defeat the median of three) */
static uint64_t select_val(struct lp_kv *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    for (int round = 0; lo < hi; round++) {
        if (round == 64) {
            qsort(v + lo, hi - lo + 1, sizeof *v, cmp_kv_val);
            break;
        }
        size_t mid = lo + (hi - lo) / 2;
        uint64_t a = v[lo].val, b = v[mid].val, c = v[hi].val;
        uint64_t pivot = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
        size_t i = lo, j = hi;
        while (i <= j) {
            while (v[i].val < pivot)
                i++;
            while (v[j].val > pivot)
                j--;
            if (i <= j) {
                struct lp_kv x = v[i];
                v[i++] = v[j];
                v[j] = x;
                if (j-- == 0)
                    break;
            }
        }
        /* now V[lo..j] <= pivot <= V[i..hi], and V(j..i) equal the pivot */
        if (k <= j && j != SIZE_MAX)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            break;
    }
    return v[k].val;
}

/* Rows from KV grouped by key (lp_group_kv), the group at bit SHIFT of the key: one row per
 * key, its values the exact durations. The median by selection; the mean and spread from
 * integer deviations from the mean's floor, so they do not depend on the values' order;
 * totals saturate at LP_SAT_MAX. */
static int rows_of(struct lp_kv *kv, size_t n, uint64_t scope_ns, size_t keep, int shift,
                   struct lp_kernel_table *tab)
{
    size_t n_rows = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || kv[i].key != kv[i - 1].key)
            n_rows++;
    struct lp_kernel_row *v = calloc(n_rows ? n_rows : 1, sizeof *v);
    if (!v)
        return LP_ERR_NOMEM;
    size_t row = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        uint64_t total = 0, min = UINT64_MAX, max = 0;
        long double sum = 0;
        for (; j < n && kv[j].key == kv[i].key; j++) {
            uint64_t d = kv[j].val;
            total = lp_sat_add(total, d);
            sum += (long double)d;
            min = d < min ? d : min;
            max = d > max ? d : max;
        }
        size_t calls = j - i;
        /* exact while the total has not saturated (584 years of GPU time) */
        long double approx = sum / (long double)calls; /* at most max, but for rounding */
        uint64_t floor_mean = total < LP_SAT_MAX            ? total / calls
                              : approx >= (long double)max ? max
                                                           : (uint64_t)approx;
        long double dev = 0, sq = 0; /* exact while each square fits 64 bits */
        for (size_t q = i; q < j; q++) {
            long double e = kv[q].val >= floor_mean ? (long double)(kv[q].val - floor_mean)
                                                    : -(long double)(floor_mean - kv[q].val);
            dev += e;
            sq += e * e;
        }
        struct lp_kernel_row *x = &v[row++];
        x->group = (size_t)((kv[i].key >> shift) & ((1u << GROUP_BITS) - 1));
        x->calls = calls;
        x->total_ns = total;
        x->min_ns = lp_sat_clamp(min);
        x->max_ns = lp_sat_clamp(max);
        /* the middle one, or the mean of the middle two without their sum, which may wrap */
        size_t k = (calls - 1) / 2;
        uint64_t lo = select_val(kv + i, calls, k), hi = lo;
        if (calls % 2 == 0) {
            hi = kv[i + k + 1].val;
            for (size_t q = i + k + 2; q < j; q++)
                hi = kv[q].val < hi ? kv[q].val : hi;
        }
        x->median_ns = lp_sat_clamp(lp_mid_u64(lo, hi));
        long double mean = (long double)floor_mean + dev / (long double)calls;
        x->mean_ns = (double)mean;
        /* the squares about the mean: about the floor less the mean's fraction's share */
        long double m2 = sq - dev * dev / (long double)calls;
        x->std_ns = calls > 1 && m2 > 0 ? (double)sqrtl(m2 / (long double)(calls - 1)) : 0;
        x->share = scope_ns ? (double)(mean * (long double)calls) / (double)scope_ns : 0;
        i = j;
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
    struct lp_kv *kv = malloc((n ? n : 1) * sizeof *kv); /* sorted in place */
    uint64_t *stage_ns = calloc(r->n_stages + 1, sizeof *stage_ns);
    int rc = LP_ERR_NOMEM;
    if (!kv || !stage_ns)
        goto out;
    r->kernel_stage = malloc((c->t->n_kernels ? c->t->n_kernels : 1) * sizeof *r->kernel_stage);
    if (!r->kernel_stage)
        goto out;
    for (size_t i = 0; i < c->t->n_kernels; i++)
        r->kernel_stage[i] = -1;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        const struct lp_work *w = &c->work[i];
        uint64_t d = w->end - w->start;
        total = lp_sat_add(total, d);
        if (w->kind == LP_OP_KERNEL)
            r->kernel_stage[w->index] = w->stage;
        kv[i] = (struct lp_kv){(uint64_t)w->group << GROUP_SHIFT, d};
        struct lp_stage_report *s = &r->stages[w->stage];
        stage_ns[w->stage] = lp_sat_add(stage_ns[w->stage], d);
        double *cat_ns = &s->cat_ns[r->cats[w->group]];
        *cat_ns = lp_sat_add_double(*cat_ns, (double)d);
        /* a whole graph replay is GPU time, not a kernel: graphs.c counts replays */
        uint32_t flags = w->kind == LP_OP_KERNEL ? c->t->kernels[w->index].flags : 0;
        if (w->kind == LP_OP_KERNEL && !(flags & LP_KERNEL_FLAG_REPLAY)) {
            s->kernels++;
            s->graph_kernels += (flags & LP_KERNEL_FLAG_GRAPH) != 0;
        }
    }
    lp_group_kv(kv, n, 3);
    if ((rc = rows_of(kv, n, total, 0, GROUP_SHIFT, &r->all_kernels)))
        goto out;
    rc = LP_ERR_NOMEM;
    r->kernels = r->all_kernels;
    r->kernels.n = r->opt.top_k < r->all_kernels.n ? r->opt.top_k : r->all_kernels.n;
    r->kernels.v = malloc((r->kernels.n ? r->kernels.n : 1) * sizeof *r->kernels.v);
    if (!r->kernels.v)
        goto out;
    memcpy(r->kernels.v, r->all_kernels.v, r->kernels.n * sizeof *r->kernels.v);
    /* per stage: stage in the top byte, then group, then duration */
    for (size_t i = 0; i < n; i++) {
        const struct lp_work *w = &c->work[i];
        uint64_t d = w->end - w->start;
        kv[i] = (struct lp_kv){(uint64_t)w->stage << STAGE_SHIFT |
                                   (uint64_t)w->group << STAGE_GROUP_SHIFT,
                               d};
    }
    lp_group_kv(kv, n, 4);
    for (size_t i = 0, s = 0; s < r->n_stages; s++) {
        size_t j = i;
        while (j < n && (kv[j].key >> STAGE_SHIFT) == s)
            j++;
        struct lp_stage_report *st = &r->stages[s];
        st->gpu_ns = stage_ns[s];
        for (int k = 0; k < LP_KCAT_COUNT; k++)
            st->cat_share[k] = st->gpu_ns ? st->cat_ns[k] / (double)st->gpu_ns : 0;
        st->kernels_per_occurrence =
            st->occurrences ? (double)st->kernels / (double)st->occurrences : 0;
        if ((rc = rows_of(kv + i, j - i, stage_ns[s], r->opt.top_k, STAGE_GROUP_SHIFT,
                          &st->top)))
            goto out;
        i = j;
    }
    cost_centres(r);
    rc = LP_OK;
out:
    free(kv);
    free(stage_ns);
    return rc;
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
    free(r->kernel_group);
}

void lp_run_kernels_free(struct lp_run *r)
{
    free(r->kernel_stage);
    free(r->kernels.v);
    free(r->all_kernels.v);
}
