/* report.md (everything, for engineers) and summary.md (one page, plain language, for
 * stakeholders). Every section says where its numbers come from: measured (CUPTI activity
 * and NVTX ranges), analytic (llmprof model) or counter (NVML). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llmprof/capture.h"
#include "llmprof/ncu.h"
#include "llmprof/report.h"
#include "report_internal.h"

#define NS(v) lp_fmt_ns((double)(v), b1, sizeof b1)
#define NS2(v) lp_fmt_ns((double)(v), b2, sizeof b2)
#define PCT(v) lp_fmt_pct((v), b3, sizeof b3)
#define BYTES(v) lp_fmt_bytes((double)(v), b4, sizeof b4)

static const char *command(const struct lp_run *r)
{
    const char *v = r->opt.command ? r->opt.command : lp_trace_meta(r->trace, "command");
    return v ? v : "";
}

/* the busy share's span starts after a leading warm-up (lp_run.bins_from_ns) */
static const char *after_warmup(const struct lp_run *r)
{
    return r->bins_from_ns > r->first_ns ? " after the warm-up" : "";
}

/* "- Capture windows ...": which spans were recorded (record --capture) */
static void capture_line(FILE *f, const struct lp_run *r)
{
    const struct lp_capture_facts *c = &r->capture;
    char b1[32], b2[32];
    if (!c->windowed)
        return;
    /* what opens them, and what it means that none opened */
    const char *opens = "", *none = "no window opened";
    switch (c->kind) {
    case LP_CAPTURE_MODE_CUDA_PROFILER:
        opens = ", the program's cudaProfilerStart to cudaProfilerStop";
        none = "the program never opened one (cudaProfilerStart)";
        break;
    case LP_CAPTURE_MODE_NVTX:
        opens = ", the chosen NVTX ranges, each from its push to its pop";
        none = "no chosen occurrence of a matching NVTX range came";
        break;
    case LP_CAPTURE_MODE_SIGNAL:
        opens = ", from one SIGUSR1 to the next";
        none = "the process received no SIGUSR1 while recording";
        break;
    case LP_CAPTURE_MODE_GRAPHS:
        opens = ", steps counted by CUDA graph launches, from a chosen step's first launch to "
                "the next step's";
        none = "no chosen step came (too few CUDA graph launches)";
        break;
    default: break;
    }
    char flag[512]; /* the mode is the trace's string: one code span with the flag */
    snprintf(flag, sizeof flag, "--capture %s", c->mode ? c->mode : "");
    fprintf(f, "- **Capture windows** (");
    lp_md_code(f, flag);
    if (c->n_windows == 0) {
        fprintf(f, "): %s, so no kernels were recorded.\n", none);
        return;
    }
    fprintf(f, "%s): kernels were recorded in %zu window%s, %s", opens, c->n_windows,
            c->n_windows == 1 ? "" : "s", NS(c->recorded_ns));
    if (c->span_ns)
        fprintf(f, " of the %s recorded", NS2(c->span_ns));
    fprintf(f, "; stage and step figures come from the windows only");
    if (c->occ_outside || c->occ_cut)
        fprintf(f, " (%zu stage range%s outside them left out, %zu cut at a window's edge)",
                c->occ_outside, c->occ_outside == 1 ? "" : "s", c->occ_cut);
    if (c->occ_across)
        fprintf(f, "; %zu stage range%s spanning two windows or more count%s one part per "
                   "window, without the time between them", c->occ_across,
                c->occ_across == 1 ? "" : "s", c->occ_across == 1 ? "s" : "");
    fprintf(f, ".\n");
}

static void header(FILE *f, const struct lp_run *r)
{
    const struct lp_trace *t = r->trace;
    char b1[32], b2[32], b4[32];
    fprintf(f, "- trace: ");
    lp_md_code(f, t->path ? t->path : "");
    fprintf(f, " (format %u.%u, %s, %llu records, %s)\n", t->version_major, t->version_minor,
            t->complete ? "complete" : "INCOMPLETE", (unsigned long long)t->n_records,
            BYTES(t->file_bytes));
    if (command(r)[0]) {
        fprintf(f, "- command: ");
        lp_md_code(f, command(r));
        fprintf(f, "\n");
    }
    for (size_t i = 0; i < t->n_devices; i++) {
        fprintf(f, "- GPU %u: ", t->devices[i].id);
        lp_fmt_puts(f, lp_trace_str(t, t->devices[i].name));
        fprintf(f, ", cc %u.%u, %u SMs, %s\n", t->devices[i].cc_major, t->devices[i].cc_minor,
                t->devices[i].sm_count, BYTES(t->devices[i].mem_bytes));
    }
    if (r->kernels_recorded && r->unrecorded_ns)
        fprintf(f, "- GPU work from first to last: %s, %s of it between capture windows (not "
                   "recorded); GPU busy %.1f %% of the rest%s (measured)\n",
                NS(r->last_ns - r->first_ns), NS2(r->unrecorded_ns), 100 * r->busy_share,
                after_warmup(r));
    else if (r->kernels_recorded)
        fprintf(f, "- GPU work from first to last: %s; GPU busy %.1f %% of it%s (measured)\n",
                NS(r->last_ns - r->first_ns), 100 * r->busy_share, after_warmup(r));
    else
        fprintf(f, "- GPU work: no kernels recorded (--light), so how busy the GPU was is not "
                   "known; stage times come from the NVTX ranges\n");
}

/* "| TTFT | 16.1 ms | 17.0 ms | 18.2 ms | 16.4 ms | 3 requests | source |" */
static void dist_row(FILE *f, const char *what, const struct lp_dist *d, const char *unit,
                     const char *source)
{
    char b1[32], b2[32];
    if (d->n == 0) {
        fprintf(f, "| %s | - | - | - | - | 0 | %s |\n", what, source);
        return;
    }
    fprintf(f, "| %s | %s | ", what, NS(d->p50));
    fprintf(f, "%s | ", NS(d->p90));
    fprintf(f, "%s | ", NS(d->p99));
    fprintf(f, "%s | %zu %s | %s |\n", NS2(d->mean), d->n, unit, source);
}

static void warmup_line(FILE *f, const struct lp_run *r)
{
    const struct lp_warmup_found *w = &r->warmup;
    char b1[32], b2[32];
    static const char *const what[] = {"", "TTFT", "time per decode step", "time"};
    if (w->cause == LP_WARMUP_NONE)
        return;
    fprintf(f, "\nSet apart as warm-up (not named so): the first %s (%zu stage occurrence%s); its "
               "%s of %s is %.1fx the median of the %zu others (%s). Rule: docs/report.md; "
               "--keep-warmup keeps it.\n",
            w->cause == LP_WARMUP_STAGE_TIME ? "occurrence of its stage" : "request",
            w->occurrences, w->occurrences == 1 ? "" : "s", what[w->cause], NS(w->value_ns),
            w->ratio, w->others, NS2(w->median_ns));
}

/* why no prefill or decode was found (enum lp_llm_why_not) */
static const char *why_not(const struct lp_run *r)
{
    switch (r->llm.why_not) {
    case LP_LLM_NO_SHAPES:
        return "no NVTX range is named like a stage, and no GEMM shapes were recorded to infer "
               "stages from";
    case LP_LLM_NOT_LLM_SHAPES:
        return "no NVTX range is named like a stage, and the GEMM shapes do not look like an "
               "LLM's (decode steps running the prefill's weights)";
    case LP_LLM_SERVING:
        return "a serving loop: its prefills and decodes share forward passes";
    default:
        return "no stage range is a prefill or a decode";
    }
}

/* The TTFT's parts, when a vision stage ran before the prefill */
static void ttft_parts(FILE *f, const struct lp_run *r)
{
    char b1[32], b3[32];
    int vision = 0;
    for (size_t i = 0; i < r->n_stages; i++)
        vision |= r->stages[i].kind == LP_STAGE_KIND_VISION && r->stages[i].ttft_share > 0;
    if (!vision)
        return;
    fprintf(f, "\nTTFT by part (each stage's time per request, and its share of the measured "
               "requests' TTFT summed; sub-stages inside):");
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        if (s->ttft_share <= 0)
            continue;
        fprintf(f, "\n- ");
        lp_fmt_puts(f, s->name);
        fprintf(f, ": %s, %s", NS(s->ttft_ns_per_request), PCT(s->ttft_share));
        for (size_t j = 0; j < s->n_sub; j++) {
            fprintf(f, "%s", j ? ", " : " (");
            lp_fmt_puts(f, s->sub[j].name);
            fprintf(f, " %s", PCT(s->sub[j].ttft_share));
        }
        fprintf(f, "%s", s->n_sub ? ")" : "");
    }
    fprintf(f, "\n- in no stage (host work before and between them): %s\n",
            PCT(r->llm.ttft_outside_share));
}

