/* Two runs compared (llmprof diff): diff.md for people, diff.json (schema llmprof-diff/1,
 * docs/report-schema.md) for scripts, and the gate's lines. Says what lp_diff_build and
 * lp_diff_gate found, in the units each figure is in; computes nothing. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llmprof/report.h"
#include "llmprof/version.h"
#include "report_internal.h"

#define LP_DIFF_SCHEMA "llmprof-diff/1"
#define MD_ROWS 20 /* kernels, GEMMs and operators shown per stage in diff.md */

/* What a figure counts, for printing it. */
enum unit { UNIT_NS, UNIT_SHARE, UNIT_TOKENS_S, UNIT_J, UNIT_COUNT, UNIT_TFLOPS };

static const char *quantile_names[LP_DIFF_QUANTILES] = {"p50", "p90", "p99"};

static const char *run_label(const struct lp_diff *d, int x)
{
    return d->label[x] ? d->label[x] : x ? "B" : "A";
}

static const char *fmt(double v, enum unit u, char *buf, size_t len)
{
    if (isnan(v)) {
        snprintf(buf, len, "-");
        return buf;
    }
    switch (u) {
    case UNIT_NS: return lp_fmt_ns(v, buf, len);
    case UNIT_SHARE: snprintf(buf, len, "%.1f %%", 100 * v); break;
    case UNIT_TOKENS_S: snprintf(buf, len, "%.1f tok/s", v); break;
    case UNIT_J: snprintf(buf, len, v < 1 ? "%.2f mJ" : "%.3f J", v < 1 ? 1000 * v : v); break;
    case UNIT_COUNT: snprintf(buf, len, v == floor(v) ? "%.0f" : "%.2f", v); break;
    case UNIT_TFLOPS: snprintf(buf, len, "%.1f TFLOP/s", v); break;
    }
    return buf;
}

/* "+3.2 % (+1.1 … +5.0 %)", "+3.2 %", "-" */
static const char *change_text(const struct lp_diff_value *v, char *buf, size_t len)
{
    if (isnan(v->change))
        snprintf(buf, len, "-");
    else if (!isnan(v->lo))
        snprintf(buf, len, "%+.1f %% (%+.1f … %+.1f %%)", 100 * v->change, 100 * v->lo,
                 100 * v->hi);
    else
        snprintf(buf, len, "%+.1f %%", 100 * v->change);
    return buf;
}

/* "no change", "higher (worse)", "lower (better), one value per run", "higher" ... */
static const char *verdict_text(const struct lp_diff_value *v, char *buf, size_t len)
{
    const char *judged = v->worse > 0 ? " (worse)" : v->worse < 0 ? " (better)" : "";
    const char *how = (v->verdict == LP_DIFF_VERDICT_HIGHER || v->verdict == LP_DIFF_VERDICT_LOWER) &&
                              v->basis == LP_DIFF_BASIS_SINGLE
                          ? ", one value per run"
                          : "";
    snprintf(buf, len, "%s%s%s", lp_text_diff_verdict(v->verdict), judged, how);
    return buf;
}

static void md_row(FILE *f, const char *what, const struct lp_diff_value *v, enum unit u)
{
    char a[48], b[48], c[96], w[64];
    fprintf(f, "| %s | %s | %s | %s | %s |\n", what, fmt(v->a, u, a, sizeof a),
            fmt(v->b, u, b, sizeof b), change_text(v, c, sizeof c), verdict_text(v, w, sizeof w));
}

/* "| A | B" as header cells: the runs' labels */
static void md_labels(FILE *f, const struct lp_diff *d)
{
    for (int x = 0; x < 2; x++) {
        fprintf(f, " | ");
        lp_md_cell(f, run_label(d, x));
    }
}

/* " → B" after A's label, in a header cell: "calls A → B" */
static void md_label_pair(FILE *f, const struct lp_diff *d, const char *what)
{
    fprintf(f, " | %s ", what);
    lp_md_cell(f, run_label(d, 0));
    fprintf(f, " → ");
    lp_md_cell(f, run_label(d, 1));
}

static void md_table_head(FILE *f, const struct lp_diff *d, const char *first)
{
    fprintf(f, "| %s", first);
    md_labels(f, d);
    fprintf(f, " | change (95 %% interval) | verdict |\n|---|---:|---:|---:|---|\n");
}

