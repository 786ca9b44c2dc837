/* The stages: their times, GPU busy, host wait, kernels, tokens and steps, sub-stages, and how
 * kernels were tied to them; report.json's "stages" (each stage with its parts of the other
 * sections), "attribution" and "stage_spans"; stages.csv. */
#include <math.h>
#include <stdio.h>

#include "section.h"

static void stages_md(FILE *f, const struct lp_run *r)
{
    char b1[32], b2[32], b3[32];
    fprintf(f, "\n## Stages\n\nMeasured. A stage's kernels are those launched while one of "
               "its ranges was open on the launching thread. Time: from the range's start (or "
               "the end of the previous range's GPU work, if later) to its end (or the end of "
               "its own GPU work, if later); GPU busy: the union of its kernels, copies and "
               "sets; host wait: idle time before work that was launched after the GPU went "
               "idle. Stages flagged ~ vary by more than 10 %% (CV).\n\n"
               "| stage | n | time mean | CV | min | max | GPU busy | host wait | kernels/occ | "
               "gaps > %s | tokens | tokens/s | steps |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
            NS(r->opt.gap_ns));
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        fprintf(f, "| ");
        lp_md_cell(f, s->name);
        fprintf(f, "%s | %zu | %s | ", s->variable ? " ~" : "", s->occurrences,
                s->occurrences ? NS(s->wall.mean) : "-");
        fprintf(f, "%s | ", s->occurrences > 1 ? PCT(s->wall.cv) : "-");
        fprintf(f, "%s | ", s->occurrences ? NS(s->wall.min) : "-");
        fprintf(f, "%s | ", s->occurrences ? NS2(s->wall.max) : "-");
        fprintf(f, "%s | ", s->occurrences ? PCT(s->busy_share) : NS(s->busy_ns));
        fprintf(f, "%s | ", s->occurrences ? PCT(s->host_wait_share) : "-");
        if (r->kernels_recorded)
            fprintf(f, "%.1f | %zu | ",
                    s->occurrences ? s->kernels_per_occurrence : (double)s->kernels, s->gaps);
        else
            fprintf(f, "- | - | ");
        if (s->tokens > 0 && s->tokens_per_s > 0)
            fprintf(f, "%lld (%s) | %.1f | ", (long long)s->tokens,
                    lp_text_tokens_source(s->tokens_source), s->tokens_per_s);
        else if (s->tokens > 0) /* a rate withheld (past what the GPU can do) */
            fprintf(f, "%lld (%s) | withheld | ", (long long)s->tokens,
                    lp_text_tokens_source(s->tokens_source));
        else
            fprintf(f, "- | - | ");
        if (s->steps > 0)
            fprintf(f, "%lld (%s) |\n", (long long)s->steps, lp_text_steps_source(s->steps_source));
        else
            fprintf(f, "%s |\n", s->kind == LP_STAGE_KIND_DECODE ? "not found" : "-");
    }
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        for (size_t j = 0; j < s->n_sub; j++) {
            fprintf(f, "\n- ");
            lp_fmt_puts(f, s->name);
            fprintf(f, " contains ");
            lp_fmt_puts(f, s->sub[j].name);
            fprintf(f, ": %zu ranges, %s wall, %s of GPU time (a part of ", s->sub[j].count,
                    NS(s->sub[j].wall_ns), NS2(s->sub[j].gpu_ns));
            lp_fmt_puts(f, s->name);
            fprintf(f, ", not added again)%s%s", s->sub[j].ttft_share > 0 ? "; of TTFT " : "",
                    s->sub[j].ttft_share > 0 ? PCT(s->sub[j].ttft_share) : "");
        }
    }
    if (r->kernels_recorded)
        fprintf(f, "\n\nKernels: %zu tied to a stage through their launching call, %zu by time "
                   "(no launch recorded), %zu outside every stage.\n",
                r->attribution.by_launch, r->attribution.by_time, r->attribution.outside);
    else
        fprintf(f, "\n\nKernels: not recorded (--light); GPU busy, host wait, kernels and gaps "
                   "are not known.\n");
}

static json_t *stat_json(const struct lp_stat *s)
{
    return json_pack("{s:I,s:o,s:o,s:o,s:o,s:o,s:o}", "n", (json_int_t)s->n, "total_ns",
                     lp_json_num(s->total), "mean_ns", lp_json_num(s->mean), "std_ns",
                     lp_json_num(s->std), "cv", lp_json_num(s->cv), "min_ns", lp_json_num(s->min),
                     "max_ns", lp_json_num(s->max));
}

