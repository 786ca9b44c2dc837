"""torch.profiler inside a recorded run: a second CUPTI client. The program's results
must not change; tests/check_trace.c (mode profiler) checks what llmprof kept."""
import torch
from torch.profiler import ProfilerActivity, profile

torch.manual_seed(0)
x = torch.randn(512, 512, device="cuda")


def work(n):
    y = x
    for _ in range(n):
        y = torch.tanh(y @ x) * 0.5
    return y


reference = work(20).sum().item()
torch.cuda.nvtx.range_push("before_profiler")
a = work(20).sum().item()
torch.cuda.nvtx.range_pop()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    b = work(20).sum().item()
events = len(prof.key_averages())
torch.cuda.nvtx.range_push("after_profiler")
c = work(20).sum().item()
torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
same = a == reference and b == reference and c == reference
print(f"torch_profiler results identical: {same}; profiler saw {events} op kinds")
raise SystemExit(0 if same else 1)
