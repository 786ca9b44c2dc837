/* Several runs of one command compared (src/compare/repeats.c, src/report/repeats.c): runs
 * built with known prefill and decode times, their figures taken, their spread computed by
 * hand and checked, the ±10 % criterion at its edge, figures measured in some repeats only,
 * and what repeats.md, .json and .csv say. */
#include <jansson.h>
#include <limits.h>
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
#define STEPS 8

/* one run: 2 requests of a prefill of PREFILL_US and STEPS decode steps of STEP_US each, one
 * kernel under each range (a decode step's lasting STEP_KERNEL_US, 0: all but 3 us of the
 * step); DECODE 0: no decode at all */
static struct lp_trace *run_trace_k(uint64_t prefill_us, uint64_t step_us,
                                    uint64_t step_kernel_us, int decode)
{
    struct tb b;
    tb_open(&b);
    uint64_t t = 1000 * US;
    for (int q = 0; q < 2; q++) {
        range(&b, "prefill tokens=128", 1, t, t + prefill_us * US);
        kernel(&b, "gemm_prefill", 1, t + 1 * US, t + 2 * US, t + prefill_us * US - US);
        t += prefill_us * US + 10 * US;
        for (int k = 0; decode && k < STEPS; k++) {
            range(&b, "decode step tokens=1", 1, t, t + step_us * US);
            kernel(&b, "gemm_decode", 1, t + 1 * US, t + 2 * US,
                   step_kernel_us ? t + 2 * US + step_kernel_us * US : t + step_us * US - US);
            t += step_us * US;
        }
        t += 100 * US;
    }
    return tb_read(&b, 1);
}

static struct lp_trace *run_trace(uint64_t prefill_us, uint64_t step_us, int decode)
{
    return run_trace_k(prefill_us, step_us, 0, decode);
}

