/* The analysis of one recorded run: a table of passes run in the order each needs the one
 * before (ranges and stages, the group of every piece of GPU work, kernel tables, operators,
 * the timeline, power, tokens and utilisation, GEMMs and graphs, and last the diagnosis that
 * reads all of them). Adding a section: a pass in its own file, one line below. */
#include <stdio.h>
#include <string.h>

#include "run_internal.h"

/* The passes in the order each needs the ones before it. Each part of struct lp_run that
 * holds memory is freed by the pass whose section it is (stages, with their tables and spans;
 * operators; ...), whichever pass allocated it; lp_run_free calls every free, also after a
 * failure midway (FREE NULL: the pass fills plain fields or the context only). */
struct lp_pass {
    int (*run)(struct lp_run_ctx *c);
    void (*free)(struct lp_run *r);
    enum lp_run_scope scope;      /* PLACES: in every analysis; REPORT: only for a report */
};
#define REPORT LP_RUN_SCOPE_REPORT
#define PLACES LP_RUN_SCOPE_PLACES

static int ranges(struct lp_run_ctx *c)
{
    return lp_ranges_build(c->t, &c->r->ranges);
}

static void ranges_free(struct lp_run *r)
{
    lp_ranges_free(&r->ranges);
}

static const struct lp_pass passes[] = {
    {ranges, ranges_free, PLACES},                 /* nvtx.c: ranges paired and nested */
    {lp_run_name_groups, lp_run_names_free, PLACES}, /* kernels.c: group of every piece of
                                                      work */
    {lp_run_windows_load, NULL, PLACES},           /* windows.c: capture windows (stages
                                                      free them) */
    {lp_run_serving, lp_run_serving_free, PLACES}, /* serving.c: iterations, requests */
    {lp_run_stages, lp_run_stages_free, PLACES},   /* stages.c: occurrences, attribution */
    {lp_run_steps, NULL, PLACES},                  /* steps.c: spans, tokens, decode steps */
    {lp_run_warmup, NULL, PLACES},                 /* requests.c: requests, warmup set apart */
    {lp_run_stage_stats, NULL, PLACES},            /* stages.c: per-stage statistics, spans */
    {lp_run_bounds, NULL, PLACES},                 /* timeline.c: t0, first and last work */
    {lp_run_kernels, lp_run_kernels_free, REPORT}, /* kernels.c: kernel tables, cost centres */
    {lp_run_operators, lp_run_operators_free, REPORT}, /* operators.c */
    {lp_run_timeline, lp_run_timeline_free, REPORT}, /* timeline.c: busy, gaps, bins, memory */
    {lp_run_kernel_places, NULL, PLACES},          /* kernels.c: each kernel's place in the
                                                      work (freed with the work) */
    {lp_run_power, lp_run_power_free, REPORT},     /* power.c */
    {lp_run_comm, NULL, REPORT},                   /* comm.c: communication, overlap */
    {lp_run_overhead, lp_run_overhead_free, REPORT}, /* overhead.c: CUPTI's overhead records */
    {lp_run_tokens, NULL, REPORT},                 /* utilisation.c: tokens per stage */
    {lp_run_llm_metrics, lp_run_llm_free, REPORT}, /* requests.c: TTFT, TPOT, ITL */
    {lp_run_spread, lp_run_spread_free, REPORT},   /* spread.c: in-process spread, +/-10 % */
    {lp_run_utilisation, NULL, REPORT},            /* utilisation.c: MFU and MBU */
    {lp_run_gemms, lp_run_gemms_free, REPORT},     /* gemm.c: GEMM table, per-stage FLOPs */
    {lp_run_graphs, lp_run_graphs_free, PLACES},   /* graphs.c: replays per graph and stage,
                                                      each replayed kernel's capture range */
    {lp_run_counters, NULL, REPORT},               /* counters.c: hardware counters per stage */
    {lp_run_pm, lp_run_pm_free, REPORT},           /* pm.c: PM samples per stage, timeline */
    {lp_run_diagnose, lp_run_findings_free, REPORT}, /* diagnosis.c: reads all of the above */
};

void lp_run_free(struct lp_run *r)
{
    if (!r)
        return;
    if (r->deep_free)
        r->deep_free(r);
    for (size_t i = sizeof passes / sizeof *passes; i-- > 0;)
        if (passes[i].free)
            passes[i].free(r);
    lp_run_notes_free(r);
    memset(r, 0, sizeof *r);
}

static void ctx_free(struct lp_run_ctx *c)
{
    /* work and kernel_work are the run's (lp_run_names_free) */
    free(c->occ);
    free(c->ri);
    for (size_t i = 0; i < c->n_rules; i++)
        free(c->rule_names[i]);
    free(c->rule_names);
    free(c->rule_stage);
    free(c->subs);
    free(c->kernel_gemm);
    free(c->kernel_origin);
    free(c->replays);
    free(c->gemm_replays);
    free(c->gemm_occ);
    free(c->gemm_end);
    free(c->step_ns);
}

uint64_t lp_run_memory_need(const struct lp_trace *t)
{
    uint64_t work = (uint64_t)t->n_kernels + t->n_memcpys + t->n_memsets;
    /* the grouping's 8 bytes; kernel_gemm (kernel_work is made after the peak) */
    return work * (sizeof(struct lp_work) + sizeof(uint64_t)) +
           (uint64_t)t->n_kernels * sizeof(int32_t);
}

int lp_run_analyze(const struct lp_trace *t, const struct lp_run_options *opt, struct lp_run *r,
                   char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->trace = t;
    if (opt)
        r->opt = *opt;
    if (r->opt.top_k == 0)
        r->opt.top_k = 15;
    if (r->opt.gap_ns == 0)
        r->opt.gap_ns = 100000;
    r->power.device = -1;
    struct lp_run_ctx c = {.t = t, .r = r, .err = err, .errlen = errlen,
                           .warmup_stage = -1, .outside_stage = -1};
    if (errlen)
        err[0] = 0;
    int rc = LP_OK;
    for (size_t i = 0; i < sizeof passes / sizeof *passes && rc == LP_OK; i++)
        if (passes[i].scope >= r->opt.scope)
            rc = passes[i].run(&c);
    if (rc == LP_ERR_NOMEM && errlen && !err[0])
        snprintf(err, errlen, "out of memory");
    ctx_free(&c);
    if (rc != LP_OK)
        lp_run_free(r);
    return rc;
}
