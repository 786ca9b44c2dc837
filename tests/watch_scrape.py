#!/usr/bin/env python3
"""llmprof watch end to end (issue 51): three real traces (H200, H100) are written into a run
directory piece by piece (cut at arbitrary bytes, so chunks arrive half written) while
`llmprof watch` serves /metrics. Every scrape is checked (counters never fall, no more read
than written), and the last one against `llmprof report` of the same traces (tokens,
requests, TTFT, TPOT and ITL count and mean, energy, stage occurrences and time, DRAM bytes
and tensor-pipe activity) and the serving engine's own counts (truth.json: tokens, requests,
iterations). --once must print the same figures. Then a trace replaced, two ranks, a file
name that is not UTF-8 and bad invocations. Usage: watch_scrape.py LLMPROF FIXTURES"""
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

LLMPROF, FIX = None, None
# the fixtures, each with the stage rules its report takes (report refuses a rule that matches
# none of a trace's ranges); watch takes them all
TRACES = {"serve-eager-mark": [], "pm-hf-llama-light": ["prefill=^prefill", "decode=^decode"],
          "serve-light": ["step=^step"]}
RULES = [r for rules in TRACES.values() for r in rules]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def close(a, b, rel=1e-6, what=""):
    check(b is not None and abs(a - b) <= rel * max(abs(a), abs(b), 1e-12),
          f"{what}: watch {a} against report {b}")


LINE = re.compile(r'^([a-z_]+)(\{[^}]*\})? (\S+)$')


def parse(text):
    """{(name, frozenset(labels)): value}"""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = LINE.match(line)
        check(m is not None, f"not a sample line: {line!r}")
        if not m:
            continue
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def value(samples, name, trace, **more):
    for (n, labels), v in samples.items():
        d = dict(labels)
        if n == name and d.get("trace") == trace and all(d.get(k) == w for k, w in more.items()):
            return v
    return None


def scrape(port, path="/metrics", method="GET"):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, "", e.read().decode()


