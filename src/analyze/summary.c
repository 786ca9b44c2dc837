/* A quick summary of one trace, for `llmprof info`: span, totals, losses, launch
 * correlation coverage and the top-level NVTX ranges grouped by name. */
#include <stdlib.h>
#include <string.h>

#include "llmprof/analyze.h"
#include "run_internal.h"
#include "llmprof/sat.h"

static void span(struct lp_trace_summary *s, uint64_t a, uint64_t b)
{
    if (a && (s->first_ns == 0 || a < s->first_ns))
        s->first_ns = a;
    if (b > s->last_ns)
        s->last_ns = b;
}

static int cmp_group(const void *a, const void *b)
{
    const struct lp_range_group *x = a, *y = b;
    return (x->total_ns < y->total_ns) - (x->total_ns > y->total_ns);
}

/* GEMM calls tied to kernels, those kernels, and calls with a known algorithm */
static int count_gemms(const struct lp_trace *t, struct lp_trace_summary *s)
{
    if (t->n_gemms == 0)
        return LP_OK;
    int32_t *kg = NULL;
    char *tied = calloc(t->n_gemms, 1);
    int rc = tied ? lp_gemm_link(t, &kg, NULL) : LP_ERR_NOMEM;
    for (size_t i = 0; rc == LP_OK && kg && i < t->n_kernels; i++)
        if (kg[i] >= 0) {
            s->n_gemm_kernels++;
            tied[kg[i]] = 1;
        }
    for (size_t i = 0; rc == LP_OK && i < t->n_gemms; i++) {
        s->n_gemm_tied += tied[i];
        s->n_gemm_algo += lp_trace_gemm_kind(t, &t->gemms[i])->algo >= 0;
    }
    free(kg);
    free(tied);
    return rc;
}

static size_t count_matched(const struct lp_trace *t)
{
    if (t->n_apis == 0)
        return 0;
    uint32_t *corr = malloc(t->n_apis * sizeof *corr);
    if (!corr)
        return 0;
    for (size_t i = 0; i < t->n_apis; i++)
        corr[i] = t->apis[i].correlation;
    qsort(corr, t->n_apis, sizeof *corr, lp_cmp_u32);
    size_t matched = 0;
    for (size_t i = 0; i < t->n_kernels; i++)
        if (bsearch(&t->kernels[i].correlation, corr, t->n_apis, sizeof *corr, lp_cmp_u32))
            matched++;
    free(corr);
    return matched;
}

/* FNV-1a of a group name, for the table below */
static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The top-level ranges grouped by name. A program may name every step ("decode 17"): the
 * groups are found through a hash table of their indices, not by a scan of those so far, and
 * are made in the order their names first appear, as the sort below has always seen them. */
static int group_top_ranges(const struct lp_trace *t, struct lp_trace_summary *s)
{
    size_t cap = 0, slots = 0;
    size_t *slot = NULL; /* index + 1 into s->top; 0: empty */
    int rc = LP_OK;
    for (size_t i = 0; i < s->ranges.n; i++) {
        const struct lp_range *r = &s->ranges.v[i];
        if (r->depth != 0)
            continue;
        char key[256];
        lp_range_group_name(lp_trace_str(t, r->name), key, sizeof key);
        uint64_t d = r->end - r->start;
        if (2 * (s->n_top + 1) > slots) { /* at most half full: short probes */
            size_t ns = slots ? 2 * slots : 64;
            size_t *nv = calloc(ns, sizeof *nv);
            if (!nv) {
                rc = LP_ERR_NOMEM;
                break;
            }
            for (size_t g = 0; g < s->n_top; g++) {
                size_t h = (size_t)name_hash(s->top[g].name) & (ns - 1);
                while (nv[h])
                    h = (h + 1) & (ns - 1);
                nv[h] = g + 1;
            }
            free(slot);
            slot = nv;
            slots = ns;
        }
        size_t h = (size_t)name_hash(key) & (slots - 1);
        while (slot[h] && strcmp(s->top[slot[h] - 1].name, key) != 0)
            h = (h + 1) & (slots - 1);
        size_t g = slot[h] ? slot[h] - 1 : s->n_top;
        if (g == s->n_top) {
            if (s->n_top == cap) {
                cap = cap ? cap * 2 : 16;
                struct lp_range_group *p = realloc(s->top, cap * sizeof *p);
                if (!p) {
                    rc = LP_ERR_NOMEM;
                    break;
                }
                s->top = p;
            }
            s->top[g] = (struct lp_range_group){.name = strdup(key), .min_ns = UINT64_MAX};
            if (!s->top[g].name) {
                rc = LP_ERR_NOMEM;
                break;
            }
            s->n_top++;
            slot[h] = g + 1;
        }
        struct lp_range_group *grp = &s->top[g];
        grp->count++;
        grp->total_ns = lp_sat_add(grp->total_ns, d);
        if (d < grp->min_ns)
            grp->min_ns = d;
        if (d > grp->max_ns)
            grp->max_ns = d;
    }
    free(slot);
    if (rc == LP_OK && s->n_top > 1)
        qsort(s->top, s->n_top, sizeof *s->top, cmp_group);
    return rc;
}

