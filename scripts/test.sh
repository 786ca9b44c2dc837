#!/usr/bin/env bash
# Builds and runs every test: the normal build, the same suite under AddressSanitizer and
# UndefinedBehaviorSanitizer, Release builds with gcc and clang (-O3 finds warnings -O2 does
# not, and each compiler warns of its own), and a short libFuzzer run of each parser of user
# files.
# Environment: LLMPROF_FUZZ_SECONDS (default 30 in all; 0 skips the fuzzer runs).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
lp_deps clang libclang-rt-14-dev chromium sqlite3
jobs=$(nproc)

echo "== build and test (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== build and test under ASan+UBSan (build-asan/)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DLLMPROF_SANITIZE=ON >/dev/null
cmake --build build-asan -j "$jobs"
ctest --test-dir build-asan --output-on-failure -j "$jobs"

echo "== build as a packager does: Release, warnings as errors (build-release/)"
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DLLMPROF_WERROR=ON >/dev/null
cmake --build build-release -j "$jobs"
echo "== the same with clang (build-release-clang/)"
CC=clang cmake -S . -B build-release-clang -DCMAKE_BUILD_TYPE=Release -DLLMPROF_WERROR=ON >/dev/null
cmake --build build-release-clang -j "$jobs"

secs=${LLMPROF_FUZZ_SECONDS:-30}
if [ "$secs" -gt 0 ]; then
    # every library instrumented (coverage, ASan, UBSan); a crash, leak, hang (-timeout) or
    # huge allocation (-rss_limit_mb, which also bounds one malloc) fails the script
    read -r -a targets <<<"$(bench/fuzz.sh targets)"
    echo "== fuzz the parsers of user files, ${secs} s in all (build-fuzz/)"
    CC=clang cmake -S . -B build-fuzz -DLLMPROF_FUZZ=ON -DLLMPROF_COLLECTOR=OFF \
        -DLLMPROF_STATIC_DEPS=OFF >/dev/null
    cmake --build build-fuzz -j "$jobs" --target "${targets[@]}"
    each=$((secs / ${#targets[@]} > 1 ? secs / ${#targets[@]} : 1))
    for target in "${targets[@]}"; do
        work=$(mktemp -d /tmp/lp_fuzz.XXXXXX)
        mkdir "$work/new"
        # new inputs go to the first directory: the committed corpus is only read
        if ! build-fuzz/bin/"$target" -max_total_time="$each" -max_len=65536 -timeout=10 \
            -rss_limit_mb=2048 -artifact_prefix="$work/" "$work/new" \
            "tests/fuzz/corpus/$(bench/fuzz.sh corpus "$target")" >"$work/log" 2>&1; then
            tail -n 40 "$work/log"
            echo "$target failed; the input that did it: $(ls "$work"/crash-* "$work"/leak-* \
                "$work"/timeout-* "$work"/oom-* 2>/dev/null | head -1)" >&2
            exit 1
        fi
        echo "$target: $(grep -E '^#[0-9]+[[:space:]]+DONE' "$work/log" | tail -1)"
        rm -rf "$work"
    done
fi
echo "all tests passed"
