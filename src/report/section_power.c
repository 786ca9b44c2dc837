/* Power (NVML): samples, energy per stage and capture window, throttle reasons, and the
 * series report.html draws ("power" in report.json). */
#include <stdio.h>
#include "section.h"

static void power_md(FILE *f, const struct lp_run *r)
{
    fprintf(f, "\n## Power\n\n");
    if (r->power.device < 0) {
        fprintf(f, "No NVML samples in the trace (NVML missing or turned off).\n");
        return;
    }
    fprintf(f, "Counter (NVML, GPU %d): %zu samples; mean %.1f W, peak %.1f W, %.1f J over the "
               "sampled span%s. NVML refreshed its readings every %.0f ms. Per stage, energy "
               "comes from the %s interpolated at each range's edges; J/token divides it by "
               "the stage's tokens. Stages marked ~ last less than two refreshes in all: "
               "their power is uncertain.\n\n"
               "| stage | samples inside | mean W | peak W | energy J | J/token |\n"
               "|---|---|---|---|---|---|\n",
            r->power.device, r->power.samples, r->power.mean_w, r->power.peak_w, r->power.energy_j,
            r->power.averaged ? " (power is NVML's 1 s average on this GPU)" : "",
            r->power.update_ns / 1e6,
            r->n_stages && r->stages[0].energy_from_counter ? "energy counter" : "power samples");
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        if (s->occurrences == 0)
            continue;
        fprintf(f, "| ");
        lp_md_cell(f, s->name);
        fprintf(f, "%s | %zu | %.1f | %.1f | %.2f | ", s->power_coarse ? " ~" : "",
                s->nvml_samples, s->power_mean_w, s->power_peak_w, s->energy_j);
        if (s->j_per_token > 0)
            fprintf(f, "%.4f |\n", s->j_per_token);
        else
            fprintf(f, "- |\n");
    }
    const struct lp_capture_facts *cw = &r->capture;
    if (cw->n_energy) {
        char b1[32];
        double mean_len = (double)cw->recorded_ns / (double)cw->n_windows;
        fprintf(f, "\nCapture windows: %.2f J in the %zu of %zu windows the samples bracket, "
                   "mean %.1f W (the windows last %s on average%s).\n", cw->energy_j,
                cw->n_energy, cw->n_windows, cw->power_mean_w, NS(mean_len),
                mean_len < 2.0 * (double)r->power.update_ns
                    ? ", less than two NVML refreshes: their power is uncertain" : "");
    }
    fprintf(f, "\nClock-event (throttle) reasons, share of samples:");
    int any = 0;
    for (int b = 0; b < LP_THROTTLE_BITS; b++)
        if (r->power.throttle_share[b] > 0) {
            fprintf(f, "%s %s %.1f %%", any ? "," : "", lp_text_throttle(b),
                    100 * r->power.throttle_share[b]);
            any = 1;
        }
    fprintf(f, "%s\n", any ? "." : " none.");
}

static json_t *power_json(const struct lp_run *r)
{
    json_t *thr = json_object();
    for (int b = 0; b < LP_THROTTLE_BITS; b++)
        json_object_set_new(thr, lp_text_throttle_key(b), lp_json_num(r->power.throttle_share[b]));
    json_t *series = json_array();
    for (size_t i = 0; i < r->power.n_points; i++) {
        const struct lp_power_point *p = &r->power.points[i];
        json_array_append_new(series,
                              json_pack("[o,o,o,o,o,o]", lp_json_u64(p->t), lp_json_num(p->power_w),
                                        lp_json_num(p->sm_mhz), lp_json_num(p->mem_mhz),
                                        lp_json_num(p->util), lp_json_num(p->temp_c)));
    }
    json_t *o = json_pack("{s:i,s:I,s:o,s:b,s:o,s:o,s:o}", "device", r->power.device, "samples",
                          (json_int_t)r->power.samples, "update_ns",
                          lp_json_u64(r->power.update_ns), "power_averaged", r->power.averaged,
                          "mean_w", lp_json_num(r->power.mean_w), "peak_w",
                          lp_json_num(r->power.peak_w), "energy_j", lp_json_num(r->power.energy_j));
    json_object_set_new(o, "throttle_share", thr);
    json_object_set_new(o, "series_columns",
                        json_pack("[s,s,s,s,s,s]", "t_ns", "power_w", "sm_mhz", "mem_mhz",
                                  "util_gpu_pct", "temp_c"));
    json_object_set_new(o, "series", series);
    return o;
}

static const struct lp_section_key keys[] = {
    {"power", power_json},
    {NULL, NULL},
};

const struct lp_section lp_section_power = {
    .name = "power",
    .md = power_md,
    .json = keys,
};
