/* A serving loop (continuous batching): its iterations by kind, tokens, inter-token latency,
 * batches, CUDA graph buckets and the requests the program marks; report.json's "serving"
 * (only when the run is one) and iterations.csv. */
#include <stdio.h>
#include "section.h"

/* the kinds in the order the tables give them */
static const enum lp_iter_kind iter_kind_order[LP_ITER_KIND_COUNT] = {
    LP_ITER_KIND_DECODE, LP_ITER_KIND_MIXED, LP_ITER_KIND_PREFILL, LP_ITER_KIND_UNKNOWN};

static const char *const no_request_marks =
    "Per-request TTFT and TPOT are not given: the program does not mark its requests. An NVTX "
    "start/end range `request <id>` from admission to completion and a mark `token <id>` per "
    "token it emits (optionally `prefill <id> tokens=N` when a prefill chunk is scheduled) give "
    "them: integrations/llmprof_requests.py (Python) or integrations/llmprof_requests.h (C, "
    "C++); docs/serving.md says how.";

/* "4" or "4–7": a batch row's decode sequences */
static const char *batch_span(const struct lp_batch_row *b, char *buf, size_t len)
{
    if (b->lo == b->hi)
        snprintf(buf, len, "%lld", (long long)b->lo);
    else
        snprintf(buf, len, "%lld–%lld", (long long)b->lo, (long long)b->hi);
    return buf;
}

/* a percentile of the batch table, "-" for none (0) */
static const char *p50_or_dash(double ns, char *buf, size_t len)
{
    return ns > 0 ? lp_fmt_ns(ns, buf, len) : "-";
}

static void serving_kinds(FILE *f, const struct lp_serving *s)
{
    char b1[32], b2[32], b3[32];
    fprintf(f, "\n| iterations | n | time p50 | time p90 | time p99 | tokens in flight | decode "
               "sequences | prompt tokens |\n|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < LP_ITER_KIND_COUNT; i++) {
        const struct lp_iter_class *c = &s->cls[iter_kind_order[i]];
        if (!c->n)
            continue;
        fprintf(f, "| %s | %zu | ", lp_text_iter_kind(iter_kind_order[i]), c->n);
        if (c->time.n)
            fprintf(f, "%s | %s | %s | ", NS(c->time.p50), NS2(c->time.p90),
                    lp_fmt_ns(c->time.p99, b3, sizeof b3));
        else
            fprintf(f, "- | - | - | ");
        fprintf(f, "%lld | %lld | %lld |\n", (long long)c->tokens, (long long)c->decode,
                (long long)c->prefill_tokens);
    }
}

