/* CUPTI's overhead records in the report (src/analyze/overhead.c): per kind and class, split
 * by the program's threads, per stage with the findings they raise, and written to
 * report.md, report.json and the Perfetto export; on a synthetic run with known answers and on the real H200
 * fixtures, whose raw records the test sums itself. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "llmprof/analyze.h"
#include "llmprof/report.h"
#include "tracebuild.h"

#define US 1000ull
#define MS 1000000ull
#define PROGRAM 1u
#define OTHER 99u /* a thread with no launches, ranges or GEMM calls: llmprof's or CUPTI's */
#define LAZY (5u << 16)
#define REQUEST (7u << 16)
#define FLUSH (1u << 16)
#define QUEUE (6u << 16)

static void overhead_rec(struct tb *b, uint32_t kind, uint32_t thread, uint64_t s, uint64_t d)
{
    struct lp_record r = {.type = LP_REC_OVERHEAD};
    r.u.overhead = (struct lp_overhead){.start = s, .end = s + d, .kind = kind, .thread = thread};
    add(b, &r);
}

/* A prefill range (0-1 ms) and a decode range (1-11 ms) on the program's thread, one kernel
 * each, and the overhead records the cases add (EXTRA_REQUEST_NS: a buffer request inside
 * decode). */
static struct lp_trace *run_trace(uint64_t lazy_ns, uint64_t extra_request_ns)
{
    struct tb b;
    tb_open(&b);
    range(&b, "prefill", PROGRAM, 0, 1 * MS);
    kernel(&b, "gemm_a", PROGRAM, 10 * US, 20 * US, 600 * US);
    range(&b, "decode", PROGRAM, 1 * MS, 11 * MS);
    kernel(&b, "gemm_b", PROGRAM, 1 * MS + 10 * US, 1 * MS + 20 * US, 10 * MS);
    overhead_rec(&b, QUEUE, PROGRAM, 500 * US, 100 * US);         /* in prefill */
    overhead_rec(&b, LAZY, PROGRAM, 2 * MS, lazy_ns);             /* in decode */
    overhead_rec(&b, REQUEST, PROGRAM, 3 * MS, 5 * US);           /* in decode */
    if (extra_request_ns)
        overhead_rec(&b, REQUEST, PROGRAM, 4 * MS, extra_request_ns);
    overhead_rec(&b, FLUSH, OTHER, 5 * MS, 1 * MS);               /* not the program's */
    overhead_rec(&b, 99u << 16, PROGRAM, 20 * MS, 3 * US);        /* unknown kinds, outside */
    overhead_rec(&b, 98u << 16, PROGRAM, 21 * MS, 4 * US);
    return tb_read(&b, 1);
}

static const struct lp_overhead_row *row_of(const struct lp_run *r, enum lp_overhead_kind k)
{
    for (size_t i = 0; i < r->overhead.n_rows; i++)
        if (r->overhead.rows[i].kind == k)
            return &r->overhead.rows[i];
    return NULL;
}

static int perfetto_all(FILE *f, const struct lp_run *r)
{
    return lp_report_perfetto(f, r, 0, 0);
}

static void test_kinds(void **state)
{
    (void)state;
    /* CUpti_ActivityOverheadKind's values, cupti_activity.h */
    static const struct {
        uint32_t cupti;
        enum lp_overhead_kind kind;
        enum lp_overhead_class cls;
    } want[] = {
        {0, LP_OVERHEAD_KIND_UNKNOWN, LP_OVERHEAD_CLASS_OTHER},
        {1, LP_OVERHEAD_KIND_COMPILER, LP_OVERHEAD_CLASS_LOADING},
        {1u << 16, LP_OVERHEAD_KIND_BUFFER_FLUSH, LP_OVERHEAD_CLASS_PROFILER},
        {2u << 16, LP_OVERHEAD_KIND_INSTRUMENTATION, LP_OVERHEAD_CLASS_PROFILER},
        {3u << 16, LP_OVERHEAD_KIND_RESOURCE, LP_OVERHEAD_CLASS_PROFILER},
        {4u << 16, LP_OVERHEAD_KIND_MODULE_LOADING, LP_OVERHEAD_CLASS_LOADING},
        {5u << 16, LP_OVERHEAD_KIND_LAZY_LOADING, LP_OVERHEAD_CLASS_LOADING},
        {6u << 16, LP_OVERHEAD_KIND_COMMAND_BUFFER_FULL, LP_OVERHEAD_CLASS_QUEUE},
        {7u << 16, LP_OVERHEAD_KIND_BUFFER_REQUEST, LP_OVERHEAD_CLASS_PROFILER},
        {8u << 16, LP_OVERHEAD_KIND_UVM_INIT, LP_OVERHEAD_CLASS_PROFILER},
        {9u << 16, LP_OVERHEAD_KIND_UNKNOWN, LP_OVERHEAD_CLASS_OTHER},
        {0x7fffffff, LP_OVERHEAD_KIND_UNKNOWN, LP_OVERHEAD_CLASS_OTHER},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        assert_int_equal(lp_overhead_kind_of(want[i].cupti), want[i].kind);
        assert_int_equal(lp_overhead_kind_class(want[i].kind), want[i].cls);
    }
    assert_int_equal(lp_overhead_kind_class(LP_OVERHEAD_KIND_COUNT), LP_OVERHEAD_CLASS_OTHER);
}