static uint64_t percentile(uint64_t *v, size_t n, unsigned pct)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, lp_cmp_u64);
    return v[(n - 1) * pct / 100];
}

static int summarize_nvml(const struct lp_trace *t, struct lp_trace_summary *s)
{
    size_t n = t->n_nvml;
    if (n == 0)
        return LP_OK;
    uint64_t *q = malloc(n * sizeof *q);
    if (!q)
        return LP_ERR_NOMEM;
    uint64_t seen = 0, first[64] = {0}, last[64] = {0}, count[64] = {0};
    for (size_t i = 0; i < n; i++) {
        const struct lp_nvml_sample *x = &t->nvml[i];
        q[i] = x->query_ns;
        if (x->device >= 64)
            continue;
        if (!(seen >> x->device & 1)) {
            seen |= 1ull << x->device;
            s->n_nvml_devices++;
            first[x->device] = x->timestamp;
        }
        last[x->device] = x->timestamp;
        count[x->device]++;
    }
    /* the mean, not a median: a read that alternates between fast and slow moves each
     * midpoint, while the reads still start on schedule */
    for (unsigned d = 0; d < 64; d++) {
        if (count[d] > 1 && last[d] > first[d]) {
            s->nvml_interval_ns = (last[d] - first[d]) / (count[d] - 1);
            break;
        }
    }
    s->nvml_query_p50_ns = percentile(q, n, 50);
    s->nvml_query_p99_ns = percentile(q, n, 99);
    free(q);
    return LP_OK;
}

int lp_trace_summarize(const struct lp_trace *t, struct lp_trace_summary *s)
{
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < t->n_kernels; i++) {
        uint64_t start = t->kernels[i].start, end = lp_trace_kernel_end(t, &t->kernels[i]);
        span(s, start, end);
        if (end > start)
            s->kernel_ns = lp_sat_add(s->kernel_ns, end - start);
        uint32_t flags = lp_trace_kernel_config(t, &t->kernels[i])->flags;
        s->n_replays += (flags & LP_KERNEL_FLAG_REPLAY) != 0;
    }
    for (size_t i = 0; i < t->n_windows; i++) {
        s->n_windows += i == 0 || t->windows[i].start != t->windows[i - 1].start;
        if (t->windows[i].end > t->windows[i].start)
            s->window_ns = lp_sat_add(s->window_ns, t->windows[i].end - t->windows[i].start);
    }
    for (size_t i = 0; i < t->n_memcpys; i++) {
        span(s, t->memcpys[i].start, t->memcpys[i].end);
        s->memcpy_bytes = lp_sat_add(s->memcpy_bytes, t->memcpys[i].bytes);
    }
    for (size_t i = 0; i < t->n_memsets; i++) {
        span(s, t->memsets[i].start, t->memsets[i].end);
        s->memset_bytes = lp_sat_add(s->memset_bytes, t->memsets[i].bytes);
    }
    for (size_t i = 0; i < t->n_markers; i++)
        span(s, t->markers[i].timestamp, t->markers[i].timestamp);
    for (size_t i = 0; i < t->n_apis; i++)
        span(s, t->apis[i].start, lp_trace_api_end(t, &t->apis[i]));
    for (size_t i = 0; i < t->n_losses; i++) {
        s->lost_records = lp_sat_add(s->lost_records, t->losses[i].count);
        if (t->losses[i].count == 0)
            s->n_loss_notes++;
    }
    /* records the END chunk says were written that no chunk read holds */
    s->lost_records = lp_sat_add(s->lost_records, t->records_unread);
    for (size_t i = 0; i < t->n_counters; i++) {
        s->counter_valid |= t->counters[i].valid;
        for (unsigned k = 0; k < LP_COUNTER_COUNT; k++)
            s->counter_total[k] += (double)t->counters[i].value[k];
    }
    for (size_t i = 0; i < t->n_pm; i++)
        for (unsigned k = 0; k < LP_PM_COUNT; k++)
            if (t->pm[i].valid & (1u << k)) {
                s->pm_value[k] += lp_pm_value(&t->pm[i], k);
                s->pm_n[k]++;
            }
    for (unsigned k = 0; k < LP_PM_COUNT; k++) /* sums to means, but for the bytes moved */
        if (s->pm_n[k] && k != LP_PM_DRAM_READ && k != LP_PM_DRAM_WRITE)
            s->pm_value[k] /= (double)s->pm_n[k];
    s->n_launch_matched = count_matched(t);
    if (count_gemms(t, s) != LP_OK)
        return LP_ERR_NOMEM;
    int rc = summarize_nvml(t, s);
    if (rc == LP_OK)
        rc = lp_ranges_build(t, &s->ranges);
    if (rc == LP_OK)
        rc = group_top_ranges(t, s);
    if (rc != LP_OK)
        lp_trace_summary_free(s);
    return rc;
}

void lp_trace_summary_free(struct lp_trace_summary *s)
{
    for (size_t i = 0; i < s->n_top; i++)
        free(s->top[i].name);
    free(s->top);
    lp_ranges_free(&s->ranges);
    memset(s, 0, sizeof *s);
}
