# What the shell tests of llmprof serve share (sourced after cli_lib.sh): requests to the
# server at $URL, answered as JSON, and a field of that JSON.
api() { # METHOD PATH [BODY]: the answer's JSON, or {"http": CODE, "error": ITS MESSAGE}
    python3 - "$URL" "$@" <<'PY'
import json, sys, urllib.request as u, urllib.error as e
url, method, path = sys.argv[1:4]
body = sys.argv[4].encode() if len(sys.argv) > 4 else None
r = u.Request(url + path, data=body, method=method, headers={"Content-Type": "application/json"})
try:
    print(json.dumps(json.load(u.build_opener(u.ProxyHandler({})).open(r, timeout=60))))
except e.HTTPError as x:
    try:
        msg = json.load(x).get("error")
    except ValueError:
        msg = None
    print(json.dumps({"http": x.code, "error": msg}))
PY
}
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get(sys.argv[2]))' "$1" "$2"; }
