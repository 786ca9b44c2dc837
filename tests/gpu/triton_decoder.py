"""A Llama-style decoder whose matmuls are all Triton kernels (no cuBLAS call), written the way
gpt-fast-style scripts are: plain PyTorch modules, a static KV cache, SDPA attention, greedy
decoding, every nn.Linear (projections, MLP, lm_head) through one hand-written Triton kernel
named `mm` (C = A @ W^T, bf16 in, fp32 accumulation; 16-row tiles at decode, the smallest
tl.dot takes, so a one-token step executes 16x its useful tensor work).

TinyLlama-1.1B's layer shape (hidden 2048, GQA 32/4, SwiGLU 5632, vocabulary 32000), --layers
of them (default 6), random bf16 weights (seed 0). One NVTX range around each prompt
("prefill") and one around each whole decode loop ("decode"), an unnamed warm-up request first
(Triton compiles there); --no-nvtx: no ranges at all.

Writes the model's config.json to --config-out and per-request timings (the script's own
timer: torch.cuda.synchronize around the prefill and the decode loop) to --timer, with the
analytic matmul FLOPs of one prefill (2 x tokens x weights, attention's QK^T and PV besides)."""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
import triton
import triton.language as tl

p = argparse.ArgumentParser()
p.add_argument("--layers", type=int, default=6)
p.add_argument("--prompt", type=int, default=512)
p.add_argument("--new-tokens", type=int, default=32)
p.add_argument("--requests", type=int, default=3, help="timed requests after the warm-up")
p.add_argument("--no-nvtx", action="store_true", help="no NVTX ranges")
p.add_argument("--timer", help="write the timings here (JSON)")
p.add_argument("--config-out", help="write the model's config.json here")
args = p.parse_args()
if args.new_tokens < 2 or args.requests < 1:
    p.error("--new-tokens needs at least 2 and --requests at least 1")

HIDDEN, INTER, HEADS, KV_HEADS, VOCAB = 2048, 5632, 32, 4, 32000
HEAD_DIM = HIDDEN // HEADS
MAX_SEQ = args.prompt + args.new_tokens


@triton.jit
def mm(a_ptr, w_ptr, c_ptr, M, N, K, s_am, s_ak, s_wn, s_wk, s_cm, s_cn,
       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * s_am + (k0 + rk)[None, :] * s_ak,
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * s_wn + (k0 + rk)[:, None] * s_wk,
                    mask=(rn[None, :] < N) & ((k0 + rk)[:, None] < K), other=0.0)
        acc += tl.dot(a, w)
    tl.store(c_ptr + rm[:, None] * s_cm + rn[None, :] * s_cn, acc.to(tl.bfloat16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


class Linear(torch.nn.Module):
    """y = x @ W^T through the Triton kernel."""

    def __init__(self, k, n):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(n, k) / math.sqrt(k), requires_grad=False)

    def forward(self, x):
        a = x.reshape(-1, x.shape[-1])
        m, k = a.shape
        n = self.weight.shape[0]
        c = torch.empty(m, n, dtype=x.dtype, device=x.device)
        bm, bn, bk = (16, 64, 128) if m <= 16 else (128, 128, 64)
        grid = (triton.cdiv(m, bm), triton.cdiv(n, bn))
        mm[grid](a, self.weight, c, m, n, k, a.stride(0), a.stride(1), self.weight.stride(0),
                 self.weight.stride(1), c.stride(0), c.stride(1), BLOCK_M=bm, BLOCK_N=bn,
                 BLOCK_K=bk, num_warps=4, num_stages=3)
        return c.view(*x.shape[:-1], n)


def rms_norm(x, w, eps=1e-5):
    v = x.float().pow(2).mean(-1, keepdim=True)
    return (x.float() * torch.rsqrt(v + eps)).to(x.dtype) * w


def rope(x, cos, sin):
    x1, x2 = x[..., : HEAD_DIM // 2], x[..., HEAD_DIM // 2:]
    return x * cos + torch.cat((-x2, x1), -1) * sin


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.wqkv = Linear(HIDDEN, (HEADS + 2 * KV_HEADS) * HEAD_DIM)
        self.wo = Linear(HIDDEN, HIDDEN)
        self.w13 = Linear(HIDDEN, 2 * INTER)
        self.w2 = Linear(INTER, HIDDEN)
        self.n1 = torch.nn.Parameter(torch.ones(HIDDEN), requires_grad=False)
        self.n2 = torch.nn.Parameter(torch.ones(HIDDEN), requires_grad=False)
        self.k_cache = torch.zeros(1, KV_HEADS, MAX_SEQ, HEAD_DIM)
        self.v_cache = torch.zeros(1, KV_HEADS, MAX_SEQ, HEAD_DIM)

    def forward(self, x, pos, cos, sin):
        b, t, _ = x.shape
        qkv = self.wqkv(rms_norm(x, self.n1))
        q, k, v = qkv.split([HIDDEN, KV_HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM], -1)
        q = rope(q.view(b, t, HEADS, HEAD_DIM).transpose(1, 2), cos, sin)
        k = rope(k.view(b, t, KV_HEADS, HEAD_DIM).transpose(1, 2), cos, sin)
        v = v.view(b, t, KV_HEADS, HEAD_DIM).transpose(1, 2)
        self.k_cache[:, :, pos:pos + t] = k
        self.v_cache[:, :, pos:pos + t] = v
        kk = self.k_cache[:, :, :pos + t]
        vv = self.v_cache[:, :, :pos + t]
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]):
            o = F.scaled_dot_product_attention(q, kk, vv, is_causal=t > 1, enable_gqa=True)
        x = x + self.wo(o.transpose(1, 2).reshape(b, t, HIDDEN))
        g, u = self.w13(rms_norm(x, self.n2)).chunk(2, -1)
        return x + self.w2(F.silu(g) * u)


