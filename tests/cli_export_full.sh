#!/usr/bin/env bash
# llmprof export --sqlite on a disk that fills up, without filling one: a file size limit
# (ulimit -f, with SIGXFSZ ignored so that the write fails with EFBIG rather than killing
# llmprof) stops the database while its tables are made, while rows go in (a write refused
# whole, and a short one), and near its end. Each time the export fails with status 1,
# names the file and the system's cause ("File too large"; SQLite's own words were "not an
# error" or "database disk image is malformed"), leaves no temporary file, and leaves a
# database already at FILE.db (replaced only by --force, once the new one is whole) as it was.
# usage: cli_export_full.sh LLMPROF FIXTURES
set -u
L=$1 FIX=$2
. "$(dirname "$0")/cli_lib.sh"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
RUN=$FIX/llama

expect 0 "wrote $T/full.db" "the export fits without a limit" -- \
    "$L" export "$RUN" --sqlite "$T/full.db"
full_kib=$(( $(stat -c %s "$T/full.db") / 1024 ))

# LIMIT (KiB) WHAT [OLD]: the export under the limit; OLD: FILE.db exists before and must stay
limited() {
    local lim=$1 what=$2 old=${3:-} out rc
    rm -f "$T/run.db"
    [ -n "$old" ] && printf 'an earlier database\n' >"$T/run.db"
    out=$( (trap '' XFSZ; ulimit -f "$lim"; exec "$L" export "$RUN" --sqlite "$T/run.db" ${old:+--force}) 2>&1)
    rc=$?
    if [ "$rc" -eq 1 ] && grep -q "$T/run.db: .*File too large" <<<"$out"; then
        ok "$what: the file and the system's cause are said"
    else
        bad "$what: status $rc, wanted 1 and 'File too large' (output: $out)"
    fi
    if grep -q -e "not an error" -e "malformed" <<<"$out"; then
        bad "$what: a later error hides the cause: $out"
    fi
    local left
    left=$(ls -A "$T" | grep -v -x -e full.db -e run.db)
    if [ -z "$left" ]; then ok "$what: no temporary file left"; else
        bad "$what: left behind: $left"; rm -f "$T"/.run.db.*; fi
    if [ -n "$old" ]; then
        if [ "$(cat "$T/run.db" 2>/dev/null)" = "an earlier database" ]; then
            ok "$what: the earlier FILE.db is unchanged"
        else bad "$what: the earlier FILE.db was replaced or removed"; fi
    elif [ -e "$T/run.db" ]; then
        bad "$what: an incomplete FILE.db was moved in"
    fi
}

limited 4 "a limit of 4 KiB (the tables)"
limited 256 "a limit of 256 KiB (a whole page refused)"
limited 257 "a limit of 257 KiB (a short write)" old
limited $((full_kib - 12)) "a limit 12 KiB short of the database (its end)" old
finish
