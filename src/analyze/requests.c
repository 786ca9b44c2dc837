/* Requests and warm-up. A request is a prefill with the vision before it and the decode
 * after it (occurrences in time order: a vision or prefill after a prefill or decode opens the
 * next one). Programs rarely name their warm-up, so the first request is set apart as warmup
 * when its TTFT or TPOT is an outlier against the others (the rule in docs/report.md); in a
 * run with no prefill, the first occurrence of each stage against that stage's others. Then the LLM
 * metrics over the measured requests: TTFT, TPOT and inter-token latency distributions. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "run_internal.h"

/* the first value is an outlier: over 1.5 times the median of the others and, when they
 * vary, over 6 robust standard deviations (1.4826 MAD) above it */
#define OUTLIER_RATIO 1.5
#define OUTLIER_SIGMAS 6.0

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, lp_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int outlier(double first, double *others, size_t n, double *med)
{
    if (n == 0 || first <= 0)
        return 0;
    *med = median(others, n);
    for (size_t i = 0; i < n; i++)
        others[i] = fabs(others[i] - *med);
    double mad = median(others, n);
    return *med > 0 && first > OUTLIER_RATIO * *med &&
           first > *med + OUTLIER_SIGMAS * 1.4826 * mad;
}

static int measured(const struct lp_run_ctx *c, const struct lp_occ *o)
{
    enum lp_stage_kind k = lp_occ_kind(c, o);
    return k != LP_STAGE_KIND_WARMUP && k != LP_STAGE_KIND_RUN;
}

/* Per request: TTFT (from its first occurrence's start to its first prefill's end) and
 * decode time and steps. TTFT is 0 without a prefill, steps 0 when any decode is uncounted. */
struct request {
    uint64_t start, prefill_end; /* start valid when measured */
    int64_t prefill_tokens;       /* of its first prefill, 0 unknown */
    double decode_ns;
    int64_t steps;
    int uncounted, measured, decode;
    int cut_prefill, cut_decode; /* cut by a capture window: no TTFT, no TPOT */
};

/* Inferred prefills have no range of their own. A request opened by a vision range (a hook
 * inside generate()) starts where the outermost range around that range starts, when that
 * range also holds the prefill's end, began after the earlier occurrences ended and ended
 * before the next request began: the program's own range around the call, so that its host
 * work before the vision counts (a range around the whole program holds other requests). */
static void enclosing_starts(const struct lp_run_ctx *c, struct request *q, size_t n)
{
    const struct lp_ranges *rg = &c->r->ranges;
    uint64_t before = 0;
    int32_t seen = -1;
    for (size_t i = 0; i < c->n_occ; i++) {
        const struct lp_occ *o = &c->occ[i];
        if (o->request > seen) {
            seen = o->request;
            struct request *x = &q[o->request];
            int64_t best = -1;
            for (int64_t a = o->range >= 0 ? rg->v[o->range].parent : -1; a >= 0;
                 a = rg->v[a].parent) {
                if (rg->v[a].start < before || rg->v[a].end < x->prefill_end ||
                    ((size_t)o->request + 1 < n && rg->v[a].end > q[o->request + 1].start))
                    break;
                best = a;
            }
            if (best >= 0 && rg->v[best].start < x->start)
                x->start = rg->v[best].start;
        }
        if (o->end > before)
            before = o->end;
    }
}

static int make_requests(struct lp_run_ctx *c, struct request **out, size_t *n_out)
{
    int32_t cur = -1, open = 0; /* open: the current request has a prefill or decode */
    for (size_t i = 0; i < c->n_occ; i++) {
        struct lp_occ *o = &c->occ[i];
        enum lp_stage_kind k = lp_occ_kind(c, o);
        o->request = -1;
        if (k == LP_STAGE_KIND_WARMUP || k == LP_STAGE_KIND_RUN)
            continue;
        /* a later part of a range split by capture windows continues its request */
        if ((k == LP_STAGE_KIND_VISION || k == LP_STAGE_KIND_PREFILL) && !o->part &&
            (cur < 0 || open)) {
            cur++;
            open = 0;
        } else if (cur < 0) {
            cur = 0;
        }
        open |= k == LP_STAGE_KIND_PREFILL || k == LP_STAGE_KIND_DECODE;
        o->request = cur;
    }
    size_t n = (size_t)(cur + 1);
    struct request *q = calloc(n ? n : 1, sizeof *q);
    if (!q)
        return LP_ERR_NOMEM;
    for (size_t i = 0; i < c->n_occ; i++) {
        const struct lp_occ *o = &c->occ[i];
        if (o->request < 0)
            continue;
        struct request *x = &q[o->request];
        uint64_t start = o->open_start && o->open_start < o->start ? o->open_start : o->start;
        if (!x->measured || start < x->start)
            x->start = start;
        x->measured = 1;
        enum lp_stage_kind k = lp_occ_kind(c, o);
        if (k == LP_STAGE_KIND_PREFILL && !x->prefill_end) {
            x->prefill_end = o->end;
            x->prefill_tokens = o->n_tokens;
        }
        x->cut_prefill |= o->cut && (k == LP_STAGE_KIND_PREFILL || k == LP_STAGE_KIND_VISION);
        x->cut_decode |= o->cut && k == LP_STAGE_KIND_DECODE;
        if (k == LP_STAGE_KIND_DECODE) {
            x->decode_ns += (double)(o->end - o->start);
            x->uncounted |= o->steps <= 0 || __builtin_add_overflow(x->steps, o->steps, &x->steps);
            x->decode = 1;
        }
    }
    if (c->r->stages_inferred)
        enclosing_starts(c, q, n);
    *out = q;
    *n_out = n;
    return LP_OK;
}

