/* The run analysis and its writers on synthetic traces built for each edge case (launch
 * correlation against time overlap, ranges across threads, nested and overlapping stages,
 * unmatched pops, zero tokens, warmup, truncation, gaps, power, MFU) and on the real H200
 * fixtures. */
#include <jansson.h>
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "llmprof/analyze.h"
#include "llmprof/capture.h"
#include "llmprof/report.h"
#include "report/report_internal.h"
#include "tracebuild.h"

/* The analysis returns codes; the report layer says them: both are checked here. */
static const struct lp_note *note(const struct lp_run *r, enum lp_note_code c)
{
    for (size_t i = 0; i < r->n_notes; i++)
        if (r->notes[i].code == c)
            return &r->notes[i];
    return NULL;
}

/* the sentence of note N of R (a static buffer) */
static const char *note_text(const struct lp_run *r, const struct lp_note *n)
{
    static char buf[1024];
    lp_text_note(r, n, buf, sizeof buf);
    return buf;
}

static const char *hint_text(const struct lp_gemm_row *g)
{
    static char buf[320];
    lp_text_gemm_hint(g, buf, sizeof buf);
    return buf;
}

static const char *util_text(const struct lp_run *r)
{
    static char buf[1024];
    lp_text_util(r, buf, sizeof buf);
    return buf;
}

/* ---- building traces ---- */

/* a bf16 GEMM call M x N x K on THREAD from A to E (host times) */
static void gemm(struct tb *b, uint32_t thread, uint64_t a, uint64_t e, uint64_t m, uint64_t n,
                 uint64_t k, const char *tile)
{
    struct lp_record r = {.type = LP_REC_GEMM};
    r.u.gemm = (struct lp_gemm){.start = a, .end = e, .thread = thread,
                                .api = lp_trace_writer_intern(b->w, "cublasGemmEx"), .m = m,
                                .n = n, .k = k, .batch = 1, .transa = 1, .a_type = 14,
                                .b_type = 14, .c_type = 14, .d_type = 14, .compute_type = 68,
                                .algo = tile ? 66 : -1,
                                .tile = tile ? lp_trace_writer_intern(b->w, tile) : 0,
                                .epilogue = 1};
    add(b, &r);
}

static void device(struct tb *b)
{
    struct lp_record r = {.type = LP_REC_DEVICE};
    r.u.device = (struct lp_device){.id = 0, .name = lp_trace_writer_intern(b->w, "NVIDIA H200"),
                                    .cc_major = 9, .sm_count = 132};
    add(b, &r);
}

/* ---- stages ---- */

/* A kernel launched inside prefill that runs while decode is open belongs to prefill; a
 * range on another thread does not take the kernel either. */
static void test_launch_correlation_not_overlap(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "prefill tokens=100", 1, 1000, 2000);
    range(&b, "decode", 1, 3000, 4000);
    range(&b, "decode", 2, 1000, 2000); /* another thread, same time as prefill */
    kernel(&b, "gemm_a", 1, 1500, 3100, 3900);
    kernel(&b, "gemm_b", 1, 3500, 3950, 3990);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    const struct lp_stage_report *p = stage(&r, "prefill"), *d = stage(&r, "decode");
    assert_non_null(p);
    assert_non_null(d);
    assert_int_equal(p->kernels, 1);
    assert_int_equal(p->gpu_ns, 800);
    assert_int_equal(d->kernels, 1);
    assert_int_equal(d->occurrences, 2);
    assert_int_equal(r.attribution.by_launch, 2);
    assert_int_equal(r.attribution.outside, 0);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* A loss's count is of records, 0 when they were not counted (buffers returned twice, a
 * window missed): report.md gives each with its count or says it was not counted, and the
 * total of records lost says how many losses it leaves out. */
static void test_losses_counted_or_not(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "decode", 1, 1000, 4000);
    kernel(&b, "gemm_a", 1, 1500, 3100, 3900);
    struct lp_record l = {.type = LP_REC_LOSS};
    l.u.loss = (struct lp_loss){.source = LP_LOSS_SOURCE_CUPTI_DROPPED, .count = 5,
                                .what = lp_trace_writer_intern(b.w, "CUPTI dropped records")};
    add(&b, &l);
    l.u.loss = (struct lp_loss){.source = LP_LOSS_SOURCE_COLLECTOR, .count = 0,
                                .what = lp_trace_writer_intern(b.w, "buffers returned twice")};
    add(&b, &l);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.lost_records, 5);
    assert_int_equal(r.losses_uncounted, 1);
    char *md = write_to_string(lp_report_run_md, &r);
    assert_non_null(strstr(md, "- records lost: 5; 1 loss note without a count\n"));
    assert_non_null(strstr(md, "- loss: CUPTI dropped records (5 records)\n"));
    assert_non_null(strstr(md, "- loss: buffers returned twice (no count)\n"));
    free(md);
    char *js = write_to_string(lp_report_run_json, &r);
    assert_non_null(strstr(js, "\"losses_uncounted\": 1"));
    free(js);
    char *sum = write_to_string(lp_report_summary_md, &r);
    assert_non_null(strstr(sum, "Some records were lost: figures are lower bounds."));
    free(sum);
    r.lost_records = 0; /* the uncounted loss alone: not "no records were lost" */
    sum = write_to_string(lp_report_summary_md, &r);
    assert_non_null(strstr(sum, "No records were counted lost; report.md lists loss notes "
                                "without a count."));
    free(sum);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* vision holding sam and clip: one stage with two notes, GPU time counted once */
static void test_nested_substages(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "vision", 1, 1000, 10000);
    range(&b, "sam", 1, 1100, 5000);
    range(&b, "clip", 1, 5100, 9000);
    range(&b, "prefill tokens=10", 1, 11000, 12000);
    kernel(&b, "sam_k", 1, 1200, 1300, 2300);   /* 1000 ns in sam */
    kernel(&b, "clip_k", 1, 5200, 5300, 5800);  /* 500 ns in clip */
    kernel(&b, "proj_k", 1, 9500, 9600, 9700);  /* 100 ns in vision only */
    kernel(&b, "attn_flash_fwd", 1, 11100, 11200, 11300);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    const struct lp_stage_report *v = stage(&r, "vision");
    assert_non_null(v);
    assert_null(stage(&r, "sam"));
    assert_null(stage(&r, "clip"));
    assert_int_equal(v->gpu_ns, 1600);
    assert_int_equal(v->n_sub, 2);
    for (size_t i = 0; i < v->n_sub; i++) {
        if (!strcmp(v->sub[i].name, "sam")) {
            assert_int_equal(v->sub[i].gpu_ns, 1000);
            assert_int_equal(v->sub[i].wall_ns, 3900);
        } else {
            assert_string_equal(v->sub[i].name, "clip");
            assert_int_equal(v->sub[i].gpu_ns, 500);
        }
    }
    /* TTFT runs from the request's start (its vision) to the end of its prefill */
    assert_true(fabs(r.llm.ttft_s - (12000 - 1000) / 1e9) < 1e-12);
    assert_int_equal(r.cats[lp_run_kernel_group(&r, 3)], LP_KCAT_ATTENTION);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* an HF model's first forward in a prefill range, its vision tower and projector hooked by
 * attribute name: both cut out of the prefill as stages of their own (the encoder inside the
 * tower a sub-stage), the prefill's time starting after them, the TTFT from the prefill
 * range's start */
static void test_vision_in_prefill(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "prefill", 1, 1000, 20000);
    range(&b, "vision_tower", 1, 2000, 9000);
    range(&b, "sam_encoder", 1, 2100, 5000);
    range(&b, "vision_encoder", 1, 5100, 8900);
    range(&b, "multi_modal_projector", 1, 9000, 9500);
    kernel(&b, "embed_k", 1, 1100, 1200, 1300);  /* the prefill's, before the vision */
    kernel(&b, "sam_k", 1, 2200, 2300, 4300);    /* 2000 ns in sam */
    kernel(&b, "enc_k", 1, 5200, 5300, 8300);    /* 3000 ns in the encoder */
    kernel(&b, "proj_k", 1, 9100, 9200, 9400);   /* 200 ns in the projector */
    kernel(&b, "dec_k", 1, 9600, 10000, 19000);  /* 9000 ns in the decoder's prefill */
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    const struct lp_stage_report *v = stage(&r, "vision"), *pj = stage(&r, "projector"),
                                 *p = stage(&r, "prefill");
    assert_non_null(v);
    assert_non_null(pj);
    assert_non_null(p);
    assert_null(stage(&r, "sam"));
    assert_null(stage(&r, "encoder"));
    assert_int_equal(v->kind, LP_STAGE_KIND_VISION);
    assert_int_equal(pj->kind, LP_STAGE_KIND_VISION);
    assert_int_equal(v->gpu_ns, 5000);
    assert_int_equal(pj->gpu_ns, 200);
    assert_int_equal(p->gpu_ns, 9100);
    assert_int_equal(p->n_sub, 0);
    assert_int_equal(v->n_sub, 2);
    assert_string_equal(v->sub[0].name, "sam"); /* in the order they first ran */
    assert_string_equal(v->sub[1].name, "encoder");
    /* the prefill's time starts after the projector: 9500 to 20000 */
    assert_true(fabs(p->wall.mean - 10500) < 1);
    assert_true(fabs(r.llm.ttft_s - (20000 - 1000) / 1e9) < 1e-12);
    assert_true(fabs(v->ttft_share - 7000.0 / 19000) < 1e-9);
    assert_true(fabs(v->sub[0].ttft_share - 2900.0 / 19000) < 1e-9);
    assert_true(fabs(r.llm.ttft_outside_share - (1 - (7000.0 + 500 + 10500) / 19000)) < 1e-9);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* unmatched pops, an unclosed range, overlapping stages on two threads, zero tokens */
static void test_messy_ranges(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    struct lp_record r = {.type = LP_REC_MARKER};
    r.u.marker = (struct lp_marker){.timestamp = 500, .id = 999, .flags = LP_MARKER_FLAG_END,
                                    .thread = 1};
    add(&b, &r); /* a pop without its push */
    range(&b, "prefill tokens=0", 1, 1000, 5000);
    range(&b, "decode", 2, 2000, 3000); /* overlaps prefill, another thread */
    r.u.marker = (struct lp_marker){.timestamp = 6000, .id = 500, .flags = LP_MARKER_FLAG_START,
                                    .name = lp_trace_writer_intern(b.w, "decode"), .thread = 1};
    add(&b, &r); /* never closed */
    kernel(&b, "k1", 1, 1500, 1600, 1700);
    kernel(&b, "k2", 2, 2500, 2600, 2700);
    kernel(&b, "k3", 1, 6500, 6600, 7000);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run run;
    analyze(t, NULL, &run);
    assert_int_equal(run.ranges.unmatched_ends, 1);
    assert_int_equal(run.ranges.unclosed, 1);
    const struct lp_stage_report *p = stage(&run, "prefill"), *d = stage(&run, "decode");
    assert_int_equal(p->kernels, 1);
    assert_int_equal(d->kernels, 2);
    assert_int_equal(d->occurrences, 2);
    /* tokens=0 is no count: nothing divided by it */
    assert_int_equal(p->tokens, 0);
    assert_true(p->tokens_per_s == 0);
    assert_int_equal(p->tokens_source, LP_TOKENS_NONE);
    /* decode counted: one step per range (nothing repeats in them) at batch 1 */
    assert_int_equal(d->tokens, 2);
    assert_int_equal(d->tokens_source, LP_TOKENS_STEPS);
    assert_int_equal(d->steps_source, LP_STEPS_RANGES);
    lp_run_free(&run);
    lp_trace_free(t);
}

static void test_no_ranges_is_one_stage(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    kernel(&b, "k", 1, 100, 200, 300);
    kernel(&b, "k", 1, 400, 500, 900);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.n_stages, 1);
    assert_int_equal(r.stages[0].kind, LP_STAGE_KIND_RUN);
    assert_int_equal(r.stages[0].kernels, 2);
    assert_int_equal(r.n_notes, 1);
    assert_int_equal(r.notes[0].code, LP_NOTE_ONE_STAGE);
    assert_int_equal(r.notes[0].count, 0);
    assert_non_null(strstr(note_text(&r, &r.notes[0]), "no NVTX ranges"));
    /* median of 100 and 400 is their mean; min and max exact */
    assert_int_equal(r.kernels.n, 1);
    assert_int_equal(r.kernels.v[0].median_ns, 250);
    assert_int_equal(r.kernels.v[0].min_ns, 100);
    assert_int_equal(r.kernels.v[0].max_ns, 400);
    assert_int_equal(r.kernels.v[0].calls, 2);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* warmup apart; flags beat range words; stage statistics and the variance flag */
static void test_warmup_tokens_and_stats(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "prefill tokens=64 run=warmup0", 1, 0, 100000);
    range(&b, "prefill tokens=64 batch=2", 1, 200000, 210000);
    range(&b, "prefill tokens=64 batch=2", 1, 300000, 330000);
    for (int i = 0; i < 4; i++)
        range(&b, "decode step tokens=2", 1, 400000 + (uint64_t)i * 10000,
              405000 + (uint64_t)i * 10000);
    kernel(&b, "k", 1, 1, 10, 20);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    const struct lp_stage_report *p = stage(&r, "prefill"), *w = stage(&r, "warmup"),
                                 *d = stage(&r, "decode");
    assert_non_null(w);
    assert_int_equal(w->occurrences, 1);
    assert_int_equal(p->occurrences, 2);
    assert_true(p->wall.mean == 20000);
    assert_true(fabs(p->wall.std - sqrt(2) * 10000) < 1e-6);
    assert_true(p->variable);
    assert_int_equal(p->tokens, 128);
    assert_int_equal(p->tokens_source, LP_TOKENS_RANGE_NAME);
    assert_int_equal(r.llm.batch, 2);
    assert_int_equal(d->tokens, 8); /* 4 steps x batch 2 */
    /* TPOT = decode wall / steps */
    assert_true(fabs(r.llm.tpot_s - 5000e-9) < 1e-15);
    lp_run_free(&r);
    struct lp_run_options o = {.prefill_tokens = 100, .decode_tokens = 3, .batch = 1,
                               .keep_warmup = 1};
    analyze(t, &o, &r);
    p = stage(&r, "prefill");
    assert_null(stage(&r, "warmup"));
    assert_int_equal(p->occurrences, 3);
    assert_int_equal(p->tokens, 300);
    assert_int_equal(p->tokens_source, LP_TOKENS_FLAG);
    assert_int_equal(stage(&r, "decode")->tokens, 12);
    lp_run_free(&r);
    lp_trace_free(t);
}

static void test_bad_stage_rule(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    kernel(&b, "k", 1, 1, 10, 20);
    struct lp_trace *t = tb_read(&b, 1);
    const char *bad[] = {"prefill=("};
    struct lp_run_options o = {.stage_rules = bad, .n_stage_rules = 1};
    struct lp_run r;
    char err[256];
    assert_int_equal(lp_run_analyze(t, &o, &r, err, sizeof err), LP_ERR_ARG);
    assert_non_null(strstr(err, "prefill=("));
    const char *noeq[] = {"prefill"};
    o.stage_rules = noeq;
    assert_int_equal(lp_run_analyze(t, &o, &r, err, sizeof err), LP_ERR_ARG);
    assert_non_null(strstr(err, "NAME=REGEX"));
    /* a stage is 16 bits in the analysis' work array: past 32,759 rules, refused */
    enum { MANY = 32760 };
    const char **many = malloc(MANY * sizeof *many);
    assert_non_null(many);
    for (size_t i = 0; i < MANY; i++)
        many[i] = "s=x";
    o.stage_rules = many;
    o.n_stage_rules = MANY;
    assert_int_equal(lp_run_analyze(t, &o, &r, err, sizeof err), LP_ERR_ARG);
    assert_non_null(strstr(err, "32760 stage rules: at most 32759"));
    o.n_stage_rules = MANY - 1; /* at the bound: analysed */
    assert_int_equal(lp_run_analyze(t, &o, &r, err, sizeof err), LP_OK);
    lp_run_free(&r);
    free(many);
    o.n_stage_rules = 1;
    const char *custom[] = {"decode=^step"};
    lp_trace_free(t);
    tb_open(&b);
    range(&b, "step 1", 1, 0, 100);
    kernel(&b, "k", 1, 10, 20, 30);
    t = tb_read(&b, 1);
    o.stage_rules = custom;
    analyze(t, &o, &r);
    assert_non_null(stage(&r, "decode"));
    assert_int_equal(stage(&r, "decode")->kind, LP_STAGE_KIND_DECODE);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* ---- operators ---- */

/* Many operators (found by name through a hash; the table grows past its first 16): 500
 * names, each range named apart (its seq and op_id), each operator met three times in turn */
static void test_operators_many(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    enum { OPS = 500 };
    range(&b, "decode", 1, 0, 3 * OPS * 100 + 100);
    for (int rep = 0, n = 0; rep < 3; rep++)
        for (int i = 0; i < OPS; i++, n++) {
            char name[64];
            snprintf(name, sizeof name, "aten::op%d, seq = %d, op_id = %d", i, n, n);
            range(&b, name, 1, 100 + 100 * (uint64_t)n, 150 + 100 * (uint64_t)n + (uint64_t)i);
        }
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.n_ops, OPS);
    uint8_t seen[OPS] = {0};
    for (size_t k = 0; k < r.n_ops; k++) {
        int i;
        assert_int_equal(sscanf(r.ops[k].name, "aten::op%d", &i), 1);
        assert_true(i >= 0 && i < OPS && !seen[i]++);
        assert_int_equal(r.ops[k].calls, 3);
        assert_int_equal(r.ops[k].cpu_ns, 3 * (50 + (uint64_t)i));
    }
    lp_run_free(&r);
    lp_trace_free(t);
}

static void test_operators_inclusive_and_self(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "decode", 1, 0, 10000);
    range(&b, "aten::linear, seq = 1, op_id = 1", 1, 100, 5000);
    range(&b, "aten::addmm, seq = 1, op_id = 2", 1, 200, 4000);
    range(&b, "aten::linear, seq = 2, op_id = 3", 1, 6000, 7000);
    kernel(&b, "nvjet_sm90_tst_64x8", 1, 300, 400, 1400);
    kernel(&b, "vectorized_elementwise_kernel", 1, 4500, 4600, 4700);
    kernel(&b, "nvjet_sm90_tst_64x8", 1, 6100, 6200, 6400);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.n_ops, 2);
    const struct lp_op_row *lin = !strcmp(r.ops[0].name, "aten::linear") ? &r.ops[0] : &r.ops[1];
    const struct lp_op_row *mm = lin == &r.ops[0] ? &r.ops[1] : &r.ops[0];
    assert_string_equal(mm->name, "aten::addmm");
    assert_int_equal(lin->calls, 2);
    assert_int_equal(lin->cpu_ns, 4900 + 1000);
    assert_int_equal(lin->gpu_ns, 1000 + 100 + 200);
    assert_int_equal(lin->self_gpu_ns, 100 + 200);
    assert_int_equal(mm->gpu_ns, 1000);
    assert_int_equal(mm->self_gpu_ns, 1000);
    assert_string_equal(r.names[lin->top_group[0]], "nvjet_sm90_tst_64x8");
    assert_int_equal(lin->top_ns[0], 1200);
    assert_int_equal(r.cats[lin->top_group[0]], LP_KCAT_GEMM);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* the row of R by operator NAME and shapes text SHAPES, or NULL */
static const struct lp_op_shape_row *shape_row(const struct lp_run *r, const char *name,
                                               const char *shapes)
{
    for (size_t i = 0; i < r->n_op_shapes; i++)
        if (!strcmp(r->ops[r->op_shapes[i].op].name, name) &&
            !strcmp(r->op_shapes[i].shapes, shapes))
            return &r->op_shapes[i];
    return NULL;
}

/* emit_nvtx(record_shapes=True) names: a row per operator and shapes, nested operators
 * inclusive with self time for the innermost, a range without sizes in its operator only */
static void test_operator_shapes(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "decode", 1, 0, 100000);
    range(&b, "aten::linear, seq = 1, op_id = 1, sizes = [[4, 1280], [1280, 1280], []]", 1, 100,
          5000);
    range(&b, "aten::mm, seq = 1, op_id = 2, sizes = [[4, 1280], [1280, 1280]], "
              "input_op_ids = [(1, 0)]", 1, 200, 4000);
    kernel(&b, "nvjet_sm90_tst_64x8", 1, 300, 400, 1400);
    kernel(&b, "vectorized_elementwise_kernel", 1, 4500, 4600, 4700);
    range(&b, "aten::mm, seq = 3, op_id = 3, sizes = [[8,   64], [ 64, 64 ]]", 1, 6000, 7000);
    /* in one of the same shapes: its kernel counts once for the row */
    range(&b, "aten::mm, seq = 6, op_id = 6, sizes = [[8, 64], [64, 64]]", 1, 6050, 6900);
    kernel(&b, "nvjet_sm90_tst_64x8", 1, 6100, 6200, 6400);
    /* the first mm's shapes, spaced otherwise: the same row */
    range(&b, "aten::mm, seq = 4, op_id = 4, sizes = [[4,1280],[1280,1280]]", 1, 8000, 9000);
    kernel(&b, "nvjet_sm90_tst_64x8", 1, 8100, 8200, 8500);
    range(&b, "aten::mm, seq = 5, op_id = 5", 1, 10000, 11000);
    kernel(&b, "nvjet_sm90_tst_64x8", 1, 10100, 10200, 10250);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.n_ops, 2);
    assert_string_equal(r.ops[0].name, "aten::mm");
    assert_int_equal(r.ops[0].calls, 5);
    assert_int_equal(r.ops[0].gpu_ns, 1000 + 200 + 300 + 50);
    assert_int_equal(r.n_op_shapes, 3);
    assert_int_equal(r.op_shapes_unread, 0);
    /* by GPU time */
    const struct lp_op_shape_row *mm4 = &r.op_shapes[0], *lin = &r.op_shapes[1],
                                 *mm8 = &r.op_shapes[2];
    assert_ptr_equal(shape_row(&r, "aten::mm", "[[4, 1280], [1280, 1280]]"), mm4);
    assert_ptr_equal(shape_row(&r, "aten::linear", "[[4, 1280], [1280, 1280], []]"), lin);
    assert_ptr_equal(shape_row(&r, "aten::mm", "[[8, 64], [64, 64]]"), mm8);
    assert_int_equal(mm4->calls, 2);
    assert_int_equal(mm4->cpu_ns, 3800 + 1000);
    assert_int_equal(mm4->gpu_ns, 1000 + 300);
    assert_int_equal(mm4->self_gpu_ns, 1000 + 300);
    assert_int_equal(mm4->kernels, 2);
    assert_int_equal(lin->calls, 1);
    assert_int_equal(lin->cpu_ns, 4900);
    assert_int_equal(lin->gpu_ns, 1000 + 100);
    assert_int_equal(lin->self_gpu_ns, 100);
    assert_int_equal(lin->kernels, 2);
    assert_int_equal(mm8->calls, 2);
    assert_int_equal(mm8->cpu_ns, 1000 + 850);
    assert_int_equal(mm8->gpu_ns, 200);
    assert_int_equal(mm8->self_gpu_ns, 200);
    assert_int_equal(mm8->kernels, 1);

    char *md = write_to_string(lp_report_run_md, &r);
    assert_non_null(strstr(md, "### By input shapes"));
    assert_non_null(strstr(md, "| `aten::mm` | `[[4, 1280], [1280, 1280]]` | 2 | "));
    assert_non_null(strstr(md, "Memory per operator is not in the trace"));
    assert_null(strstr(md, "No operator range gave its inputs' sizes"));
    assert_null(strstr(md, "more in operator_shapes.csv"));
    free(md);
    char *csv = write_to_string(lp_report_operator_shapes_csv, &r);
    assert_string_equal(csv, "operator,shapes,calls,cpu_ns,gpu_ns,self_gpu_ns,kernels\n"
                             "aten::mm,\"[[4, 1280], [1280, 1280]]\",2,4800,1300,1300,2\n"
                             "aten::linear,\"[[4, 1280], [1280, 1280], []]\",1,4900,1100,100,2\n"
                             "aten::mm,\"[[8, 64], [64, 64]]\",2,1850,200,200,1\n");
    free(csv);
    char *js = write_to_string(lp_report_run_json, &r);
    json_error_t je;
    json_t *root = json_loads(js, 0, &je);
    assert_non_null(root);
    json_t *rows = json_object_get(root, "operator_shapes");
    assert_int_equal(json_array_size(rows), 3);
    json_t *row = json_array_get(rows, 1);
    assert_string_equal(json_string_value(json_object_get(row, "name")), "aten::linear");
    assert_string_equal(json_string_value(json_object_get(row, "shapes")),
                        "[[4, 1280], [1280, 1280], []]");
    assert_int_equal(json_integer_value(json_object_get(row, "calls")), 1);
    assert_int_equal(json_integer_value(json_object_get(row, "cpu_ns")), 4900);
    assert_int_equal(json_integer_value(json_object_get(row, "gpu_ns")), 1100);
    assert_int_equal(json_integer_value(json_object_get(row, "self_gpu_ns")), 100);
    assert_int_equal(json_integer_value(json_object_get(row, "kernels")), 2);
    json_decref(root);
    free(js);
    const struct lp_report_csv *c = NULL;
    for (size_t i = 0; (c = lp_report_csv_at(i)) != NULL; i++)
        if (!strcmp(c->name, "operator_shapes.csv"))
            break;
    assert_non_null(c);
    assert_ptr_equal(c->write, lp_report_operator_shapes_csv);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* operator ranges without sizes: no rows, and report.md says how to get them */
static void test_operator_shapes_none(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "decode", 1, 0, 10000);
    range(&b, "aten::mm, seq = 1, op_id = 1", 1, 100, 5000);
    kernel(&b, "nvjet_sm90_tst_64x8", 1, 300, 400, 1400);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.n_ops, 1);
    assert_int_equal(r.n_op_shapes, 0);
    assert_int_equal(r.op_shapes_unread, 0);
    char *md = write_to_string(lp_report_run_md, &r);
    assert_non_null(strstr(md, "No operator range gave its inputs' sizes: PyTorch adds them "
                               "under `torch.autograd.profiler.emit_nvtx(record_shapes=True)`."));
    assert_null(strstr(md, "| operator | input sizes |"));
    free(md);
    char *js = write_to_string(lp_report_run_json, &r);
    json_error_t je;
    json_t *root = json_loads(js, 0, &je);
    assert_non_null(root);
    assert_true(json_is_array(json_object_get(root, "operator_shapes")));
    assert_int_equal(json_array_size(json_object_get(root, "operator_shapes")), 0);
    json_decref(root);
    free(js);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* sizes given but none read: said, without claiming that no range gave any */
static void test_operator_shapes_unread_only(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "decode", 1, 0, 10000);
    range(&b, "aten::mm, seq = 1, op_id = 1, sizes = [[4, 8], [8", 1, 100, 5000);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.n_op_shapes, 0);
    assert_int_equal(r.op_shapes_unread, 1);
    assert_int_equal(r.ops[0].calls, 1);
    char *md = write_to_string(lp_report_run_md, &r);
    assert_non_null(strstr(md, "### By input shapes\n\n1 operator range gave sizes that could "
                               "not be read"));
    assert_null(strstr(md, "No operator range gave its inputs' sizes"));
    free(md);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* "[[1024, 4096], [1024, 4096], ...]": N inner lists, the last one's first size LAST */
