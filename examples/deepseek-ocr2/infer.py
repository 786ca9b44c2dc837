"""DeepSeek-OCR-2 from a page image to decoded tokens, written the way a user would write it:
the model built from config.json beside this script (random bf16 weights, nothing from the
hub), one synthetic page (and, with --crops N, N local 768x768 crops as the image processor
makes them), NVTX ranges through forward hooks (the model's code unchanged), one "prefill"
range around the first forward (which runs the vision tower inside it) and one "decode" range
around the whole decode loop, no token counts in the names, a warm-up request first, and the
script's own timer. With --generate, model.generate() in one range named "generate" instead,
timed by a streamer: prefill and decode have no ranges of their own.

    llmprof record -o RUN -- python3 infer.py --timer RUN/timer.json
    llmprof report RUN --model config.json

Writes one JSON object to --timer (and stdout): per-request TTFT and TPOT, the prompt's
visual and text tokens, and the model's parameters part by part as PyTorch counts them."""
import argparse
import json
import math
import os
import time

import torch
import transformers
from transformers.generation.streamers import BaseStreamer

HERE = os.path.dirname(os.path.abspath(__file__))
p = argparse.ArgumentParser()
p.add_argument("--config", default=os.path.join(HERE, "config.json"))
p.add_argument("--crops", type=int, default=0, help="local 768x768 crops (0: the global view)")
p.add_argument("--text-tokens", type=int, default=32, help="text tokens after the image")
p.add_argument("--new-tokens", type=int, default=16)
p.add_argument("--requests", type=int, default=3, help="timed requests after the warm-up")
p.add_argument("--timer", help="write the timings here (JSON)")
p.add_argument("--config-out", help="write the model's config.json (as HF saves it) here")
p.add_argument("--generate", action="store_true", help="model.generate() with a streamer")
args = p.parse_args()

torch.manual_seed(0)
torch.set_default_dtype(torch.bfloat16)
with open(args.config) as f:
    cfg = transformers.DeepseekOcr2Config(**{k: v for k, v in json.load(f).items()
                                              if k not in ("model_type", "architectures")})
t_build = time.perf_counter()
with torch.device("cuda"):
    model = transformers.DeepseekOcr2ForConditionalGeneration(cfg).eval()
build_s = time.perf_counter() - t_build
if args.config_out:
    model.config.to_json_file(args.config_out)


def count(module):
    return sum(t.numel() for t in module.parameters())


inner = model.model
vt = inner.vision_tower
params = {
    "total": count(model),
    "vision_tower": count(vt),
    "sam_encoder": count(vt.sam_encoder),
    "vision_encoder": count(vt.vision_encoder),
    "queries": count(vt.query_768_resolution) + count(vt.query_1024_resolution),
    "projector": count(inner.multi_modal_projector),
    "view_separator": inner.view_separator.numel(),
    "language_model": count(inner.language_model),
    "embed_tokens": count(inner.language_model.embed_tokens),
    "lm_head": count(model.lm_head),
}
print(f"built {type(model).__name__} in {build_s:.1f} s: {json.dumps(params)}", flush=True)


def nvtx(module, name):
    """An NVTX range around every call of MODULE, through hooks (which return None: a value
    returned would replace the module's inputs or output)."""
    def push(m, a):
        torch.cuda.nvtx.range_push(name)

    def pop(m, a, o):
        torch.cuda.nvtx.range_pop()

    module.register_forward_pre_hook(push)
    module.register_forward_hook(pop)


nvtx(vt, "vision")
nvtx(vt.sam_encoder, "sam")
nvtx(vt.vision_encoder, "encoder")
nvtx(inner.multi_modal_projector, "projector")


def page(side):
    """A white page with dark lines of "text", normalised as the image processor does."""
    img = torch.ones(3, side, side)
    for top in range(side // 16, side - side // 16, side // 24):
        img[:, top:top + side // 64, side // 12:side - side // 12] = -1.0
    return img


sam = cfg.vision_config.sam_config
downsample = sam.patch_size * 4  # SAM patches, then the two stride-2 convolutions
global_tokens = math.ceil(1024 / downsample) ** 2
local_tokens = math.ceil(768 / downsample) ** 2
visual = global_tokens + local_tokens * args.crops + 1  # + the view separator
ids = [cfg.text_config.bos_token_id] + [cfg.image_token_id] * visual
text = torch.randint(2, 100000, (args.text_tokens,)).tolist()
ids = torch.tensor([ids + text], device="cuda")
pixel_values = page(1024).unsqueeze(0).cuda()
inputs = {"input_ids": ids, "pixel_values": pixel_values}
if args.crops:
    inputs["pixel_values_local"] = page(768).unsqueeze(0).repeat(args.crops, 1, 1, 1).cuda()
    inputs["num_local_patches"] = [args.crops]


@torch.inference_mode()
def request():
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    torch.cuda.nvtx.range_push("prefill")
    out = model(**inputs, use_cache=True)
    past = out.past_key_values
    nxt = out.logits[:, -1:].argmax(-1)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    torch.cuda.nvtx.range_push("decode")
    for _ in range(args.new_tokens - 1):
        out = model(input_ids=nxt, past_key_values=past, use_cache=True)
        past = out.past_key_values
        nxt = out.logits[:, -1:].argmax(-1)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    t2 = time.perf_counter()
    steps = args.new_tokens - 1
    return {"ttft_ms": (t1 - t0) * 1e3, "decode_ms": (t2 - t1) * 1e3, "decode_steps": steps,
            "tpot_ms": (t2 - t1) * 1e3 / steps}


class Clock(BaseStreamer):
    """Times each put(): the prompt first, then every generated token."""

    def __init__(self):
        self.t = []

    def put(self, value):
        self.t.append(time.perf_counter())

    def end(self):
        pass


@torch.inference_mode()
def generate():
    clock = Clock()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    torch.cuda.nvtx.range_push("generate")
    model.generate(**inputs, max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens,
                   do_sample=False, streamer=clock)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    first, last = clock.t[1], clock.t[-1]  # the prompt, the first token, ... the last
    return {"ttft_ms": (first - t0) * 1e3, "decode_steps": len(clock.t) - 2,
            "tpot_ms": (last - first) * 1e3 / (len(clock.t) - 2)}


if args.generate:
    request = generate  # noqa: F811
runs = [dict(request(), warmup=True)]
runs += [dict(request(), warmup=False) for _ in range(args.requests)]
res = {"model_type": cfg.model_type, "style": "generate" if args.generate else "loop",
       "crops": args.crops, "prompt": ids.shape[1],
       "visual_tokens": visual, "text_tokens": ids.shape[1] - visual, "batch": 1,
       "new_tokens": args.new_tokens, "build_s": build_s, "params": params, "requests": runs,
       "experts_implementation": getattr(cfg.text_config, "_experts_implementation", None),
       "attn_implementation": getattr(cfg, "_attn_implementation", None),
       "torch": torch.__version__, "transformers": transformers.__version__}
print(json.dumps(res))
if args.timer:
    with open(args.timer, "w") as f:
        json.dump(res, f, indent=1)
