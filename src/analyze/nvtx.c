/* NVTX ranges from marker records: a start and an end marker share an id; nesting is by
 * time on the thread that opened the range. */
#include <stdlib.h>
#include <string.h>

#include "llmprof/analyze.h"

/* Markers by time, ties in record order (a push and a pop in one nanosecond pair as
 * recorded, whatever qsort's algorithm) */
static int cmp_marker_time(const void *a, const void *b)
{
    const struct lp_marker *x = *(const struct lp_marker *const *)a;
    const struct lp_marker *y = *(const struct lp_marker *const *)b;
    if (x->timestamp != y->timestamp)
        return x->timestamp < y->timestamp ? -1 : 1;
    return (x > y) - (x < y);
}

/* Ranges by (thread, start, longer first), ties in the order they were opened: PARENT
 * holds that place while they are sorted */
static int cmp_range(const void *a, const void *b)
{
    const struct lp_range *x = a, *y = b;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? 1 : -1; /* enclosing (longer) first */
    return (x->parent > y->parent) - (x->parent < y->parent);
}

static uint64_t last_timestamp(const struct lp_trace *t)
{
    uint64_t last = 0;
    for (size_t i = 0; i < t->n_markers; i++)
        if (t->markers[i].timestamp > last)
            last = t->markers[i].timestamp;
    for (size_t i = 0; i < t->n_kernels; i++)
        if (lp_trace_kernel_end(t, &t->kernels[i]) > last)
            last = lp_trace_kernel_end(t, &t->kernels[i]);
    return last;
}

/* Open ranges by marker id: a small open-addressing table. */
struct open_table {
    uint32_t *ids;
    size_t *idx;
    uint8_t *used;
    size_t cap;
};

static size_t slot_of(const struct open_table *o, uint32_t id)
{
    size_t i = (id * 2654435761u) & (o->cap - 1);
    while (o->used[i] && o->ids[i] != id)
        i = (i + 1) & (o->cap - 1);
    return i;
}

size_t lp_request_word(const char *name, const char *keyword)
{
    size_t k = strlen(keyword), n = 0;
    if (!name || strncmp(name, keyword, k) != 0 || name[k] != ' ')
        return 0;
    const unsigned char *id = (const unsigned char *)name + k + 1;
    while (n < LP_REQUEST_ID_MAX && id[n] && id[n] != ' ')
        n++;
    while (n > 0 && (id[n] & 0xC0) == 0x80) /* cut inside a character: before it */
        n--;
    return n;
}

int lp_ranges_build(const struct lp_trace *t, struct lp_ranges *out)
{
    memset(out, 0, sizeof *out);
    size_t n = t->n_markers;
    if (n == 0)
        return LP_OK;
    int rc = LP_ERR_NOMEM;
    const struct lp_marker **m = malloc(n * sizeof *m);
    struct lp_range *v = calloc(n, sizeof *v);
    size_t *stack = malloc((n + 1) * sizeof *stack);
    uint8_t *is_req = calloc(n, 1);
    struct open_table o = {0};
    o.cap = 64;
    while (o.cap < n * 2)
        o.cap *= 2;
    o.ids = calloc(o.cap, sizeof *o.ids);
    o.idx = calloc(o.cap, sizeof *o.idx);
    o.used = calloc(o.cap, 1);
    if (!m || !v || !stack || !is_req || !o.ids || !o.idx || !o.used)
        goto out;
    /* ranges named "request <id>" are the request convention's only in a program that marks
     * its tokens too: a script's own "request 3" range around a call stays a range */
    int convention = 0;
    for (size_t i = 0; i < n; i++) {
        m[i] = &t->markers[i];
        convention |= (m[i]->flags & LP_MARKER_FLAG_INSTANT) &&
                      lp_request_word(lp_trace_str(t, m[i]->name), "token") > 0;
    }
    qsort(m, n, sizeof *m, cmp_marker_time);
    size_t nr = 0;
    for (size_t i = 0; i < n; i++) {
        const struct lp_marker *k = m[i];
        size_t s = slot_of(&o, k->id);
        if (k->flags & LP_MARKER_FLAG_START) {
            v[nr] = (struct lp_range){.start = k->timestamp, .end = UINT64_MAX, .name = k->name,
                                      .domain = k->domain, .thread = k->thread, .parent = -1};
            is_req[nr] = convention && lp_request_word(lp_trace_str(t, k->name), "request") > 0;
            o.used[s] = 1;
            o.ids[s] = k->id;
            o.idx[s] = nr++;
        } else if (k->flags & LP_MARKER_FLAG_END) {
            if (o.used[s] && v[o.idx[s]].end == UINT64_MAX)
                v[o.idx[s]].end = k->timestamp;
            else
                out->unmatched_ends++;
        }
    }
    uint64_t last = last_timestamp(t);
    for (size_t i = 0; i < nr; i++) {
        if (v[i].end == UINT64_MAX) {
            v[i].end = last > v[i].start ? last : v[i].start;
            v[i].flags |= LP_RANGE_UNCLOSED;
            if (is_req[i])
                out->req_unclosed++;
            else
                out->unclosed++;
        }
    }
    /* request ranges overlap: apart, by start (the order they were made in) */
    size_t nq = 0, nk = 0;
    for (size_t i = 0; i < nr; i++)
        nq += is_req[i];
    if (nq) {
        if (!(out->req = malloc(nq * sizeof *out->req)))
            goto out;
        for (size_t i = 0; i < nr; i++) {
            if (is_req[i])
                out->req[out->n_req++] = v[i];
            else
                v[nk++] = v[i];
        }
        nr = nk;
    }
    for (size_t i = 0; i < nr; i++)
        v[i].parent = (int64_t)i; /* the tie-break; each is given its parent below */
    qsort(v, nr, sizeof *v, cmp_range);
    /* nesting: a stack of enclosing ranges per thread */
    size_t depth = 0;
    for (size_t i = 0; i < nr; i++) {
        if (i > 0 && v[i].thread != v[i - 1].thread)
            depth = 0;
        while (depth > 0 && v[stack[depth - 1]].end <= v[i].start)
            depth--;
        v[i].depth = (uint32_t)depth;
        v[i].parent = depth ? (int64_t)stack[depth - 1] : -1;
        stack[depth++] = i;
    }
    out->v = v;
    out->n = nr;
    v = NULL;
    rc = LP_OK;
out:
    if (rc != LP_OK) {
        free(out->req);
        out->req = NULL;
        out->n_req = 0;
    }
    free(is_req);
    free(stack);
    free(m);
    free(v);
    free(o.ids);
    free(o.idx);
    free(o.used);
    return rc;
}

