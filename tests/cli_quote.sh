#!/usr/bin/env bash
# llmprof deep --dry-run prints the ncu command as a line for sh (issue 52): the words of the
# recorded command (meta.json) and of a command given after '--' come back byte for byte
# when the line is run, none of them runs anything of its own (quotes, $(...), backticks),
# and no control byte reaches the terminal raw. ncu is a stand-in that writes its arguments,
# NUL-separated, to $ARGV_OUT.
# usage: cli_quote.sh LLMPROF FIXTURES
set -u
L=$1 FIX=$2
. "$(dirname "$0")/cli_lib.sh"
T=$(mktemp -d /tmp/lp_quote.XXXXXX)
trap 'rm -rf "$T"' EXIT
cp -r "$FIX/deep-llama3-8b" "$T/r"
rm -rf "$T/r/deep"
NCU="$T/fake ncu's"
printf '#!/bin/sh\nprintf "%%s\\0" "$@" >"$ARGV_OUT"\n' >"$NCU"
chmod +x "$NCU"

# hostile words in the recorded command; JSON holds no NUL and only UTF-8
T=$T python3 - <<'EOF'
import json, os
t = os.environ["T"]
m = json.load(open(t + "/r/meta.json"))
m["command"] = ["prog", "'; touch %s/pwned; '" % t, "$(touch %s/pwned2)" % t,
                "`touch %s/pwned3`" % t, "a`b", "two words", "line\nbreak", "tail\n", "\n",
                "\x1b[31mred\x1b]0;title\x07", "", "'", "pct%d back\\slash \"dq\" $HOME *",
                "é 日本", "\u009b6n", "x=y", "\x01\x7f", "-n", "a'b'c", "rtl\u202eevil"]
json.dump(m, open(t + "/r/meta.json", "w"))
EOF

# check NAME SHELL OUT WORDS_FILE: the dry run's output OUT, run by SHELL, gives ncu the words
# of WORDS_FILE (NUL-separated) last, and nothing else runs
check() {
    local name=$1 shell=$2 out=$3 words=$4 line
    # the command: from the line that starts with ncu's path (quoted: it holds a space) on
    line=$(awk -v p="'$T/" 'index($0, p) == 1 { on = 1 } on' <<<"$out")
    if [ -z "$line" ]; then bad "$name: no command line in: $(cat -v <<<"$out" | tail -c 300)"; return; fi
    if ! "$shell" -n -c "$line" 2>"$T/syntax"; then bad "$name: $shell -n: $(cat -v "$T/syntax" | tail -c 300)"; return; fi
    rm -f "$T"/pwned* "$T/argv"
    (cd "$T" && ARGV_OUT=$T/argv "$shell" -c "$line") >/dev/null 2>&1
    if python3 - "$T/argv" "$words" <<'EOF'; then ok "$name: every word arrives byte for byte"
import sys
got = open(sys.argv[1], "rb").read().split(b"\0")[:-1]
want = open(sys.argv[2], "rb").read().split(b"\0")[:-1]
if got[:3] != [b"--config-file", b"off", b"-o"] or got[-len(want):] != want:
    print("got:", got[-len(want):], file=sys.stderr)
    sys.exit(1)
EOF
    else bad "$name: the words differ (or ncu did not run)"; fi
    if ls "$T"/pwned* >/dev/null 2>&1; then bad "$name: a word ran a command: $(ls "$T"/pwned*)"
    else ok "$name: no word ran a command"; fi
}

out=$("$L" deep "$T/r" --dry-run --ncu "$NCU" 2>&1)
rc=$?
[ "$rc" -eq 0 ] && ok "deep --dry-run of a hostile recorded command: status 0" ||
    bad "deep --dry-run: status $rc: $out"
python3 -c 'import json, sys
sys.stdout.buffer.write(b"".join(w.encode() + b"\0" for w in json.load(open(sys.argv[1]))["command"]))' \
    "$T/r/meta.json" >"$T/words"
# no byte a terminal obeys: C0 controls but newline, DEL, C1 controls (raw or as UTF-8)
if LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]\|\xc2[\x80-\x9f]' <<<"$out"; then
    bad "a control byte is printed raw: $(cat -v <<<"$out" | tail -c 400)"
else ok "no control byte printed raw (ESC, BEL, DEL, C1 written by printf)"; fi
# nor a bidirectional control (U+202E, a right-to-left override, reorders the line shown)
if LC_ALL=C grep -q $'\xe2\x80\xae' <<<"$out"; then bad "a right-to-left override is printed raw"
else ok "no bidirectional control printed raw"; fi
grep -q -- " --config-file off -o " <<<"$out" && grep -q " '' " <<<"$out" &&
    grep -q " x=y " <<<"$out" && grep -qF " ''\\''' " <<<"$out" &&
    ok "plain words bare, the empty word '', a quote '\\''" || bad "quoting: $(cat -v <<<"$out" | tail -c 400)"
check "sh" sh "$out" "$T/words"
if command -v bash >/dev/null; then check "bash" bash "$out" "$T/words"; fi

# words given after '--' may be any bytes: not UTF-8, an OSC, a trailing newline
printf '%s\0' prog $'\xff\xfe' $'\e]0;x\a' $'\xc3' $'%s\\0' $'end\n\n' >"$T/words2"
out=$("$L" deep "$T/r" --dry-run --ncu "$NCU" -- prog $'\xff\xfe' $'\e]0;x\a' $'\xc3' \
    $'%s\\0' $'end\n\n' 2>&1)
if LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]\|[\x80-\xff]' <<<"$out"; then
    bad "a byte that is not printable UTF-8 is printed raw: $(cat -v <<<"$out" | tail -c 300)"
else ok "bytes that are not UTF-8 written by printf"; fi
check "sh, a command after '--'" sh "$out" "$T/words2"
finish
