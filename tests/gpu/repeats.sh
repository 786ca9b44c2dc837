#!/usr/bin/env bash
# Issue 47 on the GPU machine: process-level repeats. The Llama-style decoder of
# graph_decode.py (8 layers, a warm-up and 3 requests of 32 decode steps replayed as one CUDA
# graph) run 3 times by `llmprof profile --repeat 3`, each run writing its own timer file
# (named by its pid); then `llmprof report DIR --model` on the directory of repeats, each
# repeat's TTFT/TPOT against its own timer, and the spread llmprof reports against the
# spread of the timers. Expects build/ carried. Writes $OUT/repeats-log.txt and
# $OUT/repeats-run.tar.gz (the fixture tests/fixtures/repeats-graph: the three repeats,
# meta.json, timers, config).
. "$(dirname "$0")/setup.sh" repeats
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p "$T/side"
# sh execs the decoder (one process): its pid names its timer
CMD=(sh -c 'exec "$0" tests/gpu/graph_decode.py --layers 8 --requests 3 --new-tokens 33 \
    --timer "$1/timer.$$.json" --config-out "$1/config.json"' "$PY" "$T/side")
step "profile --repeat 3"
timeout 400 "$L" profile --repeat 3 -o "$T/rep" -- "${CMD[@]}" | tail -30
echo "profile exit ${PIPESTATUS[0]}"
cp "$T/side/config.json" "$T/rep/config.json"
step "report the repeats with --model"
"$L" report "$T/rep" --model "$T/rep/config.json"
echo "report exit $?"
step "each repeat against its own timer"
for d in "$T"/rep/repeat-*; do
    pid=$(ls "$d"/trace.*.lpt | sed 's/.*\.\([0-9]*\)\.lpt$/\1/')
    cp "$T/side/timer.$pid.json" "$d/timer.json"
    "$PY" tests/gpu/compare_timer.py "$d/report.json" "$d/timer.json" 2>&1 | tail -3
done
step "the timers' spread (the programs' own clocks)"
"$PY" - "$T"/rep/repeat-*/timer.json <<'EOF'
import json, statistics, sys
# per repeat: the median over its timed requests (the warm-up left out), as the report's
for key in ("prefill_ms", "tpot_ms"):
    v = []
    for f in sys.argv[1:]:
        reqs = [r for r in json.load(open(f))["requests"] if not r.get("warmup")]
        v.append(statistics.median(r[key] for r in reqs))
    m = statistics.mean(v)
    print(f"{key}: " + ", ".join(f"{x:.3f}" for x in v) +
          f"; mean {m:.3f}, std {statistics.stdev(v):.3f}, worst {max(abs(x - m) for x in v) / m:.1%}")
EOF
step "repeats.md"
cat "$T/rep/repeats.md"
step "pack"
tar -C "$T" -czf "$OUT/repeats-run.tar.gz" --exclude='*.html' --exclude='*.csv' \
    --exclude='report.*' --exclude='summary.md' --exclude='repeats.*' rep
ls -la "$OUT"
