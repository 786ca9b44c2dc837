/* Parameters, FLOPs and bytes of a decoder (and its vision encoder) per module and stage.
 * Conventions, stated once here and in docs/model.md:
 * - one multiply-add = 2 FLOPs; a linear layer on T tokens costs 2*T*in*out matmul FLOPs;
 *   biases, norms, activations, softmax and residual adds are "other" FLOPs;
 * - causal attention: the query at position i attends min(i, window) keys; prefill of P
 *   tokens visits P(P+1)/2 pairs without a window; QK^T and PV each cost 2*head_dim per pair;
 * - a decode step "at context C" attends C keys (the C - 1 cached tokens and itself);
 * - MLA: prefill in the decompressed form, decode in the weight-absorbed form over the
 *   latent cache of kv_lora_rank + qk_rope_head_dim per token and layer;
 * - MoE: a pass over T tokens touches E*(1 - (1 - k/E)^T) experts of a layer (uniform
 *   routing); active parameters per token count top-k routed + shared experts + router;
 * - bytes are lower bounds: each weight read once per pass, each linear layer reads its
 *   input and writes its output once, attention fused (scores never in memory), KV read
 *   once per pass, elementwise work fused into its neighbours. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model_internal.h"
#include "vision.h"

/* other-FLOP approximations per element (documented in docs/model.md) */
enum { FLOPS_RMSNORM = 4, FLOPS_LAYERNORM = 5, FLOPS_SILU_MUL = 5, FLOPS_GELU = 8,
       FLOPS_SOFTMAX = 5 };

/* One pass of the decoder over the batch: a prefill, or S decode steps. */
struct pass {
    double batch;
    int decode;
    double prompt;        /* prefill: tokens per sequence */
    double steps;         /* decode: steps, the first attending c0 keys, then one more each */
    double c0;
    double logits_per_seq; /* prefill: tokens whose logits are computed */
};

static double tokens(const struct pass *p) { return p->batch * (p->decode ? p->steps : p->prompt); }
/* tokens one forward pass processes at once (what MoE routing spreads over experts) */
static double tokens_per_forward(const struct pass *p) { return p->decode ? p->batch : p->batch * p->prompt; }
static double forwards(const struct pass *p) { return p->decode ? p->steps : 1; }

/* Sum over i = a..b of min(i, w) (w = 0: no window). */
static double sum_min(double a, double b, double w)
{
    if (b < a)
        return 0;
    if (w <= 0 || b <= w)
        return (a + b) * (b - a + 1) / 2;
    if (a > w)
        return (b - a + 1) * w;
    return (a + w) * (w - a + 1) / 2 + (b - w) * w;
}

/* Keys attended by all queries of one sequence, and KV tokens read and written per layer. */
static double keys_sum(const struct pass *p, int64_t window)
{
    if (!p->decode)
        return sum_min(1, p->prompt, (double)window);
    return sum_min(p->c0, p->c0 + p->steps - 1, (double)window);
}

/* Adds TIMES x C's costs (parameters are not costs: callers set them). */
static void add(struct lp_cost *dst, const struct lp_cost *c, double times)
{
    dst->matmul_flops += c->matmul_flops * times;
    dst->other_flops += c->other_flops * times;
    dst->weight_bytes += c->weight_bytes * times;
    dst->act_bytes += c->act_bytes * times;
    dst->kv_read_bytes += c->kv_read_bytes * times;
    dst->kv_write_bytes += c->kv_write_bytes * times;
}

/* A linear layer of IN x OUT over T tokens, read F times (passes). */
static void linear(struct lp_cost *c, double in, double out, int bias, double t, double f,
                   double wb, double ab)
{
    c->params += in * out + (bias ? out : 0);
    c->matmul_flops += 2 * t * in * out;
    c->other_flops += bias ? t * out : 0;
    c->weight_bytes += f * (in * out + (bias ? out : 0)) * wb;
    c->act_bytes += t * (in + out) * ab;
}

