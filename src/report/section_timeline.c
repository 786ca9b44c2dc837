/* The timeline: GPU busy, idle gaps and their causes, the busy bins report.html draws,
 * copies and memory ("timeline" in report.json). */
#include <math.h>
#include <stdio.h>

#include "section.h"

static void timeline_md(FILE *f, const struct lp_run *r)
{
    char b1[32], b2[32], b3[32], b4[32];
    if (!r->kernels_recorded) {
        fprintf(f, "\n## Timeline\n\nNot recorded (--light: no kernels).%s\n",
                r->pm.all.samples ? " The GPU's sampled throughputs over time are in report.html."
                                  : "");
        return;
    }
    fprintf(f,
            "\n## Timeline\n\nMeasured. GPU busy %.1f %% of the time%s (GPU work from first "
            "to last: %s). %zu idle gaps over %s, %s in all:\n\n",
            100 * r->timeline.busy_share, lp_md_after_warmup(r),
            NS(r->timeline.last_ns - r->timeline.first_ns), r->timeline.n_gaps, NS2(r->opt.gap_ns),
            lp_fmt_ns((double)r->timeline.gap_ns, b3, sizeof b3));
    for (int c = 0; c < LP_GAP_CAUSE_COUNT; c++)
        fprintf(f, "- %s: %s\n", lp_text_gap_cause((enum lp_gap_cause)c),
                NS(r->timeline.gap_ns_by_cause[c]));
    fprintf(f, "- of the time waiting on the host, the launching thread was inside CUDA calls "
               "for %s (the rest: outside CUDA, e.g. Python or the framework)\n",
            NS(r->timeline.gap_host_api_ns));
    if (r->timeline.n_top_gaps) {
        fprintf(f, "\n| longest gaps | at (from first GPU work) | stage | cause | host in CUDA "
                   "calls |\n|---|---|---|---|---|\n");
        for (size_t i = 0; i < r->timeline.n_top_gaps; i++) {
            const struct lp_gap *g = &r->timeline.top_gaps[i];
            fprintf(f, "| %s | %s | ", NS(g->dur), NS2(g->start - r->timeline.first_ns));
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
    fprintf(f, "\nCopies: %s HtoD, ", BYTES(r->timeline.memcpy_bytes[0]));
    fprintf(f, "%s DtoH, ", BYTES(r->timeline.memcpy_bytes[1]));
    fprintf(f, "%s DtoD, ", BYTES(r->timeline.memcpy_bytes[2]));
    fprintf(f, "%s other; ", BYTES(r->timeline.memcpy_bytes[3]));
    fprintf(f, "%s set. Device memory held through cudaMalloc peaked at ",
            BYTES(r->timeline.memset_bytes));
    fprintf(f, "%s (caching allocators hold what they reserved).\n\n",
            BYTES(r->timeline.peak_alloc_bytes));
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

static json_t *timeline_json(const struct lp_run *r)
{
    json_t *by = json_object();
    for (int c = 0; c < LP_GAP_CAUSE_COUNT; c++)
        json_object_set_new(by, lp_text_gap_cause_key(c),
                            lp_json_u64(r->timeline.gap_ns_by_cause[c]));
    json_t *gaps = json_array();
    for (size_t i = 0; i < r->timeline.n_top_gaps; i++) {
        const struct lp_gap *g = &r->timeline.top_gaps[i];
        json_array_append_new(gaps,
                              json_pack("{s:o,s:o,s:s?,s:s,s:o,s:s?}", "start_ns",
                                        lp_json_u64(g->start), "dur_ns", lp_json_u64(g->dur),
                                        "stage", g->stage >= 0 ? r->stages[g->stage].name : NULL,
                                        "cause", lp_text_gap_cause_key(g->cause), "host_api_ns",
                                        lp_json_u64(g->host_api_ns), "host_api", g->api));
    }
    json_t *bins = json_array();
    for (size_t i = 0; i < r->timeline.n_bins; i++)
        json_array_append_new(
            bins, json_pack("[o,o]", lp_json_u64(r->timeline.bins[i].start),
                            lp_json_num(round(r->timeline.bins[i].busy * 1000) / 1000)));
    json_t *o = json_pack(
        "{s:o,s:o,s:o,s:o,s:b}", "first_ns", lp_json_u64(r->timeline.first_ns), "last_ns",
        lp_json_u64(r->timeline.last_ns), "busy_ns", lp_json_u64(r->timeline.busy_ns), "busy_share",
        lp_json_num(r->timeline.busy_share), "kernels_recorded", r->kernels_recorded);
    json_object_set_new(o, "graph_replays_whole", lp_json_u64(r->replays_whole));
    json_object_set_new(o, "gaps",
                        json_pack("{s:o,s:I,s:o,s:o,s:o,s:o}", "threshold_ns",
                                  lp_json_u64(r->opt.gap_ns), "count",
                                  (json_int_t)r->timeline.n_gaps, "total_ns",
                                  lp_json_u64(r->timeline.gap_ns), "by_cause_ns", by, "host_api_ns",
                                  lp_json_u64(r->timeline.gap_host_api_ns), "longest", gaps));
    json_object_set_new(o, "busy_bins", bins);
    json_object_set_new(o, "busy_bins_from_ns", lp_json_u64(r->timeline.bins_from_ns));
    json_object_set_new(o, "copies_bytes",
                        lp_json_copies(r->timeline.memcpy_bytes, r->timeline.memset_bytes));
    json_object_set_new(o, "peak_alloc_bytes", lp_json_u64(r->timeline.peak_alloc_bytes));
    return o;
}

static const struct lp_section_key keys[] = {
    {"timeline", timeline_json},
    {NULL, NULL},
};

const struct lp_section lp_section_timeline = {
    .name = "timeline",
    .md = timeline_md,
    .json = keys,
};
