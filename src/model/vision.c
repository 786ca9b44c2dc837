/* The vision encoders in front of DeepSeek-OCR's decoders ("DeepEncoder").
 * Both start with SAM-ViT-B over 16x16 patches with windowed attention (14x14 windows, global
 * attention at the listed blocks, decomposed relative positions), a neck (1x1 then 3x3 conv to
 * 256 channels) and a 16x compressor (two stride-2 3x3 convs).
 * DeepSeek-OCR: CLIP-L run on those features as its patch embeddings (its own conv stem is
 * skipped), with a class token; [CLIP tokens without CLS | SAM tokens] (2048 channels)
 * projected to the decoder's width. A view of S pixels gives h = ceil(S/64) and h^2 image
 * tokens, placed in h(h+1) + 1 decoder slots (a newline per row, one view separator).
 * DeepSeek-OCR-2: a Qwen2-style encoder over [the n SAM tokens | n' learned queries] (n' = 144
 * up to 144 SAM tokens, else 256), bidirectional among the SAM tokens and causal among the
 * queries; the queries' outputs are projected to the decoder's width. A 1024 page gives 256
 * tokens, each 768 local crop 144, then one view separator (docs/model.md). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vision.h"

static int64_t view_side(enum lp_vision_mode mode)
{
    switch (mode) {
    case LP_VISION_MODE_TINY: return 512;
    case LP_VISION_MODE_SMALL: return 640;
    case LP_VISION_MODE_BASE: return 1024;
    case LP_VISION_MODE_LARGE: return 1280;
    default: return 0;
    }
}

const char *lp_vision_mode_name(enum lp_vision_mode v)
{
    static const char *const names[] = {"none", "tiny", "small", "base", "large", "gundam"};
    return (unsigned)v < sizeof names / sizeof *names ? names[v] : "?";
}

static int64_t grid_of(int64_t side) { return (side + 63) / 64; }

/* DeepSeek-OCR-2: SAM tokens of a view of SIDE pixels (16x compressed), and the learned
 * queries that go with them (the model keeps tables of 144 and 256) */
static int64_t ocr2_sam_tokens(const struct lp_vision_spec *v, int64_t side)
{
    int64_t g = side / v->sam_patch / 4;
    return g * g;
}

static int64_t ocr2_queries(int64_t sam_tokens) { return sam_tokens <= 144 ? 144 : 256; }

int64_t lp_vision_slots(const struct lp_vision_spec *v, enum lp_vision_mode mode,
                        int64_t tiles_w, int64_t tiles_h)
{
    if (v->kind == LP_VISION_KIND_DEEPSEEK_OCR2) {
        /* the global view, each local crop, then the view separator */
        int64_t crops = mode == LP_VISION_MODE_GUNDAM ? tiles_w * tiles_h : 0;
        return ocr2_queries(ocr2_sam_tokens(v, 1024)) +
               crops * ocr2_queries(ocr2_sam_tokens(v, 768)) + 1;
    }
    if (mode == LP_VISION_MODE_GUNDAM) {
        /* a 1024 global view (16 x 17 slots) and 640 tiles (10 x 10 tokens each) laid out as one
         * grid with a newline per row, then the separator */
        return 16 * 17 + (tiles_h * 10) * (tiles_w * 10 + 1) + 1;
    }
    int64_t h = grid_of(view_side(mode));
    return h * (h + 1) + 1;
}

static void lin(struct lp_cost *c, double in, double out, int bias, double t, double wb, double ab)
{
    c->params += in * out + (bias ? out : 0);
    c->matmul_flops += 2 * t * in * out;
    c->other_flops += bias ? t * out : 0;
    c->weight_bytes += (in * out + (bias ? out : 0)) * wb;
    c->act_bytes += t * (in + out) * ab;
}

static void layernorm(struct lp_cost *c, double dim, double t, double wb, double ab)
{
    c->params += 2 * dim;
    c->other_flops += 5 * t * dim;
    c->weight_bytes += 2 * dim * wb;
    c->act_bytes += 2 * t * dim * ab;
}

