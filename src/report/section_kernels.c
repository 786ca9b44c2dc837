/* Top kernels: the run's table, categories per stage and each stage's table; report.json's
 * "kernels" and the cost centres (the costliest stage and category pairs, which summary.md
 * ranks); kernels.csv (every kernel name, the run's and each stage's). */
#include <stdio.h>
#include "section.h"

static void kernel_table(FILE *f, const struct lp_run *r, const struct lp_kernel_table *t)
{
    char b1[32], b2[32], b3[32];
    fprintf(f, "| # | kernel | category | total | calls | mean | median | min | max | %% GPU |\n"
               "|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < t->n; i++) {
        const struct lp_kernel_row *k = &t->v[i];
        fprintf(f, "| %zu | ", i + 1);
        lp_md_code_cell(f, r->short_names[k->group]);
        fprintf(f, " | %s | %s | %llu | ", lp_kcat_name(r->cats[k->group]), NS(k->total_ns),
                (unsigned long long)k->calls);
        fprintf(f, "%s | ", NS(k->mean_ns));
        fprintf(f, "%s | ", NS(k->median_ns));
        fprintf(f, "%s | %s | %s |\n", NS(k->min_ns), NS2(k->max_ns), PCT(k->share));
    }
    if (t->n_groups > t->n)
        fprintf(f, "\n%zu more kernel names in kernels.csv.\n", t->n_groups - t->n);
}

static void kernels_md(FILE *f, const struct lp_run *r)
{
    char b1[32], b3[32];
    if (!r->kernels_recorded) {
        fprintf(f, "\n## Top kernels\n\nNot recorded (--light: no kernels). Record without "
                   "--light to see them.\n");
        return;
    }
    fprintf(f, "\n## Top kernels\n\nMeasured (CUPTI kernel, memcpy and memset activity). "
               "%% GPU: share of all GPU time of the run (%s, warm-up and work outside the "
               "stages included); in the per-stage tables, of that stage's GPU time. Full "
               "names in report.json and kernels.csv.\n\n",
            NS(r->all_kernels.gpu_ns));
    kernel_table(f, r, &r->kernels);
    fprintf(f, "\n### By category and stage\n\nShare of each stage's GPU time.\n\n| stage |");
    /* the graph replay column only where replays were recorded whole */
#define SHOWN(c) ((c) != LP_KCAT_GRAPH || r->replays_whole)
    for (int c = 0; c < LP_KCAT_COUNT; c++)
        if (SHOWN(c))
            fprintf(f, " %s |", lp_kcat_name((enum lp_kcat)c));
    fprintf(f, "\n|---|");
    for (int c = 0; c < LP_KCAT_COUNT; c++)
        if (SHOWN(c))
            fprintf(f, "---|");
    fprintf(f, "\n");
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        fprintf(f, "| ");
        lp_md_cell(f, s->name);
        fprintf(f, " |");
        for (int c = 0; c < LP_KCAT_COUNT; c++)
            if (SHOWN(c))
                fprintf(f, " %s |", s->gpu_ns ? PCT(s->cat_share[c]) : "-");
        fprintf(f, "\n");
    }
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        if (s->top.n == 0)
            continue;
        fprintf(f, "\n### Stage ");
        lp_fmt_puts(f, s->name);
        fprintf(f, " (%s of GPU time)\n\n", NS(s->gpu_ns));
        kernel_table(f, r, &s->top);
    }
#undef SHOWN
}

static json_t *kernels_json(const struct lp_run *r)
{
    return lp_json_kernel_table(r, &r->kernels, r->kernels.n);
}

/* the costliest (stage, kernel category) pairs of the measured stages */
static json_t *centres_json(const struct lp_run *r)
{
    json_t *cc = json_array();
    for (size_t i = 0; i < r->n_centres; i++) {
        const struct lp_cost_centre *c = &r->centres[i];
        json_array_append_new(
            cc, json_pack("{s:s,s:s,s:o,s:o,s:s?}", "stage", r->stages[c->stage].name, "category",
                          lp_kcat_name(c->cat), "gpu_ns", lp_json_u64(c->gpu_ns), "share",
                          lp_json_num(c->share), "top_kernel",
                          c->top_group != SIZE_MAX ? r->short_names[c->top_group] : NULL));
    }
    return cc;
}

/* the GPU time the cost centres' shares are of */
static json_t *centres_base_json(const struct lp_run *r)
{
    return lp_json_u64(r->measured_gpu_ns);
}

static void rows(FILE *f, const struct lp_run *r, const char *scope,
                 const struct lp_kernel_table *t)
{
    for (size_t i = 0; i < t->n_groups; i++) {
        const struct lp_kernel_row *k = &t->v[i];
        lp_csv_field(f, scope);
        fprintf(f, ",%zu,", i + 1);
        lp_csv_field(f, r->short_names[k->group]);
        fputc(',', f);
        lp_csv_field(f, r->names[k->group]);
        fprintf(f, ",%s,%llu,%llu,%.1f,%llu,%llu,%llu,%.1f,%.6f\n", lp_kcat_name(r->cats[k->group]),
                (unsigned long long)k->calls, (unsigned long long)k->total_ns, k->mean_ns,
                (unsigned long long)k->median_ns, (unsigned long long)k->min_ns,
                (unsigned long long)k->max_ns, k->std_ns, k->share);
    }
}

int lp_report_kernels_csv(FILE *f, const struct lp_run *r)
{
    fprintf(f, "scope,rank,short_name,name,category,calls,total_ns,mean_ns,median_ns,min_ns,"
               "max_ns,std_ns,share\n");
    rows(f, r, "all", &r->all_kernels);
    for (size_t i = 0; i < r->n_stages; i++)
        rows(f, r, r->stages[i].name, &r->stages[i].top);
    return ferror(f) ? -1 : 0;
}

static const struct lp_section_key keys[] = {
    {"kernels", kernels_json},
    {"cost_centres", centres_json},
    {"cost_centres_base_ns", centres_base_json},
    {NULL, NULL},
};

const struct lp_section lp_section_kernels = {
    .name = "kernels",
    .md = kernels_md,
    .json = keys,
    .csv = {"kernels.csv", lp_report_kernels_csv, NULL},
};