static json_t *stage_counters(const struct lp_stage_counters *k)
{
    if (!k->segments)
        return json_null();
    json_t *why = json_array();
    for (int b = 0; lp_text_excess_key(b); b++)
        if (k->excess & 1u << b)
            json_array_append_new(why, json_string(lp_text_excess_key(b)));
    /* "mfu": the executed share under its version-2 name, kept for readers of it */
    return json_pack(
        "{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "segments",
        lp_json_u64(k->segments), "values", lp_json_counter_values(k->valid, k->value),
        "tensor_flops", lp_json_num(k->tensor_flops), "dram_bytes", lp_json_num(k->dram_bytes),
        "tflops", lp_json_num(k->tflops), "executed_share", lp_json_or_null(k->executed_share),
        "mfu", lp_json_or_null(k->executed_share), "pass_tokens",
        k->pass_tokens > 0 ? json_integer(k->pass_tokens) : json_null(), "over_model_causes", why,
        "gbs", lp_json_num(k->gbs), "mbu", lp_json_or_null(k->mbu), "units", lp_json_num(k->units),
        "flops_per_unit", lp_json_num(k->flops_per_unit), "bytes_per_unit",
        lp_json_num(k->bytes_per_unit), "over_model_flops", lp_json_or_null(k->vs_model_flops),
        "over_model_bytes", lp_json_or_null(k->vs_model_bytes), "over_gemm_flops",
        lp_json_or_null(k->vs_gemm_flops));
}

