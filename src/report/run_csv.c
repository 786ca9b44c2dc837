/* kernels.csv, operators.csv, stages.csv, gemms.csv, deep.csv, iterations.csv: RFC 4180 (quoted
 * where needed), one header row, times in ns, shares as fractions, for spreadsheets and
 * scripts. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llmprof/ncu.h"
#include "llmprof/report.h"
#include "report_internal.h"

static void rows(FILE *f, const struct lp_run *r, const char *scope,
                 const struct lp_kernel_table *t)
{
    for (size_t i = 0; i < t->n_groups; i++) {
        const struct lp_kernel_row *k = &t->v[i];
        lp_csv_field(f, scope);
        fprintf(f, ",%zu,", i + 1);
        lp_csv_field(f, r->short_names[k->group]);
        fputc(',', f);
        lp_csv_field(f, r->names[k->group]);
        fprintf(f, ",%s,%llu,%llu,%.1f,%llu,%llu,%llu,%.1f,%.6f\n", lp_kcat_name(r->cats[k->group]),
                (unsigned long long)k->calls, (unsigned long long)k->total_ns, k->mean_ns,
                (unsigned long long)k->median_ns, (unsigned long long)k->min_ns,
                (unsigned long long)k->max_ns, k->std_ns, k->share);
    }
}

int lp_report_kernels_csv(FILE *f, const struct lp_run *r)
{
    fprintf(f, "scope,rank,short_name,name,category,calls,total_ns,mean_ns,median_ns,min_ns,"
               "max_ns,std_ns,share\n");
    rows(f, r, "all", &r->all_kernels);
    for (size_t i = 0; i < r->n_stages; i++)
        rows(f, r, r->stages[i].name, &r->stages[i].top);
    return ferror(f) ? -1 : 0;
}

int lp_report_operators_csv(FILE *f, const struct lp_run *r)
{
    fprintf(f, "operator,calls,cpu_ns,gpu_ns,self_gpu_ns,kernels,top_kernel,top_kernel_gpu_ns\n");
    for (size_t i = 0; i < r->n_ops; i++) {
        const struct lp_op_row *o = &r->ops[i];
        lp_csv_field(f, o->name);
        fprintf(f, ",%llu,%llu,%llu,%llu,%llu,", (unsigned long long)o->calls,
                (unsigned long long)o->cpu_ns, (unsigned long long)o->gpu_ns,
                (unsigned long long)o->self_gpu_ns, (unsigned long long)o->kernels);
        lp_csv_field(f, o->top_group[0] != SIZE_MAX ? r->names[o->top_group[0]] : "");
        fprintf(f, ",%llu\n", (unsigned long long)o->top_ns[0]);
    }
    return ferror(f) ? -1 : 0;
}

/* A share to 4 places; empty when not known (NaN: no kernels recorded). */
static const char *share(double v, char *buf, size_t len)
{
    if (isfinite(v))
        snprintf(buf, len, "%.4f", v);
    else
        buf[0] = 0;
    return buf;
}

/* V into BUF (32 bytes), or empty when not KNOWN */
static const char *known(int is_known, uint64_t v, char *buf)
{
    if (is_known)
        snprintf(buf, 32, "%llu", (unsigned long long)v);
    else
        buf[0] = 0;
    return buf;
}

/* ctr_segments ... ctr_over_model_causes: empty past the segment count when the stage has no
 * counters; the executed share, MBU and the ratio to the model empty when they could not be
 * made (0: no peak or model known); causes joined by '+' */
static void counter_fields(FILE *f, const struct lp_stage_counters *c)
{
    fprintf(f, "%zu,", c->segments);
    if (!c->segments) {
        fprintf(f, ",,,,,,,,");
        return;
    }
    fprintf(f, "%.6g,%.4f,", c->tensor_flops, c->tflops);
    if (c->executed_share > 0)
        fprintf(f, "%.5f", c->executed_share);
    fprintf(f, ",%.6g,%.2f,", c->dram_bytes, c->gbs);
    if (c->mbu > 0)
        fprintf(f, "%.5f", c->mbu);
    fprintf(f, ",");
    if (c->vs_model_flops > 0)
        fprintf(f, "%.4f", c->vs_model_flops);
    fprintf(f, ",");
    for (int b = 0, n = 0; lp_text_excess_key(b); b++)
        if (c->excess & 1u << b)
            fprintf(f, "%s%s", n++ ? "+" : "", lp_text_excess_key(b));
    fprintf(f, ",");
}

