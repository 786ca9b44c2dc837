/* The GPU timeline: busy time as the union of all GPU work, idle gaps and why the GPU
 * waited (the next work launched after the GPU went idle means it waited on the host), what
 * the launching thread did meanwhile, utilisation over time, copy volume and device memory
 * held through cudaMalloc. */
#include <math.h>
#include <string.h>

#include "run_internal.h"
#include "llmprof/sat.h"

#define MAX_BINS 400
#define TOP_GAPS 10

/* The start of bin I; saturated, as the last bins of a run that ends near the clock's end
 * may reach past it. */
static uint64_t bin_start(const struct lp_run *r, uint64_t bin_ns, size_t i)
{
    return lp_sat_add_u64(r->timeline.bins_from_ns, lp_sat_mul_u64(i, bin_ns));
}

/* Adds [A, B) to the bins it falls in: all of it, or (WINDOWS) its time between capture
 * windows. */
static void add_to_bins(struct lp_run *r, uint64_t bin_ns, double *bins, uint64_t a, uint64_t b,
                        const struct lp_run_ctx *windows)
{
    if (a < r->timeline.bins_from_ns)
        a = r->timeline.bins_from_ns;
    if (!bins || b <= a)
        return;
    size_t i = (size_t)((a - r->timeline.bins_from_ns) / bin_ns);
    while (a < b && i < r->timeline.n_bins) {
        uint64_t bin_end = bin_start(r, bin_ns, i + 1);
        uint64_t e = b < bin_end ? b : bin_end;
        bins[i] += (double)(windows ? lp_run_outside_windows(windows, a, e) : e - a);
        a = e;
        i++;
    }
}

/* The I-th call by start: through APIS, (start, index) pairs sorted, or NULL when the trace's
 * calls are in start order already (they usually are: no copy then) */
static const struct lp_api_rec *api_at(const struct lp_trace *t, const struct lp_kv *apis, size_t i)
{
    return &t->apis[apis ? apis[i].val : i];
}

