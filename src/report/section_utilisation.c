/* Utilisation: MFU and MBU per stage and over a request, against the analytic model, with
 * their assumptions or why they are missing ("utilisation" in report.json). */
#include <stdio.h>
#include "section.h"

static void utilisation_md(FILE *f, const struct lp_run *r)
{
    fprintf(f, "\n## Utilisation (MFU, MBU)\n\n");
    char note[1024];
    lp_text_util(r, note, sizeof note);
    if (!r->util.has) {
        fprintf(f, "Not computed: ");
        lp_fmt_puts(f, note);
        fprintf(f, ".\n");
        return;
    }
    fprintf(f, "Source: ");
    lp_fmt_puts(f, note);
    fprintf(f, ".\n\n| stage | model FLOPs/occ | model bytes/occ | achieved TFLOP/s | achieved "
               "GB/s | MFU | MBU |\n|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        if (!s->has_util)
            continue;
        fprintf(f, "| ");
        lp_md_cell(f, s->name);
        fprintf(f, " | %.3g | %.3g | %.1f | %.0f | %.2f %% | %.2f %% |\n", s->model_flops,
                s->model_bytes, s->achieved_tflops, s->achieved_gbs, 100 * s->mfu, 100 * s->mbu);
    }
    if (r->util.request_s > 0) /* unknown when the decode's steps are */
        fprintf(f, "| request | %.3g | %.3g | %.1f | %.0f | %.2f %% | %.2f %% |\n",
                r->util.request_flops, r->util.request_bytes, r->util.request_tflops,
                r->util.request_gbs, 100 * r->util.mfu, 100 * r->util.mbu);
}

/* the assumptions of MFU and MBU, or why they are missing, and the request figures */
static json_t *utilisation_json(const struct lp_run *r)
{
    char note[1024];
    lp_text_util(r, note, sizeof note);
    json_t *util = json_pack("{s:b,s:s}", "available", r->util.has, "note", note);
    if (r->util.has) {
        json_object_set_new(util, "gpu", json_string(r->util.gpu.name));
        json_object_set_new(util, "dtype", json_string(lp_dtype_name(r->util.dtype)));
        json_object_set_new(util, "peak_tflops", lp_json_num(r->util.gpu.tflops[r->util.dtype]));
        json_object_set_new(util, "mem_bw_gbs", lp_json_num(r->util.gpu.mem_bw_gbs));
        json_object_set_new(util, "request_flops", lp_json_num(r->util.request_flops));
        json_object_set_new(util, "request_bytes", lp_json_num(r->util.request_bytes));
        json_object_set_new(util, "request_s", lp_json_num(r->util.request_s));
        json_object_set_new(util, "mfu", lp_json_num(r->util.mfu));
        json_object_set_new(util, "mbu", lp_json_num(r->util.mbu));
    }
    return util;
}

static const struct lp_section_key keys[] = {
    {"utilisation", utilisation_json},
    {NULL, NULL},
};

const struct lp_section lp_section_utilisation = {
    .name = "utilisation",
    .md = utilisation_md,
    .json = keys,
};
