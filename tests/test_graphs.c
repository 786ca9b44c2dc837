/* CUDA-graph replays keep their stage, step and GEMM shape (issue 18), on traces recorded on
 * the H200 (tests/gpu/run.sh, LLMPROF_GPU_ONLY=graphs):
 *   graph-api        tests/gpu/graphs.cu: one step of three cuBLAS GEMMs and a kernel, run
 *                    eagerly, captured, replayed on its stream and another, updated with
 *                    cudaGraphExecUpdate, and a node's parameters set by the program
 *   graph-compare    tests/gpu/graph_styles.py --style compare: the same decode steps eagerly
 *                    ("decode_eager") and as replays of one captured graph ("decode_graph")
 *   graph-compile, graph-piecewise, graph-stream: the same decoder, its steps replayed by
 *                    torch.compile(mode="reduce-overhead"), per-layer graphs around eager
 *                    attention, and one graph on a side stream
 * and replays recorded whole (record --graphs replay, issue 15; tests/gpu/graph_replays.sh):
 *   graph-replay, graph-replay-nvtx8   tests/gpu/graph_decode.py, all of it and one step in
 *                    eight; piecewise-replay: graph_styles.py --style piecewise */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "llmprof/analyze.h"
#include "llmprof/capture.h"
#include "tracebuild.h"

static struct lp_trace *fixture(const char *name) { return tb_fixture(LP_FIXTURES, name); }

static void analyze_rules(const struct lp_trace *t, const char *const *rules, size_t n,
                          struct lp_run *r)
{
    struct lp_run_options o = {.stage_rules = rules, .n_stage_rules = n};
    analyze(t, &o, r);
}

/* every replayed GEMM kernel has its shape; every replayed kernel its captured node, but
 * for UNTRACED_PER_REPLAY kernels per replay in stage UNTRACED_STAGE */
static void all_shaped(const struct lp_run *r, const char *untraced_stage,
                       uint64_t untraced_per_replay)
{
    assert_true(r->n_graphs > 0);
    for (size_t i = 0; i < r->n_graphs; i++) {
        const struct lp_graph_row *g = &r->graphs[i];
        assert_true(g->gemm_kernels > 0 || g->kernels_per_replay < 30);
        assert_int_equal(g->gemm_shaped, g->gemm_kernels);
        uint64_t untraced = untraced_stage && !strcmp(r->stages[g->stage].name, untraced_stage)
                                ? untraced_per_replay * g->replays
                                : 0;
        assert_int_equal(g->traced, g->kernels - untraced);
    }
}

static int range_named(const struct lp_run *r, const char *name, uint64_t *a, uint64_t *e)
{
    for (size_t i = 0; i < r->ranges.n; i++)
        if (!strcmp(lp_trace_str(r->trace, r->ranges.v[i].name), name)) {
            *a = r->ranges.v[i].start;
            *e = r->ranges.v[i].end;
            return 1;
        }
    return 0;
}

