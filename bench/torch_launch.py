"""CPU time per PyTorch op that launches one kernel: an in-place add (cudaLaunchKernel) and a
small bf16 matmul (cuBLAS). Run by bench/launch_overhead.sh with LLMPROF_BENCH_CMD;
bench/torch_split.py imports per_op_ns."""
import json
import time

import torch


def per_op_ns(fn, n=20000, warmup=1000):
    """Host ns per call of FN over N calls (the GPU waited for before and after)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / n * 1e9


if __name__ == "__main__":
    x = torch.ones(16, device="cuda")
    a = torch.ones(64, 64, device="cuda", dtype=torch.bfloat16)
    # a stage range, so that --counters counts the loops (its set-up falls in the first warm-up)
    torch.cuda.nvtx.range_push("decode")
    res = {"ns_per_launch": per_op_ns(lambda: x.add_(1)),
           "ns_per_matmul": per_op_ns(lambda: torch.mm(a, a))}
    torch.cuda.nvtx.range_pop()
    print(json.dumps(res))
