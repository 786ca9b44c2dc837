"""A tensor-parallel Llama-style decoder (random weights, bf16) run under torchrun the way TP
inference scripts are written: Megatron-style sharding (QKV and gate/up split by columns,
o_proj and down_proj by rows, an NCCL all-reduce after attention and after the MLP, the
vocabulary split with an all-gather of the logits), a static KV cache, greedy decoding.
Harness: an unnamed warm-up request, then timed requests with one NVTX range "prefill"
around each prompt and one "decode" around each whole decode loop.

--overlap N: each row-parallel projection (o_proj, down_proj) is computed in N blocks of its
output features, each block's all-reduce issued asynchronously (NCCL's own stream) while the
next block's GEMM runs, then waited for: the decomposed GEMM + collective overlap of async
tensor parallelism, so that communication runs beside compute.

--impl hf: transformers' own tensor parallelism instead (LlamaForCausalLM saved with random
weights, loaded with tp_plan="auto", generate()), no NVTX ranges: a program as HF users run it.
Run without torchrun (no WORLD_SIZE) it is one process on one GPU.

--tp N (manual only): tensor parallelism over groups of N ranks inside WORLD_SIZE / N
data-parallel replicas, as vLLM and SGLang lay out TP x DP: ranks r .. r+N-1 form one TP
process group, ranks with the same place in their replica one DP group; each replica decodes
its own requests and, once per decode step, its ranks all-reduce a one-element "unfinished
requests" count across the DP group (vLLM's data-parallel step synchronisation), so the run
has two kinds of communicators: per-layer all-reduces inside each TP group, one small
all-reduce per step inside each DP group. --dp-sync 0: no DP groups, the replicas never
communicate (independent engines behind a router).

--pp N (manual only, with --tp): pipeline parallelism over N stages of --tp ranks each
(WORLD_SIZE = tp x N, no data parallelism): stage s holds layers s*L/N .. (s+1)*L/N - 1,
receives the hidden states from the rank at its place in the stage before and sends its own
to the next (NCCL send/recv); the last stage sends the token back to the first.

Prints one JSON line per rank: rank, GPU, prefill ms and ms per decode token over the timed
requests (median and least), as bench/summarize.py reads them."""
import argparse
import json
import os
import statistics
import tempfile
import time

import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--impl", choices=["manual", "hf"], default="manual")
p.add_argument("--layers", type=int, default=8)
p.add_argument("--hidden", type=int, default=4096)
p.add_argument("--heads", type=int, default=32)
p.add_argument("--kv-heads", type=int, default=8)
p.add_argument("--ffn", type=int, default=14336)
p.add_argument("--vocab", type=int, default=32000)
p.add_argument("--prompt", type=int, default=512)
p.add_argument("--new-tokens", type=int, default=32)
p.add_argument("--requests", type=int, default=3)
p.add_argument("--overlap", type=int, default=1)
p.add_argument("--tp", type=int, default=0, help="TP group size (default: every rank)")
p.add_argument("--pp", type=int, default=1, help="pipeline stages (each of --tp ranks)")
p.add_argument("--dp-sync", type=int, default=1,
               help="0: the replicas never communicate (independent engines behind a router)")
args = p.parse_args()

nranks = int(os.environ.get("WORLD_SIZE", "1"))
rank = int(os.environ.get("RANK", "0"))
local = int(os.environ.get("LOCAL_RANK", "0"))
torch.cuda.set_device(local)
tp_group = dp_group = None
world = args.tp if args.tp > 0 else nranks  # the TP degree: shards per replica
assert nranks % world == 0, "WORLD_SIZE must be a multiple of --tp"
pp = args.pp
assert pp == 1 or nranks == world * pp, "--pp needs WORLD_SIZE = tp x pp"
stage = rank // world if pp > 1 else 0
if nranks > 1:
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
if world < nranks:
    # every rank creates every group, in one order (torch.distributed requires it)
    for r0 in range(0, nranks, world):
        g = dist.new_group(list(range(r0, r0 + world)))
        if r0 <= rank < r0 + world:
            tp_group = g
    for i in range(world if args.dp_sync and pp == 1 else 0):
        g = dist.new_group(list(range(i, nranks, world)))
        if rank % world == i:
            dp_group = g
