/* report.json: the whole analysis of a run as versioned JSON (schema llmprof-report/2,
 * docs/report-schema.md). Times are integer nanoseconds on the trace clock unless a key says
 * otherwise; shares are fractions 0..1. The HTML report embeds this same document. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmprof/report.h"
#include "llmprof/version.h"
#include "llmprof/ncu.h"
#include "report_internal.h"

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* JSON integers are int64 here: a value past it (a crafted trace's) is written as the most */
static json_t *u64(uint64_t v)
{
    return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

/* the nearest integer of a real ns value, within int64 */
static json_int_t ns_round(double x)
{
    return x >= 9.2e18 ? INT64_MAX : x <= -9.2e18 ? INT64_MIN : (json_int_t)llround(x);
}

static json_t *stat_json(const struct lp_stat *s)
{
    return json_pack("{s:I,s:o,s:o,s:o,s:o,s:o,s:o}", "n", (json_int_t)s->n, "total_ns",
                     num(s->total), "mean_ns", num(s->mean), "std_ns", num(s->std), "cv",
                     num(s->cv), "min_ns", num(s->min), "max_ns", num(s->max));
}

static json_t *dist_json(const struct lp_dist *d)
{
    if (!d->n)
        return json_null();
    return json_pack("{s:I,s:o,s:o,s:o,s:o,s:o,s:o}", "n", (json_int_t)d->n, "mean_ns",
                     num(d->mean), "min_ns", num(d->min), "p50_ns", num(d->p50), "p90_ns",
                     num(d->p90), "p99_ns", num(d->p99), "max_ns", num(d->max));
}

static json_t *kernel_table(const struct lp_run *r, const struct lp_kernel_table *t, size_t n)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < n; i++) {
        const struct lp_kernel_row *k = &t->v[i];
        json_array_append_new(
            rows, json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "name",
                            r->names[k->group], "short_name", r->short_names[k->group],
                            "category", lp_kcat_name(r->cats[k->group]), "calls", u64(k->calls),
                            "total_ns", u64(k->total_ns), "mean_ns", num(k->mean_ns),
                            "median_ns", u64(k->median_ns), "min_ns", u64(k->min_ns), "max_ns",
                            u64(k->max_ns), "std_ns", num(k->std_ns), "share", num(k->share)));
    }
    return json_pack("{s:o,s:I,s:o}", "gpu_ns", u64(t->gpu_ns), "groups",
                     (json_int_t)t->n_groups, "top", rows);
}

static const char *const copy_dirs[4] = {"HtoD", "DtoH", "DtoD", "other"};
static json_t *copies(const uint64_t *b, uint64_t set)
{
    json_t *o = json_object();
    for (int i = 0; i < 4; i++)
        json_object_set_new(o, copy_dirs[i], u64(b[i]));
    json_object_set_new(o, "memset", u64(set));
    return o;
}

static json_t *or_null(double v) { return v > 0 ? num(v) : json_null(); }

/* the counters by their short names (lp_counter_name), those counted */
static json_t *counter_values(unsigned valid, const double *v)
{
    json_t *o = json_object();
    for (unsigned i = 0; i < LP_COUNTER_COUNT; i++)
        if (valid & (1u << i))
            json_object_set_new(o, lp_counter_name(i), num(v[i]));
    return o;
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
    return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
                     "segments", u64(k->segments), "values", counter_values(k->valid, k->value),
                     "tensor_flops", num(k->tensor_flops), "dram_bytes", num(k->dram_bytes),
                     "tflops", num(k->tflops), "executed_share", or_null(k->executed_share),
                     "mfu", or_null(k->executed_share),
                     "pass_tokens", k->pass_tokens > 0 ? json_integer(k->pass_tokens) : json_null(),
                     "over_model_causes", why, "gbs", num(k->gbs), "mbu",
                     or_null(k->mbu), "units", num(k->units), "flops_per_unit",
                     num(k->flops_per_unit), "bytes_per_unit", num(k->bytes_per_unit),
                     "over_model_flops", or_null(k->vs_model_flops), "over_model_bytes",
                     or_null(k->vs_model_bytes), "over_gemm_flops", or_null(k->vs_gemm_flops));
}

static json_t *run_counters(const struct lp_run *r)
{
    const struct lp_run_counters *k = &r->counters;
    if (!k->segments && !k->metrics)
        return json_null();
    return json_pack("{s:o,s:o,s:o,s:o,s:o}", "segments", u64(k->segments), "outside",
                     u64(k->outside), "metrics", k->metrics ? json_string(k->metrics) : json_null(),
                     "chip", k->chip ? json_string(k->chip) : json_null(), "values",
                     counter_values(k->valid, k->value));
}

/* the means of the values sampled, by name (percent; MHz for the clock; GB/s for DRAM) */
static json_t *pm_stats(const struct lp_pm_stats *k)
{
    if (!k->samples)
        return json_null();
    json_t *means = json_object();
    for (unsigned i = 0; i < LP_PM_COUNT; i++)
        if (k->valid & (1u << i))
            json_object_set_new(means, lp_pm_name(i), num(k->mean[i]));
    return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "samples", u64(k->samples), "seconds",
                     num(k->seconds), "means", means, "dram_bytes", num(k->dram_bytes),
                     "dram_gbs", num(k->dram_gbs), "mbu", or_null(k->mbu));
}

/* the bins' columns, in the order run_pm writes them */
static const enum lp_pm pm_bin_columns[] = {LP_PM_TENSOR, LP_PM_SM_ISSUE, LP_PM_GR_ACTIVE,
                                            LP_PM_IDLE_SM_WARPS, LP_PM_L2, LP_PM_GPC_MHZ};

static json_t *run_pm(const struct lp_run *r)
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
        json_t *row = json_pack("[o,o]", u64(b->start), u64(b->end));
        for (size_t c = 0; c < sizeof pm_bin_columns / sizeof *pm_bin_columns; c++)
            json_array_append_new(row, b->s.valid & (1u << pm_bin_columns[c])
                                           ? num(b->s.mean[pm_bin_columns[c]])
                                           : json_null());
        json_array_append_new(row, num(b->s.dram_gbs));
        json_array_append_new(row, or_null(b->s.mbu));
        json_array_append_new(bins, row);
    }
    return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "interval_ns", u64(k->interval_ns),
                     "metrics", k->metrics ? json_string(k->metrics) : json_null(), "chip",
                     k->chip ? json_string(k->chip) : json_null(), "first_ns", u64(k->first_ns),
                     "last_ns", u64(k->last_ns), "all", pm_stats(&k->all), "outside",
                     pm_stats(&k->outside), "bins_columns", cols, "bins", bins);
}

/* per class of CUPTI's overhead records: a stage's time, count and share (S), or the run's
 * time (RUN_NS) */
