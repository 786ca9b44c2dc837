/* Two analysed runs compared (llmprof diff): TTFT, TPOT, ITL and each stage's figures side by
 * side, kernels by normalised name per stage, GEMM shapes, operators, and rules that gate on
 * them. A change comes with its noise: per-step and per-request values are resampled (a block
 * bootstrap, so that drifting step times keep their runs of neighbours), figures known by a
 * mean and deviation get a Student-t interval of their ratio; a change whose interval holds zero,
 * or that is under the least change that counts, is no change. The intervals describe the
 * noise inside each run; two processes on one machine differ by more (docs/diff.md). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmprof/compare.h"
#include "llmprof/sat.h"

#define DEFAULT_MIN_CHANGE 0.02
#define DEFAULT_SEED 0x6c6c6d70726f66ULL /* "llmprof" */
#define BOOT_WORK 40000000.0             /* resampled values per interval, at most */
#define BOOT_MAX 2000
#define BOOT_MIN 50

static const double quantiles[LP_DIFF_QUANTILES] = {0.50, 0.90, 0.99};

/* ---- noise ---- */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The K-th smallest of V (N > K), V reordered so that every value after K is at least it. */
static double kth(double *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        double pivot = v[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                double x = v[i];
                v[i] = v[j];
                v[j] = x;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j && j < hi)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            break;
    }
    return v[k];
}

/* The Q quantile of V (reordered), interpolated as lp_dist's. */
static double quantile(double *v, size_t n, double q)
{
    double x = q * (double)(n - 1);
    size_t k = (size_t)x;
    double lo = kth(v, n, k);
    if (k + 1 >= n || x == (double)k)
        return lo;
    double hi = v[k + 1];
    for (size_t i = k + 2; i < n; i++)
        if (v[i] < hi)
            hi = v[i];
    return lo + (x - (double)k) * (hi - lo);
}

/* One resample of V (N values in time order) into OUT: blocks of BLOCK neighbours from random
 * starts, wrapping round, until N are drawn. */
static void resample(const double *v, size_t n, size_t block, double *out, uint64_t *seed)
{
    for (size_t o = 0; o < n;) {
        size_t s = (size_t)(rng_next(seed) % n);
        for (size_t j = 0; j < block && o < n; j++)
            out[o++] = v[(s + j) % n];
    }
}

/* Enough values for an interval of quantile Q: five, and two beyond it in the tail. */
static int enough(size_t n, double q)
{
    return n >= 5 && (double)n * (1 - q) >= 2;
}

/* The 95 % interval of qB / qA - 1 by resampling both: LP_OK (LO, HI NaN when it cannot be
 * had) or LP_ERR_NOMEM. */
static int boot_interval(const struct lp_dist *a, const struct lp_dist *b, double q,
                         uint64_t seed, double *lo, double *hi)
{
    *lo = *hi = NAN;
    if (!a->v || !b->v || !enough(a->n, q) || !enough(b->n, q))
        return LP_OK;
    double reps = BOOT_WORK / (double)(a->n + b->n);
    size_t n_rep = reps > BOOT_MAX ? BOOT_MAX : reps < BOOT_MIN ? BOOT_MIN : (size_t)reps;
    double *buf = malloc((a->n > b->n ? a->n : b->n) * sizeof *buf);
    double *rel = malloc(n_rep * sizeof *rel);
    if (!buf || !rel) {
        free(buf);
        free(rel);
        return LP_ERR_NOMEM;
    }
    size_t block_a = (size_t)cbrt((double)a->n), block_b = (size_t)cbrt((double)b->n), k = 0;
    for (size_t i = 0; i < n_rep; i++) {
        resample(a->v, a->n, block_a, buf, &seed);
        double qa = quantile(buf, a->n, q);
        resample(b->v, b->n, block_b, buf, &seed);
        double qb = quantile(buf, b->n, q);
        if (qa > 0)
            rel[k++] = qb / qa - 1;
    }
    if (k * 2 >= n_rep) {
        qsort(rel, k, sizeof *rel, lp_cmp_double);
        *lo = lp_quantile_sorted(rel, k, 0.025);
        *hi = lp_quantile_sorted(rel, k, 0.975);
    }
    free(buf);
    free(rel);
    return LP_OK;
}

/* Student's t at 97.5 % for DF degrees of freedom (two-sided 95 %): the table to 30, then
 * 1.96 + 2.5 / DF, within 0.002 of the exact value. */
static double t975(double df)
{
    static const double t[30] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
    if (!(df >= 1))
        return t[0];
    return df <= 30 ? t[(int)df - 1] : 1.96 + 2.5 / df;
}

/* ---- one figure ---- */

static int present(double x)
{
    return !isnan(x);
}

/* A figure from its two values, not judged yet. */
static struct lp_diff_value value(double a, double b, enum lp_diff_basis basis)
{
    struct lp_diff_value v = {.a = a, .b = b, .lo = NAN, .hi = NAN, .basis = basis,
                              .n_a = present(a), .n_b = present(b)};
    v.change = present(a) && present(b) && a != 0 ? b / a - 1 : NAN;
    return v;
}

/* V's verdict; BAD: 1 when higher is worse, -1 when lower is, 0 neither. Zero against
 * something (a kernel added, a count from none) is a change whatever the noise. */
static void judge(struct lp_diff_value *v, double min_change, int bad)
{
    if (!present(v->a) || !present(v->b)) {
        v->verdict = LP_DIFF_VERDICT_MISSING;
    } else if (v->a != v->b && (v->a == 0 || v->b == 0)) {
        v->verdict = v->b > v->a ? LP_DIFF_VERDICT_HIGHER : LP_DIFF_VERDICT_LOWER;
    } else if (v->a == v->b ||
               (present(v->change) && fabs(v->change) < min_change) ||
               (present(v->lo) && v->lo <= 0 && v->hi >= 0)) {
        v->verdict = LP_DIFF_VERDICT_SAME;
    } else if (isnan(v->lo) &&
               (v->basis == LP_DIFF_BASIS_BOOTSTRAP || v->basis == LP_DIFF_BASIS_MEANS)) {
        v->verdict = LP_DIFF_VERDICT_UNSURE;
    } else {
        v->verdict = v->b > v->a ? LP_DIFF_VERDICT_HIGHER : LP_DIFF_VERDICT_LOWER;
    }
    v->worse = v->verdict == LP_DIFF_VERDICT_HIGHER  ? bad
               : v->verdict == LP_DIFF_VERDICT_LOWER ? -bad
                                                     : 0;
}

/* Means with their deviations and counts: the ratio's interval (delta method, Welch's
 * degrees of freedom and Student's t, since occurrences are often a handful). */
