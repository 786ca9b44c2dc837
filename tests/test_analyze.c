/* NVTX range pairing and the trace summary, on synthetic traces for the edge cases:
 * nesting, ranges closed on another thread, unmatched ends, unclosed starts, records
 * out of time order; a summary of 100,000 differently named steps; the sorts; the kernel
 * rows' statistics, packed and (durations of days) through pairs, exact in any order; a
 * host gap's CUDA calls with the calls in start order and not; copies and sets at the
 * clock's last nanosecond. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llmprof/analyze.h"
#include "../src/analyze/run_internal.h" /* the sorts */
#include "tracebuild.h"

struct mk {
    uint64_t ts;
    uint32_t id, flags, thread;
    const char *name;
};

/* Writes MARKERS (in the order given) and KERNELS/APIS into a trace and reads it back. */
static struct lp_trace *build(const struct mk *markers, size_t n, const struct lp_kernel *kernels,
                              size_t nk, const struct lp_api *apis, size_t na)
{
    char path[] = "/tmp/lp_test_analyze_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    struct lp_trace_writer *w;
    char err[256];
    assert_int_equal(lp_trace_writer_open(&w, path, NULL, err, sizeof err), LP_OK);
    for (size_t i = 0; i < n; i++) {
        struct lp_record r = {.type = LP_REC_MARKER};
        r.u.marker = (struct lp_marker){.timestamp = markers[i].ts, .id = markers[i].id,
                                        .flags = markers[i].flags, .thread = markers[i].thread,
                                        .name = markers[i].name ? lp_trace_writer_intern(w, markers[i].name) : 0};
        assert_int_equal(lp_trace_writer_add(w, &r), LP_OK);
    }
    for (size_t i = 0; i < nk; i++) {
        struct lp_record r = {.type = LP_REC_KERNEL, .u.kernel = kernels[i]};
        assert_int_equal(lp_trace_writer_add(w, &r), LP_OK);
    }
    for (size_t i = 0; i < na; i++) {
        struct lp_record r = {.type = LP_REC_API, .u.api = apis[i]};
        assert_int_equal(lp_trace_writer_add(w, &r), LP_OK);
    }
    assert_int_equal(lp_trace_writer_close(w), LP_OK);
    struct lp_trace *t;
    assert_int_equal(lp_trace_read(&t, path, err, sizeof err), LP_OK);
    unlink(path);
    return t;
}

#define S LP_MARKER_FLAG_START
#define E LP_MARKER_FLAG_END

static const struct lp_range *named(const struct lp_trace *t, const struct lp_ranges *r,
                                    const char *name)
{
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(lp_trace_str(t, r->v[i].name), name))
            return &r->v[i];
    return NULL;
}

static void test_nesting_and_threads(void **state)
{
    (void)state;
    /* thread 1: outer [10,100] > inner [20,30], inner2 [40,50] > deepest [41,42];
     * thread 2: other [15,25]; out of time order on purpose */
    const struct mk m[] = {
        {40, 4, S, 1, "inner2"}, {10, 1, S, 1, "outer"},  {20, 2, S, 1, "inner"},
        {30, 2, E, 1, NULL},     {15, 3, S, 2, "other"},  {25, 3, E, 2, NULL},
        {41, 5, S, 1, "deepest"}, {42, 5, E, 1, NULL},    {50, 4, E, 1, NULL},
        {100, 1, E, 1, NULL},
    };
    struct lp_trace *t = build(m, sizeof m / sizeof *m, NULL, 0, NULL, 0);
    struct lp_ranges r;
    assert_int_equal(lp_ranges_build(t, &r), LP_OK);
    assert_int_equal(r.n, 5);
    assert_int_equal(r.unclosed, 0);
    assert_int_equal(r.unmatched_ends, 0);
    const struct lp_range *outer = named(t, &r, "outer"), *inner = named(t, &r, "inner"),
                          *inner2 = named(t, &r, "inner2"), *deepest = named(t, &r, "deepest"),
                          *other = named(t, &r, "other");
    assert_int_equal(outer->depth, 0);
    assert_int_equal(outer->end, 100);
    assert_int_equal(inner->depth, 1);
    assert_int_equal(inner2->depth, 1);
    assert_int_equal(deepest->depth, 2);
    assert_ptr_equal(&r.v[deepest->parent], inner2);
    assert_ptr_equal(&r.v[inner->parent], outer);
    assert_int_equal(other->depth, 0); /* other thread: not nested in outer */
    assert_int_equal(other->thread, 2);
    lp_ranges_free(&r);
    lp_trace_free(t);
}

/* lp_ranges_at_hint answers as lp_ranges_at does, whatever the order of the questions: in
 * time order on one thread (the hint's case), alternating threads, and at random; at range
 * edges, in gaps, before the first and after the last */
