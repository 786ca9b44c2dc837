/* The analytic model against published counts and hand-computed values for small configs of
 * every architecture family, the FLOP and byte conventions, and bad configs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
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
    EXACT(r->params.per_module[LP_MOD_ATTN_PROJ], 2 * 192);
    EXACT(r->params.per_module[LP_MOD_MLP], 2 * 384);
    EXACT(r->params.per_module[LP_MOD_NORMS], 2 * 16 + 8);
    EXACT(r->params.total, 80 + 2 * (192 + 384 + 16) + 8 + 80);
    EXACT(r->params.active, r->params.total - 80); /* without the embedding table */
    /* prefill of 4: linear 2*T*params, attention core causal 4*5/2 = 10 pairs per head:
     * 2 heads * 2*(4+4) FLOPs * 10 pairs * 2 layers; lm_head on the last token only */
    const struct lp_cost *pre = r->stage[LP_STAGE_PREFILL];
    EXACT(pre[LP_MOD_ATTN_PROJ].matmul_flops, 2.0 * 4 * 2 * 192);
    EXACT(pre[LP_MOD_MLP].matmul_flops, 2.0 * 4 * 2 * 384);
    EXACT(pre[LP_MOD_ATTN_CORE].matmul_flops, 2.0 * 16 * 10 * 2);
    EXACT(pre[LP_MOD_LM_HEAD].matmul_flops, 2.0 * 1 * 80);
    /* KV per token: 2 layers * 2 (K and V) * 1 kv head * 4 * 2 bytes = 32 bytes (GQA) */
    EXACT(r->kv_bytes_per_token, 32);
    /* end of request: 4 prompt + 2 more = 6 tokens cached */
    EXACT(r->kv_bytes_end, 6 * 32);
    /* decode step at context C = 4 + 3/2 = 5: core 4*heads*head_dim*C per layer */
    EXACT(r->decode_context, 5);
    EXACT(r->stage[LP_STAGE_DECODE_STEP][LP_MOD_ATTN_CORE].matmul_flops, 4.0 * 2 * 4 * 5 * 2);
    /* decode reads every weight once: (192 + 384) * 2 layers + norms + lm_head, bf16 */
    EXACT(r->stage[LP_STAGE_DECODE_STEP][LP_MOD_MLP].weight_bytes, 2.0 * 384 * 2);
    /* the request: prefill, then 2 steps attending 5 and 6 keys */
    EXACT(r->stage[LP_STAGE_REQUEST][LP_MOD_ATTN_CORE].matmul_flops,
          2.0 * 16 * 10 * 2 + 4.0 * 2 * 4 * (5 + 6) * 2);
    /* every prompt token's logits (HF's default) */
    w.prefill_logits_all = 1;
    r = analyze(&m, &w);
    EXACT(r->stage[LP_STAGE_PREFILL][LP_MOD_LM_HEAD].matmul_flops, 2.0 * 4 * 80);
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
    EXACT(r->stage[LP_STAGE_PREFILL][LP_MOD_ATTN_CORE].matmul_flops, 2.0 * 2 * (4 + 4) * 15);
    EXACT(r->kv_bytes_end, 3.0 * 2 * 2 * 4 * 2); /* the window holds 3 tokens */
    /* Qwen2: q/k/v biases, tied; Qwen3: q/k norms, explicit head_dim */
    parse("{\"model_type\":\"qwen2\",\"hidden_size\":8,\"intermediate_size\":16,"
          "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"num_key_value_heads\":1,"
          "\"vocab_size\":10,\"tie_word_embeddings\":true}", &m);
    r = analyze(&m, &w);
    EXACT(r->params.per_module[LP_MOD_ATTN_PROJ], 192 + 8 + 4 + 4);
    EXACT(r->params.per_module[LP_MOD_LM_HEAD], 0);
    EXACT(r->params.total, 80 + 208 + 384 + 16 + 8);
    EXACT(r->params.active, r->params.total); /* tied: the table is the lm_head */
    parse("{\"model_type\":\"qwen3\",\"hidden_size\":8,\"intermediate_size\":16,"
          "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"num_key_value_heads\":1,"
          "\"head_dim\":6,\"vocab_size\":10}", &m);
    r = analyze(&m, &w);
    EXACT(r->params.per_module[LP_MOD_ATTN_PROJ], 8 * 12 + 8 * 6 + 8 * 6 + 12 * 8);
    EXACT(r->params.per_module[LP_MOD_NORMS], 6 + 6 + 16 + 8);
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
    EXACT(r->params.per_module[LP_MOD_EXPERTS], 4 * expert);
    EXACT(r->params.per_module[LP_MOD_ROUTER], 8 * 4);
    EXACT(r->params.total - r->params.active_with_embedding, 2 * expert); /* 2 of 4 idle */
    /* a decode step of one token touches E(1-(1-k/E)^1) = k = 2 experts */
    EXACT(r->stage[LP_STAGE_DECODE_STEP][LP_MOD_EXPERTS].weight_bytes, 2 * expert * 2);
    /* FLOPs: top-k experts per token, 2 FLOPs per multiply-add */
    EXACT(r->stage[LP_STAGE_DECODE_STEP][LP_MOD_EXPERTS].matmul_flops, 2.0 * 2 * expert);
    /* batch 4 in decode: 4 * (1 - (1/2)^4) = 3.75 experts expected */
    w.batch = 4;
    r = analyze(&m, &w);
    EXACT(r->stage[LP_STAGE_DECODE_STEP][LP_MOD_EXPERTS].weight_bytes, 3.75 * expert * 2);
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
    assert_int_equal(m.groups[1].mlp.kind, LP_MLP_MOE);
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
    EXACT(r->params.per_module[LP_MOD_ATTN_PROJ], 4.0 * (192 + 160 + 128 + 128));
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
        assert_true(r->total[LP_STAGE_VISION].matmul_flops > 0);
    }
    struct lp_workload w = workload(1, 10, 2);
    w.vision_mode = LP_VISION_MODE_GUNDAM;
    w.tiles_w = 3;
    w.tiles_h = 2;
    const struct lp_model_result *r = analyze(&m, &w);
    assert_int_equal(r->vision_tokens, 272 + 20 * 31 + 1);
    /* Gundam = one Base view + 6 Small tiles: more vision work than Base alone */
    double gundam = r->total[LP_STAGE_VISION].matmul_flops;
    w.vision_mode = LP_VISION_MODE_BASE;
    double base = analyze(&m, &w)->total[LP_STAGE_VISION].matmul_flops;
    w.vision_mode = LP_VISION_MODE_SMALL;
    double small = analyze(&m, &w)->total[LP_STAGE_VISION].matmul_flops;
    assert_true(gundam > base + 5.9 * small && gundam < base + 6.1 * small);
    char err[256];
    w.vision_mode = LP_VISION_MODE_GUNDAM;
    w.tiles_w = 5;
    w.tiles_h = 2;
    assert_int_equal(lp_model_analyze(&m, &w, &result, err, sizeof err), -1);
    assert_non_null(strstr(err, "2 to 9 tiles"));
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
    lp_model_bounds(r, &w, h200, &mb);
    assert_true(mb.decode_mean.memory_bound);
    assert_true(mb.tpot_s > 13.4e9 / 4.8e12 && mb.tpot_s < 14.2e9 / 4.8e12);
    assert_true(mb.stage[LP_STAGE_PREFILL].bound_s > 0);
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
    assert_int_equal(lp_gpu_table_load(&t, file, err, sizeof err), -1);
    assert_non_null(strstr(err, ":1: column 4"));
    f = fopen(file, "w");
    fputs("H200\tH200\t60\n", f);
    fclose(f);
    assert_int_equal(lp_gpu_table_load(&t, file, err, sizeof err), -1);
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