static double norm_params(const struct lp_model *m, double dim)
{
    return m->norm == LP_NORM_KIND_LAYER ? 2 * dim : dim;
}

static void norm(const struct lp_model *m, struct lp_cost *c, double dim, double t, double f,
                 double wb, double ab)
{
    double p = norm_params(m, dim);
    c->params += p;
    c->other_flops += t * dim * (m->norm == LP_NORM_KIND_LAYER ? FLOPS_LAYERNORM : FLOPS_RMSNORM);
    c->weight_bytes += f * p * wb;
    c->act_bytes += 2 * t * dim * ab;
}

struct dtypes {
    double w, a, kv;
};

/* One layer's attention: projections and core. */
static void attention(const struct lp_model *m, const struct lp_attn_spec *a, const struct pass *p,
                      const struct dtypes *d, struct lp_cost *proj, struct lp_cost *core,
                      struct lp_cost *norms)
{
    double h = (double)m->hidden, t = tokens(p), f = forwards(p);
    double heads = (double)a->heads, kvh = (double)a->kv_heads;
    double hd = (double)a->head_dim, vhd = (double)a->v_head_dim;
    double keys = keys_sum(p, a->sliding_window) * p->batch;
    double kv_per_token; /* elements cached per token in this layer */
    if (a->kind == LP_ATTN_KIND_MHA) {
        linear(proj, h, heads * hd, a->qkv_bias, t, f, d->w, d->a);
        linear(proj, h, kvh * hd, a->qkv_bias, t, f, d->w, d->a);
        linear(proj, h, kvh * vhd, a->qkv_bias, t, f, d->w, d->a);
        linear(proj, heads * vhd, h, a->o_bias, t, f, d->w, d->a);
        if (a->qk_norm) {
            norm(m, norms, hd, t * heads, f, d->w, d->a);
            norm(m, norms, hd, t * kvh, f, d->w, d->a);
        }
        core->matmul_flops += 2 * heads * (hd + vhd) * keys;
        kv_per_token = kvh * (hd + vhd);
    } else {
        double ql = (double)a->q_lora_rank, kvl = (double)a->kv_lora_rank;
        double nope = (double)a->qk_nope_dim, rope = (double)a->qk_rope_dim;
        if (ql > 0) {
            linear(proj, h, ql, 0, t, f, d->w, d->a);
            norm(m, norms, ql, t, f, d->w, d->a);
            linear(proj, ql, heads * (nope + rope), 0, t, f, d->w, d->a);
        } else {
            linear(proj, h, heads * (nope + rope), 0, t, f, d->w, d->a);
        }
        linear(proj, h, kvl + rope, 0, t, f, d->w, d->a);
        norm(m, norms, kvl, t, f, d->w, d->a);
        /* kv_b: prefill decompresses every token's latent; decode absorbs it into the query
         * and the output: the same 2*kvl*heads*(nope+v) FLOPs per new token either way */
        linear(proj, kvl, heads * (nope + vhd), 0, t, f, d->w, d->a);
        linear(proj, heads * vhd, h, 0, t, f, d->w, d->a);
        if (p->decode) /* scores over the latent (+ rope part), then values in latent space */
            core->matmul_flops += 2 * heads * (2 * kvl + rope) * keys;
        else
            core->matmul_flops += 2 * heads * (nope + rope + vhd) * keys;
        kv_per_token = kvl + rope;
    }
    core->other_flops += FLOPS_SOFTMAX * heads * keys;
    core->act_bytes += t * heads * (hd + vhd) * d->a; /* queries in, outputs out */
    /* KV: prefill writes its tokens and reads them once; decode reads what it attends */
    double kv_tokens_written = t;
    double kv_tokens_read = p->decode ? keys : t;
    core->kv_write_bytes += kv_tokens_written * kv_per_token * d->kv;
    core->kv_read_bytes += kv_tokens_read * kv_per_token * d->kv;
}

