/* Steps, tokens, requests and warm-up found in traces that do not name them
 * (src/analyze/steps.c, requests.c, infer.c), on synthetic traces: decode steps from the
 * lm_head GEMM, from CUDA graph replays and from the repeating kernel sequence; the batch and
 * token counts from GEMM shapes against flags and range names; effective spans; a first
 * request set apart as warm-up; programs that are no LLM; GEMM kernels without shapes. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "llmprof/analyze.h"
#include "tracebuild.h"

/* ---- building traces (tracebuild.h has the common records) ---- */

/* one replay of CUDA graph G: a cudaGraphLaunch call at LAUNCH on thread 1 and N kernels of
 * 1 us back to back from S, all with the launch's correlation; returns the last one's end */
static uint64_t graph_replay(struct tb *b, uint64_t launch, uint32_t g, int n, uint64_t s)
{
    uint32_t corr = b->next_corr++;
    api(b, "cudaGraphLaunch", 1, launch, corr);
    static const char *const names[] = {"graph_gemm", "graph_attn", "graph_norm"};
    for (int i = 0; i < n; i++, s += 1000) {
        struct lp_record r = {.type = LP_REC_KERNEL};
        r.u.kernel = (struct lp_kernel){.start = s, .end = s + 1000, .correlation = corr,
                                        .stream = 7, .graph_id = g,
                                        .graph_node_id = (uint64_t)i + 1,
                                        .flags = LP_KERNEL_FLAG_GRAPH,
                                        .name = lp_trace_writer_intern(b->w, names[i % 3])};
        add(b, &r);
    }
    return s;
}

/* a GEMM call M x N x K of cudaDataType TYPE (14 bf16, 0 fp32) on THREAD from A to E */
static void gemm_call(struct tb *b, uint32_t thread, uint64_t a, uint64_t e, uint64_t m,
                      uint64_t n, uint64_t k, uint32_t type)
{
    struct lp_record r = {.type = LP_REC_GEMM};
    r.u.gemm = (struct lp_gemm){.start = a, .end = e, .thread = thread,
                                .api = lp_trace_writer_intern(b->w, "cublasGemmEx"), .m = m,
                                .n = n, .k = k, .batch = 1, .transa = 1, .a_type = type,
                                .b_type = type, .c_type = type, .d_type = type,
                                .compute_type = 68, .algo = -1, .epilogue = 1};
    add(b, &r);
}

/* a bf16 GEMM call M x N x K on thread 1 at T (5 us) whose one kernel is launched inside it
 * (T + 1 us) and runs DUR ns from T + 2 us; returns the kernel's end */
static uint64_t gemm_k(struct tb *b, uint64_t t, uint64_t m, uint64_t n, uint64_t k,
                       uint64_t dur)
{
    gemm_call(b, 1, t, t + 5000, m, n, k, 14);
    kernel(b, "nvjet_sm90_tst_128x64", 1, t + 1000, t + 2000, t + 2000 + dur);
    return t + 2000 + dur;
}

/* A model's prefill (512 tokens: 4 projections and the lm_head) then 3 decode steps, from T on
 * thread 1, no ranges: GEMM calls whose kernels were recorded when KERNELS, else calls alone
 * (made outside a capture window). Returns the end of the last call. */
static uint64_t unnamed_request(struct tb *b, uint64_t t, int kernels)
{
    for (int s = 0; s < 4; s++) { /* the prefill, then the steps */
        for (int i = 0; i < 5; i++, t += 10000) {
            uint64_t m = i < 4 ? 2048 : 32000, n = s ? 1 : 512;
            if (kernels)
                gemm_k(b, t, m, n, 2048, s ? 2000 : 3000);
            else
                gemm_call(b, 1, t, t + 5000, m, n, 2048, 14);
        }
        t += s ? 50000 : 100000;
    }
    return t;
}

/* One request from T on thread 1: a range PNAME of PRE ns holding 4 projections 2048 x PN x
 * 2048 and the lm_head 32000 x PN x 2048 (8 us kernels, the last ending at T + 71 us); then
 * 50 us after it a range "decode" of STEPS steps 100 us apart, each with 4 projections
 * 2048 x DN x 2048 (4 us kernels), the lm_head 32000 x DN x 2048 (its kernel ends 53 us into
 * the step) and an argmax (56-58 us into the step). The decode range closes 57 us into its
 * last step, 1 us before that step's argmax ends. Returns the end of the decode's GPU work. */
static uint64_t request(struct tb *b, uint64_t t, const char *pname, uint64_t pre, uint64_t pn,
                        uint64_t dn, int steps)
{
    range(b, pname, 1, t, t + pre);
    for (int i = 0; i < 5; i++)
        gemm_k(b, t + 1000 + (uint64_t)i * 15000, i < 4 ? 2048 : 32000, pn, 2048, 8000);
    uint64_t d = t + pre + 50000, last = d + (uint64_t)(steps - 1) * 100000;
    range(b, "decode", 1, d, last + 57000);
    for (int s = 0; s < steps; s++) {
        uint64_t base = d + (uint64_t)s * 100000;
        for (int i = 0; i < 4; i++)
            gemm_k(b, base + 5000 + (uint64_t)i * 10000, 2048, dn, 2048, 4000);
        gemm_k(b, base + 45000, 32000, dn, 2048, 6000);
        kernel(b, "argmax_kernel", 1, base + 55000, base + 56000, base + 58000);
    }
    return last + 58000;
}

/* A equals B up to rounding */
static int near(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fabs(b) + 1e-18;
}

/* ---- steps ---- */

/* One decode range of 5 steps: steps from the lm_head's calls, TPOT over the decode's
 * effective span, one ITL per step, prefill tokens and batch from the GEMM shapes. */
