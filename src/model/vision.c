/* DeepSeek-OCR's vision encoder ("DeepEncoder"): SAM-ViT-B over 16x16 patches with windowed
 * attention (14x14 windows, global attention at the listed blocks, decomposed relative
 * positions), a neck (1x1 then 3x3 conv to 256 channels) and a 16x compressor (two stride-2
 * 3x3 convs to 1024 channels); CLIP-L run on those features as its patch embeddings (its own
 * conv stem is skipped), with a class token; [CLIP tokens without CLS | SAM tokens] (2048
 * channels) projected to the decoder's width. Token counts per mode (docs/model.md):
 * a view of S pixels gives h = ceil(S/64) and h^2 image tokens, placed in h(h+1) + 1 decoder
 * slots (a newline per row, one view separator). */
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

int64_t lp_vision_slots(enum lp_vision_mode mode, int64_t tiles_w, int64_t tiles_h)
{
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

/* One view of SIDE pixels through SAM, CLIP and the projector (SIDE = 0: parameters only,
 * at the configured image size). Identical blocks are costed once and multiplied: the time
 * does not depend on the layer counts. */
static void encode_view(const struct lp_vision_spec *v, int64_t side, double wb, double ab,
                        struct lp_cost *sam, struct lp_cost *clip, struct lp_cost *proj)
{
    double w = (double)v->sam_width;
    double g = (double)((side ? side : v->sam_image) / v->sam_patch);
    double n = side ? g * g : 0; /* tokens: 0 leaves only the parameters */
    double g_cfg = (double)(v->sam_image / v->sam_patch);
    /* patch embedding, positions (a 64 x 64 table at 1024, interpolated to other sizes) */
    lin(sam, 3.0 * (double)(v->sam_patch * v->sam_patch), w, 1, n, wb, ab);
    sam->params += g_cfg * g_cfg * w;
    sam->weight_bytes += g_cfg * g_cfg * w * wb;
    double win = (double)v->sam_window;
    double padded = ceil(g / win) * win;
    int64_t n_global = sam_global_blocks(v);
    for (int global = 0; global < 2; global++) {
        struct lp_cost blk = {0};
        double span = global ? g_cfg : win; /* relative-position tables: 2 * span - 1 rows */
        double head_dim = w / (double)v->sam_heads;
        blk.params += 2 * (2 * span - 1) * head_dim;
        blk.weight_bytes += 2 * (2 * span - 1) * head_dim * wb;
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
    /* CLIP-L on the compressed grid, with its class token */
    double cw = (double)v->clip_width, t = side ? n / 16 + 1 : 0;
    double cgrid = (double)(v->clip_image / v->clip_patch);
    clip->params += cw + 3.0 * (double)(v->clip_patch * v->clip_patch) * cw + (cgrid * cgrid + 1) * cw;
    clip->weight_bytes += (cw + (cgrid * cgrid + 1) * cw) * wb; /* the conv stem is not used */
    layernorm(clip, cw, t, wb, ab);
    struct lp_cost blk = {0};
    vit_block(&blk, cw, (double)v->clip_mlp, 4 /* quick_gelu */, t, wb, ab);
    blk.matmul_flops += 4 * cw * t * t;
    blk.other_flops += 5 * (double)v->clip_heads * t * t;
    add_times(clip, &blk, (double)v->clip_layers);
    /* projector, and the two learned rows (image newline, view separator) */
    lin(proj, (double)v->proj_in, (double)v->proj_out, 1, side ? n / 16 : 0, wb, ab);
    proj->params += 2 * (double)v->proj_out;
    proj->weight_bytes += 2 * (double)v->proj_out * wb;
}

void lp_vision_params(const struct lp_model *m, struct lp_params *p)
{
    if (m->vision.kind == LP_VISION_NONE)
        return;
    struct lp_cost sam = {0}, clip = {0}, proj = {0};
    encode_view(&m->vision, 0, 1, 1, &sam, &clip, &proj);
    p->per_module[LP_MOD_VISION_SAM] = sam.params;
    p->per_module[LP_MOD_VISION_CLIP] = clip.params;
    p->per_module[LP_MOD_VISION_PROJ] = proj.params;
    p->vision = sam.params + clip.params + proj.params;
}

static void add_scaled(struct lp_cost *dst, const struct lp_cost *c, double k)
{
    dst->matmul_flops += k * c->matmul_flops;
    dst->other_flops += k * c->other_flops;
    dst->weight_bytes += k * c->weight_bytes;
    dst->act_bytes += k * c->act_bytes;
}

int lp_vision_analyze(const struct lp_model *m, const struct lp_workload *w, double wb, double ab,
                      struct lp_model_result *r, char *err, size_t errlen)
{
    if (m->vision.kind == LP_VISION_NONE || w->vision_mode == LP_VISION_MODE_NONE)
        return 0;
    int64_t tiles = 0;
    if (w->vision_mode == LP_VISION_MODE_GUNDAM) {
        /* each side first: their product must not overflow */
        int sides_ok = w->tiles_w >= 1 && w->tiles_w <= 9 && w->tiles_h >= 1 && w->tiles_h <= 9;
        tiles = sides_ok ? w->tiles_w * w->tiles_h : 0;
        if (tiles < 2 || tiles > 9) {
            snprintf(err, errlen, "Gundam mode takes 2 to 9 tiles in all (--tiles WxH), not %lldx%lld",
                     (long long)w->tiles_w, (long long)w->tiles_h);
            return -1;
        }
    }
    struct lp_cost *out = r->stage[LP_STAGE_VISION];
    double b = (double)w->batch;
    /* one image per sequence: weights are read once per view, activations per token */
    int64_t views[2] = {w->vision_mode == LP_VISION_MODE_GUNDAM ? 1024 : view_side(w->vision_mode),
                        w->vision_mode == LP_VISION_MODE_GUNDAM ? 640 : 0};
    double counts[2] = {1, (double)tiles};
    for (int i = 0; i < 2; i++) {
        if (!views[i] || counts[i] == 0)
            continue;
        struct lp_cost sam = {0}, clip = {0}, proj = {0};
        encode_view(&m->vision, views[i], wb, ab, &sam, &clip, &proj);
        add_scaled(&out[LP_MOD_VISION_SAM], &sam, b * counts[i]);
        add_scaled(&out[LP_MOD_VISION_CLIP], &clip, b * counts[i]);
        add_scaled(&out[LP_MOD_VISION_PROJ], &proj, b * counts[i]);
    }
    r->vision_tokens = lp_vision_slots(w->vision_mode, w->tiles_w, w->tiles_h);
    return 0;
}
