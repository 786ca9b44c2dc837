#!/usr/bin/env bash
# llmprof serve when things go wrong: a run that ignores SIGTERM is killed after its cancel
# (and nothing of its process group is left), a run a kill -9'd server left going is stopped
# by the next server, and rows planted in the index while the server was down (an id that is a path, a request that is not one) run nothing and end failed.
# Usage: serve_robust.sh LLMPROF FAKE_CUDA_APP
set -u
LP=$1 FAKE=$2
source "$(dirname "$0")/cli_lib.sh"
T=$(mktemp -d /tmp/lp_robust.XXXXXX)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; pkill -f "^/bin/sh $T/stubborn" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
S=$((100000 + RANDOM)) # the stubborn run's sleep, told apart from any other process
printf 'trap "" TERM\nsleep %s &\nwait\n' "$S" >"$T/stubborn.sh"
start() {
    "$LP" serve --runs "$T/runs" --listen 127.0.0.1:0 --runner "fake=$FAKE 0" \
        --runner "stubborn=/bin/sh $T/stubborn.sh" >"$T/out" 2>"$T/err" &
    PID=$!
    for _ in $(seq 50); do grep -q listening "$T/out" && break; sleep 0.1; done
    URL=$(grep -o 'http://[0-9.:]*/' "$T/out")
}
source "$(dirname "$0")/serve_lib.sh"
start
ID=$(field "$(api POST runs "{\"runner\": \"stubborn\", \"model_path\": \"/\", \"input_dir\": \"$T\"}")" run_id)
for _ in $(seq 100); do [ "$(field "$(api GET "runs/$ID")" status)" = running ] && break; sleep 0.1; done
sleep 1 # its shell has set its trap
t0=$(date +%s)
OUT=$(api DELETE "runs/$ID")
[ "$(field "$OUT" status)" = running ] || bad "DELETE of the running stubborn run: $OUT"
for _ in $(seq 150); do OUT=$(api GET "runs/$ID"); [ "$(field "$OUT" status)" = running ] || break; sleep 0.1; done
t1=$(date +%s)
[ "$(field "$OUT" status)" = cancelled ] && [ $((t1 - t0)) -le 15 ] &&
    ok "a run that ignores SIGTERM is cancelled all the same ($((t1 - t0)) s)" || bad "stubborn: $OUT after $((t1 - t0)) s"
sleep 0.5
pgrep -f "^/bin/sh $T/stubborn.sh|^sleep $S$" >/dev/null &&
    bad "the stubborn run's processes are left: $(pgrep -af "^/bin/sh $T/stubborn.sh|^sleep $S$")" ||
    ok "nothing of its process group is left"
# a server killed with -9 mid-run leaves the run going; the next server stops it
ID=$(field "$(api POST runs "{\"runner\": \"stubborn\", \"model_path\": \"/\", \"input_dir\": \"$T\"}")" run_id)
for _ in $(seq 100); do [ "$(field "$(api GET "runs/$ID")" status)" = running ] && break; sleep 0.1; done
for _ in $(seq 50); do pgrep -f "^sleep $S$" >/dev/null && break; sleep 0.1; done
kill -9 "$PID"; wait "$PID" 2>/dev/null; PID=
pgrep -f "^sleep $S$" >/dev/null && ok "a run outlives its server's kill -9" || bad "no orphan to hunt"
start
for _ in $(seq 50); do pgrep -f "^sleep $S$" >/dev/null || break; sleep 0.1; done
OUT=$(api GET "runs/$ID")
! pgrep -f "^sleep $S$" >/dev/null && [ "$(field "$OUT" status)" = failed ] &&
    ok "the next server killed what the interrupted run left, and marked it failed" ||
    bad "orphan: $(pgrep -af "^sleep $S$") $OUT"
kill "$PID"; wait "$PID"; PID=
# rows planted while the server was down
python3 - "$T/runs/index.db" "$T" <<'PY'
import json, sqlite3, sys
db, t = sys.argv[1:3]
c = sqlite3.connect(db)
good = {"runner": "fake", "model_path": "/", "input_dir": t, "repeats": 3, "device": "cuda:0",
        "max_new_tokens": 64, "use_flash_attn": False, "tag": "default"}
rows = [("../../escaped", json.dumps(good)),
        ("20261127-000000-aaaaaa", json.dumps(dict(good, model_path="--evil-option"))),
        ("20261127-000000-bbbbbb", "not json"),
        ("20261127-000000-cccccc", json.dumps(good))]
for i, (rid, req) in enumerate(rows):
    c.execute("INSERT INTO runs(id, seq, status, runner, tag, request, created) VALUES"
              "(?, ?, 'queued', 'fake', 'default', ?, '2026-11-27T00:00:00Z')", (rid, 100 + i, req))
c.commit()
PY
start
for _ in $(seq 200); do [ "$(field "$(api GET runs/20261127-000000-cccccc)" status)" = done ] && break; sleep 0.1; done
STATUSES=$(python3 - "$T/runs/index.db" <<'PY'
import sqlite3, sys
for r in sqlite3.connect(sys.argv[1]).execute("SELECT id, status FROM runs WHERE seq >= 100 ORDER BY seq"):
    print(*r)
PY
)
[ "$STATUSES" = "../../escaped failed
20261127-000000-aaaaaa failed
20261127-000000-bbbbbb failed
20261127-000000-cccccc done" ] && ok "planted rows end failed, the good one after them runs" || bad "planted: $STATUSES"
[ ! -e "$T/escaped" ] && [ ! -e "$T/escaped.log" ] && ! grep -rq -- "--evil-option" "$T/runs/logs" &&
    ok "a planted row wrote nothing outside the runs and passed no option" || bad "planted row escaped: $(ls "$T")"
finish
