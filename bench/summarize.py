"""Summarises bench/overhead.sh results. The machine drifts between rounds by more than
the effect measured, so overhead is taken per round (a mode against the unprofiled run of
the same round) and its median over rounds is reported, beside the plain medians.
Usage: summarize.py RESULTS.jsonl [--min] [A/B ...]: each A/B also compares mode A against
mode B, paired per round (e.g. light-counters/light: what the range profiler costs over PM
sampling). --min takes each run's least disturbed request (prefill_ms_min,
decode_ms_per_token_min) instead of its median, for a host whose noise swamps the median.
--p10 takes the 10th percentile of the run's timed decode steps (decode_ms_per_token_p10,
host time per step) and of its timed prefills (prefill_ms_p10): the host switches between a
fast and a slow state within seconds, and a low percentile compares the fast state."""
import json
import statistics
import sys

args = sys.argv[2:]
stat = "_min" if "--min" in args else "_p10" if "--p10" in args else "_median"
args = [a for a in args if a not in ("--min", "--p10")]
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
if stat != "_median" and any("decode_ms_per_token" + stat not in r["run"] for r in rows):
    sys.exit(f"--{stat[1:]} needs runs that give prefill_ms{stat} and decode_ms_per_token{stat} "
             "(tests/gpu/hf_loop.py does; bench/llama_decode.py does not)")
runs = {}
for r in rows:
    runs[(r["round"], r["mode"])] = r
modes = list(dict.fromkeys(r["mode"] for r in rows))
rounds = sorted({r["round"] for r in rows})
if "none" not in modes:
    sys.exit("no unprofiled runs")


def metric(r, key):
    return r["run"][key + stat]


print(f"{len(rounds)} rounds; per run: {stat[1:]} of the in-process runs")
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
    bpk = [r["trace_bytes"] / r["kernels"] for r in rs if r.get("kernels")]
    if mode == "none":
        print(f"| none | {pf:.2f} | {dc:.3f} | - | - | - | - |")
        continue
    d = ratios["decode_ms_per_token"]
    per_kernel = f"{statistics.median(bpk):.1f}" if bpk else "-"  # counters-only: no kernels
    print(f"| {mode} | {pf:.2f} | {dc:.3f} | {100 * statistics.median(ratios['prefill_ms']):+.1f} % | "
          f"{100 * statistics.median(d):+.1f} % | {100 * min(d):+.1f} … {100 * max(d):+.1f} % | "
          f"{per_kernel} |")


# GEMM capture alone: default (with it) against default-nogemm, paired per round; and the
# pairs asked for on the command line
pairs = [("default", "default-nogemm")] + [tuple(a.split("/", 1)) for a in args]
for a, b in pairs:
    if a not in modes or b not in modes:
        continue
    for k in ("prefill_ms", "decode_ms_per_token"):
        d = [metric(runs[(i, a)], k) / metric(runs[(i, b)], k) - 1
             for i in rounds if (i, a) in runs and (i, b) in runs]
        print(f"{a} against {b}, {k}: median {100 * statistics.median(d):+.1f} % "
              f"(range {100 * min(d):+.1f} … {100 * max(d):+.1f} %, {len(d)} pairs)")
