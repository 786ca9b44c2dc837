/* DeepSeek-OCR-2 (model_type deepseek_ocr2, HF transformers 5): DeepSeek's MoE decoder with
 * plain multi-head attention (text_config, dense or sparse per layer through mlp_layer_types)
 * behind SAM-ViT-B (vision_config.sam_config) and a Qwen2-style encoder
 * (vision_config.encoder_config) whose learned queries become the image tokens, projected to
 * the decoder's width by one linear layer. Defaults are HF's own for each key. */
#include <string.h>

#include "model_internal.h"

static enum lp_status sam(struct lp_cfg *c, json_t *o, struct lp_vision_spec *v)
{
    c->section = "vision_config.sam_config";
    v->sam_width = lp_cfg_int(c, o, "hidden_size", 768, 1, LP_MODEL_MAX_WIDTH);
    v->sam_layers = lp_cfg_int(c, o, "num_hidden_layers", 12, 1, LP_MODEL_MAX_LAYERS);
    v->sam_heads = lp_cfg_int(c, o, "num_attention_heads", 12, 1, LP_MODEL_MAX_HEADS);
    v->sam_image = lp_cfg_int(c, o, "image_size", 1024, 16, LP_MODEL_MAX_IMAGE);
    v->sam_patch = lp_cfg_int(c, o, "patch_size", 16, 1, LP_MODEL_MAX_IMAGE);
    v->sam_window = lp_cfg_int(c, o, "window_size", 14, 1, LP_MODEL_MAX_IMAGE);
    v->neck_channels = lp_cfg_int(c, o, "output_channels", 256, 1, LP_MODEL_MAX_WIDTH);
    v->sam_mlp = lp_cfg_int(c, o, "mlp_dim", 0, 1, LP_MODEL_MAX_FFN);
    json_t *ratio = json_object_get(o, "mlp_ratio");
    if (!v->sam_mlp && !c->failed) {
        /* HF: int(hidden_size * mlp_ratio), 4.0 by default */
        double r = json_is_number(ratio) ? json_number_value(ratio) : 4.0;
        if (!(r > 0 && r <= 64)) {
            lp_cfg_fail(c, "key \"vision_config.sam_config.mlp_ratio\" must be a number above 0 "
                           "and at most 64");
            return LP_ERR_FORMAT;
        }
        v->sam_mlp = (int64_t)((double)v->sam_width * r);
        if (v->sam_mlp < 1)
            v->sam_mlp = 1;
    }
    v->down1 = 512;
    v->down2 = 896;
    int64_t down[2];
    int n = lp_cfg_int_array(c, o, c->section, "downsample_channels", down, 2, 1,
                             LP_MODEL_MAX_WIDTH, 0);
    if (n == 1)
        lp_cfg_fail(c, "key \"vision_config.sam_config.downsample_channels\" must hold two "
                       "channel counts");
    if (n == 2) {
        v->down1 = down[0];
        v->down2 = down[1];
    }
    if (c->failed)
        return LP_ERR_FORMAT;
    if (json_object_get(o, "global_attn_indexes")) {
        v->n_sam_global = lp_cfg_int_array(c, o, c->section, "global_attn_indexes", v->sam_global,
                                           (int)(sizeof v->sam_global / sizeof *v->sam_global),
                                           0, v->sam_layers - 1, 1);
    } else { /* HF's default, the blocks that exist of 2, 5, 8, 11 */
        static const int64_t def[] = {2, 5, 8, 11};
        for (int i = 0; i < 4; i++)
            if (def[i] < v->sam_layers)
                v->sam_global[v->n_sam_global++] = def[i];
    }
    if (v->n_sam_global < 0)
        return LP_ERR_FORMAT;
    static const char *const unsupported[] = {"qkv_bias", "use_abs_pos", "use_rel_pos"};
    for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++)
        if (!lp_cfg_bool(c, o, unsupported[i], 1) && !c->failed)
            lp_cfg_fail(c, "key \"vision_config.sam_config.%s\" is false; llmprof models SAM "
                           "with it true (DeepSeek-OCR-2's own)", unsupported[i]);
    lp_cfg_divides(c, v->sam_width, "vision_config.sam_config.hidden_size", v->sam_heads,
                   "vision_config.sam_config.num_attention_heads");
    if (!c->failed && v->sam_patch > v->sam_image)
        lp_cfg_fail(c, "\"vision_config.sam_config.patch_size\" (%lld) is larger than its "
                       "\"image_size\" (%lld)", (long long)v->sam_patch, (long long)v->sam_image);
    return c->failed ? LP_ERR_FORMAT : LP_OK;
}

