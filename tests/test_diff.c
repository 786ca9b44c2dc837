/* Two runs compared (src/analyze/diff.c, src/report/diff.c): synthetic run pairs with known
 * shifts (a kernel twice as slow, one added, a prefill 5 % faster, nothing at all), the gate's
 * rules, and the real H200 pairs (the same decoder twice, eager against CUDA-graph decode). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "llmprof/compare.h"
#include "llmprof/report.h"
#include "tracebuild.h"

#define US 1000ull
#define REQUESTS 8
#define STEPS 16

struct shape {
    double attn_scale;            /* the "attn" kernel's duration, times */
    int added;                    /* a kernel "rope_fused" in every decode step */
    double prefill_scale;         /* the prefill ranges' length, times */
};

/* A run of REQUESTS requests: a prefill range (one GEMM kernel) and STEPS decode ranges of
 * one step each, named as harnesses that count their steps do ("decode step=3 tokens=1") (a GEMM and an attention kernel, and "rope_fused" when S->added). Lengths
 * vary by up to 2 % from a fixed sequence, the same for both runs of a pair unless SEED
 * differs. */
static struct lp_trace *run_trace(const struct shape *s, uint32_t seed)
{
    struct tb b;
    tb_open(&b);
    uint64_t t = 1000 * US, x = seed;
    for (int q = 0; q < REQUESTS; q++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        double jitter = 1 + 0.02 * ((double)(x >> 40) / (double)(1ull << 24) - 0.5);
        uint64_t p = (uint64_t)(2000 * US * s->prefill_scale * jitter);
        range(&b, "prefill", 1, t, t + p);
        kernel(&b, "gemm_prefill", 1, t + 10 * US, t + 20 * US, t + p - 10 * US);
        t += p + 50 * US;
        for (int k = 0; k < STEPS; k++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            double j = 1 + 0.02 * ((double)(x >> 40) / (double)(1ull << 24) - 0.5);
            uint64_t attn = (uint64_t)(100 * US * s->attn_scale * j);
            uint64_t d = 300 * US + attn + (s->added ? 50 * US : 0);
            char name[48];
            snprintf(name, sizeof name, "decode step=%d tokens=1", k);
            range(&b, name, 1, t, t + d);
            kernel(&b, "gemm_decode", 1, t + 2 * US, t + 10 * US, t + 110 * US);
            kernel(&b, "attn_decode", 1, t + 4 * US, t + 120 * US, t + 120 * US + attn);
            if (s->added)
                kernel(&b, "rope_fused", 1, t + 6 * US, t + 130 * US + attn,
                       t + 170 * US + attn);
            t += d + 20 * US;
        }
        t += 500 * US;
    }
    return tb_read(&b, 1);
}

static const struct lp_diff_kernel *find_kernel(const struct lp_diff *d, const char *stage,
                                                const char *name)
{
    for (size_t i = 0; i < d->n_kernels; i++)
        if (!strcmp(d->stages[d->kernels[i].stage].name, stage) &&
            !strcmp(d->kernels[i].name, name))
            return &d->kernels[i];
    return NULL;
}

static const struct lp_diff_stage *find_stage(const struct lp_diff *d, const char *name)
{
    for (size_t i = 0; i < d->n_stages; i++)
        if (!strcmp(d->stages[i].name, name))
            return &d->stages[i];
    return NULL;
}

static void diff_of(const struct shape *sa, const struct shape *sb, uint32_t seed_b,
                    struct lp_trace **ta, struct lp_trace **tb, struct lp_run *ra,
                    struct lp_run *rb, struct lp_diff *d)
{
    *ta = run_trace(sa, 1);
    *tb = run_trace(sb, seed_b);
    analyze(*ta, NULL, ra);
    analyze(*tb, NULL, rb);
    assert_int_equal(lp_diff_build(ra, rb, NULL, d), LP_OK);
}

static void done(struct lp_trace *ta, struct lp_trace *tb, struct lp_run *ra, struct lp_run *rb,
                 struct lp_diff *d)
{
    lp_diff_free(d);
    lp_run_free(ra);
    lp_run_free(rb);
    lp_trace_free(ta);
    lp_trace_free(tb);
}