static struct lp_diff_value means_value(double ma, double sa, double na, double mb, double sb,
                                        double nb, double min_change, int bad)
{
    struct lp_diff_value v = value(na > 0 ? ma : NAN, nb > 0 ? mb : NAN, LP_DIFF_BASIS_MEANS);
    v.n_a = (size_t)na;
    v.n_b = (size_t)nb;
    if (na >= 2 && nb >= 2 && ma > 0 && mb > 0) {
        double ratio = mb / ma;
        double ra = sa * sa / (na * ma * ma), rb = sb * sb / (nb * mb * mb); /* relative */
        double df = ra + rb > 0 ? (ra + rb) * (ra + rb) /
                                      (ra * ra / (na - 1) + rb * rb / (nb - 1))
                                : 1e9;
        double half = t975(df) * ratio * sqrt(ra + rb);
        v.lo = ratio - half - 1;
        v.hi = ratio + half - 1;
    }
    judge(&v, min_change, bad);
    return v;
}

static void mean_std(const struct lp_dist *d, double *mean, double *sd)
{
    double ss = 0;
    for (size_t i = 0; i < d->n; i++)
        ss += (d->v[i] - d->mean) * (d->v[i] - d->mean);
    *mean = d->mean;
    *sd = d->n > 1 ? sqrt(ss / (double)(d->n - 1)) : 0;
}

/* A quantile of two distributions, with its bootstrap interval; the median of too few values
 * for it gets that of the means (Welch). */
static int dist_value(struct lp_diff_value *out, const struct lp_dist *a, const struct lp_dist *b,
                      int qi, const struct lp_diff_options *o, int bad)
{
    double pa = !a || !a->n ? NAN : qi == 0 ? a->p50 : qi == 1 ? a->p90 : a->p99;
    double pb = !b || !b->n ? NAN : qi == 0 ? b->p50 : qi == 1 ? b->p90 : b->p99;
    *out = value(pa, pb, LP_DIFF_BASIS_BOOTSTRAP);
    out->n_a = a ? a->n : 0;
    out->n_b = b ? b->n : 0;
    if (a && b && present(out->change)) {
        uint64_t seed = o->seed ^ ((uint64_t)qi << 56) ^ (uint64_t)(a->n * 31 + b->n);
        if (boot_interval(a, b, quantiles[qi], seed, &out->lo, &out->hi) != LP_OK)
            return LP_ERR_NOMEM;
        if (isnan(out->lo) && qi == 0 && a->v && b->v) {
            double ma, sa, mb, sb;
            mean_std(a, &ma, &sa);
            mean_std(b, &mb, &sb);
            struct lp_diff_value m = means_value(ma, sa, (double)a->n, mb, sb, (double)b->n,
                                                 o->min_change, bad);
            /* the means' relative width, about the medians' change */
            if (present(m.lo) && m.change > -1) {
                out->lo = (1 + out->change) * (1 + m.lo) / (1 + m.change) - 1;
                out->hi = (1 + out->change) * (1 + m.hi) / (1 + m.change) - 1;
            }
            out->basis = LP_DIFF_BASIS_MEANS;
        }
    }
    judge(out, o->min_change, bad);
    return LP_OK;
}

static struct lp_diff_value single(double a, double b, enum lp_diff_basis basis,
                                   double min_change, int bad)
{
    struct lp_diff_value v = value(a, b, basis);
    judge(&v, min_change, bad);
    return v;
}

/* 0 (and the like) means "not measured" for these analysis fields */
static double nz(double x)
{
    return x > 0 ? x : NAN;
}

/* ---- a small hash index: 64-bit hashes to row numbers, equality checked by the caller ---- */

struct index {
    uint64_t *hash;
    size_t *row;       /* SIZE_MAX: empty */
    size_t cap, n;
};

static int index_grow(struct index *x)
{
    size_t cap = x->cap ? 2 * x->cap : 64;
    uint64_t *h = malloc(cap * sizeof *h);
    size_t *row = malloc(cap * sizeof *row);
    if (!h || !row) {
        free(h);
        free(row);
        return LP_ERR_NOMEM;
    }
    for (size_t i = 0; i < cap; i++)
        row[i] = SIZE_MAX;
    for (size_t i = 0; i < x->cap; i++) {
        if (x->row[i] == SIZE_MAX)
            continue;
        size_t s = x->hash[i] & (cap - 1);
        while (row[s] != SIZE_MAX)
            s = (s + 1) & (cap - 1);
        h[s] = x->hash[i];
        row[s] = x->row[i];
    }
    free(x->hash);
    free(x->row);
    x->hash = h;
    x->row = row;
    x->cap = cap;
    return LP_OK;
}

/* The row of hash H for which SAME(row, ARG) holds; else ADD is stored under H and returned
 * with *CREATED set. SIZE_MAX out of memory. */
static size_t index_find(struct index *x, uint64_t h, int (*same)(size_t row, const void *arg),
                         const void *arg, size_t add, int *created)
{
    *created = 0;
    if ((x->n + 1) * 2 > x->cap && index_grow(x) != LP_OK)
        return SIZE_MAX;
    size_t s = h & (x->cap - 1);
    for (; x->row[s] != SIZE_MAX; s = (s + 1) & (x->cap - 1))
        if (x->hash[s] == h && same(x->row[s], arg))
            return x->row[s];
    x->hash[s] = h;
    x->row[s] = add;
    x->n++;
    *created = 1;
    return add;
}

static void index_free(struct index *x)
{
    free(x->hash);
    free(x->row);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 0x100000001b3ULL;
    return h;
}
#define FNV0 0xcbf29ce484222325ULL

/* ---- stages ---- */

static int add_stage(struct lp_diff *d, const char *name, enum lp_stage_kind kind)
{
    struct lp_diff_stage *p = realloc(d->stages, (d->n_stages + 1) * sizeof *p);
    if (!p)
        return LP_ERR_NOMEM;
    d->stages = p;
    p += d->n_stages;
    memset(p, 0, sizeof *p);
    p->a = p->b = -1;
    p->kind = kind;
    if (!(p->name = strdup(name)))
        return LP_ERR_NOMEM;
    d->n_stages++;
    return LP_OK;
}

static int compared(const struct lp_stage_report *s)
{
    return s->occurrences > 0 && s->kind != LP_STAGE_KIND_WARMUP &&
           s->kind != LP_STAGE_KIND_OUTSIDE;
}