static void test_steps_from_lm_head(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    uint64_t end = request(&b, 1000, "prefill", 100000, 512, 1, 5);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    const struct lp_stage_report *p = stage(&r, "prefill"), *d = stage(&r, "decode");
    assert_non_null(p);
    assert_non_null(d);
    assert_int_equal(d->occurrences, 1);
    assert_int_equal(d->steps, 5);
    assert_int_equal(d->steps_source, LP_STEPS_LM_HEAD);
    assert_int_equal(d->tokens, 5);
    assert_int_equal(d->tokens_source, LP_TOKENS_STEPS);
    assert_int_equal(r.llm.batch, 1);
    assert_int_equal(r.llm.batch_source, LP_TOKENS_SHAPES);
    assert_int_equal(r.llm.decode_steps, 5);
    assert_int_equal(r.llm.steps_source, LP_STEPS_LM_HEAD);
    /* decode: from its range's start to its last argmax's end, 1 us past the range */
    uint64_t dstart = 1000 + 100000 + 50000;
    assert_int_equal(end, dstart + 4 * 100000 + 58000);
    assert_true(near(r.llm.tpot_s, (double)(end - dstart) / 5 / 1e9));
    assert_true(near(r.llm.tpot_s, 91600e-9));
    assert_true(near(d->wall.total, 458000));
    /* steps end at their lm_head's kernel end (53 us into a step), the last at the decode's
     * end: 53, 100, 100, 100 and 105 us */
    assert_int_equal(r.llm.itl.n, 5);
    assert_true(near(r.llm.itl.min, 53000));
    assert_true(near(r.llm.itl.p50, 100000));
    assert_true(near(r.llm.itl.max, 105000));
    assert_true(near(r.llm.itl.mean, 458000.0 / 5));
    assert_int_equal(d->step.n, 5);
    /* prefill: tokens from the shapes (n = 512), TTFT its range (its GPU work ended inside) */
    assert_int_equal(p->tokens, 512);
    assert_int_equal(p->tokens_source, LP_TOKENS_SHAPES);
    assert_int_equal(r.llm.prompt_tokens, 512);
    assert_int_equal(r.llm.prefill_logits, 2); /* lm_head 32000 x 512: every token */
    assert_int_equal(r.llm.ttft.n, 1);
    assert_true(near(r.llm.ttft_s, 100000e-9));
    assert_int_equal(r.llm.requests, 1);
    assert_int_equal(r.warmup.cause, LP_WARMUP_NONE);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* One "decode" range around a whole generate call, its prefill inside: the decode's lm_head
 * (at the range's token dimension, 1) counts the steps, not the prefill's of equal weight. */
static void test_decode_range_holding_prefill(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "decode", 1, 1000, 1000000);
    for (int i = 0; i < 5; i++)
        gemm_k(&b, 2000 + (uint64_t)i * 15000, i < 4 ? 2048 : 32000, 512, 2048, 8000);
    for (int s = 0; s < 6; s++) {
        uint64_t base = 100000 + (uint64_t)s * 100000;
        for (int i = 0; i < 4; i++)
            gemm_k(&b, base + 5000 + (uint64_t)i * 10000, 2048, 1, 2048, 4000);
        gemm_k(&b, base + 45000, 32000, 1, 2048, 6000);
    }
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    const struct lp_stage_report *d = stage(&r, "decode");
    assert_non_null(d);
    assert_int_equal(d->steps, 6);
    assert_int_equal(d->steps_source, LP_STEPS_LM_HEAD);
    assert_int_equal(r.llm.batch, 1);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Batch 4: prefill n = 4 x 512, decode n = 4: the batch from the decode shapes, decode
 * tokens = steps x 4, the prompt of one prefill range 2048 (all sequences). */
static void test_batch_from_shapes(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    request(&b, 1000, "prefill", 100000, 4 * 512, 4, 5);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    const struct lp_stage_report *p = stage(&r, "prefill"), *d = stage(&r, "decode");
    assert_int_equal(r.llm.batch, 4);
    assert_int_equal(r.llm.batch_source, LP_TOKENS_SHAPES);
    assert_int_equal(d->steps, 5);
    assert_int_equal(d->steps_source, LP_STEPS_LM_HEAD);
    assert_int_equal(d->batch, 4);
    assert_int_equal(d->tokens, 5 * 4);
    assert_int_equal(r.llm.decode_tokens, 20);
    assert_int_equal(p->tokens, 2048);
    assert_int_equal(p->tokens_source, LP_TOKENS_SHAPES);
    assert_int_equal(r.llm.prompt_tokens, 2048);
    /* TPOT is one step of the batch, not one token of it */
    assert_true(near(r.llm.tpot_s, 91600e-9));
    lp_run_free(&r);
    lp_trace_free(t);
}

/* One decode range of 6 steps, each an eager copy then one replay of graph 7 (3 kernels):
 * steps from the graph launches, each ending at its replay's last kernel. */
static void test_steps_from_graphs(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "decode", 1, 1000, 270000);
    uint64_t last_end = 0;
    for (int s = 0; s < 6; s++) {
        uint64_t base = 10000 + (uint64_t)s * 50000;
        kernel(&b, "copy_kernel", 1, base, base + 1000, base + 2000);
        last_end = graph_replay(&b, base + 3000, 7, 3, base + 4000);
        assert_int_equal(last_end, base + 7000);
    }
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    const struct lp_stage_report *d = stage(&r, "decode");
    assert_non_null(d);
    assert_int_equal(d->kernels, 24);
    assert_int_equal(d->graph_kernels, 18);
    assert_int_equal(d->steps, 6);
    assert_int_equal(d->steps_source, LP_STEPS_GRAPHS);
    assert_int_equal(d->tokens, 6);
    /* steps end at 17, 67, ..., 217 us, the last at the range's end (270 us) */
    assert_int_equal(r.llm.itl.n, 6);
    assert_true(near(r.llm.itl.min, 16000));
    assert_true(near(r.llm.itl.p50, 50000));
    assert_true(near(r.llm.itl.max, 53000));
    assert_true(near(r.llm.tpot_s, 269000e-9 / 6));
    lp_run_free(&r);
    lp_trace_free(t);
}

/* No GEMM records: a prefill of 6 kernels a..f, a decode of 4 steps of about the same
 * kernels, each ending with an argmax (one step has an extra fill first): steps from the
 * repeating sequence. */
static void test_steps_from_sequence(void **state)
{
    (void)state;
    static const char *const names[] = {"a", "b", "c", "d", "e", "f"};
    struct tb b;
    tb_open(&b);
    range(&b, "prefill", 1, 1000, 100000);
    for (int i = 0; i < 6; i++) {
        uint64_t l = 2000 + (uint64_t)i * 10000;
        kernel(&b, names[i], 1, l, l + 1000, l + 5000);
    }
    range(&b, "decode", 1, 200000, 396000);
    for (int s = 0; s < 4; s++) {
        uint64_t base = 201000 + (uint64_t)s * 50000;
        if (s == 2)
            kernel(&b, "fill_kernel", 1, base - 3000, base - 2000, base - 1500);
        for (int i = 0; i < 5; i++) {
            uint64_t l = base + (uint64_t)i * 8000;
            kernel(&b, names[i], 1, l, l + 1000, l + 4000);
        }
        kernel(&b, "argmax", 1, base + 40000, base + 41000, base + 43000);
    }
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(t->n_gemms, 0);
    const struct lp_stage_report *d = stage(&r, "decode");
    assert_non_null(d);
    assert_int_equal(d->kernels, 25);
    assert_int_equal(d->steps, 4);
    assert_int_equal(d->steps_source, LP_STEPS_SEQUENCE);
    assert_int_equal(d->tokens, 4);
    /* steps end at each argmax's end (244, 294, 344 us), the last at the range's end */
    assert_int_equal(r.llm.itl.n, 4);
    assert_true(near(r.llm.itl.min, 44000));
    assert_true(near(r.llm.itl.max, 52000));
    assert_true(near(r.llm.tpot_s, 196000e-9 / 4));
    lp_run_free(&r);
    lp_trace_free(t);

    /* the same with a third step twice as long (6 more kernels): the argmax no longer ends
     * regular steps, and a range of 30 kernels is longer than one step: steps unknown */
    tb_open(&b);
    range(&b, "prefill", 1, 1000, 100000);
    for (int i = 0; i < 6; i++) {
        uint64_t l = 2000 + (uint64_t)i * 10000;
        kernel(&b, names[i], 1, l, l + 1000, l + 5000);
    }
    range(&b, "decode", 1, 200000, 450000);
    for (int s = 0, extra = 0; s < 4; s++) {
        uint64_t base = 201000 + (uint64_t)s * 50000 + (uint64_t)extra;
        if (s == 2)
            for (int i = 0; i < 6; i++, extra += 8000)
                kernel(&b, "x", 1, base + (uint64_t)extra, base + (uint64_t)extra + 1000,
                       base + (uint64_t)extra + 4000);
        base += s == 2 ? (uint64_t)extra : 0;
        for (int i = 0; i < 5; i++) {
            uint64_t l = base + (uint64_t)i * 8000;
            kernel(&b, names[i], 1, l, l + 1000, l + 4000);
        }
        kernel(&b, "argmax", 1, base + 40000, base + 41000, base + 43000);
    }
    t = tb_read(&b, 1);
    analyze(t, NULL, &r);
    d = stage(&r, "decode");
    assert_int_equal(d->kernels, 30);
    assert_int_equal(d->steps, 0);
    assert_int_equal(d->steps_source, LP_STEPS_NONE);
    assert_int_equal(d->tokens, 0);
    assert_true(r.llm.tpot_s == 0);
    assert_int_equal(r.llm.itl.n, 0);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* A decode range about as long as a prefill in which nothing repeats at the step level is
 * one step: its layer loop (norm, attn, mlp x 3) repeats, but with a period far below the
 * prefill's 10 kernels. */
static void test_one_step_per_range(void **state)
{
    (void)state;
    static const char *const names[] = {"rms_norm_kernel", "flash_fwd_kernel", "mlp_kernel"};
    struct tb b;
    tb_open(&b);
    range(&b, "prefill", 1, 1000, 100000);
    for (int i = 0; i < 10; i++) {
        uint64_t l = 2000 + (uint64_t)i * 8000;
        kernel(&b, i < 9 ? names[i % 3] : "logits", 1, l, l + 1000, l + 5000);
    }
    range(&b, "decode", 1, 200000, 290000);
    for (int i = 0; i < 10; i++) {
        uint64_t l = 201000 + (uint64_t)i * 8000;
        kernel(&b, i < 9 ? names[i % 3] : "argmax", 1, l, l + 1000, l + 4000);
    }
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    const struct lp_stage_report *d = stage(&r, "decode");
    assert_non_null(d);
    assert_int_equal(d->kernels, 10);
    assert_int_equal(d->steps, 1);
    assert_int_equal(d->steps_source, LP_STEPS_RANGES);
    assert_int_equal(d->tokens, 1);
    assert_int_equal(r.llm.itl.n, 1);
    assert_true(near(r.llm.tpot_s, 90000e-9));
    lp_run_free(&r);
    lp_trace_free(t);
}

/* ---- warm-up ---- */

/* Four requests whose first prefill is 20 times slower: that request is set apart as warmup
 * (TTFT outlier), both of its occurrences; TTFT is the median of the other three; with
 * keep_warmup nothing is set apart. */
static void test_warmup_outlier(void **state)
{
    (void)state;
    const uint64_t pre[4] = {2000000, 100000, 102000, 104000};
    struct tb b;
    tb_open(&b);
    uint64_t t0 = 1000;
    for (int q = 0; q < 4; q++)
        t0 = request(&b, t0, "prefill", pre[q], 512, 1, 5) + 100000;
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.warmup.cause, LP_WARMUP_TTFT);
    assert_true(near(r.warmup.value_ns, 2000000));
    assert_true(near(r.warmup.median_ns, 102000));
    assert_int_equal(r.warmup.others, 3);
    assert_int_equal(r.warmup.occurrences, 2);
    assert_string_equal(r.stages[r.warmup.stage].name, "prefill");
    const struct lp_stage_report *w = stage(&r, "warmup"), *p = stage(&r, "prefill"),
                                 *d = stage(&r, "decode");
    assert_non_null(w);
    assert_int_equal(w->kind, LP_STAGE_KIND_WARMUP);
    assert_int_equal(w->occurrences, 2);
    assert_int_equal(w->kernels, 5 + 5 * 6); /* the first request's prefill and decode */
    assert_int_equal(p->occurrences, 3);
    assert_int_equal(d->occurrences, 3);
    assert_int_equal(p->tokens, 3 * 512);
    assert_int_equal(d->steps, 15);
    assert_int_equal(r.gemm.warmup_calls, 5 + 5 * 5);
    assert_int_equal(r.llm.requests, 3);
    assert_int_equal(r.llm.ttft.n, 3);
    assert_true(near(r.llm.ttft_s, 102000e-9));
    assert_true(near(r.llm.ttft.max, 104000));
    assert_int_equal(r.llm.itl.n, 15);
    lp_run_free(&r);
    /* kept: every request measured */
    struct lp_run_options o = {.keep_warmup = 1};
    analyze(t, &o, &r);
    assert_int_equal(r.warmup.cause, LP_WARMUP_NONE);
    assert_null(stage(&r, "warmup"));
    assert_int_equal(stage(&r, "prefill")->occurrences, 4);
    assert_int_equal(r.llm.ttft.n, 4);
    assert_true(near(r.llm.ttft_s, 103000e-9));
    assert_true(near(r.llm.ttft.max, 2000000));
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Four requests whose first decode steps take 1 ms against 100 us: set apart by TPOT. */
static void test_warmup_tpot_outlier(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    uint64_t t0 = 1000;
    for (int q = 0; q < 4; q++) {
        range(&b, "prefill", 1, t0, t0 + 100000);
        for (int i = 0; i < 5; i++)
            gemm_k(&b, t0 + 1000 + (uint64_t)i * 15000, i < 4 ? 2048 : 32000, 512, 2048, 8000);
        uint64_t d = t0 + 150000, step = q ? 100000 : 1000000;
        range(&b, "decode", 1, d, d + 5 * step);
        for (int s = 0; s < 5; s++) {
            uint64_t base = d + (uint64_t)s * step;
            for (int i = 0; i < 4; i++)
                gemm_k(&b, base + 5000 + (uint64_t)i * 10000, 2048, 1, 2048, 4000);
            gemm_k(&b, base + 45000, 32000, 1, 2048, 6000);
        }
        t0 = d + 5 * step + 100000;
    }
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.warmup.cause, LP_WARMUP_TPOT);
    assert_true(near(r.warmup.value_ns, 1000000));
    assert_true(near(r.warmup.median_ns, 100000));
    assert_string_equal(r.stages[r.warmup.stage].name, "decode");
    assert_int_equal(r.warmup.occurrences, 2);
    assert_int_equal(stage(&r, "warmup")->occurrences, 2);
    assert_int_equal(stage(&r, "prefill")->occurrences, 3);
    assert_int_equal(stage(&r, "decode")->steps, 15);
    assert_true(near(r.llm.tpot_s, 100000e-9));
    lp_run_free(&r);
    lp_trace_free(t);
}

/* A first request within 10 % of the others (which do not vary) is no warm-up. */
static void test_no_warmup_when_close(void **state)
{
    (void)state;
    const uint64_t pre[4] = {109000, 100000, 100000, 100000};
    struct tb b;
    tb_open(&b);
    uint64_t t0 = 1000;
    for (int q = 0; q < 4; q++)
        t0 = request(&b, t0, "prefill", pre[q], 512, 1, 5) + 100000;
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.warmup.cause, LP_WARMUP_NONE);
    assert_int_equal(r.warmup.occurrences, 0);
    assert_null(stage(&r, "warmup"));
    assert_int_equal(stage(&r, "prefill")->occurrences, 4);
    assert_int_equal(stage(&r, "decode")->occurrences, 4);
    assert_int_equal(r.llm.ttft.n, 4);
    assert_true(near(r.llm.ttft_s, 100000e-9));
    assert_true(near(r.llm.ttft.max, 109000));
    lp_run_free(&r);
    lp_trace_free(t);

    /* nor is one 2 times their median when they vary that much (6 robust sigmas: 1.09 ms) */
    const uint64_t spread[4] = {400000, 100000, 200000, 300000};
    tb_open(&b);
    t0 = 1000;
    for (int q = 0; q < 4; q++)
        t0 = request(&b, t0, "prefill", spread[q], 512, 1, 5) + 100000;
    t = tb_read(&b, 1);
    analyze(t, NULL, &r);
    assert_int_equal(r.warmup.cause, LP_WARMUP_NONE);
    assert_int_equal(stage(&r, "prefill")->occurrences, 4);
    assert_true(near(r.llm.ttft_s, 250000e-9));
    lp_run_free(&r);
    lp_trace_free(t);
}

