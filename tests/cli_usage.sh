#!/usr/bin/env bash
# CLI behaviour a new user meets: --version, mistyped commands, record's exit status when
# its run cannot be written (a simulated full disk), links planted at its temporaries, --force
# (only a run's own files, only once the new run can start), profile on a run it did not
# record, signals passed on to the command (and one before it starts), llmprof installed with cmake --install, and README's "Try it" commands verbatim.
# Usage: cli_usage.sh LLMPROF FAKE_CUDA_APP FIXTURES_DIR
# The build directory is the one above LLMPROF's bin/ (LLMPROF_BUILD_DIR overrides it).
set -u
abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
LP=$(abs "$1") FAKE=$(abs "$2") FIX=$(abs "$3")
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${LLMPROF_BUILD_DIR:-$(cd "$(dirname "$LP")/.." && pwd)}
CMAKE=${CMAKE_COMMAND:-cmake}
T=$(mktemp -d /tmp/lp_usage.XXXXXX)
T=$(cd "$T" && pwd -P)
trap 'rm -rf "$T"' EXIT
ulimit -c 0 # SIGQUIT below must not leave a core file
source "$(dirname "$0")/cli_lib.sh"

# --version: version, commit, CUDA and CUPTI; fast
out=$(timeout 5 "$LP" --version 2>&1)
rc=$?
re='^llmprof [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{7,}(-dirty)?|unknown), built against CUDA ([0-9]+\.[0-9]+|none|unknown), CUPTI API ([0-9]+|none|unknown)\)$'
if [ "$rc" -eq 0 ] && grep -Eq "$re" <<<"$out"; then ok "--version names commit, CUDA and CUPTI"; else
    bad "--version: status $rc, '$out'"; fi
if [ -e "$BUILD/lib/libllmprof.so" ]; then
    grep -q "CUDA [0-9]*\.[0-9]*, CUPTI API [0-9]" <<<"$out" && ok "--version of a build with the collector names its CUDA" ||
        bad "--version: $out"
fi
if head=$(git -C "$SRC" --no-optional-locks rev-parse --short=7 HEAD 2>/dev/null) &&
    [ "$(git -C "$SRC" rev-parse --show-toplevel 2>/dev/null)" = "$SRC" ]; then
    grep -q "(commit $head[-,]" <<<"$out" && ok "--version names the checkout's commit ($head)" ||
        bad "--version: '$out', HEAD is $head (rebuild after a commit)"
fi

# cmake/build_info.cmake on a scratch repository: the commit follows new commits, "-dirty"
# when tracked files change, "unknown" outside git; an unchanged header is not rewritten
if command -v git >/dev/null && command -v "$CMAKE" >/dev/null; then
    R=$T/repo H=$T/build_info.h
    info() { "$CMAKE" -DLP_SOURCE_DIR="$1" -DLP_GIT="$(command -v git)" -DLP_OUT="$H" \
        -DLP_CUDA=13.0 -DLP_CUPTI=130001 -P "$SRC/cmake/build_info.cmake"; }
    g() { git -C "$R" -c user.name=t -c user.email=t@example.com "$@"; }
    mkdir -p "$R" && g init -q && echo a >"$R/f" && g add f && g commit -qm one
    info "$R"
    c1=$(g rev-parse --short=7 HEAD)
    grep -q "LP_BUILD_COMMIT \"$c1\"" "$H" && grep -q 'LP_BUILD_CUDA "13.0"' "$H" &&
        ok "build info: the commit" || bad "build info: $(cat "$H")"
    touch -d '2001-01-01' "$H"
    info "$R"
    [ "$(stat -c %Y "$H")" = "$(date -d '2001-01-01' +%s)" ] && ok "build info: unchanged header left alone" ||
        bad "build info: the header was rewritten"
    echo b >"$R/f" && g commit -qam two
    info "$R"
    c2=$(g rev-parse --short=7 HEAD)
    [ "$c1" != "$c2" ] && grep -q "LP_BUILD_COMMIT \"$c2\"" "$H" && ok "build info: follows a new commit" ||
        bad "build info after a commit: $(cat "$H")"
    echo c >>"$R/f"
    info "$R"
    grep -q "LP_BUILD_COMMIT \"$c2-dirty\"" "$H" && ok "build info: -dirty" || bad "build info: $(cat "$H")"
    mkdir -p "$R/sub"
    info "$R/sub"
    grep -q 'LP_BUILD_COMMIT "unknown"' "$H" && ok "build info: a tree inside another repository is unknown" ||
        bad "build info in a subdirectory: $(cat "$H")"
