#!/usr/bin/env bash
# llmprof watch on the H200 (issue 51). Expects build/ carried.
#   watch.sh start SECONDS  the miniature serving engine (serve_engine.py: requests arriving
#                           for SECONDS, the request convention, an NVTX range per iteration)
#                           under `record --light`, followed by `llmprof watch` and scraped
#                           every 5 s by watch_live.py, all in a process session of its own
#                           (setsid), so that it runs on across calls; state in /tmp/lpwatch
#   watch.sh finish         waits for it; checks the last scrape against report of the same
#                           trace and the engine's own timings; packs $OUT/watch-live.tar.gz
#   watch.sh overhead N     N rounds, interleaved in rotating order: the engine unprofiled,
#                           under record --light, and under record --light while watch
#                           follows it (scraped every second); each run's iteration times
#                           from its own timings, one JSON line each in
#                           $OUT/watch-overhead.jsonl
set -u
cd "$(dirname "$0")/../.."
W=/tmp/lpwatch
L=$PWD/build/bin/llmprof
PY=$(command -v python3)
[ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
export PYTHONUNBUFFERED=1
E=tests/gpu/serve_engine.py
OUT=${OUT:-/tmp/llmprof-gpu-out}
case ${1:-} in
start)
    rm -rf $W && mkdir -p $W
    secs=$2
    setsid bash -c "
        $L record --light -o $W/run -- $PY $E --duration $secs --interarrival-ms 50 --mark \
            --nvtx-steps --truth $W/truth.json > $W/engine.log 2>&1 &
        sleep 1
        # the run directory is made by record; watch waits for its traces
        while [ ! -d $W/run ]; do sleep 0.2; done
        $L watch $W/run --listen 127.0.0.1:9470 --stage step=^step --until-done \
            > $W/watch.log 2>&1 &
        wpid=\$!
        sleep 1
        $PY tests/gpu/watch_live.py 9470 \$wpid $W/scrapes.jsonl 5 $L $W/run $W/truth.json \
            $W/report > $W/check.log 2>&1
        wait
        echo done > $W/finished
    " > $W/session.log 2>&1 < /dev/null &
    sleep 5
    nvidia-smi --query-gpu=name,driver_version --format=csv
    cat $W/engine.log $W/watch.log
    ;;
finish)
    while [ ! -f $W/finished ]; do sleep 2; done
    tail -5 $W/engine.log; cat $W/watch.log $W/check.log
    wc -l $W/scrapes.jsonl; head -2 $W/scrapes.jsonl; tail -2 $W/scrapes.jsonl
    ls -la $W/run
    sed -n 1,30p $W/report/summary.md
    tar -C $W -czf "$OUT/watch-live.tar.gz" scrapes.jsonl engine.log watch.log check.log \
        report/report.json report/summary.md
    ;;
overhead)
    rounds=$2
    modes=(none light watched)
    res=$OUT/watch-overhead.jsonl
    : > "$res"
    for ((i = 0; i < rounds; i++)); do
        for ((j = 0; j < 3; j++)); do
            mode=${modes[$(((i + j) % 3))]}
            d=$W/oh-$mode-$i
            rm -rf "$d"
            # all requests at once: the same iterations every run, whatever its speed
            args=(--requests 256 --interarrival-ms 0 --mark --nvtx-steps
                --truth $W/oh-truth.json)
            case $mode in
            none) "$PY" $E "${args[@]}" > /dev/null ;;
            light) "$L" record --light -o "$d" -- "$PY" $E "${args[@]}" > /dev/null 2>&1 ;;
            watched)
                ("$L" record --light -o "$d" -- "$PY" $E "${args[@]}" > /dev/null 2>&1) &
                rp=$!
                while [ ! -d "$d" ]; do sleep 0.1; done
                "$L" watch "$d" --listen 127.0.0.1:9471 --until-done > /dev/null 2>&1 &
                wp=$!
                while kill -0 $rp 2> /dev/null; do # a scrape a second, as Prometheus might
                    (exec 3<> /dev/tcp/127.0.0.1/9471 &&
                        printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 && cat <&3 > /dev/null) \
                        2> /dev/null || true
                    sleep 1
                done
                wait $rp; kill $wp 2> /dev/null; wait $wp 2> /dev/null ;;
            esac
            "$PY" - "$W/oh-truth.json" "$i" "$mode" >> "$res" <<'PYEOF'
import json, statistics, sys
t = json.load(open(sys.argv[1]))
it = [x["end_s"] - x["begin_s"] for x in t["iterations"]]
itl = sorted(v for r in t["requests"] for v in r["itl_s"])
print(json.dumps(dict(round=int(sys.argv[2]), mode=sys.argv[3], iterations=len(it),
                      iter_ms_median=statistics.median(it) * 1e3,
                      itl_ms_p50=itl[len(itl) // 2] * 1e3,
                      tokens=sum(r["generated"] for r in t["requests"]))))
PYEOF
            tail -1 "$res"
        done
    done
    ;;
*) echo "usage: watch.sh start SECONDS | finish | overhead ROUNDS" >&2; exit 2 ;;
esac