static double ttft_of(const struct request *x)
{
    return x->prefill_end > x->start && !x->cut_prefill ? (double)(x->prefill_end - x->start)
                                                          : 0;
}

static double tpot_of(const struct request *x)
{
    return x->steps > 0 && !x->uncounted && !x->cut_decode ? x->decode_ns / (double)x->steps
                                                            : 0;
}

static int move_to_warmup(struct lp_run_ctx *c, int32_t request, int32_t occ)
{
    int ws = lp_run_warmup_stage(c);
    if (ws < 0)
        return LP_ERR_NOMEM;
    for (size_t i = 0; i < c->n_occ; i++) {
        struct lp_occ *o = &c->occ[i];
        if (request >= 0 ? o->request != request : (int32_t)i != occ)
            continue;
        o->stage = ws;
        o->warmup = 2;
        c->r->warmup.occurrences++;
    }
    return LP_OK; /* their work's stage is theirs (lp_work_stage) */
}

/* No prefill: each stage's first occurrence (time per step for decode) against the rest. */
static int first_occurrences(struct lp_run_ctx *c, double *v)
{
    struct lp_run *r = c->r;
    for (size_t s = 0; s < r->n_stages; s++) {
        enum lp_stage_kind k = r->stages[s].kind;
        if (k == LP_STAGE_KIND_WARMUP || k == LP_STAGE_KIND_RUN || k == LP_STAGE_KIND_OUTSIDE)
            continue;
        int32_t first = -1;
        double first_v = 0;
        size_t n = 0;
        for (size_t i = 0; i < c->n_occ; i++) {
            const struct lp_occ *o = &c->occ[i];
            if (o->stage != (int)s)
                continue;
            double x = (double)(o->end - o->start);
            if (k == LP_STAGE_KIND_DECODE)
                x = o->steps > 0 ? x / (double)o->steps : 0;
            if (first < 0) {
                first = (int32_t)i;
                first_v = x;
            } else if (x > 0) {
                v[n++] = x;
            }
        }
        double med = 0;
        if (first >= 0 && outlier(first_v, v, n, &med)) {
            r->warmup = (struct lp_warmup_found){.cause = LP_WARMUP_STAGE_TIME, .stage = (int)s,
                                                 .value_ns = first_v, .median_ns = med,
                                                 .ratio = first_v / med, .others = n};
            return move_to_warmup(c, -1, first);
        }
    }
    return LP_OK;
}

int lp_run_warmup(struct lp_run_ctx *c)
{
    struct lp_run *r = c->r;
    struct request *q = NULL;
    size_t n = 0;
    int rc = make_requests(c, &q, &n);
    if (rc || r->opt.keep_warmup) {
        free(q);
        return rc;
    }
    double *v = malloc((n + c->n_occ + 1) * sizeof *v);
    if (!v) {
        free(q);
        return LP_ERR_NOMEM;
    }
    int prefill = 0;
    for (size_t i = 0; i < n; i++)
        prefill |= q[i].prefill_end != 0;
    if (prefill && n >= 2) {
        /* the first request against the others, by TTFT (against those of the same prompt
         * length when the lengths are known), then by TPOT */
        for (int what = 0; what < 2; what++) {
            double (*f)(const struct request *) = what ? tpot_of : ttft_of;
            size_t k = 0;
            for (size_t i = 1; i < n; i++)
                if (f(&q[i]) > 0 && (what || !q[0].prefill_tokens || !q[i].prefill_tokens ||
                                     q[i].prefill_tokens == q[0].prefill_tokens))
                    v[k++] = f(&q[i]);
            double med = 0;
            if (outlier(f(&q[0]), v, k, &med)) {
                int stage = -1;
                for (size_t i = 0; i < c->n_occ && stage < 0; i++)
                    if (c->occ[i].request == 0 &&
                        lp_occ_kind(c, &c->occ[i]) == (what ? LP_STAGE_KIND_DECODE
                                                     : LP_STAGE_KIND_PREFILL))
                        stage = c->occ[i].stage;
                r->warmup = (struct lp_warmup_found){
                    .cause = what ? LP_WARMUP_TPOT : LP_WARMUP_TTFT, .stage = stage,
                    .value_ns = f(&q[0]), .median_ns = med, .ratio = f(&q[0]) / med,
                    .others = k};
                rc = move_to_warmup(c, 0, -1);
                break;
            }
        }
    } else if (!prefill) {
        rc = first_occurrences(c, v);
    }
    free(v);
    free(q);
    return rc;
}

