/* GEMMs: the cuBLAS calls per stage, GEMM kernels without a shape, MoE experts and the table
 * of shapes; report.json's "gemms" and gemms.csv (every shape listed: the costliest
 * LP_GEMM_ROWS_MAX, the others counted). */
#include <stdio.h>
#include "section.h"

static const char *const trans_names = "NTC";

static void gemm_stages(FILE *f, const struct lp_run *r)
{
    char b1[32], b2[32];
    fprintf(f, "| stage | GEMM calls | GEMM GPU time | without shapes | with shapes | GEMM "
               "TFLOP/s | measured MFU (GEMMs) | analytic MFU | measured / analytic matmul "
               "FLOPs | measured / analytic linear FLOPs |\n"
               "|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        if (!s->gemm_calls && !s->gemm_unshaped_ns)
            continue;
        fprintf(f, "| ");
        lp_md_cell(f, s->name);
        fprintf(f, " | %llu | %s | ", (unsigned long long)s->gemm_calls, NS(s->gemm_ns));
        fprintf(f, "%s | %s | %.1f | ", NS2(s->gemm_unshaped_ns),
                s->gemm_coverage >= 0 ? lp_fmt_pct(s->gemm_coverage, b1, sizeof b1) : "-",
                s->gemm_tflops);
        if (s->gemm_mfu > 0)
            fprintf(f, "%.2f %%%s | ", 100 * s->gemm_mfu, s->gemm_partial ? " (part)" : "");
        else
            fprintf(f, "- | ");
        if (s->has_util && s->gemm_calls)
            fprintf(f, "%.2f %% | %.3f | %.3f |\n", 100 * s->mfu, s->gemm_vs_model,
                    s->gemm_vs_linear);
        else if (s->has_util)
            fprintf(f, "%.2f %% | - | - |\n", 100 * s->mfu);
        else
            fprintf(f, "- | - | - |\n");
    }
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        if (s->gemm_context_flops > 0 && s->gemm_vs_model > 0) {
            fprintf(f, "\n");
            lp_fmt_puts(f, s->name);
            fprintf(f, ": %.0f %% of the measured GEMM FLOPs are calls over the whole context "
                       "every step (in the table below, the rows whose size steps), which the "
                       "model counts once per token; without them measured / analytic matmul "
                       "FLOPs is %.3f.\n",
                    100 * s->gemm_context_flops / s->gemm_flops, s->gemm_vs_model_rest);
        }
    }
}

/* MoE experts: grouped GEMM kernels per stage */
static void moe_gemms(FILE *f, const struct lp_run *r)
{
    char b1[32], b3[32];
    int any = 0;
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        if (!s->moe_gemm_kernels || s->kind == LP_STAGE_KIND_WARMUP)
            continue;
        if (!any++)
            fprintf(f, "\nMoE expert GEMMs per stage (measured: grouped GEMM kernels by "
                       "name, and with --model the batched cuBLAS calls of the experts' "
                       "shapes), and their share of the stage's GPU time:\n");
        fprintf(f, "\n- ");
        lp_fmt_puts(f, s->name);
        fprintf(f, ": %s in %zu kernels, %s", NS(s->moe_gemm_ns), s->moe_gemm_kernels,
                PCT(s->moe_gemm_share));
    }
    if (any)
        fprintf(f, "\n");
}

