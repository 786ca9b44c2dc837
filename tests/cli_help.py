#!/usr/bin/env python3
"""Every --help against the option table it is printed from (issue 53).

For llmprof itself and each command `llmprof --help` lists, the hidden first word
`--list-options` prints every spelling the command's table accepts (src/cli/options.h). The
test fails when
  - an option the command accepts is not named in its --help (-h and --help excepted: every
    command takes them and `llmprof --help` says so);
  - its --help names a flag it does not accept, unless the same line names another command
    that accepts it ("record --light", "'llmprof model'"), or WHITELIST below holds it with
    its reason;
  - a mistyped option (its last letter dropped) gets no "did you mean" naming the nearest
    option, or a status other than 2; or a mistyped value of a named set gets no candidate.
Usage: cli_help.py LLMPROF
"""
import re
import subprocess
import sys

LP = sys.argv[1]

# (command, flag): why its --help names a flag the command does not take. "" is llmprof.
WHITELIST = {
    ("record", "--capture-range"): "nsys's option, quoted to say what --capture cuda-profiler matches",
    ("record", "--capture-range-end"): "nsys's option, as above",
    ("deep", "--graph-profiling"): "ncu's option, named as deep gives it to ncu",
}
# every command takes these, and `llmprof --help` says "'llmprof <command> --help'"
ALWAYS = {"-h", "--help"}

passed = failed = 0
used = set()


def ok(what):
    global passed
    passed += 1
    print(f"ok - {what}")


def bad(what):
    global failed
    failed += 1
    print(f"not ok - {what}")


def run(*args):
    p = subprocess.run([LP, *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def options_of(cmd):
    """{spelling: value name or None} of what CMD accepts ("": llmprof itself)"""
    rc, out, err = run(*([cmd] if cmd else []), "--list-options")
    if rc != 0 or not out.strip():
        bad(f"'llmprof {cmd} --list-options': status {rc}, {err.strip()}")
        return {}
    opts = {}
    for line in out.splitlines():
        name, _, arg = line.partition("\t")
        opts[name] = arg or None
    return opts


def token(flag):
    """FLAG as a whole word: not inside a longer flag or a word"""
    return re.compile(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])")


# a long flag, or a short one of one letter ("-o"; not "-LAST" of a syntax, "kill -USR1")
FLAG = re.compile(r"(?<![\w-])(--[A-Za-z][\w-]*|-[A-Za-z](?![\w-]))")


def edit_distance(a, b):
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        diag, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            diag, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diag + (ca != cb))
    return row[len(b)]


rc, top_help, _ = run("--help")
m = re.search(r"^commands:\n((?:  \S.*\n)+)", top_help, re.M)
commands = [line.split()[0] for line in m.group(1).splitlines()] if m else []
if len(commands) >= 8:
    ok(f"llmprof --help lists {len(commands)} commands: {' '.join(commands)}")
else:
    bad(f"llmprof --help: commands not found ({commands})")

tables = {cmd: options_of(cmd) for cmd in [""] + commands}

for cmd in [""] + commands:
    name = f"llmprof {cmd}".strip()
    opts = tables[cmd]
    rc, text, err = run(*([cmd] if cmd else []), "--help")
    if rc != 0 or not text:
        bad(f"{name} --help: status {rc}, {err.strip()}")
        continue
    # every option the table takes, named in --help
    missing = [o for o in opts if o not in ALWAYS and not token(o).search(text)]
    if missing:
        bad(f"{name} --help does not name {', '.join(missing)}, which it takes")
    else:
        ok(f"{name} --help names all {len(opts)} spellings of its options")
    # every flag --help names, taken (or another command's, said on its line)
    wrong = []
    for line in text.splitlines():
        # an example's words after " -- " are the profiled command's own
        for flag in FLAG.findall(line.split(" -- ")[0]):
            if flag in opts:
                continue
            if (cmd, flag) in WHITELIST:
                used.add((cmd, flag))
                continue
            others = [c for c in commands if c != cmd and flag in tables[c]
                      and re.search(r"(?<![\w-])" + c + r"(?![\w-])", line)]
            if not others:
                wrong.append(f"{flag} ({line.strip()!r})")
    if wrong:
        bad(f"{name} --help names flags it does not take: {'; '.join(wrong)}")
    else:
        ok(f"{name} --help names no flag it does not take")
    # a mistyped option: "did you mean" the nearest, status 2, nothing run
    longs = [o for o in opts if o.startswith("--") and len(o) >= 6]
    for o in longs:
        typo = o[:-1]
        if typo in opts:
            continue
        best = min(edit_distance(typo, x) for x in opts if x.startswith("--"))
        nearest = {x for x in opts if x.startswith("--") and edit_distance(typo, x) == best}
        rc, out, err = run(*([cmd] if cmd else []), typo)
        said = re.search(r"did you mean '([^']*)'", err)
        if rc == 2 and said and said.group(1) in nearest and not out:
            continue
        bad(f"{name} {typo}: status {rc}, {err.strip()!r} (wanted 'did you mean' {sorted(nearest)})")
        break
    else:
        ok(f"{name}: each of {len(longs)} options mistyped gets 'did you mean' it")

for key, why in WHITELIST.items():
    if key not in used:
        bad(f"whitelist entry {key} ({why}) is no longer needed: remove it")

# values of a named set: a near miss gets its candidate
CFG = "tests/configs/gpt2.json"
for args, want in [
    (["model", CFG, "--format", "jsn"], "did you mean 'json'"),
    (["model", CFG, "--weights", "bf61"], "did you mean 'bf16'"),
    (["model", CFG, "--act", "bf1"], "did you mean 'bf16'"),
    (["model", CFG, "--prefill-logits", "lst"], "did you mean 'last'"),
    (["model", CFG, "--vision", "gundm"], "did you mean 'gundam'"),
    (["model", CFG, "--gpu", "H20"], "did you mean"),
    (["deep", "no-such-run", "--clock-control", "bsae", "--dry-run"], "did you mean 'base'"),
    (["report", "no-such-run", "--kv", "in8"], "did you mean 'int8'"),
]:
    rc, out, err = run(*args)
    if rc == 2 and want in err:
        ok(f"{' '.join(args[:1] + args[2:])}: {want}")
    else:
        bad(f"{' '.join(args)}: status {rc}, {err.strip()!r} (wanted {want!r})")

print(f"{passed} passed, {failed} failed, 0 skipped")
sys.exit(1 if failed else 0)
