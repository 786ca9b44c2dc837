"""A Llama-style decoder in plain PyTorch with a static KV cache whose decode step is captured
once in a CUDA graph and replayed for every token, as gpt-fast-style scripts and serving
engines do. Prefill runs eagerly. One NVTX range around each prompt ("prefill") and one
around each decode loop ("decode"), no token counts, an unnamed warm-up request first, and
the script's own timer (--timer, JSON). Per step: two small eager copies (the next token and
its position) and one graph replay of the whole forward pass with the argmax.
--cuda-profiler warmup|timed: torch.cuda.profiler.start/stop around the warm-up request or
around the timed ones.

Default shape: 16 layers, hidden 2048, GQA 32/8 heads, SwiGLU 5632, vocab 32000, bf16.
--signal warmup|timed: the process sends itself SIGUSR1 before and after those requests
(record --capture signal). --step-ranges: an NVTX range "step" around each decode step,
inside "decode" (record --capture 'nvtx:^step$/8' records one step in eight).
--eager: the decode step runs eagerly (no graph), the same forward pass and copies: the pair
llmprof diff compares (tests/gpu/diff_pairs.sh).
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F

import windows

p = argparse.ArgumentParser()
p.add_argument("--layers", type=int, default=16)
p.add_argument("--hidden", type=int, default=2048)
p.add_argument("--heads", type=int, default=32)
p.add_argument("--kv-heads", type=int, default=8)
p.add_argument("--intermediate", type=int, default=5632)
p.add_argument("--vocab", type=int, default=32000)
p.add_argument("--prompt", type=int, default=512)
p.add_argument("--new-tokens", type=int, default=64)
p.add_argument("--batch", type=int, default=1)
p.add_argument("--requests", type=int, default=3)
p.add_argument("--timer")
p.add_argument("--config-out", help="write an HF Llama config.json of this shape here")
p.add_argument("--eager", action="store_true", help="decode without the CUDA graph")
windows.add_options(p)
args = p.parse_args()

torch.manual_seed(0)
dev, dt = "cuda", torch.bfloat16
H, NH, KV, I, V = args.hidden, args.heads, args.kv_heads, args.intermediate, args.vocab
HD = H // NH
B, MAXLEN = args.batch, args.prompt + args.new_tokens + 8
if args.config_out:  # the same FLOPs and bytes as HF's Llama (fused qkv and gate/up)
    with open(args.config_out, "w") as f:
        json.dump({"model_type": "llama", "hidden_size": H, "intermediate_size": I,
                   "num_hidden_layers": args.layers, "num_attention_heads": NH,
                   "num_key_value_heads": KV, "vocab_size": V, "tie_word_embeddings": False,
                   "max_position_embeddings": MAXLEN, "torch_dtype": "bfloat16"}, f, indent=1)


def w(*shape):
    return (torch.randn(*shape, device=dev, dtype=dt) * 0.02)


layers = [dict(qkv=w((NH + 2 * KV) * HD, H), o=w(H, NH * HD), gate_up=w(2 * I, H), down=w(H, I),
               n1=torch.ones(H, device=dev, dtype=dt), n2=torch.ones(H, device=dev, dtype=dt))
          for _ in range(args.layers)]
emb, lm_head, norm = w(V, H), w(V, H), torch.ones(H, device=dev, dtype=dt)
k_cache = [torch.zeros(B, KV, MAXLEN, HD, device=dev, dtype=dt) for _ in layers]
v_cache = [torch.zeros(B, KV, MAXLEN, HD, device=dev, dtype=dt) for _ in layers]
inv = 1.0 / (10000 ** (torch.arange(0, HD, 2, device=dev, dtype=torch.float32) / HD))
ang = torch.outer(torch.arange(MAXLEN, device=dev, dtype=torch.float32), inv)
cos, sin = ang.cos().to(dt), ang.sin().to(dt)


def rope(x, pos):  # x: [B, h, T, HD], pos: [T]
    c, s = cos[pos][None, None], sin[pos][None, None]
    x1, x2 = x[..., : HD // 2], x[..., HD // 2:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)


def forward(tok, pos, prefill):
    """tok: [B, T] token ids, pos: [T] positions (a device tensor)."""
    x = F.embedding(tok, emb)
    T = tok.shape[1]
    for i, L in enumerate(layers):
        h = F.rms_norm(x, (H,), L["n1"])
        q, k, v = F.linear(h, L["qkv"]).split([NH * HD, KV * HD, KV * HD], -1)
        q = rope(q.view(B, T, NH, HD).transpose(1, 2), pos)
        k = rope(k.view(B, T, KV, HD).transpose(1, 2), pos)
        v = v.view(B, T, KV, HD).transpose(1, 2)
        k_cache[i].index_copy_(2, pos, k)
        v_cache[i].index_copy_(2, pos, v)
        if prefill:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:
            mask = (torch.arange(MAXLEN, device=dev) <= pos[0]).view(1, 1, 1, MAXLEN)
            a = F.scaled_dot_product_attention(q, k_cache[i], v_cache[i], attn_mask=mask,
                                               enable_gqa=True)
        x = x + F.linear(a.transpose(1, 2).reshape(B, T, NH * HD), L["o"])
        g, u = F.linear(F.rms_norm(x, (H,), L["n2"]), L["gate_up"]).chunk(2, -1)
        x = x + F.linear(F.silu(g) * u, L["down"])
    logits = F.linear(F.rms_norm(x[:, -1:], (H,), norm), lm_head)
    return logits.argmax(-1)


prompt = torch.randint(0, V, (B, args.prompt), device=dev)
prompt_pos = torch.arange(args.prompt, device=dev)
static_tok = torch.zeros(B, 1, dtype=torch.long, device=dev)
static_pos = torch.zeros(1, dtype=torch.long, device=dev)

with torch.inference_mode():
    # warm up the step on a side stream, then capture it
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            forward(static_tok, static_pos, False)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = forward(static_tok, static_pos, False)
    torch.cuda.synchronize()


@torch.inference_mode()
def request():
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    torch.cuda.nvtx.range_push("prefill")
    nxt = forward(prompt, prompt_pos, True)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    torch.cuda.nvtx.range_push("decode")
    for i in range(args.new_tokens - 1):
        if args.step_ranges:
            torch.cuda.nvtx.range_push("step")
        static_tok.copy_(nxt)
        static_pos.fill_(args.prompt + i)
        if args.eager:
            nxt = forward(static_tok, static_pos, False)
        else:
            graph.replay()
            nxt = static_out
        if args.step_ranges:
            torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    t2 = time.perf_counter()
    steps = args.new_tokens - 1
    return {"prefill_ms": (t1 - t0) * 1e3, "decode_ms": (t2 - t1) * 1e3, "decode_steps": steps,
            "tpot_ms": (t2 - t1) * 1e3 / steps}


windows.edge(args, "warmup", True)
runs = [dict(request(), warmup=True)]
windows.edge(args, "warmup", False)
windows.edge(args, "timed", True)
runs += [dict(request(), warmup=False) for _ in range(args.requests)]
windows.edge(args, "timed", False)
timed = [r for r in runs if not r["warmup"]]
res = {"arch": "llama-graph", "style": "eager decode" if args.eager else "cuda-graph decode", "prompt": args.prompt, "batch": B,
       "new_tokens": args.new_tokens, "layers": args.layers, "requests": runs,
       # what bench/overhead.sh and bench/summarize.py read
       "prefill_ms_median": statistics.median(r["prefill_ms"] for r in timed),
       "decode_ms_per_token_median": statistics.median(r["tpot_ms"] for r in timed),
       "prefill_ms_min": min(r["prefill_ms"] for r in timed),
       "decode_ms_per_token_min": min(r["tpot_ms"] for r in timed),
       "torch": torch.__version__}
print(json.dumps(res))
if args.timer:
    with open(args.timer, "w") as f:
        json.dump(res, f, indent=1)