static void test_ranges_at_hint(void **state)
{
    (void)state;
    struct lp_range v[3 * 40 * 3];
    size_t n = 0;
    for (uint32_t th = 1; th <= 3; th++)
        for (uint64_t k = 0; k < 40; k++) { /* top level [100k, 100k+60], two children */
            uint64_t b = 1000 + 100 * k + th;
            int64_t top = (int64_t)n;
            v[n++] = (struct lp_range){.start = b, .end = b + 60, .thread = th, .parent = -1};
            v[n++] = (struct lp_range){.start = b + 10, .end = b + 20, .thread = th,
                                       .depth = 1, .parent = top};
            v[n++] = (struct lp_range){.start = b + 20, .end = b + 50, .thread = th,
                                       .depth = 1, .parent = top};
        }
    struct lp_ranges rg = {.v = v, .n = n};
    size_t hint = 0, asked = 0, inside = 0;
    unsigned seed = 7;
    for (int pass = 0; pass < 3; pass++)
        for (uint64_t ts = 900; ts < 5200; ts += 3) {
            uint32_t th = pass == 0   ? 2
                          : pass == 1 ? (uint32_t)(ts % 4)
                                      : 1 + (uint32_t)rand_r(&seed) % 4;
            uint64_t q = pass == 2 ? 900 + (uint64_t)(rand_r(&seed) % 4300) : ts;
            int32_t want = lp_ranges_at(&rg, th, q);
            assert_int_equal(lp_ranges_at_hint(&rg, th, q, &hint), want);
            assert_true(hint <= n);
            asked++;
            inside += want >= 0;
        }
    assert_true(asked > 4000 && inside > 1000 && inside < asked);
}

static void test_cross_thread_unmatched_unclosed(void **state)
{
    (void)state;
    /* start on thread 1, end on thread 2 (start/end ranges); an end with no start (the
     * start was before recording began); a start never closed (killed process) */
    const struct mk m[] = {
        {10, 7, S, 1, "worker"}, {60, 7, E, 2, NULL},
        {5, 99, E, 1, NULL},
        {70, 8, S, 1, "never closed"},
    };
    struct lp_kernel k = {.start = 80, .end = 90};
    struct lp_trace *t = build(m, 4, &k, 1, NULL, 0);
    struct lp_ranges r;
    assert_int_equal(lp_ranges_build(t, &r), LP_OK);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.unmatched_ends, 1);
    assert_int_equal(r.unclosed, 1);
    const struct lp_range *worker = named(t, &r, "worker"), *open = named(t, &r, "never closed");
    assert_int_equal(worker->end, 60);
    assert_int_equal(worker->thread, 1);
    assert_false(worker->flags & LP_RANGE_UNCLOSED);
    assert_true(open->flags & LP_RANGE_UNCLOSED);
    assert_int_equal(open->end, 90); /* extends to the last record of the trace */
    lp_ranges_free(&r);
    lp_trace_free(t);
}

static void test_group_names(void **state)
{
    (void)state;
    char buf[64];
    assert_string_equal(lp_range_group_name("prefill tokens=512 batch=1", buf, sizeof buf), "prefill");
    assert_string_equal(lp_range_group_name("decode step=3", buf, sizeof buf), "decode");
    assert_string_equal(lp_range_group_name("  sam  vision  x=1 ", buf, sizeof buf), "sam vision");
    assert_string_equal(lp_range_group_name("a=1 b=2", buf, sizeof buf), "");
    assert_string_equal(lp_range_group_name("aten::mm, seq 0", buf, sizeof buf), "aten::mm, seq 0");
    assert_string_equal(lp_range_group_name("truncated words here", buf, 6), "trunc");
}

static void test_summary(void **state)
{
    (void)state;
    const struct mk m[] = {
        {100, 1, S, 1, "prefill tokens=8"}, {200, 1, E, 1, NULL},
        {300, 2, S, 1, "decode step=0"},    {340, 2, E, 1, NULL},
        {400, 3, S, 1, "decode step=1"},    {470, 3, E, 1, NULL},
    };
    const struct lp_kernel k[] = {
        {.start = 110, .end = 150, .correlation = 1},
        {.start = 310, .end = 330, .correlation = 2},
        {.start = 410, .end = 420, .correlation = 3},
    };
    const struct lp_api a[] = {{.start = 105, .end = 106, .correlation = 1, .thread = 1},
                               {.start = 305, .end = 306, .correlation = 2, .thread = 1}};
    struct lp_trace *t = build(m, 6, k, 3, a, 2);
    struct lp_trace_summary s;
    assert_int_equal(lp_trace_summarize(t, &s), LP_OK);
    assert_int_equal(s.first_ns, 100);
    assert_int_equal(s.last_ns, 470);
    assert_int_equal(s.kernel_ns, 40 + 20 + 10);
    assert_int_equal(s.n_launch_matched, 2);
    assert_int_equal(s.n_top, 2);
    assert_string_equal(s.top[0].name, "decode"); /* grouped without key=value words */
    assert_int_equal(s.top[0].count, 2);
    assert_int_equal(s.top[0].total_ns, 110);
    assert_int_equal(s.top[0].min_ns, 40);
    assert_int_equal(s.top[0].max_ns, 70);
    assert_string_equal(s.top[1].name, "prefill");
    assert_int_equal(s.top[1].total_ns, 100);
    lp_trace_summary_free(&s);
    lp_trace_free(t);
}

/* A top-level range NAME of D ns at *TS on thread 1, with a nested range in it. */
static void step_range(struct lp_trace_writer *w, lp_str name, lp_str inner, uint64_t *ts,
                       uint64_t d, uint32_t *id)
{
    const struct lp_marker m[] = {
        {.timestamp = *ts, .id = *id, .flags = S, .thread = 1, .name = name},
        {.timestamp = *ts + 1, .id = *id + 1, .flags = S, .thread = 1, .name = inner},
        {.timestamp = *ts + 2, .id = *id + 1, .flags = E, .thread = 1},
        {.timestamp = *ts + d, .id = *id, .flags = E, .thread = 1},
    };
    for (size_t i = 0; i < 4; i++) {
        struct lp_record r = {.type = LP_REC_MARKER, .u.marker = m[i]};
        assert_int_equal(lp_trace_writer_add(w, &r), LP_OK);
    }
    *ts += d + 10;
    *id += 2;
}