static void rmsnorm(struct lp_cost *c, double dim, double t, double wb, double ab)
{
    c->params += dim;
    c->other_flops += 4 * t * dim;
    c->weight_bytes += dim * wb;
    c->act_bytes += 2 * t * dim * ab;
}

/* Adds learned rows (positions, queries, separators) read whole once per view. */
static void table(struct lp_cost *c, double elements, double wb)
{
    c->params += elements;
    c->weight_bytes += elements * wb;
}

/* The layers of one ViT block outside attention's core: LayerNorms, qkv and output
 * projections, the MLP and its activation (ACT FLOPs per element). */
static void vit_block(struct lp_cost *c, double width, double mlp, double act, double t,
                      double wb, double ab)
{
    layernorm(c, width, t, wb, ab);
    lin(c, width, 3 * width, 1, t, wb, ab);
    lin(c, width, width, 1, t, wb, ab);
    layernorm(c, width, t, wb, ab);
    lin(c, width, mlp, 1, t, wb, ab);
    lin(c, mlp, width, 1, t, wb, ab);
    c->other_flops += act * t * mlp;
}

/* Adds K times C, parameters included, to DST. */
static void add_times(struct lp_cost *dst, const struct lp_cost *c, double k)
{
    dst->params += k * c->params;
    dst->matmul_flops += k * c->matmul_flops;
    dst->other_flops += k * c->other_flops;
    dst->weight_bytes += k * c->weight_bytes;
    dst->act_bytes += k * c->act_bytes;
}

/* Global blocks that exist, each once (a parsed spec holds only those; a spec built by hand
 * may not). */
static int64_t sam_global_blocks(const struct lp_vision_spec *v)
{
    int64_t n = 0;
    for (int i = 0; i < v->n_sam_global && i < 16; i++) {
        int dup = 0;
        for (int k = 0; k < i; k++)
            dup |= v->sam_global[k] == v->sam_global[i];
        n += !dup && v->sam_global[i] >= 0 && v->sam_global[i] < v->sam_layers;
    }
    return n;
}

/* SAM on a view of SIDE pixels, with its neck and compressor (SIDE = 0: parameters only, at
 * the configured image size). Identical blocks are costed once and multiplied: the time does
 * not depend on the layer counts. */
static void sam_view(const struct lp_vision_spec *v, int64_t side, double wb, double ab,
                     struct lp_cost *sam)
{
    double w = (double)v->sam_width;
    double g = (double)((side ? side : v->sam_image) / v->sam_patch);
    double n = side ? g * g : 0; /* tokens: 0 leaves only the parameters */
    double g_cfg = (double)(v->sam_image / v->sam_patch);
    /* patch embedding, positions (a table at the configured size, interpolated to others) */
    lin(sam, 3.0 * (double)(v->sam_patch * v->sam_patch), w, 1, n, wb, ab);
    table(sam, g_cfg * g_cfg * w, wb);
    double win = (double)v->sam_window;
    double padded = ceil(g / win) * win;
    int64_t n_global = sam_global_blocks(v);
    for (int global = 0; global < 2; global++) {
        struct lp_cost blk = {0};
        double span = global ? g_cfg : win; /* relative-position tables: 2 * span - 1 rows */
        double head_dim = w / (double)v->sam_heads;
        table(&blk, 2 * (2 * span - 1) * head_dim, wb);
        vit_block(&blk, w, (double)v->sam_mlp, 8 /* GELU */, n, wb, ab);
        double queries = global ? n : padded * padded;
        double keys = global ? n : win * win; /* per query: its window, or everything */
        double rel = global ? g : win;
        blk.matmul_flops += 4 * w * queries * keys + 2 * w * queries * 2 * rel;
        blk.other_flops += 5 * (double)v->sam_heads * queries * keys;
        add_times(sam, &blk, (double)(global ? n_global : v->sam_layers - n_global));
    }
    /* neck and compressor (convolutions without bias; LayerNorm2d after each neck conv) */
    double nc = (double)v->neck_channels;
    lin(sam, w, nc, 0, n, wb, ab);
    layernorm(sam, nc, n, wb, ab);
    lin(sam, nc * 9, nc, 0, n, wb, ab);
    layernorm(sam, nc, n, wb, ab);
    lin(sam, nc * 9, (double)v->down1, 0, n / 4, wb, ab);
    lin(sam, (double)v->down1 * 9, (double)v->down2, 0, n / 16, wb, ab);
}