/* ---- effective spans ---- */

/* A prefill range that closes before its kernel ends lasts until the kernel ends: TTFT =
 * kernel end - range start; a decode range opened meanwhile starts when that work is done. */
static void test_effective_span(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "prefill", 1, 1000, 50000);
    kernel(&b, "a", 1, 10000, 20000, 80000);
    range(&b, "decode", 1, 60000, 100000);
    kernel(&b, "a", 1, 70000, 85000, 90000);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(stage(&r, "prefill")->kernels, 1);
    assert_int_equal(r.llm.ttft.n, 1);
    assert_true(near(r.llm.ttft_s, (80000 - 1000) / 1e9));
    /* the decode: one step (nothing repeats), from 80 us (the prefill's work done) to 100 */
    const struct lp_stage_report *d = stage(&r, "decode");
    assert_int_equal(d->steps, 1);
    assert_int_equal(d->steps_source, LP_STEPS_RANGES);
    assert_true(near(r.llm.tpot_s, 20000e-9));
    lp_run_free(&r);
    lp_trace_free(t);
}

/* ---- programs without stage ranges ---- */

/* ---- what cannot be known stays unsaid ---- */

/* one eager forward pass of LAYERS layers from T on thread 1, 1 us per kernel, 2 us apart,
 * ending with an argmax; returns the time after it */
