#!/usr/bin/env bash
# llmprof serve on a full disk, made for real: a 16 MiB tmpfs in a mount namespace of this
# test's own (unshare -rm), holding the runs directory. A run that fills the disk is stopped
# and says why (its end recorded with the server's 2 MiB reserve, given up for it); a
# submission or a removal the index cannot record is a 500 that says so and changes nothing;
# reads go on; once space is back, runs run again and the reserve is set aside again, and a
# removal on a full disk goes through with it; the index stays whole (kill -9 included);
# retention that cannot write its archive leaves the run as it was.
# Usage: serve_disk.sh LLMPROF FAKE_CUDA_APP
set -u
LP=$1 FAKE=$2
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/cli_lib.sh"
if [ "${LP_IN_NAMESPACE:-}" != 1 ]; then
    if ! unshare -rm true 2>/dev/null; then
        skip "this machine refuses a mount namespace (unshare -rm): no tmpfs to fill"
        finish
        exit 77
    fi
    LP_IN_NAMESPACE=1 exec unshare -rm "$0" "$@"
fi
T=$(mktemp -d /tmp/lp_disk.XXXXXX)
PID=
cleanup() { [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null; wait 2>/dev/null; umount "$T/disk" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
mkdir -p "$T/disk"
mount -t tmpfs -o size=16m none "$T/disk" || { bad "mount a tmpfs in the namespace"; finish; exit 1; }
mkdir "$T/disk/in"
# fills the disk where the request's input_dir says, then waits to be stopped
printf 'dd if=/dev/zero of="$1/blob" bs=1M count=64 2>/dev/null\nsleep 60\n' >"$T/fill.sh"
start() {
    "$LP" serve --runs "$T/disk/runs" --listen 127.0.0.1:0 --min-free 4M --keep 100 \
        --runner "fake=$FAKE 0" --runner "fill=/bin/sh $T/fill.sh {input_dir}" \
        >"$T/out" 2>"$T/err" &
    PID=$!
    for _ in $(seq 50); do grep -q listening "$T/out" && break; sleep 0.1; done
    URL=$(grep -o 'http://[0-9.:]*/' "$T/out")
}
source "$HERE/serve_lib.sh"
wait_end() { # ID: its last status once it has ended (30 s at most)
    local st
    for _ in $(seq 300); do
        st=$(field "$(api GET "runs/$1")" status)
        case $st in done | failed | cancelled) break ;; esac
        sleep 0.1
    done
    echo "$st"
}
start
REQ="{\"model_path\": \"/\", \"input_dir\": \"$T/disk/in\""
DONE=$(field "$(api POST runs "$REQ}")" run_id)
[ "$(wait_end "$DONE")" = done ] && ok "a run on the tmpfs ends done" || bad "first run: $(api GET "runs/$DONE")"
FILL=$(field "$(api POST runs "$REQ, \"runner\": \"fill\"}")" run_id)
t0=$(date +%s)
END=$(wait_end "$FILL")
OUT=$(api GET "runs/$FILL")
[ "$END" = failed ] && [ $(($(date +%s) - t0)) -le 20 ] &&
    grep -q "the disk of the runs directory had [0-9]* MiB free" <<<"$OUT" &&
    ok "a run that fills the disk is stopped, failed, and says why" || bad "filling run: $END $OUT"
[ ! -e "$T/disk/runs/reserve" ] && ok "its end was recorded with the server's reserve, given up" ||
    bad "reserve still there: $(ls -la "$T/disk/runs")"
dd if=/dev/zero of="$T/disk/in/blob2" bs=1M count=64 2>/dev/null # what the reserve gave back
OUT=$(api POST runs "$REQ}")
[ "$(field "$OUT" http)" = 500 ] && grep -q "disk full" <<<"$OUT" &&
    ok "POST /runs on a full disk: 500 that says so" || bad "POST on a full disk: $OUT"
OUT=$(api DELETE "runs/$DONE")
[ "$(field "$OUT" http)" = 500 ] && grep -q "disk full.*not removed" <<<"$OUT" &&
    [ -d "$T/disk/runs/runs/$DONE" ] && [ "$(field "$(api GET "runs/$DONE")" status)" = done ] &&
    ok "DELETE on a full disk, no reserve left: 500, the run and its files still there" ||
    bad "DELETE on a full disk: $OUT"
[ "$(field "$(api GET runs)" http)" = None ] && [ "$(field "$(api GET "runs/$DONE/artifacts")" run_id)" = "$DONE" ] &&
    ok "reads go on while the disk is full" || bad "reads on a full disk: $(api GET runs | head -c 300)"
rm -f "$T/disk/in/blob" "$T/disk/in/blob2"
AGAIN=$(field "$(api POST runs "$REQ}")" run_id)
[ "$(wait_end "$AGAIN")" = done ] && ok "with space back, a run runs to done" || bad "after: $(api GET "runs/$AGAIN")"
[ -f "$T/disk/runs/reserve" ] && ok "the reserve is set aside again" || bad "no reserve: $(ls "$T/disk/runs")"
dd if=/dev/zero of="$T/disk/in/blob" bs=1M count=64 2>/dev/null
OUT=$(api DELETE "runs/$DONE")
[ "$(field "$OUT" status)" = removed ] && [ ! -e "$T/disk/runs/runs/$DONE" ] &&
    ok "DELETE on a full disk with the reserve: removed, its files gone" || bad "DELETE with reserve: $OUT"
kill -9 "$PID"; wait "$PID" 2>/dev/null; PID=
CHECK=$(python3 - "$T/disk/runs/index.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print(c.execute("PRAGMA integrity_check").fetchone()[0],
      *[s for (s,) in c.execute("SELECT status FROM runs ORDER BY seq")])
PY
)
[ "$CHECK" = "ok failed done" ] && ok "the index after a full disk and kill -9: whole, every run in it" ||
    bad "index: $CHECK"
# retention with no room for the archive (256 KiB left, the run holds 1 MiB that does not
# compress): the archive is not made, the run stays whole
rm -f "$T/disk/runs/reserve" "$T/disk/in/blob"
head -c 1048576 /dev/urandom >"$T/disk/runs/runs/$AGAIN/noise.bin"
dd if=/dev/zero of="$T/disk/in/room" bs=256K count=1 2>/dev/null
dd if=/dev/zero of="$T/disk/in/blob2" bs=1M count=64 2>/dev/null
rm -f "$T/disk/in/room"
OUT=$("$LP" runs "$T/disk/runs" prune --keep 0 2>&1)
RC=$?
ls "$T/disk/runs/runs" | grep -q "\.part$" && bad "a partial archive was left: $(ls "$T/disk/runs/runs")"
[ "$RC" = 1 ] && grep -q "could not archive it" <<<"$OUT" && [ -f "$T/disk/runs/runs/$AGAIN/report.md" ] &&
    [ ! -e "$T/disk/runs/runs/$AGAIN.tar.zst" ] &&
    ok "prune on a full disk: each run said, left whole, no archive half-written" || bad "prune full: $RC $OUT"
OUT=$("$LP" runs "$T/disk/runs" list 2>&1)
grep -q "$AGAIN.*whole" <<<"$OUT" && ok "the index says the run is whole" || bad "list: $OUT"
rm -f "$T/disk/in/blob" "$T/disk/in/blob2"
OUT=$("$LP" runs "$T/disk/runs" prune --keep 0 2>&1)
[ $? = 0 ] && [ -f "$T/disk/runs/runs/$AGAIN.tar.zst" ] && ok "with space back, prune archives" || bad "prune: $OUT"
finish