/* pm_samples, one mean per PM metric (empty when not sampled), pm_dram_gbs, pm_mbu */
static void pm_fields(FILE *f, const struct lp_pm_stats *p)
{
    fprintf(f, "%zu", p->samples);
    for (int i = 0; i < LP_PM_COUNT; i++)
        if (p->samples && (p->valid & 1u << i))
            fprintf(f, ",%.4g", p->mean[i]);
        else
            fprintf(f, ",");
    if (p->samples)
        fprintf(f, ",%.4g", p->dram_gbs);
    else
        fprintf(f, ",");
    if (p->samples && p->mbu > 0)
        fprintf(f, ",%.5f", p->mbu);
    else
        fprintf(f, ",");
}

int lp_report_stages_csv(FILE *f, const struct lp_run *r)
{
    fprintf(f, "stage,kind,occurrences,wall_total_ns,wall_mean_ns,wall_std_ns,wall_cv,"
               "wall_min_ns,wall_max_ns,variable,busy_ns,busy_share,gpu_ns,kernels,"
               "graph_kernels,gaps,gap_ns,host_wait_ns,host_wait_share,launch_delay_p50_ns,"
               "tokens,tokens_source,batch,tokens_per_s,steps,steps_source,step_p50_ns,"
               "step_p90_ns,step_p99_ns,mfu,mbu,achieved_tflops,achieved_gbs,"
               "power_mean_w,power_peak_w,energy_j,j_per_token,htod_bytes,dtoh_bytes,dtod_bytes,"
               "peak_alloc_bytes,ctr_segments,ctr_tensor_flops,ctr_tflops,ctr_executed_share,"
               "ctr_dram_bytes,ctr_gbs,ctr_mbu,ctr_over_model_flops,ctr_over_model_causes,"
               "pm_samples");
    for (int p = 0; p < LP_PM_COUNT; p++)
        fprintf(f, ",pm_%s", lp_pm_name((enum lp_pm)p));
    fprintf(f, ",pm_dram_gbs,pm_mbu");
    for (int c = 0; c < LP_OVERHEAD_CLASS_COUNT; c++) {
        const char *key = lp_text_overhead_class_key((enum lp_overhead_class)c);
        fprintf(f, ",cupti_%s_ns,cupti_%s_count,cupti_%s_share", key, key, key);
    }
    fprintf(f, "\n");
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        lp_csv_field(f, s->name);
        char busy[32], wait[32], t[5][32];
        const int k = r->kernels_recorded; /* times made from kernels: empty without them */
        fprintf(f, ",%s,%zu,%.0f,%.1f,%.1f,%.4f,%.0f,%.0f,%d,%s,%s,%s,%zu,%zu,%zu,%s,"
                   "%s,%s,%s,%lld,%s,%lld,%.2f,",
                lp_stage_kind_name(s->kind), s->occurrences, s->wall.total, s->wall.mean,
                s->wall.std, s->wall.cv, s->wall.min, s->wall.max, s->variable,
                known(k, s->busy_ns, t[0]), share(s->busy_share, busy, sizeof busy),
                known(k, s->gpu_ns, t[1]), s->kernels, s->graph_kernels, s->gaps,
                known(k, s->gap_ns, t[2]), known(k, s->host_wait_ns, t[3]),
                share(s->host_wait_share, wait, sizeof wait),
                known(k, s->launch_delay_p50_ns, t[4]), (long long)s->tokens,
                lp_text_tokens_source(s->tokens_source), (long long)s->batch, s->tokens_per_s);
        if (s->kind == LP_STAGE_KIND_DECODE)
            fprintf(f, "%lld,%s,", (long long)s->steps, lp_text_steps_source(s->steps_source));
        else
            fprintf(f, ",,");
        if (s->step.n)
            fprintf(f, "%.0f,%.0f,%.0f,", s->step.p50, s->step.p90, s->step.p99);
        else
            fprintf(f, ",,,");
        if (s->has_util)
            fprintf(f, "%.5f,%.5f,%.3f,%.1f,", s->mfu, s->mbu, s->achieved_tflops,
                    s->achieved_gbs);
        else
            fprintf(f, ",,,,");
        fprintf(f, "%.2f,%.2f,%.3f,%.5f,%llu,%llu,%llu,%llu,", s->power_mean_w, s->power_peak_w,
                s->energy_j, s->j_per_token, (unsigned long long)s->memcpy_bytes[0],
                (unsigned long long)s->memcpy_bytes[1], (unsigned long long)s->memcpy_bytes[2],
                (unsigned long long)s->peak_alloc_bytes);
        counter_fields(f, &s->ctr);
        pm_fields(f, &s->pm);
        for (int c = 0; c < LP_OVERHEAD_CLASS_COUNT; c++) /* empty: none recorded */
            if (r->overhead.records)
                fprintf(f, ",%llu,%zu,%.5f", (unsigned long long)s->overhead_ns[c],
                        s->overhead_n[c], s->overhead_share[c]);
            else
                fprintf(f, ",,,");
        fprintf(f, "\n");
    }
    return ferror(f) ? -1 : 0;
}

