#!/usr/bin/env bash
# CLI behaviour without a GPU: bad invocations fail before anything runs, with a clear
# message and a non-zero status; record's plumbing (exit status, stdio, signals,
# meta.json, one trace per CUDA process) works end to end through fake_cuda_app.
# Usage: cli_errors.sh LLMPROF FAKE_CUDA_APP FIXTURES_DIR
set -u
LP=$1 FAKE=$2 FIX=$3
T=$(mktemp -d /tmp/lp_cli.XXXXXX)
trap 'rm -rf "$T"' EXIT
source "$(dirname "$0")/cli_lib.sh"
# Permission checks mean nothing to root: as root, they run as nobody (65534) through
# setpriv or runuser. Never skipped: without a way to drop root the script fails.
if [ "$(id -u)" -eq 0 ]; then
    if command -v setpriv >/dev/null; then USER_RUN=(setpriv --reuid=65534 --regid=65534 --clear-groups)
    elif command -v runuser >/dev/null; then USER_RUN=(runuser -u nobody --)
    else echo "not ok - running as root without setpriv or runuser: the permission checks cannot run"; exit 1; fi
    chmod 755 "$T"
    if ! "${USER_RUN[@]}" test -x "$LP" -a -r "$FIX/llama/meta.json"; then
        echo "not ok - as root, nobody (65534) must reach $LP and $FIX for the permission checks"; exit 1
    fi
    UNPRIV=65534
else
    USER_RUN=()
    UNPRIV=$(id -u)
fi

expect 2 "usage: llmprof" "no subcommand" -- "$LP"
expect 2 "is not a command" "unknown subcommand" -- "$LP" frobnicate
expect 0 "record" "--help lists commands" -- "$LP" --help
expect 0 "usage: llmprof record" "record --help" -- "$LP" record --help
expect 0 "usage: llmprof info" "info --help" -- "$LP" info --help
expect 2 "no command to run" "record without a command" -- "$LP" record -o "$T/r0"
expect 2 "no command to run" "record with only --" -- "$LP" record -o "$T/r0" --
expect 2 "unknown option '--bogus'" "record with an unknown option" -- "$LP" record --bogus -- true
expect 2 "--counter-dtypes: unknown tensor dtype 'int4' (known: bf16, fp16, fp8, tf32)" \
    "record with an unknown counter dtype" -- "$LP" record --counter-dtypes bf16,int4 -o "$T/r0" -- true
expect 2 "--counter-dtypes needs a list of tensor dtypes" "record --counter-dtypes without a value" \
    -- "$LP" record --counter-dtypes
expect 2 "--counter-ranges '(' is not a regular expression" "record with a bad counter regex" \
    -- "$LP" record --counter-ranges '(' -o "$T/r0" -- true
expect 2 "--pm-sampling takes an interval in microseconds from 10 to 100000" \
    "record with a PM interval too short" -- "$LP" record --pm-sampling 5 -o "$T/r0" -- true
expect 2 "--pm-sampling takes an interval in microseconds from 10 to 100000" \
    "record with a PM interval that is not a number" -- "$LP" record --pm-sampling 2ms -o "$T/r0" -- true
expect 2 "--counters and --pm-sampling both need the GPU's performance counters" \
    "record with both counter clients" -- "$LP" record --counters --pm-sampling 200 -o "$T/r0" -- true
expect 2 "--counters and --pm-sampling both need the GPU's performance counters" \
    "record --light with both counter clients" -- "$LP" record --light --counters --pm-sampling 200 -o "$T/r0" -- true
expect 2 "needs a directory" "-o without a value" -- "$LP" record -o
expect 2 "needs a directory" "record -o with an empty value" -- "$LP" record -o "" -- true
expect 2 "needs a directory" "profile -o with an empty value" -- "$LP" profile -o "" -- true
expect 2 "from 0 to 1000" "--nvml-hz not a number" -- "$LP" record --nvml-hz fast -- true
expect 2 "from 0 to 1000" "--nvml-hz negative" -- "$LP" record --nvml-hz -5 -- true
expect 127 "command not found or not executable: no-such-cmd" "command not found" -- \
    "$LP" record -o "$T/r1" -- no-such-cmd
[ ! -e "$T/r1" ] && ok "nothing created for a command not found" || bad "r1 was created"
echo "plain text" >"$T/notexec" && chmod 644 "$T/notexec"
expect 127 "not executable" "command not executable" -- "$LP" record -o "$T/r2" -- "$T/notexec"
touch "$T/afile"
expect 2 "is not a directory" "output is a file" -- "$LP" record -o "$T/afile" -- true
mkdir -p "$T/ro" && chmod 555 "$T/ro"
expect 2 "not writable" "unwritable output (as an unprivileged user)" -- "${USER_RUN[@]}" "$LP" record -o "$T/ro" -- true
expect 2 "cannot create output directory .*Permission denied" "output under an unwritable directory (as an unprivileged user)" -- \
    "${USER_RUN[@]}" "$LP" record -o "$T/ro/run" -- true
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
expect 0 "buffers .* written every 500 ms" "info shows the collector's buffers and flush period" -- \
    "$LP" info "$T/run"
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

# counts from the environment that no integer holds (nan, inf, past a bound, a fraction):
# warned about, the default kept, the program unaffected (read only where CUPTI loads)
out=$(LLMPROF_MAX_BUFFERS=nan LLMPROF_FLUSH_MS=inf LLMPROF_DEVICE_BUFFERS=1e9 LLMPROF_BUFFER_KB=0.5 \
    "$LP" record -o "$T/envbad" -- "$FAKE" 5 </dev/null 2>&1)
rc=$?
if grep -q "no kernels or NVTX ranges are recorded" <<<"$out"; then
    skip "bad collector counts: CUPTI does not load on this machine"
elif [ "$rc" -eq 5 ] && grep -q "ignoring LLMPROF_MAX_BUFFERS=nan: not a non-negative number" <<<"$out" &&
    grep -q "ignoring LLMPROF_FLUSH_MS=inf: not a non-negative number" <<<"$out" &&
    grep -q "ignoring LLMPROF_DEVICE_BUFFERS=1e9: more than 10000" <<<"$out" &&
    grep -q "ignoring LLMPROF_BUFFER_KB=0.5: not a whole number" <<<"$out"; then
    ok "bad collector counts (nan, inf, past a bound, a fraction) warned about, the program runs on"
else bad "bad collector counts: status $rc, $out"; fi

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
expect 2 "unknown option '--verbose'; see 'llmprof info --help'" "info with an unknown option" -- "$LP" info --verbose
expect 2 "one run at a time: 'a' and 'b'" "info with two runs" -- "$LP" info a b
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
expect 2 "whole number from 1 to 1048576" "model with a zero batch" -- "$LP" model "$CFG/gpt2.json" --batch 0
expect 2 "too large (at most 1073741824)" "model with a prompt past the bound" -- "$LP" model "$CFG/gpt2.json" --prompt 1073741825
expect 2 "from 1 to 9 each" "model with a Gundam tile side past 9" -- "$LP" model "$CFG/deepseek-ocr.json" --vision gundam --tiles 10x1
expect 2 "is too large (at most 1e+06)" "model with a peak past the bound" -- "$LP" model "$CFG/gpt2.json" --peak-tflops 1e300 --mem-bw 100
expect 2 "--mem-bw 2e6 is too large" "report with a bandwidth past the bound" -- "$LP" report "$FIX/hf-moe" -o "$T/bw" --mem-bw 2e6
expect 2 "--vision takes none, tiny, small, base, large or gundam, not 'huge'" "report with an unknown vision mode" -- "$LP" report "$FIX/deepseek-ocr2" -o "$T/vm" --vision huge
expect 2 "--tiles takes WxH from 1 to 9 each" "report with tiles of 0" -- "$LP" report "$FIX/deepseek-ocr2" -o "$T/vm" --tiles 0x3
expect 2 "not in tiny mode" "model: DeepSeek-OCR-2 in a mode it has not" -- "$LP" model "$FIX/deepseek-ocr2/config.json" --vision tiny
# the workload options are one definition: report refuses what model refuses
expect 2 "--act int4 is not a compute format; int4 is weight-only" "model --act int4" -- "$LP" model "$CFG/gpt2.json" --act int4
expect 2 "llmprof report: --act int4 is not a compute format" "report --act int4, as model" -- "$LP" report "$FIX/llama" -o "$T/a4" --act int4
[ ! -e "$T/a4" ] && ok "report --act int4: nothing written" || bad "report --act int4 wrote $(ls -A "$T/a4")"
expect 2 "--gpu needs a name" "model --gpu without a value" -- "$LP" model "$CFG/gpt2.json" --gpu
expect 2 "--gpu needs a name" "report --gpu without a value" -- "$LP" report "$FIX/llama" --gpu
# the option tables: a value is the next word whatever it is, an unknown option is named,
# and --help lists every option of the table
expect 2 "'--format' is not in the hardware table" "model --gpu takes the next word" -- "$LP" model "$CFG/gpt2.json" --gpu --format
expect 2 "--kv takes fp32, tf32, bf16, fp16, fp8, int8 or int4, not '(nothing)'" "model --kv at the end" -- "$LP" model "$CFG/gpt2.json" --kv
expect 2 "unexpected '--bogus'; see 'llmprof export --help'" "export with an unknown option" -- "$LP" export "$FIX/llama" --bogus
expect 2 "unknown option '--bogus'; see 'llmprof report --help'" "report with an unknown option" -- "$LP" report "$FIX/llama" --bogus
expect 2 "unknown option '--mdoel'; did you mean '--model'?" "report: a mistyped option" -- "$LP" report "$FIX/llama" --mdoel x
expect 2 "unknown option '--ligth'; did you mean '--light'?" "record: a mistyped option" -- "$LP" record --ligth -- true
expect 2 "one run at a time: 'a' and 'b'" "report with two runs" -- "$LP" report a b
expect 2 "llmprof profile: --nvml-hz takes a number from 0 to 1000" "profile checks record's options as record does" -- \
    "$LP" profile -o "$T/pn" --nvml-hz fast -- true