/* A run against itself: every figure the same, no kernel changed, a gate passes. */
static void test_diff_same(void **state)
{
    (void)state;
    struct shape s = {1, 0, 1};
    struct lp_trace *ta, *tb;
    struct lp_run ra, rb;
    struct lp_diff d;
    diff_of(&s, &s, 1, &ta, &tb, &ra, &rb, &d);
    assert_int_equal(d.n_stages, 2);
    for (size_t i = 0; i < d.n_kernels; i++)
        assert_int_equal(d.kernels[i].status, LP_DIFF_STATUS_SAME);
    const struct lp_diff_stage *dec = find_stage(&d, "decode");
    assert_non_null(dec);
    assert_int_equal(dec->wall.verdict, LP_DIFF_VERDICT_SAME);
    assert_true(dec->wall.n_a == REQUESTS * STEPS);
    assert_int_equal(d.tpot[0].verdict, LP_DIFF_VERDICT_SAME);
    assert_int_equal(d.tpot[0].basis, LP_DIFF_BASIS_BOOTSTRAP);
    assert_true(d.tpot[0].lo <= 0 && d.tpot[0].hi >= 0);
    assert_int_equal(d.warnings, 0);
    struct lp_diff_rule rule;
    char err[256];
    assert_int_equal(lp_diff_rule_parse("tpot>+1%", &rule, err, sizeof err), LP_OK);
    assert_int_equal(lp_diff_gate(&d, &rule, 1), LP_OK);
    assert_int_equal(d.failed, 0);
    assert_int_equal(d.checks[0].result, LP_DIFF_RULE_PASSED);
    /* a loss without a count (buffers CUPTI returned twice) warns as a counted one does */
    struct lp_diff d2;
    rb.losses_uncounted = 1;
    assert_int_equal(lp_diff_build(&ra, &rb, NULL, &d2), LP_OK);
    assert_int_equal(d2.warnings, LP_DIFF_WARN_LOSSES);
    lp_diff_free(&d2);
    /* GEMM shapes past the table's LP_GEMM_ROWS_MAX: only the listed are compared, said */
    rb.losses_uncounted = 0;
    rb.gemm.unlisted.shapes = 3;
    assert_int_equal(lp_diff_build(&ra, &rb, NULL, &d2), LP_OK);
    assert_int_equal(d2.warnings, LP_DIFF_WARN_UNLISTED);
    char *md = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&md, &len);
    assert_int_equal(lp_report_diff_md(f, &d2), 0);
    fclose(f);
    assert_non_null(strstr(md, "> **Warning:** a run has more GEMM shapes than its table lists "
                               "(the costliest 1000)"));
    free(md);
    lp_diff_free(&d2);
    done(ta, tb, &ra, &rb, &d);
}

/* The same run drawn with other noise (2 % jitter): no change is flagged. */
static void test_diff_noise(void **state)
{
    (void)state;
    struct shape s = {1, 0, 1};
    struct lp_trace *ta, *tb;
    struct lp_run ra, rb;
    struct lp_diff d;
    diff_of(&s, &s, 977, &ta, &tb, &ra, &rb, &d);
    for (size_t i = 0; i < d.n_kernels; i++)
        assert_int_equal(d.kernels[i].status, LP_DIFF_STATUS_SAME);
    for (size_t i = 0; i < d.n_stages; i++) {
        assert_int_equal(d.stages[i].wall.verdict, LP_DIFF_VERDICT_SAME);
        assert_int_equal(d.stages[i].kernels_changed, 0);
    }
    assert_int_equal(d.tpot[0].verdict, LP_DIFF_VERDICT_SAME);
    assert_int_equal(d.ttft[0].verdict, LP_DIFF_VERDICT_SAME);
    done(ta, tb, &ra, &rb, &d);
}

