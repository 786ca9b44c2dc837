"""A miniature serving engine written the way vLLM works, as the truth for llmprof's serving
analysis (docs/serving.md): requests arrive over time (exponential gaps), a scheduler builds
each forward pass ("iteration") as one flat batch of tokens under a token budget (one token
per decoding sequence, then prefill chunks of the requests admitted, a long prompt cut into
chunks), per-sequence KV caches, greedy sampling, the lm_head run only on the rows that sample
(logits_indices), outside any CUDA graph. --graphs runs decode-only iterations as CUDA graphs
captured for buckets of 1/2/4/8/16/32 sequences (padded), as vLLM does; --mark emits the
request convention (integrations/llmprof_requests.py). No NVTX otherwise.

A Llama-style decoder with random bf16 weights (TinyLlama's width, --layers layers). Writes its
own per-iteration and per-request timings (host clock, after the sampled tokens reached the
host) to --truth as JSON; the model's config.json to --config-out."""
import argparse
import heapq
import json
import os
import random
import signal
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "integrations"))
import llmprof_requests as lpr  # noqa: E402

from tinyllama import TINYLLAMA  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--requests", type=int, default=32)
p.add_argument("--layers", type=int, default=8)
p.add_argument("--budget", type=int, default=512, help="tokens per iteration")
p.add_argument("--max-seqs", type=int, default=32)
p.add_argument("--prompt", default="64:511", help="prompt lengths, uniform MIN:MAX")
p.add_argument("--new-tokens", default="16:64", help="tokens generated, uniform MIN:MAX")
p.add_argument("--interarrival-ms", type=float, default=10.0, help="mean gap between arrivals")
p.add_argument("--graphs", action="store_true", help="decode-only iterations as CUDA graphs")
p.add_argument("--mark", action="store_true", help="emit the request convention")
p.add_argument("--nvtx-steps", action="store_true",
               help="an NVTX range 'step tokens=N' around each iteration (a stage to watch)")
p.add_argument("--duration", type=float,
               help="requests arrive for this many seconds (instead of --requests)")
p.add_argument("--seed", type=int, default=0)
p.add_argument("--profile-iters", help="A:B: cudaProfilerStart before iteration A, Stop after "
               "iteration B-1 (a live server's window, as vLLM's cuda profiler does)")
p.add_argument("--signal-iters", help="A:B: SIGUSR1 to itself before iteration A and before B "
               "(record --capture signal, as an operator's kill -USR1 would)")
p.add_argument("--truth", help="write the engine's own timings here (JSON)")
p.add_argument("--config-out", help="write the model's config.json here")
args = p.parse_args()

if args.requests < 1 or args.budget < 1 or args.max_seqs < 1:
    sys.exit("serve_engine.py: --requests, --budget and --max-seqs must be at least 1")
pmin, pmax = (int(x) for x in args.prompt.split(":"))
gmin, gmax = (int(x) for x in args.new_tokens.split(":"))
if not (1 <= pmin <= pmax and 1 <= gmin <= gmax):
    sys.exit("serve_engine.py: --prompt and --new-tokens take MIN:MAX with 1 <= MIN <= MAX")

window = tuple(int(x) for x in args.profile_iters.split(":")) if args.profile_iters else None
sig_window = tuple(int(x) for x in args.signal_iters.split(":")) if args.signal_iters else ()
H, NH, KVH = TINYLLAMA["hidden_size"], TINYLLAMA["num_attention_heads"], TINYLLAMA["num_key_value_heads"]
D, I, V = H // NH, TINYLLAMA["intermediate_size"], TINYLLAMA["vocab_size"]
L = args.layers
MAXLEN = pmax + gmax + 1
BUCKETS = [b for b in (1, 2, 4, 8, 16, 32) if b <= max(args.max_seqs, 1)]
if args.max_seqs > BUCKETS[-1]:
    BUCKETS.append(args.max_seqs)
DUMMY = args.max_seqs  # the KV slot padded rows write to

torch.manual_seed(args.seed)
dev = torch.device("cuda")
# Not PyTorch's cuDNN attention, which builds a plan for each new shape: a serving loop's shapes
# change every iteration (with it, every eager decode step took 44 ms whatever its batch, the
# graph steps 1.5 ms), and engines use kernels that take any length
SDPA = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


