"""Medians of bench/overhead.sh results: overhead of each mode against the unprofiled runs
and bytes per kernel on disk. Usage: summarize.py RESULTS.jsonl"""
import json
import statistics
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
by_mode = {}
for r in rows:
    by_mode.setdefault(r["mode"], []).append(r)
base = by_mode.get("none", [])
if not base:
    sys.exit("no unprofiled runs")
b_pf = statistics.median(r["run"]["prefill_ms_median"] for r in base)
b_dc = statistics.median(r["run"]["decode_ms_per_token_median"] for r in base)
print(f"runs per mode: {', '.join(f'{m} {len(v)}' for m, v in by_mode.items())}")
print("| mode | prefill ms (median) | overhead | decode ms/token (median) | overhead | bytes/kernel |")
print("|---|---|---|---|---|---|")
for mode in by_mode:
    rs = by_mode.get(mode)
    if not rs:
        continue
    pf = statistics.median(r["run"]["prefill_ms_median"] for r in rs)
    dc = statistics.median(r["run"]["decode_ms_per_token_median"] for r in rs)
    bpk = [r["trace_bytes"] / r["kernels"] for r in rs if r["kernels"]]
    bpk_s = f"{statistics.median(bpk):.1f}" if bpk else "-"
    print(f"| {mode} | {pf:.2f} | {100 * (pf / b_pf - 1):+.1f} % | {dc:.3f} | "
          f"{100 * (dc / b_dc - 1):+.1f} % | {bpk_s} |")
