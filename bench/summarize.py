"""Summarises bench/overhead.sh results. The machine drifts between rounds by more than
the effect measured, so overhead is taken per round (a mode against the unprofiled run of
the same round) and its median over rounds is reported, beside the plain medians.
Usage: summarize.py RESULTS.jsonl [--min] [A/B ...]: each A/B also compares mode A against
mode B, paired per round (e.g. light-counters/light: what the range profiler costs over PM
sampling). --min takes each run's least disturbed request (prefill_ms_min,
decode_ms_per_token_min) instead of its median, for a host whose noise swamps the median.
--p10 takes the 10th percentile of the run's timed decode steps (decode_ms_per_token_p10,
host time per step) and of its timed prefills (prefill_ms_p10): the host switches between a
fast and a slow state within seconds, and a low percentile compares the fast state.
--cpu takes the decode steps' CPU time on the program's main thread instead of their wall
time (decode_cpu_ms_per_token*: time the thread is not running is not in it); each
mode's steal and run-delay time over the timed requests are shown beside.
--outside N takes, for decode, the median (--p10: the 10th percentile) of the timed steps
that a run recording one step in N (record --capture 'nvtx:^step$/N' on hf_loop.py
--step-ranges, steps counted over the whole run, warm-up included) leaves outside its
windows: neither a recorded step nor the one after it (whose first launches wait for the
window to close). Every mode is read at the same steps, so what a windowed run pays between
its windows is paired against the others."""
import json
import statistics
import sys

args = sys.argv[2:]
stat = "_min" if "--min" in args else "_p10" if "--p10" in args else "_median"
cpu = "--cpu" in args
args = [a for a in args if a not in ("--min", "--p10", "--cpu")]
outside = 0
if "--outside" in args:
    i = args.index("--outside")
    if i + 1 >= len(args) or not args[i + 1].isdigit() or int(args[i + 1]) < 3:
        sys.exit("--outside needs a step count N of at least 3 (one step in N recorded)")
    outside = int(args[i + 1])
    del args[i:i + 2]
    if cpu or stat == "_min":
        sys.exit("--outside reads the steps' host times (median, or --p10): not with --cpu or --min")
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
# what each figure is read from
keys = {"prefill_ms": "prefill_ms",
        "decode_ms_per_token": "decode_cpu_ms_per_token" if cpu else "decode_ms_per_token"}
for k in keys.values():
    if (stat != "_median" or cpu) and any(k + stat not in r["run"] for r in rows):
        sys.exit(f"{' '.join(sys.argv[2:])} needs runs that give {k}{stat} "
                 "(tests/gpu/hf_loop.py does; bench/llama_decode.py does not)")
if outside:
    for r in rows:
        q = r["run"].get("requests")
        if not q or any("step_host_ms" not in x or "warmup" not in x for x in q):
            sys.exit(f"--outside needs each request's step_host_ms (tests/gpu/hf_loop.py gives "
                     f"them): round {r['round']}, mode {r['mode']} has none")
runs = {}
for r in rows:
    runs[(r["round"], r["mode"])] = r
modes = list(dict.fromkeys(r["mode"] for r in rows))
rounds = sorted({r["round"] for r in rows})
if "none" not in modes:
    sys.exit("no unprofiled runs")


def outside_steps(r):
    """The timed decode steps' host times that a one-in-N window run leaves outside."""
    steps, timed = 0, []
    for q in r["run"]["requests"]:
        for s in q["step_host_ms"]:
            if not q["warmup"] and steps % outside not in (0, 1):
                timed.append(s)
            steps += 1
    if len(timed) < 2:
        sys.exit(f"--outside {outside}: round {r['round']}, mode {r['mode']} has "
                 f"{len(timed)} timed steps outside the windows (too few decode steps)")
    return timed


def metric(r, key):
    if outside and key == "decode_ms_per_token":
        v = outside_steps(r)
        return statistics.quantiles(v, n=10)[0] if stat == "_p10" else statistics.median(v)
    return r["run"][keys[key] + stat]


print(f"{len(rounds)} rounds; per run: {stat[1:]} of the in-process runs"
      + ("; decode: the main thread's CPU time per step" if cpu else "")
      + (f"; decode: host ms of the steps outside 1-in-{outside} windows" if outside else ""))
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

# the host's disturbances over each run's timed requests (hf_loop.py): steal time, and the
# time the main thread waited to run
if any(r["run"].get("timed_steal_ms") is not None for r in rows):
    print("| mode | steal ms, median (range) | main thread's run delay ms, median (range) |")
    print("|---|---|---|")
    for mode in modes:
        cols = []
        for k in ("timed_steal_ms", "timed_run_delay_ms"):
            v = [r["run"][k] for r in rows if r["mode"] == mode and r["run"].get(k) is not None]
            cols.append(f"{statistics.median(v):.1f} ({min(v):.1f} … {max(v):.1f})" if v else "-")
        print(f"| {mode} | {cols[0]} | {cols[1]} |")