fi

# a mistyped command: did you mean
expect 2 "'reprot' is not a command; did you mean 'report'?" "did you mean 'report'" -- "$LP" reprot
expect 2 "did you mean 'record'?" "did you mean 'record'" -- "$LP" recrod
expect 2 "did you mean 'info'?" "did you mean 'info'" -- "$LP" inof
expect 2 "did you mean '--version'?" "did you mean '--version'" -- "$LP" --verison
out=$("$LP" frobnicate 2>&1)
[ $? -eq 2 ] && ! grep -q "did you mean" <<<"$out" && grep -q "is not a command; see 'llmprof --help'" <<<"$out" &&
    ok "no suggestion for a word that is near nothing" || bad "frobnicate: $out"

# a full disk: the command's trace gets nothing (a file size limit of 0; SIGXFSZ ignored, so
# writes fail with EFBIG) and the command lowers record's own limit to 0 (prlimit on its
# parent), so the final meta.json write fails too: record ignores SIGXFSZ and says why
if command -v prlimit >/dev/null; then
    fulldisk='prlimit --pid $PPID --fsize=0:0 && trap "" XFSZ && ulimit -f 0 && exec "$0" "$1"'
    # stderr goes through a pipe: record's file size limit would stop its writes to a file
    "$LP" record -o "$T/full" -- sh -c "$fulldisk" "$FAKE" 0 </dev/null 2>&1 >/dev/null | cat >"$T/full.err"
    rc=${PIPESTATUS[0]}
    [ "$rc" -eq 1 ] && ok "full disk: record exits 1 although the command succeeded" || bad "full disk: status $rc, $(cat "$T/full.err")"
    grep -q "empty trace $T/full/trace\..*\.lpt: nothing was written (disk full?)" "$T/full.err" &&
        ok "full disk: the empty trace is named" || bad "full disk: $(cat "$T/full.err")"
    grep -q "writing $T/full/meta.json failed: File too large" "$T/full.err" &&
        grep -q "meta.json was not updated; it still says the command is running" "$T/full.err" &&
        ok "full disk: the failed meta.json write says why" || bad "full disk: $(cat "$T/full.err")"
    grep -q "exited 0 but its run in $T/full was not written whole" "$T/full.err" &&
        ok "full disk: the exit status is explained" || bad "full disk: $(cat "$T/full.err")"
    [ -z "$(ls -A "$T/full" | grep -v '^meta.json$\|^trace\..*\.lpt$')" ] &&
        ok "full disk: no temporary left" || bad "full disk left: $(ls -A "$T/full")"
    "$LP" record -o "$T/full3" -- sh -c "$fulldisk" "$FAKE" 3 </dev/null 2>&1 >/dev/null | cat >"$T/full3.err"
    rc=${PIPESTATUS[0]}
    [ "$rc" -eq 3 ] && grep -q "empty trace" "$T/full3.err" && ok "full disk: a failing command's status wins (3)" ||
        bad "full disk, exit 3: status $rc, $(cat "$T/full3.err")"
else
    skip "full disk: no prlimit"
fi
# only the trace gets nothing: meta.json is written and says so
"$LP" record -o "$T/efbig" -- sh -c 'trap "" XFSZ; ulimit -f 0; exec "$0" 0' "$FAKE" </dev/null \
    >/dev/null 2>"$T/efbig.err"
rc=$?
[ "$rc" -eq 1 ] && grep -q '"record_errors"' "$T/efbig/meta.json" && grep -q '"exit_code": 0' "$T/efbig/meta.json" &&
    ! grep -q "look with" "$T/efbig.err" && ok "empty trace: exit 1, meta.json keeps the error" ||
    bad "empty trace: status $rc, $(cat "$T/efbig.err"), $(cat "$T/efbig/meta.json")"
# a program that never used CUDA leaves no trace, which is no failure of record
expect 0 "no trace in" "a command without CUDA: exit 0, a note" -- "$LP" record -o "$T/nocuda" -- true

