/* LLM metrics: TTFT, TPOT and ITL over the requests, the tokens and their sources, the
 * warm-up set apart, the TTFT's parts ("llm" and "warmup_found" in report.json). */
#include <stdio.h>
#include "section.h"

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

static void llm_md(FILE *f, const struct lp_run *r)
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
                lp_text_why_not(r));
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
    lp_md_dist_row(f, "TTFT", &m->ttft, "requests",
             m->ttft.n ? "prefill (+ vision) of each request"
             : m->cut_requests ? cut : "no prefill stage");
    if (m->tpot.n < m->decode_requests)
        snprintf(src, sizeof src, "decode time / steps (steps: %s); %zu of %zu requests: the "
                 "others' steps were not found", lp_text_steps_source(m->steps_source),
                 m->tpot.n, m->decode_requests);
    else
        snprintf(src, sizeof src, "decode time / steps (steps: %s)",
                 lp_text_steps_source(m->steps_source));
    lp_md_dist_row(f, "TPOT", &m->tpot, "requests",
             m->tpot.n ? src : m->cut_requests ? cut : "decode steps not found");
    snprintf(src, sizeof src, "step bounds: %s", lp_text_steps_source(m->steps_source));
    lp_md_dist_row(f, "ITL", &m->itl, "steps",
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
    if (r->util.vision_tokens > 0) {
        char rows[96] = "";
        if (r->util.image_rows > 0)
            snprintf(rows, sizeof rows, "; %lld projector rows per request measured%s",
                     (long long)r->util.image_rows,
                     r->util.vision_from_rows ? ", which set the mode" : "");
        fprintf(f, "| image slots per prompt | %lld | llmprof model: vision mode %s",
                (long long)r->util.vision_tokens, lp_vision_mode_name(r->util.vision_mode));
        if (r->util.vision_crops > 0)
            fprintf(f, " with %lld local crops", (long long)r->util.vision_crops);
        fprintf(f, "%s |\n| text tokens per prompt | %lld | prompt - image slots |\n", rows,
                (long long)r->util.text_tokens);
    }
    fprintf(f, "| decode steps | %lld | %s |\n", (long long)m->decode_steps,
            lp_text_steps_source(m->steps_source));
    fprintf(f, "| decode tokens | %lld | %s |\n", (long long)m->decode_tokens,
            lp_text_tokens_source(m->decode_source));
    if (m->prefill_tokens_per_s > 0)
        fprintf(f, "| prefill tokens/s | %.1f | measured |\n", m->prefill_tokens_per_s);
    if (m->decode_tokens_per_s > 0)
        fprintf(f, "| decode tokens/s | %.1f | measured |\n", m->decode_tokens_per_s);
    if (r->util.has && r->util.request_s > 0)
        fprintf(f, "| MFU (request) | %.2f %% | analytic FLOPs / measured time |\n"
                   "| MBU (request) | %.2f %% | analytic bytes / measured time |\n",
                100 * r->util.mfu, 100 * r->util.mbu);
    ttft_parts(f, r);
}

