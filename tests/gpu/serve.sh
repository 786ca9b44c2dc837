#!/usr/bin/env bash
# Issue 48 on the GPU machine: real runs of the DeepSeek-OCR runner through llmprof serve.
# The server on loopback with the runner as a template (PyTorch's Python), DeepSeek-OCR (v1)
# random weights, requests over the bundled pages by HTTP, polled to their end; the Run
# objects, the artifact lists and the summary.md printed. With RUNS=2 (default 1) the server
# keeps one run per tag whole and caps runs at 1 MiB: the first run is archived and its
# summary served from the archive, the second trimmed. Expects build/ carried.
# Writes $OUT/serve-log.txt and $OUT/serve-run.json.
. "$(dirname "$0")/setup.sh" serve
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ldd "$L" | grep -i "not found" && exit 1
M=${OCR_MODELS:-/tmp/llmprof-ocr-models}
mkdir -p "$M/ocr1"
cp tests/configs/deepseek-ocr.json "$M/ocr1/config.json"
ls "$M/ocr1"/*.safetensors >/dev/null 2>&1 ||
    timeout 300 "$PY" examples/deepseek-ocr/run.py --model-path "$M/ocr1" --init-weights | tail -1
R="ocr=$PY $PWD/examples/deepseek-ocr/run.py --model-path {model_path} --input-dir {input_dir}"
R="$R --repeats {repeats} --device {device} --max-new-tokens {max_new_tokens}"
R="$R {use_flash_attn:--use-flash-attn}"
"$L" serve --runs "$T/runs" --listen 127.0.0.1:0 --keep 1 --max-run-bytes 1M --runner "$R" \
    >"$T/out" 2>"$T/err" &
SRV=$!
for _ in $(seq 50); do grep -q listening "$T/out" && break; sleep 0.2; done
cat "$T/out" "$T/err"
URL=$(grep -o 'http://[0-9.:]*/' "$T/out")
step "POST /runs, then poll"
"$PY" - "$URL" "$M/ocr1" "$PWD/examples/deepseek-ocr/pages" "$OUT/serve-run.json" "${RUNS:-1}" <<'PY'
import json, sys, time, urllib.request as u
url, model, pages, out, n = sys.argv[1:6]
op = u.build_opener(u.ProxyHandler({}))
def call(path, body=None, method=None):
    r = u.Request(url + path, data=body and json.dumps(body).encode(), method=method,
                  headers={"Content-Type": "application/json"})
    return json.load(op.open(r))
runs = []
for i in range(int(n)):
    t0 = time.time()
    acc = call("runs", {"model_path": model, "input_dir": pages, "repeats": 1,
                        "max_new_tokens": 32, "device": "cuda:0", "tag": "h200"})
    print("accepted:", acc)
    while True:
        run = call("runs/" + acc["run_id"])
        if run["status"] not in ("queued", "running"):
            break
        time.sleep(1)
    print(f"ended after {time.time() - t0:.1f} s:", json.dumps(run, indent=1))
    runs.append(acc["run_id"])
out_runs = []
for rid in runs:
    run = call("runs/" + rid)
    arts = call(f"runs/{rid}/artifacts")
    print(rid, "archive:", run["archive"], "trimmed:", run["trimmed"])
    print("artifacts (archived: %s):" % arts["archived"], [a["name"] for a in arts["artifacts"]])
    summary = op.open(url + f"runs/{rid}/artifacts/summary.md").read().decode()
    print(summary[:2000])
    out_runs.append({"run": run, "artifacts": arts})
json.dump(out_runs, open(out, "w"), indent=1)
PY
step "the runner's own view (its log)"
tail -n 5 "$T"/runs/logs/*.log
kill "$SRV"; wait "$SRV"; echo "server exit $?"
grep retention "$T/err"
"$L" runs "$T/runs" list
ls -la "$T/runs/runs"