static json_t *overhead_classes(const struct lp_stage_report *s, const uint64_t *run_ns)
{
    json_t *o = json_object();
    for (int k = 0; k < LP_OVERHEAD_CLASS_COUNT; k++)
        json_object_set_new(o, lp_text_overhead_class_key(k),
                            s ? json_pack("{s:o,s:I,s:o}", "ns", u64(s->overhead_ns[k]), "count",
                                          (json_int_t)s->overhead_n[k], "share",
                                          num(s->overhead_share[k]))
                              : u64(run_ns[k]));
    return o;
}

/* CUPTI's overhead records per kind, and on the program's threads per class; null without */
static json_t *overhead_json(const struct lp_run *r)
{
    const struct lp_run_overhead *o = &r->overhead;
    if (!o->records)
        return json_null();
    json_t *kinds = json_array();
    for (size_t i = 0; i < o->n_rows; i++) {
        const struct lp_overhead_row *w = &o->rows[i];
        json_array_append_new(kinds, json_pack("{s:s,s:s,s:s,s:I,s:o,s:o,s:o,s:o}", "kind",
                                               lp_text_overhead_kind_key(w->kind), "label",
                                               lp_text_overhead_kind(w->kind), "class",
                                               lp_text_overhead_class_key(w->cls), "count",
                                               (json_int_t)w->count, "total_ns", u64(w->total_ns),
                                               "max_ns", u64(w->max_ns), "program_ns",
                                               u64(w->program_ns), "measured_ns",
                                               u64(w->measured_ns)));
    }
    json_t *labels = json_object();
    for (int k = 0; k < LP_OVERHEAD_CLASS_COUNT; k++)
        json_object_set_new(labels, lp_text_overhead_class_key(k),
                            json_string(lp_text_overhead_class(k)));
    return json_pack("{s:I,s:I,s:b,s:o,s:o,s:o,s:o}", "records", (json_int_t)o->records,
                     "untimed", (json_int_t)o->untimed, "launches_known", o->launches_known,
                     "kinds", kinds, "class_labels", labels, "program_ns", overhead_classes(NULL, o->program_ns),
                     "measured_ns", overhead_classes(NULL, o->measured_ns));
}

static json_t *stage_json(const struct lp_run *r, const struct lp_stage_report *s)
{
    /* figures made from kernels: null, not 0, when none were recorded (--light) */
    const int k = r->kernels_recorded;
    json_t *cats = json_object();
    for (int c = 0; c < LP_KCAT_COUNT; c++)
        json_object_set_new(cats, lp_kcat_name((enum lp_kcat)c), num(s->cat_ns[c]));
    json_t *subs = json_array();
    for (size_t i = 0; i < s->n_sub; i++)
        json_array_append_new(subs, json_pack("{s:s,s:I,s:o,s:o,s:o}", "name", s->sub[i].name,
                                              "count", (json_int_t)s->sub[i].count, "wall_ns",
                                              u64(s->sub[i].wall_ns), "gpu_ns",
                                              u64(s->sub[i].gpu_ns), "ttft_share",
                                              s->sub[i].ttft_share > 0
                                                  ? num(s->sub[i].ttft_share)
                                                  : json_null()));
    json_t *o = json_pack(
        "{s:s,s:s,s:I,s:o,s:o,s:b,s:o,s:o,s:o,s:I,s:I,s:o,s:I,s:o,s:o,s:o,s:o}", "name", s->name,
        "kind", lp_stage_kind_name(s->kind), "occurrences", (json_int_t)s->occurrences, "wall",
        stat_json(&s->wall), "gpu_busy", k ? stat_json(&s->busy) : json_null(), "variable",
        s->variable, "busy_ns", k ? u64(s->busy_ns) : json_null(), "busy_share",
        num(s->busy_share), "gpu_ns", k ? u64(s->gpu_ns) : json_null(), "kernels",
        (json_int_t)s->kernels, "graph_kernels", (json_int_t)s->graph_kernels,
        "kernels_per_occurrence", num(s->kernels_per_occurrence), "gaps", (json_int_t)s->gaps,
        "gap_ns", k ? u64(s->gap_ns) : json_null(), "host_wait_ns",
        k ? u64(s->host_wait_ns) : json_null(), "host_wait_share", num(s->host_wait_share),
        "launch_delay_p50_ns", k ? u64(s->launch_delay_p50_ns) : json_null());
    json_object_set_new(o, "graph_replays", u64(s->graph_replays));
    json_object_set_new(o, "communication",
                        k ? json_pack("{s:o,s:o,s:o,s:o}", "gpu_ns", u64(s->comm_ns),
                                      "share", num(s->cat_share[LP_KCAT_COMMUNICATION]),
                                      "overlap_ns", u64(s->comm_overlap_ns), "overlap_share",
                                      num(s->comm_overlap_share))
                          : json_null());
    json_object_set_new(o, "cupti_overhead",
                        r->overhead.records ? overhead_classes(s, NULL) : json_null());
    json_object_set_new(o, "ttft", s->ttft_share > 0
                                       ? json_pack("{s:o,s:o}", "share", num(s->ttft_share),
                                                   "ns_per_request", num(s->ttft_ns_per_request))
                                       : json_null());
    json_object_set_new(o, "moe_gemm", json_pack("{s:o,s:I,s:o}", "gpu_ns", u64(s->moe_gemm_ns),
                                                 "kernels", (json_int_t)s->moe_gemm_kernels,
                                                 "share", num(s->moe_gemm_share)));
    json_object_set_new(o, "tokens", json_pack("{s:I,s:I,s:s,s:o}", "count",
                                               (json_int_t)s->tokens, "batch",
                                               (json_int_t)s->batch, "source",
                                               lp_text_tokens_source(s->tokens_source),
                                               "per_s", num(s->tokens_per_s)));
    if (s->kind == LP_STAGE_KIND_DECODE)
        json_object_set_new(o, "steps", json_pack("{s:I,s:s,s:o}", "count", (json_int_t)s->steps,
                                                  "source", lp_text_steps_source(s->steps_source),
                                                  "duration", dist_json(&s->step)));
    else
        json_object_set_new(o, "steps", json_null());
    json_object_set_new(o, "categories_ns", cats);
    json_object_set_new(o, "copies_bytes", copies(s->memcpy_bytes, s->memset_bytes));
    json_object_set_new(o, "memory", json_pack("{s:o,s:o}", "peak_alloc_bytes",
                                               u64(s->peak_alloc_bytes), "peak_nvml_used_bytes",
                                               u64(s->peak_nvml_used_bytes)));
    json_object_set_new(o, "power",
                        json_pack("{s:I,s:b,s:o,s:o,s:o,s:o,s:s}", "nvml_samples",
                                  (json_int_t)s->nvml_samples, "coarse", s->power_coarse,
                                  "mean_w", num(s->power_mean_w),
                                  "peak_w", num(s->power_peak_w), "energy_j", num(s->energy_j),
                                  "j_per_token", num(s->j_per_token), "energy_source",
                                  s->energy_from_counter ? "energy counter" : "power x time"));
    if (s->has_util)
        json_object_set_new(o, "utilisation",
                            json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "model_flops_per_occurrence",
                                      num(s->model_flops), "model_bytes_per_occurrence",
                                      num(s->model_bytes), "achieved_tflops",
                                      num(s->achieved_tflops), "achieved_gbs",
                                      num(s->achieved_gbs), "mfu", num(s->mfu), "mbu",
                                      num(s->mbu)));
    else
        json_object_set_new(o, "utilisation", json_null());
    json_object_set_new(o, "substages", subs);
    json_object_set_new(o, "gemm",
                        json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
                                  "calls",
                                  u64(s->gemm_calls), "gpu_ns", u64(s->gemm_ns), "unshaped_ns",
                                  u64(s->gemm_unshaped_ns), "coverage",
                                  s->gemm_coverage >= 0 ? num(s->gemm_coverage) : json_null(),
                                  "partial", json_boolean(s->gemm_partial),
                                  "flops",
                                  num(s->gemm_flops), "tflops", num(s->gemm_tflops),
                                  "measured_mfu", s->gemm_mfu > 0 ? num(s->gemm_mfu) : json_null(),
                                  "model_matmul_flops_per_occurrence",
                                  s->has_util ? num(s->model_matmul_flops) : json_null(),
                                  "model_linear_flops_per_occurrence",
                                  s->has_util ? num(s->model_linear_flops) : json_null(),
                                  "measured_over_model_matmul",
                                  s->gemm_vs_model > 0 ? num(s->gemm_vs_model) : json_null(),
                                  "measured_over_model_linear",
                                  s->gemm_vs_linear > 0 ? num(s->gemm_vs_linear) : json_null(),
                                  "context_flops", num(s->gemm_context_flops),
                                  "measured_over_model_matmul_rest",
                                  s->gemm_vs_model > 0 ? num(s->gemm_vs_model_rest)
                                                       : json_null()));
    json_object_set_new(o, "counters", stage_counters(&s->ctr));
    json_object_set_new(o, "pm", pm_stats(&s->pm));
    json_object_set_new(o, "kernels_top", kernel_table(r, &s->top, s->top.n));
    return o;
}

