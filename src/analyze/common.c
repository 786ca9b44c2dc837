/* What every analysis pass shares: sorting, statistics and distributions, comparators, the
 * stage of an occurrence, and the run's notes. No pass logic lives here, so the passes and
 * the orchestrator (run.c) depend on this file and never on each other in a circle. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "run_internal.h"

void lp_sort_kv(struct lp_kv *v, struct lp_kv *tmp, size_t n)
{
    if (n < 2)
        return;
    uint64_t diff = 0;
    int sorted = 1;
    for (size_t i = 1; i < n; i++) {
        diff |= v[i].key ^ v[0].key;
        sorted &= v[i - 1].key <= v[i].key;
    }
    if (sorted)
        return; /* records mostly arrive in time order */
    struct lp_kv *src = v, *dst = tmp;
    for (int shift = 0; shift < 64; shift += 8) {
        if (((diff >> shift) & 0xff) == 0)
            continue; /* every key has the same byte here */
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++)
            count[((src[i].key >> shift) & 0xff) + 1]++;
        for (int b = 0; b < 256; b++)
            count[b + 1] += count[b];
        for (size_t i = 0; i < n; i++)
            dst[count[(src[i].key >> shift) & 0xff]++] = src[i];
        struct lp_kv *x = src;
        src = dst;
        dst = x;
    }
    if (src != v)
        memcpy(v, src, n * sizeof *v);
}

void lp_sort_u64(uint64_t *v, uint64_t *tmp, size_t n)
{
    uint64_t diff = 0;
    int sorted = 1;
    for (size_t i = 1; i < n; i++) {
        diff |= v[i] ^ v[0];
        sorted &= v[i - 1] <= v[i];
    }
    if (sorted)
        return;
    if (n <= 64) { /* a few: by insertion */
        for (size_t i = 1; i < n; i++) {
            uint64_t x = v[i];
            size_t j = i;
            for (; j > 0 && x < v[j - 1]; j--)
                v[j] = v[j - 1];
            v[j] = x;
        }
        return;
    }
    uint64_t *src = v, *dst = tmp;
    for (int shift = 0; shift < 64; shift += 8) {
        if (((diff >> shift) & 0xff) == 0)
            continue;
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++)
            count[((src[i] >> shift) & 0xff) + 1]++;
        for (int b = 0; b < 256; b++)
            count[b + 1] += count[b];
        for (size_t i = 0; i < n; i++)
            dst[count[(src[i] >> shift) & 0xff]++] = src[i];
        uint64_t *x = src;
        src = dst;
        dst = x;
    }
    if (src != v)
        memcpy(v, src, n * sizeof *v);
}

/* (key, val) of X before Y's */
static int kv_less(const struct lp_kv *x, const struct lp_kv *y)
{
    return x->key < y->key || (x->key == y->key && x->val < y->val);
}

/* Byte D of (key, val), D = 0 the key's highest, 15 the value's lowest */
static unsigned kv_byte(const struct lp_kv *x, int d)
{
    return (unsigned)((d < 8 ? x->key >> (56 - 8 * d) : x->val >> (120 - 8 * d)) & 0xff);
}

static int u64_less(const uint64_t *x, const uint64_t *y)
{
    return *x < *y;
}

/* Byte D of X, D = 0 its highest */
static unsigned u64_byte(const uint64_t *x, int d)
{
    return (unsigned)((*x >> (56 - 8 * d)) & 0xff);
}

/* American flag sort of N elements of type T: by byte D (BYTE), the buckets in place, then
 * each bucket by the next byte, down to byte LIMIT; a few by insertion (LESS) */
#define FLAG_SORT(name, T, BYTE, LESS)                                                          \
    static void name(T *v, size_t n, int d, int limit)                                         \
    {                                                                                          \
        while (n > 32 && d < limit) {                                                          \
            size_t count[256] = {0}, next[256], end[256];                                      \
            for (size_t i = 0; i < n; i++)                                                     \
                count[BYTE(&v[i], d)]++;                                                       \
            size_t at = 0;                                                                     \
            int buckets = 0;                                                                   \
            for (int b = 0; b < 256; b++) {                                                    \
                next[b] = at;                                                                  \
                at += count[b];                                                                \
                end[b] = at;                                                                   \
                buckets += count[b] != 0;                                                      \
            }                                                                                  \
            if (buckets > 1)                                                                   \
                for (int b = 0; b < 256; b++)                                                  \
                    while (next[b] < end[b]) { /* cycle each misplaced entry to its bucket */  \
                        T x = v[next[b]];                                                      \
                        unsigned c = BYTE(&x, d);                                              \
                        while (c != (unsigned)b) {                                             \
                            T y = v[next[c]];                                                  \
                            v[next[c]++] = x;                                                  \
                            x = y;                                                             \
                            c = BYTE(&x, d);                                                   \
                        }                                                                      \
                        v[next[b]++] = x;                                                      \
                    }                                                                          \
            if (buckets == 1) { /* every entry has this byte: the next one, no recursion */    \
                d++;                                                                           \
                continue;                                                                      \
            }                                                                                  \
            for (int b = 0; b < 256; b++)                                                      \
                if (count[b] > 1)                                                              \
                    name(v + end[b] - count[b], count[b], d + 1, limit);                       \
            return;                                                                            \
        }                                                                                      \
        if (d >= limit)                                                                        \
            return;                                                                            \
        for (size_t i = 1; i < n; i++) {                                                       \
            T x = v[i];                                                                        \
            size_t j = i;                                                                      \
            for (; j > 0 && LESS(&x, &v[j - 1]); j--)                                          \
                v[j] = v[j - 1];                                                               \
            v[j] = x;                                                                          \
        }                                                                                      \
    }

