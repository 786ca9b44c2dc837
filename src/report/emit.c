/* What several sections of the run report share (section.h): the run's command, the
 * warm-up's mention, why no LLM stage was found and a distribution's row in Markdown; JSON
 * values (numbers within int64 and null for the unknown, distributions, kernel tables,
 * copies, counters, PM means, CUPTI's overhead classes); a CSV number or nothing. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "section.h"

const char *lp_md_command(const struct lp_run *r)
{
    const char *v = r->opt.command ? r->opt.command : lp_trace_meta(r->trace, "command");
    return v ? v : "";
}

/* the busy share's span starts after a leading warm-up (lp_run.timeline.bins_from_ns) */
const char *lp_md_after_warmup(const struct lp_run *r)
{
    return r->timeline.bins_from_ns > r->timeline.first_ns ? " after the warm-up" : "";
}

/* "| TTFT | 16.1 ms | 17.0 ms | 18.2 ms | 16.4 ms | 3 requests | source |" */
void lp_md_dist_row(FILE *f, const char *what, const struct lp_dist *d, const char *unit,
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

json_t *lp_json_num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* JSON integers are int64 here: a value past it (a crafted trace's) is written as the most */
json_t *lp_json_u64(uint64_t v)
{
    return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

json_t *lp_json_or_null(double v)
{
    return v > 0 ? lp_json_num(v) : json_null();
}

json_t *lp_json_dist(const struct lp_dist *d)
{
    if (!d->n)
        return json_null();
    return json_pack("{s:I,s:o,s:o,s:o,s:o,s:o,s:o}", "n", (json_int_t)d->n, "mean_ns",
                     lp_json_num(d->mean), "min_ns", lp_json_num(d->min), "p50_ns",
                     lp_json_num(d->p50), "p90_ns", lp_json_num(d->p90), "p99_ns",
                     lp_json_num(d->p99), "max_ns", lp_json_num(d->max));
}

json_t *lp_json_kernel_table(const struct lp_run *r, const struct lp_kernel_table *t, size_t n)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < n; i++) {
        const struct lp_kernel_row *k = &t->v[i];
        json_array_append_new(
            rows, json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "name",
                            r->names[k->group], "short_name", r->short_names[k->group], "category",
                            lp_kcat_name(r->cats[k->group]), "calls", lp_json_u64(k->calls),
                            "total_ns", lp_json_u64(k->total_ns), "mean_ns",
                            lp_json_num(k->mean_ns), "median_ns", lp_json_u64(k->median_ns),
                            "min_ns", lp_json_u64(k->min_ns), "max_ns", lp_json_u64(k->max_ns),
                            "std_ns", lp_json_num(k->std_ns), "share", lp_json_num(k->share)));
    }
    return json_pack("{s:o,s:I,s:o}", "gpu_ns", lp_json_u64(t->gpu_ns), "groups",
                     (json_int_t)t->n_groups, "top", rows);
}

static const char *const copy_dirs[4] = {"HtoD", "DtoH", "DtoD", "other"};

json_t *lp_json_copies(const uint64_t *b, uint64_t set)
{
    json_t *o = json_object();
    for (int i = 0; i < 4; i++)
        json_object_set_new(o, copy_dirs[i], lp_json_u64(b[i]));
    json_object_set_new(o, "memset", lp_json_u64(set));
    return o;
}

/* the counters by their short names (lp_counter_name), those counted */
json_t *lp_json_counter_values(unsigned valid, const double *v)
{
    json_t *o = json_object();
    for (unsigned i = 0; i < LP_COUNTER_COUNT; i++)
        if (valid & (1u << i))
            json_object_set_new(o, lp_counter_name(i), lp_json_num(v[i]));
    return o;
}

/* the means of the values sampled, by name (percent; MHz for the clock; GB/s for DRAM) */
json_t *lp_json_pm_stats(const struct lp_pm_stats *k)
{
    if (!k->samples)
        return json_null();
    json_t *means = json_object();
    for (unsigned i = 0; i < LP_PM_COUNT; i++)
        if (k->valid & (1u << i))
            json_object_set_new(means, lp_pm_name(i), lp_json_num(k->mean[i]));
    return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "samples", lp_json_u64(k->samples), "seconds",
                     lp_json_num(k->seconds), "means", means, "dram_bytes",
                     lp_json_num(k->dram_bytes), "dram_gbs", lp_json_num(k->dram_gbs), "mbu",
                     lp_json_or_null(k->mbu));
}

/* per class of CUPTI's overhead records: a stage's time, count and share (S), or the run's
 * time (RUN_NS) */
json_t *lp_json_overhead_classes(const struct lp_stage_report *s, const uint64_t *run_ns)
{
    json_t *o = json_object();
    for (int k = 0; k < LP_OVERHEAD_CLASS_COUNT; k++)
        json_object_set_new(o, lp_text_overhead_class_key(k),
                            s ? json_pack("{s:o,s:I,s:o}", "ns", lp_json_u64(s->overhead_ns[k]),
                                          "count", (json_int_t)s->overhead_n[k], "share",
                                          lp_json_num(s->overhead_share[k]))
                              : lp_json_u64(run_ns[k]));
    return o;
}

/* V into BUF (32 bytes), or empty when not KNOWN */
const char *lp_csv_known(int is_known, uint64_t v, char *buf)
{
    if (is_known)
        snprintf(buf, 32, "%llu", (unsigned long long)v);
    else
        buf[0] = 0;
    return buf;
}