static uint64_t forward_pass(struct tb *b, uint64_t t, int layers)
{
    static const char *const layer[] = {"rms_norm", "gemm_qkv", "flash_attn", "gemm_o",
                                        "rms_norm", "gemm_up", "silu_mul", "gemm_down"};
    kernel(b, "embedding", 1, t, t + 500, t + 1500);
    t += 2000;
    for (int l = 0; l < layers; l++)
        for (size_t k = 0; k < sizeof layer / sizeof *layer; k++, t += 2000)
            kernel(b, layer[k], 1, t, t + 500, t + 1500);
    kernel(b, "lm_head_gemm", 1, t, t + 500, t + 1500);
    kernel(b, "argmax", 1, t + 2000, t + 2500, t + 3500);
    return t + 4000;
}

/* Per-step decode ranges without a prefill range and without GEMM records: nothing tells a
 * layer (which repeats 22 times in each range) from a step, so no steps and no TPOT rather
 * than 22 "steps" per token. */
static void test_no_steps_without_reference(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    uint64_t t = 1000;
    for (int i = 0; i < 5; i++) {
        uint64_t a = t;
        t = forward_pass(&b, t, 22);
        range(&b, "decode", 1, a, t);
        t += 10000;
    }
    struct lp_trace *tr = tb_read(&b, 1);
    struct lp_run r;
    analyze(tr, NULL, &r);
    const struct lp_stage_report *d = stage(&r, "decode");
    assert_int_equal(d->occurrences, 5);
    assert_int_equal(d->steps, 0);
    assert_int_equal(d->steps_source, LP_STEPS_NONE);
    assert_true(r.llm.tpot_s == 0);
    lp_run_free(&r);
    /* with a prefill range as the reference, each range is one step */
    tb_open(&b);
    t = forward_pass(&b, 1000, 22);
    range(&b, "prefill", 1, 1000, t);
    t += 10000;
    for (int i = 0; i < 5; i++) {
        uint64_t a = t;
        t = forward_pass(&b, t, 22);
        range(&b, "decode", 1, a, t);
        t += 10000;
    }
    lp_trace_free(tr);
    tr = tb_read(&b, 1);
    analyze(tr, NULL, &r);
    d = stage(&r, "decode");
    assert_int_equal(d->steps, 5);
    assert_int_equal(d->steps_source, LP_STEPS_RANGES);
    lp_run_free(&r);
    lp_trace_free(tr);
}