static char *long_sizes(const char *op, int n, int last)
{
    size_t cap = strlen(op) + 32 + 16 * (size_t)n;
    char *s = malloc(cap);
    assert_non_null(s);
    size_t o = (size_t)snprintf(s, cap, "%s, seq = 1, sizes = [", op);
    for (int i = 0; i < n; i++)
        o += (size_t)snprintf(s + o, cap - o, "%s[%d, 4096]", i ? ", " : "",
                              i == n - 1 ? last : 1024);
    snprintf(s + o, cap - o, "], input_op_ids = [(1, 0)]");
    return s;
}

/* Names that give sizes no list reads: counted in the operator's row only, never read past;
 * a list past LP_OP_SHAPES_MAX cut after a whole input */
static void test_operator_shapes_malformed(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "aten::add, sizes = [[1, 2]",                  /* never closed */
        "aten::add, sizes = [[1, 2]]]",                /* closed twice */
        "aten::add, sizes = [[1, 2]] trailing",        /* no comma after it */
        "aten::add, sizes = [[1, x]]",                 /* not a number */
        "aten::add, sizes = [[1 2]]",                  /* two numbers, no comma */
        "aten::add, sizes = [[1, 2],]",                /* a comma before the end */
        "aten::add, sizes = [[-]]",                    /* a sign alone */
        "aten::add, sizes = [[[[[[[[[1]]]]]]]]]",      /* nine deep */
        "aten::add, sizes = 3",                        /* no list */
        "aten::add, sizes = [[3, \xff\xfe]]",          /* not UTF-8 inside */
        "aten::add, sizes = ",                         /* nothing */
    };
    size_t n_bad = sizeof bad / sizeof *bad;
    struct tb b;
    tb_open(&b);
    range(&b, "decode", 1, 0, 1000000);
    uint64_t at = 1000;
    for (size_t i = 0; i < n_bad; i++, at += 1000)
        range(&b, bad[i], 1, at, at + 500);
    range(&b, "aten::add, sizes = [[-1], [], [[2]]]", 1, at, at + 500);
    at += 1000;
    /* not UTF-8 in the operator's name: the reader's '?' in its name, the sizes read */
    range(&b, "aten::\xc3\x28op, sizes = [[5]]", 1, at, at + 500);
    at += 1000;
    /* about 14 KB of sizes, twice, differing past the cut: one row */
    char *long1 = long_sizes("aten::cat", 1000, 1024), *long2 = long_sizes("aten::cat", 1000, 7);
    range(&b, long1, 1, at, at + 500);
    range(&b, long2, 1, at + 1000, at + 1500);
    at += 2000;
    /* a control sequence in the operator's name: shown escaped, never obeyed */
    range(&b, "aten::\x1b[2Jevil, sizes = [[1]]", 1, at, at + 500);
    at += 1000;
    /* one size of 300 digits: no whole input fits */
    char big[400];
    memcpy(big, "aten::big, sizes = [[", 21);
    memset(big + 21, '7', 300);
    memcpy(big + 321, "]]", 3);
    range(&b, big, 1, at, at + 500);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.op_shapes_unread, n_bad);
    const struct lp_op_row *add = NULL;
    for (size_t i = 0; i < r.n_ops; i++)
        if (!strcmp(r.ops[i].name, "aten::add"))
            add = &r.ops[i];
    assert_non_null(add);
    assert_int_equal(add->calls, n_bad + 1);
    assert_int_equal(r.n_op_shapes, 5);
    const struct lp_op_shape_row *x = shape_row(&r, "aten::add", "[[-1], [], [[2]]]");
    assert_non_null(x);
    assert_int_equal(x->calls, 1);
    /* the '?' the reader put for the byte that is not UTF-8 */
    const struct lp_op_shape_row *u = NULL;
    for (size_t i = 0; i < r.n_op_shapes; i++)
        if (!strcmp(r.op_shapes[i].shapes, "[[5]]"))
            u = &r.op_shapes[i];
    assert_non_null(u);
    assert_non_null(strstr(r.ops[u->op].name, "aten::"));
    assert_null(strchr(r.ops[u->op].name, '\xc3'));
    /* 16 inputs of 12 bytes fit in 240 with the mark, 17 do not */
    char want[LP_OP_SHAPES_MAX + 1];
    size_t o = (size_t)snprintf(want, sizeof want, "[");
    for (int i = 0; i < 16; i++)
        o += (size_t)snprintf(want + o, sizeof want - o, "%s[1024, 4096]", i ? ", " : "");
    snprintf(want + o, sizeof want - o, ", …]");
    const struct lp_op_shape_row *cat = shape_row(&r, "aten::cat", want);
    assert_non_null(cat);
    assert_int_equal(strlen(cat->shapes), 1 + 16 * 12 + 15 * 2 + 6);
    assert_true(strlen(cat->shapes) <= LP_OP_SHAPES_MAX);
    assert_int_equal(cat->calls, 2);
    assert_non_null(shape_row(&r, "aten::big", "[…]"));
    /* every writer takes it */
    char *md = write_to_string(lp_report_run_md, &r);
    assert_non_null(strstr(md, "11 operator ranges gave sizes that could not be read"));
    assert_non_null(strstr(md, "| `aten::\\x1b[2Jevil` | `[[1]]` | 1 |"));
    assert_null(strchr(md, '\x1b'));
    free(md);
    char *csv = write_to_string(lp_report_operator_shapes_csv, &r);
    assert_non_null(strstr(csv, "aten::big,[…],1,500,0,0,0\n"));
    assert_non_null(strstr(csv, "aten::\\x1b[2Jevil,[[1]],1,500,0,0,0\n"));
    assert_null(strchr(csv, '\x1b'));
    free(csv);
    char *js = write_to_string(lp_report_run_json, &r);
    json_error_t je;
    json_t *root = json_loads(js, 0, &je);
    assert_non_null(root);
    assert_int_equal(json_array_size(json_object_get(root, "operator_shapes")), 5);
    json_decref(root);
    free(js);
    free(long1);
    free(long2);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* ---- timeline ---- */

static void test_gap_causes(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "decode", 1, 0, 100000);
    kernel(&b, "a", 1, 500, 1000, 2000);
    kernel(&b, "b", 1, 5000, 6000, 7000);   /* launched after the GPU idled: host */
    kernel(&b, "c", 1, 6500, 19000, 20000); /* queued before: started late */
    struct lp_record s = {.type = LP_REC_API};
    s.u.api = (struct lp_api){.start = 2500, .end = 4000, .correlation = 999, .thread = 1,
                              .name = lp_trace_writer_intern(b.w, "cudaStreamSynchronize")};
    add(&b, &s);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run_options o = {.gap_ns = 1000};
    struct lp_run r;
    analyze(t, &o, &r);
    assert_int_equal(r.timeline.n_gaps, 2);
    assert_int_equal(r.timeline.gap_ns_by_cause[LP_GAP_HOST], 4000);
    assert_int_equal(r.timeline.gap_ns_by_cause[LP_GAP_DEVICE], 12000);
    assert_int_equal(r.timeline.top_gaps[0].dur, 12000);
    assert_int_equal(r.timeline.top_gaps[1].cause, LP_GAP_HOST);
    /* the launching thread spent 1.5 us of the host gap in the sync and 1 us launching */
    assert_int_equal(r.timeline.top_gaps[1].host_api_ns, 1500 + 1000);
    assert_string_equal(r.timeline.top_gaps[1].api, "cudaStreamSynchronize");
    assert_int_equal(r.timeline.busy_ns, 3000);
    assert_int_equal(stage(&r, "decode")->host_wait_ns, 4000);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* ---- power ---- */

static void test_power_energy_per_token(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "decode tokens=4", 1, 250000000, 750000000);
    kernel(&b, "k", 1, 250000001, 260000000, 700000000);
    for (int i = 0; i <= 10; i++) {
        struct lp_record r = {.type = LP_REC_NVML};
        r.u.nvml = (struct lp_nvml_sample){
            .timestamp = (uint64_t)i * 100000000, .device = 0,
            .valid = LP_NVML_FIELD_POWER | LP_NVML_FIELD_ENERGY | LP_NVML_FIELD_CLOCK_EVENTS,
            .power_mw = 200000, .energy_mj = 1000000 + (uint64_t)i * 20000,
            .clock_events = i < 5 ? 0x4 : 0};
        add(&b, &r);
    }
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    const struct lp_stage_report *d = stage(&r, "decode");
    /* 20 J per 100 ms: 0.5 s holds 100 J, 25 J per token */
    assert_true(fabs(d->energy_j - 100.0) < 1e-6);
    assert_true(fabs(d->power_mean_w - 200.0) < 1e-6);
    assert_true(fabs(d->j_per_token - 25.0) < 1e-6);
    assert_true(d->energy_from_counter);
    assert_true(fabs(r.power.throttle_share[2] - 5.0 / 11) < 1e-9);
    assert_int_equal(r.power.update_ns, 100000000);
    int throttled = 0;
    const struct lp_finding *thr = finding(&r, LP_FINDING_THROTTLED);
    if (thr) {
        struct lp_finding_text text;
        lp_text_finding(&r, thr, &text);
        throttled = strstr(text.title, "Clocks") != NULL;
    }
    assert_true(throttled);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* ---- truncation ---- */

static void test_truncated_trace(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "prefill", 1, 0, 1000);
    kernel(&b, "k", 1, 10, 20, 30);
    assert_int_equal(lp_trace_writer_flush(b.w), LP_OK);
    /* the process dies here: no END chunk */
    kernel(&b, "k", 1, 40, 50, 60);
    assert_int_equal(lp_trace_writer_flush(b.w), LP_OK);
    FILE *f = fopen(b.path, "rb");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    assert_int_equal(truncate(b.path, size - 5), 0);
    struct lp_trace *t = tb_read(&b, 0);
    assert_false(t->complete);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(stage(&r, "prefill")->kernels, 1);
    assert_true(r.n_findings >= 1);
    assert_int_equal(r.findings[0].code, LP_FINDING_TRACE_NOT_WHOLE);
    lp_run_free(&r);
    lp_trace_free(t);
    lp_trace_writer_close(b.w);
    unlink(b.path);
}

/* a kernel lasting 2^61 ns (valid CRCs) is left out of the totals and said, never 100 % */
static void test_implausible_kernel(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "prefill", 1, 0, 100000);
    for (uint64_t i = 0; i < 8; i++)
        kernel(&b, "k", 1, 10 + i * 1000, 100 + i * 1000, 600 + i * 1000);
    kernel(&b, "forever", 1, 9000, 9100, 9100 + (UINT64_C(1) << 61));
    struct lp_trace *t = tb_read(&b, 1);
    assert_int_equal(t->implausible, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.all_kernels.gpu_ns, 8 * 500);
    int said = 0;
    const struct lp_finding *nw = finding(&r, LP_FINDING_TRACE_NOT_WHOLE);
    if (nw) {
        struct lp_finding_text text;
        lp_text_finding(&r, nw, &text);
        said = strstr(text.title, "not whole") &&
               strstr(text.evidence, "1 implausible records left out");
    }
    assert_true(said);
    lp_run_free(&r);
    lp_trace_free(t);
    unlink(b.path);
}

/* ---- utilisation ---- */

static void test_mfu_from_model(void **state)
{
    (void)state;
    struct lp_model m;
    char err[256];
    assert_int_equal(lp_model_load(LP_CONFIGS "/llama-2-7b.json", &m, err, sizeof err), 0);
    struct lp_gpu_table gpus;
    assert_int_equal(lp_gpu_table_load(&gpus, NULL, err, sizeof err), 0);
    struct tb b;
    tb_open(&b);
    device(&b);
    range(&b, "prefill tokens=512", 1, 0, 1000000000);
    for (int i = 0; i < 10; i++)
        range(&b, "decode", 1, 2000000000 + (uint64_t)i * 10000000,
              2010000000 + (uint64_t)i * 10000000);
    kernel(&b, "k", 1, 10, 20, 30);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_workload w;
    lp_workload_defaults(&w);
    struct lp_run_options o = {.model = &m, .gpus = &gpus, .workload = &w};
    struct lp_run r;
    analyze(t, &o, &r);
    assert_true(r.util.has);
    assert_string_equal(r.util.gpu.name, "H200");
    /* the same workload through the model: prompt 512, 11 tokens (prefill + 10 steps) */
    struct lp_workload w2 = w;
    w2.prompt = 512;
    w2.generated = 11;
    struct lp_model_result res;
    assert_int_equal(lp_model_analyze(&m, &w2, &res, err, sizeof err), 0);
    const struct lp_stage_report *p = stage(&r, "prefill"), *d = stage(&r, "decode");
    double pf = lp_cost_flops(&res.total[LP_MODEL_STAGE_PREFILL]);
    assert_true(fabs(p->mfu - pf / 1e12 / r.util.gpu.tflops[LP_DTYPE_BF16]) < 1e-9);
    double db = lp_cost_bytes(&res.total[LP_MODEL_STAGE_DECODE_STEP]);
    assert_true(fabs(d->mbu - db / 0.01 / 1e9 / r.util.gpu.mem_bw_gbs) < 1e-9);
    assert_true(fabs(r.util.request_s - (1.0 + 10 * 0.01)) < 1e-9);
    lp_run_free(&r);
    /* no prefill tokens: said, not guessed */
    lp_trace_free(t);
    tb_open(&b);
    device(&b);
    range(&b, "decode", 1, 0, 100);
    kernel(&b, "k", 1, 10, 20, 30);
    t = tb_read(&b, 1);
    analyze(t, &o, &r);
    assert_false(r.util.has);
    assert_int_equal(r.util.status, LP_UTIL_NO_PREFILL);
    assert_non_null(strstr(util_text(&r), "prefill"));
    lp_run_free(&r);
    lp_trace_free(t);
    lp_gpu_table_free(&gpus);
}

static struct lp_trace *fixture(const char *name);

/* ---- GEMMs ---- */

/* More shapes than the table of rows by shape starts with (256 slots, half full): it grows,
 * and each of 300 shapes, called twice, is one row with both calls and their kernels */
static void test_gemm_rows_many_shapes(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    device(&b);
    enum { SHAPES = 300 };
    uint64_t at = 1000000;
    for (uint64_t rep = 0; rep < 2; rep++)
        for (uint64_t i = 0; i < SHAPES; i++, at += 10000) {
            gemm(&b, 1, at, at + 2000, 64 + i, 8, 256 + 2 * i, NULL);
            kernel(&b, "gemm_k", 1, at + 1000, at + 5000, at + 5000 + 10 * (i + 1));
        }
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.gemm.calls, 2 * SHAPES);
    assert_int_equal(r.gemm.linked, 2 * SHAPES);
    assert_int_equal(r.gemm.n_rows, SHAPES);
    uint8_t seen[SHAPES] = {0};
    for (size_t q = 0; q < r.gemm.n_rows; q++) {
        const struct lp_gemm_row *row = &r.gemm.rows[q];
        uint64_t i = row->call.m - 64;
        assert_true(i < SHAPES);
        assert_int_equal(row->call.k, 256 + 2 * i);
        assert_int_equal(row->calls, 2);
        assert_int_equal(row->kernels, 2);
        assert_int_equal(row->gpu_ns, 2 * 10 * (i + 1));
        seen[i]++;
    }
    for (size_t i = 0; i < SHAPES; i++)
        assert_int_equal(seen[i], 1);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* More graphs than the table lists (LP_GRAPH_ROWS_MAX): graph g (1..N) replayed once for
 * g ns; the rows of most GPU time are listed (by stage and graph id still), the others are
 * counted, and the stage's replays count them all */
static void test_graph_rows_max(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    enum { N = LP_GRAPH_ROWS_MAX + 200 };
    for (uint32_t g = 1; g <= N; g++) {
        struct lp_record k = {.type = LP_REC_KERNEL};
        uint64_t at = 1000000 + 10000 * (uint64_t)g;
        k.u.kernel = (struct lp_kernel){.start = at, .end = at + g, .correlation = 100000 + g,
                                        .stream = 7, .graph_id = g,
                                        .flags = LP_KERNEL_FLAG_GRAPH | LP_KERNEL_FLAG_REPLAY};
        add(&b, &k);
    }
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, &(struct lp_run_options){0}, &r);
    assert_int_equal(r.n_graphs, LP_GRAPH_ROWS_MAX);
    uint64_t replays = r.graphs_unlisted.replays, ns = r.graphs_unlisted.gpu_ns;
    for (size_t i = 0; i < r.n_graphs; i++) {
        assert_true(r.graphs[i].graph_id > N - LP_GRAPH_ROWS_MAX); /* the costliest */
        if (i)
            assert_true(r.graphs[i].graph_id > r.graphs[i - 1].graph_id);
        replays += r.graphs[i].replays;
        ns += r.graphs[i].gpu_ns;
    }
    assert_int_equal(r.graphs_unlisted.rows, N - LP_GRAPH_ROWS_MAX);
    assert_int_equal(r.graphs_unlisted.replays, N - LP_GRAPH_ROWS_MAX);
    assert_int_equal(replays, N);
    assert_int_equal(ns, (uint64_t)N * (N + 1) / 2);
    uint64_t stage_replays = 0;
    for (size_t s = 0; s < r.n_stages; s++)
        stage_replays += r.stages[s].graph_replays;
    assert_int_equal(stage_replays, N);
    char *md = write_to_string(lp_report_run_md, &r);
    char want[128];
    snprintf(want, sizeof want, "\n%d rows more, of %d replays and ", N - LP_GRAPH_ROWS_MAX,
             N - LP_GRAPH_ROWS_MAX);
    assert_non_null(strstr(md, want));
    assert_non_null(strstr(md, "the table keeps the 1000 of most GPU time."));
    free(md);
    json_t *j = lp_report_run_json_value(&r);
    assert_int_equal(json_array_size(json_object_get(j, "graphs")), LP_GRAPH_ROWS_MAX);
    json_t *u = json_object_get(j, "graphs_unlisted");
    assert_int_equal(json_integer_value(json_object_get(u, "rows")), N - LP_GRAPH_ROWS_MAX);
    assert_int_equal(json_integer_value(json_object_get(u, "gpu_ns")), r.graphs_unlisted.gpu_ns);
    json_decref(j);
    lp_run_free(&r);
    lp_trace_free(t);
}

static int perfetto_all(FILE *f, const struct lp_run *r);

/* A name every row or event repeats is cut to LP_NAME_CUT bytes with "…", before a
 * character it would split: a GEMM's entry point of 2000 bytes in report.json and gemms.csv,
 * a range's name in the Perfetto JSON */
static void test_name_cut(void **state)
{
    (void)state;
    char buf[LP_NAME_CUT + 4], s[2001];
    assert_string_equal(lp_fmt_cut("cublasLtMatmul", &buf), "cublasLtMatmul");
    memset(s, 'a', 2000);
    s[2000] = 0;
    const char *c = lp_fmt_cut(s, &buf);
    assert_int_equal(strlen(c), LP_NAME_CUT + 3);
    assert_string_equal(c + LP_NAME_CUT, "\xe2\x80\xa6");
    s[LP_NAME_CUT] = 0; /* exactly LP_NAME_CUT bytes: whole */
    assert_ptr_equal(lp_fmt_cut(s, &buf), s);
    s[LP_NAME_CUT] = 'a';
    memcpy(s + LP_NAME_CUT - 1, "\xc3\xa9", 2); /* é over the cut: before it */
    c = lp_fmt_cut(s, &buf);
    assert_int_equal(strlen(c), LP_NAME_CUT - 1 + 3);
    assert_int_equal(memcmp(c, s, LP_NAME_CUT - 1), 0);
    struct tb b;
    tb_open(&b);
    device(&b);
    memset(s, 'a', 2000);
    struct lp_record r = {.type = LP_REC_GEMM};
    r.u.gemm = (struct lp_gemm){.start = 1000, .end = 3000, .thread = 1,
                                .api = lp_trace_writer_intern(b.w, s), .m = 8, .n = 8, .k = 8,
                                .batch = 1, .algo = -1, .epilogue = 1};
    add(&b, &r);
    kernel(&b, "gemm_k", 1, 2000, 4000, 5000);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run run;
    analyze(t, NULL, &run);
    assert_int_equal(run.gemm.n_rows, 1);
    json_t *j = lp_report_run_json_value(&run);
    json_t *row = json_array_get(json_object_get(json_object_get(j, "gemms"), "shapes"), 0);
    assert_string_equal(json_string_value(json_object_get(row, "api")), lp_fmt_cut(s, &buf));
    json_decref(j);
    char *csv = write_to_string(lp_report_gemms_csv, &run);
    assert_non_null(strstr(csv, lp_fmt_cut(s, &buf)));
    assert_null(strstr(csv, s));
    free(csv);
    /* the SQLite export: each call's entry point, its first LP_NAME_CUT bytes */
    char path[] = "/tmp/lp_sqlite_cut_XXXXXX", err[512] = "";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    sqlite3 *db = NULL;
    assert_int_equal(lp_sqlite_open(&db, path, err, sizeof err), 0);
    assert_int_equal(lp_sqlite_add_trace(db, 1, "cut", &run, err, sizeof err), 0);
    assert_int_equal(lp_sqlite_close(db, err, sizeof err), 0);
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT length(api) FROM gemms", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), LP_NAME_CUT);
    sqlite3_finalize(st);
    sqlite3_close(db);
    unlink(path);
    lp_run_free(&run);
    lp_trace_free(t);
    /* the Perfetto JSON: three ranges of one 2000-byte name, each cut */
    tb_open(&b);
    for (uint64_t i = 0; i < 3; i++)
        range(&b, s, 1, 1000 * i, 1000 * i + 500);
    kernel(&b, "k", 1, 100, 200, 300);
    t = tb_read(&b, 1);
    analyze(t, NULL, &run);
    char *json = write_to_string(perfetto_all, &run);
    assert_null(strstr(json, s));
    size_t cuts = 0;
    for (const char *p = json; (p = strstr(p, lp_fmt_cut(s, &buf))) != NULL; p++)
        cuts++;
    assert_int_equal(cuts, 3);
    free(json);
    lp_run_free(&run);
    lp_trace_free(t);
}

/* More shapes than the table lists (LP_GEMM_ROWS_MAX): the costliest are rows, by GPU time,
 * and the others are counted, so rows and the rest add up to the totals. Shape i runs 1 to 3
 * calls, alternately from two threads (calls of one shape from threads whose kinds differ are
 * one row); every fifth shape launches no kernel (no time: ties by stage and start). Five
 * calls in a warm-up range are counted in the totals, in neither the rows nor the rest. */
static void test_gemm_rows_listed_max(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    device(&b);
    enum { SHAPES = LP_GEMM_ROWS_MAX + 500 };
    range(&b, "prefill warmup", 1, 1000, 900000);
    for (uint64_t i = 0; i < 5; i++)
        gemm(&b, 1, 2000 + 10000 * i, 3000 + 10000 * i, 64, 8, 256, NULL);
    uint64_t at = 1000000;
    for (uint64_t i = 0; i < SHAPES; i++)
        for (uint64_t c = 0; c <= i % 3; c++, at += 10000) {
            gemm(&b, 1 + (uint32_t)(c % 2), at, at + 2000, 64 + i, 8, 256, NULL);
            if (i % 5)
                kernel(&b, "gemm_k", 1 + (uint32_t)(c % 2), at + 1000, at + 5000,
                       at + 5000 + 10 * (i * 7919 % SHAPES + 1));
        }
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.gemm.n_rows, LP_GEMM_ROWS_MAX);
    const struct lp_gemm_unlisted *u = &r.gemm.unlisted;
    assert_int_equal(u->shapes, SHAPES - LP_GEMM_ROWS_MAX);
    uint64_t calls = u->calls, linked = u->linked, kernels = u->kernels, ns = u->gpu_ns;
    double flops = u->flops;
    uint64_t least = UINT64_MAX; /* the listed rows' least GPU time */
    for (size_t q = 0; q < r.gemm.n_rows; q++) {
        const struct lp_gemm_row *row = &r.gemm.rows[q];
        uint64_t i = row->call.m - 64;
        assert_int_equal(row->calls, i % 3 + 1);
        assert_int_equal(row->linked, i % 5 ? i % 3 + 1 : 0);
        if (q)
            assert_true(row->gpu_ns <= r.gemm.rows[q - 1].gpu_ns);
        least = row->gpu_ns < least ? row->gpu_ns : least;
        calls += row->calls;
        linked += row->linked;
        kernels += row->kernels;
        ns += row->gpu_ns;
        flops += row->flops;
    }
    assert_int_equal(r.gemm.warmup_calls, 5);
    assert_int_equal(calls + r.gemm.warmup_calls, r.gemm.calls);
    assert_int_equal(linked, r.gemm.linked);
    assert_int_equal(kernels, r.gemm.linked);
    assert_int_equal(ns, r.gemm.ns);
    assert_true(fabs(flops - r.gemm.flops) <= 1e-9 * r.gemm.flops);
    /* the rows listed are the costliest: each unlisted shape's time is at most theirs */
    uint64_t unlisted_most = 0;
    for (uint64_t i = 0; i < SHAPES; i++) {
        uint64_t shape_ns = i % 5 ? (i % 3 + 1) * 10 * (i * 7919 % SHAPES + 1) : 0;
        size_t q = 0;
        while (q < r.gemm.n_rows && r.gemm.rows[q].call.m != 64 + i)
            q++;
        if (q < r.gemm.n_rows)
            assert_int_equal(r.gemm.rows[q].gpu_ns, shape_ns);
        else if (shape_ns > unlisted_most)
            unlisted_most = shape_ns;
    }
    assert_true(unlisted_most <= least);
    assert_true(u->gpu_ns > 0);
    assert_true(fabs(u->share - (double)u->gpu_ns / (double)r.gemm.ns) < 1e-12);
    char *md = write_to_string(lp_report_run_md, &r);
    char want[160];
    snprintf(want, sizeof want, "%d shapes more, of %llu calls and ", SHAPES - LP_GEMM_ROWS_MAX,
             (unsigned long long)u->calls);
    assert_non_null(strstr(md, want));
    assert_non_null(strstr(md, "listed nowhere: the table keeps the 1000 costliest."));
    free(md);
    /* one left out, of no GPU time: said so */
    struct lp_gemm_unlisted keep = *u;
    r.gemm.unlisted = (struct lp_gemm_unlisted){.shapes = 1, .calls = 1, .share = -1};
    md = write_to_string(lp_report_run_md, &r);
    assert_non_null(strstr(md, "\n1 shape more, of 1 call and 0 ns of GPU time (- of the "
                               "table's), is counted in the figures above"));
    free(md);
    r.gemm.unlisted = keep;
    json_t *j = lp_report_run_json_value(&r);
    json_t *g = json_object_get(j, "gemms"), *ul = json_object_get(g, "unlisted");
    assert_int_equal(json_array_size(json_object_get(g, "shapes")), LP_GEMM_ROWS_MAX);
    assert_int_equal(json_integer_value(json_object_get(ul, "shapes")), u->shapes);
    assert_int_equal(json_integer_value(json_object_get(ul, "calls")), u->calls);
    assert_int_equal(json_integer_value(json_object_get(ul, "gpu_ns")), u->gpu_ns);
    json_decref(j);
    char *csv = write_to_string(lp_report_gemms_csv, &r);
    size_t lines = 0;
    for (const char *p = csv; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 1 + LP_GEMM_ROWS_MAX);
    free(csv);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Kernels belong to the GEMM call that launched them: same thread, launch inside the call;
 * rows group calls by shape and stage; FLOPs, TFLOP/s and hints follow from the shape. */
