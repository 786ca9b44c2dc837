"""Decode run as CUDA-graph replays, written the ways people write it, for the graph
provenance tests (issue 18). A gpt-fast-style Llama decoder (nn.Module, static KV cache in
buffers, bf16) and one of these styles:

  compare    each request decodes twice from the same prompt: eagerly inside "decode_eager",
             then by replaying one captured graph per step inside "decode_graph"
  compile    torch.compile(mode="reduce-overhead") on the decode step (CUDA-graph trees)
  piecewise  as vLLM: per layer one graph before attention and one after, attention eager
             between them, plus one graph for the head (2 x layers + 1 replays per step)
  stream     the captured step replayed on a side stream

Ranges: "prefill" and "decode" (compare: "decode_eager" and "decode_graph") around each
request's prompt and loop, no token counts, a first request as warm-up. Prints one JSON line
(with --timer, also to that file)."""
import argparse
import json
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--style", choices=["compare", "compile", "piecewise", "stream"], required=True)
p.add_argument("--layers", type=int, default=8)
p.add_argument("--hidden", type=int, default=2048)
p.add_argument("--heads", type=int, default=32)
p.add_argument("--kv-heads", type=int, default=8)
p.add_argument("--intermediate", type=int, default=5632)
p.add_argument("--vocab", type=int, default=32000)
p.add_argument("--prompt", type=int, default=256)
p.add_argument("--new-tokens", type=int, default=16)
p.add_argument("--requests", type=int, default=2)
p.add_argument("--timer")
p.add_argument("--config-out", help="write an HF Llama config.json of this shape here")
args = p.parse_args()

torch.manual_seed(0)
dev, dt = "cuda", torch.bfloat16
H, NH, KV, I, V = args.hidden, args.heads, args.kv_heads, args.intermediate, args.vocab
HD, MAXLEN = H // NH, args.prompt + args.new_tokens + 8
if args.config_out:
    with open(args.config_out, "w") as f:
        json.dump({"model_type": "llama", "hidden_size": H, "intermediate_size": I,
                   "num_hidden_layers": args.layers, "num_attention_heads": NH,
                   "num_key_value_heads": KV, "vocab_size": V, "tie_word_embeddings": False,
                   "max_position_embeddings": MAXLEN, "torch_dtype": "bfloat16"}, f, indent=1)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(H, (NH + 2 * KV) * HD, bias=False)
        self.o = nn.Linear(NH * HD, H, bias=False)
        self.gate_up = nn.Linear(H, 2 * I, bias=False)
        self.down = nn.Linear(I, H, bias=False)
        self.n1, self.n2 = nn.RMSNorm(H), nn.RMSNorm(H)
        self.register_buffer("k", torch.zeros(1, KV, MAXLEN, HD))
        self.register_buffer("v", torch.zeros(1, KV, MAXLEN, HD))

    def before_attn(self, x, pos, cos, sin):
        T = x.shape[1]
        q, k, v = self.qkv(self.n1(x)).split([NH * HD, KV * HD, KV * HD], -1)
        q = rope(q.view(1, T, NH, HD).transpose(1, 2), cos, sin)
        k = rope(k.view(1, T, KV, HD).transpose(1, 2), cos, sin)
        self.k[:, :, pos] = k
        self.v[:, :, pos] = v.view(1, T, KV, HD).transpose(1, 2)
        return q

    def attn(self, q, pos):
        if q.shape[2] > 1:  # prefill: causal over the prompt
            n = q.shape[2]
            return F.scaled_dot_product_attention(q, self.k[:, :, :n], self.v[:, :, :n],
                                                  is_causal=True, enable_gqa=True)
        mask = (torch.arange(MAXLEN, device=dev) <= pos[0]).view(1, 1, 1, MAXLEN)
        return F.scaled_dot_product_attention(q, self.k, self.v, attn_mask=mask,
                                              enable_gqa=True)

    def after_attn(self, x, a):
        x = x + self.o(a.transpose(1, 2).reshape(1, -1, NH * HD))
        g, u = self.gate_up(self.n2(x)).chunk(2, -1)
        return x + self.down(F.silu(g) * u)