for c in model report record; do
    out=$("$LP" $c --help)
    if grep -q -- "^  --help\|^  -h, --help         this text" <<<"$out" && [ $c != record ]; then
        bad "$c --help shows its hidden --help"
    elif ! awk 'length > 104 { exit 1 }' <<<"$out"; then
        bad "$c --help has a line past 104 columns"
    else ok "$c --help from its table"; fi
done
for opt in --batch --prompt --gen --context --weights --act --kv --prefill-logits --vision --tiles \
    --gpu --hw-file --peak-tflops --mem-bw --list-gpus --format; do
    grep -q -- "^  $opt " <<<"$("$LP" model --help)" || bad "model --help lacks $opt"
done
expect 0 "deepseek_ocr2 (DeepSeek-OCR-2)" "model --help lists every family the parser reads" -- "$LP" model --help
expect 0 "gemms.csv" "report --help names every file" -- "$LP" report --help
expect 2 "'TPU' is not in the hardware table; did you mean 'H100 SXM'" "model on an unknown GPU: every row named" -- "$LP" model "$CFG/gpt2.json" --gpu TPU
expect 2 "did you mean 'H100 SXM', 'H100 PCIe'?" "model: the rows holding a part of a name" -- "$LP" model "$CFG/gpt2.json" --gpu h100
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
expect 2 "cannot write" "model -o into a missing directory" -- "$LP" model "$CFG/gpt2.json" -o "$T/missing/out.md"
[ ! -e "$T/missing" ] && ok "nothing half-written" || bad "a partial output was left"

# llmprof report, export and profile
expect 0 "usage: llmprof report" "report --help" -- "$LP" report --help
expect 2 "which run" "report without a run" -- "$LP" report
expect 1 "No such file" "report on a missing run" -- "$LP" report "$T/missing"
expect 1 "holds no trace" "report on a directory without traces" -- "$LP" report "$T/ro"
expect 1 "not an llmprof trace" "report on a file that is not a trace" -- "$LP" report "$T/junk.lpt"
expect 2 "takes NAME=REGEX" "report --stage without =" -- "$LP" report "$FIX/llama" --stage decode
expect 2 "whole number >= 1" "report --top 0" -- "$LP" report "$FIX/llama" --top 0
expect 2 "bad regular expression" "report with a bad stage regex" -- \
    "$LP" report "$FIX/llama" -o "$T/badre" --stage 'decode=(' --quiet
[ -z "$(ls -A "$T/badre" 2>/dev/null)" ] && ok "nothing written on an analysis error" || bad "left: $(ls -A "$T/badre")"
# a rule that matches none of the ranges would drop its stage without a word (issue 46)
expect 2 "stage rule 'decode=^nomatch' matches none of the trace's" \
    "report --stage matching no range" -- \
    "$LP" report "$FIX/hf-moe" -o "$T/nomatch" --stage 'decode=^nomatch' --quiet
[ -z "$(ls -A "$T/nomatch" 2>/dev/null)" ] && ok "nothing written for a rule matching no range" ||
    bad "left: $(ls -A "$T/nomatch")"
expect 2 "top-level names: 'prefill', 'decode'" "the refusal names the trace's ranges" -- \
    "$LP" report "$FIX/hf-moe" -o "$T/nomatch" --stage 'decode=^nomatch' --quiet
expect 1 "none.json" "report --model on a missing config names it" -- \
    "$LP" report "$FIX/llama" -o "$T/x" --model "$T/none.json"
expect 2 "not in the hardware table" "report --gpu unknown" -- "$LP" report "$FIX/llama" --gpu TPU
expect 2 "--gpu 'H100' is not in the hardware table; did you mean 'H100 SXM', 'H100 PCIe'?" \
    "report --gpu: the same message as model's, with the rows it may mean" -- "$LP" report "$FIX/llama" --gpu H100
expect 0 "Decode is launch bound" "report on the recorded LLM run" -- \
    "$LP" report "$FIX/llama" -o "$T/rep" --model "$CFG/llama-bench-1.1b.json"
for f in report.md summary.md report.json report.html kernels.csv operators.csv stages.csv gemms.csv iterations.csv; do
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
expect 2 "usage: llmprof export" "export without --perfetto or --sqlite" -- "$LP" export "$FIX/llama"
expect 1 "holds 2 traces" "export of a run with two traces" -- "$LP" export "$T/ranks" --perfetto "$T/p.json"
expect 2 "FROM_MS:TO_MS" "export with a bad window" -- "$LP" export "$FIX/llama" --perfetto "$T/p.json" --window 5:2
expect 0 "ui.perfetto.dev" "export --perfetto" -- "$LP" export "$FIX/llama" --perfetto "$T/llama.json"
# export --sqlite: every trace of the run in one database, its row counts those info gives
expect 0 "wrote $T/moe.db: 1 trace, 144645 kernels" "export --sqlite" -- \
    "$LP" export "$FIX/hf-moe" --sqlite "$T/moe.db"
