"""Summarises bench/overhead.sh results. The machine drifts between rounds by more than
the effect measured, so overhead is taken per round (a mode against the unprofiled run of
the same round) and its median over rounds is reported, beside the plain medians.
Usage: summarize.py RESULTS.jsonl"""
import json
import statistics
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
runs = {}
for r in rows:
    runs[(r["round"], r["mode"])] = r
modes = list(dict.fromkeys(r["mode"] for r in rows))
rounds = sorted({r["round"] for r in rows})
if "none" not in modes:
    sys.exit("no unprofiled runs")


def metric(r, key):
    return r["run"][key + "_median"]


print(f"{len(rounds)} rounds; per run: median of the in-process runs")
print("| mode | prefill ms | decode ms/token | prefill overhead (paired) | "
      "decode overhead (paired) | decode overhead range | bytes/kernel |")
print("|---|---|---|---|---|---|---|")
for mode in modes:
    rs = [runs[(i, mode)] for i in rounds if (i, mode) in runs]
    pf = statistics.median(metric(r, "prefill_ms") for r in rs)
    dc = statistics.median(metric(r, "decode_ms_per_token") for r in rs)
    ratios = {"prefill_ms": [], "decode_ms_per_token": []}
    for i in rounds:
        if (i, mode) in runs and (i, "none") in runs:
            for k in ratios:
                ratios[k].append(metric(runs[(i, mode)], k) / metric(runs[(i, "none")], k) - 1)
    bpk = [r["trace_bytes"] / r["kernels"] for r in rs if r["kernels"]]
    if mode == "none":
        print(f"| none | {pf:.2f} | {dc:.3f} | - | - | - | - |")
        continue
    d = ratios["decode_ms_per_token"]
    print(f"| {mode} | {pf:.2f} | {dc:.3f} | {100 * statistics.median(ratios['prefill_ms']):+.1f} % | "
          f"{100 * statistics.median(d):+.1f} % | {100 * min(d):+.1f} … {100 * max(d):+.1f} % | "
          f"{statistics.median(bpk):.1f} |")


# GEMM capture alone: default (with it) against default-nogemm, paired per round
if "default" in modes and "default-nogemm" in modes:
    for k in ("prefill_ms", "decode_ms_per_token"):
        d = [metric(runs[(i, "default")], k) / metric(runs[(i, "default-nogemm")], k) - 1
             for i in rounds if (i, "default") in runs and (i, "default-nogemm") in runs]
        print(f"GEMM capture, {k}: median {100 * statistics.median(d):+.1f} % "
              f"(range {100 * min(d):+.1f} … {100 * max(d):+.1f} %, {len(d)} pairs)")