/* The stages of both runs matched by name; MAP[x][s]: run x's stage s in D, -1 none. */
static int match_stages(struct lp_diff *d, const struct lp_run *const run[2], int *map[2])
{
    for (int x = 0; x < 2; x++) {
        for (size_t s = 0; s < run[x]->n_stages; s++) {
            const struct lp_stage_report *st = &run[x]->stages[s];
            map[x][s] = -1;
            if (!compared(st))
                continue;
            size_t k = 0;
            while (k < d->n_stages && strcmp(d->stages[k].name, st->name))
                k++;
            if (k == d->n_stages && add_stage(d, st->name, st->kind) != LP_OK)
                return LP_ERR_NOMEM;
            if (x ? d->stages[k].b >= 0 : d->stages[k].a >= 0)
                continue; /* a name twice in one run: the first */
            *(x ? &d->stages[k].b : &d->stages[k].a) = (int)s;
            map[x][s] = (int)k;
        }
    }
    return LP_OK;
}

static double units(const struct lp_stage_report *s, int per_step)
{
    return per_step ? (double)s->steps : (double)s->occurrences;
}

/* A stage's figures of one value per run (NaN where not measured); the first three are work
 * over the wall time and take its interval. */
enum stage_figure {
    STAGE_FIGURE_TOKENS_S, STAGE_FIGURE_MFU, STAGE_FIGURE_MBU, STAGE_FIGURE_J_PER_TOKEN,
    STAGE_FIGURE_BUSY, STAGE_FIGURE_KERNELS, STAGE_FIGURE_GPU_NS, N_STAGE_FIGURES
};
static const int stage_figure_bad[N_STAGE_FIGURES] = {-1, -1, -1, 1, -1, 0, 1};

static double stage_figure(const struct lp_stage_report *s, enum stage_figure f, int per_step)
{
    double u = units(s, per_step);
    switch (f) {
    case STAGE_FIGURE_TOKENS_S: return nz(s->tokens_per_s);
    case STAGE_FIGURE_MFU: return s->has_util ? s->mfu : NAN;
    case STAGE_FIGURE_MBU: return s->has_util ? s->mbu : NAN;
    case STAGE_FIGURE_J_PER_TOKEN: return nz(s->j_per_token);
    case STAGE_FIGURE_BUSY: return s->busy_share;
    case STAGE_FIGURE_KERNELS:
        return isnan(s->kernels_per_occurrence) ? NAN : (double)s->kernels / u;
    case STAGE_FIGURE_GPU_NS: return nz((double)s->gpu_ns / u);
    default: return NAN;
    }
}

static struct lp_diff_value *stage_figure_value(struct lp_diff_stage *ds, enum stage_figure f)
{
    switch (f) {
    case STAGE_FIGURE_TOKENS_S: return &ds->tokens_s;
    case STAGE_FIGURE_MFU: return &ds->mfu;
    case STAGE_FIGURE_MBU: return &ds->mbu;
    case STAGE_FIGURE_J_PER_TOKEN: return &ds->j_per_token;
    case STAGE_FIGURE_BUSY: return &ds->busy_share;
    case STAGE_FIGURE_KERNELS: return &ds->kernels;
    default: return &ds->gpu_ns;
    }
}

static int stage_figures(struct lp_diff_stage *ds, const struct lp_run *ra, const struct lp_run *rb,
                         const struct lp_diff_options *o)
{
    const struct lp_stage_report *a = ds->a >= 0 ? &ra->stages[ds->a] : NULL;
    const struct lp_stage_report *b = ds->b >= 0 ? &rb->stages[ds->b] : NULL;
    double mc = o->min_change;
    ds->per_step = a && b && ds->kind == LP_STAGE_KIND_DECODE && a->steps > 0 && b->steps > 0;
    ds->units_a = a ? units(a, ds->per_step) : 0;
    ds->units_b = b ? units(b, ds->per_step) : 0;
    ds->wall = means_value(a ? a->wall.mean : NAN, a ? a->wall.std : 0, a ? (double)a->wall.n : 0,
                           b ? b->wall.mean : NAN, b ? b->wall.std : 0, b ? (double)b->wall.n : 0,
                           mc, 1);
    for (int q = 0; q < LP_DIFF_QUANTILES; q++)
        if (dist_value(&ds->step[q], a && a->step.n ? &a->step : NULL,
                       b && b->step.n ? &b->step : NULL, q, o, 1) != LP_OK)
            return LP_ERR_NOMEM;
    for (enum stage_figure f = 0; f < N_STAGE_FIGURES; f++) {
        struct lp_diff_value *v = stage_figure_value(ds, f);
        *v = value(a ? stage_figure(a, f, ds->per_step) : NAN,
                   b ? stage_figure(b, f, ds->per_step) : NAN,
                   f == STAGE_FIGURE_KERNELS ? LP_DIFF_BASIS_COUNTED : LP_DIFF_BASIS_SINGLE);
        /* work over the wall time: its noise is the wall time's, inverted (none known
           without the wall's interval: unsure) */
        if (f <= STAGE_FIGURE_MBU) {
            v->basis = LP_DIFF_BASIS_MEANS;
            v->n_a = ds->wall.n_a;
            v->n_b = ds->wall.n_b;
        }
        if (f <= STAGE_FIGURE_MBU && present(v->change) && present(ds->wall.lo) &&
            ds->wall.lo > -1 && ds->wall.hi > -1) {
            double w = 1 + ds->wall.change;
            v->lo = (1 + v->change) * w / (1 + ds->wall.hi) - 1;
            v->hi = (1 + v->change) * w / (1 + ds->wall.lo) - 1;
        }
        judge(v, mc, stage_figure_bad[f]);
    }
    return LP_OK;
}

/* ---- kernels by normalised name and stage ---- */

struct acc {
    uint64_t n;                   /* calls */
    lp_u128 sum, sq;              /* their durations' sum and squares', exact: the same in any
                                     order the kernels come in */
};

/* the mean duration of A's calls, 0 without any */
static double acc_mean(const struct acc *a)
{
    return a->n ? (double)((long double)a->sum / (long double)a->n) : 0;
}

/* the sample standard deviation of A's durations, from the exact sums: with sum = q n + r,
 * the squares about the mean are sq - q (sum + r) - r^2 / n, the first difference exact in
 * 128 bits (no precision lost to a large mean); through long double past them */
static double acc_std(const struct acc *a)
{
    if (a->n < 2)
        return 0;
    long double n = (long double)a->n, m2;
    lp_u128 q = a->sum / a->n, r = a->sum % a->n, qs;
    if (a->sq != LP_U128_MAX && a->sum != LP_U128_MAX &&
        !__builtin_mul_overflow(q, a->sum + r, &qs) && qs <= a->sq)
        m2 = (long double)(a->sq - qs) - (long double)r * (long double)r / n;
    else
        m2 = (long double)a->sq - (long double)a->sum * ((long double)a->sum / n);
    return m2 > 0 ? (double)sqrtl(m2 / (n - 1)) : 0;
}