/* A program that names every step ("decode 17 tokens=1"): 100,000 top-level groups of one
 * range each, found by name (issue 52: a scan per range took seconds), around a name that
 * comes back among them, and ranges nested in each, which are not counted. */
static void test_summary_many_names(void **state)
{
    (void)state;
    enum { N = 100000 };
    char path[] = "/tmp/lp_test_analyze_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    struct lp_trace_writer *w;
    char err[256], name[64];
    assert_int_equal(lp_trace_writer_open(&w, path, NULL, err, sizeof err), LP_OK);
    lp_str prefill = lp_trace_writer_intern(w, "prefill tokens=8"),
           inner = lp_trace_writer_intern(w, "attention");
    uint64_t ts = 1000;
    uint32_t id = 1;
    /* "prefill" first, midway and last (10 ms each: the largest total); step K lasts
     * 1000 + K ns, so that every total differs and the order is the sort's alone */
    step_range(w, prefill, inner, &ts, 10000000, &id);
    for (int k = 0; k < N; k++) {
        if (k == N / 2)
            step_range(w, prefill, inner, &ts, 10000000, &id);
        snprintf(name, sizeof name, "decode %d tokens=1", k);
        step_range(w, lp_trace_writer_intern(w, name), inner, &ts, 1000 + (uint64_t)k, &id);
    }
    step_range(w, prefill, inner, &ts, 10000000, &id);
    assert_int_equal(lp_trace_writer_close(w), LP_OK);
    struct lp_trace *t;
    assert_int_equal(lp_trace_read(&t, path, err, sizeof err), LP_OK);
    unlink(path);
    struct lp_trace_summary s;
    assert_int_equal(lp_trace_summarize(t, &s), LP_OK);
    assert_int_equal(s.ranges.n, 2 * (N + 3));
    assert_int_equal(s.n_top, N + 1);
    assert_string_equal(s.top[0].name, "prefill");
    assert_int_equal(s.top[0].count, 3);
    assert_int_equal(s.top[0].total_ns, 30000000);
    /* then every step by its total, largest first: decode N-1 ... decode 0, each once */
    for (size_t i = 1; i <= N; i++) {
        int k = N - (int)i;
        snprintf(name, sizeof name, "decode %d", k);
        if (strcmp(s.top[i].name, name) != 0)
            fail_msg("group %zu is '%s', not '%s'", i, s.top[i].name, name);
        if (s.top[i].count != 1 || s.top[i].total_ns != 1000 + (uint64_t)k ||
            s.top[i].min_ns != s.top[i].total_ns || s.top[i].max_ns != s.top[i].total_ns)
            fail_msg("group '%s': count %zu, total %llu", name, s.top[i].count,
                     (unsigned long long)s.top[i].total_ns);
    }
    lp_trace_summary_free(&s);
    lp_trace_free(t);
}

static int cmp_kv(const void *a, const void *b)
{
    const struct lp_kv *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->val > y->val) - (x->val < y->val);
}

/* The in-place sort against the stable radix sort (values added in increasing order: the
 * same order) and against qsort by (key, value) (values in any order), on sizes around its
 * insertion-sort threshold, many ties, keys sharing their high bytes, sorted and reversed
 * input */
static void test_sort_kv_inplace(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 2, 31, 32, 33, 257, 5000, 200000};
    uint64_t seed = 88172645463325252ull;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        size_t n = sizes[si];
        for (int shape = 0; shape < 5; shape++) {
            struct lp_kv *a = malloc((n + 1) * sizeof *a), *b = malloc(2 * (n + 1) * sizeof *b);
            assert_non_null(a);
            assert_non_null(b);
            for (size_t i = 0; i < n; i++) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                uint64_t k = shape == 0   ? seed
                             : shape == 1 ? seed % 7                     /* many ties */
                             : shape == 2 ? 1700000000000000000ull + seed % 100000
                             : shape == 3 ? i                            /* sorted */
                                          : n - i;                       /* reversed */
                a[i] = (struct lp_kv){k, shape == 1 && si % 2 ? seed >> 3 : i};
            }
            memcpy(b, a, n * sizeof *a);
            lp_sort_kv_inplace(a, n);
            if (shape == 1 && si % 2)
                qsort(b, n, sizeof *b, cmp_kv);
            else
                lp_sort_kv(b, b + n, n);
            assert_memory_equal(a, b, n * sizeof *a);
            free(a);
            free(b);
        }
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Grouping by the top bytes of the key: keys in increasing order, each key's values the
 * same multiset as before (compared after a full sort of both), on sizes around the
 * insertion threshold, one key, many keys, keys already grouped */
