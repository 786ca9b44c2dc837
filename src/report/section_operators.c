/* Operators and other NVTX ranges besides the stages: CPU and GPU time, their top kernels;
 * report.json's "operators" and operators.csv. */
#include <stdio.h>
#include "section.h"

static void operators_md(FILE *f, const struct lp_run *r)
{
    char b1[32], b2[32];
    fprintf(f, "\n## Operators and other ranges\n\n");
    if (r->n_ops == 0) {
        fprintf(f, "None: the program emitted no NVTX ranges besides its stages. PyTorch emits "
                   "one per operator under torch.autograd.profiler.emit_nvtx().\n");
        return;
    }
    fprintf(f, "Measured. CPU: the ranges' wall time; GPU: kernels launched inside (nested "
               "operators include their children; self: the innermost operator only).\n\n"
               "| operator | calls | CPU total | GPU total | GPU self | GPU/call | top kernels |\n"
               "|---|---|---|---|---|---|---|\n");
    size_t n = r->n_ops < 40 ? r->n_ops : 40;
    for (size_t i = 0; i < n; i++) {
        const struct lp_op_row *o = &r->ops[i];
        fprintf(f, "| ");
        lp_md_code_cell(f, o->name);
        fprintf(f, " | %llu | %s | ", (unsigned long long)o->calls, NS(o->cpu_ns));
        fprintf(f, "%s | ", NS(o->gpu_ns));
        fprintf(f, "%s | %s | ", NS(o->self_gpu_ns),
                NS2(o->calls ? (double)o->gpu_ns / (double)o->calls : 0));
        for (int k = 0; k < 3 && o->top_group[k] != SIZE_MAX; k++) {
            fprintf(f, "%s", k ? ", " : "");
            lp_md_code_cell(f, r->short_names[o->top_group[k]]);
            fprintf(f, " %s", NS(o->top_ns[k]));
        }
        fprintf(f, " |\n");
    }
    if (r->n_ops > n)
        fprintf(f, "\n%zu more in operators.csv.\n", r->n_ops - n);
}

static json_t *operators_json(const struct lp_run *r)
{
    json_t *ops = json_array();
    for (size_t i = 0; i < r->n_ops; i++) {
        const struct lp_op_row *o = &r->ops[i];
        json_t *top = json_array();
        for (int k = 0; k < 3; k++)
            if (o->top_group[k] != SIZE_MAX)
                json_array_append_new(top, json_pack("{s:s,s:o}", "name",
                                                     r->names[o->top_group[k]], "gpu_ns",
                                                     lp_json_u64(o->top_ns[k])));
        json_array_append_new(
            ops, json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:o}", "name", o->name, "calls",
                           lp_json_u64(o->calls), "cpu_ns", lp_json_u64(o->cpu_ns), "gpu_ns",
                           lp_json_u64(o->gpu_ns), "self_gpu_ns", lp_json_u64(o->self_gpu_ns),
                           "kernels", lp_json_u64(o->kernels), "top_kernels", top));
    }
    return ops;
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

static const struct lp_section_key keys[] = {
    {"operators", operators_json},
    {NULL, NULL},
};

const struct lp_section lp_section_operators = {
    .name = "operators",
    .md = operators_md,
    .json = keys,
    .csv = {"operators.csv", lp_report_operators_csv, NULL},
};