FLAG_SORT(flag_sort, struct lp_kv, kv_byte, kv_less)
FLAG_SORT(flag_sort_u64, uint64_t, u64_byte, u64_less)

void lp_sort_kv_inplace(struct lp_kv *v, size_t n)
{
    int sorted = 1;
    for (size_t i = 1; i < n && sorted; i++)
        sorted = !kv_less(&v[i], &v[i - 1]);
    if (!sorted)
        flag_sort(v, n, 0, 16);
}

void lp_group_kv(struct lp_kv *v, size_t n, int key_bytes)
{
    int grouped = 1;
    for (size_t i = 1; i < n && grouped; i++)
        grouped = v[i].key >= v[i - 1].key;
    if (!grouped)
        flag_sort(v, n, 0, key_bytes < 8 ? key_bytes : 8);
}

/* NAME: the selection over values of type T, sorted by CMP past 64 rounds */
#define SELECT(name, T, cmp)                                                                   \
    static int cmp(const void *a, const void *b)                                               \
    {                                                                                          \
        T x = *(const T *)a, y = *(const T *)b;                                                \
        return (x > y) - (x < y);                                                              \
    }                                                                                          \
    T name(T *v, size_t n, size_t k)                                                           \
    {                                                                                          \
        size_t lo = 0, hi = n - 1;                                                             \
        for (int round = 0; lo < hi; round++) {                                                \
            if (round == 64) { /* an input that defeats the median of three */                 \
                qsort(v + lo, hi - lo + 1, sizeof *v, cmp);                                    \
                break;                                                                         \
            }                                                                                  \
            size_t mid = lo + (hi - lo) / 2;                                                   \
            T a = v[lo], b = v[mid], c = v[hi];                                                \
            T pivot = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);       \
            size_t i = lo, j = hi;                                                             \
            while (i <= j) {                                                                   \
                while (v[i] < pivot)                                                           \
                    i++;                                                                       \
                while (v[j] > pivot)                                                           \
                    j--;                                                                       \
                if (i <= j) {                                                                  \
                    T x = v[i];                                                                \
                    v[i++] = v[j];                                                             \
                    v[j] = x;                                                                  \
                    if (j-- == 0)                                                              \
                        break;                                                                 \
                }                                                                              \
            }                                                                                  \
            /* now V[lo..j] <= pivot <= V[i..hi], and V(j..i) equal the pivot */               \
            if (k <= j && j != SIZE_MAX)                                                       \
                hi = j;                                                                        \
            else if (k >= i)                                                                   \
                lo = i;                                                                        \
            else                                                                               \
                break;                                                                         \
        }                                                                                      \
        return v[k];                                                                           \
    }

SELECT(lp_select_u64, uint64_t, cmp_u64)
SELECT(lp_select_u32, uint32_t, cmp_u32)

static size_t u64map_home(uint64_t key, size_t cap)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

uint64_t *lp_u64map_at(struct lp_u64map *m, uint64_t key, int *fresh)
{
    if (2 * (m->n + 1) > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        uint64_t *k = malloc(cap * sizeof *k), *v = calloc(cap, sizeof *v);
        if (!k || !v) {
            free(k);
            free(v);
            return NULL;
        }
        memset(k, 0xff, cap * sizeof *k);
        for (size_t i = 0; i < m->cap; i++) {
            if (m->key[i] == UINT64_MAX)
                continue;
            size_t s = u64map_home(m->key[i], cap);
            while (k[s] != UINT64_MAX)
                s = (s + 1) & (cap - 1);
            k[s] = m->key[i];
            v[s] = m->val[i];
        }
        free(m->key);
        free(m->val);
        m->key = k;
        m->val = v;
        m->cap = cap;
    }
    size_t s = u64map_home(key, m->cap);
    while (m->key[s] != UINT64_MAX && m->key[s] != key)
        s = (s + 1) & (m->cap - 1);
    if (m->key[s] == UINT64_MAX) {
        m->key[s] = key;
        m->n++;
        if (fresh)
            *fresh = 1;
    }
    return &m->val[s];
}

void lp_u64map_free(struct lp_u64map *m)
{
    free(m->key);
    free(m->val);
    memset(m, 0, sizeof *m);
}

