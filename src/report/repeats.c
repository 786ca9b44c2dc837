/* Several runs of one command compared (`profile --repeat N`): repeats.md, repeats.json
 * (schema llmprof-repeats/1, docs/report-schema.md) and repeats.csv. Says what
 * lp_repeats_analyze found; each repeat's own report stays in its directory. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmprof/report.h"
#include "report_internal.h"

#define LP_REPEATS_SCHEMA "llmprof-repeats/1"

enum unit { UNIT_NS, UNIT_PER_S, UNIT_SHARE, UNIT_J };

static const enum unit run_units[LP_REPEAT_FIGURE_COUNT] = {
    [LP_REPEAT_FIGURE_TTFT_NS] = UNIT_NS,        [LP_REPEAT_FIGURE_TPOT_NS] = UNIT_NS,
    [LP_REPEAT_FIGURE_ITL_NS] = UNIT_NS,         [LP_REPEAT_FIGURE_PREFILL_TOKENS_S] = UNIT_PER_S,
    [LP_REPEAT_FIGURE_DECODE_TOKENS_S] = UNIT_PER_S, [LP_REPEAT_FIGURE_MFU] = UNIT_SHARE,
    [LP_REPEAT_FIGURE_MBU] = UNIT_SHARE,         [LP_REPEAT_FIGURE_GPU_BUSY] = UNIT_SHARE,
};
static const enum unit stage_units[LP_REPEAT_STAGE_COUNT] = {
    [LP_REPEAT_STAGE_WALL_NS] = UNIT_NS,  [LP_REPEAT_STAGE_GPU_NS] = UNIT_NS,
    [LP_REPEAT_STAGE_TOKENS_S] = UNIT_PER_S, [LP_REPEAT_STAGE_MFU] = UNIT_SHARE,
    [LP_REPEAT_STAGE_MBU] = UNIT_SHARE,   [LP_REPEAT_STAGE_J_PER_TOKEN] = UNIT_J,
};

/* V in its unit, "-" when not measured */
static const char *value(enum unit u, double v, char *buf, size_t len)
{
    if (isnan(v))
        snprintf(buf, len, "-");
    else if (u == UNIT_NS)
        lp_fmt_ns(v, buf, len);
    else if (u == UNIT_SHARE)
        lp_fmt_pct(v, buf, len);
    else if (u == UNIT_PER_S)
        snprintf(buf, len, "%.1f", v);
    else
        snprintf(buf, len, "%.4g", v);
    return buf;
}

static void stat_cells(FILE *f, const struct lp_repeats *r, const struct lp_repeat_stat *s,
                       enum unit u)
{
    char a[32], b[32], c[32], d[32], e[32], g[32];
    fprintf(f, " %zu | %s | %s | %s | %s (", s->n, value(u, s->mean, a, sizeof a),
            value(u, s->std, b, sizeof b), value(UNIT_SHARE, s->cv, c, sizeof c),
            value(u, s->min, d, sizeof d));
    lp_md_cell(f, s->n ? r->reps[s->min_at].label : "-");
    fprintf(f, ") | %s (", value(u, s->max, e, sizeof e));
    lp_md_cell(f, s->n ? r->reps[s->max_at].label : "-");
    fprintf(f, ") | %s | %s |\n", value(UNIT_SHARE, s->worst, g, sizeof g),
            s->n < 2 || isnan(s->worst) ? "-" : s->within ? "yes" : "**no**");
}

/* the figures outside the tolerance, named */
static void outside_list(FILE *f, const struct lp_repeats *r)
{
    int first = 1;
    for (int k = 0; k < LP_REPEAT_FIGURE_COUNT; k++)
        if (r->fig[k].n >= 2 && !isnan(r->fig[k].worst) && !r->fig[k].within) {
            fprintf(f, "%s%s", first ? "" : ", ", lp_text_repeat_figure(k));
            first = 0;
        }
    for (size_t i = 0; i < r->n_stages; i++)
        for (int k = 0; k < LP_REPEAT_STAGE_COUNT; k++) {
            const struct lp_repeat_stat *s = &r->stages[i].fig[k];
            if (s->n >= 2 && !isnan(s->worst) && !s->within) {
                fprintf(f, "%s", first ? "" : ", ");
                lp_fmt_puts(f, r->stages[i].name);
                fprintf(f, " %s", lp_text_repeat_stage_figure(k));
                first = 0;
            }
        }
}

