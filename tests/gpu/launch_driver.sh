#!/usr/bin/env bash
# Issue 15 on the GPU machine: launch callbacks on the driver's calls only
# (LLMPROF_LAUNCH=driver, two CUPTI callbacks per runtime launch instead of four) against the
# default. HF eager decode and the CUDA-graph decode recorded both ways (kernels tied to
# their launch, per stage), then CPU time per launch (bench/launch_overhead.sh, C and
# PyTorch; modes none floor default launch-driver). Expects build/ carried. Writes
# $OUT/launch_driver-log.txt, $OUT/launch-c.jsonl and $OUT/launch-torch.jsonl.
. "$(dirname "$0")/setup.sh" launch_driver
fails=0
for m in default driver; do
  for prog in hf graph; do
    d=$T/$prog-$m
    if [ $prog = hf ]; then cmd=("$PY" tests/gpu/hf_loop.py --requests 1 --new-tokens 17 --step-ranges); else cmd=("$PY" tests/gpu/graph_decode.py --requests 1 --new-tokens 17); fi
    LLMPROF_LAUNCH=$([ $m = driver ] && echo driver || echo callbacks) "$L" record -o $d -- "${cmd[@]}" >/dev/null 2>$d.err
    rc=$?; echo "$prog $m exit $rc"; [ $rc -eq 0 ] || fails=$((fails + 1))
    "$L" info $d | grep -E "records|launch" | head -3
    "$L" report $d --quiet
    python3 -c "
import json; j=json.load(open('$d/report.json')); a=j['attribution']
print('  by_launch', a['by_launch'], 'by_time', a['by_time'], 'outside', a['outside_stages'], [(s['name'], s.get('kernels'), s.get('graph_replays'), (s.get('steps') or {}).get('count')) for s in j['stages']])"
  done
done
step "launch C"
LLMPROF_BENCH_MODES="none floor default launch-driver" bash bench/launch_overhead.sh 7 200000 $OUT/launch-c.jsonl $T/lc 2>&1 | grep -v '^{'
step "launch torch"
LLMPROF_BENCH_MODES="none floor default launch-driver" LLMPROF_BENCH_CMD="$PY bench/torch_launch.py" timeout 300 bash bench/launch_overhead.sh 5 0 $OUT/launch-torch.jsonl $T/lt 2>&1 | grep -v '^{'
echo "$fails recorded programs failed"
[ "$fails" -eq 0 ]
