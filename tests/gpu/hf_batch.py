"""transformers' own continuous batching (generate_batch) on a Llama-style decoder (TinyLlama's
shape, random bf16 weights), as a user would call it: a list of tokenized prompts of 64-511
tokens, greedy, no NVTX. Writes what it generated to --truth (JSON): requests, tokens per
request, wall time; the model's config.json to --config-out."""
import argparse
import json
import random
import time

import transformers
from transformers.generation import GenerationConfig

from tinyllama import paged_model

p = argparse.ArgumentParser()
p.add_argument("--requests", type=int, default=24)
p.add_argument("--new-tokens", type=int, default=48)
p.add_argument("--truth")
p.add_argument("--config-out")
args = p.parse_args()

model, inputs = paged_model(args.requests, random.Random(0), args.config_out)
gen = GenerationConfig(max_new_tokens=args.new_tokens, do_sample=False, eos_token_id=-1,
                       pad_token_id=0)
t0 = time.perf_counter()
out = model.generate_batch(inputs=inputs, generation_config=gen, progress_bar=False)
wall = time.perf_counter() - t0
got = [len(o.generated_tokens) for o in out.values()]
res = dict(requests=len(out), prompts=[len(x) for x in inputs], generated=got, wall_s=wall,
           transformers=transformers.__version__)
if args.truth:
    with open(args.truth, "w") as f:
        json.dump(res, f)
print(f"hf_batch: {len(out)} requests, {sum(got)} tokens generated, {wall:.3f} s")