/* Attention twice as slow and a kernel added to every step; the prefill 5 % faster. */
static void test_diff_shifts(void **state)
{
    (void)state;
    struct shape a = {1, 0, 1}, b = {2, 1, 0.95};
    struct lp_trace *ta, *tb;
    struct lp_run ra, rb;
    struct lp_diff d;
    diff_of(&a, &b, 1, &ta, &tb, &ra, &rb, &d);
    const struct lp_diff_kernel *attn = find_kernel(&d, "decode", "attn_decode");
    assert_non_null(attn);
    assert_int_equal(attn->status, LP_DIFF_STATUS_CHANGED);
    assert_true(fabs(attn->mean_ns.change - 1.0) < 0.01);
    assert_true(attn->mean_ns.lo > 0.9 && attn->mean_ns.hi < 1.1);
    assert_int_equal(attn->mean_ns.verdict, LP_DIFF_VERDICT_HIGHER);
    assert_int_equal(attn->mean_ns.worse, 1);
    assert_true(fabs(attn->calls.a - 1) < 1e-12 && fabs(attn->calls.b - 1) < 1e-12);
    const struct lp_diff_kernel *rope = find_kernel(&d, "decode", "rope_fused");
    assert_non_null(rope);
    assert_int_equal(rope->status, LP_DIFF_STATUS_ADDED);
    assert_true(rope->calls.a == 0 && fabs(rope->calls.b - 1) < 1e-12);
    assert_true(fabs(rope->gpu_ns.b - 40 * US) < 1);
    const struct lp_diff_kernel *gemm = find_kernel(&d, "decode", "gemm_decode");
    assert_non_null(gemm);
    assert_int_equal(gemm->status, LP_DIFF_STATUS_SAME);
    /* the largest change of GPU time per step first: attention (+100 us) before the rope */
    assert_ptr_equal(find_kernel(&d, "decode", "attn_decode"), &d.kernels[0] +
                     (d.stages[d.kernels[0].stage].name[0] == 'p' ? 1 : 0));
    const struct lp_diff_stage *dec = find_stage(&d, "decode"), *pre = find_stage(&d, "prefill");
    assert_int_equal(dec->kernels_added, 1);
    assert_int_equal(dec->kernels_changed, 1);
    assert_int_equal(dec->kernels_removed, 0);
    assert_true(dec->per_step);
    /* steps (one per range) of 400 us become 550 us: +37.5 %, and so TPOT */
    assert_true(fabs(dec->wall.change - 0.375) < 0.02);
    assert_int_equal(dec->wall.verdict, LP_DIFF_VERDICT_HIGHER);
    assert_true(dec->wall.lo > 0.3);
    assert_true(fabs(d.tpot[0].change - 0.375) < 0.03);
    assert_true(d.tpot[0].lo > 0.3);
    assert_true(fabs(dec->kernels.b - 3) < 1e-12 && fabs(dec->kernels.a - 2) < 1e-12);
    /* the prefill: 5 % faster, beyond its noise */
    assert_true(fabs(pre->wall.change + 0.05) < 0.01);
    assert_int_equal(pre->wall.verdict, LP_DIFF_VERDICT_LOWER);
    assert_int_equal(pre->wall.worse, -1);
    assert_true(pre->wall.hi < 0);
    /* its one kernel fills the range: 5 % shorter too */
    assert_int_equal(pre->kernels_changed, 1);
    assert_int_equal(pre->kernels_added + pre->kernels_removed, 0);
    const struct lp_diff_kernel *gp = find_kernel(&d, "prefill", "gemm_prefill");
    assert_non_null(gp);
    assert_true(fabs(gp->mean_ns.change + 0.05) < 0.01 && gp->mean_ns.hi < 0);

    /* the gate: the decode rule fails, the prefill one passes, an unknown stage fails */
    const char *texts[] = {"tpot>+5%", "decode.wall>+10%", "prefill.wall<-10%",
                           "prefill.wall<-3%", "vision.wall>+1%"};
    enum lp_diff_rule_result want[] = {LP_DIFF_RULE_FAILED, LP_DIFF_RULE_FAILED,
                                       LP_DIFF_RULE_PASSED, LP_DIFF_RULE_FAILED,
                                       LP_DIFF_RULE_MISSING};
    struct lp_diff_rule rules[5];
    char err[256];
    for (int i = 0; i < 5; i++)
        assert_int_equal(lp_diff_rule_parse(texts[i], &rules[i], err, sizeof err), LP_OK);
    assert_int_equal(lp_diff_gate(&d, rules, 5), LP_OK);
    for (int i = 0; i < 5; i++)
        assert_int_equal(d.checks[i].result, want[i]);
    assert_int_equal(d.failed, 4);

    /* the writers say it */
    char *md = NULL, *js = NULL;
    size_t n = 0, m = 0;
    FILE *f = open_memstream(&md, &n);
    assert_int_equal(lp_report_diff_md(f, &d), 0);
    fclose(f);
    f = open_memstream(&js, &m);
    assert_int_equal(lp_report_diff_json(f, &d), 0);
    fclose(f);
    assert_non_null(strstr(md, "| `rope_fused` | added |"));
    assert_non_null(strstr(md, "| `attn_decode` | changed |"));
    assert_non_null(strstr(md, "4 of 5 rules failed"));
    assert_non_null(strstr(js, "\"schema\": \"llmprof-diff/1\""));
    assert_non_null(strstr(js, "\"status\": \"added\""));
    free(md);
    free(js);
    done(ta, tb, &ra, &rb, &d);
}

