"""`llmprof serve` against its contract, docs/openapi.yaml (the source of truth).

usage: python3 tests/serve_api.py [LLMPROF [FAKE_APP]]
(default build/bin/llmprof and build/bin/fake_cuda_app)

A small OpenAPI validator (the subset the YAML uses) is checked on good and bad instances;
then servers are started on temporary run directories and every path and method of the YAML
is exercised, each response's status, Content-Type and body checked against the contract:
runs of the fake CUDA app to done (headline, artifacts, report.md), the runner template's
arguments, a failing runner, the bounded queue (429) and cancelling, path traversal and
planted symlinks, bad requests of every class, the bearer token, the refusal of a public
address without one, restart persistence, recovery after kill -9, and a bounded load test.
Prints "ok - ..." / "not ok - ..." lines and a summary; exits 1 on any failure."""
import datetime
import http.client
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC_FILE = os.path.join(ROOT, "docs", "openapi.yaml")
LISTEN_RE = re.compile(r"^llmprof serve: listening on http://(\S+):(\d+)/ \(runs in (.+)\)$")
RUN_ID_RE = re.compile(r"^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$")
ISO_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|\+00:00)$")
FINAL = ("done", "failed", "cancelled")
DEFAULT = object()          # "the server's own token" in Server.call
MAX_BODY = 64 * 1024
WATCHDOG_S = 240            # a hung server fails the test instead of hanging it
FIRST_RUNNER = "fake"      # runner_args() gives it first
# answered on a full disk, which tests/serve_disk.sh makes (a tmpfs of its own) and checks
ELSEWHERE = {"POST /runs 500", "DELETE /runs/{run_id} 500"}

# filled by main()
LLMPROF = FAKE = TMP = MODEL = INPUT = None
SPEC = None
CONTRACT = None
PROCS = []                  # every Popen this test started
SPAWNING = False            # spawn() is between Popen and PROCS.append
PENDING = None              # the signal give_up() left to spawn()


# ---------------------------------------------------------------------------- reporting

