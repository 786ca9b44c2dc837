"""CUPTI finalized between capture windows while other threads launch (issue 15). THREADS
threads each run STEPS steps of small kernels on their own stream, with no NVTX range; the
main thread opens a window (torch.cuda.profiler.start/stop) around every WINDOW_EVERY-th
round of its own steps, so that llmprof finalizes CUPTI at some thread's call exit while the
others are inside theirs (record with LLMPROF_FINALIZE_AFTER_MS=0 to finalize after every
window). Every step's result is compared with the same computation done before any window:
the program's results must not change. Prints one JSON line; exits 1 when a result differs."""
import argparse
import json
import threading
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--threads", type=int, default=4)
p.add_argument("--steps", type=int, default=400)
p.add_argument("--window-every", type=int, default=10)
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
for i in range(args.steps):
    if i % args.window_every == 0:
        torch.cuda.profiler.start()
        windows += 1
    v = step(inputs[-1]).sum().item()
    if v != reference[-1]:
        bad.append((-1, i, v))
    if i % args.window_every == 0:
        torch.cuda.profiler.stop()
        time.sleep(0.002)
for th in threads:
    th.join()
print(json.dumps({"threads": args.threads, "steps": args.steps, "windows": windows,
                  "seconds": round(time.time() - t0, 2), "identical": not bad,
                  "differences": bad[:5]}))
raise SystemExit(1 if bad else 0)