static json_t *stage_json(const struct lp_run *r, const struct lp_stage_report *s)
{
    /* figures made from kernels: null, not 0, when none were recorded (--light) */
    const int k = r->kernels_recorded;
    json_t *cats = json_object();
    for (int c = 0; c < LP_KCAT_COUNT; c++)
        json_object_set_new(cats, lp_kcat_name((enum lp_kcat)c), lp_json_num(s->cat_ns[c]));
    json_t *subs = json_array();
    for (size_t i = 0; i < s->n_sub; i++)
        json_array_append_new(subs, json_pack("{s:s,s:I,s:o,s:o,s:o}", "name", s->sub[i].name,
                                              "count", (json_int_t)s->sub[i].count, "wall_ns",
                                              lp_json_u64(s->sub[i].wall_ns), "gpu_ns",
                                              lp_json_u64(s->sub[i].gpu_ns), "ttft_share",
                                              s->sub[i].ttft_share > 0
                                                  ? lp_json_num(s->sub[i].ttft_share)
                                                  : json_null()));
    json_t *o = json_pack(
        "{s:s,s:s,s:I,s:o,s:o,s:b,s:o,s:o,s:o,s:I,s:I,s:o,s:I,s:o,s:o,s:o,s:o}", "name", s->name,
        "kind", lp_stage_kind_name(s->kind), "occurrences", (json_int_t)s->occurrences, "wall",
        stat_json(&s->wall), "gpu_busy", k ? stat_json(&s->busy) : json_null(), "variable",
        s->variable, "busy_ns", k ? lp_json_u64(s->busy_ns) : json_null(), "busy_share",
        lp_json_num(s->busy_share), "gpu_ns", k ? lp_json_u64(s->gpu_ns) : json_null(), "kernels",
        (json_int_t)s->kernels, "graph_kernels", (json_int_t)s->graph_kernels,
        "kernels_per_occurrence", lp_json_num(s->kernels_per_occurrence), "gaps",
        (json_int_t)s->gaps, "gap_ns", k ? lp_json_u64(s->gap_ns) : json_null(), "host_wait_ns",
        k ? lp_json_u64(s->host_wait_ns) : json_null(), "host_wait_share",
        lp_json_num(s->host_wait_share), "launch_delay_p50_ns",
        k ? lp_json_u64(s->launch_delay_p50_ns) : json_null());
    json_object_set_new(o, "graph_replays", lp_json_u64(s->graph_replays));
    json_object_set_new(o, "communication",
                        k ? json_pack("{s:o,s:o,s:o,s:o}", "gpu_ns", lp_json_u64(s->comm_ns),
                                      "share", lp_json_num(s->cat_share[LP_KCAT_COMMUNICATION]),
                                      "overlap_ns", lp_json_u64(s->comm_overlap_ns),
                                      "overlap_share", lp_json_num(s->comm_overlap_share))
                          : json_null());
    json_object_set_new(o, "cupti_overhead",
                        r->overhead.records ? lp_json_overhead_classes(s, NULL) : json_null());
    json_object_set_new(o, "ttft",
                        s->ttft_share > 0
                            ? json_pack("{s:o,s:o}", "share", lp_json_num(s->ttft_share),
                                        "ns_per_request", lp_json_num(s->ttft_ns_per_request))
                            : json_null());
    json_object_set_new(o, "moe_gemm",
                        json_pack("{s:o,s:I,s:o}", "gpu_ns", lp_json_u64(s->moe_gemm_ns), "kernels",
                                  (json_int_t)s->moe_gemm_kernels, "share",
                                  lp_json_num(s->moe_gemm_share)));
    json_object_set_new(o, "tokens", json_pack("{s:I,s:I,s:s,s:o}", "count",
                                               (json_int_t)s->tokens, "batch",
                                               (json_int_t)s->batch, "source",
                                               lp_text_tokens_source(s->tokens_source),
                                               "per_s", lp_json_num(s->tokens_per_s)));
    if (s->kind == LP_STAGE_KIND_DECODE)
        json_object_set_new(o, "steps", json_pack("{s:I,s:s,s:o}", "count", (json_int_t)s->steps,
                                                  "source", lp_text_steps_source(s->steps_source),
                                                  "duration", lp_json_dist(&s->step)));
    else
        json_object_set_new(o, "steps", json_null());
    json_object_set_new(o, "categories_ns", cats);
    json_object_set_new(o, "copies_bytes", lp_json_copies(s->memcpy_bytes, s->memset_bytes));
    json_object_set_new(o, "memory",
                        json_pack("{s:o,s:o}", "peak_alloc_bytes", lp_json_u64(s->peak_alloc_bytes),
                                  "peak_nvml_used_bytes", lp_json_u64(s->peak_nvml_used_bytes)));
    json_object_set_new(
        o, "power",
        json_pack("{s:I,s:b,s:o,s:o,s:o,s:o,s:s}", "nvml_samples", (json_int_t)s->nvml_samples,
                  "coarse", s->power_coarse, "mean_w", lp_json_num(s->power_mean_w), "peak_w",
                  lp_json_num(s->power_peak_w), "energy_j", lp_json_num(s->energy_j), "j_per_token",
                  lp_json_num(s->j_per_token), "energy_source",
                  s->energy_from_counter ? "energy counter" : "power x time"));
    if (s->has_util)
        json_object_set_new(o, "utilisation",
                            json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "model_flops_per_occurrence",
                                      lp_json_num(s->model_flops), "model_bytes_per_occurrence",
                                      lp_json_num(s->model_bytes), "achieved_tflops",
                                      lp_json_num(s->achieved_tflops), "achieved_gbs",
                                      lp_json_num(s->achieved_gbs), "mfu", lp_json_num(s->mfu),
                                      "mbu", lp_json_num(s->mbu)));
    else
        json_object_set_new(o, "utilisation", json_null());
    json_object_set_new(o, "substages", subs);
    json_object_set_new(
        o, "gemm",
        json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "calls",
                  lp_json_u64(s->gemm_calls), "gpu_ns", lp_json_u64(s->gemm_ns), "unshaped_ns",
                  lp_json_u64(s->gemm_unshaped_ns), "coverage",
                  s->gemm_coverage >= 0 ? lp_json_num(s->gemm_coverage) : json_null(), "partial",
                  json_boolean(s->gemm_partial), "flops", lp_json_num(s->gemm_flops), "tflops",
                  lp_json_num(s->gemm_tflops), "measured_mfu",
                  s->gemm_mfu > 0 ? lp_json_num(s->gemm_mfu) : json_null(),
                  "model_matmul_flops_per_occurrence",
                  s->has_util ? lp_json_num(s->model_matmul_flops) : json_null(),
                  "model_linear_flops_per_occurrence",
                  s->has_util ? lp_json_num(s->model_linear_flops) : json_null(),
                  "measured_over_model_matmul",
                  s->gemm_vs_model > 0 ? lp_json_num(s->gemm_vs_model) : json_null(),
                  "measured_over_model_linear",
                  s->gemm_vs_linear > 0 ? lp_json_num(s->gemm_vs_linear) : json_null(),
                  "context_flops", lp_json_num(s->gemm_context_flops),
                  "measured_over_model_matmul_rest",
                  s->gemm_vs_model > 0 ? lp_json_num(s->gemm_vs_model_rest) : json_null()));
    json_object_set_new(o, "counters", stage_counters(&s->ctr));
    json_object_set_new(o, "pm", lp_json_pm_stats(&s->pm));
    json_object_set_new(o, "kernels_top", lp_json_kernel_table(r, &s->top, s->top.n));
    return o;
}