static void test_synthetic(void **state)
{
    (void)state;
    struct lp_trace *t = run_trace(200 * US, 0);
    struct lp_run r;
    analyze(t, NULL, &r);
    const struct lp_run_overhead *o = &r.overhead;
    assert_int_equal(o->records, 6);
    assert_int_equal(o->n_rows, 5); /* two unknown kinds make one row */
    /* by total time: the flush (1 ms), lazy loading, the full queue, the request, unknown */
    assert_int_equal(o->rows[0].kind, LP_OVERHEAD_KIND_BUFFER_FLUSH);
    assert_int_equal(o->rows[1].kind, LP_OVERHEAD_KIND_LAZY_LOADING);
    const struct lp_overhead_row *flush = row_of(&r, LP_OVERHEAD_KIND_BUFFER_FLUSH);
    assert_int_equal(flush->total_ns, 1 * MS);
    assert_int_equal(flush->program_ns, 0);
    assert_int_equal(flush->measured_ns, 0);
    const struct lp_overhead_row *unknown = row_of(&r, LP_OVERHEAD_KIND_UNKNOWN);
    assert_int_equal(unknown->count, 2);
    assert_int_equal(unknown->total_ns, 7 * US);
    assert_int_equal(unknown->max_ns, 4 * US);
    assert_int_equal(unknown->program_ns, 7 * US);
    assert_int_equal(unknown->measured_ns, 0); /* outside every range */
    assert_int_equal(unknown->cls, LP_OVERHEAD_CLASS_OTHER);
    assert_int_equal(o->program_ns[LP_OVERHEAD_CLASS_PROFILER], 5 * US);
    assert_int_equal(o->measured_ns[LP_OVERHEAD_CLASS_LOADING], 200 * US);
    assert_int_equal(o->measured_ns[LP_OVERHEAD_CLASS_QUEUE], 100 * US);
    const struct lp_stage_report *pre = stage(&r, "prefill"), *dec = stage(&r, "decode");
    assert_non_null(pre);
    assert_non_null(dec);
    assert_int_equal(pre->overhead_ns[LP_OVERHEAD_CLASS_QUEUE], 100 * US);
    assert_int_equal(pre->overhead_ns[LP_OVERHEAD_CLASS_LOADING], 0);
    assert_int_equal(dec->overhead_ns[LP_OVERHEAD_CLASS_LOADING], 200 * US);
    assert_int_equal(dec->overhead_n[LP_OVERHEAD_CLASS_LOADING], 1);
    assert_int_equal(dec->overhead_ns[LP_OVERHEAD_CLASS_PROFILER], 5 * US);
    assert_true(fabs(dec->overhead_share[LP_OVERHEAD_CLASS_LOADING] -
                     200e3 / dec->wall.total) < 1e-12);
    assert_true(dec->overhead_share[LP_OVERHEAD_CLASS_LOADING] > 0.019 &&
                dec->overhead_share[LP_OVERHEAD_CLASS_LOADING] < 0.021);
    /* loading at 2 % of decode: a finding citing it; CUPTI's own 5 us: none */
    const struct lp_finding *f = finding(&r, LP_FINDING_LOADING);
    assert_non_null(f);
    assert_string_equal(r.stages[f->stage].name, "decode");
    assert_int_equal(f->severity, 1);
    assert_true(f->overhead_ns == 200e3);
    assert_int_equal(f->overhead_n, 1);
    assert_null(finding(&r, LP_FINDING_PROFILER_WORK));

    char *md = write_to_string(lp_report_run_md, &r);
    assert_non_null(strstr(md, "## Host time CUPTI recorded\n\nMeasured by CUPTI (6 overhead "
                               "records)"));
    assert_non_null(strstr(md, "| activity buffer flush | CUPTI's own work | 1 | 1.000 ms | "
                               "1.000 ms | 0 ns | 0 ns |"));
    assert_non_null(strstr(md, "| lazy function loading | CUDA loading code | 1 | 200.0 us | "
                               "200.0 us | 200.0 us | 200.0 us |"));
    assert_non_null(strstr(md, "| decode | 5.0 us (0.1 %) | 200.0 us (2.0 %) | - |"));
    assert_non_null(strstr(md, "| prefill | - | - | 100.0 us (10.0 %) |"));
    assert_non_null(strstr(md, "**[look] CUDA loaded code during decode.** decode: 0.2 ms "
                               "loading code on the program's threads inside its measured "
                               "occurrences, 2.0 % of its time, in 1 of CUPTI's overhead records"));
    free(md);

    /* stages.csv: per class, the stage's time, count and share, as many fields as the header */
    char *csv = write_to_string(lp_report_stages_csv, &r);
    assert_non_null(strstr(csv, ",pm_mbu,cupti_profiler_ns,cupti_profiler_count,"
                                "cupti_profiler_share,cupti_loading_ns,cupti_loading_count,"
                                "cupti_loading_share,cupti_queue_ns,"));
    const char *row = strstr(csv, "\ndecode,");
    assert_non_null(row);
    assert_non_null(strstr(row, ",5000,1,0.00050,200000,1,0.02000,0,0,0.00000,0,0,0.00000\n"));
    size_t header_fields = 1, row_fields = 1;
    for (const char *c = csv; *c != '\n'; c++)
        header_fields += *c == ',';
    for (const char *c = row + 1; *c != '\n'; c++)
        row_fields += *c == ',';
    assert_int_equal(row_fields, header_fields);
    free(csv);

    char *pf = write_to_string(perfetto_all, &r);
    assert_non_null(strstr(pf, "{\"ph\":\"X\",\"cat\":\"cupti_overhead\",\"name\":\"lazy "
                               "function loading\",\"pid\":42,\"tid\":1,\"ts\":1990.000,"
                               "\"dur\":200.000,\"args\":{\"class\":\"loading\"}}"));
    assert_non_null(strstr(pf, "\"name\":\"activity buffer flush\",\"pid\":42,\"tid\":99,"));
    free(pf);

    char *js = write_to_string(lp_report_run_json, &r);
    json_error_t e;
    json_t *root = json_loads(js, 0, &e);
    assert_non_null(root);
    json_t *ov = json_object_get(root, "cupti_overhead");
    assert_int_equal(json_integer_value(json_object_get(ov, "records")), 6);
    json_t *k0 = json_array_get(json_object_get(ov, "kinds"), 0);
    assert_string_equal(json_string_value(json_object_get(k0, "kind")), "buffer_flush");
    assert_string_equal(json_string_value(json_object_get(k0, "class")), "profiler");
    assert_int_equal(json_integer_value(json_object_get(k0, "total_ns")), 1 * MS);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(ov, "measured_ns"),
                                                        "loading")),
                     200 * US);
    json_t *stages = json_object_get(root, "stages");
    int seen = 0;
    for (size_t i = 0; i < json_array_size(stages); i++) {
        json_t *s = json_array_get(stages, i);
        if (strcmp(json_string_value(json_object_get(s, "name")), "decode"))
            continue;
        json_t *l = json_object_get(json_object_get(s, "cupti_overhead"), "loading");
        assert_int_equal(json_integer_value(json_object_get(l, "ns")), 200 * US);
        assert_int_equal(json_integer_value(json_object_get(l, "count")), 1);
        seen = 1;
    }
    assert_true(seen);
    json_t *fs = json_object_get(root, "findings");
    seen = 0;
    for (size_t i = 0; i < json_array_size(fs); i++)
        seen |= !strcmp(json_string_value(json_object_get(json_array_get(fs, i), "code")),
                        "code_loading");
    assert_true(seen);
    json_decref(root);
    free(js);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Thresholds: loading under 1 % of the stage raises nothing; CUPTI's own work at 1.5 % does */