# "records  N kernels, N memcpy, N memset, ... N api calls, N nvml samples" against the tables
sqlite_counts() { # DB TRACE_ID INFO_LINE -> "ok" or what differs
    python3 - "$@" <<'PYEOF'
import re, sqlite3, sys
db, tid, line = sys.argv[1], int(sys.argv[2]), sys.argv[3]
info = {k: int(n) for n, k in re.findall(r"(\d+) (kernels|memcpy|memset|api calls|nvml samples)", line)}
tables = {"kernels": "kernels", "memcpy": "memcpys", "memset": "memsets", "api calls": "api_calls",
          "nvml samples": "nvml"}
c = sqlite3.connect(db)
bad = [f"{k}: info {info.get(k)}, table {n}" for k, tb in tables.items()
       for n in [c.execute(f"SELECT COUNT(*) FROM {tb} WHERE trace_id = ?", (tid,)).fetchone()[0]]
       if info.get(k) != n]
print("; ".join(bad) if bad or len(info) != 5 else "ok")
PYEOF
}
line=$("$LP" info "$FIX/hf-moe" | grep "^  records")
r=$(sqlite_counts "$T/moe.db" 1 "$line")
[ "$r" = ok ] && ok "export --sqlite: rows as info counts them" || bad "export --sqlite rows: $r"
# the query export --help prints runs as printed: the top five kernels by time
r=$("$LP" export --help | python3 -c '
import re, sqlite3, sys
q = re.search(r"sqlite3 run1\.db \\\n\s*\x27(.*?)\x27", sys.stdin.read(), re.S)
rows = sqlite3.connect(sys.argv[1]).execute(q.group(1)).fetchall() if q else []
print("ok" if len(rows) == 5 and all(isinstance(n, str) and ns > 0 for n, ns in rows) and
      [ns for _, ns in rows] == sorted([ns for _, ns in rows], reverse=True)
      else f"query {q and q.group(1)!r}: {rows}")' "$T/moe.db" 2>&1)
[ "$r" = ok ] && ok "export --help: its example query runs as printed" || bad "export --help query: $r"
mkdir -p "$T/two"
cp "$FIX"/hf-moe/trace.*.lpt "$T/two/trace.a.1.lpt"
cp "$FIX"/llama/trace.*.lpt "$T/two/trace.b.2.lpt"
expect 0 "wrote $T/two.db: 2 traces" "export --sqlite of a run with two traces" -- \
    "$LP" export "$T/two" --sqlite "$T/two.db"
r1=$(sqlite_counts "$T/two.db" 1 "$line")
r2=$(sqlite_counts "$T/two.db" 2 "$("$LP" info "$FIX/llama" | grep "^  records")")
[ "$r1 $r2" = "ok ok" ] && ok "export --sqlite: each trace's rows under its trace_id" ||
    bad "export --sqlite of two traces: $r1 / $r2"
expect 2 "--sqlite takes a file, not '-'" "export --sqlite to standard output is refused" -- \
    "$LP" export "$FIX/llama" --sqlite -
expect 2 "give it without --perfetto and --window" "export --sqlite with --window is refused" -- \
    "$LP" export "$FIX/llama" --sqlite "$T/x.db" --window 1:2
cp "$T/two/trace.b.2.lpt" "$T/two.b.orig"
expect 2 "is one of the inputs" "export --sqlite refuses to write over a trace of its run" -- \
    "$LP" export "$T/two" --sqlite "$T/two/trace.b.2.lpt"
cmp -s "$T/two/trace.b.2.lpt" "$T/two.b.orig" && ok "export --sqlite: the trace is untouched" ||
    bad "export --sqlite replaced a trace"
printf 'not a trace' >"$T/bad.lpt"
expect 1 "bad.lpt" "export --sqlite of a bad trace fails" -- "$LP" export "$T/bad.lpt" --sqlite "$T/bad.db"
[ ! -e "$T/bad.db" ] && [ -z "$(find "$T" -maxdepth 1 -name '.bad.db.*')" ] &&
    ok "export --sqlite: nothing left behind by a failed export" || bad "a failed export left: $(ls -a "$T" | grep bad)"
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

# ---- the program's request (LLMPROF_REQUEST_FILE): meta.json, report.json, report.md ----
REQ='{"model_path": "/models/ocr", "repeats": 2, "input_dir": "pages|a`b"}'
"$LP" profile -o "$T/req" --quiet -- sh -c 'printf "%s" "$1" >"$LLMPROF_REQUEST_FILE"; exec "$2" 0' \
    sh "$REQ" "$FAKE" </dev/null >/dev/null 2>&1
if python3 - "$T/req" <<'PY'
import json, sys
d = sys.argv[1]
want = {"model_path": "/models/ocr", "repeats": 2, "input_dir": "pages|a`b"}
assert json.load(open(d + "/meta.json"))["request"] == want
assert json.load(open(d + "/report.json"))["request"] == want
md = open(d + "/report.md").read()
assert "- request (as the program stated it): " in md and "/models/ocr" in md, md[:600]
import os
assert not [n for n in os.listdir(d) if n.startswith(".llmprof-request")], os.listdir(d)
PY
then ok "the program's request is kept in meta.json, report.json and report.md"; else bad "request"; fi
"$LP" record -o "$T/req2" -- sh -c 'echo "[1, 2]" >"$LLMPROF_REQUEST_FILE"; exec "$1" 0' sh "$FAKE" \
    </dev/null >"$T/req2.out" 2>&1
grep -q "request the program wrote to LLMPROF_REQUEST_FILE is left out of meta.json: it is not a JSON object" \
    "$T/req2.out" && grep -q '"request_error": "it is not a JSON object"' "$T/req2/meta.json" &&
    ! grep -q '"request":' "$T/req2/meta.json" && ok "a request that is not an object is said and left out" ||
    bad "bad request: $(cat "$T/req2.out")"
"$LP" record -o "$T/req3" -- sh -c 'head -c 70000 /dev/zero | tr "\0" " " >"$LLMPROF_REQUEST_FILE"; exec "$1" 0' \
    sh "$FAKE" </dev/null >"$T/req3.out" 2>&1
grep -q "larger than 64 KiB" "$T/req3.out" && grep -q '"request_error": "it is larger than 64 KiB"' "$T/req3/meta.json" &&
    [ -z "$(ls -A "$T/req3" | grep llmprof-request)" ] && ok "a request over 64 KiB is refused and removed" ||
    bad "big request: $(cat "$T/req3.out")"
"$LP" record -o "$T/req6" -- sh -c 'printf "{\"a\": \"\302\233\062J\033[31m\" q" >"$LLMPROF_REQUEST_FILE"; exec "$1" 0' sh \
    "$FAKE" </dev/null >"$T/req6.out" 2>&1
grep -q "it is not JSON: " "$T/req6.out" && ! grep -q "$(printf '\033')" "$T/req6.out" &&
    ! grep -q "$(printf '\302\233')" "$T/req6.out" && ok "the parser's message quoting the program's bytes is escaped" ||
    bad "request message: $(od -c "$T/req6.out" | head -5)"
"$LP" record -o "$T/req7" -- sh -c 'printf "  \n\t" >"$LLMPROF_REQUEST_FILE"; exec "$1" 0' sh "$FAKE" \
    </dev/null >"$T/req7.out" 2>&1
[ -s "$T/req7/meta.json" ] && ! grep -q '"request' "$T/req7/meta.json" && ! grep -q "request" "$T/req7.out" &&
    ok "a request of white space only is no request, and no warning" || bad "blank request: $(cat "$T/req7.out")"
"$LP" record -o "$T/req8" -- sh -c 'rm "$LLMPROF_REQUEST_FILE"; mkdir "$LLMPROF_REQUEST_FILE"; exec "$1" 0' sh \
    "$FAKE" </dev/null >"$T/req8.out" 2>&1
grep -q '"request_error": "it is no longer a regular file"' "$T/req8/meta.json" &&
    [ -z "$(ls -A "$T/req8" | grep llmprof-request)" ] && ok "an empty directory in the request file's place is said and removed" ||
    bad "request dir: $(cat "$T/req8.out"; ls -A "$T/req8")"
"$LP" record -o "$T/req4" -- sh -c 'ln -sf /etc/passwd "$LLMPROF_REQUEST_FILE"; exec "$1" 0' sh "$FAKE" \
    </dev/null >"$T/req4.out" 2>&1
grep -q "it was replaced by a link" "$T/req4.out" && [ -z "$(ls -A "$T/req4" | grep llmprof-request)" ] &&
    ok "a request file replaced by a link is not followed, and removed" || bad "linked request: $(cat "$T/req4.out")"
"$LP" record -o "$T/req5" -- "$FAKE" 0 </dev/null >/dev/null 2>&1
[ -s "$T/req5/meta.json" ] && ! grep -q '"request' "$T/req5/meta.json" && ok "a program that states no request leaves none" || bad "req5"

# ---- outputs never destroy data (issue 11) ----
OLD=(report.md summary.md report.json kernels.csv operators.csv stages.csv gemms.csv report.html)
# leftovers: temporaries (.NAME.tmp.PID.N) or kept old files (.NAME.old.PID.N) in DIR
leftovers() { find "$1" -maxdepth 1 \( -name '.*.tmp.*' -o -name '.*.old.*' \) 2>/dev/null; }
cp -r "$FIX/llama" "$T/lr"
LT=$(ls "$T"/lr/trace.*.lpt)
cp "$LT" "$T/lt.orig"
expect 2 "is one of the inputs (.*lpt): choose another path" "export refuses to write over its trace" -- \
    "$LP" export "$T/lr" --perfetto "$LT"
# (a failed check puts the file back, so that the checks after it still test something)
cmp -s "$LT" "$T/lt.orig" && ok "the trace is untouched" || { bad "export replaced the trace"; cp "$T/lt.orig" "$LT"; }
cp "$T/lr/meta.json" "$T/meta.orig"
expect 2 "is one of the inputs" "export refuses to write over its run's meta.json" -- "$LP" export "$T/lr" --perfetto "$T/lr/meta.json"
cmp -s "$T/lr/meta.json" "$T/meta.orig" && ok "meta.json is untouched" || { bad "export replaced meta.json"; cp "$T/meta.orig" "$T/lr/meta.json"; }
ln -s "$LT" "$T/lt.link" && ln "$LT" "$T/lt.hard"
expect 2 "is one of the inputs" "export refuses a symlink to its trace" -- "$LP" export "$T/lr" --perfetto "$T/lt.link"
expect 2 "is one of the inputs" "export refuses a hard link to its trace" -- "$LP" export "$T/lr" --perfetto "$T/lt.hard"
cmp -s "$LT" "$T/lt.orig" && [ -L "$T/lt.link" ] && ok "trace and links untouched" || { bad "trace or link changed"; rm -f "$T/lt.link"; cp "$T/lt.orig" "$LT"; }
mkdir "$T/asrep" && cp "$LT" "$T/asrep/report.json"
expect 2 "is one of the inputs" "report refuses to write over its trace (named report.json)" -- \
    "$LP" report "$T/asrep/report.json" --quiet
cmp -s "$T/asrep/report.json" "$T/lt.orig" && [ ! -e "$T/asrep/report.md" ] && ok "report wrote nothing" || bad "report wrote: $(ls "$T/asrep")"
cp "$CFG/gpt2.json" "$T/gpt2.json"
expect 2 "is one of the inputs" "model -o refuses its config" -- "$LP" model "$T/gpt2.json" -o "$T/gpt2.json"
cmp -s "$T/gpt2.json" "$CFG/gpt2.json" && ok "the config is untouched" || bad "model replaced its config"
expect 2 "is a directory" "export to a directory is refused" -- "$LP" export "$T/lr" --perfetto "$T"
ln -s "$T/nowhere/x.json" "$T/dangling.json"
expect 2 "symbolic link to a missing file" "export to a dangling link is refused" -- "$LP" export "$T/lr" --perfetto "$T/dangling.json"
# devices and FIFOs are written in place, never replaced; as root, a full device of our own,
# used only if writing it really gives ENOSPC (on a nodev mount opening it is refused), else
# /dev/full if it is the character device it should be
gives_enospc() { [ -c "$1" ] && (printf x >>"$1") 2>&1 | grep -q "No space left"; }
FULL=
[ "$(id -u)" -eq 0 ] && mknod -m 666 "$T/full" c 1 7 2>/dev/null && gives_enospc "$T/full" && FULL=$T/full
[ -z "$FULL" ] && gives_enospc /dev/full && FULL=/dev/full
if [ -n "$FULL" ]; then
    expect 1 "writing $FULL failed: No space left on device" "export to a full device reports the error" -- \
        "$LP" export "$T/lr" --perfetto "$FULL"
    expect 1 "No space left on device" "model -o on a full device reports the error" -- "$LP" model "$CFG/gpt2.json" -o "$FULL"
    expect 1 "writing - failed: No space left on device" "model to a full standard output reports the error" -- \
        sh -c '"$1" model "$2" >"$3"' sh "$LP" "$CFG/gpt2.json" "$FULL"
    [ -c "$FULL" ] && ok "the full device is still a device" || bad "$FULL was replaced"
else
    skip "no full device to test write errors with (no private one, /dev/full not one)"
fi
mkfifo "$T/fifo"
timeout 60 cat "$T/fifo" >"$T/fifo.out" &
reader=$!
expect 0 "wrote" "export into a FIFO" -- timeout 60 "$LP" export "$T/lr" --perfetto "$T/fifo"
wait "$reader"
[ -p "$T/fifo" ] && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/fifo.out" && \
    ok "the FIFO stays a FIFO and its reader got the JSON" || bad "FIFO: $(ls -l "$T/fifo"*)"
"$LP" export "$T/lr" --perfetto - >"$T/stdout.json" 2>"$T/stdout.err"
rc=$?
[ "$rc" -eq 0 ] && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/stdout.json" && \
    ok "export --perfetto - writes the JSON alone to standard output" || bad "status $rc: $(head -c 200 "$T/stdout.json") $(cat "$T/stdout.err")"
echo "old" >"$T/real.json" && chmod 640 "$T/real.json" && ln -s real.json "$T/link.json"
# a file already there is replaced only with --force (issue 53), also through a link
expect 2 "$T/link.json is already there: --force replaces it" "export refuses to replace a file without --force" -- \
    "$LP" export "$T/lr" --perfetto "$T/link.json"
expect 2 "$T/real.json is already there: --force replaces it" "export --sqlite refuses to replace a file without --force" -- \
    "$LP" export "$T/lr" --sqlite "$T/real.json"
echo "old" >"$T/model.md"
expect 2 "$T/model.md is already there: --force replaces it" "model -o refuses to replace a file without --force" -- \
    "$LP" model "$CFG/gpt2.json" -o "$T/model.md"
[ "$(cat "$T/model.md")" = old ] && "$LP" model "$CFG/gpt2.json" -o "$T/model.md" --force && \
    grep -q "gpt2" "$T/model.md" && ok "model -o --force replaces it" || bad "model -o --force: $(head -c 80 "$T/model.md")"
[ "$(cat "$T/real.json")" = old ] && [ -z "$(leftovers "$T")" ] && ok "a refused export left the file as it was" ||
    bad "a refused export changed $T/real.json: $(head -c 40 "$T/real.json")"
expect 0 "wrote" "export --force through a symbolic link" -- "$LP" export "$T/lr" --perfetto "$T/link.json" --force
[ -L "$T/link.json" ] && [ "$(stat -c %a "$T/real.json")" = 640 ] && grep -q traceEvents "$T/real.json" && \
    [ -z "$(leftovers "$T")" ] && ok "the link stays, its target gets the export, with its mode" || \
    bad "link: $(ls -lA "$T"/*.json)"

# A signal that ends export removes its temporary first and ends it with the usual status.
# The export of the largest fixture (~100 MB) is stopped (SIGSTOP) as soon as its temporary
# exists, sent SIG and let go on. ENV_RESET: the ending signals at their default ("reset"),
# or as a non-interactive shell's background job has them (SIGINT ignored: "asis").
BIG=$(ls -S "$FIX"/*/trace.*.lpt | head -1)
interrupt_export() { # SIG ENV_RESET -> $rc: the status, -1 when the temporary was never seen
    local sig=$1 pre=() pid tmp head try
    [ "$2" = reset ] && pre=(env --default-signal=INT,TERM,HUP,QUIT)
    for try in 1 2 3 4 5; do
        rm -rf "$T/int" && mkdir "$T/int" && echo old >"$T/int/out.json"
        "${pre[@]}" "$LP" export "$BIG" --perfetto "$T/int/out.json" --force >/dev/null 2>"$T/int.err" &
        pid=$! rc=-1
        while :; do # builtins only: the temporary lives a fraction of a second
            tmp=("$T"/int/.out.json.tmp.*)
            if [ -e "${tmp[0]}" ]; then
                kill -STOP "$pid"
                [ -e "${tmp[0]}" ] && kill -"$sig" "$pid" && rc=0
                kill -CONT "$pid"
                break
            fi
            head=; read -r -n 3 head <"$T/int/out.json"
            [ "$head" = old ] || break # done (moved in) or gone: missed
        done
        wait "$pid"
        local st=$?
        [ "$rc" -eq 0 ] && { rc=$st; return; }
    done
}
# the old file stays, or (stopped inside the commit, which signals wait for) the whole new one
int_target_ok() { local h=; read -r -n 3 h <"$T/int/out.json"; [ "$h" = old ] || python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/int/out.json"; }
for sig in INT:130 TERM:143 HUP:129; do
    interrupt_export "${sig%:*}" reset
    if [ "$rc" -eq "${sig#*:}" ] && [ -z "$(leftovers "$T/int")" ] && int_target_ok; then
        ok "SIG${sig%:*} during export: no temporary left, status ${sig#*:}, the old file kept"; else
        bad "SIG${sig%:*} during export: status $rc (wanted ${sig#*:}, -1: never caught), left: $(ls -A "$T/int") $(cat "$T/int.err")"; fi
done
interrupt_export INT asis
[ "$rc" -eq 0 ] && [ -z "$(leftovers "$T/int")" ] && grep -q traceEvents "$T/int/out.json" && \
    ok "an ignored SIGINT stays ignored: export completes" || bad "ignored SIGINT: status $rc, $(ls -A "$T/int") $(cat "$T/int.err")"

# report: all files or none
mkdir "$T/aon"
for f in "${OLD[@]}"; do echo old >"$T/aon/$f"; done
rm "$T/aon/report.html" && mkdir "$T/aon/report.html"
expect 2 "report.html is a directory" "report refuses a directory where a file goes" -- \
    "$LP" report "$T/lr" -o "$T/aon" --quiet
[ "$(cat "$T/aon/report.md")" = old ] && [ -z "$(leftovers "$T/aon")" ] && ok "no file replaced, nothing left" || \
    bad "aon: $(ls -A "$T/aon"), report.md: $(head -c 50 "$T/aon/report.md")"
# a rename that fails half-way: in a sticky directory, the unprivileged user may replace
# its own files but not root's report.html; what was replaced is put back
if [ "$(id -u)" -eq 0 ]; then
    mkdir "$T/sticky" && chmod 1777 "$T/sticky"
    for f in "${OLD[@]}"; do echo old >"$T/sticky/$f"; chown "$UNPRIV" "$T/sticky/$f"; done
    chown 0 "$T/sticky/report.html"
    # 644: the user may not link root's file (fs.protected_hardlinks=1); 666: it may, on
    # every machine, as with protected_hardlinks=0, but still not replace or remove it
    for mode in 644 666; do
        chmod "$mode" "$T/sticky/report.html"
        expect 1 "cannot \(replace\|move\) .*report.html.*nothing was replaced" \
            "report whose last file cannot be replaced (root's, mode $mode, in a sticky dir)" -- \
            "${USER_RUN[@]}" "$LP" report "$T/lr" -o "$T/sticky" --quiet
        n=0
        for f in "${OLD[@]}"; do [ "$(cat "$T/sticky/$f")" = old ] && n=$((n + 1)); done
        [ "$n" -eq 8 ] && [ -z "$(leftovers "$T/sticky")" ] && ok "every old file put back, nothing left (mode $mode)" || \
            bad "mode $mode: $n of 8 old files, $(ls -A "$T/sticky")"
    done
else
    skip "a failing rename needs a file of another user (run as root to test it)"
fi
# empty and '-' output paths are refused before any work, and nothing is created
mkdir "$T/cwd"
expect 2 "-o needs a directory, not ''" "report -o ''" -- "$LP" report "$T/lr" -o "" --quiet
expect 2 "report writes several files" "report -o - (not one stream)" -- \
    sh -c 'cd "$1" && "$2" report "$3" -o - --quiet' sh "$T/cwd" "$LP" "$T/lr"
expect 2 "--perfetto needs an output file .*not an empty path" "export --perfetto ''" -- \
    sh -c 'cd "$1" && "$2" export "$3" --perfetto ""' sh "$T/cwd" "$LP" "$T/lr"
expect 2 "-o needs a file .*not an empty path" "model -o ''" -- \
    sh -c 'cd "$1" && "$2" model "$3" -o ""' sh "$T/cwd" "$LP" "$T/gpt2.json"
[ -z "$(ls -A "$T/cwd")" ] && ok "nothing created for an empty or '-' output" || bad "created: $(ls -A "$T/cwd")"
# several traces: one that cannot be read is left out, named (the others reported); none
# readable: status 1, and the directories the command made are removed
mkdir "$T/rk" && cp "$LT" "$T/rk/trace.rank0.h.1.lpt" && echo junk >"$T/rk/trace.rank1.h.2.lpt"
expect 0 "rank1.h.2.lpt cannot be read, left out of the run report: not an llmprof trace" \
    "report of two ranks, one unreadable" -- "$LP" report "$T/rk" -o "$T/made/sub" --quiet
[ -s "$T/made/sub/trace.rank0.h.1/report.md" ] && grep -q "rank1.h.2.lpt\`: not an llmprof trace" "$T/made/sub/ranks.md" &&
    ok "the readable rank reported, the other named in ranks.md" || bad "made: $(find "$T/made")"
cp "$T/rk/trace.rank1.h.2.lpt" "$T/rk/trace.rank0.h.1.lpt"
expect 1 "none of its 2 traces can be read" "report of two ranks, none readable" -- \
    "$LP" report "$T/rk" -o "$T/made2/sub" --quiet
[ ! -e "$T/made2" ] && ok "the directories it made are removed" || bad "left: $(find "$T/made2")"
cp "$LT" "$T/rk/trace.rank0.h.1.lpt"
# an unwritable rank directory (as an unprivileged user): nothing of the other rank either
mkdir -p "$T/rw/trace.rank1.h.2" && cp "$LT" "$T/rk/trace.rank1.h.2.lpt"
chown -R "$UNPRIV" "$T/rw" && chmod 555 "$T/rw/trace.rank1.h.2"
expect 1 "cannot write" "report into an unwritable rank directory (as an unprivileged user)" -- \
    "${USER_RUN[@]}" "$LP" report "$T/rk" -o "$T/rw" --quiet
[ ! -e "$T/rw/trace.rank0.h.1" ] && [ -z "$(ls -A "$T/rw/trace.rank1.h.2")" ] && ok "no rank's report written" || \
    bad "rw: $(find "$T/rw")"
mkdir "$T/lnk" && echo old >"$T/elsewhere.md" && ln -s ../elsewhere.md "$T/lnk/report.md"
expect 0 "" "report into a directory with a linked report.md" -- "$LP" report "$T/lr" -o "$T/lnk" --quiet
[ -L "$T/lnk/report.md" ] && grep -q "^# " "$T/elsewhere.md" && ok "the link stays, its target gets report.md" || \
    bad "lnk: $(ls -l "$T/lnk/report.md"; head -c 40 "$T/elsewhere.md")"

# export: the reader's warnings, windows, progress, size
expect 0 "warning: .*cut.lpt is not whole (no end chunk, 1 recovery warnings); the export shows" \
    "export warns about a truncated trace" -- "$LP" export "$T/cut.lpt" --perfetto "$T/cut.json"
expect 0 "    - reader: torn chunk" "export lists the reader's warnings" -- "$LP" export "$T/cut.lpt" --perfetto "$T/cut2.json"
expect 0 "warning: .* is not whole" "export warns about a killed run" -- "$LP" export "$FIX/killed" --perfetto "$T/k.json"
expect 0 "nothing of .* overlaps --window 999999:1000000; the trace spans 0 to 3240.9 ms" \
    "export --window outside the trace warns with its span" -- \
    "$LP" export "$T/lr" --perfetto "$T/w.json" --window 999999:1000000
expect 2 "FROM_MS:TO_MS" "export --window with a negative bound" -- "$LP" export "$T/lr" --perfetto "$T/w.json" --window 0:-1
expect 2 "FROM_MS:TO_MS" "export --window past the bound" -- "$LP" export "$T/lr" --perfetto "$T/w.json" --window 1:99999999999999999999
out=$(LLMPROF_EXPORT_WARN_MIB=10 "$LP" export "$T/lr" --perfetto "$T/big.json" 2>&1)
est=$(sed -n 's/.*export will be about \([0-9.]*\) MiB (62763 kernels.*--window.*/\1/p' <<<"$out")
real=$(stat -c %s "$T/big.json")
if [ -n "$est" ] && python3 -c 'import sys; e, r = float(sys.argv[1]) * 2**20, int(sys.argv[2]); sys.exit(not 0.8 < e / r < 1.25)' "$est" "$real"; then
    ok "a large export is announced, its size within 25 % ($est MiB, $real bytes)"; else bad "estimate '$est' for $real bytes: $out"; fi
if LLMPROF_EXPORT_WARN_MIB=100 "$LP" export "$T/lr" --perfetto "$T/big.json" --force 2>&1 | grep -q "will be about"; then
    bad "export announced below the bound"; else ok "no announcement below the bound"; fi
expect 0 "warning: .*: analysing its 62763 kernels takes about [0-9.]* MiB more memory, and about 1.0 MiB is available: the system may stop the report" \
    "report warns of an analysis that may not fit in the memory available" -- \
    env LLMPROF_MEM_AVAILABLE_MIB=1 "$LP" report "$T/lr" -o "$T/memwarn" --quiet
[ -f "$T/memwarn/report.json" ] && ok "the report is still made after that warning" ||
    bad "no report after the memory warning"
out=$(LLMPROF_MEM_AVAILABLE_MIB=1024 "$LP" report "$T/lr" -o "$T/memok" --quiet 2>&1)
grep -q "more memory" <<<"$out" && bad "memory warning where 1 GiB is available: $out" ||
    ok "no memory warning where the analysis fits"
out=$(LLMPROF_MEM_AVAILABLE_MIB=0 "$LP" report "$T/lr" -o "$T/memoff" --quiet 2>&1)
grep -q "more memory" <<<"$out" && bad "memory warning with LLMPROF_MEM_AVAILABLE_MIB=0: $out" ||
    ok "LLMPROF_MEM_AVAILABLE_MIB=0 turns the memory warning off"
out=$("$LP" report "$T/lr" -o "$T/piped" --quiet 2>&1; "$LP" export "$T/lr" --perfetto "$T/piped.json" 2>&1)
grep -q "reading\|analysing" <<<"$out" && bad "progress in a pipe: $out" || ok "no progress when stderr is not a terminal"
if command -v script >/dev/null; then
    out=$(script -qec "'$LP' report '$T/lr' -o '$T/tty' --quiet; '$LP' export '$T/lr' --perfetto '$T/tty.json'" /dev/null)
    grep -q "report: reading .*lpt" <<<"$out" && grep -q "report: analysing 62763 kernels" <<<"$out" && \
        grep -q "export: writing .*tty.json" <<<"$out" && ok "progress on a terminal" || bad "tty: $(tr '\r\033' '|^' <<<"$out")"
else
    bad "no 'script' (util-linux) to run the progress check on a terminal"
fi

# info: meta.json of the wrong types, directories without traces
mkdir "$T/empty"
expect 1 "neither a trace (\*.lpt) nor the meta.json" "info on an empty directory fails" -- "$LP" info "$T/empty"
mkdir "$T/notes" && echo '{"mine": 1}' >"$T/notes/meta.json"
expect 1 "not a run directory" "info on a directory with a meta.json llmprof did not write" -- "$LP" info "$T/notes"
mkdir "$T/meta1" && echo '{"format": "llmprof-run", "command": 5, "status": 3, "exit_code": "x", "duration_s": "y"}' >"$T/meta1/meta.json"
out=$("$LP" info "$T/meta1" 2>&1)
rc=$?
[ "$rc" -eq 1 ] && grep -q "'command' is not a list" <<<"$out" && grep -q "status   ? (malformed" <<<"$out" && \
    ! grep -q "(null)\|exit 0" <<<"$out" && grep -q "holds no trace" <<<"$out" && \
    ok "info: fields of the wrong type said malformed; no trace, status 1" || bad "status $rc: $out"
echo '{"format": "llmprof-run", "command": ["python3", 7, "x.py"], "status": "exited", "exit_code": 0}' >"$T/meta1/meta.json"
expect 1 "python3 ? x.py (malformed" "info: a command word that is not a string" -- "$LP" info "$T/meta1"
cp "$LT" "$T/meta1/trace.h.1.lpt" && echo '[1, 2]' >"$T/meta1/meta.json"
expect 0 "not a JSON object" "info: a run whose meta.json is not an object" -- "$LP" info "$T/meta1"

# numbers out of range
expect 2 "--top 99999999999999999999 is too large" "report --top out of range" -- "$LP" report "$T/lr" --top 99999999999999999999
expect 2 "--gap-us 99999999999999999 is too large" "report --gap-us that overflows ns" -- "$LP" report "$T/lr" --gap-us 99999999999999999
expect 2 "--batch 99999999999999999999 is too large" "model --batch out of range" -- "$LP" model "$CFG/gpt2.json" --batch 99999999999999999999
expect 2 "--peak-tflops 1e999 is too large" "report --peak-tflops out of range" -- "$LP" report "$T/lr" --peak-tflops 1e999

# profile checks every report option, and with --deep deep's and ncu, before the program runs
NCU=$(dirname "$0")/fake/ncu
# (status 2: a mistake of the command line; 1: a file an option names cannot be used)
for bad_opt in "--top 0" "--bogus" "1 --model $T/none.json" "--stage decode=(" "--gpu TPU" \
    "--top 99999999999999999999" "--prefill-logits some" "--deep 3 --ncu $T/no-ncu" \
    "--ncu $NCU" "--deep-budget 5" "--deep 0" "--deep 2 --light" "--deep 2 --deep-budget 0"; do
    want=2
    case $bad_opt in 1\ *) want=1 bad_opt=${bad_opt#1 } ;; esac
    # shellcheck disable=SC2086 # the options and their values are words
    out=$("$LP" profile -o "$T/pm" $bad_opt -- sh -c "touch '$T/marker'" 2>&1)
    rc=$?
    if [ "$rc" -eq "$want" ] && [ ! -e "$T/marker" ] && [ ! -e "$T/pm" ] && grep -Eq "llmprof (profile|deep): " <<<"$out"; then
        ok "profile $bad_opt: refused before the program ran"; else bad "profile $bad_opt: status $rc, marker: $([ -e "$T/marker" ] && echo yes || echo no), $out"; fi
    rm -rf "$T/marker" "$T/pm"
done
expect 0 "removed the previous run" "profile passes --force to record" -- \
    sh -c '"$@" </dev/null' sh "$LP" profile -o "$T/prof" --force --quiet -- "$FAKE" 0
# a deep dive of the previous run goes with it; a file of the user's in deep/ keeps the folder
mkdir -p "$T/prof/deep" && for f in deep.ncu-rep ncu-raw.csv deep.json ncu.log; do echo x >"$T/prof/deep/$f"; done
expect 0 "removed the previous run" "record --force on a run with a deep dive" -- \
    sh -c '"$@" </dev/null' sh "$LP" record -o "$T/prof" --force --quiet -- "$FAKE" 0
[ ! -e "$T/prof/deep" ] && ok "record --force removed deep/" || bad "deep/ left: $(ls -A "$T/prof/deep")"
mkdir -p "$T/prof/deep" && echo x >"$T/prof/deep/deep.json" && echo mine >"$T/prof/deep/notes.txt"
expect 0 "removed the previous run" "record --force, deep/ holding a user's file" -- \
    sh -c '"$@" </dev/null' sh "$LP" record -o "$T/prof" --force --quiet -- "$FAKE" 0
[ -s "$T/prof/deep/notes.txt" ] && [ ! -e "$T/prof/deep/deep.json" ] && ok "... the user's file stays, deep's go" ||
    bad "deep/ after --force: $(ls -A "$T/prof/deep" 2>&1)"
expect 2 "unknown option '--bogus'; see 'llmprof profile --help'" "profile names itself in the message" -- \
    "$LP" profile -o "$T/pm" --bogus -- true

# record --capture: the mode reaches the collector, a bad one or one with --light is refused
# before the program runs
expect 2 "--capture takes all, cuda-profiler, signal, graphs" \
    "record --capture with a bad mode" -- "$LP" record -o "$T/cap0" --capture steps -- true
expect 2 "--capture 'nvtx:@8': no range is named" "record --capture nvtx: without a range" -- \
    "$LP" record -o "$T/cap0" --capture nvtx:@8 -- true
expect 2 "'step(' is not a regular expression" "record --capture nvtx: with a bad expression" -- \
    "$LP" record -o "$T/cap0" --capture 'nvtx:step(@2' -- true
expect 2 "LAST is before FIRST" "record --capture nvtx: LAST before FIRST" -- \
    "$LP" record -o "$T/cap0" --capture 'nvtx:step@9-3' -- true
expect 2 "EVERY is at least 1" "record --capture nvtx: every 0" -- \
    "$LP" record -o "$T/cap0" --capture 'nvtx:step/0' -- true
expect 2 "after 'graphs' come only @FIRST" "record --capture graphs with a bad selection" -- \
    "$LP" record -o "$T/cap0" --capture 'graphs@1-x' -- true
expect 2 "--light records none: choose one" "record --capture with --light" -- \
    "$LP" record -o "$T/cap0" --light --capture cuda-profiler -- true
expect 2 "--graphs 'nodes': give replay" "record --graphs with a bad mode" -- \
    "$LP" record -o "$T/cap0" --graphs nodes -- true
expect 2 "--graphs chooses how the kernels of CUDA graph replays are recorded" \
    "record --graphs with --light" -- "$LP" record -o "$T/cap0" --light --graphs node -- true
expect 2 "--finalize finalizes CUPTI between capture windows: give --capture too" \
    "record --finalize without --capture" -- "$LP" record -o "$T/cap0" --finalize -- true
expect 2 "--finalize finalizes CUPTI between capture windows" \
    "record --finalize with --capture all" -- \
    "$LP" record -o "$T/cap0" --capture all --finalize -- true
[ ! -e "$T/cap0" ] && ok "--capture and --graphs refusals: nothing written" || bad "cap0: $(ls -A "$T/cap0")"
expect 0 "" "record --capture cuda-profiler" -- \
    sh -c '"$@" </dev/null' sh "$LP" record -o "$T/cap1" --quiet --capture cuda-profiler -- "$FAKE" 0
# without a GPU CUPTI gives no callbacks: the collector falls back to recording everything
# and says so in the trace
expect 0 "capture windows (cuda-profiler) cannot open here: CUPTI's callbacks could not be enabled" \
    "--capture without CUPTI's callbacks: said, all recorded" -- "$LP" info "$T/cap1"
# --graphs reaches the collector's environment and meta.json; replay when not given
expect 0 "" "record --graphs node" -- \
    sh -c '"$@" </dev/null' sh "$LP" record -o "$T/gr1" --quiet --graphs node -- "$FAKE" 0
grep -q '"graphs": "node"' "$T/gr1/meta.json" && grep -q '"LLMPROF_GRAPHS": "node"' "$T/gr1/meta.json" &&
    ok "--graphs node in meta.json's options and environment" || bad "gr1: $(cat "$T/gr1/meta.json")"
grep -q '"graphs": "replay"' "$T/cap1/meta.json" && ! grep -q LLMPROF_GRAPHS "$T/cap1/meta.json" &&
    ok "no --graphs: replay, the collector's default" || bad "cap1: $(cat "$T/cap1/meta.json")"
expect 0 "" "record --capture nvtx:" -- \
    sh -c '"$@" </dev/null' sh "$LP" record -o "$T/cap2" --quiet --capture 'nvtx:^step/8' -- "$FAKE" 0
expect 0 "capture windows (nvtx:^step/8) cannot open here" "--capture nvtx: without callbacks: said" \
    -- "$LP" info "$T/cap2"

# profile --deep: no deep dive of a program that failed (it would run again); the deep dive
# runs after record, before report (tests/cli_deep.sh covers the deep dive itself)
expect 2 "needs Nsight Compute 2023.1 or newer" "profile --deep checks ncu's version first" -- \
    env FAKE_NCU_VERSION=2022.1.0 "$LP" profile -o "$T/pm" --deep 2 --ncu "$NCU" -- true
[ ! -e "$T/pm" ] && ok "profile --deep with an old ncu: nothing recorded" || bad "profile recorded: $(ls -A "$T/pm")"
expect 3 "the deep dive, which runs it again, is skipped" "profile --deep of a failing program" -- \
    sh -c '"$@" </dev/null' sh "$LP" profile -o "$T/pd1" --deep 2 --ncu "$NCU" -- "$FAKE" 3
[ -s "$T/pd1/report.md" ] && [ ! -e "$T/pd1/deep" ] && ok "... reported, no deep dive" || bad "pd1: $(ls -A "$T/pd1")"
out=$("$LP" profile -o "$T/pd2" --deep 2 --ncu "$NCU" -- "$FAKE" 0 </dev/null 2>&1)
rc=$?
# the fake program launches no kernel: the deep dive says so, the report is still written
if [ "$rc" -eq 1 ] && grep -q "llmprof deep: the run recorded no kernels" <<<"$out" && [ -s "$T/pd2/report.md" ]; then
    ok "profile --deep runs the deep dive on the run, then reports"; else bad "profile --deep: status $rc, $out"; fi

# several traces: each reported in its subdirectory, the run report beside them (ranks.md,
# ranks.json, ranks.csv: a row per process and stage); the printed summary names it
cp -r "$FIX/tp-manual" "$T/tp"
out=$("$LP" report "$T/tp" 2>&1)
rows=$(python3 - "$T/tp" <<'PYEOF'
import csv, json, sys
d = sys.argv[1]
j = json.load(open(d + "/ranks.json"))
assert j["schema"] == "llmprof-ranks/1" and j["processes"] == 2, j["schema"]
assert [r["rank"] for r in j["ranks"]] == [0, 1]
assert j["waits"]["status"] == "done"
for r in j["ranks"]:
    sub = json.load(open(d + "/" + r["report_dir"] + "/report.json"))
    assert len(sub["stages"]) == len(r["stages"]), r["trace"]
    # each process's report says its communication as the run report does
    c = sub["communication"]
    assert (c["kernels"], c["gpu_ns"], c["overlap_ns"]) == (r["comm_kernels"], r["comm_ns"], r["comm_overlap_ns"]), (c, r["trace"])
    assert len(sub["stages"]) == len(r["stages"])
    for s, rs in zip(sub["stages"], r["stages"]):
        assert s["name"] == rs["name"] and s["communication"]["gpu_ns"] == rs["comm_ns"], (s["name"], r["trace"])
    assert "## Communication" in open(d + "/" + r["report_dir"] + "/report.md").read()
print(sum(len(r["stages"]) for r in j["ranks"]) == len(list(csv.DictReader(open(d + "/ranks.csv")))))
PYEOF
)
if [ "$rows" = True ] && grep -q "run report of 2 processes" <<<"$out" &&
    grep -q "^| rank 1 (local 1) |" "$T/tp/ranks.md"; then
    ok "report of two ranks: ranks.md, .json and .csv beside their reports"
else bad "ranks report: $rows / $out"; fi

# a trace of the run that cannot be read (a rank killed before it wrote): left out and said,
# the other's reports and the run report written; none readable: status 1, nothing written
cp -r "$FIX/tp-manual" "$T/tpk"
: >"$T/tpk/trace.rank1.vm.744.lpt"
expect 0 "warning: $T/tpk/trace.rank1.vm.744.lpt cannot be read, left out of the run report: empty trace" \
    "report of a run with an empty trace: the other reported" -- "$LP" report "$T/tpk" --quiet
if [ -s "$T/tpk/trace.rank0.vm.743/report.md" ] && [ ! -e "$T/tpk/trace.rank1.vm.744" ] &&
    grep -q "^\*\*Left out:\*\* 1 trace of the run could not be read" "$T/tpk/ranks.md" &&
    python3 -c "
import json, sys
j = json.load(open(sys.argv[1]))
assert j['processes'] == 1 and [r['rank'] for r in j['ranks']] == [0]
assert [u['trace'] for u in j['unreadable']] == [sys.argv[2]], j['unreadable']
assert j['unreadable'][0]['reason'].startswith('empty trace'), j['unreadable']
" "$T/tpk/ranks.json" "$T/tpk/trace.rank1.vm.744.lpt"; then
    ok "the unreadable trace named in ranks.md and ranks.json, the other's report written"
else bad "report of a run with an empty trace: $(ls "$T/tpk")"; fi
expect 0 "warning: left out of $T/tpk.db: $T/tpk/trace.rank1.vm.744.lpt: empty trace" \
    "export --sqlite of a run with an empty trace" -- "$LP" export "$T/tpk" --sqlite "$T/tpk.db"
n=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from traces').fetchone()[0])" "$T/tpk.db")
[ "$n" = 1 ] && ok "export --sqlite: the readable trace exported" || bad "export --sqlite traces: $n"
mkdir -p "$T/tpe" && cp "$FIX/tp-manual/meta.json" "$T/tpe/" &&
    : >"$T/tpe/trace.rank0.vm.1.lpt" && : >"$T/tpe/trace.rank1.vm.2.lpt"
expect 1 "none of its 2 traces can be read" "report of a run with no readable trace" -- \
    "$LP" report "$T/tpe" --quiet
[ ! -e "$T/tpe/ranks.md" ] && ok "nothing written without a readable trace" || bad "ranks.md written"
expect 1 "no trace of the run can be read" "export --sqlite of a run with no readable trace" -- \
    "$LP" export "$T/tpe" --sqlite "$T/tpe.db"
[ ! -e "$T/tpe.db" ] && ok "no database without a readable trace" || bad "tpe.db written"

# diff: two runs compared and gated (tests/test_diff.c checks the figures)
DA=$FIX/diff-graph-1 DB=$FIX/diff-eager-1
expect 2 "which runs?" "diff without runs" -- "$LP" diff
expect 2 "which runs?" "diff with one run" -- "$LP" diff "$DA"
expect 2 "two runs at a time" "diff with three runs" -- "$LP" diff "$DA" "$DB" "$DA"
expect 2 "rule 'tpot>+5': the limit is a percentage" "diff with a rule without %" -- \
    "$LP" diff "$DA" "$DB" --fail-if 'tpot>+5'
expect 2 "unknown metric 'latency'" "diff with an unknown figure" -- \
    "$LP" diff "$DA" "$DB" --fail-if 'latency>+5%'
expect 2 "'>' takes a rise limit" "diff with a rule of the wrong sign" -- \
    "$LP" diff "$DA" "$DB" --fail-if 'tpot>-5%'
expect 1 "holds 2 traces" "diff of a run with two traces" -- "$LP" diff "$FIX/tp-manual" "$DB"
expect 1 "No such file" "diff of a missing run" -- "$LP" diff "$T/nothing" "$DB"
expect 1 "No such file" "diff --model of a missing config" -- "$LP" diff "$DA" "$DB" --model "$T/none.json"
expect 1 "no trace (\*.lpt) and no report.json" "diff of an empty directory" -- \
    "$LP" diff "$T" "$DB"
mkdir -p "$T/o" && cp "$DA"/*.lpt "$T/o/diff.md"
expect 2 "is one of the inputs" "diff writing over its input" -- \
    "$LP" diff "$T/o/diff.md" "$DB" -o "$T/o"
expect 3 "tpot>+5%: FAILED" "diff gate: the eager decode fails tpot>+5% (status 3)" -- \
    "$LP" diff "$DA" "$DB" --fail-if 'tpot>+5%' --quiet
expect 3 "vision.wall>+5%: FAILED: not measured in both runs" "diff gate: a figure not measured fails (status 3)" -- \
    "$LP" diff "$DA" "$DB" --fail-if 'vision.wall>+5%' --quiet
expect 0 "tpot>+5%: passed" "diff gate: the graph decode passes tpot>+5%" -- \
    "$LP" diff "$DB" "$DA" --fail-if 'tpot>+5%'
expect 0 "^## Latency" "diff prints diff.md without -o" -- "$LP" diff "$DA" "$FIX/diff-graph-2"
"$LP" diff "$DA" "$DB" -o "$T/dd" --fail-if 'ttft>+50%' >/dev/null 2>&1
rc=$?
if [ "$rc" -eq 0 ] && [ -s "$T/dd/diff.md" ] &&
    python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["schema"]=="llmprof-diff/1" and j["gate"][0]["result"] in ("passed","noise")' "$T/dd/diff.json"; then
    ok "diff -o writes diff.md and diff.json"
else bad "diff -o: status $rc, $(ls "$T/dd" 2>&1)"; fi
# a report directory stands for its run while the trace it names is there
"$LP" report "$DA" -o "$T/rep-a" --quiet
expect 0 "^## Latency" "diff of a report directory" -- "$LP" diff "$T/rep-a" "$DA"
mkdir -p "$T/rep-x" && echo '{"trace": {"path": "/nonexistent/t.lpt"}}' >"$T/rep-x/report.json"
expect 1 "names the trace /nonexistent/t.lpt, which is not there" \
    "diff of a report directory whose trace is gone" -- "$LP" diff "$T/rep-x" "$DA"

# report --baseline: the diff's files beside the report, its headline in the summary
expect 0 "TPOT p50 .* lower (better)" "report --baseline: the summary says what moved" -- \
    "$LP" report "$DA" --baseline "$DB" -o "$T/rb"
if [ -s "$T/rb/diff.md" ] && [ -s "$T/rb/report.html" ] && grep -q '"schema":"llmprof-diff/1"' \
    "$T/rb/report.html" && python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert [r["label"] for r in j["runs"]]==sys.argv[2:] and j["latency"]["tpot"]["p50"]["verdict"]=="lower"' "$T/rb/diff.json" "$DB" "$DA"; then
    ok "report --baseline writes diff.md, diff.json (runs named as given) and the baseline into report.html"
else bad "report --baseline: $(ls "$T/rb" 2>&1)"; fi
if [ ! -e "$T/rep-a/diff.md" ] && grep -q '<script id="baseline-data" type="application/json">null' \
    "$T/rep-a/report.html"; then
    ok "report without --baseline writes no diff and no baseline data"
else bad "report without --baseline: $(ls "$T/rep-a")"; fi
expect 0 "note: $T/rb/diff.md and diff.json are from an earlier report with --baseline" \
    "report without --baseline over one with it says the old diff stays" -- \
    "$LP" report "$DA" -o "$T/rb" --quiet
expect 0 "against $T/rep-a" "report --baseline of a report directory" -- \
    "$LP" report "$DB" --baseline "$T/rep-a" -o "$T/rb2"
expect 0 "warning: the baseline $DA is this run's own trace" "report --baseline of itself" -- \
    "$LP" report "$DA" --baseline "$DA" -o "$T/rb5" --quiet
# refused before any work, nothing written: STATUS NAME PATTERN ARGS...
refused() {
    local want=$1 what=$2 pattern=$3
    shift 3
    rm -rf "$T/rb3"
    expect "$want" "$pattern" "$what" -- "$LP" report -o "$T/rb3" "$@"
    [ ! -e "$T/rb3" ] && ok "$what: nothing written" || bad "$what: $T/rb3 was made"
}
refused 1 "report --baseline of a missing run" "No such file" "$DA" --baseline "$T/nothing"
refused 1 "report --baseline of a run with two traces" "holds 2 traces" "$DA" --baseline "$FIX/tp-manual"
refused 1 "report of two traces with --baseline" "--baseline compares one trace with one" \
    "$FIX/tp-manual" --baseline "$DA"
refused 1 "report --baseline of a file that is no trace" "not an llmprof trace" "$DA" --baseline "$T/junk.lpt"
refused 2 "report --baseline without a run" "--baseline needs a run to compare with" "$DA" --baseline
mkdir -p "$T/rb4" && cp "$DB"/*.lpt "$T/rb4/trace.1.lpt"
expect 2 "holds the baseline's trace" "report into the baseline's run directory" -- \
    "$LP" report "$DA" --baseline "$T/rb4" -o "$T/rb4"
[ "$(ls "$T/rb4")" = trace.1.lpt ] && ok "report into the baseline's run directory: nothing written" ||
    bad "report into the baseline's run directory wrote $(ls "$T/rb4")"
cp -r "$T/rep-a" "$T/rep-b"
expect 2 "is one of the inputs" "report over the baseline's report.json" -- \
    "$LP" report "$DB" --baseline "$T/rep-b" -o "$T/rep-b"
cmp -s "$T/rep-a/report.json" "$T/rep-b/report.json" && ok "the baseline's report.json kept" ||
    bad "the baseline's report.json was replaced"
# profile reads the baseline before the program runs: WHAT BASELINE PATTERN (status 1: a
# baseline that cannot be used)
profile_refused() {
    local out rc
    out=$("$LP" profile --baseline "$2" -o "$T/pb" -- echo PROGRAM-RAN 2>&1)
    rc=$?
    if [ "$rc" -eq 1 ] && grep -q -- "$3" <<<"$out" && ! grep -q PROGRAM-RAN <<<"$out" &&
        [ ! -e "$T/pb" ]; then
        ok "$1: refused before the program runs"
    else bad "$1: status $rc, $out"; fi
}
profile_refused "profile --baseline of a missing run" "$T/nothing" "No such file"
cp -r "$DB" "$T/pb-base"
out=$("$LP" profile --baseline "$T/pb-base" -o "$T/pb-base" --force -- echo PROGRAM-RAN 2>&1)
rc=$?
if [ "$rc" -eq 2 ] && grep -q "holds the baseline's trace" <<<"$out" && ! grep -q PROGRAM-RAN <<<"$out" &&
    diff -rq "$DB" "$T/pb-base" >/dev/null; then
    ok "profile --force into the baseline's run: refused before the program runs, the baseline kept"
else bad "profile --force into the baseline's run: status $rc, $out"; fi
head -c 100 /dev/urandom >"$T/notatrace.lpt"
profile_refused "profile --baseline of a file that is no trace" "$T/notatrace.lpt" notatrace.lpt
expect 2 "--baseline is report's" "diff --baseline" -- "$LP" diff "$DA" "$DB" --baseline "$DB"

# provenance: report.json keeps the --model's config.json whole, and says which file it was
"$LP" report "$FIX/hf-llama" --model "$FIX/hf-llama" -o "$T/prov" --quiet &&
    python3 -c 'import json,sys
m = json.load(open(sys.argv[1]))["model"]
c = json.load(open(sys.argv[2]))
assert m["config_file"] == sys.argv[2] and m["model_type"] == "llama" and m["config"] == c, m' \
        "$T/prov/report.json" "$FIX/hf-llama/config.json" &&
    ok "report.json keeps the model's config.json (a model directory given: its config.json)" ||
    bad "report.json's model: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("model"))' "$T/prov/report.json" 2>&1 | head -c 300)"
"$LP" report "$FIX/hf-llama" -o "$T/prov2" --quiet &&
    python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["model"] is None' "$T/prov2/report.json" &&
    ok "report.json's model is null without --model" || bad "report.json's model without --model"

finish