static void md_warnings(FILE *f, const struct lp_diff *d)
{
    for (int bit = 0; bit < LP_DIFF_WARN_BITS; bit++) {
        if (!(d->warnings & (1u << bit)))
            continue;
        fprintf(f, "> **Warning:** %s", lp_text_diff_warning(bit));
        if (bit == 0)
            for (int x = 0; x < 2; x++) {
                fprintf(f, "%s", x ? "; " : " (");
                lp_fmt_puts(f, run_label(d, x));
                fprintf(f, ": ");
                lp_fmt_puts(f, d->gpu[x] ? d->gpu[x] : "?");
                fprintf(f, "%s", x ? ")" : "");
            }
        if (1u << bit == LP_DIFF_WARN_SHAPES)
            fprintf(f, " (%.0f %% shared)", 100 * d->shapes_shared);
        fprintf(f, ".\n\n");
    }
}

/* The unit of the figure a rule names, as fmt takes it. */
static enum unit rule_unit(const struct lp_diff_rule *r)
{
    switch (lp_diff_rule_unit(r)) {
    case LP_DIFF_UNIT_SHARE: return UNIT_SHARE;
    case LP_DIFF_UNIT_TOKENS_S: return UNIT_TOKENS_S;
    case LP_DIFF_UNIT_J: return UNIT_J;
    case LP_DIFF_UNIT_COUNT: return UNIT_COUNT;
    case LP_DIFF_UNIT_NS: break;
    }
    return UNIT_NS;
}

static void md_gate(FILE *f, const struct lp_diff *d)
{
    if (!d->n_checks)
        return;
    fprintf(f, "## Gate\n\n%zu of %zu rules failed.\n\n| rule", d->failed, d->n_checks);
    md_labels(f, d);
    fprintf(f, " | change (95 %% interval) | result |\n|---|---:|---:|---:|---|\n");
    for (size_t i = 0; i < d->n_checks; i++) {
        const struct lp_diff_check *c = &d->checks[i];
        const struct lp_diff_value *v = c->value;
        char a[48], b[48], ch[96];
        fprintf(f, "| ");
        lp_md_code_cell(f, c->rule.text ? c->rule.text : "");
        enum unit u = rule_unit(&c->rule);
        fprintf(f, " | %s | %s | %s | %s |\n", v ? fmt(v->a, u, a, sizeof a) : "-",
                v ? fmt(v->b, u, b, sizeof b) : "-",
                v ? change_text(v, ch, sizeof ch) : "-", lp_text_diff_result(c->result));
    }
    fprintf(f, "\n");
}

static const char *stage_unit(const struct lp_diff_stage *s)
{
    return s->per_step ? "step" : "occurrence";
}

static void md_stage(FILE *f, const struct lp_diff *d, const struct lp_diff_stage *s)
{
    char what[96];
    fprintf(f, "### ");
    lp_fmt_puts(f, s->name);
    if (s->a < 0 || s->b < 0) {
        fprintf(f, " (only in ");
        lp_fmt_puts(f, run_label(d, s->a < 0));
        fprintf(f, ")");
    }
    fprintf(f, "\n\n");
    char ua[32], ub[32];
    fprintf(f, "Per %s: ", stage_unit(s));
    lp_fmt_puts(f, run_label(d, 0));
    fprintf(f, " %s, ", fmt(s->units_a, UNIT_COUNT, ua, sizeof ua));
    lp_fmt_puts(f, run_label(d, 1));
    fprintf(f, " %s. Kernels: %zu added, %zu removed, %zu changed.\n\n",
            fmt(s->units_b, UNIT_COUNT, ub, sizeof ub), s->kernels_added, s->kernels_removed,
            s->kernels_changed);
    md_table_head(f, d, "figure");
    md_row(f, "wall per occurrence (mean)", &s->wall, UNIT_NS);
    for (int q = 0; q < LP_DIFF_QUANTILES; q++) {
        if (s->step[q].verdict == LP_DIFF_VERDICT_MISSING && isnan(s->step[q].a) &&
            isnan(s->step[q].b))
            continue;
        snprintf(what, sizeof what, "step %s", quantile_names[q]);
        md_row(f, what, &s->step[q], UNIT_NS);
    }
    md_row(f, "tokens/s", &s->tokens_s, UNIT_TOKENS_S);
    md_row(f, "MFU", &s->mfu, UNIT_SHARE);
    md_row(f, "MBU", &s->mbu, UNIT_SHARE);
    md_row(f, "energy per token", &s->j_per_token, UNIT_J);
    md_row(f, "GPU busy", &s->busy_share, UNIT_SHARE);
    snprintf(what, sizeof what, "kernels per %s", stage_unit(s));
    md_row(f, what, &s->kernels, UNIT_COUNT);
    snprintf(what, sizeof what, "GPU time per %s", stage_unit(s));
    md_row(f, what, &s->gpu_ns, UNIT_NS);
    fprintf(f, "\n");
}

