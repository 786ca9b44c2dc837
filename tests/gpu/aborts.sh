#!/usr/bin/env bash
# Issue 15 on the GPU machine: processes recorded under capture windows must never abort.
# graph_styles.py --style piecewise recorded under --capture graphs/8 in ABORTS_LANES
# parallel lanes (4: about one run in 18 aborted with the library that disabled activity on
# its own thread, none in 56 recorded whole; none in 136 since it goes off on a program's
# thread, docs/benchmarks.md) until ABORTS_S seconds.
# Each lane cycles through ABORTS_VARIANTS:
#   w     this build's library, --capture graphs/8
#   a     this build's library, everything recorded
#   old   ABORTS_OLD_LIB (an absolute path to a libllmprof.so from before a change), graphs/8
# One line per run (exit status, whether the program printed its result, replays recorded
# whole, allocation records) in $OUT/aborts-laneN.txt as it goes; every thread's backtrace of
# each run that ended by a signal in $OUT/aborts-crashes.txt (build/gpu/libcrash_stacks.so
# preloaded). Expects build/ carried. Fails when a run of this build's library did not exit 0.
. "$(dirname "$0")/setup.sh" aborts
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
end=$(($(date +%s) + ${ABORTS_S:-400}))
lane() {
    local ln=$1 i=0 v d rc
    while [ "$(date +%s)" -lt "$end" ]; do
        for v in ${ABORTS_VARIANTS:-w}; do
            [ "$(date +%s)" -lt "$end" ] || break
            i=$((i + 1))
            d=$T/$v-$ln-$i
            local envs=() args=(--capture 'graphs/8')
            case $v in
            a) args=() ;;
            old) envs=("LLMPROF_LIB=${ABORTS_OLD_LIB:?ABORTS_OLD_LIB: a libllmprof.so}") ;;
            esac
            env ${envs[@]+"${envs[@]}"} LD_PRELOAD="$B/gpu/libcrash_stacks.so" timeout 60 \
                "$L" record --quiet -o "$d" ${args[@]+"${args[@]}"} -- \
                "$PY" tests/gpu/graph_styles.py --style piecewise >"$d.log" 2>&1
            rc=$?
            echo "$v lane $ln run $i exit $rc result $(grep -c '^{' "$d.log")" \
                "$("$L" info "$d" 2>/dev/null |
                    grep -oE '[0-9]+ CUDA graph replays recorded whole|[0-9]+ alloc/free' |
                    tr '\n' ' ')"
            if [ "$rc" -ne 0 ]; then
                { echo "##### $v lane $ln run $i exit $rc"; grep -v '^{' "$d.log" | head -400; } \
                    >>"$OUT/aborts-crashes.txt"
            fi
            rm -rf "$d" "$d.log"
        done
    done
}
lanes=()
for ln in $(seq "${ABORTS_LANES:-4}"); do
    lane "$ln" >"$OUT/aborts-lane$ln.txt" 2>&1 &
    lanes+=($!)
done
# the lanes by their ids: a bare wait also waits for setup.sh's tee, which never ends
wait "${lanes[@]}"
fails=0
for v in $(tr ' ' '\n' <<<"${ABORTS_VARIANTS:-w}" | sort -u); do # "w w old": w once
    n=$(cat "$OUT"/aborts-lane*.txt | grep -c "^$v ")
    bad=$(cat "$OUT"/aborts-lane*.txt | grep "^$v " | grep -vc " exit 0 ")
    echo "$v: $bad of $n runs did not exit 0"
    [ "$v" = old ] || fails=$((fails + bad))
done
[ "$fails" -eq 0 ]
