/* DeepSeek-V2 and -V3: multi-head latent attention (MLA) or, with use_mla false, plain
 * multi-head attention; dense MLP on the first first_k_dense_replace layers, then MoE
 * layers (every moe_layer_freq-th) with routed and shared experts; V3's router correction
 * bias (topk_method noaux_tc) and multi-token-prediction layers, reported apart.
 * DeepSeek-OCR (deepseek_vl_v2) is this decoder behind a SAM + CLIP vision encoder. */
#include <string.h>

#include "model_internal.h"

/* Layers in [FROM, L) whose index is a multiple of FREQ: ceil(L / FREQ) - ceil(FROM / FREQ). */
static int64_t multiples(int64_t from, int64_t l, int64_t freq)
{
    return from >= l ? 0 : (l + freq - 1) / freq - (from + freq - 1) / freq;
}

/* HF transformers 5's per-layer list: "dense" or "sparse" for each of the layers. */
static enum lp_status layer_types(struct lp_cfg *c, json_t *types, struct lp_model *m,
                                  const struct lp_attn_spec *a, const struct lp_mlp_spec *dense,
                                  const struct lp_mlp_spec *moe)
{
    const char *sec = c->section ? c->section : "", *dot = c->section ? "." : "";
    if (!json_is_array(types) || json_array_size(types) != (size_t)m->layers) {
        lp_cfg_fail(c, "key \"%s%smlp_layer_types\" must be an array of num_hidden_layers (%lld) "
                       "strings, each \"dense\" or \"sparse\"", sec, dot, (long long)m->layers);
        return LP_ERR_FORMAT;
    }
    size_t i;
    json_t *v;
    json_array_foreach(types, i, v) {
        const char *t = json_is_string(v) ? json_string_value(v) : "";
        int sparse = !strcmp(t, "sparse");
        if (!sparse && strcmp(t, "dense") != 0) {
            lp_cfg_fail(c, "key \"%s%smlp_layer_types\"[%zu] must be \"dense\" or \"sparse\"",
                        sec, dot, i);
            return LP_ERR_FORMAT;
        }
        if (sparse && moe->experts == 0) {
            lp_cfg_fail(c, "key \"%s%smlp_layer_types\"[%zu] is \"sparse\" but the config has no "
                           "routed experts (n_routed_experts)", sec, dot, i);
            return LP_ERR_FORMAT;
        }
        /* groups merge layers of one kind, so this adds at most two */
        if (lp_model_add_group(c, m, 1, a, sparse ? moe : dense) != 0)
            return LP_ERR_FORMAT;
    }
    return LP_OK;
}

enum lp_status lp_arch_deepseek_decoder(struct lp_cfg *c, json_t *o, struct lp_model *m)
{
    m->hidden = lp_cfg_int(c, o, "hidden_size", LP_CFG_REQUIRED, 1, LP_MODEL_MAX_WIDTH);
    m->layers = lp_cfg_int(c, o, "num_hidden_layers", LP_CFG_REQUIRED, 1, LP_MODEL_MAX_LAYERS);
    m->vocab = lp_cfg_int(c, o, "vocab_size", LP_CFG_REQUIRED, 1, LP_MODEL_MAX_VOCAB);
    m->max_positions = lp_cfg_int(c, o, "max_position_embeddings", 0, 0, LP_MODEL_MAX_TOKENS);
    m->tied_embeddings = lp_cfg_bool(c, o, "tie_word_embeddings", 0);
    m->mtp_layers = lp_cfg_int(c, o, "num_nextn_predict_layers", 0, 0, LP_MODEL_MAX_LAYERS);
    m->norm = LP_NORM_KIND_RMS;