def report_of(fixture, tmp):
    out = os.path.join(tmp, "report-" + fixture)
    stages = [w for r in TRACES[fixture] for w in ("--stage", r)]
    subprocess.run([LLMPROF, "report", os.path.join(FIX, fixture), "-o", out] + stages,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


def monotonic(prev, cur):
    for key, v in cur.items():
        name = key[0]
        if not (name.endswith("_total") or name.endswith("_count") or name.endswith("_bucket")
                or name.endswith("_sum")):
            continue
        if key in prev:
            check(v >= prev[key], f"{name} fell from {prev[key]} to {v}")


def compare(samples, trace, rep, fixture):
    """watch's figures of TRACE against REP, the report.json of the same trace"""
    t = trace
    energy = value(samples, "llmprof_gpu_energy_joules_total", t, gpu="0")
    close(energy, rep["power"]["energy_j"], 1e-9, f"{fixture} energy")
    stages = [s for s in rep["stages"] if s["kind"] not in ("run", "outside")]
    n_occ = sum(s["occurrences"] for s in stages)
    wall = sum(s["wall"]["total_ns"] for s in stages) * 1e-9
    w_occ = sum(v for (n, l), v in samples.items()
                if n == "llmprof_stage_duration_seconds_count" and dict(l)["trace"] == t)
    w_wall = sum(v for (n, l), v in samples.items()
                 if n == "llmprof_stage_duration_seconds_sum" and dict(l)["trace"] == t)
    check(w_occ == n_occ, f"{fixture}: {w_occ} stage occurrences against the report's {n_occ}")
    close(w_wall, wall, 1e-6, f"{fixture} stage time")
    q = (rep.get("serving") or {}).get("requests")
    if q:
        check(value(samples, "llmprof_generated_tokens_total", t) == q["token_marks"],
              f"{fixture} tokens")
        check(value(samples, "llmprof_requests_finished_total", t) == q["n"],
              f"{fixture} requests")
        for name, key in (("ttft", "ttft"), ("tpot", "tpot"), ("itl", "itl")):
            n = value(samples, f"llmprof_{name}_seconds_count", t)
            s = value(samples, f"llmprof_{name}_seconds_sum", t)
            check(n == q[key]["n"], f"{fixture} {name} count {n} against {q[key]['n']}")
            # the report's mean is whole nanoseconds
            check(n and abs(s / n * 1e9 - q[key]["mean_ns"]) <= 1,
                  f"{fixture} {name} mean {s / n * 1e9 if n else None} against "
                  f"{q[key]['mean_ns']}")
            inf = value(samples, f"llmprof_{name}_seconds_bucket", t, le="+Inf")
            check(inf == n, f"{fixture} {name}: +Inf bucket {inf}, count {n}")
    else:
        check(value(samples, "llmprof_generated_tokens_total", t) is None,
              f"{fixture}: request metrics without the request convention")
    pm = rep.get("pm")
    if pm:
        rd = value(samples, "llmprof_gpu_dram_read_bytes_total", t, gpu="0")
        wr = value(samples, "llmprof_gpu_dram_write_bytes_total", t, gpu="0")
        close(rd + wr, pm["all"]["dram_bytes"], 1e-9, f"{fixture} DRAM bytes")
        ts = value(samples, "llmprof_gpu_tensor_active_seconds_total", t, gpu="0")
        ps = value(samples, "llmprof_gpu_pm_sampled_seconds_total", t, gpu="0")
        close(ps, pm["all"]["seconds"], 1e-9, f"{fixture} PM seconds")
        close(ts / ps, pm["all"]["means"]["tensor"] / 100, 1e-9, f"{fixture} tensor activity")
    else:
        check(value(samples, "llmprof_gpu_pm_samples_total", t, gpu="0") is None,
              f"{fixture}: PM metrics without PM samples")


def main():
    global LLMPROF, FIX
    LLMPROF, FIX = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="lp_watch_")
    run = os.path.join(tmp, "run")
    os.mkdir(run)
    proc = None
    try:
        reports, sources = {}, {}
        for fx in TRACES:
            reports[fx] = report_of(fx, tmp)
            d = os.path.join(FIX, fx)
            name = [n for n in os.listdir(d) if n.endswith(".lpt")][0]
            with open(os.path.join(d, name), "rb") as f:
                sources[fx] = (name, f.read())
        stages = [w for r in RULES for w in ("--stage", r)]
        proc = subprocess.Popen([LLMPROF, "watch", run, "--listen", "127.0.0.1:0",
                                 "--interval", "0.05", "--until-done"] + stages,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/metrics", first)
        check(m is not None, f"watch did not say where it serves: {first!r}")
        port = int(m.group(1))
        status, ctype, text = scrape(port)
        check(status == 200 and "version=0.0.4" in ctype, f"/metrics: {status} {ctype}")
        check("llmprof_watch_traces 0" in text, "no trace yet, none followed")
        for path, method, want in (("/", "GET", 200), ("/nope", "GET", 404),
                                   ("/metrics", "POST", 405)):
            got = scrape(port, path, method)[0]
            check(got == want, f"{method} {path}: {got}, not {want}")
        # each further trace appears when the one before is half written
        rng = random.Random(51)
        files, written = {}, {fx: 0 for fx in TRACES}
        order = list(TRACES)
        prev, scrapes, started = {}, 0, order[:1]
        while any(written[fx] < len(sources[fx][1]) for fx in TRACES):
            last = started[-1]
            if len(started) < len(order) and written[last] > len(sources[last][1]) // 2:
                started.append(order[len(started)])
            for fx in started:
                name, data = sources[fx]
                if fx not in files:
                    files[fx] = open(os.path.join(run, name), "wb")
                n = rng.randint(1, 12000)
                files[fx].write(data[written[fx]:written[fx] + n])
                files[fx].flush()
                written[fx] = min(len(data), written[fx] + n)
            if rng.random() < 0.5:
                time.sleep(0.06)
                status, _, text = scrape(port)
                cur = parse(text)
                monotonic(prev, cur)
                for fx in started:
                    got = value(cur, "llmprof_trace_read_bytes_total", sources[fx][0])
                    check(got is None or got <= written[fx],
                          f"{fx}: read {got} bytes of the {written[fx]} written")
                prev, scrapes = cur, scrapes + 1
        for f in files.values():
            f.close()
        deadline = time.time() + 20
        while True:
            cur = parse(scrape(port)[2])
            done = all(value(cur, "llmprof_trace_complete", sources[fx][0]) == 1 for fx in TRACES)
            if done or time.time() > deadline:
                break
            time.sleep(0.05)
        check(done, "every trace complete")
        monotonic(prev, cur)
        check(scrapes >= 10, f"only {scrapes} scrapes while the traces grew")
        check(cur.get(("llmprof_watch_traces", frozenset())) == len(TRACES),
              "every trace followed")
        for fx in TRACES:
            name = sources[fx][0]
            check(value(cur, "llmprof_trace_chunks_bad_total", name) == 0, f"{fx}: bad chunks")
            check(value(cur, "llmprof_trace_read_bytes_total", name) == len(sources[fx][1]),
                  f"{fx}: every byte read")
            compare(cur, name, reports[fx], fx)
            truth = os.path.join(FIX, fx, "truth.json")
            if os.path.exists(truth):  # the engine's own count of what it did
                with open(truth) as f:
                    t = json.load(f)
                check(value(cur, "llmprof_generated_tokens_total", name) ==
                      sum(r["generated"] for r in t["requests"]), f"{fx}: the engine's tokens")
                check(value(cur, "llmprof_requests_finished_total", name) == len(t["requests"]),
                      f"{fx}: the engine's requests")
                steps = value(cur, "llmprof_stage_duration_seconds_count", name, stage="step")
                want = len(t["iterations"]) if "step=^step" in TRACES[fx] else None
                check(steps == want, f"{fx}: {steps} steps, the engine's {want} iterations")
        proc.wait(timeout=30)
        check(proc.returncode == 0, f"watch --until-done exited {proc.returncode}")
        err = proc.stderr.read()
        check(err == "", f"watch wrote to stderr: {err!r}")
        proc = None
        # --once on the finished run: the same figures
        once = subprocess.run([LLMPROF, "watch", run, "--once"] + stages, capture_output=True,
                              text=True)
        check(once.returncode == 0, f"--once exited {once.returncode}: {once.stderr}")
        check(parse(once.stdout) == cur, "--once and the last scrape differ")
        # every metric served is in docs/monitoring.md; every one the dashboard asks for served
        families = set(re.findall(r"^# TYPE (\S+) ", once.stdout, re.M))
        root = os.path.join(FIX, "..", "..")
        with open(os.path.join(root, "docs", "monitoring.md")) as f:
            doc = f.read()
        for fam in sorted(families):
            check(f"`{fam}" in doc, f"{fam} is not in docs/monitoring.md")
        with open(os.path.join(root, "examples", "grafana-llmprof.json")) as f:
            asked = set(re.findall(r"llmprof_[a-z_]+", f.read()))
        for name in sorted(asked - {"llmprof_watch"}):
            base = re.sub(r"_(bucket|sum|count)$", "", name)
            check(name in families or base in families,
                  f"the dashboard asks for {name}, which watch does not serve")
        # a trace replaced by another in its place (a new run): its figures start over
        rdir = os.path.join(tmp, "replaced")
        os.mkdir(rdir)
        spot = os.path.join(rdir, "trace.lpt")
        with open(spot, "wb") as f:
            f.write(sources["serve-light"][1])
        proc = subprocess.Popen([LLMPROF, "watch", rdir, "--listen", "127.0.0.1:0",
                                 "--interval", "0.05"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        rport = int(re.search(r":(\d+)/metrics", proc.stdout.readline()).group(1))

        def settled(want_pid):
            for _ in range(200):
                got = parse(scrape(rport)[2])
                if value(got, "llmprof_trace_complete", "trace.lpt", pid=want_pid) == 1:
                    return got
                time.sleep(0.05)
            return got
        first = settled("442")
        check(value(first, "llmprof_generated_tokens_total", "trace.lpt") == 3648,
              "the first trace's tokens")
        with open(spot + ".new", "wb") as f:
            f.write(sources["serve-eager-mark"][1])
        os.rename(spot + ".new", spot)
        second = settled("655")
        check(value(second, "llmprof_generated_tokens_total", "trace.lpt", pid="655") == 1386,
              "the replacing trace's tokens, counted from zero: "
              f"{value(second, 'llmprof_generated_tokens_total', 'trace.lpt')}")
        check(value(second, "llmprof_trace_restarts_total", "trace.lpt") == 1, "one restart")
        proc.terminate()
        proc.wait(timeout=10)
        check(proc.returncode == 0, f"watch stopped by SIGTERM exited {proc.returncode}")
        proc = None
        # two ranks of one run: each labelled with its rank, each GPU with its UUID
        tp = parse(subprocess.run([LLMPROF, "watch", os.path.join(FIX, "tp-manual"), "--once"],
                                  capture_output=True, text=True, check=True).stdout)
        ranks = sorted(dict(l)["rank"] for (n, l) in tp if n == "llmprof_trace_info")
        check(ranks == ["0", "1"], f"tp-manual's ranks: {ranks}")
        uuids = {dict(l).get("uuid") for (n, l) in tp if n == "llmprof_gpu_power_watts"}
        check(len(uuids) == 2 and all(u and u.startswith("GPU-") for u in uuids),
              f"tp-manual's GPUs by UUID: {uuids}")
        # every GPU of four ranks with its peak, whichever of its two device records came last
        hosts = parse(subprocess.run([LLMPROF, "watch", os.path.join(FIX, "tp-groups-hosts"),
                                      "--once"], capture_output=True, text=True,
                                     check=True).stdout)
        gpus = {(dict(l)["trace"], dict(l)["gpu"]) for (n, l) in hosts
                if n == "llmprof_gpu_power_watts"}
        peaks = {(dict(l)["trace"], dict(l)["gpu"]) for (n, l) in hosts
                 if n == "llmprof_gpu_dram_peak_bytes_per_second"}
        check(gpus and gpus <= peaks, f"GPUs without their DRAM peak: {sorted(gpus - peaks)}")
        # a file name that is not UTF-8: a valid label all the same
        odd = os.path.join(tmp.encode(), b"odd")
        os.mkdir(odd)
        shutil.copy(os.path.join(FIX, "serve-light", sources["serve-light"][0]),
                    os.path.join(odd, b"lat\xe9.lpt"))
        out = subprocess.run([LLMPROF.encode(), b"watch", odd, b"--once"], capture_output=True)
        try:
            text = out.stdout.decode("utf-8")
            check('trace="lat?.lpt"' in text, "the name's byte replaced by '?'")
        except UnicodeDecodeError:
            check(False, "watch wrote a label that is not UTF-8")
        # a bad stage rule refused at the start, traces or not
        empty = os.path.join(tmp, "empty")
        os.mkdir(empty)
        bad = subprocess.run([LLMPROF, "watch", empty, "--once", "--stage", "x=("],
                             capture_output=True, text=True)
        check(bad.returncode == 2 and "x=(" in bad.stderr, f"--stage x=(: {bad.stderr!r}")
        # a directory that is not there, a window out of bounds: refused with the reason
        bad = subprocess.run([LLMPROF, "watch", os.path.join(tmp, "none"), "--once"],
                             capture_output=True, text=True)
        check(bad.returncode == 1 and "none" in bad.stderr, f"missing run: {bad.stderr!r}")
        bad = subprocess.run([LLMPROF, "watch", run, "--window", "0.5", "--once"],
                             capture_output=True, text=True)
        check(bad.returncode == 2 and "--window" in bad.stderr, f"--window 0.5: {bad.stderr!r}")
        # a file that is no trace among them: said once, the others still followed
        with open(os.path.join(run, "junk.lpt"), "w") as f:
            f.write("this is not a trace, only text\n")
        junk = subprocess.run([LLMPROF, "watch", run, "--once"] + stages, capture_output=True,
                              text=True)
        check(junk.returncode == 0 and junk.stderr.count("junk.lpt") == 1,
              f"a junk trace: {junk.returncode} {junk.stderr!r}")
        check(parse(junk.stdout).get(("llmprof_watch_traces", frozenset())) == len(TRACES),
              "the junk file is not counted as followed")
    finally:
        if proc:
            proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failures")
        sys.exit(1)
    print("watch_scrape: ok")


if __name__ == "__main__":
    main()
