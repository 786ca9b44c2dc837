/* Capture windows (record --capture): kernels exist only inside the trace's windows, so a
 * stage range occurrence counts only for its part inside them. Runs between classifying
 * the ranges and making the stages: occurrences outside every window are left out (their
 * ranges open none), those that cross a window's edge are cut to it, and the facts are
 * kept in lp_run.capture. A trace without windows (capture "all", or older) is left as it
 * is. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "run_internal.h"

static int cmp_window(const void *a, const void *b)
{
    const struct lp_window *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static uint64_t meta_u64(const struct lp_trace *t, const char *key)
{
    const char *s = lp_trace_meta(t, key);
    return s ? strtoull(s, NULL, 10) : 0;
}

int lp_run_windows_clip(struct lp_run_ctx *c)
{
    struct lp_run *r = c->r;
    struct lp_capture_facts *f = &r->capture;
    const struct lp_trace *t = c->t;
    const char *mode = lp_trace_meta(t, "capture");
    memset(f, 0, sizeof *f);
    if (!mode || !strcmp(mode, "all"))
        return LP_OK;
    f->windowed = 1;
    f->mode = mode;
    f->n_windows = t->n_windows;
    uint64_t a = meta_u64(t, "start_trace_ns"), b = meta_u64(t, "end_trace_ns");
    f->span_ns = b > a && a ? b - a : 0;
    struct lp_window *w = malloc((t->n_windows ? t->n_windows : 1) * sizeof *w);
    int32_t *map = malloc((c->n_occ ? c->n_occ : 1) * sizeof *map);
    if (!w || !map) {
        free(w);
        free(map);
        return LP_ERR_NOMEM;
    }
    memcpy(w, t->windows, t->n_windows * sizeof *w);
    qsort(w, t->n_windows, sizeof *w, cmp_window);
    for (size_t i = 0; i < t->n_windows; i++)
        f->recorded_ns += w[i].end > w[i].start ? w[i].end - w[i].start : 0;
    size_t kept = 0;
    for (size_t i = 0; i < c->n_occ; i++) {
        struct lp_occ o = c->occ[i];
        /* the first window ending after the occurrence starts, then those it overlaps */
        size_t lo = 0, hi = t->n_windows;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (w[mid].end <= o.start)
                lo = mid + 1;
            else
                hi = mid;
        }
        size_t last = lo, n_over = 0;
        for (size_t k = lo; k < t->n_windows && w[k].start < o.end; k++, n_over++)
            last = k;
        if (n_over == 0) {
            map[i] = -1;
            f->occ_outside++;
            continue;
        }
        uint64_t s = o.start > w[lo].start ? o.start : w[lo].start;
        uint64_t e = o.end < w[last].end ? o.end : w[last].end;
        f->occ_cut += s != o.start || e != o.end;
        f->occ_across += n_over > 1;
        o.start = s;
        o.end = e;
        o.carved_from = o.carved_from >= 0 && (size_t)o.carved_from < i ? map[o.carved_from] : -1;
        if (o.range_end > e)
            o.range_end = e;
        map[i] = (int32_t)kept;
        c->occ[kept++] = o;
    }
    c->n_occ = kept;
    for (size_t i = 0; i < r->ranges.n; i++)
        if (c->ri[i].occ >= 0)
            c->ri[i].occ = map[c->ri[i].occ];
    c->windows = w;
    c->n_windows = t->n_windows;
    free(map);
    return LP_OK;
}

int64_t lp_run_window_of(const struct lp_run_ctx *c, uint64_t t)
{
    return (int64_t)lp_count_until(c->windows, c->n_windows, sizeof *c->windows,
                                   offsetof(struct lp_window, start), t) - 1;
}