static void test_group_kv(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 2, 32, 33, 1000, 100000};
    uint64_t seed = 88172645463325252ull;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        size_t n = sizes[si];
        for (int shape = 0; shape < 4; shape++) {
            struct lp_kv *a = malloc((n + 1) * sizeof *a), *b = malloc((n + 1) * sizeof *b);
            assert_non_null(a);
            assert_non_null(b);
            for (size_t i = 0; i < n; i++) {
                uint64_t r = xorshift(&seed);
                uint64_t k = shape == 0   ? r % 3                       /* three keys */
                             : shape == 1 ? r % 100000                  /* many */
                             : shape == 2 ? 7                           /* one */
                                          : i / 10;                     /* grouped */
                a[i] = (struct lp_kv){k << 40, xorshift(&seed) % 50};   /* top 3 bytes */
            }
            memcpy(b, a, n * sizeof *a);
            lp_group_kv(a, n, 3);
            for (size_t i = 1; i < n; i++)
                assert_true(a[i - 1].key <= a[i].key);
            qsort(a, n, sizeof *a, cmp_kv);
            qsort(b, n, sizeof *b, cmp_kv);
            assert_memory_equal(a, b, n * sizeof *a);
            free(a);
            free(b);
        }
    }
}

/* Grouping plain values by their top bytes: equal keys together in increasing key order,
 * the same values as before */
static void test_group_u64(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 2, 32, 33, 1000, 100000};
    uint64_t seed = 2463534242ull;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        size_t n = sizes[si];
        for (int shape = 0; shape < 4; shape++) {
            uint64_t *a = malloc((n + 1) * sizeof *a), *b = malloc((n + 1) * sizeof *b);
            assert_non_null(a);
            assert_non_null(b);
            for (size_t i = 0; i < n; i++) {
                uint64_t r = xorshift(&seed);
                uint64_t k = shape == 0   ? r % 3
                             : shape == 1 ? r % 100000
                             : shape == 2 ? 7
                                          : i / 10;
                a[i] = k << 40 | (xorshift(&seed) & ((1ull << 40) - 1)); /* key: top 3 bytes */
            }
            memcpy(b, a, n * sizeof *a);
            lp_group_u64(a, n, 3);
            for (size_t i = 1; i < n; i++)
                assert_true(a[i - 1] >> 40 <= a[i] >> 40);
            qsort(a, n, sizeof *a, cmp_u64);
            qsort(b, n, sizeof *b, cmp_u64);
            assert_memory_equal(a, b, n * sizeof *a);
            free(a);
            free(b);
        }
    }
}

/* The radix sort of plain values against qsort: random, few distinct, labels with the top
 * bit set (as graph labels are), sorted and reversed */
static void test_sort_u64(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 2, 64, 65, 1000, 100000};
    uint64_t seed = 2463534242ull;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        size_t n = sizes[si];
        for (int shape = 0; shape < 5; shape++) {
            uint64_t *a = malloc((n + 1) * sizeof *a), *b = malloc((n + 1) * sizeof *b);
            uint64_t *tmp = malloc((n + 1) * sizeof *tmp);
            assert_true(a && b && tmp);
            for (size_t i = 0; i < n; i++) {
                uint64_t r = xorshift(&seed);
                a[i] = shape == 0   ? r
                       : shape == 1 ? r % 5
                       : shape == 2 ? (r & 1) << 63 | r % 300
                       : shape == 3 ? i
                                    : n - i;
            }
            memcpy(b, a, n * sizeof *a);
            lp_sort_u64(a, tmp, n);
            qsort(b, n, sizeof *b, cmp_u64);
            assert_memory_equal(a, b, n * sizeof *a);
            free(a);
            free(b);
            free(tmp);
        }
    }
}

enum { ROW_NAMES = 6, ROW_MAX = 2001 };
static const char *const row_names[ROW_NAMES] = {"k_rand", "k_ties", "k_same", "k_even",
                                                 "k_one", "k_wide"};
static const size_t row_count[ROW_NAMES] = {ROW_MAX, ROW_MAX, 40, 1000, 1, 777};

/* A trace of the kernels of ROW_NAMES, their durations DUR, launched interleaved in a
 * random order (so that no name's kernels come together) */
static struct lp_trace *rows_trace(uint64_t dur[ROW_NAMES][ROW_MAX])
{
    char path[] = "/tmp/lp_test_rows_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    struct lp_trace_writer *w;
    char err[256];
    assert_int_equal(lp_trace_writer_open(&w, path, NULL, err, sizeof err), LP_OK);
    uint64_t seed = 1234567ull, ts = 1000000;
    uint32_t id[ROW_NAMES];
    size_t left = 0, done[ROW_NAMES] = {0};
    for (size_t g = 0; g < ROW_NAMES; g++) {
        id[g] = lp_trace_writer_intern(w, row_names[g]);
        left += row_count[g];
        for (size_t i = 0; i < row_count[g]; i++) {
            uint64_t r = xorshift(&seed);
            dur[g][i] = g == 0   ? 1000 + r % 100000
                        : g == 1 ? 500 + 10 * (r % 4)
                        : g == 2 ? 4242
                        : g == 3 ? 1000 + (i * 7919) % 100003 /* distinct */
                        : g == 5 ? 1 + r % 1000000000
                                 : 100 + r % 7919;
        }
    }
    for (uint32_t corr = 1; left > 0; left--, corr++) {
        size_t g = xorshift(&seed) % ROW_NAMES;
        while (done[g] == row_count[g])
            g = (g + 1) % ROW_NAMES;
        uint64_t d = dur[g][done[g]++];
        struct lp_record rec = {.type = LP_REC_KERNEL};
        rec.u.kernel = (struct lp_kernel){.start = ts, .end = ts + d, .name = id[g],
                                          .correlation = corr, .stream = 7,
                                          .grid = {1, 1, 1}, .block = {32, 1, 1}};
        assert_int_equal(lp_trace_writer_add(w, &rec), LP_OK);
        ts += d + 100;
    }
    assert_int_equal(lp_trace_writer_close(w), LP_OK);
    struct lp_trace *t;
    assert_int_equal(lp_trace_read(&t, path, err, sizeof err), LP_OK);
    unlink(path);
    return t;
}