static json_t *gemms_json(const struct lp_run *r)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < r->n_gemms; i++) {
        const struct lp_gemm_row *g = &r->gemms[i];
        const struct lp_gemm *c = &g->call;
        char hint[512];
        lp_text_gemm_hint(g, hint, sizeof hint);
        json_t *o = json_pack(
            "{s:s,s:s,s:o,s:o,s:o,s:o,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:s,s:I,s:o,s:o,s:o}",
            "stage", g->stage >= 0 ? r->stages[g->stage].name : "", "api",
            lp_trace_str(r->trace, c->api), "m", u64(c->m), "n", u64(c->n), "k", u64(c->k),
            "batch", u64(c->batch), "transa", c->transa == 0 ? "N" : c->transa == 1 ? "T" : "C",
            "transb", c->transb == 0 ? "N" : c->transb == 1 ? "T" : "C", "a_type",
            lp_cuda_type_name(c->a_type), "b_type", lp_cuda_type_name(c->b_type), "d_type",
            lp_cuda_type_name(c->d_type), "compute_type", lp_compute_type_name(c->compute_type),
            "tile", lp_trace_str(r->trace, c->tile), "algo", c->algo, "hint", hint,
            "epilogue", (json_int_t)c->epilogue, "calls", u64(g->calls), "linked", u64(g->linked),
            "kernels", u64(g->kernels));
        json_t *codes = json_array();
        for (int b = 0; lp_text_gemm_hint_key(b); b++)
            if (g->hints & 1u << b)
                json_array_append_new(codes, json_string(lp_text_gemm_hint_key(b)));
        json_object_set_new(o, "hint_codes", codes);
        static const char *const vary_keys[] = {[LP_GEMM_VARY_STEPS] = "steps",
                                                [LP_GEMM_VARY_CONTEXT] = "context",
                                                [LP_GEMM_VARY_MLA] = "mla_kv_expansion"};
        json_object_set_new(o, "sizes",
                            g->vary_dim ? json_pack("{s:s#,s:o,s:o,s:o,s:o,s:s}", "dim",
                                                    &g->vary_dim, (size_t)1, "from",
                                                    u64(g->vary_lo), "to", u64(g->vary_hi), "step",
                                                    u64(g->vary_step), "count",
                                                    u64(g->vary_values), "cause",
                                                    vary_keys[g->vary])
                                        : json_null());
        json_object_set_new(o, "replayed", json_boolean(g->replayed));
        json_object_set_new(o, "gpu_ns", u64(g->gpu_ns));
        json_object_set_new(o, "mean_ns", num(g->mean_ns));
        json_object_set_new(o, "flops_per_call", num(g->flops_per_call));
        json_object_set_new(o, "tflops", num(g->tflops));
        json_object_set_new(o, "peak_dtype",
                            g->peak_dtype >= 0 ? json_string(lp_dtype_name(g->peak_dtype))
                                               : json_null());
        json_object_set_new(o, "peak_share", g->peak_share >= 0 ? num(g->peak_share) : json_null());
        json_object_set_new(o, "intensity", num(g->intensity));
        json_object_set_new(o, "memory_bound", json_boolean(g->memory_bound));
        json_object_set_new(o, "gbs", num(g->gbs));
        json_object_set_new(o, "top_kernel",
                            g->top_group != SIZE_MAX ? json_string(r->names[g->top_group])
                                                     : json_null());
        json_array_append_new(rows, o);
    }
    json_t *un = json_array();
    for (size_t i = 0; i < r->n_unshaped; i++) {
        const struct lp_unshaped_gemm *u = &r->unshaped[i];
        json_array_append_new(un, json_pack("{s:s,s:s,s:s,s:o,s:o,s:o}", "stage",
                                            r->stages[u->stage].name, "kernel",
                                            r->names[u->group], "short_name",
                                            r->short_names[u->group], "calls", u64(u->calls),
                                            "gpu_ns", u64(u->gpu_ns), "stage_share",
                                            num(u->stage_share)));
    }
    json_t *o = json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:b,s:o,s:o}", "capture",
                          lp_text_gemm_state(r),
                          "calls", u64(r->gemm_calls), "linked", u64(r->gemm_linked), "failed",
                          u64(r->gemm_failed), "gpu_ns", u64(r->gemm_ns), "flops",
                          num(r->gemm_flops), "stages_inferred", r->stages_inferred,
                          "warmup_calls", u64(r->gemm_warmup_calls), "shapes", rows);
    json_object_set_new(o, "unshaped_ns", u64(r->gemm_unshaped_ns));
    json_object_set_new(o, "unshaped", un);
    json_object_set_new(o, "captured_calls", u64(r->gemm_captured));
    json_object_set_new(o, "replayed_calls", u64(r->gemm_replayed));
    return o;
}

