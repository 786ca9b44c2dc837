/* Several runs of one command (`profile --repeat N`): what each run's analysis found, kept
 * small (lp_repeat_take), then compared (lp_repeats_analyze): each headline figure and each
 * stage's figures over the repeats that measured it, with its mean, sample deviation, CV,
 * extremes and the largest deviation from the mean, judged against the plan's run-to-run
 * criterion (every repeat within ±10 % of the mean). This is the spread between processes;
 * a run's own report shows the spread between the occurrences inside one. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "llmprof/compare.h"

static double or_nan(double v)
{
    return v > 0 && isfinite(v) ? v : NAN;
}

static double dist_p50(const struct lp_dist *d)
{
    return d->n ? d->p50 : NAN;
}

/* the run-level figures: a serving loop's from its requests, else the headline's */
static void run_figures(const struct lp_run *r, double *fig)
{
    const struct lp_serving *s = &r->serving;
    int serving = s->cause != LP_SERVING_CAUSE_NONE;
    fig[LP_REPEAT_FIGURE_TTFT_NS] = serving ? dist_p50(&s->ttft) : or_nan(r->llm.ttft_s * 1e9);
    fig[LP_REPEAT_FIGURE_TPOT_NS] = serving ? dist_p50(&s->tpot) : or_nan(r->llm.tpot_s * 1e9);
    fig[LP_REPEAT_FIGURE_ITL_NS] = serving ? dist_p50(&s->req_itl) : dist_p50(&r->llm.itl);
    fig[LP_REPEAT_FIGURE_PREFILL_TOKENS_S] =
        or_nan(serving ? s->prefill_per_s : r->llm.prefill_tokens_per_s);
    fig[LP_REPEAT_FIGURE_DECODE_TOKENS_S] =
        or_nan(serving ? s->generated_per_s : r->llm.decode_tokens_per_s);
    fig[LP_REPEAT_FIGURE_MFU] = r->util.has ? or_nan(r->util.mfu) : NAN;
    fig[LP_REPEAT_FIGURE_MBU] = r->util.has ? or_nan(r->util.mbu) : NAN;
    fig[LP_REPEAT_FIGURE_GPU_BUSY] = r->kernels_recorded ? or_nan(r->timeline.busy_share) : NAN;
}

static void stage_figures(const struct lp_run *r, const struct lp_stage_report *s, double *fig)
{
    fig[LP_REPEAT_STAGE_WALL_NS] = or_nan(s->wall.mean);
    fig[LP_REPEAT_STAGE_GPU_NS] =
        r->kernels_recorded && s->occurrences ? or_nan((double)s->gpu_ns / (double)s->occurrences)
                                              : NAN;
    fig[LP_REPEAT_STAGE_TOKENS_S] = or_nan(s->tokens_per_s);
    fig[LP_REPEAT_STAGE_MFU] = s->has_util ? or_nan(s->mfu) : NAN;
    fig[LP_REPEAT_STAGE_MBU] = s->has_util ? or_nan(s->mbu) : NAN;
    /* shorter than two NVML refreshes: an energy that moves with where the samples fell */
    fig[LP_REPEAT_STAGE_J_PER_TOKEN] = s->power_coarse ? NAN : or_nan(s->j_per_token);
}

int lp_repeat_take(const struct lp_run *r, const char *label, struct lp_repeat *out)
{
    memset(out, 0, sizeof *out);
    run_figures(r, out->fig);
    if (!(out->label = strdup(label)) ||
        (r->opt.request && !(out->request = strdup(r->opt.request))) ||
        !(out->stages = calloc(r->n_stages ? r->n_stages : 1, sizeof *out->stages))) {
        lp_repeat_free(out);
        return LP_ERR_NOMEM;
    }
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        if (!lp_stage_measured(s) || !s->occurrences)
            continue;
        struct lp_repeat_stage *k = &out->stages[out->n_stages];
        if (!(k->name = strdup(s->name))) {
            lp_repeat_free(out);
            return LP_ERR_NOMEM;
        }
        stage_figures(r, s, k->fig);
        k->energy_coarse = s->power_coarse && s->j_per_token > 0;
        out->n_stages++;
    }
    return LP_OK;
}

void lp_repeat_free(struct lp_repeat *k)
{
    for (size_t i = 0; k->stages && i < k->n_stages; i++)
        free(k->stages[i].name);
    free(k->stages);
    free(k->label);
    free(k->request);
    memset(k, 0, sizeof *k);
}

/* the statistics of the N values V (NaN: not measured in that repeat) */
static void stat_of(const double *v, size_t n, double tolerance, struct lp_repeat_stat *s)
{
    memset(s, 0, sizeof *s);
    s->mean = s->std = s->cv = s->min = s->max = s->worst = NAN;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(v[i]))
            continue;
        if (!s->n || v[i] < s->min) {
            s->min = v[i];
            s->min_at = i;
        }
        if (!s->n || v[i] > s->max) {
            s->max = v[i];
            s->max_at = i;
        }
        sum += v[i];
        s->n++;
    }
    if (!s->n)
        return;
    s->mean = sum / (double)s->n;
    if (s->n < 2)
        return;
    double sq = 0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(v[i]))
            sq += (v[i] - s->mean) * (v[i] - s->mean);
    s->std = sqrt(sq / (double)(s->n - 1));
    if (s->mean == 0)
        return;
    s->cv = s->std / fabs(s->mean);
    s->worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = isnan(v[i]) ? 0 : fabs(v[i] - s->mean) / fabs(s->mean);
        if (d > s->worst) {
            s->worst = d;
            s->worst_at = i;
        }
    }
    s->within = s->worst <= tolerance + 1e-12; /* exactly at the edge, up to rounding: in */
}