static void serving_counts(FILE *f, const struct lp_run *r)
{
    const struct lp_serving *s = &r->serving;
    char b1[32], b2[32], b3[32], b5[32];
    fprintf(f, "\n| count | value | source |\n|---|---|---|\n");
    fprintf(f, "| iterations | %zu | lm_head calls, one per forward pass |\n", s->n_iters);
    const char *gen_src = s->token_marks ? "the request convention's token marks in the "
                                           "iterations"
                                         : "sequences sampled by the lm_head (a warm-up's too)";
    fprintf(f, "| generated tokens | %lld | %s |\n", (long long)s->generated, gen_src);
    fprintf(f, "| generated tokens/s | %.1f | generated tokens / span |\n", s->generated_per_s);
    fprintf(f, "| prompt tokens | %lld | %s |\n", (long long)s->prefill_tokens,
            s->prefill_marks ? "the request convention's prefill marks; tokens in flight "
                               "less decodes in iterations without marks (a warm-up)"
                             : "tokens in flight less decode sequences, per iteration");
    fprintf(f, "| prompt tokens/s | %.1f | prompt tokens / span |\n", s->prefill_per_s);
    fprintf(f, "| span | %s | the first iteration's start to the last one's end |\n",
            NS(s->span_ns));
    if (s->itl.n) {
        fprintf(f, "| inter-token latency p50 / p90 / p99 | %s / %s / %s | token-weighted over "
                   "%zu tokens: each decode sequence of an iteration waited its period; no "
                   "request identity needed",
                NS(s->itl.p50), NS2(s->itl.p90), lp_fmt_ns(s->itl.p99, b5, sizeof b5),
                s->itl.n);
        if (s->itl_inferred)
            fprintf(f, "; %zu of the %zu tokens come from iterations whose decode count was "
                       "inferred (the sequences sampled the iteration before)",
                    s->itl_inferred, s->itl.n);
        fprintf(f, " |\n");
    } else {
        fprintf(f, "| inter-token latency | - | no decode sequence waited a known period |\n");
    }
    if (s->period.n)
        fprintf(f, "| iteration period p50 | %s | from one iteration's end to the next one's "
                   "(p90 %s) |\n", NS(s->period.p50), NS2(s->period.p90));
    fprintf(f, "| gap before forwards | %s | of the periods of iterations with decodes, from "
               "one iteration's end to the next forward's first GEMM kernel: sampling, "
               "scheduling, input preparation, Python",
            PCT(s->sched_share));
    if (s->sched_period_ns)
        fprintf(f, " (%s of %s)", NS(s->sched_gap_ns), NS2(s->sched_period_ns));
    fprintf(f, " |\n| GPU busy while decoding | %s | GPU busy time in those periods; the rest "
               "the GPU waited, within the forwards too |\n",
            PCT(s->decode_busy_share));
    if (s->n_buckets)
        fprintf(f, "| CUDA-graph padding share | %s | rows of the graph replays' captured sizes "
                   "past the sequences sampled |\n",
                PCT(s->padding_share));
}

static void serving_batches(FILE *f, const struct lp_serving *s)
{
    char b1[32], b2[32], b3[32], b4[32], span[48];
    if (!s->interference_rows)
        return;
    fprintf(f, "\nBy decode sequences: decode-only against mixed iterations (a prefill chunk "
               "beside the decodes), what the chunk costs the decodes that wait for it.\n\n"
               "| decode sequences | decode-only n | decode-only p50 | p90 | mixed n | mixed p50 | "
               "p90 | prompt tokens per mixed iteration |\n|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < s->n_batches; i++) {
        const struct lp_batch_row *b = &s->batches[i];
        fprintf(f, "| %s | %zu | %s | %s | ", batch_span(b, span, sizeof span), b->n_decode,
                p50_or_dash(b->decode_p50_ns, b1, sizeof b1),
                p50_or_dash(b->decode_p90_ns, b3, sizeof b3));
        fprintf(f, "%zu | %s | %s | ", b->n_mixed, p50_or_dash(b->mixed_p50_ns, b2, sizeof b2),
                p50_or_dash(b->mixed_p90_ns, b4, sizeof b4));
        if (b->n_mixed)
            fprintf(f, "%.1f |\n", b->mixed_prefill_mean);
        else
            fprintf(f, "- |\n");
    }
    fprintf(f, "\nMixed iterations took %.2f× the decode-only ones at the same batch (median "
               "over %zu batch size%s).\n",
            s->interference, s->interference_rows, s->interference_rows == 1 ? "" : "s");
}

static void serving_buckets(FILE *f, const struct lp_serving *s)
{
    char b3[32];
    if (!s->n_buckets)
        return;
    fprintf(f, "\nCUDA graph buckets: each replay runs the size it was captured for; its rows "
               "past the sequences sampled are padding.\n\n"
               "| captured size | iterations | mean real sequences | padding |\n"
               "|---|---|---|---|\n");
    for (size_t i = 0; i < s->n_buckets; i++) {
        const struct lp_graph_bucket *g = &s->buckets[i];
        fprintf(f, "| %lld | %zu | %.1f | %s |\n", (long long)g->bucket, g->n, g->mean_sampled,
                PCT(g->padding_share));
    }
}