static json_t *stages_json(const struct lp_run *r)
{
    json_t *stages = json_array();
    for (size_t i = 0; i < r->n_stages; i++)
        json_array_append_new(stages, stage_json(r, &r->stages[i]));
    return stages;
}

/* how each kernel was tied to a stage */
static json_t *attribution_json(const struct lp_run *r)
{
    return json_pack("{s:I,s:I,s:I,s:o}", "by_launch", (json_int_t)r->attribution.by_launch,
                     "by_time", (json_int_t)r->attribution.by_time, "outside_stages",
                     (json_int_t)r->attribution.outside, "operator_ranges",
                     lp_json_u64(r->op_ranges));
}

/* every stage occurrence's span, for report.html's timeline */
static json_t *spans_json(const struct lp_run *r)
{
    json_t *spans = json_array();
    for (size_t i = 0; i < r->n_spans; i++)
        json_array_append_new(spans, json_pack("[o,o,s]", lp_json_u64(r->spans[i].start),
                                               lp_json_u64(r->spans[i].end),
                                               r->stages[r->spans[i].stage].name));
    return spans;
}

/* A share to 4 places; empty when not known (NaN: no kernels recorded). */
static const char *share(double v, char *buf, size_t len)
{
    if (isfinite(v))
        snprintf(buf, len, "%.4f", v);
    else
        buf[0] = 0;
    return buf;
}

/* ctr_segments ... ctr_over_model_causes: empty past the segment count when the stage has no
 * counters; the executed share, MBU and the ratio to the model empty when they could not be
 * made (0: no peak or model known); causes joined by '+' */
static void counter_fields(FILE *f, const struct lp_stage_counters *c)
{
    fprintf(f, "%zu,", c->segments);
    if (!c->segments) {
        fprintf(f, ",,,,,,,,");
        return;
    }
    fprintf(f, "%.6g,%.4f,", c->tensor_flops, c->tflops);
    if (c->executed_share > 0)
        fprintf(f, "%.5f", c->executed_share);
    fprintf(f, ",%.6g,%.2f,", c->dram_bytes, c->gbs);
    if (c->mbu > 0)
        fprintf(f, "%.5f", c->mbu);
    fprintf(f, ",");
    if (c->vs_model_flops > 0)
        fprintf(f, "%.4f", c->vs_model_flops);
    fprintf(f, ",");
    for (int b = 0, n = 0; lp_text_excess_key(b); b++)
        if (c->excess & 1u << b)
            fprintf(f, "%s%s", n++ ? "+" : "", lp_text_excess_key(b));
    fprintf(f, ",");
}

/* pm_samples, one mean per PM metric (empty when not sampled), pm_dram_gbs, pm_mbu */
static void pm_fields(FILE *f, const struct lp_pm_stats *p)
{
    fprintf(f, "%zu", p->samples);
    for (int i = 0; i < LP_PM_COUNT; i++)
        if (p->samples && (p->valid & 1u << i))
            fprintf(f, ",%.4g", p->mean[i]);
        else
            fprintf(f, ",");
    if (p->samples)
        fprintf(f, ",%.4g", p->dram_gbs);
    else
        fprintf(f, ",");
    if (p->samples && p->mbu > 0)
        fprintf(f, ",%.5f", p->mbu);
    else
        fprintf(f, ",");
}