static void test_diff_rules(void **state)
{
    (void)state;
    struct lp_diff_rule r;
    char err[512];
    assert_int_equal(lp_diff_rule_parse("ttft.p90>+10%", &r, err, sizeof err), LP_OK);
    assert_int_equal(r.quantile, 1);
    assert_true(r.up && fabs(r.limit - 0.10) < 1e-12 && !r.stage[0]);
    assert_int_equal(lp_diff_rule_parse("tpot>5%", &r, err, sizeof err), LP_OK);
    assert_true(r.up && fabs(r.limit - 0.05) < 1e-12);
    assert_int_equal(lp_diff_rule_parse("my.stage.step.p99<-2.5%", &r, err, sizeof err), LP_OK);
    assert_string_equal(r.stage, "my.stage");
    assert_true(!r.up && fabs(r.limit + 0.025) < 1e-12 && r.quantile == 2);
    assert_int_equal(lp_diff_rule_parse("decode.tokens_s<-3%", &r, err, sizeof err), LP_OK);
    assert_string_equal(r.stage, "decode");
    assert_int_equal(lp_diff_rule_unit(&r), LP_DIFF_UNIT_TOKENS_S);
    /* each figure's unit, for the gate's table */
    static const struct {
        const char *rule;
        enum lp_diff_unit unit;
    } units[] = {{"ttft.p90>+1%", LP_DIFF_UNIT_NS}, {"mfu<-1%", LP_DIFF_UNIT_SHARE},
                 {"d.busy<-1%", LP_DIFF_UNIT_SHARE}, {"d.kernels>+1%", LP_DIFF_UNIT_COUNT},
                 {"d.j_per_token>+1%", LP_DIFF_UNIT_J}, {"d.step.p99>+1%", LP_DIFF_UNIT_NS},
                 {"d.gpu_time>+1%", LP_DIFF_UNIT_NS}, {"d.mbu<-1%", LP_DIFF_UNIT_SHARE}};
    for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
        assert_int_equal(lp_diff_rule_parse(units[i].rule, &r, err, sizeof err), LP_OK);
        assert_int_equal(lp_diff_rule_unit(&r), units[i].unit);
    }
    const char *bad[] = {"tpot>+5", "tpot>-5%", "tpot<+5%", "latency>+5%", "tpot",
                         "decode.step.p95>+1%", "decode.tokens_s.p50>+1%", ">+5%",
                         "mfu>+x%", "tpot>+5%%", "decode.nothing>+1%", "tpot>+nan%"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = 0;
        assert_int_equal(lp_diff_rule_parse(bad[i], &r, err, sizeof err), LP_ERR_ARG);
        assert_non_null(strstr(err, "rule '"));
    }
}

/* The same decoder recorded twice on the H200 (eager decode, and CUDA-graph decode), and
 * eager against graph: nothing beyond the noise in the first two; in the third the decode is
 * faster beyond it, and the eager kernels gave way to graph replays. */
static void fixture_diff(const char *a, const char *b, struct lp_trace **ta,
                         struct lp_trace **tb, struct lp_run *ra, struct lp_run *rb,
                         struct lp_diff *d)
{
    *ta = tb_fixture(LP_FIXTURES, a);
    *tb = tb_fixture(LP_FIXTURES, b);
    analyze(*ta, NULL, ra);
    analyze(*tb, NULL, rb);
    assert_int_equal(lp_diff_build(ra, rb, NULL, d), LP_OK);
}

static void test_diff_fixtures_twice(void **state)
{
    (void)state;
    static const char *pairs[2][2] = {{"diff-eager-1", "diff-eager-2"},
                                      {"diff-graph-1", "diff-graph-2"}};
    for (int p = 0; p < 2; p++) {
        struct lp_trace *ta, *tb;
        struct lp_run ra, rb;
        struct lp_diff d;
        fixture_diff(pairs[p][0], pairs[p][1], &ta, &tb, &ra, &rb, &d);
        assert_int_equal(d.warnings, 0);
        for (size_t i = 0; i < d.n_kernels; i++)
            assert_true(d.kernels[i].status != LP_DIFF_STATUS_ADDED &&
                        d.kernels[i].status != LP_DIFF_STATUS_REMOVED);
        const struct lp_diff_stage *dec = find_stage(&d, "decode");
        assert_non_null(dec);
        assert_int_equal(dec->kernels.verdict, LP_DIFF_VERDICT_SAME);
        const char *texts[] = {"tpot>+5%", "ttft>+10%", "decode.tokens_s<-5%", "itl>+5%"};
        struct lp_diff_rule rules[4];
        char err[256];
        for (int i = 0; i < 4; i++)
            assert_int_equal(lp_diff_rule_parse(texts[i], &rules[i], err, sizeof err), LP_OK);
        assert_int_equal(lp_diff_gate(&d, rules, 4), LP_OK);
        assert_int_equal(d.failed, 0);
        done(ta, tb, &ra, &rb, &d);
    }
}