static void verdict_md(FILE *f, const struct lp_repeats *r)
{
    double pct = 100 * r->tolerance;
    if (r->verdict == LP_REPEATS_VERDICT_WITHIN)
        fprintf(f, "**Within ±%.0f %%**: every figure measured in two repeats or more stays "
                   "within ±%.0f %% of its mean in every repeat.\n",
                pct, pct);
    else if (r->verdict == LP_REPEATS_VERDICT_OUTSIDE) {
        fprintf(f, "**Outside ±%.0f %%**: %zu figure%s (", pct, r->n_outside,
                r->n_outside == 1 ? "" : "s");
        outside_list(f, r);
        fprintf(f, ") move%s more than that from the mean in at least one repeat.\n",
                r->n_outside == 1 ? "s" : "");
        if (r->n_host_spread)
            fprintf(f, "\n%zu stage%s outside by %s wall time kept %s GPU time per occurrence "
                       "within ±%.1f %% (at most a quarter of the wall time's deviation): the "
                       "same GPU work each time, so that spread came from the host (launches, "
                       "scheduling, other processes), not the GPU.\n",
                    r->n_host_spread, r->n_host_spread == 1 ? "" : "s",
                    r->n_host_spread == 1 ? "its" : "their",
                    r->n_host_spread == 1 ? "its" : "their", 100 * r->host_spread_gpu_worst);
    } else {
        fprintf(f, "**Not judged**: no figure was measured in two repeats (%zu repeat%s).\n",
                r->n, r->n == 1 ? "" : "s");
    }
}

int lp_report_repeats_md(FILE *f, const struct lp_repeats *r)
{
    fprintf(f, "# llmprof repeats\n\n%zu run%s of one command (`llmprof profile --repeat`), "
               "each in its own directory with its own report:",
            r->n, r->n == 1 ? "" : "s");
    for (size_t i = 0; i < r->n; i++) {
        fprintf(f, "%s", i ? ", " : " ");
        lp_md_code(f, r->reps[i].label);
    }
    fprintf(f, ".\n");
    if (r->n && r->reps[0].request) {
        fprintf(f, "\nRequest (as the program stated it%s): ",
                r->requests_differ ? ", in the first repeat; the repeats' requests DIFFER: "
                                     "see each repeat's report.json"
                                   : ", the same in every repeat");
        if (lp_md_code_cut(f, r->reps[0].request, 400))
            fprintf(f, " (whole in repeats.json)");
        fprintf(f, "\n");
    } else if (r->requests_differ) {
        fprintf(f, "\nThe repeats' requests DIFFER (the first stated none): see each repeat's "
                   "report.json.\n");
    }
    fprintf(f, "\nThe spread here is between processes: each figure over the repeats that "
               "measured it, with the sample deviation (n - 1), CV = std / mean, the extremes and "
               "the repeat each came from, and the largest deviation of one repeat from the "
               "mean, against the run-to-run criterion: every repeat within ±%.0f %% of the mean. "
               "Each repeat's report.md shows the spread inside its one process (stage "
               "occurrences, requests).\n\n",
            100 * r->tolerance);
    verdict_md(f, r);
    int any = 0;
    for (int k = 0; k < LP_REPEAT_FIGURE_COUNT; k++) {
        if (!r->fig[k].n)
            continue;
        if (!any++)
            fprintf(f, "\n| figure | n | mean | std | CV | min | max | worst | within ±%.0f %% |"
                       "\n|---|---|---|---|---|---|---|---|---|\n",
                    100 * r->tolerance);
        fprintf(f, "| %s |", lp_text_repeat_figure(k));
        stat_cells(f, r, &r->fig[k], run_units[k]);
    }
    if (!any)
        fprintf(f, "\nNo headline figure (TTFT, TPOT, ITL, tokens/s, MFU, MBU, GPU busy) was "
                   "measured in any repeat.\n");
    any = 0;
    for (size_t i = 0; i < r->n_stages; i++)
        for (int k = 0; k < LP_REPEAT_STAGE_COUNT; k++) {
            if (!r->stages[i].fig[k].n)
                continue;
            if (!any++)
                fprintf(f, "\n## Per stage\n\n| stage | figure | n | mean | std | CV | min | max "
                           "| worst | within ±%.0f %% |\n"
                           "|---|---|---|---|---|---|---|---|---|---|\n",
                        100 * r->tolerance);
            fprintf(f, "| ");
            lp_md_cell(f, r->stages[i].name);
            fprintf(f, " | %s |", lp_text_repeat_stage_figure(k));
            stat_cells(f, r, &r->stages[i].fig[k], stage_units[k]);
        }
    for (size_t i = 0; i < r->n_stages; i++)
        if (r->stages[i].energy_coarse) {
            fprintf(f, "\n");
            lp_fmt_puts(f, r->stages[i].name);
            fprintf(f, ": its energy per token is left out in %zu repeat%s: its ranges last less "
                       "than two NVML refreshes in all there, so that energy moves with where "
                       "the samples fell.\n",
                    r->stages[i].energy_coarse, r->stages[i].energy_coarse == 1 ? "" : "s");
        }
    return ferror(f) ? -1 : 0;
}

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *stat_json(const struct lp_repeats *r, const struct lp_repeat_stat *s,
                         const double *values, size_t stride)
{
    json_t *v = json_array();
    for (size_t i = 0; i < r->n; i++)
        json_array_append_new(v, num(*(const double *)((const char *)values + i * stride)));
    return json_pack("{s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "n", (json_int_t)s->n,
                     "mean", num(s->mean), "std", num(s->std), "cv", num(s->cv), "min",
                     num(s->min), "min_repeat", s->n ? json_string(r->reps[s->min_at].label)
                                                     : json_null(),
                     "max", num(s->max), "max_repeat",
                     s->n ? json_string(r->reps[s->max_at].label) : json_null(), "worst",
                     num(s->worst), "worst_repeat",
                     isnan(s->worst) ? json_null() : json_string(r->reps[s->worst_at].label),
                     "within", s->n >= 2 && !isnan(s->worst) ? json_boolean(s->within)
                                                             : json_null(),
                     "values", v);
}

