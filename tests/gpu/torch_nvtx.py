"""PyTorch NVTX ranges through torch.cuda.nvtx and emit_nvtx; checked by
tests/check_trace.c (mode torch)."""
import torch

x = torch.randn(1024, 1024, device="cuda")
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("torch_outer")
for i in range(5):
    torch.cuda.nvtx.range_push(f"step i={i}")
    y = x @ x
    torch.cuda.nvtx.range_pop()
torch.cuda.nvtx.range_pop()
with torch.autograd.profiler.emit_nvtx():
    z = torch.relu(x @ x)
torch.cuda.synchronize()
print("torch_nvtx ok", float(y.sum() + z.sum()) != 0.0)