# --force replaces a run: only the files llmprof wrote go
"$LP" record -o "$T/f1" -- "$FAKE" 0 </dev/null >/dev/null 2>&1
"$LP" report "$T/f1" --quiet >/dev/null 2>&1
old=$(ls "$T"/f1/trace.*.lpt)
echo mine >"$T/f1/notes.txt"
expect 2 "already holds a recorded run; choose another -o, or add --force" "refusal mentions --force" -- \
    "$LP" record -o "$T/f1" -- "$FAKE" 0
expect 0 "removed the previous run's files from $T/f1: meta.json, 1 trace, 11 report files" \
    "--force says what it removed" -- "$LP" record --force -o "$T/f1" -- "$FAKE" 0
[ -f "$T/f1/notes.txt" ] && [ ! -e "$old" ] && [ ! -e "$T/f1/report.md" ] && [ -f "$T/f1/meta.json" ] &&
    [ "$(ls "$T"/f1/trace.*.lpt | wc -l)" -eq 1 ] && ok "--force: a new run, the user's file kept" ||
    bad "--force left: $(ls -A "$T/f1")"
# per-rank report directories go when only llmprof's files were in them
"$LP" record -o "$T/f2" -- sh -c 'RANK=0 "$1" </dev/null & RANK=1 "$1" </dev/null; wait' sh "$FAKE" >/dev/null 2>&1
"$LP" report "$T/f2" --quiet >/dev/null 2>&1
keep=$(ls -d "$T"/f2/trace.rank1.*/ | head -1)
echo mine >"$keep/notes.txt"
expect 0 "meta.json, 2 traces, 22 report files, 1 report directory" "--force on a run of two ranks" -- \
    "$LP" record --force -o "$T/f2" -- "$FAKE" 0
[ -f "$keep/notes.txt" ] && [ ! -e "$keep/report.md" ] && [ -z "$(ls -d "$T"/f2/trace.rank0.* 2>/dev/null)" ] &&
    ok "--force: report directories removed, one with a user's file kept" || bad "--force left: $(ls -AR "$T/f2")"
# a trace llmprof did not name is the user's: --force refuses before removing anything
"$LP" record -o "$T/f3" -- "$FAKE" 0 </dev/null >/dev/null 2>&1
cp "$FIX"/llama/trace.*.lpt "$T/f3/mine.lpt"
expect 2 "holds mine.lpt, which llmprof did not write and --force leaves" "--force refuses a foreign trace" -- \
    "$LP" record --force -o "$T/f3" -- "$FAKE" 0
[ -f "$T/f3/mine.lpt" ] && [ -f "$T/f3/meta.json" ] && ls "$T"/f3/trace.*.lpt >/dev/null 2>&1 &&
    ok "--force: refused with nothing removed" || bad "--force removed: $(ls -A "$T/f3")"

# record's temporaries: links planted at predictable names are not followed
mkdir "$T/planted" && echo precious >"$T/victim"
ln -s "$T/victim" "$T/planted/.meta.json.tmp" && ln -s "$T/victim" "$T/planted/.llmprof-write-test"
"$LP" record -o "$T/planted" -- "$FAKE" 0 </dev/null >/dev/null 2>"$T/planted.err"
rc=$?
[ "$rc" -eq 0 ] && [ "$(cat "$T/victim")" = precious ] && [ -f "$T/planted/meta.json" ] &&
    [ ! -L "$T/planted/meta.json" ] && [ "$(ls -A "$T/planted" | grep -vc '^trace\..*\.lpt$')" -eq 3 ] &&
    ok "record follows no link planted where it writes" ||
    bad "planted links: status $rc, victim '$(cat "$T/victim")', $(ls -lA "$T/planted"), $(cat "$T/planted.err")"

# --force replaces a run, never a user's files where there is no run
mkdir "$T/notes" && echo mine >"$T/notes/report.md" && echo '{"mine":1}' >"$T/notes/meta.json" &&
    echo d >"$T/notes/kernels.csv"
expect 2 "output $T/notes holds a meta.json that llmprof did not write" "--force refuses a user's meta.json" -- \
    "$LP" record -o "$T/notes" --force -- "$FAKE" 0
[ "$(cat "$T/notes/report.md" "$T/notes/meta.json" "$T/notes/kernels.csv")" = "$(printf 'mine\n{"mine":1}\nd')" ] &&
    [ "$(ls -A "$T/notes" | wc -l)" -eq 3 ] && ok "--force: a user's meta.json and report files kept" ||
    bad "--force on a user's files left: $(ls -A "$T/notes")"