/* ---- LLM metrics ---- */

/* What of the TTFT each vision and prefill stage (and their parts) took: their time over
 * the N measured requests' TTFT summed (TTFT holds V). */
static void ttft_parts(struct lp_run *r, const double *v, size_t n)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    if (sum <= 0)
        return;
    double in = 0;
    int vision = 0;
    for (size_t s = 0; s < r->n_stages; s++) {
        struct lp_stage_report *st = &r->stages[s];
        if ((st->kind != LP_STAGE_KIND_VISION && st->kind != LP_STAGE_KIND_PREFILL) ||
            !st->occurrences)
            continue;
        vision |= st->kind == LP_STAGE_KIND_VISION;
        st->ttft_share = st->wall.total / sum;
        st->ttft_ns_per_request = st->wall.total / (double)n;
        in += st->ttft_share;
        for (size_t j = 0; j < st->n_sub; j++)
            st->sub[j].ttft_share = (double)st->sub[j].wall_ns / sum;
    }
    r->llm.ttft_outside_share = vision && in < 1 ? 1 - in : 0;
}

int lp_run_llm_metrics(struct lp_run_ctx *c)
{
    struct lp_run *r = c->r;
    struct lp_llm_metrics *m = &r->llm;
    int ranged = 0;
    for (size_t s = 0; s < r->n_stages; s++) {
        m->found |= r->stages[s].occurrences > 0 &&
                    (r->stages[s].kind == LP_STAGE_KIND_PREFILL ||
                     r->stages[s].kind == LP_STAGE_KIND_DECODE);
        ranged |= r->stages[s].kind != LP_STAGE_KIND_RUN;
    }
    m->why_not = m->found   ? LP_LLM_FOUND
                 : ranged   ? LP_LLM_NO_STAGE_KIND
                 : r->serving.cause != LP_SERVING_CAUSE_NONE ? LP_LLM_SERVING
                 : c->t->n_gemms ? LP_LLM_NOT_LLM_SHAPES
                                 : LP_LLM_NO_SHAPES;
    /* the steps' source of the measured decode (the first counted occurrence's) */
    for (size_t i = 0; i < c->n_occ && m->steps_source == LP_STEPS_NONE; i++)
        if (measured(c, &c->occ[i]) && lp_occ_kind(c, &c->occ[i]) == LP_STAGE_KIND_DECODE &&
            c->occ[i].steps > 0)
            m->steps_source = c->occ[i].steps_source;
    struct request *q = NULL;
    size_t n = 0;
    int rc = make_requests(c, &q, &n);
    double *v = rc ? NULL : malloc((n + c->n_step_ns + 1) * sizeof *v);
    if (!v) {
        free(q);
        return LP_ERR_NOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (ttft_of(&q[i]) > 0)
            v[k++] = ttft_of(&q[i]);
    rc = lp_dist_compute(&m->ttft, v, k);
    ttft_parts(r, v, k);
    k = 0;
    for (size_t i = 0; i < n; i++) {
        m->requests += q[i].measured;
        m->decode_requests += q[i].decode;
        m->cut_requests += q[i].measured && (q[i].cut_prefill || q[i].cut_decode);
        if (tpot_of(&q[i]) > 0)
            v[k++] = tpot_of(&q[i]);
    }
    if (rc == LP_OK)
        rc = lp_dist_compute(&m->tpot, v, k);
    k = 0;
    for (size_t i = 0; i < c->n_occ; i++) {
        const struct lp_occ *o = &c->occ[i];
        /* a cut decode's steps end where its window did, not where the step did */
        if (measured(c, o) && lp_occ_kind(c, o) == LP_STAGE_KIND_DECODE && !o->cut)
            for (uint32_t j = 0; j < o->n_step_ns; j++)
                v[k++] = c->step_ns[o->first_step + j];
    }
    if (rc == LP_OK)
        rc = lp_dist_compute(&m->itl, v, k);
    m->ttft_s = m->ttft.n ? m->ttft.p50 / 1e9 : 0;
    m->tpot_s = m->tpot.n ? m->tpot.p50 / 1e9 : 0;
    free(v);
    free(q);
    return rc;
}

void lp_run_llm_free(struct lp_run *r)
{
    lp_dist_free(&r->llm.ttft);
    lp_dist_free(&r->llm.tpot);
    lp_dist_free(&r->llm.itl);
}