static void mlp(const struct lp_model *m, const struct lp_mlp_spec *s, const struct pass *p,
                const struct dtypes *d, struct lp_cost *dense, struct lp_cost *router,
                struct lp_cost *experts, struct lp_cost *shared)
{
    double h = (double)m->hidden, in = (double)s->intermediate, t = tokens(p), f = forwards(p);
    if (s->kind == LP_MLP_KIND_PLAIN) {
        linear(dense, h, in, s->bias, t, f, d->w, d->a);
        linear(dense, in, h, s->bias, t, f, d->w, d->a);
        dense->other_flops += FLOPS_GELU * t * in;
        return;
    }
    if (s->kind == LP_MLP_KIND_GATED) {
        linear(dense, h, in, s->bias, t, f, d->w, d->a);
        linear(dense, h, in, s->bias, t, f, d->w, d->a);
        linear(dense, in, h, s->bias, t, f, d->w, d->a);
        dense->other_flops += FLOPS_SILU_MUL * t * in;
        return;
    }
    double e = (double)s->experts, k = (double)s->top_k;
    linear(router, h, e, 0, t, f, d->w, d->a);
    router->other_flops += FLOPS_SOFTMAX * t * e;
    if (s->router_bias) {
        router->params += e;
        router->weight_bytes += f * e * d->w;
    }
    /* one expert on the tokens routed to it: gate, up, down */
    double expert_params = 3 * h * in;
    double touched = e * (1 - pow(1 - k / e, tokens_per_forward(p)));
    experts->params += e * expert_params;
    experts->matmul_flops += 2 * t * k * expert_params;
    experts->other_flops += FLOPS_SILU_MUL * t * k * in;
    experts->weight_bytes += f * touched * expert_params * d->w;
    experts->act_bytes += t * k * (2 * h + 3 * in) * d->a;
    if (s->shared_experts > 0) {
        double w = s->shared_intermediate > 0 ? (double)s->shared_intermediate
                                               : (double)s->shared_experts * in;
        linear(shared, h, w, 0, t, f, d->w, d->a);
        linear(shared, h, w, 0, t, f, d->w, d->a);
        linear(shared, w, h, 0, t, f, d->w, d->a);
        shared->other_flops += FLOPS_SILU_MUL * t * w;
        if (s->shared_gate) { /* sigmoid(x W_g) scales the shared expert's output */
            linear(shared, h, 1, 0, t, f, d->w, d->a);
            shared->other_flops += 5 * t + t * h;
        }
    }
}

/* The decoder over pass P into OUT[module]. */
static void decoder_pass(const struct lp_model *m, const struct pass *p, const struct dtypes *d,
                         struct lp_cost out[LP_MODULE_COUNT])
{
    double h = (double)m->hidden, v = (double)m->vocab, t = tokens(p), f = forwards(p);
    struct lp_cost *emb = &out[LP_MODULE_EMBED];
    emb->params += v * h + (m->learned_positions ? (double)m->max_positions * h : 0);
    emb->weight_bytes += t * h * d->w * (m->learned_positions ? 2 : 1); /* rows gathered */
    emb->act_bytes += t * h * d->a;
    for (int g = 0; g < m->n_groups; g++) {
        const struct lp_layer_group *grp = &m->groups[g];
        struct lp_cost one[LP_MODULE_COUNT];
        memset(one, 0, sizeof one);
        attention(m, &grp->attn, p, d, &one[LP_MODULE_ATTN_PROJ], &one[LP_MODULE_ATTN_CORE],
                  &one[LP_MODULE_NORMS]);
        mlp(m, &grp->mlp, p, d, &one[LP_MODULE_MLP], &one[LP_MODULE_ROUTER],
            &one[LP_MODULE_EXPERTS], &one[LP_MODULE_SHARED_EXPERTS]);
        norm(m, &one[LP_MODULE_NORMS], h, t, f, d->w, d->a);
        norm(m, &one[LP_MODULE_NORMS], h, t, f, d->w, d->a);
        one[LP_MODULE_NORMS].other_flops += 2 * t * h; /* residual adds */
        for (int mod = 0; mod < LP_MODULE_COUNT; mod++) {
            add(&out[mod], &one[mod], (double)grp->count);
            out[mod].params += one[mod].params * (double)grp->count;
        }
    }
    /* final norm and lm_head on the tokens whose logits are needed */
    double lt = p->decode ? t : p->batch * p->logits_per_seq;
    norm(m, &out[LP_MODULE_NORMS], h, lt, f, d->w, d->a);
    struct lp_cost *head = &out[LP_MODULE_LM_HEAD];
    linear(head, h, v, 0, lt, f, d->w, d->a);
    if (m->tied_embeddings)
        head->params = 0; /* shares the embedding's matrix */
}

