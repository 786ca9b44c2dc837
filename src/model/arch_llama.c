/* The Llama family: Llama, Mistral, Qwen2, Qwen3 (dense, GQA, SwiGLU, RMSNorm, rotary) and
 * Mixtral (the same with a routed MoE MLP). Differences handled: head_dim given or derived,
 * Qwen2's q/k/v biases, Qwen3's q/k norms, attention_bias, mlp_bias, tied embeddings,
 * sliding windows (Mistral's everywhere, Qwen's above max_window_layers). */
#include <string.h>

#include "model_internal.h"

enum lp_status lp_arch_llama(struct lp_cfg *c, json_t *root, struct lp_model *m)
{
    const char *type = m->model_type;
    int qwen2 = !strcmp(type, "qwen2"), qwen3 = !strcmp(type, "qwen3");
    int mixtral = !strcmp(type, "mixtral");
    snprintf(m->family, sizeof m->family, "%s", mixtral ? "mixtral" : "llama");
    m->hidden = lp_cfg_int(c, root, "hidden_size", LP_CFG_REQUIRED, 1, LP_MODEL_MAX_WIDTH);
    m->layers = lp_cfg_int(c, root, "num_hidden_layers", LP_CFG_REQUIRED, 1,
                           LP_MODEL_MAX_LAYERS);
    m->vocab = lp_cfg_int(c, root, "vocab_size", LP_CFG_REQUIRED, 1, LP_MODEL_MAX_VOCAB);
    m->max_positions = lp_cfg_int(c, root, "max_position_embeddings", 0, 0,
                                   LP_MODEL_MAX_TOKENS);
    m->tied_embeddings = lp_cfg_bool(c, root, "tie_word_embeddings", 0);
    m->norm = LP_NORM_KIND_RMS;
    struct lp_attn_spec a = {0};
    if (lp_cfg_gqa(c, root, m->hidden, &a) != 0)
        return LP_ERR_FORMAT;
    int attention_bias = lp_cfg_bool(c, root, "attention_bias", 0);
    a.qkv_bias = qwen2 || attention_bias; /* Qwen2 always biases q, k and v */
    a.o_bias = attention_bias;
    a.qk_norm = qwen3;

    struct lp_mlp_spec mlp = {.kind = LP_MLP_KIND_GATED};
    mlp.intermediate = lp_cfg_int(c, root, "intermediate_size", LP_CFG_REQUIRED, 1,
                                  LP_MODEL_MAX_FFN);
    mlp.bias = lp_cfg_bool(c, root, "mlp_bias", 0);
    if (mixtral) {
        mlp.kind = LP_MLP_KIND_MOE;
        mlp.experts = lp_cfg_int(c, root, "num_local_experts", LP_CFG_REQUIRED, 1,
                                 LP_MODEL_MAX_EXPERTS);
        mlp.top_k = lp_cfg_int(c, root, "num_experts_per_tok", LP_CFG_REQUIRED, 1,
                               LP_MODEL_MAX_EXPERTS);
        if (!c->failed && mlp.top_k > mlp.experts)
            lp_cfg_fail(c, "\"num_experts_per_tok\" (%lld) is larger than \"num_local_experts\" "
                           "(%lld)", (long long)mlp.top_k, (long long)mlp.experts);
    }
    if (c->failed)
        return LP_ERR_FORMAT;

    /* Sliding windows: Mistral and Mixtral on every layer when set; Qwen on the layers from
     * max_window_layers on, when use_sliding_window is true. */
    int64_t window = lp_cfg_int(c, root, "sliding_window", 0, 0, LP_MODEL_MAX_TOKENS);
    int64_t windowed_from = m->layers;
    if (qwen2 || qwen3) {
        if (lp_cfg_bool(c, root, "use_sliding_window", 0))
            windowed_from = lp_cfg_int(c, root, "max_window_layers", 0, 0, LP_MODEL_MAX_LAYERS);
    } else if (window > 0) {
        windowed_from = 0;
    }
    if (windowed_from > m->layers)
        windowed_from = m->layers;
    if (window == 0)
        windowed_from = m->layers;
    if (c->failed)
        return LP_ERR_FORMAT;
    lp_model_add_group(c, m, windowed_from, &a, &mlp);
    a.sliding_window = window;
    lp_model_add_group(c, m, m->layers - windowed_from, &a, &mlp);
    return c->failed ? LP_ERR_FORMAT : LP_OK;
}