static json_t *repeats_json(const struct lp_repeats *r)
{
    json_t *labels = json_array(), *figs = json_object(), *stages = json_array();
    for (size_t i = 0; i < r->n; i++)
        json_array_append_new(labels, json_string(r->reps[i].label));
    for (int k = 0; k < LP_REPEAT_FIGURE_COUNT; k++)
        json_object_set_new(figs, lp_text_repeat_figure_key(k),
                            stat_json(r, &r->fig[k], &r->reps[0].fig[k], sizeof *r->reps));
    double *v = malloc((r->n ? r->n : 1) * sizeof *v);
    if (!v) {
        json_decref(labels);
        json_decref(figs);
        json_decref(stages);
        return NULL;
    }
    for (size_t i = 0; i < r->n_stages; i++) {
        json_t *sf = json_object();
        for (int k = 0; k < LP_REPEAT_STAGE_COUNT; k++) {
            for (size_t j = 0; j < r->n; j++)
                v[j] = lp_repeats_value(r, i, j, k);
            json_object_set_new(sf, lp_text_repeat_stage_figure_key(k),
                                stat_json(r, &r->stages[i].fig[k], v, sizeof *v));
        }
        json_array_append_new(stages, json_pack("{s:s,s:o,s:I}", "name", r->stages[i].name,
                                                "figures", sf, "energy_left_out",
                                                (json_int_t)r->stages[i].energy_coarse));
    }
    free(v);
    json_t *o = json_pack("{s:s,s:s,s:I,s:f,s:o,s:s,s:I,s:o,s:o}", "schema", LP_REPEATS_SCHEMA,
                          "spread", "between_processes", "repeats", (json_int_t)r->n,
                          "tolerance", r->tolerance, "labels", labels, "verdict",
                          lp_text_repeats_verdict_key(r->verdict), "outside",
                          (json_int_t)r->n_outside, "figures", figs, "stages", stages);
    /* the first repeat's stated request, and whether every repeat stated the same */
    json_t *req = r->n && r->reps[0].request ? json_loads(r->reps[0].request, 0, NULL) : NULL;
    json_object_set_new(o, "request", req ? req : json_null());
    json_object_set_new(o, "requests_differ", json_boolean(r->requests_differ));
    json_object_set_new(o, "host_spread",
                        json_pack("{s:I,s:f}", "stages", (json_int_t)r->n_host_spread,
                                  "gpu_worst", r->host_spread_gpu_worst));
    return o;
}

int lp_report_repeats_json(FILE *out, const struct lp_repeats *r)
{
    return lp_report_json_put(out, repeats_json(r));
}

static void csv_row(FILE *f, const char *repeat, const char *stage, const char *figure,
                    double v)
{
    lp_csv_field(f, repeat);
    fputc(',', f);
    lp_csv_field(f, stage);
    fprintf(f, ",%s,", figure);
    if (isfinite(v))
        fprintf(f, "%.17g", v);
    fputc('\n', f);
}

int lp_report_repeats_csv(FILE *f, const struct lp_repeats *r)
{
    fprintf(f, "repeat,stage,figure,value\n");
    for (size_t i = 0; i < r->n; i++) {
        const struct lp_repeat *k = &r->reps[i];
        for (int g = 0; g < LP_REPEAT_FIGURE_COUNT; g++)
            csv_row(f, k->label, "", lp_text_repeat_figure_key(g), k->fig[g]);
        for (size_t s = 0; s < k->n_stages; s++)
            for (int g = 0; g < LP_REPEAT_STAGE_COUNT; g++)
                csv_row(f, k->label, k->stages[s].name, lp_text_repeat_stage_figure_key(g),
                        k->stages[s].fig[g]);
    }
    return ferror(f) ? -1 : 0;
}