void lp_group_u64(uint64_t *v, size_t n, int key_bytes)
{
    key_bytes = key_bytes < 8 ? key_bytes : 8;
    int shift = 64 - 8 * key_bytes, grouped = 1;
    for (size_t i = 1; i < n && grouped && shift < 64; i++)
        grouped = v[i] >> shift >= v[i - 1] >> shift;
    if (!grouped)
        flag_sort_u64(v, n, 0, key_bytes);
}

void lp_stat_compute(struct lp_stat *s, const double *v, size_t n)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    if (n == 0)
        return;
    s->min = v[0];
    s->max = v[0];
    for (size_t i = 0; i < n; i++) {
        s->total += v[i];
        if (v[i] < s->min)
            s->min = v[i];
        if (v[i] > s->max)
            s->max = v[i];
    }
    s->mean = s->total / (double)n;
    if (n > 1) {
        double ss = 0;
        for (size_t i = 0; i < n; i++)
            ss += (v[i] - s->mean) * (v[i] - s->mean);
        s->std = sqrt(ss / (double)(n - 1)); /* sample standard deviation */
    }
    s->cv = s->mean > 0 ? s->std / s->mean : 0;
}

size_t lp_count_until(const void *v, size_t n, size_t size, size_t offset, uint64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t x;
        memcpy(&x, (const char *)v + mid * size + offset, sizeof x);
        if (x <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int lp_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int lp_cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

int lp_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int lp_occ_reserve(struct lp_run_ctx *c, size_t n)
{
    if (n <= c->occ_cap)
        return LP_OK;
    size_t cap = c->occ_cap ? c->occ_cap : 64;
    while (cap < n)
        cap *= 2;
    struct lp_occ *p = realloc(c->occ, cap * sizeof *p);
    if (!p)
        return LP_ERR_NOMEM;
    c->occ = p;
    c->occ_cap = cap;
    return LP_OK;
}

enum lp_stage_kind lp_occ_kind(const struct lp_run_ctx *c, const struct lp_occ *o)
{
    return c->r->stages[o->stage].kind;
}

double lp_quantile_sorted(const double *v, size_t n, double q)
{
    double x = q * (double)(n - 1);
    size_t i = (size_t)x;
    return i + 1 < n ? v[i] + (x - (double)i) * (v[i + 1] - v[i]) : v[n - 1];
}

int lp_kernel_device(const struct lp_trace *t)
{
    size_t count[64] = {0};
    int best = -1;
    for (size_t i = 0; i < t->n_kernels; i++) {
        uint32_t d = lp_trace_kernel_config(t, &t->kernels[i])->device;
        if (d < 64)
            count[d]++;
    }
    for (int d = 0; d < 64; d++) /* equal counts: the lowest device, in any order */
        if (count[d] && (best < 0 || count[d] > count[best]))
            best = d;
    return best;
}

int lp_dist_compute(struct lp_dist *d, double *v, size_t n)
{
    memset(d, 0, sizeof *d);
    if (n == 0)
        return LP_OK;
    if (!(d->v = malloc(n * sizeof *d->v)))
        return LP_ERR_NOMEM;
    memcpy(d->v, v, n * sizeof *v);
    d->n = n;
    qsort(v, n, sizeof *v, lp_cmp_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    d->mean = sum / (double)n;
    d->min = v[0];
    d->max = v[n - 1];
    d->p50 = lp_quantile_sorted(v, n, 0.50);
    d->p90 = lp_quantile_sorted(v, n, 0.90);
    d->p99 = lp_quantile_sorted(v, n, 0.99);
    return LP_OK;
}

void lp_dist_free(struct lp_dist *d)
{
    free(d->v);
    d->v = NULL;
}

int lp_run_note(struct lp_run *r, enum lp_note_code code, int stage, int64_t count, int64_t of,
                double value)
{
    struct lp_note *p = realloc(r->notes, (r->n_notes + 1) * sizeof *p);
    if (!p)
        return LP_ERR_NOMEM;
    r->notes = p;
    p[r->n_notes++] = (struct lp_note){code, stage, count, of, value};
    return LP_OK;
}

static const char *const stage_kind_names[] = {
    [LP_STAGE_KIND_PREFILL] = "prefill", [LP_STAGE_KIND_DECODE] = "decode",
    [LP_STAGE_KIND_VISION] = "vision",   [LP_STAGE_KIND_OTHER] = "other",
    [LP_STAGE_KIND_RUN] = "run",         [LP_STAGE_KIND_WARMUP] = "warmup",
    [LP_STAGE_KIND_OUTSIDE] = "outside",
};

const char *lp_stage_kind_name(enum lp_stage_kind k)
{
    return (unsigned)k < sizeof stage_kind_names / sizeof *stage_kind_names ? stage_kind_names[k]
                                                                           : "other";
}

void lp_run_notes_free(struct lp_run *r)
{
    free(r->notes);
}

int lp_stage_kind_measured(enum lp_stage_kind k)
{
    return k != LP_STAGE_KIND_WARMUP && k != LP_STAGE_KIND_OUTSIDE;
}

int lp_stage_measured(const struct lp_stage_report *s)
{
    return lp_stage_kind_measured(s->kind);
}