    struct lp_attn_spec a = {.kind = LP_ATTN_KIND_MHA};
    a.heads = lp_cfg_int(c, o, "num_attention_heads", LP_CFG_REQUIRED, 1, LP_MODEL_MAX_HEADS);
    a.kv_heads = lp_cfg_int(c, o, "num_key_value_heads", a.heads, 1, LP_MODEL_MAX_HEADS);
    int bias = lp_cfg_bool(c, o, "attention_bias", 0);
    a.qkv_bias = a.o_bias = bias;
    /* MLA unless use_mla says otherwise or there is no latent rank (DeepSeek-OCR) */
    int64_t kv_lora = lp_cfg_int(c, o, "kv_lora_rank", 0, 0, LP_MODEL_MAX_WIDTH);
    if (lp_cfg_bool(c, o, "use_mla", kv_lora > 0)) {
        a.kind = LP_ATTN_KIND_MLA;
        a.kv_heads = a.heads;
        a.q_lora_rank = lp_cfg_int(c, o, "q_lora_rank", 0, 0, LP_MODEL_MAX_WIDTH);
        a.kv_lora_rank = lp_cfg_int(c, o, "kv_lora_rank", LP_CFG_REQUIRED, 1, LP_MODEL_MAX_WIDTH);
        a.qk_nope_dim = lp_cfg_int(c, o, "qk_nope_head_dim", LP_CFG_REQUIRED, 0,
                                   LP_MODEL_MAX_HEAD_DIM);
        a.qk_rope_dim = lp_cfg_int(c, o, "qk_rope_head_dim", LP_CFG_REQUIRED, 0,
                                   LP_MODEL_MAX_HEAD_DIM);
        a.v_head_dim = lp_cfg_int(c, o, "v_head_dim", LP_CFG_REQUIRED, 1, LP_MODEL_MAX_HEAD_DIM);
        a.head_dim = a.qk_nope_dim + a.qk_rope_dim;
        if (!c->failed && a.head_dim == 0)
            lp_cfg_fail(c, "\"qk_nope_head_dim\" + \"qk_rope_head_dim\" is 0");
    } else if (!c->failed) {
        lp_cfg_divides(c, m->hidden, "hidden_size", a.heads, "num_attention_heads");
        lp_cfg_divides(c, a.heads, "num_attention_heads", a.kv_heads, "num_key_value_heads");
        a.head_dim = a.v_head_dim = m->hidden / a.heads;
    }

    struct lp_mlp_spec dense = {.kind = LP_MLP_KIND_GATED};
    dense.intermediate = lp_cfg_int(c, o, "intermediate_size", LP_CFG_REQUIRED, 1, LP_MODEL_MAX_FFN);
    struct lp_mlp_spec moe = {.kind = LP_MLP_KIND_MOE};
    moe.experts = lp_cfg_int(c, o, "n_routed_experts", 0, 0, LP_MODEL_MAX_EXPERTS);
    int64_t first_dense = lp_cfg_int(c, o, "first_k_dense_replace", 0, 0, LP_MODEL_MAX_LAYERS);
    int64_t freq = lp_cfg_int(c, o, "moe_layer_freq", 1, 1, LP_MODEL_MAX_LAYERS);
    if (moe.experts > 0) {
        moe.intermediate = lp_cfg_int(c, o, "moe_intermediate_size", LP_CFG_REQUIRED, 1,
                                      LP_MODEL_MAX_FFN);
        moe.top_k = lp_cfg_int(c, o, "num_experts_per_tok", LP_CFG_REQUIRED, 1,
                               LP_MODEL_MAX_EXPERTS);
        moe.shared_experts = lp_cfg_int(c, o, "n_shared_experts", 0, 0,
                                        LP_MODEL_MAX_SHARED_EXPERTS);
        const char *method = lp_cfg_str(c, o, "topk_method", "");
        moe.router_bias = method && !strcmp(method, "noaux_tc");
        if (!c->failed && moe.top_k > moe.experts)
            lp_cfg_fail(c, "\"num_experts_per_tok\" (%lld) is larger than \"n_routed_experts\" "
                           "(%lld)", (long long)moe.top_k, (long long)moe.experts);
    }
    if (c->failed)
        return LP_ERR_FORMAT;
    json_t *types = json_object_get(o, "mlp_layer_types");
    if (types && !json_is_null(types))
        return layer_types(c, types, m, &a, &dense, &moe);
    /* layer i is MoE when i >= first_k_dense_replace and i % moe_layer_freq == 0: two groups
     * counted in closed form (no loop over layers), in the order their first layers come */
    int64_t n_moe = moe.experts > 0 ? multiples(first_dense, m->layers, freq) : 0;
    int64_t n_dense = m->layers - n_moe;
    int moe_first = n_moe > 0 && first_dense == 0;
    int64_t last = m->layers - 1;
    int last_moe = moe.experts > 0 && last >= first_dense && last % freq == 0;
    for (int k = 0; k < 2; k++) {
        int is_moe = k == 0 ? moe_first : !moe_first;
        if (lp_model_add_group(c, m, is_moe ? n_moe : n_dense, &a, is_moe ? &moe : &dense) != 0)
            return LP_ERR_FORMAT;
    }
    for (int g = 0; g < m->n_groups; g++)
        if ((m->groups[g].mlp.kind == LP_MLP_KIND_MOE) == last_moe)
            m->last_group = g;
    return c->failed ? LP_ERR_FORMAT : LP_OK;
}

