#!/usr/bin/env bash
# Issue 15 on the GPU machine: what a capture window leaves behind once closed, in C.
# bench/window_cost (launches timed before the process's first window and after it closed,
# one process per run) under $WINDOW_MODES (bench/modes.sh; default: none, capture,
# capture-bare, floor-stop-disable, floor-stop-finalize), $WINDOW_ROUNDS interleaved rounds
# (default 15), summarised by bench/window_summary.py. Expects build/ carried
# (build/gpu/window_cost from tests/gpu/build.sh). Writes $OUT/window_cost-log.txt and
# $OUT/window_cost.jsonl. Whether a context made under kernel activity escapes what a window
# leaves behind: WINDOW_MODES='none floor-window floor-ctx-window capture-bare'.
. "$(dirname "$0")/setup.sh" window_cost
step "window_cost: ${WINDOW_MODES:=none capture capture-bare floor-stop-disable floor-stop-finalize}"
LLMPROF_BENCH_MODES="$WINDOW_MODES" LLMPROF_BENCH_CMD="build/gpu/window_cost 20000 7" \
    bash bench/overhead.sh "${WINDOW_ROUNDS:-15}" "$OUT/window_cost.jsonl" "$T/runs" | grep -v '^{'
python3 bench/window_summary.py "$OUT/window_cost.jsonl"
