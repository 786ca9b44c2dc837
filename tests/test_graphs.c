/* CUDA-graph replays keep their stage, step and GEMM shape (issue 18), on traces recorded on
 * the H200 (tests/gpu/run.sh, LLMPROF_GPU_ONLY=graphs):
 *   graph-api        tests/gpu/graphs.cu: one step of three cuBLAS GEMMs and a kernel, run
 *                    eagerly, captured, replayed on its stream and another, updated with
 *                    cudaGraphExecUpdate, and a node's parameters set by the program
 *   graph-compare    tests/gpu/graph_styles.py --style compare: the same decode steps eagerly
 *                    ("decode_eager") and as replays of one captured graph ("decode_graph")
 *   graph-compile, graph-piecewise, graph-stream: the same decoder, its steps replayed by
 *                    torch.compile(mode="reduce-overhead"), per-layer graphs around eager
 *                    attention, and one graph on a side stream */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "llmprof/analyze.h"
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
    assert_int_equal(r.gemm_captured, 6);
    assert_int_equal(r.gemm_replayed, 3 * 14);
    /* after cudaGraphExecUpdate, the GEMM kernels come from the calls captured in "update" */
    uint64_t ua, ue, ra, re;
    assert_true(range_named(&r, "update", &ua, &ue));
    assert_true(range_named(&r, "replay_updated", &ra, &re));
    re = UINT64_MAX; /* and those of "replay_set" after it */
    int32_t *kg, *origin;
    assert_int_equal(lp_gemm_link(t, &kg, &origin), LP_OK);
    assert_non_null(origin);
    size_t checked = 0, before = 0;
    for (size_t i = 0; i < t->n_kernels; i++) {
        if (kg[i] < 0 || !(t->kernels[i].flags & LP_KERNEL_FLAG_GRAPH))
            continue;
        const struct lp_gemm *g = &t->gemms[kg[i]];
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
    for (size_t i = 0; i < r.n_gemms; i++) {
        const struct lp_gemm_row *g = &r.gemms[i];
        if (!g->replayed || strcmp(r.stages[g->stage].name, "decode_graph"))
            continue;
        replayed++;
        size_t twins = 0;
        for (size_t j = 0; j < r.n_gemms; j++)
            twins += !r.gemms[j].replayed && r.gemms[j].stage >= 0 &&
                     !strcmp(r.stages[r.gemms[j].stage].name, "decode_eager") &&
                     r.gemms[j].call.m == g->call.m && r.gemms[j].call.n == g->call.n &&
                     r.gemms[j].call.k == g->call.k && r.gemms[j].call.a_type == g->call.a_type &&
                     r.gemms[j].calls == g->calls;
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
    assert_int_equal(r.gemm_replayed, 0);
    assert_null(r.kernel_capture_range);
    for (size_t i = 0; i < r.n_graphs; i++)
        assert_int_equal(r.graphs[i].traced, 0);
    const struct lp_stage_report *d = stage(&r, "decode");
    assert_true(d->graph_replays > 0);
    assert_true(d->gemm_unshaped_ns > 0);
    lp_run_free(&r);
    lp_trace_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph_api),
        cmocka_unit_test(test_graph_compare),
        cmocka_unit_test(test_graph_styles),
        cmocka_unit_test(test_graph_old_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
