/* llmprof's analytic model: parameters, FLOPs and bytes of an LLM from its Hugging Face
 * config, per module and per stage, and roofline bounds on a GPU from the hardware table.
 * Needs no GPU and no trace; the report uses the same numbers for MFU and MBU.
 * Conventions (docs/model.md): one multiply-add = 2 FLOPs; causal attention visits
 * P(P+1)/2 key positions in a prefill of P tokens; matmuls run in the activation dtype. */
#ifndef LLMPROF_MODEL_H
#define LLMPROF_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "llmprof/status.h"

enum lp_dtype {
    LP_DTYPE_FP32,
    LP_DTYPE_TF32,
    LP_DTYPE_BF16,
    LP_DTYPE_FP16,
    LP_DTYPE_FP8,
    LP_DTYPE_INT8,
    LP_DTYPE_INT4,
    LP_DTYPE_COUNT
};

const char *lp_dtype_name(enum lp_dtype d);
double lp_dtype_bytes(enum lp_dtype d);
/* LP_OK, or LP_ERR_ARG for a name that is none of fp32, tf32, bf16, fp16, fp8, int8, int4
 * (any case). */
enum lp_status lp_dtype_parse(const char *name, enum lp_dtype *d);
/* LP_OK when matmuls can run in D (the activation dtype), else LP_ERR_ARG with ERR: int4 is
 * a weight-only format. */
enum lp_status lp_dtype_check_compute(enum lp_dtype d, char *err, size_t errlen);

/* ---- bounds ----
 * The largest size llmprof models, each far above any published model (docs/model.md,
 * "Bounds", gives the largest real value beside each). A config or workload past one is an
 * error naming the field, so every accepted input gives finite numbers, quickly. */
#define LP_MODEL_MAX_LAYERS INT64_C(16384)      /* decoder and vision layers, MTP layers,
                                                   first_k_dense_replace, moe_layer_freq,
                                                   max_window_layers */
#define LP_MODEL_MAX_WIDTH INT64_C(1048576)     /* hidden sizes, LoRA ranks, vision widths
                                                   and channels, projector dims */
#define LP_MODEL_MAX_FFN INT64_C(4194304)       /* intermediate sizes (dense, expert) */
#define LP_MODEL_MAX_HEADS INT64_C(65536)       /* attention and KV heads */
#define LP_MODEL_MAX_HEAD_DIM INT64_C(65536)    /* head_dim and MLA's per-head parts */
#define LP_MODEL_MAX_VOCAB INT64_C(16777216)
#define LP_MODEL_MAX_EXPERTS INT64_C(65536)     /* routed experts (top-k: at most these) */
#define LP_MODEL_MAX_SHARED_EXPERTS INT64_C(1024)
#define LP_MODEL_MAX_TOKENS INT64_C(1073741824) /* positions, sliding windows, and a
                                                   workload's prompt, generated tokens and
                                                   decode context */
#define LP_MODEL_MAX_IMAGE INT64_C(65536)       /* image and patch sides, in pixels */
#define LP_MODEL_MAX_BATCH INT64_C(1048576)     /* sequences in a workload's batch */
/* A GPU's peaks (hardware table rows, --peak-tflops, --mem-bw): about 100 times the largest
 * datasheet figures (~10,000 dense TFLOP/s at 4 bits, 8 TB/s, 288 GB) */
#define LP_MODEL_MAX_TFLOPS 1e6
#define LP_MODEL_MAX_MEM_GB 1e6
#define LP_MODEL_MAX_BW_GBS 1e6
/* the whole model (total + MTP): 2^53, so that counts stay exact integers in a double and in
 * a JSON integer; fields each within bounds can still multiply past it */
#define LP_MODEL_MAX_PARAMS 9007199254740992.0

/* ---- the architecture, as read from config.json ---- */

enum lp_attn_kind { LP_ATTN_KIND_MHA, LP_ATTN_KIND_MLA };
enum lp_mlp_kind { LP_MLP_KIND_GATED, LP_MLP_KIND_PLAIN, LP_MLP_KIND_MOE };
enum lp_norm_kind { LP_NORM_KIND_RMS, LP_NORM_KIND_LAYER };

struct lp_attn_spec {
    enum lp_attn_kind kind;
    int64_t heads, kv_heads, head_dim, v_head_dim;  /* MHA/GQA: v_head_dim == head_dim */
    int qkv_bias, o_bias, qk_norm;
    int64_t sliding_window;                         /* 0: full attention */
    /* MLA */
    int64_t q_lora_rank, kv_lora_rank, qk_nope_dim, qk_rope_dim;
};