static void llm_section(FILE *f, const struct lp_run *r)
{
    const struct lp_llm_metrics *m = &r->llm;
    char src[160];
    fprintf(f, "\n## LLM metrics\n\n");
    if (!m->found && r->serving.cause != LP_SERVING_CAUSE_NONE) {
        fprintf(f, "No prefill or decode stage: this is a serving loop (continuous batching); "
                   "its figures are in Serving below.\n");
        return;
    }
    if (!m->found) {
        fprintf(f, "No prefill or decode was found: %s. TTFT and TPOT are not given; the tables "
                   "below cover the whole run.\n",
                why_not(r));
        return;
    }
    fprintf(f, "Measured over %zu request%s (a request: a prefill with the vision before it and "
               "the decode after it). TTFT runs from a request's first stage range to the end "
               "of its prefill's GPU work; TPOT is a request's decode time over its steps; ITL is "
               "each decode step whose bounds were found. Headline figures are medians.\n",
            m->requests, m->requests == 1 ? "" : "s");
    warmup_line(f, r);
    fprintf(f, "\n| metric | median | p90 | p99 | mean | n | source |\n"
               "|---|---|---|---|---|---|---|\n");
    const char *cut = "stage ranges cut by capture windows: their times are the windows'";
    dist_row(f, "TTFT", &m->ttft, "requests",
             m->ttft.n ? "prefill (+ vision) of each request"
             : m->cut_requests ? cut : "no prefill stage");
    if (m->tpot.n < m->decode_requests)
        snprintf(src, sizeof src, "decode time / steps (steps: %s); %zu of %zu requests: the "
                 "others' steps were not found", lp_text_steps_source(m->steps_source),
                 m->tpot.n, m->decode_requests);
    else
        snprintf(src, sizeof src, "decode time / steps (steps: %s)",
                 lp_text_steps_source(m->steps_source));
    dist_row(f, "TPOT", &m->tpot, "requests",
             m->tpot.n ? src : m->cut_requests ? cut : "decode steps not found");
    snprintf(src, sizeof src, "step bounds: %s", lp_text_steps_source(m->steps_source));
    dist_row(f, "ITL", &m->itl, "steps",
             m->itl.n ? src : m->cut_requests ? cut : "step bounds not found");
    fprintf(f, "\n| count | value | source |\n|---|---|---|\n");
    fprintf(f, "| batch | %lld | %s |\n", (long long)m->batch,
            m->batch_source == LP_TOKENS_NONE ? "assumed (no flag, name or decode GEMM shape)"
                                              : lp_text_tokens_source(m->batch_source));
    if (m->prompt_tokens)
        fprintf(f, "| prompt tokens per request | %lld | %s |\n", (long long)m->prompt_tokens,
                lp_text_tokens_source(m->prefill_source));
    else
        fprintf(f, "| prompt tokens per request | unknown | no flag, tokens= word or GEMM "
                   "shape |\n");
    if (r->vision_tokens > 0) {
        char rows[96] = "";
        if (r->image_rows > 0)
            snprintf(rows, sizeof rows, "; %lld projector rows per request measured%s",
                     (long long)r->image_rows,
                     r->vision_from_rows ? ", which set the mode" : "");
        fprintf(f, "| image slots per prompt | %lld | llmprof model: vision mode %s",
                (long long)r->vision_tokens, lp_vision_mode_name(r->vision_mode));
        if (r->vision_crops > 0)
            fprintf(f, " with %lld local crops", (long long)r->vision_crops);
        fprintf(f, "%s |\n| text tokens per prompt | %lld | prompt - image slots |\n", rows,
                (long long)r->text_tokens);
    }
    fprintf(f, "| decode steps | %lld | %s |\n", (long long)m->decode_steps,
            lp_text_steps_source(m->steps_source));
    fprintf(f, "| decode tokens | %lld | %s |\n", (long long)m->decode_tokens,
            lp_text_tokens_source(m->decode_source));
    if (m->prefill_tokens_per_s > 0)
        fprintf(f, "| prefill tokens/s | %.1f | measured |\n", m->prefill_tokens_per_s);
    if (m->decode_tokens_per_s > 0)
        fprintf(f, "| decode tokens/s | %.1f | measured |\n", m->decode_tokens_per_s);
    if (r->has_util && r->request_s > 0)
        fprintf(f, "| MFU (request) | %.2f %% | analytic FLOPs / measured time |\n"
                   "| MBU (request) | %.2f %% | analytic bytes / measured time |\n",
                100 * r->mfu, 100 * r->mbu);
    ttft_parts(f, r);
}

/* ---- serving loops (continuous batching) ---- */

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
    dist_row(f, "TTFT", &s->ttft, "requests", "admission to first token");
    dist_row(f, "TPOT", &s->tpot, "requests", "(last token - first) / (tokens - 1)");
    dist_row(f, "ITL", &s->req_itl, "gaps", "each gap between a request's token marks");
    if (s->queue.n)
        dist_row(f, "queue wait", &s->queue, "requests",
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

static void serving(FILE *f, const struct lp_run *r)
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

static void findings(FILE *f, const struct lp_run *r)
{
    static const char *const sev[] = {"fyi", "look", "act"};
    fprintf(f, "\n## Diagnosis\n\n");
    if (r->n_findings == 0)
        fprintf(f, "No rule fired: no launch-bound stage, low utilisation, throttling, high "
                   "variance or loss was seen.\n");
    for (size_t i = 0; i < r->n_findings; i++) {
        const struct lp_finding *x = &r->findings[i];
        struct lp_finding_text t;
        lp_text_finding(r, x, &t);
        fprintf(f, "%zu. **[%s] ", i + 1,
                sev[x->severity < 0 ? 0 : x->severity > 2 ? 2 : x->severity]);
        lp_fmt_puts(f, t.title);
        fprintf(f, ".** ");
        lp_fmt_puts(f, t.evidence);
        fprintf(f, "  \n   *Next:* ");
        lp_fmt_puts(f, t.advice);
        fprintf(f, "\n");
    }
}

static void stages(FILE *f, const struct lp_run *r)
{
    char b1[32], b2[32], b3[32];
    fprintf(f, "\n## Stages\n\nMeasured. A stage's kernels are those launched while one of "
               "its ranges was open on the launching thread. Time: from the range's start (or "
               "the end of the previous range's GPU work, if later) to its end (or the end of "
               "its own GPU work, if later); GPU busy: the union of its kernels, copies and "
               "sets; host wait: idle time before work that was launched after the GPU went "
               "idle. Stages flagged ~ vary by more than 10 %% (CV).\n\n"
               "| stage | n | time mean | CV | min | max | GPU busy | host wait | kernels/occ | "
               "gaps > %s | tokens | tokens/s | steps |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
            NS(r->opt.gap_ns));
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        fprintf(f, "| ");
        lp_md_cell(f, s->name);
        fprintf(f, "%s | %zu | %s | ", s->variable ? " ~" : "", s->occurrences,
                s->occurrences ? NS(s->wall.mean) : "-");
        fprintf(f, "%s | ", s->occurrences > 1 ? PCT(s->wall.cv) : "-");
        fprintf(f, "%s | ", s->occurrences ? NS(s->wall.min) : "-");
        fprintf(f, "%s | ", s->occurrences ? NS2(s->wall.max) : "-");
        fprintf(f, "%s | ", s->occurrences ? PCT(s->busy_share) : NS(s->busy_ns));
        fprintf(f, "%s | ", s->occurrences ? PCT(s->host_wait_share) : "-");
        if (r->kernels_recorded)
            fprintf(f, "%.1f | %zu | ",
                    s->occurrences ? s->kernels_per_occurrence : (double)s->kernels, s->gaps);
        else
            fprintf(f, "- | - | ");
        if (s->tokens > 0 && s->tokens_per_s > 0)
            fprintf(f, "%lld (%s) | %.1f | ", (long long)s->tokens,
                    lp_text_tokens_source(s->tokens_source), s->tokens_per_s);
        else if (s->tokens > 0) /* a rate withheld (past what the GPU can do) */
            fprintf(f, "%lld (%s) | withheld | ", (long long)s->tokens,
                    lp_text_tokens_source(s->tokens_source));
        else
            fprintf(f, "- | - | ");
        if (s->steps > 0)
            fprintf(f, "%lld (%s) |\n", (long long)s->steps, lp_text_steps_source(s->steps_source));
        else
            fprintf(f, "%s |\n", s->kind == LP_STAGE_KIND_DECODE ? "not found" : "-");
    }
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        for (size_t j = 0; j < s->n_sub; j++) {
            fprintf(f, "\n- ");
            lp_fmt_puts(f, s->name);
            fprintf(f, " contains ");
            lp_fmt_puts(f, s->sub[j].name);
            fprintf(f, ": %zu ranges, %s wall, %s of GPU time (a part of ", s->sub[j].count,
                    NS(s->sub[j].wall_ns), NS2(s->sub[j].gpu_ns));
            lp_fmt_puts(f, s->name);
            fprintf(f, ", not added again)%s%s", s->sub[j].ttft_share > 0 ? "; of TTFT " : "",
                    s->sub[j].ttft_share > 0 ? PCT(s->sub[j].ttft_share) : "");
        }
    }
    if (r->kernels_recorded)
        fprintf(f, "\n\nKernels: %zu tied to a stage through their launching call, %zu by time "
                   "(no launch recorded), %zu outside every stage.\n",
                r->kernels_by_launch, r->kernels_by_time, r->kernels_outside);
    else
        fprintf(f, "\n\nKernels: not recorded (--light); GPU busy, host wait, kernels and gaps "
                   "are not known.\n");
}