static void test_diff_fixtures_graph(void **state)
{
    (void)state;
    struct lp_trace *ta, *tb;
    struct lp_run ra, rb;
    struct lp_diff d;
    fixture_diff("diff-eager-1", "diff-graph-1", &ta, &tb, &ra, &rb, &d);
    assert_true(d.tpot[0].change < -0.5);
    assert_int_equal(d.tpot[0].verdict, LP_DIFF_VERDICT_LOWER);
    assert_true(d.itl[0].hi < -0.5);
    const struct lp_diff_stage *dec = find_stage(&d, "decode");
    assert_non_null(dec);
    assert_int_equal(dec->tokens_s.verdict, LP_DIFF_VERDICT_HIGHER);
    assert_int_equal(dec->tokens_s.worse, -1);
    /* one graph replay per step where the eager step launched hundreds of kernels */
    assert_true(dec->kernels.a > 100 && fabs(dec->kernels.b - 1) < 0.05);
    const struct lp_diff_kernel *replay = find_kernel(&d, "decode", "[CUDA graph replay]");
    assert_non_null(replay);
    assert_int_equal(replay->status, LP_DIFF_STATUS_ADDED);
    assert_true(dec->kernels_removed > 10);
    /* and back: the gate catches the eager decode */
    struct lp_diff back;
    assert_int_equal(lp_diff_build(&rb, &ra, NULL, &back), LP_OK);
    struct lp_diff_rule rule;
    char err[256];
    assert_int_equal(lp_diff_rule_parse("tpot>+5%", &rule, err, sizeof err), LP_OK);
    assert_int_equal(lp_diff_gate(&back, &rule, 1), LP_OK);
    assert_int_equal(back.checks[0].result, LP_DIFF_RULE_FAILED);
    lp_diff_free(&back);
    done(ta, tb, &ra, &rb, &d);
}

/* A run of N kernels "k_long" of a minute each plus 0, 1 or 2 ns (overlapping, so that the
 * recording stays under a week) */
static struct lp_trace *long_kernels(size_t n)
{
    struct tb b;
    tb_open(&b);
    for (size_t i = 0; i < n; i++) {
        uint64_t s = 1000 * US + i * US;
        kernel(&b, "k_long", 1, 0, s, s + 60000000000ull + i % 3);
    }
    return tb_read(&b, 1);
}

/* A kernel's spread in the diff when it is tiny beside its mean: the interval of a run
 * against itself is the one its standard deviation, sqrt((2n/3)/(n - 1)) ns, gives. A
 * difference of the squares' sum and the squared sum over n, in long double, lost it (0 or
 * noise in place of 0.8 ns). */
static void test_diff_spread_exact(void **state)
{
    (void)state;
    enum { N = 30000 };
    struct lp_trace *ta = long_kernels(N), *tb = long_kernels(N);
    struct lp_run ra, rb;
    struct lp_diff d;
    analyze(ta, NULL, &ra);
    analyze(tb, NULL, &rb);
    assert_int_equal(lp_diff_build(&ra, &rb, NULL, &d), LP_OK);
    const struct lp_diff_kernel *k = NULL;
    for (size_t i = 0; i < d.n_kernels; i++)
        if (!strcmp(d.kernels[i].name, "k_long"))
            k = &d.kernels[i];
    assert_non_null(k);
    assert_int_equal(k->mean_ns.n_a, N);
    double sd = sqrt((2.0 * N / 3) / (N - 1)), mean = 60000000001.0;
    double want = 1.96 * sd * sqrt(2.0 / N) / mean, half = (k->mean_ns.hi - k->mean_ns.lo) / 2;
    assert_true(fabs(half - want) < 0.01 * want);
    done(ta, tb, &ra, &rb, &d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diff_same),           cmocka_unit_test(test_diff_noise),
        cmocka_unit_test(test_diff_shifts),         cmocka_unit_test(test_diff_rules),
        cmocka_unit_test(test_diff_fixtures_twice), cmocka_unit_test(test_diff_fixtures_graph),
        cmocka_unit_test(test_diff_spread_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
