# What the CLI test scripts share (sourced): TAP-like lines, counts, and `expect`.
pass=0 fail=0 skipped=0
ok() { pass=$((pass + 1)); echo "ok - $1"; }
bad() { fail=$((fail + 1)); echo "not ok - $1"; }
# a check this machine cannot run: said, never counted as passed
skip() { skipped=$((skipped + 1)); echo "skip - $1"; }
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
# the summary; the script's status: 0 when nothing failed
finish() {
    echo "$pass passed, $fail failed, $skipped skipped"
    [ "$fail" -eq 0 ]
}