struct lp_mlp_spec {
    enum lp_mlp_kind kind;
    int64_t intermediate;    /* dense width, or one expert's width for MoE */
    int bias;
    /* MoE */
    int64_t experts, top_k, shared_experts; /* shared experts of `intermediate` width each */
    int64_t shared_intermediate;            /* their width in all when not that (Qwen2-MoE's
                                               one shared expert); 0: shared_experts x
                                               intermediate */
    int shared_gate;                        /* Qwen2-MoE: a sigmoid gate (hidden -> 1) on the
                                               shared expert's output */
    int router_bias;                        /* a per-expert correction bias (DeepSeek-V3) */
};

/* COUNT layers, wherever they are, share one attention and one MLP spec: the analysis costs
 * one layer of each group and multiplies, so its time does not depend on the layer count. */
struct lp_layer_group {
    int64_t count;
    struct lp_attn_spec attn;
    struct lp_mlp_spec mlp;
};

/* DeepSeek-OCR: SAM then CLIP-L; DeepSeek-OCR-2: SAM then a Qwen2-style encoder over the SAM
 * tokens and as many learned queries, whose outputs the decoder gets */
enum lp_vision_kind { LP_VISION_KIND_NONE, LP_VISION_KIND_DEEPSEEK_OCR,
                      LP_VISION_KIND_DEEPSEEK_OCR2 };

struct lp_vision_spec {
    enum lp_vision_kind kind;
    /* SAM-ViT image encoder */
    int64_t sam_width, sam_layers, sam_heads, sam_mlp, sam_patch, sam_window, sam_image;
    int64_t sam_global[16];     /* blocks with global attention: distinct, below sam_layers */
    int n_sam_global;
    int64_t neck_channels, down1, down2;
    /* CLIP-L on SAM features (DeepSeek-OCR) */
    int64_t clip_width, clip_layers, clip_heads, clip_mlp, clip_patch, clip_image;
    /* the Qwen2-style encoder (DeepSeek-OCR-2): q/k/v biases, SwiGLU, RMSNorm */
    int64_t enc_width, enc_layers, enc_heads, enc_kv_heads, enc_mlp;
    /* projector */
    int64_t proj_in, proj_out;
};

#define LP_MAX_LAYER_GROUPS 8

struct lp_model {
    char model_type[64];
    char family[32];            /* "llama", "gpt2", "mixtral", "deepseek", "deepseek-ocr" */
    int64_t hidden, layers, vocab, max_positions;
    enum lp_norm_kind norm;
    int learned_positions;      /* GPT-2: a position embedding table */
    int tied_embeddings;
    int64_t mtp_layers;         /* DeepSeek-V3 multi-token prediction, reported apart */
    struct lp_layer_group groups[LP_MAX_LAYER_GROUPS];
    int n_groups;
    int last_group;             /* the group of the last layer (MTP layers copy it) */
    struct lp_vision_spec vision;
};

/* The model_type values llmprof reads, comma-separated, a note naming the model where the
 * type does not: "llama, mistral, ..., deepseek_vl_v2 (DeepSeek-OCR), ...". */
void lp_model_types(char *buf, size_t len);
/* Reads a config.json (or a directory holding one). LP_OK, or LP_ERR_IO (the file cannot be
 * read), LP_ERR_FORMAT (not a config llmprof models) or LP_ERR_NOMEM, with ERR saying which
 * file, which key and what is wrong or supported. */
enum lp_status lp_model_load(const char *path, struct lp_model *m, char *err, size_t errlen);
/* The same from a JSON text (NAME names it in errors); the fuzz target's entry. */
enum lp_status lp_model_parse(const char *json, size_t len, const char *name, struct lp_model *m,
                              char *err, size_t errlen);

/* ---- a workload and what it costs ---- */

enum lp_vision_mode { LP_VISION_MODE_NONE, LP_VISION_MODE_TINY, LP_VISION_MODE_SMALL,
                      LP_VISION_MODE_BASE, LP_VISION_MODE_LARGE, LP_VISION_MODE_GUNDAM };