static json_t *graphs_json(const struct lp_run *r)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < r->n_graphs; i++) {
        const struct lp_graph_row *g = &r->graphs[i];
        json_t *o = json_pack("{s:s,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "stage",
                              r->stages[g->stage].name, "graph_id", (json_int_t)g->graph_id,
                              "replays", u64(g->replays), "kernels", u64(g->kernels),
                              "kernels_per_replay", num(g->kernels_per_replay), "gpu_ns",
                              u64(g->gpu_ns), "gemm_kernels", u64(g->gemm_kernels),
                              "gemm_kernels_with_shape", u64(g->gemm_shaped),
                              "kernels_with_capture_node", u64(g->traced));
        json_object_set_new(o, "recorded_whole", json_boolean(g->whole));
        json_object_set_new(o, "captured_in",
                            g->capture_range >= 0
                                ? json_string(lp_trace_str(r->trace,
                                                           r->ranges.v[g->capture_range].name))
                                : json_null());
        json_array_append_new(rows, o);
    }
    return rows;
}

static json_t *timeline(const struct lp_run *r)
{
    json_t *by = json_object();
    for (int c = 0; c < LP_GAP_CAUSE_COUNT; c++)
        json_object_set_new(by, lp_text_gap_cause_key(c), u64(r->gap_ns_by_cause[c]));
    json_t *gaps = json_array();
    for (size_t i = 0; i < r->n_top_gaps; i++) {
        const struct lp_gap *g = &r->top_gaps[i];
        json_array_append_new(
            gaps, json_pack("{s:o,s:o,s:s?,s:s,s:o,s:s?}", "start_ns", u64(g->start), "dur_ns",
                            u64(g->dur), "stage", g->stage >= 0 ? r->stages[g->stage].name : NULL,
                            "cause", lp_text_gap_cause_key(g->cause), "host_api_ns",
                            u64(g->host_api_ns), "host_api", g->api));
    }
    json_t *bins = json_array();
    for (size_t i = 0; i < r->n_bins; i++)
        json_array_append_new(bins, json_pack("[o,o]", u64(r->bins[i].start),
                                              num(round(r->bins[i].busy * 1000) / 1000)));
    json_t *o = json_pack("{s:o,s:o,s:o,s:o,s:b}", "first_ns", u64(r->first_ns), "last_ns",
                          u64(r->last_ns), "busy_ns", u64(r->busy_ns), "busy_share",
                          num(r->busy_share), "kernels_recorded", r->kernels_recorded);
    json_object_set_new(o, "graph_replays_whole", u64(r->replays_whole));
    json_object_set_new(o, "gaps", json_pack("{s:o,s:I,s:o,s:o,s:o,s:o}", "threshold_ns",
                                             u64(r->opt.gap_ns), "count", (json_int_t)r->n_gaps,
                                             "total_ns", u64(r->gap_ns), "by_cause_ns", by,
                                             "host_api_ns", u64(r->gap_host_api_ns), "longest",
                                             gaps));
    json_object_set_new(o, "busy_bins", bins);
    json_object_set_new(o, "busy_bins_from_ns", u64(r->bins_from_ns));
    json_object_set_new(o, "copies_bytes", copies(r->memcpy_bytes, r->memset_bytes));
    json_object_set_new(o, "peak_alloc_bytes", u64(r->peak_alloc_bytes));
    return o;
}

static json_t *power(const struct lp_run *r)
{
    json_t *thr = json_object();
    for (int b = 0; b < LP_THROTTLE_BITS; b++)
        json_object_set_new(thr, lp_text_throttle_key(b), num(r->throttle_share[b]));
    json_t *series = json_array();
    for (size_t i = 0; i < r->n_power; i++) {
        const struct lp_power_point *p = &r->power[i];
        json_array_append_new(series, json_pack("[o,o,o,o,o,o]", u64(p->t), num(p->power_w),
                                                num(p->sm_mhz), num(p->mem_mhz), num(p->util),
                                                num(p->temp_c)));
    }
    json_t *o = json_pack("{s:i,s:I,s:o,s:b,s:o,s:o,s:o}", "device", r->nvml_device, "samples",
                          (json_int_t)r->nvml_samples, "update_ns", u64(r->nvml_update_ns),
                          "power_averaged", r->power_averaged,
                          "mean_w", num(r->power_mean_w), "peak_w", num(r->power_peak_w),
                          "energy_j", num(r->energy_j));
    json_object_set_new(o, "throttle_share", thr);
    json_object_set_new(o, "series_columns",
                        json_pack("[s,s,s,s,s,s]", "t_ns", "power_w", "sm_mhz", "mem_mhz",
                                  "util_gpu_pct", "temp_c"));
    json_object_set_new(o, "series", series);
    return o;
}

