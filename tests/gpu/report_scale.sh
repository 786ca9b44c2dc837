#!/usr/bin/env bash
# The report of a long real serving trace (issue 49), on the H200: the miniature engine
# (serve_engine.py) serves requests arriving for SECONDS (exponential gaps of 50 ms, the
# request convention) under `record`, every kernel recorded. Then `report` of that trace by
# this build and by OLD (another build's llmprof, when given), interleaved, ROUNDS rounds:
# each run's max RSS and CPU time (getrusage of the child); the report's iterations, tokens
# and requests against the engine's own counts; and whether both builds wrote the same
# report.json; the blocks live at the new build's peak ($OUT/alloc-peak.txt, when
# build/lib/liballoc_peak.so is carried). Log: $OUT/report-scale.txt. Expects build/ carried.
# Usage: report_scale.sh SECONDS ROUNDS [OLD]; SECONDS 0 reports the run recorded last
# (/tmp/lpscale) again.
set -u
cd "$(dirname "$0")/../.."
L=$PWD/build/bin/llmprof
OLD=${3:-}
PY=$(command -v python3)
[ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
OUT=${OUT:-/tmp/llmprof-gpu-out}
T=/tmp/lpscale
[ "$1" = 0 ] || rm -rf $T
mkdir -p $T "$OUT"
exec > >(tee "$OUT/report-scale.txt") 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$PY" -c 'import torch; print("torch", torch.__version__)'
"$L" --version
start=$(date +%s)
if [ "$1" != 0 ]; then
    "$L" record -o $T/run -- "$PY" tests/gpu/serve_engine.py --duration "$1" \
        --interarrival-ms 50 --mark --truth $T/truth.json > $T/engine.log 2>&1 ||
        { tail -20 $T/engine.log; exit 1; }
fi
echo "recorded in $(( $(date +%s) - start )) s"
"$L" info $T/run | head -12
ls -l $T/run
# one run of a report under its own rusage: max RSS (KiB), user and system seconds, wall
measure() { "$PY" tests/gpu/measure.py "$@"; }
for r in $(seq "$2"); do
    measure "new round $r" "$L" report $T/run -o $T/rep-new --quiet
    [ -n "$OLD" ] && measure "old round $r" "$OLD" report $T/run -o $T/rep-old --quiet
done
[ -n "$OLD" ] && { cmp $T/rep-new/report.json $T/rep-old/report.json &&
    echo "report.json: the same from both builds"; }
# what holds the memory at the peak (bench/alloc_peak.c; name the code here with
# bench/alloc_peak.sh $OUT/alloc-peak.txt build/bin)
P=$PWD/build/lib/liballoc_peak.so
[ -e "$P" ] && LD_PRELOAD=$P ALLOC_PEAK_OUT="$OUT/alloc-peak.txt" "$L" report $T/run \
    -o $T/rep-peak --quiet && head -1 "$OUT/alloc-peak.txt"
"$PY" - $T/rep-new/report.json $T/truth.json <<'EOF'
import json, sys
rep, truth = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
s = rep["serving"]
reqs = truth["requests"]
gen = sum(r["generated"] for r in reqs)
print(f"records: {rep['trace']['records']}, kernels: {rep['trace']['counts'].get('kernels')}")
warm = truth.get("warmup_forwards", 0)  # forwards before serving: recorded, not served
print(f"engine: {len(truth['iterations'])} iterations and {warm} warm-up forward, {gen} tokens, "
      f"{len(reqs)} requests")
print(f"report: {s['iterations']} iterations, {s['generated']} tokens, "
      f"{(s.get('requests') or {}).get('n')} requests")
ok = (s["iterations"] == len(truth["iterations"]) + warm and s["generated"] == gen
      and (s.get("requests") or {}).get("n") == len(reqs))
print("counts equal" if ok else "COUNTS DIFFER")
EOF