/* DeepSeek-OCR: CLIP-L on the compressed grid of N SAM tokens, with its class token */
static void clip_view(const struct lp_vision_spec *v, double n, double wb, double ab,
                      struct lp_cost *clip)
{
    double cw = (double)v->clip_width, t = n > 0 ? n + 1 : 0;
    double cgrid = (double)(v->clip_image / v->clip_patch);
    clip->params += cw + 3.0 * (double)(v->clip_patch * v->clip_patch) * cw + (cgrid * cgrid + 1) * cw;
    clip->weight_bytes += (cw + (cgrid * cgrid + 1) * cw) * wb; /* the conv stem is not used */
    layernorm(clip, cw, t, wb, ab);
    struct lp_cost blk = {0};
    vit_block(&blk, cw, (double)v->clip_mlp, 4 /* quick_gelu */, t, wb, ab);
    blk.matmul_flops += 4 * cw * t * t;
    blk.other_flops += 5 * (double)v->clip_heads * t * t;
    add_times(clip, &blk, (double)v->clip_layers);
}

/* DeepSeek-OCR-2: the Qwen2-style encoder over N SAM tokens and Q queries (N = 0: parameters
 * only). The SAM tokens attend one another (N^2 pairs), each query the SAM tokens and the
 * queries up to itself (Q N + Q(Q+1)/2): the pairs the mask allows, not the full square SDPA
 * may compute. */
static void encoder_view(const struct lp_vision_spec *v, double n, double q, double wb,
                         double ab, struct lp_cost *enc)
{
    double w = (double)v->enc_width, heads = (double)v->enc_heads, kvh = (double)v->enc_kv_heads;
    double hd = w / heads, mlp = (double)v->enc_mlp, t = n + q;
    double pairs = n * n + q * n + q * (q + 1) / 2;
    table(enc, (144.0 + 256.0) * w, 0); /* both query tables are weights; one is read */
    enc->weight_bytes += q * w * wb;
    struct lp_cost blk = {0};
    rmsnorm(&blk, w, t, wb, ab);
    lin(&blk, w, heads * hd, 1, t, wb, ab);
    lin(&blk, w, kvh * hd, 1, t, wb, ab);
    lin(&blk, w, kvh * hd, 1, t, wb, ab);
    lin(&blk, heads * hd, w, 0, t, wb, ab);
    blk.matmul_flops += 4 * heads * hd * pairs;
    blk.other_flops += 5 * heads * pairs;
    rmsnorm(&blk, w, t, wb, ab);
    lin(&blk, w, mlp, 0, t, wb, ab);
    lin(&blk, w, mlp, 0, t, wb, ab);
    lin(&blk, mlp, w, 0, t, wb, ab);
    blk.other_flops += 5 * t * mlp; /* SiLU and the gate's product */
    add_times(enc, &blk, (double)v->enc_layers);
    rmsnorm(enc, w, t, wb, ab);
}

/* One view of SIDE pixels through the whole tower and the projector (SIDE = 0: parameters
 * only); the decoder-side learned rows (newline, separator) are the projector's. */
static void encode_view(const struct lp_vision_spec *v, int64_t side, double wb, double ab,
                        struct lp_cost out[LP_MODULE_COUNT])
{
    sam_view(v, side, wb, ab, &out[LP_MODULE_VISION_SAM]);
    struct lp_cost *proj = &out[LP_MODULE_VISION_PROJ];
    if (v->kind == LP_VISION_KIND_DEEPSEEK_OCR2) {
        double n = side ? (double)ocr2_sam_tokens(v, side) : 0;
        double q = side ? (double)ocr2_queries(ocr2_sam_tokens(v, side)) : 0;
        encoder_view(v, n, q, wb, ab, &out[LP_MODULE_VISION_ENCODER]);
        lin(proj, (double)v->proj_in, (double)v->proj_out, 1, q, wb, ab);
        table(proj, (double)v->proj_out, 0); /* the view separator: one row, once per image */
        return;
    }
    double g = (double)((side ? side : v->sam_image) / v->sam_patch);
    double n = side ? g * g / 16 : 0;
    clip_view(v, n, wb, ab, &out[LP_MODULE_VISION_CLIP]);
    lin(proj, (double)v->proj_in, (double)v->proj_out, 1, n, wb, ab);
    table(proj, 2 * (double)v->proj_out, wb); /* image newline and view separator */
}

