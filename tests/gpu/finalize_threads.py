"""CUPTI finalized between capture windows while other threads launch (issue 15). THREADS
threads each run STEPS steps of small kernels on their own stream, with no NVTX range; the
main thread opens a window (torch.cuda.profiler.start/stop) around every WINDOW_EVERY-th
round of its own steps, so that llmprof finalizes CUPTI at some thread's call exit while the
others are inside theirs (record with LLMPROF_FINALIZE_AFTER_MS=0 to finalize after every
window). Every step's result is compared with the same computation done before any window
(a graph's with its first replay's): the program's results must not change.
With --graph-at K the main thread captures a CUDA graph of its step at the end of step K
(K one after a window's step: likely while CUPTI is finalized and away) and replays it from
then on, and captures a second one 2*WINDOW_EVERY steps later (the first instantiation
llmprof then sees). With --torch-profiler, torch.profiler profiles the main thread's loop
(a second CUPTI client). Prints one JSON line; exits 1 when a result differs."""
import argparse
import json
import threading
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--threads", type=int, default=4)
p.add_argument("--steps", type=int, default=400)
p.add_argument("--window-every", type=int, default=10)
p.add_argument("--graph-at", type=int, default=-1)
p.add_argument("--torch-profiler", action="store_true")
args = p.parse_args()

torch.manual_seed(0)
N = 512
w = torch.randn(N, N, device="cuda") / N**0.5
inputs = [torch.randn(16, N, device="cuda") for _ in range(args.threads + 1)]


def step(x):
    for _ in range(8):
        x = torch.tanh(x @ w)
    return x


reference = [step(x).sum().item() for x in inputs]
bad = []


def worker(t):
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for i in range(args.steps):
            v = step(inputs[t]).sum().item()
            if v != reference[t]:
                bad.append((t, i, v))


threads = [threading.Thread(target=worker, args=(t,)) for t in range(args.threads)]
t0 = time.time()
for th in threads:
    th.start()
windows = 0
graphs = []  # (graph, output, first replay's result, input), the last one replayed


def capture():
    """A CUDA graph of one step on the main thread's input, as torch.cuda.graph wants it."""
    x = inputs[-1].clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step(x)  # warm-up on a side stream
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = step(x)
    g.replay()  # its result: a graph's kernels may differ from the eager ones (cuBLAS)
    graphs.append((g, out, out.sum().item(), x))  # x too: the graph reads it at each replay


def main_loop():
    global windows
    for i in range(args.steps):
        if i % args.window_every == 0:
            torch.cuda.profiler.start()
            windows += 1
        if graphs:
            graphs[-1][0].replay()
            v = graphs[-1][1].sum().item()
        else:
            v = step(inputs[-1]).sum().item()
        if v != (graphs[-1][2] if graphs else reference[-1]):
            bad.append((-1, i, v))
        if i % args.window_every == 0:
            torch.cuda.profiler.stop()
            time.sleep(0.002)
        if args.graph_at >= 0 and i in (args.graph_at, args.graph_at + 2 * args.window_every):
            capture()


profiled = 0
if args.torch_profiler:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        main_loop()
    profiled = len(prof.key_averages())
else:
    main_loop()
for th in threads:
    th.join()
print(json.dumps({"threads": args.threads, "steps": args.steps, "windows": windows,
                  "seconds": round(time.time() - t0, 2), "graph_results": [g[2] for g in graphs],
                  "torch_profiler_op_kinds": profiled, "identical": not bad,
                  "differences": bad[:5]}))
raise SystemExit(1 if bad else 0)
