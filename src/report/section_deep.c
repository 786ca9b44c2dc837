/* Kernels in depth (llmprof deep): Nsight Compute's measurements of the top kernels, their
 * bound, occupancy limits, stalls and next step; report.json's "deep" and deep.csv. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llmprof/ncu.h"
#include "section.h"

/* a percentage metric of K as "12.3 %", "-" when ncu did not give it */
static const char *metric(const struct lp_ncu_kernel *k, enum lp_ncu_metric m, char *buf,
                          size_t len)
{
    if (!((k->valid >> m) & 1))
        return "-";
    snprintf(buf, len, "%.1f %%", k->metric[m]);
    return buf;
}

static void deep_md(FILE *f, const struct lp_run *r)
{
    const struct lp_deep *d = r->deep;
    if (!d)
        return;
    char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32], b7[32], b8[32], next[512], device[256];
    lp_fmt_escape(device, sizeof device, d->ncu->device ? d->ncu->device : "device unknown");
    fprintf(f,
            "\n## Kernels in depth\n\nMeasured by Nsight Compute (`llmprof deep`, %s): "
            "%zu kernels profiled, each replayed for its metrics (caches flushed between "
            "passes, so a kernel's DRAM traffic is its cold-cache traffic). One row per launch "
            "configuration and stage, shown by its instance of median duration; \"share\" "
            "is of the stage's GPU time in the recorded run. Bound: a unit at 60 %% of its "
            "peak or more (Nsight Compute's rule; both: the roofline decides), else too small "
            "under 0.8 waves of the "
            "SMs, else latency. FLOP/s and FLOP/byte are counted (tensor-core ops and FP32 "
            "instructions over DRAM bytes); the ridge is the dense peak of the dominant type "
            "over the peak bandwidth.\n",
            device, d->n_kernels);
    if (d->unmatched)
        fprintf(f, "\n%zu of the measured kernels are not in this run (another program or "
                   "shape): left out.\n", d->unmatched);
    int stage = -1;
    for (size_t i = 0; i < d->n_rows; i++) {
        const struct lp_deep_row *w = &d->rows[i];
        const struct lp_ncu_kernel *k = w->j.k;
        if (w->stage != stage) {
            stage = w->stage;
            fprintf(f, "\n### Stage ");
            lp_fmt_puts(f, r->stages[stage].name);
            fprintf(f, "\n\n| kernel | grid x block | share | time | SOL SM | SOL mem | SOL DRAM "
                       "| occupancy (theor.) | limit | tensor | TFLOP/s | FLOP/B (ridge) | stalls "
                       "| bound | next step |\n"
                       "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        }
        fprintf(f, "| ");
        lp_md_code_cell(f, r->short_names[w->group]);
        fprintf(f, "%s | (%d,%d,%d)x(%d,%d,%d) | %s | %s", w->flags & LP_DEEP_ROW_UNSEEN ?
                " (config not in run)" : "", w->grid[0], w->grid[1], w->grid[2], w->block[0],
                w->block[1], w->block[2], PCT(w->share), NS(k->metric[LP_NCU_DURATION]));
        if (w->instances > 1)
            fprintf(f, " (%zu: %s-%s)", w->instances, lp_fmt_ns(w->dur_min_ns, b2, sizeof b2),
                    lp_fmt_ns(w->dur_max_ns, b4, sizeof b4));
        fprintf(f, " | %s | %s | %s | %s (%s) | ",
                metric(k, LP_NCU_SOL_SM, b2, sizeof b2),
                metric(k, LP_NCU_SOL_MEMORY, b4, sizeof b4),
                metric(k, LP_NCU_SOL_DRAM, b5, sizeof b5),
                metric(k, LP_NCU_OCC_ACHIEVED, b6, sizeof b6),
                metric(k, LP_NCU_OCC_THEORETICAL, b7, sizeof b7));
        for (int l = 0, first = 1; l < LP_DEEP_LIMIT_COUNT; l++)
            if (w->j.limits & (1u << l)) {
                fprintf(f, "%s%s", first ? "" : ", ", lp_text_deep_limit(l));
                first = 0;
            }
        if (w->j.limits)
            fprintf(f, " (%.0f block%s/SM)", w->j.limit_blocks, w->j.limit_blocks == 1 ? "" : "s");
        else
            fprintf(f, "-");
        fprintf(f, " | %s | ", metric(k, LP_NCU_TENSOR, b8, sizeof b8));
        if (w->flops_per_s == w->flops_per_s)
            fprintf(f, "%.2f", w->flops_per_s / 1e12);
        else
            fprintf(f, "-");
        if (w->intensity == w->intensity)
            fprintf(f, " | %.1f", w->intensity);
        else
            fprintf(f, " | -");
        if (w->ridge > 0)
            fprintf(f, " (%.0f %s)", w->ridge, lp_dtype_name((enum lp_dtype)w->peak_dtype));
        fprintf(f, " | ");
        for (int s = 0; s < LP_DEEP_STALLS && w->j.stall[s] >= 0; s++) {
            fprintf(f, "%s", s ? ", " : "");
            lp_md_cell(f, d->ncu->stall_names[w->j.stall[s]]);
            fprintf(f, " %.1f", k->stall[w->j.stall[s]]);
        }
        lp_text_deep_advice(d, w, next, sizeof next);
        fprintf(f, " | **%s** | ", lp_text_deep_bound(w->j.bound));
        lp_md_cell(f, next);
        fprintf(f, " |\n");
    }
    for (size_t i = 0, said = 0; i < d->n_rows; i++) {
        const struct lp_deep_row *w = &d->rows[i];
        if (!(w->flags & LP_DEEP_ROW_TENSOR_UNNAMED))
            continue;
        if (!said++)
            fprintf(f, "\nTensor-core work in kernels whose name says neither GEMM nor "
                       "attention (matmuls by another name; the kernel tables count them "
                       "under the category their name gives):\n\n");
        fprintf(f, "- ");
        lp_fmt_puts(f, r->stages[w->stage].name);
        fprintf(f, ": ");
        lp_md_code(f, r->short_names[w->group]);
        fprintf(f, ", %.4g tensor FLOPs a launch, counted as %s.\n", w->tensor_flops,
                lp_kcat_name(r->cats[w->group]));
    }
}

/* a metric of K, null when ncu did not give it */
static json_t *ncu_metric(const struct lp_ncu_kernel *k, enum lp_ncu_metric m)
{
    return (k->valid >> m) & 1 ? lp_json_num(k->metric[m]) : json_null();
}

static json_t *deep_json(const struct lp_run *r)
{
    const struct lp_deep *d = r->deep;
    if (!d)
        return json_null();
    json_t *rows = json_array();
    for (size_t i = 0; i < d->n_rows; i++) {
        const struct lp_deep_row *w = &d->rows[i];
        const struct lp_ncu_kernel *k = w->j.k;
        json_t *limits = json_array(), *stalls = json_array();
        for (int l = 0; l < LP_DEEP_LIMIT_COUNT; l++)
            if (w->j.limits & (1u << l))
                json_array_append_new(limits, json_string(lp_text_deep_limit_key(l)));
        for (int s = 0; s < LP_DEEP_STALLS && w->j.stall[s] >= 0; s++)
            json_array_append_new(stalls, json_pack("{s:s,s:o}", "reason",
                                                    d->ncu->stall_names[w->j.stall[s]], "per_issue",
                                                    lp_json_num(k->stall[w->j.stall[s]])));
        char next[512];
        lp_text_deep_advice(d, w, next, sizeof next);
        json_t *o = json_object();
        json_object_set_new(o, "stage", json_string(r->stages[w->stage].name));
        json_object_set_new(o, "kernel", json_string(r->short_names[w->group]));
        json_object_set_new(o, "name", json_string(r->names[w->group]));
        json_object_set_new(o, "grid", json_pack("[iii]", w->grid[0], w->grid[1], w->grid[2]));
        json_object_set_new(o, "block", json_pack("[iii]", w->block[0], w->block[1], w->block[2]));
        json_object_set_new(o, "config_in_run", json_boolean(!(w->flags & LP_DEEP_ROW_UNSEEN)));
        json_object_set_new(o, "stage_by_nvtx", json_boolean(w->flags & LP_DEEP_ROW_BY_NVTX));
        json_object_set_new(o, "tensor_unnamed",
                            json_boolean(w->flags & LP_DEEP_ROW_TENSOR_UNNAMED));
        json_object_set_new(o, "run_gpu_ns", lp_json_u64(w->run_ns));
        json_object_set_new(o, "run_calls", lp_json_u64(w->run_calls));
        json_object_set_new(o, "share", lp_json_num(w->share));
        json_object_set_new(o, "ncu_id", lp_json_u64(k->id));
        json_object_set_new(o, "instances", lp_json_u64(w->instances));
        json_object_set_new(o, "duration_ns", ncu_metric(k, LP_NCU_DURATION));
        json_object_set_new(o, "duration_min_ns", lp_json_num(w->dur_min_ns));
        json_object_set_new(o, "duration_max_ns", lp_json_num(w->dur_max_ns));
        json_object_set_new(o, "sol_sm_pct", ncu_metric(k, LP_NCU_SOL_SM));
        json_object_set_new(o, "sol_memory_pct", ncu_metric(k, LP_NCU_SOL_MEMORY));
        json_object_set_new(o, "sol_dram_pct", ncu_metric(k, LP_NCU_SOL_DRAM));
        json_object_set_new(o, "dram_bytes_per_s", ncu_metric(k, LP_NCU_DRAM_BW));
        json_object_set_new(o, "occupancy_achieved_pct", ncu_metric(k, LP_NCU_OCC_ACHIEVED));
        json_object_set_new(o, "occupancy_theoretical_pct", ncu_metric(k, LP_NCU_OCC_THEORETICAL));
        json_object_set_new(o, "occupancy_limits", limits);
        json_object_set_new(o, "limit_blocks_per_sm", w->j.limits ? lp_json_num(w->j.limit_blocks)
                                                                   : json_null());
        json_object_set_new(o, "registers_per_thread", ncu_metric(k, LP_NCU_REGISTERS));
        json_object_set_new(o, "waves", ncu_metric(k, LP_NCU_WAVES));
        json_object_set_new(o, "tensor_pipe_pct", ncu_metric(k, LP_NCU_TENSOR));
        json_object_set_new(o, "tensor_flops", lp_json_num(w->tensor_flops));
        json_object_set_new(o, "fp32_flops", lp_json_num(w->fp32_flops));
        json_object_set_new(o, "flops_per_s", lp_json_num(w->flops_per_s));
        json_object_set_new(o, "dram_bytes", lp_json_num(w->dram_bytes));
        json_object_set_new(o, "flops_per_byte", lp_json_num(w->intensity));
        json_object_set_new(o, "ridge_flops_per_byte",
                            w->ridge > 0 ? lp_json_num(w->ridge) : json_null());
        json_object_set_new(o, "peak_flops_per_s",
                            w->ridge > 0 ? lp_json_num(w->peak_flops) : json_null());
        json_object_set_new(o, "peak_dtype", w->peak_dtype >= 0 ?
                            json_string(lp_dtype_name((enum lp_dtype)w->peak_dtype)) : json_null());
        json_object_set_new(o, "stalls", stalls);
        json_object_set_new(o, "bound", json_string(lp_text_deep_bound_key(w->j.bound)));
        json_object_set_new(o, "advice", json_string(lp_text_deep_advice_key(w->advice)));
        json_object_set_new(o, "next_step", json_string(next));
        json_array_append_new(rows, o);
    }
    return json_pack("{s:s,s:s?,s:I,s:I,s:o,s:o}", "source", "Nsight Compute (llmprof deep)",
                     "device", d->ncu->device, "kernels_measured", (json_int_t)d->n_kernels,
                     "kernels_not_in_run", (json_int_t)d->unmatched, "peak_bytes_per_s",
                     d->mem_bw > 0 ? lp_json_num(d->mem_bw) : json_null(), "rows", rows);
}

/* deep.csv: one row per measured launch configuration and stage (llmprof deep); the header
 * alone when the run has no deep dive */
int lp_report_deep_csv(FILE *f, const struct lp_run *r)
{
    fprintf(f, "stage,kernel,name,grid,block,share,run_gpu_ns,instances,duration_ns,sol_sm_pct,"
               "sol_memory_pct,sol_dram_pct,dram_bytes_per_s,occupancy_achieved_pct,"
               "occupancy_theoretical_pct,occupancy_limits,tensor_pipe_pct,tensor_flops,"
               "fp32_flops,flops_per_s,flops_per_byte,ridge_flops_per_byte,stall1,stall2,stall3,"
               "bound,advice\n");
    const struct lp_deep *d = r->deep;
    for (size_t i = 0; d && i < d->n_rows; i++) {
        const struct lp_deep_row *w = &d->rows[i];
        const struct lp_ncu_kernel *k = w->j.k;
        char dims[96], limits[96] = "";
        lp_csv_field(f, r->stages[w->stage].name);
        fputc(',', f);
        lp_csv_field(f, r->short_names[w->group]);
        fputc(',', f);
        lp_csv_field(f, r->names[w->group]);
        snprintf(dims, sizeof dims, ",%dx%dx%d,%dx%dx%d,", w->grid[0], w->grid[1], w->grid[2],
                 w->block[0], w->block[1], w->block[2]);
        fprintf(f, "%s%.6f,%llu,%zu", dims, w->share, (unsigned long long)w->run_ns,
                w->instances);
        static const enum lp_ncu_metric ms[] = {
            LP_NCU_DURATION, LP_NCU_SOL_SM, LP_NCU_SOL_MEMORY, LP_NCU_SOL_DRAM, LP_NCU_DRAM_BW,
            LP_NCU_OCC_ACHIEVED, LP_NCU_OCC_THEORETICAL};
        for (size_t m = 0; m < sizeof ms / sizeof *ms; m++)
            if ((k->valid >> ms[m]) & 1)
                fprintf(f, ",%.6g", k->metric[ms[m]]);
            else
                fputc(',', f);
        for (int l = 0; l < LP_DEEP_LIMIT_COUNT; l++)
            if (w->j.limits & (1u << l))
                snprintf(limits + strlen(limits), sizeof limits - strlen(limits), "%s%s",
                         limits[0] ? "+" : "", lp_text_deep_limit_key(l));
        fprintf(f, ",%s,", limits);
        if ((k->valid >> LP_NCU_TENSOR) & 1)
            fprintf(f, "%.6g", k->metric[LP_NCU_TENSOR]);
        fprintf(f, ",%.6g,%.6g,", w->tensor_flops, w->fp32_flops);
        if (isfinite(w->flops_per_s))
            fprintf(f, "%.6g", w->flops_per_s);
        fputc(',', f);
        if (isfinite(w->intensity))
            fprintf(f, "%.6g", w->intensity);
        fputc(',', f);
        if (w->ridge > 0)
            fprintf(f, "%.6g", w->ridge);
        for (int s = 0; s < LP_DEEP_STALLS; s++) {
            fputc(',', f);
            lp_csv_field(f, w->j.stall[s] >= 0 ? d->ncu->stall_names[w->j.stall[s]] : "");
        }
        fprintf(f, ",%s,%s\n", lp_text_deep_bound_key(w->j.bound),
                lp_text_deep_advice_key(w->advice));
    }
    return ferror(f) ? -1 : 0;
}

static const struct lp_section_key keys[] = {
    {"deep", deep_json},
    {NULL, NULL},
};

const struct lp_section lp_section_deep = {
    .name = "deep",
    .md = deep_md,
    .json = keys,
    .csv = {"deep.csv", lp_report_deep_csv, "kernels in depth, after llmprof deep"},
};