def sdpa(*a, **k):
    with sdpa_kernel(SDPA):
        return F.scaled_dot_product_attention(*a, **k)
dt = torch.bfloat16


def w(*shape):
    return (torch.randn(*shape, device=dev, dtype=dt) * 0.02)


emb = w(V, H)
lm_head = w(V, H)
wqkv = [w((NH + 2 * KVH) * D, H) for _ in range(L)]
wo = [w(H, NH * D) for _ in range(L)]
wgu = [w(2 * I, H) for _ in range(L)]
wd = [w(H, I) for _ in range(L)]
n1 = [torch.ones(H, device=dev, dtype=dt) for _ in range(L)]
n2 = [torch.ones(H, device=dev, dtype=dt) for _ in range(L)]
nf = torch.ones(H, device=dev, dtype=dt)
kc = [torch.zeros(args.max_seqs + 1, MAXLEN, KVH, D, device=dev, dtype=dt) for _ in range(L)]
vc = [torch.zeros(args.max_seqs + 1, MAXLEN, KVH, D, device=dev, dtype=dt) for _ in range(L)]

if args.config_out:
    cfg = dict(TINYLLAMA, num_hidden_layers=L, model_type="llama", architectures=["LlamaForCausalLM"],
               torch_dtype="bfloat16", hidden_act="silu", rms_norm_eps=1e-5, tie_word_embeddings=False)
    with open(args.config_out, "w") as f:
        json.dump(cfg, f, indent=2)


def rms(x, g):
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-5)).to(dt) * g


def decode_attention(q, l, slots, lens, ctx):
    """q [B, NH, D] of B decoding sequences: one batched attention over their caches."""
    k = kc[l][slots, :ctx].transpose(1, 2)  # [B, KVH, ctx, D]
    v = vc[l][slots, :ctx].transpose(1, 2)
    mask = (torch.arange(ctx, device=dev)[None, :] < lens[:, None])[:, None, None, :]
    o = sdpa(q[:, :, None, :], k, v, attn_mask=mask, enable_gqa=True)
    return o.reshape(q.shape[0], NH * D)


def prefill_attention(q, l, slot, start):
    """q [n, NH, D] of one prefill chunk at positions start..start+n-1."""
    n = q.shape[0]
    k = kc[l][slot, :start + n].transpose(0, 1)[None]  # [1, KVH, start+n, D]
    v = vc[l][slot, :start + n].transpose(0, 1)[None]
    qq = q.transpose(0, 1)[None]
    if start == 0:
        o = sdpa(qq, k, v, is_causal=True, enable_gqa=True)
    else:
        i = torch.arange(n, device=dev)[:, None] + start
        j = torch.arange(start + n, device=dev)[None, :]
        o = sdpa(qq, k, v, attn_mask=(j <= i), enable_gqa=True)
    return o[0].transpose(0, 1).reshape(n, NH * D)


def forward(tokens, positions, slots, nd, dec_lens, dec_ctx, chunks):
    """One forward pass over a flat batch: ND decoding rows first (lengths DEC_LENS, attention
    over DEC_CTX positions), then the prefill CHUNKS (slot, start, n). Returns hidden states."""
    x = emb[tokens]
    T = tokens.shape[0]
    for l in range(L):
        h = rms(x, n1[l])
        q, k, v = F.linear(h, wqkv[l]).split([NH * D, KVH * D, KVH * D], dim=1)
        q, k, v = q.view(T, NH, D), k.view(T, KVH, D), v.view(T, KVH, D)
        kc[l][slots, positions] = k
        vc[l][slots, positions] = v
        parts = []
        if nd:
            parts.append(decode_attention(q[:nd], l, slots[:nd], dec_lens, dec_ctx))
        off = nd
        for slot, start, n in chunks:
            parts.append(prefill_attention(q[off:off + n], l, slot, start))
            off += n
        o = parts[0] if len(parts) == 1 else torch.cat(parts)
        x = x + F.linear(o, wo[l])
        h = rms(x, n2[l])
        g, u = F.linear(h, wgu[l]).chunk(2, dim=1)
        x = x + F.linear(F.silu(g) * u, wd[l])
    return rms(x, nf)