struct lp_workload {
    int64_t batch, prompt, generated;
    enum lp_dtype weights, activations, kv;
    int prefill_logits_all;     /* 1: logits for every prompt token (HF default); 0: last only */
    int64_t decode_context;     /* context of the "one decode step" stage; 0: prompt + generated/2 */
    enum lp_vision_mode vision_mode;
    int64_t tiles_w, tiles_h;   /* Gundam mode: tiles across and down (2..9 in all); for
                                   DeepSeek-OCR-2 the local 768-pixel crops */
};

void lp_workload_defaults(struct lp_workload *w);

/* Costs of one module in one stage. Bytes are lower bounds: each weight read once per
 * pass, activations read and written once per layer, attention fused (scores never
 * written), KV cache read once per step. */
struct lp_cost {
    double params;              /* weights the stage uses (for MoE: those touched) */
    double matmul_flops, other_flops;
    double weight_bytes, act_bytes, kv_read_bytes, kv_write_bytes;
};

enum lp_module {
    LP_MODULE_EMBED, LP_MODULE_ATTN_PROJ, LP_MODULE_ATTN_CORE, LP_MODULE_MLP, LP_MODULE_ROUTER,
    LP_MODULE_EXPERTS, LP_MODULE_SHARED_EXPERTS, LP_MODULE_NORMS, LP_MODULE_LM_HEAD,
    LP_MODULE_VISION_SAM, LP_MODULE_VISION_CLIP, LP_MODULE_VISION_ENCODER, LP_MODULE_VISION_PROJ,
    LP_MODULE_COUNT
};
const char *lp_module_name(enum lp_module m);

/* The analytic model's stages: the vision encoder, the prefill, one decode step and the
 * whole request. A measured stage of a run (llmprof/analyze.h, enum lp_stage_kind) is a
 * named part of a trace; utilisation holds its prefill, decode and vision kinds to these. */
enum lp_model_stage {
    LP_MODEL_STAGE_VISION, LP_MODEL_STAGE_PREFILL, LP_MODEL_STAGE_DECODE_STEP,
    LP_MODEL_STAGE_REQUEST, LP_MODEL_STAGE_COUNT
};
const char *lp_model_stage_name(enum lp_model_stage s);

struct lp_params {
    double total;               /* decoder + vision (MTP apart) */
    double active;              /* weights a decoder token uses: dense, attention, shared and
                                   top-k routed experts, router, lm_head; not the embedding
                                   table (one row read) unless tied, not vision, not MTP */
    double active_with_embedding; /* the same plus the embedding table (Mixtral's "12.9B") */
    double embedding, vision, mtp;
    double per_module[LP_MODULE_COUNT];
};

struct lp_model_result {
    struct lp_params params;
    int64_t vision_tokens;      /* image tokens fed to the decoder (0 without vision) */
    int64_t prefill_tokens;     /* per sequence: prompt + vision slots */
    int64_t decode_context;     /* the context of the decode-step stage */
    double kv_bytes_per_token;  /* all layers, one sequence */
    double kv_bytes_end;        /* whole batch, at the end of the request */
    struct lp_cost stage[LP_MODEL_STAGE_COUNT][LP_MODULE_COUNT];
    struct lp_cost total[LP_MODEL_STAGE_COUNT];
};

/* Fills R for workload W (M as lp_model_parse fills it). LP_OK, or LP_ERR_ARG with ERR for a
 * workload the model cannot run or one past the bounds above (batch, prompt, generated,
 * decode_context, dtypes, vision mode, tiles). Its time depends on no size or count. */
enum lp_status lp_model_analyze(const struct lp_model *m, const struct lp_workload *w,
                                struct lp_model_result *r, char *err, size_t errlen);

double lp_cost_bytes(const struct lp_cost *c);
double lp_cost_flops(const struct lp_cost *c);
/* FLOPs per byte; 0 when no bytes move. */
double lp_cost_intensity(const struct lp_cost *c);
const char *lp_vision_mode_name(enum lp_vision_mode v);

/* ---- weights on disk: safetensors headers ---- */

enum lp_weight_group { LP_WEIGHT_GROUP_EMBED, LP_WEIGHT_GROUP_ATTN, LP_WEIGHT_GROUP_MLP,
                       LP_WEIGHT_GROUP_ROUTER, LP_WEIGHT_GROUP_EXPERTS, LP_WEIGHT_GROUP_SHARED,
                       LP_WEIGHT_GROUP_NORMS, LP_WEIGHT_GROUP_LM_HEAD, LP_WEIGHT_GROUP_VISION,
                       LP_WEIGHT_GROUP_MTP, LP_WEIGHT_GROUP_OTHER, LP_WEIGHT_GROUP_COUNT };