static void test_graph_api(void **state)
{
    (void)state;
    struct lp_trace *t = fixture("graph-api");
    static const char *const rules[] = {"eager=^eager$", "replay=^replay$",
                                        "replay_other=^replay_other$",
                                        "replay_updated=^replay_updated$",
                                        "replay_set=^replay_set$"};
    struct lp_run r;
    analyze_rules(t, rules, 5, &r);
    const struct lp_stage_report *eager = stage(&r, "eager");
    assert_non_null(eager);
    assert_int_equal(eager->graph_replays, 0);
    assert_int_equal(eager->gemm_calls, 4 * 3);
    static const struct {
        const char *name;
        uint64_t replays;
    } want[] = {{"replay", 4}, {"replay_other", 4}, {"replay_updated", 4}, {"replay_set", 2}};
    for (size_t i = 0; i < 4; i++) {
        const struct lp_stage_report *s = stage(&r, want[i].name);
        assert_non_null(s);
        assert_int_equal(s->graph_replays, want[i].replays);
        /* one execution of each captured GEMM per replay, FLOPs as the eager step's */
        assert_int_equal(s->gemm_calls, 3 * want[i].replays);
        assert_true(fabs(s->gemm_flops / (double)want[i].replays - eager->gemm_flops / 4) <=
                    1e-3 * eager->gemm_flops / 4);
        assert_true(s->gemm_coverage > 0.999);
    }
    /* the program set our kernel's parameters itself: its node's origin is unknown since */
    all_shaped(&r, "replay_set", 1);
    for (size_t i = 0; i < r.n_graphs; i++)
        assert_string_equal(lp_trace_str(t, r.ranges.v[r.graphs[i].capture_range].name), "step");
    assert_int_equal(r.gemm.captured, 6);
    assert_int_equal(r.gemm.replayed, 3 * 14);
    /* after cudaGraphExecUpdate, the GEMM kernels come from the calls captured in "update" */
    uint64_t ua = 0, ue = 0, ra = 0, re = 0; /* set by range_named (gcc -O3 cannot see it) */
    assert_true(range_named(&r, "update", &ua, &ue));
    assert_true(range_named(&r, "replay_updated", &ra, &re));
    re = UINT64_MAX; /* and those of "replay_set" after it */
    int32_t *kg, *origin;
    assert_int_equal(lp_gemm_link(t, &kg, &origin), LP_OK);
    assert_non_null(origin);
    size_t checked = 0, before = 0;
    for (size_t i = 0; i < t->n_kernels; i++) {
        if (kg[i] < 0 ||
            !(lp_trace_kernel_config(t, &t->kernels[i])->flags & LP_KERNEL_FLAG_GRAPH))
            continue;
        const struct lp_gemm call = lp_trace_gemm(t, (size_t)kg[i]), *g = &call;
        if (t->kernels[i].start >= ra && t->kernels[i].start <= re) {
            assert_true(g->start >= ua && g->end <= ue);
            checked++;
        } else {
            before += g->start < ua;
        }
    }
    assert_int_equal(checked, 6 * 4); /* 6 replays of 4 GEMM kernels (one split-K) */
    assert_int_equal(before, 8 * 4); /* the earlier replays: the first capture's calls */
    free(kg);
    free(origin);
    lp_run_free(&r);
    lp_trace_free(t);
}

static double decode_flops(const char *fixture_name, const char *const *rules, size_t n,
                           const char *name, int64_t steps, int graphs)
{
    struct lp_trace *t = fixture(fixture_name);
    struct lp_run r;
    analyze_rules(t, rules, n, &r);
    const struct lp_stage_report *d = stage(&r, name);
    assert_non_null(d);
    assert_int_equal(d->steps, steps);
    if (graphs)
        assert_int_equal(d->steps_source, LP_STEPS_GRAPHS);
    all_shaped(&r, NULL, 0);
    double f = d->gemm_flops / (double)d->steps;
    assert_true(d->gemm_coverage > 0.999);
    lp_run_free(&r);
    lp_trace_free(t);
    return f;
}

static const char *const compare_rules[] = {"prefill=^prefill", "decode_eager=^decode_eager",
                                            "decode_graph=^decode_graph"};

/* the graph step's measured GEMM FLOPs are the eager step's */
static void test_graph_compare(void **state)
{
    (void)state;
    double eager = decode_flops("graph-compare", compare_rules, 3, "decode_eager", 30, 0);
    double graph = decode_flops("graph-compare", compare_rules, 3, "decode_graph", 30, 1);
    assert_true(eager > 0);
    assert_true(fabs(graph - eager) <= 1e-3 * eager);
    /* the GEMM table: replayed rows beside the eager rows of the same shapes */
    struct lp_trace *t = fixture("graph-compare");
    struct lp_run r;
    analyze_rules(t, compare_rules, 3, &r);
    size_t replayed = 0;
    for (size_t i = 0; i < r.gemm.n_rows; i++) {
        const struct lp_gemm_row *g = &r.gemm.rows[i];
        if (!g->replayed || strcmp(r.stages[g->stage].name, "decode_graph"))
            continue;
        replayed++;
        size_t twins = 0;
        for (size_t j = 0; j < r.gemm.n_rows; j++)
            twins += !r.gemm.rows[j].replayed && r.gemm.rows[j].stage >= 0 &&
                     !strcmp(r.stages[r.gemm.rows[j].stage].name, "decode_eager") &&
                     r.gemm.rows[j].call.m == g->call.m && r.gemm.rows[j].call.n == g->call.n &&
                     r.gemm.rows[j].call.k == g->call.k &&
                     r.gemm.rows[j].call.a_type == g->call.a_type &&
                     r.gemm.rows[j].calls == g->calls;
        assert_int_equal(twins, 1);
    }
    assert_int_equal(replayed, 5); /* qkv, o, gate_up, down, lm_head */
    lp_run_free(&r);
    lp_trace_free(t);
}