static void unshaped(FILE *f, const struct lp_run *r)
{
    char b1[32], b3[32];
    if (!r->gemm.n_unshaped)
        return;
    fprintf(f, "\nGEMM kernels without a recorded shape (by name: CUTLASS and grouped GEMMs, "
               "Triton, FlashInfer, DeepGEMM, or cuBLAS kernels replayed from a CUDA graph), "
               "%s in all outside warm-up; their FLOPs are not in the measured figures. %% "
               "stage GEMM: of the stage's GEMM-kernel time.\n\n"
               "| stage | kernel | calls | GPU time | %% stage GEMM |\n|---|---|---|---|---|\n",
            NS(r->gemm.unshaped_ns));
    size_t n = r->gemm.n_unshaped < 10 ? r->gemm.n_unshaped : 10;
    for (size_t i = 0; i < n; i++) {
        const struct lp_unshaped_gemm *u = &r->gemm.unshaped[i];
        const struct lp_stage_report *s = &r->stages[u->stage];
        fprintf(f, "| ");
        lp_md_cell(f, s->name);
        fprintf(f, " | ");
        lp_md_code_cell(f, r->short_names[u->group]);
        fprintf(f, " | %llu | %s | %s |\n", (unsigned long long)u->calls, NS(u->gpu_ns),
                PCT(u->stage_share));
    }
    if (r->gemm.n_unshaped > n)
        fprintf(f, "\n%zu more in report.json.\n", r->gemm.n_unshaped - n);
    moe_gemms(f, r);
}

static void gemms_md(FILE *f, const struct lp_run *r)
{
    char b1[32], b2[32];
    fprintf(f, "\n## GEMMs\n\n");
    if (!r->gemm.calls) {
        fprintf(f, "No cuBLAS GEMM call was recorded (capture: ");
        lp_fmt_puts(f, lp_text_gemm_state(r));
        fprintf(f, ").\n");
        if (r->gemm.unshaped_ns) {
            fprintf(f, "\n");
            gemm_stages(f, r);
            unshaped(f, r);
        }
        return;
    }
    fprintf(f, "Measured: every cuBLAS and cuBLASLt GEMM call (capture: ");
    lp_fmt_puts(f, lp_text_gemm_state(r));
    fprintf(f, "), %llu calls, %llu tied to the kernels they launched, %llu failed. Shapes are "
               "as cuBLAS sees them (column-major, D[m x n] = op(A)[m x k] op(B)[k x n]): for "
               "PyTorch's y = x W^T, m is out_features and n the tokens. FLOPs are 2 m n k "
               "batch of the recorded shape; time is the GPU time of the call's kernels; the "
               "peak is the dense peak of the inputs' dtype (TF32 when fp32 runs on tensor "
               "cores) on ",
            (unsigned long long)r->gemm.calls, (unsigned long long)r->gemm.linked,
            (unsigned long long)r->gemm.failed);
    lp_fmt_puts(f, r->util.gpu.name[0] ? r->util.gpu.name : "the recorded GPU");
    fprintf(f, ". With shapes: the share of the stage's GEMM-kernel time whose calls were "
               "recorded; the rest (without shapes) has no FLOPs, so measured MFU (GEMMs) "
               "marked (part) covers only that share. Measured MFU (GEMMs) is GEMM FLOPs over "
               "the stage's time at the %s peak, beside the analytic MFU; linear FLOPs leave "
               "out attention scores (QK^T, PV), which attention kernels compute outside "
               "cuBLAS.\n\n",
            lp_dtype_name(r->util.dtype));
    gemm_stages(f, r);
    unshaped(f, r);
    size_t top = r->gemm.n_rows < r->opt.top_k ? r->gemm.n_rows : r->opt.top_k;
    fprintf(f, "\n| # | stage | m x n x k | batch | op | A/B -> D (compute) | calls | total | "
               "mean | TFLOP/s | %% of peak | algo / tile | kernel | hints |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < top; i++) {
        const struct lp_gemm_row *g = &r->gemm.rows[i];
        const struct lp_gemm *c = &g->call;
        char dm[48], dn[48]; /* a size stepping through a progression: its range */
        snprintf(dm, sizeof dm, g->vary_dim == 'm' ? "%llu..%llu" : "%llu",
                 (unsigned long long)c->m, (unsigned long long)g->vary_hi);
        snprintf(dn, sizeof dn, g->vary_dim == 'n' ? "%llu..%llu" : "%llu",
                 (unsigned long long)c->n, (unsigned long long)g->vary_hi);
        fprintf(f, "| %zu | ", i + 1);
        lp_md_cell(f, g->stage >= 0 ? r->stages[g->stage].name : "-");
        fprintf(f, "%s | %s x %s x %llu | %llu | %c%c | %s/%s -> %s (%s) | %llu | %s | %s "
                   "| %.1f | ",
                g->replayed ? " (replayed)" : "", dm, dn, (unsigned long long)c->k,
                (unsigned long long)c->batch, trans_names[c->transa % 3],
                trans_names[c->transb % 3],
                lp_cuda_type_name(c->a_type), lp_cuda_type_name(c->b_type),
                lp_cuda_type_name(c->d_type), lp_compute_type_name(c->compute_type),
                (unsigned long long)g->calls, NS(g->gpu_ns), NS2(g->mean_ns), g->tflops);
        if (g->peak_share >= 0)
            fprintf(f, "%.1f %% | ", 100 * g->peak_share);
        else
            fprintf(f, "- | ");
        if (c->algo >= 0) {
            char cut[LP_NAME_CUT + 4];
            fprintf(f, "%d / ", c->algo);
            lp_md_cell(f, lp_fmt_cut(lp_trace_str(r->trace, c->tile), &cut));
            fprintf(f, " | ");
        } else {
            fprintf(f, "- | ");
        }
        lp_md_code_cell(f, g->top_group != SIZE_MAX ? r->short_names[g->top_group] : "-");
        fprintf(f, " | ");
        char hint[512];
        lp_text_gemm_hint(g, hint, sizeof hint);
        lp_md_cell(f, hint);
        fprintf(f, " |\n");
    }
    if (r->gemm.n_rows > top)
        fprintf(f, "\n%zu more shapes in gemms.csv.\n", r->gemm.n_rows - top);
    const struct lp_gemm_unlisted *u = &r->gemm.unlisted;
    if (u->shapes)
        fprintf(f, "\n%zu shape%s more, of %llu call%s and %s of GPU time (%s of the table's), "
                   "%s counted in the figures above but listed nowhere: the table keeps the "
                   "%d costliest.\n",
                u->shapes, u->shapes == 1 ? "" : "s", (unsigned long long)u->calls,
                u->calls == 1 ? "" : "s", NS(u->gpu_ns), lp_fmt_pct(u->share, b2, sizeof b2),
                u->shapes == 1 ? "is" : "are", LP_GEMM_ROWS_MAX);
    if (r->gemm.warmup_calls)
        fprintf(f, "\n%llu calls ran in warm-up: counted above, not in this table.\n",
                (unsigned long long)r->gemm.warmup_calls);
    if (r->gemm.captured && !r->gemm.replayed && r->replays_whole)
        fprintf(f, "\n%llu calls were captured into CUDA graphs. Their replays ran inside graph "
                   "replays recorded whole, which name no kernel or call: they are not counted "
                   "above (record --graphs node counts them).\n",
                (unsigned long long)r->gemm.captured);
    else if (r->gemm.captured)
        fprintf(f, "\n%llu calls were captured into CUDA graphs; each replay of one counts as a "
                   "call above, marked (replayed): %llu in all.\n",
                (unsigned long long)r->gemm.captured, (unsigned long long)r->gemm.replayed);
}