void lp_ranges_free(struct lp_ranges *r)
{
    free(r->v);
    free(r->req);
    memset(r, 0, sizeof *r);
}

const char *lp_range_group_name(const char *name, char *buf, size_t len)
{
    size_t o = 0;
    const char *p = name;
    if (len == 0)
        return buf;
    while (*p) {
        while (*p == ' ')
            p++;
        const char *w = p;
        while (*p && *p != ' ')
            p++;
        size_t wl = (size_t)(p - w);
        if (wl == 0 || memchr(w, '=', wl))
            continue;
        if (o > 0 && o + 1 < len)
            buf[o++] = ' ';
        for (size_t i = 0; i < wl && o + 1 < len; i++)
            buf[o++] = w[i];
    }
    buf[o] = 0;
    return buf;
}

/* 1 when range I starts at or before (THREAD, TS) in the ranges' order */
static int starts_by(const struct lp_ranges *rg, size_t i, uint32_t thread, uint64_t ts)
{
    const struct lp_range *x = &rg->v[i];
    return x->thread < thread || (x->thread == thread && x->start <= ts);
}

/* The innermost range open at TS on THREAD, from LO: the first range after (THREAD, TS) */
static int32_t open_at(const struct lp_ranges *rg, uint32_t thread, uint64_t ts, size_t lo)
{
    if (lo == 0)
        return -1;
    int64_t j = (int64_t)lo - 1;
    if (rg->v[j].thread != thread)
        return -1;
    while (j >= 0 && rg->v[j].end < ts)
        j = rg->v[j].parent;
    return (int32_t)j;
}

/* the first range after (THREAD, TS) */
static size_t first_after(const struct lp_ranges *rg, uint32_t thread, uint64_t ts)
{
    size_t lo = 0, hi = rg->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (starts_by(rg, mid, thread, ts))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int32_t lp_ranges_at(const struct lp_ranges *rg, uint32_t thread, uint64_t ts)
{
    return open_at(rg, thread, ts, first_after(rg, thread, ts));
}

int32_t lp_ranges_at_hint(const struct lp_ranges *rg, uint32_t thread, uint64_t ts, size_t *hint)
{
    size_t h = *hint;
    /* the last answer's place, or the next one: where launches in time order land */
    for (size_t k = h; k <= h + 1 && k <= rg->n; k++)
        if ((k == 0 || starts_by(rg, k - 1, thread, ts)) &&
            (k == rg->n || !starts_by(rg, k, thread, ts))) {
            *hint = k;
            return open_at(rg, thread, ts, k);
        }
    *hint = first_after(rg, thread, ts);
    return open_at(rg, thread, ts, *hint);
}