static void serving_requests(FILE *f, const struct lp_run *r)
{
    const struct lp_serving *s = &r->serving;
    char b1[32], b2[32];
    if (!s->n_reqs) {
        fprintf(f, "\n%s\n", no_request_marks);
        return;
    }
    fprintf(f, "\nRequests, from the program's request marks (request convention, "
               "docs/serving.md): %zu request%s, %zu token marks, %zu prefill marks.\n\n"
               "| metric | median | p90 | p99 | mean | n | source |\n"
               "|---|---|---|---|---|---|---|\n",
            s->n_reqs, s->n_reqs == 1 ? "" : "s", s->token_marks, s->prefill_marks);
    lp_md_dist_row(f, "TTFT", &s->ttft, "requests", "admission to first token");
    lp_md_dist_row(f, "TPOT", &s->tpot, "requests", "(last token - first) / (tokens - 1)");
    lp_md_dist_row(f, "ITL", &s->req_itl, "gaps", "each gap between a request's token marks");
    if (s->queue.n)
        lp_md_dist_row(f, "queue wait", &s->queue, "requests",
                 "admission to the start of the forward of its first prefill mark");
    if (!s->queue.n || s->reqs_cut || s->reqs_no_token || s->ids_reused || s->marks_unknown)
        fprintf(f, "\n");
    if (!s->queue.n && !s->prefill_marks)
        fprintf(f, "- No prefill marks: TTFT is not split into queue wait and prefill.\n");
    else if (!s->queue.n)
        fprintf(f, "- None of the %zu prefill marks gave a queue wait: TTFT is not split into "
                   "queue wait and prefill.\n", s->prefill_marks);
    if (s->reqs_cut)
        fprintf(f, "- %zu request%s never ended: the recording stopped first; left out.\n",
                s->reqs_cut, s->reqs_cut == 1 ? "" : "s");
    if (s->reqs_no_token)
        fprintf(f, "- %zu request%s ended without a token mark.\n", s->reqs_no_token,
                s->reqs_no_token == 1 ? "" : "s");
    if (s->ids_reused)
        fprintf(f, "- %zu request range%s reused the id of an earlier one.\n", s->ids_reused,
                s->ids_reused == 1 ? "" : "s");
    if (s->marks_unknown)
        fprintf(f, "- %zu token or prefill mark%s named no request open then: left out.\n",
                s->marks_unknown, s->marks_unknown == 1 ? "" : "s");
    if (!s->n_slowest)
        return;
    fprintf(f, "\nSlowest requests (by TTFT; queue wait to the forward its prefill started in, "
               "then its prefill to the first token, and the tokens of others those forwards "
               "carried beside its prompt):\n\n"
               "| request | TTFT | queue wait | prefill | prefill iterations | tokens beside it | "
               "prompt | tokens |\n|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < s->n_slowest; i++) {
        const struct lp_serving_request *q = &s->reqs[s->slowest[i]];
        char b3[32];
        fprintf(f, "| ");
        lp_md_cell(f, q->id ? q->id : "");
        fprintf(f, " | %s | %s | %s | %zu | ", q->ttft_ns >= 0 ? NS(q->ttft_ns) : "-",
                q->queue_ns >= 0 ? NS2(q->queue_ns) : "-",
                q->prefill_ns >= 0 ? lp_fmt_ns(q->prefill_ns, b3, sizeof b3) : "-",
                q->prefill_iterations);
        if (q->prefill_iterations)
            fprintf(f, "%lld | ", (long long)q->shared_tokens);
        else
            fprintf(f, "- | ");
        if (q->prompt)
            fprintf(f, "%lld", (long long)q->prompt);
        else
            fprintf(f, "-");
        fprintf(f, " | %lld |\n", (long long)q->tokens);
    }
}

