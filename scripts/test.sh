#!/usr/bin/env bash
# Builds and runs every test: the normal build, the same suite under AddressSanitizer and
# UndefinedBehaviorSanitizer, and a short libFuzzer run of the trace reader.
# Environment: LLMPROF_FUZZ_SECONDS (default 20; 0 skips the fuzzer run).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
lp_deps clang libclang-rt-14-dev
jobs=$(nproc)

echo "== build and test (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== build and test under ASan+UBSan (build-asan/)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DLLMPROF_SANITIZE=ON >/dev/null
cmake --build build-asan -j "$jobs"
ctest --test-dir build-asan --output-on-failure -j "$jobs"

secs=${LLMPROF_FUZZ_SECONDS:-20}
if [ "$secs" -gt 0 ]; then
    echo "== fuzz the trace reader for ${secs} s (build-fuzz/)"
    CC=clang cmake -S . -B build-fuzz -DLLMPROF_FUZZ=ON -DLLMPROF_COLLECTOR=OFF \
        -DLLMPROF_STATIC_DEPS=OFF >/dev/null
    cmake --build build-fuzz -j "$jobs" --target fuzz_trace_reader
    work=$(mktemp -d)
    cp tests/fuzz/corpus/* "$work/"
    build-fuzz/bin/fuzz_trace_reader -max_total_time="$secs" -max_len=65536 "$work" \
        tests/fixtures/workload tests/fixtures/torch 2>&1 | tail -3
    rm -rf "$work"
fi
echo "all tests passed"
