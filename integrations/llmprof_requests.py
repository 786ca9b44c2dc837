"""The request convention of llmprof (docs/serving.md), for Python serving loops.

llmprof finds a serving engine's iterations from the trace alone; per-request latency needs the
program to say when each request came and when each of its tokens left:

    from llmprof_requests import request_start, request_end, token, prefill
    h = request_start(rid, prompt=812)   # admission: NVTX range "request <id> prompt=812"
    prefill(rid, tokens=256)             # optional: a prefill chunk scheduled ("prefill <id> tokens=256")
    token(rid)                           # each token the request emits ("token <id>")
    request_end(h)                       # completion (or cancellation)

Request ranges are NVTX start/end ranges, which may overlap (push/pop ranges cannot). Ids are
words without spaces, unique over the recording. Each call costs an NVTX call (well under a
microsecond without a tool attached). Uses torch.cuda.nvtx when PyTorch is there, else does
nothing."""

try:
    import torch.cuda.nvtx as _nvtx
except ImportError:  # no PyTorch: the calls are no-ops
    _nvtx = None


def _words(**more):
    return "".join(f" {k}={v}" for k, v in more.items())


def request_start(rid, **more):
    """Opens the range of request RID (admission). Returns the handle request_end takes."""
    if _nvtx is None:
        return None
    return _nvtx.range_start(f"request {rid}{_words(**more)}")


def request_end(handle):
    """Closes a request's range (completion)."""
    if _nvtx is not None and handle is not None:
        _nvtx.range_end(handle)


def token(rid):
    """Marks one token of request RID leaving the engine (the first one ends its TTFT)."""
    if _nvtx is not None:
        _nvtx.mark(f"token {rid}")


def prefill(rid, tokens):
    """Marks a prefill chunk of TOKENS prompt tokens of request RID scheduled into the next
    forward pass (optional: splits TTFT into queue wait and prefill)."""
    if _nvtx is not None:
        _nvtx.mark(f"prefill {rid} tokens={tokens}")