/* Communication kernels and the compute beside them: only when the run had some. */
static void communication(FILE *f, const struct lp_run *r)
{
    char b1[32], b2[32], b3[32];
    if (!r->comm_kernels)
        return;
    fprintf(f, "\n## Communication\n\nMeasured. Communication kernels (NCCL's and the like, by "
               "name): %zu, %s of GPU time; overlap: the share of that time during which a "
               "computation kernel ran on the same GPU (HTA's definition), %s over the run. "
               "Waits in collectives need every rank's trace: `llmprof report` of the run "
               "directory writes them to ranks.md.\n\n| stage | communication | of its GPU "
               "time | overlapped with compute | overlap |\n|---|---|---|---|---|\n",
            r->comm_kernels, NS(r->comm_ns), PCT(r->comm_overlap_share));
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        if (!s->comm_ns)
            continue;
        fprintf(f, "| ");
        lp_md_cell(f, s->name);
        fprintf(f, " | %s | ", NS(s->comm_ns));
        fprintf(f, "%s | ", s->gpu_ns ? PCT(s->cat_share[LP_KCAT_COMMUNICATION]) : "-");
        fprintf(f, "%s | %s |\n", NS2(s->comm_overlap_ns), PCT(s->comm_overlap_share));
    }
}

/* CUPTI's overhead records: only when the trace has some. */
static void overhead(FILE *f, const struct lp_run *r)
{
    char b1[32], b2[32], b3[32], b4[32];
    const struct lp_run_overhead *o = &r->overhead;
    if (!o->records)
        return;
    fprintf(f, "\n## Host time CUPTI recorded\n\nMeasured by CUPTI (%zu overhead records", 
            o->records);
    if (o->untimed)
        fprintf(f, "; %zu without a duration, left out", o->untimed);
    fprintf(f, "): host time it spent on its own work, time CUDA spent loading code, and "
               "launches that waited for space in a command buffer, summed as recorded. %s "
               "Not among these records: CUPTI's cost on each launch it traces, which only a "
               "run without the profiler shows.\n\n| kind | what | records | total | longest "
               "| on the program's threads | in measured stages |\n|---|---|---|---|---|---|---|"
               "\n",
            o->launches_known
                ? "The program's threads are those that made launch calls, pushed NVTX ranges "
                  "or called cuBLAS; the others are llmprof's and CUPTI's."
                : "The program's threads are those that pushed NVTX ranges or called cuBLAS "
                  "(the trace has no launch records: a thread that only launched work is "
                  "counted with llmprof's and CUPTI's).");
    for (size_t i = 0; i < o->n_rows; i++) {
        const struct lp_overhead_row *w = &o->rows[i];
        fprintf(f, "| %s | %s | %zu | %s | %s | ", lp_text_overhead_kind(w->kind),
                lp_text_overhead_class(w->cls), w->count, NS(w->total_ns), NS2(w->max_ns));
        fprintf(f, "%s | %s |\n", NS(w->program_ns),
                lp_fmt_ns((double)w->measured_ns, b4, sizeof b4));
    }
    /* the classes some stage has: "other" (kinds this build does not know) is rare */
    int shown[LP_OVERHEAD_CLASS_COUNT] = {0}, any = 0;
    for (size_t i = 0; i < r->n_stages; i++)
        for (int k = 0; k < LP_OVERHEAD_CLASS_COUNT; k++)
            shown[k] |= k != LP_OVERHEAD_CLASS_OTHER || r->stages[i].overhead_ns[k] > 0;
    for (size_t i = 0; i < r->n_stages; i++)
        for (int k = 0; k < LP_OVERHEAD_CLASS_COUNT; k++)
            any |= r->stages[i].overhead_ns[k] > 0;
    if (!any)
        return;
    fprintf(f, "\nPer stage, on the program's threads inside its occurrences (time, and its share "
               "of the stage's time; records on several threads add up):\n\n| stage |");
    for (int k = 0; k < LP_OVERHEAD_CLASS_COUNT; k++)
        if (shown[k])
            fprintf(f, " %s |", lp_text_overhead_class(k));
    fprintf(f, "\n|---|");
    for (int k = 0; k < LP_OVERHEAD_CLASS_COUNT; k++)
        if (shown[k])
            fprintf(f, "---|");
    fprintf(f, "\n");
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        int has = 0;
        for (int k = 0; k < LP_OVERHEAD_CLASS_COUNT; k++)
            has |= s->overhead_ns[k] > 0;
        if (!has)
            continue;
        fprintf(f, "| ");
        lp_md_cell(f, s->name);
        fprintf(f, " |");
        for (int k = 0; k < LP_OVERHEAD_CLASS_COUNT; k++)
            if (shown[k] && s->overhead_ns[k])
                fprintf(f, " %s (%s) |", NS(s->overhead_ns[k]), PCT(s->overhead_share[k]));
            else if (shown[k])
                fprintf(f, " - |");
        fprintf(f, "\n");
    }
}

static void utilisation(FILE *f, const struct lp_run *r)
{
    fprintf(f, "\n## Utilisation (MFU, MBU)\n\n");
    char note[1024];
    lp_text_util(r, note, sizeof note);
    if (!r->has_util) {
        fprintf(f, "Not computed: ");
        lp_fmt_puts(f, note);
        fprintf(f, ".\n");
        return;
    }
    fprintf(f, "Source: ");
    lp_fmt_puts(f, note);
    fprintf(f, ".\n\n| stage | model FLOPs/occ | model bytes/occ | achieved TFLOP/s | achieved "
               "GB/s | MFU | MBU |\n|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        if (!s->has_util)
            continue;
        fprintf(f, "| ");
        lp_md_cell(f, s->name);
        fprintf(f, " | %.3g | %.3g | %.1f | %.0f | %.2f %% | %.2f %% |\n", s->model_flops,
                s->model_bytes, s->achieved_tflops, s->achieved_gbs, 100 * s->mfu, 100 * s->mbu);
    }
    if (r->request_s > 0) /* unknown when the decode's steps are */
        fprintf(f, "| request | %.3g | %.3g | %.1f | %.0f | %.2f %% | %.2f %% |\n",
                r->request_flops, r->request_bytes, r->request_tflops, r->request_gbs,
                100 * r->mfu, 100 * r->mbu);
}

/* a ratio, or "-" when there is nothing to divide by */
static const char *ratio(double v, char *buf, size_t len)
{
    if (v > 0)
        snprintf(buf, len, "%.3f", v);
    else
        snprintf(buf, len, "-");
    return buf;
}

static void counters(FILE *f, const struct lp_run *r)
{
    const struct lp_run_counters *k = &r->counters;
    if (!k->segments && !k->metrics)
        return;
    fprintf(f, "\n## Hardware counters\n\nCounted by the GPU (CUPTI range profiler, one pass, "
               "no replay%s", k->chip ? ", " : "");
    lp_fmt_puts(f, k->chip ? k->chip : "");
    fprintf(f, "): %zu segments cut at the stage ranges, %zu of them outside the measured "
               "stages (warm-up, gaps). Tensor FLOPs are what the tensor cores did (the counters "
               "of ", k->segments, k->outside);
    lp_fmt_puts(f, k->metrics ? k->metrics : "no metrics named");
    fprintf(f, "); DRAM bytes what was read and written. Per step for decode, "
               "per occurrence otherwise; ratios against the model's matmul FLOPs and bytes "
               "(analytic) and the cuBLAS calls' FLOPs (shapes). Tensor FLOPs above the "
               "model's are work the tensor cores did that the model does not need: a few "
               "tokens padded to the MMA tile (decode), padded expert groups (MoE), a "
               "compressed KV cache expanded every step (MLA), recomputation. So the tensor "
               "share of the peak below is of the work executed, not the model's useful FLOPs "
               "(MFU, in Utilisation).\n\n");
    fprintf(f, "| stage | segments | tensor FLOPs/unit | tensor TFLOP/s | executed / peak | "
               "DRAM bytes/unit | DRAM GB/s | MBU (counters) | / model FLOPs | / cuBLAS FLOPs | "
               "/ model bytes |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    char a[32], b[32], c[32];
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_counters *s = &r->stages[i].ctr;
        if (!s->segments)
            continue;
        fprintf(f, "| ");
        lp_md_cell(f, r->stages[i].name);
        fprintf(f, " | %zu | %.4g | %.1f | %.2f %% | %.4g | %.0f | %.2f %% | %s | %s | %s |\n",
                s->segments, s->flops_per_unit, s->tflops,
                100 * s->executed_share, s->bytes_per_unit, s->gbs, 100 * s->mbu,
                ratio(s->vs_model_flops, a, sizeof a), ratio(s->vs_gemm_flops, b, sizeof b),
                ratio(s->vs_model_bytes, c, sizeof c));
    }
    int said = 0;
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_counters *s = &r->stages[i].ctr;
        if (!s->segments || !s->excess)
            continue;
        char why[640];
        lp_text_excess(s, why, sizeof why);
        fprintf(f, "%s- ", said++ ? "" : "\nExecuted against useful work (the model's FLOPs, "
                                          "which MFU counts):\n\n");
        lp_fmt_puts(f, r->stages[i].name);
        fprintf(f, ": the tensor cores executed %.3g x the model's matmul FLOPs %s: ",
                s->vs_model_flops,
                r->stages[i].kind == LP_STAGE_KIND_DECODE ? "per step" : "per occurrence");
        lp_fmt_puts(f, why);
        fprintf(f, ".\n");
    }
}

