/* The capture windows (record --capture): which spans were recorded, in one line of
 * report.md (summary.md says it too) and as report.json's "capture". */
#include <math.h>
#include <stdio.h>

#include "llmprof/capture.h"
#include "section.h"

/* "- Capture windows ...": which spans were recorded (record --capture) */
static void capture_md(FILE *f, const struct lp_run *r)
{
    const struct lp_capture_facts *c = &r->capture;
    char b1[32], b2[32];
    if (!c->windowed)
        return;
    /* what opens them, and what it means that none opened */
    const char *opens = "", *none = "no window opened";
    switch (c->kind) {
    case LP_CAPTURE_MODE_CUDA_PROFILER:
        opens = ", the program's cudaProfilerStart to cudaProfilerStop";
        none = "the program never opened one (cudaProfilerStart)";
        break;
    case LP_CAPTURE_MODE_NVTX:
        opens = ", the chosen NVTX ranges, each from its push to its pop";
        none = "no chosen occurrence of a matching NVTX range came";
        break;
    case LP_CAPTURE_MODE_SIGNAL:
        opens = ", from one SIGUSR1 to the next";
        none = "the process received no SIGUSR1 while recording";
        break;
    case LP_CAPTURE_MODE_GRAPHS:
        opens = ", steps counted by CUDA graph launches, from a chosen step's first launch to "
                "the next step's";
        none = "no chosen step came (too few CUDA graph launches)";
        break;
    default: break;
    }
    char flag[512]; /* the mode is the trace's string: one code span with the flag */
    snprintf(flag, sizeof flag, "--capture %s", c->mode ? c->mode : "");
    fprintf(f, "- **Capture windows** (");
    lp_md_code(f, flag);
    if (c->n_windows == 0) {
        fprintf(f, "): %s, so no kernels were recorded.\n", none);
        return;
    }
    fprintf(f, "%s): kernels were recorded in %zu window%s, %s", opens, c->n_windows,
            c->n_windows == 1 ? "" : "s", NS(c->recorded_ns));
    if (c->span_ns)
        fprintf(f, " of the %s recorded", NS2(c->span_ns));
    fprintf(f, "; stage and step figures come from the windows only");
    if (c->occ_outside || c->occ_cut)
        fprintf(f, " (%zu stage range%s outside them left out, %zu cut at a window's edge)",
                c->occ_outside, c->occ_outside == 1 ? "" : "s", c->occ_cut);
    if (c->occ_across)
        fprintf(f, "; %zu stage range%s spanning two windows or more count%s one part per "
                   "window, without the time between them", c->occ_across,
                c->occ_across == 1 ? "" : "s", c->occ_across == 1 ? "s" : "");
    fprintf(f, ".\n");
}

/* Windows report.json lists at most, the first (each a few bytes in a trace, hundreds in
 * report.json); "windows" counts them all, and the SQLite export has them all */
#define LP_WINDOWS_LISTED 1000

/* the capture windows (record --capture), null when everything was recorded */
static json_t *capture_json(const struct lp_run *r)
{
    const struct lp_capture_facts *c = &r->capture;
    if (!c->windowed)
        return json_null();
    json_t *list = json_array();
    for (size_t i = 0; i < c->n_windows && i < LP_WINDOWS_LISTED; i++) {
        double e = c->window_energy_j ? c->window_energy_j[i] : NAN;
        json_array_append_new(
            list, json_pack("{s:o,s:o,s:o}", "start_ns", lp_json_u64(c->windows[i].start), "end_ns",
                            lp_json_u64(c->windows[i].end), "energy_j", lp_json_num(e)));
    }
    return json_pack("{s:s,s:I,s:o,s:o,s:I,s:I,s:I,s:o,s:o,s:o,s:o}", "mode", c->mode, "windows",
                     (json_int_t)c->n_windows, "recorded_ns", lp_json_u64(c->recorded_ns),
                     "span_ns", c->span_ns ? lp_json_u64(c->span_ns) : json_null(),
                     "stage_ranges_outside", (json_int_t)c->occ_outside, "stage_ranges_cut",
                     (json_int_t)c->occ_cut, "stage_ranges_across", (json_int_t)c->occ_across,
                     "gpu_span_unrecorded_ns", lp_json_u64(r->timeline.unrecorded_ns), "energy_j",
                     c->n_energy ? lp_json_num(c->energy_j) : json_null(), "power_mean_w",
                     c->n_energy ? lp_json_num(c->power_mean_w) : json_null(), "list", list);
}

static const struct lp_section_key keys[] = {
    {"capture", capture_json},
    {NULL, NULL},
};

const struct lp_section lp_section_capture = {
    .name = "capture",
    .md = capture_md,
    .json = keys,
};
