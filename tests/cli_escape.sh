#!/usr/bin/env bash
# Names that attack a terminal (an OSC title sequence, a clear-screen escape, a C1 control)
# or a Markdown table (newlines, pipes, backticks), from the trace and from meta.json, through
# llmprof info, report (two traces: each one's files and ranks.md), report --baseline and
# diff: nothing they print or write as text may hold a control byte (the newline aside), and
# the escapes must show (docs/report.md). test_escape --write makes the traces.
# usage: cli_escape.sh LLMPROF TEST_ESCAPE
set -u
L=$1 MAKE=$2
. "$(dirname "$0")/cli_lib.sh"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# a control byte other than the newline, DEL, or a C1 character (UTF-8 C2 80..C2 9F)
raw() { LC_ALL=C grep -q -P '[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' "$1"; }
# FILE is clean and shows an escaped ESC
check() {
    local f=$1 what=$2
    if [ ! -s "$f" ]; then bad "$what: empty or missing"; return; fi
    if raw "$f"; then bad "$what holds a raw control byte: $(LC_ALL=C grep -n -m1 -a -P \
        '[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' "$f" | cat -v | cut -c1-200)"
    elif ! grep -q -F '\x1b' "$f"; then bad "$what shows no escaped name (\\x1b)"
    else ok "$what: no raw control byte, names escaped"; fi
}
# a command's status 0, its stderr clean: ran RC ERR WHAT
ran() {
    if [ "$1" -eq 0 ]; then ok "$3"; else bad "$3: status $1: $(cat -v "$2")"; fi
    if raw "$2"; then bad "$3: stderr holds a raw control byte"; else ok "$3: stderr clean"; fi
}

mkdir "$T/run"
if ! "$MAKE" --write "$T/run/trace-0.lpt" a >"$T/log" 2>&1 ||
    ! "$MAKE" --write "$T/run/trace-1.lpt" b >>"$T/log" 2>&1; then
    bad "test_escape --write: $(cat "$T/log")"
    finish
    exit 1
fi
cp "$T/run/trace-0.lpt" "$T/one.lpt"
cp "$T/run/trace-1.lpt" "$T/base.lpt"
# meta.json as record writes it, its strings hostile too (JSON's \u escapes)
cat >"$T/run/meta.json" <<'EOF'
{"format": "llmprof-run", "command": ["python3", "x\u001b]0;pwned\u0007.py", "\u001b[2J\n| row |"],
 "status": "exited\u001b[2J", "exit_code": 0, "duration_s": 1.5,
 "start_time": "2025-01-01T00:00:00\u0007"}
EOF

"$L" info "$T/run" >"$T/info.out" 2>"$T/info.err"
ran $? "$T/info.err" "info of the run"
check "$T/info.out" "info's output"
for w in 'x\x1b]0;pwned\x07.py \x1b[2J\x0a| row |' 'exited\x1b[2J' 'on node\x1b]0;pwned\x07|7' \
    'mode full\x1b[2J' 'GPU \x1b]0;pwned\x07|\xc2\x9b31m\x0a| forged | row |' \
    'lost \x1b]0;pwned\x07\x0a| forged | row |'; do
    if grep -q -F -- "$w" "$T/info.out"; then ok "info shows $w"; else bad "info lacks $w"; fi
done

# a stage named by a rule: the analysis takes its name as given
stages=(--stage 'prefill=^prefill' --stage 'decode=^decode'
    --stage $'ev\x1b[2Jil|st\n| x |=^hostile')
"$L" report "$T/run" -o "$T/out" "${stages[@]}" >"$T/report.out" 2>"$T/report.err"
ran $? "$T/report.err" "report of two traces"
check "$T/report.out" "report's printed summary"
for f in trace-0/report.md trace-0/summary.md trace-0/kernels.csv trace-0/operators.csv \
    trace-0/stages.csv trace-0/gemms.csv trace-1/report.md ranks.md ranks.csv; do
    check "$T/out/$f" "$f"
done
if raw "$T/out/trace-0/iterations.csv"; then bad "iterations.csv holds a raw control byte"; else
    ok "iterations.csv clean"; fi

"$L" report "$T/one.lpt" --baseline "$T/base.lpt" -o "$T/vs" >"$T/vs.out" 2>"$T/vs.err"
ran $? "$T/vs.err" "report --baseline"
check "$T/vs.out" "report --baseline's printed summary and headline"
check "$T/vs/diff.md" "diff.md beside the report"

"$L" diff "$T/base.lpt" "$T/one.lpt" >"$T/diff.out" 2>"$T/diff.err"
ran $? "$T/diff.err" "diff"
check "$T/diff.out" "diff's diff.md on stdout"
finish
