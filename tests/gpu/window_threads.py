"""Capture windows under several threads, CUDA-graph captures and torch.profiler (issue 15).
THREADS threads each run STEPS steps on their own stream, each step an NVTX range "step"
(record --capture 'nvtx:^step$/4' opens and closes windows on all of them); one thread
captures a CUDA graph midway and replays it in its later steps, so captures begin while
other threads' windows close; with --torch-profiler, torch.profiler profiles some steps of
the main thread meanwhile (a second CUPTI client). Every step's result is compared with
the same computation done before any window, alone: the program's results must not change.
Prints one JSON line; exits 1 when a result differs."""
import argparse
import json
import threading

import torch

p = argparse.ArgumentParser()
p.add_argument("--threads", type=int, default=4)
p.add_argument("--steps", type=int, default=64)
p.add_argument("--torch-profiler", action="store_true")
args = p.parse_args()

torch.manual_seed(0)
N = 1024
w = torch.randn(N, N, device="cuda", dtype=torch.bfloat16) / N**0.5
inputs = [torch.randn(64, N, device="cuda", dtype=torch.bfloat16) for _ in range(args.threads)]


def step(x):
    for _ in range(8):
        x = torch.tanh(x @ w)
    return x


reference = [step(x).float().sum().item() for x in inputs]
torch.cuda.synchronize()
results = [[] for _ in range(args.threads)]
errors = []


def worker(t):
    try:
        s = torch.cuda.Stream()
        graph, static_out = None, None
        with torch.cuda.stream(s):
            for i in range(args.steps):
                torch.cuda.nvtx.range_push("step")
                if t == 0 and i == args.steps // 2:  # capture while other windows close
                    static_in = inputs[t].clone()
                    step(static_in)  # warm-up on the side stream, as torch.cuda.graph wants
                    graph = torch.cuda.CUDAGraph()
                    # thread_local: the other threads' syncs (.item()) stay legal meanwhile
                    with torch.cuda.graph(graph, stream=s, capture_error_mode="thread_local"):
                        static_out = step(static_in)
                if graph is not None:
                    graph.replay()
                    y = static_out
                else:
                    y = step(inputs[t])
                results[t].append(y.float().sum().item())
                torch.cuda.nvtx.range_pop()
    except Exception as e:  # reported, and the run fails
        errors.append(f"thread {t}: {e!r}")


threads = [threading.Thread(target=worker, args=(t,)) for t in range(1, args.threads)]
for th in threads:
    th.start()
profiled = 0
if args.torch_profiler:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        worker(0)
    profiled = len(prof.key_averages())
else:
    worker(0)
for th in threads:
    th.join()
torch.cuda.synchronize()
same = not errors and all(
    len(results[t]) == args.steps and all(r == reference[t] for r in results[t])
    for t in range(args.threads))
print(json.dumps({"threads": args.threads, "steps": args.steps, "identical": same,
                  "errors": errors, "torch_profiler_op_kinds": profiled}))
raise SystemExit(0 if same else 1)