rm "$T/notes/meta.json"
out=$("$LP" record -o "$T/notes" --force -- "$FAKE" 0 </dev/null 2>&1)
rc=$?
[ "$rc" -eq 0 ] && ! grep -q "removed" <<<"$out" && [ "$(cat "$T/notes/report.md")" = mine ] &&
    [ "$(cat "$T/notes/kernels.csv")" = d ] && [ -f "$T/notes/meta.json" ] &&
    ok "--force where there is no run removes nothing" || bad "--force, no run: status $rc, $out, $(ls -A "$T/notes")"

# --force keeps the old run until the new one can start (here LD_PRELOAD is too long)
long=$(printf 'x%.0s' $(seq 9000))
"$LP" record -o "$T/keep" -- "$FAKE" 0 </dev/null >/dev/null 2>&1
"$LP" report "$T/keep" --quiet >/dev/null 2>&1
snap() { (cd "$1" && ls -AR && cat meta.json trace.*.lpt report.md | cksum); }
before=$(snap "$T/keep")
expect 2 "LD_PRELOAD would be too long" "--force: a run that cannot start is refused" -- \
    env LD_PRELOAD="$long" "$LP" record -o "$T/keep" --force -- "$FAKE" 0
[ -f "$T/keep/report.md" ] && [ "$before" = "$(snap "$T/keep")" ] && ok "--force: the old run kept whole" ||
    bad "--force removed the old run before failing: $(ls -A "$T/keep")"
# ... and a new directory record made is removed again
expect 2 "LD_PRELOAD would be too long" "record -o new/dirs refused" -- \
    env LD_PRELOAD="$long" "$LP" record -o "$T/new/a/b" -- "$FAKE" 0
[ ! -e "$T/new" ] && ok "a refused record removes the directories it made" || bad "left: $(ls -AR "$T/new")"

# profile reports only on a run it recorded
"$LP" record -o "$T/p1" -- "$FAKE" 0 </dev/null >/dev/null 2>&1
expect 2 "already holds a recorded run" "profile into a run: refused" -- "$LP" profile -o "$T/p1" -- "$FAKE" 0
[ ! -e "$T/p1/report.md" ] && ok "profile: no report on the run it did not record" || bad "profile reported: $(ls -A "$T/p1")"
"$LP" record -o "$T/p3" -- "$FAKE" 0 </dev/null >/dev/null 2>&1
expect 127 "command not found" "profile of a missing command: 127" -- "$LP" profile -o "$T/p3" -- no-such-command-lp
expect 127 "command not found" "profile of a missing command into a new directory: 127" -- \
    "$LP" profile -o "$T/p2" -- no-such-command-lp
[ ! -e "$T/p3/report.md" ] && [ ! -e "$T/p2" ] && ok "profile: nothing written for a missing command" ||
    bad "profile, missing command: $(ls -A "$T/p3" "$T/p2" 2>&1)"

# signals sent to record reach the command; record exits as it did and finishes meta.json
set -m # background jobs would otherwise start with SIGINT and SIGQUIT ignored
signal_test() {
    local name=$1 num=$2 d=$T/sig$1 fifo=$T/fifo.$1 pid rc i
    mkfifo "$fifo"
    exec 3<>"$fifo" # held open, so the command blocks reading it until told to stop
    "$LP" record -o "$d" -- "$FAKE" 0 <"$fifo" >/dev/null 2>"$d.err" 3>&- &
    pid=$!
    for i in $(seq 100); do ls "$d"/trace.*.lpt >/dev/null 2>&1 && break; sleep 0.1; done
    kill -s "$name" "$pid"
    for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    exec 3>&- # end of input: a command that never got the signal ends now, with 0
    wait "$pid"
    rc=$?
    [ "$rc" -eq $((128 + num)) ] && grep -q "\"signal\": $num" "$d/meta.json" &&
        ok "SIG$name to record reaches the command: $rc, meta.json says signal $num" ||
        bad "SIG$name: status $rc, meta: $(cat "$d/meta.json" 2>&1), $(cat "$d.err")"
}
# Ctrl-C before the command starts: it is not run, and the directory is left as it was.
# record is held while its signals wait: its note on stderr goes to a pipe filled beforehand.
mkfifo "$T/errfifo"
exec 4<>"$T/errfifo"
dd if=/dev/zero bs=4096 count=1024 oflag=nonblock >&4 2>/dev/null
# (dd left fd 4 non-blocking; record's own opening of the FIFO blocks)
CUDA_INJECTION64_PATH=/elsewhere.so "$LP" record -o "$T/early" -- sh -c 'touch "$0"' "$T/early.ran" \
    </dev/null >/dev/null 2>"$T/errfifo" &