/* A trace of N kernels "k_big" whose durations are DUR, in the order given, started 1 us
 * apart (overlapping: the recording stays under a week) */
static struct lp_trace *big_rows_trace(const uint64_t *dur, size_t n)
{
    struct tb b;
    tb_open(&b);
    for (size_t i = 0; i < n; i++) {
        uint64_t ts = 1000000 + 1000 * i;
        kernel(&b, "k_big", 1, 0, ts, ts + dur[i]);
    }
    return tb_read(&b, 1);
}

/* A kernel row's spread when two squared deviations (2^94) dwarf 2,000 odd ones (2^36): the
 * same standard deviation whichever order the kernels come in, the one of the exact sums.
 * With the long double sums of before 2026-11-28, which rounded the small squares
 * differently in each order, this test fails. */
static void test_kernel_rows_exact(void **state)
{
    (void)state;
    enum { N = 2002 };
    static uint64_t dur[2][N];
    uint64_t mid = (1ull << 48) + 12345;
    dur[0][0] = mid + (1ull << 47) + 115;
    dur[0][1] = mid - (1ull << 47) - 115;
    for (size_t i = 0; i < N - 2; i++) {
        uint64_t a = (1ull << 18) + 2 * i + 1 + 115 * 4096;
        dur[0][i + 2] = i % 2 ? mid + a : mid - a;
    }
    for (size_t i = 0; i < N; i++)
        dur[1][N - 1 - i] = dur[0][i];
    __extension__ unsigned __int128 total = 0, sq = 0;
    __extension__ __int128 dev = 0;
    for (size_t i = 0; i < N; i++)
        total += dur[0][i];
    uint64_t floor_mean = (uint64_t)(total / N);
    for (size_t i = 0; i < N; i++) {
        uint64_t a = dur[0][i] >= floor_mean ? dur[0][i] - floor_mean : floor_mean - dur[0][i];
        dev += dur[0][i] >= floor_mean ? (__int128)a : -(__int128)a;
        sq += (unsigned __int128)a * a;
    }
    long double m2 = (long double)sq - (long double)dev * (long double)dev / N;
    double want = (double)sqrtl(m2 / (N - 1));
    for (int o = 0; o < 2; o++) {
        struct lp_trace *t = big_rows_trace(dur[o], N);
        struct lp_run r;
        analyze(t, NULL, &r);
        assert_int_equal(r.all_kernels.n, 1);
        assert_int_equal(r.all_kernels.v[0].calls, N);
        assert_true(r.all_kernels.v[0].std_ns == want);
        lp_run_free(&r);
        lp_trace_free(t);
    }
}

/* A piece of work reads its end from its record (it kept a duration of 32 bits once, with
 * longer ones read there): kernels, a copy and a set on both sides of 2^32 ns, one running
 * 10 s. Their rows, the busy time and the span are the exact sums. */
static void test_work_long_durations(void **state)
{
    (void)state;
    const uint64_t lim = (1ull << 32) - 1, at = 1000000, gap = 20000000000ull;
    static const struct {
        const char *name;
        uint64_t dur;
    } k[] = {{"k_a", (1ull << 32) - 2}, {"k_a", (1ull << 32) - 1}, {"k_b", 1ull << 32},
             {"k_b", 5000000007ull}, {"k_c", 10000000000ull}, {"k_c", 1}};
    enum { NK = sizeof k / sizeof *k };
    struct tb b;
    tb_open(&b);
    uint64_t busy = 0, last = 0;
    for (size_t i = 0; i < NK; i++) {
        uint64_t s = at + gap * i;
        kernel(&b, k[i].name, 1, s - 500, s, s + k[i].dur);
        busy += k[i].dur;
        last = s + k[i].dur;
    }
    for (int q = 0; q < 2; q++) { /* a copy and a set, each just past the bound */
        uint64_t s = at + gap * (NK + (uint64_t)q);
        struct lp_record rec = {.type = q ? LP_REC_MEMSET : LP_REC_MEMCPY};
        if (q)
            rec.u.memset = (struct lp_memset){.start = s, .end = s + lim + 3, .bytes = 64,
                                              .stream = 7, .memory_kind = 3};
        else
            rec.u.memcpy = (struct lp_memcpy){.start = s, .end = s + lim + 2, .bytes = 64,
                                              .stream = 7, .copy_kind = 1, .src_kind = 2,
                                              .dst_kind = 3};
        add(&b, &rec);
        busy += lim + 2 + (uint64_t)q;
        last = s + lim + 2 + (uint64_t)q;
    }
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.timeline.busy_ns, busy);
    assert_int_equal(r.timeline.first_ns, at);
    assert_int_equal(r.timeline.last_ns, last);
    assert_int_equal(r.n_stages, 1);
    assert_int_equal(r.stages[0].busy_ns, busy);
    unsigned seen = 0;
    for (size_t i = 0; i < r.all_kernels.n; i++) {
        const struct lp_kernel_row *row = &r.all_kernels.v[i];
        uint64_t total = 0, max = 0, n = 0;
        for (size_t j = 0; j < NK; j++)
            if (!strcmp(r.names[row->group], k[j].name)) {
                total += k[j].dur;
                max = k[j].dur > max ? k[j].dur : max;
                n++;
            }
        if (!n)
            continue;
        seen++;
        assert_int_equal(row->calls, n);
        assert_int_equal(row->total_ns, total);
        assert_int_equal(row->max_ns, max);
    }
    assert_int_equal(seen, 3);
    lp_run_free(&r);
    lp_trace_free(t);
}