int lp_report_stages_csv(FILE *f, const struct lp_run *r)
{
    fprintf(f, "stage,kind,occurrences,wall_total_ns,wall_mean_ns,wall_std_ns,wall_cv,"
               "wall_min_ns,wall_max_ns,variable,busy_ns,busy_share,gpu_ns,kernels,"
               "graph_kernels,gaps,gap_ns,host_wait_ns,host_wait_share,launch_delay_p50_ns,"
               "tokens,tokens_source,batch,tokens_per_s,steps,steps_source,step_p50_ns,"
               "step_p90_ns,step_p99_ns,mfu,mbu,achieved_tflops,achieved_gbs,"
               "power_mean_w,power_peak_w,energy_j,j_per_token,htod_bytes,dtoh_bytes,dtod_bytes,"
               "peak_alloc_bytes,ctr_segments,ctr_tensor_flops,ctr_tflops,ctr_executed_share,"
               "ctr_dram_bytes,ctr_gbs,ctr_mbu,ctr_over_model_flops,ctr_over_model_causes,"
               "pm_samples");
    for (int p = 0; p < LP_PM_COUNT; p++)
        fprintf(f, ",pm_%s", lp_pm_name((enum lp_pm)p));
    fprintf(f, ",pm_dram_gbs,pm_mbu");
    for (int c = 0; c < LP_OVERHEAD_CLASS_COUNT; c++) {
        const char *key = lp_text_overhead_class_key((enum lp_overhead_class)c);
        fprintf(f, ",cupti_%s_ns,cupti_%s_count,cupti_%s_share", key, key, key);
    }
    fprintf(f, "\n");
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        lp_csv_field(f, s->name);
        char busy[32], wait[32], t[5][32];
        const int k = r->kernels_recorded; /* times made from kernels: empty without them */
        fprintf(f, ",%s,%zu,%.0f,%.1f,%.1f,%.4f,%.0f,%.0f,%d,%s,%s,%s,%zu,%zu,%zu,%s,"
                   "%s,%s,%s,%lld,%s,%lld,%.2f,",
                lp_stage_kind_name(s->kind), s->occurrences, s->wall.total, s->wall.mean,
                s->wall.std, s->wall.cv, s->wall.min, s->wall.max, s->variable,
                lp_csv_known(k, s->busy_ns, t[0]), share(s->busy_share, busy, sizeof busy),
                lp_csv_known(k, s->gpu_ns, t[1]), s->kernels, s->graph_kernels, s->gaps,
                lp_csv_known(k, s->gap_ns, t[2]), lp_csv_known(k, s->host_wait_ns, t[3]),
                share(s->host_wait_share, wait, sizeof wait),
                lp_csv_known(k, s->launch_delay_p50_ns, t[4]), (long long)s->tokens,
                lp_text_tokens_source(s->tokens_source), (long long)s->batch, s->tokens_per_s);
        if (s->kind == LP_STAGE_KIND_DECODE)
            fprintf(f, "%lld,%s,", (long long)s->steps, lp_text_steps_source(s->steps_source));
        else
            fprintf(f, ",,");
        if (s->step.n)
            fprintf(f, "%.0f,%.0f,%.0f,", s->step.p50, s->step.p90, s->step.p99);
        else
            fprintf(f, ",,,");
        if (s->has_util)
            fprintf(f, "%.5f,%.5f,%.3f,%.1f,", s->mfu, s->mbu, s->achieved_tflops,
                    s->achieved_gbs);
        else
            fprintf(f, ",,,,");
        fprintf(f, "%.2f,%.2f,%.3f,%.5f,%llu,%llu,%llu,%llu,", s->power_mean_w, s->power_peak_w,
                s->energy_j, s->j_per_token, (unsigned long long)s->memcpy_bytes[0],
                (unsigned long long)s->memcpy_bytes[1], (unsigned long long)s->memcpy_bytes[2],
                (unsigned long long)s->peak_alloc_bytes);
        counter_fields(f, &s->ctr);
        pm_fields(f, &s->pm);
        for (int c = 0; c < LP_OVERHEAD_CLASS_COUNT; c++) /* empty: none recorded */
            if (r->overhead.records)
                fprintf(f, ",%llu,%zu,%.5f", (unsigned long long)s->overhead_ns[c],
                        s->overhead_n[c], s->overhead_share[c]);
            else
                fprintf(f, ",,,");
        fprintf(f, "\n");
    }
    return ferror(f) ? -1 : 0;
}

static const struct lp_section_key keys[] = {
    {"stages", stages_json},
    {"attribution", attribution_json},
    {"stage_spans", spans_json},
    {NULL, NULL},
};

const struct lp_section lp_section_stages = {
    .name = "stages",
    .md = stages_md,
    .json = keys,
    .csv = {"stages.csv", lp_report_stages_csv, NULL},
};
