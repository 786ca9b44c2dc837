/* The analytic model against published counts and hand-computed values for small configs of
 * every architecture family, the FLOP and byte conventions, bad configs, the bounds on every
 * size (configs and workloads), layer grouping, and safetensors headers checked exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <math.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>

#include "llmprof/model.h"

static const char *configs = LP_CONFIGS; /* tests/configs, set by CMake */

static void load(const char *file, struct lp_model *m)
{
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/%s", configs, file);
    if (lp_model_load(path, m, err, sizeof err) != 0)
        fail_msg("%s", err);
}

static void parse(const char *json, struct lp_model *m)
{
    char err[512];
    if (lp_model_parse(json, strlen(json), "test.json", m, err, sizeof err) != 0)
        fail_msg("%s", err);
}

static struct lp_model_result result;

static const struct lp_model_result *analyze(const struct lp_model *m, const struct lp_workload *w)
{
    char err[256];
    if (lp_model_analyze(m, w, &result, err, sizeof err) != 0)
        fail_msg("%s", err);
    return &result;
}

static struct lp_workload workload(int64_t batch, int64_t prompt, int64_t gen)
{
    struct lp_workload w;
    lp_workload_defaults(&w);
    w.batch = batch;
    w.prompt = prompt;
    w.generated = gen;
    return w;
}

#define EXACT(a, b) assert_true((double)(a) == (double)(b))

static void test_published_counts(void **state)
{
    (void)state;
    struct lp_model m;
    struct lp_workload w = workload(1, 16, 2);
    load("llama-2-7b.json", &m);
    EXACT(analyze(&m, &w)->params.total, 6738415616.0); /* Meta's published count */
    load("gpt2.json", &m);
    EXACT(analyze(&m, &w)->params.total, 124439808.0);
    load("gpt2-xl.json", &m);
    EXACT(analyze(&m, &w)->params.total, 1557611200.0);
    load("mistral-7b.json", &m);
    EXACT(analyze(&m, &w)->params.total, 7241732096.0);
    load("mixtral-8x7b.json", &m);
    EXACT(analyze(&m, &w)->params.total, 46702792704.0);
    load("deepseek-ocr.json", &m);
    w.vision_mode = LP_VISION_MODE_BASE;
    const struct lp_model_result *r = analyze(&m, &w);
    EXACT(r->params.total, 3336106240.0); /* the weights of DeepSeek-OCR */
    EXACT(r->params.vision, 95569152.0 + 303177728.0 + 2625280.0); /* SAM, CLIP, projector */
    load("deepseek-v3.json", &m);
    r = analyze(&m, &w);
    assert_true(r->params.total > 0.995 * 671e9 && r->params.total < 1.005 * 671e9);
    assert_true(r->params.active > 0.98 * 37e9 && r->params.active < 1.02 * 37e9);
    assert_true(r->params.mtp > 13e9 && r->params.mtp < 15e9);
}

/* The DeepSeek-OCR runner's models as PyTorch counted them on the H200 (examples/deepseek-ocr:
 * v1 assembled from transformers' parts, OCR-2 transformers' own; run.py writes the counts
 * into each repeat's timer.json) against this analysis of the same config.json, part by
 * part: every part equal. */
static void torch_params_equal(const char *config, const char *timer, const char *encoder_key,
                               int encoder_module)
{
    struct lp_model m;
    load(config, &m);
    struct lp_workload w = workload(1, 16, 2);
    const struct lp_params *p = &analyze(&m, &w)->params;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", LP_FIXTURES, timer);
    json_error_t e;
    json_t *t = json_load_file(path, 0, &e);
    if (!t)
        fail_msg("%s: %s", path, e.text);
    json_t *q = json_object_get(t, "params");
#define TORCH(key) json_number_value(json_object_get(q, key))
    assert_true(TORCH("total") > 3e9);
    EXACT(p->total, TORCH("total"));
    EXACT(p->per_module[LP_MODULE_VISION_SAM], TORCH("vision: SAM-ViT + compressor"));
    EXACT(p->per_module[encoder_module], TORCH(encoder_key));
    EXACT(p->per_module[LP_MODULE_VISION_PROJ], TORCH("vision: projector"));
    EXACT(p->per_module[LP_MODULE_EMBED], TORCH("embedding"));
    EXACT(p->per_module[LP_MODULE_LM_HEAD], TORCH("lm_head"));
    double decoder = 0;
    for (int k = LP_MODULE_ATTN_PROJ; k <= LP_MODULE_NORMS; k++)
        decoder += p->per_module[k];
    EXACT(decoder, TORCH("decoder"));
#undef TORCH
    json_decref(t);
}

static void test_deepseek_ocr_torch_params(void **state)
{
    (void)state;
    torch_params_equal("deepseek-ocr.json", "deepseek-ocr-repeats/repeat-1/timer.json",
                       "vision: CLIP-L", LP_MODULE_VISION_CLIP);
    torch_params_equal("../../examples/deepseek-ocr2/config.json",
                       "deepseek-ocr2-repeats/repeat-1/timer.json",
                       "vision: Qwen2 encoder + queries", LP_MODULE_VISION_ENCODER);
}

/* A tiny Llama: every number by hand. H=8, I=16, L=2, heads 2, kv 1 (head_dim 4), V=10. */
static const char *tiny_llama = "{\"model_type\":\"llama\",\"hidden_size\":8,\"intermediate_size\":16,"
                                "\"num_hidden_layers\":2,\"num_attention_heads\":2,"
                                "\"num_key_value_heads\":1,\"vocab_size\":10}";

static void test_llama_by_hand(void **state)
{
    (void)state;
    struct lp_model m;
    parse(tiny_llama, &m);
    struct lp_workload w = workload(1, 4, 3);
    const struct lp_model_result *r = analyze(&m, &w);
    /* per layer: q 8*8, k 8*4, v 8*4, o 8*8 = 192; mlp 3*8*16 = 384; norms 2*8 */
    EXACT(r->params.per_module[LP_MODULE_ATTN_PROJ], 2 * 192);
    EXACT(r->params.per_module[LP_MODULE_MLP], 2 * 384);
    EXACT(r->params.per_module[LP_MODULE_NORMS], 2 * 16 + 8);
    EXACT(r->params.total, 80 + 2 * (192 + 384 + 16) + 8 + 80);
    EXACT(r->params.active, r->params.total - 80); /* without the embedding table */
    /* prefill of 4: linear 2*T*params, attention core causal 4*5/2 = 10 pairs per head:
     * 2 heads * 2*(4+4) FLOPs * 10 pairs * 2 layers; lm_head on the last token only */
    const struct lp_cost *pre = r->stage[LP_MODEL_STAGE_PREFILL];
    EXACT(pre[LP_MODULE_ATTN_PROJ].matmul_flops, 2.0 * 4 * 2 * 192);
    EXACT(pre[LP_MODULE_MLP].matmul_flops, 2.0 * 4 * 2 * 384);
    EXACT(pre[LP_MODULE_ATTN_CORE].matmul_flops, 2.0 * 16 * 10 * 2);
    EXACT(pre[LP_MODULE_LM_HEAD].matmul_flops, 2.0 * 1 * 80);
    /* KV per token: 2 layers * 2 (K and V) * 1 kv head * 4 * 2 bytes = 32 bytes (GQA) */
    EXACT(r->kv_bytes_per_token, 32);
    /* end of request: 4 prompt + 2 more = 6 tokens cached */
    EXACT(r->kv_bytes_end, 6 * 32);
    /* decode step at context C = 4 + 3/2 = 5: core 4*heads*head_dim*C per layer */
    EXACT(r->decode_context, 5);
    EXACT(r->stage[LP_MODEL_STAGE_DECODE_STEP][LP_MODULE_ATTN_CORE].matmul_flops, 4.0 * 2 * 4 * 5 * 2);
    /* decode reads every weight once: (192 + 384) * 2 layers + norms + lm_head, bf16 */
    EXACT(r->stage[LP_MODEL_STAGE_DECODE_STEP][LP_MODULE_MLP].weight_bytes, 2.0 * 384 * 2);
    /* the request: prefill, then 2 steps attending 5 and 6 keys */
    EXACT(r->stage[LP_MODEL_STAGE_REQUEST][LP_MODULE_ATTN_CORE].matmul_flops,
          2.0 * 16 * 10 * 2 + 4.0 * 2 * 4 * (5 + 6) * 2);
    /* every prompt token's logits (HF's default) */
    w.prefill_logits_all = 1;
    r = analyze(&m, &w);
    EXACT(r->stage[LP_MODEL_STAGE_PREFILL][LP_MODULE_LM_HEAD].matmul_flops, 2.0 * 4 * 80);
}

static void test_sliding_window_and_qwen(void **state)
{
    (void)state;
    struct lp_model m;
    parse("{\"model_type\":\"mistral\",\"hidden_size\":8,\"intermediate_size\":16,"
          "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"num_key_value_heads\":2,"
          "\"vocab_size\":10,\"sliding_window\":3}", &m);
    struct lp_workload w = workload(1, 6, 1);
    const struct lp_model_result *r = analyze(&m, &w);
    /* keys per query 1,2,3,3,3,3 = 15 pairs (not 21) */
    EXACT(r->stage[LP_MODEL_STAGE_PREFILL][LP_MODULE_ATTN_CORE].matmul_flops, 2.0 * 2 * (4 + 4) * 15);
    EXACT(r->kv_bytes_end, 3.0 * 2 * 2 * 4 * 2); /* the window holds 3 tokens */
    /* Qwen2: q/k/v biases, tied; Qwen3: q/k norms, explicit head_dim */
    parse("{\"model_type\":\"qwen2\",\"hidden_size\":8,\"intermediate_size\":16,"
          "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"num_key_value_heads\":1,"
          "\"vocab_size\":10,\"tie_word_embeddings\":true}", &m);
    r = analyze(&m, &w);
    EXACT(r->params.per_module[LP_MODULE_ATTN_PROJ], 192 + 8 + 4 + 4);
    EXACT(r->params.per_module[LP_MODULE_LM_HEAD], 0);
    EXACT(r->params.total, 80 + 208 + 384 + 16 + 8);
    EXACT(r->params.active, r->params.total); /* tied: the table is the lm_head */
    parse("{\"model_type\":\"qwen3\",\"hidden_size\":8,\"intermediate_size\":16,"
          "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"num_key_value_heads\":1,"
          "\"head_dim\":6,\"vocab_size\":10}", &m);
    r = analyze(&m, &w);
    EXACT(r->params.per_module[LP_MODULE_ATTN_PROJ], 8 * 12 + 8 * 6 + 8 * 6 + 12 * 8);
    EXACT(r->params.per_module[LP_MODULE_NORMS], 6 + 6 + 16 + 8);
}