static void serving_md(FILE *f, const struct lp_run *r)
{
    const struct lp_serving *s = &r->serving;
    char why[256];
    if (s->cause == LP_SERVING_CAUSE_NONE)
        return;
    lp_text_serving_cause(s, why, sizeof why);
    fprintf(f, "\n## Serving\n\nA serving loop (continuous batching: several requests share each "
               "forward pass): ");
    lp_fmt_puts(f, why);
    fprintf(f, ". An iteration is one forward pass, found from the lm_head's "
               "calls: each pass runs it once, on the sequences that sample. Measured: an "
               "iteration's time runs from its forward's first kernel to the end of its "
               "lm_head's; its period from the previous iteration's end to its own, what each "
               "of its decode sequences waited for its token.\n");
    if (s->anchors_outside)
        fprintf(f, "\n%zu lm_head call%s ran no recorded kernel (captured into a CUDA graph, or "
                   "its kernels not recorded): %s iteration%s left out.\n",
                s->anchors_outside, s->anchors_outside == 1 ? "" : "s",
                s->anchors_outside == 1 ? "its" : "their",
                s->anchors_outside == 1 ? " is" : "s are");
    if (s->n_iters) {
        serving_kinds(f, s);
        serving_counts(f, r);
        serving_batches(f, s);
        serving_buckets(f, s);
    } else {
        fprintf(f, "\nIts forward passes were not found: no cuBLAS GEMM of the largest weight "
                   "(the lm_head) ran three times with its kernels recorded (Triton or CUTLASS "
                   "matmuls, or a lm_head inside a CUDA graph recorded whole: record --graphs "
                   "node), so there is no iteration, token or inter-token figure.\n");
    }
    serving_requests(f, r);
}

static json_t *i64(int64_t v)
{
    return json_integer((json_int_t)v);
}

/* a time of the trace clock, null for 0 (not known) */
static json_t *time_or_null(uint64_t v)
{
    return v ? lp_json_u64(v) : json_null();
}

/* the requests of the request convention; null when the program marks none */
static json_t *requests_json(const struct lp_serving *s)
{
    if (!s->n_reqs)
        return json_null();
    json_t *slow = json_array();
    for (size_t i = 0; i < s->n_slowest; i++) {
        const struct lp_serving_request *q = &s->reqs[s->slowest[i]];
        json_t *o = json_object();
        json_object_set_new(o, "id", json_string(q->id ? q->id : ""));
        json_object_set_new(o, "ttft_ns", q->ttft_ns >= 0 ? lp_json_num(q->ttft_ns) : json_null());
        json_object_set_new(o, "queue_ns",
                            q->queue_ns >= 0 ? lp_json_num(q->queue_ns) : json_null());
        json_object_set_new(o, "prefill_ns",
                            q->prefill_ns >= 0 ? lp_json_num(q->prefill_ns) : json_null());
        json_object_set_new(o, "shared_tokens",
                            q->prefill_iterations ? i64(q->shared_tokens) : json_null());
        json_object_set_new(o, "prefill_iterations",
                            json_integer((json_int_t)q->prefill_iterations));
        json_object_set_new(o, "prompt", q->prompt ? i64(q->prompt) : json_null());
        json_object_set_new(o, "tokens", i64(q->tokens));
        json_object_set_new(o, "tpot_ns", q->tpot_ns >= 0 ? lp_json_num(q->tpot_ns) : json_null());
        json_array_append_new(slow, o);
    }
    json_t *o = json_object();
    json_object_set_new(o, "n", json_integer((json_int_t)s->n_reqs));
    json_object_set_new(o, "cut", json_integer((json_int_t)s->reqs_cut));
    json_object_set_new(o, "no_token", json_integer((json_int_t)s->reqs_no_token));
    json_object_set_new(o, "ids_reused", json_integer((json_int_t)s->ids_reused));
    json_object_set_new(o, "marks_unknown", json_integer((json_int_t)s->marks_unknown));
    json_object_set_new(o, "token_marks", json_integer((json_int_t)s->token_marks));
    json_object_set_new(o, "prefill_marks", json_integer((json_int_t)s->prefill_marks));
    json_object_set_new(o, "ttft", lp_json_dist(&s->ttft));
    json_object_set_new(o, "tpot", lp_json_dist(&s->tpot));
    json_object_set_new(o, "queue", lp_json_dist(&s->queue));
    json_object_set_new(o, "itl", lp_json_dist(&s->req_itl));
    json_object_set_new(o, "slowest", slow);
    return o;
}