struct krow {
    size_t key, stage;
    size_t group[2];              /* a group of that name in each run, SIZE_MAX none */
    struct acc acc[2];
};

struct kctx {
    char **keys;                  /* normalised names, by key */
    size_t n_keys;
    struct krow *rows;
    size_t n_rows, cap;
};

/* The demangled name without its parameter list. */
static char *normalised(const char *name)
{
    return strndup(name, lp_kernel_name_end(name));
}

struct key_probe {
    const struct kctx *k;
    const char *name;
};

static int same_key(size_t row, const void *arg)
{
    const struct key_probe *p = arg;
    return !strcmp(p->k->keys[row], p->name);
}

/* KEY_OF[x][g]: the key of run x's group g. */
static int kernel_keys(struct kctx *k, const struct lp_run *const run[2], size_t *key_of[2])
{
    struct index x = {0};
    int rc = LP_OK;
    size_t total = run[0]->n_names + run[1]->n_names;
    if (!(k->keys = calloc(total ? total : 1, sizeof *k->keys)))
        return LP_ERR_NOMEM;
    for (int r = 0; r < 2 && rc == LP_OK; r++) {
        for (size_t g = 0; g < run[r]->n_names && rc == LP_OK; g++) {
            char *name = normalised(run[r]->names[g]);
            if (!name) {
                rc = LP_ERR_NOMEM;
                break;
            }
            struct key_probe p = {k, name};
            int created;
            size_t row = index_find(&x, fnv(FNV0, name, strlen(name)), same_key, &p, k->n_keys,
                                    &created);
            if (row == SIZE_MAX) {
                free(name);
                rc = LP_ERR_NOMEM;
            } else if (created) {
                k->keys[k->n_keys++] = name;
            } else {
                free(name);
            }
            key_of[r][g] = row;
        }
    }
    index_free(&x);
    return rc;
}

struct row_probe {
    const struct kctx *k;
    size_t key, stage;
};

static int same_row(size_t row, const void *arg)
{
    const struct row_probe *p = arg;
    return p->k->rows[row].key == p->key && p->k->rows[row].stage == p->stage;
}

static int kernel_rows(struct kctx *k, const struct lp_run *const run[2], int *const map[2],
                       size_t *const key_of[2])
{
    struct index x = {0};
    for (int r = 0; r < 2; r++) {
        const struct lp_trace *t = run[r]->trace;
        for (size_t i = 0; i < t->n_kernels; i++) {
            uint32_t g = lp_run_kernel_group(run[r], i);
            int32_t s = lp_run_kernel_stage(run[r], i);
            if (s < 0 || (size_t)s >= run[r]->n_stages || map[r][s] < 0 || g >= run[r]->n_names)
                continue;
            struct row_probe p = {k, key_of[r][g], (size_t)map[r][s]};
            uint64_t h = fnv(fnv(FNV0, &p.key, sizeof p.key), &p.stage, sizeof p.stage);
            int created;
            if (k->n_rows == k->cap) {
                size_t cap = k->cap ? 2 * k->cap : 256;
                struct krow *q = realloc(k->rows, cap * sizeof *q);
                if (!q) {
                    index_free(&x);
                    return LP_ERR_NOMEM;
                }
                k->rows = q;
                k->cap = cap;
            }
            size_t row = index_find(&x, h, same_row, &p, k->n_rows, &created);
            if (row == SIZE_MAX) {
                index_free(&x);
                return LP_ERR_NOMEM;
            }
            struct krow *w = &k->rows[row];
            if (created) {
                memset(w, 0, sizeof *w);
                w->key = p.key;
                w->stage = p.stage;
                w->group[0] = w->group[1] = SIZE_MAX;
                k->n_rows++;
            }
            if (w->group[r] == SIZE_MAX || g < w->group[r]) /* the smallest, in any order */
                w->group[r] = g;
            const struct lp_kernel_rec *kr = &t->kernels[i];
            uint64_t end = lp_trace_kernel_end(t, kr), dur = end > kr->start ? end - kr->start : 0;
            struct acc *a = &w->acc[r];
            a->n++;
            a->sum = lp_sat_add_u128(a->sum, dur);
            a->sq = lp_sat_add_u128(a->sq, (lp_u128)dur * dur);
        }
    }
    index_free(&x);
    return LP_OK;
}

static double sort_key_abs(const struct lp_diff_value *v)
{
    double a = present(v->a) ? v->a : 0, b = present(v->b) ? v->b : 0;
    return fabs(b - a);
}

static int cmp_kernel(const void *x, const void *y)
{
    const struct lp_diff_kernel *a = x, *b = y;
    if (a->stage != b->stage)
        return a->stage < b->stage ? -1 : 1;
    double ka = sort_key_abs(&a->gpu_ns), kb = sort_key_abs(&b->gpu_ns);
    if (ka != kb)
        return ka > kb ? -1 : 1;
    return strcmp(a->name, b->name);
}

static enum lp_diff_status status_of(double a_calls, double b_calls,
                                     const struct lp_diff_value *x,
                                     const struct lp_diff_value *y)
{
    if (!(a_calls > 0))
        return LP_DIFF_STATUS_ADDED;
    if (!(b_calls > 0))
        return LP_DIFF_STATUS_REMOVED;
    return x->verdict == LP_DIFF_VERDICT_SAME && y->verdict == LP_DIFF_VERDICT_SAME
               ? LP_DIFF_STATUS_SAME
               : LP_DIFF_STATUS_CHANGED;
}

static void count_status(struct lp_diff_stage *s, enum lp_diff_status st)
{
    s->kernels_added += st == LP_DIFF_STATUS_ADDED;
    s->kernels_removed += st == LP_DIFF_STATUS_REMOVED;
    s->kernels_changed += st == LP_DIFF_STATUS_CHANGED;
}

