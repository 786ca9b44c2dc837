#!/usr/bin/env bash
# CLI behaviour without a GPU: bad invocations fail before anything runs, with a clear
# message and a non-zero status; record's plumbing (exit status, stdio, signals,
# meta.json, one trace per CUDA process) works end to end through fake_cuda_app.
# Usage: cli_errors.sh LLMPROF FAKE_CUDA_APP FIXTURES_DIR
set -u
LP=$1 FAKE=$2 FIX=$3
T=$(mktemp -d /tmp/lp_cli.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok - $1"; }
bad() { fail=$((fail + 1)); echo "not ok - $1"; }
# expect STATUS PATTERN DESCRIPTION -- COMMAND...: exit status and a stderr/stdout pattern
expect() {
    local want=$1 pattern=$2 what=$3
    shift 4
    local out rc
    out=$("$@" 2>&1)
    rc=$?
    if [ "$rc" -eq "$want" ] && grep -q -- "$pattern" <<<"$out"; then ok "$what"; else
        bad "$what (status $rc, wanted $want; output: $out)"; fi
}

expect 2 "usage: llmprof" "no subcommand" -- "$LP"
expect 2 "is not a command" "unknown subcommand" -- "$LP" frobnicate
expect 0 "record" "--help lists commands" -- "$LP" --help
expect 0 "usage: llmprof record" "record --help" -- "$LP" record --help
expect 0 "usage: llmprof info" "info --help" -- "$LP" info --help
expect 2 "no command to run" "record without a command" -- "$LP" record -o "$T/r0"
expect 2 "no command to run" "record with only --" -- "$LP" record -o "$T/r0" --
expect 2 "unknown option '--bogus'" "record with an unknown option" -- "$LP" record --bogus -- true
expect 2 "needs a directory" "-o without a value" -- "$LP" record -o
expect 2 "from 0 to 1000" "--nvml-hz not a number" -- "$LP" record --nvml-hz fast -- true
expect 2 "from 0 to 1000" "--nvml-hz negative" -- "$LP" record --nvml-hz -5 -- true
expect 127 "command not found or not executable: no-such-cmd" "command not found" -- \
    "$LP" record -o "$T/r1" -- no-such-cmd
[ ! -e "$T/r1" ] && ok "nothing created for a command not found" || bad "r1 was created"
echo "plain text" >"$T/notexec" && chmod 644 "$T/notexec"
expect 127 "not executable" "command not executable" -- "$LP" record -o "$T/r2" -- "$T/notexec"
touch "$T/afile"
expect 2 "is not a directory" "output is a file" -- "$LP" record -o "$T/afile" -- true
mkdir -p "$T/ro" && chmod 500 "$T/ro"
if [ "$(id -u)" -ne 0 ]; then
    expect 2 "not writable" "unwritable output" -- "$LP" record -o "$T/ro/run" -- true
fi
expect 2 "cannot create output directory" "output under a file" -- "$LP" record -o "$T/afile/run" -- true

# end to end with the stand-in CUDA program
out=$(echo "hello" | "$LP" record -o "$T/run" -- "$FAKE" 3 2>"$T/err")
rc=$?
[ "$rc" -eq 3 ] && ok "exit status passes through (3)" || bad "exit status $rc, wanted 3"
[ "$out" = "echo: hello" ] && ok "stdin and stdout pass through" || bad "stdout was: $out"
grep -q '"exit_code": 3' "$T/run/meta.json" && ok "meta.json has the exit code" || bad "meta.json: $(cat "$T/run/meta.json")"
grep -q '"status": "exited"' "$T/run/meta.json" && ok "meta.json has the status" || bad "no status"
grep -q '"TEARDOWN_CUPTI": "0"' "$T/run/meta.json" && ok "meta.json keeps relevant environment" || bad "env missing"
ls "$T"/run/trace.*.lpt >/dev/null 2>&1 && ok "one trace for the CUDA process" || bad "no trace written"
expect 0 "exited (exit 3)" "info reads the run" -- "$LP" info "$T/run"
expect 0 "no kernels or\|could not be enabled\|cuptiSubscribe" "info shows why nothing was recorded" -- "$LP" info "$T/run"
expect 2 "already holds a recorded run" "record refuses a used run directory" -- \
    "$LP" record -o "$T/run" -- "$FAKE"
"$LP" record -o "$T/sig" -- sh -c 'kill -TERM $$' 2>/dev/null
rc=$?
[ "$rc" -eq 143 ] && ok "a signal ends record with 128+N (143)" || bad "status $rc, wanted 143"
grep -q '"status": "killed"' "$T/sig/meta.json" && ok "meta.json says killed" || bad "meta: $(cat "$T/sig/meta.json")"
rc=0
LLMPROF_OUT=/nonexistent-dir CUDA_INJECTION64_PATH="$(dirname "$LP")/../lib/libllmprof.so" \
    "$FAKE" 4 </dev/null 2>"$T/err2" || rc=$?
[ "$rc" -eq 4 ] && grep -q "nothing will be recorded" "$T/err2" && ok "unwritable trace directory: warning, program runs on" || \
    bad "status $rc, stderr: $(cat "$T/err2")"

# one trace per CUDA process, named by rank and pid
"$LP" record -o "$T/ranks" -- sh -c 'RANK=0 "$1" </dev/null & RANK=1 "$1" </dev/null; wait' sh "$FAKE" 2>/dev/null
n=$(ls "$T"/ranks/trace.rank0.*.lpt "$T"/ranks/trace.rank1.*.lpt 2>/dev/null | wc -l)
[ "$n" -eq 2 ] && ok "child processes followed: one trace per rank" || bad "traces: $(ls "$T/ranks")"
expect 0 "pid [0-9]*, rank 1 on" "info names each trace's rank" -- "$LP" info "$T/ranks"

# info on bad input
expect 1 "does not exist" "info on a missing path" -- "$LP" info "$T/missing"
echo "not a trace" >"$T/junk.lpt"
expect 1 "not an llmprof trace" "info on a file that is not a trace" -- "$LP" info "$T/junk.lpt"
printf 'LLMPROF\0\x09\0\0\0\0\0\0\0' >"$T/future.lpt"
expect 1 "newer than this llmprof reads" "info on a newer major version" -- "$LP" info "$T/future.lpt"
expect 2 "expects one run directory" "info without arguments" -- "$LP" info
head -c 3000 "$FIX"/killed/trace.*.lpt >"$T/cut.lpt"
expect 0 "torn chunk" "info on a truncated trace says what it dropped" -- "$LP" info "$T/cut.lpt"
expect 0 "did not finish the trace" "info on a killed run says so" -- "$LP" info "$FIX/killed"
expect 0 "decode" "info on the recorded LLM run shows its ranges" -- "$LP" info "$FIX/llama"

# llmprof model
CFG=$(dirname "$FIX")/configs
expect 0 "usage: llmprof model" "model --help" -- "$LP" model --help
expect 2 "no config given" "model without a config" -- "$LP" model
expect 2 "unknown option '--bogus'" "model with an unknown option" -- "$LP" model "$CFG/gpt2.json" --bogus
expect 2 "takes fp32, tf32, bf16" "model with a bad dtype" -- "$LP" model "$CFG/gpt2.json" --weights fp64
expect 2 "whole number >= 1" "model with a zero batch" -- "$LP" model "$CFG/gpt2.json" --batch 0
expect 2 "no GPU named 'TPU'" "model on an unknown GPU" -- "$LP" model "$CFG/gpt2.json" --gpu TPU
expect 2 "takes md or json" "model with a bad format" -- "$LP" model "$CFG/gpt2.json" --format xml
expect 2 "override a --gpu" "model --peak-tflops without --gpu" -- "$LP" model "$CFG/gpt2.json" --peak-tflops 100
expect 1 "No such file" "model on a missing config" -- "$LP" model "$T/none.json"
echo '{"model_type": "llama", "hidden_size": 4096,' >"$T/broken.json"
expect 1 "broken.json: not valid JSON" "model on malformed JSON names the file" -- "$LP" model "$T/broken.json"
expect 2 "exceed max_position_embeddings" "model beyond the context" -- "$LP" model "$CFG/gpt2.json" --prompt 1000 --gen 100
expect 0 "H200" "model --list-gpus" -- "$LP" model --list-gpus
expect 0 "6,738,415,616" "model prints Llama-2-7B's count" -- "$LP" model "$CFG/llama-2-7b.json" --gpu H200
expect 0 "TTFT >=" "model prints the roofline bounds" -- "$LP" model "$CFG/llama-2-7b.json" --gpu "NVIDIA H200"
"$LP" model "$CFG/deepseek-ocr.json" --gpu H200 --vision gundam --tiles 3x2 --format json -o "$T/ocr.json"
if python3 - "$T/ocr.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["params"]["total"] == 3336106240 and d["params"]["active"] > 0
assert d["kv_cache_bytes_per_token"] > 0
for s in ("vision", "prefill", "decode_step", "request"):
    assert d["stages"][s]["flops"] > 0 and d["stages"][s]["bytes"] > 0, s
assert d["workload"]["vision_tokens"] == 272 + 20 * 31 + 1
assert d["bounds"]["ttft_s_min"] > 0
PY
then ok "model --format json has the documented keys"; else bad "model JSON: $(head -c 300 "$T/ocr.json")"; fi
expect 1 "cannot write" "model -o into a missing directory" -- "$LP" model "$CFG/gpt2.json" -o "$T/missing/out.md"
[ ! -e "$T/missing" ] && ok "nothing half-written" || bad "a partial output was left"

# llmprof report, export and profile
expect 0 "usage: llmprof report" "report --help" -- "$LP" report --help
expect 2 "which run" "report without a run" -- "$LP" report
expect 1 "No such file" "report on a missing run" -- "$LP" report "$T/missing"
expect 1 "holds no trace" "report on a directory without traces" -- "$LP" report "$T/ro"
expect 1 "not an llmprof trace" "report on a file that is not a trace" -- "$LP" report "$T/junk.lpt"
expect 2 "takes NAME=REGEX" "report --stage without =" -- "$LP" report "$FIX/llama" --stage decode
expect 2 "whole number >= 1" "report --top 0" -- "$LP" report "$FIX/llama" --top 0
expect 1 "bad regular expression" "report with a bad stage regex" -- \
    "$LP" report "$FIX/llama" -o "$T/badre" --stage 'decode=(' --quiet
[ -z "$(ls -A "$T/badre" 2>/dev/null)" ] && ok "nothing written on an analysis error" || bad "left: $(ls -A "$T/badre")"
expect 1 "none.json" "report --model on a missing config names it" -- \
    "$LP" report "$FIX/llama" -o "$T/x" --model "$T/none.json"
expect 1 "not in the hardware table" "report --gpu unknown" -- "$LP" report "$FIX/llama" --gpu TPU
expect 0 "Decode is launch bound" "report on the recorded LLM run" -- \
    "$LP" report "$FIX/llama" -o "$T/rep" --model "$CFG/llama-bench-1.1b.json"
for f in report.md summary.md report.json report.html kernels.csv operators.csv stages.csv gemms.csv; do
    [ -s "$T/rep/$f" ] || bad "report did not write $f"
done
[ -z "$(ls -A "$T/rep" | grep tmp)" ] && ok "report wrote its eight files, no temporaries" || bad "temporaries left: $(ls -A "$T/rep")"
grep -q "^| decode | 32 |" "$T/rep/report.md" && ok "report.md has the decode stage" || bad "report.md: $(grep decode "$T/rep/report.md" | head -3)"
expect 0 "is not whole" "report on a killed run warns" -- "$LP" report "$FIX/killed" -o "$T/repk" --quiet
grep -q "not whole" "$T/repk/report.md" && ok "the killed run's report says it is not whole" || bad "no loss finding"
expect 0 "warning: .* is not whole" "report warns about a truncated trace" -- "$LP" report "$T/cut.lpt" -o "$T/repc" --quiet
expect 0 "report of" "report on a run of two ranks" -- "$LP" report "$T/ranks" -o "$T/repr"
[ "$(ls -d "$T"/repr/trace.rank*/ | wc -l)" -eq 2 ] && ok "one report directory per rank" || bad "$(ls "$T/repr")"
expect 0 "usage: llmprof export" "export --help" -- "$LP" export --help
expect 2 "usage: llmprof export" "export without --perfetto" -- "$LP" export "$FIX/llama"
expect 2 "holds 2 traces" "export of a run with two traces" -- "$LP" export "$T/ranks" --perfetto "$T/p.json"
expect 2 "FROM_MS:TO_MS" "export with a bad window" -- "$LP" export "$FIX/llama" --perfetto "$T/p.json" --window 5:2
expect 0 "ui.perfetto.dev" "export --perfetto" -- "$LP" export "$FIX/llama" --perfetto "$T/llama.json"
if python3 - "$T/llama.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
kinds = {}
for e in ev:
    kinds[(e["ph"], e.get("cat"))] = kinds.get((e["ph"], e.get("cat")), 0) + 1
assert kinds[("X", "kernel")] == 62763, kinds
assert kinds[("X", "nvtx")] == 66 and kinds[("s", "ac2g")] == kinds[("f", "ac2g")], kinds
assert any(e["ph"] == "C" and e["name"] == "power" for e in ev)
PY
then ok "the Perfetto file has kernels, ranges, flows and counters"; else bad "perfetto JSON"; fi
expect 0 "usage: llmprof profile" "profile --help" -- "$LP" profile --help
expect 2 "no command to run" "profile without a command" -- "$LP" profile -o "$T/p0"
out=$("$LP" profile -o "$T/prof" --top 5 -- "$FAKE" 0 </dev/null 2>&1)
rc=$?
[ "$rc" -eq 0 ] && [ -s "$T/prof/report.md" ] && [ -s "$T/prof/meta.json" ] && ok "profile records then reports" || \
    bad "profile: status $rc, $(ls "$T/prof" 2>&1), $out"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