pid=$!
for i in $(seq 100); do [ -d "$T/early" ] && break; sleep 0.05; done
sleep 0.2
kill -INT "$pid"
dd bs=1M count=1 iflag=nonblock <&4 >/dev/null 2>&1 # frees the pipe: record goes on
wait "$pid"
rc=$?
sleep 0.1
err=$(dd bs=1M count=1 iflag=nonblock <&4 2>/dev/null | tr -d '\0')
exec 4>&-
[ "$rc" -eq 130 ] && [ ! -e "$T/early.ran" ] && [ ! -e "$T/early" ] &&
    grep -q "Interrupt came before sh started: it was not run and nothing was recorded" <<<"$err" &&
    ok "SIGINT before the command starts: not run, nothing left, 130" ||
    bad "SIGINT before the start: status $rc, $(ls -A "$T/early" 2>&1), ran: $(ls "$T/early.ran" 2>&1), $err"
signal_test INT 2
signal_test QUIT 3
signal_test TERM 15
signal_test HUP 1
set +m

# what --light asks of the collector: no kernels or GEMM capture, PM sampling every 200 us,
# NVML on; --light --counters: the range profiler instead of PM sampling
envof() { "$LP" record --quiet --force -o "$T/envrun" "$@" -- env 2>/dev/null | grep '^LLMPROF_' | sort | tr '\n' ' '; }
e=$(envof --light)
grep -q "LLMPROF_GEMM=0 " <<<"$e" && grep -q "LLMPROF_LIGHT=1 " <<<"$e" &&
    grep -q "LLMPROF_NVML_HZ=20 " <<<"$e" && grep -q "LLMPROF_PM_SAMPLING=200 " <<<"$e" &&
    ! grep -q "LLMPROF_COUNTERS=" <<<"$e" &&
    grep -q '"pm_sampling_us": 200' "$T/envrun/meta.json" && grep -q '"light": true' "$T/envrun/meta.json" &&
    ok "--light: no GEMM capture, PM sampling every 200 us, NVML on" || bad "--light: $e; $(cat "$T/envrun/meta.json")"
e=$(envof --counters-only --counters)
grep -q "LLMPROF_LIGHT=1 " <<<"$e" && grep -q "LLMPROF_COUNTERS=1 " <<<"$e" &&
    ! grep -q "LLMPROF_PM_SAMPLING=" <<<"$e" &&
    ok "--counters-only is --light; with --counters, the range profiler and no PM sampling" ||
    bad "--counters-only --counters: $e"
e=$(envof --light --pm-sampling 500)
grep -q "LLMPROF_PM_SAMPLING=500 " <<<"$e" && ok "--light --pm-sampling 500 keeps the interval asked for" ||
    bad "--light --pm-sampling 500: $e"
e=$(envof --light --counter-dtypes bf16)
grep -q "LLMPROF_COUNTERS=bf16 " <<<"$e" && ! grep -q "LLMPROF_PM_SAMPLING=" <<<"$e" &&
    ok "--light --counter-dtypes: the range profiler, no PM sampling" || bad "--light --counter-dtypes bf16: $e"
e=$("$LP" info "$FIX/cupti-first")
grep -q "lost     0 records; 1 loss note without a count" <<<"$e" &&
    grep -q "torch.profiler ...) is active in this process.*(no count)$" <<<"$e" &&
    ok "info: a loss without a count said so, beside the records lost" ||
    bad "info on cupti-first: $e"
"$LP" info "$FIX/pm-hf-llama-light" | grep -q "kernels not recorded" &&
    ok "info on a --light trace: kernels not recorded (not 0 ns)" || bad "info on pm-hf-llama-light"
"$LP" info "$FIX/graph-replay" | grep -q "^  graphs   96 CUDA graph replays recorded whole" &&
    ok "info: the replays recorded whole" || bad "info on graph-replay: $("$LP" info "$FIX/graph-replay" | grep graphs)"
"$LP" info "$FIX/graph-steps-8" | grep -q "^  capture  graphs/8: kernels recorded only in 12 windows" &&
    ok "info: the windows on graph steps" || bad "info on graph-steps-8: $("$LP" info "$FIX/graph-steps-8" | grep capture)"