static void pm_row(FILE *f, const char *name, const struct lp_pm_stats *s)
{
    char m[LP_PM_COUNT][24];
    for (unsigned k = 0; k < LP_PM_COUNT; k++) {
        if (!(s->valid & (1u << k)))
            snprintf(m[k], sizeof m[k], "-");
        else if (k == LP_PM_GPC_MHZ)
            snprintf(m[k], sizeof m[k], "%.0f", s->mean[k]);
        else
            snprintf(m[k], sizeof m[k], "%.1f %%", s->mean[k]);
    }
    char mbu[24] = "-";
    if (s->mbu > 0)
        snprintf(mbu, sizeof mbu, "%.1f %%", 100 * s->mbu);
    fprintf(f, "| ");
    lp_md_cell(f, name);
    fprintf(f, " | %zu | %.3f | %s | %s | %s | %s | %s | %.0f | %s | %s |\n", s->samples,
            s->seconds, m[LP_PM_TENSOR], m[LP_PM_SM_ISSUE], m[LP_PM_GR_ACTIVE], m[LP_PM_SM_ACTIVE],
            m[LP_PM_IDLE_SM_WARPS], s->dram_gbs, mbu, m[LP_PM_GPC_MHZ]);
}

static void pm(FILE *f, const struct lp_run *r)
{
    const struct lp_run_pm *k = &r->pm;
    if (!k->all.samples && !k->metrics)
        return;
    fprintf(f, "\n## GPU throughput sampled over time\n\nSampled by the GPU (CUPTI PM sampling%s",
            k->chip ? ", " : "");
    lp_fmt_puts(f, k->chip ? k->chip : "");
    fprintf(f, ", every %.0f us): %zu samples, %zu of them outside the measured stages (warm-up, "
               "gaps). Means over each stage's measured occurrences, weighted by time: tensor "
               "pipe, SM issue slots, compute engine (GR) and SMs active, as percentages of their "
               "peak; warp slots left empty because their SM had no work; DRAM bandwidth from the "
               "bytes counted (MBU: of the GPU's peak). report.html draws them over time.\n\n",
            (double)k->interval_ns / 1e3, k->all.samples, k->outside.samples);
    fprintf(f, "| stage | samples | seconds | tensor pipe | SM issue | GR active | SMs active | "
               "idle-SM warp slots | DRAM GB/s | MBU (sampled) | GPC MHz |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < r->n_stages; i++)
        if (r->stages[i].pm.samples)
            pm_row(f, r->stages[i].name, &r->stages[i].pm);
    if (k->outside.samples)
        pm_row(f, "(outside stages)", &k->outside);
    pm_row(f, "(whole run)", &k->all);
}

static const char *const trans_names = "NTC";

static void gemm_stages(FILE *f, const struct lp_run *r)
{
    char b1[32], b2[32];
    fprintf(f, "| stage | GEMM calls | GEMM GPU time | without shapes | with shapes | GEMM "
               "TFLOP/s | measured MFU (GEMMs) | analytic MFU | measured / analytic matmul "
               "FLOPs | measured / analytic linear FLOPs |\n"
               "|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        if (!s->gemm_calls && !s->gemm_unshaped_ns)
            continue;
        fprintf(f, "| ");
        lp_md_cell(f, s->name);
        fprintf(f, " | %llu | %s | ", (unsigned long long)s->gemm_calls, NS(s->gemm_ns));
        fprintf(f, "%s | %s | %.1f | ", NS2(s->gemm_unshaped_ns),
                s->gemm_coverage >= 0 ? lp_fmt_pct(s->gemm_coverage, b1, sizeof b1) : "-",
                s->gemm_tflops);
        if (s->gemm_mfu > 0)
            fprintf(f, "%.2f %%%s | ", 100 * s->gemm_mfu, s->gemm_partial ? " (part)" : "");
        else
            fprintf(f, "- | ");
        if (s->has_util && s->gemm_calls)
            fprintf(f, "%.2f %% | %.3f | %.3f |\n", 100 * s->mfu, s->gemm_vs_model,
                    s->gemm_vs_linear);
        else if (s->has_util)
            fprintf(f, "%.2f %% | - | - |\n", 100 * s->mfu);
        else
            fprintf(f, "- | - | - |\n");
    }
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        if (s->gemm_context_flops > 0 && s->gemm_vs_model > 0) {
            fprintf(f, "\n");
            lp_fmt_puts(f, s->name);
            fprintf(f, ": %.0f %% of the measured GEMM FLOPs are calls over the whole context "
                       "every step (in the table below, the rows whose size steps), which the "
                       "model counts once per token; without them measured / analytic matmul "
                       "FLOPs is %.3f.\n",
                    100 * s->gemm_context_flops / s->gemm_flops, s->gemm_vs_model_rest);
        }
    }
}

/* MoE experts: grouped GEMM kernels per stage */
static void moe_gemms(FILE *f, const struct lp_run *r)
{
    char b1[32], b3[32];
    int any = 0;
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        if (!s->moe_gemm_kernels || s->kind == LP_STAGE_KIND_WARMUP)
            continue;
        if (!any++)
            fprintf(f, "\nMoE expert GEMMs per stage (measured: grouped GEMM kernels by "
                       "name, and with --model the batched cuBLAS calls of the experts' "
                       "shapes), and their share of the stage's GPU time:\n");
        fprintf(f, "\n- ");
        lp_fmt_puts(f, s->name);
        fprintf(f, ": %s in %zu kernels, %s", NS(s->moe_gemm_ns), s->moe_gemm_kernels,
                PCT(s->moe_gemm_share));
    }
    if (any)
        fprintf(f, "\n");
}

static void unshaped(FILE *f, const struct lp_run *r)
{
    char b1[32], b3[32];
    if (!r->n_unshaped)
        return;
    fprintf(f, "\nGEMM kernels without a recorded shape (by name: CUTLASS and grouped GEMMs, "
               "Triton, FlashInfer, DeepGEMM, or cuBLAS kernels replayed from a CUDA graph), "
               "%s in all outside warm-up; their FLOPs are not in the measured figures. %% "
               "stage GEMM: of the stage's GEMM-kernel time.\n\n"
               "| stage | kernel | calls | GPU time | %% stage GEMM |\n|---|---|---|---|---|\n",
            NS(r->gemm_unshaped_ns));
    size_t n = r->n_unshaped < 10 ? r->n_unshaped : 10;
    for (size_t i = 0; i < n; i++) {
        const struct lp_unshaped_gemm *u = &r->unshaped[i];
        const struct lp_stage_report *s = &r->stages[u->stage];
        fprintf(f, "| ");
        lp_md_cell(f, s->name);
        fprintf(f, " | ");
        lp_md_code_cell(f, r->short_names[u->group]);
        fprintf(f, " | %llu | %s | %s |\n", (unsigned long long)u->calls, NS(u->gpu_ns),
                PCT(u->stage_share));
    }
    if (r->n_unshaped > n)
        fprintf(f, "\n%zu more in report.json.\n", r->n_unshaped - n);
    moe_gemms(f, r);
}

static void gemms(FILE *f, const struct lp_run *r)
{
    char b1[32], b2[32];
    fprintf(f, "\n## GEMMs\n\n");
    if (!r->gemm_calls) {
        fprintf(f, "No cuBLAS GEMM call was recorded (capture: ");
        lp_fmt_puts(f, lp_text_gemm_state(r));
        fprintf(f, ").\n");
        if (r->gemm_unshaped_ns) {
            fprintf(f, "\n");
            gemm_stages(f, r);
            unshaped(f, r);
        }
        return;
    }
    fprintf(f, "Measured: every cuBLAS and cuBLASLt GEMM call (capture: ");
    lp_fmt_puts(f, lp_text_gemm_state(r));
    fprintf(f, "), %llu calls, %llu tied to the kernels they launched, %llu failed. Shapes are "
               "as cuBLAS sees them (column-major, D[m x n] = op(A)[m x k] op(B)[k x n]): for "
               "PyTorch's y = x W^T, m is out_features and n the tokens. FLOPs are 2 m n k "
               "batch of the recorded shape; time is the GPU time of the call's kernels; the "
               "peak is the dense peak of the inputs' dtype (TF32 when fp32 runs on tensor "
               "cores) on ",
            (unsigned long long)r->gemm_calls, (unsigned long long)r->gemm_linked,
            (unsigned long long)r->gemm_failed);
    lp_fmt_puts(f, r->gpu.name[0] ? r->gpu.name : "the recorded GPU");
    fprintf(f, ". With shapes: the share of the stage's GEMM-kernel time whose calls were "
               "recorded; the rest (without shapes) has no FLOPs, so measured MFU (GEMMs) "
               "marked (part) covers only that share. Measured MFU (GEMMs) is GEMM FLOPs over "
               "the stage's time at the %s peak, beside the analytic MFU; linear FLOPs leave "
               "out attention scores (QK^T, PV), which attention kernels compute outside "
               "cuBLAS.\n\n",
            lp_dtype_name(r->dtype));
    gemm_stages(f, r);
    unshaped(f, r);
    size_t top = r->n_gemms < r->opt.top_k ? r->n_gemms : r->opt.top_k;
    fprintf(f, "\n| # | stage | m x n x k | batch | op | A/B -> D (compute) | calls | total | "
               "mean | TFLOP/s | %% of peak | algo / tile | kernel | hints |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < top; i++) {
        const struct lp_gemm_row *g = &r->gemms[i];
        const struct lp_gemm *c = &g->call;
        char dm[48], dn[48]; /* a size stepping through a progression: its range */
        snprintf(dm, sizeof dm, g->vary_dim == 'm' ? "%llu..%llu" : "%llu",
                 (unsigned long long)c->m, (unsigned long long)g->vary_hi);
        snprintf(dn, sizeof dn, g->vary_dim == 'n' ? "%llu..%llu" : "%llu",
                 (unsigned long long)c->n, (unsigned long long)g->vary_hi);
        fprintf(f, "| %zu | ", i + 1);
        lp_md_cell(f, g->stage >= 0 ? r->stages[g->stage].name : "-");
        fprintf(f, "%s | %s x %s x %llu | %llu | %c%c | %s/%s -> %s (%s) | %llu | %s | %s "
                   "| %.1f | ",
                g->replayed ? " (replayed)" : "", dm, dn, (unsigned long long)c->k,
                (unsigned long long)c->batch, trans_names[c->transa % 3],
                trans_names[c->transb % 3],
                lp_cuda_type_name(c->a_type), lp_cuda_type_name(c->b_type),
                lp_cuda_type_name(c->d_type), lp_compute_type_name(c->compute_type),
                (unsigned long long)g->calls, NS(g->gpu_ns), NS2(g->mean_ns), g->tflops);
        if (g->peak_share >= 0)
            fprintf(f, "%.1f %% | ", 100 * g->peak_share);
        else
            fprintf(f, "- | ");
        if (c->algo >= 0) {
            fprintf(f, "%d / ", c->algo);
            lp_md_cell(f, lp_trace_str(r->trace, c->tile));
            fprintf(f, " | ");
        } else {
            fprintf(f, "- | ");
        }
        lp_md_code_cell(f, g->top_group != SIZE_MAX ? r->short_names[g->top_group] : "-");
        fprintf(f, " | ");
        char hint[512];
        lp_text_gemm_hint(g, hint, sizeof hint);
        lp_md_cell(f, hint);
        fprintf(f, " |\n");
    }
    if (r->n_gemms > top)
        fprintf(f, "\n%zu more shapes in gemms.csv.\n", r->n_gemms - top);
    if (r->gemm_warmup_calls)
        fprintf(f, "\n%llu calls ran in warm-up: counted above, not in this table.\n",
                (unsigned long long)r->gemm_warmup_calls);
    if (r->gemm_captured && !r->gemm_replayed && r->replays_whole)
        fprintf(f, "\n%llu calls were captured into CUDA graphs. Their replays ran inside graph "
                   "replays recorded whole, which name no kernel or call: they are not counted "
                   "above (record --graphs node counts them).\n",
                (unsigned long long)r->gemm_captured);
    else if (r->gemm_captured)
        fprintf(f, "\n%llu calls were captured into CUDA graphs; each replay of one counts as a "
                   "call above, marked (replayed): %llu in all.\n",
                (unsigned long long)r->gemm_captured, (unsigned long long)r->gemm_replayed);
}

