/* Diagnosis: rules that read the computed numbers and name a likely cause and a next step.
 * Each finding cites the numbers it read; thresholds are in the rules below and in
 * docs/report-schema.md. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "run_internal.h"

static int add(struct lp_run *r, int severity, const char *title, const char *advice,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int add(struct lp_run *r, int severity, const char *title, const char *advice,
               const char *fmt, ...)
{
    struct lp_finding *p = realloc(r->findings, (r->n_findings + 1) * sizeof *p);
    if (!p)
        return LP_ERR_NOMEM;
    r->findings = p;
    struct lp_finding *f = &p[r->n_findings++];
    memset(f, 0, sizeof *f);
    f->severity = severity;
    snprintf(f->title, sizeof f->title, "%s", title);
    snprintf(f->advice, sizeof f->advice, "%s", advice);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->evidence, sizeof f->evidence, fmt, ap);
    va_end(ap);
    return LP_OK;
}

static int losses(struct lp_run *r)
{
    const struct lp_trace *t = r->trace;
    uint64_t lost = 0;
    for (size_t i = 0; i < t->n_losses; i++)
        lost += t->losses[i].count;
    r->lost_records = lost;
    if (lost == 0 && t->complete && t->n_warnings == 0 && t->n_losses == 0)
        return LP_OK;
    return add(r, 1, "The trace is not whole: figures are lower bounds",
               "See the losses section; a trace cut short (killed process) keeps what was "
               "flushed. Rerun with a larger buffer (LLMPROF_MAX_BUFFERS) if CUPTI dropped "
               "records.",
               "%llu records lost, %zu loss notes, %s, %zu reader warnings, %llu bytes skipped, "
               "%llu implausible records left out",
               (unsigned long long)lost, t->n_losses,
               t->complete ? "clean exit" : "no end chunk (the process did not exit cleanly)",
               t->n_warnings, (unsigned long long)t->dropped_bytes,
               (unsigned long long)t->implausible);
}

/* The GPU idles waiting for launches: what a CUDA graph could save, per decode step (per
 * token) or per prefill (of the TTFT). */
static int launch_bound(struct lp_run *r, const struct lp_stage_report *s)
{
    double busy = s->busy_share;
    /* one kernel per occurrence (a projector) has nothing a graph would batch */
    if (s->occurrences == 0 || busy >= 0.8 || s->host_wait_share < 0.5 ||
        s->kernels_per_occurrence < 2)
        return LP_OK;
    char mbu[64] = "";
    if (s->has_util)
        snprintf(mbu, sizeof mbu, "; MBU %.1f %%", 100 * s->mbu);
    int decode = s->kind == LP_STAGE_KIND_DECODE && s->steps > 0;
    double units = decode ? (double)s->steps : (double)s->occurrences;
    double per = s->wall.total / units, per_busy = (double)s->busy_ns / units;
    double idle = per > per_busy ? per - per_busy : 0;
    const char *unit = decode ? "step" : s->kind == LP_STAGE_KIND_PREFILL ? "prefill" : "occurrence";
    char title[96], advice[512];
    snprintf(title, sizeof title, "%c%s is launch bound", s->name[0] >= 'a' && s->name[0] <= 'z'
                                                              ? s->name[0] - 'a' + 'A'
                                                              : s->name[0],
             s->name + 1);
    const char *how = s->graph_kernels
                          ? "Part of the work already runs in CUDA graphs: capture the rest"
                          : "Capture it in a CUDA graph (torch.compile mode=\"reduce-overhead\", "
                            "torch.cuda.CUDAGraph, or the engine's graph option)";
    if (decode)
        snprintf(advice, sizeof advice, "%s, or fuse small kernels: with the GPU idle %.3g ms of "
                 "each %.3g ms step, that could save up to ~%.3g ms per token. A larger batch "
                 "gives each launch more work.", how, idle / 1e6, per / 1e6, idle / 1e6);
    else if (s->kind == LP_STAGE_KIND_PREFILL)
        snprintf(advice, sizeof advice, "%s, or fuse small kernels: the GPU idles %.3g ms of each "
                 "%.3g ms prefill waiting for launches, up to ~%.3g ms of the TTFT. A longer "
                 "prompt or a batch gives each launch more work.", how, idle / 1e6, per / 1e6,
                 idle / 1e6);
    else
        snprintf(advice, sizeof advice, "%s, or fuse small kernels: the GPU idles %.3g ms of each "
                 "%.3g ms occurrence.", how, idle / 1e6, per / 1e6);
    return add(r, 2, title, advice,
               "%s: GPU busy %.3g ms of a %.3g ms %s (%.1f %%); %.1f %% of its idle time the GPU "
               "waited for the host to launch the next kernel; %.0f kernels per %s, median "
               "launch-to-start %.1f us%s",
               s->name, per_busy / 1e6, per / 1e6, unit, 100 * busy, 100 * s->host_wait_share,
               (double)s->kernels / units, unit, s->launch_delay_p50_ns / 1e3, mbu);
}

