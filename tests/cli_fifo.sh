#!/usr/bin/env bash
# Inputs that are not regular files (issue 52): a FIFO (nobody writes it), a socket or a
# device given as the run, as a trace, as --baseline or diff's operand, or lying in a run
# directory named like a trace or meta.json, is refused with status 1 (an input that cannot
# be used, as a missing one: README's "Exit status") and its path named,
# before anything opens it: every command runs under `timeout 10`, so one that waits shows
# as status 124 rather than hanging the test. A link to a regular trace is still read.
# usage: cli_fifo.sh LLMPROF FIXTURES
set -u
L=$1 FIX=$2
. "$(dirname "$0")/cli_lib.sh"
T=$(mktemp -d /tmp/lp_fifo.XXXXXX)
trap 'rm -rf "$T"' EXIT
RUN=$(cd "$FIX/hf-moe" && pwd)
TRACE=$(ls "$RUN"/*.lpt)

mkfifo "$T/fifo.lpt"
# a run directory whose only trace is a FIFO (beside a real meta.json)
mkdir "$T/fifotrace" && cp "$RUN/meta.json" "$T/fifotrace/" && mkfifo "$T/fifotrace/trace.x.1.lpt"
# a run whose trace is real and whose meta.json is a FIFO
mkdir "$T/fifometa" && cp "$TRACE" "$T/fifometa/" && mkfifo "$T/fifometa/meta.json"
# a report directory (no run) whose report.json is a FIFO
mkdir "$T/fiforeport" && mkfifo "$T/fiforeport/report.json"
# a socket, and a character device
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$T/sock.lpt"

# fifo PATH WHAT -- COMMAND...: refused with status 1 naming PATH, within 10 s
fifo() {
    local path=$1 what=$2
    shift 3
    expect 1 "$path is a" "$what" -- timeout 10 "$@"
}

for p in "$T/fifo.lpt" "$T/fifotrace/trace.x.1.lpt"; do
    case $p in "$T/fifo.lpt") run=$p where="a FIFO as RUN" ;; *) run=$T/fifotrace where="a FIFO trace in RUN" ;; esac
    fifo "$p" "info: $where" -- "$L" info "$run"
    fifo "$p" "report: $where" -- "$L" report "$run" -o "$T/out" --quiet
    fifo "$p" "export --sqlite: $where" -- "$L" export "$run" --sqlite "$T/out.db"
    fifo "$p" "export --perfetto: $where" -- "$L" export "$run" --perfetto "$T/out.json"
    fifo "$p" "diff: $where, first" -- "$L" diff "$run" "$RUN"
    fifo "$p" "diff: $where, second" -- "$L" diff "$RUN" "$run"
    fifo "$p" "report --baseline: $where" -- "$L" report "$RUN" --baseline "$run" -o "$T/out" --quiet
done
fifo "$T/fifotrace/trace.x.1.lpt" "deep --dry-run: a FIFO trace in RUN" -- "$L" deep "$T/fifotrace" --dry-run
# a meta.json that is a FIFO is read for the command line: refused too
m=$T/fifometa/meta.json
fifo "$m" "info: a FIFO meta.json" -- "$L" info "$T/fifometa"
fifo "$m" "report: a FIFO meta.json" -- "$L" report "$T/fifometa" -o "$T/out" --quiet
fifo "$m" "export: a FIFO meta.json" -- "$L" export "$T/fifometa" --perfetto "$T/out.json"
fifo "$m" "diff: a FIFO meta.json" -- "$L" diff "$T/fifometa" "$RUN"
fifo "$m" "report --baseline: a FIFO meta.json" -- "$L" report "$RUN" --baseline "$T/fifometa" -o "$T/out" --quiet
fifo "$T/fiforeport/report.json" "diff: a report directory whose report.json is a FIFO" -- \
    "$L" diff "$T/fiforeport" "$RUN"
fifo "$T/sock.lpt" "export: a socket as RUN" -- "$L" export "$T/sock.lpt" --perfetto "$T/out.json"
expect 1 "/dev/null is a character device" "export: a character device as RUN" -- \
    timeout 10 "$L" export /dev/null --perfetto "$T/out.json"
fifo /dev/null "info: a character device as RUN" -- "$L" info /dev/null
if ls "$T"/out* >/dev/null 2>&1; then bad "a refused command wrote $(ls -d "$T"/out*)"; else
    ok "no refused command wrote an output"; fi

# what is regular still goes through: a link to a trace, and the run it is in
ln -s "$TRACE" "$T/link.lpt"
expect 0 "" "export of a link to a trace" -- timeout 60 "$L" export "$T/link.lpt" --perfetto "$T/ok.json"
expect 0 "" "info of a link to a trace" -- timeout 60 "$L" info "$T/link.lpt"
[ -p "$T/fifo.lpt" ] && [ -p "$T/fifotrace/trace.x.1.lpt" ] && ok "the FIFOs are left as they were" ||
    bad "a FIFO was replaced"
finish
