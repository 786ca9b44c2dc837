"""Capture-window edges for the GPU harnesses (hf_loop.py, graph_decode.py): their
--cuda-profiler and --signal options, and the --step-ranges option, in one place."""
import os
import signal
import time

import torch


def add_options(p):
    p.add_argument("--cuda-profiler", choices=["warmup", "timed"],
                   help="call torch.cuda.profiler.start/stop around these requests")
    p.add_argument("--signal", choices=["warmup", "timed"],
                   help="send this process SIGUSR1 before and after these requests "
                        "(record --capture signal)")
    p.add_argument("--step-ranges", action="store_true",
                   help="an NVTX range \"step\" around each decode step, inside \"decode\"")


def edge(args, which, opening):
    """Opens or closes a capture window around WHICH requests, as --cuda-profiler and
    --signal ask."""
    if args.cuda_profiler == which:
        (torch.cuda.profiler.start if opening else torch.cuda.profiler.stop)()
    if args.signal == which:
        torch.cuda.synchronize()
        os.kill(os.getpid(), signal.SIGUSR1)
        time.sleep(0.2)  # llmprof's thread switches recording: let it before the next launch