/* One decode range of 100 steps whose kernel count varies (routed experts), no prefill, no
 * GEMM records: no TPOT rather than the whole loop as one step. */
static void test_no_steps_in_irregular_loop(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    uint64_t t = 1000;
    for (int s = 0; s < 100; s++) {
        kernel(&b, "embedding", 1, t, t + 500, t + 1500);
        t += 2000;
        for (int e = 0; e < 3 + (s * 7) % 6; e++, t += 2000)
            kernel(&b, "expert_gemm", 1, t, t + 500, t + 1500);
        kernel(&b, "argmax", 1, t, t + 500, t + 1500);
        t += 2000;
    }
    range(&b, "decode", 1, 1000, t);
    struct lp_trace *tr = tb_read(&b, 1);
    struct lp_run r;
    analyze(tr, NULL, &r);
    assert_int_equal(stage(&r, "decode")->steps, 0);
    assert_true(r.llm.tpot_s == 0);
    lp_run_free(&r);
    lp_trace_free(tr);
}

/* Piecewise CUDA graphs (three graphs with eager attention between them) in per-step ranges:
 * each range is one step, not one per eager kernel. */
static void test_piecewise_graphs_per_step(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    uint64_t t = forward_pass(&b, 1000, 4);
    range(&b, "prefill", 1, 1000, t);
    for (int s = 0; s < 4; s++) {
        uint64_t a = t += 10000;
        for (uint32_t g = 1; g <= 3; g++) {
            t = graph_replay(&b, t, g, 3, t + 500) + 500;
            if (g < 3) {
                kernel(&b, "flash_attn_decode", 1, t, t + 500, t + 1500);
                t += 2000;
            }
        }
        range(&b, "decode", 1, a, t);
    }
    struct lp_trace *tr = tb_read(&b, 1);
    struct lp_run r;
    analyze(tr, NULL, &r);
    const struct lp_stage_report *d = stage(&r, "decode");
    assert_int_equal(d->occurrences, 4);
    assert_int_equal(d->steps, 4);
    assert_int_equal(d->steps_source, LP_STEPS_RANGES);
    lp_run_free(&r);
    lp_trace_free(tr);
}

/* Work with no launch record (--light) is given to the occurrence that began last before it;
 * a long kernel after the last range must not stretch that occurrence's time. */
static void test_by_time_work_does_not_stretch(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "prefill tokens=16", 1, 1000, 11000);
    kernel(&b, "k", 1, 0, 2000, 10000);
    for (int s = 0; s < 3; s++) {
        uint64_t a = 20000 + (uint64_t)s * 10000;
        range(&b, "decode tokens=1", 1, a, a + 8000);
        kernel(&b, "k", 1, 0, a + 1000, a + 7000);
    }
    kernel(&b, "long_tail", 1, 0, 60000, 100060000); /* 100 ms, after every range */
    struct lp_trace *tr = tb_read(&b, 1);
    struct lp_run r;
    analyze(tr, NULL, &r);
    assert_int_equal(r.attribution.by_time, 5);
    assert_true(fabs(r.llm.tpot_s - 8000e-9) < 1e-15);
    assert_true(stage(&r, "decode")->step.max < 10001);
    lp_run_free(&r);
    lp_trace_free(tr);
}

/* A program that names every step ("decode step=3 tokens=1", no GEMM shapes): each decode
 * range is one step, its span (to the end of its GPU work) the step's time, so ITL has one
 * value per range: 6, 7 and 9 us. */