/* every iteration, as columns (one array per field) for the charts */
static json_t *iterations_json(const struct lp_serving *s)
{
    static const char *const cols[] = {"start", "end", "period", "tokens", "sampled", "decode",
                                       "prefill_tokens", "bucket", "kind", "source"};
    enum { N_COLS = sizeof cols / sizeof *cols };
    json_t *a[N_COLS], *o = json_object();
    for (size_t c = 0; c < N_COLS; c++)
        a[c] = json_array();
    for (size_t i = 0; i < s->n_iters; i++) {
        const struct lp_iteration *it = &s->iters[i];
        json_t *v[N_COLS] = {time_or_null(it->start), lp_json_u64(it->end),
                             it->period_ns ? lp_json_u64(it->period_ns) : json_null(),
                             i64(it->tokens), i64(it->sampled), i64(it->decode),
                             i64(it->prefill_tokens), i64(it->bucket),
                             json_string(lp_text_iter_kind_key(it->kind)),
                             json_string(lp_text_iter_source_key(it->source))};
        for (size_t c = 0; c < N_COLS; c++)
            json_array_append_new(a[c], v[c]);
    }
    for (size_t c = 0; c < N_COLS; c++)
        json_object_set_new(o, cols[c], a[c]);
    return o;
}

/* a serving loop's iterations and requests (serving.c); no key when none was found, so
 * that every other report.json stays as it was */
static json_t *serving_json(const struct lp_run *r)
{
    const struct lp_serving *s = &r->serving;
    if (s->cause == LP_SERVING_CAUSE_NONE)
        return NULL;
    char why[256];
    lp_text_serving_cause(s, why, sizeof why);
    json_t *kinds = json_object();
    for (int k = 0; k < LP_ITER_KIND_COUNT; k++) {
        const struct lp_iter_class *c = &s->cls[k];
        json_object_set_new(kinds, lp_text_iter_kind_key((enum lp_iter_kind)k),
                            json_pack("{s:I,s:o,s:o,s:o,s:o,s:o}", "n", (json_int_t)c->n, "time",
                                      lp_json_dist(&c->time), "tokens", i64(c->tokens), "decode",
                                      i64(c->decode), "prefill_tokens", i64(c->prefill_tokens),
                                      "sampled", i64(c->sampled)));
    }
    json_t *batches = json_array();
    for (size_t i = 0; i < s->n_batches; i++) {
        const struct lp_batch_row *b = &s->batches[i];
        json_array_append_new(
            batches,
            json_pack("{s:o,s:o,s:I,s:I,s:o,s:o,s:o,s:o,s:o}", "lo", i64(b->lo), "hi", i64(b->hi),
                      "decode_n", (json_int_t)b->n_decode, "mixed_n", (json_int_t)b->n_mixed,
                      "decode_p50_ns", lp_json_or_null(b->decode_p50_ns), "decode_p90_ns",
                      lp_json_or_null(b->decode_p90_ns), "mixed_p50_ns",
                      lp_json_or_null(b->mixed_p50_ns), "mixed_p90_ns",
                      lp_json_or_null(b->mixed_p90_ns), "mixed_prefill_mean",
                      b->n_mixed ? lp_json_num(b->mixed_prefill_mean) : json_null()));
    }
    json_t *buckets = json_array();
    for (size_t i = 0; i < s->n_buckets; i++)
        json_array_append_new(buckets, json_pack("{s:o,s:I,s:o,s:o,s:o}", "bucket",
                                                 i64(s->buckets[i].bucket), "n",
                                                 (json_int_t)s->buckets[i].n, "sampled",
                                                 i64(s->buckets[i].sampled), "mean_sampled",
                                                 lp_json_num(s->buckets[i].mean_sampled),
                                                 "padding_share",
                                                 lp_json_num(s->buckets[i].padding_share)));
    json_t *o = json_object();
    json_object_set_new(o, "cause", json_string(lp_text_serving_cause_key(s->cause)));
    json_object_set_new(o, "cause_value", json_pack("[o,o,o]", i64(s->cause_value[0]),
                                                    i64(s->cause_value[1]),
                                                    i64(s->cause_value[2])));
    json_object_set_new(o, "cause_text", json_string(why));
    json_object_set_new(o, "iterations", json_integer((json_int_t)s->n_iters));
    json_object_set_new(o, "anchors_outside", json_integer((json_int_t)s->anchors_outside));
    json_object_set_new(o, "kinds", kinds);
    json_object_set_new(o, "period", lp_json_dist(&s->period));
    json_object_set_new(o, "itl", lp_json_dist(&s->itl));
    json_object_set_new(o, "itl_inferred", json_integer((json_int_t)s->itl_inferred));
    json_object_set_new(o, "generated", i64(s->generated));
    json_object_set_new(o, "prefill_tokens", i64(s->prefill_tokens));
    json_object_set_new(o, "span_ns", lp_json_u64(s->span_ns));
    json_object_set_new(o, "generated_per_s", lp_json_num(s->generated_per_s));
    json_object_set_new(o, "prefill_per_s", lp_json_num(s->prefill_per_s));
    json_object_set_new(o, "sched_gap_ns", lp_json_u64(s->sched_gap_ns));
    json_object_set_new(o, "sched_period_ns", lp_json_u64(s->sched_period_ns));
    json_object_set_new(o, "sched_share", lp_json_num(s->sched_share));
    json_object_set_new(o, "sched_busy_ns", lp_json_u64(s->sched_busy_ns));
    json_object_set_new(o, "decode_busy_share", lp_json_num(s->decode_busy_share));
    json_object_set_new(o, "batches", batches);
    json_object_set_new(o, "interference", lp_json_or_null(s->interference));
    json_object_set_new(o, "interference_rows", json_integer((json_int_t)s->interference_rows));
    json_object_set_new(o, "buckets", buckets);
    json_object_set_new(o, "padding_share", lp_json_num(s->padding_share));
    json_object_set_new(o, "requests", requests_json(s));
    json_object_set_new(o, "iterations_list", iterations_json(s));
    return o;
}

