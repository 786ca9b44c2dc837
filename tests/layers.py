#!/usr/bin/env python3
"""The structure docs/architecture.md describes, checked on the sources:
- no file of src/ calls a function of another file that calls it back (directly or round
  a longer circle), by the lp_ functions each file defines and calls;
- no include goes against the flow: collect -> trace -> analyze -> report, model beside
  analyze, the products built on single runs (compare: ranks and diff; deep: Nsight
  Compute's page and its join) between analyze and report, the CLI on top;
- the analysis writes no flag names (--model ...): the report layer says what to pass.
Usage: layers.py SOURCE_DIR. Prints what is wrong and exits 1, else says ok."""
import collections
import glob
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else '.'
src = os.path.join(root, 'src')
files = sorted(glob.glob(os.path.join(src, '*', '*.c')))
bad = []


def strip(text, strings=True):
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    text = re.sub(r'//[^\n]*', '', text)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', text) if strings else text


# --- circles between files -------------------------------------------------------------
code = {f: strip(open(f).read()) for f in files}
defined = {}
for f, text in code.items():
    for m in re.finditer(r'^[a-z][^;{}()]*?\b(lp_\w+)\s*\([^;{}]*?\)\s*\{', text, re.M | re.S):
        defined.setdefault(m.group(1), f)
calls = collections.defaultdict(set)
for f, text in code.items():
    for m in re.finditer(r'\b(lp_\w+)\s*\(', text):
        d = defined.get(m.group(1))
        if d and d != f:
            calls[f].add(d)
index, low, stack, on = {}, {}, [], set()


def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on.add(v)
    for w in calls[v]:
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop()
            on.discard(w)
            comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            names = sorted(os.path.relpath(x, src) for x in comp)
            bad.append('files calling each other in a circle: ' + ' '.join(names))


sys.setrecursionlimit(10000)
for f in files:
    if f not in index:
        visit(f)

# --- includes follow the flow ----------------------------------------------------------
# what each folder may include of the others (its own files always)
allowed = {
    'collect': {'trace'},
    'trace': set(),
    'model': set(),
    'analyze': {'trace', 'model'},
    'compare': {'trace', 'model', 'analyze'},
    'deep': {'trace', 'model', 'analyze'},
    'report': {'trace', 'model', 'analyze', 'compare', 'deep'},
    'serve': {'model'},
    'cli': {'trace', 'model', 'analyze', 'compare', 'deep', 'report', 'serve'},
}
header_layer = {'trace.h': 'trace', 'capture.h': 'trace', 'envconfig.h': 'trace',
                'follow.h': 'trace', 'live.h': 'analyze',
                'model.h': 'model', 'analyze.h': 'analyze', 'compare.h': 'compare',
                'deep.h': 'deep', 'ncu.h': 'deep', 'report.h': 'report',
                'serve.h': 'serve', 'status.h': None, 'version.h': None, 'sat.h': None}
for f in sorted(glob.glob(os.path.join(src, '*', '*.[ch]'))):
    layer = os.path.basename(os.path.dirname(f))
    for m in re.finditer(r'^#include\s+"([^"]+)"', open(f).read(), re.M):
        inc = m.group(1)
        if inc.startswith('llmprof/'):
            if inc[len('llmprof/'):] not in header_layer:
                bad.append(f'{os.path.relpath(f, root)} includes {inc}, whose layer this test '
                           'does not know: add it to header_layer')
                continue
            to = header_layer.get(inc[len('llmprof/'):])
        elif '/' in inc:
            to = inc.split('/')[0]
        else:
            continue
        if to and to != layer and to not in allowed.get(layer, set()):
            bad.append(f'{os.path.relpath(f, root)} includes {inc}: {layer} may not use {to}')

# --- the analysis names no flags -------------------------------------------------------
for f in sorted(glob.glob(os.path.join(src, 'analyze', '*.c'))):
    text = strip(open(f).read(), strings=False)
    for m in re.finditer(r'"(\\.|[^"\\\n])*"', text):
        if re.search(r'(^|[\s(])--[a-z]', m.group(0)[1:-1]):
            bad.append(f'{os.path.relpath(f, root)}: the analysis names a flag in {m.group(0)} '
                       '(say it in src/report/text.c)')

for b in bad:
    print('not ok -', b)
if bad:
    sys.exit(1)
print(f'ok - {len(files)} source files: no circles between files, includes follow the flow, '
      'no flag names in the analysis')