def rope(x, cos, sin):
    x1, x2 = x[..., : HD // 2], x[..., HD // 2:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, H)
        self.layers = nn.ModuleList(Layer() for _ in range(args.layers))
        self.norm = nn.RMSNorm(H)
        self.lm_head = nn.Linear(H, V, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, HD, 2, dtype=torch.float32) / HD))
        ang = torch.outer(torch.arange(MAXLEN, dtype=torch.float32), inv)
        self.register_buffer("cos", ang.cos())
        self.register_buffer("sin", ang.sin())

    def rot(self, pos):
        return self.cos[pos][None, None], self.sin[pos][None, None]

    def head(self, x):
        return self.lm_head(self.norm(x[:, -1:])).argmax(-1)

    def forward(self, tok, pos):
        x = self.emb(tok)
        cos, sin = self.rot(pos)
        for L in self.layers:
            x = L.after_attn(x, L.attn(L.before_attn(x, pos, cos, sin), pos))
        return self.head(x)


model = Model().to(dev, dt).eval()
prompt = torch.randint(0, V, (1, args.prompt), device=dev)
prompt_pos = torch.arange(args.prompt, device=dev)
tok = torch.zeros(1, 1, dtype=torch.long, device=dev)  # the step's static inputs
pos = torch.zeros(1, dtype=torch.long, device=dev)


def warm(fn, n=3):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(n):
            fn()
    torch.cuda.current_stream().wait_stream(s)


capture_s = 0.0  # capture and instantiation, what graph node records cost


def capture(fn):
    global capture_s
    warm(fn)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn()
    torch.cuda.synchronize()
    capture_s += time.perf_counter() - t0
    return g, out


with torch.inference_mode():
    if args.style in ("compare", "stream"):
        graph, graph_out = capture(lambda: model(tok, pos))
        side = torch.cuda.Stream()

        def step():
            if args.style == "stream":
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    graph.replay()
                torch.cuda.current_stream().wait_stream(side)
            else:
                graph.replay()
            return graph_out
    elif args.style == "compile":
        compiled = torch.compile(model, mode="reduce-overhead", fullgraph=True)

        def step():
            return compiled(tok, pos).clone()  # cudagraph trees own their outputs
    else:  # piecewise: graphs around the eager attention of each layer
        x_in = torch.zeros(1, 1, H, device=dev, dtype=dt)
        pieces = []
        x = x_in
        for L in model.layers:
            def before(L=L, x=x):
                cos, sin = model.rot(pos)
                return L.before_attn(x, pos, cos, sin)
            gb, q = capture(before)
            a = torch.zeros_like(q)
            ga, x = capture(lambda L=L, x=x, a=a: L.after_attn(x, a))
            pieces.append((L, gb, q, a, ga))
        gh, head_out = capture(lambda x=x: model.head(x))

        def step():
            x_in.copy_(model.emb(tok))
            for L, gb, q, a, ga in pieces:
                gb.replay()
                a.copy_(L.attn(q, pos))
                ga.replay()
            gh.replay()
            return head_out
    torch.cuda.synchronize()


@torch.inference_mode()
def decode(name, first, use_graph):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    torch.cuda.nvtx.range_push(name)
    nxt = first
    for i in range(args.new_tokens - 1):
        tok.copy_(nxt)
        pos.fill_(args.prompt + i)
        nxt = step() if use_graph else model(tok, pos)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    return (time.perf_counter() - t0) * 1e3


@torch.inference_mode()
def request():
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    torch.cuda.nvtx.range_push("prefill")
    first = model(prompt, prompt_pos)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    r = {"prefill_ms": (time.perf_counter() - t0) * 1e3}
    if args.style == "compare":
        r["decode_eager_ms"] = decode("decode_eager", first, False)
        r["decode_graph_ms"] = decode("decode_graph", first, True)
    else:
        r["decode_ms"] = decode("decode", first, True)
    r["decode_steps"] = args.new_tokens - 1
    return r


runs = [dict(request(), warmup=True)]
runs += [dict(request(), warmup=False) for _ in range(args.requests)]
res = {"style": args.style, "prompt": args.prompt, "new_tokens": args.new_tokens,
       "layers": args.layers, "requests": runs, "capture_ms": capture_s * 1e3,
       "torch": torch.__version__}
print(json.dumps(res))
if args.timer:
    with open(args.timer, "w") as f:
        json.dump(res, f, indent=1)