/* Time THREAD spent in CUDA calls within [a, b), and the call that took most of it. */
static uint64_t host_api_time(const struct lp_trace *t, const struct lp_kv *apis, uint32_t thread,
                              uint64_t a, uint64_t b, const char **top)
{
    size_t lo = 0, hi = t->n_apis;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (api_at(t, apis, mid)->start < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* calls that began a little before the gap may reach into it (a synchronize) */
    size_t from = lo > 256 ? lo - 256 : 0;
    uint64_t sum = 0, best = 0;
    *top = NULL;
    for (size_t i = from; i < t->n_apis && api_at(t, apis, i)->start < b; i++) {
        const struct lp_api_rec *x = api_at(t, apis, i);
        const struct lp_api_kind *xk = lp_trace_api_kind(t, x);
        uint64_t x_end = lp_trace_api_end(t, x);
        if (xk->thread != thread || x_end <= a)
            continue;
        uint64_t s = x->start > a ? x->start : a, e = x_end < b ? x_end : b;
        if (e <= s)
            continue;
        sum = lp_sat_add(sum, e - s); /* nested calls overlap */
        if (e - s > best) {
            best = e - s;
            *top = lp_trace_str(t, xk->name);
        }
    }
    return sum;
}

static int insert_gap(struct lp_run *r, const struct lp_gap *g)
{
    if (r->timeline.n_top_gaps == TOP_GAPS && r->timeline.top_gaps[TOP_GAPS - 1].dur >= g->dur)
        return 0;
    size_t i = r->timeline.n_top_gaps < TOP_GAPS ? r->timeline.n_top_gaps++ : TOP_GAPS - 1;
    while (i > 0 && r->timeline.top_gaps[i - 1].dur < g->dur) {
        r->timeline.top_gaps[i] = r->timeline.top_gaps[i - 1];
        i--;
    }
    r->timeline.top_gaps[i] = *g;
    return 1;
}

static int gaps_and_bins(struct lp_run_ctx *c, const struct lp_kv *apis)
{
    struct lp_run *r = c->r;
    const struct lp_trace *t = c->t;
    r->timeline.top_gaps = calloc(TOP_GAPS, sizeof *r->timeline.top_gaps);
    if (!r->timeline.top_gaps)
        return LP_ERR_NOMEM;
    if (c->n_work == 0)
        return LP_OK;
    /* the bins (the charts over time) start after a leading warm-up */
    r->timeline.bins_from_ns = r->timeline.first_ns;
    for (size_t i = 0; i < c->n_occ; i++) {
        if (r->stages[c->occ[i].stage].kind != LP_STAGE_KIND_WARMUP) {
            if (i > 0 && c->occ[i].start > r->timeline.bins_from_ns &&
                c->occ[i].start < r->timeline.last_ns)
                r->timeline.bins_from_ns = c->occ[i].start;
            break;
        }
    }
    uint64_t span = r->timeline.last_ns - r->timeline.bins_from_ns;
    r->timeline.n_bins = span ? (span < MAX_BINS ? (size_t)span : MAX_BINS) : 0;
    /* rounded up without SPAN + N - 1, which wraps for a span near 2^64 */
    uint64_t bin_ns =
        r->timeline.n_bins ? span / r->timeline.n_bins + (span % r->timeline.n_bins != 0) : 1;
    double *bins = r->timeline.n_bins ? calloc(r->timeline.n_bins, sizeof *bins) : NULL;
    /* idle time between capture windows, per bin: not recorded, not in the bin's share */
    double *unrec = r->timeline.n_bins && r->capture.windowed
                        ? calloc(r->timeline.n_bins, sizeof *unrec)
                        : NULL;
    if (r->timeline.n_bins && (!bins || (r->capture.windowed && !unrec))) {
        free(bins);
        return LP_ERR_NOMEM;
    }
    uint64_t end = 0, unrecorded = 0, busy_in_span = 0;
    for (size_t i = 0; i < c->n_work; i++) {
        const struct lp_work *w = &c->work[i];
        uint64_t start = lp_work_start(t, w), w_end = lp_work_end(t, w);
        int stage = lp_work_stage(c, w);
        /* idle time outside the capture windows was not recorded: neither busy nor idle (the
         * part after bins_from_ns, where the span starts, leaves the span) */
        uint64_t outside = i > 0 && start > end ? lp_run_outside_windows(c, end, start) : 0;
        if (outside) {
            uint64_t from = end > r->timeline.bins_from_ns ? end : r->timeline.bins_from_ns;
            unrecorded += lp_run_outside_windows(c, from, start);
            add_to_bins(r, bin_ns, unrec, end, start, c);
        }
        if (i > 0 && start > end + outside) {
            uint64_t idle = start - end - outside;
            struct lp_stage_report *s = &r->stages[stage];
            uint64_t launch = lp_work_launch(t, w);
            enum lp_gap_cause cause = !launch           ? LP_GAP_UNKNOWN
                                      : launch >= end   ? LP_GAP_HOST
                                                        : LP_GAP_DEVICE;
            if (cause == LP_GAP_HOST)
                s->host_wait_ns = lp_sat_add(s->host_wait_ns, idle);
            if (idle >= r->opt.gap_ns) {
                struct lp_gap g = {.start = end, .dur = lp_sat_clamp(idle), .stage = stage,
                                   .cause = cause};
                if (cause == LP_GAP_HOST)
                    g.host_api_ns =
                        host_api_time(t, apis, lp_work_thread(t, w), end, start, &g.api);
                r->timeline.n_gaps++;
                r->timeline.gap_ns = lp_sat_add(r->timeline.gap_ns, idle);
                r->timeline.gap_ns_by_cause[cause] =
                    lp_sat_add(r->timeline.gap_ns_by_cause[cause], idle);
                r->timeline.gap_host_api_ns =
                    lp_sat_add(r->timeline.gap_host_api_ns, g.host_api_ns);
                s->gaps++;
                s->gap_ns = lp_sat_add(s->gap_ns, idle);
                if (s->kind != LP_STAGE_KIND_WARMUP)
                    insert_gap(r, &g);
            }
        }
        uint64_t a = start > end ? start : end;
        if (w_end > a) {
            r->timeline.busy_ns = lp_sat_add(r->timeline.busy_ns, w_end - a);
            /* the share is over the span from bins_from_ns: a leading warm-up's work is not
             * in it (it was, and shares passed 100 % on a graph decode) */
            uint64_t from = a > r->timeline.bins_from_ns ? a : r->timeline.bins_from_ns;
            busy_in_span += w_end > from ? w_end - from : 0;
            add_to_bins(r, bin_ns, bins, a, w_end, NULL);
        }
        if (w_end > end)
            end = w_end;
    }
    r->timeline.unrecorded_ns = lp_sat_clamp(unrecorded);
    span -= unrecorded < span ? unrecorded : span;
    r->timeline.busy_share = span ? (double)busy_in_span / (double)span : 0;
    for (size_t i = 0; i < r->n_stages; i++) {
        struct lp_stage_report *s = &r->stages[i];
        double idle = s->wall.total - (double)s->busy_ns;
        s->host_wait_share = idle > 0 ? (double)s->host_wait_ns / idle : 0;
        if (s->host_wait_share > 1)
            s->host_wait_share = 1; /* host waits of work that ran past its ranges */
    }
    if (bins) {
        r->timeline.bins = malloc(r->timeline.n_bins * sizeof *r->timeline.bins);
        if (!r->timeline.bins) {
            free(bins);
            free(unrec);
            return LP_ERR_NOMEM;
        }
        for (size_t i = 0; i < r->timeline.n_bins; i++) {
            uint64_t b0 = bin_start(r, bin_ns, i), b1 = bin_start(r, bin_ns, i + 1);
            if (b1 > r->timeline.last_ns)
                b1 = r->timeline.last_ns;
            double recorded = b1 > b0 ? (double)(b1 - b0) - (unrec ? unrec[i] : 0) : 0;
            r->timeline.bins[i].start = b0;
            /* a bin wholly between windows was not recorded: NaN, neither busy nor idle */
            r->timeline.bins[i].busy = recorded > 0 ? (float)(bins[i] / recorded)
                              : unrec && b1 > b0 ? NAN : 0;
        }
        free(bins);
        free(unrec);
    }
    return LP_OK;
}

/* The launch delay of kernel W (launch call start -> work start), or UINT64_MAX for work that
 * is not a launched kernel */
static uint64_t launch_delay(const struct lp_run_ctx *c, const struct lp_work *w)
{
    uint64_t launch = lp_work_launch(c->t, w);
    if (!launch || lp_work_kind(w) != LP_OP_KERNEL)
        return UINT64_MAX;
    uint64_t start = lp_work_start(c->t, w);
    return start > launch ? start - launch : 0;
}

/* median launch delay per stage: the delays placed by stage (counted first), each stage's
 * median by selection; 4 bytes a delay while the longest fits */
static int launch_delays(struct lp_run_ctx *c)
{
    struct lp_run *r = c->r;
    size_t *at = calloc(r->n_stages + 1, sizeof *at);
    if (!at)
        return LP_ERR_NOMEM;
    uint64_t longest = 0;
    for (size_t i = 0; i < c->n_work; i++) {
        uint64_t d = launch_delay(c, &c->work[i]);
        if (d != UINT64_MAX) {
            at[lp_work_stage(c, &c->work[i]) + 1]++;
            longest = d > longest ? d : longest;
        }
    }
    for (size_t s = 0; s < r->n_stages; s++)
        at[s + 1] += at[s];
    int narrow = longest <= UINT32_MAX;
    size_t n = at[r->n_stages] ? at[r->n_stages] : 1;
    uint32_t *d32 = narrow ? malloc(n * sizeof *d32) : NULL;
    uint64_t *d64 = narrow ? NULL : malloc(n * sizeof *d64);
    if (!d32 && !d64) {
        free(at);
        return LP_ERR_NOMEM;
    }
    for (size_t i = 0; i < c->n_work; i++) { /* AT[s] moves from stage s's start to its end */
        const struct lp_work *w = &c->work[i];
        uint64_t d = launch_delay(c, w);
        if (d == UINT64_MAX)
            continue;
        size_t q = at[lp_work_stage(c, w)]++;
        if (narrow)
            d32[q] = (uint32_t)d;
        else
            d64[q] = d;
    }
    for (size_t s = 0, from = 0; s < r->n_stages; from = at[s++])
        if (at[s] > from) {
            size_t m = at[s] - from;
            r->stages[s].launch_delay_p50_ns = narrow ? lp_select_u32(d32 + from, m, m / 2)
                                                      : lp_select_u64(d64 + from, m, m / 2);
        }
    free(d32);
    free(d64);
    free(at);
    return LP_OK;
}

static void copies(struct lp_run_ctx *c)
{
    struct lp_run *r = c->r;
    for (size_t i = 0; i < c->n_work; i++) {
        const struct lp_work *w = &c->work[i];
        struct lp_stage_report *s = &r->stages[lp_work_stage(c, w)];
        if (lp_work_kind(w) == LP_OP_MEMCPY) {
            const struct lp_memcpy *m = &c->t->memcpys[w->index];
            int d = lp_copy_direction(m->copy_kind);
            s->memcpy_bytes[d] = lp_sat_add(s->memcpy_bytes[d], m->bytes);
            r->timeline.memcpy_bytes[d] = lp_sat_add(r->timeline.memcpy_bytes[d], m->bytes);
        } else if (lp_work_kind(w) == LP_OP_MEMSET) {
            uint64_t bytes = c->t->memsets[w->index].bytes;
            s->memset_bytes = lp_sat_add(s->memset_bytes, bytes);
            r->timeline.memset_bytes = lp_sat_add(r->timeline.memset_bytes, bytes);
        }
    }
}

/* Device memory held through cudaMalloc over time; the peak inside each stage's
 * occurrences. Caching allocators (PyTorch) hold what they reserved, not what tensors use.
 * Sizes are any uint64 in a trace: what is held is summed over the whole uint64 range
 * (saturating there), so that the free of an absurd allocation gives back exactly what it
 * took, and reported at most LP_SAT_MAX. */
static int device_memory(struct lp_run_ctx *c)
{
    const struct lp_trace *t = c->t;
    struct lp_run *r = c->r;
    size_t n = t->n_memory;
    if (n == 0)
        return LP_OK;
    struct lp_kv *kv = malloc(n * sizeof *kv);
    uint64_t *held = malloc(n * sizeof *held);
    if (!kv || !held) {
        free(kv);
        free(held);
        return LP_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++)
        kv[i] = (struct lp_kv){t->memory[i].timestamp, i};
    lp_sort_kv_inplace(kv, n);
    uint64_t cur = 0;
    for (size_t i = 0; i < n; i++) {
        const struct lp_memory *m = &t->memory[kv[i].val];
        if (m->op == LP_MEMORY_OP_ALLOC)
            cur = lp_sat_add_u64(cur, m->bytes);
        else if (m->op == LP_MEMORY_OP_FREE)
            cur = lp_sat_sub(cur, m->bytes); /* 0: frees of memory allocated before recording */
        held[i] = lp_sat_clamp(cur);
        if (held[i] > r->timeline.peak_alloc_bytes)
            r->timeline.peak_alloc_bytes = held[i];
    }
    size_t j = 0;
    for (size_t o = 0; o < c->n_occ; o++) {
        const struct lp_occ *x = &c->occ[o];
        /* occurrences are sorted by start; the held value at the start carries in */
        while (j < n && kv[j].key < x->start)
            j++;
        uint64_t peak = j > 0 ? held[j - 1] : 0;
        for (size_t q = j; q < n && kv[q].key <= x->end; q++)
            if (held[q] > peak)
                peak = held[q];
        struct lp_stage_report *s = &r->stages[x->stage];
        if (peak > s->peak_alloc_bytes)
            s->peak_alloc_bytes = peak;
    }
    free(kv);
    free(held);
    return LP_OK;
}

static uint64_t earliest(const struct lp_run_ctx *c)
{
    const struct lp_trace *t = c->t;
    uint64_t m = c->n_work ? lp_work_start(c->t, &c->work[0]) : UINT64_MAX;
#define EARLIEST(arr, n, field)                                                                \
    for (size_t i = 0; i < (n); i++)                                                           \
        if ((arr)[i].field && (arr)[i].field < m)                                              \
            m = (arr)[i].field;
    EARLIEST(t->markers, t->n_markers, timestamp)
    EARLIEST(t->apis, t->n_apis, start)
    EARLIEST(t->nvml, t->n_nvml, timestamp)
    EARLIEST(t->memory, t->n_memory, timestamp)
#undef EARLIEST
    return m == UINT64_MAX ? 0 : m;
}

int lp_run_bounds(struct lp_run_ctx *c)
{
    struct lp_run *r = c->r;
    r->t0_ns = earliest(c);
    r->kernels_recorded = lp_trace_kernels_recorded(c->t);
    if (c->n_work) {
        r->timeline.first_ns = lp_work_start(c->t, &c->work[0]);
        for (size_t i = 0; i < c->n_work; i++) {
            uint64_t end = lp_work_end(c->t, &c->work[i]);
            r->timeline.last_ns = end > r->timeline.last_ns ? end : r->timeline.last_ns;
        }
    }
    return LP_OK;
}

int lp_run_timeline(struct lp_run_ctx *c)
{
    const struct lp_trace *t = c->t;
    size_t ordered = 1;
    while (ordered < t->n_apis && t->apis[ordered].start >= t->apis[ordered - 1].start)
        ordered++;
    struct lp_kv *apis = NULL; /* sorted in place, when the calls are not in order */
    if (ordered < t->n_apis) {
        if (!(apis = malloc(t->n_apis * sizeof *apis)))
            return LP_ERR_NOMEM;
        for (size_t i = 0; i < t->n_apis; i++)
            apis[i] = (struct lp_kv){t->apis[i].start, i};
        lp_sort_kv_inplace(apis, t->n_apis);
    }
    int rc = gaps_and_bins(c, apis);
    free(apis);
    if (rc == LP_OK)
        rc = launch_delays(c);
    if (rc == LP_OK) {
        copies(c);
        rc = device_memory(c);
    }
    if (!c->r->kernels_recorded) {
        /* --light: how busy the GPU was is not known, not 0 (NaN: writers say so) */
        c->r->timeline.busy_share = NAN;
        for (size_t i = 0; i < c->r->n_stages; i++) {
            struct lp_stage_report *s = &c->r->stages[i];
            s->busy_share = s->host_wait_share = s->kernels_per_occurrence = NAN;
        }
    }
    return rc;
}

void lp_run_timeline_free(struct lp_run *r)
{
    free(r->timeline.top_gaps);
    free(r->timeline.bins);
}
