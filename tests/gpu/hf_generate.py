"""HF transformers' model.generate() on a Llama-style decoder (TinyLlama-1.1B's shape, random
weights, bf16), written the way people time it: one NVTX range "generate" around each call
(no stage names, no token counts), an unnamed warm-up call first, and a streamer that notes
when each token arrives (its first call carries the prompt, then one per new token). The
report has to infer prefill and decode from the trace.

Writes the model's config.json to --config-out and per-request timings to --timer (JSON)."""
import argparse
import json
import time

import torch
import transformers
from transformers.generation.streamers import BaseStreamer

from tinyllama import TINYLLAMA

p = argparse.ArgumentParser()
p.add_argument("--prompt", type=int, default=512)
p.add_argument("--new-tokens", type=int, default=32)
p.add_argument("--batch", type=int, default=1)
p.add_argument("--requests", type=int, default=3, help="timed requests after the warm-up")
p.add_argument("--timer", help="write the timings here (JSON)")
p.add_argument("--config-out", help="write the model's config.json here")
args = p.parse_args()


class Clock(BaseStreamer):
    """Times each put(): the prompt first, then every generated token."""

    def __init__(self):
        self.t = []

    def put(self, value):
        self.t.append(time.perf_counter())

    def end(self):
        pass


torch.manual_seed(0)
torch.set_default_dtype(torch.bfloat16)
cfg = transformers.LlamaConfig(**TINYLLAMA)
with torch.device("cuda"):
    model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
if args.config_out:
    model.config.to_json_file(args.config_out)
ids = torch.randint(0, cfg.vocab_size, (args.batch, args.prompt), device="cuda")
mask = torch.ones_like(ids)


def request():
    clock = Clock()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    torch.cuda.nvtx.range_push("generate")
    out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=args.new_tokens,
                         min_new_tokens=args.new_tokens, do_sample=False, streamer=clock
                         if args.batch == 1 else None, pad_token_id=0)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    t1 = time.perf_counter()
    r = {"total_ms": (t1 - t0) * 1e3, "new_tokens": int(out.shape[1] - ids.shape[1])}
    if len(clock.t) >= 3:  # prompt, first token, ... last token
        first, last = clock.t[1], clock.t[-1]
        r.update(ttft_ms=(first - t0) * 1e3, decode_steps=len(clock.t) - 2,
                 tpot_ms=(last - first) * 1e3 / (len(clock.t) - 2),
                 itl_ms=[(b - a) * 1e3 for a, b in zip(clock.t[1:], clock.t[2:])])
    return r


runs = [dict(request(), warmup=True)]
runs += [dict(request(), warmup=False) for _ in range(args.requests)]
res = {"arch": "llama", "style": "generate", "prompt": args.prompt, "batch": args.batch,
       "new_tokens": args.new_tokens, "requests": runs, "torch": torch.__version__,
       "transformers": transformers.__version__}
print(json.dumps({k: v for k, v in res.items() if k != "requests"}))
for r in runs:
    print({k: v for k, v in r.items() if k != "itl_ms"})
if args.timer:
    with open(args.timer, "w") as f:
        json.dump(res, f, indent=1)