static json_t *gemms_json(const struct lp_run *r)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < r->gemm.n_rows; i++) {
        const struct lp_gemm_row *g = &r->gemm.rows[i];
        const struct lp_gemm *c = &g->call;
        char hint[512], api[LP_NAME_CUT + 4], tile[LP_NAME_CUT + 4];
        lp_text_gemm_hint(g, hint, sizeof hint);
        json_t *o = json_pack(
            "{s:s,s:s,s:o,s:o,s:o,s:o,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:s,s:I,s:o,s:o,s:o}",
            "stage", g->stage >= 0 ? r->stages[g->stage].name : "", "api",
            lp_fmt_cut(lp_trace_str(r->trace, c->api), &api), "m", lp_json_u64(c->m), "n",
            lp_json_u64(c->n), "k",
            lp_json_u64(c->k), "batch", lp_json_u64(c->batch), "transa",
            c->transa == 0 ? "N" : c->transa == 1 ? "T" : "C", "transb",
            c->transb == 0 ? "N" : c->transb == 1 ? "T" : "C", "a_type",
            lp_cuda_type_name(c->a_type), "b_type", lp_cuda_type_name(c->b_type), "d_type",
            lp_cuda_type_name(c->d_type), "compute_type", lp_compute_type_name(c->compute_type),
            "tile", lp_fmt_cut(lp_trace_str(r->trace, c->tile), &tile), "algo", c->algo, "hint",
            hint, "epilogue",
            (json_int_t)c->epilogue, "calls", lp_json_u64(g->calls), "linked",
            lp_json_u64(g->linked), "kernels", lp_json_u64(g->kernels));
        json_t *codes = json_array();
        for (int b = 0; lp_text_gemm_hint_key(b); b++)
            if (g->hints & 1u << b)
                json_array_append_new(codes, json_string(lp_text_gemm_hint_key(b)));
        json_object_set_new(o, "hint_codes", codes);
        static const char *const vary_keys[] = {[LP_GEMM_VARY_STEPS] = "steps",
                                                [LP_GEMM_VARY_CONTEXT] = "context",
                                                [LP_GEMM_VARY_MLA] = "mla_kv_expansion"};
        json_object_set_new(
            o, "sizes",
            g->vary_dim ? json_pack("{s:s#,s:o,s:o,s:o,s:o,s:s}", "dim", &g->vary_dim, (size_t)1,
                                    "from", lp_json_u64(g->vary_lo), "to", lp_json_u64(g->vary_hi),
                                    "step", lp_json_u64(g->vary_step), "count",
                                    lp_json_u64(g->vary_values), "cause", vary_keys[g->vary])
                        : json_null());
        json_object_set_new(o, "replayed", json_boolean(g->replayed));
        json_object_set_new(o, "gpu_ns", lp_json_u64(g->gpu_ns));
        json_object_set_new(o, "mean_ns", lp_json_num(g->mean_ns));
        json_object_set_new(o, "flops_per_call", lp_json_num(g->flops_per_call));
        json_object_set_new(o, "tflops", lp_json_num(g->tflops));
        json_object_set_new(o, "peak_dtype",
                            g->peak_dtype >= 0 ? json_string(lp_dtype_name(g->peak_dtype))
                                               : json_null());
        json_object_set_new(o, "peak_share",
                            g->peak_share >= 0 ? lp_json_num(g->peak_share) : json_null());
        json_object_set_new(o, "intensity", lp_json_num(g->intensity));
        json_object_set_new(o, "memory_bound", json_boolean(g->memory_bound));
        json_object_set_new(o, "gbs", lp_json_num(g->gbs));
        json_object_set_new(o, "top_kernel",
                            g->top_group != SIZE_MAX ? json_string(r->names[g->top_group])
                                                     : json_null());
        json_array_append_new(rows, o);
    }
    json_t *un = json_array();
    for (size_t i = 0; i < r->gemm.n_unshaped; i++) {
        const struct lp_unshaped_gemm *u = &r->gemm.unshaped[i];
        json_array_append_new(un, json_pack("{s:s,s:s,s:s,s:o,s:o,s:o}", "stage",
                                            r->stages[u->stage].name, "kernel", r->names[u->group],
                                            "short_name", r->short_names[u->group], "calls",
                                            lp_json_u64(u->calls), "gpu_ns", lp_json_u64(u->gpu_ns),
                                            "stage_share", lp_json_num(u->stage_share)));
    }
    json_t *o =
        json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:b,s:o,s:o}", "capture", lp_text_gemm_state(r),
                  "calls", lp_json_u64(r->gemm.calls), "linked", lp_json_u64(r->gemm.linked),
                  "failed", lp_json_u64(r->gemm.failed), "gpu_ns", lp_json_u64(r->gemm.ns), "flops",
                  lp_json_num(r->gemm.flops), "stages_inferred", r->stages_inferred, "warmup_calls",
                  lp_json_u64(r->gemm.warmup_calls), "shapes", rows);
    json_object_set_new(o, "unshaped_ns", lp_json_u64(r->gemm.unshaped_ns));
    json_object_set_new(o, "unshaped", un);
    json_object_set_new(o, "captured_calls", lp_json_u64(r->gemm.captured));
    json_object_set_new(o, "replayed_calls", lp_json_u64(r->gemm.replayed));
    const struct lp_gemm_unlisted *u = &r->gemm.unlisted;
    json_object_set_new(o, "unlisted",
                        u->shapes ? json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "shapes",
                                              lp_json_u64(u->shapes), "calls",
                                              lp_json_u64(u->calls), "linked",
                                              lp_json_u64(u->linked), "kernels",
                                              lp_json_u64(u->kernels), "gpu_ns",
                                              lp_json_u64(u->gpu_ns), "flops",
                                              lp_json_num(u->flops), "gpu_share",
                                              u->share >= 0 ? lp_json_num(u->share)
                                                            : json_null())
                                  : json_null());
    return o;
}

