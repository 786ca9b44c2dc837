"""Scrapes `llmprof watch` while a serving loop runs under `record --light` (tests/gpu/watch.sh):
every second, and every INTERVAL seconds one JSON line (the scrape's time, its lag behind the
latest record, the watch process's RSS, the counters that matter) to OUT.jsonl. When watch
exits (--until-done), the run is reported (`llmprof report RUN --stage step=^step`) and the
last scrape of the finished trace is checked against that report (tests/watch_scrape.py's
comparison) and against the engine's own timings (truth.json). Usage:
watch_live.py PORT WATCH_PID OUT.jsonl INTERVAL LLMPROF RUN TRUTH REPORT_DIR"""
import json
import os
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import watch_scrape as ws  # noqa: E402


def rss_kb(pid, key="VmRSS:"):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        return None


def total(samples, name, **more):
    return sum(v for (n, l), v in samples.items()
               if n == name and all(dict(l).get(k) == w for k, w in more.items()))


def scrape_loop(port, pid, out, interval):
    """the last scrape of a complete trace (else the last one)"""
    last, last_row = None, 0.0
    with open(out, "a") as log:
        while rss_kb(pid) is not None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    text = r.read().decode()
            except OSError:
                time.sleep(1)
                continue
            now = time.time()
            s = ws.parse(text)
            complete = [v for (n, _), v in s.items() if n == "llmprof_trace_complete"]
            if last is None or not last[1] or (complete and all(complete)):
                last = (s, bool(complete) and all(complete))
            if now - last_row >= interval:
                latest = max((v for (n, _), v in s.items()
                              if n == "llmprof_trace_latest_timestamp_seconds"), default=None)
                row = dict(t=now, lag_s=(now - latest) if latest else None,
                           watch_rss_kb=rss_kb(pid), watch_hwm_kb=rss_kb(pid, "VmHWM:"),
                           bytes=total(s, "llmprof_trace_read_bytes_total"),
                           tokens=total(s, "llmprof_generated_tokens_total"),
                           requests=total(s, "llmprof_requests_finished_total"),
                           steps=total(s, "llmprof_stage_duration_seconds_count", stage="step"),
                           ttft_sum=total(s, "llmprof_ttft_seconds_sum"),
                           ttft_n=total(s, "llmprof_ttft_seconds_count"),
                           energy_j=total(s, "llmprof_gpu_energy_joules_total"),
                           window={f"{n}{dict(l).get('source') or ''}": v
                                   for (n, l), v in s.items() if n.startswith("llmprof_window_")},
                           scrape_bytes=len(text))
                log.write(json.dumps(row) + "\n")
                log.flush()
                last_row = now
            time.sleep(1)
    return last


def main():
    port, pid, out, interval = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
    got = scrape_loop(port, pid, out, interval)
    ws.LLMPROF = sys.argv[5]
    run, truth_path, rep_dir = sys.argv[6], sys.argv[7], sys.argv[8]
    ws.check(got is not None and got[1], "a scrape of the finished trace")
    if got is None:
        sys.exit(1)
    last = got[0]
    subprocess.run([ws.LLMPROF, "report", run, "--stage", "step=^step", "-o", rep_dir],
                   check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(rep_dir, "report.json")) as f:
        rep = json.load(f)
    trace = [n for n in os.listdir(run) if n.endswith(".lpt")][0]
    ws.compare(last, trace, rep, "live")
    with open(truth_path) as f:
        truth = json.load(f)
    reqs = truth["requests"]
    gen = sum(r["generated"] for r in reqs)
    ttft = [r["ttft_s"] for r in reqs]
    n = ws.value(last, "llmprof_ttft_seconds_count", trace)
    mean = ws.value(last, "llmprof_ttft_seconds_sum", trace) / n
    print(f"engine: {len(reqs)} requests, {gen} tokens, {len(truth['iterations'])} iterations, "
          f"TTFT mean {sum(ttft) / len(ttft) * 1e3:.3f} ms")
    print(f"watch:  {ws.value(last, 'llmprof_requests_finished_total', trace):.0f} requests, "
          f"{ws.value(last, 'llmprof_generated_tokens_total', trace):.0f} tokens, "
          f"{ws.value(last, 'llmprof_stage_duration_seconds_count', trace, stage='step'):.0f} "
          f"steps, TTFT mean {mean * 1e3:.3f} ms")
    ws.check(ws.value(last, "llmprof_generated_tokens_total", trace) == gen, "tokens = engine's")
    ws.check(ws.value(last, "llmprof_requests_finished_total", trace) == len(reqs),
             "requests = engine's")
    ws.check(ws.value(last, "llmprof_stage_duration_seconds_count", trace, stage="step") ==
             len(truth["iterations"]), "steps = engine's iterations")
    print("failures:", ws.failures)
    sys.exit(1 if ws.failures else 0)


main()