static enum lp_status encoder(struct lp_cfg *c, json_t *o, struct lp_vision_spec *v)
{
    c->section = "vision_config.encoder_config";
    v->enc_width = lp_cfg_int(c, o, "hidden_size", 4096, 1, LP_MODEL_MAX_WIDTH);
    v->enc_mlp = lp_cfg_int(c, o, "intermediate_size", 22016, 1, LP_MODEL_MAX_FFN);
    v->enc_layers = lp_cfg_int(c, o, "num_hidden_layers", 32, 1, LP_MODEL_MAX_LAYERS);
    v->enc_heads = lp_cfg_int(c, o, "num_attention_heads", 32, 1, LP_MODEL_MAX_HEADS);
    v->enc_kv_heads = lp_cfg_int(c, o, "num_key_value_heads", v->enc_heads, 1, LP_MODEL_MAX_HEADS);
    if (c->failed)
        return LP_ERR_FORMAT;
    lp_cfg_divides(c, v->enc_width, "vision_config.encoder_config.hidden_size", v->enc_heads,
                   "vision_config.encoder_config.num_attention_heads");
    lp_cfg_divides(c, v->enc_heads, "vision_config.encoder_config.num_attention_heads",
                   v->enc_kv_heads, "vision_config.encoder_config.num_key_value_heads");
    return c->failed ? LP_ERR_FORMAT : LP_OK;
}

enum lp_status lp_arch_deepseek_ocr2(struct lp_cfg *c, json_t *root, struct lp_model *m)
{
    snprintf(m->family, sizeof m->family, "deepseek-ocr2");
    json_t *text = lp_cfg_obj(c, root, "text_config", 1);
    json_t *vc = lp_cfg_obj(c, root, "vision_config", 1);
    if (c->failed)
        return LP_ERR_FORMAT;
    c->section = "vision_config";
    json_t *sc = lp_cfg_obj(c, vc, "sam_config", 0);
    json_t *ec = lp_cfg_obj(c, vc, "encoder_config", 1);
    if (c->failed)
        return LP_ERR_FORMAT;
    c->section = "text_config";
    if (lp_arch_deepseek_decoder(c, text, m) != 0)
        return LP_ERR_FORMAT;
    if (m->groups[0].attn.kind != LP_ATTN_KIND_MHA) {
        lp_cfg_fail(c, "DeepSeek-OCR-2's decoder uses multi-head attention; text_config asks "
                       "for latent attention (kv_lora_rank)");
        return LP_ERR_FORMAT;
    }
    c->section = NULL;
    /* the top level's tie_word_embeddings is the one the model ties by */
    m->tied_embeddings = lp_cfg_bool(c, root, "tie_word_embeddings", m->tied_embeddings);
    struct lp_vision_spec *v = &m->vision;
    v->kind = LP_VISION_KIND_DEEPSEEK_OCR2;
    if (sam(c, sc, v) != 0 || encoder(c, ec, v) != 0)
        return LP_ERR_FORMAT;
    c->section = NULL;
    v->proj_in = v->enc_width;
    v->proj_out = m->hidden;
    /* the compressor's channels are the encoder's token width */
    if (v->down2 != v->enc_width)
        lp_cfg_fail(c, "\"vision_config.sam_config.downsample_channels\"[1] (%lld) must be "
                       "\"vision_config.encoder_config.hidden_size\" (%lld): the SAM tokens are "
                       "the encoder's inputs", (long long)v->down2, (long long)v->enc_width);
    return c->failed ? LP_ERR_FORMAT : LP_OK;
}