static int diff_kernels(struct lp_diff *d, const struct lp_run *const run[2], int *const map[2])
{
    struct kctx k = {0};
    size_t *key_of[2] = {calloc(run[0]->n_names + 1, sizeof(size_t)),
                         calloc(run[1]->n_names + 1, sizeof(size_t))};
    int rc = LP_ERR_NOMEM;
    if (!key_of[0] || !key_of[1] || kernel_keys(&k, run, key_of) != LP_OK ||
        kernel_rows(&k, run, map, key_of) != LP_OK)
        goto done;
    if (!(d->kernels = calloc(k.n_rows ? k.n_rows : 1, sizeof *d->kernels)))
        goto done;
    double mc = d->opt.min_change;
    for (size_t i = 0; i < k.n_rows; i++) {
        const struct krow *w = &k.rows[i];
        struct lp_diff_stage *s = &d->stages[w->stage];
        struct lp_diff_kernel *o = &d->kernels[d->n_kernels++];
        int r = w->group[0] != SIZE_MAX ? 0 : 1;
        size_t g = w->group[r];
        o->stage = w->stage;
        o->cat = run[r]->cats[g];
        if (!(o->name = strdup(k.keys[w->key])) ||
            !(o->short_name = strdup(run[r]->short_names[g])))
            goto done;
        double ua = s->units_a > 0 ? s->units_a : NAN, ub = s->units_b > 0 ? s->units_b : NAN;
        double na = (double)w->acc[0].n, nb = (double)w->acc[1].n;
        double ca = na / ua, cb = nb / ub;
        double ma = acc_mean(&w->acc[0]), mb = acc_mean(&w->acc[1]);
        double sa = acc_std(&w->acc[0]), sb = acc_std(&w->acc[1]);
        /* absent in a run that has the stage: no calls, no time */
        o->calls = single(s->a >= 0 ? ca : NAN, s->b >= 0 ? cb : NAN, LP_DIFF_BASIS_COUNTED, mc, 0);
        o->mean_ns = means_value(ma, sa, na, mb, sb, nb, mc, 1);
        /* GPU time per unit: calls per unit (counted, exact) times the mean per call, whose
           interval it scales */
        o->gpu_ns = value(s->a >= 0 ? ca * ma : NAN, s->b >= 0 ? cb * mb : NAN,
                          LP_DIFF_BASIS_MEANS);
        o->gpu_ns.n_a = o->mean_ns.n_a;
        o->gpu_ns.n_b = o->mean_ns.n_b;
        if (ca > 0 && cb > 0 && present(o->mean_ns.lo)) {
            o->gpu_ns.lo = (1 + o->mean_ns.lo) * (cb / ca) - 1;
            o->gpu_ns.hi = (1 + o->mean_ns.hi) * (cb / ca) - 1;
        }
        judge(&o->gpu_ns, mc, 1);
        o->status = status_of(na, nb, &o->calls, &o->gpu_ns);
        count_status(s, o->status);
    }
    qsort(d->kernels, d->n_kernels, sizeof *d->kernels, cmp_kernel);
    rc = LP_OK;
done:
    for (size_t i = 0; i < k.n_keys; i++)
        free(k.keys[i]);
    free(k.keys);
    free(k.rows);
    free(key_of[0]);
    free(key_of[1]);
    return rc;
}

/* ---- GEMM shapes ---- */

struct gprobe {
    const struct lp_diff *d;
    const struct lp_gemm *g;
    size_t stage;
};

static int same_gemm(size_t row, const void *arg)
{
    const struct gprobe *p = arg;
    return p->d->gemms[row].stage == p->stage && lp_gemm_same_shape(&p->d->gemms[row].call, p->g);
}

static uint64_t gemm_hash(const struct lp_gemm *g, size_t stage)
{
    uint64_t f[] = {g->m, g->n, g->k, g->batch, g->transa, g->transb, g->a_type, g->b_type,
                    g->d_type, g->compute_type, g->epilogue, stage};
    return fnv(FNV0, f, sizeof f);
}

static int cmp_gemm(const void *x, const void *y)
{
    const struct lp_diff_gemm *a = x, *b = y;
    if (a->stage != b->stage)
        return a->stage < b->stage ? -1 : 1;
    double ta = (present(a->calls.a) && present(a->mean_ns.a) ? a->calls.a * a->mean_ns.a : 0) +
                (present(a->calls.b) && present(a->mean_ns.b) ? a->calls.b * a->mean_ns.b : 0);
    double tb = (present(b->calls.a) && present(b->mean_ns.a) ? b->calls.a * b->mean_ns.a : 0) +
                (present(b->calls.b) && present(b->mean_ns.b) ? b->calls.b * b->mean_ns.b : 0);
    if (ta != tb)
        return ta > tb ? -1 : 1;
    return lp_gemm_shape_cmp(&a->call, &b->call); /* rows absent or idle in both runs */
}

struct gacc {
    double calls, linked, gpu_ns, flops; /* flops of the linked calls */
};

static int diff_gemms(struct lp_diff *d, const struct lp_run *const run[2], int *const map[2])
{
    struct index x = {0};
    size_t total = run[0]->gemm.n_rows + run[1]->gemm.n_rows;
    struct gacc *acc[2] = {calloc(total + 1, sizeof **acc), calloc(total + 1, sizeof **acc)};
    d->gemms = calloc(total + 1, sizeof *d->gemms);
    int rc = LP_ERR_NOMEM;
    if (!acc[0] || !acc[1] || !d->gemms)
        goto done;
    for (int r = 0; r < 2; r++) {
        for (size_t i = 0; i < run[r]->gemm.n_rows; i++) {
            const struct lp_gemm_row *g = &run[r]->gemm.rows[i];
            if (g->stage < 0 || (size_t)g->stage >= run[r]->n_stages || map[r][g->stage] < 0)
                continue;
            struct gprobe p = {d, &g->call, (size_t)map[r][g->stage]};
            int created;
            size_t row = index_find(&x, gemm_hash(&g->call, p.stage), same_gemm, &p, d->n_gemms,
                                    &created);
            if (row == SIZE_MAX)
                goto done;
            if (created) {
                d->gemms[row].stage = p.stage;
                d->gemms[row].call = g->call;
                d->n_gemms++;
            }
            /* rows of one shape (eager calls, replays of captured ones) add up */
            struct gacc *w = &acc[r][row];
            w->calls += (double)g->calls;
            w->linked += (double)g->linked;
            w->gpu_ns += (double)g->gpu_ns;
            w->flops += g->flops_per_call * (double)g->linked;
        }
    }
    double mc = d->opt.min_change;
    for (size_t i = 0; i < d->n_gemms; i++) {
        struct lp_diff_gemm *o = &d->gemms[i];
        const struct lp_diff_stage *s = &d->stages[o->stage];
        const struct gacc *a = &acc[0][i], *b = &acc[1][i];
        double ca = s->a < 0 || !(s->units_a > 0) ? NAN : a->calls / s->units_a;
        double cb = s->b < 0 || !(s->units_b > 0) ? NAN : b->calls / s->units_b;
        o->calls = single(ca, cb, LP_DIFF_BASIS_COUNTED, mc, 0);
        o->mean_ns = single(a->linked > 0 ? nz(a->gpu_ns / a->linked) : NAN,
                            b->linked > 0 ? nz(b->gpu_ns / b->linked) : NAN,
                            LP_DIFF_BASIS_SINGLE, mc, 1);
        o->tflops = single(a->gpu_ns > 0 ? nz(a->flops / a->gpu_ns / 1e3) : NAN,
                           b->gpu_ns > 0 ? nz(b->flops / b->gpu_ns / 1e3) : NAN,
                           LP_DIFF_BASIS_SINGLE, mc, -1);
        o->status = status_of(a->calls, b->calls, &o->calls, &o->mean_ns);
    }
    qsort(d->gemms, d->n_gemms, sizeof *d->gemms, cmp_gemm);
    rc = LP_OK;
done:
    index_free(&x);
    free(acc[0]);
    free(acc[1]);
    return rc;
}