/* torch.compile, piecewise graphs and a side stream: the same steps, the same FLOPs */
static void test_graph_styles(void **state)
{
    (void)state;
    double eager = decode_flops("graph-compare", compare_rules, 3, "decode_eager", 30, 0);
    static const char *const styles[] = {"graph-compile", "graph-piecewise", "graph-stream"};
    for (size_t i = 0; i < 3; i++) {
        double f = decode_flops(styles[i], NULL, 0, "decode", 30, 1);
        assert_true(fabs(f - eager) <= 1e-3 * eager);
    }
    /* torch.compile captures inside the first request's decode loop */
    struct lp_trace *t = fixture("graph-compile");
    struct lp_run r;
    analyze(t, NULL, &r);
    for (size_t i = 0; i < r.n_graphs; i++) {
        assert_true(r.graphs[i].capture_range >= 0);
        assert_string_equal(lp_trace_str(t, r.ranges.v[r.graphs[i].capture_range].name),
                            "decode");
    }
    lp_run_free(&r);
    lp_trace_free(t);
    /* piecewise: 2 graphs per layer and one for the head, each replayed once per step */
    t = fixture("graph-piecewise");
    analyze(t, NULL, &r);
    const struct lp_stage_report *d = stage(&r, "decode");
    assert_int_equal(d->graph_replays, 30 * (2 * 8 + 1));
    lp_run_free(&r);
    lp_trace_free(t);
}

/* a trace of format 1.1 (no graph records): replays keep no shape, as before, and say so */
static void test_graph_old_format(void **state)
{
    (void)state;
    struct lp_trace *t = fixture("graph-decode");
    assert_int_equal(t->n_graphs, 0);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.gemm.replayed, 0);
    assert_null(r.kernel_capture_range);
    for (size_t i = 0; i < r.n_graphs; i++)
        assert_int_equal(r.graphs[i].traced, 0);
    const struct lp_stage_report *d = stage(&r, "decode");
    assert_true(d->graph_replays > 0);
    assert_true(d->gemm_unshaped_ns > 0);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Replays recorded whole (record --graphs replay; synthetic): an eager prefill, then one
 * decode range over four replays of graph 2, each one kernel record flagged REPLAY and
 * preceded by three eager kernels (as piecewise graphs around eager attention). The
 * replays are the decode steps, one group of the graph replay category, and the graph's row
 * takes its kernel nodes from the graph records, since no kernel of it was recorded. */
