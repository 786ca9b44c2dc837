"""An HF transformers decoder (random weights, bf16) run the way inference scripts are
commonly written: one NVTX range around each prompt ("prefill") and one around each whole
decode loop ("decode"), no token counts in the names, an unnamed warm-up request first, and
the script's own timer. The report has to find steps, tokens and warm-up from the trace.

--arch llama: TinyLlama-1.1B's shape (22 layers, hidden 2048, GQA 32/4, SwiGLU 5632).
--arch llama3-8b: Llama-3-8B's layer shape (hidden 4096, GQA 32/8, SwiGLU 14336, vocabulary
128256), --layers of them (default 4): decode GEMVs large enough to fill an H200.
--arch deepseek-v2-lite: DeepSeek-V2-Lite's real config (27 layers, MLA, 64 routed experts of
which 6 per token, 2 shared): the routed experts run as grouped GEMMs outside cuBLAS.

--cuda-profiler warmup|timed: torch.cuda.profiler.start() before and stop() after the warm-up
request, or around the timed ones (cudaProfilerStart/Stop, as vLLM's "cuda" profiler mode and
nsys --capture-range=cudaProfilerApi use them).

--signal warmup|timed: the process sends itself SIGUSR1 before and after those requests
(record --capture signal). --step-ranges: an NVTX range "step" around each decode step,
inside "decode" (record --capture 'nvtx:^step$/8' records one step in eight).

Per decode step it records the host's wall time and the main thread's CPU time (the thread
launches every kernel: time it is not running, descheduled or stolen by the hypervisor, is
not counted); over the timed requests, the host's steal time and the time the main thread
waited to run (the host's disturbances that make wall times swing).

Writes the model's config.json to --config-out and one JSON object with per-request timings
to --timer (and stdout)."""
import argparse
import json
import os
import statistics
import time

import torch
import transformers

import windows
from tinyllama import TINYLLAMA

p = argparse.ArgumentParser()
p.add_argument("--arch", choices=["llama", "llama3-8b", "deepseek-v2-lite"], default="llama")
p.add_argument("--layers", type=int, default=4, help="llama3-8b: decoder layers")
p.add_argument("--prompt", type=int, default=512)
p.add_argument("--new-tokens", type=int, default=32)
p.add_argument("--batch", type=int, default=1)
p.add_argument("--requests", type=int, default=3, help="timed requests after the warm-up")
p.add_argument("--timer", help="write the timings here (JSON)")
p.add_argument("--config-out", help="write the model's config.json here")
windows.add_options(p)
args = p.parse_args()
if args.new_tokens < 2 or args.requests < 1:
    p.error("--new-tokens needs at least 2 (the prefill's token and one decode step) and "
            "--requests at least 1: the per-step figures divide by them")

DEEPSEEK_V2_LITE = {
    "model_type": "deepseek_v2", "hidden_size": 2048, "intermediate_size": 10944,
    "moe_intermediate_size": 1408, "num_hidden_layers": 27, "num_attention_heads": 16,
    "num_key_value_heads": 16, "n_shared_experts": 2, "n_routed_experts": 64,
    "num_experts_per_tok": 6, "first_k_dense_replace": 1, "moe_layer_freq": 1,
    "kv_lora_rank": 512, "q_lora_rank": None, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "v_head_dim": 128, "n_group": 1, "topk_group": 1, "topk_method": "greedy",
    "norm_topk_prob": False, "routed_scaling_factor": 1.0, "scoring_func": "softmax",
    "vocab_size": 102400, "max_position_embeddings": 163840, "rms_norm_eps": 1e-6,
    "rope_theta": 10000, "hidden_act": "silu", "tie_word_embeddings": False,
    "rope_scaling": {"type": "yarn", "factor": 40, "beta_fast": 32, "beta_slow": 1,
                     "mscale": 0.707, "mscale_all_dim": 0.707,
                     "original_max_position_embeddings": 4096},
}

torch.manual_seed(0)
torch.set_default_dtype(torch.bfloat16)
if args.arch == "llama":
    cfg = transformers.LlamaConfig(**TINYLLAMA)
elif args.arch == "llama3-8b":
    cfg = transformers.LlamaConfig(hidden_size=4096, intermediate_size=14336,
                                   num_hidden_layers=args.layers, num_attention_heads=32,
                                   num_key_value_heads=8, vocab_size=128256,
                                   max_position_embeddings=8192, rope_theta=500000.0)
else:
    d = dict(DEEPSEEK_V2_LITE)
    d.pop("model_type")
    try:
        cfg = transformers.DeepseekV2Config(**d)
    except Exception as e:  # an older rope_scaling spelling: keep the rest of the config
        print("rope_scaling not taken:", e)
        d.pop("rope_scaling")
        cfg = transformers.DeepseekV2Config(**d)