enum lp_status lp_arch_deepseek(struct lp_cfg *c, json_t *root, struct lp_model *m)
{
    snprintf(m->family, sizeof m->family, "deepseek");
    return lp_arch_deepseek_decoder(c, root, m);
}

/* DeepSeek-OCR's vision tower: SAM-ViT-B (windowed attention, global at the listed blocks),
 * its neck and 16x compressor, CLIP-L fed the SAM features, and a linear projector. Sizes
 * the config does not name are SAM-ViT-B's and CLIP-L's own (docs/model.md). */
static enum lp_status vision(struct lp_cfg *c, json_t *root, struct lp_model *m)
{
    struct lp_vision_spec *v = &m->vision;
    v->kind = LP_VISION_KIND_DEEPSEEK_OCR;
    json_t *vc = lp_cfg_obj(c, root, "vision_config", 1);
    json_t *pc = lp_cfg_obj(c, root, "projector_config", 1);
    if (c->failed)
        return LP_ERR_FORMAT;
    c->section = "vision_config";
    v->sam_image = lp_cfg_int(c, vc, "image_size", 1024, 16, LP_MODEL_MAX_IMAGE);
    json_t *widths = lp_cfg_obj(c, vc, "width", 1);
    json_t *sam = NULL, *clip = NULL;
    const char *key, *sam_key = "sam", *clip_key = "clip";
    json_t *val;
    json_object_foreach(widths, key, val) {
        if (!strncmp(key, "sam", 3)) {
            sam = val;
            sam_key = key;
        } else if (!strncmp(key, "clip", 4)) {
            clip = val;
            clip_key = key;
        }
    }
    if (!c->failed && (!json_is_object(sam) || !json_is_object(clip))) {
        lp_cfg_fail(c, "key \"vision_config.width\" must hold a \"sam_...\" and a \"clip-...\" object");
        return LP_ERR_FORMAT;
    }
    /* messages name the real keys: "vision_config.width.sam_vit_b.layers" */
    char sam_section[96], clip_section[96];
    snprintf(sam_section, sizeof sam_section, "vision_config.width.%.40s", sam_key);
    snprintf(clip_section, sizeof clip_section, "vision_config.width.%.40s", clip_key);
    c->section = sam_section;
    v->sam_width = lp_cfg_int(c, sam, "width", 768, 1, LP_MODEL_MAX_WIDTH);
    v->sam_layers = lp_cfg_int(c, sam, "layers", 12, 1, LP_MODEL_MAX_LAYERS);
    v->sam_heads = lp_cfg_int(c, sam, "heads", 12, 1, LP_MODEL_MAX_HEADS);
    v->sam_mlp = 4 * v->sam_width;
    v->sam_patch = 16;
    v->sam_window = 14;
    v->neck_channels = 256;
    v->down1 = 512;
    v->down2 = 1024;
    if (c->failed)
        return LP_ERR_FORMAT;
    int64_t down[2];
    int n_down = lp_cfg_int_array(c, sam, sam_section, "downsample_channels", down, 2, 1,
                           LP_MODEL_MAX_WIDTH, 0);
    if (n_down == 1)
        lp_cfg_fail(c, "key \"%s.downsample_channels\" must hold two channel counts", sam_section);
    if (n_down == 2) {
        v->down1 = down[0];
        v->down2 = down[1];
    }
    /* global blocks: distinct and existing, so the encoder counts each block once */
    v->n_sam_global = lp_cfg_int_array(c, sam, sam_section, "global_attn_indexes", v->sam_global,
                                (int)(sizeof v->sam_global / sizeof *v->sam_global), 0,
                                v->sam_layers - 1, 1);
    if (v->n_sam_global < 0)
        v->n_sam_global = 0;
    c->section = clip_section;
    v->clip_width = lp_cfg_int(c, clip, "width", 1024, 1, LP_MODEL_MAX_WIDTH);
    v->clip_layers = lp_cfg_int(c, clip, "layers", 24, 1, LP_MODEL_MAX_LAYERS);
    v->clip_heads = lp_cfg_int(c, clip, "heads", 16, 1, LP_MODEL_MAX_HEADS);
    v->clip_patch = lp_cfg_int(c, clip, "patch_size", 14, 1, LP_MODEL_MAX_IMAGE);
    v->clip_image = lp_cfg_int(c, clip, "image_size", 224, 1, LP_MODEL_MAX_IMAGE);
    v->clip_mlp = 4 * v->clip_width;
    if (!c->failed && v->clip_patch > v->clip_image)
        lp_cfg_fail(c, "\"%s.patch_size\" (%lld) is larger than its \"image_size\" (%lld)",
                    clip_section, (long long)v->clip_patch, (long long)v->clip_image);
    c->section = "projector_config";
    v->proj_in = lp_cfg_int(c, pc, "input_dim", LP_CFG_REQUIRED, 1, LP_MODEL_MAX_WIDTH);
    v->proj_out = lp_cfg_int(c, pc, "n_embed", LP_CFG_REQUIRED, 1, LP_MODEL_MAX_WIDTH);
    c->section = NULL;
    if (c->failed)
        return LP_ERR_FORMAT;
    char wk[128], hk[128];
    snprintf(wk, sizeof wk, "%s.width", sam_section);
    snprintf(hk, sizeof hk, "%s.heads", sam_section);
    lp_cfg_divides(c, v->sam_width, wk, v->sam_heads, hk);
    snprintf(wk, sizeof wk, "%s.width", clip_section);
    snprintf(hk, sizeof hk, "%s.heads", clip_section);
    lp_cfg_divides(c, v->clip_width, wk, v->clip_heads, hk);
    if (!c->failed && v->down2 != v->clip_width)
        lp_cfg_fail(c, "the SAM compressor's output (%lld channels) must be CLIP's width (%lld)",
                    (long long)v->down2, (long long)v->clip_width);
    if (!c->failed && v->proj_out != m->hidden)
        lp_cfg_fail(c, "\"projector_config.n_embed\" (%lld) is not the decoder's hidden_size (%lld)",
                    (long long)v->proj_out, (long long)m->hidden);
    return c->failed ? LP_ERR_FORMAT : LP_OK;
}

enum lp_status lp_arch_deepseek_ocr(struct lp_cfg *c, json_t *root, struct lp_model *m)
{
    snprintf(m->family, sizeof m->family, "deepseek-ocr");
    json_t *lang = lp_cfg_obj(c, root, "language_config", 0);
    if (c->failed)
        return LP_ERR_FORMAT;
    c->section = lang ? "language_config" : NULL;
    if (lp_arch_deepseek_decoder(c, lang ? lang : root, m) != 0)
        return LP_ERR_FORMAT;
    c->section = NULL;
    return vision(c, root, m);
}
