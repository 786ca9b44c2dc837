/* Diagnosis: rules that read the computed numbers and name a likely cause. Each finding is a
 * code with the stage and numbers it read (the report layer says the cause and the next
 * step); thresholds are in the rules below and in docs/report-schema.md. */
#include <string.h>

#include "run_internal.h"
#include "llmprof/sat.h"

static struct lp_finding *add(struct lp_run *r, enum lp_finding_code code, int severity,
                              int stage)
{
    struct lp_finding *p = realloc(r->findings, (r->n_findings + 1) * sizeof *p);
    if (!p)
        return NULL;
    r->findings = p;
    struct lp_finding *f = &p[r->n_findings++];
    *f = (struct lp_finding){.code = code, .severity = severity, .stage = stage};
    return f;
}

static int losses(struct lp_run *r)
{
    const struct lp_trace *t = r->trace;
    uint64_t lost = 0;
    r->losses_uncounted = 0;
    for (size_t i = 0; i < t->n_losses; i++) {
        lost = lp_sat_add(lost, t->losses[i].count);
        r->losses_uncounted += t->losses[i].count == 0;
    }
    /* records the END chunk says were written that no chunk read holds */
    lost = lp_sat_add(lost, t->records_unread);
    r->lost_records = lost;
    if (lost == 0 && t->complete && t->n_warnings == 0 && t->n_losses == 0 && !t->altered)
        return LP_OK;
    return add(r, LP_FINDING_TRACE_NOT_WHOLE, 1, -1) ? LP_OK : LP_ERR_NOMEM;
}

/* The GPU idles waiting for launches: what a CUDA graph could save, per decode step (per
 * token) or per prefill (of the TTFT). */
static int launch_bound(struct lp_run *r, int stage)
{
    const struct lp_stage_report *s = &r->stages[stage];
    /* one kernel per occurrence (a projector) has nothing a graph would batch; without
     * kernel records (--light) busy and host wait are not known */
    if (!r->kernels_recorded || s->occurrences == 0 || s->busy_share >= 0.8 ||
        s->host_wait_share < 0.5 || s->kernels_per_occurrence < 2)
        return LP_OK;
    int decode = s->kind == LP_STAGE_KIND_DECODE && s->steps > 0;
    double units = decode ? (double)s->steps : (double)s->occurrences;
    struct lp_finding *f = add(r, LP_FINDING_LAUNCH_BOUND, 2, stage);
    if (!f)
        return LP_ERR_NOMEM;
    f->unit = decode                              ? LP_FINDING_UNIT_STEP
              : s->kind == LP_STAGE_KIND_PREFILL ? LP_FINDING_UNIT_PREFILL
                                                  : LP_FINDING_UNIT_OCCURRENCE;
    f->per_ns = s->wall.total / units;
    f->busy_ns = (double)s->busy_ns / units;
    f->idle_ns = f->per_ns > f->busy_ns ? f->per_ns - f->busy_ns : 0;
    f->kernels_per_unit = (double)s->kernels / units;
    return LP_OK;
}

static int utilisation(struct lp_run *r, int stage)
{
    const struct lp_stage_report *s = &r->stages[stage];
    if (!s->has_util)
        return LP_OK;
    if (s->kind == LP_STAGE_KIND_DECODE && s->busy_share >= 0.8 && s->mbu < 0.5)
        return add(r, LP_FINDING_DECODE_LOW_MBU, 1, stage) ? LP_OK : LP_ERR_NOMEM;
    if (s->kind != LP_STAGE_KIND_PREFILL || s->mfu >= 0.3)
        return LP_OK;
    struct lp_finding *f = add(r, LP_FINDING_PREFILL_LOW_MFU, 1, stage);
    if (!f)
        return LP_ERR_NOMEM;
    double peak = r->util.gpu.tflops[r->util.dtype];
    f->share = s->gemm_ns && peak > 0 ? s->gemm_tflops / peak : -1;
    f->reason = s->cat_ns[LP_KCAT_GRAPH] > 0                ? LP_MFU_REASON_REPLAYS
                : r->kernels_recorded && s->busy_share < 0.5 ? LP_MFU_REASON_IDLE
                : s->cat_share[LP_KCAT_GEMM] < 0.5          ? LP_MFU_REASON_NON_GEMM
                : f->share >= 0.4                           ? LP_MFU_REASON_GEMM_ELSEWHERE
                                                            : LP_MFU_REASON_GEMM_SLOW;
    return LP_OK;
}

/* The share of a stage's GPU time in kernels fusion would remove: elementwise, norm,
 * reduction and copies. */
static double fusable_share(const struct lp_stage_report *s)
{
    return s->cat_share[LP_KCAT_ELEMENTWISE] + s->cat_share[LP_KCAT_NORM] +
           s->cat_share[LP_KCAT_REDUCTION] + s->cat_share[LP_KCAT_MEMCPY] +
           s->cat_share[LP_KCAT_MEMSET];
}

static int gemm_share(struct lp_run *r, int stage)
{
    const struct lp_stage_report *s = &r->stages[stage];
    /* GEMMs inside replays recorded whole are not seen as GEMMs: then nothing is known. The
     * finding says fusable kernels take more than the GEMMs: a prefill whose GEMMs are its
     * largest part (48 % beside 36 % elementwise) hears nothing of it */
    if (s->kind != LP_STAGE_KIND_PREFILL || s->gpu_ns == 0 || s->has_util ||
        s->cat_share[LP_KCAT_GEMM] >= 0.5 || s->cat_ns[LP_KCAT_GRAPH] > 0 ||
        fusable_share(s) <= s->cat_share[LP_KCAT_GEMM])
        return LP_OK;
    struct lp_finding *f = add(r, LP_FINDING_PREFILL_FEW_GEMMS, 1, stage);
    if (!f)
        return LP_ERR_NOMEM;
    f->share = fusable_share(s);
    return LP_OK;
}