int lp_report_gemms_csv(FILE *f, const struct lp_run *r)
{
    fprintf(f, "stage,replayed,api,m,n,k,batch,transa,transb,a_type,b_type,d_type,compute_type,epilogue,"
               "algo,tile,calls,linked,kernels,gpu_ns,mean_ns,flops_per_call,tflops,peak_dtype,"
               "peak_share,intensity,memory_bound,gbs,top_kernel,hint,vary_dim,vary_to,"
               "vary_step,vary_sizes\n");
    for (size_t i = 0; i < r->n_gemms; i++) {
        const struct lp_gemm_row *g = &r->gemms[i];
        const struct lp_gemm *c = &g->call;
        lp_csv_field(f, g->stage >= 0 ? r->stages[g->stage].name : "");
        fprintf(f, ",%d,", g->replayed);
        lp_csv_field(f, lp_trace_str(r->trace, c->api));
        fprintf(f, ",%llu,%llu,%llu,%llu,%c,%c,%s,%s,%s,%s,%u,%d,", (unsigned long long)c->m,
                (unsigned long long)c->n, (unsigned long long)c->k, (unsigned long long)c->batch,
                "NTC"[c->transa % 3], "NTC"[c->transb % 3], lp_cuda_type_name(c->a_type),
                lp_cuda_type_name(c->b_type), lp_cuda_type_name(c->d_type),
                lp_compute_type_name(c->compute_type), c->epilogue, c->algo);
        lp_csv_field(f, lp_trace_str(r->trace, c->tile));
        fprintf(f, ",%llu,%llu,%llu,%llu,%.1f,%.6g,%.3f,%s,", (unsigned long long)g->calls,
                (unsigned long long)g->linked, (unsigned long long)g->kernels,
                (unsigned long long)g->gpu_ns, g->mean_ns, g->flops_per_call, g->tflops,
                g->peak_dtype >= 0 ? lp_dtype_name(g->peak_dtype) : "");
        if (g->peak_share >= 0)
            fprintf(f, "%.5f", g->peak_share);
        fprintf(f, ",%.2f,%d,%.1f,", g->intensity, g->memory_bound, g->gbs);
        lp_csv_field(f, g->top_group != SIZE_MAX ? r->names[g->top_group] : "");
        fputc(',', f);
        char hint[512];
        lp_text_gemm_hint(g, hint, sizeof hint);
        lp_csv_field(f, hint);
        if (g->vary_dim) /* m or n above is the smallest size */
            fprintf(f, ",%c,%llu,%llu,%zu\n", g->vary_dim, (unsigned long long)g->vary_hi,
                    (unsigned long long)g->vary_step, g->vary_values);
        else
            fprintf(f, ",,,,\n");
    }
    return ferror(f) ? -1 : 0;
}