static int utilisation(struct lp_run *r, const struct lp_stage_report *s)
{
    if (!s->has_util)
        return LP_OK;
    double gemm = s->gpu_ns ? s->cat_ns[LP_KCAT_GEMM] / (double)s->gpu_ns : 0;
    if (s->kind == LP_STAGE_KIND_DECODE && s->busy_share >= 0.8 && s->mbu < 0.5)
        return add(r, 1, "Decode keeps the GPU busy but far from its bandwidth",
                   "Memory-bound work below the roofline: look at the top decode kernels "
                   "(GEMV-shaped GEMMs, attention over the KV cache), weight-only quantisation, "
                   "or a larger batch.",
                   "%s: MBU %.1f %% (%.0f of %.0f GB/s), GPU busy %.1f %%", s->name,
                   100 * s->mbu, s->achieved_gbs, r->gpu.mem_bw_gbs, 100 * s->busy_share);
    if (s->kind == LP_STAGE_KIND_PREFILL && s->mfu < 0.3)
        return add(r, 1, "Prefill is far from the compute peak",
                   gemm < 0.5 ? "Non-GEMM kernels dominate: fuse elementwise and norm kernels "
                                "(torch.compile), use a fused attention kernel."
                              : "GEMMs dominate but run slowly: check shapes (multiples of 64/"
                                "128), dtypes (bf16/fp8 tensor cores), and batch more tokens "
                                "per prefill.",
                   "%s: MFU %.1f %% (%.1f of %.0f TFLOP/s %s), GEMM share %.1f %% of its GPU "
                   "time, GPU busy %.1f %%",
                   s->name, 100 * s->mfu, s->achieved_tflops, r->gpu.tflops[r->dtype],
                   lp_dtype_name(r->dtype), 100 * gemm, 100 * s->busy_share);
    return LP_OK;
}

static int gemm_share(struct lp_run *r, const struct lp_stage_report *s)
{
    if (s->kind != LP_STAGE_KIND_PREFILL || s->gpu_ns == 0 || s->has_util)
        return LP_OK;
    double gemm = s->cat_ns[LP_KCAT_GEMM] / (double)s->gpu_ns;
    if (gemm >= 0.5)
        return LP_OK;
    return add(r, 1, "GEMMs are a small share of prefill",
               "Elementwise, norm and copy kernels take most of the time: fuse them "
               "(torch.compile), use fused attention and norm kernels.",
               "%s: GEMM %.1f %%, attention %.1f %%, elementwise %.1f %%, norm %.1f %%, "
               "reduction %.1f %% of its GPU time",
               s->name, 100 * gemm, 100 * s->cat_ns[LP_KCAT_ATTENTION] / (double)s->gpu_ns,
               100 * s->cat_ns[LP_KCAT_ELEMENTWISE] / (double)s->gpu_ns,
               100 * s->cat_ns[LP_KCAT_NORM] / (double)s->gpu_ns,
               100 * s->cat_ns[LP_KCAT_REDUCTION] / (double)s->gpu_ns);
}

static int copies(struct lp_run *r, const struct lp_stage_report *s)
{
    double cp = s->cat_ns[LP_KCAT_MEMCPY];
    if (s->gpu_ns == 0 || cp < 0.1 * (double)s->gpu_ns || s->kind == LP_STAGE_KIND_OUTSIDE)
        return LP_OK;
    return add(r, 1, "Copies take a large share of a stage",
               "Keep tensors on the GPU, use pinned memory and non_blocking copies, and avoid "
               "reading results back every step (.item(), .cpu()).",
               "%s: memcpy %.1f %% of its GPU time; %.1f MiB HtoD, %.1f MiB DtoH", s->name,
               100 * cp / (double)s->gpu_ns, s->memcpy_bytes[0] / 1048576.0,
               s->memcpy_bytes[1] / 1048576.0);
}