static int copies(struct lp_run *r, int stage)
{
    const struct lp_stage_report *s = &r->stages[stage];
    double cp = s->cat_ns[LP_KCAT_MEMCPY];
    if (s->gpu_ns == 0 || cp < 0.1 * (double)s->gpu_ns || s->kind == LP_STAGE_KIND_OUTSIDE)
        return LP_OK;
    return add(r, LP_FINDING_COPIES, 1, stage) ? LP_OK : LP_ERR_NOMEM;
}

static int variance(struct lp_run *r, int stage)
{
    const struct lp_stage_report *s = &r->stages[stage];
    /* under a millisecond, a few tens of microseconds of host jitter make the spread */
    if (!s->variable || s->kind == LP_STAGE_KIND_WARMUP || s->wall.mean < 1e6)
        return LP_OK;
    return add(r, LP_FINDING_VARIANCE, 1, stage) ? LP_OK : LP_ERR_NOMEM;
}

/* Host time CUPTI recorded inside a measured stage on the program's threads (overhead.c): CUDA
 * loading code there (the warm-up did not run those kernels), or CUPTI's own work, at 1 % of
 * the stage's time or more and 100 us at least (a few microseconds in a tiny run say
 * nothing). */
#define OVERHEAD_SHARE 0.01
#define OVERHEAD_MIN_NS 100000
static int overhead(struct lp_run *r, int stage)
{
    static const struct {
        enum lp_overhead_class cls;
        enum lp_finding_code code;
        int severity;
    } rules[] = {{LP_OVERHEAD_CLASS_LOADING, LP_FINDING_LOADING, 1},
                 {LP_OVERHEAD_CLASS_PROFILER, LP_FINDING_PROFILER_WORK, 0}};
    const struct lp_stage_report *s = &r->stages[stage];
    for (size_t i = 0; i < sizeof rules / sizeof *rules; i++) {
        if (s->overhead_share[rules[i].cls] < OVERHEAD_SHARE ||
            s->overhead_ns[rules[i].cls] < OVERHEAD_MIN_NS)
            continue;
        struct lp_finding *f = add(r, rules[i].code, rules[i].severity, stage);
        if (!f)
            return LP_ERR_NOMEM;
        f->overhead_ns = (double)s->overhead_ns[rules[i].cls];
        f->overhead_n = s->overhead_n[rules[i].cls];
        f->share = s->overhead_share[rules[i].cls];
    }
    return LP_OK;
}

static int throttling(struct lp_run *r)
{
    static const int bits[] = {2, 3, 5, 6, 7}; /* power cap, hw slowdown, thermal, brake */
    uint32_t seen = 0;
    int sev = 0;
    for (size_t i = 0; i < sizeof bits / sizeof *bits; i++) {
        if (r->power.throttle_share[bits[i]] < 0.05)
            continue;
        sev = bits[i] == 2 && sev < 2 ? 1 : 2;
        seen |= 1u << bits[i];
    }
    if (!seen)
        return LP_OK;
    struct lp_finding *f = add(r, LP_FINDING_THROTTLED, sev, -1);
    if (!f)
        return LP_ERR_NOMEM;
    f->throttle_bits = seen;
    return LP_OK;
}

int lp_run_diagnose(struct lp_run_ctx *c)
{
    struct lp_run *r = c->r;
    int rc = losses(r);
    for (size_t i = 0; i < r->n_stages && rc == LP_OK; i++) {
        enum lp_stage_kind kind = r->stages[i].kind;
        if (kind == LP_STAGE_KIND_WARMUP || kind == LP_STAGE_KIND_OUTSIDE)
            continue;
        if ((rc = launch_bound(r, (int)i)) == LP_OK && (rc = utilisation(r, (int)i)) == LP_OK &&
            (rc = gemm_share(r, (int)i)) == LP_OK && (rc = copies(r, (int)i)) == LP_OK &&
            (rc = variance(r, (int)i)) == LP_OK)
            rc = overhead(r, (int)i);
    }
    if (rc == LP_OK)
        rc = throttling(r);
    if (rc == LP_OK && c->outside_stage >= 0) {
        const struct lp_stage_report *s = &r->stages[c->outside_stage];
        uint64_t all = r->all_kernels.gpu_ns;
        if (all && s->gpu_ns > all / 5) {
            struct lp_finding *f = add(r, LP_FINDING_OUTSIDE_WORK, 0, c->outside_stage);
            if (f)
                f->share = (double)s->gpu_ns / (double)all;
            rc = f ? LP_OK : LP_ERR_NOMEM;
        }
    }
    /* a serving loop's passes mix prefill and decode: stage ranges would not split them */
    if (rc == LP_OK && r->n_stages == 1 && r->stages[0].kind == LP_STAGE_KIND_RUN &&
        r->serving.cause == LP_SERVING_CAUSE_NONE)
        rc = add(r, LP_FINDING_NO_STAGES, 0, -1) ? LP_OK : LP_ERR_NOMEM;
    /* most severe first, stable */
    for (size_t i = 1; i < r->n_findings; i++) {
        struct lp_finding x = r->findings[i];
        size_t j = i;
        while (j > 0 && r->findings[j - 1].severity < x.severity) {
            r->findings[j] = r->findings[j - 1];
            j--;
        }
        r->findings[j] = x;
    }
    return rc;
}

void lp_run_findings_free(struct lp_run *r)
{
    free(r->findings);
}