torch.manual_seed(0)
dev = torch.device("cuda", local)
dt = torch.bfloat16


def all_reduce(x):
    if world > 1:
        dist.all_reduce(x, group=tp_group)
    return x


def row_parallel(x, w):
    """x @ w.t() summed over the ranks; with --overlap N, in N blocks of output features, each
    block's all-reduce running while the next block's GEMM does."""
    if world == 1 or args.overlap <= 1:
        return all_reduce(x @ w.t())
    outs, works = [], []
    for wc in w.chunk(args.overlap, 0):
        y = x @ wc.t()
        works.append(dist.all_reduce(y, group=tp_group, async_op=True))
        outs.append(y)
    for wk in works:
        wk.wait()
    return torch.cat(outs, -1)


def rms(x, w):
    v = x.float().pow(2).mean(-1, keepdim=True)
    return (x.float() * torch.rsqrt(v + 1e-5)).to(dt) * w


def rope(x, pos):
    d = x.shape[-1]
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2, device=dev, dtype=torch.float32) / d))
    f = pos.float()[:, None] * inv[None, :]
    cos, sin = f.cos().to(dt)[:, None], f.sin().to(dt)[:, None]  # (T, 1, d/2): every head
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


class Manual:
    def __init__(self):
        a = args
        assert a.heads % world == 0 and a.kv_heads % world == 0 and a.ffn % world == 0
        self.hd = a.hidden // a.heads
        self.h, self.kv = a.heads // world, a.kv_heads // world
        f = a.ffn // world
        self.vshard = (a.vocab + world - 1) // world

        def w(*s):
            return (torch.randn(*s, device=dev, dtype=dt) * 0.02)
        self.emb = w(a.vocab, a.hidden)
        here = range(stage * a.layers // pp, (stage + 1) * a.layers // pp)  # this stage's
        self.layers = [dict(n1=torch.ones(a.hidden, device=dev, dtype=dt),
                            qkv=w((self.h + 2 * self.kv) * self.hd, a.hidden),
                            o=w(a.hidden, self.h * self.hd),
                            n2=torch.ones(a.hidden, device=dev, dtype=dt),
                            gu=w(2 * f, a.hidden), down=w(a.hidden, f))
                       for _ in here]
        self.norm = torch.ones(a.hidden, device=dev, dtype=dt)
        self.head = w(self.vshard, a.hidden)
        cap = a.prompt + a.new_tokens + 1
        self.k = [torch.zeros(1, self.kv, cap, self.hd, device=dev, dtype=dt)
                  for _ in here]
        self.v = [torch.zeros_like(c) for c in self.k]

    def forward(self, ids, start, T):
        """The next token (on the first and last pipeline stage; None between)."""
        pos = torch.arange(start, start + T, device=dev)
        if stage == 0:
            x = self.emb[ids]
        else:  # the stage before's hidden states, from the rank at this one's place
            x = torch.empty(1, T, args.hidden, device=dev, dtype=dt)
            dist.recv(x, src=rank - world)
        for i, L in enumerate(self.layers):
            y = rms(x, L["n1"]) @ L["qkv"].t()
            q, k, v = y.split([self.h * self.hd, self.kv * self.hd, self.kv * self.hd], -1)
            q = rope(q.view(1, T, self.h, self.hd), pos).transpose(1, 2)
            k = rope(k.view(1, T, self.kv, self.hd), pos).transpose(1, 2)
            self.k[i][:, :, start:start + T] = k
            self.v[i][:, :, start:start + T] = v.view(1, T, self.kv, self.hd).transpose(1, 2)
            kk, vv = self.k[i][:, :, :start + T], self.v[i][:, :, :start + T]
            o = torch.nn.functional.scaled_dot_product_attention(
                q, kk, vv, is_causal=T > 1, enable_gqa=True)
            x = x + row_parallel(o.transpose(1, 2).reshape(1, T, -1), L["o"])
            g, u = (rms(x, L["n2"]) @ L["gu"].t()).chunk(2, -1)
            x = x + row_parallel(torch.nn.functional.silu(g) * u, L["down"])
        if stage < pp - 1:
            dist.send(x, dst=rank + world)
            if stage > 0:
                return None
            tok = torch.empty(1, 1, device=dev, dtype=torch.long)
            dist.recv(tok, src=(pp - 1) * world + rank % world)
            return tok
        logits = rms(x[:, -1:], self.norm) @ self.head.t()
        if world > 1:
            parts = [torch.empty_like(logits) for _ in range(world)]
            dist.all_gather(parts, logits, group=tp_group)
            logits = torch.cat(parts, -1)
        tok = logits[..., : args.vocab].argmax(-1)
        if pp > 1:
            dist.send(tok, dst=rank % world)
        return tok

    def request(self, prompt, timed):
        nvtx = torch.cuda.nvtx
        if timed:
            nvtx.range_push("prefill")
        t0 = time.perf_counter()
        tok = self.forward(prompt, 0, args.prompt)
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        if timed:
            nvtx.range_pop()
            nvtx.range_push("decode")
        unfinished = torch.ones(1, device=dev, dtype=torch.int32)
        for s in range(args.new_tokens):
            tok = self.forward(tok, args.prompt + s, 1)
            if dp_group is not None:  # the replicas agree whether any still decodes
                unfinished.fill_(args.new_tokens - 1 - s)
                dist.all_reduce(unfinished, group=dp_group)
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        if timed:
            nvtx.range_pop()
        return (t1 - t0) * 1e3, (t2 - t1) * 1e3 / args.new_tokens


class HF:
    def __init__(self):
        import transformers
        cfg = transformers.LlamaConfig(
            hidden_size=args.hidden, intermediate_size=args.ffn,
            num_hidden_layers=args.layers, num_attention_heads=args.heads,
            num_key_value_heads=args.kv_heads, vocab_size=args.vocab,
            max_position_embeddings=4096)
        path = os.path.join(tempfile.gettempdir(), f"tp-llama-{os.getpid() if world == 1 else 'run'}")
        if rank == 0 and not os.path.exists(os.path.join(path, "config.json")):
            with torch.device(dev):
                transformers.LlamaForCausalLM(cfg).to(dt).save_pretrained(path)
        if world > 1:
            dist.barrier()
        kw = {"tp_plan": "auto"} if world > 1 else {"device_map": {"": local}}
        self.m = transformers.LlamaForCausalLM.from_pretrained(path, dtype=dt, **kw).eval()

    def request(self, prompt, timed):
        g = dict(do_sample=False, min_new_tokens=args.new_tokens,
                 max_new_tokens=args.new_tokens)
        t0 = time.perf_counter()
        self.m.generate(prompt, max_new_tokens=1, min_new_tokens=1, do_sample=False)
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        self.m.generate(prompt, **g)
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        # the second call repeats the prefill: its decode share is the difference
        return (t1 - t0) * 1e3, ((t2 - t1) - (t1 - t0)) * 1e3 / args.new_tokens


with torch.inference_mode():
    m = Manual() if args.impl == "manual" else HF()
    prompt = torch.randint(0, args.vocab, (1, args.prompt), device=dev,
                           generator=torch.Generator(dev).manual_seed(1))
    m.request(prompt, False)  # warm-up
    res = [m.request(prompt, True) for _ in range(args.requests)]
print(json.dumps({"rank": rank, "world": nranks, "tp": world, "gpu": torch.cuda.get_device_name(dev),
                  "prefill_ms_median": statistics.median(r[0] for r in res),
                  "decode_ms_per_token_median": statistics.median(r[1] for r in res),
                  "prefill_ms_min": min(r[0] for r in res),
                  "decode_ms_per_token_min": min(r[1] for r in res)}), flush=True)
if nranks > 1:
    dist.destroy_process_group()
