#!/usr/bin/env bash
# Every output of report, export, diff, info and model on every committed fixture and config,
# reduced to one SHA-256 per file (and each command's exit status) and compared with
# tests/golden.sha256. A restructuring that must not change behaviour proves it here; a change
# meant to alter an output regenerates the list with --write and shows which files moved.
# Usage: golden.sh LLMPROF SOURCE_DIR [--write]
set -u
LP=$1
WRITE=${3:-}
cd "$2" || exit 1
T=$(mktemp -d /tmp/lp_golden.XXXXXX)
trap 'rm -rf "$T"' EXIT
source tests/cli_lib.sh
LIST=tests/golden.sha256
NEW=$T/list
: >"$NEW"

# run LABEL COMMAND...: the status, stdout's and stderr's hashes under LABEL (this temporary
# directory's name, which differs each time, read as TMP)
run() {
    local label=$1
    shift
    "$@" >"$T/out" 2>"$T/err"
    echo "status $? $label" >>"$NEW"
    echo "$(sed "s|$T|TMP|g" "$T/out" | sha256sum | cut -c1-64) $label/stdout" >>"$NEW"
    echo "$(sed "s|$T|TMP|g" "$T/err" | sha256sum | cut -c1-64) $label/stderr" >>"$NEW"
}
# hashes LABEL DIR-OR-FILE: one line per file written
hashes() {
    local label=$1 path=$2 f
    if [ -d "$path" ]; then
        for f in "$path"/*; do
            [ -f "$f" ] && echo "$(sha256sum <"$f" | cut -c1-64) $label/$(basename "$f")" >>"$NEW"
        done
    elif [ -f "$path" ]; then
        echo "$(sha256sum <"$path" | cut -c1-64) $label" >>"$NEW"
    fi
}

for dir in tests/fixtures/*/; do
    fx=$(basename "$dir")
    traces=("$dir"*.lpt)
    [ -e "${traces[0]}" ] || continue
    model=()
    [ -f "$dir/config.json" ] && model=(--model "$dir/config.json")
    run "report/$fx" "$LP" report "$dir" "${model[@]}" -o "$T/r/$fx" --quiet
    hashes "report/$fx" "$T/r/$fx"
    run "info/$fx" "$LP" info "$dir"
    run "export-json/$fx" "$LP" export "${traces[0]}" --perfetto -
    run "export-sqlite/$fx" "$LP" export "${traces[0]}" --sqlite "$T/$fx.db"
    # the database's rows (its file's bytes depend on SQLite's page layout, not on llmprof)
    [ -f "$T/$fx.db" ] && run "export-sqlite/$fx/rows" sqlite3 "$T/$fx.db" .dump
done

# directories of repeats (profile --repeat): the comparison and each repeat's report
for dir in tests/fixtures/*/; do
    fx=$(basename "$dir")
    [ -d "$dir/repeat-1" ] || continue
    model=()
    [ -f "$dir/config.json" ] && model=(--model "$dir/config.json")
    run "report/$fx" "$LP" report "$dir" "${model[@]}" -o "$T/r/$fx"
    hashes "report/$fx" "$T/r/$fx"
    for rep in "$T/r/$fx"/repeat-*; do
        hashes "report/$fx/$(basename "$rep")" "$rep"
    done
done

# the example query of export's --help, run as printed on a fixture's database (issue 49)
query=$("$LP" export --help | sed -n "/sqlite3 run1.db/,/LIMIT/p" | tr '\n' ' ' | sed "s/^[^']*'//; s/'.*//")
"$LP" export tests/fixtures/hf-llama --sqlite "$T/q.db" >/dev/null 2>&1
run "export-help-query" sqlite3 "$T/q.db" "$query"
grep -q "^status 0 export-help-query$" "$NEW" && [ -n "$query" ] ||
    bad "export --help's example query does not run as printed: $query"

for pair in diff-eager-1:diff-eager-2 diff-graph-1:diff-graph-2 hf-llama:hf-llama-b4 \
    triton-dec:triton-dec-ctr serve-eager:serve-graphs graph-decode:diff-graph-1; do
    a=tests/fixtures/${pair%%:*} b=tests/fixtures/${pair##*:}
    run "diff/$pair" "$LP" diff "$a" "$b" -o "$T/d/$pair"
    hashes "diff/$pair" "$T/d/$pair"
done

for cfg in tests/configs/*.json; do
    c=$(basename "$cfg" .json)
    run "model/$c" "$LP" model "$cfg" --gpu H200
    run "model-json/$c" "$LP" model "$cfg" --gpu H200 --format json
done

if [ "$WRITE" = --write ]; then
    cp "$NEW" "$LIST"
    ok "$LIST written: $(wc -l <"$LIST") lines"
elif ! command -v sqlite3 >/dev/null; then
    bad "sqlite3 is not installed (scripts/deps.sh installs it): the export rows cannot be read"
elif diff -u "$LIST" "$NEW" >"$T/diff"; then
    ok "$(wc -l <"$LIST") outputs and statuses unchanged"
else
    bad "outputs changed (regenerate with: tests/golden.sh LLMPROF . --write, after review):"
    grep '^[-+][^-+]' "$T/diff" | head -40
fi
finish
