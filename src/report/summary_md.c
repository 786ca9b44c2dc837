/* summary.md: one page, plain language, for stakeholders: the headline latencies and
 * throughputs, what the inputs and the trace say of the figures, where the GPU time goes
 * and what to look at (report.md has everything). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "section.h"

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
    if (r->util.has && !r->util.model_misfit && r->util.request_s > 0)
        fprintf(f, "- Over a whole request the model used %.1f %% of the GPU's compute peak "
                   "and %.1f %% of its memory bandwidth (analytic, see report.md).\n",
                100 * r->util.mfu, 100 * r->util.mbu);
    if (r->util.status == LP_UTIL_OVER_PEAK) {
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
    lp_md_code(f, lp_md_command(r)[0] ? lp_md_command(r) : "the run");
    fprintf(f, " on ");
    lp_fmt_puts(f, gpu);
    fprintf(f, ".\n\n");
    if (r->serving.cause != LP_SERVING_CAUSE_NONE)
        summary_serving(f, r);
    else if (!m->found)
        fprintf(f, "- **No LLM prefill or decode was found** in this program (%s), so there is "
                   "no TTFT or TPOT: the figures below are for the whole run.\n",
                lp_text_why_not(r));
    char prompt[160] = "prompt length unknown";
    if (m->prompt_per_sequence && r->util.vision_tokens > 0)
        snprintf(prompt, sizeof prompt, "prompt of %lld tokens%s: %lld image slots, %lld text",
                 (long long)m->prompt_per_sequence, m->batch > 1 ? " per sequence" : "",
                 (long long)r->util.vision_tokens, (long long)r->util.text_tokens);
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
    lp_section_capture.md(f, r);
    if (r->capture.windowed && r->capture.n_windows == 0)
        ; /* said by the capture line: no window, no kernels */
    else if (r->kernels_recorded)
        fprintf(f,
                "- The GPU was busy %.0f %% of the %stime between its first and last "
                "kernel%s.\n",
                100 * r->timeline.busy_share, r->timeline.unrecorded_ns ? "recorded " : "",
                lp_md_after_warmup(r));
    else
        fprintf(f, "- No kernels were recorded (--light): GPU time, kernels and "
                   "decode steps found from kernels are not known; see the counters.\n");
    summary_checks(f, r);
    summary_where(f, r);
    summary_look(f, r);
    return ferror(f) ? -1 : 0;
}