class Graph:
    """A decode-only forward captured for BUCKET rows (padded rows write to the DUMMY slot)."""

    def __init__(self, bucket):
        self.b = bucket
        self.tok = torch.zeros(bucket, dtype=torch.long, device=dev)
        self.pos = torch.zeros(bucket, dtype=torch.long, device=dev)
        self.slot = torch.full((bucket,), DUMMY, dtype=torch.long, device=dev)
        self.lens = torch.ones(bucket, dtype=torch.long, device=dev)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                forward(self.tok, self.pos, self.slot, bucket, self.lens, MAXLEN, [])
        torch.cuda.current_stream().wait_stream(s)
        self.g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.g):
            self.out = forward(self.tok, self.pos, self.slot, bucket, self.lens, MAXLEN, [])

    def run(self, tok, pos, slot, lens):
        n = tok.shape[0]
        self.tok[:n].copy_(tok)
        self.pos[:n].copy_(pos)
        self.slot[:n].copy_(slot)
        self.lens[:n].copy_(lens)
        self.slot[n:].fill_(DUMMY)
        self.pos[n:].zero_()
        self.lens[n:].fill_(1)
        self.g.replay()
        return self.out[:n]


class Request:
    def __init__(self, rid, arrival, prompt, gen):
        self.rid, self.arrival, self.prompt, self.gen = rid, arrival, prompt, gen
        self.tokens = torch.randint(0, V, (prompt,)).tolist()
        self.done_prefill = 0   # prompt tokens in the cache
        self.out = []           # generated tokens
        self.slot = -1
        self.admitted = None
        self.token_t = []
        self.range = None
        self.prefill_iters = []


rng = random.Random(args.seed)
t_arr = 0.0
reqs = []
while (t_arr < args.duration) if args.duration else len(reqs) < args.requests:
    reqs.append(Request(len(reqs), t_arr, rng.randint(pmin, pmax), rng.randint(gmin, gmax)))
    t_arr += rng.expovariate(1000.0 / args.interarrival_ms) if args.interarrival_ms > 0 else 0.0

# warm-up, as engines do before serving: one forward of a full token budget, sampled
tok = torch.randint(0, V, (args.budget,), device=dev)
h = forward(tok, torch.arange(args.budget, device=dev) % MAXLEN,
            torch.full((args.budget,), DUMMY, device=dev), 0, None, 0,
            [(DUMMY, 0, args.budget)] if args.budget <= MAXLEN else [])
torch.argmax(F.linear(h[-1:], lm_head), dim=-1).tolist()
graphs = {b: Graph(b) for b in BUCKETS} if args.graphs else {}
torch.cuda.synchronize()

