/* The in-process run-to-run spread (lp_run.spread): report.md's "Spread (in-process)" (each
 * measured stage's time per occurrence and the requests' TTFT and TPOT: n, mean, std, CV, min,
 * max, worst deviation, within ±10 %, and the verdict) and report.json's "spread". The
 * process-level spread (several runs of the command) is repeats.md's, not this section's. */
#include <stdio.h>

#include "section.h"

/* the figure's name: its stage's, or TTFT / TPOT */
static const char *spread_name(const struct lp_run *r, const struct lp_spread_figure *x)
{
    switch (x->what) {
    case LP_SPREAD_STAGE:
        return r->stages[x->stage].name;
    case LP_SPREAD_TTFT:
        return "TTFT";
    case LP_SPREAD_TPOT:
        return "TPOT";
    }
    return "";
}

static const char *spread_what_key(enum lp_spread_what w)
{
    switch (w) {
    case LP_SPREAD_STAGE:
        return "stage";
    case LP_SPREAD_TTFT:
        return "ttft";
    case LP_SPREAD_TPOT:
        return "tpot";
    }
    return "";
}

static const char *spread_verdict_key(enum lp_spread_verdict v)
{
    switch (v) {
    case LP_SPREAD_TOO_FEW:
        return "too_few";
    case LP_SPREAD_WITHIN:
        return "within";
    case LP_SPREAD_OUTSIDE:
        return "outside";
    }
    return "";
}

/* one row of the table */
static void spread_row(FILE *f, const struct lp_run *r, const struct lp_spread_figure *x)
{
    char b1[32], b3[32];
    fprintf(f, "| ");
    lp_md_cell(f, spread_name(r, x));
    fprintf(f, " | %zu | %s | ", x->n, NS(x->mean_ns));
    fprintf(f, "%s | ", NS(x->std_ns));
    fprintf(f, "%s | ", PCT(x->cv));
    fprintf(f, "%s | ", NS(x->min_ns));
    fprintf(f, "%s | ", NS(x->max_ns));
    fprintf(f, "%s | %s |\n", PCT(x->worst), x->within ? "yes" : "no");
}

/* the verdict line: within, or outside naming the figures outside */
static void spread_verdict_md(FILE *f, const struct lp_run *r, double pct)
{
    const struct lp_run_spread *sp = &r->spread;
    if (sp->verdict == LP_SPREAD_WITHIN) {
        if (sp->n_figures == 1)
            fprintf(f, "\nVerdict: **within ±%.0f %%**: the only figure.\n", pct);
        else
            fprintf(f, "\nVerdict: **within ±%.0f %%**: all %zu figures.\n", pct,
                    sp->n_figures);
        return;
    }
    fprintf(f, "\nVerdict: **outside ±%.0f %%**: %zu of %zu figure%s (", pct, sp->outside,
            sp->n_figures, sp->n_figures == 1 ? "" : "s");
    const char *sep = "";
    for (size_t i = 0; i < sp->n_figures; i++) {
        if (sp->figures[i].within)
            continue;
        fprintf(f, "%s", sep);
        lp_fmt_puts(f, spread_name(r, &sp->figures[i]));
        sep = ", ";
    }
    fprintf(f, ").\n");
}

static void spread_md(FILE *f, const struct lp_run *r)
{
    const struct lp_run_spread *sp = &r->spread;
    const double pct = 100 * sp->tolerance;
    fprintf(f, "\n## Spread (in-process)\n\nIn-process: the n occurrences of each stage within "
               "one process (its time per occurrence) and the measured requests' TTFT and "
               "TPOT, warm-up left out; the plan's run-to-run rule asks every value to lie "
               "within ±%.0f %% of its figure's mean (worst deviation: max |x − mean| / mean; "
               "std: sample, n − 1). Process-level spread (several runs of the command, "
               "`profile --repeat N`) is in repeats.md.\n",
            pct);
    if (sp->verdict == LP_SPREAD_TOO_FEW) {
        fprintf(f, "\nToo few values for a spread: no measured stage occurred twice or more "
                   "(%zu with one occurrence) and fewer than two requests had a TTFT "
                   "(%zu) or a TPOT (%zu).\n",
                sp->single_stages, r->llm.ttft.n, r->llm.tpot.n);
        if (r->serving.cause != LP_SERVING_CAUSE_NONE)
            fprintf(f, "\nA serving loop's iterations and requests run side by side, not one "
                       "after another: they are no repeats, and their spread (Serving above) "
                       "is not checked here.\n");
        return;
    }
    fprintf(f, "\n| figure | n | mean | std | CV | min | max | worst deviation | within ±%.0f %% "
               "|\n|---|---|---|---|---|---|---|---|---|\n",
            pct);
    for (size_t i = 0; i < sp->n_figures; i++)
        spread_row(f, r, &sp->figures[i]);
    spread_verdict_md(f, r, pct);
    if (sp->single_stages)
        fprintf(f, "\nLeft out: %zu measured stage%s with one occurrence.\n", sp->single_stages,
                sp->single_stages == 1 ? "" : "s");
    if (sp->step_stages)
        fprintf(f, "\nLeft out: %zu decode stage%s whose occurrences are single steps: one "
                   "step against another is per-token jitter (ITL in the headline), not a "
                   "repeat; TPOT judges the requests.\n",
                sp->step_stages, sp->step_stages == 1 ? "" : "s");
}

static json_t *spread_json(const struct lp_run *r)
{
    const struct lp_run_spread *sp = &r->spread;
    json_t *figs = json_array();
    for (size_t i = 0; i < sp->n_figures; i++) {
        const struct lp_spread_figure *x = &sp->figures[i];
        json_array_append_new(
            figs, json_pack("{s:s,s:s,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:b}", "what",
                            spread_what_key(x->what), "name", spread_name(r, x), "n",
                            (json_int_t)x->n, "mean_ns", lp_json_num(x->mean_ns), "std_ns",
                            lp_json_num(x->std_ns), "cv", lp_json_num(x->cv), "min_ns",
                            lp_json_num(x->min_ns), "max_ns", lp_json_num(x->max_ns),
                            "worst_deviation", lp_json_num(x->worst), "within", x->within));
    }
    return json_pack("{s:s,s:o,s:s,s:I,s:I,s:I,s:o,s:s}", "kind", "in_process", "tolerance",
                     lp_json_num(sp->tolerance), "verdict", spread_verdict_key(sp->verdict),
                     "outside", (json_int_t)sp->outside, "single_stages",
                     (json_int_t)sp->single_stages, "step_stages",
                     (json_int_t)sp->step_stages, "figures", figs, "process_level",
                     "repeats.md");
}

static const struct lp_section_key keys[] = {
    {"spread", spread_json},
    {NULL, NULL},
};

const struct lp_section lp_section_spread = {
    .name = "spread",
    .md = spread_md,
    .json = keys,
};
