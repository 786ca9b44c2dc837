"""Summarises tests/gpu/window_cost.sh: per mode the medians of bench/window_cost's host ns
per launch before the process's first capture window and after it closed, and the change
after/before − 1. Then, paired per round against the unprofiled run: the launch before the
window and after it against the unprofiled run's (what the profiler's state costs then, read
across processes), and the change's excess over the unprofiled run's change (whose change is
how a process drifts from its start to its end): what the window left behind, read inside
each process. "above": the rounds in which the difference was positive.
Usage: window_summary.py RESULTS.jsonl"""
import json
import statistics
import sys

if len(sys.argv) != 2:
    sys.exit("usage: window_summary.py RESULTS.jsonl")
try:
    with open(sys.argv[1]) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    runs = {(r["round"], r["mode"]): r["run"] for r in rows}
    for r in runs.values():
        if not all(isinstance(r.get(k), (int, float)) for k in ("before_ns", "after_ns", "change")):
            raise KeyError("before_ns, after_ns or change")
except OSError as e:
    sys.exit(f"window_summary: cannot read {sys.argv[1]}: {e.strerror}")
except (ValueError, KeyError, TypeError, AttributeError) as e:
    sys.exit(f"window_summary: {sys.argv[1]} is not tests/gpu/window_cost.sh's results (one JSON "
             f"line per run with round, mode and run.before_ns, after_ns, change): {e}")
modes = list(dict.fromkeys(r["mode"] for r in rows))
if "none" not in modes:
    sys.exit("window_summary: no unprofiled runs to pair against")
med = statistics.median


def paired(m, f):
    """Median (range) and rounds above of f(run of M, unprofiled run) over the rounds."""
    v = [f(runs[(i, m)], runs[(i, "none")]) for (i, mm) in runs if mm == m and (i, "none") in runs]
    if m == "none" or not v:
        return "–"
    return (f"{100 * med(v):+.1f} % ({100 * min(v):+.1f} … {100 * max(v):+.1f} %), "
            f"{sum(x > 0 for x in v)}/{len(v)}")


print("| mode | before, ns per launch | after | change | before against none, paired "
      "median (range), above | after against none | change's excess over none's |")
print("|---|---|---|---|---|---|---|")
for m in modes:
    mine = [r for (_, mm), r in runs.items() if mm == m]
    cells = [f"{med(r['before_ns'] for r in mine):.0f}", f"{med(r['after_ns'] for r in mine):.0f}",
             f"{100 * med(r['change'] for r in mine):+.1f} %",
             paired(m, lambda a, n: a["before_ns"] / n["before_ns"] - 1),
             paired(m, lambda a, n: a["after_ns"] / n["after_ns"] - 1),
             paired(m, lambda a, n: a["change"] - n["change"])]
    print(f"| {m} | " + " | ".join(cells) + " |")
