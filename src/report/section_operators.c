/* Operators and other NVTX ranges besides the stages: CPU and GPU time, their top kernels,
 * and again by operator and input shapes; report.json's "operators" and "operator_shapes",
 * operators.csv and operator_shapes.csv. */
#include <stdio.h>
#include "section.h"

/* " | calls | CPU total | GPU total | GPU self | GPU/call" of a row of either table */
static void time_cells(FILE *f, uint64_t calls, uint64_t cpu_ns, uint64_t gpu_ns,
                       uint64_t self_gpu_ns)
{
    char b1[32], b2[32];
    fprintf(f, " | %llu | %s | ", (unsigned long long)calls, NS(cpu_ns));
    fprintf(f, "%s | ", NS(gpu_ns));
    fprintf(f, "%s | %s", NS(self_gpu_ns), NS2(calls ? (double)gpu_ns / (double)calls : 0));
}

/* "### By input shapes": the costliest rows by operator and shapes */
static void operator_shapes_md(FILE *f, const struct lp_run *r)
{
    fprintf(f, "\n### By input shapes\n\n");
    if (r->n_op_shapes == 0 && r->op_shapes_unread == 0)
        fprintf(f, "No operator range gave its inputs' sizes: PyTorch adds them under "
                   "`torch.autograd.profiler.emit_nvtx(record_shapes=True)`.\n");
    else if (r->n_op_shapes)
        fprintf(f, "One row per operator and list of its inputs' sizes (PyTorch's "
                   "`emit_nvtx(record_shapes=True)`; a list past %d bytes is cut after a whole "
                   "input, ending `…]`); times as above.\n\n"
                   "| operator | input sizes | calls | CPU total | GPU total | GPU self | "
                   "GPU/call |\n|---|---|---|---|---|---|---|\n",
                LP_OP_SHAPES_MAX);
    size_t n = r->n_op_shapes < 30 ? r->n_op_shapes : 30;
    for (size_t i = 0; i < n; i++) {
        const struct lp_op_shape_row *o = &r->op_shapes[i];
        fprintf(f, "| ");
        lp_md_code_cell(f, r->ops[o->op].name);
        fprintf(f, " | ");
        lp_md_code_cell(f, o->shapes);
        time_cells(f, o->calls, o->cpu_ns, o->gpu_ns, o->self_gpu_ns);
        fprintf(f, " |\n");
    }
    if (r->n_op_shapes > n)
        fprintf(f, "\n%zu more in operator_shapes.csv.\n", r->n_op_shapes - n);
    if (r->op_shapes_unread)
        fprintf(f, "%s%llu operator range%s gave sizes that could not be read (not a closed "
                   "bracketed list of integers or of such lists): in the operators table only.\n",
                r->n_op_shapes ? "\n" : "", (unsigned long long)r->op_shapes_unread,
                r->op_shapes_unread == 1 ? "" : "s");
}

static void operators_md(FILE *f, const struct lp_run *r)
{
    char b1[32];
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
        time_cells(f, o->calls, o->cpu_ns, o->gpu_ns, o->self_gpu_ns);
        fprintf(f, " | ");
        for (int k = 0; k < 3 && o->top_group[k] != SIZE_MAX; k++) {
            fprintf(f, "%s", k ? ", " : "");
            lp_md_code_cell(f, r->short_names[o->top_group[k]]);
            fprintf(f, " %s", NS(o->top_ns[k]));
        }
        fprintf(f, " |\n");
    }
    if (r->n_ops > n)
        fprintf(f, "\n%zu more in operators.csv.\n", r->n_ops - n);
    fprintf(f, "\nMemory per operator is not in the trace: PyTorch's caching allocator "
               "serves tensors from memory it reserved, and the trace sees only cudaMalloc and "
               "cudaFree%s\n",
            r->kernels_recorded ? "; each stage's peak held through cudaMalloc is in the "
                                  "Timeline's table of stages (peak cudaMalloc) and "
                                  "stages.csv (peak_alloc_bytes)."
                                : ".");
    operator_shapes_md(f, r);
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

static json_t *operator_shapes_json(const struct lp_run *r)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < r->n_op_shapes; i++) {
        const struct lp_op_shape_row *o = &r->op_shapes[i];
        json_array_append_new(
            rows, json_pack("{s:s,s:s,s:o,s:o,s:o,s:o,s:o}", "name", r->ops[o->op].name,
                            "shapes", o->shapes, "calls", lp_json_u64(o->calls), "cpu_ns",
                            lp_json_u64(o->cpu_ns), "gpu_ns", lp_json_u64(o->gpu_ns),
                            "self_gpu_ns", lp_json_u64(o->self_gpu_ns), "kernels",
                            lp_json_u64(o->kernels)));
    }
    return rows;
}

int lp_report_operator_shapes_csv(FILE *f, const struct lp_run *r)
{
    fprintf(f, "operator,shapes,calls,cpu_ns,gpu_ns,self_gpu_ns,kernels\n");
    for (size_t i = 0; i < r->n_op_shapes; i++) {
        const struct lp_op_shape_row *o = &r->op_shapes[i];
        lp_csv_field(f, r->ops[o->op].name);
        fprintf(f, ",");
        lp_csv_field(f, o->shapes);
        fprintf(f, ",%llu,%llu,%llu,%llu,%llu\n", (unsigned long long)o->calls,
                (unsigned long long)o->cpu_ns, (unsigned long long)o->gpu_ns,
                (unsigned long long)o->self_gpu_ns, (unsigned long long)o->kernels);
    }
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

static const struct lp_section_key keys[] = {
    {"operators", operators_json},
    {"operator_shapes", operator_shapes_json},
    {NULL, NULL},
};

const struct lp_section lp_section_operators = {
    .name = "operators",
    .md = operators_md,
    .json = keys,
    .csv = {"operators.csv", lp_report_operators_csv, NULL},
    .csv2 = {"operator_shapes.csv", lp_report_operator_shapes_csv, "by input shapes"},
};
