"""DeepSeek-OCR (v1, Hugging Face model_type "deepseek_vl_v2") assembled from transformers'
parts, for a transformers that has no modelling code of its own for it:

- SAM-ViT-B with its neck and 16x compressor (two stride-2 convolutions): DeepSeek-OCR-2's SAM
  encoder, the same network, built with v1's compressor channels (512, 1024);
- CLIP-L/14 fed SAM's features as its patch embeddings (its conv stem kept, unused, as in the
  checkpoint; no post-LayerNorm): transformers' CLIP vision model;
- a linear projector from [CLIP tokens without the class token | SAM tokens] (2048 channels)
  to the decoder's width, then one learned newline per row of image tokens and one view
  separator (h * (h + 1) + 1 decoder slots for an h x h grid);
- the decoder, DeepSeek-V2 without MLA (64 routed experts, 6 per token, 2 shared, layer 0
  dense): DeepSeek-OCR-2's language model, the same network, and an untied lm_head.

Parameters part by part equal `llmprof model` on the same config.json (3,336,106,240 for the
released config); params() counts them as `llmprof model` names them.

Also builds DeepSeek-OCR-2 (model_type "deepseek_ocr2") with transformers' own class, so the
runner drives both through one interface: model(input_ids, pixel_values, past_key_values)
returns logits for the last position and the cache, and vision_modules() names the modules
the runner wraps in NVTX ranges."""
import json
import math
import os
import shutil
import types

import torch
from torch import nn
import transformers

IMAGE_TOKEN = 128815  # the released tokenizer's <image>
BOS, EOS = 0, 1


def image_side():
    """Pixels of the one global view the runner feeds (DeepSeek-OCR's "base" mode)."""
    return 1024


def _count(module):
    return sum(p.numel() for p in module.parameters())


def _sam_and_clip(vision):
    """The "sam_*" and "clip-*" entries of a v1 config's vision_config.width."""
    width = vision.get("width", {})
    sam = next((v for k, v in width.items() if k.startswith("sam")), None)
    clip = next((v for k, v in width.items() if k.startswith("clip")), None)
    if not isinstance(sam, dict) or not isinstance(clip, dict):
        raise ValueError('vision_config.width must hold a "sam_..." and a "clip-..." object')
    return sam, clip


def _text_config(lang):
    layers = lang["num_hidden_layers"]
    dense = lang.get("first_k_dense_replace", 0)
    keep = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
            "num_attention_heads", "num_key_value_heads", "max_position_embeddings",
            "n_routed_experts", "n_shared_experts", "num_experts_per_tok",
            "moe_intermediate_size", "rms_norm_eps")
    text = {k: lang[k] for k in keep if k in lang}
    text.update(topk_method="greedy", bos_token_id=BOS, eos_token_id=EOS,
                mlp_layer_types=["dense"] * dense + ["sparse"] * (layers - dense),
                rope_parameters={"rope_type": "default",
                                 "rope_theta": float(lang.get("rope_theta", 10000.0))})
    return text


class ClipOnSam(nn.Module):
    """CLIP-L run on SAM's compressed grid: a class token, positions (interpolated when the
    grid is not CLIP's own), the pre-LayerNorm and the encoder."""

    def __init__(self, clip):
        super().__init__()
        cfg = transformers.CLIPVisionConfig(
            hidden_size=clip.get("width", 1024), intermediate_size=4 * clip.get("width", 1024),
            num_hidden_layers=clip.get("layers", 24), num_attention_heads=clip.get("heads", 16),
            image_size=clip.get("image_size", 224), patch_size=clip.get("patch_size", 14),
            hidden_act="quick_gelu", layer_norm_eps=1e-5)
        # the module holding CLIP's embeddings and encoder (vision_model in older releases)
        vision = next(m for m in transformers.CLIPVisionModel(cfg).modules()
                      if hasattr(m, "embeddings") and hasattr(m, "encoder"))
        self.embeddings = vision.embeddings
        pre = [m for n, m in vision.named_children() if n.startswith("pre_lay")]
        if len(pre) != 1:
            raise ValueError("transformers' CLIP vision model has no single pre-LayerNorm: "
                             f"{[n for n, _ in vision.named_children()]}")
        self.pre_layrnorm = pre[0]
        self.encoder = vision.encoder  # post_layernorm left out: DeepSeek-OCR has none

    def forward(self, sam):
        b = sam.shape[0]
        patches = sam.flatten(2).transpose(1, 2)
        cls = self.embeddings.class_embedding.to(patches.dtype).expand(b, 1, -1)
        x = torch.cat([cls, patches], dim=1)
        pos = self.embeddings.position_embedding.weight.unsqueeze(0)
        if pos.shape[1] != x.shape[1]:
            src, dst = math.isqrt(pos.shape[1] - 1), math.isqrt(x.shape[1] - 1)
            grid = pos[:, 1:].reshape(1, src, src, -1).permute(0, 3, 1, 2).float()
            grid = nn.functional.interpolate(grid, size=(dst, dst), mode="bicubic",
                                             align_corners=False)
            pos = torch.cat([pos[:, :1], grid.permute(0, 2, 3, 1).reshape(1, dst * dst, -1)
                             .to(pos.dtype)], dim=1)
        x = self.pre_layrnorm(x + pos)
        out = self.encoder(inputs_embeds=x)
        return out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]


