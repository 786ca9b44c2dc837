/* Implausible records: times no recording can have (an end before its start, a duration
 * longer than the recording, a time far outside it) are left out of the arrays every total
 * is summed from, counted, and named in one warning per reason (docs/trace-format.md,
 * "Implausible records"). Runs once, after every chunk was read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "llmprof/trace.h"
#include "reader_internal.h"

#define NS_PER_S 1000000000ull
#define MAX_SPAN (7ull * 86400 * NS_PER_S) /* no recording without an end runs past a week */
#define SLACK (60ull * NS_PER_S)

static const char *plural(uint64_t n) { return n == 1 ? "" : "s"; }

/* IMP_INCOMPLETE: a zero time, as CUPTI leaves in records flushed before the GPU finished */
enum implausible { IMP_INCOMPLETE, IMP_BACKWARDS, IMP_DURATION, IMP_OUTSIDE, IMP_COUNT };

static const char *const type_names[LP_REC_TYPE_COUNT] = {
    [LP_REC_KERNEL] = "kernel", [LP_REC_MEMCPY] = "memcpy", [LP_REC_MEMSET] = "memset",
    [LP_REC_MEMORY] = "memory", [LP_REC_MARKER] = "marker", [LP_REC_API] = "api",
    [LP_REC_NVML] = "nvml",     [LP_REC_OVERHEAD] = "overhead", [LP_REC_GEMM] = "gemm",
    [LP_REC_GRAPH] = "graph", [LP_REC_COUNTERS] = "counters", [LP_REC_PM_SAMPLE] = "pm sample",
    [LP_REC_WINDOW] = "window",
};

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
static uint64_t sat_sub(uint64_t a, uint64_t b) { return a < b ? 0 : a - b; }

static uint64_t field_u64(const uint8_t *rec, size_t off)
{
    uint64_t v;
    memcpy(&v, rec + off, 8);
    return v;
}

/* The end of record REC of layout L in T; its start TS */
static uint64_t end_of(const struct lp_trace *t, const uint8_t *rec,
                       const struct lp_record_layout *l, uint64_t ts)
{
    if (!l->has_end)
        return ts;
    if (!l->end_is_dur)
        return field_u64(rec, l->end);
    uint32_t dur;
    memcpy(&dur, rec + l->end, sizeof dur);
    return lp_trace_row_end(t, ts, dur);
}

/* A header value that is a plain positive decimal number. */
static int meta_u64(const struct lp_trace *t, const char *key, uint64_t *out)
{
    const char *s = lp_trace_meta(t, key);
    if (!s || !*s)
        return 0;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
            return 0;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return v > 0;
}

static void human_ns(char *buf, size_t len, uint64_t ns)
{
    double v = (double)ns;
    if (ns < 1000)
        snprintf(buf, len, "%llu ns", (unsigned long long)ns);
    else if (v < 1e6)
        snprintf(buf, len, "%.1f us", v / 1e3);
    else if (v < 1e9)
        snprintf(buf, len, "%.1f ms", v / 1e6);
    else if (v < 600e9)
        snprintf(buf, len, "%.3f s", v / 1e9);
    else if (v < 48 * 3600e9)
        snprintf(buf, len, "%.1f h", v / 3600e9);
    else if (v < 730 * 86400e9)
        snprintf(buf, len, "%.1f days", v / 86400e9);
    else
        snprintf(buf, len, "%.1f years", v / (365.25 * 86400e9));
}

/* The records of TYPE in T when they have a time: the array (NULL for none or an empty one),
 * its layout and, in *N, its count. */
static uint8_t *timed_records(struct lp_trace *t, uint32_t type, struct lp_record_layout *l, size_t **n)
{
    void **arr = lp_trace_array_of(t, type, n);
    if (!arr || lp_trace_layout(type, l) != 0 || !l->has_ts)
        return NULL;
    return *arr;
}

/* The latest time (start, timestamp or end) of any record within [A, B]; A if none. */
static uint64_t latest_time(struct lp_trace *t, uint64_t a, uint64_t b)
{
    uint64_t hi = a;
    for (uint32_t type = 1; type < LP_REC_TYPE_COUNT; type++) {
        struct lp_record_layout l;
        size_t *n;
        uint8_t *base = timed_records(t, type, &l, &n);
        if (!base)
            continue;
        for (size_t i = 0; i < *n; i++) {
            const uint8_t *rec = base + i * l.size;
            uint64_t ts = field_u64(rec, l.ts), end = end_of(t, rec, &l, ts);
            if (ts >= a && ts <= b && ts > hi)
                hi = ts;
            if (end >= a && end <= b && end > hi)
                hi = end;
        }
    }
    return hi;
}

