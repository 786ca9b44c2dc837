/* Serving engines (serving.c): iterations, tokens and latency of continuous batching against
 * the engines' own timings (truth.json beside each H200 fixture, written by
 * tests/gpu/serve_engine.py and hf_batch.py), and the request convention's bad inputs on
 * built traces. */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "llmprof/report.h"
#include "tracebuild.h"

/* ---- the truth: the engine's own timings ---- */

struct truth {
    json_t *root, *iters, *reqs;
    size_t n_iters, first;        /* FIRST: the engine's iteration the trace's first one is */
};

static void truth_load(const char *name, struct truth *t)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/truth.json", LP_FIXTURES, name);
    json_error_t e;
    t->root = json_load_file(path, 0, &e);
    assert_non_null(t->root);
    t->iters = json_object_get(t->root, "iterations");
    t->reqs = json_object_get(t->root, "requests");
    t->n_iters = json_array_size(t->iters);
    json_t *engine = json_object_get(t->root, "engine");
    const char *win = json_string_value(json_object_get(engine, "profile_iters"));
    if (!win)
        win = json_string_value(json_object_get(engine, "signal_iters"));
    t->first = win ? (size_t)atoi(win) : 0;
}

static int64_t ti(const struct truth *t, size_t i, const char *key)
{
    return json_integer_value(json_object_get(json_array_get(t->iters, i), key));
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The Q quantile of the engine's per-request list or value KEY (seconds -> ns), as
 * lp_dist's: linear between the closest ranks. */
static double truth_quantile(const struct truth *t, const char *key, double q)
{
    size_t n = 0, cap = 1 << 16;
    double *v = malloc(cap * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < json_array_size(t->reqs); i++) {
        json_t *x = json_object_get(json_array_get(t->reqs, i), key);
        if (json_is_array(x)) {
            for (size_t j = 0; j < json_array_size(x) && n < cap; j++)
                v[n++] = json_real_value(json_array_get(x, j)) * 1e9;
        } else if (json_is_number(x) && n < cap) {
            v[n++] = json_number_value(x) * 1e9;
        }
    }
    assert_true(n > 0);
    qsort(v, n, sizeof *v, cmp_d);
    double x = q * (double)(n - 1), f = x - floor(x);
    size_t i = (size_t)x;
    double r = i + 1 < n ? v[i] * (1 - f) + v[i + 1] * f : v[i];
    free(v);
    return r;
}

static void within(double got, double want, double rel, const char *what)
{
    if (!(fabs(got - want) <= rel * want)) {
        print_error("%s: %.0f, the engine's timer %.0f (more than %.1f %% apart)\n", what, got,
                    want, 100 * rel);
        fail();
    }
}

struct fixture_run {
    struct lp_trace *t;
    struct lp_run r;
    struct truth truth;
};

static void load(const char *name, struct fixture_run *f)
{
    memset(f, 0, sizeof *f);
    f->t = tb_fixture(LP_FIXTURES, name);
    struct lp_run_options o = {0};
    analyze(f->t, &o, &f->r);
    truth_load(name, &f->truth);
}

static void unload(struct fixture_run *f)
{
    lp_run_free(&f->r);
    lp_trace_free(f->t);
    json_decref(f->truth.root);
}

/* The trace's iteration K is the engine's FIRST + K - 1 (the trace's first is the engine's
 * warm-up forward), or FIRST + K inside a profiler window (the trace holds only those). */
static size_t engine_index(const struct fixture_run *f, size_t k, int warmup)
{
    return f->truth.first + k - (warmup ? 1 : 0);
}

/* Iterations exact: one per forward pass, each with the engine's sequences sampled and
 * tokens in flight; with the convention also its decodes and prompt tokens. */
static void check_iterations(const char *name, int marked, int warmup, size_t off)
{
    struct fixture_run f;
    load(name, &f);
    const struct lp_serving *s = &f.r.serving;
    assert_int_not_equal(s->cause, LP_SERVING_CAUSE_NONE);
    size_t want = f.truth.n_iters - f.truth.first + (warmup ? 1 : 0);
    const char *sig = json_string_value(
        json_object_get(json_object_get(f.truth.root, "engine"), "signal_iters"));
    if (sig) /* the window closed before iteration B */
        want = (size_t)atoi(strchr(sig, ':') + 1) - f.truth.first;
    assert_int_equal(s->n_iters, want);
    size_t exact = 0;
    int64_t prefill = 0;
    for (size_t k = warmup ? 1 : 0; k < s->n_iters; k++) {
        size_t i = engine_index(&f, k, warmup);
        const struct lp_iteration *x = &s->iters[k];
        assert_int_equal(x->sampled, ti(&f.truth, i, "sampled"));
        /* a graph: its real rows; eager: the flat batch */
        assert_int_equal(x->tokens, ti(&f.truth, i, "tokens"));
        if (ti(&f.truth, i, "bucket") && x->bucket)
            assert_int_equal(x->bucket, ti(&f.truth, i, "bucket"));
        exact += x->decode == ti(&f.truth, i, "decode") &&
                 x->prefill_tokens == ti(&f.truth, i, "prefill_tokens");
        prefill += x->prefill_tokens;
    }
    size_t n = s->n_iters - (warmup ? 1 : 0);
    if (warmup) { /* the whole run: every token a forward ran, the warm-up's apart */
        int64_t ran = 0, fed = 0;
        for (size_t i = 0; i < json_array_size(f.truth.reqs); i++) {
            json_t *q = json_array_get(f.truth.reqs, i);
            fed += json_integer_value(json_object_get(q, "prompt")) +
                   json_integer_value(json_object_get(q, "generated")) - 1;
        }
        for (size_t k = 1; k < s->n_iters; k++)
            ran += s->iters[k].tokens;
        assert_int_equal(ran, fed);
    }
    if (marked) {
        assert_int_equal(exact, n);
        int64_t want_prefill = 0;
        for (size_t i = f.truth.first; i < f.truth.n_iters; i++)
            want_prefill += ti(&f.truth, i, "prefill_tokens");
        assert_int_equal(prefill, want_prefill);
    } else {
        /* inferred decodes: off only where a sequence finished the iteration before, or
         * right after a warm-up that sampled (not after the graph captures' idle second) */
        assert_int_equal(exact + off, n);
    }
    unload(&f);
}

static void iterations_eager(void **state)
{
    (void)state;
    check_iterations("serve-eager", 0, 1, 2);
}

static void iterations_eager_marked(void **state)
{
    (void)state;
    check_iterations("serve-eager-mark", 1, 1, 0);
}

static void iterations_graphs(void **state)
{
    (void)state;
    check_iterations("serve-graphs", 0, 1, 1);
}

static void iterations_graphs_marked(void **state)
{
    (void)state;
    check_iterations("serve-graphs-mark", 1, 1, 0);
}

static void iterations_graph_nodes(void **state)
{
    (void)state;
    check_iterations("serve-graphs-node", 1, 1, 0);
}

/* a profiler window of a running server: only the iterations inside it, no bucket (the
 * graphs were captured before it opened) */
static void iterations_window(void **state)
{
    (void)state;
    check_iterations("serve-window", 1, 0, 0);
}

/* a window opened and closed by SIGUSR1 (record --capture signal), eager */
static void iterations_signal(void **state)
{
    (void)state;
    check_iterations("serve-signal", 1, 0, 0);
}

/* Token-weighted ITL within 3 % of the engine's per-request gaps, p50 and p90; without
 * the convention no per-request figure at all, and no invented prefill/decode. */
static void check_latency(const char *name, int marked)
{
    struct fixture_run f;
    load(name, &f);
    const struct lp_serving *s = &f.r.serving;
    within(s->itl.p50, truth_quantile(&f.truth, "itl_s", 0.5), 0.03, "ITL p50");
    within(s->itl.p90, truth_quantile(&f.truth, "itl_s", 0.9), 0.03, "ITL p90");
    assert_int_equal(f.r.llm.found, 0);
    assert_int_equal(f.r.llm.why_not, LP_LLM_SERVING);
    assert_int_equal(f.r.stages_inferred, 0);
    assert_int_equal(f.r.llm.ttft.n, 0);
    if (!marked) {
        assert_int_equal(s->n_reqs, 0);
        assert_int_equal(s->ttft.n, 0);
        assert_int_equal(s->tpot.n, 0);
        assert_true(s->itl_inferred > 0);
    } else {
        size_t n = json_array_size(f.truth.reqs);
        assert_int_equal(s->n_reqs, n);
        assert_int_equal(s->ttft.n, n);
        assert_int_equal(s->reqs_cut + s->marks_unknown + s->ids_reused, 0);
        within(s->ttft.p50, truth_quantile(&f.truth, "ttft_s", 0.5), 0.03, "TTFT p50");
        within(s->ttft.p90, truth_quantile(&f.truth, "ttft_s", 0.9), 0.03, "TTFT p90");
        within(s->tpot.p50, truth_quantile(&f.truth, "tpot_s", 0.5), 0.03, "TPOT p50");
        within(s->tpot.p90, truth_quantile(&f.truth, "tpot_s", 0.9), 0.03, "TPOT p90");
        within(s->req_itl.p50, truth_quantile(&f.truth, "itl_s", 0.5), 0.03, "request ITL p50");
        int64_t tokens = 0;
        for (size_t i = 0; i < n; i++)
            tokens += json_integer_value(json_object_get(json_array_get(f.truth.reqs, i),
                                                         "generated"));
        assert_int_equal(s->generated, tokens);
        assert_int_equal(s->itl_inferred, 0);
        /* TTFT = queue wait + prefill; a prefill forward carries the others' tokens too */
        size_t split = 0;
        for (size_t i = 0; i < s->n_reqs; i++) {
            const struct lp_serving_request *q = &s->reqs[i];
            if (q->queue_ns < 0)
                continue;
            split++;
            assert_true(fabs(q->queue_ns + q->prefill_ns - q->ttft_ns) < 1);
            assert_true(q->prefill_ns > 0 && q->shared_tokens >= 0);
        }
        assert_int_equal(split, n);
        assert_true(s->queue.n == n && s->queue.p50 < s->ttft.p50);
    }
    unload(&f);
}

static void latency_eager(void **state)
{
    (void)state;
    check_latency("serve-eager", 0);
}

static void latency_eager_marked(void **state)
{
    (void)state;
    check_latency("serve-eager-mark", 1);
}

static void latency_graphs(void **state)
{
    (void)state;
    check_latency("serve-graphs", 0);
}

static void latency_graphs_marked(void **state)
{
    (void)state;
    check_latency("serve-graphs-mark", 1);
}

/* A window of a running server: the request marks are recorded all run, so TTFT and TPOT
 * are the whole run's, within 3 % of the engine's */
static void latency_windows(void **state)
{
    (void)state;
    static const char *const names[] = {"serve-window", "serve-signal"};
    for (size_t i = 0; i < 2; i++) {
        struct fixture_run f;
        load(names[i], &f);
        const struct lp_serving *s = &f.r.serving;
        assert_int_equal(s->ttft.n, json_array_size(f.truth.reqs));
        within(s->ttft.p50, truth_quantile(&f.truth, "ttft_s", 0.5), 0.03, "TTFT p50");
        within(s->ttft.p90, truth_quantile(&f.truth, "ttft_s", 0.9), 0.03, "TTFT p90");
        within(s->tpot.p50, truth_quantile(&f.truth, "tpot_s", 0.5), 0.03, "TPOT p50");
        within(s->tpot.p90, truth_quantile(&f.truth, "tpot_s", 0.9), 0.03, "TPOT p90");
        /* tokens generated: those of the iterations inside the window */
        int64_t in = 0;
        for (size_t k = 0; k < s->n_iters; k++)
            in += ti(&f.truth, f.truth.first + k, "sampled");
        assert_int_equal(s->generated, in);
        unload(&f);
    }
}

/* CUDA-graph decode buckets: every graph iteration's bucket is the engine's, the padding is
 * what the buckets hold beyond the real rows */
static void graph_buckets(void **state)
{
    (void)state;
    struct fixture_run f;
    load("serve-graphs", &f);
    const struct lp_serving *s = &f.r.serving;
    double rows = 0, pad = 0;
    size_t graphs = 0;
    for (size_t i = 0; i < f.truth.n_iters; i++)
        if (ti(&f.truth, i, "bucket")) {
            graphs++;
            rows += (double)ti(&f.truth, i, "bucket");
            pad += (double)(ti(&f.truth, i, "bucket") - ti(&f.truth, i, "sampled"));
        }
    size_t n = 0;
    for (size_t i = 0; i < s->n_buckets; i++)
        n += s->buckets[i].n;
    assert_int_equal(n, graphs);
    assert_true(fabs(s->padding_share - pad / rows) < 1e-12);
    assert_true(s->cls[LP_ITER_KIND_MIXED].n > 0 && s->interference_rows > 0);
    unload(&f);
}

/* Every token a forward ran: each prompt's, and each generated token but a request's last
 * (fed back for the next) */
static void tokens_in_flight(const struct lp_serving *s, json_t *root)
{
    int64_t want = 0, tokens = 0;
    json_t *p = json_object_get(root, "prompts"), *g = json_object_get(root, "generated");
    for (size_t i = 0; i < json_array_size(p); i++)
        want += json_integer_value(json_array_get(p, i)) +
                json_integer_value(json_array_get(g, i)) - 1;
    for (size_t i = 0; i < s->n_iters; i++)
        tokens += s->iters[i].tokens;
    assert_int_equal(tokens, want);
}

/* transformers' generate_batch: one flat prefill of 24 ragged prompts, then 47 decode steps
 * of the 24; no request, prompt or batch invented */
static void hf_generate_batch(void **state)
{
    (void)state;
    struct fixture_run f;
    load("hf-batch", &f);
    const struct lp_serving *s = &f.r.serving;
    json_t *prompts = json_object_get(f.truth.root, "prompts");
    int64_t prompt = 0;
    for (size_t i = 0; i < json_array_size(prompts); i++)
        prompt += json_integer_value(json_array_get(prompts, i));
    int64_t n_req = json_integer_value(json_object_get(f.truth.root, "requests"));
    assert_int_equal(s->cause, LP_SERVING_CAUSE_RAGGED);
    assert_int_equal(s->cause_value[0], prompt);
    assert_int_equal(s->cause_value[1], n_req);
    assert_int_equal(s->cls[LP_ITER_KIND_PREFILL].n, 1);
    assert_int_equal(s->cls[LP_ITER_KIND_PREFILL].prefill_tokens, prompt);
    assert_int_equal(s->cls[LP_ITER_KIND_DECODE].n, 47);
    assert_int_equal(s->cls[LP_ITER_KIND_DECODE].decode, 47 * n_req);
    assert_int_equal(s->generated, 48 * n_req);
    assert_int_equal(s->n_reqs, 0);
    tokens_in_flight(s, f.truth.root);
    assert_int_equal(f.r.llm.found, 0);
    assert_int_equal(f.r.llm.requests, 0);
    assert_int_equal(f.r.llm.prompt_tokens, 0);
    unload(&f);
}

/* transformers' ContinuousBatchingManager with requests arriving over time and a 256-token
 * budget: prompts prefilled in chunks beside the decodes. It samples partial prefills too
 * (docs/serving.md): its rows sampled are more than the tokens generated; the tokens in
 * flight stay exact */
static void hf_continuous_batching(void **state)
{
    (void)state;
    struct fixture_run f;
    load("hf-cb", &f);
    const struct lp_serving *s = &f.r.serving;
    assert_int_equal(s->cause, LP_SERVING_CAUSE_RAGGED);
    assert_true(s->cls[LP_ITER_KIND_MIXED].n > 0 && s->cls[LP_ITER_KIND_DECODE].n > 0);
    assert_int_equal(s->cls[LP_ITER_KIND_UNKNOWN].n, 0);
    tokens_in_flight(s, f.truth.root);
    int64_t generated = 0;
    json_t *g = json_object_get(f.truth.root, "generated");
    for (size_t i = 0; i < json_array_size(g); i++)
        generated += json_integer_value(json_array_get(g, i));
    assert_int_equal(s->generated - generated, (int64_t)s->cls[LP_ITER_KIND_MIXED].n);
    assert_int_equal(s->n_reqs, 0);
    assert_int_equal(f.r.llm.found, 0);
    unload(&f);
}

/* One-request-at-a-time programs are no serving loops: no fixture of theirs gets a section */
static void harness_fixtures_unchanged(void **state)
{
    (void)state;
    static const char *const names[] = {
        "hf-llama", "hf-llama-b4", "hf-generate", "hf-moe", "llama", "graph-decode",
        "graph-piecewise", "graph-replay", "style-sample", "style-sync-loop", "deepseek-ocr2",
        "deepseek-ocr2-generate", "tp-hf", "diff-eager-1", "capture-hf", "torch-gemm",
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        struct lp_trace *t = tb_fixture(LP_FIXTURES, names[i]);
        struct lp_run r = {0};
        struct lp_run_options o = {0};
        analyze(t, &o, &r);
        if (r.serving.cause != LP_SERVING_CAUSE_NONE || r.serving.n_iters) {
            print_error("%s: taken for a serving loop (cause %d)\n", names[i], r.serving.cause);
            fail();
        }
        lp_run_free(&r);
        lp_trace_free(t);
    }
}

/* The Perfetto export shows the requests as overlapping async slices, their marks as
 * instants and the iterations on a GPU track, each with its counts */
static void perfetto(void **state)
{
    (void)state;
    struct fixture_run f;
    load("serve-graphs-mark", &f);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    assert_non_null(m);
    assert_int_equal(lp_report_perfetto(m, &f.r, 0, 0), 0);
    fclose(m);
    json_error_t e;
    json_t *root = json_loads(buf, 0, &e);
    assert_non_null(root);
    json_t *ev = json_object_get(root, "traceEvents");
    size_t begins = 0, ends = 0, tokens = 0, iters = 0;
    int64_t decode = 0;
    for (size_t i = 0; i < json_array_size(ev); i++) {
        json_t *x = json_array_get(ev, i);
        const char *cat = json_string_value(json_object_get(x, "cat"));
        const char *ph = json_string_value(json_object_get(x, "ph"));
        const char *name = json_string_value(json_object_get(x, "name"));
        if (!cat || !ph)
            continue;
        begins += !strcmp(cat, "request") && !strcmp(ph, "b");
        ends += !strcmp(cat, "request") && !strcmp(ph, "e");
        tokens += !strcmp(ph, "i") && name && !strncmp(name, "token ", 6);
        if (!strcmp(cat, "iteration")) {
            iters++;
            decode += json_integer_value(json_object_get(json_object_get(x, "args"), "decode"));
        }
    }
    assert_int_equal(begins, f.r.serving.n_reqs);
    assert_int_equal(ends, f.r.serving.n_reqs);
    assert_int_equal(tokens, f.r.serving.token_marks);
    assert_int_equal(iters, f.r.serving.n_iters);
    int64_t want = 0;
    for (size_t i = 0; i < f.r.serving.n_iters; i++)
        want += f.r.serving.iters[i].decode;
    assert_int_equal(decode, want);
    json_decref(root);
    free(buf);
    unload(&f);
}

/* ---- built traces: the convention's bad inputs ---- */

static void mark(struct tb *b, const char *name, uint64_t ts)
{
    struct lp_record r = {.type = LP_REC_MARKER};
    r.u.marker = (struct lp_marker){.timestamp = ts, .id = b->next_id++,
                                    .flags = LP_MARKER_FLAG_INSTANT,
                                    .name = lp_trace_writer_intern(b->w, name), .thread = 1};
    add(b, &r);
}

static void start_range(struct tb *b, const char *name, uint32_t id, uint64_t ts)
{
    struct lp_record r = {.type = LP_REC_MARKER};
    r.u.marker = (struct lp_marker){.timestamp = ts, .id = id, .flags = LP_MARKER_FLAG_START,
                                    .name = lp_trace_writer_intern(b->w, name), .thread = 1};
    add(b, &r);
}

static void end_range(struct tb *b, uint32_t id, uint64_t ts)
{
    struct lp_record r = {.type = LP_REC_MARKER};
    r.u.marker = (struct lp_marker){.timestamp = ts, .id = id, .flags = LP_MARKER_FLAG_END,
                                    .thread = 1};
    add(b, &r);
}

/* One id for every request, as a client that numbers nothing: triples A [0, 20], B [10, 50],
 * C [30, 40] (us past 100 us x k) with tokens at 0, 5 and 20 (A's: its range's ends count),
 * 35 and 45 (B's: the first admitted whose range holds them, though A was admitted before
 * and C holds 35) and 60 (none). Each token is looked up among thousands of requests of its
 * id. */
static void convention_one_id(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    enum { TRIPLES = 3000 };
    const uint64_t us = 1000, t0 = 1000000;
    for (uint32_t k = 0; k < TRIPLES; k++) {
        uint64_t at = t0 + 100 * us * k;
        uint32_t id = 1000000 + 3 * k;
        start_range(&b, "request r", id, at);
        mark(&b, "token r", at);
        mark(&b, "token r", at + 5 * us);
        start_range(&b, "request r", id + 1, at + 10 * us);
        mark(&b, "token r", at + 20 * us);
        end_range(&b, id, at + 20 * us);
        start_range(&b, "request r", id + 2, at + 30 * us);
        mark(&b, "token r", at + 35 * us);
        end_range(&b, id + 2, at + 40 * us);
        mark(&b, "token r", at + 45 * us);
        end_range(&b, id + 1, at + 50 * us);
        mark(&b, "token r", at + 60 * us);
    }
    kernel(&b, "k", 1, t0, t0 + 1000, t0 + 2000);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r = {0};
    struct lp_run_options o = {0};
    analyze(t, &o, &r);
    const struct lp_serving *s = &r.serving;
    assert_int_equal(s->cause, LP_SERVING_CAUSE_CONVENTION);
    assert_int_equal(s->n_reqs, 3 * TRIPLES);
    assert_int_equal(s->ids_reused, 3 * TRIPLES - 1);
    assert_int_equal(s->token_marks, 6 * TRIPLES);
    assert_int_equal(s->marks_unknown, TRIPLES);
    for (size_t i = 0; i < s->n_reqs; i++) /* by admission: A, B, C */
        assert_int_equal(s->reqs[i].tokens, i % 3 == 0 ? 3 : i % 3 == 1 ? 2 : 0);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Request 1: admitted at 1 ms, tokens at 3, 5, 7 ms, ended at 8 ms. Request 2 (the id
 * reused later): 2 ms, tokens at 6 ms, ended at 9 ms; then "2" again from 10 ms, one token
 * at 11 ms, never ended. A token of "3" (no such request), a mark without an id, a token of
 * "1" after its range ended, and overlapping ranges (push/pop could not). A push/pop range
 * "decode" around it all stays a stage range. */
static void convention_bad_input(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    const uint64_t ms = 1000000;
    range(&b, "decode", 1, 500000, 12 * ms);
    start_range(&b, "request 1 prompt=812", 901, 1 * ms);
    start_range(&b, "request 2", 902, 2 * ms);
    mark(&b, "token 1", 3 * ms);
    mark(&b, "token 1", 5 * ms);
    mark(&b, "token 2", 6 * ms);
    mark(&b, "token 1", 7 * ms);
    end_range(&b, 901, 8 * ms);
    end_range(&b, 902, 9 * ms);
    mark(&b, "token 1", 9500000);       /* after its range: no request */
    start_range(&b, "request 2", 903, 10 * ms);
    mark(&b, "token 2", 11 * ms);
    mark(&b, "token 3", 11 * ms);       /* unknown id */
    mark(&b, "token", 11 * ms);         /* no id: not the convention */
    mark(&b, "prefill 9 tokens=5", 11 * ms);
    mark(&b, "prefill 2 tokens=9223372036854775807", 11 * ms); /* no count: 0 */
    mark(&b, "prefill 2 tokens=9223372036854775807", 11 * ms);
    kernel(&b, "k", 1, 11500000, 11600000, 11700000);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r = {0};
    struct lp_run_options o = {0};
    analyze(t, &o, &r);
    const struct lp_serving *s = &r.serving;
    assert_int_equal(s->cause, LP_SERVING_CAUSE_CONVENTION);
    assert_int_equal(s->n_reqs, 3);
    assert_int_equal(s->ids_reused, 1);
    assert_int_equal(s->reqs_cut, 1);
    assert_int_equal(s->marks_unknown, 3); /* token 1 late, token 3, prefill 9 */
    assert_int_equal(s->token_marks, 7);
    assert_int_equal(s->prefill_marks, 3);
    assert_int_equal(s->reqs[2].prefill_tokens, 0);
    const struct lp_serving_request *q = &s->reqs[0];
    assert_string_equal(q->id, "1");
    assert_int_equal(q->prompt, 812);
    assert_int_equal(q->tokens, 3);
    assert_true(fabs(q->ttft_ns - 2 * ms) < 1);
    assert_true(fabs(q->tpot_ns - 2 * ms) < 1);
    assert_true(q->queue_ns < 0);       /* no prefill marks: TTFT is not split */
    assert_string_equal(s->reqs[1].id, "2");
    assert_int_equal(s->reqs[1].tokens, 1);
    assert_true(s->reqs[2].cut);
    assert_int_equal(s->reqs[2].tokens, 1);
    /* the cut one is left out; the others count */
    assert_int_equal(s->ttft.n, 2);
    assert_int_equal(s->tpot.n, 1);
    assert_int_equal(s->req_itl.n, 2);
    assert_int_equal(s->marked_tokens, 0); /* no iteration recorded: none counted generated */
    assert_int_equal(s->generated, 0);
    /* the request ranges are no stage, operator or nesting parent */
    assert_int_equal(r.ranges.n, 1);
    assert_int_equal(r.ranges.n_req, 3);
    assert_int_equal(r.ranges.unmatched_ends, 0);
    assert_non_null(stage(&r, "decode"));
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Marks with no request range at all, and a range never ended with no token: nothing
 * invented, nothing crashes */
static void convention_marks_only(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    mark(&b, "token a", 1000);
    mark(&b, "prefill a tokens=x", 2000);
    start_range(&b, "request b", 5, 3000);
    kernel(&b, "k", 1, 3500, 4000, 5000);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r = {0};
    struct lp_run_options o = {0};
    analyze(t, &o, &r);
    const struct lp_serving *s = &r.serving;
    assert_int_equal(s->cause, LP_SERVING_CAUSE_CONVENTION);
    assert_int_equal(s->n_reqs, 1);
    assert_int_equal(s->marks_unknown, 2);
    assert_int_equal(s->reqs_cut, 1);
    assert_int_equal(s->ttft.n + s->tpot.n + s->req_itl.n + s->queue.n, 0);
    assert_int_equal(s->n_iters, 0);
    assert_int_equal(s->generated, 0);
    /* the writers say the passes were not found rather than "0 iterations" */
    char *md = write_to_string(lp_report_run_md, &r);
    char *sum = write_to_string(lp_report_summary_md, &r);
    assert_non_null(strstr(md, "Its forward passes were not found"));
    assert_null(strstr(md, "| decode-only |"));
    assert_non_null(strstr(sum, "- **Serving loop**, but its forward passes were not found"));
    free(md);
    free(sum);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* One forward pass at T: a linear layer of TOKENS tokens (none when 0: layers no cuBLAS call
 * runs), a MoE expert's down projection of EXPERT tokens (none when 0) and the lm_head on
 * SAMPLED rows, each a cuBLAS call with its kernel */
static void pass(struct tb *b, uint64_t t, uint64_t tokens, uint64_t expert, uint64_t sampled)
{
    const uint64_t us = 1000;
    const uint64_t m[3] = {2048, 2048, 32000}, n[3] = {tokens, expert, sampled},
                   k[3] = {2048, 5632, 2048};
    for (int i = 0; i < 3; i++) {
        if (!n[i])
            continue;
        uint64_t a = t + (uint64_t)i * 100 * us;
        struct lp_record r = {.type = LP_REC_GEMM};
        r.u.gemm = (struct lp_gemm){.start = a, .end = a + 10 * us, .thread = 1,
                                    .api = lp_trace_writer_intern(b->w, "cublasGemmEx"),
                                    .m = m[i], .n = n[i], .k = k[i], .batch = 1, .transa = 1,
                                    .a_type = 14, .b_type = 14, .c_type = 14, .d_type = 14,
                                    .compute_type = 68, .algo = -1, .epilogue = 1};
        add(b, &r);
        kernel(b, i == 2 ? "lm_head_gemm" : "linear_gemm", 1, a + us, a + 20 * us, a + 90 * us);
    }
}

/* the cause found in N passes of (tokens, expert tokens, sampled) */
static enum lp_serving_cause cause_of(const uint64_t (*passes)[3], size_t n)
{
    struct tb b;
    tb_open(&b);
    for (size_t i = 0; i < n; i++)
        pass(&b, 1000000 + i * 1000000, passes[i][0], passes[i][1], passes[i][2]);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r = {0};
    struct lp_run_options o = {0};
    analyze(t, &o, &r);
    enum lp_serving_cause c = r.serving.cause;
    if (c == LP_SERVING_CAUSE_SHRANK) {
        assert_int_equal(r.serving.n_iters, n);
        assert_int_equal(r.llm.found, 0);
    }
    lp_run_free(&r);
    lp_trace_free(t);
    return c;
}

/* What tells a serving loop from one request at a time, on shapes alone */
static void serving_causes(void **state)
{
    (void)state;
    /* a batch of 4 prefilled (padded: 4 x 128) then decoded: one request at a time, also when
     * the next batch is smaller */
    static const uint64_t batch[][3] = {{512, 0, 4}, {4, 0, 4}, {4, 0, 4}, {4, 0, 4},
                                        {6, 0, 2},   {2, 0, 2}, {2, 0, 2}};
    assert_int_equal(cause_of(batch, 7), LP_SERVING_CAUSE_NONE);
    /* a decode batch that shrinks with no prefill between: a sequence left, others ran on */
    static const uint64_t shrank[][3] = {{512, 0, 4}, {4, 0, 4}, {4, 0, 4}, {3, 0, 3}, {3, 0, 3}};
    assert_int_equal(cause_of(shrank, 5), LP_SERVING_CAUSE_SHRANK);
    /* a prefill of 3 prompts whose tokens are no multiple of 3 */
    static const uint64_t ragged[][3] = {{500, 0, 3}, {3, 0, 3}, {3, 0, 3}};
    assert_int_equal(cause_of(ragged, 3), LP_SERVING_CAUSE_RAGGED);
    /* logits for every prompt token (T = S), then one sequence: no shrink of a decode batch */
    static const uint64_t all_logits[][3] = {{128, 0, 128}, {1, 0, 1}, {1, 0, 1}, {1, 0, 1}};
    assert_int_equal(cause_of(all_logits, 4), LP_SERVING_CAUSE_NONE);
    /* a MoE batch: the last GEMM before the lm_head an expert's, of the tokens routed to it;
     * the tokens in flight are the layers' that read the hidden state */
    static const uint64_t moe[][3] = {{512, 130, 4}, {4, 2, 4}, {4, 1, 4}, {4, 3, 4}};
    assert_int_equal(cause_of(moe, 4), LP_SERVING_CAUSE_NONE);
    /* layers no cuBLAS call runs (Triton, quantized), a bf16 lm_head: passes of unknown kind,
     * no shrink or prefill taken from them */
    static const uint64_t no_layers[][3] = {{0, 0, 1}, {0, 0, 1}, {0, 0, 4}, {0, 0, 4},
                                            {0, 0, 4}, {0, 0, 3}, {0, 0, 3}};
    assert_int_equal(cause_of(no_layers, 7), LP_SERVING_CAUSE_NONE);
    /* the same with a token mark (the convention): the passes are reported, of unknown kind,
     * and no decode or prefill is made of them */
    {
        struct tb b;
        tb_open(&b);
        for (size_t i = 0; i < 7; i++)
            pass(&b, 1000000 + i * 1000000, 0, 0, no_layers[i][2]);
        mark(&b, "token 1", 9000000);
        struct lp_trace *t = tb_read(&b, 1);
        struct lp_run r = {0};
        struct lp_run_options o = {0};
        analyze(t, &o, &r);
        assert_int_equal(r.serving.n_iters, 7);
        assert_int_equal(r.serving.cls[LP_ITER_KIND_UNKNOWN].n, 7);
        assert_int_equal(r.serving.itl.n, 0);
        lp_run_free(&r);
        lp_trace_free(t);
    }
    /* a damaged lm_head of 2^62 rows is no call at all: nothing sized by it */
    static const uint64_t huge[][3] = {{4, 0, 4}, {4, 0, 4}, {4, 0, (uint64_t)1 << 62},
                                       {4, 0, 4}};
    assert_int_equal(cause_of(huge, 4), LP_SERVING_CAUSE_NONE);
}

/* A script's own push/pop ranges named "request N" around one-at-a-time calls, no token
 * marks: ordinary ranges, no convention, nothing changes */
static void request_ranges_without_marks(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "request 1", 1, 1000, 5000);
    range(&b, "request 2", 1, 6000, 9000);
    kernel(&b, "k", 1, 2000, 2500, 3000);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r = {0};
    struct lp_run_options o = {0};
    analyze(t, &o, &r);
    assert_int_equal(r.serving.cause, LP_SERVING_CAUSE_NONE);
    assert_int_equal(r.ranges.n, 2);
    assert_int_equal(r.ranges.n_req, 0);
    lp_run_free(&r);
    lp_trace_free(t);
}

static void request_word(void **state)
{
    (void)state;
    assert_int_equal(lp_request_word("request 17 prompt=3", "request"), 2);
    assert_int_equal(lp_request_word("request abc", "request"), 3);
    assert_int_equal(lp_request_word("request", "request"), 0);
    assert_int_equal(lp_request_word("request ", "request"), 0);
    assert_int_equal(lp_request_word("requests 1", "request"), 0);
    assert_int_equal(lp_request_word("token 9", "token"), 1);
    assert_int_equal(lp_request_word(NULL, "token"), 0);
    /* a long id is its first LP_REQUEST_ID_MAX bytes, cut before a character it would split */
    char name[400];
    int o = snprintf(name, sizeof name, "token ");
    memset(name + o, 'x', 300);
    name[o + 300] = 0;
    assert_int_equal(lp_request_word(name, "token"), LP_REQUEST_ID_MAX);
    memcpy(name + o + LP_REQUEST_ID_MAX - 1, "\xc3\xa9 prompt=5", 12); /* é at 255..256 */
    assert_int_equal(lp_request_word(name, "token"), LP_REQUEST_ID_MAX - 1);
    name[o + LP_REQUEST_ID_MAX - 1] = 'x'; /* é at 256..257: the first 256 bytes whole */
    memcpy(name + o + LP_REQUEST_ID_MAX, "\xc3\xa9 prompt=5", 12);
    assert_int_equal(lp_request_word(name, "token"), LP_REQUEST_ID_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(iterations_eager),
        cmocka_unit_test(iterations_eager_marked),
        cmocka_unit_test(iterations_graphs),
        cmocka_unit_test(iterations_graphs_marked),
        cmocka_unit_test(iterations_graph_nodes),
        cmocka_unit_test(iterations_window),
        cmocka_unit_test(iterations_signal),
        cmocka_unit_test(latency_eager),
        cmocka_unit_test(latency_eager_marked),
        cmocka_unit_test(latency_graphs),
        cmocka_unit_test(latency_graphs_marked),
        cmocka_unit_test(latency_windows),
        cmocka_unit_test(graph_buckets),
        cmocka_unit_test(hf_generate_batch),
        cmocka_unit_test(hf_continuous_batching),
        cmocka_unit_test(harness_fixtures_unchanged),
        cmocka_unit_test(perfetto),
        cmocka_unit_test(convention_bad_input),
        cmocka_unit_test(convention_one_id),
        cmocka_unit_test(convention_marks_only),
        cmocka_unit_test(serving_causes),
        cmocka_unit_test(request_ranges_without_marks),
        cmocka_unit_test(request_word),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