t_build = time.perf_counter()
with torch.device("cuda"):
    model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
print(f"built {type(model).__name__} in {time.perf_counter() - t_build:.1f} s, "
      f"{sum(t.numel() for t in model.parameters())} parameters", flush=True)
if args.config_out:
    model.config.to_json_file(args.config_out)
ids = torch.randint(0, cfg.vocab_size, (args.batch, args.prompt), device="cuda")


@torch.inference_mode()
def request():
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    torch.cuda.nvtx.range_push("prefill")
    out = model(input_ids=ids, use_cache=True)
    past = out.past_key_values
    nxt = out.logits[:, -1:].argmax(-1)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    torch.cuda.nvtx.range_push("decode")
    marks = [t1]  # host time at each step's end: the step's launch time when CPU-bound
    cpu = [time.thread_time()]  # the main thread's CPU time, the same moments
    for _ in range(args.new_tokens - 1):
        if args.step_ranges:
            torch.cuda.nvtx.range_push("step")
        out = model(input_ids=nxt, past_key_values=past, use_cache=True)
        past = out.past_key_values
        nxt = out.logits[:, -1:].argmax(-1)
        if args.step_ranges:
            torch.cuda.nvtx.range_pop()
        marks.append(time.perf_counter())
        cpu.append(time.thread_time())
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    t2 = time.perf_counter()
    steps = args.new_tokens - 1
    return {"prefill_ms": (t1 - t0) * 1e3, "decode_ms": (t2 - t1) * 1e3, "decode_steps": steps,
            "tpot_ms": (t2 - t1) * 1e3 / steps,
            "step_host_ms": [(b - a) * 1e3 for a, b in zip(marks, marks[1:])],
            "step_cpu_ms": [(b - a) * 1e3 for a, b in zip(cpu, cpu[1:])]}


def disturbances():
    """The host's steal time (all CPUs) and the time this thread waited to run, in ms: None
    where /proc does not say."""
    try:
        with open("/proc/stat") as f:
            steal = int(f.readline().split()[8]) * 1e3 / os.sysconf("SC_CLK_TCK")
        with open("/proc/thread-self/schedstat") as f:
            delay = int(f.read().split()[1]) / 1e6
        return steal, delay
    except (OSError, IndexError, ValueError):
        return None


def p10(values):
    return statistics.quantiles(values, n=10)[0] if len(values) > 1 else values[0]


windows.edge(args, "warmup", True)
runs = [dict(request(), warmup=True)]  # the warm-up: no name, like most scripts
windows.edge(args, "warmup", False)
windows.edge(args, "timed", True)
before = disturbances()
runs += [dict(request(), warmup=False) for _ in range(args.requests)]
after = disturbances()
windows.edge(args, "timed", False)
timed = [r for r in runs if not r["warmup"]]
res = {"arch": args.arch, "model_type": cfg.model_type, "prompt": args.prompt,
       "batch": args.batch, "new_tokens": args.new_tokens, "requests": runs,
       # what bench/overhead.sh and bench/summarize.py read
       "prefill_ms_median": statistics.median(r["prefill_ms"] for r in timed),
       "decode_ms_per_token_median": statistics.median(r["tpot_ms"] for r in timed),
       # the least disturbed request: on a shared host the overhead shows there first
       "prefill_ms_min": min(r["prefill_ms"] for r in timed),
       "decode_ms_per_token_min": min(r["tpot_ms"] for r in timed),
       # the 10th percentile of the timed steps' host times and of the timed prefills: the
       # host flips between a fast and a slow state within seconds; this compares the fast one
       "prefill_ms_p10": p10([r["prefill_ms"] for r in timed]),
       "decode_ms_per_token_p10": p10([s for r in timed for s in r["step_host_ms"]]),
       # the same from the main thread's CPU time per step (what launching costs it, whatever
       # else the host does); prefill waits for the GPU, so it has wall times only
       "decode_cpu_ms_per_token_median": statistics.median(
           statistics.mean(r["step_cpu_ms"]) for r in timed),
       "decode_cpu_ms_per_token_min": min(statistics.mean(r["step_cpu_ms"]) for r in timed),
       "decode_cpu_ms_per_token_p10": p10([s for r in timed for s in r["step_cpu_ms"]]),
       "timed_steal_ms": after[0] - before[0] if before and after else None,
       "timed_run_delay_ms": after[1] - before[1] if before and after else None,
       "torch": torch.__version__, "transformers": transformers.__version__}
print(json.dumps(res))
if args.timer:
    with open(args.timer, "w") as f:
        json.dump(res, f, indent=1)