/* ---- operators ---- */

struct oprobe {
    const struct lp_diff *d;
    const char *name;
};

static int same_op(size_t row, const void *arg)
{
    const struct oprobe *p = arg;
    return !strcmp(p->d->ops[row].name, p->name);
}

static int cmp_op(const void *x, const void *y)
{
    const struct lp_diff_op *a = x, *b = y;
    double da = fabs((present(a->calls.b) && present(a->mean_ns.b) ? a->calls.b * a->mean_ns.b : 0) -
                     (present(a->calls.a) && present(a->mean_ns.a) ? a->calls.a * a->mean_ns.a : 0));
    double db = fabs((present(b->calls.b) && present(b->mean_ns.b) ? b->calls.b * b->mean_ns.b : 0) -
                     (present(b->calls.a) && present(b->mean_ns.a) ? b->calls.a * b->mean_ns.a : 0));
    if (da != db)
        return da > db ? -1 : 1;
    return strcmp(a->name, b->name);
}

static int diff_ops(struct lp_diff *d, const struct lp_run *const run[2])
{
    struct index x = {0};
    size_t total = run[0]->n_ops + run[1]->n_ops;
    const struct lp_op_row **rows[2];
    rows[0] = calloc(total + 1, sizeof **rows);
    rows[1] = calloc(total + 1, sizeof **rows);
    d->ops = calloc(total + 1, sizeof *d->ops);
    int rc = LP_ERR_NOMEM;
    if (!rows[0] || !rows[1] || !d->ops)
        goto done;
    for (int r = 0; r < 2; r++) {
        for (size_t i = 0; i < run[r]->n_ops; i++) {
            const struct lp_op_row *op = &run[r]->ops[i];
            struct oprobe p = {d, op->name};
            int created;
            size_t row = index_find(&x, fnv(FNV0, op->name, strlen(op->name)), same_op, &p,
                                    d->n_ops, &created);
            if (row == SIZE_MAX)
                goto done;
            if (created) {
                if (!(d->ops[row].name = strdup(op->name)))
                    goto done;
                d->n_ops++;
            }
            if (!rows[r][row])
                rows[r][row] = op;
        }
    }
    double mc = d->opt.min_change;
    int have[2] = {run[0]->n_ops > 0, run[1]->n_ops > 0};
    for (size_t i = 0; i < d->n_ops; i++) {
        struct lp_diff_op *o = &d->ops[i];
        const struct lp_op_row *a = rows[0][i], *b = rows[1][i];
        o->calls = single(have[0] ? (a ? (double)a->calls : 0) : NAN,
                          have[1] ? (b ? (double)b->calls : 0) : NAN, LP_DIFF_BASIS_COUNTED, mc, 0);
        o->mean_ns = single(a && a->calls ? (double)a->gpu_ns / (double)a->calls : NAN,
                            b && b->calls ? (double)b->gpu_ns / (double)b->calls : NAN,
                            LP_DIFF_BASIS_SINGLE, mc, 1);
        o->status = status_of(a ? (double)a->calls : 0, b ? (double)b->calls : 0, &o->calls,
                              &o->mean_ns);
    }
    qsort(d->ops, d->n_ops, sizeof *d->ops, cmp_op);
    rc = LP_OK;
done:
    index_free(&x);
    free(rows[0]);
    free(rows[1]);
    return rc;
}

/* ---- what makes the comparison doubtful ---- */

struct wshape {
    uint64_t w, k;
};

static int cmp_wshape(const void *x, const void *y)
{
    const struct wshape *a = x, *b = y;
    if (a->w != b->w)
        return a->w < b->w ? -1 : 1;
    return a->k < b->k ? -1 : a->k > b->k;
}

/* The weight shapes (the larger of m and n, and k) of R's GEMM rows, sorted and unique. */
static struct wshape *weight_shapes(const struct lp_run *r, size_t *n)
{
    struct wshape *v = malloc((r->gemm.n_rows + 1) * sizeof *v);
    *n = 0;
    if (!v)
        return NULL;
    for (size_t i = 0; i < r->gemm.n_rows; i++) {
        const struct lp_gemm *g = &r->gemm.rows[i].call;
        v[(*n)++] = (struct wshape){g->m > g->n ? g->m : g->n, g->k};
    }
    qsort(v, *n, sizeof *v, cmp_wshape);
    size_t u = 0;
    for (size_t i = 0; i < *n; i++)
        if (!u || cmp_wshape(&v[u - 1], &v[i]))
            v[u++] = v[i];
    *n = u;
    return v;
}

/* The name of the GPU most of T's kernels ran on (without kernels: of its first device) into
 * *OUT; NULL when the trace names none. */
static int gpu_name(const struct lp_trace *t, char **out)
{
    int dev = lp_kernel_device(t);
    for (size_t i = 0; i < t->n_devices; i++) {
        const char *name = lp_trace_str(t, t->devices[i].name);
        if ((dev < 0 || t->devices[i].id == (uint32_t)dev) && name && *name)
            return (*out = strdup(name)) ? LP_OK : LP_ERR_NOMEM;
    }
    return LP_OK;
}