/* One row per iteration of a serving loop; the header alone when the run is none. Times are
 * on the trace clock, as in report.json; START and PERIOD empty when not known. */
int lp_report_iterations_csv(FILE *f, const struct lp_run *r)
{
    const struct lp_serving *s = &r->serving;
    char b1[32], b2[32];
    fprintf(f, "index,kind,source,start_ns,end_ns,period_ns,gap_ns,busy_ns,tokens,sampled,"
               "decode,prefill_tokens,bucket\n");
    for (size_t i = 0; s->cause != LP_SERVING_CAUSE_NONE && i < s->n_iters; i++) {
        const struct lp_iteration *it = &s->iters[i];
        fprintf(f, "%zu,%s,%s,%s,%llu,%s,%llu,%llu,%lld,%lld,%lld,%lld,%lld\n", i,
                lp_text_iter_kind_key(it->kind), lp_text_iter_source_key(it->source),
                lp_csv_known(it->start != 0, it->start, b1), (unsigned long long)it->end,
                lp_csv_known(it->period_ns != 0, it->period_ns, b2), (unsigned long long)it->gap_ns,
                (unsigned long long)it->busy_ns, (long long)it->tokens, (long long)it->sampled,
                (long long)it->decode, (long long)it->prefill_tokens, (long long)it->bucket);
    }
    return ferror(f) ? -1 : 0;
}

static const struct lp_section_key keys[] = {
    {"serving", serving_json},
    {NULL, NULL},
};

const struct lp_section lp_section_serving = {
    .name = "serving",
    .md = serving_md,
    .json = keys,
    .csv = {"iterations.csv", lp_report_iterations_csv, "a serving loop's iterations"},
};
