/* Hardware counters per stage (record --counters): each counters record is one segment of
 * the run, cut where stage ranges start and end, so a segment lies inside one stage
 * occurrence or between them. Its middle, on its thread, finds the occurrence as a launch
 * there would; the stage's measured occurrences sum their segments. From the sums: tensor
 * FLOP/s (executed work as a share of the peak, not MFU, which counts the model's useful
 * FLOPs), DRAM bandwidth and MBU over the stage's wall time, per step or per occurrence beside
 * the model's FLOPs and bytes and the cuBLAS calls' FLOPs, and why the executed work departs
 * from the model's. */
#include <string.h>

#include "run_internal.h"

static void add(double *sum, unsigned *valid, const struct lp_counters *k)
{
    *valid |= k->valid;
    for (unsigned i = 0; i < LP_COUNTER_COUNT; i++)
        if (k->valid & (1u << i))
            sum[i] += (double)k->value[i];
}

/* Why executed tensor work departs from the model's useful matmul FLOPs: from the stage's
 * tokens per pass, its GEMM shapes and grouped GEMM kernels. */
static uint32_t excess(const struct lp_stage_counters *k, const struct lp_stage_report *st)
{
    double x = k->vs_model_flops;
    if (x <= 0 || (x >= 0.8 && x <= 1.1))
        return 0;
    if (x < 0.8)
        return LP_EXCESS_SHORT;
    uint32_t bits = 0;
    if (k->pass_tokens > 0 && k->pass_tokens <= 64)
        bits |= LP_EXCESS_TILE_PADDING;
    if (st->gemm_mla)
        bits |= LP_EXCESS_MLA;
    if (st->moe_gemm_ns > 0)
        bits |= LP_EXCESS_MOE;
    return bits ? bits : LP_EXCESS_UNEXPLAINED;
}

static void derive(struct lp_stage_counters *k, const struct lp_stage_report *st,
                   const struct lp_run *r)
{
    for (unsigned i = 0; i < LP_COUNTER_COUNT; i++)
        if (lp_counter_dtype(i))
            k->tensor_flops += k->value[i];
    k->dram_bytes = k->value[LP_COUNTER_DRAM_READ] + k->value[LP_COUNTER_DRAM_WRITE];
    double secs = st->wall.total / 1e9;
    if (secs > 0) {
        k->tflops = k->tensor_flops / secs / 1e12;
        k->gbs = k->dram_bytes / secs / 1e9;
        double peak = r->util.gpu.tflops[r->util.dtype];
        k->executed_share = peak > 0 ? k->tflops / peak : 0;
        k->mbu = r->util.gpu.mem_bw_gbs > 0 ? k->gbs / r->util.gpu.mem_bw_gbs : 0;
    }
    /* per decode step, as the model's figures are; per occurrence otherwise */
    k->units = st->kind == LP_STAGE_KIND_DECODE ? (double)st->steps : (double)st->occurrences;
    if (k->units <= 0)
        return;
    k->flops_per_unit = k->tensor_flops / k->units;
    k->bytes_per_unit = k->dram_bytes / k->units;
    if (st->has_util && st->model_matmul_flops > 0)
        k->vs_model_flops = k->flops_per_unit / st->model_matmul_flops;
    if (st->has_util && st->model_bytes > 0)
        k->vs_model_bytes = k->bytes_per_unit / st->model_bytes;
    if (st->gemm_flops > 0)
        k->vs_gemm_flops = k->tensor_flops / st->gemm_flops;
    k->pass_tokens = st->kind == LP_STAGE_KIND_DECODE ? (st->batch > 0 ? st->batch : 0)
                     : st->occurrences && st->tokens > 0 ? st->tokens / (int64_t)st->occurrences
                                                         : 0;
    k->excess = excess(k, st);
}

int lp_run_counters(struct lp_run_ctx *c)
{
    const struct lp_trace *t = c->t;
    struct lp_run *r = c->r;
    struct lp_run_counters *rc = &r->counters;
    rc->metrics = lp_trace_meta(t, "counters_metrics");
    rc->chip = lp_trace_meta(t, "counters_chip");
    for (size_t i = 0; i < t->n_counters; i++) {
        const struct lp_counters *k = &t->counters[i];
        rc->segments++;
        add(rc->value, &rc->valid, k);
        uint64_t mid = k->start + (k->end > k->start ? (k->end - k->start) / 2 : 0);
        int32_t o = lp_run_occ_at(c, k->thread, mid);
        int s = o >= 0 ? c->occ[o].stage : -1;
        if (s < 0 || s == c->warmup_stage || c->occ[o].warmup) {
            rc->outside++;
            continue;
        }
        struct lp_stage_counters *sc = &r->stages[s].ctr;
        sc->segments++;
        add(sc->value, &sc->valid, k);
    }
    for (size_t s = 0; s < r->n_stages; s++)
        if (r->stages[s].ctr.segments)
            derive(&r->stages[s].ctr, &r->stages[s], r);
    return LP_OK;
}
