/* Communication kernels (NCCL's and the like) and the compute beside them: report.md's
 * section (only when the run had some) and report.json's "communication". */
#include <stdio.h>
#include "section.h"

/* Communication kernels and the compute beside them: only when the run had some. */
static void communication_md(FILE *f, const struct lp_run *r)
{
    char b1[32], b2[32], b3[32];
    if (!r->comm.kernels)
        return;
    fprintf(f, "\n## Communication\n\nMeasured. Communication kernels (NCCL's and the like, by "
               "name): %zu, %s of GPU time; overlap: the share of that time during which a "
               "computation kernel ran on the same GPU (HTA's definition), %s over the run. "
               "Waits in collectives need every rank's trace: `llmprof report` of the run "
               "directory writes them to ranks.md.\n\n| stage | communication | of its GPU "
               "time | overlapped with compute | overlap |\n|---|---|---|---|---|\n",
            r->comm.kernels, NS(r->comm.ns), PCT(r->comm.overlap_share));
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        if (!s->comm_ns)
            continue;
        fprintf(f, "| ");
        lp_md_cell(f, s->name);
        fprintf(f, " | %s | ", NS(s->comm_ns));
        fprintf(f, "%s | ", s->gpu_ns ? PCT(s->cat_share[LP_KCAT_COMMUNICATION]) : "-");
        fprintf(f, "%s | %s |\n", NS2(s->comm_overlap_ns), PCT(s->comm_overlap_share));
    }
}

/* null when no kernels were recorded (--light) */
static json_t *communication_json(const struct lp_run *r)
{
    if (!r->kernels_recorded)
        return json_null();
    return json_pack("{s:I,s:o,s:o,s:o}", "kernels", (json_int_t)r->comm.kernels, "gpu_ns",
                     lp_json_u64(r->comm.ns), "overlap_ns", lp_json_u64(r->comm.overlap_ns),
                     "overlap_share", lp_json_num(r->comm.overlap_share));
}

static const struct lp_section_key keys[] = {
    {"communication", communication_json},
    {NULL, NULL},
};

const struct lp_section lp_section_communication = {
    .name = "communication",
    .md = communication_md,
    .json = keys,
};
