/* DeepSeek-V2 and -V3: multi-head latent attention (MLA) or, with use_mla false, plain
 * multi-head attention; dense MLP on the first first_k_dense_replace layers, then MoE
 * layers (every moe_layer_freq-th) with routed and shared experts; V3's router correction
 * bias (topk_method noaux_tc) and multi-token-prediction layers, reported apart.
 * DeepSeek-OCR (deepseek_vl_v2) is this decoder behind a SAM + CLIP vision encoder. */
#include <string.h>

#include "model_internal.h"

static int decoder(struct lp_cfg *c, json_t *o, struct lp_model *m)
{
    m->hidden = lp_cfg_int(c, o, "hidden_size", LP_CFG_REQUIRED, 1);
    m->layers = lp_cfg_int(c, o, "num_hidden_layers", LP_CFG_REQUIRED, 1);
    m->vocab = lp_cfg_int(c, o, "vocab_size", LP_CFG_REQUIRED, 1);
    m->max_positions = lp_cfg_int(c, o, "max_position_embeddings", 0, 0);
    m->tied_embeddings = lp_cfg_bool(c, o, "tie_word_embeddings", 0);
    m->mtp_layers = lp_cfg_int(c, o, "num_nextn_predict_layers", 0, 0);
    m->norm = LP_NORM_RMS;

    struct lp_attn_spec a = {.kind = LP_ATTN_MHA};
    a.heads = lp_cfg_int(c, o, "num_attention_heads", LP_CFG_REQUIRED, 1);
    a.kv_heads = lp_cfg_int(c, o, "num_key_value_heads", a.heads, 1);
    int bias = lp_cfg_bool(c, o, "attention_bias", 0);
    a.qkv_bias = a.o_bias = bias;
    /* MLA unless use_mla says otherwise or there is no latent rank (DeepSeek-OCR) */
    int64_t kv_lora = lp_cfg_int(c, o, "kv_lora_rank", 0, 0);
    if (lp_cfg_bool(c, o, "use_mla", kv_lora > 0)) {
        a.kind = LP_ATTN_MLA;
        a.kv_heads = a.heads;
        a.q_lora_rank = lp_cfg_int(c, o, "q_lora_rank", 0, 0);
        a.kv_lora_rank = lp_cfg_int(c, o, "kv_lora_rank", LP_CFG_REQUIRED, 1);
        a.qk_nope_dim = lp_cfg_int(c, o, "qk_nope_head_dim", LP_CFG_REQUIRED, 0);
        a.qk_rope_dim = lp_cfg_int(c, o, "qk_rope_head_dim", LP_CFG_REQUIRED, 0);
        a.v_head_dim = lp_cfg_int(c, o, "v_head_dim", LP_CFG_REQUIRED, 1);
        a.head_dim = a.qk_nope_dim + a.qk_rope_dim;
        if (!c->failed && a.head_dim == 0)
            lp_cfg_fail(c, "\"qk_nope_head_dim\" + \"qk_rope_head_dim\" is 0");
    } else if (!c->failed) {
        lp_cfg_divides(c, m->hidden, "hidden_size", a.heads, "num_attention_heads");
        lp_cfg_divides(c, a.heads, "num_attention_heads", a.kv_heads, "num_key_value_heads");
        a.head_dim = a.v_head_dim = m->hidden / a.heads;
    }

    struct lp_mlp_spec dense = {.kind = LP_MLP_GATED};
    dense.intermediate = lp_cfg_int(c, o, "intermediate_size", LP_CFG_REQUIRED, 1);
    struct lp_mlp_spec moe = {.kind = LP_MLP_MOE};
    moe.experts = lp_cfg_int(c, o, "n_routed_experts", 0, 0);
    int64_t first_dense = lp_cfg_int(c, o, "first_k_dense_replace", 0, 0);
    int64_t freq = lp_cfg_int(c, o, "moe_layer_freq", 1, 1);
    if (moe.experts > 0) {
        moe.intermediate = lp_cfg_int(c, o, "moe_intermediate_size", LP_CFG_REQUIRED, 1);
        moe.top_k = lp_cfg_int(c, o, "num_experts_per_tok", LP_CFG_REQUIRED, 1);
        moe.shared_experts = lp_cfg_int(c, o, "n_shared_experts", 0, 0);
        const char *method = lp_cfg_str(c, o, "topk_method", "");
        moe.router_bias = method && !strcmp(method, "noaux_tc");
        if (!c->failed && moe.top_k > moe.experts)
            lp_cfg_fail(c, "\"num_experts_per_tok\" (%lld) is larger than \"n_routed_experts\" "
                           "(%lld)", (long long)moe.top_k, (long long)moe.experts);
    }
    if (c->failed)
        return -1;
    for (int64_t i = 0; i < m->layers; i++) {
        int is_moe = moe.experts > 0 && i >= first_dense && i % freq == 0;
        if (lp_model_add_group(c, m, 1, &a, is_moe ? &moe : &dense) != 0)
            return -1;
    }
    return c->failed ? -1 : 0;
}