static void graphs(FILE *f, const struct lp_run *r)
{
    if (!r->n_graphs)
        return;
    char b1[32];
    fprintf(f, "\n## CUDA graphs\n\n"
               "Counted: each launch of an executable graph whose kernels ran in a stage is one "
               "replay. A replayed kernel is traced to the node captured for it (graph records, "
               "trace format 1.2), and through it to the GEMM call and the NVTX range that were "
               "open when it was captured.\n\n");
    if (r->replays_whole)
        fprintf(f, "%llu replays were recorded whole (record --graphs replay, the default): "
                   "one piece of GPU work each, from its first kernel's start to its last "
                   "kernel's end, named [CUDA graph replay] in the kernel tables. Their kernels and "
                   "GEMM shapes were not recorded, nor traced to a capture: record --graphs node "
                   "shows them, at the cost of slower replays (docs/benchmarks.md).\n\n",
                (unsigned long long)r->replays_whole);
    fprintf(f, "| stage | graph | replays | kernels per replay | GPU time | GEMM kernels with a "
               "shape | kernels traced to their capture | captured in |\n"
               "|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < r->n_graphs; i++) {
        const struct lp_graph_row *g = &r->graphs[i];
        fprintf(f, "| ");
        lp_md_cell(f, r->stages[g->stage].name);
        fprintf(f, " | %u | %llu | ", g->graph_id, (unsigned long long)g->replays);
        if (g->whole && g->kernels_per_replay > 0)
            fprintf(f, "%.0f (its kernel nodes) | %s | - | - | ", g->kernels_per_replay,
                    NS(g->gpu_ns));
        else if (g->whole)
            fprintf(f, "- | %s | - | - | ", NS(g->gpu_ns));
        else
            fprintf(f, "%.1f | %s | %llu of %llu | %llu of %llu | ", g->kernels_per_replay,
                    NS(g->gpu_ns), (unsigned long long)g->gemm_shaped,
                    (unsigned long long)g->gemm_kernels, (unsigned long long)g->traced,
                    (unsigned long long)g->kernels);
        lp_md_cell(f, g->capture_range >= 0
                          ? lp_trace_str(r->trace, r->ranges.v[g->capture_range].name)
                          : "-");
        fprintf(f, " |\n");
    }
}

static void kernel_table(FILE *f, const struct lp_run *r, const struct lp_kernel_table *t)
{
    char b1[32], b2[32], b3[32];
    fprintf(f, "| # | kernel | category | total | calls | mean | median | min | max | %% GPU |\n"
               "|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < t->n; i++) {
        const struct lp_kernel_row *k = &t->v[i];
        fprintf(f, "| %zu | ", i + 1);
        lp_md_code_cell(f, r->short_names[k->group]);
        fprintf(f, " | %s | %s | %llu | ", lp_kcat_name(r->cats[k->group]), NS(k->total_ns),
                (unsigned long long)k->calls);
        fprintf(f, "%s | ", NS(k->mean_ns));
        fprintf(f, "%s | ", NS(k->median_ns));
        fprintf(f, "%s | %s | %s |\n", NS(k->min_ns), NS2(k->max_ns), PCT(k->share));
    }
    if (t->n_groups > t->n)
        fprintf(f, "\n%zu more kernel names in kernels.csv.\n", t->n_groups - t->n);
}

static void kernels(FILE *f, const struct lp_run *r)
{
    char b1[32], b3[32];
    if (!r->kernels_recorded) {
        fprintf(f, "\n## Top kernels\n\nNot recorded (--light: no kernels). Record without "
                   "--light to see them.\n");
        return;
    }
    fprintf(f, "\n## Top kernels\n\nMeasured (CUPTI kernel, memcpy and memset activity). "
               "%% GPU: share of all GPU time of the run (%s, warm-up and work outside the "
               "stages included); in the per-stage tables, of that stage's GPU time. Full "
               "names in report.json and kernels.csv.\n\n",
            NS(r->all_kernels.gpu_ns));
    kernel_table(f, r, &r->kernels);
    fprintf(f, "\n### By category and stage\n\nShare of each stage's GPU time.\n\n| stage |");
    /* the graph replay column only where replays were recorded whole */
#define SHOWN(c) ((c) != LP_KCAT_GRAPH || r->replays_whole)
    for (int c = 0; c < LP_KCAT_COUNT; c++)
        if (SHOWN(c))
            fprintf(f, " %s |", lp_kcat_name((enum lp_kcat)c));
    fprintf(f, "\n|---|");
    for (int c = 0; c < LP_KCAT_COUNT; c++)
        if (SHOWN(c))
            fprintf(f, "---|");
    fprintf(f, "\n");
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        fprintf(f, "| ");
        lp_md_cell(f, s->name);
        fprintf(f, " |");
        for (int c = 0; c < LP_KCAT_COUNT; c++)
            if (SHOWN(c))
                fprintf(f, " %s |", s->gpu_ns ? PCT(s->cat_share[c]) : "-");
        fprintf(f, "\n");
    }
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        if (s->top.n == 0)
            continue;
        fprintf(f, "\n### Stage ");
        lp_fmt_puts(f, s->name);
        fprintf(f, " (%s of GPU time)\n\n", NS(s->gpu_ns));
        kernel_table(f, r, &s->top);
    }
#undef SHOWN
}

/* a percentage metric of K as "12.3 %", "-" when ncu did not give it */
static const char *metric(const struct lp_ncu_kernel *k, enum lp_ncu_metric m, char *buf,
                          size_t len)
{
    if (!((k->valid >> m) & 1))
        return "-";
    snprintf(buf, len, "%.1f %%", k->metric[m]);
    return buf;
}