static int warnings(struct lp_diff *d, const struct lp_run *const run[2])
{
    for (int x = 0; x < 2; x++) {
        if (gpu_name(run[x]->trace, &d->gpu[x]) != LP_OK)
            return LP_ERR_NOMEM;
        if (run[x]->opt.command && !(d->command[x] = strdup(run[x]->opt.command)))
            return LP_ERR_NOMEM;
        if (run[x]->lost_records || run[x]->losses_uncounted)
            d->warnings |= LP_DIFF_WARN_LOSSES;
        if (!run[x]->kernels_recorded)
            d->warnings |= LP_DIFF_WARN_NO_KERNELS;
        if (run[x]->trace->altered)
            d->warnings |= LP_DIFF_WARN_ALTERED;
        if (run[x]->gemm.unlisted.shapes)
            d->warnings |= LP_DIFF_WARN_UNLISTED;
    }
    if (d->gpu[0] && d->gpu[1] && strcmp(d->gpu[0], d->gpu[1]))
        d->warnings |= LP_DIFF_WARN_GPU;
    if (run[0]->capture.windowed != run[1]->capture.windowed)
        d->warnings |= LP_DIFF_WARN_WINDOWS;
    size_t na, nb;
    struct wshape *a = weight_shapes(run[0], &na), *b = weight_shapes(run[1], &nb);
    if (!a || !b) {
        free(a);
        free(b);
        return LP_ERR_NOMEM;
    }
    size_t both = 0;
    for (size_t i = 0, j = 0; i < na && j < nb;) {
        int c = cmp_wshape(&a[i], &b[j]);
        both += c == 0;
        i += c <= 0;
        j += c >= 0;
    }
    d->shapes_shared = na && nb ? (double)both / (double)(na + nb - both) : NAN;
    if (na && nb && d->shapes_shared < 0.5)
        d->warnings |= LP_DIFF_WARN_SHAPES;
    free(a);
    free(b);
    return LP_OK;
}

/* ---- the comparison ---- */

int lp_diff_build(const struct lp_run *a, const struct lp_run *b,
                  const struct lp_diff_options *opt, struct lp_diff *out)
{
    memset(out, 0, sizeof *out);
    out->opt = opt ? *opt : (struct lp_diff_options){0};
    if (!(out->opt.min_change > 0))
        out->opt.min_change = DEFAULT_MIN_CHANGE;
    if (!out->opt.seed)
        out->opt.seed = DEFAULT_SEED;
    const struct lp_run *const run[2] = {a, b};
    int *map[2] = {malloc((a->n_stages + 1) * sizeof(int)), malloc((b->n_stages + 1) * sizeof(int))};
    int rc = LP_ERR_NOMEM;
    if (!map[0] || !map[1] || warnings(out, run) != LP_OK || match_stages(out, run, map) != LP_OK)
        goto done;
    const struct lp_diff_options *o = &out->opt;
    for (int q = 0; q < LP_DIFF_QUANTILES; q++)
        if (dist_value(&out->ttft[q], &a->llm.ttft, &b->llm.ttft, q, o, 1) != LP_OK ||
            dist_value(&out->tpot[q], &a->llm.tpot, &b->llm.tpot, q, o, 1) != LP_OK ||
            dist_value(&out->itl[q], &a->llm.itl, &b->llm.itl, q, o, 1) != LP_OK)
            goto done;
    out->mfu = single(a->util.has ? a->util.mfu : NAN, b->util.has ? b->util.mfu : NAN,
                      LP_DIFF_BASIS_SINGLE, o->min_change, -1);
    out->mbu = single(a->util.has ? a->util.mbu : NAN, b->util.has ? b->util.mbu : NAN,
                      LP_DIFF_BASIS_SINGLE, o->min_change, -1);
    for (size_t s = 0; s < out->n_stages; s++)
        if (stage_figures(&out->stages[s], a, b, o) != LP_OK)
            goto done;
    if (diff_kernels(out, run, map) != LP_OK || diff_gemms(out, run, map) != LP_OK ||
        diff_ops(out, run) != LP_OK)
        goto done;
    rc = LP_OK;
done:
    free(map[0]);
    free(map[1]);
    if (rc != LP_OK)
        lp_diff_free(out);
    return rc;
}

void lp_diff_free(struct lp_diff *d)
{
    if (!d)
        return;
    for (int x = 0; x < 2; x++) {
        free(d->gpu[x]);
        free(d->command[x]);
    }
    for (size_t i = 0; d->stages && i < d->n_stages; i++)
        free(d->stages[i].name);
    free(d->stages);
    for (size_t i = 0; d->kernels && i < d->n_kernels; i++) {
        free(d->kernels[i].name);
        free(d->kernels[i].short_name);
    }
    free(d->kernels);
    free(d->gemms);
    for (size_t i = 0; d->ops && i < d->n_ops; i++)
        free(d->ops[i].name);
    free(d->ops);
    free(d->checks);
    memset(d, 0, sizeof *d);
}

/* ---- gate rules ---- */

/* The figures a rule can name: run figures first (STAGE ""), then a stage's. */
enum figure_kind { FIGURE_RUN_DIST, FIGURE_RUN, FIGURE_STAGE_DIST, FIGURE_STAGE };
static const struct {
    const char *name;
    enum figure_kind kind;
    size_t off;                   /* of the value (or the first quantile's) */
    enum lp_diff_unit unit;
} figures[] = {
    {"ttft", FIGURE_RUN_DIST, offsetof(struct lp_diff, ttft), LP_DIFF_UNIT_NS},
    {"tpot", FIGURE_RUN_DIST, offsetof(struct lp_diff, tpot), LP_DIFF_UNIT_NS},
    {"itl", FIGURE_RUN_DIST, offsetof(struct lp_diff, itl), LP_DIFF_UNIT_NS},
    {"mfu", FIGURE_RUN, offsetof(struct lp_diff, mfu), LP_DIFF_UNIT_SHARE},
    {"mbu", FIGURE_RUN, offsetof(struct lp_diff, mbu), LP_DIFF_UNIT_SHARE},
    {"wall", FIGURE_STAGE, offsetof(struct lp_diff_stage, wall), LP_DIFF_UNIT_NS},
    {"step", FIGURE_STAGE_DIST, offsetof(struct lp_diff_stage, step), LP_DIFF_UNIT_NS},
    {"tokens_s", FIGURE_STAGE, offsetof(struct lp_diff_stage, tokens_s), LP_DIFF_UNIT_TOKENS_S},
    {"mfu", FIGURE_STAGE, offsetof(struct lp_diff_stage, mfu), LP_DIFF_UNIT_SHARE},
    {"mbu", FIGURE_STAGE, offsetof(struct lp_diff_stage, mbu), LP_DIFF_UNIT_SHARE},
    {"j_per_token", FIGURE_STAGE, offsetof(struct lp_diff_stage, j_per_token), LP_DIFF_UNIT_J},
    {"busy", FIGURE_STAGE, offsetof(struct lp_diff_stage, busy_share), LP_DIFF_UNIT_SHARE},
    {"kernels", FIGURE_STAGE, offsetof(struct lp_diff_stage, kernels), LP_DIFF_UNIT_COUNT},
    {"gpu_time", FIGURE_STAGE, offsetof(struct lp_diff_stage, gpu_ns), LP_DIFF_UNIT_NS},
};
#define N_FIGURES (sizeof figures / sizeof *figures)

