/* Capture windows (record --capture): kernels exist only inside the trace's windows, so a
 * stage range occurrence counts only for its part inside them. lp_run_windows_load reads the
 * windows (a window the program never closed, as in a killed process, runs to the last
 * kernel), lp_run_windows_clip then leaves out the occurrences outside every window (their
 * ranges open none) and cuts those that cross a window's edge; the facts go to
 * lp_run.capture. An occurrence that spans several windows becomes one part per window (the
 * time between them was not recorded); its range still names the first part. A trace
 * without windows (capture "all", or older) is left as it is, and so
 * is one that says windowed but has kernels and no window (the collector fell back to
 * recording everything before it could say so). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "llmprof/capture.h"
#include "run_internal.h"
#include "llmprof/sat.h"

static int cmp_window(const void *a, const void *b)
{
    const struct lp_window *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return (x->end < y->end) - (x->end > y->end); /* the closed one (later end) first */
}

static uint64_t meta_u64(const struct lp_trace *t, const char *key)
{
    const char *s = lp_trace_meta(t, key);
    return s ? strtoull(s, NULL, 10) : 0;
}

int lp_run_windows_load(struct lp_run_ctx *c)
{
    struct lp_capture_facts *f = &c->r->capture;
    const struct lp_trace *t = c->t;
    const char *mode = lp_trace_meta(t, "capture");
    memset(f, 0, sizeof *f);
    if (!mode || !strcmp(mode, "all") || (t->n_windows == 0 && t->n_kernels > 0))
        return LP_OK;
    f->windowed = 1;
    f->mode = mode;
    struct lp_capture_spec spec;
    char err[256];
    /* a mode this build does not know (a newer collector's) is still windowed */
    f->kind = lp_capture_parse(mode, &spec, err, sizeof err) == 0 ? (int)spec.mode : -1;
    uint64_t a = meta_u64(t, "start_trace_ns"), b = meta_u64(t, "end_trace_ns");
    f->span_ns = b > a && a ? b - a : 0;
    struct lp_window *w = malloc((t->n_windows ? t->n_windows : 1) * sizeof *w);
    if (!w)
        return LP_ERR_NOMEM;
    if (t->n_windows)
        memcpy(w, t->windows, t->n_windows * sizeof *w);
    qsort(w, t->n_windows, sizeof *w, cmp_window);
    /* the collector writes a window when it opens (end = start) and again when it closes */
    uint64_t last = 0;
    for (size_t i = 0; i < t->n_kernels; i++)
        if (lp_trace_kernel_end(t, &t->kernels[i]) > last)
            last = lp_trace_kernel_end(t, &t->kernels[i]);
    size_t n = 0;
    for (size_t i = 0; i < t->n_windows; i++) {
        if (n && w[n - 1].start == w[i].start)
            continue;
        w[n] = w[i];
        if (w[n].end <= w[n].start) /* never closed: to the last kernel */
            w[n].end = last > w[n].start ? last : w[n].start;
        f->recorded_ns = lp_sat_add(f->recorded_ns, w[n].end - w[n].start);
        n++;
    }
    c->windows = f->windows = w;
    c->n_windows = f->n_windows = n;
    return LP_OK;
}

/* The first window that ends after T. */
static size_t window_ending_after(const struct lp_run_ctx *c, uint64_t t)
{
    size_t lo = 0, hi = c->n_windows;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->windows[mid].end <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int lp_run_windows_clip(struct lp_run_ctx *c, size_t first)
{
    struct lp_run *r = c->r;
    struct lp_capture_facts *f = &r->capture;
    if (!f->windowed || first >= c->n_occ)
        return LP_OK;
    const struct lp_window *w = c->windows;
    int32_t *map = malloc(c->n_occ * sizeof *map);
    /* one part per window an occurrence overlaps */
    size_t n_parts = first;
    for (size_t i = first; i < c->n_occ; i++)
        for (size_t k = window_ending_after(c, c->occ[i].start);
             k < c->n_windows && w[k].start < c->occ[i].end; k++)
            n_parts++;
    struct lp_occ *out = malloc((n_parts ? n_parts : 1) * sizeof *out);
    if (!map || !out) {
        free(map);
        free(out);
        return LP_ERR_NOMEM;
    }
    memcpy(out, c->occ, first * sizeof *out);
    size_t kept = first;
    for (size_t i = 0; i < first; i++)
        map[i] = (int32_t)i;
    for (size_t i = first; i < c->n_occ; i++) {
        const struct lp_occ o = c->occ[i];
        /* the first window ending after the occurrence starts, then those it overlaps */
        size_t n_over = 0;
        for (size_t k = window_ending_after(c, o.start);
             k < c->n_windows && w[k].start < o.end; k++, n_over++) {
            /* one part per window: the time between windows was not recorded */
            struct lp_occ p = o;
            p.start = o.start > w[k].start ? o.start : w[k].start;
            p.end = o.end < w[k].end ? o.end : w[k].end;
            if (p.range_end > p.end)
                p.range_end = p.end;
            /* a request's start, before the vision: the first part's */
            p.open_start = n_over == 0 && o.open_start ? (o.open_start < p.start ? p.start
                                                                                : o.open_start)
                                                       : 0;
            p.carved_from = o.carved_from >= 0 && (size_t)o.carved_from < i
                                ? map[o.carved_from] : -1;
            p.part = (uint32_t)n_over;
            /* an inferred stage's bounds are the gaps between GEMM calls: not cut */
            p.cut = o.range >= 0 && (p.start != o.start || p.end != o.end);
            if (p.cut)
                p.tokens = 0; /* the range name's count is the whole range's */
            out[kept++] = p;
        }
        if (n_over == 0) {
            map[i] = -1;
            f->occ_outside++;
            continue;
        }
        map[i] = (int32_t)(kept - n_over);
        f->occ_across += n_over > 1;
        f->occ_cut += out[kept - n_over].start != o.start || out[kept - 1].end != o.end;
    }
    free(c->occ);
    c->occ = out;
    c->occ_cap = n_parts ? n_parts : 1;
    c->n_occ = kept;
    for (size_t i = 0; i < r->ranges.n; i++)
        if (c->ri[i].occ >= 0)
            c->ri[i].occ = map[c->ri[i].occ];
    free(map);
    return LP_OK;
}

int64_t lp_run_window_of(const struct lp_run_ctx *c, uint64_t t)
{
    return (int64_t)lp_count_until(c->windows, c->n_windows, sizeof *c->windows,
                                   offsetof(struct lp_window, start), t) - 1;
}

int lp_run_in_window(const struct lp_run_ctx *c, uint64_t t)
{
    if (!c->r->capture.windowed)
        return 1;
    int64_t k = lp_run_window_of(c, t);
    return k >= 0 && t <= c->windows[k].end;
}

uint64_t lp_run_outside_windows(const struct lp_run_ctx *c, uint64_t a, uint64_t b)
{
    if (!c->r->capture.windowed || b <= a)
        return 0;
    uint64_t inside = 0;
    int64_t k = lp_run_window_of(c, a);
    for (size_t i = k < 0 ? 0 : (size_t)k; i < c->n_windows && c->windows[i].start < b; i++) {
        uint64_t s = c->windows[i].start > a ? c->windows[i].start : a;
        uint64_t e = c->windows[i].end < b ? c->windows[i].end : b;
        inside += e > s ? e - s : 0;
    }
    return b - a - inside;
}
