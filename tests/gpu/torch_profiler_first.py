"""torch.profiler holds CUPTI before llmprof's collector starts: llmprof must stay off CUPTI
with one warning, and the profiler and the program must work as without llmprof."""
import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    x = torch.randn(256, 256, device="cuda")
    y = (x @ x).sum().item()
cuda_events = sum(1 for e in prof.events() if e.device_type == DeviceType.CUDA)
print(f"torch.profiler saw {cuda_events} CUDA events")
raise SystemExit(0 if cuda_events > 0 else 1)