static json_t *llm_json(const struct lp_run *r)
{
    const struct lp_llm_metrics *m = &r->llm;
    static const char *const logits[] = {NULL, "last", "every"};
    json_t *llm = json_pack(
        "{s:b,s:I,s:o,s:o,s:o,s:o,s:I,s:I,s:s,s:I,s:s,s:I,s:s}", "found", m->found, "requests",
        (json_int_t)m->requests, "ttft_s", m->ttft_s > 0 ? lp_json_num(m->ttft_s) : json_null(),
        "tpot_s", m->tpot_s > 0 ? lp_json_num(m->tpot_s) : json_null(), "prefill_tokens_per_s",
        m->prefill_tokens_per_s > 0 ? lp_json_num(m->prefill_tokens_per_s) : json_null(),
        "decode_tokens_per_s",
        m->decode_tokens_per_s > 0 ? lp_json_num(m->decode_tokens_per_s) : json_null(),
        "prefill_tokens", (json_int_t)m->prefill_tokens, "prompt_tokens",
        (json_int_t)m->prompt_tokens, "prefill_tokens_source",
        lp_text_tokens_source(m->prefill_source), "decode_tokens", (json_int_t)m->decode_tokens,
        "decode_tokens_source", lp_text_tokens_source(m->decode_source), "batch",
        (json_int_t)m->batch, "batch_source", lp_text_tokens_source(m->batch_source));
    static const char *const why[] = {NULL, "no_shapes", "not_llm_shapes", "no_stage_kind",
                                      "serving"};
    json_object_set_new(llm, "why_not",
                        m->why_not && (size_t)m->why_not < sizeof why / sizeof *why
                            ? json_string(why[m->why_not])
                            : json_null());
    json_object_set_new(llm, "decode_requests", json_integer((json_int_t)m->decode_requests));
    json_object_set_new(llm, "requests_cut", json_integer((json_int_t)m->cut_requests));
    json_object_set_new(llm, "prompt_per_sequence", m->prompt_per_sequence
                                                        ? json_integer(m->prompt_per_sequence)
                                                        : json_null());
    if (!m->prompt_tokens)
        json_object_set_new(llm, "prompt_tokens", json_null());
    json_object_set_new(llm, "decode_steps", json_integer((json_int_t)m->decode_steps));
    json_object_set_new(llm, "steps_source", json_string(lp_text_steps_source(m->steps_source)));
    json_object_set_new(llm, "ttft", lp_json_dist(&m->ttft));
    json_object_set_new(llm, "tpot", lp_json_dist(&m->tpot));
    json_object_set_new(llm, "itl", lp_json_dist(&m->itl));
    json_object_set_new(llm, "prefill_logits", m->prefill_logits > 0 && m->prefill_logits < 3
                                                   ? json_string(logits[m->prefill_logits])
                                                   : json_null());
    json_object_set_new(llm, "ttft_outside_share", m->ttft_outside_share > 0
                                                       ? lp_json_num(m->ttft_outside_share)
                                                       : json_null());
    json_object_set_new(
        llm, "images",
        r->util.vision_tokens > 0
            ? json_pack("{s:I,s:I,s:s,s:I,s:o,s:s}", "slots_per_prompt",
                        (json_int_t)r->util.vision_tokens, "text_tokens_per_prompt",
                        (json_int_t)r->util.text_tokens, "vision_mode",
                        lp_vision_mode_name(r->util.vision_mode), "crops",
                        (json_int_t)r->util.vision_crops, "projector_rows_per_request",
                        r->util.image_rows > 0 ? json_integer(r->util.image_rows) : json_null(),
                        "mode_source", r->util.vision_from_rows ? "projector rows" : "option")
            : json_null());
    return llm;
}

static json_t *warmup_json(const struct lp_run *r)
{
    static const char *const causes[] = {NULL, "ttft", "tpot", "stage_time"};
    const struct lp_warmup_found *w = &r->warmup;
    if (w->cause == LP_WARMUP_NONE)
        return json_null();
    return json_pack("{s:s,s:s?,s:o,s:o,s:o,s:I,s:I}", "cause", causes[w->cause], "stage",
                     w->stage >= 0 ? r->stages[w->stage].name : NULL, "value_ns",
                     lp_json_num(w->value_ns), "median_ns", lp_json_num(w->median_ns), "ratio",
                     lp_json_num(w->ratio), "others", (json_int_t)w->others, "occurrences",
                     (json_int_t)w->occurrences);
}

static const struct lp_section_key keys[] = {
    {"llm", llm_json},
    {"warmup_found", warmup_json},
    {NULL, NULL},
};

const struct lp_section lp_section_llm = {
    .name = "llm",
    .md = llm_md,
    .json = keys,
};