static void deep_section(FILE *f, const struct lp_run *r)
{
    const struct lp_deep *d = r->deep;
    if (!d)
        return;
    char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32], b7[32], b8[32], next[512], device[256];
    lp_fmt_escape(device, sizeof device, d->ncu->device ? d->ncu->device : "device unknown");
    fprintf(f, "\n## Kernels in depth\n\nMeasured by Nsight Compute (`llmprof deep`, %s): "
               "%zu kernels profiled, each replayed for its metrics (caches flushed between "
               "passes, so a kernel's DRAM traffic is its cold-cache traffic). One row per launch "
               "configuration and stage, shown by its instance of median duration; \"share\" "
               "is of the stage's GPU time in the recorded run. Bound: a unit at 60 %% of its "
               "peak or more (Nsight Compute's rule; both: the roofline decides), else too small under 0.8 waves of the "
               "SMs, else latency. FLOP/s and FLOP/byte are counted (tensor-core ops and FP32 "
               "instructions over DRAM bytes); the ridge is the dense peak of the dominant type "
               "over the peak bandwidth.\n",
            device, d->n_kernels);
    if (d->unmatched)
        fprintf(f, "\n%zu of the measured kernels are not in this run (another program or "
                   "shape): left out.\n", d->unmatched);
    int stage = -1;
    for (size_t i = 0; i < d->n_rows; i++) {
        const struct lp_deep_row *w = &d->rows[i];
        const struct lp_ncu_kernel *k = w->j.k;
        if (w->stage != stage) {
            stage = w->stage;
            fprintf(f, "\n### Stage ");
            lp_fmt_puts(f, r->stages[stage].name);
            fprintf(f, "\n\n| kernel | grid x block | share | time | SOL SM | SOL mem | SOL DRAM "
                       "| occupancy (theor.) | limit | tensor | TFLOP/s | FLOP/B (ridge) | stalls "
                       "| bound | next step |\n"
                       "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        }
        fprintf(f, "| ");
        lp_md_code_cell(f, r->short_names[w->group]);
        fprintf(f, "%s | (%d,%d,%d)x(%d,%d,%d) | %s | %s", w->flags & LP_DEEP_ROW_UNSEEN ?
                " (config not in run)" : "", w->grid[0], w->grid[1], w->grid[2], w->block[0],
                w->block[1], w->block[2], PCT(w->share), NS(k->metric[LP_NCU_DURATION]));
        if (w->instances > 1)
            fprintf(f, " (%zu: %s-%s)", w->instances, lp_fmt_ns(w->dur_min_ns, b2, sizeof b2),
                    lp_fmt_ns(w->dur_max_ns, b4, sizeof b4));
        fprintf(f, " | %s | %s | %s | %s (%s) | ",
                metric(k, LP_NCU_SOL_SM, b2, sizeof b2),
                metric(k, LP_NCU_SOL_MEMORY, b4, sizeof b4),
                metric(k, LP_NCU_SOL_DRAM, b5, sizeof b5),
                metric(k, LP_NCU_OCC_ACHIEVED, b6, sizeof b6),
                metric(k, LP_NCU_OCC_THEORETICAL, b7, sizeof b7));
        for (int l = 0, first = 1; l < LP_DEEP_LIMIT_COUNT; l++)
            if (w->j.limits & (1u << l)) {
                fprintf(f, "%s%s", first ? "" : ", ", lp_text_deep_limit(l));
                first = 0;
            }
        if (w->j.limits)
            fprintf(f, " (%.0f block%s/SM)", w->j.limit_blocks, w->j.limit_blocks == 1 ? "" : "s");
        else
            fprintf(f, "-");
        fprintf(f, " | %s | ", metric(k, LP_NCU_TENSOR, b8, sizeof b8));
        if (w->flops_per_s == w->flops_per_s)
            fprintf(f, "%.2f", w->flops_per_s / 1e12);
        else
            fprintf(f, "-");
        if (w->intensity == w->intensity)
            fprintf(f, " | %.1f", w->intensity);
        else
            fprintf(f, " | -");
        if (w->ridge > 0)
            fprintf(f, " (%.0f %s)", w->ridge, lp_dtype_name((enum lp_dtype)w->peak_dtype));
        fprintf(f, " | ");
        for (int s = 0; s < LP_DEEP_STALLS && w->j.stall[s] >= 0; s++) {
            fprintf(f, "%s", s ? ", " : "");
            lp_md_cell(f, d->ncu->stall_names[w->j.stall[s]]);
            fprintf(f, " %.1f", k->stall[w->j.stall[s]]);
        }
        lp_text_deep_advice(d, w, next, sizeof next);
        fprintf(f, " | **%s** | ", lp_text_deep_bound(w->j.bound));
        lp_md_cell(f, next);
        fprintf(f, " |\n");
    }
    for (size_t i = 0, said = 0; i < d->n_rows; i++) {
        const struct lp_deep_row *w = &d->rows[i];
        if (!(w->flags & LP_DEEP_ROW_TENSOR_UNNAMED))
            continue;
        if (!said++)
            fprintf(f, "\nTensor-core work in kernels whose name says neither GEMM nor "
                       "attention (matmuls by another name; the kernel tables count them "
                       "under the category their name gives):\n\n");
        fprintf(f, "- ");
        lp_fmt_puts(f, r->stages[w->stage].name);
        fprintf(f, ": ");
        lp_md_code(f, r->short_names[w->group]);
        fprintf(f, ", %.4g tensor FLOPs a launch, counted as %s.\n", w->tensor_flops,
                lp_kcat_name(r->cats[w->group]));
    }
}

static void operators(FILE *f, const struct lp_run *r)
{
    char b1[32], b2[32];
    fprintf(f, "\n## Operators and other ranges\n\n");
    if (r->n_ops == 0) {
        fprintf(f, "None: the program emitted no NVTX ranges besides its stages. PyTorch emits "
                   "one per operator under torch.autograd.profiler.emit_nvtx().\n");
        return;
    }
    fprintf(f, "Measured. CPU: the ranges' wall time; GPU: kernels launched inside (nested "
               "operators include their children; self: the innermost operator only).\n\n"
               "| operator | calls | CPU total | GPU total | GPU self | GPU/call | top kernels |\n"
               "|---|---|---|---|---|---|---|\n");
    size_t n = r->n_ops < 40 ? r->n_ops : 40;
    for (size_t i = 0; i < n; i++) {
        const struct lp_op_row *o = &r->ops[i];
        fprintf(f, "| ");
        lp_md_code_cell(f, o->name);
        fprintf(f, " | %llu | %s | ", (unsigned long long)o->calls, NS(o->cpu_ns));
        fprintf(f, "%s | ", NS(o->gpu_ns));
        fprintf(f, "%s | %s | ", NS(o->self_gpu_ns),
                NS2(o->calls ? (double)o->gpu_ns / (double)o->calls : 0));
        for (int k = 0; k < 3 && o->top_group[k] != SIZE_MAX; k++) {
            fprintf(f, "%s", k ? ", " : "");
            lp_md_code_cell(f, r->short_names[o->top_group[k]]);
            fprintf(f, " %s", NS(o->top_ns[k]));
        }
        fprintf(f, " |\n");
    }
    if (r->n_ops > n)
        fprintf(f, "\n%zu more in operators.csv.\n", r->n_ops - n);
}

static void timeline(FILE *f, const struct lp_run *r)
{
    char b1[32], b2[32], b3[32], b4[32];
    if (!r->kernels_recorded) {
        fprintf(f, "\n## Timeline\n\nNot recorded (--light: no kernels).%s\n",
                r->pm.all.samples ? " The GPU's sampled throughputs over time are in report.html."
                                  : "");
        return;
    }
    fprintf(f, "\n## Timeline\n\nMeasured. GPU busy %.1f %% of the time%s (GPU work from first "
               "to last: %s). %zu idle gaps over %s, %s in all:\n\n",
            100 * r->busy_share, after_warmup(r), NS(r->last_ns - r->first_ns), r->n_gaps,
            NS2(r->opt.gap_ns),
            lp_fmt_ns((double)r->gap_ns, b3, sizeof b3));
    for (int c = 0; c < LP_GAP_CAUSE_COUNT; c++)
        fprintf(f, "- %s: %s\n", lp_text_gap_cause((enum lp_gap_cause)c),
                NS(r->gap_ns_by_cause[c]));
    fprintf(f, "- of the time waiting on the host, the launching thread was inside CUDA calls "
               "for %s (the rest: outside CUDA, e.g. Python or the framework)\n",
            NS(r->gap_host_api_ns));
    if (r->n_top_gaps) {
        fprintf(f, "\n| longest gaps | at (from first GPU work) | stage | cause | host in CUDA "
                   "calls |\n|---|---|---|---|---|\n");
        for (size_t i = 0; i < r->n_top_gaps; i++) {
            const struct lp_gap *g = &r->top_gaps[i];
            fprintf(f, "| %s | %s | ", NS(g->dur), NS2(g->start - r->first_ns));
            lp_md_cell(f, g->stage >= 0 ? r->stages[g->stage].name : "-");
            fprintf(f, " | %s | %s", lp_text_gap_cause(g->cause),
                    lp_fmt_ns((double)g->host_api_ns, b3, sizeof b3));
            if (g->api) {
                fprintf(f, " (mostly ");
                lp_md_cell(f, g->api);
                fprintf(f, ")");
            }
            fprintf(f, " |\n");
        }
    }
    fprintf(f, "\nCopies: %s HtoD, ", BYTES(r->memcpy_bytes[0]));
    fprintf(f, "%s DtoH, ", BYTES(r->memcpy_bytes[1]));
    fprintf(f, "%s DtoD, ", BYTES(r->memcpy_bytes[2]));
    fprintf(f, "%s other; ", BYTES(r->memcpy_bytes[3]));
    fprintf(f, "%s set. Device memory held through cudaMalloc peaked at ", BYTES(r->memset_bytes));
    fprintf(f, "%s (caching allocators hold what they reserved).\n\n", BYTES(r->peak_alloc_bytes));
    fprintf(f, "| stage | HtoD | DtoH | DtoD | peak cudaMalloc | peak used (NVML) | launch to "
               "start (median) |\n|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        fprintf(f, "| ");
        lp_md_cell(f, s->name);
        fprintf(f, " | %s | ", BYTES(s->memcpy_bytes[0]));
        fprintf(f, "%s | ", BYTES(s->memcpy_bytes[1]));
        fprintf(f, "%s | ", BYTES(s->memcpy_bytes[2]));
        fprintf(f, "%s | ", BYTES(s->peak_alloc_bytes));
        fprintf(f, "%s | %s |\n", s->peak_nvml_used_bytes ? BYTES(s->peak_nvml_used_bytes) : "-",
                NS(s->launch_delay_p50_ns));
    }
}

static void power(FILE *f, const struct lp_run *r)
{
    fprintf(f, "\n## Power\n\n");
    if (r->nvml_device < 0) {
        fprintf(f, "No NVML samples in the trace (NVML missing or turned off).\n");
        return;
    }
    fprintf(f, "Counter (NVML, GPU %d): %zu samples; mean %.1f W, peak %.1f W, %.1f J over the "
               "sampled span%s. NVML refreshed its readings every %.0f ms. Per stage, energy "
               "comes from the %s interpolated at each range's edges; J/token divides it by "
               "the stage's tokens. Stages marked ~ last less than two refreshes in all: "
               "their power is uncertain.\n\n"
               "| stage | samples inside | mean W | peak W | energy J | J/token |\n"
               "|---|---|---|---|---|---|\n",
            r->nvml_device, r->nvml_samples, r->power_mean_w, r->power_peak_w, r->energy_j,
            r->power_averaged ? " (power is NVML's 1 s average on this GPU)" : "",
            r->nvml_update_ns / 1e6,
            r->n_stages && r->stages[0].energy_from_counter ? "energy counter" : "power samples");
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        if (s->occurrences == 0)
            continue;
        fprintf(f, "| ");
        lp_md_cell(f, s->name);
        fprintf(f, "%s | %zu | %.1f | %.1f | %.2f | ", s->power_coarse ? " ~" : "",
                s->nvml_samples, s->power_mean_w, s->power_peak_w, s->energy_j);
        if (s->j_per_token > 0)
            fprintf(f, "%.4f |\n", s->j_per_token);
        else
            fprintf(f, "- |\n");
    }
    const struct lp_capture_facts *cw = &r->capture;
    if (cw->n_energy) {
        char b1[32];
        double mean_len = (double)cw->recorded_ns / (double)cw->n_windows;
        fprintf(f, "\nCapture windows: %.2f J in the %zu of %zu windows the samples bracket, "
                   "mean %.1f W (the windows last %s on average%s).\n", cw->energy_j,
                cw->n_energy, cw->n_windows, cw->power_mean_w, NS(mean_len),
                mean_len < 2.0 * (double)r->nvml_update_ns
                    ? ", less than two NVML refreshes: their power is uncertain" : "");
    }
    fprintf(f, "\nClock-event (throttle) reasons, share of samples:");
    int any = 0;
    for (int b = 0; b < LP_THROTTLE_BITS; b++)
        if (r->throttle_share[b] > 0) {
            fprintf(f, "%s %s %.1f %%", any ? "," : "", lp_text_throttle(b),
                    100 * r->throttle_share[b]);
            any = 1;
        }
    fprintf(f, "%s\n", any ? "." : " none.");
}