static void test_graph_replays_whole(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    const uint64_t us = 1000;
    range(&b, "prefill", 1, 0, 400 * us);
    for (int i = 0; i < 3; i++)
        kernel(&b, "gemm_prefill", 1, (10 + 10 * i) * us, (50 + 100 * i) * us,
               (140 + 100 * i) * us);
    /* instantiation: three kernel nodes and a copy node cloned into executable graph 2 */
    for (uint32_t n = 0; n < 4; n++) {
        struct lp_record g = {.type = LP_REC_GRAPH};
        g.u.graph = (struct lp_graph){.timestamp = 450 * us, .thread = 1,
                                      .event = LP_GRAPH_EVENT_NODE_CLONED, .graph_id = 2,
                                      .original_graph_id = 1, .node_type = n == 3 ? 1 : 0,
                                      .node_id = (2ull << 32) | n,
                                      .original_node_id = (1ull << 32) | n};
        add(&b, &g);
    }
    range(&b, "decode", 1, 500 * us, 1500 * us);
    for (int i = 0; i < 4; i++) {
        uint32_t corr = b.next_corr++;
        uint64_t launch = (510 + 200 * i) * us;
        /* eager kernels before each replay (piecewise graphs around eager attention): more
         * of them than replays, less GPU time */
        for (int j = 0; j < 3; j++)
            kernel(&b, "attn", 1, launch - (9 - j) * us, launch + (1 + 5 * j) * us,
                   launch + (5 + 5 * j) * us);
        api(&b, "cudaGraphLaunch", 1, launch, corr);
        struct lp_record k = {.type = LP_REC_KERNEL};
        k.u.kernel = (struct lp_kernel){.start = launch + 20 * us, .end = launch + 180 * us,
                                        .correlation = corr, .stream = 7, .graph_id = 2,
                                        .flags = LP_KERNEL_FLAG_GRAPH | LP_KERNEL_FLAG_REPLAY};
        add(&b, &k);
    }
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, &(struct lp_run_options){0}, &r);
    assert_int_equal(r.replays_whole, 4);
    const struct lp_stage_report *d = stage(&r, "decode");
    assert_non_null(d);
    assert_int_equal(d->steps, 4);
    assert_int_equal(d->steps_source, LP_STEPS_GRAPHS);
    assert_int_equal(d->graph_replays, 4);
    assert_int_equal(d->kernels, 12); /* replays are not kernels */
    assert_int_equal(d->gpu_ns, 4 * (160 + 3 * 4) * us);
    assert_true(fabs(d->cat_share[LP_KCAT_GRAPH] - 160.0 / 172.0) < 1e-9);
    assert_int_equal(d->top.n, 2);
    assert_string_equal(r.names[d->top.v[0].group], "[CUDA graph replay]");
    assert_int_equal(d->top.v[0].calls, 4);
    assert_int_equal(r.n_graphs, 1);
    assert_true(r.graphs[0].whole);
    assert_int_equal(r.graphs[0].graph_id, 2);
    assert_int_equal(r.graphs[0].replays, 4);
    assert_int_equal(r.graphs[0].kernels, 0);
    assert_true(r.graphs[0].kernels_per_replay == 3);
    const struct lp_stage_report *p = stage(&r, "prefill");
    assert_int_equal(p->kernels, 3);
    assert_int_equal(p->graph_replays, 0);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Real replays recorded whole on the H200: the steps are the replays, TPOT is the program's
 * own (1.7297 ms per token by its timer; 1.8332 ms when each replayed kernel was traced),
 * and the graph's row has its 612 kernel nodes from the graph records. */