static void test_one_step_ranges_give_itl(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "prefill tokens=16", 1, 1000, 11000);
    kernel(&b, "k", 1, 1500, 2000, 10000);
    static const uint64_t len[3] = {6000, 7000, 9000};
    for (int s = 0; s < 3; s++) {
        char name[64];
        uint64_t a = 20000 + (uint64_t)s * 20000;
        snprintf(name, sizeof name, "decode step=%d tokens=1", s);
        range(&b, name, 1, a, a + 3000);
        kernel(&b, "k", 1, a + 500, a + 1000, a + len[s]); /* its work outlasts the range */
    }
    struct lp_trace *tr = tb_read(&b, 1);
    struct lp_run r;
    analyze(tr, NULL, &r);
    assert_int_equal(r.llm.itl.n, 3);
    assert_true(near(r.llm.itl.min, 6000));
    assert_true(near(r.llm.itl.p50, 7000));
    assert_true(near(r.llm.itl.max, 9000));
    assert_int_equal(r.llm.tpot.n, 1);
    lp_run_free(&r);
    lp_trace_free(tr);
}

/* A first request with a longer prompt (as the GEMM shapes say) is no warm-up for taking
 * longer: TTFT is compared between requests of the same prompt length. */
static void test_longer_prompt_is_no_warmup(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    uint64_t t = 1000;
    const uint64_t prompt[] = {2048, 256, 256, 256};
    for (int q = 0; q < 4; q++) {
        range(&b, "prefill", 1, t, t + prompt[q] * 100);
        for (int i = 0; i < 5; i++)
            gemm_k(&b, t + 1000 + (uint64_t)i * 10000, i < 4 ? 2048 : 32000, prompt[q], 2048,
                   4000);
        t += prompt[q] * 100 + 1000;
        range(&b, "decode", 1, t, t + 60000);
        for (int i = 0; i < 5; i++)
            gemm_k(&b, t + 1000 + (uint64_t)i * 10000, i < 4 ? 2048 : 32000, 1, 2048, 4000);
        t += 70000;
    }
    struct lp_trace *tr = tb_read(&b, 1);
    struct lp_run r;
    analyze(tr, NULL, &r);
    assert_int_equal(r.warmup.cause, LP_WARMUP_NONE);
    assert_int_equal(stage(&r, "prefill")->occurrences, 4);
    lp_run_free(&r);
    lp_trace_free(tr);
}

/* GEMMs of unrelated shapes and no ranges: no LLM, one stage "run", nothing inferred; GEMMs
 * shaped like one model's prefill and decode steps get inferred stages. */
static void test_no_llm(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    uint64_t t0 = 1000;
    for (int i = 0; i < 5; i++, t0 += 20000) {
        gemm_call(&b, 1, t0, t0 + 5000, 4096, 7, 1000, 14);
        kernel(&b, "nvjet_sm90_tst_64x8", 1, t0 + 1000, t0 + 2000, t0 + 6000);
    }
    for (int i = 0; i < 5; i++, t0 += 20000) {
        gemm_call(&b, 1, t0, t0 + 5000, 100, 3000, 50, 14);
        kernel(&b, "nvjet_sm90_tst_128x64", 1, t0 + 1000, t0 + 2000, t0 + 6000);
    }
    for (int i = 0; i < 3; i++, t0 += 20000) {
        gemm_call(&b, 1, t0, t0 + 5000, 1000, 1000, 1000, 0);
        kernel(&b, "sgemm_128x128", 1, t0 + 1000, t0 + 2000, t0 + 9000);
    }
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.llm.found, 0);
    assert_true(r.llm.ttft_s == 0);
    assert_true(r.llm.tpot_s == 0);
    assert_int_equal(r.llm.ttft.n, 0);
    assert_int_equal(r.llm.itl.n, 0);
    assert_int_equal(r.n_stages, 1);
    assert_int_equal(r.stages[0].kind, LP_STAGE_KIND_RUN);
    assert_int_equal(r.stages[0].kernels, 13);
    assert_int_equal(r.stages_inferred, 0);
    assert_int_equal(r.gemm.linked, 13);
    lp_run_free(&r);
    lp_trace_free(t);

    /* one model's prefill (512 tokens) and 3 decode steps, no ranges */
    tb_open(&b);
    unnamed_request(&b, 1000000, 1);
    t = tb_read(&b, 1);
    analyze(t, NULL, &r);
    assert_int_equal(r.stages_inferred, 1);
    assert_int_equal(r.llm.found, 1);
    const struct lp_stage_report *p = stage(&r, "prefill"), *d = stage(&r, "decode");
    assert_non_null(p);
    assert_non_null(d);
    assert_int_equal(p->occurrences, 1);
    assert_int_equal(p->tokens, 512);
    assert_int_equal(d->occurrences, 3);
    assert_int_equal(d->tokens, 3);
    assert_true(r.llm.ttft_s > 0);
    assert_true(r.llm.tpot_s > 0);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* The same unrelated GEMMs called in a loop (A, B, C, A, B, C, ...) are no LLM either: the
 * short runs of 100- and 1000-token calls between the 7-token ones stay prefill-sized (a
 * call of many tokens never joins decode), and no decode call runs a prefill weight. */
static void test_no_llm_interleaved(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    uint64_t t0 = 1000;
    for (int i = 0; i < 5; i++) {
        gemm_k(&b, t0, 4096, 7, 1000, 3000);
        gemm_k(&b, t0 + 10000, 100, 3000, 50, 3000);
        gemm_call(&b, 1, t0 + 20000, t0 + 25000, 1000, 1000, 1000, 0);
        kernel(&b, "sgemm_128x128", 1, t0 + 21000, t0 + 22000, t0 + 29000);
        t0 += 30000;
    }
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    /* read, then freed before asserting: a failure leaks nothing */
    int inferred = r.stages_inferred, found = r.llm.found;
    double tpot = r.llm.tpot_s;
    size_t n_stages = r.n_stages;
    enum lp_stage_kind kind = r.stages[0].kind;
    lp_run_free(&r);
    lp_trace_free(t);
    assert_int_equal(inferred, 0);
    assert_int_equal(found, 0);
    assert_true(tpot == 0);
    assert_int_equal(n_stages, 1);
    assert_int_equal(kind, LP_STAGE_KIND_RUN);
}