static void md_kernels(FILE *f, const struct lp_diff *d, size_t stage)
{
    size_t shown = 0, hidden = 0;
    for (size_t i = 0; i < d->n_kernels; i++) {
        const struct lp_diff_kernel *k = &d->kernels[i];
        if (k->stage != stage || k->status == LP_DIFF_STATUS_SAME)
            continue;
        if (shown == MD_ROWS) {
            hidden++;
            continue;
        }
        if (!shown++) {
            fprintf(f, "Kernels that changed in ");
            lp_fmt_puts(f, d->stages[stage].name);
            fprintf(f, ", by the change of their GPU time per %s:\n\n| kernel | status",
                    stage_unit(&d->stages[stage]));
            md_label_pair(f, d, "calls");
            md_label_pair(f, d, "GPU time");
            fprintf(f, " | change (95 %% interval) |\n|---|---|---:|---:|---:|\n");
        }
        char ca[32], cb[32], ta[32], tb[32], ch[96];
        fprintf(f, "| ");
        lp_md_code_cell(f, k->short_name);
        fprintf(f, " | %s | %s → %s | %s → %s | %s |\n", lp_text_diff_status(k->status),
                fmt(k->calls.a, UNIT_COUNT, ca, sizeof ca),
                fmt(k->calls.b, UNIT_COUNT, cb, sizeof cb), fmt(k->gpu_ns.a, UNIT_NS, ta, sizeof ta),
                fmt(k->gpu_ns.b, UNIT_NS, tb, sizeof tb), change_text(&k->gpu_ns, ch, sizeof ch));
    }
    if (hidden)
        fprintf(f, "\n%zu more in diff.json.\n", hidden);
    if (shown)
        fprintf(f, "\n");
}

static void md_gemms(FILE *f, const struct lp_diff *d, size_t stage)
{
    size_t shown = 0, hidden = 0;
    for (size_t i = 0; i < d->n_gemms; i++) {
        const struct lp_diff_gemm *g = &d->gemms[i];
        if (g->stage != stage || g->status == LP_DIFF_STATUS_SAME)
            continue;
        if (shown == MD_ROWS) {
            hidden++;
            continue;
        }
        if (!shown++) {
            fprintf(f, "GEMM shapes that changed in ");
            lp_fmt_puts(f, d->stages[stage].name);
            fprintf(f, ":\n\n| m × n × k (batch) | types | status");
            md_label_pair(f, d, "calls");
            md_label_pair(f, d, "time per call");
            fprintf(f, " | change |\n|---|---|---|---:|---:|---:|\n");
        }
        const struct lp_gemm *c = &g->call;
        char ca[32], cb[32], ta[32], tb[32], ch[96];
        fprintf(f, "| %llu × %llu × %llu (%llu) | %s %s → %s | %s | %s → %s | %s → %s | %s |\n",
                (unsigned long long)c->m, (unsigned long long)c->n, (unsigned long long)c->k,
                (unsigned long long)c->batch, lp_cuda_type_name(c->a_type),
                lp_cuda_type_name(c->b_type), lp_cuda_type_name(c->d_type),
                lp_text_diff_status(g->status), fmt(g->calls.a, UNIT_COUNT, ca, sizeof ca),
                fmt(g->calls.b, UNIT_COUNT, cb, sizeof cb), fmt(g->mean_ns.a, UNIT_NS, ta, sizeof ta),
                fmt(g->mean_ns.b, UNIT_NS, tb, sizeof tb), change_text(&g->mean_ns, ch, sizeof ch));
    }
    if (hidden)
        fprintf(f, "\n%zu more in diff.json.\n", hidden);
    if (shown)
        fprintf(f, "\n");
}