/* the index of stage NAME in OUT, added when new; -1 out of room */
static long stage_index(struct lp_repeats *out, size_t room, const char *name)
{
    for (size_t i = 0; i < out->n_stages; i++)
        if (!strcmp(out->stages[i].name, name))
            return (long)i;
    if (out->n_stages >= room)
        return -1;
    out->stages[out->n_stages].name = name;
    return (long)out->n_stages++;
}

/* the repeat's stage of NAME, NULL when it has none */
static const struct lp_repeat_stage *stage_in(const struct lp_repeat *k, const char *name)
{
    for (size_t j = 0; j < k->n_stages; j++)
        if (!strcmp(k->stages[j].name, name))
            return &k->stages[j];
    return NULL;
}

double lp_repeats_value(const struct lp_repeats *r, size_t stage, size_t repeat, int fig)
{
    const struct lp_repeat_stage *s = stage_in(&r->reps[repeat], r->stages[stage].name);
    return s && fig >= 0 && fig < LP_REPEAT_STAGE_COUNT ? s->fig[fig] : NAN;
}

/* counts a judged figure: outside when it has two values or more and is not within */
static void judge(struct lp_repeats *out, const struct lp_repeat_stat *s, int *judged)
{
    if (s->n < 2 || isnan(s->worst))
        return;
    *judged = 1;
    out->n_outside += !s->within;
}

int lp_repeats_analyze(const struct lp_repeat *reps, size_t n, double tolerance,
                       struct lp_repeats *out)
{
    memset(out, 0, sizeof *out);
    out->reps = reps;
    out->n = n;
    out->tolerance = tolerance > 0 ? tolerance : LP_REPEATS_TOLERANCE;
    size_t room = 0;
    for (size_t i = 0; i < n; i++)
        room += reps[i].n_stages;
    double *v = malloc((n ? n : 1) * sizeof *v);
    out->stages = calloc(room ? room : 1, sizeof *out->stages);
    if (!v || !out->stages) {
        free(v);
        lp_repeats_free(out);
        return LP_ERR_NOMEM;
    }
    int judged = 0;
    for (int f = 0; f < LP_REPEAT_FIGURE_COUNT; f++) {
        for (size_t i = 0; i < n; i++)
            v[i] = reps[i].fig[f];
        stat_of(v, n, out->tolerance, &out->fig[f]);
        judge(out, &out->fig[f], &judged);
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < reps[i].n_stages; j++)
            stage_index(out, room, reps[i].stages[j].name);
    for (size_t s = 0; s < out->n_stages; s++) {
        for (size_t i = 0; i < n; i++) {
            const struct lp_repeat_stage *k = stage_in(&reps[i], out->stages[s].name);
            out->stages[s].energy_coarse += k && k->energy_coarse;
        }
        for (int f = 0; f < LP_REPEAT_STAGE_COUNT; f++) {
            for (size_t i = 0; i < n; i++)
                v[i] = lp_repeats_value(out, s, i, f);
            stat_of(v, n, out->tolerance, &out->stages[s].fig[f]);
            judge(out, &out->stages[s].fig[f], &judged);
        }
    }
    free(v);
    for (size_t s = 0; s < out->n_stages; s++) {
        const struct lp_repeat_stat *wall = &out->stages[s].fig[LP_REPEAT_STAGE_WALL_NS],
                                    *gpu = &out->stages[s].fig[LP_REPEAT_STAGE_GPU_NS];
        /* the GPU work steady: within a fifth of the tolerance, and moving at most a
         * quarter as much as the wall time (else the GPU's own change is part of it) */
        if (wall->n >= 2 && !wall->within && !isnan(wall->worst) && gpu->n >= 2 &&
            !isnan(gpu->worst) && gpu->worst <= out->tolerance / 5 &&
            gpu->worst <= wall->worst / 4) {
            out->n_host_spread++;
            out->host_spread_gpu_worst = fmax(out->host_spread_gpu_worst, gpu->worst);
        }
    }
    for (size_t i = 1; i < n; i++)
        out->requests_differ |= !reps[i].request != !reps[0].request ||
                                (reps[0].request && strcmp(reps[i].request, reps[0].request));
    out->verdict = !judged            ? LP_REPEATS_VERDICT_TOO_FEW
                   : out->n_outside ? LP_REPEATS_VERDICT_OUTSIDE
                                    : LP_REPEATS_VERDICT_WITHIN;
    return LP_OK;
}

void lp_repeats_free(struct lp_repeats *r)
{
    free(r->stages);
    memset(r, 0, sizeof *r);
}