int lp_arch_deepseek(struct lp_cfg *c, json_t *root, struct lp_model *m)
{
    snprintf(m->family, sizeof m->family, "deepseek");
    return decoder(c, root, m);
}

/* DeepSeek-OCR's vision tower: SAM-ViT-B (windowed attention, global at the listed blocks),
 * its neck and 16x compressor, CLIP-L fed the SAM features, and a linear projector. Sizes
 * the config does not name are SAM-ViT-B's and CLIP-L's own (docs/model.md). */
static int vision(struct lp_cfg *c, json_t *root, struct lp_model *m)
{
    struct lp_vision_spec *v = &m->vision;
    v->kind = LP_VISION_DEEPSEEK_OCR;
    json_t *vc = lp_cfg_obj(c, root, "vision_config", 1);
    json_t *pc = lp_cfg_obj(c, root, "projector_config", 1);
    if (c->failed)
        return -1;
    c->section = "vision_config";
    v->sam_image = lp_cfg_int(c, vc, "image_size", 1024, 16);
    json_t *widths = lp_cfg_obj(c, vc, "width", 1);
    json_t *sam = NULL, *clip = NULL;
    const char *key;
    json_t *val;
    json_object_foreach(widths, key, val) {
        if (!strncmp(key, "sam", 3))
            sam = val;
        else if (!strncmp(key, "clip", 4))
            clip = val;
    }
    if (!c->failed && (!json_is_object(sam) || !json_is_object(clip))) {
        lp_cfg_fail(c, "key \"vision_config.width\" must hold a \"sam_...\" and a \"clip-...\" object");
        return -1;
    }
    c->section = "vision_config.width.sam";
    v->sam_width = lp_cfg_int(c, sam, "width", 768, 1);
    v->sam_layers = lp_cfg_int(c, sam, "layers", 12, 1);
    v->sam_heads = lp_cfg_int(c, sam, "heads", 12, 1);
    v->sam_mlp = 4 * v->sam_width;
    v->sam_patch = 16;
    v->sam_window = 14;
    v->neck_channels = 256;
    v->down1 = 512;
    v->down2 = 1024;
    json_t *down = json_object_get(sam, "downsample_channels");
    if (json_is_array(down) && json_array_size(down) == 2 &&
        json_is_integer(json_array_get(down, 0)) && json_is_integer(json_array_get(down, 1))) {
        v->down1 = json_integer_value(json_array_get(down, 0));
        v->down2 = json_integer_value(json_array_get(down, 1));
    }
    json_t *global = json_object_get(sam, "global_attn_indexes");
    size_t i;
    json_array_foreach(global, i, val) {
        if (json_is_integer(val) && v->n_sam_global < 16)
            v->sam_global[v->n_sam_global++] = json_integer_value(val);
    }
    c->section = "vision_config.width.clip";
    v->clip_width = lp_cfg_int(c, clip, "width", 1024, 1);
    v->clip_layers = lp_cfg_int(c, clip, "layers", 24, 1);
    v->clip_heads = lp_cfg_int(c, clip, "heads", 16, 1);
    v->clip_patch = lp_cfg_int(c, clip, "patch_size", 14, 1);
    v->clip_image = lp_cfg_int(c, clip, "image_size", 224, 1);
    v->clip_mlp = 4 * v->clip_width;
    c->section = "projector_config";
    v->proj_in = lp_cfg_int(c, pc, "input_dim", LP_CFG_REQUIRED, 1);
    v->proj_out = lp_cfg_int(c, pc, "n_embed", LP_CFG_REQUIRED, 1);
    c->section = NULL;
    if (c->failed)
        return -1;
    lp_cfg_divides(c, v->sam_width, "vision_config.width.sam.width", v->sam_heads, "heads");
    lp_cfg_divides(c, v->clip_width, "vision_config.width.clip.width", v->clip_heads, "heads");
    if (!c->failed && v->down2 != v->clip_width)
        lp_cfg_fail(c, "the SAM compressor's output (%lld channels) must be CLIP's width (%lld)",
                    (long long)v->down2, (long long)v->clip_width);
    if (!c->failed && v->proj_out != m->hidden)
        lp_cfg_fail(c, "\"projector_config.n_embed\" (%lld) is not the decoder's hidden_size (%lld)",
                    (long long)v->proj_out, (long long)m->hidden);
    return c->failed ? -1 : 0;
}

int lp_arch_deepseek_ocr(struct lp_cfg *c, json_t *root, struct lp_model *m)
{
    snprintf(m->family, sizeof m->family, "deepseek-ocr");
    json_t *lang = lp_cfg_obj(c, root, "language_config", 0);
    if (c->failed)
        return -1;
    c->section = lang ? "language_config" : NULL;
    if (decoder(c, lang ? lang : root, m) != 0)
        return -1;
    c->section = NULL;
    return vision(c, root, m);
}