static void test_graph_replay_fixtures(void **state)
{
    (void)state;
    struct lp_trace *t = fixture("graph-replay");
    struct lp_run r;
    analyze(t, &(struct lp_run_options){0}, &r);
    assert_int_equal(r.replays_whole, 96);
    const struct lp_stage_report *d = stage(&r, "decode");
    assert_non_null(d);
    assert_int_equal(d->steps, 64);
    assert_int_equal(d->steps_source, LP_STEPS_GRAPHS);
    assert_int_equal(d->graph_replays, 64);
    assert_int_equal(d->kernels, 64); /* one eager kernel per step beside the replay */
    assert_true(d->cat_share[LP_KCAT_GRAPH] > 0.99);
    assert_true(fabs(r.llm.tpot_s - 1.7297e-3) < 0.01e-3);
    assert_int_equal(r.n_graphs, 2); /* graph 2 in decode and in the warm-up request */
    for (size_t i = 0; i < r.n_graphs; i++) {
        assert_true(r.graphs[i].whole);
        assert_int_equal(r.graphs[i].graph_id, 2);
        assert_true(r.graphs[i].kernels_per_replay == 612);
        assert_int_equal(r.graphs[i].kernels, 0);
    }
    /* the calls captured into the graph are found by the nodes they made, not taken for
     * calls that launched nothing */
    assert_int_equal(r.gemm.captured, 65);
    assert_int_equal(r.gemm.calls - r.gemm.failed, r.gemm.linked);
    lp_run_free(&r);
    lp_trace_free(t);

    /* piecewise: 17 replays and more eager kernels per step; the timer read 21.87 and
     * 25.11 ms for the 15 steps of the two timed requests */
    t = fixture("piecewise-replay");
    analyze(t, &(struct lp_run_options){0}, &r);
    d = stage(&r, "decode");
    assert_non_null(d);
    assert_int_equal(d->steps, 30);
    assert_int_equal(d->steps_source, LP_STEPS_GRAPHS);
    assert_int_equal(d->graph_replays, 510);
    assert_true(d->kernels > d->graph_replays);
    assert_true(r.llm.tpot_s > 21.8e-3 / 15 && r.llm.tpot_s < 25.2e-3 / 15);
    lp_run_free(&r);
    lp_trace_free(t);

    /* one step in eight: 12 windows of one replay each, nothing outside them */
    t = fixture("graph-replay-nvtx8");
    analyze(t, &(struct lp_run_options){0}, &r);
    assert_int_equal(r.capture.n_windows, 12);
    assert_int_equal(r.replays_whole, 12);
    d = stage(&r, "decode");
    assert_non_null(d);
    assert_int_equal(d->graph_replays, 12);
    assert_int_equal(r.llm.cut_requests, r.llm.requests);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Windows on steps counted by graph launches, one step in eight: each window holds its
 * step's replays (one; the piecewise step's 17) and eager work (the piecewise step's
 * attention: 50 kernels), and nothing else */
static void test_graph_step_windows(void **state)
{
    (void)state;
    const struct {
        const char *name;
        size_t windows, replays_per_step, eager_per_step;
    } runs[] = {{"graph-steps-8", 12, 1, 1}, {"piecewise-steps-8", 6, 17, 50}};
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        struct lp_trace *t = fixture(runs[i].name);
        assert_string_equal(lp_trace_meta(t, "capture"), "graphs/8");
        assert_int_equal(t->n_windows, 2 * runs[i].windows); /* each written open, then closed */
        for (size_t k = 0; k < t->n_windows; k++)
            assert_int_equal(t->windows[k].cause, LP_WINDOW_CAUSE_GRAPH_STEP);
        struct lp_run r;
        analyze(t, &(struct lp_run_options){.keep_warmup = 1}, &r);
        assert_int_equal(r.capture.kind, LP_CAPTURE_MODE_GRAPHS);
        assert_int_equal(r.capture.n_windows, runs[i].windows);
        assert_int_equal(r.replays_whole, runs[i].windows * runs[i].replays_per_step);
        size_t eager = 0, replays = 0;
        for (size_t s = 0; s < r.n_stages; s++) {
            eager += r.stages[s].kernels;
            replays += r.stages[s].graph_replays;
        }
        assert_int_equal(replays, r.replays_whole);
        assert_int_equal(eager, runs[i].windows * runs[i].eager_per_step);
        assert_true(r.capture.n_energy > 0); /* NVML ran all along */
        lp_run_free(&r);
        lp_trace_free(t);
    }
}

/* An export's analysis (LP_RUN_SCOPE_PLACES) gives every fact the exports write as the
 * report's does, and works out nothing after them: on fixtures with stage ranges, graphs,
 * capture windows and serving iterations */