/* deep.csv: one row per measured launch configuration and stage (llmprof deep); the header
 * alone when the run has no deep dive */
int lp_report_deep_csv(FILE *f, const struct lp_run *r)
{
    fprintf(f, "stage,kernel,name,grid,block,share,run_gpu_ns,instances,duration_ns,sol_sm_pct,"
               "sol_memory_pct,sol_dram_pct,dram_bytes_per_s,occupancy_achieved_pct,"
               "occupancy_theoretical_pct,occupancy_limits,tensor_pipe_pct,tensor_flops,"
               "fp32_flops,flops_per_s,flops_per_byte,ridge_flops_per_byte,stall1,stall2,stall3,"
               "bound,advice\n");
    const struct lp_deep *d = r->deep;
    for (size_t i = 0; d && i < d->n_rows; i++) {
        const struct lp_deep_row *w = &d->rows[i];
        const struct lp_ncu_kernel *k = w->j.k;
        char dims[96], limits[96] = "";
        lp_csv_field(f, r->stages[w->stage].name);
        fputc(',', f);
        lp_csv_field(f, r->short_names[w->group]);
        fputc(',', f);
        lp_csv_field(f, r->names[w->group]);
        snprintf(dims, sizeof dims, ",%dx%dx%d,%dx%dx%d,", w->grid[0], w->grid[1], w->grid[2],
                 w->block[0], w->block[1], w->block[2]);
        fprintf(f, "%s%.6f,%llu,%zu", dims, w->share, (unsigned long long)w->run_ns,
                w->instances);
        static const enum lp_ncu_metric ms[] = {
            LP_NCU_DURATION, LP_NCU_SOL_SM, LP_NCU_SOL_MEMORY, LP_NCU_SOL_DRAM, LP_NCU_DRAM_BW,
            LP_NCU_OCC_ACHIEVED, LP_NCU_OCC_THEORETICAL};
        for (size_t m = 0; m < sizeof ms / sizeof *ms; m++)
            if ((k->valid >> ms[m]) & 1)
                fprintf(f, ",%.6g", k->metric[ms[m]]);
            else
                fputc(',', f);
        for (int l = 0; l < LP_DEEP_LIMIT_COUNT; l++)
            if (w->j.limits & (1u << l))
                snprintf(limits + strlen(limits), sizeof limits - strlen(limits), "%s%s",
                         limits[0] ? "+" : "", lp_text_deep_limit_key(l));
        fprintf(f, ",%s,", limits);
        if ((k->valid >> LP_NCU_TENSOR) & 1)
            fprintf(f, "%.6g", k->metric[LP_NCU_TENSOR]);
        fprintf(f, ",%.6g,%.6g,", w->tensor_flops, w->fp32_flops);
        if (isfinite(w->flops_per_s))
            fprintf(f, "%.6g", w->flops_per_s);
        fputc(',', f);
        if (isfinite(w->intensity))
            fprintf(f, "%.6g", w->intensity);
        fputc(',', f);
        if (w->ridge > 0)
            fprintf(f, "%.6g", w->ridge);
        for (int s = 0; s < LP_DEEP_STALLS; s++) {
            fputc(',', f);
            lp_csv_field(f, w->j.stall[s] >= 0 ? d->ncu->stall_names[w->j.stall[s]] : "");
        }
        fprintf(f, ",%s,%s\n", lp_text_deep_bound_key(w->j.bound),
                lp_text_deep_advice_key(w->advice));
    }
    return ferror(f) ? -1 : 0;
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
                known(it->start != 0, it->start, b1), (unsigned long long)it->end,
                known(it->period_ns != 0, it->period_ns, b2), (unsigned long long)it->gap_ns,
                (unsigned long long)it->busy_ns, (long long)it->tokens, (long long)it->sampled,
                (long long)it->decode, (long long)it->prefill_tokens, (long long)it->bucket);
    }
    return ferror(f) ? -1 : 0;
}