/* ---- flags and names against shapes ---- */

/* --prefill-tokens and tokens= in a range name beat the GEMM shapes; --batch and batch= beat
 * the decode shapes; a decode token count that disagrees with the steps found drops their
 * bounds (no ITL). */
static void test_flags_and_names_win(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    request(&b, 1000, "prefill", 100000, 512, 1, 5);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    struct lp_run_options o = {.prefill_tokens = 100};
    analyze(t, &o, &r);
    const struct lp_stage_report *p = stage(&r, "prefill");
    assert_int_equal(p->tokens, 100);
    assert_int_equal(p->tokens_source, LP_TOKENS_FLAG);
    assert_int_equal(r.llm.prefill_source, LP_TOKENS_FLAG);
    assert_int_equal(r.llm.prompt_tokens, 100);
    lp_run_free(&r);
    /* --batch 2: decode tokens are the 5 steps found x 2 */
    o = (struct lp_run_options){.batch = 2};
    analyze(t, &o, &r);
    assert_int_equal(r.llm.batch, 2);
    assert_int_equal(r.llm.batch_source, LP_TOKENS_FLAG);
    assert_int_equal(stage(&r, "decode")->steps, 5);
    assert_int_equal(stage(&r, "decode")->tokens, 10);
    lp_run_free(&r);
    /* --decode-tokens 5 agrees with the 5 steps found: their bounds are kept */
    o = (struct lp_run_options){.decode_tokens = 5};
    analyze(t, &o, &r);
    assert_int_equal(stage(&r, "decode")->steps, 5);
    assert_int_equal(stage(&r, "decode")->steps_source, LP_STEPS_TOKENS);
    assert_int_equal(stage(&r, "decode")->tokens_source, LP_TOKENS_FLAG);
    assert_int_equal(r.llm.itl.n, 5);
    lp_run_free(&r);
    /* --decode-tokens 10: 10 steps, TPOT over 10, the 5 bounds found dropped */
    o = (struct lp_run_options){.decode_tokens = 10};
    analyze(t, &o, &r);
    assert_int_equal(stage(&r, "decode")->steps, 10);
    assert_int_equal(r.llm.itl.n, 0);
    assert_true(near(r.llm.tpot_s, 458000e-9 / 10));
    lp_run_free(&r);
    lp_trace_free(t);

    tb_open(&b);
    request(&b, 1000, "prefill tokens=64 batch=2", 100000, 512, 1, 5);
    t = tb_read(&b, 1);
    analyze(t, NULL, &r);
    p = stage(&r, "prefill");
    assert_int_equal(p->tokens, 64);
    assert_int_equal(p->tokens_source, LP_TOKENS_RANGE_NAME);
    assert_int_equal(r.llm.batch, 2);
    assert_int_equal(r.llm.batch_source, LP_TOKENS_RANGE_NAME);
    assert_int_equal(stage(&r, "decode")->tokens, 10);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* ---- GEMM time without shapes ---- */

/* A CUTLASS GEMM kernel no recorded call launched, beside a recorded call's kernel: its time
 * is the stage's GEMM time without shapes, and the coverage is shaped / (shaped + unshaped). */
static void test_unshaped_gemm(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "prefill", 1, 1000, 100000);
    gemm_k(&b, 10000, 2048, 512, 2048, 8000); /* kernel 12-20 us */
    kernel(&b, "cutlass::device_kernel<GemmUniversal>", 1, 30000, 31000, 34000);
    kernel(&b, "vectorized_elementwise_kernel", 1, 40000, 41000, 42000);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    const struct lp_stage_report *p = stage(&r, "prefill");
    assert_int_equal(p->gemm_calls, 1);
    assert_int_equal(p->gemm_ns, 8000);
    assert_int_equal(p->gemm_unshaped_ns, 3000);
    assert_true(near(p->gemm_coverage, 8000.0 / (8000 + 3000)));
    assert_int_equal(r.gemm.unshaped_ns, 3000);
    assert_int_equal(r.gemm.n_unshaped, 1);
    assert_string_equal(r.names[r.gemm.unshaped[0].group], "cutlass::device_kernel<GemmUniversal>");
    assert_int_equal(r.cats[r.gemm.unshaped[0].group], LP_KCAT_GEMM);
    assert_int_equal(r.gemm.unshaped[0].calls, 1);
    assert_int_equal(r.gemm.unshaped[0].gpu_ns, 3000);
    assert_string_equal(r.stages[r.gemm.unshaped[0].stage].name, "prefill");
    assert_true(near(r.gemm.unshaped[0].stage_share, 3000.0 / 11000));
    lp_run_free(&r);
    lp_trace_free(t);
}

/* record --capture on a program without ranges: GEMM calls are recorded all run, kernels only
 * in the window; the stages inferred from the calls before the window (a warm-up request
 * whose kernels were not recorded) are left out, the request in the window is measured */
static void test_inferred_in_window(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    lp_trace_writer_set_meta(b.w, "capture", "cuda-profiler");
    unnamed_request(&b, 1000000, 0); /* the warm-up: calls, no kernels */
    uint64_t w0 = 3000000, t0 = unnamed_request(&b, w0 + 1000, 1);
    struct lp_record w = {.type = LP_REC_WINDOW, .u.window = {.start = w0, .end = t0,
                          .cause = LP_WINDOW_CAUSE_PROFILER_API, .thread = 1}};
    add(&b, &w);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.stages_inferred, 1);
    assert_int_equal(r.capture.occ_outside, 4); /* the warm-up's prefill and 3 steps */
    const struct lp_stage_report *p = stage(&r, "prefill"), *d = stage(&r, "decode");
    assert_non_null(p);
    assert_non_null(d);
    assert_int_equal(p->occurrences, 1);
    assert_int_equal(d->occurrences, 3);
    assert_int_equal(r.llm.ttft.n, 1);
    assert_int_equal(r.gemm.calls, 20); /* the window's; the warm-up's left out */
    assert_int_equal(r.gemm.linked, 20);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* 24 bf16 calls of six odd shapes (m 2^26 + 1 or + 3, n 3 + 2 (i % 3), k 2^26 + 1), FLOPs past
 * 2^53 each, one kernel each; the calls' records written in time order or reversed */