/* Records with a time, counted without reading them */
static uint64_t count_timed(struct lp_trace *t)
{
    uint64_t n_timed = 0;
    for (uint32_t type = 1; type < LP_REC_TYPE_COUNT; type++) {
        struct lp_record_layout l;
        size_t *n;
        if (timed_records(t, type, &l, &n))
            n_timed += *n;
    }
    return n_timed;
}

/* Records whose first timestamp lies outside [LO, HI]. */
static uint64_t count_outside(struct lp_trace *t, uint64_t lo, uint64_t hi, uint64_t *timed)
{
    uint64_t out = 0;
    *timed = 0;
    for (uint32_t type = 1; type < LP_REC_TYPE_COUNT; type++) {
        struct lp_record_layout l;
        size_t *n;
        uint8_t *base = timed_records(t, type, &l, &n);
        if (!base)
            continue;
        *timed += *n;
        for (size_t i = 0; i < *n; i++) {
            uint64_t ts = field_u64(base + i * l.size, l.ts);
            out += ts < lo || ts > hi;
        }
    }
    return out;
}

/* The earliest first timestamp of any record at or after FROM (UINT64_MAX if none) */
static uint64_t earliest_from(struct lp_trace *t, uint64_t from)
{
    uint64_t lo = UINT64_MAX;
    for (uint32_t type = 1; type < LP_REC_TYPE_COUNT; type++) {
        struct lp_record_layout l;
        size_t *n;
        uint8_t *base = timed_records(t, type, &l, &n);
        for (size_t i = 0; base && i < *n; i++) {
            uint64_t ts = field_u64(base + i * l.size, l.ts);
            if (ts >= from && ts < lo)
                lo = ts;
        }
    }
    return lo;
}

/* The K-th smallest of V[0..N) (V reordered): a radix selection, eight passes over fewer
 * and fewer values, so no input makes it slower than linear (a sort was the report's
 * largest cost on traces without a recording window in their header) */
static uint64_t select_kth(uint64_t *v, size_t n, size_t k)
{
    uint64_t prefix = 0;
    for (int shift = 56; shift >= 0; shift -= 8) {
        size_t count[256] = {0};
        for (size_t i = 0; i < n; i++)
            count[(v[i] >> shift) & 0xff]++;
        unsigned b = 0;
        while (k >= count[b])
            k -= count[b++];
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (((v[i] >> shift) & 0xff) == b)
                v[m++] = v[i];
        n = m;
        prefix |= (uint64_t)b << shift;
    }
    return prefix;
}

/* The recording as the records tell it, around their median start: a few records with
 * absurd times cannot move it. */
static int window_from_records(struct lp_trace *t, uint64_t timed, uint64_t *lo, uint64_t *hi)
{
    uint64_t *v = malloc(timed * sizeof *v), k = 0;
    if (!v)
        return LP_ERR_NOMEM;
    for (uint32_t type = 1; type < LP_REC_TYPE_COUNT; type++) {
        struct lp_record_layout l;
        size_t *n;
        uint8_t *base = timed_records(t, type, &l, &n);
        if (!base)
            continue;
        for (size_t i = 0; i < *n; i++)
            v[k++] = field_u64(base + i * l.size, l.ts);
    }
    uint64_t anchor = select_kth(v, k, k / 2);
    free(v);
    *lo = earliest_from(t, sat_sub(anchor, MAX_SPAN)); /* the median at the latest */
    *hi = latest_time(t, *lo, sat_add(anchor, MAX_SPAN));
    return LP_OK;
}

struct example {
    uint32_t type;
    uint64_t ts, end;
    int before; /* outside the recording: before it began (else after it ended) */
};

struct window {
    uint64_t lo, hi; /* the recording */
};