class Decoder(torch.nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.embed = torch.nn.Parameter(torch.randn(VOCAB, HIDDEN) * 0.02, requires_grad=False)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(layers))
        self.norm = torch.nn.Parameter(torch.ones(HIDDEN), requires_grad=False)
        self.lm_head = Linear(HIDDEN, VOCAB)
        inv = 1.0 / (10000 ** (torch.arange(0, HEAD_DIM, 2).float() / HEAD_DIM))
        f = torch.outer(torch.arange(MAX_SEQ).float(), inv)
        f = torch.cat((f, f), -1)
        self.cos, self.sin = f.cos().to(torch.bfloat16), f.sin().to(torch.bfloat16)

    def forward(self, ids, pos):
        t = ids.shape[1]
        x = self.embed[ids]
        cos, sin = self.cos[pos:pos + t], self.sin[pos:pos + t]
        for blk in self.blocks:
            x = blk(x, pos, cos, sin)
        return self.lm_head(rms_norm(x[:, -1:], self.norm))


torch.manual_seed(0)
torch.set_default_dtype(torch.bfloat16)
with torch.device("cuda"):
    model = Decoder(args.layers).eval()
weights = args.layers * (HIDDEN * (HEADS + 2 * KV_HEADS) * HEAD_DIM + HIDDEN * HIDDEN
                         + 3 * HIDDEN * INTER) + HIDDEN * VOCAB
if args.config_out:
    with open(args.config_out, "w") as f:
        json.dump({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                   "hidden_size": HIDDEN, "intermediate_size": INTER,
                   "num_hidden_layers": args.layers, "num_attention_heads": HEADS,
                   "num_key_value_heads": KV_HEADS, "vocab_size": VOCAB,
                   "max_position_embeddings": 4096, "torch_dtype": "bfloat16",
                   "tie_word_embeddings": False}, f, indent=1)
ids = torch.randint(0, VOCAB, (1, args.prompt), device="cuda")


def push(name):
    if not args.no_nvtx:
        torch.cuda.nvtx.range_push(name)


def pop():
    if not args.no_nvtx:
        torch.cuda.nvtx.range_pop()


@torch.inference_mode()
def request():
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    push("prefill")
    nxt = model(ids, 0).argmax(-1)
    pop()
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    push("decode")
    for i in range(args.new_tokens - 1):
        nxt = model(nxt, args.prompt + i).argmax(-1)
    torch.cuda.synchronize()
    pop()
    t2 = time.perf_counter()
    steps = args.new_tokens - 1
    return {"prefill_ms": (t1 - t0) * 1e3, "decode_ms": (t2 - t1) * 1e3, "decode_steps": steps,
            "tpot_ms": (t2 - t1) * 1e3 / steps}


runs = [dict(request(), warmup=True)]
runs += [dict(request(), warmup=False) for _ in range(args.requests)]
timed = [r for r in runs if not r["warmup"]]
# analytic matmul FLOPs of one prefill: every weight once per prompt token except the
# lm_head (last token only), plus causal attention's QK^T and PV (half the square)
attn = args.layers * 2 * 2 * HIDDEN * args.prompt * args.prompt / 2
prefill_flops = 2 * args.prompt * (weights - HIDDEN * VOCAB) + 2 * HIDDEN * VOCAB + attn
res = {"model": "triton-llama", "layers": args.layers, "prompt": args.prompt, "batch": 1,
       "new_tokens": args.new_tokens, "weights": weights, "requests": runs,
       "prefill_matmul_flops": prefill_flops, "decode_step_weight_flops": 2 * weights,
       "prefill_ms_median": statistics.median(r["prefill_ms"] for r in timed),
       "decode_ms_per_token_median": statistics.median(r["tpot_ms"] for r in timed),
       "torch": torch.__version__, "triton": triton.__version__}
print(json.dumps(res))
if args.timer:
    with open(args.timer, "w") as f:
        json.dump(res, f, indent=1)
