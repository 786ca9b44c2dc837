#!/usr/bin/env bash
# Builds and runs every test: the normal build, the same suite under AddressSanitizer and
# UndefinedBehaviorSanitizer, and a short libFuzzer run of each parser of user files.
# Environment: LLMPROF_FUZZ_SECONDS (default 30 in all; 0 skips the fuzzer runs).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
lp_deps clang libclang-rt-14-dev chromium
jobs=$(nproc)

echo "== build and test (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== build and test under ASan+UBSan (build-asan/)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DLLMPROF_SANITIZE=ON >/dev/null
cmake --build build-asan -j "$jobs"
ctest --test-dir build-asan --output-on-failure -j "$jobs"

secs=${LLMPROF_FUZZ_SECONDS:-30}
if [ "$secs" -gt 0 ]; then
    echo "== fuzz the parsers of user files, ${secs} s in all (build-fuzz/)"
    CC=clang cmake -S . -B build-fuzz -DLLMPROF_FUZZ=ON -DLLMPROF_COLLECTOR=OFF \
        -DLLMPROF_STATIC_DEPS=OFF >/dev/null
    cmake --build build-fuzz -j "$jobs" --target fuzz_trace_reader fuzz_model_config \
        fuzz_safetensors_header
    each=$((secs / 3 > 1 ? secs / 3 : 1))
    for target in fuzz_trace_reader:corpus fuzz_model_config:corpus_config \
        fuzz_safetensors_header:corpus_safetensors; do
        work=$(mktemp -d)
        cp "tests/fuzz/${target#*:}"/* "$work/"
        build-fuzz/bin/"${target%%:*}" -max_total_time="$each" -max_len=65536 "$work" 2>&1 | tail -1
        rm -rf "$work"
    done
fi
echo "all tests passed"