static int variance(struct lp_run *r, const struct lp_stage_report *s)
{
    /* under a millisecond, a few tens of microseconds of host jitter make the spread */
    if (!s->variable || s->kind == LP_STAGE_KIND_WARMUP || s->wall.mean < 1e6)
        return LP_OK;
    return add(r, 1, "Stage time varies between repeats",
               "Warm up before measuring (name warmup ranges 'warmup' to set them apart), check "
               "the clocks and throttle reasons below, and look for allocator growth or "
               "recompilation in the slow occurrences.",
               "%s: CV %.1f %% over %zu occurrences (min %.3f ms, mean %.3f ms, max %.3f ms)",
               s->name, 100 * s->wall.cv, s->occurrences, s->wall.min / 1e6, s->wall.mean / 1e6,
               s->wall.max / 1e6);
}

static int throttling(struct lp_run *r)
{
    static const int bits[] = {2, 3, 5, 6, 7}; /* power cap, hw slowdown, thermal, brake */
    char ev[400] = "";
    size_t o = 0;
    int sev = 0;
    for (size_t i = 0; i < sizeof bits / sizeof *bits; i++) {
        double s = r->throttle_share[bits[i]];
        if (s < 0.05)
            continue;
        sev = bits[i] == 2 && sev < 2 ? 1 : 2;
        o += (size_t)snprintf(ev + o, o < sizeof ev ? sizeof ev - o : 0, "%s%s %.1f %% of samples",
                              o ? ", " : "", lp_throttle_name(bits[i]), 100 * s);
        if (o >= sizeof ev)
            break;
    }
    if (!ev[0])
        return LP_OK;
    return add(r, sev, "Clocks were held back",
               "Power cap or thermal limits lowered the clocks: compare the SM clock chart with "
               "the maximum, check cooling and the power limit (nvidia-smi -q -d PERFORMANCE).",
               "%s (NVML clock-event reasons over %zu samples)", ev, r->nvml_samples);
}

int lp_run_diagnose(struct lp_run_ctx *c)
{
    struct lp_run *r = c->r;
    int rc = losses(r);
    for (size_t i = 0; i < r->n_stages && rc == LP_OK; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        if (s->kind == LP_STAGE_KIND_WARMUP || s->kind == LP_STAGE_KIND_OUTSIDE)
            continue;
        if ((rc = launch_bound(r, s)) == LP_OK && (rc = utilisation(r, s)) == LP_OK &&
            (rc = gemm_share(r, s)) == LP_OK && (rc = copies(r, s)) == LP_OK)
            rc = variance(r, s);
    }
    if (rc == LP_OK)
        rc = throttling(r);
    if (rc == LP_OK && c->outside_stage >= 0) {
        const struct lp_stage_report *s = &r->stages[c->outside_stage];
        uint64_t all = r->all_kernels.gpu_ns;
        if (all && s->gpu_ns > all / 5)
            rc = add(r, 0, "Much GPU work runs outside the stage ranges",
                     "Widen the ranges or add one around this work to see where it belongs.",
                     "%.1f %% of GPU time (%zu kernels) was launched outside every stage range",
                     100.0 * (double)s->gpu_ns / (double)all, s->kernels);
    }
    if (rc == LP_OK && r->n_stages == 1 && r->stages[0].kind == LP_STAGE_KIND_RUN)
        rc = add(r, 0, "No stages", "Wrap prefill and decode in NVTX ranges named prefill and "
                                    "decode (torch.cuda.nvtx.range_push) to see them apart.",
                 "%zu NVTX ranges, none matched a stage rule; %s", r->ranges.n,
                 r->trace->n_gemms ? "the GEMM shapes do not look like an LLM's (decode steps "
                                     "running the prefill's weights)"
                                   : "no GEMM shapes to infer stages from");
    /* most severe first, stable */
    for (size_t i = 1; i < r->n_findings; i++) {
        struct lp_finding x = r->findings[i];
        size_t j = i;
        while (j > 0 && r->findings[j - 1].severity < x.severity) {
            r->findings[j] = r->findings[j - 1];
            j--;
        }
        r->findings[j] = x;
    }
    return rc;
}

void lp_run_findings_free(struct lp_run *r)
{
    free(r->findings);
}