static struct lp_trace *odd_gemms(int reversed)
{
    enum { N = 24 };
    struct tb b;
    tb_open(&b);
    uint64_t t0 = 1000000;
    for (int i = 0; i < N; i++) /* the kernels first, the calls after, in either order */
        kernel(&b, "nvjet_sm90_tst_128x64", 1, t0 + i * 100000 + 1000, t0 + i * 100000 + 2000,
               t0 + i * 100000 + 50000);
    for (int q = 0; q < N; q++) {
        int i = reversed ? N - 1 - q : q;
        uint64_t a = t0 + i * 100000;
        gemm_call(&b, 1, a, a + 5000, (1u << 26) + 2 * (i % 2) + 1, 3 + 2 * (i % 3),
                  (1u << 26) + 1, 14);
    }
    return tb_read(&b, 1);
}

/* GEMM FLOPs and bytes are summed exactly: the totals of the run, its stage and each table
 * row (four calls a row) are the same whichever order the calls' records come in, and are
 * the exact sums rounded once. The run's and stage's double sums of before 2026-11-28
 * differed between the orders (checked: this test failed with them). */
static void test_gemm_sums_exact(void **state)
{
    (void)state;
    for (uint32_t code = 0; code < 256; code++) { /* bytes are summed in quarters */
        double q = 4 * lp_cuda_type_bytes(code);
        assert_true(q == floor(q));
    }
    struct lp_trace *t[2] = {odd_gemms(0), odd_gemms(1)};
    struct lp_run r[2];
    for (int i = 0; i < 2; i++)
        analyze(t[i], NULL, &r[i]);
    __extension__ typedef unsigned __int128 u128;
    u128 flops = 0;
    for (size_t i = 0; i < t[0]->n_gemms; i++) {
        const struct lp_gemm call = lp_trace_gemm(t[0], i), *g = &call;
        flops += (u128)2 * g->m * g->n * g->k;
    }
    assert_int_equal(r[0].gemm.linked, 24);
    assert_true((double)flops > 1e17); /* far past 2^53: a double sum rounds */
    for (int o = 0; o < 2; o++) {
        assert_true(r[o].gemm.flops == (double)flops);
        double stage_flops = 0;
        for (size_t s = 0; s < r[o].n_stages; s++)
            stage_flops += r[o].stages[s].gemm_flops; /* one stage has them all */
        assert_true(stage_flops == (double)flops);
        assert_int_equal(r[o].gemm.n_rows, 6);
        for (size_t q = 0; q < r[o].gemm.n_rows; q++) { /* each row: its shape's calls */
            const struct lp_gemm_row *row = &r[o].gemm.rows[q];
            u128 f = 0, quarters = 0;
            for (size_t i = 0; i < t[o]->n_gemms; i++) {
                const struct lp_gemm call = lp_trace_gemm(t[o], i), *g = &call;
                if (g->m != row->call.m || g->n != row->call.n)
                    continue;
                f += (u128)2 * g->m * g->n * g->k;
                quarters += (u128)8 * (g->m * g->k + g->k * g->n + g->m * g->n);
            }
            assert_int_equal(row->linked, 4);
            assert_true(row->flops == (double)f && row->bytes == (double)quarters / 4);
        }
    }
    for (int i = 0; i < 2; i++) {
        lp_run_free(&r[i]);
        lp_trace_free(t[i]);
    }
}

/* lp_gemm_link keeps no per-kernel array where no GEMM call launched a kernel (4 bytes a
 * kernel at the analysis' peak), and one where a call did; lp_run_memory_need counts the
 * work array, the grouping and that array */
static void test_gemm_link_empty(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    kernel(&b, "elementwise", 1, 1000, 2000, 3000);
    gemm_call(&b, 1, 10000, 15000, 64, 64, 64, 14); /* its kernel launched after it ended */
    kernel(&b, "nvjet_sm90_tst_128x64", 1, 16000, 17000, 18000);
    struct lp_trace *t = tb_read(&b, 1);
    int32_t *kg = (int32_t *)1;
    assert_int_equal(lp_gemm_link(t, &kg, NULL), LP_OK);
    assert_null(kg);
    assert_int_equal(lp_run_memory_need(t), 2 * (16 + 8) + 2 * 4);
    lp_trace_free(t);
    tb_open(&b);
    gemm_k(&b, 10000, 64, 64, 64, 1000);
    t = tb_read(&b, 1);
    assert_int_equal(lp_gemm_link(t, &kg, NULL), LP_OK);
    assert_non_null(kg);
    assert_int_equal(kg[0], 0);
    free(kg);
    lp_trace_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steps_from_lm_head),
        cmocka_unit_test(test_decode_range_holding_prefill),
        cmocka_unit_test(test_batch_from_shapes),
        cmocka_unit_test(test_steps_from_graphs),
        cmocka_unit_test(test_steps_from_sequence),
        cmocka_unit_test(test_one_step_per_range),
        cmocka_unit_test(test_warmup_outlier),
        cmocka_unit_test(test_warmup_tpot_outlier),
        cmocka_unit_test(test_no_warmup_when_close),
        cmocka_unit_test(test_effective_span),
        cmocka_unit_test(test_no_steps_without_reference),
        cmocka_unit_test(test_no_steps_in_irregular_loop),
        cmocka_unit_test(test_piecewise_graphs_per_step),
        cmocka_unit_test(test_by_time_work_does_not_stretch),
        cmocka_unit_test(test_one_step_ranges_give_itl),
        cmocka_unit_test(test_longer_prompt_is_no_warmup),
        cmocka_unit_test(test_no_llm),
        cmocka_unit_test(test_no_llm_interleaved),
        cmocka_unit_test(test_inferred_in_window),
        cmocka_unit_test(test_flags_and_names_win),
        cmocka_unit_test(test_unshaped_gemm),
        cmocka_unit_test(test_gemm_sums_exact),
        cmocka_unit_test(test_gemm_link_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