static void take_k(uint64_t prefill_us, uint64_t step_us, uint64_t step_kernel_us,
                   const char *label, struct lp_repeat *k)
{
    struct lp_trace *t = run_trace_k(prefill_us, step_us, step_kernel_us, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(lp_repeat_take(&r, label, k), LP_OK);
    lp_run_free(&r);
    lp_trace_free(t);
}

static void take(uint64_t prefill_us, uint64_t step_us, int decode, const char *label,
                 struct lp_repeat *k)
{
    struct lp_trace *t = run_trace(prefill_us, step_us, decode);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(lp_repeat_take(&r, label, k), LP_OK);
    lp_run_free(&r);
    lp_trace_free(t);
}

static const struct lp_repeats_stage *stage_of(const struct lp_repeats *r, const char *name)
{
    for (size_t i = 0; i < r->n_stages; i++)
        if (!strcmp(r->stages[i].name, name))
            return &r->stages[i];
    return NULL;
}

/* TPOT 5000, 5250, 4750 us: mean 5 ms, std 250 us, CV 5 %, worst 5 % (within); the prefill
 * 2000 us in each (std 0) */
static void test_repeats_within(void **state)
{
    (void)state;
    struct lp_repeat k[3];
    take(2000, 5000, 1, "repeat-1", &k[0]);
    take(2000, 5250, 1, "repeat-2", &k[1]);
    take(2000, 4750, 1, "repeat-3", &k[2]);
    assert_true(fabs(k[1].fig[LP_REPEAT_FIGURE_TPOT_NS] - 5250e3) < 1e-6);
    struct lp_repeats r;
    assert_int_equal(lp_repeats_analyze(k, 3, 0, &r), LP_OK);
    const struct lp_repeat_stat *s = &r.fig[LP_REPEAT_FIGURE_TPOT_NS];
    assert_int_equal(s->n, 3);
    assert_true(fabs(s->mean - 5000e3) < 1e-6);
    assert_true(fabs(s->std - 250e3) < 1e-6);
    assert_true(fabs(s->cv - 0.05) < 1e-12);
    assert_true(fabs(s->worst - 0.05) < 1e-12);
    assert_true(s->within);
    assert_int_equal(s->min_at, 2);
    assert_int_equal(s->max_at, 1);
    const struct lp_repeats_stage *p = stage_of(&r, "prefill");
    assert_non_null(p);
    assert_int_equal(p->fig[LP_REPEAT_STAGE_WALL_NS].n, 3);
    assert_true(fabs(p->fig[LP_REPEAT_STAGE_WALL_NS].mean - 2000e3) < 1e-6);
    assert_true(p->fig[LP_REPEAT_STAGE_WALL_NS].std == 0);
    assert_int_equal(r.verdict, LP_REPEATS_VERDICT_WITHIN);
    assert_int_equal(r.n_outside, 0);
    char *md = NULL;
    size_t len;
    FILE *f = open_memstream(&md, &len);
    assert_int_equal(lp_report_repeats_md(f, &r), 0);
    fclose(f);
    assert_non_null(strstr(md, "**Within ±10 %**"));
    assert_non_null(strstr(md, "| TPOT (median) | 3 | 5.000 ms | 250.0 us | 5.0 % | 4.750 ms "
                               "(repeat-3) | 5.250 ms (repeat-2) | 5.0 % | yes |"));
    free(md);
    lp_repeats_free(&r);
    for (int i = 0; i < 3; i++)
        lp_repeat_free(&k[i]);
}

/* one repeat 12 % slower per step (mean 5.4 ms: it is 11.1 % above, the others 7.4 %
 * below): outside, named in report.md, report.json and the CSV; a repeat with no decode
 * leaves TPOT to the other three and the prefill to all four */
static void test_repeats_outside(void **state)
{
    (void)state;
    struct lp_repeat k[4];
    take(2000, 5000, 1, "repeat-1", &k[0]);
    take(2000, 5000, 1, "repeat-2", &k[1]);
    take(2000, 6200, 1, "repeat-3", &k[2]);
    take(2000, 0, 0, "repeat-4", &k[3]);
    assert_true(isnan(k[3].fig[LP_REPEAT_FIGURE_TPOT_NS]));
    struct lp_repeats r;
    assert_int_equal(lp_repeats_analyze(k, 4, 0, &r), LP_OK);
    const struct lp_repeat_stat *s = &r.fig[LP_REPEAT_FIGURE_TPOT_NS];
    assert_int_equal(s->n, 3);
    assert_true(fabs(s->mean - 5400e3) < 1e-6);
    assert_true(fabs(s->worst - 800.0 / 5400) < 1e-12);
    assert_int_equal(s->worst_at, 2);
    assert_false(s->within);
    assert_int_equal(stage_of(&r, "prefill")->fig[LP_REPEAT_STAGE_WALL_NS].n, 4);
    assert_int_equal(r.verdict, LP_REPEATS_VERDICT_OUTSIDE);
    assert_true(r.n_outside >= 2); /* TPOT and the decode's wall per occurrence at least */
    assert_int_equal(r.n_host_spread, 0); /* its kernels took longer too: not the host alone */

    char *md = NULL, *js = NULL, *csv = NULL;
    size_t len;
    FILE *f = open_memstream(&md, &len);
    assert_int_equal(lp_report_repeats_md(f, &r), 0);
    fclose(f);
    assert_non_null(strstr(md, "**Outside ±10 %**"));
    assert_non_null(strstr(md, "TPOT (median)"));
    assert_non_null(strstr(md, "decode wall per occurrence"));
    assert_non_null(strstr(md, "| **no** |"));
    f = open_memstream(&js, &len);
    assert_int_equal(lp_report_repeats_json(f, &r), 0);
    fclose(f);
    json_error_t e;
    json_t *root = json_loads(js, 0, &e);
    assert_non_null(root);
    assert_string_equal(json_string_value(json_object_get(root, "schema")), "llmprof-repeats/1");
    assert_string_equal(json_string_value(json_object_get(root, "verdict")), "outside");
    json_t *tpot = json_object_get(json_object_get(root, "figures"), "tpot_ns");
    assert_true(json_is_false(json_object_get(tpot, "within")));
    assert_string_equal(json_string_value(json_object_get(tpot, "worst_repeat")), "repeat-3");
    json_t *values = json_object_get(tpot, "values");
    assert_int_equal(json_array_size(values), 4);
    assert_true(json_is_null(json_array_get(values, 3)));
    json_decref(root);
    f = open_memstream(&csv, &len);
    assert_int_equal(lp_report_repeats_csv(f, &r), 0);
    fclose(f);
    assert_true(!strncmp(csv, "repeat,stage,figure,value\n", 26));
    assert_non_null(strstr(csv, "repeat-3,,tpot_ns,6200000\n"));
    assert_non_null(strstr(csv, "repeat-4,,tpot_ns,\n"));
    free(md);
    free(js);
    free(csv);
    lp_repeats_free(&r);
    for (int i = 0; i < 4; i++)
        lp_repeat_free(&k[i]);
}

/* the criterion at its edge: exactly 10 % off is within; one repeat is too few */
static void test_repeats_edges(void **state)
{
    (void)state;
    struct lp_repeat k[2] = {{0}, {0}};
    for (int i = 0; i < 2; i++)
        for (int f = 0; f < LP_REPEAT_FIGURE_COUNT; f++)
            k[i].fig[f] = NAN;
    k[0].label = "a";
    k[1].label = "b";
    k[0].fig[LP_REPEAT_FIGURE_MFU] = 0.45;
    k[1].fig[LP_REPEAT_FIGURE_MFU] = 0.55; /* mean 0.5: each 10 % off */
    struct lp_repeats r;
    assert_int_equal(lp_repeats_analyze(k, 2, 0, &r), LP_OK);
    assert_true(fabs(r.fig[LP_REPEAT_FIGURE_MFU].worst - 0.1) < 1e-12);
    assert_true(r.fig[LP_REPEAT_FIGURE_MFU].within);
    assert_int_equal(r.verdict, LP_REPEATS_VERDICT_WITHIN);
    lp_repeats_free(&r);
    assert_int_equal(lp_repeats_analyze(k, 2, 0.05, &r), LP_OK);
    assert_int_equal(r.verdict, LP_REPEATS_VERDICT_OUTSIDE);
    lp_repeats_free(&r);
    assert_int_equal(lp_repeats_analyze(k, 1, 0, &r), LP_OK);
    assert_int_equal(r.fig[LP_REPEAT_FIGURE_MFU].n, 1);
    assert_true(isnan(r.fig[LP_REPEAT_FIGURE_MFU].std));
    assert_int_equal(r.verdict, LP_REPEATS_VERDICT_TOO_FEW);
    lp_repeats_free(&r);
}

/* the median of a timer.json's timed requests' KEY (the warm-up left out) */
static double timer_median(const char *path, const char *key)
{
    json_error_t e;
    json_t *t = json_load_file(path, 0, &e), *reqs = json_object_get(t, "requests");
    assert_non_null(reqs);
    double v[16];
    size_t n = 0, i;
    json_t *q;
    json_array_foreach(reqs, i, q)
        if (!json_is_true(json_object_get(q, "warmup")) && n < 16)
            v[n++] = json_number_value(json_object_get(q, key));
    json_decref(t);
    assert_true(n > 0);
    for (size_t a = 1; a < n; a++) /* insertion sort: a handful of values */
        for (size_t b = a; b > 0 && v[b] < v[b - 1]; b--) {
            double x = v[b];
            v[b] = v[b - 1];
            v[b - 1] = x;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* the H200 run of tests/gpu/repeats.sh (three runs of a CUDA-graph decoder): each repeat's
 * TPOT and TTFT against the program's own timer, and the spread: TPOT within 1 % across the
 * processes as the timers say (0.3 %), TTFT outside ±10 % as the timers say (13.5 %) */
static void test_repeats_fixture(void **state)
{
    (void)state;
    struct lp_repeat k[3];
    double ttft_timer[3];
    for (int i = 0; i < 3; i++) {
        char name[64], timer[PATH_MAX];
        snprintf(name, sizeof name, "repeats-graph/repeat-%d", i + 1);
        struct lp_trace *t = tb_fixture(LP_FIXTURES, name);
        struct lp_run r;
        analyze(t, NULL, &r);
        assert_int_equal(lp_repeat_take(&r, name, &k[i]), LP_OK);
        snprintf(timer, sizeof timer, "%s/%s/timer.json", LP_FIXTURES, name);
        double tpot = timer_median(timer, "tpot_ms") * 1e6;
        ttft_timer[i] = timer_median(timer, "prefill_ms") * 1e6;
        assert_true(fabs(k[i].fig[LP_REPEAT_FIGURE_TPOT_NS] - tpot) / tpot < 0.001);
        assert_true(fabs(k[i].fig[LP_REPEAT_FIGURE_TTFT_NS] - ttft_timer[i]) / ttft_timer[i] <
                    0.02);
        lp_run_free(&r);
        lp_trace_free(t);
    }
    struct lp_repeats r;
    assert_int_equal(lp_repeats_analyze(k, 3, 0, &r), LP_OK);
    assert_true(r.fig[LP_REPEAT_FIGURE_TPOT_NS].within);
    assert_true(r.fig[LP_REPEAT_FIGURE_TPOT_NS].worst < 0.01);
    assert_false(r.fig[LP_REPEAT_FIGURE_TTFT_NS].within);
    double m = (ttft_timer[0] + ttft_timer[1] + ttft_timer[2]) / 3, worst = 0;
    for (int i = 0; i < 3; i++)
        worst = fmax(worst, fabs(ttft_timer[i] - m) / m);
    assert_true(worst > 0.10); /* the programs' own clocks agree: outside */
    assert_true(fabs(r.fig[LP_REPEAT_FIGURE_TTFT_NS].worst - worst) < 0.01);
    assert_int_equal(r.verdict, LP_REPEATS_VERDICT_OUTSIDE);
    const struct lp_repeats_stage *p = stage_of(&r, "prefill");
    assert_non_null(p);
    assert_int_equal(p->energy_coarse, 3); /* 7 ms ranges: under two NVML refreshes */
    assert_int_equal(p->fig[LP_REPEAT_STAGE_J_PER_TOKEN].n, 0);
    lp_repeats_free(&r);
    for (int i = 0; i < 3; i++)
        lp_repeat_free(&k[i]);
}

/* The DeepSeek-OCR runner on the H200 (tests/gpu/ocr_runner.sh: two pages, 8 new tokens a
 * request, a warm-up first), DIR with N repeats and its vision stages: each repeat's TTFT and
 * TPOT against the runner's own timer, the vision parts as stages in every repeat, the GPU
 * time per occurrence of every stage the same in every process (so a stage outside by its
 * wall time is said to be the host's spread), and the between-process spread of TPOT as the
 * timers give it. */
static void ocr_repeats(const char *dir, int n, const char *const parts[3])
{
    struct lp_repeat k[3];
    double tpot_timer[3];
    for (int i = 0; i < n; i++) {
        char name[96], timer[PATH_MAX];
        snprintf(name, sizeof name, "%s/repeat-%d", dir, i + 1);
        struct lp_trace *t = tb_fixture(LP_FIXTURES, name);
        struct lp_run r;
        analyze(t, NULL, &r);
        /* 273 image slots (OCR-2: 257) and 17 text tokens */
        assert_int_equal(r.llm.prompt_tokens, 290 - (parts[1][0] == 'e') * 16);
        assert_int_equal(lp_repeat_take(&r, name, &k[i]), LP_OK);
        snprintf(timer, sizeof timer, "%s/%s/timer.json", LP_FIXTURES, name);
        double ttft = timer_median(timer, "ttft_ms") * 1e6;
        tpot_timer[i] = timer_median(timer, "tpot_ms") * 1e6;
        assert_true(fabs(k[i].fig[LP_REPEAT_FIGURE_TTFT_NS] - ttft) / ttft < 0.005);
        assert_true(fabs(k[i].fig[LP_REPEAT_FIGURE_TPOT_NS] - tpot_timer[i]) / tpot_timer[i] <
                    0.001);
        lp_run_free(&r);
        lp_trace_free(t);
    }
    struct lp_repeats r;
    assert_int_equal(lp_repeats_analyze(k, (size_t)n, 0, &r), LP_OK);
    for (int p = 0; p < 3; p++) {
        const struct lp_repeats_stage *s = stage_of(&r, parts[p]);
        assert_non_null(s);
        assert_int_equal(s->fig[LP_REPEAT_STAGE_WALL_NS].n, (size_t)n);
    }
    for (size_t i = 0; i < r.n_stages; i++) {
        const struct lp_repeat_stat *g = &r.stages[i].fig[LP_REPEAT_STAGE_GPU_NS];
        assert_int_equal(g->n, (size_t)n);
        /* the same kernels in every process: the spread is the host's (measured: 0.0-0.2 %
         * for stages of milliseconds, 1.2 % for the 15 us projector) */
        assert_true(g->worst < (g->mean > 1e6 ? 0.005 : 0.02));
    }
    size_t wall_outside = 0;
    for (size_t i = 0; i < r.n_stages; i++)
        wall_outside += !r.stages[i].fig[LP_REPEAT_STAGE_WALL_NS].within;
    assert_true(wall_outside > 0); /* the H200's noisy host, in both fixtures */
    assert_int_equal(r.n_host_spread, wall_outside);
    assert_true(r.host_spread_gpu_worst > 0 && r.host_spread_gpu_worst < 0.02);
    double m = 0, worst = 0;
    for (int i = 0; i < n; i++)
        m += tpot_timer[i] / n;
    for (int i = 0; i < n; i++)
        worst = fmax(worst, fabs(tpot_timer[i] - m) / m);
    assert_true(fabs(r.fig[LP_REPEAT_FIGURE_TPOT_NS].worst - worst) < 0.001);
    assert_int_equal(r.fig[LP_REPEAT_FIGURE_TPOT_NS].within, worst <= 0.10);
    lp_repeats_free(&r);
    for (int i = 0; i < n; i++)
        lp_repeat_free(&k[i]);
}

static void test_repeats_ocr(void **state)
{
    (void)state;
    static const char *const v1[3] = {"sam", "clip", "projector"};
    static const char *const v2[3] = {"sam", "encoder", "projector"};
    ocr_repeats("deepseek-ocr-repeats", 3, v1);
    ocr_repeats("deepseek-ocr2-repeats", 2, v2);
}

/* repeats.md of R (malloc'd) */
static char *repeats_md(const struct lp_repeats *r)
{
    char *md = NULL;
    size_t len;
    FILE *f = open_memstream(&md, &len);
    assert_non_null(f);
    assert_int_equal(lp_report_repeats_md(f, r), 0);
    fclose(f);
    return md;
}

/* The host's spread: decode steps of 5.0, 5.0 and 6.0 ms whose kernel takes 1 ms in each
 * (wall 12.5 % off the mean, GPU time the same) are said to be the host's; steps of 5.0, 5.0
 * and 5.9 ms whose kernels take 4.5, 4.5 and 5.2 ms are not (the GPU moved 9.9 %: within the
 * tolerance, but most of the wall time's 11.3 %) */
static void test_repeats_host_spread(void **state)
{
    (void)state;
    struct lp_repeat k[3];
    take_k(2000, 5000, 1000, "repeat-1", &k[0]);
    take_k(2000, 5000, 1000, "repeat-2", &k[1]);
    take_k(2000, 6000, 1000, "repeat-3", &k[2]);
    struct lp_repeats r;
    assert_int_equal(lp_repeats_analyze(k, 3, 0, &r), LP_OK);
    const struct lp_repeats_stage *d = stage_of(&r, "decode");
    assert_non_null(d);
    assert_false(d->fig[LP_REPEAT_STAGE_WALL_NS].within);
    assert_true(d->fig[LP_REPEAT_STAGE_GPU_NS].worst < 1e-9);
    assert_int_equal(r.n_host_spread, 1);
    char *md = repeats_md(&r);
    assert_non_null(strstr(md, "1 stage outside by its wall time kept its GPU time per "
                               "occurrence within ±0.0 %"));
    free(md);
    lp_repeats_free(&r);
    for (int i = 0; i < 3; i++)
        lp_repeat_free(&k[i]);
    take_k(2000, 5000, 4500, "repeat-1", &k[0]);
    take_k(2000, 5000, 4500, "repeat-2", &k[1]);
    take_k(2000, 5900, 5200, "repeat-3", &k[2]);
    assert_int_equal(lp_repeats_analyze(k, 3, 0, &r), LP_OK);
    d = stage_of(&r, "decode");
    assert_false(d->fig[LP_REPEAT_STAGE_WALL_NS].within);
    assert_true(d->fig[LP_REPEAT_STAGE_GPU_NS].within);
    assert_true(d->fig[LP_REPEAT_STAGE_GPU_NS].worst > 0.09);
    assert_int_equal(r.n_host_spread, 0);
    md = repeats_md(&r);
    assert_null(strstr(md, "came from the host"));
    free(md);
    lp_repeats_free(&r);
    for (int i = 0; i < 3; i++)
        lp_repeat_free(&k[i]);
}

/* the programs' stated requests: the first repeat's in repeats.md and repeats.json, and
 * whether every repeat stated the same one */
static void test_repeats_request(void **state)
{
    (void)state;
    const char *req = "{\"model_path\":\"/m\",\"repeats\":3}";
    struct lp_repeat k[2];
    take(2000, 5000, 1, "repeat-1", &k[0]);
    take(2000, 5000, 1, "repeat-2", &k[1]);
    assert_null(k[0].request); /* a run that stated none */
    k[0].request = strdup(req);
    k[1].request = strdup(req);
    struct lp_repeats r;
    assert_int_equal(lp_repeats_analyze(k, 2, 0, &r), LP_OK);
    assert_false(r.requests_differ);
    char *md = repeats_md(&r), *js = NULL;
    size_t len;
    assert_non_null(strstr(md, "Request (as the program stated it, the same in every repeat): "
                               "`{\"model_path\":\"/m\",\"repeats\":3}`\n"));
    FILE *f = open_memstream(&js, &len);
    assert_int_equal(lp_report_repeats_json(f, &r), 0);
    fclose(f);
    json_t *j = json_loads(js, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "request"),
                                                        "repeats")), 3);
    assert_true(json_is_false(json_object_get(j, "requests_differ")));
    json_decref(j);
    free(md);
    free(js);
    lp_repeats_free(&r);
    free(k[1].request);
    k[1].request = NULL; /* the second stated none */
    assert_int_equal(lp_repeats_analyze(k, 2, 0, &r), LP_OK);
    assert_true(r.requests_differ);
    md = repeats_md(&r);
    assert_non_null(strstr(md, "the repeats' requests DIFFER"));
    free(md);
    lp_repeats_free(&r);
    for (int i = 0; i < 2; i++)
        lp_repeat_free(&k[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repeats_within),
        cmocka_unit_test(test_repeats_outside),
        cmocka_unit_test(test_repeats_edges),
        cmocka_unit_test(test_repeats_fixture),
        cmocka_unit_test(test_repeats_request),
        cmocka_unit_test(test_repeats_ocr),
        cmocka_unit_test(test_repeats_host_spread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