static int cmp_u64_test(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The kernel tables and launch delays the same whichever way their durations are grouped:
 * counted at 4 bytes (short durations, few names), packed at 8 (a kernel of 10 s; or a
 * launch 5 s before its kernel), packed for want of room to count (5,000 names). Calls,
 * totals, extremes and medians (odd and even counts) against a sort of the durations. */
static void test_kernel_table_widths(void **state)
{
    (void)state;
    static const uint64_t a[] = {7000, 3000, 11000, 5000, 9000}, b[] = {4000, 10000, 2000, 8000};
    for (int variant = 0; variant < 3; variant++) {
        struct tb tb;
        tb_open(&tb);
        uint64_t at = 10000000000ull, delays[16]; /* after the 5 s launch */
        size_t n_delays = 0;
        for (size_t i = 0; i < 5; i++, at += 1000000) {
            kernel(&tb, "k_a", 1, at - 500, at, at + a[i]);
            delays[n_delays++] = 500;
            if (i < 4) {
                at += 1000000;
                uint64_t launch = variant == 1 && i == 2 ? at - 5000000000ull : at - 700;
                kernel(&tb, "k_b", 1, launch, at, at + b[i]);
                delays[n_delays++] = at - launch;
            }
        }
        if (variant == 1) /* 10 s */
            kernel(&tb, "k_long", 1, 0, at, at + 10000000000ull);
        for (int q = 0; variant == 2 && q < 5000; q++, at += 1000000) {
            char name[16];
            snprintf(name, sizeof name, "n%d", q);
            kernel(&tb, name, 1, 0, at, at + 100);
        }
        struct lp_trace *t = tb_read(&tb, 1);
        struct lp_run r;
        analyze(t, NULL, &r);
        assert_int_equal(r.n_stages, 1);
        qsort(delays, n_delays, sizeof *delays, cmp_u64_test);
        assert_int_equal(r.stages[0].launch_delay_p50_ns, delays[n_delays / 2]);
        for (int tab = 0; tab < 2; tab++) {
            const struct lp_kernel_table *kt = tab ? &r.stages[0].top : &r.all_kernels;
            int seen = 0;
            for (size_t i = 0; i < kt->n_groups; i++) {
                const struct lp_kernel_row *row = &kt->v[i];
                int is_a = !strcmp(r.names[row->group], "k_a");
                if (!is_a && strcmp(r.names[row->group], "k_b"))
                    continue;
                seen++;
                assert_int_equal(row->calls, is_a ? 5 : 4);
                assert_int_equal(row->total_ns, is_a ? 35000 : 24000);
                assert_int_equal(row->min_ns, is_a ? 3000 : 2000);
                assert_int_equal(row->max_ns, is_a ? 11000 : 10000);
                assert_int_equal(row->median_ns, is_a ? 7000 : 6000);
            }
            assert_int_equal(seen, 2);
            assert_int_equal(kt->n_groups, variant == 2 ? 5002 : 2 + (variant == 1));
        }
        lp_run_free(&r);
        lp_trace_free(t);
    }
}

/* Kernels named like the fixed groups of copies, sets and graph replays stay kernels: each
 * name its own group, read from the kernels' records (a trace without copies or sets; under
 * ASan a kernel taken for a copy would read past the copies) */
static void test_work_fixed_names(void **state)
{
    (void)state;
    static const char *const names[] = {"[CUDA memcpy HtoD]", "[CUDA memset]",
                                        "[CUDA graph replay]", "k"};
    struct tb b;
    tb_open(&b);
    uint64_t busy = 0;
    for (size_t i = 0; i < 4; i++) {
        uint64_t s = 1000000 + 100000 * i;
        kernel(&b, names[i], 1, s - 500, s, s + 1000 + i);
        busy += 1000 + i;
    }
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.timeline.busy_ns, busy);
    assert_int_equal(r.all_kernels.n, 4);
    for (size_t i = 0; i < r.all_kernels.n; i++) {
        const struct lp_kernel_row *row = &r.all_kernels.v[i];
        assert_true(row->group >= 6); /* none of the fixed groups 0..5 */
        assert_int_equal(row->calls, 1);
        size_t q = 0;
        while (q < 4 && strcmp(r.names[row->group], names[q]))
            q++;
        assert_true(q < 4);
        assert_int_equal(row->total_ns, 1000 + q);
        assert_int_equal(lp_run_kernel_group(&r, q), row->group);
    }
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Each kernel name's row against a direct computation from its durations: calls, total,
 * min, max, the median (odd and even counts, ties) exactly, the mean and the sample standard
 * deviation within 1e-12 of a two-pass sum in long double; durations random, few distinct,
 * distinct, and all equal (no spread) */
static void test_kernel_rows(void **state)
{
    (void)state;
    static uint64_t dur[ROW_NAMES][ROW_MAX];
    struct lp_trace *t = rows_trace(dur);
    struct lp_run r;
    char err[256];
    assert_int_equal(lp_run_analyze(t, NULL, &r, err, sizeof err), LP_OK);
    unsigned seen = 0;
    for (size_t i = 0; i < r.all_kernels.n; i++) {
        const struct lp_kernel_row *k = &r.all_kernels.v[i];
        size_t g = 0;
        while (g < ROW_NAMES && strcmp(r.names[k->group], row_names[g]))
            g++;
        assert_true(g < ROW_NAMES);
        size_t n = row_count[g];
        uint64_t v[ROW_MAX], total = 0;
        memcpy(v, dur[g], n * sizeof *v);
        qsort(v, n, sizeof *v, cmp_u64);
        long double sum = 0, sq = 0;
        for (size_t q = 0; q < n; q++) {
            total += v[q];
            sum += v[q];
        }
        long double mean = sum / n;
        for (size_t q = 0; q < n; q++)
            sq += (v[q] - mean) * (v[q] - mean);
        double sd = n > 1 ? (double)sqrtl(sq / (n - 1)) : 0;
        assert_int_equal(k->calls, n);
        assert_int_equal(k->total_ns, total);
        assert_int_equal(k->min_ns, v[0]);
        assert_int_equal(k->max_ns, v[n - 1]);
        assert_int_equal(k->median_ns, (v[(n - 1) / 2] + v[n / 2]) / 2);
        if (g == 3)
            assert_true(v[(n - 1) / 2] != v[n / 2]); /* an even count's two middle values */
        assert_true(fabs(k->mean_ns - (double)mean) <= 1e-12 * (double)mean);
        assert_true(fabs(k->std_ns - sd) <= 1e-12 * (double)mean);
        if (g == 2)
            assert_true(k->std_ns == 0);
        seen |= 1u << g;
    }
    assert_int_equal(seen, (1u << ROW_NAMES) - 1);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Kernels that last days among 16,400 names: a duration then leaves no room for the key
 * beside it in 64 bits, and the rows are made through (key, duration) pairs. Each row as
 * exact as the packed rows of test_kernel_rows. */
static void test_kernel_rows_days(void **state)
{
    (void)state;
    enum { NAMES = 16400 };
    const uint64_t day4 = 1ull << 49, t0 = 1000000000ull; /* 6.5 days */
    struct tb b;
    char start[32];
    snprintf(start, sizeof start, "%llu", (unsigned long long)t0);
    snprintf(b.path, sizeof b.path, "/tmp/lp_test_days.XXXXXX");
    int fd = mkstemp(b.path);
    assert_true(fd >= 0);
    close(fd);
    unlink(b.path);
    char err[256];
    assert_int_equal(lp_trace_writer_open(&b.w, b.path, NULL, err, sizeof err), LP_OK);
    lp_trace_writer_set_meta(b.w, "start_trace_ns", start);
    assert_int_equal(lp_trace_writer_write_header(b.w), LP_OK);
    b.next_id = b.next_corr = 1;
    char name[32];
    for (size_t i = 0; i < NAMES; i++) {
        snprintf(name, sizeof name, "k%zu", i);
        kernel(&b, name, 1, 0, t0 + 1000 * i, t0 + 1000 * i + 100 + i % 3);
    }
    static const uint64_t extra[3] = {30, 0, 6}; /* "long": 2^49 + these */
    for (size_t i = 0; i < 3; i++)
        kernel(&b, "long", 1, 0, 2 * t0 + i, 2 * t0 + i + day4 + extra[i]);
    struct lp_trace *t = tb_read(&b, 1);
    assert_int_equal(t->n_kernels, NAMES + 3);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.all_kernels.n_groups, NAMES + 1);
    const struct lp_kernel_row *k = &r.all_kernels.v[0]; /* by time: "long" first */
    assert_string_equal(r.names[k->group], "long");
    assert_int_equal(k->calls, 3);
    assert_int_equal(k->total_ns, 3 * day4 + 36);
    assert_int_equal(k->min_ns, day4);
    assert_int_equal(k->max_ns, day4 + 30);
    assert_int_equal(k->median_ns, day4 + 6);
    assert_true(k->mean_ns == (double)(day4 + 12));
    assert_true(fabs(k->std_ns - sqrt((144.0 + 36 + 324) / 2)) < 1e-9);
    for (size_t i = 1; i < r.all_kernels.n_groups; i++) {
        const struct lp_kernel_row *x = &r.all_kernels.v[i];
        assert_int_equal(x->calls, 1);
        assert_true(x->median_ns >= 100 && x->median_ns <= 102);
        assert_int_equal(x->min_ns, x->max_ns);
    }
    const struct lp_stage_report *run = stage(&r, "run");
    assert_non_null(run);
    assert_int_equal(run->top.n_groups, NAMES + 1);
    assert_int_equal(run->top.v[0].median_ns, day4 + 6);
    assert_int_equal(run->top.v[0].total_ns, 3 * day4 + 36);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* A host gap between two kernels on thread 1, its CUDA calls (a copy and a synchronize,
 * and the next kernel's launch) the same whether the trace holds the calls in start order
 * or not (then the analysis sorts a copy of them). 300 calls of another thread before the
 * gap put the synchronize, when it comes first, further back than the look-back over calls
 * by start. */
static void gap_trace_check(int ordered)
{
    struct tb b;
    tb_open(&b);
    struct lp_record rec = {.type = LP_REC_API};
    struct lp_api v[304];
    size_t n = 0;
    v[n++] = (struct lp_api){.start = 1000, .end = 2000, .thread = 1, .correlation = 1,
                             .name = lp_trace_writer_intern(b.w, "cudaLaunchKernel")};
    struct lp_api sync = {.start = 100000, .end = 400000, .thread = 1,
                          .name = lp_trace_writer_intern(b.w, "cudaStreamSynchronize")};
    if (!ordered)
        v[n++] = sync;
    for (uint64_t i = 0; i < 300; i++)
        v[n++] = (struct lp_api){.start = 1100 + 6 * i, .end = 1101 + 6 * i, .thread = 2,
                                 .name = lp_trace_writer_intern(b.w, "cudaGetDevice")};
    if (ordered)
        v[n++] = (struct lp_api){.start = 10000, .end = 50000, .thread = 1,
                                 .name = lp_trace_writer_intern(b.w, "cudaMemcpyAsync")};
    if (ordered)
        v[n++] = sync;
    v[n++] = (struct lp_api){.start = 500000, .end = 501000, .thread = 1, .correlation = 2,
                             .name = lp_trace_writer_intern(b.w, "cudaLaunchKernel")};
    if (!ordered)
        v[n++] = (struct lp_api){.start = 10000, .end = 50000, .thread = 1,
                                 .name = lp_trace_writer_intern(b.w, "cudaMemcpyAsync")};
    for (size_t i = 0; i < n; i++) {
        v[i].domain = LP_API_DOMAIN_RUNTIME;
        rec.u.api = v[i];
        add(&b, &rec);
    }
    kernel(&b, "k_a", 1, 0, 2000, 3000);     /* correlation 1 */
    kernel(&b, "k_b", 1, 0, 600000, 601000); /* 2 */
    struct lp_trace *t = tb_read(&b, 1);
    int in_order = 1;
    for (size_t i = 1; i < t->n_apis; i++)
        in_order &= t->apis[i].start >= t->apis[i - 1].start;
    assert_int_equal(in_order, ordered);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.timeline.n_gaps, 1);
    assert_true(r.timeline.n_top_gaps >= 1);
    const struct lp_gap *g = &r.timeline.top_gaps[0];
    assert_int_equal(g->cause, LP_GAP_HOST);
    assert_int_equal(g->host_api_ns, 40000 + 300000 + 1000);
    assert_string_equal(g->api, "cudaStreamSynchronize");
    assert_int_equal(r.timeline.gap_host_api_ns, 341000);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Copies and sets at the clock's last nanosecond, after the kernels: merged into the work in
 * (start, kind, index) order like any other time (2^64 - 1 is no end marker), the copy
 * before the set it ties with */
static void test_work_at_clock_end(void **state)
{
    (void)state;
    const uint64_t top = UINT64_MAX;
    for (int sets = 0; sets < 2; sets++) {
        struct tb b;
        tb_open(&b);
        kernel(&b, "k_a", 1, 0, top - 5000, top - 4000);
        struct lp_record m = {.type = LP_REC_MEMCPY};
        m.u.memcpy = (struct lp_memcpy){.start = top, .end = top, .bytes = 8, .copy_kind = 1,
                                        .correlation = 90};
        add(&b, &m);
        if (sets) {
            struct lp_record z = {.type = LP_REC_MEMSET};
            z.u.memset = (struct lp_memset){.start = top, .end = top, .bytes = 8,
                                            .correlation = 91};
            add(&b, &z);
        }
        struct lp_trace *t = tb_read(&b, 1);
        assert_int_equal(t->n_memcpys, 1);
        assert_int_equal(t->n_memsets, (size_t)sets);
        struct lp_run r;
        analyze(t, NULL, &r);
        size_t copies = 0, memsets = 0, kernels = 0;
        for (size_t i = 0; i < r.all_kernels.n_groups; i++) {
            const char *name = r.names[r.all_kernels.v[i].group];
            copies += strstr(name, "[CUDA memcpy HtoD]") ? r.all_kernels.v[i].calls : 0;
            memsets += strstr(name, "[CUDA memset]") ? r.all_kernels.v[i].calls : 0;
            kernels += !strcmp(name, "k_a") ? r.all_kernels.v[i].calls : 0;
        }
        assert_int_equal(kernels, 1);
        assert_int_equal(copies, 1);
        assert_int_equal(memsets, (size_t)sets);
        lp_run_free(&r);
        lp_trace_free(t);
    }
}

static void test_gap_calls_any_order(void **state)
{
    (void)state;
    gap_trace_check(1);
    gap_trace_check(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nesting_and_threads),
        cmocka_unit_test(test_ranges_at_hint),
        cmocka_unit_test(test_sort_kv_inplace),
        cmocka_unit_test(test_group_kv),
        cmocka_unit_test(test_group_u64),
        cmocka_unit_test(test_sort_u64),
        cmocka_unit_test(test_kernel_rows),
        cmocka_unit_test(test_kernel_rows_exact),
        cmocka_unit_test(test_work_long_durations),
        cmocka_unit_test(test_kernel_table_widths),
        cmocka_unit_test(test_work_fixed_names),
        cmocka_unit_test(test_kernel_rows_days),
        cmocka_unit_test(test_gap_calls_any_order),
        cmocka_unit_test(test_work_at_clock_end),
        cmocka_unit_test(test_cross_thread_unmatched_unclosed),
        cmocka_unit_test(test_group_names),
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_summary_many_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
