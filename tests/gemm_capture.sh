#!/usr/bin/env bash
# GEMM capture without a GPU: `llmprof record` preloads the collector, whose cuBLAS wrappers
# must record every call of fake_gemm_app (against the fake libcublas.so.13) exactly, pass
# arguments and results through unchanged, and stay out of the way with --no-gemm.
# Usage: gemm_capture.sh LLMPROF FAKE_GEMM_APP CHECK_TRACE
set -u
llmprof=$1 app=$2 check=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

plain=$("$app") || fail "the app alone exited $?"
[ "$plain" = "calls=8 failing=7" ] || fail "the app alone printed '$plain'"

out=$(LLMPROF_QUIET=1 "$llmprof" record --quiet -o "$work/on" -- "$app" 2>"$work/on.err") ||
    fail "record exited $?: $(cat "$work/on.err")"
[ "$out" = "$plain" ] || fail "recorded, the app printed '$out' instead of '$plain'"
trace=$(ls "$work"/on/trace.*.lpt 2>/dev/null | head -1)
[ -n "$trace" ] || fail "no trace"
"$check" gemm-fake "$trace" || fail "check_trace gemm-fake"
"$llmprof" info "$work/on" | grep -q "gemm     8 calls" || fail "info does not list 8 GEMM calls: $("$llmprof" info "$work/on" | grep gemm)"

out=$("$llmprof" record --quiet --no-gemm -o "$work/off" -- "$app" 2>/dev/null) || fail "record --no-gemm exited $?"
[ "$out" = "$plain" ] || fail "with --no-gemm, the app printed '$out'"
"$llmprof" info "$work/off" | grep -q "gemm     off" || fail "info does not say GEMM capture was off: $("$llmprof" info "$work/off" | grep -i gemm)"

# LD_PRELOAD set by the user is kept behind the collector
out=$(LD_PRELOAD=/nonexistent-lib.so "$llmprof" record --quiet -o "$work/pre" -- env 2>/dev/null | grep '^LD_PRELOAD=')
case $out in
LD_PRELOAD=*libllmprof.so:/nonexistent-lib.so) ;;
*) fail "LD_PRELOAD in the child: '$out'" ;;
esac

echo "gemm_capture: $fails failure(s)"
exit "$fails"