void lp_vision_params(const struct lp_model *m, struct lp_params *p)
{
    if (m->vision.kind == LP_VISION_KIND_NONE)
        return;
    struct lp_cost c[LP_MODULE_COUNT];
    memset(c, 0, sizeof c);
    encode_view(&m->vision, 0, 1, 1, c);
    for (int mod = LP_MODULE_VISION_SAM; mod <= LP_MODULE_VISION_PROJ; mod++) {
        p->per_module[mod] = c[mod].params;
        p->vision += c[mod].params;
    }
}

static void add_scaled(struct lp_cost *dst, const struct lp_cost *c, double k)
{
    dst->matmul_flops += k * c->matmul_flops;
    dst->other_flops += k * c->other_flops;
    dst->weight_bytes += k * c->weight_bytes;
    dst->act_bytes += k * c->act_bytes;
}

enum lp_status lp_vision_analyze(const struct lp_model *m, const struct lp_workload *w,
                                 double wb, double ab, struct lp_model_result *r, char *err,
                                 size_t errlen)
{
    if (m->vision.kind == LP_VISION_KIND_NONE || w->vision_mode == LP_VISION_MODE_NONE)
        return LP_OK;
    int ocr2 = m->vision.kind == LP_VISION_KIND_DEEPSEEK_OCR2;
    if (ocr2 && w->vision_mode != LP_VISION_MODE_BASE && w->vision_mode != LP_VISION_MODE_GUNDAM) {
        snprintf(err, errlen, "DeepSeek-OCR-2 reads a page as a 1024-pixel global view (vision "
                              "mode base), with local 768-pixel crops in gundam mode (--tiles "
                              "WxH), not in %s mode", lp_vision_mode_name(w->vision_mode));
        return LP_ERR_ARG;
    }
    int64_t tiles = 0;
    if (w->vision_mode == LP_VISION_MODE_GUNDAM) {
        /* each side first: their product must not overflow */
        int sides_ok = w->tiles_w >= 1 && w->tiles_w <= 9 && w->tiles_h >= 1 && w->tiles_h <= 9;
        tiles = sides_ok ? w->tiles_w * w->tiles_h : 0;
        if (tiles < 2 || tiles > 9) {
            snprintf(err, errlen, "Gundam mode takes 2 to 9 tiles in all (--tiles WxH), not %lldx%lld",
                     (long long)w->tiles_w, (long long)w->tiles_h);
            return LP_ERR_ARG;
        }
    }
    struct lp_cost *out = r->stage[LP_MODEL_STAGE_VISION];
    double b = (double)w->batch;
    /* one image per sequence: weights are read once per view, activations per token */
    int gundam = w->vision_mode == LP_VISION_MODE_GUNDAM;
    int64_t views[2] = {gundam ? 1024 : view_side(w->vision_mode),
                        gundam ? (ocr2 ? 768 : 640) : 0};
    double counts[2] = {1, (double)tiles};
    for (int i = 0; i < 2; i++) {
        if (!views[i] || counts[i] == 0)
            continue;
        struct lp_cost c[LP_MODULE_COUNT];
        memset(c, 0, sizeof c);
        encode_view(&m->vision, views[i], wb, ab, c);
        for (int mod = LP_MODULE_VISION_SAM; mod <= LP_MODULE_VISION_PROJ; mod++)
            add_scaled(&out[mod], &c[mod], b * counts[i]);
    }
    r->vision_tokens = lp_vision_slots(&m->vision, w->vision_mode, w->tiles_w, w->tiles_h);
    return LP_OK;
}