static void test_gemm_linking_and_rows(void **state)
{
    (void)state;
    struct lp_gpu_table gpus;
    char err[256];
    assert_int_equal(lp_gpu_table_load(&gpus, NULL, err, sizeof err), 0);
    struct tb b;
    tb_open(&b);
    device(&b);
    range(&b, "prefill tokens=512", 1, 0, 1000000);
    range(&b, "decode", 1, 2000000, 3000000);
    /* prefill: 4096 x 512 x 4096 twice, 10 us of GPU each (2 kernels: main + split-K) */
    for (int i = 0; i < 2; i++) {
        uint64_t t0 = 10000 + (uint64_t)i * 100000;
        gemm(&b, 1, t0, t0 + 5000, 4096, 512, 4096, "256x128");
        kernel(&b, "nvjet_sm90_tst_256x128", 1, t0 + 1000, t0 + 2000, t0 + 10000);
        kernel(&b, "cublasLt::splitKreduce_kernel", 1, t0 + 3000, t0 + 10000, t0 + 12000);
    }
    /* another thread launching inside the call's window is not the call's */
    kernel(&b, "elementwise", 2, 12000, 20000, 21000);
    /* a launch on the same thread after the call ended is not the call's either */
    kernel(&b, "elementwise", 1, 16000, 22000, 23000);
    /* decode: 1000 x 1 x 4096 (GEMV-like) with an odd tile fit; one call launched nothing */
    gemm(&b, 1, 2100000, 2105000, 1000, 1, 4096, "64x8");
    kernel(&b, "nvjet_sm90_tst_64x8", 1, 2101000, 2110000, 2114000);
    gemm(&b, 1, 2200000, 2201000, 1000, 1, 4096, "64x8");
    struct lp_trace *t = tb_read(&b, 1);
    int32_t *kg = NULL;
    assert_int_equal(lp_gemm_link(t, &kg, NULL), LP_OK);
    assert_int_equal(kg[0], 0);
    assert_int_equal(kg[1], 0);
    assert_int_equal(kg[2], 1);
    assert_int_equal(kg[3], 1);
    assert_int_equal(kg[4], -1);
    assert_int_equal(kg[5], -1);
    assert_int_equal(kg[6], 2);
    free(kg);
    struct lp_run_options o = {.gpus = &gpus};
    struct lp_run r;
    analyze(t, &o, &r);
    assert_int_equal(r.gemm.calls, 4);
    assert_int_equal(r.gemm.linked, 3);
    assert_int_equal(r.gemm.n_rows, 2);
    const struct lp_gemm_row *pf = &r.gemm.rows[0], *dc = &r.gemm.rows[1];
    assert_int_equal(pf->call.m, 4096);
    assert_string_equal(r.stages[pf->stage].name, "prefill");
    assert_int_equal(pf->calls, 2);
    assert_int_equal(pf->kernels, 4);
    assert_int_equal(pf->gpu_ns, 2 * (8000 + 2000));
    double flops = 2.0 * 4096 * 512 * 4096;
    assert_true(fabs(pf->flops_per_call - flops) < 1);
    assert_true(fabs(pf->tflops - flops / 10000 / 1e3) < 1e-6);
    assert_int_equal(pf->peak_dtype, LP_DTYPE_BF16);
    assert_true(fabs(pf->peak_share - pf->tflops / 989) < 1e-9);
    assert_false(pf->memory_bound);
    /* 4096 x 512 fills 256 x 128 tiles exactly: 64 tiles on 132 SMs, a half-empty wave */
    assert_false(pf->hints & LP_GEMM_HINT_TILE_FILL);
    assert_true(pf->hints & LP_GEMM_HINT_WAVES);
    assert_int_equal(pf->ctas, 64);
    assert_int_equal(pf->sms, 132);
    assert_null(strstr(hint_text(pf), "filled"));
    assert_non_null(strstr(hint_text(pf), "64 tiles on 132 SMs"));
    assert_string_equal(r.stages[dc->stage].name, "decode");
    assert_int_equal(dc->calls, 2);
    assert_int_equal(dc->linked, 1);
    assert_true(dc->memory_bound);
    assert_true(dc->hints & LP_GEMM_HINT_GEMV);
    assert_non_null(strstr(hint_text(dc), "GEMV-like"));
    const struct lp_stage_report *p = stage(&r, "prefill");
    assert_int_equal(p->gemm_calls, 2);
    assert_true(fabs(p->gemm_flops - 2 * flops) < 1);
    /* measured MFU (GEMMs): FLOPs over the stage's wall time at the bf16 peak */
    assert_true(fabs(p->gemm_mfu - 2 * flops / 1e-3 / 1e12 / 989) < 1e-9);
    const struct lp_note *unlinked = note(&r, LP_NOTE_GEMMS_UNLINKED);
    assert_non_null(unlinked);
    assert_int_equal(unlinked->count, 1);
    assert_int_equal(unlinked->of, 4);
    assert_non_null(strstr(note_text(&r, unlinked), "1 of 4 successful GEMM calls"));
    lp_run_free(&r);
    lp_trace_free(t);
    lp_gpu_table_free(&gpus);
}

