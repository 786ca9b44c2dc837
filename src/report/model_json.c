/* `llmprof model --format json`: schema llmprof-model/1 (docs/model.md). */
#include <jansson.h>
#include <math.h>

#include "llmprof/report.h"

static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }
/* counts are exact integers in JSON */
static json_t *count(double v) { return json_integer((json_int_t)llround(v)); }

static json_t *cost(const struct lp_cost *c)
{
    json_t *o = json_object();
    double bytes = lp_cost_bytes(c), flops = lp_cost_flops(c);
    json_object_set_new(o, "params", count(c->params));
    json_object_set_new(o, "flops", num(flops));
    json_object_set_new(o, "matmul_flops", num(c->matmul_flops));
    json_object_set_new(o, "other_flops", num(c->other_flops));
    json_object_set_new(o, "bytes", num(bytes));
    json_object_set_new(o, "weight_bytes", num(c->weight_bytes));
    json_object_set_new(o, "activation_bytes", num(c->act_bytes));
    json_object_set_new(o, "kv_read_bytes", num(c->kv_read_bytes));
    json_object_set_new(o, "kv_write_bytes", num(c->kv_write_bytes));
    json_object_set_new(o, "arithmetic_intensity", bytes > 0 ? num(lp_cost_intensity(c)) : json_null());
    return o;
}

static json_t *bound(const struct lp_bound *b)
{
    json_t *o = json_object();
    json_object_set_new(o, "compute_s", num(b->compute_s));
    json_object_set_new(o, "memory_s", num(b->memory_s));
    json_object_set_new(o, "bound_s", num(b->bound_s));
    json_object_set_new(o, "bound", json_string(b->memory_bound ? "memory" : "compute"));
    return o;
}

static json_t *weights(const struct lp_weights *wt, const struct lp_params *p)
{
    json_t *o = json_object();
    json_object_set_new(o, "files", json_integer(wt->files));
    json_object_set_new(o, "tensors", json_integer(wt->tensors));
    json_object_set_new(o, "total", count(wt->params));
    json_object_set_new(o, "bytes", count(wt->bytes));
    json_object_set_new(o, "analytic_total", count(p->total + p->mtp));
    json_t *dt = json_object();
    for (int i = 0; i < wt->n_dtypes; i++)
        json_object_set_new(dt, wt->by_dtype[i].name, count(wt->by_dtype[i].params));
    json_object_set_new(o, "by_dtype", dt);
    json_t *groups = json_object();
    for (int g = 0; g < LP_WEIGHT_GROUP_COUNT; g++) {
        double analytic = lp_weights_analytic(p, (enum lp_weight_group)g);
        if (wt->by_group[g] == 0 && analytic == 0)
            continue;
        json_t *e = json_object();
        json_object_set_new(e, "weights", count(wt->by_group[g]));
        json_object_set_new(e, "analytic", count(analytic));
        json_object_set_new(groups, lp_weight_group_name((enum lp_weight_group)g), e);
    }
    json_object_set_new(o, "by_group", groups);
    return o;
}

static json_t *model_obj(const struct lp_model *m)
{
    json_t *model = json_object();
    json_object_set_new(model, "model_type", json_string(m->model_type));
    json_object_set_new(model, "family", json_string(m->family));
    json_object_set_new(model, "hidden_size", json_integer(m->hidden));
    json_object_set_new(model, "layers", json_integer(m->layers));
    json_object_set_new(model, "vocab_size", json_integer(m->vocab));
    json_object_set_new(model, "tied_embeddings", json_boolean(m->tied_embeddings));
    return model;
}

static json_t *workload_obj(const struct lp_model *m, const struct lp_workload *w,
                            const struct lp_model_result *r)
{
    json_t *wl = json_object();
    json_object_set_new(wl, "batch", json_integer(w->batch));
    json_object_set_new(wl, "prompt_tokens", json_integer(w->prompt));
    json_object_set_new(wl, "generated_tokens", json_integer(w->generated));
    json_object_set_new(wl, "vision_mode", json_string(m->vision.kind ? lp_vision_mode_name(w->vision_mode) : "none"));
    json_object_set_new(wl, "vision_tokens", json_integer(r->vision_tokens));
    json_object_set_new(wl, "prefill_tokens", json_integer(r->prefill_tokens));
    json_object_set_new(wl, "decode_context", json_integer(r->decode_context));
    json_object_set_new(wl, "weights_dtype", json_string(lp_dtype_name(w->weights)));
    json_object_set_new(wl, "activations_dtype", json_string(lp_dtype_name(w->activations)));
    json_object_set_new(wl, "kv_dtype", json_string(lp_dtype_name(w->kv)));
    json_object_set_new(wl, "prefill_logits", json_string(w->prefill_logits_all ? "all" : "last"));
    return wl;
}