static void test_thresholds(void **state)
{
    (void)state;
    struct lp_trace *t = run_trace(90 * US, 145 * US);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_null(finding(&r, LP_FINDING_LOADING));
    const struct lp_finding *f = finding(&r, LP_FINDING_PROFILER_WORK);
    assert_non_null(f);
    assert_int_equal(f->severity, 0);
    assert_true(f->overhead_ns == 150e3);
    assert_int_equal(f->overhead_n, 2);
    assert_true(f->share > 0.0149 && f->share < 0.0151);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* A record counts in a stage for its part inside the occurrence; one without a duration in
 * no row; without launch records only NVTX and cuBLAS threads are the program's */
static void test_edges(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "decode", PROGRAM, 1 * MS, 11 * MS);
    kernel(&b, "gemm_b", PROGRAM, 0, 1 * MS + 20 * US, 10 * MS); /* no launch record */
    overhead_rec(&b, LAZY, PROGRAM, 11 * MS - 100 * US, 5 * MS); /* 100 us inside decode */
    overhead_rec(&b, LAZY, PROGRAM, 0, 0);                       /* CUPTI could not time it */
    overhead_rec(&b, LAZY, 2, 5 * MS, 50 * US);                  /* launched only: unknown */
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    const struct lp_run_overhead *o = &r.overhead;
    assert_int_equal(o->records, 3);
    assert_int_equal(o->untimed, 1);
    assert_false(o->launches_known);
    const struct lp_overhead_row *lazy = row_of(&r, LP_OVERHEAD_KIND_LAZY_LOADING);
    assert_int_equal(lazy->count, 2);
    assert_int_equal(lazy->total_ns, 5 * MS + 50 * US);
    assert_int_equal(lazy->program_ns, 5 * MS);
    assert_int_equal(lazy->measured_ns, 100 * US);
    const struct lp_stage_report *dec = stage(&r, "decode");
    assert_int_equal(dec->overhead_ns[LP_OVERHEAD_CLASS_LOADING], 100 * US);
    assert_true(fabs(dec->overhead_share[LP_OVERHEAD_CLASS_LOADING] - 0.01) < 1e-9);
    /* 1 % and 100 us: the finding's threshold, reached */
    assert_non_null(finding(&r, LP_FINDING_LOADING));
    char *md = write_to_string(lp_report_run_md, &r);
    assert_non_null(strstr(md, "(3 overhead records; 1 without a duration, left out)"));
    assert_non_null(strstr(md, "the trace has no launch records"));
    free(md);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* A run without stage ranges: its one stage holds only what lies inside its span, not the
 * start-up before the first GPU work; a finding needs 100 us at least */
static void test_no_stages(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    kernel(&b, "k1", PROGRAM, 10 * MS, 10 * MS + 10 * US, 10 * MS + 500 * US);
    kernel(&b, "k2", PROGRAM, 11 * MS, 11 * MS + 10 * US, 12 * MS);
    overhead_rec(&b, 3u << 16, PROGRAM, 1 * MS, 3 * MS); /* CUPTI's set-up, before any work */
    overhead_rec(&b, LAZY, PROGRAM, 11 * MS, 50 * US);   /* inside, 50 us */
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.n_stages, 1);
    const struct lp_stage_report *run = &r.stages[0];
    assert_int_equal(run->kind, LP_STAGE_KIND_RUN);
    assert_int_equal(run->overhead_ns[LP_OVERHEAD_CLASS_PROFILER], 0);
    assert_int_equal(run->overhead_ns[LP_OVERHEAD_CLASS_LOADING], 50 * US);
    assert_true(run->overhead_share[LP_OVERHEAD_CLASS_LOADING] > 0.01);
    assert_null(finding(&r, LP_FINDING_LOADING)); /* under 100 us */
    assert_null(finding(&r, LP_FINDING_PROFILER_WORK));
    assert_int_equal(row_of(&r, LP_OVERHEAD_KIND_RESOURCE)->program_ns, 3 * MS);
    assert_int_equal(row_of(&r, LP_OVERHEAD_KIND_RESOURCE)->measured_ns, 0);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* No overhead records (the kind off, or an older trace): no section, null in report.json */
static void test_none(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "decode", PROGRAM, 0, 1 * MS);
    kernel(&b, "gemm_b", PROGRAM, 10 * US, 20 * US, 900 * US);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.overhead.records, 0);
    assert_int_equal(r.overhead.n_rows, 0);
    char *md = write_to_string(lp_report_run_md, &r);
    assert_null(strstr(md, "Host time CUPTI recorded"));
    free(md);
    char *js = write_to_string(lp_report_run_json, &r);
    json_error_t e;
    json_t *root = json_loads(js, 0, &e);
    assert_true(json_is_null(json_object_get(root, "cupti_overhead")));
    assert_true(json_is_null(
        json_object_get(json_array_get(json_object_get(root, "stages"), 0), "cupti_overhead")));
    json_decref(root);
    free(js);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* The fixture's records of KIND summed here, straight from the trace */