class Projector(nn.Module):
    """[CLIP tokens without CLS | SAM tokens] to the decoder's width, laid out as rows with a
    newline each, then the view separator."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.layers = nn.Linear(n_in, n_out)
        self.image_newline = nn.Parameter(torch.randn(n_out) * 0.02)
        self.view_separator = nn.Parameter(torch.randn(n_out) * 0.02)

    def forward(self, clip, sam):
        feats = torch.cat([clip[:, 1:], sam.flatten(2).transpose(1, 2)], dim=-1)
        x = self.layers(feats)
        b, n, d = x.shape
        h = math.isqrt(n)
        rows = torch.cat([x.view(b, h, h, d), self.image_newline.expand(b, h, 1, d)], dim=2)
        return torch.cat([rows.reshape(b, h * (h + 1), d), self.view_separator.expand(b, 1, d)],
                         dim=1)


class DeepseekOcrV1(nn.Module):
    def __init__(self, cfg, attn_implementation="sdpa"):
        super().__init__()
        lang, vision = cfg["language_config"], cfg["vision_config"]
        sam, clip = _sam_and_clip(vision)
        # OCR-2 holds the same SAM encoder and decoder: build one with v1's sizes (a one-layer
        # stand-in for its Qwen2 encoder, dropped) and keep those two parts
        sam_cfg = {"hidden_size": sam.get("width", 768), "num_hidden_layers": sam.get("layers", 12),
                   "num_attention_heads": sam.get("heads", 12),
                   "global_attn_indexes": sam.get("global_attn_indexes", [2, 5, 8, 11]),
                   "window_size": 14, "output_channels": 256,
                   "downsample_channels": sam.get("downsample_channels", [512, 1024]),
                   "image_size": vision.get("image_size", 1024)}
        stand_in = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1,
                    "num_attention_heads": 2, "num_key_value_heads": 1}
        host_cfg = transformers.DeepseekOcr2Config(
            text_config=_text_config(lang), image_token_id=IMAGE_TOKEN,
            vision_config={"sam_config": sam_cfg, "encoder_config": stand_in},
            tie_word_embeddings=False)
        host = transformers.DeepseekOcr2ForConditionalGeneration._from_config(
            host_cfg, attn_implementation=attn_implementation)
        self.sam = host.model.vision_tower.sam_encoder
        self.clip = ClipOnSam(clip)
        proj = cfg.get("projector_config", {})
        self.projector = Projector(proj.get("input_dim", 2048), proj.get("n_embed", 1280))
        self.language_model = host.model.language_model
        self.lm_head = host.lm_head
        self.image_token_id = IMAGE_TOKEN
        del host

    def image_slots(self):
        h = math.ceil(image_side() / 64)  # SAM's 16x16 patches, then the 4x compressor
        return h * (h + 1) + 1

    def vision_modules(self):
        return [(self.sam, "sam"), (self.clip, "clip"), (self.projector, "projector")]

    def params(self):
        lm = self.language_model
        return {"total": _count(self), "vision: SAM-ViT + compressor": _count(self.sam),
                "vision: CLIP-L": _count(self.clip), "vision: projector": _count(self.projector),
                "embedding": lm.embed_tokens.weight.numel(), "lm_head": _count(self.lm_head),
                "decoder": _count(lm) - lm.embed_tokens.weight.numel()}

    def forward(self, input_ids, pixel_values=None, past_key_values=None, use_cache=True):
        emb = self.language_model.embed_tokens(input_ids)
        if pixel_values is not None:
            sam = self.sam(pixel_values)
            sam = sam.last_hidden_state if hasattr(sam, "last_hidden_state") else sam
            image = self.projector(self.clip(sam), sam).to(emb.dtype)
            mask = (input_ids == self.image_token_id).unsqueeze(-1)
            emb = emb.masked_scatter(mask, image.reshape(-1, image.shape[-1]))
        out = self.language_model(inputs_embeds=emb, past_key_values=past_key_values,
                                  use_cache=use_cache)
        logits = self.lm_head(out.last_hidden_state[:, -1:])
        return types.SimpleNamespace(logits=logits, past_key_values=out.past_key_values)


class DeepseekOcr2(nn.Module):
    """transformers' DeepSeek-OCR-2 behind the same interface (the global view only)."""

    def __init__(self, hf):
        super().__init__()
        self.hf = hf
        self.image_token_id = hf.config.image_token_id

    def image_slots(self):
        sam = self.hf.config.vision_config.sam_config
        tokens = (image_side() // sam.patch_size // 4) ** 2
        return (144 if tokens <= 144 else 256) + 1  # the learned queries, the view separator

    def vision_modules(self):
        vt = self.hf.model.vision_tower
        return [(vt.sam_encoder, "sam"), (vt.vision_encoder, "encoder"),
                (self.hf.model.multi_modal_projector, "projector")]

    def params(self):
        inner = self.hf.model
        vt = inner.vision_tower
        lm = inner.language_model
        return {"total": _count(self.hf), "vision: SAM-ViT + compressor": _count(vt.sam_encoder),
                "vision: Qwen2 encoder + queries": _count(vt) - _count(vt.sam_encoder),
                "vision: projector": _count(inner.multi_modal_projector)
                + inner.view_separator.numel(),
                "embedding": lm.embed_tokens.weight.numel(), "lm_head": _count(self.hf.lm_head),
                "decoder": _count(lm) - lm.embed_tokens.weight.numel()}

    def forward(self, input_ids, pixel_values=None, past_key_values=None, use_cache=True):
        out = self.hf(input_ids=input_ids, pixel_values=pixel_values,
                      past_key_values=past_key_values, use_cache=use_cache, logits_to_keep=1)
        return types.SimpleNamespace(logits=out.logits, past_key_values=out.past_key_values)


def weights_file(model_path):
    """The weights' file the runner writes and reads for v1 (OCR-2: save_pretrained's)."""
    return os.path.join(model_path, "model.safetensors")


def build(model_path, cfg, device, attn_implementation, random_weights):
    """The model of MODEL_PATH's config.json on DEVICE in bf16: with RANDOM_WEIGHTS, random
    (seed 0) and not loaded; else loaded from the directory's safetensors."""
    torch.manual_seed(0)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)  # the weights' dtype, as the released model's
    try:
        if cfg["model_type"] == "deepseek_ocr2":
            if random_weights:
                conf = transformers.DeepseekOcr2Config.from_pretrained(model_path)
                with torch.device(device):
                    hf = transformers.DeepseekOcr2ForConditionalGeneration._from_config(
                        conf, attn_implementation=attn_implementation)
            else:
                hf = transformers.DeepseekOcr2ForConditionalGeneration.from_pretrained(
                    model_path, dtype=torch.bfloat16,
                    attn_implementation=attn_implementation).to(device)
            return DeepseekOcr2(hf.eval())
        with torch.device(device):
            model = DeepseekOcrV1(cfg, attn_implementation)
    finally:
        torch.set_default_dtype(default)
    if not random_weights:
        from safetensors.torch import load_file
        state = load_file(weights_file(model_path), device=str(device))
        missing, unexpected = model.load_state_dict(state, strict=False)
        if missing or unexpected:
            raise ValueError(f"{weights_file(model_path)}: {len(missing)} tensors missing "
                             f"(first: {missing[:1]}), {len(unexpected)} unexpected (first: "
                             f"{unexpected[:1]}); the runner reads the layout its --init-weights "
                             "writes, not the released checkpoint's")
    return model.eval()


def save(model, model_path):
    """Writes MODEL's weights into MODEL_PATH (beside its config.json)."""
    if isinstance(model, DeepseekOcr2):
        # save_pretrained also writes config.json: through a directory of its own, so that
        # only the weights land beside the user's config.json
        tmp = os.path.join(model_path, ".init-weights")
        model.hf.save_pretrained(tmp)
        for name in os.listdir(tmp):
            if name.endswith(".safetensors") or name.endswith(".safetensors.index.json"):
                os.replace(os.path.join(tmp, name), os.path.join(model_path, name))
        shutil.rmtree(tmp)
        return
    from safetensors.torch import save_file
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(state, weights_file(model_path), metadata={"format": "pt"})


def load_config(path):
    with open(os.path.join(path, "config.json")) as f:
        return json.load(f)