const char *lp_weight_group_name(enum lp_weight_group g);

#define LP_MAX_DTYPES 16

struct lp_weights {
    int files, tensors;
    double params;              /* elements stored (packed formats count their containers) */
    double bytes;
    double by_group[LP_WEIGHT_GROUP_COUNT];
    struct {
        char name[16];
        double params;
    } by_dtype[LP_MAX_DTYPES];
    int n_dtypes;
};

/* The analytic count of weight group G (what the headers are compared with). */
double lp_weights_analytic(const struct lp_params *p, enum lp_weight_group g);

/* Reads the headers of DIR's safetensors files (through model.safetensors.index.json when
 * present). M (may be NULL) tells which layers are MTP layers. LP_OK with *FOUND 1 when read,
 * 0 when DIR holds none; or an error with ERR. */
enum lp_status lp_weights_scan(const char *dir, const struct lp_model *m, struct lp_weights *w,
                               int *found, char *err, size_t errlen);
/* Adds one header's JSON (the text after the 8-byte length) to W; NAME names it in errors.
 * LP_OK, or LP_ERR_FORMAT with ERR. The fuzz target's entry. */
enum lp_status lp_safetensors_header_parse(const char *json, size_t len, const char *name,
                                           const struct lp_model *m, struct lp_weights *w,
                                           char *err, size_t errlen);

/* ---- hardware and roofline ---- */

struct lp_gpu {
    char name[64];
    char match[128];            /* substrings of a device name, '|'-separated */
    double tflops[LP_DTYPE_COUNT]; /* dense peaks; 0 where the GPU has none */
    double mem_bw_gbs, mem_gb;
};

struct lp_gpu_table {
    struct lp_gpu *v;
    size_t n;
};

/* The built-in table (data/hardware.tsv), then FILE's rows when FILE is not NULL: a row with
 * a known name replaces it. LP_OK, or an error with ERR (T then holds nothing). */
enum lp_status lp_gpu_table_load(struct lp_gpu_table *t, const char *file, char *err,
                                 size_t errlen);
void lp_gpu_table_free(struct lp_gpu_table *t);
/* By table name (case-insensitive) or by a device name as a trace records it. */
const struct lp_gpu *lp_gpu_find(const struct lp_gpu_table *t, const char *name);
/* A GPU named by the user (--gpu): lp_gpu_find's row, or NULL with ERR saying so and naming
 * the rows whose name holds NAME (or all of them, when none does) and how to add one. The
 * one message every command gives. */
const struct lp_gpu *lp_gpu_resolve(const struct lp_gpu_table *t, const char *name, char *err,
                                    size_t errlen);
/* The user's overrides (--peak-tflops, --mem-bw) on G: PEAK_TFLOPS the dense peak of DTYPE,
 * MEM_BW_GBS the bandwidth, each when > 0. The one place both model and report apply them. */
void lp_gpu_override(struct lp_gpu *g, enum lp_dtype dtype, double peak_tflops,
                     double mem_bw_gbs);

struct lp_bound {
    double compute_s, memory_s, bound_s;
    int memory_bound;
};

/* Lower bound of time for cost C on G: matmuls at the dense peak of DTYPE, other FLOPs at
 * the FP32 peak, bytes at the memory bandwidth, the two overlapping fully. */
void lp_roofline(const struct lp_cost *c, const struct lp_gpu *g, enum lp_dtype dtype,
                 struct lp_bound *b);

/* Roofline bounds of every stage on one GPU, and what they imply for a request. */
struct lp_model_bounds {
    struct lp_gpu gpu;
    enum lp_dtype matmul_dtype;     /* the activation dtype: weight-only formats dequantise */
    struct lp_bound stage[LP_MODEL_STAGE_COUNT];
    struct lp_bound decode_mean;    /* one decode step, averaged over the request */
    double ttft_s;                  /* TTFT >= vision + prefill */
    double tpot_s;                  /* TPOT >= the mean decode step */
    double prefill_tokens_per_s;    /* <= */
    double decode_tokens_per_s;     /* <= batch / TPOT */
};

void lp_model_bounds_compute(const struct lp_model_result *r, const struct lp_workload *w,
                     const struct lp_gpu *g, struct lp_model_bounds *b);

#endif