/* No NVTX ranges: prefill and decode steps from the tokens in flight of the GEMMs */
static void test_inferred_stages(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    device(&b);
    uint64_t t0 = 1000000;
    /* a prefill of 512 tokens: projection, MLP, lm_head */
    for (int i = 0; i < 4; i++, t0 += 10000) {
        gemm(&b, 1, t0, t0 + 5000, 2048, 512, 2048, NULL);
        kernel(&b, "nvjet", 1, t0 + 1000, t0 + 2000, t0 + 4000);
    }
    gemm(&b, 1, t0, t0 + 5000, 32000, 512, 2048, NULL);
    t0 += 100000;
    /* three decode steps of one token: 4 projections and the lm_head each */
    for (int s = 0; s < 3; s++) {
        for (int i = 0; i < 4; i++, t0 += 10000) {
            gemm(&b, 1, t0, t0 + 5000, 2048, 1, 2048, NULL);
            kernel(&b, "nvjet", 1, t0 + 1000, t0 + 2000, t0 + 4000);
        }
        gemm(&b, 1, t0, t0 + 5000, 32000, 1, 2048, NULL);
        t0 += 50000;
    }
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_true(r.stages_inferred);
    const struct lp_stage_report *p = stage(&r, "prefill"), *d = stage(&r, "decode");
    assert_non_null(p);
    assert_non_null(d);
    assert_int_equal(p->occurrences, 1);
    assert_int_equal(d->occurrences, 3);
    assert_int_equal(p->tokens, 512);
    assert_int_equal(p->tokens_source, LP_TOKENS_SHAPES);
    assert_int_equal(d->tokens, 3);
    /* a step ends with its lm_head's call: 4 x 10 us + 50 us between steps; the first also
     * holds the 100 us after the prefill */
    assert_true(fabs(d->wall.min - 90000) < 1);
    assert_true(fabs(d->wall.max - 140000) < 1);
    assert_true(r.llm.tpot_s > 0);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* generate() with hooks on a vision tower: vision ranges and no prefill or decode range.
 * Prefill and decode are inferred from the GEMMs outside the vision ranges (the vision's
 * 4096-token GEMM stays the vision's); each request starts at the program's "generate" range,
 * not at a range around the whole program (which holds both requests) nor at the vision. */
static void test_inferred_around_vision(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    device(&b);
    uint64_t t0 = 1000000, gen_start[2], prefill_end[2];
    range(&b, "main", 1, t0 - 500000, t0 + 10000000);
    for (int q = 0; q < 2; q++) {
        uint64_t g0 = t0;
        gen_start[q] = g0;
        t0 += 200000; /* generate()'s host work before the first forward */
        range(&b, "vision", 1, t0, t0 + 100000);
        gemm(&b, 1, t0 + 10000, t0 + 15000, 768, 4096, 768, NULL);
        kernel(&b, "nvjet", 1, t0 + 11000, t0 + 12000, t0 + 14000);
        t0 += 150000;
        for (int i = 0; i < 3; i++, t0 += 10000) {
            gemm(&b, 1, t0, t0 + 5000, 2048, 290, 2048, NULL);
            kernel(&b, "nvjet", 1, t0 + 1000, t0 + 2000, t0 + 4000);
        }
        gemm(&b, 1, t0, t0 + 5000, 32000, 1, 2048, NULL); /* the last token's lm_head */
        prefill_end[q] = t0 + 5000;
        t0 += 50000;
        for (int st = 0; st < 3; st++) {
            for (int i = 0; i < 3; i++, t0 += 10000) {
                gemm(&b, 1, t0, t0 + 5000, 2048, 1, 2048, NULL);
                kernel(&b, "nvjet", 1, t0 + 1000, t0 + 2000, t0 + 4000);
            }
            gemm(&b, 1, t0, t0 + 5000, 32000, 1, 2048, NULL);
            t0 += 50000;
        }
        range(&b, "generate", 1, g0, t0);
        t0 += 100000;
    }
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_true(r.stages_inferred);
    const struct lp_stage_report *v = stage(&r, "vision"), *p = stage(&r, "prefill"),
                                 *d = stage(&r, "decode");
    assert_non_null(v);
    assert_non_null(p);
    assert_non_null(d);
    assert_int_equal(v->occurrences, 2);
    assert_int_equal(p->occurrences, 2);
    assert_int_equal(p->tokens, 2 * 290); /* not the vision's 4096 */
    assert_int_equal(v->gemm_calls, 2);
    assert_int_equal(r.llm.requests, 2);
    assert_int_equal(r.llm.ttft.n, 2);
    for (int q = 0; q < 2; q++)
        print_message("request %d: TTFT from generate %.0f ns\n", q,
                      (double)(prefill_end[q] - gen_start[q]));
    assert_true(fabs(r.llm.ttft.p50 - (double)(prefill_end[0] - gen_start[0])) < 1);
    /* of each 385 us TTFT the vision (100 us) and the prefill (85 us) take 185; the rest: none */
    assert_true(r.llm.ttft_outside_share > 0.5 && r.llm.ttft_outside_share < 0.7);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* bench/llama_decode.py --new-tokens 16 --runs 1 --warmup 1, GEMMs recorded, on the H200:
 * the measured GEMM FLOPs of a prefill against llmprof model's */
static void test_fixture_llama_gemms(void **state)
{
    (void)state;
    struct lp_trace *t = fixture("llama-gemm");
    struct lp_model m;
    char err[256];
    assert_int_equal(lp_model_load(LP_CONFIGS "/llama-bench-1.1b.json", &m, err, sizeof err), 0);
    struct lp_gpu_table gpus;
    assert_int_equal(lp_gpu_table_load(&gpus, NULL, err, sizeof err), 0);
    struct lp_workload w;
    lp_workload_defaults(&w);
    w.prefill_logits_all = 1; /* HF computes logits for every prompt token */
    struct lp_run_options o = {.model = &m, .gpus = &gpus, .workload = &w};
    struct lp_run r;
    analyze(t, &o, &r);
    assert_int_equal(r.gemm.calls, t->n_gemms);
    assert_int_equal(r.gemm.linked, r.gemm.calls);
    const struct lp_stage_report *p = stage(&r, "prefill"), *d = stage(&r, "decode");
    /* 22 layers x 7 linears + lm_head, and the rotary embedding's outer product */
    assert_int_equal(p->gemm_calls, 22 * 7 + 1 + 1);
    /* the linear layers exactly; the analytic count also holds attention scores, which
     * SDPA computes outside cuBLAS: 2.2 % of the prefill's matmul FLOPs here */
    assert_true(fabs(p->gemm_vs_linear - 1) < 0.001);
    assert_true(p->gemm_vs_model > 0.97 && p->gemm_vs_model < 0.99);
    assert_true(fabs(d->gemm_vs_linear - 1) < 0.001);
    assert_true(p->gemm_mfu > 0 &&
                fabs(p->gemm_mfu / p->mfu -
                     p->gemm_flops / (double)p->occurrences / p->model_flops) < 1e-6);
    int gemv = 0, big = 0;
    for (size_t i = 0; i < r.gemm.n_rows; i++) {
        const struct lp_gemm_row *g = &r.gemm.rows[i];
        assert_true(g->call.algo >= 0);
        if (g->stage >= 0 && r.stages[g->stage].kind == LP_STAGE_KIND_DECODE && g->call.n == 1 &&
            g->call.k >= 2048)
            gemv += (g->hints & LP_GEMM_HINT_GEMV) != 0;
        if (g->call.m == 5632 && g->call.n == 512 &&
            r.stages[g->stage].kind == LP_STAGE_KIND_PREFILL) {
            big = 1;
            assert_int_equal(g->calls, 44); /* gate and up projections of 22 layers */
            assert_true(g->peak_share > 0.3 && g->peak_share < 1);
        }
    }
    assert_true(gemv >= 4);
    assert_true(big);
    lp_run_free(&r);
    lp_trace_free(t);
    lp_gpu_table_free(&gpus);
}

/* the same program without NVTX ranges: stages inferred, close to the ranged run */
static void test_fixture_inferred_stages(void **state)
{
    (void)state;
    struct lp_trace *t = fixture("llama-nonvtx");
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_true(r.stages_inferred);
    const struct lp_stage_report *p = stage(&r, "prefill"), *d = stage(&r, "decode");
    /* no range tells the warm-up run apart: its prefill's TTFT does (the outlier rule) */
    assert_int_equal(r.warmup.cause, LP_WARMUP_TTFT);
    assert_int_equal(r.warmup.occurrences, 17);
    assert_true(r.warmup.value_ns > 10 * r.warmup.median_ns);
    assert_int_equal(stage(&r, "warmup")->occurrences, 17);
    assert_int_equal(p->occurrences, 1);
    assert_int_equal(d->occurrences, 16);
    assert_int_equal(p->tokens, 512);
    assert_int_equal(d->tokens, 16);
    /* the measured run's decode steps took 13.7..16.4 ms with ranges */
    assert_true(d->wall.min > 13e6 && d->wall.min < 16e6);
    assert_true(p->wall.min > 14e6 && p->wall.min < 16e6);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* tests/gpu/gemm.cu: every entry point, fp8 and TF32 peaks, a failed call */
static void test_fixture_gemm_shapes(void **state)
{
    (void)state;
    struct lp_trace *t = fixture("gemm");
    struct lp_gpu_table gpus;
    char err[256];
    assert_int_equal(lp_gpu_table_load(&gpus, NULL, err, sizeof err), 0);
    struct lp_run_options o = {.gpus = &gpus};
    struct lp_run r;
    analyze(t, &o, &r);
    assert_int_equal(r.gemm.calls, 19);
    assert_int_equal(r.gemm.failed, 1);
    assert_int_equal(r.gemm.linked, 18);
    int fp8 = 0, tf32 = 0, odd = 0;
    for (size_t i = 0; i < r.gemm.n_rows; i++) {
        const struct lp_gemm_row *g = &r.gemm.rows[i];
        if (g->call.a_type == 28) {
            fp8 = 1;
            assert_int_equal(g->peak_dtype, LP_DTYPE_FP8);
        }
        if (g->call.m == 1000) {
            tf32 = odd = 1;
            assert_int_equal(g->peak_dtype, LP_DTYPE_TF32);
            assert_true(g->hints & LP_GEMM_HINT_UNALIGNED);
            assert_int_equal(g->align_elems, 4);
            assert_non_null(strstr(hint_text(g), "multiple of 4 (16 bytes of fp32)"));
            assert_non_null(strstr(hint_text(g), "filled"));
        }
        if (g->call.m == 0)
            assert_int_equal(g->linked, 0);
    }
    assert_true(fp8 && tf32 && odd);
    lp_run_free(&r);
    lp_trace_free(t);
    lp_gpu_table_free(&gpus);
}

/* ---- kernel names ---- */

static void test_kernel_names(void **state)
{
    (void)state;
    char *d = lp_kernel_demangle("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_"
                                 "11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_");
    assert_non_null(strstr(d, "at::native::vectorized_elementwise_kernel<4"));
    char buf[128];
    lp_kernel_short_name(d, buf, sizeof buf);
    assert_string_equal(buf,
                        "vectorized_elementwise_kernel<4, FillFunctor<float>, Array<char*, 1>>");
    assert_int_equal(lp_kernel_category(d), LP_KCAT_ELEMENTWISE);
    free(d);
    /* past 1,024 characters (CUTLASS kernels are longer) the demangler's own limit refuses:
     * such names are demangled on a thread with a stack sized for them; junk stays as it is */
    char *longname = malloc(2100), *want = malloc(2100);
    assert_non_null(longname);
    assert_non_null(want);
    memset(want, 'k', 2000);
    strcpy(want + 2000, "()");
    snprintf(longname, 2100, "_Z2000%.2000sv", want);
    d = lp_kernel_demangle(longname);
    assert_string_equal(d, want);
    free(d);
    longname[5] = '9'; /* the identifier's length now runs past the end */
    d = lp_kernel_demangle(longname);
    assert_string_equal(d, longname);
    free(d);
    free(longname);
    free(want);
    d = lp_kernel_demangle("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT");
    assert_string_equal(d, "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT");
    free(d);
    /* f(A, A<A, A>, A<A<A, A>, A<A, A>>, ...): each argument repeats the two before it, so
     * DEPTH substitutions double the output DEPTH times. Up to 16 times the name (4 KiB at
     * least) it demangles; past that it stays mangled (170 bytes made 850 KB each) */
    for (int depth = 6; depth <= 16; depth += 10) {
        char nm[256];
        int o = snprintf(nm, sizeof nm, "_Z1f1A");
        for (int j = 1; j <= depth; j++)
            o += j == 1 ? snprintf(nm + o, sizeof nm - (size_t)o, "S_IS_S_E")
                        : snprintf(nm + o, sizeof nm - (size_t)o, "S_IS%c_S%c_E",
                                   "0123456789ABCDEF"[j - 2], "0123456789ABCDEF"[j - 2]);
        d = lp_kernel_demangle(nm);
        if (depth == 6) {
            assert_true(!strncmp(d, "f(A, A<A, A>, A<A<A, A>, A<A, A> >", 34) ||
                        !strncmp(d, "f(A, A<A, A>, A<A<A, A>, A<A, A>>", 33));
            assert_true(strlen(d) < 4096);
        } else {
            assert_string_equal(d, nm);
        }
        free(d);
    }
    static const struct {
        const char *name;
        enum lp_kcat cat;
    } cases[] = {
        {"nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT", LP_KCAT_GEMM},
        {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", LP_KCAT_GEMM},
        {"void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128>>(Flash_fwd_params)",
         LP_KCAT_ATTENTION},
        {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16", LP_KCAT_ATTENTION},
        {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int)",
         LP_KCAT_NORM},
        {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
         "at::native::MeanOps<float, float> > >(float)",
         LP_KCAT_REDUCTION},
        {"void at::native::distribution_elementwise_grid_stride_kernel<float, 4, "
         "at::native::templates::cuda::normal_and_transform<float>>(int)",
         LP_KCAT_ELEMENTWISE},
        {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
         LP_KCAT_COMMUNICATION},
        {"my_custom_kernel", LP_KCAT_OTHER},
        /* Triton and torch.compile matmuls by a word of their name (issue 46) */
        {"mm", LP_KCAT_GEMM},
        {"mm_kernel", LP_KCAT_GEMM},
        {"_matmul_kernel", LP_KCAT_GEMM},
        {"triton_tem_fused_addmm_silu_0", LP_KCAT_GEMM},
        {"triton_tem_fused_bmm_1", LP_KCAT_GEMM},
        {"comm_kernel", LP_KCAT_OTHER},
        {"command_buffer_kernel", LP_KCAT_OTHER},
        {"mmap_copy", LP_KCAT_ELEMENTWISE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (lp_kernel_category(cases[i].name) != cases[i].cat)
            fail_msg("%s: %s, wanted %s", cases[i].name,
                     lp_kcat_name(lp_kernel_category(cases[i].name)), lp_kcat_name(cases[i].cat));
    }
}

/* ---- writers ---- */

static int perfetto_all(FILE *f, const struct lp_run *r)
{
    return lp_report_perfetto(f, r, 0, 0);
}

static void test_writers(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    device(&b);
    range(&b, "prefill tokens=8", 1, 0, 10000);
    range(&b, "evil \"quoted\" </script> | pipe", 1, 100, 9000);
    range(&b, "tab\there back\\slash \x01 end", 1, 9100, 9200);
    kernel(&b, "k</script><script>alert(1)</script>", 1, 200, 300, 400);
    kernel(&b, "k,\"two\"", 1, 500, 600, 800);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    char *json = write_to_string(lp_report_run_json, &r);
    json_error_t je;
    json_t *root = json_loads(json, 0, &je);
    assert_non_null(root);
    assert_string_equal(json_string_value(json_object_get(root, "schema")), "llmprof-report/2");
    assert_int_equal(json_array_size(json_object_get(root, "stages")), 1);
    json_decref(root);
    free(json);
    char *html = write_to_string(lp_report_run_html, &r);
    assert_null(strstr(html, "/*LLMPROF_DATA*/"));
    assert_null(strstr(html, "<script><script>alert"));
    /* exactly the template's three closing script tags (the page's, report.json's and the
       baseline's, null here) */
    int closes = 0;
    for (const char *p = html; (p = strstr(p, "</script>")); p++)
        closes++;
    assert_int_equal(closes, 3);
    assert_non_null(strstr(html, "type=\"application/json\">null</script>"));
    free(html);
    /* against a baseline (itself): diff.json fills the second data script, its names escaped
       like report.json's */
    struct lp_diff d;
    assert_int_equal(lp_diff_build(&r, &r, NULL, &d), LP_OK);
    size_t html_len = 0;
    FILE *hf = open_memstream(&html, &html_len);
    assert_non_null(hf);
    assert_int_equal(lp_report_run_html_baseline(hf, &r, &d), 0);
    fclose(hf);
    assert_null(strstr(html, "/*LLMPROF_BASELINE*/"));
    closes = 0;
    for (const char *p = html; (p = strstr(p, "</script>")); p++)
        closes++;
    assert_int_equal(closes, 3);
    assert_non_null(strstr(html, "\"schema\":\"llmprof-diff/1\""));
    const char *base = strstr(html, "id=\"baseline-data\"");
    assert_non_null(base);
    assert_non_null(strstr(base, "evil \\\"quoted\\\" \\u003c/script> | pipe"));
    free(html);
    lp_diff_free(&d);
    char *csv = write_to_string(lp_report_kernels_csv, &r);
    assert_non_null(strstr(csv, "\"k,\"\"two\"\"\""));
    free(csv);
    char *ops = write_to_string(lp_report_operators_csv, &r);
    assert_non_null(strstr(ops, "\"evil \"\"quoted\"\" </script> | pipe\""));
    free(ops);
    char *md = write_to_string(lp_report_run_md, &r);
    assert_non_null(strstr(md, "\\| pipe"));
    free(md);
    free(write_to_string(lp_report_summary_md, &r));
    free(write_to_string(lp_report_stages_csv, &r));
    char *pf = write_to_string(perfetto_all, &r);
    root = json_loads(pf, 0, &je);
    if (!root)
        fail_msg("perfetto JSON: %s at line %d", je.text, je.line);
    json_t *ev = json_object_get(root, "traceEvents");
    size_t kernels = 0, flows_s = 0, flows_f = 0, nvtx = 0, escaped = 0;
    for (size_t i = 0; i < json_array_size(ev); i++) {
        json_t *e = json_array_get(ev, i);
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *cat = json_string_value(json_object_get(e, "cat"));
        if (!strcmp(ph, "X") && cat && !strcmp(cat, "kernel"))
            kernels++;
        if (!strcmp(ph, "X") && cat && !strcmp(cat, "nvtx"))
            nvtx++;
        const char *name = json_string_value(json_object_get(e, "name"));
        escaped += name && !strcmp(name, "tab\there back\\slash \x01 end");
        flows_s += !strcmp(ph, "s");
        flows_f += !strcmp(ph, "f");
    }
    assert_int_equal(kernels, 2);
    assert_int_equal(nvtx, 3);
    assert_int_equal(escaped, 1); /* quotes, backslashes and control bytes escaped */
    assert_int_equal(flows_s, 2);
    assert_int_equal(flows_f, 2);
    json_decref(root);
    free(pf);
    /* a window keeps what overlaps it: t0 is the first marker at 0 ns, so 1 ms..2 ms holds
     * nothing, 0..1 ms everything */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(lp_report_perfetto(f, &r, 1, 2), 0);
    fclose(f);
    assert_null(strstr(buf, "\"kernel\""));
    free(buf);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* CUPTI's overhead records are not in the run's first timestamp: one that starts before it
 * is drawn from there to its end in both Perfetto exports, never past its end. */
static void test_perfetto_before_t0(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    struct lp_record rec = {.type = LP_REC_OVERHEAD};
    rec.u.overhead = (struct lp_overhead){.start = 1000, .end = 3000, .kind = 1, .thread = 1};
    add(&b, &rec);
    kernel(&b, "k", 1, 2000, 2500, 2600); /* its call at 2000 ns: the first timestamp */
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.t0_ns, 2000);
    char *pf = write_to_string(perfetto_all, &r);
    json_error_t je;
    json_t *root = json_loads(pf, 0, &je);
    assert_non_null(root);
    json_t *ev = json_object_get(root, "traceEvents");
    int found = 0;
    for (size_t i = 0; i < json_array_size(ev); i++) {
        json_t *e = json_array_get(ev, i);
        const char *cat = json_string_value(json_object_get(e, "cat"));
        if (cat && !strcmp(cat, "cupti_overhead")) {
            assert_true(json_real_value(json_object_get(e, "ts")) == 0.0);
            assert_true(json_real_value(json_object_get(e, "dur")) == 1.0); /* 1 us, to 3000 */
            found++;
        }
    }
    assert_int_equal(found, 1);
    json_decref(root);
    free(pf);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* R's protobuf export of [FROM_MS, TO_MS] (0, 0: all), which must succeed: its bytes
 * (*LEN of them, malloc'd) and *ST */
static char *pb_export(const struct lp_run *r, uint64_t from_ms, uint64_t to_ms, size_t *len,
                       struct lp_perfetto_stats *st)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    assert_non_null(f);
    assert_int_equal(lp_report_perfetto_pb(f, r, from_ms, to_ms, st), 0);
    fclose(f);
    return buf;
}

/* The Perfetto protobuf export: 40 kernels on one stream, each starting after and ending
 * after the one before (crossing every one still open), fill 32 lanes of the stream, and
 * the 8 past them are cut to end with the slice they cross; nested kernels need one lane. A
 * window that holds nothing writes no kernel name. */
static void test_perfetto_pb_lanes(void **state)
{
    (void)state;
    for (int crossing = 0; crossing < 2; crossing++) {
        struct tb b;
        tb_open(&b);
        device(&b);
        range(&b, "prefill tokens=8", 1, 0, 200000);
        for (uint64_t i = 0; i < 40; i++)
            kernel(&b, "crossing_kernel", 1, 0, 1000 + 10 * i,
                   crossing ? 100000 + 10 * i : 100000 - 10 * i);
        struct lp_trace *t = tb_read(&b, 1);
        struct lp_run r;
        analyze(t, NULL, &r);
        size_t len;
        struct lp_perfetto_stats st;
        char *buf = pb_export(&r, 0, 0, &len, &st);
        /* the host thread, and the stream's lanes */
        assert_int_equal(st.shortened, crossing ? 8 : 0);
        assert_int_equal(st.tracks, crossing ? 1 + 32 : 1 + 1);
        assert_non_null(memmem(buf, len, "crossing_kernel", 15));
        assert_int_equal(crossing, memmem(buf, len, "stream 7 (overlapping 31)", 25) != NULL);
        free(buf);
        buf = pb_export(&r, 1, 2, &len, &st);
        assert_null(memmem(buf, len, "crossing_kernel", 15));
        free(buf);
        lp_run_free(&r);
        lp_trace_free(t);
    }
}

/* Kernels on two devices the trace does not describe: a process each, as in the JSON. */
static void test_perfetto_pb_devices(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    for (uint32_t d = 5; d <= 9; d += 4) {
        struct lp_record rec = {.type = LP_REC_KERNEL};
        rec.u.kernel = (struct lp_kernel){.start = 100 * d, .end = 100 * d + 50, .stream = 7,
                                          .device = d, .correlation = d,
                                          .name = lp_trace_writer_intern(b.w, "k")};
        add(&b, &rec);
    }
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    size_t len;
    struct lp_perfetto_stats st;
    char *buf = pb_export(&r, 0, 0, &len, &st);
    assert_non_null(memmem(buf, len, "GPU 5 (not described by the trace)", 34));
    assert_non_null(memmem(buf, len, "GPU 9 (not described by the trace)", 34));
    assert_int_equal(st.tracks, 2); /* stream 7 of each */
    free(buf);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* ---- the real fixtures ---- */

static struct lp_trace *fixture(const char *name) { return tb_fixture(LP_FIXTURES, name); }

/* DeepSeek-OCR (v1) through the runner with --operators (emit_nvtx(record_shapes=True)) on
 * the H200: a warm-up and one request on one page, 4 new tokens each (2 prefills, 6 decode
 * steps). The shapes rows count what the model must run: q, k, v and o of 12 layers are
 * 4 x 12 x 6 = 288 [1, 1280] x [1280, 1280] matmuls in decode and 96 of [290, 1280] in the
 * prefills (273 image slots, 17 text tokens), each MoE layer (11) one grouped GEMM per step
 * over the 6 experts a token picks and one over 290 x 6 = 1,740 rows per prefill, and the
 * lm_head one [1, 1280] x [1280, 129280] per token produced. */
static void test_operator_shapes_ocr(void **state)
{
    (void)state;
    struct lp_trace *t = fixture("deepseek-ocr-operators/repeat-1");
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.op_shapes_unread, 0);
    assert_true(r.n_op_shapes > 300);
    static const struct {
        const char *op, *shapes;
        uint64_t calls;
    } want[] = {
        {"aten::mm", "[[1, 1280], [1280, 1280]]", 288},
        {"aten::mm", "[[290, 1280], [1280, 1280]]", 96},
        {"aten::_grouped_mm", "[[6, 1280], [64, 1280, 1792], [64], [], []]", 66},
        {"aten::_grouped_mm", "[[1740, 1280], [64, 1280, 1792], [64], [], []]", 22},
        {"aten::mm", "[[1, 1280], [1280, 129280]]", 8},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const struct lp_op_shape_row *x = shape_row(&r, want[i].op, want[i].shapes);
        assert_non_null(x);
        assert_int_equal(x->calls, want[i].calls);
        assert_true(x->gpu_ns > 0 && x->gpu_ns == x->self_gpu_ns); /* innermost: their GEMMs */
        assert_int_equal(x->kernels % x->calls, 0);
    }
    /* the vision stages beside them, cut out of the prefill */
    const char *parts[] = {"sam", "clip", "projector"};
    for (size_t p = 0; p < 3; p++) {
        int found = 0;
        for (size_t i = 0; i < r.n_stages; i++)
            found |= !strcmp(r.stages[i].name, parts[p]) && r.stages[i].occurrences == 1;
        assert_true(found);
    }
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Every finding's premise holds on the figures the report prints beside it, on every bundled
 * fixture (with its config.json when it has one): a finding whose premise a table refutes
 * fails here (issue 46) */
static void test_finding_premises(void **state)
{
    (void)state;
    char err[256];
    struct lp_gpu_table gpus;
    assert_int_equal(lp_gpu_table_load(&gpus, NULL, err, sizeof err), 0);
    DIR *d = opendir(LP_FIXTURES);
    assert_non_null(d);
    struct dirent *e;
    size_t checked = 0, findings = 0;
    while ((e = readdir(d)) != NULL) {
        char probe[512], cfg[512];
        snprintf(probe, sizeof probe, "ls %s/%s/*.lpt >/dev/null 2>&1", LP_FIXTURES, e->d_name);
        if (e->d_name[0] == '.' || system(probe) != 0)
            continue;
        snprintf(cfg, sizeof cfg, "%s/%s/config.json", LP_FIXTURES, e->d_name);
        struct lp_model m;
        int has_model = access(cfg, R_OK) == 0 && lp_model_load(cfg, &m, err, sizeof err) == 0;
        struct lp_trace *t = fixture(e->d_name);
        struct lp_run_options o = {.gpus = &gpus, .model = has_model ? &m : NULL};
        struct lp_run r;
        analyze(t, &o, &r);
        for (size_t i = 0; i < r.n_findings; i++) {
            const struct lp_finding *f = &r.findings[i];
            const struct lp_stage_report *s = f->stage >= 0 ? &r.stages[f->stage] : NULL;
            struct lp_finding_text x;
            lp_text_finding(&r, f, &x);
            findings++;
            switch (f->code) {
            case LP_FINDING_PREFILL_LOW_MFU:
                assert_true(s->mfu < 0.3);
                if (f->reason == LP_MFU_REASON_IDLE)
                    assert_true(s->busy_share < 0.5);
                else if (f->reason == LP_MFU_REASON_NON_GEMM)
                    assert_true(s->cat_share[LP_KCAT_GEMM] < 0.5);
                else if (f->reason == LP_MFU_REASON_GEMM_ELSEWHERE)
                    assert_true(s->cat_share[LP_KCAT_GEMM] >= 0.5 && f->share >= 0.4);
                else if (f->reason == LP_MFU_REASON_GEMM_SLOW)
                    assert_true(s->cat_share[LP_KCAT_GEMM] >= 0.5 && f->share < 0.4);
                if (s->cat_share[LP_KCAT_ATTENTION] > 0 &&
                    strstr(x.advice, "use a fused attention"))
                    fail_msg("%s: advises a fused attention kernel beside one", e->d_name);
                if (s->busy_share < 0.5 && strstr(x.advice, "run slowly"))
                    fail_msg("%s: GEMMs said slow in a prefill the GPU idles", e->d_name);
                break;
            case LP_FINDING_PREFILL_FEW_GEMMS: /* fusable kernels outweigh the GEMMs */
                assert_true(s->cat_share[LP_KCAT_GEMM] < 0.5);
                assert_true(f->share > s->cat_share[LP_KCAT_GEMM]);
                assert_true(fabs(f->share - (s->cat_share[LP_KCAT_ELEMENTWISE] +
                                             s->cat_share[LP_KCAT_NORM] +
                                             s->cat_share[LP_KCAT_REDUCTION] +
                                             s->cat_share[LP_KCAT_MEMCPY] +
                                             s->cat_share[LP_KCAT_MEMSET])) < 1e-9);
                break;
            case LP_FINDING_COPIES:
                assert_true(s->cat_ns[LP_KCAT_MEMCPY] >= 0.1 * (double)s->gpu_ns);
                break;
            case LP_FINDING_DECODE_LOW_MBU:
                assert_true(s->mbu < 0.5 && s->busy_share >= 0.8);
                break;
            case LP_FINDING_LAUNCH_BOUND:
                assert_true(f->idle_ns > 0 && f->idle_ns <= f->per_ns);
                break;
            case LP_FINDING_NO_STAGES:
                assert_int_equal(r.n_stages, 1);
                assert_int_equal(r.serving.cause, LP_SERVING_CAUSE_NONE);
                break;
            default:
                break;
            }
        }
        checked++;
        lp_run_free(&r);
        lp_trace_free(t);
    }
    closedir(d);
    lp_gpu_table_free(&gpus);
    assert_true(checked >= 40 && findings > 0);
}

/* A config of another model (Llama-2-7B: hidden 4096, vocabulary 32000) on the MoE run
 * (hidden 2048, vocabulary 102400): said, and its MFU kept out of the summary (issue 46);
 * the run's own config fits */
static void test_model_misfit(void **state)
{
    (void)state;
    char err[256];
    struct lp_gpu_table gpus;
    assert_int_equal(lp_gpu_table_load(&gpus, NULL, err, sizeof err), 0);
    struct lp_trace *t = fixture("hf-moe");
    static const char *const configs[] = {LP_CONFIGS "/llama-2-7b.json",
                                          LP_FIXTURES "/hf-moe/config.json"};
    for (int i = 0; i < 2; i++) {
        struct lp_model m;
        assert_int_equal(lp_model_load(configs[i], &m, err, sizeof err), 0);
        struct lp_run_options o = {.model = &m, .gpus = &gpus};
        struct lp_run r;
        analyze(t, &o, &r);
        assert_int_equal(r.util.model_misfit, i == 0);
        char *sum = write_to_string(lp_report_summary_md, &r);
        if (i == 0) {
            assert_non_null(strstr(sum, "- **The model does not fit this run:** the model given "
                                        "(hidden 4096, vocabulary 32000) does not fit the "
                                        "recorded GEMMs: their largest weight (the lm_head) is "
                                        "102400 x 2048, and 0 % of the linear calls"));
            assert_null(strstr(sum, "Over a whole request the model used"));
        } else {
            assert_null(strstr(sum, "does not fit"));
            assert_non_null(strstr(sum, "Over a whole request the model used"));
        }
        free(sum);
        lp_run_free(&r);
    }
    lp_trace_free(t);
    lp_gpu_table_free(&gpus);
}

/* --gpu naming another GPU than the recorded one: said in a note, with both names (issue 46);
 * the recorded one by another spelling, or an unknown recorded GPU, says nothing */
static void test_gpu_given_other(void **state)
{
    (void)state;
    char err[256];
    struct lp_gpu_table gpus;
    assert_int_equal(lp_gpu_table_load(&gpus, NULL, err, sizeof err), 0);
    struct lp_trace *t = fixture("hf-llama");
    static const struct {
        const char *name;
        int noted;
    } cases[] = {{"H100 SXM", 1}, {"H200", 0}, {NULL, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct lp_run_options o = {.gpus = &gpus, .gpu_name = cases[i].name};
        struct lp_run r;
        analyze(t, &o, &r);
        const struct lp_note *n = NULL;
        for (size_t k = 0; k < r.n_notes; k++)
            if (r.notes[k].code == LP_NOTE_GPU_GIVEN)
                n = &r.notes[k];
        assert_int_equal(n != NULL, cases[i].noted);
        if (n) {
            char buf[256];
            lp_text_note(&r, n, buf, sizeof buf);
            assert_non_null(strstr(buf, "(H100 SXM) is not the one the trace recorded (NVIDIA "
                                        "H200)"));
        }
        lp_run_free(&r);
    }
    lp_trace_free(t);
    lp_gpu_table_free(&gpus);
}

/* bench/llama_decode.py --new-tokens 32 --runs 1 --warmup 1 on the H200 */
static void test_fixture_llama(void **state)
{
    (void)state;
    struct lp_trace *t = fixture("llama");
    struct lp_run r;
    analyze(t, NULL, &r);
    const struct lp_stage_report *p = stage(&r, "prefill"), *d = stage(&r, "decode"),
                                 *w = stage(&r, "warmup");
    assert_non_null(p);
    assert_non_null(d);
    assert_non_null(w);
    assert_int_equal(p->occurrences, 1);
    assert_int_equal(d->occurrences, 32);
    assert_int_equal(w->occurrences, 33);
    assert_int_equal(p->tokens, 512);
    assert_int_equal(d->tokens, 32);
    assert_int_equal(r.attribution.by_launch, t->n_kernels + t->n_memcpys + t->n_memsets);
    /* every piece of GPU work is in exactly one stage */
    uint64_t sum = 0;
    size_t kernels = 0;
    for (size_t i = 0; i < r.n_stages; i++) {
        sum += r.stages[i].gpu_ns;
        kernels += r.stages[i].kernels;
    }
    assert_int_equal(sum, r.all_kernels.gpu_ns);
    assert_int_equal(kernels, t->n_kernels);
    /* TPOT: the mean decode range, as the benchmark's own timer measures it */
    assert_true(fabs(r.llm.tpot_s * 1e9 - d->wall.mean) < 1);
    assert_true(r.llm.ttft_s > 0.005 && r.llm.ttft_s < 0.05);
    /* decode of a 1.1B model at batch 1 is GEMV-bound: GEMMs lead its table */
    assert_int_equal(r.cats[d->top.v[0].group], LP_KCAT_GEMM);
    assert_non_null(strstr(r.names[d->top.v[0].group], "nvjet"));
    assert_true(d->busy_share > 0 && d->busy_share < 1);
    assert_true(r.power.samples > 10);
    assert_true(d->power_mean_w > 50 && d->power_mean_w < 700);
    int launch_bound = 0;
    for (size_t i = 0; i < r.n_findings; i++) {
        struct lp_finding_text text;
        lp_text_finding(&r, &r.findings[i], &text);
        launch_bound |= r.findings[i].code == LP_FINDING_LAUNCH_BOUND &&
                        r.findings[i].unit == LP_FINDING_UNIT_STEP &&
                        !strcmp(text.title, "Decode is launch bound");
    }
    assert_true(launch_bound);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Names that are not UTF-8 (a Latin-1 NVTX range, a name cut inside a character, an
 * overlong form, a surrogate) reach every writer as '?' in their place, with one reader
 * warning: before, the JSON writers dropped such rows without a word. */
static void test_names_not_utf8(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    device(&b);
    range(&b, "prefill tokens=8", 1, 0, 10000);
    range(&b, "caf\xe9 op", 1, 100, 9000);
    kernel(&b, "k_\xc3", 1, 200, 300, 400);                 /* cut after its first byte */
    kernel(&b, "k_\xc0\xaf_\xed\xa0\x80_\xe2\x82\xac", 1, 500, 600, 800); /* ..., then a euro */
    struct lp_trace *t = tb_read(&b, 1);
    assert_int_equal(t->n_warnings, 1);
    assert_non_null(strstr(t->warnings[0], "7 bytes of names or header values were not UTF-8"));
    struct lp_run r;
    analyze(t, NULL, &r);
    char *json = write_to_string(lp_report_run_json, &r);
    json_error_t je;
    json_t *root = json_loads(json, 0, &je);
    assert_non_null(root);
    const char *want[] = {"caf? op", "k_?", "k_??_???_\xe2\x82\xac"};
    for (size_t w = 0; w < 3; w++)
        assert_non_null(strstr(json, want[w]));
    assert_int_equal(json_array_size(json_object_get(json_object_get(root, "kernels"), "top")), 2);
    json_decref(root);
    free(json);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* tests/gpu/torch_nvtx.py: user ranges and emit_nvtx operators, no stages */
static void test_fixture_torch_operators(void **state)
{
    (void)state;
    struct lp_trace *t = fixture("torch");
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.n_stages, 1);
    assert_int_equal(r.stages[0].kind, LP_STAGE_KIND_RUN);
    int matmul = 0, relu = 0;
    for (size_t i = 0; i < r.n_ops; i++) {
        if (!strcmp(r.ops[i].name, "aten::matmul"))
            matmul = 1;
        if (!strcmp(r.ops[i].name, "aten::relu")) {
            relu = 1;
            assert_true(r.ops[i].kernels >= 1);
        }
    }
    assert_true(matmul && relu);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* bench/llama_decode.py --emit-nvtx --layers 4 --new-tokens 8: aten operator ranges inside
 * the stage ranges */
static void test_fixture_llama_operators(void **state)
{
    (void)state;
    struct lp_trace *t = fixture("llama-ops");
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(stage(&r, "prefill")->occurrences, 1);
    assert_int_equal(stage(&r, "decode")->occurrences, 8);
    assert_int_equal(r.attribution.by_launch, t->n_kernels + t->n_memcpys + t->n_memsets);
    const struct lp_op_row *lin = NULL, *mm = NULL;
    uint64_t self = 0;
    for (size_t i = 0; i < r.n_ops; i++) {
        if (!strcmp(r.ops[i].name, "aten::linear"))
            lin = &r.ops[i];
        if (!strcmp(r.ops[i].name, "aten::mm"))
            mm = &r.ops[i];
        self += r.ops[i].self_gpu_ns;
    }
    assert_non_null(lin);
    assert_non_null(mm);
    /* linear runs its GEMMs through mm: all of linear's GPU time is mm's own */
    assert_int_equal(lin->self_gpu_ns, 0);
    assert_int_equal(mm->self_gpu_ns, mm->gpu_ns);
    assert_true(lin->gpu_ns >= mm->gpu_ns && lin->gpu_ns > 0);
    assert_int_equal(r.cats[mm->top_group[0]], LP_KCAT_GEMM);
    /* self time adds up to no more than the GPU time of the run */
    assert_true(self <= r.all_kernels.gpu_ns);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* the SIGKILLed run: no end chunk; the report shows what is there */
static void test_fixture_killed(void **state)
{
    (void)state;
    struct lp_trace *t = fixture("killed");
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_false(t->complete);
    assert_true(r.all_kernels.gpu_ns > 0);
    int flagged = 0;
    flagged = finding(&r, LP_FINDING_TRACE_NOT_WHOLE) != NULL;
    assert_true(flagged);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* ---- scripts written the common way (tests/gpu/hf_loop.py, hf_generate.py,
 * graph_decode.py on the H200): one range per prompt and per decode loop, no token counts, an
 * unnamed warm-up request first; the script's own timer and the model's config.json beside
 * the trace ---- */

struct timed {
    double ttft_ms, tpot_ms;      /* medians over the timed requests */
    size_t requests;              /* timed ones (the warm-up left out) */
    int64_t steps, prompt, batch; /* decode steps per request, prompt per sequence */
};

static double median3(double *v, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static struct timed read_timer(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/timer.json", LP_FIXTURES, name);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    assert_non_null(root);
    struct timed x = {0};
    double ttft[16], tpot[16];
    json_t *reqs = json_object_get(root, "requests"), *q;
    size_t i;
    json_array_foreach(reqs, i, q)
    {
        if (json_is_true(json_object_get(q, "warmup")))
            continue;
        json_t *tt = json_object_get(q, "ttft_ms");
        ttft[x.requests] = json_real_value(tt ? tt : json_object_get(q, "prefill_ms"));
        tpot[x.requests] = json_real_value(json_object_get(q, "tpot_ms"));
        x.steps = json_integer_value(json_object_get(q, "decode_steps"));
        x.requests++;
        assert_true(x.requests < 16);
    }
    x.ttft_ms = median3(ttft, x.requests);
    x.tpot_ms = median3(tpot, x.requests);
    x.prompt = json_integer_value(json_object_get(root, "prompt"));
    x.batch = json_integer_value(json_object_get(root, "batch"));
    json_decref(root);
    return x;
}

/* Analyses fixture NAME with its config.json; checks what holds for every such script:
 * the warm-up request set apart, TTFT within 10 % and TPOT within 3 % of the script's own
 * timer, every decode step counted. */
static void harness_with(const char *name, struct lp_run *r, struct lp_trace **t,
                         struct timed *x, int64_t prefill_tokens, double ttft_tol);

static void harness(const char *name, struct lp_run *r, struct lp_trace **t, struct timed *x)
{
    harness_with(name, r, t, x, 0, 0.10);
}

/* harness() with --prefill-tokens PREFILL_TOKENS (0: none) and TTFT within TTFT_TOL */
static void harness_with(const char *name, struct lp_run *r, struct lp_trace **t,
                         struct timed *x, int64_t prefill_tokens, double ttft_tol)
{
    static struct lp_model m;
    static struct lp_gpu_table gpus;
    char err[256], cfg[512];
    snprintf(cfg, sizeof cfg, "%s/%s/config.json", LP_FIXTURES, name);
    assert_int_equal(lp_model_load(cfg, &m, err, sizeof err), 0);
    if (!gpus.n)
        assert_int_equal(lp_gpu_table_load(&gpus, NULL, err, sizeof err), 0);
    *t = fixture(name);
    *x = read_timer(name);
    struct lp_run_options o = {.model = &m, .gpus = &gpus, .prefill_tokens = prefill_tokens};
    analyze(*t, &o, r);
    const struct lp_llm_metrics *l = &r->llm;
    assert_true(l->found);
    assert_int_not_equal(r->warmup.cause, LP_WARMUP_NONE);
    assert_int_equal(l->requests, x->requests);
    assert_int_equal(l->ttft.n, x->requests);
    assert_int_equal(l->tpot.n, x->requests);
    assert_int_equal(l->decode_steps, x->steps * (int64_t)x->requests);
    double dt = fabs(l->ttft_s * 1e3 - x->ttft_ms) / x->ttft_ms;
    double dp = fabs(l->tpot_s * 1e3 - x->tpot_ms) / x->tpot_ms;
    print_message("%s: TTFT %.3f ms (timer %.3f, %+.2f %%), TPOT %.3f ms (timer %.3f, %+.2f %%)\n",
                  name, l->ttft_s * 1e3, x->ttft_ms, 100 * dt, l->tpot_s * 1e3, x->tpot_ms,
                  100 * dp);
    assert_true(dt < ttft_tol);
    assert_true(dp < 0.03);
    assert_true(l->itl.n >= (size_t)(x->steps * (int64_t)x->requests));
}

static const struct lp_stage_report *kind_stage(const struct lp_run *r, enum lp_stage_kind k)
{
    for (size_t i = 0; i < r->n_stages; i++)
        if (r->stages[i].kind == k && r->stages[i].occurrences)
            return &r->stages[i];
    return NULL;
}

/* HF Llama: steps from the lm_head, prompt and batch from GEMM shapes, MFU computed; the
 * measured GEMM FLOPs equal the model's linear FLOPs per prefill and per step */
static void test_harness_llama(void **state)
{
    (void)state;
    const char *names[] = {"hf-llama", "hf-llama-b4"};
    for (size_t n = 0; n < 2; n++) {
        struct lp_run r;
        struct lp_trace *t;
        struct timed x;
        harness(names[n], &r, &t, &x);
        assert_int_equal(r.warmup.cause, LP_WARMUP_TTFT);
        assert_int_equal(r.warmup.occurrences, 2);
        assert_int_equal(r.llm.batch, x.batch);
        assert_int_equal(r.llm.batch_source, LP_TOKENS_SHAPES);
        assert_int_equal(r.llm.prompt_tokens, x.prompt * x.batch);
        assert_int_equal(r.llm.prefill_source, LP_TOKENS_SHAPES);
        assert_int_equal(r.llm.steps_source, LP_STEPS_LM_HEAD);
        assert_int_equal(r.llm.prefill_logits, 2); /* a plain forward: logits for all tokens */
        assert_true(r.util.has && r.util.mfu > 0 && r.util.mbu > 0);
        const struct lp_stage_report *p = kind_stage(&r, LP_STAGE_KIND_PREFILL),
                                     *d = kind_stage(&r, LP_STAGE_KIND_DECODE);
        assert_true(fabs(p->gemm_vs_linear - 1) < 0.001);
        assert_true(fabs(d->gemm_vs_linear - 1) < 0.001);
        assert_true(p->gemm_coverage > 0.99); /* every GEMM kernel came from cuBLAS */
        /* the warm-up's GEMM calls are counted, not in the table */
        assert_true(r.gemm.warmup_calls > 0);
        for (size_t i = 0; i < r.gemm.n_rows; i++)
            assert_int_not_equal(r.stages[r.gemm.rows[i].stage].kind, LP_STAGE_KIND_WARMUP);
        lp_run_free(&r);
        lp_trace_free(t);
    }
}

/* Hardware counters (record --counters) on the common harness, recorded on the H200: each
 * stage's segments found; dense Llama's prefill tensor FLOPs equal to the model's matmul
 * FLOPs (1.008: attention runs on the tensor cores too, so 1.031 of the cuBLAS calls' linear
 * FLOPs), its decode DRAM bytes per step to the model's weights and KV cache (1.010), and
 * decode's tensor work about 9 times the model's (one token padded to the MMA tile); the MoE's
 * counted FLOPs reach the model's where the cuBLAS shapes fall short (grouped experts). */
static void test_harness_counters(void **state)
{
    (void)state;
    struct lp_run r;
    struct lp_trace *t;
    struct timed x;
    harness("ctr-hf-llama", &r, &t, &x);
    assert_int_equal(r.counters.segments, 12);
    assert_int_equal(r.counters.outside, 8); /* warm-up's four, and the gaps after each stage */
    assert_non_null(strstr(r.counters.metrics, "sm__ops_path_tensor_src_bf16_dst_fp32.sum"));
    const struct lp_stage_report *p = kind_stage(&r, LP_STAGE_KIND_PREFILL),
                                 *d = kind_stage(&r, LP_STAGE_KIND_DECODE);
    assert_int_equal(p->ctr.segments, 2);
    assert_int_equal(d->ctr.segments, 2);
    assert_true(p->ctr.valid & (1u << LP_COUNTER_TENSOR_BF16));
    assert_true(fabs(p->ctr.vs_model_flops - 1) < 0.03);
    assert_true(p->ctr.vs_gemm_flops > 1 && p->ctr.vs_gemm_flops < 1.05);
    assert_true(fabs(d->ctr.vs_model_bytes - 1) < 0.10);
    assert_true(d->ctr.vs_model_flops > 8 && d->ctr.vs_model_flops < 10);
    assert_true(fabs(d->ctr.units - (double)d->steps) < 0.5);
    assert_true(p->ctr.executed_share > 0 && p->ctr.executed_share < 1 && d->ctr.mbu > 0 &&
                d->ctr.mbu < 1);
    lp_run_free(&r);
    lp_trace_free(t);

    harness("ctr-hf-moe", &r, &t, &x);
    p = kind_stage(&r, LP_STAGE_KIND_PREFILL);
    d = kind_stage(&r, LP_STAGE_KIND_DECODE);
    assert_true(p->gemm_vs_model < 0.6);       /* the cuBLAS shapes alone fall short */
    assert_true(p->ctr.vs_model_flops > 1.0);  /* the counters do not */
    assert_true(d->ctr.vs_model_flops > 1.0);
    assert_true(fabs(d->ctr.vs_model_bytes - 1) < 0.10);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* PM sampling (record --pm-sampling 200), recorded on the H200. counters_check's square GEMM
 * kernel lies in the sample whose tensor pipe is busiest, samples a millisecond away from
 * any kernel see an idle tensor pipe (the samples are on the trace's clock). The common
 * harness recorded --counters-only --pm-sampling 200, what --light is now (no kernels):
 * samples fall in prefill, decode and outside; prefill keeps the tensor pipe busier than
 * decode; decode's DRAM bandwidth is the weights read per step; the whole run's DRAM
 * bytes read equal, within 1 %, those the range profiler counted in another process of the
 * same program (ctr-hf-llama-only); nothing says how busy the GPU was. Counters held by
 * Nsight Compute in another process: no samples, one PM loss, the run whole. */
static void test_fixture_pm(void **state)
{
    (void)state;
    struct lp_trace *t = fixture("pm-check");
    assert_true(t->n_pm > 300);
    const struct lp_kernel_rec *big = NULL;
    for (size_t i = 0; i < t->n_kernels; i++)
        if (!big || lp_trace_kernel_end(t, &t->kernels[i]) - t->kernels[i].start >
                        lp_trace_kernel_end(t, big) - big->start)
            big = &t->kernels[i];
    assert_non_null(big);
    double in_big = 0, far_max = 0;
    size_t far = 0;
    for (size_t i = 0; i < t->n_pm; i++) {
        const struct lp_pm_sample *s = &t->pm[i];
        double tensor = lp_pm_value(s, LP_PM_TENSOR);
        if (s->start < lp_trace_kernel_end(t, big) && s->end > big->start && tensor > in_big)
            in_big = tensor;
        int near = 0;
        for (size_t k = 0; k < t->n_kernels && !near; k++)
            near = s->start < lp_trace_kernel_end(t, &t->kernels[k]) + 1000000 &&
                   s->end + 1000000 > t->kernels[k].start;
        if (!near) {
            far++;
            if (tensor > far_max)
                far_max = tensor;
        }
    }
    assert_true(in_big > 30); /* the kernel may straddle two samples */
    /* the busiest sample overlaps a kernel of that GEMM (it ran twice: warm-up and range) */
    const struct lp_pm_sample *top = &t->pm[0];
    for (size_t i = 0; i < t->n_pm; i++)
        if (lp_pm_value(&t->pm[i], LP_PM_TENSOR) > lp_pm_value(top, LP_PM_TENSOR))
            top = &t->pm[i];
    int top_in_gemm = 0;
    for (size_t k = 0; k < t->n_kernels; k++)
        top_in_gemm |= lp_trace_kernel_config(t, &t->kernels[k])->name ==
                           lp_trace_kernel_config(t, big)->name &&
                       top->start < lp_trace_kernel_end(t, &t->kernels[k]) &&
                       top->end > t->kernels[k].start;
    assert_true(top_in_gemm);
    assert_true(far > 100);
    assert_true(far_max < 1);
    lp_trace_free(t);

    static struct lp_model m;
    static struct lp_gpu_table gpus;
    char err[256];
    assert_int_equal(lp_model_load(LP_FIXTURES "/pm-hf-llama-only/config.json", &m, err,
                                   sizeof err), 0);
    assert_int_equal(lp_gpu_table_load(&gpus, NULL, err, sizeof err), 0);
    struct lp_run_options o = {.model = &m, .gpus = &gpus};
    struct lp_run r;
    t = fixture("pm-hf-llama-only");
    analyze(t, &o, &r);
    assert_int_equal(r.kernels_recorded, 0);
    assert_int_equal(r.pm.all.samples, t->n_pm);
    assert_int_equal(r.pm.interval_ns, 200000);
    const struct lp_stage_report *p = kind_stage(&r, LP_STAGE_KIND_PREFILL),
                                 *d = kind_stage(&r, LP_STAGE_KIND_DECODE);
    assert_true(p->pm.samples > 50 && d->pm.samples > 500);
    assert_int_equal(p->pm.samples + d->pm.samples + r.pm.outside.samples, r.pm.all.samples);
    assert_true(p->pm.mean[LP_PM_TENSOR] > 5 * d->pm.mean[LP_PM_TENSOR]);
    assert_true(d->pm.dram_gbs > 100 && d->pm.mbu > 0.01 && d->pm.mbu < 0.2);
    assert_true(r.pm.n_bins > 100 && r.pm.n_bins <= LP_PM_BINS);
    /* the summary says no kernels were recorded, not that the GPU sat idle */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(lp_report_summary_md(f, &r), 0);
    fclose(f);
    assert_non_null(strstr(buf, "No kernels were recorded (--light)"));
    assert_null(strstr(buf, "The GPU was busy"));
    free(buf);
    /* how busy the GPU was is not known: absent, not 0; no finding built on it (launch
     * bound), and no writer prints it as a number */
    assert_true(isnan(r.timeline.busy_share) && isnan(d->busy_share) && isnan(d->host_wait_share) &&
                isnan(d->kernels_per_occurrence));
    for (size_t i = 0; i < r.n_findings; i++)
        assert_int_not_equal(r.findings[i].code, LP_FINDING_LAUNCH_BOUND);
    buf = NULL;
    f = open_memstream(&buf, &len);
    assert_int_equal(lp_report_run_md(f, &r), 0);
    assert_int_equal(lp_report_stages_csv(f, &r), 0);
    assert_int_equal(lp_report_run_json(f, &r), 0);
    fclose(f);
    assert_null(strstr(buf, "nan"));
    assert_non_null(strstr(buf, "| decode | 2 | "));
    assert_non_null(strstr(buf, " | - | - | - | - | - | - | not found |"));
    assert_non_null(strstr(buf, "Kernels: not recorded (--light)"));
    assert_non_null(strstr(buf, "\"busy_share\": null"));
    free(buf);
    double pm_read = 0;
    for (size_t i = 0; i < t->n_pm; i++)
        pm_read += lp_pm_value(&t->pm[i], LP_PM_DRAM_READ);
    struct lp_trace_summary sum; /* what llmprof info prints: the bytes as a total */
    assert_int_equal(lp_trace_summarize(t, &sum), LP_OK);
    assert_true(sum.pm_value[LP_PM_DRAM_READ] == pm_read && sum.pm_n[LP_PM_TENSOR] == t->n_pm);
    assert_true(sum.pm_value[LP_PM_TENSOR] > 0 && sum.pm_value[LP_PM_TENSOR] < 100);
    lp_trace_summary_free(&sum);
    lp_run_free(&r);
    lp_trace_free(t);
    /* the same harness recorded with --light (PM sampling): its header says light, no kernels;
     * both stages vary (CV over 10 %) and the summary gives that advice once */
    t = fixture("pm-hf-llama-light");
    assert_string_equal(lp_trace_meta(t, "mode"), "light");
    assert_int_equal(t->n_kernels, 0);
    assert_true(t->n_pm > 10000);
    analyze(t, &o, &r);
    size_t varies = 0;
    for (size_t i = 0; i < r.n_findings; i++)
        varies += r.findings[i].code == LP_FINDING_VARIANCE;
    assert_int_equal(varies, 2);
    buf = NULL;
    f = open_memstream(&buf, &len);
    assert_int_equal(lp_report_summary_md(f, &r), 0);
    fclose(f);
    const char *once = strstr(buf, "Stage time varies between repeats");
    assert_non_null(once);
    assert_null(strstr(once + 1, "Stage time varies between repeats"));
    free(buf);
    lp_run_free(&r);
    /* with a prompt length MFU is computed (over wall time); the finding on it reads no
     * kernel shares and prints no NaN in any writer */
    o.prefill_tokens = 512;
    analyze(t, &o, &r);
    assert_true(kind_stage(&r, LP_STAGE_KIND_PREFILL)->has_util);
    size_t low_mfu = 0;
    for (size_t i = 0; i < r.n_findings; i++)
        if (r.findings[i].code == LP_FINDING_PREFILL_LOW_MFU) {
            struct lp_finding_text ft;
            lp_text_finding(&r, &r.findings[i], &ft);
            assert_non_null(strstr(ft.advice, "Record without --light"));
            low_mfu++;
        }
    assert_int_equal(low_mfu, 1);
    buf = NULL;
    f = open_memstream(&buf, &len);
    assert_int_equal(lp_report_run_md(f, &r), 0);
    assert_int_equal(lp_report_summary_md(f, &r), 0);
    assert_int_equal(lp_report_stages_csv(f, &r), 0);
    assert_int_equal(lp_report_run_json(f, &r), 0);
    fclose(f);
    assert_null(strstr(buf, "nan"));
    free(buf);
    lp_run_free(&r);
    lp_trace_free(t);
    t = fixture("ctr-hf-llama-only");
    assert_int_equal(t->n_kernels, 0);
    double ctr_read = 0;
    for (size_t i = 0; i < t->n_counters; i++)
        ctr_read += (double)t->counters[i].value[LP_COUNTER_DRAM_READ];
    assert_int_equal(lp_trace_summarize(t, &sum), LP_OK);
    assert_true(sum.counter_total[LP_COUNTER_DRAM_READ] == ctr_read &&
                (sum.counter_valid & 1u << LP_COUNTER_DRAM_READ));
    lp_trace_summary_free(&sum);
    print_message("DRAM read: PM samples %.6g, range profiler %.6g (%+.3f %%)\n", pm_read,
                  ctr_read, 100 * (pm_read / ctr_read - 1));
    assert_true(fabs(pm_read / ctr_read - 1) < 0.01);
    lp_trace_free(t);

    t = fixture("pm-busy");
    assert_int_equal(t->n_pm, 0);
    assert_true(t->n_kernels > 0);
    size_t pm_losses = 0;
    for (size_t i = 0; i < t->n_losses; i++)
        pm_losses += t->losses[i].source == LP_LOSS_SOURCE_PM;
    assert_int_equal(pm_losses, 1);
    lp_trace_free(t);
}

/* Three cuBLAS GEMMs, one per stage range, measured twice in one run (counters_check
 * --twice): each range's counters against Nsight Compute's values for the same kernel in
 * another process (ncu.csv beside the trace, `ncu --metrics ... --cache-control none`).
 * Tensor FLOPs equal in all six (2mnk; 8 x 2mnk for the one-token GEMV, padded to the MMA
 * tile). The second three: DRAM read, DRAM written and L2 bytes within 2 % of ncu's. The
 * first range of the run also holds the range profiler's start: its square GEMM read 5 %
 * more from DRAM than the same GEMM in the fourth range (measured in 3 runs of each tool:
 * the second-range figures agreed within 0.2 %, the first range's excess was the same). */
static void test_fixture_counters_ncu(void **state)
{
    (void)state;
    struct lp_trace *t = fixture("ctr-check");
    /* ncu.csv, the second measurement of each kernel */
    static const struct {
        double flops, dram_read, dram_write, l2;
    } ncu[] = {{137438953472.0, 141200896, 27830528, 1055787584},
               {1073741824.0, 130889984, 8046592, 209159712},
               {4294967296.0, 10479104, 0, 59603872}};
    const struct lp_counters *seg[6];
    size_t k = 0;
    for (size_t i = 0; i < t->n_counters && k < 6; i++)
        if (t->counters[i].value[LP_COUNTER_TENSOR_BF16])
            seg[k++] = &t->counters[i]; /* the others: the segments between the ranges */
    assert_int_equal(k, 6);
    for (k = 0; k < 6; k++)
        assert_true((double)seg[k]->value[LP_COUNTER_TENSOR_BF16] == ncu[k % 3].flops);
    for (k = 0; k < 3; k++) {
        const struct lp_counters *c = seg[3 + k];
        double dr = (double)c->value[LP_COUNTER_DRAM_READ] / ncu[k].dram_read - 1;
        double l2 = (double)c->value[LP_COUNTER_L2_BYTES] / ncu[k].l2 - 1;
        print_message("GEMM %zu: FLOPs equal; DRAM read %+.2f %%, L2 %+.2f %% of ncu's\n", k,
                      100 * dr, 100 * l2);
        assert_true(fabs(dr) < 0.02 && fabs(l2) < 0.02);
        if (ncu[k].dram_write > 1e6) {
            double dw = (double)c->value[LP_COUNTER_DRAM_WRITE] / ncu[k].dram_write - 1;
            print_message("GEMM %zu: DRAM written %+.2f %% of ncu's\n", k, 100 * dw);
            assert_true(fabs(dw) < 0.02);
        } else {
            assert_true(c->value[LP_COUNTER_DRAM_WRITE] < 4096);
        }
    }
    double first = (double)seg[0]->value[LP_COUNTER_DRAM_READ] /
                   (double)seg[3]->value[LP_COUNTER_DRAM_READ];
    print_message("square GEMM in the first range: DRAM read %.3f x the fourth's\n", first);
    assert_true(first > 1.03);
    lp_trace_free(t);
}

/* HF DeepSeek-V2-Lite: the routed experts run as CUTLASS grouped GEMMs no cuBLAS call
 * launched: GEMM time without shapes, its name demangled (1,270 characters mangled) */
static void test_harness_moe(void **state)
{
    (void)state;
    struct lp_run r;
    struct lp_trace *t;
    struct timed x;
    harness("hf-moe", &r, &t, &x);
    assert_int_equal(r.llm.prompt_tokens, x.prompt);
    assert_int_equal(r.llm.steps_source, LP_STEPS_LM_HEAD);
    assert_true(r.util.has);
    const struct lp_stage_report *p = kind_stage(&r, LP_STAGE_KIND_PREFILL);
    assert_true(p->gemm_unshaped_ns > p->gemm_ns); /* experts outweigh the cuBLAS GEMMs */
    assert_true(p->gemm_coverage > 0.1 && p->gemm_coverage < 0.5);
    assert_true(p->gemm_vs_linear > 0.3 && p->gemm_vs_linear < 0.6);
    assert_true(r.gemm.n_unshaped >= 2);
    const char *top = r.names[r.gemm.unshaped[0].group];
    assert_non_null(strstr(top, "cutlass::device_kernel<"));
    assert_non_null(strstr(top, "GemmUniversal"));
    assert_true(strncmp(r.short_names[r.gemm.unshaped[0].group], "GemmUniversal<", 14) == 0);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* tests/gpu/triton_decoder.py (on the H200, format 1.8): a Llama-style decoder whose
 * matmuls are all one Triton kernel named mm, no cuBLAS call, the one-range harness. Its decode
 * steps are found from the repeating kernel sequence (TPOT within 3 % of its timer), the mm
 * kernels are GEMMs (time without shapes), and no finding calls GEMMs small where they are the
 * prefill's largest part. Under --counters (with the prompt given: no shapes tell it) the
 * prefill executed the model's matmul FLOPs (1.01x: the script's own analytic count is
 * 2.7716e11) and decode 15.8x them, one token padded to a 16-row tile, said as the cause; its
 * TTFT is within 15 % (13.2 %): the range profiler reads its counters at each range's end, on
 * the script's timer but after the GPU work. Without ranges nothing is inferred (no shapes). */
static void test_harness_triton(void **state)
{
    (void)state;
    struct lp_run r;
    struct lp_trace *t;
    struct timed x;
    harness("triton-dec", &r, &t, &x);
    assert_int_equal(r.llm.steps_source, LP_STEPS_SEQUENCE);
    assert_int_equal(r.gemm.calls, 0); /* no cuBLAS */
    const struct lp_stage_report *p = kind_stage(&r, LP_STAGE_KIND_PREFILL),
                                 *d = kind_stage(&r, LP_STAGE_KIND_DECODE);
    assert_true(d->cat_share[LP_KCAT_GEMM] > 0.4);
    assert_true(p->cat_share[LP_KCAT_GEMM] > p->cat_share[LP_KCAT_ELEMENTWISE]);
    assert_true(p->gemm_unshaped_ns > 0 && p->gemm_coverage == 0);
    for (size_t i = 0; i < r.n_findings; i++)
        assert_int_not_equal(r.findings[i].code, LP_FINDING_PREFILL_FEW_GEMMS);
    lp_run_free(&r);
    lp_trace_free(t);

    harness_with("triton-dec-ctr", &r, &t, &x, 512, 0.15);
    p = kind_stage(&r, LP_STAGE_KIND_PREFILL);
    d = kind_stage(&r, LP_STAGE_KIND_DECODE);
    assert_true(r.llm.ttft_s * 1e3 < x.ttft_ms);
    assert_true(r.util.has);
    assert_true(p->ctr.vs_model_flops > 1.0 && p->ctr.vs_model_flops < 1.03);
    assert_int_equal(p->ctr.excess, 0);
    assert_true(d->ctr.vs_model_flops > 15 && d->ctr.vs_model_flops < 17);
    assert_int_equal(d->ctr.excess, LP_EXCESS_TILE_PADDING);
    assert_int_equal(d->ctr.pass_tokens, 1);
    for (size_t i = 0; i < r.n_findings; i++)
        assert_int_not_equal(r.findings[i].code, LP_FINDING_PREFILL_FEW_GEMMS);
    lp_run_free(&r);
    lp_trace_free(t);

    struct lp_gpu_table gpus;
    char err[256];
    assert_int_equal(lp_gpu_table_load(&gpus, NULL, err, sizeof err), 0);
    t = fixture("triton-dec-nonvtx");
    struct lp_run_options o = {.gpus = &gpus};
    analyze(t, &o, &r);
    assert_false(r.llm.found);
    assert_false(r.stages_inferred);
    assert_true(r.stages[0].cat_share[LP_KCAT_GEMM] > 0.4);
    lp_run_free(&r);
    lp_trace_free(t);
    lp_gpu_table_free(&gpus);
}

/* Calls alike but for a size that grows a token a step are one row: HF's MLA runs kv_b_proj
 * (4096 x ctx x 512, k the kv_lora_rank) over the whole context every decode step, 15 sizes
 * 513..527 on DeepSeek-V2-Lite; said as MLA's expansion, and the counters' decode excess
 * names it beside tile padding and the grouped experts. Dense Llama has no such row. */
static void test_gemm_steps_row(void **state)
{
    (void)state;
    struct lp_run r;
    struct lp_trace *t;
    struct timed x;
    harness("ctr-hf-moe", &r, &t, &x);
    const struct lp_gemm_row *kv = NULL;
    size_t n_vary = 0;
    for (size_t i = 0; i < r.gemm.n_rows; i++) {
        const struct lp_gemm_row *g = &r.gemm.rows[i];
        if (g->vary_dim) {
            n_vary++;
            kv = g;
        }
        /* no row left of the sizes merged */
        if (!g->vary_dim && g->call.m == 4096 && g->call.k == 512 &&
            r.stages[g->stage].kind == LP_STAGE_KIND_DECODE)
            fail_msg("a kv_b_proj row left unmerged: n %llu", (unsigned long long)g->call.n);
    }
    assert_int_equal(n_vary, 1);
    assert_int_equal(kv->vary_dim, 'n');
    assert_int_equal(kv->call.n, 513);
    assert_int_equal(kv->vary_lo, 513);
    assert_int_equal(kv->vary_hi, 527);
    assert_int_equal(kv->vary_step, 1);
    assert_int_equal(kv->vary_values, 15);
    assert_int_equal(kv->vary, LP_GEMM_VARY_MLA);
    assert_true(kv->hints & LP_GEMM_HINT_STEPS);
    assert_false(kv->hints & LP_GEMM_HINT_UNALIGNED);
    /* 27 layers x 15 steps x 2 requests */
    assert_int_equal(kv->calls, 27 * 15 * 2);
    assert_true(fabs(kv->flops - 2.0 * 4096 * 512 * 27 * 2 * (513 + 527) * 15 / 2) < 1);
    char hint[512];
    lp_text_gemm_hint(kv, hint, sizeof hint);
    assert_non_null(strstr(hint, "n runs 513..527 by 1 (15 sizes, one row)"));
    assert_non_null(strstr(hint, "kv_lora_rank"));
    const struct lp_stage_report *p = kind_stage(&r, LP_STAGE_KIND_PREFILL),
                                 *d = kind_stage(&r, LP_STAGE_KIND_DECODE);
    assert_int_equal(d->ctr.excess,
                     LP_EXCESS_TILE_PADDING | LP_EXCESS_MLA | LP_EXCESS_MOE);
    assert_int_equal(p->ctr.excess, LP_EXCESS_MOE); /* 512 tokens: no tile padding */
    /* the measured/analytic 11.3 of decode's cuBLAS FLOPs is that row: 0.39 without it */
    assert_true(d->gemm_vs_model > 10);
    assert_true(d->gemm_context_flops > 0.9 * d->gemm_flops);
    assert_true(d->gemm_vs_model_rest > 0.2 && d->gemm_vs_model_rest < 0.6);
    assert_true(p->gemm_context_flops == 0);
    char *md = write_to_string(lp_report_run_md, &r);
    assert_non_null(strstr(md, "| decode | 4096 x 513..527 x 512 |"));
    assert_non_null(strstr(md, "decode: 97 % of the measured GEMM FLOPs are calls over the "
                               "whole context every step"));
    assert_non_null(strstr(md, "- decode: the tensor cores executed 79.9 x the model's matmul "
                               "FLOPs per step: 1 token a pass padded"));
    free(md);
    json_t *j = lp_report_run_json_value(&r);
    json_t *rows = json_object_get(json_object_get(j, "gemms"), "shapes"), *row;
    size_t i, sized = 0;
    json_array_foreach(rows, i, row)
    {
        json_t *sz = json_object_get(row, "sizes");
        if (json_is_null(sz))
            continue;
        sized++;
        assert_string_equal(json_string_value(json_object_get(sz, "cause")), "mla_kv_expansion");
        assert_int_equal(json_integer_value(json_object_get(sz, "to")), 527);
    }
    assert_int_equal(sized, 1);
    json_decref(j);
    lp_run_free(&r);
    lp_trace_free(t);

    harness("hf-llama", &r, &t, &x);
    for (size_t k = 0; k < r.gemm.n_rows; k++)
        assert_int_equal(r.gemm.rows[k].vary_dim, 0);
    const struct lp_stage_report *ld = kind_stage(&r, LP_STAGE_KIND_DECODE);
    assert_int_equal(ld->ctr.segments, 0);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Token and batch flags checked against the trace (HF Llama: 512-token prompts, batch 1,
 * 31 decode steps a request): each one that disagrees is a note naming both values, said in
 * summary.md; the flag's value is used; flags that agree say nothing. */
static void test_flags_vs_trace(void **state)
{
    (void)state;
    char err[256], cfg[512];
    struct lp_model m;
    struct lp_gpu_table gpus;
    snprintf(cfg, sizeof cfg, "%s/hf-llama/config.json", LP_FIXTURES);
    assert_int_equal(lp_model_load(cfg, &m, err, sizeof err), 0);
    assert_int_equal(lp_gpu_table_load(&gpus, NULL, err, sizeof err), 0);
    struct lp_trace *t = fixture("hf-llama");
    const struct {
        int64_t pre, dec, batch;
        enum lp_note_code code;
        int64_t seen;
        const char *says;
    } cases[] = {
        {999, 0, 0, LP_NOTE_PREFILL_TOKENS_GIVEN, 512,
         "--prefill-tokens 999 was given, but the GEMMs of 4 prefill ranges carry 512 tokens"},
        {0, 40, 0, LP_NOTE_DECODE_TOKENS_GIVEN, 31,
         "--decode-tokens 40 was given, but 4 decode ranges show 31"},
        {0, 0, 4, LP_NOTE_BATCH_GIVEN, 1,
         "--batch 4 was given, but the decode GEMMs of 4 ranges run 1 sequence a step"},
        {512, 31, 1, LP_NOTE_CODE_COUNT, 0, NULL},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        struct lp_run_options o = {.model = &m, .gpus = &gpus, .prefill_tokens = cases[c].pre,
                                   .decode_tokens = cases[c].dec, .batch = cases[c].batch};
        struct lp_run r;
        analyze(t, &o, &r);
        size_t flagged = 0;
        for (size_t i = 0; i < r.n_notes; i++) {
            const struct lp_note *n = &r.notes[i];
            if (n->code != LP_NOTE_PREFILL_TOKENS_GIVEN &&
                n->code != LP_NOTE_DECODE_TOKENS_GIVEN && n->code != LP_NOTE_BATCH_GIVEN)
                continue;
            flagged++;
            assert_int_equal(n->code, cases[c].code);
            assert_int_equal(n->of, cases[c].seen);
        }
        assert_int_equal(flagged, cases[c].says != NULL);
        char *sum = write_to_string(lp_report_summary_md, &r);
        if (cases[c].says) {
            assert_non_null(strstr(sum, "**A flag disagrees with the trace:**"));
            assert_non_null(strstr(sum, cases[c].says));
        } else {
            assert_null(strstr(sum, "A flag disagrees"));
        }
        free(sum);
        if (cases[c].pre) /* the flag's value is used */
            assert_int_equal(r.llm.prompt_tokens, cases[c].pre);
        assert_true(r.util.has);
        lp_run_free(&r);
    }
    /* counts the run cannot hold are withheld, not turned into 0 ns steps or MFU past 100 % */
    const struct {
        int64_t pre, dec, batch;
    } bad[] = {{INT64_MAX, 0, 0}, {0, INT64_MAX, 0}, {0, 100000, 0}, {0, 0, 1000000}};
    for (size_t c = 0; c < sizeof bad / sizeof *bad; c++) {
        struct lp_run_options o = {.model = &m, .gpus = &gpus, .prefill_tokens = bad[c].pre,
                                   .decode_tokens = bad[c].dec, .batch = bad[c].batch};
        struct lp_run r;
        analyze(t, &o, &r);
        int impossible = 0;
        for (size_t i = 0; i < r.n_notes; i++)
            impossible |= r.notes[i].code == LP_NOTE_TOKENS_IMPOSSIBLE;
        if (bad[c].batch) { /* 1,000,000 sequences a step: 10,000 % of the peak */
            assert_false(impossible);
            assert_false(r.util.has);
            assert_int_equal(r.util.status, LP_UTIL_OVER_PEAK);
            assert_true(r.util.over > 1);
            char *md = write_to_string(lp_report_run_md, &r);
            assert_non_null(strstr(md, "which no run reaches"));
            free(md);
        } else {
            assert_true(impossible);
            if (bad[c].dec) { /* the trace's own steps, not 0 ns steps */
                assert_int_equal(r.llm.steps_source, LP_STEPS_LM_HEAD);
                assert_int_equal(r.llm.decode_steps, 31 * 4 - 31); /* the warm-up's apart */
                assert_true(r.llm.tpot_s > 0.010);
            } else { /* the prompt from the GEMM shapes */
                assert_int_equal(r.llm.prompt_tokens, 512);
            }
        }
        for (size_t s = 0; s < r.n_stages; s++)
            assert_true(!r.stages[s].has_util || (r.stages[s].mfu <= 1 && r.stages[s].mbu <= 1));
        lp_run_free(&r);
    }
    lp_trace_free(t);
    lp_gpu_table_free(&gpus);
}

/* A real trace (hf-llama, format 1.7: its chunks carry no numbers) with every RECORDS chunk
 * written twice, as a careless copy might: the reader reads each once, so the kernels and
 * TTFT/TPOT are the original's; the report says the file was altered (summary and finding),
 * and a diff against the original marks the comparison doubtful. With a middle chunk removed
 * instead, its records are counted lost through the END chunk's account. */
static void test_altered_trace(void **state)
{
    (void)state;
    char cmd[512], path[512] = "", err[256];
    snprintf(cmd, sizeof cmd, "ls %s/hf-llama/*.lpt", LP_FIXTURES);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(path, sizeof path, p));
    pclose(p);
    path[strcspn(path, "\n")] = 0;
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    size_t size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *img = malloc(size), *twice = malloc(2 * size), *cut = malloc(size);
    assert_int_equal(fread(img, 1, size, f), size);
    fclose(f);
    size_t lt = 16, lc = 16, n = 0, removed = 0;
    memcpy(twice, img, 16);
    memcpy(cut, img, 16);
    for (size_t off = 16; off + 32 <= size; n++) {
        uint32_t type = (uint32_t)img[off + 4] | (uint32_t)img[off + 5] << 8;
        uint32_t payload = (uint32_t)img[off + 8] | (uint32_t)img[off + 9] << 8 |
                           (uint32_t)img[off + 10] << 16 | (uint32_t)img[off + 11] << 24;
        size_t len = 32 + payload;
        for (int k = 0; k < (type == 2 ? 2 : 1); k++) {
            memcpy(twice + lt, img + off, len);
            lt += len;
        }
        if (n == 3 && type == 2)
            removed = len;
        else {
            memcpy(cut + lc, img + off, len);
            lc += len;
        }
        off += len;
    }
    assert_true(removed > 0);
    struct lp_trace *orig = fixture("hf-llama"), *t, *c;
    assert_int_equal(lp_trace_read_mem(&t, twice, lt, "twice", err, sizeof err), LP_OK);
    assert_int_equal(lp_trace_read_mem(&c, cut, lc, "cut", err, sizeof err), LP_OK);
    assert_int_equal(t->altered, LP_TRACE_ALTERED_REPEATED);
    assert_int_equal(t->n_kernels, orig->n_kernels);
    assert_int_equal(t->records_unread, 0);
    assert_true(c->records_unread > 0 && c->n_kernels < orig->n_kernels);
    struct lp_run ro, rt, rc;
    analyze(orig, NULL, &ro);
    analyze(t, NULL, &rt);
    analyze(c, NULL, &rc);
    assert_true(fabs(rt.llm.tpot_s - ro.llm.tpot_s) < 1e-12);
    assert_true(fabs(rt.llm.ttft_s - ro.llm.ttft_s) < 1e-12);
    const struct lp_finding *fa = finding(&rt, LP_FINDING_TRACE_NOT_WHOLE);
    assert_non_null(fa);
    struct lp_finding_text x;
    lp_text_finding(&rt, fa, &x);
    assert_string_equal(x.title, "The trace file was altered after it was written");
    char *sum = write_to_string(lp_report_summary_md, &rt);
    assert_non_null(strstr(sum, "**The trace file was altered after it was written**"));
    assert_null(strstr(strstr(sum, "## What to look at"), "altered")); /* said once */
    free(sum);
    json_t *j = lp_report_run_json_value(&rt);
    json_t *alt = json_object_get(json_object_get(j, "trace"), "altered");
    assert_int_equal(json_array_size(alt), 1);
    assert_string_equal(json_string_value(json_array_get(alt, 0)), "repeated");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "trace"),
                                                        "records_unread")), 0);
    json_decref(j);
    assert_true(rc.lost_records >= c->records_unread && c->records_unread > 0);
    sum = write_to_string(lp_report_summary_md, &rc);
    assert_non_null(strstr(sum, "Some records were lost"));
    free(sum);
    sum = write_to_string(lp_report_summary_md, &ro);
    assert_null(strstr(sum, "altered"));
    free(sum);
    struct lp_diff d;
    struct lp_diff_options dopt = {0};
    assert_int_equal(lp_diff_build(&ro, &rt, &dopt, &d), LP_OK);
    assert_true(d.warnings & LP_DIFF_WARN_ALTERED);
    lp_diff_free(&d);
    lp_run_free(&ro);
    lp_run_free(&rt);
    lp_run_free(&rc);
    lp_trace_free(orig);
    lp_trace_free(t);
    lp_trace_free(c);
    free(img);
    free(twice);
    free(cut);
}

/* report.json's times are whole nanoseconds: no real under a key ending in _ns anywhere
 * (means and percentiles included), on a fixture with every table */
static void test_json_ns_integers(void **state)
{
    (void)state;
    struct lp_run r;
    struct lp_trace *t;
    struct timed x;
    harness("ctr-hf-llama", &r, &t, &x);
    json_t *j = lp_report_run_json_value(&r);
    json_t *stack[4096];
    int ns[4096];
    size_t top = 0, ints = 0;
    stack[top] = j;
    ns[top++] = 0;
    while (top) {
        json_t *v = stack[--top];
        int under = ns[top];
        if (json_is_object(v)) {
            const char *key;
            json_t *c;
            json_object_foreach(v, key, c)
            {
                size_t l = strlen(key);
                int k = l >= 3 && !strcmp(key + l - 3, "_ns");
                if ((k || under) && json_is_real(c))
                    fail_msg("report.json: %s is a real (%g)", key, json_real_value(c));
                ints += k && json_is_integer(c);
                assert_true(top < 4096);
                stack[top] = c;
                ns[top++] = k;
            }
        } else if (json_is_array(v)) {
            size_t i;
            json_t *c;
            json_array_foreach(v, i, c)
            {
                if (under && json_is_real(c))
                    fail_msg("report.json: element %zu of an _ns array is a real", i);
                assert_true(top < 4096);
                stack[top] = c;
                ns[top++] = under && json_is_array(c);
            }
        }
    }
    assert_true(ints > 50);
    json_t *ttft = json_object_get(json_object_get(j, "llm"), "ttft");
    assert_true(json_is_integer(json_object_get(ttft, "mean_ns")));
    assert_true(fabs((double)json_integer_value(json_object_get(ttft, "mean_ns")) -
                     r.llm.ttft.mean) <= 0.5);
    json_decref(j);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* examples/deepseek-ocr2/infer.py on the H200: DeepSeek-OCR-2 built from the repo's config,
 * NVTX ranges through forward hooks, the vision tower running inside the prefill's forward
 * (or inside generate(), with no prefill or decode range: those are inferred around the
 * vision, and the request starts with generate()'s own range).
 * The vision (and projector) ranges are cut out of the prefill as stages of their own; the
 * prompt's image slots and text tokens match the script's; crops are read off the
 * projector's GEMMs; each vision stage has its MFU; the TTFT splits into its parts; the MoE
 * experts' grouped GEMMs are timed per stage. */
static void test_harness_ocr2(void **state)
{
    (void)state;
    const char *names[] = {"deepseek-ocr2", "deepseek-ocr2-crops", "deepseek-ocr2-generate"};
    for (size_t n = 0; n < 3; n++) {
        int generate = n == 2; /* model.generate(): prefill and decode inferred */
        struct lp_run r;
        struct lp_trace *t;
        struct timed x;
        harness(names[n], &r, &t, &x);
        char path[512];
        snprintf(path, sizeof path, "%s/%s/timer.json", LP_FIXTURES, names[n]);
        json_t *timer = json_load_file(path, 0, NULL);
        assert_non_null(timer);
        int64_t visual = json_integer_value(json_object_get(timer, "visual_tokens"));
        int64_t text = json_integer_value(json_object_get(timer, "text_tokens"));
        int64_t crops = json_integer_value(json_object_get(timer, "crops"));
        json_decref(timer);
        assert_int_equal(r.warmup.cause, LP_WARMUP_TTFT);
        assert_int_equal(r.llm.prompt_tokens, x.prompt); /* the decoder's, vision apart */
        assert_int_equal(r.util.vision_tokens, visual);
        assert_int_equal(r.util.text_tokens, text);
        assert_int_equal(r.util.vision_crops, crops);
        assert_int_equal(r.util.vision_mode, crops ? LP_VISION_MODE_GUNDAM : LP_VISION_MODE_BASE);
        assert_true(r.util.vision_from_rows);
        assert_int_equal(r.util.image_rows, visual - 1); /* all but the view separator */
        const struct lp_stage_report *v = &r.stages[0], *p = &r.stages[1],
                                     *pf = kind_stage(&r, LP_STAGE_KIND_PREFILL);
        assert_string_equal(v->name, "vision");
        assert_string_equal(p->name, "projector");
        assert_int_equal(v->kind, LP_STAGE_KIND_VISION);
        assert_int_equal(p->kind, LP_STAGE_KIND_VISION);
        /* a page, and its crops in a second call */
        assert_int_equal(v->occurrences, x.requests * (crops ? 2 : 1));
        assert_int_equal(v->n_sub, 2);
        assert_string_equal(v->sub[0].name, "sam");
        assert_string_equal(v->sub[1].name, "encoder");
        assert_true(r.util.has && v->has_util && p->has_util && pf->has_util);
        assert_true(v->mfu > 0.01 && v->mfu < 0.5 && pf->mfu > 0.005 && pf->mfu < 0.5);
        /* vision, projector and the prefill's decoder part fill the TTFT, and no more */
        double sum = v->ttft_share + p->ttft_share + pf->ttft_share;
        print_message("%s: TTFT vision %.1f %% (sam %.1f %%, encoder %.1f %%), projector "
                      "%.2f %%, prefill %.1f %%\n", names[n], 100 * v->ttft_share,
                      100 * v->sub[0].ttft_share, 100 * v->sub[1].ttft_share,
                      100 * p->ttft_share, 100 * pf->ttft_share);
        assert_int_equal(r.stages_inferred, generate);
        assert_true(fabs(sum + r.llm.ttft_outside_share - 1) < 1e-9);
        /* generate() works on the host for a third of the TTFT before the vision starts; the
         * hand-written loop leaves gaps only */
        assert_true(generate ? r.llm.ttft_outside_share > 0.2 : r.llm.ttft_outside_share < 0.05);
        assert_true(v->sub[0].ttft_share + v->sub[1].ttft_share <= v->ttft_share + 1e-9);
        assert_true(v->ttft_share > pf->ttft_share); /* the vision dominates the TTFT */
        /* the routed experts: grouped GEMMs in the prefill and every decode step, none in
         * the vision */
        const struct lp_stage_report *d = kind_stage(&r, LP_STAGE_KIND_DECODE);
        assert_true(pf->moe_gemm_ns > 0 && d->moe_gemm_ns > 0);
        assert_true(d->moe_gemm_kernels >= (size_t)(2 * 11 * x.steps * (int64_t)x.requests));
        assert_int_equal(v->moe_gemm_ns, 0);
        assert_true(pf->moe_gemm_share > 0.05 && pf->moe_gemm_share < 0.6);
        /* no note says the mode is off */
        assert_null(note(&r, LP_NOTE_VISION_ROWS));
        lp_run_free(&r);
        lp_trace_free(t);
    }
    /* a mode given that is not the run's: said in a note */
    struct lp_model m;
    struct lp_gpu_table gpus;
    char err[256], cfg[512];
    snprintf(cfg, sizeof cfg, "%s/deepseek-ocr2-crops/config.json", LP_FIXTURES);
    assert_int_equal(lp_model_load(cfg, &m, err, sizeof err), 0);
    assert_int_equal(lp_gpu_table_load(&gpus, NULL, err, sizeof err), 0);
    struct lp_workload w;
    lp_workload_defaults(&w);
    struct lp_run_options o = {.model = &m, .gpus = &gpus, .workload = &w, .vision_set = 1};
    struct lp_trace *t = fixture("deepseek-ocr2-crops");
    struct lp_run r;
    analyze(t, &o, &r);
    assert_int_equal(r.util.vision_tokens, 257);
    const struct lp_note *rows = note(&r, LP_NOTE_VISION_ROWS);
    assert_non_null(rows);
    assert_int_equal(rows->count, 1120);
    assert_true(rows->value == 256);
    assert_non_null(strstr(note_text(&r, rows), "ran 1120 rows per request, but vision mode "
                                                "base projects 256"));
    lp_run_free(&r);
    lp_trace_free(t);
    lp_gpu_table_free(&gpus);
}

/* HF generate() in an unnamed-stage range: prefill and decode inferred, the prefill's
 * last-token lm_head kept in the prefill */
static void test_harness_generate(void **state)
{
    (void)state;
    struct lp_run r;
    struct lp_trace *t;
    struct timed x;
    harness("hf-generate", &r, &t, &x);
    assert_true(r.stages_inferred);
    assert_int_equal(r.llm.prompt_tokens, x.prompt);
    assert_int_equal(r.llm.prefill_logits, 1); /* generate keeps the last token's logits */
    assert_true(r.util.has);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* CUDA-graph decode: a step is a graph replay */
static void test_harness_graph(void **state)
{
    (void)state;
    struct lp_run r;
    struct lp_trace *t;
    struct timed x;
    harness("graph-decode", &r, &t, &x);
    assert_int_equal(r.llm.steps_source, LP_STEPS_GRAPHS);
    assert_int_equal(r.llm.prompt_tokens, x.prompt);
    assert_true(r.util.has);
    const struct lp_stage_report *d = kind_stage(&r, LP_STAGE_KIND_DECODE);
    assert_true(d->graph_kernels > d->kernels / 2);
    /* the busy share is over the time after the leading warm-up, the warm-up's work left
     * out of it too (counted in, this graph decode was "busy" over 100 %) */
    assert_true(r.timeline.bins_from_ns > r.timeline.first_ns);
    assert_true(r.timeline.busy_share > 0.1 && r.timeline.busy_share <= 1);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* recorded with --no-gemm: steps from the repeating kernel sequence; no prompt length, so
 * no MFU, and the report says why */
static void test_harness_nogemm(void **state)
{
    (void)state;
    struct lp_run r;
    struct lp_trace *t;
    struct timed x;
    harness("hf-llama-nogemm", &r, &t, &x);
    assert_int_equal(r.llm.steps_source, LP_STEPS_SEQUENCE);
    assert_int_equal(r.llm.prompt_tokens, 0);
    assert_false(r.util.has);
    assert_int_equal(r.util.status, LP_UTIL_NO_PREFILL);
    assert_non_null(strstr(util_text(&r), "--no-gemm"));
    assert_int_equal(r.llm.batch_source, LP_TOKENS_NONE);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* two more ways to write it, recorded in a later process and not used to tune the rules:
 * a loop reading every token back (.item()) whose decode range also holds a .tolist() and
 * whose warm-up request is shorter; and generate() sampling a batch of 4 left-padded prompts
 * without any NVTX range (its timer: each request's total) */
static void test_harness_styles(void **state)
{
    (void)state;
    struct lp_run r;
    struct lp_trace *t;
    struct timed x;
    harness("style-sync-loop", &r, &t, &x);
    assert_int_equal(r.llm.steps_source, LP_STEPS_LM_HEAD);
    assert_int_equal(r.llm.prompt_tokens, x.prompt);
    lp_run_free(&r);
    lp_trace_free(t);
    struct lp_model m;
    struct lp_gpu_table gpus;
    char err[256];
    assert_int_equal(lp_model_load(LP_FIXTURES "/style-sample/config.json", &m, err,
                                   sizeof err), 0);
    assert_int_equal(lp_gpu_table_load(&gpus, NULL, err, sizeof err), 0);
    t = fixture("style-sample");
    struct lp_run_options o = {.model = &m, .gpus = &gpus};
    analyze(t, &o, &r);
    assert_true(r.stages_inferred);
    assert_int_equal(r.warmup.cause, LP_WARMUP_TTFT);
    assert_int_equal(r.llm.requests, 3);
    assert_int_equal(r.llm.batch, 4);
    assert_int_equal(r.llm.batch_source, LP_TOKENS_SHAPES);
    assert_int_equal(r.llm.prompt_tokens, 4 * 512); /* padded to the longest prompt */
    assert_int_equal(r.llm.decode_steps, 3 * 31);
    assert_true(r.util.has);
    /* a request: TTFT + 31 steps; the timer's totals were 823.3, 758.1 and 814.5 ms */
    double total = (r.llm.ttft_s + 31 * r.llm.tpot_s) * 1e3;
    print_message("style-sample: TTFT + 31 TPOT = %.1f ms (timer median 814.5 ms)\n", total);
    assert_true(fabs(total - 814.466) / 814.466 < 0.03);
    lp_run_free(&r);
    lp_trace_free(t);
    lp_gpu_table_free(&gpus);
}

/* tests/gpu/gemm.cu is no LLM: no stages inferred, no TTFT or TPOT */
static void test_fixture_not_llm(void **state)
{
    (void)state;
    struct lp_trace *t = fixture("gemm");
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_false(r.llm.found);
    assert_false(r.stages_inferred);
    assert_true(r.llm.ttft_s == 0 && r.llm.tpot_s == 0);
    assert_int_equal(r.n_stages, 1);
    assert_int_equal(r.stages[0].kind, LP_STAGE_KIND_RUN);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(lp_report_summary_md(f, &r), 0);
    fclose(f);
    assert_null(strstr(buf, "First token"));
    assert_non_null(strstr(buf, "No LLM prefill or decode was found"));
    free(buf);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* ---- serving loops: the writers on a serving section set by hand ---- */

/* Six iterations of a serving loop on the run R (its trace a plain one): a prefill, decodes,
 * a chunked prefill beside decodes, two graph replays at size 4 with three sequences, and a
 * batch that shrank at iteration 5; two requests when REQS. The arrays are static: the caller
 * puts R's own serving back before lp_run_free. */
static void fake_serving(struct lp_run *r, int reqs)
{
    static struct lp_iteration it[6];
    static struct lp_batch_row rows[2];
    static struct lp_graph_bucket bk[1];
    static struct lp_serving_request rq[2];
    static char id0[] = "r1", id1[] = "r|2";
    const struct lp_iteration v[6] = {
        {.start = 0, .end = 10000, .tokens = 40, .sampled = 2, .prefill_tokens = 40,
         .kind = LP_ITER_KIND_PREFILL},
        {.start = 11000, .end = 13000, .period_ns = 3000, .gap_ns = 1000, .busy_ns = 2000,
         .tokens = 2, .sampled = 2, .decode = 2, .kind = LP_ITER_KIND_DECODE},
        {.start = 14000, .end = 20000, .period_ns = 7000, .gap_ns = 1000, .busy_ns = 6000,
         .tokens = 35, .sampled = 3, .decode = 2, .prefill_tokens = 33,
         .kind = LP_ITER_KIND_MIXED, .source = LP_ITER_SOURCE_CARRIED},
        {.start = 21000, .end = 23000, .period_ns = 3000, .tokens = 3, .sampled = 3, .decode = 3,
         .bucket = 4, .kind = LP_ITER_KIND_DECODE},
        {.start = 24000, .end = 26000, .period_ns = 3000, .tokens = 3, .sampled = 3, .decode = 3,
         .bucket = 4, .kind = LP_ITER_KIND_DECODE},
        {.start = 27000, .end = 29000, .period_ns = 3000, .tokens = 2, .sampled = 2, .decode = 2,
         .kind = LP_ITER_KIND_UNKNOWN},
    };
    memcpy(it, v, sizeof it);
    struct lp_serving *s = &r->serving;
    memset(s, 0, sizeof *s);
    s->cause = LP_SERVING_CAUSE_SHRANK;
    s->cause_value[0] = 3;
    s->cause_value[1] = 2;
    s->cause_value[2] = 5;
    s->iters = it;
    s->n_iters = 6;
    s->cls[LP_ITER_KIND_PREFILL] = (struct lp_iter_class){.n = 1, .tokens = 40, .sampled = 2,
                                                          .prefill_tokens = 40};
    s->cls[LP_ITER_KIND_DECODE] = (struct lp_iter_class){
        .n = 3, .time = {.n = 3, .p50 = 2000, .p90 = 2000, .p99 = 2000, .mean = 2000},
        .tokens = 8, .decode = 8, .sampled = 8};
    s->cls[LP_ITER_KIND_MIXED] = (struct lp_iter_class){
        .n = 1, .time = {.n = 1, .p50 = 6000, .p90 = 6000, .p99 = 6000, .mean = 6000},
        .tokens = 35, .decode = 2, .prefill_tokens = 33, .sampled = 3};
    s->cls[LP_ITER_KIND_UNKNOWN] = (struct lp_iter_class){.n = 1, .tokens = 2, .decode = 2};
    s->period = (struct lp_dist){.n = 5, .p50 = 3000, .p90 = 7000, .p99 = 7000, .mean = 3800};
    s->itl = (struct lp_dist){.n = 12, .p50 = 3000, .p90 = 7000, .p99 = 7250, .mean = 3500};
    s->itl_inferred = 2;
    s->generated = 15;
    s->prefill_tokens = 73;
    s->span_ns = 29000;
    s->generated_per_s = 517241.4;
    s->prefill_per_s = 2517241.4;
    s->sched_gap_ns = 2000;
    s->sched_period_ns = 16000;
    s->sched_share = 0.125;
    s->decode_busy_share = 0.5;
    rows[0] = (struct lp_batch_row){.lo = 2, .hi = 3, .n_decode = 4, .n_mixed = 1,
                                    .decode_p50_ns = 2000, .mixed_p50_ns = 3000,
                                    .decode_p90_ns = 2200, .mixed_p90_ns = 3300,
                                    .mixed_prefill_mean = 33};
    rows[1] = (struct lp_batch_row){.lo = 4, .hi = 7, .n_decode = 1, .decode_p50_ns = 2500};
    s->batches = rows;
    s->n_batches = 2;
    s->interference = 1.5;
    s->interference_rows = 1;
    bk[0] = (struct lp_graph_bucket){.bucket = 4, .n = 2, .sampled = 6, .mean_sampled = 3,
                                     .padding_share = 0.25};
    s->buckets = bk;
    s->n_buckets = 1;
    s->padding_share = 0.25;
    if (!reqs)
        return;
    rq[0] = (struct lp_serving_request){.id = id0, .prompt = 20, .admit = 500, .end = 29000,
                                        .first_token = 10000, .last_token = 29000, .tokens = 6,
                                        .ttft_ns = 9500, .queue_ns = -1, .tpot_ns = 3800,
                                        .prefill_ns = -1, .shared_tokens = 7,
                                        .prefill_iterations = 1};
    rq[1] = (struct lp_serving_request){.id = id1, .admit = 600, .end = 29000, .cut = 1,
                                        .first_token = 20000, .last_token = 29000, .tokens = 4,
                                        .ttft_ns = 19400, .queue_ns = 1200, .tpot_ns = 3000,
                                        .prefill_ns = 18200, .shared_tokens = 30,
                                        .prefill_iterations = 2};
    s->reqs = rq;
    s->n_reqs = 2;
    s->reqs_cut = 1;
    s->marks_unknown = 3;
    s->token_marks = 10;
    s->ttft = (struct lp_dist){.n = 1, .p50 = 9500, .p90 = 9500, .p99 = 9500, .mean = 9500};
    s->tpot = (struct lp_dist){.n = 1, .p50 = 3800, .p90 = 3800, .p99 = 3800, .mean = 3800};
    s->req_itl = (struct lp_dist){.n = 5, .p50 = 3000, .p90 = 7000, .p99 = 7000, .mean = 3800};
    s->slowest[0] = 1;
    s->slowest[1] = 0;
    s->n_slowest = 2;
}

static void has(const char *text, const char *what)
{
    if (!strstr(text, what))
        fail_msg("missing \"%s\" in:\n%s", what, text);
}

/* the spread figure of WHAT (a stage's name, or TTFT / TPOT), or NULL */
static const struct lp_spread_figure *spread_fig(const struct lp_run *r, const char *what)
{
    for (size_t i = 0; i < r->spread.n_figures; i++) {
        const struct lp_spread_figure *x = &r->spread.figures[i];
        const char *name = x->what == LP_SPREAD_TTFT   ? "TTFT"
                           : x->what == LP_SPREAD_TPOT ? "TPOT"
                                                       : r->stages[x->stage].name;
        if (!strcmp(name, what))
            return x;
    }
    return NULL;
}

/* A run of N_REQ requests: a named warm-up first, then prefill P[i] ms and (D non-NULL) a
 * decode of D[i] ms with 10 tokens each, and (SAM) one sam range at the end. */
static struct lp_trace *spread_trace(size_t n_req, const double *p, const double *d, int sam)
{
    struct tb b;
    tb_open(&b);
    range(&b, "prefill warmup", 1, 0, 50000000);
    kernel(&b, "k", 1, 1000, 2000, 3000);
    for (size_t i = 0; i < n_req; i++) {
        uint64_t base = 100000000 + (uint64_t)i * 50000000;
        range(&b, "prefill", 1, base, base + (uint64_t)(p[i] * 1e6));
        if (d)
            range(&b, "decode tokens=10", 1, base + 20000000,
                  base + 20000000 + (uint64_t)(d[i] * 1e6));
    }
    if (sam)
        range(&b, "sam", 1, 400000000, 405000000);
    return tb_read(&b, 1);
}

/* The in-process spread: each measured stage with 2 occurrences or more, TTFT and TPOT, each
 * against +/-10 % of its mean; the warm-up and a stage of one occurrence left out; the
 * verdict names the figures outside; report.md's section and report.json's "spread". */
static void test_spread(void **state)
{
    (void)state;
    const double p[] = {10, 10.5, 9.5, 10}, d[] = {10, 10, 10, 13};
    struct lp_trace *t = spread_trace(4, p, d, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_non_null(stage(&r, "warmup"));
    assert_int_equal(stage(&r, "prefill")->occurrences, 4);
    const struct lp_run_spread *sp = &r.spread;
    assert_true(sp->tolerance == LP_SPREAD_TOLERANCE);
    assert_int_equal(sp->n_figures, 4); /* prefill, decode, TTFT, TPOT; not warmup, not sam */
    assert_int_equal(sp->single_stages, 1);
    assert_null(spread_fig(&r, "warmup"));
    assert_null(spread_fig(&r, "sam"));
    const struct lp_spread_figure *x = spread_fig(&r, "prefill");
    assert_non_null(x);
    assert_int_equal(x->n, 4);
    assert_true(fabs(x->mean_ns - 10e6) < 1e-6);
    assert_true(fabs(x->std_ns - sqrt(0.5 / 3) * 1e6) < 1e-6); /* sample: n - 1 */
    assert_true(fabs(x->cv - sqrt(0.5 / 3) / 10) < 1e-12);
    assert_true(x->min_ns == 9.5e6 && x->max_ns == 10.5e6);
    assert_true(fabs(x->worst - 0.05) < 1e-12);
    assert_true(x->within);
    x = spread_fig(&r, "TTFT"); /* the request starts at its prefill: TTFT is its time */
    assert_non_null(x);
    assert_int_equal(x->n, 4);
    assert_true(fabs(x->mean_ns - 10e6) < 1e-6 && x->within);
    x = spread_fig(&r, "decode");
    assert_non_null(x);
    assert_true(fabs(x->mean_ns - 10.75e6) < 1e-6);
    assert_true(fabs(x->std_ns - 1.5e6) < 1e-6);
    assert_true(fabs(x->worst - 2.25 / 10.75) < 1e-12);
    assert_false(x->within);
    x = spread_fig(&r, "TPOT");
    assert_non_null(x);
    assert_false(x->within);
    assert_int_equal(sp->outside, 2);
    assert_int_equal(sp->verdict, LP_SPREAD_OUTSIDE);
    char *md = write_to_string(lp_report_run_md, &r);
    has(md, "\n## Spread (in-process)\n\nIn-process: the n occurrences of each stage within one "
            "process");
    has(md, "repeats.md");
    has(md, "| figure | n | mean | std | CV | min | max | worst deviation | within ±10 % |\n");
    has(md, "| prefill | 4 | 10.000 ms | 408.2 us | 4.1 % | 9.500 ms | 10.500 ms | 5.0 % | yes "
            "|\n");
    has(md, "| decode | 4 | 10.750 ms | 1.500 ms | 14.0 % | 10.000 ms | 13.000 ms | 20.9 % | no "
            "|\n");
    has(md, "Verdict: **outside ±10 %**: 2 of 4 figures (decode, TPOT).\n");
    has(md, "Left out: 1 measured stage with one occurrence.\n");
    assert_true(strstr(md, "## Spread") > strstr(md, "## Stages"));
    char *js = write_to_string(lp_report_run_json, &r);
    json_error_t je;
    json_t *root = json_loads(js, 0, &je);
    assert_non_null(root);
    json_t *o = json_object_get(root, "spread");
    assert_true(json_is_object(o));
    assert_string_equal(json_string_value(json_object_get(o, "kind")), "in_process");
    assert_true(json_real_value(json_object_get(o, "tolerance")) == 0.10);
    assert_string_equal(json_string_value(json_object_get(o, "verdict")), "outside");
    assert_int_equal(json_integer_value(json_object_get(o, "outside")), 2);
    json_t *figs = json_object_get(o, "figures");
    assert_int_equal(json_array_size(figs), 4);
    json_t *f0 = json_array_get(figs, 0);
    assert_string_equal(json_string_value(json_object_get(f0, "what")), "stage");
    assert_string_equal(json_string_value(json_object_get(f0, "name")), "prefill");
    assert_int_equal(json_integer_value(json_object_get(f0, "n")), 4);
    assert_int_equal(json_integer_value(json_object_get(f0, "mean_ns")), 10000000);
    assert_int_equal(json_integer_value(json_object_get(f0, "std_ns")), 408248);
    assert_true(fabs(json_real_value(json_object_get(f0, "worst_deviation")) - 0.05) < 1e-12);
    assert_true(json_is_true(json_object_get(f0, "within")));
    json_t *f1 = json_array_get(figs, 1);
    assert_string_equal(json_string_value(json_object_get(f1, "name")), "decode");
    assert_true(json_is_false(json_object_get(f1, "within")));
    assert_string_equal(json_string_value(json_object_get(json_array_get(figs, 3), "what")),
                        "tpot");
    json_decref(root);
    free(js);
    free(md);
    lp_run_free(&r);
    lp_trace_free(t);

    /* the prefills alone: every figure within */
    t = spread_trace(4, p, NULL, 0);
    analyze(t, NULL, &r);
    assert_int_equal(r.spread.verdict, LP_SPREAD_WITHIN);
    assert_int_equal(r.spread.n_figures, 2); /* prefill, TTFT */
    md = write_to_string(lp_report_run_md, &r);
    has(md, "Verdict: **within ±10 %**: all 2 figures.\n");
    assert_null(strstr(md, "Left out"));
    free(md);
    lp_run_free(&r);
    lp_trace_free(t);

    /* a decode range per step, one step slow: per-token jitter, not a repeat: the decode
     * stage is left out and said, TPOT (over the requests) is what is judged */
    struct tb sb;
    tb_open(&sb);
    for (int q = 0; q < 2; q++) {
        uint64_t base = 100000000 + (uint64_t)q * 100000000;
        range(&sb, "prefill", 1, base, base + 10000000);
        for (int k = 0; k < 4; k++) { /* steps of 5 ms, the third of the first request 9 ms */
            uint64_t s0 = base + 20000000 + (uint64_t)k * 10000000;
            range(&sb, "decode step tokens=1", 1, s0, s0 + (q == 0 && k == 2 ? 9 : 5) * 1000000ull);
        }
    }
    kernel(&sb, "k", 1, 1000, 2000, 3000);
    t = tb_read(&sb, 1);
    analyze(t, NULL, &r);
    assert_int_equal(r.spread.step_stages, 1);
    for (size_t i = 0; i < r.spread.n_figures; i++)
        assert_true(r.spread.figures[i].what != LP_SPREAD_STAGE ||
                    r.stages[r.spread.figures[i].stage].kind != LP_STAGE_KIND_DECODE);
    md = write_to_string(lp_report_run_md, &r);
    has(md, "Left out: 1 decode stage whose occurrences are single steps");
    free(md);
    lp_run_free(&r);
    lp_trace_free(t);

    /* one request: too few values, said with why */
    t = spread_trace(1, p, d, 0);
    analyze(t, NULL, &r);
    assert_int_equal(r.spread.verdict, LP_SPREAD_TOO_FEW);
    assert_int_equal(r.spread.n_figures, 0);
    assert_int_equal(r.spread.single_stages, 2);
    md = write_to_string(lp_report_run_md, &r);
    has(md, "Too few values for a spread: no measured stage occurred twice or more (2 with one "
            "occurrence) and fewer than two requests had a TTFT (1) or a TPOT (1).\n");
    assert_null(strstr(md, "| figure |"));
    js = write_to_string(lp_report_run_json, &r);
    root = json_loads(js, 0, &je);
    assert_non_null(root);
    o = json_object_get(root, "spread");
    assert_string_equal(json_string_value(json_object_get(o, "verdict")), "too_few");
    assert_int_equal(json_array_size(json_object_get(o, "figures")), 0);
    json_decref(root);
    free(js);
    free(md);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* report.md, summary.md, report.json and iterations.csv give a serving loop's section, and
 * nothing of it when the run is none */
static void test_serving_writers(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    device(&b);
    kernel(&b, "k", 1, 100, 200, 300);
    kernel(&b, "k", 1, 400, 9000, 29500); /* the iterations below lie on its time axis */
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.serving.cause, LP_SERVING_CAUSE_NONE);
    assert_false(r.llm.found);
    /* not a serving loop: no word of it anywhere, iterations.csv its header alone */
    char *md = write_to_string(lp_report_run_md, &r);
    char *sum = write_to_string(lp_report_summary_md, &r);
    char *json = write_to_string(lp_report_run_json, &r);
    char *csv = write_to_string(lp_report_iterations_csv, &r);
    assert_null(strstr(md, "Serving"));
    assert_null(strstr(md, "serving"));
    has(md, "No prefill or decode was found");
    assert_null(strstr(sum, "Serving"));
    has(sum, "No LLM prefill or decode was found");
    assert_null(strstr(json, "serving"));
    assert_string_equal(csv, "index,kind,source,start_ns,end_ns,period_ns,gap_ns,busy_ns,tokens,"
                             "sampled,decode,prefill_tokens,bucket\n");
    free(md);
    free(sum);
    free(json);
    free(csv);

    struct lp_serving own = r.serving;
    fake_serving(&r, 1);
    md = write_to_string(lp_report_run_md, &r);
    has(md, "No prefill or decode stage: this is a serving loop (continuous batching); its "
            "figures are in Serving below.\n");
    assert_null(strstr(md, "No prefill or decode was found"));
    assert_true(strstr(md, "## LLM metrics") < strstr(md, "## Serving") &&
                strstr(md, "## Serving") < strstr(md, "## Diagnosis"));
    has(md, "decode-only iterations went from 3 to 2 sequences at iteration 5 with no prefill "
            "between: a sequence left while others ran on");
    has(md, "found from the lm_head's calls: each pass runs it once, on the sequences that "
            "sample");
    has(md, "| decode-only | 3 | 2.0 us | 2.0 us | 2.0 us | 8 | 8 | 0 |\n"
            "| mixed | 1 | 6.0 us | 6.0 us | 6.0 us | 35 | 2 | 33 |\n"
            "| prefill-only | 1 | - | - | - | 40 | 0 | 40 |\n"
            "| unknown | 1 | - | - | - | 2 | 2 | 0 |\n");
    has(md, "| generated tokens | 15 | the request convention's token marks in the iterations |");
    has(md, "| prompt tokens | 73 | tokens in flight less decode sequences, per iteration |");
    has(md, "| inter-token latency p50 / p90 / p99 | 3.0 us / 7.0 us / 7.2 us | token-weighted "
            "over 12 tokens: each decode sequence of an iteration waited its period; no request "
            "identity needed; 2 of the 12 tokens come from iterations whose decode count was "
            "inferred");
    has(md, "| gap before forwards | 12.5 % | of the periods of iterations with decodes, from "
            "one iteration's end to the next forward's first GEMM kernel: sampling, scheduling, "
            "input preparation, Python (2.0 us of 16.0 us) |\n| GPU busy while decoding | "
            "50.0 % |");
    has(md, "| CUDA-graph padding share | 25.0 % |");
    has(md, "| 4 | 2 | 3.0 | 25.0 % |");
    has(md, "| 2–3 | 4 | 2.0 us | 2.2 us | 1 | 3.0 us | 3.3 us | 33.0 |\n"
            "| 4–7 | 1 | 2.5 us | - | 0 | - | - | - |\n");
    has(md, "Mixed iterations took 1.50× the decode-only ones at the same batch (median over 1 "
            "batch size).");
    has(md, "| 4 | 2 | 3.0 | 25.0 % |");
    has(md, "| TTFT | 9.5 us | 9.5 us | 9.5 us | 9.5 us | 1 requests | admission to first token |");
    has(md, "- No prefill marks: TTFT is not split into queue wait and prefill.");
    has(md, "- 1 request never ended: the recording stopped first; left out.");
    has(md, "- 3 token or prefill marks named no request open then: left out.");
    assert_null(strstr(md, "without a token mark"));
    has(md, "| r\\|2 | 19.4 us | 1.2 us | 18.2 us | 2 | 30 | - | 4 |\n"
            "| r1 | 9.5 us | - | - | 1 | 7 | 20 | 6 |\n");
    free(md);
    /* prefill marks that gave no queue wait (their forwards not recorded), then one that did */
    r.serving.prefill_marks = 4;
    md = write_to_string(lp_report_run_md, &r);
    has(md, "- None of the 4 prefill marks gave a queue wait: TTFT is not split");
    assert_null(strstr(md, "\n| queue wait |"));
    free(md);
    r.serving.queue = (struct lp_dist){.n = 1, .p50 = 1200, .p90 = 1200, .p99 = 1200, .mean = 1200};
    md = write_to_string(lp_report_run_md, &r);
    has(md, "| queue wait | 1.2 us | 1.2 us | 1.2 us | 1.2 us | 1 requests | admission to the "
            "start of the forward of its first prefill mark |");
    assert_null(strstr(md, "TTFT is not split"));
    free(md);
    sum = write_to_string(lp_report_summary_md, &r);
    has(sum, "- **Serving loop: 6 iterations** (3 decode-only, 1 mixed, 1 prefill-only, 1 "
             "unknown, found from the lm_head's calls) over 29.0 us: 15 tokens generated "
             "(517241.4 tokens/s), 73 prompt tokens (2517241.4 tokens/s).\n");
    has(sum, "- **Between tokens p50 3.0 us** (p90 7.0 us, p99 7.2 us; token-weighted over 12 "
             "tokens: each decode sequence waits for its iteration).\n");
    has(sum, "- **First token after 9.5 us** (median of 1 request, p90 9.5 us; the program's "
             "request marks).\n");
    has(sum, "- **Each further token takes 3.8 us** (median TPOT of 1 request, p90 3.8 us).\n");
    has(sum, "- While sequences decoded, the GPU was busy 50.0 % of the time; the gaps before "
             "each forward (sampling, scheduling, Python) took 12.5 %.");
    has(sum, "25.0 %");
    assert_null(strstr(sum, "No LLM prefill"));
    free(sum);
    json = write_to_string(lp_report_run_json, &r);
    json_error_t je;
    json_t *root = json_loads(json, 0, &je);
    assert_non_null(root);
    json_t *sv = json_object_get(root, "serving");
    assert_string_equal(json_string_value(json_object_get(sv, "cause")), "shrank");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(sv, "cause_value"), 2)), 5);
    assert_int_equal(json_integer_value(json_object_get(sv, "iterations")), 6);
    json_t *dec = json_object_get(json_object_get(sv, "kinds"), "decode");
    assert_int_equal(json_integer_value(json_object_get(dec, "n")), 3);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(dec, "time"), "p50_ns")),
                     2000);
    assert_true(json_is_null(json_object_get(json_object_get(json_object_get(sv, "kinds"),
                                                             "prefill"), "time")));
    assert_true(json_real_value(json_object_get(sv, "sched_share")) == 0.125);
    assert_int_equal(json_integer_value(json_object_get(sv, "itl_inferred")), 2);
    json_t *bt = json_array_get(json_object_get(sv, "batches"), 1);
    assert_true(json_is_null(json_object_get(bt, "mixed_p50_ns")));
    json_t *rq = json_object_get(sv, "requests");
    assert_int_equal(json_integer_value(json_object_get(rq, "cut")), 1);
    json_t *slow = json_array_get(json_object_get(rq, "slowest"), 0);
    assert_string_equal(json_string_value(json_object_get(slow, "id")), "r|2");
    assert_true(json_is_null(json_object_get(slow, "prompt")));
    assert_true(json_is_null(json_object_get(json_array_get(json_object_get(rq, "slowest"), 1),
                                             "queue_ns")));
    json_t *il = json_object_get(sv, "iterations_list");
    assert_true(json_is_null(json_array_get(json_object_get(il, "start"), 0)));
    assert_true(json_is_null(json_array_get(json_object_get(il, "period"), 0)));
    assert_int_equal(json_integer_value(json_array_get(json_object_get(il, "end"), 5)), 29000);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(il, "bucket"), 3)), 4);
    assert_string_equal(json_string_value(json_array_get(json_object_get(il, "kind"), 2)),
                        "mixed");
    assert_string_equal(json_string_value(json_array_get(json_object_get(il, "source"), 2)),
                        "carried");
    assert_int_equal(json_array_size(json_object_get(il, "decode")), 6);
    json_decref(root);
    free(json);
    csv = write_to_string(lp_report_iterations_csv, &r);
    has(csv, "\n0,prefill,shapes,,10000,,0,0,40,2,0,40,0\n"
             "1,decode,shapes,11000,13000,3000,1000,2000,2,2,2,0,0\n"
             "2,mixed,carried,14000,20000,7000,1000,6000,35,3,2,33,0\n");
    has(csv, "\n5,unknown,shapes,27000,29000,3000,0,0,2,2,2,0,0\n");
    free(csv);
    char *html = write_to_string(lp_report_run_html, &r);
    has(html, "\"serving\":{\"cause\":\"shrank\"");
    free(html);

    /* without the request convention: what would give per-request figures */
    fake_serving(&r, 0);
    md = write_to_string(lp_report_run_md, &r);
    has(md, "Per-request TTFT and TPOT are not given: the program does not mark its requests.");
    has(md, "`request <id>`");
    has(md, "integrations/llmprof_requests.py");
    has(md, "| generated tokens | 15 | sequences sampled by the lm_head (a warm-up's too) |");
    assert_null(strstr(md, "Slowest requests"));
    free(md);
    sum = write_to_string(lp_report_summary_md, &r);
    has(sum, "- Per-request TTFT and TPOT are not given: the program does not mark its requests "
             "(docs/serving.md says how).\n");
    assert_null(strstr(sum, "First token"));
    free(sum);
    json = write_to_string(lp_report_run_json, &r);
    root = json_loads(json, 0, &je);
    assert_non_null(root);
    assert_true(json_is_null(json_object_get(json_object_get(root, "serving"), "requests")));
    json_decref(root);
    free(json);

    /* every kind, source and cause has a key of its own and a label */
    for (int k = 0; k < LP_ITER_KIND_COUNT; k++)
        for (int j = 0; j < k; j++)
            assert_string_not_equal(lp_text_iter_kind_key(k), lp_text_iter_kind_key(j));
    for (int k = 0; k < LP_ITER_SOURCE_COUNT; k++) {
        assert_string_not_equal(lp_text_iter_source_key(k), "unknown");
        assert_true(strlen(lp_text_iter_source(k)) > 10);
        for (int j = 0; j < k; j++)
            assert_string_not_equal(lp_text_iter_source_key(k), lp_text_iter_source_key(j));
    }
    assert_string_equal(lp_text_iter_kind(LP_ITER_KIND_DECODE), "decode-only");
    assert_string_equal(lp_text_iter_kind(LP_ITER_KIND_PREFILL), "prefill-only");
    assert_string_equal(lp_text_serving_cause_key(LP_SERVING_CAUSE_CONVENTION), "convention");
    assert_string_equal(lp_text_serving_cause_key(LP_SERVING_CAUSE_RAGGED), "ragged");

    /* the other causes' sentences */
    char why[256];
    r.serving.cause = LP_SERVING_CAUSE_RAGGED;
    r.serving.cause_value[0] = 45;
    r.serving.cause_value[1] = 2;
    r.serving.cause_value[2] = 0;
    lp_text_serving_cause(&r.serving, why, sizeof why);
    assert_string_equal(why, "iteration 0 prefilled 45 tokens for 2 sequences, no multiple of "
                             "them: prompts of several lengths in one flat batch");
    r.serving.cause = LP_SERVING_CAUSE_CONVENTION;
    lp_text_serving_cause(&r.serving, why, sizeof why);
    assert_string_equal(why, "the program marks its requests (request convention)");

    r.serving = own;
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Every code the analysis returns has a machine key of its own and a sentence: a code added
 * without them fails here. */
static void test_text_tables(void **state)
{
    (void)state;
    struct lp_run r = {0};
    const char *keys[LP_FINDING_CODE_COUNT + LP_NOTE_CODE_COUNT];
    size_t n = 0;
    for (int c = 0; c < LP_FINDING_CODE_COUNT; c++)
        keys[n++] = lp_text_finding_key((enum lp_finding_code)c);
    for (int c = 0; c < LP_NOTE_CODE_COUNT; c++) {
        struct lp_note x = {.code = (enum lp_note_code)c, .stage = -1, .count = 1, .of = 2};
        keys[n++] = lp_text_note_key(x.code);
        assert_true(strlen(note_text(&r, &x)) > 20);
    }
    for (size_t i = 0; i < n; i++) {
        assert_non_null(keys[i]);
        assert_string_not_equal(keys[i], "unknown");
        for (size_t j = 0; j < i; j++)
            if (!strcmp(keys[i], keys[j]) &&
                (i < LP_FINDING_CODE_COUNT) == (j < LP_FINDING_CODE_COUNT))
                fail_msg("key %s used twice", keys[i]);
    }
    assert_string_equal(lp_text_finding_key(LP_FINDING_CODE_COUNT), "unknown");
    for (int b = 0; b < LP_GEMM_HINT_BITS; b++)
        assert_non_null(lp_text_gemm_hint_key(b));
    assert_null(lp_text_gemm_hint_key(LP_GEMM_HINT_BITS));
}

/* record --capture: a warm-up request before the first window (left out), a decode range
 * cut at the first window's end, another cut to the second window; the GPU time between the
 * windows is neither busy nor idle; the reports say which spans were recorded */
static void window(struct tb *b, uint64_t a, uint64_t e)
{
    struct lp_record r = {.type = LP_REC_WINDOW, .u.window = {.start = a, .end = e,
                          .cause = LP_WINDOW_CAUSE_PROFILER_API, .thread = 1}};
    add(b, &r);
}

/* More windows than report.json lists: the first 1000, all of them counted */
static void test_capture_windows_listed(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    lp_trace_writer_set_meta(b.w, "capture", "cuda-profiler");
    for (uint64_t i = 0; i < 1100; i++)
        window(&b, 10000 + 1000 * i, 10500 + 1000 * i);
    kernel(&b, "gemm_a", 1, 10100, 10200, 10300);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.capture.n_windows, 1100);
    json_t *j = lp_report_run_json_value(&r);
    json_t *cj = json_object_get(j, "capture"), *list = json_object_get(cj, "list");
    assert_int_equal(json_integer_value(json_object_get(cj, "windows")), 1100);
    assert_int_equal(json_array_size(list), 1000);
    json_t *last = json_array_get(list, 999);
    assert_int_equal(json_integer_value(json_object_get(last, "start_ns")), 10000 + 999000);
    json_decref(j);
    lp_run_free(&r);
    lp_trace_free(t);
}

static void test_capture_windows(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    lp_trace_writer_set_meta(b.w, "capture", "cuda-profiler");
    lp_trace_writer_set_meta(b.w, "start_trace_ns", "1");
    lp_trace_writer_set_meta(b.w, "end_trace_ns", "40001");
    range(&b, "prefill", 1, 100, 1000);   /* the warm-up, not recorded */
    range(&b, "decode", 1, 1000, 2000);
    range(&b, "prefill", 1, 10000, 11000);
    kernel(&b, "gemm_a", 1, 10100, 10200, 10800);
    range(&b, "decode", 1, 11000, 20000); /* cut at 12500 */
    kernel(&b, "gemm_b", 1, 11100, 11200, 11900);
    kernel(&b, "gemm_b", 1, 12000, 12100, 12400);
    range(&b, "decode", 1, 29000, 33000); /* cut to 30000 .. 32000 */
    kernel(&b, "gemm_b", 1, 30100, 30200, 31000);
    window(&b, 9000, 12500);
    window(&b, 30000, 32000);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    struct lp_run_options o = {.gap_ns = 100};
    analyze(t, &o, &r);
    const struct lp_capture_facts *c = &r.capture;
    assert_true(c->windowed);
    assert_string_equal(c->mode, "cuda-profiler");
    assert_int_equal(c->n_windows, 2);
    assert_int_equal(c->recorded_ns, 3500 + 2000);
    assert_int_equal(c->span_ns, 40000);
    assert_int_equal(c->occ_outside, 2);
    assert_int_equal(c->occ_cut, 2);
    assert_int_equal(c->occ_across, 0);
    const struct lp_stage_report *p = stage(&r, "prefill"), *d = stage(&r, "decode");
    assert_non_null(p);
    assert_non_null(d);
    assert_int_equal(p->occurrences, 1);
    assert_int_equal(d->occurrences, 2);
    assert_true(d->wall.total == 1500 + 2000);
    assert_int_equal(r.attribution.outside, 0);
    /* from 10.2 us to 31 us of GPU work, 17.5 us between the windows */
    assert_int_equal(r.timeline.unrecorded_ns, 30000 - 12500);
    assert_true(fabs(r.timeline.busy_share - 2400.0 / (20800 - 17500)) < 1e-9);
    /* the gaps inside the first window, and the idle time inside the windows around the
     * time between them (12.4-12.5 us and 30.0-30.2 us) as one */
    assert_int_equal(r.timeline.n_gaps, 3);
    assert_int_equal(r.timeline.gap_ns, 400 + 200 + 300);
    char *md = write_to_string(lp_report_run_md, &r);
    assert_non_null(strstr(md, "kernels were recorded in 2 windows"));
    assert_non_null(strstr(md, "2 stage ranges outside them left out, 2 cut"));
    assert_non_null(strstr(md, "between capture windows (not recorded)"));
    free(md);
    json_t *j = lp_report_run_json_value(&r);
    json_t *cj = json_object_get(j, "capture");
    assert_int_equal(json_integer_value(json_object_get(cj, "windows")), 2);
    assert_int_equal(json_integer_value(json_object_get(cj, "stage_ranges_outside")), 2);
    assert_int_equal(json_array_size(json_object_get(cj, "list")), 2);
    json_decref(j);
    lp_run_free(&r);
    lp_trace_free(t);

    /* no stage ranges: the run is one occurrence per window (to its last work's end) */
    tb_open(&b);
    lp_trace_writer_set_meta(b.w, "capture", "cuda-profiler");
    kernel(&b, "k", 1, 1100, 1200, 1900);
    kernel(&b, "k", 1, 2000, 2100, 2600); /* runs past its window's end */
    kernel(&b, "k", 1, 10100, 10200, 10500);
    window(&b, 1000, 2500);
    window(&b, 10000, 11000);
    t = tb_read(&b, 1);
    analyze(t, NULL, &r);
    const struct lp_stage_report *run = &r.stages[0];
    assert_int_equal(r.n_stages, 1);
    assert_int_equal(run->kind, LP_STAGE_KIND_RUN);
    assert_int_equal(run->occurrences, 2);
    assert_true(run->wall.total == (2600 - 1000) + (11000 - 10000));
    assert_int_equal(run->busy_ns, 700 + 500 + 300);
    assert_int_equal(r.timeline.unrecorded_ns, 10000 - 2600);
    lp_run_free(&r);
    lp_trace_free(t);

    /* a killed process: its window was written when it opened (end = start) and never
     * closed; it runs to the last kernel */
    tb_open(&b);
    lp_trace_writer_set_meta(b.w, "capture", "cuda-profiler");
    range(&b, "prefill", 1, 100, 1000);
    range(&b, "prefill", 1, 5000, 6000);
    kernel(&b, "k", 1, 5100, 5200, 5900);
    window(&b, 4000, 4000);
    t = tb_read(&b, 1); /* closed here only for the header value, set after the start */
    analyze(t, NULL, &r);
    assert_int_equal(r.capture.n_windows, 1);
    assert_int_equal(r.capture.recorded_ns, 5900 - 4000);
    assert_int_equal(r.capture.occ_outside, 1);
    assert_int_equal(stage(&r, "prefill")->occurrences, 1);
    lp_run_free(&r);
    lp_trace_free(t);

    /* a windowed record whose program never opened a window */
    tb_open(&b);
    lp_trace_writer_set_meta(b.w, "capture", "cuda-profiler");
    range(&b, "prefill", 1, 100, 1000);
    t = tb_read(&b, 1);
    analyze(t, NULL, &r);
    assert_int_equal(r.capture.n_windows, 0);
    assert_int_equal(r.capture.occ_outside, 1);
    md = write_to_string(lp_report_run_md, &r);
    assert_non_null(strstr(md, "never opened one"));
    /* no busy share of no kernels, and not taken for --light */
    assert_null(strstr(md, "The GPU was busy"));
    assert_null(strstr(md, "(--light)"));
    free(md);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* the H200 runs of tests/gpu/launch.sh with --capture 'nvtx:^step$/8': every window holds
 * one decode step with as many kernels as a step of a full record of the same command (HF
 * eager 946, the CUDA-graph decode 613), each tied to its launch (callbacks switched with
 * the windows); the graph kernels, still running when their windows closed, have their
 * own end times (the collector waited for the GPU before switching kernel activity off) */
static void test_capture_nvtx_fixtures(void **state)
{
    (void)state;
    const struct {
        const char *name;
        size_t windows, per_step;
        uint64_t after_close;
    } runs[] = {{"capture-nvtx-hf", 6, 946, 1}, {"capture-nvtx-graph", 12, 613, 44208}};
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        struct lp_trace *t = fixture(runs[i].name);
        assert_string_equal(lp_trace_meta(t, "launch_records"), "callbacks");
        assert_int_equal(strtoull(lp_trace_meta(t, "capture_after_close"), NULL, 10),
                         runs[i].after_close);
        struct lp_run r;
        struct lp_run_options o = {.keep_warmup = 1};
        analyze(t, &o, &r);
        assert_int_equal(r.capture.kind, LP_CAPTURE_MODE_NVTX);
        assert_int_equal(r.capture.n_windows, runs[i].windows);
        assert_int_equal(t->n_kernels, runs[i].windows * runs[i].per_step);
        /* kernels, copies and sets: all tied to their launch */
        assert_int_equal(r.attribution.by_launch, t->n_kernels + t->n_memcpys + t->n_memsets);
        assert_int_equal(r.attribution.by_time, 0);
        const struct lp_stage_report *d = kind_stage(&r, LP_STAGE_KIND_DECODE);
        assert_int_equal(d->occurrences, runs[i].windows); /* one part per window */
        assert_int_equal(d->kernels, t->n_kernels);
        assert_int_equal(d->steps, runs[i].windows); /* one step per part, found */
        assert_int_equal(r.llm.tpot.n, 0); /* cut decode ranges: no TPOT */
        uint64_t longest = 0;
        for (size_t k = 0; k < t->n_kernels; k++)
            if (lp_trace_kernel_end(t, &t->kernels[k]) - t->kernels[k].start > longest)
                longest = lp_trace_kernel_end(t, &t->kernels[k]) - t->kernels[k].start;
        assert_true(longest < 1000000); /* under 1 ms: no end time from a later window */
        lp_run_free(&r);
        lp_trace_free(t);
    }
}

/* Windows on one decode step in two (record --capture nvtx:^step$/2): the decode range
 * spans both windows, so it counts one part per window, each with its own step's kernel,
 * and neither the time between them nor a TPOT (its time is the windows', not the range's) */
static void test_capture_split(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    lp_trace_writer_set_meta(b.w, "capture", "nvtx:^step$/2");
    range(&b, "decode", 1, 1000, 10000);
    for (uint64_t s = 0; s < 4; s++)
        range(&b, "step", 1, 2000 + 2000 * s, 3000 + 2000 * s);
    kernel(&b, "gemm_a", 1, 2100, 2200, 2800);
    kernel(&b, "gemm_b", 1, 6100, 6200, 6950);
    window(&b, 2000, 3000);
    window(&b, 6000, 7000);
    /* NVML everywhere: its energy counter 5 mJ more every 1000 ns */
    for (uint64_t k = 0; k <= 10; k++) {
        struct lp_record n = {.type = LP_REC_NVML,
                              .u.nvml = {.timestamp = 1000 * k,
                                         .valid = LP_NVML_FIELD_ENERGY | LP_NVML_FIELD_POWER,
                                         .energy_mj = 100 + 5 * k, .power_mw = 5000}};
        add(&b, &n);
    }
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    struct lp_run_options o = {.keep_warmup = 1};
    analyze(t, &o, &r);
    const struct lp_capture_facts *c = &r.capture;
    assert_int_equal(c->kind, LP_CAPTURE_MODE_NVTX);
    /* energy in each window from the counter, and the windows' mean power */
    assert_int_equal(c->n_energy, 2);
    assert_float_equal(c->window_energy_j[0], 0.005, 1e-9);
    assert_float_equal(c->window_energy_j[1], 0.005, 1e-9);
    assert_float_equal(c->energy_j, 0.010, 1e-9);
    assert_float_equal(c->power_mean_w, 5000, 1e-6); /* 10 mJ in 2 us */
    /* busy over time: a bin between the windows was not recorded (NaN), one inside is */
    int between = 0, busy_inside = 0;
    for (size_t i = 0; i < r.timeline.n_bins; i++) {
        uint64_t at = r.timeline.bins[i].start;
        between += at > 3100 && at < 5900 && !isnan(r.timeline.bins[i].busy);
        busy_inside += at > 2300 && at < 2700 && r.timeline.bins[i].busy == 1.0f;
    }
    assert_int_equal(between, 0);
    assert_true(busy_inside > 0);
    assert_int_equal(c->occ_across, 1);
    assert_int_equal(c->occ_cut, 1);
    const struct lp_stage_report *d = stage(&r, "decode");
    assert_non_null(d);
    assert_int_equal(d->occurrences, 2);
    assert_int_equal(d->kernels, 2);
    assert_true(d->wall.total == 1000 + 1000); /* the parts, each to its window's end */
    assert_int_equal(r.llm.tpot.n, 0);
    assert_int_equal(r.llm.itl.n, 0);
    assert_int_equal(r.llm.cut_requests, 1);
    char *md = write_to_string(lp_report_run_md, &r);
    assert_non_null(strstr(md, "the chosen NVTX ranges, each from its push to its pop"));
    assert_non_null(strstr(md, "1 stage range spanning two windows or more counts one part"));
    assert_non_null(strstr(md, "stage ranges cut by capture windows"));
    assert_non_null(strstr(md, "Capture windows: 0.01 J in the 2 of 2 windows the samples "
                               "bracket, mean 5000.0 W"));
    free(md);
    char *js = write_to_string(lp_report_run_json, &r);
    assert_non_null(strstr(js, "\"energy_j\": 0.005"));
    free(js);
    lp_run_free(&r);
    lp_trace_free(t);

    /* a prefill over two windows stays one request; a cut decode named tokens=8 does not
     * count 8 tokens for its part (nor 8 per part) */
    tb_open(&b);
    lp_trace_writer_set_meta(b.w, "capture", "signal");
    range(&b, "prefill", 1, 100, 5000);
    range(&b, "decode tokens=8", 1, 5000, 9000);
    kernel(&b, "gemm_a", 1, 1100, 1200, 1300);
    kernel(&b, "gemm_a", 1, 3100, 3200, 3300);
    kernel(&b, "gemm_b", 1, 6100, 6200, 6300);
    window(&b, 1000, 2000);
    window(&b, 3000, 4000);
    window(&b, 6000, 7000);
    t = tb_read(&b, 1);
    analyze(t, &o, &r);
    assert_int_equal(r.capture.kind, LP_CAPTURE_MODE_SIGNAL);
    assert_int_equal(stage(&r, "prefill")->occurrences, 2);
    assert_int_equal(r.llm.requests, 1);
    assert_int_equal(r.llm.cut_requests, 1);
    assert_int_equal(r.llm.ttft.n, 0);
    assert_int_equal(r.llm.decode_tokens, 1); /* its part's one step, not the name's 8 */
    lp_run_free(&r);
    lp_trace_free(t);
}

/* the H200 runs of tests/gpu/capture.sh: the window held the timed requests, and their
 * stages have the kernels the same command recorded without --capture had there (HF eager:
 * prefill 1,804 and decode 28,380; the CUDA-graph decode: 1,032 and 38,006), steps found as
 * then, the GEMM calls tied to their kernels inside the window */
static void test_capture_fixtures(void **state)
{
    (void)state;
    const struct {
        const char *name;
        size_t prefill, decode;
        int64_t steps;
        enum lp_steps_source source;
    } runs[] = {{"capture-hf", 1804, 28380, 30, LP_STEPS_LM_HEAD},
                {"capture-graph", 1032, 38006, 62, LP_STEPS_GRAPHS}};
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        struct lp_trace *t = fixture(runs[i].name);
        struct lp_run r;
        analyze(t, NULL, &r);
        assert_true(r.capture.windowed);
        assert_int_equal(r.capture.n_windows, 1);
        assert_int_equal(r.capture.occ_outside, 2); /* the warm-up's prefill and decode */
        assert_int_equal(r.capture.occ_cut, 0);
        const struct lp_stage_report *p = kind_stage(&r, LP_STAGE_KIND_PREFILL),
                                     *d = kind_stage(&r, LP_STAGE_KIND_DECODE);
        assert_int_equal(p->occurrences, 2);
        assert_int_equal(d->occurrences, 2);
        assert_int_equal(p->kernels, runs[i].prefill);
        assert_int_equal(d->kernels, runs[i].decode);
        assert_int_equal(d->steps, runs[i].steps);
        assert_int_equal(d->steps_source, runs[i].source);
        assert_int_equal(r.attribution.outside, 0);
        assert_int_equal(r.warmup.cause, LP_WARMUP_NONE);
        assert_true(r.gemm.linked > 0);
        /* the calls made outside the window (the warm-up's) are left out, not "unlinked" */
        assert_int_equal(r.gemm.calls - r.gemm.failed, r.gemm.linked);
        assert_true(r.timeline.busy_share > 0 && r.timeline.busy_share <= 1);
        lp_run_free(&r);
        lp_trace_free(t);
    }
}

/* The count of rows of TABLE with trace_id ID. */
static int64_t rows_of(sqlite3 *db, const char *table, int id)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM %s WHERE trace_id = %d", table, id);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* The SQLite export: two traces (a CUDA-graph decode under windows, and an HF eager decode)
 * in one database, each table holding exactly its trace's records and analysis rows under
 * its trace_id, each kernel with its stage; the indexes made. */
static void test_sqlite_export(void **state)
{
    (void)state;
    char path[] = "/tmp/lp_sqlite_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char err[512] = "";
    sqlite3 *db = NULL;
    assert_int_equal(lp_sqlite_open(&db, path, err, sizeof err), 0);
    const char *names[] = {"graph-steps-8", "capture-nvtx-hf"};
    struct lp_trace *t[2];
    struct lp_run r[2];
    for (int i = 0; i < 2; i++) {
        t[i] = fixture(names[i]);
        analyze(t[i], NULL, &r[i]);
        assert_int_equal(lp_sqlite_add_trace(db, i + 1, names[i], &r[i], err, sizeof err), 0);
    }
    assert_int_equal(lp_sqlite_close(db, err, sizeof err), 0);
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    for (int i = 0; i < 2; i++) {
        int id = i + 1;
        assert_int_equal(rows_of(db, "traces", id), 1);
        assert_int_equal(rows_of(db, "meta", id), t[i]->n_meta);
        assert_int_equal(rows_of(db, "devices", id), t[i]->n_devices);
        assert_int_equal(rows_of(db, "kernels", id), t[i]->n_kernels);
        assert_int_equal(rows_of(db, "kernel_names", id), r[i].n_names);
        assert_int_equal(rows_of(db, "memcpys", id), t[i]->n_memcpys);
        assert_int_equal(rows_of(db, "memsets", id), t[i]->n_memsets);
        assert_int_equal(rows_of(db, "api_calls", id), t[i]->n_apis);
        assert_int_equal(rows_of(db, "kernel_events", id), t[i]->n_kernels);
        assert_int_equal(rows_of(db, "kernel_configs", id), t[i]->n_kernel_configs);
        assert_int_equal(rows_of(db, "api_events", id), t[i]->n_apis);
        assert_int_equal(rows_of(db, "api_kinds", id), t[i]->n_api_kinds);
        assert_true(t[i]->n_kernel_configs < t[i]->n_kernels && t[i]->n_api_kinds < t[i]->n_apis);
        assert_int_equal(rows_of(db, "ranges", id), r[i].ranges.n);
        assert_int_equal(rows_of(db, "gemms", id), t[i]->n_gemms);
        assert_int_equal(rows_of(db, "nvml", id), t[i]->n_nvml);
        assert_int_equal(rows_of(db, "windows", id), r[i].capture.n_windows);
        assert_int_equal(2 * r[i].capture.n_windows, t[i]->n_windows); /* written twice */
        assert_int_equal(rows_of(db, "losses", id), t[i]->n_losses);
        assert_int_equal(rows_of(db, "stages", id), r[i].n_stages);
        assert_int_equal(rows_of(db, "stage_spans", id), r[i].n_spans);
        assert_true(t[i]->n_kernels > 0 && t[i]->n_windows > 0 && r[i].ranges.n > 0);
        /* ranges: each name once in range_names, each range's back through the view */
        assert_int_equal(rows_of(db, "range_events", id), r[i].ranges.n);
        size_t distinct = 0;
        for (size_t k = 0; k < r[i].ranges.n; k++) {
            size_t j = 0;
            while (j < k && r[i].ranges.v[j].name != r[i].ranges.v[k].name)
                j++;
            distinct += j == k;
        }
        assert_int_equal(rows_of(db, "range_names", id), distinct);
        assert_true(distinct < r[i].ranges.n);
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT name, depth FROM ranges WHERE trace_id = %d", id);
        sqlite3_stmt *rs = NULL;
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &rs, NULL), SQLITE_OK);
        for (size_t k = 0; k < r[i].ranges.n; k++) {
            assert_int_equal(sqlite3_step(rs), SQLITE_ROW);
            assert_string_equal((const char *)sqlite3_column_text(rs, 0),
                                lp_trace_str(t[i], r[i].ranges.v[k].name));
            assert_int_equal(sqlite3_column_int64(rs, 1), r[i].ranges.v[k].depth);
        }
        assert_int_equal(sqlite3_step(rs), SQLITE_DONE);
        sqlite3_finalize(rs);
    }
    /* kernels per stage through the join, as the analysis placed them */
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT s.stage_id, COUNT(*) FROM kernels k JOIN "
                                            "stages s USING(trace_id, stage_id) WHERE "
                                            "trace_id = 2 GROUP BY 1", -1, &st, NULL),
                     SQLITE_OK);
    size_t joined = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int stage = sqlite3_column_int(st, 0);
        size_t want = 0;
        for (size_t k = 0; k < t[1]->n_kernels; k++)
            want += lp_run_kernel_stage(&r[1], k) == stage;
        assert_int_equal(sqlite3_column_int64(st, 1), want);
        joined += want;
    }
    sqlite3_finalize(st);
    assert_true(joined > 0);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM sqlite_master WHERE type = "
                                            "'index'", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 6); /* the events' own order serves kernels */
    sqlite3_finalize(st);
    /* each work row's api_id: the call of its trace with its correlation id, the one the
     * analysis ties it to; NULL for each without */
    for (int i = 0; i < 2; i++) {
        struct lp_calls *calls = lp_calls_index(t[i]);
        assert_non_null(calls);
        int64_t tied = 0;
        for (size_t k = 0; k < t[i]->n_kernels; k++)
            tied += lp_calls_find(calls, t[i]->kernels[k].correlation) >= 0;
        lp_calls_free(calls);
        char sql[512];
        snprintf(sql, sizeof sql,
                 "SELECT (SELECT COUNT(*) FROM kernels k JOIN api_calls a USING (api_id) WHERE "
                 "k.trace_id = %d AND a.trace_id = %d AND a.correlation = k.correlation), "
                 "(SELECT COUNT(*) FROM kernels WHERE trace_id = %d AND api_id IS NOT NULL)",
                 i + 1, i + 1, i + 1);
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_true(tied > 0);
        assert_int_equal(sqlite3_column_int64(st, 0), tied);
        assert_int_equal(sqlite3_column_int64(st, 1), tied);
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    for (int i = 0; i < 2; i++) {
        lp_run_free(&r[i]);
        lp_trace_free(t[i]);
    }
    /* a path that cannot be opened: an error that says which */
    assert_int_equal(lp_sqlite_open(&db, "/nonexistent-dir/x.db", err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent-dir/x.db"));
    assert_null(db);
    unlink(path);
}

/* The rows a SQLite export of FIXTURE holds, as sums over its big tables, written with at
 * most VARS parameters per statement (0: SQLite's own limit): "count sum sum ..." */
static void sqlite_sums(const char *fixture_name, int vars, char *out, size_t len)
{
    char path[] = "/tmp/lp_sqlite_vars_XXXXXX", err[512] = "";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    sqlite3 *db = NULL;
    assert_int_equal(lp_sqlite_open(&db, path, err, sizeof err), 0);
    if (vars)
        sqlite3_limit(db, SQLITE_LIMIT_VARIABLE_NUMBER, vars);
    struct lp_trace *t = fixture(fixture_name);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(lp_sqlite_add_trace(db, 1, fixture_name, &r, err, sizeof err), 0);
    assert_int_equal(lp_sqlite_close(db, err, sizeof err), 0);
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(
                         db, "SELECT (SELECT COUNT(*) || ' ' || SUM(start_ns % 1000003) || "
                             "' ' || SUM(end_ns - start_ns) || ' ' || SUM(grid_x * 1000 + "
                             "block_x) || ' ' || SUM(COALESCE(stage_id, -7) * name_id) FROM "
                             "kernels), (SELECT COUNT(*) || ' ' || SUM(start_ns % 1000003) || "
                             "' ' || SUM(end_ns - start_ns) || ' ' || SUM(length(name) * cbid) "
                             "FROM api_calls), (SELECT COUNT(*) || ' ' || SUM(bytes) FROM "
                             "memcpys)",
                         -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    snprintf(out, len, "%s | %s | %s", sqlite3_column_text(st, 0), sqlite3_column_text(st, 1),
             sqlite3_column_text(st, 2));
    sqlite3_finalize(st);
    sqlite3_close(db);
    lp_run_free(&r);
    lp_trace_free(t);
    unlink(path);
}

/* The export's rows are the same whatever the number of parameters a statement may bind:
 * SQLite's own limit (64 rows a statement), 999 (a build before 3.32: 49 kernel rows), 25
 * (a row a statement) */
static void test_sqlite_parameter_limit(void **state)
{
    (void)state;
    char a[512], b[512], c[512];
    sqlite_sums("capture-nvtx-hf", 0, a, sizeof a);
    sqlite_sums("capture-nvtx-hf", 999, b, sizeof b);
    sqlite_sums("capture-nvtx-hf", 25, c, sizeof c);
    assert_string_equal(a, b);
    assert_string_equal(a, c);
    assert_true(strtoll(a, NULL, 10) > 64); /* more kernels than one batch */
}

/* 1 when column COL of ST holds WANT: an integer, or NULL where WANT is NULL_IF */
static int column_is(sqlite3_stmt *st, int col, int64_t want, int64_t null_if)
{
    if (want == null_if)
        return sqlite3_column_type(st, col) == SQLITE_NULL;
    return sqlite3_column_type(st, col) == SQLITE_INTEGER && sqlite3_column_int64(st, col) == want;
}

/* FIXTURE's kernel, copy and API call rows checked column by column against its records;
 * adds to NULLS and VALUES the api_id and stage_id cells that are NULL and not */
static void sqlite_rows_of(const char *fixture_name, size_t *nulls, size_t *values)
{
    char path[] = "/tmp/lp_sqlite_rows_XXXXXX", err[512] = "";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    sqlite3 *db = NULL;
    assert_int_equal(lp_sqlite_open(&db, path, err, sizeof err), 0);
    struct lp_trace *t = fixture(fixture_name);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(lp_sqlite_add_trace(db, 1, fixture_name, &r, err, sizeof err), 0);
    assert_int_equal(lp_sqlite_close(db, err, sizeof err), 0);
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    struct lp_calls *calls = lp_calls_index(t);
    assert_non_null(calls);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT trace_id, device, stream, start_ns, end_ns, "
                                            "name_id, stage_id, correlation, grid_x, grid_y, "
                                            "grid_z, block_x, block_y, block_z, registers, "
                                            "static_smem, dynamic_smem, graph_id, graph_node_id, "
                                            "flags, api_id, kernel_id FROM kernels ORDER BY "
                                            "kernel_id",
                                        -1, &st, NULL),
                     SQLITE_OK);
    size_t k = 0;
    for (; sqlite3_step(st) == SQLITE_ROW; k++) {
        assert_true(k < t->n_kernels);
        const struct lp_kernel_rec *x = &t->kernels[k];
        const struct lp_kernel_config *c = lp_trace_kernel_config(t, x);
        int64_t call = lp_calls_find(calls, x->correlation); /* api_id: its rowid, from 1 */
        int64_t want[] = {1, c->device, c->stream, (int64_t)x->start,
                          (int64_t)lp_trace_kernel_end(t, x),
                          lp_run_kernel_group(&r, k), lp_run_kernel_stage(&r, k),
                          x->correlation, c->grid[0], c->grid[1], c->grid[2], c->block[0],
                          c->block[1], c->block[2], c->registers, c->static_smem,
                          c->dynamic_smem, c->graph_id, (int64_t)c->graph_node_id, c->flags,
                          call < 0 ? -1 : call + 1, (int64_t)k};
        for (int col = 0; col < (int)(sizeof want / sizeof want[0]); col++) {
            int nullable = col == 6 || col == 20; /* stage_id, api_id */
            assert_true(column_is(st, col, want[col], nullable ? -1 : INT64_MIN));
            if (nullable)
                *(want[col] < 0 ? nulls : values) += 1;
        }
    }
    sqlite3_finalize(st);
    assert_int_equal(k, t->n_kernels);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT device, stream, start_ns, end_ns, bytes, "
                                            "copy_kind, correlation, api_id FROM memcpys ORDER "
                                            "BY rowid", -1, &st, NULL),
                     SQLITE_OK);
    size_t m = 0;
    for (; sqlite3_step(st) == SQLITE_ROW; m++) {
        assert_true(m < t->n_memcpys);
        const struct lp_memcpy *x = &t->memcpys[m];
        int64_t call = lp_calls_find(calls, x->correlation);
        int64_t want[] = {x->device, x->stream, (int64_t)x->start, (int64_t)x->end,
                          (int64_t)x->bytes, x->copy_kind, x->correlation,
                          call < 0 ? -1 : call + 1};
        for (int col = 0; col < (int)(sizeof want / sizeof want[0]); col++)
            assert_true(column_is(st, col, want[col], col == 7 ? -1 : INT64_MIN));
    }
    sqlite3_finalize(st);
    assert_int_equal(m, t->n_memcpys);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT thread, start_ns, end_ns, name, domain, cbid,"
                                            " correlation, status FROM api_calls ORDER BY "
                                            "api_id", -1, &st, NULL),
                     SQLITE_OK);
    size_t a = 0;
    for (; sqlite3_step(st) == SQLITE_ROW; a++) {
        assert_true(a < t->n_apis);
        const struct lp_api_rec *x = &t->apis[a];
        const struct lp_api_kind *xk = lp_trace_api_kind(t, x);
        assert_int_equal(sqlite3_column_int64(st, 0), xk->thread);
        assert_int_equal(sqlite3_column_int64(st, 1), (int64_t)x->start);
        assert_int_equal(sqlite3_column_int64(st, 2), (int64_t)lp_trace_api_end(t, x));
        assert_string_equal((const char *)sqlite3_column_text(st, 3), lp_trace_str(t, xk->name));
        const char *dom = xk->domain == LP_API_DOMAIN_RUNTIME  ? "runtime"
                          : xk->domain == LP_API_DOMAIN_DRIVER ? "driver"
                                                               : NULL;
        if (dom)
            assert_string_equal((const char *)sqlite3_column_text(st, 4), dom);
        else
            assert_int_equal(sqlite3_column_type(st, 4), SQLITE_NULL);
        assert_int_equal(sqlite3_column_int64(st, 5), xk->cbid);
        assert_int_equal(sqlite3_column_int64(st, 6), x->correlation);
        assert_int_equal(sqlite3_column_int64(st, 7), xk->status);
    }
    sqlite3_finalize(st);
    assert_int_equal(a, t->n_apis);
    lp_calls_free(calls);
    sqlite3_close(db);
    lp_run_free(&r);
    lp_trace_free(t);
    unlink(path);
}

/* Every kernel, copy and API call row holds its record's values, column by column, in
 * trace order: a value is bound again only when it differs from the one bound in its place
 * in the batch before (the export's bind cache), so a row that repeats its predecessor's
 * shape, stream or name but not its times must still come out whole, and a NULL after a
 * value (a kernel no call launched, one outside every stage) and a value after a NULL too */
static void test_sqlite_rows_exact(void **state)
{
    (void)state;
    size_t nulls = 0, values = 0;
    /* llama-ops: a range per operator; the other two: a few kernels no recorded call launched
     * among 32 K and 109 K, and copies */
    const char *names[] = {"llama-ops", "triton-dec-ctr", "ctr-hf-moe"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        sqlite_rows_of(names[i], &nulls, &values);
    assert_true(nulls >= 20 && values > 100000); /* both, so the cache sees them alternate */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_given_other),
        cmocka_unit_test(test_finding_premises),
        cmocka_unit_test(test_model_misfit),
        cmocka_unit_test(test_capture_windows),
        cmocka_unit_test(test_capture_windows_listed),
        cmocka_unit_test(test_capture_split),
        cmocka_unit_test(test_sqlite_export),
        cmocka_unit_test(test_sqlite_rows_exact),
        cmocka_unit_test(test_sqlite_parameter_limit),
        cmocka_unit_test(test_capture_nvtx_fixtures),
        cmocka_unit_test(test_capture_fixtures),
        cmocka_unit_test(test_text_tables),
        cmocka_unit_test(test_launch_correlation_not_overlap),
        cmocka_unit_test(test_nested_substages),
        cmocka_unit_test(test_vision_in_prefill),
        cmocka_unit_test(test_messy_ranges),
        cmocka_unit_test(test_no_ranges_is_one_stage),
        cmocka_unit_test(test_warmup_tokens_and_stats),
        cmocka_unit_test(test_bad_stage_rule),
        cmocka_unit_test(test_operators_inclusive_and_self),
        cmocka_unit_test(test_operators_many),
        cmocka_unit_test(test_operator_shapes),
        cmocka_unit_test(test_operator_shapes_none),
        cmocka_unit_test(test_operator_shapes_unread_only),
        cmocka_unit_test(test_operator_shapes_malformed),
        cmocka_unit_test(test_operator_shapes_ocr),
        cmocka_unit_test(test_gap_causes),
        cmocka_unit_test(test_power_energy_per_token),
        cmocka_unit_test(test_truncated_trace),
        cmocka_unit_test(test_mfu_from_model),
        cmocka_unit_test(test_kernel_names),
        cmocka_unit_test(test_gemm_linking_and_rows),
        cmocka_unit_test(test_gemm_rows_many_shapes),
        cmocka_unit_test(test_gemm_rows_listed_max),
        cmocka_unit_test(test_graph_rows_max),
        cmocka_unit_test(test_name_cut),
        cmocka_unit_test(test_inferred_stages),
        cmocka_unit_test(test_inferred_around_vision),
        cmocka_unit_test(test_fixture_llama_gemms),
        cmocka_unit_test(test_fixture_inferred_stages),
        cmocka_unit_test(test_fixture_gemm_shapes),
        cmocka_unit_test(test_writers),
        cmocka_unit_test(test_perfetto_before_t0),
        cmocka_unit_test(test_perfetto_pb_lanes),
        cmocka_unit_test(test_perfetto_pb_devices),
        cmocka_unit_test(test_names_not_utf8),
        cmocka_unit_test(test_fixture_llama),
        cmocka_unit_test(test_fixture_torch_operators),
        cmocka_unit_test(test_fixture_llama_operators),
        cmocka_unit_test(test_fixture_killed),
        cmocka_unit_test(test_implausible_kernel),
        cmocka_unit_test(test_harness_llama),
        cmocka_unit_test(test_harness_moe),
        cmocka_unit_test(test_harness_counters),
        cmocka_unit_test(test_harness_triton),
        cmocka_unit_test(test_gemm_steps_row),
        cmocka_unit_test(test_flags_vs_trace),
        cmocka_unit_test(test_json_ns_integers),
        cmocka_unit_test(test_altered_trace),
        cmocka_unit_test(test_fixture_pm),
        cmocka_unit_test(test_fixture_counters_ncu),
        cmocka_unit_test(test_harness_ocr2),
        cmocka_unit_test(test_harness_generate),
        cmocka_unit_test(test_harness_graph),
        cmocka_unit_test(test_harness_nogemm),
        cmocka_unit_test(test_harness_styles),
        cmocka_unit_test(test_fixture_not_llm),
        cmocka_unit_test(test_losses_counted_or_not),
        cmocka_unit_test(test_serving_writers),
        cmocka_unit_test(test_spread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