class Tally:
    """Counts and prints the checks; safe to use from several threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.passed = 0
        self.failed = 0
        self.failures = []   # repeated at the end: CI shows only the output's head and tail

    def check(self, cond, what, detail=""):
        """One TAP-like line; the detail is shown only when the check failed."""
        cond = bool(cond)
        with self.lock:
            if cond:
                self.passed += 1
                print("ok - " + what, flush=True)
            else:
                self.failed += 1
                extra = f" ({str(detail)[:600]})" if detail != "" else ""
                self.failures.append(what + extra)
                print("not ok - " + what + extra, flush=True)
        return cond


T = Tally()
check = T.check


def note(text):
    """A diagnostic line (not a check)."""
    with T.lock:
        for line in str(text).splitlines():
            print("# " + line, flush=True)


# ---------------------------------------------------------------------------- the validator

KNOWN_KEYWORDS = {
    "$ref", "type", "nullable", "required", "properties", "additionalProperties", "enum",
    "pattern", "minimum", "maximum", "maxLength", "minLength", "items",
    # annotations, no assertion
    "description", "default", "format", "example", "title",
}


def resolve(spec, ref):
    """The node a local reference (#/components/...) names; KeyError when none."""
    if not ref.startswith("#/"):
        raise KeyError(f"only local references are supported: {ref}")
    node = spec
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def ecma_pattern(pattern):
    """An ECMA-262 regex as Python's: '$' ends the string only (Python's also matches
    before a final newline)."""
    out, in_class, i = [], False, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if c == "[":
            in_class = True
        elif c == "]":
            in_class = False
        out.append("\\Z" if c == "$" and not in_class else c)
        i += 1
    return re.compile("".join(out), re.ASCII)


def type_ok(value, typ):
    """Whether a JSON value has an OpenAPI type (a boolean is no integer or number)."""
    if typ == "object":
        return isinstance(value, dict)
    if typ == "array":
        return isinstance(value, list)
    if typ == "string":
        return isinstance(value, str)
    if typ == "boolean":
        return isinstance(value, bool)
    if typ == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if typ == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    raise ValueError(f"unknown type {typ!r}")


def same_value(a, b):
    """JSON equality that keeps true apart from 1."""
    return type(a) is type(b) and a == b


def validate(instance, schema, spec=None, where="$"):
    """The list of ways instance breaks schema (empty when it conforms)."""
    spec = SPEC if spec is None else spec
    if not isinstance(schema, dict):
        return [f"{where}: schema is not an object: {schema!r}"]
    if "$ref" in schema:     # OpenAPI 3.0: a $ref's siblings are ignored
        try:
            target = resolve(spec, schema["$ref"])
        except (KeyError, TypeError) as e:
            return [f"{where}: unresolvable $ref {schema['$ref']!r}: {e}"]
        return validate(instance, target, spec, where)
    errors = []
    unknown = sorted(set(schema) - KNOWN_KEYWORDS)
    if unknown:
        errors.append(f"{where}: schema keyword(s) this validator does not know: {unknown}")
    if instance is None:
        if not schema.get("nullable", False) and ("type" in schema or "enum" in schema):
            errors.append(f"{where}: null, but the schema is not nullable")
        return errors
    typ = schema.get("type")
    if typ is not None:
        try:
            if not type_ok(instance, typ):
                return errors + [f"{where}: {type(instance).__name__} "
                                 f"{json.dumps(instance)[:60]}, wanted {typ}"]
        except ValueError as e:
            return errors + [f"{where}: {e}"]
    if "enum" in schema and not any(same_value(instance, e) for e in schema["enum"]):
        errors.append(f"{where}: {instance!r} is not one of {schema['enum']}")
    if isinstance(instance, str):
        if "pattern" in schema and not ecma_pattern(schema["pattern"]).search(instance):
            errors.append(f"{where}: {instance[:60]!r} does not match {schema['pattern']}")
        if "maxLength" in schema and len(instance) > schema["maxLength"]:
            errors.append(f"{where}: {len(instance)} characters, at most {schema['maxLength']}")
        if "minLength" in schema and len(instance) < schema["minLength"]:
            errors.append(f"{where}: {len(instance)} characters, at least {schema['minLength']}")
    if isinstance(instance, (int, float)) and not isinstance(instance, bool):
        if "minimum" in schema and instance < schema["minimum"]:
            errors.append(f"{where}: {instance} is below the minimum {schema['minimum']}")
        if "maximum" in schema and instance > schema["maximum"]:
            errors.append(f"{where}: {instance} is above the maximum {schema['maximum']}")
    if isinstance(instance, list) and "items" in schema:
        for i, item in enumerate(instance):
            errors += validate(item, schema["items"], spec, f"{where}[{i}]")
    if isinstance(instance, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in instance:
                errors.append(f"{where}: required property {name!r} missing")
        extra = schema.get("additionalProperties", True)
        for name, value in instance.items():
            if name in props:
                errors += validate(value, props[name], spec, f"{where}.{name}")
            elif extra is False:
                errors.append(f"{where}: property {name!r} is not allowed")
            elif isinstance(extra, dict):
                errors += validate(value, extra, spec, f"{where}.{name}")
    return errors


def spec_schemas(spec):
    """Every schema object the document holds, nested ones too, as (where, schema)."""
    found = []

    def walk(schema, where):
        """Keeps schema and descends into its sub-schemas."""
        if not isinstance(schema, dict):
            found.append((where, schema))
            return
        found.append((where, schema))
        for name, sub in schema.get("properties", {}).items():
            walk(sub, f"{where}.properties.{name}")
        if "items" in schema:
            walk(schema["items"], f"{where}.items")
        if isinstance(schema.get("additionalProperties"), dict):
            walk(schema["additionalProperties"], f"{where}.additionalProperties")

    comps = spec.get("components", {})
    for name, s in comps.get("schemas", {}).items():
        walk(s, f"schemas.{name}")
    for name, p in comps.get("parameters", {}).items():
        walk(p.get("schema", {}), f"parameters.{name}")
    for name, r in comps.get("responses", {}).items():
        for media, c in r.get("content", {}).items():
            walk(c.get("schema", {}), f"responses.{name}.{media}")
    for path, item in spec.get("paths", {}).items():
        for p in item.get("parameters", []):
            if "schema" in p:
                walk(p["schema"], f"{path}.parameters.{p.get('name')}")
        for method, op in item.items():
            if not isinstance(op, dict) or method == "parameters":
                continue
            for media, c in op.get("requestBody", {}).get("content", {}).items():
                walk(c.get("schema", {}), f"{method} {path} body {media}")
            for code, r in op.get("responses", {}).items():
                for media, c in r.get("content", {}).items():
                    walk(c.get("schema", {}), f"{method} {path} {code} {media}")
    return found


def self_test_validator():
    """The validator on instances whose verdict is known, and on the YAML's own keywords."""
    run_ref = {"$ref": "#/components/schemas/Run"}
    req_ref = {"$ref": "#/components/schemas/LLMProfileRequest"}
    good_req = {"model_path": "/m", "input_dir": "/d"}
    full_req = dict(good_req, runner="fake", repeats=1000, use_flash_attn=True,
                    device="cuda:123", max_new_tokens=2, tag="a" * 64)
    run = {"run_id": "20261127-081500-a1b2c3", "status": "queued", "runner": "fake",
           "tag": "default", "request": good_req, "created": "2026-11-27T08:15:00Z",
           "started": None, "finished": None, "exit_status": None,
           "artifacts_dir": "/r/runs/20261127-081500-a1b2c3", "headline": None, "error": None,
           "archive": None, "trimmed": None}
    done = dict(run, status="done", started="x", finished="y", exit_status=0,
                headline={"ttft_s": 0.5, "tpot_s": 0.01, "mfu": None})

    def without(d, key):
        """d less key."""
        return {k: v for k, v in d.items() if k != key}

    cases = [  # (what, instance, schema, wanted error substring or None when it conforms)
        ("a minimal request", good_req, req_ref, None),
        ("a request with every field at its limit", full_req, req_ref, None),
        ("a queued run, nulls where nullable", run, run_ref, None),
        ("a done run with a headline (an integer as a number too)",
         dict(done, headline={"ttft_s": 1, "tpot_s": 0.01, "mfu": 0.3}), run_ref, None),
        ("an archived, trimmed run",
         dict(done, archive={"name": "x.tar.zst", "bytes": 1, "files": 2, "bytes_before": 3},
              trimmed={"cap_bytes": 1, "bytes_before": 3, "bytes_after": 2, "over_cap": True,
                       "removed": [{"name": "t.lpt", "bytes": 1}]}), run_ref, None),
        ("an archive without its size", dict(done, archive={"name": "x", "files": 2,
                                                            "bytes_before": 3}),
         run_ref, "bytes"),
        ("an artifact list", {"run_id": "x", "archived": False,
                              "artifacts": [{"name": "a/b", "bytes": 0}]},
         contract_schema("/runs/{run_id}/artifacts", "get", "200"), None),
        ("an error", {"error": "bad"}, {"$ref": "#/components/schemas/Error"}, None),
        ("a request without input_dir", without(good_req, "input_dir"), req_ref, "input_dir"),
        ("a request with a command", dict(good_req, command="sh"), req_ref, "command"),
        ("repeats 0", dict(good_req, repeats=0), req_ref, "repeats"),
        ("repeats 1001", dict(good_req, repeats=1001), req_ref, "repeats"),
        ("repeats true (a boolean is no integer)", dict(good_req, repeats=True), req_ref,
         "repeats"),
        ("repeats 2.5", dict(good_req, repeats=2.5), req_ref, "repeats"),
        ("repeats \"3\"", dict(good_req, repeats="3"), req_ref, "repeats"),
        ("max_new_tokens 1", dict(good_req, max_new_tokens=1), req_ref, "max_new_tokens"),
        ("use_flash_attn 1", dict(good_req, use_flash_attn=1), req_ref, "use_flash_attn"),
        ("device cpu", dict(good_req, device="cpu"), req_ref, "device"),
        ("device cuda:1234", dict(good_req, device="cuda:1234"), req_ref, "device"),
        ("a tag ending in a newline ($ is the end)", dict(good_req, tag="ok\n"), req_ref,
         "tag"),
        ("a tag of 65 characters", dict(good_req, tag="a" * 65), req_ref, "tag"),
        ("an empty tag", dict(good_req, tag=""), req_ref, "tag"),
        ("model_path of 4097 characters", dict(good_req, model_path="/" + "a" * 4096),
         req_ref, "model_path"),
        ("runner null (not nullable)", dict(good_req, runner=None), req_ref, "runner"),
        ("a request that is an array", [good_req], req_ref, "wanted object"),
        ("a run with status paused", dict(run, status="paused"), run_ref, "status"),
        ("a run without error", without(run, "error"), run_ref, "error"),
        ("a run whose headline lacks mfu", dict(done, headline={"ttft_s": 1, "tpot_s": 1}),
         run_ref, "mfu"),
        ("a headline with an extra key",
         dict(done, headline={"ttft_s": 1, "tpot_s": 1, "mfu": 1, "x": 1}), run_ref, "'x'"),
        ("exit_status 1.5", dict(done, exit_status=1.5), run_ref, "exit_status"),
        ("created null", dict(run, created=None), run_ref, "created"),
        ("a request inside a run with an extra field",
         dict(run, request=dict(good_req, x=1)), run_ref, "request"),
        ("an artifact of -1 bytes",
         {"run_id": "x", "artifacts": [{"name": "a", "bytes": -1}]},
         contract_schema("/runs/{run_id}/artifacts", "get", "200"), "bytes"),
        ("a run list that is no array", {"runs": {}},
         contract_schema("/runs", "get", "200"), "runs"),
        ("an item of the run list that is no run", {"runs": [run, 3]},
         contract_schema("/runs", "get", "200"), "[1]"),
        ("accepted with status done",
         {"run_id": "x", "status": "done", "artifacts_dir": "/x"},
         {"$ref": "#/components/schemas/LLMProfileAccepted"}, "status"),
        ("an error with an extra key", {"error": "x", "code": 1},
         {"$ref": "#/components/schemas/Error"}, "code"),
        ("a run id against RunId's pattern", "20261127-081500-a1b2c3",
         resolve(SPEC, "#/components/parameters/RunId")["schema"], None),
        ("a run id of upper-case hex against RunId's pattern", "20261127-081500-A1B2C3",
         resolve(SPEC, "#/components/parameters/RunId")["schema"], "does not match"),
        ("a keyword the validator does not know", 4, {"type": "integer", "multipleOf": 3},
         "multipleOf"),
        ("a $ref that names nothing", 1, {"$ref": "#/components/schemas/Nope"}, "$ref"),
    ]
    for what, instance, schema, wanted in cases:
        errors = validate(instance, schema)
        if wanted is None:
            check(not errors, f"validator: {what} conforms", errors)
        else:
            check(errors and any(wanted in e for e in errors),
                  f"validator: {what} is refused, naming {wanted}", errors or "no error")
    bad = [(where, sorted(set(s) - KNOWN_KEYWORDS)) for where, s in spec_schemas(SPEC)
           if not isinstance(s, dict) or set(s) - KNOWN_KEYWORDS]
    check(not bad, "validator: knows every schema keyword docs/openapi.yaml uses", bad)
    types = {s.get("type") for _, s in spec_schemas(SPEC) if isinstance(s, dict)} - {None}
    check(types <= {"object", "array", "string", "integer", "number", "boolean"},
          "validator: knows every type docs/openapi.yaml uses", types)


def contract_schema(path, method, status, media="application/json"):
    """The response schema the YAML gives path+method+status."""
    resp = SPEC["paths"][path][method]["responses"][status]
    if "$ref" in resp:
        resp = resolve(SPEC, resp["$ref"])
    return resp["content"][media]["schema"]


# ---------------------------------------------------------------------------- the contract

class Contract:
    """The YAML's operations; checks responses and keeps what was exercised."""

    def __init__(self, spec):
        self.spec = spec
        self.ops = {}
        self.params = {}
        for path, item in spec["paths"].items():
            shared = item.get("parameters", [])
            for method, op in item.items():
                if method not in ("get", "put", "post", "delete", "patch", "head", "options"):
                    continue
                responses = {}
                for code, r in op.get("responses", {}).items():
                    responses[str(code)] = resolve(spec, r["$ref"]) if "$ref" in r else r
                self.ops[(path, method.upper())] = responses
                params = {}
                for p in shared + op.get("parameters", []):
                    p = resolve(spec, p["$ref"]) if "$ref" in p else p
                    if p.get("in") == "path":
                        params[p["name"]] = p.get("schema", {})
                self.params[(path, method.upper())] = params
        self.seen = set()
        self.checked = 0
        self.violations = 0
        self.lock = threading.Lock()

    def problems(self, template, method, params, resp):
        """Why a response breaks the contract (empty when it conforms); records it seen."""
        key = (template, method)
        if key not in self.ops:
            return [f"{method} {template} is not in the contract"]
        with self.lock:
            self.seen.add((template, method, str(resp.status)))
            self.checked += 1
        out = []
        documented = self.ops[key].get(str(resp.status))
        if documented is None:
            return [f"status {resp.status} is not one the contract lists "
                    f"({', '.join(sorted(self.ops[key]))}): {resp.data[:200]!r}"]
        content = documented.get("content", {})
        media = resp.media
        if not content:
            return out
        if media not in content:
            return [f"Content-Type {resp.ctype!r}, the contract says {sorted(content)}"]
        schema = content[media].get("schema", {})
        if media == "application/json":
            try:
                body = json.loads(resp.data.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as e:
                return [f"body is no JSON ({e}): {resp.data[:200]!r}"]
            out += validate(body, schema, self.spec)
        else:
            out += validate(resp.data.decode("latin-1"), schema, self.spec)
        if 200 <= resp.status < 300:
            for name, value in (params or {}).items():
                if name in self.params[key]:
                    out += [f"path parameter {name}: {e}"
                            for e in validate(value, self.params[key][name], self.spec)]
        return out

    def record(self, template, method, path, params, resp):
        """Checks one response; a violation is a "not ok" line of its own."""
        found = self.problems(template, method, params, resp)
        if found:
            with self.lock:
                self.violations += 1
                shown = self.violations <= 30
            if shown:   # the rest are counted by check_coverage()
                check(False, f"{method} {path} -> {resp.status} follows docs/openapi.yaml",
                      "; ".join(found))


# ---------------------------------------------------------------------------- processes

def proc_children():
    """{ppid: [pid, ...]} of every process now, from /proc."""
    kids = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode("latin-1")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        kids.setdefault(int(fields[1]), []).append(int(name))
    return kids


def descendants(pid):
    """Every process below pid (children, grandchildren, ...)."""
    kids, out, todo = proc_children(), [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def alive(pid):
    """Whether pid is a process that has not exited (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("latin-1")
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:].split()[0] not in ("Z", "X")


def cmdline(pid):
    """A process's argv, [] when gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode("latin-1").split("\0")[:-1]
    except OSError:
        return []


def kill_pids(pids, sig=signal.SIGKILL):
    """Signals each pid that is still alive, one by one."""
    for pid in pids:
        if alive(pid):
            try:
                os.kill(pid, sig)
            except OSError:
                pass


def pgid_of(pid):
    """A process's group, None when gone."""
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def stop_tree(pid):
    """SIGSTOPs every process below pid, again until no new one appears (a stopped process
    forks no more); the stopped pids."""
    stopped = set()
    for _ in range(50):
        new = [p for p in descendants(pid) if p not in stopped]
        if not new:
            break
        kill_pids(new, signal.SIGSTOP)
        stopped.update(new)
    return stopped


def kill_stopped(stopped):
    """SIGKILLs the stopped processes and the groups any of them leads."""
    groups = {pgid_of(p) for p in stopped} & stopped
    kill_pids(stopped)
    for g in groups:
        try:
            os.killpg(g, signal.SIGKILL)
        except OSError:
            pass


def end_process(proc, grace=5.0):
    """Ends a process this test started and everything below it: SIGTERM to its group,
    then SIGKILL to the group and to descendants that left it."""
    if proc.poll() is not None:
        return
    below = set(descendants(proc.pid))
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except OSError:
        pass
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        below |= stop_tree(proc.pid)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()
    kill_stopped(below)     # runs the server left behind in groups of their own


def spawn(argv, stdin=subprocess.DEVNULL, **kw):
    """Popen in a session of its own, kept in PROCS; the watchdog waits until it is kept
    (a signal mask would be inherited: the server could not be ended)."""
    global SPAWNING
    SPAWNING = True
    try:
        p = subprocess.Popen(argv, stdin=stdin, start_new_session=True, **kw)
        PROCS.append(p)
    finally:
        SPAWNING = False
        if PENDING is not None:
            give_up(PENDING, None)
    return p


class Resp:
    """An HTTP response: status, Content-Type, body bytes, the body as JSON or None."""

    def __init__(self, status, ctype, data):
        self.status, self.ctype, self.data = status, ctype or "", data
        self.headers = {}
        self.media = self.ctype.split(";")[0].strip().lower()
        self.json = None
        if self.media == "application/json":
            try:
                self.json = json.loads(data.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                pass

    def error(self):
        """The Error body's message, '' when there is none."""
        if isinstance(self.json, dict) and isinstance(self.json.get("error"), str):
            return self.json["error"]
        return ""

    def __repr__(self):
        return f"{self.status} {self.ctype} {self.data[:300]!r}"


class Server:
    """One `llmprof serve` this test started: its process, port, run directory and token."""

    count = 0

    def __init__(self, name, runs, args=(), token=None):
        self.name, self.runs, self.args, self.token = name, runs, list(args), token
        self.proc = None
        self.port = None
        self.line = ""
        self.extra = b""

    def start(self, timeout=15.0, must=True):
        """Starts it and reads the listening line; False (and, if it must start, a "not ok")
        when it fails."""
        Server.count += 1
        err = os.path.join(TMP, f"{self.name}.{Server.count}.stderr")
        self.err_path = err
        self.extra = b""
        with open(err, "wb") as errf:
            # stdin a pipe left open: a run that read the server's stdin would never end
            self.proc = spawn([LLMPROF, "serve", "--runs", self.runs, *self.args],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errf,
                              bufsize=0)
        self.line = read_line(self.proc, timeout)
        m = LISTEN_RE.match(self.line)
        ok = m is not None
        if must or ok:
            check(ok, f"{self.name}: prints its listening line",
                  f"{self.line!r}, stderr: {self.stderr()[-400:]!r}")
        if not ok:
            end_process(self.proc)
            self.proc.stdin.close()
            return False
        self.host, self.port = m.group(1), int(m.group(2))
        check(os.path.realpath(m.group(3)) == os.path.realpath(self.runs) and self.port > 0,
              f"{self.name}: the line names the run directory and a port", self.line)
        self.drainer = threading.Thread(target=self._drain, daemon=True)
        self.drainer.start()
        return True

    def _drain(self):
        """Keeps reading stdout after the line (kept for the diagnostics)."""
        while True:
            try:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
            except OSError:
                return
            if not chunk:
                return
            self.extra += chunk

    def stderr(self):
        """What it wrote to stderr so far."""
        try:
            with open(self.err_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self):
        """SIGTERM, then SIGKILL after a grace period; everything below it too."""
        if self.proc is not None and self.proc.returncode is None:
            end_process(self.proc)
            self.proc.stdin.close()
            self.drainer.join(2)    # it reads what was left, to the end
            check(not self.extra, f"{self.name}: its stdout held its one line only",
                  self.extra[:300])

    def call(self, method, template, params=None, path=None, body=None,
             ctype="application/json", token=DEFAULT, headers=None, timeout=30):
        """One request on a fresh connection; its response is checked against the
        contract when template names one of the YAML's paths."""
        if path is None:
            path = template.format(**{k: urllib.parse.quote(v, safe="")
                                      for k, v in (params or {}).items()})
        hdrs = {}
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        if body is not None and ctype is not None:
            hdrs["Content-Type"] = ctype
        tok = self.token if token is DEFAULT else token
        if tok is not None:
            hdrs["Authorization"] = "Bearer " + tok
        hdrs.update(headers or {})
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=hdrs)
            r = conn.getresponse()
            resp = Resp(r.status, r.getheader("Content-Type"), r.read())
            resp.headers = {k.lower(): v for k, v in r.getheaders()}
        except (OSError, http.client.HTTPException) as e:
            check(False, f"{self.name}: {method} {path[:120]} is answered", repr(e))
            return Resp(0, "", repr(e).encode())
        finally:
            conn.close()
        if template is not None:
            CONTRACT.record(template, method, path, params, resp)
        return resp

    def run(self, rid):
        """GET /runs/{run_id}."""
        return self.call("GET", "/runs/{run_id}", {"run_id": rid})

    def runs_list(self):
        """GET /runs' list ([] when it fails)."""
        r = self.call("GET", "/runs")
        if r.status == 200 and isinstance(r.json, dict):
            return r.json.get("runs") or []
        return []

    def submit(self, **fields):
        """POST /runs with the temporary model and input and these fields."""
        body = {"model_path": MODEL, "input_dir": INPUT}
        body.update(fields)
        return self.call("POST", "/runs", body=body)

    def wait(self, rid, statuses=FINAL, timeout=20.0):
        """Polls the run until its status is one of statuses; the last Run (or None)."""
        deadline = time.monotonic() + timeout
        last = None
        self.trail = []
        while True:
            r = self.run(rid)
            if r.status == 200 and isinstance(r.json, dict):
                last = r.json
                if not self.trail or self.trail[-1] != last.get("status"):
                    self.trail.append(last.get("status"))
                if last.get("status") in statuses:
                    return last
            if time.monotonic() > deadline or r.status == 0:
                return last
            time.sleep(0.05)


def read_line(proc, timeout):
    """The first line proc writes to stdout, '' at a deadline or at its exit."""
    fd = proc.stdout.fileno()
    buf = b""
    deadline = time.monotonic() + timeout
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            break
        chunk = os.read(fd, 1)
        if not chunk:
            break
        buf += chunk
    return buf.decode("utf-8", "replace").rstrip("\n")


def runner_args(fake):
    """The --runner options every server gets."""
    sleep = "/bin/sleep" if os.path.exists("/bin/sleep") else shutil.which("sleep")
    tmpl = (f"{fake} 0 {{model_path}} {{input_dir}} {{repeats}} {{device}} {{max_new_tokens}}"
            " {use_flash_attn:--flash} pre{device}")
    return ["--runner", f"fake={fake} 0", "--runner", f"slow={sleep} {{max_new_tokens}}",
            "--runner", f"failing={fake} 3", "--runner", f"args={tmpl}"]


# ---------------------------------------------------------------------------- the flows

def check_run_shape(run, rid, what, srv):
    """The fields every Run must have right, whatever its status."""
    if not check(isinstance(run, dict), f"{what}: GET /runs/{{run_id}} answers", run):
        return False
    check(run.get("run_id") == rid, f"{what}: run_id is the one accepted", run.get("run_id"))
    check(isinstance(run.get("created"), str) and ISO_RE.match(run["created"]),
          f"{what}: created is UTC ISO 8601", run.get("created"))
    for key in ("started", "finished"):
        v = run.get(key)
        check(v is None or (isinstance(v, str) and ISO_RE.match(v)),
              f"{what}: {key} is null or UTC ISO 8601", v)
    ad = run.get("artifacts_dir")
    check(isinstance(ad, str) and os.path.realpath(ad) ==
          os.path.realpath(os.path.join(srv.runs, "runs", rid)),
          f"{what}: artifacts_dir is DIR/runs/RUN_ID", ad)
    return True


def iso_time(text):
    """A UTC ISO 8601 time as a datetime, None when it is none."""
    if not isinstance(text, str) or not ISO_RE.match(text):
        return None
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def check_trail(trail, what):
    """The statuses a run went through, as polled: queued, running, then one end."""
    rank = {"queued": 0, "running": 1, "done": 2, "failed": 2, "cancelled": 2}
    ranks = [rank.get(x, -1) for x in trail]
    check(trail and -1 not in ranks and ranks == sorted(ranks) and ranks.count(2) <= 1,
          f"{what}: its status went queued -> running -> an end, never back", trail)


def check_accepted(r, srv, what):
    """A 202 with a run id of the contract's pattern; the run id or None."""
    if not check(r.status == 202 and isinstance(r.json, dict),
                 f"{what}: POST /runs is accepted (202)", r):
        return None
    rid = r.json.get("run_id")
    rid = rid if isinstance(rid, str) else ""
    check(RUN_ID_RE.match(rid), f"{what}: the run id looks like 20261127-081500-a1b2c3", rid)
    ad = r.json.get("artifacts_dir", "")
    check(os.path.isabs(ad) and os.path.realpath(ad) ==
          os.path.realpath(os.path.join(srv.runs, "runs", rid)),
          f"{what}: artifacts_dir is the absolute DIR/runs/RUN_ID", ad)
    return rid


def defaults():
    """The request fields' defaults, from the YAML."""
    props = SPEC["components"]["schemas"]["LLMProfileRequest"]["properties"]
    return {k: v["default"] for k, v in props.items() if "default" in v}


def check_echo(run, sent, what):
    """The run's request holds what was sent; any other field it holds is the default."""
    req = run.get("request") or {}
    dflt = defaults()
    wrong = {k: (req.get(k), v) for k, v in sent.items() if not same_value(req.get(k), v)}
    wrong.update({k: (v, dflt.get(k)) for k, v in req.items()
                  if k not in sent and k != "runner" and not same_value(v, dflt.get(k))})
    if "runner" in req and "runner" not in sent and req["runner"] != run.get("runner"):
        wrong["runner"] = (req["runner"], run.get("runner"))
    check(not wrong, f"{what}: the run's request is the one sent (defaults where left out)",
          wrong)


def artifact_list(srv, rid, what):
    """GET /runs/{run_id}/artifacts' {name: bytes} (empty when it fails)."""
    r = srv.call("GET", "/runs/{run_id}/artifacts", {"run_id": rid})
    ok = check(r.status == 200 and isinstance(r.json, dict), f"{what}: the artifact list", r)
    if not ok:
        return {}
    check(r.json.get("run_id") == rid, f"{what}: the artifact list names its run", r.json)
    return {a.get("name"): a.get("bytes") for a in r.json.get("artifacts", [])
            if isinstance(a, dict)}


def fetch(srv, rid, name, raw=None):
    """GET /runs/{run_id}/artifacts/{name}, name's "/" written %2F (raw: the URL's name as
    given, not encoded again)."""
    path = None
    if raw is not None:
        path = f"/runs/{rid}/artifacts/{raw}"
    return srv.call("GET", "/runs/{run_id}/artifacts/{name}", {"run_id": rid, "name": name},
                    path=path)


def flow_fake_run(srv):
    """A run of the fake app to done: headline, artifacts, report.md; the run id."""
    what = "fake run"
    sent = {"model_path": MODEL, "input_dir": INPUT}
    rid = check_accepted(srv.call("POST", "/runs", body=sent), srv, what)
    if rid is None:
        return None
    run = srv.wait(rid)
    if not check_run_shape(run, rid, what, srv):
        return None
    check(run.get("status") == "done", f"{what}: ends done", run)
    check_trail(srv.trail, what)
    check(run.get("exit_status") == 0 and run.get("error") is None,
          f"{what}: exit_status 0, error null", run)
    check(run.get("runner") == FIRST_RUNNER and run.get("tag") == defaults().get("tag"),
          f"{what}: the default runner (the first) and the default tag", run)
    times = [iso_time(run.get(k)) for k in ("created", "started", "finished")]
    check(None not in times and times == sorted(times),
          f"{what}: created <= started <= finished", run)
    check(isinstance(run.get("headline"), dict), f"{what}: a headline once done", run)
    check_echo(run, sent, what)
    arts = artifact_list(srv, rid, what)
    need = {"report.md", "report.json", "meta.json"}
    check(need <= set(arts), f"{what}: the artifacts include {sorted(need)}", sorted(arts))
    rundir = os.path.join(srv.runs, "runs", rid)
    wrong = {}
    for name, size in arts.items():
        r = fetch(srv, rid, name)
        try:
            with open(os.path.join(rundir, name), "rb") as f:
                disk = f.read()
        except OSError as e:
            disk = repr(e).encode()
        if r.status != 200 or r.data != disk or size != len(disk):
            wrong[name] = (r.status, len(r.data), size, len(disk))
    check(arts and not wrong,
          f"{what}: every listed artifact (a/b as a%2Fb) is served as on disk, its bytes right",
          wrong)
    r = fetch(srv, rid, "report.md")
    check(r.status == 200 and len(r.data) > 0, f"{what}: report.md is served", r)
    rep = fetch(srv, rid, "report.json")
    try:
        rj = json.loads(rep.data)
        llm = rj.get("llm", {})
        head = run.get("headline") or {}
        same = (same_value(head.get("ttft_s"), llm.get("ttft_s")) and
                same_value(head.get("tpot_s"), llm.get("tpot_s")))
        util_off = not rj.get("utilisation", {}).get("available", True)
        check(same and (not util_off or head.get("mfu") is None),
              f"{what}: the headline is report.json's (ttft_s, tpot_s, mfu)",
              (head, llm.get("ttft_s"), llm.get("tpot_s")))
    except (ValueError, AttributeError) as e:
        check(False, f"{what}: report.json is JSON", e)
    meta = fetch(srv, rid, "meta.json")
    try:
        cmd = json.loads(meta.data).get("command")
    except (ValueError, AttributeError):
        cmd = None
    check(cmd == [FAKE, "0"], f"{what}: the runner ran as its template says (meta.json)", cmd)
    listed = [x.get("run_id") for x in srv.runs_list()]
    check(rid in listed, f"{what}: GET /runs lists it", listed)
    page = srv.call("GET", "/")
    check(page.status == 200 and rid.encode() in page.data,
          f"{what}: the web page (GET /) lists it", page)
    return rid



def flow_template(srv):
    """The runner template: placeholders as one argument each, the flag only when true,
    a word that is not exactly a placeholder kept; run ids in submission order."""
    spaced = os.path.join(TMP, "with space", "model dir")
    spaced_in = os.path.join(TMP, "in put")
    os.makedirs(spaced, exist_ok=True)
    os.makedirs(spaced_in, exist_ok=True)
    d = defaults()
    cases = [
        ({"runner": "args", "model_path": spaced, "input_dir": spaced_in, "repeats": 2,
          "device": "cuda:1", "max_new_tokens": 128, "use_flash_attn": True, "tag": "t.1-x"},
         ["2", "cuda:1", "128", "--flash"]),
        ({"runner": "args", "model_path": spaced, "input_dir": spaced_in},
         [str(d["repeats"]), d["device"], str(d["max_new_tokens"])]
         + (["--flash"] if d.get("use_flash_attn") else [])),
        ({"runner": "args", "model_path": spaced, "input_dir": spaced_in,
          "use_flash_attn": False}, [str(d["repeats"]), d["device"], str(d["max_new_tokens"])]),
    ]
    ids = []
    for i, (sent, tail) in enumerate(cases):
        what = f"template run {i + 1}"
        rid = check_accepted(srv.call("POST", "/runs", body=sent), srv, what)
        if rid is None:
            continue
        ids.append(rid)
        run = srv.wait(rid)
        if not check_run_shape(run, rid, what, srv):
            continue
        check(run.get("status") == "done", f"{what}: ends done", run)
        check(run.get("runner") == "args" and run.get("tag") == sent.get("tag", d["tag"]),
              f"{what}: runner and tag", (run.get("runner"), run.get("tag")))
        check_echo(run, sent, what)
        meta = fetch(srv, rid, "meta.json")
        try:
            cmd = json.loads(meta.data).get("command")
        except (ValueError, AttributeError):
            cmd = None
        want = [FAKE, "0", spaced, spaced_in] + tail + ["pre{device}"]
        check(cmd == want, f"{what}: the program's argv is the template's, filled in", cmd)
    listed = [x.get("run_id") for x in srv.runs_list()]
    pos = [listed.index(r) for r in ids if r in listed]
    check(len(pos) == len(ids) and pos == sorted(pos, reverse=True),
          "GET /runs: newest first (runs submitted one after another)", (ids, listed[:10]))
    created = [iso_time(x.get("created")) for x in srv.runs_list()]
    check(None not in created and created == sorted(created, reverse=True),
          "GET /runs: created never increases", created[:10])
    return ids


def flow_failing(srv):
    """The failing runner: the run ends failed with exit_status 3 and an error."""
    what = "failing run"
    rid = check_accepted(srv.submit(runner="failing"), srv, what)
    if rid is None:
        return None
    run = srv.wait(rid)
    if check_run_shape(run, rid, what, srv):
        check(run.get("status") == "failed" and run.get("exit_status") == 3,
              f"{what}: ends failed with exit_status 3", run)
        check(isinstance(run.get("error"), str) and run["error"].strip(),
              f"{what}: says why in error", run.get("error"))
        check(run.get("runner") == "failing", f"{what}: its runner", run.get("runner"))
    return rid


def bad_request_cases():
    """(what, body bytes, Content-Type, wanted status, a word the message must hold)."""
    base = {"model_path": MODEL, "input_dir": INPUT}

    def js(**kw):
        """The valid request with these fields changed (DROP: left out), as bytes."""
        d = dict(base)
        for k, v in kw.items():
            if v is DROP:
                d.pop(k, None)
            else:
                d[k] = v
        return json.dumps(d).encode()

    nope = os.path.join(TMP, "does-not-exist")
    cases = [
        ("an unknown field", js(bogus=1), "bogus"),
        ("a command field", js(command=["/bin/sh", "-c", "id"]), "command"),
        ("no model_path", js(model_path=DROP), "model_path"),
        ("no input_dir", js(input_dir=DROP), "input_dir"),
        ("model_path a number", js(model_path=5), "model_path"),
        ("model_path an object", js(model_path={"a": 1}), "model_path"),
        ("model_path relative", js(model_path="model.bin"), "model_path"),
        ("model_path not on disk", js(model_path=nope), "model_path"),
        ("model_path with a NUL (never cut there)", js(model_path=MODEL + "\0.x"), ""),
        ("model_path of 4097 characters", js(model_path="/" + "a" * 4096), "model_path"),
        ("input_dir a file", js(input_dir=MODEL), "input_dir"),
        ("input_dir relative", js(input_dir="in"), "input_dir"),
        ("input_dir not on disk", js(input_dir=nope), "input_dir"),
        ("input_dir null", js(input_dir=None), "input_dir"),
        ("repeats a string", js(repeats="3"), "repeats"),
        ("repeats a boolean", js(repeats=True), "repeats"),
        ("repeats a fraction", js(repeats=2.5), "repeats"),
        ("repeats 0", js(repeats=0), "repeats"),
        ("repeats 1001", js(repeats=1001), "repeats"),
        ("repeats -1", js(repeats=-1), "repeats"),
        ("repeats 10^20", js(repeats=10 ** 20), "repeats"),
        ("use_flash_attn a string", js(use_flash_attn="true"), "use_flash_attn"),
        ("use_flash_attn 1", js(use_flash_attn=1), "use_flash_attn"),
        ("device cpu", js(device="cpu"), "device"),
        ("device cuda:1234", js(device="cuda:1234"), "device"),
        ("device ending in a newline", js(device="cuda:0\n"), "device"),
        ("device a number", js(device=0), "device"),
        ("max_new_tokens 1", js(max_new_tokens=1), "max_new_tokens"),
        ("max_new_tokens 8193", js(max_new_tokens=8193), "max_new_tokens"),
        ("max_new_tokens a string", js(max_new_tokens="64"), "max_new_tokens"),
        ("tag empty", js(tag=""), "tag"),
        ("tag with a space", js(tag="a b"), "tag"),
        ("tag with a slash", js(tag="../x"), "tag"),
        ("tag of 65 characters", js(tag="a" * 65), "tag"),
        ("runner unknown", js(runner="nope"), "runner"),
        ("runner with a space", js(runner="a b"), "runner"),
        ("runner null", js(runner=None), "runner"),
    ]
    out = [(w, b, "application/json", 400, f) for w, b, f in cases]
    valid = js()
    out += [
        ("malformed JSON", b'{"model_path": ', "application/json", 400, ""),
        ("a JSON array", b"[]", "application/json", 400, ""),
        ("JSON null", b"null", "application/json", 400, ""),
        ("an empty body", b"", "application/json", 400, ""),
        ("JSON then garbage", valid + b" x", "application/json", 400, ""),
        ("JSON nested 30000 deep", b"[" * 30000 + b"]" * 30000, "application/json", 400, ""),
        ("a string that is no UTF-8", valid.replace(b'"input_dir": "', b'"input_dir": "\xff'),
         "application/json", 400, ""),
        ("Content-Type text/plain", valid, "text/plain", 415, ""),
        ("Content-Type of a form", valid, "application/x-www-form-urlencoded", 415, ""),
        ("no Content-Type", valid, None, 415, ""),
        ("a body of 64 KiB + 1", valid + b" " * (MAX_BODY + 1 - len(valid)),
         "application/json", 413, ""),
        ("a body of 200 KiB", valid + b" " * (200 * 1024), "application/json", 413, ""),
    ]
    at_limit = js(runner="nope")
    out.append(("a body of exactly 64 KiB (an unknown runner)",
                at_limit + b" " * (MAX_BODY - len(at_limit)), "application/json", 400,
                "runner"))
    return out


DROP = object()


def flow_bad_requests(srv):
    """Each class of bad request: 4xx with an Error naming the field, no run made, and the
    server still answers; bad run ids are 404."""
    before = len(srv.runs_list())
    for what, body, ctype, status, field in bad_request_cases():
        try:
            r = srv.call("POST", "/runs", body=body, ctype=ctype)
        except (OSError, http.client.HTTPException) as e:
            check(False, f"bad request, {what}: answered", repr(e))
            continue
        msg = r.error()
        check(r.status == status and msg.strip() and field in msg,
              f"bad request, {what}: {status}" + (f", the message names {field}" if field
                                                 else ", with a message"), r)
    r = srv.call("GET", "/openapi.yaml")
    check(r.status == 200, "after the bad requests the server still answers", r)
    check(len(srv.runs_list()) == before, "no bad request made a run",
          (before, len(srv.runs_list())))
    for bad in ("nope", "20261127-081500-a1b2c", "20261127-081500-A1B2C3",
                "20000101-000000-000000", "%2E%2E", "..%2Findex.db"):
        raw = urllib.parse.quote(bad, safe="%")
        r1 = srv.call("GET", "/runs/{run_id}", {"run_id": bad}, path=f"/runs/{raw}")
        r2 = srv.call("DELETE", "/runs/{run_id}", {"run_id": bad}, path=f"/runs/{raw}")
        r3 = srv.call("GET", "/runs/{run_id}/artifacts", {"run_id": bad},
                      path=f"/runs/{raw}/artifacts")
        r4 = srv.call("GET", "/runs/{run_id}/artifacts/{name}", {"run_id": bad},
                      path=f"/runs/{raw}/artifacts/report.md")
        check(all(x.status == 404 and x.error() for x in (r1, r2, r3, r4)),
              f"run id {bad!r}: GET, DELETE, artifacts and an artifact are 404",
              [x.status for x in (r1, r2, r3, r4)])
    for method, path in (("GET", "/nope"), ("PUT", "/runs"), ("PATCH", "/runs"),
                         ("GET", "/runs/x/y/z")):
        r = srv.call(method, None, path=path, body=b"{}" if method != "GET" else None)
        check(400 <= r.status < 500, f"{method} {path} (not in the contract): a 4xx", r)
    r = srv.call("GET", "/runs")
    check(r.status == 200, "after the routes outside the contract the server still answers", r)


def flow_traversal(srv, rid):
    """Names outside the list, with .., a leading / or a NUL, and symlinks planted after
    the run finished: all 404, never a byte from outside the run directory."""
    rundir = os.path.join(srv.runs, "runs", rid)
    outside = os.path.join(TMP, "outside")
    os.makedirs(outside, exist_ok=True)
    secret = os.path.join(outside, "secret.txt")
    with open(secret, "w") as f:
        f.write("SECRET-outside-the-run\n")
    forbidden = [b"root:", b"SQLite format 3", b"SECRET-outside"]
    names = ["..%2F..%2Findex.db", "..%2Findex.db", "%2Fetc%2Fpasswd",
             "..%2F..%2F..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd", "%2E", "%2E%2E",
             "%2E%2E%2F%2E%2E%2Findex.db", "..%2f..%2findex.db",
             "report.md%2F..%2F..%2F..%2Findex.db", f"..%2F{rid}%2Freport.md",
             ".%2Freport.md", "report.md%2F", "report.md%00", "report.md%00.txt",
             "%252E%252E%252Findex.db", "..%5C..%5Cindex.db", "nope.md", "REPORT.MD",
             urllib.parse.quote(os.path.join(rundir, "report.md"), safe="")]
    for raw in names:
        r = fetch(srv, rid, urllib.parse.unquote(raw), raw=raw)
        check(r.status == 404 and not any(x in r.data for x in forbidden),
              f"artifact {raw}: 404", r)
    for raw in ("../../index.db", "../../../../etc/passwd"):
        r = srv.call("GET", None, path=f"/runs/{rid}/artifacts/{raw}")
        check(r.status == 404 and not any(x in r.data for x in forbidden),
              f"artifact path {raw} written as is: 404", r)
    os.symlink("/etc/passwd", os.path.join(rundir, "passwd"))
    os.symlink(secret, os.path.join(rundir, "secret.txt"))
    os.symlink(os.path.join("..", "..", "index.db"), os.path.join(rundir, "index.db"))
    os.symlink(outside, os.path.join(rundir, "outdir"))
    os.makedirs(os.path.join(rundir, "sub"), exist_ok=True)
    with open(os.path.join(rundir, "sub", "x.txt"), "w") as f:
        f.write("planted inside\n")
    for name in ("passwd", "secret.txt", "index.db", "outdir/secret.txt", "outdir"):
        r = fetch(srv, rid, name)
        check(r.status == 404 and not any(x in r.data for x in forbidden),
              f"a symlink planted after the run ({name}): 404", r)
    arts = artifact_list(srv, rid, "after planting")
    real = os.path.realpath(rundir) + os.sep
    leaks = [n for n in arts if not os.path.realpath(os.path.join(rundir, n)).startswith(real)]
    check(not leaks, "the artifact list names nothing outside the run directory", leaks)
    r = fetch(srv, rid, "sub/x.txt")
    if "sub/x.txt" in arts:
        check(r.status == 200 and r.data == b"planted inside\n" and arts["sub/x.txt"] == 15,
              "a file in a subdirectory is listed as sub/x.txt and served as sub%2Fx.txt", r)
    else:
        check(r.status == 404, "a file not in the artifact list (sub/x.txt) is 404", r)
    return secret


def flow_delete_finished(srv, rid, secret):
    """DELETE of a finished run: status removed, its directory gone (the targets of its
    symlinks left alone), then 404 everywhere."""
    rundir = os.path.join(srv.runs, "runs", rid)
    r = srv.call("DELETE", "/runs/{run_id}", {"run_id": rid})
    check(r.status == 200 and isinstance(r.json, dict) and r.json.get("status") == "removed"
          and r.json.get("run_id") == rid, "DELETE of a done run: 200, status removed", r)
    check(not os.path.lexists(rundir), "DELETE of a done run: its directory is gone", rundir)
    check(os.path.exists(secret) and os.path.exists("/etc/passwd") and
          os.path.exists(os.path.join(srv.runs, "index.db")),
          "DELETE of a run left the targets of its symlinks alone", secret)
    r1 = srv.run(rid)
    r2 = srv.call("GET", "/runs/{run_id}/artifacts", {"run_id": rid})
    r3 = fetch(srv, rid, "report.md")
    r4 = srv.call("DELETE", "/runs/{run_id}", {"run_id": rid})
    check([x.status for x in (r1, r2, r3, r4)] == [404] * 4,
          "a removed run: GET, artifacts, an artifact and DELETE again are 404",
          [x.status for x in (r1, r2, r3, r4)])
    check(rid not in [x.get("run_id") for x in srv.runs_list()],
          "a removed run: not in GET /runs")


def flow_openapi(srv):
    """GET /openapi.yaml: the file's bytes exactly."""
    with open(SPEC_FILE, "rb") as f:
        want = f.read()
    r = srv.call("GET", "/openapi.yaml")
    check(r.status == 200 and r.data == want, "GET /openapi.yaml: docs/openapi.yaml's bytes",
          (r.status, len(r.data), len(want)))


def flow_load(srv, done_rid):
    """200 concurrent GET /runs/{id} and 20 concurrent submissions: all answered, no 5xx,
    every run done, none lost; never two running at once."""
    results, ids, lock = [], [], threading.Lock()
    barrier = threading.Barrier(220, timeout=30)

    def poll():
        """One GET of a run, once every thread is ready."""
        try:
            barrier.wait()
            r = srv.run(done_rid)
            out = r.status
        except Exception as e:  # noqa: BLE001 - any failure is a result
            out = repr(e)
        with lock:
            results.append(out)

    def submit():
        """One submission, retried while the queue is full (429)."""
        out = None
        try:
            barrier.wait()
            deadline = time.monotonic() + 40
            while True:
                r = srv.submit()
                if r.status == 429 and time.monotonic() < deadline:
                    time.sleep(0.1)
                    continue
                out = r.status
                if r.status == 202 and isinstance(r.json, dict):
                    with lock:
                        ids.append(r.json.get("run_id"))
                break
        except Exception as e:  # noqa: BLE001
            out = repr(e)
        with lock:
            results.append(("submit", out))

    threads = [threading.Thread(target=poll, daemon=True) for _ in range(200)]
    threads += [threading.Thread(target=submit, daemon=True) for _ in range(20)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.1, 60 - (time.monotonic() - t0)))
    polls = [x for x in results if not isinstance(x, tuple)]
    subs = [x[1] for x in results if isinstance(x, tuple)]
    check(len(polls) == 200 and all(x == 200 for x in polls),
          "load: 200 concurrent GET /runs/{run_id} all answered 200",
          sorted({str(x) for x in polls if x != 200}) or len(polls))
    check(len(subs) == 20 and all(x == 202 for x in subs),
          "load: 20 concurrent submissions all accepted (429 retried)",
          sorted({str(x) for x in subs if x != 202}) or len(subs))
    check(len(set(ids)) == len(ids) == 20, "load: 20 distinct run ids", ids)
    deadline = time.monotonic() + 60
    most_running, statuses = 0, {}
    while True:
        runs = srv.runs_list()
        most_running = max(most_running, sum(1 for x in runs if x.get("status") == "running"))
        statuses = {x.get("run_id"): x.get("status") for x in runs}
        if all(statuses.get(i) in FINAL for i in ids) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    check(all(statuses.get(i) == "done" for i in ids), "load: every submitted run ends done",
          {i: statuses.get(i) for i in ids if statuses.get(i) != "done"})
    check(all(i in statuses for i in ids), "load: GET /runs lists every one (none lost)",
          [i for i in ids if i not in statuses])
    check(most_running <= 1, "load: never more than one run running at once", most_running)
    return ids


def flow_restart(srv):
    """A restart on the same --runs DIR keeps every run as it was."""
    before = {x["run_id"]: x for x in srv.runs_list() if isinstance(x, dict)}
    srv.stop()
    if not srv.start():
        return False
    after = {x["run_id"]: x for x in srv.runs_list() if isinstance(x, dict)}
    check(set(before) == set(after) and before,
          f"restart: GET /runs lists the same {len(before)} runs",
          (set(before) ^ set(after)))
    changed = [i for i in before if i in after and before[i] != after[i]]
    check(not changed, "restart: every run is as it was", changed[:3])
    done = [i for i, x in after.items() if x.get("status") == "done"]
    if done:
        r = fetch(srv, done[0], "report.md")
        check(r.status == 200 and r.data, "restart: a done run's report.md is still served", r)
    with open(os.path.join(srv.runs, "index.db"), "rb") as f:
        check(f.read(16) == b"SQLite format 3\0", "the index is DIR/index.db, SQLite")
    return True


def flow_kill9(srv):
    """kill -9 of the server while a run runs, then a restart: that run is failed, its
    error says it was interrupted, and new runs still go to done."""
    what = "kill -9"
    rid = check_accepted(srv.submit(runner="slow", max_new_tokens=30), srv, what)
    if rid is None:
        return
    run = srv.wait(rid, ("running",) + FINAL, timeout=15)
    check(run and run.get("status") == "running" and run.get("started"),
          f"{what}: the slow run is running", run)
    below = stop_tree(srv.proc.pid)     # its runs go with it, and leave no orphan
    os.kill(srv.proc.pid, signal.SIGKILL)
    srv.proc.wait()
    srv.proc.stdin.close()
    kill_stopped(below)
    if not srv.start():
        return
    run = srv.run(rid).json
    if check_run_shape(run, rid, what, srv):
        check(run.get("status") == "failed" and "interrupt" in (run.get("error") or "").lower(),
              f"{what}: after the restart the run is failed, its error saying interrupted", run)
    rid2 = check_accepted(srv.submit(), srv, f"{what}, then a run")
    if rid2:
        run2 = srv.wait(rid2)
        check(run2 and run2.get("status") == "done", f"{what}: a new run goes to done", run2)


def running_sleeps(srv):
    """The pids of the slow runner's sleep processes below the server."""
    return [p for p in descendants(srv.proc.pid)
            if os.path.basename((cmdline(p) or [""])[0]) == "sleep" and alive(p)]


def flow_queue_cancel(srv):
    """--queue 2 with the slow runner running: two wait, one more is 429; cancel a queued
    and the running run (its process ended), removal of a cancelled run."""
    what = "queue"
    slow = {"runner": "slow", "max_new_tokens": 30}
    first = check_accepted(srv.submit(**slow), srv, what)
    if first is None:
        return
    run = srv.wait(first, ("running",) + FINAL, timeout=15)
    check(run and run.get("status") == "running", f"{what}: the slow run is running", run)
    waiting, codes = [], []
    for _ in range(6):
        r = srv.submit(**slow)
        codes.append(r.status)
        if r.status == 202:
            waiting.append(r.json.get("run_id"))
            check(r.json.get("status") == "queued", f"{what}: a run behind it is queued", r)
        if r.status == 429:
            check(r.error(), f"{what}: 429 says why", r)
            break
    check(codes == [202, 202, 429], f"{what}: --queue 2 takes two waiting runs, then 429",
          codes)
    if len(waiting) < 2:
        return
    run = srv.run(first).json or {}
    check(run.get("status") == "running" and run.get("finished") is None and
          run.get("exit_status") is None and run.get("headline") is None,
          f"{what}: the running run: no finished, exit_status or headline yet", run)
    for rid in waiting:
        run = srv.run(rid).json or {}
        check(run.get("status") == "queued" and
              all(run.get(k) is None for k in ("started", "finished", "exit_status",
                                               "headline", "error")),
              f"{what}: a waiting run is queued; started, finished, exit_status, headline, "
              "error null", run)
    r = srv.call("DELETE", "/runs/{run_id}", {"run_id": waiting[1]})
    check(r.status == 200 and isinstance(r.json, dict) and r.json.get("status") == "cancelled",
          "DELETE of a queued run: 200, status cancelled", r)
    run = srv.run(waiting[1]).json or {}
    check(run.get("status") == "cancelled" and run.get("started") is None and
          isinstance(run.get("error"), str) and run["error"].strip(),
          "a cancelled queued run: cancelled, never started, error says why", run)
    more = srv.submit(**slow)
    check(more.status == 202, f"{what}: a cancelled run frees its place in the queue", more)
    deadline = time.monotonic() + 10
    sleeps = running_sleeps(srv)
    while not sleeps and time.monotonic() < deadline:   # running, perhaps not exec'd yet
        time.sleep(0.05)
        sleeps = running_sleeps(srv)
    check(len(sleeps) == 1, "the running slow run is one sleep process", sleeps)
    t0 = time.monotonic()
    r = srv.call("DELETE", "/runs/{run_id}", {"run_id": first})
    check(r.status == 202 and isinstance(r.json, dict) and r.json.get("status") == "running" and
          time.monotonic() - t0 < 2,
          "DELETE of a running run: 202 at once, the run as it is (its stop under way)", r)
    run = srv.wait(first, FINAL, timeout=15)
    check(run and run.get("status") == "cancelled", "the running run ends cancelled", run)
    deadline = time.monotonic() + 10
    while any(alive(p) for p in sleeps) and time.monotonic() < deadline:
        time.sleep(0.05)
    check(sleeps and not any(alive(p) for p in sleeps),
          "cancelling a running run ends its process", sleeps)
    run = srv.run(first).json or {}
    check(run.get("status") == "cancelled" and isinstance(run.get("error"), str),
          "a cancelled running run stays cancelled, error says why", run)
    run = srv.wait(waiting[0], ("running",) + FINAL, timeout=15)
    check(run and run.get("status") == "running", "the next queued run starts running", run)
    r = srv.call("DELETE", "/runs/{run_id}", {"run_id": waiting[1]})
    check(r.status == 200 and isinstance(r.json, dict) and r.json.get("status") == "removed",
          "DELETE of a cancelled run: removed", r)
    check(srv.run(waiting[1]).status == 404, "a removed cancelled run is 404")
    for rid in [waiting[0]] + ([more.json.get("run_id")] if more.status == 202 else []):
        r = srv.call("DELETE", "/runs/{run_id}", {"run_id": rid})
        run = srv.wait(rid, FINAL, timeout=15) if r.status == 202 else r.json
        check(r.status in (200, 202) and (run or {}).get("status") == "cancelled",
              "DELETE of the remaining slow runs: cancelled", (r, run))


def flow_cancel_at_start(srv):
    """DELETE of a run the instant the index calls it running (its process perhaps not
    forked yet), ten times: it ends cancelled, never left running."""
    slow = {"runner": "slow", "max_new_tokens": 30}
    bad = []
    for _ in range(10):
        a = check_accepted(srv.submit(**slow), srv, "cancel at start")
        b = check_accepted(srv.submit(**slow), srv, "cancel at start")
        if a is None or b is None:
            return
        srv.wait(a, ("running",) + FINAL, timeout=15)
        srv.call("DELETE", "/runs/{run_id}", {"run_id": a})
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            r = srv.run(b)
            if (r.json or {}).get("status") != "queued":
                break
        r = srv.call("DELETE", "/runs/{run_id}", {"run_id": b})
        run = srv.wait(b, FINAL, timeout=15)
        if r.status not in (200, 202) or (run or {}).get("status") != "cancelled":
            bad.append((r.status, (run or {}).get("status")))
        srv.wait(a, FINAL, timeout=15)
    check(not bad, "a run cancelled as it starts ends cancelled (10 times)", bad)


def flow_default_queue(srv):
    """Without --queue, 16 runs wait behind the running one; one more is 429."""
    slow = {"runner": "slow", "max_new_tokens": 30}
    first = check_accepted(srv.submit(**slow), srv, "default queue")
    if first is None:
        return
    run = srv.wait(first, ("running",) + FINAL, timeout=15)
    check(run and run.get("status") == "running", "default queue: the slow run is running",
          run)
    ids, codes = [first], []
    for _ in range(17):
        r = srv.submit(**slow)
        codes.append(r.status)
        if r.status == 202:
            ids.append(r.json.get("run_id"))
        else:
            break
    check(codes == [202] * 16 + [429], "default queue: 16 runs wait, the 17th is 429", codes)
    bad = []
    for rid in reversed(ids):       # the waiting ones first, so that none starts
        r = srv.call("DELETE", "/runs/{run_id}", {"run_id": rid})
        run = srv.wait(rid, FINAL, timeout=15) if r.status == 202 else r.json
        if r.status not in (200, 202) or (run or {}).get("status") != "cancelled":
            bad.append((rid, r.status))
    check(not bad, "default queue: every run cancelled", bad)


def llmprof_runs(*args):
    """`llmprof runs ARGS`: (status, stdout, stderr)."""
    p = subprocess.run([LLMPROF, "runs", *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def untar_member(archive, member):
    """A member of a .tar.zst read by GNU tar and zstd (None when they are not here)."""
    if not (shutil.which("tar") and shutil.which("zstd")):
        note("tar or zstd missing: archived members not compared with GNU tar's reading")
        return None
    p = subprocess.run(["tar", "--zstd", "-xOf", archive, member], capture_output=True,
                       timeout=60)
    return p.stdout if p.returncode == 0 else b"(tar failed: " + p.stderr + b")"


def flow_retention(fake):
    """--keep 1 --max-run-bytes 70K: each run trimmed (traces first, its report kept, said
    in the Run and trimmed.json), of tag "r" all but the newest archived (tar + zstd GNU tar
    reads), served from the archive; another tag untouched; a damaged archive is a 500;
    DELETE removes the archive; `llmprof runs` lists (server up) and prunes (server down, a
    dry run first); an archived run whose directory came back is tidied; an index of the
    first version gets the new columns."""
    runs = tempfile.mkdtemp(prefix="runs-retain-", dir=TMP)
    srv = Server("retention server", runs, ["--listen", "127.0.0.1:0", "--keep", "1",
                                            "--max-run-bytes", "70K", *runner_args(fake)])
    if not srv.start():
        return
    what = "retention"
    try:
        ids = []
        for tag in ("r", "r", "r", "other"):
            rid = check_accepted(srv.submit(tag=tag), srv, what)
            if rid is None:
                return
            run = srv.wait(rid, FINAL, timeout=30)
            check(run and run.get("status") == "done", f"{what}: run {len(ids) + 1} done", run)
            ids.append(rid)
        old, mid, new, other = ids
        run = srv.wait(mid, ("done",))
        arch = (run or {}).get("archive") or {}
        path = os.path.join(runs, "runs", mid + ".tar.zst")
        check(arch.get("name") == mid + ".tar.zst" and os.path.isfile(path) and
              not os.path.exists(os.path.join(runs, "runs", mid)) and
              arch.get("bytes") == os.path.getsize(path) and arch.get("files", 0) >= 5 and
              arch.get("bytes") < arch.get("bytes_before", 0),
              f"{what}: an older run of the tag is archived, its directory gone", run)
        run_old = srv.run(old).json or {}
        check(isinstance(run_old.get("archive"), dict), f"{what}: the oldest too", run_old)
        for rid, label in ((new, "the newest run of the tag"), (other, "a run of another tag")):
            r = srv.run(rid).json or {}
            check(r.get("archive") is None and os.path.isdir(os.path.join(runs, "runs", rid)),
                  f"{what}: {label} is kept whole", r)
        trim = (srv.run(new).json or {}).get("trimmed") or {}
        removed = [x.get("name") for x in trim.get("removed", [])]
        check(trim.get("cap_bytes") == 70 * 1024 and removed and removed[0].endswith(".lpt") and
              not any(n.startswith("report.") or n in ("summary.md", "meta.json")
                      for n in removed) and trim.get("bytes_before", 0) > 70 * 1024 and
              trim.get("bytes_after") == trim.get("bytes_before", 0) - sum(
                  x.get("bytes", 0) for x in trim.get("removed", [])),
              f"{what}: the cap removed the trace first, never the report's own files", trim)
        listed = artifact_list(srv, new, what)
        check("report.md" in listed and "trimmed.json" in listed and
              not any(n in listed for n in removed),
              f"{what}: what was trimmed is gone, trimmed.json is there", sorted(listed))
        r = srv.call("GET", "/runs/{run_id}/artifacts", {"run_id": mid})
        names = {a["name"]: a["bytes"] for a in (r.json or {}).get("artifacts", [])}
        check(r.status == 200 and (r.json or {}).get("archived") is True and
              "report.md" in names and "trimmed.json" in names,
              f"{what}: an archived run's artifacts are its archive's members", r)
        got = fetch(srv, mid, "report.md")
        ref = untar_member(path, mid + "/report.md")
        check(got.status == 200 and got.data.startswith(b"# ") and
              len(got.data) == names.get("report.md") and (ref is None or ref == got.data),
              f"{what}: a member is served from the archive, as GNU tar reads it", got)
        check(fetch(srv, mid, "nope.md").status == 404, f"{what}: no such member: 404")
        rc, out, err = llmprof_runs(runs, "list", "--json")
        listed = json.loads(out) if rc == 0 else []
        by_id = {x.get("run_id"): x for x in listed}
        check(rc == 0 and set(by_id) == set(ids) and
              by_id[mid].get("disk_bytes") == os.path.getsize(path) and
              by_id[mid].get("archive") == arch,
              "llmprof runs list: the runs, with the archive's size, while the server runs",
              (rc, err, out[:300]))
        rc, out, err = llmprof_runs(runs, "prune")
        check(rc == 1 and "served by llmprof serve" in err,
              "llmprof runs prune: refused while a server holds the directory", (rc, err))
        with open(path, "r+b") as f:            # damaged: cut before its first member ends
            f.truncate(100)
        r = srv.call("GET", "/runs/{run_id}/artifacts", {"run_id": mid})
        check(r.status == 500 and "tar.zst" in r.error(),
              f"{what}: a damaged archive's list is a 500 that names it", r)
        r = fetch(srv, mid, "report.html")
        check(r.status == 500 and "tar.zst" in r.error(),
              f"{what}: a damaged archive's member is a 500 that names it", r)
        r = srv.call("DELETE", "/runs/{run_id}", {"run_id": mid})
        check(r.status == 200 and (r.json or {}).get("status") == "removed" and
              not os.path.exists(path), f"{what}: DELETE of an archived run removes its "
              "archive", r)
        check(srv.call("GET", "/", None).status == 200, f"{what}: the page still answers")
    finally:
        srv.stop()
    rc, out, err = llmprof_runs(runs, "prune", "--keep", "0", "--dry-run")
    check(rc == 0 and f"{new}: would archive" in out and
          os.path.isdir(os.path.join(runs, "runs", new)),
          "llmprof runs prune --dry-run: says what it would do, does nothing", (rc, out, err))
    odd = "r\u00e9sum\u00e9 \u2014 notes.txt"   # a name that is not ASCII
    with open(os.path.join(runs, "runs", new, odd), "w") as f:
        f.write("kept\n")
    rc, out, err = llmprof_runs(runs, "prune", "--keep", "0")
    check(rc == 0 and f"{new}: archived" in out and f"{other}: archived" in out and
          os.path.isfile(os.path.join(runs, "runs", new + ".tar.zst")) and
          not os.path.exists(os.path.join(runs, "runs", new)),
          "llmprof runs prune --keep 0: every ended run archived", (rc, out, err))
    got = untar_member(os.path.join(runs, "runs", new + ".tar.zst"), f"{new}/{odd}")
    check(got is None or got == b"kept\n", "a file whose name is not ASCII is archived", got)
    # a stop between the index and the removal: the directory is what the archive holds
    old_archive = os.path.join(runs, "runs", old + ".tar.zst")
    if shutil.which("tar") and shutil.which("zstd"):
        subprocess.run(["tar", "--zstd", "-xf", old_archive, "-C", os.path.join(runs, "runs")],
                       check=True, timeout=60)
        rc, out, err = llmprof_runs(runs, "prune", "--keep", "0")
        check(rc == 0 and f"{old}: removed its directory" in out and
              not os.path.exists(os.path.join(runs, "runs", old)),
              "llmprof runs prune: an archived run's directory left whole is removed",
              (rc, out, err))
    else:
        note("tar or zstd missing: the tidy of an archived run's directory not checked")
    os.makedirs(os.path.join(runs, "runs", old))     # one the archive does not hold
    with open(os.path.join(runs, "runs", old, "left.txt"), "w") as f:
        f.write("left behind\n")
    rc, out, err = llmprof_runs(runs, "prune", "--keep", "0")
    check(rc == 1 and "holds files its archive does not" in out and
          os.path.isfile(os.path.join(runs, "runs", old, "left.txt")),
          "llmprof runs prune: a directory holding what its archive does not is left, said",
          (rc, out, err))
    shutil.rmtree(os.path.join(runs, "runs", old))
    rc, out, err = llmprof_runs(runs, "list")
    check(rc == 0 and out.count("archived") == 3 and "3 runs" in out,
          "llmprof runs list: a table of the runs, archived said", (rc, out))
    srv2 = Server("retention server, again", runs, ["--listen", "127.0.0.1:0",
                                                    *runner_args(fake)])
    if srv2.start():
        try:
            r = srv2.call("GET", "/runs/{run_id}/artifacts/{name}",
                          {"run_id": new, "name": "report.md"})
            check(r.status == 200 and r.data.startswith(b"# "),
                  f"{what}: after a restart, an archived run's report is served", r)
        finally:
            srv2.stop()
    # an index made by the first version (no retention columns)
    legacy = tempfile.mkdtemp(prefix="runs-legacy-", dir=TMP)
    import sqlite3
    con = sqlite3.connect(os.path.join(legacy, "index.db"))
    con.execute("CREATE TABLE runs(id TEXT PRIMARY KEY, seq INTEGER NOT NULL, status TEXT NOT"
                " NULL, runner TEXT NOT NULL, tag TEXT NOT NULL, request TEXT NOT NULL, created"
                " TEXT NOT NULL, started TEXT, finished TEXT, exit_status INTEGER, headline"
                " TEXT, error TEXT)")
    req = {"runner": "fake", "model_path": MODEL, "input_dir": INPUT, "repeats": 3,
           "device": "cuda:0", "max_new_tokens": 64, "use_flash_attn": False, "tag": "default"}
    con.execute("INSERT INTO runs VALUES('20261101-000000-abcdef', 1, 'done', 'fake', 'default',"
                " ?, '2026-11-01T00:00:00Z', NULL, NULL, 0, NULL, NULL)", (json.dumps(req),))
    con.commit()
    con.close()
    srv3 = Server("legacy index server", legacy, ["--listen", "127.0.0.1:0",
                                                  *runner_args(fake)])
    if srv3.start():
        try:
            r = srv3.run("20261101-000000-abcdef")
            check(r.status == 200 and r.json.get("archive") is None and
                  r.json.get("trimmed") is None,
                  "an index of the first version is read, its runs whole", r)
        finally:
            srv3.stop()


def raw(srv, method, path, headers=None, body=None):
    """A request outside the contract's paths and rules: (status, headers, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    except (OSError, http.client.HTTPException) as e:
        return 0, {}, repr(e).encode()
    finally:
        conn.close()


def flow_http_rules(srv):
    """What the contract's description promises beyond its operations: 405 with Allow for a
    method a path does not have, 403 for a Host that names no loopback address (no token),
    a body over 64 KiB refused on its Content-Length."""
    for method, path, allow in (("PUT", "/runs", "GET, HEAD, POST"), ("POST", "/", "GET, HEAD"),
                                ("PATCH", "/runs/20261127-081500-a1b2c3", "GET, HEAD, DELETE"),
                                ("DELETE", "/runs/20261127-081500-a1b2c3/artifacts",
                                 "GET, HEAD"),
                                ("POST", "/openapi.yaml", "GET, HEAD")):
        status, hdrs, body = raw(srv, method, path)
        check(status == 405 and hdrs.get("allow") == allow and b"error" in body,
              f"{method} {path}: 405, Allow: {allow}", (status, hdrs.get("allow"), body[:200]))
    check(raw(srv, "PATCH", "/nowhere")[0] == 404, "a method on no path: 404")
    for host, want in (("evil.example", 403), ("evil.example:80", 403),
                       ("127.0.0.1.evil.example", 403), (f"localhost:{srv.port}", 200),
                       (f"127.0.0.1:{srv.port}", 200), ("[::1]", 200)):
        status, _, body = raw(srv, "GET", "/runs", {"Host": host})
        check(status == want, f"Host: {host} -> {want} (DNS rebinding guard)",
              (status, body[:200]))
    status, hdrs, body = raw(srv, "HEAD", "/openapi.yaml")
    check(status == 200 and body == b"" and int(hdrs.get("content-length", 0)) > 1000,
          "HEAD: GET's status and length, no body", (status, hdrs, body[:100]))
    # headers only, asking to go on: the answer must come before any body is sent
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    try:
        sock.sendall(b"POST /runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                     b"application/json\r\nExpect: 100-continue\r\nContent-Length: " +
                     str(MAX_BODY * 16).encode() + b"\r\n\r\n")
        first = sock.recv(200)
    except OSError as e:
        first = repr(e).encode()
    finally:
        sock.close()
    check(first.startswith(b"HTTP/1.1 413"),
          "a Content-Length over 64 KiB is refused on its headers, before its body", first)


def flow_token(fake):
    """A server on 0.0.0.0 with --token-file: 401 without or with a wrong token on every
    path, 200 with the right one, GET /openapi.yaml free."""
    runs = tempfile.mkdtemp(prefix="runs-token-", dir=TMP)
    token = "s3cr3t-T0ken_" + os.urandom(8).hex()
    tf = os.path.join(TMP, "token.txt")
    with open(tf, "w") as f:
        f.write(token + "\nthe second line is not the token\n")
    srv = Server("token server", runs, ["--listen", "0.0.0.0:0", "--token-file", tf,
                                        *runner_args(fake)], token=token)
    if not srv.start():
        return
    try:
        check(srv.host == "0.0.0.0", "token server: listens on 0.0.0.0 with a token", srv.line)
        r = srv.call("GET", "/openapi.yaml", token=None)
        check(r.status == 200, "token: GET /openapi.yaml needs no token", r)
        r = srv.call("GET", "/openapi.yaml")
        check(r.status == 200, "token: GET /openapi.yaml with the token", r)
        rid = check_accepted(srv.submit(), srv, "token run")
        run = srv.wait(rid) if rid else None
        check(run and run.get("status") == "done", "token: a run with the token ends done", run)
        rid = rid or "20000101-000000-000000"
        body = json.dumps({"model_path": MODEL, "input_dir": INPUT}).encode()
        reqs = [("GET", "/", {}, None), ("GET", "/runs", {}, None),
                ("POST", "/runs", {}, body), ("GET", "/runs/{run_id}", {"run_id": rid}, None),
                ("DELETE", "/runs/{run_id}", {"run_id": rid}, None),
                ("GET", "/runs/{run_id}/artifacts", {"run_id": rid}, None),
                ("GET", "/runs/{run_id}/artifacts/{name}",
                 {"run_id": rid, "name": "report.md"}, None)]
        wrong = [("no Authorization", None, None),
                 ("a wrong token", "wrong", None),
                 ("the token less its last character", token[:-1], None),
                 ("the token and one more character", token + "x", None),
                 ("the token without Bearer", None, {"Authorization": token}),
                 ("Basic", None, {"Authorization": "Basic " + token})]
        for method, tmpl, params, b in reqs:
            got = []
            for label, tok, hdrs in wrong:
                try:
                    r = srv.call(method, tmpl, params, body=b, token=tok, headers=hdrs)
                    said = (b'action="login"' in r.data if tmpl == "/" else r.error())
                    got.append((label, r.status) if r.status != 401 or not said else None)
                except (OSError, http.client.HTTPException, ValueError) as e:
                    got.append((label, repr(e)))
            got = [g for g in got if g]
            check(not got, f"token: {method} {tmpl} without the right token is 401", got)
        r = srv.call("POST", "/runs", body=b"{", token=None)
        check(r.status == 401, "token: a malformed body without a token is 401, not 400", r)
        r = srv.call("GET", "/runs/{run_id}", {"run_id": "20000101-000000-000000"}, token=None)
        check(r.status == 401, "token: an unknown run without a token is 401, not 404", r)
        run = srv.run(rid)
        check(run.status == 200 and (run.json or {}).get("status") == "done",
              "token: the DELETE without a token removed nothing", run)
        ok = [srv.call("GET", "/").status, srv.call("GET", "/runs").status, run.status,
              srv.call("GET", "/runs/{run_id}/artifacts", {"run_id": rid}).status,
              fetch(srv, rid, "report.md").status]
        check(ok == [200] * 5, "token: 200 with the right token", ok)
        flow_login(srv, token)
        flow_per_address(srv)
        flow_default_queue(srv)
    finally:
        srv.stop()


def flow_login(srv, token):
    """The page's login for a browser: GET / without the token is the form (401, HTML); a
    wrong token posted to /login is the form again; the right one is 303 to the page with an
    HttpOnly, SameSite=Strict cookie, which then opens the page and the API; a cookie that
    is the token itself, or wrong, opens nothing."""
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    r = srv.call("GET", "/", token=None)
    check(r.status == 401 and r.media == "text/html" and b'action="login"' in r.data and
          b'type="password"' in r.data, "login: GET / without the token is the form", r)
    r = srv.call("POST", "/login", body=b"token=wrong", ctype=None, token=None, headers=form)
    check(r.status == 401 and b'action="login"' in r.data and b"not the server" in r.data,
          "login: a wrong token is the form again (401)", r)
    r = srv.call("POST", "/login", body=("token=" + urllib.parse.quote(token)).encode(),
                 ctype=None, token=None, headers=form)
    cookie = r.headers.get("set-cookie", "")
    value = cookie.split(";")[0].split("=", 1)[-1]
    check(r.status == 303 and r.headers.get("location") == "./" and
          cookie.startswith("llmprof_token=") and "HttpOnly" in cookie and
          "SameSite=Strict" in cookie and value == token.encode().hex(),
          "login: the right token is 303 to the page with an HttpOnly, SameSite=Strict cookie",
          (r, r.headers))
    jar = {"Cookie": "other=1; llmprof_token=" + value}
    got = [srv.call("GET", "/", token=None, headers=jar).status,
           srv.call("GET", "/runs", token=None, headers=jar).status]
    check(got == [200, 200], "login: the cookie opens the page and the API", got)
    bad = [srv.call("GET", "/runs", token=None, headers={"Cookie": "llmprof_token=" + v}).status
           for v in (token, value[:-1], value + "0", "")]
    check(bad == [401] * 4, "login: a cookie that is not the one set opens nothing", bad)


def flow_ipv6(fake):
    """--listen [::1]:0 serves on IPv6 loopback; [::]:0 without a token is refused."""
    try:
        probe = socket.socket(socket.AF_INET6)
        probe.bind(("::1", 0))
        probe.close()
    except OSError as e:
        note(f"no IPv6 loopback here ({e}): --listen [::1] not checked")
        return
    srv = Server("IPv6 server", tempfile.mkdtemp(prefix="runs-v6-", dir=TMP),
                 ["--listen", "[::1]:0", *runner_args(fake)])
    if not srv.start():
        return
    try:
        check(srv.host == "[::1]", "IPv6: the listening line names [::1]", srv.line)
        conn = http.client.HTTPConnection("::1", srv.port, timeout=10)
        try:
            conn.request("GET", "/runs", headers={"Host": f"[::1]:{srv.port}"})
            r = conn.getresponse()
            got = (r.status, json.loads(r.read()))
        except (OSError, http.client.HTTPException, ValueError) as e:
            got = repr(e)
        finally:
            conn.close()
        check(got == (200, {"runs": []}), "IPv6: GET /runs on [::1] answers", got)
    finally:
        srv.stop()
    p = subprocess.run([LLMPROF, "serve", "--runs", os.path.join(TMP, "v6-public"),
                        "--listen", "[::]:0", *runner_args(fake)], capture_output=True,
                       text=True, timeout=30)
    check(p.returncode == 2 and "not a loopback address" in p.stderr,
          "IPv6: [::] without a token is refused", (p.returncode, p.stderr))


def flow_per_address(srv):
    """Beyond loopback one address holds 64 connections: of 65 idle ones the server closes
    one unanswered, the other 64 are answered, and once they go a request is answered again.
    Which one it closes is not fixed: its 4 threads accept them in no set order."""
    conns = []
    try:
        for _ in range(65):
            conns.append(socket.create_connection(("127.0.0.1", srv.port), timeout=10))
        # wait, sending nothing, until the server has closed one (EOF or reset on it)
        closed, deadline = [], time.monotonic() + 10
        while not closed and time.monotonic() < deadline:
            ready, _, _ = select.select(conns, [], [], 0.2)
            for c in ready:
                try:
                    data = c.recv(100)
                except OSError as e:
                    data = repr(e).encode()
                closed.append(data)
        time.sleep(0.2)     # a second refusal, were there one, shows now
        ready, _, _ = select.select(conns, [], [], 0)
        closed += [b"(also readable)"] * max(0, len(ready) - len(closed))
        answered = 0
        for c in conns:
            if c in ready:
                continue
            c.sendall(b"GET /openapi.yaml HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            try:
                answered += c.recv(20).startswith(b"HTTP/1.1 200")
            except OSError:
                pass
    finally:
        for c in conns:
            c.close()
    check(len(closed) == 1 and not closed[0].startswith(b"HTTP") and answered == 64,
          "per address: of 65 connections one closed unanswered, 64 answered",
          (closed, answered))
    # the server learns of the 64 closes as it reads them: on a loaded machine not at once
    deadline = time.monotonic() + 10
    while True:
        r = srv.call("GET", "/openapi.yaml", timeout=5)
        if r.status == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    check(r.status == 200, "per address: answered again once they closed", r)


def flow_public_refused(fake):
    """--listen 0.0.0.0:0 without --token-file: exit status 2, a message on stderr."""
    runs = tempfile.mkdtemp(prefix="runs-public-", dir=TMP)
    errf = os.path.join(TMP, "public.stderr")
    with open(errf, "wb") as ef:
        p = spawn([LLMPROF, "serve", "--runs", runs, "--listen", "0.0.0.0:0",
                   *runner_args(fake)], stdout=subprocess.PIPE, stderr=ef, bufsize=0)
    out = read_line(p, 10)      # '' at its exit; a line when it started after all
    try:
        p.wait(0 if out else 10)
    except subprocess.TimeoutExpired:
        pass
    end_process(p)
    with open(errf, "rb") as f:
        err = f.read()
    check(p.returncode == 2 and err.strip() and "listening" not in out,
          "--listen 0.0.0.0:0 without --token-file: refused, status 2, a message on stderr",
          (p.returncode, out[:200], err[:300]))


def flow_default_listen(fake):
    """No --listen: 127.0.0.1:8470 (skipped when that port is taken)."""

    def free():
        """Whether 127.0.0.1:8470 can be bound now."""
        s = socket.socket()
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as a server would
            s.bind(("127.0.0.1", 8470))
            return True
        except OSError:
            return False
        finally:
            s.close()

    skip = "ok - # SKIP the default --listen: 127.0.0.1:8470 is taken"
    if not free():
        print(skip, flush=True)
        return
    runs = tempfile.mkdtemp(prefix="runs-default-", dir=TMP)
    srv = Server("default server", runs, runner_args(fake))
    if not srv.start(must=False):
        if free():      # not taken by another program meanwhile: the server's fault
            check(False, "without --listen: starts on 127.0.0.1:8470", srv.stderr()[-300:])
        else:
            print(skip, flush=True)
        return
    try:
        check(srv.host == "127.0.0.1" and srv.port == 8470,
              "without --listen: http://127.0.0.1:8470/", srv.line)
        check(srv.call("GET", "/openapi.yaml").status == 200,
              "the default server answers", srv.port)
    finally:
        srv.stop()


def check_coverage():
    """Every path+method of the YAML exercised, and every status it lists seen."""
    missing = [f"{m} {p}" for (p, m) in CONTRACT.ops
               if not any(s[0] == p and s[1] == m for s in CONTRACT.seen)]
    check(not missing, "every path and method of docs/openapi.yaml was exercised", missing)
    unseen = [f"{m} {p} {c}" for (p, m), resp in CONTRACT.ops.items() for c in resp
              if (p, m, c) not in CONTRACT.seen]
    unseen = [u for u in unseen if u not in ELSEWHERE]
    check(not unseen, "every status docs/openapi.yaml lists was answered at least once (but "
          f"those tests/serve_disk.sh answers: {sorted(ELSEWHERE)})", unseen)
    check(CONTRACT.violations == 0,
          f"all {CONTRACT.checked} responses checked followed docs/openapi.yaml",
          f"{CONTRACT.violations} did not")


def section(name, fn, *args):
    """Runs one flow; an exception is a failure of its own, the others still run."""
    try:
        return fn(*args)
    except Exception:  # noqa: BLE001 - reported, then the next flow runs
        check(False, f"{name} ran to its end", traceback.format_exc().splitlines()[-1])
        note(traceback.format_exc())
        return None


def cleanup():
    """Ends every process this test started and removes its temporary directory."""
    for p in list(PROCS):
        try:
            end_process(p, grace=2)
        except Exception:  # noqa: BLE001 - cleaning up
            pass
    if TMP:
        shutil.rmtree(TMP, ignore_errors=True)


def give_up(signum, frame):
    """The watchdog (SIGALRM) and SIGTERM: kill every process this test started, remove
    its files and exit 1; takes no lock the interrupted code may hold."""
    global PENDING
    if SPAWNING:        # spawn() calls it again once its process is in PROCS
        PENDING = signum
        return
    why = (f"the test finished within {WATCHDOG_S} s" if signum == signal.SIGALRM
           else f"the test ran to its end (ended by signal {signum})")
    os.write(1, f"\nnot ok - {why}\n".encode())
    for p in list(PROCS):
        if p.returncode is None:
            below = stop_tree(p.pid)
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            kill_stopped(below)
    if TMP:
        shutil.rmtree(TMP, ignore_errors=True)
    os.write(1, "".join(f"# failed: {w}\n" for w in T.failures).encode())
    os.write(1, f"# {T.passed} passed, {T.failed + 1} failed (gave up)\n".encode())
    os._exit(1)


def main(argv):
    """Runs every flow, cleans up, prints the summary; the exit status."""
    global LLMPROF, FAKE, TMP, MODEL, INPUT, SPEC, CONTRACT
    LLMPROF = os.path.abspath(argv[1] if len(argv) > 1 else
                              os.path.join(ROOT, "build", "bin", "llmprof"))
    FAKE = os.path.abspath(argv[2] if len(argv) > 2 else
                           os.path.join(ROOT, "build", "bin", "fake_cuda_app"))
    with open(SPEC_FILE) as f:
        SPEC = yaml.safe_load(f)
    CONTRACT = Contract(SPEC)
    t0 = time.monotonic()
    signal.signal(signal.SIGALRM, give_up)   # runs in this (the main) thread
    signal.signal(signal.SIGTERM, give_up)
    signal.alarm(WATCHDOG_S)
    self_test_validator()
    if not (os.access(LLMPROF, os.X_OK) and os.access(FAKE, os.X_OK)):
        check(False, "LLMPROF and FAKE_APP are executable", (LLMPROF, FAKE))
        print(f"# {T.passed} passed, {T.failed} failed")
        return 1
    TMP = tempfile.mkdtemp(prefix="llmprof-serve-test-")
    servers = []
    try:
        if " " in FAKE:      # the template splits on spaces
            link = os.path.join(TMP, "fake_cuda_app")
            os.symlink(FAKE, link)
            FAKE = link
        MODEL = os.path.join(TMP, "model.safetensors")
        open(MODEL, "wb").close()
        INPUT = os.path.join(TMP, "input")
        os.makedirs(INPUT)
        section("the refusal of a public address", flow_public_refused, FAKE)
        section("the default --listen", flow_default_listen, FAKE)
        main_runs = tempfile.mkdtemp(prefix="runs-main-", dir=TMP)
        # --keep: the flows below look into runs made earlier (retention has its own flow)
        srv = Server("main server", main_runs, ["--listen", "127.0.0.1:0", "--keep", "1000",
                                                *runner_args(FAKE)])
        servers.append(srv)
        if srv.start():
            section("GET /openapi.yaml", flow_openapi, srv)
            section("HTTP rules", flow_http_rules, srv)
            r = srv.call("POST", "/login", body=b"token=x", ctype=None,
                         headers={"Content-Type": "application/x-www-form-urlencoded"})
            check(r.status == 303 and "set-cookie" not in r.headers,
                  "login without a server token: 303 to the page, no cookie", (r, r.headers))
            rid = section("the fake run", flow_fake_run, srv)
            section("the runner template", flow_template, srv)
            section("the failing runner", flow_failing, srv)
            section("bad requests", flow_bad_requests, srv)
            if rid:
                secret = section("traversal", flow_traversal, srv, rid)
                section("the load test", flow_load, srv, rid)
                if secret:
                    section("DELETE of a done run", flow_delete_finished, srv, rid, secret)
            if section("the restart", flow_restart, srv):
                section("kill -9", flow_kill9, srv)
        qsrv = Server("queue server", tempfile.mkdtemp(prefix="runs-queue-", dir=TMP),
                      ["--listen", "127.0.0.1:0", "--queue", "2", *runner_args(FAKE)])
        servers.append(qsrv)
        if qsrv.start():
            section("the queue and cancelling", flow_queue_cancel, qsrv)
            section("cancel at start", flow_cancel_at_start, qsrv)
        section("the token", flow_token, FAKE)
        section("retention", flow_retention, FAKE)
        section("IPv6", flow_ipv6, FAKE)
        check_coverage()
    finally:
        for srv in servers:
            try:
                srv.stop()
            except Exception:  # noqa: BLE001 - cleaning up
                pass
        signal.alarm(0)
        cleanup()
    for what in T.failures:
        print("# failed: " + what)
    print(f"# {T.passed} passed, {T.failed} failed, {time.monotonic() - t0:.1f} s")
    return 1 if T.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