const char *lp_module_name(enum lp_module mod)
{
    static const char *const names[LP_MODULE_COUNT] = {
        [LP_MODULE_EMBED] = "embedding", [LP_MODULE_ATTN_PROJ] = "attention projections",
        [LP_MODULE_ATTN_CORE] = "attention core", [LP_MODULE_MLP] = "mlp (dense)",
        [LP_MODULE_ROUTER] = "moe router", [LP_MODULE_EXPERTS] = "moe routed experts",
        [LP_MODULE_SHARED_EXPERTS] = "moe shared experts", [LP_MODULE_NORMS] = "norms",
        [LP_MODULE_LM_HEAD] = "lm_head", [LP_MODULE_VISION_SAM] = "vision: SAM-ViT + compressor",
        [LP_MODULE_VISION_CLIP] = "vision: CLIP-L",
        [LP_MODULE_VISION_ENCODER] = "vision: Qwen2 encoder + queries",
        [LP_MODULE_VISION_PROJ] = "vision: projector",
    };
    return (unsigned)mod < LP_MODULE_COUNT ? names[mod] : "?";
}

const char *lp_model_stage_name(enum lp_model_stage s)
{
    static const char *const names[LP_MODEL_STAGE_COUNT] = {
        [LP_MODEL_STAGE_VISION] = "vision", [LP_MODEL_STAGE_PREFILL] = "prefill",
        [LP_MODEL_STAGE_DECODE_STEP] = "decode_step", [LP_MODEL_STAGE_REQUEST] = "request"};
    return (unsigned)s < LP_MODEL_STAGE_COUNT ? names[s] : "?";
}

double lp_cost_bytes(const struct lp_cost *c)
{
    return c->weight_bytes + c->act_bytes + c->kv_read_bytes + c->kv_write_bytes;
}

double lp_cost_flops(const struct lp_cost *c) { return c->matmul_flops + c->other_flops; }

double lp_cost_intensity(const struct lp_cost *c)
{
    double b = lp_cost_bytes(c);
    return b > 0 ? lp_cost_flops(c) / b : 0;
}

void lp_workload_defaults(struct lp_workload *w)
{
    memset(w, 0, sizeof *w);
    w->batch = 1;
    w->prompt = 512;
    w->generated = 128;
    w->weights = w->activations = w->kv = LP_DTYPE_BF16;
    w->vision_mode = LP_VISION_MODE_BASE;
    w->tiles_w = 3; /* Gundam's tiles, DeepSeek-OCR-2's crops: 6, the image processor's most */
    w->tiles_h = 2;
}

/* Parameters of one layer of group G. */
static double layer_params(const struct lp_model *m, const struct lp_layer_group *g)
{
    struct pass one = {.batch = 1, .prompt = 1};
    struct dtypes d = {1, 1, 1};
    struct lp_cost c[LP_MODULE_COUNT];
    memset(c, 0, sizeof c);
    attention(m, &g->attn, &one, &d, &c[LP_MODULE_ATTN_PROJ], &c[LP_MODULE_ATTN_CORE],
              &c[LP_MODULE_NORMS]);
    mlp(m, &g->mlp, &one, &d, &c[LP_MODULE_MLP], &c[LP_MODULE_ROUTER], &c[LP_MODULE_EXPERTS],
        &c[LP_MODULE_SHARED_EXPERTS]);
    double sum = 2 * norm_params(m, (double)m->hidden);
    for (int mod = 0; mod < LP_MODULE_COUNT; mod++)
        sum += c[mod].params;
    return sum;
}

