#!/usr/bin/env bash
# The HTML report in headless Chromium: it renders (the page marks itself rendered), shows
# its tables (LLM metrics, stages, utilisation, GEMMs with and without shapes, kernels, CUPTI's
# overhead records, CUDA graphs on a graph-replayed decode, DeepSeek-OCR-2's TTFT by part and tokens, operators by input shapes, PM samples, a
# serving loop's section) and
# charts (stage shading and time ticks on one time axis), and logs nothing on the console. A copy with an injected
# script error must be caught, so this test can fail.
# Usage: html_report.sh LLMPROF CHROMIUM FIXTURES_DIR CONFIGS_DIR GEN_HOSTILE
set -u
LP=$1 CHROME=$2 FIX=$3 CONF=$4 GEN_HOSTILE=$5
# a missing browser is a failure, not a skip: the set-up installs it
if ! command -v "$CHROME" >/dev/null; then
    echo "not ok - chromium not found ('$CHROME'): install it with scripts/deps.sh" \
        "(as root: source scripts/deps.sh; lp_deps chromium) or run scripts/test.sh, which does"
    exit 1
fi
T=$(mktemp -d /tmp/lp_html.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
render() { # FILE -> $T/dom.html, $T/console.txt
    timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --disable-default-apps \
        --user-data-dir="$T/profile" --enable-logging=stderr --v=0 --virtual-time-budget=5000 \
        --dump-dom "file://$1" >"$T/dom.html" 2>"$T/chrome.err"
    grep "CONSOLE" "$T/chrome.err" >"$T/console.txt" || true
}
check() { # WHAT CONDITION...
    local what=$1
    shift
    if "$@"; then echo "ok - $what"; else echo "not ok - $what"; fail=1; fi
}
# the MoE fixture: warm-up found, GEMMs with and without shapes, steps inside decode ranges
"$LP" report "$FIX/hf-moe" -o "$T/run" --model "$FIX/hf-moe/config.json" --quiet ||
    { echo "not ok - llmprof report failed"; exit 1; }
render "$T/run/report.html"
check "the page rendered" grep -q 'data-rendered="1"' "$T/dom.html"
check "no script errors in the page" bash -c "! grep -q 'data-errors' '$T/dom.html'"
check "no console messages" test ! -s "$T/console.txt"
check "no baseline: its section hidden" grep -q '<div id="baseline-part" hidden="">' "$T/dom.html"
check "no communication: its section hidden" grep -q '<div id="comm-part" hidden="">' "$T/dom.html"
check "four charts" test "$(grep -o '<svg' "$T/dom.html" | wc -l)" -ge 4
check "stage table rows" grep -q '<td class="t">decode</td>' "$T/dom.html"
check "kernel table rows" grep -q 'nvjet_sm90' "$T/dom.html"
check "MFU shown" grep -q 'MFU (request)' "$T/dom.html"
check "TTFT/TPOT/ITL table" grep -q '<td class="t">ITL</td>' "$T/dom.html"
check "warm-up said" grep -q 'Set apart as warm-up' "$T/dom.html"
check "GEMM shape table" grep -q '102400 x 1 x 2048' "$T/dom.html"
check "GEMMs without shapes" grep -q 'GemmUniversal' "$T/dom.html"
check "utilisation per stage" grep -q 'measured MFU (GEMMs)' "$T/dom.html"
check "stage shading on the time axis" grep -q 'fill="#cfe9dc"' "$T/dom.html"
check "time ticks" test "$(grep -Eo '>[0-9.]+ (ms|s)</text>' "$T/dom.html" | wc -l)" -ge 8
check "CUPTI's overhead records: their section" grep -q '<div id="overhead-part"><h2>Host time CUPTI recorded</h2>' "$T/dom.html"
check "CUPTI's overhead records: lazy loading row" grep -q 'lazy function loading</td><td class="t">CUDA loading code</td><td>102</td><td>3.687 ms</td>' "$T/dom.html"
check "CUPTI's overhead records: per stage" grep -q '<td class="t">warmup</td><td>1.899 ms (0.1 %)</td><td>3.177 ms (0.1 %)</td>' "$T/dom.html"
# idle gaps in the set-up before the axis' origin (it starts after the warm-up): said so,
# never a negative number of nanoseconds (issue 46)
check "gaps before the axis said so" grep -q 'before the axis</td>' "$T/dom.html"
check "no negative times" bash -c "! grep -Eq '<td>-[0-9]' '$T/dom.html'"
check "no network references" bash -c "! grep -Eq '(src|href)=\"(https?:)?//' '$T/run/report.html'"
# a graph-replayed decode: replayed GEMM rows and the CUDA graphs table
"$LP" report "$FIX/graph-compile" -o "$T/graph" --quiet ||
    { echo "not ok - llmprof report failed on graph-compile"; exit 1; }
render "$T/graph/report.html"
check "graph fixture: the page rendered" grep -q 'data-rendered="1"' "$T/dom.html"
check "graph fixture: no console messages" test ! -s "$T/console.txt"
check "graph fixture: replayed GEMM rows" grep -q 'decode (replayed)' "$T/dom.html"
check "graph fixture: CUDA graphs table" grep -q '<h3>CUDA graphs</h3>' "$T/dom.html"
# DeepSeek-OCR-2: the prompt's image and text tokens, the TTFT by part, the MoE experts
"$LP" report "$FIX/deepseek-ocr2" -o "$T/ocr2" --model "$FIX/deepseek-ocr2/config.json" --quiet ||
    { echo "not ok - llmprof report failed on deepseek-ocr2"; exit 1; }
render "$T/ocr2/report.html"
check "ocr2 fixture: the page rendered" grep -q 'data-rendered="1"' "$T/dom.html"
check "ocr2 fixture: no console messages" test ! -s "$T/console.txt"
check "ocr2 fixture: image and text tokens" grep -q '257 image slots' "$T/dom.html"
check "ocr2 fixture: TTFT by part" grep -q '<h3>TTFT by part</h3>' "$T/dom.html"
check "ocr2 fixture: SAM's share" grep -q 'sam 26.7 %' "$T/dom.html"
check "ocr2 fixture: MoE expert time" grep -q '4.407 ms (29.5 %)' "$T/dom.html"
# operators by input shapes (DeepSeek-OCR under emit_nvtx(record_shapes=True))
"$LP" report "$FIX/deepseek-ocr-operators/repeat-1" -o "$T/ops" --quiet ||
    { echo "not ok - llmprof report failed on deepseek-ocr-operators"; exit 1; }
render "$T/ops/report.html"
check "operators fixture: no console messages" test ! -s "$T/console.txt"
check "operators fixture: the table by input shapes" grep -q '<h3>By input shapes</h3>' "$T/dom.html"
check "operators fixture: a grouped GEMM's shapes and calls" grep -qF \
    '<td class="t">aten::_grouped_mm</td><td class="t" title="[[1740, 1280], [64, 1280, 1792], [64], [], []]">[[1740, 1280], [64, 1280, 1792], [64], [], []]</td><td>22</td>' \
    "$T/dom.html"
# PM sampling, --light (no kernels): the sampled throughputs on the samples' own axis
"$LP" report "$FIX/pm-hf-llama-only" -o "$T/pm" --quiet ||
    { echo "not ok - llmprof report failed on pm-hf-llama-only"; exit 1; }
render "$T/pm/report.html"
check "pm fixture: the page rendered" grep -q 'data-rendered="1"' "$T/dom.html"
check "pm fixture: no console messages" test ! -s "$T/console.txt"
check "pm fixture: throughput chart" grep -q 'aria-label="GPU throughput sampled over time"' "$T/dom.html"
check "pm fixture: tensor-pipe line drawn" grep -q 'stroke="#d64545"' "$T/dom.html"
check "pm fixture: per-stage table" grep -q '<td class="t">(whole run)</td>' "$T/dom.html"
check "pm fixture: time ticks" test "$(grep -Eo '>[0-9.]+ (ms|s)</text>' "$T/dom.html" | wc -l)" -ge 8
check "pm fixture: no busy chart, said so" grep -q 'GPU busy and idle gaps: not recorded' "$T/dom.html"
check "pm fixture: no attribution counts" grep -q 'Kernels: not recorded (--light)' "$T/dom.html"
# a serving loop with the request convention: its section, the iterations chart, the kinds
"$LP" report "$FIX/serve-graphs-mark" -o "$T/serve" --quiet ||
    { echo "not ok - llmprof report failed on serve-graphs-mark"; exit 1; }
render "$T/serve/report.html"
check "serving fixture: the page rendered" grep -q 'data-rendered="1"' "$T/dom.html"
check "serving fixture: no console messages" test ! -s "$T/console.txt"
check "serving fixture: its section" grep -q '<h2>Serving</h2>' "$T/dom.html"
check "serving fixture: iterations chart" grep -q 'aria-label="Serving iterations"' "$T/dom.html"
check "serving fixture: its legend" grep -q 'decode sequences (left)' "$T/dom.html"
check "serving fixture: kinds table" grep -q '<td class="t">mixed</td>' "$T/dom.html"
check "serving fixture: the requests' TTFT" grep -q '<td class="t">TTFT (request marks)</td>' "$T/dom.html"
# --light --counters: no kernels and no PM samples; the stage ranges give the time axis
"$LP" report "$FIX/ctr-hf-llama-only" -o "$T/ctronly" --quiet ||
    { echo "not ok - llmprof report failed on ctr-hf-llama-only"; exit 1; }
render "$T/ctronly/report.html"
check "counters, no kernels: the page rendered" grep -q 'data-rendered="1"' "$T/dom.html"
check "counters, no kernels: no console messages" test ! -s "$T/console.txt"
check "counters, no kernels: time ticks" test "$(grep -Eo '>[0-9.]+ (ms|s)</text>' "$T/dom.html" | wc -l)" -ge 6
# capture windows (one decode step in eight): said before any figure, listed with their
# energy, and the busy line broken between them (not drawn as idle)
"$LP" report "$FIX/capture-nvtx-hf" -o "$T/win" --quiet ||
    { echo "not ok - llmprof report failed on capture-nvtx-hf"; exit 1; }
render "$T/win/report.html"
check "windows: the page rendered" grep -q 'data-rendered="1"' "$T/dom.html"
check "windows: no console messages" test ! -s "$T/console.txt"
check "windows: said at the top" grep -q 'Capture windows (--capture nvtx:^step$/8): kernels were recorded in 6 windows' "$T/dom.html"
check "windows: their table" test "$(grep -o '<td>[0-9]</td><td>[0-9.]* [mu]*s</td>' "$T/dom.html" | wc -l)" -ge 6
check "windows: busy line in pieces" test "$(grep -o '<path d="[^"]*" fill="none" stroke="#3b6fd4"' "$T/dom.html" | head -1 | grep -o ' M' | wc -l)" -ge 4
# against a baseline (report --baseline): the eager decode is the baseline of the graph one
"$LP" report "$FIX/diff-graph-1" --baseline "$FIX/diff-eager-1" -o "$T/base" --quiet ||
    { echo "not ok - llmprof report --baseline failed"; exit 1; }
render "$T/base/report.html"
check "baseline: the page rendered" grep -q 'data-rendered="1"' "$T/dom.html"
check "baseline: no console messages" test ! -s "$T/console.txt"
check "baseline: the section shown" bash -c "grep -q '<div id=\"baseline-part\"><h2>Against the baseline</h2>' '$T/dom.html'"
check "baseline: TPOT faster beyond the noise" grep -q '<td class="t">TPOT p50</td><td>4.019 ms</td><td>894.1 us</td><td>-77.8 % (-79.4 … -76.1 %)</td><td class="t">lower (better)</td>' "$T/dom.html"
check "baseline: the graph replay added" grep -q '>\[CUDA graph replay\]</td><td class="t">added</td><td>0 → 1</td>' "$T/dom.html"
check "baseline: kernels per step" grep -q '<td class="t">kernels per step</td><td>309</td><td>1</td>' "$T/dom.html"
# a rank of a tensor-parallel run: its communication and overlap per stage
"$LP" report "$FIX/tp-manual" -o "$T/tp" --quiet ||
    { echo "not ok - llmprof report failed on tp-manual"; exit 1; }
render "$T/tp/trace.rank0.vm.743/report.html"
check "tp rank: the page rendered" grep -q 'data-rendered="1"' "$T/dom.html"
check "tp rank: no console messages" test ! -s "$T/console.txt"
check "tp rank: communication per stage" grep -q '<td class="t">decode</td><td>45.939 ms</td><td>67.8 %</td><td>0 ns</td><td>0.0 %</td>' "$T/dom.html"
# more GEMM shapes than the table lists (a generated trace): the 200 shown, the rest of the
# listed ones in gemms.csv, and the shapes past LP_GEMM_ROWS_MAX counted
"$GEN_HOSTILE" "$T/shapes.lpt" shapes 1300 && "$LP" report "$T/shapes.lpt" -o "$T/shapes" --quiet ||
    { echo "not ok - llmprof report failed on 1300 GEMM shapes"; exit 1; }
render "$T/shapes/report.html"
check "shapes: the page rendered" grep -q 'data-rendered="1"' "$T/dom.html"
check "shapes: no console messages" test ! -s "$T/console.txt"
check "shapes: the listed ones past 200 in gemms.csv" grep -q '800 more shapes in gemms.csv.' "$T/dom.html"
check "shapes: the unlisted counted" grep -q '300 shapes more, of 300 calls and [0-9.]* [^ ]*s of GPU time ([0-9.]* % of the table.s), are counted in the figures above but listed nowhere: the table keeps the 1000 costliest.' "$T/dom.html"
# more CUDA graphs than the table lists: the rows past LP_GRAPH_ROWS_MAX counted
"$GEN_HOSTILE" "$T/replays.lpt" replays 1100 && "$LP" report "$T/replays.lpt" -o "$T/replays" --quiet ||
    { echo "not ok - llmprof report failed on 1100 graphs"; exit 1; }
render "$T/replays/report.html"
check "graphs: the page rendered" grep -q 'data-rendered="1"' "$T/dom.html"
check "graphs: no console messages" test ! -s "$T/console.txt"
check "graphs: the unlisted counted" grep -q '100 rows more, of 100 replays and [0-9.]* [^ ]*s of GPU time, are counted in the stages.* figures but listed nowhere: the table keeps the 1000 of most GPU time.' "$T/dom.html"
# the negative control: the detector must see a broken page
sed 's|document.body.dataset.rendered = "1";|undefinedFunction(); document.body.dataset.rendered = "1";|' \
    "$T/run/report.html" >"$T/broken.html"
render "$T/broken.html"
check "a broken page is caught" bash -c "grep -q Uncaught '$T/console.txt' && ! grep -q 'data-rendered=\"1\"' '$T/dom.html'"
cat "$T/console.txt"
exit $fail
