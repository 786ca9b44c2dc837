"""More ways people write inference scripts, on HF transformers' Llama-style decoder
(TinyLlama-1.1B's shape, random bf16 weights), each with the script's own timer:

--style sync-loop   a manual loop that reads every token back (.item()), checks for EOS
                    and keeps a Python list; one "decode" range per loop that also holds
                    the final .tolist(); the warm-up request is shorter than the others
--style per-step    one "decode" range per token, without step= or tokens= words
--style sample      model.generate(do_sample=True, top_p, temperature) on a batch of 4
                    padded prompts of different lengths, no NVTX range at all
--style compile     HF's static cache with the forward compiled by
                    torch.compile(mode="reduce-overhead") (CUDA graphs), model.generate

Writes config.json to --config-out and the timings to --timer (JSON)."""
import argparse
import json
import time

import torch
import transformers
from transformers.generation.streamers import BaseStreamer

from tinyllama import TINYLLAMA

p = argparse.ArgumentParser()
p.add_argument("--style", required=True, choices=["sync-loop", "per-step", "sample", "compile"])
p.add_argument("--prompt", type=int, default=512)
p.add_argument("--new-tokens", type=int, default=32)
p.add_argument("--requests", type=int, default=3)
p.add_argument("--timer")
p.add_argument("--config-out")
args = p.parse_args()
nvtx = torch.cuda.nvtx

torch.manual_seed(0)
torch.set_default_dtype(torch.bfloat16)
cfg = transformers.LlamaConfig(**TINYLLAMA)
with torch.device("cuda"):
    model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
if args.config_out:
    model.config.to_json_file(args.config_out)


class Clock(BaseStreamer):
    def __init__(self):
        self.t = []

    def put(self, value):
        self.t.append(time.perf_counter())

    def end(self):
        pass


@torch.inference_mode()
def sync_loop(new_tokens):
    ids = torch.randint(0, cfg.vocab_size, (1, args.prompt), device="cuda")
    t0 = time.perf_counter()
    nvtx.range_push("prefill")
    out = model(input_ids=ids, use_cache=True)
    past, tok = out.past_key_values, out.logits[0, -1].argmax().item()
    nvtx.range_pop()
    t1 = time.perf_counter()
    toks = [tok]
    nvtx.range_push("decode")
    for _ in range(new_tokens - 1):
        out = model(input_ids=torch.tensor([[tok]], device="cuda"), past_key_values=past,
                    use_cache=True)
        past, tok = out.past_key_values, out.logits[0, -1].argmax().item()
        toks.append(tok)
        if tok == -1:  # an EOS check, as loops have
            break
    text = torch.tensor(toks, device="cuda").tolist()
    nvtx.range_pop()
    t2 = time.perf_counter()
    steps = len(text) - 1
    return {"ttft_ms": (t1 - t0) * 1e3, "decode_ms": (t2 - t1) * 1e3, "decode_steps": steps,
            "tpot_ms": (t2 - t1) * 1e3 / steps}


@torch.inference_mode()
def per_step(new_tokens):
    ids = torch.randint(0, cfg.vocab_size, (1, args.prompt), device="cuda")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    nvtx.range_push("prefill")
    out = model(input_ids=ids, use_cache=True)
    nxt = out.logits[:, -1:].argmax(-1)
    nvtx.range_pop()
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    past = out.past_key_values
    for _ in range(new_tokens - 1):
        nvtx.range_push("decode")
        out = model(input_ids=nxt, past_key_values=past, use_cache=True)
        past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
        nvtx.range_pop()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    steps = new_tokens - 1
    return {"ttft_ms": (t1 - t0) * 1e3, "decode_ms": (t2 - t1) * 1e3, "decode_steps": steps,
            "tpot_ms": (t2 - t1) * 1e3 / steps}


def generate(new_tokens, batch, sample):
    lens = [args.prompt - 37 * i for i in range(batch)]
    ids = torch.zeros(batch, args.prompt, dtype=torch.long, device="cuda")
    mask = torch.zeros_like(ids)
    for i, n in enumerate(lens):  # left padding, as for decoder-only batches
        ids[i, args.prompt - n:] = torch.randint(1, cfg.vocab_size, (n,), device="cuda")
        mask[i, args.prompt - n:] = 1
    clock = Clock()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    kw = dict(do_sample=True, top_p=0.9, temperature=0.7) if sample else dict(do_sample=False)
    out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new_tokens,
                         min_new_tokens=new_tokens, pad_token_id=0,
                         streamer=clock if batch == 1 else None, **kw)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    r = {"total_ms": (t1 - t0) * 1e3, "new_tokens": int(out.shape[1] - ids.shape[1]),
         "batch": batch, "prompt_lens": lens}
    if len(clock.t) >= 3:
        r.update(ttft_ms=(clock.t[1] - t0) * 1e3, decode_steps=len(clock.t) - 2,
                 tpot_ms=(clock.t[-1] - clock.t[1]) * 1e3 / (len(clock.t) - 2))
    return r


if args.style == "compile":
    model.generation_config.cache_implementation = "static"
    model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
    t = time.perf_counter()
    generate(args.new_tokens, 1, False)  # compiles: not a request anyone times
    print(f"compiled in {time.perf_counter() - t:.1f} s", flush=True)
run = {"sync-loop": lambda n: sync_loop(n), "per-step": lambda n: per_step(n),
       "sample": lambda n: generate(n, 4, True),
       "compile": lambda n: generate(n, 1, False)}[args.style]
runs = [dict(run(max(args.new_tokens // 4, 4) if args.style == "sync-loop" else args.new_tokens),
             warmup=True)]
runs += [dict(run(args.new_tokens), warmup=False) for _ in range(args.requests)]
res = {"arch": "llama", "style": args.style, "prompt": args.prompt, "batch":
       4 if args.style == "sample" else 1, "new_tokens": args.new_tokens, "requests": runs,
       "torch": torch.__version__, "transformers": transformers.__version__}
print(json.dumps(res))
if args.timer:
    with open(args.timer, "w") as f:
        json.dump(res, f, indent=1)