void lp_model_count_params(const struct lp_model *m, struct lp_params *pp)
{
    struct pass one = {.batch = 1, .prompt = 1, .logits_per_seq = 1};
    struct dtypes d = {1, 1, 1};
    struct lp_cost mods[LP_MODULE_COUNT];
    memset(mods, 0, sizeof mods);
    decoder_pass(m, &one, &d, mods);
    memset(pp, 0, sizeof *pp);
    double routed_inactive = 0;
    for (int g = 0; g < m->n_groups; g++) {
        const struct lp_mlp_spec *s = &m->groups[g].mlp;
        if (s->kind == LP_MLP_KIND_MOE)
            routed_inactive += (double)m->groups[g].count * (double)(s->experts - s->top_k) * 3 *
                               (double)m->hidden * (double)s->intermediate;
    }
    for (int mod = 0; mod < LP_MODULE_COUNT; mod++) {
        pp->per_module[mod] = mods[mod].params;
        pp->total += mods[mod].params;
    }
    pp->embedding = mods[LP_MODULE_EMBED].params;
    /* active: the weights a decoder token's computation uses. The embedding table is left
     * out (a token reads one row of it) unless it is also the lm_head (tied), which every
     * token uses whole; inactive routed experts, vision and MTP are left out too. */
    pp->active_with_embedding = pp->total - routed_inactive;
    pp->active = pp->active_with_embedding - (m->tied_embeddings ? 0 : pp->embedding);
    lp_vision_params(m, pp);
    pp->total += pp->vision;
    /* Multi-token prediction (DeepSeek-V3): per module, one more decoder layer like the last,
     * a 2H -> H projection, three norms, and the embedding and head copies the weights store.
     * Reported apart: not in total or active. */
    if (m->mtp_layers > 0 && m->n_groups > 0) {
        double h = (double)m->hidden;
        double per = layer_params(m, &m->groups[m->last_group]) + 2 * h * h +
                     3 * norm_params(m, h) + 2 * (double)m->vocab * h;
        pp->mtp = (double)m->mtp_layers * per;
    }
}