e=$(envof)
grep -q "LLMPROF_LIGHT=0 " <<<"$e" && grep -q "LLMPROF_GEMM=1 " <<<"$e" && ! grep -q "LLMPROF_PM_SAMPLING=" <<<"$e" &&
    ok "the default: kernels, GEMM capture, no counters" || bad "default record: $e"

# floating-point options refuse NaN, infinities and values out of range, naming the option,
# before anything runs (issue 52: NaN fails both comparisons of a range check)
for v in nan NaN -nan inf -inf infinity 1e999 -1e999; do
    for opt in --nvml-hz --pm-sampling; do
        expect 2 "^llmprof record: $opt" "record $opt $v refused" -- \
            "$LP" record "$opt" "$v" -o "$T/fl-rec" -- "$FAKE" 0
    done
    for opt in --peak-tflops --mem-bw; do
        expect 2 "^llmprof report: $opt" "report $opt $v refused" -- \
            "$LP" report "$FIX/hf-moe" "$opt" "$v" -o "$T/fl-rep"
        expect 2 "^llmprof model: $opt" "model $opt $v refused" -- \
            "$LP" model "$FIX/hf-moe/config.json" --gpu H200 "$opt" "$v"
    done
    for opt in --nvml-hz --pm-sampling --peak-tflops --mem-bw --deep-budget; do
        expect 2 "^llmprof profile: $opt" "profile $opt $v refused" -- \
            "$LP" profile "$opt" "$v" -o "$T/fl-prof" -- touch "$T/fl-ran"
    done
    expect 2 "^llmprof deep: --budget" "deep --budget $v refused" -- \
        "$LP" deep "$FIX/deep-llama3-8b" --budget "$v" --dry-run
    expect 2 "^llmprof diff: --min-change" "diff --min-change $v refused" -- \
        "$LP" diff "$FIX/hf-moe" "$FIX/hf-moe" --min-change "$v"
done
if ls -d "$T"/fl-* >/dev/null 2>&1; then bad "a refused float option ran or wrote: $(ls -d "$T"/fl-*)"
else ok "no refused float option ran a command or wrote a file"; fi

# installed: bin/llmprof finds lib/libllmprof.so
if [ -f "$BUILD/CMakeCache.txt" ] && [ -e "$BUILD/lib/libllmprof.so" ] && command -v "$CMAKE" >/dev/null; then
    P=$T/prefix
    if "$CMAKE" --install "$BUILD" --prefix "$P" >"$T/install.log" 2>&1 && [ -x "$P/bin/llmprof" ] &&
        [ -f "$P/lib/libllmprof.so" ]; then ok "cmake --install puts bin/llmprof and lib/libllmprof.so"; else
        bad "cmake --install: $(cat "$T/install.log")"; fi
    out=$(cd "$T" && env -u LLMPROF_LIB PATH="$P/bin:$PATH" llmprof record -o inst -- "$FAKE" 5 </dev/null 2>&1)
    rc=$?
    [ "$rc" -eq 5 ] && grep -q "\"collector\": \"$P/lib/libllmprof.so\"" "$T/inst/meta.json" &&
        ls "$T"/inst/trace.*.lpt >/dev/null 2>&1 && ok "the installed llmprof records with the installed collector" ||
        bad "installed record: status $rc, $out, $(cat "$T/inst/meta.json" 2>&1)"
fi

# profile --repeat N: N runs, each a run of its own, meta.json listing them, the comparison
"$LP" profile --repeat 3 -o "$T/rep" --quiet -- "$FAKE" 0 </dev/null >"$T/rep.out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && [ -f "$T/rep/repeat-3/report.md" ] && ls "$T"/rep/repeat-2/trace.*.lpt >/dev/null &&
    python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["repeats"]
assert m["asked"] == 3 and m["runs"] == ["repeat-1", "repeat-2", "repeat-3"] and m["exit_status"] == [0, 0, 0]
r=json.load(open(sys.argv[2])); assert r["schema"] == "llmprof-repeats/1" and r["repeats"] == 3' \
        "$T/rep/meta.json" "$T/rep/repeats.json" && [ -f "$T/rep/repeats.md" ] && [ -f "$T/rep/repeats.csv" ] &&
    ok "profile --repeat 3: three runs, meta.json lists them, repeats.md/.json/.csv" ||
    bad "profile --repeat: status $rc, $(cat "$T/rep.out") $(ls -R "$T/rep")"