static void md_ops(FILE *f, const struct lp_diff *d)
{
    size_t shown = 0, hidden = 0;
    for (size_t i = 0; i < d->n_ops; i++) {
        const struct lp_diff_op *o = &d->ops[i];
        if (o->status == LP_DIFF_STATUS_SAME)
            continue;
        if (shown == MD_ROWS) {
            hidden++;
            continue;
        }
        if (!shown++) {
            fprintf(f, "## Operators that changed\n\n| operator | status");
            md_label_pair(f, d, "calls");
            md_label_pair(f, d, "GPU time per call");
            fprintf(f, " | change |\n|---|---|---:|---:|---:|\n");
        }
        char ca[32], cb[32], ta[32], tb[32], ch[96];
        fprintf(f, "| ");
        lp_md_code_cell(f, o->name);
        fprintf(f, " | %s | %s → %s | %s → %s | %s |\n", lp_text_diff_status(o->status),
                fmt(o->calls.a, UNIT_COUNT, ca, sizeof ca), fmt(o->calls.b, UNIT_COUNT, cb, sizeof cb),
                fmt(o->mean_ns.a, UNIT_NS, ta, sizeof ta), fmt(o->mean_ns.b, UNIT_NS, tb, sizeof tb),
                change_text(&o->mean_ns, ch, sizeof ch));
    }
    if (hidden)
        fprintf(f, "\n%zu more in diff.json.\n", hidden);
    if (shown)
        fprintf(f, "\n");
}

int lp_report_diff_md(FILE *f, const struct lp_diff *d)
{
    fprintf(f, "# llmprof diff\n\n");
    for (int x = 0; x < 2; x++) {
        fprintf(f, "- **%s**: ", x ? "B" : "A");
        lp_fmt_puts(f, run_label(d, x));
        if (d->gpu[x]) {
            fprintf(f, " on ");
            lp_fmt_puts(f, d->gpu[x]);
        }
        if (d->command[x]) {
            fprintf(f, ": ");
            lp_md_code(f, d->command[x]);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "\nB against A. The interval is the change's 95 %% range from each run's own noise "
               "(per-step and per-request values resampled in blocks, or per-call means and "
               "deviations); a change whose interval holds zero, or under %.1f %%, is no "
               "change. Separate processes differ by more than the noise one run shows: see "
               "docs/diff.md before trusting a small change.\n\n",
            100 * d->opt.min_change);
    md_warnings(f, d);
    md_gate(f, d);
    fprintf(f, "## Latency\n\n");
    md_table_head(f, d, "figure");
    static const char *names[3] = {"TTFT", "TPOT", "ITL"};
    const struct lp_diff_value *dists[3] = {d->ttft, d->tpot, d->itl};
    for (int m = 0; m < 3; m++)
        for (int q = 0; q < LP_DIFF_QUANTILES; q++) {
            char what[32];
            snprintf(what, sizeof what, "%s %s", names[m], quantile_names[q]);
            md_row(f, what, &dists[m][q], UNIT_NS);
        }
    md_row(f, "MFU (request)", &d->mfu, UNIT_SHARE);
    md_row(f, "MBU (request)", &d->mbu, UNIT_SHARE);
    fprintf(f, "\n## Stages\n\n");
    for (size_t s = 0; s < d->n_stages; s++) {
        md_stage(f, d, &d->stages[s]);
        md_kernels(f, d, s);
        md_gemms(f, d, s);
    }
    md_ops(f, d);
    return ferror(f) ? -1 : 0;
}

/* ---- diff.json ---- */

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *value_json(const struct lp_diff_value *v)
{
    return json_pack("{s:o,s:o,s:o,s:o,s:o,s:I,s:I,s:s,s:s,s:i}", "a", num(v->a), "b", num(v->b),
                     "change", num(v->change), "lo", num(v->lo), "hi", num(v->hi), "n_a",
                     (json_int_t)v->n_a, "n_b", (json_int_t)v->n_b, "basis",
                     lp_text_diff_basis_key(v->basis), "verdict",
                     lp_text_diff_verdict_key(v->verdict), "worse", v->worse);
}

static json_t *quantiles_json(const struct lp_diff_value *v)
{
    json_t *o = json_object();
    for (int q = 0; q < LP_DIFF_QUANTILES; q++)
        json_object_set_new(o, quantile_names[q], value_json(&v[q]));
    return o;
}

static json_t *stages_json(const struct lp_diff *d)
{
    json_t *a = json_array();
    for (size_t i = 0; i < d->n_stages; i++) {
        const struct lp_diff_stage *s = &d->stages[i];
        json_array_append_new(
            a, json_pack("{s:s,s:s,s:b,s:b,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:I,"
                         "s:I,s:I}",
                         "name", s->name, "kind", lp_stage_kind_name(s->kind), "in_a", s->a >= 0,
                         "in_b", s->b >= 0, "unit", stage_unit(s), "units_a", num(s->units_a),
                         "units_b", num(s->units_b), "wall", value_json(&s->wall), "step",
                         quantiles_json(s->step), "tokens_s", value_json(&s->tokens_s), "mfu",
                         value_json(&s->mfu), "mbu", value_json(&s->mbu), "j_per_token",
                         value_json(&s->j_per_token), "busy", value_json(&s->busy_share),
                         "kernels", value_json(&s->kernels), "gpu_time",
                         value_json(&s->gpu_ns), "kernels_added", (json_int_t)s->kernels_added,
                         "kernels_removed", (json_int_t)s->kernels_removed, "kernels_changed",
                         (json_int_t)s->kernels_changed));
    }
    return a;
}

static json_t *kernels_json(const struct lp_diff *d)
{
    json_t *a = json_array();
    for (size_t i = 0; i < d->n_kernels; i++) {
        const struct lp_diff_kernel *k = &d->kernels[i];
        json_array_append_new(
            a, json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:o,s:o}", "stage", d->stages[k->stage].name,
                         "name", k->name, "short_name", k->short_name, "category",
                         lp_kcat_name(k->cat), "status", lp_text_diff_status_key(k->status),
                         "calls", value_json(&k->calls), "mean_ns", value_json(&k->mean_ns),
                         "gpu_time", value_json(&k->gpu_ns)));
    }
    return a;
}