enum lp_status lp_model_analyze(const struct lp_model *m, const struct lp_workload *w,
                                struct lp_model_result *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    /* bounded sizes keep every sum and product below, int64 and double, far from overflow */
    static const char *const what[] = {"batch (sequences)", "prompt (tokens)",
                                       "generated tokens", "decode context (tokens)"};
    const int64_t val[] = {w->batch, w->prompt, w->generated, w->decode_context};
    const int64_t lo[] = {1, 1, 1, 0};
    const int64_t hi[] = {LP_MODEL_MAX_BATCH, LP_MODEL_MAX_TOKENS, LP_MODEL_MAX_TOKENS,
                          LP_MODEL_MAX_TOKENS};
    for (int i = 0; i < 4; i++) {
        if (val[i] < lo[i] || val[i] > hi[i]) {
            snprintf(err, errlen, "the workload's %s is %lld; it must be %lld to %lld%s", what[i],
                     (long long)val[i], (long long)lo[i], (long long)hi[i],
                     i == 3 ? " (0: the default)" : "");
            return LP_ERR_ARG;
        }
    }
    if ((unsigned)w->weights >= LP_DTYPE_COUNT || (unsigned)w->activations >= LP_DTYPE_COUNT ||
        (unsigned)w->kv >= LP_DTYPE_COUNT || (unsigned)w->vision_mode > LP_VISION_MODE_GUNDAM) {
        snprintf(err, errlen, "the workload names an unknown dtype or vision mode");
        return LP_ERR_ARG;
    }
    lp_model_count_params(m, &r->params);
    struct dtypes d = {lp_dtype_bytes(w->weights), lp_dtype_bytes(w->activations),
                       lp_dtype_bytes(w->kv)};
    double b = (double)w->batch;
    enum lp_status rc = lp_vision_analyze(m, w, d.w, d.a, r, err, errlen);
    if (rc != LP_OK)
        return rc;
    int64_t prefill = w->prompt + r->vision_tokens;
    r->prefill_tokens = prefill;
    if (m->max_positions > 0 && prefill + w->generated > m->max_positions) {
        snprintf(err, errlen, "prompt%s + generated tokens (%lld) exceed max_position_embeddings "
                              "(%lld)", r->vision_tokens ? " + vision tokens" : "",
                 (long long)(prefill + w->generated), (long long)m->max_positions);
        return LP_ERR_ARG;
    }
    struct pass pre = {.batch = b, .prompt = (double)prefill,
                       .logits_per_seq = w->prefill_logits_all ? (double)prefill : 1};
    decoder_pass(m, &pre, &d, r->stage[LP_MODEL_STAGE_PREFILL]);
    r->decode_context = w->decode_context > 0 ? w->decode_context : prefill + w->generated / 2;
    struct pass step = {.batch = b, .decode = 1, .steps = 1, .c0 = (double)r->decode_context};
    decoder_pass(m, &step, &d, r->stage[LP_MODEL_STAGE_DECODE_STEP]);
    /* the request: vision, prefill (which yields the first token), then generated - 1 steps
     * attending prefill + 1 ... prefill + generated - 1 keys */
    struct lp_cost *req = r->stage[LP_MODEL_STAGE_REQUEST];
    for (int mod = 0; mod < LP_MODULE_COUNT; mod++) {
        add(&req[mod], &r->stage[LP_MODEL_STAGE_VISION][mod], 1);
        add(&req[mod], &r->stage[LP_MODEL_STAGE_PREFILL][mod], 1);
    }
    if (w->generated > 1) {
        struct pass steps = {.batch = b, .decode = 1, .steps = (double)(w->generated - 1),
                             .c0 = (double)prefill + 1};
        struct lp_cost dec[LP_MODULE_COUNT];
        memset(dec, 0, sizeof dec);
        decoder_pass(m, &steps, &d, dec);
        for (int mod = 0; mod < LP_MODULE_COUNT; mod++)
            add(&req[mod], &dec[mod], 1);
    }
    /* a stage's params: the weights of the modules it runs */
    for (int s = 0; s < LP_MODEL_STAGE_COUNT; s++) {
        for (int mod = 0; mod < LP_MODULE_COUNT; mod++) {
            int vision_mod = mod >= LP_MODULE_VISION_SAM;
            int runs = s == LP_MODEL_STAGE_REQUEST || (s == LP_MODEL_STAGE_VISION) == vision_mod;
            if (s == LP_MODEL_STAGE_VISION && r->vision_tokens == 0)
                runs = 0;
            r->stage[s][mod].params = runs ? r->params.per_module[mod] : 0;
            add(&r->total[s], &r->stage[s][mod], 1);
            r->total[s].params += r->stage[s][mod].params;
        }
    }
    /* KV cache: elements per token over all layers; at the end, windows hold at most W */
    for (int g = 0; g < m->n_groups; g++) {
        const struct lp_attn_spec *a = &m->groups[g].attn;
        double per = a->kind == LP_ATTN_KIND_MLA
                         ? (double)(a->kv_lora_rank + a->qk_rope_dim)
                         : (double)a->kv_heads * (double)(a->head_dim + a->v_head_dim);
        double layers = (double)m->groups[g].count;
        double held = (double)(prefill + w->generated - 1);
        if (a->sliding_window > 0 && held > (double)a->sliding_window)
            held = (double)a->sliding_window;
        r->kv_bytes_per_token += layers * per * d.kv;
        r->kv_bytes_end += b * held * layers * per * d.kv;
    }
    return LP_OK;
}
