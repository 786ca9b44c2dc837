#!/usr/bin/env bash
# llmprof deep without a GPU: tests/fake/ncu stands in for Nsight Compute, "profiling" by
# handing back a real raw page from the H200 (tests/fixtures/deep-*). Checks the command line
# ncu gets, the results' directory, the report's section, and each refusal: ncu missing or
# too old, an earlier deep dive, a budget too small (and trimming), a run without kernels,
# ncu measuring nothing, and partial results kept when the budget runs out.
# usage: cli_deep.sh LLMPROF FIXTURES FAKE_NCU
set -u
L=$1 FIX=$2 NCU=$3
. "$(dirname "$0")/cli_lib.sh"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
run8b() { rm -rf "$T/r8"; cp -r "$FIX/deep-llama3-8b" "$T/r8"; rm -rf "$T/r8/deep"; }
export FAKE_NCU_CSV=$FIX/deep-llama3-8b/deep/ncu-raw.csv FAKE_NCU_ARGS=$T/args

run8b
expect 0 "21 kernels measured" "deep runs the program under ncu and imports its raw page" -- \
    "$L" deep "$T/r8" --top 4 --ncu "$NCU" -- true
for w in per-launch-config prefill/ decode/ none node mangled --launch-skip --launch-count \
    sm__ops_path_tensor_src_bf16_dst_fp32.sum gpu__time_duration.sum \
    launch__occupancy_limit_registers device__attribute_display_name \
    ',regex:^smsp__average_warps_issue_stalled_'; do
    if grep -qx -- "$w" "$T/args" || grep -q -- "$w" "$T/args"; then ok "ncu gets $w"; else
        bad "ncu's command line lacks $w: $(tr '\n' ' ' <"$T/args")"; fi
done
if grep -qx -- --section "$T/args" || [ "$(grep -cx -- --metrics "$T/args")" != 1 ]; then
    bad "--sections report asks ncu for no section, its metrics in one --metrics"
else ok "--sections report (the default) asks ncu for no section, its metrics in one --metrics"; fi
run8b
expect 0 "21 kernels measured" "deep --sections full" -- \
    "$L" deep "$T/r8" --top 4 --sections full --ncu "$NCU" -- true
for w in SpeedOfLight WarpStateStats SchedulerStats sm__ops_path_tensor_src_bf16_dst_fp32.sum; do
    if grep -qx -- "$w" "$T/args" || grep -q -- "^$w," "$T/args"; then ok "--sections full: ncu gets $w"; else
        bad "--sections full: ncu's command line lacks $w: $(tr '\n' ' ' <"$T/args")"; fi
done
expect 2 "--sections.*report.*full" "deep --sections with another value" -- \
    "$L" deep "$T/r8" --sections most --ncu "$NCU" -- true
if grep -q '^regex:^(nvjet_sm90_tst_320x128' "$T/args"; then ok "one -k regex of the picked kernels"
else bad "no -k regex: $(grep regex "$T/args")"; fi
for f in deep.ncu-rep ncu-raw.csv deep.json ncu.log; do
    if [ -s "$T/r8/deep/$f" ]; then ok "deep/$f written"; else bad "deep/$f missing"; fi
done
if ls -a "$T/r8" | grep -q '^\.deep'; then bad "a temporary directory was left"; else
    ok "no temporary directory left"; fi
expect 0 "" "report reads the deep dive" -- "$L" report "$T/r8" --quiet
if grep -q "^## Kernels in depth" "$T/r8/report.md" && grep -q "^decode,nvjet" "$T/r8/deep.csv" \
    && grep -q '"bound": "memory"' <(python3 -m json.tool "$T/r8/report.json"); then
    ok "report.md, deep.csv and report.json have the kernels in depth"
else bad "the report lacks the kernels in depth"; fi

expect 2 "already holds a deep dive: --force" "an earlier deep dive is kept without --force" -- \
    "$L" deep "$T/r8" --ncu "$NCU" -- true
expect 0 "kernels measured" "--force replaces it" -- "$L" deep "$T/r8" --force --ncu "$NCU" -- true
expect 2 "is not an executable file" "--ncu that is not there" -- \
    "$L" deep "$T/r8" --force --ncu "$T/none" -- true
expect 2 "needs Nsight Compute 2023.1 or newer" "an ncu too old" -- \
    env FAKE_NCU_VERSION=2022.1.0 "$L" deep "$T/r8" --force --ncu "$NCU" -- true
expect 2 "more than --budget" "a budget the program alone exceeds" -- \
    "$L" deep "$T/r8" --force --budget 0.1 --ncu "$NCU" -- true
expect 0 "trimmed to fit --budget" "a tight budget trims the instances first" -- \
    "$L" deep "$T/r8" --force --budget 0.5 --ncu "$NCU" -- true
expect 0 "regex:^(" "--dry-run prints the ncu command" -- "$L" deep "$T/r8" --dry-run --ncu "$NCU"
if ls -a "$T/r8" | grep -q '^\.deep'; then bad "--dry-run wrote a directory"; else
    ok "--dry-run writes nothing"; fi
if grep -q "\"$T/r8/deep/deep\"" "$T/r8/deep/deep.json"; then ok "deep.json names the report where it is"
else bad "deep.json's -o is not the final place: $(grep -A1 '"-o"' "$T/r8/deep/deep.json")"; fi
# the fake ncu prints its "Profiling" lines at once: a rate of about 0 s per kernel
if python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
sys.exit(not (d["sections"] == "report" and isinstance(d["s_per_kernel"], float) and
              0 <= d["s_per_kernel"] < 1))' "$T/r8/deep/deep.json"; then
    ok "deep.json gives the sections and the seconds per kernel measured"
else bad "deep.json's sections or s_per_kernel: $(grep -E 'sections|s_per_kernel' "$T/r8/deep/deep.json")"; fi
expect 1 "measured no kernel" "ncu measuring nothing is said" -- \
    env FAKE_NCU_CSV= "$L" deep "$T/r8" --force --ncu "$NCU" -- true
expect 2 "usage: llmprof deep RUN" "no run" -- "$L" deep
expect 2 "no command after '--'" "'--' without a command" -- "$L" deep "$T/r8" --
rm -rf "$T/light"; cp -r "$FIX/pm-hf-llama-light" "$T/light"
expect 1 "recorded no kernels" "a --light run has no kernels to pick (an input deep cannot use)" -- \
    "$L" deep "$T/light" --ncu "$NCU" -- true

# the budget runs out: ncu is stopped, what it measured is kept and said
rm -rf "$T/c"; cp -r "$FIX/deep-ctr-check" "$T/c"; rm -rf "$T/c/deep"
expect 1 "over the budget" "past the budget ncu is stopped" -- env \
    FAKE_NCU_CSV="$FIX/deep-ctr-check/deep/ncu-raw.csv" "$L" deep "$T/c" --budget 0.12 \
    --ncu "$NCU" -- sleep 30
if grep -q '"stopped": "budget"' "$T/c/deep/deep.json" && [ -s "$T/c/deep/ncu-raw.csv" ]; then
    ok "the partial results are kept"; else bad "no partial results after the budget"; fi
finish