static void write_shard(const char *dir, const char *file, json_t *h)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    char *text = json_dumps(h, JSON_COMPACT);
    uint64_t n = strlen(text);
    FILE *f = fopen(path, "wb");
    for (int i = 0; i < 8; i++)
        fputc((int)(n >> (8 * i) & 0xff), f);
    fwrite(text, 1, n, f);
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
    write_shard(dir, "model-00001-of-00002.safetensors", shard[0]);
    write_shard(dir, "model-00002-of-00002.safetensors", shard[1]);
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
    assert_int_equal(lp_weights_scan(dir, &m, &wt, err, sizeof err), 0);
    assert_int_equal(wt.files, 2);
    assert_int_equal(wt.tensors, 2710); /* as the real checkpoint declares */
    EXACT(wt.params, 3336106240.0);
    EXACT(wt.bytes, 6672212480.0);
    assert_int_equal(wt.n_dtypes, 1);
    assert_string_equal(wt.by_dtype[0].name, "BF16");
    for (int g = 0; g < LP_WG_COUNT; g++)
        if (wt.by_group[g] != lp_weights_analytic(&r->params, (enum lp_weight_group)g))
            fail_msg("group %s: weights %.0f, analytic %.0f", lp_weight_group_name(g),
                     wt.by_group[g], lp_weights_analytic(&r->params, (enum lp_weight_group)g));
    /* a header whose offsets do not fit its shape is refused with its name */
    const char *bad = "{\"x.weight\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,6]}}";
    struct lp_weights one = {0};
    assert_int_equal(lp_safetensors_header_parse(bad, strlen(bad), "bad.safetensors", NULL, &one,
                                                 err, sizeof err), -1);
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
    assert_int_equal(lp_model_parse(json, strlen(json), "cfg.json", &m, err, sizeof err), -1);
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
    assert_int_equal(lp_model_load("/nonexistent/config.json", &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/config.json"));
    /* a workload beyond the model's positions */
    parse(tiny_llama, &m);
    m.max_positions = 8;
    struct lp_workload w = workload(1, 6, 4);
    assert_int_equal(lp_model_analyze(&m, &w, &result, err, sizeof err), -1);
    assert_non_null(strstr(err, "max_position_embeddings"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_published_counts),
        cmocka_unit_test(test_llama_by_hand),
        cmocka_unit_test(test_sliding_window_and_qwen),
        cmocka_unit_test(test_gpt2_by_hand),
        cmocka_unit_test(test_moe_by_hand),
        cmocka_unit_test(test_mla_and_deepseek_layers),
        cmocka_unit_test(test_deepseek_ocr_vision),
        cmocka_unit_test(test_roofline),
        cmocka_unit_test(test_bad_configs),
        cmocka_unit_test(test_safetensors_headers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