static json_t *trace_json(const struct lp_trace *t, const struct lp_run *r)
{
    json_t *meta = json_object(), *warn = json_array(), *loss = json_array(),
           *devs = json_array();
    for (size_t i = 0; i < t->n_meta; i++)
        json_object_set_new(meta, t->meta[i].key, json_string(t->meta[i].value));
    for (size_t i = 0; i < t->n_warnings; i++)
        json_array_append_new(warn, json_string(t->warnings[i]));
    for (size_t i = 0; i < t->n_losses; i++)
        json_array_append_new(loss, json_pack("{s:i,s:o,s:s}", "source", (int)t->losses[i].source,
                                              "count", u64(t->losses[i].count), "what",
                                              lp_trace_str(t, t->losses[i].what)));
    for (size_t i = 0; i < t->n_devices; i++) {
        const struct lp_device *d = &t->devices[i];
        char cc[16];
        snprintf(cc, sizeof cc, "%u.%u", d->cc_major, d->cc_minor);
        json_array_append_new(
            devs, json_pack("{s:i,s:s,s:s,s:i,s:o,s:i,s:i}", "id", (int)d->id, "name",
                            lp_trace_str(t, d->name), "cc", cc, "sms", (int)d->sm_count,
                            "mem_bytes", u64(d->mem_bytes), "max_sm_mhz", (int)d->max_sm_mhz,
                            "power_limit_mw", (int)d->power_limit_mw));
    }
    json_t *o = json_pack("{s:s,s:i,s:i,s:b,s:o,s:o,s:o,s:o}", "path", t->path ? t->path : "",
                          "version_major", (int)t->version_major, "version_minor",
                          (int)t->version_minor, "complete", t->complete, "records",
                          u64(t->n_records), "file_bytes", u64(t->file_bytes), "dropped_bytes",
                          u64(t->dropped_bytes), "lost_records", u64(r->lost_records));
    json_object_set_new(o, "losses_uncounted", json_integer((json_int_t)r->losses_uncounted));
    /* the chunks against the writer's account (format 1.8): how the file was altered */
    static const char *const altered_keys[] = {"repeated", "missing", "order", "unknown_type",
                                               "extra_records", "unnumbered"};
    json_t *alt = json_array();
    for (size_t b = 0; b < sizeof altered_keys / sizeof *altered_keys; b++)
        if (t->altered & 1u << b)
            json_array_append_new(alt, json_string(altered_keys[b]));
    json_object_set_new(o, "altered", alt);
    json_object_set_new(o, "records_unread", u64(t->records_unread));
    json_object_set_new(o, "counts",
                        json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "kernels",
                                  (json_int_t)t->n_kernels, "memcpy", (json_int_t)t->n_memcpys,
                                  "memset", (json_int_t)t->n_memsets, "markers",
                                  (json_int_t)t->n_markers, "api", (json_int_t)t->n_apis, "nvml",
                                  (json_int_t)t->n_nvml, "ranges", (json_int_t)r->ranges.n));
    json_object_set_new(o, "meta", meta);
    if (r->opt.command)
        json_object_set_new(meta, "command", json_string(r->opt.command));
    json_object_set_new(o, "warnings", warn);
    json_object_set_new(o, "losses", loss);
    json_object_set_new(o, "devices", devs);
    return o;
}

static json_t *llm_json(const struct lp_run *r)
{
    const struct lp_llm_metrics *m = &r->llm;
    static const char *const logits[] = {NULL, "last", "every"};
    json_t *llm = json_pack(
        "{s:b,s:I,s:o,s:o,s:o,s:o,s:I,s:I,s:s,s:I,s:s,s:I,s:s}", "found", m->found, "requests",
        (json_int_t)m->requests, "ttft_s", m->ttft_s > 0 ? num(m->ttft_s) : json_null(),
        "tpot_s", m->tpot_s > 0 ? num(m->tpot_s) : json_null(), "prefill_tokens_per_s",
        m->prefill_tokens_per_s > 0 ? num(m->prefill_tokens_per_s) : json_null(),
        "decode_tokens_per_s", m->decode_tokens_per_s > 0 ? num(m->decode_tokens_per_s) : json_null(),
        "prefill_tokens", (json_int_t)m->prefill_tokens, "prompt_tokens",
        (json_int_t)m->prompt_tokens, "prefill_tokens_source",
        lp_text_tokens_source(m->prefill_source), "decode_tokens", (json_int_t)m->decode_tokens,
        "decode_tokens_source", lp_text_tokens_source(m->decode_source), "batch",
        (json_int_t)m->batch, "batch_source", lp_text_tokens_source(m->batch_source));
    static const char *const why[] = {NULL, "no_shapes", "not_llm_shapes", "no_stage_kind",
                                      "serving"};
    json_object_set_new(llm, "why_not",
                        m->why_not && (size_t)m->why_not < sizeof why / sizeof *why
                            ? json_string(why[m->why_not])
                            : json_null());
    json_object_set_new(llm, "decode_requests", json_integer((json_int_t)m->decode_requests));
    json_object_set_new(llm, "requests_cut", json_integer((json_int_t)m->cut_requests));
    json_object_set_new(llm, "prompt_per_sequence", m->prompt_per_sequence
                                                        ? json_integer(m->prompt_per_sequence)
                                                        : json_null());
    if (!m->prompt_tokens)
        json_object_set_new(llm, "prompt_tokens", json_null());
    json_object_set_new(llm, "decode_steps", json_integer((json_int_t)m->decode_steps));
    json_object_set_new(llm, "steps_source", json_string(lp_text_steps_source(m->steps_source)));
    json_object_set_new(llm, "ttft", dist_json(&m->ttft));
    json_object_set_new(llm, "tpot", dist_json(&m->tpot));
    json_object_set_new(llm, "itl", dist_json(&m->itl));
    json_object_set_new(llm, "prefill_logits", m->prefill_logits > 0 && m->prefill_logits < 3
                                                   ? json_string(logits[m->prefill_logits])
                                                   : json_null());
    json_object_set_new(llm, "ttft_outside_share", m->ttft_outside_share > 0
                                                       ? num(m->ttft_outside_share)
                                                       : json_null());
    json_object_set_new(llm, "images",
                        r->vision_tokens > 0
                            ? json_pack("{s:I,s:I,s:s,s:I,s:o,s:s}", "slots_per_prompt",
                                        (json_int_t)r->vision_tokens, "text_tokens_per_prompt",
                                        (json_int_t)r->text_tokens, "vision_mode",
                                        lp_vision_mode_name(r->vision_mode), "crops",
                                        (json_int_t)r->vision_crops, "projector_rows_per_request",
                                        r->image_rows > 0 ? json_integer(r->image_rows)
                                                          : json_null(),
                                        "mode_source",
                                        r->vision_from_rows ? "projector rows" : "option")
                            : json_null());
    return llm;
}

static json_t *warmup_json(const struct lp_run *r)
{
    static const char *const causes[] = {NULL, "ttft", "tpot", "stage_time"};
    const struct lp_warmup_found *w = &r->warmup;
    if (w->cause == LP_WARMUP_NONE)
        return json_null();
    return json_pack("{s:s,s:s?,s:o,s:o,s:o,s:I,s:I}", "cause", causes[w->cause], "stage",
                     w->stage >= 0 ? r->stages[w->stage].name : NULL, "value_ns",
                     num(w->value_ns), "median_ns", num(w->median_ns), "ratio", num(w->ratio),
                     "others", (json_int_t)w->others, "occurrences", (json_int_t)w->occurrences);
}

/* the assumptions of MFU and MBU, or why they are missing, and the request figures */
static json_t *util_json(const struct lp_run *r)
{
    char note[1024];
    lp_text_util(r, note, sizeof note);
    json_t *util = json_pack("{s:b,s:s}", "available", r->has_util, "note", note);
    if (r->has_util) {
        json_object_set_new(util, "gpu", json_string(r->gpu.name));
        json_object_set_new(util, "dtype", json_string(lp_dtype_name(r->dtype)));
        json_object_set_new(util, "peak_tflops", num(r->gpu.tflops[r->dtype]));
        json_object_set_new(util, "mem_bw_gbs", num(r->gpu.mem_bw_gbs));
        json_object_set_new(util, "request_flops", num(r->request_flops));
        json_object_set_new(util, "request_bytes", num(r->request_bytes));
        json_object_set_new(util, "request_s", num(r->request_s));
        json_object_set_new(util, "mfu", num(r->mfu));
        json_object_set_new(util, "mbu", num(r->mbu));
    }
    return util;
}

