#!/usr/bin/env bash
# llmprof serve's web page in headless Chromium: it lists the runs with their status and
# headline, shows a run's end when loaded again (it reloads itself every 5 s: checked by its
# meta tag, not by waiting),
# opens a run's report.html, and logs no console error. Without Chromium: one skip line.
# The slow runner sleeps two minutes: it is cancelled once the first load has shown it.
# Usage: serve_page.sh LLMPROF FAKE_CUDA_APP
set -u
LP=$1 FAKE=$2
source "$(dirname "$0")/cli_lib.sh"
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$CHROME" ]; then
    skip "no Chromium on this machine: the page was not checked in a browser"
    finish
    exit $?
fi
T=$(mktemp -d /tmp/lp_page.XXXXXX)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
"$LP" serve --runs "$T/runs" --listen 127.0.0.1:0 --runner "fake=$FAKE 0" \
    --runner "slow=/bin/sleep {max_new_tokens}" >"$T/out" 2>"$T/err" &
PID=$!
for _ in $(seq 50); do grep -q listening "$T/out" && break; sleep 0.1; done
URL=$(grep -o 'http://[0-9.:]*/' "$T/out")
[ -n "$URL" ] || { bad "the server did not start: $(cat "$T/err")"; finish; exit 1; }
timeout 10 "$LP" serve --runs "$T/runs" --listen 127.0.0.1:0 --runner "fake=$FAKE 0" \
    >"$T/out2" 2>&1
rc=$?
[ "$rc" -eq 1 ] && grep -q "is served by another llmprof serve" "$T/out2" &&
    ok "a second server on the same runs directory is refused" || bad "second server: $rc $(cat "$T/out2")"
post() { # JSON body: the run id
    python3 -c 'import json,sys,urllib.request as u
r=u.Request(sys.argv[1]+"runs",data=sys.argv[2].encode(),headers={"Content-Type":"application/json"})
print(json.load(u.build_opener(u.ProxyHandler({})).open(r))["run_id"])' "$URL" "$1"
}
status() {
    python3 -c 'import json,sys,urllib.request as u
print(json.load(u.build_opener(u.ProxyHandler({})).open(sys.argv[1]+"runs/"+sys.argv[2]))["status"])' \
        "$URL" "$1" 2>/dev/null
}
dom() { # URL: the page as Chromium renders it, its console messages in $T/console
    timeout 60 "$CHROME" --headless --no-sandbox --disable-gpu --no-proxy-server \
        --enable-logging=stderr --v=0 --virtual-time-budget=3000 --dump-dom "$1" \
        2>"$T/console"
}
DONE=$(post "{\"model_path\": \"/\", \"input_dir\": \"$T\", \"tag\": \"page-test\"}")
for _ in $(seq 300); do [ "$(status "$DONE")" = done ] && break; sleep 0.1; done
SLOW=$(post "{\"runner\": \"slow\", \"model_path\": \"/\", \"input_dir\": \"$T\", \"max_new_tokens\": 120}")
dom "$URL" >"$T/page1.html"
grep -q "$DONE</td><td class=\"status\">done" "$T/page1.html" && grep -q "$SLOW" "$T/page1.html" &&
    grep -q '<td>page-test</td>' "$T/page1.html" &&
    ok "the page lists the runs with their status and tag" ||
    bad "page: $(head -c 2000 "$T/page1.html")"
grep -q '<meta http-equiv="refresh" content="5">' "$T/page1.html" &&
    grep -q "$SLOW</td><td class=\"status\">\(queued\|running\)" "$T/page1.html" &&
    ok "a run still going shows so" || bad "slow run: $(grep -o "$SLOW.\{0,60\}" "$T/page1.html")"
python3 -c 'import sys,urllib.request as u
u.build_opener(u.ProxyHandler({})).open(u.Request(sys.argv[1]+"runs/"+sys.argv[2],method="DELETE"))' \
    "$URL" "$SLOW"
for _ in $(seq 150); do [ "$(status "$SLOW")" = cancelled ] && break; sleep 0.1; done # 202: under way
dom "$URL" >"$T/page2.html"
grep -q "$SLOW</td><td class=\"status\">cancelled" "$T/page2.html" &&
    ok "the page shows the run's end (cancelled) on the next load" || bad "page after: $(grep -o "$SLOW.\{0,60\}" "$T/page2.html")"
dom "${URL}runs/$DONE/artifacts/report.html" >"$T/report.html"
grep -q "llmprof" "$T/report.html" && ok "a run's report.html opens from the page's link" ||
    bad "report.html: $(head -c 500 "$T/report.html")"
dom "$URL" >/dev/null
if grep -i "console.*error\|Uncaught" "$T/console" | grep -v "gpu\|GPU\|dbus\|Fontconfig" >"$T/errors"; then
    bad "console errors: $(head -5 "$T/errors")"
else
    ok "no console error"
fi
finish