static void raw_sum(const struct lp_trace *t, uint32_t kind, size_t *n, uint64_t *total,
                    uint64_t *max)
{
    *n = 0, *total = 0, *max = 0;
    for (size_t i = 0; i < t->n_overheads; i++) {
        const struct lp_overhead *v = &t->overheads[i];
        if (v->kind != kind)
            continue;
        if (v->end <= v->start) /* untimed: in no row */
            continue;
        uint64_t d = v->end - v->start;
        (*n)++;
        *total += d;
        *max = d > *max ? d : *max;
    }
}

static void check_raw(const struct lp_trace *t, const struct lp_run *r, uint32_t kind,
                      enum lp_overhead_kind k)
{
    size_t n;
    uint64_t total, max;
    raw_sum(t, kind, &n, &total, &max);
    const struct lp_overhead_row *w = row_of(r, k);
    assert_non_null(w);
    assert_int_equal(w->count, n);
    assert_int_equal(w->total_ns, total);
    assert_int_equal(w->max_ns, max);
}

/* Real H200 runs. graph-decode (CUDA-graph decode, kernels recorded node by node): launches
 * waited for a command buffer for 34.8 % of decode's time. hf-llama was recorded before
 * llmprof handed CUPTI zeroed buffers (ce5b71d): each buffer request cost the program's
 * thread 0.34-0.49 ms after start-up (2.9 ms at most); diff-eager-1, after it, 1-2 us. */
