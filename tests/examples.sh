#!/usr/bin/env bash
# The committed example reports (examples/) are what the current `llmprof report` writes on
# their fixtures, byte for byte: a change to the analysis or the writers that changes them
# must regenerate them (commands in examples/README.md) and show the difference in review.
# Usage: examples.sh LLMPROF SOURCE_DIR [--write]
# --write: regenerate them instead (the files each example directory holds, no others).
set -u
LP=$1
WRITE=${3:-}
cd "$2" || exit 1
T=$(mktemp -d /tmp/lp_examples.XXXXXX)
trap 'rm -rf "$T"' EXIT
source tests/cli_lib.sh
# example directory, then the report's arguments, as examples/README.md gives them
check() {
    local ex=$1
    shift
    if ! "$LP" report "$@" -o "$T/$ex" --quiet >"$T/log" 2>&1; then
        bad "$ex: report failed: $(cat "$T/log")"
        return
    fi
    local f differ=0
    for f in examples/"$ex"/*; do
        if [ "$WRITE" = --write ]; then
            cmp -s "$f" "$T/$ex/$(basename "$f")" || cp "$T/$ex/$(basename "$f")" "$f"
        elif ! cmp -s "$f" "$T/$ex/$(basename "$f")"; then
            differ=1
            bad "$ex: $(basename "$f") is not what report writes now (regenerate it)"
        fi
    done
    [ "$differ" -eq 0 ] && ok "$ex: $(ls examples/"$ex" | tr '\n' ' ')unchanged"
}
check hf-llama-h200 tests/fixtures/hf-llama --model tests/fixtures/hf-llama/config.json
check hf-moe-h200 tests/fixtures/hf-moe --model tests/fixtures/hf-moe/config.json
check llama-gemm-h200 tests/fixtures/llama-gemm --model tests/configs/llama-bench-1.1b.json \
    --prefill-logits all
check deepseek-ocr2/report tests/fixtures/deepseek-ocr2 --model examples/deepseek-ocr2/config.json
check deepseek-ocr2/report-crops tests/fixtures/deepseek-ocr2-crops \
    --model examples/deepseek-ocr2/config.json
check deepseek-ocr2/report-generate tests/fixtures/deepseek-ocr2-generate \
    --model examples/deepseek-ocr2/config.json
check serving-h200 tests/fixtures/serve-graphs-mark --model tests/fixtures/serve-graphs-mark/config.json
check deepseek-ocr/report tests/fixtures/deepseek-ocr-repeats \
    --model tests/fixtures/deepseek-ocr-repeats/config.json
check deepseek-ocr/report-repeat-1 tests/fixtures/deepseek-ocr-repeats/repeat-1 \
    --model tests/fixtures/deepseek-ocr-repeats/config.json
check deepseek-ocr/report-ocr2 tests/fixtures/deepseek-ocr2-repeats \
    --model tests/fixtures/deepseek-ocr2-repeats/config.json
check deepseek-ocr/report-operators tests/fixtures/deepseek-ocr-operators/repeat-1 \
    --model tests/fixtures/deepseek-ocr-operators/config.json
finish