static json_t *operators_json(const struct lp_run *r)
{
    json_t *ops = json_array();
    for (size_t i = 0; i < r->n_ops; i++) {
        const struct lp_op_row *o = &r->ops[i];
        json_t *top = json_array();
        for (int k = 0; k < 3; k++)
            if (o->top_group[k] != SIZE_MAX)
                json_array_append_new(top, json_pack("{s:s,s:o}", "name",
                                                     r->names[o->top_group[k]], "gpu_ns",
                                                     u64(o->top_ns[k])));
        json_array_append_new(ops, json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:o}", "name", o->name,
                                             "calls", u64(o->calls), "cpu_ns", u64(o->cpu_ns),
                                             "gpu_ns", u64(o->gpu_ns), "self_gpu_ns",
                                             u64(o->self_gpu_ns), "kernels", u64(o->kernels),
                                             "top_kernels", top));
    }
    return ops;
}

static json_t *centres_json(const struct lp_run *r)
{
    json_t *cc = json_array();
    for (size_t i = 0; i < r->n_centres; i++) {
        const struct lp_cost_centre *c = &r->centres[i];
        json_array_append_new(
            cc, json_pack("{s:s,s:s,s:o,s:o,s:s?}", "stage", r->stages[c->stage].name,
                          "category", lp_kcat_name(c->cat), "gpu_ns", u64(c->gpu_ns), "share",
                          num(c->share), "top_kernel",
                          c->top_group != SIZE_MAX ? r->short_names[c->top_group] : NULL));
    }
    return cc;
}

/* each finding: its machine key, severity and the sentences text.c makes */
static json_t *findings_json(const struct lp_run *r)
{
    json_t *fs = json_array();
    for (size_t i = 0; i < r->n_findings; i++) {
        const struct lp_finding *f = &r->findings[i];
        struct lp_finding_text x;
        lp_text_finding(r, f, &x);
        json_array_append_new(fs, json_pack("{s:s,s:i,s:s,s:s,s:s}", "code",
                                            lp_text_finding_key(f->code), "severity",
                                            f->severity, "title", x.title, "evidence",
                                            x.evidence, "advice", x.advice));
    }
    return fs;
}

/* a metric of K, null when ncu did not give it */
static json_t *ncu_metric(const struct lp_ncu_kernel *k, enum lp_ncu_metric m)
{
    return (k->valid >> m) & 1 ? num(k->metric[m]) : json_null();
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
                                                    d->ncu->stall_names[w->j.stall[s]],
                                                    "per_issue", num(k->stall[w->j.stall[s]])));
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
        json_object_set_new(o, "run_gpu_ns", u64(w->run_ns));
        json_object_set_new(o, "run_calls", u64(w->run_calls));
        json_object_set_new(o, "share", num(w->share));
        json_object_set_new(o, "ncu_id", u64(k->id));
        json_object_set_new(o, "instances", u64(w->instances));
        json_object_set_new(o, "duration_ns", ncu_metric(k, LP_NCU_DURATION));
        json_object_set_new(o, "duration_min_ns", num(w->dur_min_ns));
        json_object_set_new(o, "duration_max_ns", num(w->dur_max_ns));
        json_object_set_new(o, "sol_sm_pct", ncu_metric(k, LP_NCU_SOL_SM));
        json_object_set_new(o, "sol_memory_pct", ncu_metric(k, LP_NCU_SOL_MEMORY));
        json_object_set_new(o, "sol_dram_pct", ncu_metric(k, LP_NCU_SOL_DRAM));
        json_object_set_new(o, "dram_bytes_per_s", ncu_metric(k, LP_NCU_DRAM_BW));
        json_object_set_new(o, "occupancy_achieved_pct", ncu_metric(k, LP_NCU_OCC_ACHIEVED));
        json_object_set_new(o, "occupancy_theoretical_pct", ncu_metric(k, LP_NCU_OCC_THEORETICAL));
        json_object_set_new(o, "occupancy_limits", limits);
        json_object_set_new(o, "limit_blocks_per_sm", w->j.limits ? num(w->j.limit_blocks)
                                                                   : json_null());
        json_object_set_new(o, "registers_per_thread", ncu_metric(k, LP_NCU_REGISTERS));
        json_object_set_new(o, "waves", ncu_metric(k, LP_NCU_WAVES));
        json_object_set_new(o, "tensor_pipe_pct", ncu_metric(k, LP_NCU_TENSOR));
        json_object_set_new(o, "tensor_flops", num(w->tensor_flops));
        json_object_set_new(o, "fp32_flops", num(w->fp32_flops));
        json_object_set_new(o, "flops_per_s", num(w->flops_per_s));
        json_object_set_new(o, "dram_bytes", num(w->dram_bytes));
        json_object_set_new(o, "flops_per_byte", num(w->intensity));
        json_object_set_new(o, "ridge_flops_per_byte", w->ridge > 0 ? num(w->ridge) : json_null());
        json_object_set_new(o, "peak_flops_per_s", w->ridge > 0 ? num(w->peak_flops) : json_null());
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
                     d->mem_bw > 0 ? num(d->mem_bw) : json_null(), "rows", rows);
}

/* the capture windows (record --capture), null when everything was recorded */
static json_t *capture_json(const struct lp_run *r)
{
    const struct lp_capture_facts *c = &r->capture;
    if (!c->windowed)
        return json_null();
    json_t *list = json_array();
    for (size_t i = 0; i < c->n_windows; i++) {
        double e = c->window_energy_j ? c->window_energy_j[i] : NAN;
        json_array_append_new(list, json_pack("{s:o,s:o,s:o}", "start_ns",
                                              u64(c->windows[i].start), "end_ns",
                                              u64(c->windows[i].end), "energy_j", num(e)));
    }
    return json_pack("{s:s,s:I,s:o,s:o,s:I,s:I,s:I,s:o,s:o,s:o,s:o}", "mode", c->mode, "windows",
                     (json_int_t)c->n_windows, "recorded_ns", u64(c->recorded_ns), "span_ns",
                     c->span_ns ? u64(c->span_ns) : json_null(), "stage_ranges_outside",
                     (json_int_t)c->occ_outside, "stage_ranges_cut", (json_int_t)c->occ_cut,
                     "stage_ranges_across", (json_int_t)c->occ_across, "gpu_span_unrecorded_ns",
                     u64(r->unrecorded_ns), "energy_j", c->n_energy ? num(c->energy_j) : json_null(),
                     "power_mean_w", c->n_energy ? num(c->power_mean_w) : json_null(), "list", list);
}

/* ---- serving loops ---- */

