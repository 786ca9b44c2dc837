#!/usr/bin/env bash
# Stage 3 of docs/report-memory.md: no output depends on the order in which qsort leaves
# elements that compare equal. Every output of tests/golden.sh is made again by llmprof with
# tests/unstable_qsort.c preloaded (each sort shuffles, then heap-sorts) and must match
# tests/golden.sha256, for two shuffles (in one, a tie of two may keep its order by
# chance). First, that the preload sorts at all: a report's sorts are counted.
# Usage: unstable_sort.sh LLMPROF PRELOAD_LIB SOURCE_DIR
set -u
LP=$1
LIB=$2
SRC=$3
T=$(mktemp -d /tmp/lp_unstable.XXXXXX)
trap 'rm -rf "$T"' EXIT
LP_QSORT_LOG=$T/count LD_PRELOAD="$LIB" "$LP" report "$SRC/tests/fixtures/hf-moe" -o "$T/r" \
    --quiet >/dev/null 2>&1
n=$(cat "$T/count" 2>/dev/null || echo 0)
if [ "${n:-0}" -lt 10 ]; then
    echo "not ok - the preloaded sort was not used ($n sorts)"
    exit 1
fi
echo "ok - the preloaded sort made $n sorts of a report"
status=0
for seed in 1 2; do
    cat >"$T/llmprof" <<WRAP
#!/bin/sh
LP_QSORT_SEED=$seed LD_PRELOAD='$LIB' exec '$LP' "\$@"
WRAP
    chmod +x "$T/llmprof"
    if bash "$SRC/tests/golden.sh" "$T/llmprof" "$SRC" >"$T/out" 2>&1; then
        echo "ok - every golden output the same with shuffle $seed"
    else
        grep '^[-+]' "$T/out" | head -20
        echo "not ok - outputs moved with shuffle $seed"
        status=1
    fi
done
exit $status