static json_t *gemms_json(const struct lp_diff *d)
{
    json_t *a = json_array();
    for (size_t i = 0; i < d->n_gemms; i++) {
        const struct lp_diff_gemm *g = &d->gemms[i];
        const struct lp_gemm *c = &g->call;
        json_array_append_new(
            a, json_pack("{s:s,s:I,s:I,s:I,s:I,s:i,s:i,s:s,s:s,s:s,s:s,s:s,s:o,s:o,s:o}", "stage",
                         d->stages[g->stage].name, "m", (json_int_t)c->m, "n", (json_int_t)c->n,
                         "k", (json_int_t)c->k, "batch", (json_int_t)c->batch, "transa",
                         (int)c->transa, "transb", (int)c->transb, "a_type",
                         lp_cuda_type_name(c->a_type), "b_type", lp_cuda_type_name(c->b_type),
                         "d_type", lp_cuda_type_name(c->d_type), "compute_type",
                         lp_compute_type_name(c->compute_type), "status",
                         lp_text_diff_status_key(g->status), "calls", value_json(&g->calls),
                         "mean_ns", value_json(&g->mean_ns), "tflops", value_json(&g->tflops)));
    }
    return a;
}

static json_t *ops_json(const struct lp_diff *d)
{
    json_t *a = json_array();
    for (size_t i = 0; i < d->n_ops; i++) {
        const struct lp_diff_op *o = &d->ops[i];
        json_array_append_new(a, json_pack("{s:s,s:s,s:o,s:o}", "name", o->name, "status",
                                           lp_text_diff_status_key(o->status), "calls",
                                           value_json(&o->calls), "mean_ns",
                                           value_json(&o->mean_ns)));
    }
    return a;
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

json_t *lp_report_diff_json_value(const struct lp_diff *d)
{
    json_t *runs = json_array(), *warn = json_array(), *gate = json_array();
    for (int x = 0; x < 2; x++)
        json_array_append_new(runs, json_pack("{s:s,s:o,s:o}", "label", run_label(d, x), "gpu",
                                              str_or_null(d->gpu[x]), "command",
                                              str_or_null(d->command[x])));
    for (int bit = 0; bit < LP_DIFF_WARN_BITS; bit++)
        if (d->warnings & (1u << bit))
            json_array_append_new(warn, json_pack("{s:s,s:s}", "key",
                                                  lp_text_diff_warning_key(bit), "text",
                                                  lp_text_diff_warning(bit)));
    for (size_t i = 0; i < d->n_checks; i++) {
        const struct lp_diff_check *c = &d->checks[i];
        json_array_append_new(gate, json_pack("{s:s,s:s,s:f,s:o}", "rule",
                                              c->rule.text ? c->rule.text : "", "result",
                                              lp_text_diff_result_key(c->result), "limit",
                                              c->rule.limit, "figure",
                                              c->value ? value_json(c->value) : json_null()));
    }
    json_t *latency = json_pack("{s:o,s:o,s:o}", "ttft", quantiles_json(d->ttft), "tpot",
                                quantiles_json(d->tpot), "itl", quantiles_json(d->itl));
    json_t *doc = json_pack(
        "{s:s,s:s,s:o,s:f,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:I}", "schema",
        LP_DIFF_SCHEMA, "llmprof_version", LLMPROF_VERSION, "runs", runs, "min_change",
        d->opt.min_change, "warnings", warn, "shapes_shared", num(d->shapes_shared), "latency",
        latency, "mfu", value_json(&d->mfu), "mbu", value_json(&d->mbu), "stages",
        stages_json(d), "kernels", kernels_json(d), "gemms", gemms_json(d), "operators",
        ops_json(d), "gate", gate, "gate_failed", (json_int_t)d->failed);
    return doc;
}

int lp_report_diff_json(FILE *f, const struct lp_diff *d)
{
    json_t *doc = lp_report_diff_json_value(d);
    if (!doc)
        return -1;
    int rc = json_dumpf(doc, f, JSON_INDENT(1) | JSON_REAL_PRECISION(10)) == 0 ? 0 : -1;
    fputc('\n', f);
    json_decref(doc);
    return rc == 0 && !ferror(f) ? 0 : -1;
}

/* ---- the headline, for report's summary against a baseline ---- */

static void headline_row(FILE *f, const char *what, const struct lp_diff_value *v, enum unit u)
{
    char a[48], b[48], c[96], w[64];
    if (isnan(v->a) && isnan(v->b))
        return;
    if (isnan(v->a) || isnan(v->b))
        fprintf(f, "  %-22s %s → %s: not measured in %s\n", what, fmt(v->a, u, a, sizeof a),
                fmt(v->b, u, b, sizeof b), isnan(v->a) ? "the baseline" : "this run");
    else
        fprintf(f, "  %-22s %s → %s, %s: %s\n", what, fmt(v->a, u, a, sizeof a),
                fmt(v->b, u, b, sizeof b), change_text(v, c, sizeof c),
                verdict_text(v, w, sizeof w));
}

int lp_report_diff_headline(FILE *f, const struct lp_diff *d)
{
    fprintf(f, "against ");
    lp_fmt_puts(f, run_label(d, 0));
    fprintf(f, ":\n");
    for (int bit = 0; bit < LP_DIFF_WARN_BITS; bit++)
        if (d->warnings & (1u << bit))
            fprintf(f, "  warning: %s\n", lp_text_diff_warning(bit));
    headline_row(f, "TTFT p50", &d->ttft[0], UNIT_NS);
    headline_row(f, "TPOT p50", &d->tpot[0], UNIT_NS);
    for (size_t i = 0; i < d->n_stages; i++) {
        const struct lp_diff_stage *s = &d->stages[i];
        char what[96], name[61]; /* the name cut at 60 bytes, whole characters and escapes */
        if (s->a < 0 || s->b < 0) {
            fprintf(f, "  ");
            lp_fmt_puts(f, s->name);
            fprintf(f, ": only in %s\n", s->a < 0 ? "this run" : "the baseline");
            continue;
        }
        lp_fmt_escape(name, sizeof name, s->name);
        snprintf(what, sizeof what, "%s %s", name, s->per_step ? "step p50" : "wall");
        headline_row(f, what, s->per_step ? &s->step[0] : &s->wall, UNIT_NS);
        if (s->kernels_added || s->kernels_removed || s->kernels_changed)
            fprintf(f, "  %-22s kernels: %zu added, %zu removed, %zu changed\n", name,
                    s->kernels_added, s->kernels_removed, s->kernels_changed);
    }
    return ferror(f) ? -1 : 0;
}

int lp_report_diff_warnings(FILE *f, const struct lp_diff *d, const char *cmd)
{
    for (int bit = 0; bit < LP_DIFF_WARN_BITS; bit++)
        if (d->warnings & (1u << bit))
            fprintf(f, "llmprof %s: warning: %s; compared anyway (diff.md says more)\n", cmd,
                    lp_text_diff_warning(bit));
    return ferror(f) ? -1 : 0;
}

/* ---- the gate's lines ---- */

int lp_report_diff_gate(FILE *f, const struct lp_diff *d)
{
    for (size_t i = 0; i < d->n_checks; i++) {
        const struct lp_diff_check *c = &d->checks[i];
        char ch[96];
        fprintf(f, "%s: %s", c->rule.text ? c->rule.text : "", lp_text_diff_result(c->result));
        if (c->value && !isnan(c->value->change))
            fprintf(f, " (change %s, limit %+.1f %%)", change_text(c->value, ch, sizeof ch),
                    100 * c->rule.limit);
        fprintf(f, "\n");
    }
    return ferror(f) ? -1 : 0;
}