static void notes(FILE *f, const struct lp_run *r)
{
    const struct lp_trace *t = r->trace;
    fprintf(f, "\n## Losses and notes\n\n");
    fprintf(f, "- records lost: %llu", (unsigned long long)r->lost_records);
    if (r->losses_uncounted)
        fprintf(f, "; %zu loss note%s without a count", r->losses_uncounted,
                r->losses_uncounted == 1 ? "" : "s");
    fprintf(f, "%s\n",
            t->complete ? "" : "; the trace has no end chunk (the process did not exit cleanly)");
    for (size_t i = 0; i < t->n_losses; i++) {
        fprintf(f, "- loss: ");
        lp_fmt_puts(f, lp_trace_str(t, t->losses[i].what));
        if (t->losses[i].count)
            fprintf(f, " (%llu record%s)\n", (unsigned long long)t->losses[i].count,
                    t->losses[i].count == 1 ? "" : "s");
        else
            fprintf(f, " (no count)\n");
    }
    for (size_t i = 0; i < t->n_warnings; i++) {
        fprintf(f, "- reader: ");
        lp_fmt_puts(f, t->warnings[i]);
        fprintf(f, "\n");
    }
    for (size_t i = 0; i < r->n_notes; i++) {
        char text[1024];
        lp_text_note(r, &r->notes[i], text, sizeof text);
        fprintf(f, "- ");
        lp_fmt_puts(f, text);
        fprintf(f, "\n");
    }
}

int lp_report_run_md(FILE *f, const struct lp_run *r)
{
    fprintf(f, "# llmprof report\n\n");
    header(f, r);
    capture_line(f, r);
    llm_section(f, r);
    serving(f, r);
    findings(f, r);
    stages(f, r);
    communication(f, r);
    utilisation(f, r);
    counters(f, r);
    pm(f, r);
    gemms(f, r);
    graphs(f, r);
    kernels(f, r);
    deep_section(f, r);
    operators(f, r);
    timeline(f, r);
    overhead(f, r);
    power(f, r);
    notes(f, r);
    return ferror(f) ? -1 : 0;
}

/* The vision's part of the TTFT, with its sub-stages, in one line */
static void summary_vision(FILE *f, const struct lp_run *r)
{
    char b1[32], b3[32];
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        if (s->kind != LP_STAGE_KIND_VISION || s->ttft_share < 0.01) /* a projector: noise */
            continue;
        fprintf(f, "- Of the first token's time, **");
        lp_fmt_puts(f, s->name);
        fprintf(f, " took %s** (%s a request", PCT(s->ttft_share), NS(s->ttft_ns_per_request));
        for (size_t j = 0; j < s->n_sub; j++) {
            fprintf(f, "%s", j ? ", " : "; ");
            lp_fmt_puts(f, s->sub[j].name);
            fprintf(f, " %s", PCT(s->sub[j].ttft_share));
        }
        fprintf(f, ").\n");
    }
}

/* A serving loop's headline: iterations, tokens, the token-weighted ITL, the requests'
 * latency when the program marks them, the host's share and the graphs' padding */
static void summary_serving(FILE *f, const struct lp_run *r)
{
    const struct lp_serving *s = &r->serving;
    char b1[32], b2[32], b3[32];
    if (!s->n_iters) {
        fprintf(f, "- **Serving loop**, but its forward passes were not found (report.md says "
                   "why): no iteration, token or inter-token figure.\n");
    } else {
        fprintf(f, "- **Serving loop: %zu iterations** (%zu decode-only, %zu mixed, %zu "
                   "prefill-only",
                s->n_iters, s->cls[LP_ITER_KIND_DECODE].n, s->cls[LP_ITER_KIND_MIXED].n,
                s->cls[LP_ITER_KIND_PREFILL].n);
        if (s->cls[LP_ITER_KIND_UNKNOWN].n)
            fprintf(f, ", %zu unknown", s->cls[LP_ITER_KIND_UNKNOWN].n);
        fprintf(f, ", found from the lm_head's calls) over %s: %lld tokens generated (%.1f "
                   "tokens/s), %lld prompt tokens (%.1f tokens/s).\n",
                NS(s->span_ns), (long long)s->generated, s->generated_per_s,
                (long long)s->prefill_tokens, s->prefill_per_s);
    }
    if (s->itl.n)
        fprintf(f, "- **Between tokens p50 %s** (p90 %s, p99 %s; token-weighted over %zu "
                   "tokens: each decode sequence waits for its iteration).\n",
                NS(s->itl.p50), NS2(s->itl.p90), lp_fmt_ns(s->itl.p99, b3, sizeof b3),
                s->itl.n);
    if (s->n_reqs) {
        if (s->ttft.n)
            fprintf(f, "- **First token after %s** (median of %zu request%s, p90 %s; the "
                       "program's request marks).\n",
                    NS(s->ttft.p50), s->ttft.n, s->ttft.n == 1 ? "" : "s", NS2(s->ttft.p90));
        if (s->tpot.n)
            fprintf(f, "- **Each further token takes %s** (median TPOT of %zu request%s, p90 "
                       "%s).\n",
                    NS(s->tpot.p50), s->tpot.n, s->tpot.n == 1 ? "" : "s", NS2(s->tpot.p90));
    } else {
        fprintf(f, "- Per-request TTFT and TPOT are not given: the program does not mark its "
                   "requests (docs/serving.md says how).\n");
    }
    if (isfinite(s->sched_share)) {
        char b4[32];
        fprintf(f, "- While sequences decoded, the GPU was busy %s of the time; the gaps before "
                   "each forward (sampling, scheduling, Python) took %s.\n",
                lp_fmt_pct(s->decode_busy_share, b4, sizeof b4), PCT(s->sched_share));
    }
    if (s->n_buckets && isfinite(s->padding_share))
        fprintf(f, "- CUDA graphs replayed %s of their rows as padding (%zu captured size%s; "
                   "rows past the sequences sampled).\n",
                PCT(s->padding_share), s->n_buckets, s->n_buckets == 1 ? "" : "s");
}

/* summary.md: what the inputs and the trace say of the figures (MFU, withheld, altered,
 * the model or a flag against the trace), and the prefill's GEMMs */