static void test_places_scope(void **state)
{
    (void)state;
    static const char *const names[] = {"graph-decode", "serve-graphs", "serve-eager",
                                        "capture-graph", "llama-ops", "piecewise-replay"};
    for (size_t f = 0; f < sizeof names / sizeof *names; f++) {
        struct lp_trace *t = fixture(names[f]);
        struct lp_run a, b;
        struct lp_run_options places = {.scope = LP_RUN_SCOPE_PLACES};
        analyze(t, NULL, &a);
        analyze(t, &places, &b);
        assert_true(a.all_kernels.n > 0);
        assert_int_equal(b.all_kernels.n, 0); /* the kernel tables: not worked out */
        assert_null(b.timeline.bins);
        assert_int_equal(b.gemm.n_rows, 0);
        assert_int_equal(b.t0_ns, a.t0_ns);
        assert_int_equal(b.kernels_recorded, a.kernels_recorded);
        assert_int_equal(b.timeline.first_ns, a.timeline.first_ns);
        assert_int_equal(b.timeline.last_ns, a.timeline.last_ns);
        assert_int_equal(b.n_names, a.n_names);
        for (size_t i = 0; i < a.n_names; i++) {
            assert_string_equal(b.names[i], a.names[i]);
            assert_string_equal(b.short_names[i], a.short_names[i]);
            assert_int_equal(b.cats[i], a.cats[i]);
        }
        assert_int_equal(b.n_stages, a.n_stages);
        for (size_t i = 0; i < a.n_stages; i++) {
            assert_string_equal(b.stages[i].name, a.stages[i].name);
            assert_int_equal(b.stages[i].kind, a.stages[i].kind);
        }
        assert_int_equal(b.n_spans, a.n_spans);
        for (size_t i = 0; i < a.n_spans; i++) { /* field by field: padding is not set */
            assert_int_equal(b.spans[i].start, a.spans[i].start);
            assert_int_equal(b.spans[i].end, a.spans[i].end);
            assert_int_equal(b.spans[i].stage, a.spans[i].stage);
        }
        assert_int_equal(b.ranges.n, a.ranges.n);
        assert_int_equal(b.ranges.n_req, a.ranges.n_req);
        assert_int_equal(b.capture.n_windows, a.capture.n_windows);
        assert_int_equal(b.serving.n_iters, a.serving.n_iters);
        for (size_t i = 0; i < a.serving.n_iters; i++) { /* every field the exports write */
            const struct lp_iteration *x = &a.serving.iters[i], *y = &b.serving.iters[i];
            assert_int_equal(y->host_ns, x->host_ns);
            assert_int_equal(y->start, x->start);
            assert_int_equal(y->end, x->end);
            assert_int_equal(y->period_ns, x->period_ns);
            assert_int_equal(y->gap_ns, x->gap_ns);
            assert_int_equal(y->busy_ns, x->busy_ns);
            assert_int_equal(y->tokens, x->tokens);
            assert_int_equal(y->sampled, x->sampled);
            assert_int_equal(y->decode, x->decode);
            assert_int_equal(y->prefill_tokens, x->prefill_tokens);
            assert_int_equal(y->bucket, x->bucket);
            assert_int_equal(y->kind, x->kind);
            assert_int_equal(y->source, x->source);
        }
        assert_int_equal(b.serving.device, a.serving.device);
        assert_int_equal(!b.kernel_capture_range, !a.kernel_capture_range);
        size_t staged = 0;
        for (size_t i = 0; i < t->n_kernels; i++) {
            assert_int_equal(lp_run_kernel_group(&b, i), lp_run_kernel_group(&a, i));
            assert_int_equal(lp_run_kernel_stage(&b, i), lp_run_kernel_stage(&a, i));
            staged += lp_run_kernel_stage(&a, i) >= 0;
            if (a.kernel_capture_range)
                assert_int_equal(b.kernel_capture_range[i], a.kernel_capture_range[i]);
        }
        assert_true(staged > 0);
        lp_run_free(&a);
        lp_run_free(&b);
        lp_trace_free(t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph_api),
        cmocka_unit_test(test_graph_compare),
        cmocka_unit_test(test_graph_styles),
        cmocka_unit_test(test_graph_old_format),
        cmocka_unit_test(test_graph_replays_whole),
        cmocka_unit_test(test_graph_replay_fixtures),
        cmocka_unit_test(test_graph_step_windows),
        cmocka_unit_test(test_places_scope),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
