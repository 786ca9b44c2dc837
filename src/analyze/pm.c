/* PM samples per stage and over time (record --pm-sampling): each sample belongs to the
 * stage occurrence its middle falls in (the samples have no thread: the occurrence whose
 * span holds it); a stage's measured occurrences average their samples, weighted by each
 * sample's duration. DRAM bytes are counted, so bandwidth and MBU follow from them and the
 * GPU's peak. The timeline bins the whole span into at most LP_PM_BINS equal bins. */
#include <stdlib.h>
#include <string.h>

#include "run_internal.h"

/* running sums: value x seconds for the means, bytes for DRAM */
struct acc {
    size_t n;
    unsigned valid;
    double secs, w[LP_PM_COUNT], secs_of[LP_PM_COUNT];
};

static void add(struct acc *a, const struct lp_pm_sample *s, double secs)
{
    a->n++;
    a->secs += secs;
    a->valid |= s->valid;
    for (unsigned k = 0; k < LP_PM_COUNT; k++)
        if (s->valid & (1u << k)) {
            double v = lp_pm_value(s, k);
            a->w[k] += k == LP_PM_DRAM_READ || k == LP_PM_DRAM_WRITE ? v : v * secs;
            a->secs_of[k] += secs;
        }
}

static void finish(struct lp_pm_stats *o, const struct acc *a, double peak_gbs)
{
    memset(o, 0, sizeof *o);
    o->samples = a->n;
    o->valid = a->valid;
    o->seconds = a->secs;
    for (unsigned k = 0; k < LP_PM_COUNT; k++) {
        if (!(a->secs_of[k] > 0))
            continue;
        int dram = k == LP_PM_DRAM_READ || k == LP_PM_DRAM_WRITE;
        o->mean[k] = dram ? a->w[k] / a->secs_of[k] / 1e9 : a->w[k] / a->secs_of[k];
        if (dram)
            o->dram_bytes += a->w[k];
    }
    if (o->seconds > 0 && (a->valid & (1u << LP_PM_DRAM_READ))) {
        o->dram_gbs = o->dram_bytes / o->seconds / 1e9;
        o->mbu = peak_gbs > 0 ? o->dram_gbs / peak_gbs : 0;
    }
}

static double secs_of(const struct lp_pm_sample *s)
{
    return s->end > s->start ? (double)(s->end - s->start) / 1e9 : 0;
}

int lp_run_pm(struct lp_run_ctx *c)
{
    const struct lp_trace *t = c->t;
    struct lp_run *r = c->r;
    struct lp_run_pm *pm = &r->pm;
    pm->metrics = lp_trace_meta(t, "pm_metrics");
    pm->chip = lp_trace_meta(t, "pm_chip");
    const char *iv = lp_trace_meta(t, "pm_interval_ns");
    pm->interval_ns = iv ? strtoull(iv, NULL, 10) : 0;
    if (!t->n_pm)
        return LP_OK;
    double peak = r->util.gpu.mem_bw_gbs;
    struct acc all = {0}, outside = {0};
    struct acc *per = calloc(r->n_stages ? r->n_stages : 1, sizeof *per);
    if (!per)
        return LP_ERR_NOMEM;
    pm->first_ns = UINT64_MAX;
    for (size_t i = 0; i < t->n_pm; i++) {
        const struct lp_pm_sample *s = &t->pm[i];
        double secs = secs_of(s);
        if (s->start < pm->first_ns)
            pm->first_ns = s->start;
        if (s->end > pm->last_ns)
            pm->last_ns = s->end;
        add(&all, s, secs);
        int32_t o = lp_run_occ_span_at(c, s->start + (s->end - s->start) / 2);
        int st = o >= 0 ? c->occ[o].stage : -1;
        if (st < 0 || st == c->warmup_stage || c->occ[o].warmup)
            add(&outside, s, secs);
        else
            add(&per[st], s, secs);
    }
    finish(&pm->all, &all, peak);
    finish(&pm->outside, &outside, peak);
    for (size_t k = 0; k < r->n_stages; k++)
        if (per[k].n)
            finish(&r->stages[k].pm, &per[k], peak);
    free(per);
    /* the timeline: equal bins over the samples' span, a sample in the bin of its middle */
    uint64_t span = pm->last_ns > pm->first_ns ? pm->last_ns - pm->first_ns : 1;
    size_t nb = t->n_pm < LP_PM_BINS ? t->n_pm : LP_PM_BINS;
    struct acc *acc = calloc(nb, sizeof *acc);
    pm->bins = calloc(nb, sizeof *pm->bins);
    if (!acc || !pm->bins) {
        free(acc);
        return LP_ERR_NOMEM;
    }
    for (size_t i = 0; i < t->n_pm; i++) {
        const struct lp_pm_sample *s = &t->pm[i];
        uint64_t mid = s->start + (s->end - s->start) / 2 - pm->first_ns;
        size_t b = (size_t)((double)mid / (double)span * (double)nb);
        add(&acc[b < nb ? b : nb - 1], s, secs_of(s));
    }
    for (size_t b = 0; b < nb; b++) {
        if (!acc[b].n)
            continue; /* no sample: a hole in the line, not a zero */
        struct lp_pm_bin *o = &pm->bins[pm->n_bins++];
        o->start = pm->first_ns + (uint64_t)((double)span * (double)b / (double)nb);
        o->end = pm->first_ns + (uint64_t)((double)span * (double)(b + 1) / (double)nb);
        finish(&o->s, &acc[b], peak);
    }
    free(acc);
    return LP_OK;
}

void lp_run_pm_free(struct lp_run *r)
{
    free(r->pm.bins);
    r->pm.bins = NULL;
    r->pm.n_bins = 0;
}
