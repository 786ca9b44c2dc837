/* Qwen2-MoE and Qwen3-MoE: Qwen2's or Qwen3's attention (q/k/v biases, or q/k norms; head_dim
 * given or hidden / heads) with a routed MoE MLP on the layers where (i + 1) % decoder_sparse_step == 0
 * and i is not in mlp_only_layers (those keep a dense MLP of intermediate_size). Qwen2-MoE
 * adds one shared expert of shared_expert_intermediate_size behind a sigmoid gate; Qwen3-MoE
 * has none. Sliding windows as Qwen2's: on the layers from max_window_layers on. */
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

enum lp_status lp_arch_qwen_moe(struct lp_cfg *c, json_t *root, struct lp_model *m)
{
    int qwen3 = !strcmp(m->model_type, "qwen3_moe");
    snprintf(m->family, sizeof m->family, "qwen-moe");
    m->hidden = lp_cfg_int(c, root, "hidden_size", LP_CFG_REQUIRED, 1, LP_MODEL_MAX_WIDTH);
    m->layers = lp_cfg_int(c, root, "num_hidden_layers", LP_CFG_REQUIRED, 1, LP_MODEL_MAX_LAYERS);
    m->vocab = lp_cfg_int(c, root, "vocab_size", LP_CFG_REQUIRED, 1, LP_MODEL_MAX_VOCAB);
    m->max_positions = lp_cfg_int(c, root, "max_position_embeddings", 0, 0, LP_MODEL_MAX_TOKENS);
    m->tied_embeddings = lp_cfg_bool(c, root, "tie_word_embeddings", 0);
    m->norm = LP_NORM_KIND_RMS;

    struct lp_attn_spec a = {0};
    if (lp_cfg_gqa(c, root, m->hidden, &a) != 0)
        return LP_ERR_FORMAT;
    if (qwen3) {
        a.qkv_bias = a.o_bias = lp_cfg_bool(c, root, "attention_bias", 0);
        a.qk_norm = 1;
    } else {
        a.qkv_bias = lp_cfg_bool(c, root, "qkv_bias", 1);
    }

    struct lp_mlp_spec dense = {.kind = LP_MLP_KIND_GATED};
    dense.intermediate = lp_cfg_int(c, root, "intermediate_size", LP_CFG_REQUIRED, 1,
                                    LP_MODEL_MAX_FFN);
    struct lp_mlp_spec moe = {.kind = LP_MLP_KIND_MOE};
    /* HF saves Qwen3-MoE's count as num_local_experts; the published configs say num_experts */
    const char *experts_key = json_object_get(root, "num_experts") ? "num_experts"
                              : json_object_get(root, "num_local_experts") ? "num_local_experts"
                                                                             : "num_experts";
    moe.experts = lp_cfg_int(c, root, experts_key, LP_CFG_REQUIRED, 1, LP_MODEL_MAX_EXPERTS);
    moe.top_k = lp_cfg_int(c, root, "num_experts_per_tok", LP_CFG_REQUIRED, 1,
                           LP_MODEL_MAX_EXPERTS);
    moe.intermediate = lp_cfg_int(c, root, "moe_intermediate_size", LP_CFG_REQUIRED, 1,
                                  LP_MODEL_MAX_FFN);
    if (!qwen3) {
        moe.shared_intermediate = lp_cfg_int(c, root, "shared_expert_intermediate_size",
                                             LP_CFG_REQUIRED, 0, LP_MODEL_MAX_FFN);
        moe.shared_experts = moe.shared_intermediate > 0;
        moe.shared_gate = moe.shared_experts;
    }
    int64_t step = lp_cfg_int(c, root, "decoder_sparse_step", 1, 1, LP_MODEL_MAX_LAYERS);
    if (!c->failed && moe.top_k > moe.experts)
        lp_cfg_fail(c, "\"num_experts_per_tok\" (%lld) is larger than \"%s\" (%lld)",
                    (long long)moe.top_k, experts_key, (long long)moe.experts);
    int64_t window = lp_cfg_int(c, root, "sliding_window", 0, 0, LP_MODEL_MAX_TOKENS);
    int64_t windowed_from = m->layers;
    if (window > 0 && lp_cfg_bool(c, root, "use_sliding_window", 0))
        windowed_from = lp_cfg_int(c, root, "max_window_layers", 0, 0, LP_MODEL_MAX_LAYERS);
    if (c->failed)
        return LP_ERR_FORMAT;

    /* mlp_only_layers as a set of layer indices (entries past the last layer change nothing) */
    unsigned char *dense_only = calloc((size_t)m->layers, 1);
    if (!dense_only) {
        lp_cfg_fail(c, "out of memory");
        return LP_ERR_FORMAT;
    }
    json_t *only = json_object_get(root, "mlp_only_layers");
    if (only && !json_is_null(only)) {
        if (!json_is_array(only) || json_array_size(only) > (size_t)LP_MODEL_MAX_LAYERS)
            lp_cfg_fail(c, "key \"mlp_only_layers\" must be an array of at most %lld layer "
                           "indices", (long long)LP_MODEL_MAX_LAYERS);
        size_t i;
        json_t *v;
        json_array_foreach(only, i, v) {
            if (c->failed)
                break;
            json_int_t x = json_is_integer(v) ? json_integer_value(v) : -1;
            if (x < 0)
                lp_cfg_fail(c, "key \"mlp_only_layers\"[%zu] must be a layer index (an integer "
                               "from 0)", i);
            else if (x < m->layers)
                dense_only[x] = 1;
        }
    }
    /* one group per kind of layer: at most four (dense or MoE, windowed or not) */
    for (int64_t i = 0; i < m->layers && !c->failed; i++) {
        int sparse = !dense_only[i] && (i + 1) % step == 0;
        a.sliding_window = i >= windowed_from ? window : 0;
        lp_model_add_group(c, m, 1, &a, sparse ? &moe : &dense);
    }
    free(dense_only);
    return c->failed ? LP_ERR_FORMAT : LP_OK;
}
