"""The overhead split in PyTorch, inside one process: HF eager decode steps (TinyLlama-1.1B's
shape, random weights, bf16, as tests/gpu/hf_loop.py builds it) and single-kernel ops timed
under each phase of build/lib/libcupti_phases.so (bench/cupti_phases.c lists them), phases in
rotating order each round, so the host's drift between processes falls out. Per phase: the
median over rounds of ms per decode step and ns per op, and per decode step, paired per round,
the difference from the floor and from CUPTI finalized ("detached").
Run without a profiler (it subscribes to CUPTI itself).
Usage: torch_split.py [--rounds N] [--steps N] [--lib PATH]"""
import argparse
import ctypes
import json
import statistics
import time

import torch
import transformers

from torch_launch import per_op_ns

p = argparse.ArgumentParser()
p.add_argument("--rounds", type=int, default=10)
p.add_argument("--steps", type=int, default=16, help="decode steps timed per phase and round")
p.add_argument("--lib", default="build/lib/libcupti_phases.so")
args = p.parse_args()

torch.manual_seed(0)
torch.set_default_dtype(torch.bfloat16)
cfg = transformers.LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                               num_attention_heads=32, num_key_value_heads=4, vocab_size=32000,
                               max_position_embeddings=4096)
with torch.device("cuda"):
    model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
ids = torch.randint(0, cfg.vocab_size, (1, 128), device="cuda")
x = torch.ones(16, device="cuda")
a = torch.ones(64, 64, device="cuda")


@torch.inference_mode()
def decode_ms_per_step():
    out = model(input_ids=ids, use_cache=True)
    past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        out = model(input_ids=nxt, past_key_values=past, use_cache=True)
        past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3 / args.steps


for _ in range(2):  # warm-up: kernels loaded, allocator filled
    decode_ms_per_step()
lib = ctypes.CDLL(args.lib)
lib.lsp_phase_name.restype = ctypes.c_char_p
rc = lib.lsp_init()
if rc:
    raise SystemExit(f"torch_split: CUPTI could not be set up ({rc})")
names = [lib.lsp_phase_name(i).decode() for i in range(lib.lsp_phases())]
res = {n: {"decode": [], "add": [], "mm": []} for n in names}
for r in range(args.rounds):
    for j in range(len(names)):
        ph = (r + j) % len(names)
        torch.cuda.synchronize()
        if lib.lsp_phase(ph):
            raise SystemExit(f"torch_split: phase {names[ph]} could not be set")
        res[names[ph]]["decode"].append(decode_ms_per_step())
        res[names[ph]]["add"].append(per_op_ns(lambda: x.add_(1), 5000, 0))
        res[names[ph]]["mm"].append(per_op_ns(lambda: torch.mm(a, a), 2000, 0))
torch.cuda.synchronize()
lib.lsp_phase(0)
print(f"torch_split: {args.rounds} rounds, {args.steps} decode steps per phase and round, "
      "phases in rotating order; medians over rounds")
print(f"{'phase':12} {'ms/step':>8} {'vs floor, paired median (range)':>34} "
      f"{'vs detached, paired median (range)':>36} {'add ns':>8} {'mm ns':>8}")


def paired(n, ref):
    rel = [100 * (v / f - 1) for v, f in zip(res[n]["decode"], res[ref]["decode"])]
    return (f"{statistics.median(rel):+9.1f} % ({min(rel):+6.1f} ... {max(rel):+6.1f} %) "
            f"{sum(x > 0 for x in rel):2d}/{len(rel)}")


for n in names:
    print(f"{n:12} {statistics.median(res[n]['decode']):8.3f} {paired(n, 'floor')} "
          f"{paired(n, 'detached')} {statistics.median(res[n]['add']):8.0f} "
          f"{statistics.median(res[n]['mm']):8.0f}")
print(json.dumps({"torch": torch.__version__, "rounds": args.rounds, "steps": args.steps,
                  "phases": res}))