int lp_report_gemms_csv(FILE *f, const struct lp_run *r)
{
    fprintf(
        f,
        "stage,replayed,api,m,n,k,batch,transa,transb,a_type,b_type,d_type,compute_type,epilogue,"
        "algo,tile,calls,linked,kernels,gpu_ns,mean_ns,flops_per_call,tflops,peak_dtype,"
        "peak_share,intensity,memory_bound,gbs,top_kernel,hint,vary_dim,vary_to,"
        "vary_step,vary_sizes\n");
    for (size_t i = 0; i < r->gemm.n_rows; i++) {
        const struct lp_gemm_row *g = &r->gemm.rows[i];
        const struct lp_gemm *c = &g->call;
        lp_csv_field(f, g->stage >= 0 ? r->stages[g->stage].name : "");
        fprintf(f, ",%d,", g->replayed);
        char cut[LP_NAME_CUT + 4];
        lp_csv_field(f, lp_fmt_cut(lp_trace_str(r->trace, c->api), &cut));
        fprintf(f, ",%llu,%llu,%llu,%llu,%c,%c,%s,%s,%s,%s,%u,%d,", (unsigned long long)c->m,
                (unsigned long long)c->n, (unsigned long long)c->k, (unsigned long long)c->batch,
                "NTC"[c->transa % 3], "NTC"[c->transb % 3], lp_cuda_type_name(c->a_type),
                lp_cuda_type_name(c->b_type), lp_cuda_type_name(c->d_type),
                lp_compute_type_name(c->compute_type), c->epilogue, c->algo);
        lp_csv_field(f, lp_fmt_cut(lp_trace_str(r->trace, c->tile), &cut));
        fprintf(f, ",%llu,%llu,%llu,%llu,%.1f,%.6g,%.3f,%s,", (unsigned long long)g->calls,
                (unsigned long long)g->linked, (unsigned long long)g->kernels,
                (unsigned long long)g->gpu_ns, g->mean_ns, g->flops_per_call, g->tflops,
                g->peak_dtype >= 0 ? lp_dtype_name(g->peak_dtype) : "");
        if (g->peak_share >= 0)
            fprintf(f, "%.5f", g->peak_share);
        fprintf(f, ",%.2f,%d,%.1f,", g->intensity, g->memory_bound, g->gbs);
        lp_csv_field(f, g->top_group != SIZE_MAX ? r->names[g->top_group] : "");
        fputc(',', f);
        char hint[512];
        lp_text_gemm_hint(g, hint, sizeof hint);
        lp_csv_field(f, hint);
        if (g->vary_dim) /* m or n above is the smallest size */
            fprintf(f, ",%c,%llu,%llu,%zu\n", g->vary_dim, (unsigned long long)g->vary_hi,
                    (unsigned long long)g->vary_step, g->vary_values);
        else
            fprintf(f, ",,,,\n");
    }
    return ferror(f) ? -1 : 0;
}

static const struct lp_section_key keys[] = {
    {"gemms", gemms_json},
    {NULL, NULL},
};

const struct lp_section lp_section_gemms = {
    .name = "gemms",
    .md = gemms_md,
    .json = keys,
    .csv = {"gemms.csv", lp_report_gemms_csv, NULL},
};