static void test_fixtures(void **state)
{
    (void)state;
    struct lp_trace *t = tb_fixture(LP_FIXTURES, "graph-decode");
    struct lp_run r;
    analyze(t, NULL, &r);
    check_raw(t, &r, QUEUE, LP_OVERHEAD_KIND_COMMAND_BUFFER_FULL);
    const struct lp_overhead_row *q = row_of(&r, LP_OVERHEAD_KIND_COMMAND_BUFFER_FULL);
    assert_int_equal(q->count, 143);
    assert_int_equal(q->total_ns, 166727644);
    assert_int_equal(q->program_ns, q->total_ns);
    assert_int_equal(q->measured_ns, 120051767);
    const struct lp_stage_report *dec = stage(&r, "decode");
    assert_true(fabs(dec->overhead_share[LP_OVERHEAD_CLASS_QUEUE] - 0.348) < 0.001);
    /* flushes run on llmprof's flusher thread, never the program's */
    assert_int_equal(row_of(&r, LP_OVERHEAD_KIND_BUFFER_FLUSH)->program_ns, 0);
    lp_run_free(&r);
    lp_trace_free(t);

    t = tb_fixture(LP_FIXTURES, "hf-llama");
    analyze(t, NULL, &r);
    check_raw(t, &r, REQUEST, LP_OVERHEAD_KIND_BUFFER_REQUEST);
    const struct lp_overhead_row *req = row_of(&r, LP_OVERHEAD_KIND_BUFFER_REQUEST);
    assert_int_equal(req->count, 23);
    assert_int_equal(req->max_ns, 2916649);
    assert_int_equal(req->program_ns, 7865199);
    check_raw(t, &r, LAZY, LP_OVERHEAD_KIND_LAZY_LOADING);
    assert_int_equal(row_of(&r, LP_OVERHEAD_KIND_LAZY_LOADING)->measured_ns, 0);
    assert_null(finding(&r, LP_FINDING_LOADING));
    lp_run_free(&r);
    lp_trace_free(t);

    t = tb_fixture(LP_FIXTURES, "diff-eager-1");
    analyze(t, NULL, &r);
    check_raw(t, &r, REQUEST, LP_OVERHEAD_KIND_BUFFER_REQUEST);
    req = row_of(&r, LP_OVERHEAD_KIND_BUFFER_REQUEST);
    assert_int_equal(req->count, 11);
    assert_true(req->max_ns <= 2 * US);
    lp_run_free(&r);
    lp_trace_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_synthetic),
        cmocka_unit_test(test_thresholds),
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_no_stages),
        cmocka_unit_test(test_none),
        cmocka_unit_test(test_fixtures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
