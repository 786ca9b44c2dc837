/* Hardware counters per stage (CUPTI range profiler): tensor FLOPs executed, DRAM bytes and
 * their ratios to the model and cuBLAS; report.json's "counters" (the stages' own are in
 * "stages"). */
#include <stdio.h>
#include "section.h"

/* a ratio, or "-" when there is nothing to divide by */
static const char *ratio(double v, char *buf, size_t len)
{
    if (v > 0)
        snprintf(buf, len, "%.3f", v);
    else
        snprintf(buf, len, "-");
    return buf;
}

static void counters_md(FILE *f, const struct lp_run *r)
{
    const struct lp_run_counters *k = &r->counters;
    if (!k->segments && !k->metrics)
        return;
    fprintf(f, "\n## Hardware counters\n\nCounted by the GPU (CUPTI range profiler, one pass, "
               "no replay%s", k->chip ? ", " : "");
    lp_fmt_puts(f, k->chip ? k->chip : "");
    fprintf(f, "): %zu segments cut at the stage ranges, %zu of them outside the measured "
               "stages (warm-up, gaps). Tensor FLOPs are what the tensor cores did (the counters "
               "of ", k->segments, k->outside);
    lp_fmt_puts(f, k->metrics ? k->metrics : "no metrics named");
    fprintf(f, "); DRAM bytes what was read and written. Per step for decode, "
               "per occurrence otherwise; ratios against the model's matmul FLOPs and bytes "
               "(analytic) and the cuBLAS calls' FLOPs (shapes). Tensor FLOPs above the "
               "model's are work the tensor cores did that the model does not need: a few "
               "tokens padded to the MMA tile (decode), padded expert groups (MoE), a "
               "compressed KV cache expanded every step (MLA), recomputation. So the tensor "
               "share of the peak below is of the work executed, not the model's useful FLOPs "
               "(MFU, in Utilisation).\n\n");
    fprintf(f, "| stage | segments | tensor FLOPs/unit | tensor TFLOP/s | executed / peak | "
               "DRAM bytes/unit | DRAM GB/s | MBU (counters) | / model FLOPs | / cuBLAS FLOPs | "
               "/ model bytes |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    char a[32], b[32], c[32];
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_counters *s = &r->stages[i].ctr;
        if (!s->segments)
            continue;
        fprintf(f, "| ");
        lp_md_cell(f, r->stages[i].name);
        fprintf(f, " | %zu | %.4g | %.1f | %.2f %% | %.4g | %.0f | %.2f %% | %s | %s | %s |\n",
                s->segments, s->flops_per_unit, s->tflops,
                100 * s->executed_share, s->bytes_per_unit, s->gbs, 100 * s->mbu,
                ratio(s->vs_model_flops, a, sizeof a), ratio(s->vs_gemm_flops, b, sizeof b),
                ratio(s->vs_model_bytes, c, sizeof c));
    }
    int said = 0;
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_counters *s = &r->stages[i].ctr;
        if (!s->segments || !s->excess)
            continue;
        char why[640];
        lp_text_excess(s, why, sizeof why);
        fprintf(f, "%s- ", said++ ? "" : "\nExecuted against useful work (the model's FLOPs, "
                                          "which MFU counts):\n\n");
        lp_fmt_puts(f, r->stages[i].name);
        fprintf(f, ": the tensor cores executed %.3g x the model's matmul FLOPs %s: ",
                s->vs_model_flops,
                r->stages[i].kind == LP_STAGE_KIND_DECODE ? "per step" : "per occurrence");
        lp_fmt_puts(f, why);
        fprintf(f, ".\n");
    }
}

static json_t *counters_json(const struct lp_run *r)
{
    const struct lp_run_counters *k = &r->counters;
    if (!k->segments && !k->metrics)
        return json_null();
    return json_pack("{s:o,s:o,s:o,s:o,s:o}", "segments", lp_json_u64(k->segments), "outside",
                     lp_json_u64(k->outside), "metrics",
                     k->metrics ? json_string(k->metrics) : json_null(), "chip",
                     k->chip ? json_string(k->chip) : json_null(), "values",
                     lp_json_counter_values(k->valid, k->value));
}

static const struct lp_section_key keys[] = {
    {"counters", counters_json},
    {NULL, NULL},
};

const struct lp_section lp_section_counters = {
    .name = "counters",
    .md = counters_md,
    .json = keys,
};