enum lp_diff_unit lp_diff_rule_unit(const struct lp_diff_rule *r)
{
    return r->figure >= 0 && (size_t)r->figure < N_FIGURES ? figures[r->figure].unit
                                                          : LP_DIFF_UNIT_NS;
}

/* Finds FIGURE[.pXX] in TEXT[0..LEN) among the run's (STAGE 0) or a stage's figures. */
static int find_figure(const char *text, size_t len, int stage, struct lp_diff_rule *r)
{
    const char *dot = memchr(text, '.', len);
    size_t name_len = dot ? (size_t)(dot - text) : len;
    r->quantile = 0;
    for (size_t i = 0; i < N_FIGURES; i++) {
        int dist = figures[i].kind == FIGURE_RUN_DIST || figures[i].kind == FIGURE_STAGE_DIST;
        int of_stage = figures[i].kind == FIGURE_STAGE || figures[i].kind == FIGURE_STAGE_DIST;
        if (of_stage != stage || strlen(figures[i].name) != name_len ||
            strncmp(figures[i].name, text, name_len))
            continue;
        if (dot) {
            size_t q = len - name_len - 1;
            if (!dist)
                return -1;
            if (q == 3 && !strncmp(dot + 1, "p50", 3))
                r->quantile = 0;
            else if (q == 3 && !strncmp(dot + 1, "p90", 3))
                r->quantile = 1;
            else if (q == 3 && !strncmp(dot + 1, "p99", 3))
                r->quantile = 2;
            else
                return -1;
        }
        r->figure = (int)i;
        return 0;
    }
    return -1;
}

int lp_diff_rule_parse(const char *text, struct lp_diff_rule *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->text = text;
    const char *op = text ? strpbrk(text, "<>") : NULL;
    if (!op || op == text) {
        snprintf(err, errlen, "rule '%s': expected METRIC>+N%% or METRIC<-N%%, e.g. "
                 "'tpot>+5%%' or 'decode.tokens_s<-3%%'", text ? text : "");
        return LP_ERR_ARG;
    }
    r->up = *op == '>';
    const char *num = op + 1;
    if ((*num == '+' && !r->up) || (*num == '-' && r->up)) {
        snprintf(err, errlen, "rule '%s': '%c' takes a %s limit (%s), not '%c'", text, *op,
                 r->up ? "rise" : "fall", r->up ? "+N%" : "-N%", *num);
        return LP_ERR_ARG;
    }
    if (*num == '+' || *num == '-')
        num++;
    char *end;
    double pct = strtod(num, &end);
    if (end == num || strcmp(end, "%") || !(pct >= 0) || pct > 1e6 || isinf(pct)) {
        snprintf(err, errlen, "rule '%s': the limit is a percentage with its sign, like "
                 "+5%% or -3%%", text);
        return LP_ERR_ARG;
    }
    r->limit = (r->up ? 1 : -1) * pct / 100;
    /* METRIC: a run figure, or STAGE.FIGURE (a stage name may hold dots: the figure is
       found from the end) */
    size_t len = (size_t)(op - text);
    if (find_figure(text, len, 0, r) == 0)
        return LP_OK;
    for (size_t i = len; i-- > 0;) {
        if (text[i] != '.' || i == 0)
            continue;
        if (find_figure(text + i + 1, len - i - 1, 1, r) == 0) {
            if (i >= sizeof r->stage) {
                snprintf(err, errlen, "rule '%s': the stage name is too long", text);
                return LP_ERR_ARG;
            }
            memcpy(r->stage, text, i);
            r->stage[i] = 0;
            return LP_OK;
        }
    }
    snprintf(err, errlen, "rule '%s': unknown metric '%.*s': ttft, tpot, itl (.p50, .p90, "
             ".p99), mfu, mbu, or STAGE.FIGURE with FIGURE wall, step (.p90 ...), tokens_s, "
             "mfu, mbu, j_per_token, busy, kernels or gpu_time (e.g. decode.tokens_s)",
             text, (int)len, text);
    return LP_ERR_ARG;
}

static enum lp_diff_rule_result check(const struct lp_diff *d, const struct lp_diff_rule *r,
                                      const struct lp_diff_value **v)
{
    *v = NULL;
    if (r->figure < 0 || (size_t)r->figure >= N_FIGURES)
        return LP_DIFF_RULE_MISSING;
    const char *base = (const char *)d;
    enum figure_kind kind = figures[r->figure].kind;
    if (kind == FIGURE_STAGE || kind == FIGURE_STAGE_DIST) {
        size_t s = 0;
        while (s < d->n_stages && strcmp(d->stages[s].name, r->stage))
            s++;
        if (s == d->n_stages)
            return LP_DIFF_RULE_MISSING;
        base = (const char *)&d->stages[s];
    }
    const struct lp_diff_value *x = (const struct lp_diff_value *)(base + figures[r->figure].off);
    if (kind == FIGURE_RUN_DIST || kind == FIGURE_STAGE_DIST)
        x += r->quantile;
    *v = x;
    if (x->verdict == LP_DIFF_VERDICT_MISSING)
        return LP_DIFF_RULE_MISSING;
    /* from zero: any rise is past a rise's limit, no fall is possible */
    int past = x->a == 0 ? r->up && x->b > 0
               : r->up   ? x->change > r->limit
                         : x->change < r->limit;
    if (!past)
        return LP_DIFF_RULE_PASSED;
    if (x->verdict == LP_DIFF_VERDICT_UNSURE)
        return LP_DIFF_RULE_UNSURE;
    return x->verdict == (r->up ? LP_DIFF_VERDICT_HIGHER : LP_DIFF_VERDICT_LOWER)
               ? LP_DIFF_RULE_FAILED
               : LP_DIFF_RULE_NOISE;
}

int lp_diff_gate(struct lp_diff *d, const struct lp_diff_rule *rules, size_t n)
{
    struct lp_diff_check *c = calloc(n ? n : 1, sizeof *c);
    if (!c)
        return LP_ERR_NOMEM;
    free(d->checks);
    d->checks = c;
    d->n_checks = n;
    d->failed = 0;
    for (size_t i = 0; i < n; i++) {
        c[i].rule = rules[i];
        c[i].result = check(d, &rules[i], &c[i].value);
        d->failed += c[i].result == LP_DIFF_RULE_FAILED || c[i].result == LP_DIFF_RULE_MISSING ||
                     c[i].result == LP_DIFF_RULE_UNSURE;
    }
    return LP_OK;
}