static void test_gpt2_by_hand(void **state)
{
    (void)state;
    struct lp_model m;
    parse("{\"model_type\":\"gpt2\",\"n_embd\":8,\"n_layer\":1,\"n_head\":2,\"n_positions\":16,"
          "\"vocab_size\":10}", &m);
    struct lp_workload w = workload(1, 4, 2);
    const struct lp_model_result *r = analyze(&m, &w);
    /* wte 80 + wpe 128; ln 2*16; attn 8*24+24 + 8*8+8; mlp 8*32+32 + 32*8+8; ln_f 16; tied */
    EXACT(r->params.total, 80 + 128 + 32 + 216 + 72 + 288 + 264 + 16);
}

static void test_moe_by_hand(void **state)
{
    (void)state;
    struct lp_model m;
    parse("{\"model_type\":\"mixtral\",\"hidden_size\":8,\"intermediate_size\":4,"
          "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"num_key_value_heads\":2,"
          "\"vocab_size\":10,\"num_local_experts\":4,\"num_experts_per_tok\":2}", &m);
    struct lp_workload w = workload(1, 8, 2);
    const struct lp_model_result *r = analyze(&m, &w);
    double expert = 3 * 8 * 4;
    EXACT(r->params.per_module[LP_MODULE_EXPERTS], 4 * expert);
    EXACT(r->params.per_module[LP_MODULE_ROUTER], 8 * 4);
    EXACT(r->params.total - r->params.active_with_embedding, 2 * expert); /* 2 of 4 idle */
    /* a decode step of one token touches E(1-(1-k/E)^1) = k = 2 experts */
    EXACT(r->stage[LP_MODEL_STAGE_DECODE_STEP][LP_MODULE_EXPERTS].weight_bytes, 2 * expert * 2);
    /* FLOPs: top-k experts per token, 2 FLOPs per multiply-add */
    EXACT(r->stage[LP_MODEL_STAGE_DECODE_STEP][LP_MODULE_EXPERTS].matmul_flops, 2.0 * 2 * expert);
    /* batch 4 in decode: 4 * (1 - (1/2)^4) = 3.75 experts expected */
    w.batch = 4;
    r = analyze(&m, &w);
    EXACT(r->stage[LP_MODEL_STAGE_DECODE_STEP][LP_MODULE_EXPERTS].weight_bytes, 3.75 * expert * 2);
}

static void test_mla_and_deepseek_layers(void **state)
{
    (void)state;
    struct lp_model m;
    load("deepseek-v3.json", &m);
    struct lp_workload w = workload(1, 16, 2);
    const struct lp_model_result *r = analyze(&m, &w);
    /* MLA: latent cache of 512 + 64 elements per token and layer */
    EXACT(r->kv_bytes_per_token, 61.0 * 576 * 2);
    assert_int_equal(m.n_groups, 2); /* 3 dense layers, then 58 MoE layers */
    assert_int_equal(m.groups[0].count, 3);
    assert_int_equal(m.groups[1].mlp.kind, LP_MLP_KIND_MOE);
    parse("{\"model_type\":\"deepseek_v2\",\"hidden_size\":16,\"intermediate_size\":32,"
          "\"moe_intermediate_size\":4,\"num_hidden_layers\":4,\"num_attention_heads\":2,"
          "\"n_routed_experts\":4,\"n_shared_experts\":1,\"num_experts_per_tok\":2,"
          "\"first_k_dense_replace\":1,\"moe_layer_freq\":2,\"kv_lora_rank\":8,"
          "\"q_lora_rank\":null,\"qk_nope_head_dim\":4,\"qk_rope_head_dim\":2,\"v_head_dim\":4,"
          "\"vocab_size\":10}", &m);
    r = analyze(&m, &w);
    /* layers 0 dense (first_k), 1 dense (1 % 2), 2 MoE, 3 dense: two kinds */
    assert_int_equal(m.n_groups, 2);
    assert_int_equal(m.groups[0].count, 3);
    assert_int_equal(m.groups[1].count, 1);
    assert_int_equal(m.last_group, 0);
    /* attention per layer: q 16*2*6, kv_a 16*(8+2), kv_b 8*2*(4+4), o 2*4*16 */
    EXACT(r->params.per_module[LP_MODULE_ATTN_PROJ], 4.0 * (192 + 160 + 128 + 128));
}

static void test_deepseek_ocr_vision(void **state)
{
    (void)state;
    struct lp_model m;
    load("deepseek-ocr.json", &m);
    static const struct {
        enum lp_vision_mode mode;
        int64_t slots;
    } modes[] = {{LP_VISION_MODE_TINY, 73}, {LP_VISION_MODE_SMALL, 111},
                 {LP_VISION_MODE_BASE, 273}, {LP_VISION_MODE_LARGE, 421}};
    for (size_t i = 0; i < 4; i++) {
        struct lp_workload w = workload(1, 10, 2);
        w.vision_mode = modes[i].mode;
        const struct lp_model_result *r = analyze(&m, &w);
        assert_int_equal(r->vision_tokens, modes[i].slots);
        assert_int_equal(r->prefill_tokens, 10 + modes[i].slots);
        assert_true(r->total[LP_MODEL_STAGE_VISION].matmul_flops > 0);
    }
    struct lp_workload w = workload(1, 10, 2);
    w.vision_mode = LP_VISION_MODE_GUNDAM;
    w.tiles_w = 3;
    w.tiles_h = 2;
    const struct lp_model_result *r = analyze(&m, &w);
    assert_int_equal(r->vision_tokens, 272 + 20 * 31 + 1);
    /* Gundam = one Base view + 6 Small tiles: more vision work than Base alone */
    double gundam = r->total[LP_MODEL_STAGE_VISION].matmul_flops;
    w.vision_mode = LP_VISION_MODE_BASE;
    double base = analyze(&m, &w)->total[LP_MODEL_STAGE_VISION].matmul_flops;
    w.vision_mode = LP_VISION_MODE_SMALL;
    double small = analyze(&m, &w)->total[LP_MODEL_STAGE_VISION].matmul_flops;
    assert_true(gundam > base + 5.9 * small && gundam < base + 6.1 * small);
    char err[256];
    w.vision_mode = LP_VISION_MODE_GUNDAM;
    w.tiles_w = 5;
    w.tiles_h = 2;
    assert_int_equal(lp_model_analyze(&m, &w, &result, err, sizeof err), LP_ERR_ARG);
    assert_non_null(strstr(err, "2 to 9 tiles"));
}

/* Every module's parameters equal HF transformers 5.17's own count for the same config
 * (tests/configs/hf: counted by tests/gpu/hf_params.py), for DeepSeek-OCR-2 (the issue's
 * config and a variant), Qwen2-MoE and Qwen3-MoE (published shapes and mixed layouts). */
static void test_hf_counts(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/hf/params.json", configs);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    assert_non_null(root);
    json_t *models = json_object_get(root, "models"), *x;
    const char *name;
    size_t n = 0;
    json_object_foreach(models, name, x) {
        struct lp_model m;
        char file[256];
        snprintf(file, sizeof file, "hf/%s", json_string_value(json_object_get(x, "config")));
        load(file, &m);
        struct lp_params p;
        struct lp_workload w = workload(1, 16, 4);
        p = analyze(&m, &w)->params;
        print_message("%s: %.0f parameters (HF %lld)\n", name, p.total,
                      (long long)json_integer_value(json_object_get(x, "total")));
        EXACT(p.total, json_integer_value(json_object_get(x, "total")));
        json_t *parts = json_object_get(x, "parts");
        size_t seen = 0;
        for (int mod = 0; mod < LP_MODULE_COUNT; mod++) {
            json_t *v = json_object_get(parts, lp_module_name(mod));
            if (!v) {
                EXACT(p.per_module[mod], 0);
                continue;
            }
            if (p.per_module[mod] != (double)json_integer_value(v))
                fail_msg("%s: %s %.0f, HF %lld", name, lp_module_name(mod), p.per_module[mod],
                         (long long)json_integer_value(v));
            seen++;
        }
        assert_int_equal(seen, json_object_size(parts)); /* every HF part has its module */
        n++;
    }
    assert_int_equal(n, 6);
    json_decref(root);
}

/* DeepSeek-OCR-2: tokens per page and per crop mode as the processor counts them (256 for
 * the 1024 global view, 144 per 768 crop, one separator; the harness measured 257 and 1,121),
 * its layout (one dense layer, then MoE), the vision work, and the modes it has not */
