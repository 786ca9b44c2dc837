/* `llmprof model --format md`: readable tables of parameters, per-module and per-stage costs
 * and the roofline bounds, with the conventions they follow. */
#include <math.h>
#include <stdio.h>

#include "llmprof/report.h"
#include "report_internal.h"

/* 6738415616 -> "6,738,415,616" */
static const char *commas(double v, char *buf, size_t len)
{
    char digits[32];
    snprintf(digits, sizeof digits, "%.0f", v);
    size_t n = 0, dl = 0;
    while (digits[dl])
        dl++;
    for (size_t i = 0; i < dl && n + 2 < len; i++) {
        if (i && digits[i - 1] != '-' && (dl - i) % 3 == 0)
            buf[n++] = ',';
        buf[n++] = digits[i];
    }
    buf[n] = 0;
    return buf;
}

/* 3 significant digits with an SI prefix: 1.23 G */
static const char *si(double v, char *buf, size_t len)
{
    static const char *const p[] = {"", "K", "M", "G", "T", "P", "E"};
    int i = 0;
    double a = fabs(v);
    while (a >= 1000 && i < 6) {
        a /= 1000;
        v /= 1000;
        i++;
    }
    if (!isfinite(v))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.3g %s", v, p[i]);
    return buf;
}

static void cost_row(FILE *o, const char *name, const struct lp_cost *c)
{
    char a[32], b[32], d[32], e[32], f[32], g[32], h[32];
    fprintf(o, "| %s | %s | %sFLOP | %sFLOP | %sB | %sB | %sB | %sB | %.1f |\n", name,
            commas(c->params, a, sizeof a), si(c->matmul_flops, b, sizeof b),
            si(c->other_flops, d, sizeof d), si(c->weight_bytes, e, sizeof e),
            si(c->act_bytes, f, sizeof f), si(c->kv_read_bytes, g, sizeof g),
            si(c->kv_write_bytes, h, sizeof h), lp_cost_intensity(c));
}

static void weights(FILE *o, const struct lp_weights *wt, const struct lp_params *p)
{
    char x[32], y[32];
    fprintf(o, "## Weights on disk (safetensors headers: %d files, %d tensors, %sB)\n\n",
            wt->files, wt->tensors, si(wt->bytes, x, sizeof x));
    fprintf(o, "| group | in the weights | analytic |\n|---|---|---|\n");
    for (int g = 0; g < LP_WEIGHT_GROUP_COUNT; g++) {
        double analytic = lp_weights_analytic(p, (enum lp_weight_group)g);
        if (wt->by_group[g] > 0 || analytic > 0)
            fprintf(o, "| %s | %s | %s |\n", lp_weight_group_name((enum lp_weight_group)g),
                    commas(wt->by_group[g], x, sizeof x), commas(analytic, y, sizeof y));
    }
    fprintf(o, "| **total** | %s | %s |\n\ndtypes:", commas(wt->params, x, sizeof x),
            commas(p->total + p->mtp, y, sizeof y));
    for (int i = 0; i < wt->n_dtypes; i++) { /* dtype names as the safetensors headers say */
        fprintf(o, " ");
        lp_fmt_puts(o, wt->by_dtype[i].name);
        fprintf(o, " %s%s", commas(wt->by_dtype[i].params, x, sizeof x),
                i + 1 < wt->n_dtypes ? "," : "");
    }
    fprintf(o, " (elements as stored: packed formats count their containers)\n\n");
}

