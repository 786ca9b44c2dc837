#!/usr/bin/env bash
# Issue 49 on the GPU machine: the deep dive's time left, learned while ncu runs, against the
# time it then took. One recorded program (the HF harness, Llama-3-8B's layer shape, 4
# layers), its deep dive (--top TOP) run on a terminal (script(1)) so that its progress line
# is drawn; each drawn line's "E s, about R s left" is set against the elapsed time at the end.
# usage: deep_live.sh [TOP] (deep's --top, default 8). Expects build/ carried (bin, lib).
# Writes $OUT/deep-live-log.txt.
. "$(dirname "$0")/setup.sh" deep-live
top=${1:-8}
"$L" record -o "$T/l8b" -- "$PY" tests/gpu/hf_loop.py --requests 1 --arch llama3-8b \
    --layers 4 --new-tokens 16 | tail -1
script -qfc "$L deep $T/l8b --top $top" "$T/tty.txt" >/dev/null
"$L" report "$T/l8b" --quiet
# the kernels profiled per stage
cut -d, -f1 "$T/l8b/deep.csv" | sort | uniq -c
grep -E '"(predicted_s|elapsed_s|s_per_kernel|measured_kernels|sections)"' "$T/l8b/deep/deep.json"
total=$(sed -n 's/.*"elapsed_s": \([0-9.]*\).*/\1/p' "$T/l8b/deep/deep.json")
# the progress lines, each drawn over the last (carriage returns)
tr '\r' '\n' <"$T/tty.txt" | grep -oE '[0-9]+ of [0-9]+ kernels profiled, [0-9]+ s, about [0-9]+ s left' |
    awk -v total="$total" '{n = $1; m = $3; e = $6; r = $9
        if (n != last && (n == 3 || n == int(m / 4) || n == int(m / 2) || n == int(3 * m / 4))) {
            printf "after %d of %d kernels, %d s: about %d s left, so %d s in all; took %.0f s (%+.0f %%)\n",
                n, m, e, r, e + r, total, 100 * (e + r - total) / total; last = n } }'
