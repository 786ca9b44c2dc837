/* The analysis of one recorded run, in the order each step needs the one before: ranges and
 * stages, the group of every piece of GPU work, kernel tables, operators, the timeline,
 * power, tokens and utilisation, and last the diagnosis that reads all of them. */
#include <math.h>
#include <stdarg.h>
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

int lp_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int lp_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

enum lp_stage_kind lp_occ_kind(const struct lp_run_ctx *c, const struct lp_occ *o)
{
    return c->r->stages[o->stage].kind;
}

static double rank(const double *v, size_t n, double q)
{
    double x = q * (double)(n - 1);
    size_t i = (size_t)x;
    return i + 1 < n ? v[i] + (x - (double)i) * (v[i + 1] - v[i]) : v[n - 1];
}

void lp_dist_compute(struct lp_dist *d, double *v, size_t n)
{
    memset(d, 0, sizeof *d);
    d->n = n;
    if (n == 0)
        return;
    qsort(v, n, sizeof *v, lp_cmp_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    d->mean = sum / (double)n;
    d->min = v[0];
    d->max = v[n - 1];
    d->p50 = rank(v, n, 0.50);
    d->p90 = rank(v, n, 0.90);
    d->p99 = rank(v, n, 0.99);
}

int lp_run_note(struct lp_run *r, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **p = realloc(r->notes, (r->n_notes + 1) * sizeof *p);
    if (!p)
        return LP_ERR_NOMEM;
    r->notes = p;
    if (!(p[r->n_notes] = strdup(buf)))
        return LP_ERR_NOMEM;
    r->n_notes++;
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

const char *lp_tokens_source_name(enum lp_tokens_source s)
{
    switch (s) {
    case LP_TOKENS_FLAG: return "flag";
    case LP_TOKENS_RANGE_NAME: return "range name";
    case LP_TOKENS_SHAPES: return "GEMM shapes";
    case LP_TOKENS_STEPS: return "steps x batch";
    default: return "unknown";
    }
}

const char *lp_steps_source_name(enum lp_steps_source s)
{
    switch (s) {
    case LP_STEPS_TOKENS: return "token count / batch";
    case LP_STEPS_RANGES: return "one per range";
    case LP_STEPS_LM_HEAD: return "lm_head GEMMs";
    case LP_STEPS_GRAPHS: return "CUDA graph launches";
    case LP_STEPS_SEQUENCE: return "repeating kernel sequence";
    default: return "not found";
    }
}

const char *lp_gap_cause_name(enum lp_gap_cause c)
{
    switch (c) {
    case LP_GAP_HOST: return "waiting on the host";
    case LP_GAP_DEVICE: return "queued work started late";
    default: return "no launch recorded";
    }
}

/* nvmlClocksEventReasons bits, in order */
static const char *const throttle_names[LP_THROTTLE_BITS] = {
    "gpu idle", "application clocks", "sw power cap", "hw slowdown", "sync boost",
    "sw thermal", "hw thermal", "hw power brake", "display clocks", "other"};

const char *lp_throttle_name(int bit)
{
    return bit >= 0 && bit < LP_THROTTLE_BITS ? throttle_names[bit] : "other";
}

static void free_table(struct lp_kernel_table *k)
{
    free(k->v);
    memset(k, 0, sizeof *k);
}

void lp_run_free(struct lp_run *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_names; i++) {
        free(r->names[i]);
        free(r->short_names[i]);
    }
    free(r->names);
    free(r->short_names);
    free(r->cats);
    free(r->kernel_group);
    for (size_t i = 0; i < r->n_stages; i++) {
        struct lp_stage_report *s = &r->stages[i];
        free(s->name);
        free_table(&s->top);
        for (size_t j = 0; j < s->n_sub; j++)
            free(s->sub[j].name);
        free(s->sub);
    }
    free(r->stages);
    free_table(&r->kernels);
    free_table(&r->all_kernels);
    for (size_t i = 0; i < r->n_ops; i++)
        free(r->ops[i].name);
    free(r->ops);
    free(r->top_gaps);
    free(r->bins);
    free(r->power);
    for (size_t i = 0; i < r->n_notes; i++)
        free(r->notes[i]);
    free(r->notes);
    free(r->findings);
    free(r->gemms);
    free(r->unshaped);
    free(r->graphs);
    free(r->kernel_capture_range);
    free(r->spans);
    lp_ranges_free(&r->ranges);
    memset(r, 0, sizeof *r);
}

static void ctx_free(struct lp_run_ctx *c)
{
    free(c->work);
    free(c->occ);
    free(c->ri);
    for (size_t i = 0; i < c->n_rules; i++)
        free(c->rule_names[i]);
    free(c->rule_names);
    free(c->rule_stage);
    free(c->subs);
    free(c->kernel_gemm);
    free(c->kernel_origin);
    free(c->gemm_store);
    free(c->gemm_replay_of);
    free(c->gemm_replays);
    free(c->kernel_work);
    free(c->gemm_occ);
    free(c->gemm_end);
    free(c->step_ns);
}

int lp_run_analyze(const struct lp_trace *t, const struct lp_run_options *opt, struct lp_run *r,
                   char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->trace = t;
    if (opt)
        r->opt = *opt;
    if (r->opt.top_k == 0)
        r->opt.top_k = 15;
    if (r->opt.gap_ns == 0)
        r->opt.gap_ns = 100000;
    r->nvml_device = -1;
    struct lp_run_ctx c = {.t = t, .r = r, .err = err, .errlen = errlen,
                           .warmup_stage = -1, .outside_stage = -1};
    if (errlen)
        err[0] = 0;
    int rc = lp_ranges_build(t, &r->ranges);
    if (rc == LP_OK)
        rc = lp_run_name_groups(&c);
    if (rc == LP_OK)
        rc = lp_run_stages(&c);
    if (rc == LP_OK)
        rc = lp_run_kernels(&c);
    if (rc == LP_OK)
        rc = lp_run_operators(&c);
    if (rc == LP_OK)
        rc = lp_run_timeline(&c);
    if (rc == LP_OK)
        rc = lp_run_power(&c);
    if (rc == LP_OK)
        rc = lp_run_tokens(&c);
    if (rc == LP_OK)
        rc = lp_run_llm_metrics(&c);
    if (rc == LP_OK) {
        lp_run_utilisation(&c);
        rc = lp_run_gemms(&c);
    }
    if (rc == LP_OK)
        rc = lp_run_graphs(&c);
    if (rc == LP_OK) {
        rc = lp_run_diagnose(&c);
    }
    if (rc == LP_ERR_NOMEM && errlen && !err[0])
        snprintf(err, errlen, "out of memory");
    ctx_free(&c);
    if (rc != LP_OK)
        lp_run_free(r);
    return rc;
}