static void report_implausible(struct lp_trace *t, enum implausible why,
                               const uint64_t count[LP_REC_TYPE_COUNT], const struct example *ex,
                               const struct window *w)
{
    uint64_t total = 0;
    char kinds[256] = "", a[64], rec[64];
    size_t used = 0;
    for (uint32_t type = 1; type < LP_REC_TYPE_COUNT; type++) {
        if (!count[type])
            continue;
        total += count[type];
        int k = snprintf(kinds + used, sizeof kinds - used, "%s%llu %s", used ? ", " : "",
                         (unsigned long long)count[type], type_names[type]);
        if (k > 0 && (size_t)k < sizeof kinds - used)
            used += (size_t)k;
    }
    if (!total)
        return;
    t->implausible += total;
    human_ns(rec, sizeof rec, w->hi - w->lo);
    const char *name = type_names[ex->type];
    uint64_t by;
    switch (why) {
    case IMP_INCOMPLETE:
        lp_trace_warn(t, "%llu incomplete record%s left out of the totals (%s): a start or end of 0, "
                         "as CUPTI leaves in records it hands over before the GPU finished them",
                      (unsigned long long)total, plural(total), kinds);
        break;
    case IMP_BACKWARDS:
        human_ns(a, sizeof a, ex->ts - ex->end);
        lp_trace_warn(t, "%llu %s left out of the totals (%s); e.g. one %s that ends %llu ns (%s) "
                "before its start",
             (unsigned long long)total,
             total == 1 ? "record that ends before it starts"
                        : "records that end before they start",
             kinds, name, (unsigned long long)(ex->ts - ex->end), a);
        break;
    case IMP_DURATION:
        human_ns(a, sizeof a, ex->end - ex->ts);
        lp_trace_warn(t, "%llu record%s with an implausible duration left out of the totals (%s); e.g. "
                "one %s lasting %llu ns (%s), longer than the %s recording",
             (unsigned long long)total, plural(total), kinds, name,
             (unsigned long long)(ex->end - ex->ts), a, rec);
        break;
    default:
        by = ex->before ? w->lo - ex->ts : ex->end - w->hi;
        human_ns(a, sizeof a, by);
        lp_trace_warn(t, "%llu record%s far outside the %s recording left out of the totals (%s); e.g. "
                "one %s %s %s",
             (unsigned long long)total, plural(total), rec, kinds, name, a,
             ex->before ? "before it began" : "after it ended");
        break;
    }
}

/* The recording: from the header's start_trace_ns to the END chunk's end_trace_ns; with
 * no end, to the latest record time within MAX_SPAN of the start. A header most records
 * disagree with, or none, gives way to the records' own window. */
static int find_window(struct lp_trace *t, uint64_t timed, struct window *w)
{
    uint64_t start, end;
    if (meta_u64(t, "start_trace_ns", &start)) {
        int have_end = meta_u64(t, "end_trace_ns", &end) && end >= start;
        w->lo = start;
        if (have_end)
            w->hi = end;
        else
            w->hi = latest_time(t, start, sat_add(start, MAX_SPAN));
        uint64_t slack = SLACK + (w->hi - w->lo), n;
        uint64_t out = count_outside(t, sat_sub(w->lo, slack), sat_add(w->hi, slack), &n);
        if (out * 2 <= n)
            return LP_OK;
        lp_trace_warn(t, "the header's recording window (start_trace_ns%s) disagrees with the times of "
                "%llu of %llu records: the window was taken from the records",
             have_end ? " to end_trace_ns" : "", (unsigned long long)out,
             (unsigned long long)n);
    }
    return window_from_records(t, timed, &w->lo, &w->hi);
}

int lp_trace_drop_implausible(struct lp_trace *t)
{
    uint64_t timed = count_timed(t);
    if (!timed)
        return LP_OK;
    struct window w;
    int rc = find_window(t, timed, &w);
    if (rc != LP_OK)
        return rc;
    uint64_t len = w.hi - w.lo, slack = SLACK + len;
    uint64_t from = sat_sub(w.lo, slack), to = sat_add(w.hi, slack), longest = sat_add(len, SLACK);
    uint64_t count[IMP_COUNT][LP_REC_TYPE_COUNT] = {{0}};
    struct example ex[IMP_COUNT] = {{0}};
    for (uint32_t type = 1; type < LP_REC_TYPE_COUNT; type++) {
        struct lp_record_layout l;
        size_t *n;
        uint8_t *base = timed_records(t, type, &l, &n);
        if (!base)
            continue;
        size_t kept = 0;
        for (size_t i = 0; i < *n; i++) {
            uint8_t *rec = base + i * l.size;
            uint64_t ts = field_u64(rec, l.ts), end = end_of(t, rec, &l, ts);
            int why = end < ts                        ? IMP_BACKWARDS
                      : end - ts > longest            ? IMP_DURATION
                      : ts < from || end > to         ? IMP_OUTSIDE
                                                      : -1;
            if (why >= 0 && (ts == 0 || end == 0)) /* a trace that starts at 0 keeps its 0s */
                why = IMP_INCOMPLETE;
            if (why < 0) {
                if (kept != i)
                    memcpy(base + kept * l.size, rec, l.size);
                kept++;
                continue;
            }
            uint64_t *c = count[why];
            int first = 1;
            for (uint32_t k = 1; k < LP_REC_TYPE_COUNT; k++)
                first &= c[k] == 0;
            if (first)
                ex[why] = (struct example){type, ts, end, ts < from};
            c[type]++;
        }
        *n = kept;
    }
    for (int why = 0; why < IMP_COUNT; why++)
        report_implausible(t, (enum implausible)why, count[why], &ex[why], &w);
    return LP_OK;
}
