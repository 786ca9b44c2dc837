"""transformers' ContinuousBatchingManager as a server uses it: requests added over time (a
new one every --interarrival-ms) while the manager's thread runs, a token budget small enough
(--max-batch-tokens) that prompts are prefilled in chunks beside running decodes; no NVTX.
TinyLlama's shape, random bf16 weights. Writes what it did to --truth (JSON): requests,
tokens per request, the transformers version and the options it accepted."""
import argparse
import inspect
import json
import random
import time

import transformers
from transformers.generation import GenerationConfig

from tinyllama import paged_model

p = argparse.ArgumentParser()
p.add_argument("--requests", type=int, default=24)
p.add_argument("--new-tokens", type=int, default=32)
p.add_argument("--max-batch-tokens", type=int, default=256)
p.add_argument("--interarrival-ms", type=float, default=15.0)
p.add_argument("--truth")
p.add_argument("--config-out")
args = p.parse_args()

rng = random.Random(1)  # the prompts, then the arrivals
model, inputs = paged_model(args.requests, rng, args.config_out)
gen = GenerationConfig(max_new_tokens=args.new_tokens, do_sample=False, eos_token_id=-1,
                       pad_token_id=0)
used = {}
kw = {}
sig = inspect.signature(model.init_continuous_batching)
print("init_continuous_batching", sig)
try:
    from transformers.generation.configuration_utils import ContinuousBatchingConfig
    cb = ContinuousBatchingConfig(max_batch_tokens=args.max_batch_tokens)
    if "continuous_batching_config" in sig.parameters:
        kw["continuous_batching_config"] = cb
        used["continuous_batching_config.max_batch_tokens"] = args.max_batch_tokens
except Exception as e:  # an older API: the budget on the generation config
    print("no ContinuousBatchingConfig:", e)
if not kw:
    gen.max_batch_tokens = args.max_batch_tokens
    used["generation_config.max_batch_tokens"] = args.max_batch_tokens
manager = model.init_continuous_batching(generation_config=gen, **kw)
manager.start()
t0 = time.perf_counter()
ids = []
for i, x in enumerate(inputs):
    ids.append(manager.add_request(input_ids=x, max_new_tokens=args.new_tokens))
    time.sleep(rng.expovariate(1000.0 / args.interarrival_ms))
got = {}
while len(got) < len(ids) and time.perf_counter() - t0 < 120:
    r = manager.get_result(timeout=1)
    if r is not None and r.is_finished():
        got[r.request_id] = len(r.generated_tokens)
wall = time.perf_counter() - t0
manager.stop(block=True)
res = dict(requests=len(got), prompts=[len(x) for x in inputs], generated=list(got.values()),
           wall_s=wall, transformers=transformers.__version__, options=used)
if args.truth:
    with open(args.truth, "w") as f:
        json.dump(res, f)
print(f"hf_cb: {len(got)} of {len(ids)} requests, {sum(got.values())} tokens generated, "
      f"{wall:.3f} s, options {used}")