static void test_deepseek_ocr2(void **state)
{
    (void)state;
    struct lp_model m;
    load("../../examples/deepseek-ocr2/config.json", &m);
    assert_int_equal(m.vision.kind, LP_VISION_KIND_DEEPSEEK_OCR2);
    assert_int_equal(m.n_groups, 2);
    assert_int_equal(m.groups[0].mlp.kind, LP_MLP_KIND_GATED);
    assert_int_equal(m.groups[0].count, 1);
    assert_int_equal(m.groups[1].mlp.kind, LP_MLP_KIND_MOE);
    assert_int_equal(m.groups[1].count, 11);
    assert_int_equal(m.groups[1].attn.head_dim, 128);
    struct lp_workload w = workload(1, 33, 16);
    const struct lp_model_result *r = analyze(&m, &w);
    assert_int_equal(r->vision_tokens, 257);
    assert_int_equal(r->prefill_tokens, 290);
    /* SAM at 1024: 4,096 tokens through 12 blocks, four of them global; by hand, its linear
     * layers alone: 2 x 4096 x (768 x 2304 + 768 x 768 + 2 x 768 x 3072) x 12 */
    double sam = r->stage[LP_MODEL_STAGE_VISION][LP_MODULE_VISION_SAM].matmul_flops;
    double sam_linear = 2.0 * 4096 * (768 * 2304 + 768 * 768 + 2 * 768 * 3072) * 12;
    assert_true(sam > sam_linear && sam < 1.5 * sam_linear);
    /* the encoder over 256 SAM tokens and 256 queries: linear layers by hand, then attention
     * over 256^2 + 256 x 256 + 256 x 257 / 2 pairs */
    double enc = r->stage[LP_MODEL_STAGE_VISION][LP_MODULE_VISION_ENCODER].matmul_flops;
    double enc_linear = 2.0 * 512 * (896 * 896 * 2 + 2 * 896 * 128 + 3 * 896 * 4864) * 24;
    double pairs = 256.0 * 256 + 256.0 * 256 + 256.0 * 257 / 2;
    assert_true(fabs(enc - enc_linear - 4.0 * 896 * pairs * 24) < 1e-9 * enc);
    EXACT(r->stage[LP_MODEL_STAGE_VISION][LP_MODULE_VISION_PROJ].matmul_flops, 2.0 * 256 * 896 * 1280);
    EXACT(r->stage[LP_MODEL_STAGE_VISION][LP_MODULE_VISION_CLIP].matmul_flops, 0);
    double base = r->total[LP_MODEL_STAGE_VISION].matmul_flops;
    w.vision_mode = LP_VISION_MODE_GUNDAM;
    w.tiles_w = 3;
    w.tiles_h = 2;
    r = analyze(&m, &w);
    assert_int_equal(r->vision_tokens, 256 + 6 * 144 + 1);
    assert_true(r->total[LP_MODEL_STAGE_VISION].matmul_flops > base + 6 * 0.5 * base);
    char err[256];
    w.vision_mode = LP_VISION_MODE_SMALL;
    assert_int_equal(lp_model_analyze(&m, &w, &result, err, sizeof err), LP_ERR_ARG);
    assert_non_null(strstr(err, "DeepSeek-OCR-2"));
    /* bad configs name the key */
    static const struct {
        const char *json, *expect;
    } bad[] = {
        {"{\"model_type\":\"deepseek_ocr2\",\"vision_config\":{\"encoder_config\":{}}}",
         "\"text_config\" is missing"},
        {"{\"model_type\":\"deepseek_ocr2\",\"text_config\":{\"hidden_size\":64,"
         "\"num_hidden_layers\":2,\"vocab_size\":10,\"num_attention_heads\":4,"
         "\"intermediate_size\":8,\"n_routed_experts\":4,\"num_experts_per_tok\":2,"
         "\"moe_intermediate_size\":8,\"mlp_layer_types\":[\"dense\"]},"
         "\"vision_config\":{\"encoder_config\":{\"hidden_size\":896}}}",
         "text_config.mlp_layer_types\" must be an array of num_hidden_layers (2)"},
        {"{\"model_type\":\"deepseek_ocr2\",\"text_config\":{\"hidden_size\":64,"
         "\"num_hidden_layers\":1,\"vocab_size\":10,\"num_attention_heads\":4,"
         "\"intermediate_size\":8,\"mlp_layer_types\":[\"sparse\"]},"
         "\"vision_config\":{\"encoder_config\":{\"hidden_size\":896}}}",
         "no routed experts"},
        {"{\"model_type\":\"deepseek_ocr2\",\"text_config\":{\"hidden_size\":64,"
         "\"num_hidden_layers\":1,\"vocab_size\":10,\"num_attention_heads\":4,"
         "\"intermediate_size\":8,\"mlp_layer_types\":[\"dense\"]},"
         "\"vision_config\":{\"encoder_config\":{\"hidden_size\":1024,\"num_attention_heads\":16}}}",
         "downsample_channels\"[1] (896) must be"},
        {"{\"model_type\":\"deepseek_ocr2\",\"text_config\":{\"hidden_size\":64,"
         "\"num_hidden_layers\":1,\"vocab_size\":10,\"num_attention_heads\":4,"
         "\"intermediate_size\":8,\"mlp_layer_types\":[\"dense\"]},\"vision_config\":{"
         "\"sam_config\":{\"use_rel_pos\":false},\"encoder_config\":{\"hidden_size\":896,"
         "\"num_attention_heads\":14}}}",
         "sam_config.use_rel_pos\" is false"},
        {"{\"model_type\":\"qwen2_moe\",\"hidden_size\":64,\"num_hidden_layers\":2,"
         "\"vocab_size\":10,\"num_attention_heads\":4,\"intermediate_size\":8,\"num_experts\":4,"
         "\"num_experts_per_tok\":2,\"moe_intermediate_size\":8}",
         "\"shared_expert_intermediate_size\" is missing"},
        {"{\"model_type\":\"qwen3_moe\",\"hidden_size\":64,\"num_hidden_layers\":2,"
         "\"vocab_size\":10,\"num_attention_heads\":4,\"intermediate_size\":8,\"num_experts\":4,"
         "\"num_experts_per_tok\":8,\"moe_intermediate_size\":8}",
         "larger than \"num_experts\""},
        {"{\"model_type\":\"qwen3_moe\",\"hidden_size\":64,\"num_hidden_layers\":2,"
         "\"vocab_size\":10,\"num_attention_heads\":4,\"intermediate_size\":8,\"num_experts\":4,"
         "\"num_experts_per_tok\":2,\"moe_intermediate_size\":8,\"mlp_only_layers\":[0,-1]}",
         "\"mlp_only_layers\"[1] must be a layer index"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct lp_model b;
        int rc = lp_model_parse(bad[i].json, strlen(bad[i].json), "c.json", &b, err, sizeof err);
        if (rc == 0 || !strstr(err, bad[i].expect))
            fail_msg("config %zu: rc %d, '%s' (expected '%s')", i, rc, err, bad[i].expect);
    }
}

/* The model layer's returns: enum lp_status, the "none found" of a weights scan apart */
static void test_status_returns(void **state)
{
    (void)state;
    char dir[] = "/tmp/lp_test_status_XXXXXX", err[512] = "";
    assert_non_null(mkdtemp(dir));
    struct lp_weights w;
    int found = -1;
    assert_int_equal(lp_weights_scan(dir, NULL, &w, &found, err, sizeof err), LP_OK);
    assert_int_equal(found, 0);
    assert_int_equal(rmdir(dir), 0);
    enum lp_dtype d;
    assert_int_equal(lp_dtype_parse("FP8", &d), LP_OK);
    assert_int_equal(d, LP_DTYPE_FP8);
    assert_int_equal(lp_dtype_parse("fp4", &d), LP_ERR_ARG);
    assert_int_equal(lp_dtype_check_compute(LP_DTYPE_FP8, err, sizeof err), LP_OK);
    assert_int_equal(lp_dtype_check_compute(LP_DTYPE_INT4, err, sizeof err), LP_ERR_ARG);
    assert_string_equal(err, "int4 is not a compute format; int4 is weight-only");
    /* one list of families: what the parser takes is what it names */
    char types[256];
    lp_model_types(types, sizeof types);
    assert_non_null(strstr(types, "llama, mistral, "));
    assert_non_null(strstr(types, "deepseek_ocr2 (DeepSeek-OCR-2)"));
    struct lp_model m;
    const char *unknown = "{\"model_type\":\"bert\"}";
    assert_int_equal(lp_model_parse(unknown, strlen(unknown), "c.json", &m, err, sizeof err),
                     LP_ERR_FORMAT);
    assert_non_null(strstr(err, types));
}

static void test_roofline(void **state)
{
    (void)state;
    struct lp_gpu_table t;
    char err[256];
    assert_int_equal(lp_gpu_table_load(&t, NULL, err, sizeof err), 0);
    const struct lp_gpu *h200 = lp_gpu_find(&t, "NVIDIA H200");
    assert_non_null(h200);
    assert_string_equal(h200->name, "H200");
    assert_true(h200->tflops[LP_DTYPE_BF16] == 989 && h200->mem_bw_gbs == 4800);
    assert_string_equal(lp_gpu_find(&t, "NVIDIA L40S")->name, "L40S");
    assert_string_equal(lp_gpu_find(&t, "NVIDIA L4")->name, "L4");
    assert_string_equal(lp_gpu_find(&t, "NVIDIA A100-SXM4-40GB")->name, "A100 SXM 40GB");
    assert_string_equal(lp_gpu_find(&t, "h100 pcie")->name, "H100 PCIe");
    assert_null(lp_gpu_find(&t, "NVIDIA GeForce GTX 480"));
    /* the user's overrides: the activation dtype's peak and the bandwidth, nothing else */
    struct lp_gpu o = *h200;
    lp_gpu_override(&o, LP_DTYPE_FP8, 1500, 0);
    assert_true(o.tflops[LP_DTYPE_FP8] == 1500 && o.tflops[LP_DTYPE_BF16] == 989 &&
                o.mem_bw_gbs == 4800);
    lp_gpu_override(&o, LP_DTYPE_BF16, 0, 3000);
    assert_true(o.tflops[LP_DTYPE_BF16] == 989 && o.mem_bw_gbs == 3000);
    struct lp_cost c = {.matmul_flops = 989e12, .weight_bytes = 4.8e12};
    struct lp_bound b;
    lp_roofline(&c, h200, LP_DTYPE_BF16, &b);
    assert_true(b.compute_s > 0.999 && b.compute_s < 1.001);
    assert_true(b.memory_s > 0.999 && b.memory_s < 1.001);
    c.weight_bytes *= 2;
    lp_roofline(&c, h200, LP_DTYPE_BF16, &b);
    assert_true(b.memory_bound && b.bound_s > 1.99);
    /* decode of Llama-2-7B at batch 1 is memory bound: TPOT >= 13.5 GB / 4.8 TB/s */
    struct lp_model m;
    load("llama-2-7b.json", &m);
    struct lp_workload w = workload(1, 512, 128);
    const struct lp_model_result *r = analyze(&m, &w);
    struct lp_model_bounds mb;
    lp_model_bounds_compute(r, &w, h200, &mb);
    assert_true(mb.decode_mean.memory_bound);
    assert_true(mb.tpot_s > 13.4e9 / 4.8e12 && mb.tpot_s < 14.2e9 / 4.8e12);
    assert_true(mb.stage[LP_MODEL_STAGE_PREFILL].bound_s > 0);
    lp_gpu_table_free(&t);

    /* a user's file: its rows come first, a known name is replaced, bad rows name the line */
    char file[] = "/tmp/lp_test_hw_XXXXXX";
    int fd = mkstemp(file);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("# mine\nH200\tH200\t60\t400\t800\t800\t1600\t1600\t0\t141\t4300\n"
          "MI300X\tMI300X\t163\t653\t1307\t1307\t2615\t2615\t0\t192\t5300\n", f);
    fclose(f);
    assert_int_equal(lp_gpu_table_load(&t, file, err, sizeof err), 0);
    assert_true(lp_gpu_find(&t, "NVIDIA H200")->tflops[LP_DTYPE_BF16] == 800);
    assert_true(lp_gpu_find(&t, "AMD Instinct MI300X")->mem_bw_gbs == 5300);
    assert_non_null(lp_gpu_find(&t, "H100 SXM"));
    lp_gpu_table_free(&t);
    f = fopen(file, "w");
    fputs("H200\tH200\t60\tfast\t800\t800\t1600\t1600\t0\t141\t4300\n", f);
    fclose(f);
    assert_int_equal(lp_gpu_table_load(&t, file, err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, ":1: column 4"));
    f = fopen(file, "w");
    fputs("H200\tH200\t60\n", f);
    fclose(f);
    assert_int_equal(lp_gpu_table_load(&t, file, err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, "expected 11"));
    unlink(file);
}

/* A DeepSeek-OCR model directory with its real tensor shapes (2710 tensors) in two shards
 * and an index, headers only: every group must match the analytic count exactly. */
static json_t *shard[2];
static double offset[2];

static void tensor(int s, json_t *index, const char *name, int n, const int64_t *dims)
{
    json_t *shape = json_array();
    double numel = 1;
    for (int i = 0; i < n; i++) {
        json_array_append_new(shape, json_integer(dims[i]));
        numel *= (double)dims[i];
    }
    json_t *t = json_pack("{s:s, s:o, s:[I,I]}", "dtype", "BF16", "shape", shape, "data_offsets",
                          (json_int_t)offset[s], (json_int_t)(offset[s] + 2 * numel));
    offset[s] += 2 * numel;
    json_object_set_new(shard[s], name, t);
    json_object_set_new(json_object_get(index, "weight_map"), name,
                        json_string(s ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors"));
}

#define T(s, name, ...)                                                        \
    do {                                                                       \
        const int64_t d_[] = {__VA_ARGS__};                                   \
        tensor(s, index, name, (int)(sizeof d_ / sizeof *d_), d_);            \
    } while (0)

/* A safetensors file of header H and DATA bytes of data (a hole: sparse, nothing written). */
static void write_shard(const char *dir, const char *file, json_t *h, double data)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    char *text = json_dumps(h, JSON_COMPACT);
    uint64_t n = strlen(text);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (int i = 0; i < 8; i++)
        fputc((int)(n >> (8 * i) & 0xff), f);
    fwrite(text, 1, n, f);
    fflush(f);
    assert_int_equal(ftruncate(fileno(f), (off_t)(8 + n + (uint64_t)data)), 0);
    fclose(f);
    free(text);
}

static void test_safetensors_headers(void **state)
{
    (void)state;
    char dir[] = "/tmp/lp_test_weights_XXXXXX";
    assert_non_null(mkdtemp(dir));
    json_t *index = json_pack("{s:{}}", "weight_map");
    shard[0] = json_object();
    shard[1] = json_object();
    offset[0] = offset[1] = 0;
    char n[128];
    T(0, "model.sam_model.pos_embed", 1, 64, 64, 768);
    T(0, "model.sam_model.patch_embed.proj.weight", 768, 3, 16, 16);
    T(0, "model.sam_model.patch_embed.proj.bias", 768);
    for (int l = 0; l < 12; l++) {
        int64_t rows = (l == 2 || l == 5 || l == 8 || l == 11) ? 127 : 27;
        static const char *const leaves[] = {"norm1.weight", "norm1.bias", "attn.qkv.bias",
                                             "attn.proj.bias", "norm2.weight", "norm2.bias",
                                             "mlp.lin2.bias"};
        static const int64_t sizes[] = {768, 768, 2304, 768, 768, 768, 768};
        for (int k = 0; k < 7; k++) {
            snprintf(n, sizeof n, "model.sam_model.blocks.%d.%s", l, leaves[k]);
            T(0, n, sizes[k]);
        }
        snprintf(n, sizeof n, "model.sam_model.blocks.%d.attn.rel_pos_h", l); T(0, n, rows, 64);
        snprintf(n, sizeof n, "model.sam_model.blocks.%d.attn.rel_pos_w", l); T(0, n, rows, 64);
        snprintf(n, sizeof n, "model.sam_model.blocks.%d.attn.qkv.weight", l); T(0, n, 2304, 768);
        snprintf(n, sizeof n, "model.sam_model.blocks.%d.attn.proj.weight", l); T(0, n, 768, 768);
        snprintf(n, sizeof n, "model.sam_model.blocks.%d.mlp.lin1.weight", l); T(0, n, 3072, 768);
        snprintf(n, sizeof n, "model.sam_model.blocks.%d.mlp.lin1.bias", l); T(0, n, 3072);
        snprintf(n, sizeof n, "model.sam_model.blocks.%d.mlp.lin2.weight", l); T(0, n, 768, 3072);
    }
    T(0, "model.sam_model.neck.0.weight", 256, 768, 1, 1);
    T(0, "model.sam_model.neck.1.weight", 256);
    T(0, "model.sam_model.neck.1.bias", 256);
    T(0, "model.sam_model.neck.2.weight", 256, 256, 3, 3);
    T(0, "model.sam_model.neck.3.weight", 256);
    T(0, "model.sam_model.neck.3.bias", 256);
    T(0, "model.sam_model.net_2.weight", 512, 256, 3, 3);
    T(0, "model.sam_model.net_3.weight", 1024, 512, 3, 3);
    T(0, "model.vision_model.embeddings.class_embedding", 1024);
    T(0, "model.vision_model.embeddings.patch_embedding.weight", 1024, 3, 14, 14);
    T(0, "model.vision_model.embeddings.position_embedding.weight", 257, 1024);
    T(0, "model.vision_model.pre_layrnorm.weight", 1024);
    T(0, "model.vision_model.pre_layrnorm.bias", 1024);
    for (int l = 0; l < 24; l++) {
        static const char *const leaves[] = {"layer_norm1.weight", "layer_norm1.bias",
                                             "self_attn.qkv_proj.bias", "self_attn.out_proj.bias",
                                             "layer_norm2.weight", "layer_norm2.bias",
                                             "mlp.fc1.bias", "mlp.fc2.bias"};
        static const int64_t sizes[] = {1024, 1024, 3072, 1024, 1024, 1024, 4096, 1024};
        for (int k = 0; k < 8; k++) {
            snprintf(n, sizeof n, "model.vision_model.transformer.layers.%d.%s", l, leaves[k]);
            T(0, n, sizes[k]);
        }
        snprintf(n, sizeof n, "model.vision_model.transformer.layers.%d.self_attn.qkv_proj.weight", l); T(0, n, 3072, 1024);
        snprintf(n, sizeof n, "model.vision_model.transformer.layers.%d.self_attn.out_proj.weight", l); T(0, n, 1024, 1024);
        snprintf(n, sizeof n, "model.vision_model.transformer.layers.%d.mlp.fc1.weight", l); T(0, n, 4096, 1024);
        snprintf(n, sizeof n, "model.vision_model.transformer.layers.%d.mlp.fc2.weight", l); T(0, n, 1024, 4096);
    }
    T(0, "model.projector.layers.weight", 1280, 2048);
    T(0, "model.projector.layers.bias", 1280);
    T(0, "model.image_newline", 1280);
    T(0, "model.view_seperator", 1280);
    T(1, "model.embed_tokens.weight", 129280, 1280);
    for (int l = 0; l < 12; l++) {
        snprintf(n, sizeof n, "model.layers.%d.input_layernorm.weight", l); T(1, n, 1280);
        snprintf(n, sizeof n, "model.layers.%d.post_attention_layernorm.weight", l); T(1, n, 1280);
        static const char *const proj[] = {"q", "k", "v", "o"};
        for (int k = 0; k < 4; k++) {
            snprintf(n, sizeof n, "model.layers.%d.self_attn.%s_proj.weight", l, proj[k]);
            T(1, n, 1280, 1280);
        }
        if (l == 0) {
            T(1, "model.layers.0.mlp.gate_proj.weight", 6848, 1280);
            T(1, "model.layers.0.mlp.up_proj.weight", 6848, 1280);
            T(1, "model.layers.0.mlp.down_proj.weight", 1280, 6848);
            continue;
        }
        snprintf(n, sizeof n, "model.layers.%d.mlp.gate.weight", l); T(1, n, 64, 1280);
        for (int e = 0; e < 64; e++) {
            snprintf(n, sizeof n, "model.layers.%d.mlp.experts.%d.gate_proj.weight", l, e); T(1, n, 896, 1280);
            snprintf(n, sizeof n, "model.layers.%d.mlp.experts.%d.up_proj.weight", l, e); T(1, n, 896, 1280);
            snprintf(n, sizeof n, "model.layers.%d.mlp.experts.%d.down_proj.weight", l, e); T(1, n, 1280, 896);
        }
        snprintf(n, sizeof n, "model.layers.%d.mlp.shared_experts.gate_proj.weight", l); T(1, n, 1792, 1280);
        snprintf(n, sizeof n, "model.layers.%d.mlp.shared_experts.up_proj.weight", l); T(1, n, 1792, 1280);
        snprintf(n, sizeof n, "model.layers.%d.mlp.shared_experts.down_proj.weight", l); T(1, n, 1280, 1792);
    }
    T(1, "model.norm.weight", 1280);
    T(1, "lm_head.weight", 129280, 1280);
    write_shard(dir, "model-00001-of-00002.safetensors", shard[0], offset[0]);
    write_shard(dir, "model-00002-of-00002.safetensors", shard[1], offset[1]);
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    json_dump_file(index, path, 0);
    snprintf(path, sizeof path, "%s/config.json", dir);
    char src[512];
    snprintf(src, sizeof src, "%s/deepseek-ocr.json", configs);
    json_t *cfg = json_load_file(src, 0, NULL);
    json_dump_file(cfg, path, 0);

    struct lp_model m;
    char err[512];
    assert_int_equal(lp_model_load(dir, &m, err, sizeof err), 0);
    struct lp_workload w = workload(1, 16, 2);
    const struct lp_model_result *r = analyze(&m, &w);
    struct lp_weights wt;
    int found = 0;
    assert_int_equal(lp_weights_scan(dir, &m, &wt, &found, err, sizeof err), LP_OK);
    assert_int_equal(found, 1);
    assert_int_equal(wt.files, 2);
    assert_int_equal(wt.tensors, 2710); /* as the real checkpoint declares */
    EXACT(wt.params, 3336106240.0);
    EXACT(wt.bytes, 6672212480.0);
    assert_int_equal(wt.n_dtypes, 1);
    assert_string_equal(wt.by_dtype[0].name, "BF16");
    for (int g = 0; g < LP_WEIGHT_GROUP_COUNT; g++)
        if (wt.by_group[g] != lp_weights_analytic(&r->params, (enum lp_weight_group)g))
            fail_msg("group %s: weights %.0f, analytic %.0f", lp_weight_group_name(g),
                     wt.by_group[g], lp_weights_analytic(&r->params, (enum lp_weight_group)g));
    /* a header whose offsets do not fit its shape is refused with its name */
    const char *bad = "{\"x.weight\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,6]}}";
    struct lp_weights one = {0};
    assert_int_equal(lp_safetensors_header_parse(bad, strlen(bad), "bad.safetensors", NULL, &one,
                                                 err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, "x.weight"));
    json_decref(shard[0]);
    json_decref(shard[1]);
    json_decref(index);
    json_decref(cfg);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void expect_error(const char *json, const char *needle)
{
    struct lp_model m;
    char err[512] = "";
    assert_int_equal(lp_model_parse(json, strlen(json), "cfg.json", &m, err, sizeof err), LP_ERR_FORMAT);
    if (!strstr(err, needle))
        fail_msg("error '%s' does not mention '%s'", err, needle);
    assert_non_null(strstr(err, "cfg.json"));
}

static void test_bad_configs(void **state)
{
    (void)state;
    expect_error("{\"model_type\": \"llama\",", "not valid JSON");
    expect_error("[1, 2]", "must be a JSON object");
    expect_error("{\"hidden_size\": 8}", "\"model_type\" is missing");
    expect_error("{\"model_type\": \"bert\"}", "not supported; supported: llama");
    expect_error("{\"model_type\": \"llama\", \"hidden_size\": 8}", "\"num_hidden_layers\" is missing");
    expect_error("{\"model_type\":\"llama\",\"hidden_size\":\"8\",\"intermediate_size\":16,"
                 "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"vocab_size\":10}",
                 "\"hidden_size\" must be an integer, not a string");
    expect_error("{\"model_type\":\"llama\",\"hidden_size\":0,\"intermediate_size\":16,"
                 "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"vocab_size\":10}",
                 "\"hidden_size\" is 0; it must be at least 1");
    expect_error("{\"model_type\":\"llama\",\"hidden_size\":8,\"intermediate_size\":-16,"
                 "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"vocab_size\":10}",
                 "\"intermediate_size\" is -16");
    expect_error("{\"model_type\":\"llama\",\"hidden_size\":10,\"intermediate_size\":16,"
                 "\"num_hidden_layers\":1,\"num_attention_heads\":4,\"vocab_size\":10}",
                 "\"hidden_size\" (10) is not a multiple of \"num_attention_heads\" (4)");
    expect_error("{\"model_type\":\"llama\",\"hidden_size\":8,\"intermediate_size\":16,"
                 "\"num_hidden_layers\":1,\"num_attention_heads\":4,\"num_key_value_heads\":3,"
                 "\"vocab_size\":10}", "not a multiple of \"num_key_value_heads\" (3)");
    expect_error("{\"model_type\":\"mixtral\",\"hidden_size\":8,\"intermediate_size\":16,"
                 "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"vocab_size\":10,"
                 "\"num_local_experts\":4,\"num_experts_per_tok\":5}",
                 "\"num_experts_per_tok\" (5) is larger than \"num_local_experts\" (4)");
    expect_error("{\"model_type\":\"deepseek_vl_v2\",\"language_config\":{\"hidden_size\":8}}",
                 "\"language_config.num_hidden_layers\" is missing");
    expect_error("{\"model_type\":\"llama\",\"hidden_size\":8,\"intermediate_size\":16,"
                 "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"vocab_size\":10,"
                 "\"tie_word_embeddings\":\"yes\"}", "must be true or false");
    char err[512];
    struct lp_model m;
    assert_int_equal(lp_model_load("/nonexistent/config.json", &m, err, sizeof err), LP_ERR_IO);
    assert_non_null(strstr(err, "/nonexistent/config.json"));
    /* a workload beyond the model's positions */
    parse(tiny_llama, &m);
    m.max_positions = 8;
    struct lp_workload w = workload(1, 6, 4);
    assert_int_equal(lp_model_analyze(&m, &w, &result, err, sizeof err), LP_ERR_ARG);
    assert_non_null(strstr(err, "max_position_embeddings"));
}

/* ---- bounds: every size has a limit; past it a clear error, at it finite numbers, fast ---- */

/* CPU seconds since START (clock()). */
static double cpu_since(clock_t start) { return (double)(clock() - start) / CLOCKS_PER_SEC; }

/* BASE (JSON) with each "a.b.c": value pair of SETS set (objects made as needed), dumped. */
static char *config_with(const char *base, int n, const char *const *keys, const json_int_t *vals)
{
    json_t *root = json_loads(base, 0, NULL);
    assert_non_null(root);
    for (int i = 0; i < n; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s", keys[i]);
        json_t *obj = root;
        char *save = NULL, *part = strtok_r(path, ".", &save), *next;
        while ((next = strtok_r(NULL, ".", &save))) {
            json_t *child = json_object_get(obj, part);
            if (!child) {
                child = json_object();
                json_object_set_new(obj, part, child);
            }
            obj = child;
            part = next;
        }
        json_object_set_new(obj, part, json_integer(vals[i]));
    }
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return text;
}

static const char *base_llama = "{\"model_type\":\"llama\",\"hidden_size\":8,\"intermediate_size\":16,"
                                "\"num_hidden_layers\":2,\"num_attention_heads\":2,"
                                "\"num_key_value_heads\":1,\"head_dim\":4,\"vocab_size\":10}";
static const char *base_mistral = "{\"model_type\":\"mistral\",\"hidden_size\":8,\"intermediate_size\":16,"
                                  "\"num_hidden_layers\":2,\"num_attention_heads\":2,"
                                  "\"vocab_size\":10,\"sliding_window\":4}";
static const char *base_qwen = "{\"model_type\":\"qwen2\",\"hidden_size\":8,\"intermediate_size\":16,"
                               "\"num_hidden_layers\":2,\"num_attention_heads\":2,"
                               "\"vocab_size\":10,\"sliding_window\":4,\"use_sliding_window\":true,"
                               "\"max_window_layers\":1}";
static const char *base_mixtral = "{\"model_type\":\"mixtral\",\"hidden_size\":8,\"intermediate_size\":4,"
                                  "\"num_hidden_layers\":1,\"num_attention_heads\":2,"
                                  "\"vocab_size\":10,\"num_local_experts\":4,\"num_experts_per_tok\":2}";
static const char *base_gpt2 = "{\"model_type\":\"gpt2\",\"n_embd\":8,\"n_layer\":1,\"n_head\":2,"
                               "\"n_positions\":16,\"vocab_size\":10}";
static const char *base_v3 = "{\"model_type\":\"deepseek_v3\",\"hidden_size\":16,\"intermediate_size\":32,"
                             "\"moe_intermediate_size\":4,\"num_hidden_layers\":4,"
                             "\"num_attention_heads\":2,\"n_routed_experts\":4,\"n_shared_experts\":1,"
                             "\"num_experts_per_tok\":2,\"first_k_dense_replace\":1,"
                             "\"moe_layer_freq\":1,\"kv_lora_rank\":8,\"q_lora_rank\":8,"
                             "\"qk_nope_head_dim\":4,\"qk_rope_head_dim\":2,\"v_head_dim\":4,"
                             "\"num_nextn_predict_layers\":1,\"vocab_size\":10,"
                             "\"topk_method\":\"noaux_tc\"}";
static const char *base_ocr; /* tests/configs/deepseek-ocr.json, compact */
static char *base_ocr_text;

#define SAM "vision_config.width.sam_vit_b."
#define CLIP "vision_config.width.clip-l-14-224."

static const struct bound_case {
    const char **base;
    const char *key;
    json_int_t limit;
    const char *also_key; /* set to ALSO when testing the limit itself (divisibility); for
                             DeepSeek-OCR the SAM compressor follows CLIP's width */
    json_int_t also;
} bound_cases[] = {
    {&base_llama, "hidden_size", 1 << 20, NULL, 0},
    {&base_llama, "num_hidden_layers", 16384, NULL, 0},
    {&base_llama, "intermediate_size", 1 << 22, NULL, 0},
    {&base_llama, "vocab_size", 1 << 24, NULL, 0},
    {&base_llama, "num_attention_heads", 1 << 16, NULL, 0},
    {&base_llama, "num_key_value_heads", 1 << 16, "num_attention_heads", 1 << 16},
    {&base_llama, "head_dim", 1 << 16, NULL, 0},
    {&base_llama, "max_position_embeddings", 1 << 30, NULL, 0},
    {&base_mistral, "sliding_window", 1 << 30, NULL, 0},
    {&base_qwen, "max_window_layers", 16384, NULL, 0},
    {&base_mixtral, "num_local_experts", 1 << 16, NULL, 0},
    {&base_mixtral, "num_experts_per_tok", 1 << 16, "num_local_experts", 1 << 16},
    {&base_gpt2, "n_embd", 1 << 20, NULL, 0},
    {&base_gpt2, "n_layer", 16384, NULL, 0},
    {&base_gpt2, "n_head", 1 << 16, "n_embd", 1 << 20},
    {&base_gpt2, "n_positions", 1 << 30, NULL, 0},
    {&base_gpt2, "n_inner", 1 << 22, NULL, 0},
    {&base_gpt2, "vocab_size", 1 << 24, NULL, 0},
    {&base_v3, "hidden_size", 1 << 20, NULL, 0},
    {&base_v3, "num_hidden_layers", 16384, NULL, 0},
    {&base_v3, "num_attention_heads", 1 << 16, NULL, 0},
    {&base_v3, "q_lora_rank", 1 << 20, NULL, 0},
    {&base_v3, "kv_lora_rank", 1 << 20, NULL, 0},
    {&base_v3, "qk_nope_head_dim", 1 << 16, NULL, 0},
    {&base_v3, "qk_rope_head_dim", 1 << 16, NULL, 0},
    {&base_v3, "v_head_dim", 1 << 16, NULL, 0},
    {&base_v3, "intermediate_size", 1 << 22, NULL, 0},
    {&base_v3, "moe_intermediate_size", 1 << 22, NULL, 0},
    {&base_v3, "n_routed_experts", 1 << 16, NULL, 0},
    {&base_v3, "num_experts_per_tok", 1 << 16, "n_routed_experts", 1 << 16},
    {&base_v3, "n_shared_experts", 1024, NULL, 0},
    {&base_v3, "first_k_dense_replace", 16384, NULL, 0},
    {&base_v3, "moe_layer_freq", 16384, NULL, 0},
    {&base_v3, "num_nextn_predict_layers", 16384, NULL, 0},
    {&base_v3, "max_position_embeddings", 1 << 30, NULL, 0},
    {&base_ocr, "language_config.num_hidden_layers", 16384, NULL, 0},
    {&base_ocr, "vision_config.image_size", 1 << 16, NULL, 0},
    {&base_ocr, SAM "width", 1 << 20, SAM "heads", 16},
    {&base_ocr, SAM "layers", 16384, NULL, 0},
    {&base_ocr, SAM "heads", 1 << 16, SAM "width", 1 << 16},
    {&base_ocr, CLIP "width", 1 << 20, NULL, 0},
    {&base_ocr, CLIP "layers", 16384, NULL, 0},
    {&base_ocr, CLIP "heads", 1 << 16, CLIP "width", 1 << 16},
    {&base_ocr, CLIP "image_size", 1 << 16, NULL, 0},
    {&base_ocr, CLIP "patch_size", 1 << 16, CLIP "image_size", 1 << 16},
    {&base_ocr, "projector_config.input_dim", 1 << 20, NULL, 0},
};

/* Every cost and count of R is finite and none negative. */
static void assert_finite(const struct lp_model_result *r)
{
    const double *p = (const double *)&r->params;
    for (size_t i = 0; i < sizeof r->params / sizeof(double); i++)
        assert_true(isfinite(p[i]) && p[i] >= 0);
    for (int s = 0; s < LP_MODEL_STAGE_COUNT; s++) {
        const double *c = (const double *)&r->total[s];
        for (size_t i = 0; i < sizeof r->total[s] / sizeof(double); i++)
            if (!isfinite(c[i]) || c[i] < 0)
                fail_msg("stage %s: field %zu is %g", lp_model_stage_name(s), i, c[i]);
    }
    assert_true(isfinite(r->kv_bytes_per_token) && isfinite(r->kv_bytes_end));
}

static void test_bounded_fields(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bound_cases / sizeof *bound_cases; i++) {
        const struct bound_case *bc = &bound_cases[i];
        /* one past the limit: an error naming the file, the key, the value and the limit */
        char *text = config_with(*bc->base, 1, &bc->key, (json_int_t[]){bc->limit + 1});
        struct lp_model m;
        char err[512] = "", needle[256];
        if (lp_model_parse(text, strlen(text), "cfg.json", &m, err, sizeof err) == 0)
            fail_msg("%s = %lld accepted", bc->key, (long long)bc->limit + 1);
        const char *leaf = strrchr(bc->key, '.') ? strrchr(bc->key, '.') + 1 : bc->key;
        snprintf(needle, sizeof needle, "%s\" is %lld, past llmprof's limit of %lld", leaf,
                 (long long)bc->limit + 1, (long long)bc->limit);
        if (!strstr(err, needle) || strncmp(err, "cfg.json: ", 10) != 0)
            fail_msg("%s: error '%s' lacks '%s'", bc->key, err, needle);
        free(text);
        /* at the limit: accepted, analysed quickly, finite */
        const char *keys[2] = {bc->key, bc->also_key};
        json_int_t vals[2] = {bc->limit, bc->also};
        text = config_with(*bc->base, bc->also_key ? 2 : 1, keys, vals);
        if (*bc->base == base_ocr) {
            /* the compressor's output must be CLIP's width, whatever the case sets it to */
            json_t *root = json_loads(text, 0, NULL);
            json_t *width = json_object_get(json_object_get(root, "vision_config"), "width");
            json_t *clip_width = json_object_get(json_object_get(width, "clip-l-14-224"), "width");
            json_object_set_new(json_object_get(width, "sam_vit_b"), "downsample_channels",
                                json_pack("[I,O]", (json_int_t)512, clip_width));
            free(text);
            text = json_dumps(root, JSON_COMPACT);
            json_decref(root);
        }
        if (lp_model_parse(text, strlen(text), "cfg.json", &m, err, sizeof err) != 0)
            fail_msg("%s = %lld refused: %s", bc->key, (long long)bc->limit, err);
        free(text);
        struct lp_workload w = workload(1, 8, 4);
        clock_t t0 = clock();
        assert_finite(analyze(&m, &w));
        assert_true(cpu_since(t0) < 0.5);
    }
}

/* Every size at its limit at once describes ~3e20 parameters: refused as a whole (counts
 * past 2^53 are neither exact in a double nor JSON integers). The largest workload on models
 * just under that bound: finite numbers, fast. */
static void test_all_at_limits(void **state)
{
    (void)state;
    static const char *const llama_keys[] = {"hidden_size", "num_hidden_layers",
                                             "intermediate_size", "vocab_size",
                                             "num_attention_heads", "num_key_value_heads",
                                             "head_dim"};
    const json_int_t at_limits[] = {1 << 20, 16384, 1 << 22, 1 << 24, 1 << 16, 1 << 16, 1 << 16};
    char *text = config_with(base_llama, 7, llama_keys, at_limits);
    expect_error(text, "parameters, past llmprof's limit of 2^53 (9007199254740992)");
    free(text);
    /* 16384 layers of H = 2^16 (2^50 parameters); 16384 MoE layers of 2^16 experts of all
     * routed (3 x 2^50), head_dim and MLA dims at their limits */
    const json_int_t llama_big[] = {1 << 16, 16384, 1 << 18, 1 << 24, 1 << 10, 1 << 10, 1 << 6};
    static const char *const v3_keys[] = {"hidden_size", "num_hidden_layers", "intermediate_size",
                                          "moe_intermediate_size", "vocab_size",
                                          "num_attention_heads", "q_lora_rank", "kv_lora_rank",
                                          "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
                                          "n_routed_experts", "num_experts_per_tok",
                                          "n_shared_experts", "num_nextn_predict_layers"};
    const json_int_t v3_big[] = {1 << 14, 16384, 1 << 16, 1 << 6, 1 << 24, 1, 1 << 10, 1 << 10,
                                 1 << 16, 1 << 16, 1 << 16, 1 << 16, 1 << 16, 1, 1};
    struct {
        const char *base;
        int n;
        const char *const *keys;
        const json_int_t *vals;
    } cfgs[] = {{base_llama, 7, llama_keys, llama_big}, {base_v3, 15, v3_keys, v3_big}};
    for (int k = 0; k < 2; k++) {
        text = config_with(cfgs[k].base, cfgs[k].n, cfgs[k].keys, cfgs[k].vals);
        struct lp_model m;
        parse(text, &m);
        free(text);
        struct lp_workload w = workload(LP_MODEL_MAX_BATCH, LP_MODEL_MAX_TOKENS,
                                        LP_MODEL_MAX_TOKENS);
        w.decode_context = LP_MODEL_MAX_TOKENS;
        clock_t t0 = clock();
        const struct lp_model_result *r = analyze(&m, &w);
        assert_true(cpu_since(t0) < 0.5);
        assert_finite(r);
        assert_true(r->params.total > 0x1p49 && r->params.total + r->params.mtp <= 0x1p53);
        assert_true(r->total[LP_MODEL_STAGE_REQUEST].matmul_flops > 1e30);
        EXACT(r->prefill_tokens, LP_MODEL_MAX_TOKENS);
    }
    /* DeepSeek-V3's shape at the bounds (tests/configs/edge-deepseek-v3-at-bounds.json):
     * 16384 layers of 2^16 experts, all routed, 2^16-wide heads, the largest vocabulary */
    struct lp_model e;
    load("edge-deepseek-v3-at-bounds.json", &e);
    struct lp_workload big = workload(LP_MODEL_MAX_BATCH, LP_MODEL_MAX_TOKENS / 2,
                                      LP_MODEL_MAX_TOKENS / 2);
    clock_t t1 = clock();
    const struct lp_model_result *re = analyze(&e, &big);
    assert_true(cpu_since(t1) < 0.5);
    assert_finite(re);
    EXACT(re->params.total, 3435414978117632.0);
    /* the vision encoder with 16384 blocks each, Gundam with 9 tiles, the largest batch */
    json_t *root = json_loads(base_ocr, 0, NULL);
    json_t *width = json_object_get(json_object_get(root, "vision_config"), "width");
    json_t *sam = json_object_get(width, "sam_vit_b"), *clip = json_object_get(width, "clip-l-14-224");
    json_object_set_new(json_object_get(root, "vision_config"), "image_size", json_integer(1 << 16));
    json_object_set_new(sam, "width", json_integer(1 << 14));
    json_object_set_new(sam, "heads", json_integer(1 << 14));
    json_object_set_new(sam, "layers", json_integer(16384));
    json_object_set_new(sam, "downsample_channels", json_pack("[i,i]", 1 << 14, 1 << 14));
    json_object_set_new(clip, "width", json_integer(1 << 14));
    json_object_set_new(clip, "heads", json_integer(1 << 14));
    json_object_set_new(clip, "layers", json_integer(16384));
    json_object_set_new(clip, "image_size", json_integer(1 << 16));
    json_object_set_new(clip, "patch_size", json_integer(16));
    text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    struct lp_model m;
    parse(text, &m);
    free(text);
    struct lp_workload w = workload(LP_MODEL_MAX_BATCH, 100, 100);
    w.vision_mode = LP_VISION_MODE_GUNDAM;
    w.tiles_w = 3;
    w.tiles_h = 3;
    clock_t t0 = clock();
    const struct lp_model_result *r = analyze(&m, &w);
    assert_true(cpu_since(t0) < 0.5);
    assert_finite(r);
    assert_true(r->params.vision > 0x1p45);
}

/* The inputs: 2^40 decoder layers (the DeepSeek parser looped per layer) and 2^31
 * vision layers (82 s, then 27 P parameters): clear errors, at once. */
static void test_huge_layer_counts(void **state)
{
    (void)state;
    alarm(60); /* a loop over 2^40 layers must fail the test, not hang it */
    static const char *const bases[] = {"llama", "deepseek"};
    for (int i = 0; i < 2; i++) {
        const char *key = "num_hidden_layers";
        char *text = config_with(i ? base_v3 : base_llama, 1, &key,
                                 (json_int_t[]){(json_int_t)1 << 40});
        clock_t t0 = clock();
        expect_error(text, "\"num_hidden_layers\" is 1099511627776, past llmprof's limit of 16384");
        if (cpu_since(t0) > 0.5)
            fail_msg("%s: %.1f s to refuse 2^40 layers", bases[i], cpu_since(t0));
        free(text);
    }
    const char *key = SAM "layers";
    char *text = config_with(base_ocr, 1, &key, (json_int_t[]){(json_int_t)1 << 31});
    expect_error(text, "\"vision_config.width.sam_vit_b.layers\" is 2147483648, past llmprof's "
                       "limit of 16384");
    free(text);
    /* the same as files (tests/configs/bad-*.json), through lp_model_load */
    static const struct {
        const char *file, *needle;
    } files[] = {{"bad-deepseek-v3-layers-2p40.json",
                  "bad-deepseek-v3-layers-2p40.json: key \"num_hidden_layers\" is 1099511627776"},
                 {"bad-deepseek-ocr-sam-layers-2p31.json",
                  "bad-deepseek-ocr-sam-layers-2p31.json: key "
                  "\"vision_config.width.sam_vit_b.layers\" is 2147483648"}};
    for (int i = 0; i < 2; i++) {
        char path[512], err[512] = "";
        struct lp_model m;
        snprintf(path, sizeof path, "%s/%s", configs, files[i].file);
        assert_int_equal(lp_model_load(path, &m, err, sizeof err), LP_ERR_FORMAT);
        if (!strstr(err, files[i].needle))
            fail_msg("%s: error '%s'", files[i].file, err);
    }
    key = CLIP "layers";
    text = config_with(base_ocr, 1, &key, (json_int_t[]){(json_int_t)1 << 31});
    expect_error(text, "\"vision_config.width.clip-l-14-224.layers\" is 2147483648");
    free(text);
    alarm(0);
}

/* Identical layers are costed once: DeepSeek's dense and MoE layers counted in closed form
 * equal a per-layer walk, and the analysis takes no longer for 2^40 layers than for 4. */
static void test_grouped_layers(void **state)
{
    (void)state;
    for (int layers = 1; layers <= 13; layers++) {
        for (int first = 0; first <= 6; first++) {
            for (int freq = 1; freq <= 5; freq++) {
                static const char *const keys[] = {"num_hidden_layers", "first_k_dense_replace",
                                                   "moe_layer_freq"};
                char *text = config_with(base_v3, 3, keys, (json_int_t[]){layers, first, freq});
                struct lp_model m;
                parse(text, &m);
                free(text);
                int64_t moe = 0, first_moe = -1, last_moe = 0;
                for (int l = 0; l < layers; l++) {
                    int is_moe = l >= first && l % freq == 0;
                    moe += is_moe;
                    if (first_moe < 0)
                        first_moe = is_moe;
                    last_moe = is_moe;
                }
                int64_t counts[2] = {layers - moe, moe}; /* dense, MoE */
                int g = 0;
                for (int k = 0; k < 2; k++) {
                    int kind_moe = k == 0 ? (int)first_moe : !first_moe;
                    if (counts[kind_moe] == 0)
                        continue;
                    assert_true(g < m.n_groups);
                    assert_int_equal(m.groups[g].mlp.kind == LP_MLP_KIND_MOE, kind_moe);
                    assert_int_equal(m.groups[g].count, counts[kind_moe]);
                    g++;
                }
                assert_int_equal(m.n_groups, g);
                assert_int_equal(m.groups[m.last_group].mlp.kind == LP_MLP_KIND_MOE, last_moe);
            }
        }
    }
    /* a model built by hand past the bounds: the analysis still costs each group once (a
     * loop over 2^31 vision blocks took 82 s: fail, not hang) */
    alarm(60);
    struct lp_model m;
    load("deepseek-ocr.json", &m);
    struct lp_workload w = workload(1, 16, 4);
    double clip4 = analyze(&m, &w)->params.per_module[LP_MODULE_VISION_CLIP];
    double dec = analyze(&m, &w)->params.per_module[LP_MODULE_ATTN_PROJ];
    for (int g = 0; g < m.n_groups; g++)
        m.groups[g].count <<= 40;
    m.vision.sam_layers = (int64_t)1 << 31;
    m.vision.clip_layers = (int64_t)24 << 31;
    clock_t t0 = clock();
    const struct lp_model_result *r = analyze(&m, &w);
    assert_true(cpu_since(t0) < 0.5);
    assert_finite(r);
    EXACT(r->params.per_module[LP_MODULE_ATTN_PROJ], dec * 0x1p40);
    /* CLIP: the stem and positions once, then 2^31 times the 24 layers' blocks */
    double stem = 1024 + 3 * 14 * 14 * 1024 + 257 * 1024 + 2 * 1024;
    assert_true(fabs(r->params.per_module[LP_MODULE_VISION_CLIP] - (stem + (clip4 - stem) * 0x1p31)) <
                1e-9 * r->params.per_module[LP_MODULE_VISION_CLIP]);
    alarm(0);
}

/* The workload too: no loop over tokens, a clear error past each bound. */
static void test_workload_bounds(void **state)
{
    (void)state;
    struct lp_model m;
    parse(tiny_llama, &m);
    struct {
        int64_t batch, prompt, gen, context;
        const char *needle;
    } cases[] = {
        {(int64_t)1 << 40, 16, 4, 0, "batch (sequences) is 1099511627776; it must be 1 to 1048576"},
        {1, (int64_t)1 << 40, 4, 0, "prompt (tokens) is 1099511627776; it must be 1 to 1073741824"},
        {1, 16, (int64_t)1 << 40, 0, "generated tokens is 1099511627776; it must be 1 to"},
        {1, 16, INT64_MAX, 0, "generated tokens is 9223372036854775807"},
        {1, 16, 4, (int64_t)1 << 40, "decode context (tokens) is 1099511627776"},
        {1, 16, 4, -1, "decode context (tokens) is -1; it must be 0 to 1073741824 (0: the default)"},
        {0, 16, 4, 0, "batch (sequences) is 0"},
    };
    char err[512];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct lp_workload w = workload(cases[i].batch, cases[i].prompt, cases[i].gen);
        w.decode_context = cases[i].context;
        err[0] = 0;
        clock_t t0 = clock();
        int rc = lp_model_analyze(&m, &w, &result, err, sizeof err);
        assert_true(cpu_since(t0) < 0.5);
        if (rc != LP_ERR_ARG || !strstr(err, cases[i].needle))
            fail_msg("case %zu: rc %d, error '%s', expected '%s'", i, rc, err, cases[i].needle);
    }
    struct lp_workload w = workload(1, 16, 4);
    w.kv = (enum lp_dtype)99;
    assert_int_equal(lp_model_analyze(&m, &w, &result, err, sizeof err), LP_ERR_ARG);
    assert_non_null(strstr(err, "unknown dtype"));
    /* at the bounds: accepted, finite */
    w = workload(LP_MODEL_MAX_BATCH, LP_MODEL_MAX_TOKENS, LP_MODEL_MAX_TOKENS);
    w.decode_context = LP_MODEL_MAX_TOKENS;
    assert_finite(analyze(&m, &w));
    /* Gundam tiles whose product overflows to 2 (3 x (2^64 + 2) / 3) */
    load("deepseek-ocr.json", &m);
    w = workload(1, 16, 4);
    w.vision_mode = LP_VISION_MODE_GUNDAM;
    w.tiles_w = 3;
    w.tiles_h = 6148914691236517206LL;
    assert_int_equal(lp_model_analyze(&m, &w, &result, err, sizeof err), LP_ERR_ARG);
    assert_non_null(strstr(err, "2 to 9 tiles"));
    w.tiles_w = 10;
    w.tiles_h = 0;
    assert_int_equal(lp_model_analyze(&m, &w, &result, err, sizeof err), LP_ERR_ARG);
}

/* Vision fields the parser used to take unchecked: compressor channels, global blocks. */
static void test_vision_fields(void **state)
{
    (void)state;
    static const struct {
        const char *json; /* a value for the sam object's key */
        const char *key;
        const char *needle;
    } cases[] = {
        {"[-512, 1024]", "downsample_channels", "downsample_channels\"[0] must be an integer from 1 to 1048576"},
        {"[512, 2000000]", "downsample_channels", "downsample_channels\"[1] must be an integer from 1"},
        {"\"512\"", "downsample_channels", "must be an array of at most 2 integers"},
        {"[512]", "downsample_channels", "must hold two channel counts"},
        {"[2, 5, 12]", "global_attn_indexes", "global_attn_indexes\"[2] must be an integer from 0 to 11"},
        {"[-1]", "global_attn_indexes", "global_attn_indexes\"[0] must be an integer from 0 to 11"},
        {"[0,1,2,3,4,5,6,7,8,9,10,11,0,1,2,3,4]", "global_attn_indexes", "at most 16 integers"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *root = json_loads(base_ocr, 0, NULL);
        json_t *sam = json_object_get(json_object_get(json_object_get(root, "vision_config"),
                                                      "width"), "sam_vit_b");
        json_object_set_new(sam, cases[i].key, json_loads(cases[i].json, JSON_DECODE_ANY, NULL));
        char *text = json_dumps(root, JSON_COMPACT);
        json_decref(root);
        expect_error(text, cases[i].needle);
        free(text);
    }
    /* repeated global blocks count once: the same parameters as the published config */
    struct lp_model m;
    load("deepseek-ocr.json", &m);
    struct lp_workload w = workload(1, 16, 4);
    double sam_params = analyze(&m, &w)->params.per_module[LP_MODULE_VISION_SAM];
    json_t *root = json_loads(base_ocr, 0, NULL);
    json_t *sam = json_object_get(json_object_get(json_object_get(root, "vision_config"), "width"),
                                  "sam_vit_b");
    json_object_set_new(sam, "global_attn_indexes", json_pack("[i,i,i,i,i,i]", 2, 5, 8, 11, 5, 2));
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    parse(text, &m);
    free(text);
    assert_int_equal(m.vision.n_sam_global, 4);
    EXACT(analyze(&m, &w)->params.per_module[LP_MODULE_VISION_SAM], sam_params);
    /* a CLIP patch larger than its image */
    const char *keys[] = {CLIP "patch_size"};
    text = config_with(base_ocr, 1, keys, (json_int_t[]){300});
    expect_error(text, "\"vision_config.width.clip-l-14-224.patch_size\" (300) is larger than its "
                       "\"image_size\" (224)");
    free(text);
}

/* A --hw-file is read whole or refused: no FIFO wait, no silent cut at 1 MiB, no NUL. */
static void test_hw_file_bounds(void **state)
{
    (void)state;
    alarm(60);
    char dir[] = "/tmp/lp_test_hw_XXXXXX", path[256], err[512];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/hw.tsv", dir);
    struct lp_gpu_table t;
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(lp_gpu_table_load(&t, path, err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, "not a regular file"));
    unlink(path);
    /* over 1 MiB: its rows past the first MiB were dropped without a word */
    FILE *f = fopen(path, "w");
    for (int i = 0; i < (1 << 20) / 16 + 1; i++)
        fputs("# padding......\n", f);
    fputs("MINE\tMINE\t1\t1\t1\t1\t1\t1\t0\t1\t1\n", f);
    fclose(f);
    assert_int_equal(lp_gpu_table_load(&t, path, err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, "larger than 1048576: not a hardware table"));
    f = fopen(path, "w");
    fputs("MINE\tMINE\t1\t1\t1\t1\t1\t1\t0\t1\t1\n", f);
    fputc(0, f);
    fputs("MORE\tMORE\t1\t1\t1\t1\t1\t1\t0\t1\t1\n", f);
    fclose(f);
    assert_int_equal(lp_gpu_table_load(&t, path, err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, "NUL byte"));
    /* a peak of 1e300 TFLOP/s gave absurd bounds; each column has a limit */
    f = fopen(path, "w");
    fputs("MINE\tMINE\t1e300\t1\t1\t1\t1\t1\t0\t1\t1\n", f);
    fclose(f);
    assert_int_equal(lp_gpu_table_load(&t, path, err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, "column 3 (\"1e300\") is past llmprof's limit"));
    f = fopen(path, "w");
    fputs("MINE\tMINE\t1\t1\t1\t1\t1\t1\t0\t1\t2e6\n", f);
    fclose(f);
    assert_int_equal(lp_gpu_table_load(&t, path, err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, "column 11"));
    f = fopen(path, "w");
    fputs("MINE\tMINE\t1e6\t1\t1\t1\t1\t1\t0\t1e6\t1e6\n", f);
    fclose(f);
    assert_int_equal(lp_gpu_table_load(&t, path, err, sizeof err), 0);
    lp_gpu_table_free(&t);
    unlink(path);
    assert_int_equal(rmdir(dir), 0);
    alarm(0);
}

/* ---- safetensors headers: offsets and shapes checked exactly ---- */

static void expect_header_error(const char *json, const char *needle)
{
    struct lp_weights w = {0};
    char err[512] = "";
    int rc = lp_safetensors_header_parse(json, strlen(json), "bad.safetensors", NULL, &w, err,
                                         sizeof err);
    if (rc != LP_ERR_FORMAT || !strstr(err, needle) || !strstr(err, "bad.safetensors"))
        fail_msg("header %s: rc %d, error '%s', expected '%s'", json, rc, err, needle);
    assert_int_equal(w.tensors, 0);
}

static void test_safetensors_offsets(void **state)
{
    (void)state;
    /* negative offsets with the right difference were accepted */
    expect_header_error("{\"t.neg\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[-4,4]}}",
                        "tensor \"t.neg\": data_offsets must be two whole numbers >= 0");
    expect_header_error("{\"t.neg\":{\"dtype\":\"F4\",\"shape\":[2,2],\"data_offsets\":[-1,5]}}",
                        "tensor \"t.neg\": data_offsets must be two whole numbers >= 0");
    /* end - begin overflowed int64 (UBSan: signed overflow) */
    expect_header_error("{\"t.big\":{\"dtype\":\"BF16\",\"shape\":[2,2],"
                        "\"data_offsets\":[-9223372036854775808,9223372036854775807]}}",
                        "tensor \"t.big\": data_offsets must be two whole numbers >= 0");
    expect_header_error("{\"t.inv\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[8,0]}}",
                        "tensor \"t.inv\": data_offsets begin at 8, after their end 0");
    /* element counts exact in 64 bits: 2^53 + 1 elements are 2^54 + 2 bytes, not 2^54 */
    expect_header_error("{\"t.exact\":{\"dtype\":\"BF16\",\"shape\":[9007199254740993],"
                        "\"data_offsets\":[0,18014398509481984]}}",
                        "tensor \"t.exact\": data_offsets [0, 18014398509481984] hold "
                        "18014398509481984 bytes, but 9007199254740993 elements of BF16 need "
                        "18014398509481986");
    /* a shape whose product overflows 64 bits (2^63 x 2 would wrap to 0 elements) */
    expect_header_error("{\"t.wrap\":{\"dtype\":\"BF16\",\"shape\":[9223372036854775807,2,2],"
                        "\"data_offsets\":[0,0]}}",
                        "tensor \"t.wrap\": its shape's element count overflows 64 bits");
    expect_header_error("{\"t.bytes\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904],"
                        "\"data_offsets\":[0,0]}}", "need more than 4611686018427387904");
    /* a dtype the table does not know: at most 8 elements a byte */
    expect_header_error("{\"t.f4\":{\"dtype\":\"F4\",\"shape\":[1024,1024],\"data_offsets\":[0,8]}}",
                        "tensor \"t.f4\": 1048576 elements of F4 in 8 bytes");
    expect_header_error("{\"t.dim\":{\"dtype\":\"BF16\",\"shape\":[2,-2],\"data_offsets\":[0,8]}}",
                        "tensor \"t.dim\": shape[1] is not a whole number >= 0");
    expect_header_error("{\"t.dup\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[0,2]},"
                        "\"t.dup\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[2,4]}}",
                        "duplicate");
    /* a zero dimension: 0 elements whatever the others are, no overflow */
    const char *ok = "{\"__metadata__\":{\"format\":\"pt\"},\"t.zero\":{\"dtype\":\"BF16\","
                     "\"shape\":[9223372036854775807,0,9223372036854775807],\"data_offsets\":[6,6]},"
                     "\"t.one\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[0,6]}}";
    struct lp_weights w = {0};
    char err[512];
    assert_int_equal(lp_safetensors_header_parse(ok, strlen(ok), "ok", NULL, &w, err, sizeof err), 0);
    assert_int_equal(w.tensors, 2);
    EXACT(w.params, 3);
    /* a header of more JSON values than any real one is refused before jansson allocates */
    size_t n = (size_t)9 << 20;
    char *big = malloc(2 * n + 64);
    size_t len = (size_t)sprintf(big, "{\"__metadata__\":{\"a\":[0");
    for (size_t i = 1; i < n; i++) {
        big[len++] = ',';
        big[len++] = '0';
    }
    len += (size_t)sprintf(big + len, "]}}");
    memset(&w, 0, sizeof w);
    assert_int_equal(lp_safetensors_header_parse(big, len, "big", NULL, &w, err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, "JSON values"));
    free(big);
}

/* Writes a safetensors file: length LEN8 (0: the header's own), HEADER, DATA zero bytes. */
static void write_raw(const char *path, const char *header, uint64_t len8, size_t data)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint64_t n = len8 ? len8 : strlen(header);
    for (int i = 0; i < 8; i++)
        fputc((int)(n >> (8 * i) & 0xff), f);
    fputs(header, f);
    for (size_t i = 0; i < data; i++)
        fputc(0, f);
    fclose(f);
}

static void test_safetensors_files(void **state)
{
    (void)state;
    alarm(60); /* opening a FIFO used to block for ever */
    char dir[] = "/tmp/lp_test_st_XXXXXX", path[256], err[512];
    assert_non_null(mkdtemp(dir));
    struct lp_weights w;
    int found;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    /* offsets past the data the file holds */
    write_raw(path, "{\"t.cut\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]}}", 0, 4);
    assert_int_equal(lp_weights_scan(dir, NULL, &w, &found, err, sizeof err), LP_ERR_FORMAT);
    if (!strstr(err, "tensor \"t.cut\": data_offsets end at 8, past the 4 bytes of data"))
        fail_msg("%s", err);
    write_raw(path, "{\"t.cut\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]}}", 0, 8);
    assert_int_equal(lp_weights_scan(dir, NULL, &w, &found, err, sizeof err), LP_OK);
    assert_int_equal(found, 1);
    assert_int_equal(w.tensors, 4 / 4);
    /* a header length past the end of the file: refused before any allocation */
    write_raw(path, "{}", 50000000, 0);
    assert_int_equal(lp_weights_scan(dir, NULL, &w, &found, err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, "header length 50000000 is past the end of the 10-byte file"));
    write_raw(path, "{}", 100000001, 0);
    assert_int_equal(lp_weights_scan(dir, NULL, &w, &found, err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, "header length 100000001 is not plausible"));
    unlink(path);
    /* a FIFO named like a shard, then like the index: an error, not a wait */
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(lp_weights_scan(dir, NULL, &w, &found, err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, "not a regular file"));
    unlink(path);
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(lp_weights_scan(dir, NULL, &w, &found, err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, "not a regular file"));
    unlink(path);
    /* an index that is not JSON is an error, not a silent fallback to listing the directory */
    FILE *f = fopen(path, "w");
    fputs("{\"weight_map\": ", f);
    fclose(f);
    assert_int_equal(lp_weights_scan(dir, NULL, &w, &found, err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, "not valid JSON"));
    unlink(path);
    /* a config.json FIFO, and a config over 16 MiB or with too many values */
    snprintf(path, sizeof path, "%s/config.json", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    struct lp_model m;
    assert_int_equal(lp_model_load(dir, &m, err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, "config.json: not a regular file"));
    unlink(path);
    f = fopen(path, "w");
    fprintf(f, "%s", tiny_llama);
    for (int i = 0; i < (17 << 20) / 64; i++)
        fputs("                                                               \n", f);
    fclose(f);
    assert_int_equal(lp_model_load(path, &m, err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, "larger than 16777216: not a Hugging Face config.json"));
    f = fopen(path, "w");
    fputs("{\"model_type\":\"llama\",\"x\":[0", f);
    for (int i = 0; i < (1 << 20); i++)
        fputs(",0", f);
    fputs("]}", f);
    fclose(f);
    assert_int_equal(lp_model_load(path, &m, err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, "JSON values"));
    unlink(path);
    assert_int_equal(rmdir(dir), 0);
    alarm(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_published_counts),
        cmocka_unit_test(test_status_returns),
        cmocka_unit_test(test_llama_by_hand),
        cmocka_unit_test(test_sliding_window_and_qwen),
        cmocka_unit_test(test_gpt2_by_hand),
        cmocka_unit_test(test_moe_by_hand),
        cmocka_unit_test(test_mla_and_deepseek_layers),
        cmocka_unit_test(test_deepseek_ocr_vision),
        cmocka_unit_test(test_hf_counts),
        cmocka_unit_test(test_deepseek_ocr2),
        cmocka_unit_test(test_deepseek_ocr_torch_params),
        cmocka_unit_test(test_roofline),
        cmocka_unit_test(test_bad_configs),
        cmocka_unit_test(test_safetensors_headers),
        cmocka_unit_test(test_bounded_fields),
        cmocka_unit_test(test_all_at_limits),
        cmocka_unit_test(test_huge_layer_counts),
        cmocka_unit_test(test_grouped_layers),
        cmocka_unit_test(test_workload_bounds),
        cmocka_unit_test(test_vision_fields),
        cmocka_unit_test(test_safetensors_offsets),
        cmocka_unit_test(test_safetensors_files),
        cmocka_unit_test(test_hw_file_bounds),
    };
    char path[512];
    snprintf(path, sizeof path, "%s/deepseek-ocr.json", configs);
    json_t *ocr = json_load_file(path, 0, NULL);
    if (!ocr) {
        fprintf(stderr, "%s: cannot read\n", path);
        return 1;
    }
    base_ocr = base_ocr_text = json_dumps(ocr, JSON_COMPACT);
    json_decref(ocr);
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(base_ocr_text);
    return rc;
}
