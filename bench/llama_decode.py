"""A Llama-style decoder (HF transformers, random weights, bf16) with a manual prefill and
decode loop inside NVTX ranges: the LLM workload of llmprof's benchmark and fixtures.

Default shape: TinyLlama-1.1B (22 layers, hidden 2048, GQA 32/4 heads, SwiGLU 5632),
batch 1, prompt 512, 128 new tokens. Prints one JSON line with per-run timings.
Range names carry key=value words that `llmprof report` reads (tokens, batch, step).
"""
import argparse
import contextlib
import json
import statistics
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM

p = argparse.ArgumentParser()
p.add_argument("--prompt", type=int, default=512)
p.add_argument("--new-tokens", type=int, default=128)
p.add_argument("--batch", type=int, default=1)
p.add_argument("--warmup", type=int, default=1)
p.add_argument("--runs", type=int, default=3)
p.add_argument("--layers", type=int, default=22)
p.add_argument("--hidden", type=int, default=2048)
p.add_argument("--intermediate", type=int, default=5632)
p.add_argument("--heads", type=int, default=32)
p.add_argument("--kv-heads", type=int, default=4)
p.add_argument("--vocab", type=int, default=32000)
p.add_argument("--emit-nvtx", action="store_true",
               help="one NVTX range per PyTorch operator (the report's operator table)")
p.add_argument("--no-nvtx", action="store_true",
               help="no prefill/decode ranges (the report then infers the stages)")
args = p.parse_args()

torch.manual_seed(0)
cfg = LlamaConfig(hidden_size=args.hidden, intermediate_size=args.intermediate,
                  num_hidden_layers=args.layers, num_attention_heads=args.heads,
                  num_key_value_heads=args.kv_heads, vocab_size=args.vocab,
                  max_position_embeddings=4096)
torch.set_default_dtype(torch.bfloat16)
with torch.device("cuda"):
    model = LlamaForCausalLM(cfg).eval()
params = sum(t.numel() for t in model.parameters())
ids = torch.randint(0, args.vocab, (args.batch, args.prompt), device="cuda")
nvtx = torch.cuda.nvtx
if args.no_nvtx:
    class _NoNvtx:
        range_push = range_pop = staticmethod(lambda *a: None)
    nvtx = _NoNvtx


@torch.inference_mode()
def generate(tag):
    torch.cuda.synchronize()
    nvtx.range_push(f"prefill tokens={args.prompt * args.batch} batch={args.batch} run={tag}")
    t0 = time.perf_counter()
    out = model(input_ids=ids, use_cache=True)
    past = out.past_key_values
    nxt = out.logits[:, -1:].argmax(-1)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    nvtx.range_pop()
    for step in range(args.new_tokens):
        nvtx.range_push(f"decode step={step} tokens={args.batch} batch={args.batch} run={tag}")
        out = model(input_ids=nxt, past_key_values=past, use_cache=True)
        past = out.past_key_values
        nxt = out.logits[:, -1:].argmax(-1)
        nvtx.range_pop()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    return (t1 - t0) * 1e3, (t2 - t1) * 1e3 / args.new_tokens


prefill, decode = [], []
with torch.autograd.profiler.emit_nvtx() if args.emit_nvtx else contextlib.nullcontext():
    for i in range(args.warmup):
        generate(f"warmup{i}")
    for i in range(args.runs):
        pf, dc = generate(str(i))
        prefill.append(pf)
        decode.append(dc)
print(json.dumps({"params": params, "prompt": args.prompt, "new_tokens": args.new_tokens,
                  "batch": args.batch, "prefill_ms": prefill, "decode_ms_per_token": decode,
                  "prefill_ms_median": statistics.median(prefill),
                  "decode_ms_per_token_median": statistics.median(decode)}))
