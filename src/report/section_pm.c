/* PM sampling: the GPU's throughputs sampled over time, per stage and in bins for
 * report.html's charts ("pm" in report.json). */
#include <stdio.h>
#include "section.h"

static void pm_row(FILE *f, const char *name, const struct lp_pm_stats *s)
{
    char m[LP_PM_COUNT][24];
    for (unsigned k = 0; k < LP_PM_COUNT; k++) {
        if (!(s->valid & (1u << k)))
            snprintf(m[k], sizeof m[k], "-");
        else if (k == LP_PM_GPC_MHZ)
            snprintf(m[k], sizeof m[k], "%.0f", s->mean[k]);
        else
            snprintf(m[k], sizeof m[k], "%.1f %%", s->mean[k]);
    }
    char mbu[24] = "-";
    if (s->mbu > 0)
        snprintf(mbu, sizeof mbu, "%.1f %%", 100 * s->mbu);
    fprintf(f, "| ");
    lp_md_cell(f, name);
    fprintf(f, " | %zu | %.3f | %s | %s | %s | %s | %s | %.0f | %s | %s |\n", s->samples,
            s->seconds, m[LP_PM_TENSOR], m[LP_PM_SM_ISSUE], m[LP_PM_GR_ACTIVE], m[LP_PM_SM_ACTIVE],
            m[LP_PM_IDLE_SM_WARPS], s->dram_gbs, mbu, m[LP_PM_GPC_MHZ]);
}

static void pm_md(FILE *f, const struct lp_run *r)
{
    const struct lp_run_pm *k = &r->pm;
    if (!k->all.samples && !k->metrics)
        return;
    fprintf(f, "\n## GPU throughput sampled over time\n\nSampled by the GPU (CUPTI PM sampling%s",
            k->chip ? ", " : "");
    lp_fmt_puts(f, k->chip ? k->chip : "");
    fprintf(f, ", every %.0f us): %zu samples, %zu of them outside the measured stages (warm-up, "
               "gaps). Means over each stage's measured occurrences, weighted by time: tensor "
               "pipe, SM issue slots, compute engine (GR) and SMs active, as percentages of their "
               "peak; warp slots left empty because their SM had no work; DRAM bandwidth from the "
               "bytes counted (MBU: of the GPU's peak). report.html draws them over time.\n\n",
            (double)k->interval_ns / 1e3, k->all.samples, k->outside.samples);
    fprintf(f, "| stage | samples | seconds | tensor pipe | SM issue | GR active | SMs active | "
               "idle-SM warp slots | DRAM GB/s | MBU (sampled) | GPC MHz |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < r->n_stages; i++)
        if (r->stages[i].pm.samples)
            pm_row(f, r->stages[i].name, &r->stages[i].pm);
    if (k->outside.samples)
        pm_row(f, "(outside stages)", &k->outside);
    pm_row(f, "(whole run)", &k->all);
}

/* the bins' columns, in the order run_pm writes them */
static const enum lp_pm pm_bin_columns[] = {LP_PM_TENSOR, LP_PM_SM_ISSUE, LP_PM_GR_ACTIVE,
                                            LP_PM_IDLE_SM_WARPS, LP_PM_L2, LP_PM_GPC_MHZ};

static json_t *pm_json(const struct lp_run *r)
{
    const struct lp_run_pm *k = &r->pm;
    if (!k->all.samples && !k->metrics)
        return json_null();
    json_t *cols = json_pack("[s,s]", "start_ns", "end_ns");
    for (size_t c = 0; c < sizeof pm_bin_columns / sizeof *pm_bin_columns; c++)
        json_array_append_new(cols, json_string(lp_pm_name(pm_bin_columns[c])));
    json_array_append_new(cols, json_string("dram_gbs"));
    json_array_append_new(cols, json_string("mbu"));
    json_t *bins = json_array();
    for (size_t i = 0; i < k->n_bins; i++) {
        const struct lp_pm_bin *b = &k->bins[i];
        json_t *row = json_pack("[o,o]", lp_json_u64(b->start), lp_json_u64(b->end));
        for (size_t c = 0; c < sizeof pm_bin_columns / sizeof *pm_bin_columns; c++)
            json_array_append_new(row, b->s.valid & (1u << pm_bin_columns[c])
                                           ? lp_json_num(b->s.mean[pm_bin_columns[c]])
                                           : json_null());
        json_array_append_new(row, lp_json_num(b->s.dram_gbs));
        json_array_append_new(row, lp_json_or_null(b->s.mbu));
        json_array_append_new(bins, row);
    }
    return json_pack(
        "{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "interval_ns", lp_json_u64(k->interval_ns),
        "metrics", k->metrics ? json_string(k->metrics) : json_null(), "chip",
        k->chip ? json_string(k->chip) : json_null(), "first_ns", lp_json_u64(k->first_ns),
        "last_ns", lp_json_u64(k->last_ns), "all", lp_json_pm_stats(&k->all), "outside",
        lp_json_pm_stats(&k->outside), "bins_columns", cols, "bins", bins);
}

static const struct lp_section_key keys[] = {
    {"pm", pm_json},
    {NULL, NULL},
};

const struct lp_section lp_section_pm = {
    .name = "pm",
    .md = pm_md,
    .json = keys,
};