static json_t *i64(int64_t v)
{
    return json_integer((json_int_t)v);
}

/* a time of the trace clock, null for 0 (not known) */
static json_t *time_or_null(uint64_t v)
{
    return v ? u64(v) : json_null();
}

/* the requests of the request convention; null when the program marks none */
static json_t *serving_requests(const struct lp_serving *s)
{
    if (!s->n_reqs)
        return json_null();
    json_t *slow = json_array();
    for (size_t i = 0; i < s->n_slowest; i++) {
        const struct lp_serving_request *q = &s->reqs[s->slowest[i]];
        json_t *o = json_object();
        json_object_set_new(o, "id", json_string(q->id ? q->id : ""));
        json_object_set_new(o, "ttft_ns", q->ttft_ns >= 0 ? num(q->ttft_ns) : json_null());
        json_object_set_new(o, "queue_ns", q->queue_ns >= 0 ? num(q->queue_ns) : json_null());
        json_object_set_new(o, "prefill_ns",
                            q->prefill_ns >= 0 ? num(q->prefill_ns) : json_null());
        json_object_set_new(o, "shared_tokens",
                            q->prefill_iterations ? i64(q->shared_tokens) : json_null());
        json_object_set_new(o, "prefill_iterations",
                            json_integer((json_int_t)q->prefill_iterations));
        json_object_set_new(o, "prompt", q->prompt ? i64(q->prompt) : json_null());
        json_object_set_new(o, "tokens", i64(q->tokens));
        json_object_set_new(o, "tpot_ns", q->tpot_ns >= 0 ? num(q->tpot_ns) : json_null());
        json_array_append_new(slow, o);
    }
    json_t *o = json_object();
    json_object_set_new(o, "n", json_integer((json_int_t)s->n_reqs));
    json_object_set_new(o, "cut", json_integer((json_int_t)s->reqs_cut));
    json_object_set_new(o, "no_token", json_integer((json_int_t)s->reqs_no_token));
    json_object_set_new(o, "ids_reused", json_integer((json_int_t)s->ids_reused));
    json_object_set_new(o, "marks_unknown", json_integer((json_int_t)s->marks_unknown));
    json_object_set_new(o, "token_marks", json_integer((json_int_t)s->token_marks));
    json_object_set_new(o, "prefill_marks", json_integer((json_int_t)s->prefill_marks));
    json_object_set_new(o, "ttft", dist_json(&s->ttft));
    json_object_set_new(o, "tpot", dist_json(&s->tpot));
    json_object_set_new(o, "queue", dist_json(&s->queue));
    json_object_set_new(o, "itl", dist_json(&s->req_itl));
    json_object_set_new(o, "slowest", slow);
    return o;
}

/* every iteration, as columns (one array per field) for the charts */
static json_t *serving_iterations(const struct lp_serving *s)
{
    static const char *const cols[] = {"start", "end", "period", "tokens", "sampled", "decode",
                                       "prefill_tokens", "bucket", "kind", "source"};
    enum { N_COLS = sizeof cols / sizeof *cols };
    json_t *a[N_COLS], *o = json_object();
    for (size_t c = 0; c < N_COLS; c++)
        a[c] = json_array();
    for (size_t i = 0; i < s->n_iters; i++) {
        const struct lp_iteration *it = &s->iters[i];
        json_t *v[N_COLS] = {time_or_null(it->start), u64(it->end),
                             it->period_ns ? u64(it->period_ns) : json_null(), i64(it->tokens),
                             i64(it->sampled), i64(it->decode), i64(it->prefill_tokens),
                             i64(it->bucket), json_string(lp_text_iter_kind_key(it->kind)),
                             json_string(lp_text_iter_source_key(it->source))};
        for (size_t c = 0; c < N_COLS; c++)
            json_array_append_new(a[c], v[c]);
    }
    for (size_t c = 0; c < N_COLS; c++)
        json_object_set_new(o, cols[c], a[c]);
    return o;
}

/* a serving loop's iterations and requests (serving.c); the caller adds it only when one was
 * found, so that every other report.json stays as it was */
static json_t *serving_json(const struct lp_run *r)
{
    const struct lp_serving *s = &r->serving;
    char why[256];
    lp_text_serving_cause(s, why, sizeof why);
    json_t *kinds = json_object();
    for (int k = 0; k < LP_ITER_KIND_COUNT; k++) {
        const struct lp_iter_class *c = &s->cls[k];
        json_object_set_new(kinds, lp_text_iter_kind_key((enum lp_iter_kind)k),
                            json_pack("{s:I,s:o,s:o,s:o,s:o,s:o}", "n", (json_int_t)c->n, "time",
                                      dist_json(&c->time), "tokens", i64(c->tokens), "decode",
                                      i64(c->decode), "prefill_tokens", i64(c->prefill_tokens),
                                      "sampled", i64(c->sampled)));
    }
    json_t *batches = json_array();
    for (size_t i = 0; i < s->n_batches; i++) {
        const struct lp_batch_row *b = &s->batches[i];
        json_array_append_new(
            batches, json_pack("{s:o,s:o,s:I,s:I,s:o,s:o,s:o,s:o,s:o}", "lo", i64(b->lo), "hi",
                               i64(b->hi), "decode_n", (json_int_t)b->n_decode, "mixed_n",
                               (json_int_t)b->n_mixed, "decode_p50_ns", or_null(b->decode_p50_ns),
                               "decode_p90_ns", or_null(b->decode_p90_ns), "mixed_p50_ns",
                               or_null(b->mixed_p50_ns), "mixed_p90_ns", or_null(b->mixed_p90_ns),
                               "mixed_prefill_mean",
                               b->n_mixed ? num(b->mixed_prefill_mean) : json_null()));
    }
    json_t *buckets = json_array();
    for (size_t i = 0; i < s->n_buckets; i++)
        json_array_append_new(buckets, json_pack("{s:o,s:I,s:o,s:o,s:o}", "bucket",
                                                 i64(s->buckets[i].bucket), "n",
                                                 (json_int_t)s->buckets[i].n, "sampled",
                                                 i64(s->buckets[i].sampled), "mean_sampled",
                                                 num(s->buckets[i].mean_sampled),
                                                 "padding_share",
                                                 num(s->buckets[i].padding_share)));
    json_t *o = json_object();
    json_object_set_new(o, "cause", json_string(lp_text_serving_cause_key(s->cause)));
    json_object_set_new(o, "cause_value", json_pack("[o,o,o]", i64(s->cause_value[0]),
                                                    i64(s->cause_value[1]),
                                                    i64(s->cause_value[2])));
    json_object_set_new(o, "cause_text", json_string(why));
    json_object_set_new(o, "iterations", json_integer((json_int_t)s->n_iters));
    json_object_set_new(o, "anchors_outside", json_integer((json_int_t)s->anchors_outside));
    json_object_set_new(o, "kinds", kinds);
    json_object_set_new(o, "period", dist_json(&s->period));
    json_object_set_new(o, "itl", dist_json(&s->itl));
    json_object_set_new(o, "itl_inferred", json_integer((json_int_t)s->itl_inferred));
    json_object_set_new(o, "generated", i64(s->generated));
    json_object_set_new(o, "prefill_tokens", i64(s->prefill_tokens));
    json_object_set_new(o, "span_ns", u64(s->span_ns));
    json_object_set_new(o, "generated_per_s", num(s->generated_per_s));
    json_object_set_new(o, "prefill_per_s", num(s->prefill_per_s));
    json_object_set_new(o, "sched_gap_ns", u64(s->sched_gap_ns));
    json_object_set_new(o, "sched_period_ns", u64(s->sched_period_ns));
    json_object_set_new(o, "sched_share", num(s->sched_share));
    json_object_set_new(o, "sched_busy_ns", u64(s->sched_busy_ns));
    json_object_set_new(o, "decode_busy_share", num(s->decode_busy_share));
    json_object_set_new(o, "batches", batches);
    json_object_set_new(o, "interference", or_null(s->interference));
    json_object_set_new(o, "interference_rows", json_integer((json_int_t)s->interference_rows));
    json_object_set_new(o, "buckets", buckets);
    json_object_set_new(o, "padding_share", num(s->padding_share));
    json_object_set_new(o, "requests", serving_requests(s));
    json_object_set_new(o, "iterations_list", serving_iterations(s));
    return o;
}

