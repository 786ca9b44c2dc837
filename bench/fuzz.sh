#!/usr/bin/env bash
# Long fuzz campaigns over every fuzz target (tests/fuzz/), every library instrumented for
# coverage, ASan and UBSan. scripts/test.sh runs the same targets for 30 s in all; this is
# for hours, on a machine with many cores.
#   bench/fuzz.sh build              builds the targets here (needs clang): zstd, zlib,
#                                    jansson, libiberty and the C++ runtime linked in, so the
#                                    binaries run on a host without clang or Debian's libraries
#   bench/fuzz.sh run SECONDS [JOBS] runs each target SECONDS with JOBS processes (-fork;
#                                    default: all cores) from the committed corpus, merges new
#                                    coverage into tests/fuzz/corpus/NAME/found/ and writes a
#                                    summary (executions, edges, features, crashes, timeouts)
#   bench/fuzz.sh seeds              remakes the trace seeds from tests/fixtures, and those with
#                                    values at the edges (extreme-*: fuzz_make_seeds --extreme)
#   bench/fuzz.sh corpus TARGET      the corpus directory (under tests/fuzz/corpus/) TARGET reads
#   bench/fuzz.sh targets            every fuzz target (the one list; scripts/test.sh reads it)
# Environment: LLMPROF_FUZZ_BUILD (default build-fuzzbench), LLMPROF_FUZZ_OUT (results; default
# $LLMPROF_FUZZ_BUILD/results-DATE), LLMPROF_FUZZ_FOUND_KB (bound of each found/, default 384),
# LLMPROF_FUZZ_TARGETS (those to run, default all, e.g. "fuzz_trace_records").
# On the GPU host: carry $LLMPROF_FUZZ_BUILD/bin, set LLMPROF_FUZZ_OUT=$OUT; bring back
# summary.txt and corpus/, then `cp -r RESULTS/corpus/. tests/fuzz/corpus/` here.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${LLMPROF_FUZZ_BUILD:-build-fuzzbench}
all_targets=(fuzz_trace_reader fuzz_trace_records fuzz_trace_parse fuzz_trace_follow
    fuzz_model_config fuzz_safetensors_header fuzz_ncu_raw fuzz_serve_request)
# the corpus a target reads: its name less fuzz_, or the target whose input format it shares
# (as LP_FUZZ_CORPUS_<target> in tests/CMakeLists.txt)
corpus_of() { case $1 in fuzz_trace_parse) echo trace_records ;; *) echo "${1#fuzz_}" ;; esac; }
read -r -a targets <<<"${LLMPROF_FUZZ_TARGETS:-${all_targets[*]}}"
# a hang past 10 s is a bug, so is a process past 2 GiB or one malloc past it
limits=(-timeout=10 -rss_limit_mb=2048 -max_len=65536)

usage() {
    sed -n '5,19p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

cmd_build() {
    CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLLMPROF_FUZZ=ON \
        -DLLMPROF_COLLECTOR=OFF -DLLMPROF_STATIC_DEPS=ON \
        -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++ -static-libgcc -Wno-unused-command-line-argument" >/dev/null
    cmake --build "$build" -j "$(nproc)" --target "${all_targets[@]}" fuzz_make_seeds
    local t bad=0
    for t in "${all_targets[@]}"; do
        # only the C library and the dynamic loader may remain
        if ldd "$build/bin/$t" | grep -Ev 'linux-vdso|ld-linux|lib(c|m|pthread|dl|rt)\.so'; then
            echo "$t needs the libraries above: not self-contained" >&2
            bad=1
        fi
    done
    { clang --version | head -1; git rev-parse --short HEAD 2>/dev/null || echo "commit unknown"
      git diff --quiet HEAD 2>/dev/null || echo "with uncommitted changes"; } >"$build/bin/fuzz-build.txt"
    [ "$bad" -eq 0 ] && echo "built ${all_targets[*]} in $build/bin (carry that directory)"
    return "$bad"
}

# bytes in the files under a directory (du counts blocks and directories)
bytes_in() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }

# fork-mode status line: "#RUNS: cov: E ft: F corp: C exec/s: X oom/timeout/crash: O/T/K ..."
stat_of() { # LOG FIELD
    grep -E '^#[0-9]+: cov: ' "$1" | tail -1 | awk -v f="$2" '{
        if (f == "runs") { sub(/^#/, "", $1); sub(/:$/, "", $1); print $1; exit }
        for (i = 1; i < NF; i++) if ($i == f ":") { print $(i + 1); exit } }'
}

cmd_run() {
    local secs=${1:-} jobs=${2:-$(nproc)}
    [[ "$secs" =~ ^[0-9]+$ && "$jobs" =~ ^[0-9]+$ && "$secs" -gt 0 && "$jobs" -gt 0 ]] || usage
    local out=${LLMPROF_FUZZ_OUT:-$build/results-$(date -u +%Y%m%dT%H%M%SZ)}
    local found_kb=${LLMPROF_FUZZ_FOUND_KB:-384} t
    for t in "${targets[@]}"; do
        [ -x "$build/bin/$t" ] || { echo "no $build/bin/$t: run bench/fuzz.sh build first" >&2; exit 1; }
    done
    mkdir -p "$out"
    local summary=$out/summary.txt failed=0
    {
        echo "llmprof fuzz campaign, $(date -u '+%Y-%m-%d %H:%M UTC')"
        echo "machine: $(hostname), $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
        echo "build: $(tr '\n' ' ' <"$build/bin/fuzz-build.txt" 2>/dev/null)"
        echo "each target: $secs s, $jobs processes (-fork), ${limits[*]}"
        printf '%-24s %12s %9s %7s %7s %7s %7s %8s %6s %11s\n' target executions exec/s edges \
            features crashes timeouts ooms/leaks corpus "found added"
    } >"$summary"
    for t in "${targets[@]}"; do
        local name res=$out/${t#fuzz_}
        name=$(corpus_of "$t")
        local seeds=tests/fuzz/corpus/$name
        mkdir -p "$res/work" "$res/artifacts"
        echo "== $t: $secs s, $jobs processes" >&2
        # new inputs go to work/ (the first directory); the committed corpus is only read
        "$build/bin/$t" -fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
            -max_total_time="$secs" "${limits[@]}" -artifact_prefix="$res/artifacts/" \
            "$res/work" "$seeds" >"$res/log" 2>&1 || true
        local runs cov ft corp oom_t_crash crashes timeouts ooms
        runs=$(stat_of "$res/log" runs) corp=$(stat_of "$res/log" corp)
        oom_t_crash=$(stat_of "$res/log" oom/timeout/crash)
        # edges and features as a plain run counts them (fork mode counts in other units):
        # the campaign's corpus loaded once
        "$build/bin/$t" -runs=0 "${limits[@]}" -artifact_prefix="$res/artifacts/" "$res/work" \
            "$seeds" >"$res/coverage.log" 2>&1 || true
        cov=$(sed -n 's/.*INITED cov: \([0-9]*\) ft: .*/\1/p' "$res/coverage.log")
        ft=$(sed -n 's/.*INITED cov: [0-9]* ft: \([0-9]*\) .*/\1/p' "$res/coverage.log")
        crashes=$(find "$res/artifacts" -name 'crash-*' | wc -l)
        timeouts=$(find "$res/artifacts" -name 'timeout-*' | wc -l)
        ooms=$(find "$res/artifacts" \( -name 'oom-*' -o -name 'leak-*' \) | wc -l)
        # merge: what work/ adds to the committed corpus goes to found/, within its bound
        local base=$res/base added=0
        rm -rf "$base" && mkdir -p "$base"
        find "$seeds" -type f -exec cp {} "$base/" \;
        ls "$base" | sort >"$res/base.list"
        "$build/bin/$t" -merge=1 "${limits[@]}" -artifact_prefix="$res/artifacts/" "$base" \
            "$res/work" >"$res/merge.log" 2>&1 || true
        mkdir -p "$seeds/found"
        local f
        while read -r f; do
            mv "$base/$f" "$seeds/found/" && added=$((added + 1))
        done < <(ls "$base" | sort | comm -13 "$res/base.list" -)
        if [ "$(bytes_in "$seeds/found")" -gt $((found_kb * 1024)) ]; then
            # over the bound: the smallest set with found/'s coverage, then the smallest files
            local min=$res/found-min
            rm -rf "$min" && mkdir -p "$min"
            "$build/bin/$t" -merge=1 "${limits[@]}" -artifact_prefix="$res/artifacts/" "$min" \
                "$seeds/found" >>"$res/merge.log" 2>&1 || true
            rm -rf "$seeds/found" && mv "$min" "$seeds/found"
            local kept=0
            while read -r f; do
                kept=$((kept + $(stat -c %s "$seeds/found/$f")))
                [ "$kept" -gt $((found_kb * 1024)) ] && rm -f "$seeds/found/$f"
            done < <(ls -S -r "$seeds/found")
        fi
        rmdir "$seeds/found" 2>/dev/null || true
        if [ -d "$seeds/found" ]; then
            mkdir -p "$out/corpus/$name"
            rm -rf "$out/corpus/$name/found" && cp -r "$seeds/found" "$out/corpus/$name/"
        fi
        printf '%-24s %12s %9s %7s %7s %7s %7s %8s %6s %11s\n' "$t" "${runs:-?}" \
            "$(( ${runs:-0} / secs ))" "${cov:-?}" "${ft:-?}" "$crashes" "$timeouts" "$ooms" \
            "${corp:-?}" "$added" >>"$summary"
        [ -n "$oom_t_crash" ] && echo "  $t: libFuzzer's oom/timeout/crash count: $oom_t_crash" >>"$summary"
        [ -n "$cov" ] || echo "  $t: the corpus did not load whole: see $res/coverage.log" >>"$summary"
        [ $((crashes + timeouts + ooms)) -gt 0 ] && failed=1
        [ -n "$runs" ] || { echo "  $t: no status line: see $res/log" >>"$summary"; failed=1; }
        rm -rf "$base" "$res/work"
    done
    echo "committed corpus: $(( $(bytes_in tests/fuzz/corpus) / 1024 )) KiB in $(find tests/fuzz/corpus -type f | wc -l) files" >>"$summary"
    cat "$summary"
    echo "results in $out (logs and artifacts per target)"
    return "$failed"
}

cmd_seeds() {
    local bin=$build/bin/fuzz_make_seeds
    [ -x "$bin" ] || { echo "no $bin: run bench/fuzz.sh build first" >&2; exit 1; }
    "$bin" tests/fuzz/corpus/trace_records/whole tests/fuzz/corpus/trace_reader/whole \
        tests/fixtures/*/*.lpt
    "$bin" --extreme tests/fuzz/corpus
}

case "${1:-}" in
build) cmd_build ;;
run) shift; cmd_run "$@" ;;
seeds) cmd_seeds ;;
corpus) corpus_of "${2:-}" ;;
targets) echo "${all_targets[*]}" ;;
*) usage ;;
esac
