#!/usr/bin/env bash
# Issue 52 on the GPU machine: format 1.8's numbered chunks and END account on real
# recordings. A clean run reads with no warning and its END account matching; a run killed
# mid-decode (SIGKILL) reads to its last whole chunk with no "missing" or "altered" claim; the
# clean trace with a RECORDS chunk repeated, one removed, and the chunks reversed says each
# (and counts no record twice).
# Writes integrity-log.txt under $OUT. Expects build/ carried.
. "$(dirname "$0")/setup.sh" integrity
fails=0
S=tests/gpu/triton_decoder.py
check() { if eval "$2"; then echo "ok - $1"; else echo "not ok - $1"; fails=$((fails + 1)); fi; }
step "clean run"
"$L" record -o "$T/clean" -- "$PY" $S --requests 2 --new-tokens 16 >/dev/null || fails=$((fails + 1))
timeout 60 "$L" info "$T/clean" | tee "$T/clean.info" | head -20
check "format 1.8" "grep -q 'format 1.8' $T/clean.info"
check "no warning" "! grep -qi 'warning\|altered\|missing\|repeat' $T/clean.info"
check "lost 0" "grep -q 'lost     0 records' $T/clean.info"
step "killed mid-run"
# the shell under record starts the program and kills it (SIGKILL) 20 s in: its trace has
# no END chunk, as a crash leaves it
timeout 120 "$L" record -o "$T/killed" -- bash -c \
    "$PY $S --requests 50 --new-tokens 64 >/dev/null 2>&1 & sleep 20; kill -9 \$!; wait" \
    >/dev/null 2>&1
timeout 60 "$L" info "$T/killed" | tee "$T/killed.info" | head -30
check "killed: no missing or altered claim" "! grep -qi 'altered\|are missing\|repeat\|not in the order' $T/killed.info"
check "killed: read (no end chunk said)" "grep -q 'did not finish' $T/killed.info"
step "mutations of the clean trace"
tr=$(ls "$T"/clean/*.lpt)
"$PY" - "$tr" "$T" <<'PY'
import struct, sys
p, out = sys.argv[1], sys.argv[2]
d = open(p, 'rb').read()
ch, off = [], 16
while off + 32 <= len(d):
    n = struct.unpack_from('<I', d, off + 8)[0]
    ch.append(d[off:off + 32 + n]); off += 32 + n
types = [struct.unpack_from('<I', c, 4)[0] & 0xffff for c in ch]
seqs = [struct.unpack_from('<I', c, 28)[0] for c in ch]
print("chunks", len(ch), "types", types[:6], "...", "seqs", seqs[:6], "...", seqs[-2:])
rec = [i for i, t in enumerate(types) if t == 2]
mid = rec[len(rec) // 2]
def put(name, chunks):
    import os
    os.makedirs(f"{out}/{name}", exist_ok=True)
    open(f"{out}/{name}/trace.x.1.lpt", 'wb').write(d[:16] + b''.join(chunks))
put("repeated", [c for i, c in enumerate(ch) for _ in (range(2) if i in rec else range(1))])
put("removed", [c for i, c in enumerate(ch) if i != mid])
put("reversed", [ch[0]] + ch[1:][::-1])
PY
for m in repeated removed reversed; do
    timeout 60 "$L" info "$T/$m" > "$T/$m.info" 2>&1
    grep -i "warning\|repeat\|missing\|order\|lost\|kernels ran" "$T/$m.info" | head -8
done
k() { grep -o 'records  [0-9]* kernels' "$1" | grep -o '[0-9]*'; }
check "repeated: kernels as in the clean trace" "[ \"$(k $T/repeated.info)\" = \"$(k $T/clean.info)\" ]"
check "repeated said" "grep -q 'each read once' $T/repeated.info"
check "removed said" "grep -q 'is missing' $T/removed.info"
check "reversed said" "grep -q 'not in the order' $T/reversed.info"
check "reversed: kernels as in the clean trace" "[ \"$(k $T/reversed.info)\" = \"$(k $T/clean.info)\" ]"
"$L" report "$T/repeated" -o "$T/rep-repeated" --quiet && grep -n -i "altered" "$T/rep-repeated/summary.md" "$T/rep-repeated/report.md" | head -5
echo "failures: $fails"