/* Times are whole nanoseconds: a real under a key ending in _ns, or directly in an object or
 * array (of arrays) under one, becomes the nearest integer, so no reader meets 1.14244e+09
 * ns. NS: V sits under such a key. */
static void ns_integers(json_t *v, int ns)
{
    if (json_is_object(v)) {
        const char *key;
        json_t *x;
        json_object_foreach(v, key, x)
        {
            size_t l = strlen(key);
            int under = l >= 3 && !strcmp(key + l - 3, "_ns");
            if ((under || ns) && json_is_real(x))
                json_object_set_new(v, key, json_integer(ns_round(json_real_value(x))));
            else
                ns_integers(x, under);
        }
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *x = json_array_get(v, i);
            if (ns && json_is_real(x))
                json_array_set_new(v, i, json_integer(ns_round(json_real_value(x))));
            else
                ns_integers(x, ns && json_is_array(x));
        }
    }
}

json_t *lp_report_run_json_value(const struct lp_run *r)
{
    const struct lp_run_options *op = &r->opt;
    json_t *root = json_pack("{s:s,s:s}", "schema", LP_REPORT_SCHEMA, "llmprof_version",
                             LLMPROF_VERSION);
    json_object_set_new(root, "trace", trace_json(r->trace, r));
    json_object_set_new(root, "options",
                        json_pack("{s:I,s:o,s:b,s:I,s:I,s:I}", "top_k", (json_int_t)op->top_k,
                                  "gap_threshold_ns", u64(op->gap_ns), "keep_warmup",
                                  op->keep_warmup, "prefill_tokens",
                                  (json_int_t)op->prefill_tokens, "decode_tokens",
                                  (json_int_t)op->decode_tokens, "batch", (json_int_t)op->batch));
    json_object_set_new(root, "capture", capture_json(r));
    json_object_set_new(root, "llm", llm_json(r));
    if (r->serving.cause != LP_SERVING_CAUSE_NONE) /* absent otherwise: reports stay as they were */
        json_object_set_new(root, "serving", serving_json(r));
    json_object_set_new(root, "warmup_found", warmup_json(r));
    json_object_set_new(root, "utilisation", util_json(r));
    json_t *stages = json_array();
    for (size_t i = 0; i < r->n_stages; i++)
        json_array_append_new(stages, stage_json(r, &r->stages[i]));
    json_object_set_new(root, "stages", stages);
    json_object_set_new(root, "communication",
                        r->kernels_recorded
                            ? json_pack("{s:I,s:o,s:o,s:o}", "kernels",
                                        (json_int_t)r->comm_kernels, "gpu_ns", u64(r->comm_ns),
                                        "overlap_ns", u64(r->comm_overlap_ns), "overlap_share",
                                        num(r->comm_overlap_share))
                            : json_null());
    json_object_set_new(root, "cupti_overhead", overhead_json(r));
    json_object_set_new(root, "attribution",
                        json_pack("{s:I,s:I,s:I,s:o}", "by_launch",
                                  (json_int_t)r->kernels_by_launch, "by_time",
                                  (json_int_t)r->kernels_by_time, "outside_stages",
                                  (json_int_t)r->kernels_outside, "operator_ranges",
                                  u64(r->op_ranges)));
    json_object_set_new(root, "counters", run_counters(r));
    json_object_set_new(root, "pm", run_pm(r));
    json_object_set_new(root, "gemms", gemms_json(r));
    json_object_set_new(root, "graphs", graphs_json(r));
    json_object_set_new(root, "kernels", kernel_table(r, &r->kernels, r->kernels.n));
    json_object_set_new(root, "deep", deep_json(r));
    json_object_set_new(root, "operators", operators_json(r));
    json_object_set_new(root, "timeline", timeline(r));
    json_object_set_new(root, "power", power(r));
    json_object_set_new(root, "cost_centres", centres_json(r));
    json_object_set_new(root, "cost_centres_base_ns", u64(r->measured_gpu_ns));
    json_t *spans = json_array();
    for (size_t i = 0; i < r->n_spans; i++)
        json_array_append_new(spans, json_pack("[o,o,s]", u64(r->spans[i].start),
                                               u64(r->spans[i].end),
                                               r->stages[r->spans[i].stage].name));
    json_object_set_new(root, "stage_spans", spans);
    json_object_set_new(root, "findings", findings_json(r));
    json_t *notes = json_array(), *codes = json_array();
    for (size_t i = 0; i < r->n_notes; i++) {
        char text[1024];
        lp_text_note(r, &r->notes[i], text, sizeof text);
        json_array_append_new(notes, json_string(text));
        json_array_append_new(codes, json_string(lp_text_note_key(r->notes[i].code)));
    }
    json_object_set_new(root, "notes", notes);
    json_object_set_new(root, "note_codes", codes);
    ns_integers(root, 0);
    return root;
}

int lp_report_run_json(FILE *out, const struct lp_run *r)
{
    json_t *root = lp_report_run_json_value(r);
    if (!root)
        return -1;
    int rc = json_dumpf(root, out, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
    json_decref(root);
    if (rc == 0 && fputc('\n', out) == EOF)
        rc = -1;
    return rc ? -1 : 0;
}