int lp_report_model_md(FILE *o, const struct lp_model_report *rep)
{
    const struct lp_model *m = rep->model;
    const struct lp_workload *w = rep->workload;
    const struct lp_model_result *r = rep->result;
    const struct lp_model_bounds *b = rep->bounds;
    char x[32], y[32];
    fprintf(o, "# "); /* config.json's strings */
    lp_fmt_puts(o, m->model_type);
    fprintf(o, " (");
    lp_fmt_puts(o, m->family);
    fprintf(o, " family): %lld layers, hidden %lld, vocabulary %lld\n\n", (long long)m->layers,
            (long long)m->hidden, (long long)m->vocab);
    fprintf(o, "## Parameters (analytic, from config.json)\n\n| | parameters |\n|---|---|\n");
    fprintf(o, "| total | %s (%s) |\n", commas(r->params.total, x, sizeof x), si(r->params.total, y, sizeof y));
    fprintf(o, "| active per decoder token (without the embedding table) | %s (%s) |\n",
            commas(r->params.active, x, sizeof x), si(r->params.active, y, sizeof y));
    fprintf(o, "| active with the embedding table | %s (%s) |\n",
            commas(r->params.active_with_embedding, x, sizeof x),
            si(r->params.active_with_embedding, y, sizeof y));
    for (int mod = 0; mod < LP_MODULE_COUNT; mod++)
        if (r->params.per_module[mod] > 0)
            fprintf(o, "| %s | %s |\n", lp_module_name(mod), commas(r->params.per_module[mod], x, sizeof x));
    if (m->tied_embeddings)
        fprintf(o, "| lm_head | tied to the embedding (counted once) |\n");
    if (r->params.mtp > 0)
        fprintf(o, "| multi-token prediction (apart; not in total) | %s |\n", commas(r->params.mtp, x, sizeof x));
    fprintf(o, "\n");
    if (rep->weights)
        weights(o, rep->weights, &r->params);
    fprintf(o, "KV cache: %sB per token (all layers, %s), %sB held at the end of the request "
               "(batch %lld).\n\n", si(r->kv_bytes_per_token, x, sizeof x), lp_dtype_name(w->kv),
            si(r->kv_bytes_end, y, sizeof y), (long long)w->batch);
    fprintf(o, "## Workload\n\nbatch %lld, prompt %lld tokens", (long long)w->batch, (long long)w->prompt);
    if (r->vision_tokens)
        fprintf(o, " + %lld image slots (%s mode)", (long long)r->vision_tokens,
                lp_vision_mode_name(w->vision_mode));
    fprintf(o, ", %lld generated; weights %s, activations %s, KV cache %s; prefill logits: %s; "
               "one decode step at context %lld.\n\n", (long long)w->generated,
            lp_dtype_name(w->weights), lp_dtype_name(w->activations), lp_dtype_name(w->kv),
            w->prefill_logits_all ? "every token" : "last token", (long long)r->decode_context);
    for (int s = 0; s < LP_MODEL_STAGE_COUNT; s++) {
        if (s == LP_MODEL_STAGE_VISION && r->vision_tokens == 0)
            continue;
        fprintf(o, "## Stage: %s\n\n", lp_model_stage_name(s));
        fprintf(o, "| module | params | matmul | other | weights read | activations | KV read "
                   "| KV written | FLOP/byte |\n|---|---|---|---|---|---|---|---|---|\n");
        for (int mod = 0; mod < LP_MODULE_COUNT; mod++) {
            const struct lp_cost *c = &r->stage[s][mod];
            if (lp_cost_flops(c) > 0 || lp_cost_bytes(c) > 0)
                cost_row(o, lp_module_name(mod), c);
        }
        cost_row(o, "**total**", &r->total[s]);
        fprintf(o, "\n");
    }
    if (b) {
        fprintf(o, "## Roofline on "); /* the hardware table's name, or --hw-file's */
        lp_fmt_puts(o, b->gpu.name);
        fprintf(o, " (datasheet: %s dense %.1f TFLOP/s, FP32 %.1f TFLOP/s, "
                   "%.0f GB/s)\n\n| stage | compute | memory | lower bound | bound by |\n|---|---|---|---|---|\n",
                lp_dtype_name(b->matmul_dtype), b->gpu.tflops[b->matmul_dtype],
                b->gpu.tflops[LP_DTYPE_FP32], b->gpu.mem_bw_gbs);
        for (int s = 0; s < LP_MODEL_STAGE_COUNT; s++) {
            if (s == LP_MODEL_STAGE_VISION && r->vision_tokens == 0)
                continue;
            const struct lp_bound *bd = &b->stage[s];
            fprintf(o, "| %s | %.4g ms | %.4g ms | %.4g ms | %s |\n", lp_model_stage_name(s),
                    bd->compute_s * 1e3, bd->memory_s * 1e3, bd->bound_s * 1e3,
                    bd->memory_bound ? "memory" : "compute");
        }
        fprintf(o, "\nTTFT >= %.4g ms; TPOT >= %.4g ms (mean decode step, %s-bound); prefill <= "
                   "%.4g tokens/s; decode <= %.4g tokens/s.\n\n", b->ttft_s * 1e3, b->tpot_s * 1e3,
                b->decode_mean.memory_bound ? "memory" : "compute", b->prefill_tokens_per_s,
                b->decode_tokens_per_s);
    }
    fprintf(o, "Conventions: one multiply-add = 2 FLOPs; causal attention over P tokens visits "
               "P(P+1)/2 key positions; a decode step at context C attends C keys; matmuls run in "
               "the activation dtype; bytes are lower bounds (each weight once per pass, "
               "activations once per layer, fused attention); MoE experts touched per pass under "
               "uniform routing. See docs/model.md.\n");
    return ferror(o) ? -1 : 0;
}
