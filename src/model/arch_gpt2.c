/* GPT-2: learned position embeddings, LayerNorm, multi-head attention and a GELU MLP with
 * biases everywhere, lm_head tied to the token embedding. */
#include "model_internal.h"

enum lp_status lp_arch_gpt2(struct lp_cfg *c, json_t *root, struct lp_model *m)
{
    snprintf(m->family, sizeof m->family, "gpt2");
    m->hidden = lp_cfg_int(c, root, "n_embd", LP_CFG_REQUIRED, 1, LP_MODEL_MAX_WIDTH);
    m->layers = lp_cfg_int(c, root, "n_layer", LP_CFG_REQUIRED, 1, LP_MODEL_MAX_LAYERS);
    m->vocab = lp_cfg_int(c, root, "vocab_size", LP_CFG_REQUIRED, 1, LP_MODEL_MAX_VOCAB);
    m->max_positions = lp_cfg_int(c, root, "n_positions", LP_CFG_REQUIRED, 1, LP_MODEL_MAX_TOKENS);
    m->learned_positions = 1;
    m->tied_embeddings = lp_cfg_bool(c, root, "tie_word_embeddings", 1);
    m->norm = LP_NORM_KIND_LAYER;
    struct lp_attn_spec a = {.kind = LP_ATTN_KIND_MHA, .qkv_bias = 1, .o_bias = 1};
    a.heads = lp_cfg_int(c, root, "n_head", LP_CFG_REQUIRED, 1, LP_MODEL_MAX_HEADS);
    if (c->failed)
        return LP_ERR_FORMAT;
    lp_cfg_divides(c, m->hidden, "n_embd", a.heads, "n_head");
    a.kv_heads = a.heads;
    a.head_dim = a.v_head_dim = m->hidden / a.heads;
    struct lp_mlp_spec mlp = {.kind = LP_MLP_KIND_PLAIN, .bias = 1};
    mlp.intermediate = lp_cfg_int(c, root, "n_inner", 4 * m->hidden, 1, LP_MODEL_MAX_FFN);
    if (c->failed)
        return LP_ERR_FORMAT;
    return lp_model_add_group(c, m, m->layers, &a, &mlp);
}