free_slots = list(range(args.max_seqs))
pending = list(reqs)            # not arrived yet, by arrival
waiting, running = [], []       # admitted, not scheduled yet; scheduled at least once
iters = []
t0 = time.perf_counter()
prev_end = None
win_state = 0
signalled = set()
while pending or waiting or running:
    now = time.perf_counter() - t0
    if not waiting and not running and pending[0].arrival > now:
        time.sleep(pending[0].arrival - now)   # an idle server waits for its next request
        now = time.perf_counter() - t0
    while pending and pending[0].arrival <= now:
        r = pending.pop(0)
        r.admitted = time.perf_counter()
        if args.mark:
            r.range = lpr.request_start(r.rid, prompt=r.prompt)
        waiting.append(r)
    if window and win_state == 0 and len(iters) == window[0]:
        torch.cuda.cudart().cudaProfilerStart()
        win_state = 1
    if window and win_state == 1 and len(iters) == window[1]:
        torch.cuda.cudart().cudaProfilerStop()
        win_state = 2
    if len(iters) in sig_window and len(iters) not in signalled:
        signalled.add(len(iters))
        os.kill(os.getpid(), signal.SIGUSR1)
    t_begin = time.perf_counter()
    # schedule: every decoding sequence one token, then prefill chunks under the budget
    budget = args.budget
    dec = [r for r in running if r.done_prefill == r.prompt]
    budget -= len(dec)
    chunks = []
    for r in running:
        if r.done_prefill < r.prompt and budget > 0:
            n = min(r.prompt - r.done_prefill, budget)
            chunks.append((r, n))
            budget -= n
    while waiting and budget > 0 and free_slots:
        r = waiting.pop(0)
        r.slot = free_slots.pop(0)
        running.append(r)
        n = min(r.prompt, budget)
        chunks.append((r, n))
        budget -= n
    if not dec and not chunks:
        continue
    if args.mark:
        for r, n in chunks:
            lpr.prefill(r.rid, n)
    # the flat batch: decode rows, then the chunks
    toks, pos, slots = [], [], []
    for r in dec:
        toks.append(r.out[-1])
        pos.append(r.prompt + len(r.out) - 1)
        slots.append(r.slot)
    for r, n in chunks:
        toks += r.tokens[r.done_prefill:r.done_prefill + n]
        pos += list(range(r.done_prefill, r.done_prefill + n))
        slots += [r.slot] * n
    nd = len(dec)
    if args.nvtx_steps:
        torch.cuda.nvtx.range_push(f"step tokens={len(toks)}")
    tok_t = torch.tensor(toks, device=dev)
    pos_t = torch.tensor(pos, device=dev)
    slot_t = torch.tensor(slots, device=dev)
    lens = pos_t[:nd] + 1
    bucket = 0
    if args.graphs and not chunks:
        bucket = next(b for b in BUCKETS if b >= nd)
        hidden = graphs[bucket].run(tok_t, pos_t, slot_t, lens)
    else:
        ctx = max(pos[:nd]) + 1 if nd else 0
        hidden = forward(tok_t, pos_t, slot_t, nd, lens, ctx,
                         [(r.slot, r.done_prefill, n) for r, n in chunks])
    # sample the rows that produce a token: decodes and the chunks that end a prompt
    rows, sampled = list(range(nd)), list(dec)
    off = nd
    for r, n in chunks:
        off += n
        if r.done_prefill + n == r.prompt:
            rows.append(off - 1)
            sampled.append(r)
    idx = torch.tensor(rows, device=dev)
    new = torch.argmax(F.linear(hidden[idx], lm_head), dim=-1).tolist()
    t_end = time.perf_counter()
    if args.nvtx_steps:
        torch.cuda.nvtx.range_pop()
    for r, n in chunks:
        r.done_prefill += n
        r.prefill_iters.append(len(iters))
    finished = []
    for r, tkn in zip(sampled, new):
        r.out.append(tkn)
        r.token_t.append(t_end)
        if args.mark:
            lpr.token(r.rid)
        if len(r.out) == r.gen:
            finished.append(r)
    for r in finished:
        running.remove(r)
        free_slots.append(r.slot)
        if args.mark:
            lpr.request_end(r.range)
    iters.append(dict(index=len(iters), decode=nd, prefill_tokens=sum(n for _, n in chunks),
                      prefill_chunks=len(chunks), tokens=len(toks), sampled=len(rows),
                      bucket=bucket, begin_s=t_begin - t0, end_s=t_end - t0,
                      period_s=(t_end - prev_end) if prev_end is not None else None,
                      kind="decode" if not chunks else ("prefill" if nd == 0 else "mixed")))
    prev_end = t_end
torch.cuda.synchronize()

out = dict(engine=vars(args), warmup_forwards=1, buckets=BUCKETS if args.graphs else [],
           iterations=iters,
           requests=[dict(id=r.rid, prompt=r.prompt, generated=len(r.out),
                          arrival_s=r.arrival, admitted_s=r.admitted - t0,
                          ttft_s=r.token_t[0] - r.admitted,
                          tpot_s=(r.token_t[-1] - r.token_t[0]) / (len(r.token_t) - 1)
                          if len(r.token_t) > 1 else None,
                          itl_s=[b - a for a, b in zip(r.token_t, r.token_t[1:])],
                          prefill_iterations=r.prefill_iters) for r in reqs])
out["admitted_s_note"] = "admitted_s is relative to the serving loop's start"
if args.truth:
    with open(args.truth, "w") as f:
        json.dump(out, f)
itl = sorted(x for r in out["requests"] for x in r["itl_s"])
ttft = sorted(r["ttft_s"] for r in out["requests"])
print(f"serve_engine: {len(iters)} iterations, {len(reqs)} requests, "
      f"{sum(len(r.out) for r in reqs)} tokens; ITL p50 {itl[len(itl) // 2] * 1e3:.3f} ms, "
      f"TTFT p50 {ttft[len(ttft) // 2] * 1e3:.3f} ms")
