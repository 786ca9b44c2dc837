/* The in-process run-to-run spread (lp_run.spread): the repeats one process holds: each
 * measured stage's occurrences (its wall time per occurrence, the stage statistics' wall) and
 * the measured requests' TTFT and TPOT, with mean, sample standard deviation, CV, min, max
 * and the worst deviation from the mean, each against the plan's +/-10 % criterion (every value
 * within LP_SPREAD_TOLERANCE of its mean). Warm-up is left out: set apart, it is no measured
 * occurrence. Process-level repeats (several runs of the command) are not this pass's. */
#include <string.h>

#include "run_internal.h"

/* rounding of the mean spared: a value exactly 10 % off its mean is within */
#define SPREAD_SLACK 1e-12

/* F's worst deviation and verdict from its mean, min and max (set by the caller) */
static void spread_judge(struct lp_spread_figure *f, double tolerance)
{
    double above = f->max_ns - f->mean_ns, below = f->mean_ns - f->min_ns;
    double far = above > below ? above : below;
    f->worst = f->mean_ns > 0 ? far / f->mean_ns : 0;
    f->within = f->worst <= tolerance + SPREAD_SLACK;
}

/* a figure from a stage's wall statistics (lp_stat: sample std, min, max) */
static struct lp_spread_figure spread_of_stat(const struct lp_stat *s, int stage)
{
    return (struct lp_spread_figure){.what = LP_SPREAD_STAGE, .stage = stage, .n = s->n,
                                     .mean_ns = s->mean, .std_ns = s->std, .cv = s->cv,
                                     .min_ns = s->min, .max_ns = s->max};
}

/* a figure from a distribution over requests (its values in time order) */
static struct lp_spread_figure spread_of_dist(const struct lp_dist *d, enum lp_spread_what w)
{
    struct lp_stat s;
    lp_stat_compute(&s, d->v, d->n);
    struct lp_spread_figure f = spread_of_stat(&s, -1);
    f.what = w;
    return f;
}

int lp_run_spread(struct lp_run_ctx *c)
{
    struct lp_run *r = c->r;
    struct lp_run_spread *sp = &r->spread;
    memset(sp, 0, sizeof *sp);
    sp->tolerance = LP_SPREAD_TOLERANCE;
    sp->figures = malloc((r->n_stages + 2) * sizeof *sp->figures);
    if (!sp->figures)
        return LP_ERR_NOMEM;
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        if (!lp_stage_measured(s) || s->occurrences == 0)
            continue;
        if (s->wall.n < 2)
            sp->single_stages++;
        else if (s->kind == LP_STAGE_KIND_DECODE && s->steps == (int64_t)s->occurrences)
            sp->step_stages++;
        else
            sp->figures[sp->n_figures++] = spread_of_stat(&s->wall, (int)i);
    }
    if (r->llm.ttft.n >= 2 && r->llm.ttft.v)
        sp->figures[sp->n_figures++] = spread_of_dist(&r->llm.ttft, LP_SPREAD_TTFT);
    if (r->llm.tpot.n >= 2 && r->llm.tpot.v)
        sp->figures[sp->n_figures++] = spread_of_dist(&r->llm.tpot, LP_SPREAD_TPOT);
    for (size_t i = 0; i < sp->n_figures; i++) {
        spread_judge(&sp->figures[i], sp->tolerance);
        sp->outside += !sp->figures[i].within;
    }
    sp->verdict = sp->n_figures == 0 ? LP_SPREAD_TOO_FEW
                  : sp->outside    ? LP_SPREAD_OUTSIDE
                                   : LP_SPREAD_WITHIN;
    return LP_OK;
}

void lp_run_spread_free(struct lp_run *r)
{
    free(r->spread.figures);
    r->spread.figures = NULL;
    r->spread.n_figures = 0;
}
