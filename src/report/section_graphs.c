/* CUDA graphs: replays per graph and stage, and how far their kernels were traced to their
 * capture ("graphs" in report.json; the rows past LP_GRAPH_ROWS_MAX counted in
 * "graphs_unlisted"). */
#include <stdio.h>
#include "section.h"

static void graphs_md(FILE *f, const struct lp_run *r)
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
        fprintf(f,
                "%llu replays were recorded whole (record --graphs replay, the default): "
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
        char cut[LP_NAME_CUT + 4];
        lp_md_cell(f, g->capture_range >= 0
                          ? lp_fmt_cut(lp_trace_str(r->trace, r->ranges.v[g->capture_range].name),
                                       &cut)
                          : "-");
        fprintf(f, " |\n");
    }
    const struct lp_graph_unlisted *u = &r->graphs_unlisted;
    if (u->rows)
        fprintf(f, "\n%zu row%s more, of %llu replay%s and %s of GPU time, %s counted in the "
                   "stages' figures but listed nowhere: the table keeps the %d of most GPU "
                   "time.\n",
                u->rows, u->rows == 1 ? "" : "s", (unsigned long long)u->replays,
                u->replays == 1 ? "" : "s", NS(u->gpu_ns), u->rows == 1 ? "is" : "are",
                LP_GRAPH_ROWS_MAX);
}

static json_t *graphs_json(const struct lp_run *r)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < r->n_graphs; i++) {
        const struct lp_graph_row *g = &r->graphs[i];
        json_t *o = json_pack(
            "{s:s,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "stage", r->stages[g->stage].name, "graph_id",
            (json_int_t)g->graph_id, "replays", lp_json_u64(g->replays), "kernels",
            lp_json_u64(g->kernels), "kernels_per_replay", lp_json_num(g->kernels_per_replay),
            "gpu_ns", lp_json_u64(g->gpu_ns), "gemm_kernels", lp_json_u64(g->gemm_kernels),
            "gemm_kernels_with_shape", lp_json_u64(g->gemm_shaped), "kernels_with_capture_node",
            lp_json_u64(g->traced));
        json_object_set_new(o, "recorded_whole", json_boolean(g->whole));
        char cut[LP_NAME_CUT + 4];
        json_object_set_new(
            o, "captured_in",
            g->capture_range >= 0
                ? json_string(lp_fmt_cut(
                      lp_trace_str(r->trace, r->ranges.v[g->capture_range].name), &cut))
                : json_null());
        json_array_append_new(rows, o);
    }
    return rows;
}

static json_t *unlisted_json(const struct lp_run *r)
{
    const struct lp_graph_unlisted *u = &r->graphs_unlisted;
    if (!u->rows)
        return json_null();
    return json_pack("{s:o,s:o,s:o,s:o}", "rows", lp_json_u64(u->rows), "replays",
                     lp_json_u64(u->replays), "kernels", lp_json_u64(u->kernels), "gpu_ns",
                     lp_json_u64(u->gpu_ns));
}

static const struct lp_section_key keys[] = {
    {"graphs", graphs_json},
    {"graphs_unlisted", unlisted_json},
    {NULL, NULL},
};

const struct lp_section lp_section_graphs = {
    .name = "graphs",
    .md = graphs_md,
    .json = keys,
};