"$LP" report "$T/rep" -o "$T/rep-out" >"$T/rep.out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && [ -f "$T/rep-out/repeat-2/report.json" ] && [ -f "$T/rep-out/repeats.md" ] &&
    grep -q "report of 3 repeats in $T/rep-out/" "$T/rep.out" &&
    ok "report of a directory of repeats: each repeat into -o DIR/repeat-K, the comparison beside" ||
    bad "report of repeats: status $rc, $(cat "$T/rep.out")"
# the first repeat whose program fails stops the repeats: its status, what ran reported
"$LP" profile --repeat 3 -o "$T/rep-fail" --quiet -- "$FAKE" 3 </dev/null >"$T/rep.out" 2>&1
rc=$?
[ "$rc" -eq 3 ] && [ ! -e "$T/rep-fail/repeat-2" ] && [ -f "$T/rep-fail/repeats.md" ] &&
    grep -q "repeat 1: the program exited with status 3" "$T/rep.out" &&
    ok "profile --repeat stops at a failing repeat, with its status" ||
    bad "failing repeat: status $rc, $(cat "$T/rep.out")"
expect 2 "already holds files: --force" "profile --repeat into a directory that holds files" -- \
    "$LP" profile --repeat 2 -o "$T/rep" -- "$FAKE" 0
expect 2 "takes one" "profile --repeat with --deep" -- "$LP" profile --repeat 2 --deep 3 -- "$FAKE" 0
# --force replaces earlier repeats only; --repeat 1 has the same layout as any N
mkdir -p "$T/notrep" && echo x >"$T/notrep/notes.txt"
expect 2 "no earlier --repeat's" "profile --repeat --force into a directory of other files" -- \
    "$LP" profile --repeat 2 --force -o "$T/notrep" -- "$FAKE" 0
"$LP" profile --repeat 1 --force -o "$T/rep" --quiet -- "$FAKE" 0 </dev/null >/dev/null 2>&1 &&
    [ -f "$T/rep/repeat-1/report.md" ] && grep -q '"runs": \[' "$T/rep/meta.json" &&
    python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["repeats"] == 1' "$T/rep/repeats.json" &&
    ok "profile --repeat 1 --force over earlier repeats: repeat-1, meta.json, repeats.json of 1" ||
    bad "profile --repeat 1: $(ls -R "$T/rep")"
expect 1 "holds 1 repeat of one command" "info on a directory of repeats names one to give" -- \
    "$LP" info "$T/rep"
# a meta.json whose list of repeats cannot be used: refused, nothing written outside
cp -r "$T/rep" "$T/bad" && mkdir -p "$T/linked" && ln -s "$T/linked" "$T/bad/repeat-9"
for runs in '["repeat-9"]' '["repeat-1", "repeat-1"]' '["../rep"]' '[]' '"repeat-1"' \
    '["trace.x.lpt"]'; do
    : >"$T/bad/trace.x.lpt"
    printf '{"repeats": {"runs": %s}}\n' "$runs" >"$T/bad/meta.json"
    expect 1 "repeats.runs" "report refuses the repeats list $runs" -- "$LP" report "$T/bad"
done
[ -z "$(ls "$T/linked")" ] && ok "nothing written through a repeat that is a symbolic link" ||
    bad "written through the link: $(ls "$T/linked")"

# README's "Try it" block, verbatim, with llmprof on PATH, from a copy of the repository root
mkdir -p "$T/readme" && ln -s "$SRC/tests" "$T/readme/tests"
n=0
while IFS= read -r line; do
    n=$((n + 1))
    out=$(cd "$T/readme" && PATH="$(dirname "$LP"):$PATH" bash -c "$line" 2>&1 </dev/null)
    rc=$?
    [ "$rc" -eq 0 ] && ok "README: $line" || bad "README: $line: status $rc, $(tail -5 <<<"$out")"
done < <(awk '/<!-- tested by tests\/cli_usage.sh -->/ { on = 1; next }
              on && /^```$/ { if (open) exit; open = 1; next }
              open && /^llmprof / { sub(/ +#.*$/, ""); print }' "$SRC/README.md")
[ "$n" -ge 4 ] && ok "README's Try it block has $n commands" || bad "README's Try it block not found ($n commands)"

finish
