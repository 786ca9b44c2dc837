"""Parameters as HF transformers counts them, for configs `llmprof model` reads (models built
on the meta device: no memory, no GPU; run where transformers is, the H200 machine).

    hf_params.py RAW.json                 build the models, write {name: tensors, config}
    hf_params.py --parts RAW.json DIR     write DIR/NAME.json (each config as HF saves it)
                                          and DIR/params.json (per model: llmprof's modules,
                                          each the sum of HF's tensors that RULES name)

tests/test_model.c compares llmprof's counts with DIR (tests/configs/hf) part by part."""
import json
import os
import re
import sys

# HF tensor names -> llmprof's modules (lp_module_name), the first match wins
RULES = [(r"vision_tower\.sam_encoder\.", "vision: SAM-ViT + compressor"),
         (r"vision_tower\.(vision_encoder|query_)", "vision: Qwen2 encoder + queries"),
         (r"(multi_modal_projector|view_separator)", "vision: projector"),
         (r"embed_tokens", "embedding"),
         (r"self_attn\.(q|k|v|o)_proj", "attention projections"),
         (r"(layernorm|norm)\.weight", "norms"),
         (r"shared_expert", "moe shared experts"),
         (r"mlp\.experts\.", "moe routed experts"),
         (r"mlp\.gate\.weight", "moe router"),
         (r"mlp\.(gate|up|down)_proj", "mlp (dense)"),
         (r"^lm_head", "lm_head")]

if sys.argv[1] == "--parts":
    raw = json.load(open(sys.argv[2]))
    out = {"measured": f"HF transformers {raw['transformers']} (torch {raw['torch']}), models "
                       "built on the meta device by tests/gpu/hf_params.py",
           "models": {}}
    for name, m in raw["models"].items():
        parts = {}
        for tensor, n in m["tensors"].items():
            mod = next(mod for rx, mod in RULES if re.search(rx, tensor))
            parts[mod] = parts.get(mod, 0) + n
        with open(os.path.join(sys.argv[3], name + ".json"), "w") as f:
            json.dump(m["config"], f, indent=1, sort_keys=True)
        out["models"][name] = {"config": name + ".json", "total": m["total"], "parts": parts}
    with open(os.path.join(sys.argv[3], "params.json"), "w") as f:
        json.dump(out, f, indent=1)
    sys.exit(0)

import torch  # noqa: E402 (only to build)
import transformers  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OCR2 = os.path.join(HERE, "..", "..", "examples", "deepseek-ocr2", "config.json")

QWEN2_MOE = dict(vocab_size=151936, hidden_size=2048, intermediate_size=5632,
                 moe_intermediate_size=1408, shared_expert_intermediate_size=5632,
                 num_experts=60, num_experts_per_tok=4, num_hidden_layers=24,
                 num_attention_heads=16, num_key_value_heads=16, decoder_sparse_step=1,
                 mlp_only_layers=[], tie_word_embeddings=False, max_position_embeddings=8192)
QWEN2_MOE_MIXED = dict(QWEN2_MOE, num_hidden_layers=6, decoder_sparse_step=2, mlp_only_layers=[3],
                       num_key_value_heads=4, tie_word_embeddings=True)
QWEN3_MOE = dict(vocab_size=151936, hidden_size=2048, intermediate_size=6144,
                 moe_intermediate_size=768, num_experts=128, num_experts_per_tok=8,
                 num_hidden_layers=48, num_attention_heads=32, num_key_value_heads=4, head_dim=128,
                 decoder_sparse_step=1, mlp_only_layers=[], tie_word_embeddings=False,
                 max_position_embeddings=40960)
QWEN3_MOE_MIXED = dict(QWEN3_MOE, num_hidden_layers=5, mlp_only_layers=[0, 4], head_dim=96,
                       attention_bias=True)

ocr2 = json.load(open(OCR2))
ocr2_variant = json.loads(json.dumps(ocr2))
ocr2_variant["tie_word_embeddings"] = False
ocr2_variant["text_config"].update(num_hidden_layers=4, mlp_layer_types=["dense", "sparse", "dense", "sparse"],
                                   attention_bias=True, num_key_value_heads=5,
                                   n_shared_experts=1, n_routed_experts=16, num_experts_per_tok=4)
ocr2_variant["vision_config"]["sam_config"].update(
    hidden_size=1024, num_hidden_layers=6, num_attention_heads=16, global_attn_indexes=[1, 5],
    downsample_channels=[384, 1024])
ocr2_variant["vision_config"]["encoder_config"].update(
    hidden_size=1024, intermediate_size=2816, num_hidden_layers=3, num_attention_heads=16,
    num_key_value_heads=4)


def strip(d):
    return {k: v for k, v in d.items() if k not in ("model_type", "architectures")}


def build(kind, d):
    if kind == "deepseek_ocr2":
        cfg = transformers.DeepseekOcr2Config(**strip(d))
        make = transformers.DeepseekOcr2ForConditionalGeneration
    elif kind == "qwen2_moe":
        cfg = transformers.Qwen2MoeConfig(**d)
        make = transformers.AutoModelForCausalLM.from_config
    else:
        cfg = transformers.Qwen3MoeConfig(**d)
        make = transformers.AutoModelForCausalLM.from_config
    with torch.device("meta"):
        model = make(cfg)
    return cfg, model


out = {"torch": torch.__version__, "transformers": transformers.__version__, "models": {}}
for name, kind, d in [("ocr2", "deepseek_ocr2", ocr2), ("ocr2-variant", "deepseek_ocr2", ocr2_variant),
                      ("qwen2-moe-a2.7b", "qwen2_moe", QWEN2_MOE),
                      ("qwen2-moe-mixed", "qwen2_moe", QWEN2_MOE_MIXED),
                      ("qwen3-moe-30b-a3b", "qwen3_moe", QWEN3_MOE),
                      ("qwen3-moe-mixed", "qwen3_moe", QWEN3_MOE_MIXED)]:
    try:
        cfg, model = build(kind, d)
        # named_parameters() drops tied duplicates: counted once, as HF does
        tensors = {n: t.numel() for n, t in model.named_parameters()}
        out["models"][name] = {"config": cfg.to_dict(), "total": sum(tensors.values()),
                               "tensors": tensors}
        print(name, sum(tensors.values()), flush=True)
    except Exception as e:  # keep the others
        out["models"][name] = {"error": repr(e)}
        print(name, "failed:", repr(e), flush=True)
with open(sys.argv[1], "w") as f:
    json.dump(out, f, indent=0, default=str)