static void summary_checks(FILE *f, const struct lp_run *r)
{
    char b2[32];
    if (r->has_util && !r->model_misfit && r->request_s > 0)
        fprintf(f, "- Over a whole request the model used %.1f %% of the GPU's compute peak "
                   "and %.1f %% of its memory bandwidth (analytic, see report.md).\n",
                100 * r->mfu, 100 * r->mbu);
    if (r->util_status == LP_UTIL_OVER_PEAK) {
        char buf[512];
        lp_text_util(r, buf, sizeof buf);
        fprintf(f, "- **MFU and MBU are withheld:** ");
        lp_fmt_puts(f, buf);
        fprintf(f, ".\n");
    }
    if (r->trace->altered)
        fprintf(f, "- **The trace file was altered after it was written** (chunks repeated, "
                   "missing or reordered): report.md's \"Losses and notes\" say how it was read; "
                   "figures may be wrong.\n");
    for (size_t i = 0; i < r->n_notes; i++)
        if (r->notes[i].code == LP_NOTE_MODEL_MISFIT) {
            char buf[512];
            lp_text_note(r, &r->notes[i], buf, sizeof buf);
            fprintf(f, "- **The model does not fit this run:** ");
            lp_fmt_puts(f, buf);
            fprintf(f, ".\n");
        } else if (r->notes[i].code == LP_NOTE_PREFILL_TOKENS_GIVEN ||
                   r->notes[i].code == LP_NOTE_DECODE_TOKENS_GIVEN ||
                   r->notes[i].code == LP_NOTE_BATCH_GIVEN) {
            char buf[512];
            lp_text_note(r, &r->notes[i], buf, sizeof buf);
            fprintf(f, "- **A flag disagrees with the trace:** ");
            lp_fmt_puts(f, buf);
            fprintf(f, ".\n");
        }
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        if (s->kind == LP_STAGE_KIND_PREFILL && s->gemm_calls && s->gemm_mfu > 0)
        {
            fprintf(f, "- The prefill's matrix multiplies ran at %.0f TFLOP/s while busy; over "
                       "its whole time they used %.1f %% of the GPU's compute peak (measured "
                       "GEMM shapes",
                    s->gemm_tflops, 100 * s->gemm_mfu);
            if (s->gemm_partial)
                fprintf(f, ", which cover only %s of its GEMM time: the rest ran in kernels "
                           "no cuBLAS call launched",
                        lp_fmt_pct(s->gemm_coverage, b2, sizeof b2));
            fprintf(f, ").\n");
        }
    }
    if (r->stages_inferred)
        fprintf(f, "- The program marks no stages: prefill and decode were inferred from the "
                   "sizes of its matrix multiplies.\n");
}

/* summary.md: the costliest (stage, kernel category) pairs */
static void summary_where(FILE *f, const struct lp_run *r)
{
    char b1[32];
    fprintf(f, "\n## Where the GPU time goes\n\n");
    if (r->n_centres)
        fprintf(f, "Shares of the GPU time in the measured stages (%s; warm-up and work outside "
                   "the stages left out).\n\n",
                NS(r->measured_gpu_ns));
    for (size_t i = 0; i < r->n_centres; i++) {
        const struct lp_cost_centre *c = &r->centres[i];
        if (c->cat == LP_KCAT_GRAPH) { /* replays recorded whole: their kernels unknown */
            fprintf(f, "%zu. **CUDA graph replays in ", i + 1);
            lp_fmt_puts(f, r->stages[c->stage].name);
            fprintf(f, "** (recorded whole; record --graphs node names their kernels): %s, "
                       "%.0f %%.\n", NS(c->gpu_ns), 100 * c->share);
            continue;
        }
        fprintf(f, "%zu. **%s kernels in ", i + 1, lp_kcat_name(c->cat));
        lp_fmt_puts(f, r->stages[c->stage].name);
        fprintf(f, "**: %s, %.0f %%", NS(c->gpu_ns), 100 * c->share);
        if (c->top_group != SIZE_MAX) {
            fprintf(f, "; mostly ");
            lp_md_code(f, r->short_names[c->top_group]);
        }
        fprintf(f, ".\n");
    }
    if (!r->kernels_recorded)
        fprintf(f, "Not known: no kernels were recorded (--light).\n");
    else if (r->n_centres == 0)
        fprintf(f, "No GPU work was recorded in a measured stage.\n");
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        if ((s->kind == LP_STAGE_KIND_OUTSIDE || s->kind == LP_STAGE_KIND_WARMUP) && s->gpu_ns)
            fprintf(f, "\n%s: %s more GPU time, not ranked above.", s->kind == LP_STAGE_KIND_WARMUP
                                                                     ? "Warm-up"
                                                                     : "Outside every stage",
                    NS(s->gpu_ns));
    }
}

/* summary.md: the first three findings (each title once) and what was lost */
static void summary_look(FILE *f, const struct lp_run *r)
{
    fprintf(f, "\n\n## What to look at\n\n");
    size_t shown = 0;
    char said[3][sizeof ((struct lp_finding_text *)0)->title];
    for (size_t i = 0; i < r->n_findings && shown < 3; i++) {
        struct lp_finding_text t;
        if (r->findings[i].code == LP_FINDING_TRACE_NOT_WHOLE && r->trace->altered)
            continue; /* said at the top */
        lp_text_finding(r, &r->findings[i], &t);
        /* a title already said (the same finding for a second stage) says nothing new */
        size_t j = 0;
        while (j < shown && strcmp(said[j], t.title) != 0)
            j++;
        if (j < shown)
            continue;
        snprintf(said[shown], sizeof said[shown], "%s", t.title);
        fprintf(f, "- **");
        lp_fmt_puts(f, t.title);
        fprintf(f, ".** ");
        lp_fmt_puts(f, t.advice);
        fprintf(f, "\n");
        shown++;
    }
    if (!shown)
        fprintf(f, "Nothing stood out.\n");
    fprintf(f, "\nDetails in report.md; the numbers in report.json. %s\n",
            r->lost_records || !r->trace->complete
                ? "Some records were lost: figures are lower bounds."
            : r->losses_uncounted ? "No records were counted lost; report.md lists loss notes "
                                    "without a count."
                                  : "No records were lost.");
}

int lp_report_summary_md(FILE *f, const struct lp_run *r)
{
    char b1[32], b2[32];
    const struct lp_llm_metrics *m = &r->llm;
    const char *gpu = r->trace->n_devices ? lp_trace_str(r->trace, r->trace->devices[0].name)
                                          : "the GPU";
    fprintf(f, "# Summary\n\n");
    lp_md_code(f, command(r)[0] ? command(r) : "the run");
    fprintf(f, " on ");
    lp_fmt_puts(f, gpu);
    fprintf(f, ".\n\n");
    if (r->serving.cause != LP_SERVING_CAUSE_NONE)
        summary_serving(f, r);
    else if (!m->found)
        fprintf(f, "- **No LLM prefill or decode was found** in this program (%s), so there is "
                   "no TTFT or TPOT: the figures below are for the whole run.\n",
                why_not(r));
    char prompt[160] = "prompt length unknown";
    if (m->prompt_per_sequence && r->vision_tokens > 0)
        snprintf(prompt, sizeof prompt, "prompt of %lld tokens%s: %lld image slots, %lld text",
                 (long long)m->prompt_per_sequence, m->batch > 1 ? " per sequence" : "",
                 (long long)r->vision_tokens, (long long)r->text_tokens);
    else if (m->prompt_per_sequence)
        snprintf(prompt, sizeof prompt, "prompt of %lld tokens%s",
                 (long long)m->prompt_per_sequence, m->batch > 1 ? " per sequence" : "");
    if (m->ttft.n > 1)
        fprintf(f, "- **First token after %s** (median of %zu requests, p90 %s; %s).\n",
                NS(m->ttft.p50), m->ttft.n, NS2(m->ttft.p90), prompt);
    else if (m->ttft.n)
        fprintf(f, "- **First token after %s** (one request; %s).\n", NS(m->ttft.p50), prompt);
    summary_vision(f, r);
    char rate[48] = "tokens/s withheld";
    if (m->decode_tokens_per_s > 0)
        snprintf(rate, sizeof rate, "%.1f tokens/s", m->decode_tokens_per_s);
    if (m->tpot.n)
        fprintf(f, "- **Each further token takes %s** (%s of %zu request%s, p90 of the %zu steps "
                   "%s; %s over a batch of %lld%s).\n",
                NS(m->tpot.p50), m->tpot.n > 1 ? "median" : "mean", m->tpot.n,
                m->tpot.n == 1 ? "" : "s", m->itl.n, m->itl.n ? NS2(m->itl.p90) : "-", rate,
                (long long)m->batch, m->batch_source == LP_TOKENS_NONE ? ", assumed" : "");
    for (size_t i = 0; i < r->n_stages && !m->tpot.n; i++)
        if (r->stages[i].kind == LP_STAGE_KIND_DECODE && r->stages[i].occurrences &&
            !r->stages[i].steps) {
            fprintf(f, "- The time per token of ");
            lp_fmt_puts(f, r->stages[i].name);
            fprintf(f, " is not given: its steps could not be counted (name each step's range, "
                       "put tokens=N in the name, or pass --decode-tokens).\n");
        }
    if (r->warmup.cause != LP_WARMUP_NONE)
        fprintf(f, "- The first %s was slow (%s, %.0fx the others' median) and is reported "
                   "apart as warm-up.\n",
                r->warmup.cause == LP_WARMUP_STAGE_TIME ? "occurrence" : "request",
                NS(r->warmup.value_ns), r->warmup.ratio);
    capture_line(f, r);
    if (r->capture.windowed && r->capture.n_windows == 0)
        ; /* said by capture_line: no window, no kernels */
    else if (r->kernels_recorded)
        fprintf(f, "- The GPU was busy %.0f %% of the %stime between its first and last "
                   "kernel%s.\n", 100 * r->busy_share, r->unrecorded_ns ? "recorded " : "",
                after_warmup(r));
    else
        fprintf(f, "- No kernels were recorded (--light): GPU time, kernels and "
                   "decode steps found from kernels are not known; see the counters.\n");
    summary_checks(f, r);
    summary_where(f, r);
    summary_look(f, r);
    return ferror(f) ? -1 : 0;
}