static json_t *params_obj(const struct lp_params *p)
{
    json_t *params = json_object();
    json_object_set_new(params, "total", count(p->total));
    json_object_set_new(params, "active", count(p->active));
    json_object_set_new(params, "active_with_embedding", count(p->active_with_embedding));
    json_object_set_new(params, "embedding", count(p->embedding));
    json_object_set_new(params, "vision", count(p->vision));
    json_object_set_new(params, "mtp", count(p->mtp));
    json_t *by = json_object();
    for (int mod = 0; mod < LP_MODULE_COUNT; mod++)
        if (p->per_module[mod] > 0)
            json_object_set_new(by, lp_module_name(mod), count(p->per_module[mod]));
    json_object_set_new(params, "by_module", by);
    return params;
}

/* per stage: its costs, its modules' and, on a GPU (B), its roofline bound */
static json_t *stages_obj(const struct lp_model_result *r, const struct lp_model_bounds *b)
{
    json_t *stages = json_object();
    for (int s = 0; s < LP_MODEL_STAGE_COUNT; s++) {
        if (s == LP_MODEL_STAGE_VISION && r->vision_tokens == 0)
            continue;
        json_t *st = cost(&r->total[s]);
        json_t *mods = json_object();
        for (int mod = 0; mod < LP_MODULE_COUNT; mod++)
            if (lp_cost_flops(&r->stage[s][mod]) > 0 || lp_cost_bytes(&r->stage[s][mod]) > 0)
                json_object_set_new(mods, lp_module_name(mod), cost(&r->stage[s][mod]));
        json_object_set_new(st, "modules", mods);
        if (b)
            json_object_set_new(st, "roofline", bound(&b->stage[s]));
        json_object_set_new(stages, lp_model_stage_name(s), st);
    }
    return stages;
}

static json_t *gpu_obj(const struct lp_model_bounds *b)
{
    json_t *gpu = json_object();
    json_object_set_new(gpu, "name", json_string(b->gpu.name));
    json_object_set_new(gpu, "matmul_dtype", json_string(lp_dtype_name(b->matmul_dtype)));
    json_object_set_new(gpu, "dense_peak_tflops", num(b->gpu.tflops[b->matmul_dtype]));
    json_object_set_new(gpu, "fp32_peak_tflops", num(b->gpu.tflops[LP_DTYPE_FP32]));
    json_object_set_new(gpu, "memory_bandwidth_gbs", num(b->gpu.mem_bw_gbs));
    return gpu;
}

static json_t *limits_obj(const struct lp_model_bounds *b)
{
    json_t *lim = json_object();
    json_object_set_new(lim, "ttft_s_min", num(b->ttft_s));
    json_object_set_new(lim, "tpot_s_min", num(b->tpot_s));
    json_object_set_new(lim, "prefill_tokens_per_s_max", num(b->prefill_tokens_per_s));
    json_object_set_new(lim, "decode_tokens_per_s_max", num(b->decode_tokens_per_s));
    json_object_set_new(lim, "decode_step_mean", bound(&b->decode_mean));
    return lim;
}

static json_t *conventions(void)
{
    static const char *const notes[] = {
        "one multiply-add = 2 FLOPs",
        "causal attention: a prefill of P tokens visits P(P+1)/2 key positions (min(i, window) per query)",
        "a decode step at context C attends C keys",
        "matmuls run in the activation dtype; other FLOPs are counted apart (approximations)",
        "bytes are lower bounds: weights once per pass, activations once per layer, fused attention",
        "MoE: experts touched per pass E*(1-(1-k/E)^T) under uniform routing",
        "MLA: prefill decompressed, decode weight-absorbed over the latent KV cache",
    };
    json_t *conv = json_array();
    for (size_t i = 0; i < sizeof notes / sizeof *notes; i++)
        json_array_append_new(conv, json_string(notes[i]));
    return conv;
}

int lp_report_model_json(FILE *out, const struct lp_model_report *rep)
{
    const struct lp_model_result *r = rep->result;
    const struct lp_model_bounds *b = rep->bounds;
    json_t *root = json_object();
    json_object_set_new(root, "schema", json_string("llmprof-model/1"));
    json_object_set_new(root, "model", model_obj(rep->model));
    json_object_set_new(root, "workload", workload_obj(rep->model, rep->workload, r));
    json_object_set_new(root, "params", params_obj(&r->params));
    if (rep->weights)
        json_object_set_new(root, "weights", weights(rep->weights, &r->params));
    json_object_set_new(root, "kv_cache_bytes_per_token", num(r->kv_bytes_per_token));
    json_object_set_new(root, "kv_cache_bytes_end", num(r->kv_bytes_end));
    json_object_set_new(root, "stages", stages_obj(r, b));
    if (b) {
        json_object_set_new(root, "gpu", gpu_obj(b));
        json_object_set_new(root, "bounds", limits_obj(b));
    }
    json_object_set_new(root, "conventions", conventions());
    int rc = json_dumpf(root, out, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) == 0 &&
             fputc('\n', out) != EOF ? 0 : -1;
    json_decref(root);
    return rc;
}
