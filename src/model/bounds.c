/* The roofline: lower bounds of time from FLOPs at dense peak and bytes at memory
 * bandwidth, assuming full overlap; and what it implies for a request: TTFT, TPOT and token
 * rates that no implementation on that GPU can beat, from the analytic costs of each stage. */
#include <math.h>
#include <string.h>

#include "llmprof/model.h"

void lp_roofline(const struct lp_cost *c, const struct lp_gpu *g, enum lp_dtype dtype,
                 struct lp_bound *b)
{
    double peak = g->tflops[dtype] * 1e12, fp32 = g->tflops[LP_DTYPE_FP32] * 1e12;
    b->compute_s = (peak > 0 ? c->matmul_flops / peak : (c->matmul_flops > 0 ? INFINITY : 0)) +
                   (fp32 > 0 ? c->other_flops / fp32 : 0);
    b->memory_s = lp_cost_bytes(c) / (g->mem_bw_gbs * 1e9);
    b->memory_bound = b->memory_s > b->compute_s;
    b->bound_s = b->memory_bound ? b->memory_s : b->compute_s;
}

void lp_model_bounds_compute(const struct lp_model_result *r, const struct lp_workload *w,
                     const struct lp_gpu *g, struct lp_model_bounds *b)
{
    memset(b, 0, sizeof *b);
    b->gpu = *g;
    b->matmul_dtype = w->activations;
    for (int s = 0; s < LP_MODEL_STAGE_COUNT; s++)
        lp_roofline(&r->total[s], g, b->matmul_dtype, &b->stage[s]);
    /* the decode part of the request, per step */
    struct lp_cost dec = r->total[LP_MODEL_STAGE_REQUEST];
    const struct lp_cost *pre = &r->total[LP_MODEL_STAGE_PREFILL],
                         *vis = &r->total[LP_MODEL_STAGE_VISION];
    double steps = (double)(w->generated > 1 ? w->generated - 1 : 1);
    dec.matmul_flops = (dec.matmul_flops - pre->matmul_flops - vis->matmul_flops) / steps;
    dec.other_flops = (dec.other_flops - pre->other_flops - vis->other_flops) / steps;
    dec.weight_bytes = (dec.weight_bytes - pre->weight_bytes - vis->weight_bytes) / steps;
    dec.act_bytes = (dec.act_bytes - pre->act_bytes - vis->act_bytes) / steps;
    dec.kv_read_bytes = (dec.kv_read_bytes - pre->kv_read_bytes - vis->kv_read_bytes) / steps;
    dec.kv_write_bytes = (dec.kv_write_bytes - pre->kv_write_bytes - vis->kv_write_bytes) / steps;
    lp_roofline(&dec, g, b->matmul_dtype, &b->decode_mean);
    b->ttft_s = b->stage[LP_MODEL_STAGE_VISION].bound_s + b->stage[LP_MODEL_STAGE_PREFILL].bound_s;
    b->tpot_s = w->generated > 1 ? b->decode_mean.bound_s : 0;
    if (b->stage[LP_MODEL_STAGE_PREFILL].bound_s > 0)
        b->prefill_tokens_per_s = (double)w->batch * (double)r->prefill_tokens /
                                  b->stage[LP_MODEL_STAGE_PREFILL].bound_s;
    if (b->tpot_s > 0)
        b->decode_tokens_per_s = (double)w->batch / b->tpot_s;
}
